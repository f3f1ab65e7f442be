//! The load engine's errors. Each variant names the operation and the address involved, so the
//! binary can print it as is and map it to an exit code (configuration errors are exit 2).

use std::net::SocketAddr;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The configuration cannot work (size over the path MTU, zero rate, conflicting options).
    #[error("{0}")]
    InvalidConfig(String),
    #[error("cannot bind {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: SocketAddr,
        source: std::io::Error,
    },
    /// Any other socket operation: `op` says which (setsockopt SO_RCVBUF, recvmmsg…).
    #[error("{op} failed: {source}")]
    Socket { op: String, source: std::io::Error },
    #[error("{0}")]
    Other(String),
}

impl LoadError {
    /// True when the user's input is at fault (exit code 2), not the system.
    pub fn is_usage(&self) -> bool {
        matches!(self, LoadError::InvalidConfig(_) | LoadError::Bind { .. })
    }

    pub fn socket(op: impl Into<String>, source: impl Into<std::io::Error>) -> LoadError {
        LoadError::Socket {
            op: op.into(),
            source: source.into(),
        }
    }
}
