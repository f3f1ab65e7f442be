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
//!
//! A paced source (`-R`, `--bidir` or rrul with `--rate-per-flow`) says its rate in a version 2
//! hello: the same 8 bytes with version 2 and mode 3, then the rate in bit/s as 8 bytes, little
//! endian (not 0). The server accepts by sending those 16 bytes back and sends on an absolute
//! schedule at that rate. Only a paced source uses version 2, so unpaced runs still work
//! against an older netceil; an older one closes a version 2 hello, and the client says the
//! far end must be upgraded rather than let it send unpaced.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::LoadError;

pub(crate) const HELLO_LEN: usize = 8;
/// A version 2 hello: [`HELLO_LEN`] bytes, then the rate.
pub(crate) const PACED_HELLO_LEN: usize = 16;
pub(crate) const REPORT_LEN: usize = 8;
const MAGIC: &[u8; 3] = b"NCT";
const VERSION: u8 = 1;
/// The version of a hello that carries the rate a source sends at.
const VERSION_PACED: u8 = 2;

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

/// What a client asks of the server on each of its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    /// A version 1 hello.
    Plain(Mode),
    /// A version 2 hello: a source that sends at `bits_per_s` (not 0).
    PacedSource { bits_per_s: u64 },
}

impl Ask {
    /// The hello for `flow`, which the server sends back to accept.
    pub(crate) fn hello(self, flow: u16) -> Vec<u8> {
        match self {
            Ask::Plain(mode) => encode(mode, flow).to_vec(),
            Ask::PacedSource { bits_per_s } => encode_paced(flow, bits_per_s).to_vec(),
        }
    }

    /// The mode the server serves the connection in.
    pub(crate) fn mode(self) -> Mode {
        match self {
            Ask::Plain(m) => m,
            Ask::PacedSource { .. } => Mode::Source,
        }
    }
}

/// A version 2 hello: a source for `flow` at `bits_per_s`.
pub(crate) fn encode_paced(flow: u16, bits_per_s: u64) -> [u8; PACED_HELLO_LEN] {
    let mut b = [0u8; PACED_HELLO_LEN];
    b[..HELLO_LEN].copy_from_slice(&encode(Mode::Source, flow));
    b[3] = VERSION_PACED;
    b[HELLO_LEN..].copy_from_slice(&bits_per_s.to_le_bytes());
    b
}

/// How long the hello whose first [`HELLO_LEN`] bytes are `head` is, by its version.
pub(crate) fn hello_len(head: &[u8; HELLO_LEN]) -> usize {
    if &head[..3] == MAGIC && head[3] == VERSION_PACED {
        PACED_HELLO_LEN
    } else {
        HELLO_LEN
    }
}

/// What a whole hello (of [`hello_len`] bytes) asks, and its flow id; `None` if it is not one.
pub(crate) fn decode_any(b: &[u8]) -> Option<(Ask, u16)> {
    let head: &[u8; HELLO_LEN] = b.get(..HELLO_LEN)?.try_into().ok()?;
    if b.len() == HELLO_LEN {
        return decode(head).map(|(mode, flow)| (Ask::Plain(mode), flow));
    }
    if b.len() != PACED_HELLO_LEN || &head[..3] != MAGIC || head[3] != VERSION_PACED {
        return None;
    }
    if head[4] != Mode::Source as u8 || head[5] != 0 {
        return None;
    }
    let bits_per_s = u64::from_le_bytes(b[HELLO_LEN..].try_into().ok()?);
    (bits_per_s > 0).then_some((
        Ask::PacedSource { bits_per_s },
        u16::from_le_bytes([head[6], head[7]]),
    ))
}

/// The mode and flow id of a version 1 hello; `None` if it is not one.
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

/// Opens `flows` connections to `target` and has the server accept each in `mode`: see
/// [`connect_asking`].
pub(crate) fn connect_all(
    target: SocketAddr,
    flows: u32,
    mode: Mode,
    configure: impl FnMut(&TcpStream) -> Result<(), LoadError>,
) -> Result<Vec<TcpStream>, LoadError> {
    connect_asking(target, flows, Ask::Plain(mode), configure)
}

/// Opens `flows` connections to `target` and has the server accept each as `ask` says.
///
/// Connects and hellos go out one after the other; the acceptances are read afterwards, so a
/// far receiver costs about one round trip in total rather than one per flow. `configure` is
/// applied to each socket before its hello (TCP_NODELAY, pacing…). Returns the streams,
/// nonblocking, in flow order.
pub(crate) fn connect_asking(
    target: SocketAddr,
    flows: u32,
    ask: Ask,
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
        s.write_all(&ask.hello(flow as u16))
            .map_err(|e| LoadError::socket(format!("send hello to {target}"), e))?;
        streams.push(s);
    }
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    for (flow, s) in streams.iter_mut().enumerate() {
        let left = deadline.saturating_duration_since(Instant::now());
        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .map_err(|e| LoadError::socket("set SO_RCVTIMEO", e))?;
        let hello = ask.hello(flow as u16);
        let mut ack = vec![0u8; hello.len()];
        let mode = ask.mode();
        let not_netceil = |why: String| match ask {
            Ask::PacedSource { .. } => LoadError::Other(format!(
                "{target} did not accept netceil's paced {mode:?} hello (protocol version \
                 {VERSION_PACED}) on flow {flow} ({why}): a netceil there older than this one \
                 cannot pace the flows it sends, and refuses rather than send them unpaced; \
                 upgrade it, or run without --rate-per-flow"
            )),
            Ask::Plain(_) => LoadError::Other(format!(
                "{target} did not accept netceil's {mode:?} hello on flow {flow} ({why}); \
                 is `netceil recv` listening there?"
            )),
        };
        match s.read_exact(&mut ack) {
            Ok(()) if ack == hello => {}
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
        h[3] = 3; // future version
        assert_eq!(decode(&h), None);
        assert_eq!(hello_len(&h), HELLO_LEN);
    }

    #[test]
    fn a_paced_source_hello_carries_its_rate_and_only_a_source_may_ask() {
        let h = encode_paced(5, 25_000_000);
        let head: [u8; HELLO_LEN] = h[..HELLO_LEN].try_into().unwrap();
        assert_eq!(hello_len(&head), PACED_HELLO_LEN);
        // A version 1 reader (an older netceil) refuses it.
        assert_eq!(decode(&head), None);
        assert_eq!(
            decode_any(&h),
            Some((
                Ask::PacedSource {
                    bits_per_s: 25_000_000
                },
                5
            ))
        );
        assert_eq!(
            decode_any(&encode(Mode::Echo, 2)),
            Some((Ask::Plain(Mode::Echo), 2))
        );
        let mut stream = h;
        stream[4] = Mode::Stream as u8;
        assert_eq!(decode_any(&stream), None);
        assert_eq!(decode_any(&encode_paced(5, 0)), None, "a rate of 0");
        assert_eq!(decode_any(&h[..12]), None);
    }
}
