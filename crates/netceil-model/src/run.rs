//! The Run and its metadata.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::{Finding, Results, Series};

/// What generated the load, if anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    Udp,
    Tcp,
    Rr,
    /// Latency under load: bulk TCP both ways beside a request/response probe (`netceil run
    /// rrul`).
    Rrul,
    /// Several workloads in one run (the default `netceil run`).
    Suite,
    /// Someone else's load, observed.
    External,
    /// A loss-criterion search: trials at chosen rates, each a part (`netceil search`).
    Search,
    /// A sweep: cells or steps over a grid of settings, each a part (`netceil sweep`).
    Sweep,
}

/// The workload: its kind plus the parameters it ran with. Stored as one JSON object, the
/// kind beside the parameters' fields; read back into the typed parameters of the command that
/// ran it (see [`crate::params::Params`]), or kept as they were when no netceil command wrote
/// them (an import's settings, a later version's fields).
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub kind: WorkloadKind,
    pub params: crate::params::Params,
}

/// How a Run came to be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunSource {
    /// netceil generated the load.
    Live,
    /// netceil observed; `command` is what it launched, if anything.
    Watched { command: Option<Vec<String>> },
    /// Read from another tool's log.
    Imported { format: String, file: String },
}

/// One network interface as seen on the host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NicInfo {
    pub name: String,
    pub driver: Option<String>,
    /// Link speed in Mbit/s as the driver reports it.
    pub speed_mbit: Option<u64>,
    pub mtu: Option<u32>,
    pub rx_queues: Option<u32>,
    pub tx_queues: Option<u32>,
    /// True when the kernel lists the interface under /sys/devices/virtual (lo, veth, bridge,
    /// tun, dummy…): whatever `speed_mbit` says is nominal, not a link's rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_device: Option<bool>,
}

/// The machine a run was measured on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostInfo {
    pub hostname: Option<String>,
    pub os: Option<String>,
    pub kernel: Option<String>,
    pub cpus: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nics: Vec<NicInfo>,
    /// `kernel.sched_autogroup_enabled`: when true the scheduler shares CPU time between
    /// sessions first, and a program's nice ranks it only against its own session's tasks, so a
    /// niced program in another session does not yield to the workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_autogroup: Option<bool>,
}

/// What the person supplied that the data itself cannot know (`analyze --throughput 18MB/s
/// --link 1G --bus PCIe1.1x1`, or `run --link 10G`). Decimal bit/s.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Annotations {
    /// The throughput the person saw while the log was taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_bits_per_s: Option<f64>,
    /// The link speed the traffic crossed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_bits_per_s: Option<f64>,
    /// The bus the NIC sits on, as given (`PCIe1.1x1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus: Option<String>,
    /// The bus's usable data rate, bit/s, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_bits_per_s: Option<f64>,
    /// The sampling interval of an imported log when its lines carry no time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_s: Option<f64>,
}

/// Identity and context of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunMeta {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Start time, seconds since the Unix epoch.
    pub started_unix_s: f64,
    pub host: HostInfo,
    /// netceil's version that made the run.
    pub netceil_version: String,
    /// False while a run is being recorded, or if it was cut short.
    pub complete: bool,
    /// CPU seconds netceil's own sampler used over the run: the observer's cost.
    #[serde(default)]
    pub sampler_cpu_s: Option<f64>,
    /// The same as a percentage of one core over the sampled wall time.
    #[serde(default)]
    pub sampler_cpu_pct: Option<f64>,
    #[serde(default)]
    pub annotations: Annotations,
    /// OS thread ids (gettid) of the threads netceil's load engine started for this run
    /// (senders, receivers, echo servers, request/response clients). The analyzer leaves
    /// exactly these out of the system's threads, whatever they are named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub own_thread_ids: Vec<u32>,
    /// The CPUs the workload was allowed to run on (its affinity mask: `taskset`, a cpuset),
    /// when it was narrower than the machine. The analyzer sizes the CPU against these: a
    /// workload held to CPU 0 has no headroom on CPU 1, however idle CPU 1 was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_cpus: Option<Vec<u32>>,
    /// What an imported log says that cannot be true of a real machine (a CPU index that
    /// restarts inside one block, a counter that runs backwards, a block with more rows than
    /// the machine has CPUs): the rows around it are suspect and are not analyzed as truth.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub implausible: Vec<Implausible>,
    /// The CPU quota of the workload's cgroup (CFS bandwidth: `cpu.max`, `cpu.cfs_quota_us`),
    /// when it had one, and what the workload did against it over the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_quota: Option<CpuQuota>,
    /// How long the lock table was gathered, seconds, when netceil gathered it itself (the
    /// locks probe's attach time). The lock waits are sized against this window × the CPUs;
    /// an imported profile's window is given with `analyze --window`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locks_window_s: Option<f64>,
}

/// A cgroup's CPU quota against what the workload used of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuQuota {
    /// The cgroup whose quota binds (the tightest from the workload's up to the root).
    pub cgroup: String,
    /// The quota, in CPUs (quota ÷ period).
    pub cpus: f64,
    /// CPUs the cgroup used on average over the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_cpus: Option<f64>,
    /// Share of the CFS periods in which the cgroup was throttled, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_pct: Option<f64>,
}

/// One impossible fact in an imported log, with where it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Implausible {
    /// The line of the file (1-based) where it shows, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// What cannot be true, in words with the figures (`CPU 0 appears again at line 14 inside
    /// the block that began at line 9`).
    pub what: String,
}

/// One row of a lock-contention table (from eBPF or an imported lock profile).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LockStat {
    /// Lock name or class (`rtentry`, `&rq->__lock`…).
    pub name: String,
    /// Where it was taken, if known (file:line or symbol).
    pub caller: Option<String>,
    /// Acquisitions.
    pub count: u64,
    /// Times the lock was found held (contended acquisitions), if known.
    pub contended: Option<u64>,
    pub wait_total_s: f64,
    pub wait_max_s: Option<f64>,
    pub hold_total_s: Option<f64>,
    pub hold_max_s: Option<f64>,
    /// The lock's type when known (`spinlock`, `mutex`, `rwsem:R`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// A kernel stack seen at this call site, innermost frame first (eBPF probes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
}

/// Everything netceil knows about one measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Run {
    pub run_id: String,
    pub source: RunSource,
    pub workload: Option<Workload>,
    pub meta: RunMeta,
    pub series: Series,
    pub results: Option<Results>,
    /// Results of each part of a suite run, in order (udp, tcp, rr for the default run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Run>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locks: Vec<LockStat>,
    /// What a search found: per frame size and loss tolerance, the highest rate within it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knees: Vec<Knee>,
    /// Filled in by the analyzer only.
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// Import warnings, skipped lines, tool output: things a reader should see.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Verdicts tested by experiment (`--confirm`): what was changed and what moved. The
    /// analyzer demotes a cause whose intervention moved nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub confirmations: Vec<Confirmation>,
}

/// What an A/B experiment on a verdict found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmOutcome {
    /// The figure moved as the verdict predicts: the cause stands.
    Confirmed,
    /// The figure did not move beyond the trials' own noise: the cause is not the ceiling.
    Refuted,
    /// The trials disagree too much among themselves to tell.
    Inconclusive,
}

/// A verdict tested the way a field investigation would: the one thing it blames changed,
/// in short trials alternated with the unchanged workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Confirmation {
    /// The cause tested.
    pub cause: crate::Cause,
    /// What was changed, in words: `a 16× receive buffer (3.2 MiB)`.
    pub intervention: String,
    /// The figure watched, in words (`loss`, `delivered`), and its unit.
    pub figure: String,
    pub unit: crate::Unit,
    /// What the verdict predicts the change does to the figure, in words.
    pub predicted: String,
    /// The figure in each unchanged (A) and changed (B) trial, in the order run.
    pub unchanged: Vec<f64>,
    pub changed: Vec<f64>,
    /// Each trial's length, seconds.
    pub trial_s: f64,
    pub outcome: ConfirmOutcome,
    /// One sentence: what moved, and what that means for the verdict.
    pub summary: String,
}

/// One answer of a search: for a frame size and a loss tolerance, the highest rate whose loss
/// stayed within it, at the point where loss was counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Knee {
    /// Ethernet frame size as RFC 2544 counts it, bytes.
    pub size_bytes: usize,
    /// Where loss was counted: `"app"` (netceil's receiver read it) or `"kernel"` (it reached
    /// a socket buffer).
    pub point: String,
    /// The loss ratio allowed, 0–1 (0 for the NDR).
    pub loss_tolerance: f64,
    /// The gap between packets at `rate_pps`, µs (a sweep's answer).
    pub min_interval_us: Option<f64>,
    /// The highest rate within the tolerance, packets/s as offered; `null` when none passed.
    pub rate_pps: Option<f64>,
    /// `rate_pps` × the frame size × 8: Ethernet frame bits per second.
    pub bits_per_s: Option<f64>,
    /// The worst loss ratio seen at `rate_pps` in full-length trials.
    pub loss_ratio: Option<f64>,
    /// Trials the search ran for this frame size (all tolerances share them).
    pub trials: usize,
    /// The generator could not offer more: `rate_pps` is a lower bound.
    pub generator_limited: bool,
    /// A final trial at `rate_pps` passed.
    pub verified: bool,
    /// The lowest rate that failed, packets/s.
    pub upper_pps: Option<f64>,
    /// What stopped it: the first failing full-length trial above `rate_pps` (its part id) and
    /// the analyzer's top finding there.
    pub stopped_by: Option<String>,
    /// Why the answer is not exact to the precision asked, when it is not.
    pub note: Option<String>,
    /// A TCP or request/response search's answer in its own terms; absent for a UDP loss
    /// search, whose answer is the fields above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<KneeGoal>,
}

/// What a TCP or request/response search bounded, and the rate it found within that bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KneeGoal {
    /// The bound the rate was searched under.
    pub bound: SearchBound,
    /// The highest rate that passed a full-length trial within the bound, in `unit`; `null`
    /// when none passed.
    pub rate: Option<f64>,
    /// The rate's unit: bit/s of TCP goodput, or transactions per second.
    pub unit: SearchRateUnit,
    /// The lowest rate found to break the bound, in `unit`.
    pub upper: Option<f64>,
    /// The worst figure the bound is on (retransmit ratio, or p99 round trip in s) among the
    /// full-length trials at `rate`.
    pub seen: Option<f64>,
    /// The part (trial) whose full-length pass verifies `rate`.
    pub verified_by: Option<String>,
}

/// What a search's bound is on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "criterion", rename_all = "snake_case")]
pub enum SearchBound {
    /// Segments retransmitted over segments sent, at most `max_ratio` (0–1).
    Retransmits { max_ratio: f64 },
    /// The 99th-percentile round trip, at most `max_s` seconds.
    P99 { max_s: f64 },
}

/// The unit of a TCP or request/response search's rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchRateUnit {
    /// TCP goodput: payload bits per second received, all flows together.
    GoodputBitsPerSecond,
    /// Request/response transactions per second.
    TransactionsPerSecond,
}

impl SearchRateUnit {
    /// A rate in this unit, in words: `1.20 Gbit/s`, `12.0 k transactions/s`.
    pub fn show(self, v: f64) -> String {
        match self {
            SearchRateUnit::GoodputBitsPerSecond => {
                crate::fmt::value(v, crate::Unit::BitsPerSecond)
            }
            SearchRateUnit::TransactionsPerSecond => {
                format!("{} transactions/s", crate::fmt::number(v))
            }
        }
    }
}

impl Run {
    pub fn new(run_id: impl Into<String>, source: RunSource) -> Self {
        Run {
            run_id: run_id.into(),
            source,
            workload: None,
            meta: RunMeta::default(),
            series: Series::default(),
            results: None,
            parts: Vec::new(),
            locks: Vec::new(),
            knees: Vec::new(),
            findings: Vec::new(),
            notes: Vec::new(),
            confirmations: Vec::new(),
        }
    }
}
