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
use netceil_probe::{ProcFs, Source};

/// The counters read at one moment; a file that could not be read leaves its part `None`.
pub struct Counters {
    snmp: Option<snmp::SnmpCounters>,
    net_dev: Option<net_dev::NetDev>,
    softnet: Option<softnet::SoftnetStat>,
    /// Why a part is missing, for the run's notes.
    problems: Vec<String>,
}

fn read<T, E: std::fmt::Display>(
    source: &(impl Source + ?Sized),
    path: &str,
    parse: impl Fn(&str) -> Result<T, E>,
    problems: &mut Vec<String>,
) -> Option<T> {
    match source.read(path) {
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
    /// The counters as `source` shows them now.
    pub fn read(source: &(impl Source + ?Sized)) -> Counters {
        let mut problems = Vec::new();
        let snmp = read(source, "/proc/net/snmp", snmp::parse, &mut problems);
        let net_dev = read(source, "/proc/net/dev", net_dev::parse, &mut problems);
        let softnet = read(
            source,
            "/proc/net/softnet_stat",
            softnet::parse,
            &mut problems,
        );
        Counters {
            snmp,
            net_dev,
            softnet,
            problems,
        }
    }

    /// Files that could not be read or parsed, with why.
    pub fn problems(&self) -> &[String] {
        &self.problems
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
        let c = Counters::read(&ProcFs::new());
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

/// The far end's kernel counter deltas over a `netceil serve` test, for the interface that
/// holds the address its data arrived on.
pub fn far_deltas(
    before: &Counters,
    after: &Counters,
    iface: Option<&str>,
) -> netceil_model::FarKernelDeltas {
    let dev = |c: &Counters, f: fn(&net_dev::NetDevRow) -> u64| -> Option<u64> {
        Some(f(c.net_dev.as_ref()?.iface(iface?)?))
    };
    let d = |f: fn(&net_dev::NetDevRow) -> u64| delta(dev(before, f), dev(after, f));
    let soft = |c: &Counters, f: fn(&softnet::SoftnetRow) -> u64| -> Option<u64> {
        Some(c.softnet.as_ref()?.rows.iter().map(f).sum())
    };
    let s = |f: fn(&softnet::SoftnetRow) -> u64| delta(soft(before, f), soft(after, f));
    let k = |c: snmp::Counter| delta(before.counter(c), after.counter(c));
    netceil_model::FarKernelDeltas {
        iface: iface.map(str::to_string),
        iface_rx_packets: d(|r| r.rx_packets),
        iface_rx_bytes: d(|r| r.rx_bytes),
        iface_rx_dropped: d(|r| r.rx_dropped),
        iface_tx_packets: d(|r| r.tx_packets),
        softnet_processed: s(|r| r.processed),
        softnet_dropped: s(|r| r.dropped),
        softnet_time_squeeze: s(|r| r.time_squeeze),
        udp_in_datagrams: k(snmp::Counter::UdpInDatagrams),
        udp_rcvbuf_errors: k(snmp::Counter::UdpRcvbufErrors),
        udp_in_errors: k(snmp::Counter::UdpInErrors),
        udp_no_ports: k(snmp::Counter::UdpNoPorts),
        tcp_retrans_segs: k(snmp::Counter::TcpRetransSegs),
    }
}

/// Per-core CPU times from /proc/stat, and when they were read (on the source's clock).
pub struct CpuReading {
    stat: netceil_probe::parse::proc_stat::ProcStat,
    at: std::time::Duration,
}

/// Reads every core's CPU times; `None` if /proc/stat could not be read.
pub fn cpu_times(source: &(impl Source + ?Sized)) -> Option<CpuReading> {
    let at = source.now();
    let stat = netceil_probe::parse::proc_stat::parse(&source.read("/proc/stat").ok()?).ok()?;
    Some(CpuReading { stat, at })
}

/// Each core's time shares between two readings, percent, as the sampler takes them (busy is
/// the wall time less idle and iowait, see `netceil_probe::cpu_share`).
pub fn cpu_shares(
    before: &CpuReading,
    after: &CpuReading,
    ticks_per_s: u64,
) -> Vec<netceil_model::FarCpu> {
    let wall = after.at.saturating_sub(before.at).as_secs_f64() * ticks_per_s as f64;
    let mut out = Vec::new();
    for line in &after.stat.cpus {
        let Some(b) = before.stat.cpu(line.cpu) else {
            continue;
        };
        let Ok(s) = netceil_probe::cpu_share::shares(b, &line.times, wall) else {
            continue;
        };
        out.push(netceil_model::FarCpu {
            cpu: line.cpu,
            user_pct: s.user + s.nice,
            system_pct: s.system,
            irq_pct: s.irq.or_zero(),
            softirq_pct: s.softirq.or_zero(),
            idle_pct: s.idle,
            busy_pct: s.busy,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_probe::FakeSource;

    #[test]
    fn far_cpu_busy_is_the_wall_time_less_idle() {
        // One second (100 ticks) in which cpu0 was 60 ticks idle and 10 in iowait, and the
        // tick saw 4 busy ones; cpu1 saw all of its 100.
        let s = FakeSource::new();
        let stat = |c0: &str, c1: &str| format!("cpu  0 0 0 0 0 0 0 0\ncpu0 {c0}\ncpu1 {c1}\n");
        s.set("/proc/stat", stat("0 0 0 0 0 0 0 0", "0 0 0 0 0 0 0 0"));
        let before = cpu_times(&s).unwrap();
        s.advance(std::time::Duration::from_secs(1));
        s.set("/proc/stat", stat("3 0 1 60 10 0 0 0", "100 0 0 0 0 0 0 0"));
        let after = cpu_times(&s).unwrap();
        let cpus = cpu_shares(&before, &after, 100);
        let busy: Vec<(u32, f64, f64)> = cpus
            .iter()
            .map(|c| (c.cpu, c.busy_pct, c.user_pct))
            .collect();
        assert_eq!(busy, [(0, 30.0, 3.0), (1, 100.0, 100.0)]);
    }

    /// A machine whose counters are given: /proc/net/snmp's Udp lines, lo's packets in,
    /// and one CPU's softnet backlog drops.
    fn machine(s: &FakeSource, rcvbuf_errors: u64, lo_rx: u64, backlog: u64) {
        s.set(
            "/proc/net/snmp",
            format!(
                "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n\
                 Udp: 100 0 {rcvbuf_errors} 100 {rcvbuf_errors} 0 0 0 0\n"
            ),
        );
        s.set(
            "/proc/net/dev",
            format!(
                "Inter-|   Receive                                                |  Transmit\n \
                 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
                 lo: 1000 {lo_rx} 0 0 0 0 0 0 1000 {lo_rx} 0 0 0 0 0 0\n"
            ),
        );
        s.set(
            "/proc/net/softnet_stat",
            format!("00000010 {backlog:08x} 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n"),
        );
    }

    #[test]
    fn a_udp_runs_kernel_view_comes_from_the_machine_it_is_given() {
        let s = FakeSource::new();
        machine(&s, 10, 1_000, 2);
        let before = Counters::read(&s);
        machine(&s, 310, 101_000, 5);
        let after = Counters::read(&s);
        assert!(before.problems().is_empty(), "{:?}", before.problems());
        let mut r = Results {
            tx_packets: 100_000,
            rx_app_packets: 99_697,
            ..Results::default()
        };
        r.kernel.socket_drops = Some(300);
        attribute_udp(&before, &after, true, &mut r);
        assert_eq!(r.kernel.udp_rcvbuf_errors, Some(300));
        assert_eq!(r.kernel.iface_rx_packets, Some(100_000));
        assert_eq!(r.kernel.backlog_drops, Some(3));
        // 99 697 read + 300 socket drops + 3 backlog drops: all accounted for.
        assert_eq!(r.unexplained_packets, 0);
        // A counter that went backwards (a reset) has no delta.
        machine(&s, 5, 101_000, 5);
        let reset = Counters::read(&s);
        let mut r2 = Results::default();
        attribute_udp(&after, &reset, true, &mut r2);
        assert_eq!(r2.kernel.udp_rcvbuf_errors, None);
    }

    #[test]
    fn a_file_the_machine_does_not_have_is_said() {
        let s = FakeSource::new();
        let c = Counters::read(&s);
        assert_eq!(c.problems().len(), 3, "{:?}", c.problems());
        assert!(c.problems()[0].contains("/proc/net/snmp"));
    }
}
