//! netceil-analyze: given any Run (live, watched or imported), say where throughput
//! saturated, which resource was binding, the evidence, how sure we are, and what to try next.
//!
//! The steps:
//! 1. [`phases()`] splits the series into idle, ramp, load and tail; every average covers the load
//!    phase only (a live run's: the rows its own load ran).
//! 2. One rule per cause (`rules::*`) looks at the load phase, the workload results and the lock
//!    table, and contributes ledger entries: the resource, its capacity and use, the finding
//!    written from those figures, what relieving it would allow, and what its saturation
//!    explains, by measurement. `context.rs` sizes the resources no rule claimed (each core the
//!    workload may use, its threads, the far end's cores), to rule them out.
//! 3. One ranking reads the ledger (`ledger.rs`): explained entries follow their cause; among
//!    the rest the largest gain from relief wins, then confidence. The verdict names its
//!    runner-up, says when it was a close call, and lists what the run could not observe
//!    (`Finding::not_checked`, `not_checked.rs`).
//!
//! **When nothing binds** the analyzer still says so, in exactly one finding, because a
//! demanding reader wants to know whether the run saturated at all:
//! - [`cause::NO_LOAD`] when there was no network load to diagnose (an idle `watch`): what the
//!   busiest interface carried, and that nothing else is claimed;
//! - [`cause::NO_CEILING`] when load ran and no resource saturated: the throughput held, the CPU
//!   had headroom, nothing dropped — so the offered load was the limit.
//!
//! These two are verdicts about the absence of a ceiling, never added beside a real finding.
//! Three more rules keep the verdict honest: a paced run that got the rate it asked for without
//! loss has, by definition, no ceiling, so the CPU and interrupt rules stay silent on it; a
//! closed request/response loop whose rate is its requests in flight over its mean round trip
//! is [`cause::LATENCY_BOUND`], and the interrupt rule does not claim it; and
//! [`cause::LINK_HEADROOM`] (low confidence) is arithmetic that rules the hardware *out*
//! ("3.7 Mpps × 1448 B = 42.9 Gbit/s, the run reached 3.5: something else binds first").
//!
//! **Suites and sweeps** (a Run with `parts`): each part is analyzed on its own; the top level
//! gets the cross-part findings (the knee across sweep points, the packet-rate ceiling of one
//! part applied to another's frame size), the lock table's finding, and each part's findings by
//! cause (the most confident one, naming the others), prefixed with the part.
//!
//! **Lock tables need a window.** A lock profile says how long threads waited, not over how long
//! or on how many CPUs. [`Options::window_s`] and [`Options::cpus`] give them; without them the
//! window is the series' span, else the workload's duration, else `meta.annotations.interval_s`
//! (`netceil analyze --interval 30s` on a profile taken over 30 s), and the CPU count is the
//! number of CPUs the series names, else `meta.host.cpus`.

mod context;
mod ctx;
mod economy;
pub mod ledger;
mod not_checked;
pub mod phases;
mod resources;
mod rules;
pub mod search;
mod stats;
mod verdict;

#[cfg(test)]
mod testutil;

use std::collections::BTreeMap;

use netceil_model::{Cause, EntryState, Finding, Ledger, LedgerEntry, Resource, Run, WorkloadKind};

pub use economy::{cs_per_byte, SwitchEconomy};
pub use phases::{phases, Phases};
pub use verdict::{close_call, CLOSE_CALL};

/// The causes a finding can name, as constants of [`Cause`](netceil_model::Cause).
pub mod cause {
    pub use netceil_model::Cause;
    /// Delivered fell short of offered within a run: loss began.
    pub const SATURATION: Cause = Cause::Saturation;

    /// Across the points of a sweep (or parts of a suite): the highest loss-free rate.
    pub const KNEE: Cause = Cause::Knee;

    /// One core saturated while others had room.
    pub const HOT_CPU: Cause = Cause::HotCpu;

    /// All cores busy.
    pub const CPU_BOUND: Cause = Cause::CpuBound;

    /// Interrupt and context-switch rates plateaued while the CPU had headroom.
    pub const INTERRUPT_BOUND: Cause = Cause::InterruptBound;

    /// A closed request/response loop whose rate is its requests in flight over its mean
    /// round trip: latency, not a resource, set the ceiling.
    pub const LATENCY_BOUND: Cause = Cause::LatencyBound;

    /// A lock's wait time is a large share of wall time × CPUs.
    pub const LOCK_CONTENTION: Cause = Cause::LockContention;

    /// OS CPU % far above the work actually done (spinning schedulers).
    pub const BUSY_WAIT: Cause = Cause::BusyWait;

    /// A thread near 100 % CPU that never blocks: a polling loop.
    pub const POLLING_THREAD: Cause = Cause::PollingThread;

    /// Drops at a socket buffer, the backlog, the NAPI budget or the NIC ring.
    pub const BUFFER_DROPS: Cause = Cause::BufferDrops;

    /// Retransmissions and duplicate SACKs.
    pub const TCP_PATH: Cause = Cause::TcpPath;

    /// The link or bus carried all it can.
    pub const LINK_LIMIT: Cause = Cause::LinkLimit;

    /// The link, bus and packet-rate ceilings, and how far below them the run stayed.
    pub const LINK_HEADROOM: Cause = Cause::LinkHeadroom;

    /// The sender could not reach the requested rate.
    pub const GENERATOR_LIMITED: Cause = Cause::GeneratorLimited;

    /// netceil's own sender spent its CPU spinning.
    pub const GENERATOR_BUSY_WAIT: Cause = Cause::GeneratorBusyWait;

    /// Timer interrupts or IPIs, not devices, made the interrupt rate on busy CPUs.
    pub const SYSTEM_INTERRUPTS: Cause = Cause::SystemInterrupts;

    /// An unpaced run's sending thread saturated a core while the receiver kept up.
    pub const SENDER_SATURATED: Cause = Cause::SenderSaturated;

    /// An unpaced run's receiving thread saturated a core and could not keep up.
    pub const RECEIVER_SATURATED: Cause = Cause::ReceiverSaturated;

    /// A thread of the observed workload saturated a core while making progress.
    pub const THREAD_SATURATED: Cause = Cause::ThreadSaturated;

    /// Processes outside the workload took the CPU the network work needed.
    pub const CPU_CONTENTION: Cause = Cause::CpuContention;

    /// The receive softirq ran out of budget with work left: since boot (time_squeeze), or live
    /// (NAPI polls that used their whole budget, from the napi probe).
    pub const NAPI_BUDGET: Cause = Cause::NapiBudget;

    /// A CPU was full of network softirq work, timed exactly by the softirq probe.
    pub const SOFTIRQ_BOUND: Cause = Cause::SoftirqBound;

    /// Since boot, receive work ran nearly all on one CPU.
    pub const RX_SKEW: Cause = Cause::RxSkew;

    /// A shaper or policer (a rate-limiting qdisc) held the traffic at its rate.
    pub const SHAPER: Cause = Cause::Shaper;

    /// No network load to diagnose.
    pub const NO_LOAD: Cause = Cause::NoLoad;

    /// Load ran and nothing saturated.
    pub const NO_CEILING: Cause = Cause::NoCeiling;

    /// The CPUs waited on disk I/O: a disk, file system or swap held the work.
    pub const IO_WAIT: Cause = Cause::IoWait;

    /// The receiver's advertised window held a TCP flow (tcp_info rwnd_limited).
    pub const TCP_RECEIVE_WINDOW: Cause = Cause::TcpReceiveWindow;

    /// The sender's socket buffer held a TCP flow (tcp_info sndbuf_limited).
    pub const TCP_SEND_BUFFER: Cause = Cause::TcpSendBuffer;

    /// An import whose data cannot be true of a real machine: not analyzed as truth.
    pub const SUSPECT_INPUT: Cause = Cause::SuspectInput;

    /// An unpaced run pushed, so something held it, but nothing measured saturated.
    pub const UNNAMED_CEILING: Cause = Cause::UnnamedCeiling;

    /// Latency grew under load because a queue held the packets.
    pub const BUFFERBLOAT: Cause = Cause::Bufferbloat;
}

/// What the run cannot know about itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    /// Wall-clock seconds the lock table covers (a `debug.lock.prof.stats` dump taken after 30 s
    /// of profiling: 30). See the crate header for the default.
    pub window_s: Option<f64>,
    /// CPUs the lock table's waits are summed over; default `meta.host.cpus`.
    pub cpus: Option<u32>,
}

/// The findings for a run, most confident first; never empty.
pub fn analyze(run: &Run) -> Vec<Finding> {
    analyze_with(run, &Options::default())
}

/// [`analyze`] with what the run cannot know (a lock profile's window and CPU count).
pub fn analyze_with(run: &Run, opts: &Options) -> Vec<Finding> {
    if run.parts.is_empty() {
        single(run, opts)
    } else {
        suite(run, opts)
    }
}

/// Sets `run.findings` (and each part's, for suites and sweeps).
pub fn analyze_into(run: &mut Run) {
    analyze_into_with(run, &Options::default());
}

/// [`analyze_into`] with options.
pub fn analyze_into_with(run: &mut Run, opts: &Options) {
    for part in &mut run.parts {
        analyze_into_with(part, opts);
    }
    run.findings = analyze_with(run, opts);
}

/// Most confident first; ties keep the rules' order.
fn sort(findings: &mut [Finding]) {
    findings.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
}

/// The ledger of every run the analysis covers: the run itself, or each part of a suite or
/// sweep, labelled. What `netceil show RUN --explain` prints.
pub fn ledgers(run: &Run, opts: &Options) -> Vec<(String, Ledger)> {
    if run.parts.is_empty() {
        return vec![("run".to_string(), analyze_single(run, opts).1)];
    }
    run.parts
        .iter()
        .enumerate()
        .map(|(i, p)| (part_label(p, i), analyze_single(p, opts).1))
        .collect()
}

fn single(run: &Run, opts: &Options) -> Vec<Finding> {
    analyze_single(run, opts).0
}

/// The paced rate asked over the rate delivered: no relief can raise the delivered rate past
/// what was offered.
fn offered_factor(ctx: &ctx::Ctx) -> Option<f64> {
    let r = ctx.run.results.as_ref()?;
    let asked = r.requested_pps.filter(|p| *p > 0.0)?;
    let got = if r.rx_app_pps > 0.0 {
        r.rx_app_pps
    } else {
        r.tx_pps
    };
    (got > 0.0).then(|| asked / got)
}

/// One run's findings and ledger: the rules' entries and the resources sized beside them,
/// ranked once (see `ledger.rs`), the findings written from the ranking.
fn analyze_single(run: &Run, opts: &Options) -> (Vec<Finding>, Ledger) {
    let ctx = ctx::Ctx::new(run, opts);
    let mut entries = rules::single_run(&ctx);
    let context = context::entries(&ctx, &entries);
    entries.extend(context);
    ledger::apply_confirmations(&mut entries, &ctx.run.confirmations);
    let ranked = ledger::rank(entries, offered_factor(&ctx));
    let (mut findings, why) = verdict::findings(&ctx, &ranked);
    let delivered = ctx.delivered().map(|t| {
        netceil_model::Quantity::new(t.bits_per_s, netceil_model::Unit::BitsPerSecond, t.metric)
    });
    let mut book = ledger::to_model(&ranked, delivered, why);
    if !run.meta.implausible.is_empty() {
        suspect(run, &mut findings, &mut book);
    }
    findings[0].not_checked = not_checked::not_checked(&ctx);
    // The verdict says which rows its averages cover.
    if !ctx.series().is_empty() {
        findings[0].evidence.push(netceil_model::Evidence {
            metric: "phase".into(),
            window_s: ctx.window(),
            value: None,
            unit: None,
            text: ctx.rows_note.clone(),
        });
    }
    (findings, book)
}

/// An import that cannot be true is not analyzed as truth: the verdict says so and where,
/// and every finding after it is marked as written on suspect data.
fn suspect(run: &Run, findings: &mut Vec<Finding>, book: &mut Ledger) {
    let facts: Vec<String> = run
        .meta
        .implausible
        .iter()
        .map(|i| match i.line {
            Some(l) => format!("line {l}: {}", i.what),
            None => i.what.clone(),
        })
        .collect();
    let more = facts.len().saturating_sub(1);
    let mut f = ctx::finding(
        cause::SUSPECT_INPUT,
        format!(
            "The data cannot be true of a real machine, so no ceiling is named from it: {}{}. The findings below read it as if it were true.",
            facts[0],
            if more > 0 { format!(" (and {more} more)") } else { String::new() }
        ),
        0.9,
    );
    for fact in &facts {
        f.evidence.push(netceil_model::Evidence {
            metric: "meta.implausible".into(),
            window_s: None,
            value: None,
            unit: None,
            text: fact.clone(),
        });
    }
    f.next = Some("capture again, one tool per file and one run per capture, or cut the file to the part that is whole".into());
    for other in findings.iter_mut() {
        other.summary = format!("(on suspect data) {}", other.summary);
    }
    findings.insert(0, f);
    for e in &mut book.entries {
        if e.state == EntryState::Binds {
            e.state = EntryState::Noted;
            e.why = format!("would be the verdict, but the data is suspect: {}", e.why);
        }
    }
    book.entries.insert(
        0,
        LedgerEntry {
            id: "data".into(),
            cause: cause::SUSPECT_INPUT,
            resource: Resource::Data,
            capacity: None,
            used: None,
            share: None,
            errors: None,
            state: EntryState::Binds,
            confidence: 0.9,
            evidence: findings[0].evidence.clone(),
            explains: Vec::new(),
            explained_by: None,
            gain: None,
            why: "the import holds facts that cannot be true: nothing is claimed from it".into(),
        },
    );
    book.verdict = format!("the data is suspect: {}", facts.join("; "));
}

/// A short name for a part: its workload kind and labels, else its position.
fn part_label(part: &Run, index: usize) -> String {
    let kind = part.workload.as_ref().map(|w| match w.kind {
        WorkloadKind::Udp => "udp",
        WorkloadKind::Tcp => "tcp",
        WorkloadKind::Rr => "rr",
        WorkloadKind::Rrul => "rrul",
        WorkloadKind::Suite => "suite",
        WorkloadKind::Search => "search",
        WorkloadKind::Sweep => "sweep",
        WorkloadKind::External => "external",
    });
    let labels: Vec<String> = part
        .meta
        .labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    match (kind, labels.is_empty()) {
        (Some(k), true) => format!("part {} ({k})", index + 1),
        (Some(k), false) => format!("part {} ({k}, {})", index + 1, labels.join(", ")),
        (None, false) => format!("part {} ({})", index + 1, labels.join(", ")),
        (None, true) => format!("part {}", index + 1),
    }
}

fn suite(run: &Run, opts: &Options) -> Vec<Finding> {
    let top = ctx::Ctx::new(run, opts);
    let mut findings: Vec<Finding> = Vec::new();
    findings.extend(
        rules::locks::check(&top)
            .filter(|e| e.class != ledger::Class::Context)
            .map(|e| e.finding),
    );
    findings.extend(rules::knee::across_parts(run));
    let has_knee = findings.iter().any(|f| f.cause == cause::KNEE);
    // A sweep's knee already sets each point against the link and bus.
    if !has_knee {
        findings.extend(rules::link::across_parts(run));
    }

    let has_link = findings
        .iter()
        .any(|f| f.cause == cause::LINK_LIMIT || f.cause == cause::LINK_HEADROOM);

    // Each part's findings, grouped by cause: the most confident one speaks for the rest.
    let mut by_cause: BTreeMap<Cause, (Finding, Vec<String>)> = BTreeMap::new();
    let mut verdicts = Vec::new();
    for (i, part) in run.parts.iter().enumerate() {
        let label = part_label(part, i);
        for mut f in single(part, opts) {
            if f.cause == cause::NO_LOAD || f.cause == cause::NO_CEILING {
                verdicts.push((label.clone(), f));
                continue;
            }
            let covered = (has_knee && f.cause == cause::SATURATION)
                || (has_link && (f.cause == cause::LINK_LIMIT || f.cause == cause::LINK_HEADROOM));
            if covered {
                continue;
            }
            f.summary = format!("{label}: {}", f.summary);
            match by_cause.get_mut(&f.cause) {
                Some((best, labels)) => {
                    if f.confidence > best.confidence {
                        *best = f;
                        labels.insert(0, label.clone());
                    } else {
                        labels.push(label.clone());
                    }
                }
                None => {
                    by_cause.insert(f.cause.clone(), (f, vec![label.clone()]));
                }
            }
        }
    }
    for (_, (mut f, labels)) in by_cause {
        if labels.len() > 1 {
            f.alternatives.push(format!(
                "the same cause was found in {} too",
                labels[1..].join(", ")
            ));
        }
        findings.push(f);
    }
    sort(&mut findings);
    if findings.is_empty() {
        findings.push(verdict::merge_part_verdicts(verdicts));
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use netceil_model::{names as n, Results, Workload};

    #[test]
    fn idle_machine_with_noise_gets_exactly_one_no_load_verdict() {
        let findings = analyze(&live_run(30, idle_row));
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].cause, cause::NO_LOAD);
    }

    #[test]
    fn findings_come_most_confident_first() {
        // A hot core and socket-buffer drops at once.
        let run = live_run(10, |s, r| {
            cpu_row(s, r, &[(5.0, 40.0, 54.0), (10.0, 5.0, 0.0)]);
            put(s, r, n::LOAD_RX_PPS, &[], 500e3);
            put(s, r, n::UDP_RCVBUF_ERRORS_PER_S, &[], 600.0);
        });
        let findings = analyze(&run);
        assert!(findings.len() >= 2, "{findings:?}");
        assert!(findings
            .windows(2)
            .all(|w| w[0].confidence >= w[1].confidence));
        assert_eq!(findings[0].cause, cause::HOT_CPU);
        assert!(findings[0].evidence.iter().any(|e| e.metric == "phase"));
    }

    #[test]
    fn suite_parts_are_analyzed_and_labeled() {
        let part = |kind: WorkloadKind, hot: bool| {
            let mut p = live_run(10, move |s, r| {
                let cpus: &[(f64, f64, f64)] = if hot {
                    &[(5.0, 40.0, 54.0), (10.0, 5.0, 0.0)]
                } else {
                    &[(5.0, 5.0, 5.0), (5.0, 5.0, 5.0)]
                };
                cpu_row(s, r, cpus);
                put(s, r, n::LOAD_RX_BITS_PER_S, &[], 1e9);
            });
            p.workload = Some(Workload {
                kind,
                params: Default::default(),
            });
            p.results = Some(Results {
                duration_s: 10.0,
                tx_bytes: 1_250_000_000,
                ..Default::default()
            });
            p
        };
        let mut top = live_run(0, |_, _| {});
        top.parts = vec![
            part(WorkloadKind::Udp, true),
            part(WorkloadKind::Tcp, false),
            part(WorkloadKind::Tcp, true),
        ];
        analyze_into(&mut top);
        let hot = top
            .findings
            .iter()
            .find(|f| f.cause == cause::HOT_CPU)
            .expect("hot cpu at the top");
        assert!(hot.summary.starts_with("part 1 (udp): "), "{}", hot.summary);
        assert!(
            hot.alternatives.iter().any(|a| a.contains("part 3 (tcp)")),
            "{:?}",
            hot.alternatives
        );
        assert_eq!(top.parts[1].findings[0].cause, cause::NO_CEILING);
        assert_eq!(top.parts[0].findings[0].cause, cause::HOT_CPU);
    }

    /// One of netceil's own load threads, on `cpu`, at `pct` of a core.
    fn own_thread(
        s: &mut netceil_model::Series,
        r: usize,
        tid: &str,
        comm: &str,
        cpu: f64,
        pct: f64,
    ) {
        let l = [
            (n::LABEL_PID, "500"),
            (n::LABEL_TID, tid),
            (n::LABEL_COMM, comm),
        ];
        put(s, r, n::THREAD_CPU_PCT, &l, pct + noise(r, 0.5));
        put(s, r, n::THREAD_SYSTEM_PCT, &l, pct * 0.9);
        put(s, r, n::THREAD_VOLUNTARY_CS_PER_S, &l, 50.0);
        put(s, r, n::THREAD_LAST_CPU, &l, cpu);
    }

    /// An unpaced UDP run's results: `sent` packets, `lost` of them.
    fn unpaced_results(run: &mut Run, sent: u64, lost: u64, socket_drops: u64) {
        run.workload = Some(Workload::typed(
            WorkloadKind::Udp,
            &serde_json::json!({ "target": null }),
        ));
        run.results = Some(Results {
            duration_s: 8.0,
            tx_packets: sent,
            tx_pps: sent as f64 / 8.0,
            rx_app_packets: sent - lost,
            rx_app_pps: (sent - lost) as f64 / 8.0,
            lost_packets: lost,
            kernel: netceil_model::KernelDelivery {
                socket_drops: Some(socket_drops),
                ..Default::default()
            },
            generator: netceil_model::GeneratorStats {
                pacing: Some(netceil_model::PacingMode::None),
                ..Default::default()
            },
            ..Default::default()
        });
    }

    #[test]
    fn a_readers_drops_follow_the_cores_that_starved_it() {
        // Two senders fill both cores; the reader gets 46 % of CPU 0 and the socket overflows
        // in every interval: the CPUs are the ceiling, the drops their symptom.
        let mut run = live_run(8, |s, r| {
            cpu_row(s, r, &[(5.0, 80.0, 15.0), (6.0, 84.0, 10.0)]);
            put(s, r, n::LOAD_RX_PPS, &[], 170e3);
            put(s, r, n::LOAD_LOST_PER_S, &[], 130e3 + noise(r, 5e3));
            own_thread(s, r, "201", "netceil-udp-tx0", 0.0, 80.0);
            own_thread(s, r, "203", "netceil-udp-tx1", 1.0, 80.0);
            own_thread(s, r, "202", "netceil-udp-rx", 0.0, 46.0);
        });
        run.meta.own_thread_ids = vec![201, 202, 203];
        unpaced_results(&mut run, 2_400_000, 1_040_000, 1_040_000);
        let (findings, ledger) = analyze_single(&run, &Options::default());
        assert_eq!(findings[0].cause, cause::CPU_BOUND, "{}", findings[0]);
        assert!(
            findings[0].alternatives[0].starts_with("explains the buffer_drops finding"),
            "{:?}",
            findings[0].alternatives
        );
        let drops = ledger
            .entries
            .iter()
            .find(|e| e.cause == cause::BUFFER_DROPS)
            .unwrap();
        assert_eq!(drops.state, EntryState::Symptom);
        assert_eq!(drops.explained_by.as_deref(), Some("cpu:0,1"));
        assert_eq!(drops.gain, None, "a symptom is not ranked by its own gain");
    }

    #[test]
    fn a_saturated_sender_goes_before_a_little_bursty_loss_and_after_a_large_one() {
        let run_with = |lost: u64| {
            let mut run = live_run(8, |s, r| {
                cpu_row(s, r, &[(1.0, 96.0, 2.0), (2.0, 40.0, 0.0)]);
                put(s, r, n::LOAD_RX_PPS, &[], 378e3);
                // Drops in two intervals of eight: bursts.
                let burst = if r == 2 || r == 5 {
                    lost as f64 / 2.0
                } else {
                    0.0
                };
                put(s, r, n::LOAD_LOST_PER_S, &[], burst);
                own_thread(s, r, "201", "netceil-udp-tx0", 0.0, 99.0);
                own_thread(s, r, "202", "netceil-udp-rx", 1.0, 42.0);
            });
            run.meta.own_thread_ids = vec![201, 202];
            unpaced_results(&mut run, 3_024_000, lost, lost);
            run
        };
        let (f, l) = analyze_single(&run_with(60_000), &Options::default());
        assert_eq!(f[0].cause, cause::SENDER_SATURATED, "{}", f[0]);
        let drops = l
            .entries
            .iter()
            .find(|e| e.cause == cause::BUFFER_DROPS)
            .unwrap();
        assert_eq!(drops.state, EntryState::Saturated);
        // A third of the packets lost in bursts while the receiver had room: the drops are
        // no one's symptom, and recovering them would deliver half as much again.
        let (_, l) = analyze_single(&run_with(1_000_000), &Options::default());
        let drops = l
            .entries
            .iter()
            .find(|e| e.cause == cause::BUFFER_DROPS)
            .unwrap();
        assert!(drops.explained_by.is_none(), "{drops:?}");
        let g = drops.gain.as_ref().and_then(|g| g.factor).unwrap();
        assert!((g - 1.5).abs() < 0.01, "{g}");
    }

    #[test]
    fn a_thief_on_the_only_cpu_the_workload_may_use_is_named_while_another_idles() {
        let mut run = live_run(10, |s, r| {
            cpu_row(s, r, &[(50.0, 45.0, 4.0), (1.0, 1.0, 0.0)]);
            put(s, r, n::LOAD_RX_PPS, &[], 90e3);
            own_thread(s, r, "201", "netceil-udp-tx0", 0.0, 30.0);
            own_thread(s, r, "202", "netceil-udp-rx", 0.0, 18.0);
            if r % 2 == 0 {
                put(
                    s,
                    r,
                    n::PROC_CPU_PCT,
                    &[
                        (n::LABEL_PID, "900"),
                        (n::LABEL_COMM, "spin"),
                        (n::LABEL_CPU, "0"),
                    ],
                    50.0,
                );
            }
        });
        run.meta.own_thread_ids = vec![201, 202];
        run.meta.workload_cpus = Some(vec![0]);
        let f = analyze(&run);
        assert_eq!(f[0].cause, cause::CPU_CONTENTION, "{}", f[0]);
        assert!(f[0].summary.contains("spin (pid 900)"), "{}", f[0].summary);
        assert!(
            f[0].summary.contains("its affinity mask"),
            "{}",
            f[0].summary
        );
        // Without the mask the machine had a whole idle CPU: no contention is claimed.
        run.meta.workload_cpus = None;
        assert_ne!(analyze(&run)[0].cause, cause::CPU_CONTENTION);
    }

    #[test]
    fn a_suite_where_nothing_binds_says_so_once() {
        let mut top = live_run(0, |_, _| {});
        top.parts = vec![live_run(10, idle_row), live_run(10, idle_row)];
        let findings = analyze(&top);
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].cause, cause::NO_LOAD);
        assert!(
            findings[0].summary.starts_with("part 1: "),
            "{}",
            findings[0].summary
        );
    }
}
