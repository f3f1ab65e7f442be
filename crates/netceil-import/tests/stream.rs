//! Logs read line by line (`netceil analyze` on a file): the same Run as the whole text gives,
//! for every fixture and for damaged ones, and a log far longer than the old 256 MiB limit
//! imported with a bounded part of its text held.

mod mutate;

use netceil_import::formats::vmstat_linux::{self, VmstatLinuxOptions};
use netceil_import::formats::{mpstat, sar, vmstat_freebsd};
use netceil_import::{import, Format, ImportOptions, LogLines, MAX_ROWS};
use proptest::prelude::*;
use std::io::Read;

fn opts(file: &str) -> ImportOptions {
    ImportOptions {
        file: file.into(),
        ..ImportOptions::default()
    }
}

/// The whole-text import and the streamed one agree: the same Run and warnings, or the
/// same error.
fn same(text: &str, name: &str) {
    let whole = import(Format::VmstatLinux, text, &opts(name));
    let streamed =
        vmstat_linux::import_reader(text.as_bytes(), &opts(name), &VmstatLinuxOptions::default());
    assert_eq!(streamed, whole, "{name}");
    let whole = import(Format::VmstatFreebsd, text, &opts(name));
    let streamed = vmstat_freebsd::import_reader(text.as_bytes(), &opts(name));
    assert_eq!(streamed, whole, "{name} as FreeBSD");
}

#[test]
fn every_vmstat_fixture_streams_to_the_run_of_its_whole_text() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vmstat");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        same(&text, &name);
        // Cut short, without its last newline, with CRLF and colours, with a BOM.
        same(&text[..text.len() * 2 / 3], &name);
        same(text.trim_end(), &name);
        same(&text.replace('\n', "\r\n"), &name);
        same(
            &format!("\u{feff}{}", text.replace(" r ", " \u{1b}[1mr\u{1b}[0m ")),
            &name,
        );
        n += 1;
    }
    assert!(n >= 18, "{n} fixtures");
}

#[test]
fn malformed_lines_are_named_when_streamed() {
    let good = "procs -----memory----- ---cpu---\n r b free id\n 1 0 5 90\n 1 0 5 90\n";
    let bad = good.replacen("1 0 5 90\n 1", "1 0 5x 90\n 1", 1);
    let e = vmstat_linux::import_reader(bad.as_bytes(), &opts("bad.log"), &Default::default())
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "bad.log: line 3, column 3: expected a number, found '5x'"
    );
    // A line too long and bytes that are not text, at their lines.
    let mut long = good.as_bytes().to_vec();
    long.extend(vec![b'1'; netceil_import::MAX_LINE_BYTES + 1]);
    let e =
        vmstat_linux::import_reader(&long[..], &opts("long.log"), &Default::default()).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("long.log", 5), "{e}");
    let e = vmstat_linux::import_reader(
        &b"procs -----memory----- ---cpu---\n r b \xff\n"[..],
        &opts("bin.log"),
        &Default::default(),
    )
    .unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    assert!(e.expected.contains("UTF-8"), "{e}");
}

/// A Linux `vmstat -w` log of `rows` samples written as it is read, so that neither the test
/// nor the importer ever has it whole.
struct Generated {
    rows: usize,
    row: usize,
    buf: Vec<u8>,
    at: usize,
    bytes: usize,
}

impl Generated {
    fn new(rows: usize) -> Self {
        Generated {
            rows,
            row: 0,
            buf: Vec::new(),
            at: 0,
            bytes: 0,
        }
    }
}

impl Read for Generated {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.buf.len() {
            self.buf.clear();
            self.at = 0;
            if self.row == self.rows {
                return Ok(0);
            }
            if self.row.is_multiple_of(1000) {
                self.buf.extend_from_slice(b"--procs-- -----------------------memory---------------------- ---swap-- -----io---- -system-- ----------cpu----------\n   r    b         swpd         free         buff        cache   si   so    bi    bo   in   cs  us  sy  id  wa  st  gu\n");
            }
            let k = self.row % 50;
            let line = format!(
                "{:4} {:4} {:12} {:12} {:12} {:12} {:4} {:4} {:5} {:5} {:4} {:4} {:3} {:3} {:3} {:3} {:3} {:3}\n",
                k % 12, k % 2, 0, 7_800_000 + k, 264_152, 15_081_420, 0, 0, k, 900 * k, 500 + k, 900 + k, k, 10, 90 - k, 0, 0, 0
            );
            self.buf.extend_from_slice(line.as_bytes());
            self.row += 1;
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        self.bytes += n;
        Ok(n)
    }
}

/// Streams `rows` generated rows; returns the bytes read and the bytes of text held.
fn stream(rows: usize) -> (usize, usize) {
    let mut lines = LogLines::new(Generated::new(rows), "big.log");
    let i = vmstat_linux::import_lines(&mut lines, &opts("big.log"), &Default::default()).unwrap();
    // The first row of the log is skipped as since-boot averages. A log of more rows than a
    // series keeps is kept as fewer, longer rows, and says so.
    let kept = i.run.series.len();
    if rows - 1 <= MAX_ROWS {
        assert_eq!(kept, rows - 1);
    } else {
        assert!(kept <= MAX_ROWS, "{kept} rows kept");
        let per = (rows - 1).div_ceil(MAX_ROWS).next_power_of_two();
        assert_eq!(kept, (rows - 1).div_ceil(per));
        assert_eq!(i.run.series.interval_s, per as f64);
        let note = format!(
            "the log's {} rows are kept as {kept} rows of {per} s each",
            rows - 1
        );
        assert!(
            i.run.notes.iter().any(|n| n.starts_with(&note)),
            "{:?}",
            i.run.notes
        );
    }
    let held = lines.bytes_held();
    let mut g = Generated::new(rows);
    let read = std::io::copy(&mut g, &mut std::io::sink()).unwrap() as usize;
    (read, held)
}

#[test]
fn a_long_log_is_read_with_a_bounded_part_of_it_held() {
    // ~25 MB in a debug build's few seconds; the held bytes do not grow with the log.
    let (small_read, small_held) = stream(20_000);
    let (read, held) = stream(200_000);
    assert!(read > 20 << 20, "{read} bytes");
    assert!(held < 2 << 20, "held {held} of {read} bytes");
    assert_eq!(
        held, small_held,
        "held grew from {small_read} to {read} bytes read"
    );
}

#[test]
fn a_log_larger_than_the_old_256_mib_limit_imports() {
    // 2.3 M rows, ~290 MB: about 10 s in a debug build on a loaded 2-core machine. Its rows
    // are kept as at most MAX_ROWS: the memory of the Run does not grow with the log either.
    let (read, held) = stream(2_300_000);
    assert!(read > 256 << 20, "{read} bytes");
    assert!(held < 2 << 20, "held {held} of {read} bytes");
}

proptest! {
    #[test]
    fn damaged_logs_stream_to_the_run_or_the_error_of_their_whole_text(
        which in 0usize..8,
        damage in mutate::damage(),
    ) {
        let base = mutate::fixture_or_seed("vmstat", ["linux-procps4.txt", "linux-procps4-wide-t.txt", "linux-ts-clock-prefix.txt", "linux-procps4-y-cmd.txt", "freebsd-ts-prefix.txt", "freebsd-percpu-P.txt", "seeds/freebsd-vmstat-sk0.txt", "freebsd13-humanized.txt"][which]);
        same(&damage.apply(&base), "m");
    }
}

/// The sar or mpstat reader streamed agrees with it on the whole text.
fn same_sysstat(text: &str, name: &str) {
    let (format, streamed): (Format, fn(&[u8], &ImportOptions) -> _) = if name.starts_with("mpstat")
    {
        (Format::Mpstat, |b, o| {
            mpstat::import_lines(&mut LogLines::new(b, &o.file), o)
        })
    } else {
        (Format::Sar, |b, o| {
            sar::import_lines(&mut LogLines::new(b, &o.file), o)
        })
    };
    let whole = import(format, text, &opts(name));
    assert_eq!(streamed(text.as_bytes(), &opts(name)), whole, "{name}");
}

#[test]
fn every_sar_and_mpstat_fixture_streams_to_the_run_of_its_whole_text() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysstat");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("sadf") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        same_sysstat(&text, &name);
        // Cut short (mid-line), without its last newline, with CRLF, with a BOM.
        same_sysstat(&text[..text.len() * 2 / 3], &name);
        same_sysstat(text.trim_end(), &name);
        same_sysstat(&text.replace('\n', "\r\n"), &name);
        same_sysstat(&format!("\u{feff}{text}"), &name);
        n += 1;
    }
    assert!(n >= 20, "{n} fixtures");
}

/// A `sar -u 1` report of `rows` rows (a banner, a header every 500 rows).
fn sar_log(rows: usize) -> String {
    let mut s = String::from("Linux 6.18.44 (vm) \t11/21/26 \t_x86_64_\t(2 CPU)\n");
    for i in 0..rows {
        let t = i + 1;
        if i % 500 == 0 {
            let h = i;
            s.push_str(&format!(
                "\n{:02}:{:02}:{:02}        CPU     %user     %nice   %system   %iowait    %steal     %idle\n",
                h / 3600 % 24,
                h / 60 % 60,
                h % 60
            ));
        }
        let u = (i * 7) % 60;
        s.push_str(&format!(
            "{:02}:{:02}:{:02}        all     {u}.00      0.00     10.00      0.00      0.00     {}.00\n",
            t / 3600 % 24,
            t / 60 % 60,
            t % 60,
            90 - u
        ));
    }
    s
}

#[test]
fn a_malformed_line_deep_in_a_streamed_sar_or_mpstat_report_is_named() {
    let text = sar_log(5000);
    let line = 4000;
    let mut lines: Vec<&str> = text.split('\n').collect();
    let bad = lines[line - 1].replacen("10.00", "1O.00", 1);
    lines[line - 1] = &bad;
    let damaged = lines.join("\n");
    let e = sar::import_lines(
        &mut LogLines::new(damaged.as_bytes(), "deep.log"),
        &opts("deep.log"),
    )
    .unwrap_err();
    assert_eq!(
        (e.file.as_str(), e.line, e.column),
        ("deep.log", line, Some(5)),
        "{e}"
    );
    assert_eq!(e.found, "1O.00");
    assert_eq!(Err(e), import(Format::Sar, &damaged, &opts("deep.log")));
    // A row with a column too few, in an mpstat report.
    let mp = mutate::fixture("sysstat/mpstat-P-ALL-24h.txt");
    let mut lines: Vec<String> = mp.split('\n').map(str::to_string).collect();
    let at = lines.len() - 8;
    let cut: Vec<&str> = lines[at - 1].split_ascii_whitespace().collect();
    lines[at - 1] = cut[..cut.len() - 1].join(" ");
    let damaged = lines.join("\n");
    let e = mpstat::import_lines(
        &mut LogLines::new(damaged.as_bytes(), "mp.log"),
        &opts("mp.log"),
    )
    .unwrap_err();
    assert_eq!(e.line, at, "{e}");
    assert_eq!(Err(e), import(Format::Mpstat, &damaged, &opts("mp.log")));
}

#[test]
fn a_sar_report_is_streamed_through_analyze_s_reader_with_its_whole_text_s_run_id() {
    // Longer than the head netceil_import::import_log detects from, so it is streamed.
    let text = sar_log(120_000);
    assert!(
        text.len() > netceil_import::HEAD_BYTES,
        "{} bytes",
        text.len()
    );
    let streamed = netceil_import::import_log(text.as_bytes(), None, &opts("long.sar")).unwrap();
    let whole = import(Format::Sar, &text, &opts("long.sar")).unwrap();
    assert_eq!(streamed.run.run_id, whole.run.run_id);
    assert_eq!(streamed.run.series.len(), 120_000);
    assert_eq!(streamed, whole);
}

proptest! {
    #[test]
    fn damaged_sar_and_mpstat_reports_stream_to_the_run_or_the_error_of_their_whole_text(
        which in 0usize..6,
        damage in mutate::damage(),
    ) {
        let name = ["sar-A-24h.txt", "sar-u-12h-midnight.txt", "sar-n-DEV-24h.txt", "mpstat-P-ALL-24h.txt", "mpstat-since-boot.txt", "sar-I-old-intr.txt"][which];
        let base = mutate::fixture(&format!("sysstat/{name}"));
        same_sysstat(&damage.apply(&base), name);
    }
}
