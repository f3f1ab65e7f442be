//! How a command ends, and the exit code that says so: decided here, once, for every command.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success (also when the reader of stdout went away, as `netceil runs \| head -1` does) |
//! | 1 | a failure at run time (the system, the far end, a store write) |
//! | 2 | bad input: a flag, a file, an address, a process that is not there |
//! | 124 | `watch --duration` ended the command it launched (as timeout(1)) |
//! | 128 + n | stopped by signal n: 129 SIGHUP, 130 SIGINT (Ctrl-C), 143 SIGTERM |
//!
//! `watch -- CMD` otherwise exits with the command's own code. A signal stops every
//! long-running command the same way: it ends its loop, keeps what it recorded and restores
//! what it changed; a second signal ends the process at once.

use nix::sys::signal::Signal;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Whose fault a failure is: the exit code follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The user's input: a flag, a file, an address (exit 2).
    BadInput,
    /// Something failed while running (exit 1).
    Runtime,
}

/// An error, and whose fault it is.
#[derive(Debug)]
pub struct Failure {
    pub kind: Kind,
    pub error: anyhow::Error,
}

impl Failure {
    /// The user's input at fault (exit 2).
    pub fn usage(error: impl Into<anyhow::Error>) -> Failure {
        Failure {
            kind: Kind::BadInput,
            error: error.into(),
        }
    }

    /// A failure at run time (exit 1); what `?` makes of any other error.
    pub fn runtime(error: impl Into<anyhow::Error>) -> Failure {
        Failure {
            kind: Kind::Runtime,
            error: error.into(),
        }
    }

    /// A file or directory the user named that cannot be made or written: their input at
    /// fault (it is a file, its parent is missing, it is read-only), unless the disk is full
    /// or failing, which is the system's.
    pub fn of_path(io: &std::io::Error, error: impl Into<anyhow::Error>) -> Failure {
        use std::io::ErrorKind as K;
        match io.kind() {
            K::StorageFull | K::QuotaExceeded | K::Interrupted | K::OutOfMemory => {
                Failure::runtime(error)
            }
            _ if io.raw_os_error() == Some(nix::libc::EIO) => Failure::runtime(error),
            _ => Failure::usage(error),
        }
    }

    /// A failure from an exit code chosen elsewhere (a netceil child process, an error type
    /// that knows its code): 2 stays bad input, anything else is a failure at run time.
    pub fn with_code(code: i32, error: impl Into<anyhow::Error>) -> Failure {
        Failure {
            kind: if code == 2 {
                Kind::BadInput
            } else {
                Kind::Runtime
            },
            error: error.into(),
        }
    }
}

/// A failure at run time, unless the error is the engine's, which knows whose fault it is.
impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Failure {
        match e.into().downcast::<netceil_engine::Error>() {
            Ok(e) if e.is_usage() => Failure::usage(e.error),
            Ok(e) => Failure::runtime(e.error),
            Err(e) => Failure::runtime(e),
        }
    }
}

/// How a command ended without an error to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    /// It did what was asked (exit 0).
    Success,
    /// It finished, and what went wrong has already been said on stderr (exit 1): a store
    /// write that failed, a revert that did not take.
    Reported,
    /// A launched command's own exit code, passed on (`watch -- CMD`), or 124 when
    /// `watch --duration` ended it.
    Passed(u8),
}

/// What every command returns.
pub type Outcome = Result<Done, Failure>;

/// Why the stop flag was set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// A signal: SIGINT (Ctrl-C), SIGTERM or SIGHUP. The exit code is 128 + its number.
    Signal(Signal),
}

/// The signals that stop a command gracefully (the first) or at once (the second).
const STOP_SIGNALS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

/// What to call, besides setting the flag, when a stop is asked for: wakes threads that
/// sleep until something happens instead of polling the flag.
type Waker = Box<dyn Fn() + Send>;

fn wakers() -> &'static Mutex<Vec<Waker>> {
    static WAKERS: Mutex<Vec<Waker>> = Mutex::new(Vec::new());
    &WAKERS
}

/// The first stop's signal number (0: none yet).
static CAUSE: AtomicI32 = AtomicI32::new(0);

fn flag() -> &'static Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// Set by the first SIGINT, SIGTERM or SIGHUP; every loop polls it (or registers
/// [`on_stop`]) and ends cleanly, keeping its results. The first call installs the handler:
/// a command that never asks for the flag is ended by the signal's default action.
pub fn stop_flag() -> Arc<AtomicBool> {
    static HANDLER: OnceLock<()> = OnceLock::new();
    HANDLER.get_or_init(install_handler);
    flag().clone()
}

fn install_handler() {
    let numbers: Vec<i32> = STOP_SIGNALS.iter().map(|s| *s as i32).collect();
    let mut signals = match signal_hook::iterator::Signals::new(&numbers) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "netceil: cannot catch Ctrl-C and SIGTERM ({e}); they will end netceil at once"
            );
            return;
        }
    };
    let spawned = std::thread::Builder::new()
        .name("netceil-signals".into())
        .spawn(move || {
            for number in signals.forever() {
                let Ok(signal) = Signal::try_from(number) else {
                    continue;
                };
                if CAUSE
                    .compare_exchange(0, number, Ordering::SeqCst, Ordering::SeqCst)
                    .is_err()
                {
                    // A second signal means "now": the first one already asked nicely.
                    std::process::exit(signal_code(signal).into());
                }
                request_stop(Stop::Signal(signal));
            }
        });
    if let Err(e) = spawned {
        eprintln!("netceil: cannot catch Ctrl-C and SIGTERM ({e}); they will end netceil at once");
    }
}

/// Asks every loop to stop as a signal does: sets the flag and wakes the sleepers. The first
/// cause is the one the exit code reports.
pub fn request_stop(cause: Stop) {
    let Stop::Signal(signal) = cause;
    let _ = CAUSE.compare_exchange(0, signal as i32, Ordering::SeqCst, Ordering::SeqCst);
    flag().store(true, Ordering::SeqCst);
    wake_all();
}

/// Why the command was asked to stop, if it was.
pub fn stop_cause() -> Option<Stop> {
    match CAUSE.load(Ordering::SeqCst) {
        0 => None,
        n => Signal::try_from(n).ok().map(Stop::Signal),
    }
}

/// What cut a run short, for its notes: "interrupted (Ctrl-C)", "interrupted (SIGTERM)".
pub fn interrupted() -> String {
    match stop_cause() {
        Some(Stop::Signal(Signal::SIGINT)) => "interrupted (Ctrl-C)".into(),
        Some(Stop::Signal(s)) => format!("interrupted ({})", s.as_str()),
        None => "interrupted".into(),
    }
}

/// Calls `wake` when a stop is asked for, or at once if one already has been.
pub fn on_stop(wake: impl Fn() + Send + 'static) {
    let flag = stop_flag();
    wakers()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Box::new(wake));
    if flag.load(Ordering::SeqCst) {
        wake_all();
    }
}

fn wake_all() {
    let wakers = wakers().lock().unwrap_or_else(PoisonError::into_inner);
    for wake in wakers.iter() {
        wake();
    }
}

/// 128 + the signal's number, as a shell reports a process the signal ended.
pub fn signal_code(signal: Signal) -> u8 {
    (128 + signal as i32).clamp(0, 255) as u8
}

/// What happened to stdout while the command ran (see [`crate::out`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdout {
    Fine,
    /// The reader went away (a broken pipe): quietly nothing more was written.
    Closed,
    /// Another write error (a full disk): said once, at the end, and the exit code is 1.
    Failed,
}

/// The exit code, from how the command ended, whether it was stopped, and what became of
/// stdout. The one place where codes are decided.
pub fn exit_code(outcome: &Outcome, stop: Option<Stop>, stdout: Stdout) -> u8 {
    if let Some(Stop::Signal(s)) = stop {
        return signal_code(s);
    }
    match outcome {
        Err(f) if stdout == Stdout::Closed && is_broken_pipe(&f.error) => 0,
        Err(f) => match f.kind {
            Kind::BadInput => 2,
            Kind::Runtime => 1,
        },
        Ok(_) if stdout == Stdout::Failed => 1,
        Ok(Done::Success) => 0,
        Ok(Done::Reported) => 1,
        Ok(Done::Passed(code)) => *code,
    }
}

/// True when the error comes from writing to a pipe whose reader has gone.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The error as one line, each cause once: many errors already print their source in their
/// own text, and `{:#}` would print it again.
pub fn message(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if part.is_empty() || text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that prints its source in its own text, as many do.
    #[derive(Debug)]
    struct Quoting {
        path: String,
        source: std::io::Error,
    }

    impl std::fmt::Display for Quoting {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{}: {}", self.path, self.source)
        }
    }

    impl std::error::Error for Quoting {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    #[test]
    fn a_cause_quoted_by_its_error_is_printed_once() {
        let io = std::io::Error::from_raw_os_error(2);
        let e = anyhow::Error::new(Quoting {
            path: "/k".into(),
            source: io,
        })
        .context("reading the key");
        let m = message(&e);
        assert_eq!(m.matches("No such file or directory").count(), 1, "{m}");
        assert!(m.starts_with("reading the key: /k: No such file"), "{m}");
    }

    #[test]
    fn the_table_of_codes() {
        let bad: Outcome = Err(Failure::usage(anyhow::anyhow!("x")));
        let run: Outcome = Err(Failure::runtime(anyhow::anyhow!("x")));
        let pipe: Outcome = Err(Failure::runtime(std::io::Error::from(
            std::io::ErrorKind::BrokenPipe,
        )));
        let int = Some(Stop::Signal(Signal::SIGINT));
        let term = Some(Stop::Signal(Signal::SIGTERM));
        let fine = Stdout::Fine;
        assert_eq!(exit_code(&Ok(Done::Success), None, fine), 0);
        assert_eq!(exit_code(&Ok(Done::Reported), None, fine), 1);
        assert_eq!(exit_code(&Ok(Done::Passed(7)), None, fine), 7);
        assert_eq!(exit_code(&bad, None, fine), 2);
        assert_eq!(exit_code(&run, None, fine), 1);
        assert_eq!(exit_code(&Ok(Done::Success), int, fine), 130);
        assert_eq!(exit_code(&run, term, fine), 143);
        assert_eq!(exit_code(&Ok(Done::Passed(0)), term, fine), 143);
        assert_eq!(exit_code(&pipe, None, Stdout::Closed), 0);
        assert_eq!(exit_code(&run, None, Stdout::Closed), 1);
        assert_eq!(exit_code(&Ok(Done::Success), None, Stdout::Closed), 0);
        assert_eq!(exit_code(&Ok(Done::Success), None, Stdout::Failed), 1);
    }
}
