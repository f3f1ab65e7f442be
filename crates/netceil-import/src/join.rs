//! Several logs of the same minutes on one machine, as one Run (`netceil analyze --join`).
//!
//! An investigation rarely comes as one log: `mpstat -P ALL 1` beside an Erlang
//! `statistics(scheduler_wall_time)` dump, `vmstat 1` beside a lock profile, `sar -n DEV`
//! beside iperf3 JSON. Each is imported on its own (by its reader), then [`join`] puts them on
//! one timeline so that the analyzer reads, in one run, what no single log shows (OS CPU
//! beside the schedulers' real work).
//!
//! The rules, each said in the joined run's notes where it applied:
//! - **Clock times.** A log whose start is known on a clock ([`Clock`], or
//!   `run.meta.started_unix_s`) is placed by it. UTC clocks compare with UTC clocks, and local
//!   clocks (sysstat, `vmstat -t` without a zone) with local clocks; the two kinds cannot be
//!   compared without the machine's time zone, so each kind's earliest log is taken to start at
//!   the same moment. A log with time-indexed rows but no clock is taken to start with the
//!   earliest of the others.
//! - **The window.** The joined run covers the overlap of the logs with rows; logs that do not
//!   overlap at all are refused ([`JoinError::NoOverlap`]), naming both and their ranges. The
//!   notes say how much of each log the overlap used.
//! - **The timeline.** The base is the log with the finest interval among those with clock
//!   times (else among all with rows); ties go to the log with more per-CPU (labelled) metrics.
//!   Its rows inside the window are the joined rows. Every other log's metric gets, in each
//!   joined row, the mean of its rows that overlap that row weighted by how long they overlap:
//!   the builder's merge of rows when it coarsens a long log ([`crate::formats::builder`]), so
//!   a rate (counters are kept as rates) stays the rate over the joined row and a gauge its mean.
//! - **Snapshots without time.** A log whose rows have no duration (an Erlang wall-time pair
//!   without `--interval`) or a lock profile's table covers the whole window: its `k` rows are
//!   spread evenly over it, so one snapshot pair gives its value to every joined row.
//! - **Name collisions.** When two logs give the same metric (same name and labels), the one
//!   from the log taken first in the order above (finer interval, then more per-CPU metrics)
//!   is kept and the other is named in the notes; values are never summed.
//! - **Host facts.** CPU counts must agree ([`JoinError::CpusDisagree`]); the first log naming
//!   a host name, OS, kernel wins, and a differing host name is noted; NICs are united by name.
//! - **Locks, results.** Lock tables are listed together (not summed: each row names its
//!   profile in the notes); the first log with workload results (iperf3) gives them, and any
//!   other log's results are noted and left out.

use netceil_model::{Metric, MissingValue, Run, RunSource, Series};

use crate::formats::builder::mean;
use crate::formats::common::{days_from_civil, fnv1a64_words};
use crate::Imported;

/// When a log's series starts (its `t = 0`), on a clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Clock {
    /// Seconds since the Unix epoch.
    Utc(f64),
    /// A local wall-clock time with no zone: seconds since 1970-01-01 00:00 of the local
    /// calendar, or, when `dated` is false (no date known), seconds of the day.
    Local { s: f64, dated: bool },
}

/// Why logs cannot be joined.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JoinError {
    #[error("--join needs two or more logs; got {0}")]
    TooFew(usize),
    #[error("{a} ({a_range}) and {b} ({b_range}) do not overlap in time: they cannot be logs of the same minutes; join logs taken together, or analyze them apart")]
    NoOverlap {
        a: String,
        a_range: String,
        b: String,
        b_range: String,
    },
    #[error("{a} says the machine has {a_cpus} CPUs and {b} says {b_cpus}: they are not logs of one machine (or one is wrong); analyze them apart")]
    CpusDisagree {
        a: String,
        a_cpus: u32,
        b: String,
        b_cpus: u32,
    },
}

/// Which clocks can be compared with which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Utc,
    LocalDated,
    LocalDay,
}

impl Kind {
    fn words(self) -> &'static str {
        match self {
            Kind::Utc => "UTC",
            Kind::LocalDated => "local time without a zone",
            Kind::LocalDay => "local time of day (no date)",
        }
    }
}

/// One log as the join sees it.
struct Part {
    file: String,
    format: String,
    clock: Option<(Kind, f64)>,
    /// Each row's interval `(start, end)` on the log's own time (its series' `t_s`), when its
    /// rows have a duration.
    rows: Option<Vec<(f64, f64)>>,
    /// Where its `t = 0` is on the joined timeline (before the window is cut).
    offset: f64,
    run: Run,
}

impl Part {
    fn span(&self) -> Option<(f64, f64)> {
        let rows = self.rows.as_ref()?;
        Some((rows.first()?.0 + self.offset, rows.last()?.1 + self.offset))
    }

    fn labelled(&self) -> usize {
        self.run
            .series
            .metrics
            .iter()
            .filter(|m| !m.id.labels.is_empty())
            .count()
    }

    fn range_words(&self) -> String {
        let Some((a, b)) = self
            .rows
            .as_ref()
            .and_then(|r| Some((r.first()?.0, r.last()?.1)))
        else {
            return "no rows".into();
        };
        match self.clock {
            Some((kind, c)) => format!(
                "{} to {} {}",
                clock_words(kind, c + a),
                clock_words(kind, c + b),
                match kind {
                    Kind::Utc => "UTC",
                    _ => "local",
                }
            ),
            None => format!("{} s from its start, no clock times", secs(b - a)),
        }
    }
}

/// The rows' intervals of a series whose rows have a duration.
fn row_intervals(s: &Series) -> Option<Vec<(f64, f64)>> {
    if s.t_s.is_empty()
        || s.interval_s.is_nan()
        || s.interval_s <= 0.0
        || s.t_s.iter().any(|t| !t.is_finite())
    {
        return None;
    }
    let mut out = Vec::with_capacity(s.t_s.len());
    for (i, &t) in s.t_s.iter().enumerate() {
        let start = match i {
            0 => t - s.interval_s,
            _ => s.t_s[i - 1],
        };
        if t <= start || start.is_nan() {
            return None;
        }
        out.push((start, t));
    }
    Some(out)
}

/// Seconds as short as they print exactly (`40`, `0.5`).
fn secs(s: f64) -> String {
    format!("{}", (s * 1000.0).round() / 1000.0)
}

/// A clock time in words: `2026-11-18 09:14:00`, or `09:14:00` without a date.
fn clock_words(kind: Kind, s: f64) -> String {
    let day = (s / 86_400.0).floor();
    let tod = (s - day * 86_400.0).round() as i64;
    let hms = format!("{:02}:{:02}:{:02}", tod / 3600, tod % 3600 / 60, tod % 60);
    if kind == Kind::LocalDay {
        return hms;
    }
    let (y, m, d) = civil_from_days(day as i64);
    format!("{y:04}-{m:02}-{d:02} {hms}")
}

/// The date of a day since the epoch (the inverse of `days_from_civil`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    debug_assert_eq!(days_from_civil(y, m, d), z - 719_468);
    (y, m, d)
}

/// Several imported logs of the same minutes on one machine as one Run, by the rules of the
/// module's documentation. The logs keep the order given except where a rule says otherwise.
pub fn join(logs: Vec<Imported>) -> Result<Run, JoinError> {
    if logs.len() < 2 {
        return Err(JoinError::TooFew(logs.len()));
    }
    let mut parts: Vec<Part> = logs.into_iter().map(part).collect();
    check_cpus(&parts)?;
    let mut notes = Vec::new();
    place(&mut parts, &mut notes);
    let (from, to) = window(&parts)?;

    // The order metrics are taken in: the base first.
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|&a, &b| {
        let (pa, pb) = (&parts[a], &parts[b]);
        let key = |p: &Part| (p.rows.is_none(), p.clock.is_none() && p.rows.is_some());
        key(pa)
            .cmp(&key(pb))
            .then(
                pa.run
                    .series
                    .interval_s
                    .total_cmp(&pb.run.series.interval_s),
            )
            .then(pb.labelled().cmp(&pa.labelled()))
    });
    let base = order[0];
    let inside = |(a, b): (f64, f64)| a >= -1e-3 && b <= to - from + 1e-3;
    // The base's rows inside the window (their indices, and their intervals there).
    let (base_keep, base_rows): (Vec<usize>, Vec<(f64, f64)>) = match &parts[base].rows {
        Some(rows) => rows
            .iter()
            .map(|(a, b)| (a + parts[base].offset - from, b + parts[base].offset - from))
            .enumerate()
            .filter(|(_, r)| inside(*r))
            .unzip(),
        // No log has rows with a duration: one row for the snapshots.
        None => (vec![0], vec![(0.0, to - from)]),
    };
    if base_rows.is_empty() {
        let other = order.get(1).copied().unwrap_or(base);
        return Err(no_overlap(&parts[base], &parts[other]));
    }
    let mut series = Series::new(parts[base].run.series.interval_s);
    series.t_s = match parts[base].rows {
        Some(_) => base_rows.iter().map(|r| r.1).collect(),
        None => parts[base].run.series.t_s.iter().take(1).copied().collect(),
    };
    notes.push(format!(
        "one timeline: the {} rows of {} ({} s each: {}); the other logs' values are carried onto them as means of their rows that overlap each row, weighted by the time they overlap",
        base_rows.len(),
        parts[base].file,
        secs(parts[base].run.series.interval_s),
        if parts[base].clock.is_some() {
            "the finest interval among the logs with clock times"
        } else {
            "the finest interval; no log has clock times"
        }
    ));

    let mut taken = std::collections::HashSet::new();
    for &i in &order {
        let p = &parts[i];
        let rows: Vec<(f64, f64)> = match &p.rows {
            Some(rows) => rows
                .iter()
                .map(|(a, b)| (a + p.offset - from, b + p.offset - from))
                .collect(),
            None => {
                let k = p.run.series.len();
                let len = (to - from) / k.max(1) as f64;
                if k > 0 && i != base {
                    notes.push(format!(
                        "{}: its {} no time of its own: taken to cover the joined window of {} s evenly, so each joined row gets the value of the snapshot pair it falls in",
                        p.file,
                        if k == 1 { "one row (a pair of snapshots) has".to_string() } else { format!("{k} rows (consecutive snapshot pairs) have") },
                        secs(to - from),
                    ));
                }
                (0..k)
                    .map(|j| (j as f64 * len, (j + 1) as f64 * len))
                    .collect()
            }
        };
        let mut dropped = Vec::new();
        for m in &p.run.series.metrics {
            if taken.contains(&m.id) {
                dropped.push(m.id.to_string());
                continue;
            }
            let values = if i == base && p.rows.is_some() {
                base_keep
                    .iter()
                    .map(|&k| m.values.get(k).copied().flatten())
                    .collect()
            } else {
                carry(&rows, &m.values, &base_rows)
            };
            if values.iter().all(Option::is_none) {
                continue;
            }
            taken.insert(m.id.clone());
            series.metrics.push(Metric {
                id: m.id.clone(),
                unit: m.unit,
                values,
            });
            series.missing.extend(
                p.run
                    .series
                    .missing
                    .iter()
                    .filter(|n| n.metric == m.id.name || n.metric == m.id.to_string())
                    .map(|n| MissingValue {
                        from_row: 0,
                        ..n.clone()
                    }),
            );
        }
        if !dropped.is_empty() {
            let kept_from = |id: &str| {
                order
                    .iter()
                    .take_while(|&&o| o != i)
                    .find(|&&o| {
                        parts[o]
                            .run
                            .series
                            .metrics
                            .iter()
                            .any(|m| m.id.to_string() == id)
                    })
                    .map_or("another log", |&o| parts[o].file.as_str())
            };
            notes.push(format!(
                "{}: {} also given by {} (a finer interval, or per-CPU detail, comes first): kept from there, this log's {} not used (never summed)",
                p.file,
                dropped.join(", "),
                kept_from(&dropped[0]),
                if dropped.len() == 1 { "copy is" } else { "copies are" }
            ));
        }
    }
    series.missing.dedup();
    Ok(assemble(parts, series, base, (from, to), notes))
}

/// The part of a log the join works with.
fn part(imported: Imported) -> Part {
    let Imported { run, clock, .. } = imported;
    let (format, file) = match &run.source {
        RunSource::Imported { format, file } => (format.clone(), file.clone()),
        _ => ("run".into(), run.run_id.clone()),
    };
    let clock = match clock {
        Some(Clock::Utc(s)) => Some((Kind::Utc, s)),
        Some(Clock::Local { s, dated: true }) => Some((Kind::LocalDated, s)),
        Some(Clock::Local { s, dated: false }) => Some((Kind::LocalDay, s)),
        None if run.meta.started_unix_s > 0.0 => Some((Kind::Utc, run.meta.started_unix_s)),
        None => None,
    };
    let rows = row_intervals(&run.series);
    Part {
        file,
        format,
        clock: clock.filter(|_| rows.is_some()),
        rows,
        offset: 0.0,
        run,
    }
}

fn check_cpus(parts: &[Part]) -> Result<(), JoinError> {
    let mut first: Option<(&Part, u32)> = None;
    for p in parts {
        let Some(c) = p.run.meta.host.cpus.filter(|c| *c > 0) else {
            continue;
        };
        match first {
            None => first = Some((p, c)),
            Some((f, fc)) if fc != c => {
                return Err(JoinError::CpusDisagree {
                    a: f.file.clone(),
                    a_cpus: fc,
                    b: p.file.clone(),
                    b_cpus: c,
                })
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Sets each log's offset on the joined timeline (see the module's rules).
fn place(parts: &mut [Part], notes: &mut Vec<String>) {
    let kinds: Vec<Kind> = [Kind::Utc, Kind::LocalDated, Kind::LocalDay]
        .into_iter()
        .filter(|k| parts.iter().any(|p| p.clock.is_some_and(|c| c.0 == *k)))
        .collect();
    for &k in &kinds {
        let origin = parts
            .iter()
            .filter_map(|p| {
                p.clock
                    .filter(|c| c.0 == k)
                    .map(|c| c.1 + p.rows.as_ref().map_or(0.0, |r| r[0].0))
            })
            .fold(f64::INFINITY, f64::min);
        for p in parts.iter_mut() {
            if let Some((pk, c)) = p.clock {
                if pk == k {
                    p.offset = c - origin;
                }
            }
        }
    }
    // Each group's earliest row starts at 0, and so does the first row of a log without one.
    for p in parts.iter_mut() {
        if let (None, Some(r)) = (p.clock, &p.rows) {
            p.offset = -r[0].0;
        }
    }
    if kinds.len() > 1 {
        let said: Vec<String> = kinds
            .iter()
            .map(|k| {
                let files: Vec<&str> = parts
                    .iter()
                    .filter(|p| p.clock.is_some_and(|c| c.0 == *k))
                    .map(|p| p.file.as_str())
                    .collect();
                format!("{} ({})", files.join(", "), k.words())
            })
            .collect();
        notes.push(format!(
            "the clocks cannot be compared without the machine's time zone: {}; the earliest log of each is taken to start at the same moment",
            said.join(" and ")
        ));
    }
    for p in parts.iter() {
        if p.clock.is_none() && p.rows.is_some() {
            notes.push(format!(
                "{}: no clock times in the log: taken to start with the earliest of the others",
                p.file
            ));
        }
    }
}

fn no_overlap(a: &Part, b: &Part) -> JoinError {
    JoinError::NoOverlap {
        a: a.file.clone(),
        a_range: a.range_words(),
        b: b.file.clone(),
        b_range: b.range_words(),
    }
}

/// The overlap of the logs with rows, on the joined timeline.
fn window(parts: &[Part]) -> Result<(f64, f64), JoinError> {
    let spans: Vec<(usize, (f64, f64))> = parts
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((i, p.span()?)))
        .collect();
    let Some(&(late, (from, _))) = spans.iter().max_by(|a, b| a.1 .0.total_cmp(&b.1 .0)) else {
        // No log has timed rows: one joined row covering the snapshots.
        return Ok((0.0, 1.0));
    };
    let &(early, (_, to)) = spans
        .iter()
        .min_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
        .expect("non-empty");
    if to - from <= 1e-3 {
        return Err(no_overlap(&parts[early], &parts[late]));
    }
    Ok((from, to))
}

/// A log's values (rows `rows` on the joined timeline) carried onto the joined rows.
fn carry(rows: &[(f64, f64)], values: &[Option<f64>], onto: &[(f64, f64)]) -> Vec<Option<f64>> {
    onto.iter()
        .map(|&(a, b)| {
            let first = rows.partition_point(|r| r.1 <= a + 1e-9);
            let mut acc: (Option<f64>, f32) = (None, 0.0);
            for (k, r) in rows.iter().enumerate().skip(first) {
                if r.0 >= b - 1e-9 {
                    break;
                }
                let w = r.1.min(b) - r.0.max(a);
                let Some(v) = values.get(k).copied().flatten() else {
                    continue;
                };
                if w > 1e-9 {
                    acc = mean(acc.0, acc.1, Some(v), w as f32);
                }
            }
            acc.0
        })
        .collect()
}

/// The joined Run around its series: meta, locks, results and notes by the module's rules.
fn assemble(
    parts: Vec<Part>,
    series: Series,
    base: usize,
    (from, to): (f64, f64),
    mut notes: Vec<String>,
) -> Run {
    let files: Vec<String> = parts.iter().map(|p| p.file.clone()).collect();
    let formats: Vec<String> = parts.iter().map(|p| p.format.clone()).collect();
    let ids: String = parts
        .iter()
        .map(|p| p.run.run_id.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let hex = format!("{:016x}", fnv1a64_words(ids.as_bytes()));
    let mut run = Run::new(
        format!("join-{}", &hex[..12]),
        RunSource::Imported {
            format: formats.join(" + "),
            file: files.join(" + "),
        },
    );
    let mut intro = vec![format!(
        "joined {} logs into one run over the {} s they share:",
        parts.len(),
        secs(to - from)
    )];
    for p in &parts {
        let used = match p.span() {
            Some((a, b)) => {
                let len = b - a;
                let kept = (b.min(to) - a.max(from)).max(0.0);
                format!(
                    "{} of its {} s used ({:.0} %)",
                    secs(kept),
                    secs(len),
                    100.0 * kept / len
                )
            }
            None if p.run.series.is_empty() => {
                "no time series (its table covers the window)".into()
            }
            None => format!(
                "{} rows without time, spread over the window",
                p.run.series.len()
            ),
        };
        intro.push(format!(
            " {} ({}, {}): {};",
            p.file,
            p.format,
            p.range_words(),
            used
        ));
    }
    notes.insert(0, intro.join(""));

    // meta: the first log's, then what the others add.
    let first = &parts[0].run.meta;
    run.meta.labels = first.labels.clone();
    run.meta.annotations = first.annotations.clone();
    run.meta.netceil_version = first.netceil_version.clone();
    run.meta.complete = parts.iter().all(|p| p.run.meta.complete);
    if let Some((Kind::Utc, c)) = parts[base].clock {
        // Joined time x is the base's own time x - offset; the run starts at the window's start.
        run.meta.started_unix_s = c - parts[base].offset + from;
    }
    let mut hostname_from: Option<(String, String)> = None;
    for p in &parts {
        let (h, m) = (&mut run.meta.host, &p.run.meta);
        match (&hostname_from, &m.host.hostname) {
            (None, Some(n)) => {
                h.hostname = Some(n.clone());
                hostname_from = Some((n.clone(), p.file.clone()));
            }
            (Some((seen, at)), Some(n)) if seen != n => notes.push(format!(
                "{} names the host {n} where {at} names it {seen}: joined as one machine, as asked",
                p.file
            )),
            _ => {}
        }
        h.os = h.os.take().or_else(|| m.host.os.clone());
        h.kernel = h.kernel.take().or_else(|| m.host.kernel.clone());
        h.cpus = h.cpus.or(m.host.cpus.filter(|c| *c > 0));
        h.sched_autogroup = h.sched_autogroup.or(m.host.sched_autogroup);
        for nic in &m.host.nics {
            if !h.nics.iter().any(|n| n.name == nic.name) {
                h.nics.push(nic.clone());
            }
        }
        let rm = &mut run.meta;
        rm.workload_cpus = rm.workload_cpus.take().or_else(|| m.workload_cpus.clone());
        rm.cpu_quota = rm.cpu_quota.take().or_else(|| m.cpu_quota.clone());
        rm.locks_window_s = rm.locks_window_s.or(m.locks_window_s);
        rm.sampler_cpu_s = rm.sampler_cpu_s.or(m.sampler_cpu_s);
        rm.sampler_cpu_pct = rm.sampler_cpu_pct.or(m.sampler_cpu_pct);
        for (k, v) in &m.labels {
            rm.labels.entry(k.clone()).or_insert_with(|| v.clone());
        }
        rm.implausible
            .extend(m.implausible.iter().map(|x| netceil_model::Implausible {
                line: x.line,
                what: format!("{}: {}", p.file, x.what),
            }));
    }

    let with_locks: Vec<&str> = parts
        .iter()
        .filter(|p| !p.run.locks.is_empty())
        .map(|p| p.file.as_str())
        .collect();
    if with_locks.len() > 1 {
        notes.push(format!(
            "the lock tables of {} are listed together, each row as its profile gave it (not summed)",
            with_locks.join(" and ")
        ));
    }
    let mut results_from: Option<String> = None;
    let mut parts_out = Vec::new();
    for p in parts {
        let Part { file, run: r, .. } = p;
        run.locks.extend(r.locks);
        if r.results.is_some() {
            match &results_from {
                None => {
                    run.results = r.results;
                    run.workload = r.workload.or(run.workload.take());
                    run.knees = r.knees;
                    parts_out = r.parts;
                    run.confirmations = r.confirmations;
                    results_from = Some(file.clone());
                }
                Some(from) => notes.push(format!(
                    "{file}: its workload results are left out: {from}'s are the run's (one run has one set of results)"
                )),
            }
        } else if run.workload.is_none() {
            run.workload = r.workload;
        }
        notes.extend(r.notes.into_iter().map(|n| {
            if n.starts_with(&format!("{file}:")) {
                n
            } else {
                format!("{file}: {n}")
            }
        }));
    }
    run.parts = parts_out;
    run.series = series;
    run.notes = notes;
    run
}

#[cfg(test)]
mod tests;
