//! The lines an importer reads, from a whole text or from a log read line by line
//! ([`crate::LogLines`]), behind one interface, so that one importer serves both and a
//! capture of any length is read with one line held, plus the few at its head an importer
//! looks ahead at (at most [`LOOKAHEAD_BYTES`] of a stream).
//!
//! A stream's lines are cleaned as [`super::terminal_text`] cleans a whole text (without a
//! byte-order mark, carriage returns and escape sequences), and its run id is the one the
//! whole cleaned text would get ([`super::common::content_run_id`]).

use std::borrow::Cow;
use std::collections::VecDeque;
use std::io::Read;

use super::common::content_run_id;
use super::terminal_text;
use crate::{ImportError, InputError, LogLines};

/// The most bytes of a stream's head an importer may hold to look ahead (for its first header
/// and the command line above it).
pub const LOOKAHEAD_BYTES: usize = 1 << 20;

/// Where lines come from.
enum Source<'a, R> {
    Text {
        text: &'a str,
        lines: std::iter::Enumerate<std::str::Split<'a, char>>,
    },
    Stream {
        lines: &'a mut LogLines<R>,
        hash: Fnv,
    },
}

/// The lines of one log, with a look-ahead buffer.
pub(crate) struct Feed<'a, R> {
    src: Source<'a, R>,
    ahead: VecDeque<(usize, Cow<'a, str>)>,
    ahead_bytes: usize,
}

impl<'a> Feed<'a, std::io::Empty> {
    pub(crate) fn text(text: &'a str) -> Self {
        Feed {
            src: Source::Text {
                text,
                lines: text.split('\n').enumerate(),
            },
            ahead: VecDeque::new(),
            ahead_bytes: 0,
        }
    }
}

impl<'a, R: Read> Feed<'a, R> {
    pub(crate) fn stream(lines: &'a mut LogLines<R>) -> Self {
        Feed {
            src: Source::Stream {
                lines,
                hash: Fnv::default(),
            },
            ahead: VecDeque::new(),
            ahead_bytes: 0,
        }
    }
}

/// A reader's error as an import error: the file, the line, what was expected.
pub(crate) fn input_error(e: InputError) -> ImportError {
    match e {
        InputError::LineTooLong { name, line, limit } => ImportError::new(
            &name,
            line,
            None,
            format!("a line of at most {} MiB", limit >> 20),
            "a longer line",
        ),
        InputError::NotText { name, line, offset } => ImportError::new(
            &name,
            line,
            None,
            "text (UTF-8)",
            &format!("invalid UTF-8 at byte {offset} of the file"),
        ),
        InputError::Read { name, source } => {
            ImportError::new(&name, 1, None, "a readable log", &source.to_string())
        }
        InputError::TooLarge { name, limit } => {
            ImportError::new(&name, 1, None, format!("at most {limit} bytes"), "more")
        }
    }
}

impl<'a, R: Read> Feed<'a, R> {
    fn read(&mut self) -> Result<Option<(usize, Cow<'a, str>)>, ImportError> {
        match &mut self.src {
            Source::Text { lines, .. } => Ok(lines
                .next()
                .map(|(i, l)| (i + 1, Cow::Borrowed(l.strip_suffix('\r').unwrap_or(l))))),
            Source::Stream { lines, hash } => {
                let Some((n, raw)) = lines.next_line().map_err(input_error)? else {
                    return Ok(None);
                };
                let raw = match raw.strip_prefix('\u{feff}') {
                    Some(rest) if n == 1 => rest.to_string(),
                    _ => raw,
                };
                // Most lines need no cleaning: the line read is kept, not copied.
                let clean = match terminal_text(&raw) {
                    Cow::Borrowed(same) if same.len() == raw.len() => raw,
                    cleaned => cleaned.into_owned(),
                };
                if n > 1 {
                    hash.update(b"\n");
                }
                hash.update(clean.as_bytes());
                Ok(Some((n, Cow::Owned(clean))))
            }
        }
    }

    /// The next line and its 1-based number.
    pub(crate) fn next_line(&mut self) -> Result<Option<(usize, Cow<'a, str>)>, ImportError> {
        if let Some(l) = self.ahead.pop_front() {
            self.ahead_bytes -= l.1.len();
            return Ok(Some(l));
        }
        self.read()
    }

    /// Reads ahead to the first line (counting those already read ahead) for which `pred`
    /// holds, and returns its number; `None` when the log ends first, or, for a stream, when
    /// [`LOOKAHEAD_BYTES`] are held first.
    pub(crate) fn find_ahead(
        &mut self,
        mut pred: impl FnMut(&str) -> bool,
    ) -> Result<Option<usize>, ImportError> {
        if let Some((n, _)) = self.ahead.iter().find(|(_, l)| pred(l)) {
            return Ok(Some(*n));
        }
        let limited = matches!(self.src, Source::Stream { .. });
        while !limited || self.ahead_bytes < LOOKAHEAD_BYTES {
            let Some((n, l)) = self.read()? else {
                return Ok(None);
            };
            let found = pred(&l);
            self.ahead_bytes += l.len();
            self.ahead.push_back((n, l));
            if let Source::Stream { lines, .. } = &mut self.src {
                lines.note_ahead(self.ahead_bytes);
            }
            if found {
                return Ok(Some(n));
            }
        }
        Ok(None)
    }

    /// The lines read ahead and not yet taken.
    pub(crate) fn ahead(&self) -> impl Iterator<Item = (usize, &str)> {
        self.ahead.iter().map(|(n, l)| (*n, l.as_ref()))
    }

    /// Whether every line left is blank (reading them all).
    pub(crate) fn rest_blank(&mut self) -> Result<bool, ImportError> {
        let mut blank = true;
        while let Some((_, l)) = self.next_line()? {
            blank &= l.trim().is_empty();
        }
        Ok(blank)
    }

    /// Rows to expect at most (a whole text's line count; nothing for a stream).
    pub(crate) fn rows_hint(&self) -> usize {
        match &self.src {
            Source::Text { text, .. } => text.bytes().filter(|&c| c == b'\n').count() + 1,
            Source::Stream { .. } => 0,
        }
    }

    /// The run id of the whole log (see [`content_run_id`]); a stream is read to its end.
    pub(crate) fn run_id(&mut self) -> Result<String, ImportError> {
        if let Source::Text { text, .. } = &self.src {
            return Ok(content_run_id(text));
        }
        while self.next_line()?.is_some() {}
        match &self.src {
            Source::Stream { hash, .. } => Ok(hash.id()),
            Source::Text { text, .. } => Ok(content_run_id(text)),
        }
    }
}

/// [`super::common::fnv1a64_words`] over bytes given in pieces.
#[derive(Debug, Clone)]
struct Fnv {
    hash: u64,
    tail: [u8; 8],
    len: usize,
}

impl Default for Fnv {
    fn default() -> Self {
        Fnv {
            hash: 0xcbf2_9ce4_8422_2325,
            tail: [0; 8],
            len: 0,
        }
    }
}

const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

impl Fnv {
    fn word(&mut self, w: [u8; 8]) {
        self.hash ^= u64::from_le_bytes(w);
        self.hash = self.hash.wrapping_mul(FNV_PRIME);
    }

    fn update(&mut self, mut bytes: &[u8]) {
        if self.len > 0 {
            let take = (8 - self.len).min(bytes.len());
            self.tail[self.len..self.len + take].copy_from_slice(&bytes[..take]);
            self.len += take;
            bytes = &bytes[take..];
            if self.len < 8 {
                return;
            }
            self.word(self.tail);
            self.len = 0;
        }
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.word([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        }
        let rest = chunks.remainder();
        self.tail[..rest.len()].copy_from_slice(rest);
        self.len = rest.len();
    }

    fn id(&self) -> String {
        let mut hash = self.hash;
        for &b in &self.tail[..self.len] {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(FNV_PRIME);
        }
        let hex = format!("{hash:016x}");
        format!("import-{}", &hex[..12])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_hash_as_the_whole() {
        let text = "procs ---memory---\n r b\n 1 2 3 4 5 6 7 8 9\nend";
        for cut in [0, 1, 7, 8, 9, 15, 16, 17, text.len()] {
            let mut h = Fnv::default();
            h.update(&text.as_bytes()[..cut]);
            h.update(&text.as_bytes()[cut..]);
            assert_eq!(h.id(), content_run_id(text), "cut at {cut}");
        }
    }

    #[test]
    fn a_stream_reads_as_the_text() {
        let raw = "\u{feff}a\r\n\u{1b}[1mb\u{1b}[0m\n\nc";
        let clean = terminal_text(raw);
        let mut lines = LogLines::new(raw.as_bytes(), "x");
        let mut f = Feed::stream(&mut lines);
        let mut t = Feed::text(&clean);
        loop {
            let (a, b) = (f.next_line().unwrap(), t.next_line().unwrap());
            assert_eq!(a, b);
            if a.is_none() {
                break;
            }
        }
        assert_eq!(f.run_id().unwrap(), t.run_id().unwrap());
    }
}
