//! The sampler: reads every source once per interval into a [`Snapshot`].
//!
//! A snapshot holds raw counters, not rates; [`crate::rates`] turns two of them into one row.
//! Each source is read and parsed on its own, so one unreadable file (no /proc/pressure on a
//! kernel without PSI, a process that exited) costs only its own metrics, and the reason is
//! kept next to the value that is missing. File buffers are reused between samples.
//!
//! Sources come in two tiers, to keep the observer cheap at short intervals. The fast tier
//! (/proc/stat, /proc/softirqs, /proc/net/dev, /proc/net/softnet_stat) is read at every
//! sample. The slow tier ([`SlowSnapshot`]: /proc/interrupts, /proc/net/snmp,
//! /proc/net/netstat, /proc/pressure/*, `rx_missed_errors`, watched threads) costs several
//! times more for the kernel to produce and is read at most every
//! [`SamplerConfig::slow_interval`] (100 ms by default), so at intervals of 100 ms and more it
//! too is read at every sample. Thread CPU times count in 10 ms ticks, so reading them more
//! often would only add noise.
//!
//! Three files of the slow tier cost the kernel most to write (the text of every counter
//! summed over every CPU): /proc/interrupts, /proc/net/snmp and /proc/net/netstat. They are
//! read again with the slow tier only when what they count moved, as the fast tier shows:
//! /proc/interrupts when /proc/stat counted at least [`IRQ_BUSY_PER_CPU`] interrupts per CPU
//! per second over the last interval, the two protocol files when any interface (all of
//! them, not only the recorded ones) counted a packet. Otherwise they are read every
//! [`SamplerConfig::quiet_reread`] ([`QUIET_REREAD`] by default), and their rates, when read,
//! cover the whole time since their last reading: a quiet machine's counts are not lost, only
//! gathered into fewer rows, and the rows between have no value for them (with the reason),
//! never a 0. The machine's interrupt total (`intr_per_s`, from /proc/stat) is in every row.
//!
//! At intervals shorter than [`DEFER_MAX`] the recording thread reads the fast tier at every
//! tick but may parse it later ([`Sampler::sample_deferred`]): a few ticks' text together, at
//! the next slow reading or before the oldest is [`DEFER_MAX`] old. A snapshot is dated by its
//! reads, so only its row's delivery waits. Parsing right after a 10 ms sleep costs this
//! machine more than twice what the same parse costs with the code and data still cached; at
//! 10 ms the deferral took a tenth off the observer's CPU (`bench/sampler-ab.sh`).
//!
//! The qdisc counters (an rtnetlink dump, a tenth of a millisecond here) go with the protocol
//! files: a qdisc counts only packets sent, and those the interfaces count too; a qdisc that
//! drops every packet on an otherwise silent machine is seen at the next reading every
//! [`QUIET_REREAD`]. When the last reading held qdiscs of other namespaces (a lab's), whose
//! packets this namespace's interfaces do not count, the qdiscs and protocol files are read
//! at every slow reading.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use netceil_model::NicInfo;

use crate::error::{ParseError, SourceError};
use crate::flows::{Flow, FlowTracker, TcpFlows};
use crate::iface::{self, IfaceInfo};
use crate::parse::interrupts::{self, nic_queue, Interrupts, QueueDirection, QueueOwner};
use crate::parse::net_dev::{self, NetDev};
use crate::parse::pressure::{self, Pressure};
use crate::parse::proc_stat::{self, ProcStat};
use crate::parse::snmp::{self, KnownCounters};
use crate::parse::sockets::{self, SocketRow};
use crate::parse::softirqs::{self, Softirqs};
use crate::parse::softnet::{self, SoftnetStat};
use crate::parse::{netstat, task_stat, task_status};
use crate::sockdiag::TcpSocket;
use crate::Source;

/// Where qdisc statistics come from, for error messages.
pub const QDISC_SOURCE: &str = "rtnetlink qdisc dump (RTM_GETQDISC)";

/// The shortest sampling interval the sampler is designed for.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// The longest a costly slow-tier file (see the module docs) goes unread when nothing moved.
pub const QUIET_REREAD: Duration = Duration::from_secs(5);

/// Interrupts per second per CPU (all of them, from /proc/stat) from which /proc/interrupts
/// is read at every slow reading: above a busy CPU's own timer (at most 1000 Hz), so that
/// what is left is devices' and inter-processor interrupts worth breaking down.
pub const IRQ_BUSY_PER_CPU: f64 = 1000.0;

/// How often interfaces' operstate is re-read when nothing changed.
pub const IFACE_REFRESH: Duration = Duration::from_secs(5);

/// How often every interface fact (speed, MTU, driver, queues, IRQs: three files, three links
/// and two directories an interface) is re-read when neither the set of interfaces nor any
/// one's operstate changed. A link that goes down or comes up (when a speed is negotiated
/// again) has them all re-read at once.
pub const IFACE_FACTS_REFRESH: Duration = Duration::from_secs(30);

/// What to sample and how often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplerConfig {
    /// Time between samples: 1 s by default, down to [`MIN_INTERVAL`].
    pub interval: Duration,
    /// Interfaces to record. `None`: every interface that is up, loopback included (it reports
    /// operstate `unknown`), since netceil's own tests run over loopback. An interface that
    /// comes up later is picked up within [`IFACE_REFRESH`].
    pub ifaces: Option<Vec<String>>,
    /// Processes whose threads are recorded one by one.
    pub pids: Vec<i32>,
    /// The slow tier of sources is read at most this often (see the module docs).
    pub slow_interval: Duration,
    /// Rows the recording keeps in memory at most (see [`crate::MAX_ROWS`]).
    pub max_rows: usize,
    /// The longest the costly slow-tier files go unread when nothing they count moved (see
    /// the module docs): [`QUIET_REREAD`] by default; zero reads them at every slow reading.
    pub quiet_reread: Duration,
    /// Run the sampler thread in the idle scheduling class until the CPUs are full (see
    /// [`crate::sched`]): for a request/response run, whose tail the sampler's reads would
    /// otherwise sit in. Off by default, at nice 10: on CPUs a workload keeps full from its
    /// first instant, the idle class gets nothing for a second or so, and rows are lost.
    pub idle_class: bool,
}

/// The default [`SamplerConfig::slow_interval`].
pub const DEFAULT_SLOW_INTERVAL: Duration = Duration::from_millis(100);

/// How often every process's CPU time is read (one `/proc/PID/stat` per process, as top does),
/// to name who else took the CPU. Two seconds keeps it near 0.05 % of a core on a machine with
/// a few hundred processes.
pub const PROCESS_SCAN_INTERVAL: Duration = Duration::from_secs(2);

/// How the process scan finds TCP sockets facing the workload's (its peers').
#[derive(Debug, Clone, Copy)]
enum TcpPeers<'f> {
    /// From /proc/PID/net/tcp and tcp6: the workload's connections are not known. Each read
    /// walks the kernel's whole established-socket hash table, sized by memory (milliseconds
    /// on a large machine, the CPU held meanwhile).
    Tables,
    /// The far end of each of the workload's connections (at most
    /// [`crate::flows::LOOKUP_MAX`]), looked up by its addresses in each process's namespace,
    /// each at once. None: no TCP peer can face the workload.
    FarEnds(&'f [Flow]),
}

/// One process's CPU time at a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSample {
    pub pid: u32,
    pub comm: String,
    /// utime + stime of all its threads, ticks.
    pub ticks: u64,
    /// The CPU its main thread last ran on.
    pub processor: u32,
    /// Its nice value (-20..19): at 10 and above it gets a tenth of a default task's share
    /// when they compete, so it mostly takes idle time.
    pub nice: i64,
    /// Its parent's pid.
    pub ppid: u32,
    /// Whether it is part of the workload, and how.
    pub role: ProcessRole,
}

/// How a process relates to the workload the run watched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ProcessRole {
    /// Not known to be part of it (or the run watched nothing).
    #[default]
    Other,
    /// A process the run watched (`--pid`, the command of `watch -- CMD`, netceil itself).
    Watched,
    /// A descendant of a watched process (the program a wrapper script started).
    Child,
    /// A process with a socket facing one of the workload's sockets: its other end (an
    /// iperf3 server beside a watched client). Checked only for processes busy since the
    /// previous scan.
    Peer,
}

impl ProcessRole {
    /// The value of the `role` label, or `None` for [`ProcessRole::Other`].
    pub fn label(self) -> Option<&'static str> {
        match self {
            ProcessRole::Other => None,
            ProcessRole::Watched => Some("watched"),
            ProcessRole::Child => Some("child"),
            ProcessRole::Peer => Some("peer"),
        }
    }
}

/// Busy unwatched processes checked for sockets facing the workload, at most, per scan.
const PEER_CANDIDATES: usize = 8;
/// A socket table larger than this is not read for the peer check (a server with tens of
/// thousands of sockets): its processes stay unclassified rather than cost a core.
const PEER_TABLE_MAX_BYTES: usize = 2 << 20;

/// Every process's CPU time at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessScan {
    /// Counts the scans of one sampler: equal in two snapshots means the same scan.
    pub seq: u64,
    /// When it was read, on the source's clock.
    pub t: Duration,
    pub processes: Vec<ProcessSample>,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            interval: Duration::from_secs(1),
            ifaces: None,
            pids: Vec::new(),
            slow_interval: DEFAULT_SLOW_INTERVAL,
            max_rows: crate::MAX_ROWS,
            quiet_reread: QUIET_REREAD,
            idle_class: false,
        }
    }
}

impl SamplerConfig {
    /// Checks the interval: at least [`MIN_INTERVAL`], at most an hour.
    pub fn validate(&self) -> Result<(), String> {
        if self.interval < MIN_INTERVAL {
            return Err(format!(
                "sampling interval {:?} is below the {:?} minimum",
                self.interval, MIN_INTERVAL
            ));
        }
        if self.interval > Duration::from_secs(3600) {
            return Err(format!(
                "sampling interval {:?} is above the one-hour maximum",
                self.interval
            ));
        }
        if self.slow_interval > Duration::from_secs(3600) {
            return Err(format!(
                "slow-tier interval {:?} is above the one-hour maximum",
                self.slow_interval
            ));
        }
        Ok(())
    }
}

/// One thread's counters at a sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadSample {
    pub pid: i32,
    pub tid: u32,
    pub comm: String,
    /// User-mode CPU time, ticks.
    pub utime: u64,
    /// Kernel-mode CPU time, ticks.
    pub stime: u64,
    /// The CPU it last ran on.
    pub processor: u32,
    pub voluntary_cs: Option<u64>,
    pub nonvoluntary_cs: Option<u64>,
    /// read/write-family calls and bytes (`/proc/PID/task/TID/io`); `Err` with the reason
    /// when the file could not be read (it needs ptrace access to the thread).
    pub io: Result<crate::parse::task_io::TaskIo, String>,
}

/// A NIC queue interrupt, tied to an interface where possible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicIrq {
    pub irq: u32,
    /// The interface, when the IRQ could be matched to one the machine has.
    pub iface: Option<String>,
    /// Otherwise what the IRQ name says: a PCI address, `virtioN`, a driver or an old name.
    pub device: Option<String>,
    pub queue: Option<u32>,
    pub direction: QueueDirection,
}

/// Everything read at one moment: raw counters, not rates.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// When it was taken, on the source's monotonic clock: the middle of the reads.
    pub t: Duration,
    /// When /proc/stat was read, on the same clock: the first of the reads, so `t` less up to
    /// half of all of them. CPU shares are of the time between two of these.
    pub stat_at: Duration,
    /// USER_HZ, to turn thread CPU ticks into time.
    pub ticks_per_s: u64,
    pub stat: Result<ProcStat, SourceError>,
    pub softirqs: Result<Softirqs, SourceError>,
    /// /proc/net/dev, reduced to the selected interfaces.
    pub net_dev: Result<NetDev, SourceError>,
    /// Interfaces asked for by name that the machine does not have (now).
    pub ifaces_absent: Vec<String>,
    pub softnet: Result<SoftnetStat, SourceError>,
    /// The slow tier as last read: shared with earlier snapshots when it was not read again
    /// this time (compare [`SlowSnapshot::seq`]).
    pub slow: Arc<SlowSnapshot>,
}

/// The sources read at most every [`SamplerConfig::slow_interval`].
#[derive(Debug, Clone, PartialEq)]
pub struct SlowSnapshot {
    /// Counts the slow readings of one sampler: equal in two snapshots means the same reading.
    pub seq: u64,
    /// When it was read, on the source's clock.
    pub t: Duration,
    pub interrupts: Result<Interrupts, SourceError>,
    /// NIC queue IRQs found in `interrupts`, for the selected interfaces.
    pub nic_irqs: Vec<NicIrq>,
    /// Which reading of /proc/interrupts `interrupts` and `nic_irqs` are: the same in two
    /// slow snapshots when it was not read again (nothing moved, see the module docs).
    pub irq_read: Reading,
    /// Which reading of /proc/net/snmp, /proc/net/netstat and the qdiscs `snmp`, `netstat`
    /// and `qdiscs` are.
    pub proto_read: Reading,
    /// `statistics/rx_missed_errors` of each selected interface.
    pub rx_missed: BTreeMap<String, Result<u64, SourceError>>,
    /// The counters netceil uses from /proc/net/snmp.
    pub snmp: Result<KnownCounters, SourceError>,
    /// The counters netceil uses from /proc/net/netstat.
    pub netstat: Result<KnownCounters, SourceError>,
    pub psi_cpu: Result<Pressure, SourceError>,
    pub psi_io: Result<Pressure, SourceError>,
    pub psi_memory: Result<Pressure, SourceError>,
    pub threads: Vec<ThreadSample>,
    /// Watched processes that could not be read, and why.
    pub process_errors: Vec<(i32, SourceError)>,
    /// The sampling thread's CPU time so far (a system call: read with the slow tier).
    pub sampler_cpu: Option<Duration>,
    /// Queueing disciplines and their counters (rtnetlink), all namespaces reachable; read
    /// with the protocol files (see `proto_read`).
    pub qdiscs: Result<Vec<crate::qdisc::QdiscStats>, SourceError>,
    /// The last scan of every process's CPU time (shared until the next one is due).
    pub processes: Option<Arc<ProcessScan>>,
    /// The workload's established TCP connections with the kernel's `tcp_info` of each
    /// (sock_diag); `None` when no process is watched.
    pub tcp_flows: Option<Result<TcpFlows, SourceError>>,
}

/// One reading of a source that is not read at every slow reading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// Counts the readings of that source by one sampler.
    pub seq: u64,
    /// When it was read, on the source's clock.
    pub t: Duration,
}

/// When a costly source was last read, and the count that tells whether it is due then (the
/// packets of every interface, for the protocol files).
#[derive(Debug, Clone, Copy)]
struct LastRead {
    reading: Reading,
    count: Option<u64>,
}

/// Whether a costly source is read again at `now`: never read, its last reading is about
/// `reread` old (within `slack`), or what it counts `moved`.
fn costly_due(
    last: Option<LastRead>,
    now: Duration,
    (slack, reread): (Duration, Duration),
    moved: bool,
) -> bool {
    let Some(last) = last else { return true };
    moved || now.saturating_sub(last.reading.t) + slack >= reread
}

/// CPU time, all CPUs together, below which a machine without a workload is not scanned for
/// busy processes again (see [`Sampler::scan_processes`]): the scan names only processes that
/// took at least [`crate::rates::PROC_CPU_MIN_PCT`] of a CPU (100 ms over the 2 s between
/// scans), which a machine that was busy for less than a fifth of that cannot have had.
pub const QUIET_SCAN_CPU: Duration = Duration::from_millis(20);

/// The ticks all CPUs spent on something (user, nice, system, irq, softirq): the most that
/// processes' `utime + stime` can have grown by in all.
fn busy_ticks(t: &proc_stat::CpuTimes) -> u64 {
    t.user
        .saturating_add(t.nice)
        .saturating_add(t.system)
        .saturating_add(t.irq.unwrap_or(0))
        .saturating_add(t.softirq.unwrap_or(0))
}

/// Packets received, sent and dropped on every interface: a protocol counter moves only
/// with these (or, for the few that count refusals before a packet is made, within
/// [`QUIET_REREAD`]).
fn packets_moved(nd: &NetDev) -> u64 {
    nd.ifaces.iter().fold(0u64, |sum, r| {
        sum.wrapping_add(r.rx_packets)
            .wrapping_add(r.tx_packets)
            .wrapping_add(r.rx_dropped)
            .wrapping_add(r.tx_dropped)
    })
}

/// The fast tier's text as read at one tick, each file's read error kept beside it, to be
/// parsed at once or later (see [`Sampler::sample_deferred`]).
#[derive(Debug, Default)]
struct FastText {
    /// When the reads began and ended, on the source's clock.
    t0: Duration,
    t1: Duration,
    stat: String,
    softirqs: String,
    net_dev: String,
    softnet: String,
    /// The error of each read, in the order of the fields above.
    errors: [Option<SourceError>; 4],
}

impl FastText {
    const PATHS: [&'static str; 4] = [
        proc_stat::SOURCE,
        softirqs::SOURCE,
        net_dev::SOURCE,
        softnet::SOURCE,
    ];

    /// Reads the four files into this text's buffers (kept from one reading to the next).
    fn read<S: Source + ?Sized>(&mut self, source: &S) {
        self.t0 = source.now();
        let bufs = [
            &mut self.stat,
            &mut self.softirqs,
            &mut self.net_dev,
            &mut self.softnet,
        ];
        for ((path, buf), err) in Self::PATHS.iter().zip(bufs).zip(&mut self.errors) {
            *err = source
                .read_into(path, buf)
                .err()
                .map(|e| SourceError::io(path, &e));
        }
        self.t1 = source.now();
    }

    /// One file's text parsed, or why it could not be read or parsed.
    fn parse<T>(
        &self,
        i: usize,
        text: &str,
        parse: fn(&str) -> Result<T, ParseError>,
    ) -> Result<T, SourceError> {
        if let Some(e) = &self.errors[i] {
            return Err(e.clone());
        }
        parse(text).map_err(|e| SourceError::parse(Self::PATHS[i], e))
    }
}

/// The fast tier parsed: what [`Sampler::fast_parsed`] makes of a [`FastText`].
struct Fast {
    stat: Result<ProcStat, SourceError>,
    softirqs: Result<Softirqs, SourceError>,
    /// Reduced to the selected interfaces.
    net_dev: Result<NetDev, SourceError>,
    ifaces_absent: Vec<String>,
    softnet: Result<SoftnetStat, SourceError>,
    moved: Moved,
}

/// How long the fast tier's text may wait to be parsed at short intervals (see
/// [`Sampler::sample_deferred`]).
pub const DEFER_MAX: Duration = Duration::from_millis(50);

#[derive(Debug, Default)]
struct Buffers {
    fast: FastText,
    interrupts: String,
    snmp: String,
    netstat: String,
    psi: String,
    sys: String,
    task: String,
}

/// Reads all sources once per [`Sampler::sample`] call.
#[derive(Debug)]
pub struct Sampler<S: Source> {
    source: S,
    config: SamplerConfig,
    bufs: Buffers,
    ifaces: BTreeMap<String, IfaceInfo>,
    /// When the interfaces' operstate was last read (with the rest or alone).
    ifaces_read_at: Option<Duration>,
    /// When every fact of the interfaces was last read.
    ifaces_full_at: Option<Duration>,
    slow: Option<Arc<SlowSnapshot>>,
    processes: Option<Arc<ProcessScan>>,
    /// Descendants of the watched processes found by the last process scan: their threads are
    /// sampled too (the program a wrapper script started is the workload).
    children: BTreeSet<i32>,
    /// Which sockets are the workload's, remembered between readings.
    flows: FlowTracker,
    /// The processes the last scan read, and the kernel's count of forks (`processes` in
    /// /proc/stat) when it listed /proc: while that count stays the same no process was
    /// created, so the next scan reads the same ones without listing /proc again (listing it
    /// costs the kernel about as much as reading every process's stat).
    listed: Option<(u64, Vec<u32>)>,
    /// Each process's time on CPU (ns, `/proc/PID/schedstat`) at the last scan when it was
    /// single-threaded then; `None` for the others (see [`Sampler::read_process`]).
    ran: HashMap<u32, Option<u64>>,
    /// Each interface's `drop` column of /proc/net/dev when its `rx_missed_errors` was last
    /// read (or known unchanged).
    missed_with: HashMap<String, u64>,
    /// The machine's busy ticks (see [`busy_ticks`]) at the last process scan.
    scanned_busy: Option<u64>,
    /// The last reading of /proc/interrupts.
    irq_last: Option<LastRead>,
    /// When the last sample was taken, with /proc/stat's interrupt count then.
    last_intr: Option<(Duration, Option<u64>)>,
    /// The last reading of the protocol files, with every interface's packets then.
    proto_last: Option<LastRead>,
    /// Fast-tier texts read and not yet parsed, oldest first (see
    /// [`Sampler::sample_deferred`]), and emptied ones to read into again.
    pending: Vec<FastText>,
    spare: Vec<FastText>,
    /// How long the last tick's reads took, on the source's clock.
    last_read_span: Duration,
}

/// What the fast tier saw move, to tell whether a costly source is due (see
/// [`costly_due`]).
#[derive(Debug, Clone, Copy)]
struct Moved {
    /// /proc/stat counted at least [`IRQ_BUSY_PER_CPU`] interrupts per CPU per second over
    /// the last interval (or could not tell).
    irq_busy: bool,
    /// Packets of every interface (/proc/net/dev), see [`packets_moved`].
    packets: Option<u64>,
}

/// The reading after `last`, taken between `start` and `end` (and dated in the middle).
fn next_reading(last: Option<LastRead>, start: Duration, end: Duration) -> Reading {
    Reading {
        seq: last.map_or(0, |l| l.reading.seq + 1),
        t: start + end.saturating_sub(start) / 2,
    }
}

/// The time on CPU in `/proc/PID/schedstat` (ns, the first of three numbers); `None` when
/// it is 0 (none counted yet, or a kernel without scheduler statistics) or the text is not
/// that line.
fn schedstat_run_ns(text: &str) -> Option<u64> {
    let mut fields = text.split_ascii_whitespace();
    let run: u64 = fields.next()?.parse().ok()?;
    (fields.count() == 2 && run > 0).then_some(run)
}

fn read_parse<S: Source + ?Sized, T>(
    source: &S,
    path: &str,
    buf: &mut String,
    parse: fn(&str) -> Result<T, ParseError>,
) -> Result<T, SourceError> {
    source
        .read_into(path, buf)
        .map_err(|e| SourceError::io(path, &e))?;
    parse(buf).map_err(|e| SourceError::parse(path, e))
}

impl<S: Source> Sampler<S> {
    /// A sampler reading from `source`. Nothing is read until [`Sampler::sample`].
    pub fn new(source: S, config: SamplerConfig) -> Self {
        Sampler {
            source,
            config,
            bufs: Buffers::default(),
            ifaces: BTreeMap::new(),
            ifaces_read_at: None,
            ifaces_full_at: None,
            slow: None,
            processes: None,
            children: BTreeSet::new(),
            flows: FlowTracker::default(),
            listed: None,
            ran: HashMap::new(),
            scanned_busy: None,
            missed_with: HashMap::new(),
            irq_last: None,
            last_intr: None,
            proto_last: None,
            pending: Vec::new(),
            spare: Vec::new(),
            last_read_span: Duration::ZERO,
        }
    }

    pub fn config(&self) -> &SamplerConfig {
        &self.config
    }

    pub fn source(&self) -> &S {
        &self.source
    }

    /// Facts about the interfaces being recorded, as last read.
    pub fn nic_info(&self) -> Vec<NicInfo> {
        self.ifaces
            .values()
            .filter(|i| self.selected(i))
            .map(IfaceInfo::nic_info)
            .collect()
    }

    fn selected(&self, info: &IfaceInfo) -> bool {
        match &self.config.ifaces {
            Some(list) => list.contains(&info.name),
            None => info.is_usable(),
        }
    }

    /// Reads every fast-tier source, and the slow tier when it is due.
    pub fn sample(&mut self) -> Snapshot {
        let mut text = std::mem::take(&mut self.bufs.fast);
        text.read(&self.source);
        let snap = self.sample_read(&text);
        self.bufs.fast = text;
        snap
    }

    /// A snapshot of the fast tier just read as `text`, reading the slow tier when it is due.
    fn sample_read(&mut self, text: &FastText) -> Snapshot {
        let fast = self.fast_parsed(text);
        let t0 = text.t0;
        let slow = match self.slow.take() {
            Some(last) if !self.slow_due(&last, t0) => last,
            last => {
                let seq = last.as_ref().map_or(0, |l| l.seq + 1);
                let forks = fast.stat.as_ref().ok().and_then(|s| s.processes);
                let busy = fast.stat.as_ref().ok().map(|s| busy_ticks(&s.total));
                Arc::new(self.read_slow(
                    seq,
                    t0,
                    (forks, busy),
                    fast.net_dev.as_ref().ok(),
                    last.as_deref(),
                    fast.moved,
                ))
            }
        };
        self.slow = Some(Arc::clone(&slow));
        let t1 = self.source.now();
        self.last_read_span = t1.saturating_sub(t0);
        self.snapshot(t0, t1, fast, slow)
    }

    /// Like [`Sampler::sample`], but at intervals shorter than [`DEFER_MAX`] the fast tier
    /// read at a tick when the slow tier is not due is kept as text, and parsed (into
    /// snapshots, oldest first, into `out`) at the next tick that reads the slow tier, or
    /// when the oldest text would be [`DEFER_MAX`] old. Each snapshot is what
    /// [`Sampler::sample`] would have made at its tick, dated by its own reads: only the
    /// parsing waits (see the module docs). [`Sampler::flush_deferred`] parses what is
    /// left.
    pub fn sample_deferred(&mut self, out: &mut Vec<Snapshot>) {
        let mut text = self.spare.pop().unwrap_or_default();
        text.read(&self.source);
        let keep = DEFER_MAX.as_nanos() / self.config.interval.as_nanos().max(1)
            > self.pending.len() as u128 + 1;
        if keep
            && self
                .slow
                .as_ref()
                .is_some_and(|l| !self.slow_due(l, text.t0))
        {
            self.last_read_span = text.t1.saturating_sub(text.t0);
            self.pending.push(text);
            return;
        }
        self.flush_deferred(out);
        out.push(self.sample_read(&text));
        self.spare.push(text);
    }

    /// Parses the fast-tier texts [`Sampler::sample_deferred`] kept, into `out`.
    pub fn flush_deferred(&mut self, out: &mut Vec<Snapshot>) {
        let pending = std::mem::take(&mut self.pending);
        for text in &pending {
            let fast = self.fast_parsed(text);
            // The slow tier was not due at any of these ticks, and has not been read since.
            // A text is kept only when a slow reading exists and is not due, so there is one.
            let slow = match &self.slow {
                Some(s) => Arc::clone(s),
                None => continue,
            };
            out.push(self.snapshot(text.t0, text.t1, fast, slow));
        }
        self.spare.extend(pending);
    }

    /// How long the last tick's reads took (the slow tier's too, when read), on the
    /// source's clock.
    pub fn last_read_span(&self) -> Duration {
        self.last_read_span
    }

    /// Whether the slow tier, last read as `last`, is due again at `now`: half an interval of
    /// slack, so that jitter does not push a reading a whole interval later.
    fn slow_due(&self, last: &SlowSnapshot, now: Duration) -> bool {
        now.saturating_sub(last.t) + self.config.interval / 2 >= self.config.slow_interval
    }

    fn snapshot(
        &self,
        t0: Duration,
        t1: Duration,
        fast: Fast,
        slow: Arc<SlowSnapshot>,
    ) -> Snapshot {
        Snapshot {
            t: t0 + (t1.saturating_sub(t0)) / 2,
            stat_at: t0,
            ticks_per_s: self.source.clock_ticks_per_s(),
            stat: fast.stat,
            softirqs: fast.softirqs,
            net_dev: fast.net_dev,
            ifaces_absent: fast.ifaces_absent,
            softnet: fast.softnet,
            slow,
        }
    }

    /// The fast tier's text parsed, the interfaces refreshed when due, and what moved since
    /// the last tick worked out.
    fn fast_parsed(&mut self, text: &FastText) -> Fast {
        let t0 = text.t0;
        let stat = text.parse(0, &text.stat, proc_stat::parse);
        let softirqs = text.parse(1, &text.softirqs, softirqs::parse);
        let net_dev_all = text.parse(2, &text.net_dev, net_dev::parse);
        let softnet = text.parse(3, &text.softnet, softnet::parse);
        if let Ok(nd) = &net_dev_all {
            self.refresh_ifaces(nd, t0);
        }
        let intr = stat.as_ref().ok().and_then(|s| s.intr_total);
        let cpus = stat.as_ref().map_or(1, |s| s.cpus.len().max(1));
        // Interrupts per second over the last interval; unknown counts as busy.
        let irq_busy = match (self.last_intr.replace((t0, intr)), intr) {
            (Some((then, Some(before))), Some(now)) => {
                let secs = t0.saturating_sub(then).as_secs_f64();
                now.checked_sub(before).is_none_or(|d| {
                    secs <= 0.0 || d as f64 / secs >= IRQ_BUSY_PER_CPU * cpus as f64
                })
            }
            _ => true,
        };
        let moved = Moved {
            irq_busy,
            packets: net_dev_all.as_ref().ok().map(packets_moved),
        };
        let (net_dev, ifaces_absent) = self.select_ifaces(net_dev_all);
        Fast {
            stat,
            softirqs,
            net_dev,
            ifaces_absent,
            softnet,
            moved,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn read_slow(
        &mut self,
        seq: u64,
        t0: Duration,
        (forks, busy): (Option<u64>, Option<u64>),
        net_dev: Option<&NetDev>,
        last: Option<&SlowSnapshot>,
        moved: Moved,
    ) -> SlowSnapshot {
        let slack = (self.config.interval / 2, self.config.quiet_reread);
        let packets_moved = match (self.proto_last.and_then(|l| l.count), moved.packets) {
            (Some(then), Some(now)) => then != now,
            _ => true,
        };
        let (interrupts, nic_irqs, irq_read) = match last {
            Some(l) if !costly_due(self.irq_last, t0, slack, moved.irq_busy) => {
                (l.interrupts.clone(), l.nic_irqs.clone(), l.irq_read)
            }
            _ => {
                let start = self.source.now();
                let interrupts = read_parse(
                    &self.source,
                    interrupts::SOURCE,
                    &mut self.bufs.interrupts,
                    interrupts::parse,
                );
                let nic_irqs = match &interrupts {
                    Ok(irqs) => self.nic_irqs(irqs),
                    Err(_) => Vec::new(),
                };
                let reading = next_reading(self.irq_last, start, self.source.now());
                self.irq_last = Some(LastRead {
                    reading,
                    count: None,
                });
                (interrupts, nic_irqs, reading)
            }
        };
        // Qdiscs in other namespaces (a lab's) move packets this namespace's interfaces do
        // not count: with any, the qdiscs are read at every slow reading.
        let elsewhere = |l: &SlowSnapshot| {
            l.qdiscs
                .as_ref()
                .is_ok_and(|q| q.iter().any(|q| q.netns.is_some()))
        };
        let (snmp, netstat, proto_read, qdiscs) = match last {
            Some(l) if !costly_due(self.proto_last, t0, slack, packets_moved) && !elsewhere(l) => (
                l.snmp.clone(),
                l.netstat.clone(),
                l.proto_read,
                l.qdiscs.clone(),
            ),
            _ => {
                let (src, b) = (&self.source, &mut self.bufs);
                let start = src.now();
                let snmp = read_parse(src, snmp::SOURCE, &mut b.snmp, |t| {
                    snmp::parse_known(snmp::SOURCE, t)
                });
                let netstat = read_parse(src, netstat::SOURCE, &mut b.netstat, |t| {
                    snmp::parse_known(netstat::SOURCE, t)
                });
                let qdiscs = src.qdiscs().map_err(|e| SourceError::io(QDISC_SOURCE, &e));
                let reading = next_reading(self.proto_last, start, self.source.now());
                self.proto_last = Some(LastRead {
                    reading,
                    count: moved.packets,
                });
                (snmp, netstat, reading, qdiscs)
            }
        };
        let src = &self.source;
        let b = &mut self.bufs;
        let psi_cpu = read_parse(src, "/proc/pressure/cpu", &mut b.psi, pressure::parse);
        let psi_io = read_parse(src, "/proc/pressure/io", &mut b.psi, pressure::parse);
        let psi_memory = read_parse(src, "/proc/pressure/memory", &mut b.psi, pressure::parse);
        // /proc/net/dev's `drop` is rx_dropped + rx_missed_errors, both only growing: while
        // it stays the same, so does rx_missed_errors, and the last reading is still exact.
        let mut rx_missed = BTreeMap::new();
        for row in net_dev.map(|nd| nd.ifaces.as_slice()).unwrap_or_default() {
            let drop_then = self.missed_with.get_mut(&row.iface);
            let known = last
                .and_then(|l| l.rx_missed.get(&row.iface)?.as_ref().ok())
                .filter(|_| drop_then.as_deref() == Some(&row.rx_dropped));
            let v = match known {
                Some(&n) => Ok(n),
                None => iface::read_counter(src, &row.iface, "rx_missed_errors", &mut b.sys),
            };
            match drop_then {
                Some(d) => *d = row.rx_dropped,
                None => {
                    self.missed_with.insert(row.iface.clone(), row.rx_dropped);
                }
            }
            rx_missed.insert(row.iface.clone(), v);
        }
        self.missed_with
            .retain(|name, _| rx_missed.contains_key(name));
        let (threads, process_errors) = self.read_threads();
        // The workload's connections at the last reading, to find its TCP peers without
        // reading the TCP tables (see `TcpPeers`).
        let flows: Option<Vec<Flow>> = match last.and_then(|l| l.tcp_flows.as_ref()) {
            Some(Ok(f)) if f.flows.len() <= crate::flows::LOOKUP_MAX => Some(f.flows.clone()),
            _ => None,
        };
        let processes = self.scan_processes(t0, (forks, busy), flows.as_deref());
        let workload: Vec<i32> = self
            .config
            .pids
            .iter()
            .chain(&self.children)
            .copied()
            .collect::<BTreeSet<i32>>()
            .into_iter()
            .collect();
        let prev_flows = last.and_then(|l| l.tcp_flows.as_ref()?.as_ref().ok());
        let tcp_flows = self.flows.read(&self.source, &workload, t0, prev_flows);
        let t1 = self.source.now();
        SlowSnapshot {
            tcp_flows,
            processes,
            seq,
            t: t0 + (t1.saturating_sub(t0)) / 2,
            interrupts,
            nic_irqs,
            irq_read,
            proto_read,
            rx_missed,
            snmp,
            netstat,
            psi_cpu,
            psi_io,
            psi_memory,
            threads,
            process_errors,
            sampler_cpu: self.source.thread_cpu_time(),
            qdiscs,
        }
    }

    /// Every process's CPU time, when [`PROCESS_SCAN_INTERVAL`] has passed since the last
    /// scan; else the last scan again. Processes that exit mid-scan are skipped. `forks` is
    /// the kernel's count of forks now: unchanged since the last listing of /proc, the
    /// processes are those of the last scan (less any that exited), and /proc is not listed.
    /// `busy` is the machine's busy ticks now ([`busy_ticks`]): with no process watched, while
    /// all CPUs together were busy for less than [`QUIET_SCAN_CPU`] since the last scan, that
    /// scan stands for this one, dated now, with the same `seq` (so no rates are made from
    /// it). Every process's count then is within that much of its count at the last scan, and
    /// the next scan's rates, over the time since this date, carry that much error at most: 1
    /// point of a CPU over the 2 s between scans, against the 5 % it takes to be named.
    fn scan_processes(
        &mut self,
        now: Duration,
        (forks, busy): (Option<u64>, Option<u64>),
        flows: Option<&[Flow]>,
    ) -> Option<Arc<ProcessScan>> {
        if let Some(last) = &self.processes {
            if now.saturating_sub(last.t) < PROCESS_SCAN_INTERVAL {
                return Some(Arc::clone(last));
            }
            // Without a workload, a machine that used less than QUIET_SCAN_CPU since the
            // last scan has no process to name: that scan's figures stand, dated now.
            let quiet = QUIET_SCAN_CPU.as_secs_f64() * self.source.clock_ticks_per_s() as f64;
            if let (true, Some(then), Some(now_busy)) =
                (self.config.pids.is_empty(), self.scanned_busy, busy)
            {
                if (now_busy.saturating_sub(then) as f64) < quiet {
                    let scan = Arc::new(ProcessScan {
                        t: now,
                        ..(**last).clone()
                    });
                    self.processes = Some(Arc::clone(&scan));
                    return Some(scan);
                }
            }
        }
        let pids = match (self.listed.take(), forks) {
            (Some((at, pids)), Some(now)) if at == now => pids,
            _ => {
                let pids: Vec<u32> = self
                    .source
                    .list_dir("/proc")
                    .ok()?
                    .iter()
                    .filter_map(|n| n.parse().ok())
                    .collect();
                self.source.processes_seen(&pids);
                pids
            }
        };
        let last = self.processes.clone();
        let before: HashMap<u32, &ProcessSample> = last
            .iter()
            .flat_map(|l| &l.processes)
            .map(|p| (p.pid, p))
            .collect();
        let mut ran = HashMap::with_capacity(pids.len());
        let mut processes = Vec::with_capacity(pids.len());
        for &pid in &pids {
            if let Some(p) = self.read_process(pid, before.get(&pid).copied(), &mut ran) {
                processes.push(p);
            }
        }
        self.ran = ran;
        if let Some(forks) = forks {
            // Those that could not be read have exited (a pid is reused only after a fork).
            let read: Vec<u32> = processes.iter().map(|p| p.pid).collect();
            self.listed = Some((forks, read));
        }
        self.classify_processes(&mut processes, flows);
        self.scanned_busy = busy;
        let seq = self.processes.as_ref().map_or(0, |p| p.seq + 1);
        let scan = Arc::new(ProcessScan {
            seq,
            t: self.source.now(),
            processes,
        });
        self.processes = Some(Arc::clone(&scan));
        Some(scan)
    }

    /// One process's CPU time for a scan, or `None` when it has gone. A process that was
    /// single-threaded at the last scan and has not run since (its `/proc/PID/schedstat`, a
    /// line of three numbers, shows the same time on CPU) has the same stat as then: the last
    /// scan's figures are kept and its stat, several times costlier for the kernel to write,
    /// is not read. Its nice value or parent could change meanwhile (set by another process)
    /// and be seen only once it runs again. `ran` gets its time on CPU for the next scan.
    fn read_process(
        &mut self,
        pid: u32,
        before: Option<&ProcessSample>,
        ran: &mut HashMap<u32, Option<u64>>,
    ) -> Option<ProcessSample> {
        // Single-threaded at the last scan, with its time on CPU then: read schedstat first.
        let known = self.ran.get(&pid).copied();
        // `Some(None)`: read, but no time yet (a process that has not been descheduled since
        // it started shows 0); tried again at the next scan.
        let run_ns = match known {
            Some(None) => None,
            _ => {
                let path = format!("/proc/{pid}/schedstat");
                self.source
                    .read_into(&path, &mut self.bufs.task)
                    .ok()
                    .map(|()| schedstat_run_ns(&self.bufs.task))
            }
        };
        if let (Some(Some(then)), Some(Some(now)), Some(before)) = (known, run_ns, before) {
            if then == now {
                ran.insert(pid, Some(now));
                return Some(ProcessSample {
                    role: ProcessRole::Other,
                    ..before.clone()
                });
            }
        }
        let path = format!("/proc/{pid}/stat");
        self.source.read_into(&path, &mut self.bufs.task).ok()?;
        let st = task_stat::parse(&self.bufs.task).ok()?;
        // Many threads: schedstat has the main thread's time only. One that has just become
        // single-threaded gets schedstat read first at the next scan.
        match (known, st.num_threads == 1, run_ns) {
            (Some(None), true, _) | (_, true, Some(None)) => {}
            (_, single, run) => {
                ran.insert(pid, run.flatten().filter(|_| single));
            }
        }
        Some(ProcessSample {
            pid,
            comm: st.comm,
            ticks: st.utime.saturating_add(st.stime),
            processor: st.processor,
            nice: st.nice,
            ppid: st.ppid,
            role: ProcessRole::Other,
        })
    }

    /// Sets each process's role: watched, a descendant of a watched process, or (for the busy
    /// others) a peer whose socket faces one of the workload's. Each network namespace's socket
    /// tables are read once per scan.
    /// `flows`: the workload's TCP connections at the last reading, when known (see
    /// [`TcpPeers`]).
    fn classify_processes(&mut self, processes: &mut [ProcessSample], flows: Option<&[Flow]>) {
        if self.config.pids.is_empty() {
            return;
        }
        let mut watched: BTreeSet<u32> = self
            .config
            .pids
            .iter()
            .filter_map(|p| u32::try_from(*p).ok())
            .collect();
        let parent: BTreeMap<u32, u32> = processes.iter().map(|s| (s.pid, s.ppid)).collect();
        for s in processes.iter_mut() {
            if watched.contains(&s.pid) {
                s.role = ProcessRole::Watched;
                continue;
            }
            // Up the parent chain (bounded: a chain this deep is not a workload's).
            let mut p = s.ppid;
            for _ in 0..32 {
                if watched.contains(&p) {
                    s.role = ProcessRole::Child;
                    break;
                }
                match parent.get(&p) {
                    Some(&pp) if pp != p && p > 1 => p = pp,
                    _ => break,
                }
            }
        }
        self.children = processes
            .iter()
            .filter(|s| s.role == ProcessRole::Child)
            .filter_map(|s| i32::try_from(s.pid).ok())
            .collect();
        watched.extend(
            processes
                .iter()
                .filter(|s| s.role == ProcessRole::Child)
                .map(|s| s.pid),
        );
        let before: BTreeMap<u32, u64> = self
            .processes
            .as_ref()
            .map(|p| p.processes.iter().map(|s| (s.pid, s.ticks)).collect())
            .unwrap_or_default();
        let mut busy: Vec<(u64, usize)> = processes
            .iter()
            .enumerate()
            .filter(|(_, s)| !watched.contains(&s.pid))
            .filter_map(|(i, s)| {
                let d = s.ticks.checked_sub(*before.get(&s.pid)?)?;
                (d > 0).then_some((d, i))
            })
            .collect();
        if busy.is_empty() {
            return;
        }
        busy.sort_by_key(|b| std::cmp::Reverse(b.0));
        busy.truncate(PEER_CANDIDATES);
        let tcp = match flows {
            Some(f) => TcpPeers::FarEnds(f),
            None => TcpPeers::Tables,
        };
        let mut tables: BTreeMap<String, Vec<SocketRow>> = BTreeMap::new();
        let mut workload: Vec<SocketRow> = watched
            .iter()
            .flat_map(|&pid| self.process_sockets(pid, &mut tables, tcp))
            .collect();
        // With the tables left unread, the workload's own ends come from its flows.
        workload.extend(flows.unwrap_or_default().iter().map(|f| SocketRow {
            local: f.local,
            remote: f.remote,
            inode: f.inode,
        }));
        if workload.is_empty() {
            return;
        }
        for (_, i) in busy {
            let mine = self.process_sockets(processes[i].pid, &mut tables, tcp);
            if mine
                .iter()
                .any(|m| workload.iter().any(|w| sockets::facing(m, w)))
            {
                processes[i].role = ProcessRole::Peer;
            }
        }
    }

    /// A process's sockets: the `socket:[INODE]` links under its fd directory, looked up in
    /// its network namespace's tables (made once per namespace and kept in `tables`): UDP
    /// from /proc/PID/net, TCP as `tcp` says.
    fn process_sockets(
        &mut self,
        pid: u32,
        tables: &mut BTreeMap<String, Vec<SocketRow>>,
        tcp: TcpPeers<'_>,
    ) -> Vec<SocketRow> {
        let inodes: BTreeSet<u64> = crate::flows::socket_inodes(&self.source, pid)
            .into_iter()
            .collect();
        if inodes.is_empty() {
            return Vec::new();
        }
        let netns = self
            .source
            .read_link(&format!("/proc/{pid}/ns/net"))
            .unwrap_or_else(|_| format!("pid {pid}"));
        if !tables.contains_key(&netns) {
            let mut rows = Vec::new();
            let mut kinds = vec!["udp", "udp6"];
            match tcp {
                TcpPeers::Tables => kinds.extend(["tcp", "tcp6"]),
                TcpPeers::FarEnds([]) => {}
                TcpPeers::FarEnds(flows) => {
                    let far: Vec<TcpSocket> = flows
                        .iter()
                        .map(|f| TcpSocket {
                            local: f.remote,
                            remote: f.local,
                            state: crate::sockdiag::TCP_ESTABLISHED,
                            inode: 0,
                            cookie: crate::sockdiag::NO_COOKIE,
                            info: None,
                            mem: None,
                        })
                        .collect();
                    let path = format!("/proc/{pid}/ns/net");
                    match self.source.tcp_sockets_again(&netns, &path, &far) {
                        Ok(found) => rows.extend(found.iter().map(|s| SocketRow {
                            local: s.local,
                            remote: s.remote,
                            inode: s.inode,
                        })),
                        // No look-ups here (a copy of /proc): the tables, as before.
                        Err(_) => kinds.extend(["tcp", "tcp6"]),
                    }
                }
            }
            for t in kinds {
                let path = format!("/proc/{pid}/net/{t}");
                if self.source.read_into(&path, &mut self.bufs.task).is_ok()
                    && self.bufs.task.len() <= PEER_TABLE_MAX_BYTES
                {
                    if let Ok(r) = sockets::parse(&self.bufs.task) {
                        rows.extend(r);
                    }
                }
            }
            tables.insert(netns.clone(), rows);
        }
        tables[&netns]
            .iter()
            .filter(|r| inodes.contains(&r.inode))
            .copied()
            .collect()
    }

    /// Re-reads every interface fact when an interface appeared or vanished, when one's
    /// operstate (read alone every [`IFACE_REFRESH`]) changed, or every
    /// [`IFACE_FACTS_REFRESH`].
    fn refresh_ifaces(&mut self, net_dev: &NetDev, now: Duration) {
        let same_set = net_dev.ifaces.len() == self.ifaces.len()
            && net_dev
                .ifaces
                .iter()
                .all(|r| self.ifaces.contains_key(&r.iface));
        let within =
            |at: Option<Duration>, limit| at.is_some_and(|t| now.saturating_sub(t) < limit);
        if same_set && within(self.ifaces_read_at, IFACE_REFRESH) {
            return;
        }
        if same_set && within(self.ifaces_full_at, IFACE_FACTS_REFRESH) {
            let (src, buf) = (&self.source, &mut self.bufs.sys);
            let same_states = self
                .ifaces
                .iter()
                .all(|(name, info)| iface::read_operstate(src, name, buf) == info.operstate);
            if same_states {
                self.ifaces_read_at = Some(now);
                return;
            }
        }
        self.ifaces = net_dev
            .ifaces
            .iter()
            .map(|r| {
                let info = iface::read_info(&self.source, &r.iface, &mut self.bufs.sys);
                (r.iface.clone(), info)
            })
            .collect();
        self.ifaces_read_at = Some(now);
        self.ifaces_full_at = Some(now);
    }

    fn select_ifaces(
        &self,
        net_dev: Result<NetDev, SourceError>,
    ) -> (Result<NetDev, SourceError>, Vec<String>) {
        let Ok(mut nd) = net_dev else {
            return (net_dev, Vec::new());
        };
        nd.ifaces.retain(|r| match self.ifaces.get(&r.iface) {
            Some(info) => self.selected(info),
            // Not yet described: keep it only if asked for by name.
            None => self
                .config
                .ifaces
                .as_ref()
                .is_some_and(|l| l.contains(&r.iface)),
        });
        let absent = match &self.config.ifaces {
            Some(list) => list
                .iter()
                .filter(|n| nd.iface(n).is_none())
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        (Ok(nd), absent)
    }

    /// Finds the NIC queue IRQs and ties each to an interface: first by the device's
    /// `msi_irqs`, then by what the IRQ name says.
    fn nic_irqs(&self, irqs: &Interrupts) -> Vec<NicIrq> {
        let mut by_msi: BTreeMap<u32, &str> = BTreeMap::new();
        for info in self.ifaces.values() {
            for &irq in &info.msi_irqs {
                by_msi.insert(irq, &info.name);
            }
        }
        let mut out = Vec::new();
        for row in &irqs.rows {
            let Some(irq) = row.irq() else { continue };
            let Some((iface, device, queue, direction)) = row
                .devices
                .iter()
                .find_map(|name| self.resolve_irq_name(irq, name, &by_msi))
            else {
                continue;
            };
            let wanted = match &iface {
                Some(name) => self.ifaces.get(name).is_some_and(|i| self.selected(i)),
                None => self.config.ifaces.is_none(),
            };
            if wanted {
                out.push(NicIrq {
                    irq,
                    iface,
                    device,
                    queue,
                    direction,
                });
            }
        }
        out
    }

    #[allow(clippy::type_complexity)]
    fn resolve_irq_name(
        &self,
        irq: u32,
        name: &str,
        by_msi: &BTreeMap<u32, &str>,
    ) -> Option<(Option<String>, Option<String>, Option<u32>, QueueDirection)> {
        let Some(q) = nic_queue(name) else {
            // A single-vector NIC names its IRQ after the interface.
            return self
                .ifaces
                .contains_key(name)
                .then(|| (Some(name.to_string()), None, None, QueueDirection::RxTx));
        };
        let known = |n: &str| self.ifaces.contains_key(n).then(|| n.to_string());
        let by_device = |dev: &str| {
            self.ifaces
                .values()
                .find(|i| i.device.as_deref() == Some(dev))
                .map(|i| i.name.clone())
        };
        let (iface, device) = if let Some(name) = by_msi.get(&irq) {
            (Some((*name).to_string()), None)
        } else {
            match &q.owner {
                QueueOwner::Iface(n) => match known(n).or_else(|| {
                    // A driver prefix the name parser does not know: `drv-eth0`.
                    self.ifaces
                        .keys()
                        .find(|k| n.ends_with(&format!("-{k}")))
                        .cloned()
                }) {
                    Some(i) => (Some(i), None),
                    None => (None, Some(n.clone())),
                },
                QueueOwner::Pci(addr) => match by_device(addr) {
                    Some(i) => (Some(i), None),
                    None => (None, Some(addr.clone())),
                },
                QueueOwner::Virtio(n) => {
                    let dev = format!("virtio{n}");
                    match by_device(&dev) {
                        Some(i) => (Some(i), None),
                        None => (None, Some(dev)),
                    }
                }
                QueueOwner::Driver(d) => {
                    let mut matching = self
                        .ifaces
                        .values()
                        .filter(|i| i.driver.as_deref() == Some(d.as_str()));
                    match (matching.next(), matching.next()) {
                        (Some(i), None) => (Some(i.name.clone()), None),
                        _ => (None, Some(d.clone())),
                    }
                }
            }
        };
        Some((iface, device, q.queue, q.direction))
    }

    fn read_threads(&mut self) -> (Vec<ThreadSample>, Vec<(i32, SourceError)>) {
        let mut threads = Vec::new();
        let mut errors = Vec::new();
        let watched: BTreeSet<i32> = self.config.pids.iter().copied().collect();
        let pids: BTreeSet<i32> = watched.union(&self.children).copied().collect();
        for pid in pids {
            let task_dir = format!("/proc/{pid}/task");
            let tids = match self.source.list_dir(&task_dir) {
                Ok(t) => t,
                // A child that has exited since the last scan is simply gone.
                Err(_) if !watched.contains(&pid) => continue,
                Err(e) => {
                    errors.push((pid, SourceError::io(&task_dir, &e)));
                    continue;
                }
            };
            let mut tids: Vec<u32> = tids.iter().filter_map(|t| t.parse().ok()).collect();
            tids.sort_unstable();
            for tid in tids {
                match self.read_thread(pid, tid) {
                    Ok(Some(t)) => threads.push(t),
                    // Exited between the listing and the read: it simply is not there.
                    Ok(None) => {}
                    Err(e) => errors.push((pid, e)),
                }
            }
        }
        (threads, errors)
    }

    fn read_thread(&mut self, pid: i32, tid: u32) -> Result<Option<ThreadSample>, SourceError> {
        let stat_path = format!("/proc/{pid}/task/{tid}/stat");
        match self.source.read_into(&stat_path, &mut self.bufs.task) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(SourceError::io(&stat_path, &e)),
        }
        let stat =
            task_stat::parse(&self.bufs.task).map_err(|e| SourceError::parse(&stat_path, e))?;
        let status_path = format!("/proc/{pid}/task/{tid}/status");
        let (voluntary_cs, nonvoluntary_cs) =
            match self.source.read_into(&status_path, &mut self.bufs.task) {
                Ok(()) => task_status::parse_ctxt_switches(&self.bufs.task)
                    .map_err(|e| SourceError::parse(&status_path, e))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(SourceError::io(&status_path, &e)),
            };
        let io_path = format!("/proc/{pid}/task/{tid}/io");
        let io = match self.source.read_into(&io_path, &mut self.bufs.task) {
            Ok(()) => crate::parse::task_io::parse(&self.bufs.task)
                .map_err(|e| SourceError::parse(&io_path, e).to_string()),
            // Not there while stat and status were: exited just now, or a copy of /proc
            // without it. The thread's other figures stand.
            Err(e) => Err(SourceError::io(&io_path, &e).to_string()),
        };
        Ok(Some(ThreadSample {
            io,
            pid,
            tid,
            comm: stat.comm,
            utime: stat.utime,
            stime: stat.stime,
            processor: stat.processor,
            voluntary_cs,
            nonvoluntary_cs,
        }))
    }
}
