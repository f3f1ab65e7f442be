//! A shaper or policer set the ceiling: a queueing discipline held the traffic at its
//! configured rate.
//!
//! Mechanism: a rate-limiting qdisc (tbf, htb, fq with `maxrate`) dequeues at most its rate; a
//! packet that arrives when the token bucket is empty waits and the qdisc counts an
//! *overlimit*. A policer (a `police` action under the ingress qdisc) drops instead, and the
//! ingress qdisc counts the *drops*. The ingress qdisc counts its bytes and packets before the
//! filters run, so they are what was *offered*; what passed is the offered rate less the
//! dropped share of the packets (drops/s over packets/s, row by row). Either way the rate that
//! passes is flat at the configured rate while the throttle counter rises every interval. Nothing outside the qdisc
//! shows it: the CPU is idle, the sockets do not overflow (the sender blocks on its send
//! buffer while its packets sit in the qdisc), and the interface carries exactly the shaped
//! rate, so without these counters the run looks as if it "just stopped growing".
//!
//! Look-alikes this rule leaves alone:
//! - AQM and FIFO qdiscs (fq_codel, pfifo, pfifo_fast) that drop or requeue because the device
//!   behind them is slower: no overlimits, and no configured rate. That is the device or link
//!   (link rules) or a queue too short (buffer rules).
//! - a shaper that throttled a trickle of other traffic while the workload went elsewhere: the
//!   qdisc must have carried most of the run's throughput;
//! - a shaper the run stayed under: a paced run that got its rate, or throttling in a minority
//!   of intervals (bursts);
//! - bursty throughput through a shaper that is not flat: the rate was not the limit all along.
//!
//! Fires when, over the load rows, a qdisc throttled (overlimits, or drops for an ingress
//! qdisc) in at least half of the rows, carried at least half the run's throughput, and its
//! bit rate varied by at most 15 %. Confidence: floor 0.55, band 0.4; strengths: the share of
//! rows throttled (50 % → 0, 90 % → 1), flatness (CV 15 % → 0, 3 % → 1), the share of the
//! throughput (50 % → 0, 90 % → 1), and, when the configured rate is known, how close the
//! measured rate came to it (15 % off → 0, 2 % → 1); × the data factor.

use netceil_model::{names as n, Finding, Metric, Quantity, Resource, Unit};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::ledger::{Class, Entry};
use crate::stats::{cv, mean, mean_strength, ramp};
use netceil_model::fmt;

/// Share of load rows that must show throttling.
const THROTTLED_ROWS_MIN: f64 = 0.5;
/// Largest coefficient of variation of the passed rate for "held flat".
const FLAT_CV_MAX: f64 = 0.15;
/// Share of the run's throughput the qdisc must have carried.
const SHARE_MIN: f64 = 0.5;

/// One qdisc as the rule sees it over the load rows.
struct Shaped<'a> {
    bits: &'a Metric,
    bits_mean: f64,
    bits_cv: f64,
    /// overlimits/s, or drops/s for a policer.
    throttle_per_s: f64,
    throttled_rows: f64,
    policer: bool,
    /// For a policer: the rate offered to it (its own byte count); `bits_mean` is what passed.
    offered_bits: Option<f64>,
    drops_per_s: Option<f64>,
    backlog_bytes: Option<f64>,
    configured_bits: Option<f64>,
}

/// The run's own throughput, the largest the run knows of: what the qdisc is compared with.
fn workload_bits(ctx: &Ctx) -> Option<f64> {
    let from_results = ctx
        .run
        .results
        .as_ref()
        .map(|r| r.tx_bits_per_s.max(r.rx_app_bits_per_s))
        .filter(|v| *v > 0.0);
    let measured = ctx.throughput().map(|t| t.bits_per_s);
    match (from_results, measured) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn candidate<'a>(ctx: &Ctx<'a>, bits: &'a Metric) -> Option<Shaped<'a>> {
    let policer = bits.id.label(n::LABEL_QDISC) == Some("ingress");
    let throttle = ctx.sibling(
        bits,
        if policer {
            n::QDISC_DROPS_PER_S
        } else {
            n::QDISC_OVERLIMITS_PER_S
        },
    )?;
    let throttles = ctx.values(throttle);
    let (rates, offered_bits) = if policer {
        // Row by row: offered × (1 − dropped packets / offered packets).
        let pps = ctx.sibling(bits, n::QDISC_PPS)?;
        let at = |m: &Metric, i: usize| m.values.get(i).copied().flatten();
        let passed: Vec<f64> = ctx
            .rows
            .clone()
            .filter_map(|i| {
                let (b, p, d) = (at(bits, i)?, at(pps, i)?, at(throttle, i)?);
                (p > 0.0).then(|| b * (1.0 - (d / p).min(1.0)))
            })
            .collect();
        (passed, ctx.mean_of(bits))
    } else {
        (ctx.values(bits), None)
    };
    if throttles.is_empty() || rates.len() < 2 {
        return None;
    }
    let throttled_rows =
        throttles.iter().filter(|v| **v > 0.0).count() as f64 / throttles.len() as f64;
    let bits_mean = mean(&rates)?;
    Some(Shaped {
        bits,
        bits_mean,
        bits_cv: cv(&rates).unwrap_or(f64::INFINITY),
        throttle_per_s: mean(&throttles).unwrap_or(0.0),
        throttled_rows,
        policer,
        offered_bits,
        drops_per_s: ctx
            .sibling(bits, n::QDISC_DROPS_PER_S)
            .and_then(|m| ctx.mean_of(m)),
        backlog_bytes: ctx
            .sibling(bits, n::QDISC_BACKLOG_BYTES)
            .and_then(|m| ctx.mean_of(m)),
        configured_bits: ctx
            .sibling(bits, n::QDISC_RATE_BITS_PER_S)
            .and_then(|m| ctx.mean_of(m))
            .filter(|v| *v > 0.0),
    })
}

fn where_words(m: &Metric) -> String {
    let label = |k| m.id.label(k).unwrap_or("?");
    let ns =
        m.id.label(n::LABEL_NETNS)
            .map(|ns| format!(" in network namespace {ns}"))
            .unwrap_or_default();
    format!(
        "the {} qdisc {} on {}{ns}",
        label(n::LABEL_QDISC),
        label(n::LABEL_HANDLE),
        label(n::LABEL_IFACE)
    )
}

fn tc_prefix(m: &Metric) -> String {
    m.id.label(n::LABEL_NETNS)
        .map(|ns| format!("ip netns exec {ns} "))
        .unwrap_or_default()
}

/// The shaper rule: a rate limiter in the ledger, sized as the rate it passed against its
/// configured rate (or, without one, the flat rate it held). Relieving it lifts the limit
/// until whatever binds next; it explains where loss began, the drops at its own queue, a
/// sender held back behind it, and an unpaced run held by nothing else measured.
pub fn check(ctx: &Ctx) -> Option<Entry> {
    if ctx.rows.is_empty() || ctx.offered_met() {
        return None;
    }
    let total = workload_bits(ctx)?;
    let best = ctx
        .series()
        .by_name(n::QDISC_BITS_PER_S)
        .filter_map(|m| candidate(ctx, m))
        .filter(|s| {
            s.throttled_rows >= THROTTLED_ROWS_MIN
                && s.throttle_per_s > 0.0
                && s.bits_cv <= FLAT_CV_MAX
                && s.bits_mean >= SHARE_MIN * total
        })
        .max_by(|a, b| a.bits_mean.total_cmp(&b.bits_mean))?;
    let share = (best.bits_mean / total).min(1.0);
    let match_ratio = best.configured_bits.map(|c| best.bits_mean / c);
    let strength = mean_strength(&[
        Some(ramp(best.throttled_rows, THROTTLED_ROWS_MIN, 0.9)),
        Some(ramp(best.bits_cv, FLAT_CV_MAX, 0.03)),
        Some(ramp(share, SHARE_MIN, 0.9)),
        match_ratio.map(|r| ramp((r - 1.0).abs(), 0.15, 0.02)),
    ])
    .unwrap_or(0.0);
    let confidence = (0.55 + 0.4 * strength) * ctx.data_factor();
    let f = words(ctx, &best, share, total, match_ratio, confidence);
    let (cap, how) = match best.configured_bits {
        Some(c) => (c, "its configured rate"),
        None => (
            best.bits_mean,
            "the flat rate it held (no configured rate recorded)",
        ),
    };
    // A policer discards what it does not pass: relieving it delivers what was offered.
    let recovered = best
        .offered_bits
        .filter(|o| best.policer && best.bits_mean > 0.0 && *o > best.bits_mean)
        .map(|o| o / best.bits_mean);
    let e = Entry::claim(
        Class::Ceiling,
        Resource::Shaper {
            name: where_words(best.bits),
        },
        f,
    )
    .sized(
        Quantity::new(cap, Unit::BitsPerSecond, how),
        Quantity::new(best.bits_mean, Unit::BitsPerSecond, "what it passed"),
    )
    .scaling()
    .explains_all(&[
        cause::SATURATION,
        cause::BUFFER_DROPS,
        cause::UNNAMED_CEILING,
        cause::GENERATOR_LIMITED,
    ]);
    Some(match recovered {
        Some(r) => e.recovering(r),
        None => e,
    })
}

fn words(
    ctx: &Ctx,
    best: &Shaped,
    share: f64,
    total: f64,
    match_ratio: Option<f64>,
    confidence: f64,
) -> Finding {
    let what = where_words(best.bits);
    let kind = if best.policer { "policer" } else { "shaper" };
    let configured = match (best.configured_bits, match_ratio) {
        (Some(c), Some(r)) => format!(
            ", {} of its configured {}",
            fmt::value(r * 100.0, Unit::Percent),
            fmt::value(c, Unit::BitsPerSecond)
        ),
        _ => String::new(),
    };
    let offered = best
        .offered_bits
        .map(|o| format!(" of {} offered", fmt::value(o, Unit::BitsPerSecond)))
        .unwrap_or_default();
    let throttle_words = if best.policer {
        "packets dropped by the policer"
    } else {
        "packets held back over the rate (overlimits)"
    };
    let mut f = finding(
        cause::SHAPER,
        format!(
            "A {kind} set the ceiling: {what} passed {}{offered}{configured}, flat (±{}) while {}/s {throttle_words} {}; the run got no more than the {kind} let through.",
            fmt::value(best.bits_mean, Unit::BitsPerSecond),
            fmt::value(best.bits_cv * 100.0, Unit::Percent),
            fmt::number(best.throttle_per_s),
            ctx.window_words()
        ),
        confidence,
    );
    f.evidence.push(ctx.ev(
        "bits_cv_pct",
        Some((best.bits_cv * 100.0, Unit::Percent)),
        format!(
            "its rate varied by {} (coefficient of variation)",
            fmt::value(best.bits_cv * 100.0, Unit::Percent)
        ),
    ));
    f.evidence.push(ctx.ev(
        best.bits.id.to_string(), Some((best.offered_bits.unwrap_or(best.bits_mean), Unit::BitsPerSecond)),
        match best.offered_bits {
            Some(o) => format!(
                "{what} was offered {} and passed {} on average (offered less the dropped share of packets), coefficient of variation {}",
                fmt::value(o, Unit::BitsPerSecond),
                fmt::value(best.bits_mean, Unit::BitsPerSecond),
                fmt::value(best.bits_cv * 100.0, Unit::Percent)
            ),
            None => format!(
                "{what} passed {} on average, coefficient of variation {}",
                fmt::value(best.bits_mean, Unit::BitsPerSecond),
                fmt::value(best.bits_cv * 100.0, Unit::Percent)
            ),
        },
    ));
    f.evidence.push(ctx.ev(
        format!(
            "{}{{{}}}",
            if best.policer {
                n::QDISC_DROPS_PER_S
            } else {
                n::QDISC_OVERLIMITS_PER_S
            },
            best.bits
                .id
                .labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        ),
        Some((best.throttle_per_s, Unit::PerSecond)),
        format!(
            "{}/s {throttle_words}, in {} of the load intervals",
            fmt::number(best.throttle_per_s),
            fmt::value(best.throttled_rows * 100.0, Unit::Percent)
        ),
    ));
    if let Some(c) = best.configured_bits {
        f.evidence.push(ctx.ev(
            n::QDISC_RATE_BITS_PER_S,
            Some((c, Unit::BitsPerSecond)),
            format!("configured rate {}", fmt::value(c, Unit::BitsPerSecond)),
        ));
    }
    f.evidence.push(ctx.ev(
        "share",
        Some((share, Unit::Ratio)),
        format!(
            "it carried {} of the run's {}",
            fmt::value(share * 100.0, Unit::Percent),
            fmt::value(total, Unit::BitsPerSecond)
        ),
    ));
    if let Some(d) = best.drops_per_s.filter(|d| *d > 0.0 && !best.policer) {
        f.evidence.push(ctx.ev(
            n::QDISC_DROPS_PER_S,
            Some((d, Unit::PerSecond)),
            format!("{}/s dropped when its queue was full", fmt::number(d)),
        ));
    }
    if let Some(b) = best.backlog_bytes.filter(|b| *b > 0.0) {
        f.evidence.push(ctx.ev(
            n::QDISC_BACKLOG_BYTES,
            Some((b, Unit::Bytes)),
            format!("{} waiting in it on average", fmt::value(b, Unit::Bytes)),
        ));
    }
    let iface = best.bits.id.label(n::LABEL_IFACE).unwrap_or("IF");
    let qkind = best.bits.id.label(n::LABEL_QDISC).unwrap_or("tbf");
    let prefix = tc_prefix(best.bits);
    if best.policer {
        f.advice.push(advice(
            format!("{prefix}tc filter show dev {iface} ingress"),
            "find the police action and raise its rate, or remove it; the throughput rises to the new rate or the next ceiling",
            Some("a policer protects something downstream: ask why it is there before removing it"),
        ));
    } else {
        f.advice.push(advice(
            format!("{prefix}tc qdisc change dev {iface} root {qkind} rate <higher> …"),
            "raise the shaper's rate (for htb, the class rate: tc class change); the throughput follows it until the next ceiling",
            Some("a shaper is usually deliberate (a contract rate, fairness between tenants)"),
        ));
        f.advice.push(advice(
            format!("{prefix}tc qdisc del dev {iface} root"),
            "remove the shaper to measure what the path can do without it",
            None,
        ));
    }
    f.alternatives.push(
        "the link or device: ruled out as the first limit, the qdisc throttled before the device was asked for more"
            .into(),
    );
    f.next = Some(format!(
        "{prefix}tc -s qdisc show dev {iface} (and tc -s class show dev {iface} for htb) shows the configured rates and the throttle counters"
    ));
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use netceil_model::{Results, Series};

    fn qlabels<'a>(kind: &'a str, iface: &'a str) -> Vec<(&'a str, &'a str)> {
        vec![
            (n::LABEL_IFACE, iface),
            (n::LABEL_QDISC, kind),
            (n::LABEL_HANDLE, "8001:"),
        ]
    }

    struct Q<'a> {
        kind: &'a str,
        iface: &'a str,
        bits: f64,
        overlimits: f64,
        drops: f64,
        configured: Option<f64>,
    }

    /// Packets per second of 1400-byte packets at `bits`.
    fn pps_of(bits: f64) -> f64 {
        bits / 8.0 / 1400.0
    }

    fn put_q(s: &mut Series, r: usize, q: &Q, wobble: f64) {
        let l = qlabels(q.kind, q.iface);
        put(s, r, n::QDISC_BITS_PER_S, &l, q.bits * (1.0 + wobble));
        put(s, r, n::QDISC_PPS, &l, pps_of(q.bits * (1.0 + wobble)));
        put(s, r, n::QDISC_OVERLIMITS_PER_S, &l, q.overlimits);
        put(s, r, n::QDISC_DROPS_PER_S, &l, q.drops);
        put(s, r, n::QDISC_BACKLOG_BYTES, &l, 60_000.0);
        if let Some(c) = q.configured {
            put(s, r, n::QDISC_RATE_BITS_PER_S, &l, c);
        }
    }

    fn run_with(q: Q, workload_bits: f64, wobble: f64) -> netceil_model::Run {
        let mut run = live_run(10, |s, r| {
            cpu_row(s, r, &[(2.0, 3.0, 1.0), (1.0, 2.0, 1.0)]);
            put(
                s,
                r,
                n::IFACE_TX_BITS_PER_S,
                &[(n::LABEL_IFACE, q.iface)],
                q.bits,
            );
            put_q(s, r, &q, wobble * noise(r, 1.0));
        });
        run.results = Some(Results {
            duration_s: 10.0,
            tx_packets: 43_000,
            tx_bits_per_s: workload_bits,
            tx_pps: 4300.0,
            ..Default::default()
        });
        run
    }

    fn tbf() -> Q<'static> {
        Q {
            kind: "tbf",
            iface: "veth-a",
            bits: 50e6,
            overlimits: 13_000.0,
            drops: 0.0,
            configured: Some(50e6),
        }
    }

    #[test]
    fn a_tbf_holding_the_run_at_its_rate_is_the_ceiling() {
        let f = on(&run_with(tbf(), 48.7e6, 0.005), check).expect("shaper");
        assert_eq!(f.cause, cause::SHAPER);
        assert!(f.confidence > 0.85, "{}", f.confidence);
        assert!(
            f.summary.contains("tbf qdisc 8001: on veth-a"),
            "{}",
            f.summary
        );
        assert!(
            f.summary.contains("configured 50.0 Mbit/s"),
            "{}",
            f.summary
        );
        assert!(f
            .advice
            .iter()
            .any(|a| a.knob.contains("tc qdisc change dev veth-a")));
    }

    #[test]
    fn an_htb_without_a_readable_rate_still_counts_on_its_throttling() {
        let q = Q {
            kind: "htb",
            configured: None,
            ..tbf()
        };
        let f = on(&run_with(q, 48e6, 0.01), check).expect("shaper");
        assert!(f.confidence > 0.8, "{}", f.confidence);
    }

    #[test]
    fn a_policer_counts_drops_on_the_ingress_qdisc() {
        // 100 Mbit/s offered to the ingress qdisc, half its packets dropped by the police
        // action: 50 Mbit/s passed, which is what the receiver got.
        let offered = 100e6;
        let q = Q {
            kind: "ingress",
            bits: offered,
            overlimits: 0.0,
            drops: pps_of(offered) / 2.0,
            configured: None,
            ..tbf()
        };
        let mut run = run_with(q, 48e6, 0.0);
        if let Some(r) = run.results.as_mut() {
            r.rx_app_bits_per_s = 49e6;
        }
        let f = on(&run, check).expect("policer");
        assert!(
            f.summary.starts_with("A policer set the ceiling"),
            "{}",
            f.summary
        );
        assert!(
            f.summary
                .contains("passed 50.0 Mbit/s of 100 Mbit/s offered"),
            "{}",
            f.summary
        );
        assert!(f.advice[0].knob.contains("ingress"));
        // Without the packet rate the passed share cannot be told: no claim.
        let mut run = run_with(
            Q {
                kind: "ingress",
                bits: offered,
                overlimits: 0.0,
                drops: pps_of(offered) / 2.0,
                configured: None,
                ..tbf()
            },
            48e6,
            0.0,
        );
        run.series.metrics.retain(|m| m.id.name != n::QDISC_PPS);
        assert!(on(&run, check).is_none());
    }

    #[test]
    fn a_policer_that_drops_little_of_a_small_flow_is_not_the_ceiling() {
        // The ingress qdisc carried 5 % of the run and dropped a trickle: not the limit.
        let q = Q {
            kind: "ingress",
            bits: 5e6,
            overlimits: 0.0,
            drops: 3.0,
            configured: None,
            ..tbf()
        };
        assert!(on(&run_with(q, 100e6, 0.01), check).is_none());
    }

    #[test]
    fn an_aqm_qdisc_dropping_without_overlimits_is_not_a_shaper() {
        let q = Q {
            kind: "fq_codel",
            overlimits: 0.0,
            drops: 500.0,
            configured: None,
            ..tbf()
        };
        assert!(on(&run_with(q, 48e6, 0.01), check).is_none());
    }

    #[test]
    fn a_shaper_on_a_trickle_beside_the_workload_is_not_the_ceiling() {
        // The shaped qdisc passed 1 Mbit/s of something else; the workload moved 900 Mbit/s.
        let q = Q {
            bits: 1e6,
            configured: Some(1e6),
            ..tbf()
        };
        assert!(on(&run_with(q, 900e6, 0.005), check).is_none());
    }

    #[test]
    fn throughput_that_is_not_flat_was_not_held_by_the_shaper() {
        assert!(on(&run_with(tbf(), 48e6, 0.6), check).is_none());
    }

    #[test]
    fn throttling_in_a_few_intervals_is_a_burst_not_a_ceiling() {
        let mut run = run_with(tbf(), 48.7e6, 0.005);
        // Overlimits only in 3 of the 10 rows.
        let labels = qlabels("tbf", "veth-a");
        for r in 0..10 {
            put(
                &mut run.series,
                r,
                n::QDISC_OVERLIMITS_PER_S,
                &labels,
                if r < 3 { 500.0 } else { 0.0 },
            );
        }
        assert!(on(&run, check).is_none());
    }

    #[test]
    fn a_paced_run_that_got_its_rate_has_no_shaper_ceiling() {
        let mut run = run_with(tbf(), 48.7e6, 0.005);
        let r = run.results.as_mut().unwrap();
        r.generator.achieved_ratio = Some(1.0);
        r.rx_app_packets = r.tx_packets;
        assert!(on(&run, check).is_none());
    }
}
