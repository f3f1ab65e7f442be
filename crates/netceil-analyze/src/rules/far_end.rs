//! The far end of `--to`: a `netceil serve` that counted itself, so the verdict can name the
//! receiving machine.
//!
//! Mechanism. A ceiling on the receiving side shows there, not here: datagrams the far end's
//! kernel dropped (socket buffer, backlog, interface) and a far core that was full while the
//! sender still had time on every core. Which far resource it was follows from where the
//! packets died and how the full core spent its time:
//! - a far core full of softirq: the receive packet path on that core (`softirq_bound`);
//! - a far core full of user and system time with the loss at the socket: the receiving
//!   application could not drain its socket (`receiver_saturated`);
//! - socket-buffer or backlog drops with every far core below saturation: bursts overran a
//!   queue that was too short, not a CPU (`buffer_drops`);
//! - datagrams this host sent that the far interface never counted, with neither end counting
//!   a drop for them, and arrivals there flat at a rate below the offered one: something in
//!   the path between the hosts held the traffic at that rate, a policer, a shaper or a full
//!   link (`shaper`). The far interface counts all its traffic, so sent − counted there is a
//!   lower bound on the path's loss; this host's own egress drops (qdisc, interface, send
//!   buffer) and the far NIC's missed packets are taken off it first, since they would look
//!   the same. Loss in the path that is not flat is stated as evidence, not named a ceiling.
//!
//! Random loss in the path under a steady offer passes a steady share too, but with the
//! spread of chance: each datagram gets through with probability p, so arrivals of n offered a
//! row vary with cv √((1 − p) / (p n)). Arrivals flatter than that beyond what chance gives
//! one time in a thousand over the rows there are ([`flatter_than_chance`]: with five rows,
//! a cv below 0.13 of chance's), or flat while the offer swung, were held at a rate.
//!
//! What looks the same: a sender that itself was saturated (then the run was generator-limited
//! and the far end's full core may be the consequence of a ceiling here too). The rule needs
//! the sender's busiest core below 90 % to call the far end alone the ceiling, and says so
//! when both ends were full.
//!
//! Strengths: the far core's share (70 → 95 %), the loss ratio at the far end (0.01 % → 1 %),
//! and the sender's headroom (90 → 50 % busiest core).

use netceil_model::{names as n, FarCpu, FarEnd, Finding, Quantity, Resource, Results, Unit};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::ledger::{Class, Entry, Explains};
use crate::stats::{cv, flatter_than_chance, mean, present, ramp};
use netceil_model::fmt;

/// Where the far end's packets died, and how many.
struct FarLoss {
    socket: u64,
    backlog: u64,
    iface: u64,
    total_lost: u64,
    sent: u64,
}

fn far_loss(r: &Results, far: &FarEnd) -> FarLoss {
    FarLoss {
        socket: far
            .app
            .udp_socket_drops
            .unwrap_or(0)
            .max(far.kernel.udp_rcvbuf_errors.unwrap_or(0)),
        backlog: far.kernel.softnet_dropped.unwrap_or(0),
        iface: far.kernel.iface_rx_dropped.unwrap_or(0),
        total_lost: far.app.udp_lost,
        sent: r.tx_packets,
    }
}

/// Datagrams this host's own egress is known to have dropped over the load phase: qdisc and
/// interface transmit drops on every interface here (from the series), and send-buffer errors.
fn near_egress_drops(ctx: &Ctx, r: &Results) -> u64 {
    let secs = ctx.duration_s().unwrap_or(r.duration_s);
    let rate: f64 = ctx
        .series()
        .metrics
        .iter()
        .filter(|m| m.id.name == n::QDISC_DROPS_PER_S || m.id.name == n::IFACE_TX_DROPPED_PER_S)
        .filter_map(|m| ctx.mean_of(m))
        .sum();
    (rate * secs).round() as u64 + r.kernel.udp_sndbuf_errors.unwrap_or(0)
}

/// The far interface's own series: its arrivals per second in the far end's rows (the first
/// and last are partial), and the packets its NIC missed over the test.
fn far_arrivals(far: &FarEnd) -> (Vec<f64>, u64) {
    let s = &far.series;
    let iface = far.kernel.iface.as_deref();
    let of = |name: &str| {
        s.metrics
            .iter()
            .find(|m| m.id.name == name && m.id.label(n::LABEL_IFACE) == iface && iface.is_some())
    };
    let inner = |m: &netceil_model::Metric| {
        let v = &m.values;
        if v.len() > 2 {
            present(&v[1..v.len() - 1])
        } else {
            present(v)
        }
    };
    let pps = of(n::IFACE_RX_PPS).map(inner).unwrap_or_default();
    let missed = of(n::IFACE_RX_MISSED_PER_S)
        .map(|m| {
            let per_s = mean(&present(&m.values)).unwrap_or(0.0);
            (per_s * far.duration_s).round() as u64
        })
        .unwrap_or(0);
    (pps, missed)
}

/// A filter on the far end's ingress: datagrams its interface counted that never reached its
/// IP layer, with no drop counted for them in between (a netdev ingress hook, a tc ingress
/// policer in another namespace), and its IP layer's arrivals flatter than chance would pass
/// them.
struct Ingress {
    /// Datagrams the far interface counted that neither its IP/UDP layer received nor any
    /// counter dropped.
    gap: u64,
    /// The far IP layer's arrivals per second, mean.
    rate: f64,
    cv: Option<f64>,
    binomial_cv: Option<f64>,
    /// How many rows the cv is over.
    rows: usize,
}

impl Ingress {
    fn flat(&self) -> bool {
        match (self.cv, self.binomial_cv) {
            (Some(a), Some(b)) => a <= 0.02 && flatter_than_chance(a, b, self.rows),
            _ => false,
        }
    }
}

fn ingress(far: &FarEnd, loss: &FarLoss, iface_pps: Option<f64>) -> Option<Ingress> {
    let k = &far.kernel;
    let counted = k.udp_in_datagrams? + k.udp_in_errors.unwrap_or(0);
    let dropped = k.softnet_dropped.unwrap_or(0) + k.iface_rx_dropped.unwrap_or(0);
    let gap = k.iface_rx_packets?.saturating_sub(counted + dropped);
    if (gap as f64) < 0.5 * loss.total_lost.max(1) as f64 || (gap as f64) < 1e-3 * loss.sent as f64
    {
        return None;
    }
    let s = &far.series;
    let rows = [n::IP_IN_RECEIVES_PER_S, n::UDP_IN_DATAGRAMS_PER_S]
        .iter()
        .find_map(|name| s.total(name))
        .map(|m| {
            let v = &m.values;
            present(if v.len() > 2 { &v[1..v.len() - 1] } else { v })
        })
        .unwrap_or_default();
    let rate = mean(&rows)?;
    // The interface's own series when the far end sampled it, else its count over the test.
    let iface_pps = iface_pps.or_else(|| {
        (far.duration_s > 0.0).then(|| k.iface_rx_packets.unwrap_or(0) as f64 / far.duration_s)
    });
    let binomial_cv = iface_pps.filter(|i| *i > rate && rate > 0.0).map(|i| {
        let p = rate / i;
        ((1.0 - p) / (p * i * s.interval_s.max(1e-3))).sqrt()
    });
    Some(Ingress {
        gap,
        rate,
        cv: cv(&rows),
        binomial_cv,
        rows: rows.len(),
    })
}

/// Loss in the path between the hosts: what this host sent, less what the far interface
/// counted (all its traffic: an upper bound on ours), less every drop either end counted that
/// may have kept a packet from that counter (this host's egress; the far NIC's missed and
/// dropped packets and its backlog drops, which a veth counts before its receive counter).
/// `None` without the far interface's count.
fn path_loss(ctx: &Ctx, r: &Results, far: &FarEnd, loss: &FarLoss, far_missed: u64) -> Option<u64> {
    let arrived = far.kernel.iface_rx_packets?;
    let far_dropped = far_missed + loss.iface + loss.backlog;
    Some(
        r.tx_packets
            .saturating_sub(arrived)
            .saturating_sub(near_egress_drops(ctx, r))
            .saturating_sub(far_dropped),
    )
}

/// The far end as measured: where its datagrams died, its busiest cores, the sender's.
struct Far<'a> {
    r: &'a Results,
    far: &'a FarEnd,
    loss: FarLoss,
    is_udp: bool,
    lossy: bool,
    loss_ratio: f64,
    here: Option<(u32, f64)>,
    soft: &'a FarCpu,
    busy: &'a FarCpu,
    far_missed: u64,
    in_path: u64,
    arrivals: Vec<f64>,
    cv_arr: Option<f64>,
    cv_off: Option<f64>,
    flat: bool,
    path_dominates: bool,
    ingress: Option<Ingress>,
}

impl Far<'_> {
    fn here_busiest(&self) -> f64 {
        self.here.map_or(0.0, |(_, v)| v)
    }

    fn both_full(&self) -> bool {
        self.here_busiest() >= 90.0
    }

    fn host(&self) -> String {
        if self.far.host.is_empty() {
            self.far.address.clone()
        } else {
            format!("{} ({})", self.far.host, self.far.address)
        }
    }

    fn sender(&self) -> String {
        match self.here {
            Some((c, v)) => format!(
                "the sender's busiest core (CPU {c}) was at {}",
                fmt::value(v, Unit::Percent)
            ),
            None => "the sender's cores were not sampled".into(),
        }
    }

    fn both(&self) -> &'static str {
        if self.both_full() {
            " Both ends were near full, so the sender may be as much the limit."
        } else {
            ""
        }
    }

    /// Confidence from a branch's own strength, the loss there and the sender's headroom.
    fn confidence(&self, ctx: &Ctx, strength: f64) -> f64 {
        let headroom = ramp(90.0 - self.here_busiest(), 0.0, 40.0);
        let s = if self.is_udp {
            (strength + ramp(self.loss_ratio, 1e-4, 1e-2) + headroom) / 3.0
        } else {
            (strength + headroom) / 2.0
        };
        let band = if self.both_full() { 0.35 } else { 0.5 };
        (band + 0.4 * s) * ctx.data_factor()
    }

    /// Held at a rate in the path: most of the loss never reached the far interface, and
    /// arrivals stayed flat while the offer swung (or flatter than chance), below the offer;
    /// or most of what was sent vanished there while arrivals held steady (see
    /// [`Far::most_lost_in_path`]).
    fn path_held(&self) -> bool {
        self.path_dominates
            && (self.flat || self.most_lost_in_path())
            && mean(&self.arrivals).is_some_and(|a| a < 0.97 * self.r.tx_pps)
    }

    /// Most of what was sent ([`MOST_LOST`] or more) never reached the far end, and what did
    /// arrived at a steady rate (cv at most 2 %). A steady offer cannot tell a limiter from
    /// random loss by the arrivals' swings, but loss that large is what a limiter below the
    /// offer does; random loss on that scale is a broken link, which the words name as the
    /// alternative, with the way to tell (a limiter's arrivals stay put when the offer moves).
    fn most_lost_in_path(&self) -> bool {
        self.in_path as f64 >= MOST_LOST * self.loss.sent as f64
            && self.cv_arr.is_some_and(|c| c <= 0.02)
            && self.arrivals.len() >= 2
    }
}

/// Share of what was sent that, lost in the path, makes a steady arrival rate a limiter's.
const MOST_LOST: f64 = 0.5;

fn measure<'a>(ctx: &Ctx<'a>) -> Option<Far<'a>> {
    let r = ctx.run.results.as_ref()?;
    let far = r.far.as_deref()?;
    let loss = far_loss(r, far);
    let is_udp = far.app.udp_packets > 0 || far.app.udp_requests_echoed > 0;
    let loss_ratio = if loss.sent > 0 {
        loss.total_lost as f64 / loss.sent as f64
    } else {
        0.0
    };
    let here = ctx
        .per_cpu_busy()
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let soft = far
        .cpu
        .iter()
        .max_by(|a, b| a.softirq_pct.total_cmp(&b.softirq_pct))?;
    let busy = far
        .cpu
        .iter()
        .max_by(|a, b| a.busy_pct.total_cmp(&b.busy_pct))?;
    // UDP must show loss at the far end to call it the ceiling; TCP has no loss (flow control
    // slows the sender instead), so a full far core with an idle sender is the evidence.
    let lossy = loss_ratio >= 1e-4 || loss.socket + loss.backlog + loss.iface > 0;
    let (arrivals, far_missed) = far_arrivals(far);
    let in_path = if is_udp {
        path_loss(ctx, r, far, &loss, far_missed).unwrap_or(0)
    } else {
        0
    };
    // Held at a rate: arrivals steady while the offered rate moved. Random loss in the path
    // is steady too under a steady offer (a fixed share of it), so a paced run, whose offer
    // does not move, cannot tell a limiter from a lossy path and names neither.
    let offered: Vec<f64> = ctx
        .series()
        .total(n::LOAD_TX_PPS)
        .map(|m| ctx.values(m))
        .unwrap_or_default();
    let (cv_arr, cv_off) = (cv(&arrivals), cv(&offered));
    // Random loss passes each datagram with probability p, so even a perfectly steady offer
    // of n a row arrives with a binomial spread, cv = sqrt((1 − p) / (p n)); a limiter passes
    // its rate, flatter than that.
    let binomial_cv = match (mean(&arrivals), mean(&offered)) {
        (Some(a), Some(o)) if a > 0.0 && o > a => {
            let p = a / o;
            let n = o * far.series.interval_s.max(1e-3);
            Some(((1.0 - p) / (p * n)).sqrt())
        }
        _ => None,
    };
    let flat = arrivals.len() >= 2
        && match (cv_arr, cv_off) {
            (Some(a), Some(o)) => {
                a <= 0.02
                    && ((o >= 0.01 && a <= o / 4.0)
                        || binomial_cv.is_some_and(|b| flatter_than_chance(a, b, arrivals.len())))
            }
            _ => false,
        };
    let path_dominates = in_path as f64 >= 0.5 * loss.total_lost.max(1) as f64
        && in_path as f64 >= 1e-3 * loss.sent as f64;
    let ingress = if is_udp {
        ingress(far, &loss, mean(&arrivals))
    } else {
        None
    };
    Some(Far {
        ingress,
        r,
        far,
        loss,
        is_udp,
        lossy,
        loss_ratio,
        here,
        soft,
        busy,
        far_missed,
        in_path,
        arrivals,
        cv_arr,
        cv_off,
        flat,
        path_dominates,
    })
}

/// The far-end rule: the receiving machine's resource in the ledger, where its own counters
/// place the ceiling (the path between the hosts, a far core in softirq, the far application
/// on a full core, or a far queue), and where loss began follows it.
pub fn check(ctx: &Ctx) -> Option<Entry> {
    let m = measure(ctx)?;
    if m.is_udp && !m.lossy {
        return None;
    }
    let far_cpu = |cpu: u32| Resource::Cpu {
        cpus: vec![cpu],
        far: true,
    };
    let ingress_held = m.ingress.as_ref().is_some_and(Ingress::flat);
    let (mut f, class, resource) = if ingress_held {
        (
            ingress_limiter(ctx, &m),
            Class::Ceiling,
            Resource::Shaper {
                name: "the receiver's ingress".into(),
            },
        )
    } else if m.path_held() {
        (
            path_limiter(ctx, &m),
            Class::Ceiling,
            Resource::Shaper {
                name: "the path between the hosts".into(),
            },
        )
    } else if m.soft.softirq_pct >= 70.0 {
        (far_softirq(ctx, &m), Class::Ceiling, far_cpu(m.soft.cpu))
    } else if m.busy.busy_pct >= 90.0 && (m.lossy || !m.is_udp) {
        (far_receiver(ctx, &m), Class::Ceiling, far_cpu(m.busy.cpu))
    } else if m.loss.socket + m.loss.backlog > 0 {
        let (f, name) = far_queue(ctx, &m);
        (
            f,
            Class::Loss,
            Resource::Queue {
                name: name.into(),
                far: true,
            },
        )
    } else {
        return None;
    };
    far_evidence(ctx, &m, &mut f);
    let held = m.path_held() && !ingress_held;
    let mut e = Entry::claim(class, resource, f).explains(Explains::cause(cause::SATURATION));
    if let Some(g) = m.ingress.as_ref().filter(|_| ingress_held) {
        if m.r.tx_pps > g.rate && g.rate > 0.0 {
            e = e
                .sized(
                    Quantity::new(
                        g.rate,
                        Unit::PacketsPerSecond,
                        "the rate it let through, flat",
                    ),
                    Quantity::new(
                        g.rate,
                        Unit::PacketsPerSecond,
                        "arrivals at the far IP layer",
                    ),
                )
                .scaling()
                .recovering(m.r.tx_pps / g.rate);
        }
    }
    if e.cause == cause::RECEIVER_SATURATED || e.cause == cause::SOFTIRQ_BOUND {
        // A far core that could not keep up is why its socket overflowed.
        e = e.explains(Explains::cause(cause::BUFFER_DROPS));
    }
    if held {
        // A limiter that discards what it does not pass: relieving it delivers what the sender
        // already offered, and nothing downstream of the sender's core limits it more.
        let arrived = mean(&m.arrivals).unwrap_or(0.0);
        if arrived > 0.0 && m.r.tx_pps > 0.0 {
            e = e
                .sized(
                    Quantity::new(
                        arrived,
                        Unit::PacketsPerSecond,
                        "the rate it let through, flat",
                    ),
                    Quantity::new(
                        arrived,
                        Unit::PacketsPerSecond,
                        "arrivals at the far interface",
                    ),
                )
                .scaling()
                .recovering(m.r.tx_pps / arrived);
        }
    }
    if class == Class::Ceiling && !matches!(e.resource, Resource::Shaper { .. }) {
        let softirq = e.cause == cause::SOFTIRQ_BOUND;
        let core = if softirq { m.soft } else { m.busy };
        e = e.sized(
            Quantity::new(100.0, Unit::Percent, format!("far end CPU {}", core.cpu)),
            Quantity::new(
                if softirq {
                    core.softirq_pct
                } else {
                    core.busy_pct
                },
                Unit::Percent,
                if softirq { "in softirq" } else { "busy" },
            ),
        );
    }
    Some(e)
}

fn path_limiter(ctx: &Ctx, m: &Far) -> Finding {
    let held = mean(&m.arrivals).unwrap_or(0.0);
    let frame = m.r.frame_bytes.map_or(0.0, |b| b as f64);
    let bits = if frame > 0.0 {
        format!(
            " ({} of frames)",
            fmt::value(held * frame * 8.0, Unit::BitsPerSecond)
        )
    } else {
        String::new()
    };
    let share = m.in_path as f64 / m.loss.sent.max(1) as f64;
    let how = if m.flat {
        format!(
            "arrivals there stayed flat while the {} offered swung",
            fmt::value(m.r.tx_pps, Unit::PacketsPerSecond)
        )
    } else {
        format!(
            "{} of what was sent vanished there while arrivals held steady (cv {})",
            fmt::value(share * 100.0, Unit::Percent),
            fmt::value(m.cv_arr.unwrap_or(0.0) * 100.0, Unit::Percent)
        )
    };
    let swing = if m.flat {
        0.2 * ramp(
            m.cv_off.unwrap_or(0.0) / m.cv_arr.unwrap_or(1.0).max(1e-6),
            4.0,
            20.0,
        )
    } else {
        0.0
    };
    let mut f = finding(
        cause::SHAPER,
        format!(
            "Something in the path between this host and the receiver {} held the traffic at {}{bits}: {} of the {} datagrams sent never reached the far end's interface, neither end counted a drop for them, and {how}. A policer, a shaper or a full link between the hosts.",
            m.host(),
            fmt::value(held, Unit::PacketsPerSecond),
            fmt::number(m.in_path as f64),
            fmt::number(m.loss.sent as f64),
        ),
        (0.5 + 0.2 * ramp(share, 1e-3, 0.05) + swing) * ctx.data_factor(),
    );
    if frame > 0.0 {
        f.evidence.push(ctx.ev(
            "far.frame_bits_per_s",
            Some((held * frame * 8.0, Unit::BitsPerSecond)),
            format!(
                "{} × {frame} B frames × 8 = {}",
                fmt::value(held, Unit::PacketsPerSecond),
                fmt::value(held * frame * 8.0, Unit::BitsPerSecond)
            ),
        ));
    }
    for (what, cv) in [("arrivals", m.cv_arr), ("the offered rate", m.cv_off)] {
        if let Some(cv) = cv {
            f.evidence.push(ctx.ev(
                "cv_pct",
                Some((cv * 100.0, Unit::Percent)),
                format!(
                    "{what} varied by {} (coefficient of variation)",
                    fmt::value(cv * 100.0, Unit::Percent)
                ),
            ));
        }
    }
    f.evidence.push(ctx.ev(
        format!(
            "far.iface_rx_pps{{iface={}}}",
            m.far.kernel.iface.as_deref().unwrap_or("?")
        ),
        Some((held, Unit::PacketsPerSecond)),
        format!(
            "arrivals at the far interface: {} (cv {}) while the offered rate varied (cv {})",
            fmt::value(held, Unit::PacketsPerSecond),
            fmt::value(m.cv_arr.unwrap_or(0.0) * 100.0, Unit::Percent),
            fmt::value(m.cv_off.unwrap_or(0.0) * 100.0, Unit::Percent)
        ),
    ));
    f.alternatives.push(if m.flat {
        "random loss in the path: ruled out because arrivals did not follow the offered rate's swings (a lossy path passes a fixed share of whatever is offered)".into()
    } else {
        format!(
            "random loss of {} in the path (a failing link): not ruled out by this run, whose offer held too steady to show whether arrivals follow it; run at a lower rate: a limiter still passes the same rate, a lossy path a fixed share",
            fmt::value(share * 100.0, Unit::Percent)
        )
    });
    f.advice.push(advice(
        "find the limiter on the path: the switch or router ports' drop counters, policers (tc police, nftables limit, cloud bandwidth caps), and each link's speed; then offer no more than it passes",
        "sent and arrived at the far interface agree",
        Some("a policer drops what exceeds its rate, so pacing at or below it is loss-free"),
    ));
    f
}

fn ingress_limiter(ctx: &Ctx, m: &Far) -> Finding {
    let g = m.ingress.as_ref().expect("only called with an ingress gap");
    let mut f = finding(
        cause::SHAPER,
        format!(
            "A filter on the receiver's ingress held the traffic at {}: the far end's interface {} counted {} datagrams, its IP layer received only {}/s of them, flat (cv {:.2} % where chance would spread them {:.2} %), and no counter dropped the other {}. An ingress policer (an nftables netdev ingress rule, a tc ingress police action) or filter on the receiver.",
            fmt::value(g.rate, Unit::PacketsPerSecond),
            m.far.kernel.iface.as_deref().unwrap_or("?"),
            fmt::number(m.far.kernel.iface_rx_packets.unwrap_or(0) as f64),
            fmt::number(g.rate),
            g.cv.unwrap_or(0.0) * 100.0,
            g.binomial_cv.unwrap_or(0.0) * 100.0,
            fmt::number(g.gap as f64)
        ),
        (0.55 + 0.35 * ramp(g.gap as f64 / m.loss.sent.max(1) as f64, 1e-3, 0.2)) * ctx.data_factor(),
    );
    f.evidence.push(ctx.ev(
        format!("far.{}", n::IP_IN_RECEIVES_PER_S),
        Some((g.rate, Unit::PacketsPerSecond)),
        format!(
            "the far IP layer received {}",
            fmt::value(g.rate, Unit::PacketsPerSecond)
        ),
    ));
    f.alternatives.push(
        "random loss on the receiver: ruled out, the arrivals were flatter than chance allows"
            .into(),
    );
    f.advice.push(advice(
        "on the receiver: nft list ruleset (netdev ingress chains, limit rules) and tc -s filter show dev IF ingress",
        "find the rule that drops above a rate; raise or remove it, or offer no more than it passes",
        Some("a policer usually protects something: ask why it is there"),
    ));
    f
}

fn far_softirq(ctx: &Ctx, m: &Far) -> Finding {
    let mut f = finding(
        cause::SOFTIRQ_BOUND,
        format!(
            "The receiver {} spent {} of CPU {} in softirq while {}: receive processing on that core of the far end is the ceiling.{}",
            m.host(),
            fmt::value(m.soft.softirq_pct, Unit::Percent),
            m.soft.cpu,
            m.sender(),
            m.both()
        ),
        m.confidence(ctx, ramp(m.soft.softirq_pct, 70.0, 95.0)),
    );
    f.advice.push(advice(
        if ctx.loopback_only() {
            "on the receiver: RPS on lo (/sys/class/net/lo/queues/rx-0/rps_cpus) to spread the receive softirq, or more flows on more receiving threads"
        } else {
            "on the receiver: spread receive processing (RPS via /sys/class/net/IF/queues/rx-N/rps_cpus, more RSS queues with ethtool -L, or threaded NAPI), or more flows so RSS can use more cores"
        },
        "the far end's softirq spread over several cores and a higher delivered rate",
        Some("one flow hashes to one queue and one core"),
    ));
    f
}

fn far_receiver(ctx: &Ctx, m: &Far) -> Finding {
    let b = m.busy;
    let mut f = finding(
        cause::RECEIVER_SATURATED,
        format!(
            "The receiver {} kept CPU {} {} busy ({} user, {} system, {} softirq) while {}: the receiving application on the far end could not keep up.{}",
            m.host(),
            b.cpu,
            fmt::value(b.busy_pct, Unit::Percent),
            fmt::value(b.user_pct, Unit::Percent),
            fmt::value(b.system_pct, Unit::Percent),
            fmt::value(b.softirq_pct, Unit::Percent),
            m.sender(),
            m.both()
        ),
        m.confidence(ctx, ramp(b.busy_pct, 90.0, 99.0)),
    );
    f.advice.push(advice(
        "on the receiver: more receiving threads or sockets (SO_REUSEPORT), batch reads (recvmmsg, GRO), or a faster core for the reader",
        "the far end's busiest core below 90 % and less loss",
        None,
    ));
    f
}

fn far_queue(ctx: &Ctx, m: &Far) -> (Finding, &'static str) {
    let (queue, knob) = if m.loss.socket >= m.loss.backlog {
        (
            "socket receive buffer",
            "on the receiver: a larger receive buffer (sysctl net.core.rmem_max and SO_RCVBUF, or netceil serve --rcvbuf)",
        )
    } else {
        (
            "per-CPU backlog",
            "on the receiver: sysctl net.core.netdev_max_backlog higher",
        )
    };
    let mut f = finding(
        cause::BUFFER_DROPS,
        format!(
            "The receiver {} dropped datagrams in its {queue} while its busiest core was at {} and {}: bursts overran a short queue there, not a full CPU.",
            m.host(),
            fmt::value(m.busy.busy_pct, Unit::Percent),
            m.sender()
        ),
        m.confidence(ctx, ramp((m.loss.socket + m.loss.backlog) as f64, 0.0, 100.0)),
    );
    f.advice.push(advice(
        knob,
        "no drops at the far end at the same rate",
        None,
    ));
    (f, queue)
}

fn far_evidence(ctx: &Ctx, m: &Far, f: &mut Finding) {
    let (soft, busy, far) = (m.soft, m.busy, m.far);
    f.evidence.push(ctx.ev(
        format!("far.cpu_softirq_pct{{cpu={}}}", soft.cpu),
        Some((soft.softirq_pct, Unit::Percent)),
        format!(
            "far end CPU {}: softirq {}",
            soft.cpu,
            fmt::value(soft.softirq_pct, Unit::Percent)
        ),
    ));
    f.evidence.push(ctx.ev(
        format!("far.cpu_busy_pct{{cpu={}}}", busy.cpu),
        Some((busy.busy_pct, Unit::Percent)),
        format!(
            "far end CPU {}: busy {}",
            busy.cpu,
            fmt::value(busy.busy_pct, Unit::Percent)
        ),
    ));
    if m.is_udp {
        let l = &m.loss;
        f.evidence.push(ctx.ev(
            "far.udp_lost", Some((l.total_lost as f64, Unit::Count)),
            format!(
                "{} of {} datagrams lost there ({} at the socket, {} in the backlog, {} at the interface, {} missed by its NIC; at least {} never reached it)",
                fmt::number(l.total_lost as f64),
                fmt::number(l.sent as f64),
                fmt::number(l.socket as f64),
                fmt::number(l.backlog as f64),
                fmt::number(l.iface as f64),
                fmt::number(m.far_missed as f64),
                fmt::number(m.in_path as f64)
            ),
        ));
    }
    f.evidence.push(ctx.ev(
        "cpu_busy_pct (sender, busiest core)",
        Some((m.here_busiest(), Unit::Percent)),
        m.sender(),
    ));
    f.alternatives.push(
        "a ceiling on the sender: ruled out when its busiest core had headroom (see the evidence)"
            .into(),
    );
    if ctx.run.meta.host.hostname.as_deref() == Some(far.host.as_str()) && !far.host.is_empty() {
        // Two namespaces of one machine: the ends share the same CPUs, so "the sender had
        // headroom" and "the receiver's core" are readings of the same cores.
        f.alternatives.push(format!(
            "both ends ran on {} (network namespaces of one machine): their CPU figures are the same cores seen twice, so a hot core may be the other end's work",
            far.host
        ));
    }
    f.next = Some(
        "run again with the same rate after the change on the far end; `netceil compare` sets the two runs' far ends side by side (its busiest core, softirq share, loss and drops)".into(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use netceil_model::{names as n, FarCpu};

    /// A UDP run to a far end: the sender's cores at `here` % busy; the far end's two cores as
    /// (softirq %, busy %, user %); `lost` of 1 M datagrams lost there, `socket` of them at
    /// its socket.
    fn run(
        here: f64,
        far_cpus: [(f64, f64, f64); 2],
        lost: u64,
        socket: u64,
    ) -> netceil_model::Run {
        let mut run = live_run(10, |s, r| {
            put(s, r, n::LOAD_TX_PPS, &[], 100_000.0 + noise(r, 100.0));
            cpu_row(s, r, &[(here * 0.2, here * 0.8, 0.0), (5.0, 5.0, 0.0)]);
        });
        let mut far = FarEnd {
            address: "198.18.0.2:5301".into(),
            host: "far".into(),
            ..FarEnd::default()
        };
        far.app.udp_packets = 1_000_000 - lost;
        far.app.udp_lost = lost;
        far.app.udp_socket_drops = Some(socket);
        for (i, (soft, busy, user)) in far_cpus.into_iter().enumerate() {
            far.cpu.push(FarCpu {
                cpu: i as u32,
                softirq_pct: soft,
                busy_pct: busy,
                user_pct: user,
                system_pct: (busy - soft - user).max(0.0),
                idle_pct: 100.0 - busy,
                irq_pct: 0.0,
            });
        }
        run.results = Some(Results {
            tx_packets: 1_000_000,
            far: Some(Box::new(far)),
            ..Results::default()
        });
        run
    }

    #[test]
    fn a_far_core_full_of_softirq_with_an_idle_sender_is_named() {
        let f = on(
            &run(40.0, [(98.0, 100.0, 1.0), (3.0, 10.0, 2.0)], 50_000, 50_000),
            check,
        )
        .expect("fires");
        assert_eq!(f.cause, cause::SOFTIRQ_BOUND);
        assert!(
            f.summary.contains("CPU 0") && f.summary.contains("far"),
            "{}",
            f.summary
        );
        assert!(f.confidence > 0.6, "{}", f.confidence);
    }

    #[test]
    fn the_far_application_or_its_buffer_are_told_apart_by_how_the_core_spent_its_time() {
        let app = on(
            &run(40.0, [(10.0, 99.0, 70.0), (3.0, 10.0, 2.0)], 20_000, 20_000),
            check,
        )
        .expect("fires");
        assert_eq!(app.cause, cause::RECEIVER_SATURATED);
        let buf = on(
            &run(40.0, [(20.0, 45.0, 10.0), (3.0, 10.0, 2.0)], 2_000, 2_000),
            check,
        )
        .expect("fires");
        assert_eq!(buf.cause, cause::BUFFER_DROPS);
        assert!(
            buf.summary.contains("socket receive buffer"),
            "{}",
            buf.summary
        );
    }

    #[test]
    fn no_loss_at_the_far_end_is_no_far_ceiling_and_a_full_sender_lowers_the_claim() {
        assert!(on(
            &run(40.0, [(98.0, 100.0, 1.0), (3.0, 10.0, 2.0)], 0, 0),
            check
        )
        .is_none());
        let idle = on(
            &run(40.0, [(98.0, 100.0, 1.0), (3.0, 10.0, 2.0)], 50_000, 50_000),
            check,
        )
        .unwrap();
        let full = on(
            &run(99.0, [(98.0, 100.0, 1.0), (3.0, 10.0, 2.0)], 50_000, 50_000),
            check,
        )
        .unwrap();
        assert!(full.confidence < idle.confidence - 0.1);
        assert!(full.summary.contains("Both ends"), "{}", full.summary);
        // Without a far end, nothing.
        let mut plain = run(40.0, [(98.0, 100.0, 1.0), (3.0, 10.0, 2.0)], 50_000, 50_000);
        plain.results.as_mut().unwrap().far = None;
        assert!(on(&plain, check).is_none());
    }

    /// The run above with `arrived` packets counted at the far interface (veth1) and its
    /// arrivals per second over 8 rows, and `qdisc_drops` per second on this host's egress.
    fn across(
        lost: u64,
        arrived: u64,
        arrivals: &[f64],
        qdisc_drops: f64,
        offered_swing: f64,
    ) -> netceil_model::Run {
        let mut run = run(40.0, [(5.0, 30.0, 5.0), (3.0, 10.0, 2.0)], lost, 0);
        for r in 0..run.series.len() {
            let swing = if r % 2 == 0 {
                offered_swing
            } else {
                -offered_swing
            };
            put(
                &mut run.series,
                r,
                n::LOAD_TX_PPS,
                &[],
                100_000.0 * (1.0 + swing),
            );
        }
        for r in 0..run.series.len() {
            run.series.t_s[r] = (r + 1) as f64;
        }
        let rows = run.series.len();
        for r in 0..rows {
            put(
                &mut run.series,
                r,
                n::QDISC_DROPS_PER_S,
                &[("iface", "veth0"), ("qdisc", "tbf")],
                qdisc_drops,
            );
        }
        let res = run.results.as_mut().unwrap();
        res.tx_pps = 100_000.0;
        res.duration_s = 10.0;
        let far = res.far.as_mut().unwrap();
        far.duration_s = 10.0;
        far.kernel.iface = Some("veth1".into());
        far.kernel.iface_rx_packets = Some(arrived);
        let mut s = netceil_model::Series::new(1.0);
        let id = netceil_model::MetricId::new(n::IFACE_RX_PPS).with(n::LABEL_IFACE, "veth1");
        for (r, v) in arrivals.iter().enumerate() {
            s.push_row((r + 1) as f64);
            s.set(&id, netceil_model::Unit::PacketsPerSecond, *v);
        }
        far.series = s;
        run
    }

    #[test]
    fn loss_in_the_path_held_at_a_flat_rate_is_a_limiter_between_the_hosts() {
        let flat = [
            60e3, 60_100.0, 59_900.0, 60e3, 60_050.0, 59_950.0, 60e3, 60e3,
        ];
        let f = on(&across(400_000, 600_000, &flat, 0.0, 0.05), check).expect("fires");
        assert_eq!(f.cause, cause::SHAPER);
        assert!(
            f.summary
                .contains("path between this host and the receiver")
                && f.summary.contains("60.0 kpps"),
            "{}",
            f.summary
        );
        // Arrivals that swing: not held at a rate.
        let ragged = [20e3, 90e3, 35e3, 80e3, 60e3, 95e3, 10e3, 70e3];
        assert!(on(&across(400_000, 600_000, &ragged, 0.0, 0.05), check).is_none());
        // A steady offer: a lossy path passes a steady share too, with a binomial spread (60 %
        // of 100 kpps: cv 0.26 %) that these arrivals (cv 0.11 %) do not undercut enough, so
        // no limiter is named.
        assert!(on(&across(400_000, 600_000, &flat, 0.0, 0.0), check).is_none());
        // Arrivals far flatter than random loss could pass (20 % of a steady 100 kpps arriving
        // within ±2 a second, where chance alone would spread them ±0.6 %): held at a rate.
        let held = [
            20e3, 20_002.0, 19_998.0, 20e3, 20_001.0, 19_999.0, 20e3, 20e3,
        ];
        let f = on(&across(800_000, 200_000, &held, 0.0, 0.0), check).expect("limiter");
        assert_eq!(f.cause, cause::SHAPER, "{}", f.summary);
        // Most of a steady offer vanished in the path and arrivals held steady, no flatter
        // than chance: a limiter, with random loss that large left as the alternative to test.
        let steady = [
            20e3, 20_060.0, 19_940.0, 20e3, 20_050.0, 19_950.0, 20e3, 20e3,
        ];
        let f = on(&across(800_000, 200_000, &steady, 0.0, 0.0), check).expect("limiter");
        assert_eq!(f.cause, cause::SHAPER, "{}", f.summary);
        assert!(
            f.summary.contains("80 % of what was sent vanished"),
            "{}",
            f.summary
        );
        assert!(
            f.alternatives
                .iter()
                .any(|a| a.contains("random loss of 80 %")),
            "{:?}",
            f.alternatives
        );
        // The far end's backlog dropped them before its interface counter saw them (a veth
        // counts only what the backlog took): the far end, not the path.
        let mut backlog = across(400_000, 600_000, &flat, 0.0, 0.05);
        let far = backlog.results.as_mut().unwrap().far.as_mut().unwrap();
        far.kernel.softnet_dropped = Some(400_000);
        assert!(on(&backlog, check).is_none_or(|f| f.cause != cause::SHAPER));
        // The sender's own qdisc dropped them: this host's shaper, not the path's.
        assert!(on(&across(400_000, 600_000, &flat, 40_000.0, 0.05), check).is_none());
        // The far interface counted them all: the loss was at the far end, not in the path.
        assert!(on(&across(400_000, 1_000_000, &flat, 0.0, 0.05), check)
            .is_none_or(|f| f.cause != cause::SHAPER));
    }

    #[test]
    fn a_filter_on_the_receivers_ingress_held_the_rate_flatter_than_chance() {
        // 1 M sent; the far interface counted them all, its IP layer took 3 670 a second (one
        // datagram in 27), and no counter dropped the rest.
        let mut run = run(40.0, [(10.0, 30.0, 5.0), (3.0, 10.0, 2.0)], 963_300, 0);
        let res = run.results.as_mut().unwrap();
        res.tx_pps = 100_000.0;
        let far = res.far.as_mut().unwrap();
        far.duration_s = 10.0;
        far.app.udp_packets = 36_700;
        far.kernel.iface = Some("veth1".into());
        far.kernel.iface_rx_packets = Some(1_000_000);
        far.kernel.udp_in_datagrams = Some(36_700);
        far.kernel.udp_in_errors = Some(0);
        let mut s = netceil_model::Series::new(1.0);
        for (r, v) in [
            7_390.0, 3_671.0, 3_670.0, 3_672.0, 3_669.0, 3_671.0, 3_670.0, 3_672.0,
        ]
        .iter()
        .enumerate()
        {
            s.push_row((r + 1) as f64);
            s.set(
                &netceil_model::MetricId::new(n::IP_IN_RECEIVES_PER_S),
                netceil_model::Unit::PerSecond,
                *v,
            );
        }
        far.series = s;
        let f = on(&run, check).expect("ingress limiter");
        assert_eq!(f.cause, cause::SHAPER);
        assert!(f.summary.contains("receiver's ingress"), "{}", f.summary);
        // The same gap with arrivals as ragged as chance: no limiter is named.
        let far = run.results.as_mut().unwrap().far.as_mut().unwrap();
        let id = netceil_model::MetricId::new(n::IP_IN_RECEIVES_PER_S);
        for (r, v) in [
            7_390.0, 3_500.0, 3_800.0, 3_600.0, 3_750.0, 3_560.0, 3_790.0, 3_672.0,
        ]
        .iter()
        .enumerate()
        {
            far.series
                .set_at(r, &id, netceil_model::Unit::PerSecond, *v);
        }
        assert!(on(&run, check).is_none_or(|f| f.cause != cause::SHAPER));
    }
}
