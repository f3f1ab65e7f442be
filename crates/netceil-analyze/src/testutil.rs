//! Builders for synthetic runs whose truth is known, shared by the rules' unit tests.

use netceil_model::params::{LoadParams, RrParams, RrProtocol};
use netceil_model::{
    names as n, Finding, LatencySummary, MetricId, Results, Run, RunSource, Series, Unit,
};

use crate::ctx::Ctx;
use crate::ledger::Entry;
use crate::Options;

/// A deterministic noise source: tests need noise, not randomness (a failure must reproduce).
pub fn noise(i: usize, amplitude: f64) -> f64 {
    let x = ((i as f64 + 1.0) * 12.9898).sin() * 43758.5453;
    (x - x.floor() - 0.5) * 2.0 * amplitude
}

/// Sets `name{labels}` in row `row`, with the unit the names module gives it.
pub fn put(s: &mut Series, row: usize, name: &str, labels: &[(&str, &str)], v: f64) {
    let mut id = MetricId::new(name);
    for (k, val) in labels {
        id = id.with(*k, *val);
    }
    let unit = n::unit_of(name).unwrap_or(Unit::Count);
    s.set_at(row, &id, unit, v);
}

/// A live run of `rows` one-second rows on a 2-CPU host; `fill(series, row)` sets each row.
pub fn live_run(rows: usize, mut fill: impl FnMut(&mut Series, usize)) -> Run {
    let mut run = Run::new("test", RunSource::Live);
    run.meta.host.cpus = Some(2);
    run.meta.host.os = Some("Linux".into());
    run.series = Series::new(1.0);
    for row in 0..rows {
        run.series.push_row(row as f64 + 1.0);
        fill(&mut run.series, row);
    }
    run
}

/// An imported run (a log without network counters) built the same way.
pub fn imported_run(rows: usize, fill: impl FnMut(&mut Series, usize)) -> Run {
    let mut run = live_run(rows, fill);
    run.source = RunSource::Imported {
        format: "test".into(),
        file: "test.txt".into(),
    };
    run.meta.host.cpus = None;
    run.meta.host.os = None;
    run
}

/// Per-CPU and machine CPU figures for one row: `(user, system, softirq)` per CPU.
pub fn cpu_row(s: &mut Series, row: usize, cpus: &[(f64, f64, f64)]) {
    let mut tot = (0.0, 0.0, 0.0);
    for (i, &(us, sy, si)) in cpus.iter().enumerate() {
        let c = i.to_string();
        let l = [(n::LABEL_CPU, c.as_str())];
        put(s, row, n::CPU_USER_PCT, &l, us);
        put(s, row, n::CPU_SYSTEM_PCT, &l, sy);
        put(s, row, n::CPU_SOFTIRQ_PCT, &l, si);
        put(s, row, n::CPU_IDLE_PCT, &l, (100.0 - us - sy - si).max(0.0));
        put(s, row, n::CPU_BUSY_PCT, &l, (us + sy + si).min(100.0));
        tot = (tot.0 + us, tot.1 + sy, tot.2 + si);
    }
    let k = cpus.len() as f64;
    put(s, row, n::CPU_USER_PCT, &[], tot.0 / k);
    put(s, row, n::CPU_SYSTEM_PCT, &[], tot.1 / k);
    put(s, row, n::CPU_SOFTIRQ_PCT, &[], tot.2 / k);
    let busy = (tot.0 + tot.1 + tot.2) / k;
    put(s, row, n::CPU_BUSY_PCT, &[], busy.min(100.0));
    put(s, row, n::CPU_IDLE_PCT, &[], (100.0 - busy).max(0.0));
}

/// A quiet machine's row: a few % CPU, ~850 cs/s, ~700 interrupts/s, ssh-level traffic.
pub fn idle_row(s: &mut Series, row: usize) {
    let c = |k: usize, a: f64| noise(row * 7 + k, a);
    cpu_row(
        s,
        row,
        &[
            (1.5 + c(1, 1.0), 1.0 + c(2, 0.8), 0.1),
            (1.0 + c(3, 0.9), 0.8 + c(4, 0.7), 0.05),
        ],
    );
    put(s, row, n::CS_PER_S, &[], 850.0 + c(5, 150.0));
    put(s, row, n::INTR_PER_S, &[], 700.0 + c(6, 200.0));
    let eth0 = [(n::LABEL_IFACE, "eth0")];
    put(
        s,
        row,
        n::IFACE_RX_BITS_PER_S,
        &eth0,
        20_000.0 + c(7, 8000.0),
    );
    put(s, row, n::IFACE_RX_PPS, &eth0, 25.0 + c(8, 10.0));
    put(
        s,
        row,
        n::IFACE_TX_BITS_PER_S,
        &eth0,
        30_000.0 + c(9, 8000.0),
    );
    put(s, row, n::IFACE_TX_PPS, &eth0, 20.0 + c(10, 10.0));
    for name in [
        n::UDP_RCVBUF_ERRORS_PER_S,
        n::SOFTNET_DROPPED_PER_S,
        n::SOFTNET_TIME_SQUEEZE_PER_S,
        n::TCP_BACKLOG_DROP_PER_S,
        n::TCP_RETRANS_SEGS_PER_S,
    ] {
        put(s, row, name, &[], 0.0);
    }
    put(s, row, n::TCP_OUT_SEGS_PER_S, &[], 15.0 + c(11, 5.0));
    put(s, row, n::IFACE_RX_MISSED_PER_S, &eth0, 0.0);
}

/// A live request/response run with netceil's in-process peer on loopback: ten one-second
/// rows with the transaction rate, the two context switches per transaction such a loop
/// causes, the CPU 35 % idle, and traffic on `lo` (eth0 only chatters). Round trips spread
/// as one flow's do on loopback (the fastest 0.6 × the mean). `in_flight` is `Some` for a
/// closed loop, `requested` (transactions/s) for a paced one.
/// Sets the fastest round trip of an RR run made by [`rr_loopback_run`].
pub fn with_min_latency_us(run: &mut Run, min: f64) {
    if let Some(l) = run.results.as_mut().and_then(|r| r.latency_us.as_mut()) {
        l.min = min;
    }
}

pub fn rr_loopback_run(
    in_flight: Option<u32>,
    requested: Option<f64>,
    tps: f64,
    mean_us: f64,
) -> Run {
    let mut run = live_run(10, |s, r| {
        cpu_row(s, r, &[(30.0, 30.0, 10.0), (25.0, 30.0, 10.0)]);
        put(
            s,
            r,
            n::LOAD_TRANSACTIONS_PER_S,
            &[],
            tps + noise(r, tps / 200.0),
        );
        put(s, r, n::CS_PER_S, &[], 2.0 * tps + noise(r + 3, tps / 50.0));
        put(s, r, n::INTR_PER_S, &[], 800.0 + noise(r + 5, 50.0));
        let lo = [(n::LABEL_IFACE, "lo")];
        put(s, r, n::IFACE_RX_PPS, &lo, 2.0 * tps);
        put(s, r, n::IFACE_TX_PPS, &lo, 2.0 * tps);
        let eth0 = [(n::LABEL_IFACE, "eth0")];
        put(s, r, n::IFACE_RX_PPS, &eth0, 20.0);
        put(s, r, n::IFACE_TX_PPS, &eth0, 15.0);
    });
    run.workload = Some(
        LoadParams::Rr(RrParams {
            proto: RrProtocol::Tcp,
            size: 64,
            flows: in_flight.unwrap_or(1),
            rate_tps: None,
            duration_s: 10.0,
            ipv6: false,
            target: None,
            rx_cpu: None,
            tx_cpu: None,
            spin: false,
        })
        .workload(),
    );
    let done = (tps * 10.0) as u64;
    run.results = Some(Results {
        duration_s: 10.0,
        tx_packets: done,
        tx_bytes: done * 64,
        rx_app_packets: done,
        rx_app_bytes: done * 64,
        rx_app_pps: tps,
        requested_pps: requested,
        transactions_per_s: Some(tps),
        closed_loop_in_flight: in_flight,
        latency_us: Some(LatencySummary {
            p50: mean_us * 0.95,
            p90: mean_us * 1.1,
            p99: mean_us * 2.0,
            p999: mean_us * 5.0,
            max: mean_us * 300.0,
            min: mean_us * 0.6,
            mean: mean_us,
            count: done,
        }),
        service_us: None,
        ..Default::default()
    });
    run
}

/// Runs one rule on a run with default options: the finding its entry is written as.
pub fn on(run: &Run, rule: fn(&Ctx) -> Option<Entry>) -> Option<Finding> {
    entry_on(run, rule).map(|e| e.finding)
}

/// Runs one rule on a run with default options: its ledger entry.
pub fn entry_on(run: &Run, rule: fn(&Ctx) -> Option<Entry>) -> Option<Entry> {
    let opts = Options::default();
    let ctx = Ctx::new(run, &opts);
    rule(&ctx)
}

/// Points a netceil workload's load at a far end (`--to`).
pub(crate) fn set_target(run: &mut Run, target: &str) {
    let w = run.workload.as_mut().expect("a workload");
    let mut p = LoadParams::from_workload(w).expect("one of netceil's own workloads");
    match &mut p {
        LoadParams::Udp(u) => u.target = Some(target.into()),
        LoadParams::Tcp(t) => t.target = Some(target.into()),
        LoadParams::Rr(r) => r.target = Some(target.into()),
        LoadParams::Rrul(r) => r.target = Some(target.into()),
    }
    *w = p.workload();
}
