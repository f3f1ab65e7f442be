//! `netceil run --format iperf`: iperf3's short per-interval layout, pinned on runs of a real
//! `netceil run` (the workspace's tests/fixtures/runs: udp, tcp, rr and the default suite).
//! Review changes with `cargo insta review`.

use netceil_model::Run;

fn fixture(name: &str) -> Run {
    let path = format!(
        "{}/../../tests/fixtures/runs/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn iperf_udp() {
    insta::assert_snapshot!(netceil_report::iperf(&fixture("udp")));
}

#[test]
fn iperf_tcp() {
    insta::assert_snapshot!(netceil_report::iperf(&fixture("tcp")));
}

#[test]
fn iperf_rr() {
    insta::assert_snapshot!(netceil_report::iperf(&fixture("rr")));
}

#[test]
fn iperf_suite() {
    insta::assert_snapshot!(netceil_report::iperf(&fixture("suite")));
}

/// One line per interval and the totals: as many interval lines as the series has rows,
/// each starting where the one before ended, and the receiver's totals the run's own.
#[test]
fn one_line_per_interval_and_the_runs_totals() {
    let run = fixture("udp");
    let text = netceil_report::iperf(&run);
    let (intervals, totals) = text.split_once("- - -").expect("a separator");
    let lines: Vec<&str> = intervals
        .lines()
        .filter(|l| l.starts_with("[  1]"))
        .collect();
    assert_eq!(lines.len(), run.series.t_s.len(), "{text}");
    let r = run.results.as_ref().unwrap();
    let receiver = totals
        .lines()
        .find(|l| l.ends_with("receiver"))
        .expect("a receiver line");
    let shown = netceil_model::fmt::value(r.rx_app_bits_per_s, netceil_model::Unit::BitsPerSecond);
    assert!(receiver.contains(&shown), "{receiver} lacks {shown}");
    assert!(
        receiver.contains(&format!("{}/{}", r.lost_packets, r.tx_packets)),
        "{receiver}"
    );
    // A watch has no workload of netceil's own: said, not an empty page.
    let mut watch = run.clone();
    watch.workload = None;
    assert!(netceil_report::iperf(&watch).starts_with("no workload"));
}
