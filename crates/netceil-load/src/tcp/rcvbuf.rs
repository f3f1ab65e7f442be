//! How a receiving end sizes each stream's socket receive buffer.
//!
//! Left to itself, the kernel grows a stream's receive buffer (tcp_rmem autotuning) from what
//! the reader copied per receive-side RTT. On a path inside one host the sender and the reader
//! take turns on the CPUs, so each turn the reader copies what piled up while it waited, the
//! measured RTT grows with the wait, and the buffer with both: on Linux 6.18 (2 vCPUs, L2
//! 512 KiB per core) one loopback stream's buffer reached 23 MB with 12.7 MB queued, against
//! iperf3's 3.9 MB.
//!
//! A buffer fixed at a small multiple of the receiving core's L2 cache bounds that queue.
//! [`RecvBuffer::Auto`] takes 2 × L2. It was chosen when the reader's copy of the queued bytes
//! cost 50 % of the CPU with both ends on one core, against 18 % for iperf3's reader, and the
//! fixed buffer measured 1.29× iperf3 there against autotuning's 0.52×. That cost needed two
//! things at once: cold bytes, and a read buffer 16 bytes past a page, where the kernel's copy
//! runs 3–4 times slower (see [`crate::buf`]). Measured again on one CPU, 8 alternated rounds,
//! medians: with that buffer, fixed 30.8 Gbit/s and autotuning 14.5; with a page-aligned one,
//! fixed 28.3 and autotuning 29.1. So the fixed buffer now costs nothing and buys nothing in
//! throughput here; it stays the default because it bounds what each stream holds (1 MiB
//! rather than tens of MB, which counts with thousands of streams).
//!
//! A fixed buffer also caps the window, so `Auto` fixes it only on a short path: a handshake
//! RTT of at most [`SHORT_PATH_RTT_US`], where 1 MiB still allows 40 Gbit/s. Longer paths keep
//! the kernel's autotuning, which they need.

use std::net::TcpStream;
use std::os::fd::AsFd;

use socket2::SockRef;

use crate::tcpinfo::tcp_info;

/// [`RecvBuffer::Auto`]'s buffer in L2 caches of the receiving core.
pub const L2_MULTIPLE: usize = 2;

/// [`RecvBuffer::Auto`]'s buffer when the receiving core's L2 size is unknown: 2 × 512 KiB.
pub const DEFAULT_AUTO_BYTES: usize = 1024 * 1024;

/// The longest handshake RTT at which [`RecvBuffer::Auto`] fixes the buffer, µs: paths inside
/// one host (loopback, veth between namespaces), not a network.
pub const SHORT_PATH_RTT_US: u32 = 100;

/// The smallest fixed buffer accepted: below it a stream holds less than a few segments.
pub const MIN_FIXED_BYTES: usize = 64 * 1024;

/// How each stream's receive buffer is sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvBuffer {
    /// The kernel's autotuning (net.ipv4.tcp_rmem), as an application that sets nothing.
    Kernel,
    /// A buffer of this many bytes (SO_RCVBUF of half of it: the kernel doubles what it is
    /// given), autotuning off, whatever the path.
    Fixed(usize),
    /// `Fixed(bytes)` on a short path (see the module docs), the kernel's otherwise; `bytes`
    /// is [`L2_MULTIPLE`] × the receiving core's L2 ([`RecvBuffer::auto_for_l2`]).
    Auto { bytes: usize },
}

impl Default for RecvBuffer {
    fn default() -> Self {
        RecvBuffer::Auto {
            bytes: DEFAULT_AUTO_BYTES,
        }
    }
}

impl RecvBuffer {
    /// `Auto` sized for a receiving core with this L2 cache (`None`: unknown).
    pub fn auto_for_l2(l2_bytes: Option<usize>) -> RecvBuffer {
        RecvBuffer::Auto {
            bytes: l2_bytes.map_or(DEFAULT_AUTO_BYTES, |b| b.saturating_mul(L2_MULTIPLE)),
        }
    }
}

/// What was done to one stream's receive buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sized {
    /// Left to the kernel: asked for ([`RecvBuffer::Kernel`]), or the path was long (`rtt_us`).
    Kernel { rtt_us: Option<u32> },
    /// Fixed: the buffer the kernel holds, read back, and the handshake RTT seen.
    Fixed { bytes: usize, rtt_us: Option<u32> },
    /// The kernel refused the size; it kept autotuning.
    Refused,
}

/// The size a policy asks for, given the connection's handshake RTT: `None` leaves it to
/// the kernel.
pub fn wanted(policy: RecvBuffer, rtt_us: Option<u32>) -> Option<usize> {
    match policy {
        RecvBuffer::Kernel => None,
        RecvBuffer::Fixed(bytes) => Some(bytes.max(MIN_FIXED_BYTES)),
        // An unknown RTT is not taken as short.
        RecvBuffer::Auto { bytes } => rtt_us
            .filter(|&r| r <= SHORT_PATH_RTT_US)
            .map(|_| bytes.max(MIN_FIXED_BYTES)),
    }
}

/// Sizes `stream`'s receive buffer by `policy`. Call before any payload arrives (a window
/// already advertised is never taken back by the kernel).
pub fn apply(stream: &TcpStream, policy: RecvBuffer) -> Sized {
    let rtt_us = match policy {
        RecvBuffer::Kernel => None,
        _ => tcp_info(stream.as_fd()).ok().map(|i| i.rtt_us),
    };
    let Some(bytes) = wanted(policy, rtt_us) else {
        return Sized::Kernel { rtt_us };
    };
    let sock = SockRef::from(stream);
    if sock.set_recv_buffer_size(bytes / 2).is_err() {
        return Sized::Refused;
    }
    match sock.recv_buffer_size() {
        Ok(held) => Sized::Fixed {
            bytes: held,
            rtt_us,
        },
        Err(_) => Sized::Refused,
    }
}

/// What a receiving end did to its streams' buffers, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sizing {
    /// Streams whose buffer was fixed.
    pub fixed: u64,
    /// The buffer the kernel held for them (the largest, if they differ), bytes.
    pub fixed_bytes: usize,
    /// The longest handshake RTT among them, µs.
    pub fixed_rtt_us: Option<u32>,
    /// Streams left to the kernel's autotuning.
    pub kernel: u64,
    /// The shortest handshake RTT among those left because their path was long, µs.
    pub long_rtt_us: Option<u32>,
    /// Streams whose size the kernel refused.
    pub refused: u64,
}

impl Sizing {
    pub fn add(&mut self, s: Sized) {
        let one = match s {
            Sized::Kernel { rtt_us } => Sizing {
                kernel: 1,
                long_rtt_us: rtt_us,
                ..Sizing::default()
            },
            Sized::Fixed { bytes, rtt_us } => Sizing {
                fixed: 1,
                fixed_bytes: bytes,
                fixed_rtt_us: rtt_us,
                ..Sizing::default()
            },
            Sized::Refused => Sizing {
                refused: 1,
                ..Sizing::default()
            },
        };
        self.merge(&one);
    }

    /// The buffer fixed for the streams, bytes, if any was.
    pub fn fixed_bytes(&self) -> Option<u64> {
        (self.fixed > 0).then_some(self.fixed_bytes as u64)
    }

    pub fn merge(&mut self, o: &Sizing) {
        self.fixed += o.fixed;
        self.fixed_bytes = self.fixed_bytes.max(o.fixed_bytes);
        self.fixed_rtt_us = self.fixed_rtt_us.max(o.fixed_rtt_us);
        self.kernel += o.kernel;
        self.long_rtt_us = match (self.long_rtt_us, o.long_rtt_us) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.refused += o.refused;
    }

    /// The note for a run's results: what was done and how to turn it off. `None` when
    /// nothing was received or everything was left to the kernel by request.
    pub fn note(&self, policy: RecvBuffer, side: &str) -> Option<String> {
        let total = self.fixed + self.kernel + self.refused;
        if total == 0 {
            return None;
        }
        let mut parts = Vec::new();
        if self.fixed > 0 {
            // Auto fixes a buffer only where it read the handshake's RTT.
            let why = match (policy, self.fixed_rtt_us) {
                (RecvBuffer::Auto { .. }, Some(r)) => format!(
                    "the path is inside this host (handshake RTT ≤ {r} µs), where the \
                     kernel's autotuning would let megabytes queue; --rcvbuf kernel leaves it on"
                ),
                _ => "as asked (--rcvbuf)".to_string(),
            };
            parts.push(format!(
                "{} of {total} streams' receive buffers on the {side} fixed at {} KiB \
                 (SO_RCVBUF, autotuning off; {why})",
                self.fixed,
                self.fixed_bytes / 1024
            ));
        }
        if self.kernel > 0 && policy != RecvBuffer::Kernel {
            parts.push(match self.long_rtt_us {
                Some(r) => format!(
                    "{} of {total} streams on the {side} kept the kernel's receive buffer \
                     autotuning: their handshake RTT ({r} µs or more) is above {SHORT_PATH_RTT_US} µs, \
                     where a fixed buffer would cap the window",
                    self.kernel
                ),
                None => format!(
                    "{} of {total} streams on the {side} kept the kernel's receive buffer \
                     autotuning: their RTT could not be read",
                    self.kernel
                ),
            });
        }
        if self.refused > 0 {
            parts.push(format!(
                "the kernel refused a fixed receive buffer on {} of {total} streams on the \
                 {side}; they kept autotuning",
                self.refused
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_fixes_only_short_known_paths() {
        let auto = RecvBuffer::auto_for_l2(Some(1 << 20));
        assert_eq!(wanted(auto, Some(20)), Some(2 << 20));
        assert_eq!(wanted(auto, Some(SHORT_PATH_RTT_US)), Some(2 << 20));
        assert_eq!(wanted(auto, Some(SHORT_PATH_RTT_US + 1)), None);
        assert_eq!(wanted(auto, None), None);
        assert_eq!(wanted(RecvBuffer::Kernel, Some(5)), None);
        assert_eq!(
            wanted(RecvBuffer::Fixed(300_000), Some(50_000)),
            Some(300_000)
        );
        assert_eq!(wanted(RecvBuffer::Fixed(1), None), Some(MIN_FIXED_BYTES));
        assert_eq!(RecvBuffer::auto_for_l2(None), RecvBuffer::default());
        let tiny = RecvBuffer::Auto { bytes: 1000 };
        assert_eq!(wanted(tiny, Some(1)), Some(MIN_FIXED_BYTES));
    }

    #[test]
    fn the_note_says_what_was_fixed_and_what_was_left() {
        let mut s = Sizing::default();
        s.add(Sized::Fixed {
            bytes: 1 << 20,
            rtt_us: Some(12),
        });
        s.add(Sized::Fixed {
            bytes: 1 << 20,
            rtt_us: Some(30),
        });
        let mut other = Sizing::default();
        other.add(Sized::Kernel { rtt_us: Some(900) });
        other.add(Sized::Kernel { rtt_us: Some(400) });
        s.merge(&other);
        let note = s.note(RecvBuffer::default(), "receiver").unwrap();
        assert!(
            note.contains("2 of 4 streams' receive buffers on the receiver fixed at 1024 KiB"),
            "{note}"
        );
        assert!(note.contains("RTT ≤ 30 µs"), "{note}");
        assert!(note.contains("--rcvbuf kernel"), "{note}");
        assert!(
            note.contains("2 of 4 streams on the receiver kept"),
            "{note}"
        );
        assert!(note.contains("(400 µs or more)"), "{note}");

        let mut k = Sizing::default();
        k.add(Sized::Kernel { rtt_us: None });
        assert_eq!(k.note(RecvBuffer::Kernel, "receiver"), None);
        assert!(Sizing::default().note(RecvBuffer::default(), "x").is_none());
    }

    #[test]
    fn a_short_loopback_stream_gets_the_buffer_and_it_reads_back() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        for stream in [&c, &s] {
            match apply(stream, RecvBuffer::Fixed(512 * 1024)) {
                // The kernel doubles SO_RCVBUF and caps it at net.core.rmem_max first.
                Sized::Fixed { bytes, .. } => assert!(bytes >= 128 * 1024, "{bytes}"),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            apply(&s, RecvBuffer::Kernel),
            Sized::Kernel { rtt_us: None }
        );
    }
}
