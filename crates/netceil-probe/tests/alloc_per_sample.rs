//! How much the sampler allocates per sample on the live /proc, counted by a global allocator
//! that counts: at a 10 ms interval every allocation is paid a hundred times a second, and the
//! allocator was a tenth of the sampler's CPU in a profile.

// A counting allocator needs `unsafe impl GlobalAlloc`: it only forwards to the system one.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use netceil_probe::{ProcFs, Recorder, Sampler, SamplerConfig};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Rows of back-to-back samples, the worst case: every interval is shorter than a CPU tick,
/// so every CPU share of every row is missing, with its reason. Making a row from two
/// snapshots must cost a handful of allocations whatever goes missing: the same missing
/// values and reasons are shared from row to row, not written out again (that was ~180
/// allocations a row on a 2-CPU machine, 9 times what reading the files cost).
#[test]
fn making_a_row_allocates_a_handful_whatever_is_missing() {
    if !std::path::Path::new("/proc/stat").exists() {
        eprintln!("skipped: no /proc here");
        return;
    }
    let config = SamplerConfig {
        interval: Duration::from_millis(10),
        // The slow tier is left out of the count: it is read a tenth as often and reads
        // per-process files whose number is the machine's, not the sampler's.
        slow_interval: Duration::from_secs(3600),
        ..SamplerConfig::default()
    };
    let mut sampler = Sampler::new(ProcFs::new(), config);
    let mut recorder = Recorder::new(Duration::from_millis(10));
    // Warm up: buffers grow, identities, schemas and reasons are made, files opened.
    for _ in 0..200 {
        recorder.push(sampler.sample());
    }
    let n = 640u64;
    let (mut in_sample, mut in_row, mut missing) = (0u64, 0u64, 0u64);
    for _ in 0..n {
        let a = ALLOCS.load(Ordering::Relaxed);
        let snap = sampler.sample();
        let b = ALLOCS.load(Ordering::Relaxed);
        let row = recorder.push(snap);
        in_row += ALLOCS.load(Ordering::Relaxed) - b;
        in_sample += b - a;
        missing += row.map_or(0, |r| r.missing.len() as u64);
    }
    let per = |x: u64| x as f64 / n as f64;
    eprintln!(
        "allocations per fast-tier sample: {:.1} reading, {:.1} making the row ({:.1} values missing a row)",
        per(in_sample),
        per(in_row),
        per(missing)
    );
    assert!(
        missing > 0,
        "no value went missing: the case is not exercised"
    );
    // The row's values, its missing list, the copy kept until the series is written, and
    // the series' growth, amortised.
    assert!(per(in_row) <= 8.0, "{} allocations a row", per(in_row));
}
