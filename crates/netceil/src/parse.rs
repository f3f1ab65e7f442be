//! Parsers for flag values: durations, sizes and labels. Each error says what was expected.

use netceil_model::{Rate, RateParseError};
use std::time::Duration;

pub use netceil_model::duration::{parse_duration_in, Span, LONG, RUN, STEP};

/// The sampler's interval: what `netceil_probe::sampler::SamplerConfig` accepts, 10 ms to 1 h.
pub const SAMPLE: Span = Span {
    min: netceil_probe::sampler::MIN_INTERVAL,
    max: Duration::from_secs(3600),
};
/// A run's length, a trial, a step, a gap: see [`RUN`].
pub fn run_duration(text: &str) -> Result<Duration, String> {
    parse_duration_in(text, RUN)
}

/// A sampling interval: see [`SAMPLE`].
pub fn sample_interval(text: &str) -> Result<Duration, String> {
    parse_duration_in(text, SAMPLE)
}

/// A server's lifetime, a lock profile's window: see [`LONG`].
pub fn long_duration(text: &str) -> Result<Duration, String> {
    parse_duration_in(text, LONG)
}

/// A handshake step's timeout: see [`STEP`].
pub fn step_timeout(text: &str) -> Result<Duration, String> {
    parse_duration_in(text, STEP)
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

/// `HOST:PORT` or `IP:PORT` (`[v6]:PORT`), resolved now to its first address.
/// Port 0 is refused: it names no server.
pub fn parse_host_port(text: &str) -> Result<std::net::SocketAddr, String> {
    let a = resolve_host_port(text)?;
    if a.port() == 0 {
        return Err(format!(
            "'{text}': port 0 names no server; give the port `netceil serve` printed"
        ));
    }
    Ok(a)
}

fn resolve_host_port(text: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(a) = text.parse() {
        return Ok(a);
    }
    if !text.contains(':') {
        return Err(format!(
            "'{text}' has no port; expected HOST:PORT, e.g. far.example:5301"
        ));
    }
    let mut addrs = text
        .to_socket_addrs()
        .map_err(|e| format!("'{text}' is not an address or a host name that resolves: {e}"))?;
    addrs
        .next()
        .ok_or_else(|| format!("'{text}' resolves to no address"))
}

/// A send rate as [`Rate::parse`] reads it (the one rate parser, with its bounds): packets/s
/// (`200k`, `1.5M`) or bits/s (`100Mbit`, `1Gbit/s`, `18MB/s`).
pub fn parse_rate(text: &str) -> Result<Rate, String> {
    Rate::parse(text).map_err(|e| e.to_string())
}

/// Packets (or transactions) per second: `1000`, `200k`, `5M`; a bit rate is refused.
pub fn parse_pps(text: &str) -> Result<f64, String> {
    match parse_rate(text)? {
        Rate::PacketsPerSecond(p) => Ok(p),
        Rate::BitsPerSecond(_) => Err(format!(
            "'{text}' is a bit rate; give packets/s, e.g. 1000, 200k or 5M"
        )),
    }
}

/// A whole number of packets per second (a limit): `1000`, `200k`, `5M`.
pub fn parse_count(text: &str) -> Result<u64, String> {
    match parse_pps(text)?.round() {
        p if p >= 1.0 => Ok(p as u64),
        _ => Err(format!("'{text}': at least 1 packet per second")),
    }
}

/// A bit rate: `700Mbit`, `1.5Gbit/s`, `1Mbit`; an upper-case `B` means bytes (`18MB/s`
/// decimal, `18MiB/s` binary). A packet rate is refused.
pub fn parse_throughput(text: &str) -> Result<f64, String> {
    let bad = || format!("'{text}' is not a bit rate; expected e.g. 18MB/s, 700Mbit or 1.5Gbit/s");
    match Rate::parse(text) {
        Ok(Rate::BitsPerSecond(b)) => Ok(b),
        Ok(Rate::PacketsPerSecond(_)) | Err(RateParseError::Syntax(_) | RateParseError::Empty) => {
            Err(bad())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// A link speed: `1G`, `10G`, `40Gbit`, `100M`, `2.5G`, `1.6T` (bits per second, decimal,
/// when no unit is given).
pub fn parse_link(text: &str) -> Result<f64, String> {
    let t = text.trim();
    // The number as Rate::parse reads it; after it, nothing or only a decimal prefix.
    let unit = t.trim_start_matches(|c: char| c.is_ascii_digit() || ".+-e".contains(c));
    let bare = unit.trim().len() <= 1 && unit.trim().chars().all(|c| "kKmMgGtT".contains(c));
    let t = if bare {
        format!("{t}bit")
    } else {
        t.to_string()
    };
    parse_throughput(&t).map_err(|e| {
        if e.contains("not a bit rate") {
            format!("'{text}' is not a link speed; expected e.g. 1G, 10G, 40Gbit or 100M")
        } else {
            e
        }
    })
}

/// A p99 round-trip bound: `200us`, `1ms`, `1.5ms`, from 1 µs to 10 s; returned in seconds.
pub fn parse_p99(text: &str) -> Result<f64, String> {
    const P99: Span = Span {
        min: Duration::from_micros(1),
        max: Duration::from_secs(10),
    };
    parse_duration_in(text, P99).map(|d| d.as_secs_f64())
}

/// A share of segments as a percentage: `0.1%`, `1 %`, or `0` for none; a fraction 0–1,
/// below 100 %.
pub fn parse_percent_budget(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok().map(|v| v / 100.0),
        None if t.parse::<f64>().ok() == Some(0.0) => Some(0.0),
        None => {
            return Err(format!(
                "'{text}': write a budget as a percentage (0.1%), or 0 for none"
            ))
        }
    };
    match v {
        Some(v) if v.is_finite() && (0.0..1.0).contains(&v) => Ok(v),
        Some(v) if v.is_finite() && v >= 1.0 => Err(format!(
            "'{text}': a budget of {} % is not below 100 %",
            v * 100.0
        )),
        _ => Err(format!(
            "'{text}' is not a percentage from 0 up to 100 %; expected e.g. 0.1%"
        )),
    }
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
    fn p99_bounds_and_retransmit_budgets_parse_or_say_what_was_expected() {
        assert_eq!(parse_p99("200us").unwrap(), 200e-6);
        assert_eq!(parse_p99("1.5ms").unwrap(), 1.5e-3);
        for bad in ["abc", "-1ms", "0us", "1m", ""] {
            assert!(parse_p99(bad).is_err(), "{bad}");
        }
        assert!(parse_p99("abc").unwrap_err().contains("not a duration"));
        assert_eq!(parse_percent_budget("0.1%").unwrap(), 0.001);
        assert_eq!(parse_percent_budget(" 2 % ").unwrap(), 0.02);
        assert_eq!(parse_percent_budget("0").unwrap(), 0.0);
        let e = parse_percent_budget("200%").unwrap_err();
        assert!(e.contains("not below 100 %"), "{e}");
        let e = parse_percent_budget("0.1").unwrap_err();
        assert!(e.contains("as a percentage"), "{e}");
        for bad in ["abc%", "%", "-1%", "nan%", "inf%"] {
            assert!(parse_percent_budget(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn host_ports() {
        assert_eq!(
            parse_host_port("127.0.0.1:5301").unwrap().to_string(),
            "127.0.0.1:5301"
        );
        assert!(parse_host_port("[::1]:5301").unwrap().is_ipv6());
        assert!(parse_host_port("localhost:5301")
            .unwrap()
            .ip()
            .is_loopback());
        for bad in [
            "localhost",
            "not-an-address",
            "x:y",
            "",
            "127.0.0.1:0",
            "[::1]:0",
        ] {
            assert!(parse_host_port(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("1e3"), Ok(1000));
        assert_eq!(parse_count("5M"), Ok(5_000_000));
        assert_eq!(parse_count("200k"), Ok(200_000));
        assert_eq!(parse_count(" 1000 "), Ok(1000));
        assert_eq!(parse_count("1.5k"), Ok(1500));
        for bad in ["", "0", "-3", "x", "5Q", "1e400"] {
            assert!(parse_count(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        let d = run_duration;
        assert_eq!(d("10").unwrap(), Duration::from_secs(10));
        assert_eq!(d("5us").unwrap(), Duration::from_micros(5));
        assert_eq!(d("5µs").unwrap(), Duration::from_micros(5));
        assert_eq!(d("2.5s").unwrap(), Duration::from_millis(2500));
        assert_eq!(d(" .5 ms ").unwrap(), Duration::from_micros(500));
        assert_eq!(d("1500ns").unwrap(), Duration::from_nanos(1500));
        assert_eq!(d("1.5m").unwrap(), Duration::from_secs(90));
        assert_eq!(d("2min").unwrap(), Duration::from_secs(120));
        assert_eq!(d("7d").unwrap(), RUN.max);
        // Exact decimals, no float rounding: 0.1 s is 100 ms to the nanosecond.
        assert_eq!(d("0.1").unwrap(), Duration::from_millis(100));
        assert_eq!(
            d("1.0000000015s").unwrap(),
            Duration::from_nanos(1_000_000_002)
        );
        for bad in [
            "",
            ".",
            "s",
            "1..2s",
            "5 parsecs",
            "+5",
            "1e3s",
            "inf",
            "NaN",
        ] {
            assert!(d(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_out_of_bounds_say_so() {
        let e = run_duration("99999999999999999999s").unwrap_err();
        assert!(e.contains("longer than 7d"), "{e}");
        let e = run_duration("99999999999999999999999999999999999999999999d").unwrap_err();
        assert!(e.contains("longer than 7d"), "{e}");
        let e = run_duration("8d").unwrap_err();
        assert!(e.contains("longer than 7d"), "{e}");
        for negative in ["-5", "-5s", "-0.1ms", "0", "0.0s", "0.4ns"] {
            let e = run_duration(negative).unwrap_err();
            assert!(e.contains("must be positive"), "{negative}: {e}");
        }
        let e = sample_interval("1ms").unwrap_err();
        assert!(e.contains("shorter than 10ms"), "{e}");
        let e = sample_interval("2h").unwrap_err();
        assert!(e.contains("longer than 1h"), "{e}");
        assert_eq!(long_duration("366d").unwrap(), LONG.max);
        assert!(step_timeout("100us")
            .unwrap_err()
            .contains("shorter than 1ms"));
    }

    #[test]
    fn rates_have_bounds() {
        assert_eq!(parse_rate("200k"), Ok(Rate::PacketsPerSecond(200e3)));
        let e = parse_rate("999999999999").unwrap_err();
        assert!(e.contains("above 1Gpps"), "{e}");
        let e = parse_pps("1Mbit").unwrap_err();
        assert!(e.contains("bit rate"), "{e}");
        let e = parse_throughput("1e300GB/s").unwrap_err();
        assert!(e.contains("above 10Tbit/s"), "{e}");
        assert!(parse_count("0.0001").is_err());
        assert_eq!(parse_link("1.6T"), Ok(1.6e12));
        assert_eq!(parse_link("1e9"), Ok(1e9));
        assert!(parse_link("100T").unwrap_err().contains("above 10Tbit/s"));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64").unwrap(), 64);
        assert_eq!(parse_size("128K").unwrap(), 131_072);
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert!(parse_size("big").is_err());
    }

    #[test]
    fn throughputs_and_links() {
        assert_eq!(parse_throughput("18MB/s").unwrap(), 144e6);
        assert_eq!(parse_throughput("35 MB/s").unwrap(), 280e6);
        assert_eq!(parse_throughput("1MiB/s").unwrap(), 8.0 * 1_048_576.0);
        assert_eq!(parse_throughput("700Mbit").unwrap(), 700e6);
        assert_eq!(parse_throughput("700Mb/s").unwrap(), 700e6);
        assert_eq!(parse_throughput("1.5Gbit/s").unwrap(), 1.5e9);
        assert!(parse_throughput("fast").is_err());
        assert!(parse_throughput("0MB/s").is_err());
        assert!(parse_throughput("200k")
            .unwrap_err()
            .contains("not a bit rate"));
        assert_eq!(parse_link("1G").unwrap(), 1e9);
        assert_eq!(parse_link("40Gbit").unwrap(), 40e9);
        assert_eq!(parse_link("100M").unwrap(), 100e6);
        assert!(parse_link("ten").is_err());
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
