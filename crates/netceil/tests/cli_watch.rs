//! End-to-end: `netceil watch` around commands.

use assert_cmd::Command;
use serde_json::Value;
use std::time::Duration;

fn netceil() -> Command {
    let mut c = Command::cargo_bin("netceil").expect("binary built");
    // Keep these runs out of the user's store.
    c.env("NETCEIL_DB", "/nonexistent-netceil-test/runs.db");
    c.timeout(Duration::from_secs(30));
    c
}

#[test]
fn watch_sleep_records_two_intervals_and_exits_0() {
    let out = netceil()
        .args(["watch", "--json", "-q", "--no-store", "--", "sleep", "2"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = run["series"]["t_s"].as_array().unwrap();
    assert_eq!(
        rows.len(),
        2,
        "two 1 s intervals in a 2 s command: {rows:?}"
    );
    assert_eq!(run["source"]["type"], "watched");
    assert_eq!(run["source"]["command"], serde_json::json!(["sleep", "2"]));
    // The machine-wide CPU figures were measured in both rows, and are percentages.
    let metrics = run["series"]["metrics"].as_array().unwrap();
    let busy = metrics
        .iter()
        .find(|m| m["name"] == "cpu_busy_pct" && m.get("labels").is_none())
        .expect("cpu_busy_pct recorded");
    for v in busy["values"].as_array().unwrap() {
        let v = v.as_f64().expect("measured, not missing");
        assert!((0.0..=100.0).contains(&v), "{v}");
    }
    assert!(
        run["meta"]["sampler_cpu_s"].as_f64().is_some(),
        "the sampler's own cost is recorded"
    );
}

#[test]
fn watch_false_exits_1() {
    netceil()
        .args(["watch", "-q", "--no-store", "--", "false"])
        .assert()
        .code(1);
}

#[test]
fn watch_keeps_the_commands_output() {
    let out = netceil()
        .args([
            "watch",
            "--json",
            "-q",
            "--no-store",
            "--",
            "sh",
            "-c",
            "echo hello-from-child; exit 3",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = run["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("hello-from-child")),
        "{notes:?}"
    );
}

#[test]
fn watch_duration_prints_a_table() {
    let out = netceil()
        .args([
            "watch",
            "--no-store",
            "--duration",
            "2",
            "--interval",
            "500ms",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let header = text.lines().next().unwrap();
    for col in [
        "time", "in/s", "cs/s", "NET_RX/s", "us", "sy", "si", "id", "hot cpu",
    ] {
        assert!(
            header.split_whitespace().any(|h| h == col) || header.contains(col),
            "{col} in {header}"
        );
    }
    let rows = text
        .lines()
        .filter(|l| {
            // A row starts with its time ("1.5s"), unlike the summary's lines.
            l.split_whitespace().next().is_some_and(|t| {
                t.strip_suffix('s')
                    .is_some_and(|n| n.parse::<f64>().is_ok())
            })
        })
        .count();
    assert!(
        (3..=5).contains(&rows),
        "about 4 rows of 500 ms in 2 s: {text}"
    );
}

#[test]
fn watch_rejects_a_bad_command_and_interval() {
    netceil()
        .args(["watch", "--no-store", "--", "/nonexistent/cmd"])
        .assert()
        .code(2);
    netceil()
        .args([
            "watch",
            "--no-store",
            "--interval",
            "1ms",
            "--duration",
            "1",
        ])
        .assert()
        .code(2);
}

#[test]
fn watch_at_10ms_ends_with_its_command_and_stores_every_row() {
    // Below 250 ms, rows reach the main thread and the store in batches: the command's exit
    // must still end the watch, and every row must reach the store.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let out = netceil()
        .env("NETCEIL_DB", &db)
        .args([
            "watch",
            "--json",
            "-q",
            "--interval",
            "10ms",
            "--",
            "sleep",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = run["series"]["t_s"].as_array().unwrap().len();
    // 100 intervals of 10 ms; a busy machine may skip some, and start-up takes a little.
    assert!(
        (40..=110).contains(&rows),
        "{rows} rows of 10 ms in a 1 s command"
    );
    let stored = netceil()
        .env("NETCEIL_DB", &db)
        .args(["show", "last", "--json"])
        .output()
        .unwrap();
    let stored: Value = serde_json::from_slice(&stored.stdout).unwrap();
    assert_eq!(stored["meta"]["complete"], true);
    assert_eq!(stored["series"]["t_s"].as_array().unwrap().len(), rows);
    assert_eq!(stored["series"]["metrics"], run["series"]["metrics"]);
}

/// The command outlives --duration: netceil stops it by its pid and exits 124, saying so.
#[test]
fn duration_ending_first_stops_the_command_and_exits_124() {
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let out = Command::cargo_bin("netceil")
        .unwrap()
        .env("NETCEIL_DB", dir.path().join("runs.db"))
        .args([
            "watch",
            "--duration",
            "1",
            "--interval",
            "200ms",
            "--json",
            "-q",
        ])
        .args(["--", "sleep", "30"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(124), "{out:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("still running when --duration ended"),
        "{notes}"
    );
}

/// The command ends well before --duration: its own exit code, whatever the duration.
#[test]
fn a_command_ending_first_gives_its_own_code() {
    let dir = tempfile::tempdir().unwrap();
    for (cmd, code) in [("exit 0", 0), ("exit 3", 3)] {
        let out = Command::cargo_bin("netceil")
            .unwrap()
            .env("NETCEIL_DB", dir.path().join("runs.db"))
            .args(["watch", "--duration", "5", "--interval", "100ms", "-q"])
            .args(["--", "sh", "-c", &format!("sleep 0.3; {cmd}")])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{out:?}");
    }
}
