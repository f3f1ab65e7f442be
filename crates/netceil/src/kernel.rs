//! Delivery as the kernel counts it, around a workload: the receive interface's packet counter,
//! the softnet backlog drops and the UDP and TCP protocol counters, read before and after.
//!
//! These counters are machine-wide: on a busy machine other traffic shows up in them, which is
//! why the socket's own drop counter (SO_RXQ_OVFL, measured by the load engine) is what closes
//! the UDP accounting, and the machine-wide figures are reported beside it.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::Arc;

use netceil_load::header::FarKernel;
use netceil_load::udp::KernelProbe;
use netceil_model::Results;
use netceil_probe::parse::{net_dev, snmp, softnet};

/// The counters read at one moment; a file that could not be read leaves its part `None`.
pub struct Counters {
    snmp: Option<snmp::SnmpCounters>,
    net_dev: Option<net_dev::NetDev>,
    softnet: Option<softnet::SoftnetStat>,
    /// Why a part is missing, for the run's notes.
    problems: Vec<String>,
}

fn read<T, E: std::fmt::Display>(
    path: &str,
    parse: impl Fn(&str) -> Result<T, E>,
    problems: &mut Vec<String>,
) -> Option<T> {
    match std::fs::read_to_string(path) {
        Ok(text) => match parse(&text) {
            Ok(v) => Some(v),
            Err(e) => {
                problems.push(format!("{path}: {e}"));
                None
            }
        },
        Err(e) => {
            problems.push(format!("{path}: {e}"));
            None
        }
    }
}

impl Counters {
    pub fn read() -> Counters {
        let mut problems = Vec::new();
        let snmp = read("/proc/net/snmp", snmp::parse, &mut problems);
        let net_dev = read("/proc/net/dev", net_dev::parse, &mut problems);
        let softnet = read("/proc/net/softnet_stat", softnet::parse, &mut problems);
        Counters {
            snmp,
            net_dev,
            softnet,
            problems,
        }
    }

    fn counter(&self, c: snmp::Counter) -> Option<u64> {
        self.snmp.as_ref()?.counter(c)
    }

    fn backlog_drops(&self) -> Option<u64> {
        Some(self.softnet.as_ref()?.rows.iter().map(|r| r.dropped).sum())
    }

    fn iface_rx_packets(&self, iface: &str) -> Option<u64> {
        Some(self.net_dev.as_ref()?.iface(iface)?.rx_packets)
    }
}

/// The interface that holds the local address this machine uses to reach `peer`: the one the
/// peer's datagrams arrive on when routing is symmetric. A connected UDP socket asks the
/// routing table without sending anything.
pub fn iface_facing(peer: SocketAddr) -> Option<String> {
    let bind: SocketAddr = match peer {
        SocketAddr::V4(_) => "0.0.0.0:0".parse().ok()?,
        SocketAddr::V6(_) => "[::]:0".parse().ok()?,
    };
    let s = UdpSocket::bind(bind).ok()?;
    s.connect(peer).ok()?;
    let local: IpAddr = s.local_addr().ok()?.ip();
    if local.is_loopback() {
        return Some("lo".into());
    }
    nix::ifaddrs::getifaddrs().ok()?.find_map(|a| {
        let addr = a.address?;
        let ip: Option<IpAddr> = if let Some(v4) = addr.as_sockaddr_in() {
            Some(IpAddr::V4(v4.ip()))
        } else {
            addr.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip()))
        };
        (ip == Some(local)).then_some(a.interface_name)
    })
}

/// Refuses UDP payloads that would not cross the path to `--to` in one IP packet, before any
/// traffic: the load engine would refuse them at the first trial, and a sweep or search asked
/// about the packet path must not measure fragmentation. `sizes` pairs each size as the user
/// gave it with its UDP payload. Loopback (no `--to`) carries 64 KiB and needs no check.
pub fn check_path_mtu(
    to: Option<SocketAddr>,
    flag: &str,
    sizes: &[(usize, usize)],
) -> Result<(), String> {
    let Some(peer) = to else { return Ok(()) };
    let Ok((mtu, largest)) = netceil_load::udp::path_mtu_towards(peer) else {
        return Ok(());
    };
    let iface = iface_facing(peer).unwrap_or_else(|| "its interface".into());
    match sizes.iter().find(|(_, payload)| *payload > largest) {
        None => Ok(()),
        Some((shown, payload)) => Err(format!(
            "{flag} {shown}: its {}-byte IP packets are larger than the path MTU towards {peer} ({mtu} bytes, leaving by {iface}); every datagram would be fragmented, so this would measure fragmentation and reassembly. Keep UDP payloads at or under {largest} bytes, or raise the MTU on both ends and every hop between (ip link set dev {iface} mtu 9000), or measure on loopback without --to (64 KiB MTU)",
            payload + (mtu - largest)
        )),
    }
}

/// What `netceil recv` reads for each run it serves: the interface facing the sender, and the
/// backlog and UDP error counters of its network namespace.
pub fn far_end_probe() -> KernelProbe {
    Arc::new(|peer: SocketAddr| {
        let c = Counters::read();
        let iface = iface_facing(peer);
        FarKernel {
            iface_rx_packets: iface.as_deref().and_then(|i| c.iface_rx_packets(i)),
            iface,
            backlog_drops: c.backlog_drops(),
            udp_rcvbuf_errors: c.counter(snmp::Counter::UdpRcvbufErrors),
            udp_in_errors: c.counter(snmp::Counter::UdpInErrors),
        }
    })
}

fn delta(before: Option<u64>, after: Option<u64>) -> Option<u64> {
    // A counter that went backwards was reset: no honest delta exists.
    after?.checked_sub(before?)
}

/// Adds the kernel's view to a UDP run's results and closes the accounting:
/// sent = received + socket drops + backlog drops + in flight + unexplained.
///
/// `loopback` is true when the receiver was in-process on loopback, so `lo` is the receive
/// interface and the machine-wide backlog drops can be ours.
pub fn attribute_udp(before: &Counters, after: &Counters, loopback: bool, r: &mut Results) {
    use snmp::Counter;
    let k = &mut r.kernel;
    // Send errors are the sender's: always from this machine.
    k.udp_sndbuf_errors = delta(
        before.counter(Counter::UdpSndbufErrors),
        after.counter(Counter::UdpSndbufErrors),
    );
    if loopback {
        k.udp_rcvbuf_errors = delta(
            before.counter(Counter::UdpRcvbufErrors),
            after.counter(Counter::UdpRcvbufErrors),
        );
        k.udp_in_errors = delta(
            before.counter(Counter::UdpInErrors),
            after.counter(Counter::UdpInErrors),
        );
        k.backlog_drops = delta(before.backlog_drops(), after.backlog_drops());
        k.iface = Some("lo".into());
        k.iface_rx_packets = delta(before.iface_rx_packets("lo"), after.iface_rx_packets("lo"));
        r.rx_kernel_packets = k.iface_rx_packets;
    } else if k.iface.is_none() && k.iface_rx_packets.is_none() {
        // The receive-side counters belong to the far machine; this one's would describe
        // other traffic. Without its report they stay unknown.
        r.notes.push(
            "the receiver is remote and reported no kernel counters: its interface, backlog and UDP receive errors are not checked"
                .into(),
        );
    }
    for p in before.problems.iter().chain(&after.problems) {
        r.notes.push(format!("kernel counter unavailable: {p}"));
    }
    // Backlog drops on loopback happen before any socket, so they are not in the socket's count.
    let backlog = if loopback {
        k.backlog_drops.unwrap_or(0)
    } else {
        0
    };
    let counted_drops = k.socket_drops.unwrap_or(0) + backlog;
    let explained = r.rx_app_packets + counted_drops + r.in_flight_packets;
    r.unexplained_packets = r.tx_packets as i64 - explained as i64;
    if loopback && backlog > 0 {
        r.notes.push(format!(
            "{backlog} packets were dropped at a full softnet backlog (machine-wide count, taken as ours on loopback)"
        ));
    }
}

/// Adds the machine-wide TCP retransmission count to a TCP run's notes, beside the per-flow
/// TCP_INFO figures.
pub fn attribute_tcp(before: &Counters, after: &Counters, r: &mut Results) {
    use snmp::Counter;
    if let Some(d) = delta(
        before.counter(Counter::TcpRetransSegs),
        after.counter(Counter::TcpRetransSegs),
    ) {
        r.notes
            .push(format!("machine-wide Tcp RetransSegs +{d} over the run"));
    }
    for p in before.problems.iter().chain(&after.problems) {
        r.notes.push(format!("kernel counter unavailable: {p}"));
    }
}
