//! The loss-criterion search: for each loss tolerance, the highest offered rate whose loss
//! ratio stays within it (RFC 2544 throughput is the 0 % tolerance, the NDR; a tolerance above
//! it gives a PDR). All tolerances come out of one search, after the ideas of FD.io CSIT's
//! MLRsearch (draft-ietf-bmwg-mlrsearch): every trial counts for every tolerance, short trials
//! narrow the interval while it is wide, only the last phase, at the full trial duration,
//! decides, and noise is weighed by an exceed ratio over trial-seconds rather than retried.
//!
//! The search is pure planning over a [`Measurer`]: it decides the next trial from the trials
//! so far. The real measurer drives the load engine; a simulated one (a device with a known NDR
//! and noise) tests the logic without traffic.
//!
//! # Phases
//! Trial durations double from the initial one up to the final one. In phase k of P the goal
//! is a relative width (upper − lower) / upper of `precision × 2^(P−1−k)`, so each phase hands
//! the next an interval twice as wide as its goal. A new phase re-measures the bounds it
//! inherits (a rate that passed in 1 s may lose packets in 10 s) before it bisects; a
//! re-measured upper bound is usually decided by that one trial, its shorter failures adding
//! to the new one's. When a phase's longer trials reject the lower bound the shorter phase
//! passed (loopback: a receiver stalled now and then overflows its buffer, and a longer
//! trial sees more stalls, so short trials pass where long ones lose), this phase and the
//! ones between would only narrow around rates the final trials reject: the search stops
//! narrowing there and goes to the final phase at once. A lone upper bound in the final phase
//! (the shorter phases' lower bound failed there) is stepped down from by halving, as a
//! plain binary search would: the boundary may be anywhere below it.
//!
//! # Noise: the exceed ratio
//! A load is not judged by its latest trial but by the trial-seconds spent at it, for each
//! tolerance and phase: the seconds of trials at least as long as the phase's (its own) that
//! lost more than the tolerance are high-loss, the others low-loss; shorter trials that lost
//! too much count as high-loss too, less what shorter trials that did not lose offset at the
//! exceed ratio, and shorter trials never vouch for a load on their own. In the final phase a
//! load needs `duration_sum_trials` full-length trials' worth of seconds to be decided (the
//! shorter phases only narrow: one trial of their length decides there). It is an upper
//! bound when more than the exceed ratio of those seconds were high-loss even if every
//! missing second were low-loss, a lower bound when at most the exceed ratio were even if
//! every missing second were high-loss, and undecided otherwise. An undecided load between
//! the bounds stands in for the bound its seconds lean to while the search bisects below (or
//! above) it, and gets its next trial only when the search would end on it (the shortest
//! kind when all its trials so far lost too much: its seconds then add to theirs): a load
//! the bisection passes by is never settled, so on a noisy device a load that lost once costs
//! one trial, as in a plain binary search, unless the answer stands on it. With the defaults (one half, two
//! trials' worth), one full-length trial within the tolerance makes a lower bound, one lossy
//! full-length trial alone decides nothing, and a load that lost and passed once each stays
//! within it. So one lossy trial on a noisy device does not move the answer, and a rate that
//! fails its long trial after passing a short one is not kept. The answer is always a load
//! with a full-length trial within the tolerance (its verification), reported as the rate
//! the generator offered there.
//!
//! # Limits
//! The number of trials is bounded; when the budget runs out the search stops, and each
//! tolerance says how far it got. A rate the generator could not offer (it achieved less than
//! 99 % of it) is not a success of the system: a pass there makes the answer a lower bound,
//! labelled as such.

use std::time::Duration;

/// What one trial measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrialResult {
    /// The rate asked for, packets/s.
    pub requested_pps: f64,
    /// The rate the generator achieved, packets/s.
    pub achieved_pps: f64,
    /// Lost over sent, 0–1.
    pub loss_ratio: f64,
    /// How long the trial lasted, s.
    pub duration_s: f64,
    /// Request/response: the 99th-percentile round trip, s (for [`Criterion::P99`]).
    pub p99_s: Option<f64>,
    /// TCP: segments retransmitted over segments sent (for [`Criterion::Retransmits`]).
    pub retransmit_ratio: Option<f64>,
}

/// What a trial is judged on against each goal's bound (the configuration's `tolerances`).
/// The planner is the same for each: every trial counts for every goal, short trials narrow,
/// full-length ones decide by the exceed ratio, and every answer has a passing full-length
/// trial.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Criterion {
    /// Lost over sent at most the goal: a loss tolerance (0 for the NDR).
    #[default]
    Loss,
    /// The 99th-percentile round trip at most the goal, s, with the rate achieved within 1 %
    /// of the rate asked: a server that falls behind fails, however short its round trips.
    P99,
    /// Segments retransmitted over segments sent at most the goal, with the goodput within 1 %
    /// of the load offered: a path that cannot carry the load fails, retransmitting or not.
    Retransmits,
}

impl Criterion {
    /// Whether `r` meets the bound `goal`.
    pub fn passes(self, r: &TrialResult, goal: f64) -> bool {
        let eps = 1e-12;
        match self {
            Criterion::Loss => r.loss_ratio <= goal + eps,
            Criterion::P99 => !r.generator_limited() && r.p99_s.is_some_and(|p| p <= goal + eps),
            Criterion::Retransmits => {
                !r.generator_limited() && r.retransmit_ratio.is_some_and(|x| x <= goal + eps)
            }
        }
    }

    /// The figure a trial is judged on: its loss ratio, p99 round trip (s) or retransmit
    /// ratio; `None` when the trial did not measure it.
    pub fn value(self, r: &TrialResult) -> Option<f64> {
        match self {
            Criterion::Loss => Some(r.loss_ratio),
            Criterion::P99 => r.p99_s,
            Criterion::Retransmits => r.retransmit_ratio,
        }
    }

    /// What a trial that fails the bound `goal` did, in words.
    fn missed(self, goal: f64) -> String {
        match self {
            Criterion::Loss => format!("lost more than {} %", goal * 100.0),
            Criterion::P99 => format!(
                "had a p99 round trip above {} µs, or fell behind the rate asked",
                goal * 1e6
            ),
            Criterion::Retransmits => format!(
                "retransmitted more than {} % of its segments, or fell short of the load",
                goal * 100.0
            ),
        }
    }

    /// The option that sets the goals, for messages.
    fn flag(self) -> &'static str {
        match self {
            Criterion::Loss => "--loss",
            Criterion::P99 => "--p99",
            Criterion::Retransmits => "--retrans",
        }
    }
}

impl TrialResult {
    /// Whether the generator fell short of the rate asked (by more than 1 %).
    pub fn generator_limited(&self) -> bool {
        self.achieved_pps < 0.99 * self.requested_pps
    }
}

/// The system under test, as the search sees it.
pub trait Measurer {
    /// Offers `rate_pps` for `duration` and reports what happened.
    fn measure(&mut self, rate_pps: f64, duration: Duration) -> Result<TrialResult, String>;

    /// Whether the last error was a stop asked for (Ctrl-C), not a failure: the search then
    /// ends with what it found so far.
    fn interrupted(&self) -> bool {
        false
    }
}

/// What to search for.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchConfig {
    /// The lowest rate worth trying, packets/s.
    pub min_pps: f64,
    /// The highest rate to try, packets/s (the generator's or the link's).
    pub max_pps: f64,
    /// The goals' bounds, in the criterion's terms: loss tolerances, 0 ≤ t < 1 (0 for the
    /// NDR); p99 round trips, s; retransmit ratios, 0 ≤ t < 1.
    pub tolerances: Vec<f64>,
    /// What each trial is judged on against the bounds.
    pub criterion: Criterion,
    /// The duration of the trials that decide.
    pub final_duration: Duration,
    /// The duration of the first, short trials.
    pub initial_duration: Duration,
    /// The relative width the final interval must reach: (upper − lower) / upper.
    pub precision: f64,
    /// The most trials the search may run, verifications included.
    pub max_trials: usize,
    /// The share of a load's trial-seconds that may lose more than the tolerance while the
    /// load still counts as within it (0 ≤ r < 1; 0: any lossy trial rules the load out).
    pub exceed_ratio: f64,
    /// The trial-seconds a load needs before the final phase decides it, in full-length
    /// trials (≥ 1).
    pub duration_sum_trials: f64,
    /// The rates' unit in messages: `pps` (the `_pps` fields hold whatever rate the
    /// measurer's knob is: packets/s, goodput bits/s, transactions/s).
    pub rate_unit: &'static str,
}

impl Default for SearchConfig {
    /// NDR and a 0.5 % PDR over 10 kpps..1 Mpps, 2 s trials from 0.25 s, to 2 %, with an
    /// exceed ratio of one half over two trials' worth of seconds.
    fn default() -> SearchConfig {
        SearchConfig {
            min_pps: 10e3,
            max_pps: 1e6,
            tolerances: vec![0.0, 0.005],
            criterion: Criterion::Loss,
            final_duration: Duration::from_secs(2),
            initial_duration: Duration::from_millis(250),
            precision: 0.02,
            max_trials: 60,
            exceed_ratio: EXCEED_RATIO,
            duration_sum_trials: DURATION_SUM_TRIALS,
            rate_unit: "pps",
        }
    }
}

/// The exceed ratio the search uses unless told otherwise.
pub const EXCEED_RATIO: f64 = 0.5;
/// The trial-seconds a load needs, in trials of the phase's length, unless told otherwise.
pub const DURATION_SUM_TRIALS: f64 = 2.0;

impl SearchConfig {
    /// Why the configuration cannot be searched, in words naming the option.
    pub fn validate(&self) -> Result<(), String> {
        let flag = self.criterion.flag();
        if self.tolerances.is_empty() {
            return Err(match self.criterion {
                Criterion::Loss => {
                    "--loss: at least one tolerance is needed (0 for the NDR)".into()
                }
                _ => format!("{flag}: at least one bound is needed"),
            });
        }
        let bad = |t: &&f64| match self.criterion {
            Criterion::P99 => !(**t > 0.0 && t.is_finite()),
            _ => !(0.0..1.0).contains(*t) || !t.is_finite(),
        };
        if let Some(t) = self.tolerances.iter().find(bad) {
            return Err(match self.criterion {
                Criterion::P99 => format!("{flag}: a bound of {t} s is not a round trip above 0"),
                _ => format!("{flag}: a tolerance of {} % is not below 100 %", t * 100.0),
            });
        }
        if !(self.min_pps > 0.0 && self.min_pps < self.max_pps && self.max_pps.is_finite()) {
            return Err(format!(
                "the rate range {}..{} {} is empty: the lowest rate must be above 0 and below the highest",
                self.min_pps, self.max_pps, self.rate_unit
            ));
        }
        if !(self.precision > 0.0 && self.precision <= 0.5) {
            return Err(format!(
                "--precision {} % must be above 0 and at most 50 %",
                self.precision * 100.0
            ));
        }
        if self.initial_duration.is_zero() || self.final_duration < self.initial_duration {
            return Err("--trial: the final trial must be at least as long as the first".into());
        }
        if !(0.0..1.0).contains(&self.exceed_ratio) {
            return Err(format!(
                "the exceed ratio {} must be at least 0 and below 1",
                self.exceed_ratio
            ));
        }
        if !(self.duration_sum_trials >= 1.0 && self.duration_sum_trials.is_finite()) {
            return Err(format!(
                "the duration sum of {} trials must be at least one trial",
                self.duration_sum_trials
            ));
        }
        if self.max_trials < 2 {
            return Err("the trial budget must allow at least 2 trials".into());
        }
        Ok(())
    }

    /// The durations of the phases, shortest first, ending with the final one.
    pub fn phase_durations(&self) -> Vec<Duration> {
        let mut ds = vec![self.final_duration];
        while let Some(&d) = ds.last() {
            let half = d / 2;
            if half < self.initial_duration || half.is_zero() {
                break;
            }
            ds.push(half);
        }
        ds.reverse();
        ds
    }
}

/// Why a trial was run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Finding or re-measuring a bound.
    Bound,
    /// Halving the interval.
    Bisect,
    /// More trial-seconds at a load its trials so far leave undecided.
    Repeat,
    /// The full-length trial at a lower bound a shorter phase found.
    Verify,
}

/// One trial and where it stood in the search.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialRecord {
    /// 0-based, in the order run.
    pub index: usize,
    /// 0-based phase; the last phase runs at the final duration.
    pub phase: usize,
    pub final_duration: bool,
    pub purpose: Purpose,
    pub result: TrialResult,
}

/// The answer for one tolerance.
#[derive(Debug, Clone, PartialEq)]
pub struct ToleranceResult {
    pub tolerance: f64,
    /// The highest rate that passed at the final duration, as the generator offered it, pps.
    pub rate_pps: Option<f64>,
    /// The lowest rate found to lose too much: an upper bound, at the final duration or at a
    /// shorter one (a shorter trial that lost too much counts against a load), pps.
    pub upper_pps: Option<f64>,
    /// The smallest and largest loss ratio seen at `rate_pps` at the final duration.
    pub loss_spread: Option<(f64, f64)>,
    /// Trials at the final duration in the whole search, verifications included (each serves
    /// every tolerance).
    pub final_trials: usize,
    /// A full-length trial at `rate_pps` passed: the answer's verification.
    pub verified: bool,
    /// Trials at or below the answer that lost too much, in any phase: how noisy the device
    /// was where it passed.
    pub flaps: usize,
    /// The generator could not offer more: `rate_pps` is a lower bound.
    pub generator_limited: bool,
    /// What stopped it: the longest trial that failed at `upper_pps` (of any phase), else the
    /// lowest failing trial above `rate_pps`.
    pub first_failing_trial: Option<usize>,
    /// The passing full-length trial `rate_pps` comes from: the answer's verification.
    pub verifying_trial: Option<usize>,
    /// The worst of the criterion's figure (see [`Criterion::value`]) among the full-length
    /// trials at the answer.
    pub worst_seen: Option<f64>,
    /// Why the answer is not exact to the precision asked, when it is not.
    pub incomplete: Option<String>,
}

/// Everything the search did and found.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOutcome {
    /// One per tolerance, in the order given.
    pub results: Vec<ToleranceResult>,
    pub trials: Vec<TrialRecord>,
    /// Why the search stopped before it finished, if it did.
    pub stopped_early: Option<String>,
}

/// A load's standing for one goal, from the trial-seconds spent at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Within the tolerance, even if every missing trial-second lost too much.
    Lower,
    /// Over the tolerance, even if every missing trial-second lost nothing.
    Upper,
    /// Not enough trial-seconds yet to say.
    Undecided,
}

/// What one phase asks of one tolerance.
#[derive(Debug, Clone, Copy)]
struct Goal {
    tolerance: f64,
    /// Trials at least this long, s, are the phase's own; shorter ones only count against.
    duration: f64,
    /// The trial-seconds a load needs before it is decided, s.
    sum: f64,
    exceed_ratio: f64,
    /// The relative width the phase narrows to.
    width: f64,
}

/// The trial-seconds at one load, split by length and outcome.
#[derive(Debug, Clone, Copy, Default)]
struct Seconds {
    long_high: f64,
    long_low: f64,
    short_high: f64,
    short_low: f64,
}

impl Seconds {
    /// Classifies the load. Short trials that lost too much count against it, less what short
    /// trials that did not lose offset at the exceed ratio; short trials never make a lower
    /// bound on their own.
    fn class(&self, g: &Goal) -> Class {
        let e = g.exceed_ratio;
        let offset = self.short_low * e / (1.0 - e);
        let high = self.long_high + (self.short_high - offset).max(0.0);
        let low = self.long_low;
        let whole = g.sum.max(high + low);
        let missing = whole - high - low;
        let eps = 1e-9 * whole;
        if high > e * whole + eps {
            Class::Upper
        } else if high + missing <= e * whole + eps {
            Class::Lower
        } else {
            Class::Undecided
        }
    }
}

/// The durations a record's phase planned, s.
fn planned(durations: &[Duration], r: &TrialRecord) -> f64 {
    durations[r.phase].as_secs_f64()
}

fn passes(c: Criterion, r: &TrialRecord, tolerance: f64) -> bool {
    c.passes(&r.result, tolerance)
}

/// The relevant bounds of one goal: the lowest upper bound, and the highest lower bound
/// below it; loads as requested, pps.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Bounds {
    lo: Option<f64>,
    hi: Option<f64>,
    /// The lowest load between them with trials of the phase's length, not yet decided, whose
    /// trial-seconds so far lean high: it bounds the bisection from above until it is decided.
    lean_hi: Option<f64>,
    /// The highest such load below `lean_hi` whose trial-seconds lean low.
    lean_lo: Option<f64>,
}

impl Bounds {
    /// The bracket the next trial narrows: the decided bounds, or the undecided loads
    /// between them that lean one way.
    fn bracket(&self) -> (Option<f64>, Option<f64>) {
        (self.lean_lo.or(self.lo), self.lean_hi.or(self.hi))
    }
}

struct Search<'a> {
    cfg: &'a SearchConfig,
    m: &'a mut dyn Measurer,
    on_trial: &'a mut dyn FnMut(&TrialRecord),
    durations: Vec<Duration>,
    trials: Vec<TrialRecord>,
}

/// Why the search stopped narrowing a goal.
enum Stop {
    OutOfTrials,
    Interrupted,
    Failed(String),
}

impl Search<'_> {
    fn run(&mut self, rate: f64, phase: usize, purpose: Purpose) -> Result<(), Stop> {
        if self.trials.len() >= self.cfg.max_trials {
            return Err(Stop::OutOfTrials);
        }
        let rate = rate.clamp(self.cfg.min_pps, self.cfg.max_pps);
        let result = self.m.measure(rate, self.durations[phase]).map_err(|e| {
            if self.m.interrupted() {
                Stop::Interrupted
            } else {
                Stop::Failed(e)
            }
        })?;
        let rec = TrialRecord {
            index: self.trials.len(),
            phase,
            final_duration: phase + 1 == self.durations.len(),
            purpose,
            result,
        };
        (self.on_trial)(&rec);
        self.trials.push(rec);
        Ok(())
    }

    fn goal(&self, t: usize, phase: usize) -> Goal {
        let last = self.durations.len() - 1;
        let duration = self.durations[phase].as_secs_f64();
        Goal {
            tolerance: self.cfg.tolerances[t],
            duration,
            // Shorter phases only narrow: one trial decides a load there.
            sum: if phase == last {
                duration * self.cfg.duration_sum_trials
            } else {
                duration
            },
            exceed_ratio: self.cfg.exceed_ratio,
            width: (self.cfg.precision * f64::from(1u32 << (last - phase).min(20))).min(0.5),
        }
    }

    fn seconds(&self, rate: f64, g: &Goal) -> Seconds {
        let mut s = Seconds::default();
        for r in self
            .trials
            .iter()
            .filter(|r| r.result.requested_pps == rate)
        {
            let d = planned(&self.durations, r);
            let long = d >= g.duration * (1.0 - 1e-9);
            let slot = match (long, passes(self.cfg.criterion, r, g.tolerance)) {
                (true, false) => &mut s.long_high,
                (true, true) => &mut s.long_low,
                (false, false) => &mut s.short_high,
                (false, true) => &mut s.short_low,
            };
            *slot += d;
        }
        s
    }

    /// Every load tried, lowest first.
    fn loads(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.trials.iter().map(|r| r.result.requested_pps).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    }

    fn bounds(&self, g: &Goal) -> Bounds {
        let loads = self.loads();
        // Each load, its class, whether it has a trial of the phase's length, and whether
        // its seconds so far lean high (more high-loss than low-loss).
        let classes: Vec<(f64, Class, bool, bool)> = loads
            .iter()
            .map(|&l| {
                let s = self.seconds(l, g);
                let lean_high = s.long_high + s.short_high > s.long_low + s.short_low;
                (l, s.class(g), s.long_high + s.long_low > 0.0, lean_high)
            })
            .collect();
        let hi = classes.iter().find(|c| c.1 == Class::Upper).map(|c| c.0);
        let below = |l: f64| hi.is_none_or(|h| l < h);
        let lo = classes
            .iter()
            .rev()
            .find(|c| c.1 == Class::Lower && below(c.0))
            .map(|c| c.0);
        let open = |c: &&(f64, Class, bool, bool)| {
            c.1 == Class::Undecided && c.2 && below(c.0) && lo.is_none_or(|l| c.0 > l)
        };
        let lean_hi = classes.iter().filter(open).find(|c| c.3).map(|c| c.0);
        let lean_lo = classes
            .iter()
            .filter(open)
            .rev()
            .find(|c| !c.3 && lean_hi.is_none_or(|h| c.0 < h))
            .map(|c| c.0);
        Bounds {
            lo,
            hi,
            lean_hi,
            lean_lo,
        }
    }

    /// The nearest load below `rate` with a trial of any length within the tolerance
    /// (`passed`), or above it with one over the tolerance: where an earlier phase saw the
    /// boundary, to try before stepping blindly.
    fn nearest(&self, rate: f64, g: &Goal, passed: bool) -> Option<f64> {
        let candidates = self.trials.iter().filter(|r| {
            let load = r.result.requested_pps;
            passes(self.cfg.criterion, r, g.tolerance) == passed
                && if passed { load < rate } else { load > rate }
        });
        let loads = candidates.map(|r| r.result.requested_pps);
        if passed {
            loads.max_by(f64::total_cmp)
        } else {
            loads.min_by(f64::total_cmp)
        }
    }

    /// The latest trial of phase `phase` or later at `rate` that the generator could not
    /// offer (a short trial's shortfall says nothing of a longer one's).
    fn generator_limited(&self, rate: f64, phase: usize) -> Option<&TrialRecord> {
        self.trials.iter().rfind(|r| {
            r.result.requested_pps == rate && r.phase >= phase && r.result.generator_limited()
        })
    }
}

fn width(lo: f64, hi: f64) -> f64 {
    (hi - lo) / hi
}

/// One goal's state while its phase narrows it.
#[derive(Debug, Clone, Default)]
struct Narrowing {
    /// The previous phase's bounds, to re-measure first.
    hint: Bounds,
    /// The relative step away from a lone bound, doubling each time.
    step: f64,
    /// The lower bound the previous phase handed on, before it is used.
    inherited_lo: Option<f64>,
    /// Why no answer can be had in this phase (the lowest rate failed, the highest passed,
    /// the generator is spent).
    note: Option<String>,
}

/// Searches every tolerance at once. `on_trial` sees each trial as it completes (to store it).
pub fn search(
    cfg: &SearchConfig,
    m: &mut dyn Measurer,
    on_trial: &mut dyn FnMut(&TrialRecord),
) -> Result<SearchOutcome, String> {
    cfg.validate()?;
    let durations = cfg.phase_durations();
    let phases = durations.len();
    let mut s = Search {
        cfg,
        m,
        on_trial,
        durations,
        trials: Vec::new(),
    };
    let mut state: Vec<Narrowing> = cfg
        .tolerances
        .iter()
        .map(|_| Narrowing::default())
        .collect();
    let mut stopped = None;
    // The phase before this one, whose bounds this one re-measures first.
    let mut prev: Option<usize> = None;
    let mut k = 0;
    'phases: while k < phases {
        for (t, n) in state.iter_mut().enumerate() {
            if let Some(p) = prev {
                n.hint = s.bounds(&s.goal(t, p));
            }
            n.inherited_lo = n.hint.lo;
            n.step = 2.0 * s.goal(t, k).width;
            n.note = None;
        }
        let inherited: Vec<Option<f64>> = state.iter().map(|n| n.hint.lo).collect();
        for (t, n) in state.iter_mut().enumerate() {
            // Once this phase rejected a shorter one's lower bound, no tolerance narrows at
            // this length any further.
            if k + 1 < phases && optimistic(&s, &inherited, k) {
                break;
            }
            match narrow(&mut s, n, t, k) {
                Ok(()) => {}
                Err(Stop::OutOfTrials) => {
                    stopped = Some(format!(
                        "the trial budget ({}) ran out in phase {} of {} ({} s trials)",
                        cfg.max_trials,
                        k + 1,
                        phases,
                        s.durations[k].as_secs_f64()
                    ));
                    break 'phases;
                }
                Err(Stop::Interrupted) => {
                    stopped = Some(format!(
                        "interrupted in phase {} of {} ({} s trials)",
                        k + 1,
                        phases,
                        s.durations[k].as_secs_f64()
                    ));
                    break 'phases;
                }
                Err(Stop::Failed(e)) => return Err(e),
            }
        }
        prev = Some(k);
        // A rate that passed the shorter trials and lost in this phase's longer ones: on
        // this system short trials pass where long ones lose (a receiver stalled now and
        // then overflows its buffer, and a longer trial sees more stalls), so the phases
        // between would narrow around rates the final trials reject. Go to the final one.
        // (On the logged loopback of tests/search_cost.rs, narrowing on at this length
        // cost 1.02 x a plain binary search's trial time, going on at once 0.96 x.)
        k = if k + 1 < phases && optimistic(&s, &inherited, k) {
            phases - 1
        } else {
            k + 1
        };
    }
    let results = (0..state.len())
        .map(|t| result_for(&s, t, &state[t], stopped.is_none()))
        .collect();
    Ok(SearchOutcome {
        results,
        trials: s.trials,
        stopped_early: stopped,
    })
}

/// Whether, in phase `k`, a tolerance's lower bound inherited from a shorter phase lost too
/// much at this phase's length.
fn optimistic(s: &Search, inherited: &[Option<f64>], k: usize) -> bool {
    k > 0
        && inherited.iter().zip(&s.cfg.tolerances).any(|(lo, &tol)| {
            lo.is_some_and(|l| {
                s.trials.iter().any(|r| {
                    r.phase == k && r.result.requested_pps == l && !passes(s.cfg.criterion, r, tol)
                })
            })
        })
}

/// Narrows tolerance `t` to its goal in phase `k`.
fn narrow(s: &mut Search, n: &mut Narrowing, t: usize, k: usize) -> Result<(), Stop> {
    let cfg = s.cfg;
    let g = s.goal(t, k);
    loop {
        // This phase rejected the lower bound a shorter one passed: it goes on to the
        // final phase (see `search`) rather than narrowing at a length that misleads.
        if k + 1 < s.durations.len() && stale(s, n, k, &g) {
            return Ok(());
        }
        let b = s.bounds(&g);
        // A load measured at this length but not yet decided (final phase only: one trial
        // decides in the others) bounds the bisection the way its seconds lean, and gets
        // the trial-seconds that decide it only when the search would end on it: a load
        // the bisection passes by (a lower one also lost too much) is never settled, and
        // costs one trial as in a plain binary search. The exceed ratio, not a retry,
        // still decides every bound the answer stands on.
        let (lo, hi) = b.bracket();
        let (purpose, rate) = match (lo, hi) {
            (Some(l), Some(h)) => {
                if width(l, h) <= g.width {
                    match b.lean_hi.or(b.lean_lo) {
                        Some(u) => (Purpose::Repeat, u),
                        None => return Ok(()),
                    }
                } else {
                    match inside(&n.hint, l, h) {
                        Some(r) => (Purpose::Bound, r),
                        None => (Purpose::Bisect, (l + h) / 2.0),
                    }
                }
            }
            (Some(l), None)
                if b.lean_lo == Some(l)
                    && (l >= cfg.max_pps || s.generator_limited(l, k).is_some()) =>
            {
                (Purpose::Repeat, l)
            }
            (None, Some(h)) if b.lean_hi == Some(h) && h <= cfg.min_pps => (Purpose::Repeat, h),
            (Some(l), None) => {
                if let Some(r) = s.generator_limited(l, k) {
                    n.note = Some(format!(
                        "the generator offered only {:.0} of the {:.0} {} asked, and nothing was lost: the system was not pushed, so the rate is a lower bound",
                        r.result.achieved_pps, l, cfg.rate_unit
                    ));
                    return Ok(());
                }
                if l >= cfg.max_pps {
                    n.note = Some(format!(
                        "the highest rate tried ({:.0} {}) passed: the answer is at least that",
                        cfg.max_pps, cfg.rate_unit
                    ));
                    return Ok(());
                }
                match n
                    .hint
                    .hi
                    .filter(|&h| h > l)
                    .or_else(|| s.nearest(l, &g, false))
                {
                    Some(h) => (Purpose::Bound, h),
                    None => {
                        let up = (l * (1.0 + n.step)).min(cfg.max_pps);
                        n.step = (n.step * 2.0).min(1.0);
                        (Purpose::Bound, up)
                    }
                }
            }
            (None, Some(h)) => {
                if h <= cfg.min_pps {
                    n.note = Some(format!(
                        "even the lowest rate ({:.0} {}) {}",
                        cfg.min_pps,
                        cfg.rate_unit,
                        cfg.criterion.missed(g.tolerance)
                    ));
                    return Ok(());
                }
                match n
                    .hint
                    .lo
                    .filter(|&l| l < h)
                    .or_else(|| s.nearest(h, &g, true))
                {
                    Some(l) => (Purpose::Bound, l),
                    None => (Purpose::Bound, step_down(s, n, h, &g, k)),
                }
            }
            (None, None) => match (n.hint.lo, n.hint.hi) {
                (Some(l), _) if k + 1 == s.durations.len() => (Purpose::Verify, l),
                (Some(l), _) => (Purpose::Bound, l),
                (None, Some(h)) => (Purpose::Bound, h),
                (None, None) => (Purpose::Bound, cfg.max_pps),
            },
        };
        let before = s.trials.len();
        // Where every trial at a load so far lost too much, a shorter one confirms it at
        // less cost: its seconds add to the longer ones' if it loses too, and only a pass
        // calls for another trial of the phase's length.
        let phase = if purpose == Purpose::Repeat && k > 0 && {
            let sec = s.seconds(rate, &g);
            sec.long_low == 0.0 && sec.short_low == 0.0
        } {
            0
        } else {
            k
        };
        s.run(rate, phase, purpose)?;
        // A hint is used once: a load measured again falls to the exceed ratio.
        for h in [&mut n.hint.lo, &mut n.hint.hi] {
            if *h == Some(s.trials[before].result.requested_pps) {
                *h = None;
            }
        }
    }
}

/// Whether phase `k`'s trials lost too much at the lower bound the previous phase handed on.
fn stale(s: &Search, n: &Narrowing, k: usize, g: &Goal) -> bool {
    n.inherited_lo.is_some_and(|l| {
        s.trials.iter().any(|r| {
            r.phase == k && r.result.requested_pps == l && !passes(s.cfg.criterion, r, g.tolerance)
        })
    })
}

/// A previous phase's bound strictly between `l` and `h`, to re-measure before bisecting.
fn inside(hint: &Bounds, l: f64, h: f64) -> Option<f64> {
    [hint.lo, hint.hi]
        .into_iter()
        .flatten()
        .find(|&r| r > l && r < h)
}

/// The next load below a lone upper bound `h`: what got through at it, or a step down,
/// whichever goes lower; the first step in a shorter phase is small, the others halve.
fn step_down(s: &Search, n: &mut Narrowing, h: f64, g: &Goal, k: usize) -> f64 {
    let through = s
        .trials
        .iter()
        .filter(|r| r.result.requested_pps == h && !passes(s.cfg.criterion, r, g.tolerance))
        .map(|r| r.result.achieved_pps * (1.0 - r.result.loss_ratio))
        .fold(f64::INFINITY, f64::min);
    // In the final phase a lone upper bound is where the shorter phases' lower bound
    // failed, or no shorter phase found one: the boundary may lie anywhere below, and each
    // full-length step costs as much as a plain binary search's, so it halves; in a shorter
    // phase the first step is small (the bound is usually near), the next ones halve.
    let rel = if k + 1 == s.durations.len() {
        n.step.max(0.5)
    } else {
        n.step
    };
    let step = h * (1.0 - rel);
    n.step = 0.5;
    let guess = if through.is_finite() && through > 0.0 && through < h * (1.0 - g.width) {
        through.min(step)
    } else {
        step
    };
    guess.max(s.cfg.min_pps)
}

fn result_for(s: &Search, t: usize, n: &Narrowing, complete: bool) -> ToleranceResult {
    let last = s.durations.len() - 1;
    let g = s.goal(t, last);
    let b = s.bounds(&g);
    let tol = g.tolerance;
    // The full-length trials at the answer: what verifies it.
    let at_lo: Vec<&TrialRecord> =
        b.lo.map(|l| {
            s.trials
                .iter()
                .filter(|r| r.final_duration && r.result.requested_pps == l)
                .collect()
        })
        .unwrap_or_default();
    let spread = (!at_lo.is_empty()).then(|| {
        let losses = at_lo.iter().map(|r| r.result.loss_ratio);
        (
            losses.clone().fold(f64::INFINITY, f64::min),
            losses.fold(0.0, f64::max),
        )
    });
    let c = s.cfg.criterion;
    let verified = at_lo.iter().any(|r| passes(c, r, tol));
    // What got through at the answer, as the generator offered it in its passing trials; the
    // trial it comes from verifies it.
    let verifying = at_lo
        .iter()
        .filter(|r| passes(c, r, tol))
        .min_by(|a, b| a.result.achieved_pps.total_cmp(&b.result.achieved_pps));
    let rate = verifying.map(|r| r.result.achieved_pps);
    let worst_seen = at_lo
        .iter()
        .map(|r| c.value(&r.result).unwrap_or(f64::INFINITY))
        .reduce(f64::max);
    // What stopped it: the longest failing trial at the upper bound, else the lowest failing
    // trial above the answer.
    let failing = |r: &&TrialRecord| !passes(c, r, tol);
    let first_failing =
        b.hi.and_then(|h| {
            s.trials
                .iter()
                .filter(|r| r.result.requested_pps == h)
                .filter(failing)
                .max_by_key(|r| r.phase)
        })
        .or_else(|| {
            s.trials
                .iter()
                .filter(|r| b.lo.is_some_and(|l| r.result.requested_pps > l))
                .filter(failing)
                .min_by(|a, b| a.result.requested_pps.total_cmp(&b.result.requested_pps))
        })
        .map(|r| r.index);
    // Losses at or below the answer: the noise the exceed ratio absorbed.
    let flaps = b.lo.map_or(0, |l| {
        s.trials
            .iter()
            .filter(|r| r.result.requested_pps <= l && !passes(c, r, tol))
            .count()
    });
    let generator_limited = b.lo.is_some_and(|l| s.generator_limited(l, last).is_some());
    let mut incomplete = n.note.clone();
    if incomplete.is_none() && !complete {
        incomplete = Some(match (b.lo, b.hi) {
            (Some(l), Some(h)) => {
                format!(
                    "stopped early with the answer between {l:.0} and {h:.0} {}",
                    s.cfg.rate_unit
                )
            }
            _ => "stopped early before a bound was found at the final duration".into(),
        });
    }
    ToleranceResult {
        tolerance: tol,
        rate_pps: rate,
        upper_pps: b.hi,
        loss_spread: spread,
        final_trials: s.trials.iter().filter(|r| r.final_duration).count(),
        verified,
        flaps,
        generator_limited,
        first_failing_trial: first_failing,
        verifying_trial: verifying.map(|r| r.index),
        worst_seen,
        incomplete,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device under test with a known NDR: no loss up to it, above it the excess is lost
    /// (times `slope`), every `flap_every`-th trial loses a little more (noise), and the
    /// generator cannot offer more than `gen_cap`.
    struct Sim {
        ndr: f64,
        slope: f64,
        gen_cap: f64,
        flap_every: Option<usize>,
        n: usize,
        seconds: f64,
    }

    impl Sim {
        fn new(ndr: f64) -> Sim {
            Sim {
                ndr,
                slope: 1.0,
                gen_cap: f64::INFINITY,
                flap_every: None,
                n: 0,
                seconds: 0.0,
            }
        }
    }

    impl Measurer for Sim {
        fn measure(&mut self, rate: f64, d: Duration) -> Result<TrialResult, String> {
            self.n += 1;
            self.seconds += d.as_secs_f64();
            let offered = rate.min(self.gen_cap);
            let mut loss = if offered <= self.ndr * (1.0 + 1e-12) {
                0.0
            } else {
                (offered - self.ndr) / offered * self.slope
            };
            if self.flap_every.is_some_and(|k| self.n.is_multiple_of(k)) {
                loss += 0.002;
            }
            Ok(TrialResult {
                requested_pps: rate,
                achieved_pps: offered,
                loss_ratio: loss.min(1.0),
                duration_s: d.as_secs_f64(),
                ..TrialResult::default()
            })
        }
    }

    fn cfg() -> SearchConfig {
        SearchConfig {
            min_pps: 10e3,
            max_pps: 2e6,
            tolerances: vec![0.0, 0.005],
            final_duration: Duration::from_secs(10),
            initial_duration: Duration::from_secs(1),
            precision: 0.01,
            max_trials: 60,
            ..SearchConfig::default()
        }
    }

    fn run(cfg: &SearchConfig, sim: &mut Sim) -> SearchOutcome {
        search(cfg, sim, &mut |_| {}).expect("search runs")
    }

    #[test]
    fn finds_the_ndr_and_a_pdr_in_one_search() {
        let ndr = 412e3;
        let mut sim = Sim::new(ndr);
        let o = run(&cfg(), &mut sim);
        assert_eq!(o.stopped_early, None);
        let n = &o.results[0];
        let rate = n.rate_pps.expect("an NDR");
        assert!(
            rate <= ndr * (1.0 + 1e-9) && rate >= ndr * 0.99,
            "NDR {rate}"
        );
        assert!(n.verified && n.incomplete.is_none(), "{n:?}");
        assert!(!n.generator_limited);
        // PDR at 0.5 %: loss (r − ndr)/r ≤ 0.005 up to ndr / 0.995.
        let pdr = ndr / 0.995;
        let p = o.results[1].rate_pps.expect("a PDR");
        assert!(
            p <= pdr * (1.0 + 1e-9) && p >= pdr * 0.99,
            "PDR {p} vs {pdr}"
        );
        assert!(p >= rate, "a looser tolerance never gives a lower rate");
        // What stopped each: a failing final-duration trial just above.
        let f = o.results[0].first_failing_trial.expect("a failing trial");
        assert!(o.trials[f].result.requested_pps > rate);
        assert!(o.trials[f].final_duration);
        // Efficiency: final-duration trials within log2(range / precision) + 2 per tolerance.
        let c = cfg();
        let bound = ((c.max_pps - c.min_pps) / (c.precision * ndr))
            .log2()
            .ceil()
            + 2.0;
        let finals = o.trials.iter().filter(|r| r.final_duration).count();
        assert!(
            finals as f64 <= bound * c.tolerances.len() as f64,
            "{finals} final trials, bound {bound} per tolerance"
        );
    }

    #[test]
    fn any_ndr_at_any_precision_is_found_within_it() {
        for ndr in [15e3, 50e3, 123_456.0, 777e3, 1.9e6] {
            for precision in [0.005, 0.02, 0.1] {
                for slope in [1.0, 0.05] {
                    let mut sim = Sim::new(ndr);
                    sim.slope = slope;
                    let c = SearchConfig { precision, ..cfg() };
                    let o = run(&c, &mut sim);
                    let n = &o.results[0];
                    let rate = n.rate_pps.unwrap_or(0.0);
                    assert!(
                        rate <= ndr * (1.0 + 1e-9) && rate >= ndr * (1.0 - precision),
                        "ndr {ndr} precision {precision} slope {slope}: {rate} ({} trials)",
                        o.trials.len()
                    );
                    assert!(n.verified && o.stopped_early.is_none());
                    assert!(o.trials.len() <= c.max_trials);
                }
            }
        }
    }

    #[test]
    fn the_multi_phase_search_costs_less_time_than_a_plain_binary_search() {
        let ndr = 412e3;
        let c = cfg();
        let mut sim = Sim::new(ndr);
        run(
            &SearchConfig {
                tolerances: vec![0.0],
                ..c.clone()
            },
            &mut sim,
        );
        // A plain binary search at the full duration over the same range, to the same precision.
        let (mut lo, mut hi, mut seconds) = (c.min_pps, c.max_pps, 0.0);
        while (hi - lo) / hi > c.precision {
            let mid = (lo + hi) / 2.0;
            seconds += c.final_duration.as_secs_f64();
            if mid <= ndr {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        assert!(
            sim.seconds < seconds,
            "search {} s, plain binary search {seconds} s",
            sim.seconds
        );
    }

    #[test]
    fn the_trial_budget_is_respected_and_the_stop_is_explained() {
        let mut sim = Sim::new(412e3);
        let c = SearchConfig {
            max_trials: 5,
            ..cfg()
        };
        let o = run(&c, &mut sim);
        assert!(o.trials.len() <= 5, "{}", o.trials.len());
        let why = o.stopped_early.expect("stopped early");
        assert!(why.contains("budget (5)"), "{why}");
        assert!(o
            .results
            .iter()
            .all(|r| r.incomplete.is_some() || r.rate_pps.is_none()));
    }

    /// Fails once, spuriously, the second time it is asked a rate it passed.
    struct FlapsOnRepeat {
        sim: Sim,
        passed: Vec<u64>,
        flapped: bool,
    }

    impl Measurer for FlapsOnRepeat {
        fn measure(&mut self, rate: f64, d: Duration) -> Result<TrialResult, String> {
            let mut r = self.sim.measure(rate, d)?;
            let key = rate.to_bits();
            if r.loss_ratio == 0.0 && self.passed.contains(&key) && !self.flapped {
                self.flapped = true;
                r.loss_ratio = 0.01;
            } else if r.loss_ratio == 0.0 {
                self.passed.push(key);
            }
            Ok(r)
        }
    }

    #[test]
    fn a_failure_where_a_pass_was_is_measured_again_and_counted() {
        let ndr = 300e3;
        let mut m = FlapsOnRepeat {
            sim: Sim::new(ndr),
            passed: Vec::new(),
            flapped: false,
        };
        let o = search(&cfg(), &mut m, &mut |_| {}).unwrap();
        assert!(m.flapped, "the scenario happened");
        assert!(o.trials.iter().any(|r| r.purpose == Purpose::Repeat));
        let n = &o.results[0];
        assert!(n.flaps >= 1, "{n:?}");
        let rate = n.rate_pps.expect("an NDR");
        assert!(
            rate <= ndr * (1.0 + 1e-9) && rate >= ndr * 0.99,
            "one flap costs nothing: {rate}"
        );
        assert!(n.verified);
    }

    #[test]
    fn steady_noise_costs_a_little_and_never_reports_above_the_ndr() {
        let ndr = 300e3;
        let mut sim = Sim::new(ndr);
        sim.flap_every = Some(4);
        let o = run(&cfg(), &mut sim);
        let rate = o.results[0].rate_pps.expect("an NDR");
        assert!(rate <= ndr * (1.0 + 1e-9), "{rate}");
        assert!(
            rate >= ndr * 0.8,
            "noise may cost a little, not a lot: {rate}"
        );
    }

    /// Stopped (Ctrl-C) during its `stop_at`-th trial, whose result never reaches the search.
    struct StoppedAt {
        sim: Sim,
        stop_at: usize,
        stopped: bool,
    }

    impl Measurer for StoppedAt {
        fn measure(&mut self, rate: f64, d: Duration) -> Result<TrialResult, String> {
            if self.sim.n + 1 == self.stop_at {
                self.stopped = true;
                return Err("interrupted".into());
            }
            self.sim.measure(rate, d)
        }

        fn interrupted(&self) -> bool {
            self.stopped
        }
    }

    #[test]
    fn an_interrupted_search_ends_with_what_it_found_so_far() {
        let mut m = StoppedAt {
            sim: Sim::new(300e3),
            stop_at: 9,
            stopped: false,
        };
        let o = search(&cfg(), &mut m, &mut |_| {}).expect("not a failure");
        assert_eq!(o.trials.len(), 8, "the cut trial is not counted");
        let why = o.stopped_early.expect("stopped early");
        assert!(why.starts_with("interrupted in phase"), "{why}");
        assert!(o.results.iter().all(|r| r.incomplete.is_some()));
        // A measurer's own failure is still an error.
        let m = StoppedAt {
            sim: Sim::new(300e3),
            stop_at: 3,
            stopped: false,
        };
        struct Fails(StoppedAt);
        impl Measurer for Fails {
            fn measure(&mut self, rate: f64, d: Duration) -> Result<TrialResult, String> {
                self.0.measure(rate, d)
            }
        }
        assert!(search(&cfg(), &mut Fails(m), &mut |_| {}).is_err());
    }

    /// Short trials pass up to twice the rate long ones do (loopback's stalled receiver).
    struct ShortOptimistic {
        long: Sim,
        short: Sim,
    }

    impl Measurer for ShortOptimistic {
        fn measure(&mut self, rate: f64, d: Duration) -> Result<TrialResult, String> {
            if d >= Duration::from_millis(2500) {
                self.long.measure(rate, d)
            } else {
                self.short.measure(rate, d)
            }
        }
    }

    #[test]
    fn when_longer_trials_reject_what_shorter_ones_passed_the_phases_between_are_skipped() {
        let ndr = 300e3;
        let mut m = ShortOptimistic {
            long: Sim::new(ndr),
            short: Sim::new(2.0 * ndr),
        };
        let o = search(&cfg(), &mut m, &mut |_| {}).unwrap();
        // Phases of 1.25, 2.5, 5 and 10 s: the 2.5 s phase rejects what the 1.25 s one
        // passed, so the 5 s phase would only narrow again around what 10 s trials decide.
        assert!(o.trials.iter().any(|r| r.phase == 1));
        assert!(
            o.trials.iter().all(|r| r.phase != 2),
            "{:?}",
            o.trials
                .iter()
                .map(|r| (r.phase, r.result.requested_pps))
                .collect::<Vec<_>>()
        );
        let n = &o.results[0];
        let rate = n.rate_pps.expect("an NDR");
        assert!(rate <= ndr * (1.0 + 1e-9) && rate >= ndr * 0.99, "{rate}");
        assert!(n.verified && o.stopped_early.is_none());
    }

    #[test]
    fn a_generator_that_cannot_push_makes_the_answer_a_lower_bound() {
        let mut sim = Sim::new(900e3);
        sim.gen_cap = 350e3;
        let o = run(&cfg(), &mut sim);
        let n = &o.results[0];
        assert!(n.generator_limited, "{n:?}");
        let rate = n.rate_pps.unwrap();
        assert!((rate - 350e3).abs() < 1.0, "{rate}");
        assert!(n
            .incomplete
            .as_deref()
            .unwrap_or("")
            .contains("lower bound"));
    }

    #[test]
    fn nothing_passes_or_everything_passes() {
        let mut sim = Sim::new(1e3);
        let o = run(&cfg(), &mut sim);
        assert_eq!(o.results[0].rate_pps, None);
        assert!(o.results[0]
            .incomplete
            .as_deref()
            .unwrap_or("")
            .contains("even the lowest rate"));
        let mut sim = Sim::new(5e6);
        let o = run(&cfg(), &mut sim);
        assert_eq!(o.results[0].rate_pps, Some(2e6));
        assert!(o.results[0]
            .incomplete
            .as_deref()
            .unwrap_or("")
            .contains("at least"));
    }

    #[test]
    fn bad_configurations_name_the_option() {
        let bad = |f: &dyn Fn(&mut SearchConfig)| {
            let mut c = cfg();
            f(&mut c);
            c.validate().unwrap_err()
        };
        assert!(bad(&|c| c.tolerances.clear()).contains("--loss"));
        assert!(bad(&|c| c.tolerances = vec![1.5]).contains("150 %"));
        assert!(bad(&|c| c.min_pps = c.max_pps).contains("empty"));
        assert!(bad(&|c| c.precision = 0.0).contains("--precision"));
        assert!(bad(&|c| c.final_duration = Duration::from_millis(10)).contains("--trial"));
    }

    #[test]
    fn phases_double_up_to_the_final_duration() {
        let c = cfg();
        assert_eq!(
            c.phase_durations(),
            [
                Duration::from_millis(1250),
                Duration::from_millis(2500),
                Duration::from_secs(5),
                Duration::from_secs(10)
            ]
        );
    }

    /// A request/response server with a known capacity: the p99 round trip grows as
    /// base / (1 − load / capacity), and above the capacity it falls behind (answers only
    /// `capacity` transactions/s).
    struct RrServer {
        capacity: f64,
        base_s: f64,
    }

    impl Measurer for RrServer {
        fn measure(&mut self, rate: f64, d: Duration) -> Result<TrialResult, String> {
            let rho = (rate / self.capacity).min(0.999);
            Ok(TrialResult {
                requested_pps: rate,
                achieved_pps: rate.min(self.capacity),
                duration_s: d.as_secs_f64(),
                p99_s: Some(self.base_s / (1.0 - rho)),
                ..TrialResult::default()
            })
        }
    }

    fn rr_cfg(bounds: Vec<f64>) -> SearchConfig {
        SearchConfig {
            min_pps: 1e3,
            max_pps: 200e3,
            tolerances: bounds,
            criterion: Criterion::P99,
            ..cfg()
        }
    }

    #[test]
    fn a_p99_bound_finds_the_highest_rate_whose_p99_stays_under_it() {
        // p99 ≤ 200 µs while 30 µs / (1 − ρ) ≤ 200 µs: up to 85 % of 100 k/s.
        let mut m = RrServer {
            capacity: 100e3,
            base_s: 30e-6,
        };
        let o = search(&rr_cfg(vec![200e-6, 100e-6]), &mut m, &mut |_| {}).unwrap();
        assert_eq!(o.stopped_early, None);
        for (r, truth) in o.results.iter().zip([85e3, 70e3]) {
            let rate = r.rate_pps.expect("a rate");
            assert!(
                rate <= truth * (1.0 + 1e-9) && rate >= truth * 0.98,
                "p99 ≤ {} µs: {rate} against {truth}",
                r.tolerance * 1e6
            );
            assert!(r.verified && r.incomplete.is_none(), "{r:?}");
            // The verifying trial is a full-length pass at the answer, and the worst p99 seen
            // there is within the bound.
            let t = &o.trials[r.verifying_trial.expect("a verifying trial")];
            assert!(t.final_duration, "{t:?}");
            assert!(Criterion::P99.passes(&t.result, r.tolerance), "{t:?}");
            assert_eq!(t.result.achieved_pps, rate);
            assert!(r.worst_seen.is_some_and(|p| p <= r.tolerance), "{r:?}");
        }
    }

    #[test]
    fn a_server_that_falls_behind_fails_however_short_its_round_trips() {
        // A p99 bound no trial reaches: only the rate it keeps up with bounds the answer.
        let mut m = RrServer {
            capacity: 50e3,
            base_s: 5e-6,
        };
        let o = search(&rr_cfg(vec![0.5]), &mut m, &mut |_| {}).unwrap();
        let rate = o.results[0].rate_pps.expect("a rate");
        // Within 1 % of the rate asked: up to 50 k / 0.99.
        assert!(
            (50e3 * 0.98..=50e3 / 0.99 * (1.0 + 1e-9)).contains(&rate),
            "{rate}"
        );
        assert!(
            !o.results[0].generator_limited,
            "falling behind is the server's failure"
        );
    }

    /// A TCP path that carries up to `capacity` bit/s of offered load; above it, a tenth of the
    /// excess is retransmitted and the goodput tops out 5 % above the capacity.
    struct TcpPath {
        capacity: f64,
    }

    impl Measurer for TcpPath {
        fn measure(&mut self, load: f64, d: Duration) -> Result<TrialResult, String> {
            let over = (load - self.capacity).max(0.0) / load;
            Ok(TrialResult {
                requested_pps: load,
                achieved_pps: load.min(self.capacity * 1.05),
                duration_s: d.as_secs_f64(),
                retransmit_ratio: Some(0.1 * over),
                ..TrialResult::default()
            })
        }
    }

    #[test]
    fn a_retransmit_budget_finds_the_highest_load_within_it() {
        let mut m = TcpPath { capacity: 400e3 };
        let c = SearchConfig {
            min_pps: 1e3,
            max_pps: 2e6,
            tolerances: vec![0.001],
            criterion: Criterion::Retransmits,
            ..cfg()
        };
        let o = search(&c, &mut m, &mut |_| {}).unwrap();
        // 0.1 × (r − C) / r ≤ 0.001 up to C / 0.99.
        let truth = 400e3 / 0.99;
        let rate = o.results[0].rate_pps.expect("a load");
        assert!(
            rate <= truth * (1.0 + 1e-9) && rate >= truth * 0.98,
            "{rate} against {truth}"
        );
        assert!(o.results[0].verified);
    }

    #[test]
    fn the_criteria_bounds_are_checked_with_their_own_flags() {
        let mut c = rr_cfg(vec![0.0]);
        assert!(c.validate().unwrap_err().contains("--p99"));
        c.tolerances.clear();
        assert!(c.validate().unwrap_err().contains("--p99"));
        c.criterion = Criterion::Retransmits;
        c.tolerances = vec![1.5];
        assert!(c.validate().unwrap_err().contains("--retrans"));
    }
}
