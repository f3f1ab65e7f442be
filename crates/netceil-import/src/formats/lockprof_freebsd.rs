//! FreeBSD `debug.lock.prof.stats` (LOCK_PROFILING(9)): a lock profile into the Run's lock
//! table, so that a profile pasted into a mailing-list post is ranked like a live one.
//!
//! The table is one row per *acquisition point* (file:line where a lock is taken). The kernel
//! prints the header and then, per row, the numeric columns and `file:line (class:name)`
//! (`lock_prof_output()` in sys/kern/subr_lock.c). The columns are read from the header, so
//! every layout works:
//! - since FreeBSD 7: `max wait_max total wait_total count avg wait_avg cnt_hold cnt_lock name`;
//! - older 7.x/8.x captures without `wait_max` (the seed's layout);
//! - the old MUTEX_PROFILING `debug.mutex.prof.stats`: `max total count avg cnt_hold cnt_lock name`.
//!
//! Times are microseconds. What each column means (LOCK_PROFILING(9)), and where it goes:
//!
//! | column | meaning | [`LockStat`] field |
//! |---|---|---|
//! | `max` | longest hold after acquiring at this point | `hold_max_s` |
//! | `wait_max` | longest wait to acquire | `wait_max_s` |
//! | `total` | total hold time | `hold_total_s` |
//! | `wait_total` | total wait time, summed over CPUs | `wait_total_s` |
//! | `count` | non-recursive acquisitions | `count` |
//! | `cnt_lock` | times the lock was already held when this point was reached | `contended` |
//! | `cnt_hold` | times others tried while it was held from here | notes only; always 0 since FreeBSD 7 |
//! | `avg`, `wait_avg` | derived (integer division) | not kept |
//!
//! Names: `net/route.c:197 (sleep mutex:rtentry)` becomes `name = "rtentry"` and
//! `caller = "net/route.c:197 (sleep mutex)"`: the lock is what rows are grouped by, and the
//! lock class stays visible next to the acquisition point. Without a class (`(Giant)`) the
//! caller is the point alone.
//!
//! Text around the table (a `debug.lock.prof.stats:` prefix, prose after it, e-mail `>`
//! quoting) is skipped; `[...]` elisions are counted and warned about, because the rows shown
//! are then not all the locks. A profile has no duration: `ImportOptions::interval_s`, when
//! given, is taken as the length of the profiled window.

use std::collections::BTreeMap;

use netceil_model::LockStat;

use super::common::{
    cut_mid_line, cut_row_kept, cut_row_skipped, error, fields, finish, first_nonblank, new_run,
    parse_nonneg, parse_u64, plural, profile_window, unquote,
};
use crate::{ImportError, ImportOptions, Imported};

/// The name of this format for `--format`.
pub const NAME: &str = "freebsd-lockprof";

/// How far into a text detection looks for the header.
const SNIFF_LINES: usize = 60;

/// One numeric column of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Max,
    WaitMax,
    Total,
    WaitTotal,
    Count,
    Avg,
    WaitAvg,
    CntHold,
    CntLock,
    /// A column this reader does not know (a future kernel's), by its header word's index.
    Other(usize),
}

impl Col {
    fn from_header(word: &str) -> Option<Col> {
        Some(match word {
            "max" => Col::Max,
            "wait_max" => Col::WaitMax,
            "total" => Col::Total,
            "wait_total" => Col::WaitTotal,
            "count" => Col::Count,
            "avg" => Col::Avg,
            "wait_avg" => Col::WaitAvg,
            "cnt_hold" => Col::CntHold,
            "cnt_lock" => Col::CntLock,
            _ => return None,
        })
    }

    fn word(self) -> &'static str {
        match self {
            Col::Other(_) => "unknown",
            Col::Max => "max",
            Col::WaitMax => "wait_max",
            Col::Total => "total",
            Col::WaitTotal => "wait_total",
            Col::Count => "count",
            Col::Avg => "avg",
            Col::WaitAvg => "wait_avg",
            Col::CntHold => "cnt_hold",
            Col::CntLock => "cnt_lock",
        }
    }

    fn is_count(self) -> bool {
        matches!(self, Col::Count | Col::CntHold | Col::CntLock)
    }
}

/// The numeric columns named by a header line, or `None` if the line is not a header.
fn header(line: &str) -> Option<Vec<Col>> {
    header_words(line).map(|(cols, _)| cols)
}

/// The columns of a header line and the words of those it does not know (at most three,
/// snake_case: a newer kernel's extra column, kept out of the lock table but said).
fn header_words(line: &str) -> Option<(Vec<Col>, Vec<String>)> {
    let words = fields(unquote(line));
    let mut words: Vec<&str> = words.iter().map(|w| w.1).collect();
    if words
        .first()
        .is_some_and(|w| w.starts_with("debug.") && w.ends_with(':'))
    {
        words.remove(0);
    }
    let (&last, numeric) = words.split_last()?;
    if last != "name" {
        return None;
    }
    let mut unknown = Vec::new();
    let mut cols = Vec::with_capacity(numeric.len());
    for w in numeric {
        match Col::from_header(w) {
            Some(c) => cols.push(c),
            None if w.len() <= 20 && w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') => {
                cols.push(Col::Other(unknown.len()));
                unknown.push(w.to_string());
            }
            None => return None,
        }
    }
    let has = |c: Col| cols.contains(&c);
    let unique = cols
        .iter()
        .all(|c| cols.iter().filter(|d| *d == c).count() == 1);
    (unique && unknown.len() <= 3 && has(Col::Max) && has(Col::Total) && has(Col::Count))
        .then_some((cols, unknown))
}

/// Says why a text is not a FreeBSD lock profile.
pub fn sniff(text: &str) -> Result<(), String> {
    let mut first = None;
    for (i, line) in text.lines().enumerate().take(SNIFF_LINES) {
        if line.trim().is_empty() {
            continue;
        }
        first.get_or_insert((i + 1, line));
        if header(line).is_some() {
            return Ok(());
        }
    }
    Err(match first {
        None => "empty input".to_string(),
        Some((n, l)) => format!(
            "no lock profile header ('max [wait_max] total [wait_total] count avg … name') in the first {SNIFF_LINES} lines; line {n} is '{}'",
            l.trim()
        ),
    })
}

/// One parsed row.
struct Row {
    values: Vec<(Col, f64)>,
    point: String,
    class: Option<String>,
    lock: String,
}

impl Row {
    fn get(&self, col: Col) -> Option<f64> {
        self.values.iter().find(|(c, _)| *c == col).map(|v| v.1)
    }
}

/// Why a row could not be read: field number, what was expected, what was found.
type RowError = (usize, String, String);

fn parse_row(line: &str, cols: &[Col]) -> Result<Row, RowError> {
    let toks = fields(line);
    let mut values = Vec::with_capacity(cols.len());
    for (k, &col) in cols.iter().enumerate() {
        let Some(&(_, tok)) = toks.get(k) else {
            return Err((k + 1, format!("the {} column", col.word()), String::new()));
        };
        let v = if col.is_count() {
            parse_u64(tok).map(|v| v as f64)
        } else {
            parse_nonneg(tok)
        };
        match v {
            Some(v) => values.push((col, v)),
            None => {
                let what = if col.is_count() {
                    "a whole number"
                } else {
                    "a number of microseconds"
                };
                return Err((k + 1, format!("{what} ({})", col.word()), tok.to_string()));
            }
        }
    }
    let Some(&(offset, _)) = toks.get(cols.len()) else {
        return Err((
            cols.len() + 1,
            "the acquisition point and lock name ('file:line (class:name)')".into(),
            String::new(),
        ));
    };
    let (point, class, lock) = split_name(line[offset..].trim());
    Ok(Row {
        values,
        point,
        class,
        lock,
    })
}

/// `net/route.c:197 (sleep mutex:rtentry)` → (`net/route.c:197`, `sleep mutex`, `rtentry`).
/// The acquisition point has no spaces, so it ends at the first one; the lock name may hold
/// spaces and parentheses (`vm map (user)`), so the class ends at the first `:` inside.
fn split_name(name: &str) -> (String, Option<String>, String) {
    let (point, rest) = match name.find(char::is_whitespace) {
        Some(sp) => (&name[..sp], name[sp..].trim()),
        None => (name, ""),
    };
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .map(str::trim);
    match inner {
        Some(inner) => match inner.split_once(':') {
            Some((class, lock)) if !lock.trim().is_empty() => (
                point.to_string(),
                Some(class.trim().to_string()),
                lock.trim().to_string(),
            ),
            _ => (point.to_string(), None, inner.to_string()),
        },
        // No `(…)`: the point is all there is to name the row by.
        None if rest.is_empty() => (point.to_string(), None, point.to_string()),
        None => (point.to_string(), None, rest.to_string()),
    }
}

/// `[...]`, `...`, `…`, `[snip]`: rows were left out.
fn is_elision(line: &str) -> bool {
    let t = line.trim();
    matches!(t, "[snip]" | "<snip>" | "(snip)" | "snip")
        || (!t.is_empty()
            && t.contains(['.', '…'])
            && t.chars()
                .all(|c| matches!(c, '.' | '…' | '[' | ']' | '(' | ')' | ' ')))
}

fn is_separator(line: &str) -> bool {
    let t = line.trim();
    t.len() >= 3 && t.chars().all(|c| matches!(c, '-' | '=' | ' '))
}

/// Imports a FreeBSD lock profile.
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let lines: Vec<&str> = text.lines().collect();
    let Some((header_idx, (cols, unknown))) = lines
        .iter()
        .enumerate()
        .find_map(|(i, l)| header_words(l).map(|c| (i, c)))
    else {
        let (n, found) = first_nonblank(&lines);
        return Err(error(
            opts,
            n,
            None,
            "a lock profile header ('max [wait_max] total [wait_total] count avg [wait_avg] cnt_hold cnt_lock name')",
            found,
        ));
    };
    let mut warnings = Vec::new();
    let mut rows: Vec<(usize, Row)> = Vec::new();
    let mut elisions = 0usize;
    let mut headers = 1usize;
    let last = lines.len();
    for i in header_idx + 1..lines.len() {
        let raw = unquote(lines[i]);
        if raw.trim().is_empty() || is_separator(raw) {
            continue;
        }
        if is_elision(raw) {
            elisions += 1;
            continue;
        }
        if header(raw).is_some() {
            headers += 1;
            continue;
        }
        match parse_row(raw, &cols) {
            Ok(row) if i + 1 == last && cut_mid_line(text) => {
                // The text stops inside this line: a name whose parentheses do not close,
                // or that lacks the `(class:name)` the other rows have, was cut; numbers cut
                // short cannot be told, so such a row is kept and flagged.
                let name = raw.trim_end();
                let others_have_lock = rows.iter().any(|(_, r)| r.point != r.lock);
                let unbalanced = name.matches('(').count() != name.matches(')').count();
                if unbalanced || (others_have_lock && !name.ends_with(')')) {
                    warnings.push(cut_row_skipped(i + 1, raw.trim()));
                } else {
                    warnings.push(cut_row_kept(i + 1));
                    rows.push((i + 1, row));
                }
            }
            Ok(row) => rows.push((i + 1, row)),
            Err((field, expected, found)) => {
                if i + 1 == last && cut_mid_line(text) {
                    warnings.push(cut_row_skipped(i + 1, raw.trim()));
                    break;
                }
                let starts_numeric = fields(raw)
                    .first()
                    .is_some_and(|t| parse_nonneg(t.1).is_some());
                let more_rows = lines[i + 1..]
                    .iter()
                    .any(|l| parse_row(unquote(l), &cols).is_ok());
                if !starts_numeric && !more_rows {
                    warnings.push(format!(
                        "line {}: the table ends here; the {} after it are not lock rows and were skipped",
                        i + 1,
                        plural(last - i, "line")
                    ));
                    break;
                }
                return Err(error(opts, i + 1, Some(field), expected, &found));
            }
        }
    }
    if rows.is_empty() {
        return Err(error(
            opts,
            header_idx + 2,
            None,
            "at least one lock row after the header",
            lines.get(header_idx + 1).copied().unwrap_or(""),
        ));
    }
    if elisions > 0 {
        warnings.push(format!(
            "the profile has {} ('[...]'): rows were left out, so the table is not every lock",
            plural(elisions, "elision")
        ));
    }
    if !unknown.is_empty() {
        warnings.push(format!(
            "unknown {} {}: read as numbers but not kept, the lock table has no field for them",
            if unknown.len() == 1 {
                "column"
            } else {
                "columns"
            },
            unknown.join(", ")
        ));
    }
    if headers > 1 {
        warnings.push(format!(
            "{} headers: several profiles were pasted together and are read as one table",
            headers
        ));
    }

    let mut run = new_run(NAME, text, opts);
    let us = 1e-6;
    for (_, row) in &rows {
        let caller = match &row.class {
            Some(class) => format!("{} ({class})", row.point),
            None => row.point.clone(),
        };
        run.locks.push(LockStat {
            name: row.lock.clone(),
            caller: Some(caller),
            count: row.get(Col::Count).map_or(0, |c| c as u64),
            contended: row.get(Col::CntLock).map(|c| c as u64),
            wait_total_s: row.get(Col::WaitTotal).map_or(0.0, |v| v * us),
            wait_max_s: row.get(Col::WaitMax).map(|v| v * us),
            hold_total_s: row.get(Col::Total).map(|v| v * us),
            hold_max_s: row.get(Col::Max).map(|v| v * us),
            kind: None,
            stack: Vec::new(),
        });
    }
    notes(&mut run, &rows, &cols, opts);
    Ok(finish(run, warnings, opts))
}

fn notes(run: &mut netceil_model::Run, rows: &[(usize, Row)], cols: &[Col], opts: &ImportOptions) {
    #[derive(Default)]
    struct PerLock {
        class: Option<String>,
        points: usize,
        wait_s: f64,
        count: u64,
    }
    let mut per_lock: BTreeMap<&str, PerLock> = BTreeMap::new();
    for (_, r) in rows {
        let e = per_lock.entry(&r.lock).or_default();
        e.points += 1;
        e.wait_s += r.get(Col::WaitTotal).unwrap_or(0.0) * 1e-6;
        e.count += r.get(Col::Count).map_or(0, |c| c as u64);
        if e.class.is_none() {
            e.class.clone_from(&r.class);
        }
    }
    run.notes.push(format!(
        "FreeBSD lock profile: {} of {}; times are microseconds in the log, seconds here; waits are summed over all CPUs, so they can exceed the wall time",
        plural(rows.len(), "acquisition point"),
        plural(per_lock.len(), "lock")
    ));
    if !cols.contains(&Col::WaitTotal) {
        run.notes.push(
            "this profile has no wait_total column (old MUTEX_PROFILING layout): wait times are unknown and recorded as 0"
                .into(),
        );
    }
    if cols.contains(&Col::CntHold) && rows.iter().all(|(_, r)| r.get(Col::CntHold) == Some(0.0)) {
        run.notes.push(
            "cnt_hold is 0 in every row: FreeBSD 7.0 and later no longer count it; contention is cnt_lock"
                .into(),
        );
    }
    let mut ranked: Vec<_> = per_lock.into_iter().collect();
    ranked.sort_by(|a, b| b.1.wait_s.total_cmp(&a.1.wait_s));
    for (lock, p) in ranked.iter().take(5).filter(|(_, p)| p.wait_s > 0.0) {
        let class = p
            .class
            .as_deref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default();
        run.notes.push(format!(
            "{lock}{class}: waited {:.3} s in total over {}, {} acquisitions",
            p.wait_s,
            plural(p.points, "acquisition point"),
            p.count
        ));
    }
    profile_window(
        run,
        opts.interval_s
            .map(|w| (w, "as given (--interval); the log does not record it")),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_with_and_without_wait_max() {
        let new = header("     max  wait_max       total  wait_total       count    avg wait_avg cnt_hold cnt_lock name");
        assert_eq!(new.map(|c| c.len()), Some(9));
        let old = header("max total wait_total count avg wait_avg cnt_hold cnt_lock name").unwrap();
        assert_eq!(old[0], Col::Max);
        assert!(!old.contains(&Col::WaitMax));
        assert!(
            header("debug.lock.prof.stats: max total count avg cnt_hold cnt_lock name").is_some()
        );
        assert!(header("max total name").is_none(), "count is required");
        assert!(
            header("max total count avg foo name").is_some(),
            "an unknown snake_case column"
        );
        assert!(header("max total count avg Foo! name").is_none());
        assert!(
            header("max total count a b c d name").is_none(),
            "too many unknown words"
        );
    }

    #[test]
    fn names_split_into_point_class_and_lock() {
        assert_eq!(
            split_name("net/route.c:197 (sleep mutex:rtentry)"),
            (
                "net/route.c:197".into(),
                Some("sleep mutex".into()),
                "rtentry".into()
            )
        );
        assert_eq!(
            split_name("vm/vm_map.c:4000  (sx:vm map (user))"),
            (
                "vm/vm_map.c:4000".into(),
                Some("sx".into()),
                "vm map (user)".into()
            )
        );
        assert_eq!(
            split_name("kern/kern_synch.c:1 (Giant)"),
            ("kern/kern_synch.c:1".into(), None, "Giant".into())
        );
        assert_eq!(
            split_name("(unknown):0 (spin mutex:sched lock 0)"),
            (
                "(unknown):0".into(),
                Some("spin mutex".into()),
                "sched lock 0".into()
            )
        );
    }

    #[test]
    fn elisions_and_separators() {
        assert!(is_elision("[...]"));
        assert!(is_elision("  ...  "));
        assert!(is_elision("[…]"));
        assert!(!is_elision("12 34"));
        assert!(is_separator("-----"));
    }
}
