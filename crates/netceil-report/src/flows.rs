//! A TCP flows sweep (`netceil sweep tcp`) as its run holds it: each step's figures, from its
//! part, and the knee where adding flows stopped adding throughput. The engine's planner
//! finds the knee with these as it ends the sweep; the table shows them.

use netceil_model::names as n;
use netceil_model::params::TcpParams;
use netceil_model::Run;

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
                cpu_busy_pct: part.series.total_mean(n::CPU_BUSY_PCT),
                cs_per_s: part.series.total_mean(n::CS_PER_S),
                intr_per_s: part.series.total_mean(n::INTR_PER_S),
            }
        })
        .collect()
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
