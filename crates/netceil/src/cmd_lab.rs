//! `netceil lab`: network-namespace topologies on this machine, workloads across them, A/B
//! between them, and knob sweeps that always restore.
//!
//! The flags become a typed [`lab::Workload`] and the lab's campaigns run in
//! `netceil_engine::lab`; this module builds and takes down labs on request, and renders what
//! the campaigns return.

use std::io::Write;

use anyhow::{anyhow, Context};
use netceil_engine::lab::{self, Binds, Comparison, Experiment, KnobRuns, Runner, TopoRuns};
use netceil_engine::Observer;
use netceil_lab::journal::{Journal, Session};
use netceil_lab::knob::{self, Knob};
use netceil_lab::topo::{self, LabSpec, Topology};
use netceil_model::Run;
use serde_json::json;

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
            let t = Topology::parse(&a.topology).map_err(lab_failure)?;
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
            print_spec(&spec);
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
            print_teardown(&t, a.force);
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
                crate::outln!("{}", describe_other(l));
            }
            Ok(Done::Success)
        }
        LabCommand::Run(a) => lab_run(a),
        LabCommand::Compare(a) => lab_compare(a),
    }
}

/// A lab that is not this store's (or that a running netceil of this store holds), with whose
/// it is and what `lab down` will do with it.
fn describe_other(l: &topo::HostLab) -> String {
    let what = if l.status.orphaned() {
        "`netceil lab down --all` removes it".to_string()
    } else {
        format!(
            "left alone by `lab down --all`; `netceil lab down {} --force` removes it",
            l.name
        )
    };
    format!(
        "lab {} ({}){}: {}; {what}",
        l.name,
        l.namespaces.join(", "),
        if l.this_store {
            ""
        } else {
            ", of another store"
        },
        l.status
    )
}

fn print_teardown(t: &topo::Teardown, forced: bool) {
    if let Some(l) = &t.removed {
        crate::outln!(
            "lab {}: {}; taken down{}",
            l.name,
            l.status,
            if forced { " (--force)" } else { "" }
        );
    }
    for x in &t.recovery.reverted {
        crate::outln!("reverted: {x}");
    }
    if t.recovery.reverted.is_empty() && t.recovery.failed.is_empty() {
        crate::outln!("nothing to revert");
    }
    for l in &t.left {
        crate::outln!("left alone: {}", describe_other(l));
    }
    for x in &t.recovery.failed {
        eprintln!("netceil: could not revert {x}");
    }
}

fn print_spec(spec: &LabSpec) {
    crate::outln!(
        "  sender    {} {} {}\n  receiver  {} {} {}",
        spec.ns_a,
        spec.iface_a,
        spec.addr_a,
        spec.ns_b,
        spec.iface_b,
        spec.addr_b
    );
    if let Some(m) = &spec.ns_m {
        crate::outln!("  middle    {m} {}", spec.middle_ifaces.join(" "));
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
            let Se::Udp(u) = &s.workload;
            if u.resume.is_some() {
                return Err(Failure::usage(anyhow!(
                    "--resume in a lab's workload: resume the stored run outside the lab"
                )));
            }
            Parsed {
                experiment: Experiment::Search {
                    settings: engine::search_params(u, None, s.common.ipv6)?,
                },
                rcvbuf: u.rcvbuf.map(|b| (b, u.rcvbuf_force)),
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

fn verdict_of(run: &Run) -> String {
    run.findings
        .first()
        .map(|f| format!("{}: {}", f.cause, f.summary))
        .unwrap_or_else(|| "no finding".into())
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
    let topology = a
        .topology
        .as_deref()
        .map(Topology::parse)
        .transpose()
        .map_err(lab_failure)?;
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
        let doc = json!({
            "lab": { "name": spec.name, "topology": spec.topology.name(), "mtu": spec.mtu },
            "steps": results.iter().map(|s| json!({
                "knobs": s.step.iter().map(|(i, v)| (knobs[*i].key.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
                "runs": s.runs,
            })).collect::<Vec<_>>(),
            "restored": done == Done::Success,
        });
        serde_json::to_writer_pretty(&mut out, &doc).context("writing JSON")?;
        writeln!(out).context("writing to stdout")?;
    } else if knobs.is_empty() {
        for s in &results {
            for run in &s.runs {
                write!(out, "{}", netceil_report::text::summary(run))
                    .context("writing to stdout")?;
                write!(out, "{}", netceil_report::text::verdict(run))
                    .context("writing to stdout")?;
                writeln!(out, "stored as {}", run.run_id).context("writing to stdout")?;
            }
        }
    } else {
        write!(out, "{}", knob_table(&knobs, &results)).context("writing to stdout")?;
    }
    Ok(done)
}

/// How throughput, cs/s and in/s moved with each knob value, and which value won.
fn knob_table(knobs: &[Knob], results: &[KnobRuns]) -> String {
    let mut s = String::new();
    let keys: Vec<&str> = knobs.iter().map(|k| k.key.as_str()).collect();
    s.push_str(&format!(
        "{:<32} {:>12} {:>12} {:>8} {:>10} {:>10} {:>10}  verdict\n",
        keys.join(" "),
        "pkt/s",
        "Gbit/s",
        "loss %",
        "cs/s",
        "in/s",
        "CPU ns/pkt"
    ));
    let (figures, winner) = lab::knob_summary(results);
    let names: Vec<String> = results
        .iter()
        .map(|r| {
            r.step
                .iter()
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let show = |x: Option<f64>, scale: f64, prec: usize| {
        x.map_or_else(|| "-".into(), |v| format!("{:.*}", prec, v / scale))
    };
    for ((r, f), name) in results.iter().zip(&figures).zip(&names) {
        s.push_str(&format!(
            "{:<32} {:>12} {:>12} {:>8} {:>10} {:>10} {:>10}  {}\n",
            name,
            show(f.pps, 1.0, 0),
            show(f.bits_per_s, 1e9, 3),
            show(f.loss_pct, 1.0, 3),
            show(f.cs_per_s, 1.0, 0),
            show(f.intr_per_s, 1.0, 0),
            show(f.cpu_ns_per_packet, 1.0, 0),
            r.runs
                .first()
                .and_then(|r| r.findings.first())
                .map_or("-", |f| f.cause.as_str())
        ));
    }
    // The winner by median packet rate, against the runner-up with Welch's test.
    if let Some(w) = winner {
        let conf = match w.confidence {
            Ok(c) => format!(
                "mean {:+.1} % over {} (Welch p = {:.3}{})",
                c.gain_pct,
                names[w.runner_up],
                c.p_value,
                if c.significant {
                    ", significant"
                } else {
                    ", not significant: repeat with more --repeat"
                }
            ),
            Err(e) => format!("no confidence: {e}; give --repeat 3 or more"),
        };
        s.push_str(&format!("best packet rate: {} ({conf})\n", names[w.best]));
    }
    s.push_str("each value was set, measured, and the original restored afterwards\n");
    s
}

fn lab_compare(a: LabCompareArgs) -> Outcome {
    need_root()?;
    let w = workload(&a.workload)?;
    let topologies = a
        .topologies
        .iter()
        .map(|t| Topology::parse(t))
        .collect::<Result<Vec<_>, _>>()
        .map_err(lab_failure)?;
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
        serde_json::to_writer_pretty(&mut out, &compare_json(&results, &cmp))
            .context("writing JSON")?;
        writeln!(out).context("writing to stdout")?;
    } else {
        write!(out, "{}", compare_text(&results, &cmp)).context("writing to stdout")?;
        if let Some(path) = &a.html {
            writeln!(out, "report: {}", path.display()).context("writing to stdout")?;
        }
    }
    Ok(done)
}

/// The verdict of a topology's median run ("" when it has none).
fn median_verdict(t: &TopoRuns, row: &lab::TopoRow) -> String {
    row.median_run
        .map(|i| verdict_of(&t.runs[i]))
        .unwrap_or_default()
}

fn binds_text(b: Binds) -> &'static str {
    match b {
        Binds::Aggregated => "more than the packet ceiling allows at this frame size: the stack carried aggregated packets (GSO/GRO), so the per-packet ceiling does not bind",
        Binds::PacketRate => "the packet rate binds",
        Binds::Other => "something other than the packet rate binds first (per-byte work, the receiver, a lock)",
    }
}

fn compare_text(results: &[TopoRuns], c: &Comparison) -> String {
    let base_name = c.rows[c.base].topology.name();
    let mut text = format!(
        "{:<10} {:>12} {:>12} {:>8} {:>11} {:>26}  verdict (median run)\n",
        "topology",
        "pkt/s",
        "payload Gb/s",
        "loss %",
        "CPU ns/pkt",
        format!("added vs {base_name} ns/pkt"),
    );
    let show =
        |x: Option<f64>, prec: usize| x.map_or_else(|| "-".into(), |v| format!("{v:.prec$}"));
    for (t, row) in results.iter().zip(&c.rows) {
        let added = match (row.added_ns_per_packet, row.added_spread) {
            (Some(d), Some((lo, hi))) => format!("{d:+.0} ({lo:+.0}..{hi:+.0})"),
            (Some(d), None) => format!("{d:+.0}"),
            (None, _) => "-".into(),
        };
        text.push_str(&format!(
            "{:<10} {:>12} {:>12} {:>8} {:>11} {:>26}  {}\n",
            row.topology.name(),
            show(row.pps, 0),
            show(row.payload_gbit_per_s, 3),
            show(row.loss_pct, 3),
            show(row.cpu_ns_per_packet, 0),
            added,
            median_verdict(t, row)
        ));
    }
    text.push_str(&format!(
        "medians over {} repeat(s), topologies alternated round by round; CPU ns/pkt = host CPU busy time / packets the receiving interface took in; the added cost is paired by round against {base_name}, with its range\n",
        results.first().map_or(0, |t| t.runs.len())
    ));
    // The packet ceiling times the frame size against the bit rate reached.
    for x in &c.arithmetic {
        text.push_str(&format!(
            "{}: packet ceiling {:.0} pkt/s × {} B = {:.3} Gbit/s; reached {:.3} Gbit/s: {}\n",
            x.topology.name(),
            x.packet_ceiling_pps,
            x.frame_bytes,
            x.allowed_bits_per_s / 1e9,
            x.reached_bits_per_s / 1e9,
            binds_text(x.binds)
        ));
    }
    text
}

fn compare_json(results: &[TopoRuns], c: &Comparison) -> serde_json::Value {
    let rows: Vec<_> = results.iter().zip(&c.rows).map(|(t, row)| json!({
        "topology": row.topology.name(), "path": row.topology.path(),
        "repeats": row.repeats, "pps": row.pps, "bits_per_s": row.payload_gbit_per_s.map(|g| g * 1e9),
        "loss_pct": row.loss_pct, "cpu_ns_per_packet": row.cpu_ns_per_packet,
        "added_ns_per_packet": row.added_ns_per_packet,
        "added_spread": row.added_spread.map(|(lo, hi)| [lo, hi]),
        "packet_ceiling_pps": row.packet_ceiling_pps, "verdict": median_verdict(t, row),
        "runs": t.runs.iter().map(|r| r.run_id.clone()).collect::<Vec<_>>(),
    })).collect();
    let arithmetic: Vec<_> = c.arithmetic.iter().map(|x| json!({
        "topology": x.topology.name(), "packet_ceiling_pps": x.packet_ceiling_pps, "frame_bytes": x.frame_bytes,
        "allowed_bits_per_s": x.allowed_bits_per_s, "reached_bits_per_s": x.reached_bits_per_s, "binds": binds_text(x.binds),
    })).collect();
    json!({ "topologies": rows, "arithmetic": arithmetic, "base": c.rows[c.base].topology.name() })
}
