//! The CPU a workload's cgroup may use: its CFS bandwidth quota, and how often it was
//! throttled against it.
//!
//! A workload in a cgroup with a CPU quota (`cpu.max` in cgroup v2, `cpu.cfs_quota_us` over
//! `cpu.cfs_period_us` in v1) gets at most quota ÷ period of a CPU, however idle the cores
//! are: the scheduler throttles it for the rest of each period. No core is ever full, so
//! without these figures the run looks as if nothing held it. The quota that binds is the
//! smallest on the way from the process's cgroup up to the root. Throttling is read from the
//! same cgroup's `cpu.stat` (`nr_periods`, `nr_throttled`), usage from `cpu.stat` `usage_usec`
//! (v2) or `cpuacct.usage` (v1). Everything is read through [`Source`].

use crate::Source;

/// A cgroup's CPU limit and counters at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupCpu {
    /// The cgroup whose quota binds, as /proc/PID/cgroup names it (`/netceil-quota`).
    pub path: String,
    /// The quota in CPUs (quota ÷ period): 0.25 is a quarter of one CPU.
    pub quota_cpus: f64,
    /// CFS periods elapsed and periods in which the cgroup was throttled.
    pub nr_periods: Option<u64>,
    pub nr_throttled: Option<u64>,
    /// CPU time the cgroup used, µs.
    pub usage_usec: Option<u64>,
}

/// The cgroup v2 path of a `/proc/PID/cgroup` text (`0::/a/b`).
pub fn v2_path(text: &str) -> Option<&str> {
    text.lines().find_map(|l| l.strip_prefix("0::"))
}

/// The cgroup v1 path of the hierarchy that has `controller` (`4:cpu,cpuacct:/a/b`), and the
/// hierarchy's controller list as mounted (`cpu,cpuacct`).
pub fn v1_path<'t>(text: &'t str, controller: &str) -> Option<(&'t str, &'t str)> {
    text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, list, path) = (f.next()?, f.next()?, f.next()?);
        list.split(',')
            .any(|c| c == controller)
            .then_some((list, path))
    })
}

/// A v2 `cpu.max` (`25000 100000`, or `max 100000`): the quota in CPUs, `None` for no limit.
pub fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut f = text.split_whitespace();
    let quota = f.next()?.parse::<f64>().ok()?;
    let period = f.next()?.parse::<f64>().ok()?;
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

/// A key of a `cpu.stat` text (`nr_throttled 12`).
pub fn stat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// The path and its ancestors, the path first: `/a/b`, `/a`, `/`.
fn up(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut p = path.trim_end_matches('/').to_string();
    loop {
        out.push(if p.is_empty() { "/".into() } else { p.clone() });
        match p.rfind('/') {
            Some(i) if !p.is_empty() => p.truncate(i),
            _ => break,
        }
    }
    out
}

/// The tightest CPU quota over the cgroup of `pid` and its ancestors, with its counters;
/// `None` without a quota (or when the files cannot be read).
pub fn read(source: &dyn Source, pid: u32) -> Option<CgroupCpu> {
    let text = source.read(&format!("/proc/{pid}/cgroup")).ok()?;
    let v2 = source.read("/sys/fs/cgroup/cgroup.controllers").is_ok();
    if v2 {
        let path = v2_path(&text)?;
        let (quota, at) = up(path)
            .into_iter()
            .filter_map(|p| {
                let dir = format!("/sys/fs/cgroup{}", p.trim_end_matches('/'));
                let q = parse_cpu_max(&source.read(&format!("{dir}/cpu.max")).ok()?)?;
                Some((q, p))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))?;
        let dir = format!("/sys/fs/cgroup{}", at.trim_end_matches('/'));
        let stat = source.read(&format!("{dir}/cpu.stat")).unwrap_or_default();
        return Some(CgroupCpu {
            path: at,
            quota_cpus: quota,
            nr_periods: stat_value(&stat, "nr_periods"),
            nr_throttled: stat_value(&stat, "nr_throttled"),
            usage_usec: stat_value(&stat, "usage_usec"),
        });
    }
    let (list, path) = v1_path(&text, "cpu")?;
    let mount = format!("/sys/fs/cgroup/{list}");
    let (quota, at) = up(path)
        .into_iter()
        .filter_map(|p| {
            let dir = format!("{mount}{}", p.trim_end_matches('/'));
            let q: f64 = source
                .read(&format!("{dir}/cpu.cfs_quota_us"))
                .ok()?
                .trim()
                .parse()
                .ok()?;
            let period: f64 = source
                .read(&format!("{dir}/cpu.cfs_period_us"))
                .ok()?
                .trim()
                .parse()
                .ok()?;
            (q > 0.0 && period > 0.0).then(|| (q / period, p))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))?;
    let dir = format!("{mount}{}", at.trim_end_matches('/'));
    let stat = source.read(&format!("{dir}/cpu.stat")).unwrap_or_default();
    let usage = v1_path(&text, "cpuacct").and_then(|(l, _)| {
        let d = format!("/sys/fs/cgroup/{l}{}", at.trim_end_matches('/'));
        source
            .read(&format!("{d}/cpuacct.usage"))
            .ok()?
            .trim()
            .parse::<u64>()
            .ok()
    });
    Some(CgroupCpu {
        path: at,
        quota_cpus: quota,
        nr_periods: stat_value(&stat, "nr_periods"),
        nr_throttled: stat_value(&stat, "nr_throttled"),
        usage_usec: usage.map(|ns| ns / 1000),
    })
}

/// What the cgroup did between two readings: CPUs used on average over `wall_s` seconds, and
/// the share of CFS periods in which it was throttled (%).
pub fn between(a: &CgroupCpu, b: &CgroupCpu, wall_s: f64) -> (Option<f64>, Option<f64>) {
    let used = match (a.usage_usec, b.usage_usec) {
        (Some(x), Some(y)) if y >= x && wall_s > 0.0 => Some((y - x) as f64 / 1e6 / wall_s),
        _ => None,
    };
    let throttled = match (a.nr_periods, b.nr_periods, a.nr_throttled, b.nr_throttled) {
        (Some(p0), Some(p1), Some(t0), Some(t1)) if p1 > p0 && t1 >= t0 => {
            Some(100.0 * (t1 - t0) as f64 / (p1 - p0) as f64)
        }
        _ => None,
    };
    (used, throttled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FakeSource;

    #[test]
    fn v2_takes_the_tightest_quota_on_the_way_up() {
        let s = FakeSource::new();
        s.set("/proc/7/cgroup", "0::/outer/inner\n");
        s.set("/sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
        s.set("/sys/fs/cgroup/outer/inner/cpu.max", "max 100000\n");
        s.set("/sys/fs/cgroup/outer/cpu.max", "25000 100000\n");
        s.set(
            "/sys/fs/cgroup/outer/cpu.stat",
            "usage_usec 1000000\nnr_periods 100\nnr_throttled 40\nthrottled_usec 9\n",
        );
        let c = read(&s, 7).expect("a quota");
        assert_eq!(c.path, "/outer");
        assert!((c.quota_cpus - 0.25).abs() < 1e-12);
        assert_eq!((c.nr_periods, c.nr_throttled), (Some(100), Some(40)));
        s.set(
            "/sys/fs/cgroup/outer/cpu.stat",
            "usage_usec 1500000\nnr_periods 120\nnr_throttled 58\n",
        );
        let d = read(&s, 7).unwrap();
        let (used, throttled) = between(&c, &d, 2.0);
        assert!((used.unwrap() - 0.25).abs() < 1e-12);
        assert!((throttled.unwrap() - 90.0).abs() < 1e-9);
    }

    #[test]
    fn v1_reads_cfs_quota_and_cpuacct_and_no_quota_is_none() {
        let s = FakeSource::new();
        s.set("/proc/7/cgroup", "4:cpu,cpuacct:/q\n3:memory:/x\n0::/\n");
        s.set("/sys/fs/cgroup/cpu,cpuacct/q/cpu.cfs_quota_us", "50000\n");
        s.set("/sys/fs/cgroup/cpu,cpuacct/q/cpu.cfs_period_us", "100000\n");
        s.set("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
        s.set("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
        s.set(
            "/sys/fs/cgroup/cpu,cpuacct/q/cpu.stat",
            "nr_periods 10\nnr_throttled 5\nthrottled_time 7\n",
        );
        s.set("/sys/fs/cgroup/cpu,cpuacct/q/cpuacct.usage", "2000000000\n");
        let c = read(&s, 7).expect("a quota");
        assert!((c.quota_cpus - 0.5).abs() < 1e-12);
        assert_eq!(c.usage_usec, Some(2_000_000));
        s.set("/sys/fs/cgroup/cpu,cpuacct/q/cpu.cfs_quota_us", "-1\n");
        assert_eq!(read(&s, 7), None);
    }

    #[test]
    fn parsers_refuse_what_is_not_a_limit() {
        assert_eq!(parse_cpu_max("max 100000"), None);
        assert_eq!(parse_cpu_max("garbage"), None);
        assert_eq!(v2_path("1:cpu:/a\n"), None);
        assert_eq!(
            up("/a/b"),
            vec!["/a/b".to_string(), "/a".into(), "/".into()]
        );
        assert_eq!(up("/"), vec!["/".to_string()]);
    }
}
