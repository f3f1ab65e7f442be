//! `/proc/stat`: CPU time per CPU, interrupts, context switches, runnable and blocked tasks.
//!
//! Field meanings: the kernel's Documentation/filesystems/proc.rst, section "Miscellaneous
//! kernel statistics in /proc/stat", and proc_stat(5). CPU times are in USER_HZ ticks
//! (1/100 s on every mainstream architecture).
//!
//! The number of CPU time columns grew with the kernel: 4 (user nice system idle) before 2.5.41,
//! then iowait, irq and softirq (2.6.0), steal (2.6.11), guest (2.6.24) and guest_nice (2.6.33).
//! Columns a kernel does not print are `None`, never 0. `guest` and `guest_nice` are already
//! counted inside `user` and `nice`.
//!
//! Offline CPUs have no `cpuN` line, so CPU numbers are kept as printed. Only the first number
//! of the long `intr` line (the total) is read; the per-IRQ breakdown comes from
//! /proc/interrupts.

use super::{first_line, parse_u64, Line};
use crate::error::{Found, ParseError};

/// The file this parser is for.
pub const SOURCE: &str = "/proc/stat";

/// Cumulative CPU time of one CPU (or of all, for the `cpu` line), in USER_HZ ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: Option<u64>,
    pub irq: Option<u64>,
    pub softirq: Option<u64>,
    pub steal: Option<u64>,
    pub guest: Option<u64>,
    pub guest_nice: Option<u64>,
}

impl CpuTimes {
    /// How many columns the line had (4 to 10).
    pub fn columns(&self) -> usize {
        4 + [
            self.iowait,
            self.irq,
            self.softirq,
            self.steal,
            self.guest,
            self.guest_nice,
        ]
        .iter()
        .filter(|v| v.is_some())
        .count()
    }

    /// All time accounted to the CPU: every state once (guest time is inside user and nice).
    pub fn total(&self) -> u64 {
        self.user
            .saturating_add(self.nice)
            .saturating_add(self.system)
            .saturating_add(self.idle)
            .saturating_add(self.iowait.unwrap_or(0))
            .saturating_add(self.irq.unwrap_or(0))
            .saturating_add(self.softirq.unwrap_or(0))
            .saturating_add(self.steal.unwrap_or(0))
    }
}

/// One `cpuN` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuLine {
    /// The CPU number as printed (`cpu3` → 3).
    pub cpu: u32,
    pub times: CpuTimes,
}

/// The parsed file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// The `cpu` line: all CPUs together.
    pub total: CpuTimes,
    /// The `cpuN` lines, in file order.
    pub cpus: Vec<CpuLine>,
    /// Interrupts serviced since boot (first number of `intr`).
    pub intr_total: Option<u64>,
    /// Context switches since boot (`ctxt`).
    pub ctxt: Option<u64>,
    /// Boot time, seconds since the epoch (`btime`).
    pub btime: Option<u64>,
    /// Processes and threads created since boot (`processes`).
    pub processes: Option<u64>,
    /// Runnable tasks now (`procs_running`, 2.5.45+).
    pub procs_running: Option<u64>,
    /// Tasks blocked on I/O now (`procs_blocked`, 2.5.45+).
    pub procs_blocked: Option<u64>,
    /// Softirqs since boot, all kinds (first number of `softirq`, 2.6.31+).
    pub softirq_total: Option<u64>,
}

impl ProcStat {
    /// The times of CPU `cpu`, if it has a line.
    pub fn cpu(&self, cpu: u32) -> Option<&CpuTimes> {
        self.cpus.iter().find(|c| c.cpu == cpu).map(|c| &c.times)
    }
}

const TIME_EXPECTED: [&str; 10] = [
    "the user time in ticks",
    "the nice time in ticks",
    "the system time in ticks",
    "the idle time in ticks",
    "the iowait time in ticks",
    "the irq time in ticks",
    "the softirq time in ticks",
    "the steal time in ticks",
    "the guest time in ticks",
    "the guest_nice time in ticks",
];

fn cpu_times(line: &mut Line<'_>) -> Result<CpuTimes, ParseError> {
    let mut required = [0u64; 4];
    for (slot, expected) in required.iter_mut().zip(TIME_EXPECTED) {
        *slot = line.u64(expected)?;
    }
    let mut optional = [None; 6];
    for (slot, expected) in optional.iter_mut().zip(&TIME_EXPECTED[4..]) {
        match line.opt_u64(expected)? {
            Some(v) => *slot = Some(v),
            None => break,
        }
    }
    Ok(CpuTimes {
        user: required[0],
        nice: required[1],
        system: required[2],
        idle: required[3],
        iowait: optional[0],
        irq: optional[1],
        softirq: optional[2],
        steal: optional[3],
        guest: optional[4],
        guest_nice: optional[5],
    })
}

/// Parses the text of `/proc/stat`.
pub fn parse(text: &str) -> Result<ProcStat, ParseError> {
    first_line(SOURCE, text, "a 'cpu' line")?;
    let mut stat = ProcStat::default();
    let mut total_line: Option<usize> = None;
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        let mut line = Line::new(SOURCE, number, raw);
        let Some(key) = line.next_field() else {
            continue;
        };
        match key {
            "cpu" => {
                stat.total = cpu_times(&mut line)?;
                total_line = Some(number);
            }
            k if k.starts_with("cpu") => {
                let cpu = parse_u64(&k[3..])
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| {
                        line.error(Some(1), "'cpu' followed by a CPU number", Found::text(k))
                    })?;
                let times = cpu_times(&mut line)?;
                if total_line.is_some() && times.columns() != stat.total.columns() {
                    return Err(line.error(
                        None,
                        format!(
                            "{} time columns, as on the 'cpu' line",
                            stat.total.columns()
                        ),
                        Found::Text(format!("{} columns", times.columns())),
                    ));
                }
                stat.cpus.push(CpuLine { cpu, times });
            }
            "intr" => stat.intr_total = Some(line.u64("the interrupt total")?),
            "ctxt" => stat.ctxt = Some(line.u64("the context switch count")?),
            "btime" => stat.btime = Some(line.u64("the boot time in seconds")?),
            "processes" => stat.processes = Some(line.u64("the count of forks")?),
            "procs_running" => stat.procs_running = Some(line.u64("the runnable task count")?),
            "procs_blocked" => stat.procs_blocked = Some(line.u64("the blocked task count")?),
            "softirq" => stat.softirq_total = Some(line.u64("the softirq total")?),
            // page, swap, preempt and whatever later kernels add.
            _ => {}
        }
    }
    if total_line.is_none() {
        return Err(ParseError::new(
            SOURCE,
            1,
            None,
            "a 'cpu' line with the all-CPU times",
            Found::EndOfInput,
        ));
    }
    Ok(stat)
}
