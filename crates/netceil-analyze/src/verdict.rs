//! The findings of one run, written from its ranked ledger: the verdict first, with what it
//! explains and what would gain from relieving it; and when no claim binds, the one finding
//! that says so, with the resources that were sized and found with room.
//!
//! **When nothing binds** the analyzer still says so, in exactly one finding, because a
//! demanding reader wants to know whether the run saturated at all: [`cause::NO_LOAD`] when
//! there was no network load to diagnose; [`cause::NO_CEILING`] when load ran and no resource
//! saturated; [`cause::UNNAMED_CEILING`] when an unpaced run pushed and still nothing measured
//! saturated. Each names the resources closest to their limits with their figures, so "nothing
//! saturated" is never said while the telling figure sits elsewhere.

use netceil_model::{names as n, EntryState, Evidence, Finding};

use crate::cause;
use crate::ctx::{finding, Ctx, NetActivity};
use crate::ledger::{share_words, Class, Ranked, GAIN_TIE};
use netceil_model::{fmt, Unit};

/// A runner-up this close to the verdict in confidence, at an equal gain, is a close call.
pub const CLOSE_CALL: f64 = 0.10;

/// The points of confidence a runner-up is behind the verdict, as both are shown (each
/// rounded to a whole per cent), when that is a close call: fewer than [`CLOSE_CALL`] × 100,
/// and not ahead of it. Every close call is decided and worded from this one figure.
pub fn close_call(verdict: f64, runner_up: f64) -> Option<f64> {
    let points = (verdict * 100.0).round() - (runner_up * 100.0).round();
    (points >= 0.0 && points < (CLOSE_CALL * 100.0).round()).then_some(points)
}

/// How many sized resources the no-ceiling verdict names.
const RULED_OUT_SHOWN: usize = 4;

/// The findings in ledger order, and the sentence that says how the verdict follows.
pub fn findings(ctx: &Ctx, r: &Ranked) -> (Vec<Finding>, String) {
    let claims: Vec<usize> = (0..r.entries.len())
        .filter(|&i| r.entries[i].class != Class::Context)
        .collect();
    let mut out: Vec<Finding> = Vec::new();
    let why;
    if r.binds {
        let mut verdict = r.entries[0].finding.clone();
        annotate(ctx, r, &mut verdict);
        why = format!("{} binds: {}", r.entries[0].id, r.whys[0]);
        out.push(verdict);
        out.extend(claims.iter().skip(1).map(|&i| r.entries[i].finding.clone()));
    } else {
        let f = nothing_binds(ctx, r);
        why = format!("no claim binds: {}", f.summary);
        out.push(f);
        out.extend(claims.iter().map(|&i| r.entries[i].finding.clone()));
    }
    (out, why)
}

/// The verdict's ledger figures: what relieving it gains, the symptoms it explains, the
/// runner-up and whether it was a close call.
fn annotate(ctx: &Ctx, r: &Ranked, f: &mut Finding) {
    let top = &r.entries[0];
    if let Some(g) = &r.gains[0] {
        f.evidence.push(Evidence {
            metric: "ledger.gain".into(),
            window_s: None,
            value: g.factor,
            unit: g.factor.map(|_| Unit::Ratio),
            text: format!("relieving {}: {}", top.id, g.text),
        });
    }
    if let Some(s) = share_words(top) {
        f.evidence.push(Evidence {
            metric: "ledger.share".into(),
            window_s: None,
            value: top.share,
            unit: top.share.map(|_| Unit::Ratio),
            text: format!("{}: {s}", top.id),
        });
    }
    let mut explained = Vec::new();
    for (j, e) in r.entries.iter().enumerate().skip(1) {
        if r.explained_by[j] == Some(0) && e.class != Class::Context {
            explained.push(format!(
                "explains the {} finding ({:.0} %): {}",
                e.cause,
                e.confidence() * 100.0,
                e.finding.summary.trim_end_matches('.')
            ));
        }
    }
    f.alternatives.splice(0..0, explained);
    let runner = (1..r.entries.len()).find(|&j| {
        r.explained_by[j].is_none()
            && matches!(
                r.entries[j].class,
                Class::Ceiling | Class::Loss | Class::Where
            )
            && r.entries[j].cause != top.cause
    });
    let Some(j) = runner else { return };
    let second = &r.entries[j];
    f.alternatives.push(format!(
        "runner-up: {} (cause {}, confidence {:.0} %; {})",
        second.finding.summary.trim_end_matches('.'),
        second.cause,
        second.confidence() * 100.0,
        r.whys[j]
    ));
    let gains_tie = match (r.gains[0].as_ref(), r.gains[j].as_ref()) {
        (Some(a), Some(b)) => match (a.factor, b.factor) {
            (Some(x), Some(y)) => (x - y).abs() <= GAIN_TIE,
            (None, None) => true,
            _ => false,
        },
        _ => false,
    };
    let close = close_call(top.confidence(), second.confidence());
    // A single row (one since-boot snapshot) reads the same every time: no noise to warn of.
    if let (true, Some(points), true) = (gains_tie, close, ctx.series().len() > 1) {
        f.evidence.push(Evidence {
            metric: "verdict_margin".into(),
            window_s: None,
            value: Some(points),
            unit: Some(Unit::Percent),
            text: format!(
                "a close call: {} would gain as much from relief and is {points:.0} points of confidence behind, so a repeat of this run may name it first",
                second.cause,
            ),
        });
    }
}

/// The resources sized and found with room (or near their limit), in words: "CPU 0 62 %
/// busy, thread netceil-udp-tx0 at 70 % of a core".
fn ruled_out(r: &Ranked) -> Vec<String> {
    r.entries
        .iter()
        .zip(&r.states)
        .filter(|(e, s)| {
            e.class == Class::Context
                && matches!(
                    s,
                    EntryState::NearLimit | EntryState::Headroom | EntryState::Saturated
                )
        })
        .take(RULED_OUT_SHOWN)
        .map(|(e, s)| {
            let near = if *s == EntryState::NearLimit {
                " (near its limit)"
            } else {
                ""
            };
            format!("{}{near}", e.finding.summary)
        })
        .collect()
}

/// No network load: what the busiest interface carried, and that nothing else is claimed.
fn no_load(ctx: &Ctx) -> Option<Finding> {
    let busy = ctx.machine_busy().map(|(b, _)| b);
    // A log without network counters and without a rise in activity is idle if its CPU was.
    let quiet_cpu = !ctx.phases.has_load() && busy.is_some_and(|b| b < 10.0);
    // A lock profile is a measurement of the system under load, series or not.
    let is_no_load = match &ctx.net {
        NetActivity::Absent(_) => true,
        NetActivity::Unknown => (ctx.rows.is_empty() || quiet_cpu) && ctx.run.locks.is_empty(),
        NetActivity::Seen(_) => false,
    };
    if !is_no_load {
        return None;
    }
    let what = match &ctx.net {
        NetActivity::Absent(w) => w.clone(),
        _ if quiet_cpu => format!(
            "no network counters, no rise in activity, and the CPU {} busy throughout",
            fmt::value(busy.unwrap_or(0.0), Unit::Percent)
        ),
        _ => "the run has no load phase and no network counters".into(),
    };
    // Without a load phase the averages cover no rows: take the CPU over the whole run.
    let busy = busy.or_else(|| whole_run_busy(ctx));
    let other_work = busy
        .filter(|b| *b >= 20.0)
        .map(|b| {
            format!(
                "; the CPU was {} busy with other work",
                fmt::value(b, Unit::Percent)
            )
        })
        .unwrap_or_default();
    let confidence = if matches!(ctx.net, NetActivity::Absent(_)) {
        0.8
    } else {
        0.4
    };
    let mut f = finding(
        cause::NO_LOAD,
        format!("No network load to diagnose: {what}{other_work}; no ceiling is claimed."),
        confidence,
    );
    if let Some(b) = busy {
        f.evidence.push(ctx.ev_total(
            n::CPU_BUSY_PCT,
            Some((b, Unit::Percent)),
            format!("CPU {} busy on average", fmt::value(b, Unit::Percent)),
        ));
    }
    f.next = Some("run a workload (netceil run) or watch during one (netceil watch -- CMD)".into());
    Some(f)
}

/// What was measured, as the parts of the no-ceiling sentence; evidence goes into `f`.
fn measured(ctx: &Ctx, f: &mut Finding) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(t) = ctx.delivered() {
        parts.push(format!(
            "throughput held at {}",
            fmt::value(t.bits_per_s, Unit::BitsPerSecond)
        ));
        f.evidence.push(ctx.ev(
            t.metric.clone(),
            Some((t.bits_per_s, Unit::BitsPerSecond)),
            format!(
                "throughput {}",
                fmt::value(t.bits_per_s, Unit::BitsPerSecond)
            ),
        ));
    }
    if let Some(b) = ctx.machine_busy().map(|(b, _)| b) {
        parts.push(format!("the CPU was {} busy", fmt::value(b, Unit::Percent)));
        f.evidence.push(ctx.ev(
            n::CPU_BUSY_PCT,
            Some((b, Unit::Percent)),
            format!("CPU {} busy", fmt::value(b, Unit::Percent)),
        ));
    }
    if let Some((c, b)) = ctx
        .per_cpu_busy()
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
    {
        parts.push(format!(
            "the busiest core (CPU {c}) {}",
            fmt::value(b, Unit::Percent)
        ));
    }
    for (name, words) in [
        (n::CS_PER_S, "context switches"),
        (n::INTR_PER_S, "interrupts"),
    ] {
        if let Some(v) = ctx.total_mean(name) {
            parts.push(format!("{} {words}/s", fmt::number(v)));
            f.evidence.push(ctx.ev(
                name,
                Some((v, Unit::PerSecond)),
                format!("{} {words}/s", fmt::number(v)),
            ));
        }
    }
    if let Some((mean, busiest)) = scheduler_utilization(ctx) {
        parts.push(format!(
            "the schedulers worked {mean} of the time ({busiest})"
        ));
        f.evidence.push(ctx.ev(
            "scheduler_util_pct",
            None,
            format!("effective utilization {mean}; {busiest}"),
        ));
        f.next = Some(
            "compare with the OS CPU % of the same period (top, vmstat): far more OS CPU than scheduler work means busy-waiting schedulers (+sbwt)".into(),
        );
    }
    if let Some(p) = small_packets(ctx) {
        parts.push(p);
    }
    if ctx
        .run
        .results
        .as_ref()
        .is_some_and(|r| r.lost_packets == 0 && r.tx_packets > 0)
    {
        parts.push("nothing was lost".into());
    }
    parts
}

/// A packet rate high for its bit rate: small packets, whose per-packet cost dominates. Said
/// when the data shows it, since no rule sizes per-packet cost without per-CPU figures.
fn small_packets(ctx: &Ctx) -> Option<String> {
    let (pps, _) = ctx.packet_rate()?;
    let t = ctx.throughput()?;
    let bytes = t.bits_per_s / 8.0 / pps.max(1.0);
    (pps >= 100e3 && bytes <= 256.0).then(|| {
        format!(
            "{} of {} packets on average: per-packet cost dominates at that size",
            fmt::value(pps, Unit::PacketsPerSecond),
            fmt::value(bytes, Unit::Bytes)
        )
    })
}

/// The single finding for a run where no claim binds.
pub fn nothing_binds(ctx: &Ctx, r: &Ranked) -> Finding {
    if let Some(f) = no_load(ctx) {
        return f;
    }
    let mut f = finding(
        cause::NO_CEILING,
        String::new(),
        0.5 * ctx.data_factor() * ctx.net_factor().max(0.5),
    );
    let parts = measured(ctx, &mut f);
    let sized = ruled_out(r);
    if parts.is_empty() && sized.is_empty() {
        let columns: Vec<String> = ctx
            .series()
            .metrics
            .iter()
            .take(6)
            .map(|m| m.id.to_string())
            .collect();
        let held = if columns.is_empty() {
            "no series".to_string()
        } else {
            format!("only {}", columns.join(", "))
        };
        f.summary = format!(
            "No ceiling can be named: the data has none of the figures the rules read (throughput, CPU, interrupts, context switches, drops, locks); it has {held}."
        );
        f.confidence = 0.2;
        f.next = Some("add a throughput (--throughput), or import a log with CPU and interrupt figures taken during the load".into());
        return f;
    }
    let closest = if sized.is_empty() {
        String::new()
    } else {
        format!("; sized and ruled out: {}", sized.join(", "))
    };
    let facts = if parts.is_empty() {
        String::new()
    } else {
        format!(": {} {}", parts.join(", "), ctx.window_words())
    };
    // An unpaced live run pushed as hard as its sender could: something held it, so "no
    // ceiling" would be false. Say that the ceiling is in what was not measured.
    if crate::rules::threads::unpaced_live_run(ctx) {
        f.cause = cause::UNNAMED_CEILING;
        f.confidence = 0.3 * ctx.data_factor();
        f.summary = format!(
            "This unpaced run pushed as hard as it could, yet no resource netceil measures saturated{facts}{closest}. The ceiling is in something not measured here (see the not-checked list): a lock, the far end, a socket or window limit."
        );
        f.next = Some("watch the sender and receiver threads (blocked time, voluntary switches) and the far end's counters; a lock probe would show kernel contention".into());
        return f;
    }
    let met = ctx.offered_met();
    let limit = if met {
        "the rate asked for was delivered, so the offered load was the limit: ask for more to find the ceiling"
    } else {
        "nothing measured reached its limit"
    };
    f.summary = format!("No ceiling found{facts}{closest}; {limit}.");
    f.alternatives.push("a limit in something not measured (a lock without a profile, a remote peer) is not ruled out".into());
    if f.next.is_none() {
        f.next = Some("raise the offered load (a higher --rate, more flows) until something saturates, or sweep the rate".into());
    }
    f
}

/// Machine CPU busy % averaged over every row of the series.
fn whole_run_busy(ctx: &Ctx) -> Option<f64> {
    let s = ctx.series();
    if let Some(m) = s.total(n::CPU_BUSY_PCT) {
        return crate::stats::mean(&crate::stats::present(&m.values));
    }
    let idle = s.total(n::CPU_IDLE_PCT)?;
    crate::stats::mean(&crate::stats::present(&idle.values)).map(|i| 100.0 - i)
}

/// Erlang scheduler utilization over the load rows: the mean and the busiest scheduler, in words.
fn scheduler_utilization(ctx: &Ctx) -> Option<(String, String)> {
    let s = ctx.series();
    let mean = s
        .metrics
        .iter()
        .find(|m| m.id.name.contains("scheduler_util") && m.id.labels.is_empty());
    let busiest = s
        .metrics
        .iter()
        .filter(|m| m.id.name.contains("scheduler_util") && !m.id.labels.is_empty())
        .filter_map(|m| ctx.mean_of(m).map(|v| (m, v)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let pct = |m: &netceil_model::Metric, v: f64| {
        if m.unit == netceil_model::Unit::Ratio {
            v * 100.0
        } else {
            v
        }
    };
    let mean_words =
        mean.and_then(|m| ctx.mean_of(m).map(|v| fmt::value(pct(m, v), Unit::Percent)))?;
    let busiest_words = busiest
        .map(|(m, v)| {
            let who =
                m.id.labels
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ");
            format!("busiest {who}: {}", fmt::value(pct(m, v), Unit::Percent))
        })
        .unwrap_or_else(|| "one figure for all schedulers".into());
    Some((mean_words, busiest_words))
}

/// The top-level verdict of a suite whose parts found no ceiling.
pub fn merge_part_verdicts(verdicts: Vec<(String, Finding)>) -> Finding {
    let all_no_load = verdicts.iter().all(|(_, f)| f.cause == cause::NO_LOAD);
    let cause = if all_no_load {
        cause::NO_LOAD
    } else {
        cause::NO_CEILING
    };
    let confidence = verdicts
        .iter()
        .map(|(_, f)| f.confidence)
        .fold(f64::INFINITY, f64::min);
    let summary = if verdicts.is_empty() {
        "No parts to diagnose.".to_string()
    } else {
        verdicts
            .iter()
            .map(|(label, f)| format!("{label}: {}", f.summary))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut f = finding(
        cause,
        summary,
        if confidence.is_finite() {
            confidence
        } else {
            0.3
        },
    );
    for (_, v) in verdicts {
        f.evidence.extend(v.evidence);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use crate::{analyze_with, Options};

    #[test]
    fn idle_machine_gets_no_load() {
        let run = live_run(20, idle_row);
        let opts = Options::default();
        let f = analyze_with(&run, &opts).remove(0);
        assert_eq!(f.cause, cause::NO_LOAD);
        assert!(f.summary.contains("No network load"), "{}", f.summary);
    }

    #[test]
    fn idle_imported_log_gets_no_load() {
        let run = imported_run(30, |s, r| {
            put(s, r, n::CS_PER_S, &[], 300.0 + noise(r, 30.0));
            put(s, r, n::INTR_PER_S, &[], 200.0 + noise(r + 9, 30.0));
            put(s, r, n::CPU_IDLE_PCT, &[], 99.0 - noise(r, 1.0).abs());
        });
        let opts = Options::default();
        let f = analyze_with(&run, &opts).remove(0);
        assert_eq!(f.cause, cause::NO_LOAD, "{f}");
        assert!(f.summary.contains("no rise in activity"), "{}", f.summary);
    }

    #[test]
    fn load_with_headroom_gets_no_ceiling() {
        let run = live_run(10, |s, r| {
            cpu_row(s, r, &[(10.0, 10.0, 5.0), (8.0, 9.0, 2.0)]);
            put(s, r, n::LOAD_RX_BITS_PER_S, &[], 2e8);
        });
        let opts = Options::default();
        let f = analyze_with(&run, &opts).remove(0);
        assert_eq!(f.cause, cause::NO_CEILING);
        assert!(
            f.summary.contains("throughput held at 200 Mbit/s"),
            "{}",
            f.summary
        );
        assert!(
            f.summary
                .contains("sized and ruled out: CPU 0 25 % busy, CPU 1 19 % busy"),
            "{}",
            f.summary
        );
        assert!(
            f.summary.contains("nothing measured reached its limit"),
            "{}",
            f.summary
        );
    }
}
