//! Bufferbloat: under load the round trip grew because a queue held the packets.
//!
//! Mechanism: bulk TCP fills the queue in front of the path's bottleneck until loss or its
//! window stops it. A packet that joins that queue waits for everything ahead of it to drain:
//! `backlog ÷ drain rate`. A small request/response probe sharing the path (rrul's) waits
//! there too, once each way, so its round trip grows by the sum of the queues' delays on the
//! way out and back. A qdisc says how much it holds (its backlog, from its statistics over
//! rtnetlink) and how fast it drains (its configured rate, or what it passed), so the delay it
//! adds can be sized and set against the growth the probe measured.
//!
//! Look-alikes, and what tells them apart:
//! - a CPU the bulk flows fill (a CPU-bound receiver, or loopback, whose qdisc is `noqueue`):
//!   the probe waits for a core, not behind packets; no queue holds a backlog whose delay
//!   matches the growth, and the CPUs are busy. Not bufferbloat: the CPU rules name it, and
//!   this rule only sizes the queues to rule them out.
//! - a queue this host cannot see (the far host's, a device's, a router's): the qdiscs hold
//!   nothing, but the bulk flows' own round trip (tcp_info srtt) rose above their minimum by
//!   about the probe's growth, and the path is not loopback: the packets waited on the path.
//! - latency that did not grow: not bufferbloat, whatever queues there are.
//!
//! Fires on an rrul run whose median round trip grew by at least [`GREW_MIN_US`] and at least
//! doubled, when the queues it can size explain at least [`EXPLAINED_MIN`] of the growth (or,
//! off loopback, the flows' RTT rise does). Confidence: floor 0.5, band 0.45; strengths: how
//! well the sized delay matches the growth (half → 0, within 20 % → 1), and how large the
//! growth is against the idle round trip (2× → 0, 10× → 1); × the data factor.

use netceil_model::{fmt, names as n, Finding, Metric, Quantity, Resource, Unit};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::ledger::{Class, Entry, Relief};
use crate::stats::{mean, mean_strength, ramp};

/// Least growth of the median round trip that counts, µs.
const GREW_MIN_US: f64 = 1000.0;
/// Least share of the growth the sized queue delay must explain.
const EXPLAINED_MIN: f64 = 0.5;
/// Machine CPU busy % from which the probe may have waited for a core.
const CPU_BUSY_MIN: f64 = 85.0;

/// A qdisc that held packets over the loaded rows.
struct Held<'a> {
    backlog: &'a Metric,
    backlog_bytes: f64,
    drain_bits: f64,
    /// Whether `drain_bits` is the configured rate (else what it passed).
    configured: bool,
    delay_us: f64,
}

impl Held<'_> {
    fn label(&self, k: &str) -> &str {
        self.backlog.id.label(k).unwrap_or("?")
    }

    fn place(&self) -> (Option<&str>, &str) {
        (
            self.backlog.id.label(n::LABEL_NETNS),
            self.label(n::LABEL_IFACE),
        )
    }

    fn words(&self) -> String {
        let ns = self
            .backlog
            .id
            .label(n::LABEL_NETNS)
            .map(|ns| format!(" in network namespace {ns}"))
            .unwrap_or_default();
        format!(
            "the {} qdisc on {}{ns}",
            self.label(n::LABEL_QDISC),
            self.label(n::LABEL_IFACE)
        )
    }
}

/// The rows of the loaded phase: where the bulk flows reported their rate; else the load rows.
fn loaded_rows(ctx: &Ctx) -> Vec<usize> {
    let rows: Vec<usize> = match ctx.series().total(n::LOAD_RX_BITS_PER_S) {
        Some(m) => ctx
            .rows
            .clone()
            .filter(|&i| m.values.get(i).copied().flatten().is_some())
            .collect(),
        None => Vec::new(),
    };
    if rows.is_empty() {
        ctx.rows.clone().collect()
    } else {
        rows
    }
}

fn mean_at(m: &Metric, rows: &[usize]) -> Option<f64> {
    let v: Vec<f64> = rows
        .iter()
        .filter_map(|&i| m.values.get(i).copied().flatten())
        .collect();
    mean(&v)
}

/// Each interface's qdisc that held the most delay (a root's backlog includes its children's,
/// so one per interface and namespace), largest first.
fn held_queues<'a>(ctx: &Ctx<'a>, rows: &[usize]) -> Vec<Held<'a>> {
    let run = ctx.run;
    let mut all: Vec<Held<'a>> = run
        .series
        .by_name(n::QDISC_BACKLOG_BYTES)
        .filter(|m| !matches!(m.id.label(n::LABEL_QDISC), Some("noqueue" | "ingress")))
        .filter_map(|m| {
            let backlog_bytes = mean_at(m, rows).filter(|b| *b > 0.0)?;
            let configured = ctx
                .sibling(m, n::QDISC_RATE_BITS_PER_S)
                .and_then(|r| mean_at(r, rows))
                .filter(|r| *r > 0.0);
            let passed = ctx
                .sibling(m, n::QDISC_BITS_PER_S)
                .and_then(|r| mean_at(r, rows))
                .filter(|r| *r > 0.0);
            let drain_bits = configured.or(passed)?;
            Some(Held {
                backlog: m,
                backlog_bytes,
                drain_bits,
                configured: configured.is_some(),
                delay_us: backlog_bytes * 8.0 / drain_bits * 1e6,
            })
        })
        .collect();
    all.sort_by(|a, b| b.delay_us.total_cmp(&a.delay_us));
    let mut seen: Vec<(Option<String>, String)> = Vec::new();
    all.retain(|h| {
        let (ns, iface) = h.place();
        let key = (ns.map(str::to_string), iface.to_string());
        if seen.contains(&key) {
            return false;
        }
        seen.push(key);
        true
    });
    all
}

/// How much the bulk flows' smoothed RTT rose over their minimum (median over the flows sampled),
/// µs: the queueing their own packets met on the path.
fn flows_queueing_us(ctx: &Ctx, rows: &[usize]) -> Option<f64> {
    let mut rises: Vec<f64> = ctx
        .series()
        .by_name(n::TCP_RTT_US)
        .filter(|m| m.id.label(n::LABEL_FLOW).is_some())
        .filter_map(|m| {
            let srtt = mean_at(m, rows)?;
            let min = ctx
                .sibling(m, n::TCP_MIN_RTT_US)
                .and_then(|x| mean_at(x, rows))?;
            Some((srtt - min).max(0.0))
        })
        .collect();
    if rises.is_empty() {
        return None;
    }
    rises.sort_by(f64::total_cmp);
    Some(rises[rises.len() / 2])
}

/// Unsent data in the bulk flows' own send buffers (send queue less what is in flight), as a
/// delay at each flow's delivery rate: median over the flows sampled, µs, with the bytes.
fn unsent_delay_us(ctx: &Ctx, rows: &[usize]) -> Option<(f64, f64)> {
    let mut per_flow: Vec<(f64, f64)> = ctx
        .series()
        .by_name(n::TCP_SEND_QUEUE_BYTES)
        .filter(|m| m.id.label(n::LABEL_FLOW).is_some())
        .filter_map(|m| {
            let queued = mean_at(m, rows)?;
            let in_flight = ctx
                .sibling(m, n::TCP_IN_FLIGHT_BYTES)
                .and_then(|x| mean_at(x, rows))?;
            let rate = ctx
                .sibling(m, n::TCP_DELIVERY_RATE_BITS_PER_S)
                .and_then(|x| mean_at(x, rows))
                .filter(|r| *r > 0.0)?;
            let unsent = (queued - in_flight).max(0.0);
            Some((unsent * 8.0 / rate * 1e6, unsent))
        })
        .collect();
    if per_flow.is_empty() {
        return None;
    }
    per_flow.sort_by(|a, b| a.0.total_cmp(&b.0));
    Some(per_flow[per_flow.len() / 2])
}

/// Least unsent-data delay in the flows' own send buffers worth advice, µs.
const UNSENT_ADVICE_US: f64 = 10_000.0;

/// The flows' own send buffers: evidence, and TCP_NOTSENT_LOWAT where they held data long.
/// That queue delays what is sent on those connections, not the probe's packets.
fn send_buffers(ctx: &Ctx, rows: &[usize], f: &mut Finding) {
    let Some((delay, bytes)) = unsent_delay_us(ctx, rows) else {
        return;
    };
    f.evidence.push(ctx.ev(
        n::TCP_SEND_QUEUE_BYTES, Some((bytes, Unit::Bytes)),
        format!(
            "the bulk flows' send buffers held {} not yet sent (median flow; send queue less in flight): {} at their delivery rate, for data sent on those connections",
            fmt::value(bytes, Unit::Bytes),
            fmt::value(delay, Unit::Microseconds)
        ),
    ));
    if delay >= UNSENT_ADVICE_US {
        f.advice.push(advice(
            "sysctl -w net.ipv4.tcp_notsent_lowat=131072 (or TCP_NOTSENT_LOWAT on the bulk sockets)",
            "the bulk flows keep at most 128 KiB unsent in their buffers: what an application sends on those connections waits less",
            Some("it does not shorten the queue the probe waited in"),
        ));
    }
}

/// The bufferbloat rule: the queue that held the packets, sized as its backlog over its
/// drain rate against the growth of the probe's round trip.
pub fn check(ctx: &Ctx) -> Option<Entry> {
    let rrul = ctx.run.results.as_ref()?.rrul.as_ref()?;
    let growth = rrul.inflation_p50_us;
    let idle = rrul.idle_rtt_us.p50.max(1.0);
    // A round trip that did not grow is no bufferbloat, whatever queues there are.
    if growth < GREW_MIN_US || growth < idle {
        return None;
    }
    let rows = loaded_rows(ctx);
    let queues = held_queues(ctx, &rows);
    let queued_us: f64 = queues.iter().map(|q| q.delay_us).sum();
    let explained = queued_us / growth;
    let flows_us = flows_queueing_us(ctx, &rows).filter(|_| !ctx.loopback_only());
    let busy = ctx.machine_busy().map(|(b, _)| b);
    let growth_strength = ramp(growth / idle, 2.0, 10.0);
    if explained >= EXPLAINED_MIN && !queues.is_empty() {
        let strength = mean_strength(&[
            Some(ramp((explained - 1.0).abs(), 0.5, 0.2)),
            Some(growth_strength),
        ])
        .unwrap_or(0.0);
        let confidence = (0.5 + 0.45 * strength) * ctx.data_factor();
        let mut f = qdisc_words(ctx, rrul, &queues, queued_us, flows_us, busy, confidence);
        send_buffers(ctx, &rows, &mut f);
        return Some(claim(
            &queues[0].words(),
            f,
            growth,
            queued_us,
            "the queues' backlog over their drain rate",
        ));
    }
    if let Some(f_us) = flows_us.filter(|f| *f >= EXPLAINED_MIN * growth) {
        let strength = mean_strength(&[
            Some(ramp((f_us / growth - 1.0).abs(), 0.5, 0.2)),
            Some(growth_strength),
        ])
        .unwrap_or(0.0);
        // Inferred from the flows, not seen at a queue: a lower band.
        let confidence = (0.45 + 0.35 * strength) * ctx.data_factor();
        let mut f = path_words(ctx, rrul, queued_us, f_us, busy, confidence);
        send_buffers(ctx, &rows, &mut f);
        return Some(claim(
            "a queue on the path",
            f,
            growth,
            f_us,
            "the bulk flows' smoothed RTT over their minimum",
        ));
    }
    // Sized and ruled out: the queues held too little to explain the growth.
    let why = match busy.filter(|b| *b >= CPU_BUSY_MIN) {
        Some(b) => format!(
            "the round trip grew {} (p50), but the queues sized hold {} of delay: not bufferbloat; the CPUs were {} busy, so the probe waited for a core",
            fmt::value(growth, Unit::Microseconds),
            fmt::value(queued_us, Unit::Microseconds),
            fmt::value(b, Unit::Percent)
        ),
        None => format!(
            "the round trip grew {} (p50), but the queues sized hold {} of delay: not bufferbloat",
            fmt::value(growth, Unit::Microseconds),
            fmt::value(queued_us, Unit::Microseconds)
        ),
    };
    Some(
        Entry::context(
            Resource::Queue {
                name: "qdisc backlog".into(),
                far: false,
            },
            cause::BUFFERBLOAT,
            why,
        )
        .sized(
            Quantity::new(
                growth,
                Unit::Microseconds,
                "the round trip's growth under load (p50)",
            ),
            Quantity::new(
                queued_us,
                Unit::Microseconds,
                "the queues' backlog over their drain rate",
            ),
        ),
    )
}

fn claim(queue: &str, f: Finding, growth: f64, delay_us: f64, how: &str) -> Entry {
    Entry::claim(
        Class::Ceiling,
        Resource::Queue {
            name: queue.to_string(),
            far: false,
        },
        f,
    )
    .sized(
        Quantity::new(
            growth,
            Unit::Microseconds,
            "the round trip's growth under load (p50)",
        ),
        Quantity::new(delay_us, Unit::Microseconds, how),
    )
    // Throughput is not what a queue limits: emptying it delivers no more.
    .relief(Relief::Nothing)
    // The bottleneck behind the queue and the drops at its tail are the same queue seen
    // from the throughput side; under rrul the question is the latency it adds.
    .explains_all(&[
        cause::SHAPER,
        cause::LINK_LIMIT,
        cause::TCP_PATH,
        cause::UNNAMED_CEILING,
    ])
}

fn rtt_evidence(ctx: &Ctx, rrul: &netceil_model::RrulResults, f: &mut Finding) {
    let us = |v: f64| fmt::value(v, Unit::Microseconds);
    f.evidence.push(ctx.ev_total(
        "rrul.inflation_p50_us",
        Some((rrul.inflation_p50_us, Unit::Microseconds)),
        format!(
            "the probe's round trip: p50 {} idle, {} loaded (+{}); p99 {} idle, {} loaded (+{})",
            us(rrul.idle_rtt_us.p50),
            us(rrul.loaded_rtt_us.p50),
            us(rrul.inflation_p50_us),
            us(rrul.idle_rtt_us.p99),
            us(rrul.loaded_rtt_us.p99),
            us(rrul.inflation_p99_us)
        ),
    ));
}

fn qdisc_words(
    ctx: &Ctx,
    rrul: &netceil_model::RrulResults,
    queues: &[Held],
    queued_us: f64,
    flows_us: Option<f64>,
    busy: Option<f64>,
    confidence: f64,
) -> Finding {
    let q = &queues[0];
    let us = |v: f64| fmt::value(v, Unit::Microseconds);
    let mut f = finding(
        cause::BUFFERBLOAT,
        format!(
            "Bufferbloat: the round trip grew {} under load (p50, {} → {}) because {} held packets: {} waiting on average, {} at the {} it drains at{}; the queues sized add {} to a round trip.",
            us(rrul.inflation_p50_us),
            us(rrul.idle_rtt_us.p50),
            us(rrul.loaded_rtt_us.p50),
            q.words(),
            fmt::value(q.backlog_bytes, Unit::Bytes),
            us(q.delay_us),
            fmt::value(q.drain_bits, Unit::BitsPerSecond),
            if q.configured { " (its configured rate)" } else { "" },
            us(queued_us)
        ),
        confidence,
    );
    rtt_evidence(ctx, rrul, &mut f);
    for h in queues {
        f.evidence.push(ctx.ev(
            h.backlog.id.to_string(),
            Some((h.backlog_bytes, Unit::Bytes)),
            format!(
                "{}: {} backlog on average over the loaded rows, draining at {} ({}): {} of delay",
                h.words(),
                fmt::value(h.backlog_bytes, Unit::Bytes),
                fmt::value(h.drain_bits, Unit::BitsPerSecond),
                if h.configured {
                    "its configured rate"
                } else {
                    "the rate it passed"
                },
                us(h.delay_us)
            ),
        ));
    }
    if let Some(fl) = flows_us {
        f.evidence.push(ctx.ev(
            n::TCP_RTT_US, Some((fl, Unit::Microseconds)),
            format!("the bulk flows' smoothed RTT rose {} over their minimum: their packets met the same queue", us(fl)),
        ));
    }
    if let Some(b) = busy {
        f.alternatives.push(format!(
            "a CPU the flows filled would also delay the probe: the machine was {} busy, and the queues' delay alone accounts for {} of the growth",
            fmt::value(b, Unit::Percent),
            fmt::value(queued_us / rrul.inflation_p50_us * 100.0, Unit::Percent)
        ));
    }
    let iface = q.label(n::LABEL_IFACE);
    let prefix = q
        .backlog
        .id
        .label(n::LABEL_NETNS)
        .map(|ns| format!("ip netns exec {ns} "))
        .unwrap_or_default();
    if q.configured {
        f.advice.push(advice(
            format!(
                "{prefix}tc qdisc replace dev {iface} root cake bandwidth {}",
                tc_rate(q.drain_bits)
            ),
            "cake shapes at the same rate and keeps its queue short (per-flow queues with AQM): the probe no longer waits behind the bulk flows",
            Some("or keep the shaper and put fq_codel under it as its child qdisc"),
        ));
    } else {
        f.advice.push(advice(
            format!("{prefix}tc qdisc replace dev {iface} root fq_codel"),
            "fq_codel keeps the standing queue near its 5 ms target and gives the probe its own queue",
            None,
        ));
    }
    if is_physical(ctx, iface) {
        f.advice.push(advice(
            format!("/sys/class/net/{iface}/queues/tx-*/byte_queue_limits/limit_max"),
            "byte queue limits keep the driver's ring short, so the queue stays in the qdisc where AQM can manage it",
            Some("only for a real NIC whose driver supports BQL"),
        ));
    }
    f.next = Some("run rrul again after the change: the growth should fall to a few ms".into());
    f
}

fn path_words(
    ctx: &Ctx,
    rrul: &netceil_model::RrulResults,
    queued_us: f64,
    flows_us: f64,
    busy: Option<f64>,
    confidence: f64,
) -> Finding {
    let us = |v: f64| fmt::value(v, Unit::Microseconds);
    let mut f = finding(
        cause::BUFFERBLOAT,
        format!(
            "Bufferbloat on the path: the round trip grew {} under load (p50, {} → {}), and the bulk flows' own round trip rose {} over its minimum, so a queue on the path held the packets; the qdiscs read here hold only {} of it, so the queue is elsewhere (the far host, a device or router between).",
            us(rrul.inflation_p50_us),
            us(rrul.idle_rtt_us.p50),
            us(rrul.loaded_rtt_us.p50),
            us(flows_us),
            us(queued_us)
        ),
        confidence,
    );
    rtt_evidence(ctx, rrul, &mut f);
    f.evidence.push(ctx.ev(
        n::TCP_RTT_US,
        Some((flows_us, Unit::Microseconds)),
        format!(
            "the bulk flows' smoothed RTT over their minimum RTT, median over the flows: {}",
            us(flows_us)
        ),
    ));
    if let Some(b) = busy {
        f.alternatives.push(format!(
            "a busy CPU would delay the probe but not the flows' own ACK clock as much; the machine was {} busy",
            fmt::value(b, Unit::Percent)
        ));
    }
    f.advice.push(advice(
        "fq_codel or cake at the path's bottleneck",
        "AQM keeps the standing queue short where it forms",
        Some("the bottleneck is not on this host: find it with the far end's qdisc statistics (tc -s qdisc) while the load runs"),
    ));
    f
}

/// A rate as tc writes it.
fn tc_rate(bits: f64) -> String {
    if bits >= 1e6 {
        format!("{:.0}mbit", bits / 1e6)
    } else {
        format!("{:.0}kbit", bits / 1e3)
    }
}

/// Whether the host lists `iface` as a device of its own (not virtual): only those have a
/// driver ring that byte queue limits apply to.
fn is_physical(ctx: &Ctx, iface: &str) -> bool {
    ctx.run
        .meta
        .host
        .nics
        .iter()
        .any(|nic| nic.name == iface && nic.virtual_device == Some(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use netceil_model::params::{LoadParams, RrulParams};
    use netceil_model::{LatencySummary, Results, RrulResults, Run};

    fn rtt(p50: f64) -> LatencySummary {
        LatencySummary {
            p50,
            p90: p50 * 1.2,
            p99: p50 * 1.6,
            p999: p50 * 2.0,
            max: p50 * 3.0,
            min: p50 * 0.8,
            mean: p50 * 1.05,
            count: 800,
        }
    }

    /// An rrul run of ten rows (the first two idle), `idle` and `loaded` its probe's median
    /// round trips, `target` its far end (`None`: loopback); `fill` adds the machine's figures.
    fn rrul_run(
        idle: f64,
        loaded: f64,
        target: Option<&str>,
        mut fill: impl FnMut(&mut netceil_model::Series, usize),
    ) -> Run {
        let mut run = live_run(10, |s, r| {
            if r >= 2 {
                put(s, r, n::LOAD_RX_BITS_PER_S, &[], 95e6 + noise(r, 1e6));
                put(s, r, n::LOAD_TX_BITS_PER_S, &[], 96e6 + noise(r, 1e6));
            } else {
                put(s, r, n::LOAD_MEAN_LATENCY_US, &[], idle);
            }
            fill(s, r);
        });
        run.workload = Some(
            LoadParams::Rrul(RrulParams {
                flows: 4,
                duration_s: 8.0,
                idle_s: 2.0,
                rr_rate_tps: 100.0,
                rate_per_flow_bps: None,
                ipv6: false,
                target: target.map(str::to_string),
            })
            .workload(),
        );
        let (i, l) = (rtt(idle), rtt(loaded));
        run.results = Some(Results {
            duration_s: 8.0,
            tx_bytes: 95_000_000,
            rx_app_bytes: 95_000_000,
            tx_bits_per_s: 96e6,
            rx_app_bits_per_s: 95e6,
            rrul: Some(RrulResults {
                idle_s: 2.0,
                loaded_s: 8.0,
                inflation_p50_us: l.p50 - i.p50,
                inflation_p90_us: l.p90 - i.p90,
                inflation_p99_us: l.p99 - i.p99,
                idle_rtt_us: i,
                loaded_rtt_us: l,
                up_bits_per_s: 48e6,
                down_bits_per_s: 47e6,
                ..Default::default()
            }),
            ..Default::default()
        });
        run
    }

    /// A tbf at 50 Mbit/s in a lab namespace holding `backlog` bytes while loaded.
    fn tbf(s: &mut netceil_model::Series, r: usize, iface: &str, backlog: f64) {
        let l = [
            (n::LABEL_IFACE, iface),
            (n::LABEL_QDISC, "tbf"),
            (n::LABEL_HANDLE, "8001:"),
            (n::LABEL_NETNS, "lab-a"),
        ];
        let loaded = r >= 2;
        put(
            s,
            r,
            n::QDISC_BACKLOG_BYTES,
            &l,
            if loaded { backlog } else { 0.0 },
        );
        put(s, r, n::QDISC_RATE_BITS_PER_S, &l, 50e6);
        put(
            s,
            r,
            n::QDISC_BITS_PER_S,
            &l,
            if loaded { 49.5e6 } else { 1e4 },
        );
        put(
            s,
            r,
            n::QDISC_OVERLIMITS_PER_S,
            &l,
            if loaded { 9000.0 } else { 0.0 },
        );
    }

    #[test]
    fn a_qdisc_backlog_that_explains_the_growth_is_named() {
        // 500 kB each way at 50 Mbit/s is 80 ms a direction: 160 ms a round trip, and the
        // probe's median grew from 0.3 ms to 170 ms.
        let run = rrul_run(300.0, 170_000.0, Some("10.1.0.2:7500"), |s, r| {
            cpu_row(s, r, &[(10.0, 15.0, 5.0), (8.0, 12.0, 5.0)]);
            tbf(s, r, "nc-a", 500_000.0);
            tbf(s, r, "nc-b", 500_000.0);
            // One flow with 2 MB unsent at 12 Mbit/s (1.3 s), one with 64 kB (43 ms).
            for (flow, queued) in [("1", 2.2e6), ("2", 264e3)] {
                let fl = [(n::LABEL_FLOW, flow), (n::LABEL_PID, "7")];
                put(s, r, n::TCP_SEND_QUEUE_BYTES, &fl, queued);
                put(s, r, n::TCP_IN_FLIGHT_BYTES, &fl, 200e3);
                put(s, r, n::TCP_DELIVERY_RATE_BITS_PER_S, &fl, 12e6);
            }
        });
        let e = entry_on(&run, check).expect("bufferbloat");
        assert_eq!(e.class, Class::Ceiling);
        let f = &e.finding;
        assert_eq!(f.cause, cause::BUFFERBLOAT);
        assert!(f.summary.contains("the tbf qdisc on nc-"), "{}", f.summary);
        assert!(
            f.summary.contains("in network namespace lab-a"),
            "{}",
            f.summary
        );
        assert!(f.summary.contains("80.0 ms"), "{}", f.summary);
        assert!(
            f.summary.contains("160 ms to a round trip"),
            "{}",
            f.summary
        );
        assert!(
            (e.share.unwrap() - 160_000.0 / 169_700.0).abs() < 0.01,
            "{:?}",
            e.share
        );
        assert!(f.confidence > 0.8, "{}", f.confidence);
        assert!(
            f.advice[0].knob.contains("cake bandwidth 50mbit"),
            "{:?}",
            f.advice
        );
        assert!(
            f.advice
                .iter()
                .any(|a| a.knob.contains("tcp_notsent_lowat")),
            "{:?}",
            f.advice
        );
        // veth-like lab devices are not in the host's NIC list: no BQL advice.
        assert!(!f
            .advice
            .iter()
            .any(|a| a.knob.contains("byte_queue_limits")));
        // In the ledger it leads, and the shaper behind its queue follows it.
        let ranked = crate::analyze(&run);
        assert_eq!(ranked[0].cause, cause::BUFFERBLOAT, "{ranked:#?}");
    }

    #[test]
    fn a_cpu_bound_loopback_run_is_not_called_bufferbloat() {
        // Loopback: noqueue, nothing held; both cores full; the median grew 60 µs → 4 ms.
        let run = rrul_run(60.0, 4000.0, None, |s, r| {
            cpu_row(s, r, &[(35.0, 50.0, 14.0), (30.0, 55.0, 14.0)]);
            let lo = [
                (n::LABEL_IFACE, "lo"),
                (n::LABEL_QDISC, "noqueue"),
                (n::LABEL_HANDLE, "0:"),
            ];
            put(s, r, n::QDISC_BACKLOG_BYTES, &lo, 0.0);
            put(s, r, n::IFACE_RX_PPS, &[(n::LABEL_IFACE, "lo")], 300_000.0);
            // The flows' own RTT rises on a busy loopback too: not a path queue.
            let fl = [(n::LABEL_FLOW, "1"), (n::LABEL_PID, "7")];
            put(s, r, n::TCP_RTT_US, &fl, 3000.0);
            put(s, r, n::TCP_MIN_RTT_US, &fl, 20.0);
        });
        let e = entry_on(&run, check).expect("sized to rule it out");
        assert_eq!(e.class, Class::Context);
        assert!(
            e.finding.summary.contains("not bufferbloat"),
            "{}",
            e.finding.summary
        );
        assert!(
            e.finding.summary.contains("the probe waited for a core"),
            "{}",
            e.finding.summary
        );
        let findings = crate::analyze(&run);
        assert!(
            !findings.iter().any(|f| f.cause == cause::BUFFERBLOAT),
            "{findings:#?}"
        );
    }

    #[test]
    fn a_round_trip_that_did_not_grow_is_not_bufferbloat() {
        // A queue was there, but the probe's median moved 0.3 → 0.5 ms.
        let run = rrul_run(300.0, 500.0, Some("10.1.0.2:7500"), |s, r| {
            cpu_row(s, r, &[(10.0, 15.0, 5.0), (8.0, 12.0, 5.0)]);
            tbf(s, r, "nc-a", 500_000.0);
        });
        assert!(entry_on(&run, check).is_none());
        assert!(!crate::analyze(&run)
            .iter()
            .any(|f| f.cause == cause::BUFFERBLOAT));
    }

    #[test]
    fn short_send_buffers_get_no_notsent_advice() {
        let run = rrul_run(300.0, 170_000.0, Some("10.1.0.2:7500"), |s, r| {
            cpu_row(s, r, &[(10.0, 15.0, 5.0), (8.0, 12.0, 5.0)]);
            tbf(s, r, "nc-a", 1_000_000.0);
            let fl = [(n::LABEL_FLOW, "1"), (n::LABEL_PID, "7")];
            // 8 kB unsent at 12 Mbit/s: 5.3 ms, under the 10 ms worth advice.
            put(s, r, n::TCP_SEND_QUEUE_BYTES, &fl, 208e3);
            put(s, r, n::TCP_IN_FLIGHT_BYTES, &fl, 200e3);
            put(s, r, n::TCP_DELIVERY_RATE_BITS_PER_S, &fl, 12e6);
        });
        let f = on(&run, check).expect("bufferbloat");
        assert!(f
            .evidence
            .iter()
            .any(|e| e.metric == n::TCP_SEND_QUEUE_BYTES));
        assert!(!f
            .advice
            .iter()
            .any(|a| a.knob.contains("tcp_notsent_lowat")));
    }

    #[test]
    fn a_queue_off_this_host_is_placed_on_the_path_by_the_flows_rtt() {
        // No qdisc here holds anything; the flows' RTT rose 90 ms, the probe's 95 ms.
        let run = rrul_run(500.0, 95_500.0, Some("192.0.2.7:7500"), |s, r| {
            cpu_row(s, r, &[(10.0, 15.0, 5.0), (8.0, 12.0, 5.0)]);
            for flow in ["1", "2"] {
                let fl = [(n::LABEL_FLOW, flow), (n::LABEL_PID, "7")];
                put(s, r, n::TCP_RTT_US, &fl, 90_400.0);
                put(s, r, n::TCP_MIN_RTT_US, &fl, 400.0);
            }
        });
        let f = on(&run, check).expect("bufferbloat on the path");
        assert_eq!(f.cause, cause::BUFFERBLOAT);
        assert!(
            f.summary.starts_with("Bufferbloat on the path"),
            "{}",
            f.summary
        );
    }
}
