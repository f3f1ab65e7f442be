//! Many slow paced flows (the Erlang investigation's shape, scaled down): the aggregate rate
//! holds and the flows share a few threads. Alone in its file so the thread count it observes
//! is this test's own.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use netceil_load::tcp::{run_tcp, TcpConfig};
use netceil_model::TcpPacing;

fn threads_in_process() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

#[test]
fn two_hundred_flows_at_1_mbit_hold_the_aggregate_on_few_threads() {
    let cfg = TcpConfig {
        flows: 200,
        rate_per_flow_bps: Some(1e6),
        duration: Duration::from_secs(2),
        ..TcpConfig::default()
    };
    let mut most_threads = 0;
    let r = run_tcp(&cfg, &AtomicBool::new(false), &mut |_| {
        most_threads = most_threads.max(threads_in_process());
    })
    .unwrap();
    assert!(most_threads > 0, "progress was never reported");
    assert!(most_threads < 20, "{most_threads} threads for 200 flows");

    let aggregate = r.rx_app_bits_per_s;
    assert!(
        (aggregate / 200e6 - 1.0).abs() < 0.05,
        "aggregate {aggregate} bit/s, wanted 200 Mbit/s ± 5 %"
    );
    assert_eq!(r.flows.len(), 200);
    assert_eq!(r.flows.iter().map(|f| f.bytes).sum::<u64>(), r.rx_app_bytes);
    for f in &r.flows {
        assert!(
            (f.bits_per_s / 1e6 - 1.0).abs() < 0.05,
            "flow {} at {} bit/s",
            f.flow,
            f.bits_per_s
        );
    }
    assert_eq!(r.tcp_pacing, Some(TcpPacing::Application));
    assert!(!r.generator_limited);
    assert!(r
        .generator
        .achieved_ratio
        .is_some_and(|a| (a - 1.0).abs() < 0.01));
    assert!(r
        .notes
        .iter()
        .any(|n| n.contains("requested 1000000 bit/s per flow")));
}
