//! `netceil lab`: network-namespace topologies on this machine, workloads across them, A/B
//! between them, and knob sweeps that always restore.
//!
//! The flags become a typed [`lab::Workload`] and the lab's campaigns run in
//! `netceil_engine::lab`; this module builds and takes down labs on request, and renders what
//! the campaigns return.

use std::io::Write;

use anyhow::{anyhow, Context};
use netceil_engine::lab::{self, render, Experiment, Runner};
use netceil_engine::Observer;
use netceil_lab::journal::{Journal, Session};
use netceil_lab::knob;
use netceil_lab::topo::{self, LabSpec};
use netceil_model::Run;

use crate::cli::{LabArgs, LabCommand, LabCompareArgs, LabRunArgs};
use crate::engine;
use crate::{Done, Failure, Outcome};

/// The lab's error, as the engine judges whose fault it is.
fn lab_failure(e: netceil_lab::LabError) -> Failure {
    Failure::from(netceil_engine::Error::from(e))
}

/// The journal beside the store.
pub fn journal() -> Result<Journal, Failure> {
    let store = netceil_store::default_path().map_err(Failure::from)?;
    Ok(Journal::beside(&store))
}

/// Warns, at any netceil start, about changes a killed netceil left behind.
pub fn warn_if_stale() {
    let Ok(j) = journal() else { return };
    if !j.path().exists() {
        return;
    }
    match j.stale() {
        Ok(stale) if !stale.is_empty() => {
            eprintln!(
                "netceil: warning: a netceil that was killed left {} change(s) in place ({}); `netceil lab down --all` reverts them",
                stale.len(),
                stale
                    .iter()
                    .map(|p| p.change.describe())
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        Ok(_) => {}
        Err(e) => eprintln!("netceil: warning: {e}"),
    }
}

fn need_root() -> Result<(), Failure> {
    if nix::unistd::geteuid().is_root() {
        Ok(())
    } else {
        Err(Failure::from(anyhow!(
            "the lab creates network namespaces, which needs root (or CAP_SYS_ADMIN and CAP_NET_ADMIN); run it with sudo"
        )))
    }
}

pub fn run(args: LabArgs) -> Outcome {
    match args.command {
        LabCommand::Up(a) => {
            need_root()?;
            let t = a.topology;
            let name = a.name.unwrap_or_else(|| t.name().to_string());
            let spec = LabSpec::new(&name, t, a.mtu).map_err(lab_failure)?;
            let j = journal()?;
            topo::up_persistent(&j, &spec).map_err(lab_failure)?;
            crate::outln!(
                "lab {name} is up: {} ({}), MTU {}",
                t.name(),
                t.path(),
                spec.mtu
            );
            let _ = write!(crate::out::stdout(), "{}", render::spec_text(&spec));
            crate::outln!(
                "run across it: netceil lab run --name {name} -- run udp --size 64 --duration 10\ntake it down: netceil lab down {name}"
            );
            Ok(Done::Success)
        }
        LabCommand::Down(a) => {
            need_root()?;
            let j = journal()?;
            let t = if a.all {
                topo::down_all(&j).map_err(lab_failure)?
            } else {
                let name = a.name.ok_or_else(|| {
                    Failure::usage(anyhow!("lab down: give a lab's name, or --all"))
                })?;
                topo::down(&j, &name, a.force).map_err(lab_failure)?
            };
            let (text, failed) = render::teardown_text(&t, a.force);
            let _ = write!(crate::out::stdout(), "{text}");
            for line in failed {
                eprintln!("netceil: {line}");
            }
            Ok(if t.recovery.failed.is_empty() {
                Done::Success
            } else {
                Done::Reported
            })
        }
        LabCommand::List => {
            let j = journal()?;
            let labs = topo::persistent_labs(&j).map_err(lab_failure)?;
            let others = if nix::unistd::geteuid().is_root() {
                topo::others(&j).map_err(lab_failure)?
            } else {
                Vec::new()
            };
            if labs.is_empty() && others.is_empty() {
                crate::outln!("no lab is up");
            }
            for l in &labs {
                crate::outln!(
                    "{}  {}  MTU {}  {}",
                    l.name,
                    l.topology.name(),
                    l.mtu,
                    if l.is_up() {
                        "up"
                    } else {
                        "namespaces gone (netceil lab down to forget it)"
                    }
                );
            }
            let stale = j.stale().map_err(lab_failure)?;
            if !stale.is_empty() {
                crate::outln!(
                    "left by a killed netceil: {}; `netceil lab down --all` reverts them",
                    stale
                        .iter()
                        .map(|p| p.change.describe())
                        .collect::<Vec<_>>()
                        .join("; ")
                );
            }
            for l in &others {
                crate::outln!("{}", render::describe_other(l));
            }
            Ok(Done::Success)
        }
        LabCommand::Run(a) => lab_run(a),
        LabCommand::Compare(a) => lab_compare(a),
    }
}

/// A workload as netceil's own parser read it, before it becomes the lab's typed spec.
struct Parsed {
    experiment: Experiment,
    common: crate::cli::CommonRunArgs,
    rcvbuf: Option<(usize, bool)>,
    frame_bytes: Option<usize>,
}

impl Parsed {
    fn into_lab(self) -> lab::Workload {
        let c = self.common;
        lab::Workload {
            experiment: self.experiment,
            sample_interval: c.sample_interval,
            labels: c.labels,
            probes: c
                .probes
                .as_ref()
                .map(|p| p.0.iter().map(|x| x.name()).collect::<Vec<_>>().join(",")),
            lock_stacks: c.lock_stacks,
            quiet: c.quiet,
            rcvbuf: self.rcvbuf,
            frame_bytes: self.frame_bytes,
        }
    }
}

/// A workload for the lab, checked by netceil's own parser before anything is built.
fn workload(args: &[String]) -> Result<lab::Workload, Failure> {
    if args.is_empty() {
        return Err(Failure::usage(anyhow!(
            "give the workload after --, e.g. `-- run udp --size 64 --duration 10`"
        )));
    }
    for owned in ["--to", "--json", "--no-store", "--ipv6", "--metrics-listen"] {
        if args
            .iter()
            .any(|a| a == owned || a.starts_with(&format!("{owned}=")))
        {
            return Err(Failure::usage(anyhow!(
                "{owned} in the workload: the lab sets the target and the output itself (give --json and --no-store to `lab` instead; IPv6 is off inside the lab)"
            )));
        }
    }
    let argv = std::iter::once("netceil".to_string()).chain(args.iter().cloned());
    let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(argv).map_err(|e| {
        Failure::usage(anyhow!(
            "the workload `{}`: {}",
            args.join(" "),
            e.to_string().trim()
        ))
    })?;
    use crate::cli::Command as C;
    use crate::cli::{SearchWorkload as Se, SweepWorkload as Sw};
    let udp_buf = |u: &crate::cli::UdpArgs| u.rcvbuf.map(|b| (b, u.rcvbuf_force));
    let w = match cli.command {
        C::Run(r) => {
            let (rcvbuf, frame) = match &r.workload {
                Some(crate::cli::Workload::Udp(u)) => (
                    udp_buf(u),
                    engine::udp_payload(u, false, 64)
                        .ok()
                        .map(|p| netceil_model::udp_payload_to_frame(p, false)),
                ),
                _ => (None, None),
            };
            let experiment = match &r.workload {
                None => Experiment::Suite,
                Some(w) => Experiment::Run {
                    load: engine::load_params(w, &r.common)?,
                    confirm: r.confirm,
                },
            };
            Parsed {
                experiment,
                common: r.common,
                rcvbuf,
                frame_bytes: frame,
            }
        }
        C::Sweep(s) => {
            let (experiment, rcvbuf) = match &s.workload {
                Sw::Udp(u) => (
                    Experiment::SweepUdp {
                        settings: engine::sweep_params(u, None, s.common.ipv6),
                    },
                    u.rcvbuf.map(|b| (b, u.rcvbuf_force)),
                ),
                Sw::Tcp(t) => (
                    Experiment::SweepTcp {
                        settings: engine::sweep_tcp_params(t, &s.common),
                    },
                    None,
                ),
                Sw::Param(p) => (
                    Experiment::SweepParam {
                        params: p.params.clone(),
                        run: p.run.clone(),
                    },
                    None,
                ),
            };
            if matches!(&s.workload, Sw::Udp(u) if u.resume.is_some()) {
                return Err(Failure::usage(anyhow!(
                    "--resume in a lab's workload: resume the stored run outside the lab"
                )));
            }
            Parsed {
                experiment,
                common: s.common,
                rcvbuf,
                frame_bytes: None,
            }
        }
        C::Search(s) => {
            let (resume, rcvbuf) = match &s.workload {
                Se::Udp(u) => (&u.resume, u.rcvbuf.map(|b| (b, u.rcvbuf_force))),
                Se::Tcp(t) => (&t.trials.resume, None),
                Se::Rr(r) => (&r.trials.resume, None),
            };
            if resume.is_some() {
                return Err(Failure::usage(anyhow!(
                    "--resume in a lab's workload: resume the stored run outside the lab"
                )));
            }
            Parsed {
                experiment: Experiment::Search {
                    settings: engine::goal_search_params(&s.workload, None, s.common.ipv6)?,
                },
                rcvbuf,
                common: s.common,
                frame_bytes: None,
            }
        }
        _ => {
            return Err(Failure::usage(anyhow!(
                "the workload must be `run …`, `sweep …` or `search …`"
            )))
        }
    };
    Ok(w.into_lab())
}

/// The campaigns' progress lines on stderr, unless `--quiet`.
struct Progress {
    quiet: bool,
}

impl Observer for Progress {
    fn say(&mut self, line: &str) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }
}

/// What the lab's campaigns run with: this netceil, the stop flag, and the store.
fn runner(store: Option<&netceil_store::Store>) -> Result<Runner<'_>, Failure> {
    Ok(Runner {
        exe: std::env::current_exe().context("finding netceil's own executable")?,
        stop: crate::stop_flag(),
        store,
    })
}

/// What could not be restored, said on stderr; the outcome when nothing else went wrong.
fn closed(session: Session) -> Done {
    let problems = session.close();
    for p in &problems {
        eprintln!("netceil: {p}");
    }
    if problems.is_empty() {
        Done::Success
    } else {
        Done::Reported
    }
}

fn lab_run(a: LabRunArgs) -> Outcome {
    need_root()?;
    let w = workload(&a.workload)?;
    let knobs = a
        .knob
        .iter()
        .map(|k| knob::parse(k, a.allow_any_knob))
        .collect::<Result<Vec<_>, _>>()
        .map_err(lab_failure)?;
    if a.repeat == 0 {
        return Err(Failure::usage(anyhow!("--repeat: at least 1")));
    }
    let topology = a.topology;
    let store = engine::open_store(a.no_store);
    let runner = runner(store.as_ref())?;
    let mut session = Session::new(journal()?);
    let temp = format!("r{}", std::process::id());
    let spec = lab::lab_for(&mut session, topology, a.name.as_deref(), a.mtu, &temp)?;
    if !a.quiet {
        eprintln!(
            "lab {}: {} ({}), MTU {}",
            spec.name,
            spec.topology.name(),
            spec.topology.path(),
            spec.mtu
        );
    }
    let mut progress = Progress { quiet: a.quiet };
    let plan = lab::KnobPlan {
        spec: &spec,
        knobs: &knobs,
        workload: &w,
        repeat: a.repeat,
        quiet: a.quiet,
    };
    let outcome = runner.knob_campaign(&mut session, &plan, &mut progress);
    // Every knob back and the lab down (unless it was an existing one), before any output.
    let done = closed(session);
    let results = outcome?;
    let mut out = crate::out::stdout();
    if a.json {
        let doc = render::knob_json(&spec, &knobs, &results, done == Done::Success);
        serde_json::to_writer_pretty(&mut out, &doc).context("writing JSON")?;
        writeln!(out).context("writing to stdout")?;
    } else if knobs.is_empty() {
        for s in &results {
            for run in &s.runs {
                let text = crate::render::end_of_run(run, Some(&run.run_id), false, true);
                write!(out, "{text}").context("writing to stdout")?;
                writeln!(out, "stored as {}", run.run_id).context("writing to stdout")?;
            }
        }
    } else {
        write!(out, "{}", render::knob_table(&knobs, &results)).context("writing to stdout")?;
    }
    Ok(done)
}

fn lab_compare(a: LabCompareArgs) -> Outcome {
    need_root()?;
    let w = workload(&a.workload)?;
    let topologies = a.topologies;
    if topologies.len() < 2 {
        return Err(Failure::usage(anyhow!(
            "--topologies: at least two to compare, e.g. direct,bridge,routed"
        )));
    }
    if a.repeat == 0 {
        return Err(Failure::usage(anyhow!("--repeat: at least 1")));
    }
    // The packet ceiling of each path: 64-byte frames flat out.
    let ceiling = if a.no_packet_ceiling {
        None
    } else {
        let small = [
            "run",
            "udp",
            "--frame-size",
            "64",
            "--duration",
            "3",
            "--flows",
            "2",
        ];
        Some(workload(&small.map(String::from))?)
    };
    let store = engine::open_store(a.no_store);
    let runner = runner(store.as_ref())?;
    let mut session = Session::new(journal()?);
    let mut progress = Progress { quiet: a.quiet };
    let plan = lab::ComparePlan {
        topologies: &topologies,
        mtu: a.mtu,
        workload: &w,
        ceiling: ceiling.as_ref(),
        repeat: a.repeat,
    };
    let outcome = runner.compare_campaign(&mut session, &plan, &mut progress);
    let done = closed(session);
    let results = outcome?;
    let cmp = lab::compare(&results, w.frame_bytes, a.mtu);
    if let Some(path) = &a.html {
        let runs: Vec<Run> = results
            .iter()
            .filter_map(|t| lab::median_run(&t.runs).cloned())
            .collect();
        std::fs::write(path, netceil_report::html_report(&runs))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let mut out = crate::out::stdout();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &render::compare_json(&results, &cmp))
            .context("writing JSON")?;
        writeln!(out).context("writing to stdout")?;
    } else {
        write!(out, "{}", render::compare_text(&results, &cmp)).context("writing to stdout")?;
        if let Some(path) = &a.html {
            writeln!(out, "report: {}", path.display()).context("writing to stdout")?;
        }
    }
    Ok(done)
}
