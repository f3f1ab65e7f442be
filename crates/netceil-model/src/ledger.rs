//! The verdict's ledger: every resource the work needed, sized against its capacity, with what
//! relieving it would gain.
//!
//! This is the USE method (utilization, saturation and errors for every resource) made
//! mechanical, plus one figure the USE method leaves to the reader: how far the delivered rate
//! would rise if the resource were relieved, before the next one binds. The analyzer writes
//! one [`LedgerEntry`] per suspect and one per resource it sized to rule out; one ranking puts
//! them in order, and every finding's sentence is written from its entry, so a number in a
//! sentence is a number here. `netceil show RUN --explain` prints it.

use serde::{Deserialize, Serialize};

use crate::{Evidence, Unit};

/// A measured amount: a value, its unit, and how it was known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Quantity {
    pub value: f64,
    pub unit: Unit,
    /// What the value counts and where it came from, in words (`% of one core, /proc/stat`,
    /// `the qdisc's configured rate`, `the lock profile's window × 8 CPUs`).
    pub how: String,
}

impl Quantity {
    pub fn new(value: f64, unit: Unit, how: impl Into<String>) -> Quantity {
        Quantity {
            value,
            unit,
            how: how.into(),
        }
    }
}

/// The resource an entry is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Resource {
    /// One or several CPUs, as the workload could use them (its affinity mask, when narrower
    /// than the machine). `far` for the far end of `--to`.
    Cpu {
        cpus: Vec<u32>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        far: bool,
    },
    /// One thread: a core's worth of work at most.
    Thread {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tid: Option<u32>,
        comm: String,
        /// The CPU it ran on most.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cpu: Option<u32>,
    },
    /// A queue packets wait in and overflow from: a socket buffer, a CPU's backlog, a NIC ring,
    /// a qdisc, the NAPI budget.
    Queue {
        name: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        far: bool,
    },
    /// A lock, per lock and call site.
    Lock {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        site: Option<String>,
    },
    /// A rate limiter: a shaping or policing qdisc, or a limiter in the path between hosts.
    Shaper { name: String },
    /// A link or bus with a known rate.
    Link { name: String },
    /// What held a TCP flow: its receive window, its send buffer, or congestion control.
    TcpFlow { limit: String },
    /// A runtime's schedulers (Erlang): work against time.
    Scheduler { name: String },
    /// Disk I/O the CPUs waited on.
    Disk,
    /// The load generator's own ability to offer the rate asked.
    Generator,
    /// A closed request/response loop's round trip.
    RoundTrip,
    /// Interrupt and context-switch rates.
    Events,
    /// The network path between two hosts.
    Path,
    /// The data itself: an import that cannot be true.
    Data,
}

/// Where an entry stands in the ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryState {
    /// The verdict: saturated, explained by nothing else, and its relief gains the most.
    Binds,
    /// Saturated or erring, but another entry's saturation explains it: it follows that one.
    Symptom,
    /// Saturated too, but relieving it would gain less than relieving the verdict.
    Saturated,
    /// A finding that is not a ceiling on its own (arithmetic, a cost, a cause outside the
    /// network, or too small to limit anything).
    Noted,
    /// Close to its limit without reaching it: said in the verdict, not claimed.
    NearLimit,
    /// Sized and found with room: ruled out by the figures.
    Headroom,
}

/// What relieving a resource would gain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Gain {
    /// The delivered rate after relief over the delivered rate now (1.8 = 80 % more); `None`
    /// when nothing bounds it that was measured.
    pub factor: Option<f64>,
    /// The entry that would bind next, by id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// The estimate in words.
    pub text: String,
}

/// One resource in the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LedgerEntry {
    /// Stable within the run (`cpu:0`, `thread:4211`, `queue:socket`, `lock:rtentry@ip_output`).
    pub id: String,
    /// The cause this entry would name as the verdict.
    pub cause: crate::Cause,
    pub resource: Resource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Quantity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used: Option<Quantity>,
    /// used ÷ capacity, 0–1 (above 1 when a rate exceeded its nominal limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// Errors counted against it (drops, retransmits), when that is how it shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<Quantity>,
    pub state: EntryState,
    /// How sure the measurement is, 0–1.
    pub confidence: f64,
    pub evidence: Vec<Evidence>,
    /// Entries whose saturation this one explains, by id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explains: Vec<String>,
    /// The entry that explains this one, by id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explained_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gain: Option<Gain>,
    /// Why the entry stands where it does, in one sentence.
    pub why: String,
}

/// The whole ledger of one run, in ranking order: the first entry is the verdict when its
/// state is [`EntryState::Binds`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Ledger {
    pub entries: Vec<LedgerEntry>,
    /// The rate gains are stated against, when the run has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered: Option<Quantity>,
    /// How the verdict follows from the entries, in one sentence.
    pub verdict: String,
}
