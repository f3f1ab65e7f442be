//! A file that is not known to be a netceil store this build can use is refused before anything
//! is written to it: another program's database, a store of a newer schema, random bytes, a
//! directory, a FIFO, a character device. Each refusal leaves the file byte for byte as it was,
//! with nothing new beside it (no -wal, -shm or -journal).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use netceil_store::{Store, StoreError};

/// netceil's `PRAGMA application_id` ("ncRS").
const NETCEIL_APP_ID: i32 = 0x6E63_5253;

/// Every entry of `dir` with its bytes (a directory's as its own list of entries).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    netceil_testkit::files_in(dir)
}

/// Asserts that opening `path`, in either mode, is refused with an error matching `expected`
/// and leaves its directory exactly as it was.
fn refused_untouched(path: &Path, expected: impl Fn(&StoreError) -> bool) -> Vec<String> {
    let dir = path.parent().unwrap();
    let before = snapshot(dir);
    let mut messages = Vec::new();
    for read_only in [false, true] {
        let opened = if read_only {
            Store::open_for_reading(path)
        } else {
            Store::open(path)
        };
        let err = opened.err().expect("the file must be refused");
        assert!(expected(&err), "unexpected error: {err:?}");
        let text = err.to_string();
        assert!(
            text.contains(&path.display().to_string()),
            "the message names the file: {text}"
        );
        let changes = differences(&before, &snapshot(dir));
        assert!(
            changes.is_empty(),
            "the directory changed (read_only: {read_only}): {changes:?}"
        );
        messages.push(text);
    }
    messages
}

/// What differs between two snapshots: files added, removed or changed (with the first byte
/// that differs).
fn differences(
    before: &BTreeMap<PathBuf, Vec<u8>>,
    after: &BTreeMap<PathBuf, Vec<u8>>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (p, old) in before {
        match after.get(p) {
            None => out.push(format!("{} removed", p.display())),
            Some(new) if new != old => {
                let at = old.iter().zip(new).position(|(a, b)| a != b);
                out.push(format!(
                    "{} changed: {} → {} bytes, first difference at byte {at:?}",
                    p.display(),
                    old.len(),
                    new.len()
                ));
            }
            Some(_) => {}
        }
    }
    for p in after.keys().filter(|p| !before.contains_key(*p)) {
        out.push(format!("{} created", p.display()));
    }
    out
}

fn header(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()[..100].to_vec()
}

#[test]
fn another_programs_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("theirs.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE contacts (name TEXT, phone TEXT);
         INSERT INTO contacts VALUES ('Ada', '555-0100'), ('Bob', '555-0101');",
    )
    .unwrap();
    drop(conn);
    // A rollback-journal database: bytes 18 and 19 of the header are 1.
    assert_eq!(&header(&path)[18..20], &[1, 1]);
    let messages = refused_untouched(&path, |e| matches!(e, StoreError::NotAStore { .. }));
    assert!(messages[0].contains("contacts"), "{}", messages[0]);
    assert_eq!(&header(&path)[18..20], &[1, 1], "still a rollback journal");
}

#[test]
fn another_programs_wal_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("theirs-wal.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "journal_mode", "wal").unwrap();
    conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');")
        .unwrap();
    drop(conn);
    // Closed cleanly: the log is checkpointed and removed, only the database is left.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    let messages = refused_untouched(&path, |e| matches!(e, StoreError::NotAStore { .. }));
    assert!(messages[0].contains("notes"), "{}", messages[0]);
}

#[test]
fn a_database_with_another_application_id_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other-app.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "application_id", 0x4142_4344)
        .unwrap();
    conn.execute_batch("CREATE TABLE runs (x);").unwrap();
    drop(conn);
    let messages = refused_untouched(&path, |e| matches!(e, StoreError::NotAStore { .. }));
    assert!(messages[0].contains("0x41424344"), "{}", messages[0]);
}

/// A store written by a newer netceil, which might keep a rollback journal.
fn newer_store(path: &Path, journal_mode: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_update(None, "journal_mode", journal_mode)
        .unwrap();
    conn.pragma_update(None, "application_id", NETCEIL_APP_ID)
        .unwrap();
    conn.execute_batch("CREATE TABLE runs (key INTEGER PRIMARY KEY, id TEXT, future TEXT);")
        .unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
}

#[test]
fn a_newer_store_is_refused_untouched_and_says_so_truly() {
    for mode in ["delete", "wal"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("newer.db");
        newer_store(&path, mode);
        let messages =
            refused_untouched(&path, |e| matches!(e, StoreError::TooNew { found: 99, .. }));
        for text in &messages {
            assert!(
                text.contains("schema version 99")
                    && text.contains("upgrade netceil")
                    && text.contains("not changed"),
                "{text}"
            );
        }
    }
}

#[test]
fn random_bytes_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.db");
    let bytes: Vec<u8> = (0..8192u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&path, &bytes).unwrap();
    let messages = refused_untouched(&path, |e| matches!(e, StoreError::NotAStore { .. }));
    assert!(
        messages[0].contains("not an SQLite database"),
        "{}",
        messages[0]
    );
}

#[test]
fn a_short_file_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("short.db");
    std::fs::write(&path, b"SQLite format 3\0").unwrap();
    let messages = refused_untouched(&path, |e| matches!(e, StoreError::NotAStore { .. }));
    assert!(messages[0].contains("only 16 bytes"), "{}", messages[0]);
}

#[test]
fn a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a-directory");
    std::fs::create_dir(&path).unwrap();
    let messages = refused_untouched(&path, |e| matches!(e, StoreError::NotAFile { .. }));
    assert!(messages[0].contains("a directory"), "{}", messages[0]);
    assert_eq!(std::fs::read_dir(&path).unwrap().count(), 0);
}

/// Opens `path` for writing and for reading, on another thread, and returns the two errors;
/// fails the test if either open succeeds or both together take more than 10 s (a hang).
fn refused_within_10s(path: &Path) -> [StoreError; 2] {
    let (tx, rx) = mpsc::channel();
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        let results = [
            Store::open(&p).map(|_| ()),
            Store::open_for_reading(&p).map(|_| ()),
        ];
        let _ = tx.send(results);
    });
    let results = rx
        .recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("opening {} hung", path.display()));
    results.map(|r| match r {
        Ok(()) => panic!("{} was opened as a store", path.display()),
        Err(e) => e,
    })
}

#[test]
fn a_fifo_is_refused_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a-fifo");
    nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let before = snapshot_names(dir.path());
    for err in refused_within_10s(&path) {
        assert!(matches!(err, StoreError::NotAFile { .. }), "{err:?}");
        assert!(err.to_string().contains("a FIFO"), "{err}");
    }
    assert_eq!(snapshot_names(dir.path()), before);
}

fn snapshot_names(dir: &Path) -> Vec<PathBuf> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    names
}

#[test]
fn a_character_device_is_refused_without_growing_or_leaving_files() {
    let dev = Path::new("/dev/zero");
    if netceil_testkit::skip_on((!dev.exists()).then(|| "this machine has no /dev/zero".into())) {
        return;
    }
    let beside: Vec<PathBuf> = ["-wal", "-shm", "-journal"]
        .iter()
        .map(|s| PathBuf::from(format!("/dev/zero{s}")))
        .collect();
    let taken = beside.iter().any(|p| p.exists());
    if netceil_testkit::skip_on(
        taken.then(|| "/dev/zero-wal, -shm or -journal already exists (not this test's)".into()),
    ) {
        return;
    }
    let errors = refused_within_10s(dev);
    // Anything this test made beside /dev/zero is removed before judging, so a failure leaves
    // /dev as it was.
    let left: Vec<&PathBuf> = beside.iter().filter(|p| p.exists()).collect();
    for p in &left {
        let _ = std::fs::remove_file(p);
    }
    assert!(left.is_empty(), "files left beside /dev/zero: {left:?}");
    for err in errors {
        assert!(matches!(err, StoreError::NotAFile { .. }), "{err:?}");
        assert!(err.to_string().contains("a character device"), "{err}");
    }
}

/// A WAL database whose tables are still only in its log, copied without the log's index
/// (-shm): read as it lies it looks empty, but any read-write open would recover the log into
/// the file. It is refused, and the file and its log stay as they were.
#[test]
fn a_wal_log_without_its_index_is_left_alone() {
    let live = tempfile::tempdir().unwrap();
    let live_path = live.path().join("theirs.db");
    let conn = rusqlite::Connection::open(&live_path).unwrap();
    conn.pragma_update(None, "journal_mode", "wal").unwrap();
    conn.execute_batch("CREATE TABLE inbox (msg TEXT); INSERT INTO inbox VALUES ('hello');")
        .unwrap();
    // Copied while the owner still has it open: the table is in the log, not yet in the file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("theirs.db");
    std::fs::copy(&live_path, &path).unwrap();
    std::fs::copy(
        live.path().join("theirs.db-wal"),
        dir.path().join("theirs.db-wal"),
    )
    .unwrap();
    drop(conn);
    assert_eq!(&header(&path)[18..20], &[2, 2], "a WAL database");
    let messages = refused_untouched(&path, |e| {
        matches!(e, StoreError::Unknown { .. } | StoreError::NotAStore { .. })
    });
    assert!(messages[0].contains("-shm"), "{}", messages[0]);
}
