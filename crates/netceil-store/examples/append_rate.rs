//! Measures what recording costs: the time of one committed interval (`append_row`) and the
//! bytes a row takes on disk, for a run as wide as a many-core host produces.
//!
//! `cargo run --release -p netceil-store --example append_rate [ROWS] [METRICS] [BATCH]`
//! (defaults 2000 rows of 200 metrics, a quarter of them missing, one row per transaction).
//! With BATCH, rows are committed BATCH at a time (`append_rows`), and the CPU time of a row
//! (this thread's, user and kernel) is printed too.

use std::time::Instant;

use netceil_model::{MetricId, Run, RunSource, Unit};
use netceil_store::Store;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let rows: usize = args.next().map_or(Ok(2000), |a| a.parse())?;
    let metrics: usize = args.next().map_or(Ok(200), |a| a.parse())?;
    let batch: usize = args.next().map_or(Ok(1), |a| a.parse())?.max(1);
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("runs.db");
    let store = Store::open(&path)?;
    let mut writer = store.begin_run(&Run::new("append-rate", RunSource::Live))?;
    let ids: Vec<MetricId> = (0..metrics)
        .map(|i| MetricId::new("cpu_busy_pct").with("cpu", i.to_string()))
        .collect();
    let mut took_us = Vec::with_capacity(rows);
    let mut pending = Vec::with_capacity(batch);
    let cpu0 = thread_cpu();
    for r in 0..rows {
        let values: Vec<(MetricId, Unit, Option<f64>)> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let value = ((i + r) % 4 != 0).then(|| (i * r) as f64 * 0.37);
                (id.clone(), Unit::Percent, value)
            })
            .collect();
        pending.push(((r + 1) as f64, values));
        if pending.len() < batch && r + 1 < rows {
            continue;
        }
        let start = Instant::now();
        writer.append_rows(&pending)?;
        took_us.push(start.elapsed().as_secs_f64() * 1e6 / pending.len() as f64);
        pending.clear();
    }
    let cpu = thread_cpu().zip(cpu0).map(|(b, a)| b - a);
    drop(writer);
    drop(store);
    took_us.sort_by(f64::total_cmp);
    let pct = |p: f64| took_us[((took_us.len() - 1) as f64 * p).round() as usize];
    let bytes: u64 = std::fs::read_dir(dir.path())?
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();
    println!(
        "{rows} rows × {metrics} metrics, {batch} a transaction: per row median {:.0} µs, p99 {:.0} µs, max {:.0} µs; \
         {:.0} bytes per row on disk (database + WAL)",
        pct(0.5),
        pct(0.99),
        pct(1.0),
        bytes as f64 / rows as f64
    );
    if let Some(cpu) = cpu {
        println!(
            "  CPU per row, user and kernel (building the values included): {:.1} µs",
            cpu * 1e6 / rows as f64
        );
    }
    Ok(())
}

/// This thread's time on CPU so far (user and kernel), seconds, from the scheduler's count.
fn thread_cpu() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns * 1e-9)
}
