//! The TCP side of a netceil receiver: a sink for streams and an echo for request/response, on
//! one port, told apart by the hello (see [`super::hello`]).
//!
//! A few worker threads each run an epoll loop over their share of the connections, so thousands
//! of connections need no more threads than cores. Worker 0 also owns the listener and deals new
//! connections out round-robin through per-worker inboxes woken by an eventfd: deterministic
//! balance, unlike SO_REUSEPORT hashing or EPOLLEXCLUSIVE wake-ups.
//!
//! # Reads
//! Each wake-up reads a stream until its socket is empty (at most [`READS_PER_TURN`] reads of
//! [`READ_BUF`], then the others' turn). A large read buffer is what saves the syscalls.
//!
//! How often a sink stream wakes its worker is [`super::wakes`]'s: with a fixed receive buffer,
//! once per 200 µs of its own rate (SO_RCVLOWAT). An earlier mark tied to an autotuned window
//! (an eighth of it, up to 1 MiB) measured 0.81× iperf3 on one loopback stream: autotuning
//! stopped growing the window while bytes sat under the mark, and the sender's probes
//! retransmitted data the receiver already had (TcpExtDelayedACKLost, 20–65 per 4 s run). The
//! fixed buffer has no autotuning to starve, and the mark is at most an eighth of it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use nix::sys::epoll::EpollFlags;
use nix::sys::eventfd::{EfdFlags, EventFd};
use socket2::{Domain, Protocol, Socket, Type};

use super::evloop::EventLoop;
use super::hello::{self, Ask, Mode, HELLO_LEN, PACED_HELLO_LEN, REPORT_LEN};
use super::rcvbuf::{self, RecvBuffer, Sizing};
use super::wakes::{self, Batch, Batching, SinkWakes, STALE_NS};
use crate::buf::AlignedBuf;
use crate::clock::{now_ns, thread_cpu_ns};
use crate::threads;
use crate::LoadError;

const WAKE_TOKEN: u64 = 0;
const LISTENER_TOKEN: u64 = 1;
const FIRST_CONN_TOKEN: u64 = 2;
/// Read buffer per worker: large reads keep the per-byte cost of the sink low (one read takes
/// what a wake-up finds queued). Page-aligned ([`AlignedBuf`]): from a plain `Vec`, 16 bytes
/// past a page, the kernel's copy into it took 3–4 × the CPU per byte.
const READ_BUF: usize = 1024 * 1024;
/// Reads per connection per wake-up before serving the others (level-triggered: it comes back).
const READS_PER_TURN: usize = 16;
/// Bytes per write of a source connection (iperf3's default TCP write size).
const SOURCE_WRITE: usize = 128 * 1024;
/// What a TCP receiver saw while it served.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TcpServeReport {
    /// Seconds served.
    pub duration_s: f64,
    /// Connections accepted.
    pub connections: u64,
    /// Connections that said they were streams (sink).
    pub stream_connections: u64,
    /// Connections that asked for echo (request/response).
    pub echo_connections: u64,
    /// Connections closed because their first bytes were not a netceil hello.
    pub rejected_connections: u64,
    /// Connections from a host other than the admitted one (`netceil serve`), closed at once
    /// without a byte read or sent.
    pub refused_connections: u64,
    /// accept() failures other than "nothing to accept" (out of descriptors, memory).
    pub accept_errors: u64,
    /// Payload bytes the sink read (hellos excluded).
    pub stream_bytes: u64,
    /// Bytes sent back by the echo.
    pub echoed_bytes: u64,
    /// Connections that asked the server to send (reverse, [`Mode::Source`]).
    pub source_connections: u64,
    /// Payload bytes the server wrote to source connections.
    pub source_bytes: u64,
    /// CPU seconds the server threads used.
    pub cpu_s: f64,
    /// Times a worker's `epoll_wait` returned events (each, most often, a wake-up from sleep).
    pub wakeups: u64,
    /// What was done to the sink streams' receive buffers (see [`super::rcvbuf`]).
    pub rcvbuf: Sizing,
    /// How the sink streams' wake-ups were batched (see [`super::wakes`]).
    pub wakes: Batching,
}

/// Live counters, readable while the server runs (for progress lines).
#[derive(Debug, Default)]
pub(crate) struct LiveCounters {
    pub(crate) stream_bytes: AtomicU64,
    /// When the sink last read stream data (CLOCK_MONOTONIC ns): the end of the receive window.
    pub(crate) last_stream_data_ns: AtomicU64,
    pub(crate) echoed_bytes: AtomicU64,
    pub(crate) source_bytes: AtomicU64,
}

struct Inbox {
    queue: Mutex<Vec<TcpStream>>,
    wake: EventFd,
}

/// A running sink/echo server.
pub(crate) struct Server {
    local_addr: SocketAddr,
    stop: Arc<AtomicBool>,
    live: Arc<LiveCounters>,
    workers: Vec<JoinHandle<Result<TcpServeReport, LoadError>>>,
    started_ns: u64,
}

impl Server {
    /// Binds `listen` and starts `threads` workers.
    pub(crate) fn start(listen: SocketAddr, threads: usize) -> Result<Server, LoadError> {
        Self::start_admitting(listen, threads, None, None, Sinks::default())
    }

    /// As [`Server::start`], with every worker placed on `cpu` (`None`: the scheduler's) and
    /// sink streams treated as `sinks` says.
    pub(crate) fn start_on(
        listen: SocketAddr,
        threads: usize,
        cpu: Option<usize>,
        sinks: Sinks,
    ) -> Result<Server, LoadError> {
        Self::start_admitting(listen, threads, None, cpu, sinks)
    }

    /// As [`Server::start_on`], closing at once every connection not from `admit`.
    pub(crate) fn start_admitting(
        listen: SocketAddr,
        threads: usize,
        admit: Option<IpAddr>,
        cpu: Option<usize>,
        sinks: Sinks,
    ) -> Result<Server, LoadError> {
        let bind_err = |source| LoadError::Bind {
            addr: listen,
            source,
        };
        let socket = Socket::new(
            Domain::for_address(listen),
            Type::STREAM,
            Some(Protocol::TCP),
        )
        .map_err(|e| LoadError::socket("socket(SOCK_STREAM)", e))?;
        socket.set_reuse_address(true).map_err(bind_err)?;
        socket.bind(&listen.into()).map_err(bind_err)?;
        // Thousands of flows connect in a burst; the kernel caps this at net.core.somaxconn.
        socket.listen(4096).map_err(bind_err)?;
        socket.set_nonblocking(true).map_err(bind_err)?;
        let listener: TcpListener = socket.into();
        let local_addr = listener.local_addr().map_err(bind_err)?;

        let threads = threads.max(1);
        let inboxes: Arc<Vec<Inbox>> = Arc::new(
            (0..threads)
                .map(|_| {
                    Ok(Inbox {
                        queue: Mutex::new(Vec::new()),
                        wake: EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)
                            .map_err(|e| LoadError::socket("eventfd", e))?,
                    })
                })
                .collect::<Result<_, LoadError>>()?,
        );
        let stop = Arc::new(AtomicBool::new(false));
        let live = Arc::new(LiveCounters::default());
        let mut listener = Some(listener);
        let mut workers = Vec::with_capacity(threads);
        for index in 0..threads {
            let worker = Worker {
                index,
                listener: listener.take(),
                admit,
                sinks,
                inboxes: inboxes.clone(),
                stop: stop.clone(),
                live: live.clone(),
                next_target: 0,
                conns: Vec::new(),
                free: Vec::new(),
                report: TcpServeReport::default(),
                paced: BinaryHeap::new(),
                stale_check_ns: None,
            };
            let handle = threads::spawn(format!("netceil-tcp-rx{index}"), move || {
                threads::place(cpu)?;
                worker.run()
            })
            .map_err(|e| LoadError::Other(format!("cannot start a receiver thread: {e}")))?;
            workers.push(handle);
        }
        Ok(Server {
            local_addr,
            stop,
            live,
            workers,
            started_ns: now_ns(),
        })
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub(crate) fn live(&self) -> &LiveCounters {
        &self.live
    }

    /// The live counters, for a reader that outlives this borrow.
    pub(crate) fn live_shared(&self) -> Arc<LiveCounters> {
        self.live.clone()
    }

    /// Stops the workers (within one tick) and sums what they saw.
    pub(crate) fn stop(mut self) -> Result<TcpServeReport, LoadError> {
        self.stop.store(true, Ordering::Relaxed);
        let mut total = TcpServeReport {
            duration_s: (now_ns() - self.started_ns) as f64 / 1e9,
            ..TcpServeReport::default()
        };
        let mut first_err = None;
        for w in std::mem::take(&mut self.workers) {
            match w.join() {
                Ok(Ok(r)) => {
                    total.connections += r.connections;
                    total.stream_connections += r.stream_connections;
                    total.echo_connections += r.echo_connections;
                    total.rejected_connections += r.rejected_connections;
                    total.refused_connections += r.refused_connections;
                    total.accept_errors += r.accept_errors;
                    total.stream_bytes += r.stream_bytes;
                    total.echoed_bytes += r.echoed_bytes;
                    total.source_connections += r.source_connections;
                    total.source_bytes += r.source_bytes;
                    total.cpu_s += r.cpu_s;
                    total.wakeups += r.wakeups;
                    total.rcvbuf.merge(&r.rcvbuf);
                    total.wakes.merge(&r.wakes);
                }
                Ok(Err(e)) => first_err = first_err.or(Some(e)),
                Err(_) => {
                    first_err = first_err.or(Some(LoadError::Other(
                        "a TCP receiver thread panicked".into(),
                    )))
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(total),
        }
    }
}

impl Drop for Server {
    /// A server abandoned on an error path still stops its threads (within one tick).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A TCP sink/echo for one `netceil serve` test: only `admit`'s connections are served.
pub struct TcpTestServer(Server);

impl TcpTestServer {
    /// Binds `listen` (port 0 for any) with as many workers as cores (at most 8); sink
    /// streams get receive buffers as `recv` says and wake their worker as `wakes` says.
    pub fn start(
        listen: SocketAddr,
        admit: IpAddr,
        recv: RecvBuffer,
        wakes: SinkWakes,
    ) -> Result<TcpTestServer, LoadError> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let sinks = Sinks { recv, wakes };
        Server::start_admitting(listen, threads, Some(admit), None, sinks).map(TcpTestServer)
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.0.local_addr()
    }

    /// Payload bytes sunk, echoed and sent (reverse) so far.
    pub fn bytes_so_far(&self) -> u64 {
        let l = self.0.live();
        l.stream_bytes.load(Ordering::Relaxed)
            + l.echoed_bytes.load(Ordering::Relaxed)
            + l.source_bytes.load(Ordering::Relaxed)
    }

    pub fn stop(self) -> Result<TcpServeReport, LoadError> {
        self.0.stop()
    }
}

/// Serves TCP streams (sink) and request/response (echo) on `listen`: the TCP half of
/// `netceil recv`. Runs until `stop` is set or `duration` has passed, then reports.
pub fn serve_tcp(
    listen: SocketAddr,
    stop: &AtomicBool,
    duration: Option<Duration>,
) -> Result<TcpServeReport, LoadError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let server = Server::start(listen, threads)?;
    let end = duration.map(|d| now_ns() + d.as_nanos() as u64);
    while !stop.load(Ordering::Relaxed) && end.is_none_or(|e| now_ns() < e) {
        std::thread::sleep(Duration::from_millis(20));
    }
    server.stop()
}

enum State {
    Hello {
        buf: [u8; PACED_HELLO_LEN],
        got: usize,
    },
    Sink {
        bytes: u64,
        /// The stream's wake-up batching, if it is batched.
        batch: Option<Batch>,
    },
    Echo {
        pending: Vec<u8>,
        sent: usize,
        eof: bool,
    },
    /// The server sends until the client half-closes (reverse); on a schedule if the client
    /// asked for a rate.
    Source(Option<Pace>),
}

/// A paced source's schedule (a version 2 hello): chunk `k` is due at `start + k × interval`.
/// What is due and not yet written is owed and goes as soon as the socket takes it, so a late
/// wake-up or a full socket delays bytes but never drops them from the schedule.
#[derive(Debug, Clone, PartialEq)]
struct Pace {
    start_ns: u64,
    chunk: u64,
    interval_ns: f64,
    sent: u64,
    /// The last write found the socket full with bytes still owed: wait for EPOLLOUT.
    blocked: bool,
    /// The time this connection is queued on its worker's schedule for, if it is.
    queued_at: Option<u64>,
}

impl Pace {
    fn new(bits_per_s: u64, now: u64) -> Pace {
        let chunk = super::paced_chunk(bits_per_s as f64, SOURCE_WRITE) as u64;
        Pace {
            start_ns: now,
            chunk,
            interval_ns: chunk as f64 * 8.0 / bits_per_s as f64 * 1e9,
            sent: 0,
            blocked: false,
            queued_at: None,
        }
    }

    /// Bytes due by `now` and not yet written.
    fn owed(&self, now: u64) -> u64 {
        let chunks = (now.saturating_sub(self.start_ns) as f64 / self.interval_ns) as u64 + 1;
        (chunks * self.chunk).saturating_sub(self.sent)
    }

    /// When the next chunk not yet written falls due.
    fn next_due_ns(&self) -> u64 {
        self.start_ns + ((self.sent / self.chunk) as f64 * self.interval_ns) as u64
    }
}

struct Conn {
    stream: TcpStream,
    state: State,
    /// The epoll interest registered now, so it is changed only when it must be: a sink's
    /// never changes, and an `epoll_ctl` per wake-up was 18 % of its syscalls.
    interest: EpollFlags,
}

impl Conn {
    /// A sink stream whose reader wakes only past a mark (see [`super::wakes`]).
    fn holds_mark(&self) -> bool {
        matches!(&self.state, State::Sink { batch, .. } if wakes::holds_mark(batch))
    }
}

/// What to do with a connection after handling its event.
enum Next {
    Keep,
    Close,
}

struct Worker {
    index: usize,
    listener: Option<TcpListener>,
    admit: Option<IpAddr>,
    /// How sink streams' receive buffers are sized and wake their worker.
    sinks: Sinks,
    inboxes: Arc<Vec<Inbox>>,
    stop: Arc<AtomicBool>,
    live: Arc<LiveCounters>,
    next_target: usize,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    report: TcpServeReport,
    /// Paced sources by the time their next chunk falls due (see [`Pace`]).
    paced: BinaryHeap<Reverse<(u64, usize)>>,
    /// When to look for batched sink streams left unread for [`STALE_NS`]; `None` while no
    /// stream holds a mark.
    stale_check_ns: Option<u64>,
}

/// How a server treats its sink streams.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Sinks {
    /// Their receive buffers (see [`super::rcvbuf`]).
    pub(crate) recv: RecvBuffer,
    /// Their wake-ups (see [`super::wakes`]).
    pub(crate) wakes: SinkWakes,
}

impl Worker {
    fn run(mut self) -> Result<TcpServeReport, LoadError> {
        let cpu_start = thread_cpu_ns();
        let mut ev = EventLoop::new(256)?;
        ev.add(
            &self.inboxes[self.index].wake,
            WAKE_TOKEN,
            EpollFlags::EPOLLIN,
        )?;
        if let Some(l) = &self.listener {
            ev.add(l, LISTENER_TOKEN, EpollFlags::EPOLLIN)?;
        }
        let mut buf = AlignedBuf::zeroed(READ_BUF);
        let mut ready = Vec::with_capacity(256);
        while !self.stop.load(Ordering::Relaxed) {
            ready.clear();
            let paced = self.paced.peek().map(|Reverse((due, _))| *due);
            let wake = match (paced, self.stale_check_ns) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            ready.extend(ev.wait(wake, now_ns())?);
            self.report.wakeups += u64::from(!ready.is_empty());
            for &(token, flags) in &ready {
                match token {
                    WAKE_TOKEN => {
                        let _ = self.inboxes[self.index].wake.read();
                        let incoming = std::mem::take(
                            &mut *self.inboxes[self.index]
                                .queue
                                .lock()
                                .map_err(|_| LoadError::Other("receiver inbox poisoned".into()))?,
                        );
                        for s in incoming {
                            self.adopt(&ev, s)?;
                        }
                    }
                    LISTENER_TOKEN => self.accept_all(&ev)?,
                    t => {
                        let slot = (t - FIRST_CONN_TOKEN) as usize;
                        let next = match self.conns.get_mut(slot).and_then(Option::as_mut) {
                            Some(conn) => handle(
                                conn,
                                flags,
                                &mut buf,
                                &mut self.report,
                                &self.live,
                                self.sinks,
                            ),
                            None => continue,
                        };
                        self.after_turn(&ev, slot, next)?;
                    }
                }
            }
            self.pace_due(&ev, &mut buf)?;
            self.read_stale(&ev, &mut buf)?;
        }
        // Streams still open at the stop are counted as they stand.
        for conn in self.conns.iter().flatten() {
            if let State::Sink { batch: Some(b), .. } = &conn.state {
                self.report.wakes.add(b, false);
            }
        }
        self.report.cpu_s = (thread_cpu_ns() - cpu_start) as f64 / 1e9;
        Ok(self.report)
    }

    fn accept_all(&mut self, ev: &EventLoop) -> Result<(), LoadError> {
        loop {
            let accepted = match &self.listener {
                Some(l) => l.accept(),
                None => return Ok(()),
            };
            match accepted {
                Ok((s, peer)) => {
                    if self.admit.is_some_and(|a| a != peer.ip()) {
                        self.report.refused_connections += 1;
                        drop(s);
                        continue;
                    }
                    self.report.connections += 1;
                    let target = self.next_target % self.inboxes.len();
                    self.next_target += 1;
                    if target == self.index {
                        self.adopt(ev, s)?;
                    } else {
                        let inbox = &self.inboxes[target];
                        inbox
                            .queue
                            .lock()
                            .map_err(|_| LoadError::Other("receiver inbox poisoned".into()))?
                            .push(s);
                        let _ = inbox.wake.write(1);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                // The peer gave up before we accepted it: nothing to do.
                Err(e) if e.kind() == ErrorKind::ConnectionAborted => {}
                // Out of descriptors or memory: the connection stays queued and the listener
                // stays readable, so pause briefly rather than spin; its client waits or times
                // out and reports the error.
                Err(_) => {
                    self.report.accept_errors += 1;
                    std::thread::sleep(Duration::from_millis(10));
                    return Ok(());
                }
            }
        }
    }

    fn adopt(&mut self, ev: &EventLoop, stream: TcpStream) -> Result<(), LoadError> {
        if stream.set_nonblocking(true).is_err() {
            return Ok(());
        }
        let _ = stream.set_nodelay(true);
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.conns.push(None);
                self.conns.len() - 1
            }
        };
        ev.add(&stream, slot as u64 + FIRST_CONN_TOKEN, EpollFlags::EPOLLIN)?;
        self.conns[slot] = Some(Conn {
            stream,
            state: State::Hello {
                buf: [0; PACED_HELLO_LEN],
                got: 0,
            },
            interest: EpollFlags::EPOLLIN,
        });
        Ok(())
    }

    /// Echo connections with unsent data wait for EPOLLOUT and stop reading (backpressure).
    fn sync_interest(&mut self, ev: &EventLoop, slot: usize) -> Result<(), LoadError> {
        if let Some(conn) = &mut self.conns[slot] {
            if let Some(flags) = interest_change(&conn.state, conn.interest) {
                ev.modify(&conn.stream, slot as u64 + FIRST_CONN_TOKEN, flags)?;
                conn.interest = flags;
            }
        }
        Ok(())
    }

    /// Queues a paced source for its next chunk, unless it is queued already or waits for
    /// room in its socket (EPOLLOUT brings it back, and it is queued then).
    fn queue_paced(&mut self, slot: usize) {
        let Some(Conn {
            state: State::Source(Some(p)),
            ..
        }) = self.conns.get_mut(slot).and_then(Option::as_mut)
        else {
            return;
        };
        if p.queued_at.is_none() && !p.blocked {
            let due = p.next_due_ns();
            p.queued_at = Some(due);
            self.paced.push(Reverse((due, slot)));
        }
    }

    /// Gives each paced source whose next chunk fell due its turn, and queues it again.
    fn pace_due(&mut self, ev: &EventLoop, buf: &mut [u8]) -> Result<(), LoadError> {
        let now = now_ns();
        while let Some(&Reverse((due, slot))) = self.paced.peek() {
            if due > now {
                break;
            }
            self.paced.pop();
            let Some(conn) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
                continue;
            };
            // An entry left by a connection since closed, or by one written since.
            let State::Source(Some(p)) = &mut conn.state else {
                continue;
            };
            if p.queued_at != Some(due) {
                continue;
            }
            p.queued_at = None;
            let flags = EpollFlags::empty();
            let next = source_turn(
                &mut conn.stream,
                flags,
                buf,
                &mut self.report,
                &self.live,
                Some(p),
            );
            self.after_turn(ev, slot, next)?;
        }
        Ok(())
    }

    /// What follows a connection's turn: its epoll interest, its pacing, the stale check if
    /// it now holds a mark, or its close.
    fn after_turn(&mut self, ev: &EventLoop, slot: usize, next: Next) -> Result<(), LoadError> {
        match next {
            Next::Keep => {
                self.sync_interest(ev, slot)?;
                self.queue_paced(slot);
                let marked = self.conns[slot].as_ref().is_some_and(Conn::holds_mark);
                if marked && self.stale_check_ns.is_none() {
                    self.stale_check_ns = Some(now_ns() + STALE_NS);
                }
            }
            Next::Close => self.close(ev, slot),
        }
        Ok(())
    }

    /// Reads every batched sink stream left unread for [`STALE_NS`] (its mark held back what
    /// a slower rate delivered), which sets its mark again from that rate.
    fn read_stale(&mut self, ev: &EventLoop, buf: &mut [u8]) -> Result<(), LoadError> {
        let now = now_ns();
        if self.stale_check_ns.is_none_or(|t| now < t) {
            return Ok(());
        }
        for slot in 0..self.conns.len() {
            let Some(conn) = self.conns[slot].as_mut() else {
                continue;
            };
            let State::Sink { batch: Some(b), .. } = &conn.state else {
                continue;
            };
            if !b.stale(now) {
                continue;
            }
            let next = handle(
                conn,
                EpollFlags::EPOLLIN,
                buf,
                &mut self.report,
                &self.live,
                self.sinks,
            );
            if let Next::Close = next {
                self.close(ev, slot);
            }
        }
        let marked = self.conns.iter().flatten().any(Conn::holds_mark);
        self.stale_check_ns = marked.then(|| now + STALE_NS);
        Ok(())
    }

    fn close(&mut self, ev: &EventLoop, slot: usize) {
        if let Some(conn) = self.conns[slot].take() {
            if let State::Sink { batch: Some(b), .. } = &conn.state {
                self.report.wakes.add(b, false);
            }
            ev.delete(&conn.stream);
            self.free.push(slot);
        }
    }
}

/// The interest a connection in `state` needs, if it is not `current`.
fn interest_change(state: &State, current: EpollFlags) -> Option<EpollFlags> {
    let wanted = match state {
        State::Echo { pending, sent, .. } if *sent < pending.len() => EpollFlags::EPOLLOUT,
        State::Source(None) => EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT,
        State::Source(Some(p)) if p.blocked => EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT,
        _ => EpollFlags::EPOLLIN,
    };
    (wanted != current).then_some(wanted)
}

fn handle(
    conn: &mut Conn,
    flags: EpollFlags,
    buf: &mut [u8],
    report: &mut TcpServeReport,
    live: &LiveCounters,
    sinks: Sinks,
) -> Next {
    if let State::Hello { buf: hello, got } = &mut conn.state {
        // The first 8 bytes say the version, and so the length: a stream's data follows its
        // hello at once, so no byte past the hello may be read here.
        let len = loop {
            let len = match <&[u8; HELLO_LEN]>::try_from(&hello[..HELLO_LEN]) {
                Ok(head) if *got >= HELLO_LEN => hello::hello_len(head),
                _ => HELLO_LEN,
            };
            if *got == len {
                break len;
            }
            match conn.stream.read(&mut hello[*got..len]) {
                Ok(0) => return Next::Close,
                Ok(n) => *got += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Next::Keep,
                Err(_) => return Next::Close,
            }
        };
        let Some((ask, _flow)) = hello::decode_any(&hello[..len]) else {
            report.rejected_connections += 1;
            return Next::Close;
        };
        let mode = ask.mode();
        let mut batch = None;
        if mode == Mode::Stream {
            // Before the hello's answer: no payload has been sent, no window opened for it.
            let sized = rcvbuf::apply(&conn.stream, sinks.recv);
            report.rcvbuf.add(sized);
            batch = Batch::new(sinks.wakes, sized, now_ns());
        }
        // 16 bytes at most into an empty send buffer: always fits.
        if conn.stream.write_all(&hello[..len]).is_err() {
            return Next::Close;
        }
        conn.state = match mode {
            Mode::Stream => {
                report.stream_connections += 1;
                State::Sink { bytes: 0, batch }
            }
            Mode::Echo => {
                report.echo_connections += 1;
                State::Echo {
                    pending: Vec::new(),
                    sent: 0,
                    eof: false,
                }
            }
            Mode::Source => {
                report.source_connections += 1;
                State::Source(match ask {
                    Ask::PacedSource { bits_per_s } => Some(Pace::new(bits_per_s, now_ns())),
                    Ask::Plain(_) => None,
                })
            }
        };
        // Data may already be queued behind the hello; level-triggered epoll brings us back.
        return Next::Keep;
    }
    match &mut conn.state {
        State::Hello { .. } => Next::Keep,
        State::Source(pace) => {
            source_turn(&mut conn.stream, flags, buf, report, live, pace.as_mut())
        }
        State::Sink { bytes, batch } => {
            let before = *bytes;
            let next = sink_reads(&mut conn.stream, bytes, buf, report, live);
            if *bytes > before {
                // The end of the receive window, for the goodput.
                live.last_stream_data_ns
                    .fetch_max(now_ns(), Ordering::Relaxed);
            }
            wakes::after_read(batch, &conn.stream, *bytes - before, &mut report.wakes);
            next
        }
        State::Echo { pending, sent, eof } => {
            if flags.contains(EpollFlags::EPOLLOUT) || *sent < pending.len() {
                match flush(&mut conn.stream, pending, sent, report, live) {
                    Ok(true) => {}
                    Ok(false) => return Next::Keep,
                    Err(()) => return Next::Close,
                }
                if *eof {
                    return Next::Close;
                }
            }
            for _ in 0..READS_PER_TURN {
                match conn.stream.read(buf) {
                    Ok(0) => {
                        *eof = true;
                        return if *sent < pending.len() {
                            Next::Keep
                        } else {
                            Next::Close
                        };
                    }
                    Ok(n) => {
                        pending.clear();
                        pending.extend_from_slice(&buf[..n]);
                        *sent = 0;
                        match flush(&mut conn.stream, pending, sent, report, live) {
                            Ok(true) => {}
                            Ok(false) => return Next::Keep,
                            Err(()) => return Next::Close,
                        }
                        // A read shorter than the buffer took all there was, most likely: a
                        // request answered goes back to epoll (level-triggered, so anything
                        // left wakes it at once) instead of paying a read that finds nothing.
                        if n < buf.len() {
                            return Next::Keep;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return Next::Keep,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => return Next::Close,
                }
            }
            Next::Keep
        }
    }
}

/// Reads a stream connection until it is drained (or its turn is over); at the client's
/// half-close, sends the byte count and closes.
fn sink_reads(
    stream: &mut TcpStream,
    bytes: &mut u64,
    buf: &mut [u8],
    report: &mut TcpServeReport,
    live: &LiveCounters,
) -> Next {
    for _ in 0..READS_PER_TURN {
        match stream.read(buf) {
            Ok(0) => {
                // The client half-closed: tell it how much arrived, then close.
                let _ = stream.write_all(&bytes.to_le_bytes()[..REPORT_LEN]);
                let _ = stream.shutdown(Shutdown::Write);
                return Next::Close;
            }
            Ok(n) => {
                *bytes += n as u64;
                report.stream_bytes += n as u64;
                live.stream_bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Next::Keep,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Next::Close,
        }
    }
    Next::Keep
}

/// One turn of a source connection: at the client's half-close (or a reset), half-closes and
/// ends; otherwise writes until the socket is full or the turn is over, and a paced source no
/// more than it owes by its schedule. `buf` is the worker's read buffer: its contents are not
/// meaningful payload, only bytes to send.
fn source_turn(
    stream: &mut TcpStream,
    flags: EpollFlags,
    buf: &mut [u8],
    report: &mut TcpServeReport,
    live: &LiveCounters,
    mut pace: Option<&mut Pace>,
) -> Next {
    if flags.intersects(EpollFlags::EPOLLIN | EpollFlags::EPOLLHUP | EpollFlags::EPOLLERR) {
        // The client sends nothing after its hello: a readable socket is its half-close.
        match stream.read(buf) {
            Ok(0) => {
                let _ = stream.shutdown(Shutdown::Write);
                return Next::Close;
            }
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
            Err(_) => return Next::Close,
        }
    }
    let mut owed = pace.as_ref().map(|p| p.owed(now_ns()));
    if let Some(p) = pace.as_deref_mut() {
        p.blocked = false;
    }
    for _ in 0..READS_PER_TURN {
        let chunk = match owed {
            Some(0) => return Next::Keep,
            Some(o) => buf.len().min(o as usize),
            None => buf.len().min(SOURCE_WRITE),
        };
        match stream.write(&buf[..chunk]) {
            Ok(0) => return Next::Close,
            Ok(n) => {
                report.source_bytes += n as u64;
                live.source_bytes.fetch_add(n as u64, Ordering::Relaxed);
                if let (Some(p), Some(o)) = (pace.as_deref_mut(), owed.as_mut()) {
                    p.sent += n as u64;
                    *o -= n as u64;
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if let Some(p) = pace {
                    p.blocked = true;
                }
                return Next::Keep;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Next::Close,
        }
    }
    Next::Keep
}

/// Writes the unsent part of `pending`. `Ok(true)` when all of it went, `Ok(false)` when the
/// socket is full, `Err` when the connection is gone.
fn flush(
    stream: &mut TcpStream,
    pending: &[u8],
    sent: &mut usize,
    report: &mut TcpServeReport,
    live: &LiveCounters,
) -> Result<bool, ()> {
    while *sent < pending.len() {
        match stream.write(&pending[*sent..]) {
            Ok(0) => return Err(()),
            Ok(n) => {
                *sent += n;
                report.echoed_bytes += n as u64;
                live.echoed_bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Err(()),
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::time::Instant;

    fn loopback() -> SocketAddr {
        "127.0.0.1:0".parse().unwrap()
    }

    #[test]
    fn interest_changes_only_when_an_echo_backs_up_or_drains() {
        let sink = State::Sink {
            bytes: 5,
            batch: None,
        };
        assert_eq!(interest_change(&sink, EpollFlags::EPOLLIN), None);
        let backed_up = State::Echo {
            pending: vec![1, 2, 3],
            sent: 1,
            eof: false,
        };
        assert_eq!(
            interest_change(&backed_up, EpollFlags::EPOLLIN),
            Some(EpollFlags::EPOLLOUT)
        );
        assert_eq!(interest_change(&backed_up, EpollFlags::EPOLLOUT), None);
        let drained = State::Echo {
            pending: vec![1, 2, 3],
            sent: 3,
            eof: false,
        };
        assert_eq!(
            interest_change(&drained, EpollFlags::EPOLLOUT),
            Some(EpollFlags::EPOLLIN)
        );
    }

    /// The tests that load loopback, one at a time: two at once on a small machine make each
    /// other CPU-bound, and the window shares under test are then the CPU's.
    static ONE_LOAD: Mutex<()> = Mutex::new(());

    fn one_load() -> std::sync::MutexGuard<'static, ()> {
        ONE_LOAD
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The sender's receive-window-limited and busy time (tcp_info), µs, writing 128 KiB as fast
    /// as it can for `secs` to a one-worker sink, and what the sink saw.
    fn rwnd_limited_share(secs: f64) -> (u64, u64, TcpServeReport) {
        let server = Server::start(loopback(), 1).unwrap();
        let mut s = TcpStream::connect(server.local_addr()).unwrap();
        s.write_all(&hello::encode(Mode::Stream, 0)).unwrap();
        let mut ack = [0u8; HELLO_LEN];
        s.read_exact(&mut ack).unwrap();
        let chunk = vec![5u8; 128 * 1024];
        let start = Instant::now();
        // Bounded in time and in count (1 M writes = 128 GiB).
        for _ in 0..1_000_000 {
            if start.elapsed().as_secs_f64() >= secs {
                break;
            }
            s.write_all(&chunk).unwrap();
        }
        let info = crate::tcpinfo::tcp_info(std::os::fd::AsFd::as_fd(&s)).unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        let mut count = [0u8; REPORT_LEN];
        s.read_exact(&mut count).unwrap();
        let report = server.stop().unwrap();
        (
            info.rwnd_limited_us.unwrap(),
            info.busy_time_us.unwrap(),
            report,
        )
    }

    /// The sink leaves the receive window to the sender: over two 1 s runs, its
    /// receive-window-limited share of busy time stays within the 26 % that `cli_tcp_flows`
    /// saw with default buffers. (A sink that held bytes back for batched reads, with a fixed
    /// 1 MiB SO_RCVLOWAT read 256 KiB at a time, made it 39–69 %.)
    #[test]
    fn the_sink_leaves_the_receive_window_to_the_sender() {
        let _one = one_load();
        let (mut rwnd, mut busy) = (0, 0);
        for round in 0..2 {
            let (r, b, report) = rwnd_limited_share(1.0);
            rwnd += r;
            busy += b;
            assert_eq!(report.stream_connections, 1, "round {round}: no stream");
        }
        let share = rwnd as f64 / busy.max(1) as f64 * 100.0;
        assert!(
            share <= 26.0,
            "the sink left the sender receive-window-limited {share:.1} % of its busy time"
        );
    }

    /// A few bytes sent after a batched fast stream slows down are read within the stale
    /// check, not at the end of the stream.
    #[test]
    fn a_slow_tail_after_a_fast_stream_is_read_at_once() {
        let _one = one_load();
        let server = Server::start(loopback(), 1).unwrap();
        let mut s = TcpStream::connect(server.local_addr()).unwrap();
        s.write_all(&hello::encode(Mode::Stream, 0)).unwrap();
        let mut ack = [0u8; HELLO_LEN];
        s.read_exact(&mut ack).unwrap();
        let (sent, tail) =
            super::super::wakes::testing::fast_then_tail(&mut s, &server.live().stream_bytes);
        s.shutdown(Shutdown::Write).unwrap();
        let mut count = [0u8; REPORT_LEN];
        s.read_exact(&mut count).unwrap();
        assert_eq!(u64::from_le_bytes(count), sent);
        let report = server.stop().unwrap();
        // The tail fell under the mark the fast stream had: only the stale read brings it.
        assert_eq!(report.wakes.batched, 1, "{report:?}");
        // Generous for a loaded machine, far below "never".
        assert!(
            tail < Duration::from_millis(500),
            "the tail waited {tail:?}"
        );
    }

    #[test]
    fn sink_reports_bytes_after_half_close() {
        let server = Server::start(loopback(), 2).unwrap();
        let mut s = TcpStream::connect(server.local_addr()).unwrap();
        s.write_all(&hello::encode(Mode::Stream, 3)).unwrap();
        let mut ack = [0u8; HELLO_LEN];
        s.read_exact(&mut ack).unwrap();
        assert_eq!(hello::decode(&ack), Some((Mode::Stream, 3)));
        s.write_all(&vec![1u8; 100_000]).unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        let mut count = [0u8; REPORT_LEN];
        s.read_exact(&mut count).unwrap();
        assert_eq!(u64::from_le_bytes(count), 100_000);
        let report = server.stop().unwrap();
        assert_eq!(report.stream_bytes, 100_000);
        assert_eq!(report.stream_connections, 1);
    }

    #[test]
    fn echo_returns_every_byte_and_foreign_clients_are_rejected() {
        let server = Server::start(loopback(), 1).unwrap();
        let mut s = TcpStream::connect(server.local_addr()).unwrap();
        s.write_all(&hello::encode(Mode::Echo, 0)).unwrap();
        let mut ack = [0u8; HELLO_LEN];
        s.read_exact(&mut ack).unwrap();
        let msg: Vec<u8> = (0..300_000u32).map(|i| i as u8).collect();
        let writer = {
            let mut w = s.try_clone().unwrap();
            let msg = msg.clone();
            std::thread::spawn(move || w.write_all(&msg).unwrap())
        };
        let mut back = vec![0u8; msg.len()];
        s.read_exact(&mut back).unwrap();
        writer.join().unwrap();
        assert!(back == msg, "echo changed the bytes");

        let mut foreign = TcpStream::connect(server.local_addr()).unwrap();
        // Exactly hello-sized, so nothing is left unread (which would make the close a reset).
        foreign.write_all(b"GET / HT").unwrap();
        let mut rest = Vec::new();
        // The server closes without answering.
        assert_eq!(
            foreign.read_to_end(&mut rest).map(|_| rest.len()).ok(),
            Some(0)
        );
        let report = server.stop().unwrap();
        assert_eq!(report.rejected_connections, 1);
        assert_eq!(report.echoed_bytes, 300_000);
    }
}
