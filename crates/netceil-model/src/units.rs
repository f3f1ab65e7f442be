//! Units are explicit: every metric carries one, and rates given by a user are parsed once here.

use serde::{Deserialize, Serialize};

/// The unit of a metric's values. Rates are per second; bit rates are decimal (10^9 = 1 Gbit/s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    BitsPerSecond,
    BytesPerSecond,
    PacketsPerSecond,
    /// Events per second: interrupts, context switches, softirqs, retransmits…
    PerSecond,
    /// Percent of one CPU (per-CPU metrics) or of all CPUs (totals); 0–100 per CPU.
    Percent,
    /// A fraction 0–1.
    Ratio,
    Seconds,
    Microseconds,
    Bytes,
    /// A plain count or gauge (procs_running, queue length…).
    Count,
}

impl Unit {
    /// The short symbol used in tables and CSV headers.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::BitsPerSecond => "bit/s",
            Unit::BytesPerSecond => "B/s",
            Unit::PacketsPerSecond => "pkt/s",
            Unit::PerSecond => "/s",
            Unit::Percent => "%",
            Unit::Ratio => "ratio",
            Unit::Seconds => "s",
            Unit::Microseconds => "us",
            Unit::Bytes => "B",
            Unit::Count => "count",
        }
    }
}

/// A requested send rate, either in packets per second or in bits per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    PacketsPerSecond(f64),
    BitsPerSecond(f64),
}

/// Why a rate string could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateParseError {
    #[error("empty rate; expected a number such as 200k (packets/s) or 1Gbit (bits/s)")]
    Empty,
    #[error("'{0}' is not a rate; expected a number with an optional k/M/G suffix and an optional unit (pps, bit, bps, Kbit, Mbit, Gbit), e.g. 200k or 1Mbit")]
    Syntax(String),
    #[error("rate '{0}' must be greater than zero")]
    NotPositive(String),
}

impl Rate {
    /// Parses `200k`, `200kpps`, `1.5M`, `10Mbit`, `1Gbit/s`, `500kbps`, `1G` (packets unless a bit unit is given).
    pub fn parse(text: &str) -> Result<Rate, RateParseError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(RateParseError::Empty);
        }
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
            .unwrap_or(t.len());
        // 'e' would swallow nothing useful in units, but guard "1e6" vs unit letters.
        let (num, rest) = t.split_at(split);
        let value: f64 = num.parse().map_err(|_| RateParseError::Syntax(t.into()))?;
        let rest_l = rest.trim().to_ascii_lowercase();
        let rest_l = rest_l.trim_end_matches("/s");
        let (mult, unit) = match rest_l.chars().next() {
            Some('k') => (1e3, &rest_l[1..]),
            Some('m') => (1e6, &rest_l[1..]),
            Some('g') => (1e9, &rest_l[1..]),
            _ => (1.0, rest_l),
        };
        let v = value * mult;
        if !v.is_finite() {
            return Err(RateParseError::Syntax(t.into()));
        }
        if v <= 0.0 {
            return Err(RateParseError::NotPositive(t.into()));
        }
        match unit {
            "" | "pps" | "p" => Ok(Rate::PacketsPerSecond(v)),
            "bit" | "bits" | "bps" | "b" => Ok(Rate::BitsPerSecond(v)),
            _ => Err(RateParseError::Syntax(t.into())),
        }
    }

    /// Packets per second for packets carrying `payload_bytes` of UDP payload.
    /// A bit rate counts payload bits, as iperf3's `-b` does.
    pub fn packets_per_second(self, payload_bytes: usize) -> f64 {
        match self {
            Rate::PacketsPerSecond(p) => p,
            Rate::BitsPerSecond(b) => b / (8.0 * payload_bytes.max(1) as f64),
        }
    }

    /// Payload bits per second for packets carrying `payload_bytes`.
    pub fn bits_per_second(self, payload_bytes: usize) -> f64 {
        match self {
            Rate::PacketsPerSecond(p) => p * 8.0 * payload_bytes as f64,
            Rate::BitsPerSecond(b) => b,
        }
    }
}

/// RFC 2544 frame size of a UDP datagram with this payload: 14 Ethernet + IP + 8 UDP + 4 FCS.
/// The IP header is 20 bytes for IPv4 and 40 for IPv6.
pub fn udp_payload_to_frame(payload: usize, ipv6: bool) -> usize {
    payload + 14 + if ipv6 { 40 } else { 20 } + 8 + 4
}

/// The UDP payload that fills an RFC 2544 frame of `frame` bytes, or `None` if the frame is too
/// small to carry the headers.
pub fn frame_to_udp_payload(frame: usize, ipv6: bool) -> Option<usize> {
    frame.checked_sub(14 + if ipv6 { 40 } else { 20 } + 8 + 4)
}

/// The usable data rate of a bus named like `PCIe1.1x1`, `PCIe 3.0 x8`, `PCIe4x16` or
/// `PCI32/33` (32-bit, 33 MHz), in bit/s after line encoding, with the arithmetic in words.
/// PCIe 1.x and 2.x lose 20 % to 8b/10b encoding; 3.0 and later lose 1.5 % to 128b/130b.
pub fn bus_data_rate(name: &str) -> Option<(f64, String)> {
    let n: String = name
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase();
    if let Some(rest) = n.strip_prefix("pcie") {
        let (gen, lanes) = rest.split_once('x')?;
        let lanes: f64 = lanes.parse().ok().filter(|l: &f64| *l >= 1.0)?;
        let major = gen.split('.').next()?.trim_start_matches("gen");
        let (gt_per_s, encoding, efficiency) = match major {
            "1" => (2.5, "8b/10b", 0.8),
            "2" => (5.0, "8b/10b", 0.8),
            "3" => (8.0, "128b/130b", 128.0 / 130.0),
            "4" => (16.0, "128b/130b", 128.0 / 130.0),
            "5" => (32.0, "128b/130b", 128.0 / 130.0),
            _ => return None,
        };
        let rate = gt_per_s * 1e9 * efficiency * lanes;
        let words = format!(
            "PCIe {gen} x{lanes}: {gt_per_s} GT/s per lane raw, {encoding} encoding leaves {:.2} Gbit/s of data (before packet overhead)",
            rate / 1e9
        );
        return Some((rate, words));
    }
    if let Some(rest) = n.strip_prefix("pci") {
        let (width, mhz) = rest.split_once('/')?;
        let width: f64 = width.parse().ok()?;
        let mhz: f64 = mhz.parse().ok()?;
        let rate = width * mhz * 1e6;
        let words = format!(
            "PCI {width:.0}-bit at {mhz} MHz: {:.2} Gbit/s shared by every device on the bus",
            rate / 1e9
        );
        return Some((rate, words));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_packet_and_bit_rates() {
        assert_eq!(Rate::parse("200k"), Ok(Rate::PacketsPerSecond(200e3)));
        assert_eq!(Rate::parse("1.5Mpps"), Ok(Rate::PacketsPerSecond(1.5e6)));
        assert_eq!(Rate::parse("1Mbit"), Ok(Rate::BitsPerSecond(1e6)));
        assert_eq!(Rate::parse("10Gbit/s"), Ok(Rate::BitsPerSecond(10e9)));
        assert_eq!(Rate::parse("500kbps"), Ok(Rate::BitsPerSecond(500e3)));
        assert_eq!(Rate::parse("100"), Ok(Rate::PacketsPerSecond(100.0)));
    }

    #[test]
    fn rejects_bad_rates() {
        assert!(matches!(
            Rate::parse("0"),
            Err(RateParseError::NotPositive(_))
        ));
        assert!(matches!(
            Rate::parse("-5k"),
            Err(RateParseError::NotPositive(_))
        ));
        assert!(matches!(
            Rate::parse("fast"),
            Err(RateParseError::Syntax(_))
        ));
        assert!(matches!(
            Rate::parse("10Mfoo"),
            Err(RateParseError::Syntax(_))
        ));
        assert!(matches!(Rate::parse(""), Err(RateParseError::Empty)));
    }

    #[test]
    fn bit_rate_to_packets() {
        let r = Rate::parse("1Mbit").unwrap();
        assert!((r.packets_per_second(125) - 1000.0).abs() < 1e-9);
    }

    #[test]
    fn bus_rates() {
        let (r, words) = bus_data_rate("PCIe1.1x1").unwrap();
        assert!((r - 2.0e9).abs() < 1.0, "{r}");
        assert!(words.contains("2.5 GT/s"), "{words}");
        assert!((bus_data_rate("PCIe 3.0 x8").unwrap().0 - 63.015e9).abs() < 1e7);
        assert!((bus_data_rate("PCI32/33").unwrap().0 - 1.056e9).abs() < 1.0);
        assert!(bus_data_rate("USB2").is_none());
        assert!(bus_data_rate("PCIe9x1").is_none());
    }

    #[test]
    fn rfc2544_frame_arithmetic() {
        assert_eq!(udp_payload_to_frame(18, false), 64);
        assert_eq!(frame_to_udp_payload(64, false), Some(18));
        assert_eq!(frame_to_udp_payload(1518, false), Some(1472));
        assert_eq!(frame_to_udp_payload(40, false), None);
        assert_eq!(udp_payload_to_frame(18, true), 84);
    }
}
