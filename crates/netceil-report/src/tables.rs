//! The tables the planners' runs end with: a search's knees (`netceil search udp|tcp|rr`), the UDP
//! size × interval sweep's (`sweep udp`) and the TCP flows sweep's steps (`sweep tcp`).

use netceil_model::params::{Params, SearchKind};
use netceil_model::{fmt, Knee, KneeGoal, Run, SearchBound, Unit};

/// A knee's throughput in Gbit/s (10^9) and Gibit/s (2^30), three decimals; `-` for none.
fn gbit_gibit(bits_per_s: Option<f64>) -> (String, String) {
    match bits_per_s {
        Some(b) => (
            format!("{:.3}", b / 1e9),
            format!("{:.3}", b / (1u64 << 30) as f64),
        ),
        None => (fmt::MISSING.into(), fmt::MISSING.into()),
    }
}

/// The knee table: per frame size and tolerance, the rate, its throughput in both units,
/// the loss seen there, and what stopped it.
pub fn search(run: &Run) -> String {
    if let Some(kind) = goal_search(run) {
        return goal_table(run, kind);
    }
    let mut s = String::new();
    s.push_str(
        "frame B  loss ≤     rate          Gbit/s   Gibit/s  loss seen    trials  verified\n",
    );
    for k in &run.knees {
        let rate = k
            .rate_pps
            .map_or_else(|| "none".into(), |v| fmt::value(v, Unit::PacketsPerSecond));
        let (gbit, gibit) = gbit_gibit(k.bits_per_s);
        let seen = k
            .loss_ratio
            .map_or_else(|| "-".into(), |l| format!("{:.4} %", l * 100.0));
        s.push_str(&format!(
            "{:>7}  {:>6}  {:>13}{}  {:>8}  {:>8}  {:>9}  {:>6}  {}\n",
            k.size_bytes,
            // Rounded past the float's noise: 0.7, not 0.7000000000000001.
            format!("{} %", (k.loss_tolerance * 100.0 * 1e6).round() / 1e6),
            rate,
            if k.generator_limited { "≥" } else { " " },
            gbit,
            gibit,
            seen,
            k.trials,
            if k.verified { "yes" } else { "no" }
        ));
        if let Some(n) = &k.note {
            s.push_str(&format!("         note: {n}\n"));
        }
        if let Some(b) = &k.stopped_by {
            s.push_str(&format!("         above it: {b}\n"));
        }
    }
    s.push_str("Gbit/s = 10^9 bit/s, Gibit/s = 2^30 bit/s, of Ethernet frames (RFC 2544 frame size × 8 × rate); ≥: the generator could not offer more, a lower bound\n");
    s
}

/// A knee's bound in words: `loss ≤ 0.1 %` (UDP), `retrans ≤ 0 %` (TCP), `p99 ≤ 200 µs` (rr).
pub(crate) fn knee_bound(k: &Knee) -> String {
    match &k.goal {
        None => format!(
            "loss ≤ {} %",
            (k.loss_tolerance * 100.0 * 1e6).round() / 1e6
        ),
        Some(g) => match g.bound {
            SearchBound::Retransmits { max_ratio } => {
                format!("retrans ≤ {}", bound_words(GoalKind::Tcp, max_ratio))
            }
            SearchBound::P99 { max_s } => format!("p99 ≤ {}", bound_words(GoalKind::Rr, max_s)),
        },
    }
}

/// A knee's answer: packets/s for a UDP knee, the goal's rate in its unit otherwise.
pub(crate) fn knee_rate(k: &Knee) -> Option<f64> {
    match &k.goal {
        None => k.rate_pps,
        Some(g) => g.rate,
    }
}

/// A knee's answer in words with its unit, `≥` when the generator could not offer more, the
/// worst figure seen there, and `(not verified)` when no full-length trial passed at it.
pub(crate) fn knee_answer(k: &Knee) -> String {
    let lower = if k.generator_limited { "≥ " } else { "" };
    let verified = if k.verified { "" } else { " (not verified)" };
    match &k.goal {
        None => match k.rate_pps {
            None => "none".into(),
            Some(r) => format!(
                "{lower}{}{}{verified}",
                fmt::value(r, Unit::PacketsPerSecond),
                k.loss_ratio
                    .map(|l| format!(", worst loss seen {:.4} %", l * 100.0))
                    .unwrap_or_default(),
            ),
        },
        Some(g) => {
            let kind = GoalKind::of(g);
            let (_, rate, seen) = goal_row(kind, g);
            if g.rate.is_none() {
                return rate;
            }
            let what = match kind {
                GoalKind::Tcp => "retrans",
                GoalKind::Rr => "p99",
            };
            let seen = g
                .seen
                .map(|_| format!(", worst {what} seen {seen}"))
                .unwrap_or_default();
            format!("{lower}{rate}{seen}{verified}")
        }
    }
}

/// What a run's knees are rates of: UDP packets, TCP goodput or transactions; `None` for a
/// run that is not a search or sweep.
pub(crate) fn knee_subject(run: &Run) -> Option<&'static str> {
    match goal_search(run) {
        Some(GoalKind::Tcp) => Some("TCP goodput within a retransmit budget"),
        Some(GoalKind::Rr) => Some("request/response rate within a p99 bound"),
        None if !run.knees.is_empty()
            || matches!(
                run.workload.as_ref().map(|w| &w.params),
                Some(Params::Search(_) | Params::Sweep(_))
            ) =>
        {
            Some("UDP packet rate within a loss tolerance")
        }
        None => None,
    }
}

/// The kind of a TCP or request/response search; `None` for a UDP one (or no search).
fn goal_search(run: &Run) -> Option<GoalKind> {
    if run.knees.iter().any(|k| k.goal.is_some()) {
        return run.knees.iter().find_map(|k| match k.goal.as_ref()?.bound {
            SearchBound::Retransmits { .. } => Some(GoalKind::Tcp),
            SearchBound::P99 { .. } => Some(GoalKind::Rr),
        });
    }
    match &run.workload.as_ref()?.params {
        Params::Search(p) => match p.kind {
            SearchKind::Udp(_) => None,
            SearchKind::Tcp(_) => Some(GoalKind::Tcp),
            SearchKind::Rr(_) => Some(GoalKind::Rr),
        },
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum GoalKind {
    Tcp,
    Rr,
}

impl GoalKind {
    fn of(g: &KneeGoal) -> Self {
        match g.bound {
            SearchBound::Retransmits { .. } => GoalKind::Tcp,
            SearchBound::P99 { .. } => GoalKind::Rr,
        }
    }
}

/// A bound, and the figure it is on, in words: `0.1 %`, `200 µs`.
fn bound_words(kind: GoalKind, v: f64) -> String {
    match kind {
        // Rounded past the float's noise: 0.1, not 0.10000000000000002.
        GoalKind::Tcp => format!("{} %", (v * 100.0 * 1e6).round() / 1e6),
        GoalKind::Rr => fmt::value(v * 1e6, Unit::Microseconds),
    }
}

/// A TCP or request/response search's table: per bound, the rate found in its unit, the
/// trial that verified it, the trials it took, and the worst figure seen there.
fn goal_table(run: &Run, kind: GoalKind) -> String {
    let (bound, seen) = match kind {
        GoalKind::Tcp => ("retrans ≤", "retrans seen"),
        GoalKind::Rr => ("p99 ≤", "p99 seen"),
    };
    let by = |g: &KneeGoal| g.verified_by.clone().unwrap_or_else(|| "none".into());
    let w = run
        .knees
        .iter()
        .filter_map(|k| k.goal.as_ref())
        .map(|g| by(g).chars().count())
        .fold("verified by".len(), usize::max);
    let mut s = format!(
        "{bound:<10}  {:<24}  {:>6}  {:<w$}  {seen}\n",
        "rate found", "trials", "verified by"
    );
    for k in &run.knees {
        let Some(g) = &k.goal else { continue };
        let (b, rate, seen) = goal_row(kind, g);
        s.push_str(&format!(
            "{b:<10}  {:<24}  {:>6}  {:<w$}  {seen}\n",
            format!("{rate}{}", if k.generator_limited { " ≥" } else { "" }),
            k.trials,
            by(g),
        ));
        if let Some(n) = &k.note {
            s.push_str(&format!("            note: {n}\n"));
        }
        if let Some(b) = &k.stopped_by {
            s.push_str(&format!("            above it: {b}\n"));
        }
    }
    s.push_str(match kind {
        GoalKind::Tcp => "rate: goodput netceil's receiver read, all flows together, decimal (1 Gbit/s = 10^9 bit/s), within 1 % of the paced load asked; retrans: retransmitted over sent segments (TCP_INFO); verified by: the full-length trial (part) that passed at the rate\n",
        GoalKind::Rr => "rate: transactions answered per second, within 1 % of the rate asked; p99: round trip from each request's intended send time; verified by: the full-length trial (part) that passed at the rate\n",
    });
    s
}

/// One bound's row: the bound, the rate found (in its unit), the worst figure seen there.
fn goal_row(kind: GoalKind, g: &KneeGoal) -> (String, String, String) {
    let b = match g.bound {
        SearchBound::Retransmits { max_ratio } => bound_words(kind, max_ratio),
        SearchBound::P99 { max_s } => bound_words(kind, max_s),
    };
    let rate = g.rate.map_or_else(|| "none".into(), |v| g.unit.show(v));
    let seen = g.seen.map_or_else(
        || fmt::MISSING.into(),
        |v| match kind {
            GoalKind::Tcp => format!("{:.4} %", v * 100.0),
            GoalKind::Rr => fmt::value(v * 1e6, Unit::Microseconds),
        },
    );
    (b, rate, seen)
}

/// §5's tables: per size and point, the first interval with 100 %, the cycle time, the data
/// and the throughput in both units.
pub fn sweep(run: &Run, count: u64) -> String {
    let mut s = String::from(
        "size B   point   first 100 %   cycle       data         Gbit/s   Gibit/s   cells\n",
    );
    for k in &run.knees {
        let cycle_us = match (k.rate_pps, k.min_interval_us) {
            (Some(p), Some(_)) if p > 0.0 => fmt::value(count as f64 / p * 1e6, Unit::Microseconds),
            _ => "-".into(),
        };
        let data = format!("{:.0} KiB", count as f64 * k.size_bytes as f64 / 1024.0);
        let (gbit, gibit) = gbit_gibit(k.bits_per_s);
        s.push_str(&format!(
            "{:>6}   {:<6}  {:>11}   {:>9}   {:>10}   {:>7}   {:>7}   {:>5}\n",
            k.size_bytes,
            k.point,
            k.min_interval_us
                .map_or_else(|| "none".into(), |v| fmt::value(v, Unit::Microseconds)),
            cycle_us,
            data,
            gbit,
            gibit,
            k.trials
        ));
        if let Some(n) = &k.note {
            s.push_str(&format!("         note: {n}\n"));
        }
    }
    s.push_str(&format!(
        "throughput = UDP payload per cycle / cycle time; a cell is one cycle of {count} packets; Gbit/s = 10^9 bit/s, Gibit/s = 2^30 bit/s\n"
    ));
    s
}

/// A TCP flows sweep's table: per step, throughput, CPU, switches, interrupts and finding.
pub fn flows(top: &Run) -> String {
    let steps = crate::flows::steps(top);
    let knee = crate::flows::knee(&steps);
    let mut t =
        String::from("flows   throughput     CPU busy   cs/s        in/s        top finding\n");
    for (i, s) in steps.iter().enumerate() {
        let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or_else(|| "-".into(), f);
        t.push_str(&format!(
            "{:>5}   {:>12}   {:>8}   {:>9}   {:>9}   {}{}\n",
            s.flows,
            fmt::value(s.bits_per_s, Unit::BitsPerSecond),
            opt(s.cpu_busy_pct, &|v| format!("{v:.0} %")),
            opt(s.cs_per_s, &|v| fmt::count(v.round() as u64)),
            opt(s.intr_per_s, &|v| fmt::count(v.round() as u64)),
            top.parts[i]
                .findings
                .first()
                .map_or("-", |f| f.cause.as_str()),
            if knee == Some(i) {
                "   <- adding flows stops here"
            } else {
                ""
            }
        ));
    }
    for n in &top.notes {
        t.push_str(&format!("{n}\n"));
    }
    if let Some(f) = top.findings.first() {
        t.push_str(&format!("verdict at the knee: {}\n", f.summary));
    }
    t
}

/// A column of a [`fitted`] table: its header, and whether it may be cut short (with `…`)
/// to fit, down to `min` columns; a column that may not is shown whole or not at all.
#[derive(Debug, Clone, Copy)]
pub struct Column<'a> {
    pub header: &'a str,
    pub cut_to: Option<usize>,
}

/// Columns are two spaces apart.
const GAP: usize = 2;

/// A plain table cut to `width` columns (`None`: every column, whole): columns are kept in
/// the order given while they fit, a column that may be cut takes what is left, and the rest
/// are left out. The first column is always shown.
pub fn fitted(columns: &[Column], rows: &[Vec<String>], width: Option<usize>) -> String {
    let w = |t: &str| textwrap::core::display_width(t);
    let natural: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|t| w(t))
                .chain([w(c.header)])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut shown: Vec<usize> = Vec::new();
    let mut used = 0;
    for (i, c) in columns.iter().enumerate() {
        let gap = if i == 0 { 0 } else { GAP };
        let left = width.map_or(usize::MAX, |l| l.saturating_sub(used + gap));
        let take = if natural[i] <= left || i == 0 {
            natural[i]
        } else {
            match c.cut_to {
                Some(min) if left >= min => left,
                _ => break,
            }
        };
        shown.push(take);
        used += gap + take;
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::new();
        for (i, (cell, &cw)) in cells.zip(&shown).enumerate() {
            if i > 0 {
                out.push_str(&" ".repeat(GAP));
            }
            let text = cut(cell, cw);
            let pad = cw.saturating_sub(w(&text));
            out.push_str(&text);
            out.push_str(&" ".repeat(pad));
        }
        format!("{}\n", out.trim_end())
    };
    let mut s = line(&mut columns.iter().map(|c| c.header));
    for r in rows {
        s.push_str(&line(&mut r.iter().map(String::as_str)));
    }
    s
}

/// `text` in at most `width` columns, ended with `…` when cut.
fn cut(text: &str, width: usize) -> String {
    if textwrap::core::display_width(text) <= width {
        return text.to_string();
    }
    let mut out = String::new();
    for ch in text.chars() {
        if textwrap::core::display_width(&out) + textwrap::core::display_width(&ch.to_string()) + 1
            > width
        {
            break;
        }
        out.push(ch);
    }
    let mut out = out.trim_end().to_string();
    out.push('…');
    out
}

#[cfg(test)]
mod fitted_tests {
    use super::*;

    fn table(width: Option<usize>) -> String {
        let cols = [
            Column {
                header: "id",
                cut_to: None,
            },
            Column {
                header: "ceiling",
                cut_to: None,
            },
            Column {
                header: "verdict",
                cut_to: Some(8),
            },
            Column {
                header: "labels",
                cut_to: Some(8),
            },
        ];
        let rows = vec![vec![
            "run-1".to_string(),
            "16.7 Gbit/s".to_string(),
            "Congestion control held the flow".to_string(),
            "nic=lo host=a".to_string(),
        ]];
        fitted(&cols, &rows, width)
    }

    #[test]
    fn columns_that_do_not_fit_are_left_out_or_cut() {
        let all = table(None);
        assert!(
            all.contains("nic=lo host=a") && all.contains("held the flow"),
            "{all}"
        );
        let narrow = table(Some(40));
        for line in narrow.lines() {
            assert!(line.chars().count() <= 40, "{line}");
        }
        assert!(
            narrow.contains("Congestion control…") && !narrow.contains("labels"),
            "{narrow}"
        );
        let tiny = table(Some(10));
        assert_eq!(tiny.lines().next(), Some("id"), "{tiny}");
    }
}

#[cfg(test)]
mod goal_tests {
    use super::*;
    use netceil_model::{Knee, RunSource, SearchRateUnit};

    fn knee(bound: SearchBound, unit: SearchRateUnit, rate: Option<f64>, seen: f64) -> Knee {
        Knee {
            size_bytes: 64,
            point: "app".into(),
            loss_tolerance: 0.0,
            min_interval_us: None,
            rate_pps: None,
            bits_per_s: None,
            loss_ratio: None,
            trials: 9,
            generator_limited: false,
            verified: rate.is_some(),
            upper_pps: None,
            stopped_by: Some("s.5 at 13.0 k transactions/s: no finding".into()),
            note: None,
            goal: Some(KneeGoal {
                bound,
                rate,
                unit,
                upper: None,
                seen: Some(seen),
                verified_by: rate.map(|_| "s.8".into()),
            }),
        }
    }

    #[test]
    fn a_p99_search_says_per_bound_the_rate_its_unit_the_verifying_trial_and_the_trials() {
        let mut run = Run::new("s", RunSource::Live);
        run.knees = vec![
            knee(
                SearchBound::P99 { max_s: 200e-6 },
                SearchRateUnit::TransactionsPerSecond,
                Some(12_000.0),
                150e-6,
            ),
            knee(
                SearchBound::P99 { max_s: 20e-6 },
                SearchRateUnit::TransactionsPerSecond,
                None,
                0.0,
            ),
        ];
        let t = search(&run);
        let rows: Vec<&str> = t.lines().collect();
        assert!(rows[0].starts_with("p99 ≤"), "{t}");
        assert!(
            rows[1].contains("200 µs") || rows[1].contains("200 us"),
            "{t}"
        );
        assert!(rows[1].contains("transactions/s"), "{t}");
        assert!(rows[1].contains("s.8") && rows[1].contains(" 9 "), "{t}");
        assert!(t.contains("above it: s.5"), "{t}");
        // No rate passed: said so, with no verifying trial.
        let none = rows
            .iter()
            .find(|r| r.contains("none"))
            .expect("a row with none");
        assert!(none.matches("none").count() == 2, "{t}");
    }

    #[test]
    fn a_retransmit_search_shows_goodput_and_the_budget() {
        let mut run = Run::new("s", RunSource::Live);
        run.knees = vec![knee(
            SearchBound::Retransmits { max_ratio: 0.001 },
            SearchRateUnit::GoodputBitsPerSecond,
            Some(1.2e9),
            0.0004,
        )];
        let t = search(&run);
        assert!(t.starts_with("retrans ≤"), "{t}");
        assert!(t.contains("0.1 %") && t.contains("Gbit/s"), "{t}");
        assert!(t.contains("0.0400 %"), "{t}");
        assert!(!t.contains("frame B"), "{t}");
    }
}
