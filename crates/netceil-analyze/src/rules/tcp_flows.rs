//! What held the workload's TCP flows, from the kernel's own account of each (sock_diag's
//! `tcp_info`, as `ss -ti` prints it): the receiver's window, the send buffer, or congestion
//! control.
//!
//! Mechanism: while a flow has data to send (`busy` time), the kernel counts the time it was
//! stopped by the receiver's advertised window (`rwnd_limited`) and by its own send buffer
//! (`sndbuf_limited`); the rest of busy time the congestion window held it. A flow limited by
//! the receive window waits for the receiver to read and advertise room (a small receive
//! buffer, or a reader that does not keep up); one limited by its send buffer cannot keep
//! enough data queued to fill the path (a small `tcp_wmem` or SO_SNDBUF against the
//! bandwidth-delay product); one held by congestion control after losses is the path's.
//!
//! What looks the same: an application that sends little (the flow is not busy: then no
//! window held it), and a reader starved of CPU (the window closes because nobody reads: the
//! reader's core is the cause, and the CPU rules explain this entry). Congestion-window time
//! is only named a ceiling when the flows retransmitted: a loss-free flow on a short path is
//! "cwnd-limited" by this count while the CPU sets its rate.
//!
//! Sizing: the limited time as a share of busy time, weighted by each flow's busy time. A
//! ceiling from [`LIMITED_SHARE_MIN`] of busy time while the flows were busy at least
//! [`BUSY_MIN_PCT`] of the time. Confidence: 0.5 + 0.4 × the mean of the limited share
//! (50 % → 0, 95 % → 1) and how busy the flows were (50 % → 0, 95 % → 1), × the data factor.

use netceil_model::{Finding, Metric, Quantity, Resource, Unit};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::fmt;
use crate::ledger::{Class, Entry, Explains};
use crate::stats::{mean_strength, ramp};

/// The flows' aggregate series (sock_diag; names as `ss -ti` prints them).
pub use netceil_model::names::{
    TCP_BUSY_PCT, TCP_CWND_LIMITED_PCT, TCP_FLOWS, TCP_RETRANS_PER_S, TCP_RWND_LIMITED_PCT,
    TCP_SNDBUF_LIMITED_PCT,
};

/// A limit that held the flows at least this share of their busy time is the ceiling.
pub const LIMITED_SHARE_MIN: f64 = 50.0;
/// The flows must have had data to send at least this share of the time (%).
pub const BUSY_MIN_PCT: f64 = 50.0;

/// The aggregate (unlabelled) series of `name`.
fn aggregate<'a>(ctx: &Ctx<'a>, name: &str) -> Option<&'a Metric> {
    ctx.run
        .series
        .metrics
        .iter()
        .find(|m| m.id.name == name && m.id.label(netceil_model::names::LABEL_FLOW).is_none())
}

fn mean_of(ctx: &Ctx, name: &str) -> Option<f64> {
    aggregate(ctx, name).and_then(|m| ctx.mean_of(m))
}

/// The three limits over the load rows, % of busy time.
struct Limits {
    busy: f64,
    rwnd: Option<f64>,
    sndbuf: Option<f64>,
    cwnd: Option<f64>,
    retrans_per_s: Option<f64>,
    flows: Option<f64>,
}

fn measure(ctx: &Ctx) -> Option<Limits> {
    Some(Limits {
        busy: mean_of(ctx, TCP_BUSY_PCT)?,
        rwnd: mean_of(ctx, TCP_RWND_LIMITED_PCT),
        sndbuf: mean_of(ctx, TCP_SNDBUF_LIMITED_PCT),
        cwnd: mean_of(ctx, TCP_CWND_LIMITED_PCT),
        retrans_per_s: mean_of(ctx, TCP_RETRANS_PER_S),
        flows: mean_of(ctx, TCP_FLOWS),
    })
}

/// Which limit held the flows, if one did.
#[derive(Clone, Copy, PartialEq)]
enum Held {
    ReceiveWindow,
    SendBuffer,
    Congestion,
}

fn held(l: &Limits) -> Option<(Held, f64)> {
    if l.busy < BUSY_MIN_PCT {
        return None;
    }
    let lost = l.retrans_per_s.is_some_and(|r| r >= 1.0);
    [
        (Held::ReceiveWindow, l.rwnd),
        (Held::SendBuffer, l.sndbuf),
        (Held::Congestion, l.cwnd.filter(|_| lost)),
    ]
    .into_iter()
    .filter_map(|(h, v)| v.map(|v| (h, v)))
    .filter(|(_, v)| *v >= LIMITED_SHARE_MIN)
    .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The TCP flow rule: the limit that held the workload's flows most of their busy time.
pub fn check(ctx: &Ctx) -> Option<Entry> {
    if ctx.rows.is_empty() || ctx.offered_met() {
        return None;
    }
    let l = measure(ctx)?;
    let (h, share) = held(&l)?;
    let strength = mean_strength(&[
        Some(ramp(share, LIMITED_SHARE_MIN, 95.0)),
        Some(ramp(l.busy, BUSY_MIN_PCT, 95.0)),
    ])
    .unwrap_or(0.0);
    let confidence = (0.5 + 0.4 * strength) * ctx.data_factor();
    let (cause, limit, f) = match h {
        Held::ReceiveWindow => (
            cause::TCP_RECEIVE_WINDOW,
            "receive window",
            window_words(ctx, &l, share, confidence),
        ),
        Held::SendBuffer => (
            cause::TCP_SEND_BUFFER,
            "send buffer",
            sndbuf_words(ctx, &l, share, confidence),
        ),
        Held::Congestion => (
            cause::TCP_PATH,
            "congestion window",
            cwnd_words(ctx, &l, share, confidence),
        ),
    };
    debug_assert_eq!(f.cause, cause);
    Some(
        Entry::claim(
            Class::Ceiling,
            Resource::TcpFlow {
                limit: limit.into(),
            },
            f,
        )
        .sized(
            Quantity::new(
                l.busy,
                Unit::Percent,
                "of the time the flows had data to send (busy)",
            ),
            Quantity::new(
                share * l.busy / 100.0,
                Unit::Percent,
                format!("of the time held by the {limit}"),
            ),
        )
        .explains(Explains::cause(cause::SATURATION))
        .explains(Explains::cause(cause::UNNAMED_CEILING)),
    )
}

fn flows_words(l: &Limits) -> String {
    match l.flows {
        Some(n) if n >= 1.5 => format!("the {} flows", fmt::si(n)),
        _ => "the flow".into(),
    }
}

fn common_evidence(ctx: &Ctx, l: &Limits, f: &mut Finding) {
    f.evidence.push(ctx.ev(
        TCP_BUSY_PCT,
        Some(l.busy),
        format!(
            "{} had data to send {} of the time",
            flows_words(l),
            fmt::pct(l.busy)
        ),
    ));
    for (name, v, what) in [
        (TCP_RWND_LIMITED_PCT, l.rwnd, "receive-window limited"),
        (TCP_SNDBUF_LIMITED_PCT, l.sndbuf, "send-buffer limited"),
        (TCP_CWND_LIMITED_PCT, l.cwnd, "congestion-window limited"),
    ] {
        if let Some(v) = v {
            f.evidence.push(ctx.ev(
                name,
                Some(v),
                format!("{what} {} of busy time", fmt::pct(v)),
            ));
        }
    }
    if let Some(r) = l.retrans_per_s {
        f.evidence.push(ctx.ev(
            TCP_RETRANS_PER_S,
            Some(r),
            format!("{} retransmitted", fmt::per_s(r)),
        ));
    }
}

fn window_words(ctx: &Ctx, l: &Limits, share: f64, confidence: f64) -> Finding {
    let mut f = finding(
        cause::TCP_RECEIVE_WINDOW,
        format!(
            "The receiver's window held {}: they waited for it {} of the time they had data to send {} (sock_diag tcp_info, as ss -ti counts it). The receiver advertised too little room: its receive buffer is small for the path, or its reader did not keep up.",
            flows_words(l),
            fmt::pct(share),
            ctx.window_words()
        ),
        confidence,
    );
    common_evidence(ctx, l, &mut f);
    f.alternatives.push("a reader starved of CPU also closes the window: ruled out unless a CPU finding explains this one".into());
    f.advice.push(advice(
        "on the receiver: sysctl net.ipv4.tcp_rmem='4096 131072 33554432' and net.core.rmem_max=33554432 (or a larger SO_RCVBUF)",
        "the advertised window grows to cover the bandwidth-delay product; the flows stop waiting for it",
        Some("no help if the reading application is the slow part"),
    ));
    f.next = Some("ss -ti on the receiver shows rcv_space and the window it advertises; on the sender, rwnd_limited should fall after the change".into());
    f
}

fn sndbuf_words(ctx: &Ctx, l: &Limits, share: f64, confidence: f64) -> Finding {
    let mut f = finding(
        cause::TCP_SEND_BUFFER,
        format!(
            "The send buffer held {}: they were limited by it {} of the time they had data to send {} (sock_diag tcp_info). The socket could not keep enough data queued to fill the path.",
            flows_words(l),
            fmt::pct(share),
            ctx.window_words()
        ),
        confidence,
    );
    common_evidence(ctx, l, &mut f);
    f.advice.push(advice(
        "on the sender: sysctl net.ipv4.tcp_wmem='4096 65536 33554432' and net.core.wmem_max=33554432 (or a larger SO_SNDBUF)",
        "more data in flight per flow: the rate rises towards the path's",
        Some("memory per flow grows with it"),
    ));
    f.next = Some(
        "ss -ti on the sender: sndbuf_limited should fall and delivery_rate rise after the change"
            .into(),
    );
    f
}

fn cwnd_words(ctx: &Ctx, l: &Limits, share: f64, confidence: f64) -> Finding {
    let mut f = finding(
        cause::TCP_PATH,
        format!(
            "Congestion control held {}: the congestion window limited them {} of the time they had data to send {}, with {} retransmitted: losses on the path keep the window down.",
            flows_words(l),
            fmt::pct(share),
            ctx.window_words(),
            fmt::per_s(l.retrans_per_s.unwrap_or(0.0))
        ),
        confidence,
    );
    common_evidence(ctx, l, &mut f);
    f.advice.push(advice(
        "find the drop on the path (qdisc and interface drop counters on both ends, the switch's), or pace the sender (fq, BBR)",
        "fewer losses: the window grows and the rate with it",
        Some("BBR shares unevenly with loss-based flows"),
    ));
    f.next = Some("ss -ti shows each flow's cwnd, retransmits and delivery_rate".into());
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    fn flows(busy: f64, rwnd: f64, sndbuf: f64, cwnd: f64, retrans: f64) -> netceil_model::Run {
        live_run(10, |s, r| {
            put(s, r, netceil_model::names::LOAD_RX_BITS_PER_S, &[], 2e9);
            put(s, r, TCP_BUSY_PCT, &[], busy);
            put(s, r, TCP_RWND_LIMITED_PCT, &[], rwnd);
            put(s, r, TCP_SNDBUF_LIMITED_PCT, &[], sndbuf);
            put(s, r, TCP_CWND_LIMITED_PCT, &[], cwnd);
            put(s, r, TCP_RETRANS_PER_S, &[], retrans);
            put(s, r, TCP_FLOWS, &[], 4.0);
        })
    }

    #[test]
    fn a_flow_waiting_on_the_receivers_window_names_it() {
        let e = entry_on(&flows(99.0, 92.0, 0.0, 8.0, 0.0), check).expect("window");
        assert_eq!(e.cause, cause::TCP_RECEIVE_WINDOW);
        assert!(e.finding.summary.contains("92 %"), "{}", e.finding.summary);
        let e = entry_on(&flows(99.0, 2.0, 80.0, 18.0, 0.0), check).expect("sndbuf");
        assert_eq!(e.cause, cause::TCP_SEND_BUFFER);
    }

    #[test]
    fn congestion_window_time_without_loss_is_not_a_ceiling() {
        assert!(entry_on(&flows(99.0, 0.0, 0.0, 100.0, 0.0), check).is_none());
        let e = entry_on(&flows(99.0, 0.0, 0.0, 100.0, 50.0), check).unwrap();
        assert_eq!(e.cause, cause::TCP_PATH);
    }

    #[test]
    fn flows_with_little_to_send_were_held_by_nothing() {
        assert!(entry_on(&flows(20.0, 95.0, 0.0, 5.0, 0.0), check).is_none());
    }
}
