//! The versioned schema and its forward migrations.
//!
//! The version lives in SQLite's `PRAGMA user_version`; `MIGRATIONS[i]` takes a database
//! from version `i` to `i + 1`. Pending steps run in one `BEGIN IMMEDIATE` transaction with the
//! version bump, so a failed step changes nothing, and two processes opening a new file at the
//! same moment migrate it once: the second waits for the write lock, then sees the new version.
//! A database newer than [`MIGRATIONS`] is refused before anything is written.
//!
//! Steps are only ever appended; an applied step is never edited.
//!
//! # Tables (version 1)
//! - `runs`: one row per run, and per part of a suite (`parent_key`, `part_idx`). The JSON
//!   columns (`source`, `workload`, `meta`, `results`) hold the model's own serde form, so a
//!   field added to the model later is kept without a migration. `complete`, the headline
//!   throughput and `verdict` are plain columns so that listing runs reads no JSON.
//!   `key` is an AUTOINCREMENT integer: it orders runs by when they were recorded and is never
//!   reused after a delete. Ids are unique among top-level runs only, since a part's id is
//!   chosen by the suite that made it.
//! - `labels`: the run's `key=value` labels, indexed by pair for `--label` filters.
//! - `metrics`: the series columns in order, with their labels and units.
//! - `samples`: one row per interval, `t_s` plus every value in one BLOB (see `samples.rs`).
//!   Appending an interval is one INSERT however many metrics there are, and a value costs 8
//!   bytes (1 bit when missing) instead of the ~30 bytes plus index entry of a
//!   (run, row, metric, value) row; the store always reads whole series, so per-value SQL
//!   access is not worth that price.
//!   `samples` and `findings` keep a rowid (unlike the small lookup tables, which are
//!   `WITHOUT ROWID`) because their rows can be kilobytes, which SQLite stores better out of
//!   the key's B-tree.
//! - `missing`, `locks`, `findings`, `notes`: the Run's lists, each in its original order.
//!
//! # Version 2
//! - `knees`: a search's or a sweep's answers (`Run::knees`), as JSON, in order.
//!
//! Every child row references `runs(key)` with `ON DELETE CASCADE`, so deleting a run deletes
//! its parts, samples and everything else.

use rusqlite::{Connection, TransactionBehavior};

/// Identifies a netceil store among SQLite files (`PRAGMA application_id`): ASCII "ncRS".
pub(crate) const APPLICATION_ID: i32 = 0x6E63_5253;

/// One forward step of the schema.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    /// What the step does, for error messages.
    pub description: &'static str,
    pub sql: &'static str,
}

/// Every schema step, oldest first. The schema version is the number of steps applied.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        description: "create runs, labels, metrics, samples, missing, locks, findings, notes",
        sql: r"
CREATE TABLE runs (
    key                 INTEGER PRIMARY KEY AUTOINCREMENT,
    id                  TEXT NOT NULL,
    parent_key          INTEGER REFERENCES runs(key) ON DELETE CASCADE,
    part_idx            INTEGER,
    started_unix_s      REAL NOT NULL,
    kind                TEXT,
    source              TEXT NOT NULL,
    workload            TEXT,
    meta                TEXT NOT NULL,
    interval_s          REAL NOT NULL,
    results             TEXT,
    complete            INTEGER NOT NULL DEFAULT 0,
    duration_s          REAL,
    tx_pps              REAL,
    tx_bits_per_s       REAL,
    rx_app_pps          REAL,
    rx_app_bits_per_s   REAL,
    transactions_per_s  REAL,
    verdict             TEXT,
    CHECK ((parent_key IS NULL) = (part_idx IS NULL))
);
CREATE UNIQUE INDEX runs_top_level_id ON runs(id) WHERE parent_key IS NULL;
CREATE UNIQUE INDEX runs_parts ON runs(parent_key, part_idx);

CREATE TABLE labels (
    run_key INTEGER NOT NULL REFERENCES runs(key) ON DELETE CASCADE,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (run_key, key)
) WITHOUT ROWID;
CREATE INDEX labels_by_pair ON labels(key, value);

CREATE TABLE metrics (
    run_key    INTEGER NOT NULL REFERENCES runs(key) ON DELETE CASCADE,
    metric_idx INTEGER NOT NULL,
    name       TEXT NOT NULL,
    labels     TEXT NOT NULL,
    unit       TEXT NOT NULL,
    PRIMARY KEY (run_key, metric_idx)
) WITHOUT ROWID;

CREATE TABLE samples (
    run_key INTEGER NOT NULL REFERENCES runs(key) ON DELETE CASCADE,
    row     INTEGER NOT NULL,
    t_s     REAL NOT NULL,
    vals    BLOB NOT NULL,
    PRIMARY KEY (run_key, row)
);

CREATE TABLE missing (
    run_key  INTEGER NOT NULL REFERENCES runs(key) ON DELETE CASCADE,
    idx      INTEGER NOT NULL,
    metric   TEXT NOT NULL,
    reason   TEXT NOT NULL,
    from_row INTEGER NOT NULL,
    PRIMARY KEY (run_key, idx)
) WITHOUT ROWID;

CREATE TABLE locks (
    run_key      INTEGER NOT NULL REFERENCES runs(key) ON DELETE CASCADE,
    idx          INTEGER NOT NULL,
    name         TEXT NOT NULL,
    caller       TEXT,
    count        INTEGER NOT NULL,
    contended    INTEGER,
    wait_total_s REAL NOT NULL,
    wait_max_s   REAL,
    hold_total_s REAL,
    hold_max_s   REAL,
    PRIMARY KEY (run_key, idx)
) WITHOUT ROWID;

CREATE TABLE findings (
    run_key    INTEGER NOT NULL REFERENCES runs(key) ON DELETE CASCADE,
    idx        INTEGER NOT NULL,
    cause      TEXT NOT NULL,
    confidence REAL,
    finding    TEXT NOT NULL,
    PRIMARY KEY (run_key, idx)
);
CREATE INDEX findings_by_cause ON findings(cause);

CREATE TABLE notes (
    run_key INTEGER NOT NULL REFERENCES runs(key) ON DELETE CASCADE,
    idx     INTEGER NOT NULL,
    text    TEXT NOT NULL,
    PRIMARY KEY (run_key, idx)
) WITHOUT ROWID;
",
    },
    Migration {
        description: "add knees (a search's or a sweep's answers)",
        sql: r"
CREATE TABLE knees (
    run_key INTEGER NOT NULL REFERENCES runs(key) ON DELETE CASCADE,
    idx     INTEGER NOT NULL,
    knee    TEXT NOT NULL,
    PRIMARY KEY (run_key, idx)
) WITHOUT ROWID;
",
    },
    Migration {
        description: "add a lock's type and a kernel stack to the lock table (eBPF probes)",
        sql: r"
ALTER TABLE locks ADD COLUMN kind TEXT;
ALTER TABLE locks ADD COLUMN stack TEXT;
",
    },
];

/// The schema version this build writes.
pub(crate) fn latest_version() -> i64 {
    MIGRATIONS.len() as i64
}

/// Why a database could not be brought up to date.
#[derive(Debug)]
pub(crate) enum MigrateError {
    Sqlite {
        op: String,
        source: rusqlite::Error,
    },
    TooNew {
        found: i64,
        supported: i64,
    },
    /// An SQLite file that belongs to someone else.
    Foreign(String),
}

fn sql(op: impl Into<String>) -> impl FnOnce(rusqlite::Error) -> MigrateError {
    let op = op.into();
    move |source| MigrateError::Sqlite { op, source }
}

/// What identifies a database: its application id, its schema version and its tables.
#[derive(Debug)]
pub(crate) struct Schema {
    pub application_id: i32,
    pub version: i64,
    pub tables: Vec<String>,
}

/// Reads the application id, the version and the table list. On a connection outside a
/// transaction they are read in one read transaction: one snapshot. Read apart, a process that
/// opened the same new file a moment earlier could commit its schema between them, and its
/// tables would be seen without its version (a netceil store taken for another program's
/// database). Inside a transaction they are read in that one.
pub(crate) fn read_schema(conn: &Connection) -> rusqlite::Result<Schema> {
    let snapshot = if conn.is_autocommit() {
        Some(rusqlite::Transaction::new_unchecked(
            conn,
            TransactionBehavior::Deferred,
        )?)
    } else {
        None
    };
    let application_id = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let version = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let tables = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if let Some(tx) = snapshot {
        tx.commit()?;
    }
    Ok(Schema {
        application_id,
        version,
        tables,
    })
}

/// Why a database with `id` is not netceil's.
pub(crate) fn foreign_id_detail(id: i32) -> String {
    format!("an SQLite database with application_id {id:#x}, not netceil's {APPLICATION_ID:#x}")
}

/// Why a database without an application id, but with tables or a version, is not netceil's.
pub(crate) fn foreign_detail(schema: &Schema) -> String {
    format!(
        "an SQLite database of another program (schema version {}, tables: {})",
        schema.version,
        if schema.tables.is_empty() {
            "none".to_string()
        } else {
            schema.tables.join(", ")
        }
    )
}

/// The file's schema version, read in one snapshot, once it is known to be a netceil store
/// (or an empty database) that this build can read. Writes nothing.
pub(crate) fn check(conn: &Connection, supported: i64) -> Result<i64, MigrateError> {
    let schema = read_schema(conn).map_err(sql("reading the schema"))?;
    if schema.application_id == APPLICATION_ID {
        if schema.version > supported {
            return Err(MigrateError::TooNew {
                found: schema.version,
                supported,
            });
        }
        return Ok(schema.version);
    }
    if schema.application_id != 0 {
        return Err(MigrateError::Foreign(foreign_id_detail(
            schema.application_id,
        )));
    }
    // application_id 0: either a brand-new file or someone else's database.
    if schema.tables.is_empty() && schema.version == 0 {
        Ok(0)
    } else {
        Err(MigrateError::Foreign(foreign_detail(&schema)))
    }
}

/// Brings the database to the last of `steps`, returning how many steps it applied (0 when it
/// was already up to date, in which case nothing is written). The steps, the application id
/// and the version are written in one transaction: a failure leaves the file as it was.
pub(crate) fn migrate(conn: &Connection, steps: &[Migration]) -> Result<usize, MigrateError> {
    let supported = steps.len() as i64;
    // Checked before taking the write lock, so an up-to-date or too-new file is only read.
    if check(conn, supported)? == supported {
        return Ok(0);
    }
    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
        .map_err(sql("taking the write lock to migrate the schema"))?;
    // Another process may have migrated while we waited for the lock.
    let found = check(&tx, supported)?;
    let start = usize::try_from(found).unwrap_or(0);
    for (i, step) in steps.iter().enumerate().skip(start) {
        tx.execute_batch(step.sql).map_err(sql(format!(
            "schema migration {} → {} ({})",
            i,
            i + 1,
            step.description
        )))?;
    }
    tx.pragma_update(None, "application_id", APPLICATION_ID)
        .map_err(sql("setting application_id"))?;
    tx.pragma_update(None, "user_version", supported)
        .map_err(sql("setting the schema version"))?;
    tx.commit()
        .map_err(sql("committing the schema migration"))?;
    Ok(steps.len() - start)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEP_A: Migration = Migration {
        description: "table a",
        sql: "CREATE TABLE a (x INTEGER);",
    };
    const STEP_B: Migration = Migration {
        description: "table b",
        sql: "CREATE TABLE b (y INTEGER); INSERT INTO a VALUES (1);",
    };
    const STEP_BROKEN: Migration = Migration {
        description: "broken",
        sql: "CREATE TABLE c (z INTEGER); THIS IS NOT SQL;",
    };

    fn user_version(conn: &Connection) -> i64 {
        read_schema(conn).unwrap().version
    }

    fn tables(conn: &Connection) -> Vec<String> {
        conn.prepare("SELECT name FROM sqlite_schema WHERE type='table' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn applies_only_pending_steps_in_order() {
        let conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&conn, &[STEP_A]).unwrap(), 1);
        assert_eq!(user_version(&conn), 1);
        assert_eq!(migrate(&conn, &[STEP_A, STEP_B]).unwrap(), 1);
        assert_eq!(user_version(&conn), 2);
        assert_eq!(tables(&conn), ["a", "b"]);
        // STEP_A ran once: had it run again, CREATE TABLE a would have failed.
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM a", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 1);
        assert_eq!(migrate(&conn, &[STEP_A, STEP_B]).unwrap(), 0);
    }

    #[test]
    fn failed_step_changes_nothing() {
        let conn = Connection::open_in_memory().unwrap();
        migrate(&conn, &[STEP_A]).unwrap();
        let err = migrate(&conn, &[STEP_A, STEP_B, STEP_BROKEN]).unwrap_err();
        match err {
            MigrateError::Sqlite { op, .. } => assert!(op.contains("2 → 3 (broken)"), "{op}"),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(user_version(&conn), 1);
        assert_eq!(tables(&conn), ["a"]);
    }

    #[test]
    fn newer_database_is_refused_untouched() {
        let conn = Connection::open_in_memory().unwrap();
        migrate(&conn, &[STEP_A, STEP_B]).unwrap();
        let err = migrate(&conn, &[STEP_A]).unwrap_err();
        assert!(matches!(
            err,
            MigrateError::TooNew {
                found: 2,
                supported: 1
            }
        ));
        assert_eq!(user_version(&conn), 2);
    }

    #[test]
    fn foreign_database_is_refused() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE theirs (x);").unwrap();
        let err = migrate(&conn, MIGRATIONS).unwrap_err();
        assert!(matches!(err, MigrateError::Foreign(ref d) if d.contains("theirs")));
        assert_eq!(tables(&conn), ["theirs"]);
    }

    #[test]
    fn real_schema_applies_to_an_empty_database() {
        let conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&conn, MIGRATIONS).unwrap(), MIGRATIONS.len());
        assert_eq!(user_version(&conn), latest_version());
        let expected = [
            "findings",
            "knees",
            "labels",
            "locks",
            "metrics",
            "missing",
            "notes",
            "runs",
            "samples",
            "sqlite_sequence",
        ];
        assert_eq!(tables(&conn), expected);
    }
}
