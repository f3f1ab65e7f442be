//! `netceil show RUN --format iperf`: a stored run in iperf3's short per-interval lines, from
//! the same renderer `netceil run --format iperf` ends with (tests/fixtures/runs at the
//! workspace's root, runs made on loopback, stored here as they are).

use assert_cmd::Command;
use netceil_model::Run;
use std::path::Path;

fn fixture(name: &str) -> Run {
    let path = format!(
        "{}/../../tests/fixtures/runs/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn show(db: &Path, args: &[&str]) -> String {
    let out = Command::cargo_bin("netceil")
        .expect("binary built")
        .env("NETCEIL_DB", db)
        .env("COLUMNS", "120")
        .timeout(std::time::Duration::from_secs(60))
        .arg("show")
        .args(args)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn show_format_iperf_prints_the_stored_runs_interval_lines() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let store = netceil_store::Store::open(&db).unwrap();
    for name in ["udp", "tcp"] {
        let run = fixture(name);
        store.put_run(&run).unwrap();
        let text = show(&db, &[&run.run_id, "--format", "iperf"]);
        // The live path's renderer, on the run as stored: the same lines.
        assert_eq!(text, netceil_report::iperf(&run), "{name}");
        let intervals = text
            .lines()
            .filter(|l| {
                l.starts_with("[  1]") && !l.ends_with("sender") && !l.ends_with("receiver")
            })
            .count();
        assert_eq!(intervals, run.series.len(), "{name}: one line per interval");
        insta::assert_snapshot!(format!("show_iperf_{name}"), text);
    }
    // The default is the screen, not these lines.
    let run = fixture("udp");
    assert!(!show(&db, &[&run.run_id]).contains("Lost/Total Datagrams"));
}
