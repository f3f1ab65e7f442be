//! The UDP receiver: reads in batches, accounts every datagram by its header, answers `Fin`
//! with a `FinReport` and echoes `Request` as `Response`.
//!
//! Two ways to key flows:
//! - **run** (in-process `netceil run`): one known run id and flow ids `0..flows`, looked up by
//!   index; datagrams of any other run are foreign.
//! - **serve** (`netceil recv`): any sender; a flow is (source address, run id, flow id).
//!
//! Socket-level drops come from the kernel's own per-socket counter, read with `SO_MEMINFO`
//! every [`DROP_POLL_NS`] while datagrams arrive (live) and at the end. (The `SO_RXQ_OVFL`
//! control message would carry the same counter on every datagram read once it is non-zero:
//! two more copies to user space per datagram, with the source address, about 10 % of the
//! receiver's time at 1400 B.)
//!
//! An in-process run's receiver does not ask for source addresses: its flows are known by run
//! and flow id, and it answers no one.
//!
//! With `UDP_GRO` on ([`Receiver::with_gro`]), one read may hold several datagrams the kernel
//! coalesced; they are cut apart by the segment size of its control message and each is
//! accounted by its own header, as if read alone.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::gso;
use super::mmsg::{self, RecvBatch, RecvWait, SendBatch, BATCH};
use super::seq::{window_for_flows, Arrival, SeqTracker};
use super::sockets::DropCounter;
use crate::clock::{now_ns, sleep_until_ns};
use crate::header::{FarKernel, Fin, FinReport, Header, Kind, HEADER_LEN};

/// Live counters a receiver thread publishes after each batch, read by the progress loop.
#[derive(Debug, Default)]
pub struct RxLive {
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
    pub lost_so_far: AtomicU64,
    pub socket_drops: AtomicU64,
}

/// Tells a running receiver when to stop.
#[derive(Debug, Default)]
pub struct RxControl {
    /// The senders are done: read until the socket stays empty for the idle time, then stop.
    pub drain: AtomicBool,
    /// Stop at the next wake-up without draining.
    pub halt: AtomicBool,
}

/// How the receive loop waits for datagrams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxStrategy {
    /// Wait for a full batch (as udp_floor.c does) or one read timeout.
    FullBatch,
    /// Block until one datagram is there: lowest latency (echoed requests), but at high rates
    /// the sender's softirq pays a wake-up for nearly every datagram.
    WaitForOne,
    /// After each partial batch, pause `pause_ns` before polling again, so datagrams pile up
    /// and are read 64 at a time with few wake-ups (block only when the queue is empty).
    /// Adds up to `pause_ns` of delay; used where only counting matters.
    Coalesce { pause_ns: u64 },
}

/// The pause of [`RxStrategy::Coalesce`] in-process runs use.
pub const COALESCE_PAUSE_NS: u64 = 50_000;
/// Coalescing is only used with a receive buffer at least this big (granted): 1 MiB holds
/// several hundred small datagrams (≥ 0.4 ms at 2 Mpps), far more than arrive in one pause.
pub const COALESCE_MIN_RCVBUF: usize = 1 << 20;

/// Coalesce when the buffer can absorb a pause with room to spare; otherwise wait for full
/// batches as udp_floor.c does, so a small `--rcvbuf` measures the buffer, not our pause.
pub fn strategy_for_rcvbuf(granted: usize) -> RxStrategy {
    if granted >= COALESCE_MIN_RCVBUF {
        RxStrategy::Coalesce {
            pause_ns: COALESCE_PAUSE_NS,
        }
    } else {
        RxStrategy::FullBatch
    }
}

/// One flow as the receiver sees it.
#[derive(Debug, Clone)]
pub struct FlowState {
    pub source: Option<SocketAddr>,
    pub run_id: u16,
    pub flow: u16,
    pub tracker: SeqTracker,
    /// Payload bytes of unique datagrams.
    pub bytes: u64,
    /// Datagrams read after the drain deadline: they were still in flight when the measurement
    /// ended (counted by the tracker, reported apart from `received`).
    pub in_flight: u64,
    /// The sender's count for this flow, from its `Fin`.
    pub sender_count: Option<u64>,
}

impl FlowState {
    fn new(source: Option<SocketAddr>, run_id: u16, flow: u16, window: u64) -> FlowState {
        FlowState {
            source,
            run_id,
            flow,
            tracker: SeqTracker::with_window(window),
            bytes: 0,
            in_flight: 0,
            sender_count: None,
        }
    }
}

enum FlowTable {
    Run {
        run_id: u16,
        flows: Vec<FlowState>,
    },
    Serve {
        index: HashMap<(SocketAddr, u16, u16), usize>,
        flows: Vec<FlowState>,
        /// Socket drop total when each (source host, run id) was first seen: a standing
        /// receiver's drops before a run began are not that run's.
        run_drop_baseline: HashMap<(IpAddr, u16), u64>,
        /// The machine's kernel counters when each (source host, run id) was first seen, for
        /// the deltas its FinReports carry.
        run_kernel_baseline: HashMap<(IpAddr, u16), FarKernel>,
        last: Option<((SocketAddr, u16, u16), usize)>,
    },
}

/// Reads the receiving machine's kernel counters, given the sender's address (to find the
/// interface that faces it). Supplied by the program: the load engine reads no /proc file.
pub type KernelProbe = Arc<dyn Fn(SocketAddr) -> FarKernel + Send + Sync>;

/// Who a `netceil serve` test's receiver answers: one peer host, one run. Anything else is a
/// stray: counted, never answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admit {
    pub peer: IpAddr,
    pub run_id: u16,
}

/// Everything a receiver counted.
#[derive(Debug, Clone, Default)]
pub struct RxTotals {
    /// With an [`Admit`]: datagrams from another host or of another run, and Fins shorter than
    /// their answer would be. Counted here only, never answered.
    pub stray: u64,
    pub stray_bytes: u64,
    pub flows: Vec<FlowState>,
    /// Datagrams that are not ours: bad magic or version, unknown kind, another run id, an
    /// unknown flow, or too short.
    pub foreign: u64,
    /// Datagrams longer than the receive slot (cut, so not counted as ours).
    pub truncated: u64,
    pub requests_echoed: u64,
    pub fin_reports_sent: u64,
    /// Datagrams of flows beyond [`SERVE_MAX_FLOWS`] (not tracked, not in `foreign`).
    pub untracked: u64,
    /// Failed recvmmsg calls other than timeouts, and failed echo/report sends.
    pub errors: u64,
    pub last_error: Option<String>,
    /// The socket's drop total (SO_MEMINFO at the end); `None` if the kernel would not say.
    pub socket_drops: Option<u64>,
    /// The drain hit its time limit while datagrams were still arriving.
    pub drain_cut_short: bool,
    /// With UDP GRO: reads that held more than one datagram, and the datagrams they held.
    pub gro_reads: u64,
    pub gro_datagrams: u64,
}

/// The receive loop's state. Built in its own thread (the batches hold raw pointers).
pub struct Receiver<'a> {
    socket: &'a UdpSocket,
    batch: RecvBatch,
    replies: SendBatch,
    table: FlowTable,
    drops: DropCounter,
    strategy: RxStrategy,
    live: &'a RxLive,
    totals: RxTotals,
    kernel_probe: Option<KernelProbe>,
    admit: Option<Admit>,
    /// UDP GRO is on: cut each read by its segment size.
    gro: bool,
    unique_total: u64,
    bytes_total: u64,
    expected_total: u64,
    past_drain_deadline: bool,
    /// When the socket's drop counter is read next.
    next_drop_poll_ns: u64,
}

/// How often the socket's drop counter is read while datagrams arrive.
pub const DROP_POLL_NS: u64 = 10_000_000;

/// Flows a standalone receiver tracks at most; later ones are counted as untracked. With
/// [`SERVE_WINDOW`] this bounds the duplicate windows to 32 MiB.
pub const SERVE_MAX_FLOWS: usize = 16_384;
/// Duplicate window per flow of a standalone receiver.
pub const SERVE_WINDOW: u64 = 1 << 14;

/// How long the socket must stay empty before a drain ends.
const DRAIN_IDLE_NS: u64 = 30_000_000;
/// How long a drain may last at most.
const DRAIN_MAX_NS: u64 = 1_000_000_000;
/// Datagrams read after the drain limit, at most (a sender that never stops must not hold us).
const FINAL_SWEEP_MAX: u64 = 1 << 20;

impl<'a> Receiver<'a> {
    /// A receiver for an in-process run: only `run_id`, flows `0..flows`. See
    /// [`strategy_for_rcvbuf`] for `strategy`.
    pub fn for_run(
        socket: &'a UdpSocket,
        live: &'a RxLive,
        slot_len: usize,
        run_id: u16,
        flows: usize,
        strategy: RxStrategy,
    ) -> Receiver<'a> {
        let window = window_for_flows(flows);
        let flows = (0..flows)
            .map(|f| FlowState::new(None, run_id, f as u16, window))
            .collect();
        let mut r = Self::new(
            socket,
            live,
            slot_len,
            FlowTable::Run { run_id, flows },
            strategy,
        );
        r.batch = RecvBatch::new(slot_len).without_sources();
        r
    }

    /// A receiver for any sender (`netceil recv`). Returns as soon as one datagram is there, so
    /// echoed requests are not held back for a batch to fill.
    ///
    /// With `kernel_probe`, each run's FinReports carry the machine's kernel counter deltas
    /// from the run's first datagram (or, for an admitted run, from before it was granted)
    /// to its Fin.
    pub fn for_serve(
        socket: &'a UdpSocket,
        live: &'a RxLive,
        slot_len: usize,
        kernel_probe: Option<KernelProbe>,
    ) -> Receiver<'a> {
        let table = FlowTable::Serve {
            index: HashMap::new(),
            flows: Vec::new(),
            run_drop_baseline: HashMap::new(),
            run_kernel_baseline: HashMap::new(),
            last: None,
        };
        let mut r = Self::new(socket, live, slot_len, table, RxStrategy::WaitForOne);
        r.kernel_probe = kernel_probe;
        r
    }

    /// Waits for datagrams as `strategy` says instead of one by one.
    pub fn with_strategy(mut self, strategy: RxStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Reads coalesced buffers (the socket must have `UDP_GRO` on): slots of 64 KiB, each
    /// cut into its datagrams.
    pub fn with_gro(mut self) -> Self {
        let batch = RecvBatch::with_slots(gso::RECV_SLOT, gso::RECV_MSGS);
        self.batch = match self.table {
            FlowTable::Run { .. } => batch.without_sources(),
            FlowTable::Serve { .. } => batch,
        };
        self.gro = true;
        self
    }

    /// Only `admit`'s host and run are counted and answered; the rest are strays.
    ///
    /// The admitted run's baselines are set here, before its first datagram: the socket is
    /// new, so its drops start at 0, and `kernel_before` (read before the grant was sent)
    /// is the kernel's count before any of the run's datagrams arrived. Reading them at the
    /// first datagram instead would leave out whatever queued while this thread waited for a
    /// core.
    pub fn admitting(mut self, admit: Option<Admit>, kernel_before: Option<FarKernel>) -> Self {
        self.admit = admit;
        if let (
            Some(a),
            FlowTable::Serve {
                run_drop_baseline,
                run_kernel_baseline,
                ..
            },
        ) = (admit, &mut self.table)
        {
            run_drop_baseline.insert((a.peer, a.run_id), 0);
            if let Some(k) = kernel_before {
                run_kernel_baseline.insert((a.peer, a.run_id), k);
            }
        }
        self
    }

    /// Under an [`Admit`], whether datagram `i` is from the admitted host and run; counts it as
    /// a stray when not.
    #[inline]
    fn admitted(&mut self, i: usize, h: Option<&Header>, len: usize) -> bool {
        let Some(a) = self.admit else {
            return true;
        };
        let ok = h.is_some_and(|h| h.run_id == a.run_id)
            && self.batch.source(i).is_some_and(|s| s.ip() == a.peer);
        if !ok {
            self.totals.stray += 1;
            self.totals.stray_bytes += len as u64;
        }
        ok
    }

    /// Bytes `start..start + len` of message `i` (cut to what its slot holds).
    #[inline]
    fn bytes(&self, i: usize, part: (usize, usize)) -> &[u8] {
        part_of(&self.batch, i, part)
    }

    fn new(
        socket: &'a UdpSocket,
        live: &'a RxLive,
        slot_len: usize,
        table: FlowTable,
        strategy: RxStrategy,
    ) -> Receiver<'a> {
        Receiver {
            socket,
            batch: RecvBatch::new(slot_len),
            replies: SendBatch::new(slot_len.max(HEADER_LEN + FinReport::FULL_LEN)),
            table,
            drops: DropCounter::default(),
            strategy,
            live,
            totals: RxTotals::default(),
            kernel_probe: None,
            admit: None,
            gro: false,
            unique_total: 0,
            bytes_total: 0,
            expected_total: 0,
            past_drain_deadline: false,
            next_drop_poll_ns: 0,
        }
    }

    /// Reads until `ctl.halt`, or until `ctl.drain` and the socket has stayed empty for a short
    /// idle time (at most [`DRAIN_MAX_NS`]); then returns everything counted.
    pub fn run(mut self, ctl: &RxControl) -> RxTotals {
        let mut drain_started: Option<u64> = None;
        let mut last_data_ns = now_ns();
        // Coalescing: after a batch, poll without blocking (the queue had data a moment ago);
        // block again only once a poll finds the queue empty.
        let mut poll_next = false;
        loop {
            let wait = match self.strategy {
                RxStrategy::WaitForOne => RecvWait::One,
                RxStrategy::FullBatch => RecvWait::FullBatch,
                RxStrategy::Coalesce { .. } if poll_next => RecvWait::Never,
                RxStrategy::Coalesce { .. } => RecvWait::One,
            };
            match self.batch.recv(self.socket.as_fd(), wait) {
                Ok(n) => {
                    if n > 0 {
                        last_data_ns = now_ns();
                    }
                    self.process(n);
                    if let RxStrategy::Coalesce { pause_ns } = self.strategy {
                        poll_next = true;
                        if n < self.batch.slots() {
                            // The queue is drained: let it fill while we are off its wait
                            // queue, so the sender's softirq need not wake us per datagram.
                            sleep_until_ns(now_ns() + pause_ns);
                        }
                    }
                }
                Err(e) if is_timeout(&e) => poll_next = false,
                Err(e) => self.error(&e),
            }
            if ctl.halt.load(Ordering::Relaxed) {
                break;
            }
            if ctl.drain.load(Ordering::Relaxed) {
                let now = now_ns();
                let started = *drain_started.get_or_insert(now);
                if now.saturating_sub(last_data_ns) >= DRAIN_IDLE_NS {
                    break;
                }
                if now - started >= DRAIN_MAX_NS {
                    self.totals.drain_cut_short = true;
                    self.final_sweep();
                    break;
                }
            }
        }
        self.finish()
    }

    /// Reads what is still queued without waiting; it was in flight when the drain ended.
    fn final_sweep(&mut self) {
        self.past_drain_deadline = true;
        let mut swept = 0u64;
        while swept < FINAL_SWEEP_MAX {
            match self.batch.recv(self.socket.as_fd(), RecvWait::Never) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    swept += n as u64;
                    self.process(n);
                }
            }
        }
    }

    fn error(&mut self, e: &io::Error) {
        self.totals.errors += 1;
        self.totals.last_error = Some(e.to_string());
        // A persistent error (e.g. EBADF) must not become a busy loop.
        std::thread::sleep(std::time::Duration::from_millis(1));
    }

    fn finish(mut self) -> RxTotals {
        self.totals.socket_drops = match mmsg::socket_drops(self.socket.as_fd()) {
            Ok(raw) => {
                self.drops.update(raw);
                Some(self.drops.total())
            }
            // Without SO_MEMINFO nothing is known (the kernels with GSO all have it).
            Err(_) => None,
        };
        self.publish();
        self.totals.flows = match self.table {
            FlowTable::Run { flows, .. } | FlowTable::Serve { flows, .. } => flows,
        };
        self.totals
    }

    fn publish(&self) {
        self.live
            .packets
            .store(self.unique_total, Ordering::Relaxed);
        self.live.bytes.store(self.bytes_total, Ordering::Relaxed);
        self.live.lost_so_far.store(
            self.expected_total.saturating_sub(self.unique_total),
            Ordering::Relaxed,
        );
        self.live
            .socket_drops
            .store(self.drops.total(), Ordering::Relaxed);
    }

    /// Accounts the `n` messages of the last batch (each one datagram, or with GRO several)
    /// and sends any replies they call for.
    fn process(&mut self, n: usize) {
        let mut replies = 0usize;
        for i in 0..n {
            let len = self.batch.len(i);
            let segment = if self.gro {
                self.batch.gro_segment(i).filter(|&s| s < len)
            } else {
                None
            };
            match segment {
                None => self.datagram(i, (0, len), &mut replies),
                Some(seg) => {
                    self.totals.gro_reads += 1;
                    for part in gso::split(len, seg) {
                        self.totals.gro_datagrams += 1;
                        self.datagram(i, part, &mut replies);
                    }
                }
            }
        }
        if n > 0 {
            let now = now_ns();
            if now >= self.next_drop_poll_ns {
                self.next_drop_poll_ns = now + DROP_POLL_NS;
                if let Ok(raw) = mmsg::socket_drops(self.socket.as_fd()) {
                    self.drops.update(raw);
                }
            }
        }
        self.flush_replies(replies);
        self.publish();
    }

    /// Accounts one datagram, bytes `part` of message `i`; queues the reply it calls for.
    fn datagram(&mut self, i: usize, part: (usize, usize), replies: &mut usize) {
        let len = part.1;
        let header = Header::read(self.bytes(i, part));
        if !self.admitted(i, header.as_ref(), len) {
            return;
        }
        if self.batch.truncated(i) {
            self.totals.truncated += 1;
            return;
        }
        let Some(h) = header else {
            self.totals.foreign += 1;
            return;
        };
        if *replies == self.replies.slots() && matches!(h.kind, Kind::Request | Kind::Fin) {
            // A coalesced read can call for more replies than a batch holds.
            self.flush_replies(*replies);
            *replies = 0;
        }
        match h.kind {
            Kind::Data => self.account(i, &h, len),
            Kind::Request => {
                let src = self.batch.source(i);
                match src {
                    Some(src) if len <= self.replies.slot_len() => {
                        let dgram = part_of(&self.batch, i, part);
                        let out = self.replies.buf_mut(*replies);
                        out[..len].copy_from_slice(dgram);
                        // Same header and payload; only the kind nibble changes.
                        out[2] = (out[2] & 0xF0) | Kind::Response as u8;
                        self.replies.set_len(*replies, len);
                        self.replies.set_dest(*replies, src);
                        *replies += 1;
                        self.totals.requests_echoed += 1;
                    }
                    _ => self.totals.foreign += 1,
                }
            }
            Kind::Fin => {
                if let Some((src, body)) = self.fin(i, &h, part) {
                    let mut probe = [0u8; FinReport::FULL_LEN];
                    if self.admit.is_some() && HEADER_LEN + body.write(&mut probe) > len {
                        // Answering would send more than arrived: a serving receiver
                        // never amplifies, so an unpadded Fin goes unanswered.
                        self.totals.stray += 1;
                        self.totals.stray_bytes += len as u64;
                        return;
                    }
                    let out = self.replies.buf_mut(*replies);
                    Header {
                        kind: Kind::FinReport,
                        ts_ns: now_ns(),
                        ..h
                    }
                    .write(out);
                    let body_len = body.write(&mut out[HEADER_LEN..]);
                    self.replies.set_len(*replies, HEADER_LEN + body_len);
                    self.replies.set_dest(*replies, src);
                    *replies += 1;
                    self.totals.fin_reports_sent += 1;
                }
            }
            Kind::Response | Kind::FinReport => self.totals.foreign += 1,
        }
    }

    /// Sends replies `0..replies` in order; a failed one is skipped (counted) so one bad
    /// address cannot stall the rest.
    fn flush_replies(&mut self, replies: usize) {
        let mut sent = 0;
        while sent < replies {
            match self
                .replies
                .send_from(self.socket.as_fd(), sent, replies - sent)
            {
                Ok(k) => sent += k.max(1),
                Err(e) => {
                    self.totals.errors += 1;
                    self.totals.last_error = Some(format!("reply send: {e}"));
                    sent += 1;
                }
            }
        }
    }

    /// The flow a datagram belongs to; `None` after counting it as foreign or untracked.
    #[inline]
    fn lookup(&mut self, i: usize, h: &Header) -> Option<usize> {
        match &mut self.table {
            FlowTable::Run { run_id, flows } => {
                if h.run_id == *run_id && usize::from(h.flow) < flows.len() {
                    Some(usize::from(h.flow))
                } else {
                    self.totals.foreign += 1;
                    None
                }
            }
            FlowTable::Serve {
                index,
                flows,
                run_drop_baseline,
                run_kernel_baseline,
                last,
            } => {
                let Some(src) = self.batch.source(i) else {
                    self.totals.foreign += 1;
                    return None;
                };
                let key = (src, h.run_id, h.flow);
                if let Some((k, idx)) = last {
                    if *k == key {
                        return Some(*idx);
                    }
                }
                let idx = match index.get(&key) {
                    Some(&idx) => idx,
                    None if flows.len() >= SERVE_MAX_FLOWS => {
                        self.totals.untracked += 1;
                        return None;
                    }
                    None => {
                        flows.push(FlowState::new(Some(src), h.run_id, h.flow, SERVE_WINDOW));
                        index.insert(key, flows.len() - 1);
                        flows.len() - 1
                    }
                };
                let (drops, socket) = (self.drops, self.socket);
                run_drop_baseline
                    .entry((src.ip(), h.run_id))
                    .or_insert_with(|| {
                        let mut now = drops;
                        if let Ok(raw) = mmsg::socket_drops(socket.as_fd()) {
                            now.update(raw);
                        }
                        now.total()
                    });
                if let Some(probe) = &self.kernel_probe {
                    // Read once per run, at its first datagram, on this thread: about 0.1 ms
                    // (three /proc files and getifaddrs), which the socket's buffer absorbs
                    // (~45 datagrams at 450 kpps). The datagrams of that first batch may
                    // already be in the interface count.
                    run_kernel_baseline
                        .entry((src.ip(), h.run_id))
                        .or_insert_with(|| probe(src));
                }
                *last = Some((key, idx));
                Some(idx)
            }
        }
    }

    fn flows_mut(&mut self) -> &mut Vec<FlowState> {
        match &mut self.table {
            FlowTable::Run { flows, .. } | FlowTable::Serve { flows, .. } => flows,
        }
    }

    #[inline]
    fn account(&mut self, i: usize, h: &Header, len: usize) {
        let Some(idx) = self.lookup(i, h) else {
            return;
        };
        let len = len as u64;
        let late = self.past_drain_deadline;
        let flow = &mut self.flows_mut()[idx];
        let before = flow.tracker.counts().max_seen_plus_one;
        let arrival = flow.tracker.record(h.seq);
        let after = flow.tracker.counts().max_seen_plus_one;
        if arrival != Arrival::Duplicate {
            if late {
                flow.in_flight += 1;
            } else {
                flow.bytes += len;
            }
            self.unique_total += 1;
            if !late {
                self.bytes_total += len;
            }
        }
        self.expected_total += after - before;
    }

    /// Takes note of a Fin and returns the report to send back, with its destination; `None`
    /// (counted) if the Fin is malformed or not for a flow we track.
    fn fin(
        &mut self,
        i: usize,
        h: &Header,
        part: (usize, usize),
    ) -> Option<(SocketAddr, FinReport)> {
        let (Some(src), Some(fin)) = (
            self.batch.source(i),
            Fin::read(self.bytes(i, part).get(HEADER_LEN..).unwrap_or(&[])),
        ) else {
            self.totals.foreign += 1;
            return None;
        };
        let idx = self.lookup(i, h)?;
        let mut drops_now = self.drops;
        if let Ok(raw) = mmsg::socket_drops(self.socket.as_fd()) {
            drops_now.update(raw);
        }
        let (baseline, kernel) = match &self.table {
            FlowTable::Serve {
                run_drop_baseline,
                run_kernel_baseline,
                ..
            } => (
                run_drop_baseline
                    .get(&(src.ip(), h.run_id))
                    .copied()
                    .unwrap_or(0),
                match (
                    &self.kernel_probe,
                    run_kernel_baseline.get(&(src.ip(), h.run_id)),
                ) {
                    (Some(probe), Some(before)) => Some(probe(src).since(before)),
                    _ => None,
                },
            ),
            FlowTable::Run { .. } => (0, None),
        };
        let flow = &mut self.flows_mut()[idx];
        flow.sender_count = Some(fin.sent_packets);
        let c = flow.tracker.counts();
        Some((
            src,
            FinReport {
                received: c.unique,
                lost: flow.tracker.lost(Some(fin.sent_packets)),
                reordered: c.reordered,
                duplicates: c.duplicates,
                socket_drops: drops_now.total().saturating_sub(baseline),
                kernel,
            },
        ))
    }
}

/// Bytes `start..start + len` of message `i` of `batch` (cut to what its slot holds).
#[inline]
fn part_of(batch: &RecvBatch, i: usize, (start, len): (usize, usize)) -> &[u8] {
    let d = batch.datagram(i);
    &d[start.min(d.len())..(start + len).min(d.len())]
}

/// A read that ended because the socket's timeout passed with nothing to read.
fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Slot size for receive buffers: the payload rounded up to whole cache lines, or the largest
/// UDP datagram when any size may come.
pub fn slot_len_for(payload: Option<usize>) -> usize {
    match payload {
        // Room for a whole padded Fin too, so a train's end is never cut.
        Some(p) => (p.max(Fin::PADDED_LEN) + 63) & !63,
        None => 65536,
    }
}

// The batch size is shared with the sender; a reply batch can never need more slots.
const _: () = assert!(BATCH >= 1);
