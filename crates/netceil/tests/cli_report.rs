//! `netceil report`: several stored runs into one HTML file, or into `report.html` in a
//! directory; a failed write names the path and leaves nothing half-written behind.

use assert_cmd::Command;
use std::path::Path;
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

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".partial"))
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
    assert!(leftovers(&out_dir).is_empty());

    // A path that cannot be written: named in the error, and no .partial left.
    let blocked = dir.path().join("blocked");
    std::fs::create_dir_all(blocked.join("report.html").join("full")).unwrap();
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
    assert_eq!(leftovers(&blocked), Vec::<String>::new());
}
