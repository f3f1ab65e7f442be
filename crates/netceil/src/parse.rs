//! Parsers for flag values: durations, sizes and labels. Each error says what was expected.

use std::time::Duration;

/// `10` (seconds), `2.5s`, `500ms`, `5us`, `5µs`, `1500ns`, `1m`, `1h`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| {
        format!("'{text}' is not a duration; expected e.g. 10, 2.5s, 500ms, 5us, 1500ns")
    })?;
    let secs = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "ns" => value / 1e9,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "'{text}': unknown unit '{other}'; expected ns, us, ms, s, m or h"
            ))
        }
    };
    if !(secs > 0.0 && secs.is_finite()) {
        return Err(format!("'{text}': a duration must be greater than zero"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Bytes: `64`, `1472`, `4K` (4096), `128K`, `1M`, `1G`; K/M/G are binary, as iperf3's -l.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1usize << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1 << 30),
        _ => (t.trim_end_matches(['B', 'b']), 1),
    };
    let n: usize = num.trim().parse().map_err(|_| {
        format!("'{text}' is not a size; expected bytes such as 64, 1472, 4K or 128K")
    })?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("'{text}' is too large"))
}

/// `key=value`.
pub fn parse_label(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!(
            "'{text}' is not a label; expected KEY=VALUE, e.g. nic=msk0"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("5us").unwrap(), Duration::from_micros(5));
        assert_eq!(parse_duration("2.5s").unwrap(), Duration::from_millis(2500));
        assert_eq!(
            parse_duration("1500ns").unwrap(),
            Duration::from_nanos(1500)
        );
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64").unwrap(), 64);
        assert_eq!(parse_size("128K").unwrap(), 131_072);
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert!(parse_size("big").is_err());
    }

    #[test]
    fn labels() {
        assert_eq!(
            parse_label("nic=msk0").unwrap(),
            ("nic".into(), "msk0".into())
        );
        assert!(parse_label("=x").is_err());
        assert!(parse_label("novalue").is_err());
    }
}
