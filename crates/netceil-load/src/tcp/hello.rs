//! The tiny protocol on a netceil TCP connection.
//!
//! One TCP port on `netceil recv` serves both stream sinks and request/response echo, so the
//! client says which it wants in its first 8 bytes:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 3 | `"NCT"` |
//! | 3 | 1 | version, 1 |
//! | 4 | 1 | mode: 1 = stream (sink), 2 = echo, 3 = source (the server sends) |
//! | 5 | 1 | reserved, 0 |
//! | 6 | 2 | flow id, little endian |
//!
//! The server accepts by sending the same 8 bytes back, so a client knows it reached a netceil
//! receiver before it measures anything; anything else makes the server close the connection.
//!
//! A stream ends with the client's half-close (shutdown of its write side). The sink then sends
//! 8 bytes, the little-endian count of payload bytes it read after the hello, and closes: the
//! client learns what arrived even when the receiver is on another host.
//!
//! A source stream (iperf3's `-R`) runs the other way: the server writes as fast as the
//! connection takes it until the client half-closes, then half-closes itself. The client,
//! which is the receiver, counts what it read up to the server's end of stream.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::LoadError;

pub(crate) const HELLO_LEN: usize = 8;
pub(crate) const REPORT_LEN: usize = 8;
const MAGIC: &[u8; 3] = b"NCT";
const VERSION: u8 = 1;

/// What the client wants from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Read and count everything; report the count after the client's half-close.
    Stream = 1,
    /// Send back every byte received.
    Echo = 2,
    /// Send as fast as the connection takes it until the client half-closes (reverse).
    Source = 3,
}

pub(crate) fn encode(mode: Mode, flow: u16) -> [u8; HELLO_LEN] {
    let f = flow.to_le_bytes();
    [
        MAGIC[0], MAGIC[1], MAGIC[2], VERSION, mode as u8, 0, f[0], f[1],
    ]
}

/// The mode and flow id of a hello; `None` if it is not one.
pub(crate) fn decode(b: &[u8; HELLO_LEN]) -> Option<(Mode, u16)> {
    if &b[..3] != MAGIC || b[3] != VERSION || b[5] != 0 {
        return None;
    }
    let mode = match b[4] {
        1 => Mode::Stream,
        2 => Mode::Echo,
        3 => Mode::Source,
        _ => return None,
    };
    Some((mode, u16::from_le_bytes([b[6], b[7]])))
}

/// How long a client waits for the server's acceptance of all its connections.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens `flows` connections to `target` and has the server accept each in `mode`.
///
/// Connects and hellos go out one after the other; the acceptances are read afterwards, so a
/// far receiver costs about one round trip in total rather than one per flow. `configure` is
/// applied to each socket before its hello (TCP_NODELAY, pacing…). Returns the streams,
/// nonblocking, in flow order.
pub(crate) fn connect_all(
    target: SocketAddr,
    flows: u32,
    mode: Mode,
    mut configure: impl FnMut(&TcpStream) -> Result<(), LoadError>,
) -> Result<Vec<TcpStream>, LoadError> {
    let mut streams = Vec::with_capacity(flows as usize);
    for flow in 0..flows {
        let mut s = TcpStream::connect_timeout(&target, HANDSHAKE_TIMEOUT).map_err(|source| {
            LoadError::Connect {
                addr: target,
                source,
            }
        })?;
        configure(&s)?;
        // Flow ids are validated to fit 16 bits.
        s.write_all(&encode(mode, flow as u16))
            .map_err(|e| LoadError::socket(format!("send hello to {target}"), e))?;
        streams.push(s);
    }
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    for (flow, s) in streams.iter_mut().enumerate() {
        let left = deadline.saturating_duration_since(Instant::now());
        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .map_err(|e| LoadError::socket("set SO_RCVTIMEO", e))?;
        let mut ack = [0u8; HELLO_LEN];
        let not_netceil = |why: String| {
            LoadError::Other(format!(
                "{target} did not accept netceil's {mode:?} hello on flow {flow} ({why}); \
                 is `netceil recv` listening there?"
            ))
        };
        match s.read_exact(&mut ack) {
            Ok(()) if ack == encode(mode, flow as u16) => {}
            Ok(()) => return Err(not_netceil("it answered something else".into())),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(not_netceil("it closed the connection".into()))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(not_netceil(format!(
                    "no answer within {} s",
                    HANDSHAKE_TIMEOUT.as_secs()
                )))
            }
            Err(e) => return Err(not_netceil(e.to_string())),
        }
        s.set_read_timeout(None)
            .map_err(|e| LoadError::socket("clear SO_RCVTIMEO", e))?;
        s.set_nonblocking(true)
            .map_err(|e| LoadError::socket("set O_NONBLOCK", e))?;
    }
    Ok(streams)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_round_trip() {
        let h = encode(Mode::Echo, 700);
        assert_eq!(decode(&h), Some((Mode::Echo, 700)));
        let h = encode(Mode::Stream, 0);
        assert_eq!(decode(&h), Some((Mode::Stream, 0)));
        let h = encode(Mode::Source, 9);
        assert_eq!(decode(&h), Some((Mode::Source, 9)));
    }

    #[test]
    fn foreign_first_bytes_are_rejected() {
        assert_eq!(decode(b"GET / HT"), None);
        let mut h = encode(Mode::Stream, 1);
        h[4] = 9; // unknown mode
        assert_eq!(decode(&h), None);
        let mut h = encode(Mode::Stream, 1);
        h[3] = 2; // future version
        assert_eq!(decode(&h), None);
    }
}
