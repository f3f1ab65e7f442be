//! The CPU as the workload could use it, core by core: who took each core's time.
//!
//! A core's busy time is shared by the workload's own threads, the kernel's network work on
//! their behalf (softirq), and everything else that ran there. The rules that name a CPU
//! ceiling (a hot core, all cores busy, other programs taking them, a thread starved of its
//! core) all read the same account, so they agree on the figures, and the ledger can tell a
//! cause from its symptom: a reader that got 46 % of a core that was 100 % busy was starved
//! by whatever took the other 54 %, and the drops at its socket follow from that.
//!
//! **Capacity is what the workload may use.** A workload held to some CPUs (its affinity
//! mask, `meta.workload_cpus`) has no headroom on the others, however idle they are, and
//! whoever else runs on its CPUs is taking them from it.

use std::collections::BTreeMap;

use netceil_model::{fmt, names as n, Metric, RunSource, Unit};

use crate::cause;
use crate::ctx::Ctx;
use crate::ledger::Explains;
use crate::stats::mean;

/// Kernel threads that do the network's work on someone's behalf: not strangers.
pub fn works_for_the_network(comm: &str) -> bool {
    ["ksoftirqd", "kworker", "napi/", "irq/"]
        .iter()
        .any(|p| comm.starts_with(p))
}

/// From this nice value up, a process takes mostly idle time (CFS weight 110 against 1024 for
/// a default task), so it is not counted as taking a core from the workload, unless autogroup
/// shares the CPU between sessions ([`Ctx::nice_yields`]).
pub const YIELDING_NICE: i64 = 10;

/// A thread this busy (% of one core) is saturated.
pub const THREAD_SATURATED_PCT: f64 = 85.0;

/// A thread below this share of a core (%) wanted nothing worth starving.
pub const WANTS_CPU_PCT: f64 = 5.0;

/// A core this busy (%) had no time left for a thread that wanted more.
pub const CORE_FULL_PCT: f64 = 95.0;

/// Cores the workload may use this busy on average (%) left a runnable thread nowhere to go:
/// the scheduler moves a waiting thread to an idle core, so a thread below a core on a core
/// at least [`THREAD_SATURATED_PCT`] busy, while all of them were this busy, was starved too.
pub const ALL_FULL_PCT: f64 = 90.0;

/// What one of netceil's own load threads does, from the name netceil gave it (trusted only
/// for the threads whose ids the load engine recorded); other threads' roles are unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Sender,
    Receiver,
    Other,
}

/// One thread of the workload over the load rows.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkThread {
    pub pid: Option<u32>,
    pub tid: u32,
    pub comm: String,
    /// % of one core.
    pub cpu_pct: f64,
    /// The CPU it ran on most often, when recorded.
    pub cpu: Option<u32>,
    /// The share of the samples that found it on `cpu` (0–1; 1 when not recorded): a thread
    /// the scheduler moved between CPUs spent only part of its time on its usual one.
    pub on_usual: f64,
    pub voluntary_cs: Option<f64>,
    pub nonvoluntary_cs: Option<f64>,
    /// One of the load threads netceil started for this run.
    pub own: bool,
}

impl WorkThread {
    pub fn role(&self) -> Role {
        if !self.own {
            Role::Other
        } else if self.comm.contains("-tx") {
            Role::Sender
        } else if self.comm.contains("-rx")
            || self.comm.contains("-serve")
            || self.comm.contains("-echo")
        {
            Role::Receiver
        } else {
            Role::Other
        }
    }
}

/// A process outside the workload, with its CPU spread over the cores it was seen on.
#[derive(Debug, Clone, PartialEq)]
pub struct Stranger {
    pub pid: String,
    pub comm: String,
    /// Its nice value when the scan gave one.
    pub nice: Option<i64>,
    /// % of one core, by CPU (time-weighted over the scans that saw it).
    pub by_cpu: BTreeMap<u32, f64>,
}

impl Stranger {
    pub fn total(&self) -> f64 {
        self.by_cpu.values().sum()
    }

    /// What it took of `cpus`.
    pub fn on(&self, cpus: &[u32]) -> f64 {
        self.by_cpu
            .iter()
            .filter(|(c, _)| cpus.contains(c))
            .map(|(_, v)| v)
            .sum()
    }
}

/// One core over the load rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Core {
    pub cpu: u32,
    /// Busy % less niced time (niced work yields to the workload).
    pub busy: f64,
    /// The niced time left out of `busy`, % (0 when nice does not yield: autogroup).
    pub niced: f64,
    /// System + softirq + irq %, when recorded.
    pub kernel: Option<f64>,
    /// Softirq + irq %, when recorded (tick-sampled unless the softirq probe ran).
    pub softirq: Option<f64>,
}

/// The CPU account of one run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CpuAccount {
    /// The cores the workload could use: its allowed CPUs, else every online CPU.
    pub cores: Vec<Core>,
    /// Online CPUs outside the workload's affinity mask.
    pub outside: Vec<Core>,
    /// True when the workload was held to fewer CPUs than the machine has.
    pub restricted: bool,
    pub threads: Vec<WorkThread>,
    /// Processes outside the workload (not its own, watched, children or peers; not the
    /// kernel's network threads; not niced), busiest first.
    pub strangers: Vec<Stranger>,
    /// Processes of the workload the sampler did not follow thread by thread: its other end
    /// (a `netceil serve`, an iperf3 server, in any namespace: `role=peer`) and a watched
    /// process's children. What they got of each core, as for strangers.
    pub peers: Vec<Stranger>,
    /// True when the process scan ran (the strangers list means "none seen", not "unknown").
    pub scanned: bool,
}

impl Core {
    /// `CPU 1 23.4 % busy`, and the niced time left out of it when there was any.
    pub fn busy_words(&self) -> String {
        let niced = if self.niced >= 1.0 {
            format!(
                " (besides {} niced work, taken to yield to it)",
                fmt::value(self.niced, Unit::Percent)
            )
        } else {
            String::new()
        };
        format!(
            "CPU {} {} busy{niced}",
            self.cpu,
            fmt::value(self.busy, Unit::Percent)
        )
    }
}

impl CpuAccount {
    pub fn new(ctx: &Ctx) -> CpuAccount {
        let busy = ctx.per_cpu_busy_for_work();
        let raw = ctx.per_cpu_busy();
        let kernel = ctx.per_cpu_kernel();
        let si = ctx.per_cpu(n::CPU_SOFTIRQ_PCT);
        let irq = ctx.per_cpu(n::CPU_IRQ_PCT);
        let find = |v: &[(u32, f64)], c: u32| v.iter().find(|(x, _)| *x == c).map(|(_, v)| *v);
        let allowed = ctx.allowed_cpus();
        let mut cores = Vec::new();
        let mut outside = Vec::new();
        for &(cpu, b) in &busy {
            let softirq = match (find(&si, cpu), find(&irq, cpu)) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
            };
            let core = Core {
                cpu,
                busy: b,
                niced: find(&raw, cpu).map_or(0.0, |r| (r - b).max(0.0)),
                kernel: find(&kernel, cpu),
                softirq,
            };
            match &allowed {
                Some(a) if !a.contains(&cpu) => outside.push(core),
                _ => cores.push(core),
            }
        }
        let procs = processes(ctx);
        CpuAccount {
            cores,
            outside,
            restricted: allowed.is_some(),
            threads: threads(ctx),
            strangers: procs.strangers,
            peers: procs.peers,
            scanned: procs.scanned,
        }
    }

    pub fn cpus(&self) -> Vec<u32> {
        self.cores.iter().map(|c| c.cpu).collect()
    }

    pub fn core(&self, cpu: u32) -> Option<&Core> {
        self.cores
            .iter()
            .chain(self.outside.iter())
            .find(|c| c.cpu == cpu)
    }

    /// The workload's threads whose usual CPU is `cpu`.
    pub fn threads_on(&self, cpu: u32) -> impl Iterator<Item = &WorkThread> {
        self.threads.iter().filter(move |t| t.cpu == Some(cpu))
    }

    /// The workload's threads on `cpus` that were starved there (see [`CpuAccount::starved`]),
    /// of the given role (any, for `None`).
    pub fn starved_on(&self, cpus: &[u32], role: Option<Role>) -> Vec<&WorkThread> {
        // netceil's own load threads when it ran the load (its main thread, sampler and signal
        // thread sleep and want nothing); else the watched threads that did some work.
        let own = self.threads.iter().any(|t| t.own);
        self.threads
            .iter()
            .filter(|t| {
                if own {
                    t.own
                } else {
                    t.cpu_pct >= WANTS_CPU_PCT
                }
            })
            .filter(|t| t.cpu.is_none_or(|c| cpus.contains(&c)))
            .filter(|t| role.is_none_or(|r| t.role() == r))
            .filter(|t| self.starved(t).is_some())
            .collect()
    }

    /// A thread held below a core by its core being full of other work: it got less than it
    /// could have used (under [`THREAD_SATURATED_PCT`]) while that core had no time left
    /// ([`CORE_FULL_PCT`]), or nearly none while every other core it could move to was as busy
    /// ([`ALL_FULL_PCT`]), so whatever filled the cores is its ceiling, not the thread. A
    /// thread whose core was not recorded is judged against the cores the workload may use.
    pub fn starved(&self, t: &WorkThread) -> Option<f64> {
        let busy = match t.cpu.and_then(|c| self.core(c)) {
            Some(core) => core.busy,
            None => self.all_busy()?,
        };
        (t.cpu_pct < THREAD_SATURATED_PCT && self.full(busy)).then_some(busy)
    }

    /// The mean busy share (%) of the cores the workload may use.
    fn all_busy(&self) -> Option<f64> {
        mean(&self.cores.iter().map(|c| c.busy).collect::<Vec<_>>())
    }

    /// True when a core this busy (%) left a thread that wanted more no time to get it.
    fn full(&self, busy: f64) -> bool {
        busy >= CORE_FULL_PCT
            || (busy >= THREAD_SATURATED_PCT && self.all_busy().is_some_and(|a| a >= ALL_FULL_PCT))
    }
}

impl CpuAccount {
    /// What a claim that `cpus` were full explains, by measurement: the threads of the
    /// workload starved there, and what their starvation causes downstream (a reader that
    /// cannot keep up overflows its socket; a sender short of its core cannot reach its rate).
    /// The workload's other processes (its other end) that were on `cpus` while those cores
    /// were full and got less than a core there: a peer's reader starved as an own one would be.
    pub fn starved_peers(&self, cpus: &[u32]) -> Vec<&Stranger> {
        self.peers
            .iter()
            .filter(|p| {
                let on = p.on(cpus);
                (WANTS_CPU_PCT..THREAD_SATURATED_PCT).contains(&on)
                    && p.by_cpu
                        .keys()
                        .filter(|c| cpus.contains(c))
                        .all(|c| self.core(*c).is_some_and(|core| self.full(core.busy)))
            })
            .collect()
    }

    /// True when a reader of the workload (its own receiving threads, or its other end) was
    /// starved on `cpus`: then a loss at its socket follows from those cores, even in a run
    /// whose sender got the rate it asked for.
    pub fn reader_starved_on(&self, cpus: &[u32]) -> bool {
        !self.starved_peers(cpus).is_empty()
            || self
                .starved_on(cpus, None)
                .iter()
                .any(|t| t.role() != Role::Sender)
    }

    pub fn starvation_explains(&self, cpus: &[u32]) -> Vec<Explains> {
        let mut out = vec![Explains::cause(cause::SATURATION)];
        if !self.starved_peers(cpus).is_empty() {
            out.push(Explains::cause(cause::BUFFER_DROPS));
            out.push(Explains::cause(cause::TCP_RECEIVE_WINDOW));
            out.push(Explains::cause(cause::RECEIVER_SATURATED));
        }
        for t in self.starved_on(cpus, None) {
            let on = [t.cpu.unwrap_or(0)];
            match t.role() {
                Role::Sender => {
                    out.push(Explains::cause(cause::GENERATOR_LIMITED));
                    out.push(Explains::on(cause::SENDER_SATURATED, &on));
                }
                Role::Receiver | Role::Other => {
                    out.push(Explains::cause(cause::BUFFER_DROPS));
                    out.push(Explains::cause(cause::TCP_RECEIVE_WINDOW));
                    out.push(Explains::on(cause::RECEIVER_SATURATED, &on));
                    out.push(Explains::on(cause::THREAD_SATURATED, &on));
                }
            }
        }
        out.dedup();
        out
    }
}

fn sibling_mean(ctx: &Ctx, m: &Metric, name: &str) -> Option<f64> {
    ctx.sibling(m, name).and_then(|s| ctx.mean_of(s))
}

/// The workload's threads (those the sampler followed: netceil's own for `run`, the watched
/// process's for `watch`), with their usual CPU.
fn threads(ctx: &Ctx) -> Vec<WorkThread> {
    let own = &ctx.run.meta.own_thread_ids;
    let mut out = Vec::new();
    for m in ctx.series().by_name(n::THREAD_CPU_PCT) {
        let Some(tid) = m.id.label(n::LABEL_TID).and_then(|t| t.parse::<u32>().ok()) else {
            continue;
        };
        let Some(cpu_pct) = ctx.mean_of(m) else {
            continue;
        };
        let (cpu, on_usual) = ctx
            .sibling(m, n::THREAD_LAST_CPU)
            .and_then(|last| usual(&ctx.values(last)))
            .map_or((None, 1.0), |(c, share)| (Some(c), share));
        out.push(WorkThread {
            pid: m.id.label(n::LABEL_PID).and_then(|p| p.parse().ok()),
            tid,
            comm: m.id.label(n::LABEL_COMM).unwrap_or("?").to_string(),
            cpu_pct,
            cpu,
            on_usual,
            voluntary_cs: sibling_mean(ctx, m, n::THREAD_VOLUNTARY_CS_PER_S),
            nonvoluntary_cs: sibling_mean(ctx, m, n::THREAD_NONVOLUNTARY_CS_PER_S),
            own: own.contains(&tid),
        });
    }
    out.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct));
    out
}

/// The value seen most often (the CPU a thread ran on most), and the share of the samples
/// that saw it.
fn usual(values: &[f64]) -> Option<(u32, f64)> {
    let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
    for v in values {
        if v.is_finite() && *v >= 0.0 {
            *counts.entry(v.round() as u32).or_default() += 1;
        }
    }
    let seen: usize = counts.values().sum();
    counts
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .map(|(c, n)| (c, n as f64 / seen as f64))
}

/// Processes outside the workload, from the process scan (`proc_cpu_pct`, every 2 s). A
/// process has one series per CPU it was last seen on; its time is spread over them by how
/// often it was seen there, so a process that moved is not counted twice.
fn processes(ctx: &Ctx) -> Procs {
    let s = ctx.series();
    let workload: Vec<&str> = s
        .by_name(n::THREAD_CPU_PCT)
        .filter_map(|m| m.id.label(n::LABEL_PID))
        .collect();
    // pid → (comm, in workload, nice, per cpu: (sum of values, scans seen)).
    type Acc = (String, bool, Option<i64>, BTreeMap<u32, f64>, usize);
    let mut by: BTreeMap<String, Acc> = BTreeMap::new();
    let mut scanned = false;
    let rows = ctx.rows.clone();
    let mut scans_by_pid: BTreeMap<String, std::collections::BTreeSet<usize>> = BTreeMap::new();
    for m in s.by_name(n::PROC_CPU_PCT) {
        scanned = true;
        let Some(pid) = m.id.label(n::LABEL_PID) else {
            continue;
        };
        let cpu = m.id.label(n::LABEL_CPU).and_then(|c| c.parse::<u32>().ok());
        let e = by.entry(pid.to_string()).or_insert_with(|| {
            (
                m.id.label(n::LABEL_COMM).unwrap_or("?").to_string(),
                false,
                m.id.label(n::LABEL_NICE)
                    .and_then(|v| v.parse::<i64>().ok()),
                BTreeMap::new(),
                0,
            )
        });
        // A peer is found once its connection exists: any scan that says so counts.
        e.1 |= m.id.label(n::LABEL_ROLE).is_some();
        let seen = scans_by_pid.entry(pid.to_string()).or_default();
        for r in rows.clone() {
            if let Some(Some(v)) = m.values.get(r) {
                seen.insert(r);
                if let Some(c) = cpu {
                    *e.3.entry(c).or_default() += v;
                }
            }
        }
    }
    let spread = |pid: &str, comm: String, nice: Option<i64>, sums: BTreeMap<u32, f64>| {
        let scans = scans_by_pid.get(pid).map_or(0, |s| s.len());
        (scans > 0).then(|| Stranger {
            comm,
            nice,
            by_cpu: sums
                .into_iter()
                .map(|(c, v)| (c, v / scans as f64))
                .collect(),
            pid: pid.to_string(),
        })
    };
    let mut out = Procs {
        scanned: scanned && !matches!(ctx.run.source, RunSource::Imported { .. }),
        ..Procs::default()
    };
    let nice_yields = ctx.nice_yields();
    for (pid, (comm, in_workload, nice, sums, _)) in by {
        let yields = nice_yields && nice.is_some_and(|v| v >= YIELDING_NICE);
        if workload.contains(&pid.as_str()) || yields || works_for_the_network(&comm) {
            continue;
        }
        let Some(p) = spread(&pid, comm, nice, sums) else {
            continue;
        };
        if in_workload {
            out.peers.push(p);
        } else {
            out.strangers.push(p);
        }
    }
    out.strangers
        .sort_by(|a, b| b.total().total_cmp(&a.total()));
    out
}

/// What the process scan saw besides the threads the sampler followed.
#[derive(Default)]
struct Procs {
    strangers: Vec<Stranger>,
    peers: Vec<Stranger>,
    scanned: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_says_what_niced_time_it_left_out() {
        let c = |niced| Core {
            cpu: 1,
            busy: 23.4,
            niced,
            kernel: None,
            softirq: None,
        };
        assert_eq!(c(0.0).busy_words(), "CPU 1 23.4 % busy");
        assert_eq!(
            c(76.6).busy_words(),
            "CPU 1 23.4 % busy (besides 76.6 % niced work, taken to yield to it)"
        );
    }
    use crate::testutil::*;
    use crate::Options;

    #[test]
    fn a_stranger_seen_on_two_cpus_is_spread_not_doubled() {
        let run = live_run(10, |s, r| {
            cpu_row(s, r, &[(90.0, 5.0, 0.0), (90.0, 5.0, 0.0)]);
            put(s, r, n::LOAD_RX_PPS, &[], 1e4);
            // Scans at even rows: on CPU 0 for the first half, CPU 1 after.
            if r % 2 == 0 {
                let cpu = if r < 5 { "0" } else { "1" };
                put(
                    s,
                    r,
                    n::PROC_CPU_PCT,
                    &[
                        (n::LABEL_PID, "9"),
                        (n::LABEL_COMM, "hog"),
                        (n::LABEL_CPU, cpu),
                    ],
                    100.0,
                );
            }
        });
        let opts = Options::default();
        let ctx = Ctx::new(&run, &opts);
        let acc = CpuAccount::new(&ctx);
        assert!(acc.scanned);
        let hog = &acc.strangers[0];
        assert!((hog.total() - 100.0).abs() < 1e-9, "{hog:?}");
        assert!((hog.on(&[0]) - 60.0).abs() < 1e-9, "{hog:?}");
    }

    #[test]
    fn an_affinity_mask_narrows_the_cores_the_workload_may_use() {
        let mut run = live_run(10, |s, r| {
            cpu_row(s, r, &[(90.0, 9.0, 0.0), (2.0, 2.0, 0.0)]);
            put(s, r, n::LOAD_RX_PPS, &[], 1e4);
        });
        run.meta.workload_cpus = Some(vec![0]);
        let opts = Options::default();
        let ctx = Ctx::new(&run, &opts);
        let acc = CpuAccount::new(&ctx);
        assert!(acc.restricted);
        assert_eq!(acc.cpus(), vec![0]);
        assert_eq!(acc.outside.len(), 1);
    }

    /// A reader at 44 % of a core on CPU 0, busy `core0` %, beside CPU 1 busy `core1` %.
    fn reader_beside(core0: f64, core1: f64) -> netceil_model::Run {
        live_run(10, |s, r| {
            cpu_row(
                s,
                r,
                &[(20.0, core0 - 20.0, 0.0), (20.0, core1 - 20.0, 0.0)],
            );
            put(s, r, n::LOAD_RX_PPS, &[], 1e4);
            let t: &[(&str, &str)] = &[(n::LABEL_TID, "7"), (n::LABEL_COMM, "reader")];
            put(s, r, n::THREAD_CPU_PCT, t, 44.0);
            put(s, r, n::THREAD_LAST_CPU, t, 0.0);
        })
    }

    #[test]
    fn a_thread_below_a_core_is_starved_only_when_no_core_had_time_for_it() {
        let opts = Options::default();
        let starved = |run: &netceil_model::Run| {
            let ctx = Ctx::new(run, &opts);
            let acc = CpuAccount::new(&ctx);
            acc.starved(&acc.threads[0]).is_some()
        };
        // Its own core full.
        assert!(starved(&reader_beside(97.0, 30.0)));
        // Its core nearly full and the other as busy: nowhere to move to.
        assert!(starved(&reader_beside(87.0, 99.0)));
        // Its core nearly full, but the other had room the scheduler would have given it.
        assert!(!starved(&reader_beside(87.0, 70.0)));
        // Both busy, but its own core had a quarter idle it did not take: it wanted no more.
        assert!(!starved(&reader_beside(75.0, 99.0)));
    }
}
