//! Buffers the kernel copies payload into and out of, aligned for its copy routine.
//!
//! The kernel's copy to user space (`_copy_to_iter`, `rep movsb` on CPUs with fast short
//! `rep mov`) is several times slower when the destination does not start on a cache line.
//! Measured on Linux 6.18, 2 vCPUs of an AMD EPYC, reading a pipe (page-aligned source) in
//! 1 MiB reads (`bench/copy_align.c`): 0.54–0.74 s of CPU per GiB into a buffer 1, 8 or 16
//! bytes past a page boundary (16 is where a heap allocation of this size starts: malloc's
//! chunk header), 0.15–0.19 s at 0, 64, 128, 512 or 2048 bytes, 0.20 at 32 or 48. On one
//! loopback TCP stream the reader's copy took 64–72 % of the reading thread's CPU into a
//! `Vec`, 22–27 % into a page-aligned buffer, as iperf3's (which reads into `mmap`ed memory).
//! The copy from user space (the sender's) barely cares: 0.13–0.16 s per GiB at either
//! offset, so send buffers are aligned only for symmetry.
//!
//! [`AlignedBuf`] starts on a page; [`stride`] spaces the slots of a batch of datagrams so
//! that each starts on a cache line too.

use std::ops::{Deref, DerefMut};

/// Where an [`AlignedBuf`] starts: a page boundary (a cache-line boundary too).
pub const PAGE: usize = 4096;

/// The cache line the kernel's copy wants its destination aligned to.
pub const CACHE_LINE: usize = 64;

/// A fixed-length byte buffer that starts on a page boundary.
///
/// Safe code only: a `Vec` one page longer than asked, used from its first page boundary.
pub struct AlignedBuf {
    /// `len + PAGE - 1` bytes: the length is what is left past the slack.
    backing: Vec<u8>,
    start: usize,
}

impl AlignedBuf {
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> AlignedBuf {
        AlignedBuf::filled(len, 0)
    }

    /// `len` bytes of `byte`.
    pub fn filled(len: usize, byte: u8) -> AlignedBuf {
        let backing = vec![byte; len + PAGE - 1];
        let start = backing.as_ptr().align_offset(PAGE);
        // align_offset on a u8 pointer is always below the alignment asked for.
        debug_assert!(start < PAGE);
        AlignedBuf { backing, start }
    }

    fn range(&self) -> std::ops::Range<usize> {
        self.start..self.start + self.backing.len() + 1 - PAGE
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.backing[self.range()]
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        let range = self.range();
        &mut self.backing[range]
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len())
            .finish()
    }
}

/// The distance between consecutive slots of `slot_len` bytes in one [`AlignedBuf`], so that
/// each slot starts on a cache line: `slot_len` rounded up to [`CACHE_LINE`] (at least one).
pub fn stride(slot_len: usize) -> usize {
    slot_len.max(1).next_multiple_of(CACHE_LINE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_starts_on_a_page_and_has_the_length_asked() {
        // Many sizes, so that the allocator's placement varies (small ones come from the
        // heap's arenas, large ones from mmap with a 16-byte header).
        let mut held = Vec::new();
        for len in [1, 63, 64, 100, 1400, 4096, 65_536, 1 << 20, (1 << 20) + 7] {
            let mut b = AlignedBuf::filled(len, 0xA5);
            assert_eq!(b.as_ptr() as usize % PAGE, 0, "len {len}");
            assert_eq!(b.len(), len);
            assert!(b.iter().all(|&x| x == 0xA5));
            b[len - 1] = 1;
            assert_eq!(b.last(), Some(&1));
            held.push(b);
        }
        assert!(AlignedBuf::zeroed(10).iter().all(|&x| x == 0));
        assert!(AlignedBuf::zeroed(0).is_empty());
    }

    #[test]
    fn slots_start_on_cache_lines() {
        assert_eq!(stride(64), 64);
        assert_eq!(stride(1400), 1408);
        assert_eq!(stride(1), 64);
        assert_eq!(stride(0), 64);
        assert_eq!(stride(65_507), 65_536);
    }
}
