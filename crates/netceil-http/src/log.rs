//! Log lines about clients, rate-limited so that a flood cannot fill the log: at most
//! `per_window` lines per window, and past that one line per window that counts the rest.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct RateLimitedLog {
    per_window: u32,
    window: Duration,
    started: Instant,
    shown: u32,
    /// What was not shown in this window, by kind.
    held: BTreeMap<&'static str, u64>,
}

impl RateLimitedLog {
    pub fn new(per_window: u32, window: Duration, now: Instant) -> RateLimitedLog {
        RateLimitedLog {
            per_window,
            window,
            started: now,
            shown: 0,
            held: BTreeMap::new(),
        }
    }

    /// The lines to print for one more event of `kind` described by `line`: the count of an
    /// ended window's unshown events first, if any, then `line` if this window has room left.
    pub fn note(&mut self, kind: &'static str, line: String, now: Instant) -> Vec<String> {
        let mut out: Vec<String> = self.tick(now).into_iter().collect();
        if self.shown < self.per_window {
            self.shown += 1;
            out.push(line);
        } else {
            *self.held.entry(kind).or_default() += 1;
        }
        out
    }

    /// Ends the window if its time is up: the line counting what it did not show, if anything.
    pub fn tick(&mut self, now: Instant) -> Option<String> {
        if now < self.started + self.window {
            return None;
        }
        self.started = now;
        self.shown = 0;
        if self.held.is_empty() {
            return None;
        }
        let total: u64 = self.held.values().sum();
        let parts: Vec<String> = self
            .held
            .iter()
            .map(|(kind, n)| format!("{n} {kind}"))
            .collect();
        self.held.clear();
        Some(format!(
            "{total} more not shown one by one in the last {:.0} s: {}",
            self.window.as_secs_f64(),
            parts.join(", ")
        ))
    }

    /// When [`RateLimitedLog::tick`] will have a line to give, if it will.
    pub fn due(&self) -> Option<Instant> {
        (!self.held.is_empty()).then_some(self.started + self.window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_costs_a_few_lines_and_a_count() {
        let t0 = Instant::now();
        let mut log = RateLimitedLog::new(3, Duration::from_secs(10), t0);
        let mut lines = Vec::new();
        for i in 0..10_000u32 {
            let kind = if i % 2 == 0 { "refused" } else { "timed out" };
            lines.extend(log.note(kind, format!("event {i}"), t0 + Duration::from_millis(1)));
        }
        assert_eq!(lines, ["event 0", "event 1", "event 2"]);
        assert_eq!(log.due(), Some(t0 + Duration::from_secs(10)));
        assert_eq!(log.tick(t0 + Duration::from_secs(9)), None);
        assert_eq!(
            log.tick(t0 + Duration::from_secs(10)).as_deref(),
            Some("9997 more not shown one by one in the last 10 s: 4998 refused, 4999 timed out")
        );
        assert_eq!(log.due(), None);
        assert_eq!(
            log.note("refused", "again".into(), t0 + Duration::from_secs(11)),
            ["again"]
        );
    }

    #[test]
    fn the_count_comes_before_the_next_line() {
        let t0 = Instant::now();
        let mut log = RateLimitedLog::new(1, Duration::from_secs(1), t0);
        assert_eq!(log.note("refused", "a".into(), t0), ["a"]);
        assert!(log.note("refused", "b".into(), t0).is_empty());
        let later = log.note("refused", "c".into(), t0 + Duration::from_secs(2));
        assert_eq!(later.len(), 2, "{later:?}");
        assert!(later[0].starts_with("1 more"), "{later:?}");
        assert_eq!(later[1], "c");
    }
}
