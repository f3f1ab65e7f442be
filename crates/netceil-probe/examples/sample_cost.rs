//! What the sampler costs: its thread's CPU time per second of wall time, at 10 ms and at 1 s.
//!
//! `cargo run --release -p netceil-probe --example sample_cost -- [SECS_AT_10MS] [SECS_AT_1S]`
//! (defaults 5 and 10). Targets from the observation issue: ≤ 2 % of one core at 10 ms,
//! ≤ 0.2 % at 1 s. The figures include everything the thread does: reading and parsing every
//! source, computing rates, and appending rows to the series.

use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use netceil_probe::{spawn_sampler, ProcFs, SamplerConfig};

fn measure(interval: Duration, run_for: Duration) -> Result<(), String> {
    let (tx, rx) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let config = SamplerConfig {
        interval,
        ..SamplerConfig::default()
    };
    let started = Instant::now();
    let handle = spawn_sampler(ProcFs::new(), config, Arc::clone(&stop), tx)
        .map_err(|e| format!("could not start the sampler: {e}"))?;
    // Read rows as they come, as a live table would.
    let mut last_row = None;
    while started.elapsed() < run_for {
        if let Ok(row) = rx.recv_timeout(Duration::from_millis(50)) {
            last_row = Some(row);
        }
    }
    let out = handle
        .stop()
        .map_err(|_| "the sampler thread panicked".to_string())?;
    let wall = started.elapsed().as_secs_f64();
    let rows: Vec<_> = last_row.into_iter().chain(rx.try_iter()).collect();
    let cpu = out
        .sampler_cpu_s
        .ok_or("no thread CPU clock on this platform")?;
    let metrics = rows.last().map_or(0, |r| r.len());
    let mut stdout = std::io::stdout().lock();
    // A closed stdout (piped into head) is not an error worth a panic.
    let _ = writeln!(
        stdout,
        "interval {:>7.3} s: {:>4} samples in {:>5.2} s wall, sampler CPU {:>8.3} ms = {:.3} % of one core ({:.0} us per sample, {} values per row)",
        interval.as_secs_f64(),
        out.samples,
        wall,
        cpu * 1e3,
        100.0 * cpu / wall,
        1e6 * cpu / out.samples.max(1) as f64,
        metrics,
    );
    Ok(())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut secs = |default: f64| {
        args.next()
            .and_then(|a| a.parse::<f64>().ok())
            .filter(|s| *s > 0.0 && *s <= 600.0)
            .unwrap_or(default)
    };
    let fast = Duration::from_secs_f64(secs(5.0));
    let slow = Duration::from_secs_f64(secs(10.0));
    for (interval, run_for) in [
        (Duration::from_millis(10), fast),
        (Duration::from_secs(1), slow),
    ] {
        if let Err(e) = measure(interval, run_for) {
            eprintln!("sample_cost: {e}");
            std::process::exit(1);
        }
    }
}
