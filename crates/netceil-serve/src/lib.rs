//! The far end that is safe to leave running: `netceil serve`.
//!
//! One thread runs every control connection's handshake on a mio event loop, so a thousand
//! idle or slow clients cost a buffer each, not a thread each; each step has a deadline, and a
//! client silent past it is dropped. A granted test gets its own thread, which opens the data
//! socket (UDP receiver or TCP sink/echo, on an ephemeral port of the address the client
//! reached), samples the machine, enforces the limits, and at the client's `done` sends the
//! report and closes everything.
//!
//! Nothing is ever sent to anyone who has not authenticated: a UDP socket on the control port
//! counts whatever arrives there and never answers (a closed port would make the kernel answer
//! with ICMP), a test's data socket counts datagrams from other hosts or runs as strays and
//! answers only its peer, never with more bytes than arrived; and before authentication the
//! control connection's answers are no longer than what the client sent.
//!
//! Nobody can hold the handshake slots against keyed clients: one host holds a bounded share
//! of them, and a new connection always gets one, displacing the oldest handshake of the host
//! holding the most. Every refusal, timeout, failed proof and displaced handshake is said as
//! it happens, naming the client, in a volume a flood cannot grow.

use anyhow::Context;
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use netceil_ctl::{
    decode, fit_reply, fresh_nonce, hex, unhex, write_frame, Admission, ClientMsg, Decoded,
    Displaced, Evicted, FrameError, Grant, GroAnswer, Host, Key, Limits, ServerMsg, Slots,
    TcpRcvbuf, TestKind, TestSpec, MAC_GRANT, MAC_REQUEST, MAX_CLIENT_FRAME, MIN_HELLO_FRAME,
    NONCE_LEN, PROTO,
};
use netceil_load::tcp::{RecvBuffer, SinkWakes};
use netceil_model::{FarApp, FarEnd};
use netceil_probe::{spawn_sampler, SamplerConfig, Source};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use netceil_engine::kernel;

mod events;
mod host;
use events::{Event, EventLog};
pub use host::HostSampler;

const LISTENER: Token = Token(usize::MAX);
/// How long the loop sleeps at most: how late it sees the stop flag.
const TICK: Duration = Duration::from_millis(100);
/// Time a test may run past its asked duration before it is cut (the client's drain and Fin
/// exchange, and a slow `done`).
const GRACE: Duration = Duration::from_secs(5);
/// Longest a report write may block on a client that stopped reading.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// How `netceil serve` runs.
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub key: Option<Key>,
    pub limits: Limits,
    /// The handshake slots: `limits.max_clients` in all, and a bounded share per host.
    pub admission: Admission,
    /// Stop serving after this long (tests, scripts).
    pub duration: Option<Duration>,
    /// Receive buffer for tests' UDP sockets.
    pub rcvbuf: Option<usize>,
    pub rcvbuf_force: bool,
    /// Where this host's counters are read (the machine itself, or a fake in tests).
    pub source: Arc<dyn Source + Send + Sync>,
}

/// Everything the server counted over its life. Atomic so test threads add to it.
#[derive(Debug, Default)]
pub struct ServeTotals {
    pub control_connections: AtomicU64,
    /// Connections closed at accept: from another host, to a server without a key.
    pub turned_away: AtomicU64,
    /// Handshakes closed to make room for a newer connection (their host held its bound, or
    /// the most when every slot was taken).
    pub evicted: AtomicU64,
    /// Clients that closed before they authenticated.
    pub closed_before_auth: AtomicU64,
    /// Connections dropped for silence past a step's deadline.
    pub timed_out: AtomicU64,
    /// Connections dropped for a malformed, oversized or out-of-order message.
    pub malformed: AtomicU64,
    pub refused: AtomicU64,
    pub auth_failures: AtomicU64,
    pub tests_granted: AtomicU64,
    pub tests_completed: AtomicU64,
    /// Bytes read and written on control connections before authentication: their ratio is
    /// the control port's amplification factor.
    pub preauth_bytes_in: AtomicU64,
    pub preauth_bytes_out: AtomicU64,
    /// Datagrams on the control port (never answered), and their bytes.
    pub port_strays: AtomicU64,
    pub port_stray_bytes: AtomicU64,
    /// Datagrams to the control port the kernel dropped because they came faster than they
    /// were counted (the socket's own drop counter, SO_MEMINFO): strays too, never answered.
    pub port_stray_drops: AtomicU64,
    /// Datagrams on tests' data sockets from other hosts or runs (never answered).
    pub test_strays: AtomicU64,
    pub test_stray_bytes: AtomicU64,
    /// Datagrams and bytes the data sockets sent (echoes, Fin reports): all to granted peers.
    pub tests_refused_connections: AtomicU64,
    /// The most handshakes held at once, and by one host.
    pub peak_handshakes: AtomicU64,
    pub peak_handshakes_one_host: AtomicU64,
}

impl ServeTotals {
    /// Every counter, by the name `serve --json` gives it (and the metrics endpoint, as
    /// `serve_<name>_total`).
    pub fn counters(&self) -> [(&'static str, u64); 18] {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        [
            ("control_connections", g(&self.control_connections)),
            ("turned_away", g(&self.turned_away)),
            ("evicted", g(&self.evicted)),
            ("closed_before_auth", g(&self.closed_before_auth)),
            ("timed_out", g(&self.timed_out)),
            ("malformed", g(&self.malformed)),
            ("refused", g(&self.refused)),
            ("auth_failures", g(&self.auth_failures)),
            ("tests_granted", g(&self.tests_granted)),
            ("tests_completed", g(&self.tests_completed)),
            ("preauth_bytes_in", g(&self.preauth_bytes_in)),
            ("preauth_bytes_out", g(&self.preauth_bytes_out)),
            ("port_strays", g(&self.port_strays)),
            ("port_stray_bytes", g(&self.port_stray_bytes)),
            ("port_stray_drops", g(&self.port_stray_drops)),
            ("test_strays", g(&self.test_strays)),
            ("test_stray_bytes", g(&self.test_stray_bytes)),
            (
                "test_refused_connections",
                g(&self.tests_refused_connections),
            ),
        ]
    }

    /// The counters, and the peaks apart (they are not counters).
    pub fn json(&self) -> serde_json::Value {
        let mut all: serde_json::Map<String, serde_json::Value> = self
            .counters()
            .into_iter()
            .map(|(name, n)| (name.to_string(), n.into()))
            .collect();
        all.insert(
            "peaks".into(),
            serde_json::json!({
                "handshakes": self.peak_handshakes.load(Ordering::Relaxed),
                "handshakes_one_host": self.peak_handshakes_one_host.load(Ordering::Relaxed),
            }),
        );
        serde_json::Value::Object(all)
    }
}

/// A line about what happened, for the terminal (one per event).
pub type Say = Arc<dyn Fn(String) + Send + Sync>;

/// Why [`serve`] could not serve.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The control port could not be bound (the address is in use, not this machine's, or a
    /// privileged port).
    #[error("binding the control port {addr} ({what})")]
    Bind {
        addr: SocketAddr,
        /// Which socket: `TCP`, or the UDP one that counts strays.
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The system failed after the bind (a socket option, epoll, a thread).
    #[error(transparent)]
    System(#[from] anyhow::Error),
}

enum Step {
    Hello,
    Request {
        client: [u8; NONCE_LEN],
        server: [u8; NONCE_LEN],
    },
}

impl Step {
    /// What the server waits for at this step.
    fn awaited(&self) -> &'static str {
        match self {
            Step::Hello => "its hello",
            Step::Request { .. } => "its request",
        }
    }
}

struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    local: SocketAddr,
    buf: Vec<u8>,
    step: Step,
    deadline: Instant,
    /// Bytes this client sent so far: the budget for what we may answer before it proves the
    /// key.
    bytes_in: usize,
    bytes_out: usize,
}

/// Runs the server until `stop` or `cfg.duration`, saying what happens through `say` and
/// calling `ready` with the bound address once it accepts connections. Errors only for what
/// stops it from starting (the bind) or from going on (epoll); everything else is counted in
/// the totals.
pub fn serve(
    cfg: ServeConfig,
    stop: Arc<AtomicBool>,
    totals: Arc<ServeTotals>,
    say: Say,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), Error> {
    let std_listener = std::net::TcpListener::bind(cfg.listen).map_err(|source| Error::Bind {
        addr: cfg.listen,
        what: "TCP",
        source,
    })?;
    let local = std_listener.local_addr().context("getsockname")?;
    std_listener.set_nonblocking(true).context("O_NONBLOCK")?;
    let mut listener = TcpListener::from_std(std_listener);
    let sink = UdpSocket::bind(local).map_err(|source| Error::Bind {
        addr: local,
        what: "UDP, to count strays",
        source,
    })?;
    sink.set_read_timeout(Some(TICK)).context("SO_RCVTIMEO")?;
    let sink_thread = {
        let (stop, totals) = (stop.clone(), totals.clone());
        std::thread::Builder::new()
            .name("netceil-serve-sink".into())
            .spawn(move || count_strays(&sink, &stop, &totals))
            .context("starting the stray counter")?
    };
    let poll = Poll::new().context("epoll_create")?;
    ready(local);
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)
        .context("epoll_ctl")?;
    let end = cfg.duration.map(|d| Instant::now() + d);
    let mut h = Handshakes {
        step: Duration::from_millis(cfg.limits.step_timeout_ms),
        slots: Slots::new(cfg.admission),
        cfg: &cfg,
        poll,
        listener,
        local,
        log: EventLog::new(say.clone()),
        totals,
        stop: stop.clone(),
        say,
        running: Arc::new(AtomicUsize::new(0)),
        next_test: AtomicU64::new(1),
        test_threads: Vec::new(),
        accept_again: false,
    };
    let mut events = Events::with_capacity(256);
    let outcome = loop {
        if stop.load(Ordering::Relaxed) || end.is_some_and(|e| Instant::now() >= e) {
            break Ok(());
        }
        if let Err(e) = h.turn(&mut events) {
            break Err(Error::System(e));
        }
    };
    stop.store(true, Ordering::SeqCst);
    h.finish();
    let _ = sink_thread.join();
    outcome
}

/// The handshake loop: one thread, every control connection that has not been granted a
/// test, each in a slot of [`Slots`] (one host holds a bounded share; the newest connection
/// always gets one).
struct Handshakes<'a> {
    cfg: &'a ServeConfig,
    step: Duration,
    poll: Poll,
    listener: TcpListener,
    local: SocketAddr,
    slots: Slots<Conn>,
    log: EventLog,
    totals: Arc<ServeTotals>,
    stop: Arc<AtomicBool>,
    say: Say,
    running: Arc<AtomicUsize>,
    next_test: AtomicU64,
    test_threads: Vec<std::thread::JoinHandle<()>>,
    /// An accept failed for want of descriptors or memory: try again soon, even without a
    /// new event (epoll reports the listener once per new connection).
    accept_again: bool,
}

impl Handshakes<'_> {
    /// One turn of the loop: wait for events (at most a tick, or the nearest deadline),
    /// handle them, drop clients past their deadline.
    fn turn(&mut self, events: &mut Events) -> anyhow::Result<()> {
        let now = Instant::now();
        let wait = if self.accept_again {
            Duration::from_millis(10)
        } else {
            self.slots
                .iter()
                .map(|(_, c)| c.deadline.saturating_duration_since(now))
                .min()
                .unwrap_or(TICK)
                .min(TICK)
        };
        match self.poll.poll(events, Some(wait)) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(e).context("epoll_wait"),
        }
        self.log.roll(Instant::now());
        if std::mem::take(&mut self.accept_again) {
            self.accept_all();
        }
        for ev in events.iter() {
            match ev.token() {
                LISTENER => self.accept_all(),
                Token(slot) => self.on_ready(slot),
            }
        }
        self.expire(Instant::now());
        let (one_host, open) = self.slots.peaks();
        let t = &self.totals;
        t.peak_handshakes.fetch_max(open as u64, Ordering::Relaxed);
        t.peak_handshakes_one_host
            .fetch_max(one_host as u64, Ordering::Relaxed);
        self.test_threads.retain(|h| !h.is_finished());
        Ok(())
    }

    fn accept_all(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((stream, peer)) => self.admit(stream, peer),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::Interrupted | ErrorKind::ConnectionAborted
                    ) => {}
                Err(e) if out_of_resources(&e) => {
                    // Make room as for a full table: the heaviest host's oldest handshake.
                    let evicted = self.slots.evict_heaviest(Displaced::OutOfDescriptors);
                    self.log.out_of_descriptors(&e, evicted.is_some());
                    match evicted {
                        Some(ev) => self.close_evicted(ev),
                        None => {
                            self.accept_again = true;
                            break;
                        }
                    }
                }
                Err(_) => {
                    self.accept_again = true;
                    break;
                }
            }
        }
    }

    /// A new control connection: it gets a slot (displacing another if need be), unless
    /// this server takes loopback clients only.
    fn admit(&mut self, stream: TcpStream, peer: SocketAddr) {
        self.totals
            .control_connections
            .fetch_add(1, Ordering::Relaxed);
        if self.cfg.key.is_none() && !peer.ip().is_loopback() {
            self.totals.turned_away.fetch_add(1, Ordering::Relaxed);
            self.log.note(peer, Event::TurnedAway, || {
                format!("control connection from {peer}: turned away: without --key-file this server serves loopback clients only")
            });
            return;
        }
        let host = Host::from(peer.ip());
        if let Some(ev) = self.slots.make_room(host) {
            self.close_evicted(ev);
        }
        let local = stream.local_addr().unwrap_or(self.local);
        let deadline = Instant::now() + self.step;
        let registry = self.poll.registry();
        // A failed registration drops (closes) the stream and takes no slot.
        let _ = self.slots.insert_with(host, |slot| {
            let mut stream = stream;
            registry.register(&mut stream, Token(slot), Interest::READABLE)?;
            Ok::<_, std::io::Error>(Conn {
                stream,
                peer,
                local,
                buf: Vec::new(),
                step: Step::Hello,
                deadline,
                bytes_in: 0,
                bytes_out: 0,
            })
        });
    }

    fn on_ready(&mut self, slot: usize) {
        let Some(conn) = self.slots.get_mut(slot) else {
            return;
        };
        match advance(conn, self.cfg, &self.running, &self.next_test, self.step) {
            Advance::Wait => {}
            Advance::Close(closed) => {
                if let Some((_, c)) = self.slots.remove(slot) {
                    self.close(c, closed);
                }
            }
            Advance::Granted(test) => {
                if let Some((_, c)) = self.slots.remove(slot) {
                    self.grant(c, test);
                }
            }
        }
    }

    /// Drops every client silent past its step's deadline.
    fn expire(&mut self, now: Instant) {
        let late: Vec<usize> = self
            .slots
            .iter()
            .filter(|(_, c)| c.deadline <= now)
            .map(|(slot, _)| slot)
            .collect();
        for slot in late {
            if let Some((_, c)) = self.slots.remove(slot) {
                let why = format!(
                    "timed out: silent for {:.1} s waiting for {} (serve --step-timeout)",
                    self.step.as_secs_f64(),
                    c.step.awaited()
                );
                self.close(
                    c,
                    Closed {
                        kind: Event::TimedOut,
                        why,
                    },
                );
            }
        }
    }

    fn close_evicted(&mut self, ev: Evicted<Conn>) {
        let b = self.slots.bounds();
        let why = match ev.why {
            Displaced::HostAtBound => format!(
                "closed to make room: its host {} opened more than the {} handshakes one host may hold",
                ev.host, b.max_per_host
            ),
            Displaced::TableFull => format!(
                "closed to make room: all {} handshake slots (serve --max-clients) were taken and its host {} held the most",
                b.max_open, ev.host
            ),
            Displaced::OutOfDescriptors => format!(
                "closed to make room: out of file descriptors, and its host {} held the most handshakes",
                ev.host
            ),
        };
        self.close(
            ev.value,
            Closed {
                kind: Event::Displaced,
                why,
            },
        );
    }

    /// Ends a handshake without a grant: counted, said (naming the client), closed.
    fn close(&mut self, mut c: Conn, closed: Closed) {
        let _ = self.poll.registry().deregister(&mut c.stream);
        account_preauth(&self.totals, &c);
        let t = &self.totals;
        let counter = match closed.kind {
            Event::Displaced => Some(&t.evicted),
            Event::TimedOut => Some(&t.timed_out),
            Event::Malformed => Some(&t.malformed),
            Event::Refused => Some(&t.refused),
            Event::AuthFailed => Some(&t.auth_failures),
            Event::Abandoned => Some(&t.closed_before_auth),
            Event::TurnedAway | Event::Failed => None,
        };
        if let Some(n) = counter {
            n.fetch_add(1, Ordering::Relaxed);
        }
        let peer = c.peer;
        self.log.note(peer, closed.kind, || {
            format!("control connection from {peer}: {}", closed.why)
        });
    }

    /// Hands an authenticated client to its own test thread.
    fn grant(&mut self, mut c: Conn, test: (u64, Box<TestSpec>, [[u8; NONCE_LEN]; 2])) {
        self.totals.tests_granted.fetch_add(1, Ordering::Relaxed);
        let _ = self.poll.registry().deregister(&mut c.stream);
        account_preauth(&self.totals, &c);
        let ctx = TestCtx {
            peer: c.peer,
            local: c.local,
            key: self.cfg.key.clone(),
            limits: self.cfg.limits.clone(),
            rcvbuf: (self.cfg.rcvbuf, self.cfg.rcvbuf_force),
            stop: self.stop.clone(),
            totals: self.totals.clone(),
            running: self.running.clone(),
            say: self.say.clone(),
            source: self.cfg.source.clone(),
        };
        // The handshake is over: the test thread talks to the client with blocking reads and
        // timeouts.
        let std_stream = std::net::TcpStream::from(c.stream);
        if std_stream.set_nonblocking(false).is_err() {
            self.running.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        match std::thread::Builder::new()
            .name(format!("netceil-test{}", test.0))
            .spawn(move || run_test(std_stream, *test.1, test.0, test.2, ctx))
        {
            Ok(h) => self.test_threads.push(h),
            Err(e) => {
                self.running.fetch_sub(1, Ordering::SeqCst);
                (self.say)(format!("cannot start a test thread: {e}"));
            }
        }
    }

    /// After the loop: waits for the tests, says what the log held back.
    fn finish(&mut self) {
        for h in self.test_threads.drain(..) {
            let _ = h.join();
        }
        self.log.finish();
    }
}

/// Accept errors that a closed descriptor can cure: the process's or the system's file
/// table is full, or the kernel is short of socket memory.
fn out_of_resources(e: &std::io::Error) -> bool {
    use nix::errno::Errno;
    e.raw_os_error().is_some_and(|n| {
        [Errno::EMFILE, Errno::ENFILE, Errno::ENOBUFS, Errno::ENOMEM].contains(&Errno::from_raw(n))
    })
}

fn account_preauth(totals: &ServeTotals, c: &Conn) {
    totals
        .preauth_bytes_in
        .fetch_add(c.bytes_in as u64, Ordering::Relaxed);
    totals
        .preauth_bytes_out
        .fetch_add(c.bytes_out as u64, Ordering::Relaxed);
}

/// Counts what arrives on the control port's UDP side; answers nothing.
fn count_strays(sink: &UdpSocket, stop: &AtomicBool, totals: &ServeTotals) {
    use std::os::fd::AsFd;
    let mut buf = vec![0u8; 65536];
    let mut drops = netceil_load::udp::DropCounter::default();
    let mut last_read: Option<Instant> = None;
    loop {
        // The kernel's drop count of this socket (a u32 that wraps), extended to 64 bits;
        // read every tick, and once more at the end.
        let stopping = stop.load(Ordering::Relaxed);
        if stopping || last_read.is_none_or(|t| t.elapsed() >= TICK) {
            if let Ok(raw) = netceil_load::udp::socket_drops(sink.as_fd()) {
                drops.update(raw);
                totals
                    .port_stray_drops
                    .store(drops.total(), Ordering::Relaxed);
            }
            last_read = Some(Instant::now());
        }
        if stopping {
            break;
        }
        match sink.recv_from(&mut buf) {
            Ok((n, _)) => {
                totals.port_strays.fetch_add(1, Ordering::Relaxed);
                totals
                    .port_stray_bytes
                    .fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => std::thread::sleep(TICK),
        }
    }
}

/// Why a handshake ended without a grant: counted, and said naming the client.
struct Closed {
    kind: Event,
    why: String,
}

impl Advance {
    /// Ends the handshake: `kind`, and `why` as said naming the client.
    fn close(kind: Event, why: impl Into<String>) -> Advance {
        Advance::Close(Closed {
            kind,
            why: why.into(),
        })
    }
}

enum Advance {
    Wait,
    Close(Closed),
    /// Test id, the test, and the client's nonces (for the grant's MAC).
    Granted((u64, Box<TestSpec>, [[u8; NONCE_LEN]; 2])),
}

/// Reads what a handshaking client has sent so far into its buffer; the end of the
/// handshake if it closed, failed, or sent more than a message without finishing one.
fn read_ready(c: &mut Conn) -> Result<(), Advance> {
    let mut chunk = [0u8; 1024];
    loop {
        match c.stream.read(&mut chunk) {
            Ok(0) => {
                return Err(Advance::close(
                    Event::Abandoned,
                    "closed by the client before it authenticated",
                ))
            }
            Ok(n) => {
                c.bytes_in += n;
                c.buf.extend_from_slice(&chunk[..n]);
                if c.buf.len() > MAX_CLIENT_FRAME + 4 {
                    return Err(Advance::close(
                        Event::Malformed,
                        format!("malformed: over {MAX_CLIENT_FRAME} bytes without a whole message"),
                    ));
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(Advance::close(
                    Event::Abandoned,
                    format!("failed before it authenticated ({e})"),
                ))
            }
        }
    }
    Ok(())
}

/// Reads what the client sent and moves its handshake on.
fn advance(
    c: &mut Conn,
    cfg: &ServeConfig,
    running: &AtomicUsize,
    next_test: &AtomicU64,
    step: Duration,
) -> Advance {
    if let Err(closed) = read_ready(c) {
        return closed;
    }
    let (msg, consumed) = match decode::<ClientMsg>(&c.buf, MAX_CLIENT_FRAME) {
        Ok(Decoded::NeedMore { .. }) => return Advance::Wait,
        Ok(Decoded::Frame { msg, consumed }) => (msg, consumed),
        Err(e) => {
            // A client of another protocol gets one short line, within what it sent.
            refuse(c, format!("unreadable control message: {e}"));
            return Advance::close(
                Event::Malformed,
                format!("malformed: unreadable control message: {e}"),
            );
        }
    };
    c.buf.drain(..consumed);
    match (&c.step, msg) {
        (
            Step::Hello,
            ClientMsg::Hello {
                proto,
                netceil,
                nonce,
                ..
            },
        ) => {
            if proto != PROTO {
                let why = format!(
                    "version skew: the client (netceil {}) speaks control protocol {proto}, this server (netceil {}) speaks {PROTO}; run the same netceil release on both ends",
                    clip(&netceil, 40),
                    env!("CARGO_PKG_VERSION")
                );
                refuse(c, why.clone());
                return Advance::close(Event::Refused, format!("refused: {why}"));
            }
            let client = match unhex(&nonce).and_then(|v| <[u8; NONCE_LEN]>::try_from(v).ok()) {
                Some(n) => n,
                None => {
                    return Advance::close(
                        Event::Malformed,
                        "malformed: a hello whose nonce is not 16 bytes of hex",
                    )
                }
            };
            if consumed < MIN_HELLO_FRAME {
                // An unpadded hello could be a reflection probe: no answer.
                return Advance::close(Event::Malformed, format!("malformed: a hello of {consumed} bytes, under the {MIN_HELLO_FRAME} answered (not answered)"));
            }
            let server = match fresh_nonce() {
                Ok(n) => n,
                Err(e) => {
                    return Advance::close(
                        Event::Failed,
                        format!("no nonce for it from the kernel ({e})"),
                    )
                }
            };
            let ch = ServerMsg::Challenge {
                proto: PROTO,
                netceil: env!("CARGO_PKG_VERSION").into(),
                nonce: hex(&server),
                key_required: cfg.key.is_some(),
            };
            if !send_within_budget(c, ch) {
                return Advance::close(
                    Event::Abandoned,
                    "the challenge could not be sent at once (the client stopped reading)",
                );
            }
            c.step = Step::Request { client, server };
            c.deadline = Instant::now() + step;
            Advance::Wait
        }
        (Step::Request { client, server }, ClientMsg::Request { test, mac }) => {
            let (client, server) = (*client, *server);
            if let Some(key) = &cfg.key {
                let body = serde_json::to_vec(&test).unwrap_or_default();
                let ok = mac
                    .as_deref()
                    .is_some_and(|m| key.verify(MAC_REQUEST, &[&client, &server, &body], m));
                if !ok {
                    let why = "authentication failed: the request's HMAC does not match this server's key (--key-file on both ends must hold the same secret)";
                    refuse(c, why.into());
                    return Advance::close(
                        Event::AuthFailed,
                        if mac.is_none() {
                            "authentication failed: a request without an HMAC".into()
                        } else {
                            why.to_string()
                        },
                    );
                }
            }
            // From here the client is authenticated (or on loopback without a key).
            if let Err(r) = cfg.limits.check(&test) {
                refuse(c, format!("refused: {r}"));
                return Advance::close(Event::Refused, format!("refused: {r}"));
            }
            let max = cfg.limits.max_tests as usize;
            if running
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                    (n < max).then_some(n + 1)
                })
                .is_err()
            {
                let why = format!(
                    "busy: {max} test(s) already running, this server's limit (serve --max-tests); try again when they end"
                );
                refuse(c, why.clone());
                return Advance::close(Event::Refused, format!("refused: {why}"));
            }
            let id = next_test.fetch_add(1, Ordering::Relaxed);
            Advance::Granted((id, Box::new(test), [client, server]))
        }
        _ => {
            refuse(c, "a control message out of order".into());
            Advance::close(
                Event::Malformed,
                "malformed: a control message out of order",
            )
        }
    }
}

fn clip(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// Sends a refusal, cut to what the client sent so far (it may not have authenticated).
fn refuse(c: &mut Conn, reason: String) {
    let _ = send_within_budget(
        c,
        ServerMsg::Refused {
            proto: PROTO,
            reason,
        },
    );
}

/// Writes `msg` if it fits in the bytes the client has sent minus what we answered already;
/// false if it did not fit or could not be written at once.
fn send_within_budget(c: &mut Conn, msg: ServerMsg) -> bool {
    let budget = c.bytes_in.saturating_sub(c.bytes_out);
    let Some(bytes) = fit_reply(msg, budget) else {
        return false;
    };
    match c.stream.write(&bytes) {
        Ok(n) => {
            c.bytes_out += n;
            n == bytes.len()
        }
        Err(_) => false,
    }
}

struct TestCtx {
    peer: SocketAddr,
    local: SocketAddr,
    key: Option<Key>,
    limits: Limits,
    rcvbuf: (Option<usize>, bool),
    stop: Arc<AtomicBool>,
    totals: Arc<ServeTotals>,
    running: Arc<AtomicUsize>,
    say: Say,
    source: Arc<dyn Source + Send + Sync>,
}

/// The test's data side.
enum Data {
    Udp(netceil_load::udp::UdpReceiver),
    /// The server, and how it sizes its sink streams' receive buffers (said in the report).
    Tcp(netceil_load::tcp::TcpTestServer, RecvBuffer),
}

impl Data {
    /// (packets, bytes) so far; packets are 0 for TCP.
    fn so_far(&self) -> (u64, u64) {
        match self {
            Data::Udp(r) => {
                let p = r.progress();
                (p.rx_packets, p.rx_bytes)
            }
            Data::Tcp(t, _) => (0, t.bytes_so_far()),
        }
    }
}

fn run_test(
    mut stream: std::net::TcpStream,
    spec: TestSpec,
    id: u64,
    nonces: [[u8; NONCE_LEN]; 2],
    ctx: TestCtx,
) {
    let peer = ctx.peer;
    let kind = spec.kind;
    let outcome = test_body(&mut stream, &spec, id, nonces, &ctx);
    match outcome {
        Ok(ended_by) => {
            ctx.totals.tests_completed.fetch_add(1, Ordering::Relaxed);
            (ctx.say)(format!(
                "test {id} ({}, {} flow(s)) from {peer}: ended by {ended_by}",
                kind.name(),
                spec.flows
            ));
        }
        Err(e) => (ctx.say)(format!("test {id} from {peer}: {e:#}")),
    }
    ctx.running.fetch_sub(1, Ordering::SeqCst);
}

/// Stops the test's data socket and says what the application side counted there, with what
/// the client should know about how (the TCP sinks' buffers and wake-ups).
fn stop_data(data: Data, ctx: &TestCtx) -> anyhow::Result<(FarApp, Vec<String>)> {
    let mut notes = Vec::new();
    let app = match data {
        Data::Udp(r) => {
            let rep = r.stop().context("stopping the UDP receiver")?;
            ctx.totals
                .test_strays
                .fetch_add(rep.stray_packets, Ordering::Relaxed);
            ctx.totals
                .test_stray_bytes
                .fetch_add(rep.stray_bytes, Ordering::Relaxed);
            FarApp {
                udp_packets: rep.rx_packets,
                udp_bytes: rep.rx_bytes,
                udp_lost: rep.lost,
                udp_reordered: rep.reordered,
                udp_duplicates: rep.duplicates,
                udp_socket_drops: rep.socket_drops,
                udp_requests_echoed: rep.requests_echoed,
                udp_gro_reads: rep.gro_reads,
                udp_gro_datagrams: rep.gro_datagrams,
                stray_packets: rep.stray_packets,
                ..FarApp::default()
            }
        }
        Data::Tcp(t, recv) => {
            let rep = t.stop().context("stopping the TCP server")?;
            notes.extend(rep.rcvbuf.note(recv, "far end"));
            notes.extend(rep.wakes.note("far end"));
            ctx.totals
                .tests_refused_connections
                .fetch_add(rep.refused_connections, Ordering::Relaxed);
            FarApp {
                tcp_connections: rep.connections,
                tcp_refused: rep.refused_connections,
                tcp_stream_bytes: rep.stream_bytes,
                tcp_echoed_bytes: rep.echoed_bytes,
                tcp_source_bytes: rep.source_bytes,
                cpu_s: Some(rep.cpu_s),
                ..FarApp::default()
            }
        }
    };
    Ok((app, notes))
}

fn test_body(
    stream: &mut std::net::TcpStream,
    spec: &TestSpec,
    id: u64,
    nonces: [[u8; NONCE_LEN]; 2],
    ctx: &TestCtx,
) -> anyhow::Result<String> {
    let bind = SocketAddr::new(ctx.local.ip(), 0);
    let admit_ip = ctx.peer.ip();
    let data = if spec.kind.is_udp() {
        Data::Udp(
            netceil_load::udp::UdpReceiver::spawn_admitting(
                bind,
                netceil_load::udp::RcvbufRequest {
                    size: ctx.rcvbuf.0,
                    force: ctx.rcvbuf.1,
                    rmem_max: netceil_probe::host::rmem_max(&*ctx.source),
                },
                Some(kernel::far_end_probe()),
                Some(netceil_load::udp::Admit {
                    peer: admit_ip,
                    run_id: spec.run_id,
                }),
                (spec.kind == TestKind::Udp).then_some(spec.payload_bytes as usize),
                spec.gro,
            )
            .context("opening the test's UDP socket")?,
        )
    } else {
        // The client's --rcvbuf and --sink-wakes, else this host's own choice.
        let recv = match spec.tcp_rcvbuf {
            None => RecvBuffer::default(),
            Some(TcpRcvbuf::Kernel) => RecvBuffer::Kernel,
            Some(TcpRcvbuf::Bytes(n)) => {
                RecvBuffer::Fixed(usize::try_from(n).unwrap_or(usize::MAX))
            }
        };
        let wakes = if spec.tcp_wake_each {
            SinkWakes::Each
        } else {
            SinkWakes::default()
        };
        Data::Tcp(
            netceil_load::tcp::TcpTestServer::start(bind, admit_ip, recv, wakes)
                .context("opening the test's TCP listener")?,
            recv,
        )
    };
    let data_port = match &data {
        Data::Udp(r) => r.local_addr().port(),
        Data::Tcp(t, _) => t.local_addr().port(),
    };
    let iface = kernel::iface_facing(SocketAddr::new(admit_ip, 9));
    let counters_before = kernel::Counters::read(ctx.source.as_ref());
    let cpu_before = kernel::cpu_times(ctx.source.as_ref());
    let (row_tx, _rows) = std::sync::mpsc::channel();
    let sampler = spawn_sampler(
        ctx.source.clone(),
        SamplerConfig {
            interval: Duration::from_millis(u64::from(spec.sample_ms)),
            ..SamplerConfig::default()
        },
        Arc::new(AtomicBool::new(false)),
        row_tx,
    )
    .context("starting the sampler")?;
    let started = Instant::now();
    let mac = ctx.key.as_ref().map(|k| {
        hex(&k.mac(
            MAC_GRANT,
            &[
                &nonces[0],
                &nonces[1],
                &id.to_be_bytes(),
                &data_port.to_be_bytes(),
            ],
        ))
    });
    write_frame(
        stream,
        &ServerMsg::Grant(Grant {
            test_id: id,
            data_port,
            limits: ctx.limits.clone(),
            mac,
            gro: match &data {
                Data::Udp(r) => r.gro().map(|g| match g {
                    Ok(()) => GroAnswer::On,
                    Err(reason) => GroAnswer::Refused { reason },
                }),
                Data::Tcp(..) => None,
            },
        }),
    )
    .context("sending the grant")?;
    (ctx.say)(format!(
        "test {id} granted to {}: {} × {} flow(s), {:.1} s, data port {data_port}",
        ctx.peer,
        spec.kind.name(),
        spec.flows,
        spec.duration_ms as f64 / 1e3
    ));
    stream.set_read_timeout(Some(TICK)).context("SO_RCVTIMEO")?;
    stream
        .set_write_timeout(Some(WRITE_TIMEOUT))
        .context("SO_SNDTIMEO")?;
    let ended_by = watch_test(stream, spec, &data, ctx, started);
    let (app, data_notes) = stop_data(data, ctx)?;
    let duration_s = started.elapsed().as_secs_f64();
    let counters_after = kernel::Counters::read(ctx.source.as_ref());
    let cpu = match (cpu_before, kernel::cpu_times(ctx.source.as_ref())) {
        (Some(b), Some(a)) => kernel::cpu_shares(&b, &a, ctx.source.clock_ticks_per_s()),
        _ => Vec::new(),
    };
    let sampled = sampler
        .stop()
        .map_err(|_| anyhow::anyhow!("the sampler thread panicked"))?
        .series;
    let mut notes = data_notes;
    notes.extend(counters_after.problems().iter().cloned());
    let mut far = FarEnd {
        address: ctx.local.to_string(),
        netceil_version: env!("CARGO_PKG_VERSION").into(),
        host: netceil_probe::host::host_info(ctx.source.as_ref())
            .hostname
            .unwrap_or_default(),
        cpus: cpu.len() as u32,
        duration_s,
        ended_by: ended_by.clone(),
        app,
        kernel: kernel::far_deltas(&counters_before, &counters_after, iface.as_deref()),
        cpu,
        series: sampled,
        near_t0_s: None,
        notes,
    };
    if ended_by != "client done" && !ended_by.starts_with("the client") {
        far.notes
            .push(format!("the server cut this test: {ended_by}"));
    }
    let report = ServerMsg::Report(Box::new(far));
    match write_frame(stream, &report) {
        Ok(_) => {}
        Err(FrameError::TooLong { .. }) => {}
        Err(e) => return Err(e).context("sending the report"),
    }
    let _ = stream.flush();
    Ok(ended_by)
}

/// Waits for the client's `done`, enforcing the limits meanwhile; returns what ended it.
fn watch_test(
    stream: &mut std::net::TcpStream,
    spec: &TestSpec,
    data: &Data,
    ctx: &TestCtx,
    started: Instant,
) -> String {
    let limit = Duration::from_millis(spec.duration_ms) + GRACE;
    let byte_budget = ctx.limits.byte_budget(spec);
    // The rate allowed per 1 s window: what was declared (with room for timer slack and
    // bursts) and never more than the server's limits.
    let pps_cap = spec
        .rate_pps
        .map_or(ctx.limits.max_pps, |r| r.saturating_mul(5) / 4 + 1000)
        .min(ctx.limits.max_pps) as f64;
    let bits_cap = spec
        .rate_bits_per_s
        .map_or(ctx.limits.max_bits_per_s, |r| r.saturating_mul(5) / 4)
        .min(ctx.limits.max_bits_per_s) as f64;
    let mut window = (Instant::now(), data.so_far());
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        if ctx.stop.load(Ordering::Relaxed) {
            return "the server stopping".into();
        }
        if started.elapsed() > limit {
            return format!(
                "the time limit ({:.1} s asked + {:.0} s grace)",
                spec.duration_ms as f64 / 1e3,
                GRACE.as_secs_f64()
            );
        }
        let (pkts, bytes) = data.so_far();
        if bytes > byte_budget {
            return format!("the byte limit ({byte_budget} B for this test)");
        }
        let dt = window.0.elapsed().as_secs_f64();
        if dt >= 1.0 {
            let pps = (pkts - window.1 .0) as f64 / dt;
            let bits = (bytes - window.1 .1) as f64 * 8.0 / dt;
            if spec.kind.is_udp() && pps > pps_cap {
                return format!("the rate limit ({pps:.0} packets/s over {pps_cap:.0} allowed)");
            }
            if bits > bits_cap {
                return format!("the rate limit ({bits:.0} bit/s over {bits_cap:.0} allowed)");
            }
            window = (Instant::now(), (pkts, bytes));
        }
        match stream.read(&mut chunk) {
            Ok(0) => return "the client closing the control connection".into(),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                match decode::<ClientMsg>(&buf, MAX_CLIENT_FRAME) {
                    Ok(Decoded::Frame {
                        msg: ClientMsg::Done {},
                        ..
                    }) => return "client done".into(),
                    Ok(Decoded::NeedMore { .. }) => {}
                    Ok(Decoded::Frame { .. }) | Err(_) => {
                        return "the client sending a malformed message".into()
                    }
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => return format!("the control connection failing ({e})"),
        }
    }
}
