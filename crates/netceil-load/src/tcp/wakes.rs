//! How a sink stream wakes its reader: at every arrival, or in batches sized from its own rate.
//!
//! On a path inside one host the sender's softirq delivers each segment to the receiving socket
//! and, when the reader sleeps in `epoll_wait`, wakes it there: a cross-CPU wake-up (an IPI, a
//! VM exit on a guest) paid in the sender's time. One loopback stream woke its reader about
//! 30 000 times a second, once per 90 KB; in the sender's profile the wake-ups under
//! `sock_def_readable` were a tenth of its CPU, and the sender is the side that runs out of CPU.
//!
//! [`SinkWakes::Batched`] sets the stream's receive low-water mark (SO_RCVLOWAT) to what it
//! delivers in [`SPACING_NS`], measured by the reader over windows of [`RETUNE_NS`], at most
//! 1/[`CAP_SHARE`] of its receive buffer and none below [`MIN_MARK`]. One loopback stream at
//! ~25 Gbit/s with a 2 MiB buffer (mark 256 KiB) then had its reader's `epoll_wait` return
//! ~8 000 times a second, ~390 KiB read each time; unbatched, its thread had slept ~30 000
//! times a second. A paced 1 Gbit/s stream (25 KB per 200 µs) gets no mark. What the kernel does whatever the
//! mark:
//! - it wakes the reader below the mark when the receive buffer is nearly full
//!   (`tcp_rmem_pressure`) and at the end of the stream;
//! - it ACKs segments as they arrive, in softirq, as long as the window it advertises does not
//!   shrink; bytes held under the mark shrink it, and then it holds ACKs back until the reader
//!   takes them. The cap keeps that to an eighth of the window.
//!
//! Only streams whose receive buffer is fixed ([`super::rcvbuf`]) are batched. On an autotuned
//! one, `tcp_set_rcvlowat` grows the buffer to fit the mark, and bytes held under the mark
//! also hold back autotuning's measure of what the reader takes, which then stops growing the
//! window.
//!
//! A batched stream the reader has not looked at for [`STALE_NS`] is read anyway and its mark
//! set again from that rate: a stream that slows down or stops is never held longer than that,
//! and live byte counts lag by at most one mark or [`STALE_NS`].

use std::net::TcpStream;
use std::os::fd::AsFd;

use super::rcvbuf::Sized;
use crate::clock::now_ns;
use crate::tcpinfo::set_rcvlowat;

/// The time between a batched stream's wake-ups the mark aims at, ns. At 25 Gbit/s a mark of
/// 100 µs of the rate (about 300 KB) fell under the cap in the windows where the rate dipped,
/// and the smaller marks woke the reader more: 0.95 × the throughput of a mark held at the
/// cap; at 200 µs the cap holds, 1.00 × (9 alternated rounds each).
pub const SPACING_NS: u64 = 200_000;
/// The window over which a stream's rate is measured for its mark, ns.
pub const RETUNE_NS: u64 = 10_000_000;
/// The longest a batched stream goes unread, ns.
pub const STALE_NS: u64 = 10_000_000;
/// The smallest mark set: a stream slower than this per [`SPACING_NS`] (1.3 Gbit/s) is left to
/// wake its reader at every arrival.
pub const MIN_MARK: usize = 32 * 1024;
/// The most of a stream's receive buffer its mark may be, as a divisor: bytes held under the
/// mark also shrink the window the receiver advertises, and once the window would shrink the
/// kernel delays its ACKs. One loopback stream at ~25 Gbit/s (2 MiB buffer, 7 alternated
/// rounds each) measured 1.05 × a quarter's throughput with an eighth, 0.97 × with a sixteenth.
pub const CAP_SHARE: usize = 8;
/// Marks are set in whole steps of this many bytes.
const MARK_STEP: usize = 4096;

/// How a receiving end's sink streams wake their reader: the run's parameter itself.
pub use netceil_model::params::TcpSinkWakes as SinkWakes;

/// The mark for a stream delivering `bytes_per_s`, with at most `cap` allowed: 0 for none.
pub fn mark_for(bytes_per_s: f64, cap: usize) -> usize {
    let want = bytes_per_s * SPACING_NS as f64 / 1e9;
    // NaN (no rate) falls here too.
    if want.is_nan() || want < MIN_MARK as f64 || cap < MIN_MARK {
        return 0;
    }
    let m = (want as usize).min(cap);
    m - m % MARK_STEP
}

/// Whether a mark moved far enough from the one set to be worth a system call.
fn moved(set: usize, new: usize) -> bool {
    (set == 0) != (new == 0) || new * 2 > set * 3 || new * 3 < set * 2
}

/// One sink stream's batching: its rate window and the mark set now.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Batch {
    cap: usize,
    mark: usize,
    window_start_ns: u64,
    window_bytes: u64,
    last_turn_ns: u64,
    /// A mark was set at least once (for the report).
    ever: bool,
}

impl Batch {
    /// The batching for a stream whose buffer was sized as `sized`, if `policy` batches and
    /// the buffer is fixed.
    pub(crate) fn new(policy: SinkWakes, sized: Sized, now_ns: u64) -> Option<Batch> {
        match (policy, sized) {
            (SinkWakes::Batched, Sized::Fixed { bytes, .. }) => Some(Batch {
                cap: bytes / CAP_SHARE,
                mark: 0,
                window_start_ns: now_ns,
                window_bytes: 0,
                last_turn_ns: now_ns,
                ever: false,
            }),
            _ => None,
        }
    }

    /// The reader looked at the stream at `now_ns` and read `bytes`. Returns the new mark
    /// when it should change: the caller sets it with [`Batch::apply`].
    pub(crate) fn turn(&mut self, bytes: u64, now_ns: u64) -> Option<usize> {
        self.last_turn_ns = now_ns;
        self.window_bytes += bytes;
        let span = now_ns.saturating_sub(self.window_start_ns);
        if span < RETUNE_NS {
            return None;
        }
        let rate = self.window_bytes as f64 / (span as f64 / 1e9);
        self.window_start_ns = now_ns;
        self.window_bytes = 0;
        let new = mark_for(rate, self.cap);
        moved(self.mark, new).then_some(new)
    }

    /// Sets `mark` on the stream. On a refusal the stream is left as it is, and `false`
    /// tells the caller to stop batching it.
    fn apply(&mut self, stream: &TcpStream, mark: usize) -> bool {
        if set_rcvlowat(stream.as_fd(), mark.max(1)).is_err() {
            return false;
        }
        self.mark = mark;
        self.ever |= mark > 0;
        true
    }

    /// Whether the stream holds a mark and the reader has not looked at it for [`STALE_NS`].
    pub(crate) fn stale(&self, now_ns: u64) -> bool {
        self.mark > 0 && now_ns.saturating_sub(self.last_turn_ns) >= STALE_NS
    }

    /// A mark was set at least once.
    pub(crate) fn ever(&self) -> bool {
        self.ever
    }
}

/// Whether a stream with this batching wakes its reader only past a mark now.
pub(crate) fn holds_mark(batch: &Option<Batch>) -> bool {
    batch.as_ref().is_some_and(|b| b.mark > 0)
}

/// After the reader looked at `stream` and read `bytes`: its batching, if it has one, takes
/// the bytes into its rate and sets a new mark when the rate calls for one, noted in `wakes`.
/// A mark the kernel refuses ends the stream's batching (counted as refused): it then wakes
/// its reader at every arrival.
pub(crate) fn after_read(
    batch: &mut Option<Batch>,
    stream: &TcpStream,
    bytes: u64,
    wakes: &mut Batching,
) {
    let Some(b) = batch else { return };
    let Some(mark) = b.turn(bytes, now_ns()) else {
        return;
    };
    if b.apply(stream, mark) {
        wakes.saw_mark(mark);
    } else {
        wakes.add(b, true);
        *batch = None;
    }
}

/// What a receiving end's batching did, summed over its sink streams.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Batching {
    /// Sink streams that could be batched (fixed buffer, batching on).
    pub eligible: u64,
    /// Of those, the ones that ran fast enough to get a mark.
    pub batched: u64,
    /// The largest mark set, bytes.
    pub largest_mark: usize,
    /// Streams whose mark the kernel refused; they woke at every arrival.
    pub refused: u64,
}

impl Batching {
    /// Counts one stream at its end.
    pub(crate) fn add(&mut self, b: &Batch, refused: bool) {
        self.eligible += 1;
        self.batched += u64::from(b.ever());
        self.refused += u64::from(refused);
    }

    /// Notes a mark set.
    pub(crate) fn saw_mark(&mut self, mark: usize) {
        self.largest_mark = self.largest_mark.max(mark);
    }

    pub fn merge(&mut self, o: &Batching) {
        self.eligible += o.eligible;
        self.batched += o.batched;
        self.largest_mark = self.largest_mark.max(o.largest_mark);
        self.refused += o.refused;
    }

    /// The note for a run's results: what batching did and how to turn it off. `None` when
    /// no stream was batched and none refused.
    pub fn note(&self, side: &str) -> Option<String> {
        let mut parts = Vec::new();
        if self.batched > 0 {
            parts.push(format!(
                "{} of {} fixed-buffer streams on the {side} woke their reader in batches \
                 (SO_RCVLOWAT at each stream's rate × {} µs, largest {} KiB): fewer wake-ups \
                 for the sender's softirq to pay; bytes reach the reader up to {} ms later; \
                 --sink-wakes each turns it off",
                self.batched,
                self.eligible,
                SPACING_NS / 1000,
                self.largest_mark / 1024,
                STALE_NS / 1_000_000
            ));
        }
        if self.refused > 0 {
            parts.push(format!(
                "the kernel refused SO_RCVLOWAT on {} of {} streams on the {side}; they woke \
                 their reader at every arrival",
                self.refused, self.eligible
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// The slow-tail check the sink's and `-R`'s reader tests share.
#[cfg(test)]
pub(crate) mod testing {
    use std::io::Write;
    use std::net::TcpStream;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    /// Writes to `s` flat out for 150 ms (at most 8 GiB), long enough for its reader to measure
    /// the rate and batch the stream, waits until `read` counts it all, then writes a 1000 B
    /// tail. Returns the bytes sent in all and how long the tail took to be read. Each wait
    /// fails the test after 5 s.
    pub(crate) fn fast_then_tail(s: &mut TcpStream, read: &AtomicU64) -> (u64, Duration) {
        let until_read = |n: u64| {
            let start = Instant::now();
            while read.load(Ordering::Relaxed) < n {
                assert!(start.elapsed() < Duration::from_secs(5), "{n} B never read");
                std::thread::sleep(Duration::from_millis(1));
            }
            start.elapsed()
        };
        let bulk = vec![7u8; 1 << 20];
        let begun = Instant::now();
        let mut sent = 0u64;
        while begun.elapsed() < Duration::from_millis(150) && sent < 8 << 30 {
            s.write_all(&bulk).unwrap();
            sent += 1 << 20;
        }
        until_read(sent);
        s.write_all(&[1u8; 1000]).unwrap();
        (sent + 1000, until_read(sent + 1000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[test]
    fn the_mark_is_the_rate_over_the_spacing_within_its_bounds() {
        // 25 Gbit/s: 625 KB per 200 µs, capped.
        assert_eq!(mark_for(25e9 / 8.0, MIB / 4), MIB / 4);
        // 5 Gbit/s: 125 KB, in whole 4 KiB steps.
        assert_eq!(mark_for(5e9 / 8.0, MIB / 4), 122_880);
        // 1 Gbit/s: 25 KB, under the smallest mark.
        assert_eq!(mark_for(1e9 / 8.0, MIB / 4), 0);
        assert_eq!(mark_for(0.0, MIB / 4), 0);
        assert_eq!(mark_for(f64::NAN, MIB / 4), 0);
        // A buffer too small for the smallest mark gets none.
        assert_eq!(mark_for(25e9 / 8.0, MIN_MARK - 1), 0);
    }

    #[test]
    fn only_a_fixed_buffer_with_batching_on_is_batched() {
        let fixed = Sized::Fixed {
            bytes: MIB,
            rtt_us: Some(10),
        };
        assert!(Batch::new(SinkWakes::Batched, fixed, 0).is_some());
        assert!(Batch::new(SinkWakes::Each, fixed, 0).is_none());
        let kernel = Sized::Kernel { rtt_us: Some(10) };
        assert!(Batch::new(SinkWakes::Batched, kernel, 0).is_none());
        assert!(Batch::new(SinkWakes::Batched, Sized::Refused, 0).is_none());
    }

    #[test]
    fn the_mark_follows_the_rate_window_by_window() {
        let fixed = Sized::Fixed {
            bytes: MIB,
            rtt_us: None,
        };
        let mut b = Batch::new(SinkWakes::Batched, fixed, 0).unwrap();
        // Within the first window nothing changes, however much is read.
        assert_eq!(b.turn(10 * MIB as u64, RETUNE_NS / 2), None);
        // 30 MiB in 10 ms (25 Gbit/s): the cap, an eighth of the buffer.
        assert_eq!(b.turn(20 * MIB as u64, RETUNE_NS), Some(MIB / 8));
        b.mark = MIB / 8;
        // About the same rate again: no system call.
        assert_eq!(b.turn(28 * MIB as u64, 2 * RETUNE_NS), None);
        // A seventh of it: a smaller mark.
        assert_eq!(b.turn(4 * MIB as u64, 3 * RETUNE_NS), Some(81_920));
        b.mark = 81_920;
        // The stream stops: the mark goes.
        assert!(b.stale(4 * RETUNE_NS));
        assert_eq!(b.turn(0, 4 * RETUNE_NS), Some(0));
        b.mark = 0;
        assert!(!b.stale(10 * RETUNE_NS));
    }

    #[test]
    fn the_note_says_what_was_batched_and_how_to_turn_it_off() {
        let mut total = Batching::default();
        assert_eq!(total.note("receiver"), None);
        let fixed = Sized::Fixed {
            bytes: MIB,
            rtt_us: None,
        };
        let mut fast = Batch::new(SinkWakes::Batched, fixed, 0).unwrap();
        fast.ever = true;
        let slow = Batch::new(SinkWakes::Batched, fixed, 0).unwrap();
        let mut one = Batching::default();
        one.add(&fast, false);
        one.saw_mark(MIB / 4);
        one.add(&slow, false);
        total.merge(&one);
        let note = total.note("receiver").unwrap();
        assert!(
            note.starts_with("1 of 2 fixed-buffer streams on the receiver"),
            "{note}"
        );
        assert!(note.contains("largest 256 KiB"), "{note}");
        assert!(note.contains("--sink-wakes each"), "{note}");
    }

    /// What batching rests on: a socket under its mark is not readable to epoll, and one
    /// over it is.
    #[test]
    fn epoll_wakes_the_reader_only_past_the_mark() {
        use super::super::EventLoop;
        use crate::clock::now_ns;
        use nix::sys::epoll::EpollFlags;
        use std::io::Write;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let sized = super::super::rcvbuf::apply(&s, super::super::RecvBuffer::Fixed(MIB));
        let mut b = Batch::new(SinkWakes::Batched, sized, 0).unwrap();
        assert!(b.apply(&s, 64 * 1024));
        let mut ev = EventLoop::new(4).unwrap();
        ev.add(&s, 7, EpollFlags::EPOLLIN).unwrap();
        let mut readable = |ms: u64| {
            let now = now_ns();
            ev.wait(Some(now + ms * 1_000_000), now).unwrap().count() > 0
        };
        c.write_all(&[1u8; 1000]).unwrap();
        assert!(!readable(20), "1000 B woke a reader whose mark is 64 KiB");
        c.write_all(&vec![2u8; 64 * 1024]).unwrap();
        assert!(readable(1000), "65 KiB did not wake it");
    }

    #[test]
    fn a_mark_set_on_a_fixed_buffer_is_the_one_the_kernel_holds() {
        use crate::tcpinfo::rcvlowat;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let _c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let sized = super::super::rcvbuf::apply(&s, super::super::RecvBuffer::Fixed(MIB));
        let Sized::Fixed { bytes, .. } = sized else {
            panic!("{sized:?}")
        };
        let mut b = Batch::new(SinkWakes::Batched, sized, 0).unwrap();
        assert!(b.apply(&s, bytes / CAP_SHARE));
        assert_eq!(rcvlowat(s.as_fd()).unwrap(), bytes / CAP_SHARE);
        assert!(b.ever());
        assert!(b.apply(&s, 0));
        assert_eq!(rcvlowat(s.as_fd()).unwrap(), 1);
    }
}
