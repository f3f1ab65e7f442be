//! The send schedule.
//!
//! Burst `i` is due at `start + i × burst_interval`: the schedule is absolute, so one late send
//! is never silently forgiven by shifting the rest. A sender that falls behind sends what is due
//! at once (batched) and the lateness is counted, not hidden.
//!
//! Two ways to wait: `Sleep` (absolute `clock_nanosleep`, cheap, coarse under load) and `Spin`
//! (busy-wait on the clock, ~sub-µs precise, burns the core). Spin time is measured so the
//! sender can report its own CPU split into working and spinning.

use hdrhistogram::Histogram;
use netceil_model::PacingMode;

use crate::clock::{now_ns, sleep_until_ns};

/// Gap errors are recorded in ns up to 1 s.
const GAP_ERROR_MAX_NS: u64 = 1_000_000_000;

/// Decides when each burst may go and keeps score of how well the schedule was kept.
#[derive(Debug)]
pub struct Pacer {
    mode: PacingMode,
    start_ns: u64,
    /// Nanoseconds between bursts (`burst × packet interval`); 0 when unpaced.
    burst_interval_ns: f64,
    next_burst: u64,
    spin_ns: u64,
    late_bursts: u64,
    last_send_ns: Option<u64>,
    /// |actual gap − nominal gap| between consecutive paced bursts, ns.
    gap_error_ns: Histogram<u64>,
}

/// What `wait` decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    /// How many bursts are due now (≥ 1). More than one means the sender is behind.
    pub bursts: u64,
    /// When the first of them was scheduled, ns on CLOCK_MONOTONIC.
    pub scheduled_ns: u64,
}

impl Pacer {
    /// `packet_interval_ns` is the gap between packets; `burst` packets go back to back, so
    /// bursts are `burst × packet_interval_ns` apart. `None` means unpaced.
    pub fn new(
        mode: PacingMode,
        packet_interval_ns: Option<f64>,
        burst: u32,
        start_ns: u64,
    ) -> Pacer {
        let burst_interval_ns = match (mode, packet_interval_ns) {
            (PacingMode::None, _) | (_, None) => 0.0,
            (_, Some(i)) => i * f64::from(burst.max(1)),
        };
        let mode = if burst_interval_ns > 0.0 {
            mode
        } else {
            PacingMode::None
        };
        Pacer {
            mode,
            start_ns,
            burst_interval_ns,
            next_burst: 0,
            spin_ns: 0,
            late_bursts: 0,
            last_send_ns: None,
            gap_error_ns: Histogram::new_with_max(GAP_ERROR_MAX_NS, 3)
                .expect("static histogram bounds"),
        }
    }

    pub fn mode(&self) -> PacingMode {
        self.mode
    }

    /// The time burst `i` is due.
    pub fn scheduled_ns(&self, i: u64) -> u64 {
        self.start_ns + (i as f64 * self.burst_interval_ns) as u64
    }

    /// Waits until the next burst is due, or returns at once if it already is, or if
    /// `deadline_ns` comes first (then `None`). Never waits past `deadline_ns`, and never
    /// hands out a burst once the deadline has passed: a sender preempted across its deadline
    /// stops there instead of catching up with bursts scheduled after the run's end.
    pub fn wait(&mut self, deadline_ns: u64) -> Option<Due> {
        self.wait_on(deadline_ns, &mut now_ns)
    }

    /// [`Pacer::wait`] on a given clock, so that tests can stand in for the scheduler
    /// (a thread preempted for a millisecond is one jump of the clock). Sleep mode still
    /// sleeps on the real clock. Generic, not `dyn`: the spin loop reads the clock on every
    /// turn, and the live path must stay a direct, inlinable call to `now_ns`.
    fn wait_on<C: FnMut() -> u64>(&mut self, deadline_ns: u64, clock: &mut C) -> Option<Due> {
        if self.mode == PacingMode::None {
            let now = clock();
            if now >= deadline_ns {
                return None;
            }
            let i = self.next_burst;
            self.next_burst += 1;
            return Some(Due {
                bursts: 1,
                scheduled_ns: now.max(self.scheduled_ns(i)),
            });
        }
        let due_at = self.scheduled_ns(self.next_burst);
        if due_at >= deadline_ns {
            return None;
        }
        let mut now = clock();
        if now < due_at {
            match self.mode {
                PacingMode::Spin => {
                    let spin_start = now;
                    while now < due_at {
                        std::hint::spin_loop();
                        now = clock();
                    }
                    self.spin_ns += now - spin_start;
                }
                PacingMode::Sleep => {
                    sleep_until_ns(due_at);
                    now = clock();
                    if now < due_at {
                        // Woken early (signal): try again next call without claiming a burst.
                        return self.wait_on(deadline_ns, clock);
                    }
                }
                PacingMode::None => unreachable!(),
            }
        }
        // Off the CPU across the deadline: the run is over. Every burst counted below is then
        // scheduled at or before `now`, hence before the deadline.
        if now >= deadline_ns {
            return None;
        }
        // Every burst whose time has come is due now, up to the one scheduled at `now`.
        let behind = ((now - self.start_ns) as f64 / self.burst_interval_ns) as u64;
        let bursts = behind.saturating_sub(self.next_burst) + 1;
        // Burst j of these was due at due_at + j×I; it is late if it leaves more than I after that.
        let lateness = (now - due_at) as f64 - self.burst_interval_ns;
        if lateness > 0.0 {
            self.late_bursts += ((lateness / self.burst_interval_ns).ceil() as u64).min(bursts);
        }
        self.next_burst += bursts;
        Some(Due {
            bursts,
            scheduled_ns: due_at,
        })
    }

    /// Records that a burst actually left at `sent_ns`, for the gap-error statistics.
    pub fn record_send(&mut self, sent_ns: u64) {
        if self.mode != PacingMode::None {
            if let Some(prev) = self.last_send_ns {
                let gap = (sent_ns - prev) as f64;
                let err = (gap - self.burst_interval_ns).abs() as u64;
                let _ = self.gap_error_ns.record(err.min(GAP_ERROR_MAX_NS));
            }
        }
        self.last_send_ns = Some(sent_ns);
    }

    /// Nanoseconds spent busy-waiting so far.
    pub fn spin_ns(&self) -> u64 {
        self.spin_ns
    }

    /// Bursts sent later than one interval after their time, or sent together to catch up.
    pub fn late_bursts(&self) -> u64 {
        self.late_bursts
    }

    /// The gap-error histogram (ns); empty when unpaced.
    pub fn gap_errors(&self) -> &Histogram<u64> {
        &self.gap_error_ns
    }

    /// Bursts scheduled so far (including those just handed out).
    pub fn bursts_scheduled(&self) -> u64 {
        self.next_burst
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_is_absolute() {
        let p = Pacer::new(PacingMode::Sleep, Some(1000.0), 4, 10_000);
        assert_eq!(p.scheduled_ns(0), 10_000);
        assert_eq!(p.scheduled_ns(3), 10_000 + 3 * 4000);
    }

    #[test]
    fn behind_schedule_hands_out_every_due_burst() {
        // Start 1 ms in the past with 10 µs bursts: about 100 bursts are already due.
        let start = now_ns() - 1_000_000;
        let mut p = Pacer::new(PacingMode::Spin, Some(10_000.0), 1, start);
        let due = p.wait(u64::MAX).unwrap();
        assert!(due.bursts >= 100, "{due:?}");
        assert_eq!(due.scheduled_ns, start);
        assert!(p.late_bursts() >= 99);
    }

    /// A clock that advances `step_ns` per reading, and jumps by `jump_ns` at reading `at`
    /// (the thread was off the CPU).
    fn stepping_clock(start: u64, step_ns: u64, at: usize, jump_ns: u64) -> impl FnMut() -> u64 {
        let mut t = start;
        let mut reads = 0usize;
        move || {
            reads += 1;
            t += step_ns;
            if reads == at {
                t += jump_ns;
            }
            t
        }
    }

    fn drain(p: &mut Pacer, deadline: u64, clock: &mut impl FnMut() -> u64) -> (u64, u64) {
        let (mut sent, mut calls) = (0, 0);
        while let Some(d) = p.wait_on(deadline, clock) {
            assert!(
                d.scheduled_ns < deadline,
                "burst scheduled past the deadline"
            );
            sent += d.bursts;
            calls += 1;
            assert!(calls < 1_000_000, "the pacer never stopped");
        }
        (sent, calls)
    }

    #[test]
    fn spin_keeps_time_and_counts_spin() {
        // 2 ms at 20 µs from t = 0: bursts 0..=99 are due before the deadline.
        let start = 1_000_000;
        let mut p = Pacer::new(PacingMode::Spin, Some(20_000.0), 1, start);
        let mut clock = stepping_clock(start - 100_000, 50, usize::MAX, 0);
        let (sent, calls) = drain(&mut p, start + 2_000_000, &mut clock);
        assert_eq!(sent, 100);
        assert_eq!(calls, 100, "an unhurried spinner sends one burst per call");
        assert_eq!(p.late_bursts(), 0);
        // It spun from 100 µs before the start until the last burst, 1.98 ms after it.
        assert!(
            (2_000_000..2_100_000).contains(&p.spin_ns()),
            "spun {} ns",
            p.spin_ns()
        );
    }

    #[test]
    fn a_spinner_preempted_mid_run_catches_up_in_one_batch() {
        let start = 1_000_000;
        let mut p = Pacer::new(PacingMode::Spin, Some(20_000.0), 1, start);
        // Off the CPU for 300 µs around reading 2000 (≈ 100 µs into the run).
        let mut clock = stepping_clock(start, 50, 2000, 300_000);
        let (sent, calls) = drain(&mut p, start + 2_000_000, &mut clock);
        assert_eq!(sent, 100, "the late bursts are sent, not dropped");
        assert!(calls < 100, "{calls} calls: the catch-up was batched");
        assert!(p.late_bursts() >= 14, "{} late", p.late_bursts());
    }

    #[test]
    fn a_sender_off_the_cpu_across_its_deadline_stops_there() {
        // The flaky failure of old: preempted while spinning towards a burst near the end,
        // the pacer woke past the deadline and handed out every burst up to "now", 18 of
        // them scheduled after the run's end.
        let start = 1_000_000;
        let mut p = Pacer::new(PacingMode::Spin, Some(20_000.0), 1, start);
        // Reading ~39 000 falls at ≈ 1.95 ms, during the wait for burst 98; the jump ends
        // 360 µs past the deadline.
        let mut clock = stepping_clock(start, 50, 39_000, 410_000);
        let (sent, _) = drain(&mut p, start + 2_000_000, &mut clock);
        assert!(sent <= 98, "{sent} bursts: sent past the run's end");
        assert!(sent >= 97, "{sent} bursts: stopped early");
    }

    #[test]
    fn spin_on_the_real_clock_never_sends_past_its_deadline() {
        // Whatever the scheduler does, the count is bounded by the bursts due before the
        // deadline (100). Preemption can only lower it, and only near the end.
        let start = now_ns() + 100_000;
        let mut p = Pacer::new(PacingMode::Spin, Some(20_000.0), 1, start);
        let deadline = start + 2_000_000;
        let (sent, _) = drain(&mut p, deadline, &mut now_ns);
        assert!((1..=100).contains(&sent), "{sent}");
        assert!(p.spin_ns() > 0);
    }

    #[test]
    fn unpaced_never_waits() {
        let mut p = Pacer::new(PacingMode::Spin, None, 1, now_ns());
        assert_eq!(p.mode(), PacingMode::None);
        let d = p.wait(u64::MAX).unwrap();
        assert_eq!(d.bursts, 1);
        assert_eq!(p.spin_ns(), 0);
    }

    #[test]
    fn deadline_stops_the_schedule() {
        let start = now_ns();
        let mut p = Pacer::new(PacingMode::Sleep, Some(1e9), 1, start);
        let deadline = start + 500_000_000;
        assert!(p.wait(deadline).is_some()); // burst 0 is due at start
        assert!(p.wait(deadline).is_none()); // burst 1 is 1 s away, past the deadline
        let mut late = Pacer::new(PacingMode::Sleep, Some(1e9), 1, start);
        assert!(
            late.wait(start).is_none(),
            "the deadline has passed: nothing is due"
        );
    }
}
