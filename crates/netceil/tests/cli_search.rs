//! `netceil search udp`: bad input is refused before any traffic (exit 2, naming the option),
//! and a small real search on loopback reports its knees in the JSON contract.

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::Value;

// The live tests load the machine: one at a time.
// (netceil_testkit::machine_lock, across test processes too.)

fn netceil() -> Command {
    let mut c = Command::cargo_bin("netceil").expect("binary built");
    c.timeout(std::time::Duration::from_secs(120));
    c
}

#[test]
fn bad_input_exits_2_and_names_the_option() {
    for (args, says) in [
        (vec!["--loss", "150%"], "not below 100 %"),
        (vec!["--loss", "0.5"], "as a percentage"),
        (vec!["--precision", "0%"], "--precision"),
        (vec!["--precision", "abc"], "--precision"),
        (vec!["--min-rate", "1M", "--max-rate", "10k"], "empty"),
        (vec!["--max-rate", "1Gbit"], "give packets/s"),
        (vec!["--frame-sizes", "40"], "--frame-sizes 40"),
        (vec!["--sizes", "40"], "--frame-sizes 40"),
        (vec!["--trial", "100ms", "--initial-trial", "1s"], "--trial"),
    ] {
        netceil()
            .args(["search", "udp", "--no-store", "-q"])
            .args(&args)
            .assert()
            .code(2)
            .stderr(contains(says));
    }
}

#[test]
fn a_small_search_on_loopback_reports_its_knees() {
    let _one = netceil_testkit::machine_lock();
    let out = netceil()
        .args([
            "search",
            "udp",
            "--sizes",
            "1024",
            "--loss",
            "0,5%",
            "--trial",
            "400ms",
            "--initial-trial",
            "200ms",
            "--precision",
            "20%",
            "--min-rate",
            "1k",
            "--max-rate",
            "40k",
            "--max-trials",
            "14",
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
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["workload"]["kind"], "search");
    let knees = run["knees"].as_array().expect("knees[]");
    assert_eq!(knees.len(), 2, "one per tolerance");
    for k in knees {
        assert_eq!(k["size_bytes"], 1024);
        assert_eq!(k["point"], "app");
        let trials = k["trials"].as_u64().unwrap();
        assert!((1..=14).contains(&trials), "{k:#}");
        if let Some(rate) = k["rate_pps"].as_f64() {
            assert!(rate > 0.0 && rate <= 40_000.0 * 1.01, "{k:#}");
            let bits = k["bits_per_s"].as_f64().unwrap();
            assert!((bits - rate * 1024.0 * 8.0).abs() < 1.0, "{k:#}");
        }
    }
    // Each trial is a part with its own results and findings.
    let parts = run["parts"].as_array().expect("parts");
    assert!(!parts.is_empty() && parts.len() <= 14);
    assert!(parts
        .iter()
        .all(|p| p["results"]["tx_packets"].as_u64().unwrap_or(0) > 0));
    assert!(parts
        .iter()
        .all(|p| p["findings"].as_array().is_some_and(|f| !f.is_empty())));
}

#[test]
fn sweep_bad_ranges_exit_2() {
    for (range, says) in [
        ("5us..1us/1us", "empty"),
        ("0us..1us/2us", "larger than the range"),
        ("0us..1us", "START..END/STEP"),
    ] {
        netceil()
            .args(["sweep", "udp", "--no-store", "-q", "--interval", range])
            .assert()
            .code(2)
            .stderr(contains(says));
    }
    netceil()
        .args(["sweep", "tcp", "--no-store", "-q", "--flows", "1,0"])
        .assert()
        .code(2)
        .stderr(contains("--flows"));
    netceil()
        .args(["sweep", "tcp", "--no-store", "-q", "--rate-per-flow", "10k"])
        .assert()
        .code(2)
        .stderr(contains("--rate-per-flow"));
}

#[test]
fn a_small_sweep_on_loopback_finds_a_knee_at_both_points() {
    let _one = netceil_testkit::machine_lock();
    let out = netceil()
        .args([
            "sweep",
            "udp",
            "--sizes",
            "1K,8K",
            "--interval",
            "0us..100us/10us",
            "--count",
            "2000",
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
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let knees = run["knees"].as_array().expect("knees[]");
    assert_eq!(knees.len(), 4, "two sizes × two points");
    for k in knees {
        let point = k["point"].as_str().unwrap();
        assert!(point == "kernel" || point == "app", "{k:#}");
        // 100 us between 8 KiB datagrams is 0.66 Gbit/s: loopback's kernel takes all of it.
        // The receiving program may not, on a shared machine whose other work keeps it off
        // its core for the 2.5 ms the default buffer lasts at 100 µs gaps: then the app point
        // has no knee, and the run must say why instead of inventing one.
        let Some(interval) = k["min_interval_us"].as_f64() else {
            assert_eq!(
                point, "app",
                "the kernel point has a knee within 100 us: {k:#}"
            );
            assert!(
                k["note"]
                    .as_str()
                    .is_some_and(|n| n.contains("no interval reached")),
                "{k:#}"
            );
            assert!(
                k["rate_pps"].is_null() && k["bits_per_s"].is_null(),
                "{k:#}"
            );
            continue;
        };
        assert!((0.0..=100.0).contains(&interval), "{k:#}");
        let bits = k["bits_per_s"].as_f64().unwrap();
        let size = k["size_bytes"].as_f64().unwrap();
        if interval > 0.0 {
            // Throughput is data per cycle over the cycle time: at most the asked gap's.
            assert!(bits <= size * 8.0 / (interval * 1e-6) * 1.01, "{k:#}");
        }
    }
}

/// The stored runs' `export last` as JSON, once the store has one.
fn export_last(db: &std::path::Path) -> Option<Value> {
    let out = netceil()
        .env("NETCEIL_DB", db)
        .args(["export", "last", "--format", "json"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).ok())
        .flatten()
}

/// Starts `netceil ARGS` against `db`, waits until its run has `parts` stored, and kills it
/// with SIGKILL by the PID it was started with; returns the run as stored.
fn kill_after_parts(db: &std::path::Path, args: &[&str], parts: usize) -> Value {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("netceil"))
        .env("NETCEIL_DB", db)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("netceil starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let n = export_last(db)
            .and_then(|r| r["parts"].as_array().map(Vec::len))
            .unwrap_or(0);
        if n >= parts {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "fewer than {parts} parts stored in 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let stored = export_last(db).expect("the killed run is readable");
    assert_eq!(stored["meta"]["complete"], false, "killed before it ended");
    stored
}

#[test]
fn a_sweep_killed_mid_way_resumes_without_losing_a_stored_cell() {
    let _one = netceil_testkit::machine_lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    // 10 000 packets 50 us apart: half a second per cycle, 6 cycles at least.
    let stored = kill_after_parts(
        &db,
        &[
            "sweep",
            "udp",
            "--sizes",
            "1K,2K,4K",
            "--interval",
            "50us..60us/10us",
            "--count",
            "10000",
            "--cycles",
            "2",
            "-q",
        ],
        2,
    );
    let key = |p: &Value| {
        let w = &p["workload"];
        (
            w["payload_bytes"].as_u64().unwrap(),
            w["interval_ns"].as_f64().unwrap() as u64,
            w["cycle"].as_u64().unwrap(),
            p["results"]["tx_packets"].as_u64().unwrap(),
            p["results"]["rx_app_packets"].as_u64().unwrap(),
        )
    };
    let kept: Vec<_> = stored["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(key)
        .collect();
    assert!(kept.len() >= 2);
    let out = netceil()
        .env("NETCEIL_DB", &db)
        .args(["sweep", "udp", "--resume", "last", "--json", "-q"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["workload"]["kind"], "sweep");
    assert_eq!(run["workload"]["resumed_from"], stored["run_id"]);
    assert_eq!(run["workload"]["cycles"], 2, "the stored settings");
    let now: Vec<_> = run["parts"].as_array().unwrap().iter().map(key).collect();
    assert_eq!(
        now[..kept.len()],
        kept[..],
        "every stored cycle comes back first, as it was"
    );
    assert!(run["notes"].as_array().unwrap().iter().any(|n| n
        .as_str()
        .unwrap_or("")
        .contains(&format!("{} of its cycles were replayed", kept.len()))));
    assert_eq!(run["knees"].as_array().map(Vec::len), Some(6));
    assert_eq!(run["meta"]["complete"], true);
    netceil()
        .env("NETCEIL_DB", &db)
        .args(["sweep", "udp", "--resume", "last", "-q"])
        .assert()
        .code(2)
        .stderr(contains("nothing to resume"));
}

#[test]
fn a_search_killed_mid_way_resumes_without_losing_a_stored_trial() {
    let _one = netceil_testkit::machine_lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let search = [
        "search",
        "udp",
        "--sizes",
        "1024",
        "--loss",
        "0",
        "--trial",
        "1s",
        "--initial-trial",
        "250ms",
        "--precision",
        "5%",
        "--max-rate",
        "40k",
        "--max-trials",
        "20",
        "-q",
    ];
    let stored = kill_after_parts(&db, &search, 3);
    let kept: Vec<u64> = stored["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["results"]["tx_packets"].as_u64().unwrap())
        .collect();
    assert!(kept.len() >= 3);
    // It ran over IPv4: resumed over IPv6 it would mix families, so it is refused.
    netceil()
        .env("NETCEIL_DB", &db)
        .args(["search", "udp", "--resume", "last", "--ipv6", "-q"])
        .assert()
        .code(2)
        .stderr(contains("ran over IPv4; leave out --ipv6"));
    let out = netceil()
        .env("NETCEIL_DB", &db)
        .args(["search", "udp", "--resume", "last", "--json", "-q"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        run["workload"]["resumed_from"], stored["run_id"],
        "{:#}",
        run["workload"]
    );
    let parts = run["parts"].as_array().unwrap();
    assert!(parts.len() >= kept.len());
    for (i, tx) in kept.iter().enumerate() {
        assert_eq!(
            parts[i]["results"]["tx_packets"].as_u64(),
            Some(*tx),
            "stored trial {} was replayed as it was",
            i + 1
        );
    }
    assert!(run["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap_or("").contains("replayed")));
    assert_eq!(run["knees"].as_array().map(Vec::len), Some(1));
    assert_eq!(run["meta"]["complete"], true);
    // A finished search cannot be resumed.
    netceil()
        .env("NETCEIL_DB", &db)
        .args(["search", "udp", "--resume", "last", "-q"])
        .assert()
        .code(2)
        .stderr(contains("nothing to resume"));
}

#[test]
fn a_param_sweep_runs_every_combination_and_refuses_a_bad_flag_first() {
    netceil()
        .args([
            "sweep",
            "param",
            "--param",
            "bogus=1,2",
            "--no-store",
            "-q",
            "--",
            "udp",
        ])
        .assert()
        .code(2)
        .stderr(contains("the step --bogus 1"));
    netceil()
        .args([
            "sweep",
            "param",
            "--param",
            "threads=2",
            "--no-store",
            "-q",
            "--",
            "udp",
        ])
        .assert()
        .code(2)
        .stderr(contains("--threads 2 is more than --flows 1"));
    let _one = netceil_testkit::machine_lock();
    let out = netceil()
        .args([
            "sweep",
            "param",
            "--param",
            "size=64,1024",
            "--param",
            "rate=5k,10k",
            "--json",
            "-q",
            "--no-store",
            "--",
            "udp",
            "--duration",
            "500ms",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let parts = run["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 4, "2 × 2 combinations");
    assert_eq!(parts[1]["meta"]["labels"]["param.size"], "64");
    assert_eq!(parts[1]["meta"]["labels"]["param.rate"], "10k");
    assert_eq!(parts[3]["results"]["payload_bytes"], 1024);
    for p in parts {
        let pps = p["results"]["tx_pps"].as_f64().unwrap();
        assert!(pps > 4_000.0 && pps < 10_500.0, "{pps}");
    }
}

#[test]
fn tcp_and_rr_searches_refuse_bad_bounds_naming_the_flag() {
    for (args, says) in [
        (vec!["rr", "--p99", "abc"], "'abc' is not a duration"),
        (vec!["rr", "--p99", "0us"], "--p99"),
        (vec!["rr"], "--p99"),
        (
            vec!["rr", "--p99", "1ms", "--max-rate", "1Gbit"],
            "give packets/s",
        ),
        (vec!["tcp", "--retrans", "200%"], "not below 100 %"),
        (vec!["tcp", "--retrans", "0.1"], "as a percentage"),
        (vec!["tcp", "--retrans", "abc%"], "not a percentage"),
        (vec!["tcp"], "--retrans"),
        (
            vec!["tcp", "--retrans", "0", "--max-rate", "10k"],
            "not a bit rate",
        ),
        (
            vec![
                "tcp",
                "--retrans",
                "0",
                "--min-rate",
                "1Gbit",
                "--max-rate",
                "10Mbit",
            ],
            "empty",
        ),
        (vec!["tcp", "--retrans", "0", "--flows", "0"], "--flows"),
    ] {
        let out = netceil()
            .arg("search")
            .args(&args)
            .args(["--no-store", "-q"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// The part of `run` named `id`.
fn part<'a>(run: &'a Value, id: &str) -> &'a Value {
    run["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .find(|p| p["run_id"] == id)
        .unwrap_or_else(|| panic!("no part {id}"))
}

/// Runs a short search on loopback and returns its run and its only knee's goal.
fn searched(args: &[&str]) -> (Value, Value) {
    let out = netceil()
        .arg("search")
        .args(args)
        .args([
            "--trial",
            "400ms",
            "--initial-trial",
            "200ms",
            "--precision",
            "25%",
            "--max-trials",
            "8",
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
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["workload"]["kind"], "search");
    let knees = run["knees"].as_array().expect("knees[]");
    assert_eq!(knees.len(), 1, "one per bound: {knees:#?}");
    let goal = knees[0]["goal"].clone();
    assert!((1..=8).contains(&knees[0]["trials"].as_u64().unwrap()));
    (run, goal)
}

/// The answer's rate and the part that verified it, checked to be a trial of `kind`.
fn verifying_part<'a>(run: &'a Value, goal: &Value, kind: &str) -> (f64, &'a Value) {
    let rate = goal["rate"].as_f64().expect("a rate passed");
    let id = goal["verified_by"].as_str().expect("a verifying trial");
    let p = part(run, id);
    assert_eq!(p["workload"]["kind"], kind, "{:#}", p["workload"]);
    (rate, p)
}

#[test]
fn a_short_rr_search_on_loopback_answers_a_rate_its_verifying_trial_passed() {
    let _one = netceil_testkit::machine_lock();
    let (run, goal) = searched(&[
        "rr",
        "--proto",
        "udp",
        "--p99",
        "20ms",
        "--min-rate",
        "200",
        "--max-rate",
        "3k",
    ]);
    assert_eq!(run["workload"]["workload"], "rr", "{:#}", run["workload"]);
    assert_eq!(goal["bound"]["criterion"], "p99", "{goal:#}");
    assert_eq!(goal["unit"], "transactions_per_second");
    // The verifying trial: a full-length trial whose answered rate is the answer, within
    // 1 % of the rate it asked, and whose p99 is under the bound.
    let (rate, p) = verifying_part(&run, &goal, "rr");
    assert_eq!(p["workload"]["duration_s"], 0.4);
    let asked = p["workload"]["rate_tps"].as_f64().unwrap();
    let tps = p["results"]["transactions_per_s"].as_f64().unwrap();
    assert_eq!(tps, rate);
    assert!(tps >= 0.99 * asked, "answered {tps} of {asked} asked");
    let p99_us = p["results"]["latency_us"]["p99"].as_f64().unwrap();
    assert!(p99_us <= 20_000.0, "{p99_us}");
    assert!(goal["seen"].as_f64().unwrap() <= 0.02, "{goal:#}");
}

#[test]
fn a_short_tcp_search_on_loopback_answers_a_goodput_its_verifying_trial_passed() {
    let _one = netceil_testkit::machine_lock();
    let (run, goal) = searched(&[
        "tcp",
        "--retrans",
        "1%",
        "--flows",
        "2",
        "--min-rate",
        "20Mbit",
        "--max-rate",
        "400Mbit",
    ]);
    assert_eq!(run["workload"]["workload"], "tcp", "{:#}", run["workload"]);
    assert_eq!(goal["bound"]["criterion"], "retransmits", "{goal:#}");
    assert_eq!(goal["unit"], "goodput_bits_per_second");
    let (rate, p) = verifying_part(&run, &goal, "tcp");
    assert_eq!(p["workload"]["flows"], 2);
    let asked = p["workload"]["rate_per_flow_bps"].as_f64().unwrap() * 2.0;
    let goodput = p["results"]["rx_app_bits_per_s"].as_f64().unwrap();
    assert_eq!(goodput, rate);
    assert!(
        goodput >= 0.99 * asked,
        "carried {goodput} of {asked} asked"
    );
    let flows = p["results"]["flows"].as_array().unwrap();
    let sum = |k: &str| flows.iter().map(|f| f[k].as_u64().unwrap()).sum::<u64>();
    let (retrans, sent) = (sum("retransmits"), sum("segments_out"));
    assert!(sent > 0 && retrans * 100 <= sent, "{retrans} of {sent}");
}

#[test]
fn an_interrupted_rr_search_resumes_as_one_and_not_as_another_search() {
    let _one = netceil_testkit::machine_lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let search = [
        "search",
        "rr",
        "--proto",
        "udp",
        "--p99",
        "20ms",
        "--trial",
        "1s",
        "--initial-trial",
        "250ms",
        "--precision",
        "10%",
        "--min-rate",
        "200",
        "--max-rate",
        "2k",
        "--max-trials",
        "10",
        "-q",
    ];
    let stored = kill_after_parts(&db, &search, 2);
    let kept = stored["parts"].as_array().unwrap().len();
    netceil()
        .env("NETCEIL_DB", &db)
        .args(["search", "tcp", "--resume", "last", "-q"])
        .assert()
        .code(2)
        .stderr(contains("it is a `search rr`"));
    let out = netceil()
        .env("NETCEIL_DB", &db)
        .args(["search", "rr", "--resume", "last", "--json", "-q"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["workload"]["resumed_from"], stored["run_id"]);
    let parts = run["parts"].as_array().unwrap();
    for (i, old) in stored["parts"].as_array().unwrap().iter().enumerate() {
        assert_eq!(
            parts[i]["results"]["transactions_per_s"],
            old["results"]["transactions_per_s"],
            "stored trial {} of {kept} was replayed as it was",
            i + 1
        );
    }
    assert_eq!(run["meta"]["complete"], true);
    // One answer for the one bound (on a loaded machine it may be that no rate passed).
    assert_eq!(run["knees"].as_array().map(Vec::len), Some(1));
    assert_eq!(run["knees"][0]["goal"]["bound"]["criterion"], "p99");
}
