//! Work per context switch: the figure that told sk0 and msk2 apart (SEEDS §1).
//!
//! Both NICs ran at about 24–27 k context switches/s; what differed was how much traffic each
//! switch carried (sk0 ≈ 670 B, msk2 ≈ 1.5 kB) and how steady the rate was. [`cs_per_byte`]
//! computes these over the load phase, for comparing two runs.

use netceil_model::{names as n, Run};

use crate::ctx::Ctx;
use crate::stats::cv;
use crate::Options;

/// Context-switch economy of one run over its load phase.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchEconomy {
    /// The load window, seconds since the run's start.
    pub window_s: Option<(f64, f64)>,
    /// Mean context switches per second.
    pub cs_per_s: f64,
    /// Coefficient of variation of the per-interval rate: lower is steadier.
    pub cs_cv: Option<f64>,
    /// Mean interrupts per second, when recorded.
    pub intr_per_s: Option<f64>,
    /// Throughput in bytes per second (measured, else as annotated).
    pub bytes_per_s: Option<f64>,
    /// Context switches per byte of traffic: lower means more work per switch.
    pub cs_per_byte: Option<f64>,
    /// Bytes of traffic per context switch.
    pub bytes_per_cs: Option<f64>,
}

/// The context-switch economy of a run, or `None` without a context-switch rate.
pub fn cs_per_byte(run: &Run) -> Option<SwitchEconomy> {
    let opts = Options::default();
    let ctx = Ctx::new(run, &opts);
    let cs_m = run.series.total(n::CS_PER_S)?;
    let values = ctx.values(cs_m);
    let cs = crate::stats::mean(&values)?;
    let bytes = ctx.throughput().map(|t| t.bits_per_s / 8.0);
    Some(SwitchEconomy {
        window_s: ctx.window(),
        cs_per_s: cs,
        cs_cv: cv(&values),
        intr_per_s: ctx.total_mean(n::INTR_PER_S),
        bytes_per_s: bytes,
        cs_per_byte: bytes.filter(|b| *b > 0.0).map(|b| cs / b),
        bytes_per_cs: bytes.filter(|_| cs > 0.0).map(|b| b / cs),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    #[test]
    fn more_bytes_per_switch_at_the_same_rate() {
        let mk = |bytes: f64, jitter: f64| {
            let mut r = imported_run(20, |s, row| {
                let load = (3..17).contains(&row);
                put(
                    s,
                    row,
                    n::CS_PER_S,
                    &[],
                    if load {
                        25_000.0 + noise(row, jitter)
                    } else {
                        300.0
                    },
                );
            });
            r.meta.annotations.throughput_bits_per_s = Some(bytes * 8.0);
            r
        };
        let a = cs_per_byte(&mk(18e6, 3000.0)).unwrap();
        let b = cs_per_byte(&mk(35e6, 500.0)).unwrap();
        assert!(b.cs_per_byte.unwrap() < a.cs_per_byte.unwrap());
        assert!(b.cs_cv.unwrap() < a.cs_cv.unwrap());
        assert!((a.bytes_per_cs.unwrap() - 18e6 / a.cs_per_s).abs() < 1e-6);
        assert_eq!(a.window_s, Some((3.0, 17.0)));
    }

    #[test]
    fn no_cs_metric_no_economy() {
        assert!(cs_per_byte(&live_run(3, |_, _| {})).is_none());
    }
}
