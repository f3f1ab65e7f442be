//! End-to-end: the netceil binary on loopback.

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::Value;

fn netceil() -> Command {
    Command::cargo_bin("netceil").expect("binary built")
}

fn run_json(args: &[&str]) -> Value {
    let out = netceil()
        .args(args)
        .args(["--json", "-q", "--no-store"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "netceil {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document on stdout")
}

#[test]
fn udp_json_contract_and_accounting() {
    let v = run_json(&[
        "run",
        "udp",
        "--size",
        "64",
        "--rate",
        "20k",
        "--duration",
        "1",
    ]);
    assert!(v["run_id"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(v["workload"]["kind"], "udp");
    let r = &v["results"];
    for field in [
        "duration_s",
        "tx_packets",
        "tx_bytes",
        "tx_pps",
        "requested_pps",
        "rx_app_packets",
        "rx_app_bytes",
        "rx_app_pps",
        "rx_app_bits_per_s",
        "rx_kernel_packets",
        "lost_packets",
        "reordered_packets",
        "duplicate_packets",
        "unexplained_packets",
        "generator_limited",
    ] {
        assert!(r.get(field).is_some(), "results.{field} missing in {r}");
    }
    assert_eq!(r["requested_pps"], 20000.0);
    assert_eq!(r["payload_bytes"], 64);
    assert_eq!(r["frame_bytes"], 110);
    let tx = r["tx_packets"].as_u64().unwrap();
    assert!(
        (19_000..=20_100).contains(&tx),
        "sent {tx} at 20 kpps for 1 s"
    );
    assert_eq!(
        r["rx_app_packets"].as_u64().unwrap() + r["lost_packets"].as_u64().unwrap(),
        tx
    );
    assert_eq!(r["unexplained_packets"], 0);
}

#[test]
fn frame_size_sets_payload() {
    let v = run_json(&[
        "run",
        "udp",
        "--frame-size",
        "64",
        "--count",
        "1000",
        "--rate",
        "50k",
    ]);
    assert_eq!(v["results"]["payload_bytes"], 18);
    assert_eq!(v["results"]["frame_bytes"], 64);
    assert_eq!(v["results"]["tx_packets"], 1000);
}

#[test]
fn tcp_and_rr_paths_work() {
    let v = run_json(&["run", "tcp", "--duration", "1"]);
    assert_eq!(v["workload"]["kind"], "tcp");
    assert!(v["results"]["rx_app_bits_per_s"].as_f64().unwrap() > 1e6);
    assert_eq!(v["results"]["flows"].as_array().unwrap().len(), 1);
    assert!(v["results"]["flows"][0].get("retransmits").is_some());
    // iperf3's -C: the senders' congestion control, set, read back and kept with the run.
    let v = run_json(&["run", "tcp", "-C", "reno", "--duration", "1"]);
    assert_eq!(v["workload"]["congestion"], "reno", "{}", v["workload"]);
    assert!(
        v["results"]["notes"]
            .to_string()
            .contains("congestion control reno"),
        "{}",
        v["results"]["notes"]
    );

    for proto in ["tcp", "udp"] {
        let v = run_json(&["run", "rr", "--proto", proto, "--duration", "1"]);
        let l = &v["results"]["latency_us"];
        let p = |k: &str| {
            l[k].as_f64()
                .unwrap_or_else(|| panic!("latency_us.{k} in {l}"))
        };
        assert!(p("p50") > 0.0 && p("p50") <= p("p90") && p("p90") <= p("p99"));
        assert!(p("p99") <= p("p999") && p("p999") <= p("max"));
    }
}

#[test]
fn bad_input_exits_2_with_a_message() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "udp", "--rate", "0"], "--rate"),
        (&["run", "udp", "--rate", "-5k"], "--rate"),
        (&["run", "udp", "--rate", "fast"], "--rate"),
        (&["run", "udp", "--size", "70000"], "--size"),
        (&["run", "udp", "--size", "4"], "--size"),
        (&["run", "udp", "--frame-size", "40"], "--frame-size"),
        (
            &["run", "udp", "--size", "64", "--frame-size", "128"],
            "cannot be used with",
        ),
        (
            &["run", "udp", "--rate", "1k", "--interval", "5us"],
            "cannot be used with",
        ),
        (&["run", "udp", "--flows", "0"], "--flows"),
        (&["run", "tcp", "--rate-per-flow", "0"], "--rate-per-flow"),
        (&["run", "udp", "--to", "not-an-address"], "--to"),
        (&["serve", "--listen", "192.0.2.1:9"], "--key-file"),
        (
            &["serve", "--key-file", "/nonexistent/key"],
            "/nonexistent/key",
        ),
        (&["run", "udp", "--duration", "0"], "--duration"),
        (
            &[
                "run",
                "tcp",
                "--congestion",
                "no-such-algo",
                "--duration",
                "1",
            ],
            "tcp_available_congestion_control",
        ),
    ];
    for (args, needle) in cases {
        netceil()
            .args(*args)
            .timeout(std::time::Duration::from_secs(10))
            .assert()
            .code(2)
            .stderr(contains(*needle));
    }
}

#[test]
fn sender_to_serve_learns_the_far_side() {
    // A free port: bind, read it, release (the server binds it again at once).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    // The old name still works, with a deprecation note.
    let serve = std::process::Command::new(assert_cmd::cargo::cargo_bin("netceil"))
        .args(["recv", "--listen", &addr, "--duration", "6", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let v = run_json(&[
        "run",
        "udp",
        "--to",
        &addr,
        "--rate",
        "10k",
        "--duration",
        "1",
    ]);
    let r = &v["results"];
    let tx = r["tx_packets"].as_u64().unwrap();
    assert!(tx > 9_000, "sent {tx}");
    // The receiver's own count came back in its end-of-flow report.
    assert_eq!(
        r["rx_app_packets"].as_u64().unwrap() + r["lost_packets"].as_u64().unwrap(),
        tx,
        "{r}"
    );
    // And the far end's report over the control connection: the same count, its CPU per
    // core, its kernel deltas and its series.
    let far = &r["far"];
    assert_eq!(far["app"]["udp_packets"], r["rx_app_packets"], "{far:#}");
    assert_eq!(far["ended_by"], "client done");
    assert!(!far["cpu"].as_array().unwrap().is_empty());
    assert!(
        far["kernel"]["udp_in_datagrams"].as_u64().unwrap()
            >= tx - r["lost_packets"].as_u64().unwrap()
    );
    assert!(!far["series"]["t_s"].as_array().unwrap().is_empty());
    let out = serve.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("deprecated"));
    let served: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(served["tests_completed"], 1, "{served:#}");
    assert_eq!(served["test_strays"], 0);
}

#[test]
fn analyze_explains_an_unknown_format_and_reads_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, "hello world\nthis is not a log\n").unwrap();
    netceil()
        .args(["analyze", "--no-store", junk.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(contains("format not recognised"))
        .stderr(contains("not vmstat-linux"));
    let sk0 = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/seeds/freebsd-vmstat-sk0.txt"
    ))
    .unwrap();
    let out = netceil()
        .args([
            "analyze",
            "--no-store",
            "--json",
            "--throughput",
            "18MB/s",
            "-",
        ])
        .write_stdin(sk0)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // One shape for any count of inputs: an array, here of one run.
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
    let run = &list[0];
    assert_eq!(
        run["findings"][0]["cause"], "interrupt_bound",
        "{}",
        run["findings"]
    );
}

/// `--gso`, `--gro` and both on loopback at a modest paced rate: every datagram counted (sent =
/// received, nothing lost), the run records the flags, and the notes say what they change.
#[test]
fn gso_and_gro_count_every_datagram_and_are_recorded() {
    for (flags, gso, gro) in [
        (&["--gso"][..], true, false),
        (&["--gro"][..], false, true),
        (&["--gso", "--gro"][..], true, true),
    ] {
        let mut args = vec![
            "run",
            "udp",
            "--size",
            "1400",
            "--rate",
            "20k",
            "--burst",
            "16",
            "--duration",
            "1s",
            "--rcvbuf",
            "4M",
        ];
        args.extend_from_slice(flags);
        let v = run_json(&args);
        let r = &v["results"];
        let tx = r["tx_packets"].as_u64().unwrap();
        assert!(tx > 15_000, "{flags:?}: sent {tx}");
        assert_eq!(r["rx_app_packets"].as_u64(), Some(tx), "{flags:?}: {r}");
        assert_eq!(r["lost_packets"], 0, "{flags:?}");
        assert_eq!(r["unexplained_packets"], 0, "{flags:?}");
        assert_eq!(v["workload"]["gso"], gso, "{flags:?}: {}", v["workload"]);
        assert_eq!(v["workload"]["gro"], gro, "{flags:?}: {}", v["workload"]);
        let notes = r["notes"].to_string();
        assert_eq!(
            notes.contains("GSO CHANGES WHAT IS MEASURED"),
            gso,
            "{notes}"
        );
        assert_eq!(notes.contains("GRO"), gro, "{notes}");
        if gso && gro {
            assert!(notes.contains("GRO CHANGES WHAT IS MEASURED"), "{notes}");
        }
    }
}
