//! The importers' line reader: a log as text, read within limits that every log netceil
//! imports fits, so that no input (`/dev/zero`, an endless pipe, one enormous line) can
//! exhaust the machine.
//!
//! A line of a log is at most [`MAX_LINE_BYTES`]: the widest real ones (a /proc/interrupts row
//! on thousands of CPUs, a sadf row with every column) are a few hundred kilobytes. JSON on
//! one line (iperf3 output passed through `jq -c`) can be longer: pretty-print it first
//! (`jq . FILE`), as iperf3 itself writes it. A log read whole is at most [`MAX_LOG_BYTES`]
//! in all: a day of one-second samples of most tools is well under it; a longer capture can
//! be cut into parts (`split -l`). A vmstat (Linux or FreeBSD), sar or mpstat log is read line
//! by line ([`LogLines`], through [`crate::import_log`]) and has no such limit: its length
//! costs neither text held nor rows (a series keeps at most [`crate::MAX_ROWS`]).

use std::io::Read;

use netceil_model::input::{read_text, InputError, TextLimits};

/// The longest line of a log, bytes (its newline not counted).
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// The most bytes of one log read whole (every format but vmstat, sar and mpstat, which stream).
pub const MAX_LOG_BYTES: usize = 256 << 20;

/// The limits every imported log is read within.
pub const LOG_LIMITS: TextLimits = TextLimits {
    max_bytes: MAX_LOG_BYTES,
    max_line: MAX_LINE_BYTES,
};

/// Reads a log from `reader` (a file, standard input) as text. `file` names it in errors
/// (`-` for standard input): `FILE:LINE: line longer than 1 MiB …`, `FILE: more than
/// 256 MiB …`, `FILE:LINE: not text …`.
pub fn read_log(reader: impl Read, file: &str) -> Result<String, InputError> {
    read_text(reader, file, LOG_LIMITS)
}

/// A log read one line at a time, so that a capture of any length is imported with only one
/// line of its text held (plus the few at its head an importer looks ahead at): each line
/// within [`MAX_LINE_BYTES`] and UTF-8, or an error naming the file and the line.
///
/// Lines come as `str::split('\n')` would cut the whole text: a text ending in a newline ends
/// with one empty line, and an empty text is one empty line.
pub struct LogLines<R> {
    r: std::io::BufReader<R>,
    file: String,
    /// The number of the next line, and the bytes of the input before it.
    line: usize,
    offset: usize,
    done: bool,
    buf: Vec<u8>,
    /// The most bytes held for one line so far (the buffer's capacity).
    held: usize,
    /// The most bytes of lines an importer held to look ahead.
    ahead: usize,
}

impl<R: Read> LogLines<R> {
    pub fn new(reader: R, file: &str) -> Self {
        LogLines {
            r: std::io::BufReader::with_capacity(64 * 1024, reader),
            file: file.to_string(),
            line: 1,
            offset: 0,
            done: false,
            buf: Vec::new(),
            held: 0,
            ahead: 0,
        }
    }

    /// The name in errors.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The most bytes of the log's text held at once in a streaming import: the read buffer,
    /// the line (as read, as text and as cleaned: three copies of the longest) and the lines
    /// an importer read ahead at their most. It holds this much of the log, not the log.
    pub fn bytes_held(&self) -> usize {
        self.r.capacity() + 3 * self.held + self.ahead
    }

    /// Says how many bytes of lines an importer holds to look ahead.
    pub(crate) fn note_ahead(&mut self, bytes: usize) {
        self.ahead = self.ahead.max(bytes);
    }

    /// The next line (its number and its text, without the newline), `None` after the last.
    pub fn next_line(&mut self) -> Result<Option<(usize, String)>, InputError> {
        use std::io::{BufRead, ErrorKind};
        if self.done {
            return Ok(None);
        }
        self.buf.clear();
        let ended = loop {
            let chunk = match self.r.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(InputError::Read {
                        name: self.file.clone(),
                        source,
                    })
                }
            };
            if chunk.is_empty() {
                break false;
            }
            let (piece, ends) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (&chunk[..i], true),
                None => (chunk, false),
            };
            if self.buf.len() + piece.len() > MAX_LINE_BYTES {
                return Err(InputError::LineTooLong {
                    name: self.file.clone(),
                    line: self.line,
                    limit: MAX_LINE_BYTES,
                });
            }
            self.buf.extend_from_slice(piece);
            let used = piece.len() + usize::from(ends);
            self.r.consume(used);
            if ends {
                break true;
            }
        };
        self.held = self.held.max(self.buf.capacity());
        let n = self.line;
        let text = match std::str::from_utf8(&self.buf) {
            Ok(t) => t.to_string(),
            Err(e) => {
                return Err(InputError::NotText {
                    name: self.file.clone(),
                    line: n,
                    offset: self.offset + e.valid_up_to(),
                })
            }
        };
        self.offset += self.buf.len() + usize::from(ended);
        self.line += 1;
        self.done = !ended;
        Ok(Some((n, text)))
    }
}
