//! netceil's experiment engine.
//!
//! - A [`Session`] owns what every measurement needs: the sampler and the store writer (a
//!   [`Recording`]), the eBPF probes, the far-end client and the [`Observer`]s.
//! - A [`Trial`] is one of netceil's workloads at one setting, made from typed parameters;
//!   [`Session::measure`] runs it and returns its results.
//! - A [`Campaign`] keeps a planner's trials as the parts of one run: replay after an
//!   interruption, each part stored as it ends, the parts cut from one timeline and analyzed.
//! - The [`plan`]ners decide which trial comes next: the loss search, the UDP sweep grid,
//!   the TCP flows sweep, the parameter sweep.
//! - [`watched`]: the processes a watch observes, a command it launches ended and reaped.
//! - [`lab`]: a workload across network-namespace topologies, over knob values and over
//!   topologies, each change restored.
//!
//! The command line is the binary's. Nothing here prints to stdout but through a writer its
//! caller gives: the terminal's observers ([`TerminalParts`], [`Steps`]) draw their bars on
//! the terminal and write their plain lines through the binary's stdout.

mod campaign;
pub mod confirm;
mod error;
pub mod kernel;
pub mod lab;
mod observer;
pub mod plan;
pub mod probes;
pub mod recording;
pub mod remote;
mod run;
mod session;
mod trial;
pub mod watched;

pub use campaign::{resumable, Campaign, Measured, PartAnalysis, Replay};
pub use error::{Error, ErrorKind};
pub use observer::json::{JsonStream, MachineFigures, StreamLine};
pub use observer::table::{LiveTable, RR_COLUMNS, TCP_COLUMNS, UDP_COLUMNS};
pub use observer::terminal::{terminal_width, Live, OpenStdout, Steps, TerminalParts};
pub use observer::{LoadFigures, LoadKind, Observer, PartStart};
pub use recording::{check_interval, LoadValues, Recording, ROW_BATCH};
pub use run::{
    headline_findings, new_live_run, new_run, new_run_id, now_unix_s, part_of, wire_run_id,
};
pub use session::{Session, SessionConfig};
pub use trial::{udp_defaults, Trial};
