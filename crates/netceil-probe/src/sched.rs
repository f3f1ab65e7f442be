//! How the sampler thread is scheduled: out of the workload's way, yet never starved.
//!
//! By default the sampler runs at nice 10 ([`nice_this_thread`]). For a request/response run
//! the engine asks for more (`SamplerConfig::idle_class`, [`lower_this_thread`]).
//!
//! The sampler reads for a few milliseconds a second. At nice 10 alone, the kernel's EEVDF
//! scheduler still lets it finish its slice (about 3 ms) before a workload thread that wakes on
//! the same CPU may run: a request/response run then finds the sampler's reads in its tail.
//! In the idle scheduling class (`SCHED_IDLE`) every ordinary thread that wakes preempts it at
//! once; but on CPUs that ordinary threads keep full it gets almost nothing (a weight of 3
//! against 1024), and its rows would come seconds late. So the sampler starts in the idle
//! class, and moves to the ordinary class at nice 10 (about a tenth of a full CPU) the first
//! time a sample comes late by more than [`late_limit`]: the CPUs are full, and its rows
//! matter more then than the few milliseconds it takes.
//!
//! Leaving the idle class takes `CAP_SYS_NICE` or a `RLIMIT_NICE` that allows nice 10 (the
//! kernel's rule for unprivileged threads). Without either, the sampler does not enter it and
//! stays at nice 10.
//!
//! This is the only module of the crate with `unsafe`: `sched_setscheduler`, which neither
//! nix nor rustix wraps, on a thread id and a parameter block we own.
#![allow(unsafe_code)]

use std::io;
use std::time::Duration;

/// The sampler's niceness in the ordinary class (see the module docs).
pub const SAMPLER_NICE: i32 = 10;

/// The capability that lets a thread leave the idle class whatever its limits.
const CAP_SYS_NICE: u32 = 23;

/// How the sampler thread was scheduled over a recording.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SamplerPriority {
    /// The ordinary class at nice 10 throughout: the idle class was not asked for, or not
    /// entered, since the process could not have left it (or the kernel refused it).
    Nice,
    /// The idle class throughout: every workload thread that woke preempted it.
    Idle,
    /// The idle class until `at_s` after the first sample, when a sample came `late_ms`
    /// late because the CPUs were full; the ordinary class at nice 10 from then on.
    Raised { at_s: f64, late_ms: f64 },
}

/// How late a sample may come before the sampler leaves the idle class: a quarter of the
/// interval, and at least 2 ms (a loaded CPU's ordinary wake-up delay).
pub fn late_limit(interval: Duration) -> Duration {
    (interval / 4).max(Duration::from_millis(2))
}

/// Whether `CapEff` in a /proc/PID/status text has `bit` set. `None` when the line is missing
/// or not hexadecimal.
pub fn cap_effective(status: &str, bit: u32) -> Option<bool> {
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))?
        .trim();
    let caps = u64::from_str_radix(hex, 16).ok()?;
    Some(bit < 64 && caps & (1 << bit) != 0)
}

/// Lowers the calling thread to nice 10 only.
pub fn nice_this_thread() -> SamplerPriority {
    // On Linux nice() applies to the calling thread alone; failing leaves it at the
    // process's niceness, which only costs what this avoids.
    #[cfg(target_os = "linux")]
    let _ = rustix::process::nice(SAMPLER_NICE);
    SamplerPriority::Nice
}

/// Lowers the calling thread: nice 10, then the idle class when it may come back (see the
/// module docs). Returns where it ended.
#[cfg(target_os = "linux")]
pub fn lower_this_thread() -> SamplerPriority {
    nice_this_thread();
    if !may_leave_idle() {
        return SamplerPriority::Nice;
    }
    match set_policy(0, libc::SCHED_IDLE) {
        Ok(()) => SamplerPriority::Idle,
        Err(_) => SamplerPriority::Nice,
    }
}

#[cfg(not(target_os = "linux"))]
pub fn lower_this_thread() -> SamplerPriority {
    nice_this_thread()
}

/// Moves thread `tid` (0: the calling thread) of this process from the idle class to the
/// ordinary class; its nice value stays what it was.
#[cfg(target_os = "linux")]
pub fn raise(tid: i32) -> io::Result<()> {
    set_policy(tid, libc::SCHED_OTHER)
}

#[cfg(not(target_os = "linux"))]
pub fn raise(_tid: i32) -> io::Result<()> {
    Ok(())
}

/// The calling thread's id, for another thread to [`raise`] it.
#[cfg(target_os = "linux")]
pub fn this_thread_id() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

#[cfg(not(target_os = "linux"))]
pub fn this_thread_id() -> i32 {
    0
}

/// Whether this process may leave the idle class at nice 10: the kernel allows it with
/// `CAP_SYS_NICE`, or when `RLIMIT_NICE` reaches 20 - nice.
#[cfg(target_os = "linux")]
fn may_leave_idle() -> bool {
    // The process's own privileges, not an observation of the machine: read here, not
    // through a `Source` (which may serve another machine's /proc).
    let capable = std::fs::read_to_string("/proc/thread-self/status")
        .ok()
        .and_then(|s| cap_effective(&s, CAP_SYS_NICE))
        .unwrap_or(false);
    let wanted = u64::try_from(20 - SAMPLER_NICE).unwrap_or(u64::MAX);
    let limit = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NICE)
        .map(|(soft, _)| soft)
        .unwrap_or(0);
    capable || limit >= wanted
}

#[cfg(target_os = "linux")]
fn set_policy(tid: i32, policy: libc::c_int) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid, initialised sched_param that outlives the call; the kernel
    // only reads it. A bad tid or policy is an error return, not undefined behaviour.
    let r = unsafe { libc::sched_setscheduler(tid, policy, &param) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Field `n` (1-based, as proc(5) numbers them) of thread `tid`'s stat: 19 is its nice value,
/// 41 its policy (0 ordinary, 5 idle).
#[cfg(all(test, target_os = "linux"))]
fn stat_field(tid: i32, n: usize) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    // Field 3 is the first after the command.
    after.split_whitespace().nth(n - 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_late_limit_is_a_quarter_interval_and_at_least_two_milliseconds() {
        assert_eq!(
            late_limit(Duration::from_secs(1)),
            Duration::from_millis(250)
        );
        assert_eq!(
            late_limit(Duration::from_millis(10)),
            Duration::from_micros(2500)
        );
        assert_eq!(
            late_limit(Duration::from_millis(4)),
            Duration::from_millis(2)
        );
    }

    #[test]
    fn cap_eff_is_read_bit_by_bit_and_a_malformed_line_is_unknown() {
        let root = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(cap_effective(root, CAP_SYS_NICE), Some(true));
        let only_nice = "CapEff:\t0000000000800000\n";
        assert_eq!(cap_effective(only_nice, CAP_SYS_NICE), Some(true));
        assert_eq!(cap_effective(only_nice, 22), Some(false));
        assert_eq!(
            cap_effective("CapEff:\t0000000000000000\n", CAP_SYS_NICE),
            Some(false)
        );
        assert_eq!(cap_effective("CapEff:\tzz\n", CAP_SYS_NICE), None);
        assert_eq!(cap_effective("Name:\tx\n", CAP_SYS_NICE), None);
        assert_eq!(cap_effective(root, 64), Some(false));
    }

    /// A thread that may leave the idle class enters it, and another thread raises it back.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_lowered_to_the_idle_class_is_raised_by_another() {
        if !may_leave_idle() {
            eprintln!("skipped: this process could not leave the idle class (no CAP_SYS_NICE, RLIMIT_NICE below 10)");
            return;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            let got = lower_this_thread();
            tx.send((this_thread_id(), got)).unwrap();
            done_rx.recv().unwrap();
        });
        let (tid, got) = rx.recv().unwrap();
        assert_eq!(got, SamplerPriority::Idle);
        assert_eq!(stat_field(tid, 41), Some(5), "SCHED_IDLE");
        assert_eq!(stat_field(tid, 19), Some(i64::from(SAMPLER_NICE)));
        raise(tid).unwrap();
        assert_eq!(stat_field(tid, 41), Some(0), "SCHED_OTHER");
        assert_eq!(stat_field(tid, 19), Some(i64::from(SAMPLER_NICE)));
        done_tx.send(()).unwrap();
        t.join().unwrap();
    }
}
