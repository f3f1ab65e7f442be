//! Number formatting shared by every report: SI prefixes, units, and one spelling for "missing".
//!
//! Rates span nine orders of magnitude (a lock taken 3 times a second, a NIC doing 14 Mpps), so
//! every figure is shown with three significant digits and an SI prefix rather than a fixed
//! number of decimals. Bit rates are decimal (1 Gbit/s = 10^9 bit/s), as everywhere in netceil.

use netceil_model::Unit;

/// How a value that was not measured is shown. Never `0`.
pub const MISSING: &str = "-";

const BIG_PREFIXES: [(f64, &str); 5] =
    [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
const SMALL_PREFIXES: [(f64, &str); 3] = [(1e-3, "m"), (1e-6, "µ"), (1e-9, "n")];

/// `v` with three significant digits and trailing zeros removed: `24.8`, `950`, `1.5`.
fn three_digits(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = (2 - magnitude).clamp(0, 6) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Splits a value into a scaled number and its SI prefix: `(24.8, "M")` for 24.8e6.
/// Values between 0.01 and 1000 keep no prefix, so percentages and small counts read plainly.
fn split_si(v: f64) -> (f64, &'static str) {
    let a = v.abs();
    if a == 0.0 || !a.is_finite() {
        return (v, "");
    }
    for (scale, prefix) in BIG_PREFIXES {
        // Round first so 999_960 becomes "1 M", not "1000 k".
        if a >= scale * 0.999_5 {
            return (v / scale, prefix);
        }
    }
    if a < 1e-2 {
        for (scale, prefix) in SMALL_PREFIXES {
            if a >= scale * 0.999_5 {
                return (v / scale, prefix);
            }
        }
        return (v / 1e-9, "n");
    }
    (v, "")
}

/// A number with an SI prefix and no unit: `24.8 M`, `950`, `1.5 k`, `0`.
pub fn si(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let (scaled, prefix) = split_si(v);
    if prefix.is_empty() {
        three_digits(scaled)
    } else {
        format!("{} {prefix}", three_digits(scaled))
    }
}

/// A number with an SI prefix glued to a unit symbol: `24.8 Mbit/s`, `172 kpkt/s`, `9.49 µs`.
pub fn si_with(v: f64, symbol: &str) -> String {
    if !v.is_finite() {
        return format!("{v} {symbol}");
    }
    let (scaled, prefix) = split_si(v);
    format!("{} {prefix}{symbol}", three_digits(scaled))
}

/// A duration: below one second always with a prefix (`50 ms`, not `0.05 s`).
fn seconds(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || a >= 1.0 || !a.is_finite() {
        return si_with(v, "s");
    }
    for (scale, prefix) in SMALL_PREFIXES {
        if a >= scale * 0.999_5 {
            return format!("{} {prefix}s", three_digits(v / scale));
        }
    }
    format!("{} ns", three_digits(v / 1e-9))
}

/// A value in its unit, the way a person would write it.
pub fn value(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Percent => format!("{} %", three_digits_or_small(v)),
        Unit::Ratio => three_digits_or_small(v),
        // Seconds and microseconds both read best as seconds with a prefix: 300 µs, 8.5 ms.
        Unit::Seconds => seconds(v),
        Unit::Microseconds => seconds(v * 1e-6),
        Unit::Bytes => si_with(v, "B"),
        Unit::Count => si(v),
        Unit::BitsPerSecond | Unit::BytesPerSecond | Unit::PacketsPerSecond | Unit::PerSecond => {
            si_with(v, unit.symbol())
        }
    }
}

/// Percentages and ratios: no SI prefix, but small values keep their digits (`0.45`).
fn three_digits_or_small(v: f64) -> String {
    if v != 0.0 && v.abs() < 0.01 {
        format!("{v:.2e}")
    } else {
        three_digits(v)
    }
}

/// A value in its unit, or [`MISSING`].
pub fn opt_value(v: Option<f64>, unit: Unit) -> String {
    v.map_or_else(|| MISSING.to_string(), |v| value(v, unit))
}

/// An exact count with thousands grouped by commas: `519,552`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let groups: Vec<&str> = digits
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|g| std::str::from_utf8(g).unwrap_or_default())
        .collect();
    groups.join(",")
}

/// A signed exact count: `-1,310`.
pub fn signed_count(n: i64) -> String {
    if n < 0 {
        format!("-{}", count(n.unsigned_abs()))
    } else {
        count(n.unsigned_abs())
    }
}

/// An exact count, or [`MISSING`].
pub fn opt_count(n: Option<u64>) -> String {
    n.map_or_else(|| MISSING.to_string(), count)
}

/// A relative change with its sign: `+94.4 %`, `-12 %`.
pub fn change_pct(pct: f64) -> String {
    if pct > 0.0 {
        format!("+{} %", three_digits(pct))
    } else {
        format!("{} %", three_digits(pct))
    }
}

/// A p-value: `0.0312`, `< 1e-6`.
pub fn p_value(p: f64) -> String {
    if p < 1e-6 {
        "< 1e-6".into()
    } else if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_prefixes_and_digits() {
        assert_eq!(si(0.0), "0");
        assert_eq!(si(950.0), "950");
        assert_eq!(si(1500.0), "1.5 k");
        assert_eq!(si(24_801_881.6), "24.8 M");
        assert_eq!(si(999_960.0), "1 M");
        assert_eq!(si(0.5), "0.5");
        assert_eq!(si(0.000_3), "300 µ");
        assert_eq!(si(-2500.0), "-2.5 k");
        assert_eq!(si_with(1e9, "bit/s"), "1 Gbit/s");
    }

    #[test]
    fn values_in_units() {
        assert_eq!(value(45.26, Unit::Percent), "45.3 %");
        assert_eq!(value(8503.3, Unit::Microseconds), "8.5 ms");
        assert_eq!(value(9.487, Unit::Microseconds), "9.49 µs");
        assert_eq!(value(0.05, Unit::Seconds), "50 ms");
        assert_eq!(value(0.0123, Unit::Seconds), "12.3 ms");
        assert_eq!(value(0.0, Unit::Seconds), "0 s");
        assert_eq!(value(172_235.3, Unit::PacketsPerSecond), "172 kpkt/s");
        assert_eq!(opt_value(None, Unit::Percent), MISSING);
    }

    #[test]
    fn counts_grouped() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(519_552), "519,552");
        assert_eq!(count(1_000_000), "1,000,000");
        assert_eq!(signed_count(-1310), "-1,310");
    }

    #[test]
    fn changes_and_p_values() {
        assert_eq!(change_pct(94.44), "+94.4 %");
        assert_eq!(change_pct(-12.0), "-12 %");
        assert_eq!(p_value(0.031_24), "0.031");
        assert_eq!(p_value(1e-9), "< 1e-6");
    }
}
