//! Batched datagram I/O (sendmmsg/recvmmsg) over preallocated message arrays, and the few
//! socket options that nix and socket2 do not wrap.
//!
//! Why raw libc here: nix's `sendmmsg`/`recvmmsg` build their header arrays and control-message
//! buffers on every call, which costs allocations on the hottest path of the engine. Here the
//! `mmsghdr`/`iovec`/address/control arrays are built once per thread and only the lengths the
//! kernel overwrites are reset before each call. This is the only module of the crate that uses
//! `unsafe`; every block says why it is sound.
#![allow(unsafe_code)]

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, BorrowedFd};

use crate::buf::{self, AlignedBuf};

/// Entries in the SO_MEMINFO array up to and including SK_MEMINFO_DROPS (the last one today;
/// the kernel copies no more than we ask for).
const MEMINFO_VARS: usize = libc::SK_MEMINFO_DROPS as usize + 1;

/// Datagrams per sendmmsg/recvmmsg call.
pub const BATCH: usize = 64;

/// Room for a `UDP_GRO` control message (an int) with its header and one more, as u64 words so
/// the buffer is aligned for `cmsghdr`.
const CONTROL_WORDS: usize = 8;
/// Room for one `UDP_SEGMENT` control message (a u16) with its header.
const SEGMENT_CONTROL_WORDS: usize = 4;

/// How long a `recvmmsg` call may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvWait {
    /// Until the batch is full or the socket's receive timeout passes with nothing new.
    FullBatch,
    /// Until one datagram is there; then take whatever else is already queued.
    One,
    /// Not at all: what is queued now, or EAGAIN.
    Never,
}

/// Received datagrams: a fixed set of buffers, reused for every `recvmmsg` call.
pub struct RecvBatch {
    slot_len: usize,
    /// Slot `i` starts `i * stride` bytes in: on a cache line (see [`crate::buf`]).
    stride: usize,
    // The buffers below are never resized after `new`, so the pointers in `hdrs` stay valid.
    buffers: AlignedBuf,
    iovecs: Vec<libc::iovec>,
    names: Vec<libc::sockaddr_storage>,
    control: Vec<[u64; CONTROL_WORDS]>,
    hdrs: Vec<libc::mmsghdr>,
    received: usize,
    /// Source addresses are asked for (see [`RecvBatch::without_sources`]).
    sources: bool,
}

impl RecvBatch {
    /// [`BATCH`] slots of `slot_len` bytes; longer datagrams are cut and flagged as truncated.
    pub fn new(slot_len: usize) -> RecvBatch {
        Self::with_slots(slot_len, BATCH)
    }

    /// `slots` slots (at least one) of `slot_len` bytes each.
    pub fn with_slots(slot_len: usize, slots: usize) -> RecvBatch {
        let slots = slots.max(1);
        let stride = buf::stride(slot_len);
        let mut b = RecvBatch {
            slot_len,
            stride,
            buffers: AlignedBuf::zeroed(stride * slots),
            // SAFETY: iovec, sockaddr_storage and mmsghdr are plain C structs for which all-zero
            // bytes are a valid value (null pointers, zero lengths).
            iovecs: vec![unsafe { zeroed() }; slots],
            names: vec![unsafe { zeroed() }; slots],
            control: vec![[0; CONTROL_WORDS]; slots],
            hdrs: vec![unsafe { zeroed() }; slots],
            received: 0,
            sources: true,
        };
        for i in 0..slots {
            b.iovecs[i].iov_base = b.buffers[i * b.stride..].as_mut_ptr().cast();
            b.iovecs[i].iov_len = slot_len;
            let h = &mut b.hdrs[i].msg_hdr;
            h.msg_iov = &mut b.iovecs[i];
            h.msg_iovlen = 1;
            h.msg_name = (&mut b.names[i] as *mut libc::sockaddr_storage).cast();
            h.msg_control = b.control[i].as_mut_ptr().cast();
        }
        b
    }

    /// Reads without asking the kernel for each datagram's source address: one copy to user
    /// space per datagram less (about 5 % of a 1400-byte read). [`RecvBatch::source`] is then
    /// always `None`.
    pub fn without_sources(mut self) -> RecvBatch {
        for h in &mut self.hdrs {
            h.msg_hdr.msg_name = std::ptr::null_mut();
            h.msg_hdr.msg_namelen = 0;
        }
        self.sources = false;
        self
    }

    /// Messages one call can read.
    pub fn slots(&self) -> usize {
        self.hdrs.len()
    }

    /// Receives up to one message per slot, waiting as `wait` says.
    pub fn recv(&mut self, fd: BorrowedFd<'_>, wait: RecvWait) -> io::Result<usize> {
        let namelen = if self.sources {
            size_of::<libc::sockaddr_storage>() as libc::socklen_t
        } else {
            0
        };
        for h in &mut self.hdrs {
            h.msg_hdr.msg_namelen = namelen;
            h.msg_hdr.msg_controllen = CONTROL_WORDS * 8;
            h.msg_hdr.msg_flags = 0;
            h.msg_len = 0;
        }
        let flags = match wait {
            RecvWait::FullBatch => 0,
            RecvWait::One => libc::MSG_WAITFORONE,
            RecvWait::Never => libc::MSG_DONTWAIT,
        };
        // SAFETY: every mmsghdr points at buffers owned by `self` (set up in `with_slots`, never
        // moved or resized), with lengths that match their allocations; the kernel writes at
        // most those lengths. A null timeout is allowed.
        let n = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                self.hdrs.as_mut_ptr(),
                self.hdrs.len() as libc::c_uint,
                flags,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            self.received = 0;
            return Err(io::Error::last_os_error());
        }
        self.received = n as usize;
        Ok(self.received)
    }

    /// Datagram `i` of the last call (cut to the slot length if it was longer).
    #[inline]
    pub fn datagram(&self, i: usize) -> &[u8] {
        let len = (self.hdrs[i].msg_len as usize).min(self.slot_len);
        &self.buffers[i * self.stride..i * self.stride + len]
    }

    /// Bytes of datagram `i` that were read (at most the slot length).
    #[inline]
    pub fn len(&self, i: usize) -> usize {
        self.hdrs[i].msg_len as usize
    }

    /// True if datagram `i` did not fit its slot.
    #[inline]
    pub fn truncated(&self, i: usize) -> bool {
        self.hdrs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0
    }

    /// Where datagram `i` came from (`None` when read [`RecvBatch::without_sources`]).
    pub fn source(&self, i: usize) -> Option<SocketAddr> {
        if !self.sources {
            return None;
        }
        let len = self.hdrs[i].msg_hdr.msg_namelen as usize;
        sockaddr_to_std(&self.names[i], len)
    }

    /// With `UDP_GRO` on, message `i` holds several datagrams coalesced by the kernel, each of
    /// this many bytes but the last (which may be shorter); `None` when it holds one datagram.
    pub fn gro_segment(&self, i: usize) -> Option<usize> {
        self.control_u32(i, libc::SOL_UDP, libc::UDP_GRO)
            .map(|s| s as usize)
            .filter(|&s| s > 0)
    }

    /// The 4-byte datum (a C int) of message `i`'s control message `level`/`kind`.
    fn control_u32(&self, i: usize, level: i32, kind: i32) -> Option<u32> {
        let hdr = &self.hdrs[i].msg_hdr;
        // SAFETY: `hdr` is a msghdr the kernel filled in the last recvmmsg call; its control
        // pointer and (kernel-updated) length describe `self.control[i]`. CMSG_FIRSTHDR/NXTHDR
        // stay within msg_controllen; the data of UDP_GRO (an int) is four bytes, read
        // unaligned after checking the message is long enough.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(hdr);
            while !c.is_null() {
                if (*c).cmsg_level == level
                    && (*c).cmsg_type == kind
                    && (*c).cmsg_len as usize >= libc::CMSG_LEN(4) as usize
                {
                    return Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<u32>()));
                }
                c = libc::CMSG_NXTHDR(hdr, c);
            }
        }
        None
    }
}

/// Datagrams to send: fixed buffers, each with its own length and optional destination.
pub struct SendBatch {
    slot_len: usize,
    /// Slot `i` starts `i * stride` bytes in, as in [`RecvBatch`].
    stride: usize,
    // Never resized after `with_slots`, so the pointers in `hdrs` stay valid.
    buffers: AlignedBuf,
    iovecs: Vec<libc::iovec>,
    names: Vec<libc::sockaddr_storage>,
    control: Vec<[u64; SEGMENT_CONTROL_WORDS]>,
    hdrs: Vec<libc::mmsghdr>,
}

impl SendBatch {
    /// [`BATCH`] buffers of `slot_len` bytes, each initially `slot_len` long and sent on the
    /// socket's connected address.
    pub fn new(slot_len: usize) -> SendBatch {
        Self::with_slots(slot_len, BATCH, None)
    }

    /// `slots` buffers (at least one) of `slot_len` bytes. With `segment = Some(s)`, each
    /// message carries a `UDP_SEGMENT` control message: the kernel cuts a buffer longer than
    /// `s` into datagrams of `s` bytes (UDP GSO), the last one possibly shorter.
    pub fn with_slots(slot_len: usize, slots: usize, segment: Option<u16>) -> SendBatch {
        let slots = slots.max(1);
        let stride = buf::stride(slot_len);
        let mut b = SendBatch {
            slot_len,
            stride,
            buffers: AlignedBuf::zeroed(stride * slots),
            // SAFETY: plain C structs, all-zero is valid (see RecvBatch::new).
            iovecs: vec![unsafe { zeroed() }; slots],
            names: vec![unsafe { zeroed() }; slots],
            control: vec![[0; SEGMENT_CONTROL_WORDS]; slots],
            hdrs: vec![unsafe { zeroed() }; slots],
        };
        for i in 0..slots {
            b.iovecs[i].iov_base = b.buffers[i * b.stride..].as_mut_ptr().cast();
            b.iovecs[i].iov_len = slot_len;
            b.hdrs[i].msg_hdr.msg_iov = &mut b.iovecs[i];
            b.hdrs[i].msg_hdr.msg_iovlen = 1;
            if let Some(size) = segment {
                b.set_segment(i, size);
            }
        }
        b
    }

    /// Attaches the `UDP_SEGMENT` control message of `size` to message `i`.
    fn set_segment(&mut self, i: usize, size: u16) {
        let space = std::mem::size_of_val(&self.control[i]);
        let h = &mut self.hdrs[i].msg_hdr;
        h.msg_control = self.control[i].as_mut_ptr().cast();
        // SAFETY: CMSG_SPACE of a u16 (24 bytes on 64-bit Linux) fits the 32-byte, u64-aligned
        // control buffer of this message, which `self` owns and never moves; CMSG_FIRSTHDR of
        // a msghdr whose control length is that space points at its start, and CMSG_DATA
        // stays inside it. The u16 is written unaligned.
        unsafe {
            let needed = libc::CMSG_SPACE(size_of::<u16>() as u32) as usize;
            assert!(
                needed <= space,
                "UDP_SEGMENT control message fits its buffer"
            );
            h.msg_controllen = needed as _;
            let c = libc::CMSG_FIRSTHDR(h);
            (*c).cmsg_level = libc::SOL_UDP;
            (*c).cmsg_type = libc::UDP_SEGMENT;
            (*c).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), size);
        }
    }

    /// Messages in the batch.
    pub fn slots(&self) -> usize {
        self.hdrs.len()
    }

    /// Bytes each buffer holds.
    pub fn slot_len(&self) -> usize {
        self.slot_len
    }

    /// Buffer `i`, whole slot.
    #[inline]
    pub fn buf_mut(&mut self, i: usize) -> &mut [u8] {
        &mut self.buffers[i * self.stride..i * self.stride + self.slot_len]
    }

    /// Sets how many bytes of buffer `i` are sent (at most the slot length).
    pub fn set_len(&mut self, i: usize, len: usize) {
        self.iovecs[i].iov_len = len.min(self.slot_len);
    }

    /// Sends datagram `i` to `dest` rather than the connected address.
    pub fn set_dest(&mut self, i: usize, dest: SocketAddr) {
        let len = std_to_sockaddr(dest, &mut self.names[i]);
        self.hdrs[i].msg_hdr.msg_name = (&mut self.names[i] as *mut libc::sockaddr_storage).cast();
        self.hdrs[i].msg_hdr.msg_namelen = len;
    }

    /// Sends datagrams `0..n`; returns how many the kernel took (it stops at the first error,
    /// which is returned only if nothing was sent).
    #[inline]
    pub fn send(&mut self, fd: BorrowedFd<'_>, n: usize) -> io::Result<usize> {
        self.send_from(fd, 0, n)
    }

    /// Sends datagrams `start..start + n` (clipped to the batch), as [`SendBatch::send`].
    pub fn send_from(&mut self, fd: BorrowedFd<'_>, start: usize, n: usize) -> io::Result<usize> {
        let start = start.min(self.hdrs.len());
        let n = n.min(self.hdrs.len() - start);
        // SAFETY: mmsghdrs `start..start + n` (within the array) point at buffers and addresses
        // owned by `self` with matching lengths (iov_len ≤ slot length); the kernel only reads
        // them.
        let r = unsafe {
            libc::sendmmsg(
                fd.as_raw_fd(),
                self.hdrs.as_mut_ptr().add(start),
                n as libc::c_uint,
                0,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }
}

fn sockaddr_to_std(ss: &libc::sockaddr_storage, len: usize) -> Option<SocketAddr> {
    match i32::from(ss.ss_family) {
        libc::AF_INET if len >= size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says this storage holds a sockaddr_in, which is smaller than
            // and no more aligned than sockaddr_storage.
            let a = unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 if len >= size_of::<libc::sockaddr_in6>() => {
            // SAFETY: as above, for sockaddr_in6.
            let a = unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

fn std_to_sockaddr(addr: SocketAddr, ss: &mut libc::sockaddr_storage) -> libc::socklen_t {
    match addr {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_in fits in (and is no more aligned than) sockaddr_storage; all
            // its fields are written below or zeroed.
            let s =
                unsafe { &mut *(ss as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            s.sin_family = libc::AF_INET as libc::sa_family_t;
            s.sin_port = a.port().to_be();
            s.sin_addr.s_addr = u32::from(*a.ip()).to_be();
            s.sin_zero = [0; 8];
            size_of::<libc::sockaddr_in>() as libc::socklen_t
        }
        SocketAddr::V6(a) => {
            // SAFETY: as above, for sockaddr_in6.
            let s =
                unsafe { &mut *(ss as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            s.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            s.sin6_port = a.port().to_be();
            s.sin6_flowinfo = a.flowinfo();
            s.sin6_addr.s6_addr = a.ip().octets();
            s.sin6_scope_id = a.scope_id();
            size_of::<libc::sockaddr_in6>() as libc::socklen_t
        }
    }
}

fn getsockopt_bytes(
    fd: BorrowedFd<'_>,
    level: i32,
    name: i32,
    out: &mut [u8],
) -> io::Result<usize> {
    let mut len = out.len() as libc::socklen_t;
    // SAFETY: `out` is a writable buffer of `len` bytes; the kernel writes at most `len` and
    // updates `len` to what it wrote.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            out.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(len as usize)
    }
}

fn setsockopt_int(fd: BorrowedFd<'_>, level: i32, name: i32, value: libc::c_int) -> io::Result<()> {
    // SAFETY: passes a pointer to a live c_int and its exact size.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The socket's total of dropped datagrams (`SO_MEMINFO`, `SK_MEMINFO_DROPS`), a u32 that wraps.
///
/// Read with one getsockopt when asked, where the `SO_RXQ_OVFL` control message would cost a
/// copy on every datagram read once the count is non-zero (and rides only on a datagram that
/// is delivered, so it misses drops after the last one).
pub fn socket_drops(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let mut raw = [0u8; 4 * MEMINFO_VARS];
    let len = getsockopt_bytes(fd, libc::SOL_SOCKET, libc::SO_MEMINFO, &mut raw)?;
    let at = 4 * libc::SK_MEMINFO_DROPS as usize;
    if len < at + 4 {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "SO_MEMINFO too short for SK_MEMINFO_DROPS",
        ));
    }
    Ok(u32::from_ne_bytes([
        raw[at],
        raw[at + 1],
        raw[at + 2],
        raw[at + 3],
    ]))
}

/// Forbids fragmentation on this socket (`IP_PMTUDISC_DO` / `IPV6_PMTUDISC_DO`): a datagram
/// larger than the path MTU fails with EMSGSIZE instead of being fragmented.
pub fn forbid_fragmentation(fd: BorrowedFd<'_>, ipv6: bool) -> io::Result<()> {
    if ipv6 {
        setsockopt_int(
            fd,
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_DO,
        )
    } else {
        setsockopt_int(
            fd,
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_DO,
        )
    }
}

/// The path MTU the kernel knows for a connected socket (`IP_MTU` / `IPV6_MTU`).
pub fn path_mtu(fd: BorrowedFd<'_>, ipv6: bool) -> io::Result<usize> {
    let mut raw = [0u8; 4];
    let (level, name) = if ipv6 {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU)
    } else {
        (libc::IPPROTO_IP, libc::IP_MTU)
    };
    getsockopt_bytes(fd, level, name, &mut raw)?;
    Ok(i32::from_ne_bytes(raw).max(0) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsFd;

    #[test]
    fn batch_round_trip_with_sources() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let mut s = SendBatch::new(100);
        for i in 0..5 {
            s.buf_mut(i)[0] = i as u8;
            s.set_len(i, 10 + i);
        }
        assert_eq!(s.send(tx.as_fd(), 5).unwrap(), 5);
        let mut r = RecvBatch::new(12);
        let mut got = 0;
        while got < 5 {
            let n = r.recv(rx.as_fd(), RecvWait::One).unwrap();
            for i in 0..n {
                let k = got + i;
                assert_eq!(r.len(i), (10 + k).min(12));
                assert_eq!(r.datagram(i)[0], k as u8);
                assert_eq!(r.truncated(i), 10 + k > 12);
                assert_eq!(r.source(i), Some(tx.local_addr().unwrap()));
            }
            got += n;
        }
        assert_eq!(socket_drops(rx.as_fd()).unwrap(), 0);
    }

    #[test]
    fn a_batch_without_sources_reads_the_same_datagrams() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let mut s = SendBatch::new(40);
        for i in 0..3 {
            s.buf_mut(i)[0] = 7 + i as u8;
        }
        assert_eq!(s.send(tx.as_fd(), 3).unwrap(), 3);
        let mut r = RecvBatch::new(64).without_sources();
        let mut got = 0;
        while got < 3 {
            let n = r.recv(rx.as_fd(), RecvWait::One).unwrap();
            for i in 0..n {
                assert_eq!((r.len(i), r.datagram(i)[0]), (40, 7 + (got + i) as u8));
                assert_eq!(r.source(i), None);
                // The kernel was given no room for an address, and wrote none.
                assert_eq!(r.hdrs[i].msg_hdr.msg_namelen, 0);
            }
            got += n;
        }
    }

    #[test]
    fn every_slot_starts_on_a_cache_line() {
        // 1400-byte slots laid end to end would start 56, 48, ... bytes past a line.
        let r = RecvBatch::with_slots(1400, 5);
        let mut s = SendBatch::with_slots(1400, 5, None);
        for i in 0..5 {
            assert_eq!(
                r.iovecs[i].iov_base as usize % buf::CACHE_LINE,
                0,
                "recv slot {i}"
            );
            assert_eq!(r.iovecs[i].iov_len, 1400);
            assert_eq!(
                s.iovecs[i].iov_base as usize % buf::CACHE_LINE,
                0,
                "send slot {i}"
            );
            assert_eq!(s.buf_mut(i).as_ptr(), s.iovecs[i].iov_base as *const u8);
            assert_eq!(s.buf_mut(i).len(), 1400);
        }
    }

    #[test]
    fn send_to_explicit_destination() {
        let rx = UdpSocket::bind("[::1]:0").unwrap();
        let tx = UdpSocket::bind("[::1]:0").unwrap();
        let mut s = SendBatch::new(20);
        s.set_dest(0, rx.local_addr().unwrap());
        assert_eq!(s.send(tx.as_fd(), 1).unwrap(), 1);
        let mut buf = [0u8; 64];
        let (n, from) = rx.recv_from(&mut buf).unwrap();
        assert_eq!((n, from), (20, tx.local_addr().unwrap()));
        assert!(
            path_mtu(tx.as_fd(), true).is_err(),
            "unconnected socket has no path MTU"
        );
    }
}
