//! The loss search over UDP trains: per frame size, the highest packet rate whose loss stays
//! within each tolerance (NDR at 0 %, PDRs above), found by [`netceil_analyze::search`] over
//! real trials, and what stopped it there: the analyzer's verdict on the first failing
//! full-length trial.
//!
//! Each trial is one part of the run (its series window, its results, its findings), stored
//! as it ends; the trials of an interrupted search are replayed from the store. Loss is
//! counted at the application: what netceil's receiver read, against what was sent.

use std::time::Duration;

use anyhow::anyhow;
use netceil_analyze::search::{self, Measurer, Purpose, SearchConfig, TrialRecord, TrialResult};
use netceil_model::duration::{secs_within, RUN};
use netceil_model::params::{SearchParams, SearchTrialParams, UdpParams};
use netceil_model::{
    fmt, udp_payload_to_frame, Knee, Rate, Results, Run, Unit, Workload, WorkloadKind,
};

use super::{udp_train, Reach};
use crate::{wire_run_id, Campaign, Error, PartAnalysis, Trial};

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
) -> Workload {
    Workload {
        kind: WorkloadKind::Udp,
        params: netceil_model::params::Params::SearchTrial(SearchTrialParams {
            frame_bytes: t.frame,
            payload_bytes: t.frame - overhead,
            rate_pps: (t.asked > 0.0).then_some(t.asked),
            trial_s: t.trial_s,
            duration_s,
            target,
        }),
    }
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

impl UdpTrials<'_, '_> {
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
        let r = self.trial_inner(duration, asked)?;
        self.worst
            .done(r.duration_s, started.elapsed().as_secs_f64());
        self.c.session.remaining(self.worst.left_s());
        Ok(r)
    }

    fn trial_inner(&mut self, duration: Duration, asked: f64) -> Result<Results, Error> {
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

impl Measurer for UdpTrials<'_, '_> {
    fn interrupted(&self) -> bool {
        self.stopped
    }

    fn measure(&mut self, rate_pps: f64, duration: Duration) -> Result<TrialResult, String> {
        self.tell_lines();
        if self.c.stopping() {
            self.stopped = true;
            return Err(INTERRUPTED.into());
        }
        let r = match self.trial(duration, rate_pps) {
            Ok(r) => r,
            Err(e) => {
                let text = e.error.to_string();
                self.failure = Some(e);
                return Err(text);
            }
        };
        if self.c.stopping() {
            // Stopped mid-trial: what it lost over a part of its length says nothing of the
            // whole, so it is not counted (nor stored as one to replay), and no loss is shown.
            self.stopped = true;
            self.c.session.step(&format!(
                "  {:>5} B  trial cut short after {:.1} s of {:.1} s at {}: not counted; --resume measures it again",
                self.frame,
                r.duration_s,
                duration.as_secs_f64(),
                fmt::value(rate_pps, Unit::PacketsPerSecond),
            ));
            return Err(INTERRUPTED.into());
        }
        Ok(TrialResult {
            requested_pps: rate_pps,
            achieved_pps: r.tx_pps,
            loss_ratio: app_loss(&r),
            duration_s: r.duration_s,
            ..TrialResult::default()
        })
    }
}

/// A trial's line, as the observers are told it.
pub fn trial_line(size: usize, rec: &TrialRecord) -> String {
    let purpose = match rec.purpose {
        Purpose::Bound => "bound",
        Purpose::Bisect => "bisect",
        Purpose::Repeat => "repeat",
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
pub fn from_run(run: &Run) -> Result<SearchParams, Error> {
    let bad = |why: &str| {
        Error::usage(anyhow!(
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
        if secs_within(v, RUN).is_none() {
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

/// The checks the search makes before any traffic: the frame sizes (each must hold the
/// headers, and fit the path to a far end) and the search's own bounds.
pub fn check(p: &SearchParams, reach: Reach) -> Result<(), Error> {
    let overhead = udp_payload_to_frame(0, reach.ipv6);
    if p.sizes.is_empty() {
        return Err(Error::usage(anyhow!(
            "--frame-sizes: at least one frame size"
        )));
    }
    let least = overhead + netceil_load::header::HEADER_LEN;
    if let Some(f) = p.sizes.iter().find(|f| **f < least) {
        return Err(Error::usage(anyhow!(
            "--frame-sizes {f}: a frame must hold the {overhead}-byte headers and netceil's {}-byte header: {least} at least",
            netceil_load::header::HEADER_LEN
        )));
    }
    search_config(p, p.min_pps, p.max_pps.unwrap_or(p.min_pps * 2.0))
        .validate()
        .map_err(|e| Error::usage(anyhow!(e)))?;
    let pairs: Vec<(usize, usize)> = p.sizes.iter().map(|&f| (f, f - overhead)).collect();
    crate::kernel::check_path_mtu(reach.to, "--frame-sizes", &pairs)
        .map_err(|e| Error::usage(anyhow!(e)))
}

/// The most steps the search can take: its trial budget per size, and the generator's own
/// ceiling first when no highest rate was given.
pub fn steps_at_most(p: &SearchParams) -> u64 {
    (p.sizes.len() * (p.max_trials + usize::from(p.max_pps.is_none()))) as u64
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
        // The decision rule is not a flag: the defaults, which the run's note states.
        ..SearchConfig::default()
    }
}

/// Knees, each with the index of the part that stopped it (its first failing trial).
type Stopped = Vec<(Knee, Option<usize>)>;

/// The knees one frame size's search found, each with the index of the part that stopped it,
/// counted from `offset`.
fn knees_of(
    frame: usize,
    outcome: &search::SearchOutcome,
    offset: usize,
    max_trials: usize,
) -> Stopped {
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
                        format!("{n}; {}", budget_note(outcome, r, max_trials))
                    } else {
                        n
                    }
                });
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
                note,
            };
            (knee, r.first_failing_trial.map(|i| offset + i))
        })
        .collect()
}

/// What to say when the trial budget ran out: that it did, the flag that raises it, and the
/// best rate that passed so far (verified by a full-length trial, or said not to be).
fn budget_note(
    outcome: &search::SearchOutcome,
    r: &search::ToleranceResult,
    max_trials: usize,
) -> String {
    let best = match r.rate_pps {
        Some(v) => format!(
            "{}, verified by a full-length trial",
            fmt::value(v, Unit::PacketsPerSecond)
        ),
        None => outcome
            .trials
            .iter()
            .filter(|t| t.result.loss_ratio <= r.tolerance + 1e-12)
            .max_by(|a, b| a.result.achieved_pps.total_cmp(&b.result.achieved_pps))
            .map_or_else(
                || "none (no trial passed)".into(),
                |t| {
                    format!(
                        "{} in a {:.2} s trial, shorter than the final one: not verified",
                        fmt::value(t.result.achieved_pps, Unit::PacketsPerSecond),
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
    let mut c = format!("netceil search udp --resume {run_id}");
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
    /// Per frame size finished, one knee per tolerance (also the run's knees).
    pub knees: Vec<Knee>,
    /// Stopped before every size was searched.
    pub interrupted: bool,
}

/// One frame size's search: its knees, and whether it was interrupted before it finished
/// (its knees are then what it found so far); `None` when it was stopped before any.
fn search_size(
    c: &mut Campaign,
    p: &SearchParams,
    reach: Reach,
    frame: usize,
    sizes_after: usize,
) -> Result<Option<(Stopped, bool)>, Error> {
    let overhead = udp_payload_to_frame(0, reach.ipv6);
    let first_part = c.parts();
    let mut trials = UdpTrials {
        wire_id: wire_run_id(&c.top.run_id),
        c,
        base: udp_train(reach, frame - overhead, p.pacing, p.rcvbuf, p.rcvbuf_force),
        frame,
        overhead,
        target: p.target.clone(),
        lines: None,
        stopped: false,
        failure: None,
        worst: Worst {
            per_size: p.max_trials + usize::from(p.max_pps.is_none()),
            trial_s: p.trial_s,
            sizes_after,
            ..Worst::default()
        },
    };
    trials.c.session.remaining(trials.worst.left_s());
    // The highest rate worth asking: what the generator sends flat out, unless given.
    let max = match p.max_pps {
        Some(m) => m,
        None => {
            trials.c.session.say(&format!(
                "{frame} B frames: measuring the generator's own ceiling ({} s unpaced)",
                p.initial_trial_s
            ));
            let initial = Duration::from_secs_f64(p.initial_trial_s);
            let m = trials.trial(initial, 0.0)?.tx_pps;
            trials.c.session.step(&format!(
                "  {frame:>5} B  the generator sends {} flat out",
                fmt::value(m, Unit::PacketsPerSecond)
            ));
            m
        }
    };
    let cfg = search_config(p, p.min_pps.min(max * 0.5), max);
    // Each trial's line, told by the trials themselves (they hold the campaign).
    let lines = std::cell::RefCell::new(Vec::new());
    trials.lines = Some(&lines);
    let outcome = search::search(&cfg, &mut trials, &mut |rec| {
        lines.borrow_mut().push(trial_line(frame, rec));
    });
    trials.tell_lines();
    let offset = first_part + usize::from(p.max_pps.is_none());
    match outcome {
        Ok(o) if trials.stopped => {
            // Interrupted mid-size: what it found so far, said to be that.
            let mut k = knees_of(frame, &o, offset, p.max_trials);
            for (knee, _) in &mut k {
                knee.note = Some(format!(
                    "interrupted before this size finished; {}",
                    knee.note.take().unwrap_or_default()
                ));
            }
            Ok(Some((k, true)))
        }
        Ok(o) => Ok(Some((knees_of(frame, &o, offset, p.max_trials), false))),
        Err(_) if trials.stopped => Ok(None),
        Err(e) => Err(trials
            .failure
            .take()
            .unwrap_or_else(|| Error::runtime(anyhow!("search at {frame} B: {e}")))),
    }
}

/// Searches as `p` says, in the campaign, sending where `reach` says, then ends the
/// campaign: each trial analyzed, the knees with what stopped each, the notes. `why_stopped`
/// says what interrupted it ("interrupted (Ctrl-C)"), if something did.
pub fn run(
    c: &mut Campaign,
    p: &SearchParams,
    reach: Reach,
    why_stopped: &dyn Fn() -> String,
) -> Result<Searched, Error> {
    let mut found: Stopped = Vec::new();
    let mut interrupted = false;
    for (i, &frame) in p.sizes.iter().enumerate() {
        match search_size(c, p, reach, frame, p.sizes.len() - 1 - i)? {
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
        .map(|(mut k, at)| {
            k.stopped_by = at.and_then(|i| top.parts.get(i)).map(stopper);
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
    top.notes.push(format!(
        "loss counted at the application (netceil's receiver), against what was sent; bits/s are Ethernet frame bits (frame size × 8 × rate), decimal units (1 Gbit/s = 10^9 bit/s); {} s trials decide, shorter ones narrow",
        p.trial_s
    ));
    top.notes.push(format!(
        "a rate is within a tolerance when at most {} of its trial-seconds (at least {} full-length trials' worth, shorter failures counted too) lost more, and it passed a full-length trial: one lossy trial on a noisy path does not move the answer; the loss seen at a rate is the worst of its full-length trials",
        fraction(SearchConfig::default().exceed_ratio),
        SearchConfig::default().duration_sum_trials
    ));
    Ok(Searched { knees, interrupted })
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
