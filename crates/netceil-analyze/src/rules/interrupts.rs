//! Interrupt or context-switch bound: the event rates plateau while the CPU has headroom.
//!
//! SEEDS §1: on a NIC without interrupt moderation every frame raised an interrupt, every
//! interrupt woke an interrupt thread (cs ≈ 1.9 × interrupts), and throughput stopped at 18 MB/s
//! with the CPU 60–70 % idle. What gives it away is not CPU % but the event rate against the
//! work: bytes per interrupt near one frame, and a switch rate that is high and unsteady.
//!
//! Fires when, over the load phase, interrupts ≥ 5 k/s or context switches ≥ 10 k/s per CPU,
//! the rate rose ≥ 5× above its idle level (when there are idle rows), the machine was at
//! least 25 % idle, and, when the work is known, each interrupt carried at most 4 frames (each
//! context switch at most 2, when no interrupt count exists: an interrupt-driven receive costs
//! about two switches per interrupt): a server that moves several frames per switch is busy,
//! not bound by its switching. Confidence: floor 0.35, band 0.5; strengths: idle time (25 % → 0, 60 % → 1),
//! frames per interrupt (4 → 0, 1 → 1, counted twice: it is the direct evidence), the switch
//! rate's coefficient of variation (3 % → 0, 15 % → 1) and its level per CPU (10 k/s → 0,
//! 25 k/s → 1); × data and network factors.
//!
//! Two cases are not this rule's: a closed request/response loop whose rate its round trip
//! explains is latency-bound (`rules/latency.rs`, which lists these rates as an alternative),
//! and traffic that crossed loopback only has no NIC, so neither frames per interrupt nor NIC
//! moderation advice mean anything there.

use netceil_model::{names as n, Finding, Quantity, Resource, Unit};

use crate::cause;
use crate::ctx::{advice, finding, Ctx, Os};
use crate::ledger::{Class, Entry};
use crate::stats::{cv, mean_strength, ramp};
use netceil_model::fmt;

/// Interrupts per second per CPU from which the rate can bind.
pub const INTR_PER_CPU_MIN: f64 = 5_000.0;
/// Context switches per second per CPU from which the rate can bind.
pub const CS_PER_CPU_MIN: f64 = 10_000.0;
/// Machine idle % below which the CPU, not the event rate, is the suspect.
pub const MIN_IDLE_PCT: f64 = 25.0;
/// Frames each interrupt carried above which the event rate is not what paces the work.
pub const MAX_FRAMES_PER_INTR: f64 = 4.0;
/// Context switches an interrupt-driven receive costs per interrupt (to the handler's thread
/// and back to the reader: SEEDS §1 measured 1.9), to read a switch rate as interrupts when a
/// log has no interrupt count.
pub const SWITCHES_PER_INTR: f64 = 2.0;

/// What the interrupt rule measured.
struct Irq<'a> {
    loopback: bool,
    cs: Option<f64>,
    intr: Option<f64>,
    device: Option<f64>,
    cs_m: Option<&'a netceil_model::Metric>,
    intr_m: Option<&'a netceil_model::Metric>,
    cs_cv: Option<f64>,
    thr: Option<crate::ctx::Throughput>,
    frame_how: String,
    bytes_per_intr: Option<f64>,
    frames_per_intr: Option<f64>,
    bytes_per_cs: Option<f64>,
    idle_pct: Option<f64>,
    strength: f64,
    confidence: f64,
}

/// The interrupt / context-switch rule: the event rates in the ledger (a cost per unit of
/// work whose capacity no counter gives), a ceiling when they plateaued with the CPU idle.
pub fn check(ctx: &Ctx) -> Option<Entry> {
    let m = measure(ctx)?;
    let f = words(ctx, &m);
    let mut e =
        Entry::claim(Class::Ceiling, Resource::Events, f).explains_all(&[cause::SATURATION]);
    if let Some(i) = m.intr {
        e.used = Some(Quantity::new(i, Unit::PerSecond, "interrupts"));
    }
    Some(e)
}

fn measure<'a>(ctx: &'a Ctx<'a>) -> Option<Irq<'a>> {
    if !ctx.net_possible() || ctx.offered_met() {
        return None;
    }
    // A closed loop waits for each answer: its event rates follow from its round trip.
    if ctx.closed_loop().is_some_and(|c| c.latency_explains_rate()) {
        return None;
    }
    let loopback = ctx.loopback_only();
    let s = ctx.series();
    let cs_m = s.total(n::CS_PER_S);
    let intr_m = s.total(n::INTR_PER_S);
    let cs = cs_m.and_then(|m| ctx.mean_of(m));
    let mut intr = intr_m.and_then(|m| ctx.mean_of(m));
    if cs.is_none() && intr.is_none() {
        return None;
    }
    let cpus = ctx.cpus();
    let per_cpu = |v: f64| v / f64::from(cpus.unwrap_or(1));
    // Interrupts from devices, when /proc/interrupts was read: the only ones that are work
    // arriving. Timer ticks and IPIs are the machine talking to itself (`system`).
    let device_m = s.total(n::DEVICE_INTR_PER_S);
    let device = device_m.and_then(|m| ctx.mean_of(m));
    if let Some(d) = device {
        if per_cpu(d) < INTR_PER_CPU_MIN {
            return None;
        }
        intr = Some(d);
    }
    let intr_m = if device.is_some() { device_m } else { intr_m };
    let high = intr.is_some_and(|v| per_cpu(v) >= INTR_PER_CPU_MIN)
        || cs.is_some_and(|v| per_cpu(v) >= CS_PER_CPU_MIN);
    if !high {
        return None;
    }
    // The rates must have been driven by the load, not be the machine's normal level.
    let idle_rows = ctx.phases.idle.clone();
    let rose = [cs_m, intr_m].into_iter().flatten().any(|m| {
        let idle = crate::stats::mean(&crate::stats::present(&m.values[idle_rows.clone()]));
        match (idle, ctx.mean_of(m)) {
            (Some(i), Some(l)) => l >= 5.0 * i.max(1.0),
            (None, Some(_)) => true,
            _ => false,
        }
    });
    if !rose {
        return None;
    }
    let idle_pct = ctx.machine_idle();
    if idle_pct.is_some_and(|i| i < MIN_IDLE_PCT) {
        return None;
    }

    let cs_vals = cs_m.map(|m| ctx.values(m)).unwrap_or_default();
    let cs_cv = cv(&cs_vals);
    let thr = ctx.throughput();
    let (frame, frame_how) = ctx.frame_bytes();
    let bytes_per_intr = match (&thr, intr) {
        (Some(t), Some(i)) if i > 0.0 => Some(t.bits_per_s / 8.0 / i),
        _ => None,
    };
    // On loopback no frame raises an interrupt: the ratio would be about something else.
    let frames_per_intr = bytes_per_intr
        .filter(|_| !loopback)
        .map(|b| b / (frame - 18.0).max(1.0));
    let bytes_per_cs = match (&thr, cs) {
        (Some(t), Some(c)) if c > 0.0 => Some(t.bits_per_s / 8.0 / c),
        _ => None,
    };
    // An event rate paces the work only if each event carries about one unit of it: when an
    // interrupt or a switch moves several frames, the per-event path is already amortized and
    // a busy machine's ordinary switching is not a ceiling. The direct measure is frames per
    // interrupt; without interrupts, frames per context switch.
    let amortized = match (frames_per_intr, bytes_per_cs) {
        (Some(f), _) => f > MAX_FRAMES_PER_INTR,
        (None, Some(b)) if intr.is_none() => {
            b / (frame - 18.0).max(1.0) > MAX_FRAMES_PER_INTR / SWITCHES_PER_INTR
        }
        _ => false,
    };
    if amortized {
        return None;
    }
    let level = cs
        .map(|c| ramp(per_cpu(c), 10_000.0, 25_000.0))
        .or(intr.map(|i| ramp(per_cpu(i), 5_000.0, 15_000.0)));
    let per_frame = frames_per_intr.map(|f| ramp(f, 4.0, 1.0));
    let strength = mean_strength(&[
        idle_pct.map(|i| ramp(i, MIN_IDLE_PCT, 60.0)),
        per_frame,
        per_frame,
        cs_cv.map(|c| ramp(c, 0.03, 0.15)),
        level,
    ])
    .unwrap_or(0.0);
    let mut confidence = (0.35 + 0.5 * strength) * ctx.data_factor() * ctx.net_factor();
    if idle_pct.is_none() {
        confidence *= 0.8;
    }
    Some(Irq {
        loopback,
        cs,
        intr,
        device,
        cs_m,
        intr_m,
        cs_cv,
        thr,
        frame_how,
        bytes_per_intr,
        frames_per_intr,
        bytes_per_cs,
        idle_pct,
        strength,
        confidence,
    })
}

fn words(ctx: &Ctx, m: &Irq) -> Finding {
    let Irq {
        loopback,
        cs,
        intr,
        device,
        cs_cv,
        ref thr,
        frames_per_intr,
        idle_pct,
        strength,
        confidence,
        ..
    } = *m;
    let mut rates = Vec::new();
    if let Some(i) = intr {
        let which = if device.is_some() { "device " } else { "" };
        rates.push(format!("{} {which}interrupts/s", fmt::number(i)));
    }
    if let Some(c) = cs {
        rates.push(format!("{} context switches/s", fmt::number(c)));
    }
    let ratio = match (cs, intr) {
        (Some(c), Some(i)) if i > 0.0 => format!(" ({} per interrupt)", fmt::number(c / i)),
        _ => String::new(),
    };
    let at = thr
        .as_ref()
        .map(|t| {
            format!(
                " at {}/s ({})",
                fmt::value(t.bits_per_s / 8.0, Unit::Bytes),
                fmt::value(t.bits_per_s, Unit::BitsPerSecond)
            )
        })
        .unwrap_or_default();
    let per_frame_words = frames_per_intr
        .map(|f| {
            let moderation = if f <= 1.2 {
                " (one interrupt per frame: no moderation)"
            } else {
                ""
            };
            format!(
                ", about {} frames per interrupt{moderation}",
                fmt::number(f)
            )
        })
        .unwrap_or_default();
    let idle_words = idle_pct
        .map(|i| format!(", while the CPU sat {} idle", fmt::value(i, Unit::Percent)))
        .unwrap_or_default();
    let verb = if strength >= 0.75 {
        "set the ceiling"
    } else {
        "are the likely ceiling"
    };
    let steadiness = cs_cv
        .map(|c| {
            let word = if c >= 0.07 { "unsteady" } else { "steady" };
            format!(
                "; the switch rate was {word} (CV {})",
                fmt::value(c * 100.0, Unit::Percent)
            )
        })
        .unwrap_or_default();
    let mut f = finding(
        cause::INTERRUPT_BOUND,
        format!(
            "Interrupt and context-switch rates {verb}: {}{ratio}{at}{per_frame_words}{idle_words}{steadiness}.",
            rates.join(" and ")
        ),
        confidence,
    );
    irq_evidence(ctx, m, &mut f);
    if let Some(i) = idle_pct {
        f.alternatives.push(format!(
            "CPU-bound ruled out: {} idle",
            fmt::value(i, Unit::Percent)
        ));
    } else {
        f.alternatives
            .push("CPU-bound not ruled out: the log has no CPU idle figure".into());
    }
    if ctx.run.locks.is_empty() {
        f.alternatives
            .push("lock contention not ruled out: no lock profile in this run".into());
    }
    if ctx.series().total(n::TCP_RETRANS_SEGS_PER_S).is_none() {
        f.alternatives.push(
            "TCP path trouble not ruled out: no retransmit or duplicate-ACK counters (netstat -s before and after would tell)".into(),
        );
    }
    if loopback {
        f.alternatives.push(
            "NIC interrupts ruled out: the traffic crossed loopback only; the interrupts counted are the machine's, not a NIC's".into(),
        );
        f.advice.push(advice(
            "fewer wake-ups per byte: larger messages, or batching (sendmmsg/recvmmsg, --gso for UDP)",
            "each wake-up and context switch carries more data",
            Some("latency per message rises with the batch"),
        ));
        f.next = Some(
            "per-thread context switches (thread_voluntary_cs_per_s) show which threads wake most; on loopback there is no NIC to tune".into(),
        );
        return f;
    }
    advise(ctx, thr.is_none(), &mut f);
    f
}

/// The rates, their steadiness, the idle time and the work per event, as evidence.
fn irq_evidence(ctx: &Ctx, m: &Irq, f: &mut Finding) {
    let Irq {
        loopback,
        cs,
        intr,
        device,
        cs_m,
        intr_m,
        cs_cv,
        ref thr,
        ref frame_how,
        bytes_per_intr,
        frames_per_intr,
        bytes_per_cs,
        idle_pct,
        ..
    } = *m;
    if let (Some(i), Some(m)) = (intr, intr_m) {
        f.evidence.push(ctx.ev(
            m.id.to_string(),
            Some((i, Unit::PerSecond)),
            format!("{} interrupts/s {}", fmt::number(i), ctx.window_words()),
        ));
    }
    if let (Some(c), Some(m)) = (cs, cs_m) {
        f.evidence.push(ctx.ev(
            m.id.to_string(),
            Some((c, Unit::PerSecond)),
            format!(
                "{} context switches/s {}",
                fmt::number(c),
                ctx.window_words()
            ),
        ));
        if let Some(v) = cs_cv {
            f.evidence.push(ctx.ev(
                format!("cv({})", n::CS_PER_S),
                Some((v, Unit::Ratio)),
                format!(
                    "context-switch rate varied by {} (coefficient of variation)",
                    fmt::value(v * 100.0, Unit::Percent)
                ),
            ));
        }
    }
    if let Some(i) = idle_pct {
        f.evidence.push(ctx.ev(
            n::CPU_IDLE_PCT,
            Some((i, Unit::Percent)),
            format!("CPU {} idle", fmt::value(i, Unit::Percent)),
        ));
    }
    if device.is_none() && intr.is_some() {
        f.evidence.push(ctx.ev(
            n::INTR_PER_S, None,
            "interrupt source not measured: the total counts device interrupts, timer ticks and IPIs alike",
        ));
    }
    if let (Some(b), Some(t), false) = (bytes_per_intr, &thr, loopback) {
        f.evidence.push(ctx.ev(
            "bytes_per_interrupt",
            Some((b, Unit::Bytes)),
            format!(
                "{} per interrupt at {} ({}): {} frames per interrupt with {frame_how}",
                fmt::value(b, Unit::Bytes),
                fmt::value(t.bits_per_s, Unit::BitsPerSecond),
                if t.measured_in_window {
                    "measured"
                } else {
                    "as given"
                },
                fmt::number(frames_per_intr.unwrap_or(0.0))
            ),
        ));
    }
    if let Some(b) = bytes_per_cs {
        f.evidence.push(ctx.ev(
            "bytes_per_cs",
            Some((b, Unit::Bytes)),
            format!(
                "{} of traffic per context switch",
                fmt::value(b, Unit::Bytes)
            ),
        ));
    }
}

/// Knobs for an interrupt- or switch-bound NIC path, per OS.
fn advise(ctx: &Ctx, no_throughput: bool, f: &mut Finding) {
    let os = ctx.os();
    if os != Os::FreeBsd {
        f.advice.push(advice(
            "interrupt moderation: ethtool -C IF rx-usecs 50 (or adaptive-rx on)",
            "fewer interrupts, more frames per interrupt, fewer context switches per byte",
            Some("adds up to rx-usecs of latency per packet"),
        ));
        f.advice.push(advice(
            "echo 2 > /sys/class/net/IF/napi_defer_hard_irqs; echo 200000 > /sys/class/net/IF/gro_flush_timeout",
            "the NIC's interrupt stays masked while NAPI keeps polling under load",
            Some("Linux ≥ 5.7; latency rises by up to the timeout when traffic is sparse"),
        ));
        f.advice.push(advice(
            "threaded NAPI: echo 1 > /sys/class/net/IF/threaded",
            "receive processing runs in a kthread that can be pinned and scheduled",
            Some("one more context switch per poll when the kthread sleeps"),
        ));
        f.advice.push(advice(
            "busy polling: sysctl net.core.busy_poll=50 net.core.busy_read=50",
            "no interrupts on the hot path",
            Some("spends CPU polling: exactly the trade this finding is about"),
        ));
    }
    if os != Os::Linux {
        f.advice.push(advice(
            "FreeBSD: interrupt moderation, e.g. the msk(4) int_holdoff sysctl (hw.msk.int_holdoff / dev.msk.N.int_holdoff), or a NIC that has it",
            "fewer interrupts and interrupt-thread wake-ups per byte (SEEDS §1: msk at int_holdoff=100 reached 35 MB/s where sk stopped at 18)",
            Some("sk(4) has no moderation: there the fix is a different NIC"),
        ));
        f.advice.push(advice(
            "FreeBSD: device polling (options DEVICE_POLLING; ifconfig IF polling; kern.polling.*)",
            "no per-packet interrupts: the stack polls the NIC at a fixed rate",
            Some("adds latency up to a tick and burns CPU at low load"),
        ));
    }
    f.next = Some(if no_throughput {
        "give the throughput you saw (--throughput 18MB/s) to turn rates into bytes per interrupt; vmstat -i or /proc/interrupts tells which device raises them".into()
    } else {
        "vmstat -i (FreeBSD) or /proc/interrupts (Linux) during the run tells which device raises the interrupts; compare bytes per interrupt after changing moderation".into()
    });
}

/// Timer or IPI rates per CPU from which they are worth naming.
pub const SYSTEM_INTR_PER_CPU_MIN: f64 = 20_000.0;

/// Timer ticks and inter-processor interrupts, not devices, made the interrupt rate: say which,
/// and what makes them.
///
/// A machine can take tens of thousands of interrupts per CPU per second with no device
/// involved: high-resolution timers (a qdisc watchdog, a `nanosleep` loop, sleep pacing) each
/// fire one, and every cross-CPU wake-up is a reschedule IPI. They cost CPU and wake-ups, but
/// they bind throughput only when the CPUs taking them are busy; on an idle machine they are
/// noise. Fires when timers or IPIs reach [`SYSTEM_INTR_PER_CPU_MIN`] per CPU, device
/// interrupts are less than a fifth of the total, the run was not a paced run that got its
/// rate, and the CPUs that took most of them were at least half busy. Confidence: 0.25 + 0.3 ×
/// the mean of the rate's strength (20 k/s → 0, 60 k/s per CPU → 1; a TCP stream's own timers reach ~8 k/s per CPU here) and the busiest receiving
/// CPU's busy share (50 % → 0, 95 % → 1): a cost to name, rarely the ceiling on its own.
pub fn system(ctx: &Ctx) -> Option<Entry> {
    let f = system_finding(ctx)?;
    Some(Entry::claim(Class::Noted, Resource::Events, f).with_id("events:system"))
}

fn system_finding(ctx: &Ctx) -> Option<Finding> {
    if !ctx.net_possible() || ctx.offered_met() {
        return None;
    }
    let s = ctx.series();
    let device = s.total(n::DEVICE_INTR_PER_S).and_then(|m| ctx.mean_of(m))?;
    let timer = s
        .total(n::TIMER_INTR_PER_S)
        .and_then(|m| ctx.mean_of(m))
        .unwrap_or(0.0);
    let ipi = s
        .total(n::IPI_PER_S)
        .and_then(|m| ctx.mean_of(m))
        .unwrap_or(0.0);
    let cpus = f64::from(ctx.cpus().unwrap_or(1).max(1));
    let (kind, rate) = if timer >= ipi {
        ("timer", timer)
    } else {
        ("ipi", ipi)
    };
    if rate / cpus < SYSTEM_INTR_PER_CPU_MIN || device > 0.2 * (device + timer + ipi) {
        return None;
    }
    // Where they landed, and how busy those CPUs were.
    let name = if kind == "timer" {
        n::TIMER_INTR_PER_S
    } else {
        n::IPI_PER_S
    };
    let landing = ctx.per_cpu(name);
    let busy = ctx.per_cpu_busy();
    let (cpu, on_cpu) = landing.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let cpu_busy = busy.iter().find(|(c, _)| *c == cpu).map(|(_, b)| *b)?;
    if cpu_busy < 50.0 {
        return None;
    }
    let strength = mean_strength(&[
        Some(ramp(rate / cpus, SYSTEM_INTR_PER_CPU_MIN, 60_000.0)),
        Some(ramp(cpu_busy, 50.0, 95.0)),
    ])
    .unwrap_or(0.0);
    let confidence = (0.25 + 0.3 * strength) * ctx.data_factor();
    let kinds: Vec<(String, f64)> = s
        .by_name(n::IPI_PER_S)
        .filter_map(|m| Some((m.id.label(n::LABEL_KIND)?.to_string(), ctx.mean_of(m)?)))
        .filter(|(_, v)| *v > 0.0)
        .collect();
    let top_ipi = kinds
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k.as_str());
    let story = match (kind, top_ipi) {
        ("timer", _) => "high-resolution timers firing: a qdisc watchdog (tbf, fq pacing), a tight nanosleep/usleep loop, or sleep-paced senders; each expiry is an interrupt and usually a wake-up",
        (_, Some("reschedule")) => "reschedule IPIs are cross-CPU wake-ups: a producer on one CPU waking a consumer on another for every message or batch",
        (_, Some("call")) => "function-call IPIs: work pushed to other CPUs with smp_call_function (membarrier, remote softirq/RPS steering, icache or mapping changes)",
        (_, Some("tlb")) => "TLB shootdowns: memory being unmapped or remapped (munmap, mprotect, page migration) while other CPUs hold the mapping",
        _ => "inter-processor interrupts between the CPUs",
    };
    let what = if kind == "timer" {
        "timer interrupts"
    } else {
        "inter-processor interrupts (IPIs)"
    };
    let mut f = finding(
        cause::SYSTEM_INTERRUPTS,
        format!(
            "Interrupts came from the machine itself, not from a device: {}/s {what} ({}/s per CPU) against {}/s device interrupts; {story}. CPU {cpu}, which took {}/s of them, was {} busy.",
            fmt::number(rate),
            fmt::number(rate / cpus),
            fmt::number(device),
            fmt::number(on_cpu),
            fmt::value(cpu_busy, Unit::Percent)
        ),
        confidence,
    );
    f.evidence.push(ctx.ev(
        name,
        Some((rate, Unit::PerSecond)),
        format!("{}/s {what}", fmt::number(rate)),
    ));
    f.evidence.push(ctx.ev(
        format!("{name}_per_cpu"),
        Some((rate / cpus, Unit::PerSecond)),
        format!("{}/s per CPU, over {cpus} CPUs", fmt::number(rate / cpus)),
    ));
    f.evidence.push(ctx.ev(
        n::DEVICE_INTR_PER_S,
        Some((device, Unit::PerSecond)),
        format!("{}/s device interrupts", fmt::number(device)),
    ));
    for (k, v) in &kinds {
        f.evidence.push(ctx.ev(
            format!("{}{{kind={k}}}", n::IPI_PER_S),
            Some((*v, Unit::PerSecond)),
            format!("{}/s {k} IPIs", fmt::number(*v)),
        ));
    }
    f.alternatives.push(
        "interrupt-bound (a NIC's interrupts): ruled out, device interrupts were a small share"
            .into(),
    );
    if kind == "timer" {
        f.advice.push(advice(
            "find the timers: perf record -e timer:hrtimer_expire_entry -a sleep 5, or /proc/timer_list",
            "names the code arming them; coarser timers (timer slack, spin or batch instead of sleeping per packet) cut the rate",
            None,
        ));
    } else {
        f.advice.push(advice(
            "pin the producer and consumer to one CPU (taskset), or batch hand-offs",
            "fewer cross-CPU wake-ups per message",
            Some("one CPU then does both halves of the work"),
        ));
    }
    f.next = Some(
        "per-thread voluntary context switches (netceil watch --pid) show who wakes whom".into(),
    );
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    /// A vmstat-like log of a 1-CPU box: idle head, load, idle tail.
    fn vmstat_like(cs_level: f64, cs_jitter: f64, idle_pct: f64) -> netceil_model::Run {
        imported_run(30, |s, r| {
            let load = (4..26).contains(&r);
            let cs = if load {
                cs_level + noise(r, cs_jitter)
            } else {
                300.0 + noise(r, 20.0)
            };
            put(s, r, n::CS_PER_S, &[], cs);
            put(s, r, n::INTR_PER_S, &[], cs / 1.9);
            let idle = if load {
                idle_pct + noise(r + 50, 4.0)
            } else {
                99.0
            };
            put(s, r, n::CPU_IDLE_PCT, &[], idle);
            put(s, r, n::CPU_SYSTEM_PCT, &[], 100.0 - idle);
        })
    }

    #[test]
    fn high_unsteady_switch_rate_with_idle_cpu_is_interrupt_bound() {
        let mut run = vmstat_like(27_000.0, 4_000.0, 68.0);
        run.meta.annotations.throughput_bits_per_s = Some(18e6 * 8.0);
        let f = on(&run, check).expect("interrupt bound");
        assert_eq!(f.cause, cause::INTERRUPT_BOUND);
        assert!(f.summary.contains("unsteady"), "{}", f.summary);
        assert!(f.summary.contains("1.90 per interrupt"), "{}", f.summary);
        assert!(f.evidence.iter().any(|e| e.metric == "bytes_per_interrupt"));
        assert!(f.alternatives[0].starts_with("CPU-bound ruled out"));
        assert!(f.confidence > 0.7, "{}", f.confidence);
    }

    /// `vmstat_like` without an interrupt count (sar -w, or a log that has only `cs`).
    fn switches_only(cs_level: f64, idle_pct: f64, mbytes_per_s: f64) -> netceil_model::Run {
        let mut run = vmstat_like(cs_level, 1_000.0, idle_pct);
        run.series.metrics.retain(|m| m.id.name != n::INTR_PER_S);
        run.meta.annotations.throughput_bits_per_s = Some(mbytes_per_s * 1e6 * 8.0);
        run
    }

    #[test]
    fn a_switch_that_carries_several_frames_does_not_pace_the_work() {
        // 27 k switches/s at 100 MB/s: 3.7 kB, about 2.5 frames, per switch. A busy server
        // batching its work, not one bound by its switching.
        assert!(on(&switches_only(27_000.0, 60.0, 100.0), check).is_none());
        // The same rate at 18 MB/s: 670 B per switch, under one frame each.
        let f = on(&switches_only(27_000.0, 60.0, 18.0), check).expect("interrupt bound");
        assert_eq!(f.cause, cause::INTERRUPT_BOUND);
    }

    #[test]
    fn without_throughput_it_fires_with_less_confidence_and_asks_for_it() {
        let run = vmstat_like(27_000.0, 4_000.0, 68.0);
        let f = on(&run, check).unwrap();
        assert!(f.next.as_deref().unwrap().contains("--throughput"));
        let mut with = run.clone();
        with.meta.annotations.throughput_bits_per_s = Some(18e6 * 8.0);
        assert!(on(&with, check).unwrap().confidence > f.confidence);
    }

    /// A live 2-CPU run whose interrupts are split by source: `device`, `timer`, `ipi`
    /// per second in total (all on CPU 0), CPU 0 `busy0` % busy.
    fn by_source(device: f64, timer: f64, ipi: f64, busy0: f64) -> netceil_model::Run {
        live_run(12, |s, r| {
            cpu_row(s, r, &[(10.0, busy0 - 20.0, 10.0), (3.0, 3.0, 1.0)]);
            put(s, r, n::LOAD_RX_BITS_PER_S, &[], 200e6);
            put(
                s,
                r,
                n::INTR_PER_S,
                &[],
                device + timer + ipi + noise(r, 50.0),
            );
            put(
                s,
                r,
                n::CS_PER_S,
                &[],
                1.5 * (timer + ipi) + noise(r, 3000.0),
            );
            put(s, r, n::DEVICE_INTR_PER_S, &[], device);
            put(s, r, n::DEVICE_INTR_PER_S, &[(n::LABEL_CPU, "0")], device);
            put(s, r, n::TIMER_INTR_PER_S, &[], timer);
            put(s, r, n::TIMER_INTR_PER_S, &[(n::LABEL_CPU, "0")], timer);
            put(s, r, n::IPI_PER_S, &[], ipi);
            put(s, r, n::IPI_PER_S, &[(n::LABEL_CPU, "0")], ipi);
            put(s, r, n::IPI_PER_S, &[(n::LABEL_KIND, "reschedule")], ipi);
        })
    }

    #[test]
    fn device_interrupts_at_a_high_rate_are_still_interrupt_bound() {
        let run = by_source(60_000.0, 500.0, 500.0, 40.0);
        let f = on(&run, check).expect("interrupt bound");
        assert!(
            f.summary.contains("60.0 k device interrupts/s"),
            "{}",
            f.summary
        );
        assert!(on(&run, system).is_none());
    }

    #[test]
    fn a_timer_flood_is_not_interrupt_bound_and_says_timers() {
        let run = by_source(200.0, 60_000.0, 1_000.0, 80.0);
        assert!(
            on(&run, check).is_none(),
            "no device interrupts: not interrupt-bound"
        );
        let f = on(&run, system).expect("system interrupts");
        assert_eq!(f.cause, cause::SYSTEM_INTERRUPTS);
        assert!(f.summary.contains("timer interrupts"), "{}", f.summary);
        assert!(
            f.summary.contains("high-resolution timers"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn an_ipi_flood_says_cross_cpu_wakeups() {
        let run = by_source(200.0, 1_000.0, 50_000.0, 85.0);
        assert!(on(&run, check).is_none());
        let f = on(&run, system).expect("system interrupts");
        assert!(f.summary.contains("cross-CPU wake-ups"), "{}", f.summary);
    }

    #[test]
    fn timers_landing_on_an_idle_cpu_are_noise_not_a_finding() {
        assert!(on(&by_source(200.0, 60_000.0, 1_000.0, 25.0), system).is_none());
    }

    #[test]
    fn ordinary_ticks_are_nothing() {
        let run = by_source(300.0, 500.0, 800.0, 90.0);
        assert!(on(&run, check).is_none());
        assert!(on(&run, system).is_none());
    }

    #[test]
    fn an_imported_total_says_its_source_was_not_measured() {
        let run = vmstat_like(27_000.0, 4_000.0, 68.0);
        let f = on(&run, check).unwrap();
        assert!(f
            .evidence
            .iter()
            .any(|e| e.text.starts_with("interrupt source not measured")));
    }

    #[test]
    fn busy_cpu_is_not_interrupt_bound() {
        let run = vmstat_like(27_000.0, 4_000.0, 8.0);
        assert!(on(&run, check).is_none());
    }

    #[test]
    fn low_rates_are_not_interrupt_bound() {
        let run = vmstat_like(3_000.0, 300.0, 80.0);
        assert!(on(&run, check).is_none());
    }

    #[test]
    fn moderation_lowers_confidence() {
        let mut sk = vmstat_like(27_000.0, 4_000.0, 68.0);
        sk.meta.annotations.throughput_bits_per_s = Some(18e6 * 8.0);
        let mut msk = vmstat_like(24_000.0, 1_000.0, 60.0);
        msk.meta.annotations.throughput_bits_per_s = Some(43e6 * 8.0);
        let (a, b) = (on(&sk, check).unwrap(), on(&msk, check).unwrap());
        assert!(
            b.confidence < a.confidence,
            "{} vs {}",
            b.confidence,
            a.confidence
        );
        assert!(b.summary.contains(" steady"), "{}", b.summary);
    }

    #[test]
    fn open_loop_rr_on_loopback_keeps_the_finding_without_nic_advice() {
        // Paced at 100 k/s, reached 73 k/s: the same rates as a closed loop, but no identity
        // to explain them, so the rule still speaks; loopback has no NIC to moderate.
        let mut run = rr_loopback_run(None, Some(100_000.0), 73_400.0, 12.86);
        if let Some(r) = run.results.as_mut() {
            r.generator.achieved_ratio = Some(0.734);
        }
        let f = on(&run, check).expect("interrupt bound");
        assert!(
            f.advice
                .iter()
                .all(|a| !a.knob.contains("ethtool") && !a.knob.contains("napi")),
            "{:?}",
            f.advice
        );
        assert!(!f.summary.contains("moderation"), "{}", f.summary);
        assert!(f.evidence.iter().all(|e| e.metric != "bytes_per_interrupt"));
        assert!(f.alternatives.iter().any(|a| a.contains("loopback only")));
        // The same run across a NIC gets the NIC advice.
        crate::testutil::set_target(&mut run, "192.0.2.7:5201");
        let nic = on(&run, check).expect("interrupt bound");
        assert!(nic.advice.iter().any(|a| a.knob.contains("ethtool -C")));
    }

    #[test]
    fn closed_loop_rr_explained_by_its_round_trip_is_not_interrupt_bound() {
        let closed = rr_loopback_run(Some(1), None, 73_400.0, 12.86);
        assert!(on(&closed, check).is_none());
        // Far below what its round trip allows, the rates are still this rule's business.
        let slow = rr_loopback_run(Some(1), None, 30_000.0, 12.86);
        assert!(on(&slow, check).is_some());
    }

    #[test]
    fn idle_machine_is_not_interrupt_bound() {
        let run = live_run(20, idle_row);
        assert!(on(&run, check).is_none());
    }
}
