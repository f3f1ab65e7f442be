//! The engine's error: what went wrong, and whether the user's input was at fault.

use std::fmt;

/// Whose fault an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The user's input: a flag, a file, a far end that refused the request.
    Usage,
    /// The system at run time.
    Runtime,
}

/// An error from the engine, and whose fault it is.
#[derive(Debug)]
pub struct Error {
    pub kind: ErrorKind,
    pub error: anyhow::Error,
}

impl Error {
    /// The user's input at fault.
    pub fn usage(error: impl Into<anyhow::Error>) -> Error {
        Error {
            kind: ErrorKind::Usage,
            error: error.into(),
        }
    }

    /// A failure at run time; what `?` makes of any other error.
    pub fn runtime(error: impl Into<anyhow::Error>) -> Error {
        Error {
            kind: ErrorKind::Runtime,
            error: error.into(),
        }
    }

    pub fn is_usage(&self) -> bool {
        self.kind == ErrorKind::Usage
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

impl From<anyhow::Error> for Error {
    fn from(error: anyhow::Error) -> Error {
        Error::runtime(error)
    }
}

impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Error {
        Error::runtime(error)
    }
}

/// The load engine knows which of its errors are the user's.
impl From<netceil_load::LoadError> for Error {
    fn from(e: netceil_load::LoadError) -> Error {
        if e.is_usage() {
            Error::usage(e)
        } else {
            Error::runtime(e)
        }
    }
}

/// The lab knows which of its errors are the user's.
impl From<netceil_lab::LabError> for Error {
    fn from(e: netceil_lab::LabError) -> Error {
        if e.is_usage() {
            Error::usage(e)
        } else {
            Error::runtime(e)
        }
    }
}
