//! The processes a watch observes: a command netceil launches (its output captured, its exit
//! waking the session, ended by its pid when the watch ends first), or processes already
//! running, named by pid.
//!
//! A [`Watched`] is launched or checked before the recording starts, hands the session the
//! pids to sample and a waiter for the command's exit, and at the end returns a
//! [`WatchedEnd`]: how the command ended, who ended it, what it printed.

use anyhow::{anyhow, Context};
use netceil_model::params::{Params, WatchParams};
use netceil_model::{Run, RunSource, Workload, WorkloadKind};
use netceil_probe::{Row, SamplerStopper, Source};
use netceil_store::Store;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{Error, Recording};

/// How much of a launched command's output is kept in the run; the rest is counted.
pub const OUTPUT_KEEP: usize = 1 << 20;

/// netceil's exit code when `--duration` ended a command that was still running (timeout(1)'s).
pub const DURATION_EXIT: u8 = 124;

/// How long a command gets to end after SIGTERM before it is sent SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// What one of the command's pipes carried: the first [`OUTPUT_KEEP`] bytes, and how many
/// there were in all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    pub kept: Vec<u8>,
    pub total: usize,
}

impl Captured {
    /// The output as text for the run's notes, saying how much was not kept.
    pub fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.kept).into_owned();
        if self.total > self.kept.len() {
            text.push_str(&format!(
                "\n[{} more bytes not kept]",
                self.total - self.kept.len()
            ));
        }
        text
    }
}

/// A thread reading one of the child's pipes.
type Reader = JoinHandle<Captured>;

/// Reads `pipe` to its end, echoing it to our stderr when `echo`, keeping the first
/// [`OUTPUT_KEEP`] bytes.
fn capture(mut pipe: impl Read, echo: bool) -> Captured {
    let mut c = Captured::default();
    let mut buf = [0u8; 8192];
    while let Ok(n) = pipe.read(&mut buf) {
        if n == 0 {
            break;
        }
        c.total += n;
        if echo {
            let _ = std::io::stderr().write_all(&buf[..n]);
        }
        let room = OUTPUT_KEEP.saturating_sub(c.kept.len());
        c.kept.extend_from_slice(&buf[..n.min(room)]);
    }
    c
}

fn collect(pipe: impl Read + Send + 'static, echo: bool) -> Reader {
    std::thread::spawn(move || capture(pipe, echo))
}

/// Who ended the watched command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndedBy {
    /// It exited on its own (or of a signal netceil did not send).
    Itself,
    /// `--duration` ended the watch first: netceil stopped it.
    Duration,
    /// Ctrl-C, or the reader of the output went away: it was ended with the watch.
    Stop,
}

/// How a launched command ended.
#[derive(Debug)]
pub struct WatchedEnd {
    /// Its exit status; `None` when none was launched.
    pub status: Option<ExitStatus>,
    pub ended_by: EndedBy,
    pub stdout: Captured,
    pub stderr: Captured,
}

impl WatchedEnd {
    /// Writes into the run's notes what the command printed and how it ended; returns the
    /// exit code netceil passes on (`None`: no command).
    pub fn record(&self, run: &mut Run) -> Option<u8> {
        for (name, c) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            if c.total > 0 {
                run.notes.push(format!("command {name}:\n{}", c.text()));
            }
        }
        if self.ended_by == EndedBy::Duration {
            run.notes.push(format!(
                "the command was still running when --duration ended: netceil stopped it ({}) and exits {DURATION_EXIT}",
                self.status.map_or("?".into(), |s| s.to_string())
            ));
            return Some(DURATION_EXIT);
        }
        let s = self.status?;
        run.notes.push(format!("command exited with {s}"));
        Some(exit_code(s))
    }
}

/// The processes a watch observes.
#[derive(Default)]
pub struct Watched {
    /// The command launched, if one was.
    child: Option<Child>,
    /// The threads reading its stdout and stderr.
    readers: Option<(Reader, Reader)>,
    /// The thread waiting for its exit.
    waiter: Option<JoinHandle<()>>,
    /// Every pid watched: those given, then the command's.
    pids: Vec<i32>,
}

impl Watched {
    /// Processes already running: each must be live, since a typo would otherwise record
    /// nothing, silently.
    pub fn attach(pids: &[i32]) -> Result<Watched, Error> {
        for &pid in pids {
            let there = pid > 0 && std::path::Path::new(&format!("/proc/{pid}")).exists();
            if !there {
                return Err(Error::usage(anyhow!(
                    "--pid {pid}: no such process; expected the PID of a running process"
                )));
            }
        }
        Ok(Watched {
            pids: pids.to_vec(),
            ..Watched::default()
        })
    }

    /// Starts `command` (nothing when it is empty) with its output piped to us, echoed to
    /// our stderr when `echo`, and the first [`OUTPUT_KEEP`] bytes of each pipe kept.
    pub fn launch(&mut self, command: &[String], echo: bool) -> Result<(), Error> {
        let Some((prog, rest)) = command.split_first() else {
            return Ok(());
        };
        let mut c = Command::new(prog)
            .args(rest)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::usage(anyhow!("cannot launch '{prog}': {e}")))?;
        self.readers = match (c.stdout.take(), c.stderr.take()) {
            (Some(out), Some(err)) => Some((collect(out, echo), collect(err, echo))),
            _ => None,
        };
        self.pids.push(c.id() as i32);
        self.child = Some(c);
        Ok(())
    }

    /// The launched command's pid.
    pub fn command_pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Every pid watched, for the sampler.
    pub fn pids(&self) -> &[i32] {
        &self.pids
    }

    /// Starts a thread that waits for the launched command to exit, then stops the sampling
    /// and unparks `main`, which may be sleeping between batches of rows. It waits with
    /// `WNOWAIT`, leaving the child unreaped, so its pid cannot be reused by another process
    /// before [`Watched::end`] has waited for it (and may still signal it safely). Without a
    /// command, nothing. If the thread cannot start, the command is ended at once: nothing
    /// would notice its exit.
    pub fn wake_on_exit(
        &mut self,
        stopper: SamplerStopper,
        main: std::thread::Thread,
    ) -> Result<(), Error> {
        let Some(c) = self.child.as_mut() else {
            return Ok(());
        };
        match waiter(c.id(), stopper, main) {
            Ok(w) => {
                self.waiter = Some(w);
                Ok(())
            }
            Err(e) => {
                let _ = c.kill();
                let _ = c.wait();
                Err(e.into())
            }
        }
    }

    /// Ends the watch of the command: if it is still running, it is ended by its pid
    /// (SIGTERM, SIGKILL after a grace) and reaped, so nothing is left behind. `stopping`:
    /// the watch ends on Ctrl-C or because its reader went away (the command got the same
    /// SIGINT from the terminal, or is ended with it); otherwise `--duration` ended it.
    pub fn end(mut self, stopping: bool) -> Result<WatchedEnd, Error> {
        let mut status = None;
        let mut ended_by = EndedBy::Itself;
        if let Some(c) = self.child.as_mut() {
            status = c.try_wait().context("waiting for the command")?;
            if status.is_none() {
                // The pid is still ours to signal: the waiter thread only peeks (WNOWAIT),
                // and nothing has reaped it yet.
                let s = end_command(c)?;
                // It may have ended on its own between the check and the signal: then its
                // own exit status stands, and nobody stopped it.
                if killed_by_us(s) {
                    ended_by = if stopping {
                        EndedBy::Stop
                    } else {
                        EndedBy::Duration
                    };
                }
                status = Some(s);
            }
        }
        if let Some(w) = self.waiter.take() {
            // The command has been reaped, so the waiter has returned (or is returning ECHILD).
            let _ = w.join();
        }
        let (stdout, stderr) = match self.readers.take() {
            Some((out, err)) => (join(out, "stdout")?, join(err, "stderr")?),
            None => Default::default(),
        };
        Ok(WatchedEnd {
            status,
            ended_by,
            stdout,
            stderr,
        })
    }
}

/// What a watch observes, and how.
pub struct WatchConfig {
    pub interval: Duration,
    /// The interfaces to sample (`--iface`); empty: every one.
    pub ifaces: Vec<String>,
    /// Processes already running (`--pid`).
    pub pids: Vec<i32>,
    /// A command to launch and watch; empty: none.
    pub command: Vec<String>,
    /// Echo the command's output to our stderr as it comes.
    pub echo: bool,
    /// eBPF probes to attach (`--probe`), and how often a lock wait takes a stack.
    pub probes: Option<Vec<netceil_bpf::Probe>>,
    pub lock_stacks: u32,
    pub labels: Vec<(String, String)>,
    /// Where the machine is read: every read of the watch goes through it.
    pub source: Arc<dyn Source + Send + Sync>,
}

/// A watch under way: the run being recorded, and the processes it observes.
pub struct Watch<'s> {
    /// The recording; the caller takes its rows (see [`Recording::wait_rows`]).
    pub rec: Recording<'s>,
    /// The run so far: its identity, meta and workload.
    pub run: Run,
    watched: Watched,
    source: Arc<dyn Source + Send + Sync>,
    /// The watched processes' CPUs at the start (taskset, a cpuset).
    cpus_at_start: Option<Vec<u32>>,
}

impl<'s> Watch<'s> {
    /// Checks the pids, attaches the probes, launches the command and starts recording.
    /// Probes go on before the command starts; the offcpu probe follows netceil itself until
    /// the command is forked (so the command and everything it forks is followed from its
    /// first instruction), then only the command.
    pub fn start(cfg: &WatchConfig, store: Option<&'s Store>) -> Result<Watch<'s>, Error> {
        let mut watched = Watched::attach(&cfg.pids)?;
        let command = (!cfg.command.is_empty()).then(|| cfg.command.clone());
        let (mut run, _) = crate::new_run(
            &cfg.labels,
            RunSource::Watched {
                command: command.clone(),
            },
            cfg.source.as_ref(),
        );
        run.workload = Some(Workload {
            kind: WorkloadKind::External,
            params: Params::Watch(WatchParams {
                command,
                pids: cfg.pids.clone(),
                ifaces: cfg.ifaces.clone(),
                interval_s: cfg.interval.as_secs_f64(),
            }),
        });
        // netceil's own CPUs are not the watched processes': read below from theirs.
        run.meta.workload_cpus = None;
        let me = std::process::id();
        let probes = match &cfg.probes {
            None => None,
            Some(list) => {
                let follow: Vec<u32> = cfg
                    .pids
                    .iter()
                    .map(|p| *p as u32)
                    .chain((!cfg.command.is_empty()).then_some(me))
                    .collect();
                let p = crate::probes::ProbeSession::start(
                    list,
                    cfg.lock_stacks,
                    &follow,
                    cfg.interval,
                    cfg.source.clone(),
                )
                .map_err(|e| Error::usage(anyhow!(e)))?;
                eprintln!("netceil: {}", p.status);
                Some(p)
            }
        };
        watched.launch(&cfg.command, cfg.echo)?;
        // The CPUs the watched processes may use: read now, and again at the end, when a
        // launched `taskset -c …` has surely applied its mask.
        let cpus_at_start = workload_cpus(cfg.source.as_ref(), watched.pids());
        if let (Some(p), Some(_)) = (&probes, watched.command_pid()) {
            p.follow(me, false);
        }
        let mut rec = Recording::start(
            cfg.source.clone(),
            cfg.interval,
            cfg.ifaces.clone(),
            watched.pids().to_vec(),
            store,
            &run,
        )?;
        if let Some(p) = probes {
            rec.set_probes(p);
        }
        Ok(Watch {
            rec,
            run,
            watched,
            source: cfg.source.clone(),
            cpus_at_start,
        })
    }

    /// Wakes `main` and ends the sampling when the launched command exits (see
    /// [`Watched::wake_on_exit`]).
    pub fn wake_on_exit(&mut self, main: std::thread::Thread) -> Result<(), Error> {
        match self.rec.stopper() {
            Some(s) => self.watched.wake_on_exit(s, main),
            None => Ok(()),
        }
    }

    /// Ends the watch: the command (if still running) is ended and reaped, the recording
    /// stopped and moved into the run. `stopping`: see [`Watched::end`]. Returns the rows
    /// not yet taken, and how the command ended.
    pub fn stop(&mut self, stopping: bool) -> Result<(Vec<Row>, WatchedEnd), Error> {
        // Before the command is reaped (a zombie still has its status file).
        let cpus = workload_cpus(self.source.as_ref(), self.watched.pids());
        self.run.meta.workload_cpus = cpus.or(self.cpus_at_start.take());
        let ended = std::mem::take(&mut self.watched).end(stopping)?;
        let rest = self.rec.stop(&mut self.run);
        self.rec.store_rows(&rest);
        Ok((rest, ended))
    }

    /// Completes the run: the command's notes, the analysis; stores it. Returns the run,
    /// where it was stored, and the exit code the command passes on.
    pub fn finish(mut self, ended: &WatchedEnd) -> (Run, Option<String>, Option<u8>) {
        let code = ended.record(&mut self.run);
        self.run.meta.complete = true;
        netceil_analyze::analyze_into(&mut self.run);
        let stored = self.rec.finish(&self.run);
        (self.run, stored, code)
    }
}

/// The CPUs the processes `pids` may run on.
fn workload_cpus(source: &dyn Source, pids: &[i32]) -> Option<Vec<u32>> {
    let pids: Vec<u32> = pids.iter().filter_map(|p| u32::try_from(*p).ok()).collect();
    (!pids.is_empty())
        .then(|| netceil_probe::affinity::workload_cpus(source, &pids))
        .flatten()
}

fn join(r: Reader, name: &str) -> Result<Captured, Error> {
    r.join()
        .map_err(|_| Error::runtime(anyhow!("the {name} reader panicked")))
}

fn waiter(
    pid: u32,
    stopper: SamplerStopper,
    main: std::thread::Thread,
) -> anyhow::Result<JoinHandle<()>> {
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

/// Ends the command by its pid: SIGTERM, then SIGKILL after [`TERM_GRACE`]; reaps it.
fn end_command(c: &mut Child) -> anyhow::Result<ExitStatus> {
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
fn killed_by_us(status: ExitStatus) -> bool {
    use nix::sys::signal::Signal;
    matches!(status.signal(), Some(s) if s == Signal::SIGTERM as i32 || s == Signal::SIGKILL as i32)
}

/// The command's exit code, or 128 + signal as a shell reports a killed command.
pub fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(c), _) => c.clamp(0, 255) as u8,
        (None, Some(sig)) => (128 + sig).clamp(0, 255) as u8,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_model::RunSource;

    fn exited(code: i32) -> ExitStatus {
        ExitStatus::from_raw(code << 8)
    }

    fn signalled(sig: i32) -> ExitStatus {
        ExitStatus::from_raw(sig)
    }

    fn run() -> Run {
        Run::new("r", RunSource::Watched { command: None })
    }

    #[test]
    fn exit_codes_pass_on_as_a_shell_reports_them() {
        assert_eq!(exit_code(exited(0)), 0);
        assert_eq!(exit_code(exited(3)), 3);
        assert_eq!(exit_code(exited(255)), 255);
        // Killed by SIGKILL (9) or SIGSEGV (11): 128 + the signal.
        assert_eq!(exit_code(signalled(9)), 137);
        assert_eq!(exit_code(signalled(11)), 139);
    }

    #[test]
    fn only_the_signals_netceil_sends_count_as_killed_by_us() {
        assert!(killed_by_us(signalled(libc_sig("TERM"))));
        assert!(killed_by_us(signalled(libc_sig("KILL"))));
        assert!(!killed_by_us(signalled(libc_sig("INT"))));
        assert!(!killed_by_us(signalled(libc_sig("SEGV"))));
        assert!(!killed_by_us(exited(0)));
        assert!(!killed_by_us(exited(15)));
    }

    fn libc_sig(name: &str) -> i32 {
        use nix::sys::signal::Signal;
        match name {
            "TERM" => Signal::SIGTERM as i32,
            "KILL" => Signal::SIGKILL as i32,
            "INT" => Signal::SIGINT as i32,
            _ => Signal::SIGSEGV as i32,
        }
    }

    #[test]
    fn output_is_kept_up_to_the_bound_and_the_rest_counted() {
        let big = vec![b'x'; OUTPUT_KEEP + 12_345];
        let c = capture(&big[..], false);
        assert_eq!(c.total, big.len());
        assert_eq!(c.kept.len(), OUTPUT_KEEP);
        assert!(c.text().ends_with("\n[12345 more bytes not kept]"));
        let small = capture(&b"hello\n"[..], false);
        assert_eq!(small.kept, b"hello\n");
        assert_eq!(small.text(), "hello\n");
    }

    #[test]
    fn an_exit_is_noted_with_its_output_and_its_code_passed_on() {
        let end = WatchedEnd {
            status: Some(exited(3)),
            ended_by: EndedBy::Itself,
            stdout: Captured {
                kept: b"out".to_vec(),
                total: 3,
            },
            stderr: Captured::default(),
        };
        let mut r = run();
        assert_eq!(end.record(&mut r), Some(3));
        assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
        assert_eq!(r.notes[0], "command stdout:\nout");
        assert!(
            r.notes[1].starts_with("command exited with"),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn a_command_stopped_by_duration_exits_124() {
        let end = WatchedEnd {
            status: Some(signalled(libc_sig("TERM"))),
            ended_by: EndedBy::Duration,
            stdout: Captured::default(),
            stderr: Captured::default(),
        };
        let mut r = run();
        assert_eq!(end.record(&mut r), Some(DURATION_EXIT));
        assert_eq!(r.notes.len(), 1);
        assert!(r.notes[0].contains("--duration"), "{:?}", r.notes);
        let none = Watched::default().end(false).unwrap();
        assert_eq!(none.record(&mut r), None);
        assert_eq!(r.notes.len(), 1);
    }

    #[test]
    fn a_command_still_running_is_ended_and_says_who_ended_it() {
        let mut w = Watched::attach(&[]).unwrap();
        w.launch(&["sleep".into(), "30".into()], false).unwrap();
        let pid = w.command_pid().unwrap();
        assert_eq!(w.pids(), [pid as i32]);
        let end = w.end(false).unwrap();
        assert_eq!(end.ended_by, EndedBy::Duration);
        assert!(killed_by_us(end.status.unwrap()));
        // Reaped: nothing left behind.
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());

        let mut w = Watched::attach(&[]).unwrap();
        w.launch(&["sh".into(), "-c".into(), "echo hi; exit 3".into()], false)
            .unwrap();
        let main = std::thread::current();
        let (tx, rx) = std::sync::mpsc::channel();
        let rec = netceil_probe::spawn_sampler(
            std::sync::Arc::new(netceil_probe::ProcFs::new()),
            netceil_probe::SamplerConfig::default(),
            std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
            tx,
        )
        .unwrap();
        w.wake_on_exit(rec.stopper(), main).unwrap();
        // The waiter stops the sampler when the command exits: its channel closes.
        while rx.recv_timeout(Duration::from_secs(10)).is_ok() {}
        let end = w.end(false).unwrap();
        assert_eq!(end.ended_by, EndedBy::Itself);
        assert_eq!(end.status.map(exit_code), Some(3));
        assert_eq!(end.stdout.kept, b"hi\n");
        let _ = rec.stop();
    }

    #[test]
    fn a_watch_records_a_command_to_its_end_and_passes_its_code_on() {
        let fake = netceil_probe::FakeSource::new();
        let cfg = WatchConfig {
            interval: Duration::from_millis(50),
            ifaces: Vec::new(),
            pids: Vec::new(),
            command: vec!["sh".into(), "-c".into(), "sleep 0.3; exit 3".into()],
            echo: false,
            probes: None,
            lock_stacks: 0,
            labels: Vec::new(),
            source: Arc::new(fake),
        };
        let mut w = Watch::start(&cfg, None).unwrap();
        let pid = w.watched.command_pid().unwrap();
        w.wake_on_exit(std::thread::current()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut rows = 0;
        loop {
            let (r, ended) = w.rec.wait_rows(Some(deadline));
            rows += r.len();
            if ended || Instant::now() >= deadline {
                break;
            }
        }
        let (rest, ended) = w.stop(false).unwrap();
        assert_eq!(ended.ended_by, EndedBy::Itself);
        let (run, stored, code) = w.finish(&ended);
        assert_eq!(code, Some(3));
        assert_eq!(stored, None);
        assert!(rows + rest.len() >= 2, "{rows} + {} rows", rest.len());
        assert!(run.meta.complete);
        let Some(Params::Watch(p)) = run.workload.as_ref().map(|w| &w.params) else {
            panic!("{:?}", run.workload)
        };
        assert_eq!(p.command.as_deref(), Some(&cfg.command[..]));
        assert!(run
            .notes
            .iter()
            .any(|n| n.starts_with("command exited with")));
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }

    #[test]
    fn a_pid_that_is_not_running_is_bad_input() {
        let e = Watched::attach(&[i32::MAX]).err().unwrap();
        assert!(e.is_usage());
        assert!(e.to_string().contains("no such process"), "{e}");
        assert!(Watched::attach(&[0]).is_err());
        assert!(Watched::attach(&[std::process::id() as i32]).is_ok());
    }

    #[test]
    fn a_command_that_cannot_start_is_bad_input() {
        let mut w = Watched::default();
        let e = w
            .launch(&["/nonexistent/netceil-no-such-command".into()], false)
            .unwrap_err();
        assert!(e.is_usage());
        assert!(e.to_string().contains("cannot launch"), "{e}");
    }
}
