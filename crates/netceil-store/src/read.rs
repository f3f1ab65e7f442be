//! Rebuilding a Run from its rows, checking every index so damage is reported, not guessed.

use netceil_model::{
    LockStat, Metric, MetricId, MissingValue, Results, Run, RunMeta, RunSource, Series, Unit,
    Workload,
};

use crate::samples::decode_row;
use crate::write::to_i64;
use crate::{Result, Store};

impl Store {
    pub(crate) fn load_run(&self, key: i64) -> Result<Run> {
        let (run_id, source, workload, meta, interval_s, results, complete): (
            String,
            String,
            Option<String>,
            String,
            f64,
            Option<String>,
            bool,
        ) = self
            .conn
            .prepare_cached(
                "SELECT id, source, workload, meta, interval_s, results, complete
                 FROM runs WHERE key = ?1",
            )
            .and_then(|mut st| {
                st.query_row([key], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                    ))
                })
            })
            .map_err(|e| self.fail("reading a run", e))?;
        let id = run_id.as_str();
        let op = |what: &str| format!("reading the {what} of run '{id}'");

        let mut meta: RunMeta = self.parse(id, "meta", &meta)?;
        meta.complete = complete;
        meta.labels = self
            .conn
            .prepare_cached("SELECT key, value FROM labels WHERE run_key = ?1 ORDER BY key")
            .and_then(|mut st| {
                st.query_map([key], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .map_err(|e| self.fail(op("labels"), e))?;

        let mut run = Run::new(
            run_id.clone(),
            self.parse::<RunSource>(id, "source", &source)?,
        );
        run.workload = workload
            .map(|w| self.parse::<Workload>(id, "workload", &w))
            .transpose()?;
        run.meta = meta;
        run.results = results
            .map(|r| self.parse::<Results>(id, "results", &r))
            .transpose()?;
        run.series = self.load_series(key, id, interval_s)?;
        run.locks = self.load_locks(key, id)?;
        run.findings = self
            .conn
            .prepare_cached("SELECT finding FROM findings WHERE run_key = ?1 ORDER BY idx")
            .and_then(|mut st| {
                st.query_map([key], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| self.fail(op("findings"), e))?
            .iter()
            .map(|text| self.parse(id, "findings", text))
            .collect::<Result<_>>()?;
        run.knees = self
            .conn
            .prepare_cached("SELECT knee FROM knees WHERE run_key = ?1 ORDER BY idx")
            .and_then(|mut st| {
                st.query_map([key], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| self.fail(op("knees"), e))?
            .iter()
            .map(|text| self.parse(id, "knees", text))
            .collect::<Result<_>>()?;
        run.notes = self
            .conn
            .prepare_cached("SELECT text FROM notes WHERE run_key = ?1 ORDER BY idx")
            .and_then(|mut st| st.query_map([key], |r| r.get(0))?.collect())
            .map_err(|e| self.fail(op("notes"), e))?;
        let part_keys: Vec<i64> = self
            .conn
            .prepare_cached("SELECT key FROM runs WHERE parent_key = ?1 ORDER BY part_idx")
            .and_then(|mut st| st.query_map([key], |r| r.get(0))?.collect())
            .map_err(|e| self.fail(op("parts"), e))?;
        run.parts = part_keys
            .into_iter()
            .map(|k| self.load_run(k))
            .collect::<Result<_>>()?;
        Ok(run)
    }

    pub(crate) fn load_series(&self, key: i64, id: &str, interval_s: f64) -> Result<Series> {
        let op = |what: &str| format!("reading the {what} of run '{id}'");
        let mut series = Series::new(interval_s);
        let metrics: Vec<(i64, String, String, String)> = self
            .conn
            .prepare_cached(
                "SELECT metric_idx, name, labels, unit FROM metrics WHERE run_key = ?1
                 ORDER BY metric_idx",
            )
            .and_then(|mut st| {
                st.query_map([key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                    .collect()
            })
            .map_err(|e| self.fail(op("metrics"), e))?;
        for (expected, (idx, name, labels, unit)) in metrics.into_iter().enumerate() {
            if idx != to_i64(expected) {
                return Err(self.corrupt(
                    id,
                    "metric list",
                    format!("metric index {idx} where {expected} was expected"),
                ));
            }
            let unit: Unit = serde_json::from_value(serde_json::Value::String(unit.clone()))
                .map_err(|_| {
                    self.corrupt(
                        id,
                        format!("unit of metric '{name}'"),
                        format!("unknown unit '{unit}'"),
                    )
                })?;
            series.metrics.push(Metric {
                id: MetricId {
                    labels: self.parse(id, &format!("labels of metric '{name}'"), &labels)?,
                    name,
                },
                unit,
                values: Vec::new(),
            });
        }

        let mut st = self
            .conn
            .prepare_cached("SELECT row, t_s, vals FROM samples WHERE run_key = ?1 ORDER BY row")
            .map_err(|e| self.fail(op("samples"), e))?;
        let rows = st
            .query_map([key], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, f64>(1)?,
                    r.get::<_, Vec<u8>>(2)?,
                ))
            })
            .map_err(|e| self.fail(op("samples"), e))?;
        let n_metrics = series.metrics.len();
        // Streamed row by row: a long run's samples are never all in memory twice.
        for sample in rows {
            let (row, t_s, blob) = sample.map_err(|e| self.fail(op("samples"), e))?;
            let expected = series.t_s.len();
            if row != to_i64(expected) {
                return Err(self.corrupt(
                    id,
                    "samples",
                    format!("row {row} where row {expected} was expected"),
                ));
            }
            let values = decode_row(&blob)
                .map_err(|e| self.corrupt(id, format!("values of row {row}"), e))?;
            if values.len() > n_metrics {
                return Err(self.corrupt(
                    id,
                    format!("values of row {row}"),
                    format!("{} values for {n_metrics} metrics", values.len()),
                ));
            }
            series.t_s.push(t_s);
            for (i, m) in series.metrics.iter_mut().enumerate() {
                m.values.push(values.get(i).copied().flatten());
            }
        }

        series.missing = self
            .conn
            .prepare_cached(
                "SELECT metric, reason, from_row FROM missing WHERE run_key = ?1 ORDER BY idx",
            )
            .and_then(|mut st| {
                st.query_map([key], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)?)))?
                    .collect::<rusqlite::Result<Vec<(String, String, i64)>>>()
            })
            .map_err(|e| self.fail(op("missing-value notes"), e))?
            .into_iter()
            .map(|(metric, reason, from_row)| {
                let from_row = usize::try_from(from_row).map_err(|_| {
                    self.corrupt(id, "missing-value notes", format!("row {from_row}"))
                })?;
                Ok(MissingValue {
                    metric,
                    reason,
                    from_row,
                })
            })
            .collect::<Result<_>>()?;
        Ok(series)
    }

    pub(crate) fn load_locks(&self, key: i64, id: &str) -> Result<Vec<LockStat>> {
        type LockRow = (
            String,
            Option<String>,
            i64,
            Option<i64>,
            f64,
            Option<f64>,
            Option<f64>,
            Option<f64>,
            Option<String>,
            Option<String>,
        );
        let rows: Vec<LockRow> = self
            .conn
            .prepare_cached(
                "SELECT name, caller, count, contended, wait_total_s, wait_max_s, hold_total_s,
                    hold_max_s, kind, stack FROM locks WHERE run_key = ?1 ORDER BY idx",
            )
            .and_then(|mut st| {
                st.query_map([key], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                        r.get(8)?,
                        r.get(9)?,
                    ))
                })?
                .collect()
            })
            .map_err(|e| self.fail(format!("reading the lock table of run '{id}'"), e))?;
        rows.into_iter()
            .map(
                |(
                    name,
                    caller,
                    count,
                    contended,
                    wait_total_s,
                    wait_max_s,
                    hold_total_s,
                    hold_max_s,
                    kind,
                    stack,
                )| {
                    let count_of = |v: i64| {
                        u64::try_from(v).map_err(|_| {
                            self.corrupt(
                                id,
                                format!("lock '{name}'"),
                                format!("negative count {v}"),
                            )
                        })
                    };
                    Ok(LockStat {
                        count: count_of(count)?,
                        contended: contended.map(count_of).transpose()?,
                        name: name.clone(),
                        caller,
                        wait_total_s,
                        wait_max_s,
                        hold_total_s,
                        hold_max_s,
                        kind,
                        stack: stack
                            .map(|s: String| s.lines().map(str::to_string).collect())
                            .unwrap_or_default(),
                    })
                },
            )
            .collect()
    }
}
