//! A runtime's schedulers (Erlang's): saturation judged per scheduler, not on their mean.
//!
//! Mechanism: an Erlang VM runs its processes on one scheduler thread per core. A scheduler's
//! utilization (`statistics(scheduler_wall_time)`, `scheduler:utilization`, recon's
//! `scheduler_usage`) is the share of its time spent doing work, not spinning. When one
//! scheduler is full while the others idle, the work cannot spread: one process (a
//! `gen_server` every request goes through, a port, a single acceptor) serializes it, and more
//! cores do not help. The mean over schedulers hides it (one at 90 % of four reads as 26 %).
//! When every scheduler of the normal kind is full of real work, the VM is CPU-bound.
//! Dirty schedulers (`type=dirty_cpu|dirty_io`) run blocking native code and are not counted.
//!
//! What looks the same: schedulers that spin before sleeping look busy to the OS, not here
//! (this is work time; `busy_wait.rs` compares it with the OS's CPU).
//!
//! Sizing: each scheduler's utilization against 100 %. Hot from [`HOT_PCT`] while the others
//! average at most [`OTHERS_MAX_PCT`]; all full from [`ALL_PCT`] each. Confidence: 0.45 + 0.45 ×
//! the mean of the hot share (85 % → 0, 97 % → 1) and the others' room (70 % → 0, 20 % → 1),
//! × the data factor.

use netceil_model::{names as n, Finding, Resource};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::ledger::{pct, Class, Entry};
use crate::stats::{mean, mean_strength, ramp};
use netceil_model::{fmt, Unit};

/// A scheduler this utilized (%) is full.
pub const HOT_PCT: f64 = 85.0;
/// The other schedulers must average at most this (%) for one to be a hot spot.
pub const OTHERS_MAX_PCT: f64 = 70.0;
/// Every scheduler at least this utilized (%): the VM is CPU-bound.
pub const ALL_PCT: f64 = 85.0;

/// The normal schedulers' utilization over the load rows, by scheduler number.
fn utilization(ctx: &Ctx) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = ctx
        .series()
        .by_name(n::ERLANG_SCHEDULER_UTIL_PCT)
        .filter(|m| m.id.label("type").is_none_or(|t| t == "normal"))
        .filter_map(|m| Some((m.id.label("scheduler")?.to_string(), ctx.mean_of(m)?)))
        .collect();
    out.sort_by_key(|(s, _)| s.parse::<u32>().unwrap_or(u32::MAX));
    out
}

pub fn check(ctx: &Ctx) -> Option<Entry> {
    let all = utilization(ctx);
    if all.len() < 2 {
        return None;
    }
    type Util<'a> = Vec<&'a (String, f64)>;
    let (hot, rest): (Util, Util) = all.iter().partition(|(_, u)| *u >= HOT_PCT);
    if hot.is_empty() {
        return None;
    }
    let hot_mean = mean(&hot.iter().map(|(_, u)| *u).collect::<Vec<_>>())?;
    let others = mean(&rest.iter().map(|(_, u)| *u).collect::<Vec<_>>());
    let every = rest.is_empty() && all.iter().all(|(_, u)| *u >= ALL_PCT);
    if !every && others.is_none_or(|o| o > OTHERS_MAX_PCT) {
        return None;
    }
    let strength = mean_strength(&[
        Some(ramp(hot_mean, HOT_PCT, 97.0)),
        others.map(|o| ramp(o, OTHERS_MAX_PCT, 20.0)),
    ])
    .unwrap_or(0.0);
    let confidence = (0.45 + 0.45 * strength) * ctx.data_factor();
    let names: Vec<String> = hot
        .iter()
        .map(|(s, u)| format!("scheduler {s} {}", fmt::value(*u, Unit::Percent)))
        .collect();
    let f = if every {
        all_words(ctx, &names, hot_mean, confidence)
    } else {
        hot_words(ctx, &names, others.unwrap_or(0.0), rest.len(), confidence)
    };
    let which: Vec<&str> = hot.iter().map(|(s, _)| s.as_str()).collect();
    Some(
        Entry::claim(
            Class::Ceiling,
            Resource::Scheduler {
                name: format!("schedulers {}", which.join(",")),
            },
            f,
        )
        .sized(
            pct(
                100.0 * hot.len() as f64,
                format!("{} scheduler(s) at 100 % each", hot.len()),
            ),
            pct(
                hot_mean * hot.len() as f64,
                "utilized (time working, not spinning)",
            ),
        )
        .scaling()
        .explains_all(&[cause::SATURATION]),
    )
}

fn hot_words(ctx: &Ctx, names: &[String], others: f64, n_rest: usize, confidence: f64) -> Finding {
    let mut f = finding(
        cause::HOT_CPU,
        format!(
            "{} of the VM's schedulers {} full of real work ({}) {} while the other {n_rest} averaged {}: the work does not spread, so one process or port serializes it, and more schedulers or cores would not help.",
            names.len(),
            if names.len() == 1 { "was" } else { "were" },
            names.join(", "),
            ctx.window_words(),
            fmt::value(others, Unit::Percent)
        ),
        confidence,
    );
    f.evidence.push(ctx.ev(
        format!("{}{{scheduler=*}}", n::ERLANG_SCHEDULER_UTIL_PCT),
        Some((others, Unit::Percent)),
        format!(
            "the other schedulers averaged {} utilized",
            fmt::value(others, Unit::Percent)
        ),
    ));
    f.alternatives.push(format!(
        "the VM CPU-bound overall: ruled out, the other schedulers averaged {}",
        fmt::value(others, Unit::Percent)
    ));
    f.advice.push(advice(
        "find the process on that scheduler: erlang:statistics(run_queue_lengths), recon:proc_count(reductions, 10) and recon:proc_window(reductions, 10, 1000)",
        "the process (or port) whose mailbox or reductions stand out",
        None,
    ));
    f.advice.push(advice(
        "split its work: several processes or a pool instead of one gen_server, or partition by key",
        "work spreads over the schedulers; the hot one falls",
        Some("ordering between requests may depend on the single process"),
    ));
    f.next = Some(
        "msacc (microstate accounting) shows what the hot scheduler spends its time on".into(),
    );
    f
}

fn all_words(ctx: &Ctx, names: &[String], busy: f64, confidence: f64) -> Finding {
    let mut f = finding(
        cause::CPU_BOUND,
        format!(
            "Every scheduler of the VM was full of real work ({}), {} on average {}: the VM is CPU-bound.",
            names.join(", "),
            fmt::value(busy, Unit::Percent),
            ctx.window_words()
        ),
        confidence,
    );
    f.advice.push(advice(
        "more cores for the VM (+S), or less work per message (profile with eprof/fprof)",
        "the schedulers get room",
        None,
    ));
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    fn schedulers(util: &'static [f64]) -> netceil_model::Run {
        imported_run(3, move |s, r| {
            for (i, u) in util.iter().enumerate() {
                let id = (i + 1).to_string();
                put(
                    s,
                    r,
                    n::ERLANG_SCHEDULER_UTIL_PCT,
                    &[("scheduler", id.as_str()), ("type", "normal")],
                    *u,
                );
            }
            put(
                s,
                r,
                n::ERLANG_SCHEDULER_UTIL_PCT,
                &[("scheduler", "9"), ("type", "dirty_cpu")],
                100.0,
            );
        })
    }

    #[test]
    fn one_full_scheduler_among_idle_ones_is_a_hot_spot() {
        let e = entry_on(&schedulers(&[90.1, 12.0, 0.0, 1.9]), check).expect("hot");
        assert_eq!(e.cause, cause::HOT_CPU);
        assert!(
            e.finding.summary.contains("scheduler 1 90.1 %"),
            "{}",
            e.finding.summary
        );
        // A dirty scheduler at 100 % is not counted.
        assert!(
            !e.finding.summary.contains("scheduler 9"),
            "{}",
            e.finding.summary
        );
    }

    #[test]
    fn all_full_is_cpu_bound_and_a_spread_load_is_nothing() {
        let e = entry_on(&schedulers(&[92.0, 95.0, 90.0]), check).unwrap();
        assert_eq!(e.cause, cause::CPU_BOUND);
        assert!(entry_on(&schedulers(&[60.0, 55.0, 62.0]), check).is_none());
        assert!(entry_on(&schedulers(&[90.0, 80.0, 75.0]), check).is_none());
    }
}
