//! What a lab hands the hidden `netceil lab-child` it runs in its sender's namespace: a typed
//! [`ChildSpec`] (in the environment, as JSON), not a command line: the workload as netceil's
//! own parameter structs, already checked by the command line, and where to write the
//! finished run (a memory file of the lab's, so nothing is left on disk).

use netceil_model::params::{LoadParams, SearchParams, SweepParams, SweepTcpParams};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The environment variable the spec comes in.
pub const SPEC_ENV: &str = "NETCEIL_LAB_SPEC";

/// Set by the lab (to its own PID) on the netceil processes it starts: they stop, as on
/// SIGTERM, when that process dies, even by `kill -9`, so nothing keeps running in a lab that
/// `lab down --all` removed.
pub const DIE_WITH_PARENT: &str = "NETCEIL_DIE_WITH_PARENT";

/// What the children give as `--key-file`: their standard input (see `process::LabKey`).
pub const KEY_PATH: &str = "/proc/self/fd/0";

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

/// A workload for the lab, checked before anything is built; its target is set to the lab's
/// far end when it runs.
#[derive(Debug, Clone)]
pub struct Workload {
    pub experiment: Experiment,
    pub sample_interval: Duration,
    /// The workload's own labels (`--label`).
    pub labels: Vec<(String, String)>,
    /// `--probe`, as the user gave it.
    pub probes: Option<String>,
    pub lock_stacks: u32,
    /// The workload's own `--quiet`.
    pub quiet: bool,
    /// The far end's receive buffer and whether to force it, when the workload asks for one.
    pub rcvbuf: Option<(usize, bool)>,
    /// UDP frame size, for the packet-ceiling arithmetic.
    pub frame_bytes: Option<usize>,
}

impl Workload {
    /// The experiment aimed at the lab's far end.
    pub fn experiment(&self, target: SocketAddr) -> Experiment {
        let to = Some(target.to_string());
        let mut e = self.experiment.clone();
        match &mut e {
            Experiment::Suite => {}
            Experiment::Run { load, .. } => match load {
                LoadParams::Udp(p) => p.target = to,
                LoadParams::Tcp(p) => p.target = to,
                LoadParams::Rr(p) => p.target = to,
                LoadParams::Rrul(p) => p.target = to,
            },
            Experiment::Search { settings } => settings.target = to,
            Experiment::SweepUdp { settings } => settings.target = to,
            Experiment::SweepTcp { settings } => settings.target = to,
            Experiment::SweepParam { run, .. } => {
                run.extend([
                    "--to".into(),
                    target.to_string(),
                    "--key-file".into(),
                    KEY_PATH.into(),
                ]);
            }
        }
        e
    }

    /// The sender's spec, its run going to `run_out`.
    pub fn spec(
        &self,
        target: SocketAddr,
        labels: &[(String, String)],
        quiet: bool,
        run_out: PathBuf,
    ) -> ChildSpec {
        let mut all = self.labels.clone();
        all.extend(labels.iter().cloned());
        ChildSpec {
            experiment: self.experiment(target),
            to: target,
            key_file: KEY_PATH.into(),
            sample_interval_s: self.sample_interval.as_secs_f64(),
            labels: all,
            probes: self.probes.clone(),
            lock_stacks: self.lock_stacks,
            quiet: quiet || self.quiet,
            run_out,
        }
    }
}
