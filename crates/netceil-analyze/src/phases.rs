//! Phases: which rows of a series were under load.
//!
//! A log usually starts and ends idle (the seed vmstat captures have idle heads and tails), and
//! a transfer takes a few seconds to ramp up. Averaging over all rows would mix those in and
//! understate every rate, so every rule averages over the **load** phase only.
//!
//! The split keys on one metric, the first that shows a load, in this order:
//! 1. the workload's own figures (`load_rx_bits_per_s`, `load_rx_pps`, …): zero when idle;
//! 2. the bytes its TCP connections had acked (sock_diag), from 125 kB/s (1 Mbit/s): less is
//!    a control connection beside the real traffic, such as iperf3's for a UDP test;
//! 3. the busiest interface's bit rate, then packet rate: background traffic is ignored below
//!    1 Mbit/s or 1000 pkt/s;
//! 4. activity: `cs_per_s`, `intr_per_s`, `cpu_busy_pct` (imported logs without throughput),
//!    which must rise at least 2× above their idle level (5th percentile) to count.
//!
//! With `idle` the idle level and `plateau` the median of the rows above the midpoint between
//! idle and the 90th percentile, the load phase is the longest stretch of rows at or above
//! `idle + 0.8 × (plateau − idle)`, allowing single-row dips (one bad second does not end a
//! transfer; two do). The ramp is the run of rows before it that are above
//! `idle + 0.2 × (plateau − idle)`; idle is what precedes the ramp; the tail is everything
//! after the load phase (ramp-down and idle).

use std::ops::Range;

use netceil_model::{names as n, Metric, MetricId, Series, Unit};

use crate::stats::{median, present, quantile};
use netceil_model::fmt;

/// How far from idle to plateau a row must be to count as load.
pub const LOAD_FRACTION: f64 = 0.8;
/// How far from idle to plateau a row must be to count as ramp (before the load phase).
pub const RAMP_FRACTION: f64 = 0.2;
/// Rows below the load threshold that a stretch may cross without ending.
pub const MAX_DIP_ROWS: usize = 1;

/// A series split into contiguous idle, ramp, load and tail row ranges (`idle.end ==
/// ramp.start`, `ramp.end == load.start`, `load.end == tail.start`).
#[derive(Debug, Clone, PartialEq)]
pub struct Phases {
    /// The metric the split keyed on; `None` when no metric showed a load.
    pub key: Option<MetricId>,
    pub idle: Range<usize>,
    pub ramp: Range<usize>,
    /// Empty when no load was found.
    pub load: Range<usize>,
    pub tail: Range<usize>,
    /// The key's idle level (0 for throughput keys, whose idle is no traffic).
    pub idle_level: Option<f64>,
    /// The key's median over the load phase.
    pub load_level: Option<f64>,
    /// How the split was made, in words.
    pub rule: String,
}

impl Phases {
    /// True when a load phase was found.
    pub fn has_load(&self) -> bool {
        !self.load.is_empty()
    }

    /// The load phase as seconds since the series' start, `(from, to]`.
    pub fn load_window_s(&self, series: &Series) -> Option<(f64, f64)> {
        row_window(series, &self.load)
    }

    /// No load: every row is idle.
    fn none(rows: usize, rule: String) -> Phases {
        Phases {
            key: None,
            idle: 0..rows,
            ramp: rows..rows,
            load: rows..rows,
            tail: rows..rows,
            idle_level: None,
            load_level: None,
            rule,
        }
    }
}

/// The time span `(from, to]` covered by a range of rows: row `i` covers
/// `(t_s[i-1], t_s[i]]`, the first row `(0, t_s[0]]`.
pub fn row_window(series: &Series, rows: &Range<usize>) -> Option<(f64, f64)> {
    if rows.is_empty() || rows.end > series.t_s.len() {
        return None;
    }
    let from = if rows.start == 0 {
        0.0
    } else {
        series.t_s[rows.start - 1]
    };
    Some((from, series.t_s[rows.end - 1]))
}

/// What kind of metric a key is: it decides the idle level and what counts as a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    /// The workload's own counts: any traffic is load.
    Workload,
    /// Interface counters: background traffic below a floor is not load.
    Traffic,
    /// cs, interrupts, CPU: must rise clearly above their own idle level.
    Activity,
}

/// The metrics to try, in order of preference.
fn candidates(series: &Series) -> Vec<(&Metric, KeyKind)> {
    let mut out = Vec::new();
    for name in [
        n::LOAD_RX_BITS_PER_S,
        n::LOAD_RX_PPS,
        n::LOAD_TRANSACTIONS_PER_S,
        n::LOAD_TX_BITS_PER_S,
        n::LOAD_TX_PPS,
    ] {
        if let Some(m) = series.total(name) {
            out.push((m, KeyKind::Workload));
        }
    }
    // The workload's own TCP connections (sock_diag): its traffic, in whatever network
    // namespace it ran, once it is more than a control connection's few bytes (iperf3's UDP
    // tests keep one beside the datagrams).
    if let Some(m) = series.total(n::TCP_BYTES_ACKED_PER_S) {
        out.push((m, KeyKind::Traffic));
    }
    for names in [
        [n::IFACE_RX_BITS_PER_S, n::IFACE_TX_BITS_PER_S],
        [n::IFACE_RX_PPS, n::IFACE_TX_PPS],
    ] {
        if let Some(m) = busiest(series, &names) {
            out.push((m, KeyKind::Traffic));
        }
    }
    for name in [n::CS_PER_S, n::INTR_PER_S, n::CPU_BUSY_PCT] {
        if let Some(m) = series.total(name) {
            out.push((m, KeyKind::Activity));
        }
    }
    out
}

/// The metric among these names (any labels) with the largest mean: the busiest interface
/// and direction.
pub(crate) fn busiest<'a>(series: &'a Series, names: &[&str]) -> Option<&'a Metric> {
    series
        .metrics
        .iter()
        .filter(|m| names.contains(&m.id.name.as_str()))
        .filter_map(|m| crate::stats::mean(&present(&m.values)).map(|v| (m, v)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(m, _)| m)
}

/// Splits a series into idle, ramp, load and tail (see the module header for the rule).
pub fn phases(series: &Series) -> Phases {
    let rows = series.len();
    let mut tried = Vec::new();
    for (metric, kind) in candidates(series) {
        match split(&metric.values, kind, metric.unit) {
            Ok(mut p) => {
                p.rule = format!("keyed on {}: {}", metric.id, p.rule);
                p.key = Some(metric.id.clone());
                return p;
            }
            Err(why) => tried.push(format!("{}: {why}", metric.id)),
        }
    }
    let rule = if tried.is_empty() {
        "no throughput, packet-rate or activity metric to key on".to_string()
    } else {
        format!("no load found ({})", tried.join("; "))
    };
    Phases::none(rows, rule)
}

/// The split on one column, or why it shows no load.
fn split(values: &[Option<f64>], kind: KeyKind, unit: Unit) -> Result<Phases, String> {
    let xs = present(values);
    let top = quantile(&xs, 0.9).ok_or("no values")?;
    let idle = match kind {
        KeyKind::Workload | KeyKind::Traffic => 0.0,
        KeyKind::Activity => quantile(&xs, 0.05).unwrap_or(0.0),
    };
    let mid = idle + (top - idle) / 2.0;
    let upper: Vec<f64> = xs.iter().copied().filter(|&v| v >= mid).collect();
    let plateau = median(&upper).ok_or("no values")?;
    match kind {
        KeyKind::Workload if plateau <= 0.0 => return Err("zero throughout".into()),
        KeyKind::Traffic => {
            let floor = match unit {
                Unit::BitsPerSecond => 1e6,
                Unit::BytesPerSecond => 125e3,
                Unit::PacketsPerSecond => 1e3,
                _ => 0.0,
            };
            if plateau < floor || plateau <= 0.0 {
                return Err(format!(
                    "{} is background traffic at most",
                    fmt::number(plateau)
                ));
            }
        }
        KeyKind::Activity => {
            let min_rise = if unit == Unit::Percent { 10.0 } else { 1000.0 };
            if plateau < 2.0 * idle || plateau - idle < min_rise {
                return Err(format!(
                    "no rise: plateau {} against idle {}",
                    fmt::number(plateau),
                    fmt::number(idle)
                ));
            }
        }
        KeyKind::Workload => {}
    }
    let enter = idle + LOAD_FRACTION * (plateau - idle);
    let min_rows = if kind == KeyKind::Activity && values.len() >= 4 {
        2
    } else {
        1
    };
    let ramp_floor = idle + RAMP_FRACTION * (plateau - idle);
    // A transfer's rate wobbles (a TCP flow's window saws up and down with each loss): rows
    // that stay above the ramp floor do not end it, only a fall towards idle does.
    let hold = match kind {
        KeyKind::Workload | KeyKind::Traffic => ramp_floor,
        KeyKind::Activity => enter,
    };
    // The workload's own figures are zero when it does not run: a rate it still reports
    // above the floor after its peak is the same transfer, slowed (a path's loss biting), not
    // its end. An interface's counters carry others' traffic too, so there the load ends at
    // the last row near the plateau.
    let end = if kind == KeyKind::Workload {
        hold
    } else {
        enter
    };
    let load =
        longest_stretch(values, enter, hold, end, min_rows).ok_or("no stretch of load rows")?;
    let mut ramp_start = load.start;
    while ramp_start > 0 && values[ramp_start - 1].is_some_and(|v| v >= ramp_floor) {
        ramp_start -= 1;
    }
    let n = values.len();
    let load_level = median(&present(&values[load.clone()]));
    Ok(Phases {
        key: None,
        idle: 0..ramp_start,
        ramp: ramp_start..load.start,
        load: load.clone(),
        tail: load.end..n,
        idle_level: Some(idle),
        load_level,
        rule: format!(
            "load = the longest stretch from a row at ≥ {} ({:.0} % of the way from idle {} to plateau {}) to the last row at ≥ {}, crossing rows at ≥ {} and single-row dips below",
            fmt::number(enter),
            LOAD_FRACTION * 100.0,
            fmt::number(idle),
            fmt::number(plateau),
            fmt::number(end),
            fmt::number(hold)
        ),
    })
}

/// The longest run of rows that starts at or above `threshold` and ends at a row at or above
/// `end` (`hold` ≤ `end` ≤ `threshold`), crossing rows at or above `hold` and at most
/// [`MAX_DIP_ROWS`] consecutive rows below it (or missing), with at least `min_rows` rows at
/// or above `threshold`. Ties go to the earlier stretch.
fn longest_stretch(
    values: &[Option<f64>],
    threshold: f64,
    hold: f64,
    end: f64,
    min_rows: usize,
) -> Option<Range<usize>> {
    let above = |i: usize| values[i].is_some_and(|v| v >= threshold);
    let held = |i: usize| values[i].is_some_and(|v| v >= hold);
    let ends = |i: usize| values[i].is_some_and(|v| v >= end);
    let mut best: Option<(Range<usize>, usize)> = None;
    let mut i = 0;
    while i < values.len() {
        if !above(i) {
            i += 1;
            continue;
        }
        let start = i;
        let mut last = i;
        let mut last_held = i;
        let mut count = 1;
        let mut j = i + 1;
        while j < values.len() && j - last_held <= MAX_DIP_ROWS + 1 {
            if above(j) {
                count += 1;
            }
            if ends(j) {
                last = j;
            }
            if held(j) {
                last_held = j;
            }
            j += 1;
        }
        let len = last + 1 - start;
        if count >= min_rows && best.as_ref().is_none_or(|(r, _)| len > r.len()) {
            best = Some((start..last + 1, count));
        }
        i = last + 1;
    }
    best.map(|(r, _)| r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_model::MetricId;

    fn series(name: &str, unit: Unit, values: &[f64]) -> Series {
        let mut s = Series::new(1.0);
        for (i, v) in values.iter().enumerate() {
            s.push_row(i as f64 + 1.0);
            s.set(&MetricId::new(name), unit, *v);
        }
        s
    }

    /// A tiny deterministic noise source: the tests need noise, not randomness.
    fn noise(i: usize, amplitude: f64) -> f64 {
        let x = ((i as f64 + 1.0) * 12.9898).sin() * 43758.5453;
        (x - x.floor() - 0.5) * 2.0 * amplitude
    }

    #[test]
    fn idle_head_ramp_load_tail() {
        let mut v = vec![300.0, 310.0, 290.0];
        v.extend([6000.0, 15000.0]);
        v.extend((0..20).map(|i| 25000.0 + noise(i, 1500.0)));
        v.extend([9000.0, 300.0, 305.0]);
        let s = series(n::CS_PER_S, Unit::PerSecond, &v);
        let p = phases(&s);
        assert_eq!(p.key, Some(MetricId::new(n::CS_PER_S)));
        assert_eq!(p.idle, 0..3);
        assert_eq!(p.ramp, 3..5);
        assert_eq!(p.load, 5..25);
        assert_eq!(p.tail, 25..28);
        let level = p.load_level.unwrap();
        assert!((level - 25000.0).abs() < 1500.0, "{level}");
        assert_eq!(p.load_window_s(&s), Some((5.0, 25.0)));
    }

    #[test]
    fn a_control_connections_few_bytes_are_not_the_load() {
        // iperf3 -u: its TCP control connection acks a few hundred bytes in the first second;
        // the datagrams show on the interface for five.
        let mut s = series(
            n::TCP_BYTES_ACKED_PER_S,
            Unit::BytesPerSecond,
            &[123.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        );
        for (row, v) in [2.9e8, 3e8, 3e8, 3e8, 3e8, 0.0].into_iter().enumerate() {
            let id = MetricId::new(n::IFACE_RX_BITS_PER_S).with(n::LABEL_IFACE, "lo");
            s.set_at(row, &id, Unit::BitsPerSecond, v);
        }
        let p = phases(&s);
        assert_eq!(
            p.key.map(|k| k.name),
            Some(n::IFACE_RX_BITS_PER_S.to_string())
        );
        assert_eq!(p.load, 0..5);
        // A real transfer keys on the connection's own bytes.
        let s = series(
            n::TCP_BYTES_ACKED_PER_S,
            Unit::BytesPerSecond,
            &[0.0, 1e8, 1e8, 1e8, 0.0],
        );
        assert_eq!(phases(&s).load, 1..4);
    }

    #[test]
    fn single_row_dip_does_not_end_the_load_but_two_do() {
        let mut v = vec![0.0; 2];
        v.extend([100.0, 100.0, 100.0, 5.0, 100.0, 100.0, 5.0, 5.0, 100.0, 0.0]);
        let s = series(n::LOAD_RX_PPS, Unit::PacketsPerSecond, &v);
        let p = phases(&s);
        assert_eq!(p.load, 2..8);
        assert_eq!(p.tail, 8..12);
    }

    #[test]
    fn a_rate_that_saws_between_a_third_and_all_of_its_peak_is_one_load_phase() {
        // One TCP flow on a lossy path: its window, and so its rate, is cut by a third at each
        // loss and grows back. The transfer runs throughout; idle rows around it do not.
        let mut v = vec![0.0; 2];
        v.extend([
            60.0, 100.0, 70.0, 49.0, 34.0, 45.0, 58.0, 80.0, 100.0, 70.0, 40.0, 90.0, 0.0, 0.0,
        ]);
        let s = series(n::LOAD_TX_BITS_PER_S, Unit::BitsPerSecond, &v);
        let p = phases(&s);
        assert_eq!(p.load, 2..14, "{}", p.rule);
        assert_eq!(p.idle, 0..2);
        assert_eq!(p.tail, 14..16);
    }

    #[test]
    fn a_transfer_that_slows_after_its_peak_is_still_load_but_an_interfaces_tail_is_not() {
        // A flow on a lossy path starts fast and settles at a third of its peak: the workload
        // still runs. On an interface's counter a low tail could be someone else's traffic.
        let mut v = vec![0.0; 2];
        v.extend([100.0, 100.0, 95.0, 40.0, 35.0, 38.0, 33.0, 36.0, 0.0]);
        let own = phases(&series(n::LOAD_TX_BITS_PER_S, Unit::BitsPerSecond, &v));
        assert_eq!(own.load, 2..10, "{}", own.rule);
        let wire: Vec<f64> = v.iter().map(|x| x * 1e7).collect();
        let iface = phases(&series(n::IFACE_RX_BITS_PER_S, Unit::BitsPerSecond, &wire));
        assert_eq!(iface.load, 2..5, "{}", iface.rule);
    }

    #[test]
    fn idle_machine_with_noise_has_no_load() {
        let cs: Vec<f64> = (0..30).map(|i| 850.0 + noise(i, 120.0)).collect();
        let mut s = series(n::CS_PER_S, Unit::PerSecond, &cs);
        for (i, row) in (0..30).enumerate() {
            s.set_at(
                row,
                &MetricId::new(n::INTR_PER_S),
                Unit::PerSecond,
                700.0 + noise(i + 7, 200.0),
            );
            s.set_at(
                row,
                &MetricId::new(n::CPU_BUSY_PCT),
                Unit::Percent,
                3.0 + noise(i + 3, 2.0).abs(),
            );
            let lo = MetricId::new(n::IFACE_RX_BITS_PER_S).with("iface", "eth0");
            s.set_at(row, &lo, Unit::BitsPerSecond, 20_000.0 + noise(i, 5000.0));
        }
        let p = phases(&s);
        assert!(!p.has_load(), "{p:?}");
        assert_eq!(p.idle, 0..30);
        assert!(p.rule.contains("background traffic"), "{}", p.rule);
    }

    #[test]
    fn busy_cpu_without_a_rise_is_not_load() {
        let s = series(n::CPU_BUSY_PCT, Unit::Percent, &[100.0, 99.5, 100.0]);
        assert!(!phases(&s).has_load());
    }

    #[test]
    fn whole_run_under_load_is_all_load() {
        let v: Vec<f64> = (0..10).map(|i| 1e9 + noise(i, 5e7)).collect();
        let s = series(n::LOAD_RX_BITS_PER_S, Unit::BitsPerSecond, &v);
        let p = phases(&s);
        assert_eq!(p.load, 0..10);
        assert!(p.idle.is_empty() && p.ramp.is_empty() && p.tail.is_empty());
        assert_eq!(p.load_window_s(&s), Some((0.0, 10.0)));
    }

    #[test]
    fn throughput_wins_over_activity() {
        let mut s = series(
            n::CS_PER_S,
            Unit::PerSecond,
            &[300.0, 20000.0, 20000.0, 300.0],
        );
        for (row, v) in [0.0, 0.0, 5e8, 0.0].into_iter().enumerate() {
            s.set_at(
                row,
                &MetricId::new(n::IFACE_RX_BITS_PER_S).with("iface", "eth0"),
                Unit::BitsPerSecond,
                v,
            );
        }
        let p = phases(&s);
        assert_eq!(p.key.unwrap().name, n::IFACE_RX_BITS_PER_S);
        assert_eq!(p.load, 2..3);
    }

    #[test]
    fn the_longest_of_two_bursts_is_the_load() {
        let v = [0.0, 50.0, 50.0, 0.0, 0.0, 0.0, 50.0, 50.0, 50.0, 50.0, 0.0];
        let s = series(n::LOAD_RX_PPS, Unit::PacketsPerSecond, &v);
        assert_eq!(phases(&s).load, 6..10);
    }

    #[test]
    fn a_lone_spike_in_activity_is_not_load() {
        let mut v = vec![800.0; 12];
        v[5] = 9000.0;
        let s = series(n::CS_PER_S, Unit::PerSecond, &v);
        assert!(!phases(&s).has_load());
    }

    #[test]
    fn missing_values_are_gaps_not_zeros() {
        let mut s = Series::new(1.0);
        for (i, v) in [
            Some(0.0),
            Some(10.0),
            None,
            Some(10.0),
            Some(10.0),
            None,
            None,
            Some(10.0),
        ]
        .into_iter()
        .enumerate()
        {
            s.push_row(i as f64 + 1.0);
            if let Some(v) = v {
                s.set(&MetricId::new(n::LOAD_RX_PPS), Unit::PacketsPerSecond, v);
            }
        }
        assert_eq!(phases(&s).load, 1..5);
    }

    #[test]
    fn empty_series_has_no_phases() {
        let p = phases(&Series::new(1.0));
        assert!(!p.has_load());
        assert_eq!(p.idle, 0..0);
    }
}
