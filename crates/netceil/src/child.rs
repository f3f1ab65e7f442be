//! The hidden `netceil lab-child`: what a lab runs in its sender's namespace. The lab hands
//! it a typed [`ChildSpec`] (in the environment, as JSON), not a command line: the workload
//! as netceil's own parameter structs, already checked by the lab, and where to write the
//! finished run (a memory file of the lab's, so nothing is left on disk).

use anyhow::{anyhow, Context};
use netceil_model::params::{LoadParams, SearchParams, SweepParams, SweepTcpParams};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{CommonRunArgs, MetricsArgs};
use crate::{cmd_run, cmd_search, cmd_sweep, Failure, Outcome};

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

/// Runs the spec in the environment.
pub fn run() -> Outcome {
    let text = std::env::var(SPEC_ENV).map_err(|_| {
        Failure::usage(anyhow!(
            "lab-child runs only as a lab's sender ({SPEC_ENV} is not set)"
        ))
    })?;
    let spec: ChildSpec = serde_json::from_str(&text)
        .with_context(|| format!("{SPEC_ENV}: not a lab child's spec"))
        .map_err(Failure::usage)?;
    let common = CommonRunArgs {
        json: false,
        to: Some(spec.to),
        key_file: Some(spec.key_file.clone()),
        ipv6: false,
        labels: spec.labels.clone(),
        quiet: spec.quiet,
        sample_interval: Duration::from_secs_f64(spec.sample_interval_s),
        wide: false,
        // The lab stores the run with its own series once it has merged them.
        no_store: true,
        probes: spec
            .probes
            .as_deref()
            .map(netceil_engine::probes::parse_probe_list)
            .transpose()
            .map_err(|e| Failure::usage(anyhow!("--probe: {e}")))?,
        lock_stacks: spec.lock_stacks,
        run_out: Some(spec.run_out.clone()),
    };
    let metrics = MetricsArgs {
        metrics_listen: None,
        metrics_linger: None,
    };
    match spec.experiment {
        Experiment::Suite => cmd_run::measure(None, &common, &metrics, false),
        Experiment::Run { load, confirm } => {
            cmd_run::measure(Some(load), &common, &metrics, confirm)
        }
        Experiment::Search { settings } => {
            cmd_search::search(settings, Default::default(), &common, &metrics, None)
        }
        Experiment::SweepUdp { settings } => {
            cmd_sweep::run_udp(settings, Default::default(), &common, &metrics, None)
        }
        Experiment::SweepTcp { settings } => cmd_sweep::run_tcp(settings, &common, &metrics),
        Experiment::SweepParam { params, run } => {
            cmd_sweep::run_param(&params, &run, &common, &metrics)
        }
    }
}
