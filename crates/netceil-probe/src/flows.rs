//! The workload's TCP connections: which established sockets belong to the watched processes
//! (and their children), and the kernel's `tcp_info` of each, read with the slow tier.
//!
//! Sockets come from [`Source::tcp_sockets`] (sock_diag), one dump per network namespace the
//! workload's processes are in (`/proc/PID/ns/net`): a process started with `ip netns exec` has
//! its sockets there. They are matched to processes by inode, through the `socket:[INODE]`
//! links under `/proc/PID/fd`. Reading every link at every sample would cost a system call per
//! descriptor, so the links are read again only when a dump shows an established socket whose
//! owner is not known yet (a new connection, ours or not), when the set of processes changed,
//! and every [`FD_RESCAN`] (a descriptor passed on, or closed and its number reused).
//!
//! A dump walks the kernel's whole established-socket hash table, which is sized by the
//! machine's memory, not by its sockets: about 2 ms of CPU per address family on a 24 GiB
//! machine with a handful of sockets, during which the CPU serves nothing else. So a namespace
//! is dumped again only when a connection may have opened there since its last dump (its
//! `Tcp: ActiveOpens` and `PassiveOpens`, from `/proc/PID/net/snmp`, moved), at least every
//! [`REDUMP_EVERY`], or when the workload has more than [`LOOKUP_MAX`] sockets there.
//! Otherwise the workload's sockets of the last reading are looked up one by one
//! ([`Source::tcp_sockets_again`]), each at once, and those closed since drop out.
//!
//! The work is bounded: at most [`MAX_TCP_SOCKETS`] established sockets are read per sample,
//! over all namespaces (a namespace with more has the rest of its dump abandoned, and the run
//! says so), and only the [`BUSIEST_FLOWS`] flows that moved the most bytes in the interval get
//! series of their own, so ten thousand flows do not make ten thousand series.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::time::Duration;

use crate::rates::{counter_delta, CounterWidth};
use crate::sockdiag::{TcpInfo, TcpSocket, SOURCE};
use crate::{Source, SourceError};

/// Established TCP sockets read per sample at most, over all namespaces (the workload's and
/// anyone else's in the same namespaces: the kernel cannot filter by process).
pub const MAX_TCP_SOCKETS: usize = 4096;

/// Flows with series of their own per interval: the busiest by bytes moved (acknowledged plus
/// received), then by busy time.
pub const BUSIEST_FLOWS: usize = 8;

/// A namespace is dumped at least this often, even when no connection opened there (see the
/// module docs): a socket handed to the workload by another process is seen by then.
pub const REDUMP_EVERY: Duration = Duration::from_secs(10);

/// The most workload sockets of a namespace looked up one by one instead of dumped: a
/// look-up costs a few microseconds, a dump a few milliseconds.
pub const LOOKUP_MAX: usize = 64;

/// The fd links of the workload's processes are read again at least this often.
pub const FD_RESCAN: Duration = Duration::from_secs(2);

/// One established TCP connection of the workload, as the kernel saw it at a reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    /// The process holding the socket (the lowest pid, if several do).
    pub pid: i32,
    pub inode: u64,
    /// The kernel's socket cookie: the same inode with another cookie is another socket.
    pub cookie: u64,
    pub local: SocketAddr,
    pub remote: SocketAddr,
    /// `None` when the kernel sent no `tcp_info` for it.
    pub info: Option<TcpInfo>,
    /// The socket's buffers; `None` when the kernel sent no memory figures.
    pub mem: Option<crate::sockdiag::SkMem>,
}

impl Flow {
    /// The value of the `flow` label: `LOCAL>REMOTE`.
    pub fn label(&self) -> String {
        format!("{}>{}", self.local, self.remote)
    }

    /// Whether `prev` is this same socket at an earlier reading.
    pub fn same_socket(&self, prev: &Flow) -> bool {
        self.inode == prev.inode && self.cookie == prev.cookie
    }
}

/// The workload's TCP connections at one reading.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpFlows {
    /// Sorted by inode.
    pub flows: Vec<Flow>,
    /// The busiest flows of the interval that ends at this reading, busiest first (at most
    /// [`BUSIEST_FLOWS`]): the flows recorded one by one, as (inode, `flow` label).
    pub busiest: Vec<(u64, String)>,
    /// Why some flows may not be counted: a namespace that could not be read, the cap reached.
    pub notes: Vec<String>,
}

impl TcpFlows {
    /// The flow of this inode, if the workload has it.
    pub fn flow(&self, inode: u64) -> Option<&Flow> {
        self.flows
            .binary_search_by_key(&inode, |f| f.inode)
            .ok()
            .map(|i| &self.flows[i])
    }
}

/// Bytes moved (acknowledged by the peer plus received) and busy µs between two readings of
/// one socket; a field the kernel does not send, or one that went backwards, counts 0.
pub fn activity(prev: &Flow, cur: &Flow) -> (u64, u64) {
    let (Some(p), Some(c)) = (&prev.info, &cur.info) else {
        return (0, 0);
    };
    let d = |a: Option<u64>, b: Option<u64>| {
        a.zip(b)
            .and_then(|(a, b)| counter_delta(a, b, CounterWidth::Native))
            .unwrap_or(0)
    };
    (
        d(p.bytes_acked, c.bytes_acked).saturating_add(d(p.bytes_received, c.bytes_received)),
        d(p.busy_time_us, c.busy_time_us),
    )
}

/// A flow among the previous interval's busiest keeps its place unless another moved this
/// much more (a quarter): flows at one rate would otherwise take turns, and each newcomer is a
/// dozen more series in the run.
const STICKY_DIVISOR: u64 = 4;

/// The busiest flows of `cur` since `prev`: those that moved bytes or were busy, by bytes
/// moved, then busy time (ties by inode), with the previous interval's busiest favoured by
/// [`STICKY_DIVISOR`]; at most [`BUSIEST_FLOWS`].
pub fn busiest(prev: &TcpFlows, cur: &[Flow]) -> Vec<u64> {
    let mut ranked: Vec<(u64, u64, u64)> = cur
        .iter()
        .filter_map(|c| {
            let p = prev.flow(c.inode).filter(|p| c.same_socket(p))?;
            let (bytes, busy) = activity(p, c);
            if bytes == 0 && busy == 0 {
                return None;
            }
            let sticky = prev.busiest.iter().any(|(i, _)| *i == c.inode);
            let favour = |v: u64| {
                if sticky {
                    v.saturating_add(v / STICKY_DIVISOR)
                } else {
                    v
                }
            };
            Some((favour(bytes), favour(busy), c.inode))
        })
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    ranked.truncate(BUSIEST_FLOWS);
    ranked.into_iter().map(|r| r.2).collect()
}

/// What the sampler remembers between readings to match sockets to processes cheaply.
#[derive(Debug, Default)]
pub(crate) struct FlowTracker {
    /// Socket inode → the workload process holding it, from the last fd scan.
    owner: HashMap<u64, i32>,
    /// Established sockets seen in dumps that no workload process held at the last fd scan.
    others: HashSet<u64>,
    scanned_at: Option<Duration>,
    scanned_pids: Vec<i32>,
    /// Per namespace (`net:[INODE]`), the last dump and the workload's sockets since.
    spaces: HashMap<String, SpaceRead>,
}

/// What the last dump of one namespace knew (see the module docs).
#[derive(Debug)]
struct SpaceRead {
    /// `Tcp: ActiveOpens + PassiveOpens` of the namespace, read just before the dump.
    opens: u64,
    dumped_at: Duration,
    /// The workload's sockets there at the last reading.
    workload: Vec<TcpSocket>,
}

/// Connections ever opened in the namespace of `/proc/PID/ns/net` (`ns_path`): its
/// `Tcp: ActiveOpens + PassiveOpens`. `None` when unreadable.
fn tcp_opens<S: Source + ?Sized>(source: &S, ns_path: &str) -> Option<u64> {
    let snmp_path = format!("{}/net/snmp", ns_path.strip_suffix("/ns/net")?);
    let text = source.read(&snmp_path).ok()?;
    let counters = crate::parse::snmp::parse(&text).ok()?;
    let active = counters.get("Tcp", "ActiveOpens")?;
    let passive = counters.get("Tcp", "PassiveOpens")?;
    u64::try_from(active)
        .ok()?
        .checked_add(u64::try_from(passive).ok()?)
}

/// The `socket:[INODE]` links under a process's fd directory.
pub(crate) fn socket_inodes<S: Source + ?Sized>(source: &S, pid: u32) -> Vec<u64> {
    let Ok(fds) = source.list_dir(&format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.iter()
        .filter_map(|fd| source.read_link(&format!("/proc/{pid}/fd/{fd}")).ok())
        .filter_map(|l| {
            l.strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse::<u64>()
                .ok()
        })
        .collect()
}

impl FlowTracker {
    /// The workload's flows now: `None` when there is no workload (no process watched).
    /// `pids` are the watched processes and their children, sorted; `prev` the last reading,
    /// against which the busiest flows are chosen.
    pub(crate) fn read<S: Source + ?Sized>(
        &mut self,
        source: &S,
        pids: &[i32],
        now: Duration,
        prev: Option<&TcpFlows>,
    ) -> Option<Result<TcpFlows, SourceError>> {
        if pids.is_empty() {
            return None;
        }
        // The namespaces the workload is in, each entered through one of its processes.
        let mut spaces: BTreeMap<String, String> = BTreeMap::new();
        let mut gone = None;
        for pid in pids {
            let path = format!("/proc/{pid}/ns/net");
            match source.read_link(&path) {
                Ok(id) => {
                    spaces.entry(id).or_insert(path);
                }
                Err(e) => gone = Some(SourceError::io(&path, &e)),
            }
        }
        if spaces.is_empty() {
            return Some(Err(gone.unwrap_or_else(|| SourceError {
                path: "/proc/PID/ns/net".into(),
                reason: "no watched process".into(),
            })));
        }
        let mut sockets: Vec<TcpSocket> = Vec::new();
        let mut notes = Vec::new();
        let mut failed = None;
        let mut read_any = false;
        // Where each namespace's sockets sit in `sockets`.
        let mut at: Vec<(&String, std::ops::Range<usize>)> = Vec::new();
        self.spaces.retain(|id, _| spaces.contains_key(id));
        for (id, path) in &spaces {
            let left = MAX_TCP_SOCKETS.saturating_sub(sockets.len());
            let first = sockets.len();
            let opens = tcp_opens(source, path);
            let again = self.spaces.get(id).filter(|last| {
                opens == Some(last.opens)
                    && now.saturating_sub(last.dumped_at) < REDUMP_EVERY
                    && last.workload.len() <= LOOKUP_MAX.min(left)
            });
            if let Some(last) = again {
                if let Ok(found) = source.tcp_sockets_again(id, path, &last.workload) {
                    read_any = true;
                    sockets.extend(found);
                    at.push((id, first..sockets.len()));
                    continue;
                }
            }
            match source.tcp_sockets(id, path, left) {
                Ok(dump) => {
                    read_any = true;
                    if dump.truncated {
                        notes.push(format!(
                            "network namespace {id} has more established TCP sockets than the {MAX_TCP_SOCKETS} read per sample: the workload's flows past them are not counted"
                        ));
                        self.spaces.remove(id);
                    } else if let Some(opens) = opens {
                        self.spaces.insert(
                            id.clone(),
                            SpaceRead {
                                opens,
                                dumped_at: now,
                                workload: Vec::new(),
                            },
                        );
                    }
                    sockets.extend(dump.sockets);
                    at.push((id, first..sockets.len()));
                }
                Err(e) => {
                    notes.push(format!("network namespace {id} ({path}): {e}"));
                    failed = Some(SourceError::io(SOURCE, &e));
                    self.spaces.remove(id);
                }
            }
        }
        if !read_any {
            return Some(Err(failed.unwrap_or_else(|| SourceError {
                path: SOURCE.into(),
                reason: "nothing read".into(),
            })));
        }
        let unknown = sockets.iter().any(|s| {
            s.inode != 0 && !self.owner.contains_key(&s.inode) && !self.others.contains(&s.inode)
        });
        let due = self
            .scanned_at
            .is_none_or(|t| now.saturating_sub(t) >= FD_RESCAN)
            || self.scanned_pids != pids;
        if unknown || due {
            self.scan(source, pids, &sockets, now);
        }
        // The workload's sockets of each namespace, to look up next time.
        for (id, range) in at {
            if let Some(space) = self.spaces.get_mut(id) {
                space.workload = sockets[range]
                    .iter()
                    .filter(|s| s.inode != 0 && self.owner.contains_key(&s.inode))
                    .cloned()
                    .collect();
            }
        }
        let mut flows: Vec<Flow> = sockets
            .into_iter()
            .filter(|s| s.inode != 0)
            .filter_map(|s| {
                Some(Flow {
                    pid: *self.owner.get(&s.inode)?,
                    inode: s.inode,
                    cookie: s.cookie,
                    local: s.local,
                    remote: s.remote,
                    info: s.info,
                    mem: s.mem,
                })
            })
            .collect();
        flows.sort_by_key(|f| f.inode);
        // A dump can show a socket twice when connections come and go during it.
        flows.dedup_by_key(|f| f.inode);
        let busiest = prev
            .map(|p| busiest(p, &flows))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|inode| {
                let f = flows.binary_search_by_key(&inode, |f| f.inode).ok()?;
                Some((inode, flows[f].label()))
            })
            .collect();
        Some(Ok(TcpFlows {
            flows,
            busiest,
            notes,
        }))
    }

    /// Reads the fd links of every workload process: who holds which socket.
    fn scan<S: Source + ?Sized>(
        &mut self,
        source: &S,
        pids: &[i32],
        sockets: &[TcpSocket],
        now: Duration,
    ) {
        self.owner.clear();
        for &pid in pids {
            let Ok(p) = u32::try_from(pid) else { continue };
            for inode in socket_inodes(source, p) {
                self.owner.entry(inode).or_insert(pid);
            }
        }
        self.others = sockets
            .iter()
            .map(|s| s.inode)
            .filter(|i| *i != 0 && !self.owner.contains_key(i))
            .collect();
        self.scanned_at = Some(now);
        self.scanned_pids = pids.to_vec();
    }
}
