//! What a person sees on a terminal or through a pipe: every interval row, short default
//! output, tables cut to the width they are given, and a reader that goes away early.

use assert_cmd::Command;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::Stdio;

fn netceil() -> Command {
    Command::cargo_bin("netceil").expect("binary built")
}

/// The live rows' times (the first column, `2.0s`) of a piped run's stdout.
fn row_times(stdout: &str) -> Vec<f64> {
    stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.strip_suffix('s')?.parse().ok())
        .collect()
}

/// Piped, a 2 s run prints a row for each of its two intervals: the last one, which ends
/// with the load, was once left out (and its load figures were missing from the series).
#[test]
fn piped_run_prints_the_last_interval_row() {
    for workload in [
        &["udp", "--rate", "20k"][..],
        &["tcp", "--rate-per-flow", "200Mbit"][..],
        &["rr", "--rate", "5k"][..],
    ] {
        let out = netceil()
            .arg("run")
            .args(workload)
            .args(["--duration", "2", "--no-store"])
            .output()
            .expect("runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{workload:?}: {text}");
        let times = row_times(&text);
        assert_eq!(times.len(), 2, "{workload:?}: two rows expected:\n{text}");
        assert!(
            times[1] >= 1.9,
            "{workload:?}: the last row is the 2nd second's:\n{text}"
        );
    }
}

fn seed(name: &str) -> String {
    format!(
        "{}/../../tests/fixtures/seeds/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn in_store(db: &Path) -> Command {
    let mut c = netceil();
    c.env("NETCEIL_DB", db)
        .env_remove("COLUMNS")
        .timeout(std::time::Duration::from_secs(60));
    c
}

fn ok_stdout(c: &mut Command) -> String {
    let out = c.output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// A store with two runs imported from the seed investigations, labelled.
fn imported_store() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    for (file, rate, label) in [
        ("freebsd-vmstat-sk0.txt", "18MB/s", "nic=sk0"),
        ("freebsd-vmstat-msk2.txt", "35MB/s", "nic=msk2"),
    ] {
        ok_stdout(in_store(&db).args([
            "analyze",
            &seed(file),
            "--throughput",
            rate,
            "--label",
            label,
            "--label",
            "bench=an-investigation-with-a-long-label-value",
        ]));
    }
    (dir, db)
}

/// `runs` through a pipe: cut to COLUMNS (80 without it), the columns that fit in their
/// order, and every column whole with `--wide`.
#[test]
fn runs_is_cut_to_the_width_it_is_given() {
    let (_dir, db) = imported_store();
    let at = |cols: Option<&str>, wide: bool| {
        let mut c = in_store(&db);
        c.arg("runs");
        if let Some(n) = cols {
            c.env("COLUMNS", n);
        }
        if wide {
            c.arg("--wide");
        }
        ok_stdout(&mut c)
    };
    let widest = |t: &str| t.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let plain = at(None, false);
    assert!(widest(&plain) <= 80, "{plain}");
    assert_eq!(plain, at(Some("80"), false));
    insta::assert_snapshot!("runs_80", plain);
    let wider = at(Some("120"), false);
    assert!(widest(&wider) <= 120, "{wider}");
    assert!(wider.lines().next().unwrap().contains("verdict"), "{wider}");
    insta::assert_snapshot!("runs_120", wider);
    let all = at(Some("80"), true);
    assert!(
        all.contains("bench=an-investigation-with-a-long-label-value"),
        "{all}"
    );
    assert!(widest(&all) > 120, "{all}");
    // --json is unchanged by the width: every field of every run.
    let json: Value = serde_json::from_str(&ok_stdout(
        in_store(&db).env("COLUMNS", "40").args(["runs", "--json"]),
    ))
    .unwrap();
    assert_eq!(json.as_array().map(Vec::len), Some(2));
    assert!(json[0]["verdict"].as_str().is_some_and(|v| v.len() > 80));
}

/// An empty file is said in one sentence naming it, not with every format's refusal.
#[test]
fn an_empty_file_is_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "\n  \n").unwrap();
    let out = netceil()
        .args(["analyze", "--no-store", empty.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains(empty.to_str().unwrap()) && err.contains("is empty"),
        "{err}"
    );
}

/// `export -o DIR` names the path it could not write and leaves no `.partial` behind (`report
/// -o DIR` writes DIR/report.html: cli_report.rs).
#[test]
fn export_into_a_directory_names_it_and_leaves_nothing() {
    let (dir, db) = imported_store();
    let target = dir.path().join("out");
    std::fs::create_dir(&target).unwrap();
    let before = netceil_testkit::files_in(dir.path());
    let out = in_store(&db)
        .args(["export", "last", "-o", target.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("cannot write {}", target.display())),
        "{err}"
    );
    let after = netceil_testkit::files_in(dir.path());
    let new: Vec<_> = after.keys().filter(|p| !before.contains_key(*p)).collect();
    assert!(new.is_empty(), "left behind: {new:?}");
}

/// Every command's typical invocation into a reader that takes one line and goes away (as
/// `| head -1`): no panic, no "Broken pipe" on stderr, and exit 0.
#[test]
fn every_command_into_a_reader_of_one_line() {
    let (_dir, db) = imported_store();
    let sk0 = seed("freebsd-vmstat-sk0.txt");
    let cases: Vec<Vec<&str>> = vec![
        vec!["--help"],
        vec!["runs"],
        vec!["runs", "--wide"],
        vec!["runs", "--json"],
        vec!["show", "last"],
        vec!["show", "last", "--verbose"],
        vec!["show", "last", "--json"],
        vec!["show", "last", "--explain"],
        vec!["export", "last"],
        vec!["export", "last", "--format", "csv"],
        vec!["export", "last", "--format", "markdown"],
        vec!["report", "last", "-o", "-"],
        vec!["compare", "last", "last"],
        vec!["analyze", "--no-store", &sk0],
        vec!["analyze", "--no-store", "--json", &sk0],
        vec!["completions", "bash"],
        vec!["man"],
        vec![
            "run",
            "udp",
            "--rate",
            "10k",
            "--duration",
            "2",
            "--no-store",
        ],
        vec![
            "run",
            "rr",
            "--rate",
            "2k",
            "--duration",
            "2",
            "--no-store",
            "--json",
            "-q",
        ],
        vec!["watch", "--duration", "3s", "--no-store"],
    ];
    for args in cases {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("netceil"))
            .args(&args)
            .env("NETCEIL_DB", &db)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts");
        let mut first = String::new();
        {
            let mut reader = BufReader::new(child.stdout.take().unwrap());
            reader.read_line(&mut first).unwrap();
        } // the reader goes away
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(!first.is_empty(), "{args:?}: no first line; {err}");
        assert!(
            !err.contains("panicked") && !err.to_lowercase().contains("broken pipe"),
            "{args:?}: {err}"
        );
        assert_eq!(status.code(), Some(0), "{args:?}: {err}");
    }
}

/// `analyze` wraps its summary and verdict to the width it is given (the first line names
/// the file, whatever its length).
#[test]
fn analyze_wraps_its_verdict() {
    let out = ok_stdout(netceil().env("COLUMNS", "80").args([
        "analyze",
        "--no-store",
        &seed("freebsd-vmstat-sk0.txt"),
    ]));
    assert!(out.contains("verdict:"), "{out}");
    for line in out.lines().skip(1) {
        assert!(line.chars().count() <= 80, "over 80 columns: {line}");
    }
}
