//! Linux `/proc/lock_stat` (CONFIG_LOCK_STAT): per lock class contention into the Run's lock
//! table.
//!
//! Format: the kernel's Documentation/locking/lockstat.rst. A `lock_stat version 0.4` line, a
//! header of column names between dashed lines, then per class one row `name: numbers…`
//! (read/write classes print a `-W` and an `-R` row), and below the rows, after short dashed
//! separators, up to four *contention points* (call sites that waited) and four *contending
//! points* (call sites that held the lock meanwhile), each `name count [<addr>] symbol+off/len`.
//! Classes are separated by dotted lines. Times are microseconds with two decimals.
//!
//! The columns are read from the header, so version 0.3 (no `-avg` columns) reads too; a
//! `grep : /proc/lock_stat` excerpt without a header is read with the 0.4 (12 numbers) or 0.3
//! (10 numbers) layout, and says so.
//!
//! Mapping onto [`LockStat`]: `name` = the class (`&mm->mmap_sem-W`), `count` = acquisitions,
//! `contended` = contentions, waits and holds from the `waittime-*`/`holdtime-*` columns.
//! Call sites carry a count but no times, so they are not rows of their own (that would count
//! the class's wait twice): the class's `caller` is its busiest contention point, and the
//! contention and contending points of the ten classes with the most wait are listed in the
//! Run's notes.

use netceil_model::LockStat;

use super::common::{
    cut_mid_line, error, fields, finish, new_run, parse_nonneg, plural, profile_window,
};
use crate::{ImportError, ImportOptions, Imported};

/// The name of this format for `--format`.
pub const NAME: &str = "lock-stat";

const V04: [&str; 12] = [
    "con-bounces",
    "contentions",
    "waittime-min",
    "waittime-max",
    "waittime-total",
    "waittime-avg",
    "acq-bounces",
    "acquisitions",
    "holdtime-min",
    "holdtime-max",
    "holdtime-total",
    "holdtime-avg",
];
const V03: [&str; 10] = [
    "con-bounces",
    "contentions",
    "waittime-min",
    "waittime-max",
    "waittime-total",
    "acq-bounces",
    "acquisitions",
    "holdtime-min",
    "holdtime-max",
    "holdtime-total",
];

/// Says why a text is not /proc/lock_stat.
pub fn sniff(text: &str) -> Result<(), String> {
    let mut first = None;
    let mut class_rows = 0;
    for (i, line) in text.lines().enumerate().take(80) {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        first.get_or_insert((i + 1, t));
        if t.starts_with("lock_stat version") || header_columns(t).is_some() {
            return Ok(());
        }
        if class_row(t, None).is_some() {
            class_rows += 1;
            if class_rows >= 2 {
                return Ok(());
            }
        }
    }
    Err(match first {
        None => "empty input".into(),
        Some((n, l)) => format!(
            "no 'lock_stat version' line, 'class name con-bounces contentions …' header or 'class: 12 numbers' rows; line {n} is '{l}'"
        ),
    })
}

/// The numeric column names of a `class name …` header line.
fn header_columns(line: &str) -> Option<Vec<String>> {
    let rest = line.trim().strip_prefix("class name")?;
    let cols: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
    (cols.iter().any(|c| c == "contentions") && cols.iter().any(|c| c == "acquisitions"))
        .then_some(cols)
}

/// A class row: `name: n1 n2 …`. With `columns` unknown, 12 or 10 numbers are accepted.
fn class_row(line: &str, columns: Option<usize>) -> Option<(String, Vec<f64>)> {
    let toks = fields(line);
    let candidates: &[usize] = match columns {
        Some(n) => &[n][..],
        None => &[12, 10],
    };
    for &n in candidates {
        if toks.len() <= n {
            continue;
        }
        let name_end = toks.len() - n - 1;
        let (offset, last_name_tok) = toks[name_end];
        if !last_name_tok.ends_with(':') {
            continue;
        }
        let values: Option<Vec<f64>> = toks[name_end + 1..]
            .iter()
            .map(|t| parse_nonneg(t.1))
            .collect();
        if let Some(values) = values {
            let name = line[..offset + last_name_tok.len() - 1].trim().to_string();
            if !name.is_empty() {
                return Some((name, values));
            }
        }
    }
    None
}

/// Which field of a line that looks like a class row is wrong: the first that is not a
/// number after the `name:`, or the one past the expected count of numbers.
fn bad_field(line: &str, want: usize) -> Option<usize> {
    let toks = fields(line);
    let name_end = toks.iter().position(|(_, w)| w.ends_with(':'))?;
    if let Some(k) = toks
        .iter()
        .enumerate()
        .skip(name_end + 1)
        .find(|(_, (_, w))| parse_nonneg(w).is_none())
        .map(|(k, _)| k)
    {
        return Some(k + 1);
    }
    let numbers = toks.len() - name_end - 1;
    Some(name_end + 1 + numbers.min(want) + 1)
}

/// A call-site line: `name count [<addr>] symbol+off/len` → (count, symbol).
fn call_site(line: &str) -> Option<(u64, String)> {
    let open = line.find("[<")?;
    let close = open + line[open..].find(">]")?;
    let count = line[..open].split_whitespace().last()?.parse().ok()?;
    let symbol = line[close + 2..].trim();
    let symbol = if symbol.is_empty() {
        line[open..close + 2].to_string()
    } else {
        symbol.to_string()
    };
    Some((count, symbol))
}

fn is_rule(line: &str, c: char) -> bool {
    let t = line.trim();
    t.len() >= 3 && t.chars().all(|x| x == c)
}

/// One class and its call sites.
struct Class {
    name: String,
    values: Vec<f64>,
    contention_points: Vec<(u64, String)>,
    contending_points: Vec<(u64, String)>,
}

/// What the lines of a lock_stat file hold.
struct Parsed {
    /// The header's column names, when there is a header.
    columns: Option<Vec<String>>,
    /// The `lock_stat version` line's version.
    version: Option<String>,
    classes: Vec<Class>,
    /// How many `<snip>`-like lines leave rows out.
    elisions: usize,
}

/// Imports /proc/lock_stat.
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let mut warnings = Vec::new();
    let Parsed {
        columns,
        version,
        classes,
        elisions,
    } = read_lines(text, opts, &mut warnings)?;
    if elisions > 0 {
        warnings.push(format!(
            "{} ('<snip>', '[...]'): rows were left out, so the table is not every lock class",
            plural(elisions, "elision")
        ));
    }
    if classes.is_empty() {
        return Err(error(
            opts,
            text.lines().count(),
            None,
            "at least one lock class row ('name: numbers…')",
            "the end of the input",
        ));
    }
    let columns = columns.unwrap_or_else(|| default_columns(&classes, &mut warnings));
    match version.as_deref() {
        Some("0.4") | Some("0.3") | None => {}
        Some(v) => warnings.push(format!(
            "lock_stat version {v}: read by its header, as version 0.4 is"
        )),
    }
    let col = |name: &str| columns.iter().position(|c| c == name);
    let need = |name: &str| {
        col(name).ok_or_else(|| {
            error(
                opts,
                1,
                None,
                format!("a '{name}' column in the header"),
                &columns.join(" "),
            )
        })
    };
    let (acq, con, wt, wm) = (
        need("acquisitions")?,
        need("contentions")?,
        need("waittime-total")?,
        need("waittime-max")?,
    );
    let (ht, hm) = (col("holdtime-total"), col("holdtime-max"));
    let mut run = new_run(NAME, text, opts);
    let us = 1e-6;
    for c in &classes {
        let v = |k: usize| c.values.get(k).copied();
        let caller = c
            .contention_points
            .iter()
            .max_by_key(|(n, _)| *n)
            .map(|(_, s)| s.clone());
        run.locks.push(LockStat {
            name: c.name.clone(),
            caller,
            count: v(acq).map_or(0, |x| x as u64),
            contended: v(con).map(|x| x as u64),
            wait_total_s: v(wt).unwrap_or(0.0) * us,
            wait_max_s: v(wm).map(|x| x * us),
            hold_total_s: ht.and_then(v).map(|x| x * us),
            hold_max_s: hm.and_then(v).map(|x| x * us),
            kind: None,
            stack: Vec::new(),
        });
    }
    run.notes.push(format!(
        "Linux /proc/lock_stat{}: {}; times are microseconds in the file, seconds here; counters run since boot or the last reset (echo 0 > /proc/lock_stat)",
        version.map(|v| format!(" version {v}")).unwrap_or_default(),
        plural(classes.len(), "lock class row")
    ));
    profile_window(
        &mut run,
        opts.interval_s.map(|w| {
            (
                w,
                "as given (--interval): the time since the statistics were reset",
            )
        }),
    );
    call_site_notes(&classes, wt, &mut run.notes);
    Ok(finish(run, warnings, opts))
}

/// Reads the class rows and their call sites; a line that belongs to no table ends it (see
/// [`end_of_table`]).
fn read_lines(
    text: &str,
    opts: &ImportOptions,
    warnings: &mut Vec<String>,
) -> Result<Parsed, ImportError> {
    let mut columns: Option<Vec<String>> = None;
    let mut version: Option<String> = None;
    let mut classes: Vec<Class> = Vec::new();
    // Classes since the last call-site block: a read/write class prints two rows sharing one.
    let mut group_start = 0usize;
    // 0: reading class rows; 1: contention points; 2: contending points.
    let mut section = 0u8;
    let mut elisions = 0usize;
    let lines: Vec<&str> = text.lines().collect();
    for (i, raw) in lines.iter().enumerate() {
        let number = i + 1;
        let t = raw.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(v) = t.strip_prefix("lock_stat version") {
            version = Some(v.trim().to_string());
            continue;
        }
        if t.starts_with("*WARNING*") {
            warnings.push(format!(
                "line {number}: the kernel says '{t}': the statistics stopped when lock debugging was turned off"
            ));
            continue;
        }
        let started = version.is_some() || columns.is_some() || !classes.is_empty();
        if matches!(t, "<snip>" | "[snip]" | "[...]" | "..." | "[…]" | "…") {
            elisions += usize::from(started);
            continue;
        }
        if let Some(cols) = header_columns(t) {
            columns = Some(cols);
            continue;
        }
        if is_rule(t, '.') {
            section = 0;
            group_start = classes.len();
            continue;
        }
        if is_rule(t, '-') {
            // Dashed lines frame the header, and separate a class's rows from its call sites.
            if !classes.is_empty() && group_start < classes.len() {
                section = (section + 1).min(2);
            }
            continue;
        }
        if section > 0 {
            if let Some(site) = call_site(t) {
                for c in &mut classes[group_start..] {
                    if section == 1 {
                        c.contention_points.push(site.clone());
                    } else {
                        c.contending_points.push(site.clone());
                    }
                }
                continue;
            }
        }
        let want = columns.as_ref().map(Vec::len);
        if let Some((name, values)) = class_row(t, want) {
            if section > 0 {
                // A class right after call sites, without a dotted line: a new group.
                section = 0;
                group_start = classes.len();
            }
            classes.push(Class {
                name,
                values,
                contention_points: Vec::new(),
                contending_points: Vec::new(),
            });
            continue;
        }
        if !started {
            // Text before the table: a shell prompt, the start of a mail.
            continue;
        }
        let last_cut = number == lines.len() && cut_mid_line(text);
        end_of_table(
            &lines,
            i,
            want,
            !classes.is_empty(),
            last_cut,
            opts,
            warnings,
        )?;
        break;
    }
    Ok(Parsed {
        columns,
        version,
        classes,
        elisions,
    })
}

/// Line `i`, which is no lock_stat line, once the table has started: a last line cut short,
/// or text after the last class row, ends the table with a warning (`Ok`); anything else is
/// an error naming the field at fault.
fn end_of_table(
    lines: &[&str],
    i: usize,
    want: Option<usize>,
    has_classes: bool,
    last_cut: bool,
    opts: &ImportOptions,
    warnings: &mut Vec<String>,
) -> Result<(), ImportError> {
    let (number, t) = (i + 1, lines[i].trim());
    if last_cut {
        warnings.push(format!(
            "line {number}: the last line is cut short ('{t}'); it was skipped"
        ));
        return Ok(());
    }
    let more_rows = lines[i + 1..]
        .iter()
        .any(|l| class_row(l.trim(), want).is_some());
    if has_classes && !more_rows && fields(t).first().is_none_or(|f| !f.1.ends_with(':')) {
        warnings.push(format!(
            "line {number}: the table ends here; the {} after it are not lock_stat lines and were skipped",
            plural(lines.len() - i, "line")
        ));
        return Ok(());
    }
    let expected = match want {
        Some(n) => format!(
            "a class row ('name: {n} numbers'), a call site ('name count [<addr>] symbol') or a separator"
        ),
        None => "a class row ('name:' then 12 numbers), a call site or a separator".into(),
    };
    Err(error(
        opts,
        number,
        bad_field(t, want.unwrap_or(12)),
        expected,
        t,
    ))
}

/// The columns of a file without a header line: version 0.4's when rows have 12 numbers,
/// else 0.3's, said in a warning.
fn default_columns(classes: &[Class], warnings: &mut Vec<String>) -> Vec<String> {
    let n = classes[0].values.len();
    warnings.push(format!(
        "no header line: the {n} numbers per row are read as lock_stat version {}",
        if n == 12 { "0.4" } else { "0.3" }
    ));
    if n == 12 { &V04[..] } else { &V03[..] }
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// A note for each of the ten classes that waited longest (column `wt`) and has call sites:
/// where its waiters and its holders were.
fn call_site_notes(classes: &[Class], wt: usize, notes: &mut Vec<String>) {
    let mut ranked: Vec<&Class> = classes.iter().collect();
    ranked.sort_by(|a, b| {
        let w = |c: &Class| c.values.get(wt).copied().unwrap_or(0.0);
        w(b).total_cmp(&w(a))
    });
    for c in ranked.iter().take(10) {
        if c.contention_points.is_empty() && c.contending_points.is_empty() {
            continue;
        }
        let list = |v: &[(u64, String)]| {
            v.iter()
                .map(|(n, s)| format!("{s} ({n})"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        notes.push(format!(
            "{}: waiters at {}; holders at {}",
            c.name,
            list(&c.contention_points),
            list(&c.contending_points)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_rows_and_call_sites() {
        let row = "&mm->mmap_sem-W:            46             84           0.26         939.10       16371.53         194.90          47291        2922365           0.16     2220301.69 17464026916.32        5975.99";
        let (name, v) = class_row(row, None).unwrap();
        assert_eq!(name, "&mm->mmap_sem-W");
        assert_eq!(v.len(), 12);
        assert_eq!(v[4], 16371.53);
        assert!(class_row(row, Some(10)).is_none());
        let site = "&mm->mmap_sem             96          [<ffffffff815351c4>] __do_page_fault+0x1d4/0x510";
        assert_eq!(
            call_site(site),
            Some((96, "__do_page_fault+0x1d4/0x510".into()))
        );
        assert!(header_columns(
            "class name    con-bounces    contentions   waittime-min acquisitions"
        )
        .is_some());
    }
}
