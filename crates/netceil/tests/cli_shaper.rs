//! Live, as root: a tbf shaper in a pair of network namespaces that the test makes itself is
//! named as the ceiling of a UDP run across it, and nothing the test made is left behind.
//!
//! Without root (or without `ip`/`tc`) the test says why and passes without running.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_netceil");

fn skip_reason() -> Option<String> {
    netceil_testkit::first([
        netceil_testkit::needs_root("to create network namespaces and qdiscs"),
        netceil_testkit::needs_tool("ip", "-V", "iproute2"),
        netceil_testkit::needs_tool("tc", "-V", "iproute2"),
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

/// Two namespaces joined by a veth pair; deleted (with everything in them) on drop, which
/// also runs when an assertion fails.
struct Pair {
    a: String,
    b: String,
    receiver: Option<Child>,
}

impl Pair {
    fn new() -> Pair {
        // Tests run in parallel threads of one process: each pair gets its own names. The
        // veth ends live only inside the pair's namespaces, so their names never clash.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let tag = format!("netceil-test-{}-{n}", std::process::id());
        let pair = Pair {
            a: format!("{tag}-a"),
            b: format!("{tag}-b"),
            receiver: None,
        };
        sh(&["ip", "netns", "add", &pair.a]);
        sh(&["ip", "netns", "add", &pair.b]);
        let (va, vb) = ("nctest0", "nctest1");
        sh(&[
            "ip", "link", "add", va, "netns", &pair.a, "type", "veth", "peer", "name", vb, "netns",
            &pair.b,
        ]);
        for (ns, dev, addr) in [
            (&pair.a, va, "198.18.0.1/30"),
            (&pair.b, vb, "198.18.0.2/30"),
        ] {
            sh(&["ip", "-n", ns, "addr", "add", addr, "dev", dev]);
            sh(&["ip", "-n", ns, "link", "set", dev, "up"]);
            sh(&["ip", "-n", ns, "link", "set", "lo", "up"]);
        }
        pair
    }

    fn exec(&self, ns: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns]);
        c
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        if let Some(mut r) = self.receiver.take() {
            let _ = r.kill();
            let _ = r.wait();
        }
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
    }
}

fn leftovers(tag: &str) -> String {
    let out = Command::new("ip")
        .args(["-all", "netns", "list"])
        .output()
        .expect("ip runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(tag))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_tbf_shaper_between_two_namespaces_is_named_as_the_ceiling() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    let tag;
    let run: Value = {
        let mut pair = Pair::new();
        tag = format!("{}-", pair.a.trim_end_matches("-a"));
        sh(&[
            "ip", "netns", "exec", &pair.a, "tc", "qdisc", "add", "dev", "nctest0", "root", "tbf",
            "rate", "40mbit", "burst", "32kb", "latency", "50ms",
        ]);
        // Not loopback: the two ends share a key.
        let key = std::env::temp_dir().join(format!("netceil-shaper-key-{}", std::process::id()));
        std::fs::write(&key, "shaper-test-secret-0123456789").unwrap();
        let key = key.to_str().unwrap().to_string();
        let receiver = pair
            .exec(&pair.b)
            .args([
                BIN,
                "serve",
                "--listen",
                "198.18.0.2:9000",
                "--key-file",
                &key,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("receiver starts");
        pair.receiver = Some(receiver);
        std::thread::sleep(Duration::from_millis(300));
        let out = pair
            .exec(&pair.a)
            .args([
                BIN,
                "run",
                "udp",
                "--to",
                "198.18.0.2:9000",
                "--key-file",
                &key,
                "--size",
                "1400",
                "--duration",
                "4",
                "--sample-interval",
                "500ms",
                "--json",
                "-q",
                "--no-store",
            ])
            .output()
            .expect("sender runs");
        let _ = std::fs::remove_file(&key);
        assert!(
            out.status.success(),
            "sender failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    assert_eq!(leftovers(&tag), "", "namespaces left behind");

    // Both ends counted: the receiver's interface and counters came back in its FinReport.
    let k = &run["results"]["kernel"];
    assert_eq!(k["iface"], "nctest1", "{k:#}");
    let iface_rx = k["iface_rx_packets"]
        .as_u64()
        .expect("far-end interface count");
    let rx = run["results"]["rx_app_packets"].as_u64().unwrap();
    // serve reads the baseline before it grants the run, so every datagram of the run is in
    // the interface's count; the interface also carries a little other traffic (ARP, IPv6
    // neighbour discovery).
    assert!(
        iface_rx >= rx && iface_rx <= rx + 200,
        "interface {iface_rx} vs received {rx}"
    );
    assert_eq!(k["udp_rcvbuf_errors"], 0, "{k:#}");
    let top = &run["findings"][0];
    let not_checked: Vec<&str> = top["not_checked"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    // The far end (a netceil serve) reported its CPU per core and its series, so nothing
    // about it is left unchecked.
    assert!(
        !not_checked.iter().any(|n| n.starts_with("the far end")),
        "{not_checked:?}"
    );
    let far = &run["results"]["far"];
    assert!(!far["cpu"].as_array().unwrap().is_empty(), "{far:#}");
    assert_eq!(far["kernel"]["iface"], "nctest1", "{far:#}");
    assert_eq!(top["cause"], "shaper", "findings: {:#}", run["findings"]);
    let summary = top["summary"].as_str().unwrap();
    assert!(summary.contains("tbf qdisc"), "{summary}");
    assert!(summary.contains("on nctest0"), "{summary}");
    assert!(summary.contains("configured 40.0 Mbit/s"), "{summary}");
    // The run got what the shaper let through: 40 Mbit/s of frames, less of UDP payload.
    let tx = run["results"]["tx_bits_per_s"].as_f64().unwrap();
    assert!((30e6..42e6).contains(&tx), "tx {tx}");
    // No link was claimed from the veth's nominal 10 Gbit/s.
    let causes: Vec<&str> = run["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["cause"].as_str())
        .collect();
    assert!(
        !causes.contains(&"link_headroom") && !causes.contains(&"link_limit"),
        "{causes:?}"
    );
}

#[test]
fn sizes_above_the_path_mtu_are_refused_before_any_traffic() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    let pair = Pair::new();
    // veth's default MTU is 1500: 1472 bytes of UDP payload fit, 4 KiB does not.
    let out = pair
        .exec(&pair.a)
        .args([
            BIN,
            "sweep",
            "udp",
            "--to",
            "198.18.0.2:5201",
            "--sizes",
            "1K,4K",
            "--interval",
            "0us..10us/10us",
            "--no-store",
            "-q",
        ])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--sizes 4096") && err.contains("path MTU") && err.contains("1472"),
        "{err}"
    );
    assert!(err.contains("nctest0"), "names the interface: {err}");
    // The search counts frames: 1518 B fits a 1500-byte MTU, 1519 B does not.
    let out = pair
        .exec(&pair.a)
        .args([
            BIN,
            "search",
            "udp",
            "--to",
            "198.18.0.2:5201",
            "--sizes",
            "64,1519",
            "--no-store",
            "-q",
        ])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--frame-sizes 1519"), "{err}");
    let tag = format!("{}-", pair.a.trim_end_matches("-a"));
    drop(pair);
    assert_eq!(leftovers(&tag), "", "namespaces left behind");
}
