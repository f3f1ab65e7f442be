//! One since-boot snapshot still tells a story.
//!
//! A single copy of /proc/net/softnet_stat (or /proc/softirqs, /proc/interrupts) from a
//! support ticket has counts since boot, not rates: nothing says when they happened. But their
//! proportions are facts about the receive path:
//! - **NAPI budget exhaustion**: `time_squeeze` counts the NET_RX softirq rounds that ended
//!   with work left, because `netdev_budget` packets or `netdev_budget_usecs` ran out. Many
//!   per packet processed, piled on one CPU, is a receive path that could not keep up there;
//! - **backlog drops**: `dropped` counts packets thrown away because a CPU's backlog held
//!   `netdev_max_backlog` already;
//! - **skew**: packets processed (or NET_RX softirqs, or NIC queue interrupts) nearly all on
//!   one CPU is receive work that one core does alone.
//!
//! The importer records them as `*_total{cpu}` metrics in a single row with `interval_s = 0`.
//! Findings here say "since boot" and keep their confidence moderate (0.3 to 0.55): the counts
//! may come from one incident long ago.

use netceil_model::{Finding, Resource, Series};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::ledger::{Class, Entry};
use crate::stats::{mean_strength, ramp};
use netceil_model::{fmt, Unit};

const PROCESSED: &str = "softnet_processed_total";
const SQUEEZED: &str = "softnet_time_squeeze_total";
const DROPPED: &str = "softnet_dropped_total";
const NET_RX: &str = "softirq_net_rx_total";
const NIC_IRQ: &str = "nic_irq_total";

/// A total and its split by CPU.
struct Totals {
    total: f64,
    per_cpu: Vec<(String, f64)>,
}

impl Totals {
    /// The CPU with the largest share, and that share (0–1).
    fn top(&self) -> Option<(&str, f64)> {
        let (cpu, v) = self.per_cpu.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
        (self.total > 0.0).then(|| (cpu.as_str(), v / self.total))
    }
}

/// True for a single since-boot snapshot.
fn since_boot(s: &Series) -> bool {
    s.len() == 1 && s.interval_s == 0.0
}

fn totals(s: &Series, name: &str) -> Option<Totals> {
    let mut per_cpu = Vec::new();
    let mut total = None;
    for m in s.by_name(name) {
        let Some(v) = m.values.first().copied().flatten() else {
            continue;
        };
        match m.id.label(netceil_model::names::LABEL_CPU) {
            Some(c) => per_cpu.push((c.to_string(), v)),
            None if m.id.labels.is_empty() => total = Some(v),
            None => {}
        }
    }
    let total =
        total.or_else(|| (!per_cpu.is_empty()).then(|| per_cpu.iter().map(|(_, v)| v).sum()))?;
    Some(Totals { total, per_cpu })
}

fn spread_words(t: &Totals) -> String {
    let mut parts: Vec<(String, f64)> = t
        .per_cpu
        .iter()
        .map(|(c, v)| (c.clone(), if t.total > 0.0 { v / t.total } else { 0.0 }))
        .collect();
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    parts
        .iter()
        .take(4)
        .map(|(c, s)| format!("CPU {c} {}", fmt::value(s * 100.0, Unit::Percent)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Spreading receive work over cores: the knob for work piled on one CPU.
fn spread_advice() -> netceil_model::Advice {
    advice(
        "spread receive work: more RSS queues (ethtool -L IF combined N), IRQ affinity, or RPS (/sys/class/net/IF/queues/rx-N/rps_cpus)",
        "receive processing over several cores",
        Some("one flow always lands on one queue: RSS cannot split a single flow"),
    )
}

/// NAPI budget exhaustion: squeezes per packet processed, and where. A machine-wide ratio
/// hides one CPU that squeezed often among many that did not (a single RX queue on a 64-CPU
/// machine), so the ratio is also taken per CPU, and the worst CPU's counts when it is high.
pub fn squeeze(ctx: &Ctx) -> Option<Entry> {
    let f = squeeze_finding(ctx)?;
    Some(Entry::claim(Class::Ceiling, queue("the NAPI budget"), f))
}

fn queue(name: &str) -> Resource {
    Resource::Queue {
        name: name.to_string(),
        far: false,
    }
}

/// Squeezes per 1000 packets processed on the CPU where that ratio is worst (at least
/// [`SQUEEZES_MIN`] squeezes there), and the CPU.
fn worst_cpu_ratio(sq: &Totals, processed: &Totals) -> Option<(String, f64)> {
    sq.per_cpu
        .iter()
        .filter(|(_, v)| *v >= SQUEEZES_MIN)
        .filter_map(|(c, v)| {
            let p = processed.per_cpu.iter().find(|(x, _)| x == c)?.1;
            (p > 0.0).then(|| (c.clone(), 1000.0 * v / p))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// Squeezes worth a finding, in all and per 1000 packets.
const SQUEEZES_MIN: f64 = 100.0;
const SQUEEZES_PER_1000_MIN: f64 = 1.0;

fn squeeze_finding(ctx: &Ctx) -> Option<Finding> {
    let s = ctx.series();
    if !since_boot(s) {
        return None;
    }
    let sq = totals(s, SQUEEZED)?;
    let processed = totals(s, PROCESSED)?;
    if sq.total < SQUEEZES_MIN || processed.total <= 0.0 {
        return None;
    }
    let machine = 1000.0 * sq.total / processed.total;
    let worst = worst_cpu_ratio(&sq, &processed);
    let per_1000 = machine.max(worst.as_ref().map_or(0.0, |(_, r)| *r));
    if per_1000 < SQUEEZES_PER_1000_MIN {
        return None;
    }
    let (cpu, share) = sq.top()?;
    let concentrated = sq.per_cpu.len() >= 2 && share >= 0.6;
    let strength = mean_strength(&[
        Some(ramp(per_1000, 1.0, 10.0)),
        (sq.per_cpu.len() >= 2).then(|| ramp(share, 0.5, 0.9)),
    ])
    .unwrap_or(0.0);
    let per_cpu_words = match &worst {
        Some((c, r)) if *r > 2.0 * machine => format!(
            " (machine-wide {} per 1000, but {} per 1000 on CPU {c})",
            fmt::number(machine),
            fmt::number(*r)
        ),
        _ => String::new(),
    };
    let where_words = if concentrated {
        format!(
            ", {} of them on CPU {cpu}",
            fmt::value(share * 100.0, Unit::Percent)
        )
    } else {
        format!(", spread: {}", spread_words(&sq))
    };
    let mut f = finding(
        cause::NAPI_BUDGET,
        format!(
            "Since boot (one snapshot, so not when): the receive softirq ran out of its budget with work left {} times, {} per 1000 packets processed{per_cpu_words}{where_words}. That is NAPI budget exhaustion{}.",
            fmt::number(sq.total),
            fmt::number(machine),
            if concentrated { " concentrated on one CPU" } else { "" }
        ),
        0.35 + 0.2 * strength,
    );
    f.evidence.push(ctx.ev_total(
        SQUEEZED,
        Some((sq.total, Unit::Count)),
        format!(
            "{} time squeezes since boot: {}",
            fmt::number(sq.total),
            spread_words(&sq)
        ),
    ));
    f.evidence.push(ctx.ev_total(
        PROCESSED,
        Some((processed.total, Unit::Count)),
        format!(
            "{} packets processed since boot: {}",
            fmt::number(processed.total),
            spread_words(&processed)
        ),
    ));
    f.advice.push(advice(
        "sysctl net.core.netdev_budget=600 net.core.netdev_budget_usecs=4000",
        "each NET_RX round may process more before it yields, fewer squeezes",
        Some("longer softirq rounds delay other work on that CPU"),
    ));
    if concentrated {
        f.advice.push(spread_advice());
    }
    f.next = Some(
        "take two snapshots a known time apart (or netceil watch) to see whether it is happening now"
            .into(),
    );
    Some(f)
}

/// Backlog drops since boot: a loss in the ledger.
pub fn drops(ctx: &Ctx) -> Option<Entry> {
    let f = drops_finding(ctx)?;
    Some(Entry::claim(Class::Loss, queue("the per-CPU backlog"), f))
}

fn drops_finding(ctx: &Ctx) -> Option<Finding> {
    let s = ctx.series();
    if !since_boot(s) {
        return None;
    }
    let d = totals(s, DROPPED)?;
    if d.total < 1.0 {
        return None;
    }
    let processed = totals(s, PROCESSED).map(|p| p.total).filter(|p| *p > 0.0);
    let ratio = processed.map(|p| d.total / (p + d.total));
    let strength = ratio.map_or(0.5, |r| ramp(r, 1e-5, 1e-3));
    let (cpu, share) = d.top()?;
    let mut f = finding(
        cause::BUFFER_DROPS,
        format!(
            "Since boot (one snapshot, so not when): {} packets were dropped because a CPU's backlog was full{}, {} of them on CPU {cpu}.",
            fmt::number(d.total),
            ratio
                .map(|r| format!(" ({} of those that reached it)", fmt::value(r * 100.0, Unit::Percent)))
                .unwrap_or_default(),
            fmt::value(share * 100.0, Unit::Percent)
        ),
        0.35 + 0.2 * strength,
    );
    f.evidence.push(ctx.ev_total(
        DROPPED,
        Some((d.total, Unit::Count)),
        format!("backlog drops since boot: {}", spread_words(&d)),
    ));
    f.advice.push(advice(
        "sysctl net.core.netdev_max_backlog=10000 (from 1000)",
        "a longer backlog absorbs bursts",
        Some("if one CPU takes all the drops, spreading the work (RPS) helps more than a longer queue"),
    ));
    Some(f)
}

/// Receive work nearly all on one CPU: that CPU in the ledger.
pub fn skew(ctx: &Ctx) -> Option<Entry> {
    let (f, cpu) = skew_finding(ctx)?;
    let cpus: Vec<u32> = cpu.parse().ok().into_iter().collect();
    Some(
        Entry::claim(Class::Ceiling, Resource::Cpu { cpus, far: false }, f)
            .with_id(format!("cpu:{cpu}:rx")),
    )
}

fn skew_finding(ctx: &Ctx) -> Option<(Finding, String)> {
    let s = ctx.series();
    if !since_boot(s) {
        return None;
    }
    let (name, t) = [PROCESSED, NET_RX, NIC_IRQ].iter().find_map(|n| {
        totals(s, n)
            .filter(|t| t.per_cpu.len() >= 2)
            .map(|t| (*n, t))
    })?;
    if t.total < 10_000.0 {
        return None;
    }
    let (cpu, share) = t.top()?;
    let even = 1.0 / t.per_cpu.len() as f64;
    // On 2 CPUs an even split is 50 %: 80 % is skew; on 16, 80 % on one is extreme.
    let threshold = (even + 0.5 * (1.0 - even)).clamp(0.8, 0.95);
    if share < threshold {
        return None;
    }
    let what = match name {
        PROCESSED => "packets processed by the receive softirq",
        NET_RX => "NET_RX softirqs",
        _ => "NIC queue interrupts",
    };
    let mut f = finding(
        cause::RX_SKEW,
        format!(
            "Since boot (one snapshot, so not when): {} of the {what} ran on CPU {cpu} of {} CPUs ({}): one core does the machine's receive work.",
            fmt::value(share * 100.0, Unit::Percent),
            t.per_cpu.len(),
            spread_words(&t)
        ),
        0.3 + 0.2 * ramp(share, threshold, 0.99),
    );
    f.evidence.push(ctx.ev_total(
        name,
        Some((t.total, Unit::Count)),
        format!(
            "{} {what} since boot: {}",
            fmt::number(t.total),
            spread_words(&t)
        ),
    ));
    f.advice.push(spread_advice());
    f.next =
        Some("netceil watch during the load shows whether that core saturates (hot_cpu)".into());
    Some((f, cpu.to_string()))
}

/// A since-boot counter of /proc/net/snmp or /proc/net/netstat (`snmp_counter_total{proto,
/// counter}`).
fn snmp_total(s: &Series, proto: &str, counter: &str) -> Option<f64> {
    s.by_name(netceil_model::names::SNMP_COUNTER_TOTAL)
        .find(|m| m.id.label("proto") == Some(proto) && m.id.label("counter") == Some(counter))
        .and_then(|m| m.values.first().copied().flatten())
}

/// Listen queues that overflowed since boot: connection attempts dropped because the accept
/// queue was full (the acceptor did not keep up, or the backlog is short). A loss in the
/// ledger, against the connections accepted.
pub fn listen(ctx: &Ctx) -> Option<Entry> {
    let s = ctx.series();
    if !since_boot(s) {
        return None;
    }
    let overflows = snmp_total(s, "TcpExt", "ListenOverflows")
        .or_else(|| snmp_total(s, "TcpExt", "ListenDrops"))?;
    let accepted = snmp_total(s, "Tcp", "PassiveOpens").unwrap_or(0.0);
    let share = overflows / (overflows + accepted).max(1.0);
    if overflows < LISTEN_OVERFLOWS_MIN || share < LISTEN_SHARE_MIN {
        return None;
    }
    let mut f = finding(
        cause::BUFFER_DROPS,
        format!(
            "Since boot (one snapshot, so not when): listening sockets' accept queues overflowed {} times against {} connections accepted ({}): connection attempts were dropped because the application did not accept them fast enough, or its backlog is short.",
            fmt::number(overflows),
            fmt::number(accepted),
            fmt::value(share * 100.0, Unit::Percent)
        ),
        0.35 + 0.2 * ramp(share, LISTEN_SHARE_MIN, 0.1),
    );
    f.evidence.push(ctx.ev_total(
        format!(
            "{}{{proto=TcpExt,counter=ListenOverflows}}",
            netceil_model::names::SNMP_COUNTER_TOTAL
        ),
        Some((overflows, Unit::Count)),
        format!(
            "{} accept-queue overflows since boot",
            fmt::number(overflows)
        ),
    ));
    f.advice.push(advice(
        "sysctl net.core.somaxconn=4096 and a larger listen() backlog, and an acceptor that keeps up (more accept threads, SO_REUSEPORT)",
        "fewer dropped connection attempts (each costs the client a SYN retry, a second or more)",
        Some("a slow acceptor is the root cause; a longer queue only buys time"),
    ));
    Some(Entry::claim(
        Class::Loss,
        queue("a listening socket's accept queue"),
        f,
    ))
}

/// Accept-queue overflows worth a finding: at least this many…
const LISTEN_OVERFLOWS_MIN: f64 = 1000.0;
/// …and this share of the attempts.
const LISTEN_SHARE_MIN: f64 = 0.001;

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_model::{names as n, MetricId, Run, RunSource, Unit};

    /// A single since-boot snapshot of per-CPU totals.
    fn snapshot(metrics: &[(&str, &[f64])]) -> Run {
        let mut run = Run::new(
            "t",
            RunSource::Imported {
                format: "proc".into(),
                file: "softnet_stat".into(),
            },
        );
        let mut s = Series::new(0.0);
        s.push_row(0.0);
        for (name, per_cpu) in metrics {
            let total: f64 = per_cpu.iter().sum();
            s.set(&MetricId::new(*name), Unit::Count, total);
            for (i, v) in per_cpu.iter().enumerate() {
                s.set(
                    &MetricId::new(*name).with(n::LABEL_CPU, i.to_string()),
                    Unit::Count,
                    *v,
                );
            }
        }
        run.series = s;
        run
    }

    fn on(run: &Run, rule: fn(&Ctx) -> Option<Entry>) -> Option<Finding> {
        let opts = crate::Options::default();
        rule(&Ctx::new(run, &opts)).map(|e| e.finding)
    }

    #[test]
    fn squeezes_piled_on_one_cpu_are_napi_budget_exhaustion() {
        let run = snapshot(&[
            (PROCESSED, &[425_859.0, 27_746.0]),
            (SQUEEZED, &[899.0, 193.0]),
            (DROPPED, &[0.0, 0.0]),
        ]);
        let f = on(&run, squeeze).expect("napi budget");
        assert_eq!(f.cause, cause::NAPI_BUDGET);
        assert!(f.summary.starts_with("Since boot"), "{}", f.summary);
        assert!(
            f.summary.contains("82.3 % of them on CPU 0"),
            "{}",
            f.summary
        );
        assert!(f.confidence <= 0.55);
        assert!(on(&run, drops).is_none(), "no drops: no drop finding");
        let s = on(&run, skew).expect("skew");
        assert!(
            s.summary.contains("93.9 % of the packets processed"),
            "{}",
            s.summary
        );
        // The whole analysis now says something instead of "no ceiling can be named".
        let all = crate::analyze(&run);
        assert_ne!(all[0].cause, cause::NO_CEILING, "{all:?}");
    }

    #[test]
    fn backlog_drops_since_boot_are_named_with_their_cpu() {
        let run = snapshot(&[(PROCESSED, &[5e6, 5e6]), (DROPPED, &[12_000.0, 0.0])]);
        let f = on(&run, drops).expect("drops");
        assert_eq!(f.cause, cause::BUFFER_DROPS);
        assert!(
            f.summary.contains("100 % of them on CPU 0"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn a_healthy_snapshot_gets_no_claim() {
        // Even spread, a few squeezes per million packets, no drops.
        let run = snapshot(&[
            (PROCESSED, &[2.5e6, 2.4e6, 2.6e6, 2.5e6]),
            (SQUEEZED, &[3.0, 2.0, 4.0, 1.0]),
            (DROPPED, &[0.0, 0.0, 0.0, 0.0]),
        ]);
        assert!(on(&run, squeeze).is_none());
        assert!(on(&run, drops).is_none());
        assert!(on(&run, skew).is_none());
    }

    #[test]
    fn a_series_with_rates_is_not_a_snapshot() {
        let mut run = snapshot(&[
            (PROCESSED, &[425_859.0, 27_746.0]),
            (SQUEEZED, &[899.0, 193.0]),
        ]);
        run.series.interval_s = 1.0;
        assert!(on(&run, squeeze).is_none());
        assert!(on(&run, skew).is_none());
    }

    #[test]
    fn accept_queues_that_overflowed_since_boot_are_a_loss() {
        let snap = |overflows: f64| {
            let mut run = Run::new(
                "s",
                netceil_model::RunSource::Imported {
                    format: "proc".into(),
                    file: "netstat".into(),
                },
            );
            let mut s = Series::new(0.0);
            s.push_row(0.0);
            let total = |proto: &str, counter: &str| {
                netceil_model::MetricId::new(netceil_model::names::SNMP_COUNTER_TOTAL)
                    .with("proto", proto)
                    .with("counter", counter)
            };
            s.set(
                &total("TcpExt", "ListenOverflows"),
                netceil_model::Unit::Count,
                overflows,
            );
            s.set(
                &total("Tcp", "PassiveOpens"),
                netceil_model::Unit::Count,
                2_000_000.0,
            );
            run.series = s;
            run
        };
        let f = on(&snap(90_000.0), listen).expect("listen overflows");
        assert_eq!(f.cause, cause::BUFFER_DROPS);
        assert!(f.summary.contains("90.0 k times"), "{}", f.summary);
        assert!(on(&snap(40.0), listen).is_none());
    }
}
