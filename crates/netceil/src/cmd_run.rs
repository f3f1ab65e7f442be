//! `netceil run`: generate load, count it at the kernel and the application, and report.
//!
//! Every workload is validated before anything is measured or stored, so bad input costs
//! nothing. One recording (sampler + store writer) spans the whole command; for the default
//! suite each part's series is its window of that one timeline.

use anyhow::anyhow;
use netceil_engine::{new_live_run, PartAnalysis, Replay, Trial};
use netceil_model::{Workload as WorkloadSpec, WorkloadKind};
use std::time::Duration;

use crate::cli::{CommonRunArgs, MetricsArgs, RunArgs, RunFormat};
use crate::engine::{self, Progress};
use crate::{Failure, Outcome};
use netceil_model::params::LoadParams;

/// The default run's parts: short enough that the whole suite takes about 20 s.
const SUITE_PART: Duration = Duration::from_secs(6);

pub fn run(args: RunArgs) -> Outcome {
    let mut load = args
        .workload
        .as_ref()
        .map(|w| engine::load_params(w, &args.common))
        .transpose()?;
    match &mut load {
        Some(p) => p.place(args.rx_cpu, args.tx_cpu),
        None if args.rx_cpu.is_some() || args.tx_cpu.is_some() => {
            return Err(Failure::usage(anyhow!(
                "--rx-cpu and --tx-cpu place one workload's threads; name it (netceil run udp|tcp|rr)"
            )))
        }
        None => {}
    }
    if args.format == RunFormat::Iperf {
        // The interval lines are printed at the end, in place of the live table.
        let common = CommonRunArgs {
            quiet: true,
            ..args.common.clone()
        };
        return measure(load, &common, &args.metrics, args.confirm, args.format);
    }
    measure(load, &args.common, &args.metrics, args.confirm, args.format)
}

/// Measures one workload, or the default suite without one.
pub fn measure(
    load: Option<LoadParams>,
    common: &CommonRunArgs,
    metrics: &MetricsArgs,
    confirm_it: bool,
    format: RunFormat,
) -> Outcome {
    let (mut top, wire_id) = new_live_run(&common.labels);
    let suite = load.is_none();
    let trials = match load {
        None => suite_trials(common, wire_id)?,
        Some(p) => vec![Trial::new(p, wire_id)?],
    };
    top.workload = Some(if suite {
        WorkloadSpec {
            kind: WorkloadKind::Suite,
            params: netceil_model::params::Params::Suite(netceil_model::params::SuiteParams {
                parts: [
                    "udp --frame-size 64 (unpaced)",
                    "tcp 1 flow",
                    "rr tcp 64 B closed loop",
                ]
                .map(String::from)
                .to_vec(),
                part_duration_s: SUITE_PART.as_secs_f64(),
            }),
        }
    } else {
        trials[0].workload()
    });
    let store = engine::open_store(common.no_store);
    let mut cmd = engine::start(
        common,
        metrics,
        store.as_ref(),
        top,
        Replay::default(),
        Progress::Table,
    )?;
    let c = &mut cmd.campaign;
    let mut failure = None;
    // Each workload's results as measured, on the whole run's clock.
    let mut results = Vec::new();
    for t in &trials {
        if c.stopping() {
            break;
        }
        let asked = t.workload();
        let r = if suite {
            c.trial(t, &asked, |_| asked.clone()).map(|m| m.results)
        } else {
            c.measure(t).map(|(r, _, _)| r)
        };
        match r {
            Ok(r) => results.push(r),
            Err(e) => {
                failure = Some(Failure::from(e));
                break;
            }
        }
    }
    let measured_parts = results.len();
    c.end(PartAnalysis::None);
    let top = &mut c.top;
    // The headline of the suite is the UDP part: the packet-rate ceiling.
    top.results = results.into_iter().next();
    let interrupted = crate::stop_flag().load(std::sync::atomic::Ordering::SeqCst);
    top.meta.complete = !interrupted && failure.is_none();
    if interrupted {
        top.notes.push(format!(
            "{}: results cover the time measured so far",
            crate::exit::interrupted()
        ));
    }
    if let Some(f) = &failure {
        let which = match trials.len() {
            1 => "the test".to_string(),
            n => format!("part {} of {n}", measured_parts + 1),
        };
        top.notes.push(format!(
            "{which} was not measured: {}",
            crate::exit::message(&f.error)
        ));
    }
    netceil_analyze::analyze_into(top);
    if confirm_it && failure.is_none() && !interrupted {
        confirm(top, common, wire_id, suite)?;
    }
    // A test refused before any load went out has left nothing in the store.
    let print = top.results.is_some() || failure.is_none();
    let done = cmd.done_stored(print, |run, stored| match format {
        RunFormat::Iperf => netceil_report::iperf(run),
        RunFormat::Screen => crate::render::end_of_run(run, stored, common.quiet, common.verbose),
    });
    match failure {
        Some(f) => Err(f),
        None => done,
    }
}

/// `--confirm`: the verdict tested by experiment, kept in the run, and the run analyzed again
/// so that a verdict the experiment refuted is demoted.
fn confirm(
    top: &mut netceil_model::Run,
    common: &CommonRunArgs,
    wire_id: u16,
    suite: bool,
) -> Result<(), Failure> {
    if suite {
        top.notes
            .push("--confirm tests one workload's verdict; the default suite has three".into());
        return Ok(());
    }
    if !common.quiet {
        eprintln!("netceil: --confirm: testing the verdict in four short trials");
    }
    match netceil_engine::confirm::confirm(&engine::session_config(common), top, wire_id)? {
        Ok(c) => {
            top.notes.push(format!("--confirm: {}", c.summary));
            top.confirmations.push(c);
            netceil_analyze::analyze_into(top);
        }
        Err(why) => top.notes.push(why),
    }
    Ok(())
}

/// The default suite's parts, parsed through clap so they run exactly what the flags mean.
fn suite_trials(common: &CommonRunArgs, wire_id: u16) -> Result<Vec<Trial>, Failure> {
    use clap::Parser;
    let secs = format!("{}s", SUITE_PART.as_secs());
    let argvs: [&[&str]; 3] = [
        &[
            "netceil",
            "run",
            "udp",
            "--frame-size",
            "64",
            "--duration",
            &secs,
        ],
        &["netceil", "run", "tcp", "--duration", &secs],
        &["netceil", "run", "rr", "--duration", &secs],
    ];
    argvs
        .iter()
        .map(|argv| {
            let cli = crate::cli::Cli::try_parse_from(*argv)
                .map_err(|e| Failure::from(anyhow!("internal: {e}")))?;
            match cli.command {
                crate::cli::Command::Run(RunArgs {
                    workload: Some(w), ..
                }) => engine::plan(&w, common, wire_id),
                _ => Err(Failure::from(anyhow!(
                    "internal: a suite part did not parse to a workload"
                ))),
            }
        })
        .collect()
}
