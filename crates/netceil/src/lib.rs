//! The netceil binary: command line, wiring and terminal output. The work is done in the
//! library crates; this crate decides what to run and how to show it.
//!
//! Output goes through [`out`] (`crate::outln!`, `out::stdout()`), never `println!`, which
//! panics when the reader of stdout has gone.
#![warn(clippy::print_stdout)]

mod cli;
mod cmd_analyze;
mod cmd_gen;
mod cmd_lab;
mod cmd_report;
mod cmd_run;
mod cmd_search;
mod cmd_serve;
mod cmd_store;
mod cmd_sweep;
mod cmd_watch;
mod engine;
pub mod exit;
mod metrics;
pub mod out;
mod parse;
mod render;

use clap::Parser;
use netceil_engine::lab::DIE_WITH_PARENT;
use std::process::ExitCode;

pub use exit::{on_stop, stop_flag, Done, Failure, Outcome};

/// A netceil that `netceil lab` started stops, as on SIGTERM, when the lab's process dies,
/// even by `kill -9` (see [`DIE_WITH_PARENT`]).
fn die_with_parent() {
    let Some(parent) = std::env::var(DIE_WITH_PARENT)
        .ok()
        .and_then(|v| v.parse::<i32>().ok())
    else {
        return;
    };
    let _ = stop_flag();
    let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM);
    // The parent may have died before the signal was asked for: as if it had come.
    if nix::unistd::getppid().as_raw() != parent {
        exit::request_stop(exit::Stop::Signal(nix::sys::signal::Signal::SIGTERM));
    }
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    die_with_parent();
    if !matches!(
        &cli.command,
        cli::Command::Lab(cli::LabArgs {
            command: cli::LabCommand::Down(_) | cli::LabCommand::List
        })
    ) {
        cmd_lab::warn_if_stale();
    }
    let outcome = match cli.command {
        cli::Command::Lab(args) => cmd_lab::run(args),
        cli::Command::Run(args) => cmd_run::run(args),
        cli::Command::Serve(args) => cmd_serve::run(args, false),
        cli::Command::Recv(args) => cmd_serve::run(args, true),
        cli::Command::Completions { shell } => cmd_gen::completions(shell),
        cli::Command::Man(args) => cmd_gen::man(args),
        cli::Command::Search(args) => cmd_search::run(args),
        cli::Command::Sweep(args) => cmd_sweep::run(args),
        cli::Command::Watch(args) => cmd_watch::run(args),
        cli::Command::Analyze(args) => cmd_analyze::run(args),
        cli::Command::Runs(args) => cmd_store::runs(args),
        cli::Command::Show(args) => cmd_store::show(args),
        cli::Command::Rm(args) => cmd_store::rm(args),
        cli::Command::Export(args) => cmd_report::export(args),
        cli::Command::Report(args) => cmd_report::report(args),
        cli::Command::Compare(args) => cmd_report::compare(args),
        cli::Command::LabChild => lab_child(),
    };
    finish(&outcome)
}

/// Says what went wrong (once) and turns the outcome into the exit code.
fn finish(outcome: &Outcome) -> ExitCode {
    // Flushed first, so that what could not be written is known before the code is chosen.
    let _ = std::io::Write::flush(&mut out::stdout());
    let stop = exit::stop_cause();
    let stdout = out::state();
    if let Err(f) = outcome {
        if !(out::closed() && exit::is_broken_pipe(&f.error)) {
            eprintln!("netceil: {}", exit::message(&f.error));
        }
    }
    if let Some(e) = out::failure() {
        eprintln!("netceil: writing to stdout: {e}");
    }
    ExitCode::from(exit::exit_code(outcome, stop, stdout))
}

/// Runs the typed spec a lab hands its sender in the environment
/// (`netceil_engine::lab::ChildSpec`).
fn lab_child() -> Outcome {
    use anyhow::{anyhow, Context};
    use cli::{CommonRunArgs, MetricsArgs};
    use netceil_engine::lab::{ChildSpec, Experiment, SPEC_ENV};
    use std::time::Duration;
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
        // The lab shows its child's whole summary, as before the one-screen default.
        verbose: true,
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
        stream: None,
        run_out: Some(spec.run_out.clone()),
    };
    let metrics = MetricsArgs {
        metrics_listen: None,
        metrics_linger: None,
        metrics_detail: false,
    };
    match spec.experiment {
        Experiment::Suite => {
            cmd_run::measure(None, &common, &metrics, false, cli::RunFormat::Screen)
        }
        Experiment::Run { load, confirm } => cmd_run::measure(
            Some(load),
            &common,
            &metrics,
            confirm,
            cli::RunFormat::Screen,
        ),
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
