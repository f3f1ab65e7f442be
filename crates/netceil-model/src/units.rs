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

/// The fastest packet rate a rate may ask: one packet per nanosecond, the resolution of the
/// pacing clock (and above what any host's kernel sends).
pub const MAX_PACKETS_PER_S: f64 = 1e9;
/// The slowest packet (or transaction) rate: one per 1000 s. Slower is not a rate any run
/// or sampling interval netceil takes would see.
pub const MIN_PACKETS_PER_S: f64 = 1e-3;
/// The fastest bit rate: 10 Tbit/s, beyond any host's network I/O (the fastest Ethernet
/// port is 1.6 Tbit/s).
pub const MAX_BITS_PER_S: f64 = 1e13;
/// The slowest bit rate: one bit per second.
pub const MIN_BITS_PER_S: f64 = 1.0;

/// Why a rate string could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RateParseError {
    #[error("empty rate; expected a number such as 200k (packets/s) or 1Gbit (bits/s)")]
    Empty,
    #[error("'{0}' is not a rate; expected a number with an optional k/M/G/T prefix and an optional unit (pps; bit, bps, Kbit, Mbit, Gbit; B/s, MB/s, MiB/s for bytes), e.g. 200k or 1Mbit")]
    Syntax(String),
    #[error("rate '{0}' must be greater than zero")]
    NotPositive(String),
    #[error("rate '{text}' is above {bound}, the fastest rate netceil takes")]
    TooHigh { text: String, bound: Rate },
    #[error("rate '{text}' is below {bound}, the slowest rate netceil takes")]
    TooLow { text: String, bound: Rate },
}

/// A rate prefix: decimal (`k`, `M`, `G`, `T`; `m` is mega too, as iperf3 reads it) or, before
/// `iB`, binary (`KiB`, `MiB`, `GiB`).
fn prefix(rest: &str) -> (f64, &str) {
    let (decimal, binary) = match rest.chars().next() {
        Some('k' | 'K') => (1e3, 1024.0),
        Some('m' | 'M') => (1e6, 1024.0 * 1024.0),
        Some('g' | 'G') => (1e9, 1024.0 * 1024.0 * 1024.0),
        Some('t' | 'T') => (1e12, 1024.0 * 1024.0 * 1024.0 * 1024.0),
        _ => return (1.0, rest),
    };
    let rest = &rest[1..];
    match rest.strip_prefix('i').filter(|u| u.starts_with('B')) {
        Some(bytes) => (binary, bytes),
        None => (decimal, rest),
    }
}

impl Rate {
    /// Parses `200k`, `200kpps`, `1.5M`, `10Mbit`, `1Gbit/s`, `500kbps`, `1G` (packets unless a
    /// unit says bits), and bytes with an upper-case `B` (`18MB/s`, `1MiB/s`, `125MBps`), which
    /// become bits. Packet rates lie within [`MIN_PACKETS_PER_S`]..=[`MAX_PACKETS_PER_S`], bit
    /// rates within [`MIN_BITS_PER_S`]..=[`MAX_BITS_PER_S`].
    pub fn parse(text: &str) -> Result<Rate, RateParseError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(RateParseError::Empty);
        }
        let syntax = || RateParseError::Syntax(t.into());
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
            .unwrap_or(t.len());
        let (num, rest) = t.split_at(split);
        let value: f64 = num.parse().map_err(|_| syntax())?;
        let rest = rest.trim();
        let rest = rest.strip_suffix("/s").unwrap_or(rest).trim_end();
        let (mult, unit) = prefix(rest);
        let is = |names: &[&str]| names.iter().any(|n| unit.eq_ignore_ascii_case(n));
        let rate = if is(&["", "pps", "p"]) {
            Rate::PacketsPerSecond(value * mult)
        } else if matches!(unit, "B" | "Bps") {
            Rate::BitsPerSecond(value * mult * 8.0)
        } else if is(&["bit", "bits"]) || matches!(unit, "bps" | "b") {
            Rate::BitsPerSecond(value * mult)
        } else {
            return Err(syntax());
        };
        rate.within().map_err(|e| match e {
            Bound::NotPositive => RateParseError::NotPositive(t.into()),
            Bound::High(bound) => RateParseError::TooHigh {
                text: t.into(),
                bound,
            },
            Bound::Low(bound) => RateParseError::TooLow {
                text: t.into(),
                bound,
            },
        })
    }

    /// Whether the rate lies within the bounds of its kind (as every rate [`Rate::parse`]
    /// gives does): for rates that come from elsewhere, such as a store.
    pub fn in_bounds(self) -> bool {
        self.within().is_ok()
    }

    /// The rate if it lies within the bounds of its kind.
    fn within(self) -> Result<Rate, Bound> {
        let (v, lo, hi) = match self {
            Rate::PacketsPerSecond(v) => (v, MIN_PACKETS_PER_S, MAX_PACKETS_PER_S),
            Rate::BitsPerSecond(v) => (v, MIN_BITS_PER_S, MAX_BITS_PER_S),
        };
        let same = |b: f64| match self {
            Rate::PacketsPerSecond(_) => Rate::PacketsPerSecond(b),
            Rate::BitsPerSecond(_) => Rate::BitsPerSecond(b),
        };
        if v.is_nan() || v <= 0.0 {
            Err(Bound::NotPositive)
        } else if v > hi {
            Err(Bound::High(same(hi)))
        } else if v < lo {
            Err(Bound::Low(same(lo)))
        } else {
            Ok(self)
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

/// Which bound a rate broke.
enum Bound {
    NotPositive,
    High(Rate),
    Low(Rate),
}

/// `200kpps`, `1.5Mpps`, `40Gbit/s`, `0.001pps`: text [`Rate::parse`] reads back to the same
/// rate, bit for bit (a prefix is used only where it divides the value exactly).
impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (v, unit) = match *self {
            Rate::PacketsPerSecond(v) => (v, "pps"),
            Rate::BitsPerSecond(v) => (v, "bit/s"),
        };
        let (scaled, prefix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
            .into_iter()
            .map(|(m, p)| (v / m, m, p))
            .find(|&(s, m, _)| s.abs() >= 1.0 && s * m == v)
            .map_or((v, ""), |(s, _, p)| (s, p));
        write!(f, "{scaled}{prefix}{unit}")
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
    fn bytes_are_eight_bits_and_bounds_are_named() {
        assert_eq!(Rate::parse("18MB/s"), Ok(Rate::BitsPerSecond(144e6)));
        assert_eq!(Rate::parse("125MBps"), Ok(Rate::BitsPerSecond(1e9)));
        assert_eq!(
            Rate::parse("1MiB/s"),
            Ok(Rate::BitsPerSecond(8.0 * 1_048_576.0))
        );
        assert_eq!(Rate::parse("1.6Tbit"), Ok(Rate::BitsPerSecond(1.6e12)));
        let e = Rate::parse("999999999999").unwrap_err();
        assert!(matches!(e, RateParseError::TooHigh { .. }), "{e:?}");
        assert!(e.to_string().contains("1Gpps"), "{e}");
        let e = Rate::parse("20Tbit").unwrap_err();
        assert!(e.to_string().contains("10Tbit/s"), "{e}");
        assert!(matches!(
            Rate::parse("1e-300"),
            Err(RateParseError::TooLow { .. })
        ));
        assert!(matches!(
            Rate::parse("1e999"),
            Err(RateParseError::TooHigh { .. })
        ));
        assert_eq!(Rate::PacketsPerSecond(200e3).to_string(), "200kpps");
        assert_eq!(Rate::BitsPerSecond(40e9).to_string(), "40Gbit/s");
        assert_eq!(Rate::PacketsPerSecond(0.001).to_string(), "0.001pps");
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

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        fn in_bounds() -> impl Strategy<Value = Rate> {
            prop_oneof![
                (MIN_PACKETS_PER_S..=MAX_PACKETS_PER_S).prop_map(Rate::PacketsPerSecond),
                (MIN_BITS_PER_S..=MAX_BITS_PER_S).prop_map(Rate::BitsPerSecond),
                // Round values, where a prefix divides exactly.
                (1u64..=1_000_000, 0usize..4).prop_map(|(n, p)| Rate::PacketsPerSecond(
                    (n as f64 * [1.0, 1e3, 1e6, 1e9][p]).min(MAX_PACKETS_PER_S)
                )),
                (1u64..=1_000_000, 0usize..5).prop_map(|(n, p)| Rate::BitsPerSecond(
                    (n as f64 * [1.0, 1e3, 1e6, 1e9, 1e12][p]).min(MAX_BITS_PER_S)
                )),
            ]
        }

        proptest! {
            #[test]
            fn never_panics(text in "\\PC{0,40}") {
                let _ = Rate::parse(&text);
            }

            #[test]
            fn never_panics_on_rate_like_text(
                text in "[-+]?[0-9.e]{0,30} ?[kKmMgGtTi]{0,2}(pps|bit|bits|bps|B|Bps|b|p)?(/s)?"
            ) {
                if let Ok(r) = Rate::parse(&text) {
                    prop_assert!(r.within().is_ok());
                }
            }

            #[test]
            fn reads_back_its_own_text(rate in in_bounds()) {
                prop_assert_eq!(Rate::parse(&rate.to_string()), Ok(rate));
            }

            #[test]
            fn refuses_what_is_out_of_bounds(
                factor in 1.000_001f64..1e290,
                bits in any::<bool>(),
            ) {
                let (hi, lo, unit) = if bits {
                    (MAX_BITS_PER_S, MIN_BITS_PER_S, "bit")
                } else {
                    (MAX_PACKETS_PER_S, MIN_PACKETS_PER_S, "pps")
                };
                let high = format!("{}{unit}", hi * factor);
                let is_high = matches!(Rate::parse(&high), Err(RateParseError::TooHigh { .. }));
                prop_assert!(is_high, "{}", high);
                let low = format!("{}{unit}", lo / factor);
                let is_low = matches!(Rate::parse(&low), Err(RateParseError::TooLow { .. }));
                prop_assert!(is_low, "{}", low);
            }
        }
    }
}
