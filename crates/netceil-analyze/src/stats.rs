//! The few statistics the rules need, over plain slices of finite values.
//!
//! Rules average over the load phase only, skip missing values (a missing value is not a
//! zero), and turn "how far past a threshold" into a 0–1 strength with [`ramp`], which is what
//! every confidence in this crate is built from.

/// The finite values of a column, missing ones skipped.
pub fn present(values: &[Option<f64>]) -> Vec<f64> {
    values
        .iter()
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .collect()
}

pub use netceil_model::stats::{mean, median, quantile};

/// The chi-square distribution's 0.1 % quantile for `k` degrees of freedom: exact values to
/// 10, the Wilson–Hilferty approximation above (which errs low there, the safe side for
/// [`flatter_than_chance`]).
fn chi2_q001(k: usize) -> f64 {
    const EXACT: [f64; 10] = [
        1.571e-6, 0.002001, 0.02430, 0.09080, 0.2102, 0.3811, 0.5985, 0.8571, 1.152, 1.479,
    ];
    match k {
        0 => 0.0,
        1..=10 => EXACT[k - 1],
        _ => {
            let k = k as f64;
            let a = 2.0 / (9.0 * k);
            k * (1.0 - a - 3.090_232 * a.sqrt()).max(0.0).powi(3)
        }
    }
}

/// Whether `n` rows whose population cv was `observed` are flatter than rows spread by
/// chance with cv `chance` could be, but one time in a thousand: n·(observed/chance)² is
/// chi-square with n − 1 degrees of freedom. Few rows can only pass for very flat ones (two
/// rows never do), so a steady lossy path is not mistaken for a limiter by luck.
pub fn flatter_than_chance(observed: f64, chance: f64, n: usize) -> bool {
    if n < 3 || chance <= 0.0 || !observed.is_finite() || !chance.is_finite() {
        return false;
    }
    let r = observed / chance;
    n as f64 * r * r <= chi2_q001(n - 1)
}

/// Population standard deviation.
pub fn stddev(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    Some((xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / xs.len() as f64).sqrt())
}

/// Coefficient of variation (stddev / mean): how unsteady a rate is, independent of its
/// level. `None` without values or with a mean that is not positive.
pub fn cv(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    (m > 0.0).then(|| stddev(xs).unwrap_or(0.0) / m)
}

/// A 0–1 strength that is 0 at `zero_at`, 1 at `one_at` and linear between; either order works,
/// so `ramp(idle, 25.0, 60.0)` grows with idle time and `ramp(rest, 70.0, 30.0)` shrinks.
pub fn ramp(x: f64, zero_at: f64, one_at: f64) -> f64 {
    if !x.is_finite() {
        return 0.0;
    }
    if (one_at - zero_at).abs() < f64::EPSILON {
        return if x >= one_at { 1.0 } else { 0.0 };
    }
    ((x - zero_at) / (one_at - zero_at)).clamp(0.0, 1.0)
}

/// The mean of the strengths that could be computed; `None` when none could.
pub fn mean_strength(parts: &[Option<f64>]) -> Option<f64> {
    mean(&parts.iter().flatten().copied().collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of a steady offer passed by chance (normal spread, cv `chance`) are called flat
    /// about one time in a thousand whatever their count; rows held at a rate are.
    #[test]
    fn chance_is_rarely_flat_and_a_held_rate_is() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut uniform = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let chance = 0.0016;
        for n in [3, 5, 10, 30] {
            let trials = 20_000;
            let mut flat = 0;
            for _ in 0..trials {
                let rows: Vec<f64> = (0..n)
                    .map(|_| {
                        let (u, v) = (uniform().max(1e-300), uniform());
                        let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
                        19_000.0 * (1.0 + chance * z)
                    })
                    .collect();
                if flatter_than_chance(cv(&rows).unwrap(), chance, n) {
                    flat += 1;
                }
            }
            let rate = flat as f64 / trials as f64;
            assert!(rate < 0.003, "{n} rows: flat {rate} of the time by chance");
        }
        assert!(flatter_than_chance(chance / 100.0, chance, 3));
        assert!(flatter_than_chance(chance / 10.0, chance, 5));
        assert!(!flatter_than_chance(0.0, chance, 2));
        // The approximation joins the table without a jump the wrong way.
        assert!(chi2_q001(11) >= chi2_q001(10) && chi2_q001(11) < 2.0);
    }

    #[test]
    fn quantiles_interpolate() {
        let xs = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(quantile(&xs, 0.0), Some(1.0));
        assert_eq!(quantile(&xs, 1.0), Some(4.0));
        assert_eq!(median(&xs), Some(2.5));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn cv_of_constant_is_zero_and_of_nothing_is_none() {
        assert_eq!(cv(&[5.0, 5.0, 5.0]), Some(0.0));
        assert_eq!(cv(&[]), None);
        assert_eq!(cv(&[0.0, 0.0]), None);
        let c = cv(&[9.0, 11.0]).unwrap();
        assert!((c - 0.1).abs() < 1e-12);
    }

    #[test]
    fn ramp_both_directions() {
        assert_eq!(ramp(25.0, 25.0, 60.0), 0.0);
        assert_eq!(ramp(60.0, 25.0, 60.0), 1.0);
        assert!((ramp(42.5, 25.0, 60.0) - 0.5).abs() < 1e-12);
        assert_eq!(ramp(80.0, 70.0, 30.0), 0.0);
        assert_eq!(ramp(20.0, 70.0, 30.0), 1.0);
        assert_eq!(ramp(f64::NAN, 0.0, 1.0), 0.0);
    }

    #[test]
    fn present_skips_missing_and_non_finite() {
        assert_eq!(
            present(&[Some(1.0), None, Some(f64::NAN), Some(2.0)]),
            vec![1.0, 2.0]
        );
        assert_eq!(mean_strength(&[None, Some(1.0), Some(0.0)]), Some(0.5));
        assert_eq!(mean_strength(&[None]), None);
    }
}
