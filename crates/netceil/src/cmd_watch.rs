//! `netceil watch`: observe only, optionally around a command netceil launches.

use anyhow::{anyhow, Context};
use netceil_model::{Run, RunSource};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::cli::WatchArgs;
use crate::engine::open_store;
use crate::live::terminal_width;
use crate::table::{LiveTable, LoadFigures};
use crate::{Done, Failure, Outcome};
use netceil_engine::{Observer, Recording};

/// How much of a launched command's output is kept in the run; the rest is counted.
const OUTPUT_KEEP: usize = 1 << 20;

/// A thread reading one of the child's pipes: the bytes kept, and how many there were.
type Reader = std::thread::JoinHandle<(Vec<u8>, usize)>;

/// Reads a child's pipe, echoing it to our stderr and keeping the first [`OUTPUT_KEEP`] bytes.
fn collect(mut pipe: impl Read + Send + 'static, echo: bool) -> Reader {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut total = 0usize;
        let mut buf = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n;
            if echo {
                let _ = std::io::stderr().write_all(&buf[..n]);
            }
            let room = OUTPUT_KEEP.saturating_sub(kept.len());
            kept.extend_from_slice(&buf[..n.min(room)]);
        }
        (kept, total)
    })
}

/// Starts a thread that waits for the command `pid` to exit and then ends the sampling. It
/// also wakes the main thread, which may be sleeping between batches of rows. It waits with
/// `WNOWAIT`, leaving the child unreaped, so the pid cannot be reused by another
/// process before the main thread has waited for it (and may still signal it safely).
fn wake_on_exit(
    pid: u32,
    stopper: netceil_probe::SamplerStopper,
    main: std::thread::Thread,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    use nix::sys::wait::{waitid, Id, WaitPidFlag};
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).context("command pid")?);
    std::thread::Builder::new()
        .name("netceil-wait".into())
        .spawn(move || {
            while let Err(nix::errno::Errno::EINTR) =
                waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT)
            {}
            stopper.stop();
            main.unpark();
        })
        .context("starting the thread that waits for the command")
}

/// Every `--pid` must be a live process: a typo would otherwise record nothing, silently.
fn check_pids(pids: &[i32]) -> Result<(), Failure> {
    for &pid in pids {
        let there = pid > 0 && std::path::Path::new(&format!("/proc/{pid}")).exists();
        if !there {
            return Err(Failure::usage(anyhow!(
                "--pid {pid}: no such process; expected the PID of a running process"
            )));
        }
    }
    Ok(())
}

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

/// Starts the command to watch, if one was given, with its output piped to us.
fn launch(command: &[String]) -> Result<Option<std::process::Child>, Failure> {
    let Some((prog, rest)) = command.split_first() else {
        return Ok(None);
    };
    Command::new(prog)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map(Some)
        .map_err(|e| Failure::usage(anyhow!("cannot launch '{prog}': {e}")))
}

/// How the watched command ended, in the run's notes; the exit code it passes on.
fn exit_notes(
    run: &mut Run,
    exit_status: Option<std::process::ExitStatus>,
    stopped_by_duration: bool,
) -> Option<u8> {
    let code = if stopped_by_duration {
        run.notes.push(format!(
            "the command was still running when --duration ended: netceil stopped it ({}) and exits {DURATION_EXIT}",
            exit_status.map_or("?".into(), |s| s.to_string())
        ));
        Some(DURATION_EXIT)
    } else {
        exit_status.map(exit_code)
    };
    if let (Some(s), false) = (exit_status, stopped_by_duration) {
        run.notes.push(format!("command exited with {s}"));
    }
    code
}

/// Wakes the watch loop when it must end: Ctrl-C stops the sampler and unparks this thread;
/// a launched command's exit does the same from a waiter thread, returned to be joined.
fn wake_on_end(
    rec: &Recording,
    child: Option<&mut std::process::Child>,
) -> Result<Option<std::thread::JoinHandle<()>>, Failure> {
    let stopper = rec.stopper();
    let main_thread = std::thread::current();
    if let Some(s) = stopper.clone() {
        let main = main_thread.clone();
        crate::on_stop(move || {
            s.stop();
            main.unpark();
        });
    }
    match (child, stopper) {
        (Some(c), Some(s)) => match wake_on_exit(c.id(), s, main_thread) {
            Ok(w) => Ok(Some(w)),
            Err(e) => {
                // Without the waiter nothing would notice the command's exit: end it now.
                let _ = c.kill();
                let _ = c.wait();
                Err(e.into())
            }
        },
        _ => Ok(None),
    }
}

/// Ends a launched command once the watch is over: its exit status, and whether
/// `--duration` stopped it.
fn end_watched(
    mut child: Option<&mut std::process::Child>,
    exit_waiter: Option<std::thread::JoinHandle<()>>,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<(Option<std::process::ExitStatus>, bool), Failure> {
    let mut exit_status = None;
    let mut stopped_by_duration = false;
    if let Some(c) = child.as_mut() {
        exit_status = c.try_wait().context("waiting for the command")?;
    }
    // Ctrl-C or --duration with a command still running: it got the same SIGINT from the
    // terminal, or we end it, and wait so nothing is left behind. The pid is still ours to
    // signal: the waiter thread only peeks (WNOWAIT), and nothing has reaped it yet.
    if let (Some(c), None) = (child.as_mut(), exit_status) {
        stopped_by_duration = !stop.load(Ordering::SeqCst) && !crate::out::closed();
        let status = end_command(c)?;
        // It may have ended on its own between the check and the signal: then its own exit
        // status stands, and --duration stopped nothing.
        stopped_by_duration &= killed_by_us(status);
        exit_status = Some(status);
    }
    if let Some(w) = exit_waiter {
        // The command has been reaped, so the waiter has returned (or is returning ECHILD).
        let _ = w.join();
    }
    Ok((exit_status, stopped_by_duration))
}

pub fn run(args: WatchArgs) -> Outcome {
    netceil_engine::check_interval(args.interval, "--interval")?;
    check_pids(&args.pids)?;
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
    let mut child = launch(&args.command)?;
    let mut pids = args.pids.clone();
    if let Some(c) = &child {
        pids.push(c.id() as i32);
    }
    // The CPUs the watched processes may use (taskset, a cpuset): read now, and again at the
    // end, when a launched `taskset -c …` has surely applied its mask.
    let watched: Vec<u32> = pids.iter().filter_map(|p| u32::try_from(*p).ok()).collect();
    let affinity = || {
        (!watched.is_empty())
            .then(|| netceil_probe::affinity::workload_cpus(source.as_ref(), &watched))
            .flatten()
    };
    let cpus_at_start = affinity();
    if let (Some(p), Some(_)) = (&probes, &child) {
        p.follow(me, false);
    }
    let echo = !args.quiet;
    let readers = child.as_mut().map(|c| {
        (
            collect(c.stdout.take().expect("piped"), echo),
            collect(c.stderr.take().expect("piped"), echo),
        )
    });

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
    let exit_waiter = wake_on_end(&rec, child.as_mut())?;
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
    let (exit_status, stopped_by_duration) = end_watched(child.as_mut(), exit_waiter, &stop)?;
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
    if let Some(readers) = readers {
        keep_output(readers, &mut run)?;
    }
    let code = exit_notes(&mut run, exit_status, stopped_by_duration);
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

/// The launched command's stdout and stderr, kept in the run's notes.
fn keep_output(readers: (Reader, Reader), run: &mut Run) -> Result<(), Failure> {
    let (out, err) = readers;
    for (name, h) in [("stdout", out), ("stderr", err)] {
        let (kept, total) = h
            .join()
            .map_err(|_| anyhow!("the {name} reader panicked"))?;
        if total > 0 {
            let mut text = String::from_utf8_lossy(&kept).into_owned();
            if total > kept.len() {
                text.push_str(&format!("\n[{} more bytes not kept]", total - kept.len()));
            }
            run.notes.push(format!("command {name}:\n{text}"));
        }
    }
    Ok(())
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

/// netceil's exit code when `--duration` ended a command that was still running (timeout(1)'s).
pub const DURATION_EXIT: u8 = 124;

/// How long a command gets to end after SIGTERM before it is sent SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// Ends the command by its pid: SIGTERM, then SIGKILL after [`TERM_GRACE`]; reaps it.
fn end_command(c: &mut std::process::Child) -> anyhow::Result<std::process::ExitStatus> {
    use nix::sys::signal::{kill, Signal};
    let pid = nix::unistd::Pid::from_raw(c.id() as i32);
    let _ = kill(pid, Signal::SIGTERM);
    let until = Instant::now() + TERM_GRACE;
    while Instant::now() < until {
        if let Some(s) = c.try_wait().context("waiting for the command to end")? {
            return Ok(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = kill(pid, Signal::SIGKILL);
    c.wait().context("waiting for the command to end")
}

/// True when the command died of the signals [`end_command`] sends.
fn killed_by_us(status: std::process::ExitStatus) -> bool {
    use nix::sys::signal::Signal;
    use std::os::unix::process::ExitStatusExt;
    matches!(status.signal(), Some(s) if s == Signal::SIGTERM as i32 || s == Signal::SIGKILL as i32)
}

/// The command's exit code, or 128 + signal as a shell reports a killed command.
fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c.clamp(0, 255) as u8,
        (None, Some(sig)) => (128 + sig).clamp(0, 255) as u8,
        _ => 1,
    }
}
