//! Errors of the parsers and of reading a source.
//!
//! A parse error names the file, the 1-based line, the field when there is one, what was
//! expected and what was found, so that a user looking at a sosreport or a fixture can go
//! straight to the offending spot.

use std::fmt;

/// What a parser found where it expected something else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// This text (shortened to 40 characters).
    Text(String),
    /// The line ended early.
    EndOfLine,
    /// The input ended early.
    EndOfInput,
}

impl Found {
    pub(crate) fn text(s: &str) -> Self {
        const MAX: usize = 40;
        if s.chars().count() > MAX {
            let cut: String = s.chars().take(MAX).collect();
            Found::Text(format!("{cut}…"))
        } else {
            Found::Text(s.to_string())
        }
    }
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::Text(t) => write!(f, "'{t}'"),
            Found::EndOfLine => f.write_str("the end of the line"),
            Found::EndOfInput => f.write_str("the end of the input"),
        }
    }
}

/// Why a text could not be parsed, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The file the text came from (`/proc/net/softnet_stat`, or a name an importer gave).
    pub source: String,
    /// 1-based line number.
    pub line: usize,
    /// 1-based whitespace-separated field on that line, when the error is about one field.
    pub field: Option<usize>,
    /// What the parser expected, in words ("a hex number").
    pub expected: String,
    pub found: Found,
}

impl ParseError {
    pub(crate) fn new(
        source: &str,
        line: usize,
        field: Option<usize>,
        expected: impl Into<String>,
        found: Found,
    ) -> Self {
        ParseError {
            source: source.to_string(),
            line,
            field,
            expected: expected.into(),
            found,
        }
    }

    /// The same error, attributed to another file name (an importer reading a copy, or the
    /// sampler naming `/proc/1234/task/1240/stat`).
    #[must_use]
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = source.into();
        self
    }

    /// The same error with its line moved down by `lines`, for text cut out of a larger file.
    #[must_use]
    pub fn offset_lines(mut self, lines: usize) -> Self {
        self.line += lines;
        self
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: line {}", self.source, self.line)?;
        if let Some(field) = self.field {
            write!(f, ", field {field}")?;
        }
        write!(f, ": expected {}, found {}", self.expected, self.found)
    }
}

impl std::error::Error for ParseError {}

/// A source that could not be read or parsed during a sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    /// The path that failed (`/proc/pressure/cpu`).
    pub path: String,
    /// Why, in words, with a hint at the usual cause when there is one.
    pub reason: String,
}

impl SourceError {
    /// From an I/O error while reading `path`, adding a hint for well-known causes.
    pub fn io(path: &str, err: &std::io::Error) -> Self {
        let mut reason = err.to_string();
        if let Some(hint) = io_hint(path, err) {
            reason.push_str(" (");
            reason.push_str(hint);
            reason.push(')');
        }
        SourceError {
            path: path.to_string(),
            reason,
        }
    }

    /// From a parse error of the text read at `path`.
    pub fn parse(path: &str, err: ParseError) -> Self {
        let err = err.with_source(path);
        SourceError {
            path: path.to_string(),
            reason: err.to_string(),
        }
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Parse errors already start with the path.
        if self.reason.starts_with(&self.path) {
            f.write_str(&self.reason)
        } else {
            write!(f, "{}: {}", self.path, self.reason)
        }
    }
}

impl std::error::Error for SourceError {}

fn io_hint(path: &str, err: &std::io::Error) -> Option<&'static str> {
    use std::io::ErrorKind;
    let kind = err.kind();
    let unsupported = kind == ErrorKind::Unsupported || err.raw_os_error() == Some(95);
    if path.starts_with("/proc/pressure") && (kind == ErrorKind::NotFound || unsupported) {
        return Some("kernel without CONFIG_PSI, or booted with psi=0");
    }
    let per_process = path
        .strip_prefix("/proc/")
        .and_then(|rest| rest.split('/').next())
        .is_some_and(|first| !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()));
    if per_process {
        if kind == ErrorKind::PermissionDenied {
            return Some("another user's process: run as that user or with CAP_SYS_PTRACE");
        }
        if kind == ErrorKind::NotFound {
            return Some("the process or thread has exited");
        }
    }
    None
}
