//! What every reader shares: the Run an import starts from (with a stable id taken from the
//! content) and how an import ends (warnings named by file and kept in the Run's notes),
//! errors that name the file, line and field, reading lines, fields, numbers, dates and
//! header lines and metric-name cleaning. The series builder is [`super::builder`].
//!
//! The Erlang term reader shared by the Erlang formats is [`super::erlang_term`].

use netceil_model::{Run, RunSource};
use netceil_probe::parse::token_spans;

use super::builder::SeriesBuilder;
use crate::{ImportError, ImportOptions, Imported};

/// 64-bit FNV-1a taken over 8-byte little-endian words (then the tail bytes one by one),
/// for run ids: std's `DefaultHasher` may change between Rust releases, and an id must stay
/// the same for the same log forever. Word-wise, hashing a 200 MB log costs little.
pub(crate) fn fnv1a64_words(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let word = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        hash ^= word;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    for &b in chunks.remainder() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// `import-<first 12 hex digits of the word-wise FNV-1a of the text>`: the same log always
/// gets the same id, whatever the Rust version.
pub(crate) fn content_run_id(text: &str) -> String {
    let hex = format!("{:016x}", fnv1a64_words(text.as_bytes()));
    format!("import-{}", &hex[..12])
}

/// The file name to show in errors, warnings and the Run (`-` when none was given).
pub(crate) fn file(opts: &ImportOptions) -> &str {
    if opts.file.is_empty() {
        "-"
    } else {
        &opts.file
    }
}

/// The Run every importer starts from: id from the content, source, the person's labels and
/// annotations, `complete = true`. Findings are left empty for the analyzer.
pub(crate) fn new_run(format: &str, text: &str, opts: &ImportOptions) -> Run {
    let mut run = Run::new(
        content_run_id(text),
        RunSource::Imported {
            format: format.to_string(),
            file: file(opts).to_string(),
        },
    );
    run.meta.labels = opts.labels.clone();
    run.meta.annotations = opts.annotations.clone();
    run.meta.netceil_version = env!("CARGO_PKG_VERSION").to_string();
    run.meta.complete = true;
    run
}

/// An [`ImportError`] for the file (see [`file`]) at a 1-based line and, when one field is at
/// fault, a 1-based field number.
pub(crate) fn error(
    opts: &ImportOptions,
    line: usize,
    column: Option<usize>,
    expected: impl Into<String>,
    found: &str,
) -> ImportError {
    ImportError::new(file(opts), line.max(1), column, expected, found)
}

/// The end of an import whose warnings do not name the file yet: each is prefixed with the
/// file name, as the table readers write theirs, and also kept in the Run's notes so that
/// they are stored with it.
pub(crate) fn finish(mut run: Run, warnings: Vec<String>, opts: &ImportOptions) -> Imported {
    let warnings: Vec<String> = warnings
        .into_iter()
        .map(|w| format!("{}: {w}", file(opts)))
        .collect();
    run.notes.extend(warnings.iter().cloned());
    Imported {
        run,
        warnings,
        clock: None,
    }
}

/// Lock profiles carry no duration, but relating waits to wall time needs one: with a window
/// (from the command line in the log, or `--interval`), the series gets one empty row at
/// `t_s = window` so the Run has a length, and the notes say where it came from.
pub(crate) fn profile_window(run: &mut Run, window: Option<(f64, &str)>) {
    match window.filter(|(w, _)| *w > 0.0 && w.is_finite()) {
        Some((w, from)) => {
            run.series.interval_s = w;
            run.series.push_row(w);
            run.meta.annotations.interval_s = Some(w);
            run.notes.push(format!("profiled window: {w} s, {from}"));
        }
        None => run.notes.push(
            "the log does not say how long profiling ran: give the window with --interval to relate waits to wall time"
                .into(),
        ),
    }
}

/// The interval the person gave, if it is a usable one (positive and finite).
pub(crate) fn given_interval(opts: &ImportOptions) -> Option<f64> {
    opts.interval_s.filter(|v| *v > 0.0 && v.is_finite())
}

/// The lines of a text with 1-based numbers, a trailing `\r` removed.
pub(crate) fn numbered_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
}

/// The first `max` characters of a line, for messages.
pub(crate) fn shorten(line: &str, max: usize) -> String {
    let mut s: String = line.trim().chars().take(max).collect();
    if line.trim().chars().count() > max {
        s.push('…');
    }
    s
}

/// The line number of the last non-blank line of a text (0 for an empty text).
pub(crate) fn last_nonblank_line(text: &str) -> usize {
    numbered_lines(text)
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, _)| n)
        .last()
        .unwrap_or(0)
}

/// The 1-based number of the last line of `text` (at least 1).
pub(crate) fn line_count(text: &str) -> usize {
    text.lines().count().max(1)
}

/// True when the text stops in the middle of a line: the mark of a log cut short.
pub(crate) fn cut_mid_line(text: &str) -> bool {
    !text.is_empty() && !text.ends_with('\n')
}

/// The first non-blank line of `lines`, trimmed, with its 1-based number (`(1, "")` when
/// there is none): what an error about a missing header points at.
pub(crate) fn first_nonblank<'a>(lines: &[&'a str]) -> (usize, &'a str) {
    lines
        .iter()
        .enumerate()
        .find(|(_, l)| !l.trim().is_empty())
        .map_or((1, ""), |(i, l)| (i + 1, l.trim()))
}

/// The warning for a last row that the end of the text cut so that it could not be read.
pub(crate) fn cut_row_skipped(line: usize, row: &str) -> String {
    format!("line {line}: the last line is cut short ('{row}'); it was skipped")
}

/// The warning for a last row that was read although the text ends inside it.
pub(crate) fn cut_row_kept(line: usize) -> String {
    format!("line {line}: the text ends inside this last row; its values may be cut short")
}

/// Removes e-mail quoting (`> `, `>> `) from a line of a pasted table.
pub(crate) fn unquote(line: &str) -> &str {
    let mut l = line;
    loop {
        let t = l.trim_start();
        match t.strip_prefix('>') {
            Some(rest) => l = rest,
            None => return l,
        }
    }
}

/// Whitespace-separated fields with their byte offsets, split as the /proc parsers split
/// ([`token_spans`]), collected because the lock readers index into them.
pub(crate) fn fields(line: &str) -> Vec<(usize, &str)> {
    token_spans(line).collect()
}

/// `count` of `what`, pluralised with a trailing `s`.
pub(crate) fn plural(count: usize, what: &str) -> String {
    if count == 1 {
        format!("1 {what}")
    } else {
        format!("{count} {what}s")
    }
}

/// Parses a plain decimal number (`42`, `-3.5`, `+0.25`) fast, exactly as `str::parse::<f64>`
/// would, and falls back to the standard parser for anything else (`1e6`, long mantissas).
/// `nan` and infinities are refused: a log value is a finite measurement.
pub(crate) fn parse_number(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 17 {
        return parse_slow(s);
    }
    let (neg, digits) = match b[0] {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() {
        return None;
    }
    let mut mantissa: u64 = 0;
    let mut frac_digits: i32 = -1;
    let mut count = 0;
    for &c in digits {
        match c {
            b'0'..=b'9' => {
                count += 1;
                if count > 15 {
                    return parse_slow(s);
                }
                mantissa = mantissa * 10 + u64::from(c - b'0');
                if frac_digits >= 0 {
                    frac_digits += 1;
                }
            }
            b'.' if frac_digits < 0 => frac_digits = 0,
            _ => return parse_slow(s),
        }
    }
    if frac_digits == 0 && digits.len() == 1 {
        return None; // a lone "."
    }
    // At most 15 digits, so the mantissa is exact; dividing by an exact power of ten rounds
    // once, to the same double the standard parser returns.
    let mut v = mantissa as f64;
    if frac_digits > 0 {
        v /= POW10[frac_digits as usize];
    }
    Some(if neg { -v } else { v })
}

/// One whitespace-separated field of a line: its text, and its value when the fast path
/// read it as a plain decimal number (otherwise the caller may try harder: a `K` suffix, a
/// decimal comma, an exponent).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Cell<'a> {
    pub(crate) text: &'a str,
    pub(crate) num: Option<f64>,
}

/// Splits a line on spaces and tabs and reads plain decimal numbers in the same pass: the hot
/// loop of the vmstat and sar readers.
pub(crate) fn scan_cells<'a>(line: &'a str, out: &mut Vec<Cell<'a>>) {
    out.clear();
    let b = line.as_bytes();
    let n = b.len();
    let mut i = 0;
    while i < n {
        while i < n && (b[i] == b' ' || b[i] == b'\t') {
            i += 1;
        }
        if i >= n {
            break;
        }
        let start = i;
        let neg = b[i] == b'-';
        if neg {
            i += 1;
        }
        let mut mantissa: u64 = 0;
        let mut digits = 0u32;
        let mut frac: i32 = -1;
        let mut ok = true;
        while i < n && b[i] != b' ' && b[i] != b'\t' {
            let c = b[i];
            if c.is_ascii_digit() {
                mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
                digits += 1;
                if frac >= 0 {
                    frac += 1;
                }
            } else if c == b'.' && frac < 0 {
                frac = 0;
            } else {
                ok = false;
            }
            i += 1;
        }
        let text = &line[start..i];
        let num = (ok && digits > 0 && digits <= 15).then(|| {
            let mut v = mantissa as f64;
            if frac > 0 {
                v /= POW10[frac as usize];
            }
            if neg {
                -v
            } else {
                v
            }
        });
        out.push(Cell { text, num });
    }
}

const POW10: [f64; 17] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
];

fn parse_slow(s: &str) -> Option<f64> {
    let first = s.as_bytes().first()?;
    // Refuse words the standard parser accepts ("inf", "NaN", "infinity").
    if !(first.is_ascii_digit() || matches!(first, b'-' | b'+' | b'.')) {
        return None;
    }
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A finite, non-negative decimal number (`12`, `0.26`, `1e3`): [`parse_number`] without a
/// sign, so `-0` and `+1` are refused too.
pub(crate) fn parse_nonneg(s: &str) -> Option<f64> {
    let first = s.bytes().next()?;
    if !(first.is_ascii_digit() || first == b'.') {
        return None;
    }
    parse_number(s)
}

/// Digits only, as a u64.
pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A metric name in snake_case from a foreign column header: `%util` → `util_pct`,
/// `rxpck/s` → `rxpck_per_s`, `Mem Total` → `mem_total`. Never empty; a leading digit gets
/// a `col_` prefix so the name stays an identifier.
pub(crate) fn sanitize_metric_name(raw: &str) -> String {
    let mut s = raw.trim().to_string();
    let mut suffix = String::new();
    if let Some(rest) = s.strip_prefix('%') {
        s = rest.to_string();
        suffix.push_str("_pct");
    }
    let s = s.replace("/s", "_per_s").replace('%', "_pct_");
    let mut out = String::with_capacity(s.len() + suffix.len());
    let mut prev_us = true;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
            prev_us = false;
        } else if !prev_us {
            out.push('_');
            prev_us = true;
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    if !suffix.is_empty() && !out.ends_with("_pct") && out != "pct" {
        out.push_str(&suffix);
    }
    if out.is_empty() {
        return "col".to_string();
    }
    if out.as_bytes()[0].is_ascii_digit() {
        out.insert_str(0, "col_");
    }
    out
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub(crate) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `HH:MM:SS[.frac]` to seconds of the day.
pub(crate) fn parse_clock(s: &str) -> Option<f64> {
    let mut it = s.splitn(3, ':');
    let h: u32 = it.next()?.parse().ok()?;
    let m: u32 = it.next()?.parse().ok()?;
    let sec_text = it.next().unwrap_or("0");
    if sec_text.is_empty() || !sec_text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let sec: f64 = sec_text.parse().ok()?;
    if h > 24 || m > 59 || !(0.0..61.0).contains(&sec) {
        return None;
    }
    Some(f64::from(h * 3600 + m * 60) + sec)
}

/// `YYYY-MM-DD` to days since the epoch.
pub(crate) fn parse_iso_date(s: &str) -> Option<i64> {
    let mut it = s.splitn(3, '-');
    let y: i64 = it.next()?.parse().ok()?;
    let m: u32 = it.next()?.parse().ok()?;
    let d: u32 = it.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || !(1000..=9999).contains(&y) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

/// An ISO 8601 date and time: `2015-07-22T02:48:06`, `2026-11-21 23:59:31`, with optional
/// fractional seconds and an optional `Z`, `UTC` or `±hh:mm` zone. Returns seconds since the
/// epoch (the wall clock read as UTC when no zone is given) and whether a zone was given.
pub(crate) fn parse_iso_datetime(s: &str) -> Option<(f64, bool)> {
    let s = s.trim();
    let (date, rest) = s.split_at(s.find(['T', ' '])?);
    let days = parse_iso_date(date)?;
    let rest = rest[1..].trim();
    let (clock, zone) = match rest.find(['Z', '+', '-', ' ']) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    let secs = parse_clock(clock)?;
    let (offset, zoned) = match zone {
        "" => (0.0, false),
        "Z" | "UTC" | "GMT" | "+00:00" | "+0000" => (0.0, true),
        z => {
            let sign = match z.as_bytes()[0] {
                b'+' => 1.0,
                b'-' => -1.0,
                _ => return None,
            };
            let digits: String = z[1..].chars().filter(char::is_ascii_digit).collect();
            if digits.len() != 4 {
                return None;
            }
            let h: f64 = digits[..2].parse().ok()?;
            let m: f64 = digits[2..].parse().ok()?;
            (sign * (h * 3600.0 + m * 60.0), true)
        }
    };
    Some((days as f64 * 86_400.0 + secs - offset, zoned))
}

/// The median step between consecutive increasing times, or `None` with fewer than two.
pub(crate) fn median_step(times: &[f64]) -> Option<f64> {
    let mut steps: Vec<f64> = times
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0.0 && d.is_finite())
        .collect();
    if steps.is_empty() {
        return None;
    }
    steps.sort_by(f64::total_cmp);
    Some(steps[steps.len() / 2])
}

/// Whether a log shows a column-group line followed by its column-name line (vmstat's
/// `procs memory …` over ` r  b …`) among its first 32 non-blank lines. Otherwise, the first
/// non-blank line and its number, for the caller's explanation.
pub(crate) fn sniff_header_pair(
    text: &str,
    is_group_line: impl Fn(&str) -> bool,
    is_column_line: impl Fn(&str) -> bool,
) -> Result<(), (usize, String)> {
    let mut first: Option<(usize, String)> = None;
    let mut prev_group = false;
    for (n, line) in numbered_lines(text)
        .filter(|(_, l)| !l.trim().is_empty())
        .take(32)
    {
        let t = line.trim();
        if first.is_none() {
            first = Some((n, shorten(t, 50)));
        }
        if prev_group && is_column_line(t) {
            return Ok(());
        }
        prev_group = is_group_line(t);
    }
    Err(first.unwrap_or((1, String::new())))
}

/// True for the column-name line of a vmstat table (` r  b …`), Linux or FreeBSD.
pub(crate) fn is_vmstat_column_header(t: &str) -> bool {
    t.starts_with("r ") && t.split_ascii_whitespace().nth(1) == Some("b")
}

/// The command line a log shows (`$ vmstat -S M 5`) before line `data_starts_at`, if any:
/// the arguments after `vmstat`.
pub(crate) fn command_args(text: &str, data_starts_at: usize) -> Option<Vec<&str>> {
    for (n, line) in numbered_lines(text) {
        if n >= data_starts_at {
            break;
        }
        let toks: Vec<&str> = line.split_ascii_whitespace().collect();
        if let Some(i) = toks
            .iter()
            .position(|t| *t == "vmstat" || t.ends_with("/vmstat"))
        {
            return Some(toks[i + 1..].to_vec());
        }
    }
    None
}

/// What is wrong with one data row of a table read by its header: the 1-based column, what
/// was expected there and what was found instead.
pub(crate) struct RowProblem {
    pub(crate) column: usize,
    pub(crate) expected: String,
    pub(crate) found: String,
}

/// The problem of a row `t` with `count` fields under a header (on line `header_line`) that
/// names `want`, if the counts differ.
pub(crate) fn field_count_problem(
    count: usize,
    want: usize,
    header_line: usize,
    t: &str,
) -> Option<RowProblem> {
    (count != want).then(|| RowProblem {
        column: count.min(want) + 1,
        expected: format!("{want} fields as in the header on line {header_line}"),
        found: format!("{count} fields: {t}"),
    })
}

/// A bad row on line `n`: on the log's last line it is a write cut short, so it becomes a
/// warning and `Ok` (the caller stops reading); anywhere else it is the error.
pub(crate) fn truncated_last_row_or_error(
    opts: &ImportOptions,
    n: usize,
    last_line: usize,
    problem: RowProblem,
    warnings: &mut Vec<String>,
) -> Result<(), ImportError> {
    let RowProblem {
        column,
        expected,
        found,
    } = problem;
    if n == last_line {
        warnings.push(format!(
            "{}: line {n}: ignored a truncated last line (column {column}: expected {expected})",
            file(opts)
        ));
        return Ok(());
    }
    Err(error(opts, n, Some(column), expected, &found))
}

/// The end of a table import: the series goes into the Run with its row times (`None`: the
/// builder's row times are the log rows' numbers, 1, 2…, and row `n` ends at `n · interval_s`),
/// a log kept as coarser rows says so in the notes, a log without data rows is warned about,
/// and the warnings are kept in the notes too so they are stored with the Run.
pub(crate) fn finish_table(
    mut run: Run,
    b: SeriesBuilder,
    interval_s: f64,
    row_times: Option<Vec<f64>>,
    mut warnings: Vec<String>,
    opts: &ImportOptions,
) -> Imported {
    let rows = b.rows();
    if rows == 0 {
        warnings.push(format!("{}: no data lines after the header", file(opts)));
    }
    run.notes.extend(b.coarse_note(interval_s));
    let mut series = b.finish(interval_s);
    // Without clock times, each row's time is its (last) log row's number of intervals.
    series.t_s = row_times.unwrap_or_else(|| series.t_s.iter().map(|n| n * interval_s).collect());
    run.series = series;
    run.notes.extend(warnings.iter().cloned());
    Imported {
        run,
        warnings,
        clock: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Byte-wise FNV-1a, the reference the word-wise hash matches on short inputs.
    fn fnv1a64(bytes: &[u8]) -> u64 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in bytes {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        hash
    }

    #[test]
    fn fnv1a_known_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        // Under 8 bytes the word-wise hash is the byte-wise one.
        assert_eq!(content_run_id("foobar"), "import-85944171f739");
        assert_eq!(fnv1a64_words(b"foobar"), fnv1a64(b"foobar"));
        // Pinned: changing the hash would change every imported run's id.
        assert_eq!(
            content_run_id("a longer text of several words"),
            "import-a4d75fd81289"
        );
    }

    #[test]
    fn runs_name_their_source() {
        let opts = ImportOptions::default();
        let run = new_run("x", "hello", &opts);
        assert_eq!(run.run_id, content_run_id("hello"));
        assert!(run.meta.complete);
        assert_eq!(
            run.source,
            RunSource::Imported {
                format: "x".into(),
                file: "-".into()
            }
        );
    }

    /// The two `error` helpers differed: one named an unnamed file `""` and kept a line 0,
    /// the other said `-` (stdin, as `ImportOptions::file` documents) and line 1. Every reader
    /// now says `-` and a 1-based line, in errors and in the table readers' warnings alike.
    #[test]
    fn an_unnamed_file_is_stdin_everywhere() {
        let opts = ImportOptions::default();
        let e = error(&opts, 0, Some(2), "a number", "x");
        assert_eq!((e.file.as_str(), e.line), ("-", 1));
        let mut warnings = Vec::new();
        let problem = field_count_problem(2, 3, 1, "1 2").unwrap();
        truncated_last_row_or_error(&opts, 5, 5, problem, &mut warnings).unwrap();
        assert!(warnings[0].starts_with("-: line 5: "), "{warnings:?}");
        let done = finish_table(
            new_run("x", "", &opts),
            SeriesBuilder::new(),
            1.0,
            None,
            Vec::new(),
            &opts,
        );
        assert_eq!(done.warnings, ["-: no data lines after the header"]);
        let table = crate::import(crate::Format::Table, "a b\n1 2\n1\n", &opts).unwrap();
        let first = table.warnings.first().map_or("", String::as_str);
        assert!(
            first.starts_with("-: line 3: ignored a truncated last row"),
            "{first}"
        );
    }

    #[test]
    fn numbers_and_quotes() {
        assert_eq!(parse_nonneg("0.26"), Some(0.26));
        assert_eq!(parse_nonneg("-1"), None);
        assert_eq!(parse_nonneg("inf"), None);
        assert_eq!(parse_u64("12a"), None);
        assert_eq!(unquote("> > 12 34"), " 12 34");
        assert_eq!(fields(" a  bc d")[1], (4, "bc"));
    }

    /// `parse_nonneg` was a second decimal parser beside [`parse_number`]; it now reads with
    /// it and gives what the standard parser gives on unsigned, finite numbers.
    #[test]
    fn nonneg_numbers_match_std() {
        let std_nonneg = |s: &str| {
            let first = s.bytes().next()?;
            if !(first.is_ascii_digit() || first == b'.') {
                return None;
            }
            s.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0)
        };
        for s in [
            "0",
            "0.26",
            "12",
            "1e3",
            ".5",
            "5.",
            "0.",
            ".",
            "",
            "-0",
            "+1",
            "-1",
            "inf",
            "nan",
            "1e999",
            "123456789012345678",
            "0.000000000000001",
            "1.2.3",
            "12K",
            "1,5",
        ] {
            assert_eq!(parse_nonneg(s), std_nonneg(s), "{s}");
        }
    }

    #[test]
    fn fast_number_parse_matches_std() {
        for s in [
            "0",
            "42",
            "-3.5",
            "+0.25",
            "94.53",
            "12345678.123",
            "0.1",
            "7",
            "1e6",
            "5.",
            ".5",
            "123456789012345678",
            "9007199254740993",
            "0.000000000000001",
        ] {
            assert_eq!(parse_number(s), s.parse::<f64>().ok(), "{s}");
        }
        for s in ["", "-", ".", "abc", "1.2.3", "nan", "inf", "1,5", "12K"] {
            assert_eq!(parse_number(s), None, "{s}");
        }
    }

    #[test]
    fn scan_cells_reads_numbers_and_keeps_text() {
        let mut out = Vec::new();
        scan_cells(" 12  -3.50\tall 7,5 1e3 12345678901234567 5. ", &mut out);
        let got: Vec<(&str, Option<f64>)> = out.iter().map(|c| (c.text, c.num)).collect();
        assert_eq!(
            got,
            [
                ("12", Some(12.0)),
                ("-3.50", Some(-3.5)),
                ("all", None),
                ("7,5", None),
                ("1e3", None),
                ("12345678901234567", None),
                ("5.", Some(5.0))
            ]
        );
        scan_cells("é 1", &mut out);
        assert_eq!(
            out,
            [
                Cell {
                    text: "é",
                    num: None
                },
                Cell {
                    text: "1",
                    num: Some(1.0)
                }
            ]
        );
        scan_cells("", &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn names_are_snake_case() {
        assert_eq!(sanitize_metric_name("%util"), "util_pct");
        assert_eq!(sanitize_metric_name("rxpck/s"), "rxpck_per_s");
        assert_eq!(sanitize_metric_name("Mem Total"), "mem_total");
        assert_eq!(sanitize_metric_name("ip-frag"), "ip_frag");
        assert_eq!(sanitize_metric_name("1"), "col_1");
        assert_eq!(sanitize_metric_name("%%"), "pct");
        assert_eq!(sanitize_metric_name("//"), "col");
    }

    #[test]
    fn dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(
            parse_iso_datetime("2026-11-21T23:15:02Z"),
            Some((1_795_302_902.0, true))
        );
        assert_eq!(
            parse_iso_datetime("2026-11-21 23:15:02 UTC"),
            Some((1_795_302_902.0, true))
        );
        assert_eq!(
            parse_iso_datetime("2026-11-22T00:15:02+01:00"),
            Some((1_795_302_902.0, true))
        );
        assert_eq!(
            parse_iso_datetime("2026-11-21 23:15:02"),
            Some((1_795_302_902.0, false))
        );
        assert_eq!(parse_iso_datetime("2026-13-21 23:15:02"), None);
        assert_eq!(parse_clock("23:59:60"), Some(86_400.0));
        assert_eq!(parse_clock("25:00:00"), None);
    }
}
