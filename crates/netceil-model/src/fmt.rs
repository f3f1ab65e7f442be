//! Numbers for people: the one formatter every report, summary, table and finding uses.
//!
//! The rules, in full:
//! - **Three significant digits**, trailing zeros kept, because they say how precise the
//!   figure is: `1.50 Gbit/s`, `12.3 µs`, `0.820`. A whole number below 1000 is printed
//!   whole (`42 pps`, `0`, `3`), since it is exact.
//! - **Decimal SI prefixes** (k, M, G, T, P, E = 10^3 … 10^18), as the README states for bit
//!   rates, and for bytes too (`1 kB` = 1000 B, `18.0 MB/s` = 144 Mbit/s). The prefix is
//!   chosen after rounding, so 999 950 reads `1.00 M`, never `1000 k`. Rounding is done once,
//!   on the value itself (not on a quotient), and an exact tie goes to the even digit.
//! - **Durations** take the small prefixes instead: `50.0 ms`, `9.49 µs`, `412 ns`; from one
//!   second up they stay in seconds (`14.1 s`, `3600 s`).
//! - **Percentages and ratios** take no prefix: `69.2 %`, `0.00409 %`, `1500 %`, `0.820`.
//! - Magnitudes no prefix reaches (below 10^-3 without one, beyond 1000 E) are written in
//!   scientific notation: `4.12e-5 %`.
//! - **Exact counts** (packets sent, lost…) are integers with thousands separated by commas:
//!   `12,345,678`. A measured quantity with the [`Unit::Count`] unit (a mean queue length)
//!   follows the three-digit rule.
//! - **Not a number** prints `NaN`, infinities `∞` and `-∞`, without a unit; a value that
//!   was not measured prints [`MISSING`]. Nothing here panics.
//!
//! One spelling per unit is [`Unit::human_symbol`]: packets per second are `pps`, as
//! `--rate 200kpps` is typed and [`crate::Rate`] is printed, and microseconds are `µs`.
//! [`Unit::symbol`] keeps the ASCII spelling of CSV headers and the schema (`pkt/s`, `us`).

use crate::Unit;

/// How a value that was not measured is shown. Never `0`.
pub const MISSING: &str = "-";

/// Decimal prefixes from 10^3 up, one per power of 1000.
const PREFIXES: [&str; 6] = ["k", "M", "G", "T", "P", "E"];
/// Duration prefixes below one second: 10^-3, 10^-6, 10^-9.
const SMALL_PREFIXES: [&str; 3] = ["m", "µ", "n"];

impl Unit {
    /// The unit as human text writes it after a number (`1.50 Gbit/s`, `310 kpps`, `9.49 µs`);
    /// empty for ratios and counts, which are bare numbers. CSV headers and the schema use
    /// [`Unit::symbol`], whose spelling does not change.
    pub fn human_symbol(self) -> &'static str {
        match self {
            Unit::BitsPerSecond => "bit/s",
            Unit::BytesPerSecond => "B/s",
            Unit::PacketsPerSecond => "pps",
            Unit::PerSecond => "/s",
            Unit::Percent => "%",
            Unit::Ratio | Unit::Count => "",
            Unit::Seconds => "s",
            Unit::Microseconds => "µs",
            Unit::Bytes => "B",
        }
    }

    /// The unit whose [`Unit::symbol`] is `symbol`, for tables that carry the symbol as text.
    pub fn from_symbol(symbol: &str) -> Option<Unit> {
        ALL.into_iter().find(|u| u.symbol() == symbol)
    }
}

/// Every unit, for [`Unit::from_symbol`] and the golden tests.
const ALL: [Unit; 10] = [
    Unit::BitsPerSecond,
    Unit::BytesPerSecond,
    Unit::PacketsPerSecond,
    Unit::PerSecond,
    Unit::Percent,
    Unit::Ratio,
    Unit::Seconds,
    Unit::Microseconds,
    Unit::Bytes,
    Unit::Count,
];

/// A value in its unit, the way a person writes it: `1.50 Gbit/s`, `310 kpps`, `45.3 %`,
/// `8.50 ms`, `18.0 MB`, `26.8 k/s`, `12.3 k`.
pub fn value(v: f64, unit: Unit) -> String {
    if let Some(word) = not_finite(v) {
        return word.into();
    }
    match unit {
        Unit::Percent => format!("{} %", plain(v)),
        Unit::Ratio => plain(v),
        Unit::Seconds => seconds(v, 0),
        Unit::Microseconds => seconds(v, -6),
        Unit::Count => number(v),
        Unit::BitsPerSecond
        | Unit::BytesPerSecond
        | Unit::PacketsPerSecond
        | Unit::PerSecond
        | Unit::Bytes => with_symbol(v, unit.human_symbol()),
    }
}

/// A value in its unit, or [`MISSING`].
pub fn opt_value(v: Option<f64>, unit: Unit) -> String {
    v.map_or_else(|| MISSING.to_string(), |v| value(v, unit))
}

/// A change with its sign: `+94.4 %`, `-12.0 %`, `0 %`.
pub fn change(v: f64, unit: Unit) -> String {
    let s = value(v, unit);
    if v > 0.0 {
        format!("+{s}")
    } else {
        s
    }
}

/// A number with an SI prefix and no unit: `26.8 k`, `3.50 G`, `950`, `0.820`.
pub fn number(v: f64) -> String {
    match prefixed(v) {
        Prefixed::Finite { digits, prefix: "" } => digits,
        Prefixed::Finite { digits, prefix } => format!("{digits} {prefix}"),
        Prefixed::NotFinite(word) => word.into(),
    }
}

/// A number with an SI prefix glued to a unit that [`Unit`] does not name: `12.3 kpkt`,
/// `0.500 CPU-s/Gbit`. A symbol that starts with `/` is glued to a bare number: `12/s`.
pub fn with_symbol(v: f64, symbol: &str) -> String {
    match prefixed(v) {
        Prefixed::Finite { digits, prefix } => {
            let space = if prefix.is_empty() && (symbol.starts_with('/') || symbol.is_empty()) {
                ""
            } else {
                " "
            };
            format!("{digits}{space}{prefix}{symbol}")
        }
        Prefixed::NotFinite(word) => word.into(),
    }
}

/// Three significant digits and no prefix, for figures of bounded size (percentages, ratios):
/// `69.2`, `0.00409`, `1500`.
pub fn plain(v: f64) -> String {
    if let Some(word) = not_finite(v) {
        return word.into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let Some((digits, exp)) = sig3(v.abs()) else {
        return format!("{v}");
    };
    if !(-3..15).contains(&exp) {
        format!("{v:.2e}")
    } else if exp >= 3 || (v.fract() == 0.0) {
        format!("{v:.0}")
    } else {
        signed(v, place(&digits, exp + 1))
    }
}

/// A duration of `v` × 10^`shift` seconds: below one second with a prefix (`50.0 ms`,
/// `9.49 µs`), from one second up in seconds (`14.1 s`, `3600 s`). A whole number below 1000
/// in the unit it was given in stays whole (`3 s`, `42 µs`). The shift moves the point
/// without multiplying, so 999.5 µs rounds as 999.5 does.
fn seconds(v: f64, shift: i32) -> String {
    if let Some(word) = not_finite(v) {
        return word.into();
    }
    let given = ["s", "ms", "µs", "ns"].get(shift.unsigned_abs() as usize / 3);
    if v == 0.0 {
        return "0 s".into();
    }
    if v.fract() == 0.0 && v.abs() < 1000.0 {
        if let Some(unit) = given {
            return format!("{v:.0} {unit}");
        }
    }
    let Some((digits, exp)) = sig3(v.abs()) else {
        return format!("{v}e{shift} s");
    };
    let exp = exp + shift;
    if exp >= 0 {
        return format!("{} s", plain(v * 10f64.powi(shift)));
    }
    if exp < -9 {
        return format!("{} s", scientific(v, &digits, exp));
    }
    let group = exp.div_euclid(3);
    let prefix = SMALL_PREFIXES[(-group - 1) as usize];
    format!(
        "{} {prefix}s",
        signed(v, place(&digits, exp - 3 * group + 1))
    )
}

/// An exact count with thousands grouped by commas: `519,552`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
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

/// A factor said roughly, as in "about 10×": whole from 3× up, one decimal below. The one
/// figure coarser than three digits, because it states an estimate (a gain, how far one
/// resource is behind another), not a measurement.
pub fn times(v: f64) -> String {
    match not_finite(v) {
        Some(word) => format!("{word}×"),
        None if v.abs() >= 3.0 => format!("{v:.0}×"),
        None => format!("{v:.1}×"),
    }
}

/// A finite value's digits and prefix, or the word for a value that is not finite.
enum Prefixed {
    Finite {
        digits: String,
        prefix: &'static str,
    },
    NotFinite(&'static str),
}

fn prefixed(v: f64) -> Prefixed {
    if let Some(word) = not_finite(v) {
        return Prefixed::NotFinite(word);
    }
    let bare = |digits| Prefixed::Finite { digits, prefix: "" };
    if v == 0.0 {
        return bare("0".into());
    }
    if v.fract() == 0.0 && v.abs() < 1000.0 {
        return bare(format!("{v:.0}"));
    }
    let Some((digits, exp)) = sig3(v.abs()) else {
        return bare(format!("{v}"));
    };
    if !(-3..3 * (PREFIXES.len() as i32 + 1)).contains(&exp) {
        return bare(format!("{v:.2e}"));
    }
    let group = exp.div_euclid(3).max(0);
    Prefixed::Finite {
        digits: signed(v, place(&digits, exp - 3 * group + 1)),
        prefix: match group {
            0 => "",
            g => PREFIXES[g as usize - 1],
        },
    }
}

/// `NaN`, `∞` or `-∞` for a value that is not finite.
fn not_finite(v: f64) -> Option<&'static str> {
    if v.is_nan() {
        Some("NaN")
    } else if v == f64::INFINITY {
        Some("∞")
    } else if v == f64::NEG_INFINITY {
        Some("-∞")
    } else {
        None
    }
}

/// The three significant digits of a positive finite `a` and the decimal exponent of `a`
/// rounded to them: 999.95 gives ("100", 3), 0.0412 gives ("412", -2).
fn sig3(a: f64) -> Option<(String, i32)> {
    // `{:.2e}` rounds once, correctly, and says where the rounded value's point is.
    let s = format!("{a:.2e}");
    let (mantissa, exp) = s.split_once('e')?;
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits.len() == 3).then_some(())?;
    Some((digits, exp.parse().ok()?))
}

/// Three digits with the point after `int_digits` of them (3 at most): ("412", 1) gives
/// `4.12`, ("412", -1) gives `0.0412`.
fn place(digits: &str, int_digits: i32) -> String {
    match usize::try_from(int_digits) {
        Ok(0) | Err(_) => {
            let zeros = "0".repeat(int_digits.unsigned_abs() as usize);
            format!("0.{zeros}{digits}")
        }
        Ok(n) if n >= digits.len() => digits.into(),
        Ok(n) => format!("{}.{}", &digits[..n], &digits[n..]),
    }
}

/// `-4.94e-330`: the digits of `v` with an exponent of its own.
fn scientific(v: f64, digits: &str, exp: i32) -> String {
    signed(v, format!("{}.{}e{exp}", &digits[..1], &digits[1..]))
}

fn signed(v: f64, text: String) -> String {
    if v < 0.0 {
        format!("-{text}")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Magnitudes from 10^-10 to 10^25: zero, whole numbers, each prefix boundary and the
    /// values that round up onto it, negatives, and the values that are not numbers.
    const INPUTS: [f64; 24] = [
        0.0,
        -0.0,
        3.0,
        42.0,
        0.5,
        0.0412,
        0.000_123,
        2.5e-10,
        12.34,
        999.0,
        999.4,
        999.5,
        1234.5,
        999_950.0,
        999_449.0,
        1.5e9,
        2.5e17,
        1e25,
        -2500.0,
        -0.004_56,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        5e-324,
    ];

    /// What [`value`] prints for each of [`INPUTS`], one column per unit in the order of
    /// [`ALL`]: bit/s, B/s, pps, /s, %, ratio, s, µs, B, count.
    #[rustfmt::skip]
    const GOLDEN: [[&str; 10]; 24] = [
        ["0 bit/s", "0 B/s", "0 pps", "0/s", "0 %", "0", "0 s", "0 s", "0 B", "0"],
        ["0 bit/s", "0 B/s", "0 pps", "0/s", "0 %", "0", "0 s", "0 s", "0 B", "0"],
        ["3 bit/s", "3 B/s", "3 pps", "3/s", "3 %", "3", "3 s", "3 µs", "3 B", "3"],
        ["42 bit/s", "42 B/s", "42 pps", "42/s", "42 %", "42", "42 s", "42 µs", "42 B", "42"],
        ["0.500 bit/s", "0.500 B/s", "0.500 pps", "0.500/s", "0.500 %", "0.500", "500 ms", "500 ns", "0.500 B", "0.500"],
        ["0.0412 bit/s", "0.0412 B/s", "0.0412 pps", "0.0412/s", "0.0412 %", "0.0412", "41.2 ms", "41.2 ns", "0.0412 B", "0.0412"],
        ["1.23e-4 bit/s", "1.23e-4 B/s", "1.23e-4 pps", "1.23e-4/s", "1.23e-4 %", "1.23e-4", "123 µs", "1.23e-10 s", "1.23e-4 B", "1.23e-4"],
        ["2.50e-10 bit/s", "2.50e-10 B/s", "2.50e-10 pps", "2.50e-10/s", "2.50e-10 %", "2.50e-10", "2.50e-10 s", "2.50e-16 s", "2.50e-10 B", "2.50e-10"],
        ["12.3 bit/s", "12.3 B/s", "12.3 pps", "12.3/s", "12.3 %", "12.3", "12.3 s", "12.3 µs", "12.3 B", "12.3"],
        ["999 bit/s", "999 B/s", "999 pps", "999/s", "999 %", "999", "999 s", "999 µs", "999 B", "999"],
        ["999 bit/s", "999 B/s", "999 pps", "999/s", "999 %", "999", "999 s", "999 µs", "999 B", "999"],
        ["1.00 kbit/s", "1.00 kB/s", "1.00 kpps", "1.00 k/s", "1000 %", "1000", "1000 s", "1.00 ms", "1.00 kB", "1.00 k"],
        ["1.23 kbit/s", "1.23 kB/s", "1.23 kpps", "1.23 k/s", "1234 %", "1234", "1234 s", "1.23 ms", "1.23 kB", "1.23 k"],
        ["1.00 Mbit/s", "1.00 MB/s", "1.00 Mpps", "1.00 M/s", "999950 %", "999950", "999950 s", "1.00 s", "1.00 MB", "1.00 M"],
        ["999 kbit/s", "999 kB/s", "999 kpps", "999 k/s", "999449 %", "999449", "999449 s", "999 ms", "999 kB", "999 k"],
        ["1.50 Gbit/s", "1.50 GB/s", "1.50 Gpps", "1.50 G/s", "1500000000 %", "1500000000", "1500000000 s", "1500 s", "1.50 GB", "1.50 G"],
        ["250 Pbit/s", "250 PB/s", "250 Ppps", "250 P/s", "2.50e17 %", "2.50e17", "2.50e17 s", "250000000000 s", "250 PB", "250 P"],
        ["1.00e25 bit/s", "1.00e25 B/s", "1.00e25 pps", "1.00e25/s", "1.00e25 %", "1.00e25", "1.00e25 s", "1.00e19 s", "1.00e25 B", "1.00e25"],
        ["-2.50 kbit/s", "-2.50 kB/s", "-2.50 kpps", "-2.50 k/s", "-2500 %", "-2500", "-2500 s", "-2.50 ms", "-2.50 kB", "-2.50 k"],
        ["-0.00456 bit/s", "-0.00456 B/s", "-0.00456 pps", "-0.00456/s", "-0.00456 %", "-0.00456", "-4.56 ms", "-4.56 ns", "-0.00456 B", "-0.00456"],
        ["NaN", "NaN", "NaN", "NaN", "NaN", "NaN", "NaN", "NaN", "NaN", "NaN"],
        ["∞", "∞", "∞", "∞", "∞", "∞", "∞", "∞", "∞", "∞"],
        ["-∞", "-∞", "-∞", "-∞", "-∞", "-∞", "-∞", "-∞", "-∞", "-∞"],
        ["4.94e-324 bit/s", "4.94e-324 B/s", "4.94e-324 pps", "4.94e-324/s", "4.94e-324 %", "4.94e-324", "4.94e-324 s", "4.94e-330 s", "4.94e-324 B", "4.94e-324"],
    ];

    #[test]
    fn every_unit_at_every_magnitude() {
        let mut wrong = Vec::new();
        for (v, row) in INPUTS.iter().zip(GOLDEN) {
            for (unit, want) in ALL.iter().zip(row) {
                let got = value(*v, *unit);
                if got != want {
                    wrong.push(format!("{v:e} {unit:?}: {got:?}, expected {want:?}"));
                }
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn numbers_counts_changes_and_factors() {
        let cases: [(String, &str); 24] = [
            (number(26_754.0), "26.8 k"),
            // Exact ties go to the even digit.
            (number(1_025_000_000.0), "1.02 G"),
            (number(1475.0), "1.48 k"),
            (number(3.5e9), "3.50 G"),
            (number(0.82), "0.820"),
            (number(-0.0), "0"),
            (number(f64::NAN), "NaN"),
            (plain(69.18), "69.2"),
            (plain(f64::NEG_INFINITY), "-∞"),
            (with_symbol(12_300.0, "pkt"), "12.3 kpkt"),
            (with_symbol(0.5, "CPU-s/Gbit"), "0.500 CPU-s/Gbit"),
            (with_symbol(7.0, ""), "7"),
            (count(0), "0"),
            (count(999), "999"),
            (count(519_552), "519,552"),
            (count(u64::MAX), "18,446,744,073,709,551,615"),
            (signed_count(-1310), "-1,310"),
            (signed_count(i64::MIN), "-9,223,372,036,854,775,808"),
            (opt_count(None), MISSING),
            (opt_value(None, Unit::Percent), MISSING),
            (change(94.44, Unit::Percent), "+94.4 %"),
            (change(-12.0, Unit::Percent), "-12 %"),
            (times(9.82), "10×"),
            (times(1.94), "1.9×"),
        ];
        let wrong: Vec<String> = cases
            .iter()
            .filter(|(got, want)| got != want)
            .map(|(got, want)| format!("{got:?}, expected {want:?}"))
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        assert_eq!(change(0.0, Unit::Percent), "0 %");
        assert_eq!(times(f64::INFINITY), "∞×");
    }

    #[test]
    fn human_spelling_differs_from_the_csv_symbol_only_where_chosen() {
        for unit in ALL {
            assert_eq!(Unit::from_symbol(unit.symbol()), Some(unit));
            let differs = unit.human_symbol() != unit.symbol();
            let chosen = matches!(
                unit,
                Unit::PacketsPerSecond | Unit::Microseconds | Unit::Ratio | Unit::Count
            );
            assert_eq!(differs, chosen, "{unit:?}");
        }
        assert_eq!(Unit::from_symbol("pps"), None);
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            /// Any bit pattern, every unit: no panic, and a prefixed figure never reaches
            /// 1000 of its prefix (999.95 k is 1.00 M).
            #[test]
            fn never_panics_and_never_reads_1000_of_a_prefix(bits in any::<u64>()) {
                let v = f64::from_bits(bits);
                for unit in ALL {
                    let s = value(v, unit);
                    prop_assert!(!s.is_empty());
                    if let Some((digits, rest)) = s.split_once(' ') {
                        let prefixed = rest != unit.human_symbol() && rest != "s";
                        if prefixed && !digits.contains('e') {
                            let x: f64 = digits.parse().unwrap_or(f64::NAN);
                            prop_assert!(x.abs() < 1000.0, "{} for {:e} {:?}", s, v, unit);
                        }
                    }
                }
            }
        }
    }
}
