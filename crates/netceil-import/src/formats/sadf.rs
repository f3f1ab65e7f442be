//! sysstat's `sadf -d` output: semicolon-separated records, one header per activity.
//!
//! ```text
//! # hostname;interval;timestamp;CPU;%user;%nice;%system;%iowait;%steal;%idle
//! host;1;2026-11-21 23:59:31 UTC;-1;95.50;0.00;4.00;0.00;0.50;0.00
//! ```
//!
//! Timestamps are UTC (`YYYY-MM-DD HH:MM:SS UTC`; without `UTC` under `sadf -T`, local) or
//! seconds since the epoch (`sadf -U`), and each record carries its interval. Columns map as
//! in sar's text reports (the same code does it); `CPU` `-1` is the machine-wide row. The same
//! checks mark what cannot be true (a CPU twice at one time, shares that do not add up, a
//! record earlier than the one before in its activity) and leave offline CPUs missing; sadf
//! states no CPU count, so rows are not counted against one.

use std::collections::HashMap;

use super::common::{
    error, file, given_interval, last_nonblank_line, new_run, numbered_lines, parse_iso_datetime,
    parse_number, shorten, Cell,
};
use super::plausible::time_backwards;
use super::sar::SysstatCollector;
use crate::{ImportError, ImportOptions, Imported};

/// The format's name.
pub const NAME: &str = "sadf";

const HEADER_START: &str = "# hostname;interval;timestamp";

/// Why the text is not `sadf -d` output.
pub fn sniff(text: &str) -> Result<(), String> {
    match numbered_lines(text).find(|(_, l)| !l.trim().is_empty()) {
        Some((_, l)) if l.trim_start().starts_with(HEADER_START) => Ok(()),
        Some((n, l)) => Err(format!(
            "not sadf -d output: line {n} '{}', expected a header like '# hostname;interval;timestamp;CPU;%user;…'",
            shorten(l, 50)
        )),
        None => Err("not sadf -d output: the text is empty".into()),
    }
}

/// A record's time: seconds since the epoch, and whether it was UTC (or an epoch count).
fn parse_stamp(s: &str) -> Option<(f64, bool)> {
    if let Some(v) = parse_number(s) {
        return Some((v, true));
    }
    parse_iso_datetime(s)
}

/// `sadf -d -I ALL` heads its per-CPU values with one `CPU*` column: the first value is the
/// total, then one per CPU. For a record with more fields than its header, the section of
/// the columns it has.
fn per_cpu_section(
    c: &mut SysstatCollector,
    header_cols: &[String],
    fields: usize,
) -> Option<usize> {
    if fields > header_cols.len() + 3 && header_cols.last().is_some_and(|c| c == "CPU*") {
        let mut cols: Vec<String> = header_cols[..header_cols.len() - 1].to_vec();
        cols.push("all".into());
        let cpus = fields - 3 - cols.len();
        cols.extend((0..cpus).map(|i| format!("CPU{i}")));
        let refs: Vec<&str> = cols.iter().map(String::as_str).collect();
        return Some(c.section(&refs));
    }
    None
}

/// What is wrong with a record: the column, what was expected, what was found instead.
type Problem = (usize, String, String);

/// A record's timestamp, and what is wrong with it when it has not `want` fields or no
/// readable time.
fn check_record(fields: &[&str], want: usize, t: &str) -> (Option<(f64, bool)>, Option<Problem>) {
    let problem = if fields.len() != want {
        Some((
            fields.len().min(want) + 1,
            format!("{want} fields as in the header"),
            format!("{} fields: {t}", fields.len()),
        ))
    } else {
        None
    };
    let stamp = fields.get(2).and_then(|f| parse_stamp(f));
    let problem = problem.or_else(|| match stamp {
        None => Some((
            3,
            "a timestamp 'YYYY-MM-DD HH:MM:SS UTC' or seconds since the epoch".to_string(),
            fields.get(2).copied().unwrap_or("").to_string(),
        )),
        Some(_) => None,
    });
    (stamp, problem)
}

/// Imports `sadf -d` output.
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let mut run = new_run(NAME, text, opts);
    run.meta.host.os = Some("Linux".into());
    let mut warnings = Vec::new();
    let file = file(opts);
    let last_line = last_nonblank_line(text);
    let mut c = SysstatCollector::new("sar");
    let mut section: Option<usize> = None;
    let mut start: Option<f64> = None;
    let mut zoned = true;
    let mut interval: Option<f64> = None;
    let mut fields: Vec<&str> = Vec::with_capacity(32);
    let mut header_cols: Vec<String> = Vec::new();
    let mut cells: Vec<Cell> = Vec::with_capacity(32);
    // Each section's last record: its time, the time as printed, and its line.
    let mut last: HashMap<usize, (f64, String, usize)> = HashMap::new();

    for (n, line) in numbered_lines(text) {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(cols) = t.strip_prefix(HEADER_START) {
            let cols: Vec<&str> = cols.split(';').skip(1).map(str::trim).collect();
            if cols.is_empty() {
                return Err(error(
                    opts,
                    n,
                    Some(4),
                    "column names after '# hostname;interval;timestamp'",
                    t,
                ));
            }
            section = Some(c.section(&cols));
            header_cols = cols.iter().map(|s| (*s).to_string()).collect();
            continue;
        }
        if t.starts_with('#') {
            continue;
        }
        fields.clear();
        fields.extend(t.split(';'));
        let Some(mut s) = section else {
            return Err(error(
                opts,
                n,
                None,
                "a header '# hostname;interval;timestamp;…' before the records",
                t,
            ));
        };
        if let Some(per_cpu) = per_cpu_section(&mut c, &header_cols, fields.len()) {
            s = per_cpu;
        }
        if fields.len() >= 4 && fields[3].starts_with("LINUX-RESTART") {
            c.notes
                .push(format!("line {n}: the machine restarted here"));
            continue;
        }
        let want = c.columns(s) + 3;
        let (stamp, problem) = check_record(&fields, want, t);
        if let Some((col, expected, found)) = problem {
            if n == last_line {
                warnings.push(format!(
                    "{file}: line {n}: ignored a truncated last line (expected {expected})"
                ));
                continue;
            }
            if c.free_text(s) && col != 3 {
                warnings.push(format!("{file}: line {n}: skipped (expected {expected})"));
                continue;
            }
            return Err(error(opts, n, Some(col), expected, &found));
        }
        let Some((ts, z)) = stamp else { continue };
        zoned &= z;
        let step = parse_number(fields[1]).filter(|v| *v > 0.0);
        if interval.is_none() {
            interval = step;
        }
        let origin = *start.get_or_insert(ts - step.unwrap_or(0.0));
        if let Some((before, printed, line)) = last.get(&s) {
            if ts < *before {
                time_backwards(&mut c.checks, n, fields[2], *line, printed, false);
            }
        }
        last.insert(s, (ts, fields[2].to_string(), n));
        let row = c.row(ts - origin);
        cells.clear();
        cells.extend(fields[3..].iter().map(|&text| Cell {
            text: text.trim(),
            num: None,
        }));
        if !c.observe(s, ts - origin, n, &cells) {
            continue; // an offline CPU: its values stay missing
        }
        if let Err((col, expected, found)) = c.put(s, row, &cells) {
            if n == last_line {
                warnings.push(format!(
                    "{file}: line {n}: ignored a truncated last line (expected {expected})"
                ));
                continue;
            }
            return Err(error(opts, n, Some(col + 3), expected, &found));
        }
        if run.meta.host.hostname.is_none() && !fields[0].is_empty() {
            run.meta.host.hostname = Some(fields[0].to_string());
        }
    }
    if section.is_none() {
        return Err(error(
            opts,
            1,
            None,
            "a header '# hostname;interval;timestamp;…'",
            text.lines().next().unwrap_or(""),
        ));
    }
    match start {
        Some(s) if zoned => run.meta.started_unix_s = s,
        Some(_) => c.notes.push(
            "sadf timestamps are local time (sadf -T); the run's start time is left unset".into(),
        ),
        None => warnings.push(format!("{file}: no records under the headers")),
    }
    // sadf states no CPU count: the blocks are checked for repeats only.
    c.check_blocks(None);
    let (mut series, notes, checks) = c.finish(interval.or(given_interval(opts)).unwrap_or(1.0));
    if let Some(i) = interval {
        series.interval_s = i;
    }
    run.series = series;
    run.notes.extend(notes);
    checks.finish(&mut run, &mut warnings, &format!("{file}: "));
    run.notes.extend(warnings.iter().cloned());
    Ok(Imported {
        run,
        warnings,
        clock: None,
    })
}
