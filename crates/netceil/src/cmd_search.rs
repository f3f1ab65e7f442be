//! `netceil search udp`: per frame size, the highest packet rate whose loss stays within each
//! tolerance (NDR at 0 %, PDRs above), found by [`netceil_analyze::search`] over real trials,
//! and what stopped it there: the analyzer's verdict on the first failing full-length trial.
//!
//! Each trial is one part of the run (its series window, its results, its findings). Loss is
//! counted at the application: what netceil's receiver read, against what was sent.

use std::time::Duration;

use anyhow::anyhow;
use netceil_analyze::search::{self, Measurer, Purpose, SearchConfig, TrialRecord, TrialResult};
use netceil_engine::{new_live_run, Campaign, PartAnalysis, Replay, Trial};
use netceil_model::params::{SearchParams, SearchTrialParams, UdpParams};
use netceil_model::{
    udp_payload_to_frame, Knee, Rate, Results, Run, Workload as WorkloadSpec, WorkloadKind,
};

use crate::cli::{CommonRunArgs, MetricsArgs, SearchArgs, SearchWorkload};
use crate::engine::{self, Progress};
use crate::{Failure, Outcome};
use netceil_model::{fmt, Unit};

/// What a trial was asked: its frame size, rate (0 = unpaced) and length.
#[derive(Debug, Clone, Copy)]
struct TrialSpec {
    frame: usize,
    asked: f64,
    trial_s: f64,
}

/// A trial's workload as its part records it; without `duration_s`, what `--resume` matches.
fn trial_workload(
    overhead: usize,
    t: TrialSpec,
    duration_s: Option<f64>,
    target: Option<String>,
) -> WorkloadSpec {
    WorkloadSpec::typed(
        WorkloadKind::Udp,
        &SearchTrialParams {
            frame_bytes: t.frame,
            payload_bytes: t.frame - overhead,
            rate_pps: (t.asked > 0.0).then_some(t.asked),
            trial_s: t.trial_s,
            duration_s,
            target,
        },
    )
}

/// Runs the search's UDP trials in the campaign, each a part of the run, stored at once; the
/// trials of an interrupted search are replayed from the store instead.
struct UdpTrials<'c, 's> {
    c: &'c mut Campaign<'s>,
    /// The search's lines about trials done, told to the session's observers.
    lines: Option<&'c std::cell::RefCell<Vec<String>>>,
    base: UdpParams,
    wire_id: u16,
    frame: usize,
    overhead: usize,
    target: Option<String>,
    stopped: bool,
    /// The load engine's own error, kept with its exit code (a usage error stays one).
    failure: Option<Failure>,
}

impl UdpTrials<'_, '_> {
    /// Tells the session's observers the lines the search wrote since the last time.
    fn tell_lines(&mut self) {
        if let Some(l) = self.lines {
            for line in l.borrow_mut().drain(..) {
                self.c.session.step(&line);
            }
        }
    }

    fn trial(&mut self, duration: Duration, asked: f64) -> Result<Results, Failure> {
        let params = UdpParams {
            rate: (asked > 0.0).then_some(Rate::PacketsPerSecond(asked)),
            duration_s: duration.as_secs_f64(),
            ..self.base.clone()
        };
        let trial = Trial::udp(params, self.wire_id)?;
        let spec = TrialSpec {
            frame: self.frame,
            asked,
            trial_s: duration.as_secs_f64(),
        };
        let (overhead, target) = (self.overhead, self.target.clone());
        let asked = trial_workload(overhead, spec, None, target.clone());
        let m = self.c.trial(&trial, &asked, |r| {
            trial_workload(overhead, spec, Some(r.duration_s), target)
        })?;
        Ok(m.results)
    }
}

impl Measurer for UdpTrials<'_, '_> {
    fn measure(&mut self, rate_pps: f64, duration: Duration) -> Result<TrialResult, String> {
        self.tell_lines();
        if self.c.stopping() {
            self.stopped = true;
            return Err(crate::exit::interrupted());
        }
        let r = match self.trial(duration, rate_pps) {
            Ok(r) => r,
            Err(e) => {
                let text = e.error.to_string();
                self.failure = Some(e);
                return Err(text);
            }
        };
        let sent = r.tx_packets.saturating_sub(r.in_flight_packets);
        let loss = if sent > 0 {
            sent.saturating_sub(r.rx_app_packets) as f64 / sent as f64
        } else {
            1.0
        };
        Ok(TrialResult {
            requested_pps: rate_pps,
            achieved_pps: r.tx_pps,
            loss_ratio: loss,
            duration_s: r.duration_s,
        })
    }
}

fn trial_line(size: usize, rec: &TrialRecord) -> String {
    let purpose = match rec.purpose {
        Purpose::Bound => "bound",
        Purpose::Bisect => "bisect",
        Purpose::Retry => "retry",
        Purpose::Verify => "verify",
    };
    let r = &rec.result;
    format!(
        "  {size:>5} B  trial {:>2}  {:>6}  {:>5.1} s  asked {:>11}  sent {:>11}  loss {:>9}{}",
        rec.index + 1,
        purpose,
        r.duration_s,
        fmt::value(r.requested_pps, Unit::PacketsPerSecond),
        fmt::value(r.achieved_pps, Unit::PacketsPerSecond),
        format!("{:.4} %", r.loss_ratio * 100.0),
        if r.generator_limited() {
            "  (generator short)"
        } else {
            ""
        }
    )
}

/// What a stored search ran with, read back within the bounds the command line has: a store
/// is input too.
fn from_run(run: &Run) -> Result<SearchParams, Failure> {
    let bad = |why: &str| {
        Failure::usage(anyhow!(
            "--resume {}: {why}; only an interrupted `netceil search udp` can be resumed",
            run.run_id
        ))
    };
    let w = run
        .workload
        .as_ref()
        .ok_or_else(|| bad("it has no workload"))?;
    let p: SearchParams = match w.kind {
        WorkloadKind::Search => w.params_as().map_err(|e| bad(&e.to_string()))?,
        _ => return Err(bad("it is not a UDP search")),
    };
    if p.workload != "udp" {
        return Err(bad("it is not a UDP search"));
    }
    for (k, v) in [
        ("trial_s", p.trial_s),
        ("initial_trial_s", p.initial_trial_s),
    ] {
        if crate::parse::secs_within(v, crate::parse::RUN).is_none() {
            return Err(bad(&format!("its '{k}' is not a trial length")));
        }
    }
    for (k, v) in [("min_pps", Some(p.min_pps)), ("max_pps", p.max_pps)] {
        if v.is_some_and(|v| !Rate::PacketsPerSecond(v).in_bounds()) {
            return Err(bad(&format!("its '{k}' is not a packet rate")));
        }
    }
    Ok(p)
}

/// The checks the search makes, before any traffic.
fn check(p: &SearchParams, overhead: usize) -> Result<(), Failure> {
    if p.sizes.is_empty() {
        return Err(Failure::usage(anyhow!("--sizes: at least one frame size")));
    }
    let least = overhead + netceil_load::header::HEADER_LEN;
    if let Some(f) = p.sizes.iter().find(|f| **f < least) {
        return Err(Failure::usage(anyhow!(
            "--sizes {f}: a frame must hold the {overhead}-byte headers and netceil's {}-byte header: {least} at least",
            netceil_load::header::HEADER_LEN
        )));
    }
    search_config(p, p.min_pps, p.max_pps.unwrap_or(p.min_pps * 2.0))
        .validate()
        .map_err(|e| Failure::usage(anyhow!(e)))
}

fn search_config(p: &SearchParams, min_pps: f64, max_pps: f64) -> SearchConfig {
    SearchConfig {
        min_pps,
        max_pps,
        tolerances: p.loss.clone(),
        final_duration: Duration::from_secs_f64(p.trial_s),
        initial_duration: Duration::from_secs_f64(p.initial_trial_s),
        precision: p.precision,
        max_trials: p.max_trials,
    }
}

pub fn run(args: SearchArgs) -> Outcome {
    let SearchWorkload::Udp(a) = &args.workload;
    let common = &args.common;
    let target = common.to.map(|t| t.to_string());
    let store = engine::open_store(common.no_store);
    // --resume: the stored run's settings and its trials, replayed before any new traffic.
    let (settings, replay) = match &a.resume {
        Some(spec) => {
            let old = netceil_engine::resumable(store.as_ref(), spec, target.clone())?;
            (from_run(&old)?, Replay::of(old))
        }
        None => (engine::search_params(a, target)?, Replay::default()),
    };
    search(settings, replay, common, &args.metrics, store.as_ref())
}

/// The knees one frame size's search found, each with the index of the part that stopped it
/// (its first failing trial), counted from `offset`.
fn knees_of(
    frame: usize,
    outcome: &search::SearchOutcome,
    offset: usize,
) -> Vec<(Knee, Option<usize>)> {
    outcome
        .results
        .iter()
        .map(|r| {
            let knee = Knee {
                size_bytes: frame,
                point: "app".into(),
                loss_tolerance: r.tolerance,
                min_interval_us: r.rate_pps.map(|p| 1e6 / p),
                rate_pps: r.rate_pps,
                bits_per_s: r.rate_pps.map(|p| p * frame as f64 * 8.0),
                loss_ratio: r.loss_spread.map(|s| s.1),
                trials: outcome.trials.len(),
                generator_limited: r.generator_limited,
                verified: r.verified,
                upper_pps: r.upper_pps,
                // Filled in once the trials are analyzed.
                stopped_by: None,
                note: r
                    .incomplete
                    .clone()
                    .or_else(|| outcome.stopped_early.clone()),
            };
            (knee, r.first_failing_trial.map(|i| offset + i))
        })
        .collect()
}

/// Searches as `settings` say, replaying what `replay` holds first.
pub fn search(
    mut settings: SearchParams,
    replay: Replay,
    common: &CommonRunArgs,
    metrics: &MetricsArgs,
    store: Option<&netceil_store::Store>,
) -> Outcome {
    let overhead = udp_payload_to_frame(0, common.ipv6);
    let target = settings.target.clone();
    settings.resumed_from = replay.from.clone();
    check(&settings, overhead)?;
    let pairs: Vec<(usize, usize)> = settings.sizes.iter().map(|&f| (f, f - overhead)).collect();
    netceil_engine::kernel::check_path_mtu(common.to, "--sizes", &pairs)
        .map_err(|e| Failure::usage(anyhow!(e)))?;

    let (mut top, wire_id) = new_live_run(&common.labels);
    let run_id = top.run_id.clone();
    top.workload = Some(WorkloadSpec::typed(WorkloadKind::Search, &settings));
    let mut cmd = engine::start(
        common,
        metrics,
        store,
        top,
        replay,
        Progress::Steps {
            what: "search",
            at_most: (settings.sizes.len()
                * (settings.max_trials + usize::from(settings.max_pps.is_none())))
                as u64,
        },
    )?;
    let c = &mut cmd.campaign;
    let mut knees: Vec<Knee> = Vec::new();
    // For each knee, the index of the part that stopped it (filled in once parts are analyzed).
    let mut stopped_at: Vec<Option<usize>> = Vec::new();
    let mut interrupted = false;
    for &frame in &settings.sizes {
        let base = engine::udp_train_params(
            common,
            frame - overhead,
            settings.pacing,
            settings.rcvbuf,
            settings.rcvbuf_force,
        );
        let first_part = c.parts();
        let mut trials = UdpTrials {
            c: &mut *c,
            base,
            wire_id,
            frame,
            overhead,
            target: target.clone(),
            lines: None,
            stopped: false,
            failure: None,
        };
        // The highest rate worth asking: what the generator sends flat out, unless given.
        let max = match settings.max_pps {
            Some(m) => m,
            None => {
                trials.c.session.say(&format!(
                    "{frame} B frames: measuring the generator's own ceiling ({} s unpaced)",
                    settings.initial_trial_s
                ));
                let initial = Duration::from_secs_f64(settings.initial_trial_s);
                let m = trials.trial(initial, 0.0)?.tx_pps;
                trials.c.session.step(&format!(
                    "  {frame:>5} B  the generator sends {} flat out",
                    fmt::value(m, Unit::PacketsPerSecond)
                ));
                m
            }
        };
        let cfg = search_config(&settings, settings.min_pps.min(max * 0.5), max);
        // Each trial's line, told by the trials themselves (they hold the campaign).
        let lines = std::cell::RefCell::new(Vec::new());
        trials.lines = Some(&lines);
        let outcome = search::search(&cfg, &mut trials, &mut |rec| {
            lines.borrow_mut().push(trial_line(frame, rec));
        });
        trials.tell_lines();
        let stopped = trials.stopped;
        let failure = trials.failure.take();
        let offset = first_part + usize::from(settings.max_pps.is_none());
        let outcome = match outcome {
            Ok(o) => o,
            Err(_) if stopped => {
                interrupted = true;
                break;
            }
            Err(e) => {
                return Err(
                    failure.unwrap_or_else(|| Failure::from(anyhow!("search at {frame} B: {e}")))
                )
            }
        };
        for (knee, at) in knees_of(frame, &outcome, offset) {
            stopped_at.push(at);
            knees.push(knee);
        }
        if c.stopping() {
            interrupted = true;
            break;
        }
    }
    c.end(PartAnalysis::Each);
    let replayed = c.replayed();
    let top = &mut c.top;
    for (k, at) in knees.iter_mut().zip(&stopped_at) {
        k.stopped_by = at.and_then(|i| top.parts.get(i)).map(|p| {
            let top_finding = p
                .findings
                .first()
                .map(|f| format!("{}: {}", f.cause, f.summary))
                .unwrap_or_else(|| "no finding".into());
            format!("{} at {}: {top_finding}", p.run_id, rate_of(p))
        });
    }
    top.knees = knees;
    top.meta.complete = !interrupted;
    if let Some(old) = &settings.resumed_from {
        top.notes.push(format!(
            "resumed from {old}: {replayed} of its trials were replayed from the store (no traffic), the rest measured now; replayed trials keep the series they were stored with (none, if the search was killed)"
        ));
    }
    if interrupted {
        top.notes.push(format!(
            "{}: the knees cover the sizes finished so far; `netceil search udp --resume {run_id}` goes on from here",
            crate::exit::interrupted()
        ));
    }
    top.notes.push(format!(
        "loss counted at the application (netceil's receiver), against what was sent; bits/s are Ethernet frame bits (frame size × 8 × rate), decimal units (1 Gbit/s = 10^9 bit/s); {} s trials decide, shorter ones narrow",
        settings.trial_s
    ));
    cmd.done(true, knee_table)
}

fn rate_of(p: &Run) -> String {
    p.workload
        .as_ref()
        .and_then(|w| w.params_as::<SearchTrialParams>().ok())
        .and_then(|t| t.rate_pps)
        .map_or_else(
            || "unpaced".to_string(),
            |v| fmt::value(v, Unit::PacketsPerSecond),
        )
}

/// The knee table: per frame size and tolerance, the rate, its throughput in both units,
/// the loss seen there, and what stopped it.
pub(crate) fn knee_table(run: &Run) -> String {
    let mut s = String::new();
    s.push_str(
        "frame B  loss ≤     rate          Gbit/s   Gibit/s  loss seen    trials  verified\n",
    );
    for k in &run.knees {
        let rate = k
            .rate_pps
            .map_or_else(|| "none".into(), |v| fmt::value(v, Unit::PacketsPerSecond));
        let gbit = k
            .bits_per_s
            .map_or_else(|| "-".into(), |b| format!("{:.3}", b / 1e9));
        let gibit = k
            .bits_per_s
            .map_or_else(|| "-".into(), |b| format!("{:.3}", b / (1u64 << 30) as f64));
        let seen = k
            .loss_ratio
            .map_or_else(|| "-".into(), |l| format!("{:.4} %", l * 100.0));
        s.push_str(&format!(
            "{:>7}  {:>6}  {:>13}{}  {:>8}  {:>8}  {:>9}  {:>6}  {}\n",
            k.size_bytes,
            format!("{} %", k.loss_tolerance * 100.0),
            rate,
            if k.generator_limited { "≥" } else { " " },
            gbit,
            gibit,
            seen,
            k.trials,
            if k.verified { "yes" } else { "no" }
        ));
        if let Some(n) = &k.note {
            s.push_str(&format!("         note: {n}\n"));
        }
        if let Some(b) = &k.stopped_by {
            s.push_str(&format!("         above it: {b}\n"));
        }
    }
    s.push_str("Gbit/s = 10^9 bit/s, Gibit/s = 2^30 bit/s, of Ethernet frames (RFC 2544 frame size × 8 × rate); ≥: the generator could not offer more, a lower bound\n");
    s
}
