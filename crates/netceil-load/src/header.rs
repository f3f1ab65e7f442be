//! The 18-byte header every netceil datagram starts with.
//!
//! 18 bytes is the UDP payload of the smallest RFC 2544 frame (64 B over IPv4), so even the
//! smallest packet is fully accounted. Layout, little endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 2 | magic `0x4E43` ("NC") |
//! | 2 | 1 | version (high nibble) and kind (low nibble) |
//! | 3 | 1 | flags (reserved, 0) |
//! | 4 | 2 | run id (random per run; packets of other runs are counted as foreign) |
//! | 6 | 2 | flow id |
//! | 8 | 4 | sequence number within the flow (wraps; the receiver extends it to 64 bits) |
//! | 12 | 6 | send time, low 48 bits of CLOCK_MONOTONIC ns (wraps every 78 h; compare with [`ts_delta_ns`]) |

pub const HEADER_LEN: usize = 18;
pub const MAGIC: u16 = 0x4E43;
pub const VERSION: u8 = 1;
const TS_MASK: u64 = (1 << 48) - 1;

/// What a datagram is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Load: counted by sequence number.
    Data = 0,
    /// A request-response request: the receiver echoes it back with kind `Response`.
    Request = 1,
    Response = 2,
    /// End of a flow; the payload after the header carries the sender's totals
    /// (see [`Fin`]). Sent several times, since it may be lost too.
    Fin = 3,
    /// The receiver's answer to a `Fin`: its own totals (see [`FinReport`]).
    FinReport = 4,
}

impl Kind {
    fn from_nibble(n: u8) -> Option<Kind> {
        Some(match n {
            0 => Kind::Data,
            1 => Kind::Request,
            2 => Kind::Response,
            3 => Kind::Fin,
            4 => Kind::FinReport,
            _ => return None,
        })
    }
}

/// A decoded header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub run_id: u16,
    pub flow: u16,
    pub seq: u32,
    /// Low 48 bits of the send time in ns.
    pub ts_ns: u64,
}

impl Header {
    /// Writes the header into the first [`HEADER_LEN`] bytes of `buf`.
    ///
    /// # Panics
    /// If `buf` is shorter than [`HEADER_LEN`]; sizes are validated before any send.
    #[inline]
    pub fn write(&self, buf: &mut [u8]) {
        let b = &mut buf[..HEADER_LEN];
        b[0..2].copy_from_slice(&MAGIC.to_le_bytes());
        b[2] = (VERSION << 4) | self.kind as u8;
        b[3] = 0;
        b[4..6].copy_from_slice(&self.run_id.to_le_bytes());
        b[6..8].copy_from_slice(&self.flow.to_le_bytes());
        b[8..12].copy_from_slice(&self.seq.to_le_bytes());
        b[12..18].copy_from_slice(&(self.ts_ns & TS_MASK).to_le_bytes()[..6]);
    }

    /// Overwrites only the sequence number and timestamp of an already written header: the hot
    /// path of the sender, where everything else stays the same packet after packet.
    #[inline]
    pub fn stamp(buf: &mut [u8], seq: u32, ts_ns: u64) {
        buf[8..12].copy_from_slice(&seq.to_le_bytes());
        buf[12..18].copy_from_slice(&(ts_ns & TS_MASK).to_le_bytes()[..6]);
    }

    /// Reads a header; `None` if the datagram is too short, has another magic or version, or an
    /// unknown kind (a foreign packet).
    #[inline]
    pub fn read(buf: &[u8]) -> Option<Header> {
        let b = buf.get(..HEADER_LEN)?;
        if u16::from_le_bytes([b[0], b[1]]) != MAGIC || b[2] >> 4 != VERSION {
            return None;
        }
        let kind = Kind::from_nibble(b[2] & 0x0F)?;
        let mut ts = [0u8; 8];
        ts[..6].copy_from_slice(&b[12..18]);
        Some(Header {
            kind,
            run_id: u16::from_le_bytes([b[4], b[5]]),
            flow: u16::from_le_bytes([b[6], b[7]]),
            seq: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
            ts_ns: u64::from_le_bytes(ts),
        })
    }
}

/// `now − sent` for 48-bit timestamps, correct across the 48-bit wrap.
#[inline]
pub fn ts_delta_ns(now_ns: u64, sent_ts48: u64) -> u64 {
    (now_ns & TS_MASK).wrapping_sub(sent_ts48) & TS_MASK
}

/// The body of a `Fin`: how many packets the sender sent on this flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fin {
    pub sent_packets: u64,
}

/// The body of a `FinReport`: what the receiver counted on this flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinReport {
    pub received: u64,
    pub lost: u64,
    pub reordered: u64,
    pub duplicates: u64,
    /// Datagrams dropped at the receive socket (SO_RXQ_OVFL), for the whole socket.
    pub socket_drops: u64,
    /// The receiving machine's kernel counters over the run, when the receiver reads them
    /// (absent from receivers that predate them, and from one that could not read /proc).
    pub kernel: Option<FarKernel>,
}

/// The receiving machine's kernel counters, as deltas over a run (or, inside the receiver,
/// as readings): what the sender cannot see from its side. Layout after the `FinReport`'s
/// five counters: four u64 (`u64::MAX` = not read) and the interface name in 16 bytes (NUL
/// padded, empty = unknown).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FarKernel {
    /// The interface that faces the sender (holds the local address the datagrams came to).
    pub iface: Option<String>,
    /// Packets that interface received (all traffic on it, not only the run's).
    pub iface_rx_packets: Option<u64>,
    /// softnet_stat backlog drops, machine-wide.
    pub backlog_drops: Option<u64>,
    /// Udp RcvbufErrors (/proc/net/snmp), for the receiver's network namespace.
    pub udp_rcvbuf_errors: Option<u64>,
    /// Udp InErrors, for the receiver's network namespace.
    pub udp_in_errors: Option<u64>,
}

impl FarKernel {
    pub const LEN: usize = 4 * 8 + 16;

    fn write(&self, body: &mut [u8]) {
        for (i, v) in [
            self.iface_rx_packets,
            self.backlog_drops,
            self.udp_rcvbuf_errors,
            self.udp_in_errors,
        ]
        .into_iter()
        .enumerate()
        {
            body[i * 8..i * 8 + 8].copy_from_slice(&v.unwrap_or(u64::MAX).to_le_bytes());
        }
        let name = body[32..48].as_mut();
        name.fill(0);
        if let Some(iface) = &self.iface {
            let b = iface.as_bytes();
            let n = b.len().min(15);
            name[..n].copy_from_slice(&b[..n]);
        }
    }

    fn read(body: &[u8]) -> Option<FarKernel> {
        let body = body.get(..Self::LEN)?;
        let f = |i: usize| {
            let v = u64::from_le_bytes(body[i * 8..i * 8 + 8].try_into().unwrap_or_default());
            (v != u64::MAX).then_some(v)
        };
        let name = &body[32..48];
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        let iface = std::str::from_utf8(&name[..end])
            .ok()
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        Some(FarKernel {
            iface,
            iface_rx_packets: f(0),
            backlog_drops: f(1),
            udp_rcvbuf_errors: f(2),
            udp_in_errors: f(3),
        })
    }

    /// `self − before`, field by field; a counter that went backwards (reset), or an interface
    /// that changed between the readings, gives `None` for what it touches.
    pub fn since(&self, before: &FarKernel) -> FarKernel {
        let d = |a: Option<u64>, b: Option<u64>| a?.checked_sub(b?);
        let same_iface = self.iface.is_some() && self.iface == before.iface;
        FarKernel {
            iface: self.iface.clone().filter(|_| same_iface),
            iface_rx_packets: if same_iface {
                d(self.iface_rx_packets, before.iface_rx_packets)
            } else {
                None
            },
            backlog_drops: d(self.backlog_drops, before.backlog_drops),
            udp_rcvbuf_errors: d(self.udp_rcvbuf_errors, before.udp_rcvbuf_errors),
            udp_in_errors: d(self.udp_in_errors, before.udp_in_errors),
        }
    }
}

impl Fin {
    pub const LEN: usize = 8;
    /// A whole Fin datagram as senders send it: padded to the length of the longest
    /// `FinReport` datagram, so that answering it never sends more bytes than arrived.
    pub const PADDED_LEN: usize = HEADER_LEN + FinReport::FULL_LEN;
    pub fn write(&self, body: &mut [u8]) {
        body[..8].copy_from_slice(&self.sent_packets.to_le_bytes());
    }
    pub fn read(body: &[u8]) -> Option<Fin> {
        Some(Fin {
            sent_packets: u64::from_le_bytes(body.get(..8)?.try_into().ok()?),
        })
    }
}

impl FinReport {
    /// The five counters every receiver sends.
    pub const LEN: usize = 40;
    /// With the kernel counters after them.
    pub const FULL_LEN: usize = Self::LEN + FarKernel::LEN;

    /// Writes the report; returns its length.
    pub fn write(&self, body: &mut [u8]) -> usize {
        for (i, v) in [
            self.received,
            self.lost,
            self.reordered,
            self.duplicates,
            self.socket_drops,
        ]
        .into_iter()
        .enumerate()
        {
            body[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        match &self.kernel {
            Some(k) => {
                k.write(&mut body[Self::LEN..Self::FULL_LEN]);
                Self::FULL_LEN
            }
            None => Self::LEN,
        }
    }

    /// Reads a report: the five counters, and the kernel counters when the body has them.
    pub fn read(body: &[u8]) -> Option<FinReport> {
        let base = body.get(..Self::LEN)?;
        let f =
            |i: usize| u64::from_le_bytes(base[i * 8..i * 8 + 8].try_into().unwrap_or_default());
        Some(FinReport {
            received: f(0),
            lost: f(1),
            reordered: f(2),
            duplicates: f(3),
            socket_drops: f(4),
            kernel: FarKernel::read(&body[Self::LEN..]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn far_kernel_deltas() {
        let before = FarKernel {
            iface: Some("eth0".into()),
            iface_rx_packets: Some(100),
            backlog_drops: Some(5),
            udp_rcvbuf_errors: Some(10),
            udp_in_errors: None,
        };
        let after = FarKernel {
            iface_rx_packets: Some(1100),
            backlog_drops: Some(4), // reset: no honest delta
            udp_rcvbuf_errors: Some(12),
            udp_in_errors: Some(3),
            ..before.clone()
        };
        let d = after.since(&before);
        assert_eq!(d.iface.as_deref(), Some("eth0"));
        assert_eq!(
            (
                d.iface_rx_packets,
                d.backlog_drops,
                d.udp_rcvbuf_errors,
                d.udp_in_errors
            ),
            (Some(1000), None, Some(2), None)
        );
        // The facing interface changed (a route moved): its packet count is not a delta.
        let moved = FarKernel {
            iface: Some("eth1".into()),
            ..after
        };
        let d = moved.since(&before);
        assert_eq!((d.iface, d.iface_rx_packets), (None, None));
        assert_eq!(d.udp_rcvbuf_errors, Some(2));
    }

    #[test]
    fn round_trip() {
        let h = Header {
            kind: Kind::Data,
            run_id: 0xBEEF,
            flow: 7,
            seq: u32::MAX,
            ts_ns: 123_456_789,
        };
        let mut buf = [0u8; 64];
        h.write(&mut buf);
        assert_eq!(Header::read(&buf), Some(h));
        Header::stamp(&mut buf, 5, (1 << 50) + 9);
        let h2 = Header::read(&buf).unwrap();
        assert_eq!((h2.seq, h2.ts_ns), (5, 9));
    }

    #[test]
    fn foreign_packets_rejected() {
        assert_eq!(Header::read(&[0u8; 64]), None);
        assert_eq!(Header::read(&[0x43, 0x4E, 0x10]), None); // too short
        let mut buf = [0u8; 18];
        Header {
            kind: Kind::Data,
            run_id: 1,
            flow: 0,
            seq: 0,
            ts_ns: 0,
        }
        .write(&mut buf);
        buf[2] = 0x1F; // unknown kind
        assert_eq!(Header::read(&buf), None);
    }

    #[test]
    fn timestamp_delta_across_wrap() {
        let sent = TS_MASK - 10;
        assert_eq!(ts_delta_ns((1 << 48) + 5, sent), 16);
    }

    #[test]
    fn fin_bodies_round_trip() {
        let mut b = [0u8; FinReport::LEN];
        let r = FinReport {
            received: 1,
            lost: 2,
            reordered: 3,
            duplicates: 4,
            socket_drops: 5,
            kernel: None,
        };
        assert_eq!(r.write(&mut b), FinReport::LEN);
        assert_eq!(FinReport::read(&b), Some(r.clone()));
        // With the kernel counters: unknown fields and a long interface name survive.
        let mut full = [0u8; FinReport::FULL_LEN];
        let k = FarKernel {
            iface: Some("veth-netceil-lab0".into()),
            iface_rx_packets: Some(1_000_000),
            backlog_drops: None,
            udp_rcvbuf_errors: Some(0),
            udp_in_errors: Some(7),
        };
        let rk = FinReport {
            kernel: Some(k.clone()),
            ..r.clone()
        };
        assert_eq!(rk.write(&mut full), FinReport::FULL_LEN);
        let back = FinReport::read(&full).unwrap();
        let got = back.kernel.unwrap();
        assert_eq!(
            got.iface.as_deref(),
            Some("veth-netceil-la"),
            "IFNAMSIZ − 1 bytes"
        );
        assert_eq!(
            (got.iface_rx_packets, got.backlog_drops, got.udp_in_errors),
            (Some(1_000_000), None, Some(7))
        );
        // An old receiver's short report reads without kernel counters.
        assert_eq!(
            FinReport::read(&full[..FinReport::LEN]).unwrap().kernel,
            None
        );
        let mut b = [0u8; FinReport::LEN];
        Fin { sent_packets: 99 }.write(&mut b);
        assert_eq!(Fin::read(&b), Some(Fin { sent_packets: 99 }));
        assert_eq!(Fin::read(&b[..3]), None);
    }
}
