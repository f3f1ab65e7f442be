//! `netceil watch`: observe only, optionally around a command netceil launches.

use anyhow::{anyhow, Context};
use netceil_model::{Run, RunSource};
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::cli::WatchArgs;
use crate::engine::open_store;
use crate::live::terminal_width;
use crate::table::{LiveTable, LoadFigures};
use crate::{Done, Failure, Outcome};
use netceil_engine::watched::Watched;
use netceil_engine::{Observer, Recording};

/// Probes go on before the command starts; the offcpu probe follows netceil itself (`me`)
/// until the command is forked (so the command and everything it forks is followed from its
/// first instruction), then only the command.
fn start_probes(
    args: &WatchArgs,
    me: u32,
    source: &std::sync::Arc<dyn netceil_probe::Source + Send + Sync>,
) -> Result<Option<netceil_engine::probes::ProbeSession>, Failure> {
    let Some(list) = &args.probes else {
        return Ok(None);
    };
    let follow: Vec<u32> = args
        .pids
        .iter()
        .map(|p| *p as u32)
        .chain((!args.command.is_empty()).then_some(me))
        .collect();
    let s = netceil_engine::probes::ProbeSession::start(
        &list.0,
        args.lock_stacks,
        &follow,
        args.interval,
        source.clone(),
    )
    .map_err(|e| Failure::usage(anyhow!(e)))?;
    eprintln!("netceil: {}", s.status);
    Ok(Some(s))
}

/// Wakes the watch loop when it must end: Ctrl-C stops the sampler and unparks this thread;
/// a launched command's exit does the same from the engine's waiter thread.
fn wake_on_end(rec: &Recording, watched: &mut Watched) -> Result<(), Failure> {
    let Some(stopper) = rec.stopper() else {
        return Ok(());
    };
    let main_thread = std::thread::current();
    let (s, main) = (stopper.clone(), main_thread.clone());
    crate::on_stop(move || {
        s.stop();
        main.unpark();
    });
    Ok(watched.wake_on_exit(stopper, main_thread)?)
}

pub fn run(args: WatchArgs) -> Outcome {
    netceil_engine::check_interval(args.interval, "--interval")?;
    let mut watched = Watched::attach(&args.pids)?;
    // Before anything starts: a bad address costs nothing.
    let metrics = crate::metrics::from_flag(args.metrics.metrics_listen)?;
    let stop = crate::stop_flag();
    // Every read of the machine goes through this one source.
    let source: std::sync::Arc<dyn netceil_probe::Source + Send + Sync> =
        std::sync::Arc::new(netceil_probe::ProcFs::new());
    let (mut run, _) = netceil_engine::new_run(
        &args.labels,
        RunSource::Watched {
            command: (!args.command.is_empty()).then(|| args.command.clone()),
        },
        source.as_ref(),
    );
    run.workload = Some(netceil_model::Workload {
        kind: netceil_model::WorkloadKind::External,
        params: netceil_model::params::Params::Watch(netceil_model::params::WatchParams {
            command: (!args.command.is_empty()).then(|| args.command.clone()),
            pids: args.pids.clone(),
            ifaces: args.ifaces.clone(),
            interval_s: args.interval.as_secs_f64(),
        }),
    });
    // netceil's own CPUs are not the watched processes': read below from theirs.
    run.meta.workload_cpus = None;

    // Probes go on before the command starts; the offcpu probe follows netceil itself until
    // the command is forked (so the command and everything it forks is followed from its
    // first instruction), then only the command.
    let me = std::process::id();
    let probes = start_probes(&args, me, &source)?;
    watched.launch(&args.command, !args.quiet)?;
    let pids = watched.pids().to_vec();
    // The CPUs the watched processes may use (taskset, a cpuset): read now, and again at the
    // end, when a launched `taskset -c …` has surely applied its mask.
    let cpu_pids: Vec<u32> = pids.iter().filter_map(|p| u32::try_from(*p).ok()).collect();
    let affinity = || {
        (!cpu_pids.is_empty())
            .then(|| netceil_probe::affinity::workload_cpus(source.as_ref(), &cpu_pids))
            .flatten()
    };
    let cpus_at_start = affinity();
    if let (Some(p), Some(_)) = (&probes, watched.command_pid()) {
        p.follow(me, false);
    }
    let store = open_store(args.no_store);
    let mut rec = Recording::start(
        source.clone(),
        args.interval,
        args.ifaces.clone(),
        pids,
        store.as_ref(),
        &run,
    )?;
    if let Some(p) = probes {
        rec.set_probes(p);
    }
    if let Some(m) = &metrics {
        rec.observe(crate::engine::metrics_rows(m));
        m.analyze_live(netceil_metrics::LiveVerdict::new(
            run.clone(),
            args.interval,
        ));
    }
    let mut table = LiveTable::new(
        args.ifaces.clone(),
        &[],
        args.wide,
        terminal_width(args.json),
    );
    let mut stream = crate::engine::open_stream(args.stream.as_deref(), args.json, true)?;
    let stream_on_stdout = args.stream.as_deref() == Some(std::path::Path::new("-"));
    let deadline = args.duration.map(|d| Instant::now() + d);
    let print = |line: &str| {
        if args.json || stream_on_stdout {
            eprintln!("{line}");
        } else {
            crate::outln!("{line}");
        }
    };
    // Nothing here polls: the observer's own cost is the point. The loop sleeps until the
    // sampler sends rows, the deadline passes, or the sampler ends, which Ctrl-C and the
    // command's exit both cause through the sampler's stopper.
    wake_on_end(&rec, &mut watched)?;
    loop {
        let (rows, ended) = rec.wait_rows(deadline);
        rec.store_rows(&rows);
        if let Some(s) = &mut stream {
            s.rows(&rows);
        }
        for row in rows {
            if !args.quiet {
                for line in table.lines(&row, &LoadFigures::default()) {
                    print(&line);
                }
            }
        }
        // The reader of the table went away (`| head -1`): nothing more to show, so stop as
        // on Ctrl-C, keeping the run.
        if ended
            || stop.load(Ordering::SeqCst)
            || crate::out::closed()
            || deadline.is_some_and(|d| Instant::now() >= d)
        {
            break;
        }
    }
    // Before the command is reaped (a zombie still has its status file).
    run.meta.workload_cpus = affinity().or(cpus_at_start);
    // Ctrl-C or --duration with a command still running: it got the same SIGINT from the
    // terminal, or the engine ends it, and waits so nothing is left behind.
    let stopping = stop.load(Ordering::SeqCst) || crate::out::closed();
    let ended = watched.end(stopping)?;
    let rest = rec.stop(&mut run);
    rec.store_rows(&rest);
    if let Some(s) = &mut stream {
        s.rows(&rest);
        s.close();
        run.notes.extend(s.note());
    }
    for row in rest {
        if !args.quiet {
            for line in table.lines(&row, &LoadFigures::default()) {
                print(&line);
            }
        }
    }
    let code = ended.record(&mut run);
    run.meta.complete = true;
    netceil_analyze::analyze_into(&mut run);
    if let Some(m) = &metrics {
        m.set_findings(&run.findings);
    }
    let stored = rec.finish(&run);
    emit(&run, &args, stored.as_deref(), store.as_ref())?;
    if let Some(m) = metrics {
        crate::metrics::linger(m, args.metrics.metrics_linger);
    }
    let done = crate::engine::store_outcome(args.no_store, stored.is_some());
    Ok(match code {
        // The reader of stdout stopped the watch, not the command.
        _ if crate::out::closed() => done,
        // A command that did its part keeps the exit code 0 only if its run was kept.
        Some(0) | None => done,
        Some(c) => Done::Passed(c),
    })
}

/// The watch's summary (or the run as JSON) on stdout.
fn emit(
    run: &Run,
    args: &WatchArgs,
    stored: Option<&str>,
    store: Option<&netceil_store::Store>,
) -> Result<(), Failure> {
    // With the stream on stdout, the summary goes to stderr.
    let mut out: Box<dyn Write> = if args.stream.as_deref() == Some(std::path::Path::new("-")) {
        Box::new(std::io::stderr())
    } else {
        Box::new(crate::out::stdout())
    };
    if args.json {
        serde_json::to_writer_pretty(&mut out, run).context("writing JSON")?;
        writeln!(out).context("writing to stdout")?;
        return Ok(());
    }
    let cost = run
        .meta
        .sampler_cpu_pct
        .map_or("unknown".into(), |p| format!("{p:.3} % of one core"));
    writeln!(
        out,
        "{} intervals of {:?} recorded; sampler CPU {cost}",
        run.series.len(),
        args.interval
    )
    .context("writing to stdout")?;
    write!(out, "{}", crate::summary::verdict(run)).context("writing to stdout")?;
    write!(out, "{}", crate::summary::missing(&run.series)).context("writing to stdout")?;
    crate::engine::emit_plain(&mut out, stored, store)
}
