//! Latency bound: a closed request/response loop goes exactly as fast as its round trip.
//!
//! With N requests always in flight (closed loop: each flow sends its next request when the
//! answer arrives), Little's law gives rate = N / mean round trip. When the measured rate holds
//! to that within [`LATENCY_IDENTITY_TOLERANCE`], the round trip set the ceiling: no resource
//! ran out, the loop simply waited. Interrupts, context switches and a busy CPU may be why the
//! round trip is as long as it is, but they act through it, so they are named as alternatives
//! here and the interrupt rule stays silent on such a run. A rate well below N / round trip
//! means time went somewhere else (the client's own work, lost requests waiting out their
//! timeout), and this rule does not fire. Nor does it when several requests in flight queued
//! behind each other (a mean round trip at least N times the fastest): the identity holds for
//! any closed loop, and there the round trip is mostly waiting for whatever serves the
//! requests, which the CPU rules name; more flows would only lengthen the queue. Paced
//! (open-loop) runs are not closed loops.
//!
//! Confidence: floor 0.6, band 0.3; strength: how closely the identity holds (|1 − ratio| at
//! the tolerance → 0, within 2 % → 1); × a sample factor (100 round trips → 0.8, 10 000 → 1).

use netceil_model::{names as n, Finding, Quantity, Resource, Unit};

use crate::ledger::{Class, Entry};

use crate::cause;
use crate::ctx::{advice, finding, ClosedLoop, Ctx, NetActivity, LATENCY_IDENTITY_TOLERANCE};
use crate::stats::ramp;
use netceil_model::fmt;

/// Machine or core busy % from which a busy CPU is named as stretching the round trip.
const BUSY_CPU_PCT: f64 = 90.0;

/// The closed-loop identity holds: the round trip set the rate. In the ledger the round trip
/// is sized as the rate it allows (in flight ÷ mean round trip) against the rate measured;
/// the interrupts, switches and busy CPU that stretch it act through it, so it explains them.
pub fn check(ctx: &Ctx) -> Option<Entry> {
    let f = finding_of(ctx)?;
    let c = ctx.closed_loop()?;
    Some(
        Entry::claim(Class::Ceiling, Resource::RoundTrip, f)
            .sized(
                Quantity::new(
                    c.predicted_tps(),
                    Unit::PerSecond,
                    "transactions/s the round trip allows (in flight ÷ mean round trip)",
                ),
                Quantity::new(c.tps, Unit::PerSecond, "transactions/s measured"),
            )
            .explains_all(&[
                cause::INTERRUPT_BOUND,
                cause::SYSTEM_INTERRUPTS,
                cause::HOT_CPU,
                cause::CPU_BOUND,
            ]),
    )
}

fn finding_of(ctx: &Ctx) -> Option<Finding> {
    if matches!(ctx.net, NetActivity::Absent(_)) {
        return None;
    }
    let c = ctx.closed_loop()?;
    if !c.latency_explains_rate() {
        return None;
    }
    let ratio = c.ratio();
    let predicted = c.predicted_tps();
    let off = (ratio - 1.0).abs();
    let closeness = ramp(off, LATENCY_IDENTITY_TOLERANCE, 0.02);
    let samples = 0.8 + 0.2 * ramp(c.samples as f64, 100.0, 10_000.0);
    let confidence = (0.6 + 0.3 * closeness) * samples;
    let loopback = ctx.loopback_only();
    let requests = |k: u32| {
        if k == 1 {
            "1 request".to_string()
        } else {
            format!("{k} requests")
        }
    };

    let mut f = finding(
        cause::LATENCY_BOUND,
        format!(
            "Round-trip latency set the rate: a closed loop with {} in flight{} completed {} transactions/s, and {} / {} mean round trip = {} transactions/s (measured/predicted {}); only more requests in flight or a shorter round trip raise it.",
            requests(c.in_flight),
            if loopback { " over loopback" } else { "" },
            fmt::number(c.tps),
            c.in_flight,
            fmt::value(c.mean_rtt_us, Unit::Microseconds),
            fmt::number(predicted),
            fmt::number(ratio),
        ),
        confidence,
    );
    evidence(ctx, &c, &mut f);
    alternatives(ctx, &c, loopback, &mut f);
    advise(&c, loopback, &mut f);
    f.next = Some(format!(
        "rerun with --flows {} and --flows {}: while the rate grows with the requests in flight the loop is latency-bound; where it stops growing, whatever the other findings name (a core, the echo) is the next ceiling",
        c.in_flight.saturating_mul(2),
        c.in_flight.saturating_mul(8)
    ));
    Some(f)
}

fn evidence(ctx: &Ctx, c: &ClosedLoop, f: &mut Finding) {
    f.evidence.push(ctx.ev_total(
        "results.transactions_per_s",
        Some((c.tps, Unit::PerSecond)),
        format!(
            "{} transactions/s measured over the run",
            fmt::number(c.tps)
        ),
    ));
    f.evidence.push(ctx.ev_total(
        "results.latency_us.mean", Some((c.mean_rtt_us, Unit::Microseconds)),
        format!(
            "mean round trip {} (median {}) over {} round trips; the identity takes the mean (Little's law)",
            fmt::value(c.mean_rtt_us, Unit::Microseconds),
            fmt::value(c.p50_rtt_us, Unit::Microseconds),
            fmt::number(c.samples as f64)
        ),
    ));
    f.evidence.push(ctx.ev_total(
        "results.closed_loop_in_flight",
        Some((f64::from(c.in_flight), Unit::Count)),
        format!(
            "{} kept in flight: closed loop, one per flow, no --rate",
            if c.in_flight == 1 {
                "1 request".to_string()
            } else {
                format!("{} requests", c.in_flight)
            }
        ),
    ));
    f.evidence.push(ctx.ev_total(
        "latency_identity_ratio",
        Some((c.ratio(), Unit::Ratio)),
        format!(
            "measured {} / predicted {} ({} / {}) = {}",
            fmt::number(c.tps),
            fmt::number(c.predicted_tps()),
            c.in_flight,
            fmt::value(c.mean_rtt_us, Unit::Microseconds),
            fmt::number(c.ratio())
        ),
    ));
    // What the loop spent per transaction outside the measured round trip: the client's own
    // turn-around between an answer and the next request.
    let outside_us = f64::from(c.in_flight) / c.tps * 1e6 - c.mean_rtt_us;
    if outside_us > 0.0 {
        f.evidence.push(ctx.ev_total(
            "client_turnaround_us",
            Some((outside_us, Unit::Microseconds)),
            format!(
                "{} per transaction per flow outside the round trip ({} / {} − {})",
                fmt::value(outside_us, Unit::Microseconds),
                c.in_flight,
                fmt::number(c.tps),
                fmt::value(c.mean_rtt_us, Unit::Microseconds)
            ),
        ));
    }
}

fn alternatives(ctx: &Ctx, c: &ClosedLoop, loopback: bool, f: &mut Finding) {
    let cs = ctx.total_mean(n::CS_PER_S);
    let intr = ctx.total_mean(n::INTR_PER_S);
    if cs.is_some() || intr.is_some() {
        let mut rates = Vec::new();
        if let Some(v) = cs {
            rates.push(format!(
                "{} context switches/s ({} per transaction)",
                fmt::number(v),
                fmt::number(v / c.tps)
            ));
        }
        if let Some(v) = intr {
            rates.push(format!(
                "{} interrupts/s ({} per transaction)",
                fmt::number(v),
                fmt::number(v / c.tps)
            ));
        }
        f.alternatives.push(format!(
            "interrupt/context-switch bound: not the ceiling. {} are what this loop's wake-ups cost; they lengthen each round trip, and the round trip already accounts for the rate",
            rates.join(" and ")
        ));
    }
    let busy = ctx.machine_busy().map(|(b, _)| b);
    let hottest = ctx
        .per_cpu_busy()
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1));
    match (busy, hottest) {
        (Some(b), _) if b >= BUSY_CPU_PCT => f.alternatives.push(format!(
            "CPU: {} busy {}. A closed loop does not run out of CPU by itself; a busy CPU shows up as a longer round trip (each wake-up waits for a core), so more flows may not scale",
            fmt::value(b, Unit::Percent),
            ctx.window_words()
        )),
        (_, Some((cpu, b))) if b >= BUSY_CPU_PCT => f.alternatives.push(format!(
            "CPU: CPU {cpu} was {} busy. A busy core shows up as a longer round trip, not as a separate ceiling",
            fmt::value(b, Unit::Percent)
        )),
        (Some(b), _) => f.alternatives.push(format!(
            "CPU-bound ruled out: the CPU was {} busy",
            fmt::value(b, Unit::Percent)
        )),
        _ => {}
    }
    if loopback {
        f.alternatives.push(
            "NIC limits ruled out: the traffic crossed loopback only, so no NIC, ring or interrupt moderation was on the path".into(),
        );
    }
}

fn advise(c: &ClosedLoop, loopback: bool, f: &mut Finding) {
    f.advice.push(advice(
        format!(
            "more requests in flight: --flows {} (or more)",
            c.in_flight.saturating_mul(4)
        ),
        "the rate grows about in proportion while the round trip holds",
        Some("the round trip itself lengthens once a core or the server saturates"),
    ));
    f.advice.push(advice(
        "pin the client and the server to separate cores (taskset -c, or taskset -pc CPU TID for one thread)",
        "no migrations, and neither side waits for the other to be scheduled off a shared core: a shorter, steadier round trip",
        Some("takes those cores from other work"),
    ));
    // Busy polling polls a NIC's receive queue; loopback has none, so it is not offered there.
    if !loopback {
        f.advice.push(advice(
            "busy polling: sysctl net.core.busy_poll=50 net.core.busy_read=50",
            "a waiting socket polls the device queue instead of sleeping until the packet's interrupt and wake-up",
            Some("burns CPU while waiting"),
        ));
        f.advice.push(advice(
            "interrupt coalescing down on the NIC: ethtool -C IF adaptive-rx off rx-usecs 0",
            "each answer raises its interrupt at once instead of waiting up to rx-usecs",
            Some("more interrupts per packet under heavy load"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    #[test]
    fn closed_loop_on_loopback_is_latency_bound() {
        // 1 / 12.86 µs = 77.8 k/s; 73.4 k/s measured (the loop's own turn-around).
        let run = rr_loopback_run(Some(1), None, 73_400.0, 12.86);
        let f = on(&run, check).expect("latency bound");
        assert_eq!(f.cause, cause::LATENCY_BOUND);
        assert!(f.summary.contains("73.4 k transactions/s"), "{}", f.summary);
        assert!(f.summary.contains("77.8 k"), "{}", f.summary);
        assert!(f.summary.contains("over loopback"), "{}", f.summary);
        let ratio = f
            .evidence
            .iter()
            .find(|e| e.metric == "latency_identity_ratio")
            .expect("ratio evidence");
        assert!((ratio.value.unwrap() - 0.944).abs() < 0.001, "{ratio:?}");
        assert!(f
            .evidence
            .iter()
            .any(|e| e.metric == "results.latency_us.mean" && e.value == Some(12.86)));
        assert!(f.advice[0].knob.contains("--flows"), "{:?}", f.advice);
        assert!(
            f.advice
                .iter()
                .all(|a| !a.knob.contains("ethtool") && !a.knob.contains("busy_poll")),
            "no NIC advice on loopback (busy polling polls a NIC's queue): {:?}",
            f.advice
        );
        assert!(f
            .alternatives
            .iter()
            .any(|a| a.starts_with("interrupt/context-switch bound: not the ceiling")));
        assert!(f.confidence > 0.75, "{}", f.confidence);
        // It is the verdict of the whole analysis, ahead of the interrupt rule.
        let all = crate::analyze(&run);
        assert_eq!(all[0].cause, cause::LATENCY_BOUND, "{all:?}");
        assert!(all.iter().all(|f| f.cause != cause::INTERRUPT_BOUND));
    }

    #[test]
    fn closer_identity_is_more_confident() {
        let close = on(
            &rr_loopback_run(Some(4), None, 4.0 / 50e-6 * 0.99, 50.0),
            check,
        )
        .unwrap();
        let loose = on(
            &rr_loopback_run(Some(4), None, 4.0 / 50e-6 * 0.88, 50.0),
            check,
        )
        .unwrap();
        assert!(
            close.confidence > loose.confidence,
            "{} vs {}",
            close.confidence,
            loose.confidence
        );
    }

    #[test]
    fn across_a_nic_coalescing_advice_is_given() {
        let mut run = rr_loopback_run(Some(1), None, 20_000.0, 48.0);
        crate::testutil::set_target(&mut run, "192.0.2.7:5201");
        let f = on(&run, check).expect("latency bound");
        assert!(!f.summary.contains("loopback"), "{}", f.summary);
        assert!(
            f.advice.iter().any(|a| a.knob.contains("rx-usecs 0"))
                && f.advice.iter().any(|a| a.knob.contains("busy_poll")),
            "{:?}",
            f.advice
        );
    }

    #[test]
    fn open_loop_that_misses_its_rate_is_not_latency_bound() {
        // Paced at 100 k/s, reached 73 k/s: the same figures, but no closed loop.
        let mut run = rr_loopback_run(None, Some(100_000.0), 73_400.0, 12.86);
        if let Some(r) = run.results.as_mut() {
            r.generator.achieved_ratio = Some(0.734);
        }
        assert!(on(&run, check).is_none());
        assert!(crate::analyze(&run)
            .iter()
            .all(|f| f.cause != cause::LATENCY_BOUND));
    }

    #[test]
    fn requests_queued_behind_each_other_are_not_latency_bound() {
        // 16 in flight at 86 k/s: 185 µs mean round trip against 10.4 µs at best, as measured
        // on loopback with both cores busy. The identity holds, but the loop queued.
        let mut run = rr_loopback_run(Some(16), None, 86_151.0, 184.8);
        with_min_latency_us(&mut run, 10.4);
        assert!(on(&run, check).is_none());
        // The same figures with the fastest round trip near the mean: no queue, latency-bound.
        with_min_latency_us(&mut run, 150.0);
        assert!(on(&run, check).is_some());
    }

    #[test]
    fn closed_loop_far_below_its_round_trip_is_not_latency_bound() {
        // 1 / 12.86 µs allows 77.8 k/s; 30 k/s means most of the time went elsewhere.
        let run = rr_loopback_run(Some(1), None, 30_000.0, 12.86);
        assert!(on(&run, check).is_none());
        assert!(crate::analyze(&run)
            .iter()
            .all(|f| f.cause != cause::LATENCY_BOUND));
    }
}
