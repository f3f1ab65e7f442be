//! The loss-criterion search: for each loss tolerance, the highest offered rate whose loss
//! ratio stays within it (RFC 2544 throughput is the 0 % tolerance, the NDR; a tolerance above
//! it gives a PDR). All tolerances come out of one search, in the manner of FD.io CSIT's
//! MLRsearch: every trial counts for every tolerance, short trials narrow the interval while it
//! is wide, and only the last phase, at the full trial duration, decides.
//!
//! The search is pure planning over a [`Measurer`]: it decides the next trial from the trials
//! so far. The real measurer drives the load engine; a simulated one (a device with a known NDR
//! and noise) tests the logic without traffic.
//!
//! # Phases
//! Trial durations double from the initial one up to the final one. In phase k of P the goal
//! is a relative width (upper − lower) / upper of `precision × 2^(P−1−k)`, so each phase hands
//! the next an interval twice as wide as its goal. A new phase re-measures the bounds it
//! inherits (a rate that passed in 1 s may lose packets in 10 s) before it bisects.
//!
//! # Noise
//! A trial that fails at a rate that passed before, in the same phase, is retried once. A
//! retry that passes keeps the earlier pass (the failure is counted as a flap); a retry that
//! fails again withdraws it. At the end, each reported rate gets one more trial at the final
//! duration (the verification), retried once the same way. The loss spread seen at the rate is
//! reported.
//!
//! # Limits
//! The number of trials is bounded; when the budget runs out the search stops, and each
//! tolerance says how far it got. A rate the generator could not offer (it achieved less than
//! 99 % of it) is not a success of the system: a pass there makes the answer a lower bound,
//! labelled as such.

use std::time::Duration;

/// What one trial measured.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialResult {
    /// The rate asked for, packets/s.
    pub requested_pps: f64,
    /// The rate the generator achieved, packets/s.
    pub achieved_pps: f64,
    /// Lost over sent, 0–1.
    pub loss_ratio: f64,
    /// How long the trial lasted, s.
    pub duration_s: f64,
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
}

/// What to search for.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchConfig {
    /// The lowest rate worth trying, packets/s.
    pub min_pps: f64,
    /// The highest rate to try, packets/s (the generator's or the link's).
    pub max_pps: f64,
    /// Loss tolerances, 0 ≤ t < 1 (0 for the NDR).
    pub tolerances: Vec<f64>,
    /// The duration of the trials that decide.
    pub final_duration: Duration,
    /// The duration of the first, short trials.
    pub initial_duration: Duration,
    /// The relative width the final interval must reach: (upper − lower) / upper.
    pub precision: f64,
    /// The most trials the search may run, verifications included.
    pub max_trials: usize,
}

impl SearchConfig {
    /// Why the configuration cannot be searched, in words naming the option.
    pub fn validate(&self) -> Result<(), String> {
        if self.tolerances.is_empty() {
            return Err("--loss: at least one tolerance is needed (0 for the NDR)".into());
        }
        if let Some(t) = self
            .tolerances
            .iter()
            .find(|t| !(0.0..1.0).contains(*t) || !t.is_finite())
        {
            return Err(format!(
                "--loss: a tolerance of {} % is not below 100 %",
                t * 100.0
            ));
        }
        if !(self.min_pps > 0.0 && self.min_pps < self.max_pps && self.max_pps.is_finite()) {
            return Err(format!(
                "the rate range {}..{} pps is empty: the lowest rate must be above 0 and below the highest",
                self.min_pps, self.max_pps
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
    /// A repeat of a trial that failed where an earlier one passed.
    Retry,
    /// The last trial at a reported rate.
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
    /// The lowest rate that failed at the final duration, pps.
    pub upper_pps: Option<f64>,
    /// The smallest and largest loss ratio seen at `rate_pps` at the final duration.
    pub loss_spread: Option<(f64, f64)>,
    /// Trials at the final duration in the whole search, verifications included (each serves
    /// every tolerance).
    pub final_trials: usize,
    /// The verification trial (or its retry) passed.
    pub verified: bool,
    /// Failures at a rate that had passed, in this tolerance's decisions.
    pub flaps: usize,
    /// The generator could not offer more: `rate_pps` is a lower bound.
    pub generator_limited: bool,
    /// The first final-duration trial that failed above `rate_pps`: what stopped it.
    pub first_failing_trial: Option<usize>,
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

/// A rate as the search keeps it: asked, offered, and the trial.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Point {
    requested: f64,
    achieved: f64,
    trial: usize,
    generator_limited: bool,
}

impl Point {
    fn of(r: &TrialRecord) -> Point {
        Point {
            requested: r.result.requested_pps,
            achieved: r.result.achieved_pps,
            trial: r.index,
            generator_limited: r.result.generator_limited(),
        }
    }
}

/// One tolerance's bounds within the current phase, and what it inherited.
#[derive(Debug, Clone, Default)]
struct Bounds {
    lo: Option<Point>,
    hi: Option<Point>,
    hint_lo: Option<Point>,
    hint_hi: Option<Point>,
    /// The downward step while no rate has passed in this phase, relative.
    down: f64,
    flaps: usize,
    /// No answer is possible in this phase (the lowest rate failed, the generator is spent,
    /// the highest rate passed).
    settled: bool,
    note: Option<String>,
}

struct Search<'a> {
    cfg: &'a SearchConfig,
    m: &'a mut dyn Measurer,
    on_trial: &'a mut dyn FnMut(&TrialRecord),
    trials: Vec<TrialRecord>,
    phase: usize,
    last_phase: usize,
}

/// The trial budget ran out.
struct OutOfTrials;

/// Which inherited bound a trial re-measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Inherited {
    Lower,
    Upper,
}

impl Search<'_> {
    fn run(&mut self, rate: f64, d: Duration, purpose: Purpose) -> Result<TrialRecord, String> {
        let rate = rate.clamp(self.cfg.min_pps, self.cfg.max_pps);
        let result = self.m.measure(rate, d)?;
        let rec = TrialRecord {
            index: self.trials.len(),
            phase: self.phase,
            final_duration: self.phase == self.last_phase,
            purpose,
            result,
        };
        (self.on_trial)(&rec);
        self.trials.push(rec.clone());
        Ok(rec)
    }

    fn budget_left(&self) -> bool {
        self.trials.len() < self.cfg.max_trials
    }
}

fn passes(r: &TrialRecord, tolerance: f64) -> bool {
    r.result.loss_ratio <= tolerance + 1e-12
}

fn width(lo: &Point, hi: &Point) -> f64 {
    (hi.requested - lo.requested) / hi.requested
}

/// Records a trial in one tolerance's bounds, unless it contradicts them (a pass above a
/// failure, or a failure below a pass: the retry logic deals with those for the tolerance
/// being decided).
fn absorb(b: &mut Bounds, r: &TrialRecord, tolerance: f64) {
    let p = Point::of(r);
    if passes(r, tolerance) {
        let below_hi = b.hi.is_none_or(|h| p.requested < h.requested);
        if below_hi && b.lo.is_none_or(|l| p.requested >= l.requested) {
            b.lo = Some(p);
        }
    } else {
        let above_lo = b.lo.is_none_or(|l| p.requested > l.requested);
        if above_lo && b.hi.is_none_or(|h| p.requested <= h.requested) {
            b.hi = Some(p);
        }
    }
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
        trials: Vec::new(),
        phase: 0,
        last_phase: phases - 1,
    };
    let mut bounds: Vec<Bounds> = cfg.tolerances.iter().map(|_| Bounds::default()).collect();
    let mut stopped = None;
    'phases: for (k, &d) in durations.iter().enumerate() {
        s.phase = k;
        let goal = (cfg.precision * f64::from(1u32 << (phases - 1 - k).min(20))).min(0.5);
        for b in bounds.iter_mut() {
            b.hint_lo = b.lo.take().or(b.hint_lo);
            b.hint_hi = b.hi.take().or(b.hint_hi);
            b.down = (2.0 * goal).max(0.02);
            b.settled = false;
            b.note = None;
        }
        for t in 0..bounds.len() {
            match decide(&mut s, &mut bounds, t, d, goal) {
                Ok(()) => {}
                Err(Ok(OutOfTrials)) => {
                    stopped = Some(format!(
                        "the trial budget ({}) ran out in phase {} of {} ({} s trials)",
                        cfg.max_trials,
                        k + 1,
                        phases,
                        d.as_secs_f64()
                    ));
                    break 'phases;
                }
                Err(Err(e)) => return Err(e),
            }
        }
    }
    let complete = stopped.is_none();
    // Verification at the final duration, at each reported rate.
    let final_d = cfg.final_duration;
    let mut verified = vec![false; bounds.len()];
    if complete {
        for t in 0..bounds.len() {
            let Some(lo) = bounds[t].lo else { continue };
            // A rate an earlier verification already covered needs no second trial.
            let done = s.trials.iter().any(|r| {
                r.purpose == Purpose::Verify
                    && r.result.requested_pps == lo.requested
                    && passes(r, cfg.tolerances[t])
            });
            if done {
                verified[t] = true;
                continue;
            }
            if !s.budget_left() {
                stopped = Some(format!(
                    "the trial budget ({}) ran out before every rate was verified",
                    cfg.max_trials
                ));
                break;
            }
            let r = s.run(lo.requested, final_d, Purpose::Verify)?;
            if passes(&r, cfg.tolerances[t]) {
                verified[t] = true;
                continue;
            }
            bounds[t].flaps += 1;
            if !s.budget_left() {
                break;
            }
            let again = s.run(lo.requested, final_d, Purpose::Retry)?;
            verified[t] = passes(&again, cfg.tolerances[t]);
            if !verified[t] {
                bounds[t].note = Some(format!(
                    "the verification at {:.0} pps failed twice (loss {:.4} % and {:.4} %): the rate is not stable",
                    lo.requested,
                    r.result.loss_ratio * 100.0,
                    again.result.loss_ratio * 100.0
                ));
            }
        }
    }
    let results = bounds
        .iter()
        .enumerate()
        .map(|(t, b)| result_for(cfg, &s.trials, t, b, verified[t], complete))
        .collect();
    Ok(SearchOutcome {
        results,
        trials: s.trials,
        stopped_early: stopped,
    })
}

/// Narrows tolerance `t` to `goal` in the current phase.
fn decide(
    s: &mut Search,
    bounds: &mut [Bounds],
    t: usize,
    d: Duration,
    goal: f64,
) -> Result<(), Result<OutOfTrials, String>> {
    let cfg = s.cfg;
    let tol = cfg.tolerances[t];
    loop {
        let b = &mut bounds[t];
        let next = match (b.lo, b.hi) {
            (Some(l), Some(h)) => {
                if width(&l, &h) <= goal {
                    return Ok(());
                }
                (Purpose::Bisect, (l.requested + h.requested) / 2.0, None)
            }
            (Some(l), None) => {
                if l.generator_limited {
                    b.settled = true;
                    b.note = Some(format!(
                        "the generator offered only {:.0} of the {:.0} pps asked, and nothing was lost: the system was not pushed, so the rate is a lower bound",
                        l.achieved, l.requested
                    ));
                    return Ok(());
                }
                if l.requested >= cfg.max_pps {
                    b.settled = true;
                    b.note = Some(format!(
                        "the highest rate tried ({:.0} pps) passed: the answer is at least that",
                        cfg.max_pps
                    ));
                    return Ok(());
                }
                match b.hint_hi.take().filter(|h| h.requested > l.requested) {
                    Some(h) => (Purpose::Bound, h.requested, Some(Inherited::Upper)),
                    None => (
                        Purpose::Bound,
                        (l.requested * (1.0 + 2.0 * goal.max(0.01))).min(cfg.max_pps),
                        None,
                    ),
                }
            }
            (None, Some(h)) => {
                if h.requested <= cfg.min_pps {
                    b.settled = true;
                    b.note = Some(format!(
                        "even the lowest rate ({:.0} pps) lost more than {} %",
                        cfg.min_pps,
                        tol * 100.0
                    ));
                    return Ok(());
                }
                match b.hint_lo.take().filter(|l| l.requested < h.requested) {
                    Some(l) => (Purpose::Bound, l.requested, Some(Inherited::Lower)),
                    None => {
                        // What got through at the failing rate is the first guess; after
                        // that, steps down that double each time.
                        let through = h.achieved * (1.0 - s.trials[h.trial].result.loss_ratio);
                        let step = h.requested * (1.0 - b.down);
                        b.down = (b.down * 2.0).min(0.9);
                        // Whichever goes lower: a gentle loss slope must not slow the descent.
                        let guess = if through < h.requested * (1.0 - goal) && through > 0.0 {
                            through.min(step)
                        } else {
                            step
                        };
                        (Purpose::Bound, guess.max(cfg.min_pps), None)
                    }
                }
            }
            (None, None) => match (b.hint_lo.take(), b.hint_hi) {
                (Some(l), _) => (Purpose::Bound, l.requested, Some(Inherited::Lower)),
                (None, Some(h)) => (Purpose::Bound, h.requested, Some(Inherited::Upper)),
                (None, None) => (Purpose::Bound, cfg.max_pps, None),
            },
        };
        if !s.budget_left() {
            return Err(Ok(OutOfTrials));
        }
        let (purpose, rate, inherited) = next;
        let r = s.run(rate, d, purpose).map_err(Err)?;
        let p = Point::of(&r);
        let b = &mut bounds[t];
        if inherited == Some(Inherited::Upper) && passes(&r, tol) {
            // It failed in a shorter trial and passes in a longer one: noise.
            b.flaps += 1;
        }
        let passed_before =
            b.lo.is_some_and(|l| l.requested >= p.requested) || inherited == Some(Inherited::Lower);
        if !passes(&r, tol) && passed_before {
            // A failure where a pass was: once more before believing either.
            b.flaps += 1;
            if !s.budget_left() {
                return Err(Ok(OutOfTrials));
            }
            let again = s.run(rate, d, Purpose::Retry).map_err(Err)?;
            let b = &mut bounds[t];
            if passes(&again, tol) {
                // The failure was noise: the pass stands (or, re-measuring, is confirmed).
                if b.lo
                    .is_none_or(|l| l.requested < again.result.requested_pps)
                {
                    absorb(b, &again, tol);
                }
            } else {
                b.lo = None;
                b.hi = Some(Point::of(&again));
            }
            for (u, other) in bounds.iter_mut().enumerate() {
                if u != t {
                    absorb(other, &again, s.cfg.tolerances[u]);
                }
            }
            continue;
        }
        for (u, other) in bounds.iter_mut().enumerate() {
            absorb(other, &r, s.cfg.tolerances[u]);
        }
        // A pass by a generator that fell short ends the upward search (see above); a failure
        // decides the upper bound at the rate actually offered.
    }
}

fn result_for(
    cfg: &SearchConfig,
    trials: &[TrialRecord],
    t: usize,
    b: &Bounds,
    verified: bool,
    complete: bool,
) -> ToleranceResult {
    let tol = cfg.tolerances[t];
    let lo = b.lo;
    let at_rate: Vec<f64> = lo
        .map(|l| {
            trials
                .iter()
                .filter(|r| r.final_duration && r.result.requested_pps == l.requested)
                .map(|r| r.result.loss_ratio)
                .collect()
        })
        .unwrap_or_default();
    let spread = (!at_rate.is_empty()).then(|| {
        (
            at_rate.iter().copied().fold(f64::INFINITY, f64::min),
            at_rate.iter().copied().fold(0.0, f64::max),
        )
    });
    let first_failing = lo.and_then(|l| {
        trials
            .iter()
            .filter(|r| r.final_duration && r.result.requested_pps > l.requested && !passes(r, tol))
            .min_by(|a, b| a.result.requested_pps.total_cmp(&b.result.requested_pps))
            .map(|r| r.index)
    });
    let generator_limited = lo.is_some_and(|l| l.generator_limited);
    let mut incomplete = b.note.clone();
    if incomplete.is_none() && !complete {
        incomplete = Some(match (lo, b.hi) {
            (Some(l), Some(h)) => format!(
                "stopped early with the answer between {:.0} and {:.0} pps",
                l.achieved, h.requested
            ),
            _ => "stopped early before a bound was found at the final duration".into(),
        });
    }
    ToleranceResult {
        tolerance: tol,
        rate_pps: lo.map(|l| l.achieved),
        upper_pps: b.hi.map(|h| h.requested),
        loss_spread: spread,
        final_trials: trials.iter().filter(|r| r.final_duration).count(),
        verified,
        flaps: b.flaps,
        generator_limited,
        first_failing_trial: first_failing,
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
    fn a_failure_where_a_pass_was_is_retried_and_counted() {
        let ndr = 300e3;
        let mut m = FlapsOnRepeat {
            sim: Sim::new(ndr),
            passed: Vec::new(),
            flapped: false,
        };
        let o = search(&cfg(), &mut m, &mut |_| {}).unwrap();
        assert!(m.flapped, "the scenario happened");
        assert!(o.trials.iter().any(|r| r.purpose == Purpose::Retry));
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
}
