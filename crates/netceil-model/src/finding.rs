//! Findings: the analyzer's verdicts, each with evidence, confidence and advice.

use serde::{Deserialize, Serialize};

/// One measured fact that supports a finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Evidence {
    /// The metric it is about (`cs_per_s`, `cpu_busy_pct{cpu=0}`…).
    pub metric: String,
    /// The time window, seconds since the run's start.
    pub window_s: Option<(f64, f64)>,
    pub value: Option<f64>,
    /// The unit of `value`, which is not always the metric's: a share of a per-second count
    /// is a percentage. `None` only where there is no value (and in runs recorded before
    /// evidence carried its unit).
    #[serde(default)]
    pub unit: Option<crate::Unit>,
    /// The fact in words, with its unit.
    pub text: String,
}

/// A knob to try, which way, and the catch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Advice {
    pub knob: String,
    pub expect: String,
    pub caveat: Option<String>,
}

/// A verdict about what bound (or did not bind) the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    /// What bound the run, by its stable name: `hot_cpu`, `generator_limited`…
    pub cause: crate::Cause,
    /// The sentence a senior engineer would say.
    pub summary: String,
    /// 0–1.
    pub confidence: f64,
    pub evidence: Vec<Evidence>,
    /// Competing explanations and whether they were ruled out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<String>,
    pub advice: Vec<Advice>,
    /// What to measure next when unsure.
    pub next: Option<String>,
    /// Causes this run could not observe, so the verdict cannot rule them out (kernel locks
    /// without a probe, the far end of `--to`, a device without statistics). Set on the
    /// verdict (the first finding) only: silence must never read as "ruled out".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_checked: Vec<String>,
}

impl Finding {
    /// The confidence as every renderer words it: `confidence 54 %`.
    pub fn confidence_text(&self) -> String {
        format!("confidence {:.0} %", self.confidence * 100.0)
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{} ({})", self.summary, self.confidence_text())?;
        for e in &self.evidence {
            writeln!(f, "  evidence: {}", e.text)?;
        }
        for a in &self.alternatives {
            writeln!(f, "  considered: {a}")?;
        }
        for a in &self.advice {
            match &a.caveat {
                Some(c) => writeln!(f, "  try: {} ({}; caveat: {c})", a.knob, a.expect)?,
                None => writeln!(f, "  try: {} ({})", a.knob, a.expect)?,
            }
        }
        if let Some(n) = &self.next {
            writeln!(f, "  next: {n}")?;
        }
        for n in &self.not_checked {
            writeln!(f, "  not checked: {n}")?;
        }
        Ok(())
    }
}
