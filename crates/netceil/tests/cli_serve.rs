//! `netceil serve`: the far end that is safe to leave running.
//!
//! On loopback (no root needed): the handshake's refusals (version skew, a non-netceil client),
//! a slow-loris client dropped after its step timeout while others are served, and answers
//! before authentication never longer than what arrived.
//!
//! As root, three network namespaces made by the test act as three hosts: a client (a) runs
//! full tests against the server (b) with both ends counted; a wrong key and a request over
//! the limits are refused; a third host (c) sends stray and forged datagrams to the control
//! port and to a running test's data port, gets no answer, and is counted. Nothing the test
//! made is left behind.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_netceil");

/// A server process, stopped by its PID on drop (also when an assertion fails).
struct Server {
    child: Option<Child>,
    /// Its event lines (stderr, since it prints JSON on stdout).
    lines: mpsc::Receiver<String>,
    /// The lines read so far.
    seen: Vec<String>,
}

impl Server {
    fn start(cmd: Command) -> Server {
        Self::start_expecting(cmd, "listening")
    }

    fn start_expecting(mut cmd: Command, first: &str) -> Server {
        let mut child = cmd
            .args(["--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("serve starts");
        let err = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        let mut s = Server {
            child: Some(child),
            lines,
            seen: Vec::new(),
        };
        s.wait_for(first, Duration::from_secs(10));
        s
    }

    /// The first event line containing `needle`.
    fn wait_for(&mut self, needle: &str, within: Duration) -> String {
        if let Some(l) = self.seen.iter().find(|l| l.contains(needle)) {
            return l.clone();
        }
        let end = Instant::now() + within;
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l.contains(needle) {
                        return l;
                    }
                }
                Err(_) => break,
            }
        }
        panic!("the server never said '{needle}'");
    }

    /// Stops it with SIGINT (by its PID) and returns its totals.
    fn finish(self) -> Value {
        self.finish_with_lines().0
    }

    /// Stops it with SIGINT (by its PID); returns its totals and every event line it wrote.
    fn finish_with_lines(mut self) -> (Value, Vec<String>) {
        let mut child = self.child.take().unwrap();
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        // Stopped by Ctrl-C: 130, as for every command (its totals are still written).
        assert_eq!(child.wait().unwrap().code(), Some(130));
        let totals = serde_json::from_str(&out).expect("serve's totals as JSON");
        // The reader ends at the stderr's end, closing the channel.
        let mut lines = std::mem::take(&mut self.seen);
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(5)) {
            lines.push(l);
        }
        (totals, lines)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A control frame: length, then JSON.
fn frame(v: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(v).unwrap();
    let mut f = (body.len() as u32).to_be_bytes().to_vec();
    f.extend(body);
    f
}

fn hello(proto: u32, pad: usize) -> Vec<u8> {
    frame(
        &serde_json::json!({"type": "hello", "proto": proto, "netceil": "9.9.9",
        "nonce": "00112233445566778899aabbccddeeff", "pad": "-".repeat(pad)}),
    )
}

/// Everything the server sends until it closes (or 3 s pass).
fn read_all(s: &mut TcpStream) -> Vec<u8> {
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

#[test]
fn loopback_serve_refuses_skew_strangers_and_slow_clients_without_amplifying() {
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args([
        "serve",
        "--listen",
        &addr.to_string(),
        "--step-timeout",
        "1s",
        "--duration",
        "30",
    ]);
    let mut server = Server::start(cmd);

    // A slow-loris client: connects and sends nothing. It is dropped after the step timeout.
    let mut loris = TcpStream::connect(addr).unwrap();
    let t = Instant::now();
    // Meanwhile a real test is served.
    let out = Command::new(BIN)
        .args(["run", "rr", "--proto", "udp", "--to", &addr.to_string()])
        .args(["--duration", "1", "--json", "-q", "--no-store"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let far = &run["results"]["far"];
    assert!(
        far["app"]["udp_requests_echoed"].as_u64().unwrap() > 100,
        "{far:#}"
    );
    let got = read_all(&mut loris);
    assert!(got.is_empty(), "a silent client gets nothing: {got:?}");
    let waited = t.elapsed();
    assert!(waited < Duration::from_secs(5), "dropped after {waited:?}");
    // Said as it happens, naming the client.
    let me = loris.local_addr().unwrap().to_string();
    let line = server.wait_for("timed out", Duration::from_secs(5));
    assert!(line.contains(&me) && line.contains("its hello"), "{line}");

    // Version skew: a clear refusal naming both versions, within the hello's size.
    let mut c = TcpStream::connect(addr).unwrap();
    let h = hello(99, 300);
    c.write_all(&h).unwrap();
    let answer = read_all(&mut c);
    assert!(answer.len() <= h.len(), "{} > {}", answer.len(), h.len());
    let text = String::from_utf8_lossy(&answer);
    assert!(
        text.contains("version skew") && text.contains("99"),
        "{text}"
    );
    let me = c.local_addr().unwrap().to_string();
    let line = server.wait_for("version skew", Duration::from_secs(5));
    assert!(line.contains(&me) && line.contains("refused"), "{line}");

    // An unpadded hello (a reflection probe) gets no answer at all.
    let mut c = TcpStream::connect(addr).unwrap();
    c.write_all(&hello(1, 0)).unwrap();
    assert!(read_all(&mut c).is_empty());

    // Not netceil at all (an HTTP request): a short refusal no longer than the request.
    let mut c = TcpStream::connect(addr).unwrap();
    let get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    c.write_all(get).unwrap();
    let answer = read_all(&mut c);
    assert!(answer.len() <= get.len(), "{answer:?}");

    // A length prefix over the limit: dropped before the body is read.
    let mut c = TcpStream::connect(addr).unwrap();
    c.write_all(&[0x7F, 0xFF, 0xFF, 0xFF]).unwrap();
    let _ = c.write_all(&[b'x'; 8192]);
    assert!(read_all(&mut c).len() <= 8196);

    // UDP to the control port: counted, never answered.
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    u.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    for _ in 0..10 {
        u.send_to(b"ping", addr).unwrap();
    }
    let mut buf = [0u8; 2048];
    assert!(u.recv_from(&mut buf).is_err(), "a stray was answered");

    let totals = server.finish();
    assert!(totals["timed_out"].as_u64().unwrap() >= 1, "{totals:#}");
    assert_eq!(totals["tests_completed"], 1, "{totals:#}");
    assert!(totals["refused"].as_u64().unwrap() >= 1, "{totals:#}");
    assert!(totals["malformed"].as_u64().unwrap() >= 3, "{totals:#}");
    assert_eq!(totals["port_strays"], 10, "{totals:#}");
    let (bin, bout) = (
        totals["preauth_bytes_in"].as_u64().unwrap(),
        totals["preauth_bytes_out"].as_u64().unwrap(),
    );
    assert!(bout <= bin, "amplification {bout}/{bin} > 1");
}

/// A stored `--to` run shows both ends: the far end's lines in the summary, and in the
/// markdown and HTML reports its counts, its cores beside this end's, and both ends' series
/// on this run's clock.
#[test]
fn a_far_end_run_shows_both_ends_in_the_summary_and_the_reports() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let addr = format!("127.0.0.1:{}", free_port());
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--listen", &addr, "--duration", "30"]);
    let server = Server::start(cmd);
    let out = Command::new(BIN)
        .env("NETCEIL_DB", &db)
        .args([
            "run",
            "udp",
            "--to",
            &addr,
            "--rate",
            "20k",
            "--duration",
            "2",
            "--verbose",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let far_line = text
        .lines()
        .find(|l| l.trim_start().starts_with("far end"))
        .unwrap_or_else(|| panic!("no far end line in:\n{text}"));
    assert!(
        far_line.contains(&addr) && far_line.contains("ended by client done"),
        "{far_line}"
    );
    assert!(text.contains("there CPU   cpu"), "{text}");
    drop(server);

    let export = |args: &[&str]| {
        let out = Command::new(BIN)
            .env("NETCEIL_DB", &db)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let run: Value = serde_json::from_str(&export(&["export", "last"])).unwrap();
    // What the far end received is known at the end only: no live receive figures here, not
    // a series of zeros beside the far end's 20 kpps.
    let names: Vec<&str> = run["series"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert!(names.contains(&"load_tx_pps"), "{names:?}");
    assert!(
        !names.contains(&"load_rx_pps") && !names.contains(&"load_lost_per_s"),
        "{names:?}"
    );
    let far = &run["results"]["far"];
    let t0 = far["near_t0_s"]
        .as_f64()
        .expect("the grant's time on this run's clock");
    let first_row = run["series"]["t_s"][0].as_f64().unwrap();
    assert!((0.0..first_row + 1.0).contains(&t0), "grant at {t0} s");

    let md = export(&["export", "last", "--format", "markdown"]);
    let section = &md[md.find("## Far end").expect("a far end section")..];
    let received = far["app"]["udp_packets"].as_u64().unwrap();
    assert!(received > 30_000, "{far:#}");
    let shown = received
        .to_string()
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect::<Vec<_>>()
        .join(",");
    assert!(
        section.contains(&format!("| received there | {shown} datagrams")),
        "{section}"
    );
    assert!(section.contains("| CPU | here busy |"), "{section}");

    let html = dir.path().join("r.html");
    export(&["report", "last", "-o", html.to_str().unwrap()]);
    let html = std::fs::read_to_string(html).unwrap();
    let far_html = &html[html.find(">Far end<").expect("a far end section")..];
    assert!(
        far_html.contains("Both ends") && far_html.contains("shifted by"),
        "no both-ends chart"
    );
}

/// `--gro` through `netceil serve`: the far end reads with UDP GRO as asked, says so in its
/// grant, and its coalesced reads are counted one datagram at a time.
#[test]
fn gro_is_asked_of_the_far_end_and_it_says_what_it_did() {
    let addr = format!("127.0.0.1:{}", free_port());
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--listen", &addr, "--duration", "30"]);
    let server = Server::start(cmd);
    let out = Command::new(BIN)
        .args([
            "run",
            "udp",
            "--to",
            &addr,
            "--size",
            "1400",
            "--rate",
            "20k",
            "--burst",
            "16",
            "--duration",
            "1s",
            "--gso",
            "--gro",
            "--json",
            "-q",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["results"];
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("GRO CHANGES WHAT IS MEASURED at the far end"),
        "{notes}"
    );
    let tx = r["tx_packets"].as_u64().unwrap();
    // Every datagram sent is received or counted lost; lost only where the far end's socket
    // dropped (on a busy shared machine its reader can fall behind for a moment, and one
    // dropped GRO read loses a whole coalesced train).
    let app = &r["far"]["app"];
    let got = app["udp_packets"].as_u64().unwrap();
    let lost = app["udp_lost"].as_u64().unwrap();
    let drops = app["udp_socket_drops"].as_u64().unwrap();
    assert_eq!(got + lost, tx, "{r:#}");
    assert!(
        lost == 0 || drops > 0,
        "{lost} lost without a socket drop: {r:#}"
    );
    // On loopback each GSO send reaches the GRO socket whole.
    let coalesced = r["far"]["app"]["udp_gro_datagrams"].as_u64().unwrap();
    assert!(coalesced > tx / 2, "{coalesced} of {tx} read coalesced");
    assert_eq!(v["workload"]["gro"], true);
    drop(server);
}

#[test]
fn tcp_receive_buffers_and_wakes_are_asked_of_the_far_end_and_it_says_what_it_did() {
    let addr = format!("127.0.0.1:{}", free_port());
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--listen", &addr, "--duration", "30"]);
    let server = Server::start(cmd);
    let notes = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "tcp",
            "--to",
            &addr,
            "--duration",
            "1",
            "--json",
            "-q",
        ];
        args.extend_from_slice(extra);
        args.push("--no-store");
        let out = Command::new(BIN).args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let far: Vec<String> = v["results"]["notes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|n| n.as_str().filter(|n| n.starts_with("far end: ")))
            .map(str::to_string)
            .collect();
        far.join("\n")
    };
    // The far end's own choice on a path inside one host: a fixed buffer, reader batched.
    let own = notes(&[]);
    assert!(
        own.contains("receive buffers on the far end fixed at"),
        "{own}"
    );
    assert!(
        own.contains("streams on the far end woke their reader in batches"),
        "{own}"
    );
    // Asked: a fixed size, every arrival waking the reader.
    let asked = notes(&["--rcvbuf", "512K", "--sink-wakes", "each"]);
    assert!(asked.contains("fixed at 512 KiB"), "{asked}");
    assert!(asked.contains("as asked (--rcvbuf)"), "{asked}");
    assert!(!asked.contains("in batches"), "{asked}");
    // Asked: the far kernel's autotuning, which fixes nothing and batches nothing.
    let kernel = notes(&["--rcvbuf", "kernel"]);
    assert!(
        !kernel.contains("fixed at") && !kernel.contains("in batches"),
        "{kernel}"
    );
    drop(server);
}

#[test]
fn serve_refuses_other_hosts_without_a_key() {
    Command::new(BIN)
        .args(["serve", "--listen", "0.0.0.0:0", "--duration", "1"])
        .output()
        .map(|o| {
            assert_eq!(o.status.code(), Some(2));
            let e = String::from_utf8_lossy(&o.stderr);
            assert!(e.contains("--key-file") && e.contains("loopback"), "{e}");
        })
        .unwrap();
}

/// With a key, serve may listen beyond loopback: an address that is not this machine's is
/// the user's input (exit 2), a port already taken is not (exit 1); both name the port.
#[test]
fn serve_says_which_control_port_it_cannot_bind() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("serve.key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    // TEST-NET-1: never an address of this machine.
    for (listen, code) in [("192.0.2.1:5301", 2), (taken.as_str(), 1)] {
        let o = Command::new(BIN)
            .args(["serve", "--listen", listen, "--duration", "1"])
            .arg("--key-file")
            .arg(&key)
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{listen}: {e}");
        assert!(
            e.contains(&format!("binding the control port {listen} (TCP): ")),
            "{e}"
        );
    }
}

/// Every handshake slot taken by a flood from many hosts (40 loopback addresses, 10
/// connections each, reopened as they close, against 64 slots): a client from a host holding
/// fewer slots still gets through, three times in three, since the newest connection displaces
/// the oldest of the host holding the most. No root needed: 127.0.0.0/8 is all loopback.
#[test]
fn a_flood_from_many_hosts_filling_every_slot_does_not_lock_others_out() {
    allow_descriptors(4096);
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args([
        "serve",
        "--listen",
        &addr.to_string(),
        "--max-clients",
        "64",
    ]);
    cmd.args(["--duration", "40"]);
    let server = Server::start(cmd);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sources: Vec<std::net::Ipv4Addr> = (2..42)
        .map(|n| std::net::Ipv4Addr::new(127, 0, 0, n))
        .collect();
    let started = Instant::now();
    let flood = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let until = started + Duration::from_secs(20);
            idle_flood(addr, &sources, 400, &stop, until, 200_000)
        })
    };
    std::thread::sleep(Duration::from_secs(1));
    let mut failed = Vec::new();
    for i in 1..=3 {
        let out = Command::new(BIN)
            .args(["run", "udp", "--to", &addr.to_string(), "--rate", "5k"])
            .args(["--duration", "1", "-q", "--no-store"])
            .output()
            .unwrap();
        if !out.status.success() {
            failed.push(format!(
                "test {i}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let flood = flood.join().unwrap();
    eprintln!("flood: {flood:?}");
    assert!(
        failed.is_empty(),
        "{} of 3 tests failed during the flood:\n{}",
        failed.len(),
        failed.join("\n")
    );
    assert!(
        flood.opened >= 400 && flood.closed_by_server > 0,
        "{flood:?}"
    );
    assert_eq!(flood.bytes_answered, 0);
    let (totals, lines) = server.finish_with_lines();
    assert_eq!(totals["tests_completed"], 3, "{totals:#}");
    assert_eq!(
        totals["peaks"]["handshakes"], 64,
        "every slot was taken: {totals:#}"
    );
    assert!(totals["evicted"].as_u64().unwrap() > 0, "{totals:#}");
    assert!(
        lines.iter().any(|l| l.contains("all 64 handshake slots")),
        "{}",
        lines.join("\n")
    );
}

// ---- three namespaces as three hosts (root) ----

fn skip_reason() -> Option<String> {
    netceil_testkit::first([
        netceil_testkit::needs_root("to create network namespaces"),
        netceil_testkit::needs_tool("ip", "-V", "iproute2"),
    ])
}

fn sh(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Client a and stray host c, each joined to server b by a veth pair; deleted on drop.
struct Hosts {
    a: String,
    b: String,
    c: String,
}

const SERVER: &str = "198.18.0.2";

impl Hosts {
    /// Three namespaces named after this process and `test` (tests run in parallel).
    fn new(test: &str) -> Hosts {
        let tag = format!("netceil-serve-{test}-{}", std::process::id());
        let h = Hosts {
            a: format!("{tag}-a"),
            b: format!("{tag}-b"),
            c: format!("{tag}-c"),
        };
        for ns in [&h.a, &h.b, &h.c] {
            sh(&["ip", "netns", "add", ns]);
        }
        for (ns, dev, peer, addr, paddr) in [
            (&h.a, "nca0", "ncb0", "198.18.0.1/24", "198.18.0.2/24"),
            (&h.c, "ncc0", "ncb1", "198.18.1.1/24", "198.18.1.2/24"),
        ] {
            sh(&[
                "ip", "link", "add", dev, "netns", ns, "type", "veth", "peer", "name", peer,
                "netns", &h.b,
            ]);
            sh(&["ip", "-n", ns, "addr", "add", addr, "dev", dev]);
            sh(&["ip", "-n", &h.b, "addr", "add", paddr, "dev", peer]);
            sh(&["ip", "-n", ns, "link", "set", dev, "up"]);
            sh(&["ip", "-n", &h.b, "link", "set", peer, "up"]);
            sh(&["ip", "-n", ns, "link", "set", "lo", "up"]);
        }
        sh(&["ip", "-n", &h.b, "link", "set", "lo", "up"]);
        // Host c reaches the server's address on the a side through b.
        sh(&[
            "ip",
            "-n",
            &h.c,
            "route",
            "add",
            "198.18.0.0/24",
            "via",
            "198.18.1.2",
        ]);
        h
    }

    fn exec(&self, ns: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, BIN]);
        c
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b, &self.c] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// Runs `f` on a thread that entered network namespace `ns` (setns is per thread).
fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    spawn_in_netns(ns, f).join().expect("thread")
}

/// Starts `f` on a thread that enters network namespace `ns` first.
fn spawn_in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let fd = std::fs::File::open(&path).expect("netns file");
        nix::sched::setns(fd, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
        f()
    })
}

/// A netceil datagram header (18 bytes) of `kind`, padded to `len`.
fn forged(kind: u8, run_id: u16, len: usize) -> Vec<u8> {
    let mut d = vec![0u8; len.max(18)];
    d[0..2].copy_from_slice(&0x4E43u16.to_le_bytes());
    d[2] = (1 << 4) | kind;
    d[4..6].copy_from_slice(&run_id.to_le_bytes());
    d
}

/// Sends every kind of datagram from the calling namespace to `to`; returns how many were
/// sent and how many answers came back.
fn strays_to(to: SocketAddr) -> (u64, u64) {
    let u = UdpSocket::bind("0.0.0.0:0").unwrap();
    u.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut sent = 0;
    let mut answers = 0;
    let mut buf = [0u8; 65536];
    let datagrams: Vec<Vec<u8>> = vec![
        b"not netceil".to_vec(),
        forged(0, 1, 64),  // data of some run
        forged(1, 2, 64),  // a request: would be echoed to a granted peer
        forged(3, 3, 26),  // a bare Fin: its report would be 4x longer
        forged(3, 4, 106), // a padded Fin
        forged(2, 5, 18),  // a response nobody asked for
        forged(4, 6, 106), // a Fin report nobody asked for
        vec![0u8; 1400],   // a large junk datagram
    ];
    for _ in 0..5 {
        for d in &datagrams {
            u.send_to(d, to).unwrap();
            sent += 1;
            while u.recv_from(&mut buf).is_ok() {
                answers += 1;
            }
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    while u.recv_from(&mut buf).is_ok() {
        answers += 1;
    }
    (sent, answers)
}

#[test]
fn three_hosts_both_ends_counted_refusals_and_strays() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    let hosts = Hosts::new("test");
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    std::fs::write(&key, "three-hosts-test-secret-0123456789\n").unwrap();
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "three-hosts-test-secret-9876543210\n").unwrap();
    let (key, wrong) = (key.to_str().unwrap(), wrong.to_str().unwrap());
    let control = format!("{SERVER}:5301");

    let mut cmd = hosts.exec(&hosts.b);
    cmd.args([
        "serve",
        "--listen",
        &control,
        "--key-file",
        key,
        "--max-flows",
        "8",
    ]);
    cmd.args(["--duration", "60"]);
    let mut server = Server::start(cmd);

    refusals(&hosts, &mut server, &control, key, wrong);
    let (sent_data, sent_ctl) = udp_test_with_strays(&hosts, &mut server, &control, key);
    tcp_test(&hosts, &control, key);

    let totals = server.finish();
    assert_eq!(totals["tests_completed"], 2, "{totals:#}");
    assert_eq!(totals["auth_failures"], 1, "{totals:#}");
    // Every stray to the control port counted: read, or dropped by the kernel before.
    assert_eq!(
        totals["port_strays"].as_u64().unwrap() + totals["port_stray_drops"].as_u64().unwrap(),
        sent_ctl,
        "{totals:#}"
    );
    assert_eq!(
        totals["test_strays"].as_u64().unwrap(),
        sent_data,
        "{totals:#}"
    );
    assert!(totals["preauth_bytes_out"].as_u64() <= totals["preauth_bytes_in"].as_u64());
    tear_down(hosts);
}

/// The three hosts' test, step one: the server refuses the wrong key, a request over its
/// limits and no key at all.
fn refusals(hosts: &Hosts, server: &mut Server, control: &str, key: &str, wrong: &str) {
    let out = hosts
        .exec(&hosts.a)
        .args([
            "run",
            "udp",
            "--to",
            control,
            "--key-file",
            wrong,
            "--duration",
            "1",
            "-q",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("authentication failed"), "{e}");
    // A failed proof is said as it happens, naming the client.
    let line = server.wait_for("authentication failed", Duration::from_secs(5));
    assert!(line.contains("198.18.0.1:"), "{line}");
    let out = hosts
        .exec(&hosts.a)
        .args([
            "run",
            "udp",
            "--to",
            control,
            "--key-file",
            key,
            "--flows",
            "9",
        ])
        .args(["--duration", "1", "-q", "--no-store"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--max-flows") && e.contains('9'), "{e}");
    // No key at all against a keyed server.
    let out = hosts
        .exec(&hosts.a)
        .args([
            "run",
            "udp",
            "--to",
            control,
            "--duration",
            "1",
            "-q",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("requires a key"));
}

/// Step two: a full UDP test, while host c sends strays to the control port and to the
/// test's data port; both ends are counted in one Run and no stray is answered. Returns the
/// strays sent to the data port and to the control port.
fn udp_test_with_strays(
    hosts: &Hosts,
    server: &mut Server,
    control: &str,
    key: &str,
) -> (u64, u64) {
    let run = hosts
        .exec(&hosts.a)
        .args([
            "run",
            "udp",
            "--to",
            control,
            "--key-file",
            key,
            "--rate",
            "20k",
        ])
        .args(["--duration", "3", "--json", "-q", "--no-store"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let granted = server.wait_for("granted", Duration::from_secs(10));
    let port: u16 = granted
        .rsplit("data port ")
        .next()
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no data port in: {granted}"));
    let to_data: SocketAddr = format!("{SERVER}:{port}").parse().unwrap();
    let to_control: SocketAddr = control.parse().unwrap();
    let c = hosts.c.clone();
    let (sent_data, answered_data) = in_netns(&c, move || strays_to(to_data));
    let (sent_ctl, answered_ctl) = in_netns(&hosts.c, move || strays_to(to_control));
    assert_eq!(
        (answered_data, answered_ctl),
        (0, 0),
        "strays were answered"
    );
    let out = run.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["results"];
    let far = &r["far"];
    // Both ends counted, in one Run.
    let tx = r["tx_packets"].as_u64().unwrap();
    assert!(tx > 40_000, "sent {tx}");
    assert_eq!(far["app"]["udp_packets"], r["rx_app_packets"], "{far:#}");
    assert_eq!(
        far["app"]["stray_packets"].as_u64().unwrap(),
        sent_data,
        "{far:#}"
    );
    assert_eq!(far["kernel"]["iface"], "ncb0", "{far:#}");
    assert!(
        far["kernel"]["iface_rx_packets"].as_u64().unwrap()
            >= tx - r["lost_packets"].as_u64().unwrap()
    );
    assert!(!far["cpu"].as_array().unwrap().is_empty());
    assert!(
        far["series"]["t_s"].as_array().unwrap().len() >= 2,
        "{:#}",
        far["series"]["t_s"]
    );
    assert!(!r["notes"]
        .to_string()
        .contains("far end's report did not arrive"));
    (sent_data, sent_ctl)
}

/// Step three: a TCP test, counted at the far end too.
fn tcp_test(hosts: &Hosts, control: &str, key: &str) {
    let out = hosts
        .exec(&hosts.a)
        .args([
            "run",
            "tcp",
            "--to",
            control,
            "--key-file",
            key,
            "--duration",
            "1",
        ])
        .args(["--json", "-q", "--no-store"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["results"]["far"]["app"]["tcp_stream_bytes"]
            .as_u64()
            .unwrap()
            > 1_000_000
    );
}

/// Deletes the namespaces and checks that none is left.
fn tear_down(hosts: Hosts) {
    let names = [hosts.a.clone(), hosts.b.clone(), hosts.c.clone()];
    drop(hosts);
    let left = String::from_utf8(
        Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    for n in names {
        assert!(!left.contains(&n), "{n} left behind");
    }
}

/// What an idle-connection flood did.
#[derive(Debug, Default)]
struct Flood {
    /// Connections opened in all.
    opened: u64,
    /// Connections the server closed (each was reopened).
    closed_by_server: u64,
    /// Connects that failed or took over 200 ms.
    connect_failures: u64,
    /// Bytes the server sent to the flood.
    bytes_answered: u64,
}

/// A TCP connection to `to` from source address `from` (the system's choice if `None`),
/// given up after 200 ms.
fn connect_from(from: Option<std::net::Ipv4Addr>, to: SocketAddr) -> std::io::Result<TcpStream> {
    use nix::sys::socket::{self as s, sockopt, AddressFamily, SockFlag, SockType, SockaddrIn};
    use std::os::fd::AsRawFd;
    let wait = Duration::from_millis(200);
    let (Some(ip), SocketAddr::V4(to4)) = (from, to) else {
        return TcpStream::connect_timeout(&to, wait);
    };
    let fd = s::socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    // connect(2) gives up after SO_SNDTIMEO.
    s::setsockopt(
        &fd,
        sockopt::SendTimeout,
        &nix::sys::time::TimeVal::new(0, 200_000),
    )?;
    s::bind(
        fd.as_raw_fd(),
        &SockaddrIn::from(std::net::SocketAddrV4::new(ip, 0)),
    )?;
    s::connect(fd.as_raw_fd(), &SockaddrIn::from(to4))?;
    Ok(TcpStream::from(fd))
}

/// Holds `n` idle TCP connections to `to`, the i-th from `from[i % from.len()]` (or from the
/// calling namespace's own address if `from` is empty), reopening each as the server closes
/// it, until `stop`, `until`, or `max_opens` connections in all.
fn idle_flood(
    to: SocketAddr,
    from: &[std::net::Ipv4Addr],
    n: usize,
    stop: &std::sync::atomic::AtomicBool,
    until: Instant,
    max_opens: u64,
) -> Flood {
    let mut f = Flood::default();
    let mut conns: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    let mut buf = [0u8; 4096];
    while !stop.load(std::sync::atomic::Ordering::Relaxed)
        && Instant::now() < until
        && f.opened < max_opens
    {
        for (i, c) in conns.iter_mut().enumerate() {
            if let Some(s) = c {
                match s.read(&mut buf) {
                    Ok(0) => {}
                    Ok(k) => {
                        f.bytes_answered += k as u64;
                        continue;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    Err(_) => {}
                }
                f.closed_by_server += 1;
                *c = None;
            }
            if f.opened >= max_opens || Instant::now() >= until {
                break;
            }
            let source = (!from.is_empty()).then(|| from[i % from.len()]);
            match connect_from(source, to) {
                Ok(s) => {
                    s.set_nonblocking(true).unwrap();
                    f.opened += 1;
                    *c = Some(s);
                }
                Err(_) => f.connect_failures += 1,
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    f
}

/// Lets this process hold `n` more descriptors than the usual 1024, when the hard limit allows.
fn allow_descriptors(n: u64) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    if soft < n {
        setrlimit(Resource::RLIMIT_NOFILE, n.min(hard), hard).unwrap();
    }
}

/// Issue 23, item 4: one unauthenticated host holding 2000 idle connections (reopened as
/// they close) locked every keyed client out of the 1024 handshake slots. Now a host holds a
/// bounded share, the newest handshake always gets a slot, and a keyed test from another host
/// succeeds three times in three while the flood goes on; serve names the flooding host in
/// its log, a bounded number of times.
#[test]
fn an_idle_connection_flood_from_one_host_does_not_lock_keyed_clients_out() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    allow_descriptors(8192);
    let hosts = Hosts::new("flood");
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    std::fs::write(&key, "flood-test-secret-0123456789abcdef\n").unwrap();
    let key = key.to_str().unwrap();
    let control = format!("{SERVER}:5302");
    let mut cmd = hosts.exec(&hosts.b);
    cmd.args(["serve", "--listen", &control, "--key-file", key]);
    cmd.args(["--duration", "40"]);
    let server = Server::start(cmd);

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let to: SocketAddr = control.parse().unwrap();
    let started = Instant::now();
    let flood = {
        let stop = stop.clone();
        spawn_in_netns(&hosts.c, move || {
            idle_flood(
                to,
                &[],
                2000,
                &stop,
                started + Duration::from_secs(25),
                400_000,
            )
        })
    };
    // Let the flood fill every slot it can before the keyed client comes.
    std::thread::sleep(Duration::from_secs(2));
    let mut took = Vec::new();
    let mut failed = Vec::new();
    for i in 1..=3 {
        let t = Instant::now();
        let out = hosts
            .exec(&hosts.a)
            .args(["run", "udp", "--to", &control, "--key-file", key])
            .args([
                "--rate",
                "5k",
                "--duration",
                "1",
                "--json",
                "-q",
                "--no-store",
            ])
            .output()
            .unwrap();
        took.push(t.elapsed());
        let received = serde_json::from_slice::<Value>(&out.stdout)
            .ok()
            .and_then(|v| v["results"]["far"]["app"]["udp_packets"].as_u64());
        if !out.status.success() || received.is_none_or(|n| n < 1000) {
            failed.push(format!(
                "test {i}: {received:?} datagrams counted there; {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let flood = flood.join().unwrap();
    eprintln!("flood: {flood:?}; keyed tests took {took:?}");
    assert!(
        failed.is_empty(),
        "{} of 3 keyed tests failed during the flood:\n{}",
        failed.len(),
        failed.join("\n")
    );
    assert!(
        flood.opened >= 2000 && flood.closed_by_server > 0,
        "the flood did not run: {flood:?}"
    );
    assert_eq!(flood.bytes_answered, 0, "the flood was answered");
    for t in &took {
        assert!(*t < Duration::from_secs(10), "a keyed test took {t:?}");
    }
    let (totals, lines) = server.finish_with_lines();
    assert_eq!(totals["tests_completed"], 3, "{totals:#}");
    assert!(totals["evicted"].as_u64().unwrap() > 0, "{totals:#}");
    // The flooding host is named in the log, a bounded number of times however many
    // connections it made.
    let named: Vec<&str> = lines
        .iter()
        .filter(|l| l.contains("198.18.1.1"))
        .map(String::as_str)
        .collect();
    eprintln!(
        "serve's lines naming the flooding host:\n{}",
        named.join("\n")
    );
    assert!(!named.is_empty(), "the flooding host is never named");
    assert!(
        named.len() <= 40,
        "{} lines name the flooding host",
        named.len()
    );
    tear_down(hosts);
}

#[test]
fn serve_exposes_its_totals_and_this_host_to_prometheus() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--listen", &addr, "--duration", "30"]);
    cmd.args(["--metrics-listen", "127.0.0.1:0"]);
    let mut server = Server::start_expecting(cmd, "serving OpenMetrics");
    let line = server.wait_for("listening", Duration::from_secs(10));
    assert!(line.contains(&addr));
    let metrics_at = server
        .seen
        .iter()
        .find_map(|l| l.split("http://").nth(1))
        .and_then(|l| l.strip_suffix("/metrics"))
        .expect("the endpoint's address")
        .to_string();
    let out = Command::new(BIN)
        .args([
            "run",
            "udp",
            "--to",
            &addr,
            "--rate",
            "5k",
            "--duration",
            "1",
        ])
        .args(["-q", "--no-store"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The forwarder adds the totals to each 1 s row: wait for one after the test.
    let end = Instant::now() + Duration::from_secs(5);
    let mut text = String::new();
    while Instant::now() < end {
        let mut s = TcpStream::connect(&metrics_at).unwrap();
        // As Prometheus asks: OpenMetrics (others get the older text format).
        s.write_all(
            b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text; version=1.0.0\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
        text.clear();
        s.read_to_string(&mut text).unwrap();
        if text.contains("netceil_serve_tests_completed_total 1") {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(
        text.contains("netceil_serve_tests_completed_total 1"),
        "{text}"
    );
    assert!(text.contains("# TYPE netceil_serve_tests_completed counter"));
    assert!(
        text.contains("netceil_cpu_seconds_total{cpu=\"0\",mode=\"user\"}"),
        "this host's series"
    );
    let totals = server.finish();
    assert_eq!(totals["tests_completed"], 1);
}
