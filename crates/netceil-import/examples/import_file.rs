//! Imports one file through the library and prints how fast it went, for bench/import-speed.sh.
//!
//! `cargo run --release -p netceil-import --example import_file -- [--format NAME|auto] [--summary] PATH`
//!
//! Prints `lines=N seconds=S lines_per_s=R rows=… metrics=…`; with `--summary`, also each
//! metric with its first values and every warning.

use std::io::Write;
use std::time::Instant;

use netceil_import::{detect, import, Format, ImportOptions};

fn main() {
    let mut format = "auto".to_string();
    let mut summary = false;
    let mut path = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--format" => format = args.next().unwrap_or_default(),
            "--summary" => summary = true,
            _ => path = Some(a),
        }
    }
    let Some(path) = path else {
        eprintln!("usage: import_file [--format NAME|auto] [--summary] PATH");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let fmt = if format == "auto" {
        match detect(&text) {
            Ok(f) => f,
            Err(reasons) => {
                for r in reasons {
                    eprintln!("{}: {}", r.format, r.reason);
                }
                std::process::exit(1);
            }
        }
    } else {
        match Format::from_name(&format) {
            Some(f) => f,
            None => {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                eprintln!("unknown format {format}; known: {}", names.join(", "));
                std::process::exit(2);
            }
        }
    };
    let opts = ImportOptions {
        file: path.clone(),
        ..Default::default()
    };
    let lines = text.lines().count();
    let cpu0 = cpu_seconds();
    let start = Instant::now();
    let result = import(fmt, &text, &opts);
    let secs = start.elapsed().as_secs_f64();
    // On a shared machine the wall time includes waiting for a core; the CPU time does not.
    let cpu = cpu_seconds().zip(cpu0).map(|(b, a)| b - a);
    match result {
        Ok(imported) => {
            let run = &imported.run;
            let mut out = std::io::stdout().lock();
            // A closed pipe (`| head`) ends the output quietly.
            let _ = writeln!(
                out,
                "format={} lines={lines} seconds={secs:.6} lines_per_s={:.0} cpu_lines_per_s={} rows={} metrics={} warnings={}",
                fmt.name(),
                lines as f64 / secs.max(1e-9),
                cpu.filter(|c| *c > 0.0).map_or("-".to_string(), |c| format!("{:.0}", lines as f64 / c)),
                run.series.len(),
                run.series.metrics.len(),
                imported.warnings.len()
            );
            if summary {
                let _ = writeln!(
                    out,
                    "run_id={} interval_s={} started_unix_s={} host={:?}",
                    run.run_id, run.series.interval_s, run.meta.started_unix_s, run.meta.host
                );
                let _ = writeln!(
                    out,
                    "t_s: {:?}",
                    run.series.t_s.iter().take(6).collect::<Vec<_>>()
                );
                for m in &run.series.metrics {
                    let first: Vec<String> = m
                        .values
                        .iter()
                        .take(5)
                        .map(|v| v.map_or("-".into(), |x| format!("{x}")))
                        .collect();
                    let _ = writeln!(out, "  {} [{}]: {}", m.id, m.unit.symbol(), first.join(" "));
                }
                for n in &run.notes {
                    let _ = writeln!(out, "note: {n}");
                }
            }
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}

/// User + system CPU seconds of this process from /proc/self/stat (Linux; 100 ticks/s, the
/// kernel's USER_HZ), or `None` elsewhere.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_comm = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}
