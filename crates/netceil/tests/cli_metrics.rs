//! End-to-end: `--metrics-listen` serves live OpenMetrics that a plain HTTP client and a real
//! Prometheus server can read. All traffic stays on 127.0.0.1.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_netceil");
const PROMETHEUS: &str = "/usr/bin/prometheus";
const PROMTOOL: &str = "/usr/bin/promtool";

/// A process of ours, killed by its pid (and reaped) when the test ends, passing or not.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `netceil ARGS…` with its stderr read on a thread: returns the process, the metrics
/// address it printed, and everything it printed on stderr so far (for failure messages).
fn start_netceil(args: &[&str]) -> (Killed, SocketAddr, Arc<Mutex<String>>) {
    let mut child = Command::new(BIN)
        .args(args)
        .env("NETCEIL_DB", "/nonexistent-netceil-test/runs.db")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("netceil starts");
    let stderr = child.stderr.take().expect("piped");
    let child = Killed(child);
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = channel::<SocketAddr>();
    {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("serving OpenMetrics at http://").nth(1) {
                    if let Ok(addr) = rest.trim_end_matches("/metrics").parse() {
                        let _ = tx.send(addr);
                    }
                }
                let mut l = log.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
    }
    let addr = wait_addr(&rx, &log);
    (child, addr, log)
}

fn wait_addr(rx: &Receiver<SocketAddr>, log: &Mutex<String>) -> SocketAddr {
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| {
            panic!(
                "netceil never said where it serves; stderr:\n{}",
                log.lock().unwrap()
            )
        })
}

/// What Prometheus asks for: OpenMetrics first, the older text format as a fallback.
const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// A plain HTTP/1.0 GET (so that no server answers in chunks) asking for OpenMetrics as
/// Prometheus does: status, headers, body.
fn http_get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String, String)> {
    http_get_accepting(addr, path, Some(PROMETHEUS_ACCEPT))
}

fn http_get_accepting(
    addr: SocketAddr,
    path: &str,
    accept: Option<&str>,
) -> std::io::Result<(u16, String, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((status, head.to_string(), body.to_string()))
}

/// The samples of an exposition, by series (`name{labels}` as written) → value, after
/// checking that every sample follows a `# TYPE` of its family and the text ends in `# EOF`.
fn samples(body: &str) -> BTreeMap<String, f64> {
    assert!(body.ends_with("# EOF\n"), "no # EOF:\n{body}");
    let mut family = String::new();
    let mut out = BTreeMap::new();
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            family = rest.split(' ').next().unwrap().to_string();
        } else if !line.starts_with('#') {
            let (series, value) = line.rsplit_once(' ').expect("name and value");
            let name = series.split('{').next().unwrap();
            assert!(
                !family.is_empty() && name.starts_with(&family),
                "{line} is not under its # TYPE (last: {family})"
            );
            let v: f64 = value.parse().unwrap_or_else(|_| panic!("{line}"));
            out.insert(series.to_string(), v);
        }
    }
    out
}

/// Scrapes until `done` holds for the samples, or `within` passes (then panics with both).
fn scrape_until(
    addr: SocketAddr,
    within: Duration,
    log: &Mutex<String>,
    done: impl Fn(&BTreeMap<String, f64>) -> bool,
) -> BTreeMap<String, f64> {
    let until = Instant::now() + within;
    let mut last = String::new();
    loop {
        if let Ok((status, head, body)) = http_get(addr, "/metrics") {
            assert_eq!(status, 200, "{head}");
            assert!(
                head.to_ascii_lowercase()
                    .contains("content-type: application/openmetrics-text; version=1.0.0"),
                "{head}"
            );
            let s = samples(&body);
            if done(&s) {
                return s;
            }
            last = body;
        }
        assert!(
            Instant::now() < until,
            "not there in {within:?}; last scrape:\n{last}\nnetceil's stderr:\n{}",
            log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A few hundred datagrams on loopback, so that `lo` carries something measurable.
fn loopback_traffic(for_how_long: Duration) {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = rx.local_addr().unwrap();
    let payload = [7u8; 1000];
    let until = Instant::now() + for_how_long;
    let mut sent = 0;
    while Instant::now() < until && sent < 2000 {
        let _ = tx.send_to(&payload, to);
        sent += 1;
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The ports `pid` listens on (TCP, IPv4 and IPv6): its socket inodes looked up in this
/// network namespace's /proc/net/tcp{,6} in state LISTEN.
fn listening_ports(pid: u32) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter_map(|l| {
                    let l = l.to_string_lossy().into_owned();
                    Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    let mut ports = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 9 && f[3] == "0A" && inodes.iter().any(|i| i == f[9]) {
                if let Some(port) = f[1].rsplit(':').next() {
                    ports.push(u16::from_str_radix(port, 16).unwrap_or(0));
                }
            }
        }
    }
    ports
}

#[test]
fn without_the_flag_nothing_listens() {
    let mut child = Killed(
        Command::new(BIN)
            .args(["watch", "-q", "--no-store", "--duration", "2s"])
            .env("NETCEIL_DB", "/nonexistent-netceil-test/runs.db")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(listening_ports(child.0.id()), Vec::<u16>::new());
    assert_eq!(child.0.wait().unwrap().code(), Some(0));
}

#[test]
fn watch_serves_live_series_and_then_the_final_verdict() {
    let started = Instant::now();
    let (mut child, addr, log) = start_netceil(&[
        "watch",
        "-q",
        "--no-store",
        "--interval",
        "250ms",
        "--duration",
        "4s",
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "4s",
    ]);
    assert!(addr.ip().is_loopback(), "{addr}");
    assert_eq!(
        listening_ports(child.0.id()),
        vec![addr.port()],
        "only the address given is bound"
    );
    loopback_traffic(Duration::from_millis(1500));
    // Live: rows, per-CPU shares, loopback bytes, and a provisional verdict.
    let live = scrape_until(addr, Duration::from_secs(10), &log, |s| {
        s.get("netceil_rows_total").is_some_and(|&r| r >= 4.0)
            && s.get("netceil_findings").is_some_and(|&f| f >= 1.0)
    });
    let get = |s: &BTreeMap<String, f64>, k: &str| {
        *s.get(k)
            .unwrap_or_else(|| panic!("{k} missing from {:?}", s.keys().collect::<Vec<_>>()))
    };
    // CPU time: one counter per CPU and mode, in seconds (at most the seconds netceil ran),
    // and no machine-wide series beside the per-CPU ones.
    for mode in ["user", "system", "softirq", "idle"] {
        let series = format!("netceil_cpu_seconds_total{{cpu=\"0\",mode=\"{mode}\"}}");
        let v = get(&live, &series);
        assert!(
            (0.0..=started.elapsed().as_secs_f64()).contains(&v),
            "{series} = {v}: seconds, not a percentage"
        );
    }
    assert!(
        !live
            .keys()
            .any(|k| k.starts_with("netceil_cpu_seconds_total{mode=")
                || k.contains("_ratio{cpu=")
                || k.contains("busy")),
        "{:?}",
        live.keys().collect::<Vec<_>>()
    );
    assert!(get(&live, "netceil_cs_total") > 0.0);
    assert!(get(&live, "netceil_intr_total") >= 0.0);
    let interval = get(&live, "netceil_interval_seconds");
    assert!((0.1..2.0).contains(&interval), "{interval}");
    assert_eq!(get(&live, "netceil_findings_final"), 0.0);
    let lo_rx = |s: &BTreeMap<String, f64>| {
        s.get("netceil_iface_rx_bytes_total{device=\"lo\"}")
            .copied()
    };
    assert!(lo_rx(&live).is_some_and(|v| v > 0.0), "{live:?}");
    assert!(
        live.keys()
            .any(|k| k.starts_with("netceil_finding_info{rank=\"1\",cause=")),
        "{live:?}"
    );
    // After the run: the final verdict, served for --metrics-linger.
    let done = scrape_until(addr, Duration::from_secs(10), &log, |s| {
        s.get("netceil_findings_final") == Some(&1.0)
    });
    assert!(done["netceil_findings"] >= 1.0);
    assert!(done
        .keys()
        .any(|k| k.starts_with("netceil_finding_info{rank=\"1\"")));
    // Counters only go up between scrapes, so rate() can read them.
    for k in [
        "netceil_cs_total",
        "netceil_cpu_seconds_total{cpu=\"0\",mode=\"idle\"}",
    ] {
        assert!(done[k] >= live[k], "{k}: {} then {}", live[k], done[k]);
    }
    assert!(lo_rx(&done) >= lo_rx(&live));
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", log.lock().unwrap());
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    // Gone with netceil.
    assert!(TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err());
}

#[test]
fn run_publishes_the_workloads_own_figures() {
    let (mut child, addr, log) = start_netceil(&[
        "run",
        "udp",
        "--rate",
        "1k",
        "--duration",
        "3s",
        "-q",
        "--no-store",
        "--sample-interval",
        "500ms",
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "3s",
    ]);
    // The packets sent, counted up: about 1k/s for 3 s once the run is over.
    let s = scrape_until(addr, Duration::from_secs(15), &log, |s| {
        s.get("netceil_findings_final") == Some(&1.0)
    });
    let sent = s["netceil_load_tx_packets_total"];
    assert!(
        (600.0..6000.0).contains(&sent),
        "paced at 1k pps for 3 s: {sent}"
    );
    final_findings_then_exit(&mut child, addr, &log, Duration::from_secs(15));
}

/// Waits for the final findings (at least one, with its info series), then for the command
/// to exit 0 after its linger.
fn final_findings_then_exit(
    child: &mut Killed,
    addr: SocketAddr,
    log: &Mutex<String>,
    within: Duration,
) {
    let done = scrape_until(addr, within, log, |s| {
        s.get("netceil_findings_final") == Some(&1.0)
    });
    assert!(done["netceil_findings"] >= 1.0, "{done:?}");
    assert!(
        done.keys().any(|k| k.starts_with("netceil_finding_info{")),
        "{done:?}"
    );
    assert_eq!(
        child.0.wait().unwrap().code(),
        Some(0),
        "{}",
        log.lock().unwrap()
    );
}

/// A search publishes the machine's series while its trials run (each trial is shorter than
/// a progress report, so its rows are streamed at its end), and at the end the findings it
/// stands on.
#[test]
fn search_publishes_rows_between_trials_and_then_its_findings() {
    let (mut child, addr, log) = start_netceil(&[
        "search",
        "udp",
        "--sizes",
        "1024",
        "--trial",
        "1s",
        "--initial-trial",
        "500ms",
        "--precision",
        "20%",
        "--min-rate",
        "1k",
        "--max-rate",
        "40k",
        "--max-trials",
        "8",
        "-q",
        "--no-store",
        "--sample-interval",
        "250ms",
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "3s",
    ]);
    let mid = scrape_until(addr, Duration::from_secs(20), &log, |s| {
        s.get("netceil_rows_total").is_some_and(|&r| r >= 2.0)
    });
    assert_eq!(
        mid["netceil_findings_final"], 0.0,
        "rows only arrived at the end ({} rows)",
        mid["netceil_rows_total"]
    );
    assert!(
        mid.keys()
            .any(|k| k.starts_with("netceil_cpu_seconds_total{")),
        "{mid:?}"
    );
    final_findings_then_exit(&mut child, addr, &log, Duration::from_secs(30));
}

/// A scraper that does not ask for OpenMetrics (curl, older agents) gets the Prometheus text
/// format, which promtool's own linter accepts: counters and the findings' info family under
/// the names their samples carry, no `# EOF`.
#[test]
fn scrapers_that_do_not_ask_for_openmetrics_get_the_prometheus_text_format() {
    let (_child, addr, log) = start_netceil(&[
        "run",
        "udp",
        "--rate",
        "1k",
        "--duration",
        "2s",
        "-q",
        "--no-store",
        "--sample-interval",
        "500ms",
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "20s",
    ]);
    scrape_until(addr, Duration::from_secs(20), &log, |s| {
        s.get("netceil_findings_final") == Some(&1.0)
    });
    for accept in [None, Some("text/plain"), Some("*/*")] {
        let (status, head, body) = http_get_accepting(addr, "/metrics", accept).unwrap();
        assert_eq!(status, 200, "{head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: text/plain; version=0.0.4"),
            "{accept:?}: {head}"
        );
        assert!(
            !body.contains("# EOF") && !body.contains("# UNIT"),
            "{body}"
        );
        assert!(body.contains("# TYPE netceil_rows_total counter\nnetceil_rows_total "));
        assert!(body.contains("# TYPE netceil_finding_info gauge\nnetceil_finding_info{"));
        // Every sample sits under a TYPE of exactly its name (no suffixes in this format).
        let mut typed = String::new();
        for line in body.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                typed = rest.split(' ').next().unwrap().to_string();
            } else if !line.starts_with('#') {
                assert_eq!(line.split(['{', ' ']).next().unwrap(), typed, "{line}");
            }
        }
        if Path::new(PROMTOOL).exists() {
            let mut lint = Command::new(PROMTOOL)
                .args(["check", "metrics"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            lint.stdin
                .take()
                .unwrap()
                .write_all(body.as_bytes())
                .unwrap();
            let out = lint.wait_with_output().unwrap();
            assert!(
                out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
                "promtool check metrics: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        } else {
            netceil_testkit::skip(Some(format!(
                "{PROMTOOL} is not installed, so the lint part is (apt-get install prometheus)"
            )));
        }
    }
}

fn netceil_fails(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("NETCEIL_DB", "/nonexistent-netceil-test/runs.db")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_or_taken_addresses_are_usage_errors_that_say_why() {
    let watch = ["watch", "-q", "--no-store", "--duration", "1s"];
    for (addr, says) in [
        ("localhost:9870", "not an IP address"),
        ("127.0.0.1", "has no port"),
        ("127.0.0.1:http", "not ADDR:PORT"),
        // TEST-NET-1: never an address of this machine.
        ("192.0.2.1:9870", "not an address of this machine"),
    ] {
        let mut args = watch.to_vec();
        args.extend(["--metrics-listen", addr]);
        let (code, err) = netceil_fails(&args);
        assert_eq!(code, Some(2), "{addr}: {err}");
        assert!(err.contains(says), "{addr}: {err}");
    }
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let mut args = watch.to_vec();
    args.extend(["--metrics-listen", &addr]);
    let (code, err) = netceil_fails(&args);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("already in use"), "{err}");
    // run refuses it before measuring anything.
    let (code, err) = netceil_fails(&[
        "run",
        "udp",
        "--duration",
        "1s",
        "--no-store",
        "--metrics-listen",
        &addr,
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("already in use"), "{err}");
    let (code, err) = netceil_fails(&["watch", "--metrics-linger", "5s", "--duration", "1s"]);
    assert_eq!(code, Some(2), "--metrics-linger alone: {err}");
}

/// A port nobody listens on right now (the kernel's choice; it could be taken again before
/// Prometheus binds it, which would fail the test loudly, not silently).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn percent_encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The values of an instant query through Prometheus's HTTP API, by the series' labels.
fn prom_query(prom: SocketAddr, q: &str) -> Option<Vec<(serde_json::Value, f64)>> {
    let (status, _, body) =
        http_get(prom, &format!("/api/v1/query?query={}", percent_encode(q))).ok()?;
    if status != 200 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    if v["status"] != "success" {
        return None;
    }
    let result = v["data"]["result"].as_array()?;
    Some(
        result
            .iter()
            .filter_map(|r| {
                let value = r["value"][1].as_str()?.parse().ok()?;
                Some((r["metric"].clone(), value))
            })
            .collect(),
    )
}

#[test]
fn a_real_prometheus_scrapes_netceil() {
    if netceil_testkit::skip(
        (!Path::new(PROMETHEUS).exists())
            .then(|| format!("{PROMETHEUS} is not installed (apt-get install prometheus)")),
    ) {
        return;
    }
    let started = Instant::now();
    let (_netceil, addr, log) = start_netceil(&[
        "watch",
        "-q",
        "--no-store",
        "--interval",
        "250ms",
        "--duration",
        "30s",
        "--metrics-listen",
        "127.0.0.1:0",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: netceil\n    scrape_interval: 1s\n    scrape_timeout: 1s\n    \
             static_configs:\n      - targets: ['{addr}']\n"
        ),
    )
    .unwrap();
    let prom_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let prom_log = dir.path().join("prometheus.log");
    let prom = Killed(
        Command::new(PROMETHEUS)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={prom_addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&prom_log).unwrap())
            .spawn()
            .expect("prometheus starts"),
    );
    let until = Instant::now() + Duration::from_secs(18);
    let (busy, verdict) = loop {
        // What node_exporter's users write: the busy share of each CPU, from the counters.
        let busy = prom_query(
            prom_addr,
            "sum by (cpu) (rate(netceil_cpu_seconds_total{job=\"netceil\",mode!~\"idle|iowait\"}[5s]))",
        )
        .filter(|r| !r.is_empty());
        let verdict =
            prom_query(prom_addr, "netceil_finding_info{rank=\"1\"}").filter(|r| !r.is_empty());
        if let (Some(b), Some(v)) = (&busy, &verdict) {
            break (b.clone(), v.clone());
        }
        assert!(
            Instant::now() < until,
            "Prometheus returned no netceil series (busy {busy:?}, verdict {verdict:?}).\n\
             prometheus log:\n{}\nnetceil stderr:\n{}",
            std::fs::read_to_string(&prom_log).unwrap_or_default(),
            log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(busy.len() >= 2, "a series per CPU: {busy:?}");
    for (cpu, share) in &busy {
        assert!(cpu.get("cpu").is_some(), "{busy:?}");
        // A share of one CPU's time; a little over 1 from the rows' timing against the scrapes'.
        assert!((0.0..=1.1).contains(share), "{busy:?}");
    }
    let (labels, value) = &verdict[0];
    assert_eq!(*value, 1.0);
    assert!(
        labels["cause"].as_str().is_some_and(|c| !c.is_empty()),
        "{labels}"
    );
    assert!(["high", "medium", "low"].contains(&labels["confidence"].as_str().unwrap_or("")));
    let up = prom_query(prom_addr, "up{job=\"netceil\"}").unwrap_or_default();
    assert_eq!(up.first().map(|u| u.1), Some(1.0), "{up:?}");
    drop(prom);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}

/// The README's scrape job and alert rules, as a user would copy them: `promtool check
/// config` and `check rules` accept them, and `promtool test rules` shows the alerts fire on
/// what netceil exposes (and not on a verdict that names no ceiling, or on the machine-wide
/// softirq share).
#[test]
fn the_readmes_prometheus_examples_pass_promtool() {
    if netceil_testkit::skip(
        (!Path::new(PROMTOOL).exists())
            .then(|| format!("{PROMTOOL} is not installed (apt-get install prometheus)")),
    ) {
        return;
    }
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let section = readme
        .split("## Prometheus")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a Prometheus section");
    let blocks: Vec<&str> = section
        .split("```yaml\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .collect();
    assert_eq!(blocks.len(), 2, "a scrape job and a rule file");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    let rules = dir.path().join("rules.yml");
    std::fs::write(
        &config,
        format!("{}rule_files:\n  - rules.yml\n", blocks[0]),
    )
    .unwrap();
    std::fs::write(&rules, blocks[1]).unwrap();
    let test = dir.path().join("test.yml");
    std::fs::write(
        &test,
        r#"rule_files:
  - rules.yml
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'netceil_finding_info{rank="1",cause="softirq_bound",confidence="high",names_ceiling="true",instance="h:9870",job="netceil"}'
        values: '1x5'
      - series: 'netceil_finding_info{rank="1",cause="no_load",confidence="high",names_ceiling="false",instance="idle:9870",job="netceil"}'
        values: '1x5'
      - series: 'netceil_cpu_seconds_total{cpu="3",mode="softirq",instance="h:9870",job="netceil"}'
        values: '0+57x10'
      - series: 'netceil_cpu_seconds_total{cpu="2",mode="softirq",instance="h:9870",job="netceil"}'
        values: '0+30x10'
    alert_rule_test:
      - eval_time: 1m
        alertname: NetceilNamesACeiling
        exp_alerts: []
      - eval_time: 3m
        alertname: NetceilNamesACeiling
        exp_alerts:
          - exp_labels: {severity: warning, rank: "1", cause: softirq_bound, confidence: high, names_ceiling: "true", instance: "h:9870", job: netceil}
            exp_annotations:
              summary: "h:9870: netceil names the network I/O ceiling: softirq_bound"
      - eval_time: 4m
        alertname: NetceilCpuFullOfSoftirq
        exp_alerts: []
      - eval_time: 7m
        alertname: NetceilCpuFullOfSoftirq
        exp_alerts:
          - exp_labels: {severity: warning, cpu: "3", mode: softirq, instance: "h:9870", job: netceil}
            exp_annotations:
              summary: "h:9870: CPU 3 spends 95% of its time in softirqs"
"#,
    )
    .unwrap();
    for args in [
        vec!["check", "config", config.to_str().unwrap()],
        vec!["check", "rules", rules.to_str().unwrap()],
        vec!["test", "rules", test.to_str().unwrap()],
    ] {
        let out = Command::new(PROMTOOL)
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "promtool {}:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

// ---- One misbehaving local client must not block or bloat the endpoint (issue 23, item 5).

/// `watch` serving metrics for up to a minute, once its endpoint has served two rows.
fn watch_with_metrics() -> (Killed, SocketAddr, Arc<Mutex<String>>) {
    let (child, addr, log) = start_netceil(&[
        "watch",
        "-q",
        "--no-store",
        "--interval",
        "500ms",
        "--duration",
        "60s",
        "--metrics-listen",
        "127.0.0.1:0",
    ]);
    // A few rows in: the endpoint as a scraper finds it in a running command (a greedy
    // client arriving in the first half-second happened to escape tiny_http's stall).
    scrape_until(addr, Duration::from_secs(10), &log, |s| {
        s.get("netceil_rows_total").is_some_and(|&r| r >= 2.0)
    });
    (child, addr, log)
}

/// A field of /proc/PID/status as a number (`VmRSS` in kB, `Threads`).
fn proc_status(pid: u32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// How long a legitimate scrape takes (it must answer 200 with a valid exposition).
fn timed_scrape(addr: SocketAddr) -> Duration {
    let started = Instant::now();
    let (status, head, body) = http_get(addr, "/metrics")
        .unwrap_or_else(|e| panic!("a scrape had no whole answer within 5 s: {e}"));
    let took = started.elapsed();
    assert_eq!(status, 200, "{head}");
    assert!(samples(&body).contains_key("netceil_rows_total"), "{body}");
    took
}

/// The client itself may need more descriptors than a default soft limit of 1024.
fn raise_fd_limit(to: u64) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < to {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, to.min(hard), hard);
        }
    }
}

#[test]
fn a_client_pipelining_without_reading_does_not_stall_other_scrapes() {
    let (_child, addr, _log) = watch_with_metrics();
    let mut greedy = TcpStream::connect(addr).unwrap();
    // A small receive buffer, so that the answers it does not read fill it soon.
    nix::sys::socket::setsockopt(&greedy, nix::sys::socket::sockopt::RcvBuf, &4096).unwrap();
    greedy.set_nonblocking(true).unwrap();
    // 5000 requests at once, as one stream of bytes, sent as fast as the sockets take them
    // and never an answer read.
    let one = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let all = one.repeat(5000);
    let mut sent = 0;
    let until = Instant::now() + Duration::from_secs(3);
    while sent < all.len() && Instant::now() < until {
        match greedy.write(&all.as_bytes()[sent..]) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(_) => break,
        }
    }
    let queued = sent / one.len();
    assert!(queued >= 3000, "only {queued} requests could be queued");
    // Time for the answers to fill its buffers.
    std::thread::sleep(Duration::from_millis(1500));
    let mut took: Vec<Duration> = (0..5).map(|_| timed_scrape(addr)).collect();
    took.sort();
    eprintln!("{queued} pipelined requests unread; other scrapes took {took:?}");
    assert!(
        took[4] < Duration::from_secs(1),
        "a scrape waited behind the greedy client: {took:?}"
    );
    drop(greedy);
}

#[test]
fn a_huge_header_line_is_refused_early_and_costs_no_memory() {
    let (child, addr, _log) = watch_with_metrics();
    let pid = child.0.id();
    let before = proc_status(pid, "VmRSS");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nX-Junk: ").unwrap();
    let chunk = vec![b'a'; 64 * 1024];
    let (mut sent, mut peak) = (0usize, before);
    let until = Instant::now() + Duration::from_secs(20);
    // 200 MB without a CRLF, until netceil stops taking it.
    while sent < 200 << 20 && Instant::now() < until {
        match s.write(&chunk) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
        if sent % (4 << 20) < chunk.len() {
            peak = peak.max(proc_status(pid, "VmRSS"));
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    peak = peak.max(proc_status(pid, "VmRSS"));
    drop(s);
    eprintln!(
        "header line: {} MB taken before netceil ended it; VmRSS {before} kB before, {peak} kB at most",
        sent >> 20
    );
    assert!(
        sent < 32 << 20,
        "{} MB of one header line were taken",
        sent >> 20
    );
    assert!(
        peak < before + 16 * 1024,
        "VmRSS grew from {before} kB to {peak} kB"
    );
    timed_scrape(addr);
}

#[test]
fn a_thousand_idle_connections_cost_no_threads_and_are_closed() {
    raise_fd_limit(4096);
    let (child, addr, _log) = watch_with_metrics();
    let pid = child.0.id();
    let threads = proc_status(pid, "Threads");
    let mut idle = Vec::new();
    for _ in 0..1000 {
        if let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
            idle.push(s);
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let during = proc_status(pid, "Threads");
    let took = timed_scrape(addr);
    eprintln!(
        "{} idle connections: {threads} threads before, {during} during; a scrape took {took:?}",
        idle.len()
    );
    assert!(idle.len() >= 900, "only {} connections", idle.len());
    assert!(during <= threads + 4, "{threads} threads became {during}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    // Each is closed, at the latest once the idle timeout has passed.
    let started = Instant::now();
    for s in &idle {
        s.set_nonblocking(true).unwrap();
    }
    let mut open = idle;
    while !open.is_empty() && started.elapsed() < Duration::from_secs(12) {
        open.retain(|mut s| {
            let mut b = [0u8; 64];
            matches!(s.read(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
        });
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!(
        "{} still open {:?} after the scrape",
        open.len(),
        started.elapsed()
    );
    assert!(
        open.is_empty(),
        "{} idle connections still open after {:?}",
        open.len(),
        started.elapsed()
    );
}
