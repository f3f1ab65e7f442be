//! One monotonic clock for the whole engine, in nanoseconds.
//!
//! Packet timestamps, the pacing schedule and absolute sleeps all use CLOCK_MONOTONIC so that
//! an absolute `clock_nanosleep` deadline and a timestamp read on the far side compare directly.

use nix::time::{clock_gettime, ClockId};

/// Nanoseconds on CLOCK_MONOTONIC.
#[inline]
pub fn now_ns() -> u64 {
    // CLOCK_MONOTONIC cannot fail on Linux; 0 would only show up as an absurd gap, never a panic.
    clock_gettime(ClockId::CLOCK_MONOTONIC)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

/// CPU time consumed so far by the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

/// Sleeps until `deadline_ns` on CLOCK_MONOTONIC (absolute, so oversleeping never accumulates).
pub fn sleep_until_ns(deadline_ns: u64) {
    use nix::sys::time::TimeSpec;
    use nix::time::{clock_nanosleep, ClockNanosleepFlags};
    let ts = TimeSpec::new(
        (deadline_ns / 1_000_000_000) as libc::time_t,
        (deadline_ns % 1_000_000_000) as libc::c_long,
    );
    // EINTR just means we wake early; the caller re-checks the schedule.
    let _ = clock_nanosleep(
        ClockId::CLOCK_MONOTONIC,
        ClockNanosleepFlags::TIMER_ABSTIME,
        &ts,
    );
}

/// How often a running workload reports its progress.
pub const PROGRESS_EVERY_NS: u64 = 1_000_000_000;

/// When a workload reports its progress: once a second from its start, none past `until` (a
/// deadline's grace: a run stopped late reports no extra second), and one more for the last
/// interval when the run ends, unless that interval is a sliver.
#[derive(Debug, Clone, Copy)]
pub struct ProgressTicks {
    next_ns: u64,
    until_ns: u64,
}

impl ProgressTicks {
    /// Ticks from `start_ns`, none at or after `until_ns` (`u64::MAX`: no limit).
    pub fn new(start_ns: u64, until_ns: u64) -> ProgressTicks {
        ProgressTicks {
            next_ns: start_ns.saturating_add(PROGRESS_EVERY_NS),
            until_ns,
        }
    }

    /// When the next report is due (past, once the ticks have ended).
    pub fn next_ns(&self) -> u64 {
        self.next_ns
    }

    /// Whether a report is due at `now`; the next tick is a second later when it is.
    pub fn due(&mut self, now: u64) -> bool {
        let due = now >= self.next_ns && now < self.until_ns;
        if due {
            self.next_ns += PROGRESS_EVERY_NS;
        }
        due
    }

    /// Whether the interval since the last report, ending at `now` with the run, is worth a
    /// report of its own: at least half an interval long, and within the grace. The senders
    /// end just before their last tick, so without it a run's last second went unreported.
    pub fn last_due(&self, now: u64) -> bool {
        now.saturating_add(PROGRESS_EVERY_NS / 2) >= self.next_ns && now < self.until_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_once_a_second_and_the_last_interval_unless_it_is_a_sliver() {
        let s = PROGRESS_EVERY_NS;
        let mut t = ProgressTicks::new(0, 3 * s + s / 2);
        assert!(!t.due(s - 1));
        assert!(t.due(s));
        assert!(!t.due(s + 1), "once per tick");
        assert!(t.due(2 * s + 5));
        // The run ends 0.99 s after the last tick: reported; 0.2 s after it: a sliver.
        assert!(t.last_due(2 * s + 990_000_000));
        assert!(!t.last_due(2 * s + 200_000_000));
        // Past the grace, nothing.
        assert!(!t.due(4 * s));
        assert!(!t.last_due(4 * s));
    }
}
