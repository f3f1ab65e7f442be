//! One thread, one mio event loop, every connection a buffer: what a client can take is
//! bounded whatever it does.
//!
//! - **Request size**: a head is read into a buffer of at most [`RequestLimits::total`] + 1
//!   bytes and parsed by [`parse_request`], which refuses a line or a head past its limit as
//!   soon as the bytes show it, with 414 or 431, and closes the connection.
//! - **Connections**: at most [`ServerLimits::max_connections`]. One more closes an open one:
//!   one of the source address holding the most, preferring one still waiting for its request
//!   to one being answered, the oldest first. A request already in the socket when a connection
//!   is accepted is answered at once, so a scraper connecting during a flood is served before
//!   anyone can push it out.
//! - **Time**: a connection must deliver a whole request head within
//!   [`ServerLimits::request_timeout`] of opening or of its previous answer (idle keep-alive
//!   connections included), and take each answer within [`ServerLimits::write_timeout`].
//! - **Fairness**: a connection gets one request answered per turn of the loop, and nothing more
//!   is read from it while its answer is unsent; so a client pipelining thousands of requests
//!   without reading them holds one answer and one buffer, and the others are served meanwhile.
//!
//! What was refused, timed out or closed to make room is reported as an [`Event`] with the
//! peer's address; the caller decides how to log it (see [`crate::RateLimitedLog`]).

use crate::request::{parse_request, Method, Request, RequestError, RequestLimits, Version};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};
use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::io::{self, IoSlice, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LISTENER: Token = Token(usize::MAX);
const WAKER: Token = Token(usize::MAX - 1);
/// After a failed accept (no descriptor left, say), the next try waits this long.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);
const READ_CHUNK: usize = 4096;

/// What the server lets one client take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    pub request: RequestLimits,
    pub max_connections: usize,
    /// From a connection's opening, or its previous answer, to a whole request head.
    pub request_timeout: Duration,
    /// To write one answer out.
    pub write_timeout: Duration,
}

impl Default for ServerLimits {
    fn default() -> ServerLimits {
        ServerLimits {
            request: RequestLimits::default(),
            max_connections: 64,
            request_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
        }
    }
}

/// An answer. Its body is shared, so a thousand connections answered the same text hold one
/// copy of it.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Arc<[u8]>,
    /// The `Allow` header, for a 405.
    pub allow: Option<&'static str>,
}

impl Response {
    pub fn new(status: u16, content_type: &'static str, body: Arc<[u8]>) -> Response {
        Response {
            status,
            content_type,
            body,
            allow: None,
        }
    }

    /// A short plain-text answer.
    pub fn text(status: u16, body: &str) -> Response {
        Response::new(
            status,
            "text/plain; charset=utf-8",
            Arc::from(body.as_bytes()),
        )
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        _ => "",
    }
}

/// Something a client did that cost it its connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Its request broke a limit or was not HTTP/1.x: answered with an error status, closed.
    Refused {
        peer: SocketAddr,
        error: RequestError,
    },
    /// No whole request head within the request timeout: a client idle from the start, or
    /// slow, or stopped in the middle of a head. (A kept-alive connection that goes quiet
    /// after its answers is closed at the same deadline without an event.)
    RequestTimedOut { peer: SocketAddr, waited: Duration },
    /// An answer not taken within the write timeout (a client that does not read).
    WriteTimedOut {
        peer: SocketAddr,
        sent: usize,
        of: usize,
    },
    /// Closed to make room for a new connection: `open` were open.
    Evicted { peer: SocketAddr, open: usize },
    /// A connection could not be accepted (`accept` failed); retried shortly.
    AcceptFailed { error: io::ErrorKind },
}

impl Event {
    /// What happened, in two words, for counting.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Refused { .. } => "refused",
            Event::RequestTimedOut { .. } | Event::WriteTimedOut { .. } => "timed out",
            Event::Evicted { .. } => "closed to make room",
            Event::AcceptFailed { .. } => "not accepted",
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Refused { peer, error } => write!(f, "refused {peer}: {error}"),
            Event::RequestTimedOut { peer, waited } => write!(
                f,
                "timed out {peer}: no whole request in {:.1} s",
                waited.as_secs_f64()
            ),
            Event::WriteTimedOut { peer, sent, of } => {
                write!(
                    f,
                    "timed out {peer}: took {sent} of {of} bytes of its answer"
                )
            }
            Event::Evicted { peer, open } => {
                write!(
                    f,
                    "closed {peer} to make room ({open} connections were open)"
                )
            }
            Event::AcceptFailed { error } => {
                write!(f, "could not accept a connection: {error}")
            }
        }
    }
}

/// Wakes a server's [`Server::turn`] from another thread.
#[derive(Clone)]
pub struct Wake(Arc<Waker>);

impl Wake {
    pub fn wake(&self) {
        // Fails only if the poll instance is gone, and then nobody needs waking.
        let _ = self.0.wake();
    }
}

impl fmt::Debug for Wake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Wake")
    }
}

/// An answer being sent.
struct Outgoing {
    head: Vec<u8>,
    body: Arc<[u8]>,
    /// The body's bytes to send: 0 for HEAD.
    body_len: usize,
    sent: usize,
}

impl Outgoing {
    fn len(&self) -> usize {
        self.head.len() + self.body_len
    }
}

struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    /// Bytes read and not yet parsed: never more than the head limit + 1.
    buf: Vec<u8>,
    out: Option<Outgoing>,
    /// When it began waiting for its request, or began to be answered.
    since: Instant,
    /// Readiness seen and not yet used up (the loop is edge-triggered).
    readable: bool,
    writable: bool,
    eof: bool,
    close_after: bool,
    /// Answers sent in full on it.
    answered: u64,
}

/// What became of a connection after a step.
enum Step {
    /// It can go on without a new event (a pipelined request, unread bytes).
    Busy,
    /// It waits for the socket.
    Wait,
    Close(Option<Event>),
}

/// The listening socket, its connections and the event loop; see the module header.
pub struct Server {
    poll: Poll,
    events: Events,
    listener: TcpListener,
    waker: Arc<Waker>,
    limits: ServerLimits,
    conns: HashMap<Token, Conn>,
    next: usize,
    /// Connections to step again in the next turn without waiting for an event.
    busy: BTreeSet<Token>,
    /// The listener may have connections waiting (edge-triggered: until `WouldBlock`).
    acceptable: bool,
    accept_after: Option<Instant>,
}

impl Server {
    /// Serves on an already bound listener (so that the caller reports bind errors its way).
    pub fn from_std(listener: std::net::TcpListener, limits: ServerLimits) -> io::Result<Server> {
        listener.set_nonblocking(true)?;
        let mut listener = TcpListener::from_std(listener);
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        Ok(Server {
            poll,
            events: Events::with_capacity(256),
            listener,
            waker,
            limits,
            conns: HashMap::new(),
            next: 0,
            busy: BTreeSet::new(),
            acceptable: true,
            accept_after: None,
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// A handle that makes the current or next [`Server::turn`] return early.
    pub fn waker(&self) -> Wake {
        Wake(Arc::clone(&self.waker))
    }

    /// Connections open now.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// One turn of the loop: waits for the sockets at most `timeout` (less when a deadline
    /// or a busy connection comes first, or when woken), then steps every connection that can
    /// go on, closes those past their deadline, and accepts new ones. `handler` answers each
    /// request; `report` hears of every client that lost its connection for misbehaving.
    pub fn turn(
        &mut self,
        timeout: Duration,
        handler: &mut dyn FnMut(&Request) -> Response,
        report: &mut dyn FnMut(Event),
    ) -> io::Result<()> {
        let wait = self.wait_at_most(timeout, Instant::now());
        match self.poll.poll(&mut self.events, Some(wait)) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            r => r?,
        }
        for ev in self.events.iter() {
            match ev.token() {
                LISTENER => self.acceptable = true,
                WAKER => {}
                t => {
                    if let Some(c) = self.conns.get_mut(&t) {
                        c.readable |= ev.is_readable() || ev.is_read_closed() || ev.is_error();
                        c.writable |= ev.is_writable() || ev.is_write_closed() || ev.is_error();
                        self.busy.insert(t);
                    }
                }
            }
        }
        let now = Instant::now();
        for t in std::mem::take(&mut self.busy) {
            self.step(t, now, handler, report);
        }
        self.expire(now, report);
        if self.acceptable && self.accept_after.is_none_or(|t| now >= t) {
            self.accept(handler, report);
        }
        Ok(())
    }

    fn wait_at_most(&self, timeout: Duration, now: Instant) -> Duration {
        if !self.busy.is_empty() || (self.acceptable && self.accept_after.is_none()) {
            return Duration::ZERO;
        }
        let deadlines = self
            .conns
            .values()
            .map(|c| self.deadline(c))
            .chain(self.accept_after.filter(|_| self.acceptable));
        deadlines.fold(timeout, |w, d| w.min(d.saturating_duration_since(now)))
    }

    fn deadline(&self, c: &Conn) -> Instant {
        c.since
            + if c.out.is_some() {
                self.limits.write_timeout
            } else {
                self.limits.request_timeout
            }
    }

    fn step(
        &mut self,
        t: Token,
        now: Instant,
        handler: &mut dyn FnMut(&Request) -> Response,
        report: &mut dyn FnMut(Event),
    ) {
        let Some(c) = self.conns.get_mut(&t) else {
            return;
        };
        match step(c, &self.limits.request, now, handler) {
            Step::Busy => {
                self.busy.insert(t);
            }
            Step::Wait => {}
            Step::Close(event) => {
                self.close(t);
                if let Some(e) = event {
                    report(e);
                }
            }
        }
    }

    fn close(&mut self, t: Token) {
        if let Some(mut c) = self.conns.remove(&t) {
            let _ = self.poll.registry().deregister(&mut c.stream);
        }
        self.busy.remove(&t);
    }

    fn expire(&mut self, now: Instant, report: &mut dyn FnMut(Event)) {
        let late: Vec<Token> = self
            .conns
            .iter()
            .filter(|(_, c)| now >= self.deadline(c))
            .map(|(t, _)| *t)
            .collect();
        for t in late {
            let Some(c) = self.conns.get(&t) else {
                continue;
            };
            let event = match &c.out {
                Some(out) => Some(Event::WriteTimedOut {
                    peer: c.peer,
                    sent: out.sent,
                    of: out.len(),
                }),
                // A kept-alive connection, answered and quiet since: the ordinary end of one
                // (a scraper between two scrapes), not a client to log.
                None if c.answered > 0 && c.buf.is_empty() => None,
                None => Some(Event::RequestTimedOut {
                    peer: c.peer,
                    waited: now - c.since,
                }),
            };
            self.close(t);
            if let Some(e) = event {
                report(e);
            }
        }
    }

    /// Accepts what is waiting (at most `max_connections` per turn, so that the open ones get
    /// their turns during a flood), each one stepped at once.
    fn accept(
        &mut self,
        handler: &mut dyn FnMut(&Request) -> Response,
        report: &mut dyn FnMut(Event),
    ) {
        self.accept_after = None;
        for _ in 0..self.limits.max_connections.max(1) {
            let (mut stream, peer) = match self.listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.acceptable = false;
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Out of descriptors or memory, or the peer gave up first: try again soon.
                    self.accept_after = Some(Instant::now() + ACCEPT_RETRY);
                    report(Event::AcceptFailed { error: e.kind() });
                    return;
                }
            };
            if self.conns.len() >= self.limits.max_connections {
                if let Some(victim) = self.victim() {
                    let peer = self.conns[&victim].peer;
                    let open = self.conns.len();
                    self.close(victim);
                    report(Event::Evicted { peer, open });
                }
            }
            let _ = stream.set_nodelay(true);
            self.next = self.next.wrapping_add(1) % (usize::MAX - 2);
            let t = Token(self.next);
            let interest = Interest::READABLE | Interest::WRITABLE;
            if let Err(e) = self.poll.registry().register(&mut stream, t, interest) {
                // No room in the poll set: this one is dropped, the others go on.
                report(Event::AcceptFailed { error: e.kind() });
                continue;
            }
            self.conns.insert(
                t,
                Conn {
                    stream,
                    peer,
                    buf: Vec::new(),
                    out: None,
                    since: Instant::now(),
                    readable: true,
                    writable: true,
                    eof: false,
                    close_after: false,
                    answered: 0,
                },
            );
            self.step(t, Instant::now(), handler, report);
        }
    }

    /// The connection to close for a new one: of the source holding the most, one waiting for
    /// its request before one being answered, the oldest first.
    fn victim(&self) -> Option<Token> {
        let mut per_source: HashMap<IpAddr, usize> = HashMap::new();
        for c in self.conns.values() {
            *per_source.entry(c.peer.ip()).or_default() += 1;
        }
        self.conns
            .iter()
            .min_by_key(|(_, c)| (Reverse(per_source[&c.peer.ip()]), c.out.is_some(), c.since))
            .map(|(t, _)| *t)
    }
}

/// One step of a connection: finish sending its answer; then answer one request, reading it
/// first if it is not buffered yet.
fn step(
    c: &mut Conn,
    limits: &RequestLimits,
    now: Instant,
    handler: &mut dyn FnMut(&Request) -> Response,
) -> Step {
    if c.out.is_some() {
        match flush(c) {
            Ok(true) if c.close_after => return Step::Close(None),
            Ok(true) => c.since = now,
            Ok(false) => return Step::Wait,
            Err(_) => return Step::Close(None),
        }
    }
    loop {
        match parse_request(&c.buf, limits) {
            Ok(Some(parsed)) => {
                c.buf.drain(..parsed.consumed);
                let response = handler(&parsed.request);
                let keep = parsed.request.keep_alive() && !c.eof;
                queue(c, &parsed.request, &response, keep, now);
                break;
            }
            Ok(None) if c.eof => return Step::Close(None),
            Ok(None) if !c.readable => return Step::Wait,
            Ok(None) => {
                if let Err(e) = read_some(c, limits) {
                    if e.kind() == io::ErrorKind::WouldBlock {
                        c.readable = false;
                        return Step::Wait;
                    }
                    return Step::Close(None);
                }
            }
            Err(error) => {
                let response = Response::text(error.status(), &format!("{error}\n"));
                let request = Request {
                    method: Method::Get,
                    path: String::new(),
                    query: None,
                    version: Version::Http11,
                    headers: Vec::new(),
                };
                queue(c, &request, &response, false, now);
                c.buf = Vec::new();
                let peer = c.peer;
                // The client may still be sending; the answer goes out if it fits at once.
                let _ = flush(c);
                return Step::Close(Some(Event::Refused { peer, error }));
            }
        }
    }
    match flush(c) {
        Ok(true) if c.close_after => Step::Close(None),
        Ok(true) => {
            c.since = now;
            Step::Busy
        }
        Ok(false) => Step::Wait,
        Err(_) => Step::Close(None),
    }
}

/// Reads once into the buffer, never past the head limit + 1 (enough to see it broken).
fn read_some(c: &mut Conn, limits: &RequestLimits) -> io::Result<()> {
    let room = (limits.total + 1)
        .saturating_sub(c.buf.len())
        .min(READ_CHUNK);
    let mut chunk = [0u8; READ_CHUNK];
    match c.stream.read(&mut chunk[..room.max(1)]) {
        Ok(0) => {
            c.eof = true;
            Ok(())
        }
        Ok(n) => {
            c.buf.extend_from_slice(&chunk[..n]);
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
        Err(e) => Err(e),
    }
}

fn queue(c: &mut Conn, request: &Request, response: &Response, keep: bool, now: Instant) {
    use std::fmt::Write as _;
    let mut head = String::with_capacity(160);
    let _ = write!(
        head,
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
        response.status,
        reason(response.status),
        response.content_type,
        response.body.len()
    );
    if let Some(allow) = response.allow {
        let _ = write!(head, "Allow: {allow}\r\n");
    }
    match (keep, request.version) {
        (false, _) => head.push_str("Connection: close\r\n"),
        (true, Version::Http10) => head.push_str("Connection: keep-alive\r\n"),
        (true, Version::Http11) => {}
    }
    head.push_str("\r\n");
    let body_len = if request.method == Method::Head {
        0
    } else {
        response.body.len()
    };
    c.out = Some(Outgoing {
        head: head.into_bytes(),
        body: Arc::clone(&response.body),
        body_len,
        sent: 0,
    });
    c.close_after = !keep;
    c.since = now;
}

/// Writes what the socket takes of the answer; true once all of it is sent.
fn flush(c: &mut Conn) -> io::Result<bool> {
    let Some(out) = c.out.as_mut() else {
        return Ok(true);
    };
    while out.sent < out.len() {
        if !c.writable {
            return Ok(false);
        }
        let h = out.sent.min(out.head.len());
        let b = out.sent.saturating_sub(out.head.len());
        let slices = [
            IoSlice::new(&out.head[h..]),
            IoSlice::new(&out.body[b..out.body_len]),
        ];
        match c.stream.write_vectored(&slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => out.sent += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => c.writable = false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    c.out = None;
    c.answered += 1;
    Ok(true)
}
