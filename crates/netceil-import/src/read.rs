//! The importers' line reader: a log as text, read within limits that every log netceil
//! imports fits, so that no input (`/dev/zero`, an endless pipe, one enormous line) can
//! exhaust the machine.
//!
//! A line of a log is at most [`MAX_LINE_BYTES`]: the widest real ones (a /proc/interrupts row
//! on thousands of CPUs, a sadf row with every column) are a few hundred kilobytes. JSON on
//! one line (iperf3 output passed through `jq -c`) can be longer: pretty-print it first
//! (`jq . FILE`), as iperf3 itself writes it. A log is at most [`MAX_LOG_BYTES`] in all:
//! a day of one-second samples of most tools is well under it; a longer capture can be cut
//! into parts (`split -l`).

use std::io::Read;

use netceil_model::input::{read_text, InputError, TextLimits};

/// The longest line of a log, bytes (its newline not counted).
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// The most bytes of one log.
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
