//! `netceil search udp` as a user meets it: `--frame-sizes` (the old `--sizes` still works,
//! with a note, since `sweep --sizes` is UDP payload); the trial budget running out is said,
//! with the flag to raise and the best rate so far; Ctrl-C prints what was found so far and
//! the exact `--resume` command, keeps the run as interrupted, and a trial it cut short is
//! neither shown with a loss nor replayed as a whole trial.

use std::process::{Command as Std, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;

fn netceil() -> Command {
    let mut c = Command::cargo_bin("netceil").expect("binary built");
    c.timeout(Duration::from_secs(120));
    c
}

#[test]
fn frame_sizes_is_the_flag_and_the_old_sizes_still_works_with_a_note() {
    let run = |args: &[&str]| {
        let out = netceil()
            .args(["search", "udp", "--no-store"])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Refused before any traffic (too small a frame), so nothing is measured.
    let (code, err) = run(&["--frame-sizes", "40"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--frame-sizes 40"), "{err}");
    assert!(!err.contains("note:"), "{err}");
    let (code, err) = run(&["--sizes", "40"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--sizes is now --frame-sizes (Ethernet frames, as before)"),
        "{err}"
    );
    assert!(err.contains("--frame-sizes 40"), "{err}");
    let (code, err) = run(&["--sizes", "64", "--frame-sizes", "64"]);
    assert_eq!(code, Some(2), "both spellings at once: {err}");
}

#[test]
fn a_spent_trial_budget_says_so_gives_the_best_rate_and_names_the_flag() {
    let _one = netceil_testkit::machine_lock();
    let out = netceil()
        .args([
            "search",
            "udp",
            "--frame-sizes",
            "1024",
            "--loss",
            "0",
            "--trial",
            "400ms",
            "--initial-trial",
            "200ms",
            "--precision",
            "1%",
            "--min-rate",
            "1k",
            "--max-rate",
            "20M",
            "--max-trials",
            "2",
            "--no-store",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        // 20 Mpps is beyond any loopback: the first trial fails, and the bisection cannot end
        // in the one trial left.
        stdout.contains("the trial budget ran out (--max-trials 2): raise --max-trials"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the best rate that passed so far: "),
        "{stdout}"
    );
}

/// The stored runs' `export last` as JSON, once the store has one.
fn export_last(db: &std::path::Path) -> Option<Value> {
    let out = netceil()
        .env("NETCEIL_DB", db)
        .args(["export", "last", "--format", "json"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).ok())
        .flatten()
}

#[test]
fn ctrl_c_prints_what_was_found_and_the_resume_command_and_keeps_no_cut_trial() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let _one = netceil_testkit::machine_lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let child = Std::new(assert_cmd::cargo::cargo_bin("netceil"))
        .env("NETCEIL_DB", &db)
        .args([
            "search",
            "udp",
            "--frame-sizes",
            "1024",
            "--loss",
            "0",
            "--trial",
            "2s",
            "--initial-trial",
            "1s",
            "--max-rate",
            "20k",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("netceil starts");
    // One trial stored, then Ctrl-C in the middle of the next (1 s long).
    let deadline = Instant::now() + Duration::from_secs(60);
    while export_last(&db)
        .and_then(|r| r["parts"].as_array().map(Vec::len))
        .unwrap_or(0)
        < 1
    {
        assert!(Instant::now() < deadline, "no trial stored in 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
    kill(pid, Signal::SIGINT).expect("SIGINT to the child started here");
    let out = child.wait_with_output().expect("it ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stored = export_last(&db).expect("the run is kept");
    let id = stored["run_id"].as_str().unwrap();
    assert!(
        stdout.contains(&format!("go on with: netceil search udp --resume {id}")),
        "{stdout}"
    );
    assert!(stdout.contains("what was found so far"), "{stdout}");
    assert_eq!(stored["meta"]["complete"], false, "stored as interrupted");
    // The cut trial is said to be cut, with no loss figure.
    let cut: Vec<&str> = stderr.lines().filter(|l| l.contains("cut short")).collect();
    assert_eq!(cut.len(), 1, "{stderr}");
    assert!(!cut[0].contains("loss"), "{}", cut[0]);
    // The cut trial is kept, marked as cut: `--resume` measures it again (the replay's own
    // test checks that it skips such parts).
    let parts = stored["parts"].as_array().unwrap();
    let cut_parts = parts
        .iter()
        .filter(|p| p["meta"]["complete"] == false)
        .count();
    assert_eq!(cut_parts, 1, "{parts:#?}");
}
