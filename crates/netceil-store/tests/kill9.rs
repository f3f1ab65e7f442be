//! `kill -9` in the middle of a run keeps every interval committed before the kill.
//!
//! The test re-executes its own binary as the recorder (selected by an environment variable),
//! so the recorder is a real separate process and the kill a real SIGKILL.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{assert_rows, row_values, started_run};
use netceil_store::Store;

const CHILD_DB: &str = "NETCEIL_STORE_KILL9_CHILD_DB";
const RUN_ID: &str = "20261121-231502-kill";
/// The recorder stops by itself after this many rows if nobody kills it.
const CHILD_MAX_ROWS: usize = 5_000;
/// Rows confirmed before the kill.
const KILL_AFTER: usize = 5;

/// The recorder. Ignored in normal runs; the parent test starts it with `--include-ignored`.
#[test]
#[ignore = "the recorder process of kill9_mid_run_keeps_committed_rows"]
fn kill9_recorder() {
    let Some(path) = std::env::var_os(CHILD_DB) else {
        // Not started by the parent test (e.g. `cargo test -- --include-ignored`): nothing to do.
        return;
    };
    let store = Store::open(path).unwrap();
    let mut writer = store
        .begin_run(&started_run(RUN_ID, &[("test", "kill9")]))
        .unwrap();
    for r in 0..CHILD_MAX_ROWS {
        writer.append_row((r + 1) as f64, &row_values(r)).unwrap();
        // Printed only after the commit returned: every confirmed row is on disk.
        println!("committed {}", r + 1);
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("the recorder was not killed after {CHILD_MAX_ROWS} rows");
}

#[test]
fn kill9_mid_run_keeps_committed_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "kill9_recorder",
            "--exact",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DB, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();

    let mut confirmed = 0;
    // The pipe stays open until the child is dead: closing it first could make the child die
    // of a failed print instead of the SIGKILL under test.
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        if let Some(n) = line.unwrap().strip_prefix("committed ") {
            confirmed = n.trim().parse().unwrap();
            if confirmed >= KILL_AFTER {
                break;
            }
        }
    }
    if confirmed < KILL_AFTER {
        let status = child.wait().unwrap();
        panic!("the recorder ended ({status}) after {confirmed} rows, before it could be killed");
    }
    child.kill().unwrap(); // SIGKILL on Unix
    let status = child.wait().unwrap();
    drop(lines);
    assert_eq!(
        status.signal(),
        Some(9),
        "the recorder must die of SIGKILL, not {status:?}"
    );

    let store = Store::open(&path).unwrap();
    assert_eq!(store.resolve("last").unwrap(), RUN_ID);
    let run = store.get_run(RUN_ID).unwrap();
    assert!(!run.meta.complete, "a killed run stays marked incomplete");
    assert_eq!(run.meta.labels["test"], "kill9");
    let rows = run.series.len();
    assert!(
        rows >= confirmed,
        "{rows} rows stored, {confirmed} were confirmed"
    );
    assert!(rows < CHILD_MAX_ROWS, "the recorder was killed mid-run");
    assert_rows(&run.series, rows);
    let summary = &store.list(&Default::default()).unwrap()[0];
    assert!(!summary.complete);
    assert_eq!(summary.rows, rows);
}
