//! The in-process TCP echo of a request/response run with few flows: one thread per
//! connection, blocked in `read`, writing back what it read.
//!
//! The epoll server of `netceil recv` ([`crate::tcp::Server`]) serves any number of
//! connections, but a request costs its thread four system calls there: `epoll_wait`, the
//! `read` of the request, the `write` of the answer, and a `read` that finds the socket empty.
//! The first two are on the round trip: the request wakes the thread in `epoll_wait`, and only
//! then is it copied out. A thread blocked in `read` is woken with the request already copied,
//! as sockperf's server is (`strace`: `recvfrom`, then `sendto`, per request), so this echo
//! answers with one call on the round trip and one after it. Each connection still begins
//! with the netceil hello (see [`crate::tcp::hello`]), answered the way the server answers it.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::buf::AlignedBuf;
use crate::clock::thread_cpu_ns;
use crate::tcp::hello::{self, Mode, HELLO_LEN};
use crate::threads;
use crate::LoadError;

/// Flows up to which a run's in-process echo is this one (a thread each); above it, the
/// epoll server (a thread for them all).
pub(crate) const MAX_FLOWS: u32 = 4;

/// How often an idle echo thread looks at its stop flag.
const IDLE_CHECK: Duration = Duration::from_millis(20);

/// What the echo did, for the run's note.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct TcpEchoReport {
    /// Connections whose hello asked for echo.
    pub connections: u64,
    /// Connections closed because their first bytes were not an echo hello.
    pub rejected: u64,
    /// Bytes sent back.
    pub echoed_bytes: u64,
    /// CPU time of the echo's threads, seconds.
    pub cpu_s: f64,
}

#[derive(Default)]
struct Counts {
    connections: AtomicU64,
    rejected: AtomicU64,
    echoed_bytes: AtomicU64,
    cpu_ns: AtomicU64,
}

pub(crate) struct TcpEcho {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
    acceptor: Option<JoinHandle<Result<(), LoadError>>>,
}

impl TcpEcho {
    /// Listens on `bind` and answers up to `flows` connections, each on its own thread placed
    /// on `cpu` (`None`: the scheduler's).
    pub(crate) fn start(
        bind: SocketAddr,
        flows: u32,
        cpu: Option<usize>,
    ) -> Result<TcpEcho, LoadError> {
        let listener =
            TcpListener::bind(bind).map_err(|source| LoadError::Bind { addr: bind, source })?;
        let addr = listener
            .local_addr()
            .map_err(|e| LoadError::socket("getsockname on the TCP echo", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| LoadError::socket("O_NONBLOCK on the TCP echo's listener", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let (stop2, counts2) = (stop.clone(), counts.clone());
        let acceptor = threads::spawn("netceil-tcp-echo".into(), move || {
            accept_loop(&listener, flows, cpu, &stop2, &counts2)
        })
        .map_err(|e| LoadError::Other(format!("cannot start the TCP echo thread: {e}")))?;
        Ok(TcpEcho {
            addr,
            stop,
            counts,
            acceptor: Some(acceptor),
        })
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the echo and its threads; returns what it did, or why it could not serve.
    pub(crate) fn stop(mut self) -> Result<TcpEchoReport, LoadError> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.acceptor.take() {
            h.join()
                .map_err(|_| LoadError::Other("the TCP echo thread panicked".into()))??;
        }
        let c = &self.counts;
        Ok(TcpEchoReport {
            connections: c.connections.load(Ordering::Relaxed),
            rejected: c.rejected.load(Ordering::Relaxed),
            echoed_bytes: c.echoed_bytes.load(Ordering::Relaxed),
            cpu_s: c.cpu_ns.load(Ordering::Relaxed) as f64 / 1e9,
        })
    }
}

impl Drop for TcpEcho {
    /// An echo abandoned on an error path still stops its threads.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Accepts connections until stopped, `flows` at once at most, and joins their threads at the
/// end.
fn accept_loop(
    listener: &TcpListener,
    flows: u32,
    cpu: Option<usize>,
    stop: &Arc<AtomicBool>,
    counts: &Arc<Counts>,
) -> Result<(), LoadError> {
    threads::place(cpu)?;
    let mut conns: Vec<JoinHandle<()>> = Vec::new();
    let mut first_error = None;
    while !stop.load(Ordering::Relaxed) {
        // A connection turned away (not an echo hello) or closed frees its place.
        conns.retain(|h| !h.is_finished());
        if conns.len() >= flows as usize {
            std::thread::sleep(IDLE_CHECK);
            continue;
        }
        match listener.accept() {
            Ok((stream, _)) => {
                let (stop, counts) = (stop.clone(), counts.clone());
                let spawned = threads::spawn("netceil-tcp-echo".into(), move || {
                    let cpu_start = thread_cpu_ns();
                    if threads::place(cpu).is_ok() {
                        serve(stream, &stop, &counts);
                    }
                    counts
                        .cpu_ns
                        .fetch_add(thread_cpu_ns() - cpu_start, Ordering::Relaxed);
                });
                match spawned {
                    Ok(h) => conns.push(h),
                    Err(e) => {
                        first_error.get_or_insert_with(|| {
                            LoadError::Other(format!("cannot start a TCP echo thread: {e}"))
                        });
                        break;
                    }
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(IDLE_CHECK / 20),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                first_error.get_or_insert_with(|| LoadError::socket("accept on the TCP echo", e));
                break;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for h in conns {
        let _ = h.join();
    }
    first_error.map_or(Ok(()), Err)
}

/// One connection: its hello, then every byte read written back, until the client closes
/// or the echo is stopped.
fn serve(mut stream: TcpStream, stop: &AtomicBool, counts: &Counts) {
    if stream.set_nonblocking(false).is_err()
        || stream.set_read_timeout(Some(IDLE_CHECK)).is_err()
        || stream.set_nodelay(true).is_err()
    {
        return;
    }
    let mut hello_bytes = [0u8; HELLO_LEN];
    let mut got = 0;
    while got < HELLO_LEN {
        match stream.read(&mut hello_bytes[got..]) {
            Ok(0) => return,
            Ok(n) => got += n,
            Err(e) if timed_out(&e) && !stop.load(Ordering::Relaxed) => {}
            Err(_) => return,
        }
    }
    if !matches!(hello::decode(&hello_bytes), Some((Mode::Echo, _)))
        || stream.write_all(&hello_bytes).is_err()
    {
        counts.rejected.fetch_add(1, Ordering::Relaxed);
        return;
    }
    counts.connections.fetch_add(1, Ordering::Relaxed);
    let mut buf = AlignedBuf::zeroed(65_536);
    let mut echoed = 0u64;
    while !stop.load(Ordering::Relaxed) {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if stream.write_all(&buf[..n]).is_err() {
                    break;
                }
                echoed += n as u64;
            }
            Err(e) if timed_out(&e) => {}
            Err(_) => break,
        }
    }
    counts.echoed_bytes.fetch_add(echoed, Ordering::Relaxed);
}

/// A read that ended at the idle check, not on an error of the connection.
fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connect(echo: &TcpEcho, hello: &[u8]) -> TcpStream {
        let mut s = TcpStream::connect(echo.local_addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        s.write_all(hello).unwrap();
        s
    }

    #[test]
    fn the_echo_answers_its_hello_and_returns_every_byte() {
        let echo = TcpEcho::start("127.0.0.1:0".parse().unwrap(), 1, None).unwrap();
        // A stream's hello is not an echo's: closed without an answer, and its place freed.
        let mut b = connect(&echo, &hello::encode(Mode::Stream, 1));
        let mut one = [0u8; 1];
        assert!(matches!(b.read(&mut one), Ok(0) | Err(_)));
        std::thread::sleep(Duration::from_millis(50));
        let hello = hello::encode(Mode::Echo, 3);
        let mut a = connect(&echo, &hello);
        let mut back = [0u8; HELLO_LEN];
        a.read_exact(&mut back).unwrap();
        assert_eq!(back, hello);
        // Requests of several sizes, each answered before the next, then two at once.
        let mut sent = 0;
        for size in [1usize, 64, 1400, 9000] {
            let req: Vec<u8> = (0..size).map(|i| (i * 7 + size) as u8).collect();
            a.write_all(&req).unwrap();
            let mut got = vec![0u8; size];
            a.read_exact(&mut got).unwrap();
            assert_eq!(got, req, "{size} B");
            sent += size;
        }
        a.write_all(&[5u8; 100]).unwrap();
        a.write_all(&[6u8; 100]).unwrap();
        let mut got = [0u8; 200];
        a.read_exact(&mut got).unwrap();
        assert!(got[..100].iter().all(|&b| b == 5) && got[100..].iter().all(|&b| b == 6));
        sent += 200;
        drop(a);
        std::thread::sleep(Duration::from_millis(50));
        let r = echo.stop().unwrap();
        assert_eq!(r.connections, 1);
        assert_eq!(r.rejected, 1);
        assert_eq!(r.echoed_bytes, sent as u64);
        assert!(r.cpu_s > 0.0);
    }

    #[test]
    fn a_stopped_echo_ends_its_threads_with_a_client_still_connected() {
        let echo = TcpEcho::start("127.0.0.1:0".parse().unwrap(), 1, None).unwrap();
        let mut a = connect(&echo, &hello::encode(Mode::Echo, 0));
        let mut back = [0u8; HELLO_LEN];
        a.read_exact(&mut back).unwrap();
        let t = std::time::Instant::now();
        let r = echo.stop().unwrap();
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        assert_eq!(r.connections, 1);
    }
}
