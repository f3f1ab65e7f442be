//! Times that collection tools write around a log: timestamp lines between snapshots, `watch`
//! banners, and a time put before every line (`ts`, `while read l; do echo "$(date +%T) $l"`,
//! syslog-style collectors).

use super::common::days_from_civil;

/// `HH:MM:SS[.frac]` (a decimal comma too, as `date --iso-8601=ns` writes) to seconds of the day.
fn hms(s: &str) -> Option<f64> {
    let mut it = s.split(':');
    let h: f64 = it.next()?.parse::<u32>().ok().filter(|h| *h < 24)?.into();
    let m: f64 = it.next()?.parse::<u32>().ok().filter(|m| *m < 60)?.into();
    let sec: f64 = it
        .next()?
        .replace(',', ".")
        .parse::<f64>()
        .ok()
        .filter(|s| (0.0..61.0).contains(s))?;
    it.next().is_none().then_some(h * 3600.0 + m * 60.0 + sec)
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn month(s: &str) -> Option<u32> {
    MONTHS.iter().position(|m| *m == s).map(|i| i as u32 + 1)
}

/// A timestamp line, as seconds since the epoch (time zones other than an explicit offset are
/// taken as UTC: only differences between snapshots matter). Reads `date +%s[.%N]`, ISO 8601
/// and `date`'s default `Sat Nov 21 23:59:49 UTC 2026`, with or without a `time:` label and
/// decoration (`--- … ---`, `[…]`).
pub(crate) fn timestamp(line: &str) -> Option<f64> {
    let t = line.trim().trim_matches(|c: char| {
        matches!(c, '-' | '=' | '#' | '*' | '[' | ']') || c.is_whitespace()
    });
    let t = [
        "timestamp:",
        "time:",
        "date:",
        "Timestamp:",
        "Time:",
        "Date:",
    ]
    .iter()
    .find_map(|p| t.strip_prefix(p))
    .unwrap_or(t)
    .trim();
    // `date +%s` / `date +%s.%N`.
    let (int, frac) = t.split_once('.').unwrap_or((t, "0"));
    if (9..=11).contains(&int.len())
        && int.bytes().all(|b| b.is_ascii_digit())
        && !frac.is_empty()
        && frac.bytes().all(|b| b.is_ascii_digit())
    {
        return t.parse().ok();
    }
    // ISO 8601: `2026-11-21T23:59:49.123Z`, `2026-11-21 23:59:49+01:00`.
    if t.len() >= 19
        && t.as_bytes()[4] == b'-'
        && t.as_bytes()[7] == b'-'
        && matches!(t.as_bytes()[10], b'T' | b' ')
    {
        let y: i64 = t[..4].parse().ok()?;
        let mo: u32 = t[5..7].parse().ok().filter(|m| (1..=12).contains(m))?;
        let d: u32 = t[8..10].parse().ok().filter(|d| (1..=31).contains(d))?;
        let rest = t.get(11..)?;
        let zone_at = rest.find(['Z', '+', '-', ' ']).unwrap_or(rest.len());
        let secs = hms(&rest[..zone_at])?;
        let zone = rest[zone_at..].trim();
        let offset = match zone.as_bytes().first() {
            Some(b'+') | Some(b'-') => {
                let sign = if zone.starts_with('-') { -1.0 } else { 1.0 };
                let z = zone[1..].replace(':', "");
                let h: f64 = z.get(..2)?.parse::<u32>().ok()?.into();
                let m: f64 = z.get(2..4).unwrap_or("00").parse::<u32>().ok()?.into();
                sign * (h * 3600.0 + m * 60.0)
            }
            _ => 0.0,
        };
        return Some(days_from_civil(y, mo, d) as f64 * 86_400.0 + secs - offset);
    }
    // `date`: `Sat Nov 21 23:59:49 UTC 2026` (zone optional).
    let w: Vec<&str> = t.split_whitespace().collect();
    if (5..=6).contains(&w.len()) && w[0].len() == 3 && w[0].chars().all(char::is_alphabetic) {
        let mo = month(w[1])?;
        let d: u32 = w[2].parse().ok().filter(|d| (1..=31).contains(d))?;
        let secs = hms(w[3])?;
        let y: i64 = w[w.len() - 1]
            .parse()
            .ok()
            .filter(|y| (1970..=9999).contains(y))?;
        return Some(days_from_civil(y, mo, d) as f64 * 86_400.0 + secs);
    }
    None
}

/// The banner `watch` prints above each screen:
/// `Every 1.0s: cat /proc/softirqs      host: Tue Nov 24 10:00:01 2026`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct WatchBanner {
    /// The interval `watch` was asked for (`-n`).
    pub interval_s: Option<f64>,
    /// The time at the banner's right (one-second resolution), when present.
    pub time: Option<f64>,
}

/// Reads a `watch` banner line.
pub(crate) fn watch_banner(line: &str) -> Option<WatchBanner> {
    let rest = line.trim().strip_prefix("Every ")?;
    let (every, _) = rest.split_once("s:")?;
    let interval_s = every
        .trim()
        .replace(',', ".")
        .parse::<f64>()
        .ok()
        .filter(|v| *v > 0.0 && v.is_finite());
    // procps prints the date last, `%a %b %e %H:%M:%S %Y` (five words).
    let words: Vec<&str> = line.split_whitespace().collect();
    let time = (words.len() >= 5)
        .then(|| timestamp(&words[words.len() - 5..].join(" ")))
        .flatten();
    Some(WatchBanner { interval_s, time })
}

/// The shape of a time a collector put before each line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PrefixKind {
    /// A date and time (epoch seconds, ISO 8601, `date`'s default).
    Dated,
    /// A time of day: `10:00:01`, `10:00:01.250`, `10:00:01 AM`.
    Clock,
    /// syslog and `ts`'s default: `Nov 24 10:00:01` (no year).
    MonthDayClock,
}

impl PrefixKind {
    fn describe(self) -> &'static str {
        match self {
            PrefixKind::Dated => "a date and time",
            PrefixKind::Clock => "a time of day",
            PrefixKind::MonthDayClock => "a month, day and time of day",
        }
    }

    /// How far apart two readings can be before a smaller one means the clock wrapped.
    fn wrap_s(self) -> Option<f64> {
        match self {
            PrefixKind::Dated => None,
            PrefixKind::Clock => Some(86_400.0),
            PrefixKind::MonthDayClock => Some(366.0 * 86_400.0),
        }
    }
}

/// A time prefix read from the first words of a line: its kind, seconds, and whether a zone
/// was given (so that the seconds are since the epoch in UTC).
fn prefix_time(words: &[&str]) -> Option<(PrefixKind, f64, bool)> {
    let joined = words.join(" ");
    let t = joined
        .trim_matches(|c: char| matches!(c, '[' | ']' | '(' | ')' | '<' | '>' | '|' | ','))
        .trim_end_matches(':')
        .trim();
    if t.is_empty() {
        return None;
    }
    let ws: Vec<&str> = t.split_whitespace().collect();
    match ws.as_slice() {
        [clock] if clock.contains(':') && !clock.contains('-') => {
            return hms(clock).map(|s| (PrefixKind::Clock, s, false));
        }
        [clock, half @ ("AM" | "PM" | "am" | "pm")] => {
            let s = hms(clock)?;
            if !(3600.0..13.0 * 3600.0).contains(&s) {
                return None;
            }
            let pm = half.eq_ignore_ascii_case("PM");
            let s = match (pm, s >= 12.0 * 3600.0) {
                (false, true) => s - 12.0 * 3600.0,
                (true, false) => s + 12.0 * 3600.0,
                _ => s,
            };
            return Some((PrefixKind::Clock, s, false));
        }
        [mon, day, clock] if month(mon).is_some() => {
            let d: u32 = day.parse().ok().filter(|d| (1..=31).contains(d))?;
            let s = hms(clock)?;
            // A leap year, so that Feb 29 has a place; only differences are used.
            let days = days_from_civil(2000, month(mon)?, d);
            return Some((PrefixKind::MonthDayClock, days as f64 * 86_400.0 + s, false));
        }
        _ => {}
    }
    let secs = timestamp(t)?;
    let zoned = !t.contains(':')
        || t.ends_with('Z')
        || t.contains(" UTC")
        || t.contains(" GMT")
        || t.get(19..).is_some_and(|z| z.contains(['+', '-']));
    Some((PrefixKind::Dated, secs, zoned))
}

/// A log whose every line a collector prefixed, with the prefixes taken off.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Prefixed {
    /// The log without the prefixes; line numbers are unchanged.
    pub text: String,
    /// The prefix's time for each line (index = line number − 1), when the prefix is a time:
    /// seconds since the epoch for dated prefixes, otherwise from an arbitrary origin, made
    /// monotonic across midnight.
    pub times: Vec<Option<f64>>,
    /// Whether the times are since the epoch in UTC.
    pub absolute: bool,
    /// What the prefix is, in words, for a note.
    pub what: String,
}

/// The text without the prefix a collector put before each line (see [`strip_line_prefix`]),
/// or the text itself when it has none.
pub(crate) fn unprefixed(
    text: &str,
    is_anchor: impl Fn(&str) -> bool,
) -> (std::borrow::Cow<'_, str>, Option<Prefixed>) {
    match strip_line_prefix(text, is_anchor) {
        Some(p) => (std::borrow::Cow::Owned(p.text.clone()), Some(p)),
        None => (std::borrow::Cow::Borrowed(text), None),
    }
}

/// Byte offsets of the whitespace-separated words of a line.
fn word_starts(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push((s, &line[s..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &line[s..]));
    }
    out
}

/// The shape of the prefix a collector put before each line.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Time(PrefixKind),
    Literal(Vec<String>),
}

/// Takes a collector's prefix off one line at a time (see [`strip_line_prefix`]), so that a
/// log read line by line is stripped as the whole text would be.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stripper {
    /// How many words the prefix is.
    k: usize,
    shape: Shape,
    /// Times of day made monotonic across midnight: the wraps so far, and the last time.
    offset: f64,
    prev: Option<f64>,
    zoned_all: bool,
    stripped: usize,
}

impl Stripper {
    /// Finds the prefix in the first 40 non-blank of `lines` (a log's head) whose header
    /// `is_anchor` recognises. `None` when the header is found without a prefix, or not at all.
    pub(crate) fn find<'l>(
        lines: impl IntoIterator<Item = &'l str>,
        is_anchor: impl Fn(&str) -> bool,
    ) -> Option<Stripper> {
        for line in lines.into_iter().filter(|l| !l.trim().is_empty()).take(40) {
            let t = line.trim();
            if is_anchor(t) {
                return None;
            }
            let words = word_starts(t);
            for k in 1..=6.min(words.len().saturating_sub(1)) {
                if !is_anchor(t[words[k].0..].trim()) {
                    continue;
                }
                let head: Vec<&str> = words[..k].iter().map(|w| w.1).collect();
                let shape = match prefix_time(&head) {
                    Some((kind, _, _)) => Shape::Time(kind),
                    None if head.iter().any(|w| w.chars().any(char::is_alphabetic)) => {
                        Shape::Literal(head.iter().map(|w| (*w).to_string()).collect())
                    }
                    None => continue,
                };
                return Some(Stripper {
                    k,
                    shape,
                    offset: 0.0,
                    prev: None,
                    zoned_all: true,
                    stripped: 0,
                });
            }
        }
        None
    }

    /// One line without its prefix (the line itself when its first words are not of the
    /// prefix's shape), and the prefix's time, made monotonic across midnight. Lines must come
    /// in order.
    pub(crate) fn strip<'l>(&mut self, line: &'l str) -> (&'l str, Option<f64>) {
        let t = line.trim();
        let words = word_starts(t);
        let mut time = None;
        let keep_from = if words.len() > self.k {
            let head: Vec<&str> = words[..self.k].iter().map(|w| w.1).collect();
            match &self.shape {
                Shape::Time(kind) => match prefix_time(&head) {
                    Some((k2, secs, zoned)) if k2 == *kind => {
                        time = Some(secs);
                        self.zoned_all &= zoned;
                        Some(words[self.k].0)
                    }
                    _ => None,
                },
                Shape::Literal(lit) => (head == *lit).then_some(words[self.k].0),
            }
        } else {
            None
        };
        if let (Some(t), Shape::Time(kind)) = (time.as_mut(), &self.shape) {
            if let Some(wrap) = kind.wrap_s() {
                if self.prev.is_some_and(|p| *t + self.offset < p - wrap / 2.0) {
                    self.offset += wrap;
                }
            }
            *t += self.offset;
            self.prev = Some(*t);
        }
        match keep_from {
            Some(at) => {
                self.stripped += 1;
                (&t[at..], time)
            }
            None => (line, None),
        }
    }

    /// What the prefix is, in words, for a note, and whether its times are since the epoch
    /// in UTC: said once every line has been through [`Stripper::strip`].
    pub(crate) fn what(&self) -> (String, bool) {
        let stripped = self.stripped;
        match &self.shape {
            Shape::Time(kind) => (
                format!("{} ({stripped} lines)", kind.describe()),
                *kind == PrefixKind::Dated && self.zoned_all,
            ),
            Shape::Literal(lit) => (format!("'{}' ({stripped} lines)", lit.join(" ")), false),
        }
    }

    /// The note an importer adds when it took the prefixes off.
    pub(crate) fn note(&self, timed: bool) -> String {
        let (what, _) = self.what();
        prefix_note(&what, timed)
    }
}

fn prefix_note(what: &str, timed: bool) -> String {
    format!(
        "every line carried a prefix added by the collecting tool, {what}; it was taken off{}",
        if timed {
            " and its times place the rows"
        } else {
            ""
        }
    )
}

/// Finds the prefix a collector put before each line of a log whose header `is_anchor`
/// recognises (`procs ---memory---`), and returns the log without it. `None` when the header
/// is found without a prefix, or not at all within the first 40 non-blank lines.
///
/// The prefix is either a time (one to six words: `10:00:01`, `2026-11-24 10:00:01`,
/// `Nov 24 10:00:01`, `[1795305589.5]`) or the same words on every line (a host name). A line
/// is stripped only when its first words have the same shape, so a command echoed above the
/// log, or a line the collector did not prefix, is left alone.
pub(crate) fn strip_line_prefix(text: &str, is_anchor: impl Fn(&str) -> bool) -> Option<Prefixed> {
    let mut stripper = Stripper::find(text.lines(), is_anchor)?;
    let mut out = String::with_capacity(text.len());
    let mut times = Vec::new();
    for line in text.lines() {
        let (kept, time) = stripper.strip(line);
        out.push_str(kept);
        out.push('\n');
        times.push(time);
    }
    let (what, absolute) = stripper.what();
    Some(Prefixed {
        text: out,
        times,
        absolute,
        what,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(timestamp("1795305589"), Some(1_795_305_589.0));
        assert_eq!(timestamp("1795305589.5"), Some(1_795_305_589.5));
        assert_eq!(timestamp("2026-11-21T23:59:49Z"), Some(1_795_305_589.0));
        assert_eq!(
            timestamp("--- 2026-11-21 23:59:49 ---"),
            Some(1_795_305_589.0)
        );
        assert_eq!(
            timestamp("2026-11-22T00:59:49+01:00"),
            Some(1_795_305_589.0)
        );
        assert_eq!(
            timestamp("2026-11-21T23:59:49,25+00:00"),
            Some(1_795_305_589.25)
        );
        assert_eq!(
            timestamp("Sat Nov 21 23:59:49 UTC 2026"),
            Some(1_795_305_589.0)
        );
        assert_eq!(
            timestamp("date: Sat Nov 21 23:59:49 2026"),
            Some(1_795_305_589.0)
        );
        assert_eq!(timestamp("00000001 00000002"), None);
        assert_eq!(timestamp("12345"), None);
        assert_eq!(timestamp("2026-11-21"), None, "a date alone is no time");
    }

    #[test]
    fn watch_banners() {
        let b = watch_banner(
            "Every 1.0s: cat /proc/softirqs            web01: Sat Nov 21 23:59:49 2026",
        )
        .unwrap();
        assert_eq!(b.interval_s, Some(1.0));
        assert_eq!(b.time, Some(1_795_305_589.0));
        // procps 3.3 (no host name), a day padded with a space.
        let b = watch_banner("Every 2,5s: cat /proc/net/softnet_stat    Mon Nov  2 10:00:00 2026")
            .unwrap();
        assert_eq!(b.interval_s, Some(2.5));
        assert!(b.time.is_some());
        // A banner cut short keeps its interval.
        let b = watch_banner("Every 1.0s: cat /proc/interrupts").unwrap();
        assert_eq!((b.interval_s, b.time), (Some(1.0), None));
        assert_eq!(watch_banner("Everything is fine: 1s"), None);
        assert_eq!(watch_banner("CPU0 CPU1"), None);
    }

    fn anchor(t: &str) -> bool {
        t.starts_with("procs")
    }

    #[test]
    fn time_of_day_prefixes_are_stripped_and_wrap_at_midnight() {
        let text = "$ vmstat 1 | ts\n23:59:59 procs --\n23:59:59 r b\n23:59:59 1 2\n00:00:00 3 4\n00:00:01.5 5 6\n";
        let p = strip_line_prefix(text, anchor).unwrap();
        assert_eq!(
            p.text, "$ vmstat 1 | ts\nprocs --\nr b\n1 2\n3 4\n5 6\n",
            "line numbers kept"
        );
        assert_eq!(p.times[0], None);
        assert_eq!(p.times[3], Some(86_399.0));
        assert_eq!(p.times[4], Some(86_400.0), "midnight does not go back");
        assert_eq!(p.times[5], Some(86_401.5));
        assert!(!p.absolute);
        assert!(p.what.starts_with("a time of day"), "{}", p.what);
    }

    #[test]
    fn every_prefix_shape() {
        for (prefix, absolute) in [
            ("2026-11-24 10:00:01", false),
            ("2026-11-24T10:00:01Z", true),
            ("[2026-11-24 10:00:01+01:00]", true),
            ("1795305589.25", true),
            ("Nov 24 10:00:01", false),
            ("10:00:01 AM", false),
            ("web01:", false),
        ] {
            let text = format!("{prefix} procs --\n{prefix} r b\n{prefix} 1 2\n");
            let p = strip_line_prefix(&text, anchor).unwrap_or_else(|| panic!("{prefix}"));
            assert_eq!(p.text, "procs --\nr b\n1 2\n", "{prefix}");
            assert_eq!(p.absolute, absolute, "{prefix}");
        }
        let pm = strip_line_prefix("12:30:00 PM procs\n01:00:00 PM 1\n", anchor).unwrap();
        assert_eq!(pm.times, vec![Some(45_000.0), Some(46_800.0)]);
    }

    #[test]
    fn no_prefix_no_strip() {
        assert_eq!(strip_line_prefix("procs --\n r b\n", anchor), None);
        assert_eq!(strip_line_prefix("nothing here\n", anchor), None);
        // A number before the header is not a prefix shape this reader trusts.
        assert_eq!(strip_line_prefix("42 procs --\n42 1 2\n", anchor), None);
    }

    #[test]
    fn lines_of_another_shape_are_left_alone() {
        let text = "10:00:00 procs\n10:00:00 r b\nvmstat: interrupted\n10:00:01 1 2\n";
        let p = strip_line_prefix(text, anchor).unwrap();
        assert_eq!(p.text, "procs\nr b\nvmstat: interrupted\n1 2\n");
        assert_eq!(p.times[2], None);
    }
}
