//! Durations given as text (`10`, `2.5s`, `500ms`, `1h`): one parser for every option that
//! takes one, each with its own [`Span`]. Whatever the text, the answer is a duration inside
//! the span or an error that says what was expected; nothing overflows and nothing panics.

use std::time::Duration;

/// The durations one option takes: from `min` to `max`, both included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub min: Duration,
    pub max: Duration,
}

const NS: Duration = Duration::from_nanos(1);

/// A run, a trial, a step, a gap between packets, a log's sampling interval: up to 7 days
/// (a week-long soak is the longest test anyone runs; anything longer is a typo).
pub const RUN: Span = Span {
    min: NS,
    max: Duration::from_secs(7 * 86_400),
};
/// How long a server runs, or what a lock profile covers: up to a year.
pub const LONG: Span = Span {
    min: NS,
    max: Duration::from_secs(366 * 86_400),
};
/// A handshake step's timeout: a slow client's turn, 1 ms to 1 h.
pub const STEP: Span = Span {
    min: Duration::from_millis(1),
    max: Duration::from_secs(3600),
};

/// Units and their length in nanoseconds, longest first: the order [`format_duration`] tries.
const UNITS: [(&str, u128); 7] = [
    ("d", 86_400_000_000_000),
    ("h", 3_600_000_000_000),
    ("m", 60_000_000_000),
    ("s", 1_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("ns", 1),
];

/// Nanoseconds in one `unit`.
fn unit_ns(unit: &str) -> Option<u128> {
    let unit = match unit {
        "" => "s",
        "min" => "m",
        "µs" => "us",
        u => u,
    };
    UNITS.iter().find(|(u, _)| *u == unit).map(|(_, ns)| *ns)
}

/// `10` (seconds), `2.5s`, `500ms`, `5us`, `5µs`, `1500ns`, `1m`, `1h`, `1d`, within `span`.
/// The number is read exactly, as a decimal (no float rounding), and rounded to the nearest
/// nanosecond; whatever the text, the answer is a duration in the span or an error that says
/// what was expected.
pub fn parse_duration_in(text: &str, span: Span) -> Result<Duration, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("'{text}': a duration must be positive"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let syntax = || {
        format!("'{text}' is not a duration; expected e.g. 10, 2.5s, 500ms, 5us, 1500ns, 1m or 1h")
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() || frac.contains('.') {
        return Err(syntax());
    }
    let unit = unit.trim();
    let per = unit_ns(unit).ok_or_else(|| {
        format!("'{text}': unknown unit '{unit}'; expected ns, us, ms, s, m, h or d")
    })?;
    let too_long = || {
        format!(
            "'{text}' is longer than {}, the most this option takes",
            format_duration(span.max)
        )
    };
    // Digits past the 20th of the fraction are below a nanosecond of any unit.
    let frac = &frac[..frac.len().min(20)];
    let digits = |d: &str| -> Option<u128> {
        d.bytes().try_fold(0u128, |n, b| {
            n.checked_mul(10)?.checked_add(u128::from(b - b'0'))
        })
    };
    let scale = 10u128.pow(frac.len() as u32);
    let ns = digits(int)
        .and_then(|i| i.checked_mul(scale)?.checked_add(digits(frac)?))
        .and_then(|n| n.checked_mul(per)?.checked_add(scale / 2))
        .map(|n| n / scale)
        .ok_or_else(too_long)?;
    if ns == 0 {
        return Err(format!("'{text}': a duration must be positive"));
    }
    if ns > span.max.as_nanos() {
        return Err(too_long());
    }
    if ns < span.min.as_nanos() {
        return Err(format!(
            "'{text}' is shorter than {}, the least this option takes",
            format_duration(span.min)
        ));
    }
    // Within span.max, so within u64 nanoseconds.
    Ok(Duration::from_nanos(ns as u64))
}

/// `7d`, `1500ms`, `90s`: the largest unit that holds the duration whole; what
/// [`parse_duration_in`] reads back to the same duration.
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    let (unit, per) = UNITS
        .iter()
        .find(|(_, per)| ns.is_multiple_of(*per))
        .unwrap_or(&("ns", 1));
    format!("{}{unit}", ns / per)
}

/// A duration given as float seconds (a stored setting, a computed length), if it lies
/// within `span`.
pub fn secs_within(secs: f64, span: Span) -> Option<Duration> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| span.min <= *d && *d <= span.max)
}

#[cfg(test)]
mod tests {
    mod props {
        use super::super::*;
        use proptest::prelude::*;
        use std::time::Duration;

        /// A span with a floor above a nanosecond, as the sampler's interval has.
        const TEN_MS_TO_1H: Span = Span {
            min: Duration::from_millis(10),
            max: Duration::from_secs(3600),
        };

        fn span() -> impl Strategy<Value = Span> {
            prop_oneof![Just(RUN), Just(LONG), Just(STEP), Just(TEN_MS_TO_1H)]
        }

        proptest! {
            #[test]
            fn never_panics(text in "\\PC{0,40}", span in span()) {
                let _ = parse_duration_in(&text, span);
            }

            #[test]
            fn never_panics_on_duration_like_text(
                text in "-?[0-9]{0,45}(\\.[0-9]{0,45})? ?(ns|us|µs|ms|s|m|min|h|d|x)?",
                span in span(),
            ) {
                if let Ok(d) = parse_duration_in(&text, span) {
                    prop_assert!(span.min <= d && d <= span.max, "{} gave {:?}", text, d);
                }
            }

            #[test]
            fn reads_back_its_own_text(ns in 1u64..=LONG.max.as_nanos() as u64, unit in 0usize..7) {
                // Round values too, so that every unit is formatted.
                let per = [1u64, 1_000, 1_000_000, 1_000_000_000, 60_000_000_000,
                    3_600_000_000_000, 86_400_000_000_000][unit];
                for n in [ns, (ns / per).max(1) * per] {
                    let d = Duration::from_nanos(n);
                    prop_assert_eq!(parse_duration_in(&format_duration(d), LONG), Ok(d));
                }
            }

            #[test]
            fn refuses_what_is_out_of_bounds(extra in 1u64..u64::MAX / 2, span in span()) {
                let over = Duration::from_nanos(span.max.as_nanos() as u64 + extra);
                let e = parse_duration_in(&format_duration(over), span).unwrap_err();
                prop_assert!(e.contains("longer than"), "{}", e);
                let under = Duration::from_nanos(extra % span.min.as_nanos() as u64);
                if !under.is_zero() {
                    let e = parse_duration_in(&format_duration(under), span).unwrap_err();
                    prop_assert!(e.contains("shorter than"), "{}", e);
                }
            }
        }
    }
}
