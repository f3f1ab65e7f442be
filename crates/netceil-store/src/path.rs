//! Where the store lives when nobody says: one file per user, no server.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::{Result, StoreError};

/// The store file netceil uses by default: `$NETCEIL_DB`, else `$XDG_DATA_HOME/netceil/runs.db`,
/// else `~/.local/share/netceil/runs.db`.
///
/// Empty variables count as unset, and a relative `$XDG_DATA_HOME` is ignored, as the XDG Base
/// Directory specification asks. The directory is created by [`crate::Store::open`], not here.
pub fn default_path() -> Result<PathBuf> {
    default_path_from(
        std::env::var_os("NETCEIL_DB"),
        std::env::var_os("XDG_DATA_HOME"),
        std::env::var_os("HOME"),
    )
}

/// [`default_path`] from explicit values, so the rule is testable without touching the
/// process environment.
pub fn default_path_from(
    netceil_db: Option<OsString>,
    xdg_data_home: Option<OsString>,
    home: Option<OsString>,
) -> Result<PathBuf> {
    let set = |v: Option<OsString>| v.filter(|s| !s.is_empty());
    if let Some(db) = set(netceil_db) {
        return Ok(PathBuf::from(db));
    }
    if let Some(xdg) = set(xdg_data_home).map(PathBuf::from) {
        if xdg.is_absolute() {
            return Ok(xdg.join("netceil").join("runs.db"));
        }
    }
    match set(home) {
        Some(home) => Ok(Path::new(&home).join(".local/share/netceil/runs.db")),
        None => Err(StoreError::NoDefaultPath),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Option<OsString> {
        Some(OsString::from(s))
    }

    #[test]
    fn netceil_db_wins() {
        let p = default_path_from(os("/tmp/x.db"), os("/xdg"), os("/home/u")).unwrap();
        assert_eq!(p, PathBuf::from("/tmp/x.db"));
    }

    #[test]
    fn xdg_data_home_next() {
        let p = default_path_from(None, os("/xdg"), os("/home/u")).unwrap();
        assert_eq!(p, PathBuf::from("/xdg/netceil/runs.db"));
        let p = default_path_from(os(""), os("/xdg"), os("/home/u")).unwrap();
        assert_eq!(p, PathBuf::from("/xdg/netceil/runs.db"));
    }

    #[test]
    fn home_last_and_relative_xdg_ignored() {
        let p = default_path_from(None, os("rel/xdg"), os("/home/u")).unwrap();
        assert_eq!(p, PathBuf::from("/home/u/.local/share/netceil/runs.db"));
        let p = default_path_from(None, os(""), os("/home/u")).unwrap();
        assert_eq!(p, PathBuf::from("/home/u/.local/share/netceil/runs.db"));
    }

    #[test]
    fn nothing_set_is_an_error() {
        let err = default_path_from(None, None, os("")).unwrap_err();
        assert!(matches!(err, StoreError::NoDefaultPath));
        assert!(err.to_string().contains("NETCEIL_DB"));
    }
}
