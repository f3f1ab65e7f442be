//! What only the eBPF probes can see: exact softirq time per CPU, and NAPI polls that used
//! their whole budget.
//!
//! [`softirq_core`]: /proc/stat's softirq column is tick-sampled on kernels without IRQ time
//! accounting, so a core that spends most of its time in NET_RX handlers can show as "system"
//! or as a hot core with no mechanism. The softirq probe times every handler from entry to
//! exit. If a CPU's network softirqs (NET_RX + NET_TX) take ≥ 70 % of it over the load phase,
//! the receive (or transmit completion) path on that core is the ceiling: packets wait for that
//! one core whatever the others do. The per-packet cost (softirq CPU-ns ÷ packets polled or
//! received) says how far a faster path would go. A hot core from a user thread looks the
//! same to /proc; the exact softirq figure is what tells them apart. Confidence: floor 0.45,
//! band 0.45; strength: that CPU's network softirq share (70 % → 0, 95 % → 1); × the data and
//! network factors.
//!
//! [`napi_budget`]: a NAPI poll that returns work == budget had more packets waiting; the
//! softirq loop repolls it until netdev_budget packets or netdev_budget_usecs run out, then
//! defers the rest to ksoftirqd (a time squeeze). A full budget alone is not a ceiling (a busy
//! device that the CPU keeps up with polls full budgets too), so the rule fires only when the
//! polls are mostly full (≥ 30 %) AND the core shows it cannot keep up: time squeezes, backlog
//! drops, or its network softirq time ≥ 50 %. Confidence: floor 0.35, band 0.45; strengths:
//! the full-budget share (30 % → 0, 90 % → 1), squeezes (1/s → 0, 1000/s → 1) and the softirq
//! share (50 % → 0, 95 % → 1), those present; × the data factor.

use std::collections::BTreeMap;

use netceil_model::{names as n, Finding, Quantity, Resource, Unit};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::ledger::{Class, Entry, Explains};
use crate::stats::{mean_strength, ramp};
use netceil_model::fmt;

/// Per CPU: the mean network softirq share (net_rx + net_tx) over the load rows, exact.
fn net_softirq_by_cpu(ctx: &Ctx) -> BTreeMap<u32, f64> {
    let mut out = BTreeMap::new();
    for m in ctx.series().by_name(n::SOFTIRQ_EXACT_PCT) {
        let (Some(cpu), Some(vec)) = (m.id.label(n::LABEL_CPU), m.id.label(n::LABEL_VEC)) else {
            continue;
        };
        if vec != "net_rx" && vec != "net_tx" {
            continue;
        }
        let (Ok(cpu), Some(v)) = (cpu.parse::<u32>(), ctx.mean_of(m)) else {
            continue;
        };
        *out.entry(cpu).or_insert(0.0) += v;
    }
    out
}

/// The mean of a metric summed over its labeled instances (per-interface NAPI figures).
fn summed_mean(ctx: &Ctx, name: &str) -> Option<f64> {
    let v: Vec<f64> = ctx
        .series()
        .by_name(name)
        .filter_map(|m| ctx.mean_of(m))
        .collect();
    (!v.is_empty()).then(|| v.iter().sum())
}

/// Softirq CPU-ns per packet: all CPUs' network softirq time over the packets NAPI handed up
/// (else the packet rate of the run).
fn ns_per_packet(ctx: &Ctx, by_cpu: &BTreeMap<u32, f64>) -> Option<(f64, String)> {
    let cpu_s_per_s: f64 = by_cpu.values().sum::<f64>() / 100.0;
    let (pps, what) = match summed_mean(ctx, n::NAPI_PPS).filter(|p| *p > 0.0) {
        Some(p) => (p, "packets NAPI polled".to_string()),
        None => ctx.packet_rate()?,
    };
    (pps > 0.0).then(|| (cpu_s_per_s * 1e9 / pps, what))
}

/// A core full of network softirq work, timed exactly: that core in the ledger, sized as the
/// softirq time against the core. What runs on it is starved by the softirq work, so it
/// explains the core looking hot, loss, and a reader or sender starved there.
pub fn softirq_core(ctx: &Ctx) -> Option<Entry> {
    let (f, cpu, share) = softirq_finding(ctx)?;
    let mut e = Entry::claim(
        Class::Ceiling,
        Resource::Cpu {
            cpus: vec![cpu],
            far: false,
        },
        f,
    )
    .with_id(format!("cpu:{cpu}:softirq"))
    .sized(
        Quantity::new(100.0, Unit::Percent, format!("CPU {cpu}")),
        Quantity::new(share, Unit::Percent, "in network softirq handlers (exact)"),
    )
    .scaling()
    .explains(Explains::on(cause::HOT_CPU, &[cpu]))
    .explains(Explains::cause(cause::CPU_BOUND));
    for x in ctx.cpu.starvation_explains(&[cpu]) {
        e = e.explains(x);
    }
    Some(e)
}

fn softirq_finding(ctx: &Ctx) -> Option<(Finding, u32, f64)> {
    if !ctx.net_possible() {
        return None;
    }
    let by_cpu = net_softirq_by_cpu(ctx);
    let (&cpu, &share) = by_cpu.iter().max_by(|a, b| a.1.total_cmp(b.1))?;
    if share < 70.0 {
        return None;
    }
    let strength = ramp(share, 70.0, 95.0);
    let confidence = (0.45 + 0.45 * strength) * ctx.data_factor() * ctx.net_factor();
    let ticked = ctx
        .per_cpu(n::CPU_SOFTIRQ_PCT)
        .into_iter()
        .find(|(c, _)| *c == cpu)
        .map(|(_, v)| v);
    let per_packet = ns_per_packet(ctx, &by_cpu);
    let cost = per_packet
        .as_ref()
        .map(|(ns, what)| {
            format!(
                ", {} of softirq CPU time per packet ({what})",
                fmt::value(*ns * 1e-9, Unit::Seconds)
            )
        })
        .unwrap_or_default();
    let tick = ticked
        .map(|t| {
            format!(
                " (/proc/stat's tick-sampled softirq column said {})",
                fmt::value(t, Unit::Percent)
            )
        })
        .unwrap_or_default();
    let mut f = finding(
        cause::SOFTIRQ_BOUND,
        format!(
            "CPU {cpu} spent {} of its time in network softirq handlers, timed from entry to exit{tick}{cost}: the packet path on that core is the ceiling, whatever the other cores do.",
            fmt::value(share, Unit::Percent)
        ),
        confidence,
    );
    f.evidence.push(ctx.ev(
        format!("{}{{cpu={cpu}}}", n::SOFTIRQ_EXACT_PCT),
        Some((share, Unit::Percent)),
        format!(
            "CPU {cpu}: NET_RX + NET_TX softirq {}",
            fmt::value(share, Unit::Percent)
        ),
    ));
    for (c, v) in by_cpu.iter().filter(|(c, _)| **c != cpu) {
        f.evidence.push(ctx.ev(
            format!("{}{{cpu={c}}}", n::SOFTIRQ_EXACT_PCT),
            Some((*v, Unit::Percent)),
            format!("CPU {c}: network softirq {}", fmt::value(*v, Unit::Percent)),
        ));
    }
    if let Some((ns, _)) = per_packet {
        f.evidence.push(ctx.ev(
            "softirq_us_per_packet",
            Some((ns * 1e-3, Unit::Microseconds)),
            format!(
                "{} of softirq per packet",
                fmt::value(ns * 1e-9, Unit::Seconds)
            ),
        ));
    }
    f.alternatives.push(
        "a user thread on the same core: ruled out, the time was measured inside softirq handlers"
            .into(),
    );
    if ctx.loopback_only() {
        // Loopback has no NIC queue, interrupt or NAPI instance of its own: RPS is its only
        // way to move the receive softirq off the sending core.
        f.advice.push(advice(
            "spread the packet path: RPS on lo (echo <cpu mask> > /sys/class/net/lo/queues/rx-0/rps_cpus), or more flows on more threads",
            "receive processing over several cores",
            Some("RPS costs an inter-processor interrupt per batch"),
        ));
        f.advice.push(advice(
            "cut the work per packet: fewer netfilter rules or no conntrack on this path, larger messages (--size, --gso)",
            "fewer ns per packet, more packets from the same core",
            None,
        ));
    } else {
        f.advice.push(advice(
            "spread the packet path: RPS (/sys/class/net/IF/queues/rx-N/rps_cpus), more RSS queues (ethtool -L IF combined N) with IRQ affinity, or threaded NAPI (echo 1 > /sys/class/net/IF/threaded) so the scheduler can move the poll",
            "receive processing over several cores",
            Some("one flow stays on one core with RSS; RPS costs an inter-processor interrupt per batch"),
        ));
        f.advice.push(advice(
            "cut the work per packet: GRO on (ethtool -K IF gro on), fewer netfilter rules or no conntrack on this path, larger frames",
            "fewer ns per packet, more packets from the same core",
            None,
        ));
    }
    f.next = Some(
        "netceil run … --probe softirq,napi,locks again after one change: softirq_exact_pct{cpu} should fall or spread".into(),
    );
    Some((f, cpu, share))
}

/// NAPI polls that used their whole budget on a core that could not keep up: the budget in
/// the ledger, sized as full polls against all polls.
pub fn napi_budget(ctx: &Ctx) -> Option<Entry> {
    let (f, full, polls) = napi_finding(ctx)?;
    Some(
        Entry::claim(
            Class::Ceiling,
            Resource::Queue {
                name: "the NAPI budget".into(),
                far: false,
            },
            f,
        )
        .sized(
            Quantity::new(polls, Unit::PerSecond, "NAPI polls"),
            Quantity::new(full, Unit::PerSecond, "polls that used their whole budget"),
        )
        .explains_all(&[cause::HOT_CPU, cause::SATURATION]),
    )
}

fn napi_finding(ctx: &Ctx) -> Option<(Finding, f64, f64)> {
    if !ctx.net_possible() {
        return None;
    }
    // The device whose polls were most often full.
    let mut best: Option<(String, f64, f64, f64, f64)> = None;
    for m in ctx.series().by_name(n::NAPI_POLLS_PER_S) {
        let dev = m.id.label(n::LABEL_IFACE).unwrap_or("?").to_string();
        let Some(polls) = ctx.mean_of(m).filter(|p| *p > 0.0) else {
            continue;
        };
        let full = ctx
            .sibling(m, n::NAPI_BUDGET_EXHAUSTED_PER_S)
            .and_then(|x| ctx.mean_of(x))
            .unwrap_or(0.0);
        let packets = ctx
            .sibling(m, n::NAPI_PPS)
            .and_then(|x| ctx.mean_of(x))
            .unwrap_or(0.0);
        let budget = ctx
            .sibling(m, n::NAPI_BUDGET)
            .and_then(|x| ctx.mean_of(x))
            .unwrap_or(0.0);
        let share = full / polls;
        if best.as_ref().is_none_or(|b| share > b.1) {
            best = Some((dev, share, polls, packets, budget));
        }
    }
    let (dev, share, polls, packets, budget) = best?;
    if share < 0.3 || packets < 1000.0 {
        return None;
    }
    let squeeze = ctx
        .total_mean(n::SOFTNET_TIME_SQUEEZE_PER_S)
        .filter(|s| *s >= 1.0);
    let backlog_drops = ctx
        .total_mean(n::SOFTNET_DROPPED_PER_S)
        .filter(|d| *d > 0.0);
    let by_cpu = net_softirq_by_cpu(ctx);
    let hot = by_cpu
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(c, v)| (*c, *v))
        .filter(|(_, v)| *v >= 50.0);
    if squeeze.is_none() && backlog_drops.is_none() && hot.is_none() {
        return None;
    }
    let strength = mean_strength(&[
        Some(ramp(share, 0.3, 0.9)),
        squeeze.map(|s| ramp(s.log10(), 0.0, 3.0)),
        hot.map(|(_, v)| ramp(v, 50.0, 95.0)),
    ])
    .unwrap_or(0.0);
    let confidence = (0.35 + 0.45 * strength) * ctx.data_factor() * ctx.net_factor();
    let mut why = Vec::new();
    if let Some(s) = squeeze {
        why.push(format!(
            "the softirq loop ran out of netdev_budget {} (time squeezes)",
            fmt::value(s, Unit::PerSecond)
        ));
    }
    if let Some(d) = backlog_drops {
        why.push(format!(
            "{} packets were dropped at a full backlog",
            fmt::value(d, Unit::PerSecond)
        ));
    }
    if let Some((c, v)) = hot {
        why.push(format!(
            "CPU {c} spent {} in network softirqs",
            fmt::value(v, Unit::Percent)
        ));
    }
    let what = if dev == "backlog" {
        "the per-CPU backlog (packets queued by netif_rx: loopback, veth)".to_string()
    } else {
        dev.clone()
    };
    let mut f = finding(
        cause::NAPI_BUDGET,
        format!(
            "NAPI polls of {what} used their whole budget{} in {} of {} polls/s ({} packets/s): packets were always waiting, and {}.",
            if budget > 0.0 { format!(" of {budget:.0}") } else { String::new() },
            fmt::value(share * 100.0, Unit::Percent),
            fmt::number(polls),
            fmt::number(packets),
            why.join(", and ")
        ),
        confidence,
    );
    f.evidence.push(ctx.ev(
        format!("{}{{iface={dev}}}", n::NAPI_BUDGET_EXHAUSTED_PER_S),
        Some((share * polls, Unit::PerSecond)),
        format!(
            "{} of polls full ({}/s)",
            fmt::value(share * 100.0, Unit::Percent),
            fmt::number(share * polls)
        ),
    ));
    if let Some(s) = squeeze {
        f.evidence.push(ctx.ev(
            n::SOFTNET_TIME_SQUEEZE_PER_S,
            Some((s, Unit::PerSecond)),
            format!("{} time squeezes", fmt::value(s, Unit::PerSecond)),
        ));
    }
    if let Some((ns, what)) = ns_per_packet(ctx, &by_cpu) {
        f.evidence.push(ctx.ev(
            "softirq_us_per_packet",
            Some((ns * 1e-3, Unit::Microseconds)),
            format!(
                "{} of softirq per packet ({what})",
                fmt::value(ns * 1e-9, Unit::Seconds)
            ),
        ));
    }
    f.advice.push(advice(
        "sysctl net.core.netdev_budget=600 net.core.netdev_budget_usecs=4000 (netceil lab run --knob net.core.netdev_budget=300,600,1200 measures it)",
        "more packets per softirq round before it yields: fewer squeezes, less deferral to ksoftirqd",
        Some("longer softirq rounds delay everything else on that core"),
    ));
    if dev != "backlog" {
        f.advice.push(advice(
            format!("threaded NAPI: echo 1 > /sys/class/net/{dev}/threaded"),
            "the poll runs in a kernel thread the scheduler can place and balance",
            Some("one more context switch per poll round"),
        ));
    }
    f.advice.push(advice(
        "RPS (/sys/class/net/IF/queues/rx-N/rps_cpus) or more queues, to share the polling over cores",
        "each core's budget covers part of the traffic",
        Some("RPS costs an inter-processor interrupt per batch"),
    ));
    f.next = Some("softnet_time_squeeze_per_s and napi_budget_exhausted_per_s should fall after the change; if the softirq share stays high, the core itself is the ceiling".into());
    Some((f, share * polls, polls))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    fn probed(net_rx: [f64; 2], exhausted: f64, squeeze: f64) -> netceil_model::Run {
        live_run(10, |s, r| {
            put(s, r, n::LOAD_RX_BITS_PER_S, &[], 1e9 + noise(r, 1e6));
            put(s, r, n::LOAD_RX_PPS, &[], 1e6);
            for (cpu, v) in net_rx.iter().enumerate() {
                let c = cpu.to_string();
                put(
                    s,
                    r,
                    n::SOFTIRQ_EXACT_PCT,
                    &[(n::LABEL_CPU, c.as_str()), (n::LABEL_VEC, "net_rx")],
                    *v,
                );
                put(
                    s,
                    r,
                    n::CPU_SOFTIRQ_PCT,
                    &[(n::LABEL_CPU, c.as_str())],
                    v / 2.0,
                );
            }
            let d = [(n::LABEL_IFACE, "eth0")];
            put(s, r, n::NAPI_POLLS_PER_S, &d, 20_000.0);
            put(s, r, n::NAPI_PPS, &d, 1e6);
            put(s, r, n::NAPI_BUDGET_EXHAUSTED_PER_S, &d, exhausted);
            put(s, r, n::NAPI_BUDGET, &d, 64.0);
            put(s, r, n::SOFTNET_TIME_SQUEEZE_PER_S, &[], squeeze);
        })
    }

    #[test]
    fn a_core_full_of_softirq_is_named_with_its_cost_per_packet() {
        let f = on(&probed([92.0, 10.0], 0.0, 0.0), softirq_core).expect("softirq bound");
        assert_eq!(f.cause, cause::SOFTIRQ_BOUND);
        assert!(f.summary.contains("CPU 0 spent 92 %"), "{}", f.summary);
        assert!(
            f.summary.contains("tick-sampled softirq column said 46 %"),
            "{}",
            f.summary
        );
        // (0.92 + 0.10) CPU-s/s over 1 M packets/s = 1020 ns.
        assert!(f.summary.contains("1.02 µs"), "{}", f.summary);
        assert!(on(&probed([60.0, 10.0], 0.0, 0.0), softirq_core).is_none());
    }

    #[test]
    fn full_polls_on_a_core_that_keeps_up_are_not_a_ceiling() {
        // 80 % of polls full, but no squeeze, no drops and the core at 30 %.
        assert!(on(&probed([30.0, 5.0], 16_000.0, 0.0), napi_budget).is_none());
    }

    #[test]
    fn full_polls_with_squeezes_name_the_budget() {
        let f = on(&probed([85.0, 5.0], 16_000.0, 300.0), napi_budget).expect("napi");
        assert_eq!(f.cause, cause::NAPI_BUDGET);
        assert!(f.summary.contains("eth0"), "{}", f.summary);
        assert!(f.summary.contains("budget of 64 in 80 %"), "{}", f.summary);
        assert!(f.summary.contains("time squeezes"), "{}", f.summary);
        assert!(f.advice.iter().any(|a| a.knob.contains("threaded")));
        // Few full polls: no finding, however busy the core.
        assert!(on(&probed([85.0, 5.0], 1_000.0, 300.0), napi_budget).is_none());
    }
}
