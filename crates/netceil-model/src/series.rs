//! A time-indexed, columnar table of metrics.
//!
//! Counters are stored as per-interval rates, never as raw totals, so that a reader needs no
//! knowledge of where a value came from. A value that could not be measured is `None`, never 0,
//! and the reason is kept once in [`Series::missing`].

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::Unit;

/// The identity of a metric: a name plus optional labels such as `cpu=1` or `iface=veth0`.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct MetricId {
    pub name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

impl MetricId {
    pub fn new(name: impl Into<String>) -> Self {
        MetricId {
            name: name.into(),
            labels: BTreeMap::new(),
        }
    }

    /// Adds one label, builder style.
    #[must_use]
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }
}

impl std::fmt::Display for MetricId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)?;
        if !self.labels.is_empty() {
            f.write_str("{")?;
            for (i, (k, v)) in self.labels.iter().enumerate() {
                if i > 0 {
                    f.write_str(",")?;
                }
                write!(f, "{k}={v}")?;
            }
            f.write_str("}")?;
        }
        Ok(())
    }
}

/// One column of the series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Metric {
    #[serde(flatten)]
    pub id: MetricId,
    pub unit: Unit,
    /// One value per row of [`Series::t_s`]; `None` where it was not measured.
    pub values: Vec<Option<f64>>,
}

/// Why a metric has no value over some rows; recorded once per metric and reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MissingValue {
    pub metric: String,
    pub reason: String,
    /// The first row (index into `t_s`) the reason applied to.
    pub from_row: usize,
}

/// The time-indexed table. Row `i` covers the interval ending at `t_s[i]` seconds after the
/// run's start; its length is `t_s[i] - t_s[i-1]` (or `t_s[0]` for the first row).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Series {
    /// The nominal sampling interval in seconds (the measured one is in `t_s`).
    pub interval_s: f64,
    /// The end of each interval, in seconds since the run's start.
    pub t_s: Vec<f64>,
    pub metrics: Vec<Metric>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<MissingValue>,
}

impl Series {
    pub fn new(interval_s: f64) -> Self {
        Series {
            interval_s,
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.t_s.len()
    }

    /// The row whose end is nearest `t` (seconds since the run's start), if it is within one
    /// sampling interval of it: where a reading taken apart from the sampler belongs.
    pub fn row_near(&self, t: f64) -> Option<usize> {
        let (i, d) = self
            .t_s
            .iter()
            .enumerate()
            .map(|(i, x)| (i, (x - t).abs()))
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        (d <= self.interval_s.max(0.01)).then_some(i)
    }

    pub fn is_empty(&self) -> bool {
        self.t_s.is_empty()
    }

    /// Starts a new row ending at `t_s`; every metric gets `None` until [`Series::set`] fills it.
    pub fn push_row(&mut self, t_s: f64) -> usize {
        self.t_s.push(t_s);
        for m in &mut self.metrics {
            m.values.push(None);
        }
        self.t_s.len() - 1
    }

    /// Sets a value in the last row, creating the metric (with earlier rows missing) if needed.
    pub fn set(&mut self, id: &MetricId, unit: Unit, value: f64) {
        let rows = self.t_s.len();
        assert!(rows > 0, "Series::set before push_row");
        let idx = self.index_or_insert(id, unit);
        self.metrics[idx].values[rows - 1] = Some(value);
    }

    /// Sets a value in row `row` (which must exist), creating the metric if needed.
    pub fn set_at(&mut self, row: usize, id: &MetricId, unit: Unit, value: f64) {
        assert!(row < self.t_s.len(), "Series::set_at past the last row");
        let idx = self.index_or_insert(id, unit);
        self.metrics[idx].values[row] = Some(value);
    }

    /// Records, once per metric and reason, why a metric could not be measured.
    pub fn note_missing(&mut self, metric: &str, reason: impl Into<String>) {
        let reason = reason.into();
        if !self
            .missing
            .iter()
            .any(|m| m.metric == metric && m.reason == reason)
        {
            let from_row = self.t_s.len().saturating_sub(1);
            self.missing.push(MissingValue {
                metric: metric.into(),
                reason,
                from_row,
            });
        }
    }

    fn index_or_insert(&mut self, id: &MetricId, unit: Unit) -> usize {
        if let Some(i) = self.metrics.iter().position(|m| &m.id == id) {
            return i;
        }
        self.metrics.push(Metric {
            id: id.clone(),
            unit,
            values: vec![None; self.t_s.len()],
        });
        self.metrics.len() - 1
    }

    /// The rows whose interval ends in `(from_s, to_s]`, with times made relative to `from_s`;
    /// missing notes are kept when their metric appears in the window.
    pub fn window(&self, from_s: f64, to_s: f64) -> Series {
        let rows: Vec<usize> = (0..self.t_s.len())
            .filter(|&i| self.t_s[i] > from_s && self.t_s[i] <= to_s)
            .collect();
        let metrics = self
            .metrics
            .iter()
            .map(|m| Metric {
                id: m.id.clone(),
                unit: m.unit,
                values: rows.iter().map(|&i| m.values[i]).collect(),
            })
            .filter(|m| m.values.iter().any(Option::is_some))
            .collect::<Vec<_>>();
        let missing = self
            .missing
            .iter()
            .filter(|n| {
                metrics
                    .iter()
                    .any(|m| m.id.to_string() == n.metric || m.id.name == n.metric)
            })
            .map(|n| MissingValue {
                from_row: rows.iter().position(|&r| r >= n.from_row).unwrap_or(0),
                ..n.clone()
            })
            .collect();
        Series {
            interval_s: self.interval_s,
            t_s: rows.iter().map(|&i| self.t_s[i] - from_s).collect(),
            metrics,
            missing,
        }
    }

    pub fn get(&self, id: &MetricId) -> Option<&Metric> {
        self.metrics.iter().find(|m| &m.id == id)
    }

    /// The metric with this name and no labels.
    pub fn total(&self, name: &str) -> Option<&Metric> {
        self.metrics
            .iter()
            .find(|m| m.id.name == name && m.id.labels.is_empty())
    }

    /// The mean of the measured values of the metric with this name and no labels.
    pub fn total_mean(&self, name: &str) -> Option<f64> {
        let m = self.total(name)?;
        let v: Vec<f64> = m.values.iter().flatten().copied().collect();
        crate::stats::mean(&v)
    }

    /// Every metric with this name, whatever its labels (e.g. all `cpu_busy_pct{cpu=N}`).
    pub fn by_name<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Metric> + 'a {
        self.metrics.iter().filter(move |m| m.id.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_metric_is_missing_in_earlier_rows() {
        let mut s = Series::new(1.0);
        s.push_row(1.0);
        s.set(&MetricId::new("a"), Unit::PerSecond, 1.0);
        s.push_row(2.0);
        let b = MetricId::new("b").with("cpu", "0");
        s.set(&b, Unit::Percent, 5.0);
        assert_eq!(s.get(&b).unwrap().values, vec![None, Some(5.0)]);
        assert_eq!(s.total("a").unwrap().values, vec![Some(1.0), None]);
        assert_eq!(b.to_string(), "b{cpu=0}");
    }

    #[test]
    fn total_mean_skips_unmeasured_rows_and_labelled_metrics() {
        let mut s = Series::new(1.0);
        for (t, v) in [(1.0, Some(10.0)), (2.0, None), (3.0, Some(30.0))] {
            s.push_row(t);
            if let Some(v) = v {
                s.set(&MetricId::new("a"), Unit::PerSecond, v);
            }
            s.set(
                &MetricId::new("a").with("cpu", "0"),
                Unit::PerSecond,
                1000.0,
            );
        }
        assert_eq!(s.total_mean("a"), Some(20.0), "the unmeasured row is no 0");
        assert_eq!(s.total_mean("b"), None);
    }

    #[test]
    fn window_keeps_rows_in_range_relative_to_its_start() {
        let mut s = Series::new(1.0);
        for t in 1..=5 {
            s.push_row(f64::from(t));
            s.set(&MetricId::new("a"), Unit::PerSecond, f64::from(t) * 10.0);
        }
        let w = s.window(2.0, 4.0);
        assert_eq!(w.t_s, vec![1.0, 2.0]);
        assert_eq!(w.total("a").unwrap().values, vec![Some(30.0), Some(40.0)]);
        assert!(s.window(10.0, 20.0).is_empty());
    }

    #[test]
    fn missing_reason_recorded_once() {
        let mut s = Series::new(1.0);
        s.push_row(1.0);
        s.note_missing("psi_cpu", "no /proc/pressure");
        s.push_row(2.0);
        s.note_missing("psi_cpu", "no /proc/pressure");
        assert_eq!(s.missing.len(), 1);
    }
}
