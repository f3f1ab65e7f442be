//! Saturation within one run: delivered fell short of offered, and when loss began.
//!
//! This finding says *where* the run saturated (the delivered rate, the moment loss began, the
//! measuring point that lost them); the other rules say *why*. Its confidence is therefore
//! discounted by 0.85 so that an equally sure causal finding ranks above it as the verdict.
//!
//! Offered and delivered come from the workload's totals (sent vs read by the application, and
//! what the interface counted in between) or, without totals, from the `load_tx_pps` and
//! `load_rx_pps` series. Fires at ≥ 1 % shortfall over ≥ 1000 packets. Confidence:
//! (0.5 + 0.4 × ramp(shortfall, 1 % → 10 %)) × 0.85 × data factor for series-only data.

use netceil_model::{names as n, Finding, Quantity, Resource, Unit, WorkloadKind};

use crate::cause;
use crate::ctx::{finding, Ctx};
use crate::ledger::{Class, Entry};
use crate::stats::{cv, mean, present, ramp};
use netceil_model::fmt;

/// Shortfall from which a run counts as saturated.
pub const MIN_SHORTFALL: f64 = 0.01;

/// The first row from which loss stays at ≥ 1 % in at least half the rows that follow.
fn onset(ctx: &Ctx) -> Option<(usize, f64)> {
    let s = ctx.series();
    let tx = s.total(n::LOAD_TX_PPS)?;
    let rx = s.total(n::LOAD_RX_PPS);
    let lost = s.total(n::LOAD_LOST_PER_S);
    let loss_at = |r: usize| -> Option<f64> {
        let t = tx.values.get(r).copied().flatten().filter(|t| *t > 0.0)?;
        if let Some(l) = lost.and_then(|l| l.values.get(r).copied().flatten()) {
            return Some(l / t);
        }
        let d = rx?.values.get(r).copied().flatten()?;
        Some(1.0 - d / t)
    };
    let losses: Vec<Option<f64>> = (0..s.len()).map(loss_at).collect();
    for r in 0..losses.len() {
        if losses[r].is_some_and(|l| l >= MIN_SHORTFALL) {
            let after: Vec<f64> = losses[r..].iter().flatten().copied().collect();
            let lossy = after.iter().filter(|l| **l >= MIN_SHORTFALL).count();
            if lossy * 2 >= after.len() {
                return Some((r, tx.values[r].unwrap_or(0.0)));
            }
        }
    }
    None
}

/// The saturation rule: where the run saturated, a "where" in the ledger that follows the
/// cause when another entry names one.
pub fn check(ctx: &Ctx) -> Option<Entry> {
    let (f, offered, delivered) = measure(ctx)?;
    Some(
        Entry::claim(Class::Where, Resource::Path, f)
            .with_id("delivery")
            .sized(
                Quantity::new(offered, Unit::PacketsPerSecond, "offered"),
                Quantity::new(
                    delivered,
                    Unit::PacketsPerSecond,
                    "delivered to the application",
                ),
            ),
    )
}

fn measure(ctx: &Ctx) -> Option<(Finding, f64, f64)> {
    if ctx
        .run
        .workload
        .as_ref()
        .is_some_and(|w| matches!(w.kind, WorkloadKind::Tcp | WorkloadKind::Rr))
    {
        // Reliable streams do not lose at the application: flow control slows the sender.
        return None;
    }
    let s = ctx.series();
    let results = ctx.run.results.as_ref().filter(|r| r.tx_packets >= 1000);
    let (offered, delivered, shortfall, kernel_share, from_totals) = if let Some(r) = results {
        let sent = r.tx_packets.saturating_sub(r.in_flight_packets).max(1) as f64;
        let got = r.rx_app_packets as f64;
        (
            r.tx_pps,
            r.rx_app_pps,
            1.0 - got / sent,
            r.rx_kernel_packets.map(|k| k as f64 / sent),
            true,
        )
    } else {
        let tx = s.total(n::LOAD_TX_PPS).and_then(|m| ctx.mean_of(m))?;
        let rx = s.total(n::LOAD_RX_PPS).and_then(|m| ctx.mean_of(m))?;
        if tx <= 0.0 {
            return None;
        }
        let packets = ctx.duration_s().map_or(0.0, |d| tx * d);
        if packets < 1000.0 {
            return None;
        }
        (tx, rx, 1.0 - rx / tx, None, false)
    };
    if shortfall < MIN_SHORTFALL {
        return None;
    }
    let mut confidence = (0.5 + 0.4 * ramp(shortfall, MIN_SHORTFALL, 0.1)) * 0.85;
    if !from_totals {
        confidence *= ctx.data_factor();
    }
    let start = onset(ctx);
    let onset_words = start
        .map(|(r, off)| {
            let t0 = if r == 0 { 0.0 } else { s.t_s[r - 1] };
            format!(
                ", beginning at {t0:.0} s with {} offered",
                fmt::value(off, Unit::PacketsPerSecond)
            )
        })
        .unwrap_or_default();
    // The interface counts all its traffic, so 1 − its share is a lower bound on our packets
    // it never saw; the loss is placed by how much of the shortfall that bound covers, not by
    // a fixed margin (a 1 % loss with every packet counted at the interface is after it).
    // With `--to` the count is the far end's interface, and "before it" includes the path.
    let (iface, before) = if results.is_some_and(|r| r.far.is_some()) {
        (
            "the far end's interface",
            "in the path between the hosts, this host's egress or the far NIC",
        )
    } else {
        ("the interface", "its receive queue, the NIC, or on the way")
    };
    let where_words = match kernel_share {
        Some(k) => {
            let unseen = (1.0 - k).max(0.0);
            if unseen < shortfall / 2.0 {
                format!(
                    "; {iface} counted {} of them, so most were lost between the kernel and the application",
                    fmt::value(k.min(1.0) * 100.0, Unit::Percent)
                )
            } else if unseen >= shortfall * 0.9 {
                format!(
                    "; {iface} counted only {}, so they were lost at or before it ({before})",
                    fmt::value(k * 100.0, Unit::Percent)
                )
            } else {
                format!(
                    "; {iface} counted {}: about {} were lost at or before it ({before}), the rest between the kernel and the application",
                    fmt::value(k * 100.0, Unit::Percent),
                    fmt::value(unseen * 100.0, Unit::Percent)
                )
            }
        }
        None => String::new(),
    };
    let mut f = finding(
        cause::SATURATION,
        format!(
            "The receive path saturated at {}: {} of the {} offered reached the application, {} did not{onset_words}{where_words}.",
            fmt::value(delivered, Unit::PacketsPerSecond),
            fmt::value((1.0 - shortfall) * 100.0, Unit::Percent),
            fmt::value(offered, Unit::PacketsPerSecond),
            fmt::value(shortfall * 100.0, Unit::Percent)
        ),
        confidence,
    );
    if from_totals {
        f.evidence.push(ctx.ev_total(
            "results.tx_pps",
            Some((offered, Unit::PacketsPerSecond)),
            format!("offered {}", fmt::value(offered, Unit::PacketsPerSecond)),
        ));
        f.evidence.push(ctx.ev_total(
            "results.rx_app_pps",
            Some((delivered, Unit::PacketsPerSecond)),
            format!(
                "delivered {}",
                fmt::value(delivered, Unit::PacketsPerSecond)
            ),
        ));
    } else {
        f.evidence.push(ctx.ev(
            n::LOAD_TX_PPS,
            Some((offered, Unit::PacketsPerSecond)),
            format!("offered {}", fmt::value(offered, Unit::PacketsPerSecond)),
        ));
        f.evidence.push(ctx.ev(
            n::LOAD_RX_PPS,
            Some((delivered, Unit::PacketsPerSecond)),
            format!(
                "delivered {}",
                fmt::value(delivered, Unit::PacketsPerSecond)
            ),
        ));
    }
    if let Some(k) = kernel_share {
        counted_evidence(ctx, &mut f, iface, k);
    }
    if let Some((r, _)) = start {
        // Offered rising while delivered stays flat: the plateau of a ramp.
        if let (Some(tx), Some(rx)) = (s.total(n::LOAD_TX_PPS), s.total(n::LOAD_RX_PPS)) {
            let off_after = present(&tx.values[r..]);
            let del_after = present(&rx.values[r..]);
            if let (Some(first), Some(last), Some(level)) =
                (off_after.first(), off_after.last(), mean(&del_after))
            {
                if *last >= 1.2 * first && cv(&del_after).is_some_and(|c| c <= 0.1) {
                    f.evidence.push(ctx.ev(
                        n::LOAD_RX_PPS,
                        Some((level, Unit::PacketsPerSecond)),
                        format!(
                            "delivered stayed near {} while offered rose from {} to {}",
                            fmt::value(level, Unit::PacketsPerSecond),
                            fmt::value(*first, Unit::PacketsPerSecond),
                            fmt::value(*last, Unit::PacketsPerSecond)
                        ),
                    ));
                }
            }
        }
    }
    f.next = Some(
        "the other findings say why; `netceil search udp` finds the highest loss-free rate (and the cause above it)".into(),
    );
    Some((f, offered, delivered))
}

/// What the interface counted of the packets offered, and what never reached it.
fn counted_evidence(ctx: &Ctx, f: &mut Finding, iface: &str, k: f64) {
    // Counted beyond the offer (other traffic on the interface) reads as all of it.
    let counted = k.min(1.0) * 100.0;
    f.evidence.push(ctx.ev_total(
        "kernel_share_pct",
        Some((counted, Unit::Percent)),
        format!(
            "{iface} counted {} of the packets offered",
            fmt::value(counted, Unit::Percent)
        ),
    ));
    let unseen = (1.0 - k).max(0.0);
    f.evidence.push(ctx.ev_total(
        "unseen_pct",
        Some((unseen * 100.0, Unit::Percent)),
        format!(
            "{} of the packets offered never reached {iface}",
            fmt::value(unseen * 100.0, Unit::Percent)
        ),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use netceil_model::{Results, Workload};

    fn udp(run: &mut netceil_model::Run) {
        run.workload = Some(Workload {
            kind: WorkloadKind::Udp,
            params: Default::default(),
        });
    }

    #[test]
    fn loss_in_the_totals_is_saturation_with_where() {
        let mut run = live_run(10, |s, r| put(s, r, n::LOAD_RX_PPS, &[], 600e3));
        udp(&mut run);
        run.results = Some(Results {
            duration_s: 10.0,
            tx_packets: 10_000_000,
            tx_pps: 1e6,
            rx_app_packets: 6_000_000,
            rx_app_pps: 600e3,
            rx_kernel_packets: Some(9_990_000),
            ..Default::default()
        });
        let f = on(&run, check).expect("saturation");
        assert!(f.summary.contains("saturated at 600 kpps"), "{}", f.summary);
        assert!(f.summary.contains("60 % of the 1.00 Mpps"), "{}", f.summary);
        assert!(
            f.summary.contains("between the kernel and the application"),
            "{}",
            f.summary
        );
        assert!(f.confidence < 0.8);
    }

    /// Where the loss happened follows from how much of it the interface missed, whatever
    /// its size: 1.3 % lost with every packet counted is after the interface.
    #[test]
    fn the_place_of_the_loss_scales_with_the_loss() {
        let at = |kernel: u64| {
            let mut run = live_run(10, |s, r| put(s, r, n::LOAD_RX_PPS, &[], 98.7e3));
            udp(&mut run);
            run.results = Some(Results {
                duration_s: 10.0,
                tx_packets: 1_000_000,
                tx_pps: 1e5,
                rx_app_packets: 987_000,
                rx_app_pps: 98.7e3,
                rx_kernel_packets: Some(kernel),
                ..Default::default()
            });
            on(&run, check).expect("saturation").summary
        };
        let all_counted = at(1_000_000);
        assert!(
            all_counted.contains("most were lost between the kernel and the application"),
            "{all_counted}"
        );
        let none_counted = at(987_500);
        assert!(
            none_counted.contains(
                "counted only 98.8 %, so they were lost at or before it (its receive queue"
            ),
            "{none_counted}"
        );
        let part = at(992_000);
        assert!(
            part.contains("about 0.800 % were lost at or before it (its receive queue, the NIC, or on the way), the rest between"),
            "{part}"
        );
    }

    #[test]
    fn ramp_with_a_knee_gives_the_onset_and_the_plateau() {
        // Offered rises 100k → 1.5M pps; delivered follows up to 500k, then stays there.
        let mut run = live_run(15, |s, r| {
            let offered = 100e3 * (r + 1) as f64;
            let delivered = offered.min(500e3) + noise(r, 2e3);
            put(s, r, n::LOAD_TX_PPS, &[], offered);
            put(s, r, n::LOAD_RX_PPS, &[], delivered);
        });
        udp(&mut run);
        let f = on(&run, check).expect("saturation");
        assert!(
            f.summary.contains("beginning at 5 s with 600 kpps offered"),
            "{}",
            f.summary
        );
        assert!(
            f.evidence
                .iter()
                .any(|e| e.text.contains("delivered stayed near")),
            "{:?}",
            f.evidence
        );
    }

    #[test]
    fn lossless_run_is_not_saturated() {
        let mut run = live_run(10, |s, r| {
            put(s, r, n::LOAD_TX_PPS, &[], 1e5);
            put(s, r, n::LOAD_RX_PPS, &[], 1e5);
        });
        udp(&mut run);
        assert!(on(&run, check).is_none());
    }
}
