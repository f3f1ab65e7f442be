//! The A/B comparison on runs shaped like SEEDS §1 (sk0 vs msk2), on the real vmstat logs,
//! and on identical runs.

mod common;

use common::{msk2, sk0, vmstat_run, VmstatShape};
use netceil_model::{names as n, MetricId, Run, RunSource, Series, Unit};
use netceil_report::{compare, compare_markdown, compare_table, load_phase, Comparison};

fn difference<'a>(c: &'a Comparison, key: &str) -> &'a netceil_report::Difference {
    c.differences
        .iter()
        .find(|d| d.key == key)
        .unwrap_or_else(|| panic!("no difference for {key}: {:#?}", c.differences))
}

fn distribution<'a>(c: &'a Comparison, key: &str) -> &'a netceil_report::DistributionRow {
    c.distributions
        .iter()
        .find(|d| d.key == key)
        .unwrap_or_else(|| panic!("no distribution for {key}"))
}

fn figure<'a>(figs: &'a [netceil_report::Figure], key: &str) -> &'a netceil_report::Figure {
    figs.iter()
        .find(|f| f.key == key)
        .unwrap_or_else(|| panic!("no figure {key}: {figs:#?}"))
}

/// msk2 must show fewer context switches per byte, steadier, and significantly so.
fn assert_msk2_beats_sk0(c: &Comparison) {
    let bpcs = figure(&c.normalized, "bytes_per_cs");
    let (a, b) = (bpcs.a.unwrap(), bpcs.b.unwrap());
    assert!(b > 1.5 * a, "bytes per cs: sk0 {a}, msk2 {b}");

    let cs = distribution(c, "cs_per_s");
    let (cv_a, cv_b) = (
        cs.a.as_ref().unwrap().cv.unwrap(),
        cs.b.as_ref().unwrap().cv.unwrap(),
    );
    assert!(cv_b < cv_a / 2.0, "cs CV: sk0 {cv_a}, msk2 {cv_b}");
    let per_byte = distribution(c, "bytes_per_cs");
    let (pa, pb) = (
        per_byte.a.as_ref().unwrap().cv.unwrap(),
        per_byte.b.as_ref().unwrap().cv.unwrap(),
    );
    assert!(pb < pa, "bytes/cs CV: sk0 {pa}, msk2 {pb}");

    let d = difference(c, "cs_per_s");
    let t = d.test.as_ref().unwrap();
    assert_eq!(d.significant, Some(true), "{t:?}");
    assert!(
        t.difference < 0.0 && t.ci_high < 0.0,
        "msk2 has fewer cs/s: {t:?}"
    );
    let d = difference(c, "bytes_per_cs");
    assert_eq!(d.significant, Some(true));
    assert!(d.test.as_ref().unwrap().ci_low > 0.0);

    assert!(
        c.method.contains("Welch"),
        "the method is named: {}",
        c.method
    );
    assert!(
        c.summary
            .iter()
            .any(|s| s.starts_with("context switches: B was steadier")),
        "{:#?}",
        c.summary
    );
}

#[test]
fn msk2_has_fewer_and_steadier_cs_per_byte_throughput_in_series() {
    let a = vmstat_run("sk0", &sk0(true));
    let b = vmstat_run("msk2", &msk2(true));
    let c = compare(&a, &b);
    assert_msk2_beats_sk0(&c);
    // The idle seconds before the transfer are not part of the load phase.
    assert_eq!((c.a.load_phase.rows, c.a.load_phase.total_rows), (25, 29));
    assert!(c
        .a
        .load_phase
        .rule
        .contains("iface_rx_bits_per_s{iface=sk0}"));
    let thr = figure(&c.headline, "throughput_bits_per_s");
    assert!((thr.a.unwrap() / 8.0 - 18e6).abs() < 0.5e6, "{thr:?}");
    assert!(thr.change_pct.unwrap() > 80.0);
    // CPU per Gbit: sk0 spends 30 % of a core on 0.144 Gbit/s, msk2 45 % on 0.28.
    let cost = figure(&c.normalized, "cpu_s_per_gbit");
    assert!(cost.b.unwrap() < cost.a.unwrap(), "{cost:?}");
}

#[test]
fn msk2_has_fewer_and_steadier_cs_per_byte_throughput_from_label() {
    let a = vmstat_run("sk0", &sk0(false));
    let b = vmstat_run("msk2", &msk2(false));
    let c = compare(&a, &b);
    assert_msk2_beats_sk0(&c);
    let bpcs = figure(&c.normalized, "bytes_per_cs");
    assert!(bpcs
        .source_a
        .as_deref()
        .unwrap()
        .contains("label throughput_bytes_per_s"));
    // The load phase falls back to the interrupt rate: no throughput in the series.
    assert!(
        c.a.load_phase.rule.contains("intr_per_s"),
        "{}",
        c.a.load_phase.rule
    );
    assert_eq!(c.a.load_phase.rows, 25);
    assert!(c
        .notes
        .iter()
        .any(|n| n.contains("label throughput_bytes_per_s")));
}

#[test]
fn identical_runs_show_no_significant_difference() {
    let a = vmstat_run("sk0", &sk0(true));
    let c = compare(&a, &a.clone());
    assert!(!c.differences.is_empty());
    for d in &c.differences {
        let t = d.test.as_ref().unwrap();
        assert_eq!(d.significant, Some(false), "{}: {t:?}", d.key);
        assert!((t.p_value - 1.0).abs() < 1e-12);
        assert!(t.ci_low <= 0.0 && t.ci_high >= 0.0);
    }
    assert!(c.normalized.iter().all(|f| f.change_pct == Some(0.0)));
}

#[test]
fn same_behaviour_different_noise_is_not_significant() {
    let a = vmstat_run("sk0", &sk0(true));
    let b = vmstat_run(
        "sk0-again",
        &VmstatShape {
            seed: 99,
            ..sk0(true)
        },
    );
    let c = compare(&a, &b);
    let d = difference(&c, "cs_per_s");
    assert_eq!(d.significant, Some(false), "{:?}", d.test);
}

/// The two FreeBSD vmstat logs of the seed investigation, read with a minimal parser of
/// the `in`, `cs`, `us`, `sy` columns (the importers issue brings the real importer).
fn seed_log(file: &str, throughput_mb_s: f64) -> Run {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/seeds")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut run = Run::new(
        file,
        RunSource::Imported {
            format: "freebsd-vmstat".into(),
            file: file.into(),
        },
    );
    run.meta.host.cpus = Some(1);
    run.meta.labels.insert(
        netceil_report::LABEL_THROUGHPUT_BYTES_PER_S.into(),
        (throughput_mb_s * 1e6).to_string(),
    );
    let mut s = Series::new(1.0);
    for line in text.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() != 19 || cols[0].parse::<u32>().is_err() {
            continue; // headers
        }
        let num = |i: usize| cols[i].parse::<f64>().unwrap();
        s.push_row((s.len() + 1) as f64);
        s.set(&MetricId::new(n::INTR_PER_S), Unit::PerSecond, num(13));
        s.set(&MetricId::new(n::CS_PER_S), Unit::PerSecond, num(15));
        s.set(
            &MetricId::new(n::CPU_BUSY_PCT),
            Unit::Percent,
            num(16) + num(17),
        );
    }
    assert!(s.len() > 20, "{file}: too few rows parsed");
    run.series = s;
    run
}

#[test]
fn seed_vmstat_logs_show_msk2_with_fewer_and_steadier_cs() {
    let a = seed_log("freebsd-vmstat-sk0.txt", 18.0);
    let b = seed_log("freebsd-vmstat-msk2.txt", 35.0);
    let c = compare(&a, &b);
    let cs = distribution(&c, "cs_per_s");
    let (da, db) = (cs.a.as_ref().unwrap(), cs.b.as_ref().unwrap());
    assert!(
        db.median < da.median,
        "msk2 median cs {} vs sk0 {}",
        db.median,
        da.median
    );
    assert!(
        db.cv.unwrap() < da.cv.unwrap(),
        "CV msk2 {:?} sk0 {:?}",
        db.cv,
        da.cv
    );
    let d = difference(&c, "cs_per_s");
    assert_eq!(d.significant, Some(true), "{:?}", d.test);
    let bpcs = figure(&c.normalized, "bytes_per_cs");
    assert!(bpcs.b.unwrap() > 1.5 * bpcs.a.unwrap(), "{bpcs:?}");
}

#[test]
fn load_phase_rules() {
    let run = vmstat_run("sk0", &sk0(true));
    let phase = load_phase(&run);
    assert_eq!(phase.rows, (4..29).collect::<Vec<_>>());
    assert_eq!(
        phase.metric.as_deref(),
        Some("iface_rx_bits_per_s{iface=sk0}")
    );
    // Nothing to tell load from idle: every row counts.
    let mut bare = Run::new("bare", RunSource::Live);
    bare.series.push_row(1.0);
    bare.series
        .set(&MetricId::new(n::CPU_BUSY_PCT), Unit::Percent, 5.0);
    bare.series.push_row(2.0);
    let phase = load_phase(&bare);
    assert_eq!((phase.rows, phase.metric), (vec![0, 1], None));
}

#[test]
fn custom_phase_function_is_used() {
    let a = vmstat_run("sk0", &sk0(true));
    let b = vmstat_run("msk2", &msk2(true));
    let c = netceil_report::compare_with(&a, &b, |run| netceil_report::LoadPhase {
        rows: (0..run.series.len()).collect(),
        rule: "every row".into(),
        metric: None,
    });
    assert_eq!(c.a.load_phase.rows, 29);
    assert_eq!(c.a.load_phase.rule, "every row");
}

#[test]
fn findings_in_only_one_run_are_named() {
    let mut a = common::full_run();
    let b = common::full_run();
    a.findings[0].cause = "hot_cpu".into();
    let c = compare(&a, &b);
    assert_eq!(c.findings.only_a.len(), 1);
    assert_eq!(c.findings.only_a[0].cause, "hot_cpu");
    assert_eq!(c.findings.only_b[0].cause, "socket_buffer");
    assert!(c.findings.both.is_empty());
    let same = compare(&b, &b);
    assert_eq!(same.findings.both, vec!["socket_buffer".to_string()]);
}

#[test]
fn renderers_show_every_section_and_json_serializes() {
    let c = compare(
        &vmstat_run("sk0", &sk0(true)),
        &vmstat_run("msk2", &msk2(true)),
    );
    let table = compare_table(&c);
    for want in [
        "A: sk0",
        "bytes per context switch",
        "Per-interval distributions",
        "Difference B − A",
        "Welch",
        "Findings",
    ] {
        assert!(table.contains(want), "table lacks {want}:\n{table}");
    }
    let md = compare_markdown(&c);
    assert!(md.contains("| figure | A | B | B vs A |"), "{md}");
    assert!(md.contains("## Difference B − A"));
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["differences"][0]["test"]["confidence"], 0.95);
    assert!(json["method"]
        .as_str()
        .unwrap()
        .contains("Welch–Satterthwaite"));
}

#[test]
fn missing_metrics_are_missing_not_zero() {
    let mut a = Run::new("empty-a", RunSource::Live);
    a.series.push_row(1.0);
    let b = a.clone();
    let c = compare(&a, &b);
    assert!(c.headline.is_empty() && c.normalized.is_empty(), "{c:#?}");
    assert!(c.distributions.is_empty());
    let table = compare_table(&c);
    assert!(table.contains("no findings in either run"));
}

#[test]
fn load_phase_is_the_longest_stretch_with_ramps_trimmed() {
    let mut run = Run::new("stretch", RunSource::Live);
    // idle, ramp, plateau with one dip, a gap below 50 %, a short second burst.
    let values = [0.0, 50.0, 100.0, 95.0, 70.0, 98.0, 60.0, 10.0, 90.0, 90.0];
    for (i, v) in values.iter().enumerate() {
        run.series.push_row((i + 1) as f64);
        run.series.set(
            &MetricId::new(n::LOAD_RX_BITS_PER_S),
            Unit::BitsPerSecond,
            *v,
        );
    }
    // Stretch 1..=6 (≥ 50); median of [50,100,95,70,98,60] = 82.5, floor 66: the ramp row 1
    // (50) and the trailing row 6 (60) are trimmed, the inner dip (70) stays.
    assert_eq!(load_phase(&run).rows, vec![2, 3, 4, 5]);
}

#[test]
fn two_searches_compare_knee_against_knee() {
    use netceil_model::Knee;
    let knee = |size: usize, tol: f64, rate: Option<f64>| Knee {
        goal: None,
        size_bytes: size,
        point: "app".into(),
        loss_tolerance: tol,
        min_interval_us: rate.map(|r| 1e6 / r),
        rate_pps: rate,
        bits_per_s: rate.map(|r| r * size as f64 * 8.0),
        loss_ratio: Some(0.0),
        trials: 12,
        generator_limited: false,
        verified: true,
        upper_pps: None,
        stopped_by: None,
        note: None,
    };
    let mut a = Run::new("a", RunSource::Live);
    a.knees = vec![knee(64, 0.0, Some(100e3)), knee(1518, 0.0, Some(40e3))];
    let mut b = Run::new("b", RunSource::Live);
    b.knees = vec![knee(64, 0.0, Some(125e3)), knee(1518, 0.005, Some(50e3))];
    let pairs = netceil_report::knee_pairs(&a, &b);
    assert_eq!(
        pairs.len(),
        3,
        "matched by size, point and tolerance: {pairs:?}"
    );
    assert!((pairs[0].change_pct.unwrap() - 25.0).abs() < 1e-9);
    assert!(pairs[1].b.is_none() && pairs[2].a.is_none());
    let c = compare(&a, &b);
    let table = compare_table(&c);
    assert!(table.contains("+25.0 %"), "{table}");
    let md = compare_markdown(&c);
    assert!(md.contains("## Knees"), "{md}");
}

/// TCP and request/response searches answer in their own units and bounds: knees pair by
/// bound (a 1 % retransmit budget never meets a 1 % loss tolerance), the change is of the
/// goal's rate, the table shows the bound and the rate in its unit, and a TCP search against a
/// UDP one is flagged as unlike.
#[test]
fn goal_searches_compare_rate_against_rate_within_the_same_bound() {
    use netceil_model::params::{Params, SearchKind, SearchParams, TcpSearch, UdpSearch};
    use netceil_model::{
        Knee, KneeGoal, PacingMode, SearchBound, SearchRateUnit, Workload, WorkloadKind,
    };
    let goal = |bound: SearchBound, rate: f64| Knee {
        size_bytes: 131072,
        point: "app".into(),
        loss_tolerance: 0.0,
        min_interval_us: None,
        rate_pps: None,
        bits_per_s: Some(rate),
        loss_ratio: None,
        trials: 7,
        generator_limited: false,
        verified: true,
        upper_pps: None,
        stopped_by: None,
        note: None,
        goal: Some(KneeGoal {
            bound,
            rate: Some(rate),
            unit: SearchRateUnit::GoodputBitsPerSecond,
            upper: None,
            seen: Some(0.0),
            verified_by: Some("x.3".into()),
        }),
    };
    let search = |kind: SearchKind| Workload {
        kind: WorkloadKind::Search,
        params: Params::Search(SearchParams {
            kind,
            trial_s: 1.0,
            initial_trial_s: 0.25,
            precision: 0.1,
            max_trials: 20,
            target: None,
            resumed_from: None,
            ipv6: false,
        }),
    };
    let tcp = SearchKind::Tcp(TcpSearch {
        flows: 1,
        msg_size: 131072,
        retrans: vec![0.0, 0.01],
        min_bps: 1e6,
        max_bps: None,
    });
    let none = SearchBound::Retransmits { max_ratio: 0.0 };
    let one = SearchBound::Retransmits { max_ratio: 0.01 };
    let mut a = Run::new("a", RunSource::Live);
    a.workload = Some(search(tcp.clone()));
    a.knees = vec![goal(none, 2e9), goal(one, 4e9)];
    let mut b = Run::new("b", RunSource::Live);
    b.workload = Some(search(tcp));
    b.knees = vec![goal(none, 3e9), goal(one, 4e9)];
    let pairs = netceil_report::knee_pairs(&a, &b);
    assert_eq!(pairs.len(), 2, "matched by bound: {pairs:?}");
    assert_eq!(pairs[0].bound, Some(none));
    assert!(
        (pairs[0].change_pct.unwrap() - 50.0).abs() < 1e-9,
        "{pairs:?}"
    );
    assert!(pairs[1].change_pct.unwrap().abs() < 1e-9, "{pairs:?}");
    let c = compare(&a, &b);
    assert!(
        c.unlike.is_none(),
        "two TCP searches are alike: {:?}",
        c.unlike
    );
    let table = compare_table(&c);
    assert!(table.contains("retrans ≤ 1 %"), "{table}");
    assert!(
        table.contains("Gbit/s"),
        "rates in the goal's unit: {table}"
    );
    assert!(
        !table.contains("pps"),
        "no packet rate for a TCP search: {table}"
    );
    assert!(table.contains("+50.0 %"), "{table}");

    // A UDP search whose 1 % loss tolerance has the same number: not the same question.
    let mut u = Run::new("u", RunSource::Live);
    u.workload = Some(search(SearchKind::Udp(UdpSearch {
        sizes: vec![64],
        loss: vec![0.01],
        min_pps: 1e3,
        max_pps: None,
        point: "app".into(),
        pacing: PacingMode::Sleep,
        rcvbuf: None,
        rcvbuf_force: false,
    })));
    let mut k = goal(one, 1e6);
    k.goal = None;
    k.loss_tolerance = 0.01;
    k.rate_pps = Some(1e6);
    u.knees = vec![k];
    let pairs = netceil_report::knee_pairs(&a, &u);
    assert!(
        pairs.iter().all(|p| p.a.is_none() || p.b.is_none()),
        "a retransmit budget paired with a loss tolerance: {pairs:?}"
    );
    let c = compare(&a, &u);
    let why = c.unlike.expect("a TCP search against a UDP one is unlike");
    assert!(
        why.contains("TCP goodput") && why.contains("UDP packet rate"),
        "{why}"
    );
}

/// Two `--to` runs, before and after a change on the far end: the far end's own figures are
/// set side by side, as the far_end finding tells the reader to compare them; a run without
/// a far end leaves them out rather than showing zeros.
#[test]
fn the_far_ends_of_two_runs_are_compared() {
    let with_far = |softirq: f64, lost: u64, arrived: u64| {
        let mut run = common::full_run();
        let r = run.results.as_mut().unwrap();
        r.tx_packets = 1_000_000;
        let mut far = netceil_model::FarEnd::default();
        far.cpu.push(netceil_model::FarCpu {
            cpu: 3,
            busy_pct: softirq + 2.0,
            softirq_pct: softirq,
            ..Default::default()
        });
        far.app.udp_packets = 1_000_000 - lost;
        far.app.udp_lost = lost;
        far.app.udp_socket_drops = Some(lost);
        far.kernel.iface_rx_packets = Some(arrived);
        r.far = Some(Box::new(far));
        run
    };
    let c = compare(
        &with_far(97.0, 50_000, 1_000_000),
        &with_far(40.0, 0, 990_000),
    );
    let soft = figure(&c.headline, "far_busiest_core_softirq_pct");
    assert_eq!((soft.a, soft.b), (Some(97.0), Some(40.0)));
    let lost = figure(&c.headline, "far_lost");
    assert_eq!((lost.a, lost.b), (Some(50_000.0), Some(0.0)));
    let path = figure(&c.headline, "far_never_arrived");
    assert_eq!((path.a, path.b), (Some(0.0), Some(10_000.0)));
    assert!(compare_table(&c).contains("far end: busiest core in softirq"));
    let plain = compare(&common::full_run(), &common::full_run());
    assert!(
        !plain.headline.iter().any(|f| f.key.starts_with("far_")),
        "{:#?}",
        plain.headline
    );
}
