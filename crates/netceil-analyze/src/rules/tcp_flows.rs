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
//! The kernel's own counts are not the only witness: a window that holds a flow is full. By
//! Little's law a flow keeps acked-rate × RTT bytes in flight on average; when that fills the
//! peer's advertised window while the congestion window is larger, the receive window is the
//! limit; when the send queue fills the send buffer while neither window is full, the send
//! buffer is (the kernel's `sndbuf_limited` counts only sends that found no room, and misses a
//! writer that sleeps on a full buffer); when in-flight fills the congestion window below the
//! peer's, congestion control is. Each interval of each busy flow is judged so, and the share
//! of them is the second figure beside the kernel's.
//!
//! Sizing: the limited time as a share of busy time (weighted by each flow's busy time), or the
//! share of busy flow-intervals whose window or buffer was full, whichever is larger. A
//! ceiling from [`LIMITED_SHARE_MIN`] while the flows were busy at least [`BUSY_MIN_PCT`] of
//! the time. Confidence: 0.5 + 0.4 × the mean of the limited share (50 % → 0, 95 % → 1) and how
//! busy the flows were (50 % → 0, 95 % → 1), × the data factor.
//!
//! A sender that fills the peer's window had more to send than the window let out, so a
//! sending thread near a full core beside a peer window that was full in at least
//! [`FILLED_EXPLAINS_SENDER`] of the judged intervals is the window's symptom (a small window
//! costs more CPU per byte: more segments and acks), not a ceiling of its own; a sender short
//! of CPU leaves the window part empty instead. The kernel's counts alone do not say that
//! (they count time, not fill). A full send buffer does not clear the sender so: on loopback
//! the sending thread itself delivers what it queued, and a writer that never slept on its
//! buffer was not held by it.

use netceil_model::{names as n, Finding, Metric, Quantity, Resource, Unit};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::ledger::{Class, Entry, Explains};
use crate::stats::{mean_strength, ramp};
use netceil_model::fmt;

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

/// The three limits over the load rows, % of busy time: the kernel's counts, raised to the
/// share of full windows and buffers where that is larger.
struct Limits {
    busy: f64,
    rwnd: Option<f64>,
    sndbuf: Option<f64>,
    cwnd: Option<f64>,
    /// The kernel's own counts (tcpi_rwnd_limited, tcpi_sndbuf_limited, the rest of busy).
    counted: [Option<f64>; 3],
    retrans_per_s: Option<f64>,
    flows: Option<f64>,
    /// Share of busy flow-intervals with a full window or buffer, % (see the header).
    full: Full,
}

/// Of the busy flow-intervals, the share (%) whose peer window, send buffer or congestion
/// window was full, and how many intervals were judged.
#[derive(Default, Clone, Copy)]
struct Full {
    rwnd: f64,
    sndbuf: f64,
    cwnd: f64,
    judged: usize,
}

/// A window or buffer this full (of its size) is full.
const FULL: f64 = 0.6;
/// A window this much smaller than the other is the one that can fill.
const SMALLER: f64 = 0.8;
/// Share of judged busy flow-intervals (%) with the peer's window full, from which a busy
/// sending thread is the window's symptom (see the header).
pub const FILLED_EXPLAINS_SENDER: f64 = 80.0;

fn full_shares(ctx: &Ctx) -> Full {
    let at = |m: Option<&Metric>, r: usize| m.and_then(|m| m.values.get(r).copied().flatten());
    let (mut rwnd, mut sndbuf, mut cwnd, mut judged) = (0usize, 0usize, 0usize, 0usize);
    for busy in ctx.series().by_name(n::TCP_BUSY_PCT) {
        if busy.id.label(n::LABEL_FLOW).is_none() {
            continue;
        }
        let sib = |name: &str| ctx.sibling(busy, name);
        let (acked, rtt, wnd, cw, mss) = (
            sib(n::TCP_BYTES_ACKED_PER_S),
            sib(n::TCP_RTT_US),
            sib(n::TCP_SND_WND_BYTES),
            sib(n::TCP_CWND),
            sib(n::TCP_SND_MSS_BYTES),
        );
        let (buf, queue) = (sib(n::TCP_SNDBUF_BYTES), sib(n::TCP_SEND_QUEUE_BYTES));
        for r in ctx.rows.clone() {
            if at(Some(busy), r).is_none_or(|b| b < BUSY_MIN_PCT) {
                continue;
            }
            let (Some(a), Some(t)) = (at(acked, r), at(rtt, r)) else {
                continue;
            };
            judged += 1;
            // Little's law: bytes in flight on average.
            let flight = a * t / 1e6;
            let peer = at(wnd, r);
            let cong = match (at(cw, r), at(mss, r)) {
                (Some(c), Some(m)) => Some(c * m),
                _ => None,
            };
            let fills = |w: Option<f64>| w.is_some_and(|w| w > 0.0 && flight >= FULL * w);
            let below = |w: Option<f64>, other: Option<f64>| match (w, other) {
                (Some(w), Some(o)) => w <= SMALLER * o,
                (Some(_), None) => true,
                _ => false,
            };
            if fills(peer) && below(peer, cong) {
                rwnd += 1;
            } else if fills(cong) && below(cong, peer) {
                cwnd += 1;
            } else if let (Some(b), Some(q)) = (at(buf, r), at(queue, r)) {
                if b > 0.0 && q >= 0.8 * b {
                    sndbuf += 1;
                }
            }
        }
    }
    let pct = |k: usize| {
        if judged == 0 {
            0.0
        } else {
            100.0 * k as f64 / judged as f64
        }
    };
    Full {
        rwnd: pct(rwnd),
        sndbuf: pct(sndbuf),
        cwnd: pct(cwnd),
        judged,
    }
}

/// How busy the sending flows were: the busiest flow with a series of its own (both ends of
/// a connection are the workload's when netceil runs both, and the receiving end is never
/// busy, so a mean would halve it); `None` without per-flow series.
fn sending_busy(ctx: &Ctx) -> Option<f64> {
    ctx.series()
        .by_name(n::TCP_BUSY_PCT)
        .filter(|m| m.id.label(n::LABEL_FLOW).is_some())
        .filter_map(|m| ctx.mean_of(m))
        .reduce(f64::max)
}

fn measure(ctx: &Ctx) -> Option<Limits> {
    let full = full_shares(ctx);
    let larger = |counted: Option<f64>, seen: f64| match counted {
        Some(c) => Some(c.max(seen)),
        None => (full.judged > 0).then_some(seen),
    };
    let counted = [
        mean_of(ctx, TCP_RWND_LIMITED_PCT),
        mean_of(ctx, TCP_SNDBUF_LIMITED_PCT),
        mean_of(ctx, TCP_CWND_LIMITED_PCT),
    ];
    Some(Limits {
        busy: sending_busy(ctx).or_else(|| mean_of(ctx, TCP_BUSY_PCT))?,
        rwnd: larger(counted[0], full.rwnd),
        sndbuf: larger(counted[1], full.sndbuf),
        cwnd: larger(counted[2], full.cwnd),
        counted,
        retrans_per_s: mean_of(ctx, TCP_RETRANS_PER_S),
        flows: mean_of(ctx, TCP_FLOWS),
        full,
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
    let e = Entry::claim(
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
            "the time the flows had data to send (busy)",
        ),
        Quantity::new(
            share * l.busy / 100.0,
            Unit::Percent,
            format!("of the time held by the {limit}"),
        ),
    )
    .explains(Explains::cause(cause::SATURATION))
    .explains(Explains::cause(cause::UNNAMED_CEILING));
    Some(
        if h == Held::ReceiveWindow && l.full.rwnd >= FILLED_EXPLAINS_SENDER {
            e.explains(Explains::cause(cause::SENDER_SATURATED))
        } else {
            e
        },
    )
}

fn flows_words(l: &Limits) -> String {
    match l.flows.map(f64::round) {
        Some(n) if n >= 3.0 => format!("the workload's {n:.0} TCP sockets"),
        _ => "the flow".into(),
    }
}

fn common_evidence(ctx: &Ctx, l: &Limits, f: &mut Finding) {
    f.evidence.push(ctx.ev(
        TCP_BUSY_PCT,
        Some((l.busy, Unit::Percent)),
        format!(
            "{} had data to send {} of the time",
            flows_words(l),
            fmt::value(l.busy, Unit::Percent)
        ),
    ));
    for (name, v, what) in [
        (TCP_RWND_LIMITED_PCT, l.counted[0], "receive-window limited"),
        (TCP_SNDBUF_LIMITED_PCT, l.counted[1], "send-buffer limited"),
        (
            TCP_CWND_LIMITED_PCT,
            l.counted[2],
            "congestion-window limited",
        ),
    ] {
        if let Some(v) = v {
            f.evidence.push(ctx.ev(
                name,
                Some((v, Unit::Percent)),
                format!(
                    "{what} {} of busy time, by the kernel's count (tcp_info)",
                    fmt::value(v, Unit::Percent)
                ),
            ));
        }
    }
    if let Some(r) = l.retrans_per_s {
        f.evidence.push(ctx.ev(
            TCP_RETRANS_PER_S,
            Some((r, Unit::PerSecond)),
            format!("{} retransmitted", fmt::value(r, Unit::PerSecond)),
        ));
    }
    if l.full.judged > 0 {
        f.evidence.push(ctx.ev(
            "tcp_full_windows", Some((l.full.judged as f64, Unit::Count)),
            format!(
                "of {} busy flow-intervals, the peer's window was full in {}, the send buffer in {}, the congestion window in {} (acked rate × RTT in flight, against each)",
                l.full.judged,
                fmt::value(l.full.rwnd, Unit::Percent),
                fmt::value(l.full.sndbuf, Unit::Percent),
                fmt::value(l.full.cwnd, Unit::Percent)
            ),
        ));
        for (what, pct) in [
            ("the peer's window", l.full.rwnd),
            ("the send buffer", l.full.sndbuf),
            ("the congestion window", l.full.cwnd),
        ] {
            f.evidence.push(ctx.ev(
                "tcp_full_windows_pct",
                Some((pct, Unit::Percent)),
                format!(
                    "{what} full in {} of the busy flow-intervals",
                    fmt::value(pct, Unit::Percent)
                ),
            ));
        }
    }
}

fn window_words(ctx: &Ctx, l: &Limits, share: f64, confidence: f64) -> Finding {
    let mut f = finding(
        cause::TCP_RECEIVE_WINDOW,
        format!(
            "The receiver's window held {}: it was the limit {} of the time there was data to send {} (sock_diag tcp_info, as ss -ti reads it). The receiver advertised too little room: its receive buffer is small for the path, or its reader did not keep up.",
            flows_words(l),
            fmt::value(share, Unit::Percent),
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
            fmt::value(share, Unit::Percent),
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
            fmt::value(share, Unit::Percent),
            ctx.window_words(),
            fmt::value(l.retrans_per_s.unwrap_or(0.0), Unit::PerSecond)
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

    /// One busy flow whose in flight (acked rate × RTT) is `flight` bytes against a peer
    /// window of 8 KiB and a congestion window of 10 × 64 KiB; the kernel counts a fifth of
    /// busy time as receive-window limited.
    fn one_flow(flight: f64) -> netceil_model::Run {
        live_run(10, |s, r| {
            put(s, r, netceil_model::names::LOAD_RX_BITS_PER_S, &[], 2e9);
            let f: &[(&str, &str)] = &[(n::LABEL_FLOW, "1")];
            put(s, r, TCP_BUSY_PCT, f, 99.0);
            put(s, r, TCP_RWND_LIMITED_PCT, f, 20.0);
            put(s, r, TCP_SNDBUF_LIMITED_PCT, f, 0.0);
            put(s, r, TCP_CWND_LIMITED_PCT, f, 80.0);
            put(s, r, n::TCP_BYTES_ACKED_PER_S, f, flight / 50e-6);
            put(s, r, n::TCP_RTT_US, f, 50.0);
            put(s, r, n::TCP_SND_WND_BYTES, f, 8192.0);
            put(s, r, n::TCP_CWND, f, 10.0);
            put(s, r, n::TCP_SND_MSS_BYTES, f, 65483.0);
        })
    }

    #[test]
    fn a_full_peer_window_makes_the_busy_sender_its_symptom() {
        let e = entry_on(&one_flow(8000.0), check).expect("window");
        assert_eq!(e.cause, cause::TCP_RECEIVE_WINDOW);
        assert!(e
            .explains
            .contains(&Explains::cause(cause::SENDER_SATURATED)));
        // Half full: the kernel's count alone is too small to name the window, and a sender
        // that leaves the window part empty is not cleared by it.
        assert!(entry_on(&one_flow(3000.0), check).is_none_or(|e| !e
            .explains
            .contains(&Explains::cause(cause::SENDER_SATURATED))));
    }
}
