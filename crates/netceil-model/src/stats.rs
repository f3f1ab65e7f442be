//! The summary statistics every crate uses (mean, quantiles, median), defined once so that a
//! median in a lab table, in a comparison and in the analyzer is the same number.
//!
//! Quantiles interpolate linearly between closest ranks (Hyndman & Fan type 7, the default of
//! R and NumPy). Values that are not finite (NaN, ±∞: a missing or broken sample) are left
//! out; nothing left is `None`, never a panic.

/// The arithmetic mean of the finite values.
pub fn mean(xs: &[f64]) -> Option<f64> {
    let (sum, n) = xs
        .iter()
        .filter(|v| v.is_finite())
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// The `q` quantile (0–1, clamped) of values already sorted ascending and finite.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let h = last as f64 * q.clamp(0.0, 1.0);
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

/// The `q` quantile (0–1, clamped) of the finite values, in any order.
pub fn quantile(xs: &[f64], q: f64) -> Option<f64> {
    let mut sorted: Vec<f64> = xs.iter().copied().filter(|v| v.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    quantile_sorted(&sorted, q)
}

/// The median of the finite values.
pub fn median(xs: &[f64]) -> Option<f64> {
    quantile(xs, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_values() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.9), Some(4.6));
        assert_eq!(mean(&[1.0, f64::NAN, 3.0]), Some(2.0));
        assert_eq!(median(&[f64::NAN, f64::INFINITY]), None);
        assert_eq!(median(&[]), None);
        assert_eq!(quantile_sorted(&[], 0.5), None);
    }

    proptest! {
        /// A quantile lies between the smallest and largest value, never decreases with q,
        /// and does not depend on the order the values came in.
        #[test]
        fn quantiles_are_bounded_monotone_and_order_free(
            mut xs in proptest::collection::vec(-1e12f64..1e12, 1..60),
            q1 in 0.0f64..1.0,
            q2 in 0.0f64..1.0,
        ) {
            let (lo, hi) = (q1.min(q2), q1.max(q2));
            let a = quantile(&xs, lo).unwrap();
            let b = quantile(&xs, hi).unwrap();
            let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            prop_assert!(min <= a && a <= b + 1e-3 && b <= max);
            xs.reverse();
            prop_assert_eq!(quantile(&xs, lo).unwrap(), a);
        }
    }
}
