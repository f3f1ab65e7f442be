//! Buffers and queues: where packets were dropped on the way in.
//!
//! Each stage of the receive path has its own counter and its own knob: the NIC ring
//! (`rx_missed`), the per-CPU backlog (`softnet dropped`, netdev_max_backlog), the NAPI budget
//! (`time_squeeze`: not a drop, but a poll that ran out of budget with work left), the socket
//! buffer (UDP `RcvbufErrors`, SO_RXQ_OVFL drops, TCP backlog drops). The rule reads the rates
//! over the load phase and the workload's kernel deltas, ranks the stages by drops, and names
//! the knob of the worst.
//!
//! Fires when the drops are ≥ 1/s and ≥ 0.1 % of the packets, or time_squeeze is ≥ 10/s.
//! Confidence: floor 0.45, band 0.5; strength: the dropped share (0.1 % → 0, 5 % → 1); a
//! squeeze without drops is reported at 0.35.

use netceil_model::{names as n, Advice, Finding, Quantity, Resource, Unit};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::ledger::{Class, Entry, Explains, Relief};
use crate::resources::{Role, THREAD_SATURATED_PCT};
use crate::stats::ramp;
use netceil_model::fmt;

/// One place where packets can be dropped.
struct Stage {
    name: &'static str,
    metric: String,
    /// Drops per second over the load phase (or total / duration for results).
    per_s: f64,
    total: Option<f64>,
    /// Counted over the whole run by the workload (kernel deltas), not sampled per interval.
    whole_run: bool,
    knob: Advice,
}

fn socket_advice(rcvbuf: Option<u64>) -> Advice {
    let had = rcvbuf
        .map(|b| {
            format!(
                "the socket had {} of receive buffer; ",
                fmt::value(b as f64, Unit::Bytes)
            )
        })
        .unwrap_or_default();
    advice(
        format!("{had}a bigger socket buffer: sysctl net.core.rmem_max=33554432, then SO_RCVBUF (netceil: --rcvbuf 32M)"),
        "bursts are absorbed instead of dropped",
        Some("no help if the reader is slower than the sender on average: then the reader is the ceiling"),
    )
}

fn backlog_advice() -> Advice {
    advice(
        "sysctl net.core.netdev_max_backlog=10000 (from 1000)",
        "fewer backlog drops",
        Some("a longer queue only absorbs bursts; RPS spreads a backlog stuck on one CPU"),
    )
}

/// A stage from the workload's whole-run count when there is one, else from the series.
fn stage(
    ctx: &Ctx,
    name: &'static str,
    series_metric: &str,
    total: Option<(&str, u64)>,
    knob: Advice,
) -> Option<Stage> {
    if let Some((field, count)) = total {
        let d = ctx.run.results.as_ref().map_or(0.0, |r| r.duration_s);
        return (count > 0 && d > 0.0).then(|| Stage {
            name,
            metric: format!("results.kernel.{field}"),
            per_s: count as f64 / d,
            total: Some(count as f64),
            whole_run: true,
            knob,
        });
    }
    let s = ctx.series();
    // Interface counters are per interface: their sum is the machine's.
    let per_iface = series_metric.starts_with("iface_");
    let means: Vec<f64> = s
        .by_name(series_metric)
        .filter(|m| m.id.labels.is_empty() || per_iface)
        .filter_map(|m| ctx.mean_of(m))
        .collect();
    if means.is_empty() {
        return None;
    }
    let per_s: f64 = means.iter().sum();
    Some(Stage {
        name,
        metric: series_metric.into(),
        per_s,
        total: ctx.duration_s().map(|d| per_s * d),
        whole_run: false,
        knob,
    })
}

fn stages(ctx: &Ctx) -> Vec<Stage> {
    let k = ctx.run.results.as_ref().map(|r| &r.kernel);
    let rcvbuf = ctx.run.results.as_ref().and_then(|r| r.rcvbuf_bytes);
    // Our own socket's drops (SO_RXQ_OVFL) say more than the machine-wide UDP counter.
    let socket = match (
        k.and_then(|k| k.socket_drops),
        k.and_then(|k| k.udp_rcvbuf_errors),
    ) {
        (Some(d), _) => stage(
            ctx,
            "the receive socket's buffer",
            "",
            Some(("socket_drops", d)),
            socket_advice(rcvbuf),
        ),
        (None, Some(e)) => stage(
            ctx,
            "the UDP socket buffer",
            "",
            Some(("udp_rcvbuf_errors", e)),
            socket_advice(rcvbuf),
        ),
        (None, None) => stage(
            ctx,
            "the UDP socket buffer",
            n::UDP_RCVBUF_ERRORS_PER_S,
            None,
            socket_advice(rcvbuf),
        )
        // Some logs count only UDP's input errors (sar -n UDP's idgmerr/s), which hold the
        // receive-buffer errors; the other input errors (a bad checksum, a short header) are
        // rare on a working host, so a large share of them is the socket buffers overflowing.
        .or_else(|| {
            stage(
                ctx,
                "UDP's input errors (receive-buffer overflows, the common one)",
                n::UDP_IN_ERRORS_PER_S,
                None,
                socket_advice(rcvbuf),
            )
        }),
    };
    let backlog = match k.and_then(|k| k.backlog_drops) {
        Some(d) => stage(
            ctx,
            "the per-CPU backlog",
            "",
            Some(("backlog_drops", d)),
            backlog_advice(),
        ),
        None => stage(
            ctx,
            "the per-CPU backlog",
            n::SOFTNET_DROPPED_PER_S,
            None,
            backlog_advice(),
        ),
    };
    let tcp = stage(
        ctx,
        "a socket's TCP backlog",
        n::TCP_BACKLOG_DROP_PER_S,
        None,
        advice(
            "a faster reader, or more socket memory: sysctl net.ipv4.tcp_rmem",
            "fewer segments dropped while the socket owner is busy",
            Some("the owner being busy is the root cause"),
        ),
    );
    let nic = stage(
        ctx,
        "the NIC's receive ring",
        n::IFACE_RX_MISSED_PER_S,
        None,
        advice(
            "a bigger RX ring: ethtool -G IF rx 4096",
            "fewer frames missed while the host is late refilling the ring",
            Some("if the CPU serving that queue is saturated, spread it (RSS/RPS) instead"),
        ),
    );
    let sndbuf = match k.and_then(|k| k.udp_sndbuf_errors) {
        Some(e) => stage(
            ctx,
            "the sending socket's buffer",
            "",
            Some(("udp_sndbuf_errors", e)),
            sndbuf_advice(),
        ),
        None => stage(
            ctx,
            "the sending socket's buffer",
            n::UDP_SNDBUF_ERRORS_PER_S,
            None,
            sndbuf_advice(),
        ),
    };
    let tx = stage(
        ctx,
        "an interface's transmit queue",
        n::IFACE_TX_DROPPED_PER_S,
        None,
        advice(
            "a longer transmit queue: ip link set IF txqueuelen 10000 (or ethtool -G IF tx 4096)",
            "fewer packets dropped on the way out",
            Some("if the link itself is full, a longer queue only adds delay"),
        ),
    );
    let listen = stage(
        ctx,
        "a listening socket's accept queue",
        n::TCP_LISTEN_DROPS_PER_S,
        None,
        advice(
            "a longer accept queue: sysctl net.core.somaxconn=4096 and the application's listen() backlog, and an acceptor that keeps up",
            "fewer connection attempts dropped (SYNs retried after a second)",
            Some("an acceptor thread that is too slow is the root cause"),
        ),
    );
    // An interface's own receive drops hold the backlog's and the ring's too (the kernel adds
    // a backlog drop to the device's rx_dropped, and /proc/net/dev adds rx_missed to it): only
    // what they leave is the interface's own.
    let counted = backlog.as_ref().map_or(0.0, |b| b.per_s) + nic.as_ref().map_or(0.0, |b| b.per_s);
    let iface = iface_rx_drops(ctx, counted);
    [
        socket,
        backlog,
        tcp,
        nic,
        iface,
        queueing_qdiscs(ctx),
        sndbuf,
        tx,
        listen,
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn sndbuf_advice() -> Advice {
    advice(
        "a bigger send buffer: sysctl net.core.wmem_max and SO_SNDBUF, or pace the sender",
        "sends no longer fail for want of buffer",
        Some("the queue behind it (qdisc, NIC) may be the slow part"),
    )
}

/// Drops at qdiscs that only queue (pfifo, fq_codel…): their limit was reached because what
/// drains them was slower. Shapers (which count overlimits) and ingress policers are the shaper
/// rule's.
/// Receive drops an interface counted (sar's rxdrop/s, /proc/net/dev's drop) beyond the
/// backlog's and the ring's, which it also holds: the driver found no buffer, or its ring was
/// full and the driver counts that as a drop rather than a miss.
fn iface_rx_drops(ctx: &Ctx, counted_elsewhere: f64) -> Option<Stage> {
    let all = stage(
        ctx,
        "an interface's receive path (the driver dropped them before any socket)",
        n::IFACE_RX_DROPPED_PER_S,
        None,
        advice(
            "ethtool -S IF (the driver's own counters say which: a full ring, no buffer, a filter); for a full ring, a bigger one: ethtool -G IF rx 4096",
            "fewer frames dropped while the host is late refilling the ring",
            Some("if the CPU serving that queue is saturated, spread it (RSS/RPS) instead"),
        ),
    )?;
    let per_s = all.per_s - counted_elsewhere;
    (per_s >= 1.0).then(|| Stage {
        per_s,
        total: ctx.duration_s().map(|d| per_s * d),
        ..all
    })
}

fn queueing_qdiscs(ctx: &Ctx) -> Option<Stage> {
    let per_s: f64 = ctx
        .series()
        .by_name(n::QDISC_DROPS_PER_S)
        .filter(|m| m.id.label(n::LABEL_QDISC) != Some("ingress"))
        .filter(|m| {
            ctx.sibling(m, n::QDISC_OVERLIMITS_PER_S)
                .and_then(|o| ctx.mean_of(o))
                .is_none_or(|o| o < 1.0)
        })
        .filter_map(|m| ctx.mean_of(m))
        .sum();
    (per_s > 0.0).then(|| Stage {
        name: "a qdisc's queue",
        metric: n::QDISC_DROPS_PER_S.into(),
        per_s,
        total: ctx.duration_s().map(|d| per_s * d),
        whole_run: false,
        knob: advice(
            "a longer qdisc queue (tc qdisc change dev IF root pfifo limit N, or fq_codel limit), or a faster device behind it",
            "fewer packets dropped while the device drains the queue",
            Some("a long queue adds latency (bufferbloat); AQM drops on purpose"),
        ),
    })
}

/// The packet rate the drops are compared with.
fn packets_per_s(ctx: &Ctx) -> Option<f64> {
    if let Some(r) = &ctx.run.results {
        if r.tx_pps > 0.0 {
            return Some(r.tx_pps);
        }
    }
    ctx.packet_rate().map(|(p, _)| p).or_else(|| {
        // A log of UDP's counters alone: the datagrams that arrived, delivered or not.
        let delivered = ctx.total_mean(n::UDP_IN_DATAGRAMS_PER_S)?;
        Some(delivered + ctx.total_mean(n::UDP_IN_ERRORS_PER_S).unwrap_or(0.0))
    })
}

/// Drops in at least this share of the load rows are steady, not bursts.
pub const STEADY_ROWS: f64 = 0.7;

/// How the drops fell over time: in most intervals (steady: the queue's reader is slower on
/// average than the arrivals) or in a few (bursts a longer queue would absorb).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    /// Share of the load rows with a drop.
    pub rows_with_drops: f64,
    pub rows: usize,
}

impl Shape {
    pub fn steady(&self) -> bool {
        self.rows_with_drops >= STEADY_ROWS
    }
}

/// The drop shape from the per-interval series that counts them: the worst stage's own
/// series, else the run's loss per interval, else the machine's UDP buffer errors.
fn shape(ctx: &Ctx, worst: &Stage) -> Option<Shape> {
    let s = ctx.series();
    // Of a per-interface counter, the interface that dropped most (lo is listed first and
    // usually drops nothing).
    let metric = (!worst.whole_run)
        .then(|| {
            s.by_name(&worst.metric).max_by(|a, b| {
                let m = |x| ctx.mean_of(x).unwrap_or(0.0);
                m(a).total_cmp(&m(b))
            })
        })
        .flatten()
        .or_else(|| s.total(n::LOAD_LOST_PER_S))
        .or_else(|| s.total(n::UDP_RCVBUF_ERRORS_PER_S))?;
    let v = ctx.values(metric);
    (v.len() >= 3).then(|| Shape {
        rows_with_drops: v.iter().filter(|x| **x >= 1.0).count() as f64 / v.len() as f64,
        rows: v.len(),
    })
}

/// The reader behind the queue could not keep up on average: netceil's own receiving thread
/// (or, for a watched program, any of its threads) on a full core, or starved of its core.
/// Its figures, in words.
fn reader_limited(ctx: &Ctx) -> Option<String> {
    let own = ctx.cpu.threads.iter().any(|t| t.own);
    ctx.cpu
        .threads
        .iter()
        .filter(|t| !own || t.role() == Role::Receiver)
        .find_map(|t| {
            if t.cpu_pct >= THREAD_SATURATED_PCT {
                return Some(format!(
                    "its reader {} was on a full core ({})",
                    t.comm,
                    fmt::value(t.cpu_pct, Unit::Percent)
                ));
            }
            ctx.cpu.starved(t).map(|busy| {
                format!(
                    "its reader {} got {} of a core{} that was {} busy",
                    t.comm,
                    fmt::value(t.cpu_pct, Unit::Percent),
                    t.cpu.map(|c| format!(" (CPU {c})")).unwrap_or_default(),
                    fmt::value(busy, Unit::Percent)
                )
            })
        })
}

/// Buffer and queue drops: a loss in the ledger. Relieving the queue gains the dropped share
/// back when the drops came in bursts or its reader had room; nothing when they were steady
/// behind a reader that could not keep up (then the reader's core is the ceiling, and the
/// rule that names it explains these drops).
pub fn check(ctx: &Ctx) -> Option<Entry> {
    if !ctx.net_possible() && ctx.run.results.is_none() {
        return None;
    }
    let mut st = stages(ctx);
    st.retain(|s| s.per_s > 0.0);
    st.sort_by(|a, b| b.per_s.total_cmp(&a.per_s));
    let drops: f64 = st.iter().map(|s| s.per_s).sum();
    let pps = packets_per_s(ctx);
    let share = pps.filter(|p| *p > 0.0).map(|p| drops / p);
    let dropping = drops >= 1.0 && share.is_none_or(|s| s >= 0.001);
    let squeeze = ctx
        .total_mean(n::SOFTNET_TIME_SQUEEZE_PER_S)
        .filter(|s| *s >= 10.0);
    if !dropping && squeeze.is_none() {
        return None;
    }
    if !dropping {
        let f = squeeze_words(ctx, squeeze.unwrap_or(0.0));
        return Some(Entry::claim(Class::Noted, queue("the NAPI budget"), f));
    }
    let worst = &st[0];
    let shape = shape(ctx, worst);
    let reader = reader_limited(ctx);
    let relief = match (shape.map(|s| s.steady()), &reader) {
        (Some(true), Some(_)) => Relief::Nothing,
        _ => Relief::Factor(1.0 + share.map_or(0.0, |s| s / (1.0 - s).max(0.01))),
    };
    let mut f = drops_words(ctx, &st, share, squeeze);
    if let Some(sh) = shape {
        f.evidence.push(ctx.ev(
            worst.metric.clone(),
            Some((sh.rows_with_drops, Unit::Ratio)),
            format!(
                "drops in {} of the {} load intervals: {}",
                fmt::value(sh.rows_with_drops * 100.0, Unit::Percent),
                sh.rows,
                if sh.steady() {
                    "steady, not bursts"
                } else {
                    "in bursts"
                }
            ),
        ));
    }
    if let Some(r) = &reader {
        f.alternatives.insert(
            0,
            format!("the queue's reader could not keep up: {r}; a bigger buffer only delays the loss then"),
        );
    }
    let mut e = Entry::claim(Class::Loss, queue(worst.name), f)
        .errors(Quantity::new(
            worst.per_s,
            Unit::PerSecond,
            format!("drops at {}", worst.name),
        ))
        .relief(relief)
        .explains(Explains::cause(cause::SATURATION));
    if let Some(b) = ctx.run.results.as_ref().and_then(|r| r.rcvbuf_bytes) {
        e.capacity = Some(Quantity::new(
            b as f64,
            Unit::Bytes,
            "the receive socket's buffer, as granted",
        ));
    }
    Some(e)
}

fn queue(name: &str) -> Resource {
    Resource::Queue {
        name: name.to_string(),
        far: false,
    }
}

fn squeeze_words(ctx: &Ctx, squeeze: f64) -> Finding {
    let mut f = finding(
        cause::BUFFER_DROPS,
        format!(
            "The NAPI budget ran out {} with work left (time_squeeze), though nothing was dropped yet.",
            fmt::value(squeeze, Unit::PerSecond)
        ),
        0.35 * ctx.data_factor(),
    );
    squeeze_evidence(ctx, squeeze, &mut f);
    f
}

fn squeeze_evidence(ctx: &Ctx, q: f64, f: &mut Finding) {
    f.evidence.push(ctx.ev(
        n::SOFTNET_TIME_SQUEEZE_PER_S,
        Some((q, Unit::PerSecond)),
        format!(
            "NAPI polls ran out of budget {}",
            fmt::value(q, Unit::PerSecond)
        ),
    ));
    f.advice.push(advice(
        "sysctl net.core.netdev_budget=600 net.core.netdev_budget_usecs=4000",
        "more packets per softirq run, fewer squeezes",
        Some("longer softirq runs delay other work on that CPU"),
    ));
}

fn drops_words(ctx: &Ctx, st: &[Stage], share: Option<f64>, squeeze: Option<f64>) -> Finding {
    let worst = &st[0];
    let data = if worst.whole_run {
        1.0
    } else {
        ctx.data_factor()
    };
    let confidence = (0.45 + 0.5 * share.map_or(0.5, |s| ramp(s, 0.001, 0.05))) * data;
    let share_words = share
        .map(|s| format!(" ({} of the packets)", fmt::value(s * 100.0, Unit::Percent)))
        .unwrap_or_default();
    let total_words = worst
        .total
        .map(|t| format!(", {} in all", fmt::number(t)))
        .unwrap_or_default();
    let mut f = finding(
        cause::BUFFER_DROPS,
        format!(
            "Packets were dropped at {}: {}{total_words}{share_words}; that queue overflowed before the packets were read.",
            worst.name,
            fmt::value(worst.per_s, Unit::PerSecond)
        ),
        confidence,
    );
    for s in st {
        let text = match s.total {
            Some(t) => format!(
                "{}: {} dropped ({})",
                s.name,
                fmt::number(t),
                fmt::value(s.per_s, Unit::PerSecond)
            ),
            None => format!(
                "{}: {} dropped",
                s.name,
                fmt::value(s.per_s, Unit::PerSecond)
            ),
        };
        let e = if s.whole_run {
            // A total over the run, and the rate it makes over the run's length.
            f.evidence.push(ctx.ev_total(
                format!("{}_per_s", s.metric),
                Some((s.per_s, Unit::PerSecond)),
                format!("{}: {}", s.name, fmt::value(s.per_s, Unit::PerSecond)),
            ));
            ctx.ev_total(s.metric.clone(), s.total.map(|v| (v, Unit::Count)), text)
        } else {
            ctx.ev(s.metric.clone(), Some((s.per_s, Unit::PerSecond)), text)
        };
        f.evidence.push(e);
        f.advice.push(s.knob.clone());
    }
    if let Some(s) = share {
        f.evidence.push(ctx.ev_total(
            "drop_share_pct",
            Some((s * 100.0, Unit::Percent)),
            format!(
                "{} of the packets dropped at {}",
                fmt::value(s * 100.0, Unit::Percent),
                worst.name
            ),
        ));
    }
    if let Some(q) = squeeze {
        squeeze_evidence(ctx, q, &mut f);
    }
    if let Some((busy, _)) = ctx.machine_busy() {
        if busy >= 85.0 {
            f.alternatives.push(format!(
                "the CPU was {} busy: a bigger buffer may only delay the loss if the reader is too slow",
                fmt::value(busy, Unit::Percent)
            ));
        }
    }
    f.next = Some("watch the drop counters while changing one knob at a time: the stage that stops dropping was the one".into());
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use netceil_model::Results;

    #[test]
    fn socket_buffer_drops_name_rmem_and_rcvbuf() {
        let run = live_run(10, |s, r| {
            put(s, r, n::LOAD_RX_PPS, &[], 300e3);
            put(s, r, n::UDP_RCVBUF_ERRORS_PER_S, &[], 120e3 + noise(r, 5e3));
            put(s, r, n::SOFTNET_DROPPED_PER_S, &[], 0.0);
        });
        let f = on(&run, check).expect("buffer drops");
        assert!(f.summary.contains("UDP socket buffer"), "{}", f.summary);
        assert!(f.advice[0].knob.contains("rmem_max"));
        assert!(f.confidence > 0.8);
    }

    #[test]
    fn results_socket_drops_count_without_series() {
        let mut run = live_run(5, |s, r| put(s, r, n::LOAD_RX_PPS, &[], 1000.0));
        run.results = Some(Results {
            duration_s: 5.0,
            tx_packets: 10_000,
            tx_pps: 2000.0,
            kernel: netceil_model::KernelDelivery {
                socket_drops: Some(5000),
                ..Default::default()
            },
            ..Default::default()
        });
        let f = on(&run, check).unwrap();
        assert!(
            f.summary.contains("the receive socket's buffer"),
            "{}",
            f.summary
        );
        assert!(
            f.confidence > 0.9,
            "whole-run counts need no rows: {}",
            f.confidence
        );
        assert!(f.summary.contains("50 %"), "{}", f.summary);
    }

    #[test]
    fn time_squeeze_alone_is_a_budget_note() {
        let run = live_run(10, |s, r| {
            put(s, r, n::LOAD_RX_PPS, &[], 300e3);
            put(s, r, n::SOFTNET_TIME_SQUEEZE_PER_S, &[], 400.0);
        });
        let f = on(&run, check).unwrap();
        assert!(f.summary.contains("NAPI budget"));
        assert!(f
            .advice
            .iter()
            .any(|a| a.knob.contains("netdev_budget_usecs")));
        assert!(f.confidence < 0.5);
    }

    #[test]
    fn a_few_drops_in_a_million_are_not_a_finding() {
        let run = live_run(10, |s, r| {
            put(s, r, n::LOAD_RX_PPS, &[], 1e6);
            put(s, r, n::UDP_RCVBUF_ERRORS_PER_S, &[], 3.0);
        });
        assert!(on(&run, check).is_none());
    }

    #[test]
    fn idle_machine_has_no_buffer_finding() {
        assert!(on(&live_run(20, idle_row), check).is_none());
    }

    #[test]
    fn drops_at_a_queueing_qdisc_name_its_queue_and_a_shapers_are_left_to_the_shaper() {
        let run = live_run(10, |s, r| {
            put(s, r, n::LOAD_RX_PPS, &[], 80e3);
            let l = [(n::LABEL_IFACE, "veth0"), (n::LABEL_QDISC, "pfifo")];
            put(s, r, n::QDISC_DROPS_PER_S, &l, 4e3 + noise(r, 100.0));
            put(s, r, n::QDISC_OVERLIMITS_PER_S, &l, 0.0);
        });
        let f = on(&run, check).expect("qdisc drops");
        assert!(f.summary.contains("a qdisc's queue"), "{}", f.summary);
        let shaped = live_run(10, |s, r| {
            put(s, r, n::LOAD_RX_PPS, &[], 80e3);
            let l = [(n::LABEL_IFACE, "veth0"), (n::LABEL_QDISC, "tbf")];
            put(s, r, n::QDISC_DROPS_PER_S, &l, 4e3);
            put(s, r, n::QDISC_OVERLIMITS_PER_S, &l, 9e3);
        });
        assert!(on(&shaped, check).is_none());
    }

    #[test]
    fn an_interfaces_own_receive_drops_are_a_stage_and_its_share_of_the_backlogs_is_not_counted_twice(
    ) {
        // sar -n DEV,EDEV: only rxdrop/s, a full ring the driver counts as a drop.
        let ring = imported_run(10, |s, r| {
            let l = [(n::LABEL_IFACE, "ens1f0")];
            put(s, r, n::IFACE_RX_PPS, &l, 1.4e6);
            put(
                s,
                r,
                n::IFACE_RX_DROPPED_PER_S,
                &[(n::LABEL_IFACE, "lo")],
                0.0,
            );
            put(s, r, n::IFACE_RX_DROPPED_PER_S, &l, 60e3 + noise(r, 4e3));
        });
        let f = on(&ring, check).expect("interface receive drops");
        assert!(
            f.summary.contains("an interface's receive path"),
            "{}",
            f.summary
        );
        assert!(f.advice[0].knob.contains("ethtool"), "{:?}", f.advice);
        assert!(
            f.evidence.iter().any(|e| e.text.contains("steady")),
            "the shape is read from the interface that dropped, not lo: {:?}",
            f.evidence
        );
        // The kernel adds each backlog drop to the device's rx_dropped too: the backlog is
        // the stage, and the interface adds nothing of its own.
        let backlog = live_run(10, |s, r| {
            put(s, r, n::LOAD_RX_PPS, &[], 300e3);
            put(s, r, n::SOFTNET_DROPPED_PER_S, &[], 20e3);
            put(
                s,
                r,
                n::IFACE_RX_DROPPED_PER_S,
                &[(n::LABEL_IFACE, "lo")],
                20e3,
            );
        });
        let f = on(&backlog, check).expect("backlog drops");
        assert!(f.summary.contains("per-CPU backlog"), "{}", f.summary);
        assert!(
            !f.summary.contains("interface's receive path"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn udp_input_errors_alone_stand_for_the_socket_buffers_when_they_are_a_large_share() {
        let with = |share: f64| {
            imported_run(10, |s, r| {
                put(s, r, n::UDP_IN_DATAGRAMS_PER_S, &[], 90e3);
                put(
                    s,
                    r,
                    n::UDP_IN_ERRORS_PER_S,
                    &[],
                    90e3 * share + noise(r, 5.0),
                );
            })
        };
        let f = on(&with(0.15), check).expect("input errors at 15 %");
        assert!(f.summary.contains("UDP's input errors"), "{}", f.summary);
        assert!(f.advice[0].knob.contains("rmem_max"), "{:?}", f.advice);
        // 0.05 % of the datagrams is no finding: the share is of the datagrams that came.
        assert!(on(&with(0.0005), check).is_none());
    }
}
