//! The formats netceil reads, and detection by content.
//!
//! Each reader module has `sniff(text) -> Result<(), String>` (why the text is not of its
//! format, in words, naming the line) and `import(text, &ImportOptions) -> Result<Imported,
//! ImportError>`.

use crate::{ImportError, ImportOptions, Imported, NotThisFormat};

// vmstat, sysstat, tables
pub mod mpstat;
pub mod sadf;
pub mod sar;
pub mod table;
pub(crate) mod util;
pub mod vmstat_freebsd;
pub mod vmstat_linux;

// locks, erlang, iperf3, /proc snapshots
pub(crate) mod common2;
pub mod erlang_wall_time;
pub mod iperf3;
pub mod lock_stat;
pub mod lockprof_freebsd;
pub mod perf_lock;
pub mod proc_snapshot;
pub mod recon;

/// Every format, in the order detection tries them (most specific first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    // Filled in by the reader modules as they land.
    // vmstat, sysstat, tables
    VmstatLinux,
    VmstatFreebsd,
    Sadf,
    Mpstat,
    Sar,
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
    /// /proc/interrupts, softirqs, net/softnet_stat, net/snmp, net/netstat or net/dev.
    ProcSnapshot,
}

impl Format {
    /// Every format, in detection order.
    pub const ALL: &'static [Format] = &[
        // locks, erlang, iperf3, /proc snapshots: each needs its own header or syntax
        Format::Iperf3,
        Format::LockStat,
        Format::FreebsdLockProf,
        Format::PerfLock,
        Format::ErlangWallTime,
        Format::ErlangSchedulerUsage,
        Format::ProcSnapshot,
        // vmstat, sysstat, tables
        Format::VmstatLinux,
        Format::VmstatFreebsd,
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
            Format::Sadf => sadf::NAME,
            Format::Mpstat => mpstat::NAME,
            Format::Sar => sar::NAME,
            Format::Table => table::NAME,
            // locks, erlang, iperf3, /proc snapshots
            Format::Iperf3 => iperf3::NAME,
            Format::LockStat => lock_stat::NAME,
            Format::FreebsdLockProf => lockprof_freebsd::NAME,
            Format::PerfLock => perf_lock::NAME,
            Format::ErlangWallTime => erlang_wall_time::NAME,
            Format::ErlangSchedulerUsage => recon::NAME,
            Format::ProcSnapshot => proc_snapshot::NAME,
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
            Format::Sadf => sadf::sniff(text),
            Format::Mpstat => mpstat::sniff(text),
            Format::Sar => sar::sniff(text),
            Format::Table => table::sniff(text),
            // locks, erlang, iperf3, /proc snapshots
            Format::Iperf3 => iperf3::sniff(text),
            Format::LockStat => lock_stat::sniff(text),
            Format::FreebsdLockProf => lockprof_freebsd::sniff(text),
            Format::PerfLock => perf_lock::sniff(text),
            Format::ErlangWallTime => erlang_wall_time::sniff(text),
            Format::ErlangSchedulerUsage => recon::sniff(text),
            Format::ProcSnapshot => proc_snapshot::sniff(text),
        }
    }

    fn import(self, text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
        match self {
            // vmstat, sysstat, tables
            Format::VmstatLinux => vmstat_linux::import(text, opts),
            Format::VmstatFreebsd => vmstat_freebsd::import(text, opts),
            Format::Sadf => sadf::import(text, opts),
            Format::Mpstat => mpstat::import(text, opts),
            Format::Sar => sar::import(text, opts),
            Format::Table => table::import(text, opts),
            // locks, erlang, iperf3, /proc snapshots
            Format::Iperf3 => iperf3::import(text, opts),
            Format::LockStat => lock_stat::import(text, opts),
            Format::FreebsdLockProf => lockprof_freebsd::import(text, opts),
            Format::PerfLock => perf_lock::import(text, opts),
            Format::ErlangWallTime => erlang_wall_time::import(text, opts),
            Format::ErlangSchedulerUsage => recon::import(text, opts),
            Format::ProcSnapshot => proc_snapshot::import(text, opts),
        }
    }
}

/// The format of a text, or why it is none of them (one reason per format).
pub fn detect(text: &str) -> Result<Format, Vec<NotThisFormat>> {
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
    format.import(text, opts)
}
