//! Socket setup shared by the UDP sender and receiver: buffer sizes, drop reporting, MTU.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::time::Duration;

use nix::sys::socket::{setsockopt, sockopt};
use socket2::{Domain, Protocol, Socket, Type};

use super::mmsg;
use crate::LoadError;

/// What the kernel granted for a receive buffer request, for the report.
#[derive(Debug, Clone)]
pub struct RcvbufGrant {
    /// Bytes the socket's receive buffer may hold, as `getsockopt(SO_RCVBUF)` reports it (the
    /// kernel doubles the request for bookkeeping overhead and clamps plain requests to
    /// `net.core.rmem_max`).
    pub granted: usize,
    pub note: String,
}

/// A receive buffer request, with what the note on it needs to know of the machine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RcvbufRequest {
    /// Bytes to ask for (`--rcvbuf`); `None` leaves the system default.
    pub size: Option<usize>,
    /// Force `size` past net.core.rmem_max with SO_RCVBUFFORCE (`--rcvbuf-force`).
    pub force: bool,
    /// `net.core.rmem_max`, as the caller read it (through its `probe::Source`): what a plain
    /// request is clamped to. `None`: unknown, and the note does not give it.
    pub rmem_max: Option<usize>,
}

/// A UDP socket bound to `listen` with a read timeout so its thread can notice a stop request,
/// and the receive buffer asked for (see [`set_rcvbuf`]). Its drops are read with
/// [`mmsg::socket_drops`].
pub fn bind_receiver(
    listen: SocketAddr,
    rcvbuf: RcvbufRequest,
    read_timeout: Duration,
) -> Result<(UdpSocket, RcvbufGrant), LoadError> {
    let socket = Socket::new(
        Domain::for_address(listen),
        Type::DGRAM,
        Some(Protocol::UDP),
    )
    .map_err(|e| LoadError::socket("socket(UDP)", e))?;
    if listen.is_ipv6() {
        // A v6 listener takes only v6 so that `--listen [::]:P` next to a v4 one does not clash.
        socket
            .set_only_v6(true)
            .map_err(|e| LoadError::socket("setsockopt IPV6_V6ONLY", e))?;
    }
    let grant = set_rcvbuf(&socket, rcvbuf)?;
    socket.bind(&listen.into()).map_err(|e| LoadError::Bind {
        addr: listen,
        source: e,
    })?;
    let socket: UdpSocket = socket.into();
    socket
        .set_read_timeout(Some(read_timeout))
        .map_err(|e| LoadError::socket("setsockopt SO_RCVTIMEO", e))?;
    Ok((socket, grant))
}

/// Sets the receive buffer as an ordinary application would, unless told otherwise:
/// - nothing asked: no setsockopt at all, so the socket gets `net.core.rmem_default`, what the
///   user's own application meets;
/// - `--rcvbuf N`: SO_RCVBUF, which the kernel clamps to `net.core.rmem_max` (and doubles for
///   its bookkeeping); the note says when it was clamped;
/// - `--rcvbuf N --rcvbuf-force`: SO_RCVBUFFORCE (CAP_NET_ADMIN), which bypasses rmem_max; the
///   note says what it bypassed. Without the privilege this is an error, not a silent fallback.
fn set_rcvbuf(socket: &Socket, request: RcvbufRequest) -> Result<RcvbufGrant, LoadError> {
    let RcvbufRequest {
        size: requested,
        force,
        rmem_max: max,
    } = request;
    let how = match (requested, force) {
        (None, true) => {
            return Err(LoadError::InvalidConfig(
                "--rcvbuf-force needs --rcvbuf SIZE: the size to force".into(),
            ))
        }
        (None, false) => None,
        (Some(want), false) => {
            socket
                .set_recv_buffer_size(want)
                .map_err(|e| LoadError::socket(format!("setsockopt SO_RCVBUF {want}"), e))?;
            Some(format!("requested {want} B with SO_RCVBUF"))
        }
        (Some(want), true) => {
            setsockopt(socket, sockopt::RcvBufForce, &want).map_err(|e| {
                LoadError::socket(
                    format!(
                        "setsockopt SO_RCVBUFFORCE {want} (--rcvbuf-force needs root or CAP_NET_ADMIN)"
                    ),
                    std::io::Error::from(e),
                )
            })?;
            let bypassed = max
                .filter(|m| want > *m)
                .map(|m| format!(", bypassing net.core.rmem_max = {m} B"))
                .unwrap_or_default();
            Some(format!("forced {want} B with SO_RCVBUFFORCE{bypassed}"))
        }
    };
    let granted = socket
        .recv_buffer_size()
        .map_err(|e| LoadError::socket("getsockopt SO_RCVBUF", e))?;
    let note = match (how, requested) {
        (None, _) => format!(
            "receive buffer: none requested, as an ordinary application: the system default (net.core.rmem_default) gave {granted} B; --rcvbuf asks for more"
        ),
        (Some(how), Some(want)) if !force && granted < want => format!(
            "receive buffer: {how}; the kernel granted {granted} B, clamped to net.core.rmem_max{} (--rcvbuf-force bypasses it)",
            max.map(|m| format!(" = {m} B")).unwrap_or_default()
        ),
        (Some(how), _) => format!(
            "receive buffer: {how}; the kernel granted {granted} B (it doubles a request for its bookkeeping)"
        ),
    };
    Ok(RcvbufGrant { granted, note })
}

/// A sender socket for one flow: its own ephemeral source port, connected to `target`, never
/// fragmenting (a datagram over the path MTU fails instead).
pub fn connect_sender(target: SocketAddr, sndbuf: Option<usize>) -> Result<UdpSocket, LoadError> {
    let bind: SocketAddr = if target.is_ipv6() {
        "[::]:0".parse().expect("static address")
    } else {
        "0.0.0.0:0".parse().expect("static address")
    };
    let socket = Socket::new(
        Domain::for_address(target),
        Type::DGRAM,
        Some(Protocol::UDP),
    )
    .map_err(|e| LoadError::socket("socket(UDP)", e))?;
    if let Some(size) = sndbuf {
        if setsockopt(&socket, sockopt::SndBufForce, &size).is_err() {
            socket
                .set_send_buffer_size(size)
                .map_err(|e| LoadError::socket(format!("setsockopt SO_SNDBUF {size}"), e))?;
        }
    }
    socket.bind(&bind.into()).map_err(|e| LoadError::Bind {
        addr: bind,
        source: e,
    })?;
    mmsg::forbid_fragmentation(socket.as_fd(), target.is_ipv6())
        .map_err(|e| LoadError::socket("setsockopt IP_MTU_DISCOVER=IP_PMTUDISC_DO", e))?;
    socket
        .connect(&target.into())
        .map_err(|e| LoadError::Connect {
            addr: target,
            source: e,
        })?;
    let socket: UdpSocket = socket.into();
    // A blocked send must not hold the thread past a stop request for long.
    socket
        .set_write_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| LoadError::socket("setsockopt SO_SNDTIMEO", e))?;
    Ok(socket)
}

/// Checks that the kernel takes UDP GSO on this socket: sets `UDP_SEGMENT` to `segment` and
/// back to 0 (the sender asks for segmentation per send, in a control message, so that other
/// sends on the socket, such as the `Fin`, stay whole).
pub fn check_gso(socket: &UdpSocket, segment: usize) -> Result<(), LoadError> {
    let refused = |e: nix::Error| {
        LoadError::socket(
            format!(
                "setsockopt UDP_SEGMENT {segment} (--gso: UDP GSO needs Linux 4.18 or later{})",
                if e == nix::Error::ENOPROTOOPT || e == nix::Error::EINVAL {
                    "; this kernel does not take it"
                } else {
                    ""
                }
            ),
            std::io::Error::from(e),
        )
    };
    setsockopt(socket, sockopt::UdpGsoSegment, &(segment as i32)).map_err(refused)?;
    setsockopt(socket, sockopt::UdpGsoSegment, &0).map_err(refused)
}

/// Turns UDP GRO on for a receive socket (`UDP_GRO`): the kernel may then hand over several
/// datagrams of one flow in one read, with their segment size in a control message.
pub fn enable_gro(socket: &UdpSocket) -> Result<(), LoadError> {
    setsockopt(socket, sockopt::UdpGroSegment, &true).map_err(|e| {
        LoadError::socket(
            format!(
                "setsockopt UDP_GRO (--gro: UDP GRO needs Linux 5.0 or later{})",
                if e == nix::Error::ENOPROTOOPT || e == nix::Error::EINVAL {
                    "; this kernel does not take it"
                } else {
                    ""
                }
            ),
            std::io::Error::from(e),
        )
    })
}

/// Largest UDP payload that fits `mtu` without fragmentation.
pub fn max_payload_for_mtu(mtu: usize, ipv6: bool) -> usize {
    mtu.saturating_sub(if ipv6 { 40 } else { 20 } + 8)
}

/// Extends the socket's wrapping u32 drop counter to a u64 total.
#[derive(Debug, Clone, Copy, Default)]
pub struct DropCounter {
    last_raw: u32,
    total: u64,
}

impl DropCounter {
    /// Folds in a fresh reading of the counter (which only grows, modulo 2^32).
    #[inline]
    pub fn update(&mut self, raw: u32) {
        let delta = raw.wrapping_sub(self.last_raw);
        // A reading older than one already seen (control messages of datagrams queued before
        // the last reading) would look like a near-2^32 jump; it carries no news.
        if delta < 1 << 31 {
            self.total += u64::from(delta);
            self.last_raw = raw;
        }
    }

    pub fn total(&self) -> u64 {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_counter_wraps_and_ignores_stale_readings() {
        let mut d = DropCounter::default();
        d.update(10);
        d.update(5);
        assert_eq!(d.total(), 10);
        d.update(0x8000_0000);
        d.update(u32::MAX);
        d.update(3);
        assert_eq!(d.total(), u64::from(u32::MAX) + 4);
    }

    /// The receiver reads its drops with SO_MEMINFO: a per-datagram SO_RXQ_OVFL control
    /// message would cost every read a copy once anything was dropped.
    #[test]
    fn a_receiver_socket_carries_no_drop_count_on_its_datagrams() {
        let (socket, _) = bind_receiver(
            "127.0.0.1:0".parse().unwrap(),
            RcvbufRequest::default(),
            Duration::from_millis(10),
        )
        .unwrap();
        assert_eq!(
            nix::sys::socket::getsockopt(&socket, sockopt::RxqOvfl).unwrap(),
            0
        );
    }

    /// A request where net.core.rmem_max is the machine's, as the engine reads it.
    fn ask(size: Option<usize>, force: bool) -> RcvbufRequest {
        RcvbufRequest {
            size,
            force,
            rmem_max: Some(read_sysctl("rmem_max")),
        }
    }

    fn read_sysctl(name: &str) -> usize {
        std::fs::read_to_string(format!("/proc/sys/net/core/{name}"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[test]
    fn bind_reports_grant_and_bad_address() {
        let (s, g) = bind_receiver(
            "127.0.0.1:0".parse().unwrap(),
            ask(Some(100_000), false),
            Duration::from_millis(10),
        )
        .unwrap();
        assert!(g.granted >= 100_000, "{g:?}");
        let taken = s.local_addr().unwrap();
        let e = bind_receiver(taken, ask(None, false), Duration::from_millis(10)).unwrap_err();
        assert!(e.is_usage(), "{e}");
    }

    #[test]
    fn by_default_the_receiver_gets_what_an_ordinary_application_gets() {
        let (_s, g) = bind_receiver(
            "127.0.0.1:0".parse().unwrap(),
            ask(None, false),
            Duration::from_millis(10),
        )
        .unwrap();
        assert_eq!(g.granted, read_sysctl("rmem_default"), "{g:?}");
        assert!(g.note.contains("net.core.rmem_default"), "{}", g.note);
    }

    #[test]
    fn a_plain_request_is_clamped_to_rmem_max_and_says_so() {
        let max = read_sysctl("rmem_max");
        let want = max * 4;
        let (_s, g) = bind_receiver(
            "127.0.0.1:0".parse().unwrap(),
            ask(Some(want), false),
            Duration::from_millis(10),
        )
        .unwrap();
        assert!(g.granted <= 2 * max, "{g:?}");
        assert!(
            g.note
                .contains(&format!("clamped to net.core.rmem_max = {max} B")),
            "{}",
            g.note
        );
        assert!(g.note.contains("--rcvbuf-force"), "{}", g.note);
    }

    #[test]
    fn forcing_bypasses_rmem_max_and_says_what_it_bypassed() {
        let max = read_sysctl("rmem_max");
        let want = max * 4;
        match bind_receiver(
            "127.0.0.1:0".parse().unwrap(),
            ask(Some(want), true),
            Duration::from_millis(10),
        ) {
            Ok((_s, g)) => {
                assert!(g.granted >= want, "{g:?}");
                assert!(g.note.contains("bypassing net.core.rmem_max"), "{}", g.note);
            }
            // Without CAP_NET_ADMIN: a clear error, never a silent fallback.
            Err(e) => assert!(e.to_string().contains("CAP_NET_ADMIN"), "{e}"),
        }
        let e = bind_receiver(
            "127.0.0.1:0".parse().unwrap(),
            ask(None, true),
            Duration::from_millis(10),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("--rcvbuf-force needs --rcvbuf"),
            "{e}"
        );
    }

    #[test]
    fn loopback_mtu_is_known_after_connect() {
        let (rx, _) = bind_receiver(
            "127.0.0.1:0".parse().unwrap(),
            ask(None, false),
            Duration::from_millis(10),
        )
        .unwrap();
        let tx = connect_sender(rx.local_addr().unwrap(), None).unwrap();
        let mtu = mmsg::path_mtu(tx.as_fd(), false).unwrap();
        // lo has MTU 65536; IP caps a route's MTU at 65535.
        assert!(mtu >= 65535, "{mtu}");
        assert_eq!(max_payload_for_mtu(65535, false), 65507);
    }
}
