//! `--confirm`: the verdict tested by an A/B experiment on netceil's own workload.

use assert_cmd::Command;
use serde_json::Value;
use std::time::Duration;

// These tests load the machine, and a verdict depends on what else runs: one at a time
// (netceil_testkit::machine_lock, across test processes too).
fn run(args: &[&str]) -> Value {
    let _one = netceil_testkit::machine_lock();
    let out = Command::cargo_bin("netceil")
        .unwrap()
        .args(args)
        .args(["--json", "-q", "--no-store"])
        .timeout(Duration::from_secs(90))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn an_overloaded_socket_buffer_is_tested_with_a_larger_one() {
    // Unpaced 64 B frames into a 4 KiB buffer: the socket drops, so the verdict blames the
    // buffer, and the experiment gives it 16 times more.
    let r = run(&[
        "run",
        "udp",
        "--rcvbuf",
        "4K",
        "--duration",
        "2",
        "--confirm",
    ]);
    // The experiment tests the verdict's top ceiling (on a debug build the sender may be
    // that ceiling instead), with the change that relieves that cause.
    let c = &r["confirmations"][0];
    let cause = c["cause"].as_str().expect("a confirmation");
    // A receiver seen on the sender's core is moved off it instead.
    let changes: &[&str] = match cause {
        "buffer_drops" => &["16× receive buffer"],
        "sender_saturated" | "thread_saturated" => &["sender threads"],
        "hot_cpu" => &["sender threads", "receiver moved"],
        "receiver_saturated" => &["rate lowered", "receiver moved"],
        "generator_limited" | "saturation" => &["rate lowered"],
        other => panic!("{other} was tested, and no change tests it"),
    };
    assert!(
        changes
            .iter()
            .any(|w| c["intervention"].as_str().unwrap().contains(w)),
        "{c:#}"
    );
    // Four trials, two of each arm, each measured: loss is a share of what was sent.
    for arm in ["unchanged", "changed"] {
        let v = c[arm].as_array().unwrap();
        assert_eq!(v.len(), 2, "{c:#}");
        for x in v.iter().map(|x| x.as_f64().unwrap()) {
            // A share of what was sent, or a rate: never negative, a share never over 100 %.
            assert!(x >= 0.0 && (c["unit"] != "percent" || x <= 100.0), "{c:#}");
        }
    }
    // Each arm's figure was measured.
    assert!(c["unchanged"][0].as_f64().unwrap() > 0.0, "{c:#}");
    let outcome = c["outcome"].as_str().unwrap();
    assert!(
        ["confirmed", "refuted", "inconclusive"].contains(&outcome),
        "{c:#}"
    );
    // The verdict carries the experiment as evidence; a refuted buffer no longer leads.
    let lead = &r["findings"][0];
    let said = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["cause"] == cause)
        .flat_map(|f| f["evidence"].as_array().unwrap())
        .any(|e| e["metric"] == "confirm");
    assert!(said, "{:#}", r["findings"]);
    if outcome == "refuted" {
        assert_ne!(lead["cause"], cause, "{:#}", r["findings"]);
    }
}

#[test]
fn a_verdict_no_change_can_test_says_so() {
    // A healthy paced run names no ceiling: nothing to test, no trials run.
    let r = run(&["run", "udp", "--rate", "5k", "--duration", "1", "--confirm"]);
    assert!(r["confirmations"].is_null(), "{:#}", r["confirmations"]);
    let notes: Vec<&str> = r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes.iter().any(|n| n.starts_with("--confirm:")),
        "{notes:?}"
    );
}
