//! The store's behaviour, in `:memory:` and on disk.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{assert_rows, finding, rich_run, row_values, started_run};
use netceil_model::{MetricId, MissingValue, Run, Unit};
use netceil_store::{RunFilter, Store, StoreError};

fn on_disk() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("runs.db")).unwrap();
    (dir, store)
}

fn both_stores(test: impl Fn(&Store)) {
    test(&Store::open_in_memory().unwrap());
    let (_dir, store) = on_disk();
    test(&store);
}

fn raw(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

fn count(conn: &rusqlite::Connection, table: &str) -> i64 {
    conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

#[test]
fn put_then_get_is_the_same_run() {
    both_stores(|store| {
        let run = rich_run("20261121-231502-a1b2");
        store.put_run(&run).unwrap();
        let back = store.get_run(&run.run_id).unwrap();
        assert_eq!(back, run);
        // Spot checks that equality really covered the tricky parts.
        let rx = back.series.by_name("rx_bits_per_s").next().unwrap();
        assert_eq!(rx.values[..2], [None, None]);
        assert_eq!(rx.id.label("iface"), Some("veth0"));
        assert_eq!(rx.unit, Unit::BitsPerSecond);
        assert_eq!(back.series.missing.len(), 2);
        assert_eq!(back.parts.len(), 2);
        assert_eq!(back.parts[1].series.len(), 0);
        assert_eq!(back.knees.len(), 1, "a search's answers are stored");
        let cpu1 = back.series.metrics[2].values[0].unwrap();
        assert!(cpu1 == 0.0 && cpu1.is_sign_negative(), "-0.0 kept its sign");
    });
}

#[test]
fn streamed_run_reads_back_the_same() {
    both_stores(|store| {
        let finished = rich_run("20261121-231502-stream");
        let mut started = finished.clone();
        started.meta.complete = false;
        started.series = netceil_model::Series::new(finished.series.interval_s);
        started.results = None;
        started.parts.clear();
        started.locks.clear();
        started.findings.clear();
        started.notes.clear();

        let mut writer = store.begin_run(&started).unwrap();
        let mut growing = netceil_model::Series::new(finished.series.interval_s);
        growing.metrics = finished
            .series
            .metrics
            .iter()
            .map(|m| netceil_model::Metric {
                values: Vec::new(),
                ..m.clone()
            })
            .collect();
        // Feed the series one row at a time, as a sampler would, leaving two rows to finish.
        for r in 0..finished.series.len() - 2 {
            growing.t_s.push(finished.series.t_s[r]);
            for (g, f) in growing.metrics.iter_mut().zip(&finished.series.metrics) {
                g.values.push(f.values[r]);
            }
            growing.missing = finished
                .series
                .missing
                .iter()
                .filter(|m| m.from_row <= r)
                .cloned()
                .collect();
            assert_eq!(writer.append_rows_from(&growing, r).unwrap(), r + 1);
            // While it goes on, the run is readable and incomplete.
            let partial = store.get_run(&finished.run_id).unwrap();
            assert!(!partial.meta.complete);
            assert_eq!(partial.series.len(), r + 1);
        }
        // Handing the same rows again stores nothing twice.
        let rows = writer.rows_written();
        assert_eq!(writer.append_rows_from(&growing, 0).unwrap(), rows);
        writer.finish(&finished).unwrap();
        assert_eq!(store.get_run(&finished.run_id).unwrap(), finished);
    });
}

#[test]
fn append_row_builds_series_with_gaps() {
    both_stores(|store| {
        let mut writer = store.begin_run(&started_run("r1", &[])).unwrap();
        for r in 0..6 {
            assert_eq!(
                writer.append_row((r + 1) as f64, &row_values(r)).unwrap(),
                r
            );
        }
        // A row where nothing was measured is a row of missing values, not of zeros.
        writer.append_row::<MetricId>(7.0, &[]).unwrap();
        writer
            .note_missing(&MissingValue {
                metric: "psi_cpu".into(),
                reason: "no /proc/pressure".into(),
                from_row: 0,
            })
            .unwrap();
        drop(writer);
        let run = store.get_run("r1").unwrap();
        assert!(!run.meta.complete);
        let mut first_six = run.series.clone();
        first_six.t_s.truncate(6);
        for m in &mut first_six.metrics {
            assert_eq!(m.values[6], None, "{} in the empty row", m.id);
            m.values.truncate(6);
        }
        assert_rows(&first_six, 6);
        assert_eq!(run.series.missing[0].metric, "psi_cpu");
    });
}

#[test]
fn append_rows_commits_a_batch_whatever_the_order_of_metrics() {
    both_stores(|store| {
        let mut writer = store.begin_run(&started_run("r1", &[])).unwrap();
        // Shared identities, as the sampler's rows carry them.
        let (a, b) = (Arc::new(MetricId::new("a")), Arc::new(MetricId::new("b")));
        let c = Arc::new(MetricId::new("c").with("cpu", "1"));
        let pps = Unit::PacketsPerSecond;
        let batch = vec![
            (
                1.0,
                vec![(a.clone(), pps, Some(1.0)), (b.clone(), pps, Some(2.0))],
            ),
            // Reordered, and a metric new within the batch.
            (
                2.0,
                vec![
                    (b.clone(), pps, Some(3.0)),
                    (c.clone(), pps, Some(4.0)),
                    (a.clone(), pps, Some(5.0)),
                ],
            ),
            (
                3.0,
                vec![(b.clone(), pps, Some(6.0)), (c.clone(), pps, None)],
            ),
        ];
        assert_eq!(writer.append_rows(&batch).unwrap(), 3);
        // A duplicate anywhere in a batch refuses the whole batch.
        let bad = vec![
            (4.0, vec![(a.clone(), pps, Some(7.0))]),
            (
                5.0,
                vec![(c.clone(), pps, Some(8.0)), (c.clone(), pps, Some(9.0))],
            ),
        ];
        let err = writer.append_rows(&bad).unwrap_err();
        assert!(
            err.to_string()
                .contains("'c{cpu=1}' is given twice in row 4"),
            "{err}"
        );
        assert_eq!(writer.rows_written(), 3);
        drop(writer);
        let run = store.get_run("r1").unwrap();
        let col = |id: &MetricId| run.series.get(id).unwrap().values.clone();
        assert_eq!(run.series.t_s, vec![1.0, 2.0, 3.0]);
        assert_eq!(col(&a), vec![Some(1.0), Some(5.0), None]);
        assert_eq!(col(&b), vec![Some(2.0), Some(3.0), Some(6.0)]);
        assert_eq!(col(&c), vec![None, Some(4.0), None]);
    });
}

#[test]
fn writer_refuses_what_would_not_read_back() {
    let store = Store::open_in_memory().unwrap();
    let mut writer = store.begin_run(&started_run("r1", &[])).unwrap();
    writer.append_row(1.0, &row_values(0)).unwrap();

    let wrong_unit = [(MetricId::new("a"), Unit::BitsPerSecond, Some(1.0))];
    let err = writer.append_row(2.0, &wrong_unit).unwrap_err();
    assert!(matches!(err, StoreError::InvalidRun { .. }));
    assert!(
        err.to_string()
            .contains("'a' is stored in pkt/s but was given in bit/s"),
        "{err}"
    );

    let twice = [
        (MetricId::new("a"), Unit::PacketsPerSecond, Some(1.0)),
        (MetricId::new("a"), Unit::PacketsPerSecond, Some(2.0)),
    ];
    assert!(writer
        .append_row(2.0, &twice)
        .unwrap_err()
        .to_string()
        .contains("twice"));
    assert!(writer
        .append_row::<MetricId>(f64::NAN, &[])
        .unwrap_err()
        .to_string()
        .contains("NaN"));

    let mut gap = netceil_model::Series::new(1.0);
    for t in 0..5 {
        gap.push_row(f64::from(t));
    }
    let err = writer.append_rows_from(&gap, 3).unwrap_err();
    assert!(err.to_string().contains("without gaps"), "{err}");
    // None of the refused rows was stored.
    assert_eq!(writer.rows_written(), 1);
    drop(writer);
    assert_eq!(store.get_run("r1").unwrap().series.len(), 1);
}

#[test]
fn finish_checks_the_run_id_and_nan() {
    let store = Store::open_in_memory().unwrap();
    let writer = store.begin_run(&started_run("r1", &[])).unwrap();
    let err = writer.finish(&started_run("other", &[])).unwrap_err();
    assert!(
        err.to_string().contains("finish was given run 'other'"),
        "{err}"
    );

    let writer = store.begin_run(&started_run("r2", &[])).unwrap();
    let mut bad = started_run("r2", &[]);
    bad.results = Some(common::results(1.0));
    bad.results.as_mut().unwrap().generator.achieved_ratio = Some(f64::NAN);
    let err = writer.finish(&bad).unwrap_err();
    assert!(matches!(err, StoreError::InvalidRun { .. }));
    assert!(
        err.to_string().contains("results would not read back"),
        "{err}"
    );
    assert!(!store.get_run("r2").unwrap().meta.complete);
}

#[test]
fn put_run_refuses_ragged_series_and_nan_locks() {
    let store = Store::open_in_memory().unwrap();
    let mut ragged = rich_run("ragged");
    ragged.series.metrics[1].values.pop();
    let err = store.put_run(&ragged).unwrap_err();
    assert!(
        err.to_string().contains("has 11 values for 12 rows"),
        "{err}"
    );

    let mut nan_lock = rich_run("nan-lock");
    nan_lock.locks[0].hold_max_s = Some(f64::NAN);
    let err = store.put_run(&nan_lock).unwrap_err();
    assert!(
        err.to_string()
            .contains("lock 'rtentry' has hold_max_s = NaN"),
        "{err}"
    );

    let mut nan_part = rich_run("nan-part");
    nan_part.parts[0].series.t_s[1] = f64::NAN;
    let err = store.put_run(&nan_part).unwrap_err();
    assert!(err.to_string().contains("row 1 has t_s = NaN"), "{err}");
    // Refused runs leave nothing behind.
    assert!(store.list(&RunFilter::default()).unwrap().is_empty());
}

#[test]
fn duplicate_ids_are_refused() {
    let store = Store::open_in_memory().unwrap();
    store.put_run(&rich_run("dup")).unwrap();
    let err = store.put_run(&rich_run("dup")).unwrap_err();
    assert!(matches!(err, StoreError::AlreadyExists { ref run_id, .. } if run_id == "dup"));
    assert!(store.begin_run(&started_run("dup", &[])).is_err());
    // A part may share an id with a top-level run: parts are scoped by their parent.
    store.put_run(&rich_run("part-udp")).unwrap();
}

#[test]
fn list_is_newest_first_with_label_filter_and_headline() {
    both_stores(|store| {
        let mut ids = Vec::new();
        for (i, nic) in ["sk", "msk", "sk", "msk"].iter().enumerate() {
            let id = format!("2026112{i}-000000-{nic}");
            let mut run = rich_run(&id);
            run.meta.labels.insert("nic".into(), (*nic).into());
            // Start times are deliberately out of order: listing follows recording order.
            run.meta.started_unix_s = 1e9 - i as f64;
            store.put_run(&run).unwrap();
            ids.push(id);
        }
        let mut live = store
            .begin_run(&started_run("live", &[("nic", "sk")]))
            .unwrap();
        live.append_row(1.0, &row_values(0)).unwrap();
        live.append_row(2.0, &row_values(1)).unwrap();

        let all = store.list(&RunFilter::default()).unwrap();
        let listed: Vec<&str> = all.iter().map(|s| s.run_id.as_str()).collect();
        assert_eq!(listed, ["live", &ids[3], &ids[2], &ids[1], &ids[0]]);

        let first = &all[0];
        assert!(!first.complete);
        assert_eq!((first.rows, first.last_t_s), (2, Some(2.0)));
        assert_eq!(first.verdict, None);
        assert_eq!(first.rx_app_bits_per_s, None);
        assert_eq!(first.kind, Some(netceil_model::WorkloadKind::Udp));

        let full = &all[1];
        assert!(full.complete);
        assert_eq!(full.rows, 12);
        assert_eq!(full.rx_app_bits_per_s, Some(1.176_422_4e9));
        assert_eq!(full.transactions_per_s, Some(70_000.5));
        assert_eq!(full.verdict.as_deref(), Some("hot_cpu bound the run"));
        assert_eq!((full.findings, full.parts), (2, 2));
        assert_eq!(full.labels["bridge"], "no");
        assert_eq!(full.started_unix_s, 1e9 - 3.0);

        let sk = RunFilter {
            labels: vec![("nic".into(), "sk".into())],
            last: None,
        };
        let listed: Vec<String> = store
            .list(&sk)
            .unwrap()
            .into_iter()
            .map(|s| s.run_id)
            .collect();
        assert_eq!(listed, ["live", &ids[2], &ids[0]]);

        let msk_no_bridge_last1 = RunFilter {
            labels: vec![("nic".into(), "msk".into()), ("bridge".into(), "no".into())],
            last: Some(1),
        };
        let listed: Vec<String> = store
            .list(&msk_no_bridge_last1)
            .unwrap()
            .into_iter()
            .map(|s| s.run_id)
            .collect();
        assert_eq!(listed, [ids[3].clone()]);

        let nothing = RunFilter {
            labels: vec![("nic".into(), "e1000".into())],
            last: None,
        };
        assert!(store.list(&nothing).unwrap().is_empty());
    });
}

#[test]
fn resolve_ids_prefixes_and_last() {
    let store = Store::open_in_memory().unwrap();
    assert!(matches!(
        store.resolve("last"),
        Err(StoreError::NotFound { .. })
    ));
    for id in [
        "20261121-231502-aaaa",
        "20261121-231502-aabb",
        "20261122-080000-cccc",
    ] {
        store.put_run(&rich_run(id)).unwrap();
    }
    assert_eq!(store.resolve("last").unwrap(), "20261122-080000-cccc");
    assert_eq!(
        store.resolve("20261121-231502-aaaa").unwrap(),
        "20261121-231502-aaaa"
    );
    assert_eq!(store.resolve("20261122").unwrap(), "20261122-080000-cccc");
    assert_eq!(
        store.resolve(" 20261121-231502-aab ").unwrap(),
        "20261121-231502-aabb"
    );

    let err = store.resolve("20261121-231502-aa").unwrap_err();
    match &err {
        StoreError::Ambiguous {
            count, candidates, ..
        } => {
            assert_eq!(*count, 2);
            assert_eq!(
                candidates,
                &["20261121-231502-aabb", "20261121-231502-aaaa"]
            );
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("matches 2 runs") && text.contains("20261121-231502-aaaa"),
        "{text}"
    );

    assert!(matches!(
        store.resolve("2025"),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.resolve(""),
        Err(StoreError::NotFound { .. })
    ));
    // Parts are not top-level runs.
    assert!(matches!(
        store.resolve("part-udp"),
        Err(StoreError::NotFound { .. })
    ));
    // An id that is a prefix of another still resolves to itself.
    store.put_run(&rich_run("20261122")).unwrap();
    assert_eq!(store.resolve("20261122").unwrap(), "20261122");
}

#[test]
fn many_candidates_are_shortened() {
    let store = Store::open_in_memory().unwrap();
    for i in 0..13 {
        store
            .put_run(&started_run(&format!("x{i:02}"), &[]))
            .unwrap();
    }
    match store.resolve("x").unwrap_err() {
        StoreError::Ambiguous {
            count, candidates, ..
        } => {
            assert_eq!(count, 13);
            assert_eq!(candidates.len(), 11);
            assert_eq!(candidates[0], "x12");
            assert_eq!(candidates[10], "and 3 more");
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }
}

#[test]
fn delete_removes_everything_of_the_run() {
    let (dir, store) = on_disk();
    store.put_run(&rich_run("keep")).unwrap();
    store.put_run(&rich_run("gone")).unwrap();
    let conn = raw(&dir.path().join("runs.db"));
    let tables = [
        "runs", "labels", "metrics", "samples", "missing", "locks", "findings", "notes",
    ];
    let before: Vec<i64> = tables.iter().map(|t| count(&conn, t)).collect();

    store.delete("gone").unwrap();
    let after: Vec<i64> = tables.iter().map(|t| count(&conn, t)).collect();
    for ((table, b), a) in tables.iter().zip(&before).zip(&after) {
        assert_eq!(*a * 2, *b, "{table}: half the rows should remain");
    }
    assert!(matches!(
        store.get_run("gone"),
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(store.get_run("keep").unwrap(), rich_run("keep"));
    assert!(matches!(
        store.delete("gone"),
        Err(StoreError::NotFound { .. })
    ));
}

#[test]
fn set_findings_replaces_findings_and_verdict() {
    both_stores(|store| {
        store.put_run(&rich_run("r")).unwrap();
        let new = vec![finding("generator_limited", 0.7)];
        store.set_findings("r", &new).unwrap();
        let run = store.get_run("r").unwrap();
        assert_eq!(run.findings, new);
        let mut expected = rich_run("r");
        expected.findings = new;
        assert_eq!(run, expected);
        let summary = &store.list(&RunFilter::default()).unwrap()[0];
        assert_eq!(
            summary.verdict.as_deref(),
            Some("generator_limited bound the run")
        );
        store.set_findings("r", &[]).unwrap();
        assert_eq!(store.list(&RunFilter::default()).unwrap()[0].verdict, None);
        assert!(matches!(
            store.set_findings("nope", &[]),
            Err(StoreError::NotFound { .. })
        ));
    });
}

#[test]
fn migration_from_empty_file_then_reopen_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/deeper/runs.db");
    let store = Store::open(&path).unwrap();
    assert!(store.migrations_applied() >= 1);
    let version = store.schema_version();
    assert_eq!(version, store.migrations_applied() as i64);
    store.put_run(&rich_run("r")).unwrap();
    drop(store);

    let conn = raw(&path);
    let on_file: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(on_file, version);
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let schema_before: Vec<String> = conn
        .prepare("SELECT sql FROM sqlite_schema ORDER BY name")
        .unwrap()
        .query_map([], |r| {
            r.get::<_, Option<String>>(0).map(Option::unwrap_or_default)
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let changes_before: i64 = conn
        .query_row("PRAGMA data_version", [], |r| r.get(0))
        .unwrap();

    let again = Store::open(&path).unwrap();
    assert_eq!(again.migrations_applied(), 0);
    assert_eq!(again.get_run("r").unwrap(), rich_run("r"));
    drop(again);
    let schema_after: Vec<String> = conn
        .prepare("SELECT sql FROM sqlite_schema ORDER BY name")
        .unwrap()
        .query_map([], |r| {
            r.get::<_, Option<String>>(0).map(Option::unwrap_or_default)
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(schema_before, schema_after);
    // data_version changes when another connection commits: reopening committed nothing.
    let changes_after: i64 = conn
        .query_row("PRAGMA data_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(changes_before, changes_after);
}

#[test]
fn newer_schema_is_refused_untouched() {
    let (dir, store) = on_disk();
    drop(store);
    let path = dir.path().join("runs.db");
    raw(&path).pragma_update(None, "user_version", 99).unwrap();
    let err = Store::open(&path)
        .err()
        .expect("a newer store must be refused");
    assert!(matches!(err, StoreError::TooNew { found: 99, .. }));
    let text = err.to_string();
    assert!(
        text.contains("schema version 99") && text.contains("upgrade netceil"),
        "{text}"
    );
    assert!(text.contains(&path.display().to_string()));
    let version: i64 = raw(&path)
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, 99);
}

#[test]
fn random_bytes_are_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.db");
    // Deterministic pseudo-random bytes (xorshift), 8 KiB.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let bytes: Vec<u8> = (0..8192)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect();
    std::fs::write(&path, &bytes).unwrap();
    let err = Store::open(&path).err().expect("garbage must be refused");
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("garbage.db") && text.contains("not a netceil run store"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the file was left alone"
    );
}

#[test]
fn another_programs_database_is_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("theirs.db");
    raw(&path)
        .execute_batch("CREATE TABLE contacts (name TEXT);")
        .unwrap();
    let err = Store::open(&path)
        .err()
        .expect("a foreign database must be refused");
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err:?}");
    assert!(err.to_string().contains("contacts"), "{err}");
}

#[test]
fn damaged_samples_give_a_clear_error() {
    let (dir, store) = on_disk();
    store.put_run(&rich_run("r")).unwrap();
    raw(&dir.path().join("runs.db"))
        .execute("UPDATE samples SET vals = x'0100' WHERE row = 3", [])
        .unwrap();
    let err = store.get_run("r").unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("values of row 3"), "{err}");
}

#[test]
fn unwritable_directory_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, "not a directory").unwrap();
    let path = blocker.join("netceil/runs.db");
    let err = Store::open(&path)
        .err()
        .expect("cannot create a directory under a file");
    assert!(matches!(err, StoreError::CreateDir { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[test]
fn in_memory_stores_are_private() {
    let a = Store::open_in_memory().unwrap();
    let b = Store::open_in_memory().unwrap();
    a.put_run(&Run::new("only-in-a", netceil_model::RunSource::Live))
        .unwrap();
    assert!(b.get_run("only-in-a").is_err());
    assert_eq!(a.path(), Path::new(":memory:"));
}

#[test]
fn json_fields_keep_every_bit_of_their_floats() {
    // Each of these reads back one ulp off with serde_json's default (fast) float parser.
    let awkward = [
        207_961_810_867.327_58,
        9_242_132_512.813_595,
        95.195_602_840_263_89,
        92.593_389_264_963_59,
        15.872_014_900_697_417,
    ];
    let mut run = rich_run("floats");
    run.meta.started_unix_s = awkward[0];
    let results = run.results.as_mut().unwrap();
    results.rx_app_bits_per_s = awkward[1];
    results.latency_us.as_mut().unwrap().p99 = awkward[2];
    run.findings[0].evidence[0].value = Some(awkward[3]);
    let w = run.workload.as_mut().unwrap();
    let mut params = w.params.to_map();
    params.insert("awkward".into(), serde_json::json!(awkward[4]));
    *w = netceil_model::Workload::typed(w.kind, &params);
    let store = Store::open_in_memory().unwrap();
    store.put_run(&run).unwrap();
    assert_eq!(store.get_run("floats").unwrap(), run);
}

/// Probes add their series to rows already streamed; finishing writes those rows again, whole.
#[test]
fn metrics_added_to_streamed_rows_are_kept_at_finish() {
    both_stores(|store| {
        let mut writer = store.begin_run(&started_run("late", &[])).unwrap();
        for r in 0..3 {
            writer.append_row((r + 1) as f64, &row_values(r)).unwrap();
        }
        drop(writer);
        let mut run = store.get_run("late").unwrap();
        let mut writer = store.begin_run(&started_run("late2", &[])).unwrap();
        for r in 0..3 {
            writer.append_row((r + 1) as f64, &row_values(r)).unwrap();
        }
        run.run_id = "late2".into();
        let late = MetricId::new("lock_wait_pct");
        for row in 0..3 {
            run.series
                .set_at(row, &late, Unit::Percent, row as f64 * 10.0);
        }
        run.meta.complete = true;
        writer.finish(&run).unwrap();
        let back = store.get_run("late2").unwrap();
        let m = back
            .series
            .metrics
            .iter()
            .find(|m| m.id == late)
            .expect("the late metric is stored");
        assert_eq!(m.values, vec![Some(0.0), Some(10.0), Some(20.0)]);
        assert_eq!(back.series, run.series);
    });
}
