//! `vmstat` logs from Linux (procps-ng 3.3 and 4.x, and busybox, which prints the same table).
//!
//! The table is read by its column header, so every layout works: with or without `st` and
//! `gu`, `-w` wide, `-a` (`inact`/`active` instead of `buff`/`cache`), `-t` timestamps (used as
//! the row times), repeated headers. Unknown columns become `vmstat_<name>` metrics.
//!
//! Two things the table itself does not say:
//! - **The first data line is averages since boot** (unless vmstat ran with `-y`). The rule:
//!   it is skipped with a warning, because averaging a since-boot line into a run distorts
//!   every figure, while dropping one real sample of a `-y` log costs little. If the log
//!   shows the command (`$ vmstat -y 1`), that decides; [`import_with`] lets a caller say.
//! - **The memory unit** (`-S k|K|m|M`, default KiB). Read from the command line if the log
//!   shows it, otherwise KiB, with a warning when the values look too small for KiB.
//!
//! procps's `us` includes nice time and `sy` includes hard and soft interrupt time; they are
//! stored as `cpu_user_pct` and `cpu_system_pct` with a note saying so.
//!
//! Marked as impossible (`run.meta.implausible`, see `formats/plausible.rs`): a row whose
//! `us sy id wa st` (with or without `gu`) add up outside 85–115 (each is rounded on its own),
//! or one share above 100; a `-t` or collector time earlier than the one before (a local clock
//! set back about an hour is only warned about: daylight saving time).

use netceil_model::{names, MetricId, Unit};

use std::borrow::Cow;

use super::builder::{SeriesBuilder, MAX_ROWS};
use super::common::{
    command_args, error, field_count_problem, file, finish_table, given_interval,
    is_vmstat_column_header, new_run, parse_clock, parse_iso_date, parse_number,
    sanitize_metric_name, scan_cells, sniff_header_pair, truncated_last_row_or_error, Cell,
    RowProblem,
};
use super::feed::Feed;
use super::plausible::{check_shares, time_backwards, Checks, VMSTAT_SHARES};
use super::stamp::{unprefixed, Stripper};
use crate::{ImportError, ImportOptions, Imported, LogLines};

/// The format's name.
pub const NAME: &str = "vmstat-linux";

/// What to do with the first data line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FirstLine {
    /// Skip it as since-boot averages unless the log shows `vmstat -y`.
    #[default]
    Auto,
    /// It is since-boot averages: skip it.
    SinceBoot,
    /// It is a real sample (`vmstat -y`): keep it.
    Sample,
}

/// Facts about a Linux vmstat log that only the person who took it knows.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct VmstatLinuxOptions {
    /// Whether the first data line is since-boot averages.
    pub first_line: FirstLine,
    /// Bytes per memory unit (`-S M` → 1048576); `None` reads it from the log or assumes KiB.
    pub memory_unit_bytes: Option<f64>,
}

/// Why the text is not a Linux vmstat log.
pub fn sniff(text: &str) -> Result<(), String> {
    let (text, _) = unprefixed(text, is_group_line);
    sniff_header_pair(&text, is_group_line, is_column_line).map_err(|(n, found)| {
        format!(
            "not a Linux vmstat log: line {n} '{found}', expected a header like 'procs -----------memory---------- ---swap--' followed by ' r  b   swpd   free …'"
        )
    })
}

fn is_group_line(t: &str) -> bool {
    (t.starts_with("procs") || t.starts_with("--procs--"))
        && t.contains("memory")
        && t.contains("cpu")
}

fn is_column_line(t: &str) -> bool {
    let toks: Vec<&str> = t.split_ascii_whitespace().collect();
    toks.len() > 4
        && toks[0] == "r"
        && toks[1] == "b"
        && toks.contains(&"free")
        && toks.contains(&"id")
}

/// Imports a Linux vmstat log with the defaults of [`VmstatLinuxOptions`].
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    import_with(text, opts, &VmstatLinuxOptions::default())
}

/// From `vmstat` arguments: the delay (first bare number), `-y`, and the `-S` unit in bytes.
pub(crate) struct CommandFacts {
    pub delay_s: Option<f64>,
    pub no_first: bool,
    pub unit_bytes: Option<f64>,
    pub unit_text: Option<String>,
}

pub(crate) fn command_facts(args: &[&str]) -> CommandFacts {
    let mut facts = CommandFacts {
        delay_s: None,
        no_first: false,
        unit_bytes: None,
        unit_text: None,
    };
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        let unit = if a == "-S" || a == "--unit" || a == "--units" {
            i += 1;
            args.get(i).copied()
        } else if let Some(u) = a
            .strip_prefix("--unit=")
            .or_else(|| a.strip_prefix("--units="))
        {
            Some(u)
        } else if a.starts_with("-S") && a.len() > 2 {
            Some(&a[2..])
        } else {
            None
        };
        if let Some(u) = unit {
            facts.unit_bytes = match u {
                "k" => Some(1000.0),
                "K" => Some(1024.0),
                "m" => Some(1e6),
                "M" => Some(1_048_576.0),
                _ => None,
            };
            facts.unit_text = Some(u.to_string());
        } else if a == "--no-first"
            || (a.starts_with('-') && !a.starts_with("--") && a[1..].contains('y'))
        {
            facts.no_first = true;
        } else if facts.delay_s.is_none() && !a.starts_with('-') {
            facts.delay_s = parse_number(a).filter(|d| *d > 0.0);
        }
        i += 1;
    }
    facts
}

/// The columns of one header: metric index and the factor to its unit.
struct Layout {
    cols: Vec<(usize, f64)>,
    /// The CPU share columns (`us sy id wa st gu`): their positions and names.
    shares: Vec<(usize, &'static str)>,
    timestamps: bool,
    zoned: bool,
    line: usize,
}

/// Imports a Linux vmstat log.
pub fn import_with(
    text: &str,
    opts: &ImportOptions,
    vopts: &VmstatLinuxOptions,
) -> Result<Imported, ImportError> {
    import_feed(&mut Feed::text(text), opts, vopts, MAX_ROWS)
}

/// [`import_with`] keeping at most `max_rows` rows (see `formats/builder.rs`), for tests.
#[cfg(test)]
pub(crate) fn import_keeping(
    text: &str,
    opts: &ImportOptions,
    max_rows: usize,
) -> Result<Imported, ImportError> {
    import_feed(
        &mut Feed::text(text),
        opts,
        &VmstatLinuxOptions::default(),
        max_rows,
    )
}

/// Imports a Linux vmstat log read line by line from `reader` (after
/// [`crate::formats::terminal_text`]'s cleaning, line by line), holding one line of it at a
/// time: the same Run as [`import_with`] on the whole text.
pub fn import_reader(
    reader: impl std::io::Read,
    opts: &ImportOptions,
    vopts: &VmstatLinuxOptions,
) -> Result<Imported, ImportError> {
    import_lines(&mut LogLines::new(reader, file(opts)), opts, vopts)
}

/// [`import_reader`] from lines the caller reads (and may ask, after, how much it held).
pub fn import_lines(
    lines: &mut LogLines<impl std::io::Read>,
    opts: &ImportOptions,
    vopts: &VmstatLinuxOptions,
) -> Result<Imported, ImportError> {
    import_feed(&mut Feed::stream(lines), opts, vopts, MAX_ROWS)
}

/// A row whose time went back from the one before, said once the log is known to have a time
/// on every row: the line, whether the time came from vmstat -t, the two times as printed,
/// the line before and how far back.
pub(crate) struct Backwards {
    pub(crate) line: usize,
    local: bool,
    pub(crate) text: String,
    pub(crate) before_line: usize,
    pub(crate) before_text: String,
    by_s: f64,
}

/// The last row with a time: its line as read and as stripped of a collector's prefix.
struct LastStamp<'a> {
    line: usize,
    original: Cow<'a, str>,
    stripped: std::ops::Range<usize>,
    stamp: f64,
}

/// Row times in log order, and where they went back, kept as the rows are read: only the last
/// row's line is held.
#[derive(Default)]
pub(crate) struct StampOrder<'a> {
    last: Option<LastStamp<'a>>,
    pub(crate) backwards: Vec<Backwards>,
}

impl<'a> StampOrder<'a> {
    /// A row with a time: its line as read, the part of it without a collector's prefix
    /// (see [`range_in`]), its time, and whether it came from vmstat -t.
    pub(crate) fn row(
        &mut self,
        n: usize,
        line: Cow<'a, str>,
        kept: std::ops::Range<usize>,
        stamp: f64,
        local: bool,
    ) {
        if let Some(prev) = self.last.as_ref().filter(|p| stamp < p.stamp) {
            self.backwards.push(Backwards {
                line: n,
                local,
                text: stamp_text_of(&line, &line[kept.clone()]),
                before_line: prev.line,
                before_text: stamp_text_of(&prev.original, &prev.original[prev.stripped.clone()]),
                by_s: prev.stamp - stamp,
            });
        }
        self.last = Some(LastStamp {
            line: n,
            original: line,
            stripped: kept,
            stamp,
        });
    }
}

/// Where `part` (a slice of `line`) lies in it.
pub(crate) fn range_in(line: &str, part: &str) -> std::ops::Range<usize> {
    let start = (part.as_ptr() as usize).saturating_sub(line.as_ptr() as usize);
    let start = start.min(line.len());
    start..(start + part.len()).min(line.len())
}

/// What a Linux vmstat import has gathered so far.
struct State {
    b: SeriesBuilder,
    layout: Option<Layout>,
    group_has_ts: bool,
    since_boot_pending: bool,
    headers_seen: usize,
    /// Every stamp so far came with a zone (UTC) or a dated zoned prefix.
    all_zoned: bool,
    backwards: Vec<Backwards>,
    checks: Checks,
    memory_metrics: Vec<usize>,
    warnings: Vec<String>,
}

/// The head of a vmstat log: the prefix a collector put before each line (looked for in the
/// first 40 non-blank lines), the line of the first header (`is_group_line`), and the lines
/// read so far without their prefixes (for the command line above the header).
pub(crate) fn read_head<R: std::io::Read>(
    feed: &mut Feed<'_, R>,
    is_group_line: fn(&str) -> bool,
    no_header: impl FnOnce(&Feed<'_, R>) -> ImportError,
) -> Result<(Option<Stripper>, usize, String), ImportError> {
    // The head: the 40 non-blank lines in which a collector's prefix is looked for.
    let mut nonblank = 0;
    feed.find_ahead(|l| {
        nonblank += usize::from(!l.trim().is_empty());
        nonblank >= 40
    })?;
    let prefix = Stripper::find(feed.ahead().map(|(_, l)| l), is_group_line);
    let first_header = {
        let mut probe = prefix.clone();
        let mut found = None;
        for (n, l) in feed.ahead() {
            let kept = probe.as_mut().map_or(l, |p| p.strip(l).0);
            if is_group_line(kept.trim()) {
                found = Some(n);
                break;
            }
        }
        match found {
            Some(n) => n,
            None => {
                let mut probe = prefix.clone();
                feed.find_ahead(|l| {
                    let kept = probe.as_mut().map_or(l, |p| p.strip(l).0);
                    is_group_line(kept.trim())
                })?
                .ok_or_else(|| no_header(feed))?
            }
        }
    };
    let head: String = {
        let mut probe = prefix.clone();
        feed.ahead()
            .map(|(_, l)| probe.as_mut().map_or(l, |p| p.strip(l).0).to_string() + "\n")
            .collect()
    };
    Ok((prefix, first_header, head))
}

fn import_feed<R: std::io::Read>(
    feed: &mut Feed<'_, R>,
    opts: &ImportOptions,
    vopts: &VmstatLinuxOptions,
    max_rows: usize,
) -> Result<Imported, ImportError> {
    let mut run = new_run(NAME, "", opts);
    run.meta.host.os = Some("Linux".into());
    let file = file(opts);

    let (mut prefix, first_header, head) = read_head(feed, is_group_line, |f| no_header(f, opts))?;
    let facts = command_args(&head, first_header).map(|a| command_facts(&a));
    let (unit_bytes, unit_known, skip_first) = memory_unit_and_first_line(vopts, facts.as_ref());

    let mut st = State {
        b: SeriesBuilder::with_max_rows(max_rows),
        layout: None,
        group_has_ts: false,
        since_boot_pending: false,
        headers_seen: 0,
        all_zoned: true,
        backwards: Vec::new(),
        checks: Checks::new(),
        memory_metrics: Vec::new(),
        warnings: Vec::new(),
    };
    let mut values: Vec<f64> = Vec::with_capacity(24);
    st.b.reserve_rows(feed.rows_hint());
    let mut order = StampOrder::default();
    let absolute_prefix = |p: &Option<Stripper>| p.as_ref().is_some_and(|p| p.what().1);

    while let Some((n, line)) = feed.next_line()? {
        let (kept, prefix_time) = match prefix.as_mut() {
            Some(p) => p.strip(&line),
            None => (line.as_ref(), None),
        };
        let t = kept.trim();
        if t.is_empty() {
            continue;
        }
        if is_group_line(t) {
            st.group_has_ts = t.contains("timestamp");
            continue;
        }
        if is_vmstat_column_header(t) {
            let l = make_layout(
                t,
                n,
                st.group_has_ts,
                unit_bytes,
                &mut st.b,
                &mut st.memory_metrics,
            );
            st.headers_seen += 1;
            if st.headers_seen == 1 {
                st.since_boot_pending = skip_first;
            }
            st.layout = Some(l);
            continue;
        }
        let Some(lay) = st.layout.as_ref() else {
            if n > first_header {
                return Err(error(
                    opts,
                    n,
                    None,
                    "the column header ' r  b   swpd   free …' after the 'procs' line",
                    t,
                ));
            }
            continue; // preamble before the header: a prompt, a command, a title
        };
        let mut cells: Vec<Cell> = Vec::with_capacity(24);
        let stamp = match read_row(t, lay, &mut cells, &mut values) {
            Ok(stamp) => stamp,
            Err(problem) => {
                let last_line = if feed.rest_blank()? { n } else { 0 };
                truncated_last_row_or_error(opts, n, last_line, problem, &mut st.warnings)?;
                break;
            }
        };
        if st.since_boot_pending {
            st.since_boot_pending = false;
            st.warnings.push(format!(
                "{file}: line {n}: skipped the first data line as vmstat's averages since boot; if the log was taken with `vmstat -y` (no such line), one real sample was dropped"
            ));
            continue;
        }
        let stamped = match (stamp, prefix_time) {
            (Some(s), _) => {
                st.all_zoned &= lay.zoned;
                Some((s, !lay.zoned))
            }
            (None, Some(s)) => {
                st.all_zoned &= absolute_prefix(&prefix);
                Some((s, false))
            }
            _ => None,
        };
        // The row's time is its number until the interval is known (see `finish_table`).
        let ordinal = (st.b.log_rows() + 1) as f64;
        let row = st.b.push_row_stamped(ordinal, stamped.map(|(s, _)| s));
        check_row_shares(&mut st.checks, n, lay, &values);
        for (&(m, scale), v) in lay.cols.iter().zip(values.iter()) {
            st.b.set(m, row, v * scale);
        }
        if let Some((s, local)) = stamped {
            let kept = range_in(&line, kept);
            order.row(n, line, kept, s, local);
        }
    }
    if st.headers_seen == 0 {
        return Err(error(
            opts,
            first_header,
            None,
            "the column header ' r  b   swpd   free …' on the line after this one",
            "the log ends",
        ));
    }
    run.run_id = feed.run_id()?;
    st.backwards = order.backwards;
    finish_import(run, st, prefix.as_ref(), facts.as_ref(), unit_known, opts)
}

/// The end of a Linux vmstat import: the interval, the row times, the notes and warnings.
fn finish_import(
    mut run: netceil_model::Run,
    mut st: State,
    prefix: Option<&Stripper>,
    facts: Option<&CommandFacts>,
    unit_known: bool,
    opts: &ImportOptions,
) -> Result<Imported, ImportError> {
    let file = file(opts);
    let stamps = st.b.stamps();
    let stamped = stamps.is_some();
    let interval = interval_of(
        stamped.then(|| st.b.stamp_step()),
        facts,
        opts,
        &mut st.warnings,
    );
    let mut clock = None;
    let row_times = if stamped {
        for w in &st.backwards {
            // A local clock set back an hour (daylight saving time ends) is no damage.
            if w.local && (3000.0..=3600.0).contains(&w.by_s) {
                st.warnings.push(format!("{file}: line {}: the row timestamps go back by about an hour (a clock change?); rows are kept in log order", w.line));
                continue;
            }
            time_backwards(
                &mut st.checks,
                w.line,
                &w.text,
                w.before_line,
                &w.before_text,
                false,
            );
        }
        let (stamps, first) = stamps.expect("stamped");
        let start = first - interval;
        if st.all_zoned {
            run.meta.started_unix_s = start;
        } else {
            run.notes.push("the row timestamps name no time zone (or a zone other than UTC); the run's start time is left unset".into());
            clock = Some(crate::Clock::Local {
                s: start,
                dated: true,
            });
        }
        Some(stamps.iter().map(|s| s - start).collect())
    } else {
        None
    };

    if let Some(p) = prefix {
        run.notes.push(p.note(stamped));
    }
    if !unit_known {
        st.warnings
            .extend(memory_unit_warning(&st.b, &st.memory_metrics, file));
    }
    run.notes.push(
        "vmstat's us includes nice time and sy includes hard and soft interrupt time (stored as cpu_user_pct and cpu_system_pct)".into(),
    );
    st.checks
        .finish(&mut run, &mut st.warnings, &format!("{file}: "));
    let mut imported = finish_table(run, st.b, interval, row_times, st.warnings, opts);
    imported.clock = clock;
    Ok(imported)
}

/// The error for a log with no `procs ---memory---` header line (within the look-ahead of a
/// stream): at its first line.
fn no_header<R: std::io::Read>(feed: &Feed<'_, R>, opts: &ImportOptions) -> ImportError {
    error(
        opts,
        1,
        None,
        "a Linux vmstat header 'procs -----------memory---------- …'",
        feed.ahead().next().map_or("", |(_, l)| l),
    )
}

/// The interval: measured from the row timestamps (`stamps`, when every row has one: their
/// median step, if there are two), else
/// the command line, else the person, else 1 s. A command line and an option that disagree
/// are said.
fn interval_of(
    stamps: Option<Option<f64>>,
    facts: Option<&CommandFacts>,
    opts: &ImportOptions,
    warnings: &mut Vec<String>,
) -> f64 {
    let interval = stamps
        .flatten()
        .or(facts.and_then(|f| f.delay_s))
        .or(given_interval(opts))
        .unwrap_or(1.0);
    if let (Some(f), Some(user)) = (facts.and_then(|f| f.delay_s), given_interval(opts)) {
        if (f - user).abs() > 1e-9 && stamps.is_none() {
            let file = file(opts);
            warnings.push(format!("{file}: the log's command line says an interval of {f} s, the option says {user} s; used {f} s"));
        }
    }
    interval
}

/// The memory unit in bytes, whether the log or the options said it (else KiB is assumed),
/// and whether the first data line is to be skipped as averages since boot.
fn memory_unit_and_first_line(
    vopts: &VmstatLinuxOptions,
    facts: Option<&CommandFacts>,
) -> (f64, bool, bool) {
    let unit_bytes = vopts
        .memory_unit_bytes
        .or_else(|| facts.and_then(|f| f.unit_bytes))
        .unwrap_or(1024.0);
    let unit_known =
        vopts.memory_unit_bytes.is_some() || facts.is_some_and(|f| f.unit_bytes.is_some());
    let skip_first = match vopts.first_line {
        FirstLine::SinceBoot => true,
        FirstLine::Sample => false,
        FirstLine::Auto => !facts.is_some_and(|f| f.no_first),
    };
    (unit_bytes, unit_known, skip_first)
}

/// Reads one data row under `lay` into `values` (each column's number, in order), with its
/// `vmstat -t` timestamp when the layout has one; or what is wrong with it.
fn read_row<'t>(
    t: &'t str,
    lay: &Layout,
    cells: &mut Vec<Cell<'t>>,
    values: &mut Vec<f64>,
) -> Result<Option<f64>, RowProblem> {
    let extra = if lay.timestamps { 2 } else { 0 };
    let want = lay.cols.len() + extra;
    scan_cells(t, cells);
    let count = cells.len();
    values.clear();
    let mut bad: Option<(usize, &str)> = None;
    for (i, cell) in cells.iter().take(lay.cols.len()).enumerate() {
        match cell.num.or_else(|| parse_number(cell.text)) {
            Some(v) => values.push(v),
            None => {
                if bad.is_none() {
                    bad = Some((i + 1, cell.text));
                }
            }
        }
    }
    let date = cells.get(lay.cols.len()).map(|c| c.text);
    let clock = cells.get(lay.cols.len() + 1).map(|c| c.text);
    let stamp = if lay.timestamps {
        match (date.and_then(parse_iso_date), clock.and_then(parse_clock)) {
            (Some(d), Some(c)) => Some(d as f64 * 86_400.0 + c),
            _ => None,
        }
    } else {
        None
    };
    let problem = field_count_problem(count, want, lay.line, t).or_else(|| {
        if let Some((column, tok)) = bad {
            Some(RowProblem {
                column,
                expected: "a number".to_string(),
                found: tok.to_string(),
            })
        } else if lay.timestamps && stamp.is_none() {
            Some(RowProblem {
                column: want - 1,
                expected: "a timestamp 'YYYY-MM-DD HH:MM:SS' at the end of the line".to_string(),
                found: t.to_string(),
            })
        } else {
            None
        }
    });
    match problem {
        Some(p) => Err(p),
        None => Ok(stamp),
    }
}

/// Checks that a row's CPU shares add up.
fn check_row_shares(checks: &mut Checks, n: usize, lay: &Layout, values: &[f64]) {
    // At most six share columns: kept on the stack, this runs for every row.
    let mut buf = [("", 0.0); 6];
    let mut k = 0;
    for &(i, name) in lay.shares.iter().take(buf.len()) {
        if let Some(&v) = values.get(i) {
            buf[k] = (name, v);
            k += 1;
        }
    }
    let shares = &buf[..k];
    // procps 4's `gu` may or may not be inside `us`: the row adds up either way.
    check_shares(
        checks,
        n,
        &|| "the CPUs".into(),
        shares,
        &["gu"],
        VMSTAT_SHARES,
    );
}

/// The warning for memory columns read as KiB that would total under 64 MiB (the log was
/// perhaps taken with `-S M`).
fn memory_unit_warning(b: &SeriesBuilder, memory_metrics: &[usize], file: &str) -> Option<String> {
    let max = memory_metrics
        .iter()
        .flat_map(|&m| b.values(m).iter().flatten())
        .fold(0.0f64, |a, &v| a.max(v));
    (max > 0.0 && max < 64.0 * 1_048_576.0).then(|| format!(
        "{file}: memory columns read as KiB (vmstat's default), but they would total under 64 MiB; if the log was taken with `-S M`, put the command (e.g. `$ vmstat -S M 1`) on the log's first line and import it again"
    ))
}

/// A row's time as the log prints it, for messages, from its line as read (`original`) and
/// without a collector's prefix: the prefix, else vmstat -t's date and time at its end.
fn stamp_text_of(original: &str, stripped: &str) -> String {
    let (with, without) = (original.trim(), stripped.trim());
    if with != without {
        if let Some(prefix) = with.strip_suffix(without) {
            return prefix.trim().to_string();
        }
    }
    let words: Vec<&str> = without.split_ascii_whitespace().collect();
    match words.as_slice() {
        [.., date, clock] => format!("{date} {clock}"),
        _ => without.to_string(),
    }
}

fn make_layout(
    t: &str,
    line: usize,
    group_has_ts: bool,
    unit_bytes: f64,
    b: &mut SeriesBuilder,
    memory_metrics: &mut Vec<usize>,
) -> Layout {
    let mut toks: Vec<&str> = t.split_ascii_whitespace().collect();
    // With -t the header ends in the time zone's name (`UTC`, `CET`) over the date and time.
    let mut zoned = false;
    if group_has_ts {
        if let Some(zone) = toks.pop() {
            zoned = matches!(zone, "UTC" | "GMT" | "Z");
        }
    }
    let shares = toks
        .iter()
        .enumerate()
        .filter_map(|(i, name)| {
            let name = ["us", "sy", "id", "wa", "st", "gu"]
                .into_iter()
                .find(|s| s == name)?;
            Some((i, name))
        })
        .collect();
    let cols = toks
        .iter()
        .map(|&name| {
            let (metric, unit, scale) = match name {
                "r" => (names::PROCS_RUNNING.to_string(), Unit::Count, 1.0),
                "b" => (names::PROCS_BLOCKED.to_string(), Unit::Count, 1.0),
                "swpd" => ("vmstat_swap_used_bytes".into(), Unit::Bytes, unit_bytes),
                "free" => ("vmstat_free_bytes".into(), Unit::Bytes, unit_bytes),
                "buff" => ("vmstat_buffer_bytes".into(), Unit::Bytes, unit_bytes),
                "cache" => ("vmstat_cache_bytes".into(), Unit::Bytes, unit_bytes),
                "inact" => ("vmstat_inactive_bytes".into(), Unit::Bytes, unit_bytes),
                "active" => ("vmstat_active_bytes".into(), Unit::Bytes, unit_bytes),
                "si" => (
                    "vmstat_swap_in_bytes_per_s".into(),
                    Unit::BytesPerSecond,
                    unit_bytes,
                ),
                "so" => (
                    "vmstat_swap_out_bytes_per_s".into(),
                    Unit::BytesPerSecond,
                    unit_bytes,
                ),
                "bi" => ("vmstat_blocks_in_per_s".into(), Unit::PerSecond, 1.0),
                "bo" => ("vmstat_blocks_out_per_s".into(), Unit::PerSecond, 1.0),
                "in" => (names::INTR_PER_S.to_string(), Unit::PerSecond, 1.0),
                "cs" => (names::CS_PER_S.to_string(), Unit::PerSecond, 1.0),
                "us" => (names::CPU_USER_PCT.to_string(), Unit::Percent, 1.0),
                "sy" => (names::CPU_SYSTEM_PCT.to_string(), Unit::Percent, 1.0),
                "id" => (names::CPU_IDLE_PCT.to_string(), Unit::Percent, 1.0),
                "wa" => (names::CPU_IOWAIT_PCT.to_string(), Unit::Percent, 1.0),
                "st" => (names::CPU_STEAL_PCT.to_string(), Unit::Percent, 1.0),
                "gu" => ("vmstat_cpu_guest_pct".into(), Unit::Percent, 1.0),
                other => (
                    format!("vmstat_{}", sanitize_metric_name(other)),
                    Unit::Count,
                    1.0,
                ),
            };
            let m = b.metric(MetricId::new(metric), unit);
            if unit == Unit::Bytes && !memory_metrics.contains(&m) {
                memory_metrics.push(m);
            }
            (m, scale)
        })
        .collect::<Vec<_>>();
    Layout {
        cols,
        shares,
        timestamps: group_has_ts,
        zoned,
        line,
    }
}
