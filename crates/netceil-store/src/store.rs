//! The store handle: opening, whole-run writes and reads, listing, resolving and deleting.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use netceil_model::{Finding, Run, RunSource, WorkloadKind};
use rusqlite::{
    params, Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::inspect::{inspect, Found};
use crate::schema::{self, MigrateError, Migration, MIGRATIONS};
use crate::write::verdict;
use crate::writer::{RunWriter, SeriesState};
use crate::{default_path, Result, StoreError};

/// How long a write waits for another process's transaction before giving up. Appends hold
/// the lock for a millisecond; a large import may hold it for seconds.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(15);

/// At most this many ids are named when a prefix is ambiguous.
const SHOWN_CANDIDATES: usize = 10;

/// A netceil run store: one SQLite file (or an in-memory database for tests).
///
/// Each `Store` owns one connection. Several processes, or several `Store`s in one process,
/// may use the same file at once: the file is in WAL mode, every write is a short
/// `BEGIN IMMEDIATE` transaction, and a writer waits up to 15 s for another to finish.
pub struct Store {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
    migrations_applied: usize,
}

/// Which runs [`Store::list`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Only runs carrying every one of these `key=value` labels.
    pub labels: Vec<(String, String)>,
    /// Only the newest N runs (after the label filter).
    pub last: Option<usize>,
}

/// What a listing shows of a run, read without decoding its series or results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run's full id.
    pub run_id: String,
    /// Start time, seconds since the Unix epoch.
    pub started_unix_s: f64,
    /// The workload kind; `None` for runs without a workload (most imports).
    pub kind: Option<WorkloadKind>,
    /// Live, watched or imported (with the format and file).
    pub source: RunSource,
    /// The run's `key=value` labels.
    pub labels: BTreeMap<String, String>,
    /// False while the run is being recorded, or if its recorder died.
    pub complete: bool,
    /// Series rows stored so far.
    pub rows: usize,
    /// The end of the last stored interval, seconds since the start.
    pub last_t_s: Option<f64>,
    /// [`netceil_model::Results::duration_s`]. This and the five figures below are `None` while the run has
    /// no results (it is still going, was cut short, or is a suite whose parts hold them).
    pub duration_s: Option<f64>,
    /// [`netceil_model::Results::tx_pps`].
    pub tx_pps: Option<f64>,
    /// [`netceil_model::Results::tx_bits_per_s`], decimal bit/s.
    pub tx_bits_per_s: Option<f64>,
    /// [`netceil_model::Results::rx_app_pps`].
    pub rx_app_pps: Option<f64>,
    /// [`netceil_model::Results::rx_app_bits_per_s`], decimal bit/s.
    pub rx_app_bits_per_s: Option<f64>,
    /// [`netceil_model::Results::transactions_per_s`] (request/response runs).
    pub transactions_per_s: Option<f64>,
    /// The summary of the most confident finding.
    pub verdict: Option<String>,
    /// How many findings the run has.
    pub findings: usize,
    /// Parts of a suite run.
    pub parts: usize,
}

/// How [`Store::setup`] prepares a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A new or empty file, to record into: WAL mode first, then the schema made.
    Create,
    /// A netceil store, to record into: its schema brought up to date (in one transaction, so
    /// a failed step leaves the file as it was), then WAL mode.
    Write,
    /// A netceil store, only to read: its journal mode is left as it is and the connection
    /// refuses writes. Only an older store is written to, migrated in one transaction, since
    /// only the current schema can be read.
    Read,
    /// A database in memory.
    Memory,
}

impl Store {
    /// Opens (creating if needed) the store at `path`, creating its parent directories, and
    /// brings its schema up to date.
    ///
    /// Nothing is written to the file, or beside it, before it is known to be a netceil store
    /// this build can use, or a new or empty file. Anything else is refused as it is:
    /// [`StoreError::NotAFile`] for a directory, a FIFO or a device, [`StoreError::NotAStore`]
    /// for random bytes or another program's SQLite database, [`StoreError::TooNew`] for a
    /// store of a newer netceil. An empty file becomes a store.
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        Store::open_with(path.as_ref(), MIGRATIONS)
    }

    /// [`Store::open`] with the schema `steps` given (tests give broken ones).
    fn open_with(path: &Path, steps: &'static [Migration]) -> Result<Store> {
        let path = path.to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                dir: dir.to_path_buf(),
                path: path.clone(),
                source,
            })?;
        }
        let mode = match inspect(&path, steps.len() as i64)? {
            Found::Nothing | Found::Empty => Mode::Create,
            Found::Store { .. } => Mode::Write,
        };
        let conn = Store::connect(&path, true)?;
        Store::setup(conn, path, mode, steps)
    }

    /// Opens the store at `path` for the commands that only read it. Nothing is created: a
    /// missing or empty file reads as a store without runs. A store is read as it is, its
    /// journal mode unchanged, through a connection that refuses writes; only an older one is
    /// migrated first (in one transaction), since only the current schema can be read.
    /// Anything else is refused untouched, as by [`Store::open`].
    pub fn open_for_reading(path: impl AsRef<Path>) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        let latest = schema::latest_version();
        match inspect(&path, latest)? {
            Found::Nothing | Found::Empty => {
                let conn = Store::connect_memory(&path)?;
                Store::setup(conn, path, Mode::Memory, MIGRATIONS)
            }
            Found::Store { .. } => {
                let conn = Store::connect(&path, false)?;
                Store::setup(conn, path, Mode::Read, MIGRATIONS)
            }
        }
    }

    /// A private, empty store that lives as long as the handle (for tests and `--no-store`).
    pub fn open_in_memory() -> Result<Store> {
        let path = PathBuf::from(":memory:");
        let conn = Store::connect_memory(&path)?;
        Store::setup(conn, path, Mode::Memory, MIGRATIONS)
    }

    /// Opens the store at [`default_path`].
    pub fn open_default() -> Result<Store> {
        Store::open(default_path()?)
    }

    /// Opens the store at [`default_path`] for reading ([`Store::open_for_reading`]).
    pub fn open_default_for_reading() -> Result<Store> {
        Store::open_for_reading(default_path()?)
    }

    /// An SQLite connection to the file at `path`, read-write; the file is created only when
    /// `create` is set. The path is a file name, never a URI or SQLite's `:memory:`.
    fn connect(path: &Path, create: bool) -> Result<Connection> {
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let name = if path.is_absolute() {
            path.to_path_buf()
        } else {
            Path::new(".").join(path)
        };
        Connection::open_with_flags(name, flags).map_err(|source| StoreError::Sqlite {
            op: "opening".into(),
            path: path.to_path_buf(),
            source,
        })
    }

    /// A private database in memory; `path` names it in messages.
    fn connect_memory(path: &Path) -> Result<Connection> {
        Connection::open_in_memory().map_err(|source| StoreError::Sqlite {
            op: "opening".into(),
            path: path.to_path_buf(),
            source,
        })
    }

    fn setup(
        conn: Connection,
        path: PathBuf,
        mode: Mode,
        steps: &'static [Migration],
    ) -> Result<Store> {
        let store_err = |op: &str, source: rusqlite::Error| match source.sqlite_error_code() {
            // Random bytes, or an SQLite file damaged in its first pages.
            Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt) => {
                StoreError::NotAStore {
                    path: path.clone(),
                    detail: source.to_string(),
                }
            }
            _ => StoreError::Sqlite {
                op: op.into(),
                path: path.clone(),
                source,
            },
        };
        let migrate_err = |e: MigrateError| match e {
            MigrateError::Sqlite { op, source } => store_err(&op, source),
            MigrateError::TooNew { found, supported } => StoreError::TooNew {
                path: path.clone(),
                found,
                supported,
            },
            MigrateError::Foreign(detail) => StoreError::NotAStore {
                path: path.clone(),
                detail,
            },
        };
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| store_err("setting the busy timeout", e))?;
        let latest = steps.len() as i64;
        if matches!(mode, Mode::Create | Mode::Write) {
            // The file's header said it is new, empty or ours; read that again through this
            // connection, in one snapshot, before the first write.
            schema::check(&conn, latest).map_err(migrate_err)?;
            // NORMAL sync keeps every commit across a process crash; only a power cut can drop
            // the last few, never corrupting the file.
            conn.pragma_update(None, "synchronous", "NORMAL")
                .map_err(|e| store_err("setting synchronous=NORMAL", e))?;
        }
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(|e| store_err("enabling foreign keys", e))?;
        let wal = |conn: &Connection| {
            Store::use_wal(conn).map_err(|e| store_err("switching to WAL mode", e))
        };
        let migrations_applied = match mode {
            Mode::Create => {
                wal(&conn)?;
                schema::migrate(&conn, steps).map_err(migrate_err)?
            }
            Mode::Write => {
                let applied = schema::migrate(&conn, steps).map_err(migrate_err)?;
                wal(&conn)?;
                applied
            }
            Mode::Read => {
                // Writes nothing unless the store is older; `migrate` checks the schema first.
                let applied = schema::migrate(&conn, steps).map_err(migrate_err)?;
                conn.pragma_update(None, "query_only", true)
                    .map_err(|e| store_err("making the connection read-only", e))?;
                applied
            }
            Mode::Memory => schema::migrate(&conn, steps).map_err(migrate_err)?,
        };
        Ok(Store {
            conn,
            path,
            migrations_applied,
        })
    }

    /// Switches the file to WAL, which lets readers and one writer work at once; a killed
    /// writer loses only its uncommitted transaction.
    fn use_wal(conn: &Connection) -> rusqlite::Result<()> {
        // Changing the journal mode while another process opens the same new file can fail at
        // once with "database is locked", without waiting in the busy handler: try again until
        // the busy timeout.
        let started = std::time::Instant::now();
        loop {
            match conn
                .pragma_update_and_check(None, "journal_mode", "wal", |r| r.get::<_, String>(0))
            {
                Ok(_) => return Ok(()),
                Err(e)
                    if matches!(
                        e.sqlite_error_code(),
                        Some(
                            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                        )
                    ) && started.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The file this store lives in (`:memory:` for an in-memory store). A store opened for
    /// reading where there is no store yet names the file it looked at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open store.
    pub fn schema_version(&self) -> i64 {
        schema::latest_version()
    }

    /// How many schema migrations opening this store applied (0 if it was up to date).
    pub fn migrations_applied(&self) -> usize {
        self.migrations_applied
    }

    /// Starts recording a run: its meta and labels (and any series rows it already has) are
    /// committed at once, marked incomplete. Samples follow through the returned writer, and
    /// [`RunWriter::finish`] marks the run complete. If the process dies first, the run stays
    /// readable, incomplete, with every row appended before.
    pub fn begin_run(&self, run: &Run) -> Result<RunWriter<'_>> {
        self.check_run(run)?;
        let tx = self.write_tx(&format!("starting run '{}'", run.run_id))?;
        self.ensure_absent(&tx, &run.run_id)?;
        let row = self.run_row(run)?;
        let key = self.insert_run_row(&tx, &run.run_id, None, &row, false)?;
        self.insert_labels(&tx, key, run)?;
        let mut state = SeriesState::default();
        let staged = state
            .stage(&run.series, 0)
            .map_err(|detail| self.invalid(&run.run_id, detail))?;
        self.write_staged(&tx, key, &run.run_id, &staged)?;
        self.commit(tx, &format!("starting run '{}'", run.run_id))?;
        state.apply(staged);
        Ok(RunWriter::new(self, key, run.run_id.clone(), state))
    }

    /// Stores a finished run in one transaction (imports, copies), with its parts.
    /// `run.meta.complete` is stored as given.
    pub fn put_run(&self, run: &Run) -> Result<()> {
        self.check_run(run)?;
        let op = format!("storing run '{}'", run.run_id);
        let tx = self.write_tx(&op)?;
        self.ensure_absent(&tx, &run.run_id)?;
        self.insert_whole_run(&tx, run, None)?;
        self.commit(tx, &op)
    }

    /// Reads a run back whole, series and parts included. `run_id` is an exact id; see
    /// [`Store::resolve`] for prefixes and `last`.
    pub fn get_run(&self, run_id: &str) -> Result<Run> {
        let key = self.key_of(run_id)?;
        self.load_run(key)
    }

    /// Lists top-level runs, newest recorded first.
    ///
    /// "Newest" is the order runs were stored in, not their start time, so that a log imported
    /// just now comes first even if it was measured years ago.
    pub fn list(&self, filter: &RunFilter) -> Result<Vec<RunSummary>> {
        let mut sql = String::from(
            "SELECT r.id, r.started_unix_s, r.kind, r.source, r.complete, r.duration_s,
                    r.tx_pps, r.tx_bits_per_s, r.rx_app_pps, r.rx_app_bits_per_s,
                    r.transactions_per_s, r.verdict,
                    (SELECT json_group_object(l.key, l.value) FROM labels l
                      WHERE l.run_key = r.key),
                    (SELECT s.row FROM samples s WHERE s.run_key = r.key
                      ORDER BY s.row DESC LIMIT 1),
                    (SELECT s.t_s FROM samples s WHERE s.run_key = r.key
                      ORDER BY s.row DESC LIMIT 1),
                    (SELECT count(*) FROM findings f WHERE f.run_key = r.key),
                    (SELECT count(*) FROM runs p WHERE p.parent_key = r.key)
             FROM runs r WHERE r.parent_key IS NULL",
        );
        let mut args: Vec<&str> = Vec::new();
        for (k, v) in &filter.labels {
            sql.push_str(
                " AND EXISTS (SELECT 1 FROM labels l WHERE l.run_key = r.key \
                 AND l.key = ? AND l.value = ?)",
            );
            args.push(k);
            args.push(v);
        }
        sql.push_str(" ORDER BY r.key DESC");
        if let Some(n) = filter.last {
            sql.push_str(&format!(" LIMIT {n}"));
        }
        let op = "listing runs";
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.fail(op, e))?;
        let raw = stmt
            .query_map(rusqlite::params_from_iter(args), |r| {
                Ok(RawSummary {
                    run_id: r.get(0)?,
                    started_unix_s: r.get(1)?,
                    kind: r.get(2)?,
                    source: r.get(3)?,
                    complete: r.get(4)?,
                    headline: [
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                        r.get(8)?,
                        r.get(9)?,
                        r.get(10)?,
                    ],
                    verdict: r.get(11)?,
                    labels: r.get(12)?,
                    last_row: r.get(13)?,
                    last_t_s: r.get(14)?,
                    findings: r.get(15)?,
                    parts: r.get(16)?,
                })
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| self.fail(op, e))?;
        raw.into_iter().map(|r| self.summary(r)).collect()
    }

    /// Turns what a user typed into a run id: a full id, a unique prefix of one, or `last`
    /// (the run stored most recently). Parts of suites are not matched.
    pub fn resolve(&self, spec: &str) -> Result<String> {
        let spec = spec.trim();
        let not_found = || StoreError::NotFound {
            spec: spec.to_string(),
            path: self.path.clone(),
        };
        if spec.is_empty() {
            return Err(not_found());
        }
        let op = format!("resolving '{spec}'");
        if spec == "last" {
            return self
                .conn
                .query_row(
                    "SELECT id FROM runs WHERE parent_key IS NULL ORDER BY key DESC LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .optional()
                .map_err(|e| self.fail(&op, e))?
                .ok_or_else(not_found);
        }
        if self.find_key(spec)?.is_some() {
            return Ok(spec.to_string());
        }
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id FROM runs WHERE parent_key IS NULL
                 AND substr(id, 1, length(?1)) = ?1 ORDER BY key DESC",
            )
            .map_err(|e| self.fail(&op, e))?;
        let mut ids: Vec<String> = stmt
            .query_map([spec], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.fail(&op, e))?;
        match ids.len() {
            0 => Err(not_found()),
            1 => Ok(ids.remove(0)),
            n => {
                ids.truncate(SHOWN_CANDIDATES);
                if n > SHOWN_CANDIDATES {
                    ids.push(format!("and {} more", n - SHOWN_CANDIDATES));
                }
                Err(StoreError::Ambiguous {
                    spec: spec.to_string(),
                    path: self.path.clone(),
                    count: n,
                    candidates: ids,
                })
            }
        }
    }

    /// Deletes a run (exact id) with everything stored for it, parts included.
    pub fn delete(&self, run_id: &str) -> Result<()> {
        let op = format!("deleting run '{run_id}'");
        let tx = self.write_tx(&op)?;
        let changed = tx
            .execute(
                "DELETE FROM runs WHERE id = ?1 AND parent_key IS NULL",
                [run_id],
            )
            .map_err(|e| self.fail(&op, e))?;
        if changed == 0 {
            return Err(StoreError::NotFound {
                spec: run_id.to_string(),
                path: self.path.clone(),
            });
        }
        self.commit(tx, &op)
    }

    /// Replaces a run's findings (after re-analysis) and its verdict.
    pub fn set_findings(&self, run_id: &str, findings: &[Finding]) -> Result<()> {
        let op = format!("replacing the findings of run '{run_id}'");
        let tx = self.write_tx(&op)?;
        let key = self
            .key_in(&tx, run_id)?
            .ok_or_else(|| StoreError::NotFound {
                spec: run_id.to_string(),
                path: self.path.clone(),
            })?;
        tx.execute("DELETE FROM findings WHERE run_key = ?1", [key])
            .map_err(|e| self.fail(&op, e))?;
        self.insert_findings(&tx, key, run_id, findings)?;
        tx.execute(
            "UPDATE runs SET verdict = ?2 WHERE key = ?1",
            params![key, verdict(findings)],
        )
        .map_err(|e| self.fail(&op, e))?;
        self.commit(tx, &op)
    }

    pub(crate) fn write_tx(&self, op: &str) -> Result<Transaction<'_>> {
        // IMMEDIATE takes the write lock up front: a deferred transaction that reads first
        // can fail with SQLITE_BUSY without waiting when another writer got in between.
        Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| self.fail(format!("{op} (taking the write lock)"), e))
    }

    pub(crate) fn commit(&self, tx: Transaction<'_>, op: &str) -> Result<()> {
        tx.commit()
            .map_err(|e| self.fail(format!("{op} (commit)"), e))
    }

    pub(crate) fn fail(&self, op: impl Into<String>, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            op: op.into(),
            path: self.path.clone(),
            source,
        }
    }

    pub(crate) fn invalid(&self, run_id: &str, detail: impl Into<String>) -> StoreError {
        StoreError::InvalidRun {
            run_id: run_id.to_string(),
            path: self.path.clone(),
            detail: detail.into(),
        }
    }

    pub(crate) fn find_key(&self, run_id: &str) -> Result<Option<i64>> {
        self.conn
            .prepare_cached("SELECT key FROM runs WHERE id = ?1 AND parent_key IS NULL")
            .and_then(|mut st| st.query_row([run_id], |r| r.get(0)).optional())
            .map_err(|e| self.fail(format!("looking up run '{run_id}'"), e))
    }

    pub(crate) fn key_in(&self, tx: &Transaction<'_>, run_id: &str) -> Result<Option<i64>> {
        tx.prepare_cached("SELECT key FROM runs WHERE id = ?1 AND parent_key IS NULL")
            .and_then(|mut st| st.query_row([run_id], |r| r.get(0)).optional())
            .map_err(|e| self.fail(format!("looking up run '{run_id}'"), e))
    }

    pub(crate) fn key_of(&self, run_id: &str) -> Result<i64> {
        self.find_key(run_id)?.ok_or_else(|| StoreError::NotFound {
            spec: run_id.to_string(),
            path: self.path.clone(),
        })
    }

    pub(crate) fn corrupt(
        &self,
        run_id: &str,
        what: impl Into<String>,
        detail: impl ToString,
    ) -> StoreError {
        StoreError::Corrupt {
            run_id: run_id.to_string(),
            path: self.path.clone(),
            what: what.into(),
            detail: detail.to_string(),
        }
    }

    pub(crate) fn parse<T: DeserializeOwned>(
        &self,
        run_id: &str,
        what: &str,
        text: &str,
    ) -> Result<T> {
        serde_json::from_str(text).map_err(|e| self.corrupt(run_id, what, e))
    }

    fn summary(&self, r: RawSummary) -> Result<RunSummary> {
        let id = r.run_id.as_str();
        let kind = r
            .kind
            .map(|k| {
                serde_json::from_value(serde_json::Value::String(k.clone()))
                    .map_err(|_| self.corrupt(id, "workload kind", format!("unknown kind '{k}'")))
            })
            .transpose()?;
        let count = |v: i64| usize::try_from(v).unwrap_or(0);
        let [duration_s, tx_pps, tx_bits_per_s, rx_app_pps, rx_app_bits_per_s, transactions_per_s] =
            r.headline;
        Ok(RunSummary {
            source: self.parse(id, "source", &r.source)?,
            labels: match r.labels {
                Some(text) => self.parse(id, "labels", &text)?,
                None => BTreeMap::new(),
            },
            started_unix_s: r.started_unix_s,
            kind,
            complete: r.complete,
            rows: r.last_row.map_or(0, |row| count(row) + 1),
            last_t_s: r.last_t_s,
            duration_s,
            tx_pps,
            tx_bits_per_s,
            rx_app_pps,
            rx_app_bits_per_s,
            transactions_per_s,
            verdict: r.verdict,
            findings: count(r.findings),
            parts: count(r.parts),
            run_id: r.run_id,
        })
    }
}

/// One listing row as SQLite returns it.
struct RawSummary {
    run_id: String,
    started_unix_s: f64,
    kind: Option<String>,
    source: String,
    complete: bool,
    headline: [Option<f64>; 6],
    verdict: Option<String>,
    labels: Option<String>,
    last_row: Option<i64>,
    last_t_s: Option<f64>,
    findings: i64,
    parts: i64,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use netceil_model::{Run, RunSource};

    use super::*;

    /// Every file in `dir` with its bytes.
    fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        netceil_testkit::files_in(dir)
    }

    fn raw(path: &Path) -> Connection {
        Connection::open(path).unwrap()
    }

    /// A store of schema version 2 holding one run, left in `journal_mode`: made with the
    /// current schema, then taken back by undoing step 3.
    fn older_store(path: &Path, journal_mode: &str) {
        let store = Store::open(path).unwrap();
        store
            .put_run(&Run::new("old-run", RunSource::Live))
            .unwrap();
        drop(store);
        let conn = raw(path);
        conn.execute_batch(
            "ALTER TABLE locks DROP COLUMN stack;
             ALTER TABLE locks DROP COLUMN kind;
             PRAGMA user_version = 2;",
        )
        .unwrap();
        conn.pragma_update(None, "journal_mode", journal_mode)
            .unwrap();
    }

    fn journal_mode(path: &Path) -> String {
        raw(path)
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn an_older_store_is_migrated_and_keeps_its_runs() {
        for (mode, reading) in [
            ("wal", false),
            ("delete", false),
            ("wal", true),
            ("delete", true),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("runs.db");
            older_store(&path, mode);
            let store = if reading {
                Store::open_for_reading(&path).unwrap()
            } else {
                Store::open(&path).unwrap()
            };
            assert_eq!(store.migrations_applied(), MIGRATIONS.len() - 2);
            assert_eq!(store.get_run("old-run").unwrap().run_id, "old-run");
            drop(store);
            let schema = schema::read_schema(&raw(&path)).unwrap();
            assert_eq!(schema.version, schema::latest_version());
            assert_eq!(schema.application_id, schema::APPLICATION_ID);
            // Recording switches an older store to WAL; reading leaves its journal mode.
            let expected = if reading { mode } else { "wal" };
            assert_eq!(journal_mode(&path), expected);
        }
    }

    const BROKEN: &[Migration] = &[
        MIGRATIONS[0],
        MIGRATIONS[1],
        Migration {
            description: "a step that fails half-way",
            sql: "CREATE TABLE half (x INTEGER); THIS IS NOT SQL;",
        },
    ];

    /// A migration that fails leaves an older store exactly as it was: not half-migrated, and
    /// not switched from its rollback journal to WAL either.
    #[test]
    fn a_failed_migration_leaves_an_older_store_as_it_was() {
        for mode in ["delete", "wal"] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("runs.db");
            older_store(&path, mode);
            let before = snapshot(dir.path());
            let err = Store::open_with(&path, BROKEN)
                .err()
                .expect("the broken step fails");
            let text = err.to_string();
            assert!(
                text.contains("2 → 3 (a step that fails half-way)"),
                "{text}"
            );
            assert!(
                snapshot(dir.path()) == before,
                "journal mode {mode}: the file or its directory changed"
            );
            // The store is still a good version-2 store: the real step 3 applies.
            let store = Store::open(&path).unwrap();
            assert_eq!(store.migrations_applied(), 1);
            assert_eq!(store.get_run("old-run").unwrap().run_id, "old-run");
        }
    }
}
