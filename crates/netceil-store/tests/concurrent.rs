//! Two recorders writing into one store file at the same moment, as two netceil processes do.

mod common;

use std::sync::{Arc, Barrier};

use common::{assert_rows, row_values, started_run};
use netceil_store::{RunFilter, Store};

const ROWS: usize = 200;

#[test]
fn two_connections_record_two_runs_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    // Both open a file that does not exist yet, so they also race to create the schema.
    let start = Arc::new(Barrier::new(2));
    let recorders: Vec<_> = ["first", "second"]
        .into_iter()
        .map(|id| {
            let (path, start) = (path.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                let store = Store::open(&path).unwrap();
                let run = started_run(id, &[("recorder", id)]);
                let mut writer = store.begin_run(&run).unwrap();
                for r in 0..ROWS {
                    writer.append_row((r + 1) as f64, &row_values(r)).unwrap();
                }
                let mut done = run.clone();
                done.notes.push(format!("{id} done"));
                writer.finish(&done).unwrap();
                store.migrations_applied()
            })
        })
        .collect();
    let applied: Vec<usize> = recorders.into_iter().map(|t| t.join().unwrap()).collect();
    // Exactly one of them created the schema.
    assert_eq!(applied.iter().filter(|&&n| n > 0).count(), 1, "{applied:?}");

    let store = Store::open(&path).unwrap();
    let listed = store.list(&RunFilter::default()).unwrap();
    assert_eq!(listed.len(), 2);
    for id in ["first", "second"] {
        let run = store.get_run(id).unwrap();
        assert!(run.meta.complete);
        assert_eq!(run.meta.labels["recorder"], id);
        assert_eq!(run.notes, [format!("{id} done")]);
        assert_rows(&run.series, ROWS);
    }
}

/// Many openers racing on brand-new files: each must see either no schema at all or all of it,
/// never another opener's tables without its version (a store taken for a foreign database).
#[test]
fn openers_racing_on_a_new_file_all_get_the_store() {
    const OPENERS: usize = 8;
    for round in 0..25 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.db");
        let start = Arc::new(Barrier::new(OPENERS));
        let openers: Vec<_> = (0..OPENERS)
            .map(|_| {
                let (path, start) = (path.clone(), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    Store::open(&path).map(|s| s.migrations_applied())
                })
            })
            .collect();
        let applied: Vec<usize> = openers
            .into_iter()
            .map(|t| match t.join().unwrap() {
                Ok(n) => n,
                Err(e) => panic!("round {round}: an opener was refused: {e:#}"),
            })
            .collect();
        assert_eq!(applied.iter().filter(|&&n| n > 0).count(), 1, "{applied:?}");
    }
}
