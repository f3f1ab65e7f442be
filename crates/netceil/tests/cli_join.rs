//! `netceil analyze --join`: logs of the same minutes on one machine analyzed as one run.
//!
//! The fixtures (tests/fixtures/join/): 10 s of `mpstat -P ALL 1` on 4 CPUs at ~89 % busy;
//! beside it, `statistics(scheduler_wall_time)` pairs of 4 schedulers, one from SEEDS §3
//! (the schedulers almost never worked) and one whose schedulers worked ~89 % of the time.

use assert_cmd::Command;
use serde_json::Value;

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/join/{name}", env!("CARGO_MANIFEST_DIR"))
}

const MPSTAT: &str = "mpstat-4cpu-busy-12s.txt";
const IDLE_SCHEDULERS: &str = "erl-wall-time-4sched-seed.txt";
const WORKING_SCHEDULERS: &str = "erl-wall-time-4sched-working.txt";

fn netceil(db: &std::path::Path) -> Command {
    let mut c = Command::cargo_bin("netceil").expect("binary built");
    c.timeout(std::time::Duration::from_secs(60));
    c.env("NETCEIL_DB", db);
    c
}

/// `analyze --no-store --json` with `args`: the runs printed.
fn analyze(args: &[String]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let out = netceil(&dir.path().join("runs.db"))
        .args(["analyze", "--no-store", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON array")
}

fn cause(run: &Value) -> &str {
    run["findings"][0]["cause"].as_str().unwrap_or("")
}

#[test]
fn os_cpu_beside_idle_schedulers_is_busy_wait_only_when_joined() {
    let files = [fixture(MPSTAT), fixture(IDLE_SCHEDULERS)];
    let alone = analyze(&files);
    assert_eq!(alone.len(), 2);
    for run in &alone {
        assert_ne!(cause(run), "busy_wait", "no file alone shows the gap");
    }
    let mut args = vec!["--join".to_string()];
    args.extend(files);
    let joined = analyze(&args);
    assert_eq!(joined.len(), 1, "one run for the joined logs");
    let run = &joined[0];
    assert_eq!(cause(run), "busy_wait", "{:#}", run["findings"][0]);
    assert_eq!(run["source"]["format"], "mpstat + erlang-wall-time");
    let file = run["source"]["file"].as_str().unwrap();
    assert!(
        file.contains(MPSTAT) && file.contains(IDLE_SCHEDULERS),
        "{file}"
    );
    let notes = run["notes"].as_array().unwrap();
    assert!(notes[0]
        .as_str()
        .unwrap()
        .starts_with("joined 2 logs into one run over the 10 s they share"));
    assert_eq!(run["series"]["t_s"].as_array().unwrap().len(), 10);
}

#[test]
fn os_cpu_beside_working_schedulers_stays_cpu_bound() {
    let joined = analyze(&[
        "--join".into(),
        fixture(MPSTAT),
        fixture(WORKING_SCHEDULERS),
    ]);
    assert_eq!(
        cause(&joined[0]),
        "cpu_bound",
        "{:#}",
        joined[0]["findings"][0]
    );
}

/// A copy of the mpstat fixture with `edit` applied, in `dir`.
fn edited(dir: &std::path::Path, name: &str, edit: impl Fn(&str) -> String) -> String {
    let text = std::fs::read_to_string(fixture(MPSTAT)).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, edit(&text)).unwrap();
    path.to_string_lossy().into_owned()
}

/// Runs `analyze --join` against a store in `dir`: exit code and stderr; and whether the
/// store holds any run afterwards.
fn refused(dir: &std::path::Path, files: &[String]) -> (Option<i32>, String, bool) {
    let db = dir.join("runs.db");
    let out = netceil(&db)
        .args(["analyze", "--join"])
        .args(files)
        .output()
        .unwrap();
    let listed = netceil(&db).args(["runs", "--json"]).output().unwrap();
    let runs: Value = serde_json::from_slice(&listed.stdout).unwrap_or(Value::Null);
    let stored = runs.as_array().is_some_and(|a| !a.is_empty());
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        stored,
    )
}

#[test]
fn a_malformed_log_names_its_file_and_line_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let bad = edited(dir.path(), "broken-mpstat.txt", |t| {
        t.replacen("68.44", "6x.44", 1)
    });
    let (code, err, stored) = refused(dir.path(), &[fixture(IDLE_SCHEDULERS), bad]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("broken-mpstat.txt: line 5"), "{err}");
    assert!(!stored, "no joined run is stored when a log fails");
    // The same store does keep a join that succeeds: the check above can fail.
    let (code, err, stored) = refused(dir.path(), &[fixture(IDLE_SCHEDULERS), fixture(MPSTAT)]);
    assert_eq!(code, Some(0), "{err}");
    assert!(stored);
}

#[test]
fn logs_of_different_hours_are_refused_with_their_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let later = edited(dir.path(), "mpstat-later.txt", |t| {
        t.replace("16:02:", "18:02:")
    });
    let (code, err, stored) = refused(dir.path(), &[fixture(MPSTAT), later]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("do not overlap"), "{err}");
    assert!(
        err.contains("2026-11-19 16:02:30 to 2026-11-19 16:02:40 local"),
        "{err}"
    );
    assert!(
        err.contains("mpstat-later.txt (2026-11-19 18:02:30"),
        "{err}"
    );
    assert!(!stored);
}

#[test]
fn logs_of_machines_with_different_cpu_counts_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let other = edited(dir.path(), "mpstat-8cpu.txt", |t| {
        t.replace("(4 CPU)", "(8 CPU)")
    });
    let (code, err, _) = refused(dir.path(), &[fixture(MPSTAT), other]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("has 4 CPUs and") && err.contains("mpstat-8cpu.txt says 8"),
        "{err}"
    );
}
