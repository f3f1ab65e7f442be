//! Everything netceil says about one run agrees with the run: every figure a finding quotes,
//! with its unit, is a figure the run holds (its results, its series, or the ledger the
//! verdict was written from), within the figure's rounding.
//!
//! The runs are real ones, recorded on this project's 2-core test machine by
//! `bench/diagnose.sh` (train and confirm cases) and by `netceil run` (the suite fixtures in
//! `tests/fixtures/runs`). Each is analyzed afresh with today's rules; the findings' sentences,
//! evidence, alternatives and the advice's expectations are read for numbers followed by a
//! unit (`17.0 Mbit/s`, `369 kpps`, `6.75 k/s`, `56.9 µs`, `45 %`, `33.7 k in all`), and each
//! must be found, in the same unit, among:
//! - the results (every field, in the unit its name says);
//! - the series: each value, and the mean (and for a rate, the total) over every span of
//!   consecutive rows, which covers the load phase whatever rows the analyzer chose;
//! - the ledger: each entry's capacity, use and errors, its share as a percentage, the gain
//!   as a factor and as a percentage, and the value of each piece of evidence.
//!
//! A number without a unit (a CPU's index, a pid, a ratio written bare) is not read; nor are
//! the advice's knobs, which name settings to type, not measurements.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use netceil_model::{Ledger, Run, Series, Unit};

/// What a quoted figure measures, whatever its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Family {
    Bits,
    BytesPerSecond,
    Packets,
    PerSecond,
    Percent,
    Seconds,
    Bytes,
    Count,
}

fn family(unit: Unit) -> Option<Family> {
    Some(match unit {
        Unit::BitsPerSecond => Family::Bits,
        Unit::BytesPerSecond => Family::BytesPerSecond,
        Unit::PacketsPerSecond => Family::Packets,
        Unit::PerSecond => Family::PerSecond,
        Unit::Percent => Family::Percent,
        Unit::Seconds => Family::Seconds,
        Unit::Microseconds => return None,
        Unit::Bytes => Family::Bytes,
        Unit::Ratio | Unit::Count => Family::Count,
    })
}

/// The figures one run holds, by family (seconds for every duration).
#[derive(Default)]
struct Held {
    by: BTreeMap<Family, Vec<f64>>,
    /// Values whose unit is not known (a piece of evidence about no series metric).
    any: Vec<f64>,
}

impl Held {
    fn add(&mut self, f: Family, v: f64) {
        if v.is_finite() {
            self.by.entry(f).or_default().push(v);
        }
    }

    fn add_unit(&mut self, unit: Unit, v: f64) {
        match unit {
            // A rate of N packets a second is a packet every 1/N s (`a packet every 2.96 µs`).
            Unit::PacketsPerSecond => {
                self.add(Family::Packets, v);
                if v > 0.0 {
                    self.add(Family::Seconds, 1.0 / v);
                }
            }
            Unit::Microseconds => self.add(Family::Seconds, v * 1e-6),
            Unit::Ratio => {
                self.add(Family::Count, v);
                self.add(Family::Percent, v * 100.0);
            }
            Unit::BytesPerSecond => {
                self.add(Family::BytesPerSecond, v);
                self.add(Family::Bits, v * 8.0);
            }
            u => {
                if let Some(f) = family(u) {
                    self.add(f, v);
                }
            }
        }
    }

    /// Whether `x`, printed with its last digit worth `ulp`, is one of the figures held.
    /// A bare count (`18.1 k`) states no unit, so it may be any figure held.
    fn holds(&self, f: Family, x: f64, ulp: f64) -> bool {
        let near = |v: &f64| (v - x).abs() <= ulp * 0.5 + 1e-9 * x.abs().max(1.0);
        let in_family = |f: &Family| self.by.get(f).is_some_and(|vs| vs.iter().any(near));
        in_family(&f)
            || (f == Family::Count && self.by.keys().any(in_family))
            || self.any.iter().any(near)
    }
}

/// The unit a results field's name says.
fn results_unit(key: &str) -> Option<Unit> {
    let k = key;
    Some(if k.ends_with("bits_per_s") {
        Unit::BitsPerSecond
    } else if k.ends_with("_pps") || k == "requested_pps" {
        Unit::PacketsPerSecond
    } else if k.ends_with("_per_s") {
        Unit::PerSecond
    } else if k.ends_with("_pct") {
        Unit::Percent
    } else if k.ends_with("_us") {
        Unit::Microseconds
    } else if k.ends_with("_s") {
        Unit::Seconds
    } else if k.ends_with("bytes") || k.starts_with("rcvbuf") || k.starts_with("sndbuf") {
        Unit::Bytes
    } else if k.ends_with("ratio") {
        Unit::Ratio
    } else {
        Unit::Count
    })
}

fn walk_results(held: &mut Held, key: &str, parent_us: bool, v: &serde_json::Value) {
    match v {
        serde_json::Value::Number(n) => {
            let Some(x) = n.as_f64() else { return };
            // A latency summary's fields (p50, max, mean…) are microseconds.
            let unit = if parent_us {
                Some(Unit::Microseconds)
            } else {
                results_unit(key)
            };
            if let Some(u) = unit {
                held.add_unit(u, x);
            }
        }
        serde_json::Value::Object(o) => {
            let us = key.ends_with("_us");
            for (k, v) in o {
                walk_results(held, k, us, v);
            }
        }
        serde_json::Value::Array(a) => {
            for v in a {
                walk_results(held, key, parent_us, v);
            }
        }
        _ => {}
    }
}

/// Each value, and the mean and (for a rate) the total over every span of consecutive rows.
fn add_series(held: &mut Held, s: &Series) {
    let dt: Vec<f64> = (0..s.t_s.len())
        .map(|i| {
            if i == 0 {
                s.interval_s
            } else {
                s.t_s[i] - s.t_s[i - 1]
            }
        })
        .collect();
    // Times and spans of rows: a window `0–5 s`, a run of `4 s`.
    h_times(held, &s.t_s);
    for m in &s.metrics {
        let rate = matches!(
            m.unit,
            Unit::PerSecond | Unit::PacketsPerSecond | Unit::BitsPerSecond | Unit::BytesPerSecond
        );
        for i in 0..m.values.len() {
            let (mut sum, mut wsum, mut total, mut n, mut w) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for j in i..m.values.len() {
                let Some(v) = m.values[j] else { continue };
                let d = dt.get(j).copied().unwrap_or(s.interval_s);
                sum += v;
                n += 1.0;
                wsum += v * d;
                w += d;
                total += v * d;
                held.add_unit(m.unit, sum / n);
                if w > 0.0 {
                    held.add_unit(m.unit, wsum / w);
                }
                if rate {
                    held.add(Family::Count, total);
                    held.add(Family::Count, sum);
                }
            }
        }
    }
}

fn h_times(held: &mut Held, t_s: &[f64]) {
    held.add(Family::Seconds, 0.0);
    for (i, a) in t_s.iter().enumerate() {
        held.add(Family::Seconds, *a);
        for b in &t_s[i..] {
            held.add(Family::Seconds, b - a);
        }
    }
}

fn add_ledger(held: &mut Held, l: &Ledger) {
    if let Some(d) = &l.delivered {
        held.add_unit(d.unit, d.value);
    }
    for e in &l.entries {
        for q in [&e.capacity, &e.used, &e.errors].into_iter().flatten() {
            held.add_unit(q.unit, q.value);
        }
        if let Some(s) = e.share {
            held.add(Family::Percent, s * 100.0);
            held.add(Family::Count, s);
        }
        if let Some(f) = e.gain.as_ref().and_then(|g| g.factor) {
            held.add(Family::Count, f);
            held.add(Family::Percent, (f - 1.0) * 100.0);
        }
        for ev in &e.evidence {
            add_evidence(held, ev);
        }
    }
}

/// A piece of evidence's value, in its unit (its metric names what it is about, not always
/// the unit of the value: a share of a per-second count is a percentage). A run recorded
/// before evidence carried its unit has its value matched in whatever unit the text gives it.
fn add_evidence(held: &mut Held, ev: &netceil_model::Evidence) {
    if let Some(v) = ev.value.filter(|v| v.is_finite()) {
        match ev.unit {
            Some(u) => held.add_unit(u, v),
            None => held.any.push(v),
        }
        // A metric named in microseconds is a duration, whatever prefix the text gives it.
        if ev.metric.ends_with("_us") {
            held.add(Family::Seconds, v * 1e-6);
        }
    }
}

/// Everything one run (and each part) holds.
fn held(run: &Run) -> Held {
    let mut h = Held::default();
    for r in std::iter::once(run).chain(&run.parts) {
        if let Some(res) = &r.results {
            let v = serde_json::to_value(res).expect("results serialize");
            walk_results(&mut h, "", false, &v);
        }
        add_series(&mut h, &r.series);
        // The run's loss and delivery, as every renderer works them out.
        if let Some(res) = &r.results {
            if let Some(l) = netceil_report::loss_pct(res) {
                h.add(Family::Percent, l);
            }
        }
        for k in &r.knees {
            let v = serde_json::to_value(k).expect("knees serialize");
            walk_results(&mut h, "", false, &v);
            // The gap between packets at the knee's rate (`a packet every 2.96 µs`).
            if let Some(p) = k.rate_pps.filter(|p| *p > 0.0) {
                h.add(Family::Seconds, 1.0 / p);
            }
        }
        for f in &r.findings {
            h.add(Family::Percent, f.confidence * 100.0);
        }
        if let Some(c) = &r.meta.cpu_quota {
            h.add(Family::Count, c.cpus);
        }
    }
    for (_, l) in netceil_analyze::ledgers(run, &netceil_analyze::Options::default()) {
        add_ledger(&mut h, &l);
    }
    for r in std::iter::once(run).chain(&run.parts) {
        for f in &r.findings {
            for ev in &f.evidence {
                add_evidence(&mut h, ev);
            }
        }
    }
    h
}

/// A figure quoted in text: its value in the family's base unit, the worth of its last
/// digit, and the words it was read from.
#[derive(Debug)]
struct Quoted {
    family: Family,
    value: f64,
    ulp: f64,
    text: String,
}

fn prefix(c: &str) -> Option<f64> {
    Some(match c {
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        _ => return None,
    })
}

/// The figures with a unit in `text`.
fn quoted(text: &str) -> Vec<Quoted> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let word_start = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if !(b[i].is_ascii_digit() && word_start) || (i > 0 && b[i - 1] == b'.') {
            i += 1;
            continue;
        }
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b',' || b[i] == b'.') {
            if (b[i] == b',' || b[i] == b'.') && !(i + 1 < b.len() && b[i + 1].is_ascii_digit()) {
                break;
            }
            i += 1;
        }
        let digits = &text[start..i];
        // A bound the rule applies (`delivered ≥ 99 %`), not a figure measured.
        let before = text[..start].trim_end();
        if before.ends_with(['≥', '≤', '<', '>']) {
            continue;
        }
        let rest = &text[i..];
        if let Some(q) = read_unit(digits, rest) {
            out.push(q);
        }
    }
    out
}

fn read_unit(digits: &str, rest: &str) -> Option<Quoted> {
    let plain: String = digits.chars().filter(|c| *c != ',').collect();
    let n: f64 = plain.parse().ok()?;
    let decimals = plain.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    let ulp = 10f64.powi(-decimals);
    let r = rest.strip_prefix(' ').unwrap_or(rest);
    let spaced = rest.starts_with(' ');
    // An optional prefix, then the unit (`Mbit/s`, `kpps`, `k/s`, `kB`, `k transactions/s`),
    // or a bare prefix for a count (`33.7 k in all`).
    let prefixed = r.get(..1).and_then(prefix).filter(|_| {
        let a = &r[1..];
        ["bit/s", "B/s", "pps", "/s", "B", " ", ")", ",", ";"]
            .iter()
            .any(|u| a.starts_with(u))
            || a.is_empty()
    });
    let (mult, after) = match prefixed {
        Some(m) if spaced => (m, &r[1..]),
        _ => (1.0, r),
    };
    let after_sp = after.strip_prefix(' ').unwrap_or(after);
    let fam_unit = |f: Family, m: f64| Quoted {
        family: f,
        value: n * m,
        ulp: ulp * m,
        text: format!("{digits}{}", &rest[..rest.len().min(24)]),
    };
    let starts_word = |s: &str, w: &str| {
        s.starts_with(w)
            && !s[w.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '/')
    };
    if starts_word(after, "bit/s") {
        return Some(fam_unit(Family::Bits, mult));
    }
    if starts_word(after, "B/s") {
        return Some(fam_unit(Family::BytesPerSecond, mult));
    }
    if starts_word(after, "pps") {
        return Some(fam_unit(Family::Packets, mult));
    }
    if after.starts_with("/s") {
        return Some(fam_unit(Family::PerSecond, mult));
    }
    for w in [
        "transactions/s",
        "context switches/s",
        "interrupts/s",
        "softirqs/s",
        "packets/s",
        "datagrams/s",
    ] {
        if after_sp.starts_with(w) {
            return Some(fam_unit(Family::PerSecond, mult));
        }
    }
    if mult == 1.0 && spaced {
        if starts_word(r, "%") || r.starts_with('%') {
            return Some(fam_unit(Family::Percent, 1.0));
        }
        for (u, m) in [("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9), ("s", 1.0)] {
            if starts_word(r, u) {
                return Some(fam_unit(Family::Seconds, m));
            }
        }
        if starts_word(r, "B") {
            return Some(fam_unit(Family::Bytes, 1.0));
        }
    }
    if starts_word(after, "B") && mult > 1.0 {
        return Some(fam_unit(Family::Bytes, mult));
    }
    // A count with a prefix: `33.7 k in all`, `1.41 M of the 1.51 M datagrams`.
    if mult > 1.0 && spaced && (after.is_empty() || after.starts_with([' ', ')', ',', ';'])) {
        return Some(fam_unit(Family::Count, mult));
    }
    // An exact count with its thousands grouped.
    if digits.contains(',') && mult == 1.0 {
        return Some(fam_unit(Family::Count, 1.0));
    }
    None
}

/// The texts of every finding of a run and its parts, each with where it is.
fn texts(run: &Run) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for r in std::iter::once(run).chain(&run.parts) {
        for (k, f) in r.findings.iter().enumerate() {
            let at = |what: &str| format!("{} finding {k} ({}) {what}", r.run_id, f.cause);
            out.push((at("summary"), f.summary.clone()));
            for e in &f.evidence {
                out.push((at("evidence"), e.text.clone()));
            }
            for a in &f.alternatives {
                out.push((at("alternative"), a.clone()));
            }
            for a in &f.advice {
                out.push((at("advice"), a.expect.clone()));
            }
        }
    }
    out
}

/// This crate's fixture runs (bench/diagnose.sh's), then the workspace's (`netceil run`'s).
fn fixture_dirs() -> [PathBuf; 2] {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        here.join("tests/fixtures/runs"),
        here.join("../../tests/fixtures/runs"),
    ]
}

fn runs() -> Vec<(String, Run)> {
    let mut files: Vec<PathBuf> = fixture_dirs()
        .iter()
        .flat_map(|d| std::fs::read_dir(d).expect("the fixture runs"))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("readable");
            let mut run: Run = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not a Run: {e}", p.display()));
            netceil_analyze::analyze_into(&mut run);
            (p.file_name().unwrap().to_string_lossy().into_owned(), run)
        })
        .collect()
}

/// The figures quoted in `run`'s findings that it does not hold.
fn strays(run: &Run) -> Vec<String> {
    let h = held(run);
    let mut out = Vec::new();
    for (at, text) in texts(run) {
        for q in quoted(&text) {
            if !h.holds(q.family, q.value, q.ulp) {
                out.push(format!("{at}: {:?} {} in «{text}»", q.family, q.text));
            }
        }
    }
    out
}

#[test]
fn every_figure_a_finding_quotes_is_one_the_run_holds() {
    let mut all = Vec::new();
    let mut checked = 0;
    for (name, run) in runs() {
        checked += texts(&run)
            .iter()
            .map(|(_, t)| quoted(t).len())
            .sum::<usize>();
        for s in strays(&run) {
            all.push(format!("{name}: {s}"));
        }
    }
    assert!(checked > 200, "only {checked} figures read");
    assert!(
        all.is_empty(),
        "{} figures the runs do not hold:\n{}",
        all.len(),
        all.join("\n")
    );
}

#[test]
fn the_reader_finds_figures_with_their_units() {
    let q = quoted(
        "held at 17.0 Mbit/s, 369 kpps sent, 6.75 k/s, 33.7 k in all (5.7 % of the packets), \
         1 / 56.9 µs = 17.6 k transactions/s, 12,345 packets, CPU 1, tx0, 2 CPUs, 3.2 MiB",
    );
    let got: Vec<(Family, f64)> = q.iter().map(|q| (q.family, q.value)).collect();
    let want = [
        (Family::Bits, 17.0e6),
        (Family::Packets, 369e3),
        (Family::PerSecond, 6.75e3),
        (Family::Count, 33.7e3),
        (Family::Percent, 5.7),
        (Family::Seconds, 56.9e-6),
        (Family::PerSecond, 17.6e3),
        (Family::Count, 12345.0),
    ];
    assert_eq!(got.len(), want.len(), "{q:#?}");
    for ((f, v), (wf, wv)) in got.iter().zip(want) {
        assert_eq!(*f, wf, "{q:#?}");
        assert!((v - wv).abs() <= wv * 1e-9, "{v} against {wv}");
    }
}

#[test]
fn a_figure_the_run_does_not_hold_is_caught() {
    let (_, mut run) = runs().remove(0);
    let f = run
        .findings
        .first_mut()
        .or_else(|| run.parts.iter_mut().find_map(|p| p.findings.first_mut()))
        .expect("a finding");
    f.summary.push_str(" It reached 123.457 Gbit/s.");
    let s = strays(&run);
    assert!(s.iter().any(|s| s.contains("123.457")), "{s:#?}");
}

/// One run, one delivered rate: a netceil workload's verdict quotes what `netceil runs` and
/// the end of the run show (the receiver's count over the workload,
/// `results.rx_app_bits_per_s`), not a load-phase mean of the series or an interface's frame
/// rate beside it; and the ledger states its gains against the same figure.
#[test]
fn a_run_is_quoted_at_one_delivered_rate() {
    use netceil_model::{fmt, WorkloadKind};
    let mut seen = 0;
    for (name, run) in runs() {
        let ledgers = netceil_analyze::ledgers(&run, &netceil_analyze::Options::default());
        let parts: Vec<&Run> = if run.parts.is_empty() {
            vec![&run]
        } else {
            run.parts.iter().collect()
        };
        for (p, (_, ledger)) in parts.iter().zip(&ledgers) {
            let own = p.workload.as_ref().is_some_and(|w| {
                matches!(
                    w.kind,
                    WorkloadKind::Udp | WorkloadKind::Tcp | WorkloadKind::Rr
                )
            });
            let Some(r) = p
                .results
                .as_ref()
                .filter(|r| own && r.rx_app_bits_per_s > 0.0)
            else {
                continue;
            };
            let shown = fmt::value(r.rx_app_bits_per_s, Unit::BitsPerSecond);
            let d = ledger.delivered.as_ref().expect("a delivered rate");
            assert_eq!(
                fmt::value(d.value, d.unit),
                shown,
                "{name}: the ledger's delivered rate ({})",
                d.how
            );
            for f in &p.findings {
                if let Some((_, rest)) = f.summary.split_once("throughput held at ") {
                    seen += 1;
                    assert!(
                        rest.starts_with(&shown),
                        "{name}: `runs` shows {shown}, the verdict says «{}»",
                        f.summary
                    );
                }
            }
        }
    }
    assert!(seen >= 3, "only {seen} verdicts quote a throughput");
}

/// A close call is close, by one definition: `close_call` decides it from the confidences as
/// shown, below `CLOSE_CALL`; and every close call a verdict calls quotes the points between
/// its confidence and its runner-up's, as both are shown.
#[test]
fn a_close_call_is_close() {
    use netceil_analyze::{close_call, CLOSE_CALL};
    let limit = (CLOSE_CALL * 100.0).round();
    assert_eq!(close_call(0.85, 0.56), None, "29 points is not close");
    assert_eq!(
        close_call(0.56, 0.85),
        None,
        "a runner-up ahead is not behind"
    );
    assert_eq!(close_call(0.60, 0.56), Some(4.0));
    // Shown as 86 % and 81 %: 5 points, whatever the unrounded margin (4.1).
    assert_eq!(close_call(0.855, 0.814), Some(5.0));
    assert_eq!(
        close_call(0.60, 0.60 - CLOSE_CALL),
        None,
        "the limit is not close"
    );
    let pct = |text: &str, after: &str| -> Option<f64> {
        let rest = text.split_once(after)?.1;
        rest.split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    let mut calls = 0;
    for (name, run) in runs() {
        for r in std::iter::once(&run).chain(&run.parts) {
            for f in &r.findings {
                let Some(call) = f.evidence.iter().find(|e| e.metric == "verdict_margin") else {
                    continue;
                };
                calls += 1;
                let runner = f
                    .alternatives
                    .iter()
                    .find(|a| a.starts_with("runner-up"))
                    .expect("a close call names its runner-up");
                let shown = (f.confidence * 100.0).round();
                let second = pct(runner, "confidence ").expect("the runner-up's confidence");
                let points = pct(&call.text, "is ").expect("the points");
                assert_eq!(points, shown - second, "{name}: {} / {runner}", call.text);
                assert!(points < limit, "{name}: {}", call.text);
            }
        }
    }
    assert!(calls >= 1, "no close call among the fixtures");
}

/// Advice that cannot apply is not given: a run whose traffic stayed on loopback (netceil's
/// in-process receiver) gets no knob of a NIC's (its queues, rings, offloads, interrupt
/// moderation, busy polling of a device queue), and no advice undone by its own caveat.
#[test]
fn loopback_runs_get_no_nic_advice() {
    let nic_knobs = [
        "ethtool",
        "smp_affinity",
        "busy_poll",
        "napi_defer_hard_irqs",
        "/sys/class/net/IF",
        "txqueuelen",
    ];
    let mut loopback_runs = 0;
    for (name, run) in runs() {
        for r in std::iter::once(&run).chain(&run.parts) {
            let on_loopback = matches!(r.source, netceil_model::RunSource::Live)
                && r.workload
                    .as_ref()
                    .and_then(|w| w.params.peer())
                    .is_some_and(|peer| peer.is_none());
            if !on_loopback {
                continue;
            }
            loopback_runs += 1;
            for f in &r.findings {
                for a in &f.advice {
                    let all = format!(
                        "{} {} {}",
                        a.knob,
                        a.expect,
                        a.caveat.as_deref().unwrap_or("")
                    );
                    for k in nic_knobs {
                        assert!(!a.knob.contains(k), "{name} ({}): {}", f.cause, a.knob);
                    }
                    assert!(
                        !all.contains("expect no change") && !all.contains("does not apply"),
                        "{name} ({}): advice undone by itself: {all}",
                        f.cause
                    );
                }
            }
        }
    }
    assert!(loopback_runs >= 5, "only {loopback_runs} runs on loopback");
}

/// Every piece of evidence with a value says its unit, and where its own text quotes figures,
/// one of them is that value in that unit: a consumer of `--json` can tell 97 % from 97 kpps.
#[test]
fn every_evidence_value_has_its_unit_and_its_text_agrees() {
    use netceil_model::fmt;
    let (mut valued, mut checked, mut bad) = (0, 0, Vec::new());
    for (name, run) in runs() {
        for r in std::iter::once(&run).chain(&run.parts) {
            for f in &r.findings {
                for e in f
                    .evidence
                    .iter()
                    .filter(|e| e.value.is_some_and(f64::is_finite))
                {
                    valued += 1;
                    let (Some(unit), Some(v)) = (e.unit, e.value) else {
                        bad.push(format!("{name}: {} {}: no unit", f.cause, e.metric));
                        continue;
                    };
                    let mut own = Held::default();
                    own.add_unit(unit, v);
                    let quoted = quoted(&e.text);
                    if quoted.is_empty() {
                        continue;
                    }
                    checked += 1;
                    // The reader skips bare counts and factors (`229 dropped`, `2.4×`).
                    let bare = matches!(unit, Unit::Count | Unit::Ratio)
                        && [fmt::number(v), fmt::times(v)]
                            .iter()
                            .any(|w| e.text.contains(w.as_str()));
                    if !bare && !quoted.iter().any(|q| own.holds(q.family, q.value, q.ulp)) {
                        bad.push(format!(
                            "{name}: {} {} = {v} {unit:?}, not in «{}»",
                            f.cause, e.metric, e.text
                        ));
                    }
                }
            }
        }
    }
    assert!(
        valued > 50 && checked > 30,
        "{valued} valued, {checked} checked"
    );
    assert!(
        bad.is_empty(),
        "{} pieces of evidence:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
