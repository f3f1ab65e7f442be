//! `/proc/PID/task/TID/io`: a thread's read and write system calls and bytes.
//!
//! Fields: the kernel's Documentation/filesystems/proc.rst, "/proc/<pid>/io". `key: value`
//! lines; netceil reads `rchar`, `wchar` (bytes through read/write-family calls, sockets
//! included) and `syscr`, `syscw` (their counts). They tell a thread that works (its counts
//! move) from one that spins (on the CPU, counts flat). Two limits to keep in mind: the
//! sendmsg/recvmsg family (sendto, recvfrom, sendmmsg…) is not counted, and reading the file
//! needs ptrace access to the thread (same user, or CAP_SYS_PTRACE).

use super::parse_u64;
use crate::error::{Found, ParseError};

/// The file this parser is for (the sampler names the exact path).
pub const SOURCE: &str = "/proc/PID/task/TID/io";

/// The counters netceil uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskIo {
    pub rchar: u64,
    pub wchar: u64,
    pub syscr: u64,
    pub syscw: u64,
}

/// Parses the text of an `io` file; all four counters are required.
pub fn parse(text: &str) -> Result<TaskIo, ParseError> {
    let mut got: [Option<u64>; 4] = [None; 4];
    for (i, raw) in text.lines().enumerate() {
        let Some((key, value)) = raw.split_once(':') else {
            if raw.trim().is_empty() {
                continue;
            }
            return Err(ParseError::new(
                SOURCE,
                i + 1,
                Some(1),
                "a `key: value` line",
                Found::text(raw),
            ));
        };
        let slot = match key {
            "rchar" => 0,
            "wchar" => 1,
            "syscr" => 2,
            "syscw" => 3,
            _ => continue,
        };
        let v = value.trim();
        got[slot] =
            Some(parse_u64(v).ok_or_else(|| {
                ParseError::new(SOURCE, i + 1, Some(2), "a count", Found::text(v))
            })?);
    }
    match got {
        [Some(rchar), Some(wchar), Some(syscr), Some(syscw)] => Ok(TaskIo {
            rchar,
            wchar,
            syscr,
            syscw,
        }),
        _ => Err(ParseError::new(
            SOURCE,
            text.lines().count().max(1),
            None,
            "rchar, wchar, syscr and syscw lines",
            Found::EndOfInput,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REAL: &str = "rchar: 323934931\nwchar: 323929600\nsyscr: 632687\nsyscw: 632675\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n";

    #[test]
    fn reads_the_four_counters() {
        assert_eq!(
            parse(REAL).unwrap(),
            TaskIo {
                rchar: 323_934_931,
                wchar: 323_929_600,
                syscr: 632_687,
                syscw: 632_675
            }
        );
    }

    #[test]
    fn malformed_files_name_the_line_and_what_was_expected() {
        let e = parse("rchar: 1\nwchar: x\nsyscr: 1\nsyscw: 1\n").unwrap_err();
        let text = e.to_string();
        assert!(text.contains("line 2"), "{text}");
        assert!(text.contains("a count"), "{text}");
        let e = parse("rchar: 1\nwchar: 2\n").unwrap_err().to_string();
        assert!(e.contains("syscr"), "{e}");
        let e = parse("garbage\n").unwrap_err().to_string();
        assert!(e.contains("key: value"), "{e}");
        assert!(parse("").is_err());
    }
}
