//! The columnar series builder the table readers push rows into, and how it keeps a log of
//! any length in bounded memory.
//!
//! A reader resolves each column to a metric index once and writes values by index. Up to
//! [`MAX_ROWS`] rows are kept as read. A log with more rows is coarsened as it is read: when
//! one more row would pass the bound, each two consecutive kept rows become one row spanning
//! both, and from then on each kept row takes in twice as many of the log's rows. Every value
//! of vmstat, sar and mpstat is an average over its interval (a rate, a CPU share) or a gauge,
//! so the merged value is the mean of the rows it replaces, weighted by their durations: for
//! rates and shares exactly what the tool would have printed at the longer interval (up to
//! its rounding). A value missing in some of the merged rows is the mean of those that have it.
//! Memory then holds at most `MAX_ROWS` rows whatever the log's length, and the Run's notes
//! say how many rows of how long the log's rows were kept as.

use std::collections::HashMap;

use netceil_model::{Metric, MetricId, Series, Unit};

use super::common::median_step;

/// The most rows a series keeps while a log is read (a day of one-second samples is 86 400).
pub const MAX_ROWS: usize = 1 << 17;

/// Builds a [`Series`] column by column without the per-value lookups of
/// [`Series::set`](netceil_model::Series::set). Rows may be added out of time order (sar's
/// sections each restart at the beginning) as long as the log is short; [`SeriesBuilder::finish`]
/// sorts them.
#[derive(Debug)]
pub(crate) struct SeriesBuilder {
    t_s: Vec<f64>,
    metrics: Vec<Metric>,
    index: HashMap<MetricId, usize>,
    /// Rows expected, so columns are allocated once instead of grown by doubling.
    rows_hint: usize,
    /// The rows by their time in ms ([`SeriesBuilder::row_at`]), until the log is coarsened.
    by_time: HashMap<i64, usize>,
    last_keyed: Option<(i64, usize)>,
    /// Each kept row's clock time (of the last log row in it), while every row had one.
    stamps: Option<Vec<f64>>,
    first_stamp: Option<f64>,
    /// Rows pushed, as the log has them.
    originals: usize,
    max_rows: usize,
    coarse: Option<Coarse>,
}

/// The state of a builder whose rows have been merged.
#[derive(Debug)]
struct Coarse {
    /// The log's rows in each kept row, and in the last (open) one.
    per_row: usize,
    in_last: usize,
    /// Per metric and kept row: the summed durations of the log's rows behind the value.
    weights: Vec<Vec<f32>>,
    /// The duration of the log row now being written (the unit of the weights).
    weight: f64,
    /// The log rows' median step in row-time units and, when every row had one, in clock time.
    step: f64,
    stamp_step: Option<f64>,
    /// The time and clock time of the last log row pushed.
    last_t: f64,
    last_stamp: Option<f64>,
}

impl Default for SeriesBuilder {
    fn default() -> Self {
        SeriesBuilder::with_max_rows(MAX_ROWS)
    }
}

impl SeriesBuilder {
    pub(crate) fn new() -> Self {
        SeriesBuilder::default()
    }

    /// A builder that keeps every row: for a reader that adds its rows before their values
    /// (and reads a text whose length is bounded).
    pub(crate) fn unbounded() -> Self {
        SeriesBuilder::with_max_rows(usize::MAX)
    }

    /// A builder that keeps at most `max_rows` rows (at least 2; an odd bound is rounded up).
    pub(crate) fn with_max_rows(max_rows: usize) -> Self {
        SeriesBuilder {
            t_s: Vec::new(),
            metrics: Vec::new(),
            index: HashMap::new(),
            rows_hint: 0,
            by_time: HashMap::new(),
            last_keyed: None,
            stamps: Some(Vec::new()),
            first_stamp: None,
            originals: 0,
            max_rows: max_rows.max(2).saturating_add(max_rows % 2),
            coarse: None,
        }
    }

    /// Says how many rows to expect (an upper bound is fine: untouched capacity costs no
    /// memory pages).
    pub(crate) fn reserve_rows(&mut self, rows: usize) {
        self.rows_hint = rows.min(self.max_rows);
        self.t_s.reserve(self.rows_hint);
    }

    /// The index of a metric, created on first use.
    pub(crate) fn metric(&mut self, id: MetricId, unit: Unit) -> usize {
        if let Some(&i) = self.index.get(&id) {
            return i;
        }
        self.metrics.push(Metric {
            id: id.clone(),
            unit,
            values: Vec::with_capacity(self.rows_hint),
        });
        self.index.insert(id, self.metrics.len() - 1);
        self.metrics.len() - 1
    }

    /// Adds a log row ending at `t_s` and returns the kept row it is written into.
    pub(crate) fn push_row(&mut self, t_s: f64) -> usize {
        self.push_row_stamped(t_s, None)
    }

    /// [`SeriesBuilder::push_row`] for a row with a clock time (`vmstat -t`, a collector's
    /// prefix); a row without one ends the clock times of the whole log.
    pub(crate) fn push_row_stamped(&mut self, t_s: f64, stamp: Option<f64>) -> usize {
        self.originals += 1;
        if self.first_stamp.is_none() {
            self.first_stamp = stamp;
        }
        if stamp.is_none() {
            self.stamps = None;
        }
        if let Some(c) = self.coarse.as_mut() {
            c.weight = duration(t_s, c.last_t, stamp, c.last_stamp, c.step, c.stamp_step);
            c.last_t = t_s;
            c.last_stamp = stamp;
            if c.in_last < c.per_row {
                c.in_last += 1;
                let last = self.t_s.len() - 1;
                self.t_s[last] = t_s;
                if let (Some(s), Some(all)) = (stamp, self.stamps.as_mut()) {
                    all[last] = s;
                }
                return last;
            }
        }
        if self.t_s.len() >= self.max_rows {
            let first = self.coarse.is_none();
            self.coarsen();
            let c = self.coarse.as_mut().expect("coarsened");
            if first {
                c.weight = duration(t_s, c.last_t, stamp, c.last_stamp, c.step, c.stamp_step);
            }
            c.last_t = t_s;
            c.last_stamp = stamp;
            if c.in_last < c.per_row {
                c.in_last += 1;
                let last = self.t_s.len() - 1;
                self.t_s[last] = t_s;
                if let (Some(s), Some(all)) = (stamp, self.stamps.as_mut()) {
                    all[last] = s;
                }
                return last;
            }
        }
        if let Some(c) = self.coarse.as_mut() {
            c.in_last = 1;
        }
        self.t_s.push(t_s);
        if let (Some(s), Some(all)) = (stamp, self.stamps.as_mut()) {
            all.push(s);
        }
        self.t_s.len() - 1
    }

    /// The row ending `t_s` seconds after the start, created on first sight: for readers
    /// whose rows come back to a time more than once (a sar report's sections). Once the log
    /// is coarsened, a time not later than the last one is in the kept row that covers it.
    pub(crate) fn row_at(&mut self, t_s: f64) -> usize {
        let key = (t_s * 1000.0).round() as i64;
        if let Some((k, r)) = self.last_keyed {
            if k == key {
                return r;
            }
        }
        let r = match self.coarse.as_mut() {
            None => match self.by_time.get(&key) {
                Some(&r) => r,
                None => {
                    let r = self.push_row(t_s);
                    if self.coarse.is_none() {
                        self.by_time.insert(key, r);
                    }
                    r
                }
            },
            Some(c) if t_s > c.last_t + 5e-4 => self.push_row(t_s),
            Some(c) => {
                c.weight = c.step;
                self.t_s.partition_point(|x| *x < t_s - 5e-4)
            }
        };
        self.last_keyed = Some((key, r));
        r
    }

    pub(crate) fn rows(&self) -> usize {
        self.t_s.len()
    }

    /// The log's rows pushed so far (more than [`SeriesBuilder::rows`] once coarsened).
    pub(crate) fn log_rows(&self) -> usize {
        self.originals
    }

    /// The log's rows in each kept row: 1 until the log is coarsened.
    #[cfg(test)]
    pub(crate) fn rows_per_row(&self) -> usize {
        self.coarse.as_ref().map_or(1, |c| c.per_row)
    }

    pub(crate) fn row_time(&self, row: usize) -> Option<f64> {
        self.t_s.get(row).copied()
    }

    /// The kept rows' clock times (each its last log row's) and the first log row's, when
    /// every row had one.
    pub(crate) fn stamps(&self) -> Option<(&[f64], f64)> {
        match (&self.stamps, self.first_stamp) {
            (Some(s), Some(first)) if !s.is_empty() => Some((s, first)),
            _ => None,
        }
    }

    /// The median step between the log rows' clock times (see [`SeriesBuilder::stamps`]).
    pub(crate) fn stamp_step(&self) -> Option<f64> {
        let (stamps, _) = self.stamps()?;
        match &self.coarse {
            Some(c) => c.stamp_step,
            None => median_step(stamps),
        }
    }

    /// The median step between the log rows' times, once the log is coarsened (before, the
    /// reader takes it from the rows).
    pub(crate) fn coarse_step(&self) -> Option<f64> {
        self.coarse.as_ref().map(|c| c.step)
    }

    /// Sets one value; rows this metric skipped stay missing. Ignores a row that does not
    /// exist. Once the log is coarsened, the value joins the others of its kept row.
    pub(crate) fn set(&mut self, metric: usize, row: usize, value: f64) {
        if row >= self.t_s.len() {
            return;
        }
        let Some(m) = self.metrics.get_mut(metric) else {
            return;
        };
        if m.values.len() <= row {
            m.values.resize(row + 1, None);
        }
        match self.coarse.as_mut() {
            None => m.values[row] = Some(value),
            Some(c) => {
                if c.weights.len() <= metric {
                    c.weights.resize_with(metric + 1, Vec::new);
                }
                let w = &mut c.weights[metric];
                if w.len() <= row {
                    w.resize(row + 1, 0.0);
                }
                let (v, sum) = mean(m.values[row], w[row], Some(value), c.weight as f32);
                m.values[row] = v;
                w[row] = sum;
            }
        }
    }

    /// The values of one metric so far (shorter than the rows where the tail is missing).
    pub(crate) fn values(&self, metric: usize) -> &[Option<f64>] {
        self.metrics
            .get(metric)
            .map_or(&[], |m| m.values.as_slice())
    }

    /// Puts the rows in time order (they may come out of order while the log is short).
    fn sort_rows(&mut self) {
        if self.t_s.windows(2).all(|w| w[0] <= w[1]) {
            return;
        }
        let rows = self.t_s.len();
        let mut order: Vec<usize> = (0..rows).collect();
        order.sort_by(|&a, &b| self.t_s[a].total_cmp(&self.t_s[b]));
        self.t_s = order.iter().map(|&i| self.t_s[i]).collect();
        if let Some(s) = self.stamps.as_mut() {
            *s = order.iter().map(|&i| s[i]).collect();
        }
        for m in &mut self.metrics {
            m.values.resize(rows, None);
            m.values = order.iter().map(|&i| m.values[i]).collect();
        }
    }

    /// Merges each two consecutive kept rows into one.
    fn coarsen(&mut self) {
        if self.coarse.is_none() {
            self.start_coarse();
        }
        let rows = self.t_s.len();
        let half = rows.div_ceil(2);
        let c = self.coarse.as_mut().expect("started");
        c.weights.resize_with(self.metrics.len(), Vec::new);
        for k in 0..half {
            let (a, b) = (2 * k, 2 * k + 1);
            let b = b.min(rows - 1);
            self.t_s[k] = self.t_s[b];
            if let Some(s) = self.stamps.as_mut() {
                s[k] = s[b];
            }
            for (m, w) in self.metrics.iter_mut().zip(c.weights.iter_mut()) {
                m.values.resize(rows, None);
                w.resize(rows, 0.0);
                let (v, sum) = if a == b {
                    (m.values[a], w[a])
                } else {
                    mean(m.values[a], w[a], m.values[b], w[b])
                };
                m.values[k] = v;
                w[k] = sum;
            }
        }
        self.t_s.truncate(half);
        if let Some(s) = self.stamps.as_mut() {
            s.truncate(half);
        }
        for (m, w) in self.metrics.iter_mut().zip(c.weights.iter_mut()) {
            m.values.truncate(half);
            w.truncate(half);
        }
        if rows.is_multiple_of(2) {
            c.in_last += c.per_row;
        }
        c.per_row *= 2;
        self.by_time = HashMap::new();
        self.last_keyed = None;
    }

    /// The first coarsening: rows in order, and each value weighted by its row's duration.
    fn start_coarse(&mut self) {
        self.sort_rows();
        let rows = self.t_s.len();
        let step = median_step(&self.t_s).unwrap_or(1.0);
        let stamps = self.stamps.as_deref().filter(|s| s.len() == rows);
        let stamp_step = stamps.and_then(median_step);
        let durations: Vec<f32> = (0..rows)
            .map(|i| {
                let prev = |v: &[f64]| i.checked_sub(1).map(|p| v[p]);
                let d = match (stamps, stamp_step) {
                    (Some(s), Some(st)) => prev(s).map_or(st, |p| s[i] - p),
                    _ => prev(&self.t_s).map_or(step, |p| self.t_s[i] - p),
                };
                if d > 0.0 && d.is_finite() {
                    d as f32
                } else {
                    stamp_step.unwrap_or(step) as f32
                }
            })
            .collect();
        let weights = self
            .metrics
            .iter_mut()
            .map(|m| {
                m.values.resize(rows, None);
                m.values
                    .iter()
                    .zip(&durations)
                    .map(|(v, d)| if v.is_some() { *d } else { 0.0 })
                    .collect()
            })
            .collect();
        self.coarse = Some(Coarse {
            per_row: 1,
            in_last: 1,
            weights,
            weight: f64::from(durations.last().copied().unwrap_or(1.0)),
            step,
            stamp_step,
            last_t: self.t_s.last().copied().unwrap_or(0.0),
            last_stamp: self.stamps.as_ref().and_then(|s| s.last().copied()),
        });
    }

    /// What the Run's notes say of a coarsened log, with its rows' `interval_s` (before
    /// merging); `None` when every row was kept.
    pub(crate) fn coarse_note(&self, interval_s: f64) -> Option<String> {
        let c = self.coarse.as_ref()?;
        let kept = interval_s * c.per_row as f64;
        Some(format!(
            "the log's {} rows are kept as {} rows of {} s each ({} consecutive rows merged into one, so that memory stays bounded: at most {} rows are held): rates and CPU shares are their duration-weighted means, what the tool would have printed at an interval of {} s; gauges (run queue, memory) are means too, where the tool prints the last instant",
            self.originals,
            self.t_s.len(),
            short(kept),
            c.per_row,
            self.max_rows,
            short(kept),
        ))
    }

    /// The finished series: rows in time order, every metric as long as `t_s`, metrics that
    /// never got a value dropped. `interval_s` is the log rows' interval; the series' is that
    /// of its kept rows.
    pub(crate) fn finish(mut self, interval_s: f64) -> Series {
        self.sort_rows();
        let rows = self.t_s.len();
        let metrics = self
            .metrics
            .into_iter()
            .filter(|m| m.values.iter().any(Option::is_some))
            .map(|mut m| {
                m.values.resize(rows, None);
                m.values.shrink_to_fit();
                m
            })
            .collect();
        Series {
            interval_s: interval_s * self.coarse.as_ref().map_or(1, |c| c.per_row) as f64,
            t_s: self.t_s,
            metrics,
            missing: Vec::new(),
        }
    }
}

/// The duration of a log row at `t` (clock time `stamp`) after one at `last_t` (`last_stamp`):
/// from the clock times when both have one, else from the row times, else the median step.
fn duration(
    t: f64,
    last_t: f64,
    stamp: Option<f64>,
    last_stamp: Option<f64>,
    step: f64,
    stamp_step: Option<f64>,
) -> f64 {
    let d = match (stamp, last_stamp, stamp_step) {
        (Some(s), Some(l), Some(_)) => s - l,
        _ => t - last_t,
    };
    if d > 0.0 && d.is_finite() {
        d
    } else {
        stamp_step.unwrap_or(step)
    }
}

/// Two values with their weights (summed durations) as one: their weighted mean.
pub(crate) fn mean(a: Option<f64>, wa: f32, b: Option<f64>, wb: f32) -> (Option<f64>, f32) {
    match (a, b) {
        (Some(x), Some(y)) => {
            let w = f64::from(wa) + f64::from(wb);
            let v = if wa == wb {
                (x + y) / 2.0
            } else if w > 0.0 {
                (x * f64::from(wa) + y * f64::from(wb)) / w
            } else {
                (x + y) / 2.0
            };
            (Some(v), wa + wb)
        }
        (Some(x), None) => (Some(x), wa),
        (None, Some(y)) => (Some(y), wb),
        (None, None) => (None, 0.0),
    }
}

/// A duration in seconds as short as it prints exactly (`8`, `0.5`).
fn short(s: f64) -> String {
    format!("{}", (s * 1e6).round() / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_sorts_rows_and_pads() {
        let mut b = SeriesBuilder::new();
        let a = b.metric(MetricId::new("a"), Unit::Count);
        let r2 = b.push_row(2.0);
        let r1 = b.push_row(1.0);
        b.set(a, r2, 20.0);
        b.set(a, r1, 10.0);
        b.push_row(3.0);
        let never = b.metric(MetricId::new("never"), Unit::Count);
        b.set(never, 99, 1.0);
        let s = b.finish(1.0);
        assert_eq!(s.t_s, vec![1.0, 2.0, 3.0]);
        assert_eq!(s.metrics.len(), 1);
        assert_eq!(s.metrics[0].values, vec![Some(10.0), Some(20.0), None]);
    }

    /// A builder fed `n` rows one second apart, metric `a` = the row's number, `b` only on
    /// even rows (value 100 + number).
    fn fed(max_rows: usize, n: usize) -> SeriesBuilder {
        let mut b = SeriesBuilder::with_max_rows(max_rows);
        let a = b.metric(MetricId::new("a"), Unit::PerSecond);
        let e = b.metric(MetricId::new("b"), Unit::Percent);
        for i in 1..=n {
            let r = b.push_row(i as f64);
            b.set(a, r, i as f64);
            if i % 2 == 0 {
                b.set(e, r, 100.0 + i as f64);
            }
        }
        b
    }

    #[test]
    fn a_long_log_is_kept_as_coarser_rows_within_the_bound() {
        let b = fed(4, 16);
        assert_eq!((b.rows(), b.log_rows(), b.rows_per_row()), (4, 16, 4));
        let note = b.coarse_note(1.0).unwrap();
        assert!(note.starts_with("the log's 16 rows are kept as 4 rows of 4 s each"));
        let s = b.finish(1.0);
        assert_eq!(s.interval_s, 4.0);
        assert_eq!(s.t_s, vec![4.0, 8.0, 12.0, 16.0]);
        // Means of 1..4, 5..8…; the metric present on every other row: the mean of those.
        assert_eq!(s.metrics[0].values, [2.5, 6.5, 10.5, 14.5].map(Some));
        assert_eq!(s.metrics[1].values, [103.0, 107.0, 111.0, 115.0].map(Some));
    }

    #[test]
    fn the_rows_kept_never_pass_the_bound_and_the_open_row_fills_first() {
        for n in 1..=40 {
            let b = fed(6, n);
            assert!(b.rows() <= 6, "{n} rows kept as {}", b.rows());
            assert_eq!(b.log_rows(), n);
            let s = b.finish(1.0);
            // Every kept row but the last holds as many log rows; the mean of `a` over them.
            let per = s.interval_s as usize;
            for (k, v) in s.metrics[0].values.iter().enumerate() {
                let lo = k * per + 1;
                let hi = ((k + 1) * per).min(n);
                let want = (lo + hi) as f64 / 2.0;
                assert_eq!(*v, Some(want), "{n} rows, kept row {k}");
            }
        }
    }

    #[test]
    fn a_short_log_is_kept_as_read() {
        let b = fed(64, 64);
        assert!(b.coarse_note(1.0).is_none());
        let s = b.finish(1.0);
        assert_eq!(s.t_s.len(), 64);
        assert_eq!(s.metrics[0].values[10], Some(11.0));
        assert_eq!(s.metrics[1].values[10], None);
    }

    #[test]
    fn sections_that_restart_fill_the_covering_rows() {
        // A sar report: the first section's rows 1..=8 s, then a second section from 1 s.
        let mut b = SeriesBuilder::with_max_rows(4);
        let a = b.metric(MetricId::new("a"), Unit::PerSecond);
        let c = b.metric(MetricId::new("c"), Unit::PerSecond);
        for i in 1..=8 {
            let r = b.row_at(i as f64);
            b.set(a, r, i as f64);
        }
        for i in 1..=8 {
            let r = b.row_at(i as f64);
            b.set(c, r, 10.0 * i as f64);
        }
        let s = b.finish(1.0);
        assert_eq!(s.t_s, vec![2.0, 4.0, 6.0, 8.0]);
        assert_eq!(s.metrics[0].values, [1.5, 3.5, 5.5, 7.5].map(Some));
        assert_eq!(s.metrics[1].values, [15.0, 35.0, 55.0, 75.0].map(Some));
    }

    #[test]
    fn durations_weigh_the_mean() {
        // Rows at 1, 2, 3, 5 (2 s long), 6: the second pair's mean weighs its row at 5 twice.
        let mut b = SeriesBuilder::with_max_rows(4);
        let a = b.metric(MetricId::new("a"), Unit::PerSecond);
        for (t, v) in [(1.0, 3.0), (2.0, 6.0), (3.0, 9.0), (5.0, 12.0), (6.0, 1.0)] {
            let r = b.push_row(t);
            b.set(a, r, v);
        }
        let s = b.finish(1.0);
        assert_eq!(s.t_s, vec![2.0, 5.0, 6.0]);
        assert_eq!(s.metrics[0].values, vec![Some(4.5), Some(11.0), Some(1.0)]);
    }
}
