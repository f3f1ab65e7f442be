//! Human formatting of measured values: decimal SI units (1 Gbit/s = 10^9 bit/s), as the
//! README states.

/// `159.0 Mbit/s`.
pub fn bits_per_s(v: f64) -> String {
    si(v, "bit/s")
}

/// `310.2 kpps`.
pub fn pps(v: f64) -> String {
    si(v, "pps")
}

/// A value with a decimal SI prefix and 4 significant digits at most.
pub fn si(v: f64, unit: &str) -> String {
    let (scaled, prefix) = match v.abs() {
        a if a >= 1e9 => (v / 1e9, "G"),
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e3 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let sep = if unit.starts_with('/') && prefix.is_empty() {
        ""
    } else {
        " "
    };
    let digits = if scaled.abs() >= 100.0 || (prefix.is_empty() && scaled.fract() == 0.0) {
        0
    } else if scaled.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{scaled:.digits$}{sep}{prefix}{unit}")
}

/// `12,345,678`.
pub fn count(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1.25 %` of `part` in `whole`, or `-` when nothing was sent.
pub fn pct(part: f64, whole: f64) -> String {
    if whole > 0.0 {
        format!("{:.2} %", 100.0 * part / whole)
    } else {
        "-".into()
    }
}

/// Microseconds with sensible precision: `12.3 µs`, `1.25 ms`.
pub fn micros(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(bits_per_s(159_012_345.0), "159 Mbit/s");
        assert_eq!(bits_per_s(1.5e9), "1.50 Gbit/s");
        assert_eq!(pps(310_200.0), "310 kpps");
        assert_eq!(pps(42.0), "42 pps");
        assert_eq!(count(12_345_678), "12,345,678");
        assert_eq!(count(999), "999");
        assert_eq!(pct(1.0, 4.0), "25.00 %");
        assert_eq!(pct(1.0, 0.0), "-");
        assert_eq!(micros(12.34), "12.3 µs");
    }
}
