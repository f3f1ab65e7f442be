//! stdout, for everything netceil prints as its output.
//!
//! A write to stdout never fails the command and never panics (`println!` does, on a closed
//! pipe). When the reader goes away (`netceil runs | head -1`), nothing more is written and
//! the command ends as it would have, with exit code 0: the reader asked for no more, and a
//! script under `set -o pipefail` should not fail for it. `watch`, which would otherwise run
//! on, stops as on Ctrl-C, keeping what it recorded. Any other write error (a full disk under
//! `> file`) is said once at the end, and the exit code is 1.

use std::io::{self, StdoutLock, Write};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

use crate::exit::Stdout;

const FINE: u8 = 0;
const CLOSED: u8 = 1;
const FAILED: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(FINE);
static FAILURE: Mutex<Option<String>> = Mutex::new(None);

/// stdout, locked; see the module's documentation.
pub struct Out(StdoutLock<'static>);

/// stdout for the command's output.
pub fn stdout() -> Out {
    Out(io::stdout().lock())
}

/// What became of stdout so far.
pub fn state() -> Stdout {
    match STATE.load(Ordering::SeqCst) {
        FINE => Stdout::Fine,
        CLOSED => Stdout::Closed,
        _ => Stdout::Failed,
    }
}

/// True once the reader of stdout has gone away.
pub fn closed() -> bool {
    state() == Stdout::Closed
}

/// The first write error other than a closed pipe, for the end of the command.
pub fn failure() -> Option<String> {
    FAILURE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

fn note(e: &io::Error) {
    if e.kind() == io::ErrorKind::BrokenPipe {
        let _ = STATE.compare_exchange(FINE, CLOSED, Ordering::SeqCst, Ordering::SeqCst);
        return;
    }
    if STATE
        .compare_exchange(FINE, FAILED, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
    {
        *FAILURE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e.to_string());
    }
}

/// Runs a write unless stdout has already failed; a failure is noted and swallowed.
fn guarded<T>(done: T, write: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    if STATE.load(Ordering::SeqCst) != FINE {
        return Ok(done);
    }
    match write() {
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
        Err(e) => {
            note(&e);
            Ok(done)
        }
        ok => ok,
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let inner = &mut self.0;
        guarded(buf.len(), || inner.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        let inner = &mut self.0;
        guarded((), || inner.flush())
    }
}

/// `println!` that never panics: see [`crate::out`].
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!($crate::out::stdout(), $($arg)*);
    }};
}
