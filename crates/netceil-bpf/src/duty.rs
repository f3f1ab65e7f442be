//! The duty cycle of the per-packet probes (softirq, napi).
//!
//! On loopback a 64-byte datagram costs one softirq entry, one exit and one NAPI poll, so
//! every datagram runs three programs: about 68 ns each in the kernel (bpf_stats), which no
//! shorter program body can remove. These probes are therefore attached for a window of the
//! sampling interval and detached (the tracepoint switched off) in between: the workload pays
//! their cost only inside the windows. Their counters grow only while attached, and the time
//! they were attached is measured, so a rate is counts over attached time: a figure per
//! sampled second, not a whole interval's total scaled by a guess.

use std::time::Duration;

/// The shortest window worth attaching for: an attach or a detach is a few system calls and a
/// patched tracepoint, negligible against 20 ms.
pub const MIN_WINDOW: Duration = Duration::from_millis(20);

/// The share of time the per-packet probes are attached by default: one eighth.
pub const DEFAULT_DUTY: Duty = Duty { num: 1, den: 8 };

/// A share of time, `num / den` (1/1: always attached).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Duty {
    pub num: u32,
    pub den: u32,
}

/// When, within the sampler's intervals, the per-packet probes are attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Attached for the whole run.
    Always,
    /// Attached for `window` in one interval of every `every`, starting `offset` after that
    /// interval begins.
    Windows {
        every: u32,
        offset: Duration,
        window: Duration,
    },
}

impl Duty {
    /// Always attached.
    pub const ALWAYS: Duty = Duty { num: 1, den: 1 };

    pub fn is_always(self) -> bool {
        self.den == 0 || self.num >= self.den
    }

    /// The windows for a sampling interval. The window is the interval's share when that is
    /// at least [`MIN_WINDOW`]; otherwise a window of [`MIN_WINDOW`] (or the whole interval,
    /// if shorter) in one interval of every few, so that the share of time stays the duty's.
    /// The window sits in the middle of its interval.
    pub fn plan(self, interval: Duration) -> Plan {
        if self.is_always() || interval.is_zero() || self.num == 0 {
            return Plan::Always;
        }
        let share = interval * self.num / self.den;
        let (every, window) = if share >= MIN_WINDOW {
            (1, share)
        } else {
            let window = MIN_WINDOW.min(interval);
            // Intervals per window, rounded to the nearest, so the share stays close to num/den.
            let every = (window.as_secs_f64() / share.as_secs_f64())
                .round()
                .max(1.0) as u32;
            (every, window)
        };
        if every == 1 && window >= interval {
            return Plan::Always;
        }
        Plan::Windows {
            every,
            offset: (interval - window) / 2,
            window,
        }
    }
}

impl Plan {
    /// The share of time attached, 0..=1.
    pub fn share(&self, interval: Duration) -> f64 {
        match *self {
            Plan::Always => 1.0,
            Plan::Windows { every, window, .. } => {
                window.as_secs_f64() / (interval.as_secs_f64() * f64::from(every))
            }
        }
    }

    /// How the plan reads in a note: "attached for 125 ms of every 1 s".
    pub fn describe(&self, interval: Duration) -> String {
        match *self {
            Plan::Always => "attached for the whole run".into(),
            Plan::Windows { every, window, .. } => format!(
                "attached for {} ms of every {} ms ({:.1} % of the time)",
                window.as_millis(),
                (interval * every).as_millis(),
                self.share(interval) * 100.0
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn one_second_intervals_get_an_eighth_of_each_in_the_middle() {
        let p = DEFAULT_DUTY.plan(MS(1000));
        assert_eq!(
            p,
            Plan::Windows {
                every: 1,
                offset: MS(437) + Duration::from_micros(500),
                window: MS(125),
            }
        );
        assert_eq!(p.share(MS(1000)), 0.125);
        assert_eq!(
            p.describe(MS(1000)),
            "attached for 125 ms of every 1000 ms (12.5 % of the time)"
        );
    }

    /// A 10 ms interval cannot hold a 20 ms window: one whole interval in eight. At 100 ms
    /// the window is 20 ms in one interval of two (10 %, the nearest to an eighth).
    #[test]
    fn short_intervals_attach_in_one_interval_of_several() {
        let p = DEFAULT_DUTY.plan(MS(10));
        assert_eq!(
            p,
            Plan::Windows {
                every: 8,
                offset: MS(0),
                window: MS(10)
            }
        );
        assert_eq!(p.share(MS(10)), 0.125);
        let p = DEFAULT_DUTY.plan(MS(100));
        assert_eq!(
            p,
            Plan::Windows {
                every: 2,
                offset: MS(40),
                window: MS(20)
            }
        );
        assert!((p.share(MS(100)) - 0.1).abs() < 1e-12);
    }

    #[test]
    fn a_full_duty_is_always_attached() {
        assert_eq!(Duty::ALWAYS.plan(MS(1000)), Plan::Always);
        assert_eq!(Duty { num: 3, den: 2 }.plan(MS(10)), Plan::Always);
        assert_eq!(Plan::Always.share(MS(10)), 1.0);
    }
}
