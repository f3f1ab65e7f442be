//! `netceil sweep`: the UDP size × interval grid (`sweep udp`), TCP throughput over flow
//! counts (`sweep tcp`) and `netceil run` over combinations of values (`sweep param`). The
//! planners are the engine's ([`netceil_engine::plan`]); here are their flags, resume and
//! tables.

use anyhow::anyhow;
use netceil_engine::plan::{self, param::Combination, Reach};
use netceil_engine::{new_live_run, Replay};
use netceil_model::params::{SweepParams, SweepTcpParams};
use netceil_model::{Workload as WorkloadSpec, WorkloadKind};

use crate::cli::{CommonRunArgs, MetricsArgs, SweepArgs, SweepWorkload};
use crate::engine::{self, Progress};
use crate::{Failure, Outcome};

pub fn run(args: SweepArgs) -> Outcome {
    let common = &args.common;
    let a = match &args.workload {
        SweepWorkload::Udp(a) => a,
        SweepWorkload::Tcp(t) => {
            return run_tcp(engine::sweep_tcp_params(t, common), common, &args.metrics)
        }
        SweepWorkload::Param(p) => return run_param(&p.params, &p.run, common, &args.metrics),
    };
    let target = common.to.map(|t| t.to_string());
    let store = engine::open_store(common.no_store);
    let (settings, replay) = match &a.resume {
        Some(spec) => {
            let old = netceil_engine::resumable(store.as_ref(), spec, target.clone(), common.ipv6)?;
            (plan::sweep::from_run(&old)?, Replay::of(old))
        }
        None => (
            engine::sweep_params(a, target, common.ipv6),
            Replay::default(),
        ),
    };
    run_udp(settings, replay, common, &args.metrics, store.as_ref())
}

/// The size × interval sweep as `settings` say, replaying what `replay` holds first.
pub fn run_udp(
    mut settings: SweepParams,
    replay: Replay,
    common: &CommonRunArgs,
    metrics: &MetricsArgs,
    store: Option<&netceil_store::Store>,
) -> Outcome {
    // The address family is the settings': a resumed run's, as it was stored.
    let reach = Reach {
        to: common.to,
        ipv6: settings.ipv6,
    };
    settings.resumed_from = replay.from.clone();
    let intervals = plan::sweep::check(&settings, reach)?;
    let (mut top, _) = new_live_run(&common.labels);
    top.workload = Some(WorkloadSpec {
        kind: WorkloadKind::Sweep,
        params: netceil_model::params::Params::Sweep(settings.clone()),
    });
    let progress = Progress::Steps {
        what: "sweep",
        at_most: (settings.sizes.len() * intervals.len()) as u64,
    };
    let mut cmd = engine::start(common, metrics, store, top, replay, progress)?;
    plan::sweep::run(
        &mut cmd.campaign,
        &settings,
        &intervals,
        reach,
        &crate::exit::interrupted,
    )?;
    let count = settings.count;
    cmd.done(true, |top| netceil_report::tables::sweep(top, count))
}

pub fn run_tcp(
    a: SweepTcpParams,
    common: &crate::cli::CommonRunArgs,
    metrics_args: &crate::cli::MetricsArgs,
) -> Outcome {
    let trials = plan::flows::trials(&a, common.ipv6)?;
    let (mut top, _) = new_live_run(&common.labels);
    top.workload = Some(WorkloadSpec {
        kind: WorkloadKind::Sweep,
        params: netceil_model::params::Params::SweepTcp(a.clone()),
    });
    let store = engine::open_store(common.no_store);
    let mut cmd = engine::start(
        common,
        metrics_args,
        store.as_ref(),
        top,
        Replay::default(),
        Progress::Steps {
            what: "sweep",
            at_most: a.flows.len() as u64,
        },
    )?;
    plan::flows::run(&mut cmd.campaign, &trials)?;
    cmd.done(true, netceil_report::tables::flows)
}

/// `NAME=V1,V2,…` into the flag and its values.
fn parse_param(text: &str) -> Result<(String, Vec<String>), Failure> {
    let (name, values) = text.split_once('=').ok_or_else(|| {
        Failure::usage(anyhow!(
            "--param {text}: expected NAME=V1,V2,… (e.g. size=64,1472)"
        ))
    })?;
    let name = name.trim().trim_start_matches('-');
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(Failure::usage(anyhow!(
            "--param {text}: '{name}' is not a flag name (letters, digits and -, as in rate-per-flow)"
        )));
    }
    let values: Vec<String> = values
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect();
    if values.is_empty() {
        return Err(Failure::usage(anyhow!("--param {text}: no values")));
    }
    Ok((name.to_string(), values))
}

/// Every combination of the values, first parameter slowest.
fn combinations(params: &[(String, Vec<String>)]) -> Vec<Combination> {
    let mut out: Vec<Combination> = vec![Vec::new()];
    for (name, values) in params {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                values.iter().map(move |v| {
                    let mut c = prefix.clone();
                    c.push((name.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    out
}

pub fn run_param(
    given: &[String],
    run_args: &[String],
    common: &crate::cli::CommonRunArgs,
    metrics_args: &crate::cli::MetricsArgs,
) -> Outcome {
    let params = given
        .iter()
        .map(|p| parse_param(p))
        .collect::<Result<Vec<_>, Failure>>()?;
    let combos = combinations(&params);
    if combos.len() > 1000 {
        return Err(Failure::usage(anyhow!(
            "--param: {} combinations; at most 1000",
            combos.len()
        )));
    }
    let (mut top, wire_id) = new_live_run(&common.labels);
    // Every step is parsed and checked before any traffic, by `netceil run`'s own parser.
    let steps = combos
        .iter()
        .map(|combo| Ok((combo.clone(), step_trial(combo, run_args, wire_id)?)))
        .collect::<Result<Vec<_>, Failure>>()?;
    top.workload = Some(WorkloadSpec {
        kind: WorkloadKind::Sweep,
        params: netceil_model::params::Params::SweepParam(
            netceil_model::params::SweepParamParams {
                workload: "param".into(),
                params: given.to_vec(),
                run: run_args.to_vec(),
            },
        ),
    });
    let store = engine::open_store(common.no_store);
    let mut cmd = engine::start(
        common,
        metrics_args,
        store.as_ref(),
        top,
        Replay::default(),
        Progress::Steps {
            what: "sweep",
            at_most: steps.len() as u64,
        },
    )?;
    let swept = plan::param::run(&mut cmd.campaign, &steps)?;
    let lines: Vec<String> = swept
        .steps
        .iter()
        .map(|s| {
            let mut line = format!(
                "{}  {}",
                plan::param::words(&s.combo),
                plan::param::headline(&s.results)
            );
            if let Some(cause) = &s.cause {
                line.push_str(&format!("  {cause}"));
            }
            line
        })
        .collect();
    cmd.done(true, |_| lines.iter().map(|l| format!("{l}\n")).collect())
}

/// The trial of one step: `netceil run` with the shared arguments and the step's values.
fn step_trial(
    combo: &Combination,
    run_args: &[String],
    wire_id: u16,
) -> Result<netceil_engine::Trial, Failure> {
    use clap::Parser as _;
    let mut argv: Vec<String> = vec!["netceil".into(), "run".into()];
    argv.extend(run_args.iter().cloned());
    for (name, v) in combo {
        argv.push(format!("--{name}"));
        argv.push(v.clone());
    }
    let cli = crate::cli::Cli::try_parse_from(&argv).map_err(|e| {
        Failure::usage(anyhow!(
            "the step {}: {}",
            plan::param::words(combo),
            e.to_string()
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ")
        ))
    })?;
    let crate::cli::Command::Run(run) = cli.command else {
        return Err(Failure::usage(anyhow!(
            "the arguments after -- must be `netceil run` arguments"
        )));
    };
    let Some(w) = run.workload else {
        return Err(Failure::usage(anyhow!(
            "the arguments after -- must name a workload (udp, tcp or rr), e.g. `-- udp --duration 5s`"
        )));
    };
    engine::plan(&w, &run.common, wire_id)
}

#[cfg(test)]
mod param_tests {
    use super::*;

    #[test]
    fn params_and_their_combinations() {
        let a = parse_param("size=64,1472").unwrap();
        let b = parse_param("--threads=1, 2").unwrap();
        assert_eq!(b, ("threads".into(), vec!["1".into(), "2".into()]));
        let c = combinations(&[a, b]);
        assert_eq!(c.len(), 4);
        assert_eq!(
            c[1],
            vec![("size".into(), "64".into()), ("threads".into(), "2".into())]
        );
        assert!(parse_param("size").is_err());
        assert!(parse_param("size=").is_err());
        assert!(parse_param("si ze=1").is_err());
    }
}
