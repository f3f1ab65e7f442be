//! A sweep over parameter values: one trial per combination of values, each a part of the
//! run labelled with its values (`param.NAME`) and analyzed on its own.

use netceil_model::{fmt, Results, Unit};

use crate::{Campaign, Error, PartAnalysis, Trial};

/// One combination of values: flag names (without `--`) and values, as given.
pub type Combination = Vec<(String, String)>;

/// A combination in words: `--size 64 --threads 2`.
pub fn words(combo: &[(String, String)]) -> String {
    combo
        .iter()
        .map(|(n, v)| format!("--{n} {v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A step's headline: throughput, packet rate and loss, or transactions for rr.
pub fn headline(r: &Results) -> String {
    if let Some(tps) = r.transactions_per_s {
        return format!("{} transactions/s", fmt::count(tps as u64));
    }
    let sent = r.tx_packets.saturating_sub(r.in_flight_packets);
    let loss = if sent > 0 {
        format!(
            ", lost {:.3} %",
            100.0 * r.lost_packets as f64 / sent as f64
        )
    } else {
        String::new()
    };
    format!(
        "{}  {}{loss}",
        fmt::value(
            r.rx_app_bits_per_s.max(r.tx_bits_per_s),
            Unit::BitsPerSecond
        ),
        fmt::value(r.rx_app_pps.max(r.tx_pps), Unit::PacketsPerSecond)
    )
}

/// One step measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamStep {
    pub combo: Combination,
    pub results: Results,
    /// The cause of the step's top finding, if it has one.
    pub cause: Option<String>,
}

/// What a parameter sweep found.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSwept {
    /// One per step measured, in order.
    pub steps: Vec<ParamStep>,
    /// Stopped before every step was measured.
    pub interrupted: bool,
}

/// Measures each step in the campaign, then ends it: each part labelled with its values and
/// analyzed.
pub fn run(c: &mut Campaign, steps: &[(Combination, Trial)]) -> Result<ParamSwept, Error> {
    let mut done = Vec::new();
    let mut interrupted = false;
    for (combo, t) in steps {
        if c.stopping() {
            interrupted = true;
            break;
        }
        let asked = t.workload();
        let r = c.trial(t, &asked, |_| asked.clone())?.results;
        c.session
            .step(&format!("  {}  {}", words(combo), headline(&r)));
        done.push(ParamStep {
            combo: combo.clone(),
            results: r,
            cause: None,
        });
    }
    c.end(PartAnalysis::None);
    let top = &mut c.top;
    for (step, part) in done.iter_mut().zip(top.parts.iter_mut()) {
        for (name, v) in &step.combo {
            part.meta.labels.insert(format!("param.{name}"), v.clone());
        }
        netceil_analyze::analyze_into(part);
        step.cause = part.findings.first().map(|f| f.cause.to_string());
    }
    top.meta.complete = !interrupted;
    top.notes.push(
        "each step is `netceil run` with the shared arguments and one combination of --param values; each part carries its values as labels (param.NAME)".into(),
    );
    Ok(ParamSwept {
        steps: done,
        interrupted,
    })
}
