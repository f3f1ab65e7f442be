//! TCP sockets and the kernel's own account of each (`struct tcp_info`), through sock_diag
//! (`NETLINK_SOCK_DIAG`, `inet_diag` `INET_DIAG_REQ_V2` dumps with the `INET_DIAG_INFO`
//! extension): what `ss -ti` shows.
//!
//! The request ([`dump_request`]) and the reply ([`parse_reply`], [`TcpInfo::parse`]) are pure
//! functions of bytes, tested on constructed replies. Layouts follow the kernel's
//! `include/uapi/linux/inet_diag.h` and `include/uapi/linux/tcp.h`; everything is native
//! endian except the addresses and ports of `struct inet_diag_sockid`, which are in network
//! order. `struct tcp_info` has grown with kernel versions and the kernel sends its own size:
//! each field is read only when the attribute reaches past its end, else it is `None`.
//!
//! [`NetlinkTcp`] owns the sockets: one per network namespace, the one the process runs in
//! opened directly and any other from a short-lived thread that enters it (`setns` moves only
//! the calling thread; a socket stays bound to the namespace it was made in), as the qdisc
//! reader does.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use netlink_packet_core::{NLMSG_DONE, NLMSG_ERROR, NLM_F_DUMP, NLM_F_REQUEST};

/// Where TCP socket statistics come from, for error messages.
pub const SOURCE: &str = "sock_diag TCP dump (INET_DIAG_REQ_V2 with INET_DIAG_INFO)";

/// `SOCK_DIAG_BY_FAMILY`: the message type of inet_diag requests and replies.
pub const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `AF_INET` and `AF_INET6` as Linux numbers them.
pub const AF_INET: u8 = 2;
pub const AF_INET6: u8 = 10;
const IPPROTO_TCP: u8 = 6;
/// `INET_DIAG_INFO`: the attribute that carries `struct tcp_info`.
pub const INET_DIAG_INFO: u16 = 2;
/// `INET_DIAG_SKMEMINFO`: the attribute that carries the socket's memory (`SK_MEMINFO_*`).
pub const INET_DIAG_SKMEMINFO: u16 = 7;
/// `TCP_ESTABLISHED` in the kernel's numbering of TCP states (include/net/tcp_states.h).
pub const TCP_ESTABLISHED: u8 = 1;

/// `struct nlmsghdr`.
const NLMSG_HEADER: usize = 16;
/// `struct inet_diag_req_v2`.
const REQ_V2_LEN: usize = 56;
/// `struct inet_diag_msg`.
const DIAG_MSG_LEN: usize = 72;

/// The `tcp_info` fields netceil records, each `None` when the kernel's struct ends before
/// it. Times are µs, as the kernel reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// Smoothed round-trip time, µs (`tcpi_rtt`; ss `rtt`).
    pub rtt_us: Option<u32>,
    /// Congestion window, segments (`tcpi_snd_cwnd`; ss `cwnd`).
    pub snd_cwnd: Option<u32>,
    /// Receive-buffer autotuning's estimate of what the peer sends per RTT, bytes
    /// (`tcpi_rcv_space`; ss `rcv_space`).
    pub rcv_space: Option<u32>,
    /// Retransmitted segments over the connection's life (`tcpi_total_retrans`).
    pub total_retrans: Option<u32>,
    /// Sequence space the peer acknowledged, bytes (`tcpi_bytes_acked`, Linux ≥ 4.1).
    pub bytes_acked: Option<u64>,
    /// Bytes received from the peer (`tcpi_bytes_received`, Linux ≥ 4.1).
    pub bytes_received: Option<u64>,
    /// Lowest RTT seen, µs (`tcpi_min_rtt`, Linux ≥ 4.6; ss `minrtt`).
    pub min_rtt_us: Option<u32>,
    /// The latest delivery-rate sample, bytes/s (`tcpi_delivery_rate`, Linux ≥ 4.9).
    pub delivery_rate: Option<u64>,
    /// Time with data waiting to be sent, µs, limited or not (`tcpi_busy_time`, Linux ≥ 4.10).
    pub busy_time_us: Option<u64>,
    /// The part of the busy time held back by the peer's receive window, µs
    /// (`tcpi_rwnd_limited`, Linux ≥ 4.10).
    pub rwnd_limited_us: Option<u64>,
    /// The part of the busy time held back by our send buffer, µs (`tcpi_sndbuf_limited`,
    /// Linux ≥ 4.10).
    pub sndbuf_limited_us: Option<u64>,
    /// The peer's advertised receive window after scaling, bytes (`tcpi_snd_wnd`, Linux ≥ 5.4).
    pub snd_wnd: Option<u32>,
    /// The sender's maximum segment size, bytes (`tcpi_snd_mss`).
    pub snd_mss: Option<u32>,
    /// Segments sent and not yet acknowledged (`tcpi_unacked`).
    pub unacked: Option<u32>,
}

/// A socket's memory, from `INET_DIAG_SKMEMINFO` (the `SK_MEMINFO_*` array; ss `skmem`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SkMem {
    /// Bytes held in the receive queue (`rmem_alloc`; ss `r`).
    pub rmem_alloc: u32,
    /// The receive buffer (`rcvbuf`; ss `rb`).
    pub rcvbuf: u32,
    /// The send buffer (`sndbuf`; ss `tb`).
    pub sndbuf: u32,
    /// Bytes queued for sending, in flight or not (`wmem_queued`; ss `w`).
    pub wmem_queued: u32,
}

impl SkMem {
    /// Reads the array from the attribute's bytes; `None` when it is too short to hold the
    /// fields above.
    pub fn parse(raw: &[u8]) -> Option<SkMem> {
        Some(SkMem {
            rmem_alloc: u32_at(raw, 0)?,
            rcvbuf: u32_at(raw, 4)?,
            sndbuf: u32_at(raw, 12)?,
            wmem_queued: u32_at(raw, 20)?,
        })
    }
}

/// Byte offsets in `struct tcp_info` (include/uapi/linux/tcp.h).
pub mod offset {
    pub const SND_MSS: usize = 16;
    pub const UNACKED: usize = 24;
    pub const RTT: usize = 68;
    pub const SND_CWND: usize = 80;
    pub const RCV_SPACE: usize = 96;
    pub const TOTAL_RETRANS: usize = 100;
    pub const BYTES_ACKED: usize = 120;
    pub const BYTES_RECEIVED: usize = 128;
    pub const MIN_RTT: usize = 148;
    pub const DELIVERY_RATE: usize = 160;
    pub const BUSY_TIME: usize = 168;
    pub const RWND_LIMITED: usize = 176;
    pub const SNDBUF_LIMITED: usize = 184;
    pub const SND_WND: usize = 228;
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

impl TcpInfo {
    /// Reads the fields from the attribute's bytes, as many as it holds.
    pub fn parse(raw: &[u8]) -> TcpInfo {
        TcpInfo {
            rtt_us: u32_at(raw, offset::RTT),
            snd_cwnd: u32_at(raw, offset::SND_CWND),
            rcv_space: u32_at(raw, offset::RCV_SPACE),
            total_retrans: u32_at(raw, offset::TOTAL_RETRANS),
            bytes_acked: u64_at(raw, offset::BYTES_ACKED),
            bytes_received: u64_at(raw, offset::BYTES_RECEIVED),
            min_rtt_us: u32_at(raw, offset::MIN_RTT),
            delivery_rate: u64_at(raw, offset::DELIVERY_RATE),
            busy_time_us: u64_at(raw, offset::BUSY_TIME),
            rwnd_limited_us: u64_at(raw, offset::RWND_LIMITED),
            sndbuf_limited_us: u64_at(raw, offset::SNDBUF_LIMITED),
            snd_wnd: u32_at(raw, offset::SND_WND),
            snd_mss: u32_at(raw, offset::SND_MSS),
            unacked: u32_at(raw, offset::UNACKED),
        }
    }
}

/// One TCP socket of a dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpSocket {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    /// The kernel's TCP state (1 = established).
    pub state: u8,
    /// The socket's inode, which the `socket:[INODE]` links under /proc/PID/fd name; 0 for a
    /// connection no process has accepted yet.
    pub inode: u64,
    /// The kernel's cookie for the socket, unique while the machine runs: an inode number
    /// reused by a later socket does not pass for the same one.
    pub cookie: u64,
    /// `None` when the reply carried no `INET_DIAG_INFO`.
    pub info: Option<TcpInfo>,
    /// `None` when the reply carried no `INET_DIAG_SKMEMINFO`.
    pub mem: Option<SkMem>,
}

/// A reply that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiagError {
    /// Byte offset in the reply where reading failed.
    pub offset: usize,
    pub what: String,
    /// The kernel's error number (negative), when the reply was an error message.
    pub code: Option<i32>,
}

impl fmt::Display for DiagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sock_diag reply, byte {}: {}", self.offset, self.what)
    }
}

impl std::error::Error for DiagError {}

/// The request for a dump of the established TCP sockets of one address family (`AF_INET` or
/// `AF_INET6`: the kernel dumps one family per request) with their `tcp_info`.
pub fn dump_request(family: u8, seq: u32) -> Vec<u8> {
    let len = NLMSG_HEADER + REQ_V2_LEN;
    let mut b = Vec::with_capacity(len);
    // struct nlmsghdr
    b.extend_from_slice(&(len as u32).to_ne_bytes());
    b.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    b.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    b.extend_from_slice(&seq.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    // struct inet_diag_req_v2: family, protocol, extensions wanted (bit N-1 asks for
    // attribute N), pad, states wanted (bit per state), then an all-zero inet_diag_sockid
    // (no filter on addresses, ports, interface or cookie).
    b.push(family);
    b.push(IPPROTO_TCP);
    b.push((1 << (INET_DIAG_INFO - 1)) | (1 << (INET_DIAG_SKMEMINFO - 1)));
    b.push(0);
    b.extend_from_slice(&(1u32 << TCP_ESTABLISHED).to_ne_bytes());
    b.resize(len, 0);
    b
}

/// A cookie that asks the kernel to find a socket by its addresses alone
/// (`INET_DIAG_NOCOOKIE` in both words): for the far end of a connection, whose cookie is not
/// known.
pub const NO_COOKIE: u64 = u64::MAX;

/// The request for one socket by its addresses and cookie (no `NLM_F_DUMP`): the kernel finds
/// it in its hash table at once, where a dump walks the whole table (a few milliseconds on a
/// machine with much memory, whatever few sockets it holds).
pub fn lookup_request(known: &TcpSocket, seq: u32) -> Vec<u8> {
    let family = match known.local {
        SocketAddr::V4(_) => AF_INET,
        SocketAddr::V6(_) => AF_INET6,
    };
    let mut b = dump_request(family, seq);
    b[6..8].copy_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    // struct inet_diag_sockid after the 8 bytes of family, protocol, ext, pad and states.
    let id = NLMSG_HEADER + 8;
    b[id..id + 2].copy_from_slice(&known.local.port().to_be_bytes());
    b[id + 2..id + 4].copy_from_slice(&known.remote.port().to_be_bytes());
    let put_ip = |b: &mut Vec<u8>, at: usize, ip: IpAddr| match ip {
        IpAddr::V4(v4) => b[at..at + 4].copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => b[at..at + 16].copy_from_slice(&v6.octets()),
    };
    put_ip(&mut b, id + 4, known.local.ip());
    put_ip(&mut b, id + 20, known.remote.ip());
    // The cookie as the kernel gave it: low word, then high word, host order.
    b[id + 40..id + 44].copy_from_slice(&(known.cookie as u32).to_ne_bytes());
    b[id + 44..id + 48].copy_from_slice(&((known.cookie >> 32) as u32).to_ne_bytes());
    b
}

/// The answer to a [`lookup_request`]: the socket, or `None` when it has closed (the kernel
/// says `ENOENT`, or `ESTALE` when another socket now has its addresses) or left the
/// established state (a lookup, unlike a dump, also finds closing sockets).
pub fn parse_lookup_reply(buf: &[u8], seq: u32) -> Result<Option<TcpSocket>, DiagError> {
    const ENOENT: i32 = 2;
    const ESTALE: i32 = 116;
    let mut out = Vec::new();
    match parse_reply(buf, seq, &mut out) {
        Ok(_) => Ok(out.pop().filter(|s| s.state == TCP_ESTABLISHED)),
        Err(e) if e.code == Some(-ENOENT) || e.code == Some(-ESTALE) => Ok(None),
        Err(e) => Err(e),
    }
}

/// What one reply buffer held besides sockets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reply {
    /// The kernel ended the dump (`NLMSG_DONE`).
    pub done: bool,
    /// Socket messages in the buffer (all appended to the caller's list).
    pub sockets: usize,
}

/// Reads every netlink message in `buf` (one `recv` of a dump reply to request `seq`) and
/// appends its sockets to `out`. Messages of another sequence number (left from an earlier
/// request) are skipped; `NLMSG_DONE` ends the dump, and an error message, or a `DONE` that
/// carries an error, is an error.
pub fn parse_reply(buf: &[u8], seq: u32, out: &mut Vec<TcpSocket>) -> Result<Reply, DiagError> {
    let mut reply = Reply::default();
    let mut offset = 0;
    while offset < buf.len() {
        let rest = &buf[offset..];
        let err = |what: String| DiagError {
            offset,
            what,
            code: None,
        };
        if rest.len() < NLMSG_HEADER {
            return Err(err(format!(
                "{} trailing bytes, expected a {NLMSG_HEADER}-byte message header",
                rest.len()
            )));
        }
        let len = u32_at(rest, 0).unwrap_or(0) as usize;
        if len < NLMSG_HEADER || len > rest.len() {
            return Err(err(format!(
                "message length {len} with {} bytes left, expected {NLMSG_HEADER} to {}",
                rest.len(),
                rest.len()
            )));
        }
        let kind = u16_at(rest, 4).unwrap_or(0);
        let msg_seq = u32_at(rest, 8).unwrap_or(0);
        let payload = &rest[NLMSG_HEADER..len];
        if msg_seq == seq {
            match kind {
                NLMSG_DONE => {
                    // A dump that failed part-way says so in DONE's int.
                    if let Some(code) = u32_at(payload, 0).map(|c| c as i32) {
                        if code < 0 {
                            return Err(err(format!(
                                "the kernel ended the dump with an error: {}",
                                std::io::Error::from_raw_os_error(-code)
                            )));
                        }
                    }
                    reply.done = true;
                    return Ok(reply);
                }
                NLMSG_ERROR => {
                    let code = u32_at(payload, 0).map_or(0, |c| c as i32);
                    if code != 0 {
                        return Err(DiagError {
                            code: Some(code),
                            ..err(format!(
                                "the kernel answered with an error: {}",
                                std::io::Error::from_raw_os_error(-code)
                            ))
                        });
                    }
                }
                SOCK_DIAG_BY_FAMILY => {
                    out.push(socket(payload).map_err(err)?);
                    reply.sockets += 1;
                }
                // NLMSG_NOOP and anything newer: nothing for us.
                _ => {}
            }
        }
        // Messages are 4-byte aligned.
        offset += ((len + 3) & !3).min(rest.len());
    }
    Ok(reply)
}

/// An address of `struct inet_diag_sockid`: 16 bytes in network order, of which IPv4 uses
/// the first 4.
fn address(family: u8, raw: &[u8]) -> Result<IpAddr, String> {
    match family {
        AF_INET => {
            let b: [u8; 4] = raw[..4].try_into().map_err(|_| "short address")?;
            Ok(IpAddr::V4(Ipv4Addr::from(b)))
        }
        AF_INET6 => {
            let b: [u8; 16] = raw[..16].try_into().map_err(|_| "short address")?;
            Ok(IpAddr::V6(Ipv6Addr::from(b)))
        }
        f => Err(format!(
            "address family {f}, expected {AF_INET} (IPv4) or {AF_INET6} (IPv6)"
        )),
    }
}

/// One `struct inet_diag_msg` and its attributes.
fn socket(payload: &[u8]) -> Result<TcpSocket, String> {
    if payload.len() < DIAG_MSG_LEN {
        return Err(format!(
            "socket message of {} bytes, expected at least the {DIAG_MSG_LEN} of inet_diag_msg",
            payload.len()
        ));
    }
    let family = payload[0];
    let state = payload[1];
    // struct inet_diag_sockid at 4: sport, dport (network order), src[16], dst[16], if,
    // cookie[2].
    let sport = u16::from_be_bytes([payload[4], payload[5]]);
    let dport = u16::from_be_bytes([payload[6], payload[7]]);
    let src = address(family, &payload[8..24])?;
    let dst = address(family, &payload[24..40])?;
    let cookie_lo = u32_at(payload, 44).unwrap_or(0);
    let cookie_hi = u32_at(payload, 48).unwrap_or(0);
    let inode = u32_at(payload, 68).unwrap_or(0);
    let mut info = None;
    let mut mem = None;
    let mut attrs = &payload[DIAG_MSG_LEN..];
    while attrs.len() >= 4 {
        let len = usize::from(u16_at(attrs, 0).unwrap_or(0));
        let kind = u16_at(attrs, 2).unwrap_or(0) & 0x3FFF;
        if len < 4 || len > attrs.len() {
            return Err(format!(
                "attribute length {len} with {} bytes left, expected 4 to {}",
                attrs.len(),
                attrs.len()
            ));
        }
        if kind == INET_DIAG_INFO {
            info = Some(TcpInfo::parse(&attrs[4..len]));
        } else if kind == INET_DIAG_SKMEMINFO {
            mem = SkMem::parse(&attrs[4..len]);
        }
        attrs = &attrs[((len + 3) & !3).min(attrs.len())..];
    }
    Ok(TcpSocket {
        local: SocketAddr::new(src, sport),
        remote: SocketAddr::new(dst, dport),
        state,
        inode: u64::from(inode),
        cookie: (u64::from(cookie_hi) << 32) | u64::from(cookie_lo),
        info,
        mem,
    })
}

/// The sockets of one namespace, as far as they were read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpDump {
    pub sockets: Vec<TcpSocket>,
    /// The namespace had more established sockets than the reader was allowed to read: the
    /// rest of the dump was abandoned.
    pub truncated: bool,
}

#[cfg(target_os = "linux")]
pub use live::NetlinkTcp;

#[cfg(target_os = "linux")]
mod live {
    use super::*;
    use netlink_sys::{protocols::NETLINK_SOCK_DIAG, Socket, SocketAddr as NlAddr};
    use std::collections::HashMap;
    use std::io;
    use std::os::unix::fs::MetadataExt;
    use std::time::{Duration, Instant};

    /// A namespace's socket not asked for this long is closed (it keeps the namespace alive).
    const IDLE_CLOSE: Duration = Duration::from_secs(2);

    /// Room for one reply: the kernel fills a dump reply to at most 32 KiB.
    const RECV_BUF: usize = 64 * 1024;

    struct NsSocket {
        socket: Socket,
        used: Instant,
    }

    /// sock_diag sockets, one per network namespace asked for.
    pub struct NetlinkTcp {
        sockets: HashMap<String, NsSocket>,
        /// `net:[INODE]` of the namespace this process runs in (read on first use).
        own: Option<String>,
        seq: u32,
        buf: Vec<u8>,
    }

    impl fmt::Debug for NetlinkTcp {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let names: Vec<_> = self.sockets.keys().collect();
            f.debug_struct("NetlinkTcp")
                .field("namespaces", &names)
                .finish()
        }
    }

    fn open_socket() -> io::Result<Socket> {
        let mut s = Socket::new(NETLINK_SOCK_DIAG)?;
        s.bind_auto()?;
        s.connect(&NlAddr::new(0, 0))?;
        Ok(s)
    }

    /// The namespace inode in a `net:[INODE]` link text.
    fn ns_inode(id: &str) -> Option<u64> {
        id.strip_prefix("net:[")?.strip_suffix(']')?.parse().ok()
    }

    /// A sock_diag socket made inside the namespace `path` (`/proc/PID/ns/net`) names, from a
    /// thread that enters it and ends. The namespace is checked to be `id` once open, since
    /// the pid may have exited and been reused meanwhile.
    fn open_socket_in(id: &str, path: &str) -> io::Result<Socket> {
        let (id, path) = (id.to_string(), path.to_string());
        std::thread::Builder::new()
            .name("netceil-netns".into())
            .spawn(move || -> io::Result<Socket> {
                let ns = std::fs::File::open(&path)?;
                let ino = ns.metadata()?.ino();
                if ns_inode(&id) != Some(ino) {
                    return Err(io::Error::other(format!(
                        "{path} is now net:[{ino}], not {id} (the process exited)"
                    )));
                }
                nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET)
                    .map_err(io::Error::from)?;
                open_socket()
            })?
            .join()
            .map_err(|_| io::Error::other("the namespace thread panicked"))?
    }

    impl Default for NetlinkTcp {
        fn default() -> Self {
            Self::new()
        }
    }

    impl NetlinkTcp {
        /// No socket yet: each is opened on first use.
        pub fn new() -> Self {
            NetlinkTcp {
                sockets: HashMap::new(),
                own: None,
                seq: 0,
                buf: Vec::new(),
            }
        }

        /// The sock_diag socket of namespace `id`, opened (entered through `path` unless it is
        /// this process's own) on first use; sockets of namespaces not asked for in a while
        /// are closed.
        fn socket(&mut self, id: &str, path: &str) -> io::Result<()> {
            let now = Instant::now();
            if self.own.is_none() {
                self.own = std::fs::read_link("/proc/self/ns/net")
                    .ok()
                    .and_then(|p| p.into_os_string().into_string().ok());
            }
            let own = self.own.clone();
            self.sockets
                .retain(|k, s| Some(k) == own.as_ref() || now.duration_since(s.used) < IDLE_CLOSE);
            match self.sockets.get_mut(id) {
                Some(ns) => ns.used = now,
                None => {
                    let socket = if self.own.as_deref() == Some(id) {
                        open_socket()?
                    } else {
                        open_socket_in(id, path)?
                    };
                    self.sockets
                        .insert(id.to_string(), NsSocket { socket, used: now });
                }
            }
            if self.buf.len() < RECV_BUF {
                self.buf.resize(RECV_BUF, 0);
            }
            Ok(())
        }

        /// The established TCP sockets of the namespace `id` (`net:[INODE]`), entered through
        /// `path` unless it is this process's own; at most `max` of them.
        pub fn read(&mut self, id: &str, path: &str, max: usize) -> io::Result<TcpDump> {
            self.socket(id, path)?;
            let mut dump = TcpDump::default();
            let mut result = Ok(());
            for family in [AF_INET, AF_INET6] {
                self.seq = self.seq.wrapping_add(1);
                let Some(ns) = self.sockets.get(id) else {
                    break;
                };
                result = exchange(&ns.socket, family, self.seq, &mut self.buf, max, &mut dump);
                if result.is_err() || dump.truncated {
                    break;
                }
            }
            // A socket whose dump was cut short (or failed) may still hold the rest of the
            // reply: start afresh next time.
            if result.is_err() || dump.truncated {
                self.sockets.remove(id);
            }
            result.map(|()| dump)
        }

        /// The sockets `known` of the namespace `id` again, each looked up on its own (see
        /// [`lookup_request`]); those closed since are left out.
        pub fn lookup(
            &mut self,
            id: &str,
            path: &str,
            known: &[TcpSocket],
        ) -> io::Result<Vec<TcpSocket>> {
            self.socket(id, path)?;
            let mut out = Vec::with_capacity(known.len());
            for k in known {
                self.seq = self.seq.wrapping_add(1);
                let Some(ns) = self.sockets.get(id) else {
                    break;
                };
                let result = ns
                    .socket
                    .send(&lookup_request(k, self.seq), 0)
                    .and_then(|_| {
                        let mut space = &mut self.buf[..];
                        ns.socket.recv(&mut space, nix::libc::MSG_TRUNC)
                    })
                    .and_then(|n| {
                        let reply = self.buf.get(..n).ok_or_else(|| {
                            io::Error::new(
                                io::ErrorKind::InvalidData,
                                format!(
                                    "a sock_diag reply of {n} bytes, expected at most {RECV_BUF}"
                                ),
                            )
                        })?;
                        parse_lookup_reply(reply, self.seq)
                            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
                    });
                match result {
                    Ok(found) => out.extend(found),
                    Err(e) => {
                        // Whatever is left unread on it must not be taken for the next answer.
                        self.sockets.remove(id);
                        return Err(e);
                    }
                }
            }
            Ok(out)
        }
    }

    /// One dump: request, then replies until the kernel says it is done or `max` sockets are
    /// read in all.
    fn exchange(
        socket: &Socket,
        family: u8,
        seq: u32,
        buf: &mut [u8],
        max: usize,
        dump: &mut TcpDump,
    ) -> io::Result<()> {
        socket.send(&dump_request(family, seq), 0)?;
        loop {
            let mut space = &mut buf[..];
            let n = socket.recv(&mut space, nix::libc::MSG_TRUNC)?;
            if n > buf.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "a sock_diag reply of {n} bytes, expected at most {}",
                        buf.len()
                    ),
                ));
            }
            let reply = parse_reply(&buf[..n], seq, &mut dump.sockets)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            if dump.sockets.len() >= max {
                dump.truncated = !reply.done || dump.sockets.len() > max;
                dump.sockets.truncate(max);
                return Ok(());
            }
            if reply.done {
                return Ok(());
            }
            if n == 0 {
                return Err(io::Error::other("the sock_diag socket closed mid-dump"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `struct tcp_info` of `len` bytes with recognisable values in every field we read.
    pub(crate) fn tcp_info_bytes(len: usize) -> Vec<u8> {
        let mut raw = vec![0u8; 248];
        let mut put32 = |at: usize, v: u32| raw[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        put32(offset::RTT, 1500);
        put32(offset::SND_CWND, 10);
        put32(offset::RCV_SPACE, 14600);
        put32(offset::TOTAL_RETRANS, 3);
        put32(offset::MIN_RTT, 900);
        put32(offset::SND_WND, 65535);
        put32(offset::SND_MSS, 1448);
        put32(offset::UNACKED, 7);
        let mut put64 = |at: usize, v: u64| raw[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        put64(offset::BYTES_ACKED, 1_000_001);
        put64(offset::BYTES_RECEIVED, 77);
        put64(offset::DELIVERY_RATE, 125_000_000);
        put64(offset::BUSY_TIME, 40_000);
        put64(offset::RWND_LIMITED, 10_000);
        put64(offset::SNDBUF_LIMITED, 4_000);
        raw.truncate(len);
        raw
    }

    fn attr(kind: u16, value: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        a.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
        a.extend_from_slice(&kind.to_ne_bytes());
        a.extend_from_slice(value);
        while a.len() % 4 != 0 {
            a.push(0);
        }
        a
    }

    fn message(kind: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&((NLMSG_HEADER + payload.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&2u16.to_ne_bytes());
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(payload);
        while m.len() % 4 != 0 {
            m.push(0);
        }
        m
    }

    /// An inet_diag_msg for an IPv4 socket, with a tcp_info of `info_len` bytes (none if 0)
    /// and a congestion-control attribute before it, as the kernel sends them.
    fn diag_v4(
        local: ([u8; 4], u16),
        remote: ([u8; 4], u16),
        inode: u32,
        info_len: usize,
    ) -> Vec<u8> {
        let mut p = vec![0u8; DIAG_MSG_LEN];
        p[0] = AF_INET;
        p[1] = TCP_ESTABLISHED;
        p[4..6].copy_from_slice(&local.1.to_be_bytes());
        p[6..8].copy_from_slice(&remote.1.to_be_bytes());
        p[8..12].copy_from_slice(&local.0);
        p[24..28].copy_from_slice(&remote.0);
        p[44..48].copy_from_slice(&0xdead_beefu32.to_ne_bytes());
        p[48..52].copy_from_slice(&7u32.to_ne_bytes());
        p[68..72].copy_from_slice(&inode.to_ne_bytes());
        p.extend(attr(4, b"cubic\0"));
        if info_len > 0 {
            p.extend(attr(INET_DIAG_INFO, &tcp_info_bytes(info_len)));
        }
        // SK_MEMINFO_*: rmem_alloc, rcvbuf, wmem_alloc, sndbuf, fwd_alloc, wmem_queued,
        // optmem, backlog, drops.
        let mem: Vec<u8> = [300u32, 131_072, 0, 87_040, 0, 14_480, 0, 0, 0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        p.extend(attr(INET_DIAG_SKMEMINFO, &mem));
        p
    }

    fn done(seq: u32, code: i32) -> Vec<u8> {
        message(NLMSG_DONE, seq, &code.to_ne_bytes())
    }

    /// A lookup asks for one socket: no dump flag, its id as the dump gave it (the request's
    /// id mirrors the reply's), so that the answer to the request is that socket.
    #[test]
    fn a_lookup_request_carries_the_socket_s_addresses_and_cookie_and_no_dump_flag() {
        let mut out = Vec::new();
        let reply = message(
            SOCK_DIAG_BY_FAMILY,
            3,
            &diag_v4(([127, 0, 0, 1], 40000), ([10, 0, 0, 9], 5201), 11, 0),
        );
        parse_reply(&reply, 3, &mut out).unwrap();
        let known = &out[0];
        let r = lookup_request(known, 8);
        assert_eq!(r.len(), 72);
        assert_eq!(u16_at(&r, 6), Some(NLM_F_REQUEST));
        assert_eq!(u32_at(&r, 8), Some(8));
        assert_eq!(r[16], AF_INET);
        // The request's inet_diag_sockid (at 24) holds what the reply's (at 20) held.
        let payload = &reply[NLMSG_HEADER..];
        assert_eq!(&r[24..24 + 48], &payload[4..4 + 48]);
        let v6 = TcpSocket {
            local: "[::1]:5201".parse().unwrap(),
            remote: "[::ffff:10.0.0.9]:40000".parse().unwrap(),
            ..known.clone()
        };
        let r = lookup_request(&v6, 9);
        assert_eq!(r[16], AF_INET6);
        assert_eq!(&r[24..26], &5201u16.to_be_bytes());
        assert_eq!(&r[28..44], &"::1".parse::<Ipv6Addr>().unwrap().octets());
        assert_eq!(
            &r[44..60],
            &"::ffff:10.0.0.9".parse::<Ipv6Addr>().unwrap().octets()
        );
    }

    /// The answer: the socket; `None` for one closed (ENOENT), replaced (ESTALE) or closing;
    /// any other error is an error.
    #[test]
    fn a_lookup_answer_is_the_socket_or_none_when_it_has_gone() {
        let found = message(
            SOCK_DIAG_BY_FAMILY,
            5,
            &diag_v4(([127, 0, 0, 1], 40000), ([127, 0, 0, 1], 5201), 11, 0),
        );
        let s = parse_lookup_reply(&found, 5).unwrap().expect("found");
        assert_eq!((s.inode, s.local.port()), (11, 40000));
        let error = |code: i32| {
            let mut p = code.to_ne_bytes().to_vec();
            p.extend_from_slice(&[0u8; 16]);
            message(NLMSG_ERROR, 5, &p)
        };
        assert_eq!(parse_lookup_reply(&error(-2), 5).unwrap(), None);
        assert_eq!(parse_lookup_reply(&error(-116), 5).unwrap(), None);
        let e = parse_lookup_reply(&error(-1), 5).unwrap_err();
        assert_eq!(e.code, Some(-1));
        assert!(e.to_string().contains("not permitted"), "{e}");
        let mut closing = diag_v4(([127, 0, 0, 1], 40000), ([127, 0, 0, 1], 5201), 11, 0);
        closing[1] = 8; // TCP_CLOSE_WAIT
        assert_eq!(
            parse_lookup_reply(&message(SOCK_DIAG_BY_FAMILY, 5, &closing), 5).unwrap(),
            None
        );
        // A truncated answer is an error, not a socket gone.
        assert!(parse_lookup_reply(&found[..20], 5).is_err());
    }

    #[test]
    fn the_request_is_an_inet_diag_v2_dump_of_established_sockets_with_tcp_info() {
        let r = dump_request(AF_INET6, 9);
        assert_eq!(r.len(), 72);
        assert_eq!(u32_at(&r, 0), Some(72));
        assert_eq!(u16_at(&r, 4), Some(SOCK_DIAG_BY_FAMILY));
        assert_eq!(u16_at(&r, 6), Some(NLM_F_REQUEST | NLM_F_DUMP));
        assert_eq!(u32_at(&r, 8), Some(9));
        // Extensions: bit 1 asks for INET_DIAG_INFO (2), bit 6 for INET_DIAG_SKMEMINFO (7).
        assert_eq!(&r[16..20], &[AF_INET6, 6, 0b100_0010, 0]);
        assert_eq!(u32_at(&r, 20), Some(0b10), "TCP_ESTABLISHED only");
        assert!(r[24..].iter().all(|&b| b == 0), "no socket id filter");
    }

    #[test]
    fn a_dump_gives_endpoints_inode_cookie_and_tcp_info() {
        let mut buf = message(
            SOCK_DIAG_BY_FAMILY,
            5,
            &diag_v4(([127, 0, 0, 1], 5201), ([127, 0, 0, 1], 40000), 4242, 232),
        );
        buf.extend(done(5, 0));
        let mut out = Vec::new();
        let r = parse_reply(&buf, 5, &mut out).unwrap();
        assert_eq!(
            r,
            Reply {
                done: true,
                sockets: 1
            }
        );
        let s = &out[0];
        assert_eq!(s.local.to_string(), "127.0.0.1:5201");
        assert_eq!(s.remote.to_string(), "127.0.0.1:40000");
        assert_eq!((s.state, s.inode), (TCP_ESTABLISHED, 4242));
        assert_eq!(s.cookie, (7 << 32) | 0xdead_beef);
        let i = s.info.unwrap();
        assert_eq!(i.rtt_us, Some(1500));
        assert_eq!(i.snd_cwnd, Some(10));
        assert_eq!(i.rcv_space, Some(14600));
        assert_eq!(i.total_retrans, Some(3));
        assert_eq!(i.bytes_acked, Some(1_000_001));
        assert_eq!(i.bytes_received, Some(77));
        assert_eq!(i.min_rtt_us, Some(900));
        assert_eq!(i.delivery_rate, Some(125_000_000));
        assert_eq!(
            (i.busy_time_us, i.rwnd_limited_us, i.sndbuf_limited_us),
            (Some(40_000), Some(10_000), Some(4_000))
        );
        assert_eq!(i.snd_wnd, Some(65535));
        assert_eq!((i.snd_mss, i.unacked), (Some(1448), Some(7)));
        assert_eq!(
            s.mem,
            Some(SkMem {
                rmem_alloc: 300,
                rcvbuf: 131_072,
                sndbuf: 87_040,
                wmem_queued: 14_480
            })
        );
        // A memory array cut short is not read.
        assert_eq!(SkMem::parse(&[0u8; 20]), None);
    }

    #[test]
    fn an_older_kernels_shorter_tcp_info_leaves_the_newer_fields_out() {
        // 4.9's struct ends after tcpi_delivery_rate (168 bytes); 4.19's after
        // tcpi_bytes_retrans (216): no busy times in one, no tcpi_snd_wnd in either.
        let i = TcpInfo::parse(&tcp_info_bytes(168));
        assert_eq!(i.delivery_rate, Some(125_000_000));
        assert_eq!(i.busy_time_us, None);
        assert_eq!(i.rwnd_limited_us, None);
        assert_eq!(i.snd_wnd, None);
        let i = TcpInfo::parse(&tcp_info_bytes(216));
        assert_eq!(i.sndbuf_limited_us, Some(4_000));
        assert_eq!(i.snd_wnd, None);
        // A field cut in the middle is not read.
        let i = TcpInfo::parse(&tcp_info_bytes(offset::BYTES_ACKED + 4));
        assert_eq!(i.total_retrans, Some(3));
        assert_eq!(i.bytes_acked, None);
        assert_eq!(TcpInfo::parse(&[]), TcpInfo::default());
        // Through a whole message too.
        let buf = message(
            SOCK_DIAG_BY_FAMILY,
            1,
            &diag_v4(([10, 0, 0, 1], 1), ([10, 0, 0, 2], 2), 1, 104),
        );
        let mut out = Vec::new();
        parse_reply(&buf, 1, &mut out).unwrap();
        let i = out[0].info.unwrap();
        assert_eq!(i.total_retrans, Some(3));
        assert_eq!(i.bytes_acked, None);
    }

    #[test]
    fn ipv6_addresses_and_a_socket_without_tcp_info() {
        let mut p = vec![0u8; DIAG_MSG_LEN];
        p[0] = AF_INET6;
        p[1] = TCP_ESTABLISHED;
        p[4..6].copy_from_slice(&443u16.to_be_bytes());
        p[6..8].copy_from_slice(&50000u16.to_be_bytes());
        p[23] = 1; // ::1
        p[24..40].copy_from_slice(&"2001:db8::2".parse::<Ipv6Addr>().unwrap().octets());
        let buf = message(SOCK_DIAG_BY_FAMILY, 3, &p);
        let mut out = Vec::new();
        let r = parse_reply(&buf, 3, &mut out).unwrap();
        assert!(!r.done, "no DONE yet: the dump goes on in the next reply");
        assert_eq!(out[0].local.to_string(), "[::1]:443");
        assert_eq!(out[0].remote.to_string(), "[2001:db8::2]:50000");
        assert_eq!(out[0].info, None);
    }

    #[test]
    fn stale_messages_are_skipped_and_errors_are_reported() {
        // A message of an earlier request's sequence number is not ours.
        let mut buf = message(
            SOCK_DIAG_BY_FAMILY,
            1,
            &diag_v4(([1, 1, 1, 1], 1), ([2, 2, 2, 2], 2), 1, 232),
        );
        buf.extend(done(2, 0));
        let mut out = Vec::new();
        assert!(parse_reply(&buf, 2, &mut out).unwrap().done);
        assert!(out.is_empty());
        // The kernel refusing (EPERM), and a dump ended by an error.
        let e = parse_reply(
            &message(NLMSG_ERROR, 4, &(-1i32).to_ne_bytes()),
            4,
            &mut out,
        )
        .unwrap_err();
        assert!(e.what.contains("answered with an error"), "{e}");
        let e = parse_reply(&done(4, -16), 4, &mut out).unwrap_err();
        assert!(e.what.contains("ended the dump with an error"), "{e}");
        // An unknown family.
        let mut p = diag_v4(([1, 1, 1, 1], 1), ([2, 2, 2, 2], 2), 1, 0);
        p[0] = 1;
        let e = parse_reply(&message(SOCK_DIAG_BY_FAMILY, 4, &p), 4, &mut out).unwrap_err();
        assert!(e.what.contains("expected 2 (IPv4) or 10 (IPv6)"), "{e}");
    }

    #[test]
    fn truncated_and_garbled_replies_are_errors_not_panics() {
        let mut buf = message(
            SOCK_DIAG_BY_FAMILY,
            1,
            &diag_v4(([1, 1, 1, 1], 1), ([2, 2, 2, 2], 2), 1, 232),
        );
        buf.extend(done(1, 0));
        for cut in 1..buf.len() {
            let mut out = Vec::new();
            if let Err(e) = parse_reply(&buf[..cut], 1, &mut out) {
                assert!(e.to_string().starts_with("sock_diag reply, byte "), "{e}");
            }
        }
        let mut bad = buf.clone();
        bad[0..4].copy_from_slice(&4000u32.to_ne_bytes());
        let e = parse_reply(&bad, 1, &mut Vec::new()).unwrap_err();
        assert!(e.what.contains("message length 4000"), "{e}");
        // A socket message too short for inet_diag_msg.
        let e = parse_reply(
            &message(SOCK_DIAG_BY_FAMILY, 1, &[0u8; 20]),
            1,
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(e.what.contains("expected at least the 72"), "{e}");
        // An attribute running past its message.
        let mut p = diag_v4(([1, 1, 1, 1], 1), ([2, 2, 2, 2], 2), 1, 0);
        p.extend_from_slice(&[200, 0, 2, 0]);
        let e = parse_reply(&message(SOCK_DIAG_BY_FAMILY, 1, &p), 1, &mut Vec::new()).unwrap_err();
        assert!(e.what.contains("attribute length 200"), "{e}");
        let mut x: u32 = 99;
        for _ in 0..2000 {
            let noise: Vec<u8> = (0..120)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (x >> 16) as u8
                })
                .collect();
            let _ = parse_reply(&noise, 0, &mut Vec::new());
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_live_kernel_reports_a_loopback_connection() {
        use std::io::{Read, Write};
        use std::net::{TcpListener, TcpStream};
        use std::os::unix::fs::MetadataExt;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        client.write_all(&[1u8; 5000]).unwrap();
        let mut got = [0u8; 5000];
        server.read_exact(&mut got).unwrap();
        let me = std::fs::read_link("/proc/self/ns/net").unwrap();
        let me = me.to_str().unwrap();
        let inode = |s: &TcpStream| {
            use std::os::fd::AsRawFd;
            let link = std::fs::read_link(format!("/proc/self/fd/{}", s.as_raw_fd())).unwrap();
            let l = link.to_str().unwrap().to_string();
            l["socket:[".len()..l.len() - 1].parse::<u64>().unwrap()
        };
        let mut r = NetlinkTcp::new();
        let client_inode = inode(&client);
        // The ACK may trail the data by a moment.
        let mut found = None;
        for _ in 0..100 {
            let dump = r.read(me, "/proc/self/ns/net", usize::MAX).unwrap();
            found = dump.sockets.into_iter().find(|s| s.inode == client_inode);
            if found
                .as_ref()
                .and_then(|s| s.info?.bytes_acked)
                .is_some_and(|b| b >= 5001)
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let s = found.expect("the client socket is in the dump");
        assert_eq!(s.local, client.local_addr().unwrap());
        assert_eq!(s.remote, client.peer_addr().unwrap());
        let info = s.info.unwrap();
        assert_eq!(info.bytes_acked, Some(5001), "5000 B + the SYN");
        assert!(info.snd_cwnd.unwrap() > 0);
        assert!(
            info.busy_time_us.is_some(),
            "this kernel (≥ 4.10) has busy time"
        );
        // The server end: received the bytes.
        let dump = r.read(me, "/proc/self/ns/net", usize::MAX).unwrap();
        let srv = dump
            .sockets
            .iter()
            .find(|s| s.inode == inode(&server))
            .unwrap();
        assert_eq!(srv.info.unwrap().bytes_received, Some(5000));
        // A cap cuts the dump and says so.
        let capped = r.read(me, "/proc/self/ns/net", 1).unwrap();
        assert_eq!(capped.sockets.len(), 1);
        assert!(capped.truncated);
        // And the next read starts afresh.
        assert!(
            r.read(me, "/proc/self/ns/net", usize::MAX)
                .unwrap()
                .sockets
                .len()
                >= 2
        );
        // A stale namespace id is refused rather than read in the wrong namespace.
        let ino = std::fs::metadata("/proc/self/ns/net").unwrap().ino();
        let e = live_read_foreign(&mut r, &format!("net:[{}]", ino + 1));
        assert!(e.contains("not net:["), "{e}");
    }

    #[cfg(target_os = "linux")]
    fn live_read_foreign(r: &mut NetlinkTcp, id: &str) -> String {
        r.read(id, "/proc/self/ns/net", 10).unwrap_err().to_string()
    }
}
