//! The importers' line reader and what follows it, on hostile bytes: what
//! fuzz/fuzz_targets/import_lines.rs does under `cargo fuzz`, run here on stable over every
//! fixture (as it is, cut mid-character, with NULs, CRLF and an overlong line put in) and
//! over inputs made to hurt (no newline, only newlines, deep JSON, invalid UTF-8, a line of
//! exactly the limit and one byte over it), then over arbitrary bytes. Nothing may panic; the
//! reader's errors name the file and, for a long line, its number; an importer's errors name
//! the file and a line within the input.

use netceil_import::{detect, import, read_log, Format, ImportOptions, InputError, MAX_LINE_BYTES};
use proptest::prelude::*;

const NAME: &str = "hostile.log";

/// The fuzz target's steps: read, detect and import, then import with every reader as
/// `--format NAME` would. Returns the reader's error, if it refused the bytes.
fn feed(data: &[u8]) -> Result<(), InputError> {
    let text = read_log(data, NAME).inspect_err(|e| {
        assert!(e.to_string().starts_with(&format!("{NAME}:")), "{e}");
    })?;
    let opts = ImportOptions {
        file: NAME.into(),
        ..ImportOptions::default()
    };
    let lines = text.split('\n').count().max(1);
    let detected = detect(&text).ok();
    for f in detected.into_iter().chain(Format::ALL.iter().copied()) {
        if let Err(e) = import(f, &text, &opts) {
            assert_eq!(e.file, NAME, "{}: {e}", f.name());
            assert!(
                (1..=lines + 1).contains(&e.line),
                "{}: line {} outside 1..={} in {e}",
                f.name(),
                e.line,
                lines + 1
            );
        }
    }
    Ok(())
}

/// Every file under tests/fixtures, with its path.
fn fixtures() -> Vec<(String, Vec<u8>)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
            }
        }
    }
    assert!(out.len() > 20, "fixtures missing: {}", out.len());
    out
}

#[test]
fn fixtures_damaged_every_way_are_read_or_refused_by_name() {
    let over = vec![b'7'; MAX_LINE_BYTES + 1];
    for (path, bytes) in fixtures() {
        feed(&bytes).unwrap_or_else(|e| panic!("{path}: a fixture was refused: {e}"));
        // Cut at odd places, some inside a multi-byte character.
        for k in 1..7 {
            let _ = feed(&bytes[..bytes.len() * k / 7]);
        }
        let crlf: Vec<u8> = bytes
            .iter()
            .flat_map(|&b| {
                if b == b'\n' {
                    vec![b'\r', b'\n']
                } else {
                    vec![b]
                }
            })
            .collect();
        let _ = feed(&crlf);
        let mut nul = bytes.clone();
        nul.insert(bytes.len() / 2, 0);
        let _ = feed(&nul);
        // An overlong second line is refused at its number, whatever follows.
        let first = bytes
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| i + 1);
        let mut long = bytes[..first].to_vec();
        if !long.ends_with(b"\n") {
            long.push(b'\n');
        }
        long.extend_from_slice(&over);
        long.extend_from_slice(&bytes[first..]);
        match feed(&long) {
            Err(InputError::LineTooLong { line: 2, .. }) => {}
            other => panic!("{path} with a long second line: {other:?}"),
        }
    }
}

#[test]
fn inputs_made_to_hurt_are_read_or_refused_by_name() {
    let limit = MAX_LINE_BYTES;
    let mut at_limit = b"r b swpd free\n".to_vec();
    at_limit.extend((0..limit / 2).flat_map(|_| *b"1 "));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("one newline", b"\n".to_vec()),
        ("only newlines", vec![b'\n'; 200_000]),
        ("only CRs", vec![b'\r'; 200_000]),
        ("NULs", vec![0; 4096]),
        (
            "a BOM before a header",
            b"\xef\xbb\xbfprocs ---memory---\n r b\n 1 0\n".to_vec(),
        ),
        ("deep arrays", vec![b'['; 100_000]),
        ("deep objects", b"{\"start\":".repeat(10_000)),
        ("a line at the limit", at_limit),
        ("a header, then a number per line", {
            let mut v = b"r b swpd free buff cache si so bi bo in cs us sy id wa st\n".to_vec();
            v.extend(b"1\n".repeat(100_000));
            v
        }),
    ];
    for (what, bytes) in &cases {
        feed(bytes).unwrap_or_else(|e| panic!("{what}: refused by the reader: {e}"));
    }
    // Refused by the reader, each at its line.
    let over = vec![b' '; limit + 1];
    let e = feed(&over).unwrap_err();
    assert!(matches!(e, InputError::LineTooLong { line: 1, .. }), "{e}");
    let mut third = b"a\r\nb\n".to_vec();
    third.extend_from_slice(&over);
    let e = feed(&third).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("{NAME}:3: line longer than 1 MiB")),
        "{e}"
    );
    let e = feed(b"procs\n \xff\xfe\n").unwrap_err();
    assert!(matches!(e, InputError::NotText { line: 2, .. }), "{e}");
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = feed(&data);
    }

    #[test]
    fn arbitrary_lines_of_log_words_never_panic(
        words in prop::collection::vec(
            prop_oneof![
                Just("procs"), Just("r"), Just("CPU"), Just("%usr"), Just("Linux"),
                Just("Average:"), Just("{"), Just("}"), Just("\"intervals\":"), Just("["),
                Just("]"), Just("Inter-|"), Just("lock_stat"), Just("12:00:01"), Just("1"),
                Just("-1"), Just("1e308"), Just("NaN"), Just(","), Just(";"), Just("\t"),
                Just("\n"), Just("\r\n"), Just(" "),
            ],
            0..300,
        )
    ) {
        let _ = feed(words.concat().as_bytes());
    }
}
