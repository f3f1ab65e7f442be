//! I/O wait: the CPUs idle because the work waited on a disk.
//!
//! Mechanism: iowait is idle time during which a task on that CPU was blocked on block I/O.
//! When it is a large share of the time, the run queue holds tasks blocked in D state
//! (`procs_blocked`, vmstat's `b`) and the CPUs would have worked had the disk answered: the
//! disk (or a file system, or swap) held the work, and no network knob moves it. What looks
//! the same: plain idle time (no blocked tasks), and a saturated CPU (no iowait at all).
//! netceil measures no disk itself, so the finding says what is there and what to measure.
//!
//! Sizing: iowait as a share of CPU time. A ceiling from [`IOWAIT_BINDS_PCT`] while the CPUs
//! were otherwise at most [`OTHER_BUSY_MAX_PCT`] busy and tasks were blocked (when recorded),
//! unless a paced workload got its rate (then nothing held it, and the wait is only noted);
//! from [`IOWAIT_NOTED_PCT`] it is noted. Confidence: 0.45 + 0.4 × the mean of the iowait
//! share (20 % → 0, 60 % → 1) and blocked tasks (0.5 → 0, 3 → 1), × the data factor.

use netceil_model::{names as n, Finding, Resource};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::ledger::{pct, Class, Entry};
use crate::stats::{mean_strength, ramp};
use netceil_model::{fmt, Unit};

/// I/O wait (% of CPU time) from which the disk is the ceiling…
pub const IOWAIT_BINDS_PCT: f64 = 20.0;
/// …while the CPUs' other busy time stayed at most this (%).
pub const OTHER_BUSY_MAX_PCT: f64 = 70.0;
/// I/O wait (%) from which it is worth saying.
pub const IOWAIT_NOTED_PCT: f64 = 10.0;
/// Blocked tasks (mean) from which they confirm the wait.
const BLOCKED_MIN: f64 = 0.5;

pub fn io_wait(ctx: &Ctx) -> Option<Entry> {
    if ctx.rows.is_empty() {
        return None;
    }
    let iowait = ctx.total_mean(n::CPU_IOWAIT_PCT)?;
    if iowait < IOWAIT_NOTED_PCT {
        return None;
    }
    let busy = ctx.machine_busy().map(|(b, _)| b);
    let blocked = ctx.total_mean(n::PROCS_BLOCKED);
    // A paced network workload that got its rate was held by nothing, whatever else waited on
    // the disk: the wait is said, not claimed.
    let binds = iowait >= IOWAIT_BINDS_PCT
        && busy.is_none_or(|b| b <= OTHER_BUSY_MAX_PCT)
        && blocked.is_none_or(|b| b >= BLOCKED_MIN)
        && !ctx.offered_met();
    let strength = mean_strength(&[
        Some(ramp(iowait, IOWAIT_BINDS_PCT, 60.0)),
        blocked.map(|b| ramp(b, BLOCKED_MIN, 3.0)),
    ])
    .unwrap_or(0.0);
    let confidence = if binds {
        (0.45 + 0.4 * strength) * ctx.data_factor()
    } else {
        0.3 * ctx.data_factor()
    };
    let f = words(ctx, iowait, busy, blocked, binds, confidence);
    let class = if binds { Class::Ceiling } else { Class::Noted };
    Some(Entry::claim(class, Resource::Disk, f).sized(
        pct(100.0, "CPU time"),
        pct(iowait, "idle waiting on disk I/O (iowait)"),
    ))
}

fn words(
    ctx: &Ctx,
    iowait: f64,
    busy: Option<f64>,
    blocked: Option<f64>,
    binds: bool,
    confidence: f64,
) -> Finding {
    let blocked_words = blocked
        .map(|b| format!(", with {} tasks blocked on I/O on average", fmt::number(b)))
        .unwrap_or_default();
    let busy_words = busy
        .map(|b| format!(" and busy {} otherwise", fmt::value(b, Unit::Percent)))
        .unwrap_or_default();
    let summary = if binds {
        format!(
            "The work waited on disk I/O: the CPUs sat {} in iowait {}{busy_words}{blocked_words}. A disk, a file system or swap held it, not the network; netceil measures no disk itself.",
            fmt::value(iowait, Unit::Percent),
            ctx.window_words()
        )
    } else {
        format!(
            "The CPUs spent {} in iowait {}{blocked_words}: disk I/O was part of the work, though not the ceiling by these figures.",
            fmt::value(iowait, Unit::Percent),
            ctx.window_words()
        )
    };
    let mut f = finding(cause::IO_WAIT, summary, confidence);
    f.evidence.push(ctx.ev(
        n::CPU_IOWAIT_PCT,
        Some((iowait, Unit::Percent)),
        format!("iowait {}", fmt::value(iowait, Unit::Percent)),
    ));
    if let Some(b) = blocked {
        f.evidence.push(ctx.ev(
            n::PROCS_BLOCKED,
            Some((b, Unit::Count)),
            format!("{} tasks blocked on I/O (vmstat b)", fmt::number(b)),
        ));
    }
    f.alternatives
        .push("a CPU ceiling: ruled out while the CPUs waited rather than worked".into());
    f.advice.push(advice(
        "iostat -x 1 (or sar -d) and pidstat -d 1 during the load",
        "the device at 100 % util or with a long queue, and the process reading or writing",
        None,
    ));
    f.advice.push(advice(
        "serve from memory: a larger page cache (more RAM), sendfile, or files on a faster device",
        "iowait falls and the network can be fed",
        Some("swap activity (vmstat si/so) means memory, not the disk, is short"),
    ));
    f.next =
        Some("sar -d or iostat -x beside netceil watch tells which device and how full".into());
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    fn waiting(iowait: f64, user: f64, blocked: f64) -> netceil_model::Run {
        imported_run(10, |s, r| {
            put(s, r, n::CPU_IOWAIT_PCT, &[], iowait + noise(r, 2.0));
            put(s, r, n::CPU_USER_PCT, &[], user);
            put(s, r, n::CPU_SYSTEM_PCT, &[], 5.0);
            put(s, r, n::CPU_IDLE_PCT, &[], 100.0 - iowait - user - 5.0);
            put(s, r, n::PROCS_BLOCKED, &[], blocked);
            put(s, r, n::CS_PER_S, &[], 3000.0 + noise(r, 100.0));
        })
    }

    #[test]
    fn heavy_iowait_with_blocked_tasks_is_the_disk() {
        let e = entry_on(&waiting(45.0, 10.0, 4.0), io_wait).expect("io wait");
        assert_eq!(e.class, Class::Ceiling);
        assert_eq!(e.cause, cause::IO_WAIT);
        assert!(
            e.finding.summary.contains("45.0 %"),
            "{}",
            e.finding.summary
        );
        assert!((e.share.unwrap() - 0.45).abs() < 0.02);
    }

    #[test]
    fn some_iowait_beside_busy_cpus_is_only_noted_and_little_is_nothing() {
        let e = entry_on(&waiting(15.0, 60.0, 1.0), io_wait).unwrap();
        assert_eq!(e.class, Class::Noted);
        let e = entry_on(&waiting(25.0, 10.0, 0.0), io_wait).unwrap();
        assert_eq!(e.class, Class::Noted, "no task blocked: idle, not waiting");
        assert!(entry_on(&waiting(3.0, 10.0, 0.0), io_wait).is_none());
    }

    #[test]
    fn a_paced_run_that_got_its_rate_was_held_by_no_disk() {
        let mut run = waiting(45.0, 10.0, 4.0);
        run.source = netceil_model::RunSource::Live;
        run.results = Some(netceil_model::Results {
            tx_packets: 100_000,
            rx_app_packets: 100_000,
            requested_pps: Some(20e3),
            generator: netceil_model::GeneratorStats {
                achieved_ratio: Some(1.0),
                ..Default::default()
            },
            ..Default::default()
        });
        let e = entry_on(&run, io_wait).expect("noted");
        assert_eq!(e.class, Class::Noted);
    }
}
