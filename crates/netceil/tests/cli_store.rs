//! End-to-end: runs are stored while they go on, listed, shown and removed.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

fn netceil(db: &Path) -> Command {
    let mut c = Command::cargo_bin("netceil").expect("binary built");
    c.env("NETCEIL_DB", db).timeout(Duration::from_secs(60));
    c
}

fn json(c: &mut Command) -> Value {
    let out = c.output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn runs_are_stored_listed_shown_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let run = json(netceil(&db).args([
        "run",
        "udp",
        "--rate",
        "5k",
        "--duration",
        "2",
        "--label",
        "nic=lo",
        "--json",
        "-q",
    ]));
    let id = run["run_id"].as_str().unwrap().to_string();
    json(netceil(&db).args([
        "watch",
        "--duration",
        "1",
        "--json",
        "-q",
        "--label",
        "nic=none",
    ]));

    let listed = json(netceil(&db).args(["runs", "--json"]));
    assert_eq!(listed.as_array().unwrap().len(), 2);
    let only = json(netceil(&db).args(["runs", "--json", "--label", "nic=lo"]));
    assert_eq!(only[0]["run_id"], id.as_str());
    assert_eq!(only.as_array().unwrap().len(), 1);

    // The stored run is the run that was printed, series and all.
    let shown = json(netceil(&db).args(["show", &id[..id.len() - 2], "--json"]));
    assert_eq!(shown["results"], run["results"]);
    assert_eq!(shown["series"]["t_s"], run["series"]["t_s"]);
    assert_eq!(shown["meta"]["complete"], true);
    let load_rx = shown["series"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "load_rx_pps")
        .expect("the workload's own rate is on the timeline");
    assert!(load_rx["values"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v.as_f64().is_some_and(|x| x > 4000.0)));

    netceil(&db).args(["rm", &id]).assert().success();
    assert_eq!(
        json(netceil(&db).args(["runs", "--json"]))
            .as_array()
            .unwrap()
            .len(),
        1
    );
    netceil(&db).args(["show", &id]).assert().code(2);
}

/// Starts a 200 ms `watch` recording into `db`, sends it `signal` after 1.5 s, and returns its
/// exit status and how long it took to end after the signal.
fn watch_then_signal(
    db: &Path,
    signal: nix::sys::signal::Signal,
) -> (std::process::ExitStatus, Duration) {
    let bin = assert_cmd::cargo::cargo_bin("netceil");
    let mut child = std::process::Command::new(bin)
        .env("NETCEIL_DB", db)
        .args(["watch", "--duration", "30", "--interval", "200ms", "-q"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let sent = Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
    let status = child.wait().unwrap();
    (status, sent.elapsed())
}

#[test]
fn kill_9_leaves_a_readable_incomplete_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let (status, _) = watch_then_signal(&db, nix::sys::signal::Signal::SIGKILL);
    assert!(!status.success());
    let run = json(netceil(&db).args(["show", "last", "--json"]));
    assert_eq!(
        run["meta"]["complete"], false,
        "a killed run is marked incomplete"
    );
    let rows = run["series"]["t_s"].as_array().unwrap().len();
    // 200 ms rows over ~1.5 s: every interval before the kill was flushed (allow start-up time).
    assert!(rows >= 4, "{rows} rows stored before the kill");
    let listed = json(netceil(&db).args(["runs", "--json"]));
    assert_eq!(listed[0]["complete"], false);
}

#[test]
fn ctrl_c_ends_watch_cleanly_and_keeps_what_was_sampled() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let (status, took) = watch_then_signal(&db, nix::sys::signal::Signal::SIGINT);
    assert!(
        took < Duration::from_secs(3),
        "Ctrl-C took {took:?} to end the watch"
    );
    // Ctrl-C's code, 130, as for every command; the recording is still kept whole.
    assert_eq!(status.code(), Some(130), "{status}");
    let run = json(netceil(&db).args(["show", "last", "--json"]));
    assert_eq!(
        run["meta"]["complete"], true,
        "an interrupted watch is a finished recording"
    );
    assert!(run["series"]["t_s"].as_array().unwrap().len() >= 4);
}

/// Every file in `dir` with its bytes.
fn snapshot(dir: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    netceil_testkit::files_in(dir)
}

/// `bytes` with `patches` (offset, new bytes) written over them.
fn patched(bytes: &[u8], patches: &[(usize, &[u8])]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for (at, new) in patches {
        out[*at..*at + new.len()].copy_from_slice(new);
    }
    out
}

/// Another program's database and a newer netceil's store, each in rollback-journal mode: no
/// command converts them to WAL, writes to them or leaves files beside them, and each says why
/// it does not use them.
#[test]
fn a_file_that_is_not_this_builds_store_is_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    json(netceil(&db).args([
        "watch",
        "--duration",
        "1",
        "--interval",
        "200ms",
        "--json",
        "-q",
    ]));
    let store = std::fs::read(&db).unwrap();
    assert_eq!(&store[..16], b"SQLite format 3\0");
    // Header bytes 18-19: the file format (1 = rollback journal, 2 = WAL); 60: the schema
    // version; 68: the application id. The store was closed cleanly, so there is no WAL log
    // and the file alone is the database.
    let rollback: (usize, &[u8]) = (18, &[1, 1]);
    let cases: [(&str, Vec<u8>, &str); 2] = [
        (
            "another program's database",
            patched(&store, &[rollback, (68, &0x4142_4344_i32.to_be_bytes())]),
            "not a netceil run store",
        ),
        (
            "a newer netceil's store",
            patched(&store, &[rollback, (60, &99_i32.to_be_bytes())]),
            "schema version 99",
        ),
    ];
    let commands: [&[&str]; 6] = [
        &["runs"],
        &["show", "last"],
        &["export", "last"],
        &["compare", "last", "last"],
        &["rm", "last"],
        &["watch", "--duration", "1", "--interval", "200ms", "-q"],
    ];
    for (what, bytes, expected) in &cases {
        std::fs::write(&db, bytes).unwrap();
        let before = snapshot(dir.path());
        for args in commands {
            let out = netceil(&db).args(args).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains(expected) && stderr.contains(&db.display().to_string()),
                "{what}, {args:?}: {stderr}"
            );
            if args[0] == "watch" {
                assert!(stderr.contains("will not be stored"), "{stderr}");
            } else {
                assert!(!out.status.success(), "{what}, {args:?}: {stderr}");
            }
            assert!(
                snapshot(dir.path()) == before,
                "{what}: `netceil {}` changed the file or left files beside it",
                args.join(" ")
            );
        }
    }
}

/// Commands that only read the store make nothing when there is none yet.
#[test]
fn reading_commands_create_no_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("not/yet/runs.db");
    let listed = json(netceil(&db).args(["runs", "--json"]));
    assert_eq!(listed, serde_json::json!([]));
    let out = netceil(&db).arg("runs").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("no runs in"));
    netceil(&db).args(["show", "last"]).assert().code(2);
    netceil(&db).args(["export", "last"]).assert().code(2);
    // `rm` of a run that cannot be there is refused before anything is opened to write.
    netceil(&db).args(["rm", "last"]).assert().code(2);
    assert!(
        !dir.path().join("not").exists(),
        "a reading command made the store or its directory"
    );
}
