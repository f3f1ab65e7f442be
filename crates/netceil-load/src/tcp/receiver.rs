//! The client's side of reverse streams (iperf3's `-R`): the far end sends, this thread reads.
//!
//! One epoll loop reads every stream of its share until the deadline, then half-closes each
//! (which tells the server to stop sending, see [`super::hello`]) and reads on until the
//! server's end of stream, for at most [`DRAIN_NS`]. What it read is the goodput: the
//! receiving application's count, as for forward streams. Streams wake it as the sink's do
//! (see [`super::wakes`]): in batches when their buffer is fixed, unless asked otherwise.

use std::io::{ErrorKind, Read};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use nix::sys::epoll::EpollFlags;

use super::evloop::EventLoop;
use super::rcvbuf::Sized;
use super::wakes::{self, Batch, Batching, SinkWakes, STALE_NS};
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
    /// (flow id, stream, how its receive buffer was sized).
    pub flows: Vec<(u32, TcpStream, Sized)>,
    pub start_ns: u64,
    pub deadline_ns: u64,
    pub stop: Arc<AtomicBool>,
    /// Bytes read so far by this thread, for progress lines.
    pub rx_live: Arc<AtomicU64>,
    /// How the streams wake this thread.
    pub wakes: SinkWakes,
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
    /// What batching the streams' wake-ups did.
    pub wakes: Batching,
}

struct Flow {
    id: u32,
    stream: TcpStream,
    bytes: u64,
    ended: bool,
    error: Option<String>,
    batch: Option<Batch>,
}

impl Flow {
    /// Reads the flow until it would block, then lets its batching see what was read; true
    /// when it has ended (or failed).
    fn turn(
        &mut self,
        buf: &mut [u8],
        live: &AtomicU64,
        last_data_ns: &mut u64,
        wakes: &mut Batching,
    ) -> bool {
        let before = self.bytes;
        let done = read_flow(self, buf, live, last_data_ns);
        wakes::after_read(&mut self.batch, &self.stream, self.bytes - before, wakes);
        done
    }
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
    for (i, (id, stream, sized)) in plan.flows.into_iter().enumerate() {
        ev.add(&stream, i as u64, EpollFlags::EPOLLIN)?;
        flows.push(Flow {
            id,
            stream,
            bytes: 0,
            ended: false,
            error: None,
            batch: Batch::new(plan.wakes, sized, plan.start_ns),
        });
    }
    let mut wakes = Batching::default();
    // When to look for batched streams left unread for STALE_NS; `None` while none holds a mark.
    let mut stale_check_ns: Option<u64> = None;
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
        // A stream holding a mark is looked at within STALE_NS even if it never wakes us.
        let wake = stale_check_ns.map_or(wake, |t| wake.min(t));
        ready.clear();
        ready.extend(ev.wait(Some(wake), now)?.map(|(t, _)| t as usize));
        for &i in &ready {
            let Some(f) = flows.get_mut(i) else { continue };
            if f.ended || f.error.is_some() {
                continue;
            }
            if f.turn(&mut buf, &plan.rx_live, &mut last_data_ns, &mut wakes) {
                ev.delete(&f.stream);
                open -= 1;
            } else if stale_check_ns.is_none() && wakes::holds_mark(&f.batch) {
                stale_check_ns = Some(now_ns() + STALE_NS);
            }
        }
        let now = now_ns();
        if stale_check_ns.is_some_and(|t| now >= t) {
            let mut marked = false;
            for f in flows.iter_mut().filter(|f| !f.ended && f.error.is_none()) {
                if f.batch.as_ref().is_some_and(|b| b.stale(now))
                    && f.turn(&mut buf, &plan.rx_live, &mut last_data_ns, &mut wakes)
                {
                    ev.delete(&f.stream);
                    open -= 1;
                    continue;
                }
                marked |= wakes::holds_mark(&f.batch);
            }
            stale_check_ns = marked.then_some(now + STALE_NS);
        }
    }
    for f in &flows {
        if let Some(b) = &f.batch {
            wakes.add(b, false);
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
        wakes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::rcvbuf::{self, RecvBuffer};
    use std::net::TcpListener;
    use std::time::Duration;

    /// A few bytes sent after a batched fast stream slows down are read within the stale
    /// check, not at the end of the stream.
    #[test]
    fn a_slow_tail_after_a_fast_stream_is_read_within_the_stale_check() {
        let _one = netceil_testkit::machine_lock();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        let sized = rcvbuf::apply(&c, RecvBuffer::Fixed(1 << 20));
        c.set_nonblocking(true).unwrap();
        let live = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let start_ns = now_ns();
        let plan = Plan {
            flows: vec![(0, c, sized)],
            start_ns,
            deadline_ns: start_ns + 20_000_000_000,
            stop: stop.clone(),
            rx_live: live.clone(),
            wakes: SinkWakes::Batched,
        };
        let reader = std::thread::spawn(move || run(plan));
        let (sent, tail) = crate::tcp::wakes::testing::fast_then_tail(&mut s, &live);
        stop.store(true, Ordering::Relaxed);
        drop(s);
        let out = reader.join().unwrap().unwrap();
        assert_eq!(out.flows[0].rx_bytes, sent);
        // The tail fell under the mark the fast stream had: only the stale read brings it.
        assert_eq!(out.wakes.batched, 1, "{:?}", out.wakes);
        // Generous for a loaded machine, far below "never".
        assert!(
            tail < Duration::from_millis(500),
            "the tail waited {tail:?}"
        );
    }
}
