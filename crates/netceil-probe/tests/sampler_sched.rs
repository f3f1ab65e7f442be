//! The sampler thread's scheduling class on the live kernel. In a test binary of its own: it
//! keeps every CPU busy for a while, which would starve the other tests' samplers.

use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use netceil_probe::{spawn_sampler, ProcFs, SamplerConfig};

fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Asked to, the sampler starts in the idle scheduling class, out of the workload's way; when every CPU
/// is kept busy its samples come late, and it moves to the ordinary class, by itself or raised
/// by whoever waits for its rows (see `netceil_probe::sched`). Where this process could not leave the idle class it never
/// enters it.
#[test]
fn a_sampler_starved_by_full_cpus_leaves_the_idle_class() {
    use netceil_probe::sched::SamplerPriority;
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let handle = spawn_sampler(
        ProcFs::new(),
        SamplerConfig {
            interval: Duration::from_millis(10),
            idle_class: true,
            ..SamplerConfig::default()
        },
        Arc::clone(&stop),
        tx,
    )
    .unwrap();
    // Every CPU busy with an ordinary thread for up to 3 s.
    let busy = Arc::new(AtomicBool::new(true));
    let spinners: Vec<_> = (0..online_cpus())
        .map(|_| {
            let busy = Arc::clone(&busy);
            std::thread::spawn(move || {
                let until = std::time::Instant::now() + Duration::from_secs(3);
                let mut n = 0u64;
                while busy.load(std::sync::atomic::Ordering::Relaxed)
                    && std::time::Instant::now() < until
                {
                    n = n.wrapping_add(1);
                    std::hint::black_box(n);
                }
            })
        })
        .collect();
    // As the engine's recording does: rows overdue (here 250 ms) raise the sampler from
    // outside, since a thread in the idle class may not get to run at all.
    let until = std::time::Instant::now() + Duration::from_millis(1500);
    while std::time::Instant::now() < until {
        if rx.recv_timeout(Duration::from_millis(250)).is_err() {
            handle.raise();
        }
    }
    busy.store(false, std::sync::atomic::Ordering::Relaxed);
    for s in spinners {
        s.join().unwrap();
    }
    let out = handle.stop().expect("sampler thread ended cleanly");
    match out.priority {
        SamplerPriority::Raised { at_s, late_ms } => {
            assert!((0.0..2.0).contains(&at_s), "raised at {at_s} s");
            assert!(late_ms > 2.5, "late {late_ms} ms, under the limit");
        }
        SamplerPriority::Nice => eprintln!(
            "skipped: this process may not leave the idle class (no CAP_SYS_NICE, RLIMIT_NICE below 10), so the sampler stayed at nice 10"
        ),
        SamplerPriority::Idle => panic!("every CPU was full for 1.5 s and the sampler stayed idle"),
    }
    assert!(out.series.len() >= 10, "{} rows", out.series.len());
}
