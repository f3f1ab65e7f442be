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
        Some(WorkloadKind::Rrul) => {
            tcp(s, r);
            rrul(s, r);
        }
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

/// What a UDP part sent: `UDP 18 B payload (64 B frame), unpaced`.
fn udp_title(r: &Results) -> String {
    let payload = r.payload_bytes.unwrap_or(0);
    let frame = r
        .frame_bytes
        .map(|f| format!(" ({f} B frame)"))
        .unwrap_or_default();
    let pacing = match r.requested_pps {
        Some(p) => format!("paced at {}", fmt::value(p, Unit::PacketsPerSecond)),
        None => "unpaced".into(),
    };
    format!("UDP {payload} B payload{frame}, {pacing}")
}

/// What a TCP part ran: `TCP 1 flow`.
fn tcp_title(r: &Results) -> String {
    format!("TCP {}", crate::words::plural(r.flows.len(), "flow"))
}

/// What a request/response part ran: `Request/response 64 B, 1 flow`.
fn rr_title(r: &Results) -> String {
    format!(
        "Request/response {} B, {}",
        r.payload_bytes.unwrap_or(0),
        crate::words::plural(r.flows.len().max(1), "flow")
    )
}

fn udp(s: &mut String, r: &Results) {
    let _ = writeln!(s, "{}, {:.1} s", udp_title(r), r.duration_s);
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
    let _ = writeln!(s, "{}, {:.1} s", tcp_title(r), r.duration_s);
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
    for d in &r.directions {
        let _ = writeln!(
            s,
            "  {:<11} {:>12}  ({} received by the application, {})",
            direction_word(d.direction),
            fmt::value(d.bits_per_s, Unit::BitsPerSecond),
            fmt::count(d.rx_bytes),
            crate::words::plural(d.flows as usize, "flow")
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

/// Which way a direction's data went, in a word.
fn direction_word(d: netceil_model::TcpDirection) -> &'static str {
    match d {
        netceil_model::TcpDirection::Up => "up",
        netceil_model::TcpDirection::Down => "down",
        netceil_model::TcpDirection::Both => "both",
    }
}

/// rrul's probe: the round trip idle and loaded, and how much it grew.
fn rrul(s: &mut String, r: &Results) {
    let Some(u) = &r.rrul else { return };
    let us = |v: f64| fmt::value(v, Unit::Microseconds);
    let _ = writeln!(
        s,
        "  idle rtt    p50 {}  p90 {}  p99 {}  ({} probes, {:.1} s)",
        us(u.idle_rtt_us.p50),
        us(u.idle_rtt_us.p90),
        us(u.idle_rtt_us.p99),
        fmt::count(u.idle_rtt_us.count),
        u.idle_s
    );
    let _ = writeln!(
        s,
        "  loaded rtt  p50 {}  p90 {}  p99 {}  ({} probes, {:.1} s)",
        us(u.loaded_rtt_us.p50),
        us(u.loaded_rtt_us.p90),
        us(u.loaded_rtt_us.p99),
        fmt::count(u.loaded_rtt_us.count),
        u.loaded_s
    );
    let _ = writeln!(
        s,
        "  inflation   p50 {}  p90 {}  p99 {}",
        us(u.inflation_p50_us),
        us(u.inflation_p90_us),
        us(u.inflation_p99_us)
    );
}

fn rr(s: &mut String, r: &Results) {
    let _ = writeln!(s, "{}, {:.1} s", rr_title(r), r.duration_s);
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
    for c in run.parts.iter().filter_map(ceiling) {
        t.add_row(vec![c.name, c.figure, c.detail]);
    }
    let _ = writeln!(s, "{t}");
}

/// One workload's ceiling as the tables show it: what it is, the figure, and what qualifies it.
struct Ceiling {
    name: String,
    figure: String,
    detail: String,
}

fn ceiling(run: &Run) -> Option<Ceiling> {
    let r = run.results.as_ref()?;
    let c = match kind(run)? {
        WorkloadKind::Udp => Ceiling {
            name: format!("UDP packet rate ({} B frame)", r.frame_bytes.unwrap_or(0)),
            figure: fmt::value(r.rx_app_pps, Unit::PacketsPerSecond),
            detail: format!(
                "lost {}, unexplained {} pkt",
                fmt::opt_value(loss_pct(r), Unit::Percent),
                fmt::signed_count(r.unexplained_packets)
            ),
        },
        WorkloadKind::Tcp if !r.directions.is_empty() => Ceiling {
            name: "TCP stream".to_string(),
            figure: r
                .directions
                .iter()
                .map(|d| {
                    format!(
                        "{} {}",
                        direction_word(d.direction),
                        fmt::value(d.bits_per_s, Unit::BitsPerSecond)
                    )
                })
                .collect::<Vec<_>>()
                .join(", "),
            detail: match r
                .directions
                .iter()
                .find(|d| d.direction == netceil_model::TcpDirection::Up)
            {
                Some(up) => format!(
                    "{} retransmits (up){}",
                    fmt::opt_count(up.retransmits),
                    rcvbuf_words(r)
                ),
                None => format!("reverse: the far side sent{}", rcvbuf_words(r)),
            },
        },
        WorkloadKind::Rrul => {
            let u = r.rrul.as_ref()?;
            Ceiling {
                name: "Latency under load".to_string(),
                figure: format!(
                    "p99 +{}",
                    fmt::value(u.inflation_p99_us, Unit::Microseconds)
                ),
                detail: format!(
                    "rtt p99 {} idle, {} loaded; up {}, down {}",
                    fmt::value(u.idle_rtt_us.p99, Unit::Microseconds),
                    fmt::value(u.loaded_rtt_us.p99, Unit::Microseconds),
                    fmt::value(u.up_bits_per_s, Unit::BitsPerSecond),
                    fmt::value(u.down_bits_per_s, Unit::BitsPerSecond)
                ),
            }
        }
        WorkloadKind::Tcp => Ceiling {
            name: "TCP stream".to_string(),
            figure: fmt::value(r.rx_app_bits_per_s, Unit::BitsPerSecond),
            // The flows are in the workload's name already.
            detail: format!(
                "{} retransmits{}",
                fmt::count(r.flows.iter().filter_map(|f| f.retransmits).sum::<u64>()),
                rcvbuf_words(r)
            ),
        },
        WorkloadKind::Rr => {
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
            Ceiling {
                name: "Request/response".to_string(),
                figure: fmt::opt_value(r.transactions_per_s, Unit::PerSecond),
                detail: lat,
            }
        }
        _ => return None,
    };
    Some(c)
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

/// How the end of a run is laid out: the width to fit, how much to say, and where the rest is.
#[derive(Debug, Clone, Copy)]
pub struct Screen<'a> {
    /// Columns to fit (the terminal's, `COLUMNS`, or 80: the caller chooses).
    pub width: usize,
    /// `-q`: the essentials only, without the pointers to the rest.
    pub quiet: bool,
    /// The id the run was stored under, for the pointers to the rest; `None` when not stored.
    pub stored: Option<&'a str>,
}

/// Lines a brief may take so that it and the line saying where it was stored fit one 80×24
/// screen; past it, each verdict is cut to its first clause.
const SCREEN_LINES: usize = 23;

/// A run on one screen: what ran, the ceiling per workload, the verdict in one sentence per
/// workload, the run's own notes, and where the rest is (`--verbose`, `show`, the report).
pub fn brief(run: &Run, screen: &Screen) -> String {
    let full = brief_with(run, screen, false);
    if full.lines().count() <= SCREEN_LINES {
        return full;
    }
    brief_with(run, screen, true)
}

fn brief_with(run: &Run, screen: &Screen, short: bool) -> String {
    let width = screen.width.max(40);
    let parts: Vec<&Run> = if run.parts.is_empty() {
        vec![run]
    } else {
        run.parts.iter().collect()
    };
    let mut s = String::new();
    ran(&mut s, &parts, screen, width);
    let verdicts: Vec<(String, &netceil_model::Finding)> = parts
        .iter()
        .filter_map(|p| Some((short_kind(p), p.findings.first()?)))
        .collect();
    let sentence = |f: &netceil_model::Finding| {
        let text = if screen.quiet {
            headline(&f.summary)
        } else if short {
            first_clause(&f.summary)
        } else {
            f.summary.clone()
        };
        format!("{text} ({})", f.confidence_text())
    };
    match verdicts.as_slice() {
        [] => s.push_str("verdict: no findings\n"),
        [(_, f)] if parts.len() == 1 => {
            s.push_str(&wrap_hanging(
                &format!("verdict: {}", sentence(f)),
                width,
                9,
            ));
        }
        many => {
            s.push_str("verdict, one per workload:\n");
            for (k, f) in many {
                s.push_str(&wrap_hanging(
                    &format!("  {k:<4} {}", sentence(f)),
                    width,
                    7,
                ));
            }
        }
    }
    for p in &parts {
        if p.results.as_ref().is_some_and(|r| r.generator_limited) {
            let line = format!(
                "! {}: the generator was the limit: it could not send at the requested rate",
                short_kind(p)
            );
            s.push_str(&wrap_hanging(&line, width, 2));
        }
    }
    for n in &run.notes {
        s.push_str(&wrap_hanging(&format!("note: {n}"), width, 6));
    }
    if !screen.quiet {
        pointers(&mut s, run, screen, width);
    }
    s
}

/// What ran, and its ceiling per workload: a table (one line each with `-q`).
/// Nothing for a run that measured no workload of its own (an imported log, a watch).
fn ran(s: &mut String, parts: &[&Run], screen: &Screen, width: usize) {
    let rows: Vec<(String, Ceiling)> = parts
        .iter()
        .filter_map(|p| Some((what(p)?, ceiling(p)?)))
        .collect();
    if rows.is_empty() {
        return;
    }
    if screen.quiet {
        for (w, c) in &rows {
            let line = format!("{w}: {}, {}", c.figure, c.detail);
            s.push_str(&wrap_hanging(&line, width, 2));
        }
        return;
    }
    let durations: Vec<f64> = parts
        .iter()
        .filter_map(|p| p.results.as_ref().map(|r| r.duration_s))
        .collect();
    let longest = durations.iter().copied().fold(0.0, f64::max);
    let shortest = durations.iter().copied().fold(f64::INFINITY, f64::min);
    let seconds = fmt::value(longest, Unit::Seconds);
    // Each run as long within a tenth of a second (the runs' own ends differ that much).
    let each = if longest - shortest < 0.1 {
        "each"
    } else {
        "at most"
    };
    let place = crate::words::place_of(parts[0]);
    let head = match parts.len() {
        1 => format!("ran 1 workload for {seconds} {place}"),
        n => format!("ran {n} workloads, {seconds} {each}, {place}"),
    };
    s.push_str(&wrap_hanging(&head, width, 2));
    use comfy_table::{presets::NOTHING, ContentArrangement, Table};
    let mut t = Table::new();
    t.load_style(NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(width.min(u16::MAX as usize) as u16)
        .set_header(vec!["workload", "ceiling", "detail"]);
    for (w, c) in rows {
        t.add_row(vec![w, c.figure, c.detail]);
    }
    for line in t.lines() {
        let _ = writeln!(s, "{}", line.trim_end());
    }
}

/// Where the rest of the run is: every figure and finding, the ledger, the charts.
fn pointers(s: &mut String, run: &Run, screen: &Screen, width: usize) {
    let more = run.findings.len().saturating_sub(if run.parts.is_empty() {
        1
    } else {
        run.parts.iter().filter(|p| !p.findings.is_empty()).count()
    });
    let findings = match more {
        0 => "the evidence and advice".to_string(),
        1 => "1 more finding, the evidence and advice".to_string(),
        n => format!("{n} more findings, the evidence and advice"),
    };
    let line = match screen.stored {
        Some(id) => format!(
            "more: netceil show {id} --verbose ({findings}), netceil show {id} --explain \
             (the ledger), netceil report {id} (charts)"
        ),
        None => format!("more: --verbose shows {findings} (this run was not stored)"),
    };
    s.push_str(&wrap_hanging(&line, width, 6));
}

/// A workload in a few words: `UDP 18 B payload (64 B frame), unpaced`.
fn what(run: &Run) -> Option<String> {
    let r = run.results.as_ref()?;
    Some(match kind(run)? {
        WorkloadKind::Udp => udp_title(r),
        WorkloadKind::Tcp => tcp_title(r),
        WorkloadKind::Rr => rr_title(r),
        WorkloadKind::Rrul => format!(
            "RRUL {} each way",
            crate::words::plural(r.directions.first().map_or(0, |d| d.flows) as usize, "flow")
        ),
        _ => return None,
    })
}

/// A workload's kind in one short word, for the verdict's lines.
fn short_kind(run: &Run) -> String {
    match kind(run) {
        Some(WorkloadKind::Udp) => "UDP",
        Some(WorkloadKind::Tcp) => "TCP",
        Some(WorkloadKind::Rr) => "RR",
        Some(WorkloadKind::Rrul) => "RRUL",
        _ => "run",
    }
    .to_string()
}

/// A finding's sentence up to its first `; `, ended with `…` when cut.
fn first_clause(summary: &str) -> String {
    match summary.split_once("; ") {
        Some((head, _)) => format!("{head} …"),
        None => summary.to_string(),
    }
}

/// A finding's sentence up to its first `: ` (what bound the run, without the figures that
/// show it), for `-q`.
fn headline(summary: &str) -> String {
    match summary.split_once(": ") {
        Some((head, _)) => head.to_string(),
        None => first_clause(summary),
    }
}

/// One paragraph wrapped to `width`, its lines after the first indented by `indent`.
fn wrap_hanging(text: &str, width: usize, indent: usize) -> String {
    let pad = " ".repeat(indent);
    // Names such as `netceil-udp-tx0` and `--rcvbuf` are kept whole: no break at a hyphen.
    let opts = textwrap::Options::new(width.max(indent + 20))
        .subsequent_indent(&pad)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .break_words(false);
    let mut s = String::new();
    for line in textwrap::wrap(text, opts) {
        let _ = writeln!(s, "{line}");
    }
    s
}

/// Text wrapped to `width` line by line: a long line's continuation is indented under its
/// value (after a label followed by two spaces, as `  kernel      lo rx …`) or two columns
/// deeper than the line. Table lines (box drawing) are left as they are.
pub fn wrap_lines(text: &str, width: usize) -> String {
    let mut s = String::new();
    for line in text.lines() {
        let is_table = line.contains(['│', '┌', '└', '╞', '├', '┆']);
        if is_table || textwrap::core::display_width(line) <= width {
            let _ = writeln!(s, "{line}");
            continue;
        }
        let lead = line.len() - line.trim_start().len();
        let indent = line[lead..]
            .find("  ")
            .map(|i| lead + i)
            .and_then(|i| {
                let value = i + line[i..].len() - line[i..].trim_start().len();
                (value - lead <= 16).then_some(value)
            })
            .unwrap_or(lead + 2);
        s.push_str(&wrap_hanging(line, width, indent));
    }
    s
}

/// Everything shown about a run (`--verbose`): the whole summary and every finding with its
/// evidence and advice, wrapped to `width`.
pub fn full(run: &Run, width: usize) -> String {
    wrap_lines(&format!("{}{}", summary(run), verdict(run)), width.max(40))
}

/// ", receive buffer fixed at 1024 KiB" when this side's TCP receiver fixed it (it changes what
/// is measured), else nothing.
fn rcvbuf_words(r: &netceil_model::Results) -> String {
    r.tcp_rcvbuf_bytes
        .map(|b| format!(", receive buffer fixed at {} KiB", b / 1024))
        .unwrap_or_default()
}
