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

/// A count per second, decimal: `1000`, `200k`, `5M`.
pub fn parse_count(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1e3),
        Some((i, 'M')) => (&t[..i], 1e6),
        Some((i, 'G')) => (&t[..i], 1e9),
        _ => (t, 1.0),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a count; expected e.g. 1000, 200k or 5M"))?;
    if !(v.is_finite() && v > 0.0) || v * mult > u64::MAX as f64 {
        return Err(format!("'{text}' must be a positive count"));
    }
    Ok((v * mult).round() as u64)
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

/// A throughput as a person quotes it, to bit/s. An upper-case `B` means bytes (`18MB/s`
/// decimal, `18MiB/s` binary); anything else is bits (`700Mbit`, `700Mb/s`, `1.5Gbit/s`).
pub fn parse_throughput(text: &str) -> Result<f64, String> {
    let bad =
        || format!("'{text}' is not a throughput; expected e.g. 18MB/s, 700Mbit or 1.5Gbit/s");
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (t[..split].trim(), t[split..].trim());
    let value: f64 = num.parse().map_err(|_| bad())?;
    if value <= 0.0 {
        return Err(format!("'{text}' must be greater than zero"));
    }
    if unit.contains('B') {
        let mult = match unit.trim_end_matches("/s") {
            "B" => 1.0,
            "kB" | "KB" => 1e3,
            "MB" => 1e6,
            "GB" => 1e9,
            "KiB" => 1024.0,
            "MiB" => 1024.0 * 1024.0,
            "GiB" => 1024.0 * 1024.0 * 1024.0,
            _ => return Err(bad()),
        };
        return Ok(value * mult * 8.0);
    }
    let unit = unit.to_ascii_lowercase().replace("b/s", "bit");
    match netceil_model::Rate::parse(&format!("{num}{unit}")) {
        Ok(netceil_model::Rate::BitsPerSecond(b)) => Ok(b),
        _ => Err(bad()),
    }
}

/// A link speed: `1G`, `10G`, `40Gbit`, `100M`, `2.5G` (bits per second, decimal).
pub fn parse_link(text: &str) -> Result<f64, String> {
    let t = text.trim().to_ascii_lowercase();
    let t = t
        .trim_end_matches("/s")
        .trim_end_matches("bps")
        .trim_end_matches("bit")
        .trim_end_matches("b");
    match netceil_model::Rate::parse(&format!("{t}bit")) {
        Ok(netceil_model::Rate::BitsPerSecond(b)) => Ok(b),
        _ => Err(format!(
            "'{text}' is not a link speed; expected e.g. 1G, 10G, 40Gbit or 100M"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn throughputs_and_links() {
        assert_eq!(parse_throughput("18MB/s").unwrap(), 144e6);
        assert_eq!(parse_throughput("35 MB/s").unwrap(), 280e6);
        assert_eq!(parse_throughput("1MiB/s").unwrap(), 8.0 * 1_048_576.0);
        assert_eq!(parse_throughput("700Mbit").unwrap(), 700e6);
        assert_eq!(parse_throughput("700Mb/s").unwrap(), 700e6);
        assert_eq!(parse_throughput("1.5Gbit/s").unwrap(), 1.5e9);
        assert!(parse_throughput("fast").is_err());
        assert!(parse_throughput("0MB/s").is_err());
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
