//! Real-world captures end to end: `netceil analyze` on logs that collection tools wrapped
//! (line prefixes, `watch` banners, terminal escapes) and on Erlang's typed and recon
//! outputs. Each must import under the right format, keep its figures, and reach a verdict.

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::Value;

fn fixture(rel: &str) -> String {
    format!(
        "{}/../netceil-import/tests/fixtures/{rel}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn netceil() -> Command {
    let mut c = Command::cargo_bin("netceil").expect("binary built");
    c.timeout(std::time::Duration::from_secs(60));
    c
}

fn analyze(rel: &str, extra: &[&str]) -> Value {
    let out = netceil()
        .args(["analyze", "--no-store", "--json"])
        .args(extra)
        .arg(fixture(rel))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{rel}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut list: Vec<Value> = serde_json::from_slice(&out.stdout).expect("a JSON array");
    assert_eq!(list.len(), 1, "{rel}: one run per file");
    list.remove(0)
}

fn format_of(run: &Value) -> &str {
    assert_eq!(run["source"]["type"], "imported");
    run["source"]["format"]
        .as_str()
        .unwrap_or_else(|| panic!("no imported format in {}", run["source"]))
}

fn has_metric(run: &Value, name: &str) -> bool {
    run["series"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["name"] == name)
}

fn first_cause(run: &Value) -> String {
    run["findings"][0]["cause"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn prefixed_vmstat_is_vmstat_not_sar() {
    let run = analyze("vmstat/linux-ts-clock-prefix.txt", &[]);
    assert_eq!(format_of(&run), "vmstat-linux");
    assert!(has_metric(&run, "cs_per_s") && has_metric(&run, "cpu_system_pct"));
    assert!(!first_cause(&run).is_empty());
    let run = analyze("vmstat/freebsd-ts-prefix.txt", &[]);
    assert_eq!(format_of(&run), "vmstat-freebsd");
}

#[test]
fn watch_screens_import_as_proc_rates() {
    let run = analyze("proc/watch-softirqs-3-screens.txt", &[]);
    assert_eq!(format_of(&run), "proc");
    assert!(has_metric(&run, "softirq_net_rx_per_s"));
    assert_eq!(run["series"]["interval_s"].as_f64(), Some(1.0));
}

#[test]
fn a_recording_of_watch_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("typescript");
    std::fs::write(
        &rec,
        "\u{1b}[?1049h\u{1b}[H\u{1b}[2JEvery 1.0s: cat /proc/softirqs\u{1b}[1;93Hvm: Tue Nov 24 05:56:55 2026\u{1b}[3;21HCPU0\u{1b}[32GCPU1\n",
    )
    .unwrap();
    netceil()
        .args(["analyze", "--no-store", rec.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(contains("full-screen program"))
        .stderr(contains("while sleep 1"));
}

#[test]
fn erlang_typed_samples_and_recon_node_stats() {
    let run = analyze("erlang/scheduler-sample-all.txt", &["--interval", "1s"]);
    assert_eq!(format_of(&run), "erlang-wall-time");
    assert!(has_metric(&run, "erlang_scheduler_util_pct"));
    let run = analyze("erlang/recon-node-stats-print.txt", &[]);
    assert_eq!(format_of(&run), "recon-node-stats");
    for m in [
        "erlang_run_queue",
        "erlang_io_out_bytes_per_s",
        "erlang_scheduler_util_pct",
    ] {
        assert!(has_metric(&run, m), "{m}");
    }
    let run = analyze("erlang/recon-node-stats-list-elixir.txt", &[]);
    assert_eq!(format_of(&run), "recon-node-stats");
}

#[test]
fn an_impossible_capture_imports_marked_and_analyze_says_so() {
    // Two mpstat runs writing into one file: CPU rows come twice inside one block.
    let path = fixture("implausible/mpstat-P-ALL-interleaved.txt");
    let out = netceil()
        .args(["analyze", "--no-store", "--json", &path])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 6: cannot be true: CPU all appears again at line 6"),
        "{stderr}"
    );
    let run: Value = serde_json::from_slice::<Value>(&out.stdout).expect("JSON")[0].clone();
    assert_eq!(format_of(&run), "mpstat");
    let found = run["meta"]["implausible"].as_array().expect("implausible");
    assert_eq!(found[0]["line"], 6);
    assert!(found[0]["what"]
        .as_str()
        .unwrap()
        .contains("inside the block that began at line 5"));
    // A real capture has nothing there.
    let run = analyze("sysstat/mpstat-P-ALL-24h.txt", &[]);
    assert!(run["meta"].get("implausible").is_none());
}
