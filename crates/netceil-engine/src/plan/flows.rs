//! TCP throughput over flow counts: one trial per count, each a part of the run analyzed on
//! its own, and the knee where adding flows stopped adding throughput; the run's verdict is
//! the analyzer's on that step.

use anyhow::anyhow;
use netceil_model::names as n;
use netceil_model::params::{SweepTcpParams, TcpPacingRequest, TcpParams};
use netceil_model::{fmt, Run, Unit};

use crate::{Campaign, Error, PartAnalysis, Trial};

/// A step's figures, from its results and its series window.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowStep {
    pub flows: u32,
    pub bits_per_s: f64,
    pub cpu_busy_pct: Option<f64>,
    pub cs_per_s: Option<f64>,
    pub intr_per_s: Option<f64>,
}

/// Adding flows stops adding throughput at the first step within 5 % of the best one.
pub const FLOWS_KNEE_SHARE: f64 = 0.95;

/// The step where adding flows stopped adding throughput: the fewest flows that reached
/// [`FLOWS_KNEE_SHARE`] of the best throughput of the sweep.
pub fn knee(steps: &[FlowStep]) -> Option<usize> {
    let best = steps.iter().map(|s| s.bits_per_s).fold(0.0, f64::max);
    (best > 0.0)
        .then(|| {
            steps
                .iter()
                .position(|s| s.bits_per_s >= FLOWS_KNEE_SHARE * best)
        })
        .flatten()
}

fn series_mean(run: &Run, name: &str) -> Option<f64> {
    let m = run.series.total(name)?;
    let v: Vec<f64> = m.values.iter().flatten().copied().collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// A TCP flows sweep's steps, from its parts: flows, throughput and the machine's means.
pub fn steps(top: &Run) -> Vec<FlowStep> {
    top.parts
        .iter()
        .map(|part| {
            let r = part.results.clone().unwrap_or_default();
            FlowStep {
                flows: part
                    .workload
                    .as_ref()
                    .and_then(|w| w.params_as::<TcpParams>().ok())
                    .map_or(0, |p| p.flows),
                bits_per_s: r.rx_app_bits_per_s.max(r.tx_bits_per_s),
                cpu_busy_pct: series_mean(part, n::CPU_BUSY_PCT),
                cs_per_s: series_mean(part, n::CS_PER_S),
                intr_per_s: series_mean(part, n::INTR_PER_S),
            }
        })
        .collect()
}

/// Every step's trial, checked before any traffic.
pub fn trials(a: &SweepTcpParams, ipv6: bool) -> Result<Vec<Trial>, Error> {
    if a.flows.is_empty() || a.flows.contains(&0) {
        return Err(Error::usage(anyhow!(
            "--flows: one or more flow counts, each at least 1"
        )));
    }
    a.flows
        .iter()
        .map(|&f| {
            Trial::tcp(TcpParams {
                flows: f,
                msg_size: a.msg_size,
                rate_per_flow_bps: a.rate_per_flow,
                duration_s: a.step_s,
                threads: a.threads,
                ipv6,
                target: a.target.clone(),
                pacing: TcpPacingRequest::Auto,
                rx_cpu: None,
                tx_cpu: None,
            })
        })
        .collect()
}

/// What a flows sweep found.
#[derive(Debug, Clone, PartialEq)]
pub struct Flowed {
    /// One per step measured, in order.
    pub steps: Vec<FlowStep>,
    /// The step where adding flows stopped adding throughput.
    pub knee: Option<usize>,
    /// Stopped before every step was measured.
    pub interrupted: bool,
}

/// Measures each of `trials` (from [`trials`]) in the campaign, then ends it: each step
/// analyzed, the knee's findings as the run's, and a note saying where the knee is.
pub fn run(c: &mut Campaign, trials: &[Trial]) -> Result<Flowed, Error> {
    let mut interrupted = false;
    for t in trials {
        if c.stopping() {
            interrupted = true;
            break;
        }
        let asked = t.workload();
        let r = c.trial(t, &asked, |_| asked.clone())?.results;
        let bits_per_s = r.rx_app_bits_per_s.max(r.tx_bits_per_s);
        let Trial::Tcp(cfg, _) = t else { continue };
        c.session.step(&format!(
            "  {:>5} flows  {:>12}",
            cfg.flows,
            fmt::value(bits_per_s, Unit::BitsPerSecond)
        ));
    }
    c.end(PartAnalysis::Each);
    let top = &mut c.top;
    let steps = steps(top);
    let knee = knee(&steps);
    if let Some(k) = knee {
        let part = &top.parts[k];
        top.findings = part.findings.clone();
        top.notes.push(format!(
            "adding flows stopped adding throughput at {} flows: the first step within {:.0} % of the best ({}); the verdict is the analyzer's on that step ({})",
            steps[k].flows,
            (1.0 - FLOWS_KNEE_SHARE) * 100.0,
            fmt::value(steps.iter().map(|s| s.bits_per_s).fold(0.0, f64::max), Unit::BitsPerSecond),
            part.run_id
        ));
    }
    top.meta.complete = !interrupted;
    Ok(Flowed {
        steps,
        knee,
        interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(flows: u32, gbit: f64) -> FlowStep {
        FlowStep {
            flows,
            bits_per_s: gbit * 1e9,
            cpu_busy_pct: None,
            cs_per_s: None,
            intr_per_s: None,
        }
    }

    #[test]
    fn the_knee_is_the_fewest_flows_near_the_best() {
        let s = [
            step(1, 10.0),
            step(2, 18.0),
            step(4, 23.0),
            step(8, 24.0),
            step(16, 23.5),
        ];
        assert_eq!(
            knee(&s),
            Some(2),
            "23 Gbit/s at 4 flows is within 5 % of 24"
        );
        assert_eq!(knee(&[step(1, 0.0)]), None);
        let rising = [step(1, 1.0), step(2, 2.0), step(4, 4.0)];
        assert_eq!(knee(&rising), Some(2), "still rising: the last step");
    }
}
