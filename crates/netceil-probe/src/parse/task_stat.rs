//! `/proc/PID/task/TID/stat` (and `/proc/PID/stat`): one thread's state and CPU time.
//!
//! Field list: the kernel's Documentation/filesystems/proc.rst, table "Contents of the stat
//! fields", and proc_pid_stat(5); field numbers in errors follow proc(5) (1 = pid, 2 = comm).
//! The command name sits in parentheses and may itself hold spaces and parentheses
//! (`(tmux: server)`, `(a) b)`), so it runs from the first `(` to the *last* `)`.
//! Times are in USER_HZ ticks.

use super::{parse_u64, Line};
use crate::error::{Found, ParseError};

/// The file this parser is for (the sampler names the exact path).
pub const SOURCE: &str = "/proc/PID/task/TID/stat";

/// The fields netceil uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStat {
    /// Field 1: the thread id (the pid for /proc/PID/stat).
    pub tid: u32,
    /// Field 2, without the parentheses.
    pub comm: String,
    /// Field 3: `R`, `S`, `D`, `Z`, `T`, `t`, `X`, `I`…
    pub state: char,
    /// Field 4.
    pub ppid: u32,
    /// Field 14: user-mode CPU time, ticks.
    pub utime: u64,
    /// Field 15: kernel-mode CPU time, ticks.
    pub stime: u64,
    /// Field 19.
    pub nice: i64,
    /// Field 20.
    pub num_threads: u64,
    /// Field 22: start time after boot, ticks.
    pub starttime: u64,
    /// Field 39: the CPU it last ran on.
    pub processor: u32,
}

/// The last field read; everything after it is ignored.
const LAST_FIELD: usize = 39;

/// Parses the text of one task's `stat` file.
pub fn parse(text: &str) -> Result<TaskStat, ParseError> {
    let raw = text.lines().next().unwrap_or("");
    if raw.trim().is_empty() {
        return Err(ParseError::new(
            SOURCE,
            1,
            None,
            "a stat line 'pid (comm) state …'",
            Found::EndOfInput,
        ));
    }
    let (open, close) = match (raw.find('('), raw.rfind(')')) {
        (Some(o), Some(c)) if o < c => (o, c),
        _ => {
            return Err(ParseError::new(
                SOURCE,
                1,
                Some(2),
                "the command name in parentheses",
                Found::text(raw),
            ))
        }
    };
    let pid_text = raw[..open].trim();
    let tid = parse_u64(pid_text)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| ParseError::new(SOURCE, 1, Some(1), "a thread id", Found::text(pid_text)))?;
    let comm = raw[open + 1..close].to_string();

    let mut line = Line::new(SOURCE, 1, &raw[close + 1..]);
    let mut out = TaskStat {
        tid,
        comm,
        state: '?',
        ppid: 0,
        utime: 0,
        stime: 0,
        nice: 0,
        num_threads: 0,
        starttime: 0,
        processor: 0,
    };
    for field in 3..=LAST_FIELD {
        let Some(f) = line.next_field() else {
            return Err(ParseError::new(
                SOURCE,
                1,
                Some(field),
                format!("{LAST_FIELD} fields (field {field} is missing)"),
                Found::EndOfLine,
            ));
        };
        let bad = |what: &str| ParseError::new(SOURCE, 1, Some(field), what, Found::text(f));
        let unsigned = |what: &str| parse_u64(f).ok_or_else(|| bad(what));
        match field {
            3 => {
                let mut chars = f.chars();
                out.state = match (chars.next(), chars.next()) {
                    (Some(c), None) if c.is_ascii_alphabetic() => c,
                    _ => return Err(bad("a one-letter state such as R or S")),
                }
            }
            4 => {
                out.ppid =
                    u32::try_from(unsigned("a parent pid")?).map_err(|_| bad("a parent pid"))?
            }
            14 => out.utime = unsigned("utime in ticks")?,
            15 => out.stime = unsigned("stime in ticks")?,
            19 => out.nice = f.parse().map_err(|_| bad("a nice value"))?,
            20 => out.num_threads = unsigned("a thread count")?,
            22 => out.starttime = unsigned("a start time in ticks")?,
            39 => {
                out.processor =
                    u32::try_from(unsigned("a CPU number")?).map_err(|_| bad("a CPU number"))?
            }
            _ => {}
        }
    }
    Ok(out)
}
