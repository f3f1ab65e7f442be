//! netceil's one data model.
//!
//! Every path in and out of netceil goes through [`Run`]: a live run, a watched run and an
//! imported log all become one, and the analyzer, store and reports only ever see a `Run`.
//! This crate is platform-independent and opens nothing: its only reading is [`input`]'s
//! bounded reading from a reader it is handed.

mod cause;
pub mod duration;
mod finding;
pub mod fmt;
pub mod input;
mod ledger;
pub mod names;
pub mod params;
mod results;
mod run;
mod series;
pub mod stats;
pub mod time;
mod units;

pub use cause::Cause;
pub use finding::{Advice, Evidence, Finding};
pub use ledger::{EntryState, Gain, Ledger, LedgerEntry, Quantity, Resource};
pub use results::{
    FarApp, FarCpu, FarEnd, FarKernelDeltas, FlowResult, GeneratorStats, KernelDelivery,
    LatencySummary, PacingMode, Results, RrulResults, TcpDirection, TcpDirectionResult, TcpPacing,
};
pub use run::{
    Annotations, ConfirmOutcome, Confirmation, CpuQuota, HostInfo, Implausible, Knee, KneeGoal,
    LockStat, NicInfo, Run, RunMeta, RunSource, SearchBound, SearchRateUnit, Workload,
    WorkloadKind,
};
pub use series::{Metric, MetricId, MissingValue, Series};
pub use units::{
    bus_data_rate, frame_to_udp_payload, udp_payload_to_frame, Rate, RateParseError, Unit,
    MAX_BITS_PER_S, MAX_PACKETS_PER_S, MIN_BITS_PER_S, MIN_PACKETS_PER_S,
};
