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

/// Arithmetic mean, `None` for no values.
pub fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// The `q` quantile (0–1) by linear interpolation between order statistics.
pub fn quantile(xs: &[f64], q: f64) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = pos - lo as f64;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * frac)
}

/// The median.
pub fn median(xs: &[f64]) -> Option<f64> {
    quantile(xs, 0.5)
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
