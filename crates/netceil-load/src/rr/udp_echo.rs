//! A minimal in-process UDP echo for request/response runs without a target: it turns each
//! `Request` datagram into a `Response` (kind nibble flipped, everything else unchanged) and
//! sends it back. `netceil recv` uses the full UDP receiver instead, which echoes the same way.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::buf::AlignedBuf;
use crate::header::{Header, Kind, VERSION};
use crate::threads;
use crate::LoadError;

/// How often the echo looks at its stop flag when idle.
const IDLE_CHECK: Duration = Duration::from_millis(20);

pub(crate) struct UdpEcho {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<u64, LoadError>>>,
}

impl UdpEcho {
    /// Binds `bind` and echoes from a thread placed on `cpu` (`None`: the scheduler's).
    pub(crate) fn start(bind: SocketAddr, cpu: Option<usize>) -> Result<UdpEcho, LoadError> {
        let socket =
            UdpSocket::bind(bind).map_err(|source| LoadError::Bind { addr: bind, source })?;
        socket
            .set_read_timeout(Some(IDLE_CHECK))
            .map_err(|e| LoadError::socket("set SO_RCVTIMEO on the UDP echo", e))?;
        let addr = socket
            .local_addr()
            .map_err(|e| LoadError::socket("getsockname on the UDP echo", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = stop.clone();
        let handle = threads::spawn("netceil-udp-echo".into(), move || {
            threads::place(cpu)?;
            Ok(echo_loop(&socket, &thread_stop))
        })
        .map_err(|e| LoadError::Other(format!("cannot start the UDP echo thread: {e}")))?;
        Ok(UdpEcho {
            addr,
            stop,
            handle: Some(handle),
        })
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the echo; returns how many requests it answered, or why it could not start.
    pub(crate) fn stop(mut self) -> Result<u64, LoadError> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .map_or(Ok(0), |h| h.join().unwrap_or(Ok(0)))
    }
}

impl Drop for UdpEcho {
    /// An echo abandoned on an error path still stops its thread.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn echo_loop(socket: &UdpSocket, stop: &AtomicBool) -> u64 {
    let mut buf = AlignedBuf::zeroed(65_536);
    let mut answered = 0;
    while !stop.load(Ordering::Relaxed) {
        let Ok((n, from)) = socket.recv_from(&mut buf) else {
            continue; // timeout (checks the stop flag) or a transient error
        };
        if let Some(h) = Header::read(&buf[..n]) {
            if h.kind == Kind::Request {
                to_response(&mut buf[..n]);
                // A send failure is the client's loss to count, as on a real network.
                if socket.send_to(&buf[..n], from).is_ok() {
                    answered += 1;
                }
            }
        }
    }
    answered
}

/// Rewrites a request datagram into its response in place.
pub(crate) fn to_response(datagram: &mut [u8]) {
    datagram[2] = (VERSION << 4) | Kind::Response as u8;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_answers_requests_and_ignores_the_rest() {
        let echo = UdpEcho::start("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client.connect(echo.local_addr()).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let mut req = [9u8; 64];
        let h = Header {
            kind: Kind::Request,
            run_id: 5,
            flow: 2,
            seq: 77,
            ts_ns: 1234,
        };
        h.write(&mut req);
        client.send(b"not netceil at all").unwrap();
        client.send(&req).unwrap();
        let mut back = [0u8; 128];
        let n = client.recv(&mut back).unwrap();
        assert_eq!(n, 64);
        let r = Header::read(&back[..n]).unwrap();
        assert_eq!(
            r,
            Header {
                kind: Kind::Response,
                ..h
            }
        );
        assert_eq!(&back[18..64], &req[18..64]);
        assert_eq!(echo.stop().unwrap(), 1);
    }
}
