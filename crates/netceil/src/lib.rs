//! The netceil binary: command line, wiring and terminal output. The work is done in the
//! library crates; this crate decides what to run and how to show it.

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
mod fmt;
mod host;
mod kernel;
mod live;
pub mod metrics;
mod observe;
mod parse;
mod probes;
mod remote;
mod serve;
mod summary;
mod table;

use clap::Parser;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// An error and the exit code it deserves: 2 for bad input, 1 for everything else.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub error: anyhow::Error,
}

impl Failure {
    pub fn usage(error: impl Into<anyhow::Error>) -> Failure {
        Failure {
            code: 2,
            error: error.into(),
        }
    }
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Failure {
        Failure {
            code: 1,
            error: e.into(),
        }
    }
}

/// Maps a load-engine error to its exit code: the user's input (2) or the system (1).
pub(crate) fn load_failure(e: netceil_load::LoadError) -> Failure {
    if e.is_usage() {
        Failure::usage(e)
    } else {
        Failure::from(e)
    }
}

/// What to call, besides setting the flag, when Ctrl-C or SIGTERM arrives: wakes threads that
/// sleep until something happens instead of polling the flag.
type Waker = Box<dyn Fn() + Send>;

fn wakers() -> &'static std::sync::Mutex<Vec<Waker>> {
    static WAKERS: std::sync::Mutex<Vec<Waker>> = std::sync::Mutex::new(Vec::new());
    &WAKERS
}

/// Set by Ctrl-C (SIGINT) and SIGTERM; every loop polls it (or registers [`on_stop`]) and
/// ends cleanly, keeping its results.
pub fn stop_flag() -> Arc<AtomicBool> {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        // If a handler is already installed (tests calling in-process), keep going without one.
        let _ = ctrlc::set_handler(move || {
            if f.swap(true, Ordering::SeqCst) {
                // A second Ctrl-C means "now": the first one already asked nicely.
                std::process::exit(130);
            }
            wake_all();
        });
        flag
    })
    .clone()
}

/// Calls `wake` when Ctrl-C or SIGTERM arrives, or at once if one already has.
pub fn on_stop(wake: impl Fn() + Send + 'static) {
    let flag = stop_flag();
    wakers()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(Box::new(wake));
    if flag.load(Ordering::SeqCst) {
        wake_all();
    }
}

fn wake_all() {
    let wakers = wakers()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for wake in wakers.iter() {
        wake();
    }
}

/// Set by `netceil lab` (to its own PID) on the netceil processes it starts: they stop, as on
/// SIGTERM, when that process dies, even by `kill -9`, so nothing keeps running in a lab that
/// `lab down --all` removed.
pub(crate) const DIE_WITH_PARENT: &str = "NETCEIL_DIE_WITH_PARENT";

fn die_with_parent() {
    let Some(parent) = std::env::var(DIE_WITH_PARENT)
        .ok()
        .and_then(|v| v.parse::<i32>().ok())
    else {
        return;
    };
    let flag = stop_flag();
    let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM);
    // The parent may have died before the signal was asked for.
    if nix::unistd::getppid().as_raw() != parent {
        flag.store(true, Ordering::SeqCst);
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
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            if is_broken_pipe(&f.error) {
                return ExitCode::SUCCESS;
            }
            eprintln!("netceil: {:#}", f.error);
            ExitCode::from(f.code)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
