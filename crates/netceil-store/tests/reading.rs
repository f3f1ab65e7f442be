//! Opening a store only to read it (`runs`, `show`, `export`, `report`, `compare`) creates
//! nothing, converts nothing and writes nothing.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::rich_run;
use netceil_store::{RunFilter, Store};

/// Every file in `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    netceil_testkit::files_in(dir)
}

fn journal_mode(path: &Path) -> String {
    rusqlite::Connection::open(path)
        .unwrap()
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap()
}

#[test]
fn no_store_yet_reads_as_no_runs_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not/yet/runs.db");
    let store = Store::open_for_reading(&path).unwrap();
    assert!(store.list(&RunFilter::default()).unwrap().is_empty());
    let err = store.resolve("last").unwrap_err();
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    assert_eq!(store.path(), path);
    drop(store);
    assert!(
        !dir.path().join("not").exists(),
        "no directory or file was made"
    );
}

#[test]
fn an_empty_file_reads_as_no_runs_and_stays_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    std::fs::write(&path, b"").unwrap();
    let before = snapshot(dir.path());
    let store = Store::open_for_reading(&path).unwrap();
    assert!(store.list(&RunFilter::default()).unwrap().is_empty());
    drop(store);
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn an_empty_file_opened_to_record_becomes_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    std::fs::write(&path, b"").unwrap();
    let store = Store::open(&path).unwrap();
    store.put_run(&rich_run("r")).unwrap();
    assert_eq!(store.get_run("r").unwrap(), rich_run("r"));
}

/// A store is read as it is: a store in rollback-journal mode (copied, restored from a backup,
/// or left so by a tool) is not switched to WAL by a command that only reads it, and a WAL
/// store is left without -wal or -shm files.
#[test]
fn reading_a_store_changes_no_byte_of_it() {
    for mode in ["delete", "wal"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.db");
        let store = Store::open(&path).unwrap();
        store.put_run(&rich_run("r")).unwrap();
        drop(store);
        rusqlite::Connection::open(&path)
            .unwrap()
            .pragma_update(None, "journal_mode", mode)
            .unwrap();
        let before = snapshot(dir.path());
        assert_eq!(before.len(), 1, "{before:?}");

        let store = Store::open_for_reading(&path).unwrap();
        assert_eq!(store.migrations_applied(), 0);
        assert_eq!(store.list(&RunFilter::default()).unwrap().len(), 1);
        assert_eq!(store.get_run("r").unwrap(), rich_run("r"));
        drop(store);
        assert!(
            snapshot(dir.path()) == before,
            "journal mode {mode}: reading changed the store or left files beside it"
        );
        assert_eq!(journal_mode(&path), mode);
    }
}

#[test]
fn a_store_opened_for_reading_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    Store::open(&path).unwrap().put_run(&rich_run("r")).unwrap();
    let store = Store::open_for_reading(&path).unwrap();
    assert!(store.delete("r").is_err());
    assert!(store.put_run(&rich_run("s")).is_err());
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.list(&RunFilter::default()).unwrap().len(), 1);
    assert!(store.get_run("r").is_ok());
}

/// A store being recorded into by another process is read live, and reading it does not stop
/// the recording.
#[test]
fn a_store_is_read_while_another_handle_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let writer = Store::open(&path).unwrap();
    writer.put_run(&rich_run("first")).unwrap();
    let reader = Store::open_for_reading(&path).unwrap();
    writer.put_run(&rich_run("second")).unwrap();
    assert_eq!(reader.list(&RunFilter::default()).unwrap().len(), 2);
    drop(reader);
    writer.put_run(&rich_run("third")).unwrap();
    assert_eq!(writer.list(&RunFilter::default()).unwrap().len(), 3);
}
