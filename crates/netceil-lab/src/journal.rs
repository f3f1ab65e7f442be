//! The journal: what netceil is about to create or change, written and synced before it does.
//!
//! An append-only file of JSON lines beside the run store. A `do` line names a change and
//! its owner (the process, by PID and start time, so a reused PID is not mistaken for it); an
//! `undo` line says the change was reverted. What has a `do` and no `undo` is pending. When
//! nothing is pending the file is emptied.
//!
//! A [`Session`] reverts its changes, newest first, when it is dropped: on success, on error,
//! after Ctrl-C (the workload stops and the stack unwinds) and on a panic. A `kill -9` or a
//! power loss leaves pending lines whose owner is gone; [`Journal::recover`] reverts them, and
//! [`Journal::stale`] lets every netceil start warn about them. Changes a `lab up` leaves in
//! place on purpose are marked persistent, and only `lab down` reverts them.
//!
//! A namespace's change also covers its owner record under /run/netceil ([`crate::owner`]):
//! written after the `do` line, before the namespace is made, and removed with it. A namespace
//! is deleted on undo only while its record still names the change's owner, so an undo that
//! comes late never deletes a namespace of the same name that someone else made since.

use std::fs::OpenOptions;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::owner::{netns_exists, Owner, Record, Registry};
use crate::topo::LabSpec;
use crate::{exec, LabError, Result};

/// One change netceil makes to the machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum Change {
    /// A network namespace netceil created; deleting it removes everything inside (veth,
    /// bridges, addresses, routes, nftables tables, its own sysctls).
    Netns { name: String },
    /// A file netceil wrote (a sysctl under /proc/sys, a /sys knob), with its value before, as
    /// seen from a namespace (`None`: the host).
    File {
        netns: Option<String>,
        path: String,
        original: String,
    },
    /// `ethtool -C` coalescing on an interface, with the original setting.
    Coalesce {
        netns: String,
        iface: String,
        param: String,
        original: String,
    },
    /// A lab that `lab up` left running, for `lab list` and `lab run --name`.
    Lab { spec: LabSpec },
}

impl Change {
    /// A short description for messages.
    pub fn describe(&self) -> String {
        match self {
            Change::Netns { name } => format!("network namespace {name}"),
            Change::File {
                netns,
                path,
                original,
            } => match netns {
                Some(ns) => format!("{path} in {ns} (was {original})"),
                None => format!("{path} (was {original})"),
            },
            Change::Coalesce {
                netns,
                iface,
                param,
                original,
            } => format!("ethtool -C {iface} {param} in {netns} (was {original})"),
            Change::Lab { spec } => format!("lab {} ({})", spec.name, spec.topology.name()),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Do {
        #[serde(rename = "do")]
        id: String,
        pid: u32,
        start: u64,
        persistent: bool,
        change: Change,
    },
    Undo {
        undo: String,
    },
}

/// A change with no `undo` line yet.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub id: String,
    pub pid: u32,
    /// The owner's start time (clock ticks since boot).
    pub start: u64,
    pub persistent: bool,
    pub change: Change,
    /// Its owner still runs.
    pub owner_alive: bool,
}

impl Pending {
    /// The process that made the change.
    pub fn owner(&self) -> Owner {
        Owner {
            pid: self.pid,
            start: self.start,
        }
    }
}

/// The journal file, and the owner records of the namespaces it creates.
#[derive(Debug, Clone)]
pub struct Journal {
    path: PathBuf,
    registry: Registry,
}

/// The journal's file name, beside the run store.
pub const FILE_NAME: &str = "lab-journal.jsonl";

impl Journal {
    pub fn at(path: impl Into<PathBuf>) -> Journal {
        Journal {
            path: path.into(),
            registry: Registry::default(),
        }
    }

    /// The same journal, with its namespaces' owner records kept in `registry`.
    pub fn with_registry(self, registry: Registry) -> Journal {
        Journal { registry, ..self }
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Another journal (another store's), with the same owner records.
    pub fn other(&self, path: impl Into<PathBuf>) -> Journal {
        Journal::at(path).with_registry(self.registry.clone())
    }

    /// The journal beside a store file.
    pub fn beside(store: &Path) -> Journal {
        let dir = store.parent().unwrap_or(Path::new("."));
        Journal::at(dir.join(FILE_NAME))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn fail(&self, detail: impl std::fmt::Display) -> LabError {
        LabError::Journal {
            path: self.path.display().to_string(),
            detail: detail.to_string(),
        }
    }

    /// Runs `f` with the journal open and locked (flock), so two netceil processes never
    /// interleave their lines.
    fn locked<T>(&self, f: impl FnOnce(&mut std::fs::File) -> Result<T>) -> Result<T> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| self.fail(e))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| self.fail(e))?;
        let mut lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| self.fail(format!("locking: {e}")))?;
        f(&mut lock)
    }

    fn append(&self, line: &Line) -> Result<()> {
        let mut text = serde_json::to_string(line).map_err(|e| self.fail(e))?;
        text.push('\n');
        self.locked(|f| {
            f.write_all(text.as_bytes()).map_err(|e| self.fail(e))?;
            // On disk before the change is made: a power loss must not lose the original.
            f.sync_data().map_err(|e| self.fail(e))
        })
    }

    /// Writes a change before it is made; returns its id for [`Journal::undone`].
    pub fn record(&self, change: &Change, persistent: bool) -> Result<String> {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let Owner { pid, start } = Owner::me();
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let id = format!("{pid}.{start}.{seq}");
        self.append(&Line::Do {
            id: id.clone(),
            pid,
            start,
            persistent,
            change: change.clone(),
        })?;
        Ok(id)
    }

    /// Says a change was reverted; empties the file when nothing is left pending.
    pub fn undone(&self, id: &str) -> Result<()> {
        self.append(&Line::Undo { undo: id.into() })?;
        if self.pending()?.is_empty() {
            self.locked(|f| f.set_len(0).map_err(|e| self.fail(e)))?;
        }
        Ok(())
    }

    /// Every change without an `undo`, oldest first. A line that does not parse (a write cut
    /// short by a power loss) is an error that names the line: nothing is guessed.
    pub fn pending(&self) -> Result<Vec<Pending>> {
        let file = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.fail(e)),
        };
        let mut open: Vec<(String, u32, u64, bool, Change)> = Vec::new();
        for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|e| self.fail(e))?;
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Line>(&line) {
                Ok(Line::Do {
                    id,
                    pid,
                    start,
                    persistent,
                    change,
                }) => open.push((id, pid, start, persistent, change)),
                Ok(Line::Undo { undo }) => open.retain(|(id, ..)| *id != undo),
                Err(e) => {
                    return Err(self.fail(format!(
                        "line {}: expected a `do` or `undo` record ({e}); the rest of the file was not read",
                        n + 1
                    )))
                }
            }
        }
        Ok(open
            .into_iter()
            .map(|(id, pid, start, persistent, change)| Pending {
                owner_alive: Owner { pid, start }.alive(),
                id,
                pid,
                start,
                persistent,
                change,
            })
            .collect())
    }

    /// Pending changes whose owner died without reverting them (kill -9, power loss).
    pub fn stale(&self) -> Result<Vec<Pending>> {
        Ok(self
            .pending()?
            .into_iter()
            .filter(|p| !p.persistent && !p.owner_alive)
            .collect())
    }

    /// Reverts the pending changes `pick` selects, newest first; what was reverted, and what
    /// could not be, with why.
    pub fn recover(&self, pick: impl Fn(&Pending) -> bool) -> Result<Recovery> {
        let mut report = Recovery::default();
        for p in self.pending()?.into_iter().rev().filter(|p| pick(p)) {
            match self.undo(&p.change, &p.owner()) {
                Ok(()) => {
                    self.undone(&p.id)?;
                    report.reverted.push(p.change.describe());
                }
                Err(e) => report.failed.push(format!("{}: {e}", p.change.describe())),
            }
        }
        Ok(report)
    }
}

/// What [`Journal::recover`] did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Recovery {
    pub reverted: Vec<String>,
    pub failed: Vec<String>,
}

impl Journal {
    /// Reverts one change `owner` made. A change inside a namespace that is gone went with it.
    pub fn undo(&self, change: &Change, owner: &Owner) -> Result<()> {
        match change {
            Change::Netns { name } => self.undo_netns(name, owner),
            Change::File {
                netns,
                path,
                original,
            } => match netns {
                Some(ns) if !netns_exists(ns) => Ok(()),
                // Already as it was (the change never happened, or was undone): nothing to write.
                _ if exec::read_file(netns.as_deref(), path).is_ok_and(|v| v == *original) => {
                    Ok(())
                }
                _ => exec::write_file(netns.as_deref(), path, original),
            },
            Change::Coalesce {
                netns,
                iface,
                param,
                original,
            } => {
                if !netns_exists(netns) {
                    return Ok(());
                }
                exec::in_ns(netns, "ethtool", &["-C", iface, param, original]).map(|_| ())
            }
            Change::Lab { .. } => Ok(()),
        }
    }

    /// Deletes a namespace `owner` made, and its owner record; unless the record names someone
    /// else now (ours went before, and a namespace of that name was made since).
    fn undo_netns(&self, name: &str, owner: &Owner) -> Result<()> {
        match self.registry.read(name) {
            Ok(Some(rec)) if rec.owner() != *owner => return Ok(()),
            Ok(_) => {}
            // A record torn by a kill before the namespace was made protects nothing.
            Err(_) if !netns_exists(name) => return self.registry.release(name, None),
            Err(e) => return Err(e),
        }
        if netns_exists(name) {
            exec::run("ip", &["netns", "del", name])?;
        }
        self.registry.release(name, Some(owner))
    }

    /// The owner record of a namespace this process is about to make.
    fn record_for(&self, netns: &str, persistent: bool) -> Record {
        let Owner { pid, start } = Owner::me();
        Record {
            netns: netns.to_string(),
            pid,
            start,
            persistent,
            journal: std::path::absolute(&self.path).unwrap_or_else(|_| self.path.clone()),
        }
    }
}

/// The changes one command makes, reverted newest first when it is dropped (unless kept, as
/// `lab up` keeps its lab).
#[derive(Debug)]
pub struct Session {
    journal: Journal,
    persistent: bool,
    changes: Vec<(String, Change)>,
    /// What could not be reverted, kept for the caller to report.
    pub problems: Vec<String>,
}

impl Session {
    /// Changes that are reverted when the session ends.
    pub fn new(journal: Journal) -> Session {
        Session {
            journal,
            persistent: false,
            changes: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// Changes meant to outlive the process (`lab up`): journaled as persistent, and kept
    /// unless the session is dropped before [`Session::keep`].
    pub fn persistent(journal: Journal) -> Session {
        Session {
            journal,
            persistent: true,
            changes: Vec::new(),
            problems: Vec::new(),
        }
    }

    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Journals a change, then makes it with `make`; a failed `make` is reverted at once
    /// (it may have half happened).
    pub fn change(&mut self, change: Change, make: impl FnOnce() -> Result<()>) -> Result<()> {
        let id = self.journal.record(&change, self.persistent)?;
        match make() {
            Ok(()) => {
                self.changes.push((id, change));
                Ok(())
            }
            Err(e) => {
                if self.journal.undo(&change, &Owner::me()).is_ok() {
                    let _ = self.journal.undone(&id);
                }
                Err(e)
            }
        }
    }

    /// Creates a network namespace: journaled, then claimed by an owner record, then made. A
    /// namespace that could not be made is not deleted: it may be someone else's.
    pub fn netns(&mut self, name: &str) -> Result<()> {
        let change = Change::Netns {
            name: name.to_string(),
        };
        let id = self.journal.record(&change, self.persistent)?;
        let claimed = self
            .journal
            .registry
            .claim(&self.journal.record_for(name, self.persistent));
        let made = claimed.and_then(|()| {
            exec::run("ip", &["netns", "add", name]).inspect_err(|_| {
                let _ = self.journal.registry.release(name, Some(&Owner::me()));
            })
        });
        match made {
            Ok(_) => {
                self.changes.push((id, change));
                Ok(())
            }
            Err(e) => {
                self.journal.undone(&id)?;
                Err(e)
            }
        }
    }

    /// Writes `value` to a file (sysctl, /sys knob) after journaling what it held.
    pub fn write(&mut self, netns: Option<&str>, path: &str, value: &str) -> Result<()> {
        let original = exec::read_file(netns, path)?;
        self.change(
            Change::File {
                netns: netns.map(str::to_string),
                path: path.to_string(),
                original,
            },
            || exec::write_file(netns, path, value),
        )
    }

    /// Reverts every change of this session that `pick` selects, newest first.
    pub fn revert(&mut self, pick: impl Fn(&Change) -> bool) {
        let mut kept = Vec::new();
        while let Some((id, change)) = self.changes.pop() {
            if !pick(&change) {
                kept.push((id, change));
                continue;
            }
            match self.journal.undo(&change, &Owner::me()) {
                Ok(()) => {
                    if let Err(e) = self.journal.undone(&id) {
                        self.problems.push(e.to_string());
                    }
                }
                Err(e) => self
                    .problems
                    .push(format!("could not revert {}: {e}", change.describe())),
            }
        }
        kept.reverse();
        self.changes = kept;
    }

    /// Reverts everything now; what could not be reverted is returned.
    pub fn close(mut self) -> Vec<String> {
        self.revert(|_| true);
        std::mem::take(&mut self.problems)
    }

    /// Leaves the changes in place and journaled (a `lab up` that succeeded).
    pub fn keep(mut self) {
        self.changes.clear();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.revert(|_| true);
        for p in &self.problems {
            eprintln!("netceil: {p}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_change(path: &Path) -> Change {
        Change::File {
            netns: None,
            path: path.display().to_string(),
            original: "before".into(),
        }
    }

    #[test]
    fn a_session_reverts_on_drop_and_empties_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let knob = dir.path().join("knob");
        std::fs::write(&knob, "before\n").unwrap();
        let j = Journal::at(dir.path().join(FILE_NAME));
        {
            let mut s = Session::new(j.clone());
            s.write(None, knob.to_str().unwrap(), "after").unwrap();
            assert_eq!(std::fs::read_to_string(&knob).unwrap(), "after");
            let p = j.pending().unwrap();
            assert_eq!(p.len(), 1);
            assert!(p[0].owner_alive && !p[0].persistent);
            assert_eq!(p[0].change, file_change(&knob));
        }
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "before");
        assert!(j.pending().unwrap().is_empty());
        assert_eq!(std::fs::metadata(j.path()).unwrap().len(), 0, "emptied");
    }

    #[test]
    fn a_session_reverts_when_a_panic_unwinds() {
        let dir = tempfile::tempdir().unwrap();
        let knob = dir.path().join("knob");
        std::fs::write(&knob, "before").unwrap();
        let j = Journal::at(dir.path().join(FILE_NAME));
        let path = knob.to_str().unwrap().to_string();
        let j2 = j.clone();
        let r = std::panic::catch_unwind(move || {
            let mut s = Session::new(j2);
            s.write(None, &path, "after").unwrap();
            panic!("the workload failed mid-way");
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "before");
        assert!(j.pending().unwrap().is_empty());
    }

    #[test]
    fn a_dead_owners_changes_are_stale_and_recovered() {
        let dir = tempfile::tempdir().unwrap();
        let knob = dir.path().join("knob");
        std::fs::write(&knob, "after").unwrap();
        let j = Journal::at(dir.path().join(FILE_NAME));
        // As a killed process leaves it: a `do` line of a PID that is not running.
        let line = serde_json::to_string(&Line::Do {
            id: "1.1.0".into(),
            pid: u32::MAX - 1,
            start: 1,
            persistent: false,
            change: file_change(&knob),
        })
        .unwrap();
        std::fs::write(j.path(), format!("{line}\n")).unwrap();
        let stale = j.stale().unwrap();
        assert_eq!(stale.len(), 1);
        assert!(!stale[0].owner_alive);
        let r = j.recover(|p| !p.owner_alive).unwrap();
        assert_eq!(r.reverted.len(), 1, "{r:?}");
        assert!(r.failed.is_empty());
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "before");
        assert!(j.stale().unwrap().is_empty());
    }

    #[test]
    fn a_kept_session_stays_journaled_as_persistent() {
        let dir = tempfile::tempdir().unwrap();
        let knob = dir.path().join("knob");
        std::fs::write(&knob, "before").unwrap();
        let j = Journal::at(dir.path().join(FILE_NAME));
        let mut s = Session::persistent(j.clone());
        s.write(None, knob.to_str().unwrap(), "after").unwrap();
        s.keep();
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "after");
        let p = j.pending().unwrap();
        assert_eq!(p.len(), 1);
        assert!(p[0].persistent);
        assert!(j.stale().unwrap().is_empty(), "kept on purpose, not stale");
        j.recover(|_| true).unwrap();
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "before");
    }

    #[test]
    fn a_torn_line_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::at(dir.path().join(FILE_NAME));
        std::fs::write(j.path(), "{\"undo\":\"1\"}\n{\"do\":\"2\",\"pid\":1,\"sta").unwrap();
        let e = j.pending().unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains(FILE_NAME), "{e}");
    }

    #[test]
    fn a_failed_change_is_reverted_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::at(dir.path().join(FILE_NAME));
        let mut s = Session::new(j.clone());
        let knob = dir.path().join("knob");
        std::fs::write(&knob, "before").unwrap();
        let r = s.change(file_change(&knob), || {
            std::fs::write(&knob, "half").unwrap();
            Err(LabError::Usage("no".into()))
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "before");
        assert!(j.pending().unwrap().is_empty());
    }
}
