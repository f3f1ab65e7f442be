//! Pure parsers for the /proc and /sys files netceil reads.
//!
//! Each module turns the text of one file into typed values with `parse(text)`, and does no
//! I/O, so the same code reads the live machine, a test fixture, or a snapshot found in a
//! sosreport (the importers call these functions directly). Errors are [`ParseError`]s naming
//! the file, the line, the field and what was expected; a parser never panics.
//!
//! Parsers are strict about what they need and lenient about what they do not: unknown lines
//! and extra trailing columns added by newer kernels are ignored, a missing or malformed
//! required value is an error.

pub mod interrupts;
pub mod net_dev;
pub mod netstat;
pub mod pressure;
pub mod proc_stat;
pub mod snmp;
pub mod sockets;
pub mod softirqs;
pub mod softnet;
pub mod sys_net;
pub mod task_io;
pub mod task_stat;
pub mod task_status;

use crate::error::{Found, ParseError};

/// A cursor over the whitespace-separated fields of one line, which knows where it is so that
/// every error can say so.
pub(crate) struct Line<'a> {
    source: &'static str,
    number: usize,
    text: &'a str,
    pos: usize,
    field: usize,
}

impl<'a> Line<'a> {
    pub(crate) fn new(source: &'static str, number: usize, text: &'a str) -> Self {
        Line {
            source,
            number,
            text,
            pos: 0,
            field: 0,
        }
    }

    /// The next field, or `None` at the end of the line.
    pub(crate) fn next_field(&mut self) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        let mut start = self.pos;
        while start < bytes.len() && bytes[start].is_ascii_whitespace() {
            start += 1;
        }
        if start >= bytes.len() {
            self.pos = start;
            return None;
        }
        let mut end = start;
        while end < bytes.len() && !bytes[end].is_ascii_whitespace() {
            end += 1;
        }
        self.pos = end;
        self.field += 1;
        Some(&self.text[start..end])
    }

    /// The next field without consuming it.
    pub(crate) fn peek_field(&self) -> Option<&'a str> {
        let rest = &self.text[self.pos..];
        rest.split_ascii_whitespace().next()
    }

    /// Everything after the fields consumed so far, without surrounding whitespace.
    pub(crate) fn rest(&self) -> &'a str {
        self.text[self.pos..].trim()
    }

    /// How many fields have been consumed.
    pub(crate) fn fields_read(&self) -> usize {
        self.field
    }

    pub(crate) fn error(
        &self,
        field: Option<usize>,
        expected: impl Into<String>,
        found: Found,
    ) -> ParseError {
        ParseError::new(self.source, self.number, field, expected, found)
    }

    /// The next field, which must exist.
    pub(crate) fn expect(&mut self, expected: &str) -> Result<&'a str, ParseError> {
        match self.next_field() {
            Some(f) => Ok(f),
            None => Err(self.error(Some(self.field + 1), expected, Found::EndOfLine)),
        }
    }

    /// The next field as a decimal unsigned integer.
    pub(crate) fn u64(&mut self, expected: &str) -> Result<u64, ParseError> {
        let f = self.expect(expected)?;
        parse_u64(f).ok_or_else(|| self.error(Some(self.field), expected, Found::text(f)))
    }

    /// The next field as a decimal unsigned integer, or `None` at the end of the line.
    pub(crate) fn opt_u64(&mut self, expected: &str) -> Result<Option<u64>, ParseError> {
        match self.next_field() {
            None => Ok(None),
            Some(f) => parse_u64(f)
                .map(Some)
                .ok_or_else(|| self.error(Some(self.field), expected, Found::text(f))),
        }
    }

    /// The next field as a hexadecimal unsigned integer (no `0x`).
    pub(crate) fn hex_u64(&mut self, expected: &str) -> Result<u64, ParseError> {
        let f = self.expect(expected)?;
        parse_hex_u64(f).ok_or_else(|| self.error(Some(self.field), expected, Found::text(f)))
    }

    /// The next field as a decimal signed integer.
    pub(crate) fn i64(&mut self, expected: &str) -> Result<i64, ParseError> {
        let f = self.expect(expected)?;
        f.parse::<i64>()
            .ok()
            .filter(|_| f.bytes().last().is_some_and(|b| b.is_ascii_digit()))
            .ok_or_else(|| self.error(Some(self.field), expected, Found::text(f)))
    }
}

/// Digits only: no sign, no spaces, no empty string.
pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

pub(crate) fn parse_hex_u64(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

/// Parses a `CPU0 CPU1 …` header line into CPU numbers (offline CPUs may be absent, so the
/// numbers are kept rather than assumed to be 0..n).
pub(crate) fn cpu_header(
    source: &'static str,
    number: usize,
    text: &str,
) -> Result<Vec<u32>, ParseError> {
    let mut line = Line::new(source, number, text);
    let mut cpus = Vec::new();
    while let Some(f) = line.next_field() {
        let id = f
            .strip_prefix("CPU")
            .and_then(parse_u64)
            .and_then(|n| u32::try_from(n).ok());
        match id {
            Some(id) => cpus.push(id),
            None => {
                return Err(line.error(
                    Some(line.fields_read()),
                    "a CPU column header such as 'CPU0'",
                    Found::text(f),
                ))
            }
        }
    }
    if cpus.is_empty() {
        return Err(line.error(
            Some(1),
            "a header line of CPU columns ('CPU0 CPU1 …')",
            Found::EndOfLine,
        ));
    }
    Ok(cpus)
}

/// The first non-blank line and its 1-based number, or an error naming the empty input.
pub(crate) fn first_line<'a>(
    source: &'static str,
    text: &'a str,
    expected: &str,
) -> Result<(usize, &'a str), ParseError> {
    text.lines()
        .enumerate()
        .find(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l))
        .ok_or_else(|| ParseError::new(source, 1, None, expected, Found::EndOfInput))
}

/// The whitespace-separated tokens of a line, each with its byte offset in the line: for
/// layouts where what lies between tokens matters (a chip name with spaces, a lock name),
/// so a token's position is needed to slice the text around it. The /proc parsers and the
/// importers split lines with this one function so they agree on what whitespace is.
pub fn token_spans(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let bytes = line.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        (i > start).then(|| (start, &line[start..i]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_spans_give_offsets_and_skip_runs_of_whitespace() {
        let spans: Vec<_> = token_spans(" a  bc\td\n").collect();
        assert_eq!(spans, [(1, "a"), (4, "bc"), (7, "d")]);
        assert_eq!(token_spans(" \t ").count(), 0);
        assert_eq!(token_spans("").count(), 0);
    }

    #[test]
    fn line_cursor_reports_field_positions() {
        let mut l = Line::new("/proc/x", 3, "  a 12  zz ");
        assert_eq!(l.expect("a name").unwrap(), "a");
        assert_eq!(l.u64("a number").unwrap(), 12);
        let e = l.hex_u64("a hex number").unwrap_err();
        assert_eq!(e.field, Some(3));
        assert_eq!(
            e.to_string(),
            "/proc/x: line 3, field 3: expected a hex number, found 'zz'"
        );
        let e = l.u64("a number").unwrap_err();
        assert_eq!(e.found, Found::EndOfLine);
        assert_eq!(e.field, Some(4));
    }

    #[test]
    fn numbers_reject_signs_and_junk() {
        assert_eq!(parse_u64("+1"), None);
        assert_eq!(parse_u64(""), None);
        assert_eq!(parse_u64("18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64("18446744073709551616"), None);
        assert_eq!(parse_hex_u64("0000001f"), Some(31));
        assert_eq!(parse_hex_u64("0x1f"), None);
    }
}
