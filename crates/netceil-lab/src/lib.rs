//! The lab: network-namespace topologies on one machine, knob changes over them, and a journal
//! that undoes every change netceil makes, on every exit path.
//!
//! - [`topo`]: the topologies (`direct`, `bridge`, `routed`, `bridge-nf`, `conntrack`,
//!   `macvlan`), built with `ip` and `nft` inside namespaces named `netceil-NAME-{a,m,b}`, with
//!   addresses from 198.18.0.0/15 (RFC 2544's benchmarking range) that exist only there.
//! - [`knob`]: sysctls, per-interface /sys knobs, RPS/XPS masks and `ethtool -C` coalescing,
//!   read before they are changed.
//! - [`journal`]: before anything is created or changed it is written, with the original
//!   value, to an append-only file beside the run store and synced. A [`journal::Session`]
//!   undoes its changes when dropped (success, error, Ctrl-C, panic); after a `kill -9`
//!   [`journal::Journal::recover`] (`netceil lab down --all`) undoes what the dead process left.
//! - [`owner`]: who owns each lab namespace on the machine (a record under /run/netceil with
//!   the creator's PID and start time), so that one store's `lab down --all` removes only
//!   orphans, and never another store's live lab.
//!
//! The commands run are `ip`, `nft`, `ethtool` and `cat`/`sh` inside namespaces (`ip netns
//! exec`, which also mounts the namespace's own /sys); nothing here sends traffic.

pub mod exec;
pub mod journal;
pub mod knob;
pub mod nsdev;
pub mod owner;
pub mod topo;

/// What went wrong in the lab, in words that name the command or file.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A command failed; its words and what it printed.
    #[error("`{command}` failed: {output}")]
    Command { command: String, output: String },
    /// A command could not be started (not installed).
    #[error("`{program}` could not be run ({error}); install it with: apt-get install {package}")]
    Missing {
        program: String,
        package: String,
        error: String,
    },
    /// The journal file could not be read or written.
    #[error("the lab journal {path}: {detail}")]
    Journal { path: String, detail: String },
    /// An owner record under /run/netceil could not be read or written.
    #[error("the lab's owner record {path}: {detail}")]
    Record { path: String, detail: String },
    /// Bad input: a name, a knob, a value.
    #[error("{0}")]
    Usage(String),
    /// Something that cannot be done here, with why.
    #[error("{0}")]
    Unsupported(String),
}

impl LabError {
    /// Whether the user's input, not the system, is at fault.
    pub fn is_usage(&self) -> bool {
        matches!(self, LabError::Usage(_))
    }
}

pub type Result<T> = std::result::Result<T, LabError>;
