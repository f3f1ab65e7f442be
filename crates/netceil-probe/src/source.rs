//! The OS seam: everything the sampler learns from the machine goes through [`Source`].
//!
//! [`ProcFs`] reads the live /proc and /sys (or a copy of them under another root, such as an
//! unpacked sosreport); [`FakeSource`] serves text from memory and can be changed between
//! samples, so the sampler's arithmetic is tested on exact, hand-written counter values,
//! including wraps, resets, CPUs going offline and files that do not exist.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::qdisc::QdiscStats;
use crate::sockdiag::{TcpDump, TcpSocket};

/// Where the sampler reads from. Paths are absolute Linux paths (`/proc/stat`).
pub trait Source {
    /// The whole text of a file.
    fn read(&self, path: &str) -> io::Result<String>;

    /// The whole text of a file into `buf` (cleared first), so a caller can reuse one buffer.
    fn read_into(&self, path: &str, buf: &mut String) -> io::Result<()> {
        let text = self.read(path)?;
        buf.clear();
        buf.push_str(&text);
        Ok(())
    }

    /// The target of a symbolic link, as stored (often relative: `../../../virtio2`).
    fn read_link(&self, path: &str) -> io::Result<String>;

    /// The names in a directory, sorted.
    fn list_dir(&self, path: &str) -> io::Result<Vec<String>>;

    /// A monotonic clock; only differences between readings matter.
    fn now(&self) -> Duration;

    /// Says which processes a scan of /proc found, so a source that keeps their files open
    /// can close those of processes that have gone. Sources that keep nothing open ignore it.
    fn processes_seen(&self, pids: &[u32]) {
        let _ = pids;
    }

    /// CPU time used so far by the calling thread, if the platform can tell.
    fn thread_cpu_time(&self) -> Option<Duration>;

    /// USER_HZ: the unit of CPU times in /proc (100 on every mainstream architecture).
    fn clock_ticks_per_s(&self) -> u64 {
        100
    }

    /// Every queueing discipline with its counters, in this namespace and in the named ones
    /// (rtnetlink: no file under /proc has them). Sources that cannot ask the kernel say so.
    fn qdiscs(&self) -> io::Result<Vec<QdiscStats>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this source has no qdisc statistics",
        ))
    }

    /// The established TCP sockets of one network namespace, each with the kernel's
    /// `tcp_info` (sock_diag: no file under /proc has it), at most `max` of them. `netns` is
    /// the namespace as `/proc/PID/ns/net` names it (`net:[4026531840]`) and `path` such a
    /// `/proc/PID/ns/net`, through which a namespace other than the reader's own is entered.
    fn tcp_sockets(&self, netns: &str, path: &str, max: usize) -> io::Result<TcpDump> {
        let _ = (netns, path, max);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this source has no TCP socket statistics",
        ))
    }

    /// Sockets of a [`Source::tcp_sockets`] dump read again, each looked up by its addresses
    /// and cookie: the kernel finds each at once, where a dump walks its whole hash table.
    /// Those closed since (or no longer established) are left out. Sources that cannot look
    /// sockets up say so, and the caller dumps.
    fn tcp_sockets_again(
        &self,
        netns: &str,
        path: &str,
        known: &[TcpSocket],
    ) -> io::Result<Vec<TcpSocket>> {
        let _ = (netns, path, known);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this source cannot look TCP sockets up one by one",
        ))
    }
}

/// The live /proc and /sys, or a copy of them under another root directory.
///
/// Files outside /proc/PID are kept open and re-read from offset 0, which makes the kernel
/// produce fresh text (seq_file and sysfs both restart at offset 0): that saves the path
/// lookup, open and close that would otherwise be a good part of a sample's cost.
#[derive(Debug)]
pub struct ProcFs {
    root: PathBuf,
    origin: Instant,
    ticks_per_s: u64,
    open: Mutex<Open>,
    /// rtnetlink sockets for qdisc statistics, opened on first use (live machine only).
    qdiscs: Mutex<QdiscReader>,
    /// sock_diag sockets for TCP statistics, one per namespace asked for (live machine only).
    #[cfg(target_os = "linux")]
    tcp: Mutex<crate::sockdiag::NetlinkTcp>,
}

/// The qdisc reader's state: not tried yet, open, or refused (with the reason).
#[derive(Debug, Default)]
enum QdiscReader {
    #[default]
    Untried,
    #[cfg(target_os = "linux")]
    Open(crate::qdisc::NetlinkQdiscs),
    Refused(String),
}

/// The files kept open, and one read buffer for all of them.
#[derive(Debug, Default)]
struct Open {
    files: HashMap<String, File>,
    /// Each process's `/proc/PID/stat` (and `schedstat`, `true`), read at every process
    /// scan: kept open like the others, as opening and closing them was a third of a scan's
    /// cost. A descriptor stays
    /// bound to its process (a pid reused later is another process, opened afresh): once
    /// the process is gone, reads fail and the file is closed; [`Source::processes_seen`]
    /// closes those of processes no scan lists any more.
    stats: HashMap<(u32, bool), File>,
    /// Zeroed once and kept: preparing a fresh buffer for every read cost more than
    /// copying the text out of this one.
    scratch: Vec<u8>,
}

/// Open files kept at most; past that the cache starts over (interfaces come and go).
const MAX_OPEN: usize = 256;

/// Process stat files kept open at most; past that, further processes' files are opened
/// and closed at each read as before (a load with thousands of sockets needs the
/// descriptors more).
const MAX_OPEN_STATS: usize = 512;

/// The pid of a `/proc/PID/stat` or `/proc/PID/schedstat` path, and whether it is the
/// latter.
fn stat_pid(path: &str) -> Option<(u32, bool)> {
    let rest = path.strip_prefix("/proc/")?;
    let (pid, sched) = match rest.strip_suffix("/schedstat") {
        Some(pid) => (pid, true),
        None => (rest.strip_suffix("/stat")?, false),
    };
    let pid = pid
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| pid.parse().ok())??;
    Some((pid, sched))
}

impl Default for ProcFs {
    fn default() -> Self {
        Self::new()
    }
}

impl Clone for ProcFs {
    fn clone(&self) -> Self {
        ProcFs {
            root: self.root.clone(),
            origin: self.origin,
            ticks_per_s: self.ticks_per_s,
            open: Mutex::new(Open::default()),
            qdiscs: Mutex::new(QdiscReader::Untried),
            #[cfg(target_os = "linux")]
            tcp: Mutex::new(crate::sockdiag::NetlinkTcp::new()),
        }
    }
}

impl ProcFs {
    /// The machine's own /proc and /sys.
    pub fn new() -> Self {
        Self::with_root("/")
    }

    /// /proc and /sys found under `root` (`root/proc/stat` …), e.g. an unpacked sosreport.
    pub fn with_root(root: impl Into<PathBuf>) -> Self {
        ProcFs {
            root: root.into(),
            origin: Instant::now(),
            ticks_per_s: os::clock_ticks_per_s(),
            open: Mutex::new(Open::default()),
            qdiscs: Mutex::new(QdiscReader::Untried),
            #[cfg(target_os = "linux")]
            tcp: Mutex::new(crate::sockdiag::NetlinkTcp::new()),
        }
    }

    /// TCP socket statistics come from sock_diag, which speaks for the live kernel only.
    fn live_kernel(&self) -> io::Result<()> {
        if self.root == Path::new("/") {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "TCP socket statistics come from the live kernel, not from a copy of /proc",
            ))
        }
    }

    /// The sock_diag sockets, one per namespace (a poisoned lock still holds usable sockets).
    #[cfg(target_os = "linux")]
    fn sock_diag(&self) -> std::sync::MutexGuard<'_, crate::sockdiag::NetlinkTcp> {
        self.tcp.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The root directory paths are resolved under.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn resolve(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }

    /// Per-process files are not kept open: their processes come and go.
    fn keep_open(path: &str) -> bool {
        let per_process = path
            .strip_prefix("/proc/")
            .and_then(|rest| rest.split('/').next())
            .is_some_and(|first| first == "self" || first.bytes().all(|b| b.is_ascii_digit()));
        !per_process
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(not(unix))]
fn read_at(mut file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    file.read(buf)
}

/// The kernel's seq_file, behind every /proc text file, fills a read until the file ends or
/// its buffer (a page, 4096 bytes, or more if one record needed more) has no room for the
/// next record. Asking again to be sure it ended is not free: a read at a non-zero offset
/// makes seq_file generate the whole text again to find its place, which doubled the
/// kernel's share of a sample. So a short read is taken as the end when the page could
/// clearly have held another record (records are lines here, and alike in length), or when
/// the file is one the kernel makes in one piece (`single_open`): every read of those
/// carries the whole text or as much of it as was asked for.
const SEQ_PAGE: usize = 4096;

/// /proc files the kernel generates in one piece (`single_open`).
const ONE_PIECE: &[&str] = &[
    "/proc/stat",
    "/proc/net/snmp",
    "/proc/net/netstat",
    "/proc/pressure/cpu",
    "/proc/pressure/io",
    "/proc/pressure/memory",
];

/// Whether a short read of `text` (the whole file so far) shows the file ended.
fn short_read_ends(text: &[u8], one_piece: bool) -> bool {
    if one_piece {
        return true;
    }
    if text.last() != Some(&b'\n') {
        return false;
    }
    let longest_line = text
        .split(|&b| b == b'\n')
        .map(<[u8]>::len)
        .max()
        .unwrap_or(0)
        + 1;
    text.len() + 2 * longest_line <= SEQ_PAGE
}

/// Reads a whole file from offset 0 into `bytes`, keeping its capacity (and whatever it held
/// past what is read: only the first `n` bytes, the returned length, are the file).
fn read_whole(file: &File, bytes: &mut Vec<u8>, one_piece: bool) -> io::Result<usize> {
    let mut filled = 0;
    loop {
        if bytes.len() - filled < 1024 {
            bytes.resize((filled * 2).max(SEQ_PAGE * 2), 0);
        }
        let asked = bytes.len() - filled;
        match read_at(file, &mut bytes[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => {
                filled += n;
                if n < asked && short_read_ends(&bytes[..filled], one_piece) {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Reads a process's stat file through the descriptor kept for it, opening one with `open`
/// the first time (kept while there is room). A read that fails on a kept descriptor (the
/// process has gone) closes it and reports the failure.
fn read_process_stat(
    stats: &mut HashMap<(u32, bool), File>,
    pid: (u32, bool),
    open: impl FnOnce() -> io::Result<File>,
    scratch: &mut Vec<u8>,
) -> io::Result<usize> {
    if let Some(file) = stats.get(&pid) {
        return read_whole(file, scratch, false).inspect_err(|_| {
            stats.remove(&pid);
        });
    }
    let file = open()?;
    let n = read_whole(&file, scratch, false)?;
    if stats.len() < MAX_OPEN_STATS {
        stats.insert(pid, file);
    }
    Ok(n)
}

/// A shared source is the source it shares: one machine, real or fake, for every reader.
impl<S: Source + ?Sized> Source for std::sync::Arc<S> {
    fn read(&self, path: &str) -> io::Result<String> {
        (**self).read(path)
    }
    fn read_into(&self, path: &str, buf: &mut String) -> io::Result<()> {
        (**self).read_into(path, buf)
    }
    fn read_link(&self, path: &str) -> io::Result<String> {
        (**self).read_link(path)
    }
    fn list_dir(&self, path: &str) -> io::Result<Vec<String>> {
        (**self).list_dir(path)
    }
    fn now(&self) -> Duration {
        (**self).now()
    }
    fn processes_seen(&self, pids: &[u32]) {
        (**self).processes_seen(pids)
    }
    fn thread_cpu_time(&self) -> Option<Duration> {
        (**self).thread_cpu_time()
    }
    fn clock_ticks_per_s(&self) -> u64 {
        (**self).clock_ticks_per_s()
    }
    fn qdiscs(&self) -> io::Result<Vec<QdiscStats>> {
        (**self).qdiscs()
    }
    fn tcp_sockets(&self, netns: &str, path: &str, max: usize) -> io::Result<TcpDump> {
        (**self).tcp_sockets(netns, path, max)
    }
    fn tcp_sockets_again(
        &self,
        netns: &str,
        path: &str,
        known: &[TcpSocket],
    ) -> io::Result<Vec<TcpSocket>> {
        (**self).tcp_sockets_again(netns, path, known)
    }
}

impl Source for ProcFs {
    fn qdiscs(&self) -> io::Result<Vec<QdiscStats>> {
        if self.root != Path::new("/") {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "qdisc statistics come from the live kernel, not from a copy of /proc",
            ));
        }
        let mut reader = self.qdiscs.lock().unwrap_or_else(|e| e.into_inner());
        #[cfg(target_os = "linux")]
        if matches!(*reader, QdiscReader::Untried) {
            *reader = match crate::qdisc::NetlinkQdiscs::new() {
                Ok(r) => QdiscReader::Open(r),
                Err(e) => QdiscReader::Refused(format!("rtnetlink socket: {e}")),
            };
        }
        match &mut *reader {
            #[cfg(target_os = "linux")]
            QdiscReader::Open(r) => r.read(),
            QdiscReader::Refused(why) => Err(io::Error::other(why.clone())),
            QdiscReader::Untried => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "qdisc statistics need rtnetlink (Linux)",
            )),
        }
    }

    fn tcp_sockets(&self, netns: &str, path: &str, max: usize) -> io::Result<TcpDump> {
        self.live_kernel()?;
        #[cfg(target_os = "linux")]
        {
            self.sock_diag().read(netns, path, max)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (netns, path, max);
            Err(no_sock_diag())
        }
    }

    fn tcp_sockets_again(
        &self,
        netns: &str,
        path: &str,
        known: &[TcpSocket],
    ) -> io::Result<Vec<TcpSocket>> {
        self.live_kernel()?;
        #[cfg(target_os = "linux")]
        {
            self.sock_diag().lookup(netns, path, known)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (netns, path, known);
            Err(no_sock_diag())
        }
    }

    fn read(&self, path: &str) -> io::Result<String> {
        let mut buf = String::new();
        self.read_into(path, &mut buf)?;
        Ok(buf)
    }

    fn read_into(&self, path: &str, buf: &mut String) -> io::Result<()> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let Open {
            files,
            stats,
            scratch,
        } = &mut *open;
        let n = if let Some(pid) = stat_pid(path) {
            read_process_stat(stats, pid, || File::open(self.resolve(path)), scratch)?
        } else if Self::keep_open(path) {
            let one_piece = ONE_PIECE.contains(&path);
            let cached = match files.get(path) {
                Some(file) => read_whole(file, scratch, one_piece).ok(),
                None => None,
            };
            match cached {
                Some(n) => n,
                None => {
                    // Not open yet, or the file went away under the open descriptor (an
                    // interface removed and made again): open it afresh.
                    files.remove(path);
                    let file = File::open(self.resolve(path))?;
                    let n = read_whole(&file, scratch, one_piece)?;
                    if files.len() >= MAX_OPEN {
                        files.clear();
                    }
                    files.insert(path.to_string(), file);
                    n
                }
            }
        } else {
            read_whole(&File::open(self.resolve(path))?, scratch, false)?
        };
        let text = std::str::from_utf8(&scratch[..n])
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "file is not UTF-8 text"))?;
        // The caller's buffer keeps its capacity between samples.
        buf.clear();
        buf.push_str(text);
        Ok(())
    }

    fn read_link(&self, path: &str) -> io::Result<String> {
        let target = std::fs::read_link(self.resolve(path))?;
        target
            .into_os_string()
            .into_string()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "link target is not UTF-8"))
    }

    fn list_dir(&self, path: &str) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(self.resolve(path))? {
            if let Ok(name) = entry?.file_name().into_string() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn processes_seen(&self, pids: &[u32]) {
        let mut live = pids.to_vec();
        live.sort_unstable();
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.stats
            .retain(|(pid, _), _| live.binary_search(pid).is_ok());
    }

    fn thread_cpu_time(&self) -> Option<Duration> {
        os::thread_cpu_time()
    }

    fn clock_ticks_per_s(&self) -> u64 {
        self.ticks_per_s
    }
}

/// The OS calls behind [`ProcFs`]; elsewhere than Linux they report "unknown".
#[cfg(target_os = "linux")]
mod os {
    use std::time::Duration;

    pub(super) fn thread_cpu_time() -> Option<Duration> {
        use nix::time::{clock_gettime, ClockId};
        let ts = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).ok()?;
        let secs = u64::try_from(ts.tv_sec()).ok()?;
        let nanos = u32::try_from(ts.tv_nsec()).ok()?;
        Some(Duration::new(secs, nanos))
    }

    pub(super) fn clock_ticks_per_s() -> u64 {
        use nix::unistd::{sysconf, SysconfVar};
        match sysconf(SysconfVar::CLK_TCK) {
            Ok(Some(t)) if t > 0 => t.unsigned_abs(),
            _ => 100,
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    use std::time::Duration;

    pub(super) fn thread_cpu_time() -> Option<Duration> {
        None
    }

    pub(super) fn clock_ticks_per_s() -> u64 {
        100
    }
}

#[cfg(not(target_os = "linux"))]
fn no_sock_diag() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "TCP socket statistics need sock_diag (Linux)",
    )
}

/// CPU time used so far by the calling thread (Linux: `CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_time() -> Option<Duration> {
    os::thread_cpu_time()
}

#[derive(Debug, Clone)]
enum FakeEntry {
    Text(String),
    Error(io::ErrorKind, String),
}

/// A fake namespace's TCP sockets, or the error reading them gives.
type FakeTcp = Result<Vec<TcpSocket>, (io::ErrorKind, String)>;

#[derive(Debug, Default)]
struct FakeState {
    files: BTreeMap<String, FakeEntry>,
    links: BTreeMap<String, String>,
    now: Duration,
    thread_cpu: Option<Duration>,
    ticks_per_s: Option<u64>,
    /// `None`: the source has no qdisc statistics.
    qdiscs: Option<Vec<QdiscStats>>,
    /// TCP sockets by namespace (`net:[INODE]`), or the error reading it gives; `None`: the
    /// source has no TCP socket statistics.
    tcp: Option<BTreeMap<String, FakeTcp>>,
    /// Reads of TCP sockets so far: (namespace, path) of each.
    tcp_reads: Vec<(String, String)>,
    /// Look-ups of TCP sockets one by one so far: (namespace, sockets asked for) of each.
    tcp_lookups: Vec<(String, usize)>,
    /// Every file read and directory listed since [`FakeSource::log_reads`] turned it on.
    reads: Option<Vec<String>>,
}

/// An in-memory [`Source`] for tests. Clones share one state, so a test keeps a handle and
/// changes files and the clock between samples while the sampler owns another.
#[derive(Debug, Clone, Default)]
pub struct FakeSource {
    state: Arc<Mutex<FakeState>>,
}

impl FakeSource {
    /// An empty source: every read fails with "not found" until a file is set.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, FakeState> {
        // A test that panicked while holding the lock leaves consistent data behind.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets a file's text.
    pub fn set(&self, path: &str, text: impl Into<String>) {
        self.state()
            .files
            .insert(path.to_string(), FakeEntry::Text(text.into()));
    }

    /// Makes reads (or listings) of `path` fail with this error.
    pub fn set_error(&self, path: &str, kind: io::ErrorKind, message: &str) {
        self.state().files.insert(
            path.to_string(),
            FakeEntry::Error(kind, message.to_string()),
        );
    }

    /// Removes a file, link or error, so that the path is not found.
    pub fn remove(&self, path: &str) {
        let mut s = self.state();
        s.files.remove(path);
        s.links.remove(path);
    }

    /// Removes every file and link under a directory.
    pub fn remove_dir(&self, dir: &str) {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        let mut s = self.state();
        s.files.retain(|k, _| !k.starts_with(&prefix));
        s.links.retain(|k, _| !k.starts_with(&prefix));
    }

    /// Sets a symbolic link's target.
    pub fn set_link(&self, path: &str, target: &str) {
        self.state()
            .links
            .insert(path.to_string(), target.to_string());
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        self.state().now += by;
    }

    /// Sets what [`Source::thread_cpu_time`] reports.
    pub fn set_thread_cpu(&self, cpu: Option<Duration>) {
        self.state().thread_cpu = cpu;
    }

    /// Starts (or stops) logging every file read and directory listed, for a test to check
    /// what a sample reads; starting empties the log.
    pub fn log_reads(&self, on: bool) {
        self.state().reads = on.then(Vec::new);
    }

    /// The paths read (files) and listed (directories, as `DIR/`) since the log was started
    /// or last taken, in order; the log is emptied.
    pub fn take_reads(&self) -> Vec<String> {
        self.state()
            .reads
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Sets USER_HZ (default 100).
    pub fn set_clock_ticks_per_s(&self, ticks: u64) {
        self.state().ticks_per_s = Some(ticks);
    }
}

fn not_found() -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, "No such file or directory")
}

impl FakeSource {
    /// Sets the qdiscs and their counters the next samples see.
    pub fn set_qdiscs(&self, qdiscs: Vec<QdiscStats>) {
        self.state().qdiscs = Some(qdiscs);
    }

    /// The same source, as one that cannot read qdisc statistics (a copy of /proc).
    pub fn without_qdiscs(self) -> Self {
        self.state().qdiscs = None;
        self
    }

    /// Sets the established TCP sockets of a namespace (`net:[INODE]`) the next samples see.
    /// Once any namespace is set, one never set has no sockets.
    pub fn set_tcp_sockets(&self, netns: &str, sockets: Vec<TcpSocket>) {
        self.state()
            .tcp
            .get_or_insert_with(BTreeMap::new)
            .insert(netns.to_string(), Ok(sockets));
    }

    /// Makes reading a namespace's TCP sockets fail with this error.
    pub fn set_tcp_error(&self, netns: &str, kind: io::ErrorKind, message: &str) {
        self.state()
            .tcp
            .get_or_insert_with(BTreeMap::new)
            .insert(netns.to_string(), Err((kind, message.to_string())));
    }

    /// Every read of TCP sockets so far: (namespace, path), in order.
    pub fn tcp_reads(&self) -> Vec<(String, String)> {
        self.state().tcp_reads.clone()
    }

    /// Every look-up of TCP sockets one by one so far: (namespace, sockets asked for).
    pub fn tcp_lookups(&self) -> Vec<(String, usize)> {
        self.state().tcp_lookups.clone()
    }
}

impl Source for FakeSource {
    fn tcp_sockets(&self, netns: &str, path: &str, max: usize) -> io::Result<TcpDump> {
        let mut s = self.state();
        s.tcp_reads.push((netns.to_string(), path.to_string()));
        let Some(all) = &s.tcp else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this source has no TCP socket statistics",
            ));
        };
        match all.get(netns) {
            Some(Ok(sockets)) => Ok(TcpDump {
                truncated: sockets.len() > max,
                sockets: sockets.iter().take(max).cloned().collect(),
            }),
            Some(Err((kind, msg))) => Err(io::Error::new(*kind, msg.clone())),
            None => Ok(TcpDump::default()),
        }
    }

    /// The namespace's sockets as last set, those of `known` only.
    fn tcp_sockets_again(
        &self,
        netns: &str,
        _path: &str,
        known: &[TcpSocket],
    ) -> io::Result<Vec<TcpSocket>> {
        let mut s = self.state();
        s.tcp_lookups.push((netns.to_string(), known.len()));
        let Some(all) = &s.tcp else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this source has no TCP socket statistics",
            ));
        };
        match all.get(netns) {
            // As the kernel does: by addresses, and by cookie unless it is NO_COOKIE.
            Some(Ok(sockets)) => Ok(known
                .iter()
                .filter_map(|k| {
                    sockets.iter().find(|s| {
                        k.local == s.local
                            && k.remote == s.remote
                            && (k.cookie == crate::sockdiag::NO_COOKIE || k.cookie == s.cookie)
                    })
                })
                .cloned()
                .collect()),
            Some(Err((kind, msg))) => Err(io::Error::new(*kind, msg.clone())),
            None => Ok(Vec::new()),
        }
    }

    fn qdiscs(&self) -> io::Result<Vec<QdiscStats>> {
        self.state().qdiscs.clone().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                "this source has no qdisc statistics",
            )
        })
    }

    fn read(&self, path: &str) -> io::Result<String> {
        let mut s = self.state();
        if let Some(log) = &mut s.reads {
            log.push(path.to_string());
        }
        match s.files.get(path) {
            Some(FakeEntry::Text(t)) => Ok(t.clone()),
            Some(FakeEntry::Error(kind, msg)) => Err(io::Error::new(*kind, msg.clone())),
            None => Err(not_found()),
        }
    }

    fn read_link(&self, path: &str) -> io::Result<String> {
        let s = self.state();
        if let Some(FakeEntry::Error(kind, msg)) = s.files.get(path) {
            return Err(io::Error::new(*kind, msg.clone()));
        }
        s.links.get(path).cloned().ok_or_else(not_found)
    }

    fn list_dir(&self, path: &str) -> io::Result<Vec<String>> {
        let mut s = self.state();
        if let Some(log) = &mut s.reads {
            log.push(format!("{}/", path.trim_end_matches('/')));
        }
        if let Some(FakeEntry::Error(kind, msg)) = s.files.get(path) {
            return Err(io::Error::new(*kind, msg.clone()));
        }
        let prefix = format!("{}/", path.trim_end_matches('/'));
        let children: BTreeSet<String> = s
            .files
            .keys()
            .chain(s.links.keys())
            .filter_map(|k| k.strip_prefix(&prefix))
            .filter_map(|rest| rest.split('/').next())
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect();
        if children.is_empty() {
            return Err(not_found());
        }
        Ok(children.into_iter().collect())
    }

    fn now(&self) -> Duration {
        self.state().now
    }

    fn thread_cpu_time(&self) -> Option<Duration> {
        self.state().thread_cpu
    }

    fn clock_ticks_per_s(&self) -> u64 {
        self.state().ticks_per_s.unwrap_or(100)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_read_ends_the_file_only_when_the_page_had_room() {
        let lines = |n: usize, len: usize| {
            let mut t = Vec::new();
            for _ in 0..n {
                t.extend(std::iter::repeat_n(b'x', len - 1));
                t.push(b'\n');
            }
            t
        };
        // 10 lines of 100 bytes: the page had room for many more.
        assert!(short_read_ends(&lines(10, 100), false));
        // 38 lines of 100 bytes: a 39th and 40th might not have fitted.
        assert!(!short_read_ends(&lines(39, 100), false));
        // Cut inside a line: never the end.
        assert!(!short_read_ends(b"abc\nde", false));
        // A file made in one piece: any short read is the end.
        assert!(short_read_ends(&lines(60, 100), true));
    }

    #[test]
    fn files_are_read_whole_whatever_their_size() {
        let dir = std::env::temp_dir().join(format!("netceil-source-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("proc")).unwrap();
        let fs = ProcFs::with_root(&dir);
        for size in [0usize, 10, 4095, 4096, 8191, 8192, 100_000] {
            let text: String = (0..size)
                .map(|i| if i % 50 == 49 { '\n' } else { 'a' })
                .collect();
            let name = format!("f{size}");
            std::fs::write(dir.join("proc").join(&name), &text).unwrap();
            // Twice: once opening, once from the kept descriptor.
            for _ in 0..2 {
                assert_eq!(
                    fs.read(&format!("/proc/{name}")).unwrap(),
                    text,
                    "{size} bytes"
                );
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn live_proc_files_read_in_full() {
        // The kernel's own texts: the same lines as a plain read to the end (counters move,
        // so compare the first field of each line).
        let fs = ProcFs::new();
        for path in [
            "/proc/stat",
            "/proc/net/dev",
            "/proc/interrupts",
            "/proc/net/netstat",
        ] {
            let Ok(plain) = std::fs::read_to_string(path) else {
                continue;
            };
            let ours = fs.read(path).unwrap();
            let heads = |t: &str| -> Vec<String> {
                t.lines()
                    .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
                    .collect()
            };
            assert_eq!(heads(&ours), heads(&plain), "{path}");
        }
    }
}
