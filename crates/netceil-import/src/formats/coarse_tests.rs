//! A log longer than the rows a series keeps (`formats/builder.rs`) against the log the tool
//! would have printed at the longer interval: the same series.

use super::vmstat_linux;
use crate::{import, Format, ImportOptions};

/// A small seeded generator (64-bit LCG), so the logs are the same on every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// The columns of the generated logs, the range of each one's values, and whether it is a
/// CPU share (`id` is 100 minus the others).
const COLUMNS: [(&str, u64); 16] = [
    ("r", 8),
    ("b", 4),
    ("swpd", 1000),
    ("free", 7_800_000),
    ("buff", 264_000),
    ("cache", 15_000_000),
    ("si", 50),
    ("so", 50),
    ("bi", 4000),
    ("bo", 9000),
    ("in", 5000),
    ("cs", 9000),
    ("us", 30),
    ("sy", 30),
    ("wa", 20),
    ("st", 6),
];

/// One-second rows, in blocks of four whose pairs and whole have integer means: each pair
/// is `p ± d`, and the block's two pair means `p` and `q` differ by an even number.
fn fine_rows(seed: u64, rows: usize) -> Vec<Vec<u64>> {
    let mut g = Lcg(seed);
    let mut out = Vec::with_capacity(rows);
    while out.len() < rows {
        let mut block = vec![vec![0u64; COLUMNS.len()]; 4];
        for (c, &(_, range)) in COLUMNS.iter().enumerate() {
            let p = 2 + g.below(range.max(8) / 2);
            let q = p + 2 * g.below(range.max(8) / 4);
            for (k, mid) in [(0, p), (2, q)] {
                let d = g.below(mid.min(range.max(8) / 8) + 1);
                block[k][c] = mid - d;
                block[k + 1][c] = mid + d;
            }
        }
        out.extend(block);
    }
    out.truncate(rows);
    out
}

/// The rows the tool prints every `n` seconds: each column's mean over the `n` rows.
fn coarse_rows(fine: &[Vec<u64>], n: usize) -> Vec<Vec<u64>> {
    fine.chunks(n)
        .map(|rows| {
            (0..COLUMNS.len())
                .map(|c| {
                    let sum: u64 = rows.iter().map(|r| r[c]).sum();
                    assert_eq!(sum % n as u64, 0, "the generator gives integer means");
                    sum / n as u64
                })
                .collect()
        })
        .collect()
}

/// A `vmstat DELAY` log of `rows`, with its since-boot first line.
fn log(delay: usize, rows: &[Vec<u64>]) -> String {
    let mut s = format!("$ vmstat {delay}\nprocs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----\n");
    for (name, _) in COLUMNS.iter().take(14) {
        s.push_str(&format!(" {name}"));
    }
    s.push_str(" id wa st\n 1 0 0 1 1 1 0 0 0 0 1 1 1 1 98 0 0\n");
    for r in rows {
        let shares: u64 = r[12] + r[13] + r[14] + r[15];
        for v in &r[..14] {
            s.push_str(&format!(" {v}"));
        }
        s.push_str(&format!(" {} {} {}\n", 100 - shares, r[14], r[15]));
    }
    s
}

fn opts() -> ImportOptions {
    ImportOptions {
        file: "fine.log".into(),
        ..ImportOptions::default()
    }
}

#[test]
fn a_log_kept_as_coarser_rows_is_the_log_at_the_longer_interval() {
    for (seed, factor) in [(7, 2), (11, 4)] {
        // 64 rows kept: 128 one-second rows are kept as 64 of 2 s, 256 as 64 of 4 s.
        let fine = fine_rows(seed, 64 * factor);
        let reduced = vmstat_linux::import_keeping(&log(1, &fine), &opts(), 64).unwrap();
        let coarse = import(
            Format::VmstatLinux,
            &log(factor, &coarse_rows(&fine, factor)),
            &opts(),
        )
        .unwrap();
        let (r, c) = (&reduced.run.series, &coarse.run.series);
        assert_eq!(r.interval_s, factor as f64);
        assert_eq!(r.t_s, c.t_s, "factor {factor}");
        assert_eq!(r.metrics, c.metrics, "factor {factor}");
        let note = format!(
            "the log's {} rows are kept as 64 rows of {factor} s each",
            64 * factor
        );
        assert!(
            reduced.run.notes.iter().any(|n| n.starts_with(&note)),
            "{:?}",
            reduced.run.notes
        );
        assert!(!coarse.run.notes.iter().any(|n| n.contains("kept as")));
    }
}

#[test]
fn a_log_within_the_bound_is_kept_row_for_row() {
    let fine = fine_rows(3, 64);
    let kept = vmstat_linux::import_keeping(&log(1, &fine), &opts(), 64).unwrap();
    let whole = import(Format::VmstatLinux, &log(1, &fine), &opts()).unwrap();
    assert_eq!(kept, whole);
    assert_eq!(kept.run.series.len(), 64);
    // One row more than the bound halves the rows.
    let fine = fine_rows(3, 65);
    let kept = vmstat_linux::import_keeping(&log(1, &fine), &opts(), 64).unwrap();
    assert_eq!(kept.run.series.len(), 33);
    assert_eq!(kept.run.series.interval_s, 2.0);
    assert_eq!(kept.run.series.t_s.last(), Some(&65.0));
}
