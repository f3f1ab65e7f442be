//! What the probes read, turned into the Run's series, lock table and notes.
//!
//! Everything here is plain arithmetic on [`Snapshot`]s (cumulative in-kernel counters read
//! at the sampler's interval) so it is tested without a kernel. Counters become per-interval
//! rates; each interval lands on the Run's row nearest its end, as the other sources do.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use netceil_model::{names as n, LockStat, MetricId, Run, Series, Unit};

use crate::ksyms::Ksyms;

/// The softirq vectors, in the kernel's order (`enum` in include/linux/interrupt.h).
pub const SOFTIRQ_NAMES: [&str; 10] = [
    "hi", "timer", "net_tx", "net_rx", "block", "irq_poll", "tasklet", "sched", "hrtimer", "rcu",
];

/// The names of the bounded maps whose failed inserts `overflow` counts, by slot.
pub const OVERFLOW_SLOTS: [(&str, &str); 7] = [
    (
        "lock_stat",
        "lock contentions not counted: more distinct (lock, stack) pairs than 16384",
    ),
    (
        "lock_nest",
        "spinlock contentions not timed: nested more than 4 deep on one CPU",
    ),
    (
        "lock_waiter",
        "sleeping-lock contentions not timed: more than 16384 waiters at once",
    ),
    (
        "lock_stack",
        "lock stacks not taken: the stack map (4096 stacks) was full",
    ),
    (
        "napi",
        "NAPI polls not counted: more than 1024 NAPI instances",
    ),
    (
        "thread",
        "thread switches not counted: more than 8192 threads followed",
    ),
    ("target", "processes not followed: more than 1024 processes"),
];

/// Softirq runs on one CPU, per vector (cumulative), and the time of the runs that were timed
/// (one in `softirq_time_every`; all of them when that is 1).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SoftirqCpu {
    /// Time of the timed runs, ns.
    pub ns: [u64; 10],
    /// Every run, exact.
    pub runs: [u64; 10],
    /// The runs whose time is in `ns`.
    pub timed: [u64; 10],
}

impl SoftirqCpu {
    /// The estimated handler time of vector `v` between `self` (earlier) and `later`, ns: the
    /// interval's runs times the mean time of its timed runs, or of all runs timed so far when
    /// none of the interval's was (a vector that runs rarely). Exact when every run is timed.
    pub fn time_ns_until(&self, later: &SoftirqCpu, v: usize) -> f64 {
        let runs = delta(self.runs[v], later.runs[v]);
        let timed = delta(self.timed[v], later.timed[v]);
        if runs == 0.0 {
            return 0.0;
        }
        if timed > 0.0 {
            return delta(self.ns[v], later.ns[v]) / timed * runs;
        }
        match later.timed[v] {
            0 => 0.0,
            t => later.ns[v] as f64 / t as f64 * runs,
        }
    }
}

/// NAPI polls of one device (cumulative, all CPUs). `dev` is empty for the per-CPU backlog.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NapiDev {
    pub dev: String,
    pub polls: u64,
    pub packets: u64,
    pub exhausted: u64,
    pub budget: u64,
}

/// One followed thread's scheduler times (cumulative, including the state it is in now).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadTimes {
    pub tid: u32,
    pub tgid: u32,
    pub on_ns: u64,
    pub blocked_ns: u64,
    pub runnable_ns: u64,
    pub voluntary: u64,
    pub involuntary: u64,
}

/// One row of the in-kernel lock map: a lock address and the stack its waiters were seen at
/// (`stack_id` −1: no stack was taken for these contentions).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LockRow {
    pub lock: u64,
    pub stack_id: i64,
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    pub flags: u64,
}

/// Everything the probes had counted at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Wall time, seconds since the Unix epoch (to place it on the Run's rows).
    pub unix_s: f64,
    /// The kernel's monotonic clock, ns (the probes' own clock).
    pub mono_ns: u64,
    pub softirq: Option<Vec<SoftirqCpu>>,
    pub napi: Option<Vec<NapiDev>>,
    pub threads: Option<Vec<ThreadTimes>>,
    /// Lock contentions and their total wait, summed over the lock map.
    pub lock_totals: Option<(u64, u64)>,
    /// Failed inserts per bounded map (see [`OVERFLOW_SLOTS`]).
    pub overflow: [u64; 8],
    /// Monotonic ns the per-packet probes (softirq, napi) had been attached in all, the
    /// time their counters cover: with a duty cycle ([`crate::duty`]) a part of `mono_ns`.
    pub sampled_ns: u64,
}

/// The lock type from the contention flags (`LCB_F_*` in include/trace/events/lock.h).
pub fn lock_kind(flags: u64) -> &'static str {
    const SPIN: u64 = 1;
    const READ: u64 = 2;
    const WRITE: u64 = 4;
    const RT: u64 = 8;
    const PERCPU: u64 = 16;
    const MUTEX: u64 = 32;
    if flags & RT != 0 {
        "rt-mutex"
    } else if flags & MUTEX != 0 {
        "mutex"
    } else if flags & PERCPU != 0 {
        if flags & WRITE != 0 {
            "percpu-rwsem:W"
        } else {
            "percpu-rwsem:R"
        }
    } else if flags & SPIN != 0 {
        match (flags & READ != 0, flags & WRITE != 0) {
            (true, _) => "rwlock:R",
            (_, true) => "rwlock:W",
            _ => "spinlock",
        }
    } else if flags & WRITE != 0 {
        "rwsem:W"
    } else if flags & READ != 0 {
        "rwsem:R"
    } else {
        "lock"
    }
}

/// What a lock is, from the kernel functions its waiters came through (innermost first): a
/// dynamically allocated lock has no symbol, but the code that takes it says whose it is.
pub fn lock_role(functions: &[&str]) -> Option<&'static str> {
    const ROLES: &[(&[&str], &str)] = &[
        (
            &[
                "raw_spin_rq_lock",
                "_raw_spin_rq_lock",
                "__task_rq_lock",
                "task_rq_lock",
                "double_rq_lock",
            ],
            "runqueue lock (rq->__lock)",
        ),
        (
            &[
                "__udp_enqueue_schedule_skb",
                "udp_rmem_release",
                "__skb_recv_udp",
                "__udp_enqueue",
            ],
            "UDP receive queue lock (sk_receive_queue.lock)",
        ),
        (
            &[
                "__wake_up",
                "finish_wait",
                "prepare_to_wait",
                "add_wait_queue",
                "remove_wait_queue",
                "__skb_wait_for_more_packets",
            ],
            "wait queue lock (wait_queue_head.lock)",
        ),
        (
            &[
                "pipe_write",
                "pipe_read",
                "anon_pipe_write",
                "anon_pipe_read",
                "pipe_lock",
                "__pipe_lock",
            ],
            "pipe mutex (pipe->mutex)",
        ),
        (
            &["lock_sock", "release_sock", "__release_sock"],
            "socket lock (sk_lock)",
        ),
        (
            &["nf_conntrack", "__nf_conntrack", "nf_ct_"],
            "conntrack lock",
        ),
        (&["br_"], "bridge lock"),
        (
            &["__dev_xmit_skb", "sch_direct_xmit", "__qdisc_run", "qdisc_"],
            "qdisc lock",
        ),
        (
            &["__netif_tx_lock", "netif_tx_lock", "dev_hard_start_xmit"],
            "device TX queue lock (_xmit_lock)",
        ),
        (
            &["skb_queue_tail", "skb_dequeue"],
            "socket buffer queue lock (sk_buff_head.lock)",
        ),
    ];
    for f in functions {
        for (prefixes, role) in ROLES {
            if prefixes.iter().any(|p| f.starts_with(p)) {
                return Some(role);
            }
        }
    }
    None
}

/// Places each interval between consecutive snapshots on the Run's rows.
fn intervals<'a>(
    run: &Run,
    snaps: &'a [Snapshot],
) -> Vec<(usize, f64, &'a Snapshot, &'a Snapshot)> {
    let start = run.meta.started_unix_s;
    snaps
        .windows(2)
        .filter_map(|w| {
            let dt = w[1].mono_ns.saturating_sub(w[0].mono_ns) as f64 / 1e9;
            if dt <= 0.0 {
                return None;
            }
            let row = run.series.row_near(w[1].unix_s - start)?;
            Some((row, dt, &w[0], &w[1]))
        })
        .collect()
}

fn delta(a: u64, b: u64) -> f64 {
    b.saturating_sub(a) as f64
}

/// Softirq time and runs per CPU and vector, over `on` seconds of probing.
fn softirq_rows(
    s: &mut Series,
    row: usize,
    on: f64,
    used: &BTreeSet<usize>,
    x: &[SoftirqCpu],
    y: &[SoftirqCpu],
) {
    let mut all = 0.0;
    for (cpu, (p, q)) in x.iter().zip(y).enumerate() {
        let mut on_cpu = 0.0;
        for &v in used {
            let pct = p.time_ns_until(q, v) / (on * 1e9) * 100.0;
            on_cpu += pct;
            let id = MetricId::new(n::SOFTIRQ_EXACT_PCT)
                .with(n::LABEL_CPU, cpu.to_string())
                .with(n::LABEL_VEC, SOFTIRQ_NAMES[v]);
            s.set_at(row, &id, Unit::Percent, pct);
            let id = MetricId::new(n::SOFTIRQ_RUNS_PER_S)
                .with(n::LABEL_CPU, cpu.to_string())
                .with(n::LABEL_VEC, SOFTIRQ_NAMES[v]);
            s.set_at(row, &id, Unit::PerSecond, delta(p.runs[v], q.runs[v]) / on);
        }
        let id = MetricId::new(n::SOFTIRQ_EXACT_PCT).with(n::LABEL_CPU, cpu.to_string());
        s.set_at(row, &id, Unit::Percent, on_cpu);
        all += on_cpu;
    }
    s.set_at(
        row,
        &MetricId::new(n::SOFTIRQ_EXACT_PCT),
        Unit::Percent,
        all / x.len().max(1) as f64,
    );
}

/// NAPI polls, packets and full-budget polls per device, over `on` seconds of probing.
fn napi_rows(s: &mut Series, row: usize, on: f64, x: &[NapiDev], y: &[NapiDev]) {
    for q in y {
        let p = x.iter().find(|p| p.dev == q.dev);
        let zero = NapiDev::default();
        let p = p.unwrap_or(&zero);
        let dev = if q.dev.is_empty() { "backlog" } else { &q.dev };
        let id = |name: &str| MetricId::new(name).with(n::LABEL_IFACE, dev);
        s.set_at(
            row,
            &id(n::NAPI_POLLS_PER_S),
            Unit::PerSecond,
            delta(p.polls, q.polls) / on,
        );
        s.set_at(
            row,
            &id(n::NAPI_PPS),
            Unit::PacketsPerSecond,
            delta(p.packets, q.packets) / on,
        );
        s.set_at(
            row,
            &id(n::NAPI_BUDGET_EXHAUSTED_PER_S),
            Unit::PerSecond,
            delta(p.exhausted, q.exhausted) / on,
        );
        if q.budget > 0 {
            s.set_at(row, &id(n::NAPI_BUDGET), Unit::Count, q.budget as f64);
        }
    }
}

/// Adds the probes' series to the Run: softirq time per CPU and vector, NAPI polls per
/// device, lock wait over time, and scheduler time per followed thread.
/// `comm` names a thread by its id (`None` when it has gone).
pub fn merge_series(run: &mut Run, snaps: &[Snapshot], comm: &HashMap<u32, String>) {
    let cpus = snaps
        .iter()
        .find_map(|s| s.softirq.as_ref().map(Vec::len))
        .or(run.meta.host.cpus.map(|c| c as usize))
        .unwrap_or(1)
        .max(1);
    // Softirq vectors that ran at all over the run (NET_RX and NET_TX are always shown).
    let used: BTreeSet<usize> = match (snaps.first(), snaps.last()) {
        (Some(a), Some(b)) => match (&a.softirq, &b.softirq) {
            (Some(x), Some(y)) => (0..10)
                .filter(|&v| {
                    v == 2 || v == 3 || x.iter().zip(y).any(|(p, q)| q.runs[v] > p.runs[v])
                })
                .collect(),
            _ => BTreeSet::new(),
        },
        _ => BTreeSet::new(),
    };
    for (row, dt, a, b) in intervals(run, snaps) {
        let s = &mut run.series;
        // The per-packet probes count only while attached: their rates are over that time,
        // and an interval without a window has none.
        let on = delta(a.sampled_ns, b.sampled_ns) / 1e9;
        if on > 0.0 {
            if let (Some(x), Some(y)) = (&a.softirq, &b.softirq) {
                softirq_rows(s, row, on, &used, x, y);
            }
            if let (Some(x), Some(y)) = (&a.napi, &b.napi) {
                napi_rows(s, row, on, x, y);
            }
        }
        if let (Some((c0, w0)), Some((c1, w1))) = (a.lock_totals, b.lock_totals) {
            s.set_at(
                row,
                &MetricId::new(n::LOCK_WAIT_PCT),
                Unit::Percent,
                delta(w0, w1) / (dt * 1e9 * cpus as f64) * 100.0,
            );
            s.set_at(
                row,
                &MetricId::new(n::LOCK_CONTENTIONS_PER_S),
                Unit::PerSecond,
                delta(c0, c1) / dt,
            );
        }
        if let (Some(x), Some(y)) = (&a.threads, &b.threads) {
            for q in y {
                let zero = ThreadTimes::default();
                let p = x.iter().find(|p| p.tid == q.tid).unwrap_or(&zero);
                let name = comm.get(&q.tid).map_or("?", String::as_str);
                let id = |m: &str| {
                    MetricId::new(m)
                        .with(n::LABEL_PID, q.tgid.to_string())
                        .with(n::LABEL_TID, q.tid.to_string())
                        .with(n::LABEL_COMM, name)
                };
                let pct = |a: u64, b: u64| (delta(a, b) / (dt * 1e9) * 100.0).min(100.0);
                s.set_at(
                    row,
                    &id(n::SCHED_ON_CPU_PCT),
                    Unit::Percent,
                    pct(p.on_ns, q.on_ns),
                );
                s.set_at(
                    row,
                    &id(n::SCHED_RUNNABLE_WAIT_PCT),
                    Unit::Percent,
                    pct(p.runnable_ns, q.runnable_ns),
                );
                s.set_at(
                    row,
                    &id(n::SCHED_BLOCKED_PCT),
                    Unit::Percent,
                    pct(p.blocked_ns, q.blocked_ns),
                );
                s.set_at(
                    row,
                    &id(n::SCHED_VOLUNTARY_CS_PER_S),
                    Unit::PerSecond,
                    delta(p.voluntary, q.voluntary) / dt,
                );
                s.set_at(
                    row,
                    &id(n::SCHED_INVOLUNTARY_CS_PER_S),
                    Unit::PerSecond,
                    delta(p.involuntary, q.involuntary) / dt,
                );
            }
        }
    }
    if let (Some(a), Some(b)) = (snaps.first(), snaps.last()) {
        for (slot, (map, what)) in OVERFLOW_SLOTS.iter().enumerate() {
            let lost = b.overflow[slot].saturating_sub(a.overflow[slot]);
            if lost > 0 {
                run.notes
                    .push(format!("probe map {map} overflowed {lost} times: {what}"));
            }
        }
    }
}

/// The lock table: one row per (lock, caller), heaviest wait first.
///
/// The totals per lock are exact. Stacks are taken for one contention in `stack_every` (0:
/// none); the contentions without a stack are shared among the lock's callers in proportion to
/// the sampled ones, and the returned note says so. A lock is named by its kernel symbol when
/// it is a static variable the symbol table knows, otherwise by its type and address.
pub fn lock_table(
    rows: &[LockRow],
    stacks: &HashMap<i64, Vec<u64>>,
    ksyms: &Ksyms,
    stack_every: u32,
) -> (Vec<LockStat>, Vec<String>) {
    #[derive(Default)]
    struct Site {
        count: f64,
        wait_ns: f64,
        max_ns: u64,
        stack: Vec<String>,
    }
    #[derive(Default)]
    struct Lock {
        flags: u64,
        /// What the sampled stacks say the lock is, weighted by wait.
        roles: BTreeMap<&'static str, u64>,
        sites: BTreeMap<String, Site>,
        unsampled: (u64, u64, u64),
        sampled: u64,
    }
    let mut locks: BTreeMap<u64, Lock> = BTreeMap::new();
    let (mut with_stack, mut without) = (0u64, 0u64);
    for r in rows {
        let l = locks.entry(r.lock).or_default();
        l.flags |= r.flags;
        let frames = (r.stack_id >= 0).then(|| stacks.get(&r.stack_id)).flatten();
        match frames {
            Some(frames) => {
                with_stack += r.count;
                l.sampled += r.count;
                let caller = frames
                    .iter()
                    .find(|&&ip| !ksyms.is_machinery(ip))
                    .map_or_else(|| "?".to_string(), |&ip| ksyms.describe(ip));
                let functions: Vec<&str> =
                    frames.iter().filter_map(|&ip| ksyms.function(ip)).collect();
                if let Some(role) = lock_role(&functions) {
                    *l.roles.entry(role).or_default() += r.total_ns.max(1);
                }
                let site = l.sites.entry(caller).or_default();
                site.count += r.count as f64;
                site.wait_ns += r.total_ns as f64;
                site.max_ns = site.max_ns.max(r.max_ns);
                if site.stack.is_empty() {
                    site.stack = frames.iter().map(|&ip| ksyms.describe(ip)).collect();
                }
            }
            None => {
                without += r.count;
                l.unsampled.0 += r.count;
                l.unsampled.1 += r.total_ns;
                l.unsampled.2 = l.unsampled.2.max(r.max_ns);
            }
        }
    }
    let mut out = Vec::new();
    for (addr, l) in locks {
        let kind = lock_kind(l.flags);
        let role = l.roles.iter().max_by_key(|(_, w)| **w).map(|(r, _)| *r);
        let name = match (ksyms.data_symbol(addr), role) {
            (Some(sym), _) => sym,
            (None, Some(role)) => format!("{role} {kind} {addr:#x}"),
            (None, None) => format!("{kind} {addr:#x}"),
        };
        let (uc, uw, um) = l.unsampled;
        if l.sites.is_empty() {
            out.push(LockStat {
                name,
                caller: None,
                count: uc,
                contended: Some(uc),
                wait_total_s: uw as f64 / 1e9,
                wait_max_s: Some(um as f64 / 1e9),
                kind: Some(kind.into()),
                ..Default::default()
            });
            continue;
        }
        let sampled_wait: f64 = l.sites.values().map(|s| s.wait_ns).sum();
        let sampled_count: f64 = l.sites.values().map(|s| s.count).sum();
        let heaviest = l
            .sites
            .iter()
            .max_by(|a, b| a.1.wait_ns.total_cmp(&b.1.wait_ns))
            .map(|(k, _)| k.clone());
        for (caller, s) in &l.sites {
            let share_w = if sampled_wait > 0.0 {
                s.wait_ns / sampled_wait
            } else {
                0.0
            };
            let share_c = if sampled_count > 0.0 {
                s.count / sampled_count
            } else {
                0.0
            };
            let count = (s.count + uc as f64 * share_c).round() as u64;
            let max = if Some(caller) == heaviest.as_ref() {
                s.max_ns.max(um)
            } else {
                s.max_ns
            };
            out.push(LockStat {
                name: name.clone(),
                caller: Some(caller.clone()),
                count,
                contended: Some(count),
                wait_total_s: (s.wait_ns + uw as f64 * share_w) / 1e9,
                wait_max_s: Some(max as f64 / 1e9),
                kind: Some(kind.into()),
                stack: s.stack.clone(),
                ..Default::default()
            });
        }
    }
    out.sort_by(|a, b| b.wait_total_s.total_cmp(&a.wait_total_s));
    let mut notes = Vec::new();
    if with_stack + without > 0 {
        notes.push(if stack_every == 0 {
            "lock contention from eBPF (lock:contention_begin/end): no stacks were taken, so callers are unknown; counts are contended acquisitions only".to_string()
        } else {
            format!(
                "lock contention from eBPF (lock:contention_begin/end): counts are contended acquisitions only; a stack was taken for 1 contention in {stack_every} ({with_stack} of {}), and the rest are shared among each lock's callers in proportion to the sampled ones",
                with_stack + without
            )
        });
    }
    (out, notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_model::{RunSource, Series};

    fn run_with_rows(rows: usize) -> Run {
        let mut run = Run::new("r", RunSource::Live);
        run.meta.started_unix_s = 1000.0;
        run.series = Series::new(1.0);
        for i in 0..rows {
            run.series.push_row((i + 1) as f64);
        }
        run
    }

    fn snap(t: f64, f: impl FnOnce(&mut Snapshot)) -> Snapshot {
        // Probes attached all the time unless the test says otherwise.
        let mut s = Snapshot {
            unix_s: 1000.0 + t,
            mono_ns: (t * 1e9) as u64,
            sampled_ns: (t * 1e9) as u64,
            ..Default::default()
        };
        f(&mut s);
        s
    }

    fn value(run: &Run, id: &MetricId, row: usize) -> Option<f64> {
        run.series
            .metrics
            .iter()
            .find(|m| &m.id == id)
            .and_then(|m| m.values[row])
    }

    fn sirq(net_rx_ns: u64, runs: u64, timed: u64) -> SoftirqCpu {
        let mut c = SoftirqCpu::default();
        c.ns[3] = net_rx_ns;
        c.runs[3] = runs;
        c.timed[3] = timed;
        c
    }

    /// One run in 8 timed: 125 timed runs of 250 µs each stand for the 1000 runs' 250 ms.
    /// Every run timed: the time is the measured one. None of an interval's runs timed: the
    /// mean of all runs timed so far stands for them. No runs: no time, whatever was timed.
    #[test]
    fn softirq_time_is_scaled_from_the_timed_runs() {
        assert_eq!(sirq(0, 0, 0).time_ns_until(&sirq(5000, 10, 10), 3), 5000.0);
        assert_eq!(sirq(0, 0, 0).time_ns_until(&sirq(5000, 10, 2), 3), 25_000.0);
        assert_eq!(
            sirq(4000, 100, 4).time_ns_until(&sirq(4000, 103, 4), 3),
            3000.0
        );
        assert_eq!(sirq(100, 10, 1).time_ns_until(&sirq(100, 10, 1), 3), 0.0);
        assert_eq!(sirq(0, 0, 0).time_ns_until(&sirq(0, 7, 0), 3), 0.0);
    }

    #[test]
    fn softirq_time_becomes_percent_of_each_cpu() {
        let mut run = run_with_rows(2);
        let cpu = |ns, runs| sirq(ns, runs, runs / 8);
        let snaps = vec![
            snap(1.0, |s| s.softirq = Some(vec![cpu(0, 0), cpu(0, 0)])),
            snap(2.0, |s| {
                s.softirq = Some(vec![cpu(31_250_000, 1000), cpu(0, 0)])
            }),
        ];
        merge_series(&mut run, &snaps, &HashMap::new());
        let id = MetricId::new(n::SOFTIRQ_EXACT_PCT)
            .with(n::LABEL_CPU, "0")
            .with(n::LABEL_VEC, "net_rx");
        assert_eq!(value(&run, &id, 1), Some(25.0));
        let all = MetricId::new(n::SOFTIRQ_EXACT_PCT);
        assert_eq!(value(&run, &all, 1), Some(12.5));
        let runs = MetricId::new(n::SOFTIRQ_RUNS_PER_S)
            .with(n::LABEL_CPU, "0")
            .with(n::LABEL_VEC, "net_rx");
        assert_eq!(value(&run, &runs, 1), Some(1000.0));
        // A vector that never ran is not a column.
        assert!(!run
            .series
            .metrics
            .iter()
            .any(|m| m.id.label(n::LABEL_VEC) == Some("rcu")));
    }

    /// Duty-cycled: 125 ms attached in each 1 s interval. The 250 runs and 25 ms of NET_RX
    /// counted in a window are per 125 ms of probing: 2000 runs/s and 20 % of the CPU, not
    /// 250/s and 2.5 %. An interval without a window has no softirq or NAPI value at all, and
    /// the continuous lock figures still get theirs.
    #[test]
    fn duty_cycled_counts_are_rates_per_sampled_second() {
        let mut run = run_with_rows(3);
        let napi = |polls, packets| NapiDev {
            polls,
            packets,
            budget: 64,
            ..Default::default()
        };
        let snaps = vec![
            snap(1.0, |s| {
                s.sampled_ns = 0;
                s.softirq = Some(vec![sirq(0, 0, 0)]);
                s.napi = Some(vec![napi(0, 0)]);
                s.lock_totals = Some((0, 0));
            }),
            snap(2.0, |s| {
                s.sampled_ns = 125_000_000;
                s.softirq = Some(vec![sirq(25_000_000, 250, 250)]);
                s.napi = Some(vec![napi(250, 1000)]);
                s.lock_totals = Some((10, 0));
            }),
            snap(3.0, |s| {
                s.sampled_ns = 125_000_000;
                s.softirq = Some(vec![sirq(25_000_000, 250, 250)]);
                s.napi = Some(vec![napi(250, 1000)]);
                s.lock_totals = Some((30, 0));
            }),
        ];
        merge_series(&mut run, &snaps, &HashMap::new());
        let rx = |m: &str| {
            MetricId::new(m)
                .with(n::LABEL_CPU, "0")
                .with(n::LABEL_VEC, "net_rx")
        };
        assert_eq!(value(&run, &rx(n::SOFTIRQ_RUNS_PER_S), 1), Some(2000.0));
        assert_eq!(value(&run, &rx(n::SOFTIRQ_EXACT_PCT), 1), Some(20.0));
        let pps = MetricId::new(n::NAPI_PPS).with(n::LABEL_IFACE, "backlog");
        assert_eq!(value(&run, &pps, 1), Some(8000.0));
        assert_eq!(value(&run, &rx(n::SOFTIRQ_EXACT_PCT), 2), None);
        assert_eq!(value(&run, &pps, 2), None);
        let contentions = MetricId::new(n::LOCK_CONTENTIONS_PER_S);
        assert_eq!(value(&run, &contentions, 2), Some(20.0));
    }

    #[test]
    fn napi_and_threads_and_lock_wait_become_rates() {
        let mut run = run_with_rows(3);
        run.meta.host.cpus = Some(2);
        let napi = |polls, packets, exhausted| NapiDev {
            dev: String::new(),
            polls,
            packets,
            exhausted,
            budget: 64,
        };
        let th = |on, blocked, runnable, vol| ThreadTimes {
            tid: 7,
            tgid: 5,
            on_ns: on,
            blocked_ns: blocked,
            runnable_ns: runnable,
            voluntary: vol,
            involuntary: 0,
        };
        let snaps = vec![
            snap(1.0, |s| {
                s.napi = Some(vec![napi(0, 0, 0)]);
                s.threads = Some(vec![th(0, 0, 0, 0)]);
                s.lock_totals = Some((0, 0));
            }),
            snap(3.0, |s| {
                s.napi = Some(vec![napi(200, 6400, 50)]);
                s.threads = Some(vec![th(1_000_000_000, 600_000_000, 400_000_000, 10)]);
                s.lock_totals = Some((100, 400_000_000));
                s.overflow[1] = 3;
            }),
        ];
        let comm = HashMap::from([(7, "worker".to_string())]);
        merge_series(&mut run, &snaps, &comm);
        let dev = |m: &str| MetricId::new(m).with(n::LABEL_IFACE, "backlog");
        assert_eq!(value(&run, &dev(n::NAPI_POLLS_PER_S), 2), Some(100.0));
        assert_eq!(
            value(&run, &dev(n::NAPI_BUDGET_EXHAUSTED_PER_S), 2),
            Some(25.0)
        );
        let t = |m: &str| {
            MetricId::new(m)
                .with(n::LABEL_PID, "5")
                .with(n::LABEL_TID, "7")
                .with(n::LABEL_COMM, "worker")
        };
        assert_eq!(value(&run, &t(n::SCHED_ON_CPU_PCT), 2), Some(50.0));
        assert_eq!(value(&run, &t(n::SCHED_BLOCKED_PCT), 2), Some(30.0));
        assert_eq!(value(&run, &t(n::SCHED_RUNNABLE_WAIT_PCT), 2), Some(20.0));
        assert_eq!(value(&run, &t(n::SCHED_VOLUNTARY_CS_PER_S), 2), Some(5.0));
        // 0.4 s of wait over 2 s × 2 CPUs.
        assert_eq!(value(&run, &MetricId::new(n::LOCK_WAIT_PCT), 2), Some(10.0));
        assert!(run
            .notes
            .iter()
            .any(|x| x.contains("lock_nest overflowed 3 times")));
    }

    const KSYMS: &str = "\
ffffffff81100000 T __wake_up_sync_key
ffffffff81100800 T sock_def_readable
ffffffff81200000 T __lock_text_start
ffffffff81200400 T __lock_text_end
ffffffff81300000 T native_queued_spin_lock_slowpath
ffffffff81400000 T pipe_write
";

    #[test]
    fn locks_are_ranked_by_wait_with_callers_past_the_lock_code() {
        let k = Ksyms::parse(KSYMS).unwrap();
        let stacks = HashMap::from([
            (
                1,
                vec![0xffffffff81300010, 0xffffffff81200010, 0xffffffff81100020],
            ),
            (2, vec![0xffffffff81200010, 0xffffffff81100810]),
        ]);
        let rows = vec![
            LockRow {
                lock: 0xffff888000001000,
                stack_id: 1,
                count: 30,
                total_ns: 3_000_000,
                max_ns: 200_000,
                flags: 1,
            },
            LockRow {
                lock: 0xffff888000001000,
                stack_id: 2,
                count: 10,
                total_ns: 1_000_000,
                max_ns: 100_000,
                flags: 1,
            },
            // 400 unsampled contentions of the same lock: 40 ms, shared 3:1.
            LockRow {
                lock: 0xffff888000001000,
                stack_id: -1,
                count: 400,
                total_ns: 40_000_000,
                max_ns: 900_000,
                flags: 1,
            },
            LockRow {
                lock: 0xffff888000002000,
                stack_id: -1,
                count: 5,
                total_ns: 500_000,
                max_ns: 100_000,
                flags: 32,
            },
        ];
        let (table, notes) = lock_table(&rows, &stacks, &k, 16);
        assert_eq!(table.len(), 3);
        let top = &table[0];
        assert_eq!(
            top.name,
            "wait queue lock (wait_queue_head.lock) spinlock 0xffff888000001000"
        );
        assert_eq!(top.caller.as_deref(), Some("__wake_up_sync_key+0x20"));
        assert_eq!(top.count, 330);
        assert!(
            (top.wait_total_s - 0.033).abs() < 1e-9,
            "{}",
            top.wait_total_s
        );
        assert_eq!(top.wait_max_s, Some(0.0009));
        assert_eq!(top.stack.len(), 3);
        assert_eq!(table[1].caller.as_deref(), Some("sock_def_readable+0x10"));
        assert!((table[1].wait_total_s - 0.011).abs() < 1e-9);
        // Exact per-lock total.
        let sum: f64 = table[..2].iter().map(|l| l.wait_total_s).sum();
        assert!((sum - 0.044).abs() < 1e-9);
        assert_eq!(table[2].kind.as_deref(), Some("mutex"));
        assert_eq!(table[2].caller, None);
        assert!(
            notes[0].contains("1 contention in 16 (40 of 445)"),
            "{notes:?}"
        );
    }

    #[test]
    fn a_lock_is_named_by_the_code_that_takes_it() {
        assert_eq!(
            lock_role(&[
                "_raw_spin_lock",
                "__udp_enqueue_schedule_skb",
                "udp_queue_rcv_one_skb"
            ]),
            Some("UDP receive queue lock (sk_receive_queue.lock)")
        );
        assert_eq!(
            lock_role(&["__mutex_lock", "pipe_write"]),
            Some("pipe mutex (pipe->mutex)")
        );
        assert_eq!(lock_role(&["_raw_spin_lock", "some_driver_fn"]), None);
    }

    #[test]
    fn lock_kinds_follow_the_contention_flags() {
        assert_eq!(lock_kind(1), "spinlock");
        assert_eq!(lock_kind(1 | 2), "rwlock:R");
        assert_eq!(lock_kind(32 | 1), "mutex");
        assert_eq!(lock_kind(4), "rwsem:W");
        assert_eq!(lock_kind(2), "rwsem:R");
        assert_eq!(lock_kind(16 | 4), "percpu-rwsem:W");
        assert_eq!(lock_kind(8), "rt-mutex");
    }
}
