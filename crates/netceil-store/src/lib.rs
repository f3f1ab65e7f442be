//! netceil's run store: every Run kept in one SQLite file, written while the run goes on.
//!
//! Why SQLite: one file per user and no server, yet several netceil processes can record into
//! it at once (WAL mode, short `BEGIN IMMEDIATE` transactions, a busy timeout), and a run that
//! is killed mid-way keeps every interval committed before the kill.
//!
//! - [`Store::begin_run`] commits a run's meta at once, marked incomplete; the [`RunWriter`]
//!   commits each interval as it is appended; [`RunWriter::finish`] adds results, findings,
//!   locks, notes and parts and marks the run complete.
//! - [`Store::put_run`] stores a finished run in one go (imports).
//! - [`Store::get_run`] rebuilds the Run exactly: missing values stay missing, f64s keep
//!   their bits, labels, units, notes and parts come back in order.
//! - [`Store::list`], [`Store::resolve`], [`Store::delete`] and [`Store::set_findings`] serve
//!   the `runs`, `show`, `rm` and `analyze` commands.
//!
//! The schema is versioned and migrated forward on open; a file from a newer netceil is
//! refused untouched. The table layout and the reasons for it are in the `schema` module,
//! the sample encoding in `samples`.

mod error;
mod inspect;
mod path;
mod read;
mod samples;
mod schema;
mod store;
mod write;
mod writer;

pub use error::{Result, StoreError};
pub use path::{default_path, default_path_from};
pub use store::{RunFilter, RunSummary, Store};
pub use writer::RunWriter;
