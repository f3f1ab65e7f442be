//! One UDP sender thread: a share of the flows, a share of the rate, one pacer.
//!
//! Sends go out in `sendmmsg` batches of up to [`BATCH`] datagrams to one flow's socket; the
//! next batch goes to the next flow (round robin per call; a burst stays on one flow). Paced, a batch is what the pacer
//! says is due (one burst when on time, everything owed when behind); unpaced, always a full
//! batch. Each datagram gets its own sequence number; the timestamp is read once per batch.

use std::net::UdpSocket;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hdrhistogram::Histogram;
use netceil_model::PacingMode;

use super::mmsg::{SendBatch, BATCH};
use crate::clock::{now_ns, sleep_until_ns, thread_cpu_ns};
use crate::header::{Header, Kind};
use crate::pacing::Pacer;

/// A paced sender never sleeps longer than this at a time, so a stop request is seen promptly.
const MAX_SLEEP_NS: u64 = 50_000_000;

/// One flow: its socket and how many datagrams it has sent.
#[derive(Debug)]
pub struct FlowSocket {
    pub flow: u16,
    pub socket: UdpSocket,
    pub sent: u64,
}

/// What one sender thread is to do.
#[derive(Debug)]
pub struct SenderPlan {
    pub flows: Vec<FlowSocket>,
    /// Gap between this thread's datagrams, ns; `None` = unpaced.
    pub packet_interval_ns: Option<f64>,
    pub pacing: PacingMode,
    pub burst: u32,
    /// This thread's share of `--count`.
    pub count: Option<u64>,
    /// When this thread's schedule starts (threads are staggered by one global interval).
    pub start_ns: u64,
    pub deadline_ns: u64,
    pub payload_bytes: usize,
    pub run_id: u16,
}

/// The per-thread live counter, alone on its cache line so threads do not share one.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct TxLive {
    pub packets: AtomicU64,
}

/// Why a sender thread stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Duration,
    Count,
    Interrupted,
}

/// What one sender thread did.
#[derive(Debug)]
pub struct SenderReport {
    pub flows: Vec<FlowSocket>,
    pub packets: u64,
    pub cpu_ns: u64,
    /// CPU spent busy-waiting (thread CPU clock around each spin).
    pub spin_cpu_ns: u64,
    /// Wall time spent busy-waiting, as the pacer counts it (includes time preempted).
    pub spin_wall_ns: u64,
    pub gap_errors: Histogram<u64>,
    pub late_bursts: u64,
    pub send_errors: u64,
    pub last_error: Option<String>,
    /// When the thread's schedule started.
    pub start_ns: u64,
    /// When the thread's sending time ended: the deadline, the end of the last paced slot, or
    /// the moment it stopped.
    pub end_ns: u64,
    pub stopped_by: StopReason,
    pub paced: bool,
}

/// Runs one sender thread's share of the load to its end, or until either `stop` flag is set
/// (the user's Ctrl-C, or the engine aborting the run).
pub fn run_sender(mut plan: SenderPlan, stop: [&AtomicBool; 2], live: &TxLive) -> SenderReport {
    let cpu_start = thread_cpu_ns();
    let payload = plan.payload_bytes;
    let mut batch = SendBatch::new(payload);
    let mut pacer = Pacer::new(
        plan.pacing,
        plan.packet_interval_ns,
        plan.burst,
        plan.start_ns,
    );
    let paced = pacer.mode() != PacingMode::None;
    let burst = u64::from(plan.burst.max(1));
    // Catching up, send whole bursts per call where a burst fits in one.
    let chunk_cap = if burst <= BATCH as u64 {
        BATCH as u64 / burst * burst
    } else {
        BATCH as u64
    };
    let mut remaining = plan.count.unwrap_or(u64::MAX);
    let mut owed = 0u64;
    let mut fresh_burst = false;
    let mut flow_index = 0usize;
    let mut packets = 0u64;
    let mut send_errors = 0u64;
    let mut last_error = None;
    let mut spin_cpu_ns = 0u64;

    if pacer.mode() == PacingMode::Sleep {
        // The default 50 µs timer slack would make every paced sleep that much late; ask for
        // timers as exact as the kernel can make them. Failure only costs precision.
        let _ = nix::sys::prctl::set_timerslack(1);
    }
    sleep_until_ns(plan.start_ns);
    let (end_ns, stopped_by) = loop {
        if stop[0].load(Ordering::Relaxed) || stop[1].load(Ordering::Relaxed) {
            break (now_ns(), StopReason::Interrupted);
        }
        if remaining == 0 {
            // The last datagram's slot lasts until the next one would have been due.
            let end = if paced && owed == 0 {
                pacer.scheduled_ns(pacer.bursts_scheduled())
            } else {
                now_ns()
            };
            break (end.min(plan.deadline_ns), StopReason::Count);
        }
        if paced && owed == 0 {
            let due_at = pacer.scheduled_ns(pacer.bursts_scheduled());
            if due_at >= plan.deadline_ns {
                break (plan.deadline_ns, StopReason::Duration);
            }
            let now = now_ns();
            if due_at > now + MAX_SLEEP_NS {
                sleep_until_ns(now + MAX_SLEEP_NS);
                continue;
            }
            // Spin CPU is read from the thread's CPU clock around each busy-wait that will
            // happen (the next slot is ahead): the pacer's own spin figure is wall time, which
            // also counts time the thread was preempted while spinning.
            let measure_spin = pacer.mode() == PacingMode::Spin && due_at > now;
            let cpu_before_wait = if measure_spin { thread_cpu_ns() } else { 0 };
            let due = pacer.wait(plan.deadline_ns);
            if measure_spin {
                spin_cpu_ns += thread_cpu_ns().saturating_sub(cpu_before_wait);
            }
            match due {
                Some(due) => {
                    owed = due.bursts * burst;
                    fresh_burst = true;
                }
                None => break (plan.deadline_ns, StopReason::Duration),
            }
        }
        let want = if paced {
            owed.min(chunk_cap)
        } else {
            BATCH as u64
        }
        .min(remaining) as usize;
        let ts = now_ns();
        if ts >= plan.deadline_ns {
            // Paced and behind, what is still owed at the deadline is not sent: the run's time
            // is up, and the shortfall shows as achieved < requested.
            break (
                if paced { plan.deadline_ns } else { ts },
                StopReason::Duration,
            );
        }
        let flow = &mut plan.flows[flow_index];
        let fd = flow.socket.as_fd();
        for k in 0..want {
            Header {
                kind: Kind::Data,
                run_id: plan.run_id,
                flow: flow.flow,
                seq: (flow.sent + k as u64) as u32,
                ts_ns: ts,
            }
            .write(batch.buf_mut(k));
        }
        match batch.send(fd, want) {
            Ok(k) => {
                flow.sent += k as u64;
                packets += k as u64;
                remaining -= k as u64;
                owed = owed.saturating_sub(k as u64);
            }
            Err(e) => {
                // Counted, not fatal: ENOBUFS (queue full) or ECONNREFUSED (an ICMP error from
                // an earlier datagram). A paced sender gives these datagrams up and keeps time.
                send_errors += 1;
                last_error = Some(e.to_string());
                owed = owed.saturating_sub(want as u64);
            }
        }
        if paced && fresh_burst {
            pacer.record_send(ts);
            fresh_burst = false;
        }
        // A burst stays on one flow: move on only at a burst boundary. (`%`, not
        // `is_multiple_of`, which needs Rust 1.87; the workspace declares 1.85.)
        #[allow(clippy::manual_is_multiple_of)]
        let at_burst_boundary = owed % burst == 0;
        if !paced || at_burst_boundary {
            flow_index = (flow_index + 1) % plan.flows.len();
        }
        live.packets.store(packets, Ordering::Relaxed);
    };
    live.packets.store(packets, Ordering::Relaxed);
    SenderReport {
        flows: plan.flows,
        packets,
        cpu_ns: thread_cpu_ns().saturating_sub(cpu_start),
        spin_cpu_ns,
        spin_wall_ns: pacer.spin_ns(),
        gap_errors: pacer.gap_errors().clone(),
        late_bursts: pacer.late_bursts(),
        send_errors,
        last_error,
        start_ns: plan.start_ns,
        end_ns,
        stopped_by,
        paced,
    }
}
