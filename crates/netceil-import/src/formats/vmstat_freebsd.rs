//! `vmstat` logs from FreeBSD, 8.x to 14.x.
//!
//! The table is read by its column header, so the layouts differ only in data:
//! - the disk columns between `sr` and `in` vary by machine (`ad0 md0`, `ada0 cd0`, `nda0`,
//!   `pas0`…) and become `vmstat_disk_transfers_per_s{device=…}`;
//! - `w` (swapped-out runnable threads) may be absent;
//! - `-P` repeats `us sy id` per CPU (`cpu=N` labels, from the `cpuN` titles);
//! - numbers may be humanized (`-h`, the default on a terminal): `119M`, `7.3G`, `14K`.
//!   Suffixes are binary, as FreeBSD's humanize_number uses them, except on the disk columns
//!   (decimal). Humanized rates are rounded by vmstat itself.
//!
//! Memory (`avm`, `fre`) is stored in bytes. A bare number is KiB under the old header
//! (`r b w     avm     fre`, the manual's "units of 1024 bytes") and bytes under the newer
//! one (`r  b  w  avm  fre`, FreeBSD 13/14, whose raw output is byte counts).
//!
//! The first data line is averages since boot (FreeBSD has no option to omit it): it is
//! skipped with a warning. vmstat's `us` includes nice time and `sy` includes interrupt time.
//!
//! Marked as impossible (`run.meta.implausible`, see `formats/plausible.rs`): a `cpuN` title
//! given twice, `us sy id` (machine-wide or one CPU's) adding up outside 85–115 or one above
//! 100, and a collector's time earlier than the one before. A `-P` CPU whose `us sy id` are all
//! 0 counted no ticks (offline, or absent): its values are left missing, with a warning.

use netceil_model::{names, MetricId, Unit};

use super::builder::SeriesBuilder;
use super::common::{
    command_args, error, field_count_problem, file, finish_table, given_interval,
    is_vmstat_column_header, new_run, parse_number, sanitize_metric_name, scan_cells,
    sniff_header_pair, truncated_last_row_or_error, Cell, RowProblem,
};
use super::feed::Feed;
use super::plausible::{
    check_header_cpus, check_shares, is_offline, time_backwards, Checks, VMSTAT_SHARES,
};
use super::stamp::{unprefixed, Stripper};
use super::vmstat_linux::{range_in, read_head, Backwards, StampOrder};
use crate::{ImportError, ImportOptions, Imported, LogLines};

/// The format's name.
pub const NAME: &str = "vmstat-freebsd";

/// Why the text is not a FreeBSD vmstat log.
pub fn sniff(text: &str) -> Result<(), String> {
    let (text, _) = unprefixed(text, is_group_line);
    sniff_header_pair(&text, is_group_line, is_column_line).map_err(|(n, found)| {
        format!(
            "not a FreeBSD vmstat log: line {n} '{found}', expected a header like ' procs  memory  page  disks  faults  cpu' followed by ' r b w  avm  fre  flt …'"
        )
    })
}

fn is_group_line(t: &str) -> bool {
    t.starts_with("procs") && t.contains("memory") && t.contains("page") && t.contains("faults")
}

fn is_column_line(t: &str) -> bool {
    let toks: Vec<&str> = t.split_ascii_whitespace().collect();
    toks.len() > 6
        && toks[0] == "r"
        && toks[1] == "b"
        && toks.contains(&"avm")
        && toks.contains(&"fre")
        && toks.contains(&"cs")
}

/// How a column's text becomes a value.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Memory in bytes; a bare number is KiB (old layout) or bytes (new layout).
    Memory,
    /// A rate or count; humanized suffixes are binary.
    Plain,
    /// Disk transfers; humanized suffixes are decimal.
    Disk,
}

struct Layout {
    cols: Vec<(usize, Kind)>,
    /// Each `us sy id` group: the CPU it is for (`None`: all of them) and its three positions.
    cpu_groups: Vec<(Option<String>, usize)>,
    bare_memory_is_bytes: bool,
    line: usize,
}

/// Imports a FreeBSD vmstat log.
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    import_feed(&mut Feed::text(text), opts)
}

/// Imports a FreeBSD vmstat log read line by line from `reader`, holding one line of it at a
/// time: the same Run as [`import`] on the whole text.
pub fn import_reader(
    reader: impl std::io::Read,
    opts: &ImportOptions,
) -> Result<Imported, ImportError> {
    import_lines(&mut LogLines::new(reader, file(opts)), opts)
}

/// [`import_reader`] from lines the caller reads (and may ask, after, how much it held).
pub fn import_lines(
    lines: &mut LogLines<impl std::io::Read>,
    opts: &ImportOptions,
) -> Result<Imported, ImportError> {
    import_feed(&mut Feed::stream(lines), opts)
}

/// What a FreeBSD vmstat import has gathered so far.
struct State {
    b: SeriesBuilder,
    checks: Checks,
    humanized: bool,
    warnings: Vec<String>,
}

fn import_feed<R: std::io::Read>(
    feed: &mut Feed<'_, R>,
    opts: &ImportOptions,
) -> Result<Imported, ImportError> {
    let mut run = new_run(NAME, "", opts);
    run.meta.host.os = Some("FreeBSD".into());
    let file = file(opts);
    let (mut prefix, first_header, head) = read_head(feed, is_group_line, |f| {
        error(
            opts,
            1,
            None,
            "a FreeBSD vmstat header ' procs  memory  page …  faults  cpu'",
            f.ahead().next().map_or("", |(_, l)| l),
        )
    })?;
    let delay = command_delay(&head, first_header);

    let mut st = State {
        b: SeriesBuilder::new(),
        checks: Checks::new(),
        humanized: false,
        warnings: Vec::new(),
    };
    let mut titles_checked: Vec<Vec<String>> = Vec::new();
    let mut layout: Option<Layout> = None;
    let mut cpu_titles: Vec<String> = Vec::new();
    let mut headers_seen = 0usize;
    let mut since_boot_pending = false;
    let mut values: Vec<f64> = Vec::with_capacity(32);
    st.b.reserve_rows(feed.rows_hint());
    let mut order = StampOrder::default();

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
            cpu_titles = group_line_cpus(t, n, &mut titles_checked, &mut st.checks);
            continue;
        }
        if is_vmstat_column_header(t) {
            match make_layout(t, n, &cpu_titles, &mut st.b) {
                Ok(l) => layout = Some(l),
                Err(expected) => return Err(error(opts, n, None, expected, t)),
            }
            headers_seen += 1;
            if headers_seen == 1 {
                since_boot_pending = true;
            }
            continue;
        }
        let Some(lay) = layout.as_ref() else {
            if n > first_header {
                return Err(error(
                    opts,
                    n,
                    None,
                    "the column header ' r b w  avm  fre  flt …' after the 'procs' line",
                    t,
                ));
            }
            continue; // preamble: a prompt, the command, uname output
        };
        let mut cells: Vec<Cell> = Vec::with_capacity(32);
        if let Err(problem) = read_row(t, lay, &mut cells, &mut values, &mut st.humanized) {
            let last_line = if feed.rest_blank()? { n } else { 0 };
            truncated_last_row_or_error(opts, n, last_line, problem, &mut st.warnings)?;
            break;
        }
        if since_boot_pending {
            since_boot_pending = false;
            st.warnings.push(format!(
                "{file}: line {n}: skipped the first data line as vmstat's averages since boot"
            ));
            continue;
        }
        // The row's time is its number until the interval is known (see `finish_table`).
        let ordinal = (st.b.log_rows() + 1) as f64;
        let row = st.b.push_row_stamped(ordinal, prefix_time);
        let offline = check_cpu_groups(&mut st.checks, n, lay, &values);
        for (i, (&(m, _), v)) in lay.cols.iter().zip(values.iter()).enumerate() {
            if !offline.contains(&i) {
                st.b.set(m, row, *v);
            }
        }
        if let Some(s) = prefix_time {
            let kept = range_in(&line, kept);
            order.row(n, line, kept, s, false);
        }
    }
    if headers_seen == 0 {
        return Err(error(
            opts,
            first_header,
            None,
            "the column header ' r b w  avm  fre  flt …' on the line after this one",
            "the log ends",
        ));
    }
    run.run_id = feed.run_id()?;
    Ok(finish_import(
        run,
        st,
        order.backwards,
        prefix.as_ref(),
        delay,
        opts,
    ))
}

/// The end of a FreeBSD vmstat import: the interval, the row times, the notes and warnings.
fn finish_import(
    mut run: netceil_model::Run,
    mut st: State,
    backwards: Vec<Backwards>,
    prefix: Option<&Stripper>,
    delay: Option<f64>,
    opts: &ImportOptions,
) -> Imported {
    let file = file(opts);
    let stamps = st.b.stamps();
    let stamped = stamps.is_some();
    let interval = if stamped { st.b.stamp_step() } else { None }
        .or(delay)
        .or(given_interval(opts))
        .unwrap_or(1.0);
    let row_times = if stamped {
        for w in &backwards {
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
        if prefix.is_some_and(|p| p.what().1) {
            run.meta.started_unix_s = start;
        }
        Some(stamps.iter().map(|s| s - start).collect())
    } else {
        None
    };
    if let Some(p) = prefix {
        run.notes.push(p.note(stamped));
    }
    if st.humanized {
        run.notes.push("some rates were humanized by vmstat -h (e.g. 14K); they are rounded to 2 significant digits".into());
    }
    run.notes.push("FreeBSD vmstat's us includes nice time and sy includes interrupt time (stored as cpu_user_pct and cpu_system_pct)".into());
    st.checks
        .finish(&mut run, &mut st.warnings, &format!("{file}: "));
    finish_table(run, st.b, interval, row_times, st.warnings, opts)
}

/// Reads one data row under `lay` into `values`, in column order, or says what is wrong
/// with it. `humanized` is set when a rate read was humanized (`14K`), even in a bad row.
fn read_row<'t>(
    t: &'t str,
    lay: &Layout,
    cells: &mut Vec<Cell<'t>>,
    values: &mut Vec<f64>,
    humanized: &mut bool,
) -> Result<(), RowProblem> {
    values.clear();
    scan_cells(t, cells);
    let count = cells.len();
    let mut bad: Option<(usize, &str)> = None;
    for (i, (cell, &(_, kind))) in cells.iter().zip(lay.cols.iter()).enumerate() {
        let parsed = match cell.num {
            Some(v) if kind == Kind::Memory && !lay.bare_memory_is_bytes => {
                Some((v * 1024.0, false))
            }
            Some(v) => Some((v, false)),
            None => parse_value(cell.text, kind, lay.bare_memory_is_bytes),
        };
        match parsed {
            Some((v, h)) => {
                *humanized |= h && kind != Kind::Memory;
                values.push(v);
            }
            None => {
                if bad.is_none() {
                    bad = Some((i + 1, cell.text));
                }
            }
        }
    }
    let want = lay.cols.len();
    let problem = field_count_problem(count, want, lay.line, t).or_else(|| {
        bad.map(|(column, tok)| RowProblem {
            column,
            expected: "a number, optionally with a K/M/G suffix".to_string(),
            found: tok.to_string(),
        })
    });
    match problem {
        Some(p) => Err(p),
        None => Ok(()),
    }
}

/// Checks each `us sy id` group of a row; returns the positions of the groups of CPUs that
/// are offline (all three 0: it counted no ticks, or is not there), which are not kept.
fn check_cpu_groups(checks: &mut Checks, n: usize, lay: &Layout, values: &[f64]) -> Vec<usize> {
    let mut offline: Vec<usize> = Vec::new();
    for (cpu, at) in &lay.cpu_groups {
        let (Some(&us), Some(&sy), Some(&id)) =
            (values.get(*at), values.get(at + 1), values.get(at + 2))
        else {
            continue;
        };
        let shares = [("us", us), ("sy", sy), ("id", id)];
        match cpu {
            Some(cpu) if is_offline(&shares) => {
                checks.offline(cpu, n);
                offline.extend(*at..*at + 3);
            }
            Some(cpu) => check_shares(
                checks,
                n,
                &|| format!("CPU {cpu}"),
                &shares,
                &[],
                VMSTAT_SHARES,
            ),
            None => check_shares(
                checks,
                n,
                &|| "the CPUs".into(),
                &shares,
                &[],
                VMSTAT_SHARES,
            ),
        }
    }
    offline
}

/// The CPUs a group line's `cpuN` titles name; each new set of them is checked once.
fn group_line_cpus(
    t: &str,
    n: usize,
    titles_checked: &mut Vec<Vec<String>>,
    checks: &mut Checks,
) -> Vec<String> {
    let cpu_titles: Vec<String> = t
        .split_ascii_whitespace()
        .filter(|w| w.starts_with("cpu") && w.len() > 3)
        .map(|w| w[3..].to_string())
        .collect();
    if !titles_checked.contains(&cpu_titles) {
        let cpus: Vec<u32> = cpu_titles.iter().filter_map(|c| c.parse().ok()).collect();
        check_header_cpus(&cpus, n, None, checks);
        titles_checked.push(cpu_titles.clone());
    }
    cpu_titles
}

/// The delay from a `vmstat 1`, `vmstat -w 5` or `vmstat -c 10 -w 1` command line in the preamble.
fn command_delay(text: &str, before: usize) -> Option<f64> {
    let args = command_args(text, before)?;
    let mut i = 0;
    while i < args.len() {
        match args[i] {
            "-w" => {
                return args
                    .get(i + 1)
                    .and_then(|a| parse_number(a))
                    .filter(|d| *d > 0.0)
            }
            "-c" | "-n" | "-M" | "-N" | "-p" => i += 1,
            a if !a.starts_with('-') && a.starts_with(|c: char| c.is_ascii_digit()) => {
                return parse_number(a).filter(|d| *d > 0.0);
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// A number with an optional humanize suffix; returns the value and whether it had a suffix.
fn parse_value(tok: &str, kind: Kind, bare_memory_is_bytes: bool) -> Option<(f64, bool)> {
    if let Some(v) = parse_number(tok) {
        let v = if kind == Kind::Memory && !bare_memory_is_bytes {
            v * 1024.0
        } else {
            v
        };
        return Some((v, false));
    }
    let (last_at, _) = tok.char_indices().last()?;
    let (num, suffix) = tok.split_at(last_at);
    let v = parse_number(num)?;
    let power = match suffix {
        "B" if kind == Kind::Memory => 0,
        "K" | "k" => 1,
        "M" => 2,
        "G" => 3,
        "T" => 4,
        "P" => 5,
        "E" => 6,
        _ => return None,
    };
    let base: f64 = if kind == Kind::Disk { 1000.0 } else { 1024.0 };
    Some((v * base.powi(power), true))
}

fn make_layout(
    t: &str,
    line: usize,
    cpu_titles: &[String],
    b: &mut SeriesBuilder,
) -> Result<Layout, String> {
    let toks: Vec<&str> = t.split_ascii_whitespace().collect();
    let sr = toks.iter().position(|&x| x == "sr");
    let cs = toks.iter().position(|&x| x == "cs");
    let (Some(sr), Some(cs)) = (sr, cs) else {
        return Err("a column header with 'sr' (page scans) and 'cs' (context switches)".into());
    };
    let Some(fin) = toks[sr..].iter().position(|&x| x == "in").map(|i| i + sr) else {
        return Err("a column header with 'in' (interrupts) after 'sr'".into());
    };
    let cpu_cols = toks.len() - cs - 1;
    if fin >= cs || cpu_cols == 0 || cpu_cols / 3 * 3 != cpu_cols {
        return Err(
            "a column header ending in 'in sy cs' and one or more 'us sy id' groups".into(),
        );
    }
    let per_cpu = (toks.len() - cs - 1) / 3 > 1;
    let cpu_groups = (0..cpu_cols / 3)
        .map(|k| {
            let cpu = per_cpu.then(|| cpu_titles.get(k).cloned().unwrap_or_else(|| k.to_string()));
            (cpu, cs + 1 + 3 * k)
        })
        .collect();
    let mut cols = Vec::with_capacity(toks.len());
    for (i, &name) in toks.iter().enumerate() {
        let (id, unit, kind) = if i > sr && i < fin {
            (
                MetricId::new("vmstat_disk_transfers_per_s").with(names::LABEL_DEVICE, name),
                Unit::PerSecond,
                Kind::Disk,
            )
        } else if i > cs {
            let k = (i - cs - 1) / 3;
            let metric = match (i - cs - 1) % 3 {
                0 => names::CPU_USER_PCT,
                1 => names::CPU_SYSTEM_PCT,
                _ => names::CPU_IDLE_PCT,
            };
            let id = MetricId::new(metric);
            let id = if per_cpu {
                let cpu = cpu_titles.get(k).cloned().unwrap_or_else(|| k.to_string());
                id.with(names::LABEL_CPU, cpu)
            } else {
                id
            };
            (id, Unit::Percent, Kind::Plain)
        } else {
            let (metric, unit, kind) = match name {
                "r" => (names::PROCS_RUNNING.to_string(), Unit::Count, Kind::Plain),
                "b" => (names::PROCS_BLOCKED.to_string(), Unit::Count, Kind::Plain),
                "w" => ("vmstat_procs_swapped".into(), Unit::Count, Kind::Plain),
                "avm" => (
                    "vmstat_active_virtual_bytes".into(),
                    Unit::Bytes,
                    Kind::Memory,
                ),
                "fre" => ("vmstat_free_bytes".into(), Unit::Bytes, Kind::Memory),
                "flt" => (
                    "vmstat_page_faults_per_s".into(),
                    Unit::PerSecond,
                    Kind::Plain,
                ),
                "re" => (
                    "vmstat_pages_reactivated_per_s".into(),
                    Unit::PerSecond,
                    Kind::Plain,
                ),
                "pi" => ("vmstat_pages_in_per_s".into(), Unit::PerSecond, Kind::Plain),
                "po" => (
                    "vmstat_pages_out_per_s".into(),
                    Unit::PerSecond,
                    Kind::Plain,
                ),
                "fr" => (
                    "vmstat_pages_freed_per_s".into(),
                    Unit::PerSecond,
                    Kind::Plain,
                ),
                "sr" => (
                    "vmstat_pages_scanned_per_s".into(),
                    Unit::PerSecond,
                    Kind::Plain,
                ),
                "in" if i == fin => (names::INTR_PER_S.to_string(), Unit::PerSecond, Kind::Plain),
                "sy" if i == fin + 1 => ("syscalls_per_s".into(), Unit::PerSecond, Kind::Plain),
                "cs" if i == cs => (names::CS_PER_S.to_string(), Unit::PerSecond, Kind::Plain),
                other => (
                    format!("vmstat_{}", sanitize_metric_name(other)),
                    Unit::Count,
                    Kind::Plain,
                ),
            };
            (MetricId::new(metric), unit, kind)
        };
        cols.push((b.metric(id, unit), kind));
    }
    // The newer header spaces r, b and w two apart and prints raw memory in bytes.
    let bare_memory_is_bytes = t.starts_with("r  b");
    Ok(Layout {
        cols,
        cpu_groups,
        bare_memory_is_bytes,
        line,
    })
}
