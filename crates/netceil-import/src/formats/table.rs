//! Generic time-series tables: a header row, then rows of values separated by tabs,
//! semicolons, commas or runs of spaces (`"quoted, cells"` allowed). Home-made logs and
//! spreadsheets exported for a mailing-list post are mostly this.
//!
//! Rules, chosen so nothing is guessed silently:
//! - **Time**: the first column of ISO 8601 timestamps, else a numeric column named like a
//!   time (`time`, `timestamp`, `epoch`, `t_s`, `elapsed`…), else a counter column (`loop`,
//!   `iteration`, `sample`…); row times are measured from it. Without one, rows are indexed
//!   1..n at the given interval (default 1 s), and a note says so. An index counter next to a
//!   real time column is dropped as redundant.
//! - **Metrics**: every other numeric column, its name in snake_case. A name netceil knows
//!   (`cs_per_s`) keeps its unit; `%`/`_pct` is Percent; `_per_s` PerSecond; `_pps`
//!   PacketsPerSecond; `_bytes` Bytes; `_us` Microseconds (`_ns` and `_ms` are converted to
//!   µs and renamed); a `*util*` column whose values all lie in 0–1 is a fraction and becomes
//!   `<name>_ratio` (Unit::Ratio, not converted to %). Anything else is a plain count.
//! - **Counters**: a column that never decreases may be a cumulative counter. It is kept as
//!   given, under its own name, with a note; it is not turned into a rate.
//! - **Text** columns (`sbwt`, `condition`) cannot be metrics: their cells are kept as notes
//!   per row. Placeholder cells (`-`, `NA`, empty) are missing values; other non-numbers in a
//!   numeric column are missing too, with a warning.
//! - `#` lines are comments, kept as notes.

use netceil_model::{names, MetricId, Unit};

use super::builder::SeriesBuilder;
use super::common::{
    error, file, given_interval, median_step, new_run, numbered_lines, parse_iso_datetime,
    parse_number, sanitize_metric_name, shorten,
};
use crate::{ImportError, ImportOptions, Imported};

/// The format's name.
pub const NAME: &str = "table";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sep {
    Tab,
    Semicolon,
    Comma,
    Spaces,
}

impl Sep {
    fn describe(self) -> &'static str {
        match self {
            Sep::Tab => "tab",
            Sep::Semicolon => "semicolon",
            Sep::Comma => "comma",
            Sep::Spaces => "space",
        }
    }
}

/// Splits one line into cells; quotes protect separators (`""` is a quote inside quotes).
fn split(line: &str, sep: Sep) -> Vec<String> {
    let ch = match sep {
        Sep::Spaces => return line.split_ascii_whitespace().map(str::to_string).collect(),
        Sep::Tab => '\t',
        Sep::Semicolon => ';',
        Sep::Comma => ',',
    };
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    cur.push('"');
                    chars.next();
                } else {
                    quoted = false;
                }
            } else {
                cur.push(c);
            }
        } else if c == '"' && cur.trim().is_empty() {
            cur.clear();
            quoted = true;
        } else if c == ch {
            out.push(cur.trim().to_string());
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    out.push(cur.trim().to_string());
    out
}

/// The lines that are not comments or blank, with their numbers.
fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    numbered_lines(text).filter_map(|(n, l)| {
        let l = if n == 1 {
            l.trim_start_matches('\u{feff}')
        } else {
            l
        };
        let t = l.trim();
        (!t.is_empty() && !t.starts_with('#')).then_some((n, l))
    })
}

/// The first separator (tab, semicolon, comma, spaces) that gives the header two or more
/// cells and the first row as many. Later rows are held to it, so a broken row is an error
/// rather than a reason to read the whole table another way.
fn detect_sep(text: &str) -> Option<Sep> {
    let mut lines = content_lines(text).map(|(_, l)| l);
    let header = lines.next()?;
    let first = lines.next()?;
    [Sep::Tab, Sep::Semicolon, Sep::Comma, Sep::Spaces]
        .into_iter()
        .find(|&sep| {
            let width = split(header, sep).len();
            width >= 2 && split(first, sep).len() == width
        })
}

/// A cell's number; where the separator is not a comma, `31,5` is a decimal comma.
fn cell_number(cell: &str, sep: Sep) -> Option<f64> {
    parse_number(cell).or_else(|| {
        if sep == Sep::Comma {
            return None;
        }
        let (int, frac) = cell.split_once(',')?;
        if frac.is_empty() || frac.contains([',', '.']) {
            return None;
        }
        parse_number(&format!("{int}.{frac}"))
    })
}

fn is_placeholder(cell: &str) -> bool {
    matches!(
        cell,
        "" | "-" | "--" | "?" | "NA" | "N/A" | "n/a" | "na" | "nan" | "NaN" | "null" | "None"
    )
}

/// Why the text is not a table.
pub fn sniff(text: &str) -> Result<(), String> {
    let first = content_lines(text).next();
    let Some((n, header_line)) = first else {
        return Err("not a table: the text has no lines other than comments".into());
    };
    let expected = "expected a header row of column names separated by tabs, semicolons, commas or spaces, then rows with the same number of cells";
    let Some(sep) = detect_sep(text) else {
        return Err(format!(
            "not a table: line {n} '{}', {expected}",
            shorten(header_line, 50)
        ));
    };
    let header = split(header_line, sep);
    if header
        .iter()
        .all(|h| parse_number(h).is_some() || h.is_empty())
    {
        return Err(format!(
            "not a table: line {n} '{}' has no column names, {expected}",
            shorten(header_line, 50)
        ));
    }
    let numeric = content_lines(text)
        .nth(1)
        .is_some_and(|(_, l)| split(l, sep).iter().any(|c| parse_number(c).is_some()));
    if !numeric {
        return Err(format!(
            "not a table: no number in the first row under the header on line {n}, {expected}"
        ));
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum TimeKind {
    /// ISO 8601 timestamps; `true` when they carry a zone.
    Iso(bool),
    /// Numeric seconds (epoch or relative).
    Seconds,
    /// A loop counter: rows, not seconds.
    Counter,
}

const TIME_NAMES: &[&str] = &[
    "time",
    "timestamp",
    "date",
    "datetime",
    "ts",
    "t",
    "t_s",
    "time_s",
    "epoch",
    "unix_time",
    "seconds",
    "elapsed",
    "elapsed_s",
    "uptime",
];
const COUNTER_NAMES: &[&str] = &[
    "loop",
    "iteration",
    "iter",
    "sample",
    "step",
    "index",
    "idx",
    "i",
    "n",
    "row",
    "seq",
    "round",
];

/// Imports a table.
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let mut run = new_run(NAME, text, opts);
    let mut warnings = Vec::new();
    for (_, l) in numbered_lines(text) {
        if let Some(c) = l.trim().strip_prefix('#') {
            if !c.trim().is_empty() {
                run.notes.push(c.trim().to_string());
            }
        }
    }
    let table = read_table(text, opts, &mut warnings)?;
    let columns = Columns::classify(&table);
    let (mut time, counter, dropped_counter) = columns.time_and_counter(&table);
    let (interval, t_s) = row_times(&table, opts, &mut time, &mut run, &mut warnings);
    if let Some(c) = dropped_counter {
        run.notes.push(format!(
            "column '{}' counts rows next to the time column; not kept as a metric",
            table.header[c]
        ));
    }

    // The rows are added before their values, and the text is bounded: every row is kept.
    let mut b = SeriesBuilder::unbounded();
    for &t in &t_s {
        b.push_row(t);
    }
    let time_col = time.map(|(c, _)| c);
    let not_data = |c: usize| Some(c) == time_col || Some(c) == dropped_counter;
    let mut text_cols = Vec::new();
    for c in (0..table.width()).filter(|&c| !not_data(c)) {
        if columns.numeric[c] {
            add_metric(
                &table,
                c,
                counter,
                &mut b,
                &mut run.notes,
                &mut warnings,
                opts,
            );
        } else {
            text_cols.push(c);
        }
    }
    text_cell_notes(&table, &text_cols, &t_s, &mut run.notes);
    if b.rows() > 0 && (0..table.width()).all(|c| !columns.numeric[c] || not_data(c)) {
        warnings.push(format!(
            "{}: no numeric column besides the time; the series is empty",
            file(opts)
        ));
    }
    run.series = b.finish(interval);
    run.notes.extend(warnings.iter().cloned());
    Ok(Imported {
        run,
        warnings,
        clock: None,
    })
}

/// A table's header and the rows under it.
struct Table {
    /// The column names as written.
    header: Vec<String>,
    /// The column names as metric names, made unique.
    names: Vec<String>,
    sep: Sep,
    /// Each row with its line number; every row has the header's width.
    rows: Vec<(usize, Vec<String>)>,
}

impl Table {
    fn width(&self) -> usize {
        self.header.len()
    }

    fn value(&self, r: &[String], c: usize) -> Option<f64> {
        cell_number(&r[c], self.sep)
    }

    /// Whether column `c` has a number in every row, each greater than the one before.
    fn increasing(&self, c: usize) -> bool {
        let v: Vec<f64> = self
            .rows
            .iter()
            .filter_map(|(_, r)| self.value(r, c))
            .collect();
        v.len() == self.rows.len() && v.windows(2).all(|w| w[1] > w[0])
    }
}

/// Finds the header and the separator and splits the rows; a short last row is dropped with
/// a warning (a log cut while it was written), any other row of the wrong width is an error.
fn read_table(
    text: &str,
    opts: &ImportOptions,
    warnings: &mut Vec<String>,
) -> Result<Table, ImportError> {
    let file = file(opts);
    let Some((header_no, header_line)) = content_lines(text).next() else {
        return Err(error(
            opts,
            1,
            None,
            "a header row of column names",
            text.lines().next().unwrap_or(""),
        ));
    };
    let sep = detect_sep(text).ok_or_else(|| {
        error(opts, header_no, None, "a header row and rows with the same number of cells, separated by tabs, semicolons, commas or spaces", header_line)
    })?;
    let header = split(header_line, sep);
    let width = header.len();
    let lines: Vec<(usize, &str)> = content_lines(text).skip(1).collect();
    let last_no = lines.last().map_or(0, |(n, _)| *n);
    let mut rows: Vec<(usize, Vec<String>)> = Vec::with_capacity(lines.len());
    for (n, l) in lines {
        let cells = split(l, sep);
        if cells.len() != width {
            let expected = format!(
                "{width} {}-separated cells as in the header on line {header_no}",
                sep.describe()
            );
            if n == last_no {
                warnings.push(format!(
                    "{file}: line {n}: ignored a truncated last row (expected {expected})"
                ));
                continue;
            }
            return Err(error(
                opts,
                n,
                Some(cells.len().min(width) + 1),
                expected,
                &format!("{} cells: {l}", cells.len()),
            ));
        }
        rows.push((n, cells));
    }
    if rows.is_empty() {
        return Err(error(
            opts,
            header_no,
            None,
            "rows of values under this header",
            "no rows",
        ));
    }
    let names = dedupe(header.iter().map(|h| sanitize_metric_name(h)).collect());
    Ok(Table {
        header,
        names,
        sep,
        rows,
    })
}

/// What each column holds.
struct Columns {
    /// Mostly numbers (placeholders aside), and no timestamps.
    numeric: Vec<bool>,
    /// Only ISO timestamps: `Some(true)` when every one carries a zone.
    iso: Vec<Option<bool>>,
}

impl Columns {
    fn classify(table: &Table) -> Columns {
        let width = table.width();
        let mut numeric = vec![false; width];
        let mut iso = vec![None; width];
        for c in 0..width {
            let cells = table
                .rows
                .iter()
                .map(|(_, r)| r[c].as_str())
                .filter(|s| !is_placeholder(s));
            let (mut nums, mut others, mut stamps, mut zoned) = (0usize, 0usize, 0usize, true);
            for cell in cells {
                if cell_number(cell, table.sep).is_some() {
                    nums += 1;
                } else if let Some((_, z)) = parse_iso_datetime(cell) {
                    stamps += 1;
                    zoned &= z;
                } else {
                    others += 1;
                }
            }
            numeric[c] = nums > 0 && others * 2 < nums && stamps == 0;
            if stamps > 0 && nums == 0 && others == 0 {
                iso[c] = Some(zoned);
            }
        }
        Columns { numeric, iso }
    }

    /// The time column and its kind; the row counter column; and the counter when it is not
    /// the time (it stands beside a real clock and is not kept as a metric).
    fn time_and_counter(
        &self,
        table: &Table,
    ) -> (Option<(usize, TimeKind)>, Option<usize>, Option<usize>) {
        let names = &table.names;
        let mut time: Option<(usize, TimeKind)> = self
            .iso
            .iter()
            .position(Option::is_some)
            .map(|c| (c, TimeKind::Iso(self.iso[c] == Some(true))));
        if time.is_none() {
            time = (0..table.width())
                .find(|&c| {
                    self.numeric[c]
                        && TIME_NAMES.contains(&names[c].as_str())
                        && table.increasing(c)
                })
                .map(|c| (c, TimeKind::Seconds));
        }
        let counter = (0..table.width()).find(|&c| {
            self.numeric[c] && COUNTER_NAMES.contains(&names[c].as_str()) && table.increasing(c)
        });
        let mut dropped_counter = None;
        match (time, counter) {
            (None, Some(c)) => time = Some((c, TimeKind::Counter)),
            (Some(_), Some(c)) => dropped_counter = Some(c),
            _ => {}
        }
        (time, counter, dropped_counter)
    }
}

/// The interval and each row's time from the time column. A time column with cells that are
/// not times is given up (`time` becomes `None`) and the rows are indexed instead, as they
/// are when there is none.
fn row_times(
    table: &Table,
    opts: &ImportOptions,
    time: &mut Option<(usize, TimeKind)>,
    run: &mut netceil_model::Run,
    warnings: &mut Vec<String>,
) -> (f64, Vec<f64>) {
    let (header, rows) = (&table.header, &table.rows);
    let times: Vec<f64> = match *time {
        Some((c, TimeKind::Iso(_))) => rows
            .iter()
            .map(|(_, r)| parse_iso_datetime(&r[c]).map_or(f64::NAN, |(t, _)| t))
            .collect(),
        Some((c, _)) => rows
            .iter()
            .map(|(_, r)| table.value(r, c).unwrap_or(f64::NAN))
            .collect(),
        None => Vec::new(),
    };
    let indexed = |interval: f64| (1..=rows.len()).map(|i| i as f64 * interval).collect();
    match *time {
        Some((c, kind)) if times.iter().all(|t| t.is_finite()) => {
            let step = median_step(&times);
            let interval = match kind {
                TimeKind::Counter => given_interval(opts).unwrap_or(1.0),
                _ => step.or(given_interval(opts)).unwrap_or(1.0),
            };
            let per_step = match kind {
                TimeKind::Counter => interval / step.unwrap_or(1.0),
                _ => 1.0,
            };
            let t0 = times[0];
            let t_s: Vec<f64> = times
                .iter()
                .map(|t| (t - t0) * per_step + interval)
                .collect();
            match kind {
                TimeKind::Iso(true) => run.meta.started_unix_s = t0 - interval,
                TimeKind::Iso(false) => run.notes.push(format!("time column '{}': timestamps without a zone; the run's start time is left unset", header[c])),
                TimeKind::Seconds if t0 > 1e8 => run.meta.started_unix_s = t0 - interval,
                TimeKind::Seconds => {}
                TimeKind::Counter => run.notes.push(format!(
                    "time column '{}' is a counter, not a clock: rows are {interval} s apart (the given interval, default 1 s)",
                    header[c]
                )),
            }
            (interval, t_s)
        }
        Some((c, _)) => {
            warnings.push(format!(
                "{}: time column '{}' has cells that are not times; rows are indexed 1..n instead",
                file(opts),
                header[c]
            ));
            *time = None;
            let interval = given_interval(opts).unwrap_or(1.0);
            (interval, indexed(interval))
        }
        None => {
            let interval = given_interval(opts).unwrap_or(1.0);
            run.notes.push(format!(
                "no time column: rows are indexed 1..{} at {interval} s",
                rows.len()
            ));
            (interval, indexed(interval))
        }
    }
}

/// Adds numeric column `c` as a metric: cells that are not numbers are kept as missing with a
/// warning, and a column that never decreases is noted as a possible cumulative counter
/// (unless it is the row counter).
fn add_metric(
    table: &Table,
    c: usize,
    counter: Option<usize>,
    b: &mut SeriesBuilder,
    notes: &mut Vec<String>,
    warnings: &mut Vec<String>,
    opts: &ImportOptions,
) {
    let (header, rows) = (&table.header, &table.rows);
    let vals: Vec<Option<f64>> = rows.iter().map(|(_, r)| table.value(r, c)).collect();
    let (name, unit, scale, note) = metric_for(&header[c], &table.names[c], &vals);
    if let Some(note) = note {
        notes.push(note);
    }
    let m = b.metric(MetricId::new(name.clone()), unit);
    let mut bad = Vec::new();
    for (row, ((line, r), v)) in rows.iter().zip(&vals).enumerate() {
        match v {
            Some(v) => b.set(m, row, v * scale),
            None if is_placeholder(&r[c]) => {}
            None => bad.push(format!("line {line} '{}'", shorten(&r[c], 30))),
        }
    }
    if !bad.is_empty() {
        warnings.push(format!(
            "{}: column '{}': {} cell(s) not a number, kept as missing: {}",
            file(opts),
            header[c],
            bad.len(),
            bad.join(", ")
        ));
    }
    let present: Vec<f64> = vals.iter().flatten().copied().collect();
    let non_decreasing =
        present.windows(2).all(|w| w[1] >= w[0]) && present.windows(2).any(|w| w[1] > w[0]);
    if present.len() >= 3
        && non_decreasing
        && !matches!(unit, Unit::Percent | Unit::Ratio)
        && Some(c) != counter
    {
        notes.push(format!(
            "column '{}' never decreases over {} rows: it may be a cumulative counter; kept as given under '{name}', not turned into a rate",
            header[c],
            present.len()
        ));
    }
}

/// Text cells cannot be metrics; they are kept readable as notes, per row (the first 50).
fn text_cell_notes(table: &Table, text_cols: &[usize], t_s: &[f64], notes: &mut Vec<String>) {
    if text_cols.is_empty() {
        return;
    }
    const MAX_ROWS: usize = 50;
    let (header, rows) = (&table.header, &table.rows);
    for (i, (_, r)) in rows.iter().enumerate().take(MAX_ROWS) {
        let cells: Vec<String> = text_cols
            .iter()
            .filter(|&&c| !r[c].is_empty())
            .map(|&c| format!("{}={}", header[c], r[c]))
            .collect();
        if !cells.is_empty() {
            notes.push(format!(
                "row {} (t={} s): {}",
                i + 1,
                t_s[i],
                cells.join(", ")
            ));
        }
    }
    if rows.len() > MAX_ROWS {
        notes.push(format!(
            "… text cells of {} more rows not repeated here",
            rows.len() - MAX_ROWS
        ));
    }
}

/// Makes column names unique: the second `x` becomes `x_2`.
fn dedupe(names: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for n in names {
        let mut candidate = n.clone();
        let mut k = 2;
        while out.contains(&candidate) {
            candidate = format!("{n}_{k}");
            k += 1;
        }
        out.push(candidate);
    }
    out
}

/// Column names that hold the machine's CPU busy share (a fraction or %), whatever else the
/// table holds.
const OS_CPU_COLUMNS: [&str; 5] = ["cpu_util", "cpu_usage", "cpu_busy", "os_cpu", "os_cpu_util"];

/// The metric name, unit, scale and an optional note for a numeric column.
fn metric_for(raw: &str, name: &str, vals: &[Option<f64>]) -> (String, Unit, f64, Option<String>) {
    if let Some(unit) = names::unit_of(name) {
        return (name.to_string(), unit, 1.0, None);
    }
    let present = || vals.iter().flatten();
    // A column that is the machine's CPU use (the OS's figure, as an Erlang VM's table gives
    // `cpu_sup:util()` beside its schedulers' own utilization) is the series' CPU busy share,
    // so every rule that sizes the CPU reads it.
    if OS_CPU_COLUMNS.contains(&name) && present().all(|v| (0.0..=100.0).contains(v)) {
        let fractions = present().all(|v| *v <= 1.0);
        let note = format!(
            "column '{raw}' taken as the machine's CPU busy share ('{}'{})",
            names::CPU_BUSY_PCT,
            if fractions {
                ", fractions 0–1 × 100"
            } else {
                ""
            }
        );
        let scale = if fractions { 100.0 } else { 1.0 };
        return (
            names::CPU_BUSY_PCT.to_string(),
            Unit::Percent,
            scale,
            Some(note),
        );
    }
    if name.contains("util")
        && !name.ends_with("_pct")
        && present().all(|v| (0.0..=1.0).contains(v))
    {
        let n = format!("{name}_ratio");
        let note = format!(
            "column '{raw}' holds fractions 0–1: kept as '{n}' (a ratio, not converted to %)"
        );
        return (n, Unit::Ratio, 1.0, Some(note));
    }
    let ends = |s: &str| name.ends_with(s);
    if raw.contains('%') || ends("_pct") || ends("_percent") {
        let n = if ends("_pct") {
            name.to_string()
        } else {
            format!("{}_pct", name.trim_end_matches("_percent"))
        };
        return (n, Unit::Percent, 1.0, None);
    }
    if ends("_ratio") || ends("_fraction") {
        return (name.to_string(), Unit::Ratio, 1.0, None);
    }
    if ends("_pps") {
        return (name.to_string(), Unit::PacketsPerSecond, 1.0, None);
    }
    if ends("_bits_per_s") {
        return (name.to_string(), Unit::BitsPerSecond, 1.0, None);
    }
    if ends("_bytes_per_s") {
        return (name.to_string(), Unit::BytesPerSecond, 1.0, None);
    }
    if ends("_per_s") {
        return (name.to_string(), Unit::PerSecond, 1.0, None);
    }
    if ends("_bytes") {
        return (name.to_string(), Unit::Bytes, 1.0, None);
    }
    if ends("_us") || ends("_usec") {
        return (name.to_string(), Unit::Microseconds, 1.0, None);
    }
    for (suffix, scale) in [("_ns", 1e-3), ("_ms", 1e3)] {
        if let Some(stem) = name.strip_suffix(suffix) {
            let n = format!("{stem}_us");
            let note = format!("column '{raw}' converted to microseconds as '{n}'");
            return (n, Unit::Microseconds, scale, Some(note));
        }
    }
    if ends("_seconds") || ends("_secs") || ends("_s") {
        return (name.to_string(), Unit::Seconds, 1.0, None);
    }
    (name.to_string(), Unit::Count, 1.0, None)
}
