//! What a lab hands the hidden `netceil lab-child` it runs in its sender's namespace: a typed
//! [`ChildSpec`] (in the environment, as JSON), not a command line: the workload as netceil's
//! own parameter structs, already checked by the lab, and where to write the finished run (a
//! memory file of the lab's, so nothing is left on disk). `lib.rs` runs it.

use netceil_model::params::{LoadParams, SearchParams, SweepParams, SweepTcpParams};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;

/// The environment variable the spec comes in.
pub const SPEC_ENV: &str = "NETCEIL_LAB_SPEC";

/// What the lab's sender runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum Experiment {
    /// The default suite.
    Suite,
    /// One workload, its verdict tested by experiment with `confirm`.
    Run {
        load: LoadParams,
        confirm: bool,
    },
    Search {
        settings: SearchParams,
    },
    SweepUdp {
        settings: SweepParams,
    },
    SweepTcp {
        settings: SweepTcpParams,
    },
    /// A sweep over `netceil run` flags: its values and the run's own arguments.
    SweepParam {
        params: Vec<String>,
        run: Vec<String>,
    },
}

/// Everything a lab's child needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildSpec {
    pub experiment: Experiment,
    /// The far end (`netceil serve` in the receiver's namespace) and its key file.
    pub to: SocketAddr,
    pub key_file: PathBuf,
    pub sample_interval_s: f64,
    pub labels: Vec<(String, String)>,
    /// `--probe`, as the user gave it.
    pub probes: Option<String>,
    pub lock_stacks: u32,
    pub quiet: bool,
    /// Where the finished run goes, as JSON.
    pub run_out: PathBuf,
}
