//! What serve says about strangers: each refusal, timeout, failed proof and displaced
//! handshake as it happens, naming the client, in a volume a flood cannot grow (a few lines
//! per host and kind every 10 s, then one line per host saying how many more).

use netceil_ctl::{Host, LogBounds, LogLimiter, Summary};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::Say;

/// The kinds of event logged per host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Event {
    /// Closed to make room for a newer connection.
    Displaced,
    /// Closed at accept (no key: loopback only).
    TurnedAway,
    /// Silent past a step's deadline.
    TimedOut,
    /// Not the protocol, or a message out of order.
    Malformed,
    /// Version skew, over a limit, or busy.
    Refused,
    /// A request whose HMAC does not match the key.
    AuthFailed,
    /// The client closed before proving the key.
    Abandoned,
    /// The server could not go on with it (no nonce from the kernel).
    Failed,
}

impl Event {
    /// As counted in a summary: "12 displaced".
    fn counted(self) -> &'static str {
        match self {
            Event::Displaced => "displaced",
            Event::TurnedAway => "turned away",
            Event::TimedOut => "timed out",
            Event::Malformed => "malformed",
            Event::Refused => "refused",
            Event::AuthFailed => "failed authentication",
            Event::Abandoned => "closed before authenticating",
            Event::Failed => "failed on this side",
        }
    }
}

/// The event log: lines through `say`, bounded per host.
pub(super) struct EventLog {
    say: Say,
    limit: LogLimiter<Event>,
    window: Duration,
    /// When "out of descriptors" was last said (it names no host).
    descriptors_said: Option<Instant>,
}

impl EventLog {
    pub(super) fn new(say: Say) -> EventLog {
        let bounds = LogBounds::default();
        EventLog {
            say,
            limit: LogLimiter::new(bounds),
            window: bounds.window,
            descriptors_said: None,
        }
    }

    /// Says `line` (made only if it is to be said) about a client at `peer`.
    pub(super) fn note(&mut self, peer: SocketAddr, kind: Event, line: impl FnOnce() -> String) {
        let now = Instant::now();
        self.roll(now);
        if self.limit.admit(now, Host::from(peer.ip()), kind) {
            (self.say)(line());
        }
    }

    /// Says, at most once a window, that accept failed for want of descriptors.
    pub(super) fn out_of_descriptors(&mut self, e: &std::io::Error, evicted: bool) {
        let now = Instant::now();
        if self
            .descriptors_said
            .is_some_and(|t| now.duration_since(t) < self.window)
        {
            return;
        }
        self.descriptors_said = Some(now);
        (self.say)(format!(
            "cannot accept a control connection ({e}): {}",
            if evicted {
                "closing the oldest handshake of the host holding the most to make room (said once every 10 s)"
            } else {
                "no handshake to close; the connection waits in the kernel's queue (said once every 10 s)"
            }
        ));
    }

    /// At each turn of the loop: when a window ends, what was held back in it.
    pub(super) fn roll(&mut self, now: Instant) {
        let s = self.limit.roll(now);
        self.summarize(s);
    }

    /// At the end: what was held back since the last summary.
    pub(super) fn finish(&mut self) {
        let s = self.limit.drain();
        self.summarize(s);
    }

    fn summarize(&self, summaries: Vec<Summary<Event>>) {
        let secs = self.window.as_secs();
        for s in summaries {
            (self.say)(match s {
                Summary::Host { host, held } => {
                    let n: u64 = held.iter().map(|k| k.1).sum();
                    let kinds: Vec<String> = held
                        .iter()
                        .map(|(k, n)| format!("{n} {}", k.counted()))
                        .collect();
                    format!(
                        "{host}: {n} more event(s) not logged in the last {secs} s or less: {}",
                        kinds.join(", ")
                    )
                }
                Summary::Others { hosts, held } => format!(
                    "{held} more event(s) from {} not logged in the last {secs} s or less",
                    if hosts == 0 {
                        "other hosts".to_string()
                    } else {
                        format!("{hosts} or more other hosts")
                    }
                ),
            });
        }
    }
}
