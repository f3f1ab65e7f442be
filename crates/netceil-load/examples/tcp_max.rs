//! Loopback TCP throughput with netceil's engine, for comparing against iperf3.
//!
//! ```text
//! cargo run --release -p netceil-load --example tcp_max -- [SECONDS] [FLOWS] [RATE_BIT_S] [kernel|app]
//! ```
//! prints one line: receiver goodput in Gbit/s, then sender CPU and pacing details.

use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use netceil_load::tcp::{run_tcp, TcpConfig, TcpPacingChoice};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    let seconds: f64 = arg(0).map_or(5.0, |s| s.parse().expect("SECONDS is a number"));
    let flows: u32 = arg(1).map_or(1, |s| s.parse().expect("FLOWS is a whole number"));
    let rate: Option<f64> = arg(2).map(|s| s.parse().expect("RATE_BIT_S is a number"));
    let pacing = match arg(3) {
        Some("kernel") => TcpPacingChoice::Kernel,
        Some("app") => TcpPacingChoice::Application,
        _ => TcpPacingChoice::Auto,
    };
    let cfg = TcpConfig {
        flows,
        rate_per_flow_bps: rate,
        duration: Duration::from_secs_f64(seconds),
        pacing,
        ..TcpConfig::default()
    };
    let stop = AtomicBool::new(false);
    let r = match run_tcp(&cfg, &stop, &mut |_| {}) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tcp_max: {e}");
            std::process::exit(1);
        }
    };
    let retrans: u64 = r.flows.iter().filter_map(|f| f.retransmits).sum();
    let (min_flow, max_flow) = r.flows.iter().fold((f64::MAX, 0f64), |(lo, hi), f| {
        (lo.min(f.bits_per_s), hi.max(f.bits_per_s))
    });
    // A closed pipe (`| head -1`) just ends the output.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "rx {:.3} Gbit/s  tx {:.3} Gbit/s  sender cpu {:.1} %  retrans {retrans}  \
         per-flow min/max {:.3}/{:.3} Mbit/s  generator_limited {}  gap p50/p99 {:?}/{:?} us",
        r.rx_app_bits_per_s / 1e9,
        r.tx_bits_per_s / 1e9,
        r.generator.cpu_pct,
        min_flow / 1e6,
        max_flow / 1e6,
        r.generator_limited,
        r.generator.send_gap_error_median_us,
        r.generator.send_gap_error_p99_us,
    );
    for n in &r.notes {
        let _ = writeln!(out, "  note: {n}");
    }
}
