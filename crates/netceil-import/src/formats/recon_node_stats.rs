//! recon's node statistics: `recon:node_stats_print(N, Millis)` (one term per line, or pretty
//! printed over several) and `recon:node_stats_list(N, Millis)` (a list of them), from the
//! Erlang shell or, as keyword lists, from Elixir's.
//!
//! Each sample is `{Absolutes, Increments}`:
//! - absolutes, read at the sample: `process_count`, `run_queue` (processes ready to run, over
//!   all run queues), `error_logger_queue_len`, `memory_total`/`procs`/`atoms`/`bin`/`ets`;
//! - increments since the previous sample: `bytes_in`/`bytes_out` (erlang:statistics(io): bytes
//!   through all ports, sockets and files alike), `gc_count`, `gc_words_reclaimed`,
//!   `reductions`, and in recent recon releases `scheduler_usage` (`[{Id, Ratio}, …]`).
//!
//! One row per sample: `erlang_process_count`, `erlang_run_queue`, `erlang_memory_<x>_bytes`,
//! increments as rates (`erlang_io_in_bytes_per_s`, `erlang_io_out_bytes_per_s`,
//! `erlang_gc_per_s`, `erlang_gc_words_reclaimed_per_s`, `erlang_reductions_per_s`), and
//! `erlang_scheduler_util_pct{scheduler}` with its unlabeled mean. Keys this reader does not
//! know become `erlang_<key>` (absolutes) or `erlang_<key>_per_s` (increments).
//!
//! The interval is recon's second argument (milliseconds) at the prompt, or
//! `ImportOptions::interval_s`. Without either, increments cannot become rates: they are kept as
//! counts per sample (`…_per_sample`), the rows are numbered, and a note says so.

use netceil_model::names::ERLANG_SCHEDULER_UTIL_PCT;
use netceil_model::{MetricId, Unit};

use super::common::{error, finish, line_count, new_run, plural, sanitize_metric_name};
use super::erlang_term::{parse_term, tokenize, Parsed, Prompt, Term, Tok};
use super::erlang_wall_time::LABEL_SCHEDULER;
use crate::{ImportError, ImportOptions, Imported};

/// The name of this format for `--format`.
pub const NAME: &str = "recon-node-stats";

/// One `{Absolutes, Increments}` sample and the line it starts on.
struct Sample {
    line: usize,
    absolutes: Vec<(String, Term)>,
    increments: Vec<(String, Term)>,
}

/// `[{key, value}, …]` as pairs; `None` if any element is not a pair with an atom key.
fn proplist(t: &Term) -> Option<Vec<(String, Term)>> {
    let Term::List(items) = t else { return None };
    items
        .iter()
        .map(|i| match i {
            Term::Tuple(kv) if kv.len() == 2 => Some((kv[0].atom()?.to_string(), kv[1].clone())),
            _ => None,
        })
        .collect()
}

/// A node_stats sample: a pair of proplists, the first holding `process_count` or
/// `run_queue`, the second `bytes_in` or `reductions`.
fn sample(t: &Term, line: usize) -> Option<Sample> {
    let Term::Tuple(v) = t else { return None };
    let [a, i] = v.as_slice() else { return None };
    let (absolutes, increments) = (proplist(a)?, proplist(i)?);
    let has = |l: &[(String, Term)], keys: &[&str]| l.iter().any(|(k, _)| keys.contains(&&**k));
    (has(&absolutes, &["process_count", "run_queue"])
        && has(&increments, &["bytes_in", "reductions"]))
    .then_some(Sample {
        line,
        absolutes,
        increments,
    })
}

/// Every sample in the text, and whether the last one was cut short (and dropped).
fn samples(toks: &[(usize, Tok)]) -> (Vec<Sample>, Option<usize>) {
    let mut out = Vec::new();
    let mut cut_at = None;
    let mut pos = 0;
    while pos + 1 < toks.len() {
        if toks[pos].1 != Tok::Open('{') || toks[pos + 1].1 != Tok::Open('[') {
            pos += 1;
            continue;
        }
        let start = pos;
        let line = toks[pos].0;
        match parse_term(toks, &mut pos) {
            Parsed::Done(t) => match sample(&t, line) {
                Some(s) => out.push(s),
                None => pos = start + 1,
            },
            Parsed::Cut(_) => {
                cut_at = Some(line);
                break;
            }
            Parsed::Bad(_) => pos = start + 1,
        }
    }
    (out, cut_at)
}

/// Says why a text holds no recon node_stats sample.
pub fn sniff(text: &str) -> Result<(), String> {
    if !text.contains("process_count") && !text.contains("bytes_in") {
        return Err(
            "no recon node_stats sample ('{[{process_count,N},…],[{bytes_in,N},…]}') found".into(),
        );
    }
    let (toks, _) = tokenize(text);
    if samples(&toks).0.is_empty() {
        return Err("no recon node_stats sample: a pair of lists, [{process_count,N},{run_queue,N},…] then [{bytes_in,N},{bytes_out,N},…]".into());
    }
    Ok(())
}

/// recon's interval (its second argument, milliseconds) from the last call before `line`.
fn interval_before(prompts: &[Prompt], line: usize) -> Option<f64> {
    let p = prompts.iter().rev().find(|p| p.line < line)?;
    let i = p.input.find("node_stats")?;
    let args = p.input[i..].split_once('(')?.1.split(')').next()?;
    let ms: u64 = args
        .split(',')
        .nth(1)?
        .trim()
        .replace('_', "")
        .parse()
        .ok()?;
    (ms > 0).then_some(ms as f64 / 1000.0)
}

/// The metric name and unit of an absolute.
fn absolute_metric(key: &str) -> (String, Unit) {
    match key {
        "process_count" | "run_queue" | "error_logger_queue_len" => {
            (format!("erlang_{key}"), Unit::Count)
        }
        k if k.starts_with("memory_") => (
            format!("erlang_{}_bytes", sanitize_metric_name(k)),
            Unit::Bytes,
        ),
        k => (format!("erlang_{}", sanitize_metric_name(k)), Unit::Count),
    }
}

/// The metric name and unit of an increment, as a rate or per sample.
fn increment_metric(key: &str, rate: bool) -> (String, Unit) {
    let base = match key {
        "bytes_in" => "erlang_io_in_bytes".to_string(),
        "bytes_out" => "erlang_io_out_bytes".to_string(),
        "gc_count" => "erlang_gc".to_string(),
        k => format!("erlang_{}", sanitize_metric_name(k)),
    };
    let bytes = key.starts_with("bytes_");
    match (rate, bytes) {
        (true, true) => (format!("{base}_per_s"), Unit::BytesPerSecond),
        (true, false) => (format!("{base}_per_s"), Unit::PerSecond),
        (false, true) => (format!("{base}_per_sample"), Unit::Bytes),
        (false, false) => (format!("{base}_per_sample"), Unit::Count),
    }
}

/// Imports recon node_stats output.
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let (toks, prompts) = tokenize(text);
    let (samples, cut_at) = samples(&toks);
    let mut warnings = Vec::new();
    if let Some(line) = cut_at {
        warnings.push(format!(
            "line {line}: the sample starting here is cut short and was skipped"
        ));
    }
    if samples.is_empty() {
        return Err(error(
            opts,
            cut_at.unwrap_or_else(|| line_count(text)),
            None,
            "a recon node_stats sample: {[{process_count,N},{run_queue,N},…],[{bytes_in,N},{bytes_out,N},…]}",
            if cut_at.is_some() { "a sample cut short" } else { "none" },
        ));
    }
    let fallback = opts.interval_s.filter(|i| *i > 0.0 && i.is_finite());
    let intervals: Vec<Option<f64>> = samples
        .iter()
        .map(|s| interval_before(&prompts, s.line).or(fallback))
        .collect();
    let timed = intervals.iter().all(Option::is_some);
    let mut run = new_run(NAME, text, opts);
    run.series.interval_s = if timed {
        intervals[0].unwrap_or(0.0)
    } else {
        0.0
    };
    let mut t = 0.0;
    let mut ignored: Vec<String> = Vec::new();
    for (k, (s, interval)) in samples.iter().zip(&intervals).enumerate() {
        t = match (timed, interval) {
            (true, Some(i)) => t + i,
            _ => k as f64,
        };
        let row = run.series.push_row(t);
        for (key, v) in &s.absolutes {
            match v.num() {
                Some(x) => {
                    let (name, unit) = absolute_metric(key);
                    run.series.set_at(row, &MetricId::new(name), unit, x);
                }
                None => ignored.push(key.clone()),
            }
        }
        for (key, v) in &s.increments {
            if key == "scheduler_usage" {
                let Term::List(items) = v else {
                    ignored.push(key.clone());
                    continue;
                };
                let (mut sum, mut n) = (0.0, 0usize);
                for item in items {
                    let Term::Tuple(p) = item else { continue };
                    let (Some(id), Some(ratio)) =
                        (p.first().and_then(Term::int), p.get(1).and_then(Term::num))
                    else {
                        continue;
                    };
                    let m = MetricId::new(ERLANG_SCHEDULER_UTIL_PCT)
                        .with(LABEL_SCHEDULER, id.to_string());
                    run.series.set_at(row, &m, Unit::Percent, 100.0 * ratio);
                    sum += 100.0 * ratio;
                    n += 1;
                }
                if n > 0 {
                    run.series.set_at(
                        row,
                        &MetricId::new(ERLANG_SCHEDULER_UTIL_PCT),
                        Unit::Percent,
                        sum / n as f64,
                    );
                }
                continue;
            }
            let Some(x) = v.num() else {
                ignored.push(key.clone());
                continue;
            };
            let (name, unit) = increment_metric(key, timed);
            let value = match (timed, interval) {
                (true, Some(i)) => x / i,
                _ => x,
            };
            run.series.set_at(row, &MetricId::new(name), unit, value);
        }
    }
    ignored.sort();
    ignored.dedup();
    if !ignored.is_empty() {
        warnings.push(format!(
            "entries without a number were skipped: {}",
            ignored.join(", ")
        ));
    }
    run.notes.push(format!(
        "recon node_stats: {}; run_queue is the processes ready to run over all run queues; bytes_in/bytes_out count every port (sockets and files alike), not only the network",
        plural(samples.len(), "sample")
    ));
    run.notes.push(if timed {
        "interval from recon's second argument at the prompt (milliseconds) or --interval; increments are rates over it".into()
    } else {
        "the interval is unknown (no node_stats call with a literal interval before the samples, no --interval): increments are kept per sample (_per_sample), rows are numbered from 0, and interval_s is 0".into()
    });
    Ok(finish(run, warnings, opts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_from_calls() {
        let (_, prompts) = tokenize("1> recon:node_stats_print(3, 1_000).\n{[],[]}\n");
        assert_eq!(interval_before(&prompts, 2), Some(1.0));
        let (_, prompts) = tokenize("iex(2)> :recon.node_stats_list(5, 500)\n");
        assert_eq!(interval_before(&prompts, 2), Some(0.5));
        let (_, prompts) = tokenize("1> recon:node_stats_list(5, I).\n");
        assert_eq!(interval_before(&prompts, 2), None);
        let (_, prompts) = tokenize("1> recon:scheduler_usage(1000).\n");
        assert_eq!(interval_before(&prompts, 2), None);
    }

    #[test]
    fn names() {
        assert_eq!(absolute_metric("run_queue").0, "erlang_run_queue");
        assert_eq!(
            absolute_metric("memory_bin"),
            ("erlang_memory_bin_bytes".into(), Unit::Bytes)
        );
        assert_eq!(
            increment_metric("bytes_in", true),
            ("erlang_io_in_bytes_per_s".into(), Unit::BytesPerSecond)
        );
        assert_eq!(
            increment_metric("gc_count", false),
            ("erlang_gc_per_sample".into(), Unit::Count)
        );
    }
}
