//! Runs that exercise every part of the model, for the store's tests.

#![allow(dead_code)] // each test file uses a different subset

use std::collections::BTreeMap;

use netceil_model::{
    Advice, Evidence, Finding, FlowResult, GeneratorStats, HostInfo, KernelDelivery,
    LatencySummary, LockStat, MetricId, NicInfo, PacingMode, Results, Run, RunSource, Series,
    TcpPacing, Unit, Workload, WorkloadKind,
};

/// A series with a late metric, labelled metrics, gaps (None), awkward floats and a note.
pub fn rich_series(rows: usize, seed: f64) -> Series {
    let mut s = Series::new(0.5);
    let cs = MetricId::new("cs_per_s");
    let cpu0 = MetricId::new("cpu_busy_pct").with("cpu", "0");
    let cpu1 = MetricId::new("cpu_busy_pct").with("cpu", "1");
    let rx = MetricId::new("rx_bits_per_s")
        .with("iface", "veth0")
        .with("dir", "rx");
    for r in 0..rows {
        // Irregular interval ends, as a real sampler measures them.
        s.push_row(0.5 * (r + 1) as f64 + 1e-7 * r as f64);
        s.set(&cs, Unit::PerSecond, seed + 0.1 * r as f64 + 0.2);
        if r % 3 != 1 {
            s.set(&cpu0, Unit::Percent, (r as f64 * 7.3) % 100.0);
        }
        s.set(&cpu1, Unit::Percent, if r % 2 == 0 { -0.0 } else { 1e-300 });
        if r >= 2 {
            s.set(&rx, Unit::BitsPerSecond, 9.87654321e9 / (r as f64));
        } else {
            s.note_missing("rx_bits_per_s", "interface counters not read yet");
        }
    }
    s.note_missing("psi_cpu", "no /proc/pressure on this kernel");
    s
}

// `..Default::default()` keeps this compiling when the model gains a field (they are only
// ever added); clippy objects while every field happens to be listed.
#[allow(clippy::needless_update)]
pub fn results(scale: f64) -> Results {
    Results {
        duration_s: 10.000_000_1,
        payload_bytes: Some(1472),
        frame_bytes: Some(1518),
        tx_packets: 1_000_000,
        tx_bytes: 1_472_000_000,
        tx_pps: 100_000.0 * scale,
        tx_bits_per_s: 1.1776e9 * scale,
        requested_pps: None,
        rx_app_packets: 999_000,
        rx_app_bytes: 1_470_528_000,
        rx_app_pps: 99_900.0 * scale,
        rx_app_bits_per_s: 1.176_422_4e9 * scale,
        rx_kernel_packets: Some(999_500),
        kernel: KernelDelivery {
            iface_rx_packets: Some(999_600),
            iface: Some("lo".into()),
            socket_drops: Some(500),
            udp_rcvbuf_errors: None,
            udp_in_errors: Some(0),
            udp_sndbuf_errors: None,
            ..Default::default()
        },
        lost_packets: 1000,
        reordered_packets: 3,
        duplicate_packets: 0,
        in_flight_packets: 0,
        unexplained_packets: -2,
        generator_limited: false,
        generator: GeneratorStats {
            pacing: Some(PacingMode::Spin),
            achieved_ratio: Some(0.999_9),
            cpu_s: 9.1,
            spin_cpu_s: 4.2,
            work_cpu_s: 4.9,
            cpu_pct: 91.0,
            send_gap_error_median_us: Some(0.8),
            send_gap_error_p99_us: None,
            late_sends: 12,
            send_errors: 0,
            ..Default::default()
        },
        latency_us: Some(LatencySummary {
            p50: 12.5,
            p90: 20.0,
            p99: 41.7,
            p999: 88.1,
            max: 120.0,
            min: 7.0,
            mean: 14.2,
            count: 5000,
        }),
        service_us: None,
        transactions_per_s: Some(70_000.5),
        closed_loop_in_flight: Some(4),
        flows: vec![FlowResult {
            flow: 0,
            bytes: 123,
            bits_per_s: 98.4,
            retransmits: Some(2),
            segments_out: None,
            rtt_us: None,
        }],
        tcp_pacing: Some(TcpPacing::Kernel),
        notes: vec!["receiver on cpu 1".into()],
        ..Default::default()
    }
}

pub fn finding(cause: &str, confidence: f64) -> Finding {
    Finding {
        cause: cause.into(),
        summary: format!("{cause} bound the run"),
        confidence,
        evidence: vec![Evidence {
            metric: "cpu_busy_pct{cpu=0}".into(),
            window_s: Some((1.0, 9.5)),
            value: Some(99.7),
            unit: Some(netceil_model::Unit::Percent),
            text: "cpu 0 at 99.7 % busy".into(),
        }],
        alternatives: vec!["socket buffer: no RcvbufErrors".into()],
        advice: vec![Advice {
            knob: "net.core.rmem_max".into(),
            expect: "fewer drops".into(),
            caveat: Some("more memory".into()),
        }],
        next: None,
        not_checked: vec!["kernel lock contention: no lock probe ran".into()],
    }
}

/// A part of a suite: a complete small run of its own.
fn part(id: &str, kind: WorkloadKind, rows: usize) -> Run {
    let mut p = Run::new(id, RunSource::Live);
    p.workload = Some(Workload {
        kind,
        params: Default::default(),
    });
    p.meta.started_unix_s = 1_795_302_903.25;
    p.meta.netceil_version = "0.1.0".into();
    p.meta.complete = true;
    p.series = rich_series(rows, 1.0);
    p.results = Some(results(0.5));
    p.notes = vec![format!("part {id}")];
    p
}

/// A complete suite run with everything the model can hold.
pub fn rich_run(run_id: &str) -> Run {
    let mut run = Run::new(
        run_id,
        RunSource::Imported {
            format: "vmstat".into(),
            file: "/tmp/msk2.log".into(),
        },
    );
    let mut params = serde_json::Map::new();
    params.insert("size".into(), serde_json::json!(1472));
    params.insert("rate".into(), serde_json::json!("200k"));
    params.insert("ratio".into(), serde_json::json!(0.1 + 0.2));
    run.workload = Some(Workload::typed(WorkloadKind::Suite, &params));
    run.meta.labels = BTreeMap::from([
        ("nic".to_string(), "msk".to_string()),
        ("bridge".to_string(), "no".to_string()),
    ]);
    run.meta.started_unix_s = 1_795_302_902.123_456_7;
    run.meta.netceil_version = "0.1.0".into();
    run.meta.complete = true;
    run.meta.host = HostInfo {
        hostname: Some("box".into()),
        os: Some("Linux".into()),
        kernel: Some("6.12.0".into()),
        cpus: Some(4),
        nics: vec![NicInfo {
            name: "eth0".into(),
            driver: Some("msk".into()),
            speed_mbit: Some(1000),
            mtu: Some(1500),
            rx_queues: None,
            tx_queues: Some(1),
            virtual_device: Some(false),
        }],
        sched_autogroup: None,
    };
    // Learned only as the load threads start: the store must keep it like the rest of meta.
    run.meta.own_thread_ids = vec![31_337, 31_338, 4_194_303];
    run.series = rich_series(12, 1000.0);
    run.results = Some(results(1.0));
    run.parts = vec![
        part("part-udp", WorkloadKind::Udp, 4),
        part("part-tcp", WorkloadKind::Tcp, 0),
    ];
    run.locks = vec![
        LockStat {
            name: "rtentry".into(),
            caller: Some("route.c:123".into()),
            count: 42_000,
            contended: Some(1_200),
            wait_total_s: 0.75,
            wait_max_s: Some(0.002),
            hold_total_s: None,
            hold_max_s: Some(1e-6),
            kind: None,
            stack: Vec::new(),
        },
        LockStat {
            name: "&rq->__lock".into(),
            ..LockStat::default()
        },
    ];
    run.findings = vec![finding("socket_buffer", 0.4), finding("hot_cpu", 0.9)];
    run.notes = vec!["imported 12 of 13 lines".into(), "line 7: skipped".into()];
    run.knees.push(netceil_model::Knee {
        goal: None,
        size_bytes: 1070,
        point: "app".into(),
        loss_tolerance: 0.005,
        min_interval_us: Some(12.5),
        rate_pps: Some(80_000.0),
        bits_per_s: Some(80_000.0 * 1070.0 * 8.0),
        loss_ratio: Some(0.0012),
        trials: 17,
        generator_limited: false,
        verified: true,
        upper_pps: Some(81_000.0),
        stopped_by: Some("r.12 at 81.0 kpps: buffer_drops: …".into()),
        note: None,
    });
    run
}

/// An unfinished run as a live recorder starts it: meta only.
pub fn started_run(run_id: &str, labels: &[(&str, &str)]) -> Run {
    let mut run = Run::new(run_id, RunSource::Live);
    run.workload = Some(Workload {
        kind: WorkloadKind::Udp,
        params: Default::default(),
    });
    run.meta.started_unix_s = 1_795_302_902.0;
    run.meta.netceil_version = "0.1.0".into();
    run.series = Series::new(1.0);
    for (k, v) in labels {
        run.meta.labels.insert((*k).into(), (*v).into());
    }
    run
}

/// The values the kill -9 child and the concurrency test write in row `r`: `a` always,
/// `b` missing every third row, `c{cpu=1}` from row 2 on.
pub fn row_values(r: usize) -> Vec<(MetricId, Unit, Option<f64>)> {
    let mut v = vec![
        (
            MetricId::new("a"),
            Unit::PacketsPerSecond,
            Some(r as f64 * 1.5),
        ),
        (
            MetricId::new("b"),
            Unit::PerSecond,
            if matches!(r % 3, 0) {
                None
            } else {
                Some(-(r as f64))
            },
        ),
    ];
    if r >= 2 {
        v.push((
            MetricId::new("c").with("cpu", "1"),
            Unit::Percent,
            Some(0.1 * r as f64),
        ));
    }
    v
}

/// Checks that `series` holds exactly rows `0..rows` as [`row_values`] writes them.
pub fn assert_rows(series: &Series, rows: usize) {
    assert_eq!(series.len(), rows);
    let names: Vec<String> = series.metrics.iter().map(|m| m.id.to_string()).collect();
    assert_eq!(names, ["a", "b", "c{cpu=1}"][..names.len()]);
    for r in 0..rows {
        assert_eq!(series.t_s[r], (r + 1) as f64);
        for (id, unit, value) in row_values(r) {
            let m = series.get(&id).expect("metric stored");
            assert_eq!(m.unit, unit);
            assert_eq!(m.values[r], value, "{id} row {r}");
        }
    }
    if rows > 0 {
        let c = series.get(&MetricId::new("c").with("cpu", "1"));
        if rows > 2 {
            assert_eq!(c.unwrap().values[..2], [None, None]);
        }
    }
}
