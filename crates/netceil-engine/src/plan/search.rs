//! The searches over netceil's own loads: the highest rate within each bound, found by
//! [`netceil_analyze::search`] over real trials, and what stopped it there: the analyzer's
//! verdict on the first failing full-length trial.
//!
//! - UDP trains (`search udp`): per frame size, the highest packet rate whose loss stays
//!   within each tolerance (NDR at 0 %, PDRs above). Loss is counted at the application: what
//!   netceil's receiver read, against what was sent.
//! - Paced TCP flows (`search tcp`): the highest goodput whose retransmitted segments over
//!   segments sent stay within each budget, with the goodput within 1 % of the load asked.
//! - Paced request/response (`search rr`): the highest transaction rate whose p99 round trip
//!   stays under each bound, with the rate achieved within 1 % of the rate asked.
//!
//! Each trial is one part of the run (its series window, its results, its findings), stored
//! as it ends; the trials of an interrupted search are replayed from the store.

use std::time::Duration;

use anyhow::anyhow;
use netceil_analyze::search::{
    self, Criterion, Measurer, Purpose, SearchConfig, TrialRecord, TrialResult,
};
use netceil_model::duration::{secs_within, RUN};
use netceil_model::params::{
    Params, RrParams, RrSearch, SearchKind, SearchParams, SearchTrialParams, TcpPacingRequest,
    TcpParams, TcpSearch, UdpParams,
};
use netceil_model::{
    fmt, udp_payload_to_frame, Knee, KneeGoal, Rate, Results, Run, SearchBound, SearchRateUnit,
    TcpDirection, Unit, Workload, WorkloadKind,
};

use super::{udp_train, Reach};
use crate::{wire_run_id, Campaign, Error, PartAnalysis, Trial};

/// What a UDP trial was asked: its frame size, rate (0 = unpaced) and length.
#[derive(Debug, Clone, Copy)]
struct TrialSpec {
    frame: usize,
    asked: f64,
    trial_s: f64,
}

/// A UDP trial's workload as its part records it; without `duration_s`, what `--resume`
/// matches.
fn trial_workload(
    overhead: usize,
    t: TrialSpec,
    duration_s: Option<f64>,
    target: Option<String>,
) -> Workload {
    Workload {
        kind: WorkloadKind::Udp,
        params: Params::SearchTrial(SearchTrialParams {
            frame_bytes: t.frame,
            payload_bytes: t.frame - overhead,
            rate_pps: (t.asked > 0.0).then_some(t.asked),
            trial_s: t.trial_s,
            duration_s,
            target,
        }),
    }
}

/// One setting a search searches: a UDP frame size, or the one TCP or request/response
/// configuration; each knob's rate is its own (packets/s, goodput bits/s, transactions/s).
#[derive(Debug, Clone)]
enum Knob {
    Udp {
        base: UdpParams,
        frame: usize,
        overhead: usize,
        wire_id: u16,
    },
    Tcp(TcpParams),
    Rr(RrParams),
}

impl Knob {
    /// How its lines start: the frame size, or the workload.
    fn label(&self) -> String {
        match self {
            Knob::Udp { frame, .. } => format!("{frame:>5} B"),
            Knob::Tcp(p) => format!(
                "tcp {} flow{}",
                p.flows,
                if p.flows == 1 { "" } else { "s" }
            ),
            Knob::Rr(p) => format!("rr {} B", p.size),
        }
    }

    /// A rate of this knob's, in words.
    fn show(&self, v: f64) -> String {
        match self {
            Knob::Udp { .. } => fmt::value(v, Unit::PacketsPerSecond),
            Knob::Tcp(_) => SearchRateUnit::GoodputBitsPerSecond.show(v),
            Knob::Rr(_) => SearchRateUnit::TransactionsPerSecond.show(v),
        }
    }

    /// The trial at `asked` (0: unpaced) for `duration`, and the workload `--resume` matches.
    fn trial(&self, asked: f64, duration: Duration) -> Result<(Trial, Workload), Error> {
        let paced = (asked > 0.0).then_some(asked);
        let secs = duration.as_secs_f64();
        Ok(match self {
            Knob::Udp { base, wire_id, .. } => {
                let params = UdpParams {
                    rate: paced.map(Rate::PacketsPerSecond),
                    duration_s: secs,
                    ..base.clone()
                };
                let trial = Trial::udp(params, *wire_id)?;
                let (w, _) = self.udp_workloads(asked, secs);
                (trial, w)
            }
            Knob::Tcp(base) => {
                let trial = Trial::tcp(TcpParams {
                    rate_per_flow_bps: paced.map(|g| g / f64::from(base.flows.max(1))),
                    duration_s: secs,
                    ..base.clone()
                })?;
                let w = trial.workload();
                (trial, w)
            }
            Knob::Rr(base) => {
                let trial = Trial::rr(RrParams {
                    rate_tps: paced,
                    duration_s: secs,
                    ..base.clone()
                })?;
                let w = trial.workload();
                (trial, w)
            }
        })
    }

    /// A UDP trial's asked workload, and its frame and overhead.
    fn udp_workloads(&self, asked: f64, secs: f64) -> (Workload, TrialSpec) {
        let Knob::Udp {
            base,
            frame,
            overhead,
            ..
        } = self
        else {
            unreachable!("a UDP knob")
        };
        let spec = TrialSpec {
            frame: *frame,
            asked,
            trial_s: secs,
        };
        (
            trial_workload(*overhead, spec, None, base.target.clone()),
            spec,
        )
    }

    /// The workload a measured trial's part records.
    fn recorded(&self, asked: &Workload, r: &Results) -> Workload {
        match self {
            Knob::Udp { overhead, base, .. } => {
                let Params::SearchTrial(t) = &asked.params else {
                    return asked.clone();
                };
                let spec = TrialSpec {
                    frame: t.frame_bytes,
                    asked: t.rate_pps.unwrap_or(0.0),
                    trial_s: t.trial_s,
                };
                trial_workload(*overhead, spec, Some(r.duration_s), base.target.clone())
            }
            Knob::Tcp(_) | Knob::Rr(_) => asked.clone(),
        }
    }

    /// What the search judges of a trial asked `asked`.
    fn judged(&self, asked: f64, r: &Results) -> TrialResult {
        match self {
            Knob::Udp { .. } => TrialResult {
                requested_pps: asked,
                achieved_pps: r.tx_pps,
                loss_ratio: app_loss(r),
                duration_s: r.duration_s,
                ..TrialResult::default()
            },
            Knob::Tcp(_) => TrialResult {
                requested_pps: asked,
                achieved_pps: r.rx_app_bits_per_s,
                retransmit_ratio: r.retransmit_ratio(),
                duration_s: r.duration_s,
                ..TrialResult::default()
            },
            Knob::Rr(_) => TrialResult {
                requested_pps: asked,
                achieved_pps: r.transactions_per_s.unwrap_or(0.0),
                p99_s: r.p99_round_trip_s(),
                duration_s: r.duration_s,
                ..TrialResult::default()
            },
        }
    }

    /// What an unpaced trial reached: the highest rate worth asking.
    fn ceiling(&self, r: &Results) -> f64 {
        match self {
            Knob::Udp { .. } => r.tx_pps,
            Knob::Tcp(_) => r.rx_app_bits_per_s,
            Knob::Rr(_) => r.transactions_per_s.unwrap_or(0.0),
        }
    }
}

/// Runs a search's trials in the campaign, each a part of the run, stored at once; the
/// trials of an interrupted search are replayed from the store instead.
struct Trials<'c, 's> {
    c: &'c mut Campaign<'s>,
    /// The search's lines about trials done, told to the session's observers.
    lines: Option<&'c std::cell::RefCell<Vec<String>>>,
    knob: Knob,
    stopped: bool,
    /// The engine's own error, kept with its kind (a usage error stays one).
    failure: Option<Error>,
    worst: Worst,
}

/// The search's worst case for the time left: every size still to come, and this one, uses
/// its whole trial budget (and its ceiling trial), each trial as long as the final one, each
/// with the most setup time a trial has taken so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Worst {
    /// Trials a size may take: the budget, and the ceiling trial when no highest rate was
    /// given.
    per_size: usize,
    trial_s: f64,
    /// Sizes after this one.
    sizes_after: usize,
    /// Trials this size has taken.
    done: usize,
    /// The most a trial took beyond its length (setup, teardown), s.
    overhead_s: f64,
}

impl Worst {
    fn left_s(&self) -> f64 {
        let trials = self.per_size.saturating_sub(self.done) + self.sizes_after * self.per_size;
        trials as f64 * (self.trial_s + self.overhead_s)
    }

    /// One trial of `length_s` done in `wall_s`.
    fn done(&mut self, length_s: f64, wall_s: f64) {
        self.done += 1;
        self.overhead_s = self.overhead_s.max(wall_s - length_s);
    }
}

impl Trials<'_, '_> {
    /// Tells the session's observers the lines the search wrote since the last time.
    fn tell_lines(&mut self) {
        if let Some(l) = self.lines {
            for line in l.borrow_mut().drain(..) {
                self.c.session.step(&line);
            }
        }
    }

    fn trial(&mut self, duration: Duration, asked: f64) -> Result<Results, Error> {
        let started = std::time::Instant::now();
        let (trial, w) = self.knob.trial(asked, duration)?;
        let knob = &self.knob;
        let m = self.c.trial(&trial, &w, |r| knob.recorded(&w, r))?;
        let r = m.results;
        self.worst
            .done(r.duration_s, started.elapsed().as_secs_f64());
        self.c.session.remaining(self.worst.left_s());
        Ok(r)
    }
}

/// Loss counted at the application, against what was sent (what is still in flight was not
/// lost); nothing sent is all lost.
fn app_loss(r: &Results) -> f64 {
    let sent = r.tx_packets.saturating_sub(r.in_flight_packets);
    if sent > 0 {
        sent.saturating_sub(r.rx_app_packets) as f64 / sent as f64
    } else {
        1.0
    }
}

/// What a trial stopped by Ctrl-C or SIGTERM returns to the search.
const INTERRUPTED: &str = "interrupted";

impl Measurer for Trials<'_, '_> {
    fn interrupted(&self) -> bool {
        self.stopped
    }

    fn measure(&mut self, rate: f64, duration: Duration) -> Result<TrialResult, String> {
        self.tell_lines();
        if self.c.stopping() {
            self.stopped = true;
            return Err(INTERRUPTED.into());
        }
        let r = match self.trial(duration, rate) {
            Ok(r) => r,
            Err(e) => {
                let text = e.error.to_string();
                self.failure = Some(e);
                return Err(text);
            }
        };
        if self.c.stopping() {
            // Stopped mid-trial: what it measured over a part of its length says nothing of
            // the whole, so it is not counted (nor stored as one to replay), and no figure is
            // shown.
            self.stopped = true;
            self.c.session.step(&format!(
                "  {}  trial cut short after {:.1} s of {:.1} s at {}: not counted; --resume measures it again",
                self.knob.label(),
                r.duration_s,
                duration.as_secs_f64(),
                self.knob.show(rate),
            ));
            return Err(INTERRUPTED.into());
        }
        Ok(self.knob.judged(rate, &r))
    }
}

fn purpose_word(p: Purpose) -> &'static str {
    match p {
        Purpose::Bound => "bound",
        Purpose::Bisect => "bisect",
        Purpose::Repeat => "repeat",
        Purpose::Verify => "verify",
    }
}

/// A trial's line, as the observers are told it.
pub fn trial_line(size: usize, rec: &TrialRecord) -> String {
    let r = &rec.result;
    format!(
        "  {size:>5} B  trial {:>2}  {:>6}  {:>5.1} s  asked {:>11}  sent {:>11}  loss {:>9}{}",
        rec.index + 1,
        purpose_word(rec.purpose),
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

/// A TCP or request/response trial's line: the rate asked and reached, and the figure the
/// bound is on.
fn goal_line(knob: &Knob, rec: &TrialRecord) -> String {
    let r = &rec.result;
    let figure = match knob {
        Knob::Tcp(_) => r.retransmit_ratio.map_or_else(
            || "retrans unknown".into(),
            |x| format!("retrans {:.4} %", x * 100.0),
        ),
        _ => r.p99_s.map_or_else(
            || "p99 none answered".into(),
            |p| format!("p99 {}", fmt::value(p * 1e6, Unit::Microseconds)),
        ),
    };
    format!(
        "  {}  trial {:>2}  {:>6}  {:>5.1} s  asked {:>13}  got {:>13}  {figure}{}",
        knob.label(),
        rec.index + 1,
        purpose_word(rec.purpose),
        r.duration_s,
        knob.show(r.requested_pps),
        knob.show(r.achieved_pps),
        if r.generator_limited() {
            "  (short of the rate asked)"
        } else {
            ""
        }
    )
}

/// What a stored search ran with, read back within the bounds the command line has: a store
/// is input too.
pub fn from_run(run: &Run) -> Result<SearchParams, Error> {
    let bad = |why: &str| {
        Error::usage(anyhow!(
            "--resume {}: {why}; only an interrupted `netceil search` can be resumed",
            run.run_id
        ))
    };
    let w = run
        .workload
        .as_ref()
        .ok_or_else(|| bad("it has no workload"))?;
    let p: SearchParams = match w.kind {
        WorkloadKind::Search => w.params_as().map_err(|e| bad(&e.to_string()))?,
        _ => return Err(bad("it is not a search")),
    };
    for (k, v) in [
        ("trial_s", p.trial_s),
        ("initial_trial_s", p.initial_trial_s),
    ] {
        if secs_within(v, RUN).is_none() {
            return Err(bad(&format!("its '{k}' is not a trial length")));
        }
    }
    let g = Goals::of(&p);
    for (k, v) in [(g.min_key, Some(g.min)), (g.max_key, g.max)] {
        if v.is_some_and(|v| !(v.is_finite() && v > 0.0 && g.in_bounds(v))) {
            return Err(bad(&format!("its '{k}' is not a {}", g.what)));
        }
    }
    Ok(p)
}

/// A search's criterion, bounds and rate range, whatever it searches.
struct Goals {
    criterion: Criterion,
    bounds: Vec<f64>,
    min: f64,
    max: Option<f64>,
    min_key: &'static str,
    max_key: &'static str,
    /// The rate, in words for messages.
    what: &'static str,
    unit: &'static str,
}

impl Goals {
    fn of(p: &SearchParams) -> Goals {
        match &p.kind {
            SearchKind::Udp(u) => Goals {
                criterion: Criterion::Loss,
                bounds: u.loss.clone(),
                min: u.min_pps,
                max: u.max_pps,
                min_key: "min_pps",
                max_key: "max_pps",
                what: "packet rate",
                unit: "pps",
            },
            SearchKind::Tcp(t) => Goals {
                criterion: Criterion::Retransmits,
                bounds: t.retrans.clone(),
                min: t.min_bps,
                max: t.max_bps,
                min_key: "min_bps",
                max_key: "max_bps",
                what: "goodput",
                unit: "bit/s",
            },
            SearchKind::Rr(r) => Goals {
                criterion: Criterion::P99,
                bounds: r.p99_s.clone(),
                min: r.min_tps,
                max: r.max_tps,
                min_key: "min_tps",
                max_key: "max_tps",
                what: "transaction rate",
                unit: "transactions/s",
            },
        }
    }

    fn in_bounds(&self, v: f64) -> bool {
        match self.criterion {
            Criterion::Loss => Rate::PacketsPerSecond(v).in_bounds(),
            _ => v.is_finite() && v > 0.0,
        }
    }
}

/// The checks the search makes before any traffic: the workload's own (a UDP frame must hold
/// the headers and fit the path to a far end; TCP and request/response settings as `run`
/// checks them) and the search's bounds.
pub fn check(p: &SearchParams, reach: Reach) -> Result<(), Error> {
    let g = Goals::of(p);
    let validate = || {
        search_config(p, g.min, g.max.unwrap_or(g.min * 2.0))
            .validate()
            .map_err(|e| Error::usage(anyhow!(e)))
    };
    let SearchKind::Udp(u) = &p.kind else {
        validate()?;
        // The trial's own checks, at the lowest rate.
        let secs = Duration::from_secs_f64(p.trial_s);
        for knob in knobs(p, reach, 0) {
            knob.trial(g.min, secs)?;
        }
        return Ok(());
    };
    let overhead = udp_payload_to_frame(0, reach.ipv6);
    if u.sizes.is_empty() {
        return Err(Error::usage(anyhow!(
            "--frame-sizes: at least one frame size"
        )));
    }
    let least = overhead + netceil_load::header::HEADER_LEN;
    if let Some(f) = u.sizes.iter().find(|f| **f < least) {
        return Err(Error::usage(anyhow!(
            "--frame-sizes {f}: a frame must hold the {overhead}-byte headers and netceil's {}-byte header: {least} at least",
            netceil_load::header::HEADER_LEN
        )));
    }
    validate()?;
    let pairs: Vec<(usize, usize)> = u.sizes.iter().map(|&f| (f, f - overhead)).collect();
    crate::kernel::check_path_mtu(reach.to, "--frame-sizes", &pairs)
        .map_err(|e| Error::usage(anyhow!(e)))
}

/// The settings a search searches, one after the other: each UDP frame size, or the one TCP
/// or request/response configuration.
fn knobs(p: &SearchParams, reach: Reach, wire_id: u16) -> Vec<Knob> {
    let target = reach.to.map(|t| t.to_string());
    match &p.kind {
        SearchKind::Udp(u) => {
            let overhead = udp_payload_to_frame(0, reach.ipv6);
            u.sizes
                .iter()
                .map(|&frame| Knob::Udp {
                    base: udp_train(
                        reach,
                        frame.saturating_sub(overhead),
                        u.pacing,
                        u.rcvbuf,
                        u.rcvbuf_force,
                    ),
                    frame,
                    overhead,
                    wire_id,
                })
                .collect()
        }
        SearchKind::Tcp(t) => vec![Knob::Tcp(tcp_flows(t, reach, target))],
        SearchKind::Rr(r) => vec![Knob::Rr(rr_probe(r, reach, target))],
    }
}

/// A TCP search's flows, as `netceil run tcp` has them but for what the search sets: paced
/// where the TCP load chooses (`auto`), one sender thread per CPU.
fn tcp_flows(t: &TcpSearch, reach: Reach, target: Option<String>) -> TcpParams {
    TcpParams {
        flows: t.flows,
        msg_size: t.msg_size,
        rate_per_flow_bps: None,
        duration_s: 1.0,
        threads: 1,
        ipv6: reach.ipv6,
        target,
        pacing: TcpPacingRequest::Auto,
        rx_cpu: None,
        tx_cpu: None,
        congestion: None,
        direction: TcpDirection::Up,
        rcvbuf: Default::default(),
        sink_wakes: Default::default(),
    }
}

/// A request/response search's client, as `netceil run rr` has it but for what the search
/// sets.
fn rr_probe(r: &RrSearch, reach: Reach, target: Option<String>) -> RrParams {
    RrParams {
        proto: r.proto,
        size: r.size,
        flows: r.flows,
        rate_tps: None,
        duration_s: 1.0,
        ipv6: reach.ipv6,
        target,
        rx_cpu: None,
        tx_cpu: None,
        spin: false,
    }
}

/// How many settings the search searches one after the other.
fn settings_count(p: &SearchParams) -> usize {
    match &p.kind {
        SearchKind::Udp(u) => u.sizes.len(),
        SearchKind::Tcp(_) | SearchKind::Rr(_) => 1,
    }
}

/// The most steps the search can take: its trial budget per setting, and the workload's own
/// ceiling first when no highest rate was given.
pub fn steps_at_most(p: &SearchParams) -> u64 {
    let g = Goals::of(p);
    (settings_count(p) * (p.max_trials + usize::from(g.max.is_none()))) as u64
}

fn search_config(p: &SearchParams, min: f64, max: f64) -> SearchConfig {
    let g = Goals::of(p);
    SearchConfig {
        min_pps: min,
        max_pps: max,
        tolerances: g.bounds,
        criterion: g.criterion,
        final_duration: Duration::from_secs_f64(p.trial_s),
        initial_duration: Duration::from_secs_f64(p.initial_trial_s),
        precision: p.precision,
        max_trials: p.max_trials,
        rate_unit: g.unit,
        // The decision rule is not a flag: the defaults, which the run's note states.
        ..SearchConfig::default()
    }
}

/// A knee with the index of the part that stopped it (its first failing trial) and of the
/// part that verified it.
struct Found {
    knee: Knee,
    stopper: Option<usize>,
    verifier: Option<usize>,
}

/// The knees one setting's search found, with their trials' part indexes counted from
/// `offset`.
fn knees_of(
    knob: &Knob,
    outcome: &search::SearchOutcome,
    offset: usize,
    max_trials: usize,
) -> Vec<Found> {
    // Stopped by the trial budget rather than by an interruption.
    let spent = outcome.stopped_early.is_some() && outcome.trials.len() >= max_trials;
    outcome
        .results
        .iter()
        .map(|r| {
            let note = r
                .incomplete
                .clone()
                .or_else(|| outcome.stopped_early.clone())
                .map(|n| {
                    if spent {
                        format!("{n}; {}", budget_note(knob, outcome, r, max_trials))
                    } else {
                        n
                    }
                });
            Found {
                knee: knee(knob, outcome, r, note),
                stopper: r.first_failing_trial.map(|i| offset + i),
                verifier: r.verifying_trial.map(|i| offset + i),
            }
        })
        .collect()
}

/// One bound's answer as the run's knee.
fn knee(
    knob: &Knob,
    outcome: &search::SearchOutcome,
    r: &search::ToleranceResult,
    note: Option<String>,
) -> Knee {
    let (size_bytes, goal) = match knob {
        Knob::Udp { frame, .. } => (*frame, None),
        Knob::Tcp(t) => (
            t.msg_size,
            Some((
                SearchBound::Retransmits {
                    max_ratio: r.tolerance,
                },
                SearchRateUnit::GoodputBitsPerSecond,
            )),
        ),
        Knob::Rr(q) => (
            q.size,
            Some((
                SearchBound::P99 { max_s: r.tolerance },
                SearchRateUnit::TransactionsPerSecond,
            )),
        ),
    };
    let udp = goal.is_none();
    Knee {
        size_bytes,
        point: "app".into(),
        loss_tolerance: if udp { r.tolerance } else { 0.0 },
        min_interval_us: r.rate_pps.filter(|_| udp).map(|p| 1e6 / p),
        rate_pps: r.rate_pps.filter(|_| udp),
        bits_per_s: match knob {
            Knob::Udp { frame, .. } => r.rate_pps.map(|p| p * *frame as f64 * 8.0),
            Knob::Tcp(_) => r.rate_pps,
            Knob::Rr(_) => None,
        },
        loss_ratio: if udp {
            r.loss_spread.map(|s| s.1)
        } else {
            None
        },
        trials: outcome.trials.len(),
        generator_limited: r.generator_limited,
        verified: r.verified,
        upper_pps: r.upper_pps.filter(|_| udp),
        // Filled in once the trials are analyzed.
        stopped_by: None,
        note,
        goal: goal.map(|(bound, unit)| KneeGoal {
            bound,
            rate: r.rate_pps,
            unit,
            upper: r.upper_pps,
            seen: r.worst_seen.filter(|v| v.is_finite()),
            // Filled in once the parts have their ids.
            verified_by: None,
        }),
    }
}

/// What to say when the trial budget ran out: that it did, the flag that raises it, and the
/// best rate that passed so far (verified by a full-length trial, or said not to be).
fn budget_note(
    knob: &Knob,
    outcome: &search::SearchOutcome,
    r: &search::ToleranceResult,
    max_trials: usize,
) -> String {
    let criterion = match knob {
        Knob::Udp { .. } => Criterion::Loss,
        Knob::Tcp(_) => Criterion::Retransmits,
        Knob::Rr(_) => Criterion::P99,
    };
    let best = match r.rate_pps {
        Some(v) => format!("{}, verified by a full-length trial", knob.show(v)),
        None => outcome
            .trials
            .iter()
            .filter(|t| criterion.passes(&t.result, r.tolerance))
            .max_by(|a, b| a.result.achieved_pps.total_cmp(&b.result.achieved_pps))
            .map_or_else(
                || "none (no trial passed)".into(),
                |t| {
                    format!(
                        "{} in a {:.2} s trial, shorter than the final one: not verified",
                        knob.show(t.result.achieved_pps),
                        t.result.duration_s
                    )
                },
            ),
    };
    format!(
        "the trial budget ran out (--max-trials {max_trials}): raise --max-trials to finish; the best rate that passed so far: {best}"
    )
}

/// The exact command that goes on with an interrupted search stored as `run_id`: the far end
/// and the address family must be given again, as `--resume` checks them.
pub fn resume_command(run_id: &str, p: &SearchParams) -> String {
    let mut c = format!("netceil search {} --resume {run_id}", p.kind.name());
    if let Some(t) = &p.target {
        c.push_str(&format!(" --to {t}"));
    }
    if p.ipv6 {
        c.push_str(" --ipv6");
    }
    c
}

/// What a search found.
#[derive(Debug, Clone, PartialEq)]
pub struct Searched {
    /// Per setting finished (frame size, or the TCP or request/response configuration), one
    /// knee per bound (also the run's knees).
    pub knees: Vec<Knee>,
    /// Stopped before every setting was searched.
    pub interrupted: bool,
}

/// One setting's search: its knees, and whether it was interrupted before it finished (its
/// knees are then what it found so far); `None` when it was stopped before any.
fn search_one(
    c: &mut Campaign,
    p: &SearchParams,
    knob: Knob,
    after: usize,
) -> Result<Option<(Vec<Found>, bool)>, Error> {
    let g = Goals::of(p);
    let first_part = c.parts();
    let mut trials = Trials {
        c,
        knob,
        lines: None,
        stopped: false,
        failure: None,
        worst: Worst {
            per_size: p.max_trials + usize::from(g.max.is_none()),
            trial_s: p.trial_s,
            sizes_after: after,
            ..Worst::default()
        },
    };
    trials.c.session.remaining(trials.worst.left_s());
    // The highest rate worth asking: what the workload reaches unpaced, unless given.
    let max = match g.max {
        Some(m) => m,
        None => ceiling(&mut trials, p.initial_trial_s)?,
    };
    let cfg = search_config(p, g.min.min(max * 0.5), max);
    // Each trial's line, told by the trials themselves (they hold the campaign).
    let lines = std::cell::RefCell::new(Vec::new());
    trials.lines = Some(&lines);
    let line_knob = trials.knob.clone();
    let outcome = search::search(&cfg, &mut trials, &mut |rec| {
        lines.borrow_mut().push(match &line_knob {
            Knob::Udp { frame, .. } => trial_line(*frame, rec),
            k => goal_line(k, rec),
        });
    });
    trials.tell_lines();
    let offset = first_part + usize::from(g.max.is_none());
    match outcome {
        Ok(o) if trials.stopped => {
            // Interrupted mid-way: what it found so far, said to be that.
            let mut k = knees_of(&trials.knob, &o, offset, p.max_trials);
            for f in &mut k {
                f.knee.note = Some(format!(
                    "interrupted before this size finished; {}",
                    f.knee.note.take().unwrap_or_default()
                ));
            }
            Ok(Some((k, true)))
        }
        Ok(o) => Ok(Some((
            knees_of(&trials.knob, &o, offset, p.max_trials),
            false,
        ))),
        Err(_) if trials.stopped => Ok(None),
        Err(e) => Err(trials.failure.take().unwrap_or_else(|| {
            Error::runtime(anyhow!("search at {}: {e}", trials.knob.label().trim()))
        })),
    }
}

/// The workload's own ceiling: one unpaced trial of `initial_s`.
fn ceiling(trials: &mut Trials, initial_s: f64) -> Result<f64, Error> {
    let label = trials.knob.label();
    let what = match &trials.knob {
        Knob::Udp { frame, .. } => {
            format!("{frame} B frames: measuring the generator's own ceiling")
        }
        _ => format!("{}: measuring its own ceiling", label.trim()),
    };
    trials
        .c
        .session
        .say(&format!("{what} ({initial_s} s unpaced)"));
    let r = trials.trial(Duration::from_secs_f64(initial_s), 0.0)?;
    let m = trials.knob.ceiling(&r);
    let reaches = match &trials.knob {
        Knob::Udp { .. } => "the generator sends",
        _ => "reaches",
    };
    trials.c.session.step(&format!(
        "  {label}  {reaches} {} flat out",
        trials.knob.show(m)
    ));
    if !(m > 0.0 && m.is_finite()) {
        return Err(Error::runtime(anyhow!(
            "{}: the unpaced trial reached no rate ({m}), so there is nothing to search below; give the highest rate to try",
            label.trim()
        )));
    }
    Ok(m)
}

/// Searches as `p` says, in the campaign, sending where `reach` says, then ends the
/// campaign: each trial analyzed, the knees with what stopped and what verified each, the
/// notes. `why_stopped` says what interrupted it ("interrupted (Ctrl-C)"), if something did.
pub fn run(
    c: &mut Campaign,
    p: &SearchParams,
    reach: Reach,
    why_stopped: &dyn Fn() -> String,
) -> Result<Searched, Error> {
    let mut found: Vec<Found> = Vec::new();
    let mut interrupted = false;
    let knobs = knobs(p, reach, wire_run_id(&c.top.run_id));
    let n = knobs.len();
    for (i, knob) in knobs.into_iter().enumerate() {
        match search_one(c, p, knob, n - 1 - i)? {
            Some((k, cut)) => {
                found.extend(k);
                if cut {
                    interrupted = true;
                    break;
                }
            }
            None => {
                interrupted = true;
                break;
            }
        }
        if c.stopping() {
            interrupted = true;
            break;
        }
    }
    c.end(PartAnalysis::Each);
    let replayed = c.replayed();
    let top = &mut c.top;
    let knees: Vec<Knee> = found
        .into_iter()
        .map(|f| {
            let mut k = f.knee;
            k.stopped_by = f.stopper.and_then(|i| top.parts.get(i)).map(stopper);
            if let Some(g) = &mut k.goal {
                g.verified_by = f
                    .verifier
                    .and_then(|i| top.parts.get(i))
                    .map(|p| p.run_id.clone());
            }
            k
        })
        .collect();
    top.knees = knees.clone();
    top.meta.complete = !interrupted;
    if let Some(old) = &p.resumed_from {
        top.notes.push(format!(
            "resumed from {old}: {replayed} of its trials were replayed from the store (no traffic), the rest measured now; replayed trials keep the series they were stored with (none, if the search was killed)"
        ));
    }
    if interrupted {
        top.notes.push(format!(
            "{}: the knees are what was found so far (a size cut short says so in its note); `{}` goes on from here",
            why_stopped(),
            resume_command(&top.run_id, p)
        ));
    }
    top.notes.extend(notes(p));
    Ok(Searched { knees, interrupted })
}

/// What the run's knees mean: where the figure was measured, and the decision rule.
fn notes(p: &SearchParams) -> Vec<String> {
    let d = SearchConfig::default();
    let (what, failed) = match &p.kind {
        SearchKind::Udp(_) => (
            format!(
                "loss counted at the application (netceil's receiver), against what was sent; bits/s are Ethernet frame bits (frame size × 8 × rate), decimal units (1 Gbit/s = 10^9 bit/s); {} s trials decide, shorter ones narrow",
                p.trial_s
            ),
            "lost more",
        ),
        SearchKind::Tcp(t) => (
            format!(
                "the rate is the goodput netceil's receiver read, all {} flows together, over its receive window, with the flows paced to the load asked; retransmits are the senders' tcpi_total_retrans over tcpi_data_segs_out (TCP_INFO), summed over the flows; a load passes when its goodput is within 1 % of the load asked and its retransmit ratio within the budget; decimal units (1 Gbit/s = 10^9 bit/s); {} s trials decide, shorter ones narrow",
                t.flows, p.trial_s
            ),
            "broke the budget",
        ),
        SearchKind::Rr(_) => (
            format!(
                "the rate is transactions answered per second; the p99 round trip is measured from each request's intended send time, so queueing behind a slow answer counts; a rate passes when its p99 is under the bound and the rate answered is within 1 % of the rate asked (a server that falls behind fails, however short its round trips); {} s trials decide, shorter ones narrow",
                p.trial_s
            ),
            "broke the bound",
        ),
    };
    let within = match &p.kind {
        SearchKind::Udp(_) => "within a tolerance",
        _ => "within a bound",
    };
    let seen = match &p.kind {
        SearchKind::Udp(_) => "the loss seen at a rate",
        SearchKind::Tcp(_) => "the retransmit ratio seen at a rate",
        SearchKind::Rr(_) => "the p99 seen at a rate",
    };
    let lossy = match &p.kind {
        SearchKind::Udp(_) => "one lossy trial",
        _ => "one failing trial",
    };
    vec![
        what,
        format!(
            "a rate is {within} when at most {} of its trial-seconds (at least {} full-length trials' worth, shorter failures counted too) {failed}, and it passed a full-length trial: {lossy} on a noisy path does not move the answer; {seen} is the worst of its full-length trials",
            fraction(d.exceed_ratio),
            d.duration_sum_trials
        ),
    ]
}

/// A share in words where it has a plain one ("half"), else as a percentage.
fn fraction(r: f64) -> String {
    if r == 0.5 {
        "half".into()
    } else {
        format!("{} %", r * 100.0)
    }
}

/// What stopped a knee: the trial's part, its rate and its top finding.
fn stopper(p: &Run) -> String {
    let top_finding = p
        .findings
        .first()
        .map(|f| format!("{}: {}", f.cause, f.summary))
        .unwrap_or_else(|| "no finding".into());
    format!("{} at {}: {top_finding}", p.run_id, rate_of(p))
}

/// The rate a trial's part was asked, in its unit.
fn rate_of(p: &Run) -> String {
    let unpaced = || "unpaced".to_string();
    match p.workload.as_ref().map(|w| &w.params) {
        Some(Params::SearchTrial(t)) => t
            .rate_pps
            .map_or_else(unpaced, |v| fmt::value(v, Unit::PacketsPerSecond)),
        Some(Params::Tcp(t)) => t.rate_per_flow_bps.map_or_else(unpaced, |v| {
            SearchRateUnit::GoodputBitsPerSecond.show(v * f64::from(t.flows))
        }),
        Some(Params::Rr(r)) => r
            .rate_tps
            .map_or_else(unpaced, |v| SearchRateUnit::TransactionsPerSecond.show(v)),
        _ => p
            .workload
            .as_ref()
            .and_then(|w| w.params_as::<SearchTrialParams>().ok())
            .and_then(|t| t.rate_pps)
            .map_or_else(unpaced, |v| fmt::value(v, Unit::PacketsPerSecond)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_left_is_the_whole_budget_of_every_size_to_come() {
        let mut w = Worst {
            per_size: 11,
            trial_s: 10.0,
            sizes_after: 1,
            ..Worst::default()
        };
        // 22 trials of up to 10 s: the default search's two sizes, not "2m".
        assert_eq!(w.left_s(), 220.0);
        w.done(10.0, 10.5);
        w.done(1.0, 1.2);
        // 9 + 11 trials left, each with the most setup seen (0.5 s).
        assert_eq!(w.left_s(), 20.0 * 10.5);
        // A replayed trial (no wall time) lowers nothing but the count.
        w.done(10.0, 0.0);
        assert_eq!(w.left_s(), 19.0 * 10.5);
    }
}
