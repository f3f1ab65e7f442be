//! `netceil search udp`: per frame size, the highest packet rate whose loss stays within each
//! tolerance (NDR at 0 %, PDRs above), found by [`netceil_analyze::search`] over real trials,
//! and what stopped it there: the analyzer's verdict on the first failing full-length trial.
//!
//! Each trial is one part of the run (its series window, its results, its findings). Loss is
//! counted at the application: what netceil's receiver read, against what was sent.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{anyhow, Context};
use netceil_analyze::search::{self, Measurer, Purpose, SearchConfig, TrialRecord, TrialResult};
use netceil_load::udp;
use netceil_model::{
    udp_payload_to_frame, Knee, Rate, Results, Run, RunSource, Workload as WorkloadSpec,
    WorkloadKind,
};
use serde_json::json;

use crate::cli::{SearchArgs, SearchUdpArgs, SearchWorkload};
use crate::cmd_run::{emit_plain, measure_udp, new_live_run, obj, part_of, Harness};
use crate::observe::open_store;
use crate::{fmt, Failure, Outcome};

/// A loss tolerance from `0`, `0.5%` or `2 %`.
fn parse_tolerance(text: &str) -> Result<f64, Failure> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok().map(|v| v / 100.0),
        None if t.parse::<f64>().ok() == Some(0.0) => Some(0.0),
        None => {
            return Err(Failure::usage(anyhow!(
                "--loss {t}: write a tolerance as a percentage (0.5%), or 0 for no loss"
            )))
        }
    };
    match value {
        Some(v) if (0.0..1.0).contains(&v) => Ok(v),
        Some(v) => Err(Failure::usage(anyhow!(
            "--loss {t}: a tolerance of {} % is not below 100 %",
            v * 100.0
        ))),
        None => Err(Failure::usage(anyhow!(
            "--loss {t}: not a percentage; expected e.g. 0.5%"
        ))),
    }
}

/// A trial as kept: measured now (its series window is cut from the run at the end) or
/// replayed from the stored parts of an interrupted search (kept as stored).
enum Kept {
    Live {
        results: Box<Results>,
        from: f64,
        to: f64,
        trial: TrialSpec,
    },
    Stored(Box<Run>),
}

/// What a trial was asked: its frame size, rate (0 = unpaced) and length.
#[derive(Debug, Clone, Copy)]
struct TrialSpec {
    frame: usize,
    asked: f64,
    trial_s: f64,
}

/// A trial's workload as its part records it (what `--resume` matches on).
fn trial_workload(
    overhead: usize,
    t: TrialSpec,
    duration_s: f64,
    target: Option<String>,
) -> WorkloadSpec {
    WorkloadSpec {
        kind: WorkloadKind::Udp,
        params: obj(json!({
            "frame_bytes": t.frame, "payload_bytes": t.frame - overhead,
            "rate_pps": (t.asked > 0.0).then_some(t.asked), "trial_s": t.trial_s,
            "duration_s": duration_s, "target": target,
        })),
    }
}

/// Runs real UDP trials for the search, keeping each as a part of the run and storing it at
/// once; with the parts of an interrupted search, replays them first, in order, as long as
/// the search asks for the same trials (it is deterministic given the results, so it does).
struct UdpTrials<'h, 's> {
    h: &'h mut Harness<'s>,
    base: udp::UdpConfig,
    frame: usize,
    overhead: usize,
    run_id: String,
    target: Option<String>,
    parts: Vec<Kept>,
    /// The index the next part gets in the run.
    next_index: usize,
    replay: VecDeque<Run>,
    replayed: usize,
    stopped: bool,
    /// The load engine's own error, kept with its exit code (a usage error stays one).
    failure: Option<Failure>,
}

impl UdpTrials<'_, '_> {
    /// The next stored trial, if it is this one.
    fn take_replay(&mut self, asked: f64, trial_s: f64) -> Option<Results> {
        let p = self.replay.front()?;
        let params = &p.workload.as_ref()?.params;
        let frame = params
            .get("frame_bytes")
            .and_then(serde_json::Value::as_u64);
        let rate = params
            .get("rate_pps")
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(0.0);
        let length = params.get("trial_s").and_then(serde_json::Value::as_f64);
        let same = frame == Some(self.frame as u64)
            && (rate - asked).abs() <= 1e-9 * asked.max(1.0)
            && length.is_some_and(|l| (l - trial_s).abs() <= 1e-9)
            && p.results.is_some();
        if !same {
            // The search went another way: nothing further can be replayed.
            self.replay.clear();
            return None;
        }
        let p = self.replay.pop_front()?;
        let r = p.results.clone()?;
        self.parts.push(Kept::Stored(Box::new(p)));
        self.next_index += 1;
        self.replayed += 1;
        Some(r)
    }

    fn trial(&mut self, cfg: &udp::UdpConfig, asked: f64) -> Result<Results, Failure> {
        let trial_s = cfg.duration.as_secs_f64();
        if let Some(r) = self.take_replay(asked, trial_s) {
            return Ok(r);
        }
        let from = self.h.rec.elapsed_s();
        let r = measure_udp(cfg, self.h)?;
        let to = self.h.rec.elapsed_s();
        let spec = TrialSpec {
            frame: self.frame,
            asked,
            trial_s,
        };
        // Stored at once, without its series: the run's end writes the parts again with them.
        let mut part = Run::new(
            format!("{}.{}", self.run_id, self.next_index + 1),
            RunSource::Live,
        );
        part.workload = Some(trial_workload(
            self.overhead,
            spec,
            r.duration_s,
            self.target.clone(),
        ));
        part.results = Some(r.clone());
        part.meta.complete = true;
        self.h.rec.add_part(self.next_index, &part);
        self.parts.push(Kept::Live {
            results: Box::new(r.clone()),
            from,
            to,
            trial: spec,
        });
        self.next_index += 1;
        Ok(r)
    }
}

impl Measurer for UdpTrials<'_, '_> {
    fn measure(&mut self, rate_pps: f64, duration: Duration) -> Result<TrialResult, String> {
        if crate::stop_flag().load(Ordering::SeqCst) {
            self.stopped = true;
            return Err(crate::exit::interrupted());
        }
        let cfg = udp::UdpConfig {
            rate: Some(Rate::PacketsPerSecond(rate_pps)),
            duration,
            ..self.base.clone()
        };
        let r = match self.trial(&cfg, rate_pps) {
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
        fmt::pps(r.requested_pps),
        fmt::pps(r.achieved_pps),
        format!("{:.4} %", r.loss_ratio * 100.0),
        if r.generator_limited() {
            "  (generator short)"
        } else {
            ""
        }
    )
}

/// What one search runs with: from the command line, or from the run it resumes.
#[derive(Debug, Clone)]
struct Settings {
    sizes: Vec<usize>,
    tolerances: Vec<f64>,
    trial: Duration,
    initial_trial: Duration,
    precision: f64,
    min_pps: f64,
    max_pps: Option<f64>,
    max_trials: usize,
}

impl Settings {
    fn from_args(a: &SearchUdpArgs) -> Result<Settings, Failure> {
        let mut tolerances = a
            .loss
            .iter()
            .map(|x| parse_tolerance(x))
            .collect::<Result<Vec<f64>, Failure>>()?;
        tolerances.sort_by(f64::total_cmp);
        tolerances.dedup();
        let p = a.precision.trim();
        let precision = p
            .strip_suffix('%')
            .and_then(|x| x.trim().parse::<f64>().ok())
            .ok_or_else(|| {
                Failure::usage(anyhow!("--precision {p}: expected a percentage, e.g. 1%"))
            })?
            / 100.0;
        Ok(Settings {
            sizes: a.sizes.clone(),
            tolerances,
            trial: a.trial,
            initial_trial: a.initial_trial,
            precision,
            min_pps: a.min_rate,
            max_pps: a.max_rate,
            max_trials: a.max_trials,
        })
    }

    /// The settings a stored search ran with.
    fn from_run(run: &Run) -> Result<Settings, Failure> {
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
        let p = &w.params;
        if w.kind != WorkloadKind::Search
            || p.get("workload").and_then(|v| v.as_str()) != Some("udp")
        {
            return Err(bad("it is not a UDP search"));
        }
        let f = |k: &str| p.get(k).and_then(serde_json::Value::as_f64);
        let need = |k: &str| f(k).ok_or_else(|| bad(&format!("its '{k}' is missing")));
        // Read back within the bounds the command line has: a store is input too.
        let trial = |k: &str| {
            crate::parse::secs_within(need(k)?, crate::parse::RUN)
                .ok_or_else(|| bad(&format!("its '{k}' is not a trial length")))
        };
        let pps = |k: &str, v: f64| {
            Rate::PacketsPerSecond(v)
                .in_bounds()
                .then_some(v)
                .ok_or_else(|| bad(&format!("its '{k}' is not a packet rate")))
        };
        let list = |k: &str| -> Result<Vec<f64>, Failure> {
            p.get(k)
                .and_then(|v| v.as_array())
                .map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect())
                .ok_or_else(|| bad(&format!("its '{k}' is missing")))
        };
        Ok(Settings {
            sizes: list("sizes")?.into_iter().map(|x| x as usize).collect(),
            tolerances: list("loss")?,
            trial: trial("trial_s")?,
            initial_trial: trial("initial_trial_s")?,
            precision: need("precision")?,
            min_pps: pps("min_pps", need("min_pps")?)?,
            max_pps: f("max_pps").map(|v| pps("max_pps", v)).transpose()?,
            max_trials: need("max_trials")? as usize,
        })
    }

    fn check(&self, overhead: usize) -> Result<(), Failure> {
        if self.sizes.is_empty() {
            return Err(Failure::usage(anyhow!("--sizes: at least one frame size")));
        }
        let least = overhead + netceil_load::header::HEADER_LEN;
        if let Some(f) = self.sizes.iter().find(|f| **f < least) {
            return Err(Failure::usage(anyhow!(
                "--sizes {f}: a frame must hold the {overhead}-byte headers and netceil's {}-byte header: {least} at least",
                netceil_load::header::HEADER_LEN
            )));
        }
        // The same checks the search makes, before any traffic.
        SearchConfig {
            min_pps: self.min_pps,
            max_pps: self.max_pps.unwrap_or(self.min_pps * 2.0),
            tolerances: self.tolerances.clone(),
            final_duration: self.trial,
            initial_duration: self.initial_trial,
            precision: self.precision,
            max_trials: self.max_trials,
        }
        .validate()
        .map_err(|e| Failure::usage(anyhow!(e)))
    }
}

pub fn run(args: SearchArgs) -> Outcome {
    let SearchWorkload::Udp(a) = &args.workload;
    let common = args.common.clone();
    let overhead = udp_payload_to_frame(0, common.ipv6);
    let store = open_store(common.no_store);
    // --resume: the stored run's settings and its trials, replayed before any new traffic.
    let (settings, replay, resumed_from) = match &a.resume {
        Some(spec) => {
            let (old, id) = crate::cmd_sweep::resumable(
                store.as_ref(),
                spec,
                common.to.map(|t| t.to_string()),
            )?;
            (
                Settings::from_run(&old)?,
                VecDeque::from(old.parts),
                Some(id),
            )
        }
        None => (Settings::from_args(a)?, VecDeque::new(), None),
    };
    settings.check(overhead)?;
    let pairs: Vec<(usize, usize)> = settings.sizes.iter().map(|&f| (f, f - overhead)).collect();
    crate::kernel::check_path_mtu(common.to, "--sizes", &pairs)
        .map_err(|e| Failure::usage(anyhow!(e)))?;
    let Settings {
        sizes,
        tolerances,
        trial,
        initial_trial,
        precision,
        min_pps,
        max_pps,
        max_trials,
    } = settings;

    let (mut top, wire_id) = new_live_run(&common);
    let run_id = top.run_id.clone();
    top.workload = Some(WorkloadSpec {
        kind: WorkloadKind::Search,
        params: obj(json!({
            "workload": "udp", "sizes": sizes, "loss": tolerances,
            "trial_s": trial.as_secs_f64(), "initial_trial_s": initial_trial.as_secs_f64(),
            "precision": precision, "min_pps": min_pps, "max_pps": max_pps,
            "max_trials": max_trials, "target": common.to.map(|t| t.to_string()),
            "point": "app", "resumed_from": resumed_from,
        })),
    });
    let quiet_parts = crate::cli::CommonRunArgs {
        quiet: true,
        ..common.clone()
    };
    let mut h = Harness::start(&quiet_parts, store.as_ref(), &top)?;
    let metrics = crate::cmd_run::steps_metrics(&args.metrics, &mut h)?;
    let mut all_parts: Vec<Kept> = Vec::new();
    let mut knees: Vec<Knee> = Vec::new();
    // For each knee, the index of the part that stopped it (filled in once parts are analyzed).
    let mut stopped_at: Vec<Option<usize>> = Vec::new();
    let mut interrupted = false;
    let mut replay = replay;
    let mut replayed = 0usize;
    let steps = crate::live::Steps::new(
        "search",
        (sizes.len() * (max_trials + usize::from(max_pps.is_none()))) as u64,
        common.quiet,
    );
    for &frame in &sizes {
        let base = crate::cmd_run::udp_train_config(
            &common,
            frame - overhead,
            a.pacing,
            a.rcvbuf,
            a.rcvbuf_force,
            wire_id,
        )?;
        let first_part = all_parts.len();
        let mut trials = UdpTrials {
            h: &mut h,
            base: base.clone(),
            frame,
            overhead,
            run_id: run_id.clone(),
            target: common.to.map(|t| t.to_string()),
            parts: Vec::new(),
            next_index: first_part,
            replay: std::mem::take(&mut replay),
            replayed: 0,
            stopped: false,
            failure: None,
        };
        // The highest rate worth asking: what the generator sends flat out, unless given.
        let max = match max_pps {
            Some(m) => m,
            None => {
                steps.say(&format!(
                    "{frame} B frames: measuring the generator's own ceiling ({} s unpaced)",
                    initial_trial.as_secs_f64()
                ));
                let cfg = udp::UdpConfig {
                    duration: initial_trial,
                    ..base.clone()
                };
                let m = trials.trial(&cfg, 0.0)?.tx_pps;
                steps.step(&format!(
                    "  {frame:>5} B  the generator sends {} flat out",
                    fmt::pps(m)
                ));
                m
            }
        };
        let cfg = SearchConfig {
            min_pps: min_pps.min(max * 0.5),
            max_pps: max,
            tolerances: tolerances.clone(),
            final_duration: trial,
            initial_duration: initial_trial,
            precision,
            max_trials,
        };
        let outcome = search::search(&cfg, &mut trials, &mut |rec| {
            steps.step(&trial_line(frame, rec));
        });
        let stopped = trials.stopped;
        let failure = trials.failure.take();
        replayed += trials.replayed;
        replay = std::mem::take(&mut trials.replay);
        let offset = first_part + usize::from(max_pps.is_none());
        all_parts.append(&mut trials.parts);
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
        for r in &outcome.results {
            stopped_at.push(r.first_failing_trial.map(|i| offset + i));
            knees.push(Knee {
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
            });
        }
        if crate::stop_flag().load(Ordering::SeqCst) {
            interrupted = true;
            break;
        }
    }
    steps.finish();
    top.meta.own_thread_ids = netceil_load::threads::spawned_thread_ids();
    let leftover = h.rec.stop(&mut top);
    h.rec.store_rows(&leftover);
    for kept in all_parts {
        let index = top.parts.len();
        let mut part = match kept {
            Kept::Live {
                results,
                from,
                to,
                trial,
            } => {
                let spec = trial_workload(
                    overhead,
                    trial,
                    results.duration_s,
                    common.to.map(|t| t.to_string()),
                );
                part_of(&top, spec, *results, from, to)
            }
            Kept::Stored(old) => {
                let mut part = *old;
                part.run_id = format!("{run_id}.{}", index + 1);
                part
            }
        };
        netceil_analyze::analyze_into(&mut part);
        top.parts.push(part);
    }
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
    if let Some(old) = &resumed_from {
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
        trial.as_secs_f64()
    ));
    let stored = h.rec.finish(&top);
    if common.json {
        crate::cmd_run::emit(&top, true, stored.as_deref(), store.as_ref())?;
    } else {
        let mut out = crate::out::stdout();
        write!(out, "{}", knee_table(&top)).context("writing to stdout")?;
        emit_plain(&mut out, stored.as_deref(), store.as_ref())?;
    }
    crate::cmd_run::steps_metrics_done(metrics, &top, &args.metrics);
    Ok(crate::observe::store_outcome(
        common.no_store,
        stored.is_some(),
    ))
}

fn rate_of(p: &Run) -> String {
    p.workload
        .as_ref()
        .and_then(|w| w.params.get("rate_pps"))
        .and_then(serde_json::Value::as_f64)
        .map_or_else(|| "unpaced".to_string(), fmt::pps)
}

/// The knee table: per frame size and tolerance, the rate, its throughput in both units,
/// the loss seen there, and what stopped it.
fn knee_table(run: &Run) -> String {
    let mut s = String::new();
    s.push_str(
        "frame B  loss ≤     rate          Gbit/s   Gibit/s  loss seen    trials  verified\n",
    );
    for k in &run.knees {
        let rate = k.rate_pps.map_or_else(|| "none".into(), fmt::pps);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances_are_percentages() {
        assert_eq!(parse_tolerance("0").unwrap(), 0.0);
        assert!((parse_tolerance("0.5%").unwrap() - 0.005).abs() < 1e-15);
        assert!(parse_tolerance("0.5").is_err(), "a bare 0.5 is ambiguous");
        assert!(parse_tolerance("100%").is_err());
        assert!(parse_tolerance("x%").is_err());
    }
}
