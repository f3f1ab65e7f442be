//! The verdict when no rule fires: either there was no network load to diagnose, or load ran
//! and nothing saturated (see the crate header for why this is always said).

use netceil_model::{names as n, Finding};

use crate::cause;
use crate::ctx::{finding, Ctx, NetActivity};
use crate::fmt;

/// The single finding for a run where no cause fired.
pub fn nothing_binds(ctx: &Ctx) -> Finding {
    let busy = ctx.machine_busy().map(|(b, _)| b);
    let hottest = ctx
        .per_cpu_busy()
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1));
    // A log without network counters and without a rise in activity is idle if its CPU was.
    let quiet_cpu = !ctx.phases.has_load() && busy.is_some_and(|b| b < 10.0);
    let no_load = match &ctx.net {
        NetActivity::Absent(_) => true,
        NetActivity::Unknown => ctx.rows.is_empty() || quiet_cpu,
        NetActivity::Seen(_) => false,
    };
    if no_load {
        let what = match &ctx.net {
            NetActivity::Absent(w) => w.clone(),
            _ if quiet_cpu => format!(
                "no network counters, no rise in activity, and the CPU {} busy throughout",
                fmt::pct(busy.unwrap_or(0.0))
            ),
            _ => "the run has no load phase and no network counters".into(),
        };
        // Without a load phase the averages cover no rows: take the CPU over the whole run.
        let busy = busy.or_else(|| whole_run_busy(ctx));
        let other_work = busy
            .filter(|b| *b >= 20.0)
            .map(|b| format!("; the CPU was {} busy with other work", fmt::pct(b)))
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
                Some(b),
                format!("CPU {} busy on average", fmt::pct(b)),
            ));
        }
        f.next =
            Some("run a workload (netceil run) or watch during one (netceil watch -- CMD)".into());
        return f;
    }
    let mut parts = Vec::new();
    let mut f = finding(
        cause::NO_CEILING,
        String::new(),
        0.5 * ctx.data_factor() * ctx.net_factor().max(0.5),
    );
    if let Some(t) = ctx.throughput() {
        parts.push(format!("throughput held at {}", fmt::bits(t.bits_per_s)));
        f.evidence.push(ctx.ev(
            t.metric.clone(),
            Some(t.bits_per_s),
            format!("throughput {}", fmt::bits(t.bits_per_s)),
        ));
    }
    if let Some(b) = busy {
        parts.push(format!("the CPU was {} busy", fmt::pct(b)));
        f.evidence.push(ctx.ev(
            n::CPU_BUSY_PCT,
            Some(b),
            format!("CPU {} busy", fmt::pct(b)),
        ));
    }
    if let Some((c, b)) = hottest {
        parts.push(format!("the busiest core (CPU {c}) {}", fmt::pct(b)));
    }
    for (name, words) in [
        (n::CS_PER_S, "context switches"),
        (n::INTR_PER_S, "interrupts"),
    ] {
        if let Some(v) = ctx.total_mean(name) {
            parts.push(format!("{} {words}/s", fmt::si(v)));
            f.evidence
                .push(ctx.ev(name, Some(v), format!("{} {words}/s", fmt::si(v))));
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
    let loss_free = ctx
        .run
        .results
        .as_ref()
        .is_some_and(|r| r.lost_packets == 0 && r.tx_packets > 0);
    if loss_free {
        parts.push("nothing was lost".into());
    }
    if parts.is_empty() {
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
    let limit = if ctx
        .run
        .results
        .as_ref()
        .is_some_and(|r| r.requested_pps.is_some())
    {
        "the offered load was the limit: ask for more to find the ceiling"
    } else {
        "nothing measured saturated, so the offered load (or something not measured) was the limit"
    };
    // An unpaced live run pushed as hard as its sender could: something held it, so
    // "no ceiling" would be false. Say that the ceiling is in what was not measured.
    if crate::rules::threads::unpaced_live_run(ctx) {
        f.cause = cause::UNNAMED_CEILING.into();
        f.confidence = 0.3 * ctx.data_factor();
        f.summary = format!(
            "This unpaced run pushed as hard as it could, yet no resource netceil measures saturated: {} {}. The ceiling is in something not measured here (see the not-checked list): a lock, the far end, a socket or window limit.",
            parts.join(", "),
            ctx.window_words()
        );
        f.next = Some("watch the sender and receiver threads (blocked time, voluntary switches) and the far end's counters; a lock probe would show kernel contention".into());
        return f;
    }
    f.summary = format!(
        "No ceiling found: {} {}; {limit}.",
        parts.join(", "),
        ctx.window_words()
    );
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
    let mean_words = mean.and_then(|m| ctx.mean_of(m).map(|v| fmt::pct(pct(m, v))))?;
    let busiest_words = busiest
        .map(|(m, v)| {
            let who =
                m.id.labels
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ");
            format!("busiest {who}: {}", fmt::pct(pct(m, v)))
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
    use crate::Options;

    #[test]
    fn idle_machine_gets_no_load() {
        let run = live_run(20, idle_row);
        let opts = Options::default();
        let f = nothing_binds(&Ctx::new(&run, &opts));
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
        let f = nothing_binds(&Ctx::new(&run, &opts));
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
        let f = nothing_binds(&Ctx::new(&run, &opts));
        assert_eq!(f.cause, cause::NO_CEILING);
        assert!(
            f.summary.contains("throughput held at 200 Mbit/s"),
            "{}",
            f.summary
        );
        assert!(f.summary.contains("offered load"), "{}", f.summary);
    }
}
