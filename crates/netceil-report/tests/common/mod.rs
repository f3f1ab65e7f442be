//! Runs built for the tests: one with every field set, and vmstat-like runs after SEEDS §1.
#![allow(dead_code)] // each test file uses a different subset

use std::collections::BTreeMap;

use netceil_model::{
    names as n, Advice, Annotations, Evidence, Finding, FlowResult, GeneratorStats, HostInfo,
    KernelDelivery, LatencySummary, LockStat, MetricId, NicInfo, PacingMode, Results, Run, RunMeta,
    RunSource, Series, TcpPacing, Unit, Workload, WorkloadKind,
};

pub fn all_sources() -> Vec<RunSource> {
    vec![
        RunSource::Live,
        RunSource::Watched { command: None },
        RunSource::Watched {
            command: Some(vec!["iperf3".into(), "-c".into(), "127.0.0.1".into()]),
        },
        RunSource::Imported {
            format: "freebsd-vmstat".into(),
            file: "sk0.txt".into(),
        },
    ]
}

fn full_series() -> Series {
    let mut s = Series::new(1.0);
    for (i, t) in [1.0, 2.0, 3.0, 4.0].into_iter().enumerate() {
        s.push_row(t);
        let f = i as f64;
        s.set(
            &MetricId::new(n::CS_PER_S),
            Unit::PerSecond,
            20_000.0 + 100.0 * f,
        );
        s.set(
            &MetricId::new(n::INTR_PER_S),
            Unit::PerSecond,
            10_000.0 + 50.0 * f,
        );
        s.set(
            &MetricId::new(n::SOFTIRQ_NET_RX_PER_S),
            Unit::PerSecond,
            8_000.0,
        );
        s.set(
            &MetricId::new(n::LOAD_RX_BITS_PER_S),
            Unit::BitsPerSecond,
            1e9 + 1e7 * f,
        );
        s.set(
            &MetricId::new(n::LOAD_TX_PPS),
            Unit::PacketsPerSecond,
            90_000.0,
        );
        s.set(
            &MetricId::new(n::LOAD_RX_PPS),
            Unit::PacketsPerSecond,
            85_000.0,
        );
        s.set(&MetricId::new(n::CPU_BUSY_PCT), Unit::Percent, 40.0 + f);
        for cpu in 0..2 {
            let c = cpu.to_string();
            s.set(
                &MetricId::new(n::CPU_BUSY_PCT).with(n::LABEL_CPU, &c),
                Unit::Percent,
                30.0 + 20.0 * cpu as f64 + f,
            );
            s.set(
                &MetricId::new(n::CPU_SYSTEM_PCT).with(n::LABEL_CPU, &c),
                Unit::Percent,
                20.0 + f,
            );
            s.set(
                &MetricId::new(n::CPU_SOFTIRQ_PCT).with(n::LABEL_CPU, &c),
                Unit::Percent,
                10.0,
            );
        }
        if i != 2 {
            // A gap: row 2 was not measured.
            s.set(
                &MetricId::new(n::UDP_RCVBUF_ERRORS_PER_S),
                Unit::PerSecond,
                5.0 * f,
            );
        }
        s.set(
            &MetricId::new(n::IFACE_RX_BITS_PER_S).with(n::LABEL_IFACE, "veth0"),
            Unit::BitsPerSecond,
            1.1e9,
        );
    }
    s.note_missing(n::PSI_CPU_SOME_PCT, "no /proc/pressure <kernel 4.19>");
    s
}

fn full_results() -> Results {
    Results {
        duration_s: 4.0,
        payload_bytes: Some(1472),
        frame_bytes: Some(1518),
        tx_packets: 360_000,
        tx_bytes: 529_920_000,
        tx_pps: 90_000.0,
        tx_bits_per_s: 1.06e9,
        requested_pps: Some(100_000.0),
        rx_app_packets: 340_000,
        rx_app_bytes: 500_480_000,
        rx_app_pps: 85_000.0,
        rx_app_bits_per_s: 1.0e9,
        rx_kernel_packets: Some(355_000),
        kernel: KernelDelivery {
            iface_rx_packets: Some(355_000),
            iface: Some("veth0".into()),
            socket_drops: Some(15_000),
            udp_rcvbuf_errors: Some(15_000),
            udp_in_errors: Some(15_000),
            udp_sndbuf_errors: Some(0),
            backlog_drops: Some(5_000),
        },
        lost_packets: 20_000,
        reordered_packets: 3,
        duplicate_packets: 1,
        in_flight_packets: 0,
        unexplained_packets: -2,
        generator_limited: true,
        generator: GeneratorStats {
            pacing: Some(PacingMode::Spin),
            achieved_ratio: Some(0.9),
            cpu_s: 4.0,
            spin_cpu_s: 1.0,
            work_cpu_s: 3.0,
            cpu_pct: 100.0,
            send_gap_error_median_us: Some(0.8),
            send_gap_error_p99_us: Some(12.0),
            late_sends: 17,
            send_errors: 2,
        },
        latency_us: Some(LatencySummary {
            p50: 9.5,
            p90: 13.7,
            p99: 26.7,
            p999: 545.3,
            max: 8503.3,
            min: 6.6,
            mean: 13.1,
            count: 218_188,
        }),
        service_us: None,
        transactions_per_s: Some(72_729.0),
        closed_loop_in_flight: Some(1),
        rcvbuf_bytes: Some(8 << 20),
        receiver_cpu_pct: None,
        flows: vec![FlowResult {
            flow: 0,
            bytes: 500_480_000,
            bits_per_s: 1.0e9,
            retransmits: Some(9),
            segments_out: None,
            rtt_us: Some(141.0),
        }],
        directions: vec![],
        rrul: None,
        tcp_pacing: Some(TcpPacing::Kernel),
        tcp_rcvbuf_bytes: Some(1 << 20),
        notes: vec!["receive buffer: 8 MiB granted".into()],
        far: None,
    }
}

fn finding() -> Finding {
    Finding {
        cause: "socket_buffer".into(),
        summary: "The receive socket buffer overflowed <rmem_max too small>".into(),
        confidence: 0.8,
        evidence: vec![Evidence {
            metric: "udp_rcvbuf_errors_per_s".into(),
            window_s: Some((1.0, 4.0)),
            value: Some(5000.0),
            unit: Some(netceil_model::Unit::PerSecond),
            text: "5000 datagrams/s dropped at the socket".into(),
        }],
        alternatives: vec!["backlog drops: 5000 over the run, ruled out as the main loss".into()],
        advice: vec![Advice {
            knob: "net.core.rmem_max".into(),
            expect: "fewer socket drops".into(),
            caveat: Some("more memory per socket".into()),
        }],
        next: Some("measure with --rcvbuf 16M".into()),
        not_checked: vec!["the far end's kernel counters <not reported>".into()],
    }
}

/// A Run with every field set, every option `Some` and every list non-empty.
pub fn full_run() -> Run {
    let mut params = serde_json::Map::new();
    params.insert("payload_bytes".into(), 1472.into());
    params.insert("rate".into(), serde_json::Value::Null);
    params.insert("parts".into(), serde_json::json!(["udp", "tcp"]));
    let part = {
        let mut p = Run::new("r-full.1", RunSource::Live);
        p.workload = Some(Workload {
            kind: WorkloadKind::Tcp,
            params: Default::default(),
        });
        p.series = full_series();
        p.results = Some(full_results());
        p
    };
    Run {
        knees: Vec::new(),
        confirmations: Vec::new(),
        run_id: "r-full".into(),
        source: RunSource::Watched {
            command: Some(vec!["iperf3".into(), "-s".into()]),
        },
        workload: Some(Workload::typed(WorkloadKind::Udp, &params)),
        meta: RunMeta {
            labels: BTreeMap::from([
                ("nic".to_string(), "msk0".to_string()),
                ("note".to_string(), "<b>bold</b> & 'quoted'".to_string()),
            ]),
            started_unix_s: 1_795_302_902.0,
            host: HostInfo {
                hostname: Some("lab1".into()),
                os: Some("Linux".into()),
                kernel: Some("6.18.0".into()),
                cpus: Some(2),
                nics: vec![NicInfo {
                    name: "veth0".into(),
                    driver: Some("veth".into()),
                    speed_mbit: Some(10_000),
                    mtu: Some(1500),
                    rx_queues: Some(2),
                    tx_queues: Some(2),
                    virtual_device: Some(true),
                }],
                sched_autogroup: Some(true),
            },
            netceil_version: "0.1.0".into(),
            complete: true,
            sampler_cpu_s: Some(0.02),
            sampler_cpu_pct: Some(0.5),
            annotations: Annotations {
                throughput_bits_per_s: Some(1e9),
                link_bits_per_s: Some(10e9),
                bus: Some("PCIe1.1x1".into()),
                bus_bits_per_s: Some(2e9),
                interval_s: Some(1.0),
            },
            own_thread_ids: vec![4242, 4243],
            workload_cpus: Some(vec![0]),
            cpu_quota: Some(netceil_model::CpuQuota {
                cgroup: "/lab".into(),
                cpus: 0.5,
                used_cpus: Some(0.49),
                throttled_pct: Some(60.0),
            }),
            implausible: vec![netceil_model::Implausible {
                line: Some(3),
                what: "CPU 0 appears again at line 3 inside the block that began at line 1".into(),
            }],
            locks_window_s: Some(9.5),
        },
        series: full_series(),
        results: Some(full_results()),
        parts: vec![part],
        locks: vec![
            LockStat {
                name: "rtentry".into(),
                caller: Some("route.c:412".into()),
                count: 1_000_000,
                contended: Some(400_000),
                wait_total_s: 14.2,
                wait_max_s: Some(0.003),
                hold_total_s: Some(3.0),
                hold_max_s: Some(0.001),
                kind: None,
                stack: Vec::new(),
            },
            LockStat {
                name: "bge0 <driver lock>".into(),
                caller: None,
                count: 10,
                contended: None,
                wait_total_s: 0.5,
                wait_max_s: None,
                hold_total_s: None,
                hold_max_s: None,
                kind: None,
                stack: Vec::new(),
            },
        ],
        findings: vec![finding()],
        notes: vec!["imported: 2 lines skipped <garbage>".into()],
    }
}

/// Deterministic noise in [-1, 1] (a 64-bit LCG), so tests never flake.
pub struct Noise(u64);

impl Noise {
    pub fn new(seed: u64) -> Self {
        Noise(seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1))
    }
    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
}

/// How a vmstat-like run is made: cs per second under load, and the throughput.
pub struct VmstatShape {
    pub cs_mean: f64,
    /// Half-width of the uniform fluctuation around the mean.
    pub cs_jitter: f64,
    /// Every `dip_every` rows cs drops by `dip` (sk0's dips to ~22 k/s).
    pub dip_every: usize,
    pub dip: f64,
    pub sys_pct: f64,
    pub throughput_bytes_per_s: f64,
    /// Put throughput in the series (true) or only in the meta label, as an import would.
    pub throughput_in_series: bool,
    pub seed: u64,
}

/// sk0 after SEEDS §1: cs 25–29 k/s and fluctuating, 18 MB/s, CPU 60–70 % idle.
pub fn sk0(throughput_in_series: bool) -> VmstatShape {
    VmstatShape {
        cs_mean: 27_000.0,
        cs_jitter: 2_000.0,
        dip_every: 6,
        dip: 5_000.0,
        sys_pct: 30.0,
        throughput_bytes_per_s: 18e6,
        throughput_in_series,
        seed: 1,
    }
}

/// msk2 after SEEDS §1: cs steady near 24 k/s, 35 MB/s, higher sys %.
pub fn msk2(throughput_in_series: bool) -> VmstatShape {
    VmstatShape {
        cs_mean: 24_000.0,
        cs_jitter: 400.0,
        dip_every: 0,
        dip: 0.0,
        sys_pct: 45.0,
        throughput_bytes_per_s: 35e6,
        throughput_in_series,
        seed: 2,
    }
}

/// A one-CPU vmstat-like run: 4 idle seconds, then 25 seconds of load.
pub fn vmstat_run(id: &str, shape: &VmstatShape) -> Run {
    let mut run = Run::new(
        id,
        RunSource::Imported {
            format: "freebsd-vmstat".into(),
            file: format!("{id}.txt"),
        },
    );
    run.meta.host.cpus = Some(1);
    run.meta.labels.insert("nic".into(), id.into());
    if !shape.throughput_in_series {
        run.meta.labels.insert(
            netceil_report::LABEL_THROUGHPUT_BYTES_PER_S.into(),
            shape.throughput_bytes_per_s.to_string(),
        );
    }
    let mut noise = Noise::new(shape.seed);
    let mut s = Series::new(1.0);
    for row in 0..29usize {
        s.push_row((row + 1) as f64);
        let loaded = row >= 4;
        let (cs, sys, bytes) = if loaded {
            let mut cs = shape.cs_mean + shape.cs_jitter * noise.next();
            if shape.dip_every > 0 && row % shape.dip_every == 0 {
                cs -= shape.dip;
            }
            let bytes = shape.throughput_bytes_per_s * (1.0 + 0.02 * noise.next());
            (cs, shape.sys_pct + 3.0 * noise.next(), bytes)
        } else {
            (300.0 + 10.0 * noise.next(), 1.0, 0.0)
        };
        s.set(&MetricId::new(n::CS_PER_S), Unit::PerSecond, cs);
        // cs ≈ 1.9 × interrupts on these boxes.
        s.set(&MetricId::new(n::INTR_PER_S), Unit::PerSecond, cs / 1.9);
        s.set(&MetricId::new(n::CPU_SYSTEM_PCT), Unit::Percent, sys);
        s.set(&MetricId::new(n::CPU_BUSY_PCT), Unit::Percent, sys + 0.5);
        if shape.throughput_in_series {
            s.set(
                &MetricId::new(n::IFACE_RX_BITS_PER_S).with(n::LABEL_IFACE, id),
                Unit::BitsPerSecond,
                bytes * 8.0,
            );
        }
    }
    run.series = s;
    run
}

/// A sweep as `netceil sweep udp` stores it: knees, and one part per cycle.
pub fn sweep_run() -> Run {
    use netceil_model::params::SweepCycleParams;
    use netceil_model::{Knee, Results, RunSource, Workload, WorkloadKind};
    let mut run = Run::new("sweep-1", RunSource::Live);
    run.workload = Some(Workload {
        kind: WorkloadKind::Search,
        params: Default::default(),
    });
    for (i, (interval_ns, rx)) in [(0.0, 4_000u64), (5_000.0, 4_900), (10_000.0, 5_000)]
        .into_iter()
        .enumerate()
    {
        let mut p = Run::new(format!("sweep-1.{}", i + 1), RunSource::Live);
        p.workload = Some(Workload::typed(
            WorkloadKind::Udp,
            &SweepCycleParams {
                payload_bytes: 8192,
                interval_ns,
                count: 5_000,
                cycle: 0,
                target: None,
            },
        ));
        p.results = Some(Results {
            tx_packets: 5_000,
            rx_app_packets: rx,
            ..Default::default()
        });
        run.parts.push(p);
    }
    run.knees.push(Knee {
        goal: None,
        size_bytes: 8192,
        point: "app".into(),
        loss_tolerance: 0.0,
        min_interval_us: Some(10.0),
        rate_pps: Some(100_000.0),
        bits_per_s: Some(6.5e9),
        loss_ratio: Some(0.0),
        trials: 3,
        generator_limited: false,
        verified: true,
        upper_pps: None,
        stopped_by: None,
        note: Some("<knee> & note".into()),
    });
    run
}
