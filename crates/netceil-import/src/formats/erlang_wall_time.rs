//! Erlang `statistics(scheduler_wall_time)` snapshots: per-scheduler utilization, the work a
//! VM really did, to set beside OS CPU % (which counts schedulers' busy-waiting as busy).
//!
//! Each snapshot is a list `[{SchedulerId, ActiveTime, TotalTime}, …]` as the Erlang or
//! Elixir shell prints it: possibly over several lines, between `1>`/`iex(2)>`/`>` prompts,
//! with `%` comments. Newer OTP releases list dirty CPU schedulers after the normal ones
//! (`scheduler_wall_time_all` adds dirty I/O ones); the ids are kept as printed.
//!
//! Utilization of a scheduler between two snapshots is ΔActiveTime / ΔTotalTime. It becomes one
//! series row per pair of consecutive snapshots: `erlang_scheduler_util_pct{scheduler=N}` and,
//! unlabeled, the mean over the schedulers of that row.
//!
//! Time: OTP documents the unit of ActiveTime and TotalTime as undefined (only ratios are
//! meaningful), so the time between snapshots cannot be read from them. With
//! `ImportOptions::interval_s` the rows are that far apart; without it the series has
//! `interval_s = 0` and rows at `t_s = 0` (one pair) or numbered 1, 2, … (several), and a note
//! says so.
//!
//! Marked as impossible (`run.meta.implausible`): a scheduler listed twice in one snapshot,
//! ActiveTime outside 0..TotalTime, times that go backwards between snapshots, and ΔActive
//! above ΔTotal (a utilization over 100 %).

use netceil_model::names::ERLANG_SCHEDULER_UTIL_PCT;
use netceil_model::{MetricId, Unit};

use super::common::{error, finish, line_count, new_run, plural};
use super::erlang_term::{tokenize, top_lists, Term, Tok};
use super::plausible::{Check, Checks, KeyBlocks};
use super::recon::LABEL_TYPE;
use crate::{ImportError, ImportOptions, Imported};

/// The name of this format for `--format`.
pub const NAME: &str = "erlang-wall-time";

/// Label key of a scheduler id.
pub const LABEL_SCHEDULER: &str = "scheduler";

/// `{Id, ActiveTime, TotalTime}` of one scheduler, and its kind when the tuple names it.
type Entry = (i128, i128, i128, Option<&'static str>);

/// The kind label of a scheduler type as `scheduler:sample_all()` names it.
pub(crate) fn scheduler_kind(atom: &str) -> Option<&'static str> {
    match atom {
        "normal" => Some("normal"),
        "cpu" => Some("dirty_cpu"),
        "io" => Some("dirty_io"),
        _ => None,
    }
}

fn entry(t: &Term) -> Option<Entry> {
    match t {
        Term::Tuple(v) if v.len() == 3 => Some((v[0].int()?, v[1].int()?, v[2].int()?, None)),
        // `scheduler:sample()`/`sample_all()`: `{normal|cpu|io, Id, ActiveTime, TotalTime}`.
        Term::Tuple(v) if v.len() == 4 => Some((
            v[1].int()?,
            v[2].int()?,
            v[3].int()?,
            Some(scheduler_kind(v[0].atom()?)?),
        )),
        _ => None,
    }
}

/// The entries of a wall-time list; a list cut short keeps its whole tuples.
fn wall_list(items: &[Term], cut: bool) -> Option<Vec<Entry>> {
    let mut out = Vec::with_capacity(items.len());
    for (k, t) in items.iter().enumerate() {
        match entry(t) {
            Some(e) => out.push(e),
            // The tuple the input ends in may be partial.
            None if cut && k + 1 == items.len() => {}
            None => return None,
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Says why a text holds no `statistics(scheduler_wall_time)` snapshot.
pub fn sniff(text: &str) -> Result<(), String> {
    let (toks, _) = tokenize(text);
    let lists = top_lists(&toks);
    if lists
        .iter()
        .any(|(_, items, cut)| wall_list(items, *cut).is_some())
    {
        return Ok(());
    }
    Err(match lists.first() {
        Some((line, _, _)) => format!(
            "the list at line {line} is not [{{SchedulerId, ActiveTime, TotalTime}}, …] (three integers per tuple) nor scheduler:sample_all()'s [{{normal|cpu|io, Id, ActiveTime, TotalTime}}, …]"
        ),
        None => "no Erlang list '[{SchedulerId, ActiveTime, TotalTime}, …]' found".into(),
    })
}

/// One snapshot and where it starts.
struct Snapshot {
    line: usize,
    entries: Vec<Entry>,
}

/// Imports two or more `statistics(scheduler_wall_time)` snapshots.
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let (toks, _prompts) = tokenize(text);
    let mut warnings = Vec::new();
    let snapshots = read_snapshots(&toks, &mut warnings);
    if snapshots.len() < 2 {
        return Err(too_few_snapshots(&snapshots, &toks, text, opts));
    }
    let mut checks = check_snapshots(&snapshots);
    let interval = opts.interval_s.filter(|i| *i > 0.0 && i.is_finite());
    let mut run = new_run(NAME, text, opts);
    run.series.interval_s = interval.unwrap_or(0.0);
    let pairs = snapshots.len() - 1;
    let mut delta_totals = Vec::new();
    for (k, pair) in snapshots.windows(2).enumerate() {
        let (prev, cur) = (&pair[0], &pair[1]);
        let t = match interval {
            Some(i) => i * (k + 1) as f64,
            None if pairs == 1 => 0.0,
            None => (k + 1) as f64,
        };
        let row = run.series.push_row(t);
        pair_row(
            &mut run,
            row,
            (prev, cur),
            pairs == 1,
            &mut checks,
            &mut warnings,
            &mut delta_totals,
        );
    }
    if run.series.metrics.is_empty() {
        return Err(error(
            opts,
            snapshots[1].line,
            None,
            "snapshots with the same scheduler ids and increasing times",
            "no scheduler whose times increased between snapshots",
        ));
    }
    run.notes.insert(
        0,
        format!(
            "Erlang scheduler utilization from {} of statistics(scheduler_wall_time): ΔActiveTime/ΔTotalTime per scheduler; the unlabeled value is the mean over schedulers{}",
            plural(snapshots.len(), "snapshot"),
            if snapshots.iter().any(|s| s.entries.iter().any(|e| e.3.is_some())) {
                " other than dirty I/O ones (the samples name each scheduler's type: normal, dirty_cpu, dirty_io)"
            } else {
                ". Ids above the number of normal schedulers are dirty schedulers (OTP ≥ 20)"
            }
        ),
    );
    let span = match (delta_totals.iter().min(), delta_totals.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!("{lo}"),
        (Some(lo), Some(hi)) => format!("{lo}–{hi}"),
        _ => "?".into(),
    };
    run.notes.push(match interval {
        Some(i) => format!(
            "time between snapshots: {i} s, as given (--interval); ΔTotalTime was {span} in the VM's own unit, which OTP leaves undefined"
        ),
        None => format!(
            "time between snapshots unknown: ΔTotalTime was {span} in the VM's own unit, which OTP leaves undefined; give --interval to place the rows in time (interval_s is 0 until then{})",
            if pairs > 1 { ", and rows are numbered 1, 2, …" } else { "" }
        ),
    });
    checks.finish(&mut run, &mut warnings, "");
    Ok(finish(run, warnings, opts))
}

/// The snapshots among the top-level lists; a list cut short is read up to its last whole
/// tuple, with a warning.
fn read_snapshots(toks: &[(usize, Tok)], warnings: &mut Vec<String>) -> Vec<Snapshot> {
    let mut snapshots = Vec::new();
    for (line, items, cut) in top_lists(toks) {
        match wall_list(&items, cut) {
            Some(entries) => {
                if cut {
                    warnings.push(format!(
                        "the snapshot at line {line} is cut short: {} read",
                        plural(entries.len(), "scheduler")
                    ));
                }
                snapshots.push(Snapshot { line, entries });
            }
            None if cut => warnings.push(format!(
                "line {line}: a list cut short before its first whole {{Id, Active, Total}} tuple was skipped"
            )),
            None => {}
        }
    }
    snapshots
}

/// The error for fewer than two snapshots: where the one is, or that wall time was off.
fn too_few_snapshots(
    snapshots: &[Snapshot],
    toks: &[(usize, Tok)],
    text: &str,
    opts: &ImportOptions,
) -> ImportError {
    let disabled = toks
        .iter()
        .any(|(_, t)| *t == Tok::Word("undefined".into()));
    let (line, found) = match snapshots.first() {
        Some(s) => (s.line, format!("one snapshot only (line {})", s.line)),
        None if disabled => (
            toks.iter()
                .find(|(_, t)| *t == Tok::Word("undefined".into()))
                .map_or(1, |t| t.0),
            "'undefined': scheduler wall time was off; enable it with erlang:system_flag(scheduler_wall_time, true)".into(),
        ),
        None => (line_count(text), "no snapshot".into()),
    };
    error(
        opts,
        line,
        None,
        "two statistics(scheduler_wall_time) snapshots ([{SchedulerId, ActiveTime, TotalTime}, …]) to take the difference of",
        &found,
    )
}

/// Row `row`: each scheduler's utilization between two snapshots, and their mean (dirty I/O
/// schedulers left out when the samples say which they are). Times that go back or an
/// active time above the time passed are marked; `delta_totals` gets each ΔTotalTime.
fn pair_row(
    run: &mut netceil_model::Run,
    row: usize,
    (prev, cur): (&Snapshot, &Snapshot),
    one_pair: bool,
    checks: &mut Checks,
    warnings: &mut Vec<String>,
    delta_totals: &mut Vec<i128>,
) {
    let mut sum = 0.0;
    let mut n = 0usize;
    let typed = cur.entries.iter().any(|e| e.3.is_some());
    let mut ids: Vec<&Entry> = cur.entries.iter().collect();
    ids.sort_by_key(|e| e.0);
    for &&(id, active, total, kind) in &ids {
        let mut metric =
            MetricId::new(ERLANG_SCHEDULER_UTIL_PCT).with(LABEL_SCHEDULER, id.to_string());
        if let Some(kind) = kind {
            metric = metric.with(LABEL_TYPE, kind);
        }
        let Some(&(_, a0, t0, _)) = prev.entries.iter().find(|e| e.0 == id) else {
            run.series.note_missing(
                &metric.to_string(),
                format!(
                    "scheduler {id} is not in the snapshot at line {}",
                    prev.line
                ),
            );
            continue;
        };
        let (da, dt) = (active - a0, total - t0);
        if da < 0 || dt < 0 {
            checks.mark(
                Check::Counter,
                Some(cur.line),
                format!(
                    "scheduler {id}'s times went backwards between the snapshots at lines {} and {} (ActiveTime {a0} → {active}, TotalTime {t0} → {total}): wall-time accounting was reset, or two captures are interleaved",
                    prev.line, cur.line
                ),
            );
        } else if da > dt {
            checks.mark(
                Check::Shares,
                Some(cur.line),
                format!(
                    "scheduler {id} was active for longer than the time that passed between the snapshots at lines {} and {} (ΔActive {da} > ΔTotal {dt}): a utilization above 100 %",
                    prev.line, cur.line
                ),
            );
        }
        if dt <= 0 || da < 0 || da > dt {
            run.series.note_missing(
                &metric.to_string(),
                format!(
                    "scheduler {id}: times between the snapshots at lines {} and {} do not increase (ΔActive {da}, ΔTotal {dt}): wall-time accounting was reset",
                    prev.line, cur.line
                ),
            );
            continue;
        }
        delta_totals.push(dt);
        let pct = 100.0 * da as f64 / dt as f64;
        run.series.set_at(row, &metric, Unit::Percent, pct);
        if one_pair {
            run.notes.push(format!(
                "scheduler {id}: utilization {:.3e} ({:.4} %), ΔActive {da} / ΔTotal {dt}",
                pct / 100.0,
                pct
            ));
        }
        // Dirty I/O schedulers wait on I/O by design; like scheduler:utilization's
        // total, the mean leaves them out when the sample says which they are.
        if !(typed && kind == Some("dirty_io")) {
            sum += pct;
            n += 1;
        }
    }
    for &(id, _, _, _) in &prev.entries {
        if !cur.entries.iter().any(|e| e.0 == id) {
            warnings.push(format!(
                "scheduler {id} is in the snapshot at line {} but not in the one at line {}",
                prev.line, cur.line
            ));
        }
    }
    if n > 0 {
        run.series.set_at(
            row,
            &MetricId::new(ERLANG_SCHEDULER_UTIL_PCT),
            Unit::Percent,
            sum / n as f64,
        );
    }
}

/// What each snapshot says on its own that cannot be true: a scheduler listed twice, or
/// active for longer than it existed.
fn check_snapshots(snapshots: &[Snapshot]) -> Checks {
    let mut checks = Checks::new();
    let mut blocks = KeyBlocks::new();
    for s in snapshots {
        blocks.start("scheduler", s.line);
        for &(id, active, total, kind) in &s.entries {
            // Ids are per type in scheduler:sample_all() (normal 1 and dirty_cpu 1 differ).
            let key = match kind {
                Some(k) => format!("{id} ({k})"),
                None => id.to_string(),
            };
            blocks.row(&key, s.line);
            if active > total || active < 0 {
                checks.mark(
                    Check::Shares,
                    Some(s.line),
                    format!(
                        "scheduler {key} in the snapshot at line {} has ActiveTime {active} outside 0..TotalTime {total}: active time is part of total time",
                        s.line
                    ),
                );
            }
        }
    }
    blocks.check(None, &mut checks);
    checks
}
