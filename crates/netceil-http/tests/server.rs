//! The server on loopback, with limits small enough to reach in a test: each client that
//! misbehaves costs itself its connection and nobody else anything.

use netceil_http::{Event, Response, Server, ServerLimits};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `/big` is 1 MB (a client that does not read it fills its buffers after a few), anything
/// else a few bytes.
const BIG: usize = 1 << 20;

struct Running {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    events: Arc<Mutex<Vec<Event>>>,
    /// The most connections seen open at the end of a turn.
    most_open: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
    wake: netceil_http::Wake,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.wake.wake();
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

impl Running {
    fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    /// The events once `count` of them match (the server reports after closing, so a client
    /// may see the close first), or after 2 s.
    fn count_events(&self, count: usize, matching: impl Fn(&Event) -> bool) -> Vec<Event> {
        let until = Instant::now() + Duration::from_secs(2);
        loop {
            let events = self.events();
            if events.iter().filter(|e| matching(e)).count() >= count || Instant::now() > until {
                return events;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn serve(limits: ServerLimits) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut server = Server::from_std(listener, limits).unwrap();
    let wake = server.waker();
    let stop = Arc::new(AtomicBool::new(false));
    let events = Arc::new(Mutex::new(Vec::new()));
    let most_open = Arc::new(AtomicUsize::new(0));
    let big: Arc<[u8]> = vec![b'x'; BIG].into();
    let thread = {
        let (stop, events, most_open) = (stop.clone(), events.clone(), most_open.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                server
                    .turn(
                        Duration::from_millis(200),
                        &mut |req| match req.path.as_str() {
                            "/big" => Response::new(200, "text/plain", big.clone()),
                            path => Response::text(200, &format!("hello {path}\n")),
                        },
                        &mut |e| events.lock().unwrap().push(e),
                    )
                    .unwrap();
                most_open.fetch_max(server.connections(), Ordering::SeqCst);
            }
        })
    };
    Running {
        addr,
        stop,
        events,
        most_open,
        thread: Some(thread),
        wake,
    }
}

fn quick() -> ServerLimits {
    ServerLimits {
        max_connections: 8,
        request_timeout: Duration::from_millis(400),
        write_timeout: Duration::from_millis(600),
        ..ServerLimits::default()
    }
}

/// Everything the server sends until it closes (or 5 s pass).
fn read_all(s: &mut TcpStream) -> String {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// A GET answered on a connection of its own: status line and how long it took.
fn get(addr: SocketAddr, path: &str) -> (String, Duration) {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let text = read_all(&mut s);
    (
        text.lines().next().unwrap_or("").to_string(),
        started.elapsed(),
    )
}

/// Whether the server has closed `s` (EOF or reset), waiting up to `within`.
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut b = [0u8; 4096];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn keep_alive_pipelined_requests_are_answered_in_order() {
    let srv = serve(quick());
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.write_all(
        b"GET /a HTTP/1.1\r\nHost: t\r\n\r\nHEAD /big HTTP/1.1\r\n\r\nGET /c HTTP/1.1\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let text = read_all(&mut s);
    let expected = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 9\r\n\r\nhello /a\n\
         HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {BIG}\r\n\r\n\
         HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 9\r\nConnection: close\r\n\r\nhello /c\n"
    );
    assert_eq!(text, expected);
    // HTTP/1.0 closes unless asked not to.
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.write_all(b"GET /d HTTP/1.0\r\n\r\n").unwrap();
    assert!(read_all(&mut s).contains("Connection: close\r\n\r\nhello /d\n"));
    assert!(srv.events().is_empty(), "{:?}", srv.events());
}

#[test]
fn a_client_that_pipelines_without_reading_holds_up_nobody() {
    let srv = serve(quick());
    let mut greedy = TcpStream::connect(srv.addr).unwrap();
    greedy
        .set_write_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut sent = 0;
    for _ in 0..2000 {
        if greedy.write_all(b"GET /big HTTP/1.1\r\n\r\n").is_err() {
            break;
        }
        sent += 1;
    }
    assert!(sent >= 1000, "{sent}");
    std::thread::sleep(Duration::from_millis(200));
    for _ in 0..5 {
        let (status, took) = get(srv.addr, "/small");
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(took < Duration::from_millis(300), "{took:?}");
    }
    // And it is dropped once an answer waits past the write timeout (reading would tell,
    // but would also take the answers: the server's report says it).
    std::thread::sleep(Duration::from_millis(800));
    let events = srv.events();
    let me = greedy.local_addr().unwrap();
    assert!(
        matches!(events.as_slice(), [Event::WriteTimedOut { peer, sent, of }] if *peer == me && sent < of),
        "{events:?}"
    );
}

#[test]
fn a_head_past_its_limits_is_refused_before_it_ends() {
    let srv = serve(quick());
    // A header line without end: refused as soon as it passes the limit; the client finds
    // the connection reset long before 100 MB.
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nX-Junk: ").unwrap();
    let chunk = vec![b'a'; 64 << 10];
    let mut sent = 0;
    while sent < 100 << 20 {
        match s.write(&chunk) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    assert!(sent < 32 << 20, "{} MB taken", sent >> 20);
    // Just past the limit, and then waiting: the client reads why.
    let mut s = TcpStream::connect(srv.addr).unwrap();
    write!(s, "GET / HTTP/1.1\r\nX-Junk: {}", "a".repeat(7000)).unwrap();
    assert!(read_all(&mut s).starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
    let mut s = TcpStream::connect(srv.addr).unwrap();
    write!(s, "GET /{} HTTP/1.1", "a".repeat(3000)).unwrap();
    assert!(read_all(&mut s).starts_with("HTTP/1.1 414 "));
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.write_all(b"\x16\x03\x01\x02\x00\x01\x00").unwrap();
    assert!(read_all(&mut s).starts_with("HTTP/1.1 400 "));
    let refused = srv
        .count_events(4, |e| matches!(e, Event::Refused { .. }))
        .iter()
        .filter(|e| matches!(e, Event::Refused { .. }))
        .count();
    assert_eq!(refused, 4, "{:?}", srv.events());
    assert_eq!(get(srv.addr, "/still").0, "HTTP/1.1 200 OK");
}

#[test]
fn idle_and_slow_clients_are_closed_after_the_request_timeout() {
    let srv = serve(quick());
    let started = Instant::now();
    let mut idle = TcpStream::connect(srv.addr).unwrap();
    let mut slow = TcpStream::connect(srv.addr).unwrap();
    let mut kept = TcpStream::connect(srv.addr).unwrap();
    kept.write_all(b"GET /k HTTP/1.1\r\n\r\n").unwrap();
    // One byte every 50 ms: still not a whole head at the deadline.
    for b in b"GET / HTTP/1.1\r\n" {
        if slow.write_all(&[*b]).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(closed_within(&mut idle, Duration::from_secs(2)));
    assert!(closed_within(&mut slow, Duration::from_secs(2)));
    // A kept-alive connection is idle after its answer, and closed the same way, but
    // without a word: it is a scraper between two scrapes, not a client to log.
    assert!(closed_within(&mut kept, Duration::from_secs(2)));
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(400), "{took:?}");
    let events = srv.count_events(2, |e| matches!(e, Event::RequestTimedOut { .. }));
    let timed_out: Vec<SocketAddr> = events
        .iter()
        .filter_map(|e| match e {
            Event::RequestTimedOut { peer, .. } => Some(*peer),
            _ => None,
        })
        .collect();
    let mut expected = vec![idle.local_addr().unwrap(), slow.local_addr().unwrap()];
    expected.sort();
    let mut seen = timed_out.clone();
    seen.sort();
    assert_eq!(seen, expected, "{events:?}");
    let kept_addr = kept.local_addr().unwrap();
    assert!(
        !events
            .iter()
            .any(|e| e.to_string().contains(&kept_addr.to_string())),
        "{events:?}"
    );
}

#[test]
fn a_flood_of_connections_stays_under_the_cap_and_a_scraper_gets_through() {
    let srv = serve(quick());
    let mut flood = Vec::new();
    for _ in 0..300 {
        flood.push(TcpStream::connect(srv.addr).unwrap());
    }
    // A scraper arriving among them: its request is there when it is accepted.
    let (status, took) = get(srv.addr, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(took < Duration::from_millis(500), "{took:?}");
    for _ in 0..300 {
        flood.push(TcpStream::connect(srv.addr).unwrap());
    }
    std::thread::sleep(Duration::from_millis(100));
    assert!(srv.most_open.load(Ordering::SeqCst) <= 8);
    // Every one but the last 8 is closed: to make room, or (on a slow machine) for silence.
    let closed = srv
        .count_events(592, |e| {
            matches!(e, Event::Evicted { .. } | Event::RequestTimedOut { .. })
        })
        .iter()
        .filter(|e| matches!(e, Event::Evicted { .. } | Event::RequestTimedOut { .. }))
        .count();
    assert!(closed >= 592, "{closed} closed");
    // The oldest went first: the first ones are closed, the last ones still open.
    assert!(closed_within(&mut flood[0], Duration::from_millis(100)));
    assert!(!closed_within(&mut flood[599], Duration::from_millis(100)));
}

#[test]
fn a_scraper_answered_is_not_the_one_closed_to_make_room() {
    let srv = serve(ServerLimits {
        max_connections: 2,
        ..quick()
    });
    let mut idle = TcpStream::connect(srv.addr).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let mut scraper = TcpStream::connect(srv.addr).unwrap();
    scraper.write_all(b"GET /big HTTP/1.1\r\n\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(50));
    // A third connection: the idle one goes, not the one being answered (1 MB in flight).
    let _third = TcpStream::connect(srv.addr).unwrap();
    assert!(closed_within(&mut idle, Duration::from_secs(1)));
    let mut got = vec![0u8; 64];
    scraper
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let n = scraper.read(&mut got).unwrap();
    assert!(got[..n].starts_with(b"HTTP/1.1 200 OK"));
}
