//! A small epoll loop with a nanosecond timer, shared by the TCP sender, the sink/echo server and
//! the request/response client.
//!
//! `epoll_wait` only takes milliseconds, too coarse for pacing at 10 k requests/s. A timerfd
//! armed at an absolute CLOCK_MONOTONIC time is in the same epoll set, so one wait ends at the
//! first of: a socket event, the next scheduled send, or the ~50 ms stop-check tick. Timerfd
//! expiries are exact hrtimers (no timer slack), unlike poll-style timeouts.

use std::os::fd::AsFd;

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

use crate::LoadError;

/// The token the timer's events carry; sockets use their own (smaller) tokens.
pub(crate) const TIMER_TOKEN: u64 = u64::MAX;
/// Longest single wait, so a stop request is seen within this many ms.
pub(crate) const TICK_MS: u16 = 50;

pub(crate) struct EventLoop {
    epoll: Epoll,
    timer: TimerFd,
    armed_at: Option<u64>,
    events: Vec<EpollEvent>,
}

impl EventLoop {
    pub(crate) fn new(capacity: usize) -> Result<EventLoop, LoadError> {
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)
            .map_err(|e| LoadError::socket("epoll_create1", e))?;
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )
        .map_err(|e| LoadError::socket("timerfd_create", e))?;
        epoll
            .add(&timer, EpollEvent::new(EpollFlags::EPOLLIN, TIMER_TOKEN))
            .map_err(|e| LoadError::socket("epoll_ctl add timerfd", e))?;
        Ok(EventLoop {
            epoll,
            timer,
            armed_at: None,
            events: vec![EpollEvent::empty(); capacity.clamp(16, 1024)],
        })
    }

    pub(crate) fn add(
        &self,
        fd: impl AsFd,
        token: u64,
        flags: EpollFlags,
    ) -> Result<(), LoadError> {
        self.epoll
            .add(fd, EpollEvent::new(flags, token))
            .map_err(|e| LoadError::socket("epoll_ctl add", e))
    }

    pub(crate) fn modify(
        &self,
        fd: impl AsFd,
        token: u64,
        flags: EpollFlags,
    ) -> Result<(), LoadError> {
        self.epoll
            .modify(fd, &mut EpollEvent::new(flags, token))
            .map_err(|e| LoadError::socket("epoll_ctl modify", e))
    }

    pub(crate) fn delete(&self, fd: impl AsFd) {
        // Closing the socket removes it anyway; a failure here changes nothing.
        let _ = self.epoll.delete(fd);
    }

    /// Waits for events until `wake_at_ns` (absolute, CLOCK_MONOTONIC), at most [`TICK_MS`];
    /// `Some(0)`-like past times return at once. Returns the (token, flags) pairs.
    pub(crate) fn wait(
        &mut self,
        wake_at_ns: Option<u64>,
        now_ns: u64,
    ) -> Result<impl Iterator<Item = (u64, EpollFlags)> + '_, LoadError> {
        let timeout_ms: u16 = match wake_at_ns {
            Some(t) if t <= now_ns => 0,
            Some(t) => {
                // Arming a timerfd also clears a past expiry, so it never fires stale.
                if self.armed_at != Some(t) {
                    let ts = TimeSpec::new(
                        (t / 1_000_000_000) as libc::time_t,
                        (t % 1_000_000_000) as libc::c_long,
                    );
                    self.timer
                        .set(
                            Expiration::OneShot(ts),
                            TimerSetTimeFlags::TFD_TIMER_ABSTIME,
                        )
                        .map_err(|e| LoadError::socket("timerfd_settime", e))?;
                    self.armed_at = Some(t);
                }
                TICK_MS
            }
            None => {
                if self.armed_at.take().is_some() {
                    self.timer
                        .unset()
                        .map_err(|e| LoadError::socket("timerfd_settime", e))?;
                }
                TICK_MS
            }
        };
        let n = match self.epoll.wait(&mut self.events, timeout_ms) {
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR) => 0,
            Err(e) => return Err(LoadError::socket("epoll_wait", e)),
        };
        if self.events[..n].iter().any(|e| e.data() == TIMER_TOKEN) {
            // Fired: it is spent, and must be re-armed (which resets it) before it can fire again.
            let _ = self.timer.unset();
            self.armed_at = None;
        }
        Ok(self.events[..n]
            .iter()
            .filter(|e| e.data() != TIMER_TOKEN)
            .map(|e| (e.data(), e.events())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::now_ns;

    #[test]
    fn timer_wakes_at_the_absolute_time() {
        let mut ev = EventLoop::new(4).unwrap();
        let start = now_ns();
        let wake = start + 3_000_000;
        loop {
            let now = now_ns();
            if now >= wake {
                break;
            }
            assert_eq!(ev.wait(Some(wake), now).unwrap().count(), 0);
        }
        let late_ns = now_ns() - wake;
        // Generous for a loaded 2-core box; the point is that it is not the 50 ms tick.
        assert!(late_ns < 20_000_000, "woke {late_ns} ns late");
    }
}
