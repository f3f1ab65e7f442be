//! Scheduler utilization as Erlang tools print it, already as ratios:
//!
//! - `recon:scheduler_usage(Millis)`: `[{1,0.8581},{2,0.8606},…]`, one `{SchedulerId, Usage}`
//!   per scheduler, usage 0–1 over the `Millis` the call waited;
//! - `scheduler:utilization(Seconds)` (OTP ≥ 21, runtime_tools): `[{total,0.01,"1.0%"},
//!   {weighted,…},{normal,1,0.01,"1.0%"},…,{cpu,9,…},{io,17,…}]`, also in Elixir's form
//!   (`{:normal, 1, 2.3e-5, '0.0%'}`).
//!
//! Each list is one series row: `erlang_scheduler_util_pct{scheduler=N}` (with
//! `type=normal|dirty_cpu|dirty_io` for `scheduler:utilization`), the unlabeled total (the
//! tool's `total`, or the mean over schedulers for recon) and
//! `erlang_scheduler_util_weighted_pct`. The interval is read from the call at the prompt
//! before the list (`recon:scheduler_usage(1000)` is 1 s, `scheduler:utilization(5)` 5 s);
//! otherwise `ImportOptions::interval_s` is used, and without either the rows are not placed
//! in time (`interval_s = 0`, rows numbered from 0) and a note says so.

use netceil_model::names::{ERLANG_SCHEDULER_UTIL_PCT, ERLANG_SCHEDULER_UTIL_WEIGHTED_PCT};
use netceil_model::{MetricId, Unit};

use super::common::{error, finish, line_count, new_run, plural};
use super::erlang_term::{tokenize, top_lists, Prompt, Term};
use super::erlang_wall_time::{scheduler_kind, LABEL_SCHEDULER};
use crate::{ImportError, ImportOptions, Imported};

/// The name of this format for `--format`.
pub const NAME: &str = "erlang-scheduler-usage";

/// Label key of a scheduler's kind, as `scheduler:utilization` reports it.
pub const LABEL_TYPE: &str = "type";

/// One scheduler's utilization (0–1), or an aggregate.
#[derive(Debug, Clone, PartialEq)]
enum Usage {
    Scheduler {
        id: i128,
        kind: Option<&'static str>,
        ratio: f64,
    },
    Total(f64),
    Weighted(f64),
}

/// Which tool printed a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    Recon,
    SchedulerModule,
}

fn usage(t: &Term) -> Option<(Tool, Usage)> {
    let Term::Tuple(v) = t else { return None };
    match v.as_slice() {
        [id, ratio] => Some((
            Tool::Recon,
            Usage::Scheduler {
                id: id.int()?,
                kind: None,
                ratio: ratio.num()?,
            },
        )),
        [kind, ratio, Term::Str(_)] => {
            let ratio = ratio.num()?;
            match kind.atom()? {
                "total" => Some((Tool::SchedulerModule, Usage::Total(ratio))),
                "weighted" => Some((Tool::SchedulerModule, Usage::Weighted(ratio))),
                _ => None,
            }
        }
        [kind, id, ratio, Term::Str(_)] => {
            let kind = scheduler_kind(kind.atom()?)?;
            Some((
                Tool::SchedulerModule,
                Usage::Scheduler {
                    id: id.int()?,
                    kind: Some(kind),
                    ratio: ratio.num()?,
                },
            ))
        }
        _ => None,
    }
}

/// The usages of a list printed by one tool; a list cut short keeps its whole tuples.
fn usage_list(items: &[Term], cut: bool) -> Option<(Tool, Vec<Usage>)> {
    let mut tool = None;
    let mut out = Vec::new();
    for (k, t) in items.iter().enumerate() {
        match usage(t) {
            Some((tl, u)) if tool.is_none_or(|x| x == tl) => {
                let ratio = match &u {
                    Usage::Scheduler { ratio, .. }
                    | Usage::Total(ratio)
                    | Usage::Weighted(ratio) => *ratio,
                };
                // A ratio, with a little room for rounding.
                if !(0.0..=1.001).contains(&ratio) {
                    return None;
                }
                tool = Some(tl);
                out.push(u);
            }
            None if cut && k + 1 == items.len() => {}
            _ => return None,
        }
    }
    let has_scheduler = out.iter().any(|u| matches!(u, Usage::Scheduler { .. }));
    (has_scheduler).then(|| (tool.unwrap_or(Tool::Recon), out))
}

/// Says why a text is not recon or scheduler-module utilization output.
pub fn sniff(text: &str) -> Result<(), String> {
    let (toks, _) = tokenize(text);
    let lists = top_lists(&toks);
    if lists
        .iter()
        .any(|(_, items, cut)| usage_list(items, *cut).is_some())
    {
        return Ok(());
    }
    Err(match lists.first() {
        Some((line, _, _)) => format!(
            "the list at line {line} is neither [{{SchedulerId, Usage}}, …] (recon:scheduler_usage) nor [{{normal, Id, Util, \"Pct\"}}, …] (scheduler:utilization)"
        ),
        None => "no Erlang list of scheduler usages ('[{1,0.8581},{2,0.8606},…]') found".into(),
    })
}

/// The interval a prompt's call measured over, in seconds.
fn call_interval(input: &str) -> Option<f64> {
    let (scale, rest) = if let Some(i) = input.find("scheduler_usage(") {
        (1e-3, &input[i + "scheduler_usage(".len()..])
    } else if let Some(i) = input.find("utilization(") {
        (1.0, &input[i + "utilization(".len()..])
    } else {
        return None;
    };
    let arg = rest.split(')').next()?.trim().replace('_', "");
    let n: f64 = arg.parse::<u64>().ok()? as f64;
    (n > 0.0).then_some(n * scale)
}

/// The interval of the list at `line`: from the last prompt before it.
fn interval_before(prompts: &[Prompt], line: usize) -> Option<f64> {
    prompts
        .iter()
        .rev()
        .find(|p| p.line < line)
        .and_then(|p| call_interval(&p.input))
}

/// Imports recon:scheduler_usage/1 or scheduler:utilization/1 output.
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let (toks, prompts) = tokenize(text);
    let mut warnings = Vec::new();
    let mut samples = Vec::new();
    for (line, items, cut) in top_lists(&toks) {
        if let Some((tool, usages)) = usage_list(&items, cut) {
            if cut {
                warnings.push(format!(
                    "the list at line {line} is cut short: {} read",
                    plural(usages.len(), "entry")
                ));
            }
            samples.push((line, tool, usages));
        } else if cut {
            warnings.push(format!(
                "line {line}: a list cut short before its first whole tuple was skipped"
            ));
        }
    }
    if samples.is_empty() {
        return Err(error(
            opts,
            line_count(text),
            None,
            "a list of scheduler usages: [{SchedulerId, Usage}, …] (recon:scheduler_usage/1) or [{total, Util, \"Pct\"}, {normal, Id, Util, \"Pct\"}, …] (scheduler:utilization/1)",
            "none",
        ));
    }
    let fallback = opts.interval_s.filter(|i| *i > 0.0 && i.is_finite());
    let intervals: Vec<Option<f64>> = samples
        .iter()
        .map(|(line, _, _)| interval_before(&prompts, *line).or(fallback))
        .collect();
    let timed = intervals.iter().all(Option::is_some);
    let mut run = new_run(NAME, text, opts);
    run.series.interval_s = if timed {
        intervals.iter().flatten().copied().next().unwrap_or(0.0)
    } else {
        0.0
    };
    let mut t = 0.0;
    for (k, ((_, tool, usages), interval)) in samples.iter().zip(&intervals).enumerate() {
        t = if timed {
            t + interval.unwrap_or(0.0)
        } else {
            k as f64
        };
        let row = run.series.push_row(t);
        let (mut sum, mut n, mut total) = (0.0, 0usize, None);
        for u in usages {
            match u {
                Usage::Scheduler { id, kind, ratio } => {
                    let mut m = MetricId::new(ERLANG_SCHEDULER_UTIL_PCT)
                        .with(LABEL_SCHEDULER, id.to_string());
                    if let Some(kind) = kind {
                        m = m.with(LABEL_TYPE, *kind);
                    }
                    run.series.set_at(row, &m, Unit::Percent, 100.0 * ratio);
                    sum += 100.0 * ratio;
                    n += 1;
                }
                Usage::Total(r) => total = Some(100.0 * r),
                Usage::Weighted(r) => run.series.set_at(
                    row,
                    &MetricId::new(ERLANG_SCHEDULER_UTIL_WEIGHTED_PCT),
                    Unit::Percent,
                    100.0 * r,
                ),
            }
        }
        let total = total.or((*tool == Tool::Recon && n > 0).then(|| sum / n as f64));
        if let Some(total) = total {
            run.series.set_at(
                row,
                &MetricId::new(ERLANG_SCHEDULER_UTIL_PCT),
                Unit::Percent,
                total,
            );
        }
    }
    let tools: Vec<&str> = [Tool::Recon, Tool::SchedulerModule]
        .into_iter()
        .filter(|tl| samples.iter().any(|s| s.1 == *tl))
        .map(|tl| match tl {
            Tool::Recon => "recon:scheduler_usage/1 (the total is the mean over schedulers)",
            Tool::SchedulerModule => "scheduler:utilization/1 (its own total and weighted values)",
        })
        .collect();
    run.notes.push(format!(
        "Erlang scheduler utilization, {} from {}",
        plural(samples.len(), "sample"),
        tools.join(" and ")
    ));
    run.notes.push(if timed {
        "interval from the call at the prompt (recon's argument is milliseconds, scheduler's seconds) or --interval".into()
    } else {
        "the interval of some samples is unknown (no call with a literal interval before them, no --interval): rows are numbered from 0 and interval_s is 0".into()
    });
    Ok(finish(run, warnings, opts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_from_calls() {
        assert_eq!(call_interval("recon:scheduler_usage(1000)."), Some(1.0));
        assert_eq!(call_interval("scheduler:utilization(5)."), Some(5.0));
        assert_eq!(call_interval(":scheduler.utilization(1)"), Some(1.0));
        assert_eq!(call_interval("scheduler:utilization(S)."), None);
        assert_eq!(call_interval("statistics(runtime)."), None);
    }
}
