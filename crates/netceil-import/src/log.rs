//! A log as `netceil analyze` takes it: detected from its head, then read line by line when
//! its format's reader streams (Linux and FreeBSD vmstat, sar, mpstat), so that a capture of any length is imported with a bounded
//! part of its text held; otherwise read whole, within [`crate::MAX_LOG_BYTES`].

use std::io::{Cursor, Read};

use crate::formats::{mpstat, sar, vmstat_freebsd, vmstat_linux, Format};
use crate::{
    detect, import, read_log, ImportError, ImportOptions, Imported, InputError, LogLines,
    NotThisFormat,
};

/// The bytes of a log read before its format is chosen. A log no longer than this is read
/// whole, as before streaming; a longer one is detected from this much of it.
pub const HEAD_BYTES: usize = 8 << 20;

/// Why a log could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// It could not be read as text (named by file and line).
    #[error(transparent)]
    Input(#[from] InputError),
    /// It holds no text but blank lines (`file`: its name, `stdin` for `-`).
    #[error("{file} is empty: expected a log to analyze (vmstat, sar, mpstat, iperf3 --json, a lock profile…; `netceil analyze --help` lists them)")]
    Empty { file: String },
    /// No reader knows it: each one's reason.
    #[error("{file}: format not recognised; give --format NAME{}", why(.reasons))]
    Unrecognised {
        file: String,
        reasons: Vec<NotThisFormat>,
    },
    /// It is longer than [`crate::MAX_LOG_BYTES`] and its format is one read whole.
    #[error("{file}: more than {} MiB, the most netceil reads of a log it reads whole ({}); only vmstat (Linux and FreeBSD), sar and mpstat logs are read line by line, with no limit. Cut it into parts (`split -l`) and import each", limit >> 20, format.map_or("its format not recognised from its first 8 MiB".to_string(), |f| format!("a {f} log")))]
    TooLarge {
        file: String,
        format: Option<&'static str>,
        limit: usize,
    },
    /// Its reader refused it (named by file, line and what was expected).
    #[error(transparent)]
    Import(#[from] ImportError),
}

/// Imports the log in `reader` (`opts.file` names it in errors), in `format`, or in the
/// format detected from its first [`HEAD_BYTES`]. A vmstat (Linux or FreeBSD), sar or mpstat
/// log longer than that is read line by line, with no limit on its length (and kept in at
/// most [`crate::MAX_ROWS`] rows); any other log is read whole, within
/// [`crate::MAX_LOG_BYTES`] (the error says so).
pub fn import_log(
    mut reader: impl Read,
    format: Option<Format>,
    opts: &ImportOptions,
) -> Result<Imported, LogError> {
    let file = if opts.file.is_empty() {
        "-"
    } else {
        &opts.file
    };
    let mut head = Vec::new();
    (&mut reader)
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|source| InputError::Read {
            name: file.to_string(),
            source,
        })?;
    let mut extra = [0u8; 1];
    let more = loop {
        match reader.read(&mut extra) {
            Ok(n) => break n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(InputError::Read {
                    name: file.to_string(),
                    source,
                }
                .into())
            }
        }
    };
    head.extend_from_slice(&extra[..more]);
    if more == 0 {
        // All of it is in memory already: read, detected and imported whole.
        let text = read_log(&head[..], file)?;
        return whole(&text, format, opts);
    }
    // The head up to its last whole line, for detection.
    let cut = head.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let chosen = match format {
        Some(f) => Some(f),
        None => detect(&read_log(&head[..cut], file)?).ok(),
    };
    let rest = Cursor::new(head).chain(reader);
    match chosen {
        Some(Format::VmstatLinux) => {
            let mut lines = LogLines::new(rest, file);
            return Ok(vmstat_linux::import_lines(
                &mut lines,
                opts,
                &Default::default(),
            )?);
        }
        Some(Format::VmstatFreebsd) => {
            let mut lines = LogLines::new(rest, file);
            return Ok(vmstat_freebsd::import_lines(&mut lines, opts)?);
        }
        Some(Format::Sar) => {
            let mut lines = LogLines::new(rest, file);
            return Ok(sar::import_lines(&mut lines, opts)?);
        }
        Some(Format::Mpstat) => {
            let mut lines = LogLines::new(rest, file);
            return Ok(mpstat::import_lines(&mut lines, opts)?);
        }
        _ => {}
    }
    // Read whole, and detected from the whole text as a short log is.
    let text = read_log(rest, file).map_err(|e| match e {
        InputError::TooLarge { name, limit } => LogError::TooLarge {
            file: name,
            format: chosen.map(Format::name),
            limit,
        },
        e => e.into(),
    })?;
    whole(&text, format, opts)
}

/// Each reader's reason for refusing a log, a line each.
fn why(reasons: &[NotThisFormat]) -> String {
    reasons
        .iter()
        .map(|r| format!("\n  not {}: {}", r.format, r.reason))
        .collect()
}

/// A whole text: empty, detected (or given) and imported.
fn whole(text: &str, format: Option<Format>, opts: &ImportOptions) -> Result<Imported, LogError> {
    let file = match opts.file.as_str() {
        "" | "-" => "stdin",
        f => f,
    };
    if text.trim().is_empty() {
        return Err(LogError::Empty { file: file.into() });
    }
    let format = match format {
        Some(f) => f,
        None => detect(text).map_err(|reasons| LogError::Unrecognised {
            file: opts.file.clone(),
            reasons,
        })?,
    };
    Ok(import(format, text, opts)?)
}
