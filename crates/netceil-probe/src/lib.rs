//! netceil's counter sources: what vmstat, mpstat, sar, nstat and pidstat would show, read by
//! one thread at a small cost.
//!
//! Three layers, each usable on its own:
//! - [`parse`]: one pure parser per /proc or /sys file, from text to typed values. They do no
//!   I/O and build on any platform, so the importers reuse them on captured snapshots.
//! - [`Source`]: the seam to the OS. [`ProcFs`] reads the machine (or a copy of its /proc and
//!   /sys under another root), and asks the kernel over netlink for what no file has: qdisc
//!   counters ([`qdisc`]) and TCP sockets with their `tcp_info` ([`sockdiag`]). [`FakeSource`]
//!   serves text, qdiscs and sockets from memory for tests.
//! - [`flows`]: which TCP connections are the workload's, and the busiest of them.
//! - [`Sampler`] reads every source into a [`Snapshot`] (the costlier sources at most every
//!   100 ms, see [`sampler`]); [`rates`] turns two snapshots into a [`Row`] of per-second
//!   rates and percentages over the measured interval; [`Recorder`] appends rows to a
//!   [`netceil_model::Series`]; [`spawn_sampler`] runs all of it on a thread and records the
//!   sampler's own CPU time (`sampler_cpu_pct`).
//!
//! Metric names are the constants of [`netceil_model::names`]. A value that could not be
//! measured is missing, with its reason, never 0.

pub mod affinity;
pub mod cgroup;
pub mod cpu_share;
mod error;
pub mod flows;
pub mod host;
pub mod ids;
pub mod iface;
pub mod parse;
pub mod qdisc;
pub mod rates;
mod recorder;
pub mod sampler;
pub mod sched;
pub mod sockdiag;
mod source;

pub use error::{Found, ParseError, SourceError};
pub use flows::{Flow, TcpFlows};
pub use ids::{Key, Label, MetricIds, Schema};
pub use rates::{counter_delta, rates, rates_with, CounterWidth, Row, Value};
pub use recorder::{
    spawn_sampler, Recorder, SamplerHandle, SamplerOutput, SamplerStopper, MAX_PROCESS_COLUMNS,
    MAX_ROWS,
};
pub use sampler::{
    NicIrq, Sampler, SamplerConfig, SlowSnapshot, Snapshot, ThreadSample, DEFER_MAX,
};
pub use source::{thread_cpu_time, FakeSource, ProcFs, Source};
