//! Per-interval distributions and the significance test used by `compare`.
//!
//! The field investigations compared two runs by eye ("cs fluctuates on sk0, steady on msk2").
//! A comparison has to say how steady (coefficient of variation) and whether a difference is
//! larger than the noise: Welch's t-test, because the two runs need not share a variance,
//! with the Student t distribution from `statrs` for p-values and the confidence interval.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Summary of one metric's per-interval values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Distribution {
    /// Number of intervals.
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    /// 10th percentile (linear interpolation between closest ranks).
    pub p10: f64,
    /// 90th percentile.
    pub p90: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n − 1); `None` with fewer than two values.
    pub stddev: Option<f64>,
    /// Coefficient of variation, stddev / |mean|: how unsteady the metric was. `None` when the
    /// mean is 0 or there is no stddev.
    pub cv: Option<f64>,
}

impl Distribution {
    /// Summarizes `values`, ignoring non-finite ones; `None` when nothing is left.
    pub fn of(values: &[f64]) -> Option<Distribution> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean = netceil_model::stats::mean(&sorted)?;
        let stddev = sample_variance(&sorted, mean).map(f64::sqrt);
        let cv = stddev.filter(|_| mean != 0.0).map(|s| s / mean.abs());
        Some(Distribution {
            n,
            mean,
            median: quantile_sorted(&sorted, 0.5)?,
            p10: quantile_sorted(&sorted, 0.1)?,
            p90: quantile_sorted(&sorted, 0.9)?,
            min: sorted[0],
            max: sorted[n - 1],
            stddev,
            cv,
        })
    }
}

fn sample_variance(values: &[f64], mean: f64) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let ss: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
    Some(ss / (values.len() - 1) as f64)
}

pub use netceil_model::stats::quantile_sorted;

/// The name of the test [`welch_t_test`] performs, for reports to quote.
pub const WELCH_METHOD: &str = "Welch's two-sample t-test (unequal variances, Welch–Satterthwaite \
degrees of freedom, two-sided p) with a 95 % confidence interval of the difference of means \
(B − A), over the per-interval values of each run's load phase";

/// What Welch's t-test says about the difference of two means.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WelchTest {
    pub n_a: usize,
    pub n_b: usize,
    pub mean_a: f64,
    pub mean_b: f64,
    /// mean_b − mean_a.
    pub difference: f64,
    /// Standard error of the difference.
    pub standard_error: f64,
    /// The t statistic; `None` when both samples have zero variance (no spread to test against).
    pub t: Option<f64>,
    /// Welch–Satterthwaite degrees of freedom; `None` with zero variance in both samples.
    pub df: Option<f64>,
    /// Two-sided p-value.
    pub p_value: f64,
    /// The confidence level of the interval, e.g. 0.95.
    pub confidence: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// Why a test could not be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TestError {
    #[error(
        "too few intervals for a t-test: {n_a} in A and {n_b} in B, at least 2 each are needed"
    )]
    TooFewSamples { n_a: usize, n_b: usize },
    #[error("the values are too large for a t-test: the degrees of freedom overflowed")]
    Overflow,
}

/// Welch's t-test of mean(b) − mean(a), with a `confidence` (e.g. 0.95) interval of the
/// difference. Non-finite values are ignored.
pub fn welch_t_test(a: &[f64], b: &[f64], confidence: f64) -> Result<WelchTest, TestError> {
    let a: Vec<f64> = a.iter().copied().filter(|v| v.is_finite()).collect();
    let b: Vec<f64> = b.iter().copied().filter(|v| v.is_finite()).collect();
    let (n_a, n_b) = (a.len(), b.len());
    let (Some(var_a), Some(var_b)) = (
        sample_variance(&a, mean_or_zero(&a)),
        sample_variance(&b, mean_or_zero(&b)),
    ) else {
        return Err(TestError::TooFewSamples { n_a, n_b });
    };
    let (mean_a, mean_b) = (mean_or_zero(&a), mean_or_zero(&b));
    let difference = mean_b - mean_a;
    let se_a2 = var_a / n_a as f64;
    let se_b2 = var_b / n_b as f64;
    let standard_error = (se_a2 + se_b2).sqrt();

    if standard_error == 0.0 {
        // Both runs were perfectly constant: any difference is exact, none is noise.
        let p_value = if difference == 0.0 { 1.0 } else { 0.0 };
        return Ok(WelchTest {
            n_a,
            n_b,
            mean_a,
            mean_b,
            difference,
            standard_error,
            t: None,
            df: None,
            p_value,
            confidence,
            ci_low: difference,
            ci_high: difference,
        });
    }

    let t = difference / standard_error;
    let df_denominator = se_a2.powi(2) / (n_a - 1) as f64 + se_b2.powi(2) / (n_b - 1) as f64;
    let df = (se_a2 + se_b2).powi(2) / df_denominator;
    // df is positive whenever standard_error > 0, but squares of huge values can overflow.
    let dist = StudentsT::new(0.0, 1.0, df).map_err(|_| TestError::Overflow)?;
    let p_value = (2.0 * dist.sf(t.abs())).min(1.0);
    let t_crit = dist.inverse_cdf(0.5 + confidence / 2.0);
    Ok(WelchTest {
        n_a,
        n_b,
        mean_a,
        mean_b,
        difference,
        standard_error,
        t: Some(t),
        df: Some(df),
        p_value,
        confidence,
        ci_low: difference - t_crit * standard_error,
        ci_high: difference + t_crit * standard_error,
    })
}

fn mean_or_zero(values: &[f64]) -> f64 {
    netceil_model::stats::mean(values).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn distribution_of_known_values() {
        let d = Distribution::of(&[1.0, 2.0, 3.0, 4.0, 5.0, f64::NAN]).unwrap();
        assert_eq!(d.n, 5);
        assert_eq!(d.median, 3.0);
        assert!(close(d.p10, 1.4, 1e-12));
        assert!(close(d.p90, 4.6, 1e-12));
        assert!(close(d.stddev.unwrap(), 2.5f64.sqrt(), 1e-12));
        assert!(close(d.cv.unwrap(), 2.5f64.sqrt() / 3.0, 1e-12));
        assert_eq!(Distribution::of(&[]), None);
        let one = Distribution::of(&[7.0]).unwrap();
        assert_eq!((one.stddev, one.cv), (None, None));
    }

    #[test]
    fn welch_matches_a_hand_computed_case() {
        // A: mean 20, var 2.5 (n 5); B: mean 22, var 10 (n 5).
        // se² = 0.5 + 2 = 2.5, t = 2/√2.5 = 1.2649, df = 2.5² / (0.25/4 + 4/4) = 5.8824.
        let a = [18.0, 19.0, 20.0, 21.0, 22.0];
        let b = [18.0, 20.0, 22.0, 24.0, 26.0];
        let w = welch_t_test(&a, &b, 0.95).unwrap();
        assert!(close(w.difference, 2.0, 1e-12));
        assert!(close(w.t.unwrap(), 1.264_911, 1e-5));
        assert!(close(w.df.unwrap(), 5.882_353, 1e-5));
        // t(0.975, 5.88) ≈ 2.4606; two-sided p of |t| = 1.2649 at 5.88 df ≈ 0.2536.
        assert!(close(w.p_value, 0.2536, 2e-3), "p = {}", w.p_value);
        assert!(close(
            w.ci_high - w.difference,
            2.4606 * 2.5f64.sqrt(),
            1e-2
        ));
        assert!(w.ci_low < 0.0 && w.ci_high > 0.0);
    }

    #[test]
    fn welch_detects_a_clear_shift_and_not_identity() {
        let a: Vec<f64> = (0..30).map(|i| 100.0 + (i % 5) as f64).collect();
        let b: Vec<f64> = a.iter().map(|v| v + 10.0).collect();
        let w = welch_t_test(&a, &b, 0.95).unwrap();
        assert!(w.p_value < 1e-6 && w.ci_low > 9.0 && w.ci_high < 11.0);
        let same = welch_t_test(&a, &a, 0.95).unwrap();
        assert!(close(same.p_value, 1.0, 1e-12));
        assert_eq!(same.difference, 0.0);
    }

    #[test]
    fn welch_edge_cases() {
        assert_eq!(
            welch_t_test(&[1.0], &[1.0, 2.0], 0.95),
            Err(TestError::TooFewSamples { n_a: 1, n_b: 2 })
        );
        let constant = welch_t_test(&[5.0, 5.0], &[5.0, 5.0, 5.0], 0.95).unwrap();
        assert_eq!((constant.p_value, constant.t), (1.0, None));
        let shifted = welch_t_test(&[5.0, 5.0], &[6.0, 6.0], 0.95).unwrap();
        assert_eq!(shifted.p_value, 0.0);
    }
}
