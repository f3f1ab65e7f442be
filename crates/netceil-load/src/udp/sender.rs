//! One UDP sender thread: a share of the flows, a share of the rate, one pacer.
//!
//! Sends go out in `sendmmsg` batches of up to [`BATCH`](super::mmsg::BATCH) datagrams to one flow's socket; the
//! next batch goes to the next flow (round robin per call; a burst stays on one flow). Paced, a batch is what the pacer
//! says is due (one burst when on time, everything owed when behind); unpaced, always a full
//! batch. Each datagram gets its own sequence number; the timestamp is read once per batch.
//!
//! With GSO (`gso_segments > 1`) a message is a super-buffer of up to that many datagrams laid
//! end to end, each with its own header, that the kernel cuts into datagrams (`UDP_SEGMENT`);
//! a batch is then up to [`gso::SEND_MSGS`] super-buffers.

use std::net::UdpSocket;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hdrhistogram::Histogram;
use netceil_model::PacingMode;

use super::gso;
use super::mmsg::SendBatch;
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
    /// Datagrams per send with UDP GSO; 1 sends each datagram on its own (no GSO).
    pub gso_segments: usize,
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
    /// Messages the kernel took: one per datagram, or with GSO one per super-buffer.
    pub sends: u64,
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
    let segs = plan.gso_segments.max(1);
    let mut batch = if segs > 1 {
        // `validate` keeps GSO payloads under 32 KiB, so the segment size fits a u16.
        SendBatch::with_slots(payload * segs, gso::SEND_MSGS, Some(payload as u16))
    } else {
        SendBatch::new(payload)
    };
    // Datagrams one call can carry.
    let capacity = (batch.slots() * segs) as u64;
    let mut pacer = Pacer::new(
        plan.pacing,
        plan.packet_interval_ns,
        plan.burst,
        plan.start_ns,
    );
    let paced = pacer.mode() != PacingMode::None;
    let burst = u64::from(plan.burst.max(1));
    // Catching up, send whole bursts per call where a burst fits in one.
    let chunk_cap = if burst <= capacity {
        capacity / burst * burst
    } else {
        capacity
    };
    let mut remaining = plan.count.unwrap_or(u64::MAX);
    let mut owed = 0u64;
    let mut fresh_burst = false;
    let mut flow_index = 0usize;
    let mut packets = 0u64;
    let mut sends = 0u64;
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
        let want = if paced { owed.min(chunk_cap) } else { capacity }.min(remaining) as usize;
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
        let first = Header {
            kind: Kind::Data,
            run_id: plan.run_id,
            flow: flow.flow,
            seq: flow.sent as u32,
            ts_ns: ts,
        };
        let msgs = fill_batch(&mut batch, payload, segs, want, first);
        match batch.send(fd, msgs) {
            Ok(m) => {
                // Every message is full but the last: the first `m` carry this many.
                let k = (m * segs).min(want);
                sends += m as u64;
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
        sends,
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

/// Lays `want` datagrams out in `batch`, `segs` per message (1 without GSO), with sequence
/// numbers from `first.seq` on; returns the messages to send.
fn fill_batch(
    batch: &mut SendBatch,
    payload: usize,
    segs: usize,
    want: usize,
    first: Header,
) -> usize {
    if segs == 1 {
        for k in 0..want {
            Header {
                seq: first.seq.wrapping_add(k as u32),
                ..first
            }
            .write(batch.buf_mut(k));
        }
        return want;
    }
    let msgs = want.div_ceil(segs);
    for m in 0..msgs {
        let n = segs.min(want - m * segs);
        let head = Header {
            seq: first.seq.wrapping_add((m * segs) as u32),
            ..first
        };
        let len = gso::fill_super(batch.buf_mut(m), payload, n, head);
        batch.set_len(m, len);
    }
    msgs
}
