//! `--stream`: what a run measures, as JSON Lines while it runs.

use assert_cmd::Command;
use serde_json::Value;
use std::time::Duration;

fn netceil(args: &[&str]) -> std::process::Output {
    Command::cargo_bin("netceil")
        .unwrap()
        .args(args)
        .args(["--no-store", "--sample-interval", "500ms"])
        .env_remove("NETCEIL_DB")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap()
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The types in order: begin, progress…, end, close; every line an object with a type.
fn check_order(l: &[Value]) -> usize {
    let types: Vec<&str> = l.iter().map(|v| v["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"begin"), "{types:?}");
    assert_eq!(&types[types.len() - 2..], ["end", "close"], "{types:?}");
    let progress = &types[1..types.len() - 2];
    assert!(progress.iter().all(|t| *t == "progress"), "{types:?}");
    progress.len()
}

#[test]
fn a_run_streams_begin_progress_end_with_a_progress_line_per_interval_row() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stream.jsonl");
    let out = netceil(&[
        "run",
        "udp",
        "--rate",
        "20kpps",
        "--duration",
        "3",
        "--json",
        "-q",
        "--stream",
        file.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let l = lines(&std::fs::read_to_string(&file).unwrap());
    let progress = check_order(&l);
    assert_eq!(l[0]["kind"], "udp");
    assert_eq!(l[0]["planned_s"], 3.0);
    // One progress line per interval row the run stored its load figures in.
    let rows = run["series"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "load_tx_pps")
        .expect("the load's own series")["values"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| !v.is_null())
        .count();
    assert!(progress >= 2, "{progress}");
    assert_eq!(progress, rows);
    for p in &l[1..=progress] {
        assert!(p["elapsed_s"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["load"]["tx_pps"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["machine"].is_object(), "{p}");
    }
}

#[test]
fn the_stream_on_stdout_leaves_only_json_lines_there() {
    let out = netceil(&[
        "run",
        "udp",
        "--rate",
        "10kpps",
        "--duration",
        "2",
        "--stream",
        "-",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let l = lines(&String::from_utf8(out.stdout).unwrap());
    check_order(&l);
    // The table and summary went to stderr.
    assert!(!out.stderr.is_empty());
}

#[test]
fn the_stream_and_the_json_document_cannot_both_have_stdout() {
    let out = netceil(&["run", "udp", "--duration", "1", "--json", "--stream", "-"]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--stream - and --json"), "{e}");
    let out = netceil(&[
        "run",
        "udp",
        "--duration",
        "1",
        "--stream",
        "/nonexistent/dir/s.jsonl",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("/nonexistent/dir/s.jsonl"), "{e}");
}

#[test]
fn a_reader_that_goes_away_ends_the_stream_and_the_run_is_still_kept() {
    use std::io::Read;
    let db = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("netceil"))
        .args([
            "run",
            "udp",
            "--rate",
            "10kpps",
            "--duration",
            "3",
            "-q",
            "--stream",
            "-",
        ])
        .env("NETCEIL_DB", db.path().join("runs.db"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read the first line, then close the pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs = Command::cargo_bin("netceil")
        .unwrap()
        .args(["runs", "--json"])
        .env("NETCEIL_DB", db.path().join("runs.db"))
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    // The user is told once, on stderr, and the stored run's notes say so.
    let said = "--stream - stopped early: its reader went away";
    let err = String::from_utf8_lossy(&out.stderr);
    let told = err
        .lines()
        .filter(|l| l.starts_with(&format!("netceil: {said}")));
    assert_eq!(told.count(), 1, "{err}");
    let shown = Command::cargo_bin("netceil")
        .unwrap()
        .args(["show", "last", "--json"])
        .env("NETCEIL_DB", db.path().join("runs.db"))
        .output()
        .unwrap();
    let run: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert!(
        run["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap_or("").contains(said)),
        "{:#}",
        run["notes"]
    );
}

#[test]
fn a_watch_streams_a_progress_line_per_interval_then_closes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("watch.jsonl");
    let out = Command::cargo_bin("netceil")
        .unwrap()
        .args([
            "watch",
            "--duration",
            "2s",
            "--interval",
            "500ms",
            "--json",
            "--no-store",
        ])
        .args(["--stream", file.to_str().unwrap()])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let l = lines(&std::fs::read_to_string(&file).unwrap());
    let types: Vec<&str> = l.iter().map(|v| v["type"].as_str().unwrap()).collect();
    assert_eq!(types.last(), Some(&"close"), "{types:?}");
    let progress = types.iter().filter(|t| **t == "progress").count();
    assert_eq!(progress, types.len() - 1, "{types:?}");
    assert_eq!(progress, run["series"]["t_s"].as_array().unwrap().len());
}
