//! `/proc/pressure/{cpu,io,memory}`: pressure stall information (PSI).
//!
//! Format and meaning: the kernel's Documentation/accounting/psi.rst. Two lines, `some` and
//! `full`, each with running averages over 10, 60 and 300 s (percent) and `total`, the
//! cumulative stall time in microseconds. Rates come from `total`, which covers exactly the
//! sampling interval; the averages are kept for display. `cpu` has no `full` line before 5.13.
//! The files exist only with CONFIG_PSI, and reading them fails when booted with `psi=0`.

use super::Line;
use crate::error::{Found, ParseError};

/// The directory name this parser uses in errors (the sampler names the exact file).
pub const SOURCE: &str = "/proc/pressure";

/// One `some` or `full` line.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PressureLine {
    /// Percent of the last 10 s.
    pub avg10: f64,
    pub avg60: f64,
    pub avg300: f64,
    /// Cumulative stall time, µs.
    pub total_us: u64,
}

/// The parsed file.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pressure {
    /// Some task stalled.
    pub some: PressureLine,
    /// All non-idle tasks stalled at once; `None` where the kernel does not print it.
    pub full: Option<PressureLine>,
}

fn pressure_line(line: &mut Line<'_>) -> Result<PressureLine, ParseError> {
    let mut avg = [None::<f64>; 3];
    let mut total = None;
    while let Some(f) = line.next_field() {
        let field = Some(line.fields_read());
        let Some((key, value)) = f.split_once('=') else {
            return Err(line.error(field, "a key=value pair", Found::text(f)));
        };
        let slot = match key {
            "avg10" => &mut avg[0],
            "avg60" => &mut avg[1],
            "avg300" => &mut avg[2],
            "total" => {
                total =
                    Some(super::parse_u64(value).ok_or_else(|| {
                        line.error(field, "total=<microseconds>", Found::text(f))
                    })?);
                continue;
            }
            _ => continue,
        };
        let v: f64 = value
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| line.error(field, "a percentage such as avg10=1.25", Found::text(f)))?;
        *slot = Some(v);
    }
    let missing = |what: &str| line.error(None, format!("a {what} value"), Found::EndOfLine);
    Ok(PressureLine {
        avg10: avg[0].ok_or_else(|| missing("avg10="))?,
        avg60: avg[1].ok_or_else(|| missing("avg60="))?,
        avg300: avg[2].ok_or_else(|| missing("avg300="))?,
        total_us: total.ok_or_else(|| missing("total="))?,
    })
}

/// Parses the text of one `/proc/pressure/*` file.
pub fn parse(text: &str) -> Result<Pressure, ParseError> {
    let mut some = None;
    let mut full = None;
    for (i, raw) in text.lines().enumerate() {
        let mut line = Line::new(SOURCE, i + 1, raw);
        match line.next_field() {
            None => continue,
            Some("some") => some = Some(pressure_line(&mut line)?),
            Some("full") => full = Some(pressure_line(&mut line)?),
            Some(other) => {
                return Err(line.error(Some(1), "'some' or 'full'", Found::text(other)));
            }
        }
    }
    let some =
        some.ok_or_else(|| ParseError::new(SOURCE, 1, None, "a 'some' line", Found::EndOfInput))?;
    Ok(Pressure { some, full })
}
