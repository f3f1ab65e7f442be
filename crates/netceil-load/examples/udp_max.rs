//! Benchmark: netceil's UDP engine flat out over loopback, to compare with bench/udp_floor.c.
//!
//! `cargo run --release -p netceil-load --example udp_max -- [PAYLOAD] [SECONDS] [RATE_PPS] [spin|sleep] [INTERVAL_NS]`
//! prints one line of key=value figures. Build with --release: a debug build measures the
//! compiler, not the engine.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use netceil_load::udp::{run_udp, UdpConfig};
use netceil_model::{PacingMode, Rate};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    let payload = arg(0).and_then(|s| s.parse().ok()).unwrap_or(64);
    let secs: f64 = arg(1).and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let rate = arg(2)
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|r| *r > 0.0)
        .map(Rate::PacketsPerSecond);
    let pacing = match arg(3) {
        Some("spin") => PacingMode::Spin,
        _ => PacingMode::Sleep,
    };
    let interval_ns = arg(4).and_then(|s| s.parse().ok());
    let cfg = UdpConfig {
        payload_bytes: payload,
        rate,
        interval_ns,
        pacing,
        duration: Duration::from_secs_f64(secs),
        run_id: std::process::id() as u16,
        ..UdpConfig::default()
    };
    let stop = AtomicBool::new(false);
    let cpu_before = process_cpu_s();
    let out = match run_udp(&cfg, &stop, &mut |_| {}) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("udp_max: {e}");
            std::process::exit(2);
        }
    };
    let process_cpu = process_cpu_s() - cpu_before;
    let r = &out.results;
    let g = &r.generator;
    println!(
        "payload={payload} tx_pps={:.0} rx_app_pps={:.0} lost={} socket_drops={:?} unexplained={} in_flight={} \
         requested_pps={:?} achieved_ratio={:?} gap_err_median_us={:?} gap_err_p99_us={:?} cpu_s={:.2} spin_s={:.2} \
         late={} send_errors={} generator_limited={} process_cpu_s={process_cpu:.2} cpu_ns_per_packet={:.0}",
        r.tx_pps,
        r.rx_app_pps,
        r.lost_packets,
        r.kernel.socket_drops,
        r.unexplained_packets,
        r.in_flight_packets,
        r.requested_pps,
        g.achieved_ratio,
        g.send_gap_error_median_us,
        g.send_gap_error_p99_us,
        g.cpu_s,
        g.spin_cpu_s,
        g.late_sends,
        g.send_errors,
        r.generator_limited,
        process_cpu * 1e9 / r.tx_packets.max(1) as f64,
    );
}

/// User + system CPU of the whole process (all threads), seconds.
fn process_cpu_s() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_SELF).map_or(0.0, |u| {
        let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
        t(u.user_time()) + t(u.system_time())
    })
}
