//! One TCP sender thread: an epoll loop over its share of the flows.
//!
//! Sockets are nonblocking and registered edge-triggered, so a full socket costs nothing until
//! the kernel says it has room again. Two ways to write:
//! - **greedy** (unpaced, or paced by the kernel with SO_MAX_PACING_RATE): every writable flow
//!   gets a few writes per turn, round-robin, until its socket is full;
//! - **scheduled** (application pacing): chunk `k` of a flow is due at
//!   `first_due + k × interval`, an absolute schedule as in [`crate::pacing`]. What is due and not
//!   yet written is owed and goes as soon as the socket takes it, so a late wake-up or a full
//!   socket delays bytes but never drops them from the schedule. A min-heap of next-due times
//!   and a timerfd keep 1000 flows on one thread, and chunks due within the next 2 % of an
//!   interval share a wake-up (700 flows at 1 Mbit/s: one third of the CPU of waking per chunk).
//!
//! At the end each flow half-closes, reads the receiver's byte count (see [`super::hello`]) and
//! reads TCP_INFO for retransmits and RTT.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use hdrhistogram::Histogram;
use nix::sys::epoll::EpollFlags;

use super::evloop::EventLoop;
use super::hello::{HELLO_LEN, REPORT_LEN};
use crate::buf::AlignedBuf;
use crate::clock::{now_ns, sleep_until_ns, thread_cpu_ns};
use crate::tcpinfo::{tcp_info, TcpInfo};
use crate::LoadError;

/// Writes a greedy flow gets before the next flow's turn.
const WRITES_PER_TURN: u32 = 4;
/// How long to wait for the receivers' counts after the last write.
const DRAIN_NS: u64 = 3_000_000_000;
/// The same after a stop request: the caller asked to finish now.
const DRAIN_AFTER_STOP_NS: u64 = 200_000_000;
/// Most a scheduled chunk is written ahead of its time, to share a wake-up with others.
const MAX_EARLY_NS: f64 = 200_000.0;
/// Send lateness is recorded in ns up to 10 s.
const LATENESS_MAX_NS: u64 = 10_000_000_000;

/// How a worker writes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WriteMode {
    /// As fast as the sockets take it, `write_size` bytes per write.
    Greedy { write_size: usize },
    /// `chunk` bytes per flow every `interval_ns`, on an absolute schedule.
    Scheduled { chunk: usize, interval_ns: f64 },
}

/// One sender thread's assignment.
pub(crate) struct Plan {
    /// (flow id, connected nonblocking stream).
    pub flows: Vec<(u32, TcpStream)>,
    /// All flows of the run, to spread schedule phases evenly.
    pub total_flows: u32,
    pub mode: WriteMode,
    pub start_ns: u64,
    pub deadline_ns: u64,
    pub stop: Arc<AtomicBool>,
    /// Bytes written so far by this thread, for progress lines.
    pub tx_live: Arc<AtomicU64>,
}

/// What one flow did.
#[derive(Debug)]
pub(crate) struct FlowOutcome {
    pub flow: u32,
    pub tx_bytes: u64,
    /// The receiver's count of payload bytes, if it arrived in time.
    pub rx_reported: Option<u64>,
    pub info: Option<TcpInfo>,
    pub error: Option<String>,
}

/// What one sender thread did.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub flows: Vec<FlowOutcome>,
    pub cpu_ns: u64,
    /// When this thread stopped writing.
    pub send_end_ns: u64,
    /// When the last receiver count arrived (or `send_end_ns` if none did).
    pub last_report_ns: u64,
    /// |actual − scheduled| of each scheduled write, ns (early by up to [`MAX_EARLY_NS`], or
    /// late).
    pub lateness_ns: Histogram<u64>,
    /// Chunks written more than one interval after their time.
    pub late_sends: u64,
    /// Writes that failed for another reason than a full socket.
    pub send_errors: u64,
    /// Times a scheduled flow owed bytes and found its socket full.
    pub backpressure_waits: u64,
    /// Writes refused because the socket was full.
    #[cfg_attr(not(test), allow(dead_code))] // read by the tests
    pub socket_full: u64,
    /// `epoll_wait` calls while sending.
    #[cfg_attr(not(test), allow(dead_code))] // read by the tests
    pub send_polls: u64,
}

struct Flow {
    id: u32,
    stream: TcpStream,
    writable: bool,
    sent: u64,
    /// Scheduled bytes not yet written.
    owed: u64,
    next_chunk: u64,
    first_due_ns: u64,
    report: [u8; REPORT_LEN],
    report_got: usize,
    report_done: bool,
    error: Option<String>,
}

impl Flow {
    fn due_ns(&self, chunk: u64, interval_ns: f64) -> u64 {
        self.first_due_ns + (chunk as f64 * interval_ns) as u64
    }
}

pub(crate) fn run(plan: Plan) -> Result<Outcome, LoadError> {
    let cpu_start = thread_cpu_ns();
    let mut ev = EventLoop::new(plan.flows.len() + 1)?;
    let write_size = match plan.mode {
        WriteMode::Greedy { write_size } => write_size,
        WriteMode::Scheduled { chunk, .. } => chunk,
    };
    let mut flows = register_flows(&ev, plan.flows, plan.mode, plan.start_ns, plan.total_flows)?;
    let mut out = Outcome {
        flows: Vec::new(),
        cpu_ns: 0,
        send_end_ns: 0,
        last_report_ns: 0,
        lateness_ns: Histogram::new_with_max(LATENESS_MAX_NS, 3)
            .map_err(|e| LoadError::Other(format!("histogram: {e}")))?,
        late_sends: 0,
        send_errors: 0,
        backpressure_waits: 0,
        socket_full: 0,
        send_polls: 0,
    };
    let buf = AlignedBuf::filled(write_size, 0x5A);
    let mut ready: VecDeque<usize> = (0..flows.len()).collect();
    let mut schedule: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    if matches!(plan.mode, WriteMode::Scheduled { .. }) {
        ready.clear();
        schedule.extend(
            flows
                .iter()
                .enumerate()
                .map(|(i, f)| Reverse((f.first_due_ns, i))),
        );
    }
    let mut events = Vec::with_capacity(256);
    let deadline = plan.deadline_ns;

    sleep_until_ns(plan.start_ns);
    let send_end = loop {
        let now = now_ns();
        if now >= deadline || plan.stop.load(Ordering::Relaxed) {
            break now.min(deadline);
        }
        let wake_at = match plan.mode {
            WriteMode::Greedy { .. } => {
                for _ in 0..ready.len() {
                    let Some(i) = ready.pop_front() else { break };
                    let f = &mut flows[i];
                    let mut writes = 0;
                    while f.writable && f.error.is_none() && writes < WRITES_PER_TURN {
                        write_once(f, &buf, &plan.tx_live, &mut out);
                        writes += 1;
                    }
                    if f.writable && f.error.is_none() {
                        ready.push_back(i);
                    }
                    if now_ns() >= deadline {
                        break;
                    }
                }
                if ready.is_empty() {
                    deadline
                } else {
                    0
                }
            }
            WriteMode::Scheduled { chunk, interval_ns } => {
                // Chunks due a little ahead go in this wake-up too: one wake serves several
                // flows instead of one each. At most 2 % of an interval early (200 µs at
                // 1 Mbit/s), and only the timing moves: which chunks exist is set by the
                // schedule and the deadline.
                let horizon = now + (interval_ns / 50.0).min(MAX_EARLY_NS) as u64;
                while let Some(&Reverse((due, i))) = schedule.peek() {
                    if due > horizon {
                        break;
                    }
                    schedule.pop();
                    let f = &mut flows[i];
                    if f.error.is_some() {
                        continue;
                    }
                    let first = f.next_chunk;
                    let mut k = first;
                    while f.due_ns(k, interval_ns) <= horizon && f.due_ns(k, interval_ns) < deadline
                    {
                        k += 1;
                    }
                    if k > first {
                        let due_first = f.due_ns(first, interval_ns);
                        let _ = out
                            .lateness_ns
                            .record(now.abs_diff(due_first).min(LATENESS_MAX_NS));
                        let lateness = now.saturating_sub(due_first);
                        // Chunks j in [first, k) left more than one interval after their time.
                        let late = (lateness as f64 / interval_ns).floor() as u64;
                        out.late_sends += late.min(k - first);
                        f.owed += (k - first) * chunk as u64;
                        f.next_chunk = k;
                    }
                    let next_due = f.due_ns(f.next_chunk, interval_ns);
                    if next_due < deadline {
                        schedule.push(Reverse((next_due, i)));
                    }
                    flush_owed(f, &buf, &plan.tx_live, &mut out);
                }
                schedule.peek().map_or(deadline, |r| r.0 .0.min(deadline))
            }
        };
        // While every flow is still writable, no event can change anything (only a full
        // socket waits for EPOLLOUT), so the poll is skipped: one `epoll_wait` per turn was
        // a fifth of a single stream's syscalls. Edge-triggered events stay queued meanwhile.
        if wake_at == 0 && ready.len() == flows.len() {
            continue;
        }
        events.clear();
        events.extend(ev.wait(Some(wake_at), now_ns())?);
        out.send_polls += 1;
        for &(token, flags) in &events {
            let Some(f) = flows.get_mut(token as usize) else {
                continue;
            };
            if flags.intersects(EpollFlags::EPOLLOUT | EpollFlags::EPOLLERR | EpollFlags::EPOLLHUP)
                && !f.writable
                && f.error.is_none()
            {
                f.writable = true;
                match plan.mode {
                    WriteMode::Greedy { .. } => ready.push_back(token as usize),
                    WriteMode::Scheduled { .. } => flush_owed(f, &buf, &plan.tx_live, &mut out),
                }
            }
        }
    };
    out.send_end_ns = send_end;

    out.last_report_ns = collect_reports(&mut ev, &mut flows, &mut events, &plan.stop, send_end)?;
    out.flows = flows.into_iter().map(Flow::outcome).collect();
    out.cpu_ns = thread_cpu_ns() - cpu_start;
    Ok(out)
}

/// The flows, each registered with the event loop (token: its index) and given the time of
/// its first write: phases spread over one interval when scheduled, so the flows do not
/// write in lockstep.
fn register_flows(
    ev: &EventLoop,
    streams: Vec<(u32, TcpStream)>,
    mode: WriteMode,
    start_ns: u64,
    total_flows: u32,
) -> Result<Vec<Flow>, LoadError> {
    let mut flows = Vec::with_capacity(streams.len());
    for (index, (id, stream)) in streams.into_iter().enumerate() {
        ev.add(
            &stream,
            index as u64,
            EpollFlags::EPOLLOUT | EpollFlags::EPOLLIN | EpollFlags::EPOLLET,
        )?;
        let first_due_ns = match mode {
            WriteMode::Scheduled { interval_ns, .. } => {
                // Flow phases spread over one interval, so the flows do not write in lockstep.
                start_ns + (f64::from(id) * interval_ns / f64::from(total_flows.max(1))) as u64
            }
            WriteMode::Greedy { .. } => start_ns,
        };
        flows.push(Flow {
            id,
            stream,
            writable: true,
            sent: 0,
            owed: 0,
            next_chunk: 0,
            first_due_ns,
            report: [0; REPORT_LEN],
            report_got: 0,
            report_done: false,
            error: None,
        });
    }
    Ok(flows)
}

/// Half-closes every flow and collects the receivers' counts, until each has come or the
/// drain time has passed (shorter once a stop is asked). Returns when the last count came
/// (`send_end` if none did).
fn collect_reports(
    ev: &mut EventLoop,
    flows: &mut [Flow],
    events: &mut Vec<(u64, EpollFlags)>,
    stop: &AtomicBool,
    send_end: u64,
) -> Result<u64, LoadError> {
    let mut waiting = 0usize;
    for f in flows.iter_mut() {
        if f.error.is_none() {
            match f.stream.shutdown(Shutdown::Write) {
                Ok(()) => waiting += 1,
                Err(e) => f.error = Some(format!("shutdown: {e}")),
            }
        }
    }
    let drain_len = |stopped: bool| {
        if stopped {
            DRAIN_AFTER_STOP_NS
        } else {
            DRAIN_NS
        }
    };
    let mut stopped = stop.load(Ordering::Relaxed);
    let drain_start = now_ns();
    let mut drain_deadline = drain_start + drain_len(stopped);
    let mut last_report_ns = send_end;
    // Counts may already be there (edge-triggered: read once before waiting for edges).
    for f in flows.iter_mut() {
        if f.error.is_none() {
            if let Some(done) = read_report(f) {
                waiting -= 1;
                if done {
                    last_report_ns = last_report_ns.max(now_ns());
                }
            }
        }
    }
    while waiting > 0 {
        let now = now_ns();
        if !stopped && stop.load(Ordering::Relaxed) {
            stopped = true;
            drain_deadline = drain_deadline.min(now + DRAIN_AFTER_STOP_NS);
        }
        if now >= drain_deadline {
            break;
        }
        events.clear();
        events.extend(ev.wait(Some(drain_deadline), now)?);
        for &(token, _flags) in events.iter() {
            let Some(f) = flows.get_mut(token as usize) else {
                continue;
            };
            if f.error.is_some() || f.report_done {
                continue;
            }
            if let Some(done) = read_report(f) {
                waiting -= 1;
                if done {
                    last_report_ns = last_report_ns.max(now_ns());
                }
            }
        }
    }
    Ok(last_report_ns)
}

impl Flow {
    /// What the flow did: its TCP_INFO is read now.
    fn outcome(self) -> FlowOutcome {
        let f = self;
        let info = tcp_info(f.stream.as_fd()).ok();
        let error = f.error.or_else(|| {
            (!f.report_done).then(|| "no byte count from the receiver in time".to_string())
        });
        FlowOutcome {
            flow: f.id,
            tx_bytes: f.sent,
            rx_reported: f.report_done.then(|| u64::from_le_bytes(f.report)),
            info,
            error,
        }
    }
}

/// One write of up to `buf.len()` bytes.
fn write_once(f: &mut Flow, buf: &[u8], tx_live: &AtomicU64, out: &mut Outcome) -> usize {
    match f.stream.write(buf) {
        Ok(n) => {
            f.sent += n as u64;
            tx_live.fetch_add(n as u64, Ordering::Relaxed);
            n
        }
        Err(e) if e.kind() == ErrorKind::WouldBlock => {
            f.writable = false;
            out.socket_full += 1;
            0
        }
        Err(e) if e.kind() == ErrorKind::Interrupted => 0,
        Err(e) => {
            out.send_errors += 1;
            f.error = Some(format!("write: {e}"));
            0
        }
    }
}

/// Writes what a scheduled flow owes, until it is paid or the socket is full.
fn flush_owed(f: &mut Flow, buf: &[u8], tx_live: &AtomicU64, out: &mut Outcome) {
    while f.owed > 0 && f.writable && f.error.is_none() {
        let len = (f.owed as usize).min(buf.len());
        let n = write_once(f, &buf[..len], tx_live, out);
        f.owed -= n as u64;
    }
    if f.owed > 0 && !f.writable {
        out.backpressure_waits += 1;
    }
}

/// Reads what has arrived of the receiver's 8-byte count: `Some(true)` once complete,
/// `Some(false)` if the connection ended without it (the flow's error says why), `None` while
/// it is still on its way.
fn read_report(f: &mut Flow) -> Option<bool> {
    loop {
        match f.stream.read(&mut f.report[f.report_got..]) {
            Ok(0) => {
                f.error = Some("the receiver closed without sending its byte count".into());
                return Some(false);
            }
            Ok(n) => {
                f.report_got += n;
                if f.report_got == REPORT_LEN {
                    f.report_done = true;
                    return Some(true);
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return None,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                f.error = Some(format!("reading the receiver's count: {e}"));
                return Some(false);
            }
        }
    }
}

/// Payload bytes the peer acknowledged (hello excluded): what reached the receiver's kernel.
pub(crate) fn acked_payload(info: &TcpInfo) -> Option<u64> {
    info.acked_payload(HELLO_LEN as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::time::Duration;

    /// A greedy flow whose socket always has room does not poll between its turns: epoll is
    /// asked only once the socket is full (then at the deadline or each tick).
    #[test]
    fn a_writable_greedy_flow_writes_without_polling() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        // Accepted and never read: the socket fills once, after many small writes.
        let (_peer, _) = listener.accept().unwrap();
        stream.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let start_ns = now_ns() + 1_000_000;
        let plan = Plan {
            flows: vec![(0, stream)],
            total_flows: 1,
            mode: WriteMode::Greedy { write_size: 256 },
            start_ns,
            deadline_ns: start_ns + 200_000_000,
            stop: stop.clone(),
            tx_live: Arc::new(AtomicU64::new(0)),
        };
        // No count will come back: a stop after the deadline keeps the drain short.
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            stop.store(true, Ordering::Relaxed);
        });
        let out = run(plan).unwrap();
        stopper.join().unwrap();
        let writes = out.flows[0].tx_bytes / 256;
        assert!(
            writes > 100,
            "only {writes} writes before the socket was full"
        );
        // The deadline is 4 ticks away once the socket is full: at most about 5 waits then.
        assert!(
            out.send_polls <= out.socket_full + 6,
            "{} polls for {writes} writes and {} full sockets",
            out.send_polls,
            out.socket_full
        );
    }
}
