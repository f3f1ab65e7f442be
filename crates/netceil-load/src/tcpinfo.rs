//! The raw socket options nix and socket2 do not wrap: reading `TCP_INFO`, setting
//! `SO_MAX_PACING_RATE`, and setting and reading `SO_RCVLOWAT`.
//!
//! This is the only module of the crate with `unsafe`: `getsockopt`/`setsockopt` calls on a
//! borrowed, open descriptor with buffers we own. Everything else (which fields exist, at which
//! offset) is a pure parse of the bytes the kernel copied out, so it is tested without a socket.
//!
//! `struct tcp_info` grows with kernel versions; the kernel copies `min(our length, its length)`
//! bytes and tells us how many. A field past the returned length is `None`, never a guess.
//! Field offsets follow `include/uapi/linux/tcp.h`.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// The `TCP_INFO` fields netceil uses. Times are µs, as the kernel reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// Connection state (`tcpi_state`, the kernel's TCP_ESTABLISHED = 1 … numbering).
    pub state: u8,
    /// Smoothed round-trip time, µs (`tcpi_rtt`).
    pub rtt_us: u32,
    /// Round-trip time variance, µs (`tcpi_rttvar`).
    pub rttvar_us: u32,
    /// Congestion window, segments (`tcpi_snd_cwnd`).
    pub snd_cwnd: u32,
    /// Segment size used for sending (`tcpi_snd_mss`).
    pub snd_mss: u32,
    /// Retransmitted segments over the connection's life (`tcpi_total_retrans`).
    pub total_retrans: u32,
    /// The pacing rate the stack currently uses, bytes/s (`tcpi_pacing_rate`).
    pub pacing_rate: Option<u64>,
    /// The SO_MAX_PACING_RATE cap in force, bytes/s; `u64::MAX` when none (`tcpi_max_pacing_rate`).
    pub max_pacing_rate: Option<u64>,
    /// Sequence space the peer acknowledged (`tcpi_bytes_acked`): payload plus one for the SYN,
    /// and one more for our FIN once it is acknowledged.
    pub bytes_acked: Option<u64>,
    /// Bytes received from the peer (`tcpi_bytes_received`).
    pub bytes_received: Option<u64>,
    /// Data segments sent, retransmissions included (`tcpi_data_segs_out`).
    pub data_segs_out: Option<u32>,
    /// Bytes written by the application but not yet sent (`tcpi_notsent_bytes`).
    pub notsent_bytes: Option<u32>,
    /// Minimum RTT seen, µs (`tcpi_min_rtt`).
    pub min_rtt_us: Option<u32>,
    /// Bytes retransmitted (`tcpi_bytes_retrans`).
    pub bytes_retrans: Option<u64>,
    /// The most this end may advertise as its receive window now, bytes (`tcpi_rcv_ssthresh`):
    /// it grows towards the window clamp as the stream proves it can use it.
    pub rcv_ssthresh: u32,
    /// Time this end had data to send, µs (`tcpi_busy_time`, Linux ≥ 4.10).
    pub busy_time_us: Option<u64>,
    /// Part of the busy time the peer's receive window held back the sending, µs
    /// (`tcpi_rwnd_limited`).
    pub rwnd_limited_us: Option<u64>,
    /// The receive window the peer last advertised, bytes (`tcpi_snd_wnd`, Linux ≥ 5.4).
    pub snd_wnd: Option<u32>,
}

/// Large enough for every `tcp_info` layout up to now; the kernel truncates to what it has.
const TCP_INFO_BUF: usize = 512;

/// Offsets of the fields we read in `struct tcp_info`.
mod offset {
    pub const STATE: usize = 0;
    pub const SND_MSS: usize = 16;
    pub const RCV_SSTHRESH: usize = 64;
    pub const RTT: usize = 68;
    pub const RTTVAR: usize = 72;
    pub const SND_CWND: usize = 80;
    pub const TOTAL_RETRANS: usize = 100;
    pub const PACING_RATE: usize = 104;
    pub const MAX_PACING_RATE: usize = 112;
    pub const BYTES_ACKED: usize = 120;
    pub const BYTES_RECEIVED: usize = 128;
    pub const NOTSENT_BYTES: usize = 144;
    pub const MIN_RTT: usize = 148;
    pub const DATA_SEGS_OUT: usize = 156;
    pub const BUSY_TIME: usize = 168;
    pub const RWND_LIMITED: usize = 176;
    pub const BYTES_RETRANS: usize = 208;
    pub const SND_WND: usize = 228;
}

fn u32_at(raw: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(raw.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(raw: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(raw.get(at..at + 8)?.try_into().ok()?))
}

impl TcpInfo {
    /// Parses the bytes `getsockopt(TCP_INFO)` returned (native endian, as the kernel wrote
    /// them). `None` if even the oldest fields (up to `tcpi_total_retrans`) are missing.
    pub fn parse(raw: &[u8]) -> Option<TcpInfo> {
        Some(TcpInfo {
            state: *raw.get(offset::STATE)?,
            rtt_us: u32_at(raw, offset::RTT)?,
            rttvar_us: u32_at(raw, offset::RTTVAR)?,
            snd_cwnd: u32_at(raw, offset::SND_CWND)?,
            snd_mss: u32_at(raw, offset::SND_MSS)?,
            total_retrans: u32_at(raw, offset::TOTAL_RETRANS)?,
            pacing_rate: u64_at(raw, offset::PACING_RATE),
            max_pacing_rate: u64_at(raw, offset::MAX_PACING_RATE),
            bytes_acked: u64_at(raw, offset::BYTES_ACKED),
            bytes_received: u64_at(raw, offset::BYTES_RECEIVED),
            notsent_bytes: u32_at(raw, offset::NOTSENT_BYTES),
            min_rtt_us: u32_at(raw, offset::MIN_RTT),
            data_segs_out: u32_at(raw, offset::DATA_SEGS_OUT),
            bytes_retrans: u64_at(raw, offset::BYTES_RETRANS),
            rcv_ssthresh: u32_at(raw, offset::RCV_SSTHRESH)?,
            busy_time_us: u64_at(raw, offset::BUSY_TIME),
            rwnd_limited_us: u64_at(raw, offset::RWND_LIMITED),
            snd_wnd: u32_at(raw, offset::SND_WND),
        })
    }
}

/// TCP states after our FIN was acknowledged (include/net/tcp_states.h).
const TCP_FIN_WAIT2: u8 = 5;
const TCP_TIME_WAIT: u8 = 6;

impl TcpInfo {
    /// Payload bytes the peer acknowledged: `bytes_acked` less the SYN, the FIN if it was
    /// acknowledged, and `preamble` bytes of our own protocol.
    pub fn acked_payload(&self, preamble: u64) -> Option<u64> {
        let fin = u64::from(matches!(self.state, TCP_FIN_WAIT2 | TCP_TIME_WAIT));
        self.bytes_acked
            .map(|b| b.saturating_sub(1 + fin + preamble))
    }
}

/// Reads `TCP_INFO` from a TCP socket.
pub fn tcp_info(fd: BorrowedFd<'_>) -> io::Result<TcpInfo> {
    // u64 elements keep the buffer 8-byte aligned, like the struct the kernel writes.
    let mut buf = [0u64; TCP_INFO_BUF / 8];
    let mut len = TCP_INFO_BUF as libc::socklen_t;
    // SAFETY: `fd` is a live descriptor for the duration of the borrow; `buf` is a writable
    // buffer of exactly `len` bytes that outlives the call, and the kernel writes at most `len`
    // bytes and stores the count it wrote back into `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
    let len = (len as usize).min(bytes.len());
    TcpInfo::parse(&bytes[..len]).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("TCP_INFO returned only {len} bytes"),
        )
    })
}

/// Sets a `SOL_SOCKET` option whose value is a plain integer `T` (u32, u64, c_int).
fn set_socket_int<T: Copy>(fd: BorrowedFd<'_>, name: libc::c_int, value: T) -> io::Result<()> {
    // SAFETY: `fd` is live for the borrow; the option value is a local integer whose exact
    // size is passed, and setsockopt only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            name,
            (&raw const value).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Caps the socket's pacing rate at `bytes_per_s` (SO_MAX_PACING_RATE). Setting it also turns on
/// TCP's internal pacing when the qdisc is not `fq` (Linux ≥ 4.13).
pub fn set_max_pacing_rate(fd: BorrowedFd<'_>, bytes_per_s: u64) -> io::Result<()> {
    // Kernels since 4.20 take a 64-bit value; older ones only a 32-bit one.
    match set_socket_int(fd, libc::SO_MAX_PACING_RATE, bytes_per_s) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            let narrow = u32::try_from(bytes_per_s).unwrap_or(u32::MAX);
            set_socket_int(fd, libc::SO_MAX_PACING_RATE, narrow)
        }
        other => other,
    }
}

/// Sets the socket's receive low-water mark (SO_RCVLOWAT): a reader is woken, and `poll`
/// reports the socket readable, only once `bytes` are queued (or the stream ended, or the
/// receive buffer is nearly full). TCP caps it at half of a fixed receive buffer.
pub fn set_rcvlowat(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<()> {
    let v = libc::c_int::try_from(bytes)
        .unwrap_or(libc::c_int::MAX)
        .max(1);
    set_socket_int(fd, libc::SO_RCVLOWAT, v)
}

/// The socket's receive low-water mark as the kernel holds it (after its cap), bytes.
pub fn rcvlowat(fd: BorrowedFd<'_>) -> io::Result<usize> {
    let mut v: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `fd` is live for the borrow; `v` is a writable c_int and `len` its exact size;
    // the kernel writes at most `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&raw mut v).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(usize::try_from(v).unwrap_or(0))
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsFd;

    fn put_u32(raw: &mut [u8], at: usize, v: u32) {
        raw[at..at + 4].copy_from_slice(&v.to_ne_bytes());
    }

    #[test]
    fn parse_reads_fields_at_their_offsets() {
        let mut raw = vec![0u8; 232];
        put_u32(&mut raw, offset::RTT, 1234);
        put_u32(&mut raw, offset::TOTAL_RETRANS, 7);
        raw[offset::BYTES_ACKED..offset::BYTES_ACKED + 8].copy_from_slice(&99u64.to_ne_bytes());
        put_u32(&mut raw, offset::RCV_SSTHRESH, 65_483);
        raw[offset::BUSY_TIME..offset::BUSY_TIME + 8].copy_from_slice(&4000u64.to_ne_bytes());
        raw[offset::RWND_LIMITED..offset::RWND_LIMITED + 8].copy_from_slice(&1000u64.to_ne_bytes());
        put_u32(&mut raw, offset::SND_WND, 1 << 20);
        let info = TcpInfo::parse(&raw).unwrap();
        assert_eq!(info.rcv_ssthresh, 65_483);
        assert_eq!(info.busy_time_us, Some(4000));
        assert_eq!(info.rwnd_limited_us, Some(1000));
        assert_eq!(info.snd_wnd, Some(1 << 20));
        assert_eq!(info.rtt_us, 1234);
        assert_eq!(info.total_retrans, 7);
        assert_eq!(info.bytes_acked, Some(99));
        assert_eq!(info.bytes_retrans, Some(0));
    }

    #[test]
    fn short_struct_gives_none_for_newer_fields() {
        // A kernel whose tcp_info ends right after tcpi_total_retrans (Linux 2.6 era).
        let raw = vec![0u8; 104];
        let info = TcpInfo::parse(&raw).unwrap();
        assert_eq!(info.pacing_rate, None);
        assert_eq!(info.rwnd_limited_us, None);
        assert_eq!(info.bytes_acked, None);
        assert!(TcpInfo::parse(&raw[..100]).is_none());
    }

    #[test]
    fn live_socket_reports_acked_bytes_and_pacing_cap() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        set_max_pacing_rate(client.as_fd(), 125_000).unwrap();
        client.write_all(&[7u8; 1000]).unwrap();
        let mut got = [0u8; 1000];
        server.read_exact(&mut got).unwrap();
        // The ACK may trail the data by a moment.
        let mut info = tcp_info(client.as_fd()).unwrap();
        for _ in 0..100 {
            if info.bytes_acked == Some(1001) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
            info = tcp_info(client.as_fd()).unwrap();
        }
        assert_eq!(info.bytes_acked, Some(1001), "1000 B + the SYN");
        assert_eq!(info.acked_payload(0), Some(1000));
        assert_eq!(info.state, 1, "established");
        assert_eq!(info.max_pacing_rate, Some(125_000));
        assert!(info.rtt_us > 0);
    }
}
