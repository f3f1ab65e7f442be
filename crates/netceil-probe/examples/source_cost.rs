//! Where a sample's CPU goes: each source the sampler reads, read (and parsed) on its own many
//! times through the kept-open descriptors of [`ProcFs`], timed on this thread's CPU clock.
//!
//! `cargo run --release -p netceil-probe --example source_cost -- [READS]` (default 2000).
//! Prints, per source, the microseconds of CPU of one read and of one read with its parse,
//! and the whole sample (fast and slow tier) as the sampler takes it.

use std::io::Write;
use std::time::Duration;

use netceil_probe::parse::{
    interrupts, net_dev, netstat, pressure, proc_stat, snmp, softirqs, softnet,
};
use netceil_probe::{ProcFs, Sampler, SamplerConfig, Source};

/// CPU microseconds per call of `f`, over `n` calls.
fn per_call(src: &ProcFs, n: u32, mut f: impl FnMut()) -> f64 {
    let cpu = || src.thread_cpu_time().unwrap_or(Duration::ZERO);
    let a = cpu();
    for _ in 0..n {
        f();
    }
    (cpu() - a).as_secs_f64() * 1e6 / f64::from(n)
}

type Parse = fn(&str) -> bool;

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .filter(|&n| n > 0 && n <= 1_000_000)
        .unwrap_or(2000);
    let src = ProcFs::new();
    let sources: [(&str, Parse); 10] = [
        (proc_stat::SOURCE, |t| proc_stat::parse(t).is_ok()),
        (softirqs::SOURCE, |t| softirqs::parse(t).is_ok()),
        (net_dev::SOURCE, |t| net_dev::parse(t).is_ok()),
        (softnet::SOURCE, |t| softnet::parse(t).is_ok()),
        (interrupts::SOURCE, |t| interrupts::parse(t).is_ok()),
        (snmp::SOURCE, |t| snmp::parse_known(snmp::SOURCE, t).is_ok()),
        (netstat::SOURCE, |t| {
            snmp::parse_known(netstat::SOURCE, t).is_ok()
        }),
        ("/proc/pressure/cpu", |t| pressure::parse(t).is_ok()),
        ("/proc/pressure/io", |t| pressure::parse(t).is_ok()),
        ("/proc/pressure/memory", |t| pressure::parse(t).is_ok()),
    ];
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{n} reads each; CPU of this thread, microseconds per read"
    );
    let _ = writeln!(
        out,
        "{:28} {:>8} {:>10} {:>7}",
        "source", "read", "+parse", "bytes"
    );
    let mut buf = String::new();
    for (path, parse) in sources {
        if src.read_into(path, &mut buf).is_err() {
            let _ = writeln!(out, "{path:28} unreadable here");
            continue;
        }
        let read = per_call(&src, n, || {
            let _ = src.read_into(path, &mut buf);
        });
        let both = per_call(&src, n, || {
            let _ = src.read_into(path, &mut buf);
            let _ = parse(&buf);
        });
        let _ = writeln!(out, "{path:28} {read:8.1} {both:10.1} {:7}", buf.len());
    }
    let qd = per_call(&src, n.min(500), || {
        let _ = src.qdiscs();
    });
    let _ = writeln!(out, "{:28} {qd:8.1}", "qdiscs (rtnetlink)");
    for (name, slow) in [
        ("sample, fast tier only", Duration::from_secs(3600)),
        ("sample, both tiers", Duration::ZERO),
    ] {
        let mut sampler = Sampler::new(
            ProcFs::new(),
            SamplerConfig {
                slow_interval: slow,
                ..SamplerConfig::default()
            },
        );
        let _ = sampler.sample();
        let us = per_call(&src, n.min(1000), || {
            let _ = sampler.sample();
        });
        let _ = writeln!(out, "{name:28} {us:8.1}");
    }
}
