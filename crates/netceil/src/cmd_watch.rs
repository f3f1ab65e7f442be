//! `netceil watch`: observe only, optionally around a command netceil launches.

use anyhow::Context;
use netceil_model::Run;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::cli::WatchArgs;
use crate::engine::open_store;
use crate::{Done, Failure, Outcome};
use netceil_engine::watched::{Watch, WatchConfig};
use netceil_engine::{terminal_width, LiveTable, LoadFigures, Observer};

/// Wakes the watch loop when it must end: Ctrl-C stops the sampler and unparks this thread;
/// a launched command's exit does the same from the engine's waiter thread.
fn wake_on_end(watch: &mut Watch) -> Result<(), Failure> {
    let Some(stopper) = watch.rec.stopper() else {
        return Ok(());
    };
    let main = std::thread::current();
    let wake = main.clone();
    crate::on_stop(move || {
        stopper.stop();
        wake.unpark();
    });
    Ok(watch.wake_on_exit(main)?)
}

pub fn run(args: WatchArgs) -> Outcome {
    netceil_engine::check_interval(args.interval, "--interval")?;
    // Before anything starts: a bad address costs nothing.
    let metrics = crate::metrics::from_flag(&args.metrics)?;
    let stop = crate::stop_flag();
    let config = WatchConfig {
        interval: args.interval,
        ifaces: args.ifaces.clone(),
        pids: args.pids.clone(),
        command: args.command.clone(),
        echo: !args.quiet,
        probes: args.probes.as_ref().map(|l| l.0.clone()),
        lock_stacks: args.lock_stacks,
        labels: args.labels.clone(),
        // Every read of the machine goes through this one source.
        source: std::sync::Arc::new(netceil_probe::ProcFs::new()),
    };
    let store = open_store(args.no_store);
    let mut watch = Watch::start(&config, store.as_ref())?;
    if let Some(m) = &metrics {
        watch.rec.observe(crate::engine::metrics_rows(m));
        m.analyze_live(netceil_metrics::LiveVerdict::new(
            watch.run.clone(),
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
    let mut show = |rows: &[netceil_probe::Row]| {
        if let Some(s) = &mut stream {
            s.rows(rows);
        }
        for row in rows.iter().filter(|_| !args.quiet) {
            for line in table.lines(row, &LoadFigures::default()) {
                if args.json || stream_on_stdout {
                    eprintln!("{line}");
                } else {
                    crate::outln!("{line}");
                }
            }
        }
    };
    // Nothing here polls: the observer's own cost is the point. The loop sleeps until the
    // sampler sends rows, the deadline passes, or the sampler ends, which Ctrl-C and the
    // command's exit both cause through the sampler's stopper.
    wake_on_end(&mut watch)?;
    loop {
        let (rows, ended) = watch.rec.wait_rows(deadline);
        watch.rec.store_rows(&rows);
        show(&rows);
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
    // Ctrl-C or --duration with a command still running: it got the same SIGINT from the
    // terminal, or the engine ends it, and waits so nothing is left behind.
    let (rest, ended) = watch.stop(stop.load(Ordering::SeqCst) || crate::out::closed())?;
    show(&rest);
    if let Some(s) = &mut stream {
        s.close();
        watch.run.notes.extend(s.note());
    }
    let (run, stored, code) = watch.finish(&ended);
    if let Some(m) = &metrics {
        m.set_findings(&run.findings);
    }
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
    let end = format!(
        "{}{}",
        netceil_report::text::verdict(run),
        netceil_report::text::missing(&run.series)
    );
    let end = netceil_report::text::wrap_lines(&end, crate::render::width());
    write!(out, "{end}").context("writing to stdout")?;
    crate::engine::emit_plain(&mut out, stored, store)
}
