//! The far end of a `--to` run in the reports: what the `netceil serve` there counted, its CPU
//! per core beside this end's over the same window, and both ends' series on one time axis.
//!
//! The far end's clock starts at the grant; [`FarEnd::near_t0_s`] places that on this run's
//! clock. A report from before that field existed is drawn from the run's start, and says so.

use netceil_model::{names as n, FarEnd, Metric, Results, Run, Series, Unit};

use crate::charts::{self, Line, Panel, PanelChart};
use crate::summary::{self, Row};
use crate::view;
use netceil_model::fmt;

/// The far end's report in the results of this run (or part), if one arrived.
pub fn of(run: &Run) -> Option<&FarEnd> {
    run.results.as_ref().and_then(|r| r.far.as_deref())
}

fn row(label: &str, value: String) -> Row {
    Row {
        label: label.into(),
        value,
    }
}

fn opt(v: Option<u64>) -> String {
    fmt::opt_count(v)
}

/// Who the far end was, what ended the test there, what it received and where the rest went.
pub fn rows(far: &FarEnd, near: &Results) -> Vec<Row> {
    let a = &far.app;
    let k = &far.kernel;
    let mut rows = vec![
        row(
            "far end",
            format!(
                "{} at {}, netceil {}, {} CPUs",
                if far.host.is_empty() {
                    "(unnamed host)"
                } else {
                    &far.host
                },
                far.address,
                far.netceil_version,
                far.cpus
            ),
        ),
        row(
            "test there",
            format!(
                "{}, ended by {}",
                fmt::value(far.duration_s, Unit::Seconds),
                far.ended_by
            ),
        ),
    ];
    if a.udp_packets > 0 || summary::counts_packets(near) && a.tcp_connections == 0 {
        rows.push(row(
            "received there",
            format!(
                "{} datagrams, {} ({} lost, {} reordered, {} duplicate)",
                fmt::count(a.udp_packets),
                fmt::value(a.udp_bytes as f64, Unit::Bytes),
                fmt::count(a.udp_lost),
                fmt::count(a.udp_reordered),
                fmt::count(a.udp_duplicates)
            ),
        ));
    }
    if a.udp_requests_echoed > 0 {
        rows.push(row("requests echoed", fmt::count(a.udp_requests_echoed)));
    }
    if a.tcp_connections > 0 {
        rows.push(row(
            "TCP there",
            format!(
                "{} connections, {} received, {} echoed",
                fmt::count(a.tcp_connections),
                fmt::value(a.tcp_stream_bytes as f64, Unit::Bytes),
                fmt::value(a.tcp_echoed_bytes as f64, Unit::Bytes)
            ),
        ));
    }
    rows.push(row(
        "dropped there",
        format!(
            "socket {} (SO_RXQ_OVFL), Udp RcvbufErrors {}, softnet backlog {}, interface rx dropped {}",
            opt(a.udp_socket_drops),
            opt(k.udp_rcvbuf_errors),
            opt(k.softnet_dropped),
            opt(k.iface_rx_dropped)
        ),
    ));
    rows.push(row(
        "interface there",
        format!(
            "{}: rx {} packets, {}; tx {} packets",
            k.iface.as_deref().unwrap_or("(not found)"),
            opt(k.iface_rx_packets),
            k.iface_rx_bytes
                .map_or(fmt::MISSING.into(), |b| fmt::value(b as f64, Unit::Bytes)),
            opt(k.iface_tx_packets)
        ),
    ));
    rows.push(row(
        "softnet there",
        format!(
            "processed {}, time squeeze {}",
            opt(k.softnet_processed),
            opt(k.softnet_time_squeeze)
        ),
    ));
    if k.tcp_retrans_segs.is_some_and(|r| r > 0) {
        rows.push(row("TCP retransmits there", opt(k.tcp_retrans_segs)));
    }
    rows.push(row(
        "strays",
        format!(
            "{} datagrams and {} connections from others: counted, never answered",
            fmt::count(a.stray_packets),
            fmt::count(a.tcp_refused)
        ),
    ));
    if let Some(cpu_s) = a.cpu_s {
        rows.push(row(
            "receiver threads' CPU",
            fmt::value(cpu_s, Unit::Seconds),
        ));
    }
    rows
}

/// The rows of this run's series inside the far end's test, on this run's clock.
fn near_rows(series: &Series, far: &FarEnd) -> Vec<usize> {
    let all: Vec<usize> = (0..series.len()).collect();
    let Some(t0) = far.near_t0_s else {
        return all;
    };
    // A row covers (t − interval, t]; keep those that end inside the test.
    let end = t0 + far.duration_s + series.interval_s / 2.0;
    let inside: Vec<usize> = all
        .iter()
        .copied()
        .filter(|&i| series.t_s[i] > t0 && series.t_s[i] <= end)
        .collect();
    if inside.is_empty() {
        all
    } else {
        inside
    }
}

fn near_cpu_mean(series: &Series, name: &str, cpu: u32, rows: &[usize]) -> Option<f64> {
    let dt = view::row_durations(series);
    let dts: Vec<f64> = rows.iter().map(|&r| dt[r]).collect();
    view::per_cpu(series, name)
        .into_iter()
        .find(|(c, _)| *c == cpu)
        .and_then(|(_, m)| view::weighted_mean(&view::values_in(Some(m), rows), &dts))
}

/// Header of [`cpu_table`].
pub const CPU_HEADERS: [&str; 6] = [
    "CPU",
    "here busy",
    "here softirq",
    "there busy",
    "there system",
    "there softirq",
];

/// Per core: this end's busy and softirq shares (time-weighted means of its series over the
/// far end's test) beside the far end's, which it measured from /proc/stat over the test.
/// Both ends in namespaces of one machine are the same cores seen twice.
pub fn cpu_table(run: &Run, far: &FarEnd) -> Vec<Vec<String>> {
    let rows = near_rows(&run.series, far);
    let mut cpus: Vec<u32> = view::per_cpu(&run.series, n::CPU_BUSY_PCT)
        .into_iter()
        .map(|(c, _)| c)
        .chain(far.cpu.iter().map(|c| c.cpu))
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    let pct = |v: Option<f64>| v.map_or(fmt::MISSING.into(), |v| fmt::value(v, Unit::Percent));
    cpus.into_iter()
        .map(|c| {
            let there = far.cpu.iter().find(|f| f.cpu == c);
            vec![
                format!("cpu{c}"),
                pct(near_cpu_mean(&run.series, n::CPU_BUSY_PCT, c, &rows)),
                pct(near_cpu_mean(&run.series, n::CPU_SOFTIRQ_PCT, c, &rows)),
                pct(there.map(|f| f.busy_pct)),
                pct(there.map(|f| f.system_pct)),
                pct(there.map(|f| f.softirq_pct)),
            ]
        })
        .collect()
}

/// The core with the highest mean busy share in `rows`.
fn busiest_cpu(series: &Series, rows: &[usize]) -> Option<u32> {
    view::per_cpu(series, n::CPU_BUSY_PCT)
        .into_iter()
        .filter_map(|(c, m)| view::mean_over(m, rows).map(|v| (c, v)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
}

fn cpu_metric<'a>(series: &'a Series, name: &str, cpu: Option<u32>) -> Option<&'a Metric> {
    let cpu = cpu?;
    view::per_cpu(series, name)
        .into_iter()
        .find(|(c, _)| *c == cpu)
        .map(|(_, m)| m)
}

/// One end's metric as a line; `shift` moves its times onto this run's clock.
fn line(series: &Series, metric: Option<&Metric>, label: &str, color: usize, shift: f64) -> Line {
    Line {
        label: label.into(),
        points: metric.map_or_else(Vec::new, |m| {
            series
                .t_s
                .iter()
                .zip(&m.values)
                .map(|(t, v)| (t + shift, *v))
                .collect()
        }),
        dashed: false,
        color: charts::color(color),
    }
}

/// The sum of several metrics per row; a row is missing only when every one is.
fn sum_line(series: &Series, metrics: &[&Metric], label: &str, color: usize, shift: f64) -> Line {
    let points = (0..series.len())
        .map(|r| {
            let vals: Vec<f64> = metrics
                .iter()
                .filter_map(|m| m.values.get(r).copied().flatten())
                .collect();
            (
                series.t_s[r] + shift,
                (!vals.is_empty()).then(|| vals.iter().sum()),
            )
        })
        .collect();
    Line {
        label: label.into(),
        points,
        dashed: false,
        color: charts::color(color),
    }
}

/// Both ends on one time axis: what this end sent beside what arrived there, each end's
/// busiest core and its softirq share, and the far end's drops per second.
pub fn chart(run: &Run, far: &FarEnd) -> PanelChart {
    let (near, there) = (&run.series, &far.series);
    let shift = far.near_t0_s.unwrap_or(0.0);
    let here_label = "here (sender)";
    let there_label = format!("there ({})", far.host);
    let packets = run.results.as_ref().is_some_and(summary::counts_packets);
    let (rate_name, rate_desc, sent, arrived) = if packets {
        (
            "packets: sent here, arrived at the far interface",
            Unit::PacketsPerSecond.human_symbol(),
            view::busiest(near, n::LOAD_TX_PPS).or_else(|| view::busiest(near, n::IFACE_TX_PPS)),
            view::busiest(there, n::IFACE_RX_PPS),
        )
    } else {
        (
            "throughput: sent here, arrived at the far interface",
            Unit::BitsPerSecond.human_symbol(),
            view::busiest(near, n::LOAD_TX_BITS_PER_S)
                .or_else(|| view::busiest(near, n::IFACE_TX_BITS_PER_S)),
            view::busiest(there, n::IFACE_RX_BITS_PER_S),
        )
    };
    let near_rows = near_rows(near, far);
    let far_rows: Vec<usize> = (0..there.len()).collect();
    let (hot_here, hot_there) = (busiest_cpu(near, &near_rows), busiest_cpu(there, &far_rows));
    let cpu_name = |what: &str| {
        let c = |v: Option<u32>| v.map_or("?".to_string(), |c| format!("cpu{c}"));
        format!(
            "{what}, busiest core of each end (here {}, there {})",
            c(hot_here),
            c(hot_there)
        )
    };
    let drops: Vec<&Metric> = [
        n::UDP_RCVBUF_ERRORS_PER_S,
        n::SOFTNET_DROPPED_PER_S,
        n::IP_IN_DISCARDS_PER_S,
    ]
    .iter()
    .flat_map(|name| match there.total(name) {
        // Per-CPU counters (softnet) without a total: all of them.
        Some(total) => vec![total],
        None => there
            .metrics
            .iter()
            .filter(|m| m.id.name == *name)
            .collect(),
    })
    .chain(view::busiest(there, n::IFACE_RX_DROPPED_PER_S))
    .collect();
    let panel = |name: String, desc: &str, lines: Vec<Line>, max: Option<f64>| Panel {
        name,
        desc: desc.into(),
        lines,
        max,
    };
    // Each end's busiest core, one metric of it.
    let cpu_panel = |what: &str, name: &str| {
        panel(
            cpu_name(what),
            Unit::Percent.human_symbol(),
            vec![
                line(near, cpu_metric(near, name, hot_here), here_label, 0, 0.0),
                line(
                    there,
                    cpu_metric(there, name, hot_there),
                    &there_label,
                    1,
                    shift,
                ),
            ],
            Some(100.0),
        )
    };
    PanelChart {
        title: "Both ends".into(),
        x_desc: "time since this run's start [s]".into(),
        panels: vec![
            panel(
                rate_name.into(),
                rate_desc,
                vec![
                    line(near, sent, here_label, 0, 0.0),
                    line(there, arrived, &there_label, 1, shift),
                ],
                None,
            ),
            cpu_panel("busy", n::CPU_BUSY_PCT),
            cpu_panel("softirq", n::CPU_SOFTIRQ_PCT),
            panel(
                "drops at the far end (socket buffer, backlog, IP discards, interface)".into(),
                "/s",
                vec![sum_line(there, &drops, &there_label, 1, shift)],
                None,
            ),
        ],
    }
}

/// The caption under [`chart`]: how the two clocks were aligned.
pub fn chart_caption(far: &FarEnd) -> String {
    let clocks = match far.near_t0_s {
        Some(t0) => format!(
            "The far end's times are shifted by {} (when the grant arrived here), so both \
             ends share this run's clock to within the grant's one-way delay.",
            fmt::value(t0, Unit::Seconds)
        ),
        None => "This report did not record when the grant arrived: the far end's series is \
                 drawn from this run's start, so the two ends may be offset by the time the \
                 handshake took."
            .into(),
    };
    format!(
        "{clocks} A ceiling at the receiver shows as arrivals flattening below what was sent \
         while a far core fills; on namespaces of one machine both ends are the same cores."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_model::{FarCpu, MetricId, RunSource};

    fn cpu_id(name: &str, cpu: u32) -> MetricId {
        MetricId::new(name).with(n::LABEL_CPU, cpu.to_string())
    }

    /// This end: cpu0 10 % busy outside the far end's test and 90 % inside it (rows 3–5 of
    /// 1–6 s); the far end's test ran from 2 s on this clock for 3 s.
    fn two_ended(near_t0_s: Option<f64>) -> Run {
        let mut run = Run::new("r", RunSource::Live);
        run.series = Series::new(1.0);
        for t in 1..=6 {
            run.series.push_row(f64::from(t));
            let busy = if (3..=5).contains(&t) { 90.0 } else { 10.0 };
            run.series
                .set(&cpu_id(n::CPU_BUSY_PCT, 0), Unit::Percent, busy);
            run.series
                .set(&cpu_id(n::CPU_SOFTIRQ_PCT, 0), Unit::Percent, busy / 2.0);
            run.series
                .set(&MetricId::new(n::LOAD_TX_PPS), Unit::PacketsPerSecond, 1e5);
        }
        let mut there = Series::new(1.0);
        for t in 1..=3 {
            there.push_row(f64::from(t));
            there.set(&cpu_id(n::CPU_BUSY_PCT, 1), Unit::Percent, 99.0);
            there.set(
                &MetricId::new(n::IFACE_RX_PPS).with(n::LABEL_IFACE, "veth0"),
                Unit::PacketsPerSecond,
                8e4,
            );
            there.set(&cpu_id(n::SOFTNET_DROPPED_PER_S, 1), Unit::PerSecond, 5.0);
            there.set(&cpu_id(n::SOFTNET_DROPPED_PER_S, 0), Unit::PerSecond, 2.0);
        }
        let mut far = FarEnd {
            host: "b".into(),
            duration_s: 3.0,
            near_t0_s,
            series: there,
            cpu: vec![FarCpu {
                cpu: 1,
                busy_pct: 99.0,
                softirq_pct: 97.0,
                ..FarCpu::default()
            }],
            ..FarEnd::default()
        };
        far.app.udp_packets = 240_000;
        far.app.udp_socket_drops = Some(60_000);
        run.results = Some(Results {
            tx_packets: 300_000,
            far: Some(Box::new(far)),
            ..Results::default()
        });
        run
    }

    #[test]
    fn this_ends_cores_are_averaged_over_the_far_ends_test_only() {
        let run = two_ended(Some(2.0));
        let table = cpu_table(&run, of(&run).unwrap());
        assert_eq!(
            table,
            vec![
                vec!["cpu0", "90 %", "45 %", "-", "-", "-"],
                vec!["cpu1", "-", "-", "99 %", "0 %", "97 %"],
            ]
        );
        // Without the grant's time the whole run is the window.
        let run = two_ended(None);
        assert_eq!(cpu_table(&run, of(&run).unwrap())[0][1], "50 %");
    }

    #[test]
    fn the_far_ends_series_is_moved_onto_this_runs_clock_and_drops_are_summed_over_cpus() {
        let run = two_ended(Some(2.0));
        let chart = chart(&run, of(&run).unwrap());
        let arrived = &chart.panels[0].lines[1];
        assert_eq!(arrived.points[0], (3.0, Some(8e4)));
        assert_eq!(chart.panels[0].lines[0].points[0], (1.0, Some(1e5)));
        assert!(
            chart.panels[1].name.contains("there cpu1"),
            "{}",
            chart.panels[1].name
        );
        assert_eq!(chart.panels[3].lines[0].points[2], (5.0, Some(7.0)));
        assert!(chart_caption(of(&run).unwrap()).contains("shifted by 2 s"));
        let unaligned = two_ended(None);
        assert!(chart_caption(of(&unaligned).unwrap()).contains("did not record"));
    }

    #[test]
    fn rows_say_what_arrived_there_and_what_was_not_measured() {
        let run = two_ended(Some(2.0));
        let rows = rows(of(&run).unwrap(), run.results.as_ref().unwrap());
        let get = |label: &str| {
            rows.iter()
                .find(|r| r.label == label)
                .map(|r| r.value.clone())
                .unwrap_or_else(|| panic!("no row {label}"))
        };
        assert!(get("received there").starts_with("240,000 datagrams"));
        assert!(
            get("dropped there").starts_with("socket 60,000 (SO_RXQ_OVFL), Udp RcvbufErrors -"),
            "{}",
            get("dropped there")
        );
        assert!(get("interface there").starts_with("(not found)"));
        assert!(crate::markdown(&run).contains("## Far end"));
        let mut without = run.clone();
        without.results.as_mut().unwrap().far = None;
        assert!(!crate::markdown(&without).contains("Far end"));
        assert!(!crate::html_report(&[without]).contains("Far end"));
    }
}
