//! Queueing-discipline statistics, through rtnetlink (`RTM_GETQDISC` dumps), per interface and
//! per network namespace.
//!
//! A shaper (tbf, htb, fq's `maxrate`, an ingress policer) holds traffic at its configured
//! rate and says so only in its own counters: `overlimits` rises while the bytes it passes stay
//! flat. No /proc file shows those counters, so without this reader a shaped run looks like a
//! run that simply stopped growing. The reply parsing ([`parse_dump`]) is a pure function of
//! the bytes the kernel sent, tested on constructed replies; [`NetlinkQdiscs`] owns the
//! sockets: one in the namespace the process runs in, and one in each named namespace under
//! `/run/netns` (opened from a short-lived thread that enters the namespace, since `setns`
//! moves only the calling thread; the socket stays bound to the namespace it was made in).

use std::collections::BTreeMap;
use std::fmt;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_route::link::{LinkAttribute, LinkMessage};
use netlink_packet_route::tc::{TcAttribute, TcHandle, TcMessage, TcOption, TcStats2};
use netlink_packet_route::RouteNetlinkMessage;

/// One qdisc's counters at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QdiscStats {
    /// The named network namespace (`/run/netns/NAME`); `None` for the process's own.
    pub netns: Option<String>,
    pub ifindex: u32,
    /// The interface name, when the link dump named it.
    pub iface: Option<String>,
    /// `tbf`, `htb`, `fq`, `fq_codel`, `noqueue`, `ingress`…
    pub kind: String,
    /// `major:minor` in hex, as tc prints it (`8001:`, `1:`).
    pub handle: String,
    /// `root`, `ingress`, or a `major:minor` handle.
    pub parent: String,
    /// Bytes and packets the qdisc passed (u64 bytes; packets are 32-bit in the kernel's reply).
    pub bytes: u64,
    pub packets: u64,
    pub drops: u64,
    /// Times the qdisc held a packet back because it was over its rate (shapers) or its limits.
    pub overlimits: u64,
    pub requeues: u64,
    /// Bytes and packets waiting in the qdisc now (gauges).
    pub backlog_bytes: u64,
    pub qlen: u64,
    /// The configured rate, bytes/s, where the options say it (tbf rate, fq maxrate).
    pub rate_bytes_per_s: Option<u64>,
}

impl QdiscStats {
    /// The interface's name, or `ifN` when the link dump did not name it.
    pub fn iface_name(&self) -> String {
        self.iface
            .clone()
            .unwrap_or_else(|| format!("if{}", self.ifindex))
    }

    /// True for the qdiscs that only pass packets through (no queue, no rate).
    pub fn is_passthrough(&self) -> bool {
        self.kind == "noqueue"
    }
}

/// A reply that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpError {
    /// Byte offset in the reply where reading failed.
    pub offset: usize,
    pub what: String,
}

impl fmt::Display for DumpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rtnetlink qdisc dump, byte {}: {}",
            self.offset, self.what
        )
    }
}

impl std::error::Error for DumpError {}

/// What one reply buffer held.
#[derive(Debug, Default)]
pub struct Dump {
    pub qdiscs: Vec<QdiscStats>,
    /// Interface names by index, from link messages in the same reply.
    pub links: BTreeMap<u32, String>,
    /// The kernel ended the dump (`NLMSG_DONE`).
    pub done: bool,
}

/// Formats a tc handle as tc does: `root`, `ingress`, `none`, or `major:minor` in hex (minor
/// left out when 0).
pub fn handle_name(h: TcHandle) -> String {
    let raw = (u32::from(h.major) << 16) | u32::from(h.minor);
    match raw {
        0xFFFF_FFFF => "root".into(),
        0xFFFF_FFF1 => "ingress".into(),
        0 => "none".into(),
        _ if h.minor == 0 => format!("{:x}:", h.major),
        _ => format!("{:x}:{:x}", h.major, h.minor),
    }
}

/// Reads every netlink message in `buf` (one `recv` of a dump reply): qdisc messages become
/// [`QdiscStats`] (namespace left `None`, interface names filled in from `links` and from link
/// messages in the same buffer), link messages add names, `NLMSG_DONE` ends the dump, and a
/// netlink error message is an error.
pub fn parse_dump(buf: &[u8], links: &BTreeMap<u32, String>) -> Result<Dump, DumpError> {
    let mut out = Dump::default();
    let mut offset = 0;
    while offset < buf.len() {
        let rest = &buf[offset..];
        if rest.len() < 16 {
            return Err(DumpError {
                offset,
                what: format!(
                    "{} trailing bytes, expected a 16-byte message header",
                    rest.len()
                ),
            });
        }
        let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        if len < 16 || len > rest.len() {
            return Err(DumpError {
                offset,
                what: format!(
                    "message length {len} with {} bytes left, expected 16 to {}",
                    rest.len(),
                    rest.len()
                ),
            });
        }
        let msg =
            NetlinkMessage::<RouteNetlinkMessage>::deserialize(&rest[..len]).map_err(|e| {
                DumpError {
                    offset,
                    what: format!("not a route netlink message: {e}"),
                }
            })?;
        match msg.payload {
            NetlinkPayload::Done(_) => {
                out.done = true;
                break;
            }
            NetlinkPayload::Error(e) => {
                return Err(DumpError {
                    offset,
                    what: format!("the kernel answered with an error: {e:?}"),
                });
            }
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewQueueDiscipline(tc)) => {
                out.qdiscs.push(qdisc(tc));
            }
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(link)) => {
                if let Some(name) = link_name(&link) {
                    out.links.insert(link.header.index, name);
                }
            }
            _ => {}
        }
        // Messages are 4-byte aligned.
        offset += (len + 3) & !3;
    }
    for q in &mut out.qdiscs {
        q.iface = out
            .links
            .get(&q.ifindex)
            .or_else(|| links.get(&q.ifindex))
            .cloned();
    }
    Ok(out)
}

fn link_name(link: &LinkMessage) -> Option<String> {
    link.attributes.iter().find_map(|a| match a {
        LinkAttribute::IfName(n) => Some(n.clone()),
        _ => None,
    })
}

fn qdisc(tc: TcMessage) -> QdiscStats {
    let mut q = QdiscStats {
        netns: None,
        ifindex: u32::try_from(tc.header.index).unwrap_or(0),
        iface: None,
        kind: String::new(),
        handle: handle_name(tc.header.handle),
        parent: handle_name(tc.header.parent),
        bytes: 0,
        packets: 0,
        drops: 0,
        overlimits: 0,
        requeues: 0,
        backlog_bytes: 0,
        qlen: 0,
        rate_bytes_per_s: None,
    };
    let mut stats2 = false;
    let mut options = Vec::new();
    for a in tc.attributes {
        match a {
            TcAttribute::Kind(k) => q.kind = k,
            // TCA_STATS2 carries 64-bit bytes and the queue figures; the older TCA_STATS
            // only counts when STATS2 is absent (kernels before 2.6.x).
            TcAttribute::Stats2(list) => {
                stats2 = true;
                for s in list {
                    match s {
                        TcStats2::Basic(b) => {
                            q.bytes = b.bytes;
                            q.packets = u64::from(b.packets);
                        }
                        TcStats2::Queue(s) => {
                            q.qlen = u64::from(s.qlen);
                            q.backlog_bytes = u64::from(s.backlog);
                            q.drops = u64::from(s.drops);
                            q.requeues = u64::from(s.requeues);
                            q.overlimits = u64::from(s.overlimits);
                        }
                        _ => {}
                    }
                }
            }
            TcAttribute::Stats(s) if !stats2 => {
                q.bytes = s.bytes;
                q.packets = u64::from(s.packets);
                q.drops = u64::from(s.drops);
                q.overlimits = u64::from(s.overlimits);
                q.qlen = u64::from(s.qlen);
                q.backlog_bytes = u64::from(s.backlog);
            }
            TcAttribute::Options(opts) => options = opts,
            _ => {}
        }
    }
    q.rate_bytes_per_s = configured_rate(&q.kind, &options);
    q
}

/// The raw bytes of an option the crate does not model (tbf's and fq's are not).
fn option_bytes(o: &TcOption) -> Vec<u8> {
    use netlink_packet_core::Emitable;
    let mut v = vec![0; o.buffer_len()];
    o.emit(&mut v);
    v
}

/// Walks netlink attributes (4-byte header: length, type; 4-byte aligned), yielding
/// (type, value). Stops at the first malformed one.
fn attributes(mut buf: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if buf.len() < 4 {
            return None;
        }
        let len = usize::from(u16::from_ne_bytes([buf[0], buf[1]]));
        let kind = u16::from_ne_bytes([buf[2], buf[3]]) & 0x3FFF;
        if len < 4 || len > buf.len() {
            return None;
        }
        let value = &buf[4..len];
        buf = &buf[((len + 3) & !3).min(buf.len())..];
        Some((kind, value))
    })
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The rate a shaper is configured to, bytes/s: tbf's `rate` (TCA_TBF_PARMS, or TCA_TBF_RATE64
/// above 4 GB/s) and fq's `maxrate` (TCA_FQ_FLOW_MAX_RATE; ~0 means unlimited). Others: None
/// (htb keeps its rates on classes, not on the qdisc).
fn configured_rate(kind: &str, options: &[TcOption]) -> Option<u64> {
    const TCA_TBF_PARMS: u16 = 1;
    const TCA_TBF_RATE64: u16 = 4;
    const TCA_FQ_FLOW_MAX_RATE: u16 = 7;
    let raw: Vec<u8> = options.iter().flat_map(option_bytes).collect();
    // The crate hands an unmodelled TCA_OPTIONS over whole, header included.
    let nested: Vec<(u16, &[u8])> = attributes(&raw).flat_map(|(_, v)| attributes(v)).collect();
    match kind {
        "tbf" => {
            let rate64 = nested
                .iter()
                .find(|(k, _)| *k == TCA_TBF_RATE64)
                .and_then(|(_, v)| u64_at(v, 0));
            // struct tc_tbf_qopt starts with struct tc_ratespec rate, whose u32 rate is at 8.
            let parms = nested
                .iter()
                .find(|(k, _)| *k == TCA_TBF_PARMS)
                .and_then(|(_, v)| u32_at(v, 8))
                .map(u64::from);
            rate64.or(parms).filter(|r| *r > 0)
        }
        "fq" => nested
            .iter()
            .find(|(k, _)| *k == TCA_FQ_FLOW_MAX_RATE)
            .and_then(|(_, v)| u32_at(v, 0))
            .filter(|r| *r != u32::MAX && *r > 0)
            .map(u64::from),
        _ => None,
    }
}

/// The request for a dump of every qdisc (or link) in one namespace.
fn dump_request(what: RouteNetlinkMessage, seq: u32) -> Vec<u8> {
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_DUMP;
    header.sequence_number = seq;
    let mut msg = NetlinkMessage::new(header, NetlinkPayload::from(what));
    msg.finalize();
    let mut buf = vec![0; msg.buffer_len()];
    msg.serialize(&mut buf);
    buf
}

#[cfg(target_os = "linux")]
pub use live::NetlinkQdiscs;

#[cfg(target_os = "linux")]
mod live {
    use super::*;
    use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
    use std::io;
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;

    /// Where `ip netns add` pins named namespaces.
    const NETNS_DIR: &str = "/run/netns";

    /// How often the list of named namespaces is looked at again.
    const NETNS_RESCAN: std::time::Duration = std::time::Duration::from_secs(2);

    struct NsSocket {
        name: Option<String>,
        socket: Socket,
        links: BTreeMap<u32, String>,
    }

    /// rtnetlink sockets in this process's namespace and in each named namespace.
    pub struct NetlinkQdiscs {
        sockets: Vec<NsSocket>,
        /// Named namespaces that could not be entered, with the reason (reported once each).
        pub refused: BTreeMap<String, String>,
        scanned_at: Option<std::time::Instant>,
        seq: u32,
    }

    impl fmt::Debug for NetlinkQdiscs {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let names: Vec<_> = self.sockets.iter().map(|s| s.name.clone()).collect();
            f.debug_struct("NetlinkQdiscs")
                .field("namespaces", &names)
                .finish()
        }
    }

    fn open_socket() -> io::Result<Socket> {
        let mut s = Socket::new(NETLINK_ROUTE)?;
        s.bind_auto()?;
        s.connect(&SocketAddr::new(0, 0))?;
        Ok(s)
    }

    /// A route socket made inside the namespace pinned at `path`, from a thread that enters
    /// it and ends (the calling thread's namespace never changes).
    fn open_socket_in(path: &Path) -> io::Result<Socket> {
        let path = path.to_path_buf();
        std::thread::Builder::new()
            .name("netceil-netns".into())
            .spawn(move || -> io::Result<Socket> {
                let ns = std::fs::File::open(&path)?;
                nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET)
                    .map_err(io::Error::from)?;
                open_socket()
            })?
            .join()
            .map_err(|_| io::Error::other("the namespace thread panicked"))?
    }

    fn ns_id(path: &Path) -> Option<(u64, u64)> {
        let m = std::fs::metadata(path).ok()?;
        Some((m.dev(), m.ino()))
    }

    impl NetlinkQdiscs {
        /// A socket in this process's namespace; named namespaces are found on first use.
        pub fn new() -> io::Result<Self> {
            Ok(NetlinkQdiscs {
                sockets: vec![NsSocket {
                    name: None,
                    socket: open_socket()?,
                    links: BTreeMap::new(),
                }],
                refused: BTreeMap::new(),
                scanned_at: None,
                seq: 0,
            })
        }

        /// Opens sockets in named namespaces that appeared, drops those that went away.
        fn rescan(&mut self) {
            let due = self.scanned_at.is_none_or(|t| t.elapsed() >= NETNS_RESCAN);
            if !due {
                return;
            }
            self.scanned_at = Some(std::time::Instant::now());
            let own = ns_id(Path::new("/proc/self/ns/net"));
            let mut names: Vec<String> = std::fs::read_dir(NETNS_DIR)
                .map(|d| {
                    d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                        .collect()
                })
                .unwrap_or_default();
            names.sort();
            self.sockets
                .retain(|s| s.name.as_ref().is_none_or(|n| names.contains(n)));
            for name in names {
                let known = self.sockets.iter().any(|s| s.name.as_ref() == Some(&name));
                if known || self.refused.contains_key(&name) {
                    continue;
                }
                let path = Path::new(NETNS_DIR).join(&name);
                // The namespace we run in is already read, unnamed.
                if own.is_some() && ns_id(&path) == own {
                    continue;
                }
                match open_socket_in(&path) {
                    Ok(socket) => self.sockets.push(NsSocket {
                        name: Some(name),
                        socket,
                        links: BTreeMap::new(),
                    }),
                    Err(e) => {
                        self.refused.insert(name, e.to_string());
                    }
                }
            }
        }

        /// Every qdisc in every namespace reachable. A namespace whose dump fails is skipped
        /// (it may have been deleted mid-way); the process's own failing is an error.
        pub fn read(&mut self) -> io::Result<Vec<QdiscStats>> {
            self.rescan();
            let mut all = Vec::new();
            let mut failed = Vec::new();
            for (i, ns) in self.sockets.iter_mut().enumerate() {
                self.seq = self.seq.wrapping_add(1);
                match dump(ns, self.seq) {
                    Ok(mut q) => {
                        for s in &mut q {
                            s.netns = ns.name.clone();
                        }
                        all.extend(q);
                    }
                    Err(e) if ns.name.is_none() => return Err(e),
                    Err(_) => failed.push(i),
                }
            }
            for i in failed.into_iter().rev() {
                self.sockets.remove(i);
            }
            Ok(all)
        }
    }

    /// One namespace's qdiscs; re-reads the link names when a qdisc names an unknown index.
    fn dump(ns: &mut NsSocket, seq: u32) -> io::Result<Vec<QdiscStats>> {
        let mut qdiscs = exchange(
            &ns.socket,
            &dump_request(
                RouteNetlinkMessage::GetQueueDiscipline(TcMessage::default()),
                seq,
            ),
            &ns.links,
        )?
        .qdiscs;
        if qdiscs.iter().any(|q| q.iface.is_none()) {
            let links = exchange(
                &ns.socket,
                &dump_request(RouteNetlinkMessage::GetLink(LinkMessage::default()), seq),
                &ns.links,
            )?
            .links;
            ns.links = links;
            for q in &mut qdiscs {
                q.iface = ns.links.get(&q.ifindex).cloned();
            }
        }
        Ok(qdiscs)
    }

    /// Sends one dump request and reads replies until the kernel says it is done.
    fn exchange(
        socket: &Socket,
        request: &[u8],
        links: &BTreeMap<u32, String>,
    ) -> io::Result<Dump> {
        socket.send(request, 0)?;
        let mut all = Dump::default();
        // A dump of a few hundred qdiscs spans a handful of replies; bound it anyway.
        for _ in 0..4096 {
            let (buf, _) = socket.recv_from_full()?;
            let part = parse_dump(&buf, links)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            all.qdiscs.extend(part.qdiscs);
            all.links.extend(part.links);
            if part.done {
                all.done = true;
                return Ok(all);
            }
        }
        Err(io::Error::other("rtnetlink dump did not end"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::{DoneMessage, ErrorMessage};
    use netlink_packet_route::tc::{TcHeader, TcStats2, TcStatsBasic, TcStatsQueue};

    fn message(payload: NetlinkPayload<RouteNetlinkMessage>) -> Vec<u8> {
        let mut msg = NetlinkMessage::new(NetlinkHeader::default(), payload);
        msg.finalize();
        let mut buf = vec![0; msg.buffer_len()];
        msg.serialize(&mut buf);
        buf
    }

    fn tc(kind: &str, ifindex: i32, handle: u16, attrs: Vec<TcAttribute>) -> Vec<u8> {
        let mut m = TcMessage::default();
        m.header = TcHeader {
            index: ifindex,
            handle: TcHandle {
                major: handle,
                minor: 0,
            },
            parent: TcHandle::ROOT,
            ..TcHeader::default()
        };
        m.attributes.push(TcAttribute::Kind(kind.into()));
        m.attributes.extend(attrs);
        message(NetlinkPayload::InnerMessage(
            RouteNetlinkMessage::NewQueueDiscipline(m),
        ))
    }

    fn stats2(bytes: u64, packets: u32, drops: u32, overlimits: u32) -> TcAttribute {
        let mut basic = TcStatsBasic::default();
        basic.bytes = bytes;
        basic.packets = packets;
        let mut queue = TcStatsQueue::default();
        queue.qlen = 3;
        queue.backlog = 4500;
        queue.drops = drops;
        queue.requeues = 1;
        queue.overlimits = overlimits;
        TcAttribute::Stats2(vec![TcStats2::Basic(basic), TcStats2::Queue(queue)])
    }

    /// TCA_OPTIONS for tbf: TCA_TBF_PARMS with `rate` bytes/s in the tc_ratespec.
    fn tbf_options(rate: u32) -> TcAttribute {
        let mut parms = vec![0u8; 36];
        parms[8..12].copy_from_slice(&rate.to_ne_bytes());
        // Emitted as TCA_OPTIONS { TCA_TBF_PARMS { parms } }, as the kernel sends it.
        TcAttribute::Options(vec![TcOption::Other(netlink_packet_core::DefaultNla::new(
            1, parms,
        ))])
    }

    fn done() -> Vec<u8> {
        message(NetlinkPayload::Done(DoneMessage::default()))
    }

    #[test]
    fn a_tbf_dump_gives_counters_rate_and_names() {
        let mut buf = tc(
            "tbf",
            7,
            0x8001,
            vec![stats2(9_000_000, 6000, 12, 340), tbf_options(6_250_000)],
        );
        buf.extend(tc("noqueue", 1, 0, vec![]));
        buf.extend(done());
        let links = BTreeMap::from([(7, "veth-a".to_string())]);
        let d = parse_dump(&buf, &links).unwrap();
        assert!(d.done);
        assert_eq!(d.qdiscs.len(), 2);
        let q = &d.qdiscs[0];
        assert_eq!(q.kind, "tbf");
        assert_eq!(q.iface.as_deref(), Some("veth-a"));
        assert_eq!(q.handle, "8001:");
        assert_eq!(q.parent, "root");
        assert_eq!(
            (q.bytes, q.packets, q.drops, q.overlimits),
            (9_000_000, 6000, 12, 340)
        );
        assert_eq!((q.qlen, q.backlog_bytes, q.requeues), (3, 4500, 1));
        assert_eq!(q.rate_bytes_per_s, Some(6_250_000));
        assert!(d.qdiscs[1].is_passthrough());
        assert_eq!(d.qdiscs[1].iface_name(), "if1");
    }

    #[test]
    fn a_dump_split_over_replies_is_not_done_until_the_last() {
        let buf = tc("fq_codel", 2, 0, vec![stats2(1, 1, 0, 0)]);
        let d = parse_dump(&buf, &BTreeMap::new()).unwrap();
        assert!(!d.done);
        assert_eq!(d.qdiscs[0].rate_bytes_per_s, None);
    }

    #[test]
    fn truncated_and_garbled_replies_are_errors_not_panics() {
        let mut buf = tc(
            "tbf",
            7,
            0x8001,
            vec![stats2(1, 1, 0, 0), tbf_options(1000)],
        );
        buf.extend(done());
        for cut in 1..buf.len() {
            // Any prefix either parses (ending early) or is a clear error.
            if let Err(e) = parse_dump(&buf[..cut], &BTreeMap::new()) {
                assert!(
                    e.to_string().starts_with("rtnetlink qdisc dump, byte "),
                    "{e}"
                );
            }
        }
        let mut bad = buf.clone();
        bad[0..4].copy_from_slice(&4000u32.to_ne_bytes());
        let e = parse_dump(&bad, &BTreeMap::new()).unwrap_err();
        assert!(e.what.contains("message length 4000"), "{e}");
        // Random bytes never panic.
        let mut x: u32 = 12345;
        for _ in 0..2000 {
            let noise: Vec<u8> = (0..64)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (x >> 16) as u8
                })
                .collect();
            let _ = parse_dump(&noise, &BTreeMap::new());
        }
    }

    #[test]
    fn a_kernel_error_is_reported() {
        let mut err = ErrorMessage::default();
        err.code = std::num::NonZeroI32::new(-1);
        let buf = message(NetlinkPayload::Error(err));
        let e = parse_dump(&buf, &BTreeMap::new()).unwrap_err();
        assert!(e.what.contains("error"), "{e}");
    }

    #[test]
    fn handles_print_as_tc_prints_them() {
        assert_eq!(handle_name(TcHandle::ROOT), "root");
        assert_eq!(handle_name(TcHandle { major: 1, minor: 0 }), "1:");
        assert_eq!(
            handle_name(TcHandle {
                major: 0x10,
                minor: 0xa
            }),
            "10:a"
        );
        assert_eq!(
            handle_name(TcHandle {
                major: 0xffff,
                minor: 0xfff1
            }),
            "ingress"
        );
    }
}
