//! The request/response client: one thread, one epoll loop over all flows.
//!
//! # Latency without coordinated omission
//! Paced requests have an intended send time, `first_slot + k × interval` per flow. A request is
//! sent at its time whether or not earlier ones were answered (up to [`MAX_OUTSTANDING`] per
//! flow; past that, sending waits but the request keeps its intended time), and its latency is
//! `response arrival − intended send time`. A server that stalls for 200 ms therefore shows up
//! in every request scheduled during the stall, with the queueing each one suffered, instead of
//! as one slow sample while the client politely waited. Closed loop (no rate) has no schedule:
//! each flow sends its next request when the previous response arrives, and the intended time
//! is the send time.
//!
//! # Sending on time without spinning
//! A sleeping paced client (the default) does not trust its timer to the microsecond: a timer
//! wakes its thread some microseconds late (here, in a VM, a median of about 12 µs with the
//! timer slack at its 1 ns minimum), and each of those would count in the latency from the
//! intended send. So it wakes [`WakeLead`] before each send, the 95th percentile of its timer's
//! lateness as learned during the run, and polls its sockets without sleeping for the rest of
//! the way: the request leaves within a poll of its time, and an answer that comes meanwhile is
//! still read at once. Between the send and the next early wake it sleeps, and the answer wakes
//! it. Per request the polls cost the lead less the timer's own lateness (at 5000/s here,
//! 2.5–3.4 % of a core); they are counted, with `--spin`'s, as the time spent in polls that
//! found nothing.
//!
//! Responses are matched FIFO on TCP (the echo preserves order) and by sequence number on UDP.
//! A UDP request unanswered after the loss timeout counts as lost and is never waited on again;
//! the timeout is 10 × the p99 service time (from actual send), within 100 ms – 2 s.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use hdrhistogram::Histogram;
use nix::sys::epoll::EpollFlags;

use crate::buf::AlignedBuf;
use crate::clock::{now_ns, sleep_until_ns, thread_cpu_ns};
use crate::header::{ts_delta_ns, Header, Kind};
use crate::tcp::EventLoop;
use crate::LoadError;

/// Requests in flight per flow before sending waits for answers.
pub(crate) const MAX_OUTSTANDING: usize = 1024;
/// Latencies are recorded in ns up to 60 s (larger values are clamped there).
const LATENCY_MAX_NS: u64 = 60_000_000_000;
const MIN_LOSS_TIMEOUT_NS: u64 = 100_000_000;
const MAX_LOSS_TIMEOUT_NS: u64 = 2_000_000_000;
/// How often unanswered UDP requests are checked against the loss timeout.
const TIMEOUT_SCAN_NS: u64 = 5_000_000;
/// TCP responses still owed at the end are awaited this long.
const TCP_DRAIN_NS: u64 = 1_000_000_000;
/// After a stop request, outstanding requests are awaited at most this long.
const DRAIN_AFTER_STOP_NS: u64 = 100_000_000;
/// A UDP send that failed in closed loop is retried after this long.
const RETRY_NS: u64 = 1_000_000;

/// How early a sleeping paced client wakes before a send (see the module docs): an estimate of
/// a high quantile of its timer's lateness, updated at every wake the timer made. Each late
/// wake raises it by `STEP × Q`, each timely one lowers it by `STEP × (1 − Q)`, so it settles
/// where a fraction 1 − Q of the wakes are later than it (a streaming quantile that keeps no
/// samples and follows a machine whose load changes).
#[derive(Debug, Clone, Copy)]
pub(crate) struct WakeLead {
    ns: f64,
    max_ns: f64,
}

impl WakeLead {
    /// The quantile of the timer's lateness the lead settles at.
    const Q: f64 = 0.95;
    /// One step of the estimate, ns.
    const STEP_NS: f64 = 1_000.0;
    /// Where it starts: a VM's typical timer lateness, before any wake was seen.
    const START_NS: f64 = 20_000.0;
    /// Never less: a wake must leave time for one poll before the send.
    const MIN_NS: f64 = 2_000.0;
    /// Never more than this, nor than half the interval between a flow's sends: past that the
    /// client would poll most of the time, which is `--spin`'s choice to make, not this one's.
    const MAX_NS: f64 = 200_000.0;

    /// A lead for requests `interval_ns` apart.
    pub(crate) fn new(interval_ns: f64) -> WakeLead {
        let max_ns = (interval_ns / 2.0).clamp(Self::MIN_NS, Self::MAX_NS);
        WakeLead {
            ns: Self::START_NS.min(max_ns),
            max_ns,
        }
    }

    /// The lead now, ns.
    pub(crate) fn ns(&self) -> u64 {
        self.ns as u64
    }

    /// One wake by the timer, `late_ns` after the time it was set for.
    pub(crate) fn observe(&mut self, late_ns: u64) {
        let step = if late_ns as f64 > self.ns {
            Self::STEP_NS * Self::Q
        } else {
            -Self::STEP_NS * (1.0 - Self::Q)
        };
        self.ns = (self.ns + step).clamp(Self::MIN_NS, self.max_ns);
    }
}

pub(crate) enum Sock {
    Tcp(TcpStream),
    Udp(UdpSocket),
}

/// Shared with the supervising thread for progress lines.
#[derive(Debug, Default)]
pub(crate) struct Live {
    pub completed: AtomicU64,
    pub lost: AtomicU64,
    pub latency_sum_ns: AtomicU64,
    /// Largest latency since the supervisor last took it (it swaps in 0).
    pub latency_max_ns: AtomicU64,
}

pub(crate) struct Plan<'a> {
    pub socks: Vec<Sock>,
    pub size: usize,
    pub rate_tps: Option<f64>,
    /// Requests in flight per flow before sending waits ([`MAX_OUTSTANDING`] in runs).
    pub max_outstanding: usize,
    pub run_id: u16,
    pub start_ns: u64,
    pub deadline_ns: u64,
    /// The caller's stop flag, read on every turn of the loop.
    pub stop: &'a AtomicBool,
    pub live: Arc<Live>,
    /// Poll without sleeping (see `RrConfig::spin`).
    pub spin: bool,
    /// Give the core away after each poll that found nothing (spinning, or polling the last
    /// stretch before a send). Only when the echo that must answer is placed on the client's own
    /// CPU: anywhere else a yield hands the core to whatever else is runnable there, for a
    /// whole time slice, and the answer waits.
    pub yield_between_polls: bool,
}

#[derive(Debug)]
pub(crate) struct Outcome {
    /// From intended send time, ns.
    pub latency: Histogram<u64>,
    /// From actual send time, ns.
    pub service: Histogram<u64>,
    /// Actual − intended send time of paced requests, ns.
    pub send_lateness: Histogram<u64>,
    pub issued: u64,
    pub completed: u64,
    pub lost: u64,
    pub in_flight: u64,
    pub duplicates: u64,
    /// Responses that came after their request was declared lost.
    pub late_responses: u64,
    /// Datagrams that were not a response of this run and flow.
    pub foreign: u64,
    pub send_errors: u64,
    /// Paced requests sent more than one interval after their time.
    pub late_sends: u64,
    /// Times a flow had [`MAX_OUTSTANDING`] requests unanswered and had to hold the next.
    pub cap_waits: u64,
    /// When issuing stopped.
    pub issue_end_ns: u64,
    pub last_completion_ns: u64,
    pub loss_timeout_ns: u64,
    pub cpu_ns: u64,
    /// Spinning, or polling the last stretch before a send: the time spent in polls that found
    /// nothing to do, ns (the polling's cost).
    pub idle_poll_ns: u64,
    /// A sleeping paced client: how early it woke before each send at the end of the run
    /// (see [`WakeLead`]), ns.
    pub wake_lead_ns: Option<u64>,
    /// The client polled, and gave the core away after each idle poll
    /// ([`Plan::yield_between_polls`]).
    pub yielded: bool,
    /// First flow error, if any (the flow stopped).
    pub error: Option<String>,
    pub dead_flows: u64,
}

struct Pending {
    seq: u32,
    intended_ns: u64,
    sent_ns: u64,
    answered: bool,
}

struct Flow {
    id: u16,
    sock: Sock,
    outstanding: VecDeque<Pending>,
    next_seq: u32,
    next_slot: u64,
    first_slot_ns: u64,
    /// TCP: bytes of issued requests not yet written.
    tx_unwritten: usize,
    /// TCP: bytes received of the response being read.
    rx_partial: usize,
    writable: bool,
    cap_blocked: bool,
    retry_at_ns: Option<u64>,
    dead: bool,
}

struct Client {
    size: usize,
    max_outstanding: usize,
    run_id: u16,
    interval_ns: Option<f64>,
    deadline_ns: u64,
    issuing: bool,
    loss_timeout_ns: u64,
    req: Vec<u8>,
    rx: AlignedBuf,
    live: Arc<Live>,
    out: Outcome,
}

fn histogram() -> Result<Histogram<u64>, LoadError> {
    Histogram::new_with_bounds(1, LATENCY_MAX_NS, 3)
        .map_err(|e| LoadError::Other(format!("latency histogram: {e}")))
}

pub(crate) fn run(plan: Plan<'_>) -> Result<Outcome, LoadError> {
    let cpu_start = thread_cpu_ns();
    let mut ev = EventLoop::new(plan.socks.len() + 1)?;
    let flows_n = plan.socks.len();
    let interval_ns = plan.rate_tps.map(|r| flows_n as f64 * 1e9 / r);
    let mut flows = register_flows(&ev, plan.socks, plan.start_ns, plan.rate_tps)?;
    let mut c = Client::new(
        plan.size,
        plan.max_outstanding,
        plan.run_id,
        interval_ns,
        plan.deadline_ns,
        plan.live,
    )?;
    let udp = flows.iter().any(|f| matches!(f.sock, Sock::Udp(_)));
    let mut schedule: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    if let Some(iv) = interval_ns {
        schedule.extend(
            flows
                .iter()
                .enumerate()
                .map(|(i, f)| Reverse((f.slot_ns(0, iv), i))),
        );
    }
    let mut events = Vec::with_capacity(256);
    let mut next_scan = plan.start_ns;
    let mut next_timeout_update = plan.start_ns + 1_000_000_000;
    // A sleeping paced client wakes this early before each send and polls the rest of the way.
    let mut lead = interval_ns.filter(|_| !plan.spin).map(WakeLead::new);

    if interval_ns.is_some() && !plan.spin {
        // A paced request is sent when the event loop's timeout ends; the default 50 µs of
        // timer slack would make each one up to that much late, and a paced run's latency
        // counts from the intended send. Ask for timers as exact as the kernel makes them;
        // failure only costs precision (the lateness is still measured and counted).
        let _ = nix::sys::prctl::set_timerslack(1);
    }
    sleep_until_ns(plan.start_ns);
    if interval_ns.is_none() {
        let now = now_ns();
        for f in &mut flows {
            c.issue(f, now, now);
        }
    }
    // Sending phase.
    loop {
        let now = now_ns();
        if now >= c.deadline_ns || plan.stop.load(Ordering::Relaxed) {
            c.out.issue_end_ns = now.min(c.deadline_ns);
            break;
        }
        if let Some(iv) = interval_ns {
            while let Some(&Reverse((due, i))) = schedule.peek() {
                if due > now {
                    break;
                }
                schedule.pop();
                if let Some(next) = c.issue_due(&mut flows[i], iv, now) {
                    schedule.push(Reverse((next, i)));
                }
            }
        }
        if udp && now >= next_scan {
            for f in &mut flows {
                c.expire(f, now);
            }
            next_scan = now + TIMEOUT_SCAN_NS;
        }
        if now >= next_timeout_update {
            c.update_loss_timeout();
            next_timeout_update = now + 1_000_000_000;
        }
        let mut wake_at = c.deadline_ns;
        if let Some(&Reverse((due, _))) = schedule.peek() {
            wake_at = wake_at.min(due.saturating_sub(lead.map_or(0, |l| l.ns())));
        }
        if udp {
            wake_at = wake_at.min(next_scan);
            for f in &flows {
                if let Some(r) = f.retry_at_ns {
                    wake_at = wake_at.min(r);
                }
            }
        }
        events.clear();
        // Spinning, or within the lead before a send: every turn polls (a wake time already
        // past never sleeps); a poll that finds nothing is the polling's own time.
        let polled_at = now_ns();
        let wake_at = if plan.spin { 0 } else { wake_at };
        let polling = wake_at <= polled_at;
        events.extend(ev.wait(Some(wake_at), polled_at)?);
        if let (Some(l), false, true) = (lead.as_mut(), polling, events.is_empty()) {
            // Woken by the timer (not by the periodic tick, which comes before its time).
            let woke = now_ns();
            if woke >= wake_at {
                l.observe(woke - wake_at);
            }
        }
        if polling && events.is_empty() {
            if plan.yield_between_polls {
                // The echo shares this core: a spinner that held it would delay the very
                // answer it waits for.
                std::thread::yield_now();
            }
            c.out.idle_poll_ns += now_ns().saturating_sub(polled_at);
        }
        for &(token, flags) in &events {
            let i = token as usize;
            let Some(f) = flows.get_mut(i) else { continue };
            c.on_event(f, flags);
            // Answers may have freed a held flow: send what is due, from its schedule.
            if f.cap_blocked && f.outstanding.len() < c.max_outstanding {
                f.cap_blocked = false;
                if let Some(iv) = interval_ns {
                    if let Some(next) = c.issue_due(f, iv, now_ns()) {
                        schedule.push(Reverse((next, i)));
                    }
                }
            }
        }
        if interval_ns.is_none() {
            let now = now_ns();
            for f in &mut flows {
                if f.retry_at_ns.is_some_and(|r| r <= now) {
                    f.retry_at_ns = None;
                    c.issue(f, now, now);
                }
            }
        }
    }

    c.drain(&mut ev, &mut flows, &mut events, plan.stop, udp)?;
    c.out.in_flight = flows
        .iter()
        .map(|f| f.outstanding.iter().filter(|p| !p.answered).count() as u64)
        .sum();
    c.out.dead_flows = flows.iter().filter(|f| f.dead).count() as u64;
    c.out.loss_timeout_ns = c.loss_timeout_ns;
    c.out.yielded = plan.yield_between_polls && c.out.idle_poll_ns > 0;
    c.out.wake_lead_ns = lead.map(|l| l.ns());
    c.out.cpu_ns = thread_cpu_ns() - cpu_start;
    Ok(c.out)
}

/// The flows, each registered with the event loop (token: its index); paced flows' phases
/// interleave so the total is evenly spaced at 1/rate.
fn register_flows(
    ev: &EventLoop,
    socks: Vec<Sock>,
    start_ns: u64,
    rate_tps: Option<f64>,
) -> Result<Vec<Flow>, LoadError> {
    let mut flows = Vec::with_capacity(socks.len());
    for (i, sock) in socks.into_iter().enumerate() {
        let flags = EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT | EpollFlags::EPOLLET;
        match &sock {
            Sock::Tcp(s) => ev.add(s, i as u64, flags)?,
            Sock::Udp(s) => ev.add(s, i as u64, flags)?,
        }
        flows.push(Flow {
            id: i as u16,
            sock,
            outstanding: VecDeque::new(),
            next_seq: 0,
            next_slot: 0,
            // Flow phases interleave so the total is evenly spaced at 1/rate.
            first_slot_ns: start_ns + rate_tps.map_or(0, |r| (i as f64 * 1e9 / r) as u64),
            tx_unwritten: 0,
            rx_partial: 0,
            writable: true,
            cap_blocked: false,
            retry_at_ns: None,
            dead: false,
        });
    }
    Ok(flows)
}

impl Client {
    fn new(
        size: usize,
        max_outstanding: usize,
        run_id: u16,
        interval_ns: Option<f64>,
        deadline_ns: u64,
        live: Arc<Live>,
    ) -> Result<Client, LoadError> {
        Ok(Client {
            size,
            max_outstanding: max_outstanding.max(1),
            run_id,
            interval_ns,
            deadline_ns,
            issuing: true,
            loss_timeout_ns: MIN_LOSS_TIMEOUT_NS,
            req: vec![0x3Cu8; size.min(256 * 1024)],
            rx: AlignedBuf::zeroed(size.max(64 * 1024)),
            live,
            out: Outcome {
                latency: histogram()?,
                service: histogram()?,
                send_lateness: histogram()?,
                issued: 0,
                completed: 0,
                lost: 0,
                in_flight: 0,
                duplicates: 0,
                late_responses: 0,
                foreign: 0,
                send_errors: 0,
                late_sends: 0,
                cap_waits: 0,
                issue_end_ns: 0,
                last_completion_ns: 0,
                loss_timeout_ns: MIN_LOSS_TIMEOUT_NS,
                cpu_ns: 0,
                idle_poll_ns: 0,
                wake_lead_ns: None,
                yielded: false,
                error: None,
                dead_flows: 0,
            },
        })
    }

    /// After the sending phase: no new requests; waits for the answers still owed, until
    /// none is or the drain time has passed (shorter once a stop is asked).
    fn drain(
        &mut self,
        ev: &mut EventLoop,
        flows: &mut [Flow],
        events: &mut Vec<(u64, EpollFlags)>,
        stop: &AtomicBool,
        udp: bool,
    ) -> Result<(), LoadError> {
        self.issuing = false;
        let drain_len = |stopped: bool| {
            if stopped {
                DRAIN_AFTER_STOP_NS
            } else if udp {
                self.loss_timeout_ns
            } else {
                TCP_DRAIN_NS
            }
        };
        let mut stopped = stop.load(Ordering::Relaxed);
        let mut drain_deadline = now_ns() + drain_len(stopped);
        loop {
            let now = now_ns();
            if udp {
                for f in flows.iter_mut() {
                    self.expire(f, now);
                }
            }
            let owed = flows
                .iter()
                .filter(|f| !f.dead)
                .any(|f| !f.outstanding.is_empty());
            if !owed || now >= drain_deadline {
                break;
            }
            if !stopped && stop.load(Ordering::Relaxed) {
                stopped = true;
                drain_deadline = drain_deadline.min(now + DRAIN_AFTER_STOP_NS);
            }
            let wake_at = if udp {
                drain_deadline.min(now + TIMEOUT_SCAN_NS)
            } else {
                drain_deadline
            };
            events.clear();
            events.extend(ev.wait(Some(wake_at), now)?);
            for &(token, flags) in events.iter() {
                if let Some(f) = flows.get_mut(token as usize) {
                    self.on_event(f, flags);
                }
            }
        }
        Ok(())
    }
}

impl Flow {
    fn slot_ns(&self, k: u64, interval_ns: f64) -> u64 {
        self.first_slot_ns + (k as f64 * interval_ns) as u64
    }
}

impl Client {
    /// Sends every request of `f` whose time has come (paced). Returns when the flow should be
    /// looked at again, or `None` if it is done or held by the outstanding cap.
    fn issue_due(&mut self, f: &mut Flow, interval_ns: f64, now: u64) -> Option<u64> {
        if f.dead {
            return None;
        }
        loop {
            let intended = f.slot_ns(f.next_slot, interval_ns);
            if intended >= self.deadline_ns {
                return None;
            }
            if intended > now {
                return Some(intended);
            }
            if f.outstanding.len() >= self.max_outstanding {
                f.cap_blocked = true;
                self.out.cap_waits += 1;
                return None;
            }
            f.next_slot += 1;
            let lateness = now - intended;
            let _ = self
                .out
                .send_lateness
                .record(lateness.clamp(1, LATENCY_MAX_NS));
            if lateness as f64 > interval_ns {
                self.out.late_sends += 1;
            }
            self.issue(f, intended, now);
            if f.dead {
                return None;
            }
        }
    }

    /// Sends one request intended at `intended_ns`.
    fn issue(&mut self, f: &mut Flow, intended_ns: u64, now: u64) {
        if f.dead || !self.issuing {
            return;
        }
        let seq = f.next_seq;
        if matches!(f.sock, Sock::Tcp(_)) {
            f.tx_unwritten += self.size;
            self.flush_tcp(f);
            if f.dead {
                return;
            }
        }
        match &f.sock {
            Sock::Tcp(_) => {}
            Sock::Udp(s) => {
                let len = self.size;
                if self.req.len() < len {
                    self.req.resize(len, 0x3C);
                }
                Header {
                    kind: Kind::Request,
                    run_id: self.run_id,
                    flow: f.id,
                    seq,
                    ts_ns: now,
                }
                .write(&mut self.req[..len]);
                match s.send(&self.req[..len]) {
                    Ok(_) => {}
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => {
                        // Buffer full, ENOBUFS, ICMP refusal…: the request never left. Counted;
                        // closed loop retries shortly, a paced slot is simply missed.
                        self.out.send_errors += 1;
                        if self.interval_ns.is_none() {
                            f.retry_at_ns = Some(now + RETRY_NS);
                        }
                        return;
                    }
                }
            }
        }
        f.next_seq = seq.wrapping_add(1);
        f.outstanding.push_back(Pending {
            seq,
            intended_ns,
            sent_ns: now,
            answered: false,
        });
        self.out.issued += 1;
    }

    fn flush_tcp(&mut self, f: &mut Flow) {
        let Sock::Tcp(s) = &mut f.sock else { return };
        while f.tx_unwritten > 0 && f.writable {
            let len = f.tx_unwritten.min(self.req.len());
            match s.write(&self.req[..len]) {
                Ok(n) => f.tx_unwritten -= n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => f.writable = false,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.kill(f, format!("flow {}: write: {e}", f.id));
                    return;
                }
            }
        }
    }

    fn kill(&mut self, f: &mut Flow, why: String) {
        f.dead = true;
        self.out.send_errors += 1;
        self.out.error.get_or_insert(why);
    }

    fn on_event(&mut self, f: &mut Flow, flags: EpollFlags) {
        if f.dead {
            return;
        }
        if flags.intersects(EpollFlags::EPOLLOUT | EpollFlags::EPOLLERR | EpollFlags::EPOLLHUP)
            && matches!(f.sock, Sock::Tcp(_))
        {
            f.writable = true;
            self.flush_tcp(f);
        }
        if flags.intersects(EpollFlags::EPOLLIN | EpollFlags::EPOLLERR | EpollFlags::EPOLLHUP) {
            match f.sock {
                Sock::Tcp(_) => self.receive_tcp(f),
                Sock::Udp(_) => self.receive_udp(f),
            }
        }
    }

    fn complete(&mut self, intended_ns: u64, sent_ns: u64, now: u64) {
        let latency = now.saturating_sub(intended_ns).clamp(1, LATENCY_MAX_NS);
        let _ = self.out.latency.record(latency);
        let _ = self
            .out
            .service
            .record(now.saturating_sub(sent_ns).clamp(1, LATENCY_MAX_NS));
        self.out.completed += 1;
        self.out.last_completion_ns = now;
        self.live.completed.fetch_add(1, Ordering::Relaxed);
        self.live
            .latency_sum_ns
            .fetch_add(latency, Ordering::Relaxed);
        self.live
            .latency_max_ns
            .fetch_max(latency, Ordering::Relaxed);
    }

    fn receive_tcp(&mut self, f: &mut Flow) {
        loop {
            let Sock::Tcp(s) = &mut f.sock else { return };
            let n = match s.read(&mut self.rx) {
                Ok(0) => {
                    self.kill(
                        f,
                        format!("flow {}: the echo server closed the connection", f.id),
                    );
                    return;
                }
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.kill(f, format!("flow {}: read: {e}", f.id));
                    return;
                }
            };
            let now = now_ns();
            f.rx_partial += n;
            while f.rx_partial >= self.size {
                let Some(p) = f.outstanding.pop_front() else {
                    self.kill(
                        f,
                        format!("flow {}: the server sent bytes nobody asked for", f.id),
                    );
                    return;
                };
                f.rx_partial -= self.size;
                self.complete(p.intended_ns, p.sent_ns, now);
            }
        }
        self.after_answers(f);
    }

    fn receive_udp(&mut self, f: &mut Flow) {
        loop {
            let Sock::Udp(s) = &f.sock else { return };
            let n = match s.recv(&mut self.rx) {
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // ECONNREFUSED from an ICMP error: nobody echoes; the requests will time out.
                Err(_) => {
                    self.out.send_errors += 1;
                    continue;
                }
            };
            let now = now_ns();
            let Some(h) = Header::read(&self.rx[..n]) else {
                self.out.foreign += 1;
                continue;
            };
            if h.kind != Kind::Response
                || h.run_id != self.run_id
                || h.flow != f.id
                || n != self.size
            {
                self.out.foreign += 1;
                continue;
            }
            let index = f
                .outstanding
                .front()
                .map(|front| h.seq.wrapping_sub(front.seq) as usize);
            match index.and_then(|i| f.outstanding.get_mut(i)) {
                Some(p) if p.answered => self.out.duplicates += 1,
                Some(p) => {
                    p.answered = true;
                    let (intended, sent) = (p.intended_ns, p.sent_ns);
                    self.complete(intended, sent, now);
                }
                None => {
                    // Answered after it was declared lost: stays lost, but its round trip (from
                    // the echoed send time) still informs the loss timeout.
                    self.out.late_responses += 1;
                    let _ = self
                        .out
                        .service
                        .record(ts_delta_ns(now, h.ts_ns).clamp(1, LATENCY_MAX_NS));
                }
            }
            while f.outstanding.front().is_some_and(|p| p.answered) {
                f.outstanding.pop_front();
            }
        }
        self.after_answers(f);
    }

    /// Closed loop: the next request goes as soon as the flow has nothing in flight.
    fn after_answers(&mut self, f: &mut Flow) {
        if self.interval_ns.is_none()
            && self.issuing
            && f.outstanding.is_empty()
            && f.retry_at_ns.is_none()
        {
            let now = now_ns();
            if now < self.deadline_ns {
                self.issue(f, now, now);
            }
        }
    }

    /// Declares lost the UDP requests unanswered for longer than the loss timeout.
    fn expire(&mut self, f: &mut Flow, now: u64) {
        let mut expired = false;
        while let Some(p) = f.outstanding.front() {
            if p.answered {
                f.outstanding.pop_front();
            } else if now.saturating_sub(p.sent_ns) > self.loss_timeout_ns {
                f.outstanding.pop_front();
                self.out.lost += 1;
                self.live.lost.fetch_add(1, Ordering::Relaxed);
                expired = true;
            } else {
                break;
            }
        }
        if expired {
            self.after_answers(f);
        }
    }

    fn update_loss_timeout(&mut self) {
        if self.out.service.is_empty() {
            return;
        }
        let p99 = self.out.service.value_at_quantile(0.99);
        self.loss_timeout_ns = (p99 * 10).clamp(MIN_LOSS_TIMEOUT_NS, MAX_LOSS_TIMEOUT_NS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::time::Duration;

    /// Lateness values, ns, spread evenly over `0..max_ns` in a scrambled order (a fixed
    /// linear congruential sequence: the same every run).
    fn lateness(n: usize, max_ns: u64) -> impl Iterator<Item = u64> {
        let mut x = 12_345u64;
        (0..n).map(move |_| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 33) % max_ns
        })
    }

    /// The lead settles at the timer's 95th percentile, and follows the machine when it gets
    /// quieter: an estimate stuck at its start, or at a mean, fails.
    #[test]
    fn the_wake_lead_settles_at_the_timers_95th_percentile() {
        let mut lead = WakeLead::new(1e6);
        assert_eq!(lead.ns(), 20_000);
        for late in lateness(20_000, 40_000) {
            lead.observe(late);
        }
        let ns = lead.ns() as f64;
        assert!(
            (35_000.0..=41_000.0).contains(&ns),
            "lead {ns} ns, p95 is 38 µs"
        );
        // The machine quietens: lateness now within 10 µs.
        for late in lateness(20_000, 10_000) {
            lead.observe(late);
        }
        let ns = lead.ns() as f64;
        assert!(
            (8_000.0..=10_500.0).contains(&ns),
            "lead {ns} ns, p95 is 9.5 µs"
        );
    }

    /// `lead` after `n` wakes each `late_ns` late.
    fn after(mut lead: WakeLead, n: usize, late_ns: u64) -> WakeLead {
        (0..n).for_each(|_| lead.observe(late_ns));
        lead
    }

    /// However late the timer, the lead stays within half the interval and 200 µs, and never
    /// under 2 µs however punctual: past the first the client would be spinning.
    #[test]
    fn the_wake_lead_keeps_to_its_bounds() {
        let lead = after(WakeLead::new(100_000.0), 10_000, 5_000_000);
        assert_eq!(lead.ns(), 50_000, "half the 100 µs interval");
        let lead = after(WakeLead::new(1e9), 10_000, 5_000_000);
        assert_eq!(lead.ns(), 200_000);
        assert_eq!(after(lead, 100_000, 0).ns(), 2_000);
        // An interval shorter than the floor: the floor still holds (one poll before a send).
        assert_eq!(WakeLead::new(1_000.0).ns(), 2_000);
    }

    /// With one request allowed in flight, a 200 ms server stall holds back the requests
    /// scheduled behind it. Measured from their intended times they show the queueing; measured
    /// from when they were actually sent (the service histogram) only one sample is slow. This
    /// is the coordinated-omission correction itself, not just open-loop sending.
    #[test]
    fn held_requests_count_from_their_intended_time() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_nodelay(true).unwrap();
            let mut req = [0u8; 64];
            let mut n = 0;
            while s.read_exact(&mut req).is_ok() {
                n += 1;
                if n == 30 {
                    std::thread::sleep(Duration::from_millis(200));
                }
                if s.write_all(&req).is_err() {
                    break;
                }
            }
        });
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_nodelay(true).unwrap();
        stream.set_nonblocking(true).unwrap();
        let start_ns = now_ns() + 1_000_000;
        let o = run(Plan {
            socks: vec![Sock::Tcp(stream)],
            size: 64,
            rate_tps: Some(100.0),
            max_outstanding: 1,
            run_id: 1,
            start_ns,
            deadline_ns: start_ns + 1_500_000_000,
            stop: &AtomicBool::new(false),
            live: Arc::new(Live::default()),
            spin: false,
            yield_between_polls: false,
        })
        .unwrap();
        assert_eq!(o.completed, 150);
        assert!(o.cap_waits > 0);
        let p99_ms = |h: &Histogram<u64>| h.value_at_quantile(0.99) as f64 / 1e6;
        assert!(
            p99_ms(&o.latency) > 100.0,
            "latency p99 {} ms",
            p99_ms(&o.latency)
        );
        assert!(
            p99_ms(&o.service) < 50.0,
            "service p99 {} ms",
            p99_ms(&o.service)
        );
        assert!(o.service.max() > 190_000_000, "the stalled request itself");
    }
}
