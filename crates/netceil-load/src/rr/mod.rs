//! Request/response: transactions per second and a latency histogram, over TCP or UDP.
//!
//! Each flow sends `size`-byte requests and waits for `size`-byte responses from an echo: the
//! in-process one on loopback (over TCP a thread per flow blocked in `read` up to four flows,
//! the epoll sink/echo server above; over UDP a small echo), or `netceil recv` on `target`.
//! Closed loop (no rate) keeps one request in flight per flow; paced runs send on an absolute
//! schedule and measure every latency from the intended send time, so they are safe from
//! coordinated omission (see `rr/client.rs` for how).
//!
//! One client thread runs all flows in one epoll loop: request/response is about latency, and a
//! single thread keeps the client's own scheduling out of the measurement.

mod client;
mod tcp_echo;
mod udp_echo;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use hdrhistogram::Histogram;
use netceil_model::{GeneratorStats, LatencySummary, PacingMode, Results};

use crate::clock::{now_ns, ProgressTicks};
use crate::header::HEADER_LEN;
use crate::tcp::hello::{self, Mode};
use crate::tcp::{check_family, ensure_fd_limit, loopback, Server, MAX_FLOWS, MAX_MSG_SIZE};
use crate::threads;
use crate::LoadError;

use client::Sock;

/// Largest UDP payload over IPv4 (65535 − 20 IP − 8 UDP).
pub const UDP_MAX_PAYLOAD_V4: usize = 65_507;
/// Largest UDP payload over IPv6 without jumbograms (65535 − 8 UDP).
pub const UDP_MAX_PAYLOAD_V6: usize = 65_527;
/// Paced runs that issue less than this share of the request are reported short.
const ACHIEVED_OK: f64 = 0.99;

/// The transport of a request/response run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RrProto {
    #[default]
    Tcp,
    Udp,
}

/// A request/response workload.
#[derive(Debug, Clone, PartialEq)]
pub struct RrConfig {
    pub proto: RrProto,
    /// Request and response size in bytes (`--size`); for UDP, the datagram payload, which
    /// starts with netceil's 18-byte header.
    pub size: usize,
    /// Concurrent connections (TCP) or sockets (UDP) (`--flows`).
    pub flows: u32,
    /// Transactions per second over all flows (`--rate`); `None` = closed loop.
    pub rate_tps: Option<f64>,
    pub duration: Duration,
    pub ipv6: bool,
    /// A remote `netceil serve` test's data port; `None` = in-process echo on loopback.
    pub target: Option<SocketAddr>,
    /// The run id in UDP request headers; `None` draws one. A `netceil serve` test answers
    /// only the run id it granted.
    pub run_id: Option<u16>,
    /// The CPU the in-process echo (the receiving side) is placed on (`--rx-cpu`); `None`
    /// leaves it to the scheduler.
    pub rx_cpu: Option<usize>,
    /// The CPU the request/response client thread is placed on (`--tx-cpu`).
    pub tx_cpu: Option<usize>,
    /// The client never sleeps: it polls its sockets and the clock in a loop (`--spin`), so
    /// an answer is read without a wakeup and a request leaves on time, for a whole core.
    pub spin: bool,
}

impl Default for RrConfig {
    fn default() -> Self {
        RrConfig {
            proto: RrProto::Tcp,
            size: 64,
            flows: 1,
            rate_tps: None,
            duration: Duration::from_secs(10),
            ipv6: false,
            target: None,
            run_id: None,
            rx_cpu: None,
            tx_cpu: None,
            spin: false,
        }
    }
}

impl RrConfig {
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
        match self.proto {
            RrProto::Tcp => {
                if self.size == 0 || self.size > MAX_MSG_SIZE {
                    return bad(format!(
                        "--size must be between 1 B and 64 MiB for TCP request/response, got {} B",
                        self.size
                    ));
                }
            }
            RrProto::Udp => {
                let v6 = self.ipv6 || self.target.is_some_and(|t| t.is_ipv6());
                let limit = if v6 {
                    UDP_MAX_PAYLOAD_V6
                } else {
                    UDP_MAX_PAYLOAD_V4
                };
                if self.size < HEADER_LEN {
                    return bad(format!(
                        "--size {} is too small for UDP request/response: at least {HEADER_LEN} B \
                         (netceil's header)",
                        self.size
                    ));
                }
                if self.size > limit {
                    return bad(format!(
                        "--size {} exceeds the UDP limit of {limit} B for IPv{}",
                        self.size,
                        if v6 { 6 } else { 4 }
                    ));
                }
            }
        }
        if let Some(r) = self.rate_tps {
            if !(r.is_finite() && r > 0.0) {
                return bad(format!(
                    "--rate must be a positive rate, got {r} transactions/s"
                ));
            }
        }
        if self.duration.is_zero() {
            return bad("--duration must be longer than 0 s".into());
        }
        check_family(self.ipv6, self.target)?;
        threads::check_placement(self.rx_cpu, self.tx_cpu, self.target.is_some())
    }
}

/// A once-a-second look at a running request/response test.
#[derive(Debug, Clone, PartialEq)]
pub struct RrProgress {
    pub elapsed_s: f64,
    /// Transactions completed so far.
    pub transactions: u64,
    /// Over the last interval.
    pub interval_tps: f64,
    /// Mean and largest latency (from intended send time) over the last interval, µs;
    /// `None` if nothing completed in it.
    pub interval_mean_latency_us: Option<f64>,
    pub interval_max_latency_us: Option<f64>,
    /// UDP requests declared lost so far.
    pub lost: u64,
}

enum Echo {
    /// Few flows: a thread each, blocked in `read` (see [`tcp_echo`]).
    TcpThreads(tcp_echo::TcpEcho),
    Tcp(Server),
    Udp(udp_echo::UdpEcho),
}

/// Runs a request/response test and returns its totals, with `latency_us` and
/// `transactions_per_s` filled.
///
/// `on_progress` is called about once a second on the calling thread, which sleeps in between.
/// Setting `stop` ends the run early (the client reads it on every turn of its loop: within
/// one request interval, or 5 ms for UDP; answers still owed are awaited at most 100 ms) and
/// still returns what was measured.
pub fn run_rr(
    cfg: &RrConfig,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&RrProgress),
) -> Result<Results, LoadError> {
    cfg.validate()?;
    let in_process = cfg.target.is_none();
    let fds_per_flow = if in_process && cfg.proto == RrProto::Tcp {
        2
    } else {
        1
    };
    ensure_fd_limit(
        u64::from(cfg.flows) * fds_per_flow + 64,
        &format!("--flows {}", cfg.flows),
    )?;
    let echo = match (cfg.target, cfg.proto) {
        (Some(_), _) => None,
        (None, RrProto::Tcp) if cfg.flows <= tcp_echo::MAX_FLOWS => Some(Echo::TcpThreads(
            tcp_echo::TcpEcho::start(loopback(cfg.ipv6), cfg.flows, cfg.rx_cpu)?,
        )),
        (None, RrProto::Tcp) => Some(Echo::Tcp(Server::start_on(
            loopback(cfg.ipv6),
            1,
            cfg.rx_cpu,
            // Echo connections are not sized or batched: only sink streams are.
            crate::tcp::Sinks {
                recv: crate::tcp::RecvBuffer::Kernel,
                wakes: crate::tcp::SinkWakes::Each,
            },
        )?)),
        (None, RrProto::Udp) => Some(Echo::Udp(udp_echo::UdpEcho::start(
            loopback(cfg.ipv6),
            cfg.rx_cpu,
        )?)),
    };
    let target = match (&echo, cfg.target) {
        (_, Some(t)) => t,
        (Some(Echo::TcpThreads(e)), None) => e.local_addr(),
        (Some(Echo::Tcp(s)), None) => s.local_addr(),
        (Some(Echo::Udp(u)), None) => u.local_addr(),
        (None, None) => unreachable!("an echo is started when there is no target"),
    };
    let socks = match cfg.proto {
        RrProto::Tcp => hello::connect_all(target, cfg.flows, Mode::Echo, |s| {
            // Requests must leave at once, not wait for Nagle's ACK.
            s.set_nodelay(true)
                .map_err(|e| LoadError::socket("setsockopt TCP_NODELAY", e))
        })?
        .into_iter()
        .map(Sock::Tcp)
        .collect(),
        RrProto::Udp => {
            let mut socks = Vec::with_capacity(cfg.flows as usize);
            let local = if target.is_ipv6() {
                "[::]:0"
            } else {
                "0.0.0.0:0"
            };
            for _ in 0..cfg.flows {
                let s = UdpSocket::bind(local)
                    .map_err(|e| LoadError::socket(format!("bind {local}"), e))?;
                s.connect(target).map_err(|source| LoadError::Connect {
                    addr: target,
                    source,
                })?;
                s.set_nonblocking(true)
                    .map_err(|e| LoadError::socket("set O_NONBLOCK", e))?;
                socks.push(Sock::Udp(s));
            }
            socks
        }
    };

    let live = Arc::new(client::Live::default());
    let start_ns = now_ns() + 2_000_000;
    let deadline_ns = start_ns + cfg.duration.as_nanos() as u64;
    let plan = client::Plan {
        socks,
        size: cfg.size,
        rate_tps: cfg.rate_tps,
        max_outstanding: client::MAX_OUTSTANDING,
        run_id: cfg.run_id.unwrap_or_else(run_id),
        start_ns,
        deadline_ns,
        stop,
        live: live.clone(),
        spin: cfg.spin,
        yield_between_polls: echo_shares_the_client_cpu(cfg)?,
    };
    let (outcome, last) = std::thread::scope(|scope| {
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let cpu = cfg.tx_cpu;
        let handle = threads::spawn_scoped(scope, "netceil-rr".into(), move || {
            // Dropped when the client returns: that wakes the supervisor below.
            let _done = done_tx;
            threads::place(cpu)?;
            client::run(plan)
        })
        .map_err(|e| LoadError::Other(format!("cannot start the request/response thread: {e}")))?;
        let last = supervise(start_ns, deadline_ns, &live, &done_rx, on_progress);
        let outcome = handle
            .join()
            .map_err(|_| LoadError::Other("the request/response thread panicked".into()))?;
        Ok::<_, LoadError>((outcome, last))
    })?;
    let echo_note = match echo {
        Some(Echo::TcpThreads(e)) => {
            let r = e.stop()?;
            Some(format!(
                "in-process TCP echo, a thread per flow blocked in read: {} B echoed, CPU {:.3} s",
                r.echoed_bytes, r.cpu_s
            ))
        }
        Some(Echo::Tcp(s)) => {
            let r = s.stop()?;
            Some(format!(
                "in-process TCP echo: {} B echoed, CPU {:.3} s",
                r.echoed_bytes, r.cpu_s
            ))
        }
        Some(Echo::Udp(u)) => Some(format!(
            "in-process UDP echo answered {} requests (netceil recv's UDP receiver echoes the \
             same way)",
            u.stop()?
        )),
        None => None,
    };
    if let Some(p) = last {
        on_progress(&p);
    }
    // Where the threads were placed, when asked, joins the echo's note.
    let echo_note = match (threads::placement_note(cfg.rx_cpu, cfg.tx_cpu), echo_note) {
        (Some(p), Some(e)) => Some(format!("{e}; {p}")),
        (p, e) => e.or(p),
    };
    Ok(summarize(
        cfg,
        start_ns,
        outcome?,
        echo_note,
        stop.load(Ordering::Relaxed),
    ))
}

/// Whether the in-process echo must run on the client's CPU: both placed on one CPU, or this
/// process allowed a single CPU. Anywhere else the echo has a core of its own to be woken on.
fn echo_shares_the_client_cpu(cfg: &RrConfig) -> Result<bool, LoadError> {
    if cfg.target.is_some() {
        return Ok(false);
    }
    Ok(
        matches!((cfg.tx_cpu, cfg.rx_cpu), (Some(t), Some(r)) if t == r)
            || threads::allowed_cpus()?.len() < 2,
    )
}

/// The supervising side of a run, on the caller's thread: a progress report once a second,
/// until the client thread ends (its end drops the channel's sender). It sleeps between
/// reports instead of polling: on a machine with as few cores as a request/response run has
/// threads, every extra wake-up is a chance to delay the echo or the client. Returns the last
/// interval's report, taken at the end and given once the echo has stopped (a report may wait
/// for the caller's sampler).
fn supervise(
    start_ns: u64,
    deadline_ns: u64,
    live: &client::Live,
    done: &mpsc::Receiver<()>,
    on_progress: &mut dyn FnMut(&RrProgress),
) -> Option<RrProgress> {
    let mut ticks = ProgressTicks::new(start_ns, deadline_ns + 500_000_000);
    let (mut last_ns, mut last_done, mut last_sum) = (start_ns, 0u64, 0u64);
    let mut sample = |now: u64| {
        let done = live.completed.load(Ordering::Relaxed);
        let sum = live.latency_sum_ns.load(Ordering::Relaxed);
        let max = live.latency_max_ns.swap(0, Ordering::Relaxed);
        let n = done - last_done;
        let p = RrProgress {
            elapsed_s: (now - start_ns) as f64 / 1e9,
            transactions: done,
            interval_tps: n as f64 / ((now - last_ns) as f64 / 1e9),
            interval_mean_latency_us: (n > 0).then(|| (sum - last_sum) as f64 / n as f64 / 1e3),
            interval_max_latency_us: (n > 0).then(|| max as f64 / 1e3),
            lost: live.lost.load(Ordering::Relaxed),
        };
        (last_ns, last_done, last_sum) = (now, done, sum);
        p
    };
    loop {
        let now = now_ns();
        if ticks.due(now) {
            on_progress(&sample(now));
        }
        // Past the last tick (the client draining its answers): a look every 100 ms.
        let wait = match ticks.next_ns().saturating_sub(now_ns()) {
            0 => 100_000_000,
            w => w,
        };
        match done.recv_timeout(Duration::from_nanos(wait)) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // The client has returned (nothing is ever sent: only the drop counts).
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let now = now_ns();
    ticks.last_due(now).then(|| sample(now))
}

/// A run id for UDP headers, so answers meant for an earlier run are not counted.
fn run_id() -> u16 {
    let mix = now_ns() ^ (u64::from(std::process::id()) << 32);
    // Fold 64 bits into 16 (a multiplicative hash spreads the clock's low bits).
    (mix.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 48) as u16
}

fn quantile_us(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1e3
}

/// A latency histogram's summary, µs; `None` when it recorded nothing.
fn latency_summary(h: &Histogram<u64>) -> Option<LatencySummary> {
    (!h.is_empty()).then(|| LatencySummary {
        p50: quantile_us(h, 0.5),
        p90: quantile_us(h, 0.9),
        p99: quantile_us(h, 0.99),
        p999: quantile_us(h, 0.999),
        max: h.max() as f64 / 1e3,
        min: h.min() as f64 / 1e3,
        mean: h.mean() / 1e3,
        count: h.len(),
    })
}

fn summarize(
    cfg: &RrConfig,
    start_ns: u64,
    o: client::Outcome,
    echo_note: Option<String>,
    stopped_early: bool,
) -> Results {
    let issue_window_s = (o.issue_end_ns.saturating_sub(start_ns)).max(1) as f64 / 1e9;
    let end_ns = o.issue_end_ns.max(o.last_completion_ns);
    let duration_s = (end_ns.saturating_sub(start_ns)).max(1) as f64 / 1e9;
    let tps = o.completed as f64 / duration_s;
    let size = cfg.size as u64;
    let paced = cfg.rate_tps.is_some();
    let issue_rate = o.issued as f64 / issue_window_s;
    let achieved_ratio = cfg.rate_tps.map(|r| issue_rate / r);
    // Short of the schedule although no flow was held by unanswered requests: the client
    // itself could not keep up.
    let generator_limited =
        !stopped_early && achieved_ratio.is_some_and(|a| a < ACHIEVED_OK) && o.cap_waits == 0;
    // A spinning client's idle polls ran on its CPU: that is the spin's cost (bounded by the
    // thread's CPU time, which a preempted poll does not add to).
    let spin_cpu_ns = o.idle_poll_ns.min(o.cpu_ns);
    let latency = latency_summary(&o.latency);
    let service = latency_summary(&o.service);

    let mut notes = Vec::new();
    notes.push(if paced {
        format!(
            "paced at {:.0} transactions/s over {} flows: latency is measured from each request's \
             intended send time, so queueing behind a slow answer is counted (no coordinated \
             omission)",
            cfg.rate_tps.unwrap_or_default(),
            cfg.flows
        )
    } else {
        format!(
            "closed loop: one request in flight per flow ({} flows); latency is measured from \
             the send",
            cfg.flows
        )
    });
    let gave_away = if o.yielded {
        "; it gave the core away after each idle poll, since the echo shares its CPU"
    } else {
        ""
    };
    if cfg.spin {
        notes.push(format!(
            "the client spun (--spin): it polled its sockets and the clock without sleeping, {:.0} % of a core, {:.0} % of it in polls that found nothing; answers are read without a wakeup on its side (sockperf's client reads them with one, on a thread of their own, and spins only to send on time){gave_away}",
            o.cpu_ns as f64 / 1e9 / duration_s * 100.0,
            if o.cpu_ns > 0 { spin_cpu_ns as f64 * 100.0 / o.cpu_ns as f64 } else { 0.0 },
        ));
    } else if let Some(lead) = o.wake_lead_ns.filter(|_| !o.send_lateness.is_empty()) {
        notes.push(format!(
            "the client slept between requests, woke early before each send (by {:.1} µs at the end of the run: the 95th percentile of its timer's lateness, learned as it ran) and polled until the send time: requests left a median {:.1} µs after their intended time, and the polls cost {:.1} % of a core{gave_away}",
            lead as f64 / 1e3,
            quantile_us(&o.send_lateness, 0.5),
            spin_cpu_ns as f64 / 1e9 / duration_s * 100.0,
        ));
    }
    notes.push(format!(
        "packets count requests and responses ({})",
        match cfg.proto {
            RrProto::Udp => "one datagram each",
            RrProto::Tcp => "messages of --size bytes; the kernel counts segments",
        }
    ));
    if cfg.proto == RrProto::Udp {
        notes.push(format!(
            "a request unanswered {:.0} ms after its send counts as lost (10 × p99 service time, \
             within 100 ms – 2 s); lost requests are not in the latency figures",
            o.loss_timeout_ns as f64 / 1e6
        ));
        if o.late_responses > 0 {
            notes.push(format!(
                "{} responses arrived after their request was declared lost",
                o.late_responses
            ));
        }
    }
    if o.foreign > 0 {
        notes.push(format!(
            "{} datagrams were not responses of this run and flow, and were ignored",
            o.foreign
        ));
    }
    if o.cap_waits > 0 {
        notes.push(format!(
            "flows had {} requests unanswered {} times and held further sends; those requests \
             still count from their intended time",
            client::MAX_OUTSTANDING,
            o.cap_waits
        ));
    }
    if let Some(e) = &o.error {
        notes.push(format!(
            "{} flows stopped on an error; first: {e}",
            o.dead_flows
        ));
    }
    if o.send_errors > 0 {
        notes.push(format!("{} sends failed", o.send_errors));
    }
    if let Some(n) = echo_note {
        notes.push(n);
    }
    if stopped_early {
        notes.push("stopped early on request; figures cover the time that ran".into());
    }
    let answered_or_lost = o.completed + o.lost + o.in_flight;
    Results {
        duration_s,
        payload_bytes: (cfg.proto == RrProto::Udp).then_some(cfg.size),
        frame_bytes: (cfg.proto == RrProto::Udp)
            .then(|| netceil_model::udp_payload_to_frame(cfg.size, cfg.ipv6)),
        tx_packets: o.issued,
        tx_bytes: o.issued * size,
        tx_pps: o.issued as f64 / duration_s,
        tx_bits_per_s: (o.issued * size) as f64 * 8.0 / duration_s,
        requested_pps: cfg.rate_tps,
        rx_app_packets: o.completed,
        rx_app_bytes: o.completed * size,
        rx_app_pps: tps,
        rx_app_bits_per_s: (o.completed * size) as f64 * 8.0 / duration_s,
        lost_packets: o.lost,
        duplicate_packets: o.duplicates,
        in_flight_packets: o.in_flight,
        unexplained_packets: o.issued as i64 - answered_or_lost as i64,
        generator_limited,
        generator: GeneratorStats {
            pacing: Some(match (cfg.spin, paced) {
                (true, _) => PacingMode::Spin,
                (false, true) => PacingMode::Sleep,
                (false, false) => PacingMode::None,
            }),
            achieved_ratio,
            cpu_s: o.cpu_ns as f64 / 1e9,
            spin_cpu_s: spin_cpu_ns as f64 / 1e9,
            work_cpu_s: (o.cpu_ns - spin_cpu_ns) as f64 / 1e9,
            cpu_pct: o.cpu_ns as f64 / 1e9 / duration_s * 100.0,
            send_gap_error_median_us: (paced && !o.send_lateness.is_empty())
                .then(|| quantile_us(&o.send_lateness, 0.5)),
            send_gap_error_p99_us: (paced && !o.send_lateness.is_empty())
                .then(|| quantile_us(&o.send_lateness, 0.99)),
            late_sends: o.late_sends,
            send_errors: o.send_errors,
        },
        latency_us: latency,
        service_us: service,
        transactions_per_s: Some(tps),
        closed_loop_in_flight: (!paced).then_some(cfg.flows),
        notes,
        ..Results::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(cfg: RrConfig) -> String {
        match cfg.validate() {
            Err(LoadError::InvalidConfig(m)) => m,
            other => panic!("expected InvalidConfig, got {other:?}"),
        }
    }

    #[test]
    fn validation_names_the_flag() {
        let udp = RrConfig {
            proto: RrProto::Udp,
            ..RrConfig::default()
        };
        assert!(invalid(RrConfig {
            size: 0,
            ..RrConfig::default()
        })
        .contains("--size"));
        assert!(invalid(RrConfig {
            size: 10,
            ..udp.clone()
        })
        .contains("at least 18"));
        assert!(invalid(RrConfig {
            size: 65_508,
            ..udp.clone()
        })
        .contains("65507"));
        assert!(RrConfig {
            size: 65_508,
            ipv6: true,
            ..udp.clone()
        }
        .validate()
        .is_ok());
        assert!(invalid(RrConfig {
            flows: 0,
            ..udp.clone()
        })
        .contains("--flows"));
        for r in [0.0, -1.0, f64::INFINITY] {
            assert!(invalid(RrConfig {
                rate_tps: Some(r),
                ..udp.clone()
            })
            .contains("--rate"));
        }
        assert!(udp.validate().is_ok());
    }
}
