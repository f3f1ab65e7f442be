//! How many lines a server writes about what strangers do: every refusal, timeout and failed
//! proof is worth a line naming its host, but a flood of them must not fill the disk.
//!
//! In each window a host gets a few lines per kind of event; what is held back beyond them
//! is counted and said at the window's end in one line per host (the busiest few hosts, then
//! one line for all the others). The table is bounded too: a flood from many hosts costs
//! memory for a bounded number of them, and the rest are counted together.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::Host;

/// Events held back, per kind.
type HeldKinds<K> = Vec<(K, u64)>;

/// The bounds.
#[derive(Debug, Clone, Copy)]
pub struct LogBounds {
    pub window: Duration,
    /// Lines one host gets per kind of event in a window.
    pub per_host_kind: u32,
    /// Lines in all in a window (before the summaries).
    pub per_window: u32,
    /// Hosts (with kinds) counted one by one in a window; past them, events are counted
    /// together.
    pub hosts_tracked: usize,
    /// Hosts named in a window's summary; the others share one line.
    pub hosts_summarized: usize,
}

impl Default for LogBounds {
    fn default() -> Self {
        LogBounds {
            window: Duration::from_secs(10),
            per_host_kind: 2,
            per_window: 20,
            hosts_tracked: 1024,
            hosts_summarized: 10,
        }
    }
}

/// What was held back in a window, for its summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Summary<K> {
    /// One host's events not written, per kind, busiest kind first.
    Host { host: Host, held: Vec<(K, u64)> },
    /// Events of hosts not named: `hosts` counted ones past those summarized, and the events
    /// of hosts past those tracked (not counted one by one).
    Others { hosts: usize, held: u64 },
}

/// Decides which lines are written. `K` is the kind of event.
pub struct LogLimiter<K> {
    bounds: LogBounds,
    started: Option<Instant>,
    written: u32,
    counts: HashMap<(Host, K), (u32, u64)>,
    /// Events of hosts past `hosts_tracked`, and how many such events.
    untracked: u64,
}

impl<K: Copy + Eq + std::hash::Hash + Ord> LogLimiter<K> {
    pub fn new(bounds: LogBounds) -> Self {
        LogLimiter {
            bounds,
            started: None,
            written: 0,
            counts: HashMap::new(),
            untracked: 0,
        }
    }

    /// An event of `kind` from `host`: true if its line is to be written. Call
    /// [`LogLimiter::roll`] first, so the window is current.
    pub fn admit(&mut self, now: Instant, host: Host, kind: K) -> bool {
        self.started.get_or_insert(now);
        let tracked = self.counts.len() < self.bounds.hosts_tracked;
        let Some((shown, held)) = (match self.counts.get_mut(&(host, kind)) {
            Some(c) => Some(c),
            None if tracked => Some(self.counts.entry((host, kind)).or_insert((0, 0))),
            None => None,
        }) else {
            self.untracked += 1;
            return false;
        };
        if *shown < self.bounds.per_host_kind && self.written < self.bounds.per_window {
            *shown += 1;
            self.written += 1;
            true
        } else {
            *held += 1;
            false
        }
    }

    /// Ends the window if it is over at `now`: the summary of what was held back in it
    /// (empty if nothing was).
    pub fn roll(&mut self, now: Instant) -> Vec<Summary<K>> {
        match self.started {
            Some(t) if now.saturating_duration_since(t) >= self.bounds.window => self.drain(),
            _ => Vec::new(),
        }
    }

    /// Ends the window now (at the server's end): the summary of what was held back.
    pub fn drain(&mut self) -> Vec<Summary<K>> {
        let mut per_host: HashMap<Host, Vec<(K, u64)>> = HashMap::new();
        for ((host, kind), (_, held)) in self.counts.drain() {
            if held > 0 {
                per_host.entry(host).or_default().push((kind, held));
            }
        }
        // Each host's events held back in all, the host, and its kinds.
        let mut hosts: Vec<(u64, Host, HeldKinds<K>)> = per_host
            .into_iter()
            .map(|(h, mut kinds)| {
                kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                (kinds.iter().map(|k| k.1).sum(), h, kinds)
            })
            .collect();
        hosts.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then_with(|| a.1.to_string().cmp(&b.1.to_string()))
        });
        let mut out = Vec::new();
        let mut others = (0usize, self.untracked);
        for (i, (n, host, held)) in hosts.into_iter().enumerate() {
            if i < self.bounds.hosts_summarized {
                out.push(Summary::Host { host, held });
            } else {
                others.0 += 1;
                others.1 += n;
            }
        }
        if others.1 > 0 {
            out.push(Summary::Others {
                hosts: others.0,
                held: others.1,
            });
        }
        self.started = None;
        self.written = 0;
        self.untracked = 0;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn h(n: u8) -> Host {
        Host::V4(Ipv4Addr::new(10, 0, 0, n))
    }

    #[test]
    fn a_flooding_host_gets_a_few_lines_and_a_count() {
        let mut l = LogLimiter::new(LogBounds::default());
        let t = Instant::now();
        let written = (0..10_000).filter(|_| l.admit(t, h(1), 1u8)).count();
        assert_eq!(written, 2);
        assert!(l.admit(t, h(1), 2), "another kind has its own lines");
        assert!(l.admit(t, h(2), 1), "another host has its own lines");
        assert!(l.roll(t + Duration::from_secs(9)).is_empty(), "not yet");
        let s = l.roll(t + Duration::from_secs(10));
        assert_eq!(
            s,
            vec![Summary::Host {
                host: h(1),
                held: vec![(1, 9_998)]
            }]
        );
        // A new window: lines again.
        assert!(l.admit(t + Duration::from_secs(11), h(1), 1));
        assert!(l.drain().is_empty(), "nothing held back");
    }

    #[test]
    fn many_hosts_cost_bounded_lines_and_memory() {
        let bounds = LogBounds {
            hosts_tracked: 50,
            ..LogBounds::default()
        };
        let mut l = LogLimiter::new(bounds);
        let t = Instant::now();
        let mut written = 0;
        for round in 0..20 {
            for n in 0..=255u8 {
                written += usize::from(l.admit(t, h(n), round % 3));
            }
        }
        assert_eq!(written, 20, "the window's bound");
        assert!(l.counts.len() <= 50);
        let s = l.drain();
        assert_eq!(s.len(), bounds.hosts_summarized + 1);
        let held: u64 = s
            .iter()
            .map(|x| match x {
                Summary::Host { held, .. } => held.iter().map(|k| k.1).sum(),
                Summary::Others { held, .. } => *held,
            })
            .sum();
        assert_eq!(
            held as usize + written,
            20 * 256,
            "every event is written or counted"
        );
    }
}
