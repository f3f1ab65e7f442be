//! `netceil report`: one self-contained HTML file with SVG charts.
//!
//! The file must open anywhere, offline and from `file://`, and still open in ten years:
//! so no scripts, no external stylesheets, fonts or images; the charts are inline SVG
//! rendered by plotters, and a Content-Security-Policy of `default-src 'none'` makes the
//! browser refuse any fetch that might slip in. All text from a run (notes, labels, lock
//! names…) is escaped.
//!
//! The first chart is the picture the vmstat investigation (SEEDS §1) wanted: throughput
//! with context switches, interrupts and NET_RX softirqs on the same time axis.

use std::fmt::Write as _;

use netceil_model::params::{Params, SearchTrialParams, SweepCycleParams};
use netceil_model::{names as n, Finding, LatencySummary, Metric, Run, Series, Unit};

use crate::charts::{self, Axis, Bar, Line, TimeChart};
use crate::compare;
use crate::compare_render;
use crate::far;
use crate::summary::{self, Row};
use crate::view;
use crate::words;
use netceil_model::fmt;

/// The most per-CPU lines one chart shows; beyond that, the busiest CPUs are kept.
const MAX_CPU_LINES: usize = 16;
const TIME_DESC: &str = "time since start [s]";

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       margin: 0 auto; max-width: 1000px; padding: 1.5rem; color: #1d1d1f; background: #fff; line-height: 1.45; }
h1 { font-size: 1.7rem; margin-bottom: .2rem; }
h2 { font-size: 1.35rem; border-bottom: 2px solid #4e79a7; padding-bottom: .2rem; margin-top: 2.5rem; }
h3 { font-size: 1.12rem; margin-top: 1.8rem; }
h4 { font-size: 1rem; margin: 1.2rem 0 .4rem; }
section.part { border-left: 3px solid #e6e6e6; padding-left: 1rem; margin-left: .2rem; }
/* Tables fit the page by wrapping their cells; the scroll container around each is only a
   last resort for a table that cannot wrap narrow enough. */
.table-wrap { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .9rem; max-width: 100%; }
th, td { border: 1px solid #ddd; padding: .25rem .55rem; text-align: left; vertical-align: top;
         overflow-wrap: break-word; }
th { background: #f4f6f9; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.kv th { width: 35%; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(440px, 100%), 1fr)); gap: 0 1.5rem; }
.grid > div { min-width: 0; }
h1, h2, h3, h4, p, li, code, summary { overflow-wrap: anywhere; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; }
p.workload { font-size: 1.05rem; }
ul.verdicts li { margin: .4rem 0; }
.finding:first-of-type { border-left-color: #e15759; }
@media (max-width: 600px) {
  body { padding: .75rem; }
  th, td { padding: .2rem .3rem; overflow-wrap: anywhere; }
  table { font-size: .8rem; }
}
figure { margin: 1rem 0; }
figure svg { width: 100%; height: auto; display: block; }
figcaption { font-size: .85rem; color: #555; margin-top: .2rem; }
code { font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; font-size: .88em;
       background: #f4f4f4; padding: 0 .25em; border-radius: 3px; }
.badge { display: inline-block; font-size: .8rem; padding: .05rem .5rem; border-radius: 1rem;
         background: #e8eef6; color: #2a4a6e; margin-left: .4rem; vertical-align: middle; }
.badge.warn { background: #fdecea; color: #8a1c12; }
.finding { border: 1px solid #ddd; border-left: 4px solid #e15759; border-radius: 4px;
           padding: .5rem .9rem; margin: .8rem 0; }
.finding p.summary { font-weight: 600; margin: .2rem 0 .4rem; }
.finding ul { margin: .2rem 0 .4rem 1.1rem; padding: 0; }
.muted { color: #666; font-size: .9rem; }
nav ul { padding-left: 1.2rem; }
footer { margin-top: 3rem; font-size: .8rem; color: #777; border-top: 1px solid #eee; padding-top: .6rem; }
"#;

/// Renders one or more runs as a single self-contained HTML document.
///
/// Each run gets its own section (suite runs with a subsection per part); with several
/// runs, an overview table and overlay charts of the metrics they share come first, and
/// with exactly two, the A/B comparison.
pub fn html_report(runs: &[Run]) -> String {
    let mut page = String::new();
    let title = match runs {
        [] => "netceil report".to_string(),
        [one] => format!("netceil report: {}", one.run_id),
        many => format!("netceil report: {} runs", many.len()),
    };
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"netceil-report {}\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        env!("CARGO_PKG_VERSION"),
        escape(&title)
    );
    let _ = writeln!(page, "<header><h1>{}</h1>", escape(&title));
    let _ = writeln!(
        page,
        "<p class=\"muted\">Bit rates are decimal (1 Gbit/s = 10<sup>9</sup> bit/s). \
         A gap in a line is an interval that was not measured, not a zero.</p></header>"
    );
    if runs.is_empty() {
        page.push_str("<p>No runs were given.</p>\n");
    }
    if runs.len() > 1 {
        write_toc(&mut page, runs);
        write_overview(&mut page, runs);
    }
    if let [a, b] = runs {
        write_comparison(&mut page, a, b);
    }
    for (i, run) in runs.iter().enumerate() {
        write_run(&mut page, run, &format!("run-{}", i + 1), 2);
    }
    let _ = write!(
        page,
        "<footer>Made by netceil-report {}. This file is self-contained: it loads nothing \
         from the network.</footer>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
    page
}

fn short_name(run: &Run) -> String {
    if run.meta.labels.is_empty() {
        run.run_id.clone()
    } else {
        format!("{} [{}]", run.run_id, summary::labels(run))
    }
}

fn write_toc(page: &mut String, runs: &[Run]) {
    page.push_str("<nav><h2>Runs</h2><ul>\n");
    for (i, run) in runs.iter().enumerate() {
        let _ = writeln!(
            page,
            "<li><a href=\"#run-{}\">{}</a> <span class=\"muted\">{}</span></li>",
            i + 1,
            escape(&run.run_id),
            escape(&if run.meta.labels.is_empty() {
                summary::kind(run).to_string()
            } else {
                format!("{}; {}", summary::kind(run), summary::labels(run))
            })
        );
    }
    page.push_str("</ul></nav>\n");
}

fn kv_table(page: &mut String, rows: &[Row]) {
    page.push_str("<div class=\"table-wrap\"><table class=\"kv\">\n");
    for r in rows {
        let _ = writeln!(
            page,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(&r.label),
            escape(&r.value)
        );
    }
    page.push_str("</table></div>\n");
}

/// A table with a header row; cells after the first are right-aligned numbers.
fn grid_table<S: AsRef<str>>(page: &mut String, headers: &[&str], rows: &[Vec<S>]) {
    page.push_str("<div class=\"table-wrap\"><table>\n<tr>");
    for h in headers {
        let _ = write!(page, "<th>{}</th>", escape(h));
    }
    page.push_str("</tr>\n");
    for r in rows {
        page.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let class = if i == 0 { "" } else { " class=\"num\"" };
            let _ = write!(page, "<td{class}>{}</td>", escape(c.as_ref()));
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table></div>\n");
}

fn figure(page: &mut String, svg: Option<Result<String, String>>, caption: &str) {
    match svg {
        None => {}
        Some(Ok(svg)) => {
            let _ = write!(
                page,
                "<figure>\n{svg}<figcaption>{}</figcaption></figure>\n",
                escape(caption)
            );
        }
        Some(Err(e)) => {
            let _ = writeln!(page, "<p class=\"muted\">{}</p>", escape(&e));
        }
    }
}

fn metric_line(series: &Series, metric: &Metric, label: String, index: usize) -> Line {
    Line {
        label,
        points: series
            .t_s
            .iter()
            .zip(&metric.values)
            .map(|(t, v)| (*t, *v))
            .collect(),
        dashed: index >= 10,
        color: charts::color(index),
    }
}

fn axis_desc(what: &str, unit: Unit) -> String {
    format!("{what} [{}]", unit.human_symbol())
}

/// One line per metric, coloured by its position in the whole chart.
fn lines_for(s: &Series, metrics: &[&Metric], first_color: usize) -> Vec<Line> {
    metrics
        .iter()
        .enumerate()
        .map(|(i, m)| metric_line(s, m, words::metric(&m.id, m.unit), first_color + i))
        .collect()
}

/// Throughput, packet rate, context switches, interrupts and NET_RX softirqs, stacked on
/// one time axis: SEEDS §1's picture, where the ceiling shows as these rates flattening
/// together while the CPU still looks idle.
fn rates_chart(run: &Run) -> charts::PanelChart {
    let s = &run.series;
    let mut colors = 0;
    let mut panel = |name: &str, per_second: &str, picked: Vec<&Metric>| {
        let mut unique: Vec<&Metric> = Vec::new();
        for m in picked {
            if !unique.iter().any(|u| u.id == m.id) {
                unique.push(m);
            }
        }
        let lines = lines_for(s, &unique, colors);
        colors += unique.len();
        charts::Panel {
            name: name.to_string(),
            desc: per_second.to_string(),
            lines,
            max: None,
        }
    };
    let busiest = |names: &[&str]| -> Vec<&Metric> {
        names.iter().filter_map(|n| view::busiest(s, n)).collect()
    };
    let total = |name: &str| -> Vec<&Metric> { s.total(name).into_iter().collect() };
    let panels = vec![
        panel(
            "throughput",
            Unit::BitsPerSecond.human_symbol(),
            busiest(&[
                n::LOAD_RX_BITS_PER_S,
                n::LOAD_TX_BITS_PER_S,
                n::IFACE_RX_BITS_PER_S,
            ]),
        ),
        panel(
            "packets",
            Unit::PacketsPerSecond.human_symbol(),
            busiest(&[n::LOAD_TX_PPS, n::LOAD_RX_PPS, n::IFACE_RX_PPS]),
        ),
        panel(
            "transactions",
            "transactions/s",
            total(n::LOAD_TRANSACTIONS_PER_S),
        ),
        panel("context switches", "cs/s", total(n::CS_PER_S)),
        panel("interrupts", "interrupts/s", total(n::INTR_PER_S)),
        panel(
            "NET_RX softirqs",
            "softirqs/s",
            total(n::SOFTIRQ_NET_RX_PER_S),
        ),
    ];
    charts::PanelChart {
        title: "Throughput and kernel event rates".into(),
        x_desc: TIME_DESC.into(),
        panels,
    }
}

/// The CPUs to draw: all of them, or the busiest [`MAX_CPU_LINES`] by mean busy share.
fn shown_cpus(s: &Series) -> (Vec<u32>, usize) {
    let all: Vec<usize> = (0..s.len()).collect();
    let mut cpus: Vec<(u32, f64)> = view::per_cpu(s, n::CPU_BUSY_PCT)
        .into_iter()
        .map(|(c, m)| (c, view::mean_over(m, &all).unwrap_or(0.0)))
        .collect();
    let total = cpus.len();
    if total > MAX_CPU_LINES {
        cpus.sort_by(|a, b| b.1.total_cmp(&a.1));
        cpus.truncate(MAX_CPU_LINES);
        cpus.sort_by_key(|(c, _)| *c);
    }
    (cpus.into_iter().map(|(c, _)| c).collect(), total)
}

fn cpu_chart(run: &Run, cpus: &[u32]) -> TimeChart {
    let s = &run.series;
    let mut lines: Vec<Line> = view::per_cpu(s, n::CPU_BUSY_PCT)
        .into_iter()
        .filter(|(c, _)| cpus.contains(c))
        .enumerate()
        .map(|(i, (c, m))| metric_line(s, m, format!("cpu{c}"), i))
        .collect();
    // Effective utilization where the source knows it (Erlang schedulers, SEEDS §3): OS CPU
    // counts busy-waiting as busy, this does not.
    if let Some(util) = s.total(n::ERLANG_SCHEDULER_UTIL_PCT) {
        let mut l = metric_line(
            s,
            util,
            format!("{} (effective)", words::metric(&util.id, util.unit)),
            lines.len(),
        );
        l.dashed = true;
        lines.push(l);
    }
    if let Some((values, how)) = view::cpu_busy_total(s) {
        lines.push(Line {
            label: if how == n::CPU_BUSY_PCT {
                "all CPUs (mean)".into()
            } else {
                format!("all CPUs ({how})")
            },
            points: s.t_s.iter().copied().zip(values).collect(),
            dashed: true,
            color: plotters::style::RGBColor(0x33, 0x33, 0x33),
        });
    }
    TimeChart {
        title: "CPU busy per core (everything but idle and iowait)".into(),
        x_desc: TIME_DESC.into(),
        left: Axis {
            desc: axis_desc("busy", Unit::Percent),
            lines,
            max: Some(100.0),
        },
    }
}

/// System plus softirq time per core: where the kernel's network work shows.
fn sys_softirq_chart(run: &Run, cpus: &[u32]) -> TimeChart {
    let s = &run.series;
    let softirq = view::per_cpu(s, n::CPU_SOFTIRQ_PCT);
    let lines: Vec<Line> = view::per_cpu(s, n::CPU_SYSTEM_PCT)
        .into_iter()
        .filter(|(c, _)| cpus.contains(c))
        .filter_map(|(c, sys)| {
            let si = softirq.iter().find(|(sc, _)| *sc == c)?.1;
            Some((c, sys, si))
        })
        .enumerate()
        .map(|(i, (c, sys, si))| Line {
            label: format!("cpu{c} sy+si"),
            points: s
                .t_s
                .iter()
                .zip(sys.values.iter().zip(&si.values))
                .map(|(t, (a, b))| (*t, a.zip(*b).map(|(a, b)| a + b)))
                .collect(),
            dashed: i >= 10,
            color: charts::color(i),
        })
        .collect();
    TimeChart {
        title: "System + softirq time per core (sy+si)".into(),
        x_desc: TIME_DESC.into(),
        left: Axis {
            desc: axis_desc("sy+si", Unit::Percent),
            lines,
            max: Some(100.0),
        },
    }
}

/// Softirq time per core as the softirq probe timed it (entry to exit), with /proc/stat's
/// tick-sampled figure of the same core dashed beside it. `None` without the probe.
fn exact_softirq_chart(run: &Run, cpus: &[u32]) -> Option<TimeChart> {
    let s = &run.series;
    let exact: Vec<(u32, &Metric)> = view::per_cpu(s, n::SOFTIRQ_EXACT_PCT)
        .into_iter()
        .filter(|(c, m)| m.id.labels.len() == 1 && cpus.contains(c))
        .collect();
    if exact.is_empty() {
        return None;
    }
    let ticked = view::per_cpu(s, n::CPU_SOFTIRQ_PCT);
    let mut lines = Vec::new();
    for (i, (c, m)) in exact.iter().enumerate() {
        lines.push(metric_line(s, m, format!("cpu{c} softirq (exact)"), i));
        if let Some((_, t)) = ticked.iter().find(|(tc, _)| tc == c) {
            let mut l = metric_line(s, t, format!("cpu{c} softirq (/proc/stat, ticks)"), i);
            l.dashed = true;
            lines.push(l);
        }
    }
    Some(TimeChart {
        title: "Softirq time per core, timed by the softirq probe".into(),
        x_desc: TIME_DESC.into(),
        left: Axis {
            desc: axis_desc("softirq", Unit::Percent),
            lines,
            max: Some(100.0),
        },
    })
}

/// Drop and error counters worth a look; only those that were ever non-zero are drawn.
const TROUBLE: [&str; 11] = [
    n::LOAD_LOST_PER_S,
    n::IFACE_RX_DROPPED_PER_S,
    n::IFACE_RX_MISSED_PER_S,
    n::IFACE_RX_ERRORS_PER_S,
    n::SOFTNET_DROPPED_PER_S,
    n::SOFTNET_TIME_SQUEEZE_PER_S,
    n::UDP_RCVBUF_ERRORS_PER_S,
    n::UDP_SNDBUF_ERRORS_PER_S,
    n::IP_IN_DISCARDS_PER_S,
    n::TCP_RETRANS_SEGS_PER_S,
    n::TCP_BACKLOG_DROP_PER_S,
];

fn trouble_chart(run: &Run) -> (TimeChart, Vec<String>) {
    let s = &run.series;
    let mut lines = Vec::new();
    let mut watched = Vec::new();
    for name in TROUBLE {
        let metrics: Vec<&Metric> = match s.total(name) {
            // Per-CPU breakdowns repeat the total; draw the total only.
            Some(total) => vec![total],
            None => s.by_name(name).collect(),
        };
        for m in metrics {
            watched.push(m.id.to_string());
            if m.values.iter().flatten().any(|v| *v != 0.0) {
                let i = lines.len();
                lines.push(metric_line(s, m, words::metric(&m.id, m.unit), i));
            }
        }
    }
    (
        TimeChart {
            title: "Drops, errors, retransmissions and squeezes".into(),
            x_desc: TIME_DESC.into(),
            left: Axis {
                desc: axis_desc("events", Unit::PerSecond),
                lines,
                max: None,
            },
        },
        watched,
    )
}

fn latency_time_chart(run: &Run) -> Option<TimeChart> {
    let s = &run.series;
    let m = s.total(n::LOAD_MEAN_LATENCY_US)?;
    Some(TimeChart {
        title: "Mean request/response latency per interval".into(),
        x_desc: TIME_DESC.into(),
        left: Axis {
            desc: axis_desc("latency", Unit::Microseconds),
            lines: vec![metric_line(s, m, words::metric(&m.id, m.unit), 0)],
            max: None,
        },
    })
}

fn write_series_charts(page: &mut String, run: &Run, hn: usize) {
    let s = &run.series;
    if s.is_empty() {
        let _ = writeln!(page, "<p class=\"muted\">This run has no time series.</p>");
        return;
    }
    let _ = writeln!(page, "<h{hn}>Time series</h{hn}>");
    figure(
        page,
        charts::panel_chart(&rates_chart(run)),
        "Each panel has its own scale; the time axis is shared. A ceiling shows as the rates \
         flattening together while throughput stops growing. Interface counters are the \
         busiest interface's.",
    );
    let (cpus, total_cpus) = shown_cpus(s);
    let omitted = if total_cpus > cpus.len() {
        format!(
            " The {} busiest of {total_cpus} CPUs are shown.",
            cpus.len()
        )
    } else {
        String::new()
    };
    figure(
        page,
        charts::time_chart(&cpu_chart(run, &cpus)),
        &format!("One saturated core hides in the machine-wide average (dashed).{omitted}"),
    );
    figure(
        page,
        charts::time_chart(&sys_softirq_chart(run, &cpus)),
        &format!("Kernel time outside interrupts plus softirq time, per core.{omitted}"),
    );
    if let Some(chart) = exact_softirq_chart(run, &cpus) {
        figure(
            page,
            charts::time_chart(&chart),
            &format!(
                "Solid: every softirq handler timed from entry to exit (eBPF, irq:softirq_entry/exit). \
                 Dashed: /proc/stat's softirq column, which on kernels without IRQ time \
                 accounting is sampled at each timer tick.{omitted}"
            ),
        );
    }
    let (trouble, watched) = trouble_chart(run);
    match charts::time_chart(&trouble) {
        Some(svg) => figure(
            page,
            Some(svg),
            "Only counters that were ever non-zero are drawn.",
        ),
        None if !watched.is_empty() => {
            let _ = writeln!(
                page,
                "<p class=\"muted\">No drops, errors, retransmissions or squeezes were counted \
                 ({} counters watched).</p>",
                watched.len()
            );
        }
        None => {}
    }
    if let Some(chart) = latency_time_chart(run) {
        figure(
            page,
            charts::time_chart(&chart),
            "Measured from the intended send time.",
        );
    }
}

fn write_delivery(page: &mut String, run: &Run, hn: usize) {
    let Some(r) = run.results.as_ref().filter(|r| summary::counts_packets(r)) else {
        return;
    };
    let _ = writeln!(page, "<h{hn}>Delivery: kernel vs application</h{hn}>");
    let steps = summary::delivery(r);
    let bars: Vec<Bar> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let scope = if s.machine_wide {
                " (machine-wide)"
            } else {
                ""
            };
            Bar {
                label: format!("{}{scope}", s.label),
                value: s.packets.map(|p| p as f64),
                annotation: s
                    .packets
                    .map_or_else(|| "not measured".into(), fmt::signed_count),
                color: match i {
                    0..=2 => charts::color(0),
                    _ if s.packets.is_some_and(|p| p != 0) => charts::color(2),
                    _ => charts::color(9),
                },
            }
        })
        .collect();
    figure(
        page,
        Some(charts::bar_chart(
            "Where packets were counted, and where they were lost",
            "packets",
            &bars,
            false,
        )),
        "Machine-wide counters include every socket and interface; the interface counter \
         counts all traffic on it (on loopback, both directions), not only this workload's.",
    );
    let _ = writeln!(page, "<p>Lost: {}.</p>", escape(&summary::loss_text(r)));
}

fn write_latency(page: &mut String, run: &Run, hn: usize) {
    let Some(l) = run.results.as_ref().and_then(|r| r.latency_us.as_ref()) else {
        return;
    };
    let _ = writeln!(page, "<h{hn}>Latency</h{hn}>");
    let points = [
        ("min", l.min),
        ("p50", l.p50),
        ("p90", l.p90),
        ("p99", l.p99),
        ("p99.9", l.p999),
        ("max", l.max),
    ];
    let bars: Vec<Bar> = points
        .iter()
        .map(|(label, v)| Bar {
            label: (*label).into(),
            // In µs as measured: the tick labels have no prefixes below 1 (10 µs would read
            // 1.00e-5 in seconds).
            value: Some(*v),
            annotation: fmt::value(*v, Unit::Microseconds),
            color: charts::color(3),
        })
        .collect();
    figure(
        page,
        Some(charts::bar_chart(
            "Request/response latency percentiles (log scale)",
            &axis_desc("latency", Unit::Microseconds),
            &bars,
            true,
        )),
        &format!(
            "{} samples, mean {}; measured from the intended send time.",
            fmt::count(l.count),
            fmt::value(l.mean, Unit::Microseconds)
        ),
    );
    if let Some(cdf) = latency_cdf(&[(short_name(run), l, 0)]) {
        figure(page, Some(cdf), CDF_CAPTION);
    }
}

const CDF_CAPTION: &str = "Each point is a stored percentile (min, p50, p90, p99, p99.9, max); \
     netceil keeps these percentiles, not every sample, so the lines between them are drawn \
     straight.";

/// The latency distribution of each run from its stored percentiles, one line per run.
fn latency_cdf(runs: &[(String, &LatencySummary, usize)]) -> Option<Result<String, String>> {
    let lines: Vec<Line> = runs
        .iter()
        .map(|(label, l, i)| Line {
            label: label.clone(),
            // In µs as measured (see write_latency).
            points: [
                (l.min, 0.0),
                (l.p50, 50.0),
                (l.p90, 90.0),
                (l.p99, 99.0),
                (l.p999, 99.9),
                (l.max, 100.0),
            ]
            .into_iter()
            .map(|(us, pct)| (us, Some(pct)))
            .collect(),
            dashed: false,
            color: charts::color(*i),
        })
        .collect();
    charts::cdf_chart(
        "Request/response latency, cumulative",
        &format!("{} (log scale)", axis_desc("latency", Unit::Microseconds)),
        &lines,
    )
}

fn write_flows(page: &mut String, run: &Run, hn: usize) {
    let Some(r) = &run.results else { return };
    if r.flows.is_empty() {
        return;
    }
    let _ = writeln!(page, "<h{hn}>Flows</h{hn}>");
    grid_table(
        page,
        &["flow", "bytes", "throughput", "retransmits", "smoothed RTT"],
        &summary::flows(r),
    );
}

fn write_locks(page: &mut String, run: &Run, hn: usize) {
    let locks = summary::locks(run);
    if locks.is_empty() {
        return;
    }
    let _ = writeln!(page, "<h{hn}>Locks, by total wait</h{hn}>");
    let rows: Vec<Vec<String>> = locks
        .iter()
        .map(|l| {
            vec![
                l.lock.name.clone(),
                l.lock.kind.clone().unwrap_or_else(|| fmt::MISSING.into()),
                l.lock.caller.clone().unwrap_or_else(|| fmt::MISSING.into()),
                fmt::count(l.lock.count),
                fmt::opt_count(l.lock.contended),
                fmt::value(l.lock.wait_total_s, Unit::Seconds),
                l.waiters.map_or(fmt::MISSING.into(), fmt::number),
                fmt::opt_value(l.cpu_share_pct, Unit::Percent),
                fmt::opt_value(l.mean_wait_s, Unit::Seconds),
                fmt::opt_value(l.lock.wait_max_s, Unit::Seconds),
                fmt::opt_value(l.lock.hold_total_s, Unit::Seconds),
                fmt::opt_value(l.lock.hold_max_s, Unit::Seconds),
            ]
        })
        .collect();
    grid_table(
        page,
        &[
            "lock",
            "type",
            "caller",
            "acquisitions",
            "contended",
            "wait total",
            "mean waiters",
            "of all CPU time",
            "mean wait",
            "max wait",
            "hold total",
            "max hold",
        ],
        &rows,
    );
    let _ = writeln!(
        page,
        "<p class=\"muted\">Mean waiters = total wait ÷ run duration; share of all CPU time = \
         total wait ÷ (duration × CPUs).</p>"
    );
    for l in locks.iter().filter(|l| !l.lock.stack.is_empty()).take(8) {
        let _ = writeln!(
            page,
            "<details><summary>stack: {} from {}</summary><pre>{}</pre></details>",
            escape(&l.lock.name),
            escape(l.lock.caller.as_deref().unwrap_or("?")),
            escape(&l.lock.stack.join("\n"))
        );
    }
    let _ = write!(page, "");
}

fn write_finding(page: &mut String, f: &Finding) {
    let _ = writeln!(
        page,
        "<div class=\"finding\"><p class=\"summary\">{}</p>\
         <p class=\"muted\">cause <code>{}</code>, confidence {:.0} %</p>",
        escape(&f.summary),
        escape(f.cause.as_str()),
        f.confidence * 100.0
    );
    if !f.evidence.is_empty() {
        page.push_str("<strong>Evidence</strong><ul>");
        for e in &f.evidence {
            let _ = write!(
                page,
                "<li>{} <span class=\"muted\">(<code>{}</code>{})</span></li>",
                escape(&e.text),
                escape(&e.metric),
                escape(&summary::evidence_window(e))
            );
        }
        page.push_str("</ul>");
    }
    if !f.alternatives.is_empty() {
        page.push_str("<strong>Considered</strong><ul>");
        for a in &f.alternatives {
            let _ = write!(page, "<li>{}</li>", escape(a));
        }
        page.push_str("</ul>");
    }
    if !f.advice.is_empty() {
        page.push_str("<strong>Try</strong><ul>");
        for a in &f.advice {
            let caveat = a
                .caveat
                .as_deref()
                .map(|c| format!(" <span class=\"muted\">Caveat: {}</span>", escape(c)))
                .unwrap_or_default();
            let _ = write!(
                page,
                "<li><code>{}</code>: {}{caveat}</li>",
                escape(&a.knob),
                escape(&a.expect)
            );
        }
        page.push_str("</ul>");
    }
    if let Some(next) = &f.next {
        let _ = write!(page, "<p><strong>Next:</strong> {}</p>", escape(next));
    }
    if !f.not_checked.is_empty() {
        page.push_str("<strong>Not checked</strong><ul>");
        for n in &f.not_checked {
            let _ = write!(page, "<li>{}</li>", escape(n));
        }
        page.push_str("</ul>");
    }
    page.push_str("</div>\n");
}

fn write_findings(page: &mut String, run: &Run, hn: usize) {
    let _ = writeln!(page, "<h{hn} class=\"verdict\">Verdict</h{hn}>");
    if run.findings.is_empty() {
        let _ = writeln!(
            page,
            "<p class=\"muted\">None recorded; the analyzer fills these in.</p>"
        );
    }
    for (i, f) in run.findings.iter().enumerate() {
        if i == 1 {
            let _ = writeln!(page, "<p class=\"muted\">Also found:</p>");
        }
        write_finding(page, f);
    }
}

fn write_environment(page: &mut String, run: &Run, hn: usize) {
    let _ = writeln!(page, "<h{hn}>Environment</h{hn}>");
    kv_table(page, &summary::environment(run));
    let nics = &run.meta.host.nics;
    if !nics.is_empty() {
        let q = |v: Option<u32>| v.map_or(fmt::MISSING.into(), |v| v.to_string());
        let rows: Vec<Vec<String>> = nics
            .iter()
            .map(|nic| {
                vec![
                    nic.name.clone(),
                    nic.driver.clone().unwrap_or_else(|| fmt::MISSING.into()),
                    nic.speed_mbit
                        .map_or(fmt::MISSING.into(), |s| format!("{s} Mbit/s")),
                    q(nic.mtu),
                    q(nic.rx_queues),
                    q(nic.tx_queues),
                ]
            })
            .collect();
        grid_table(
            page,
            &[
                "interface",
                "driver",
                "speed",
                "MTU",
                "rx queues",
                "tx queues",
            ],
            &rows,
        );
    }
}

/// A sweep's part: one cycle of a cell.
fn cycle(run: &Run) -> Option<&SweepCycleParams> {
    match &run.workload.as_ref()?.params {
        Params::SweepCycle(c) => Some(c),
        _ => None,
    }
}

/// A search's part: one trial.
fn search_trial(run: &Run) -> Option<&SearchTrialParams> {
    match &run.workload.as_ref()?.params {
        Params::SearchTrial(t) => Some(t),
        _ => None,
    }
}

/// The share of a cycle's packets that arrived (app) and that reached the socket (kernel), %.
fn arrived_pct(run: &Run) -> Option<(f64, f64)> {
    let r = run.results.as_ref()?;
    let sent = r.tx_packets as f64;
    if sent <= 0.0 {
        return None;
    }
    let app = (r.rx_app_packets + r.in_flight_packets) as f64;
    let kernel = app + r.kernel.socket_drops.unwrap_or(0) as f64;
    Some((
        100.0 * (app / sent).min(1.0),
        100.0 * (kernel / sent).min(1.0),
    ))
}

/// A knee table's last cell: why the answer is not exact, or else what stopped the search
/// above it.
fn note_or_stopper(k: &netceil_model::Knee) -> String {
    k.note
        .clone()
        .or_else(|| k.stopped_by.clone())
        .unwrap_or_default()
}

/// A search's or a sweep's answers: the knee table, then the curves (a sweep: arrival against
/// interval, per size and point) or the convergence (a search: each trial's rate and loss).
fn write_knees(page: &mut String, run: &Run, hn: usize) {
    if run.knees.is_empty() {
        return;
    }
    let _ = writeln!(page, "<h{hn}>Knees</h{hn}>");
    if run.knees.iter().any(|k| k.goal.is_some()) {
        goal_knees(page, run);
        return;
    }
    let rows: Vec<Vec<String>> = run
        .knees
        .iter()
        .map(|k| {
            vec![
                k.size_bytes.to_string(),
                k.point.clone(),
                format!("{} %", k.loss_tolerance * 100.0),
                k.min_interval_us
                    .map_or_else(|| "–".into(), |v| format!("{v:.2} µs")),
                k.rate_pps.map_or_else(
                    || "none".into(),
                    |v| {
                        format!(
                            "{}{}",
                            if k.generator_limited { "≥ " } else { "" },
                            fmt::number(v)
                        )
                    },
                ),
                k.bits_per_s.map_or_else(
                    || "–".into(),
                    |b| format!("{:.3} / {:.3}", b / 1e9, b / f64::from(1u32 << 30)),
                ),
                k.trials.to_string(),
                if k.verified { "yes" } else { "no" }.into(),
                note_or_stopper(k),
            ]
        })
        .collect();
    grid_table(
        page,
        &[
            "size B",
            "point",
            "loss ≤",
            "interval",
            "rate pps",
            "Gbit/s / Gibit/s",
            "trials",
            "verified",
            "note, or what stopped it",
        ],
        &rows,
    );
    if run.parts.iter().any(|p| cycle(p).is_some()) {
        sweep_arrival_chart(page, run);
    } else {
        search_trial_charts(page, run);
    }
}

/// One trial (or sweep cycle) of a search or sweep: its id, size, the rate asked, what it sent
/// (UDP packets/s) or reached (TCP goodput, transactions/s), the figure its bound is on (loss,
/// retransmitted share, p99 round trip), and its top finding.
fn trial_row(p: &Run) -> Vec<String> {
    let r = p.results.as_ref();
    let top = p
        .findings
        .first()
        .map_or_else(String::new, |f| f.cause.to_string());
    let unpaced = || "unpaced".to_string();
    match p.workload.as_ref().map(|w| &w.params) {
        Some(Params::Tcp(t)) => vec![
            p.run_id.clone(),
            t.msg_size.to_string(),
            t.rate_per_flow_bps.map_or_else(unpaced, |v| {
                fmt::value(v * f64::from(t.flows.max(1)), Unit::BitsPerSecond)
            }),
            r.map_or_else(String::new, |r| {
                fmt::value(r.rx_app_bits_per_s, Unit::BitsPerSecond)
            }),
            r.and_then(|r| r.retransmit_ratio())
                .map_or_else(String::new, |v| format!("{:.4} %", v * 100.0)),
            top,
        ],
        Some(Params::Rr(q)) => vec![
            p.run_id.clone(),
            q.size.to_string(),
            q.rate_tps
                .map_or_else(unpaced, |v| format!("{} /s", fmt::number(v))),
            r.and_then(|r| r.transactions_per_s)
                .map_or_else(String::new, |v| format!("{} /s", fmt::number(v))),
            r.and_then(|r| r.p99_round_trip_s())
                .map_or_else(String::new, |v| fmt::value(v * 1e6, Unit::Microseconds)),
            top,
        ],
        _ => vec![
            p.run_id.clone(),
            search_trial(p)
                .map(|t| t.frame_bytes)
                .or_else(|| cycle(p).map(|c| c.payload_bytes))
                .map_or_else(String::new, |v| format!("{v}")),
            search_trial(p)
                .and_then(|t| t.rate_pps)
                .map(fmt::number)
                .or_else(|| cycle(p).map(|c| format!("{:.2} µs", c.interval_ns / 1e3)))
                .unwrap_or_else(unpaced),
            r.map_or_else(String::new, |r| format!("{} pps", fmt::number(r.tx_pps))),
            arrived_pct(p).map_or_else(String::new, |(app, _)| format!("{:.4} %", 100.0 - app)),
            top,
        ],
    }
}

/// A TCP or request/response search's answers: per bound the rate found in its unit, the
/// trial that verified it; then each trial's rate and the figure the bound is on, in order,
/// with the bounds drawn across.
fn goal_knees(page: &mut String, run: &Run) {
    let rows: Vec<Vec<String>> = run
        .knees
        .iter()
        .map(|k| {
            vec![
                k.size_bytes.to_string(),
                crate::tables::knee_bound(k),
                crate::tables::knee_answer(k),
                k.trials.to_string(),
                k.goal
                    .as_ref()
                    .and_then(|g| g.verified_by.clone())
                    .unwrap_or_else(|| "none".into()),
                note_or_stopper(k),
            ]
        })
        .collect();
    grid_table(
        page,
        &[
            "size B",
            "bound",
            "rate found",
            "trials",
            "verified by",
            "note, or what stopped it",
        ],
        &rows,
    );
    goal_charts(page, run);
}

/// A TCP or request/response search's trials in order: the rate each reached, and the figure
/// its bound is on with each bound drawn across.
fn goal_charts(page: &mut String, run: &Run) {
    use netceil_model::SearchBound;
    let bounds: Vec<SearchBound> = run
        .knees
        .iter()
        .filter_map(|k| Some(k.goal.as_ref()?.bound))
        .collect();
    let tcp = matches!(bounds.first(), Some(SearchBound::Retransmits { .. }));
    let trials: Vec<&Run> = run
        .parts
        .iter()
        .filter(|p| {
            matches!(
                p.workload.as_ref().map(|w| &w.params),
                Some(Params::Tcp(_) | Params::Rr(_))
            )
        })
        .collect();
    let x = |i: usize| (i + 1) as f64;
    // One figure of each trial's results, per trial in order.
    let per_trial =
        |label: &str, color: usize, v: &dyn Fn(&netceil_model::Results) -> Option<f64>| Line {
            label: label.into(),
            points: trials
                .iter()
                .enumerate()
                .map(|(i, p)| (x(i), p.results.as_ref().and_then(v)))
                .collect(),
            dashed: false,
            color: charts::color(color),
        };
    let reached = if tcp {
        per_trial("goodput read", 0, &|r| Some(r.rx_app_bits_per_s))
    } else {
        per_trial("transactions answered", 0, &|r| r.transactions_per_s)
    };
    figure(
        page,
        charts::time_chart(&TimeChart {
            title: "Trials: the rate each one reached, in order".into(),
            x_desc: "trial".into(),
            left: Axis {
                desc: if tcp {
                    axis_desc("goodput", Unit::BitsPerSecond)
                } else {
                    axis_desc("transactions", Unit::PerSecond)
                },
                lines: vec![reached],
                max: None,
            },
        }),
        "The search converging: what each trial reached at the rate it asked.",
    );
    // The figure each bound is on, per trial, and each bound as a dashed line across.
    let scale = if tcp { 100.0 } else { 1e6 };
    let mut lines = vec![if tcp {
        per_trial("retransmitted", 1, &|r| Some(r.retransmit_ratio()? * scale))
    } else {
        per_trial("p99 round trip", 1, &|r| {
            Some(r.p99_round_trip_s()? * scale)
        })
    }];
    let goals = run.knees.iter().filter(|k| k.goal.is_some());
    for (i, (b, k)) in bounds.iter().zip(goals).enumerate() {
        let v = match *b {
            SearchBound::Retransmits { max_ratio } => max_ratio,
            SearchBound::P99 { max_s } => max_s,
        } * scale;
        lines.push(Line {
            label: format!("bound {}", crate::tables::knee_bound(k)),
            points: (0..trials.len()).map(|t| (x(t), Some(v))).collect(),
            dashed: true,
            color: charts::color(2 + i),
        });
    }
    figure(
        page,
        charts::time_chart(&TimeChart {
            title: if tcp {
                "Trials: the share of segments retransmitted"
            } else {
                "Trials: the 99th-percentile round trip"
            }
            .into(),
            x_desc: "trial".into(),
            left: Axis {
                desc: if tcp {
                    "retransmitted [%]".into()
                } else {
                    axis_desc("p99", Unit::Microseconds)
                },
                lines,
                max: None,
            },
        }),
        if tcp {
            "Each trial's retransmitted segments over segments sent (TCP_INFO), against each budget."
        } else {
            "Each trial's p99 round trip, from each request's intended send, against each bound."
        },
    );
}

/// A sweep's curves: per size, the share of each cycle that arrived against the interval.
fn sweep_arrival_chart(page: &mut String, run: &Run) {
    let mut sizes: Vec<f64> = run
        .parts
        .iter()
        .filter_map(|p| cycle(p).map(|c| c.payload_bytes as f64))
        .collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    let mut lines = Vec::new();
    for (si, size) in sizes.iter().enumerate() {
        for (pi, point) in ["kernel", "app"].iter().enumerate() {
            let mut pts: Vec<(f64, Option<f64>)> = run
                .parts
                .iter()
                .filter(|p| cycle(p).map(|c| c.payload_bytes as f64) == Some(*size))
                .filter_map(|p| {
                    let (app, kernel) = arrived_pct(p)?;
                    Some((
                        cycle(p)?.interval_ns / 1e3,
                        Some(if pi == 0 { kernel } else { app }),
                    ))
                })
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            lines.push(Line {
                label: format!("{size} B {point}"),
                points: pts,
                dashed: pi == 0,
                color: charts::color(si),
            });
        }
    }
    let chart = TimeChart {
        title: "Packets that arrived, against the interval between them".into(),
        x_desc: "interval between packets [µs]".into(),
        left: Axis {
            desc: "arrived [%]".into(),
            lines,
            max: Some(100.0),
        },
    };
    figure(
        page,
        charts::time_chart(&chart),
        "Per size, the share of each cycle that reached the socket (kernel, dashed) and that the receiver read (app, solid); the knee is the first interval at 100 %.",
    );
}

/// A search's convergence: each trial's offered rate and loss, per frame size.
fn search_trial_charts(page: &mut String, run: &Run) {
    let mut frames: Vec<f64> = run
        .parts
        .iter()
        .filter_map(|p| search_trial(p).map(|t| t.frame_bytes as f64))
        .collect();
    frames.sort_by(f64::total_cmp);
    frames.dedup();
    let trial_lines = |pick: &dyn Fn(&Run) -> Option<f64>| -> Vec<Line> {
        frames
            .iter()
            .enumerate()
            .map(|(i, f)| Line {
                label: format!("{f} B"),
                points: run
                    .parts
                    .iter()
                    .filter(|p| search_trial(p).map(|t| t.frame_bytes as f64) == Some(*f))
                    .enumerate()
                    .map(|(k, p)| ((k + 1) as f64, pick(p)))
                    .collect(),
                dashed: false,
                color: charts::color(i),
            })
            .collect()
    };
    let rates = TimeChart {
        title: "Trials: the rate each one offered, in order".into(),
        x_desc: "trial".into(),
        left: Axis {
            desc: axis_desc("offered", Unit::PacketsPerSecond),
            lines: trial_lines(&|p| p.results.as_ref().map(|r| r.tx_pps)),
            max: None,
        },
    };
    figure(
        page,
        charts::time_chart(&rates),
        "The search converging: each trial's offered rate, per frame size.",
    );
    let losses = TimeChart {
        title: "Trials: the loss each one saw".into(),
        x_desc: "trial".into(),
        left: Axis {
            desc: "lost [%]".into(),
            lines: trial_lines(&|p| arrived_pct(p).map(|(app, _)| 100.0 - app)),
            max: None,
        },
    };
    figure(
        page,
        charts::time_chart(&losses),
        "Loss at the application in each trial.",
    );
}

fn write_run(page: &mut String, run: &Run, anchor: &str, level: usize) {
    let hn = level.min(6);
    let sub = (level + 1).min(6);
    let class = if level > 2 { "run part" } else { "run" };
    let _ = writeln!(
        page,
        "<section class=\"{class}\" id=\"{}\">",
        escape(anchor)
    );
    let incomplete = if run.meta.complete {
        String::new()
    } else {
        "<span class=\"badge warn\">incomplete</span>".into()
    };
    let _ = writeln!(
        page,
        "<h{hn}>Run <code>{}</code><span class=\"badge\">{}</span>{incomplete}</h{hn}>",
        escape(&run.run_id),
        escape(summary::kind(run))
    );
    // What a reader came for, in order: the verdict and its evidence, what ran, the ceiling
    // it reached, then the charts that show it. Everything else follows.
    write_findings(page, run, sub);
    write_workload(page, run);
    write_ceiling(page, run, sub);
    write_knees(page, run, sub);
    write_series_charts(page, run, sub);
    write_delivery(page, run, sub);
    write_latency(page, run, sub);

    if let Some(r) = &run.results {
        let _ = writeln!(page, "<h{sub}>All results</h{sub}>");
        page.push_str("<div class=\"grid\"><div>\n");
        kv_table(page, &summary::results(r));
        page.push_str("</div><div>\n");
        kv_table(page, &summary::generator(r));
        page.push_str("</div></div>\n");
    }
    write_far_end(page, run, sub);
    write_flows(page, run, sub);
    write_locks(page, run, sub);
    write_about(page, run, sub);
    write_environment(page, run, sub);

    let notes = summary::notes(run);
    if !notes.is_empty() {
        let _ = writeln!(page, "<h{sub}>Notes</h{sub}>\n<ul>");
        for n in notes {
            let _ = writeln!(page, "<li>{}</li>", escape(&n));
        }
        page.push_str("</ul>\n");
    }

    if !run.knees.is_empty() && !run.parts.is_empty() {
        // A search's trials or a sweep's cycles: one line each, not a section each.
        let _ = writeln!(page, "<h{sub}>Trials</h{sub}>");
        let rows: Vec<Vec<String>> = run.parts.iter().map(trial_row).collect();
        let figure_col = match run.knees.iter().find_map(|k| k.goal.as_ref()) {
            Some(g) => match g.bound {
                netceil_model::SearchBound::Retransmits { .. } => "retransmitted",
                netceil_model::SearchBound::P99 { .. } => "p99 round trip",
            },
            None => "lost",
        };
        grid_table(
            page,
            &[
                "trial",
                "size B",
                "asked",
                "sent or reached",
                figure_col,
                "top finding",
            ],
            &rows,
        );
    } else if !run.parts.is_empty() {
        let _ = writeln!(
            page,
            "<h{sub}>Parts</h{sub}>\n<p class=\"muted\">This is a suite run: each part below \
             has its own results and series.</p>"
        );
        for (i, part) in run.parts.iter().enumerate() {
            write_run(page, part, &format!("{anchor}-part-{}", i + 1), level + 1);
        }
    }
    page.push_str("</section>\n");
}

/// The workload in words, with the raw parameters folded away below it.
fn write_workload(page: &mut String, run: &Run) {
    if let Some(words) = words::workload(run) {
        let _ = writeln!(
            page,
            "<p class=\"workload\"><strong>Workload:</strong> {}.</p>",
            escape(&words)
        );
    }
}

/// The headline figures: what arrived, what was lost, how long answers took.
fn write_ceiling(page: &mut String, run: &Run, hn: usize) {
    let Some(r) = &run.results else { return };
    let mut rows = Vec::new();
    let counted = summary::counts_packets(r);
    let rate = |bits: f64, pps: f64| {
        if counted {
            format!(
                "{} ({})",
                fmt::value(bits, Unit::BitsPerSecond),
                fmt::value(pps, Unit::PacketsPerSecond)
            )
        } else {
            fmt::value(bits, Unit::BitsPerSecond)
        }
    };
    rows.push(Row {
        label: "received by the application".into(),
        value: rate(r.rx_app_bits_per_s, r.rx_app_pps),
    });
    rows.push(Row {
        label: "sent".into(),
        value: rate(r.tx_bits_per_s, r.tx_pps),
    });
    if counted {
        rows.push(Row {
            label: "lost".into(),
            value: summary::loss_text(r),
        });
    }
    if let Some(t) = r.transactions_per_s {
        rows.push(Row {
            label: "transactions".into(),
            value: format!("{}/s", fmt::number(t)),
        });
    }
    if let Some(l) = &r.latency_us {
        rows.push(Row {
            label: "latency p50 / p99".into(),
            value: format!(
                "{} / {}",
                fmt::value(l.p50, Unit::Microseconds),
                fmt::value(l.p99, Unit::Microseconds)
            ),
        });
    }
    rows.push(Row {
        label: "measured over".into(),
        value: fmt::value(r.duration_s, Unit::Seconds),
    });
    let _ = writeln!(page, "<h{hn}>Ceiling</h{hn}>");
    kv_table(page, &rows);
}

/// Where the run came from and the parameters it ran with, as stored.
fn write_about(page: &mut String, run: &Run, hn: usize) {
    let _ = writeln!(page, "<h{hn}>About this run</h{hn}>");
    kv_table(page, &summary::overview(run));
    let params = summary::workload_params(run);
    if !params.is_empty() {
        page.push_str("<details><summary>The workload's parameters, as stored</summary>\n");
        kv_table(page, &params);
        page.push_str("</details>\n");
    }
}

/// The far end of a `--to` run: its counts, CPU per core beside this end's, and both ends'
/// series on one time axis.
fn write_far_end(page: &mut String, run: &Run, hn: usize) {
    let (Some(r), Some(f)) = (&run.results, far::of(run)) else {
        return;
    };
    let _ = writeln!(page, "<h{hn}>Far end</h{hn}>");
    page.push_str("<div class=\"grid\"><div>\n");
    kv_table(page, &far::rows(f, r));
    page.push_str("</div><div>\n");
    grid_table(page, &far::CPU_HEADERS, &far::cpu_table(run, f));
    page.push_str("</div></div>\n");
    figure(
        page,
        charts::panel_chart(&far::chart(run, f)),
        &far::chart_caption(f),
    );
}

/// Chooses the metric of a series an overlay chart shows.
type PickMetric = fn(&Series) -> Option<&Metric>;

/// Headline figures of every run in one table, then overlays of the shared metrics.
fn write_overview(page: &mut String, runs: &[Run]) {
    page.push_str("<section id=\"overview\"><h2>All runs</h2>\n");
    page.push_str("<h3 class=\"verdict\">Verdicts</h3>\n<ul class=\"verdicts\">\n");
    for run in runs {
        let verdict = run.findings.first().map_or_else(
            || "no finding recorded".to_string(),
            |f| format!("{} ({})", f.summary, f.confidence_text()),
        );
        let what = words::workload(run).unwrap_or_else(|| summary::kind_or_source(run));
        let _ = writeln!(
            page,
            "<li><code>{}</code> <span class=\"muted\">{}</span><br>{}</li>",
            escape(&short_name(run)),
            escape(&what),
            escape(&verdict)
        );
    }
    page.push_str("</ul>\n");
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|run| {
            let r = run.results.as_ref();
            vec![
                short_name(run),
                summary::kind(run).to_string(),
                r.map_or(fmt::MISSING.into(), |r| {
                    fmt::value(r.rx_app_bits_per_s, Unit::BitsPerSecond)
                }),
                r.map_or(fmt::MISSING.into(), |r| {
                    fmt::value(r.rx_app_pps, Unit::PacketsPerSecond)
                }),
                r.and_then(summary::loss_pct)
                    .map_or(fmt::MISSING.into(), |p| fmt::value(p, Unit::Percent)),
                r.and_then(|r| r.latency_us.as_ref())
                    .map_or(fmt::MISSING.into(), |l| {
                        fmt::value(l.p99, Unit::Microseconds)
                    }),
                run.findings.len().to_string(),
            ]
        })
        .collect();
    grid_table(
        page,
        &[
            "run",
            "workload",
            "throughput",
            "packets",
            "lost",
            "latency p99",
            "findings",
        ],
        &rows,
    );

    let overlays: [(&str, &str, Option<f64>, PickMetric); 6] = [
        (
            "throughput",
            Unit::BitsPerSecond.human_symbol(),
            None,
            view::throughput_metric,
        ),
        ("context switches", "cs/s", None, |s| s.total(n::CS_PER_S)),
        ("interrupts", "interrupts/s", None, |s| {
            s.total(n::INTR_PER_S)
        }),
        ("NET_RX softirqs", "softirqs/s", None, |s| {
            s.total(n::SOFTIRQ_NET_RX_PER_S)
        }),
        ("CPU busy, all CPUs", "%", Some(100.0), |s| {
            s.total(n::CPU_BUSY_PCT)
        }),
        ("mean request/response latency", "µs", None, |s| {
            s.total(n::LOAD_MEAN_LATENCY_US)
        }),
    ];
    let mut panels = Vec::new();
    for (name, desc, max, pick) in overlays {
        let picked: Vec<(usize, &Run, &Metric)> = runs
            .iter()
            .enumerate()
            .filter_map(|(i, run)| pick(&run.series).map(|m| (i, run, m)))
            .collect();
        if picked.len() < 2 {
            continue;
        }
        // Each run's metric in words, once: "lo: received, bit/s / veth0: received, bit/s".
        let mut measured: Vec<String> = Vec::new();
        for (_, _, m) in &picked {
            let w = words::metric(&m.id, m.unit);
            if !measured.contains(&w) {
                measured.push(w);
            }
        }
        let name = if measured.len() == 1 {
            name.to_string()
        } else {
            format!("{name}: {}", measured.join(" / "))
        };
        let lines = picked
            .iter()
            .map(|(i, run, m)| metric_line(&run.series, m, short_name(run), *i))
            .collect();
        panels.push(charts::Panel {
            name,
            desc: desc.into(),
            lines,
            max,
        });
    }
    figure(
        page,
        charts::panel_chart(&charts::PanelChart {
            title: "All runs, each on its own time axis from its start".into(),
            x_desc: TIME_DESC.into(),
            panels,
        }),
        "One colour per run in every panel; each panel has its own scale.",
    );
    let latencies: Vec<(String, &LatencySummary, usize)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, run)| {
            let l = run.results.as_ref()?.latency_us.as_ref()?;
            Some((short_name(run), l, i))
        })
        .collect();
    if latencies.len() > 1 {
        figure(page, latency_cdf(&latencies), CDF_CAPTION);
    }
    write_repeats(page, runs);
    page.push_str("</section>\n");
}

/// Runs that ran the same workload, grouped in the order they were given: repeats.
fn repeat_groups(runs: &[Run]) -> Vec<Vec<&Run>> {
    let mut groups: Vec<Vec<&Run>> = Vec::new();
    for run in runs
        .iter()
        .filter(|r| r.workload.is_some() && r.results.is_some())
    {
        match groups.iter_mut().find(|g| g[0].workload == run.workload) {
            Some(g) => g.push(run),
            None => groups.push(vec![run]),
        }
    }
    groups.retain(|g| g.len() > 1);
    groups
}

/// Box plots over repeats: per workload run more than once, the spread of its runs'
/// throughput (and of their p99 latency where measured).
fn write_repeats(page: &mut String, runs: &[Run]) {
    let groups = repeat_groups(runs);
    if groups.is_empty() {
        return;
    }
    page.push_str("<h3>Repeats</h3>\n");
    let boxes = |pick: &dyn Fn(&Run) -> Option<f64>| -> Vec<charts::BoxStats> {
        groups
            .iter()
            .enumerate()
            .filter_map(|(i, g)| {
                let values: Vec<f64> = g.iter().filter_map(|r| pick(r)).collect();
                (values.len() > 1)
                    .then(|| charts::BoxStats::of(format!("workload {}", i + 1), &values))
                    .flatten()
            })
            .collect()
    };
    let throughput = boxes(&|r| r.results.as_ref().map(|r| r.rx_app_bits_per_s));
    let p99 = boxes(&|r| r.results.as_ref()?.latency_us.as_ref().map(|l| l.p99));
    let rows: Vec<Vec<String>> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let b = throughput
                .iter()
                .find(|b| b.label == format!("workload {}", i + 1));
            let bits = |v: f64| fmt::value(v, Unit::BitsPerSecond);
            vec![
                format!(
                    "workload {}: {}",
                    i + 1,
                    words::workload(g[0]).unwrap_or_else(|| summary::kind(g[0]).into())
                ),
                g.len().to_string(),
                b.map_or(fmt::MISSING.into(), |b| bits(b.median)),
                b.map_or(fmt::MISSING.into(), |b| {
                    format!("{} – {}", bits(b.q1), bits(b.q3))
                }),
                b.map_or(fmt::MISSING.into(), |b| {
                    format!(
                        "{} – {}",
                        bits(b.values[0]),
                        bits(b.values[b.values.len() - 1])
                    )
                }),
            ]
        })
        .collect();
    grid_table(
        page,
        &["workload", "runs", "median received", "quartiles", "range"],
        &rows,
    );
    if !throughput.is_empty() {
        figure(
            page,
            Some(charts::box_chart(
                "Received by the application, over repeats",
                &axis_desc("received", Unit::BitsPerSecond),
                &throughput,
            )),
            "Per workload run more than once: the box spans the quartiles, the black bar is \
             the median, the whiskers reach the furthest run within 1.5 × the box, and each \
             dot is one run.",
        );
    }
    if !p99.is_empty() {
        figure(
            page,
            Some(charts::box_chart(
                "Latency p99, over repeats",
                &axis_desc("p99 latency", Unit::Microseconds),
                &p99,
            )),
            "As above, for each run's 99th-percentile request/response latency.",
        );
    }
}

fn write_comparison(page: &mut String, a: &Run, b: &Run) {
    let c = compare::compare(a, b);
    page.push_str("<section id=\"comparison\"><h2>A/B comparison</h2>\n");
    if let Some(why) = &c.unlike {
        let _ = writeln!(
            page,
            "<p class=\"warning\"><strong>Warning:</strong> {}.</p>",
            escape(why)
        );
    }
    let _ = writeln!(
        page,
        "<p>A = <code>{}</code>, B = <code>{}</code>.</p><ul>",
        escape(&c.a.run_id),
        escape(&c.b.run_id)
    );
    for (name, s) in [("A", &c.a), ("B", &c.b)] {
        let _ = writeln!(
            page,
            "<li>{name} load phase: {} of {} intervals; {}</li>",
            s.load_phase.rows,
            s.load_phase.total_rows,
            escape(&s.load_phase.rule)
        );
    }
    page.push_str("</ul>\n");
    let mut figs = compare_render::figure_rows(&c.headline);
    figs.extend(compare_render::figure_rows(&c.normalized));
    let figs: Vec<Vec<String>> = figs.into_iter().map(Vec::from).collect();
    grid_table(page, &["figure", "A", "B", "B vs A"], &figs);
    if !c.distributions.is_empty() {
        page.push_str("<h3>Per-interval distributions over the load phase</h3>\n");
        let rows: Vec<Vec<String>> = compare_render::distribution_rows(&c.distributions)
            .into_iter()
            .map(Vec::from)
            .collect();
        grid_table(
            page,
            &["metric", "run", "n", "median", "p10", "p90", "stddev", "CV"],
            &rows,
        );
    }
    if !c.differences.is_empty() {
        page.push_str("<h3>Difference B − A of the per-interval means</h3>\n");
        let rows: Vec<Vec<String>> = compare_render::difference_rows(&c.differences)
            .into_iter()
            .map(Vec::from)
            .collect();
        grid_table(page, &compare_render::DIFFERENCE_HEADERS, &rows);
        let _ = writeln!(
            page,
            "<p class=\"muted\">Method: {} Significant: p &lt; {}.</p>",
            escape(&c.method),
            c.alpha
        );
    }
    if !c.summary.is_empty() {
        page.push_str("<ul>");
        for s in &c.summary {
            let _ = write!(page, "<li>{}</li>", escape(s));
        }
        page.push_str("</ul>\n");
    }
    page.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_everything_that_matters() {
        assert_eq!(
            escape(r#"<script>"a" & 'b'</script>"#),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;"
        );
    }
}
