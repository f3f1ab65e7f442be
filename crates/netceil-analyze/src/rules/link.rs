//! Link, bus and packet-rate ceilings, with the arithmetic shown.
//!
//! SEEDS §2 is the model: "3.7 Mpps × 1500 B ≈ 44 Gbit/s, so why 3.5?". A throughput means
//! little until it is set against what the hardware could carry at that packet size:
//! - the **link**: its speed × counted bytes / wire bytes per packet. On the wire each packet
//!   also carries the preamble 7 + SFD 1 + inter-frame gap 12 + FCS 4 bytes, plus the Ethernet
//!   header 14 and the IP/UDP or IP/TCP headers when the throughput counts payload;
//! - the **bus**, when given (`--bus`), compared as is: its protocol overhead is not modeled;
//! - a **packet rate** seen elsewhere (another part of the same suite, e.g. a small-packet
//!   test): that pps × this run's bytes per packet.
//!
//! The lowest ceiling binds. At ≥ 90 % of it the finding is `link_limit` (confidence 0.5 +
//! 0.45 × ramp(use, 90 % → 98 %)); below, it is `link_headroom` at 0.25: not a cause, but the
//! arithmetic that rules the hardware out and says "something else binds first".

use netceil_model::{names as n, Finding, Quantity, Resource, Run, Unit, WorkloadKind};

use crate::cause;
use crate::ctx::{finding, Ctx, Throughput};
use crate::ledger::{Class, Entry};
use crate::stats::ramp;
use crate::Options;
use netceil_model::fmt;

/// Preamble 7 + SFD 1 + inter-frame gap 12 + FCS 4: what every frame costs on the wire beyond
/// header and payload.
pub const WIRE_OVERHEAD_BYTES: f64 = 24.0;
/// Ethernet header.
pub const ETHERNET_HEADER_BYTES: f64 = 14.0;
/// IPv4 20 + TCP 20 + timestamps 12: the headers of a Linux TCP segment.
pub const TCP_IP_HEADER_BYTES: f64 = 52.0;

/// What the throughput counts, per packet.
#[derive(Debug, Clone, PartialEq)]
struct Layer {
    /// "TCP payload", "UDP payload", "interface bytes".
    name: &'static str,
    /// Counted bytes per packet.
    bytes: f64,
    /// Wire bytes per packet beyond the counted ones.
    overhead: f64,
    /// How the overhead splits, in words.
    overhead_words: String,
    /// The size of the whole IP packet, when known (for the "× 1500 B" form).
    ip_packet: Option<f64>,
}

fn layer(ctx: &Ctx, t: &Throughput) -> Option<Layer> {
    let (frame, _) = ctx.frame_bytes();
    let mtu = frame - 18.0;
    let kind = ctx.run.workload.as_ref().map(|w| w.kind);
    let tcp = |assumed: bool| Layer {
        name: if assumed {
            "TCP payload (full-size segments assumed)"
        } else {
            "TCP payload"
        },
        bytes: mtu - TCP_IP_HEADER_BYTES,
        overhead: TCP_IP_HEADER_BYTES + ETHERNET_HEADER_BYTES + WIRE_OVERHEAD_BYTES,
        overhead_words: "52 IP/TCP + 14 Ethernet header + 4 FCS + 20 preamble, SFD and gap".into(),
        ip_packet: Some(mtu),
    };
    if t.metric.starts_with("iface_") {
        let iface = t
            .metric
            .split("iface=")
            .nth(1)
            .map(|s| s.trim_end_matches('}').to_string());
        let pps = ctx
            .series()
            .by_name(n::IFACE_RX_PPS)
            .chain(ctx.series().by_name(n::IFACE_TX_PPS))
            .filter(|m| m.id.label(n::LABEL_IFACE).map(str::to_string) == iface)
            .filter_map(|m| ctx.mean_of(m))
            .fold(0.0_f64, f64::max);
        let bytes = if pps > 0.0 {
            t.bits_per_s / 8.0 / pps
        } else {
            mtu + ETHERNET_HEADER_BYTES
        };
        return Some(Layer {
            name: "interface bytes",
            bytes,
            overhead: WIRE_OVERHEAD_BYTES,
            overhead_words: "4 FCS + 20 preamble, SFD and gap".into(),
            ip_packet: Some(bytes - ETHERNET_HEADER_BYTES),
        });
    }
    match kind {
        Some(WorkloadKind::Rr) => None,
        Some(WorkloadKind::Udp) => {
            let r = ctx.run.results.as_ref()?;
            let payload = r.payload_bytes? as f64;
            let frame = r.frame_bytes.map_or(payload + 46.0, |f| f as f64);
            Some(Layer {
                name: "UDP payload",
                bytes: payload,
                overhead: frame - payload + 20.0,
                overhead_words: format!(
                    "{:.0} UDP/IP + 14 Ethernet header + 4 FCS + 20 preamble, SFD and gap",
                    frame - payload - 18.0
                ),
                ip_packet: Some(frame - 18.0),
            })
        }
        Some(WorkloadKind::Tcp) => Some(tcp(false)),
        _ => Some(tcp(true)),
    }
}

/// The link speed, and where it came from.
fn link_speed(ctx: &Ctx, t: &Throughput) -> Option<(f64, String)> {
    if let Some(l) = ctx
        .run
        .meta
        .annotations
        .link_bits_per_s
        .filter(|l| *l > 0.0)
    {
        return Some((l, "as given".into()));
    }
    let iface = t
        .metric
        .split("iface=")
        .nth(1)
        .map(|s| s.trim_end_matches('}').to_string());
    let nics = &ctx.run.meta.host.nics;
    let nic = match iface {
        Some(i) => nics.iter().find(|nic| nic.name == i),
        None => {
            let real: Vec<_> = nics
                .iter()
                .filter(|nic| !is_virtual(nic) && nic.speed_mbit.is_some())
                .collect();
            (real.len() == 1).then(|| real[0])
        }
    }?;
    // A veth's 10 Gbit/s or loopback's nothing is a number the driver makes up: no link
    // is ruled in or out on it.
    if is_virtual(nic) {
        return None;
    }
    let mbit = nic.speed_mbit.filter(|s| *s > 0)?;
    Some((
        mbit as f64 * 1e6,
        format!("{} at {mbit} Mbit/s from its driver", nic.name),
    ))
}

/// True for interfaces whose speed is nominal: those the kernel lists under
/// /sys/devices/virtual, except bonds and teams, whose speed sums their real links. Runs
/// recorded before that was noted fall back on the names and drivers of the common virtual
/// devices.
fn is_virtual(nic: &netceil_model::NicInfo) -> bool {
    let aggregate = ["bond", "team"].iter().any(|p| nic.name.starts_with(p));
    if let Some(v) = nic.virtual_device {
        return v && !aggregate;
    }
    const VIRTUAL_DRIVERS: [&str; 8] = [
        "veth", "bridge", "tun", "dummy", "macvlan", "ipvlan", "vxlan", "geneve",
    ];
    crate::ctx::is_loopback_iface(&nic.name)
        || nic
            .driver
            .as_deref()
            .is_some_and(|d| VIRTUAL_DRIVERS.contains(&d))
        || (nic.driver.is_none() && nic.name.starts_with("veth"))
}

/// One ceiling in the counted layer.
struct Ceiling {
    /// "link", "bus", "packet rate".
    kind: &'static str,
    name: String,
    /// "37.7 Gbit/s", with the whole-packet figure where it differs.
    allows: String,
    bits: f64,
    arithmetic: String,
}

fn ceilings(
    ctx: &Ctx,
    t: &Throughput,
    l: &Layer,
    pps_ceiling: Option<(f64, String)>,
) -> Vec<Ceiling> {
    let mut out = Vec::new();
    if let Some((speed, how)) = link_speed(ctx, t) {
        let wire = l.bytes + l.overhead;
        let bits = speed * l.bytes / wire;
        out.push(Ceiling {
            kind: "link",
            name: format!("the {} link", fmt::value(speed, Unit::BitsPerSecond)),
            allows: fmt::value(bits, Unit::BitsPerSecond),
            bits,
            arithmetic: format!(
                "link ({how}): {} × {:.0}/{:.0} ({:.0} B of {} per {:.0} B on the wire: + {}) = {} ({} of {:.0}-B frames)",
                fmt::value(speed, Unit::BitsPerSecond),
                l.bytes,
                wire,
                l.bytes,
                l.name,
                wire,
                l.overhead_words,
                fmt::value(bits, Unit::BitsPerSecond),
                fmt::value(speed / (wire * 8.0), Unit::PacketsPerSecond),
                wire - 20.0
            ),
        });
    }
    let a = &ctx.run.meta.annotations;
    if let Some(bus) = a.bus_bits_per_s.filter(|b| *b > 0.0) {
        let name = a.bus.clone().unwrap_or_else(|| "bus".into());
        out.push(Ceiling {
            kind: "bus",
            name: format!("the {name} bus"),
            allows: fmt::value(bus, Unit::BitsPerSecond),
            bits: bus,
            arithmetic: format!(
                "bus: {name} at {} as given (its protocol overhead not counted)",
                fmt::value(bus, Unit::BitsPerSecond)
            ),
        });
    }
    if let Some((pps, how)) = pps_ceiling {
        let bits = pps * l.bytes * 8.0;
        let whole = l
            .ip_packet
            .filter(|ip| (ip - l.bytes).abs() > 0.01 * ip)
            .map(|ip| {
                format!(
                    " ({} counting whole {:.0}-B IP packets)",
                    fmt::value(pps * ip * 8.0, Unit::BitsPerSecond),
                    ip
                )
            })
            .unwrap_or_default();
        out.push(Ceiling {
            kind: "packet rate",
            name: format!(
                "the {} packet rate",
                fmt::value(pps, Unit::PacketsPerSecond)
            ),
            allows: format!("{}{whole}", fmt::value(bits, Unit::BitsPerSecond)),
            bits,
            arithmetic: format!(
                "packet rate ({how}): {} × {:.0} B × 8 = {}{whole}",
                fmt::value(pps, Unit::PacketsPerSecond),
                l.bytes,
                fmt::value(bits, Unit::BitsPerSecond)
            ),
        });
    }
    out
}

/// The link finding with the binding hardware ceiling's name and rate and the measured rate.
fn evaluate(ctx: &Ctx, pps_ceiling: Option<(f64, String)>) -> Option<(Finding, String, f64, f64)> {
    if !ctx.net_possible() && ctx.run.results.is_none() {
        return None;
    }
    let t = ctx.throughput()?;
    let l = layer(ctx, &t)?;
    let cs = ceilings(ctx, &t, &l, pps_ceiling);
    let binding = cs.iter().min_by(|a, b| a.bits.total_cmp(&b.bits))?;
    let used = t.bits_per_s / binding.bits;
    let pps_here = t.bits_per_s / 8.0 / l.bytes;
    let reached = format!(
        "{} of {} ({} at {:.0} B)",
        fmt::value(t.bits_per_s, Unit::BitsPerSecond),
        l.name,
        fmt::value(pps_here, Unit::PacketsPerSecond),
        l.bytes
    );
    let mut sorted: Vec<&Ceiling> = cs.iter().collect();
    sorted.sort_by(|a, b| a.bits.total_cmp(&b.bits));
    let others: Vec<String> = sorted[1..]
        .iter()
        .map(|c| format!("{} allows {}", c.name, c.allows))
        .collect();
    let others_words = if others.is_empty() {
        String::new()
    } else {
        format!("; {}", others.join(", "))
    };
    let mut f = if used >= 0.9 {
        let confidence = (0.5 + 0.45 * ramp(used, 0.9, 0.98)) * ctx.data_factor();
        finding(
            cause::LINK_LIMIT,
            format!(
                "{} was the ceiling: the run carried {reached}, {} of the {} it allows{others_words}.",
                capitalized(&binding.name),
                fmt::value(used * 100.0, Unit::Percent),
                fmt::value(binding.bits, Unit::BitsPerSecond)
            ),
            confidence,
        )
    } else {
        let subject = match sorted.len() {
            1 => format!("{} did not bind this run", capitalized(&binding.name)),
            2 => format!(
                "Neither the {} nor the {} bound this run",
                sorted[0].kind, sorted[1].kind
            ),
            _ => "No hardware ceiling bound this run".to_string(),
        };
        let allows: Vec<String> = sorted
            .iter()
            .map(|c| format!("{} allows {}", c.name, c.allows))
            .collect();
        let lower = if sorted.len() > 1 {
            format!("the lower ({})", binding.kind)
        } else {
            "it".to_string()
        };
        finding(
            cause::LINK_HEADROOM,
            format!(
                "{subject}: at {:.0} B of {} per packet {}, yet the run reached {reached}, {} of {lower}; something else binds first.",
                l.bytes,
                l.name,
                allows.join(" and "),
                fmt::value(used * 100.0, Unit::Percent)
            ),
            0.25,
        )
    };
    for c in &cs {
        f.evidence.push(ctx.ev_total(
            format!("ceiling.{}", c.name.trim_start_matches("the ")),
            Some((c.bits, Unit::BitsPerSecond)),
            c.arithmetic.clone(),
        ));
    }
    f.evidence.push(ctx.ev(
        t.metric.clone(),
        Some((t.bits_per_s, Unit::BitsPerSecond)),
        format!("measured {}", fmt::value(t.bits_per_s, Unit::BitsPerSecond)),
    ));
    f.evidence.push(ctx.ev_total(
        "bytes_per_packet",
        Some((l.bytes, Unit::Bytes)),
        format!("{:.0} B of {} per packet", l.bytes, l.name),
    ));
    f.evidence.push(ctx.ev(
        "pps_at_that_size",
        Some((pps_here, Unit::PacketsPerSecond)),
        format!(
            "{} at that size: the rate measured over {:.0} B × 8",
            fmt::value(pps_here, Unit::PacketsPerSecond),
            l.bytes
        ),
    ));
    if f.cause == cause::LINK_LIMIT {
        f.alternatives.push("a host-side limit would show as a saturated CPU, drops or a lock: check the other findings".into());
        f.advice.push(crate::ctx::advice(
            "a faster link, or more links (bonding, several NICs)",
            "throughput rises until the host binds",
            Some("a packet-rate ceiling of the host may then bind at small packets"),
        ));
        f.next = Some("repeat at a smaller packet size: if the packet rate holds while bit/s falls, the host's packet rate is next".into());
    } else {
        f.next = Some("look at the other findings (CPU, locks, buffers); a lock profile or per-CPU figures tell what binds below the hardware".into());
    }
    Some((f, binding.name.clone(), binding.bits, t.bits_per_s))
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// The link rule on one run: the binding hardware ceiling sized as the bits it allows
/// against the bits carried. Below 90 % of it the finding is arithmetic that rules the
/// hardware out, noted, never a ceiling.
pub fn check(ctx: &Ctx) -> Option<Entry> {
    let (f, name, allows, carried) = evaluate(ctx, None)?;
    let class = if f.cause == cause::LINK_LIMIT {
        Class::Ceiling
    } else {
        Class::Noted
    };
    Some(
        Entry::claim(class, Resource::Link { name: name.clone() }, f)
            .explains_all(&[cause::SATURATION])
            .sized(
                Quantity::new(allows, Unit::BitsPerSecond, name),
                Quantity::new(carried, Unit::BitsPerSecond, "carried"),
            )
            .scaling(),
    )
}

/// The link rule across a suite's parts: the highest packet rate of one part is a packet
/// ceiling for the others, at their own packet size.
pub fn across_parts(run: &Run) -> Option<Finding> {
    let pps = |p: &Run| p.results.as_ref().map_or(0.0, |r| r.rx_app_pps.max(0.0));
    let (src, max_pps) = run
        .parts
        .iter()
        .enumerate()
        .map(|(i, p)| (i, pps(p)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .filter(|(_, v)| *v > 0.0)?;
    let opts = Options::default();
    let mut best: Option<Finding> = None;
    for (i, part) in run.parts.iter().enumerate() {
        if i == src {
            continue;
        }
        let mut p = part.clone();
        if p.meta.annotations == Default::default() {
            p.meta.annotations = run.meta.annotations.clone();
        }
        if p.meta.host.nics.is_empty() {
            p.meta.host.nics = run.meta.host.nics.clone();
        }
        let ctx = Ctx::new(&p, &opts);
        let how = format!("part {} delivered it", src + 1);
        let Some((mut f, _, _, _)) = evaluate(&ctx, Some((max_pps, how))) else {
            continue;
        };
        f.summary = format!("part {}: {}", i + 1, f.summary);
        if best.as_ref().is_none_or(|b| f.confidence > b.confidence) {
            best = Some(f);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use netceil_model::{NicInfo, Results, Workload};

    fn tcp_run(bits: f64, link: Option<f64>) -> Run {
        let mut run = live_run(10, |s, r| {
            put(
                s,
                r,
                n::LOAD_RX_BITS_PER_S,
                &[],
                bits + noise(r, bits * 0.001),
            )
        });
        run.workload = Some(Workload {
            kind: WorkloadKind::Tcp,
            params: Default::default(),
        });
        run.meta.annotations.link_bits_per_s = link;
        run.meta.host.nics = vec![NicInfo {
            name: "eth0".into(),
            mtu: Some(1500),
            ..Default::default()
        }];
        run
    }

    #[test]
    fn a_full_gigabit_link_is_the_ceiling_with_its_arithmetic() {
        let f = on(&tcp_run(940e6, Some(1e9)), check).expect("link");
        assert_eq!(f.cause, cause::LINK_LIMIT);
        assert!(
            f.summary.contains("99.8 % of the 941 Mbit/s"),
            "{}",
            f.summary
        );
        assert!(
            f.evidence[0].text.contains("1448/1538"),
            "{}",
            f.evidence[0].text
        );
        assert!(
            f.evidence[0].text.contains("81.3 kpps"),
            "{}",
            f.evidence[0].text
        );
        assert!(f.confidence > 0.9);
    }

    #[test]
    fn far_below_the_link_is_headroom_only() {
        let f = on(&tcp_run(144e6, Some(1e9)), check).unwrap();
        assert_eq!(f.cause, cause::LINK_HEADROOM);
        assert!(f.summary.contains("15.3 % of it"), "{}", f.summary);
        assert!(
            f.summary
                .starts_with("The 1.00 Gbit/s link did not bind this run"),
            "{}",
            f.summary
        );
        assert!(f.summary.contains("something else binds first"));
        assert!(f.confidence < 0.3);
    }

    fn with_nic(mut run: Run, nic: NicInfo) -> Run {
        run.meta.host.nics = vec![nic];
        run
    }

    #[test]
    fn a_real_nic_speed_is_a_link() {
        let nic = NicInfo {
            name: "eth0".into(),
            driver: Some("ixgbe".into()),
            speed_mbit: Some(1000),
            virtual_device: Some(false),
            ..Default::default()
        };
        let f = on(&with_nic(tcp_run(940e6, None), nic), check).expect("link");
        assert_eq!(f.cause, cause::LINK_LIMIT);
    }

    #[test]
    fn a_virtual_interface_speed_rules_no_link_in_or_out() {
        for nic in [
            // What the kernel says of a veth: 10000 Mbit/s, under /sys/devices/virtual.
            NicInfo {
                name: "netceil-a0".into(),
                speed_mbit: Some(10_000),
                virtual_device: Some(true),
                ..Default::default()
            },
            // A run recorded before virtual_device existed.
            NicInfo {
                name: "veth3f2a".into(),
                speed_mbit: Some(10_000),
                ..Default::default()
            },
            NicInfo {
                name: "lo".into(),
                speed_mbit: Some(1000),
                ..Default::default()
            },
        ] {
            // Neither "the link is full" at 9.4 Gbit/s nor "far below it" at 50 Mbit/s.
            assert!(on(&with_nic(tcp_run(9.4e9, None), nic.clone()), check).is_none());
            assert!(on(&with_nic(tcp_run(50e6, None), nic), check).is_none());
        }
    }

    #[test]
    fn a_bond_is_virtual_but_its_speed_sums_real_links() {
        let nic = NicInfo {
            name: "bond0".into(),
            speed_mbit: Some(2000),
            virtual_device: Some(true),
            ..Default::default()
        };
        assert!(on(&with_nic(tcp_run(1.9e9, None), nic), check).is_some());
    }

    #[test]
    fn unknown_link_says_nothing() {
        assert!(on(&tcp_run(940e6, None), check).is_none());
        assert!(on(&live_run(10, idle_row), check).is_none());
    }

    #[test]
    fn a_bus_below_the_link_binds() {
        let mut run = tcp_run(1.95e9, Some(10e9));
        run.meta.annotations.bus = Some("PCIe1.1x1".into());
        run.meta.annotations.bus_bits_per_s = Some(2e9);
        let f = on(&run, check).unwrap();
        assert_eq!(f.cause, cause::LINK_LIMIT);
        assert!(
            f.summary.starts_with("The PCIe1.1x1 bus was the ceiling"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn a_small_packet_rate_from_another_part_is_a_packet_ceiling() {
        let mut top = Run::new("t", netceil_model::RunSource::Live);
        top.meta.annotations.link_bits_per_s = Some(10e9);
        top.meta.host.nics = vec![NicInfo {
            name: "eth0".into(),
            mtu: Some(1500),
            ..Default::default()
        }];
        let mut small = live_run(5, |s, r| put(s, r, n::LOAD_RX_PPS, &[], 500e3));
        small.workload = Some(Workload {
            kind: WorkloadKind::Udp,
            params: Default::default(),
        });
        small.results = Some(Results {
            rx_app_pps: 500e3,
            tx_packets: 1,
            duration_s: 5.0,
            ..Default::default()
        });
        top.parts.push(small);
        top.parts.push(tcp_run(5.7e9, None));
        let f = across_parts(&top).expect("packet ceiling");
        assert!(
            f.summary
                .starts_with("part 2: The 500 kpps packet rate was the ceiling"),
            "{}",
            f.summary
        );
    }
}
