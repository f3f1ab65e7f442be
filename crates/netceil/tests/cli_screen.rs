//! What a person sees on a terminal or through a pipe: every interval row, short default
//! output, tables cut to the width they are given, and a reader that goes away early.

use assert_cmd::Command;

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
