//! Who owns each lab namespace on this machine.
//!
//! Each store (each `NETCEIL_DB`) keeps its own journal, and one store's `lab down --all` must
//! not take down another's live lab. So before netceil creates a namespace it writes an owner
//! record, `/run/netceil/NAMESPACE.json`: the creating process (PID and start time, so that a
//! reused PID is not taken for it), whether the lab is kept up on purpose (`lab up`), and the
//! journal that holds the change. /run is emptied at boot, as /run/netns is, so a record never
//! outlives its namespace across a reboot. The record belongs to the namespace's journal
//! entry: it is written after the `do` line and removed with the namespace, by its owner or by
//! recovery; the directory goes when it is left empty.
//!
//! A namespace is then [`Status::Running`] (its owner still runs), [`Status::Kept`] (`lab up`
//! left it up and its journal still holds it), [`Status::Orphaned`] (neither: its owner was
//! killed, or the journal that kept it is gone) or [`Status::Unknown`] (no record, or one that
//! cannot be read). Only an orphaned lab may be removed without being named with `--force`.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::journal::{Change, Journal};
use crate::{LabError, Result};

/// Where the owner records live.
pub const RUN_DIR: &str = "/run/netceil";

/// The longest owner record read; a record is a line of about 200 bytes.
const MAX_RECORD: u64 = 64 * 1024;

/// A process, by PID and start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub pid: u32,
    /// Clock ticks since boot when it started (field 22 of /proc/PID/stat).
    pub start: u64,
}

/// A process's start time in clock ticks since boot (field 22 of /proc/PID/stat), so that
/// a PID the kernel reused is not taken for the process that wrote the journal.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

impl Owner {
    /// This process.
    pub fn me() -> Owner {
        static ME: OnceLock<Owner> = OnceLock::new();
        *ME.get_or_init(|| {
            let pid = std::process::id();
            Owner {
                pid,
                start: start_ticks(pid).unwrap_or(0),
            }
        })
    }

    /// Whether the process still runs (the same PID with the same start time).
    pub fn alive(&self) -> bool {
        start_ticks(self.pid) == Some(self.start)
    }
}

/// What `/run/netceil/NAMESPACE.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub netns: String,
    pub pid: u32,
    pub start: u64,
    /// Made by `lab up`, to stay up after its process ends.
    pub persistent: bool,
    /// The journal that holds the namespace's change (absolute).
    pub journal: PathBuf,
}

impl Record {
    pub fn owner(&self) -> Owner {
        Owner {
            pid: self.pid,
            start: self.start,
        }
    }
}

/// Who owns a lab namespace, as far as can be known.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// Its owner still runs.
    Running { owner: Owner, journal: PathBuf },
    /// `lab up` left it up on purpose, and its journal still holds it.
    Kept { owner: Owner, journal: PathBuf },
    /// Its owner is gone: the process ended, and no journal keeps the lab up.
    Orphaned {
        owner: Owner,
        journal: PathBuf,
        persistent: bool,
    },
    /// Nothing says who made it, or what says it cannot be read.
    Unknown { why: String },
}

impl Status {
    /// Whether it may be removed without being named (`lab down --all`).
    pub fn orphaned(&self) -> bool {
        matches!(self, Status::Orphaned { .. })
    }

    /// The journal that holds it, when known.
    pub fn journal(&self) -> Option<&Path> {
        match self {
            Status::Running { journal, .. }
            | Status::Kept { journal, .. }
            | Status::Orphaned { journal, .. } => Some(journal),
            Status::Unknown { .. } => None,
        }
    }

    /// How strongly it protects a lab: a lab is as protected as its best-protected namespace.
    pub(crate) fn rank(&self) -> u8 {
        match self {
            Status::Orphaned { .. } => 0,
            Status::Unknown { .. } => 1,
            Status::Kept { .. } => 2,
            Status::Running { .. } => 3,
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Running { owner, journal } => write!(
                f,
                "running, owned by netceil PID {} (journal {})",
                owner.pid,
                journal.display()
            ),
            Status::Kept { owner, journal } => write!(
                f,
                "kept up by `netceil lab up` (PID {}, ended; journal {})",
                owner.pid,
                journal.display()
            ),
            Status::Orphaned {
                owner,
                journal,
                persistent: false,
            } => write!(
                f,
                "orphaned: its owner, netceil PID {}, is gone (journal {})",
                owner.pid,
                journal.display()
            ),
            Status::Orphaned {
                owner,
                journal,
                persistent: true,
            } => write!(
                f,
                "orphaned: `lab up` (PID {}) is gone, and its journal {} no longer holds it as a lab that is up (the journal was removed, or `lab up` was killed before the lab was up)",
                owner.pid,
                journal.display()
            ),
            Status::Unknown { why } => write!(f, "owner unknown: {why}"),
        }
    }
}

/// Whether a namespace exists (`ip netns` names it under /run/netns).
pub(crate) fn netns_exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists()
}

/// The directory of owner records.
#[derive(Debug, Clone, PartialEq)]
pub struct Registry {
    dir: PathBuf,
}

impl Default for Registry {
    fn default() -> Registry {
        Registry::at(RUN_DIR)
    }
}

impl Registry {
    pub fn at(dir: impl Into<PathBuf>) -> Registry {
        Registry { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The record file of a namespace.
    pub fn file(&self, netns: &str) -> PathBuf {
        self.dir.join(format!("{netns}.json"))
    }

    fn fail(&self, netns: &str, detail: impl std::fmt::Display) -> LabError {
        LabError::Record {
            path: self.file(netns).display().to_string(),
            detail: detail.to_string(),
        }
    }

    /// The record of a namespace; `None` when there is none. A record that does not parse is
    /// an error naming the file and what was expected.
    pub fn read(&self, netns: &str) -> Result<Option<Record>> {
        let file = match std::fs::File::open(self.file(netns)) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.fail(netns, e)),
        };
        let mut text = String::new();
        file.take(MAX_RECORD + 1)
            .read_to_string(&mut text)
            .map_err(|e| self.fail(netns, e))?;
        if text.len() as u64 > MAX_RECORD {
            return Err(self.fail(
                netns,
                format!("over {MAX_RECORD} bytes; a record is one line"),
            ));
        }
        let rec: Record = serde_json::from_str(&text).map_err(|e| {
            self.fail(
                netns,
                format!("line 1: expected one JSON object with netns, pid, start, persistent and journal ({e})"),
            )
        })?;
        if rec.netns != netns {
            return Err(self.fail(
                netns,
                format!(
                    "line 1: expected the record of {netns}, found {}'s",
                    rec.netns
                ),
            ));
        }
        Ok(Some(rec))
    }

    /// Writes a namespace's record before the namespace is made. A record already there is
    /// replaced only if its namespace does not exist and its owner is gone; otherwise the claim
    /// is refused, saying whose it is.
    pub fn claim(&self, rec: &Record) -> Result<()> {
        let path = self.file(&rec.netns);
        let text = serde_json::to_string(rec).map_err(|e| self.fail(&rec.netns, e))? + "\n";
        // A concurrent `lab down` may remove the empty directory between the two steps.
        for _ in 0..5 {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(&self.dir)
                .map_err(|e| {
                    self.fail(&rec.netns, format!("creating {}: {e}", self.dir.display()))
                })?;
            let created = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o644)
                .open(&path);
            match created {
                Ok(mut f) => {
                    f.write_all(text.as_bytes())
                        .and_then(|()| f.sync_data())
                        .map_err(|e| self.fail(&rec.netns, e))?;
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let old = match self.read(&rec.netns) {
                        Ok(Some(old)) => old,
                        Ok(None) => continue,
                        Err(_) if !netns_exists(&rec.netns) => {
                            // Torn by a kill between its creation and its write, and nothing
                            // of it was made: nothing to protect.
                            self.release(&rec.netns, None)?;
                            continue;
                        }
                        Err(e) => return Err(e),
                    };
                    if netns_exists(&old.netns) || old.owner().alive() {
                        return Err(LabError::Usage(format!(
                            "namespace {} is already claimed: {} (record {})",
                            rec.netns,
                            status_of(&old),
                            path.display()
                        )));
                    }
                    self.release(&rec.netns, None)?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(self.fail(&rec.netns, e)),
            }
        }
        Err(self.fail(
            &rec.netns,
            "could not be created: the directory kept vanishing",
        ))
    }

    /// Removes a namespace's record, if it names `owner` (`None`: whoever it names), and the
    /// directory when that leaves it empty.
    pub fn release(&self, netns: &str, owner: Option<&Owner>) -> Result<()> {
        if let Some(o) = owner {
            match self.read(netns) {
                Ok(Some(rec)) if rec.owner() != *o => return Ok(()),
                Ok(None) => return Ok(()),
                _ => {}
            }
        }
        match std::fs::remove_file(self.file(netns)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(self.fail(netns, format!("removing it: {e}"))),
        }
        // Fails while other records are there, as it should.
        let _ = std::fs::remove_dir(&self.dir);
        Ok(())
    }

    /// The namespaces that have a record, sorted.
    pub fn namespaces(&self) -> Vec<String> {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut v: Vec<String> = dir
            .flatten()
            .filter_map(|e| {
                e.file_name()
                    .to_str()?
                    .strip_suffix(".json")
                    .map(str::to_string)
            })
            .collect();
        v.sort();
        v
    }

    /// Who owns a namespace, as its record says.
    pub fn status(&self, netns: &str) -> Status {
        match self.read(netns) {
            Ok(Some(rec)) => status_of(&rec),
            Ok(None) => Status::Unknown {
                why: format!(
                    "no owner record ({}): made by hand, or by a netceil that kept none",
                    self.file(netns).display()
                ),
            },
            Err(e) => Status::Unknown { why: e.to_string() },
        }
    }

    /// Removes records whose namespace is gone and whose owner no longer runs (left by a
    /// recovery cut short); what was removed.
    pub fn sweep(&self) -> Vec<String> {
        let mut removed = Vec::new();
        for ns in self.namespaces() {
            if netns_exists(&ns) {
                continue;
            }
            let keep = matches!(self.read(&ns), Ok(Some(rec)) if rec.owner().alive());
            if !keep && self.release(&ns, None).is_ok() {
                removed.push(format!(
                    "owner record {} (its namespace is gone)",
                    self.file(&ns).display()
                ));
            }
        }
        removed
    }
}

/// Who owns a namespace, from its record.
pub fn status_of(rec: &Record) -> Status {
    let owner = rec.owner();
    let journal = rec.journal.clone();
    if owner.alive() {
        return Status::Running { owner, journal };
    }
    if !rec.persistent {
        return Status::Orphaned {
            owner,
            journal,
            persistent: false,
        };
    }
    let netns = Change::Netns {
        name: rec.netns.clone(),
    };
    // Kept only once `lab up` finished: its last step journals the lab itself. A `lab up`
    // killed before that left namespaces nothing keeps.
    let kept = |p: &[crate::journal::Pending]| {
        p.iter().any(|p| p.change == netns)
            && p.iter().any(|p| {
                matches!(&p.change, Change::Lab { spec } if spec.namespaces().contains(&rec.netns.as_str()))
            })
    };
    match Journal::at(&journal).pending() {
        Ok(p) if kept(&p) => Status::Kept { owner, journal },
        Ok(_) => Status::Orphaned {
            owner,
            journal,
            persistent: true,
        },
        Err(e) => Status::Unknown {
            why: format!("`lab up` kept it, and whether it still does cannot be read: {e}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PID that is not running (above the kernel's pid_max limit of 2^22).
    const GONE: u32 = u32::MAX - 1;

    fn record(ns: &str, owner: Owner, persistent: bool, journal: &Path) -> Record {
        Record {
            netns: ns.into(),
            pid: owner.pid,
            start: owner.start,
            persistent,
            journal: journal.into(),
        }
    }

    #[test]
    fn a_record_says_running_orphaned_kept_or_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let reg = Registry::at(dir.path().join("run"));
        let jpath = dir.path().join("lab-journal.jsonl");
        let ns = "netceil-unit-owner-a";
        assert!(matches!(reg.status(ns), Status::Unknown { .. }));

        reg.claim(&record(ns, Owner::me(), false, &jpath)).unwrap();
        assert_eq!(
            reg.status(ns),
            Status::Running {
                owner: Owner::me(),
                journal: jpath.clone()
            }
        );
        assert!(reg
            .status(ns)
            .to_string()
            .contains(&format!("PID {}", std::process::id())));

        // A live owner's claim stands against another claimant.
        let gone = Owner {
            pid: GONE,
            start: 1,
        };
        let e = reg.claim(&record(ns, gone, false, &jpath)).unwrap_err();
        assert!(e.to_string().contains("already claimed"), "{e}");

        // Its owner gone and its namespace never made: a new claim replaces it.
        reg.release(ns, None).unwrap();
        reg.claim(&record(ns, gone, false, &jpath)).unwrap();
        assert!(reg.status(ns).orphaned());
        reg.claim(&record(ns, Owner::me(), false, &jpath)).unwrap();
        assert!(matches!(reg.status(ns), Status::Running { .. }));

        // `lab up`'s: kept while its journal holds it, orphaned once it does not.
        reg.release(ns, None).unwrap();
        reg.claim(&record(ns, gone, true, &jpath)).unwrap();
        assert!(reg.status(ns).orphaned(), "no journal at all");
        let line = format!(
            "{{\"do\":\"x\",\"pid\":{GONE},\"start\":1,\"persistent\":true,\"change\":{{\"what\":\"netns\",\"name\":\"{ns}\"}}}}\n"
        );
        // A `lab up` killed before the lab was up: its namespace is held, the lab is not.
        std::fs::write(&jpath, &line).unwrap();
        assert!(reg.status(ns).orphaned(), "{:?}", reg.status(ns));
        let lab = Change::Lab {
            spec: crate::topo::LabSpec::new("unit-owner", crate::topo::Topology::Direct, 1500)
                .unwrap(),
        };
        let lab = format!(
            "{{\"do\":\"y\",\"pid\":{GONE},\"start\":1,\"persistent\":true,\"change\":{}}}\n",
            serde_json::to_string(&lab).unwrap()
        );
        std::fs::write(&jpath, format!("{line}{lab}")).unwrap();
        assert!(
            matches!(reg.status(ns), Status::Kept { .. }),
            "{:?}",
            reg.status(ns)
        );
        std::fs::write(&jpath, format!("{line}{lab}{{\"undo\":\"x\"}}\n")).unwrap();
        assert!(reg.status(ns).orphaned());
        std::fs::write(&jpath, "{\"do\":").unwrap();
        let s = reg.status(ns);
        assert!(
            matches!(&s, Status::Unknown { why } if why.contains("line 1")),
            "{s:?}"
        );

        // Released by another owner: left; by its own: gone, and the empty directory with it.
        reg.release(ns, Some(&Owner::me())).unwrap();
        assert!(reg.read(ns).unwrap().is_some());
        reg.release(ns, Some(&gone)).unwrap();
        assert!(reg.read(ns).unwrap().is_none());
        assert!(!reg.dir().exists(), "the empty directory is removed");
    }

    #[test]
    fn a_bad_record_is_an_error_naming_the_file_and_a_torn_one_is_swept() {
        let dir = tempfile::tempdir().unwrap();
        let reg = Registry::at(dir.path().join("run"));
        std::fs::create_dir(reg.dir()).unwrap();
        let ns = "netceil-unit-owner-b";
        std::fs::write(reg.file(ns), "{\"netns\":").unwrap();
        let e = reg.read(ns).unwrap_err().to_string();
        assert!(
            e.contains(&format!("{ns}.json")) && e.contains("line 1"),
            "{e}"
        );
        assert!(matches!(reg.status(ns), Status::Unknown { .. }));
        // Its namespace does not exist: the torn record goes, and a claim may take the name.
        assert_eq!(reg.sweep().len(), 1);
        assert!(reg.namespaces().is_empty());
        std::fs::create_dir_all(reg.dir()).unwrap();
        std::fs::write(reg.file(ns), "").unwrap();
        reg.claim(&record(ns, Owner::me(), false, Path::new("/j")))
            .unwrap();
        // A live owner's record is not swept, even with its namespace not made yet.
        assert!(reg.sweep().is_empty());
        assert_eq!(reg.namespaces(), [ns]);
    }
}
