//! UDP load: paced datagram trains with per-packet accounting.
//!
//! [`run_udp`] drives `threads` sender threads over `flows` sockets (distinct source ports) at a
//! requested rate or flat out, and counts every datagram at the receiver by its header: received,
//! lost, reordered, duplicated, dropped by the receive socket (the kernel's own counter), and
//! still in flight. Without a target the receiver runs in the same process on loopback; with one,
//! it is a [`serve_udp`] receiver elsewhere (`netceil recv`), which reports back in a `FinReport`.
//!
//! The accounting identity is `sent = received + socket drops + in flight + unexplained`, and
//! `unexplained` is reported, never folded into something else.
//!
//! Fragmentation is never used: sender sockets set IP_PMTUDISC_DO, and a payload that does not
//! fit the route MTU (IP_MTU of the connected socket) is a configuration error, because a
//! fragmented train measures reassembly, not the packet rate asked for.

mod gso;
mod mmsg;
mod receiver;
mod sender;
pub mod seq;
mod sockets;

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use hdrhistogram::Histogram;
use netceil_model::{udp_payload_to_frame, GeneratorStats, PacingMode, Rate, Results};

use crate::clock::{now_ns, sleep_until_ns, ProgressTicks};
use crate::header::{FarKernel, Fin, FinReport, Header, Kind, HEADER_LEN};
use crate::threads;
use crate::LoadError;
pub use mmsg::socket_drops;
use receiver::{
    slot_len_for, strategy_for_rcvbuf, Receiver, RxControl, RxLive, RxStrategy, RxTotals,
};
pub use receiver::{Admit, KernelProbe};
use sender::{run_sender, FlowSocket, SenderPlan, SenderReport, StopReason, TxLive};
pub use sockets::{DropCounter, RcvbufRequest};

/// Largest UDP payload over IPv4 (65535 − 20 IP − 8 UDP).
pub const MAX_PAYLOAD_V4: usize = 65_507;
/// Largest UDP payload over IPv6 without jumbograms (65535 − 8 UDP).
pub const MAX_PAYLOAD_V6: usize = 65_527;
/// How long the sender waits for the receiver's `FinReport`.
const FIN_WAIT: Duration = Duration::from_secs(1);
/// How often the progress callback is called.
/// How often the calling thread looks at `stop` and the senders.
const POLL_NS: u64 = 20_000_000;
/// Receive timeout of receiver sockets: how late a receiver may notice it should stop.
const RX_TIMEOUT: Duration = Duration::from_millis(10);

/// A UDP load to generate.
#[derive(Debug, Clone)]
pub struct UdpConfig {
    /// UDP payload per datagram, header included (iperf3 `-l`, sockperf `-m`).
    pub payload_bytes: usize,
    /// Total requested rate over all flows (`--rate`); conflicts with `interval_ns`.
    pub rate: Option<Rate>,
    /// Gap between datagrams over all flows, ns (`--interval`); conflicts with `rate`.
    pub interval_ns: Option<f64>,
    /// How to wait between sends; ignored (unpaced) without `rate` or `interval_ns`.
    pub pacing: PacingMode,
    /// Datagrams sent back to back per scheduled send (`--burst`).
    pub burst: u32,
    /// Stop after this many datagrams (`--count`), or at `duration`, whichever comes first.
    pub count: Option<u64>,
    pub duration: Duration,
    /// Sender sockets, each with its own source port and flow id (`--flows`).
    pub flows: u32,
    /// Sender threads; flows are dealt out to them round robin (`--threads`).
    pub threads: u32,
    /// Use IPv6 loopback for the in-process receiver (`--ipv6`).
    pub ipv6: bool,
    /// A remote `netceil recv`; `None` runs a receiver in this process on loopback.
    pub target: Option<SocketAddr>,
    /// Receive buffer to ask for (`--rcvbuf`); `None` leaves the system default
    /// (net.core.rmem_default), as an ordinary application gets.
    pub rcvbuf: Option<usize>,
    /// Force `rcvbuf` past net.core.rmem_max with SO_RCVBUFFORCE (`--rcvbuf-force`).
    pub rcvbuf_force: bool,
    /// `net.core.rmem_max` as the caller read it (through its `probe::Source`), for the note
    /// on the receive buffer; `None`: unknown.
    pub rmem_max: Option<usize>,
    /// Send buffer to ask for (`--sndbuf`); default: the kernel's.
    pub sndbuf: Option<usize>,
    /// Marks this run's datagrams; others reaching the receiver are counted as foreign.
    pub run_id: u16,
    /// UDP GSO (`--gso`): each send is a super-buffer of several datagrams that the kernel
    /// cuts apart (UDP_SEGMENT). Changes what is measured: the per-datagram send cost is gone.
    pub gso: bool,
    /// Datagrams per GSO send (`--gso-segments`); `None`: as many as fit 64 KiB (at most 64).
    pub gso_segments: Option<u32>,
    /// UDP GRO on the in-process receiver (`--gro`): reads may hold several datagrams, cut
    /// apart and counted one by one. With a target, the far end is asked (`netceil serve`).
    pub gro: bool,
    /// The CPU the in-process receiver thread is placed on (`--rx-cpu`); `None` leaves it to
    /// the scheduler.
    pub rx_cpu: Option<usize>,
    /// The CPU every sender thread is placed on (`--tx-cpu`); `None` leaves them to the
    /// scheduler.
    pub tx_cpu: Option<usize>,
}

impl Default for UdpConfig {
    fn default() -> Self {
        UdpConfig {
            payload_bytes: 64,
            rate: None,
            interval_ns: None,
            pacing: PacingMode::Sleep,
            burst: 1,
            count: None,
            duration: Duration::from_secs(10),
            flows: 1,
            threads: 1,
            ipv6: false,
            target: None,
            rcvbuf: None,
            rcvbuf_force: false,
            rmem_max: None,
            sndbuf: None,
            run_id: 0,
            gso: false,
            gso_segments: None,
            gro: false,
            rx_cpu: None,
            tx_cpu: None,
        }
    }
}

fn invalid(msg: impl Into<String>) -> LoadError {
    LoadError::InvalidConfig(msg.into())
}

impl UdpConfig {
    fn uses_ipv6(&self) -> bool {
        self.target.map_or(self.ipv6, |t| t.is_ipv6())
    }

    /// Checks everything that can be checked without a socket. The path MTU is checked by
    /// [`run_udp`] once the sender sockets are connected.
    pub fn validate(&self) -> Result<(), LoadError> {
        let ipv6 = self.uses_ipv6();
        if self.payload_bytes < HEADER_LEN {
            return Err(invalid(format!(
                "--size {} is too small: every datagram carries the {HEADER_LEN}-byte netceil header (magic, run id, flow, sequence, timestamp)",
                self.payload_bytes
            )));
        }
        let limit = if ipv6 { MAX_PAYLOAD_V6 } else { MAX_PAYLOAD_V4 };
        if self.payload_bytes > limit {
            return Err(invalid(format!(
                "--size {} exceeds the largest UDP payload over {} ({limit} bytes)",
                self.payload_bytes,
                if ipv6 { "IPv6" } else { "IPv4" }
            )));
        }
        if self.rate.is_some() && self.interval_ns.is_some() {
            return Err(invalid(
                "--rate and --interval both set the send rate; give only one",
            ));
        }
        if let Some(rate) = self.rate {
            let pps = rate.packets_per_second(self.payload_bytes);
            if !(pps.is_finite() && pps > 0.0) {
                return Err(invalid(format!(
                    "--rate must be greater than zero (got {rate:?})"
                )));
            }
        }
        if let Some(i) = self.interval_ns {
            if !(i.is_finite() && i > 0.0) {
                return Err(invalid(format!(
                    "--interval must be greater than zero (got {i} ns)"
                )));
            }
        }
        let paced = self.rate.is_some() || self.interval_ns.is_some();
        if paced && self.pacing == PacingMode::None {
            return Err(invalid(
                "--pacing none conflicts with --rate/--interval; use --pacing sleep or spin, or drop the rate",
            ));
        }
        if self.burst == 0 {
            return Err(invalid("--burst must be at least 1"));
        }
        if self.burst > 1 && !paced {
            return Err(invalid(
                "--burst needs --rate or --interval: unpaced sends are already back to back",
            ));
        }
        if self.count == Some(0) {
            return Err(invalid("--count must be at least 1"));
        }
        if self.duration.is_zero() {
            return Err(invalid("--duration must be greater than zero"));
        }
        if self.flows == 0 {
            return Err(invalid("--flows must be at least 1"));
        }
        if self.flows > u32::from(u16::MAX) + 1 {
            return Err(invalid(format!(
                "--flows {} is more than the 65536 flow ids the header can carry",
                self.flows
            )));
        }
        if self.threads == 0 {
            return Err(invalid("--threads must be at least 1"));
        }
        threads::check_placement(self.rx_cpu, self.tx_cpu, self.target.is_some())?;
        if self.threads > self.flows {
            return Err(invalid(format!(
                "--threads {} is more than --flows {}: each sender thread needs at least one flow",
                self.threads, self.flows
            )));
        }
        if let Some(t) = self.target {
            if self.ipv6 && !t.is_ipv6() {
                return Err(invalid(format!(
                    "--ipv6 conflicts with the IPv4 target --to {t}"
                )));
            }
        }
        if self.rcvbuf == Some(0) {
            return Err(invalid("--rcvbuf must be greater than zero"));
        }
        if self.sndbuf == Some(0) {
            return Err(invalid("--sndbuf must be greater than zero"));
        }
        if self.gso {
            gso::segments_per_send(self.payload_bytes, self.gso_segments).map_err(invalid)?;
        } else if let Some(n) = self.gso_segments {
            return Err(invalid(format!(
                "--gso-segments {n} needs --gso: it says how many datagrams each GSO send carries"
            )));
        }
        Ok(())
    }

    /// Datagrams per send: 1 without GSO. Call after [`UdpConfig::validate`].
    pub fn segments_per_send(&self) -> usize {
        if self.gso {
            gso::segments_per_send(self.payload_bytes, self.gso_segments).unwrap_or(1)
        } else {
            1
        }
    }

    /// The requested total packet rate, if paced.
    pub fn requested_pps(&self) -> Option<f64> {
        match (self.rate, self.interval_ns) {
            (Some(r), _) => Some(r.packets_per_second(self.payload_bytes)),
            (None, Some(i)) => Some(1e9 / i),
            (None, None) => None,
        }
    }
}

/// A snapshot of a running UDP load, for the once-a-second line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    pub elapsed_s: f64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Received by the in-process receiver so far; 0 with a remote receiver (known at the end).
    pub rx_packets: u64,
    pub rx_bytes: u64,
    /// Gaps in the sequence numbers seen so far (late arrivals may still fill them).
    pub lost_so_far: u64,
    /// Datagrams the receive socket dropped so far (SO_RXQ_OVFL).
    pub socket_drops: u64,
}

/// What a UDP run measured.
#[derive(Debug, Clone)]
pub struct UdpOutcome {
    /// Everything the load engine knows; machine-wide kernel counters are for the caller to add
    /// (then it should recompute `unexplained_packets`).
    pub results: Results,
    /// The port the receiver listened on (the in-process one, or the target's).
    pub receiver_port: u16,
    /// The receive buffer the kernel granted the in-process receiver; `None` with a remote one.
    pub rcvbuf_granted: Option<usize>,
    /// False when a remote receiver never answered the `Fin`: then every `rx_*`, loss and
    /// unexplained figure in `results` is unknown (left at 0, and a note says so).
    pub receiver_reported: bool,
    /// Datagrams the in-process receiver saw that were not this run's.
    pub foreign_packets: u64,
    /// Datagrams sent per flow, by flow id.
    pub sent_per_flow: Vec<u64>,
}

/// Runs a UDP load to its end (duration, count, or `stop`), calling `on_progress` about once
/// a second from the calling thread. `stop` is honoured within about 100 ms, and the results
/// so far are still returned.
pub fn run_udp(
    cfg: &UdpConfig,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<UdpOutcome, LoadError> {
    cfg.validate()?;
    let ipv6 = cfg.uses_ipv6();
    let mut notes: Vec<String> = threads::placement_note(cfg.rx_cpu, cfg.tx_cpu)
        .into_iter()
        .collect();

    let local_rx = local_receiver(cfg, ipv6, &mut notes)?;
    let target = match (&local_rx, cfg.target) {
        (Some((s, _)), _) => s
            .local_addr()
            .map_err(|e| LoadError::socket("getsockname", e))?,
        (None, Some(t)) => t,
        (None, None) => unreachable!("either a target or a local receiver"),
    };

    let flows = open_flows(cfg, target, ipv6)?;

    let requested_pps = cfg.requested_pps();
    let plans = plan_threads(cfg, flows, requested_pps);

    let tx_live: Vec<TxLive> = (0..plans.len()).map(|_| TxLive::default()).collect();
    let rx_live = RxLive::default();
    let rx_ctl = RxControl::default();
    let abort = AtomicBool::new(false);

    let (reports, rx_totals) = std::thread::scope(|scope| -> Result<_, LoadError> {
        let rx_handle = local_rx.as_ref().map(|(socket, grant)| {
            let (live, ctl) = (&rx_live, &rx_ctl);
            let flows = cfg.flows as usize;
            let slot = slot_len_for(Some(cfg.payload_bytes));
            let run_id = cfg.run_id;
            let strategy = strategy_for_rcvbuf(grant.granted);
            let gro = cfg.gro;
            let cpu = cfg.rx_cpu;
            threads::spawn_scoped(scope, "netceil-udp-rx".into(), move || {
                threads::place(cpu)?;
                let r = Receiver::for_run(socket, live, slot, run_id, flows, strategy);
                Ok(if gro { r.with_gro() } else { r }.run(ctl))
            })
        });
        let rx_handle = match rx_handle {
            Some(Ok(h)) => Some(h),
            Some(Err(e)) => {
                return Err(LoadError::Other(format!(
                    "cannot start receiver thread: {e}"
                )))
            }
            None => None,
        };
        let mut handles = Vec::new();
        for (i, plan) in plans.into_iter().enumerate() {
            let (live, abort) = (&tx_live[i], &abort);
            let cpu = cfg.tx_cpu;
            let h = threads::spawn_scoped(scope, format!("netceil-udp-tx{i}"), move || {
                threads::place(cpu)?;
                Ok(run_sender(plan, [stop, abort], live))
            });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    abort_all(abort, &rx_ctl);
                    return Err(LoadError::Other(format!("cannot start sender thread: {e}")));
                }
            }
        }

        // Progress from the calling thread until every sender is done.
        let start = now_ns();
        let mut ticks = ProgressTicks::new(start, u64::MAX);
        while !handles.iter().all(|h| h.is_finished()) {
            if ticks.due(now_ns()) {
                on_progress(&progress(start, cfg.payload_bytes, &tx_live, &rx_live));
            }
            sleep_until_ns(now_ns() + POLL_NS);
        }
        // The last interval, taken now and reported after the receiver is done, since a
        // report may wait for the caller's sampler.
        let last = ticks
            .last_due(now_ns())
            .then(|| progress(start, cfg.payload_bytes, &tx_live, &rx_live));
        let mut reports = Vec::new();
        let mut panicked = false;
        let mut unplaced = None;
        for h in handles {
            match h.join() {
                Ok(Ok(r)) => reports.push(r),
                Ok(Err(e)) => unplaced = unplaced.or(Some(e)),
                Err(_) => panicked = true,
            }
        }
        rx_ctl.drain.store(true, Ordering::Relaxed);
        let rx_totals = rx_handle.map(|h| h.join());
        if let Some(p) = last {
            on_progress(&p);
        }
        if panicked {
            return Err(LoadError::Other("a UDP sender thread panicked".into()));
        }
        let rx_totals = match rx_totals {
            Some(Ok(Ok(t))) => Some(t),
            Some(Ok(Err(e))) => return Err(e),
            Some(Err(_)) => {
                return Err(LoadError::Other("the UDP receiver thread panicked".into()))
            }
            None => None,
        };
        if let Some(e) = unplaced {
            return Err(e);
        }
        Ok((reports, rx_totals))
    })?;

    let receiver_side = match rx_totals {
        Some(t) => ReceiverSide::Local(t),
        None => match exchange_fin(&reports, cfg.run_id) {
            Some(r) => ReceiverSide::Remote(r),
            None => ReceiverSide::Unknown,
        },
    };
    Ok(build_outcome(
        cfg,
        requested_pps,
        &reports,
        receiver_side,
        target.port(),
        local_rx.map(|(_, g)| g.granted),
        notes,
    ))
}

/// The in-process receiver, bound on loopback, unless a remote one was named; `notes` say
/// the receive buffer granted and how the receiver reads.
fn local_receiver(
    cfg: &UdpConfig,
    ipv6: bool,
    notes: &mut Vec<String>,
) -> Result<Option<(UdpSocket, sockets::RcvbufGrant)>, LoadError> {
    Ok(match cfg.target {
        Some(_) => None,
        None => {
            let listen: SocketAddr = if ipv6 {
                "[::1]:0".parse().expect("static address")
            } else {
                "127.0.0.1:0".parse().expect("static address")
            };
            let request = RcvbufRequest {
                size: cfg.rcvbuf,
                force: cfg.rcvbuf_force,
                rmem_max: cfg.rmem_max,
            };
            let (socket, grant) = sockets::bind_receiver(listen, request, RX_TIMEOUT)?;
            if cfg.gro {
                sockets::enable_gro(&socket)?;
            }
            notes.push(grant.note.clone());
            notes.push(match strategy_for_rcvbuf(grant.granted) {
                RxStrategy::Coalesce { pause_ns } => format!(
                    "receiver reads in batches of up to {} with recvmmsg, pausing {} µs after a partial batch (fewer wake-ups for the sender's softirq)",
                    mmsg::BATCH,
                    pause_ns / 1000
                ),
                _ => format!(
                    "receiver reads in batches of up to {} with recvmmsg, blocking (receive buffer under {} KiB: no pauses)",
                    mmsg::BATCH,
                    receiver::COALESCE_MIN_RCVBUF / 1024
                ),
            });
            Some((socket, grant))
        }
    })
}

/// One connected socket per flow; the first checks that a datagram crosses the path MTU.
fn open_flows(
    cfg: &UdpConfig,
    target: SocketAddr,
    ipv6: bool,
) -> Result<Vec<FlowSocket>, LoadError> {
    let mut flows = Vec::with_capacity(cfg.flows as usize);
    for f in 0..cfg.flows {
        let socket = sockets::connect_sender(target, cfg.sndbuf).map_err(|e| match e {
            LoadError::Socket { source, .. } if source.raw_os_error() == Some(libc::EMFILE) => {
                invalid(format!(
                    "--flows {}: cannot open socket {} ({source}); raise the open-file limit (ulimit -n) or use fewer flows",
                    cfg.flows,
                    f + 1
                ))
            }
            e => e,
        })?;
        if f == 0 {
            check_path_mtu(&socket, cfg.payload_bytes, ipv6, target)?;
        }
        if cfg.gso {
            sockets::check_gso(&socket, cfg.payload_bytes)?;
        }
        flows.push(FlowSocket {
            flow: f as u16,
            socket,
            sent: 0,
        });
    }
    Ok(flows)
}

/// Ends every thread already started when the run cannot go on (the caller's `stop` flag is
/// left alone).
fn abort_all(abort: &AtomicBool, rx: &RxControl) {
    abort.store(true, Ordering::Relaxed);
    rx.halt.store(true, Ordering::Relaxed);
}

/// The path MTU this machine knows towards `target` (a connected UDP socket asks the route;
/// nothing is sent), and the largest UDP payload that crosses it unfragmented.
pub fn path_mtu_towards(target: SocketAddr) -> std::io::Result<(usize, usize)> {
    let bind: SocketAddr = if target.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let s = UdpSocket::bind(bind)?;
    s.connect(target)?;
    let mtu = mmsg::path_mtu(s.as_fd(), target.is_ipv6())?;
    Ok((mtu, sockets::max_payload_for_mtu(mtu, target.is_ipv6())))
}

fn check_path_mtu(
    socket: &UdpSocket,
    payload: usize,
    ipv6: bool,
    target: SocketAddr,
) -> Result<(), LoadError> {
    let mtu = mmsg::path_mtu(socket.as_fd(), ipv6)
        .map_err(|e| LoadError::socket(format!("getsockopt IP_MTU towards {target}"), e))?;
    let max = sockets::max_payload_for_mtu(mtu, ipv6);
    if payload > max {
        return Err(invalid(format!(
            "--size {payload} does not fit the path MTU {mtu} towards {target}: the largest payload is {max} bytes (netceil never fragments)"
        )));
    }
    Ok(())
}

/// Deals flows, rate and count out to the sender threads. Thread `t` gets flows `t, t+T, …` and
/// a share of rate and count in proportion to its flows; thread starts are staggered by one
/// global packet interval so their datagrams interleave instead of leaving together.
fn plan_threads(
    cfg: &UdpConfig,
    flows: Vec<FlowSocket>,
    requested_pps: Option<f64>,
) -> Vec<SenderPlan> {
    let threads = cfg.threads as usize;
    let mut per_thread: Vec<Vec<FlowSocket>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, f) in flows.into_iter().enumerate() {
        per_thread[i % threads].push(f);
    }
    let total_flows = f64::from(cfg.flows);
    let global_interval = requested_pps.map(|pps| 1e9 / pps);
    // Let the threads get going before the schedule starts, so the first slots are not late.
    let start_ns = now_ns() + 2_000_000;
    let deadline_ns = start_ns + cfg.duration.as_nanos().min(u128::from(u64::MAX / 2)) as u64;
    let mut count_left = cfg.count;
    let mut flows_left = cfg.flows as u64;
    per_thread
        .into_iter()
        .enumerate()
        .map(|(t, flows)| {
            let share = flows.len() as f64 / total_flows;
            // Exact integer split of the count: each thread takes its share of what is left.
            let count = count_left.map(|left| {
                let mine = left * flows.len() as u64 / flows_left;
                count_left = Some(left - mine);
                mine
            });
            flows_left -= flows.len() as u64;
            SenderPlan {
                flows,
                packet_interval_ns: requested_pps.map(|pps| 1e9 / (pps * share)),
                pacing: cfg.pacing,
                burst: cfg.burst,
                count,
                start_ns: start_ns + global_interval.map_or(0, |g| (g * t as f64) as u64),
                deadline_ns,
                payload_bytes: cfg.payload_bytes,
                run_id: cfg.run_id,
                gso_segments: cfg.segments_per_send(),
            }
        })
        .collect()
}

fn progress(start: u64, payload: usize, tx: &[TxLive], rx: &RxLive) -> Progress {
    let tx_packets: u64 = tx.iter().map(|t| t.packets.load(Ordering::Relaxed)).sum();
    Progress {
        elapsed_s: (now_ns() - start) as f64 / 1e9,
        tx_packets,
        tx_bytes: tx_packets * payload as u64,
        rx_packets: rx.packets.load(Ordering::Relaxed),
        rx_bytes: rx.bytes.load(Ordering::Relaxed),
        lost_so_far: rx.lost_so_far.load(Ordering::Relaxed),
        socket_drops: rx.socket_drops.load(Ordering::Relaxed),
    }
}

/// What a remote receiver reported, summed over flows.
#[derive(Debug, Default)]
struct RemoteTotals {
    received: u64,
    lost: u64,
    reordered: u64,
    duplicates: u64,
    socket_drops: u64,
    /// The receiving machine's kernel counter deltas, from the most complete report.
    kernel: Option<FarKernel>,
    flows_answered: usize,
    flows_total: usize,
}

enum ReceiverSide {
    Local(RxTotals),
    Remote(RemoteTotals),
    Unknown,
}

/// Sends each flow's `Fin` (a few times, since it can be lost too) and collects the
/// `FinReport`s, waiting at most [`FIN_WAIT`]. `None` if no flow got an answer.
fn exchange_fin(reports: &[SenderReport], run_id: u16) -> Option<RemoteTotals> {
    let flows: Vec<&FlowSocket> = reports.iter().flat_map(|r| r.flows.iter()).collect();
    let mut answers: Vec<Option<FinReport>> = vec![None; flows.len()];
    let start = now_ns();
    let deadline = start + FIN_WAIT.as_nanos() as u64;
    let resend_at = [0u64, 100_000_000, 300_000_000, 600_000_000];
    let mut next_resend = 0usize;
    let mut buf = vec![0u8; 65536];
    for f in &flows {
        // Non-blocking reads while we poll every flow's socket in turn.
        let _ = f.socket.set_nonblocking(true);
    }
    while now_ns() < deadline && answers.iter().any(Option::is_none) {
        if next_resend < resend_at.len() && now_ns() >= start + resend_at[next_resend] {
            next_resend += 1;
            for (f, a) in flows.iter().zip(&answers) {
                if a.is_none() {
                    // Padded to the longest report: a receiver that answers only what is
                    // at least as long as its answer (`netceil serve`) answers this one.
                    let mut msg = [0u8; Fin::PADDED_LEN];
                    Header {
                        kind: Kind::Fin,
                        run_id,
                        flow: f.flow,
                        seq: f.sent as u32,
                        ts_ns: now_ns(),
                    }
                    .write(&mut msg);
                    Fin {
                        sent_packets: f.sent,
                    }
                    .write(&mut msg[HEADER_LEN..]);
                    // A lost or refused Fin is retried; errors here are not results.
                    let _ = f.socket.send(&msg);
                }
            }
        }
        let mut got_any = false;
        for (f, a) in flows.iter().zip(answers.iter_mut()) {
            while let Ok(n) = f.socket.recv(&mut buf) {
                got_any = true;
                let Some(h) = Header::read(&buf[..n]) else {
                    continue;
                };
                if h.kind == Kind::FinReport && h.run_id == run_id && h.flow == f.flow {
                    *a = FinReport::read(&buf[HEADER_LEN..n]);
                }
            }
        }
        if !got_any {
            sleep_until_ns(now_ns() + 1_000_000);
        }
    }
    let mut t = RemoteTotals {
        flows_total: flows.len(),
        ..RemoteTotals::default()
    };
    for r in answers.iter().flatten() {
        t.received += r.received;
        t.lost += r.lost;
        t.reordered += r.reordered;
        t.duplicates += r.duplicates;
        // One receive socket for all flows: each report carries the same socket-wide count.
        t.socket_drops = t.socket_drops.max(r.socket_drops);
        // Every flow of a run shares the receiver's baseline; the report read last (the
        // largest interface count) covers the most of the run.
        if let Some(k) = &r.kernel {
            let count = |k: &FarKernel| k.iface_rx_packets.unwrap_or(0);
            if t.kernel.as_ref().is_none_or(|have| count(k) >= count(have)) {
                t.kernel = Some(k.clone());
            }
        }
        t.flows_answered += 1;
    }
    (t.flows_answered > 0).then_some(t)
}

fn opt_count(v: Option<u64>) -> String {
    v.map_or_else(|| "unread".to_string(), |v| v.to_string())
}

fn merged_gap_errors(reports: &[SenderReport]) -> Option<Histogram<u64>> {
    let mut iter = reports.iter().filter(|r| r.paced);
    let mut h = iter.next()?.gap_errors.clone();
    for r in iter {
        // Same bounds everywhere (built by Pacer), so adding cannot fail.
        let _ = h.add(&r.gap_errors);
    }
    (!h.is_empty()).then_some(h)
}

fn build_outcome(
    cfg: &UdpConfig,
    requested_pps: Option<f64>,
    reports: &[SenderReport],
    rx: ReceiverSide,
    receiver_port: u16,
    rcvbuf_granted: Option<usize>,
    mut notes: Vec<String>,
) -> UdpOutcome {
    let ipv6 = cfg.uses_ipv6();
    let payload = cfg.payload_bytes;
    let tx_packets: u64 = reports.iter().map(|r| r.packets).sum();
    let mut sent_per_flow = vec![0u64; cfg.flows as usize];
    for f in reports.iter().flat_map(|r| r.flows.iter()) {
        sent_per_flow[usize::from(f.flow)] = f.sent;
    }
    // From the first thread's scheduled start to the last thread's end.
    let first_start = reports.iter().map(|r| r.start_ns).min().unwrap_or(0);
    let last_end = reports.iter().map(|r| r.end_ns).max().unwrap_or(0);
    let duration_s = last_end.saturating_sub(first_start) as f64 / 1e9;
    let per_s = |x: f64| {
        if duration_s > 0.0 {
            x / duration_s
        } else {
            0.0
        }
    };

    let mut results = Results {
        duration_s,
        payload_bytes: Some(payload),
        frame_bytes: Some(udp_payload_to_frame(payload, ipv6)),
        tx_packets,
        tx_bytes: tx_packets * payload as u64,
        tx_pps: per_s(tx_packets as f64),
        tx_bits_per_s: per_s(tx_packets as f64 * payload as f64 * 8.0),
        requested_pps,
        ..Results::default()
    };
    results.rcvbuf_bytes = rcvbuf_granted.map(|g| g as u64);
    offload_notes(cfg, reports, &rx, &mut notes);

    let (receiver_reported, foreign_packets) = match rx {
        ReceiverSide::Local(t) => (
            true,
            local_receiver_figures(&mut results, &t, &sent_per_flow, &mut notes),
        ),
        ReceiverSide::Remote(r) => {
            remote_receiver_figures(&mut results, &r, payload, &mut notes);
            (true, 0)
        }
        ReceiverSide::Unknown => {
            notes.push(format!(
                "the receiver never answered the Fin within {} s: received, lost and unexplained are unknown (left at 0)",
                FIN_WAIT.as_secs_f64()
            ));
            (false, 0)
        }
    };
    results.rx_app_pps = per_s(results.rx_app_packets as f64);
    results.rx_app_bits_per_s = per_s(results.rx_app_bytes as f64 * 8.0);
    if receiver_reported {
        results.unexplained_packets = tx_packets as i64
            - results.rx_app_packets as i64
            - results.kernel.socket_drops.unwrap_or(0) as i64
            - results.in_flight_packets as i64;
    }

    results.generator = generator_stats(cfg, reports, duration_s, requested_pps);
    generator_notes(cfg, reports, &mut results, tx_packets, &mut notes);
    results.notes = notes;
    UdpOutcome {
        results,
        receiver_port,
        rcvbuf_granted,
        receiver_reported,
        foreign_packets,
        sent_per_flow,
    }
}

/// What GSO and GRO changed in what was measured: datagrams per send, and per read.
fn offload_notes(
    cfg: &UdpConfig,
    reports: &[SenderReport],
    rx: &ReceiverSide,
    notes: &mut Vec<String>,
) {
    let payload = cfg.payload_bytes;
    if cfg.gso {
        let segs = cfg.segments_per_send();
        let sends: u64 = reports.iter().map(|r| r.sends).sum();
        let dgrams: u64 = reports.iter().map(|r| r.packets).sum();
        notes.push(format!(
            "GSO CHANGES WHAT IS MEASURED: each send handed the kernel up to {segs} datagrams ({} bytes), which it cut into {payload}-byte datagrams (UDP_SEGMENT); {dgrams} datagrams went out in {sends} sends ({:.1} per send). The cost of one send per datagram is not measured; each datagram still carries its own header and is counted alone. Interface packet counters count a send once where the kernel did not cut it before them (loopback)",
            segs * payload,
            dgrams as f64 / sends.max(1) as f64
        ));
    }
    if !cfg.gro {
        return;
    }
    if let ReceiverSide::Local(RxTotals {
        socket_drops: Some(d @ 1..),
        ..
    }) = rx
    {
        notes.push(format!(
            "with GRO the socket's drop counter counts the buffers it dropped, and a buffer can hold many coalesced datagrams: its {d} is not a datagram count, so the datagrams of those buffers beyond one each show as unexplained; loss counted by sequence number is exact"
        ));
    }
    match rx {
        ReceiverSide::Local(t) if t.gro_reads > 0 => notes.push(format!(
            "GRO CHANGES WHAT IS MEASURED: the receiver read with UDP_GRO on; {} reads held {} datagrams coalesced by the kernel ({:.1} per read), cut apart by their segment size and counted one by one. The cost of one read per datagram is not measured",
            t.gro_reads,
            t.gro_datagrams,
            t.gro_datagrams as f64 / t.gro_reads as f64
        )),
        ReceiverSide::Local(_) => notes.push(
            "GRO was on at the receiver (UDP_GRO), but no read held more than one datagram: the kernel coalesced nothing (on loopback only GSO sends arrive coalesced), so this run measured one read per datagram"
                .into(),
        ),
        _ => notes.push(
            "--gro is for the receiving socket, the far end's here: only `netceil serve` is asked for it, and its grant says whether it could"
                .into(),
        ),
    }
}

/// The receiver's figures from the in-process receiver's totals (each flow's received, lost,
/// reordered and duplicate datagrams against what was sent on it). Returns how many
/// datagrams it read that were not this run's.
fn local_receiver_figures(
    results: &mut Results,
    t: &RxTotals,
    sent_per_flow: &[u64],
    notes: &mut Vec<String>,
) -> u64 {
    let mut rx_packets = 0u64;
    let mut rx_bytes = 0u64;
    let mut in_flight = 0u64;
    let mut beyond_window = 0u64;
    for f in &t.flows {
        let c = f.tracker.counts();
        let sent = sent_per_flow[usize::from(f.flow)];
        rx_packets += c.unique - f.in_flight;
        rx_bytes += f.bytes;
        in_flight += f.in_flight;
        results.lost_packets += f.tracker.lost(Some(sent));
        results.reordered_packets += c.reordered;
        results.duplicate_packets += c.duplicates;
        beyond_window += c.beyond_window;
    }
    results.rx_app_packets = rx_packets;
    results.rx_app_bytes = rx_bytes;
    results.in_flight_packets = in_flight;
    results.kernel.socket_drops = t.socket_drops;
    let foreign_packets = t.foreign + t.truncated;
    if foreign_packets > 0 {
        notes.push(format!(
            "the receiver also read {} datagrams that were not this run's ({} truncated); they are not counted as received",
            foreign_packets, t.truncated
        ));
    }
    if beyond_window > 0 {
        notes.push(format!(
            "{beyond_window} datagrams arrived more than {} sequence numbers late: counted as received and reordered without a duplicate check",
            seq::WINDOW
        ));
    }
    if t.drain_cut_short {
        notes.push(format!(
            "datagrams were still arriving 1 s after the senders finished; the {in_flight} read after that are reported as in flight"
        ));
    } else {
        notes.push(
            "in flight is measured: the receiver read until its socket stayed empty for 30 ms after the senders finished"
                .into(),
        );
    }
    if t.errors > 0 {
        notes.push(format!(
            "receiver errors: {} (last: {})",
            t.errors,
            t.last_error.as_deref().unwrap_or("?")
        ));
    }
    foreign_packets
}

/// The receiver's figures from a remote receiver's FinReports, with its kernel counters.
fn remote_receiver_figures(
    results: &mut Results,
    r: &RemoteTotals,
    payload: usize,
    notes: &mut Vec<String>,
) {
    results.rx_app_packets = r.received;
    results.rx_app_bytes = r.received * payload as u64;
    results.lost_packets = r.lost;
    results.reordered_packets = r.reordered;
    results.duplicate_packets = r.duplicates;
    results.kernel.socket_drops = Some(r.socket_drops);
    match &r.kernel {
        Some(k) => {
            results.kernel.iface = k.iface.clone();
            results.kernel.iface_rx_packets = k.iface_rx_packets;
            results.kernel.backlog_drops = k.backlog_drops;
            results.kernel.udp_rcvbuf_errors = k.udp_rcvbuf_errors;
            results.kernel.udp_in_errors = k.udp_in_errors;
            results.rx_kernel_packets = k.iface_rx_packets;
            notes.push(format!(
                "the receiving machine's kernel counters come from its FinReport, from the run's start to its Fin (a netceil serve reads them before it grants the run, a netceil recv at the run's first datagram): interface {} received {} packets (all its traffic, not only this run's); softnet backlog drops {}, Udp RcvbufErrors {}, InErrors {} (its network namespace)",
                k.iface.as_deref().unwrap_or("?"),
                opt_count(k.iface_rx_packets),
                opt_count(k.backlog_drops),
                opt_count(k.udp_rcvbuf_errors),
                opt_count(k.udp_in_errors),
            ));
        }
        None => notes.push(
            "the receiver sent no kernel counters (a netceil recv that predates them, or one that could not read /proc): its interface, backlog and UDP error counters are not checked"
                .into(),
        ),
    }
    notes.push(format!(
        "receiver figures come from the remote receiver's FinReport ({} of {} flows answered); rx bytes = received × payload; in flight is 0 because each flow's Fin is read after its data",
        r.flows_answered, r.flows_total
    ));
    if r.flows_answered < r.flows_total {
        notes.push(format!(
            "{} flows got no FinReport: their datagrams count as unexplained",
            r.flows_total - r.flows_answered
        ));
    }
}

/// What the generator did: its busy-wait, whether it kept up with the request, why it
/// stopped and its failed sends.
fn generator_notes(
    cfg: &UdpConfig,
    reports: &[SenderReport],
    results: &mut Results,
    tx_packets: u64,
    notes: &mut Vec<String>,
) {
    if results.generator.pacing == Some(PacingMode::Spin) {
        let wall: u64 = reports.iter().map(|r| r.spin_wall_ns).sum();
        notes.push(format!(
            "sender CPU {:.3} s = {:.3} s busy-waiting + {:.3} s working (thread CPU clocks; busy-wait read around each spin). Wall time spent spinning: {:.3} s, more than its CPU when the spinning thread was preempted",
            results.generator.cpu_s,
            results.generator.spin_cpu_s,
            results.generator.work_cpu_s,
            wall as f64 / 1e9
        ));
    }
    let achieved = results.tx_pps;
    match results.requested_pps {
        Some(req) => {
            results.generator_limited = achieved < 0.99 * req;
            notes.push(if results.generator_limited {
                format!(
                    "THE GENERATOR WAS THE LIMIT: it sent {achieved:.0} pps of the {req:.0} requested ({:.1} %), so the system under test was not pushed to the requested rate",
                    100.0 * achieved / req
                )
            } else {
                format!(
                    "the generator kept up: {achieved:.0} pps sent of {req:.0} requested ({:.2} %)",
                    100.0 * achieved / req
                )
            });
        }
        None => notes.push(format!(
            "unpaced: the sender went as fast as it could ({achieved:.0} pps); generator_limited applies only to paced runs"
        )),
    }
    let stopped: Vec<StopReason> = reports.iter().map(|r| r.stopped_by).collect();
    if stopped.contains(&StopReason::Interrupted) {
        notes.push("interrupted: figures cover the run up to the stop".into());
    } else if stopped.iter().all(|s| *s == StopReason::Count) {
        notes.push(format!(
            "stopped at --count {}",
            cfg.count.unwrap_or(tx_packets)
        ));
    }
    if let Some(e) = reports.iter().find_map(|r| r.last_error.as_ref()) {
        notes.push(format!(
            "{} send calls failed (counted, not fatal); last error: {e}",
            results.generator.send_errors
        ));
    }
}

fn generator_stats(
    cfg: &UdpConfig,
    reports: &[SenderReport],
    duration_s: f64,
    requested_pps: Option<f64>,
) -> GeneratorStats {
    let cpu_ns: u64 = reports.iter().map(|r| r.cpu_ns).sum();
    let spin_ns: u64 = reports
        .iter()
        .map(|r| r.spin_cpu_ns)
        .sum::<u64>()
        .min(cpu_ns);
    let gaps = merged_gap_errors(reports);
    let tx: u64 = reports.iter().map(|r| r.packets).sum();
    GeneratorStats {
        pacing: Some(if requested_pps.is_some() {
            cfg.pacing
        } else {
            PacingMode::None
        }),
        achieved_ratio: requested_pps
            .filter(|_| duration_s > 0.0)
            .map(|req| tx as f64 / duration_s / req),
        cpu_s: cpu_ns as f64 / 1e9,
        spin_cpu_s: spin_ns as f64 / 1e9,
        work_cpu_s: (cpu_ns - spin_ns) as f64 / 1e9,
        cpu_pct: if duration_s > 0.0 {
            100.0 * cpu_ns as f64 / 1e9 / duration_s
        } else {
            0.0
        },
        send_gap_error_median_us: gaps.as_ref().map(|h| h.value_at_quantile(0.5) as f64 / 1e3),
        send_gap_error_p99_us: gaps
            .as_ref()
            .map(|h| h.value_at_quantile(0.99) as f64 / 1e3),
        late_sends: reports.iter().map(|r| r.late_bursts).sum(),
        send_errors: reports.iter().map(|r| r.send_errors).sum(),
    }
}

/// Live figures of a standalone receiver.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServeProgress {
    pub elapsed_s: f64,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub lost_so_far: u64,
    pub socket_drops: u64,
}

/// One flow as a standalone receiver counted it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeFlow {
    pub source: SocketAddr,
    pub run_id: u16,
    pub flow: u16,
    /// Distinct datagrams received.
    pub received: u64,
    /// Their payload bytes.
    pub bytes: u64,
    /// From the sender's count in its `Fin` when one came, else from the highest sequence seen.
    pub lost: u64,
    pub reordered: u64,
    pub duplicates: u64,
    /// The sender's own count, from its `Fin`.
    pub sender_count: Option<u64>,
}

/// What a standalone receiver counted over its life.
#[derive(Debug, Clone)]
pub struct ServeReport {
    pub local_addr: SocketAddr,
    pub duration_s: f64,
    pub rcvbuf_granted: usize,
    pub flows: Vec<ServeFlow>,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub lost: u64,
    pub reordered: u64,
    pub duplicates: u64,
    /// Datagrams not from netceil (bad magic, version or kind) or too long for the buffer.
    pub foreign_packets: u64,
    pub requests_echoed: u64,
    pub fin_reports_sent: u64,
    /// With an [`Admit`]: datagrams from other hosts or runs, and unpadded Fins; never answered.
    pub stray_packets: u64,
    pub stray_bytes: u64,
    /// Datagrams of flows beyond the first 16384 (the receiver's tracking limit): not counted.
    pub untracked_packets: u64,
    /// With UDP GRO: reads that held more than one datagram, and the datagrams they held.
    pub gro_reads: u64,
    pub gro_datagrams: u64,
    /// The socket's drop total (SO_MEMINFO / SO_RXQ_OVFL); `None` if the kernel would not say.
    pub socket_drops: Option<u64>,
    pub notes: Vec<String>,
}

/// A standalone UDP receiver running in its own thread: counts every flow by (source address,
/// run id, flow id), answers `Fin` with `FinReport`, echoes `Request` as `Response`.
///
/// The request/response client uses it as its far end; [`serve_udp`] wraps it for `netceil recv`.
pub struct UdpReceiver {
    local_addr: SocketAddr,
    grant_note: String,
    rcvbuf_granted: usize,
    live: Arc<RxLive>,
    ctl: Arc<RxControl>,
    handle: Option<JoinHandle<RxTotals>>,
    started_ns: u64,
    /// `None`: GRO not asked; `Some(Ok)`: on; `Some(Err(why))`: the kernel refused it.
    gro: Option<Result<(), String>>,
}

impl UdpReceiver {
    /// Binds `listen` (port 0 for any) and starts receiving.
    pub fn spawn(
        listen: SocketAddr,
        rcvbuf: Option<usize>,
        rcvbuf_force: bool,
    ) -> Result<UdpReceiver, LoadError> {
        Self::spawn_with(listen, rcvbuf, rcvbuf_force, None)
    }

    /// A receive buffer request of `size`, forced or not, where net.core.rmem_max is not
    /// known (the note on the buffer does not give it).
    fn unknown_max(size: Option<usize>, force: bool) -> RcvbufRequest {
        RcvbufRequest {
            size,
            force,
            rmem_max: None,
        }
    }

    /// As [`UdpReceiver::spawn`], with FinReports that carry the machine's kernel counters
    /// read by `kernel_probe`.
    pub fn spawn_with(
        listen: SocketAddr,
        rcvbuf: Option<usize>,
        rcvbuf_force: bool,
        kernel_probe: Option<KernelProbe>,
    ) -> Result<UdpReceiver, LoadError> {
        Self::spawn_admitting(
            listen,
            Self::unknown_max(rcvbuf, rcvbuf_force),
            kernel_probe,
            None,
            None,
            false,
        )
    }

    /// As [`UdpReceiver::spawn_with`], counting and answering only `admit`'s host and run
    /// (`netceil serve`): every other datagram is a stray, counted and never answered.
    ///
    /// `train_payload`: for a UDP train of this payload (no requests to echo), receive as an
    /// in-process run does, in batches sized for the payload and without a wake-up per
    /// datagram; `None` answers each datagram as soon as it arrives (request/response).
    ///
    /// `gro`: for a train, read with UDP GRO if the kernel takes it ([`UdpReceiver::gro`]
    /// says whether it did); ignored without `train_payload`.
    pub fn spawn_admitting(
        listen: SocketAddr,
        rcvbuf: RcvbufRequest,
        kernel_probe: Option<KernelProbe>,
        admit: Option<Admit>,
        train_payload: Option<usize>,
        gro: bool,
    ) -> Result<UdpReceiver, LoadError> {
        let (socket, grant) = sockets::bind_receiver(listen, rcvbuf, RX_TIMEOUT)?;
        let gro = (gro && train_payload.is_some())
            .then(|| sockets::enable_gro(&socket).map_err(|e| e.to_string()));
        let use_gro = matches!(gro, Some(Ok(())));
        let tuning =
            train_payload.map(|p| (slot_len_for(Some(p)), strategy_for_rcvbuf(grant.granted)));
        let local_addr = socket
            .local_addr()
            .map_err(|e| LoadError::socket("getsockname", e))?;
        let live = Arc::new(RxLive::default());
        let ctl = Arc::new(RxControl::default());
        let (l, c) = (live.clone(), ctl.clone());
        // Read on this thread, so it is taken before the caller grants the test.
        let kernel_before = admit
            .zip(kernel_probe.as_ref())
            .map(|(a, probe)| probe(SocketAddr::new(a.peer, 0)));
        let handle = threads::spawn("netceil-udp-serve".into(), move || {
            let slot = tuning.map_or(slot_len_for(None), |t| t.0);
            let r = Receiver::for_serve(&socket, &l, slot, kernel_probe)
                .admitting(admit, kernel_before);
            let r = if use_gro { r.with_gro() } else { r };
            match tuning {
                Some((_, strategy)) => r.with_strategy(strategy).run(&c),
                None => r.run(&c),
            }
        })
        .map_err(|e| LoadError::Other(format!("cannot start receiver thread: {e}")))?;
        Ok(UdpReceiver {
            local_addr,
            grant_note: grant.note,
            rcvbuf_granted: grant.granted,
            live,
            ctl,
            handle: Some(handle),
            started_ns: now_ns(),
            gro,
        })
    }

    /// Whether this receiver reads with UDP GRO: `None` if not asked, `Some(Err(why))` if
    /// the kernel refused it (the receiver then reads one datagram per message).
    pub fn gro(&self) -> Option<Result<(), String>> {
        self.gro.clone()
    }

    /// The bound address (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Figures so far.
    pub fn progress(&self) -> ServeProgress {
        ServeProgress {
            elapsed_s: (now_ns() - self.started_ns) as f64 / 1e9,
            rx_packets: self.live.packets.load(Ordering::Relaxed),
            rx_bytes: self.live.bytes.load(Ordering::Relaxed),
            lost_so_far: self.live.lost_so_far.load(Ordering::Relaxed),
            socket_drops: self.live.socket_drops.load(Ordering::Relaxed),
        }
    }

    /// Reads what is still queued (until the socket is idle briefly, at most 1 s), stops, and
    /// returns the totals.
    pub fn stop(mut self) -> Result<ServeReport, LoadError> {
        self.ctl.drain.store(true, Ordering::Relaxed);
        let totals = self
            .handle
            .take()
            .expect("handle present until stop")
            .join()
            .map_err(|_| LoadError::Other("the UDP receiver thread panicked".into()))?;
        Ok(self.report(totals))
    }

    fn report(&self, t: RxTotals) -> ServeReport {
        let flows: Vec<ServeFlow> = t
            .flows
            .iter()
            .map(|f| {
                let c = f.tracker.counts();
                ServeFlow {
                    source: f.source.unwrap_or(self.local_addr),
                    run_id: f.run_id,
                    flow: f.flow,
                    received: c.unique,
                    bytes: f.bytes,
                    lost: f.tracker.lost(f.sender_count),
                    reordered: c.reordered,
                    duplicates: c.duplicates,
                    sender_count: f.sender_count,
                }
            })
            .collect();
        let mut notes = vec![self.grant_note.clone()];
        if flows.iter().any(|f| f.sender_count.is_none()) {
            notes.push(
                "flows without a Fin count loss up to their highest sequence number only (tail loss unseen)"
                    .into(),
            );
        }
        if t.errors > 0 {
            notes.push(format!(
                "receiver errors: {} (last: {})",
                t.errors,
                t.last_error.as_deref().unwrap_or("?")
            ));
        }
        if t.untracked > 0 {
            notes.push(format!(
                "{} datagrams belonged to flows beyond the first {} and were not tracked",
                t.untracked,
                receiver::SERVE_MAX_FLOWS
            ));
        }
        ServeReport {
            local_addr: self.local_addr,
            duration_s: (now_ns() - self.started_ns) as f64 / 1e9,
            rcvbuf_granted: self.rcvbuf_granted,
            rx_packets: flows.iter().map(|f| f.received).sum(),
            rx_bytes: flows.iter().map(|f| f.bytes).sum(),
            lost: flows.iter().map(|f| f.lost).sum(),
            reordered: flows.iter().map(|f| f.reordered).sum(),
            duplicates: flows.iter().map(|f| f.duplicates).sum(),
            flows,
            foreign_packets: t.foreign + t.truncated,
            requests_echoed: t.requests_echoed,
            fin_reports_sent: t.fin_reports_sent,
            stray_packets: t.stray,
            stray_bytes: t.stray_bytes,
            untracked_packets: t.untracked,
            gro_reads: t.gro_reads,
            gro_datagrams: t.gro_datagrams,
            socket_drops: t.socket_drops,
            notes,
        }
    }
}

impl Drop for UdpReceiver {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            self.ctl.halt.store(true, Ordering::Relaxed);
            let _ = h.join();
        }
    }
}

/// The standalone receiver of `netceil recv`: listens on `listen` until `stop` or `duration`,
/// calling `on_progress` about once a second, and returns what it counted.
pub fn serve_udp(
    listen: SocketAddr,
    rcvbuf: Option<usize>,
    rcvbuf_force: bool,
    stop: &AtomicBool,
    duration: Option<Duration>,
    kernel_probe: Option<KernelProbe>,
    on_progress: &mut dyn FnMut(&ServeProgress),
) -> Result<ServeReport, LoadError> {
    let rx = UdpReceiver::spawn_with(listen, rcvbuf, rcvbuf_force, kernel_probe)?;
    let start = now_ns();
    let end = duration.map(|d| start + d.as_nanos().min(u128::from(u64::MAX / 2)) as u64);
    let mut ticks = ProgressTicks::new(start, u64::MAX);
    while !stop.load(Ordering::Relaxed) && end.is_none_or(|e| now_ns() < e) {
        let now = now_ns();
        if ticks.due(now) {
            on_progress(&rx.progress());
        }
        let wake = (now + POLL_NS).min(end.unwrap_or(u64::MAX));
        sleep_until_ns(wake);
    }
    rx.stop()
}
