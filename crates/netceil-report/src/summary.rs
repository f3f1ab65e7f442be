//! The facts every report shows, as plain (label, value) rows, so that markdown, HTML and the
//! terminal say the same thing in the same words and only the markup differs.

use netceil_model::{
    names as n, time, Evidence, LockStat, Results, Run, RunSource, Unit, WorkloadKind,
};

use crate::view;
use netceil_model::fmt;

/// One labelled figure, already formatted.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub label: String,
    pub value: String,
}

fn row(label: impl Into<String>, value: impl Into<String>) -> Row {
    Row {
        label: label.into(),
        value: value.into(),
    }
}

/// `udp`, `tcp`, `suite`… or `-`.
pub fn kind(run: &Run) -> &'static str {
    match run.workload.as_ref().map(|w| w.kind) {
        Some(WorkloadKind::Udp) => "udp",
        Some(WorkloadKind::Tcp) => "tcp",
        Some(WorkloadKind::Rr) => "rr",
        Some(WorkloadKind::Rrul) => "rrul",
        Some(WorkloadKind::Suite) => "suite",
        Some(WorkloadKind::External) => "watched",
        Some(WorkloadKind::Search) => "search",
        Some(WorkloadKind::Sweep) => "sweep",
        None => fmt::MISSING,
    }
}

/// The workload kind, or for a run without one how it came to be: `watched`,
/// `imported freebsd-vmstat`.
pub fn kind_or_source(run: &Run) -> String {
    match (&run.workload, &run.source) {
        (Some(_), _) => kind(run).to_string(),
        (None, RunSource::Live) => "live".into(),
        (None, RunSource::Watched { .. }) => "watched".into(),
        (None, RunSource::Imported { format, .. }) => format!("imported {format}"),
    }
}

/// How the run came to be, in words.
pub fn source(run: &Run) -> String {
    match &run.source {
        RunSource::Live => "live (netceil generated the load)".into(),
        RunSource::Watched { command: Some(c) } => format!("watched: {}", c.join(" ")),
        RunSource::Watched { command: None } => "watched".into(),
        RunSource::Imported { format, file } => format!("imported from {file} ({format})"),
    }
}

/// `key=value, key=value`, or `-`.
pub fn labels(run: &Run) -> String {
    if run.meta.labels.is_empty() {
        return fmt::MISSING.into();
    }
    run.meta
        .labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The start time in UTC; `None` when unknown (an imported log without timestamps).
pub fn started_utc(run: &Run) -> Option<String> {
    let t = run.meta.started_unix_s;
    (t > 0.0 && t.is_finite()).then(|| time::format_utc(t))
}

/// The start time in UTC, or `-`.
pub fn started(run: &Run) -> String {
    started_utc(run).unwrap_or_else(|| fmt::MISSING.into())
}

/// Identity and circumstances of the run.
pub fn overview(run: &Run) -> Vec<Row> {
    let meta = &run.meta;
    let mut rows = vec![
        row("run", run.run_id.clone()),
        row("workload", kind(run)),
        row("source", source(run)),
        row("started", started(run)),
        row(
            "duration",
            view::duration_s(run).map_or(fmt::MISSING.into(), |d| fmt::value(d, Unit::Seconds)),
        ),
        row(
            "complete",
            if meta.complete {
                "yes"
            } else {
                "no (cut short or still recording)"
            },
        ),
        row("labels", labels(run)),
    ];
    if !run.series.is_empty() {
        rows.push(row(
            "series",
            format!(
                "{} intervals of {} ({} metrics)",
                run.series.len(),
                fmt::value(run.series.interval_s, Unit::Seconds),
                run.series.metrics.len()
            ),
        ));
    }
    rows
}

/// The machine and netceil itself, including what observing cost.
pub fn environment(run: &Run) -> Vec<Row> {
    let meta = &run.meta;
    let host = &meta.host;
    let text = |v: &Option<String>| v.clone().unwrap_or_else(|| fmt::MISSING.into());
    let mut rows = vec![
        row("host", text(&host.hostname)),
        row("os", text(&host.os)),
        row("kernel", text(&host.kernel)),
        row(
            "cpus",
            host.cpus.map_or(fmt::MISSING.into(), |c| c.to_string()),
        ),
        row(
            "netceil version",
            if meta.netceil_version.is_empty() {
                fmt::MISSING.to_string()
            } else {
                meta.netceil_version.clone()
            },
        ),
    ];
    let sampler = match (meta.sampler_cpu_s, meta.sampler_cpu_pct) {
        (Some(s), Some(p)) => format!(
            "{} CPU ({} of one core)",
            fmt::value(s, Unit::Seconds),
            fmt::value(p, Unit::Percent)
        ),
        (Some(s), None) => format!("{} CPU", fmt::value(s, Unit::Seconds)),
        (None, Some(p)) => format!("{} of one core", fmt::value(p, Unit::Percent)),
        (None, None) => fmt::MISSING.into(),
    };
    rows.push(row("sampler cost", sampler));
    let a = &meta.annotations;
    let annotated = [
        (
            "throughput (annotated)",
            a.throughput_bits_per_s,
            Unit::BitsPerSecond,
        ),
        ("link (annotated)", a.link_bits_per_s, Unit::BitsPerSecond),
        (
            "bus rate (annotated)",
            a.bus_bits_per_s,
            Unit::BitsPerSecond,
        ),
        ("log interval (annotated)", a.interval_s, Unit::Seconds),
    ];
    for (label, v, unit) in annotated {
        if let Some(v) = v {
            rows.push(row(label, fmt::value(v, unit)));
        }
    }
    if let Some(bus) = &a.bus {
        rows.push(row("bus (annotated)", bus.clone()));
    }
    rows
}

/// The workload's parameters as given, one row each.
pub fn workload_params(run: &Run) -> Vec<Row> {
    let Some(w) = &run.workload else {
        return Vec::new();
    };
    w.params
        .to_map()
        .iter()
        .map(|(k, v)| {
            let value = match v {
                serde_json::Value::Null => fmt::MISSING.to_string(),
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Array(items) => items
                    .iter()
                    .map(|i| match i {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
                other => other.to_string(),
            };
            row(k.clone(), value)
        })
        .collect()
}

/// Headline workload figures.
pub fn results(r: &Results) -> Vec<Row> {
    let counted = counts_packets(r);
    let amount = |packets: u64, bytes: u64, bits_per_s: f64, pps: f64| {
        if counted {
            format!(
                "{} packets, {} ({}, {})",
                fmt::count(packets),
                fmt::value(bytes as f64, Unit::Bytes),
                fmt::value(bits_per_s, Unit::BitsPerSecond),
                fmt::value(pps, Unit::PacketsPerSecond)
            )
        } else {
            format!(
                "{} ({})",
                fmt::value(bytes as f64, Unit::Bytes),
                fmt::value(bits_per_s, Unit::BitsPerSecond)
            )
        }
    };
    let mut rows = vec![
        row("duration", fmt::value(r.duration_s, Unit::Seconds)),
        row(
            "sent",
            amount(r.tx_packets, r.tx_bytes, r.tx_bits_per_s, r.tx_pps),
        ),
        row(
            "received by the application",
            amount(
                r.rx_app_packets,
                r.rx_app_bytes,
                r.rx_app_bits_per_s,
                r.rx_app_pps,
            ),
        ),
    ];
    if let Some(p) = r.payload_bytes {
        let frame = r
            .frame_bytes
            .map(|f| format!(" (frame {f} B)"))
            .unwrap_or_default();
        rows.push(row("payload", format!("{p} B{frame}")));
    }
    if let Some(req) = r.requested_pps {
        rows.push(row(
            "requested rate",
            fmt::value(req, Unit::PacketsPerSecond),
        ));
    }
    if counted {
        rows.push(row("lost", loss_text(r)));
    }
    if let Some(tps) = r.transactions_per_s {
        rows.push(row("transactions", fmt::value(tps, Unit::PerSecond)));
    }
    if let Some(l) = &r.latency_us {
        rows.push(row(
            "latency",
            format!(
                "p50 {}, p99 {}, max {}",
                fmt::value(l.p50, Unit::Microseconds),
                fmt::value(l.p99, Unit::Microseconds),
                fmt::value(l.max, Unit::Microseconds)
            ),
        ));
    }
    rows.push(row(
        "generator limited",
        if r.generator_limited { "yes" } else { "no" },
    ));
    rows
}

/// Whether the workload counted packets one by one (UDP, request/response). A TCP stream
/// counts bytes only and leaves its packet fields at 0, which must not read as "nothing".
pub fn counts_packets(r: &Results) -> bool {
    r.tx_packets > 0 || r.rx_app_packets > 0 || r.lost_packets > 0
}

/// `0 of 519,552 (0 %)`.
pub fn loss_text(r: &Results) -> String {
    match loss_pct(r) {
        Some(p) => format!(
            "{} of {} ({})",
            fmt::count(r.lost_packets),
            fmt::count(r.tx_packets),
            fmt::value(p, Unit::Percent)
        ),
        None => fmt::count(r.lost_packets),
    }
}

/// Lost packets as a percentage of those sent.
pub fn loss_pct(r: &Results) -> Option<f64> {
    (r.tx_packets > 0).then(|| r.lost_packets as f64 / r.tx_packets as f64 * 100.0)
}

/// The sender's cost and accuracy.
pub fn generator(r: &Results) -> Vec<Row> {
    let g = &r.generator;
    let mut rows = vec![
        row(
            "pacing",
            g.pacing.map_or(fmt::MISSING.into(), |p| {
                format!("{p:?}").to_ascii_lowercase()
            }),
        ),
        row(
            "sender CPU",
            format!(
                "{} ({} of one core; {} busy-waiting)",
                fmt::value(g.cpu_s, Unit::Seconds),
                fmt::value(g.cpu_pct, Unit::Percent),
                fmt::value(g.spin_cpu_s, Unit::Seconds)
            ),
        ),
    ];
    if let Some(a) = g.achieved_ratio {
        rows.push(row("achieved / requested", fmt::value(a, Unit::Ratio)));
    }
    if let (Some(m), Some(p)) = (g.send_gap_error_median_us, g.send_gap_error_p99_us) {
        rows.push(row(
            "send-time error",
            format!(
                "median {}, p99 {}",
                fmt::value(m, Unit::Microseconds),
                fmt::value(p, Unit::Microseconds)
            ),
        ));
    }
    rows.push(row("late sends", fmt::count(g.late_sends)));
    rows.push(row("send errors", fmt::count(g.send_errors)));
    rows
}

/// One bar of the kernel-vs-application delivery picture.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryStep {
    pub label: String,
    /// Exact count; `None` when not measured.
    pub packets: Option<i64>,
    /// Whether the counter covers the whole machine rather than this workload only.
    pub machine_wide: bool,
}

/// Where packets were counted, from the sender to the application, and where they were lost.
pub fn delivery(r: &Results) -> Vec<DeliveryStep> {
    let k = &r.kernel;
    let step = |label: String, packets: Option<u64>, machine_wide| DeliveryStep {
        label,
        packets: packets.map(|p| i64::try_from(p).unwrap_or(i64::MAX)),
        machine_wide,
    };
    let iface = k
        .iface
        .as_deref()
        .map(|i| format!("kernel received ({i} RX counter)"))
        .unwrap_or_else(|| "kernel received (interface RX counter)".into());
    vec![
        step("sent by the generator".into(), Some(r.tx_packets), false),
        step(iface, r.rx_kernel_packets.or(k.iface_rx_packets), true),
        step(
            "read by the application".into(),
            Some(r.rx_app_packets),
            false,
        ),
        step(
            "dropped at our sockets (buffer full)".into(),
            k.socket_drops,
            false,
        ),
        step(
            "UDP receive-buffer errors".into(),
            k.udp_rcvbuf_errors,
            true,
        ),
        step("UDP InErrors".into(), k.udp_in_errors, true),
        step("softnet backlog drops".into(), k.backlog_drops, true),
        step("UDP send-buffer errors".into(), k.udp_sndbuf_errors, true),
        step(
            "lost (by sequence number)".into(),
            Some(r.lost_packets),
            false,
        ),
        step("in flight at stop".into(), Some(r.in_flight_packets), false),
        DeliveryStep {
            label: "unexplained".into(),
            packets: Some(r.unexplained_packets),
            machine_wide: false,
        },
    ]
}

/// The per-flow table, one row of formatted cells per flow: flow, bytes, throughput,
/// retransmits, smoothed RTT (the column titles are the caller's).
pub fn flows(r: &Results) -> Vec<Vec<String>> {
    r.flows
        .iter()
        .map(|f| {
            vec![
                f.flow.to_string(),
                fmt::value(f.bytes as f64, Unit::Bytes),
                fmt::value(f.bits_per_s, Unit::BitsPerSecond),
                fmt::opt_count(f.retransmits),
                fmt::opt_value(f.rtt_us, Unit::Microseconds),
            ]
        })
        .collect()
}

/// When a piece of evidence was seen, as `, 12–30 s` to follow its metric's name, or empty
/// when it covers the whole run.
pub fn evidence_window(e: &Evidence) -> String {
    e.window_s
        .map(|(a, b)| format!(", {}–{} s", fmt::number(a), fmt::number(b)))
        .unwrap_or_default()
}

/// One row of the lock table, with wait related to wall time and CPU count.
#[derive(Debug, Clone, PartialEq)]
pub struct LockRow<'a> {
    pub lock: &'a LockStat,
    /// Average number of threads waiting at any moment: wait_total / duration.
    pub waiters: Option<f64>,
    /// Share of all CPU time spent waiting on it: wait_total / (duration × cpus), %.
    pub cpu_share_pct: Option<f64>,
    /// Mean wait per acquisition, seconds.
    pub mean_wait_s: Option<f64>,
}

/// The lock table ranked by total wait, the order SEEDS §4 asks for.
pub fn locks(run: &Run) -> Vec<LockRow<'_>> {
    let duration = view::duration_s(run).filter(|d| *d > 0.0);
    let cpus = run.meta.host.cpus.filter(|c| *c > 0).map(f64::from);
    let mut rows: Vec<LockRow<'_>> = run
        .locks
        .iter()
        .map(|lock| LockRow {
            lock,
            waiters: duration.map(|d| lock.wait_total_s / d),
            cpu_share_pct: duration
                .zip(cpus)
                .map(|(d, c)| lock.wait_total_s / (d * c) * 100.0),
            mean_wait_s: (lock.count > 0).then(|| lock.wait_total_s / lock.count as f64),
        })
        .collect();
    rows.sort_by(|a, b| b.lock.wait_total_s.total_cmp(&a.lock.wait_total_s));
    rows
}

/// Mean and maximum of the metrics a reader looks at first, over the whole run.
pub fn key_metrics(run: &Run) -> Vec<(String, Unit, Option<f64>, Option<f64>)> {
    let s = &run.series;
    let all: Vec<usize> = (0..s.len()).collect();
    let mut picked = Vec::new();
    if let Some(m) = view::throughput_metric(s) {
        picked.push(m);
    }
    if let Some(m) = view::packet_rate_metric(s) {
        picked.push(m);
    }
    for name in [
        n::CS_PER_S,
        n::INTR_PER_S,
        n::SOFTIRQ_NET_RX_PER_S,
        n::CPU_BUSY_PCT,
        n::CPU_SOFTIRQ_PCT,
    ] {
        if let Some(m) = s.total(name) {
            picked.push(m);
        }
    }
    let mut out: Vec<_> = picked
        .into_iter()
        .map(|m| {
            let max = all
                .iter()
                .filter_map(|&r| m.values.get(r).copied().flatten())
                .fold(None, |acc: Option<f64>, v| {
                    Some(acc.map_or(v, |a| a.max(v)))
                });
            (m.id.to_string(), m.unit, view::mean_over(m, &all), max)
        })
        .collect();
    // The hottest CPU: one saturated core hides in the machine-wide average.
    let hottest = view::per_cpu(s, n::CPU_BUSY_PCT)
        .into_iter()
        .filter_map(|(_, m)| view::mean_over(m, &all).map(|mean| (m, mean)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((m, mean)) = hottest {
        let max = m.values.iter().flatten().copied().fold(f64::NAN, f64::max);
        out.push((
            format!("{} (hottest)", m.id),
            m.unit,
            Some(mean),
            max.is_finite().then_some(max),
        ));
    }
    out
}

/// Everything the reader should know about how the figures were obtained.
pub fn notes(run: &Run) -> Vec<String> {
    let mut out: Vec<String> = run.notes.clone();
    if let Some(r) = &run.results {
        out.extend(r.notes.iter().cloned());
    }
    out.extend(run.series.missing.iter().map(|m| {
        let at = run
            .series
            .t_s
            .get(m.from_row)
            .map(|t| format!(" (from {})", fmt::value(*t, Unit::Seconds)))
            .unwrap_or_default();
        format!("{} not measured: {}{at}", m.metric, m.reason)
    }));
    out
}
