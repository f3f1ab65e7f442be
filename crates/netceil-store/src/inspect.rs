//! What a path holds, found out before anything is written to it.
//!
//! Opening a file the usual way can change it before its schema is read: switching to WAL
//! rewrites bytes 18 and 19 of the header, and even a read-only SQLite connection leaves `-wal`
//! and `-shm` files beside a WAL database. So a path is first looked at without SQLite: its
//! type, its size and its 100-byte header. Only when the header leaves the question open (an
//! SQLite file without netceil's application id) is it read through SQLite, in a way that
//! writes nothing: read-only, and `immutable` when a WAL database has no log beside it.
//!
//! The header fields used (<https://www.sqlite.org/fileformat.html#the_database_header>):
//! the 16-byte magic string, the file format write and read versions at bytes 18 and 19 (2 in
//! WAL mode), the user version at 60 (netceil's schema version) and the application id at 68,
//! both big-endian.

use std::fs::{File, FileType};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::schema::APPLICATION_ID;
use crate::{Result, StoreError};

/// How many bytes of an SQLite header are read.
const HEADER_LEN: usize = 100;
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// What [`inspect`] found at a path that netceil may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// No file: a new store may be made there.
    Nothing,
    /// A file with nothing in it (no bytes, or an SQLite database without tables or version):
    /// nothing of anyone's can be lost by making it a store.
    Empty,
    /// A netceil store of this schema version, which this build can read.
    Store { version: i64 },
}

/// The header fields netceil decides by.
struct Header {
    wal: bool,
    user_version: i64,
    application_id: i32,
}

/// Finds out what `path` holds without writing to it or beside it. A file that is not a
/// netceil store this build can use is an error: not a file, not an SQLite database, another
/// program's database, or a store of a newer schema than `supported`.
pub(crate) fn inspect(path: &Path, supported: i64) -> Result<Found> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(source) => return Err(io_err(path, "looking at", source)),
    };
    not_a_file(path, meta.file_type())?;
    if meta.len() == 0 {
        return Ok(Found::Empty);
    }
    let header = read_header(path)?;
    if header.application_id == APPLICATION_ID {
        // Only netceil sets this id. Its version is checked again under SQLite's lock before
        // anything is written, in case a newer netceil is migrating the file right now.
        return if header.user_version > supported {
            Err(too_new(path, header.user_version, supported))
        } else {
            Ok(Found::Store {
                version: header.user_version,
            })
        };
    }
    if header.application_id != 0 {
        return Err(foreign_id(path, header.application_id));
    }
    // No application id in the file itself: another program's database, an empty SQLite
    // file, or a store whose first commit is still in its WAL log. Only its schema tells.
    look_inside(path, &header, supported)
}

/// Refuses directories, FIFOs, devices and sockets before they are opened: a FIFO would block
/// the open, and a character device such as /dev/zero reads as an endless empty database.
fn not_a_file(path: &Path, kind: FileType) -> Result<()> {
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(StoreError::NotAFile {
        path: path.to_path_buf(),
        what,
    })
}

fn read_header(path: &Path) -> Result<Header> {
    // O_NONBLOCK: if the file was swapped for a FIFO since it was looked at, the open returns
    // at once instead of waiting for a writer; the type is then checked on what was opened.
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| io_err(path, "opening", e))?;
    let meta = file.metadata().map_err(|e| io_err(path, "looking at", e))?;
    not_a_file(path, meta.file_type())?;
    let mut bytes = Vec::with_capacity(HEADER_LEN);
    file.take(HEADER_LEN as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| io_err(path, "reading", e))?;
    if bytes.len() < HEADER_LEN || &bytes[..MAGIC.len()] != MAGIC {
        let detail = if bytes.starts_with(MAGIC) {
            format!(
                "it has only {} bytes, too few for an SQLite database",
                meta.len()
            )
        } else {
            "it is not an SQLite database (it does not begin with the SQLite header)".to_string()
        };
        return Err(StoreError::NotAStore {
            path: path.to_path_buf(),
            detail,
        });
    }
    let be = |at: usize| [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]];
    Ok(Header {
        wal: bytes[18] == 2 || bytes[19] == 2,
        user_version: i64::from(i32::from_be_bytes(be(60))),
        application_id: i32::from_be_bytes(be(68)),
    })
}

/// Reads the application id, the schema version and the table names through SQLite, without
/// writing to the file or beside it.
fn look_inside(path: &Path, header: &Header, supported: i64) -> Result<Found> {
    let sidecar = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        std::fs::metadata(PathBuf::from(name)).ok().map(|m| m.len())
    };
    let (log, index) = (sidecar("-wal"), sidecar("-shm").is_some());
    // A rollback-journal database is read with shared locks, which write nothing; a hot
    // journal makes the read fail rather than be rolled back. A WAL database needs its -wal
    // and -shm files to be read live, and a read-only connection would create and leave them,
    // so without them it is read as it lies (immutable): with no log, the file is all there is.
    // A log without its index could only be read by recovering it, which any later read-write
    // connection would also write back into the file: the file is left alone.
    if header.wal && log.is_some_and(|len| len > 0) && !index {
        return Err(StoreError::Unknown {
            path: path.to_path_buf(),
            detail: "its WAL log (-wal) is there without its index (-shm), and reading it \
                     would recover the log into the file"
                .to_string(),
        });
    }
    let immutable = header.wal && !(log.is_some() && index);
    let uri = format!(
        "file:{}?mode=ro{}",
        uri_path(path),
        if immutable { "&immutable=1" } else { "" }
    );
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let unknown = |source: rusqlite::Error| match source.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt) => {
            StoreError::NotAStore {
                path: path.to_path_buf(),
                detail: source.to_string(),
            }
        }
        _ => StoreError::Unknown {
            path: path.to_path_buf(),
            detail: match source.sqlite_error_code() {
                Some(rusqlite::ErrorCode::ReadOnly) => format!(
                    "an unfinished transaction of the program that wrote it (a hot journal) \
                     would have to be rolled back first ({source})"
                ),
                _ => source.to_string(),
            },
        },
    };
    let conn = Connection::open_with_flags(&uri, flags).map_err(unknown)?;
    conn.busy_timeout(crate::store::BUSY_TIMEOUT)
        .map_err(unknown)?;
    let schema = crate::schema::read_schema(&conn).map_err(unknown)?;
    if schema.application_id == APPLICATION_ID {
        return if schema.version > supported {
            Err(too_new(path, schema.version, supported))
        } else {
            Ok(Found::Store {
                version: schema.version,
            })
        };
    }
    if schema.application_id != 0 {
        return Err(foreign_id(path, schema.application_id));
    }
    if schema.tables.is_empty() && schema.version == 0 {
        return Ok(Found::Empty);
    }
    Err(StoreError::NotAStore {
        path: path.to_path_buf(),
        detail: crate::schema::foreign_detail(&schema),
    })
}

/// `path` for an SQLite URI: every byte but unreserved ones percent-encoded, so that `?`, `#`
/// and `%` in a file name stay part of the name.
fn uri_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn io_err(path: &Path, op: &'static str, source: std::io::Error) -> StoreError {
    StoreError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

fn too_new(path: &Path, found: i64, supported: i64) -> StoreError {
    StoreError::TooNew {
        path: path.to_path_buf(),
        found,
        supported,
    }
}

fn foreign_id(path: &Path, id: i32) -> StoreError {
    StoreError::NotAStore {
        path: path.to_path_buf(),
        detail: crate::schema::foreign_id_detail(id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_paths_keep_special_characters_in_the_name() {
        assert_eq!(
            uri_path(Path::new("/tmp/a b?c#d%e.db")),
            "/tmp/a%20b%3Fc%23d%25e.db"
        );
        assert_eq!(uri_path(Path::new("rel/x.db")), "rel/x.db");
    }

    #[test]
    fn a_file_name_with_uri_characters_is_inspected_as_itself() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("odd?mode=rw&x#y%z.db");
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
        )
        .unwrap();
        conn.execute_batch("CREATE TABLE theirs (x);").unwrap();
        drop(conn);
        let err = inspect(&path, 3).unwrap_err();
        assert!(err.to_string().contains("theirs"), "{err}");
    }
}
