//! UDP GSO and GRO: super-buffers that the kernel cuts into datagrams (`UDP_SEGMENT`, send),
//! and coalesced reads that we cut back into datagrams (`UDP_GRO`, receive).
//!
//! Every datagram still carries its own netceil header: a super-buffer is built as `n`
//! datagrams laid end to end, each with its sequence number, so the receiver counts loss,
//! reordering and duplicates per datagram exactly as without GSO.

use crate::header::Header;

/// Segments per super-buffer at most: `UDP_MAX_SEGMENTS` of the kernels that have GSO (Linux
/// 4.18 on; later kernels allow more, but this is what every one of them takes).
pub const MAX_SEGMENTS: usize = 64;
/// Bytes per super-buffer at most: the largest UDP payload over IPv4 (the kernel sends the
/// whole buffer as one UDP packet before it is segmented).
pub const MAX_SUPER_BYTES: usize = 65_507;
/// Super-buffers per `sendmmsg` call (each up to 64 KiB: 512 KiB per call at most).
pub const SEND_MSGS: usize = 8;
/// Coalesced buffers per `recvmmsg` call with `UDP_GRO` on (64 KiB each).
pub const RECV_MSGS: usize = 16;
/// Slot of a coalesced read: the largest a GRO buffer can be.
pub const RECV_SLOT: usize = 65_536;

/// How many `payload`-byte datagrams one super-buffer carries: `requested` if given, else as
/// many as fit 64 KiB and the kernel's segment limit. An error says why it cannot be done.
pub fn segments_per_send(payload: usize, requested: Option<u32>) -> Result<usize, String> {
    let fit = (MAX_SUPER_BYTES / payload.max(1)).min(MAX_SEGMENTS);
    if fit < 2 {
        return Err(format!(
            "--gso with --size {payload}: a {MAX_SUPER_BYTES}-byte super-buffer holds only one such datagram; GSO needs --size {} or less",
            MAX_SUPER_BYTES / 2
        ));
    }
    match requested {
        None => Ok(fit),
        Some(n) if (1..=fit as u32).contains(&n) => Ok(n as usize),
        Some(n) => Err(format!(
            "--gso-segments {n}: expected 1 to {fit} ({}-byte datagrams in at most {MAX_SUPER_BYTES} bytes and {MAX_SEGMENTS} segments)",
            payload
        )),
    }
}

/// Writes `n` datagrams of `payload` bytes end to end into `buf`, each with `first`'s header
/// and sequence numbers `first.seq, first.seq + 1, …`; returns the bytes used (`n × payload`).
///
/// `buf` must hold `n × payload` bytes; only the headers are written (the rest of each
/// datagram is whatever the buffer held).
pub fn fill_super(buf: &mut [u8], payload: usize, n: usize, first: Header) -> usize {
    for (k, dgram) in buf.chunks_mut(payload).take(n).enumerate() {
        Header {
            seq: first.seq.wrapping_add(k as u32),
            ..first
        }
        .write(dgram);
    }
    n * payload
}

/// The datagrams of a coalesced read of `len` bytes whose segment size is `segment`: byte
/// ranges `(start, len)`, all `segment` long but the last, which may be shorter.
pub fn split(len: usize, segment: usize) -> impl Iterator<Item = (usize, usize)> {
    let segment = segment.max(1);
    (0..len)
        .step_by(segment)
        .map(move |start| (start, segment.min(len - start)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::{Kind, HEADER_LEN};

    fn header(seq: u32) -> Header {
        Header {
            kind: Kind::Data,
            run_id: 7,
            flow: 3,
            seq,
            ts_ns: 42,
        }
    }

    #[test]
    fn each_segment_of_a_super_buffer_has_its_own_header() {
        let payload = 100;
        let mut buf = vec![0xAAu8; payload * 5];
        // Starts just below the u32 wrap, as a long run's sequence numbers do.
        let used = fill_super(&mut buf, payload, 5, header(u32::MAX - 1));
        assert_eq!(used, 500);
        let seqs: Vec<u32> = split(used, payload)
            .map(|(s, l)| {
                assert_eq!(l, payload);
                let h = Header::read(&buf[s..s + l]).expect("a netceil header in every segment");
                assert_eq!((h.kind, h.run_id, h.flow, h.ts_ns), (Kind::Data, 7, 3, 42));
                h.seq
            })
            .collect();
        assert_eq!(seqs, [u32::MAX - 1, u32::MAX, 0, 1, 2]);
        // The bytes after each header are left alone.
        assert!(buf[HEADER_LEN..payload].iter().all(|&b| b == 0xAA));
    }

    #[test]
    fn fewer_datagrams_than_the_buffer_holds() {
        let mut buf = vec![0u8; 64 * 10];
        assert_eq!(fill_super(&mut buf, 64, 3, header(10)), 192);
        assert!(
            Header::read(&buf[192..256]).is_none(),
            "segment 4 untouched"
        );
    }

    #[test]
    fn split_cuts_the_last_short_segment() {
        let parts: Vec<_> = split(1400 * 3 + 80, 1400).collect();
        assert_eq!(parts, [(0, 1400), (1400, 1400), (2800, 1400), (4200, 80)]);
        assert_eq!(split(1400, 1400).collect::<Vec<_>>(), [(0, 1400)]);
        assert_eq!(split(0, 1400).count(), 0);
        // A segment size longer than the read: one datagram.
        assert_eq!(split(90, 1400).collect::<Vec<_>>(), [(0, 90)]);
    }

    #[test]
    fn segments_per_send_fits_64_kib_and_the_kernel_limit() {
        assert_eq!(segments_per_send(1400, None), Ok(46));
        assert_eq!(segments_per_send(64, None), Ok(MAX_SEGMENTS));
        assert_eq!(segments_per_send(1400, Some(8)), Ok(8));
        assert!(segments_per_send(1400, Some(47))
            .unwrap_err()
            .contains("--gso-segments 47"));
        assert!(segments_per_send(1400, Some(0)).is_err());
        assert!(segments_per_send(40_000, None)
            .unwrap_err()
            .contains("--gso"));
    }
}
