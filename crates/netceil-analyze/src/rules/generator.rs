//! The generator as the limit, and netceil's own sender busy-waiting.
//!
//! A load generator that cannot reach the rate it was asked for makes every downstream figure
//! a measure of the sender, not of the system under test; say so before blaming the system.
//!
//! Confidence of `generator_limited`: floor 0.45, band 0.5, strengths: the shortfall (1 % → 0,
//! 20 % → 1), the receiver keeping up (5 % loss → 0, no loss → 1) and machine idle time
//! (5 % → 0, 40 % → 1) when known. Confidence of `generator_busy_wait`: 0.5 + 0.45 × the spin
//! share (50 % → 0, 95 % → 1).

use netceil_model::{Finding, PacingMode, Quantity, Resource, Unit};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::ledger::{Class, Entry, Explains, Relief};
use crate::resources::{Role, THREAD_SATURATED_PCT};
use crate::stats::{mean_strength, ramp};
use netceil_model::fmt;

/// The sender reached less than 99 % of the requested rate.
pub fn limited(ctx: &Ctx) -> Option<Entry> {
    let f = limited_finding(ctx)?;
    let r = ctx.run.results.as_ref()?;
    let (asked, unit, how) = match r.requested_pps {
        Some(p) => (p, Unit::PacketsPerSecond, "the rate asked"),
        None => (
            r.generator
                .achieved_ratio
                .filter(|a| *a > 0.0)
                .map_or(r.tx_bits_per_s, |a| r.tx_bits_per_s / a),
            Unit::BitsPerSecond,
            "the rate asked",
        ),
    };
    let got = if unit == Unit::PacketsPerSecond {
        r.tx_pps
    } else {
        r.tx_bits_per_s
    };
    // Relieved, the sender offers what was asked; what arrives grows in proportion, whatever
    // share of it the rest of the path loses.
    let relief = if got > 0.0 && asked > got {
        Relief::Factor(asked / got)
    } else {
        Relief::Nothing
    };
    let mut e = Entry::claim(Class::Ceiling, Resource::Generator, f)
        .sized(
            Quantity::new(asked, unit, how),
            Quantity::new(got, unit, "what the sender reached"),
        )
        .relief(relief);
    // A sender thread that filled its core by itself is why that core is hot.
    for t in ctx.cpu.threads.iter().filter(|t| t.role() == Role::Sender) {
        if let Some(c) = t.cpu.filter(|_| t.cpu_pct >= THREAD_SATURATED_PCT) {
            e = e
                .explains(Explains::on(cause::HOT_CPU, &[c]))
                .explains(Explains::cause(cause::CPU_BOUND));
        }
    }
    Some(e)
}

/// The generator-limited finding's figures and words.
fn limited_finding(ctx: &Ctx) -> Option<Finding> {
    let r = ctx.run.results.as_ref()?;
    let ratio = r.generator.achieved_ratio;
    if !(r.generator_limited || ratio.is_some_and(|a| a < 0.99)) {
        return None;
    }
    let loss = (r.tx_packets > 0).then(|| {
        1.0 - r.rx_app_packets as f64
            / (r.tx_packets.saturating_sub(r.in_flight_packets)).max(1) as f64
    });
    let idle = ctx.machine_idle();
    let strength = mean_strength(&[
        ratio.map(|a| ramp(1.0 - a, 0.01, 0.2)),
        loss.map(|l| ramp(l, 0.05, 0.0)),
        idle.map(|i| ramp(i, 5.0, 40.0)),
    ])
    .unwrap_or(0.5);
    let confidence = 0.45 + 0.5 * strength;

    let asked = match (r.requested_pps, ratio) {
        (Some(req), _) => format!(
            "{} of the {} asked",
            fmt::value(r.tx_pps, Unit::PacketsPerSecond),
            fmt::value(req, Unit::PacketsPerSecond)
        ),
        (None, Some(a)) if a > 0.0 => format!(
            "{} of the {} asked",
            fmt::value(r.tx_bits_per_s, Unit::BitsPerSecond),
            fmt::value(r.tx_bits_per_s / a, Unit::BitsPerSecond)
        ),
        _ => format!("{} sent", fmt::value(r.tx_pps, Unit::PacketsPerSecond)),
    };
    let share = ratio
        .map(|a| format!(" ({})", fmt::value(a * 100.0, Unit::Percent)))
        .unwrap_or_default();
    let receiver = match (loss, idle) {
        (Some(l), Some(i)) if l < 0.01 && i >= 10.0 => {
            format!(
                ", while the receiver took all it was sent and the CPU was {} idle",
                fmt::value(i, Unit::Percent)
            )
        }
        (Some(l), _) if l < 0.01 => ", while the receiver took all it was sent".into(),
        (_, Some(i)) if i >= 10.0 => {
            format!(", with the CPU {} idle", fmt::value(i, Unit::Percent))
        }
        _ => String::new(),
    };
    let mut f = finding(
        cause::GENERATOR_LIMITED,
        format!(
            "The generator was the limit, not the system: it reached {asked}{share}{receiver}."
        ),
        confidence,
    );
    f.evidence.push(ctx.ev_total(
        "results.tx_pps",
        Some((r.tx_pps, Unit::PacketsPerSecond)),
        format!("sent {}", fmt::value(r.tx_pps, Unit::PacketsPerSecond)),
    ));
    if let Some(a) = ratio {
        f.evidence.push(ctx.ev_total(
            "results.generator.achieved_ratio",
            Some((a, Unit::Ratio)),
            format!(
                "achieved {} of the requested rate",
                fmt::value(a * 100.0, Unit::Percent)
            ),
        ));
    }
    let g = &r.generator;
    if g.cpu_pct > 0.0 {
        f.evidence.push(ctx.ev_total(
            "results.generator.cpu_pct",
            Some((g.cpu_pct, Unit::Percent)),
            format!(
                "the sender used {} of a core",
                fmt::value(g.cpu_pct, Unit::Percent)
            ),
        ));
    }
    if g.late_sends > 0 {
        f.evidence.push(ctx.ev_total(
            "results.generator.late_sends",
            Some((g.late_sends as f64, Unit::Count)),
            format!(
                "{} sends left more than one interval late",
                fmt::number(g.late_sends as f64)
            ),
        ));
    }
    if let Some(i) = idle.filter(|i| *i < 10.0) {
        f.alternatives.push(format!(
            "the CPU was saturated too ({} idle): where sender and receiver share the machine, the sender's shortfall is the CPU's",
            fmt::value(i, Unit::Percent)
        ));
    }
    if let Some(l) = loss {
        if l >= 0.01 {
            f.alternatives.push(format!(
                "the receiver lost {} of what was sent, so it was at its limit too: not ruled out",
                fmt::value(l * 100.0, Unit::Percent)
            ));
        } else {
            f.alternatives
                .push("receiver-bound ruled out: it delivered everything it was sent".into());
        }
    }
    f.advice.push(advice(
        "more sender threads or flows (--threads N --flows N), or a second sending host",
        "the offered rate rises until the system under test, not the sender, is the limit",
        Some("on a small machine the extra senders compete with the receiver for CPU"),
    ));
    if g.send_errors > 0 {
        f.evidence.push(ctx.ev_total(
            "results.generator.send_errors",
            Some((g.send_errors as f64, Unit::Count)),
            format!(
                "{} sends failed (ENOBUFS and the like)",
                fmt::number(g.send_errors as f64)
            ),
        ));
        f.advice.push(advice(
            if ctx.loopback_only() {
                "a larger send buffer (SO_SNDBUF, sysctl net.core.wmem_max): loopback has no ring or device queue, so the socket's buffer is what filled"
            } else {
                "a longer transmit queue (ip link set IF txqueuelen 10000) or TX ring (ethtool -G IF tx 4096)"
            },
            "fewer failed sends",
            Some("failed sends mean the local queue, not the wire, was full"),
        ));
    }
    f.next = Some("run the same rate from two senders: if the receiver then keeps up, the old ceiling was the sender's".into());
    Some(f)
}

/// netceil's own sender spent most of its CPU spinning between paced sends.
pub fn own_busy_wait(ctx: &Ctx) -> Option<Entry> {
    let f = own_busy_wait_finding(ctx)?;
    Some(Entry::claim(Class::Noted, Resource::Generator, f).with_id("generator:spin"))
}

fn own_busy_wait_finding(ctx: &Ctx) -> Option<Finding> {
    let r = ctx.run.results.as_ref()?;
    let g = &r.generator;
    if g.pacing != Some(PacingMode::Spin) || g.cpu_s < 0.05 {
        return None;
    }
    let share = g.spin_cpu_s / g.cpu_s;
    if share < 0.5 {
        return None;
    }
    let confidence = 0.5 + 0.45 * ramp(share, 0.5, 0.95);
    let mut f = finding(
        cause::GENERATOR_BUSY_WAIT,
        format!(
            "netceil's own sender busy-waited: {} of its {} CPU-s went to spinning between sends (pacing spin at {}), CPU the system under test could not use.",
            fmt::value(share * 100.0, Unit::Percent),
            fmt::number(g.cpu_s),
            fmt::value(r.tx_pps, Unit::PacketsPerSecond)
        ),
        confidence,
    );
    f.evidence.push(ctx.ev_total(
        "results.generator.spin_cpu_s",
        Some((g.spin_cpu_s, Unit::Seconds)),
        format!(
            "{} CPU-s spinning against {} CPU-s sending",
            fmt::number(g.spin_cpu_s),
            fmt::number(g.work_cpu_s)
        ),
    ));
    f.evidence.push(ctx.ev_total(
        "results.generator.cpu_pct",
        Some((g.cpu_pct, Unit::Percent)),
        format!(
            "the sender used {} of a core",
            fmt::value(g.cpu_pct, Unit::Percent)
        ),
    ));
    f.advice.push(advice(
        "--pacing sleep",
        format!(
            "sender CPU falls towards the {} CPU-s of real sending",
            fmt::number(g.work_cpu_s)
        ),
        Some("sleep pacing is coarse below ~50 µs between sends: keep spin for precise high rates"),
    ));
    f.next = Some(
        "compare thread_cpu_pct of the sender thread with --pacing sleep at the same rate".into(),
    );
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use netceil_model::{GeneratorStats, Results};

    fn results(requested: f64, sent: f64, received: f64) -> Results {
        Results {
            duration_s: 10.0,
            tx_packets: (sent * 10.0) as u64,
            tx_pps: sent,
            requested_pps: Some(requested),
            rx_app_packets: (received * 10.0) as u64,
            rx_app_pps: received,
            generator_limited: sent < 0.99 * requested,
            generator: GeneratorStats {
                pacing: Some(PacingMode::Sleep),
                achieved_ratio: Some(sent / requested),
                cpu_s: 10.0,
                work_cpu_s: 10.0,
                cpu_pct: 100.0,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn unreachable_rate_with_receiver_keeping_up_is_generator_limited() {
        let mut run = live_run(10, |_, _| {});
        run.results = Some(results(10e6, 400e3, 400e3));
        let f = on(&run, limited).expect("generator_limited");
        assert_eq!(f.cause, cause::GENERATOR_LIMITED);
        assert!(
            f.summary.contains("400 kpps of the 10.0 Mpps asked (4 %)"),
            "{}",
            f.summary
        );
        assert!(f.confidence > 0.8, "{}", f.confidence);
        assert!(f.alternatives[0].contains("ruled out"));
    }

    #[test]
    fn reached_rate_is_not_generator_limited() {
        let mut run = live_run(10, |_, _| {});
        run.results = Some(results(100e3, 100e3, 100e3));
        assert!(on(&run, limited).is_none());
    }

    #[test]
    fn receiver_loss_lowers_confidence_and_is_said() {
        let mut run = live_run(10, |_, _| {});
        run.results = Some(results(10e6, 400e3, 200e3));
        let f = on(&run, limited).unwrap();
        assert!(f.confidence < 0.8, "{}", f.confidence);
        assert!(
            f.alternatives[0].contains("lost 50 %"),
            "{:?}",
            f.alternatives
        );
    }

    #[test]
    fn spin_pacing_at_a_low_rate_is_own_busy_wait() {
        let mut run = live_run(10, |_, _| {});
        let mut r = results(1000.0, 1000.0, 1000.0);
        r.generator = GeneratorStats {
            pacing: Some(PacingMode::Spin),
            cpu_s: 9.9,
            spin_cpu_s: 9.8,
            work_cpu_s: 0.1,
            cpu_pct: 99.0,
            achieved_ratio: Some(1.0),
            ..Default::default()
        };
        run.results = Some(r);
        let f = on(&run, own_busy_wait).expect("own busy wait");
        assert!(f.summary.contains("99.0 %"), "{}", f.summary);
        assert!(f.advice[0].knob.contains("--pacing sleep"));
        assert!(f.confidence > 0.9);
        // The same run paced by sleeping is not a finding.
        let mut sleepy = run.clone();
        sleepy.results.as_mut().unwrap().generator.pacing = Some(PacingMode::Sleep);
        assert!(on(&sleepy, own_busy_wait).is_none());
    }
}
