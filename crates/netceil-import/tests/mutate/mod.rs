//! Mutation fuzzing shared by the reader tests: real fixtures are cut short, have bytes
//! flipped and lines shuffled, deleted or repeated, and every reader must then either import
//! or return an error whose line lies within the input. A panic fails. Kept in one place so
//! every reader is held to the same rule.
//!
//! Cases per test: `PROPTEST_CASES` (proptest's own variable), 256 by default. Besides the
//! random cases, [`sweep`] applies a fixed set of mutations to every fixture of a corpus, so
//! each run covers the same cases and its outcome can be asserted.

#![allow(dead_code)]

use netceil_import::{import, Format, ImportError, ImportOptions, Imported};
use proptest::prelude::*;

/// One change to a text.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Keep this share (0–1) of the bytes.
    Truncate(f64),
    /// XOR the byte at this share of the text with a value.
    Flip(f64, u8),
    /// Swap two lines, at these shares of the line count.
    SwapLines(f64, f64),
    /// Remove a line.
    DeleteLine(f64),
    /// Repeat a line.
    DuplicateLine(f64),
    /// Insert these bytes.
    Insert(f64, Vec<u8>),
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    let share = 0.0f64..1.0;
    prop_oneof![
        share.clone().prop_map(Mutation::Truncate),
        (share.clone(), any::<u8>()).prop_map(|(p, x)| Mutation::Flip(p, x)),
        (share.clone(), share.clone()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        share.clone().prop_map(Mutation::DeleteLine),
        share.clone().prop_map(Mutation::DuplicateLine),
        (
            share,
            prop::collection::vec(
                prop_oneof![
                    Just(b'\n'),
                    Just(b' '),
                    Just(b':'),
                    Just(b'{'),
                    Just(b']'),
                    Just(b'-'),
                    Just(b'9'),
                    any::<u8>()
                ],
                1..6
            )
        )
            .prop_map(|(p, v)| Mutation::Insert(p, v)),
    ]
}

fn at(share: f64, len: usize) -> usize {
    ((share * len as f64) as usize).min(len.saturating_sub(1))
}

/// Applies mutations to a text (as bytes, so a flip can make invalid UTF-8, which is then
/// replaced as a reader of a file would see it).
pub fn apply(text: &str, mutations: &[Mutation]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for m in mutations {
        match m {
            Mutation::Truncate(p) => {
                let keep = (p * bytes.len() as f64) as usize;
                bytes.truncate(keep);
            }
            Mutation::Flip(p, x) if !bytes.is_empty() => {
                let i = at(*p, bytes.len());
                bytes[i] ^= x | 1;
            }
            Mutation::Insert(p, v) => {
                let i = at(*p, bytes.len() + 1).min(bytes.len());
                bytes.splice(i..i, v.iter().copied());
            }
            Mutation::SwapLines(..) | Mutation::DeleteLine(_) | Mutation::DuplicateLine(_) => {
                let s = String::from_utf8_lossy(&bytes).into_owned();
                let mut lines: Vec<&str> = s.split('\n').collect();
                let n = lines.len();
                match m {
                    Mutation::SwapLines(a, b) => lines.swap(at(*a, n), at(*b, n)),
                    Mutation::DeleteLine(a) if n > 1 => {
                        lines.remove(at(*a, n));
                    }
                    Mutation::DuplicateLine(a) => {
                        let i = at(*a, n);
                        lines.insert(i, lines[i]);
                    }
                    _ => {}
                }
                bytes = lines.join("\n").into_bytes();
            }
            Mutation::Flip(..) => {}
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Every reader of this helper's formats.
pub const FORMATS: [Format; 10] = [
    Format::SysstatJson,
    Format::Pidstat,
    Format::Iperf3,
    Format::LockStat,
    Format::FreebsdLockProf,
    Format::PerfLock,
    Format::ErlangWallTime,
    Format::ErlangSchedulerUsage,
    Format::ReconNodeStats,
    Format::ProcSnapshot,
];

/// Imports a mutated text with `format` and with every other reader here, checking that each
/// either succeeds or fails with an error that names the file, a line within the input and
/// what was expected. Returns what `format`'s own reader did.
pub fn check(format: Format, text: &str) -> Result<Result<Imported, ImportError>, TestCaseError> {
    let opts = ImportOptions {
        file: "fuzz.txt".into(),
        ..ImportOptions::default()
    };
    let lines = text.split('\n').count().max(1);
    let _ = netceil_import::detect(text);
    let mut own = None;
    for f in std::iter::once(format).chain(FORMATS.iter().copied().filter(|f| *f != format)) {
        let result = import(f, text, &opts);
        match &result {
            Ok(i) => implausible_within(i, lines)?,
            Err(e) => {
                prop_assert!(
                    e.line >= 1 && e.line <= lines + 1,
                    "{}: error line {} outside 1..={} for {e}",
                    f.name(),
                    e.line,
                    lines + 1
                );
                prop_assert_eq!(&e.file, "fuzz.txt");
                prop_assert!(
                    !e.expected.trim().is_empty(),
                    "{}: the error says nothing of what was expected: {e}",
                    f.name()
                );
                let said = e.to_string();
                prop_assert!(
                    said.starts_with(&format!("fuzz.txt: line {}", e.line))
                        && said.contains(&format!("expected {}", e.expected)),
                    "{}: the message does not name the file, the line and what was expected: {said}",
                    f.name()
                );
            }
        }
        own.get_or_insert(result);
    }
    Ok(own.expect("the own format is read first"))
}

/// The fixed mutations of [`sweep`]: each kind at eleven positions (0, 0.1, … 1.0 of the
/// text). The text cut to nothing is among them.
pub fn fixed_mutations() -> Vec<Mutation> {
    let mut out = Vec::new();
    for i in 0..=10 {
        let p = f64::from(i) / 10.0;
        out.push(Mutation::Truncate(p));
        out.push(Mutation::Flip(p, 0x20));
        out.push(Mutation::SwapLines(p, 1.0 - p));
        out.push(Mutation::DeleteLine(p));
        out.push(Mutation::DuplicateLine(p));
        out.push(Mutation::Insert(p, b"\n9:{".to_vec()));
    }
    out
}

/// What a fixture's own reader did with the texts [`fixed_mutations`] made of it that differ
/// from it and are not empty.
#[derive(Debug, Default)]
pub struct Tally {
    /// Changed texts it imported.
    pub accepted: usize,
    /// Changed texts it refused, each with the mutation and the error.
    pub rejected: Vec<(Mutation, ImportError)>,
}

/// Applies every [`fixed_mutations`] to the fixture `text` (named `name`) and [`check`]s each
/// result with every reader, so a panic or an error that does not name the file, a line of
/// the input and what was expected fails, naming the mutation. Asserts what the mutations
/// imply whatever the reader: the fixture as it is imports with `format` exactly when
/// `imports`; a mutation that leaves the text as it was gets the same answer; a text cut to
/// nothing is refused at line 1; and, for a fixture that imports, the changed texts are
/// neither all imported (the damage would never reach the reader's checks) nor all refused
/// (the reader would never get past them).
pub fn sweep(format: Format, name: &str, text: &str, imports: bool) -> Tally {
    let run = |t: &str, what: &dyn std::fmt::Debug| {
        check(format, t).unwrap_or_else(|e| panic!("{name} after {what:?}: {e}"))
    };
    let as_is = run(text, &"no mutation").map(drop);
    assert_eq!(
        as_is.is_ok(),
        imports,
        "{name} as it is, read as {}: {as_is:?}",
        format.name()
    );
    let mut tally = Tally::default();
    for m in fixed_mutations() {
        let changed = apply(text, std::slice::from_ref(&m));
        let got = run(&changed, &m);
        if changed == text {
            assert_eq!(
                got.map(drop),
                as_is,
                "{name} after {m:?}, which changed nothing"
            );
        } else if changed.is_empty() {
            match got {
                Ok(_) => panic!("{name} cut to nothing by {m:?} imports"),
                Err(e) => assert_eq!(e.line, 1, "{name} cut to nothing by {m:?}: {e}"),
            }
        } else {
            match got {
                Ok(_) => tally.accepted += 1,
                Err(e) => tally.rejected.push((m, e)),
            }
        }
    }
    if imports {
        assert!(
            tally.accepted > 0 && !tally.rejected.is_empty(),
            "{name}: of {} changed texts, {} imported and {} were refused: the fixed \
             mutations should reach both",
            tally.accepted + tally.rejected.len(),
            tally.accepted,
            tally.rejected.len()
        );
    }
    tally
}

/// A fixture from tests/fixtures.
pub fn fixture(path: &str) -> String {
    let p = format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Each of `names` under tests/fixtures/`dir` is detected as `want`.
#[allow(dead_code)] // not every test crate that includes this module detects formats
pub fn assert_detected(dir: &str, names: &[&str], want: Format) {
    for name in names {
        let got = netceil_import::detect(&fixture(&format!("{dir}/{name}")));
        assert_eq!(got, Ok(want), "{dir}/{name}");
    }
}

/// A seed from the repository's tests/fixtures/seeds.
pub fn seed(name: &str) -> String {
    let p = format!(
        "{}/../../tests/fixtures/seeds/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Import options naming `file`, everything else default.
pub fn opts(file: &str) -> ImportOptions {
    ImportOptions {
        file: file.to_string(),
        ..ImportOptions::default()
    }
}

/// The error of a reader that must fail; panics naming the row count when it imported.
pub fn err(r: Result<Imported, ImportError>) -> ImportError {
    match r {
        Ok(i) => panic!("imported {} rows, expected an error", i.run.series.len()),
        Err(e) => e,
    }
}

/// A file under tests/fixtures/`dir`, or a repository seed when `rel` starts with `seeds/`.
pub fn fixture_or_seed(dir: &str, rel: &str) -> String {
    match rel.strip_prefix("seeds/") {
        Some(name) => seed(name),
        None => fixture(&format!("{dir}/{rel}")),
    }
}

/// A blunter damage than [`Mutation`], for the table-shaped readers: bytes overwritten, the
/// text cut, two lines swapped and perhaps one removed, all by positions taken modulo the
/// text's size.
#[derive(Debug, Clone)]
pub struct Damage {
    /// Cut the bytes to this length (modulo length + 1), after the flips.
    pub cut: usize,
    /// Overwrite the byte at this position (modulo length) with this value.
    pub flips: Vec<(usize, u8)>,
    /// Swap these lines (modulo the line count), when there are two or more.
    pub swap: (usize, usize),
    /// Then remove this line (modulo the line count).
    pub drop: Option<usize>,
}

/// Any [`Damage`], with up to three flips.
pub fn damage() -> impl Strategy<Value = Damage> {
    (
        any::<usize>(),
        prop::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        (any::<usize>(), any::<usize>()),
        prop::option::of(any::<usize>()),
    )
        .prop_map(|(cut, flips, swap, drop)| Damage {
            cut,
            flips,
            swap,
            drop,
        })
}

impl Damage {
    /// The damaged text (invalid UTF-8 replaced, as a reader of a file would see it).
    pub fn apply(&self, text: &str) -> String {
        let mut bytes = text.as_bytes().to_vec();
        for &(pos, b) in &self.flips {
            if !bytes.is_empty() {
                let p = pos % bytes.len();
                bytes[p] = b;
            }
        }
        bytes.truncate(self.cut % (bytes.len() + 1));
        let s = String::from_utf8_lossy(&bytes).into_owned();
        let mut lines: Vec<&str> = s.split('\n').collect();
        if lines.len() > 1 {
            let (a, b) = (self.swap.0 % lines.len(), self.swap.1 % lines.len());
            lines.swap(a, b);
            if let Some(d) = self.drop {
                lines.remove(d % lines.len());
            }
        }
        lines.join("\n")
    }
}

/// Checks that a reader given `text` either imported a run whose metrics all have one value
/// per row, or failed naming a line within the text. Returns the run for further checks.
pub fn check_total(
    result: Result<Imported, ImportError>,
    text: &str,
) -> Result<Option<Imported>, TestCaseError> {
    let lines = text.split('\n').count().max(1);
    match result {
        Ok(i) => {
            let s = &i.run.series;
            prop_assert!(s.metrics.iter().all(|m| m.values.len() == s.t_s.len()));
            implausible_within(&i, lines)?;
            Ok(Some(i))
        }
        Err(e) => {
            prop_assert!(
                e.line >= 1 && e.line <= lines,
                "line {} outside 1..={lines}: {e}",
                e.line
            );
            Ok(None)
        }
    }
}

/// Checks that every impossible fact a reader marked says what it is and points at a line of
/// the text, and that each is also a warning.
pub fn implausible_within(i: &Imported, lines: usize) -> Result<(), TestCaseError> {
    for f in &i.run.meta.implausible {
        prop_assert!(!f.what.is_empty());
        if let Some(l) = f.line {
            prop_assert!(
                l >= 1 && l <= lines,
                "implausible at line {l} outside 1..={lines}: {}",
                f.what
            );
        }
    }
    if !i.run.meta.implausible.is_empty() {
        prop_assert!(i.warnings.iter().any(|w| w.contains("cannot be true")));
    }
    Ok(())
}

/// Texts of up to 30 lines built from `words` in random order: reaches states that byte
/// flips of a real log rarely do (a header after data, a time with no columns…).
pub fn word_soup(words: &'static [&'static str]) -> impl Strategy<Value = String> {
    let line = prop::collection::vec(prop::sample::select(words.to_vec()), 0..12)
        .prop_map(|w| w.join(" "));
    prop::collection::vec(line, 0..30).prop_map(|l| l.join("\n"))
}
