//! `/proc/PID/status` (and `/proc/PID/task/TID/status`): context switch counts.
//!
//! Field list: the kernel's Documentation/filesystems/proc.rst, table "Contents of the status
//! fields", and proc_pid_status(5). `Key:<tab>value` lines; only the keys below are read, and
//! a known key with a malformed value is an error. Voluntary switches mean the thread blocked
//! (waiting for a packet, a lock, a timer); involuntary ones mean it was preempted while runnable.

use super::parse_u64;
use crate::error::{Found, ParseError};

/// The file this parser is for (the sampler names the exact path).
pub const SOURCE: &str = "/proc/PID/status";

/// The fields netceil uses; a key the file lacks is `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskStatus {
    /// `Name:` (the comm, with escapes as the kernel prints them).
    pub name: Option<String>,
    /// `Tgid:`, the process id.
    pub tgid: Option<u32>,
    /// `Pid:`, the thread id.
    pub pid: Option<u32>,
    /// `Threads:`.
    pub threads: Option<u64>,
    pub voluntary_ctxt_switches: Option<u64>,
    pub nonvoluntary_ctxt_switches: Option<u64>,
}

/// Parses the text of a `status` file.
pub fn parse(text: &str) -> Result<TaskStatus, ParseError> {
    let mut out = TaskStatus::default();
    if text.trim().is_empty() {
        return Err(ParseError::new(
            SOURCE,
            1,
            None,
            "'Key:\tvalue' lines",
            Found::EndOfInput,
        ));
    }
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let number = i + 1;
        let Some((key, value)) = raw.split_once(':') else {
            return Err(ParseError::new(
                SOURCE,
                number,
                Some(1),
                "a 'Key:' at the start of the line",
                Found::text(raw),
            ));
        };
        let value = value.trim();
        let number_value = |what: &str| {
            parse_u64(value)
                .ok_or_else(|| ParseError::new(SOURCE, number, Some(2), what, Found::text(value)))
        };
        let id = |what: &str| {
            number_value(what).and_then(|v| {
                u32::try_from(v)
                    .map_err(|_| ParseError::new(SOURCE, number, Some(2), what, Found::text(value)))
            })
        };
        match key {
            "Name" => out.name = Some(value.to_string()),
            "Tgid" => out.tgid = Some(id("a process id")?),
            "Pid" => out.pid = Some(id("a thread id")?),
            "Threads" => out.threads = Some(number_value("a thread count")?),
            "voluntary_ctxt_switches" => {
                out.voluntary_ctxt_switches = Some(number_value("a context switch count")?)
            }
            "nonvoluntary_ctxt_switches" => {
                out.nonvoluntary_ctxt_switches = Some(number_value("a context switch count")?)
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Only the two context switch counters, without building the rest: the sampler reads this
/// file for every watched thread at every interval.
pub fn parse_ctxt_switches(text: &str) -> Result<(Option<u64>, Option<u64>), ParseError> {
    let mut voluntary = None;
    let mut nonvoluntary = None;
    for (i, raw) in text.lines().enumerate() {
        let (slot, value) = if let Some(v) = raw.strip_prefix("voluntary_ctxt_switches:") {
            (&mut voluntary, v)
        } else if let Some(v) = raw.strip_prefix("nonvoluntary_ctxt_switches:") {
            (&mut nonvoluntary, v)
        } else {
            continue;
        };
        let v = value.trim();
        *slot = Some(parse_u64(v).ok_or_else(|| {
            ParseError::new(
                SOURCE,
                i + 1,
                Some(2),
                "a context switch count",
                Found::text(v),
            )
        })?);
    }
    Ok((voluntary, nonvoluntary))
}
