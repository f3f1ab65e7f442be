//! Numbers as a person writes them in a sentence: three significant figures, SI prefixes,
//! decimal bit rates (10^9 bit/s = 1 Gbit/s), units always said.

/// `26754.0` → `26.8 k`, `3.5e9` → `3.50 G`, `0.82` → `0.820`.
pub fn si(v: f64) -> String {
    if !v.is_finite() {
        return "?".into();
    }
    let a = v.abs();
    let (scaled, prefix) = if a >= 1e12 {
        (v / 1e12, " T")
    } else if a >= 1e9 {
        (v / 1e9, " G")
    } else if a >= 1e6 {
        (v / 1e6, " M")
    } else if a >= 1e3 {
        (v / 1e3, " k")
    } else {
        (v, "")
    };
    format!("{}{prefix}", sig3(scaled))
}

/// Three significant figures without a prefix: `0.0412`, `14.1`, `241`.
pub fn sig3(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        let decimals = (-a.log10().floor()) as usize + 2;
        format!("{v:.decimals$}")
    }
}

/// A rate of events: `26.8 k/s`.
pub fn per_s(v: f64) -> String {
    format!("{}/s", si(v))
}

/// A bit rate, decimal: `3.50 Gbit/s`.
pub fn bits(v: f64) -> String {
    with_unit(v, "bit/s")
}

/// A packet rate: `3.70 Mpps`.
pub fn pps(v: f64) -> String {
    with_unit(v, "pps")
}

/// `si` with a unit glued to the prefix (`3.50 Gbit/s`) or spaced from a bare number (`12.0 pps`).
fn with_unit(v: f64, unit: &str) -> String {
    let s = si(v);
    if s.ends_with(|c: char| c.is_ascii_alphabetic()) {
        format!("{s}{unit}")
    } else {
        format!("{s} {unit}")
    }
}

/// A percentage of 0–100: `69 %`, `5.9 %`, `0.0041 %`.
pub fn pct(v: f64) -> String {
    let a = v.abs();
    if a >= 10.0 || a == 0.0 {
        format!("{v:.0} %")
    } else {
        format!("{} %", sig2(v))
    }
}

/// Two significant figures: `5.9`, `0.0041`.
pub fn sig2(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 10.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        let decimals = (-a.log10().floor()) as usize + 1;
        format!("{v:.decimals$}")
    }
}

/// Bytes: `1277 B`, `18.0 MB`.
pub fn bytes(v: f64) -> String {
    if v.abs() < 1e4 {
        format!("{v:.0} B")
    } else {
        format!("{}B", si(v))
    }
}

/// Seconds: `14.06 s`, `0.35 s`; below 10 ms with a prefix (`124 µs`, `2.50 ms`), so a
/// small wait never reads as `0.00 s`.
pub fn secs(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0} s")
    } else if a >= 0.01 || a == 0.0 {
        format!("{v:.2} s")
    } else if a >= 1e-3 {
        format!("{:.2} ms", v * 1e3)
    } else if a >= 1e-6 {
        format!("{} µs", sig3(v * 1e6))
    } else {
        format!("{} ns", sig3(v * 1e9))
    }
}

/// A ratio as "about N×": whole numbers from 3× up, one decimal below.
pub fn times(v: f64) -> String {
    if v >= 3.0 {
        format!("{v:.0}×")
    } else {
        format!("{v:.1}×")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_read_like_a_sentence() {
        assert_eq!(si(26754.0), "26.8 k");
        assert_eq!(si(3.5e9), "3.50 G");
        assert_eq!(si(0.82), "0.820");
        assert_eq!(per_s(26754.0), "26.8 k/s");
        assert_eq!(bits(3.5e9), "3.50 Gbit/s");
        assert_eq!(bits(144e6), "144 Mbit/s");
        assert_eq!(bits(0.0), "0 bit/s");
        assert_eq!(pps(3.7e6), "3.70 Mpps");
        assert_eq!(pps(12.0), "12.0 pps");
        assert_eq!(pct(69.18), "69 %");
        assert_eq!(pct(5.857), "5.9 %");
        assert_eq!(pct(0.00409), "0.0041 %");
        assert_eq!(bytes(1277.4), "1277 B");
        assert_eq!(bytes(18e6), "18.0 MB");
        assert_eq!(secs(14.0564), "14.06 s");
        assert_eq!(times(9.82), "10×");
        assert_eq!(times(1.9), "1.9×");
    }
}
