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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FinReport {
    pub received: u64,
    pub lost: u64,
    pub reordered: u64,
    pub duplicates: u64,
    /// Datagrams dropped at the receive socket (SO_RXQ_OVFL), for the whole socket.
    pub socket_drops: u64,
}

impl Fin {
    pub const LEN: usize = 8;
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
    pub const LEN: usize = 40;
    pub fn write(&self, body: &mut [u8]) {
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
    }
    pub fn read(body: &[u8]) -> Option<FinReport> {
        let body = body.get(..Self::LEN)?;
        let f =
            |i: usize| u64::from_le_bytes(body[i * 8..i * 8 + 8].try_into().unwrap_or_default());
        Some(FinReport {
            received: f(0),
            lost: f(1),
            reordered: f(2),
            duplicates: f(3),
            socket_drops: f(4),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        };
        r.write(&mut b);
        assert_eq!(FinReport::read(&b), Some(r));
        Fin { sent_packets: 99 }.write(&mut b);
        assert_eq!(Fin::read(&b), Some(Fin { sent_packets: 99 }));
        assert_eq!(Fin::read(&b[..3]), None);
    }
}
