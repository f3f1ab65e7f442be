//! The client's side of reverse streams (iperf3's `-R`): the far end sends, this thread reads.
//!
//! One epoll loop reads every stream of its share until the deadline, then half-closes each
//! (which tells the server to stop sending, see [`super::hello`]) and reads on until the
//! server's end of stream, for at most [`DRAIN_NS`]. What it read is the goodput: the
//! receiving application's count, as for forward streams.

use std::io::{ErrorKind, Read};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use nix::sys::epoll::EpollFlags;

use super::evloop::EventLoop;
use crate::buf::AlignedBuf;
use crate::clock::{now_ns, sleep_until_ns, thread_cpu_ns};
use crate::LoadError;

/// How long to read on after the half-close for the server's end of stream.
const DRAIN_NS: u64 = 3_000_000_000;
/// The same after a stop request.
const DRAIN_AFTER_STOP_NS: u64 = 200_000_000;
const READ_BUF: usize = 1024 * 1024;

/// One receiving thread's assignment.
pub(crate) struct Plan {
    pub flows: Vec<(u32, TcpStream)>,
    pub start_ns: u64,
    pub deadline_ns: u64,
    pub stop: Arc<AtomicBool>,
    /// Bytes read so far by this thread, for progress lines.
    pub rx_live: Arc<AtomicU64>,
}

/// What one reverse flow delivered.
#[derive(Debug)]
pub(crate) struct FlowOutcome {
    pub flow: u32,
    pub rx_bytes: u64,
    /// The server ended its stream (all it sent was read).
    pub ended: bool,
    pub error: Option<String>,
}

/// What one receiving thread did.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub flows: Vec<FlowOutcome>,
    pub cpu_ns: u64,
    /// When this thread half-closed its streams.
    pub recv_end_ns: u64,
    /// When it last read data.
    pub last_data_ns: u64,
}

struct Flow {
    id: u32,
    stream: TcpStream,
    bytes: u64,
    ended: bool,
    error: Option<String>,
}

/// Reads the flow until it would block; true when it has ended (or failed).
fn read_flow(f: &mut Flow, buf: &mut [u8], live: &AtomicU64, last_data_ns: &mut u64) -> bool {
    loop {
        match f.stream.read(buf) {
            Ok(0) => {
                f.ended = true;
                return true;
            }
            Ok(n) => {
                f.bytes += n as u64;
                live.fetch_add(n as u64, Ordering::Relaxed);
                *last_data_ns = now_ns();
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                f.error = Some(e.to_string());
                return true;
            }
        }
    }
}

pub(crate) fn run(plan: Plan) -> Result<Outcome, LoadError> {
    let cpu_start = thread_cpu_ns();
    let mut ev = EventLoop::new(plan.flows.len() + 1)?;
    let mut flows: Vec<Flow> = Vec::with_capacity(plan.flows.len());
    for (i, (id, stream)) in plan.flows.into_iter().enumerate() {
        ev.add(&stream, i as u64, EpollFlags::EPOLLIN)?;
        flows.push(Flow {
            id,
            stream,
            bytes: 0,
            ended: false,
            error: None,
        });
    }
    let mut buf = AlignedBuf::zeroed(READ_BUF);
    let mut last_data_ns = plan.start_ns;
    let mut open = flows.len();
    let mut ready = Vec::with_capacity(flows.len().min(1024));
    sleep_until_ns(plan.start_ns);
    // Read until the deadline; then half-close and read to each server's end of stream.
    let mut recv_end_ns = None;
    let mut drain_until = u64::MAX;
    while open > 0 {
        let now = now_ns();
        let stopping = plan.stop.load(Ordering::Relaxed);
        if recv_end_ns.is_none() && (now >= plan.deadline_ns || stopping) {
            recv_end_ns = Some(now.min(plan.deadline_ns));
            for f in flows.iter().filter(|f| !f.ended && f.error.is_none()) {
                let _ = f.stream.shutdown(Shutdown::Write);
            }
            drain_until = now
                + if stopping {
                    DRAIN_AFTER_STOP_NS
                } else {
                    DRAIN_NS
                };
        }
        if now >= drain_until {
            break;
        }
        let wake = recv_end_ns.map_or(plan.deadline_ns, |_| drain_until);
        ready.clear();
        ready.extend(ev.wait(Some(wake), now)?.map(|(t, _)| t as usize));
        for &i in &ready {
            let Some(f) = flows.get_mut(i) else { continue };
            if f.ended || f.error.is_some() {
                continue;
            }
            if read_flow(f, &mut buf, &plan.rx_live, &mut last_data_ns) {
                ev.delete(&f.stream);
                open -= 1;
            }
        }
    }
    let recv_end_ns = recv_end_ns.unwrap_or_else(now_ns);
    let flows = flows
        .into_iter()
        .map(|f| FlowOutcome {
            flow: f.id,
            rx_bytes: f.bytes,
            ended: f.ended,
            error: f.error,
        })
        .collect();
    Ok(Outcome {
        flows,
        cpu_ns: thread_cpu_ns() - cpu_start,
        recv_end_ns,
        last_data_ns,
    })
}
