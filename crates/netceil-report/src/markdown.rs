//! A Run as markdown: for `export --format markdown`, issue comments and lab notebooks.
//!
//! Markdown has no charts, so the series is summarized as mean and maximum of the metrics a
//! reader looks at first; the HTML report has the pictures. Free text (notes, labels, finding
//! summaries) is escaped so that a `<` or `|` in it cannot break a table or inject HTML.

use std::fmt::Write as _;

use netceil_model::{Finding, Run, Unit};

use crate::far;
use crate::summary::{self, Row};
use netceil_model::fmt;

/// Escapes text for markdown: characters that start markup or end a table cell are
/// backslash-escaped, and newlines become spaces so a cell stays on its line.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\\' | '`' | '*' | '<' | '>' | '[' | ']' | '|' | '#' => {
                out.push('\\');
                out.push(c);
            }
            // Underscores inside words (metric names) never start emphasis; only escape
            // those at a word boundary.
            '_' => {
                let inner = i > 0
                    && i + 1 < chars.len()
                    && chars[i - 1].is_alphanumeric()
                    && chars[i + 1].is_alphanumeric();
                if !inner {
                    out.push('\\');
                }
                out.push('_');
            }
            '\r' => {}
            '\n' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// Inline code, safe for any content (the fence is longer than any backtick run inside).
pub fn code(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{}{pad}{fence}", text.replace('\n', " "))
}

fn table(out: &mut String, headers: &[&str], rows: &[Vec<String>]) {
    let _ = writeln!(out, "| {} |", headers.join(" | "));
    let _ = writeln!(
        out,
        "|{}",
        headers.iter().map(|_| "---|").collect::<String>()
    );
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out.push('\n');
}

fn rows_table(out: &mut String, rows: &[Row]) {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| vec![escape(&r.label), escape(&r.value)])
        .collect();
    table(out, &["", "value"], &cells);
}

/// The run's summary, results, findings and notes as a markdown document.
pub fn markdown(run: &Run) -> String {
    let mut out = String::new();
    write_run(&mut out, run, 1);
    out
}

fn heading(out: &mut String, level: usize, text: &str) {
    let _ = writeln!(out, "{} {}\n", "#".repeat(level.min(6)), text);
}

fn write_run(out: &mut String, run: &Run, level: usize) {
    heading(out, level, &format!("netceil run {}", code(&run.run_id)));
    rows_table(out, &summary::overview(run));

    let params = summary::workload_params(run);
    if !params.is_empty() {
        heading(out, level + 1, "Workload");
        rows_table(out, &params);
    }

    if let Some(r) = &run.results {
        heading(out, level + 1, "Results");
        rows_table(out, &summary::results(r));

        if summary::counts_packets(r) {
            write_delivery(out, r, level + 1);
        }

        if let Some(l) = &r.latency_us {
            heading(out, level + 1, "Latency");
            let cells = vec![[l.min, l.p50, l.p90, l.p99, l.p999, l.max, l.mean]
                .iter()
                .map(|v| fmt::value(*v, Unit::Microseconds))
                .chain(std::iter::once(fmt::count(l.count)))
                .collect()];
            table(
                out,
                &[
                    "min", "p50", "p90", "p99", "p99.9", "max", "mean", "samples",
                ],
                &cells,
            );
        }

        if !r.flows.is_empty() {
            heading(out, level + 1, "Flows");
            table(
                out,
                &["flow", "bytes", "throughput", "retransmits", "rtt"],
                &summary::flows(r),
            );
        }

        heading(out, level + 1, "Generator");
        rows_table(out, &summary::generator(r));

        if let Some(f) = far::of(run) {
            heading(out, level + 1, "Far end");
            rows_table(out, &far::rows(f, r));
            table(out, &far::CPU_HEADERS, &far::cpu_table(run, f));
        }
    }

    let key = summary::key_metrics(run);
    if !key.is_empty() {
        heading(out, level + 1, "Series (whole run)");
        let cells: Vec<Vec<String>> = key
            .into_iter()
            .map(|(id, unit, mean, max)| {
                vec![
                    code(&id),
                    fmt::opt_value(mean, unit),
                    fmt::opt_value(max, unit),
                ]
            })
            .collect();
        table(out, &["metric", "mean", "max"], &cells);
    }

    heading(out, level + 1, "Environment");
    rows_table(out, &summary::environment(run));
    if !run.meta.host.nics.is_empty() {
        let cells: Vec<Vec<String>> = run
            .meta
            .host
            .nics
            .iter()
            .map(|nic| {
                vec![
                    escape(&nic.name),
                    escape(nic.driver.as_deref().unwrap_or(fmt::MISSING)),
                    nic.speed_mbit
                        .map_or(fmt::MISSING.into(), |s| format!("{s} Mbit/s")),
                    nic.mtu.map_or(fmt::MISSING.into(), |m| m.to_string()),
                    queues(nic.rx_queues, nic.tx_queues),
                ]
            })
            .collect();
        table(
            out,
            &["nic", "driver", "speed", "mtu", "queues rx/tx"],
            &cells,
        );
    }

    let locks = summary::locks(run);
    if !locks.is_empty() {
        heading(out, level + 1, "Locks (by total wait)");
        let cells: Vec<Vec<String>> = locks
            .iter()
            .map(|l| {
                vec![
                    escape(&l.lock.name),
                    escape(l.lock.caller.as_deref().unwrap_or(fmt::MISSING)),
                    fmt::count(l.lock.count),
                    fmt::opt_count(l.lock.contended),
                    fmt::value(l.lock.wait_total_s, Unit::Seconds),
                    fmt::opt_value(l.cpu_share_pct, Unit::Percent),
                    fmt::opt_value(l.mean_wait_s, Unit::Seconds),
                    fmt::opt_value(l.lock.wait_max_s, Unit::Seconds),
                    fmt::opt_value(l.lock.hold_total_s, Unit::Seconds),
                ]
            })
            .collect();
        table(
            out,
            &[
                "lock",
                "caller",
                "acquisitions",
                "contended",
                "wait total",
                "of all CPU time",
                "mean wait",
                "max wait",
                "hold total",
            ],
            &cells,
        );
    }

    write_findings_and_notes(out, run, level + 1);
    for part in &run.parts {
        write_run(out, part, level + 1);
    }
}

/// The run's findings (or that there are none yet) and its notes, under headings of `level`.
fn write_findings_and_notes(out: &mut String, run: &Run, level: usize) {
    heading(out, level, "Findings");
    if run.findings.is_empty() {
        out.push_str("None recorded (the analyzer fills these in).\n\n");
    } else {
        for (i, f) in run.findings.iter().enumerate() {
            write_finding(out, i + 1, f);
        }
    }

    let notes = summary::notes(run);
    if !notes.is_empty() {
        heading(out, level, "Notes");
        for n in notes {
            let _ = writeln!(out, "- {}", escape(&n));
        }
        out.push('\n');
    }
}

fn write_delivery(out: &mut String, r: &netceil_model::Results, level: usize) {
    heading(out, level, "Delivery: kernel vs application");
    let cells: Vec<Vec<String>> = summary::delivery(r)
        .into_iter()
        .map(|s| {
            vec![
                escape(&s.label),
                s.packets.map_or(fmt::MISSING.into(), fmt::signed_count),
                if s.machine_wide {
                    "machine-wide"
                } else {
                    "this workload"
                }
                .into(),
            ]
        })
        .collect();
    table(out, &["counted at", "packets", "scope"], &cells);
}

fn queues(rx: Option<u32>, tx: Option<u32>) -> String {
    let q = |v: Option<u32>| v.map_or(fmt::MISSING.into(), |v| v.to_string());
    format!("{}/{}", q(rx), q(tx))
}

fn write_finding(out: &mut String, number: usize, f: &Finding) {
    let _ = writeln!(
        out,
        "{number}. **{}** (cause {}, {})",
        escape(&f.summary),
        code(f.cause.as_str()),
        f.confidence_text()
    );
    for e in &f.evidence {
        let _ = writeln!(
            out,
            "   - evidence: {} ({}{})",
            escape(&e.text),
            code(&e.metric),
            summary::evidence_window(e)
        );
    }
    for a in &f.alternatives {
        let _ = writeln!(out, "   - considered: {}", escape(a));
    }
    for a in &f.advice {
        let caveat = a
            .caveat
            .as_deref()
            .map(|c| format!("; caveat: {}", escape(c)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "   - try {}: {}{caveat}",
            code(&a.knob),
            escape(&a.expect)
        );
    }
    if let Some(next) = &f.next {
        let _ = writeln!(out, "   - next: {}", escape(next));
    }
    for n in &f.not_checked {
        let _ = writeln!(out, "   - not checked: {}", escape(n));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_but_not_metric_names() {
        assert_eq!(escape("a <b> | c"), "a \\<b\\> \\| c");
        assert_eq!(escape("cs_per_s"), "cs_per_s");
        assert_eq!(escape("_x_"), "\\_x\\_");
        assert_eq!(escape("two\nlines"), "two lines");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x"), "`` `x ``");
    }
}
