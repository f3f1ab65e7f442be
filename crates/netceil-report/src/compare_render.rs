//! A [`Comparison`] as a terminal table (comfy-table) or as markdown. JSON is the
//! Comparison itself through serde.

use std::fmt::Write as _;

use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};

use crate::compare::{
    difference_value, figure_value, Comparison, Difference, DistributionRow, Figure, Side,
};
use crate::markdown::{code, escape};
use netceil_model::{fmt, Unit};

fn opt_figure(v: Option<f64>, unit: &str) -> String {
    v.map_or_else(|| fmt::MISSING.into(), |v| figure_value(v, unit))
}

fn change(f: &Figure) -> String {
    f.change_pct
        .map_or_else(|| fmt::MISSING.into(), |v| fmt::change(v, Unit::Percent))
}

fn side_line(name: &str, s: &Side) -> String {
    let labels = if s.labels.is_empty() {
        String::new()
    } else {
        format!(
            " [{}]",
            s.labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let started = s
        .started_utc
        .as_deref()
        .map(|t| format!(", {t}"))
        .unwrap_or_default();
    format!("{name}: {} ({}{started}){labels}", s.run_id, s.kind)
}

fn phase_line(name: &str, s: &Side) -> String {
    let p = &s.load_phase;
    let span = match (p.from_s, p.to_s) {
        (Some(a), Some(b)) => format!(", {}–{} s", fmt::number(a), fmt::number(b)),
        _ => String::new(),
    };
    format!(
        "{name} load phase: {} of {} intervals{span}; {}",
        p.rows, p.total_rows, p.rule
    )
}

/// Rows of the figures table: label, A, B, B vs A.
pub(crate) fn figure_rows(figs: &[Figure]) -> Vec<[String; 4]> {
    figs.iter()
        .map(|f| {
            [
                f.label.clone(),
                opt_figure(f.a, &f.unit),
                opt_figure(f.b, &f.unit),
                change(f),
            ]
        })
        .collect()
}

fn opt_stat(v: Option<f64>, unit: &str) -> String {
    opt_figure(v, unit)
}

/// Rows of the distribution table: metric, run, n, median, p10, p90, stddev, CV.
pub(crate) fn distribution_rows(rows: &[DistributionRow]) -> Vec<[String; 8]> {
    let mut out = Vec::new();
    for d in rows {
        for (name, dist) in [("A", &d.a), ("B", &d.b)] {
            let cells = match dist {
                Some(x) => [
                    d.label.clone(),
                    name.to_string(),
                    x.n.to_string(),
                    figure_value(x.median, &d.unit),
                    figure_value(x.p10, &d.unit),
                    figure_value(x.p90, &d.unit),
                    opt_stat(x.stddev, &d.unit),
                    x.cv.map_or_else(|| fmt::MISSING.into(), |c| format!("{c:.3}")),
                ],
                None => [
                    d.label.clone(),
                    name.to_string(),
                    "0".into(),
                    fmt::MISSING.into(),
                    fmt::MISSING.into(),
                    fmt::MISSING.into(),
                    fmt::MISSING.into(),
                    fmt::MISSING.into(),
                ],
            };
            out.push(cells);
        }
    }
    out
}

/// Rows of the difference table: metric, mean A, mean B, B − A, CI, p, significant.
pub(crate) fn difference_rows(rows: &[Difference]) -> Vec<[String; 7]> {
    rows.iter()
        .map(|d| match &d.test {
            Some(t) => [
                d.label.clone(),
                figure_value(t.mean_a, &d.unit),
                figure_value(t.mean_b, &d.unit),
                difference_value(t.difference, &d.unit),
                format!(
                    "[{}, {}]",
                    difference_value(t.ci_low, &d.unit),
                    difference_value(t.ci_high, &d.unit)
                ),
                crate::compare::p_value(t.p_value),
                if d.significant == Some(true) {
                    "yes"
                } else {
                    "no"
                }
                .into(),
            ],
            None => [
                d.label.clone(),
                fmt::MISSING.into(),
                fmt::MISSING.into(),
                fmt::MISSING.into(),
                fmt::MISSING.into(),
                fmt::MISSING.into(),
                d.no_test_reason.clone().unwrap_or_else(|| "no test".into()),
            ],
        })
        .collect()
}

/// The columns of the difference table, in every rendering.
pub(crate) const DIFFERENCE_HEADERS: [&str; 7] = [
    "metric",
    "mean A",
    "mean B",
    "B − A",
    "95 % CI",
    "p",
    "significant",
];

fn terminal_table<const N: usize>(headers: [&str; N], rows: &[[String; N]]) -> String {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(headers.iter().map(Cell::new));
    for r in rows {
        t.add_row(r.iter().enumerate().map(|(i, c)| {
            let cell = Cell::new(c);
            if i == 0 {
                cell
            } else {
                cell.set_alignment(CellAlignment::Right)
            }
        }));
    }
    t.to_string()
}

fn findings_lines(c: &Comparison) -> Vec<String> {
    let f = &c.findings;
    if f.only_a.is_empty() && f.only_b.is_empty() && f.both.is_empty() {
        return vec!["no findings in either run".into()];
    }
    let briefs = |v: &[crate::compare::FindingBrief]| {
        v.iter()
            .map(|f| format!("{} ({})", f.cause, f.summary))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let or_none = |text: String| {
        if text.is_empty() {
            "none".to_string()
        } else {
            text
        }
    };
    vec![
        format!("only in A: {}", or_none(briefs(&f.only_a))),
        format!("only in B: {}", or_none(briefs(&f.only_b))),
        format!("in both: {}", or_none(f.both.join(", "))),
    ]
}

/// The comparison for a terminal: who is A and B, then tables of figures, distributions
/// and differences, the method, the findings and notes.
/// One row per matched knee: the rate in its unit (≥ for a lower bound, "not verified" when
/// no full-length trial passed there), the worst figure seen there, and the change of rate.
fn knee_rows(c: &Comparison) -> Vec<[String; 6]> {
    let side = |k: &Option<netceil_model::Knee>| {
        k.as_ref()
            .map_or_else(|| "–".into(), crate::tables::knee_answer)
    };
    c.knees
        .iter()
        .map(|p| {
            let k = p.a.as_ref().or(p.b.as_ref());
            [
                p.size_bytes.to_string(),
                p.point.clone(),
                k.map(crate::tables::knee_bound).unwrap_or_default(),
                side(&p.a),
                side(&p.b),
                p.change_pct
                    .map_or_else(|| "–".into(), |v| format!("{v:+.1} %")),
            ]
        })
        .collect()
}

const KNEE_HEADERS: [&str; 6] = ["size B", "point", "bound", "A", "B", "B vs A"];

pub fn compare_table(c: &Comparison) -> String {
    let mut out = String::new();
    if let Some(why) = &c.unlike {
        let _ = writeln!(out, "warning: {why}\n");
    }
    if !c.knees.is_empty() {
        let _ = writeln!(out, "Knees (search or sweep answers)");
        let _ = writeln!(out, "{}\n", terminal_table(KNEE_HEADERS, &knee_rows(c)));
    }
    let _ = writeln!(out, "{}", side_line("A", &c.a));
    let _ = writeln!(out, "{}", side_line("B", &c.b));
    let _ = writeln!(out, "{}", phase_line("A", &c.a));
    let _ = writeln!(out, "{}\n", phase_line("B", &c.b));

    let mut figs = figure_rows(&c.headline);
    if !c.normalized.is_empty() {
        figs.push([
            "normalized, over the load phase:".into(),
            String::new(),
            String::new(),
            String::new(),
        ]);
        figs.extend(figure_rows(&c.normalized));
    }
    let _ = writeln!(
        out,
        "{}\n",
        terminal_table(["figure", "A", "B", "B vs A"], &figs)
    );

    if !c.distributions.is_empty() {
        let _ = writeln!(out, "Per-interval distributions over the load phase");
        let _ = writeln!(
            out,
            "{}\n",
            terminal_table(
                ["metric", "run", "n", "median", "p10", "p90", "stddev", "CV"],
                &distribution_rows(&c.distributions)
            )
        );
    }
    if !c.differences.is_empty() {
        let _ = writeln!(out, "Difference B − A of the per-interval means");
        let _ = writeln!(
            out,
            "{}",
            terminal_table(DIFFERENCE_HEADERS, &difference_rows(&c.differences))
        );
        let _ = writeln!(out, "method: {} Significant: p < {}.\n", c.method, c.alpha);
    }
    for s in &c.summary {
        let _ = writeln!(out, "- {s}");
    }
    if !c.summary.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(out, "Findings");
    for l in findings_lines(c) {
        let _ = writeln!(out, "  {l}");
    }
    if !c.notes.is_empty() {
        let _ = writeln!(out, "\nNotes");
        for n in &c.notes {
            let _ = writeln!(out, "  - {n}");
        }
    }
    out
}

fn md_table<const N: usize>(out: &mut String, headers: [&str; N], rows: &[[String; N]]) {
    let _ = writeln!(out, "| {} |", headers.join(" | "));
    let _ = writeln!(out, "|---|{}", (1..N).map(|_| "---:|").collect::<String>());
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| escape(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
}

/// The comparison as a markdown document.
pub fn compare_markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# netceil compare {} vs {}\n",
        code(&c.a.run_id),
        code(&c.b.run_id)
    );
    if let Some(why) = &c.unlike {
        let _ = writeln!(out, "> **Warning:** {why}.\n");
    }
    for (name, s) in [("A", &c.a), ("B", &c.b)] {
        let _ = writeln!(out, "- {}", escape(&side_line(name, s)));
    }
    for (name, s) in [("A", &c.a), ("B", &c.b)] {
        let _ = writeln!(out, "- {}", escape(&phase_line(name, s)));
    }
    out.push('\n');

    if !c.knees.is_empty() {
        let _ = writeln!(out, "## Knees\n");
        md_table(&mut out, KNEE_HEADERS, &knee_rows(c));
    }
    let _ = writeln!(out, "## Headline\n");
    md_table(
        &mut out,
        ["figure", "A", "B", "B vs A"],
        &figure_rows(&c.headline),
    );
    if !c.normalized.is_empty() {
        let _ = writeln!(out, "## Normalized, over the load phase\n");
        md_table(
            &mut out,
            ["figure", "A", "B", "B vs A"],
            &figure_rows(&c.normalized),
        );
    }
    if !c.distributions.is_empty() {
        let _ = writeln!(out, "## Per-interval distributions over the load phase\n");
        md_table(
            &mut out,
            ["metric", "run", "n", "median", "p10", "p90", "stddev", "CV"],
            &distribution_rows(&c.distributions),
        );
    }
    if !c.differences.is_empty() {
        let _ = writeln!(out, "## Difference B − A of the per-interval means\n");
        md_table(
            &mut out,
            DIFFERENCE_HEADERS,
            &difference_rows(&c.differences),
        );
        let _ = writeln!(
            out,
            "Method: {} Significant: p < {}.\n",
            escape(&c.method),
            c.alpha
        );
    }
    if !c.summary.is_empty() {
        let _ = writeln!(out, "## Summary\n");
        for s in &c.summary {
            let _ = writeln!(out, "- {}", escape(s));
        }
        out.push('\n');
    }
    let _ = writeln!(out, "## Findings\n");
    for l in findings_lines(c) {
        let _ = writeln!(out, "- {}", escape(&l));
    }
    out.push('\n');
    if !c.notes.is_empty() {
        let _ = writeln!(out, "## Notes\n");
        for n in &c.notes {
            let _ = writeln!(out, "- {}", escape(n));
        }
        out.push('\n');
    }
    out
}
