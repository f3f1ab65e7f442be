//! TCP path trouble: retransmissions and duplicate SACKs.
//!
//! A TCP flow's rate is set by its congestion window; loss on the path (or reordering that
//! looks like loss) shrinks it. The sk0 run of SEEDS §1 showed many duplicate ACKs. The rule
//! compares retransmitted with sent segments over the load phase (or the flows' TCP_INFO
//! totals) and reports DSACKs, which say a retransmission was spurious (reordering, not loss).
//!
//! Fires when retransmits are ≥ 0.5 % of segments sent and ≥ 1/s. Confidence: floor 0.4,
//! band 0.5; strength: the retransmit share (0.5 % → 0, 5 % → 1); × data factor.

use netceil_model::{names as n, Finding};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::fmt;
use crate::stats::ramp;

/// The TCP path rule.
pub fn check(ctx: &Ctx) -> Option<Finding> {
    if !ctx.net_possible() && ctx.run.results.is_none() {
        return None;
    }
    let retrans = ctx.total_mean(n::TCP_RETRANS_SEGS_PER_S);
    let out = ctx.total_mean(n::TCP_OUT_SEGS_PER_S);
    let (share, rate, source) = match (retrans, out) {
        (Some(r), Some(o)) if o > 0.0 => (r / o, r, "series"),
        _ => {
            // The flows' own counts: retransmitted segments over segments of ~1448 bytes.
            let res = ctx.run.results.as_ref()?;
            let re: u64 = res.flows.iter().filter_map(|f| f.retransmits).sum();
            let segs = res.tx_bytes as f64 / 1448.0;
            if res.flows.is_empty() || segs < 1.0 {
                return None;
            }
            (
                re as f64 / segs,
                re as f64 / res.duration_s.max(1e-9),
                "flows",
            )
        }
    };
    if share < 0.005 || rate < 1.0 {
        return None;
    }
    let confidence = (0.4 + 0.5 * ramp(share, 0.005, 0.05)) * ctx.data_factor();
    let dsack_in = ctx.total_mean(n::TCP_DSACK_RECV_PER_S).filter(|v| *v > 0.0);
    let dsack_out = ctx.total_mean(n::TCP_DSACK_SENT_PER_S).filter(|v| *v > 0.0);
    let timeouts = ctx.total_mean(n::TCP_TIMEOUTS_PER_S).filter(|v| *v > 0.0);
    let spurious = dsack_in.is_some_and(|d| d >= 0.3 * rate);
    let mut f = finding(
        cause::TCP_PATH,
        format!(
            "TCP lost segments on the path: {} of segments were retransmitted ({}){}, which holds the congestion window down.",
            fmt::pct(share * 100.0),
            fmt::per_s(rate),
            if spurious { "; many came back as duplicate SACKs, so much of it is reordering, not loss" } else { "" }
        ),
        confidence,
    );
    if source == "series" {
        f.evidence.push(ctx.ev(
            n::TCP_RETRANS_SEGS_PER_S,
            Some(rate),
            format!("{} retransmitted", fmt::per_s(rate)),
        ));
        f.evidence.push(ctx.ev(
            n::TCP_OUT_SEGS_PER_S,
            out,
            format!("{} sent", fmt::per_s(out.unwrap_or(0.0))),
        ));
    } else {
        f.evidence.push(ctx.ev_total(
            "results.flows[].retransmits",
            Some(rate),
            format!("{} retransmitted (TCP_INFO)", fmt::per_s(rate)),
        ));
    }
    if let Some(d) = dsack_in {
        f.evidence.push(ctx.ev(
            n::TCP_DSACK_RECV_PER_S,
            Some(d),
            format!("{} duplicate SACKs received", fmt::per_s(d)),
        ));
    }
    if let Some(d) = dsack_out {
        f.evidence.push(ctx.ev(
            n::TCP_DSACK_SENT_PER_S,
            Some(d),
            format!("{} duplicate SACKs sent", fmt::per_s(d)),
        ));
    }
    if let Some(t) = timeouts {
        f.evidence.push(ctx.ev(
            n::TCP_TIMEOUTS_PER_S,
            Some(t),
            format!("{} retransmission timeouts", fmt::per_s(t)),
        ));
    }
    f.advice.push(advice(
        "find the drop: ethtool -S IF and tc -s qdisc on both ends, the switch's counters",
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
        assert!(f.summary.contains("2.0 %"), "{}", f.summary);
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
