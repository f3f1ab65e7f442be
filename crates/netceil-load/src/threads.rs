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

use std::collections::BTreeSet;
use std::io;
use std::sync::{Mutex, PoisonError};
use std::thread::{Builder, JoinHandle, Scope, ScopedJoinHandle};

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
    fn a_plain_thread_is_not_recorded() {
        let plain = std::thread::spawn(current_thread_id).join().unwrap();
        assert!(!spawned_thread_ids().contains(&plain));
    }
}
