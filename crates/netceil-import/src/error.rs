//! Import errors name the file, the line, the column and what was expected.

/// Why a log could not be imported (or one of its lines read).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: line {line}{}: expected {expected}, found '{found}'", column.map(|c| format!(", column {c}")).unwrap_or_default())]
pub struct ImportError {
    /// The file name as given (`-` for stdin).
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// 1-based column (field) number, when one field is at fault.
    pub column: Option<usize>,
    /// What the parser wanted there.
    pub expected: String,
    /// What it found (shortened).
    pub found: String,
}

impl ImportError {
    pub fn new(
        file: &str,
        line: usize,
        column: Option<usize>,
        expected: impl Into<String>,
        found: &str,
    ) -> Self {
        let mut short: String = found.chars().take(60).collect();
        if short.len() < found.len() {
            short.push('…');
        }
        ImportError {
            file: file.to_string(),
            line,
            column,
            expected: expected.into(),
            found: short,
        }
    }
}

/// Why a text is not of a given format: said when detection fails, so the user sees what
/// each reader expected ("not a vmstat log: line 1 …, expected …").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotThisFormat {
    pub format: &'static str,
    pub reason: String,
}
