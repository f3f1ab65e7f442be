//! TCP throughput over flow counts: one trial per count, each a part of the run analyzed on
//! its own, and the knee where adding flows stopped adding throughput; the run's verdict is
//! the analyzer's on that step.

use anyhow::anyhow;
use netceil_model::params::{SweepTcpParams, TcpPacingRequest, TcpParams};
use netceil_model::{fmt, Unit};

use crate::{Campaign, Error, PartAnalysis, Trial};

pub use netceil_report::flows::{knee, steps, FlowStep, FLOWS_KNEE_SHARE};

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
                congestion: None,
                direction: Default::default(),
                rcvbuf: Default::default(),
                sink_wakes: Default::default(),
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
