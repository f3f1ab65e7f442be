//! `netceil compare A B`: two runs side by side, normalized so that different throughputs
//! can be compared, with a significance test over each run's load phase.
//!
//! SEEDS §1 is the model: sk0 and msk2 showed similar context-switch rates, and what told
//! them apart was the work done per context switch (bytes/cs) and how steady the rate was.
//! So besides the headline figures a comparison gives per-interval distributions (median,
//! p10, p90, stddev, coefficient of variation) and the difference of means with a confidence
//! interval from Welch's t-test. Only the load phase counts: the idle seconds before and
//! after a transfer would otherwise dominate every statistic. [`load_phase`] is a simple
//! threshold rule kept separate so the analyzer's phase split can replace it
//! ([`compare_with`]).

use std::collections::BTreeMap;

use netceil_model::{names as n, Metric, Run};
use serde::Serialize;

use crate::stats::{self, Distribution, WelchTest};
use crate::summary;
use crate::tables;
use crate::view;
use netceil_model::{fmt, Unit};

/// Share of a metric's maximum above which a row can belong to the load phase.
pub const LOAD_PHASE_THRESHOLD: f64 = 0.5;
/// Rows at either edge of the load phase below this share of its median are ramps, not load.
pub const LOAD_PHASE_EDGE_TRIM: f64 = 0.8;
/// Significance level used to call a difference significant.
pub const ALPHA: f64 = 0.05;
/// Confidence level of the interval of the difference.
pub const CONFIDENCE: f64 = 0.95;
/// One run is called steadier when its coefficient of variation is below this share of
/// the other's.
pub const STEADIER_CV_RATIO: f64 = 0.9;

/// The rows of a run's series that count as "under load".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadPhase {
    /// Row indices into the run's series, ascending.
    pub rows: Vec<usize>,
    /// The rule that chose them, in words.
    pub rule: String,
    /// The metric the rule looked at, if any.
    pub metric: Option<String>,
}

/// The default load phase, a deliberately simple rule until the analyzer splits phases:
///
/// 1. take the activity metric: the throughput; without one, the packet rate, the
///    interrupt rate, then the context-switch rate (so an imported vmstat log, which has
///    no throughput, still skips its idle seconds);
/// 2. keep the rows where it is at least [`LOAD_PHASE_THRESHOLD`] (50 %) of its maximum;
/// 3. of those, the longest stretch of consecutive rows (one transfer, not its tail as the
///    flows finish one by one);
/// 4. trim rows at either edge below [`LOAD_PHASE_EDGE_TRIM`] (80 %) of the stretch's median
///    (the ramp up and down); dips inside the stretch stay, they are the run's unsteadiness.
///
/// With no positive activity metric, every row counts.
pub fn load_phase(run: &Run) -> LoadPhase {
    let s = &run.series;
    let candidates = [
        view::throughput_metric(s),
        view::packet_rate_metric(s),
        s.total(n::INTR_PER_S),
        s.total(n::CS_PER_S),
    ];
    for metric in candidates.into_iter().flatten() {
        let max = metric
            .values
            .iter()
            .flatten()
            .copied()
            .filter(|v| v.is_finite())
            .fold(f64::NEG_INFINITY, f64::max);
        if max <= 0.0 {
            continue;
        }
        let threshold = max * LOAD_PHASE_THRESHOLD;
        let above = |v: &Option<f64>| v.is_some_and(|v| v >= threshold);
        let mut best = 0..0;
        let mut start = None;
        for (i, v) in metric.values.iter().enumerate() {
            match (above(v), start) {
                (true, None) => start = Some(i),
                (false, Some(st)) => {
                    if i - st > best.len() {
                        best = st..i;
                    }
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(st) = start {
            if metric.values.len() - st > best.len() {
                best = st..metric.values.len();
            }
        }
        let value = |i: usize| metric.values[i].unwrap_or(0.0);
        let mut stretch: Vec<f64> = best.clone().map(value).collect();
        stretch.sort_by(f64::total_cmp);
        let median = stats::quantile_sorted(&stretch, 0.5).unwrap_or(0.0);
        let floor = median * LOAD_PHASE_EDGE_TRIM;
        let (mut lo, mut hi) = (best.start, best.end);
        while lo < hi && value(lo) < floor {
            lo += 1;
        }
        while hi > lo && value(hi - 1) < floor {
            hi -= 1;
        }
        return LoadPhase {
            rows: (lo..hi).collect(),
            rule: format!(
                "the longest stretch of rows where {} ≥ {:.0} % of its maximum ({}), edges \
                 below {:.0} % of the stretch's median trimmed",
                metric.id,
                LOAD_PHASE_THRESHOLD * 100.0,
                fmt::value(max, metric.unit),
                LOAD_PHASE_EDGE_TRIM * 100.0
            ),
            metric: Some(metric.id.to_string()),
        };
    }
    LoadPhase {
        rows: (0..s.len()).collect(),
        rule: "all rows (no throughput, packet, interrupt or context-switch rate to tell the load phase)"
            .into(),
        metric: None,
    }
}

/// One run as the comparison saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    pub run_id: String,
    /// The workload kind, or how the run came to be (`imported freebsd-vmstat`).
    pub kind: String,
    /// `None` when the start time is unknown.
    pub started_utc: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub load_phase: PhaseSummary,
    /// The series metric used as throughput, if any.
    pub throughput_metric: Option<String>,
    /// The series metric used as packet rate, if any.
    pub packet_rate_metric: Option<String>,
}

/// The load phase in brief.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseSummary {
    pub rule: String,
    pub rows: usize,
    pub total_rows: usize,
    /// Start of the first row of the phase, seconds since the run's start.
    pub from_s: Option<f64>,
    /// End of the last row of the phase.
    pub to_s: Option<f64>,
}

/// One figure for both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// Stable machine name: `throughput_bits_per_s`, `bytes_per_cs`…
    pub key: String,
    pub label: String,
    /// Unit symbol, SI-prefixable: `bit/s`, `B`, `s`, `%`.
    pub unit: String,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// (b − a) / |a| × 100.
    pub change_pct: Option<f64>,
    /// Where A's value came from.
    pub source_a: Option<String>,
    /// Where B's value came from.
    pub source_b: Option<String>,
}

/// One search or sweep answer in each run, matched by size, point and bound: a UDP knee's loss
/// tolerance, or a TCP or request/response search's bound (`bound`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KneePair {
    pub size_bytes: usize,
    pub point: String,
    /// The UDP loss tolerance (0 for a TCP or request/response knee, whose bound is `bound`).
    pub loss_tolerance: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound: Option<netceil_model::SearchBound>,
    pub a: Option<netceil_model::Knee>,
    pub b: Option<netceil_model::Knee>,
    /// (b − a) / a × 100 of the rates, each in its knee's own unit (packets/s, goodput bit/s
    /// or transactions/s; knees of one bound share it).
    pub change_pct: Option<f64>,
}

/// What makes two knees the same question: size, point, and the bound with its kind, so a
/// 0.1 % retransmit budget never meets a 0.1 % loss tolerance.
fn knee_key(k: &netceil_model::Knee) -> (usize, String, u8, u64) {
    use netceil_model::SearchBound as B;
    let (kind, v) = match k.goal.as_ref().map(|g| g.bound) {
        None => (0, k.loss_tolerance),
        Some(B::Retransmits { max_ratio }) => (1, max_ratio),
        Some(B::P99 { max_s }) => (2, max_s),
    };
    (k.size_bytes, k.point.clone(), kind, v.to_bits())
}

/// The knees of two searches or sweeps, side by side: those of A in order, then B's others.
pub fn knee_pairs(a: &Run, b: &Run) -> Vec<KneePair> {
    let pair = |ka: Option<&netceil_model::Knee>, kb: Option<&netceil_model::Knee>| {
        let k = ka.or(kb).expect("one side of a pair");
        let change_pct = match (
            ka.and_then(tables::knee_rate),
            kb.and_then(tables::knee_rate),
        ) {
            (Some(x), Some(y)) if x > 0.0 => Some((y - x) / x * 100.0),
            _ => None,
        };
        KneePair {
            size_bytes: k.size_bytes,
            point: k.point.clone(),
            loss_tolerance: k.loss_tolerance,
            bound: k.goal.as_ref().map(|g| g.bound),
            a: ka.cloned(),
            b: kb.cloned(),
            change_pct,
        }
    };
    let mut out: Vec<KneePair> = a
        .knees
        .iter()
        .map(|ka| {
            pair(
                Some(ka),
                b.knees.iter().find(|kb| knee_key(kb) == knee_key(ka)),
            )
        })
        .collect();
    for kb in &b.knees {
        if !a.knees.iter().any(|ka| knee_key(ka) == knee_key(kb)) {
            out.push(pair(None, Some(kb)));
        }
    }
    out
}

/// Per-interval distribution of one metric over each load phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DistributionRow {
    pub key: String,
    pub label: String,
    pub unit: String,
    pub a: Option<Distribution>,
    pub b: Option<Distribution>,
}

/// The difference of one metric's per-interval mean, B − A, and whether it is significant.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    pub key: String,
    pub label: String,
    pub unit: String,
    pub test: Option<WelchTest>,
    /// p < [`ALPHA`]; `None` when no test could be run.
    pub significant: Option<bool>,
    /// Why there is no test.
    pub no_test_reason: Option<String>,
}

/// A finding named in the comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FindingBrief {
    pub cause: String,
    pub summary: String,
    pub confidence: f64,
}

/// Which findings (by cause) appear in one run only, and which in both.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FindingsDiff {
    pub only_a: Vec<FindingBrief>,
    pub only_b: Vec<FindingBrief>,
    pub both: Vec<String>,
}

/// Run A against run B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub a: Side,
    pub b: Side,
    /// Throughput, packet rate, loss, latency, transactions.
    pub headline: Vec<Figure>,
    /// Work per event and cost per work: bytes per context switch, packets per interrupt,
    /// CPU-seconds per Gbit, packets per second per busy core, over each load phase.
    pub normalized: Vec<Figure>,
    pub distributions: Vec<DistributionRow>,
    pub differences: Vec<Difference>,
    /// The statistical method behind [`Comparison::differences`], named.
    pub method: String,
    pub alpha: f64,
    /// The significant differences and steadiness, in sentences.
    pub summary: Vec<String>,
    pub findings: FindingsDiff,
    pub notes: Vec<String>,
    /// Two searches or sweeps: their answers side by side (empty otherwise).
    pub knees: Vec<KneePair>,
    /// Why the two runs measured different work, when they did (see [`unlike`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unlike: Option<String>,
}

/// Why two runs' figures measure different work, or `None` when they are alike: both
/// netceil workloads, of different kinds (a TCP stream against UDP datagrams, a request/response
/// run against either, a suite against one of its parts). A search and a sweep are alike (both
/// answer with knees); a watched or imported run is alike with anything, since what it
/// watched is what the comparison is for.
pub fn unlike(a: &Run, b: &Run) -> Option<String> {
    use netceil_model::WorkloadKind as K;
    let (ka, kb) = (a.workload.as_ref()?.kind, b.workload.as_ref()?.kind);
    let knees = |k| matches!(k, K::Search | K::Sweep);
    if knees(ka) && knees(kb) {
        // Both answer with knees: alike when their knees are rates of the same thing.
        let (sa, sb) = (tables::knee_subject(a)?, tables::knee_subject(b)?);
        return (sa != sb).then(|| {
            format!(
                "A's knees are the {sa} and B's the {sb}: different rates, so B vs A is not a \
                 change of one thing"
            )
        });
    }
    if ka == kb || ka == K::External || kb == K::External {
        return None;
    }
    Some(format!(
        "A is a {} run and B a {} run: their throughput, packet rate and loss count different \
         work, so B vs A is not a change of one thing",
        summary::kind(a),
        summary::kind(b)
    ))
}

/// Compares two runs with the default [`load_phase`].
pub fn compare(a: &Run, b: &Run) -> Comparison {
    compare_with(a, b, load_phase)
}

/// Everything one side needs, restricted to its load phase.
struct SideData<'a> {
    run: &'a Run,
    phase: LoadPhase,
    dt: Vec<f64>,
    throughput: Option<(String, Vec<Option<f64>>)>,
    known_bytes_per_s: Option<(f64, String)>,
    packet_rate: Option<(String, Vec<Option<f64>>)>,
    cs: Vec<Option<f64>>,
    intr: Vec<Option<f64>>,
    cpu_busy: Vec<Option<f64>>,
    busy_cores: Vec<Option<f64>>,
}

impl<'a> SideData<'a> {
    fn new(
        run: &'a Run,
        phase: LoadPhase,
        throughput: Option<&'a Metric>,
        packet_rate: Option<&'a Metric>,
    ) -> Self {
        let s = &run.series;
        let rows = &phase.rows;
        let all_dt = view::row_durations(s);
        let dt = rows
            .iter()
            .map(|&r| all_dt.get(r).copied().unwrap_or(0.0))
            .collect();
        let pick =
            |m: Option<&Metric>| m.map(|m| (m.id.to_string(), view::values_in(Some(m), rows)));
        let all_busy = view::busy_cores(run);
        SideData {
            run,
            dt,
            throughput: pick(throughput),
            known_bytes_per_s: view::known_throughput_bytes_per_s(run),
            packet_rate: pick(packet_rate),
            cs: view::values_in(s.total(n::CS_PER_S), rows),
            intr: view::values_in(s.total(n::INTR_PER_S), rows),
            cpu_busy: match view::cpu_busy_total(s) {
                Some((values, _)) => rows
                    .iter()
                    .map(|&r| values.get(r).copied().flatten())
                    .collect(),
                None => vec![None; rows.len()],
            },
            busy_cores: rows
                .iter()
                .map(|&r| all_busy.get(r).copied().flatten())
                .collect(),
            phase,
        }
    }

    fn side(&self) -> Side {
        let t = &self.run.series.t_s;
        let from_s = self
            .phase
            .rows
            .first()
            .map(|&r| if r == 0 { 0.0 } else { t[r - 1] });
        let to_s = self.phase.rows.last().map(|&r| t[r]);
        Side {
            run_id: self.run.run_id.clone(),
            kind: summary::kind_or_source(self.run),
            started_utc: summary::started_utc(self.run),
            labels: self.run.meta.labels.clone(),
            load_phase: PhaseSummary {
                rule: self.phase.rule.clone(),
                rows: self.phase.rows.len(),
                total_rows: t.len(),
                from_s,
                to_s,
            },
            throughput_metric: self.throughput.as_ref().map(|(id, _)| id.clone()),
            packet_rate_metric: self.packet_rate.as_ref().map(|(id, _)| id.clone()),
        }
    }

    fn throughput_values(&self) -> Option<&[Option<f64>]> {
        self.throughput.as_ref().map(|(_, v)| v.as_slice())
    }

    fn bytes_per_s_values(&self) -> Option<Vec<Option<f64>>> {
        self.throughput_values()
            .map(|v| v.iter().map(|x| x.map(|b| b / 8.0)).collect())
    }

    /// Headline throughput: the results' application rate, else an annotation or label, else
    /// the series.
    fn headline_throughput(&self) -> (Option<f64>, Option<String>) {
        if let Some(r) = &self.run.results {
            return (
                Some(r.rx_app_bits_per_s),
                Some("results: rate read by the application".into()),
            );
        }
        if let Some((bytes, source)) = &self.known_bytes_per_s {
            return (Some(bytes * 8.0), Some(source.clone()));
        }
        match &self.throughput {
            Some((id, v)) => (
                view::weighted_mean(v, &self.dt),
                Some(format!("time-weighted mean of {id} over the load phase")),
            ),
            None => (None, None),
        }
    }

    fn headline_packet_rate(&self) -> (Option<f64>, Option<String>) {
        if let Some(r) = self
            .run
            .results
            .as_ref()
            .filter(|r| summary::counts_packets(r))
        {
            return (
                Some(r.rx_app_pps),
                Some("results: packets read by the application".into()),
            );
        }
        match &self.packet_rate {
            Some((id, v)) => (
                view::weighted_mean(v, &self.dt),
                Some(format!("time-weighted mean of {id} over the load phase")),
            ),
            None => (None, None),
        }
    }

    /// Bytes per context switch: from the series if it has throughput, else from an
    /// annotation or label (or the results) divided by the mean context-switch rate.
    fn bytes_per_cs(&self) -> (Option<f64>, Option<String>) {
        if let Some(bytes) = self.bytes_per_s_values() {
            let id = self
                .throughput
                .as_ref()
                .map(|(id, _)| id.as_str())
                .unwrap_or("");
            return (
                view::weighted_ratio(&bytes, &self.cs, &self.dt),
                Some(format!("Σ {id}/8 ÷ Σ cs_per_s over the load phase")),
            );
        }
        let (bytes, source) = match (&self.known_bytes_per_s, &self.run.results) {
            (Some((b, source)), _) => (*b, source.clone()),
            (None, Some(r)) => (r.rx_app_bits_per_s / 8.0, "results".to_string()),
            (None, None) => return (None, None),
        };
        let cs = view::weighted_mean(&self.cs, &self.dt).filter(|c| *c > 0.0);
        (
            cs.map(|c| bytes / c),
            Some(format!("{source} ÷ mean cs_per_s over the load phase")),
        )
    }

    /// Per-interval bytes per context switch, for its distribution.
    fn bytes_per_cs_series(&self) -> Vec<f64> {
        let bytes: Vec<Option<f64>> = match (self.bytes_per_s_values(), &self.known_bytes_per_s) {
            (Some(b), _) => b,
            (None, Some((b, _))) => vec![Some(*b); self.cs.len()],
            (None, None) => return Vec::new(),
        };
        bytes
            .iter()
            .zip(&self.cs)
            .filter_map(|(b, c)| match (b, c) {
                (Some(b), Some(c)) if *c > 0.0 => Some(b / c),
                _ => None,
            })
            .collect()
    }

    /// Bit rate per row for cost figures: the series, or a constant known from a label.
    fn bits_for_cost(&self) -> Option<(Vec<Option<f64>>, String)> {
        if let Some((id, v)) = &self.throughput {
            return Some((v.clone(), id.clone()));
        }
        self.known_bytes_per_s
            .as_ref()
            .map(|(b, source)| (vec![Some(b * 8.0); self.dt.len()], source.clone()))
    }

    fn cpu_s_per_gbit(&self) -> (Option<f64>, Option<String>) {
        let Some((bits, source)) = self.bits_for_cost() else {
            return (None, None);
        };
        let gbits: Vec<Option<f64>> = bits.iter().map(|b| b.map(|b| b / 1e9)).collect();
        (
            view::weighted_ratio(&self.busy_cores, &gbits, &self.dt),
            Some(format!(
                "Σ busy cores·dt ÷ Σ {source}·dt / 10⁹ over the load phase"
            )),
        )
    }

    fn packets_per_interrupt(&self) -> (Option<f64>, Option<String>) {
        match &self.packet_rate {
            Some((id, v)) => (
                view::weighted_ratio(v, &self.intr, &self.dt),
                Some(format!("Σ {id} ÷ Σ intr_per_s over the load phase")),
            ),
            None => (None, None),
        }
    }

    fn pps_per_core(&self) -> (Option<f64>, Option<String>) {
        match &self.packet_rate {
            Some((id, v)) => (
                view::weighted_ratio(v, &self.busy_cores, &self.dt),
                Some(format!("Σ {id} ÷ Σ busy cores over the load phase")),
            ),
            None => (None, None),
        }
    }

    /// The per-interval samples of each compared metric, by key.
    fn samples(&self, key: &str) -> Vec<f64> {
        let present = |v: &[Option<f64>]| v.iter().flatten().copied().collect::<Vec<f64>>();
        match key {
            "throughput_bits_per_s" => self.throughput_values().map(present).unwrap_or_default(),
            "packet_rate_pps" => self
                .packet_rate
                .as_ref()
                .map(|(_, v)| present(v))
                .unwrap_or_default(),
            "cs_per_s" => present(&self.cs),
            "intr_per_s" => present(&self.intr),
            "cpu_busy_pct" => present(&self.cpu_busy),
            "bytes_per_cs" => self.bytes_per_cs_series(),
            _ => Vec::new(),
        }
    }
}

/// The metrics whose per-interval distributions are compared: key, label, unit symbol.
const DISTRIBUTED: [(&str, &str, &str); 6] = [
    ("throughput_bits_per_s", "throughput", "bit/s"),
    ("packet_rate_pps", "packet rate", "pkt/s"),
    ("cs_per_s", "context switches", "/s"),
    ("intr_per_s", "interrupts", "/s"),
    ("cpu_busy_pct", "CPU busy (all CPUs)", "%"),
    ("bytes_per_cs", "bytes per context switch", "B"),
];

fn figure(
    key: &str,
    label: &str,
    unit: &str,
    (a, source_a): (Option<f64>, Option<String>),
    (b, source_b): (Option<f64>, Option<String>),
) -> Figure {
    let change_pct = match (a, b) {
        (Some(a), Some(b)) if a != 0.0 && a.is_finite() && b.is_finite() => {
            Some((b - a) / a.abs() * 100.0)
        }
        _ => None,
    };
    Figure {
        key: key.into(),
        label: label.into(),
        unit: unit.into(),
        a,
        b,
        change_pct,
        source_a: a.and(source_a),
        source_b: b.and(source_b),
    }
}

fn from_results<F: Fn(&netceil_model::Results) -> Option<f64>>(
    run: &Run,
    what: &str,
    f: F,
) -> (Option<f64>, Option<String>) {
    match run.results.as_ref().and_then(&f) {
        Some(v) => (Some(v), Some(format!("results: {what}"))),
        None => (None, None),
    }
}

/// The far end of `--to`, as it counted itself: what the far_end finding tells the reader to
/// compare after a change there.
fn far_figures(a: &Run, b: &Run) -> Vec<Figure> {
    type FarPick = fn(&netceil_model::FarEnd, &netceil_model::Results) -> Option<f64>;
    let far = |run: &Run, what: &str, pick: FarPick| {
        from_results(run, what, |r| r.far.as_deref().and_then(|f| pick(f, r)))
    };
    let far_figures: [(&str, &str, &str, &str, FarPick); 5] = [
        (
            "far_busiest_core_busy_pct",
            "far end: busiest core busy",
            "%",
            "far.cpu[].busy_pct, the highest",
            |f, _| f.cpu.iter().map(|c| c.busy_pct).reduce(f64::max),
        ),
        (
            "far_busiest_core_softirq_pct",
            "far end: busiest core in softirq",
            "%",
            "far.cpu[].softirq_pct, the highest",
            |f, _| f.cpu.iter().map(|c| c.softirq_pct).reduce(f64::max),
        ),
        (
            "far_lost",
            "far end: datagrams lost",
            "pkt",
            "far.app.udp_lost",
            |f, _| (f.app.udp_packets > 0 || f.app.udp_lost > 0).then_some(f.app.udp_lost as f64),
        ),
        (
            "far_socket_drops",
            "far end: socket drops",
            "pkt",
            "far.app.udp_socket_drops",
            |f, _| f.app.udp_socket_drops.map(|d| d as f64),
        ),
        (
            "far_never_arrived",
            "sent, not counted at the far interface",
            "pkt",
            "tx_packets − far.kernel.iface_rx_packets",
            |f, r| {
                f.kernel
                    .iface_rx_packets
                    .filter(|_| r.tx_packets > 0)
                    .map(|k| r.tx_packets.saturating_sub(k) as f64)
            },
        ),
    ];
    far_figures
        .into_iter()
        .map(|(key, label, unit, what, pick)| {
            figure(key, label, unit, far(a, what, pick), far(b, what, pick))
        })
        .collect()
}

/// Figures per unit of work: bytes per context switch, packets per interrupt, CPU per Gbit,
/// packets per busy core (those either run has).
fn normalized_figures(da: &SideData<'_>, db: &SideData<'_>) -> Vec<Figure> {
    let mut normalized = vec![
        figure(
            "bytes_per_cs",
            "bytes per context switch",
            "B",
            da.bytes_per_cs(),
            db.bytes_per_cs(),
        ),
        figure(
            "packets_per_interrupt",
            "packets per interrupt",
            "pkt",
            da.packets_per_interrupt(),
            db.packets_per_interrupt(),
        ),
        figure(
            "cpu_s_per_gbit",
            "CPU-seconds per Gbit",
            "CPU-s/Gbit",
            da.cpu_s_per_gbit(),
            db.cpu_s_per_gbit(),
        ),
        figure(
            "pps_per_core",
            "packets/s per busy core",
            "pkt/s",
            da.pps_per_core(),
            db.pps_per_core(),
        ),
    ];
    normalized.retain(|f| f.a.is_some() || f.b.is_some());
    normalized
}

/// Each distributed series both runs have: its distribution in each, and Welch's test of
/// the difference (or why there is none).
fn distributions_and_differences(
    da: &SideData<'_>,
    db: &SideData<'_>,
) -> (Vec<DistributionRow>, Vec<Difference>) {
    let mut distributions = Vec::new();
    let mut differences = Vec::new();
    for (key, label, unit) in DISTRIBUTED {
        let (sa, sb) = (da.samples(key), db.samples(key));
        if sa.is_empty() && sb.is_empty() {
            continue;
        }
        distributions.push(DistributionRow {
            key: key.into(),
            label: label.into(),
            unit: unit.into(),
            a: Distribution::of(&sa),
            b: Distribution::of(&sb),
        });
        let (test, reason) = match stats::welch_t_test(&sa, &sb, CONFIDENCE) {
            Ok(t) => (Some(t), None),
            Err(e) => (None, Some(e.to_string())),
        };
        differences.push(Difference {
            key: key.into(),
            label: label.into(),
            unit: unit.into(),
            significant: test.as_ref().map(|t| t.p_value < ALPHA),
            test,
            no_test_reason: reason,
        });
    }

    (distributions, differences)
}

/// Compares two runs, with `phase` deciding which rows of each series count as under load.
pub fn compare_with(a: &Run, b: &Run, phase: impl Fn(&Run) -> LoadPhase) -> Comparison {
    let (thr_a, thr_b) = view::throughput_pair(&a.series, &b.series);
    let (pps_a, pps_b) = view::packet_rate_pair(&a.series, &b.series);
    let da = SideData::new(a, phase(a), thr_a, pps_a);
    let db = SideData::new(b, phase(b), thr_b, pps_b);

    let mut headline = vec![
        figure(
            "throughput_bits_per_s",
            "throughput",
            "bit/s",
            da.headline_throughput(),
            db.headline_throughput(),
        ),
        figure(
            "packet_rate_pps",
            "packet rate",
            "pkt/s",
            da.headline_packet_rate(),
            db.headline_packet_rate(),
        ),
        figure(
            "loss_pct",
            "lost",
            "%",
            from_results(a, "lost / sent", summary::loss_pct),
            from_results(b, "lost / sent", summary::loss_pct),
        ),
    ];
    let latency = |run: &Run, pick: fn(&netceil_model::LatencySummary) -> f64, what: &str| {
        from_results(run, what, |r| r.latency_us.as_ref().map(|l| pick(l) * 1e-6))
    };
    headline.push(figure(
        "latency_p50_s",
        "latency p50",
        "s",
        latency(a, |l| l.p50, "latency p50"),
        latency(b, |l| l.p50, "latency p50"),
    ));
    headline.push(figure(
        "latency_p99_s",
        "latency p99",
        "s",
        latency(a, |l| l.p99, "latency p99"),
        latency(b, |l| l.p99, "latency p99"),
    ));
    headline.push(figure(
        "transactions_per_s",
        "transactions",
        "/s",
        from_results(a, "transactions per second", |r| r.transactions_per_s),
        from_results(b, "transactions per second", |r| r.transactions_per_s),
    ));
    headline.extend(far_figures(a, b));
    headline.retain(|f| f.a.is_some() || f.b.is_some());

    let normalized = normalized_figures(&da, &db);

    let (distributions, differences) = distributions_and_differences(&da, &db);

    let summary = summarize(&distributions, &differences);
    let findings = findings_diff(a, b);
    let notes = notes(&da, &db);
    Comparison {
        a: da.side(),
        b: db.side(),
        headline,
        normalized,
        distributions,
        differences,
        method: format!(
            "{}. Intervals are treated as independent samples; consecutive intervals of a \
             series are correlated, which makes the p-values optimistic.",
            stats::WELCH_METHOD
        ),
        alpha: ALPHA,
        summary,
        findings,
        notes,
        knees: knee_pairs(a, b),
        unlike: unlike(a, b),
    }
}

/// Sentences for the reader: each significant difference, and which run was steadier.
fn summarize(distributions: &[DistributionRow], differences: &[Difference]) -> Vec<String> {
    let mut out = Vec::new();
    for d in differences {
        let Some(t) = &d.test else { continue };
        let rel = (t.mean_a != 0.0)
            .then(|| fmt::change(t.difference / t.mean_a.abs() * 100.0, Unit::Percent))
            .map(|c| format!(" ({c})"))
            .unwrap_or_default();
        if d.significant == Some(true) {
            let dir = if t.difference > 0.0 {
                "higher"
            } else {
                "lower"
            };
            out.push(format!(
                "{}: B is {dir} than A by {}{rel}, significant (p {}).",
                d.label,
                difference_value(t.difference.abs(), &d.unit),
                p_phrase(t.p_value)
            ));
        } else {
            out.push(format!(
                "{}: no significant difference (B − A = {}{rel}, p {}).",
                d.label,
                difference_value(t.difference, &d.unit),
                p_phrase(t.p_value)
            ));
        }
    }
    for d in distributions {
        if let (Some(a), Some(b)) = (
            d.a.as_ref().and_then(|x| x.cv),
            d.b.as_ref().and_then(|x| x.cv),
        ) {
            // Within 10 % of each other the CVs say nothing about steadiness.
            let which = if b < a * STEADIER_CV_RATIO {
                "B was steadier"
            } else if a < b * STEADIER_CV_RATIO {
                "A was steadier"
            } else {
                "about equally steady"
            };
            out.push(format!(
                "{}: {which} (coefficient of variation A {:.3}, B {:.3}).",
                d.label, a, b
            ));
        }
    }
    out
}

/// A p-value: `0.031`, `3.1e-4`, `< 1e-6`. Not a unit's figure but a probability, printed
/// to the precision the t-test's distribution gives, with its floor spelled out.
pub(crate) fn p_value(p: f64) -> String {
    if p < 1e-6 {
        "< 1e-6".into()
    } else if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

fn p_phrase(p: f64) -> String {
    let s = p_value(p);
    if s.starts_with('<') {
        s
    } else {
        format!("= {s}")
    }
}

/// A figure's value by its unit symbol: as [`fmt::value`] writes the [`Unit`] of that
/// symbol, or with an SI prefix before a symbol no `Unit` has (`pkt`, `CPU-s/Gbit`).
pub(crate) fn figure_value(v: f64, unit: &str) -> String {
    match Unit::from_symbol(unit) {
        Some(unit) => fmt::value(v, unit),
        None => fmt::with_symbol(v, unit),
    }
}

/// A difference between two figures: percentages differ by percentage points.
pub(crate) fn difference_value(v: f64, unit: &str) -> String {
    if unit == "%" {
        format!("{} pp", fmt::plain(v))
    } else {
        figure_value(v, unit)
    }
}

fn findings_diff(a: &Run, b: &Run) -> FindingsDiff {
    let brief = |f: &netceil_model::Finding| FindingBrief {
        cause: f.cause.to_string(),
        summary: f.summary.clone(),
        confidence: f.confidence,
    };
    let has =
        |run: &Run, cause: &netceil_model::Cause| run.findings.iter().any(|f| f.cause == *cause);
    let mut both: Vec<String> = a
        .findings
        .iter()
        .filter(|f| has(b, &f.cause))
        .map(|f| f.cause.to_string())
        .collect();
    both.dedup();
    FindingsDiff {
        only_a: a
            .findings
            .iter()
            .filter(|f| !has(b, &f.cause))
            .map(brief)
            .collect(),
        only_b: b
            .findings
            .iter()
            .filter(|f| !has(a, &f.cause))
            .map(brief)
            .collect(),
        both,
    }
}

fn notes(a: &SideData<'_>, b: &SideData<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, d) in [("A", a), ("B", b)] {
        if !d.run.parts.is_empty() {
            out.push(format!(
                "{name} is a suite run of {} parts: its headline figures are its top-level \
                 results and its series covers every part; compare the parts one by one for \
                 the others.",
                d.run.parts.len()
            ));
        }
        if d.throughput.is_none() {
            if let Some((bytes, source)) = &d.known_bytes_per_s {
                out.push(format!(
                    "{name} has no throughput in its series; its {source} ({}) stands for \
                     the whole load phase.",
                    fmt::value(*bytes, Unit::BytesPerSecond)
                ));
            }
        }
        if d.phase.rows.len() < 2 {
            out.push(format!(
                "{name}'s load phase has {} interval(s): too few for distributions and tests.",
                d.phase.rows.len()
            ));
        }
    }
    let (ia, ib) = (a.run.series.interval_s, b.run.series.interval_s);
    if ia > 0.0 && ib > 0.0 && (ia - ib).abs() > 1e-9 * ia.max(ib) {
        out.push(format!(
            "The runs were sampled at different intervals (A {} s, B {} s): per-interval \
             spreads are not directly comparable.",
            fmt::number(ia),
            fmt::number(ib)
        ));
    }
    if let (Some(ta), Some(tb)) = (&a.throughput, &b.throughput) {
        if ta.0 != tb.0 {
            out.push(format!(
                "Throughput comes from different metrics: A {}, B {}.",
                ta.0, tb.0
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Run {
        let path = format!(
            "{}/../../tests/fixtures/runs/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    #[test]
    fn runs_of_different_workloads_are_flagged_and_alike_ones_are_not() {
        let (tcp, udp) = (fixture("tcp"), fixture("udp"));
        let why = unlike(&tcp, &udp).expect("tcp against udp");
        assert!(why.contains("A is a tcp run and B a udp run"), "{why}");
        let c = compare(&tcp, &udp);
        assert_eq!(c.unlike.as_deref(), Some(why.as_str()));
        assert!(crate::compare_table(&c).starts_with("warning: A is a tcp run"));
        assert!(crate::compare_markdown(&c).contains("**Warning:** A is a tcp run"));
        let html = crate::html_report(&[tcp.clone(), udp.clone()]);
        assert!(
            html.contains("<strong>Warning:</strong> A is a tcp run"),
            "the HTML comparison warns too"
        );
        assert_eq!(unlike(&udp, &udp), None);
        assert_eq!(unlike(&fixture("search"), &fixture("sweep")), None);
        // A run with no workload of netceil's (imported, watched) is alike with anything.
        let mut imported = udp.clone();
        imported.workload = None;
        assert_eq!(unlike(&tcp, &imported), None);
        assert_eq!(compare(&udp, &udp).unlike, None);
    }

    #[test]
    fn p_values_and_figures() {
        assert_eq!(p_value(0.031_24), "0.031");
        assert_eq!(p_value(3.1e-4), "3.1e-4");
        assert_eq!(p_value(1e-9), "< 1e-6");
        assert_eq!(figure_value(172_235.3, "pkt/s"), "172 kpps");
        assert_eq!(figure_value(0.0123, "s"), "12.3 ms");
        assert_eq!(figure_value(12_300.0, "pkt"), "12.3 kpkt");
        assert_eq!(difference_value(-2.5, "%"), "-2.50 pp");
    }
}
