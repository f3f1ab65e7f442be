//! What the verdict adds once the rules have spoken: a stable order among near-equal findings,
//! the runner-up named beside the verdict, and the list of causes the run could not observe.
//!
//! **Stability.** Two rules that both fire on a run (a saturated sender and the drops it
//! causes downstream, a hot core and the softirq work on it) get confidences that move with
//! the machine's noise. Sorting on confidence alone lets a repeat of the same workload name
//! the other one first. Within [`NEAR_TIE`] of the top, the verdict therefore goes to the more
//! specific mechanism ([`PRECEDENCE`]): a shaper, a lock or a stranger on the CPU explain a
//! hot core, not the other way round. Outside the band, confidence decides.
//!
//! **Close calls.** When the runner-up is within [`CLOSE_CALL`] of the verdict, the verdict
//! says so in its evidence, so that a reader does not take a coin toss for a finding.
//!
//! **Not checked.** A cause the run could not observe is listed, so that its absence from
//! the findings is never read as "ruled out" (see [`not_checked`]).

use netceil_model::{names as n, Evidence, Finding, RunSource};

use crate::cause;
use crate::ctx::{Ctx, NetActivity};

/// Findings this close to the top (in confidence, 0–1) are ordered by [`PRECEDENCE`].
pub const NEAR_TIE: f64 = 0.05;

/// A runner-up this close to the verdict makes the verdict a close call.
pub const CLOSE_CALL: f64 = 0.10;

/// Causes from the most specific mechanism to the most generic symptom. A specific mechanism
/// explains the generic symptoms it produces (a shaper makes the throughput flat, a stranger
/// on the CPU makes a core hot, a full socket buffer makes loss begin), so among near-equal
/// findings it is the better verdict. Causes not listed come after all listed ones.
pub const PRECEDENCE: &[&str] = &[
    cause::LATENCY_BOUND,
    cause::SHAPER,
    cause::LINK_LIMIT,
    cause::LOCK_CONTENTION,
    cause::CPU_CONTENTION,
    cause::GENERATOR_LIMITED,
    cause::BUFFER_DROPS,
    cause::NAPI_BUDGET,
    cause::SOFTIRQ_BOUND,
    cause::RECEIVER_SATURATED,
    cause::SENDER_SATURATED,
    cause::THREAD_SATURATED,
    cause::POLLING_THREAD,
    cause::BUSY_WAIT,
    cause::INTERRUPT_BOUND,
    cause::SYSTEM_INTERRUPTS,
    cause::RX_SKEW,
    cause::TCP_PATH,
    cause::HOT_CPU,
    cause::CPU_BOUND,
    cause::GENERATOR_BUSY_WAIT,
    cause::SATURATION,
    cause::KNEE,
    cause::LINK_HEADROOM,
];

fn precedence(cause: &str) -> usize {
    PRECEDENCE
        .iter()
        .position(|c| *c == cause)
        .unwrap_or(PRECEDENCE.len())
}

/// Findings that only inform (arithmetic that rules the hardware out) are never the runner-up.
fn informs_only(f: &Finding) -> bool {
    f.cause == cause::LINK_HEADROOM
}

/// Mechanisms and the symptoms they produce. When a mechanism was found with at least
/// [`EXPLAIN_MIN`] confidence, the symptoms it explains do not outrank it, however loud they
/// are: CPU taken by other programs is why a socket overflowed, not the other way round; a
/// polling thread is why its core is hot.
pub const EXPLAINS: &[(&str, &[&str])] = &[
    (
        cause::CPU_CONTENTION,
        &[
            cause::BUFFER_DROPS,
            cause::SATURATION,
            cause::GENERATOR_LIMITED,
            cause::HOT_CPU,
            cause::CPU_BOUND,
            cause::SENDER_SATURATED,
            cause::RECEIVER_SATURATED,
            cause::UNNAMED_CEILING,
        ],
    ),
    (
        cause::SHAPER,
        &[
            cause::SATURATION,
            cause::BUFFER_DROPS,
            cause::UNNAMED_CEILING,
        ],
    ),
    (cause::POLLING_THREAD, &[cause::HOT_CPU, cause::CPU_BOUND]),
    (cause::THREAD_SATURATED, &[cause::HOT_CPU, cause::CPU_BOUND]),
    (cause::SENDER_SATURATED, &[cause::HOT_CPU, cause::CPU_BOUND]),
    (
        cause::RECEIVER_SATURATED,
        &[
            cause::HOT_CPU,
            cause::CPU_BOUND,
            cause::BUFFER_DROPS,
            cause::SATURATION,
        ],
    ),
    (cause::BUFFER_DROPS, &[cause::SATURATION]),
    (
        cause::SOFTIRQ_BOUND,
        &[cause::HOT_CPU, cause::CPU_BOUND, cause::SATURATION],
    ),
    (cause::NAPI_BUDGET, &[cause::HOT_CPU, cause::SATURATION]),
];

/// A mechanism must be at least this sure of itself to be put before what it explains.
pub const EXPLAIN_MIN: f64 = 0.45;

fn explains(mechanism: &str, symptom: &str) -> bool {
    EXPLAINS
        .iter()
        .any(|(m, s)| *m == mechanism && s.contains(&symptom))
}

/// Puts a mechanism before the symptom it explains, when both were found. `findings` must be
/// sorted by confidence. The relation has no cycles, so this ends; it is bounded anyway.
pub fn put_mechanisms_first(findings: &mut [Finding]) {
    for _ in 0..findings.len() {
        let Some(top) = findings.first().map(|f| f.cause.clone()) else {
            return;
        };
        let Some(i) = findings.iter().position(|f| {
            f.confidence >= EXPLAIN_MIN && f.cause != top && explains(&f.cause, &top)
        }) else {
            return;
        };
        let symptom = format!(
            "explains the {} finding ({:.0} %): {}",
            findings[0].cause,
            findings[0].confidence * 100.0,
            findings[0].summary.trim_end_matches('.')
        );
        promote(findings, i, symptom);
    }
}

/// Moves finding `i` to the front, saying why the one it displaces comes after it.
fn promote(findings: &mut [Finding], i: usize, why_the_former_top_follows: String) {
    findings[..=i].rotate_right(1);
    findings[0]
        .alternatives
        .insert(0, why_the_former_top_follows);
}

/// When the verdict is buffer drops and one of `over` was found sure enough, puts it first;
/// `words` says, from the drops finding, why the drops come after it.
fn over_buffer_drops(
    findings: &mut [Finding],
    over: &[&str],
    words: impl FnOnce(&Finding) -> String,
) {
    if findings
        .first()
        .is_none_or(|f| f.cause != cause::BUFFER_DROPS)
    {
        return;
    }
    let Some(i) = findings
        .iter()
        .position(|f| f.confidence >= EXPLAIN_MIN && over.contains(&f.cause.as_str()))
    else {
        return;
    };
    let why = words(&findings[0]);
    promote(findings, i, why);
}

/// Below this share of dropped packets, a saturated sender is the run's ceiling and the drops
/// are a loss on top of it: the receiving side kept up on average, and overflowed in bursts.
pub const SMALL_LOSS: f64 = 0.10;

/// Puts a saturated sending thread before buffer drops that lost only a small share of the
/// packets. The rate was set by the thread (it could send no faster); the drops take a few per
/// cent off what arrived. With a large share, the receiving side's ceiling is the lower one and
/// the drops stay first.
pub fn sender_before_small_loss(findings: &mut [Finding], drop_share: Option<f64>) {
    let Some(share) = drop_share.filter(|s| *s < SMALL_LOSS) else {
        return;
    };
    over_buffer_drops(
        findings,
        &[cause::THREAD_SATURATED, cause::SENDER_SATURATED],
        |drops| {
            format!(
                "the buffer drops ({:.0} %, {:.1} % of the packets) are a loss on top of this ceiling, not a lower one: {}",
                drops.confidence * 100.0,
                share * 100.0,
                drops.summary.trim_end_matches('.')
            )
        },
    );
}

/// Puts the CPUs before buffer drops when every CPU was busy and the run's own reader got
/// less than a core (`reader_share`, % of a core): the reader was starved, so the socket
/// overflowed; more buffer would only delay the loss, more CPU (or fewer competing threads)
/// removes it.
pub fn cpu_before_starved_reader(findings: &mut [Finding], reader_share: Option<f64>) {
    let Some(share) = reader_share else { return };
    over_buffer_drops(findings, &[cause::CPU_BOUND], |drops| {
        format!(
            "the buffer drops ({:.0} %) follow from it: the receiving thread got only {share:.0} % of a core while every CPU was busy, so it could not read in time: {}",
            drops.confidence * 100.0,
            drops.summary.trim_end_matches('.')
        )
    });
}

/// Puts the most specific of the near-equal top findings first. `findings` must already be
/// sorted by confidence, most confident first.
pub fn settle_near_ties(findings: &mut [Finding]) {
    let Some(top) = findings.first().map(|f| f.confidence) else {
        return;
    };
    let band = findings
        .iter()
        .take_while(|f| f.confidence >= top - NEAR_TIE)
        .count();
    // The first of the band with the best precedence: ties in precedence keep the sort order.
    let best = (0..band)
        .min_by_key(|&i| precedence(&findings[i].cause))
        .unwrap_or(0);
    findings[..=best].rotate_right(1);
}

/// Names the runner-up beside the verdict, and marks a close call in the verdict's evidence.
/// `measured_noise` is false for data that a repeat would read identically (one since-boot
/// snapshot): there a small margin is a tie between two true stories, not a coin toss.
pub fn name_runner_up(findings: &mut [Finding], measured_noise: bool) {
    let Some((verdict, rest)) = findings.split_first_mut() else {
        return;
    };
    let Some(second) = rest
        .iter()
        .find(|f| !informs_only(f) && f.cause != verdict.cause)
    else {
        return;
    };
    let margin = verdict.confidence - second.confidence;
    verdict.alternatives.push(format!(
        "runner-up: {} (cause {}, confidence {:.0} %)",
        second.summary.trim_end_matches('.'),
        second.cause,
        second.confidence * 100.0
    ));
    if margin < CLOSE_CALL && measured_noise {
        verdict.evidence.push(Evidence {
            metric: "verdict_margin".into(),
            window_s: None,
            value: Some(margin),
            text: format!(
                "a close call: {} is {:.0} points of confidence behind, so a repeat of this run \
                 may name it first; the verdict goes to the more specific mechanism",
                second.cause,
                (margin * 100.0).max(0.0)
            ),
        });
    }
}

fn has_metric(ctx: &Ctx, pred: impl Fn(&str) -> bool) -> bool {
    ctx.series().metrics.iter().any(|m| pred(&m.id.name))
}

/// The causes this run could not observe, one short line each, most important first. Empty
/// when there was no network load to diagnose (nothing was claimed, so nothing is left open).
pub fn not_checked(ctx: &Ctx) -> Vec<String> {
    let run = ctx.run;
    if matches!(ctx.net, NetActivity::Absent(_)) || (ctx.rows.is_empty() && run.results.is_none()) {
        return Vec::new();
    }
    let mut out = Vec::new();
    if run.locks.is_empty() {
        out.push(
            "kernel lock contention: no lock probe ran and no lock profile was read, so a \
             contended lock cannot be ruled out"
                .to_string(),
        );
    }
    if let Some(far) = far_end(ctx) {
        out.push(far);
    }
    let watched_or_imported = !matches!(run.source, RunSource::Live);
    if watched_or_imported && !has_metric(ctx, |m| m == n::THREAD_CPU_PCT) {
        out.push(
            "which processes and threads took the CPU: no per-thread figures (netceil watch \
             --pid PID records them)"
                .to_string(),
        );
    }
    if !ctx.series().is_empty() && !has_metric(ctx, |m| m.starts_with("qdisc_")) {
        out.push(
            "queueing disciplines (shapers, policers): no qdisc statistics in this run".to_string(),
        );
    }
    if ctx.series().total(n::INTR_PER_S).is_some()
        && !has_metric(ctx, |m| {
            m.starts_with("device_intr") || m == n::NIC_IRQ_PER_S
        })
    {
        out.push(
            "interrupt sources: only the total interrupt rate was recorded, so device \
             interrupts cannot be told from timer ticks and IPIs"
                .to_string(),
        );
    }
    if matches!(ctx.net, NetActivity::Unknown) {
        out.push(
            "network counters: the log has none, so network load was assumed, not measured"
                .to_string(),
        );
    }
    out.extend(devices_without_statistics(ctx));
    out
}

/// The far end of `--to`: its kernel counters, unless it reported them.
fn far_end(ctx: &Ctx) -> Option<String> {
    let run = ctx.run;
    if !matches!(run.source, RunSource::Live) {
        return None;
    }
    let target = run.workload.as_ref()?.params.get("target")?.as_str()?;
    let r = run.results.as_ref()?;
    if r.far.is_some() {
        // A `netceil serve` reported its counters, CPU per core and series: checked.
        return None;
    }
    let reported = r.kernel.iface.is_some() || r.kernel.iface_rx_packets.is_some();
    Some(if reported {
        format!(
            "the far end's CPU ({target}): its interface, backlog and UDP drop counters came \
             back in its report, but its CPU was not sampled, so a hot core there cannot be \
             ruled out"
        )
    } else {
        format!(
            "the far end ({target}): its interface, softnet and UDP drop counters were not \
             reported, so a drop or a hot core there cannot be ruled out"
        )
    })
}

/// Interfaces whose statistics the sampler could not read, by name (at most three).
fn devices_without_statistics(ctx: &Ctx) -> Option<String> {
    let series = ctx.series();
    let mut ifaces: Vec<(String, String)> = Vec::new();
    for m in &series.missing {
        let Some(iface) = label_in(&m.metric, n::LABEL_IFACE) else {
            continue;
        };
        if !ifaces.iter().any(|(i, _)| *i == iface) {
            ifaces.push((iface, m.reason.clone()));
        }
    }
    if ifaces.is_empty() {
        return None;
    }
    let shown: Vec<String> = ifaces
        .iter()
        .take(3)
        .map(|(i, why)| format!("{i} ({why})"))
        .collect();
    let more = ifaces.len().saturating_sub(3);
    Some(format!(
        "device statistics: some counters of {}{} could not be read",
        shown.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    ))
}

/// The value of `key` in a metric id written as `name{k=v,…}`.
fn label_in(metric: &str, key: &str) -> Option<String> {
    let inner = metric.split_once('{')?.1.strip_suffix('}')?;
    inner.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then(|| v.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctx::finding;

    fn f(cause: &str, confidence: f64) -> Finding {
        finding(cause, format!("{cause} bound the run."), confidence)
    }

    fn causes(findings: &[Finding]) -> Vec<&str> {
        findings.iter().map(|f| f.cause.as_str()).collect()
    }

    #[test]
    fn near_ties_go_to_the_more_specific_mechanism() {
        let mut v = vec![
            f(cause::HOT_CPU, 0.80),
            f(cause::BUFFER_DROPS, 0.77),
            f(cause::SATURATION, 0.60),
        ];
        settle_near_ties(&mut v);
        assert_eq!(
            causes(&v),
            [cause::BUFFER_DROPS, cause::HOT_CPU, cause::SATURATION]
        );
    }

    #[test]
    fn outside_the_band_confidence_decides() {
        let mut v = vec![f(cause::HOT_CPU, 0.80), f(cause::BUFFER_DROPS, 0.70)];
        settle_near_ties(&mut v);
        assert_eq!(causes(&v), [cause::HOT_CPU, cause::BUFFER_DROPS]);
    }

    #[test]
    fn the_order_is_the_same_whichever_of_two_near_equals_scored_higher() {
        // The same run twice, the noise swapping which of two rules scored higher.
        let mut a = vec![f(cause::HOT_CPU, 0.81), f("sender_saturated", 0.79)];
        let mut b = vec![f("sender_saturated", 0.81), f(cause::HOT_CPU, 0.79)];
        settle_near_ties(&mut a);
        settle_near_ties(&mut b);
        assert_eq!(a[0].cause, b[0].cause);
        assert_eq!(a[0].cause, "sender_saturated");
    }

    #[test]
    fn a_saturated_sender_goes_before_a_small_loss_but_not_a_large_one() {
        let base = || {
            vec![
                f(cause::BUFFER_DROPS, 0.69),
                f(cause::HOT_CPU, 0.68),
                f(cause::THREAD_SATURATED, 0.57),
            ]
        };
        let mut v = base();
        sender_before_small_loss(&mut v, Some(0.044));
        assert_eq!(
            causes(&v),
            [cause::THREAD_SATURATED, cause::BUFFER_DROPS, cause::HOT_CPU]
        );
        assert!(
            v[0].alternatives[0].contains("4.4 % of the packets"),
            "{:?}",
            v[0].alternatives
        );
        // A third of the packets lost: the receiving side's ceiling is the lower one.
        let mut v = base();
        sender_before_small_loss(&mut v, Some(0.33));
        assert_eq!(v[0].cause, cause::BUFFER_DROPS);
        // Unknown share, or a sender too unsure of itself: nothing moves.
        let mut v = base();
        sender_before_small_loss(&mut v, None);
        assert_eq!(v[0].cause, cause::BUFFER_DROPS);
        let mut v = vec![
            f(cause::BUFFER_DROPS, 0.69),
            f(cause::THREAD_SATURATED, 0.40),
        ];
        sender_before_small_loss(&mut v, Some(0.01));
        assert_eq!(v[0].cause, cause::BUFFER_DROPS);
    }

    #[test]
    fn a_starved_reader_puts_the_cpus_first() {
        let base = || {
            vec![
                f(cause::BUFFER_DROPS, 0.95),
                f(cause::SATURATION, 0.77),
                f(cause::CPU_BOUND, 0.58),
            ]
        };
        let mut v = base();
        cpu_before_starved_reader(&mut v, Some(46.0));
        assert_eq!(v[0].cause, cause::CPU_BOUND);
        assert!(
            v[0].alternatives[0].contains("46 % of a core"),
            "{:?}",
            v[0].alternatives
        );
        // A reader that had its core: the drops stay first.
        let mut v = base();
        cpu_before_starved_reader(&mut v, None);
        assert_eq!(v[0].cause, cause::BUFFER_DROPS);
    }

    #[test]
    fn unknown_causes_keep_their_order() {
        let mut v = vec![f("new_cause", 0.8), f("other_new", 0.79)];
        settle_near_ties(&mut v);
        assert_eq!(causes(&v), ["new_cause", "other_new"]);
    }

    #[test]
    fn a_mechanism_goes_before_the_symptom_it_explains() {
        let mut v = vec![
            f(cause::BUFFER_DROPS, 0.95),
            f(cause::SATURATION, 0.77),
            f(cause::CPU_CONTENTION, 0.70),
        ];
        put_mechanisms_first(&mut v);
        assert_eq!(v[0].cause, cause::CPU_CONTENTION);
        assert!(v[0].alternatives[0].starts_with("explains the buffer_drops finding"));
    }

    #[test]
    fn an_unsure_mechanism_or_an_unrelated_one_changes_nothing() {
        let mut v = vec![f(cause::BUFFER_DROPS, 0.95), f(cause::CPU_CONTENTION, 0.30)];
        put_mechanisms_first(&mut v);
        assert_eq!(v[0].cause, cause::BUFFER_DROPS);
        let mut w = vec![f(cause::LATENCY_BOUND, 0.9), f(cause::POLLING_THREAD, 0.6)];
        put_mechanisms_first(&mut w);
        assert_eq!(w[0].cause, cause::LATENCY_BOUND);
    }

    #[test]
    fn a_close_runner_up_is_named_and_marked() {
        let mut v = vec![f(cause::BUFFER_DROPS, 0.72), f(cause::HOT_CPU, 0.68)];
        name_runner_up(&mut v, true);
        assert!(
            v[0].alternatives
                .iter()
                .any(|a| a.starts_with("runner-up: hot_cpu bound the run (cause hot_cpu")),
            "{:?}",
            v[0].alternatives
        );
        let margin = v[0]
            .evidence
            .iter()
            .find(|e| e.metric == "verdict_margin")
            .expect("close call marked");
        assert!((margin.value.unwrap() - 0.04).abs() < 1e-9);
    }

    #[test]
    fn data_without_noise_has_no_close_call() {
        let mut v = vec![f(cause::NAPI_BUDGET, 0.45), f(cause::RX_SKEW, 0.45)];
        name_runner_up(&mut v, false);
        assert!(v[0].alternatives[0].starts_with("runner-up: "));
        assert!(v[0].evidence.iter().all(|e| e.metric != "verdict_margin"));
    }

    #[test]
    fn a_clear_verdict_names_the_runner_up_without_a_close_call() {
        let mut v = vec![
            f(cause::SATURATION, 0.9),
            f(cause::LINK_HEADROOM, 0.85),
            f(cause::HOT_CPU, 0.5),
        ];
        name_runner_up(&mut v, true);
        assert_eq!(v[0].alternatives.len(), 1);
        assert!(v[0].alternatives[0].contains("cause hot_cpu"));
        assert!(v[0].evidence.iter().all(|e| e.metric != "verdict_margin"));
    }

    #[test]
    fn a_lone_verdict_has_no_runner_up() {
        let mut v = vec![f(cause::HOT_CPU, 0.8)];
        name_runner_up(&mut v, true);
        assert!(v[0].alternatives.is_empty());
    }

    fn loaded(s: &mut netceil_model::Series, r: usize) {
        crate::testutil::cpu_row(s, r, &[(5.0, 5.0, 5.0), (5.0, 5.0, 5.0)]);
        crate::testutil::put(s, r, n::LOAD_RX_PPS, &[], 20e3);
        crate::testutil::put(s, r, n::INTR_PER_S, &[], 3e3);
    }

    #[test]
    fn a_run_lists_what_it_could_not_observe() {
        let run = crate::testutil::live_run(10, loaded);
        let opts = crate::Options::default();
        let ctx = Ctx::new(&run, &opts);
        let list = not_checked(&ctx);
        assert!(list.iter().any(|l| l.starts_with("kernel lock contention")));
        assert!(list.iter().any(|l| l.starts_with("queueing disciplines")));
        assert!(list.iter().any(|l| l.starts_with("interrupt sources")));
        // A live run in-process has no far end.
        assert!(!list.iter().any(|l| l.starts_with("the far end")));
    }

    #[test]
    fn what_was_observed_is_not_listed() {
        let mut run = crate::testutil::live_run(10, |s, r| {
            loaded(s, r);
            crate::testutil::put(s, r, "qdisc_drops_per_s", &[("iface", "lo")], 0.0);
        });
        run.locks.push(netceil_model::LockStat {
            name: "rtentry".into(),
            ..Default::default()
        });
        let opts = crate::Options::default();
        let ctx = Ctx::new(&run, &opts);
        let list = not_checked(&ctx);
        assert!(!list.iter().any(|l| l.starts_with("kernel lock contention")));
        assert!(!list.iter().any(|l| l.starts_with("queueing disciplines")));
    }

    #[test]
    fn the_far_end_of_to_is_listed_until_it_reports() {
        let mut run = crate::testutil::live_run(10, loaded);
        run.workload = Some(netceil_model::Workload {
            kind: netceil_model::WorkloadKind::Udp,
            params: [("target".to_string(), serde_json::json!("198.18.0.2:9000"))]
                .into_iter()
                .collect(),
        });
        run.results = Some(netceil_model::Results {
            duration_s: 10.0,
            tx_packets: 1000,
            ..Default::default()
        });
        let opts = crate::Options::default();
        let ctx = Ctx::new(&run, &opts);
        assert!(not_checked(&ctx)
            .iter()
            .any(|l| l.starts_with("the far end (198.18.0.2:9000)")));
        // Once it reports its counters, only its CPU stays open.
        if let Some(r) = run.results.as_mut() {
            r.kernel.iface = Some("veth1".into());
            r.kernel.iface_rx_packets = Some(1000);
        }
        let ctx = Ctx::new(&run, &opts);
        let list = not_checked(&ctx);
        assert!(
            !list.iter().any(|l| l.starts_with("the far end (")),
            "{list:?}"
        );
        assert!(
            list.iter()
                .any(|l| l.starts_with("the far end's CPU (198.18.0.2:9000)")),
            "{list:?}"
        );
    }

    #[test]
    fn an_idle_machine_has_nothing_left_open() {
        let run = crate::testutil::live_run(10, crate::testutil::idle_row);
        let opts = crate::Options::default();
        let ctx = Ctx::new(&run, &opts);
        assert!(not_checked(&ctx).is_empty(), "{:?}", not_checked(&ctx));
    }

    #[test]
    fn labels_are_read_from_metric_ids() {
        assert_eq!(
            label_in("iface_rx_missed_per_s{iface=eth0}", "iface").as_deref(),
            Some("eth0")
        );
        assert_eq!(
            label_in("irq_per_s{irq=38,iface=eth1,queue=0}", "iface").as_deref(),
            Some("eth1")
        );
        assert_eq!(label_in("cs_per_s", "iface"), None);
    }
}
