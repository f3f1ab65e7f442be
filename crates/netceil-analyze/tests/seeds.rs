//! Acceptance tests: the five investigations of SEEDS.md, imported with netceil-import where
//! the seed is a log, and rebuilt as synthetic runs from the seed files' own numbers where the
//! seed is a table of quoted figures (§2 bridge, §5 Mint knees).

use netceil_analyze::{analyze, analyze_into, analyze_with, cause, cs_per_byte, phases, Options};
use netceil_import::{detect, import, ImportOptions};
use netceil_model::{
    names as n, Annotations, Finding, NicInfo, Results, Run, RunSource, Workload, WorkloadKind,
};

fn seed_text(name: &str) -> String {
    let path = format!(
        "{}/../../tests/fixtures/seeds/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn import_seed(name: &str, annotations: Annotations) -> Run {
    let text = seed_text(name);
    let format = detect(&text).unwrap_or_else(|why| panic!("{name}: no format: {why:?}"));
    let opts = ImportOptions {
        file: name.into(),
        annotations,
        ..Default::default()
    };
    import(format, &text, &opts)
        .unwrap_or_else(|e| panic!("{e}"))
        .run
}

fn throughput(bytes_per_s: f64) -> Annotations {
    Annotations {
        throughput_bits_per_s: Some(bytes_per_s * 8.0),
        ..Default::default()
    }
}

fn shown(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

fn evidence<'a>(f: &'a Finding, metric: &str) -> &'a netceil_model::Evidence {
    f.evidence
        .iter()
        .find(|e| e.metric == metric)
        .unwrap_or_else(|| panic!("no {metric} evidence in {f}"))
}

// §1: sk0 and msk2.

#[test]
fn sk0_is_interrupt_and_context_switch_bound() {
    let run = import_seed("freebsd-vmstat-sk0.txt", throughput(18e6));
    let findings = analyze(&run);
    let verdict = &findings[0];
    assert_eq!(
        verdict.cause,
        cause::INTERRUPT_BOUND,
        "{}",
        shown(&findings)
    );
    let cs = evidence(verdict, n::CS_PER_S).value.unwrap();
    assert!((25_000.0..=29_000.0).contains(&cs), "cs {cs}");
    let intr = evidence(verdict, n::INTR_PER_S).value.unwrap();
    assert!((12_000.0..=15_000.0).contains(&intr), "in {intr}");
    let idle = evidence(verdict, n::CPU_IDLE_PCT).value.unwrap();
    assert!((60.0..=70.0).contains(&idle), "idle {idle}");
    assert!(verdict.summary.contains("unsteady"), "{verdict}");
    assert!(verdict.summary.contains("1.90 per interrupt"), "{verdict}");
    assert!(verdict
        .advice
        .iter()
        .any(|a| a.knob.contains("int_holdoff")));
    assert!(verdict.alternatives[0].starts_with("CPU-bound ruled out"));
    // The averages cover the load phase: its window starts after the idle head.
    let (from, to) = evidence(verdict, n::CS_PER_S).window_s.unwrap();
    assert!(from >= 4.0 && to <= 62.0, "window {from}–{to}");
    println!("sk0:\n{}", shown(&findings));
}

#[test]
fn msk2_is_steadier_with_fewer_switches_per_byte_than_sk0() {
    let sk0 = import_seed("freebsd-vmstat-sk0.txt", throughput(18e6));
    let msk2 = import_seed("freebsd-vmstat-msk2.txt", throughput(35e6));
    let (a, b) = (cs_per_byte(&sk0).unwrap(), cs_per_byte(&msk2).unwrap());
    assert!(
        b.cs_per_byte.unwrap() < a.cs_per_byte.unwrap(),
        "{b:?} vs {a:?}"
    );
    assert!(b.cs_cv.unwrap() < a.cs_cv.unwrap(), "{b:?} vs {a:?}");
    assert!((22_000.0..=25_000.0).contains(&b.cs_per_s), "{b:?}");
    // sk0 moved about 670 B per switch, msk2 about 1.5 kB.
    assert!((600.0..750.0).contains(&a.bytes_per_cs.unwrap()), "{a:?}");
    assert!(
        (1_350.0..1_650.0).contains(&b.bytes_per_cs.unwrap()),
        "{b:?}"
    );
    let findings = analyze(&msk2);
    let f = findings
        .iter()
        .find(|f| f.cause == cause::INTERRUPT_BOUND)
        .expect("msk2 still shows the rates");
    assert!(f.summary.contains(" steady"), "{f}");
    let sk0_conf = analyze(&sk0)[0].confidence;
    assert!(f.confidence < sk0_conf, "{} vs {sk0_conf}", f.confidence);
    println!("msk2:\n{}", shown(&findings));
}

#[test]
fn seed_vmstat_phases_skip_the_idle_head_and_tail() {
    for (name, head, tail) in [
        ("freebsd-vmstat-sk0.txt", 4, 60),
        ("freebsd-vmstat-msk2.txt", 3, 47),
    ] {
        let run = import_seed(name, Annotations::default());
        let p = phases(&run.series);
        assert_eq!(p.key.as_ref().unwrap().name, n::CS_PER_S, "{name}");
        assert!(p.load.start >= head, "{name}: {p:?}");
        assert!(p.load.end <= tail, "{name}: {p:?}");
        assert!(p.load.len() >= 30, "{name}: {p:?}");
        assert!(!p.idle.is_empty() && !p.tail.is_empty(), "{name}: {p:?}");
    }
}

// §4: the route-refcount lock profile.

#[test]
fn lock_profile_names_rtentry_with_its_share_and_bge_next() {
    let run = import_seed(
        "freebsd-lockprof-route-refcount.txt",
        Annotations::default(),
    );
    let findings = analyze_with(
        &run,
        &Options {
            window_s: Some(30.0),
            cpus: Some(8),
        },
    );
    let f = &findings[0];
    assert_eq!(f.cause, cause::LOCK_CONTENTION, "{}", shown(&findings));
    for words in [
        "rtentry",
        "14.1 s",
        "over 3 call sites",
        "46.9 % of the 30 s",
        "5.86 % of the 240 CPU-seconds",
        "the next, bge1",
    ] {
        assert!(f.summary.contains(words), "'{words}' missing from: {f}");
    }
    assert!(f.alternatives.iter().any(|a| a.contains("turnstile chain")));
    println!("lockprof:\n{}", shown(&findings));

    // The same window and CPU count from the run's own metadata.
    let mut annotated = run.clone();
    annotated.meta.annotations.interval_s = Some(30.0);
    annotated.meta.host.cpus = Some(8);
    assert_eq!(analyze(&annotated)[0].summary, f.summary);

    // Without them the ranking still comes out, asking for the window.
    let bare = analyze(&run);
    assert!(bare[0].summary.contains("rtentry"));
    assert!(bare[0].next.as_deref().unwrap().contains("--interval"));
}

// §3: Erlang busy-wait.

#[test]
fn erlang_sbwt_sweep_shows_cpu_overstated_about_ten_times() {
    let run = import_seed("erlang-sbwt.csv", Annotations::default());
    let findings = analyze(&run);
    let f = &findings[0];
    assert_eq!(f.cause, cause::BUSY_WAIT, "{}", shown(&findings));
    assert!(
        f.summary
            .starts_with("OS CPU overstates the work about 10×"),
        "{f}"
    );
    assert!(
        f.summary.contains("sbwt=very_long") && f.summary.contains("sbwt=none"),
        "{f}"
    );
    assert!(f.advice[0].knob.contains("+sbwt none"));
    println!("erlang-sbwt:\n{}", shown(&findings));
}

#[test]
fn erlang_bench_table_shows_the_same_inflation() {
    let run = import_seed("erlang-bench-util-sar.txt", Annotations::default());
    let findings = analyze(&run);
    assert_eq!(findings[0].cause, cause::BUSY_WAIT, "{}", shown(&findings));
    assert!(findings[0].summary.contains("about 4×"), "{}", findings[0]);
    println!("erlang-bench:\n{}", shown(&findings));
}

#[test]
fn erlang_wall_time_snapshots_report_effective_utilization_without_claiming_more() {
    let run = import_seed("erlang-scheduler-wall-time.txt", Annotations::default());
    let findings = analyze(&run);
    assert_eq!(findings.len(), 1, "{}", shown(&findings));
    let f = &findings[0];
    assert_eq!(f.cause, cause::NO_CEILING);
    assert!(
        f.summary.contains("0.00106 %") && f.summary.contains("scheduler 2: 0.00409 %"),
        "{f}"
    );
    assert!(f.next.as_deref().unwrap().contains("+sbwt"));
    println!("erlang-wall-time:\n{}", shown(&findings));
}

// §2: the bridge's arithmetic.

/// The bridge figures from freebsd-bridge.csv: a suite whose first part measured the
/// forwarding rate with small frames and whose second carried iperf TCP through the bridge
/// on a 40 GbE link with a 1500-byte MTU.
fn bridge_run() -> Run {
    let table = import_seed("freebsd-bridge.csv", Annotations::default());
    let value = table.series.total("value").expect("value column");
    let (mpps, gbits) = (value.values[0].unwrap(), value.values[4].unwrap());
    assert!(table
        .notes
        .iter()
        .any(|n| n.contains("row 1") && n.contains("Mpps")));
    assert!(table
        .notes
        .iter()
        .any(|n| n.contains("row 5") && n.contains("Gbit/s")));

    let mut top = Run::new(
        "bridge",
        RunSource::Imported {
            format: "synthetic".into(),
            file: "freebsd-bridge.csv".into(),
        },
    );
    top.meta.annotations.link_bits_per_s = Some(40e9);
    top.meta.host.os = Some("FreeBSD".into());
    top.meta.host.nics = vec![NicInfo {
        name: "mlxen0".into(),
        mtu: Some(1500),
        ..Default::default()
    }];
    let mut forwarding = Run::new("bridge.1", RunSource::Live);
    forwarding.workload = Some(Workload {
        kind: WorkloadKind::Udp,
        params: Default::default(),
    });
    forwarding.results = Some(Results {
        duration_s: 10.0,
        payload_bytes: Some(18),
        frame_bytes: Some(64),
        tx_packets: (mpps * 1e7) as u64,
        tx_pps: mpps * 1e6,
        rx_app_packets: (mpps * 1e7) as u64,
        rx_app_pps: mpps * 1e6,
        ..Default::default()
    });
    let mut iperf = Run::new("bridge.2", RunSource::Live);
    iperf.workload = Some(Workload {
        kind: WorkloadKind::Tcp,
        params: Default::default(),
    });
    iperf.results = Some(Results {
        duration_s: 10.0,
        tx_bytes: (gbits * 1e9 / 8.0 * 10.0) as u64,
        tx_bits_per_s: gbits * 1e9,
        rx_app_bytes: (gbits * 1e9 / 8.0 * 10.0) as u64,
        rx_app_bits_per_s: gbits * 1e9,
        ..Default::default()
    });
    top.parts = vec![forwarding, iperf];
    top
}

#[test]
fn bridge_arithmetic_says_neither_link_nor_packet_rate_binds() {
    let findings = analyze(&bridge_run());
    let f = &findings[0];
    assert_eq!(f.cause, cause::LINK_HEADROOM, "{}", shown(&findings));
    for words in [
        "Neither the link nor the packet rate bound this run",
        "the 40.0 Gbit/s link allows 37.7 Gbit/s",
        "the 3.70 Mpps packet rate allows 42.9 Gbit/s (44.4 Gbit/s counting whole 1500-B IP packets)",
        "the run reached 3.50 Gbit/s",
        "9.29 % of the lower (link)",
        "something else binds first",
    ] {
        assert!(f.summary.contains(words), "'{words}' missing from:\n{f}");
    }
    assert!(
        f.evidence
            .iter()
            .any(|e| e.text.contains("40.0 Gbit/s × 1448/1538")),
        "{f}"
    );
    println!("bridge:\n{}", shown(&findings));
}

// §5: Mint knees.

/// One column of an imported table by name.
fn col(run: &Run, name: &str) -> Vec<Option<f64>> {
    run.series
        .total(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .values
        .clone()
}

/// A sweep of injection intervals per packet size, shaped as the Mint report describes: below
/// a size-dependent interval almost everything is lost, then success rises linearly to 100 % at
/// the first-100 % interval of mint-knee-driver.csv (driver) and mint-knee-app.csv (application).
/// One cycle is 5000 packets; its length is 5000 × interval plus the fixed cost the driver
/// table implies at its knee.
fn mint_sweep() -> Run {
    let driver = import_seed("mint-knee-driver.csv", Annotations::default());
    let app = import_seed("mint-knee-app.csv", Annotations::default());
    let (sizes, d_knee, d_cycle) = (
        col(&driver, "size_kib"),
        col(&driver, "min_interval_us"),
        col(&driver, "cycle_us"),
    );
    let (a_sizes, a_knee) = (col(&app, "size_kib"), col(&app, "min_interval_us"));
    let success = |interval: f64, knee: f64| {
        let cliff = knee - 0.5;
        if interval >= knee - 1e-9 {
            1.0
        } else if interval < cliff {
            0.02
        } else {
            0.02 + 0.98 * (interval - cliff) / (knee - cliff)
        }
    };
    let mut top = Run::new(
        "mint",
        RunSource::Imported {
            format: "synthetic".into(),
            file: "mint-knee-*.csv".into(),
        },
    );
    top.meta.annotations = Annotations {
        link_bits_per_s: Some(1e9),
        bus: Some("PCIe1.1x1".into()),
        bus_bits_per_s: Some(2.5e9),
        ..Default::default()
    };
    for (row, size) in sizes.iter().enumerate() {
        let (Some(size), Some(knee), Some(cycle)) = (size, d_knee[row], d_cycle[row]) else {
            continue;
        };
        let app_row = a_sizes
            .iter()
            .position(|s| *s == Some(*size))
            .expect("same sizes in both tables");
        let app_knee = a_knee[app_row].unwrap();
        let fixed_us = cycle - 5000.0 * knee;
        let payload = (size * 1024.0) as usize;
        for tenth in 30..=130 {
            let interval = f64::from(tenth) / 10.0;
            let cycle_s = (5000.0 * interval + fixed_us) / 1e6;
            let kernel = (5000.0 * success(interval, knee)).round() as u64;
            let got = (5000.0 * success(interval, app_knee))
                .round()
                .min(kernel as f64) as u64;
            let mut part = Run::new(format!("mint.{size}.{tenth}"), RunSource::Live);
            part.workload = Some(Workload {
                kind: WorkloadKind::Udp,
                params: Default::default(),
            });
            part.results = Some(Results {
                duration_s: cycle_s,
                payload_bytes: Some(payload),
                tx_packets: 5000,
                tx_pps: 5000.0 / cycle_s,
                requested_pps: Some(1e6 / interval),
                rx_kernel_packets: Some(kernel),
                rx_app_packets: got,
                rx_app_pps: got as f64 / cycle_s,
                rx_app_bits_per_s: got as f64 * payload as f64 * 8.0 / cycle_s,
                ..Default::default()
            });
            top.parts.push(part);
        }
    }
    top
}

#[test]
fn mint_knees_per_size_in_binary_units_against_link_and_bus() {
    let findings = analyze(&mint_sweep());
    let f = &findings[0];
    assert_eq!(f.cause, cause::KNEE, "{}", shown(&findings));
    for words in [
        "16 KiB: kernel up to 156 kpps (a packet every 6.40 µs) = 20.2 Gbit/s (18.8 Gibit/s)",
        "application up to 90.1 kpps (a packet every 11.1 µs)",
        "1 KiB: kernel up to 233 kpps (a packet every 4.30 µs)",
        "(10.9 Gibit/s)",
        "8× the PCIe1.1x1 bus (2.50 Gbit/s)",
    ] {
        assert!(f.summary.contains(words), "'{words}' missing from: {f}");
    }
    assert!(f.confidence >= 0.85, "{}", f.confidence);
    println!("mint:\n{}", f);
}

// No rule on an idle machine; analyze_into.

#[test]
fn real_idle_watch_claims_no_ceiling() {
    // `netceil watch --duration 3 --json` on this machine while others compiled: the CPUs were
    // busy, the network idle.
    let path = format!(
        "{}/tests/fixtures/idle-watch-busy-cpu.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let run: Run = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let findings = analyze(&run);
    assert_eq!(findings.len(), 1, "{}", shown(&findings));
    assert_eq!(findings[0].cause, cause::NO_LOAD, "{}", shown(&findings));
    assert!(
        findings[0]
            .summary
            .contains("the CPU was 100 % busy with other work"),
        "{}",
        findings[0]
    );
    println!("idle watch:\n{}", shown(&findings));
}

#[test]
fn analyze_into_fills_parts_and_top() {
    let mut run = bridge_run();
    analyze_into(&mut run);
    assert!(!run.findings.is_empty());
    assert!(run.parts.iter().all(|p| !p.findings.is_empty()));
    let json = serde_json::to_value(&run).unwrap();
    let f = &json["findings"][0];
    for key in ["cause", "confidence", "evidence", "advice"] {
        assert!(!f[key].is_null(), "findings[0].{key} missing in JSON");
    }
}
