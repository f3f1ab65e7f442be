//! Plausibility checks shared by the readers: what a log says that cannot be true of a real
//! machine.
//!
//! Captures from other people's machines arrive damaged in ways a parser does not notice:
//! two captures interleaved, a log pasted twice, a counter reset, a table wrapped. Every line
//! still parses, but the figures cannot all be true. The readers feed what they read to the
//! checks here, once per format, and every impossible fact becomes an [`Implausible`] in
//! `run.meta.implausible` (with its line) and a warning. Nothing is dropped: the run imports as
//! it would have, marked, and the analyzer decides what to trust.
//!
//! The checks:
//! - **a key that repeats inside one block** ([`KeyBlocks`]): the CPUs of one timestamp's block
//!   of a per-CPU table (0, 1, 2, 0, 1 at one time is two captures interleaved), likewise the
//!   interfaces or interrupts of one block;
//! - **a CPU the machine does not have** ([`KeyBlocks::check`] with a [`Declared`] count): a
//!   block with more CPU rows than the file says the machine has, or a CPU numbered beyond it;
//! - **shares that cannot add up** ([`check_shares`]): a CPU row whose percentages sum far
//!   from 100, or one percentage above 100 or below 0;
//! - **a counter that goes backwards** ([`went_backwards`]) in a sequence of since-boot
//!   counters, other than by a plausible 32- or 64-bit wrap;
//! - **time that runs backwards** inside one capture ([`time_backwards`]).
//!
//! An offline CPU is not implausible: sysstat prints it with every field 0.00, idle included,
//! which would read as 100 % busy. The readers leave its values missing and say so here
//! ([`Checks::offline`], [`is_offline`]).

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use netceil_model::{Implausible, Run};

/// The kinds of check, so that one kind cannot flood the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Check {
    /// A CPU (or interface, interrupt, scheduler) listed twice in one block.
    Repeat,
    /// More CPUs than the machine has, or one it does not have.
    CpuCount,
    /// Percentages that cannot add up.
    Shares,
    /// A since-boot counter that went backwards.
    Counter,
    /// A time earlier than the one before it.
    Time,
    /// Two machines' captures in one file.
    Machine,
}

impl Check {
    fn describe(self) -> &'static str {
        match self {
            Check::Repeat => "repeated rows",
            Check::CpuCount => "CPUs the machine does not have",
            Check::Shares => "percentages that cannot add up",
            Check::Counter => "counters that went backwards",
            Check::Time => "times that run backwards",
            Check::Machine => "captures of different machines",
        }
    }
}

/// Facts of each kind recorded one by one; beyond this, only counted.
const MAX_PER_CHECK: usize = 20;
/// Impossible facts also given as warnings one by one; beyond this, one summary warning.
const MAX_WARNINGS: usize = 5;

/// The impossible facts and offline CPUs one import found.
#[derive(Debug, Default)]
pub(crate) struct Checks {
    found: Vec<(Check, Implausible)>,
    per_check: HashMap<Check, usize>,
    /// Offline CPUs: the CPU as printed, the first line where it was, and in how many rows.
    offline: BTreeMap<String, (usize, usize)>,
}

impl Checks {
    pub(crate) fn new() -> Self {
        Checks::default()
    }

    /// Records an impossible fact (at most [`MAX_PER_CHECK`] of each kind in words).
    pub(crate) fn mark(&mut self, check: Check, line: Option<usize>, what: impl Into<String>) {
        let n = self.per_check.entry(check).or_insert(0);
        *n += 1;
        if *n <= MAX_PER_CHECK {
            self.found.push((
                check,
                Implausible {
                    line,
                    what: what.into(),
                },
            ));
        }
    }

    /// Takes in the facts another set of checks found (after this one's).
    pub(crate) fn absorb(&mut self, other: Checks) {
        for (check, f) in other.found {
            let n = self.per_check.entry(check).or_insert(0);
            *n += 1;
            if *n <= MAX_PER_CHECK {
                self.found.push((check, f));
            }
        }
        for (check, n) in other.per_check {
            let kept = other_kept(n);
            *self.per_check.entry(check).or_insert(0) += n - kept;
        }
        for (cpu, (line, rows)) in other.offline {
            let e = self.offline.entry(cpu).or_insert((line, 0));
            e.1 += rows;
        }
    }

    /// Records an offline CPU's row.
    pub(crate) fn offline(&mut self, cpu: &str, line: usize) {
        match self.offline.get_mut(cpu) {
            Some(e) => e.1 += 1,
            None => {
                self.offline.insert(cpu.to_string(), (line, 1));
            }
        }
    }

    /// Whether anything impossible was found.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// Puts the facts into `run.meta.implausible` and the warnings (each warning starts with
    /// `prefix`, e.g. the file name and a colon, or nothing when the caller adds it).
    pub(crate) fn finish(self, run: &mut Run, warnings: &mut Vec<String>, prefix: &str) {
        let mut found: Vec<Implausible> = self.found.into_iter().map(|(_, f)| f).collect();
        let mut kinds: Vec<(Check, usize)> = self.per_check.into_iter().collect();
        kinds.sort();
        for (check, n) in kinds {
            if n > MAX_PER_CHECK {
                found.push(Implausible {
                    line: None,
                    what: format!(
                        "{} more {} like those above",
                        n - MAX_PER_CHECK,
                        check.describe()
                    ),
                });
            }
        }
        for (k, f) in found.iter().enumerate() {
            if k == MAX_WARNINGS {
                warnings.push(format!(
                    "{prefix}{} more facts that cannot be true of a real machine (all in the run's meta.implausible)",
                    found.len() - MAX_WARNINGS
                ));
                break;
            }
            let at = f.line.map(|l| format!("line {l}: ")).unwrap_or_default();
            warnings.push(format!(
                "{prefix}{at}cannot be true: {}; the rows around it are suspect",
                f.what
            ));
        }
        for (cpu, (line, rows)) in &self.offline {
            let more = match rows {
                1 => String::new(),
                n => format!(" and {} more rows", n - 1),
            };
            warnings.push(format!(
                "{prefix}line {line}{more}: CPU {cpu} was offline (every share 0, idle included); its values there are left missing, not read as 100 % busy"
            ));
        }
        run.meta.implausible.append(&mut found);
    }
}

/// Of `n` facts of one kind, how many a [`Checks`] kept in words.
fn other_kept(n: usize) -> usize {
    n.min(MAX_PER_CHECK)
}

/// A CPU count the file states, and where.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Declared {
    pub(crate) cpus: u32,
    /// The line that says it.
    pub(crate) line: Option<usize>,
    /// What says it: `the banner`, `the header`.
    pub(crate) what: &'static str,
}

impl Declared {
    fn says(&self) -> String {
        match self.line {
            Some(l) => format!("{} at line {l}", self.what),
            None => self.what.to_string(),
        }
    }
}

/// `1 CPU`, `2 CPUs`.
fn count_cpus(n: u32) -> String {
    if n == 1 {
        "1 CPU".into()
    } else {
        format!("{n} CPUs")
    }
}

/// The block being read: its keys so far (hashed, so no key is copied) and what it showed.
#[derive(Debug, Default)]
struct Open {
    noun: &'static str,
    start: usize,
    /// Keys must come in increasing numeric order (the kernel prints CPUs in order).
    ascending: bool,
    /// Hash of each key → the line it was first on.
    seen: HashMap<u64, usize, BuildHasherDefault<Prehashed>>,
    cpu_rows: usize,
    /// The first repeated key, its line and the line it was first on; and how many repeats.
    first_repeat: Option<(String, usize, usize)>,
    repeats: usize,
    /// The previous numeric key and its line, while the block is ascending.
    prev: Option<(u64, usize)>,
    descended: bool,
}

/// The keyed blocks of a table (the rows of one time, or of one snapshot), checked as they
/// are read and summed up by [`KeyBlocks::check`] once the table is: no key twice in one
/// block, and, for CPUs, no more rows than the machine has CPUs and no CPU beyond its count.
/// Only the open block's keys are kept, so a table of millions of rows costs little memory.
#[derive(Debug, Default)]
pub(crate) struct KeyBlocks {
    open: Option<Open>,
    /// Facts found in closed blocks.
    found: Checks,
    /// Closed blocks of CPU rows: where each began and how many CPU rows it had, when that
    /// was more than any block before (only those can exceed a count).
    largest: Vec<(usize, usize)>,
    /// Every CPU number seen (the index): the line it was first on, and in how many rows.
    cpus: Vec<(usize, usize)>,
}

/// A key's hash, so that a block's keys need not be copied.
fn key_hash(key: &str) -> u64 {
    super::common::fnv1a64_words(key.as_bytes())
}

/// The hasher of a map whose keys are hashes already: it passes them through.
#[derive(Debug, Default, Clone, Copy)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// CPU numbers above this are not tracked one by one (no machine has that many).
const MAX_TRACKED_CPU: u32 = 1 << 16;

impl KeyBlocks {
    pub(crate) fn new() -> Self {
        KeyBlocks::default()
    }

    /// Starts a block of `noun` rows at `line` (closing the one before).
    pub(crate) fn start(&mut self, noun: &'static str, line: usize) {
        self.close();
        let mut seen = self.open.take().map(|o| o.seen).unwrap_or_default();
        seen.clear();
        self.open = Some(Open {
            noun,
            start: line,
            seen,
            ..Open::default()
        });
    }

    /// Starts a block whose numeric keys must also increase row by row.
    pub(crate) fn start_ascending(&mut self, noun: &'static str, line: usize) {
        self.start(noun, line);
        if let Some(o) = self.open.as_mut() {
            o.ascending = true;
        }
    }

    /// One row of the open block (a block of `CPU` rows is started if none is).
    pub(crate) fn row(&mut self, key: &str, line: usize) {
        if self.open.as_ref().is_none_or(|o| o.noun.is_empty()) {
            self.start("CPU", line);
        }
        let Some(o) = self.open.as_mut() else { return };
        let hash = key_hash(key);
        match o.seen.get(&hash) {
            Some(&at) => {
                o.repeats += 1;
                if o.first_repeat.is_none() {
                    o.first_repeat = Some((key.to_string(), line, at));
                }
                return;
            }
            None => {
                o.seen.insert(hash, line);
            }
        }
        let number = key.parse::<u64>().ok();
        if o.noun == "CPU" {
            if let Some(cpu) = number.and_then(|n| u32::try_from(n).ok()) {
                o.cpu_rows += 1;
                let cpu = cpu.min(MAX_TRACKED_CPU) as usize;
                if self.cpus.len() <= cpu {
                    self.cpus.resize(cpu + 1, (0, 0));
                }
                let e = &mut self.cpus[cpu];
                if e.1 == 0 {
                    e.0 = line;
                }
                e.1 += 1;
            }
        }
        if o.ascending && !o.descended {
            if let Some(k) = number {
                if let Some((p, pl)) = o.prev.filter(|(p, _)| k < *p) {
                    o.descended = true;
                    self.found.mark(
                        Check::Repeat,
                        Some(line),
                        format!(
                            "{noun} {k} at line {line} comes after {noun} {p} (line {pl}) inside the block that began at line {start}: the kernel lists them in ascending order, so two captures are interleaved",
                            noun = o.noun,
                            start = o.start
                        ),
                    );
                }
                o.prev = Some((k, line));
            }
        }
    }

    /// Closes the open block: its repeats become facts, and its CPU row count is kept for
    /// [`KeyBlocks::check`].
    fn close(&mut self) {
        let Some(o) = self.open.as_mut() else { return };
        if o.noun.is_empty() {
            return;
        }
        if let Some((key, line, at)) = o.first_repeat.take() {
            let more = match o.repeats {
                1 => String::new(),
                n => format!(" ({n} repeated rows in this block)"),
            };
            self.found.mark(
                Check::Repeat,
                Some(line),
                format!(
                    "{} {key} appears again at line {line} inside the block that began at line {} (first at line {at}){more}: two captures interleaved, or rows pasted twice",
                    o.noun, o.start
                ),
            );
        } else if o.cpu_rows > self.largest.last().map_or(0, |l| l.1) {
            self.largest.push((o.start, o.cpu_rows));
        }
        // Closed: a later row starts a new block.
        o.noun = "";
    }

    /// The facts of every block, into `checks`. `declared` is the machine's CPU count as the
    /// file states it; it applies to blocks of CPU rows, whose numeric keys are CPU numbers.
    /// Blocks with repeated rows are not counted again: the repeat is the fact.
    pub(crate) fn check(mut self, declared: Option<&Declared>, checks: &mut Checks) {
        self.close();
        checks.absorb(self.found);
        let Some(d) = declared else { return };
        for (start, rows) in self.largest {
            if rows > d.cpus as usize {
                checks.mark(
                    Check::CpuCount,
                    Some(start),
                    format!(
                        "the block that began at line {start} has {rows} CPU rows, but {} says the machine has {}",
                        d.says(),
                        count_cpus(d.cpus)
                    ),
                );
                // Each larger block says the same again: the first is enough.
                break;
            }
        }
        let beyond = self.cpus.iter().enumerate().skip(d.cpus as usize);
        for (cpu, (line, rows)) in beyond.filter(|(_, c)| c.1 > 0) {
            let times = if *rows > 1 {
                format!(" (in {rows} rows)")
            } else {
                String::new()
            };
            checks.mark(
                Check::CpuCount,
                Some(*line),
                format!(
                    "CPU {cpu} at line {line}{times} does not exist: {} says the machine has {} (0–{})",
                    d.says(),
                    count_cpus(d.cpus),
                    d.cpus.saturating_sub(1)
                ),
            );
        }
    }
}

/// Checks the CPU numbers of a header (`CPU0 CPU1 …` of /proc/interrupts, the `cpuN` titles
/// of FreeBSD `vmstat -P`, sar -I's `CPUn` columns): none twice, none beyond `declared`.
pub(crate) fn check_header_cpus(
    cpus: &[u32],
    line: usize,
    declared: Option<&Declared>,
    checks: &mut Checks,
) {
    for (k, cpu) in cpus.iter().enumerate() {
        if cpus[..k].contains(cpu) {
            checks.mark(
                Check::Repeat,
                Some(line),
                format!(
                    "CPU {cpu} is named twice in the header at line {line}: two headers run together"
                ),
            );
            break;
        }
    }
    if let Some(d) = declared {
        if let Some(cpu) = cpus.iter().find(|c| **c >= d.cpus) {
            checks.mark(
                Check::CpuCount,
                Some(line),
                format!(
                    "the header at line {line} has a column for CPU {cpu}, but {} says the machine has {}",
                    d.says(),
                    count_cpus(d.cpus)
                ),
            );
        }
    }
}

/// How far a row's shares may sum from 100 and still be rounding.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ShareRange {
    pub(crate) low: f64,
    pub(crate) high: f64,
}

/// Two-decimal sysstat shares.
pub(crate) const SYSSTAT_SHARES: ShareRange = ShareRange {
    low: 90.0,
    high: 110.0,
};

/// vmstat's integer shares: each rounded on its own, so a few points either way.
pub(crate) const VMSTAT_SHARES: ShareRange = ShareRange {
    low: 85.0,
    high: 115.0,
};

/// Points a single share may stray past 0 or 100 before it is impossible (see
/// [`check_shares`]).
pub(crate) const SHARE_SKEW: f64 = 5.0;

/// How far below 0 a share may read in a row that still adds up to 100 (a counter that
/// stepped back between two reads, the rest of the row consistent with it).
pub(crate) const NEGATIVE_SKEW: f64 = 15.0;

/// Whether a CPU row is an offline CPU as sysstat prints it: every share 0, idle included.
pub(crate) fn is_offline(shares: &[(&str, f64)]) -> bool {
    !shares.is_empty() && shares.iter().all(|(_, v)| *v == 0.0)
}

/// Checks one row of CPU shares (`who` names it when there is something to say: `CPU 3`,
/// `all CPUs`): no share more than [`SHARE_SKEW`] above 100 or below 0, and a sum within
/// `range`. `optional` names
/// shares that some tool versions count twice (guest time inside user time): the row passes
/// if it adds up with or without them.
pub(crate) fn check_shares(
    checks: &mut Checks,
    line: usize,
    who: &dyn Fn() -> String,
    shares: &[(&str, f64)],
    optional: &[&str],
    range: ShareRange,
) {
    if shares.is_empty() {
        return;
    }
    // A few points past 0 or 100 are the kernel's tick accounting near full load (a CPU's
    // idle and iowait counters can step back a little on tickless kernels, and sysstat prints
    // the negative remainder as it finds it, the row still adding up to 100); past that margin,
    // or negative in a row that does not add up, no accounting explains them.
    let sum: f64 = shares.iter().map(|(_, v)| v).sum();
    let adds_up = (range.low..=range.high).contains(&sum);
    let floor = if adds_up { -NEGATIVE_SKEW } else { -SHARE_SKEW };
    if let Some((name, v)) = shares
        .iter()
        .find(|(_, v)| *v > 100.0 + SHARE_SKEW || *v < floor)
    {
        checks.mark(
            Check::Shares,
            Some(line),
            format!(
                "{name} of {} is {v} at line {line}: a share of a CPU's time is between 0 and 100 %",
                who()
            ),
        );
        return;
    }
    let without: f64 = shares
        .iter()
        .filter(|(n, _)| !optional.contains(n))
        .map(|(_, v)| v)
        .sum();
    let fits = |s: f64| (range.low..=range.high).contains(&s);
    if !fits(sum) && !fits(without) {
        let names: Vec<&str> = shares.iter().map(|(n, _)| *n).collect();
        checks.mark(
            Check::Shares,
            Some(line),
            format!(
                "the shares of {} at line {line} add up to {sum:.2} % ({}), not 100 %",
                who(),
                names.join(" + ")
            ),
        );
    }
}

/// Whether a since-boot counter's step from `prev` to `cur` is a decrease that no wrap
/// explains: a 32-bit counter wrapping moves less than half its range (`2^32 − prev + cur`
/// below 2^31), and so does a 64-bit one.
pub(crate) fn went_backwards(prev: u64, cur: u64) -> bool {
    if cur >= prev {
        return false;
    }
    const TWO_32: u64 = 1 << 32;
    let wrap32 = prev < TWO_32 && TWO_32 - prev + cur < (1 << 31);
    let wrap64 = cur.wrapping_sub(prev) < (1 << 63);
    !(wrap32 || wrap64)
}

/// Records a time earlier than the one before it (`now`/`before` as printed).
pub(crate) fn time_backwards(
    checks: &mut Checks,
    line: usize,
    now: &str,
    before_line: usize,
    before: &str,
    rollover_too_long: bool,
) {
    let why = if rollover_too_long {
        ", and not by a midnight rollover (the next day's time would leave a gap of more than 12 hours)"
    } else {
        ""
    };
    checks.mark(
        Check::Time,
        Some(line),
        format!(
            "the time at line {line} ({now}) is earlier than the one at line {before_line} ({before}){why}: a log pasted twice, or two captures interleaved"
        ),
    );
}

/// The longest gap a midnight rollover may explain: a capture's next sample does not come
/// half a day later.
pub(crate) const MAX_ROLLOVER_GAP_S: f64 = 12.0 * 3600.0;

/// `HH:MM:SS` of seconds of the day, for messages.
pub(crate) fn clock(secs: f64) -> String {
    let s = secs.rem_euclid(86_400.0) as u64;
    format!("{:02}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_model::RunSource;

    fn run() -> Run {
        Run::new(
            "x",
            RunSource::Imported {
                format: "x".into(),
                file: "f".into(),
            },
        )
    }

    #[test]
    fn repeats_and_counts() {
        let mut b = KeyBlocks::new();
        b.start("CPU", 9);
        for (k, l) in [("all", 9), ("0", 10), ("1", 11), ("0", 12)] {
            b.row(k, l);
        }
        b.start("CPU", 14);
        for (k, l) in [("0", 14), ("1", 15), ("2", 16)] {
            b.row(k, l);
        }
        let mut c = Checks::new();
        let d = Declared {
            cpus: 2,
            line: Some(1),
            what: "the banner",
        };
        b.check(Some(&d), &mut c);
        let mut r = run();
        let mut w = Vec::new();
        c.finish(&mut r, &mut w, "f: ");
        let what: Vec<&str> = r.meta.implausible.iter().map(|i| i.what.as_str()).collect();
        assert_eq!(r.meta.implausible[0].line, Some(12));
        assert!(
            what[0].starts_with("CPU 0 appears again at line 12 inside the block that began at line 9 (first at line 10)"),
            "{what:?}"
        );
        assert!(what[1].contains("has 3 CPU rows"), "{what:?}");
        assert!(
            what[2].starts_with("CPU 2 at line 16 does not exist"),
            "{what:?}"
        );
        assert_eq!(w.len(), 3);
        assert!(
            w[0].starts_with("f: line 12: cannot be true: CPU 0"),
            "{w:?}"
        );
    }

    #[test]
    fn ascending_blocks() {
        let mut b = KeyBlocks::new();
        b.start_ascending("CPU", 3);
        for (k, l) in [("0", 3), ("1", 4), ("3", 5), ("2", 6)] {
            b.row(k, l);
        }
        let mut c = Checks::new();
        b.check(None, &mut c);
        assert_eq!(c.found[0].1.line, Some(6));
        assert!(c.found[0].1.what.contains("comes after CPU 3"));
    }

    #[test]
    fn shares() {
        let mut c = Checks::new();
        let ok = [("%usr", 95.5), ("%sys", 4.0), ("%idle", 0.5)];
        check_shares(&mut c, 1, &|| "CPU 0".into(), &ok, &[], SYSSTAT_SHARES);
        // Old sysstat counted guest time in %user too.
        let guest = [("%user", 60.0), ("%guest", 50.0), ("%idle", 40.0)];
        check_shares(
            &mut c,
            2,
            &|| "CPU 0".into(),
            &guest,
            &["%guest"],
            SYSSTAT_SHARES,
        );
        assert!(c.is_empty());
        check_shares(
            &mut c,
            3,
            &|| "CPU 0".into(),
            &[("%usr", 130.0)],
            &[],
            SYSSTAT_SHARES,
        );
        check_shares(
            &mut c,
            4,
            &|| "CPU 1".into(),
            &[("%usr", 80.0), ("%idle", 60.0)],
            &[],
            SYSSTAT_SHARES,
        );
        assert_eq!(c.found.len(), 2);
        assert!(c.found[1].1.what.contains("add up to 140.00 %"));
        assert!(is_offline(&[("%usr", 0.0), ("%idle", 0.0)]));
        assert!(!is_offline(&[("%usr", 0.0), ("%idle", 100.0)]));
    }

    #[test]
    fn wraps() {
        assert!(!went_backwards(5, 6));
        assert!(!went_backwards(u64::from(u32::MAX) - 10, 20), "32-bit wrap");
        assert!(!went_backwards(u64::MAX - 10, 20), "64-bit wrap");
        assert!(went_backwards(1000, 50), "a reset");
        assert!(
            went_backwards(5_000_000_000, 20),
            "a 64-bit counter does not wrap at 2^32"
        );
    }

    #[test]
    fn caps_and_offline() {
        let mut c = Checks::new();
        for l in 0..30 {
            c.mark(Check::Time, Some(l), "t");
        }
        c.offline("3", 12);
        c.offline("3", 16);
        let mut r = run();
        let mut w = Vec::new();
        c.finish(&mut r, &mut w, "");
        assert_eq!(r.meta.implausible.len(), MAX_PER_CHECK + 1);
        assert!(r
            .meta
            .implausible
            .last()
            .unwrap()
            .what
            .starts_with("10 more"));
        assert_eq!(w.len(), MAX_WARNINGS + 2);
        assert!(w.last().unwrap().contains("CPU 3 was offline"));
        assert!(w.last().unwrap().starts_with("line 12 and 1 more rows"));
    }
}
