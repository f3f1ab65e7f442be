//! Recording a run while it goes on: one committed transaction per interval.
//!
//! Each append is its own transaction, so a `kill -9` or a power cut between two intervals
//! loses nothing that was appended before it; the run simply stays marked incomplete.

use std::borrow::Borrow;
use std::collections::{HashMap, HashSet};

use netceil_model::{MetricId, MissingValue, Run, Series, Unit};

use crate::samples::encode_row;
use crate::{Result, Store};

/// Writes one run into the store interval by interval; made by [`Store::begin_run`].
///
/// Dropping a writer without [`RunWriter::finish`] leaves the run stored and incomplete, which
/// is exactly what a crash leaves.
pub struct RunWriter<'s> {
    store: &'s Store,
    key: i64,
    run_id: String,
    state: SeriesState,
}

impl<'s> RunWriter<'s> {
    pub(crate) fn new(store: &'s Store, key: i64, run_id: String, state: SeriesState) -> Self {
        RunWriter {
            store,
            key,
            run_id,
            state,
        }
    }

    /// The id of the run being written.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// How many series rows are stored (and committed) so far.
    pub fn rows_written(&self) -> usize {
        self.state.rows
    }

    /// Appends and commits one interval ending at `t_s`. Metrics not seen before are added
    /// (missing in earlier rows); metrics not given are missing in this row, as is a `None`.
    /// Returns the row's index.
    ///
    /// The metric may be given as a `MetricId` or anything that borrows one (an
    /// `Arc<MetricId>` shared with the sampler's rows), so a caller copies nothing.
    pub fn append_row<M: Borrow<MetricId>>(
        &mut self,
        t_s: f64,
        values: &[(M, Unit, Option<f64>)],
    ) -> Result<usize> {
        self.append_rows(&[(t_s, values)])?;
        Ok(self.state.rows - 1)
    }

    /// Appends and commits several intervals in one transaction, as [`RunWriter::append_row`]
    /// does one: for short sampling intervals, where a commit per row would cost more than
    /// the row. Returns the rows now stored.
    pub fn append_rows<M: Borrow<MetricId>, V: AsRef<[(M, Unit, Option<f64>)]>>(
        &mut self,
        rows: &[(f64, V)],
    ) -> Result<usize> {
        if rows.is_empty() {
            return Ok(self.state.rows);
        }
        let staged = self
            .state
            .stage_values(rows)
            .map_err(|detail| self.store.invalid(&self.run_id, detail))?;
        self.write(
            &staged,
            &format!("appending row {} to run '{}'", self.state.rows, self.run_id),
        )?;
        self.state.apply(staged);
        Ok(self.state.rows)
    }

    /// Appends and commits, in one transaction, the rows of `series` from `from_row` on, with
    /// its new metrics and new missing-value notes. Rows already stored are skipped, so passing
    /// the same series with the same `from_row` again is harmless. Returns the rows now stored.
    pub fn append_rows_from(&mut self, series: &Series, from_row: usize) -> Result<usize> {
        if from_row > self.state.rows {
            return Err(self.store.invalid(
                &self.run_id,
                format!(
                    "rows must be appended without gaps: {} are stored, row {from_row} was given next",
                    self.state.rows
                ),
            ));
        }
        let staged = self
            .state
            .stage(series, self.state.rows)
            .map_err(|detail| self.store.invalid(&self.run_id, detail))?;
        if !staged.is_empty() {
            self.write(&staged, &format!("appending rows to run '{}'", self.run_id))?;
            self.state.apply(staged);
        }
        Ok(self.state.rows)
    }

    /// Records and commits why a metric has no values (for callers using
    /// [`RunWriter::append_row`]; [`RunWriter::append_rows_from`] copies the series' notes).
    pub fn note_missing(&mut self, note: &MissingValue) -> Result<()> {
        let staged = Staged {
            missing: vec![(self.state.missing, note.clone())],
            ..Staged::default()
        };
        self.write(
            &staged,
            &format!("noting a missing metric in run '{}'", self.run_id),
        )?;
        self.state.apply(staged);
        Ok(())
    }

    /// Stores one finished part (a search's trial, a sweep's cell) at once, in its own
    /// transaction, so that a `kill -9` later loses none of the parts stored before. A part
    /// already stored at `index` is replaced. [`RunWriter::finish`] writes the run's parts
    /// again from `run.parts`.
    pub fn add_part(&mut self, index: usize, part: &Run) -> Result<()> {
        let store = self.store;
        store.check_run(part)?;
        let op = format!("storing part {} of run '{}'", index + 1, self.run_id);
        let tx = store.write_tx(&op)?;
        tx.execute(
            "DELETE FROM runs WHERE parent_key = ?1 AND part_idx = ?2",
            rusqlite::params![self.key, i64::try_from(index).unwrap_or(i64::MAX)],
        )
        .map_err(|e| store.fail(&op, e))?;
        store.insert_whole_run(&tx, part, Some((self.key, index)))?;
        store.commit(tx, &op)
    }

    /// Completes the run: any series rows of `run` not yet stored are appended, then meta,
    /// labels, results, locks, findings, notes and parts are written and the run is marked
    /// complete, all in one transaction. If `run.series` is shorter than what was appended,
    /// the stored rows are kept as they are.
    pub fn finish(self, run: &Run) -> Result<()> {
        self.finish_as(run, true)
    }

    /// [`RunWriter::finish`], marking the run complete or not: a run stopped before its end
    /// (Ctrl-C) is written whole but stays incomplete, so `--resume` can take it up.
    pub fn finish_as(self, run: &Run, complete: bool) -> Result<()> {
        let store = self.store;
        if run.run_id != self.run_id {
            return Err(store.invalid(
                &self.run_id,
                format!("finish was given run '{}' instead", run.run_id),
            ));
        }
        store.check_run(run)?;
        // Metrics that were never streamed (added to earlier rows after the fact, as the eBPF
        // probes' are) mean the stored rows must be written again, whole.
        let added_late = self.state.rows > 0
            && run
                .series
                .metrics
                .iter()
                .any(|m| !self.state.metrics.contains_key(&m.id));
        let staged = if run.series.len() >= self.state.rows {
            let from = if added_late { 0 } else { self.state.rows };
            self.state
                .stage_from(&run.series, from)
                .map_err(|detail| store.invalid(&self.run_id, detail))?
        } else {
            Staged::default()
        };
        let row = store.run_row(run)?;
        let op = format!("finishing run '{}'", self.run_id);
        let tx = store.write_tx(&op)?;
        store.write_staged(&tx, self.key, &self.run_id, &staged)?;
        store.update_run_row(&tx, self.key, &self.run_id, &row, complete)?;
        tx.execute("DELETE FROM labels WHERE run_key = ?1", [self.key])
            .map_err(|e| store.fail(&op, e))?;
        store.insert_labels(&tx, self.key, run)?;
        store.write_final_lists(&tx, self.key, run)?;
        store.commit(tx, &op)
    }

    fn write(&self, staged: &Staged, op: &str) -> Result<()> {
        let tx = self.store.write_tx(op)?;
        self.store
            .write_staged(&tx, self.key, &self.run_id, staged)?;
        self.store.commit(tx, op)
    }
}

/// What is already stored of one run's series: the metric columns and how many rows and
/// missing-value notes.
#[derive(Debug, Default)]
pub(crate) struct SeriesState {
    metrics: HashMap<MetricId, (usize, Unit)>,
    /// The same metrics by column.
    by_column: Vec<(MetricId, Unit)>,
    /// The column of each value of the last row given by [`RunWriter::append_row`], in order.
    last_columns: Vec<usize>,
    rows: usize,
    missing: usize,
}

/// Rows, metrics and notes ready to insert; applied to the [`SeriesState`] once committed.
#[derive(Debug, Default)]
pub(crate) struct Staged {
    /// (metric index, id, unit).
    pub new_metrics: Vec<(usize, MetricId, Unit)>,
    /// (row index, t_s, encoded values).
    pub rows: Vec<(usize, f64, Vec<u8>)>,
    /// (note index, note).
    pub missing: Vec<(usize, MissingValue)>,
    /// For a row staged from values: the column of each value, in order.
    pub columns: Option<Vec<usize>>,
}

impl Staged {
    fn is_empty(&self) -> bool {
        self.new_metrics.is_empty() && self.rows.is_empty() && self.missing.is_empty()
    }
}

impl SeriesState {
    /// Stages the rows of `series` from `from_row` (which must be the next row to store), its
    /// metrics not yet stored and its notes not yet stored.
    pub(crate) fn stage(&self, series: &Series, from_row: usize) -> Result<Staged, String> {
        if from_row != self.rows {
            return Err(format!(
                "{} rows are stored, but row {from_row} was given next",
                self.rows
            ));
        }
        self.stage_from(series, from_row)
    }

    /// As [`SeriesState::stage`], but `from_row` may also go back over stored rows, which are
    /// then written again (replaced) with every metric of `series`.
    pub(crate) fn stage_from(&self, series: &Series, from_row: usize) -> Result<Staged, String> {
        if from_row > self.rows {
            return Err(format!(
                "{} rows are stored, but row {from_row} was given next",
                self.rows
            ));
        }
        let rows = series.t_s.len();
        let mut seen = HashSet::new();
        for m in &series.metrics {
            if m.values.len() != rows {
                return Err(format!(
                    "metric '{}' has {} values for {rows} rows",
                    m.id,
                    m.values.len()
                ));
            }
            if !seen.insert(&m.id) {
                return Err(format!("metric '{}' appears twice in the series", m.id));
            }
        }
        let mut staged = Staged::default();
        let mut column = Vec::with_capacity(series.metrics.len());
        for m in &series.metrics {
            column.push(self.column_for(&m.id, m.unit, &mut staged.new_metrics)?);
        }
        let width = self.metrics.len() + staged.new_metrics.len();
        check_width(width)?;
        for r in from_row..rows {
            let t_s = series.t_s[r];
            if t_s.is_nan() {
                return Err(format!("row {r} has t_s = NaN"));
            }
            let mut values = vec![None; width];
            for (m, &col) in series.metrics.iter().zip(&column) {
                values[col] = m.values[r];
            }
            staged.rows.push((r, t_s, encode_row(&values)));
        }
        for (i, note) in series.missing.iter().enumerate().skip(self.missing) {
            staged.missing.push((i, note.clone()));
        }
        Ok(staged)
    }

    /// Stages rows given as (metric, unit, value) triples.
    pub(crate) fn stage_values<M: Borrow<MetricId>, V: AsRef<[(M, Unit, Option<f64>)]>>(
        &self,
        rows: &[(f64, V)],
    ) -> Result<Staged, String> {
        let mut staged = Staged::default();
        let mut last = self.last_columns.clone();
        for (t_s, values) in rows {
            let values = values.as_ref();
            let index = self.rows + staged.rows.len();
            if t_s.is_nan() {
                return Err(format!("row {index} has t_s = NaN"));
            }
            let mut columns = Vec::with_capacity(values.len());
            for (k, (id, unit, _)) in values.iter().enumerate() {
                let id = id.borrow();
                // Rows mostly repeat the last row's metrics in the same order: one comparison
                // instead of hashing the identity (a live recording appends a row per
                // interval, down to every 10 ms).
                let same = last
                    .get(k)
                    .copied()
                    .filter(|&c| self.column_is(c, id, *unit, &staged.new_metrics));
                let col = match same {
                    Some(c) => c,
                    None => self.column_for(id, *unit, &mut staged.new_metrics)?,
                };
                columns.push(col);
            }
            let width = self.metrics.len() + staged.new_metrics.len();
            check_width(width)?;
            let mut row = vec![None; width];
            let mut given = vec![false; width];
            for ((id, _, value), &col) in values.iter().zip(&columns) {
                if std::mem::replace(&mut given[col], true) {
                    return Err(format!(
                        "metric '{}' is given twice in row {index}",
                        id.borrow()
                    ));
                }
                row[col] = *value;
            }
            staged.rows.push((index, *t_s, encode_row(&row)));
            last = columns;
        }
        staged.columns = Some(last);
        Ok(staged)
    }

    /// Whether column `col` (stored, or staged in `new`) holds `id` in `unit`.
    fn column_is(
        &self,
        col: usize,
        id: &MetricId,
        unit: Unit,
        new: &[(usize, MetricId, Unit)],
    ) -> bool {
        match self.by_column.get(col) {
            Some((stored, u)) => *u == unit && stored == id,
            None => new
                .get(col - self.by_column.len())
                .is_some_and(|(_, n, u)| *u == unit && n == id),
        }
    }

    /// The stored column of a metric, or the next free one (staged as new).
    fn column_for(
        &self,
        id: &MetricId,
        unit: Unit,
        new: &mut Vec<(usize, MetricId, Unit)>,
    ) -> Result<usize, String> {
        let known = self.metrics.get(id).copied().or_else(|| {
            new.iter()
                .find(|(_, n, _)| n == id)
                .map(|(col, _, u)| (*col, *u))
        });
        match known {
            Some((col, stored)) if stored == unit => Ok(col),
            Some((_, stored)) => Err(format!(
                "metric '{id}' is stored in {} but was given in {}",
                stored.symbol(),
                unit.symbol()
            )),
            None => {
                let col = self.metrics.len() + new.len();
                new.push((col, id.clone(), unit));
                Ok(col)
            }
        }
    }

    /// Records what a committed [`Staged`] added.
    pub(crate) fn apply(&mut self, staged: Staged) {
        for (col, id, unit) in staged.new_metrics {
            debug_assert_eq!(col, self.by_column.len());
            self.by_column.push((id.clone(), unit));
            self.metrics.insert(id, (col, unit));
        }
        if let Some(columns) = staged.columns {
            self.last_columns = columns;
        }
        self.rows += staged.rows.len();
        self.missing += staged.missing.len();
    }
}

fn check_width(width: usize) -> Result<(), String> {
    if u32::try_from(width).is_err() {
        return Err(format!("{width} metrics is more than a row can hold"));
    }
    Ok(())
}
