//! Turning a Run into rows: the checks and inserts shared by `put_run`, `begin_run` and
//! `RunWriter`.

use std::collections::BTreeMap;

use netceil_model::{Finding, LockStat, Run, RunMeta, Unit, WorkloadKind};
use rusqlite::{params, Transaction};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::writer::{SeriesState, Staged};
use crate::{Result, Store, StoreError};

/// The `runs` columns of one run, serialized and checked, ready to insert or update.
pub(crate) struct RunRow {
    started_unix_s: f64,
    kind: Option<String>,
    source: String,
    workload: Option<String>,
    meta: String,
    interval_s: f64,
    results: Option<String>,
    headline: [Option<f64>; 6],
    verdict: Option<String>,
}

impl Store {
    pub(crate) fn ensure_absent(&self, tx: &Transaction<'_>, run_id: &str) -> Result<()> {
        if self.key_in(tx, run_id)?.is_some() {
            return Err(StoreError::AlreadyExists {
                run_id: run_id.to_string(),
                path: self.path.clone(),
            });
        }
        Ok(())
    }

    /// Refuses what SQLite would silently change: NaN in a REAL column reads back as NULL.
    pub(crate) fn check_run(&self, run: &Run) -> Result<()> {
        check_run(run).map_err(|detail| self.invalid(&run.run_id, detail))?;
        for part in &run.parts {
            self.check_run(part)?;
        }
        Ok(())
    }

    /// Serializes the `runs` columns of `run`, refusing anything that would not read back.
    pub(crate) fn run_row(&self, run: &Run) -> Result<RunRow> {
        let id = &run.run_id;
        // Labels and `complete` have their own columns; the JSON keeps the rest of the meta.
        let meta = RunMeta {
            labels: BTreeMap::new(),
            complete: false,
            ..run.meta.clone()
        };
        let results = run.results.as_ref();
        Ok(RunRow {
            started_unix_s: run.meta.started_unix_s,
            kind: run.workload.as_ref().map(|w| kind_name(w.kind)),
            source: self.json(id, "source", &run.source)?,
            workload: run
                .workload
                .as_ref()
                .map(|w| self.json(id, "workload", w))
                .transpose()?,
            meta: self.json(id, "meta", &meta)?,
            interval_s: run.series.interval_s,
            results: results.map(|r| self.json(id, "results", r)).transpose()?,
            headline: [
                results.map(|r| r.duration_s),
                results.map(|r| r.tx_pps),
                results.map(|r| r.tx_bits_per_s),
                results.map(|r| r.rx_app_pps),
                results.map(|r| r.rx_app_bits_per_s),
                results.and_then(|r| r.transactions_per_s),
            ],
            verdict: verdict(&run.findings),
        })
    }

    /// JSON that is known to read back equal to `value` (serde_json writes NaN as null).
    pub(crate) fn json<T>(&self, run_id: &str, what: &str, value: &T) -> Result<String>
    where
        T: Serialize + DeserializeOwned + PartialEq,
    {
        let text = serde_json::to_string(value).map_err(|e| {
            self.invalid(run_id, format!("its {what} cannot be written as JSON: {e}"))
        })?;
        match serde_json::from_str::<T>(&text) {
            Ok(back) if back == *value => Ok(text),
            _ => Err(self.invalid(
                run_id,
                format!("its {what} would not read back the same (does it hold a NaN or infinite number?)"),
            )),
        }
    }

    pub(crate) fn insert_run_row(
        &self,
        tx: &Transaction<'_>,
        run_id: &str,
        parent: Option<(i64, usize)>,
        row: &RunRow,
        complete: bool,
    ) -> Result<i64> {
        let [duration_s, tx_pps, tx_bits, rx_pps, rx_bits, tps] = row.headline;
        let (parent_key, part_idx) = match parent {
            Some((k, i)) => (Some(k), Some(to_i64(i))),
            None => (None, None),
        };
        tx.prepare_cached(
            "INSERT INTO runs (id, parent_key, part_idx, started_unix_s, kind, source, workload,
                meta, interval_s, results, complete, duration_s, tx_pps, tx_bits_per_s,
                rx_app_pps, rx_app_bits_per_s, transactions_per_s, verdict)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                ?18)",
        )
        .and_then(|mut st| {
            st.execute(params![
                run_id,
                parent_key,
                part_idx,
                row.started_unix_s,
                row.kind,
                row.source,
                row.workload,
                row.meta,
                row.interval_s,
                row.results,
                complete,
                duration_s,
                tx_pps,
                tx_bits,
                rx_pps,
                rx_bits,
                tps,
                row.verdict,
            ])
        })
        .map_err(|e| self.fail(format!("inserting run '{run_id}'"), e))?;
        Ok(tx.last_insert_rowid())
    }

    /// Rewrites the `runs` columns of an existing run.
    pub(crate) fn update_run_row(
        &self,
        tx: &Transaction<'_>,
        key: i64,
        run_id: &str,
        row: &RunRow,
        complete: bool,
    ) -> Result<()> {
        let [duration_s, tx_pps, tx_bits, rx_pps, rx_bits, tps] = row.headline;
        tx.execute(
            "UPDATE runs SET started_unix_s = ?2, kind = ?3, source = ?4, workload = ?5,
                meta = ?6, interval_s = ?7, results = ?8, complete = ?9, duration_s = ?10,
                tx_pps = ?11, tx_bits_per_s = ?12, rx_app_pps = ?13, rx_app_bits_per_s = ?14,
                transactions_per_s = ?15, verdict = ?16
             WHERE key = ?1",
            params![
                key,
                row.started_unix_s,
                row.kind,
                row.source,
                row.workload,
                row.meta,
                row.interval_s,
                row.results,
                complete,
                duration_s,
                tx_pps,
                tx_bits,
                rx_pps,
                rx_bits,
                tps,
                row.verdict,
            ],
        )
        .map_err(|e| self.fail(format!("updating run '{run_id}'"), e))?;
        Ok(())
    }

    pub(crate) fn insert_labels(&self, tx: &Transaction<'_>, key: i64, run: &Run) -> Result<()> {
        let op = || format!("storing the labels of run '{}'", run.run_id);
        let mut st = tx
            .prepare_cached("INSERT INTO labels (run_key, key, value) VALUES (?1, ?2, ?3)")
            .map_err(|e| self.fail(op(), e))?;
        for (k, v) in &run.meta.labels {
            st.execute(params![key, k, v])
                .map_err(|e| self.fail(op(), e))?;
        }
        Ok(())
    }

    /// Writes staged metrics, rows and missing-value notes of one run.
    pub(crate) fn write_staged(
        &self,
        tx: &Transaction<'_>,
        key: i64,
        run_id: &str,
        staged: &Staged,
    ) -> Result<()> {
        if !staged.new_metrics.is_empty() {
            let op = || format!("storing the metrics of run '{run_id}'");
            let mut st = tx
                .prepare_cached(
                    "INSERT INTO metrics (run_key, metric_idx, name, labels, unit)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(|e| self.fail(op(), e))?;
            for (idx, id, unit) in &staged.new_metrics {
                let labels = self.json(run_id, "metric labels", &id.labels)?;
                st.execute(params![
                    key,
                    to_i64(*idx),
                    id.name,
                    labels,
                    unit_name(*unit)
                ])
                .map_err(|e| self.fail(op(), e))?;
            }
        }
        if !staged.rows.is_empty() {
            let mut st = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO samples (run_key, row, t_s, vals) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(|e| self.fail(format!("appending rows to run '{run_id}'"), e))?;
            for (row, t_s, blob) in &staged.rows {
                st.execute(params![key, to_i64(*row), t_s, blob])
                    .map_err(|e| self.fail(format!("appending row {row} to run '{run_id}'"), e))?;
            }
        }
        if !staged.missing.is_empty() {
            let op = || format!("storing missing-value notes of run '{run_id}'");
            let mut st = tx
                .prepare_cached(
                    "INSERT INTO missing (run_key, idx, metric, reason, from_row)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(|e| self.fail(op(), e))?;
            for (idx, m) in &staged.missing {
                st.execute(params![
                    key,
                    to_i64(*idx),
                    m.metric,
                    m.reason,
                    to_i64(m.from_row)
                ])
                .map_err(|e| self.fail(op(), e))?;
            }
        }
        Ok(())
    }

    /// Writes what is only known at the end: locks, findings, notes and parts. Existing rows of
    /// these kinds are replaced.
    pub(crate) fn write_final_lists(
        &self,
        tx: &Transaction<'_>,
        key: i64,
        run: &Run,
    ) -> Result<()> {
        let id = &run.run_id;
        let op = || format!("storing the results of run '{id}'");
        for table in ["locks", "findings", "notes", "knees"] {
            tx.execute(&format!("DELETE FROM {table} WHERE run_key = ?1"), [key])
                .map_err(|e| self.fail(op(), e))?;
        }
        // Parts cascade their own rows away.
        tx.execute("DELETE FROM runs WHERE parent_key = ?1", [key])
            .map_err(|e| self.fail(op(), e))?;
        self.insert_locks(tx, key, id, &run.locks)?;
        self.insert_findings(tx, key, id, &run.findings)?;
        let mut st = tx
            .prepare_cached("INSERT INTO notes (run_key, idx, text) VALUES (?1, ?2, ?3)")
            .map_err(|e| self.fail(op(), e))?;
        for (i, note) in run.notes.iter().enumerate() {
            st.execute(params![key, to_i64(i), note])
                .map_err(|e| self.fail(op(), e))?;
        }
        let mut st = tx
            .prepare_cached("INSERT INTO knees (run_key, idx, knee) VALUES (?1, ?2, ?3)")
            .map_err(|e| self.fail(op(), e))?;
        for (i, k) in run.knees.iter().enumerate() {
            let text = self.json(id, "knee", k)?;
            st.execute(params![key, to_i64(i), text])
                .map_err(|e| self.fail(op(), e))?;
        }
        for (i, part) in run.parts.iter().enumerate() {
            self.insert_whole_run(tx, part, Some((key, i)))?;
        }
        Ok(())
    }

    fn insert_locks(
        &self,
        tx: &Transaction<'_>,
        key: i64,
        run_id: &str,
        locks: &[LockStat],
    ) -> Result<()> {
        let op = || format!("storing the lock table of run '{run_id}'");
        let mut st = tx
            .prepare_cached(
                "INSERT INTO locks (run_key, idx, name, caller, count, contended, wait_total_s,
                    wait_max_s, hold_total_s, hold_max_s, kind, stack)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )
            .map_err(|e| self.fail(op(), e))?;
        for (i, l) in locks.iter().enumerate() {
            let count = i64::try_from(l.count).map_err(|_| {
                self.invalid(
                    run_id,
                    format!(
                        "lock '{}' count {} exceeds SQLite's 2^63 − 1",
                        l.name, l.count
                    ),
                )
            })?;
            let contended = l.contended.map(i64::try_from).transpose().map_err(|_| {
                self.invalid(
                    run_id,
                    format!("lock '{}' contended count exceeds 2^63 − 1", l.name),
                )
            })?;
            st.execute(params![
                key,
                to_i64(i),
                l.name,
                l.caller,
                count,
                contended,
                l.wait_total_s,
                l.wait_max_s,
                l.hold_total_s,
                l.hold_max_s,
                l.kind,
                (!l.stack.is_empty()).then(|| l.stack.join("\n"))
            ])
            .map_err(|e| self.fail(op(), e))?;
        }
        Ok(())
    }

    pub(crate) fn insert_findings(
        &self,
        tx: &Transaction<'_>,
        key: i64,
        run_id: &str,
        findings: &[Finding],
    ) -> Result<()> {
        let op = || format!("storing the findings of run '{run_id}'");
        let mut st = tx
            .prepare_cached(
                "INSERT INTO findings (run_key, idx, cause, confidence, finding)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .map_err(|e| self.fail(op(), e))?;
        for (i, f) in findings.iter().enumerate() {
            let text = self.json(run_id, &format!("finding '{}'", f.cause), f)?;
            st.execute(params![
                key,
                to_i64(i),
                f.cause.as_str(),
                f.confidence,
                text
            ])
            .map_err(|e| self.fail(op(), e))?;
        }
        Ok(())
    }

    /// Inserts a run with everything it holds, as a top-level run or as part `i` of a parent.
    pub(crate) fn insert_whole_run(
        &self,
        tx: &Transaction<'_>,
        run: &Run,
        parent: Option<(i64, usize)>,
    ) -> Result<()> {
        let row = self.run_row(run)?;
        let key = self.insert_run_row(tx, &run.run_id, parent, &row, run.meta.complete)?;
        self.insert_labels(tx, key, run)?;
        let staged = SeriesState::default()
            .stage(&run.series, 0)
            .map_err(|detail| self.invalid(&run.run_id, detail))?;
        self.write_staged(tx, key, &run.run_id, &staged)?;
        self.write_final_lists(tx, key, run)
    }
}

/// The summary of the most confident finding (the first of equals).
pub(crate) fn verdict(findings: &[Finding]) -> Option<String> {
    findings
        .iter()
        .reduce(|best, f| {
            if f.confidence > best.confidence {
                f
            } else {
                best
            }
        })
        .map(|f| f.summary.clone())
}

fn kind_name(kind: WorkloadKind) -> String {
    match serde_json::to_value(kind) {
        Ok(serde_json::Value::String(s)) => s,
        _ => format!("{kind:?}").to_lowercase(),
    }
}

fn unit_name(unit: Unit) -> String {
    match serde_json::to_value(unit) {
        Ok(serde_json::Value::String(s)) => s,
        _ => format!("{unit:?}"),
    }
}

/// Row and list indices always fit: a run has far fewer than 2^63 of anything.
pub(crate) fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The checks on one run (not its parts) that SQLite columns need.
fn check_run(run: &Run) -> Result<(), String> {
    if run.run_id.is_empty() {
        return Err("its id is empty".into());
    }
    if run.series.interval_s.is_nan() {
        return Err("the series interval is NaN".into());
    }
    for l in &run.locks {
        let fields = [
            ("wait_total_s", Some(l.wait_total_s)),
            ("wait_max_s", l.wait_max_s),
            ("hold_total_s", l.hold_total_s),
            ("hold_max_s", l.hold_max_s),
        ];
        if let Some((field, _)) = fields.iter().find(|(_, v)| v.is_some_and(f64::is_nan)) {
            return Err(format!("lock '{}' has {field} = NaN", l.name));
        }
    }
    Ok(())
}
