//! `--confirm`: a verdict tested by experiment, as the field investigations did by hand. The
//! one thing the verdict blames is changed (a larger receive buffer, the receiver on another
//! core, flows spread over threads, a lower rate, the probes off) in short trials alternated with the unchanged
//! workload (A, B, A, B), and the figure the verdict is about is compared against the trials'
//! own spread. A verdict whose intervention moves nothing is refuted, and the analyzer
//! demotes it.
//!
//! Every change is a parameter of netceil's own workload (a socket option, a thread's CPU, a
//! thread count, a rate, whether probes attach): nothing on the machine is changed, so nothing needs
//! restoring.

use netceil_model::names as n;
use netceil_model::params::LoadParams;
use netceil_model::{fmt, Cause, ConfirmOutcome, Confirmation, Rate, Results, Run, Unit};
use std::time::Duration;

use crate::session::{Session, SessionConfig};
use crate::trial::Trial;
use crate::Error;

/// The longest a confirming trial runs.
pub const TRIAL: Duration = Duration::from_secs(3);
/// How much larger the receive buffer is made.
pub const BUFFER_FACTOR: usize = 16;
/// The rate a saturated run is retried at, as a share of what it offered.
pub const LOWER_RATE: f64 = 0.5;
/// The rate a generator-limited run is retried at, as a share of what it achieved.
pub const REACHABLE_RATE: f64 = 0.7;
/// A rise smaller than this share is no rise.
pub const RISE: f64 = 0.10;
/// Trials whose spread is more than this share of their mean cannot tell a change.
pub const TOO_NOISY: f64 = 0.30;

/// The one change made to test a cause.
#[derive(Debug, Clone, PartialEq)]
pub enum Intervention {
    /// The UDP receive buffer, this many bytes (forced past rmem_max where allowed).
    Rcvbuf(usize),
    /// The flows spread over this many sender threads (at least as many flows).
    Threads(u32),
    /// The asked rate, packets per second.
    Rate(f64),
    /// The eBPF probes left off.
    ProbesOff,
    /// The receiver moved off the core it shared with the sender(s): both arms place the
    /// sender(s) on `shared`; the unchanged arm keeps the receiver there too, the changed one
    /// places it on `other`.
    RxCore { shared: usize, other: usize },
}

/// Where the run's own load threads ran, and where this process may run.
#[derive(Debug, Clone, Default, PartialEq)]
struct Cores {
    /// The receiving thread's CPU: as placed (`--rx-cpu`), else the one it was seen on most.
    rx: Option<usize>,
    /// The sending threads' CPUs, likewise.
    tx: Vec<usize>,
    /// The CPUs this process may run on (its cgroup cpuset, taskset).
    allowed: Vec<usize>,
}

impl Cores {
    /// The threads' CPUs as the workload placed them, else as the run's thread samples saw
    /// them (`thread_last_cpu` of the load threads netceil started, by the names it gave).
    fn of(run: &Run, params: &LoadParams) -> Cores {
        let (rx_cpu, tx_cpu) = params.placement();
        let (mut rx, mut tx) = (Vec::new(), Vec::new());
        for m in run.series.by_name(n::THREAD_LAST_CPU) {
            let own =
                m.id.label(n::LABEL_TID)
                    .and_then(|t| t.parse::<u32>().ok())
                    .is_some_and(|t| run.meta.own_thread_ids.contains(&t));
            let comm = m.id.label(n::LABEL_COMM).unwrap_or("");
            let Some(cpu) = usual(&m.values) else {
                continue;
            };
            if own && comm.contains("-rx") {
                rx.push(cpu);
            } else if own && comm.contains("-tx") {
                tx.push(cpu);
            }
        }
        tx.sort_unstable();
        tx.dedup();
        Cores {
            // One receiving thread, or its CPU is no one thread's.
            rx: rx_cpu.or((rx.len() == 1).then(|| rx[0])),
            tx: tx_cpu.map_or(tx, |c| vec![c]),
            allowed: netceil_load::threads::allowed_cpus().unwrap_or_default(),
        }
    }
}

/// The value a thread's CPU samples took most often.
fn usual(values: &[Option<f64>]) -> Option<usize> {
    let mut counts = std::collections::BTreeMap::new();
    for v in values.iter().flatten().filter(|v| **v >= 0.0) {
        *counts.entry(v.round() as usize).or_insert(0u32) += 1;
    }
    counts.into_iter().max_by_key(|(_, n)| *n).map(|(c, _)| c)
}

/// The core the receiving thread shared with the sender(s), when the verdict blames that
/// core: the receiver was saturated, or a core was hot, on a local UDP run or a one-thread TCP
/// run (one receiving thread), with the receiver on a sender's core.
fn shared_rx_core(cause: &Cause, params: &LoadParams, cores: &Cores) -> Option<usize> {
    let one_receiver = match params {
        LoadParams::Udp(u) => u.target.is_none(),
        LoadParams::Tcp(t) => t.target.is_none() && t.threads == 1,
        LoadParams::Rr(_) | LoadParams::Rrul(_) => false,
    };
    let blames_core = matches!(cause, Cause::ReceiverSaturated | Cause::HotCpu);
    let rx = cores.rx?;
    (blames_core && one_receiver && cores.tx.contains(&rx)).then_some(rx)
}

/// What the verdict predicts the change does.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Prediction {
    /// The figure falls to half or less (loss).
    Falls,
    /// The figure rises by [`RISE`] or more (delivered).
    Rises,
    /// The generator reaches the rate asked (achieved ÷ asked ≥ 0.98).
    Reaches,
    /// The figure does not rise: the probes did not make the ceiling.
    Stays,
}

/// The figure an experiment watches.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Figure {
    /// Loss, % of what was sent.
    Loss,
    /// Delivered: packets/s (UDP), bits/s (TCP), transactions/s (rr).
    Delivered,
    /// Achieved ÷ asked rate.
    Reach,
}

impl Figure {
    fn of(self, r: &Results) -> f64 {
        match self {
            Figure::Loss => {
                let sent = r.tx_packets.saturating_sub(r.in_flight_packets);
                if sent == 0 {
                    0.0
                } else {
                    100.0 * r.lost_packets as f64 / sent as f64
                }
            }
            Figure::Delivered => {
                r.transactions_per_s
                    .unwrap_or(if r.rx_app_pps > 0.0 && r.payload_bytes.is_some() {
                        r.rx_app_pps
                    } else {
                        r.rx_app_bits_per_s.max(r.tx_bits_per_s)
                    })
            }
            Figure::Reach => match r.requested_pps {
                Some(asked) if asked > 0.0 => r.tx_pps / asked,
                _ => 1.0,
            },
        }
    }

    fn name(self) -> &'static str {
        match self {
            Figure::Loss => "loss",
            Figure::Delivered => "delivered",
            Figure::Reach => "achieved ÷ asked rate",
        }
    }

    fn unit(self, r: &Results) -> Unit {
        match self {
            Figure::Loss => Unit::Percent,
            Figure::Reach => Unit::Ratio,
            Figure::Delivered if r.transactions_per_s.is_some() => Unit::PerSecond,
            Figure::Delivered if r.rx_app_pps > 0.0 && r.payload_bytes.is_some() => {
                Unit::PacketsPerSecond
            }
            Figure::Delivered => Unit::BitsPerSecond,
        }
    }
}

/// The experiment that tests `cause` on the workload `params` measured as `results`, with
/// what the verdict predicts and the figure to watch; `None` when no change of netceil's own
/// tests that cause (said in the run's notes).
fn design(
    cause: &Cause,
    params: &LoadParams,
    results: &Results,
    probes_on: bool,
    rmem_default: Option<usize>,
    cores: &Cores,
) -> Option<(Intervention, Figure, Prediction)> {
    use Cause as C;
    // A receiver that shared its core with the sender(s) gets a core of its own. On loopback
    // the receive softirq runs in the sender's context on the sender's core; the receiving
    // thread's own work (the recvmmsg calls, the copy to user space, the accounting) is what
    // a core of its own relieves. If that share of the shared core was the ceiling, giving
    // it a whole core raises what is delivered; if it does not rise, the core's other work
    // (the sender and its softirq) bound the run, not the receiver. No other core to move it
    // to (one CPU allowed): untested, and said so.
    if let Some(shared) = shared_rx_core(cause, params, cores) {
        let other = cores.allowed.iter().copied().find(|c| *c != shared)?;
        return Some((
            Intervention::RxCore { shared, other },
            Figure::Delivered,
            Prediction::Rises,
        ));
    }
    let udp = match params {
        LoadParams::Udp(p) => Some(p),
        _ => None,
    };
    let threaded = matches!(params, LoadParams::Udp(_) | LoadParams::Tcp(_));
    let threads = match params {
        LoadParams::Udp(p) => p.threads,
        LoadParams::Tcp(p) => p.threads,
        LoadParams::Rr(_) | LoadParams::Rrul(_) => 1,
    };
    match cause {
        // The socket's own buffer, on this machine, and where the drops were: a far end's
        // buffer is its own setting, and drops at the backlog are no socket's.
        C::BufferDrops
            if udp.is_some_and(|u| u.target.is_none())
                && results.kernel.socket_drops.unwrap_or(0)
                    > results.kernel.backlog_drops.unwrap_or(0) =>
        {
            let now = udp?
                .rcvbuf
                .or(results.rcvbuf_bytes.map(|b| b as usize))
                .or(rmem_default)?;
            Some((
                Intervention::Rcvbuf(now * BUFFER_FACTOR),
                Figure::Loss,
                Prediction::Falls,
            ))
        }
        C::HotCpu | C::SenderSaturated | C::ThreadSaturated
            if threaded && spreadable(params, cores) =>
        {
            Some((
                Intervention::Threads((threads * 2).max(2)),
                Figure::Delivered,
                Prediction::Rises,
            ))
        }
        C::GeneratorLimited if udp.is_some() && results.tx_pps > 0.0 => Some((
            Intervention::Rate(results.tx_pps * REACHABLE_RATE),
            Figure::Reach,
            Prediction::Reaches,
        )),
        C::Saturation | C::ReceiverSaturated if udp.is_some() && results.lost_packets > 0 => {
            let offered = results.requested_pps.unwrap_or(results.tx_pps);
            (offered > 0.0).then_some((
                Intervention::Rate(offered * LOWER_RATE),
                Figure::Loss,
                Prediction::Falls,
            ))
        }
        C::SoftirqBound | C::NapiBudget | C::LockContention if probes_on => Some((
            Intervention::ProbesOff,
            Figure::Delivered,
            Prediction::Stays,
        )),
        _ => None,
    }
}

/// More sender threads can spread over more cores: not when the run placed every sender on
/// one CPU (`--tx-cpu`), nor when this process may run on one CPU only. More threads on the
/// same core would share it, and a flat result would refute a core that is still full.
fn spreadable(params: &LoadParams, cores: &Cores) -> bool {
    // No list of allowed CPUs (it could not be read) is no evidence of one.
    params.placement().1.is_none() && cores.allowed.len() != 1
}

/// The unchanged arm's workload: the run's own, with its threads held where the run had them
/// when the change is a thread's place. The scheduler is free to move unplaced threads, and
/// then the unchanged arm might run with the receiver apart from the sender, or the changed
/// one with it back; held, A is the placement the verdict was about and B differs from it in
/// the receiver's core alone.
fn unchanged(i: &Intervention, params: &LoadParams) -> LoadParams {
    let mut p = params.clone();
    if let Intervention::RxCore { shared, .. } = i {
        p.place(Some(*shared), Some(*shared));
    }
    p
}

/// The workload with the intervention applied.
fn apply(i: &Intervention, params: &LoadParams) -> LoadParams {
    let mut p = params.clone();
    match (i, &mut p) {
        (Intervention::RxCore { shared, other }, p) => p.place(Some(*other), Some(*shared)),
        (Intervention::Rcvbuf(b), LoadParams::Udp(u)) => {
            u.rcvbuf = Some(*b);
            // Past net.core.rmem_max only with CAP_NET_ADMIN; without it the kernel caps it,
            // and the results' rcvbuf_bytes say what was granted.
            u.rcvbuf_force = nix::unistd::geteuid().is_root();
        }
        (Intervention::Threads(t), LoadParams::Udp(u)) => {
            u.threads = *t;
            u.flows = u.flows.max(*t);
        }
        (Intervention::Threads(t), LoadParams::Tcp(c)) => {
            c.threads = *t;
            c.flows = c.flows.max(*t);
        }
        (Intervention::Rate(r), LoadParams::Udp(u)) => {
            u.rate = Some(Rate::PacketsPerSecond(r.round().max(1.0)));
            u.interval_ns = None;
        }
        _ => {}
    }
    p
}

fn words(i: &Intervention) -> String {
    match i {
        Intervention::Rcvbuf(b) => format!(
            "a {BUFFER_FACTOR}× receive buffer ({})",
            netceil_model::fmt::value(*b as f64, Unit::Bytes)
        ),
        Intervention::Threads(t) => format!("the flows spread over {t} sender threads"),
        Intervention::Rate(r) => format!(
            "the rate lowered to {}",
            netceil_model::fmt::value(*r, Unit::PacketsPerSecond)
        ),
        Intervention::ProbesOff => "the probes off".into(),
        Intervention::RxCore { shared, other } => {
            format!("the receiver moved from CPU {shared} (the sender's) to CPU {other}")
        }
    }
}

/// The trials' mean (0 with none: a figure that was never measured moved nothing).
fn mean(v: &[f64]) -> f64 {
    netceil_model::stats::mean(v).unwrap_or(0.0)
}

fn spread(v: &[f64]) -> f64 {
    let hi = v.iter().copied().fold(f64::MIN, f64::max);
    let lo = v.iter().copied().fold(f64::MAX, f64::min);
    if v.is_empty() {
        0.0
    } else {
        hi - lo
    }
}

/// The outcome of A and B trials under a prediction.
fn judge(a: &[f64], b: &[f64], prediction: Prediction) -> ConfirmOutcome {
    use ConfirmOutcome as O;
    let (ma, mb) = (mean(a), mean(b));
    let max = |v: &[f64]| v.iter().copied().fold(f64::MIN, f64::max);
    let min = |v: &[f64]| v.iter().copied().fold(f64::MAX, f64::min);
    let noise = spread(a).max(spread(b));
    // Confirmed only when every changed trial is beyond every unchanged one by the predicted
    // margin. Refuted only when the figure did not move: by less than twice the trials' own
    // spread and under 5 % of it, with trials that agree among themselves. A move the other
    // way means the change disturbed something else: that tells nothing of the verdict.
    let still = (mb - ma).abs() <= (2.0 * noise).max(0.05 * ma.abs());
    let steady = noise <= TOO_NOISY * ma.abs().max(mb.abs()).max(1e-12);
    match prediction {
        Prediction::Falls if ma <= 0.0 => O::Inconclusive,
        Prediction::Falls if max(b) <= 0.5 * min(a) => O::Confirmed,
        Prediction::Rises if min(b) >= (1.0 + RISE) * max(a) => O::Confirmed,
        Prediction::Stays if min(b) >= (1.0 + RISE) * max(a) => O::Refuted,
        Prediction::Stays if still && steady => O::Confirmed,
        Prediction::Falls | Prediction::Rises if still && steady => O::Refuted,
        Prediction::Reaches if b.iter().all(|x| *x >= 0.98) => O::Confirmed,
        Prediction::Reaches if b.iter().all(|x| *x < 0.9) => O::Refuted,
        _ => O::Inconclusive,
    }
}

/// Why an experiment that was run tells nothing of the verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Untold {
    /// The kernel granted no larger buffer than before.
    NotGranted,
    /// The receiver moved off the shared core and nothing moved: that clears the receiver,
    /// not the core.
    ReceiverOnly,
}

/// The outcome for the verdict, from what the trials showed. A receiver moved off the shared
/// core that delivers no more says the receiver's own work was not the ceiling: the core stays
/// full with the sender's work (and, on loopback, the receive softirq it runs) alone. That
/// refutes a saturated receiver; a hot core is still hot, so for it the experiment tells
/// nothing.
fn settle(
    change: &Intervention,
    cause: &Cause,
    judged: ConfirmOutcome,
    not_granted: bool,
) -> (ConfirmOutcome, Option<Untold>) {
    if not_granted {
        return (ConfirmOutcome::Inconclusive, Some(Untold::NotGranted));
    }
    if matches!(change, Intervention::RxCore { .. })
        && *cause != Cause::ReceiverSaturated
        && judged == ConfirmOutcome::Refuted
    {
        return (ConfirmOutcome::Inconclusive, Some(Untold::ReceiverOnly));
    }
    (judged, None)
}

fn predicted_words(p: Prediction, f: Figure, i: &Intervention) -> String {
    match p {
        Prediction::Falls => format!("{} falls to half or less", f.name()),
        Prediction::Rises if matches!(i, Intervention::RxCore { .. }) => format!(
            "{} rises by {:.0} % or more (and loss falls with it)",
            f.name(),
            RISE * 100.0
        ),
        Prediction::Rises => format!("{} rises by {:.0} % or more", f.name(), RISE * 100.0),
        Prediction::Reaches => "the generator reaches the lower rate it is asked".into(),
        Prediction::Stays => format!(
            "{} does not rise: the probes did not make the ceiling",
            f.name()
        ),
    }
}

/// Tests the run's verdict by experiment: `None` when the verdict names no ceiling or no
/// change of netceil's own tests it (the reason is in the returned note).
pub fn confirm(
    cfg: &SessionConfig,
    run: &Run,
    wire_id: u16,
) -> Result<Result<Confirmation, String>, Error> {
    // The verdict is the first finding; a later one that names a ceiling is not the verdict
    // (a paced run whose verdict is "no ceiling" also lists what it saw on the way).
    let Some(top) = run.findings.first().filter(|f| f.cause.names_ceiling()) else {
        return Ok(Err(
            "--confirm: the verdict names no ceiling, so there is nothing to test".into(),
        ));
    };
    let (Some(w), Some(results)) = (&run.workload, &run.results) else {
        return Ok(Err("--confirm: the run measured nothing".into()));
    };
    let params = LoadParams::from_workload(w).map_err(Error::usage)?;
    let rmem_default = cfg
        .source
        .read("/proc/sys/net/core/rmem_default")
        .ok()
        .and_then(|t| t.trim().parse().ok());
    let cores = Cores::of(run, &params);
    let Some((change, figure, prediction)) = design(
        &top.cause,
        &params,
        results,
        cfg.probes.is_some(),
        rmem_default,
        &cores,
    ) else {
        let why = match (&top.cause, &params) {
            (c, p) if shared_rx_core(c, p, &cores).is_some() => {
                "the receiver shared its core with the sender, and this process may run on that one CPU only (its cgroup cpuset or taskset), so there is no other core to move the receiver to"
            }
            // Only where design() would have added sender threads (UDP and TCP).
            (
                Cause::HotCpu | Cause::SenderSaturated | Cause::ThreadSaturated,
                p @ (LoadParams::Udp(_) | LoadParams::Tcp(_)),
            ) if !spreadable(p, &cores) =>
            {
                "the sender threads can only share one core (placed with --tx-cpu, or this process may run on one CPU only), so more of them would test nothing"
            }
            (Cause::BufferDrops, LoadParams::Udp(u)) if u.target.is_some() => {
                "the buffer that dropped is the far end's own setting (netceil serve --rcvbuf)"
            }
            (Cause::BufferDrops, LoadParams::Udp(_)) => {
                "the drops were not at the socket but at the backlog or before it, a machine setting (net.core.netdev_max_backlog) --confirm does not change"
            }
            _ => "no change of netceil's own workload relieves it",
        };
        return Ok(Err(format!(
            "--confirm: {} on a {} run is left untested: {why}",
            top.cause,
            match params {
                LoadParams::Udp(_) => "udp",
                LoadParams::Tcp(_) => "tcp",
                LoadParams::Rr(_) => "rr",
                LoadParams::Rrul(_) => "rrul",
            }
        )));
    };
    let length = Duration::from_secs_f64(params.duration_s()).min(TRIAL);
    let shorten = |p: LoadParams| -> LoadParams {
        let mut p = p;
        match &mut p {
            LoadParams::Udp(u) => {
                u.duration_s = length.as_secs_f64();
                u.count = None;
            }
            LoadParams::Tcp(t) => t.duration_s = length.as_secs_f64(),
            LoadParams::Rr(r) => r.duration_s = length.as_secs_f64(),
            LoadParams::Rrul(r) => r.duration_s = length.as_secs_f64(),
        }
        p
    };
    let a = Trial::new(shorten(unchanged(&change, &params)), wire_id)?;
    let b = Trial::new(shorten(apply(&change, &params)), wire_id)?;
    // The probes stay as the run had them in both arms, unless they are the change.
    let a_cfg = cfg.clone();
    let mut b_cfg = cfg.clone();
    if change == Intervention::ProbesOff {
        b_cfg.probes = None;
    }
    let (mut unchanged, mut changed) = (Vec::new(), Vec::new());
    let mut unit = Unit::Count;
    // The receive buffer each arm was granted: a change the kernel did not make tests nothing.
    let mut granted = [None, None];
    for _round in 0..2 {
        for (i, (arm, trial, c)) in [(&mut unchanged, &a, &a_cfg), (&mut changed, &b, &b_cfg)]
            .into_iter()
            .enumerate()
        {
            // Each arm in a session of its own, stored nowhere: the run's timeline and
            // verdict stay those of the run itself.
            let mut s = Session::start(c, None, run)?;
            let r = s.measure(trial)?;
            s.rec
                .stop(&mut Run::new("confirm", netceil_model::RunSource::Live));
            unit = figure.unit(&r);
            arm.push(figure.of(&r));
            granted[i] = r.rcvbuf_bytes;
            if s.stopping() {
                return Err(Error::runtime(anyhow::anyhow!("--confirm: interrupted")));
            }
        }
    }
    let not_granted = matches!(change, Intervention::Rcvbuf(_))
        && granted[1].unwrap_or(0) <= granted[0].unwrap_or(0);
    let (outcome, untold) = settle(
        &change,
        &top.cause,
        judge(&unchanged, &changed, prediction),
        not_granted,
    );
    let (ma, mb) = (mean(&unchanged), mean(&changed));
    let meaning = match outcome {
        ConfirmOutcome::Confirmed => format!("{} is the ceiling", top.cause),
        ConfirmOutcome::Refuted => format!("{} is not the ceiling", top.cause),
        ConfirmOutcome::Inconclusive if untold == Some(Untold::NotGranted) => format!(
            "the kernel granted no larger buffer ({} B both times), so this tests nothing",
            granted[1].unwrap_or(0)
        ),
        ConfirmOutcome::Inconclusive if untold == Some(Untold::ReceiverOnly) => format!(
            "the receiver's own work was not the ceiling; the core stays full with the sender's, so {} is neither confirmed nor refuted",
            top.cause
        ),
        ConfirmOutcome::Inconclusive => "the trials cannot tell".to_string(),
    };
    let list = |v: &[f64]| {
        v.iter()
            .map(|x| fmt::value(*x, unit))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let summary = format!(
        "{} moved {} from {} to {} (unchanged: {}; changed: {}; {:.0} s trials): {meaning}",
        words(&change),
        figure.name(),
        fmt::value(ma, unit),
        fmt::value(mb, unit),
        list(&unchanged),
        list(&changed),
        length.as_secs_f64()
    );
    Ok(Ok(Confirmation {
        cause: top.cause.clone(),
        intervention: words(&change),
        figure: figure.name().into(),
        unit,
        predicted: predicted_words(prediction, figure, &change),
        unchanged,
        changed,
        trial_s: length.as_secs_f64(),
        outcome,
        summary,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ConfirmOutcome as O;

    #[test]
    fn a_buffer_that_moves_loss_by_a_point_is_not_the_ceiling() {
        assert_eq!(
            judge(&[44.0, 44.5], &[43.0, 43.4], Prediction::Falls),
            O::Refuted
        );
        assert_eq!(
            judge(&[44.0, 44.5], &[2.0, 2.5], Prediction::Falls),
            O::Confirmed
        );
        // Loss that halves, but within the trials' own spread, is no evidence.
        assert_eq!(
            judge(&[10.0, 40.0], &[5.0, 20.0], Prediction::Falls),
            O::Inconclusive
        );
        assert_eq!(
            judge(&[0.0, 0.0], &[0.0, 0.0], Prediction::Falls),
            O::Inconclusive
        );
    }

    #[test]
    fn more_threads_must_deliver_more_to_confirm_a_hot_core() {
        assert_eq!(
            judge(&[100.0, 102.0], &[180.0, 185.0], Prediction::Rises),
            O::Confirmed
        );
        assert_eq!(
            judge(&[100.0, 102.0], &[101.0, 103.0], Prediction::Rises),
            O::Refuted
        );
        assert_eq!(
            judge(&[100.0, 102.0], &[106.0, 108.0], Prediction::Rises),
            O::Inconclusive
        );
    }

    #[test]
    fn a_generator_that_reaches_a_lower_rate_confirms_it_was_the_limit() {
        assert_eq!(
            judge(&[0.6, 0.62], &[0.99, 1.0], Prediction::Reaches),
            O::Confirmed
        );
        assert_eq!(
            judge(&[0.6, 0.62], &[0.7, 0.72], Prediction::Reaches),
            O::Refuted
        );
    }

    #[test]
    fn probes_that_held_the_rate_refute_a_probe_verdict() {
        assert_eq!(
            judge(&[100.0, 101.0], &[140.0, 142.0], Prediction::Stays),
            O::Refuted
        );
        assert_eq!(
            judge(&[100.0, 101.0], &[100.5, 101.5], Prediction::Stays),
            O::Confirmed
        );
    }

    #[test]
    fn only_the_verdict_itself_is_tested() {
        // A paced run whose verdict is "no ceiling" also lists what it saw on the way (here
        // io_wait); that later finding is not the verdict and must not be tested.
        let finding = |cause: Cause| netceil_model::Finding {
            cause,
            summary: String::new(),
            confidence: 0.5,
            evidence: vec![],
            alternatives: vec![],
            advice: vec![],
            next: None,
            not_checked: vec![],
        };
        let mut run = Run::new("paced", netceil_model::RunSource::Live);
        run.findings = vec![finding(Cause::NoCeiling), finding(Cause::IoWait)];
        let cfg = SessionConfig::new(
            Duration::from_millis(100),
            std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
        );
        let said = confirm(&cfg, &run, 1).unwrap().unwrap_err();
        assert!(said.contains("names no ceiling"), "{said}");
        // The same finding as the verdict is tested (here it gets as far as the workload).
        run.findings.remove(0);
        let said = confirm(&cfg, &run, 1).unwrap().unwrap_err();
        assert!(said.contains("measured nothing"), "{said}");
    }

    #[test]
    fn each_cause_gets_the_change_that_relieves_it() {
        use netceil_model::params::UdpParams;
        let udp = LoadParams::Udp(UdpParams {
            duration_s: 6.0,
            ..crate::trial::udp_defaults(18)
        });
        let mut r = Results {
            tx_pps: 500_000.0,
            lost_packets: 1000,
            ..Results::default()
        };
        r.kernel.socket_drops = Some(1000);
        let none = Cores::default();
        let d = |c: Cause| design(&c, &udp, &r, false, Some(212_992), &none).map(|x| x.0);
        assert_eq!(
            d(Cause::BufferDrops),
            Some(Intervention::Rcvbuf(212_992 * 16))
        );
        assert_eq!(d(Cause::HotCpu), Some(Intervention::Threads(2)));
        assert_eq!(
            d(Cause::GeneratorLimited),
            Some(Intervention::Rate(350_000.0))
        );
        assert_eq!(d(Cause::Saturation), Some(Intervention::Rate(250_000.0)));
        // Drops at the backlog are no socket's: a bigger socket buffer tests nothing.
        let mut backlog = r.clone();
        backlog.kernel.socket_drops = Some(0);
        backlog.kernel.backlog_drops = Some(1000);
        assert_eq!(
            design(
                &Cause::BufferDrops,
                &udp,
                &backlog,
                false,
                Some(212_992),
                &none
            ),
            None
        );
        // Without probes, a probe verdict has nothing to switch off.
        assert_eq!(d(Cause::SoftirqBound), None);
        assert_eq!(d(Cause::NoCeiling), None);
        let Some(LoadParams::Udp(u)) = Some(apply(&Intervention::Threads(2), &udp)) else {
            panic!()
        };
        assert_eq!((u.threads, u.flows), (2, 2));
    }

    fn lossy() -> Results {
        Results {
            tx_pps: 500_000.0,
            lost_packets: 1000,
            ..Results::default()
        }
    }

    #[test]
    fn a_receiver_that_shared_the_senders_core_is_moved_to_another() {
        use netceil_model::params::UdpParams;
        let udp = LoadParams::Udp(UdpParams {
            duration_s: 6.0,
            ..crate::trial::udp_defaults(18)
        });
        let shared = Cores {
            rx: Some(0),
            tx: vec![0],
            allowed: vec![0, 1],
        };
        let d = |c: Cause, p: &LoadParams, cores: &Cores| {
            design(&c, p, &lossy(), false, None, cores).map(|x| (x.0, x.2))
        };
        let i = Intervention::RxCore {
            shared: 0,
            other: 1,
        };
        let moved = Some((i.clone(), Prediction::Rises));
        assert_eq!(d(Cause::ReceiverSaturated, &udp, &shared), moved);
        assert_eq!(d(Cause::HotCpu, &udp, &shared), moved);
        // The receiver on a core of its own: moving it tests nothing; the other changes stay.
        let apart = Cores {
            tx: vec![1],
            ..shared.clone()
        };
        assert_eq!(
            d(Cause::ReceiverSaturated, &udp, &apart).map(|x| x.0),
            Some(Intervention::Rate(250_000.0))
        );
        assert_eq!(
            d(Cause::HotCpu, &udp, &apart).map(|x| x.0),
            Some(Intervention::Threads(2))
        );
        // Senders placed on one CPU: more of them would share it, so no Threads test.
        let LoadParams::Udp(mut pinned) = udp.clone() else {
            panic!()
        };
        pinned.tx_cpu = Some(1);
        assert_eq!(
            d(
                Cause::SenderSaturated,
                &LoadParams::Udp(pinned.clone()),
                &apart
            ),
            None
        );
        assert_eq!(d(Cause::HotCpu, &LoadParams::Udp(pinned), &apart), None);
        // One CPU allowed (cpuset, taskset): nowhere to move it, and no other change either.
        let one = Cores {
            allowed: vec![0],
            ..shared.clone()
        };
        assert_eq!(d(Cause::ReceiverSaturated, &udp, &one), None);
        assert_eq!(d(Cause::HotCpu, &udp, &one), None);
        // A far end's receiver is not this process's to place.
        let LoadParams::Udp(mut far) = udp.clone() else {
            panic!()
        };
        far.target = Some("10.0.0.2:9000".into());
        assert_ne!(
            d(Cause::ReceiverSaturated, &LoadParams::Udp(far), &shared),
            moved
        );
        // A holds both on the shared core; B differs in the receiver's core alone.
        let (LoadParams::Udp(a), LoadParams::Udp(b)) = (unchanged(&i, &udp), apply(&i, &udp))
        else {
            panic!()
        };
        assert_eq!((a.rx_cpu, a.tx_cpu), (Some(0), Some(0)));
        assert_eq!((b.rx_cpu, b.tx_cpu), (Some(1), Some(0)));
        assert_eq!(
            LoadParams::Udp(UdpParams {
                rx_cpu: None,
                tx_cpu: None,
                ..b
            }),
            udp
        );
        // Any other change leaves the unchanged arm as the run had it.
        assert_eq!(unchanged(&Intervention::Threads(2), &udp), udp);
    }

    #[test]
    fn a_receiver_moved_to_no_effect_clears_the_receiver_not_the_core() {
        let moved = Intervention::RxCore {
            shared: 0,
            other: 1,
        };
        let flat = judge(&[500.0, 505.0], &[502.0, 503.0], Prediction::Rises);
        assert_eq!(flat, O::Refuted);
        assert_eq!(
            settle(&moved, &Cause::ReceiverSaturated, flat, false),
            (O::Refuted, None)
        );
        assert_eq!(
            settle(&moved, &Cause::HotCpu, flat, false),
            (O::Inconclusive, Some(Untold::ReceiverOnly))
        );
        // A rise confirms either; another change's flat result still refutes a hot core.
        assert_eq!(
            settle(&moved, &Cause::HotCpu, O::Confirmed, false),
            (O::Confirmed, None)
        );
        assert_eq!(
            settle(&Intervention::Threads(2), &Cause::HotCpu, flat, false),
            (O::Refuted, None)
        );
        assert_eq!(
            settle(
                &Intervention::Rcvbuf(1 << 20),
                &Cause::BufferDrops,
                flat,
                true
            ),
            (O::Inconclusive, Some(Untold::NotGranted))
        );
    }

    #[test]
    fn the_threads_cores_are_read_from_the_runs_own_thread_samples() {
        use netceil_model::{Metric, MetricId};
        let mut run = Run::new("seen", netceil_model::RunSource::Live);
        run.meta.own_thread_ids = vec![11, 12];
        let cpu = |tid: &str, comm: &str, v: &[f64]| Metric {
            id: MetricId::new(n::THREAD_LAST_CPU)
                .with(n::LABEL_TID, tid)
                .with(n::LABEL_COMM, comm),
            unit: Unit::Count,
            values: v.iter().map(|x| Some(*x)).collect(),
        };
        run.series.metrics = vec![
            cpu("11", "netceil-udp-rx", &[1.0, 0.0, 0.0, 0.0]),
            cpu("12", "netceil-udp-tx0", &[0.0, 0.0, 1.0, 0.0]),
            // Named like a load thread, but not one netceil started.
            cpu("13", "netceil-udp-rx", &[1.0, 1.0, 1.0, 1.0]),
        ];
        let udp = LoadParams::Udp(crate::trial::udp_defaults(18));
        let c = Cores::of(&run, &udp);
        assert_eq!((c.rx, c.tx.clone()), (Some(0), vec![0]));
        assert!(!c.allowed.is_empty());
        // Placed by the workload itself: that is where they ran.
        let mut placed = udp.clone();
        placed.place(Some(1), Some(1));
        let c = Cores::of(&run, &placed);
        assert_eq!((c.rx, c.tx), (Some(1), vec![1]));
    }
}
