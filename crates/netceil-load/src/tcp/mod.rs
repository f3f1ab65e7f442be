//! TCP streams: one to thousands of flows, optionally paced per flow, with goodput counted by
//! the receiver and retransmits/RTT from TCP_INFO.
//!
//! Flows are dealt round-robin to a few sender threads, each an epoll loop (`tcp/sender.rs`),
//! so a thousand slow flows cost a thousand sockets, not a thousand threads. Without a target,
//! an in-process receiver (`tcp/server.rs`) listens on loopback; with one, the far end is
//! `netceil recv` ([`serve_tcp`]), which speaks the same small protocol (`tcp/hello.rs`): a
//! hello that picks sink or echo, and after the sender's half-close, the receiver's byte count.
//! Goodput is therefore always what the receiving application read, even on another host.
//!
//! # Pacing
//! With `rate_per_flow_bps`, each flow is held to that rate in one of two ways:
//! - **Application**: the sender writes chunks on an absolute schedule (chunk = 10 ms of data,
//!   at least 1 KiB, at most `msg_size`). Exact on average on any path; bursts are one chunk.
//! - **Kernel**: SO_MAX_PACING_RATE on each socket (TCP's internal pacing when the qdisc is not
//!   fq), with TCP_NOTSENT_LOWAT at one chunk so the application cannot queue seconds of data
//!   ahead of the pacer; the sender writes greedily.
//!
//! `Auto` picks application pacing, by measurement. On loopback (Linux 6.18, qdisc noqueue,
//! BBR, MTU 64 KiB), kernel pacing let each flow start with an unpaced burst of 200–300 KB:
//! 200 flows asked for 1 Mbit/s for 2 s did 1.6–1.9 Mbit/s each, 50 flows over 8 s
//! 1.21–1.29 Mbit/s, 2 × 50 Mbit/s for 0.5 s 54–55 Mbit/s; a single 100 Mbit/s flow was 0.7 %
//! fast and a 1 Gbit/s one on target. Application pacing held 0.997–1.000 of the request in all
//! of these. `Kernel` stays available for paths where packet-level smoothness matters more than
//! the exact average (fq on a real NIC).

mod evloop;
pub(crate) mod hello;
pub mod rcvbuf;
mod receiver;
mod reverse;
pub mod rrul;
mod sender;
mod server;
pub mod wakes;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use netceil_model::{FlowResult, GeneratorStats, PacingMode, Results, TcpDirection, TcpPacing};

pub(crate) use evloop::EventLoop;
pub use rcvbuf::RecvBuffer;
pub use server::{serve_tcp, TcpServeReport, TcpTestServer};
pub(crate) use server::{Server, Sinks};
pub use wakes::SinkWakes;

use crate::clock::{now_ns, ProgressTicks};
use crate::tcpinfo::{set_max_pacing_rate, tcp_info};
use crate::threads;
use crate::LoadError;

/// Default write size, as iperf3's `-l` for TCP.
pub const DEFAULT_MSG_SIZE: usize = 128 * 1024;
/// Largest write size accepted.
pub const MAX_MSG_SIZE: usize = 64 * 1024 * 1024;
/// Most flows in one run: flow ids travel as 16 bits in the hello.
pub const MAX_FLOWS: u32 = 65_535;
/// A paced flow writes about this much time's worth of data at once.
const PACED_CHUNK_NS: f64 = 10_000_000.0;
/// Smallest paced write (unless `msg_size` is smaller): keeps slow flows from costing a
/// syscall per few bytes.
const MIN_PACED_CHUNK: usize = 1024;
/// Paced flows that achieve less than this share of the request are reported short.
const ACHIEVED_OK: f64 = 0.99;

/// Where per-flow pacing should happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TcpPacingChoice {
    /// Application pacing: the measured better choice on loopback (see the module docs).
    #[default]
    Auto,
    /// SO_MAX_PACING_RATE: the kernel paces; fails if the socket option is refused.
    Kernel,
    /// The sender writes on a schedule.
    Application,
}

/// A TCP stream workload.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpConfig {
    /// Connections, 1 to [`MAX_FLOWS`] (`--flows`).
    pub flows: u32,
    /// Bytes per write, 1 B to 64 MiB (`--msg-size`); for paced flows, the largest write.
    pub msg_size: usize,
    /// Per-flow rate in bit/s (`--rate-per-flow`); `None` = as fast as possible.
    pub rate_per_flow_bps: Option<f64>,
    pub duration: Duration,
    /// Sender threads; 0 = one per CPU, never more than flows. The in-process receiver uses
    /// as many.
    pub threads: u32,
    /// Use `::1` for the in-process receiver (must match `target`'s family if given).
    pub ipv6: bool,
    /// A remote `netceil recv`; `None` = in-process receiver on loopback.
    pub target: Option<SocketAddr>,
    pub pacing: TcpPacingChoice,
    /// TCP_NODELAY on the sending sockets.
    pub nodelay: bool,
    /// The CPU every in-process receiver thread is placed on (`--rx-cpu`); `None` leaves
    /// them to the scheduler.
    pub rx_cpu: Option<usize>,
    /// The CPU every sender thread is placed on (`--tx-cpu`); `None`: the scheduler's.
    pub tx_cpu: Option<usize>,
    /// The sending sockets' congestion control (TCP_CONGESTION); `None`: the kernel's default.
    pub congestion: Option<String>,
    /// Which way the data goes: this side sends (up), the far side sends (down, `-R`), or
    /// both at once (`--bidir`).
    pub direction: TcpDirection,
    /// How the receiving end sizes each stream's receive buffer (`--rcvbuf`); this side's
    /// receivers only: a far `netceil recv`/`serve` sizes its own.
    pub recv_buffer: RecvBuffer,
    /// How this side's sink streams wake their reader (`--sink-wakes`, see [`wakes`]); a far
    /// `netceil recv`/`serve` batches as its default.
    pub sink_wakes: SinkWakes,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            flows: 1,
            msg_size: DEFAULT_MSG_SIZE,
            rate_per_flow_bps: None,
            duration: Duration::from_secs(10),
            threads: 0,
            ipv6: false,
            target: None,
            pacing: TcpPacingChoice::Auto,
            nodelay: false,
            rx_cpu: None,
            tx_cpu: None,
            congestion: None,
            direction: TcpDirection::Up,
            recv_buffer: RecvBuffer::default(),
            sink_wakes: SinkWakes::default(),
        }
    }
}

impl TcpConfig {
    /// Checks the configuration; errors name the offending flag.
    pub fn validate(&self) -> Result<(), LoadError> {
        let bad = |m: String| Err(LoadError::InvalidConfig(m));
        if self.flows == 0 {
            return bad("--flows must be at least 1".into());
        }
        if self.flows > MAX_FLOWS {
            return bad(format!(
                "--flows {} is too many: at most {MAX_FLOWS} (flow ids are 16 bits)",
                self.flows
            ));
        }
        if self.msg_size == 0 || self.msg_size > MAX_MSG_SIZE {
            return bad(format!(
                "--msg-size must be between 1 B and 64 MiB, got {} B",
                self.msg_size
            ));
        }
        if let Some(r) = self.rate_per_flow_bps {
            if !(r.is_finite() && r > 0.0) {
                return bad(format!(
                    "--rate-per-flow must be a positive rate, got {r} bit/s"
                ));
            }
        }
        if self.duration.is_zero() {
            return bad("--duration must be longer than 0 s".into());
        }
        check_family(self.ipv6, self.target)?;
        threads::check_placement(self.rx_cpu, self.tx_cpu, self.target.is_some())?;
        if self.direction == TcpDirection::Down {
            // --rate-per-flow goes to the far side in the hello; these set this side's sockets.
            let this_side = if self.congestion.is_some() {
                Some("--congestion")
            } else if self.pacing == TcpPacingChoice::Kernel {
                Some("kernel pacing")
            } else {
                None
            };
            if let Some(flag) = this_side {
                return bad(format!(
                    "{flag} sets the sockets this side sends on; with -R/--reverse the far side \
                     sends (use --bidir to send both ways)"
                ));
            }
        }
        if self.direction == TcpDirection::Both && self.flows > MAX_FLOWS / 2 {
            return bad(format!(
                "--flows {} with --bidir is too many: at most {} per direction",
                self.flows,
                MAX_FLOWS / 2
            ));
        }
        if self.rate_per_flow_bps.is_none() && self.pacing != TcpPacingChoice::Auto {
            return bad(format!(
                "{:?} pacing needs --rate-per-flow: without a rate there is nothing to pace",
                self.pacing
            ));
        }
        Ok(())
    }
}

/// `--ipv6` and a target of the other family conflict.
pub(crate) fn check_family(ipv6: bool, target: Option<SocketAddr>) -> Result<(), LoadError> {
    match target {
        Some(t) if t.is_ipv6() != ipv6 => Err(LoadError::InvalidConfig(format!(
            "--ipv6 {} --to {t}: the target is an IPv{} address",
            if ipv6 {
                "conflicts with"
            } else {
                "is needed for"
            },
            if t.is_ipv6() { 6 } else { 4 }
        ))),
        _ => Ok(()),
    }
}

/// The loopback address of the chosen family, port 0 (the kernel picks).
pub(crate) fn loopback(ipv6: bool) -> SocketAddr {
    let ip = if ipv6 {
        IpAddr::V6(Ipv6Addr::LOCALHOST)
    } else {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    };
    SocketAddr::new(ip, 0)
}

/// Makes sure `needed` descriptors can be open: raises the soft RLIMIT_NOFILE towards the hard
/// limit (a process-wide change, as any server that needs many sockets makes), and names the
/// limit if even that is too low.
pub(crate) fn ensure_fd_limit(needed: u64, what: &str) -> Result<(), LoadError> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource, RLIM_INFINITY};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)
        .map_err(|e| LoadError::socket("getrlimit RLIMIT_NOFILE", e))?;
    if soft >= needed {
        return Ok(());
    }
    if hard != RLIM_INFINITY && hard < needed {
        return Err(LoadError::InvalidConfig(format!(
            "{what} needs about {needed} open files, but RLIMIT_NOFILE allows at most {hard} \
             (hard limit; soft {soft}): raise it (`ulimit -n`, LimitNOFILE= in systemd, \
             /etc/security/limits.conf) or use fewer flows"
        )));
    }
    let new_soft = if hard == RLIM_INFINITY { needed } else { hard };
    setrlimit(Resource::RLIMIT_NOFILE, new_soft, hard).map_err(|e| {
        LoadError::InvalidConfig(format!(
            "{what} needs about {needed} open files, but RLIMIT_NOFILE is {soft} and raising \
             it to {new_soft} failed ({e}): raise it with `ulimit -n` or use fewer flows"
        ))
    })
}

/// The progress of a TCP test between two readings of its byte counters: each direction's
/// bytes so far and its rate since the previous reading. A direction not counted here (the
/// far end's, before it reports) is `None`.
pub(crate) struct Meter {
    /// The direction whose flows it counts.
    way: TcpDirection,
    start_ns: u64,
    last_ns: u64,
    last_tx: u64,
    last_rx: u64,
}

impl Meter {
    pub(crate) fn new(start_ns: u64, way: TcpDirection) -> Meter {
        Meter {
            way,
            start_ns,
            last_ns: start_ns,
            last_tx: 0,
            last_rx: 0,
        }
    }

    pub(crate) fn sample(&mut self, now: u64, (tx, rx): (Option<u64>, Option<u64>)) -> TcpProgress {
        let dt = (now - self.last_ns) as f64 / 1e9;
        let way = WayProgress {
            tx_bytes: tx,
            rx_bytes: rx,
            interval_tx_bits_per_s: tx.map(|t| t.saturating_sub(self.last_tx) as f64 * 8.0 / dt),
            interval_rx_bits_per_s: rx.map(|r| r.saturating_sub(self.last_rx) as f64 * 8.0 / dt),
        };
        self.last_ns = now;
        self.last_tx = tx.unwrap_or(0);
        self.last_rx = rx.unwrap_or(0);
        let (up, down) = match self.way {
            TcpDirection::Down => (None, Some(way)),
            _ => (Some(way), None),
        };
        TcpProgress {
            elapsed_s: (now - self.start_ns) as f64 / 1e9,
            up,
            down,
        }
    }
}

/// Waits for a test's load threads to end, passing a stop request on to them and calling
/// `tick` whenever a progress line is due. Each wake-up of this thread takes a core from the
/// load threads for a moment; 20 ms still sees a stop request well within their 50 ms tick.
pub(crate) fn supervise<T>(
    handles: &[std::thread::JoinHandle<T>],
    stop: &AtomicBool,
    inner_stop: &AtomicBool,
    ticks: &mut ProgressTicks,
    mut tick: impl FnMut(u64),
) {
    while !handles.iter().all(|h| h.is_finished()) {
        if stop.load(Ordering::Relaxed) {
            inner_stop.store(true, Ordering::Relaxed);
        }
        let now = now_ns();
        if ticks.due(now) {
            tick(now);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A once-a-second look at a running TCP test, each direction apart.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpProgress {
    pub elapsed_s: f64,
    /// The flows this side sends (up); `None` with -R.
    pub up: Option<WayProgress>,
    /// The flows the far side sends (down: -R, --bidir, rrul); `None` without.
    pub down: Option<WayProgress>,
}

/// One direction's flows so far: what their sender wrote and their receiver read. A count this
/// side cannot see while the run goes (the far end's, with `--to`) is `None`, not 0.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WayProgress {
    pub tx_bytes: Option<u64>,
    pub rx_bytes: Option<u64>,
    /// Send rate over the last interval, bit/s.
    pub interval_tx_bits_per_s: Option<f64>,
    /// Receive rate over the last interval, bit/s.
    pub interval_rx_bits_per_s: Option<f64>,
}

/// How the flows will be paced, decided before connecting.
struct PacingPlan {
    kind: TcpPacing,
    mode: sender::WriteMode,
    /// Bytes per paced write (also TCP_NOTSENT_LOWAT under kernel pacing).
    chunk: usize,
}

fn plan_pacing(cfg: &TcpConfig) -> PacingPlan {
    let Some(rate) = cfg.rate_per_flow_bps else {
        return PacingPlan {
            kind: TcpPacing::None,
            mode: sender::WriteMode::Greedy {
                write_size: cfg.msg_size,
            },
            chunk: cfg.msg_size,
        };
    };
    let chunk = paced_chunk(rate, cfg.msg_size);
    match cfg.pacing {
        TcpPacingChoice::Kernel => PacingPlan {
            kind: TcpPacing::Kernel,
            mode: sender::WriteMode::Greedy { write_size: chunk },
            chunk,
        },
        TcpPacingChoice::Auto | TcpPacingChoice::Application => PacingPlan {
            kind: TcpPacing::Application,
            mode: sender::WriteMode::Scheduled {
                chunk,
                interval_ns: chunk as f64 * 8.0 / rate * 1e9,
            },
            chunk,
        },
    }
}

/// Bytes per paced write at `rate_bps`: 10 ms of data, at least [`MIN_PACED_CHUNK`], at most
/// `largest`. The sender's application pacing and the server's paced sources use it alike.
pub(crate) fn paced_chunk(rate_bps: f64, largest: usize) -> usize {
    let ten_ms = (rate_bps / 8.0 * PACED_CHUNK_NS / 1e9) as usize;
    ten_ms.max(MIN_PACED_CHUNK).min(largest).max(1)
}

/// Runs a TCP stream test and returns its totals.
///
/// `on_progress` is called about once a second on the calling thread. Setting `stop` ends the
/// run early (seen within ~70 ms; the receivers' counts are then awaited at most 200 ms more)
/// and still returns what was measured.
pub fn run_tcp(
    cfg: &TcpConfig,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&TcpProgress),
) -> Result<Results, LoadError> {
    cfg.validate()?;
    let (flows, fds_per_flow) = match (cfg.direction, cfg.target.is_none()) {
        (TcpDirection::Both, true) => (2 * u64::from(cfg.flows), 2),
        (TcpDirection::Both, false) => (2 * u64::from(cfg.flows), 1),
        (_, true) => (u64::from(cfg.flows), 2),
        (_, false) => (u64::from(cfg.flows), 1),
    };
    ensure_fd_limit(flows * fds_per_flow + 64, &format!("--flows {}", cfg.flows))?;
    match cfg.direction {
        TcpDirection::Up => run_forward(cfg, stop, on_progress),
        TcpDirection::Down => reverse::run_reverse(cfg, stop, on_progress, None),
        TcpDirection::Both => reverse::run_both(cfg, stop, on_progress),
    }
}

/// This side sends: the forward run.
pub(crate) fn run_forward(
    cfg: &TcpConfig,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&TcpProgress),
) -> Result<Results, LoadError> {
    let in_process = cfg.target.is_none();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let threads = if cfg.threads == 0 { cpus } else { cfg.threads }.clamp(1, cfg.flows);

    let server = if in_process {
        Some(Server::start_on(
            loopback(cfg.ipv6),
            threads as usize,
            cfg.rx_cpu,
            Sinks {
                recv: cfg.recv_buffer,
                wakes: cfg.sink_wakes,
            },
        )?)
    } else {
        None
    };
    let target = match (&server, cfg.target) {
        (Some(s), _) => s.local_addr(),
        (None, Some(t)) => t,
        (None, None) => unreachable!("in_process is target.is_none()"),
    };
    let plan = plan_pacing(cfg);
    let mut notes: Vec<String> = threads::placement_note(cfg.rx_cpu, cfg.tx_cpu)
        .into_iter()
        .collect();
    let configure = |s: &TcpStream| configure_sender(cfg, &plan, s);
    let streams = hello::connect_all(target, cfg.flows, hello::Mode::Stream, configure)?;
    if let Some(algo) = &cfg.congestion {
        notes.push(format!(
            "congestion control {algo} on every sending socket (TCP_CONGESTION, read back from each)"
        ));
    }
    if plan.kind == TcpPacing::Kernel {
        // Confirm the cap is in force rather than trusting the setsockopt return code.
        let cap = tcp_info(streams[0].as_fd())
            .ok()
            .and_then(|i| i.max_pacing_rate);
        let wanted = (cfg.rate_per_flow_bps.unwrap_or_default() / 8.0).round() as u64;
        if cap != Some(wanted) {
            notes.push(format!(
                "kernel pacing: TCP_INFO shows a cap of {cap:?} bytes/s, {wanted} was requested"
            ));
        }
    }

    // Deal flows round-robin to the sender threads.
    let mut shares: Vec<Vec<(u32, TcpStream)>> = (0..threads).map(|_| Vec::new()).collect();
    for (id, s) in streams.into_iter().enumerate() {
        shares[id % threads as usize].push((id as u32, s));
    }
    let inner_stop = Arc::new(AtomicBool::new(false));
    // A little head start so every thread is waiting when the clock starts.
    let start_ns = now_ns() + 2_000_000;
    let deadline_ns = start_ns + cfg.duration.as_nanos() as u64;
    let mut tx_counters = Vec::new();
    let mut handles = Vec::new();
    for (t, flows) in shares.into_iter().enumerate() {
        let tx_live = Arc::new(AtomicU64::new(0));
        tx_counters.push(tx_live.clone());
        let worker_plan = sender::Plan {
            flows,
            total_flows: cfg.flows,
            mode: plan.mode,
            start_ns,
            deadline_ns,
            stop: inner_stop.clone(),
            tx_live,
        };
        let cpu = cfg.tx_cpu;
        let h = threads::spawn(format!("netceil-tcp-tx{t}"), move || {
            threads::place(cpu)?;
            sender::run(worker_plan)
        })
        .map_err(|e| LoadError::Other(format!("cannot start a sender thread: {e}")))?;
        handles.push(h);
    }

    // Supervise: progress once a second, stop requests within 20 ms.
    let mut ticks = ProgressTicks::new(start_ns, deadline_ns + 500_000_000);
    let mut meter = Meter::new(start_ns, TcpDirection::Up);
    let read = || {
        let tx: u64 = tx_counters.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        let rx = server
            .as_ref()
            .map(|s| s.live().stream_bytes.load(Ordering::Relaxed));
        (Some(tx), rx)
    };
    supervise(&handles, stop, &inner_stop, &mut ticks, |now| {
        on_progress(&meter.sample(now, read()))
    });
    // The last interval, taken now and reported once the receiver has stopped, since a
    // report may wait for the caller's sampler.
    let now = now_ns();
    let last = ticks.last_due(now).then(|| meter.sample(now, read()));
    let mut outcomes = Vec::new();
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(o)) => outcomes.push(o),
            Ok(Err(e)) => first_err = first_err.or(Some(e)),
            Err(_) => {
                first_err = first_err.or(Some(LoadError::Other(
                    "a TCP sender thread panicked".into(),
                )))
            }
        }
    }
    // In process, the receive window ends when the sink last read data (same clock); with a
    // remote receiver, when its last byte count arrived (an upper bound by up to one RTT).
    let last_rx_data_ns = server
        .as_ref()
        .map(|s| s.live().last_stream_data_ns.load(Ordering::Relaxed));
    let server_report = server.map(Server::stop).transpose()?;
    last.iter().for_each(on_progress);
    if let Some(e) = first_err {
        return Err(e);
    }
    Ok(summarize(
        cfg,
        &plan,
        Ended {
            start_ns,
            outcomes,
            server_report,
            last_rx_data_ns,
            notes,
            threads,
            stopped_early: stop.load(Ordering::Relaxed),
        },
    ))
}

/// Everything a finished run hands to [`summarize`].
struct Ended {
    start_ns: u64,
    outcomes: Vec<sender::Outcome>,
    server_report: Option<TcpServeReport>,
    /// When the in-process receiver last read data.
    last_rx_data_ns: Option<u64>,
    notes: Vec<String>,
    threads: u32,
    stopped_early: bool,
}

fn summarize(cfg: &TcpConfig, plan: &PacingPlan, ended: Ended) -> Results {
    let Ended {
        start_ns,
        outcomes,
        server_report,
        last_rx_data_ns,
        mut notes,
        threads,
        stopped_early,
    } = ended;
    let send_end = outcomes
        .iter()
        .map(|o| o.send_end_ns)
        .max()
        .unwrap_or(start_ns);
    let rx_end = last_rx_data_ns.unwrap_or_else(|| {
        outcomes
            .iter()
            .map(|o| o.last_report_ns)
            .max()
            .unwrap_or(send_end)
    });
    let send_window_s = (send_end.saturating_sub(start_ns)).max(1) as f64 / 1e9;
    let rx_window_s = (rx_end.max(send_end) - start_ns).max(1) as f64 / 1e9;

    let mut lateness = Histogram::<u64>::new(3).expect("static histogram precision");
    let (mut cpu_ns, mut late_sends, mut send_errors, mut backpressure) = (0, 0, 0, 0);
    let mut flow_outcomes = Vec::new();
    for o in outcomes {
        cpu_ns += o.cpu_ns;
        late_sends += o.late_sends;
        send_errors += o.send_errors;
        backpressure += o.backpressure_waits;
        let _ = lateness.add(&o.lateness_ns);
        flow_outcomes.extend(o.flows);
    }
    flow_outcomes.sort_by_key(|f| f.flow);

    let FlowTotals {
        flows,
        tx_bytes,
        rx_bytes,
        acked_fallback,
        unknown,
        errors,
    } = flow_totals(&flow_outcomes, rx_window_s);

    let requested_bps = cfg.rate_per_flow_bps.map(|r| r * f64::from(cfg.flows));
    let tx_bits_per_s = tx_bytes as f64 * 8.0 / send_window_s;
    let cpu_s = cpu_ns as f64 / 1e9;
    let achieved_ratio = requested_bps.map(|r| tx_bits_per_s / r);
    let short = achieved_ratio.is_some_and(|a| a < ACHIEVED_OK);
    let sender_cpu_bound = cpu_s / send_window_s > 0.9 * f64::from(threads);
    let generator_limited = short
        && !stopped_early
        && match plan.kind {
            // Behind schedule although the sockets always had room: the sender was the limit.
            TcpPacing::Application => backpressure == 0,
            TcpPacing::Kernel | TcpPacing::None => sender_cpu_bound,
        };
    let app_paced = plan.kind == TcpPacing::Application && !lateness.is_empty();

    rate_and_pacing_notes(cfg, plan, requested_bps, tx_bits_per_s, &mut notes);
    if short && backpressure > 0 && plan.kind == TcpPacing::Application {
        notes.push(format!(
            "paced flows fell short while their sockets were full {backpressure} times: the \
             path or the receiver held them back, not the generator"
        ));
    }
    if short && plan.kind == TcpPacing::Kernel && !generator_limited {
        notes.push(
            "kernel pacing fell short of the request; netceil cannot tell the kernel's pacer \
             from the path, so generator_limited only reflects the sender's CPU"
                .into(),
        );
    }
    notes.push(format!(
        "goodput is what the receiving application read ({}), over the receive window of \
         {rx_window_s:.3} s (sending {send_window_s:.3} s, then until {})",
        if cfg.target.is_some() {
            "reported by netceil recv"
        } else {
            "in-process receiver"
        },
        if cfg.target.is_some() {
            "the last byte count arrived"
        } else {
            "the last data was read"
        }
    ));
    notes.push(
        "tx_packets and rx_app_packets are 0 for TCP streams: segments are counted by the \
         kernel's TCP counters, which the caller adds"
            .into(),
    );
    flow_count_notes(&acked_fallback, &unknown, &errors, &mut notes);
    if let Some(s) = &server_report {
        notes.push(format!(
            "in-process receiver: {} threads' CPU {:.3} s ({:.1} % of one core), epoll_wait \
             returned work {:.0} times a second ({:.0} KiB read per return)",
            threads,
            s.cpu_s,
            s.cpu_s / rx_window_s * 100.0,
            s.wakeups as f64 / rx_window_s,
            s.stream_bytes as f64 / s.wakeups.max(1) as f64 / 1024.0
        ));
        notes.extend(s.rcvbuf.note(cfg.recv_buffer, "in-process receiver"));
        notes.extend(s.wakes.note("in-process receiver"));
        if s.stream_bytes != rx_bytes && acked_fallback.is_empty() && unknown.is_empty() {
            notes.push(format!(
                "the in-process receiver read {} B in all, the flows' counts add up to {rx_bytes} B",
                s.stream_bytes
            ));
        }
    }
    if stopped_early {
        notes.push("stopped early on request; figures cover the time that ran".into());
    }

    Results {
        duration_s: send_window_s,
        tx_bytes,
        tx_bits_per_s,
        rx_app_bytes: rx_bytes,
        rx_app_bits_per_s: rx_bytes as f64 * 8.0 / rx_window_s,
        generator_limited,
        generator: GeneratorStats {
            pacing: Some(if app_paced {
                PacingMode::Sleep
            } else {
                PacingMode::None
            }),
            achieved_ratio,
            cpu_s,
            spin_cpu_s: 0.0,
            work_cpu_s: cpu_s,
            cpu_pct: cpu_s / send_window_s * 100.0,
            send_gap_error_median_us: app_paced
                .then(|| lateness.value_at_quantile(0.5) as f64 / 1e3),
            send_gap_error_p99_us: app_paced.then(|| lateness.value_at_quantile(0.99) as f64 / 1e3),
            late_sends,
            send_errors,
        },
        flows,
        tcp_pacing: Some(plan.kind),
        tcp_rcvbuf_bytes: server_report.as_ref().and_then(|s| s.rcvbuf.fixed_bytes()),
        notes,
        ..Results::default()
    }
}

/// The flows' results and what they add up to.
struct FlowTotals {
    flows: Vec<FlowResult>,
    tx_bytes: u64,
    rx_bytes: u64,
    /// Flows whose received bytes are TCP_INFO's acked bytes (no receiver count came).
    acked_fallback: Vec<u32>,
    /// Flows with neither: counted as 0 bytes.
    unknown: Vec<u32>,
    /// Each flow's error.
    errors: Vec<(u32, String)>,
}

/// Each flow's result: its received bytes are the receiver's count, else what TCP_INFO says
/// was acked, else 0; rates are over the receive window.
fn flow_totals(flow_outcomes: &[sender::FlowOutcome], rx_window_s: f64) -> FlowTotals {
    let mut flows = Vec::with_capacity(flow_outcomes.len());
    let (mut tx_bytes, mut rx_bytes) = (0u64, 0u64);
    let (mut acked_fallback, mut unknown) = (Vec::new(), Vec::new());
    let mut errors = Vec::new();
    for f in flow_outcomes {
        tx_bytes += f.tx_bytes;
        let bytes = match f.rx_reported {
            Some(b) => b,
            None => match f.info.as_ref().and_then(sender::acked_payload) {
                Some(b) => {
                    acked_fallback.push(f.flow);
                    b
                }
                None => {
                    unknown.push(f.flow);
                    0
                }
            },
        };
        if let Some(e) = &f.error {
            errors.push((f.flow, e.clone()));
        }
        rx_bytes += bytes;
        flows.push(FlowResult {
            flow: f.flow,
            bytes,
            bits_per_s: bytes as f64 * 8.0 / rx_window_s,
            retransmits: f.info.map(|i| u64::from(i.total_retrans)),
            segments_out: f.info.and_then(|i| i.data_segs_out).map(u64::from),
            rtt_us: f.info.map(|i| f64::from(i.rtt_us)),
        });
    }

    FlowTotals {
        flows,
        tx_bytes,
        rx_bytes,
        acked_fallback,
        unknown,
        errors,
    }
}

/// What was requested and what the senders wrote, and how the flows were paced.
fn rate_and_pacing_notes(
    cfg: &TcpConfig,
    plan: &PacingPlan,
    requested_bps: Option<f64>,
    tx_bits_per_s: f64,
    notes: &mut Vec<String>,
) {
    if let (Some(rate), Some(total)) = (cfg.rate_per_flow_bps, requested_bps) {
        notes.push(format!(
            "requested {rate:.0} bit/s per flow × {} flows = {total:.0} bit/s; senders wrote \
             {tx_bits_per_s:.0} bit/s ({:.2} % of it)",
            cfg.flows,
            tx_bits_per_s / total * 100.0
        ));
    }
    match plan.kind {
        TcpPacing::Application => notes.push(format!(
            "pacing: application, {} B writes on an absolute schedule per flow (every {:.1} ms){}",
            plan.chunk,
            plan.chunk as f64 * 8.0 / cfg.rate_per_flow_bps.unwrap_or(1.0) * 1e3,
            if cfg.pacing == TcpPacingChoice::Auto {
                "; chosen over SO_MAX_PACING_RATE, which on loopback let each flow start with an \
                 unpaced burst of 200–300 KB (1 Mbit/s flows measured 20–90 % fast), while this \
                 holds the average"
            } else {
                ", as asked"
            }
        )),
        TcpPacing::Kernel => notes.push(format!(
            "pacing: kernel, SO_MAX_PACING_RATE {:.0} bytes/s per socket (TCP internal pacing \
             unless the qdisc is fq), TCP_NOTSENT_LOWAT {} B",
            cfg.rate_per_flow_bps.unwrap_or_default() / 8.0,
            plan.chunk
        )),
        TcpPacing::None => {}
    }
}

/// The flows whose received bytes are not the receiver's count, and the flows' errors.
fn flow_count_notes(
    acked_fallback: &[u32],
    unknown: &[u32],
    errors: &[(u32, String)],
    notes: &mut Vec<String>,
) {
    if !acked_fallback.is_empty() {
        notes.push(format!(
            "{} flows (first: {}) sent no receiver count in time; their bytes are \
             tcpi_bytes_acked, i.e. what reached the receiver's kernel",
            acked_fallback.len(),
            acked_fallback[0]
        ));
    }
    if !unknown.is_empty() {
        notes.push(format!(
            "{} flows (first: {}) have no receiver count and no TCP_INFO: counted as 0 bytes",
            unknown.len(),
            unknown[0]
        ));
    }
    if let Some((flow, e)) = errors.first() {
        notes.push(format!(
            "{} flows had errors; flow {flow}: {e}",
            errors.len()
        ));
    }
}

/// A sending socket's options: the congestion control asked for, TCP_NODELAY, and the
/// kernel's pacing cap when the kernel paces.
fn configure_sender(cfg: &TcpConfig, plan: &PacingPlan, s: &TcpStream) -> Result<(), LoadError> {
    if let Some(algo) = &cfg.congestion {
        set_congestion(s, algo)?;
    }
    if cfg.nodelay {
        s.set_nodelay(true)
            .map_err(|e| LoadError::socket("setsockopt TCP_NODELAY", e))?;
    }
    if plan.kind == TcpPacing::Kernel {
        let rate = cfg.rate_per_flow_bps.unwrap_or_default();
        set_max_pacing_rate(s.as_fd(), (rate / 8.0).round() as u64)
            .map_err(|e| LoadError::socket("setsockopt SO_MAX_PACING_RATE", e))?;
        socket2::SockRef::from(s)
            .set_tcp_notsent_lowat(plan.chunk as u32)
            .map_err(|e| LoadError::socket("setsockopt TCP_NOTSENT_LOWAT", e))?;
    }
    Ok(())
}

/// Sets the congestion control of a sending socket (TCP_CONGESTION) and checks that the kernel
/// took it: an algorithm it does not have, or that this user may not choose, is bad input
/// with the reason and where to look.
fn set_congestion(s: &TcpStream, algo: &str) -> Result<(), LoadError> {
    let sock = socket2::SockRef::from(s);
    if let Err(e) = sock.set_tcp_congestion(algo.as_bytes()) {
        let why = match e.raw_os_error() {
            Some(libc_enoent) if libc_enoent == nix::libc::ENOENT => {
                "this kernel does not have it (see /proc/sys/net/ipv4/tcp_available_congestion_control; a module such as tcp_bbr may need loading)"
            }
            Some(eperm) if eperm == nix::libc::EPERM => {
                "it is not in net.ipv4.tcp_allowed_congestion_control, and choosing another needs CAP_NET_ADMIN"
            }
            _ => "the kernel refused it",
        };
        return Err(LoadError::InvalidConfig(format!(
            "--congestion {algo}: {why} ({e})"
        )));
    }
    let got = sock
        .tcp_congestion()
        .map_err(|e| LoadError::socket("getsockopt TCP_CONGESTION", e))?;
    let got = String::from_utf8_lossy(&got);
    let got = got.trim_end_matches('\0');
    if got != algo {
        return Err(LoadError::Other(format!(
            "--congestion {algo}: the socket reports {got} after setting it"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(cfg: TcpConfig) -> String {
        match cfg.validate() {
            Err(LoadError::InvalidConfig(m)) => m,
            other => panic!("expected InvalidConfig, got {other:?}"),
        }
    }

    #[test]
    fn validation_names_the_flag() {
        assert!(invalid(TcpConfig {
            flows: 0,
            ..TcpConfig::default()
        })
        .contains("--flows"));
        assert!(invalid(TcpConfig {
            msg_size: 0,
            ..TcpConfig::default()
        })
        .contains("--msg-size"));
        assert!(invalid(TcpConfig {
            msg_size: MAX_MSG_SIZE + 1,
            ..TcpConfig::default()
        })
        .contains("--msg-size"));
        for r in [0.0, -5.0, f64::NAN] {
            assert!(invalid(TcpConfig {
                rate_per_flow_bps: Some(r),
                ..TcpConfig::default()
            })
            .contains("--rate-per-flow"));
        }
        assert!(invalid(TcpConfig {
            ipv6: true,
            target: Some("127.0.0.1:5201".parse().unwrap()),
            ..TcpConfig::default()
        })
        .contains("--ipv6"));
        assert!(TcpConfig::default().validate().is_ok());
    }

    #[test]
    fn too_few_file_descriptors_names_the_limit() {
        use nix::sys::resource::{getrlimit, Resource, RLIM_INFINITY};
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        if hard == RLIM_INFINITY {
            return; // no limit to exceed
        }
        let err = ensure_fd_limit(hard + 1, "--flows 99999").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("RLIMIT_NOFILE") && msg.contains("--flows 99999"),
            "{msg}"
        );
        assert!(err.is_usage());
        // Within the hard limit it succeeds (raising the soft limit if needed).
        ensure_fd_limit(hard.min(4096), "--flows 2000").unwrap();
    }

    #[test]
    fn paced_chunks_are_ten_ms_within_bounds() {
        let cfg = TcpConfig {
            rate_per_flow_bps: Some(1e6),
            ..TcpConfig::default()
        };
        let p = plan_pacing(&cfg);
        assert_eq!(p.chunk, 1250);
        match p.mode {
            sender::WriteMode::Scheduled { interval_ns, .. } => {
                assert!((interval_ns - 10e6).abs() < 1.0, "{interval_ns}")
            }
            sender::WriteMode::Greedy { .. } => panic!("auto should pace in the application"),
        }
        let slow = plan_pacing(&TcpConfig {
            rate_per_flow_bps: Some(8000.0),
            ..cfg.clone()
        });
        assert_eq!(slow.chunk, MIN_PACED_CHUNK);
        let small_msgs = plan_pacing(&TcpConfig {
            msg_size: 100,
            ..cfg
        });
        assert_eq!(small_msgs.chunk, 100);
    }
}
