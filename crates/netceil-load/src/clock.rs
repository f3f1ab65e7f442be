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
