//! netceil-import: other tools' logs into netceil Runs, so a vmstat capture from a FreeBSD
//! router, a lock profile from a mailing-list post or iperf3 JSON from last week is diagnosed
//! like a live run.
//!
//! Every reader is a pure, total function from text to a [`Run`]: it never panics, reads no
//! file itself, and every error names the file, the line, the column and what was expected.
//! The text comes through [`read_log`], which bounds the whole and each line.
//! A log cut short imports what is valid and says so in [`Imported::warnings`]; columns a
//! reader does not know are kept as extra metrics, never dropped.
//!
//! A log that parses but cannot be true of a real machine (two captures interleaved, a log
//! pasted twice, a counter reset, a wrapped table) still imports, with each impossible fact
//! and its line in `run.meta.implausible` and in the warnings; the checks are shared by the
//! readers (`formats::plausible`).

mod error;
pub mod formats;
mod join;
mod log;
mod read;

pub use error::{ImportError, NotThisFormat};
pub use formats::builder::MAX_ROWS;
pub use formats::{detect, import, terminal_text, Format};
pub use join::{join, Clock, JoinError};
pub use log::{import_log, LogError, HEAD_BYTES};
pub use netceil_model::input::InputError;
pub use read::{read_log, LogLines, LOG_LIMITS, MAX_LINE_BYTES, MAX_LOG_BYTES};

use netceil_model::{Annotations, Run};
use std::collections::BTreeMap;

/// What the person tells the importer that the log cannot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportOptions {
    /// The file name to use in the Run and in errors (`-` for stdin).
    pub file: String,
    /// Sampling interval for logs whose lines carry no time (vmstat 1 → 1 s). Default 1 s.
    pub interval_s: Option<f64>,
    /// Throughput, link, bus: copied into `run.meta.annotations`.
    pub annotations: Annotations,
    pub labels: BTreeMap<String, String>,
}

/// A log turned into a Run.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub run: Run,
    /// Lines skipped or flagged (a since-boot first line, a truncated last line…), in words.
    pub warnings: Vec<String>,
    /// The wall-clock time of the series' start, when the log tells it but the run cannot
    /// keep it (local time without a zone); `None` also when `run.meta.started_unix_s` has it.
    /// [`join`] places several logs on one timeline by it.
    pub clock: Option<Clock>,
}
