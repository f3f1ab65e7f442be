//! The formats netceil reads, and detection by content.
//!
//! Each reader module has `sniff(text) -> Result<(), String>` (why the text is not of its
//! format, in words, naming the line) and `import(text, &ImportOptions) -> Result<Imported,
//! ImportError>`.

use crate::{ImportError, ImportOptions, Imported, NotThisFormat};

// shared by the readers
pub(crate) mod builder;
#[cfg(test)]
mod coarse_tests;
pub(crate) mod common;
pub(crate) mod erlang_term;
pub(crate) mod feed;

// vmstat, sysstat, tables
pub mod mpstat;
pub mod pidstat;
pub mod sadf;
pub mod sar;
pub mod sysstat_json;
pub mod table;
pub mod vmstat_freebsd;
pub mod vmstat_linux;

// locks, erlang, iperf3, /proc snapshots
pub mod erlang_wall_time;
pub mod iperf3;
pub mod lock_stat;
pub mod lockprof_freebsd;
pub mod perf_lock;
pub(crate) mod plausible;
pub mod proc_snapshot;
pub mod recon;
pub mod recon_node_stats;
pub(crate) mod stamp;

/// Every format, in the order detection tries them (most specific first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    // Filled in by the reader modules as they land.
    // vmstat, sysstat, tables
    VmstatLinux,
    VmstatFreebsd,
    /// `pidstat` text reports: per-process (and with `-t` per-thread) rows.
    Pidstat,
    Sadf,
    Mpstat,
    Sar,
    /// `mpstat -o JSON` and `sadf -j`.
    SysstatJson,
    /// Generic TSV/CSV: accepts any header row over numeric rows, so it is tried last.
    Table,
    // locks, erlang, iperf3, /proc snapshots
    /// iperf3 `--json` (or `--json-stream`) results.
    Iperf3,
    /// Linux `/proc/lock_stat`.
    LockStat,
    /// FreeBSD `debug.lock.prof.stats`.
    FreebsdLockProf,
    /// `perf lock contention` text output.
    PerfLock,
    /// Two or more Erlang `statistics(scheduler_wall_time)` snapshots.
    ErlangWallTime,
    /// `recon:scheduler_usage/1` or `scheduler:utilization/1` output.
    ErlangSchedulerUsage,
    /// `recon:node_stats_print/2` or `recon:node_stats_list/2` output.
    ReconNodeStats,
    /// /proc/interrupts, softirqs, net/softnet_stat, net/snmp, net/netstat or net/dev.
    ProcSnapshot,
}

impl Format {
    /// Every format, in detection order.
    pub const ALL: &'static [Format] = &[
        // locks, erlang, iperf3, /proc snapshots: each needs its own header or syntax
        Format::SysstatJson,
        Format::Iperf3,
        Format::LockStat,
        Format::FreebsdLockProf,
        Format::PerfLock,
        Format::ReconNodeStats,
        Format::ErlangWallTime,
        Format::ErlangSchedulerUsage,
        Format::ProcSnapshot,
        // vmstat, sysstat, tables
        Format::VmstatLinux,
        Format::VmstatFreebsd,
        Format::Pidstat, // before mpstat and sar: it has their layout
        Format::Sadf,
        Format::Mpstat,
        Format::Sar,
        Format::Table, // keep last: it accepts any header row over numeric rows
    ];

    /// The name used by `--format NAME`.
    pub fn name(self) -> &'static str {
        match self {
            // vmstat, sysstat, tables
            Format::VmstatLinux => vmstat_linux::NAME,
            Format::VmstatFreebsd => vmstat_freebsd::NAME,
            Format::Pidstat => pidstat::NAME,
            Format::Sadf => sadf::NAME,
            Format::Mpstat => mpstat::NAME,
            Format::Sar => sar::NAME,
            Format::SysstatJson => sysstat_json::NAME,
            Format::Table => table::NAME,
            // locks, erlang, iperf3, /proc snapshots
            Format::Iperf3 => iperf3::NAME,
            Format::LockStat => lock_stat::NAME,
            Format::FreebsdLockProf => lockprof_freebsd::NAME,
            Format::PerfLock => perf_lock::NAME,
            Format::ErlangWallTime => erlang_wall_time::NAME,
            Format::ErlangSchedulerUsage => recon::NAME,
            Format::ReconNodeStats => recon_node_stats::NAME,
            Format::ProcSnapshot => proc_snapshot::NAME,
        }
    }

    /// What writes this format, in a few words, for `--help`.
    pub fn source(self) -> &'static str {
        match self {
            Format::VmstatLinux => "Linux vmstat (procps-ng, busybox; -w, -a, -t)",
            Format::VmstatFreebsd => "FreeBSD vmstat, 8.x to 14.x",
            Format::Pidstat => "sysstat pidstat (-t threads, -w switches, -h)",
            Format::Sadf => "sysstat sadf -d (semicolon records)",
            Format::Mpstat => "sysstat mpstat (-P ALL, -I, -A)",
            Format::Sar => "sysstat sar text reports (-u, -n DEV, -w, -I, -A)",
            Format::SysstatJson => "sysstat JSON: mpstat -o JSON, sadf -j",
            Format::Table => "any table: a header row over rows of numbers (TSV, CSV, spaces)",
            Format::Iperf3 => "iperf3 --json or --json-stream (client or server)",
            Format::LockStat => "Linux /proc/lock_stat",
            Format::FreebsdLockProf => "FreeBSD debug.lock.prof.stats",
            Format::PerfLock => "perf lock contention",
            Format::ErlangWallTime => "Erlang statistics(scheduler_wall_time) snapshots",
            Format::ErlangSchedulerUsage => "recon:scheduler_usage/1 or scheduler:utilization/1",
            Format::ReconNodeStats => "recon:node_stats_print/2 or node_stats_list/2",
            Format::ProcSnapshot => {
                "/proc/interrupts, softirqs, net/softnet_stat, net/snmp, net/netstat, net/dev"
            }
        }
    }

    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.iter().copied().find(|f| f.name() == name)
    }

    fn sniff(self, text: &str) -> Result<(), String> {
        match self {
            // vmstat, sysstat, tables
            Format::VmstatLinux => vmstat_linux::sniff(text),
            Format::VmstatFreebsd => vmstat_freebsd::sniff(text),
            Format::Pidstat => pidstat::sniff(text),
            Format::Sadf => sadf::sniff(text),
            Format::Mpstat => mpstat::sniff(text),
            Format::Sar => sar::sniff(text),
            Format::SysstatJson => sysstat_json::sniff(text),
            Format::Table => table::sniff(text),
            // locks, erlang, iperf3, /proc snapshots
            Format::Iperf3 => iperf3::sniff(text),
            Format::LockStat => lock_stat::sniff(text),
            Format::FreebsdLockProf => lockprof_freebsd::sniff(text),
            Format::PerfLock => perf_lock::sniff(text),
            Format::ErlangWallTime => erlang_wall_time::sniff(text),
            Format::ErlangSchedulerUsage => recon::sniff(text),
            Format::ReconNodeStats => recon_node_stats::sniff(text),
            Format::ProcSnapshot => proc_snapshot::sniff(text),
        }
    }

    fn import(self, text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
        match self {
            // vmstat, sysstat, tables
            Format::VmstatLinux => vmstat_linux::import(text, opts),
            Format::VmstatFreebsd => vmstat_freebsd::import(text, opts),
            Format::Pidstat => pidstat::import(text, opts),
            Format::Sadf => sadf::import(text, opts),
            Format::Mpstat => mpstat::import(text, opts),
            Format::Sar => sar::import(text, opts),
            Format::SysstatJson => sysstat_json::import(text, opts),
            Format::Table => table::import(text, opts),
            // locks, erlang, iperf3, /proc snapshots
            Format::Iperf3 => iperf3::import(text, opts),
            Format::LockStat => lock_stat::import(text, opts),
            Format::FreebsdLockProf => lockprof_freebsd::import(text, opts),
            Format::PerfLock => perf_lock::import(text, opts),
            Format::ErlangWallTime => erlang_wall_time::import(text, opts),
            Format::ErlangSchedulerUsage => recon::import(text, opts),
            Format::ReconNodeStats => recon_node_stats::import(text, opts),
            Format::ProcSnapshot => proc_snapshot::import(text, opts),
        }
    }
}

/// The text as a terminal showed it: without a byte-order mark, carriage returns, or the
/// escape sequences (colours, cursor moves, screen clears) that `script`, `watch -c` or a
/// coloured prompt leave in a capture. Line numbers are unchanged.
pub fn terminal_text(text: &str) -> std::borrow::Cow<'_, str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if !text.bytes().any(|b| b == 0x1b || b == b'\r') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {}
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates, then one final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                        if c == '\n' {
                            out.push('\n');
                            break;
                        }
                    }
                }
                // OSC (window titles): up to BEL or ESC \.
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' {
                            chars.next_if_eq(&'\\');
                            break;
                        }
                        if c == '\n' {
                            out.push('\n');
                            break;
                        }
                    }
                }
                // Character-set selection takes one more character.
                Some('(' | ')') => {
                    chars.next_if(|c| *c != '\n');
                }
                Some('\n') => out.push('\n'),
                _ => {}
            },
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Whether a text is a recording of a full-screen program (`script` around `watch` or `top`):
/// the alternate screen, or a screen drawn by cursor positioning rather than by lines.
fn screen_recording(text: &str) -> bool {
    if text.contains("\u{1b}[?1049h") || text.contains("\u{1b}[?47h") {
        return true;
    }
    // `ESC [ row ; col H` and `ESC [ col G`: cursor moves within a line of text.
    let moves = text
        .match_indices('\u{1b}')
        .filter(|(i, _)| {
            let rest = &text.as_bytes()[i + 1..];
            rest.first() == Some(&b'[')
                && rest[1..]
                    .iter()
                    .position(|b| !(b.is_ascii_digit() || *b == b';'))
                    .is_some_and(|k| k > 0 && matches!(rest[1 + k], b'H' | b'G' | b'd'))
        })
        .count();
    moves > 3
}

/// What to say about a recording of a full-screen program.
const SCREEN_RECORDING: &str = "this is a recording of a full-screen program (`script` around `watch`, `top`…): it draws the screen by moving the cursor, so its lines cannot be read back. Record the file itself at each tick instead, e.g. `while sleep 1; do date +%s.%N; cat /proc/softirqs; done > softirqs.log`, or copy the screens as text";

/// The format of a text, or why it is none of them (one reason per format).
pub fn detect(text: &str) -> Result<Format, Vec<NotThisFormat>> {
    if screen_recording(text) {
        return Err(vec![NotThisFormat {
            format: "terminal recording",
            reason: SCREEN_RECORDING.into(),
        }]);
    }
    let text: &str = &terminal_text(text);
    let mut reasons = Vec::new();
    for &f in Format::ALL {
        match f.sniff(text) {
            Ok(()) => return Ok(f),
            Err(reason) => reasons.push(NotThisFormat {
                format: f.name(),
                reason,
            }),
        }
    }
    Err(reasons)
}

/// Imports a text in a given format.
pub fn import(format: Format, text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    format.import(&terminal_text(text), opts)
}

#[cfg(test)]
mod tests {
    use super::terminal_text;

    #[test]
    fn terminal_captures_lose_their_escapes_but_keep_their_lines() {
        let raw = "\u{feff}\u{1b}[H\u{1b}[2JEvery 1.0s: cat x\r\n\u{1b}]0;title\u{7}\u{1b}[1;31mCPU0\u{1b}[0m  CPU1\r\n\u{1b}(B  HI: 1 2\r\n";
        assert_eq!(
            terminal_text(raw),
            "Every 1.0s: cat x\nCPU0  CPU1\n  HI: 1 2\n"
        );
        assert!(matches!(
            terminal_text("plain\n"),
            std::borrow::Cow::Borrowed(_)
        ));
        // A sequence cut by the end of a line or of the text loses nothing after it.
        assert_eq!(terminal_text("a\u{1b}[12\nb\u{1b}"), "a\nb");
    }
}
