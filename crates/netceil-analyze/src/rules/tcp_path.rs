//! TCP path trouble: retransmissions and duplicate SACKs.
//!
//! A TCP flow's rate is set by its congestion window; loss on the path (or reordering that
//! looks like loss) shrinks it. The sk0 run of SEEDS §1 showed many duplicate ACKs. The rule
//! compares retransmitted with sent segments over the load phase (or the flows' TCP_INFO
//! totals) and reports DSACKs, which say a retransmission was spurious (reordering, not loss).
//!
//! Fires when retransmits are ≥ 0.5 % of segments sent and ≥ 1/s. Confidence: floor 0.4,
//! band 0.5; strength: the retransmit share (0.5 % → 0, 5 % → 1); × data factor.

use netceil_model::{names as n, Finding, Resource};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::ledger::{Class, Entry};
use crate::stats::ramp;
use netceil_model::{fmt, Unit};

/// The TCP path rule.
/// Retransmissions in the ledger: errors on the path, a loss that congestion control turns
/// into a lower rate. Explained by nothing measured here, it names the path.
pub fn check(ctx: &Ctx) -> Option<Entry> {
    let f = finding_of(ctx)?;
    Some(
        Entry::claim(
            Class::Loss,
            Resource::TcpFlow {
                limit: "congestion window".into(),
            },
            f,
        )
        .with_id("tcp:retransmits"),
    )
}

/// Retransmits as a share of segments sent, per second, in all, and where they were read.
struct Retrans {
    share: f64,
    rate: Option<f64>,
    count: Option<f64>,
    source: &'static str,
}

/// A share of segments retransmitted from which loss holds a flow's window down at any RTT.
const SHARE_MIN: f64 = 0.005;
/// Below [`SHARE_MIN`], a lower share still matters when the count is large: TCP's rate falls
/// with the square root of the loss rate, so 0.1 % on a long path caps a flow far below the
/// link; this many retransmits in the window are no accident.
const LOW_SHARE_MIN: f64 = 0.0005;
const LOW_SHARE_COUNT_MIN: f64 = 10_000.0;

/// A since-boot snapshot's TCP totals (netstat -s, /proc/net/snmp).
fn since_boot_totals(ctx: &Ctx) -> Option<(f64, f64)> {
    let s = ctx.series();
    if s.len() != 1 || s.interval_s != 0.0 {
        return None;
    }
    let total = |counter: &str| {
        s.by_name(n::SNMP_COUNTER_TOTAL)
            .find(|m| m.id.label("proto") == Some("Tcp") && m.id.label("counter") == Some(counter))
            .and_then(|m| m.values.first().copied().flatten())
    };
    Some((
        total("RetransSegs")?,
        total("OutSegs").filter(|o| *o > 0.0)?,
    ))
}

fn measure(ctx: &Ctx) -> Option<Retrans> {
    let retrans = ctx.total_mean(n::TCP_RETRANS_SEGS_PER_S);
    let out = ctx.total_mean(n::TCP_OUT_SEGS_PER_S);
    if let (Some(r), Some(o)) = (retrans, out) {
        if o > 0.0 {
            return Some(Retrans {
                share: r / o,
                rate: Some(r),
                count: ctx.duration_s().map(|d| r * d),
                source: "series",
            });
        }
    }
    if let Some((re, outs)) = since_boot_totals(ctx) {
        return Some(Retrans {
            share: re / outs,
            rate: None,
            count: Some(re),
            source: "since boot",
        });
    }
    // The flows' own counts: retransmitted segments over segments of ~1448 bytes.
    let res = ctx.run.results.as_ref()?;
    let re: u64 = res.flows.iter().filter_map(|f| f.retransmits).sum();
    let segs = res.tx_bytes as f64 / 1448.0;
    if res.flows.is_empty() || segs < 1.0 {
        return None;
    }
    Some(Retrans {
        share: re as f64 / segs,
        rate: Some(re as f64 / res.duration_s.max(1e-9)),
        count: Some(re as f64),
        source: "flows",
    })
}

/// What loss on the path allows a loss-based flow at its RTT, against what it got.
struct LossBound {
    rtt_s: f64,
    events: f64,
    /// Loss events per segment sent.
    p: f64,
    /// The rate those loss events allow, bit/s.
    cap: f64,
    /// The rate the flows got, bit/s.
    got: f64,
}

/// A segment's payload, bytes (Ethernet MTU 1500 less IPv4 and TCP headers with timestamps).
const MSS: f64 = 1448.0;
/// A loss-based congestion control (Reno, CUBIC) halves or cuts its window once per loss
/// event, which keeps a flow near MSS / RTT × this / √p for p loss events per segment
/// (Mathis et al., 1997).
const MATHIS_C: f64 = 1.22;
/// A flow within this factor of that rate (either way) is held there by the loss: the
/// model is approximate (CUBIC grows faster on long paths, bursts of loss are fewer events).
const NEAR_BOUND: f64 = 2.5;

/// A flow whose rate is what its path's loss allows at its RTT: the window held down by loss
/// events, however small their share. On a short path (a LAN) the same share allows far more
/// than the link, so it cannot be the limit there. A loss event is counted per
/// interval with any retransmit (several drops in one window are one event to the sender),
/// which never counts more events than there were.
fn loss_bound(ctx: &Ctx) -> Option<LossBound> {
    // The model holds for a flow its window limits. On loopback the CPUs move the data, and
    // a round trip inflated by queueing behind them makes the model's rate look near; where
    // tcp_info says how often the window was the limit, it must have been most of the time.
    if ctx.loopback_only()
        || ctx
            .total_mean(n::TCP_CWND_LIMITED_PCT)
            .is_some_and(|pct| pct < 50.0)
    {
        return None;
    }
    let res = ctx.run.results.as_ref()?;
    let s = ctx.series();
    let rtt_us = s
        .total(n::IPERF3_RTT_US)
        .or_else(|| s.by_name(n::IPERF3_RTT_US).next())
        .and_then(|m| ctx.mean_of(m))
        .or_else(|| {
            let rtts: Vec<f64> = res.flows.iter().filter_map(|f| f.rtt_us).collect();
            (!rtts.is_empty()).then(|| rtts.iter().sum::<f64>() / rtts.len() as f64)
        })?;
    let retrans = s
        .total(n::IPERF3_RETRANSMITS_PER_S)
        .or_else(|| s.total(n::TCP_RETRANS_SEGS_PER_S))?;
    // Events, segments and rate over the same rows: the load phase's.
    let events = ctx.values(retrans).iter().filter(|v| **v > 0.0).count() as f64;
    let got = ctx
        .total_mean(n::LOAD_TX_BITS_PER_S)
        .unwrap_or(res.rx_app_bits_per_s.max(res.tx_bits_per_s));
    let segments = got * ctx.duration_s()? / 8.0 / MSS;
    if events < 3.0 || segments < 1.0 || got <= 0.0 || rtt_us <= 0.0 {
        return None;
    }
    let rtt_s = rtt_us / 1e6;
    let p = events / segments;
    let cap = MSS * 8.0 / rtt_s * MATHIS_C / p.sqrt();
    let near = got <= cap * NEAR_BOUND && got >= cap / NEAR_BOUND;
    near.then_some(LossBound {
        rtt_s,
        events,
        p,
        cap,
        got,
    })
}

fn finding_of(ctx: &Ctx) -> Option<Finding> {
    if !ctx.net_possible() && ctx.run.results.is_none() && since_boot_totals(ctx).is_none() {
        return None;
    }
    let m = measure(ctx)?;
    let share = m.share;
    let rate = m.rate.unwrap_or(0.0);
    let by_share = share >= SHARE_MIN && m.rate.is_none_or(|r| r >= 1.0);
    let by_count = share >= LOW_SHARE_MIN && m.count.is_some_and(|c| c >= LOW_SHARE_COUNT_MIN);
    let bound = loss_bound(ctx);
    if !by_share && !by_count && bound.is_none() {
        return None;
    }
    let source = m.source;
    let out = ctx.total_mean(n::TCP_OUT_SEGS_PER_S);
    let confidence = if by_share {
        (0.4 + 0.5 * ramp(share, SHARE_MIN, 0.05)) * ctx.data_factor()
    } else if bound.is_some() {
        // Sized against the RTT: the loss explains the rate the flow got.
        0.6 * ctx.data_factor()
    } else {
        // A low share with a large count: real, but whether it binds depends on the RTT.
        0.4 * ctx.data_factor().max(0.8)
    };
    let dsack_in = ctx.total_mean(n::TCP_DSACK_RECV_PER_S).filter(|v| *v > 0.0);
    let dsack_out = ctx.total_mean(n::TCP_DSACK_SENT_PER_S).filter(|v| *v > 0.0);
    let timeouts = ctx.total_mean(n::TCP_TIMEOUTS_PER_S).filter(|v| *v > 0.0);
    let spurious = dsack_in.is_some_and(|d| d >= 0.3 * rate);
    let mut f = finding(
        cause::TCP_PATH,
        format!(
            "TCP lost segments on the path: {} of segments were retransmitted ({}){}, which holds the congestion window down.",
            fmt::value(share * 100.0, Unit::Percent),
            match (m.rate, m.count) {
                (Some(r), _) => fmt::value(r, Unit::PerSecond),
                (None, Some(c)) => format!("{} since boot", fmt::number(c)),
                _ => String::new(),
            },
            if spurious { "; many came back as duplicate SACKs, so much of it is reordering, not loss" } else { "" }
        ),
        confidence,
    );
    if let Some(b) = &bound {
        f.summary.push_str(&format!(
            " At its {} round trip, {} loss events in {} segments allow a loss-based window about {}; the flow got {}.",
            fmt::value(b.rtt_s, Unit::Seconds),
            fmt::number(b.events),
            fmt::number(b.events / b.p),
            fmt::value(b.cap, Unit::BitsPerSecond),
            fmt::value(b.got, Unit::BitsPerSecond),
        ));
        f.evidence.push(ctx.ev_total(
            "tcp:loss_bound",
            Some((b.cap, Unit::BitsPerSecond)),
            format!(
                "MSS / RTT × {MATHIS_C} / √p with p = {} loss events per segment: {}",
                fmt::number(b.p),
                fmt::value(b.cap, Unit::BitsPerSecond)
            ),
        ));
    }
    if source == "series" {
        f.evidence.push(ctx.ev(
            n::TCP_RETRANS_SEGS_PER_S,
            Some((rate, Unit::PerSecond)),
            format!("{} retransmitted", fmt::value(rate, Unit::PerSecond)),
        ));
        f.evidence.push(ctx.ev(
            n::TCP_OUT_SEGS_PER_S,
            out.map(|v| (v, Unit::PerSecond)),
            format!("{} sent", fmt::value(out.unwrap_or(0.0), Unit::PerSecond)),
        ));
    } else if source == "since boot" {
        f.evidence.push(ctx.ev_total(
            format!("{}{{proto=Tcp,counter=RetransSegs}}", n::SNMP_COUNTER_TOTAL),
            m.count.map(|v| (v, Unit::Count)),
            format!(
                "{} segments retransmitted since boot, {} of those sent",
                fmt::number(m.count.unwrap_or(0.0)),
                fmt::value(share * 100.0, Unit::Percent)
            ),
        ));
    } else {
        f.evidence.push(ctx.ev_total(
            "results.flows[].retransmits",
            Some((rate, Unit::PerSecond)),
            format!(
                "{} retransmitted (the flows' own counts)",
                fmt::value(rate, Unit::PerSecond)
            ),
        ));
    }
    if let Some(d) = dsack_in {
        f.evidence.push(ctx.ev(
            n::TCP_DSACK_RECV_PER_S,
            Some((d, Unit::PerSecond)),
            format!(
                "{} duplicate SACKs received",
                fmt::value(d, Unit::PerSecond)
            ),
        ));
    }
    if let Some(d) = dsack_out {
        f.evidence.push(ctx.ev(
            n::TCP_DSACK_SENT_PER_S,
            Some((d, Unit::PerSecond)),
            format!("{} duplicate SACKs sent", fmt::value(d, Unit::PerSecond)),
        ));
    }
    if let Some(t) = timeouts {
        f.evidence.push(ctx.ev(
            n::TCP_TIMEOUTS_PER_S,
            Some((t, Unit::PerSecond)),
            format!("{} retransmission timeouts", fmt::value(t, Unit::PerSecond)),
        ));
    }
    f.advice.push(advice(
        if ctx.loopback_only() {
            "find the drop: on loopback it is a queue of this host's (tc -s qdisc show dev lo, nstat -az TcpExtTCPBacklogDrop TcpExtTCPRcvQDrop TcpExtTCPOFODrop)"
        } else {
            "find the drop: ethtool -S IF and tc -s qdisc on both ends, the switch's counters"
        },
        "retransmits fall once the dropping queue is found and given room or pacing",
        None,
    ));
    f.advice.push(advice(
        "pace the sender (fq qdisc, or BBR: sysctl net.ipv4.tcp_congestion_control=bbr)",
        "fewer bursts overflowing shallow queues on the path",
        Some("BBR shares unevenly with loss-based flows"),
    ));
    if spurious {
        f.advice.push(advice(
            "tolerate reordering: sysctl net.ipv4.tcp_reordering (RACK is on by default in recent kernels)",
            "fewer spurious retransmits",
            Some("a higher threshold slows the response to real loss"),
        ));
    }
    f.next = Some("ss -ti during the run shows each flow's retransmits, RTT and cwnd".into());
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    fn tcp(retrans: f64, dsack: f64) -> netceil_model::Run {
        live_run(10, |s, r| {
            put(s, r, n::LOAD_RX_BITS_PER_S, &[], 5e8);
            put(s, r, n::TCP_OUT_SEGS_PER_S, &[], 43_000.0);
            put(s, r, n::TCP_RETRANS_SEGS_PER_S, &[], retrans);
            put(s, r, n::TCP_DSACK_RECV_PER_S, &[], dsack);
        })
    }

    #[test]
    fn two_percent_retransmits_is_path_trouble() {
        let f = on(&tcp(860.0, 0.0), check).expect("tcp path");
        assert!(f.summary.contains("2 %"), "{}", f.summary);
        assert!(!f.summary.contains("reordering"));
    }

    #[test]
    fn dsacks_point_at_reordering() {
        let f = on(&tcp(860.0, 700.0), check).unwrap();
        assert!(f.summary.contains("reordering"), "{}", f.summary);
        assert!(f.advice.iter().any(|a| a.knob.contains("tcp_reordering")));
    }

    #[test]
    fn a_clean_path_says_nothing() {
        assert!(on(&tcp(2.0, 0.0), check).is_none());
        assert!(on(&live_run(10, idle_row), check).is_none());
    }
}
