//! The knee across the points of a sweep: the highest offered rate still delivered in full, per
//! packet size, at the kernel and at the application.
//!
//! SEEDS §5 swept packet size × injection interval and counted receive success at two points,
//! the driver and the application; below a size-dependent interval almost everything was lost.
//! Here each part of a Run is one point: its offered rate (the requested rate, else the sent
//! rate), the share delivered to the kernel (`rx_kernel_packets`) and to the application
//! (`rx_app_packets`), and the throughput there. Points are grouped by workload and payload
//! size; in each group, sorted by offered rate, the knee is the last point before the first one
//! that lost more than 1 %. Bit rates are decimal, with the binary (Gibit/s, 2^30) figure beside
//! them from 1 Gibit/s, because published figures often are binary.
//!
//! Confidence: floor 0.5, band 0.4; strength: the share of groups whose knee is bracketed by a
//! lossy point above it; × 0.8 when the groups have fewer than four points on average.

use std::collections::BTreeMap;

use netceil_model::{Finding, Run};

use crate::cause;
use crate::ctx::finding;
use netceil_model::{fmt, Unit};

/// Delivered share from which a point counts as loss-free.
pub const CLEAN: f64 = 0.99;

/// One sweep point.
#[derive(Debug, Clone, PartialEq)]
struct Point {
    offered_pps: f64,
    app_share: f64,
    kernel_share: Option<f64>,
    app_bits: f64,
    kernel_bits: Option<f64>,
}

/// Where delivery was counted.
#[derive(Debug, Clone, Copy)]
enum Level {
    Kernel,
    App,
}

/// The knee of one group at one level.
#[derive(Debug, Clone, PartialEq)]
pub struct Knee {
    /// The highest loss-free offered rate, and the throughput delivered there.
    pub offered_pps: f64,
    pub bits_per_s: f64,
    /// Whether a lossy point above it was seen (else the sweep never found loss).
    pub bracketed: bool,
}

fn knee_of(points: &[Point], level: Level) -> Option<Knee> {
    let share = |p: &Point| match level {
        Level::App => Some(p.app_share),
        Level::Kernel => p.kernel_share,
    };
    let bits = |p: &Point| match level {
        Level::App => p.app_bits,
        Level::Kernel => p.kernel_bits.unwrap_or(p.app_bits),
    };
    let mut last_clean: Option<&Point> = None;
    for p in points {
        if share(p)? >= CLEAN {
            last_clean = Some(p);
        } else {
            return last_clean.map(|k| Knee {
                offered_pps: k.offered_pps,
                bits_per_s: bits(k),
                bracketed: true,
            });
        }
    }
    last_clean.map(|k| Knee {
        offered_pps: k.offered_pps,
        bits_per_s: bits(k),
        bracketed: false,
    })
}

fn size_words(payload: usize) -> String {
    // Whole or half KiB (a multiple of 512: nine trailing zero bits; `is_multiple_of` is newer than our MSRV).
    if payload >= 1024 && payload.trailing_zeros() >= 9 {
        let k = payload as f64 / 1024.0;
        if k.fract() == 0.0 {
            format!("{k:.0} KiB")
        } else {
            format!("{k:.1} KiB")
        }
    } else {
        format!("{payload} B")
    }
}

fn rate_words(pps: f64) -> String {
    if pps >= 10e3 {
        format!(
            "{} (a packet every {})",
            fmt::value(pps, Unit::PacketsPerSecond),
            fmt::value(1e6 / pps, Unit::Microseconds)
        )
    } else {
        fmt::value(pps, Unit::PacketsPerSecond)
    }
}

/// A bit rate in decimal units, with the binary figure beside it from 1 Gibit/s, where
/// published figures (SEEDS §5's) are often binary; below it a second unit only adds noise.
fn bits_words(bits: f64) -> String {
    let gibit = bits / f64::from(1u32 << 30);
    if gibit < 1.0 {
        return fmt::value(bits, Unit::BitsPerSecond);
    }
    format!(
        "{} ({} Gibit/s)",
        fmt::value(bits, Unit::BitsPerSecond),
        fmt::number(gibit)
    )
}

/// The parts' points, grouped by workload kind and payload size.
fn points_by_size(run: &Run) -> BTreeMap<(String, usize), Vec<Point>> {
    let mut groups: BTreeMap<(String, usize), Vec<Point>> = BTreeMap::new();
    for part in &run.parts {
        let Some(r) = part.results.as_ref() else {
            continue;
        };
        if r.tx_packets == 0 || r.duration_s <= 0.0 {
            continue;
        }
        let kind = part
            .workload
            .as_ref()
            .map(|w| format!("{:?}", w.kind))
            .unwrap_or_default();
        let payload = r.payload_bytes.unwrap_or(0);
        let sent = r.tx_packets.saturating_sub(r.in_flight_packets).max(1) as f64;
        let app_bits = if r.rx_app_bits_per_s > 0.0 {
            r.rx_app_bits_per_s
        } else {
            r.rx_app_bytes as f64 * 8.0 / r.duration_s
        };
        groups.entry((kind, payload)).or_default().push(Point {
            offered_pps: r.requested_pps.unwrap_or(r.tx_pps),
            app_share: r.rx_app_packets as f64 / sent,
            kernel_share: r.rx_kernel_packets.map(|k| k as f64 / sent),
            app_bits,
            kernel_bits: r
                .rx_kernel_packets
                .map(|k| k as f64 * payload as f64 * 8.0 / r.duration_s),
        });
    }
    groups
}

/// The knee across a run's parts, when they form a sweep.
pub fn across_parts(run: &Run) -> Option<Finding> {
    let mut groups = points_by_size(run);
    groups.retain(|_, pts| pts.len() >= 2);
    if groups.is_empty() {
        return None;
    }
    let mut lines = Vec::new();
    let mut evidence = Vec::new();
    let mut bracketed = 0;
    let mut total = 0;
    // Per level, the best knee: its throughput, its size and its offered rate.
    let mut best: [Option<(f64, String, f64)>; 2] = [None, None];
    let mut points = 0;
    for ((_, payload), pts) in &mut groups {
        pts.sort_by(|a, b| a.offered_pps.total_cmp(&b.offered_pps));
        points += pts.len();
        let mut per_level = Vec::new();
        for (i, (level, words)) in [(Level::Kernel, "kernel"), (Level::App, "application")]
            .into_iter()
            .enumerate()
        {
            let Some(k) = knee_of(pts, level) else {
                if pts.iter().all(|p| match level {
                    Level::App => true,
                    Level::Kernel => p.kernel_share.is_some(),
                }) {
                    per_level.push(format!(
                        "{words}: lossy already at the lowest rate, {}",
                        rate_words(pts[0].offered_pps)
                    ));
                }
                continue;
            };
            total += 1;
            if k.bracketed {
                bracketed += 1;
            }
            let tail = if k.bracketed {
                ""
            } else {
                " (no loss seen: the knee is above the sweep)"
            };
            per_level.push(format!(
                "{words} up to {} = {}{tail}",
                rate_words(k.offered_pps),
                bits_words(k.bits_per_s)
            ));
            let size = size_words(*payload);
            if best[i].as_ref().is_none_or(|(b, _, _)| k.bits_per_s > *b) {
                best[i] = Some((k.bits_per_s, size.clone(), k.offered_pps));
            }
            evidence.push(netceil_model::Evidence {
                metric: format!("knee.{words}.bits_per_s{{size={payload}}}"),
                window_s: None,
                value: Some(k.bits_per_s),
                unit: Some(netceil_model::Unit::BitsPerSecond),
                text: format!(
                    "{size}: {words} delivered ≥ 99 % up to {} = {}",
                    rate_words(k.offered_pps),
                    bits_words(k.bits_per_s)
                ),
            });
        }
        if !per_level.is_empty() {
            lines.push(format!(
                "{}: {}",
                size_words(*payload),
                per_level.join(", ")
            ));
        }
    }
    if total == 0 {
        return None;
    }
    let strength = f64::from(bracketed) / f64::from(total);
    let few = points < 4 * groups.len();
    let confidence = (0.5 + 0.4 * strength) * if few { 0.8 } else { 1.0 };
    let mut headline = Vec::new();
    for (i, words) in ["at the kernel", "in the application"].iter().enumerate() {
        if let Some((b, size, pps)) = &best[i] {
            headline.push(format!(
                "{} = {} offered {words} ({size})",
                bits_words(*b),
                fmt::value(*pps, Unit::PacketsPerSecond)
            ));
        }
    }
    let mut summary = format!(
        "The knee, per size (the highest offered rate delivered ≥ 99 %): {}. The best throughput at a knee was {}",
        lines.join("; "),
        headline.join(" and ")
    );
    let limits = hardware_limits(run);
    let top = best
        .iter()
        .flatten()
        .map(|(b, _, _)| *b)
        .fold(0.0_f64, f64::max);
    if !limits.is_empty() && top > 0.0 {
        let cmp: Vec<String> = limits
            .iter()
            .map(|(name, bits)| {
                format!(
                    "{} the {name} ({})",
                    fmt::times(top / bits),
                    fmt::value(*bits, Unit::BitsPerSecond)
                )
            })
            .collect();
        summary.push_str(&format!(", {}", cmp.join(" and ")));
    }
    summary.push('.');
    let mut f = finding(cause::KNEE, summary, confidence);
    f.evidence = evidence;
    for (name, bits) in &limits {
        if top > *bits {
            f.alternatives.push(format!(
                "the {name} ({}) is below the knee: with that hardware it binds first",
                fmt::value(*bits, Unit::BitsPerSecond)
            ));
        }
    }
    f.next = Some("sweep finer around each knee, and compare where the kernel and the application knees part: the gap is the cost of reaching the application".into());
    Some(f)
}

/// The link and bus of the run, as annotated: what a knee can be compared with.
fn hardware_limits(run: &Run) -> Vec<(String, f64)> {
    let a = &run.meta.annotations;
    let mut out = Vec::new();
    if let Some(l) = a.link_bits_per_s.filter(|l| *l > 0.0) {
        out.push(("link".to_string(), l));
    }
    if let Some(b) = a.bus_bits_per_s.filter(|b| *b > 0.0) {
        out.push((
            a.bus
                .as_ref()
                .map_or("bus".to_string(), |n| format!("{n} bus")),
            b,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_model::{Results, RunSource, Workload, WorkloadKind};

    fn point(payload: usize, offered: f64, app: f64, kernel: f64) -> Run {
        let mut p = Run::new("p", RunSource::Live);
        p.workload = Some(Workload {
            kind: WorkloadKind::Udp,
            params: Default::default(),
        });
        let tx = (offered * 1.0) as u64;
        p.results = Some(Results {
            duration_s: 1.0,
            payload_bytes: Some(payload),
            tx_packets: tx,
            tx_pps: offered,
            requested_pps: Some(offered),
            rx_app_packets: (tx as f64 * app) as u64,
            rx_app_pps: offered * app,
            rx_app_bits_per_s: offered * app * payload as f64 * 8.0,
            rx_kernel_packets: Some((tx as f64 * kernel) as u64),
            ..Default::default()
        });
        p
    }

    #[test]
    fn knee_is_the_last_clean_point_per_level() {
        let mut run = Run::new("s", RunSource::Live);
        for (off, app, kern) in [
            (100e3, 1.0, 1.0),
            (200e3, 1.0, 1.0),
            (300e3, 0.8, 1.0),
            (400e3, 0.5, 0.9),
        ] {
            run.parts.push(point(1000, off, app, kern));
        }
        let f = across_parts(&run).expect("knee");
        assert!(f.summary.contains("kernel up to 300 kpps"), "{}", f.summary);
        assert!(
            f.summary.contains("application up to 200 kpps"),
            "{}",
            f.summary
        );
        assert!(f.confidence >= 0.9 - 1e-9, "{}", f.confidence);
        // The best knee in bits and in packets, both from the run's figures.
        for quoted in [
            "2.40 Gbit/s (2.24 Gibit/s) = 300 kpps offered at the kernel (1000 B)",
            "1.60 Gbit/s (1.49 Gibit/s) = 200 kpps offered in the application (1000 B)",
        ] {
            assert!(f.summary.contains(quoted), "{quoted}: {}", f.summary);
        }
    }

    #[test]
    fn no_loss_means_the_knee_is_above_the_sweep() {
        let mut run = Run::new("s", RunSource::Live);
        for off in [1e3, 2e3, 3e3] {
            run.parts.push(point(64, off, 1.0, 1.0));
        }
        let f = across_parts(&run).unwrap();
        assert!(
            f.summary.contains("the knee is above the sweep"),
            "{}",
            f.summary
        );
        assert!(f.confidence < 0.5);
    }

    #[test]
    fn a_single_point_is_no_sweep() {
        let mut run = Run::new("s", RunSource::Live);
        run.parts.push(point(64, 1e3, 1.0, 1.0));
        assert!(across_parts(&run).is_none());
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(size_words(1024), "1 KiB");
        assert_eq!(size_words(1536), "1.5 KiB");
        assert_eq!(size_words(18), "18 B");
    }
}
