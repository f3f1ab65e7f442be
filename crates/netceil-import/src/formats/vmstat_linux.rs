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

use super::common::{
    command_args, error, field_count_problem, file, finish_table, given_interval,
    is_vmstat_column_header, last_nonblank_line, median_step, new_run, numbered_lines, parse_clock,
    parse_iso_date, parse_number, sanitize_metric_name, scan_cells, sniff_header_pair,
    truncated_last_row_or_error, Cell, RowProblem, SeriesBuilder,
};
use super::plausible::{check_shares, time_backwards, Checks, VMSTAT_SHARES};
use super::stamp::unprefixed;
use crate::{ImportError, ImportOptions, Imported};

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
    let mut run = new_run(NAME, text, opts);
    let original = text;
    let (text, prefixed) = unprefixed(text, is_group_line);
    let text: &str = &text;
    run.meta.host.os = Some("Linux".into());
    let mut warnings = Vec::new();
    let last_line = last_nonblank_line(text);
    let file = file(opts);

    let first_header = numbered_lines(text)
        .find(|(_, l)| is_group_line(l.trim()))
        .map(|(n, _)| n)
        .ok_or_else(|| no_header(text, opts))?;
    let facts = command_args(text, first_header).map(|a| command_facts(&a));
    let (unit_bytes, unit_known, skip_first) = memory_unit_and_first_line(vopts, facts.as_ref());

    let mut b = SeriesBuilder::new();
    let mut layout: Option<Layout> = None;
    let mut group_has_ts = false;
    let mut since_boot_pending = false;
    let mut headers_seen = 0usize;
    let mut stamps: Vec<f64> = Vec::new();
    // The line of each stamp, and whether it came from vmstat -t (else a collector's prefix).
    let mut stamp_lines: Vec<(usize, bool)> = Vec::new();
    let mut checks = Checks::new();
    let mut all_zoned = true;
    let mut memory_metrics: Vec<usize> = Vec::new();
    let mut values: Vec<f64> = Vec::with_capacity(24);
    let mut cells: Vec<Cell> = Vec::with_capacity(24);
    b.reserve_rows(text.bytes().filter(|&c| c == b'\n').count() + 1);

    for (n, line) in numbered_lines(text) {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if is_group_line(t) {
            group_has_ts = t.contains("timestamp");
            continue;
        }
        if is_vmstat_column_header(t) {
            let l = make_layout(t, n, group_has_ts, unit_bytes, &mut b, &mut memory_metrics);
            headers_seen += 1;
            if headers_seen == 1 {
                since_boot_pending = skip_first;
            }
            layout = Some(l);
            continue;
        }
        let Some(lay) = layout.as_ref() else {
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
        let stamp = match read_row(t, lay, &mut cells, &mut values) {
            Ok(stamp) => stamp,
            Err(problem) => {
                truncated_last_row_or_error(opts, n, last_line, problem, &mut warnings)?;
                break;
            }
        };
        if since_boot_pending {
            since_boot_pending = false;
            warnings.push(format!(
                "{file}: line {n}: skipped the first data line as vmstat's averages since boot; if the log was taken with `vmstat -y` (no such line), one real sample was dropped"
            ));
            continue;
        }
        let t_s = (b.rows() + 1) as f64; // placeholder, replaced below once the interval is known
        let row = b.push_row(t_s);
        if let Some(s) = stamp {
            stamps.push(s);
            stamp_lines.push((n, !lay.zoned));
            all_zoned &= lay.zoned;
        } else if let Some(s) = prefixed.as_ref().and_then(|p| p.time_at(n)) {
            stamps.push(s);
            stamp_lines.push((n, false));
            all_zoned &= prefixed.as_ref().is_some_and(|p| p.absolute);
        }
        check_row_shares(&mut checks, n, lay, &values);
        for (&(m, scale), v) in lay.cols.iter().zip(values.iter()) {
            b.set(m, row, v * scale);
        }
    }
    if headers_seen == 0 {
        return Err(error(
            opts,
            first_header,
            None,
            "the column header ' r  b   swpd   free …' on the line after this one",
            "the log ends",
        ));
    }

    let stamped = !stamps.is_empty() && stamps.len() == b.rows();
    let interval = interval_of(
        stamped.then_some(&stamps[..]),
        facts.as_ref(),
        opts,
        &mut warnings,
    );
    let row_times = if stamped {
        check_stamp_order(
            &stamps,
            &stamp_lines,
            (original, text),
            &mut checks,
            &mut warnings,
            file,
        );
        let start = stamps[0] - interval;
        if all_zoned {
            run.meta.started_unix_s = start;
        } else {
            run.notes.push("the row timestamps name no time zone (or a zone other than UTC); the run's start time is left unset".into());
        }
        Some(stamps.iter().map(|s| s - start).collect())
    } else {
        None
    };

    if let Some(p) = &prefixed {
        run.notes.push(p.note(stamped));
    }
    if !unit_known {
        warnings.extend(memory_unit_warning(&b, &memory_metrics, file));
    }
    run.notes.push(
        "vmstat's us includes nice time and sy includes hard and soft interrupt time (stored as cpu_user_pct and cpu_system_pct)".into(),
    );
    checks.finish(&mut run, &mut warnings, &format!("{file}: "));
    Ok(finish_table(run, b, interval, row_times, warnings, opts))
}

/// The error for a text with no `procs ---memory---` header line.
fn no_header(text: &str, opts: &ImportOptions) -> ImportError {
    error(
        opts,
        1,
        None,
        "a Linux vmstat header 'procs -----------memory---------- …'",
        text.lines().next().unwrap_or(""),
    )
}

/// The interval: measured from the row timestamps (`stamps`, when every row has one), else
/// the command line, else the person, else 1 s. A command line and an option that disagree
/// are said.
fn interval_of(
    stamps: Option<&[f64]>,
    facts: Option<&CommandFacts>,
    opts: &ImportOptions,
    warnings: &mut Vec<String>,
) -> f64 {
    let interval = stamps
        .and_then(median_step)
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

/// Marks row timestamps that go back (line `n`'s stamp before line `n - 1`'s), except a
/// local clock set back an hour, which is only said. `texts` is the log as given and with
/// collectors' prefixes taken off.
fn check_stamp_order(
    stamps: &[f64],
    stamp_lines: &[(usize, bool)],
    (original, text): (&str, &str),
    checks: &mut Checks,
    warnings: &mut Vec<String>,
    file: &str,
) {
    for (k, w) in stamps.windows(2).enumerate() {
        if w[1] >= w[0] {
            continue;
        }
        let ((before_line, _), (line, local)) = (stamp_lines[k], stamp_lines[k + 1]);
        // A local clock set back an hour (daylight saving time ends) is no damage.
        if local && (3000.0..=3600.0).contains(&(w[0] - w[1])) {
            warnings.push(format!("{file}: line {line}: the row timestamps go back by about an hour (a clock change?); rows are kept in log order"));
            continue;
        }
        time_backwards(
            checks,
            line,
            &stamp_text(original, text, line),
            before_line,
            &stamp_text(original, text, before_line),
            false,
        );
    }
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

/// A row's time as the log prints it, for messages: the prefix a collector put before the
/// line (`original` has it, `stripped` not), else vmstat -t's date and time at its end.
pub(crate) fn stamp_text(original: &str, stripped: &str, line: usize) -> String {
    let nth = |t: &str| {
        t.lines()
            .nth(line.wrapping_sub(1))
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let (with, without) = (nth(original), nth(stripped));
    if with != without {
        if let Some(prefix) = with.strip_suffix(without.as_str()) {
            return prefix.trim().to_string();
        }
    }
    let words: Vec<&str> = without.split_ascii_whitespace().collect();
    match words.as_slice() {
        [.., date, clock] => format!("{date} {clock}"),
        _ => without,
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
