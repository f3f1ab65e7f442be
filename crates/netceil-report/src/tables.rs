//! The tables the planners' runs end with: a search's knees (`netceil search udp`), the UDP
//! size × interval sweep's (`sweep udp`) and the TCP flows sweep's steps (`sweep tcp`).

use netceil_model::{fmt, Run, Unit};

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
