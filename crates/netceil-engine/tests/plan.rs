//! The planners run without the command line: on a fake machine (its counters the fake's, the
//! load real, on loopback), each returns its typed findings, ends its campaign, and an
//! interrupted one replays what it stored instead of measuring it again.

use netceil_engine::plan::{self, Reach};
use netceil_engine::{new_run, Campaign, Replay, SessionConfig, Trial};
use netceil_model::params::{
    RrProtocol, RrSearch, SearchKind, SearchParams, SearchTrialParams, SweepParams, SweepTcpParams,
    TcpSearch, UdpParams, UdpSearch,
};
use netceil_model::{Knee, PacingMode, Rate, Run, RunSource, SearchBound, SearchRateUnit};
use netceil_probe::FakeSource;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// The planners' tests load loopback: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn config(stopped: bool) -> SessionConfig {
    let fake = FakeSource::new();
    fake.set(
        "/proc/net/dev",
        "Inter-| Receive | Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n    lo: 0 7 0 0 0 0 0 0 0 7 0 0 0 0 0 0\n",
    );
    SessionConfig {
        source: Arc::new(fake),
        ..SessionConfig::new(
            Duration::from_millis(100),
            Arc::new(AtomicBool::new(stopped)),
        )
    }
}

/// A campaign on the fake machine, replaying `old`'s parts if given.
fn campaign(cfg: &SessionConfig, old: Option<Run>) -> Campaign<'static> {
    let (top, _) = new_run(&[], RunSource::Live, &netceil_probe::ProcFs::new());
    let replay = old.map(Replay::of).unwrap_or_default();
    Campaign::start(cfg, None, top, replay).unwrap()
}

/// An interrupted run as the store keeps it: its parts, not complete.
fn interrupted(mut run: Run) -> Run {
    run.meta.complete = false;
    run
}

fn not_stopped() -> String {
    panic!("nothing stopped this campaign")
}

fn search_params() -> SearchParams {
    SearchParams {
        kind: SearchKind::Udp(UdpSearch {
            sizes: vec![256],
            loss: vec![0.0, 0.05],
            min_pps: 1000.0,
            max_pps: Some(6000.0),
            point: "app".into(),
            pacing: PacingMode::Sleep,
            rcvbuf: None,
            rcvbuf_force: false,
        }),
        trial_s: 0.3,
        initial_trial_s: 0.1,
        precision: 0.25,
        max_trials: 5,
        target: None,
        resumed_from: None,
        ipv6: false,
    }
}

/// Knees without what stopped them (which names parts by the run's id).
fn bare(knees: &[Knee]) -> Vec<Knee> {
    knees
        .iter()
        .map(|k| Knee {
            goal: None,
            stopped_by: None,
            ..k.clone()
        })
        .collect()
}

#[test]
fn a_search_finds_a_knee_per_tolerance_and_its_resume_replays_every_trial() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = config(false);
    let p = search_params();
    plan::search::check(&p, Reach::default()).unwrap();
    let mut c = campaign(&cfg, None);
    let found = plan::search::run(&mut c, &p, Reach::default(), &not_stopped).unwrap();
    assert!(!found.interrupted);
    assert_eq!(found.knees.len(), 2, "one knee per tolerance");
    let trials = found.knees[0].trials;
    assert!((2..=5).contains(&trials), "{:?}", found.knees);
    for (k, tolerance) in found.knees.iter().zip([0.0, 0.05]) {
        assert_eq!((k.size_bytes, k.point.as_str()), (256, "app"));
        assert_eq!(k.loss_tolerance, tolerance);
        assert_eq!(k.trials, trials);
    }
    let (first, _) = c.finish();
    assert!(first.meta.complete);
    assert_eq!(first.knees, found.knees);
    // Every trial is a part, recorded with what it was asked, analyzed.
    assert_eq!(first.parts.len(), trials);
    for part in &first.parts {
        let t: SearchTrialParams = part.workload.as_ref().unwrap().params_as().unwrap();
        assert_eq!(t.frame_bytes, 256);
        assert!(t.rate_pps.is_some_and(|r| (1000.0..=6000.0).contains(&r)));
        assert!(t.duration_s.is_some());
    }

    // Resumed: every trial comes from the store, so the search takes the same path to the
    // same knees, without traffic.
    let old = interrupted(first.clone());
    let resumed = SearchParams {
        resumed_from: Some(old.run_id.clone()),
        ..p
    };
    let mut c = campaign(&cfg, Some(old));
    let again = plan::search::run(&mut c, &resumed, Reach::default(), &not_stopped).unwrap();
    assert_eq!(c.replayed(), trials, "every stored trial replayed");
    assert_eq!(bare(&again.knees), bare(&found.knees));
    let (second, _) = c.finish();
    assert!(second.notes.iter().any(|n| n.starts_with(&format!(
        "resumed from {}: {trials} of its trials",
        first.run_id
    ))));
}

/// A search of `kind` with short trials, as the UDP one above.
fn goal_search(kind: SearchKind) -> SearchParams {
    SearchParams {
        kind,
        trial_s: 0.4,
        initial_trial_s: 0.2,
        max_trials: 8,
        ..search_params()
    }
}

/// A TCP or request/response search's answers, checked against the trials it stored: one knee
/// per bound, each with the bound asked, a rate in the search's range and unit, and a verifying
/// part in the run that measured that rate and kept within the bound. `figure` reads the
/// bound's figure off a part (retransmit ratio, p99 in s); `reached` its rate.
fn check_goal_search(
    p: &SearchParams,
    bounds: &[SearchBound],
    unit: SearchRateUnit,
    range: (f64, f64),
    figure: &dyn Fn(&Run) -> Option<f64>,
    reached: &dyn Fn(&Run) -> f64,
) {
    let cfg = config(false);
    plan::search::check(p, Reach::default()).unwrap();
    let mut c = campaign(&cfg, None);
    let found = plan::search::run(&mut c, p, Reach::default(), &not_stopped).unwrap();
    assert!(!found.interrupted);
    let (run, _) = c.finish();
    assert_eq!(
        run.knees.len(),
        bounds.len(),
        "one knee per bound: {:?}",
        run.knees
    );
    for (k, bound) in run.knees.iter().zip(bounds) {
        let g = k.goal.as_ref().expect("a TCP or rr knee has a goal");
        assert_eq!((g.bound, g.unit), (*bound, unit));
        assert_eq!(
            (k.rate_pps, k.loss_tolerance),
            (None, 0.0),
            "no UDP figures: {k:?}"
        );
        let rate = g
            .rate
            .expect("loopback meets these bounds at the search's lowest rate");
        // The rate found is what the verifying trial carried: a paced load can come out a
        // little above what it asked.
        assert!(
            rate >= 0.99 * range.0 && rate <= 1.02 * range.1,
            "{rate} outside {range:?}"
        );
        let by = g
            .verified_by
            .as_deref()
            .expect("a verified answer names its trial");
        let part = run
            .parts
            .iter()
            .find(|t| t.run_id == by)
            .expect("the verifying part");
        let seen = figure(part).expect("the verifying trial measured the bound's figure");
        let max = match *bound {
            SearchBound::Retransmits { max_ratio } => max_ratio,
            SearchBound::P99 { max_s } => max_s,
        };
        assert!(
            seen <= max,
            "verifying trial broke the bound: {seen} > {max}"
        );
        assert!(
            reached(part) >= 0.99 * rate,
            "the verifying trial reached {} of the {rate} found",
            reached(part)
        );
        assert!(k.verified, "{k:?}");
    }
    // Resumed, it replays every trial and comes to the same answers.
    let resumed = SearchParams {
        resumed_from: Some(run.run_id.clone()),
        ..p.clone()
    };
    let mut c = campaign(&cfg, Some(interrupted(run.clone())));
    let again = plan::search::run(&mut c, &resumed, Reach::default(), &not_stopped).unwrap();
    assert_eq!(c.replayed(), run.parts.len(), "every stored trial replayed");
    let rates = |ks: &[Knee]| {
        ks.iter()
            .map(|k| k.goal.as_ref().unwrap().rate)
            .collect::<Vec<_>>()
    };
    assert_eq!(rates(&again.knees), rates(&run.knees));
}

#[test]
fn a_tcp_search_finds_the_goodput_within_each_retransmit_budget() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let p = goal_search(SearchKind::Tcp(TcpSearch {
        flows: 2,
        msg_size: 16 * 1024,
        retrans: vec![0.0, 0.01],
        min_bps: 20e6,
        max_bps: Some(80e6),
    }));
    check_goal_search(
        &p,
        &[
            SearchBound::Retransmits { max_ratio: 0.0 },
            SearchBound::Retransmits { max_ratio: 0.01 },
        ],
        SearchRateUnit::GoodputBitsPerSecond,
        (20e6, 80e6),
        &|r| r.results.as_ref()?.retransmit_ratio(),
        &|r| r.results.as_ref().map_or(0.0, |r| r.rx_app_bits_per_s),
    );
}

#[test]
fn an_rr_search_finds_the_rate_whose_p99_stays_under_each_bound() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let p = goal_search(SearchKind::Rr(RrSearch {
        proto: RrProtocol::Udp,
        size: 64,
        flows: 1,
        p99_s: vec![0.05, 0.2],
        min_tps: 200.0,
        max_tps: Some(2000.0),
    }));
    check_goal_search(
        &p,
        &[
            SearchBound::P99 { max_s: 0.05 },
            SearchBound::P99 { max_s: 0.2 },
        ],
        SearchRateUnit::TransactionsPerSecond,
        (200.0, 2000.0),
        &|r| r.results.as_ref()?.p99_round_trip_s(),
        &|r| {
            r.results
                .as_ref()
                .and_then(|r| r.transactions_per_s)
                .unwrap_or(0.0)
        },
    );
}

#[test]
fn a_stopped_search_measures_nothing_and_says_why() {
    let cfg = config(true);
    let mut c = campaign(&cfg, None);
    let found = plan::search::run(&mut c, &search_params(), Reach::default(), &|| {
        "stopped by the test".into()
    })
    .unwrap();
    // What it found so far is nothing: no size has a rate, and each says it was cut short.
    assert!(found.interrupted);
    assert!(
        found.knees.iter().all(|k| k.min_interval_us.is_none()
            && k.note
                .as_deref()
                .is_some_and(|n| n.starts_with("interrupted"))),
        "{:?}",
        found.knees
    );
    let (run, _) = c.finish();
    assert!(!run.meta.complete && run.parts.is_empty());
    assert!(
        run.notes
            .iter()
            .any(|n| n.starts_with("stopped by the test: ")
                && n.contains(&format!("--resume {}", run.run_id))),
        "{:?}",
        run.notes
    );
}

#[test]
fn bad_search_and_sweep_settings_are_refused_before_any_traffic() {
    let mut p = search_params();
    if let SearchKind::Udp(u) = &mut p.kind {
        u.sizes = vec![40];
    }
    let e = plan::search::check(&p, Reach::default()).unwrap_err();
    assert!(
        e.is_usage() && e.to_string().contains("--frame-sizes 40"),
        "{e}"
    );
    let s = SweepParams {
        cycles: 0,
        ..sweep_params()
    };
    let e = plan::sweep::check(&s, Reach::default()).unwrap_err();
    assert!(e.is_usage() && e.to_string().contains("--cycles"), "{e}");
    let t = SweepTcpParams {
        flows: vec![1, 0],
        ..flows_params()
    };
    let e = plan::flows::trials(&t, false).unwrap_err();
    assert!(e.is_usage() && e.to_string().contains("--flows"), "{e}");
}

fn sweep_params() -> SweepParams {
    SweepParams {
        workload: "udp".into(),
        sizes: vec![64],
        interval: "0us..20us/10us".into(),
        count: 200,
        cycles: 2,
        pacing: PacingMode::Sleep,
        rcvbuf: None,
        rcvbuf_force: false,
        target: None,
        resumed_from: None,
        ipv6: false,
    }
}

#[test]
fn a_sweep_grid_has_a_knee_per_point_and_its_resume_replays_every_cycle() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = config(false);
    let p = sweep_params();
    let intervals = plan::sweep::check(&p, Reach::default()).unwrap();
    assert_eq!(intervals, [0.0, 10_000.0, 20_000.0]);
    let mut c = campaign(&cfg, None);
    let swept = plan::sweep::run(&mut c, &p, &intervals, Reach::default(), &not_stopped).unwrap();
    assert!(!swept.interrupted);
    let points: Vec<&str> = swept.knees.iter().map(|k| k.point.as_str()).collect();
    assert_eq!(points, ["kernel", "app"]);
    assert_eq!(swept.rows.len(), 1);
    let cells: Vec<_> = swept.rows[0].cells.iter().flatten().collect();
    // Both knees count every cell measured for the size; each cell is two cycles, two parts.
    assert!(swept.knees.iter().all(|k| k.trials == cells.len()));
    for k in &swept.knees {
        // A knee is the first interval where every packet arrived, sent at the gap asked.
        if let Some(us) = k.min_interval_us {
            let cell = cells.iter().find(|c| c.interval_ns == us * 1e3).unwrap();
            assert!(cell.kernel_ratio >= 1.0 && !cell.gap_short, "{cell:?}");
        }
    }
    let (first, _) = c.finish();
    assert!(first.meta.complete);
    assert_eq!(first.parts.len(), cells.len() * 2);

    let old = interrupted(first);
    let mut c = campaign(&cfg, Some(old));
    let again = plan::sweep::run(&mut c, &p, &intervals, Reach::default(), &not_stopped).unwrap();
    assert_eq!(c.replayed(), cells.len() * 2, "every stored cycle replayed");
    assert_eq!(again, swept, "the same cells and knees, from the store");
}

fn flows_params() -> SweepTcpParams {
    SweepTcpParams {
        workload: "tcp flows".into(),
        flows: vec![1, 2],
        rate_per_flow: Some(50e6),
        step_s: 0.4,
        msg_size: 16 * 1024,
        threads: 1,
        target: None,
    }
}

#[test]
fn a_flows_sweep_has_a_step_per_count_and_the_knees_verdict() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = config(false);
    let trials = plan::flows::trials(&flows_params(), false).unwrap();
    let mut c = campaign(&cfg, None);
    let flowed = plan::flows::run(&mut c, &trials).unwrap();
    let (run, _) = c.finish();
    assert!(!flowed.interrupted && run.meta.complete);
    let counts: Vec<u32> = flowed.steps.iter().map(|s| s.flows).collect();
    assert_eq!(counts, [1, 2]);
    assert!(flowed.steps.iter().all(|s| s.bits_per_s > 0.0));
    let k = flowed.knee.expect("a knee where throughput was measured");
    assert_eq!(
        flowed.steps,
        plan::flows::steps(&run),
        "the steps the table shows"
    );
    assert_eq!(run.findings, run.parts[k].findings);
    assert!(run
        .notes
        .iter()
        .any(|n| n.contains(&format!("at {} flows", counts[k]))));
}

#[test]
fn a_param_sweep_labels_each_step_with_its_values() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = config(false);
    let mut c = campaign(&cfg, None);
    let wire = netceil_engine::wire_run_id(&c.top.run_id);
    let steps: Vec<_> = [1000.0, 2000.0]
        .into_iter()
        .map(|pps| {
            let p = UdpParams {
                rate: Some(Rate::PacketsPerSecond(pps)),
                duration_s: 0.3,
                ..netceil_engine::udp_defaults(64)
            };
            let combo = vec![("rate".to_string(), format!("{pps}pps"))];
            (combo, Trial::udp(p, wire).unwrap())
        })
        .collect();
    let swept = plan::param::run(&mut c, &steps).unwrap();
    let (run, _) = c.finish();
    assert_eq!(swept.steps.len(), 2);
    for (i, (step, part)) in swept.steps.iter().zip(&run.parts).enumerate() {
        assert_eq!(step.combo, steps[i].0);
        assert_eq!(
            part.meta.labels.get("param.rate"),
            Some(&steps[i].0[0].1),
            "{:?}",
            part.meta.labels
        );
        assert_eq!(
            step.cause,
            part.findings.first().map(|f| f.cause.to_string())
        );
        assert!(step.results.tx_packets > 0);
    }
    assert!(plan::param::headline(&swept.steps[0].results).contains("lost"));
}
