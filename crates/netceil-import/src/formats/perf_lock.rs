//! `perf lock contention` text output: contended kernel locks into the Run's lock table.
//!
//! perf prints a header and one row per aggregation key (tools/perf/builtin-lock.c):
//!
//! ```text
//!  contended   total wait     max wait     avg wait         type   caller
//!
//!        802      1.26 ms     11.73 us      1.58 us     spinlock   __wake_up_common_lock+0x62
//! ```
//!
//! The numeric columns (`contended`, `total wait`, `max wait`, `min wait`, `avg wait`, in any
//! order, as `-F` selects them) are read from the header; times carry a unit (`ns`, `us`, `ms`,
//! `s`, and `m`/`h` for minutes and hours in newer perf). What follows depends on the
//! aggregation mode, and decides the [`LockStat`] name:
//!
//! | mode | key columns | `name` | `caller` |
//! |---|---|---|---|
//! | by call site (default) | `type caller` | the lock type (`spinlock`, `rwsem:R`) | the caller |
//! | `-l`/`--lock-addr` | `address symbol` | the symbol (`tasklist_lock (rwlock)`), else address and type | none |
//! | `-t`/`--threads` | `pid comm` (or `owner`) | the waiting task's comm | `pid N` |
//! | `--lock-cgroup` | `cgroup` | the cgroup | none |
//!
//! perf sees only contended acquisitions, so `count` = `contended` = the `contended` column,
//! and hold times are unknown. Call stacks printed by `-v` (`0xffff…  symbol`), perf's own
//! messages and debug summaries are skipped; a caller that a mail client wrapped onto the next
//! line is joined back.

use netceil_model::LockStat;

use super::common::{
    cut_mid_line, cut_row_kept, cut_row_skipped, error, fields, finish, first_nonblank, new_run,
    parse_nonneg, parse_u64, plural, profile_window, unquote,
};
use crate::{ImportError, ImportOptions, Imported};

/// The name of this format for `--format`.
pub const NAME: &str = "perf-lock";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Contended,
    TotalWait,
    MaxWait,
    MinWait,
    AvgWait,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    /// `type caller`
    TypeCaller,
    /// `address symbol`
    AddressSymbol,
    /// `pid comm` / `pid owner`
    PidComm,
    /// `cgroup`
    Cgroup,
    /// Key columns this reader does not know (a newer perf's): the first word's value names
    /// the row when there is one column, else one token then free text as for `type caller`.
    Other(usize),
}

#[derive(Debug, Clone, PartialEq)]
struct Layout {
    nums: Vec<Num>,
    key: Key,
}

/// Reads a header line into its columns, or `None` when it is not one.
fn header(line: &str) -> Option<Layout> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut nums = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        let next = words.get(i + 1).copied();
        let num = match (w, next) {
            ("contended", _) => Some((Num::Contended, 1)),
            ("total", Some("wait")) => Some((Num::TotalWait, 2)),
            ("max", Some("wait")) => Some((Num::MaxWait, 2)),
            ("min", Some("wait")) => Some((Num::MinWait, 2)),
            ("avg", Some("wait")) => Some((Num::AvgWait, 2)),
            _ => None,
        };
        match num {
            Some((n, len)) => {
                nums.push(n);
                i += len;
            }
            None => break,
        }
    }
    if !nums.contains(&Num::Contended) || nums.len() < 2 {
        return None;
    }
    let key = match &words[i..] {
        ["type", "caller"] => Key::TypeCaller,
        ["address", "symbol"] => Key::AddressSymbol,
        ["pid", "comm"] | ["pid", "owner"] | ["pid", "comm", "owner"] => Key::PidComm,
        ["cgroup"] => Key::Cgroup,
        [] => return None,
        other
            if other.len() <= 3
                && other
                    .iter()
                    .all(|w| w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')) =>
        {
            Key::Other(other.len())
        }
        _ => return None,
    };
    Some(Layout { nums, key })
}

/// Says why a text is not `perf lock contention` output.
pub fn sniff(text: &str) -> Result<(), String> {
    let mut first = None;
    for (i, line) in text.lines().enumerate().take(200) {
        let t = unquote(line).trim();
        if t.is_empty() {
            continue;
        }
        first.get_or_insert((i + 1, t));
        if header(t).is_some() {
            return Ok(());
        }
    }
    Err(match first {
        None => "empty input".into(),
        Some((n, l)) => format!(
            "no 'contended   total wait     max wait     avg wait   type caller' header (or the address/pid/cgroup variants) in the first 200 lines; line {n} is '{l}'"
        ),
    })
}

/// Seconds in one unit as perf prints it.
fn unit_s(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1e-9,
        "us" | "µs" | "μs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return None,
    })
}

struct Row {
    contended: u64,
    total_s: Option<f64>,
    max_s: Option<f64>,
    key: Vec<String>,
    rest: String,
}

type RowError = (usize, String, String);

fn parse_row(line: &str, layout: &Layout) -> Result<Row, RowError> {
    let toks = fields(line);
    let mut k = 0;
    let mut row = Row {
        contended: 0,
        total_s: None,
        max_s: None,
        key: Vec::new(),
        rest: String::new(),
    };
    let field_of = |k: usize| k + 1;
    for &num in &layout.nums {
        let tok = toks.get(k).map(|t| t.1);
        if num == Num::Contended {
            let tok = tok.ok_or((field_of(k), "a contended count".to_string(), String::new()))?;
            row.contended = parse_u64(tok).ok_or((
                field_of(k),
                "a contended count".to_string(),
                tok.to_string(),
            ))?;
            k += 1;
            continue;
        }
        let value = tok.and_then(parse_nonneg).ok_or((
            field_of(k),
            "a time such as '1.26 ms'".to_string(),
            tok.unwrap_or("").to_string(),
        ))?;
        let unit_tok = toks.get(k + 1).map(|t| t.1);
        let scale = unit_tok.and_then(unit_s).ok_or((
            field_of(k + 1),
            "a time unit (ns, us, ms, s, m, h)".to_string(),
            unit_tok.unwrap_or("").to_string(),
        ))?;
        k += 2;
        match num {
            Num::TotalWait => row.total_s = Some(value * scale),
            Num::MaxWait => row.max_s = Some(value * scale),
            _ => {}
        }
    }
    // One key token before the free-text column, except for a single free-text column.
    let singles = usize::from(!matches!(layout.key, Key::Cgroup | Key::Other(1)));
    for _ in 0..singles {
        match toks.get(k) {
            Some(t) => row.key.push(t.1.to_string()),
            None => {
                return Err((
                    field_of(k),
                    match layout.key {
                        Key::TypeCaller => "the lock type",
                        Key::AddressSymbol => "the lock address",
                        _ => "the pid",
                    }
                    .to_string(),
                    String::new(),
                ))
            }
        }
        k += 1;
    }
    if let Some(&(offset, _)) = toks.get(k) {
        row.rest = line[offset..].trim().to_string();
    }
    Ok(row)
}

/// The `N` of `perf lock … -- sleep N` (or `perf lock record … sleep N`) in a command line
/// pasted with the output: how long perf watched.
fn sleep_seconds(lines: &[&str]) -> Option<f64> {
    lines.iter().find_map(|l| {
        if !l.contains("perf lock") && !l.contains("perf record") {
            return None;
        }
        let words: Vec<&str> = l.split_whitespace().collect();
        let at = words.iter().position(|w| *w == "sleep")?;
        words.get(at + 1)?.trim_end_matches('s').parse::<f64>().ok()
    })
}

/// A `-v` call-stack line: `0xffffffffac6318e7  pipe_read+0x57`.
fn is_stack_line(t: &str) -> bool {
    t.split_whitespace().next().is_some_and(|w| {
        w.starts_with("0x") && w.len() > 2 && w[2..].bytes().all(|b| b.is_ascii_hexdigit())
    })
}

/// A caller wrapped onto its own line: one word that is not a number or a stack address.
fn wrapped_caller(t: &str) -> Option<&str> {
    let t = t.trim();
    (!t.is_empty()
        && !t.contains(char::is_whitespace)
        && !is_stack_line(t)
        && parse_nonneg(t).is_none()
        && header(t).is_none())
    .then_some(t)
}

/// The rows under the headers, and what else the lines held.
struct Read {
    /// The last header's layout.
    layout: Option<Layout>,
    rows: Vec<(Layout, Row)>,
    /// Lines after a header that are not rows.
    skipped: usize,
    /// Call-stack lines (-v).
    stack_lines: usize,
}

/// Reads the rows under each header; a last row cut mid-line is kept or skipped with a
/// warning, any other bad row is an error.
fn read_rows(
    text: &str,
    lines: &[&str],
    opts: &ImportOptions,
    warnings: &mut Vec<String>,
) -> Result<Read, ImportError> {
    let mut layout: Option<Layout> = None;
    let mut rows: Vec<(Layout, Row)> = Vec::new();
    let mut skipped = 0usize;
    let mut stack_lines = 0usize;
    let mut i = 0;
    while i < lines.len() {
        let number = i + 1;
        let t = unquote(lines[i]).trim();
        i += 1;
        if t.is_empty() {
            continue;
        }
        if let Some(l) = header(t) {
            layout = Some(l);
            continue;
        }
        let Some(current) = layout.clone() else {
            continue;
        };
        if is_stack_line(t) {
            stack_lines += 1;
            continue;
        }
        let starts_numeric = fields(t).first().is_some_and(|f| parse_u64(f.1).is_some());
        if !starts_numeric {
            skipped += 1;
            continue;
        }
        match parse_row(t, &current) {
            Ok(mut row) => {
                if row.rest.is_empty() && current.key == Key::TypeCaller {
                    if let Some(caller) = lines.get(i).and_then(|l| wrapped_caller(unquote(l))) {
                        row.rest = caller.to_string();
                        i += 1;
                    }
                }
                if i >= lines.len() && cut_mid_line(text) {
                    warnings.push(cut_row_kept(number));
                }
                rows.push((current, row));
            }
            Err((field, expected, found)) => {
                if number == lines.len() && cut_mid_line(text) {
                    warnings.push(cut_row_skipped(number, t));
                    break;
                }
                return Err(error(opts, number, Some(field), expected, &found));
            }
        }
    }
    Ok(Read {
        layout,
        rows,
        skipped,
        stack_lines,
    })
}

/// A row's lock name and caller, as its layout's key columns give them.
fn name_and_caller(key: Key, row: &Row) -> (String, Option<String>) {
    match key {
        Key::TypeCaller => (
            row.key[0].clone(),
            (!row.rest.is_empty()).then(|| row.rest.clone()),
        ),
        Key::AddressSymbol => {
            let symbol = row.rest.trim();
            let bare = symbol.starts_with('(') || symbol.is_empty();
            let name = if bare {
                format!("{} {symbol}", row.key[0]).trim().to_string()
            } else {
                symbol.to_string()
            };
            (name, None)
        }
        Key::PidComm => {
            let comm = if row.rest.is_empty() {
                format!("pid {}", row.key[0])
            } else {
                row.rest.clone()
            };
            (comm, Some(format!("pid {}", row.key[0])))
        }
        Key::Cgroup | Key::Other(1) => (row.rest.clone(), None),
        Key::Other(_) => (
            row.key[0].clone(),
            (!row.rest.is_empty()).then(|| row.rest.clone()),
        ),
    }
}

/// What the name and caller of a row keyed by `mode` are.
fn mode_note(mode: Key) -> String {
    match mode {
        Key::TypeCaller => "rows are per call site: name is the lock type, caller the call site (the lock itself is not identified)",
        Key::AddressSymbol => "rows are per lock instance (-l): name is perf's symbol and type, or the address when it has no symbol",
        Key::PidComm => "rows are per waiting task (-t): name is the task's comm, caller its pid; the locks are not identified",
        Key::Cgroup => "rows are per cgroup (--lock-cgroup): name is the cgroup",
        Key::Other(_) => "rows are keyed by columns this reader does not know: name is the first key column, caller the rest",
    }
    .to_string()
}

/// Imports `perf lock contention` output.
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut warnings = Vec::new();
    let Read {
        layout,
        rows,
        skipped,
        stack_lines,
    } = read_rows(text, &lines, opts, &mut warnings)?;
    if layout.is_none() {
        let (n, found) = first_nonblank(&lines);
        return Err(error(
            opts,
            n,
            None,
            "a 'contended   total wait     max wait     avg wait         type   caller' header",
            found,
        ));
    }
    if rows.is_empty() {
        return Err(error(
            opts,
            lines.len(),
            None,
            "at least one row after the header ('802   1.26 ms   11.73 us   1.58 us   spinlock   caller')",
            "no rows",
        ));
    }
    if skipped > 0 {
        warnings.push(format!(
            "{} after the header that are not rows (perf messages, debug summaries) were skipped",
            plural(skipped, "line")
        ));
    }
    let mut run = new_run(NAME, text, opts);
    let mut modes = Vec::new();
    let mut no_total = 0usize;
    for (layout, row) in &rows {
        let (name, caller) = name_and_caller(layout.key, row);
        if !modes.contains(&layout.key) {
            modes.push(layout.key);
        }
        if row.total_s.is_none() {
            no_total += 1;
        }
        run.locks.push(LockStat {
            name,
            caller,
            count: row.contended,
            contended: Some(row.contended),
            wait_total_s: row.total_s.unwrap_or(0.0),
            wait_max_s: row.max_s,
            hold_total_s: None,
            hold_max_s: None,
            kind: None,
            stack: Vec::new(),
        });
    }
    if no_total > 0 {
        warnings.push(format!(
            "{} without a 'total wait' column (perf lock con -F): their wait is recorded as 0",
            plural(no_total, "row")
        ));
    }
    run.notes.push(format!(
        "perf lock contention: {}; perf sees only contended acquisitions, so count = contended and hold times are unknown",
        plural(rows.len(), "row")
    ));
    run.notes.extend(modes.into_iter().map(mode_note));
    let window = sleep_seconds(&lines)
        .map(|w| (w, "from the `sleep` perf ran in the log's command line"))
        .or_else(|| opts.interval_s.map(|w| (w, "as given (--interval)")));
    profile_window(&mut run, window);
    if stack_lines > 0 {
        run.notes.push(format!(
            "{} (-v) were not kept",
            plural(stack_lines, "call-stack line")
        ));
    }
    Ok(finish(run, warnings, opts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        let h = header(" contended   total wait     max wait     avg wait         type   caller")
            .unwrap();
        assert_eq!(h.nums.len(), 4);
        assert_eq!(h.key, Key::TypeCaller);
        assert_eq!(
            header("contended   total wait     max wait     avg wait            address   symbol")
                .unwrap()
                .key,
            Key::AddressSymbol
        );
        assert_eq!(
            header(" contended   total wait     max wait     avg wait          pid   comm")
                .unwrap()
                .key,
            Key::PidComm
        );
        assert!(header("total wait type caller").is_none());
    }

    #[test]
    fn rows_with_units() {
        let h = header(" contended   total wait     max wait     avg wait         type   caller")
            .unwrap();
        let r = parse_row(
            "6187241     12.50 m       2.30 ms    121.22 us     spinlock   kthread+0x160",
            &h,
        )
        .unwrap();
        assert_eq!(r.contended, 6_187_241);
        assert!((r.total_s.unwrap() - 750.0).abs() < 1e-9);
        assert!((r.max_s.unwrap() - 2.30e-3).abs() < 1e-12);
        assert_eq!(r.key, vec!["spinlock".to_string()]);
        assert_eq!(r.rest, "kthread+0x160");
        let e = parse_row("12  1.0 furlongs  1 us 1 us spinlock x", &h)
            .err()
            .unwrap();
        assert_eq!(e.0, 3);
    }
}
