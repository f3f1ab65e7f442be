//! A run as the terminal shows it at the end of `netceil run` (and `show`, `analyze`, a
//! lab's runs): the summary of what was measured, the verdict, and what was not measured.

use crate::summary::loss_pct;
use netceil_model::{fmt, FarEnd, Results, Run, TcpPacing, Unit, WorkloadKind};
use std::fmt::Write;

/// The whole summary of a run (a suite shows each part, then one table of the ceilings).
pub fn summary(run: &Run) -> String {
    let mut s = String::new();
    if run.parts.is_empty() {
        part(&mut s, run);
    } else {
        for p in &run.parts {
            part(&mut s, p);
            s.push('\n');
        }
        suite_table(&mut s, run);
    }
    for n in &run.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// The analyzer's findings, most confident first; says so when there are none.
pub fn verdict(run: &Run) -> String {
    let mut s = String::new();
    if run.findings.is_empty() {
        let _ = writeln!(s, "verdict: no findings");
        return s;
    }
    let _ = writeln!(s, "verdict:");
    for f in &run.findings {
        let _ = write!(s, "  {}", f.to_string().replace("\n  ", "\n    "));
    }
    s
}

/// What could not be measured, one line per reason (the same reason often covers dozens of
/// per-CPU or per-protocol metrics); the full list is in the run.
pub fn missing(series: &netceil_model::Series) -> String {
    // Per-CPU variants of one reason ("cpu0: …", "cpu1: …") read as one: strip the prefix.
    let mut by_reason: Vec<(String, Vec<&str>)> = Vec::new();
    for m in &series.missing {
        let reason = match m.reason.split_once(": ") {
            Some((head, rest))
                if head.starts_with("cpu") && head[3..].bytes().all(|b| b.is_ascii_digit()) =>
            {
                rest.to_string()
            }
            _ => m.reason.clone(),
        };
        match by_reason.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, names)) => names.push(&m.metric),
            None => by_reason.push((reason, vec![&m.metric])),
        }
    }
    let mut s = String::new();
    for (reason, names) in by_reason {
        let shown = names.iter().take(3).copied().collect::<Vec<_>>().join(", ");
        let more = if names.len() > 3 {
            format!(" and {} more", names.len() - 3)
        } else {
            String::new()
        };
        let _ = writeln!(s, "not measured ({shown}{more}): {reason}");
    }
    s
}

fn kind(run: &Run) -> Option<WorkloadKind> {
    run.workload.as_ref().map(|w| w.kind)
}

fn part(s: &mut String, run: &Run) {
    let Some(r) = &run.results else {
        let _ = writeln!(s, "{}: no results", run.run_id);
        return;
    };
    match kind(run) {
        Some(WorkloadKind::Udp) => udp(s, r),
        Some(WorkloadKind::Tcp) => tcp(s, r),
        Some(WorkloadKind::Rr) => rr(s, r),
        _ => {}
    }
    if let Some(f) = &r.far {
        far(s, f);
    }
    for n in &r.notes {
        let _ = writeln!(s, "  note: {n}");
    }
}

/// What the `netceil serve` at the far end counted: who it was, what arrived there and where
/// the rest was dropped, and its cores, busiest first.
fn far(s: &mut String, f: &FarEnd) {
    let _ = writeln!(
        s,
        "  far end     {} at {} (netceil {}), {:.1} s, ended by {}",
        f.host, f.address, f.netceil_version, f.duration_s, f.ended_by
    );
    let a = &f.app;
    let k = &f.kernel;
    let opt = |v: Option<u64>| v.map_or_else(|| "-".to_string(), fmt::count);
    let mut there = Vec::new();
    if a.udp_packets > 0 || a.udp_lost > 0 {
        there.push(format!(
            "received {} datagrams, lost {}",
            fmt::count(a.udp_packets),
            fmt::count(a.udp_lost)
        ));
    }
    if a.tcp_connections > 0 {
        there.push(format!(
            "{} TCP connections, {} received",
            fmt::count(a.tcp_connections),
            fmt::value(a.tcp_stream_bytes as f64, Unit::Bytes)
        ));
    }
    there.push(format!(
        "drops: socket {}, backlog {}, {} rx {}",
        opt(a.udp_socket_drops),
        opt(k.softnet_dropped),
        k.iface.as_deref().unwrap_or("interface"),
        opt(k.iface_rx_dropped)
    ));
    there.push(format!(
        "strays {} (unanswered)",
        fmt::count(a.stray_packets + a.tcp_refused)
    ));
    let _ = writeln!(s, "  there       {}", there.join("; "));
    let mut cores: Vec<_> = f.cpu.iter().collect();
    cores.sort_by(|x, y| y.busy_pct.total_cmp(&x.busy_pct));
    let shown: Vec<String> = cores
        .iter()
        .take(4)
        .map(|c| {
            format!(
                "cpu{} {:.0} % busy ({:.0} % softirq)",
                c.cpu, c.busy_pct, c.softirq_pct
            )
        })
        .collect();
    if !shown.is_empty() {
        let more = if cores.len() > shown.len() {
            format!(" and {} more", cores.len() - shown.len())
        } else {
            String::new()
        };
        let _ = writeln!(s, "  there CPU   {}{more}", shown.join(", "));
    }
}

fn udp(s: &mut String, r: &Results) {
    let payload = r.payload_bytes.unwrap_or(0);
    let frame = r
        .frame_bytes
        .map(|f| format!(" ({f} B frame)"))
        .unwrap_or_default();
    let pacing = match r.requested_pps {
        Some(p) => format!("paced at {}", fmt::value(p, Unit::PacketsPerSecond)),
        None => "unpaced".into(),
    };
    let _ = writeln!(
        s,
        "UDP {payload} B payload{frame}, {pacing}, {:.1} s",
        r.duration_s
    );
    let _ = writeln!(
        s,
        "  sent        {:>14} pkt  {:>10}  {:>12} payload",
        fmt::count(r.tx_packets),
        fmt::value(r.tx_pps, Unit::PacketsPerSecond),
        fmt::value(r.tx_bits_per_s, Unit::BitsPerSecond)
    );
    let _ = writeln!(
        s,
        "  received    {:>14} pkt  {:>10}  {:>12} payload (application)",
        fmt::count(r.rx_app_packets),
        fmt::value(r.rx_app_pps, Unit::PacketsPerSecond),
        fmt::value(r.rx_app_bits_per_s, Unit::BitsPerSecond)
    );
    let k = &r.kernel;
    let mut kernel = Vec::new();
    if let (Some(p), Some(i)) = (r.rx_kernel_packets, &k.iface) {
        kernel.push(format!("{i} rx {} pkt (all traffic on {i})", fmt::count(p)));
    }
    if let Some(d) = k.socket_drops {
        kernel.push(format!("socket drops {} (SO_RXQ_OVFL)", fmt::count(d)));
    }
    if let Some(d) = k.udp_rcvbuf_errors {
        kernel.push(format!("Udp RcvbufErrors +{}", fmt::count(d)));
    }
    if let Some(d) = k.backlog_drops {
        kernel.push(format!("softnet backlog drops +{}", fmt::count(d)));
    }
    if !kernel.is_empty() {
        let _ = writeln!(s, "  kernel      {}", kernel.join("; "));
    }
    let _ = writeln!(
        s,
        "  accounting  lost {} ({})  reordered {}  duplicate {}  in flight {}  unexplained {}",
        fmt::count(r.lost_packets),
        fmt::opt_value(loss_pct(r), Unit::Percent),
        fmt::count(r.reordered_packets),
        fmt::count(r.duplicate_packets),
        fmt::count(r.in_flight_packets),
        r.unexplained_packets
    );
    generator(s, r);
}

fn generator(s: &mut String, r: &Results) {
    let g = &r.generator;
    let mut line = format!(
        "  generator   CPU {:.0} % of a core (working {:.2} s, spinning {:.2} s)",
        g.cpu_pct, g.work_cpu_s, g.spin_cpu_s
    );
    if let Some(ratio) = g.achieved_ratio {
        let _ = write!(
            line,
            ", achieved {:.2} % of the requested rate",
            ratio * 100.0
        );
    }
    if let (Some(m), Some(p)) = (g.send_gap_error_median_us, g.send_gap_error_p99_us) {
        let _ = write!(line, ", send gap error median {m:.2} µs p99 {p:.2} µs");
    }
    let _ = writeln!(s, "{line}");
    if r.generator_limited {
        let _ = writeln!(
            s,
            "  ! the generator was the limit: it could not send at the requested rate, so these figures say nothing about the receiver's ceiling"
        );
    }
}

fn tcp(s: &mut String, r: &Results) {
    let _ = writeln!(
        s,
        "TCP {} flow{}, {:.1} s",
        r.flows.len(),
        if r.flows.len() == 1 { "" } else { "s" },
        r.duration_s
    );
    let _ = writeln!(
        s,
        "  goodput     {:>12}  ({} received by the application)",
        fmt::value(r.rx_app_bits_per_s, Unit::BitsPerSecond),
        fmt::count(r.rx_app_bytes)
    );
    let retrans: u64 = r.flows.iter().filter_map(|f| f.retransmits).sum();
    if !r.flows.is_empty() {
        let rates: Vec<f64> = r.flows.iter().map(|f| f.bits_per_s).collect();
        let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let max = rates.iter().copied().fold(0.0, f64::max);
        let _ = writeln!(
            s,
            "  per flow    min {}  max {}  retransmits {}",
            fmt::value(min, Unit::BitsPerSecond),
            fmt::value(max, Unit::BitsPerSecond),
            fmt::count(retrans)
        );
    }
    match r.tcp_pacing {
        Some(TcpPacing::Kernel) => {
            let _ = writeln!(s, "  pacing      by the kernel (SO_MAX_PACING_RATE)");
        }
        Some(TcpPacing::Application) => {
            let _ = writeln!(
                s,
                "  pacing      by netceil, on an absolute schedule per flow"
            );
        }
        Some(TcpPacing::None) | None => {}
    }
    generator(s, r);
}

fn rr(s: &mut String, r: &Results) {
    let _ = writeln!(
        s,
        "Request/response {} B, {} flow{}, {:.1} s",
        r.payload_bytes.unwrap_or(0),
        r.flows.len().max(1),
        if r.flows.len() > 1 { "s" } else { "" },
        r.duration_s
    );
    if let Some(t) = r.transactions_per_s {
        let _ = writeln!(s, "  rate        {} transactions/s", fmt::number(t));
    }
    if let Some(l) = &r.latency_us {
        let _ = writeln!(
            s,
            "  latency     {}  ({} samples, from intended send time)",
            percentiles(l),
            fmt::count(l.count)
        );
    }
    if let Some(l) = &r.service_us {
        let _ = writeln!(
            s,
            "  service     {}  (from the actual send, as sockperf counts)",
            percentiles(l)
        );
    }
    if r.lost_packets > 0 {
        let _ = writeln!(
            s,
            "  lost        {} transactions timed out",
            fmt::count(r.lost_packets)
        );
    }
    if r.generator_limited {
        let _ = writeln!(
            s,
            "  ! the generator was the limit: it could not reach the requested rate"
        );
    }
}

fn suite_table(s: &mut String, run: &Run) {
    use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec!["ceiling", "figure", "detail"]);
    for p in &run.parts {
        let Some(r) = &p.results else { continue };
        match kind(p) {
            Some(WorkloadKind::Udp) => {
                t.add_row(vec![
                    format!("UDP packet rate ({} B frame)", r.frame_bytes.unwrap_or(0)),
                    fmt::value(r.rx_app_pps, Unit::PacketsPerSecond),
                    format!(
                        "lost {}, unexplained {}",
                        fmt::opt_value(loss_pct(r), Unit::Percent),
                        r.unexplained_packets
                    ),
                ]);
            }
            Some(WorkloadKind::Tcp) => {
                t.add_row(vec![
                    "TCP stream".to_string(),
                    fmt::value(r.rx_app_bits_per_s, Unit::BitsPerSecond),
                    format!(
                        "{} flow(s), {} retransmits",
                        r.flows.len(),
                        r.flows.iter().filter_map(|f| f.retransmits).sum::<u64>()
                    ),
                ]);
            }
            Some(WorkloadKind::Rr) => {
                let mut lat = r
                    .latency_us
                    .as_ref()
                    .map(|l| {
                        format!(
                            "p50 {}  p99 {}",
                            fmt::value(l.p50, Unit::Microseconds),
                            fmt::value(l.p99, Unit::Microseconds)
                        )
                    })
                    .unwrap_or_default();
                if let Some(k) = r.closed_loop_in_flight {
                    let sep = if lat.is_empty() { "" } else { ", " };
                    let _ = write!(lat, "{sep}closed loop ({k} in flight)");
                }
                t.add_row(vec![
                    "Request/response".to_string(),
                    format!("{} tps", fmt::number(r.transactions_per_s.unwrap_or(0.0))),
                    lat,
                ]);
            }
            _ => {}
        }
    }
    let _ = writeln!(s, "{t}");
}

/// A latency summary's percentiles in one line: `p50 9.50 µs  p90 …  max …`.
fn percentiles(l: &netceil_model::LatencySummary) -> String {
    let us = |v: f64| fmt::value(v, Unit::Microseconds);
    format!(
        "p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
        us(l.p50),
        us(l.p90),
        us(l.p99),
        us(l.p999),
        us(l.max)
    )
}
