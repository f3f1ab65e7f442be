//! CPU ceilings: one hot core, or all of them busy.
//!
//! **One hot CPU.** A machine-wide average of 50 % on two cores can be one core at 100 % and
//! one idle: averages hide the binding core. The rule looks at each CPU over the load phase and
//! fires when the busiest is at ≥ 85 % while the others average ≤ 70 %. When the hot core's
//! time is mostly kernel (system + softirq + irq), the network receive path is pinned to it —
//! a single RX queue, IRQ affinity, RPS off — and the interrupt and NET_RX softirq counts per
//! CPU show where they land. When it is mostly user time, one application thread is the limit.
//! Confidence: floor 0.45, band 0.5; strengths: the hot core's busy % (85 → 0, 97 → 1) and the
//! others' headroom (their mean 70 % → 0, 30 % → 1); × data and network factors.
//!
//! **CPU-bound overall.** Every core ≥ 80 % and the machine ≥ 85 % busy under network load. The
//! cost per packet and per byte says which binds: small packets (≤ 512 B on average) spend
//! their CPU per packet, large ones per byte. Confidence: floor 0.45, band 0.45; strength: the
//! machine's busy % (85 → 0, 98 → 1).

use netceil_model::{names as n, Finding};

use crate::cause;
use crate::ctx::{advice, finding, Ctx, Os};
use crate::fmt;
use crate::stats::{mean, ramp};

/// The busiest CPU must be at least this busy (%).
pub const HOT_CPU_MIN_PCT: f64 = 85.0;
/// The other CPUs must average at most this (%).
pub const OTHERS_MAX_PCT: f64 = 70.0;

/// One core saturated while the others had room.
pub fn hot_cpu(ctx: &Ctx) -> Option<Finding> {
    // A paced run that reached its rate was not capped by a core, however busy: a loss on the
    // way is a buffer's (the buffer rule), not this ceiling.
    if !ctx.net_possible() || ctx.offered_met() || ctx.rate_met() {
        return None;
    }
    let busy = ctx.per_cpu_busy_for_work();
    if busy.len() < 2 {
        return None;
    }
    let &(hot, hot_busy) = busy.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let others: Vec<f64> = busy
        .iter()
        .filter(|(c, _)| *c != hot)
        .map(|(_, b)| *b)
        .collect();
    let others_mean = mean(&others)?;
    if hot_busy < HOT_CPU_MIN_PCT || others_mean > OTHERS_MAX_PCT {
        return shared_core(ctx, &busy);
    }
    let kernel = ctx
        .per_cpu_kernel()
        .into_iter()
        .find(|(c, _)| *c == hot)
        .map(|(_, k)| k);
    let kernel_bound = kernel.is_some_and(|k| k >= 0.5 * hot_busy);
    let strength = (ramp(hot_busy, 85.0, 97.0) + ramp(others_mean, 70.0, 30.0)) / 2.0;
    let confidence = (0.45 + 0.5 * strength) * ctx.data_factor() * ctx.net_factor();

    let share_on_hot = |name: &str| -> Option<f64> {
        let per = ctx.per_cpu(name);
        let total: f64 = per.iter().map(|(_, v)| v).sum();
        let on_hot = per.iter().find(|(c, _)| *c == hot).map(|(_, v)| *v)?;
        (total > 100.0).then(|| on_hot / total)
    };
    let net_rx_share = share_on_hot(n::SOFTIRQ_NET_RX_PER_S);
    let irq_share = share_on_hot(n::NIC_IRQ_PER_S);

    let what = if kernel_bound {
        format!(
            "{} of it in the kernel (system + softirq)",
            fmt::pct(kernel.unwrap_or(0.0))
        )
    } else {
        "most of it in user space".to_string()
    };
    let rx_queues = active_rx_queues(ctx);
    let nic_queues = ctx
        .run
        .meta
        .host
        .nics
        .iter()
        .filter_map(|nic| nic.rx_queues)
        .max();
    let why = if !kernel_bound {
        String::new()
    } else if ctx.loopback_only() {
        // Loopback has no NIC queues: its receive work runs where the sender runs.
        "; on loopback the receive softirq runs on the sending thread's core".to_string()
    } else if rx_queues == Some(1) || (rx_queues.is_none() && nic_queues == Some(1)) {
        "; the NIC has a single receive queue, so all receive work lands on one core".to_string()
    } else if irq_share.is_some_and(|s| s > 0.8) {
        format!("; the NIC's interrupts all land on CPU {hot} (IRQ affinity)")
    } else if net_rx_share.is_some_and(|s| s > 0.8) {
        format!("; the NET_RX softirqs all run on CPU {hot} (RPS off, or one flow)")
    } else {
        String::new()
    };
    let machine = ctx.machine_busy().map(|(b, _)| b);
    let hides = machine
        .map(|m| format!("; the machine-wide average of {} hides it", fmt::pct(m)))
        .unwrap_or_default();
    let mut f = finding(
        cause::HOT_CPU,
        format!(
            "One CPU was the ceiling: CPU {hot} was {} busy {}, {what}, while the other {} averaged {}{hides}{why}.",
            fmt::pct(hot_busy),
            ctx.window_words(),
            if others.len() == 1 { "CPU".to_string() } else { format!("{} CPUs", others.len()) },
            fmt::pct(others_mean),
        ),
        confidence,
    );
    let id = |name: &str| format!("{name}{{cpu={hot}}}");
    f.evidence.push(ctx.ev(
        id(n::CPU_BUSY_PCT),
        Some(hot_busy),
        format!("CPU {hot} busy {}", fmt::pct(hot_busy)),
    ));
    if let Some(k) = kernel {
        f.evidence.push(ctx.ev(
            id(n::CPU_SYSTEM_PCT),
            Some(k),
            format!("CPU {hot} in system + softirq + irq {}", fmt::pct(k)),
        ));
    }
    f.evidence.push(ctx.ev(
        n::CPU_BUSY_PCT,
        Some(others_mean),
        format!("the other CPUs averaged {} busy", fmt::pct(others_mean)),
    ));
    if let Some(s) = net_rx_share {
        f.evidence.push(ctx.ev(
            id(n::SOFTIRQ_NET_RX_PER_S),
            Some(s * 100.0),
            format!(
                "{} of NET_RX softirqs ran on CPU {hot}",
                fmt::pct(s * 100.0)
            ),
        ));
    }
    if let Some(s) = irq_share {
        f.evidence.push(ctx.ev(
            id(n::NIC_IRQ_PER_S),
            Some(s * 100.0),
            format!(
                "{} of NIC interrupts landed on CPU {hot}",
                fmt::pct(s * 100.0)
            ),
        ));
    }
    if let Some(q) = rx_queues {
        f.evidence.push(ctx.ev(
            n::IRQ_PER_S,
            Some(q as f64),
            format!(
                "{q} NIC receive queue interrupt{} carried traffic",
                if q == 1 { "" } else { "s" }
            ),
        ));
    }
    f.alternatives.push(format!(
        "CPU-bound overall ruled out: the other CPUs averaged {} busy",
        fmt::pct(others_mean)
    ));
    if kernel_bound {
        let linux = ctx.os() != Os::FreeBsd;
        if rx_queues == Some(1) || net_rx_share.is_some_and(|s| s > 0.8) {
            f.alternatives.push(
                "a single flow also hashes to one queue: more queues only help with more flows"
                    .into(),
            );
        }
        if linux && ctx.loopback_only() {
            // Loopback has no queues or interrupts to spread; its packets go through the
            // per-CPU backlog, which RPS does steer.
            f.alternatives.push(
                "more NIC queues and interrupt affinity do not apply: the traffic crossed loopback only"
                    .into(),
            );
            f.advice.push(advice(
                "RPS on loopback: echo <cpu mask> > /sys/class/net/lo/queues/rx-0/rps_cpus",
                format!("receive protocol processing leaves CPU {hot} for the CPUs in the mask"),
                Some("costs an inter-processor interrupt per batch; per-flow, so one flow still uses one core; more flows (--flows) spread only with RPS on"),
            ));
        } else if linux {
            f.advice.push(advice(
                "more RX queues: ethtool -L IF combined N (RSS)",
                "receive processing spreads over N cores",
                Some("one flow still lands on one queue; needs a NIC with several queues"),
            ));
            f.advice.push(advice(
                "IRQ affinity: spread /proc/irq/N/smp_affinity_list over the cores (or irqbalance)",
                format!("interrupts and NET_RX leave CPU {hot}"),
                Some("keep the IRQ and the receiving thread on the same NUMA node"),
            ));
            f.advice.push(advice(
                "RPS: echo <cpu mask> > /sys/class/net/IF/queues/rx-0/rps_cpus",
                "protocol processing spreads over the CPUs in the mask, even with one RX queue",
                Some("costs an inter-processor interrupt per batch; per-flow, so one flow still uses one core"),
            ));
        } else {
            f.advice.push(advice(
                "more queues or RSS (the driver's sysctls), and cpuset -l to pin the interrupt threads apart",
                "receive processing spreads over cores",
                Some("one flow still lands on one queue"),
            ));
        }
    } else {
        f.advice.push(advice(
            "more receiving threads and sockets (SO_REUSEPORT), or move the thread off the interrupt CPU (taskset)",
            "the application's share spreads over cores",
            Some("a single flow read by one socket stays on one thread"),
        ));
    }
    f.next = Some(format!(
        "per-CPU interrupts (/proc/interrupts) and softirqs (/proc/softirqs), and top -H, during the run tell what runs on CPU {hot}"
    ));
    Some(f)
}

/// A recorded thread's mean CPU % and the CPU it ran on most often over the load rows.
struct ThreadOnCpu {
    comm: String,
    tid: String,
    cpu_pct: f64,
    cpu: u32,
    preempted_per_s: Option<f64>,
}

/// Busy threads (≥ 10 % of a core) of the recorded processes, with their usual CPU.
fn busy_threads(ctx: &Ctx) -> Vec<ThreadOnCpu> {
    let s = ctx.series();
    let mut out = Vec::new();
    for m in s.by_name(n::THREAD_CPU_PCT) {
        let Some(cpu_pct) = ctx.mean_of(m).filter(|c| *c >= 10.0) else {
            continue;
        };
        let with = |name: &str| netceil_model::MetricId {
            name: name.into(),
            labels: m.id.labels.clone(),
        };
        let Some(last) = s.get(&with(n::THREAD_LAST_CPU)) else {
            continue;
        };
        let mut counts: std::collections::BTreeMap<u32, usize> = std::collections::BTreeMap::new();
        for v in ctx.values(last) {
            *counts.entry(v as u32).or_default() += 1;
        }
        let Some((&cpu, _)) = counts.iter().max_by_key(|(_, n)| **n) else {
            continue;
        };
        out.push(ThreadOnCpu {
            comm: m.id.label(n::LABEL_COMM).unwrap_or("?").to_string(),
            tid: m.id.label(n::LABEL_TID).unwrap_or("?").to_string(),
            cpu_pct,
            cpu,
            preempted_per_s: s
                .get(&with(n::THREAD_NONVOLUNTARY_CS_PER_S))
                .and_then(|p| ctx.mean_of(p)),
        });
    }
    out
}

/// Several busy threads of the workload sharing one saturated core while the machine has
/// others (a sender and receiver pinned together with taskset): their ceiling is that one
/// core, whatever else runs on the other CPUs. Confidence: floor 0.45, band 0.45; strengths:
/// the core's busy % (85 → 0, 97 → 1) and the other CPUs' room (90 % busy → 0, 40 % → 1).
fn shared_core(ctx: &Ctx, busy: &[(u32, f64)]) -> Option<Finding> {
    let threads = busy_threads(ctx);
    let mut by_cpu: std::collections::BTreeMap<u32, Vec<&ThreadOnCpu>> =
        std::collections::BTreeMap::new();
    for t in &threads {
        by_cpu.entry(t.cpu).or_default().push(t);
    }
    let (cpu, group) = by_cpu
        .into_iter()
        .filter(|(_, g)| g.len() >= 2)
        .max_by_key(|(_, g)| g.len())?;
    let cpu_busy = busy.iter().find(|(c, _)| *c == cpu).map(|(_, b)| *b)?;
    if cpu_busy < HOT_CPU_MIN_PCT {
        return None;
    }
    let others_busy: Vec<f64> = busy
        .iter()
        .filter(|(c, _)| *c != cpu)
        .map(|(_, b)| *b)
        .collect();
    let others_mean = mean(&others_busy).unwrap_or(0.0);
    // Sharing a core while another idles says "affinity"; when every core is full the
    // scheduler had no better place, and the finding says less.
    let strength = (ramp(cpu_busy, 85.0, 97.0) + ramp(others_mean, 90.0, 40.0)) / 2.0;
    let confidence = (0.45 + 0.45 * strength) * ctx.data_factor() * ctx.net_factor();
    let names: Vec<String> = group
        .iter()
        .map(|t| format!("{} ({})", t.comm, t.tid))
        .collect();
    let share: f64 = group.iter().map(|t| t.cpu_pct).sum();
    let mut f = finding(
        cause::HOT_CPU,
        format!(
            "One CPU was the ceiling: {} all ran on CPU {cpu}, which was {} busy {}; together they got {} of it and competed for the one core.",
            names.join(", "),
            fmt::pct(cpu_busy),
            ctx.window_words(),
            fmt::pct(share)
        ),
        confidence,
    );
    for t in &group {
        let preempted = t
            .preempted_per_s
            .filter(|p| *p >= 100.0)
            .map(|p| format!(", preempted {}", fmt::per_s(p)))
            .unwrap_or_default();
        f.evidence.push(ctx.ev(
            format!("{}{{tid={}}}", n::THREAD_CPU_PCT, t.tid),
            Some(t.cpu_pct),
            format!(
                "{} ran on CPU {cpu} at {} of a core{preempted}",
                t.comm,
                fmt::pct(t.cpu_pct)
            ),
        ));
    }
    f.evidence.push(ctx.ev(
        format!("{}{{cpu={cpu}}}", n::CPU_BUSY_PCT),
        Some(cpu_busy),
        format!("CPU {cpu} busy {}", fmt::pct(cpu_busy)),
    ));
    let others: Vec<String> = busy
        .iter()
        .filter(|(c, _)| *c != cpu)
        .map(|(c, b)| format!("CPU {c} {}", fmt::pct(*b)))
        .collect();
    f.alternatives.push(if others_mean >= 85.0 {
        format!(
            "the other CPUs were busy too ({}): the scheduler had nowhere better to put them, or an affinity mask kept them together",
            others.join(", ")
        )
    } else {
        format!("the other CPUs had room ({}): an affinity mask or pinning keeps these threads on CPU {cpu}", others.join(", "))
    });
    f.advice.push(advice(
        "run the sender and receiver on different cores (taskset -c / cpuset), or drop the affinity mask",
        "each gets a core of its own: the ceiling rises towards the slower one's",
        Some("on a busy machine the other cores' own load still competes"),
    ));
    f.next = Some("ps -L -o tid,psr,pcpu,comm -p PID shows which core each thread runs on".into());
    Some(f)
}

/// The number of NIC receive-queue interrupts that carried traffic, when the series has them.
fn active_rx_queues(ctx: &Ctx) -> Option<usize> {
    let mut any = false;
    let mut active = 0;
    for m in ctx.series().by_name(n::IRQ_PER_S) {
        if !matches!(m.id.label(n::LABEL_DIR), Some("rx" | "rxtx") | None) {
            continue;
        }
        any = true;
        if ctx.mean_of(m).is_some_and(|v| v >= 10.0) {
            active += 1;
        }
    }
    (any && active > 0).then_some(active)
}

/// All cores busy under network load: say which cost binds, per packet or per byte.
pub fn cpu_bound(ctx: &Ctx) -> Option<Finding> {
    if !ctx.net_possible() || ctx.offered_met() || ctx.rate_met() {
        return None;
    }
    let (busy, metric) = ctx.machine_busy_for_work()?;
    if busy < 85.0 {
        return None;
    }
    let per_cpu = ctx.per_cpu_busy_for_work();
    let min_core = per_cpu
        .iter()
        .map(|(_, b)| *b)
        .fold(f64::INFINITY, f64::min);
    if !per_cpu.is_empty() && min_core < 80.0 {
        return None;
    }
    // Network work runs mostly in the kernel; a CPU full of user time may be busy with
    // something else, so it counts less.
    let kernel: Option<f64> = [n::CPU_SYSTEM_PCT, n::CPU_SOFTIRQ_PCT, n::CPU_IRQ_PCT]
        .iter()
        .map(|m| ctx.total_mean(m))
        .try_fold(0.0, |acc, v| match (acc, v) {
            (a, Some(v)) => Some(a + v),
            (a, None) => Some(a),
        })
        .filter(|_| ctx.total_mean(n::CPU_SYSTEM_PCT).is_some());
    let kernel_frac = kernel.map(|k| k / busy.max(1e-9));
    let kernel_factor = kernel_frac.map_or(1.0, |k| 0.7 + 0.3 * ramp(k, 0.2, 0.6));
    let confidence = (0.45 + 0.45 * ramp(busy, 85.0, 98.0))
        * ctx.data_factor()
        * ctx.net_factor()
        * kernel_factor;
    let cpus = ctx.cpus();
    let pkt = ctx.packet_rate();
    let thr = ctx.throughput();
    let bytes_per_pkt = match (&thr, &pkt) {
        (Some(t), Some((p, _))) if *p > 0.0 => Some(t.bits_per_s / 8.0 / p),
        _ => None,
    };
    let cpu_s_per_s = cpus.map(|c| busy / 100.0 * f64::from(c));
    let per_packet_ns = match (cpu_s_per_s, &pkt) {
        (Some(c), Some((p, _))) if *p > 0.0 => Some(c / p * 1e9),
        _ => None,
    };
    let per_byte_ns = match (cpu_s_per_s, &thr) {
        (Some(c), Some(t)) if t.bits_per_s > 0.0 => Some(c / (t.bits_per_s / 8.0) * 1e9),
        _ => None,
    };
    let small = bytes_per_pkt.map(|b| b <= 512.0);
    let binds = match small {
        Some(true) => "per-packet cost binds: small packets each pay a full trip through the stack",
        Some(false) => "with large packets the per-byte cost (copies, checksums) weighs more, though per-packet cost still counts",
        None => "whether packet rate or byte rate binds is not known without both rates",
    };
    let cores = match cpus {
        Some(c) if c > 1 => format!("all {c} CPUs averaged"),
        _ => "the CPU was".into(),
    };
    let mut f = finding(
        cause::CPU_BOUND,
        format!(
            "The CPU was the ceiling: {cores} {} busy {}; {binds}.",
            fmt::pct(busy),
            ctx.window_words()
        ),
        confidence,
    );
    f.evidence
        .push(ctx.ev(metric, Some(busy), format!("CPU busy {}", fmt::pct(busy))));
    if !per_cpu.is_empty() {
        f.evidence.push(ctx.ev(
            format!("{}{{cpu=*}}", n::CPU_BUSY_PCT),
            Some(min_core),
            format!("the least busy CPU was at {}", fmt::pct(min_core)),
        ));
    }
    if let (Some(p), Some((pps, m))) = (per_packet_ns, &pkt) {
        f.evidence.push(ctx.ev(
            m.clone(),
            Some(*pps),
            format!(
                "{} at {} ns of CPU per packet{}",
                fmt::pps(*pps),
                fmt::sig3(p),
                if kernel_frac.is_some_and(|k| k < 0.4) {
                    " (all CPU time counted, whoever used it)"
                } else {
                    ""
                }
            ),
        ));
    }
    // Per-byte cost only means something when the packets carry bytes worth counting.
    if let (Some(b), Some(t), Some(false)) = (per_byte_ns, &thr, small) {
        f.evidence.push(ctx.ev(
            t.metric.clone(),
            Some(t.bits_per_s),
            format!(
                "{} at {} ns of CPU per byte",
                fmt::bits(t.bits_per_s),
                fmt::sig3(b)
            ),
        ));
    }
    if let Some(b) = bytes_per_pkt {
        f.evidence.push(ctx.ev(
            "bytes_per_packet",
            Some(b),
            format!("{} per packet on average", fmt::bytes(b)),
        ));
    }
    if let Some(k) = kernel_frac.filter(|k| *k < 0.4) {
        f.alternatives.push(format!(
            "only {} of the busy time was in the kernel: other processes may hold much of the CPU (per-thread figures, --pid, tell)",
            fmt::pct(k * 100.0)
        ));
    }
    f.alternatives.push(format!(
        "one hot CPU ruled out: the least busy CPU was at {}",
        if per_cpu.is_empty() {
            "an unknown level (no per-CPU data)".to_string()
        } else {
            fmt::pct(min_core)
        }
    ));
    if ctx
        .series()
        .by_name(n::THREAD_VOLUNTARY_CS_PER_S)
        .next()
        .is_none()
    {
        f.alternatives.push(
            "busy-wait not ruled out: a polling thread also shows as busy CPU (record threads with --pid to see voluntary switches)".into(),
        );
    }
    if small != Some(false) {
        f.advice.push(advice(
            "larger messages, or batching: UDP GSO/GRO (--gso; ethtool -K IF rx-udp-gro-forwarding on), sendmmsg/recvmmsg",
            "the same CPU moves more bytes: per-packet cost is paid once per batch",
            Some("latency per message rises with the batch"),
        ));
    }
    f.advice.push(advice(
        "offloads: ethtool -K IF tso on gso on gro on rx on tx on",
        "segmentation and checksums leave the CPU: fewer, larger trips through the stack",
        Some("offloads do not apply on every path (e.g. some tunnels or XDP)"),
    ));
    if small == Some(false) {
        f.advice.push(advice(
            "fewer copies: MSG_ZEROCOPY for large sends, larger socket reads",
            "per-byte cost falls",
            Some("zero-copy pays off above ~10 KB per send"),
        ));
    }
    f.advice.push(advice(
        "more cores on the path: RSS queues and receiving threads",
        "throughput scales while the work splits",
        Some("not past the cores there are"),
    ));
    f.next = Some(
        "rerun with larger messages at the same CPU: if the packet rate holds and bit/s rises, per-packet cost binds; if bit/s holds, per-byte cost does"
            .into(),
    );
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    fn loaded(
        rows: usize,
        cpus: &'static [(f64, f64, f64)],
        pps: f64,
        bits: f64,
    ) -> netceil_model::Run {
        live_run(rows, move |s, r| {
            let jittered: Vec<(f64, f64, f64)> = cpus
                .iter()
                .enumerate()
                .map(|(i, &(u, y, q))| (u, (y + noise(r * 3 + i, 2.0)).max(0.0), q))
                .collect();
            cpu_row(s, r, &jittered);
            put(s, r, n::LOAD_RX_PPS, &[], pps + noise(r, pps * 0.02));
            put(
                s,
                r,
                n::LOAD_RX_BITS_PER_S,
                &[],
                bits + noise(r, bits * 0.02),
            );
            put(
                s,
                r,
                n::SOFTIRQ_NET_RX_PER_S,
                &[(n::LABEL_CPU, "0")],
                30_000.0,
            );
            put(s, r, n::SOFTIRQ_NET_RX_PER_S, &[(n::LABEL_CPU, "1")], 50.0);
        })
    }

    #[test]
    fn one_core_in_softirq_while_the_other_idles_is_a_hot_cpu() {
        let run = loaded(
            10,
            &[(3.0, 40.0, 55.0), (10.0, 5.0, 0.0)],
            800e3,
            800e3 * 64.0 * 8.0,
        );
        let f = on(&run, hot_cpu).expect("hot cpu");
        assert_eq!(f.cause, cause::HOT_CPU);
        assert!(f.summary.contains("CPU 0 was 98 % busy"), "{}", f.summary);
        assert!(f.summary.contains("in the kernel"), "{}", f.summary);
        assert!(
            f.summary.contains("NET_RX softirqs all run on CPU 0"),
            "{}",
            f.summary
        );
        assert!(f
            .evidence
            .iter()
            .any(|e| e.text.contains("NET_RX") && e.text.contains("100 %")));
        assert!(f.advice.iter().any(|a| a.knob.contains("rps_cpus")));
        // Where the traffic went is not known: a NIC may be on the path.
        assert!(f.advice.iter().any(|a| a.knob.contains("ethtool -L")));
        assert!(f.confidence > 0.8, "{}", f.confidence);
        assert!(on(&run, cpu_bound).is_none(), "not CPU-bound overall");
    }

    #[test]
    fn a_hot_cpu_on_loopback_gets_no_nic_advice() {
        let mut run = loaded(
            10,
            &[(3.0, 40.0, 55.0), (10.0, 5.0, 0.0)],
            800e3,
            800e3 * 64.0 * 8.0,
        );
        // netceil's own in-process receiver: the traffic stayed on loopback.
        let mut params = serde_json::Map::new();
        params.insert("target".into(), serde_json::Value::Null);
        run.workload = Some(netceil_model::Workload {
            kind: netceil_model::WorkloadKind::Udp,
            params,
        });
        let f = on(&run, hot_cpu).expect("hot cpu");
        assert!(
            !f.advice
                .iter()
                .any(|a| a.knob.contains("ethtool") || a.knob.contains("smp_affinity")),
            "{:?}",
            f.advice
        );
        assert!(f
            .advice
            .iter()
            .any(|a| a.knob.contains("/lo/queues/rx-0/rps_cpus")));
        assert!(f.alternatives.iter().any(|a| a.contains("loopback only")));
    }

    #[test]
    fn a_busy_user_thread_is_named_as_such() {
        let run = loaded(10, &[(92.0, 5.0, 0.0), (5.0, 5.0, 0.0)], 100e3, 1e9);
        let f = on(&run, hot_cpu).unwrap();
        assert!(f.summary.contains("user space"), "{}", f.summary);
        assert!(f.advice[0].knob.contains("SO_REUSEPORT"));
    }

    #[test]
    fn balanced_cores_are_not_a_hot_cpu() {
        let run = loaded(10, &[(20.0, 30.0, 20.0), (20.0, 30.0, 20.0)], 100e3, 1e9);
        assert!(on(&run, hot_cpu).is_none());
    }

    #[test]
    fn cores_full_of_niced_background_work_are_not_cpu_bound_or_hot() {
        // 25 % of each core is the workload; the rest went to `nice` jobs, which yield.
        let run = live_run(10, |s, r| {
            cpu_row(s, r, &[(70.0, 20.0, 8.0), (80.0, 15.0, 3.0)]);
            for (c, nice) in [("0", 65.0), ("1", 75.0)] {
                put(s, r, n::CPU_NICE_PCT, &[(n::LABEL_CPU, c)], nice);
            }
            put(s, r, n::CPU_NICE_PCT, &[], 70.0);
            put(s, r, n::LOAD_RX_PPS, &[], 4e3);
            put(s, r, n::LOAD_RX_BITS_PER_S, &[], 50e6);
        });
        assert!(on(&run, cpu_bound).is_none());
        assert!(on(&run, hot_cpu).is_none());
    }

    #[test]
    fn all_cores_busy_with_small_packets_is_cpu_bound_per_packet() {
        let run = loaded(
            10,
            &[(20.0, 40.0, 38.0), (25.0, 45.0, 28.0)],
            1.2e6,
            1.2e6 * 64.0 * 8.0,
        );
        let f = on(&run, cpu_bound).expect("cpu bound");
        assert!(f.summary.contains("all 2 CPUs averaged"), "{}", f.summary);
        assert!(f.summary.contains("per-packet cost binds"), "{}", f.summary);
        assert!(f
            .evidence
            .iter()
            .any(|e| e.text.contains("ns of CPU per packet")));
        assert!(on(&run, hot_cpu).is_none());
    }

    #[test]
    fn large_packets_point_at_per_byte_cost() {
        let run = loaded(
            10,
            &[(30.0, 60.0, 8.0), (30.0, 60.0, 8.0)],
            300e3,
            300e3 * 8000.0 * 8.0,
        );
        let f = on(&run, cpu_bound).unwrap();
        assert!(f.summary.contains("per-byte cost"), "{}", f.summary);
        assert!(f.advice.iter().any(|a| a.knob.contains("MSG_ZEROCOPY")));
    }

    #[test]
    fn sender_and_receiver_pinned_together_share_one_hot_core() {
        // CPU 1 is busy with someone else's work, so "others idle" does not hold.
        let run = live_run(10, |s, r| {
            cpu_row(s, r, &[(70.0, 20.0, 10.0), (88.0, 10.0, 0.0)]);
            put(s, r, n::LOAD_RX_PPS, &[], 150e3);
            // Only the workload's own process is recorded; CPU 1's load is someone else's.
            for (tid, comm, pct) in [
                ("10", "netceil-udp-rx", 17.0),
                ("11", "netceil-udp-tx0", 32.0),
                ("12", "netceil-sampler", 0.5),
            ] {
                let l = [
                    (n::LABEL_PID, "9"),
                    (n::LABEL_TID, tid),
                    (n::LABEL_COMM, comm),
                ];
                put(s, r, n::THREAD_CPU_PCT, &l, pct);
                put(s, r, n::THREAD_LAST_CPU, &l, 0.0);
                put(s, r, n::THREAD_NONVOLUNTARY_CS_PER_S, &l, 2500.0);
            }
        });
        let f = on(&run, hot_cpu).expect("shared core");
        assert!(
            f.summary
                .contains("netceil-udp-rx (10), netceil-udp-tx0 (11) all ran on CPU 0"),
            "{}",
            f.summary
        );
        assert!(
            f.evidence[0].text.contains("preempted 2.50 k/s"),
            "{}",
            f.evidence[0].text
        );
        assert!(f.advice[0].knob.contains("taskset"));
        // Spread over two cores, they are not a finding.
        let mut spread = run.clone();
        for m in spread
            .series
            .metrics
            .iter_mut()
            .filter(|m| m.id.name == n::THREAD_LAST_CPU)
        {
            if m.id.label(n::LABEL_COMM) == Some("netceil-udp-tx0") {
                m.values.iter_mut().for_each(|v| *v = Some(1.0));
            }
        }
        assert!(on(&spread, hot_cpu).is_none());
    }

    #[test]
    fn a_paced_run_that_got_its_rate_has_no_cpu_ceiling() {
        let mut run = loaded(
            10,
            &[(20.0, 40.0, 38.0), (25.0, 45.0, 28.0)],
            1e3,
            1e3 * 64.0 * 8.0,
        );
        run.results = Some(netceil_model::Results {
            tx_packets: 10_000,
            rx_app_packets: 10_000,
            requested_pps: Some(1e3),
            generator: netceil_model::GeneratorStats {
                achieved_ratio: Some(1.0),
                ..Default::default()
            },
            ..Default::default()
        });
        assert!(on(&run, cpu_bound).is_none());
        assert!(on(&run, hot_cpu).is_none());
        // Still none with a little loss: the rate was reached, the loss is a buffer's.
        if let Some(r) = run.results.as_mut() {
            r.rx_app_packets = 9_890;
            r.lost_packets = 110;
        }
        assert!(on(&run, cpu_bound).is_none());
        assert!(on(&run, hot_cpu).is_none());
        // A paced run that fell short is another matter: the core may be why.
        if let Some(r) = run.results.as_mut() {
            r.generator.achieved_ratio = Some(0.7);
            r.generator_limited = true;
        }
        assert!(on(&run, hot_cpu).is_some() || on(&run, cpu_bound).is_some());
    }

    #[test]
    fn busy_cpus_without_network_load_say_nothing() {
        // A compile on an otherwise quiet machine: all cores busy, no traffic.
        let run = live_run(10, |s, r| {
            idle_row(s, r);
            cpu_row(s, r, &[(95.0, 4.0, 0.0), (96.0, 3.0, 0.0)]);
        });
        assert!(on(&run, cpu_bound).is_none());
        assert!(on(&run, hot_cpu).is_none());
    }
}
