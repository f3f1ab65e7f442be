//! The OS thread ids of the threads the load engine starts.
//!
//! A live run samples netceil's own process, so its senders, receivers, echo servers and
//! request/response clients appear among the thread metrics beside everything else. An unpaced
//! sender runs flat out by design; the analyzer must leave these threads out of its verdicts
//! about the system's threads, and a thread's name cannot be trusted for that (anyone can name
//! a thread `netceil-…`). So every thread the engine starts records its kernel thread id
//! (gettid, the `tid` label of the thread metrics) the moment it begins, and the caller copies
//! [`spawned_thread_ids`] into the Run.
//!
//! The registry is process-wide because the fact is: thread ids belong to the process, and
//! one `netceil run` is one process. It only grows; a load thread that has ended keeps its entry,
//! since the samples it left behind still carry its id.

use nix::sched::{sched_getaffinity, sched_getcpu, sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use std::collections::BTreeSet;
use std::io;
use std::sync::{Mutex, PoisonError};
use std::thread::{Builder, JoinHandle, Scope, ScopedJoinHandle};

use crate::LoadError;

static SPAWNED: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// The kernel's id of the calling thread.
pub fn current_thread_id() -> u32 {
    // gettid never fails and thread ids are positive.
    nix::unistd::gettid().as_raw().unsigned_abs()
}

fn record_current() {
    SPAWNED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(current_thread_id());
}

/// OS thread ids of every thread the load engine has started in this process, ascending.
pub fn spawned_thread_ids() -> Vec<u32> {
    SPAWNED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .copied()
        .collect()
}

/// The CPUs this process may run on, ascending: its affinity, which a cgroup cpuset or
/// `taskset` limits. Read from the process's main thread, so a pinned load thread does not
/// narrow it.
pub fn allowed_cpus() -> Result<Vec<usize>, LoadError> {
    let set = sched_getaffinity(Pid::this())
        .map_err(|e| LoadError::Other(format!("cannot read this process's CPU affinity: {e}")))?;
    Ok((0..CpuSet::count())
        .filter(|c| set.is_set(*c).unwrap_or(false))
        .collect())
}

/// Checks that `cpu`, asked for by `flag`, is one this process may run on.
pub fn check_cpu(cpu: usize, flag: &str) -> Result<(), LoadError> {
    let allowed = allowed_cpus()?;
    if allowed.contains(&cpu) {
        return Ok(());
    }
    let list: Vec<String> = allowed.iter().map(|c| c.to_string()).collect();
    Err(LoadError::InvalidConfig(format!(
        "{flag} {cpu}: this process may run only on CPU {} (its affinity, set by a cgroup cpuset or taskset); expected one of those",
        list.join(", ")
    )))
}

/// Checks the CPUs asked for the receiving thread(s) (`--rx-cpu`) and the sending ones
/// (`--tx-cpu`); `remote`: the receiver is a far end's, which this process cannot place.
pub fn check_placement(
    rx_cpu: Option<usize>,
    tx_cpu: Option<usize>,
    remote: bool,
) -> Result<(), LoadError> {
    if let Some(c) = rx_cpu {
        if remote {
            return Err(LoadError::InvalidConfig(
                "--rx-cpu places the in-process receiver; with --to the receiver is the far end's own".into(),
            ));
        }
        check_cpu(c, "--rx-cpu")?;
    }
    if let Some(c) = tx_cpu {
        check_cpu(c, "--tx-cpu")?;
    }
    Ok(())
}

/// What a run's notes say of where its threads were placed; `None` when nothing was asked.
pub fn placement_note(rx_cpu: Option<usize>, tx_cpu: Option<usize>) -> Option<String> {
    let part = |who: &str, c: Option<usize>| c.map(|c| format!("{who} on CPU {c}"));
    let parts: Vec<String> = [
        part("the receiving thread(s)", rx_cpu),
        part("the sending thread(s)", tx_cpu),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!parts.is_empty()).then(|| format!("placed as asked: {}", parts.join(", ")))
}

/// Places the calling thread on `cpu` (nothing for `None`), and checks that it runs there.
/// A CPU outside the process's allowed set is refused by the kernel (EINVAL); callers check
/// it first with [`check_cpu`] so that the user is told before any load goes out.
pub(crate) fn place(cpu: Option<usize>) -> Result<(), LoadError> {
    let Some(cpu) = cpu else {
        return Ok(());
    };
    let fail = |why: String| {
        LoadError::InvalidConfig(format!("cannot place a thread on CPU {cpu}: {why}"))
    };
    let mut set = CpuSet::new();
    set.set(cpu).map_err(|e| fail(e.to_string()))?;
    sched_setaffinity(Pid::from_raw(0), &set).map_err(|e| {
        fail(format!(
            "{e} (not one of the CPUs this process may run on?)"
        ))
    })?;
    // The kernel migrates the caller before sched_setaffinity returns.
    match sched_getcpu() {
        Ok(on) if on != cpu => Err(fail(format!("it still runs on CPU {on}"))),
        _ => Ok(()),
    }
}

/// Starts a named load thread that records its id before it runs `f`.
pub(crate) fn spawn<T, F>(name: String, f: F) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Builder::new().name(name).spawn(move || {
        record_current();
        f()
    })
}

/// [`spawn`] inside a thread scope.
pub(crate) fn spawn_scoped<'scope, 'env, T, F>(
    scope: &'scope Scope<'scope, 'env>,
    name: String,
    f: F,
) -> io::Result<ScopedJoinHandle<'scope, T>>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    Builder::new().name(name).spawn_scoped(scope, move || {
        record_current();
        f()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spawned_thread_records_its_own_id_and_not_the_callers() {
        let caller = current_thread_id();
        let inner = spawn("netceil-test".into(), current_thread_id)
            .unwrap()
            .join()
            .unwrap();
        let scoped = std::thread::scope(|s| {
            spawn_scoped(s, "netceil-test-scoped".into(), current_thread_id)
                .unwrap()
                .join()
                .unwrap()
        });
        let ids = spawned_thread_ids();
        assert_ne!(inner, caller);
        assert!(ids.contains(&inner), "{inner} not in {ids:?}");
        assert!(ids.contains(&scoped), "{scoped} not in {ids:?}");
        assert!(
            !ids.contains(&caller),
            "the caller {caller} is not a load thread"
        );
    }

    #[test]
    fn a_thread_placed_on_a_cpu_runs_there_and_a_cpu_outside_the_set_is_refused() {
        let allowed = allowed_cpus().unwrap();
        let last = *allowed.last().unwrap();
        let on = spawn("netceil-test-pin".into(), move || {
            place(Some(last)).map(|()| sched_getcpu().unwrap())
        })
        .unwrap()
        .join()
        .unwrap()
        .unwrap();
        assert_eq!(on, last);
        // The placement is the thread's own: the caller's set is unchanged.
        assert_eq!(allowed_cpus().unwrap(), allowed);
        let outside = CpuSet::count() - 1;
        assert!(!allowed.contains(&outside));
        let e = check_cpu(outside, "--rx-cpu").unwrap_err().to_string();
        assert!(
            e.contains("--rx-cpu") && e.contains("may run only on"),
            "{e}"
        );
        let e = spawn("netceil-test-pin".into(), move || place(Some(outside)))
            .unwrap()
            .join()
            .unwrap()
            .unwrap_err();
        assert!(e.to_string().contains(&format!("CPU {outside}")), "{e}");
        assert!(check_cpu(last, "--rx-cpu").is_ok());
        assert!(place(None).is_ok());
    }

    #[test]
    fn a_plain_thread_is_not_recorded() {
        let plain = std::thread::spawn(current_thread_id).join().unwrap();
        assert!(!spawned_thread_ids().contains(&plain));
    }
}
