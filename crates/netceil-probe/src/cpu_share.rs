//! A CPU's shares of an interval, from two readings of its /proc/stat times: one definition for
//! the sampler's rows ([`crate::rates`]) and for whoever else compares two readings (the far
//! end of a `netceil serve` test).
//!
//! Busy is the wall time less idle and iowait, not the sum of the busy columns. Those columns
//! are sampled: each scheduler tick charges its whole length to what it interrupted, and with
//! the tick stopped in idle (NO_HZ, the default) idle and iowait are measured exactly while a
//! CPU woken thousands of times a second is busy in bursts the tick rarely lands in. Measured
//! on a 2-CPU VM with Linux 6.18: a program spinning 20 us and sleeping 60 us was 29 % of its
//! CPU by its own schedstat, 31 % by wall less idle, and 15 % by the busy columns; `netceil run
//! rr --rate 5000` on one CPU, 34 % against 1 %. Saturated CPUs agree either way (no idle).
//! The busy columns still split what they saw between user, system, irq and softirq, as shares
//! of the wall time, so on a CPU busy in short bursts they add up to less than busy. When the
//! columns add up to clearly more than the wall time (a source whose clock is not the one
//! /proc/stat was read by) the shares are of the columns' sum, as mpstat takes them.

use crate::parse::proc_stat::CpuTimes;
use crate::rates::{counter_delta, CounterWidth};
use netceil_model::names as n;
use netceil_model::{MetricId, Series};

/// How far the columns may add up to more than the wall time before they are taken to be on
/// another clock than the readings': each column is rounded down to a tick on its own, so a
/// few ticks, and 2 % for clocks that differ a little.
const WALL_SLACK_TICKS: f64 = 3.0;
const WALL_SLACK_SHARE: f64 = 0.02;

/// One of /proc/stat's optional columns over an interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Column {
    /// Percent of the interval.
    Pct(f64),
    /// This kernel does not print it.
    Absent,
    /// It went backwards, which the kernel allows for iowait (proc.rst).
    Backwards,
}

impl Column {
    /// The share, or 0 when there is none.
    pub fn or_zero(self) -> f64 {
        match self {
            Column::Pct(v) => v,
            _ => 0.0,
        }
    }
}

/// A CPU's shares of an interval, percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shares {
    pub user: f64,
    pub nice: f64,
    pub system: f64,
    pub idle: f64,
    /// The wall time less idle and iowait (see the module docs).
    pub busy: f64,
    pub iowait: Column,
    pub irq: Column,
    pub softirq: Column,
    pub steal: Column,
    /// Whether the shares are of the wall time (else of the columns' sum, see the module
    /// docs).
    pub of_wall: bool,
}

/// Why an interval has no shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoShares {
    /// A column other than iowait went backwards.
    Backwards,
    /// No column moved: the interval was shorter than one USER_HZ tick.
    NoTicks,
}

/// The shares of the interval between readings `p` and `c` of one CPU's times (or of the
/// `cpu` line's), taken `wall` ticks of wall time apart (CPUs × that for the `cpu` line; 0 if
/// unknown).
pub fn shares(p: &CpuTimes, c: &CpuTimes, wall: f64) -> Result<Shares, NoShares> {
    let d = |a: u64, z: u64| counter_delta(a, z, CounterWidth::Native);
    let (Some(user), Some(nice), Some(system), Some(idle)) = (
        d(p.user, c.user),
        d(p.nice, c.nice),
        d(p.system, c.system),
        d(p.idle, c.idle),
    ) else {
        return Err(NoShares::Backwards);
    };
    // None: this kernel does not print the column; Some(None): it went backwards.
    let opt = |a: Option<u64>, z: Option<u64>| Some(d(a?, z?));
    let iowait = opt(p.iowait, c.iowait);
    let (irq, softirq, steal) = (
        opt(p.irq, c.irq),
        opt(p.softirq, c.softirq),
        opt(p.steal, c.steal),
    );
    if [irq, softirq, steal].contains(&Some(None)) {
        return Err(NoShares::Backwards);
    }
    let ticks = |v: Option<Option<u64>>| v.flatten().unwrap_or(0);
    let waiting = idle + ticks(iowait);
    let total = user + nice + system + waiting + ticks(irq) + ticks(softirq) + ticks(steal);
    if total == 0 {
        return Err(NoShares::NoTicks);
    }
    let of_wall = wall > 0.0 && total as f64 <= wall * (1.0 + WALL_SLACK_SHARE) + WALL_SLACK_TICKS;
    let (span, busy) = if of_wall {
        // Idle and iowait are rounded down to ticks at each reading: a tick over is no time.
        (wall, (wall - waiting as f64).clamp(0.0, wall))
    } else {
        (total as f64, (total - waiting) as f64)
    };
    let pct = |t: u64| (100.0 * t as f64 / span).min(100.0);
    let column = |v: Option<Option<u64>>| match v {
        Some(Some(t)) => Column::Pct(pct(t)),
        Some(None) => Column::Backwards,
        None => Column::Absent,
    };
    Ok(Shares {
        user: pct(user),
        nice: pct(nice),
        system: pct(system),
        idle: pct(idle),
        busy: 100.0 * busy / span,
        iowait: column(iowait),
        irq: column(irq),
        softirq: column(softirq),
        steal: column(steal),
        of_wall,
    })
}

/// The columns that split busy time between user, system and interrupts: tick-sampled.
const TICKED: [&str; 5] = [
    n::CPU_USER_PCT,
    n::CPU_NICE_PCT,
    n::CPU_SYSTEM_PCT,
    n::CPU_IRQ_PCT,
    n::CPU_SOFTIRQ_PCT,
];

/// A CPU's ticks are said to have missed its busy time when they missed at least this much of
/// it (percentage points of the run).
const UNTICKED_MIN: f64 = 10.0;

/// The note for a recorded series naming the CPUs whose busy time the ticks mostly missed:
/// their user/system/softirq split covers only what the ticks saw (see the module docs).
/// Means over the rows where busy and every split column were measured.
pub fn unticked_note(series: &Series) -> Option<String> {
    let mut cpus = Vec::new();
    for busy in series.by_name(n::CPU_BUSY_PCT) {
        let Some(cpu) = busy.id.label("cpu") else {
            continue;
        };
        let split: Vec<_> = TICKED
            .iter()
            .filter_map(|name| series.get(&MetricId::new(*name).with("cpu", cpu)))
            .collect();
        if split.is_empty() {
            continue;
        }
        let (mut b, mut seen, mut rows) = (0.0, 0.0, 0u32);
        for (row, v) in busy.values.iter().enumerate() {
            let parts = split.iter().map(|m| m.values.get(row).copied().flatten());
            if let (Some(v), Some(sum)) = (v, parts.sum::<Option<f64>>()) {
                (b, seen, rows) = (b + v, seen + sum, rows + 1);
            }
        }
        let (b, seen) = (b / f64::from(rows.max(1)), seen / f64::from(rows.max(1)));
        if b - seen >= UNTICKED_MIN {
            cpus.push(format!(
                "CPU {cpu} {b:.0} % busy, {seen:.0} % seen by ticks"
            ));
        }
    }
    (!cpus.is_empty()).then(|| {
        format!(
            "{}: busy in bursts shorter than the scheduler tick (a load woken thousands of times a second). Busy is the wall time less the kernel's exact idle and iowait time; the user/system/softirq split comes from ticks and covers only the part they saw",
            cpus.join("; ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(user: u64, system: u64, idle: u64, iowait: u64) -> CpuTimes {
        CpuTimes {
            user,
            system,
            idle,
            iowait: Some(iowait),
            irq: Some(0),
            softirq: Some(0),
            steal: Some(0),
            ..CpuTimes::default()
        }
    }

    /// Two rows of CPU 0 with these busy and user shares (the other columns 0).
    fn cpu0(busy: f64, user: f64) -> Series {
        let mut s = Series::new(1.0);
        for t in [1.0, 2.0] {
            s.push_row(t);
            let id = |name: &str| MetricId::new(name).with("cpu", "0");
            s.set(&id(n::CPU_BUSY_PCT), netceil_model::Unit::Percent, busy);
            for name in TICKED {
                let v = if name == n::CPU_USER_PCT { user } else { 0.0 };
                s.set(&id(name), netceil_model::Unit::Percent, v);
            }
        }
        s
    }

    #[test]
    fn a_cpu_busy_between_ticks_is_noted() {
        let note = unticked_note(&cpu0(68.0, 6.0)).expect("a note");
        assert!(
            note.starts_with("CPU 0 68 % busy, 6 % seen by ticks"),
            "{note}"
        );
    }

    #[test]
    fn a_cpu_the_ticks_saw_or_an_idle_one_is_not() {
        assert_eq!(unticked_note(&cpu0(68.0, 60.0)), None);
        assert_eq!(unticked_note(&cpu0(5.0, 0.0)), None);
        assert_eq!(unticked_note(&Series::new(1.0)), None);
    }

    #[test]
    fn busy_is_the_wall_time_less_idle_and_iowait() {
        // 100 ticks of wall time: 60 idle, 10 iowait, and the tick saw 4 busy ones.
        let s = shares(&times(0, 0, 0, 0), &times(3, 1, 60, 10), 100.0).unwrap();
        assert!(s.of_wall);
        assert_eq!((s.busy, s.idle, s.user, s.system), (30.0, 60.0, 3.0, 1.0));
        assert_eq!(s.iowait, Column::Pct(10.0));
    }

    #[test]
    fn rounding_over_the_wall_time_is_no_busy_time_and_no_more_than_all_of_it() {
        let s = shares(&times(0, 0, 0, 0), &times(0, 0, 101, 0), 100.0).unwrap();
        assert_eq!((s.busy, s.idle), (0.0, 100.0));
    }

    #[test]
    fn columns_on_another_clock_are_shares_of_their_sum() {
        let s = shares(&times(0, 0, 0, 0), &times(50, 0, 150, 0), 100.0).unwrap();
        assert!(!s.of_wall);
        assert_eq!((s.busy, s.user), (25.0, 25.0));
        let s = shares(&times(0, 0, 0, 0), &times(50, 0, 150, 0), 0.0).unwrap();
        assert_eq!(s.busy, 25.0, "no wall time known");
    }

    #[test]
    fn backwards_columns_and_empty_intervals_have_no_shares() {
        let t = times(10, 0, 10, 5);
        assert_eq!(
            shares(&t, &times(9, 0, 20, 5), 100.0),
            Err(NoShares::Backwards)
        );
        assert_eq!(shares(&t, &t, 100.0), Err(NoShares::NoTicks));
        // Iowait may go backwards: only it is lost.
        let s = shares(&t, &times(20, 0, 20, 4), 20.0).unwrap();
        assert_eq!(s.iowait, Column::Backwards);
        assert_eq!(s.busy, 50.0);
    }
}
