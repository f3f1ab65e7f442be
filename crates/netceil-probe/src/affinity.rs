//! The CPUs a workload may run on: its affinity mask against the CPUs online.
//!
//! A workload held to some CPUs (`taskset -c 0`, a cpuset) has no headroom on the others, so
//! the analyzer sizes the CPU against these. Read from `/proc/PID/status` (`Cpus_allowed_list`,
//! the kernel's list syntax `0-3,8,10-11`) and `/sys/devices/system/cpu/online`, through
//! [`Source`] so tests can give any command a fake machine.

use std::collections::BTreeSet;

use crate::Source;

/// Parses the kernel's CPU list syntax (`0-3,8,10-11`); `None` when malformed. A list longer
/// than 65 536 CPUs is refused rather than expanded.
pub fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    const MAX_CPUS: u32 = 65_536;
    let t = text.trim();
    if t.is_empty() {
        return Some(Vec::new());
    }
    let mut out = BTreeSet::new();
    for part in t.split(',') {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?),
            None => {
                let v = part.parse::<u32>().ok()?;
                (v, v)
            }
        };
        if a > b || b >= MAX_CPUS {
            return None;
        }
        out.extend(a..=b);
    }
    Some(out.into_iter().collect())
}

/// The `Cpus_allowed_list` of a `/proc/PID/status` text.
pub fn cpus_allowed(status: &str) -> Option<Vec<u32>> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(parse_cpu_list)
}

/// The CPUs the processes `pids` may run on together, when that is narrower than the CPUs
/// online; `None` when they may use every online CPU, or when it cannot be read.
pub fn workload_cpus(source: &dyn Source, pids: &[u32]) -> Option<Vec<u32>> {
    let online = parse_cpu_list(&source.read("/sys/devices/system/cpu/online").ok()?)?;
    let mut allowed = BTreeSet::new();
    for pid in pids {
        let status = source.read(&format!("/proc/{pid}/status")).ok()?;
        allowed.extend(cpus_allowed(&status)?);
    }
    let mine: Vec<u32> = online
        .iter()
        .copied()
        .filter(|c| allowed.contains(c))
        .collect();
    (!mine.is_empty() && mine.len() < online.len()).then_some(mine)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FakeSource;

    #[test]
    fn cpu_lists_parse_ranges_and_refuse_nonsense() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("1"), Some(vec![1]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("a"), None);
        assert_eq!(parse_cpu_list("0-99999999"), None);
    }

    #[test]
    fn a_pinned_workload_is_narrower_than_the_machine() {
        let s = FakeSource::new();
        s.set("/sys/devices/system/cpu/online", "0-3\n");
        s.set(
            "/proc/7/status",
            "Name:\tx\nCpus_allowed:\t1\nCpus_allowed_list:\t0\n",
        );
        s.set("/proc/8/status", "Name:\ty\nCpus_allowed_list:\t2\n");
        s.set("/proc/9/status", "Name:\tz\nCpus_allowed_list:\t0-7\n");
        assert_eq!(workload_cpus(&s, &[7]), Some(vec![0]));
        assert_eq!(workload_cpus(&s, &[7, 8]), Some(vec![0, 2]));
        // Allowed on more than is online: the whole machine.
        assert_eq!(workload_cpus(&s, &[9]), None);
        // A process that is gone: not known.
        assert_eq!(workload_cpus(&s, &[7, 10]), None);
    }
}
