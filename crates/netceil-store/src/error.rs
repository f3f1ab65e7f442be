//! One error type for the store. Every variant names the file and what was being done, so a
//! message read in a terminal is enough to act on.

use std::path::PathBuf;

/// What went wrong in the run store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// None of `$NETCEIL_DB`, `$XDG_DATA_HOME` or `$HOME` gives a place for the store.
    #[error(
        "no place for the run store: set NETCEIL_DB to a file path (or XDG_DATA_HOME or HOME)"
    )]
    NoDefaultPath,

    /// The directory that should hold the store file could not be created.
    #[error("cannot create the directory {dir} for the run store {path}: {source}")]
    CreateDir {
        dir: PathBuf,
        path: PathBuf,
        source: std::io::Error,
    },

    /// The path is there but is not a regular file (a directory, a FIFO, a device, a socket).
    #[error("the run store {path} is {what}, not a file; point NETCEIL_DB at a file (it is made if missing)")]
    NotAFile { path: PathBuf, what: &'static str },

    /// The file could not be looked at or read.
    #[error("run store {path}: {op} failed: {source}")]
    Io {
        /// What was being done: "looking at", "opening", "reading".
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },

    /// Whether the file is a netceil store cannot be told without writing to it.
    #[error("cannot tell whether {path} is a netceil run store without writing to it: {detail}; it was left as it was")]
    Unknown { path: PathBuf, detail: String },

    /// An SQLite call failed.
    #[error("run store {path}: {op} failed: {source}")]
    Sqlite {
        /// What was being done, e.g. "appending row 12 of run 20261121-…".
        op: String,
        path: PathBuf,
        source: rusqlite::Error,
    },

    /// The file exists but is not a netceil run store (random bytes, another program's
    /// database, or an SQLite file damaged beyond reading).
    #[error("{path} is not a netceil run store: {detail}; move it away or point NETCEIL_DB at another file")]
    NotAStore { path: PathBuf, detail: String },

    /// The file was written by a newer netceil; it is left untouched (nothing is written to it
    /// or beside it).
    #[error("run store {path} has schema version {found}, but this netceil knows versions up to {supported}; upgrade netceil (the file was not changed)")]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },

    /// No run matches the id, prefix or `last`.
    #[error("no run matches '{spec}' in {path}")]
    NotFound { spec: String, path: PathBuf },

    /// A prefix matches more than one run.
    #[error("'{spec}' matches {count} runs in {path}: {}; give more characters of the id", candidates.join(", "))]
    Ambiguous {
        spec: String,
        path: PathBuf,
        /// How many runs match.
        count: usize,
        /// The ids it matches, newest first (the first ten, then "and N more").
        candidates: Vec<String>,
    },

    /// A run with this id is already stored.
    #[error(
        "run '{run_id}' already exists in {path}; delete it first or give the new run another id"
    )]
    AlreadyExists { run_id: String, path: PathBuf },

    /// The run cannot be stored as given (it would not read back the same).
    #[error("run '{run_id}' cannot be stored in {path}: {detail}")]
    InvalidRun {
        run_id: String,
        path: PathBuf,
        detail: String,
    },

    /// Something stored for a run cannot be read back.
    #[error("run '{run_id}' in {path}: the stored {what} is unreadable: {detail}")]
    Corrupt {
        run_id: String,
        path: PathBuf,
        what: String,
        detail: String,
    },
}

/// The store's result type.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
