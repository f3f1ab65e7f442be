//! `netceil report`: several stored runs into one HTML file, or into `report.html` in a
//! directory; a failed write names the path and leaves nothing half-written behind.

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn netceil(db: &Path) -> Command {
    let mut c = Command::cargo_bin("netceil").expect("binary built");
    c.env("NETCEIL_DB", db).timeout(Duration::from_secs(60));
    c
}

/// A short `watch` (no load is generated): a stored run to report on.
fn watched(db: &Path) -> String {
    let out = netceil(db)
        .args(["watch", "--duration", "1", "--json", "-q"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    run["run_id"].as_str().unwrap().to_string()
}

/// Files under `dir` that were not there in `before` (netceil_testkit::files_in).
fn new_files(dir: &Path, before: &std::collections::BTreeMap<PathBuf, Vec<u8>>) -> Vec<PathBuf> {
    netceil_testkit::files_in(dir)
        .into_keys()
        .filter(|p| !before.contains_key(p))
        .collect()
}

#[test]
fn several_runs_into_a_directory_and_failures_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let a = watched(&db);
    let b = watched(&db);
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let before = netceil_testkit::files_in(&out_dir);

    netceil(&db)
        .args(["report", &a, &b, "-o"])
        .arg(&out_dir)
        .assert()
        .success();
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("netceil report: 2 runs"));
    assert!(
        html.contains("class=\"verdicts\""),
        "a verdict per run first"
    );
    assert!(html.contains(&a) && html.contains(&b));
    assert_eq!(
        new_files(&out_dir, &before),
        vec![out_dir.join("report.html")]
    );

    // A path that cannot be written: named in the error, and no .partial left.
    let blocked = dir.path().join("blocked");
    std::fs::create_dir_all(blocked.join("report.html").join("full")).unwrap();
    let before = netceil_testkit::files_in(&blocked);
    let out = netceil(&db)
        .args(["report", &a, "-o"])
        .arg(&blocked)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&blocked.join("report.html").display().to_string()),
        "the error names the path: {err}"
    );
    assert_eq!(new_files(&blocked, &before), Vec::<PathBuf>::new());
}
