//! sysstat readers (sar text, mpstat, sadf -d) on captures from sysstat 12.6 in the C and
//! en_US (12-hour) locales, hand-made variants of older versions and other locales, and
//! malformed input, plus a mutation property test per reader.

mod mutate;

use std::path::PathBuf;

use netceil_import::formats::{mpstat, sadf, sar};
use netceil_import::{detect, Format, ImportError, Imported};
use netceil_model::{MetricId, Unit};
use proptest::prelude::*;

use mutate::{damage, err, opts, word_soup};

fn fixture(name: &str) -> String {
    mutate::fixture(&format!("sysstat/{name}"))
}

fn load(name: &str) -> Imported {
    let text = fixture(name);
    let result = if name.starts_with("sadf") {
        sadf::import(&text, &opts(name))
    } else if name.starts_with("mpstat") {
        mpstat::import(&text, &opts(name))
    } else {
        sar::import(&text, &opts(name))
    };
    result.unwrap_or_else(|e| panic!("{e}"))
}

/// A report's text read by the reader detection picks.
fn load_text(text: &str) -> Imported {
    let format = detect(text).unwrap_or_else(|_| panic!("not detected"));
    netceil_import::import(format, text, &opts("t")).unwrap_or_else(|e| panic!("{e}"))
}

fn get(i: &Imported, name: &str, labels: &[(&str, &str)]) -> Vec<Option<f64>> {
    let mut id = MetricId::new(name);
    for (k, v) in labels {
        id = id.with(*k, *v);
    }
    i.run
        .series
        .get(&id)
        .unwrap_or_else(|| panic!("no metric {id}"))
        .values
        .clone()
}

fn some(v: &[f64]) -> Vec<Option<f64>> {
    v.iter().map(|x| Some(*x)).collect()
}

#[test]
fn sar_u_maps_cpu_columns_and_skips_averages() {
    let i = load("sar-u-24h.txt");
    assert_eq!(i.run.series.t_s, [1.0, 2.0, 3.0]);
    assert_eq!(get(&i, "cpu_user_pct", &[]), some(&[77.61, 76.38, 76.38]));
    assert_eq!(get(&i, "cpu_system_pct", &[]), some(&[22.39, 23.62, 23.62]));
    assert_eq!(i.run.meta.host.hostname.as_deref(), Some("vm"));
    assert_eq!(i.run.meta.host.kernel.as_deref(), Some("6.18.44-fc-v657"));
    assert_eq!(i.run.meta.host.cpus, Some(2));
    assert!(i.run.notes.iter().any(|n| n.contains("Average:")));
    assert!(i
        .run
        .notes
        .iter()
        .any(|n| n.contains("%system includes time in interrupt handlers")));
    assert!(i.warnings.is_empty(), "{:?}", i.warnings);
}

#[test]
fn twelve_and_twenty_four_hour_clocks_read_the_same_data_alike() {
    // Both rendered by `sar -A -f` from one data file, in the C and en_US locales.
    let a = load("sar-A-24h.txt");
    let b = load("sar-A-12h.txt");
    assert_eq!(a.run.series, b.run.series);
    assert_eq!(
        a.run.series.len(),
        3,
        "every section fills the same three rows"
    );
    assert_eq!(get(&a, "cs_per_s", &[]), some(&[1329.0, 2343.0, 2444.0]));
    assert_eq!(get(&a, "intr_per_s", &[]), some(&[816.0, 1640.0, 3961.0]));
    assert_eq!(
        get(&a, "intr_per_s", &[("cpu", "1")]),
        some(&[462.0, 799.0, 2086.0])
    );
    assert!(a
        .run
        .series
        .get(&MetricId::new("sar_irq_per_s").with("irq", "LOC"))
        .is_some());
    assert!(
        a.run.series.total("tcp_retrans_segs_per_s").is_some(),
        "ETCP retrans/s"
    );
    assert!(
        a.run.series.total("sar_retrans_per_s").is_some(),
        "NFS retrans/s stays apart"
    );
    assert!(a.run.series.total("psi_cpu_some_pct").is_some());
    assert_eq!(
        a.run.series.total("sar_memfree_bytes").map(|m| m.unit),
        Some(Unit::Bytes)
    );
    assert_eq!(
        a.run.series.total("sar_transfers_per_s").map(|m| m.unit),
        Some(Unit::PerSecond)
    );
    // The same capture through sadf -d (UTC) agrees row for row.
    let d = load("sadf-d-A.csv");
    assert_eq!(get(&d, "cs_per_s", &[]), get(&a, "cs_per_s", &[]));
    assert_eq!(
        get(&d, "intr_per_s", &[("cpu", "0")]),
        get(&a, "intr_per_s", &[("cpu", "0")])
    );
    assert_eq!(
        get(&d, "cpu_user_pct", &[("cpu", "1")]),
        get(&a, "cpu_user_pct", &[("cpu", "1")])
    );
}

#[test]
fn midnight_rolls_over_in_both_clocks() {
    let i = load("sar-u-12h-midnight.txt");
    assert_eq!(i.run.series.t_s, [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(
        get(&i, "cpu_system_pct", &[]),
        some(&[21.0, 22.5, 20.75, 23.0])
    );
    let w = load("sar-w-24h-midnight.txt");
    assert_eq!(w.run.series.t_s, [1.0, 2.0, 3.0]);
    assert_eq!(get(&w, "cs_per_s", &[]), some(&[24810.0, 25130.0, 27902.0]));
    assert_eq!(get(&w, "forks_per_s", &[]), some(&[2.0, 1.0, 3.0]));
}

#[test]
fn per_cpu_and_network_sections() {
    let p = load("sar-P-ALL-12h.txt");
    assert_eq!(
        get(&p, "cpu_user_pct", &[("cpu", "1")]),
        some(&[91.0, 90.0])
    );
    assert_eq!(get(&p, "cpu_user_pct", &[]), some(&[94.5, 92.5]));
    let dev = load("sar-n-DEV-24h.txt");
    assert_eq!(
        get(&dev, "iface_rx_pps", &[("iface", "lo")]),
        some(&[35196.0, 0.0, 0.0])
    );
    // rxkB/s is KiB/s: 40080.12 × 1024 × 8 bit/s.
    let bits = get(&dev, "iface_rx_bits_per_s", &[("iface", "lo")])[0].unwrap();
    assert!((bits - 40080.12 * 8192.0).abs() < 1e-3, "{bits}");
    assert_eq!(
        dev.run
            .series
            .get(&MetricId::new("iface_rx_pps").with("iface", "lo"))
            .unwrap()
            .unit,
        Unit::PacketsPerSecond
    );
    let edev = load("sar-n-EDEV-24h.txt");
    assert_eq!(
        get(&edev, "iface_rx_dropped_per_s", &[("iface", "eth0")]),
        some(&[0.0, 0.0])
    );
    assert!(
        edev.run
            .series
            .get(&MetricId::new("sar_rxfifo_per_s").with("iface", "eth0"))
            .is_some(),
        "unknown columns kept"
    );
    let soft = load("sar-n-SOFT-12h.txt");
    for name in [
        "softnet_processed_per_s",
        "softnet_dropped_per_s",
        "softnet_time_squeeze_per_s",
        "softnet_backlog_len",
    ] {
        assert_eq!(get(&soft, name, &[]).len(), 2, "{name}");
    }
    let isum = load("sar-I-SUM-24h.txt");
    assert_eq!(get(&isum, "intr_per_s", &[]), some(&[663.0, 682.18]));
    let old = load("sar-I-old-intr.txt");
    assert_eq!(get(&old, "intr_per_s", &[]), some(&[12890.0, 13012.0]));
    let all = load("sar-u-all-24h.txt");
    assert_eq!(get(&all, "cpu_softirq_pct", &[]), some(&[5.97, 2.99]));
    assert!(!all.run.notes.iter().any(|n| n.contains("%system includes")));
}

#[test]
fn mpstat_per_cpu_totals_and_variants() {
    let i = load("mpstat-P-ALL-24h.txt");
    assert_eq!(get(&i, "cpu_user_pct", &[]), some(&[96.52, 93.53]));
    assert!(i
        .run
        .series
        .get(&MetricId::new("cpu_softirq_pct").with("cpu", "0"))
        .is_some());
    assert!(i
        .run
        .series
        .get(&MetricId::new("cpu_irq_pct").with("cpu", "1"))
        .is_some());
    assert!(i.run.series.total("mpstat_gnice_pct").is_some());
    let comma = load("mpstat-decimal-comma.txt");
    assert_eq!(
        get(&comma, "cpu_softirq_pct", &[("cpu", "0")]),
        some(&[8.2])
    );
    assert_eq!(get(&comma, "cpu_idle_pct", &[]), some(&[73.89]));
    let old = load("mpstat-old-intr.txt");
    assert_eq!(get(&old, "intr_per_s", &[("cpu", "0")]), some(&[13010.0]));
    assert_eq!(get(&old, "intr_per_s", &[]), some(&[14230.0]));
    let boot = load("mpstat-since-boot.txt");
    assert!(boot.run.series.is_empty());
    assert!(
        boot.warnings.iter().any(|w| w.contains("since boot")),
        "{:?}",
        boot.warnings
    );
}

#[test]
fn sadf_timestamps_intervals_and_keys() {
    let i = load("sadf-d-P-ALL.csv");
    assert_eq!(
        i.run.meta.started_unix_s, 1_795_305_570.0,
        "2026-11-21 23:59:31 UTC less one interval"
    );
    assert_eq!(i.run.series.t_s, [1.0, 2.0, 3.0]);
    assert_eq!(i.run.series.interval_s, 1.0);
    assert_eq!(get(&i, "cpu_user_pct", &[]), some(&[95.5, 91.54, 89.05]));
    assert_eq!(get(&i, "cpu_user_pct", &[("cpu", "0")])[0], Some(95.96));
    assert_eq!(i.run.meta.host.hostname.as_deref(), Some("vm"));
    let epoch = load("sadf-d-w-epoch.csv");
    assert_eq!(epoch.run.meta.started_unix_s, 1_795_305_570.0);
    assert_eq!(
        get(&epoch, "cs_per_s", &[]),
        some(&[1329.0, 2343.0, 2444.0])
    );
    let local = load("sadf-d-w-local.csv");
    assert_eq!(
        local.run.meta.started_unix_s, 0.0,
        "local times: the start is unknown"
    );
    assert_eq!(get(&local, "cs_per_s", &[]), get(&epoch, "cs_per_s", &[]));
    let dev = load("sadf-d-n-DEV.csv");
    assert!(dev
        .run
        .series
        .get(&MetricId::new("iface_tx_pps").with("iface", "eth0"))
        .is_some());
    let isum = load("sadf-d-I-SUM.csv");
    assert_eq!(
        get(&isum, "intr_per_s", &[]),
        some(&[816.0, 1640.0, 3961.0])
    );
}

#[test]
fn every_capture_imports_without_warnings() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysstat");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.contains("since-boot") {
            continue;
        }
        let i = load(&name);
        assert!(!i.run.series.is_empty(), "{name}");
        assert!(i.warnings.is_empty(), "{name}: {:?}", i.warnings);
        assert!(i
            .run
            .series
            .metrics
            .iter()
            .all(|m| m.values.len() == i.run.series.len()));
        n += 1;
    }
    assert!(n >= 30, "{n} captures");
}

#[test]
fn detection_picks_the_sysstat_tool() {
    assert_eq!(detect(&fixture("mpstat-P-ALL-12h.txt")), Ok(Format::Mpstat));
    assert_eq!(detect(&fixture("mpstat-old-intr.txt")), Ok(Format::Mpstat));
    assert_eq!(
        detect(&fixture("sar-u-all-24h.txt")),
        Ok(Format::Sar),
        "sar -u ALL puts %steal before %irq"
    );
    assert_eq!(detect(&fixture("sar-n-SOFT-24h.txt")), Ok(Format::Sar));
    assert_eq!(detect(&fixture("sar-A-12h.txt")), Ok(Format::Sar));
    assert_eq!(detect(&fixture("sadf-d-A.csv")), Ok(Format::Sadf));
    let why = sar::sniff("hello\n").unwrap_err();
    assert!(
        why.starts_with("not a sar report: line 1 'hello', expected a banner"),
        "{why}"
    );
    let why = mpstat::sniff(&fixture("sar-u-24h.txt")).unwrap_err();
    assert!(why.contains("CPU %user"), "{why}");
    let why = sadf::sniff("\n\nx;y\n").unwrap_err();
    assert!(why.starts_with("not sadf -d output: line 3 'x;y'"), "{why}");
}

#[test]
fn malformed_sar() {
    let good = fixture("sar-P-ALL-12h.txt");
    let bad = good.replacen("91.00", "9I.00", 1);
    let e = err(sar::import(&bad, &opts("p.txt")));
    assert_eq!(
        e.to_string(),
        "p.txt: line 6, column 4: expected a number under '%user', found '9I.00'"
    );
    let short = good.replacen("91.00      0.00      9.00", "91.00      9.00", 1);
    let e = err(sar::import(&short, &opts("p.txt")));
    assert_eq!((e.line, e.column), (6, Some(9)), "{e}");
    assert!(e.expected.contains("7 columns"), "{}", e.expected);
    let cut = &good[..good.find("Average").unwrap() - 30];
    let i = sar::import(cut, &opts("cut.txt")).unwrap();
    assert_eq!(i.run.series.len(), 2);
    assert!(
        i.warnings.iter().any(|w| w.contains("truncated last line")),
        "{:?}",
        i.warnings
    );
    let e = err(sar::import(
        "Linux 6.1 (h) 01/01/26 _x86_64_ (2 CPU)\n\n10:00:01 all 1.0 2.0\n",
        &opts("x"),
    ));
    assert_eq!(e.line, 3);
    assert!(e.expected.contains("section header"));
    let e = err(sar::import("just text\n", &opts("x")));
    assert_eq!(e.line, 1);
}

#[test]
fn malformed_sadf() {
    let good = fixture("sadf-d-w.csv");
    let e = err(sadf::import(
        &good.replacen("1329.00", "13;29.00", 1),
        &opts("w.csv"),
    ));
    assert_eq!((e.line, e.column), (2, Some(6)));
    let e = err(sadf::import(
        &good.replacen("2026-11-21 23:59:31 UTC", "yesterday", 1),
        &opts("w.csv"),
    ));
    assert_eq!(e.to_string(), "w.csv: line 2, column 3: expected a timestamp 'YYYY-MM-DD HH:MM:SS UTC' or seconds since the epoch, found 'yesterday'");
    let e = err(sadf::import(
        &good.replacen("143.00", "lots", 1),
        &opts("w.csv"),
    ));
    assert_eq!((e.line, e.column), (3, Some(4)));
    let cut = &good[..good.len() - 9];
    let i = sadf::import(cut, &opts("w.csv")).unwrap();
    assert_eq!(i.run.series.len(), 2);
    assert_eq!(i.warnings.len(), 1);
    let e = err(sadf::import("vm;1;2026-11-21 23:59:31 UTC;1\n", &opts("x")));
    assert_eq!(e.line, 1);
}

/// The shared totality check, plus: row times never go backwards.
fn check_total(result: Result<Imported, ImportError>, text: &str) -> Result<(), TestCaseError> {
    if let Some(i) = mutate::check_total(result, text)? {
        let s = &i.run.series;
        prop_assert!(s.t_s.windows(2).all(|w| w[0] <= w[1]));
    }
    Ok(())
}

const SAR: [&str; 5] = [
    "sar-A-12h.txt",
    "sar-n-DEV-24h.txt",
    "sar-u-12h-midnight.txt",
    "sar-I-ALL-24h.txt",
    "sar-P-ALL-12h.txt",
];
const MPSTAT: [&str; 3] = [
    "mpstat-P-ALL-12h.txt",
    "mpstat-decimal-comma.txt",
    "mpstat-old-intr.txt",
];
const SADF: [&str; 3] = ["sadf-d-A.csv", "sadf-d-n-DEV.csv", "sadf-d-w-epoch.csv"];

proptest! {
    #[test]
    fn sar_is_total_under_mutation(
        which in 0usize..SAR.len(),
        damage in damage(),
    ) {
        let text = damage.apply(&fixture(SAR[which]));
        check_total(sar::import(&text, &opts("m")), &text)?;
        let _ = sar::sniff(&text);
    }

    #[test]
    fn mpstat_is_total_under_mutation(
        which in 0usize..MPSTAT.len(),
        damage in damage(),
    ) {
        let text = damage.apply(&fixture(MPSTAT[which]));
        check_total(mpstat::import(&text, &opts("m")), &text)?;
        let _ = mpstat::sniff(&text);
    }

    #[test]
    fn sadf_is_total_under_mutation(
        which in 0usize..SADF.len(),
        damage in damage(),
    ) {
        let text = damage.apply(&fixture(SADF[which]));
        check_total(sadf::import(&text, &opts("m")), &text)?;
        let _ = sadf::sniff(&text);
    }
}

/// Per-CPU (and per-interrupt) tables whose keyed rows must not repeat inside a block.
const KEYED: [&str; 5] = [
    "mpstat-P-ALL-12h.txt",
    "mpstat-P-ALL-24h.txt",
    "sar-P-ALL-12h.txt",
    "sar-P-ALL-24h.txt",
    "sar-I-ALL-24h.txt",
];

/// The 0-based indexes of a report's data rows keyed by a number (`23:59:06   1   96.00 …`).
fn numbered_rows(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let key = if matches!(w.get(1), Some(&"AM" | &"PM")) {
                2
            } else {
                1
            };
            w.first()
                .is_some_and(|t| t.contains(':') && !t.starts_with("Average"))
                && w.get(key)
                    .is_some_and(|k| k.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(|(i, _)| i)
        .collect()
}

proptest! {
    /// A row pasted again right after itself (a CPU listed twice at one time) is always marked
    /// at the copy's line, and the report still imports.
    #[test]
    fn a_row_pasted_again_inside_its_block_is_marked(
        which in 0usize..KEYED.len(),
        pick in any::<usize>(),
        at_block_end in any::<bool>(),
    ) {
        let base = fixture(KEYED[which]);
        let rows = numbered_rows(&base);
        prop_assume!(!rows.is_empty());
        let row = rows[pick % rows.len()];
        let mut lines: Vec<&str> = base.split('\n').collect();
        // The copy goes right after the row, or after the last row of its block.
        let mut to = row + 1;
        if at_block_end {
            let time = lines[row].split_whitespace().next().unwrap_or("");
            while to < lines.len() && lines[to].split_whitespace().next() == Some(time) {
                to += 1;
            }
        }
        let copy = lines[row];
        lines.insert(to, copy);
        let text = lines.join("\n");
        let i = load_text(&text);
        let copy_line = to + 1;
        prop_assert!(
            i.run.meta.implausible.iter().any(|f| f.line == Some(copy_line)
                && f.what.contains(&format!("appears again at line {copy_line}"))),
            "{}: line {copy_line}: {:#?}", KEYED[which], i.run.meta.implausible
        );
        prop_assert!(!i.run.series.is_empty());
    }
}

const WORDS: &[&str] = &[
    "Linux",
    "6.1.0",
    "(host)",
    "11/21/2026",
    "_x86_64_",
    "(2",
    "CPU)",
    "CPU",
    "IFACE",
    "INTR",
    "DEV",
    "FILESYSTEM",
    "%user",
    "%usr",
    "%irq",
    "%steal",
    "%idle",
    "rxpck/s",
    "rxkB/s",
    "intr/s",
    "cswch/s",
    "CPU*",
    "CPU0",
    "all",
    "sum",
    "lo",
    "-1",
    "0",
    "1",
    "12,5",
    "3.25",
    "1e3",
    "12:00:01",
    "11:59:59",
    "AM",
    "PM",
    "Average:",
    "Summary:",
    "LINUX",
    "RESTART",
    "# hostname;interval;timestamp;CPU;%user",
    "vm;1;2026-11-21 23:59:31 UTC;-1;5.0",
    "vm;1;1795305571;sum;1",
    "LINUX-RESTART",
    ";",
    "",
    "\t",
    "é",
];

proptest! {
    #[test]
    fn sysstat_readers_are_total_on_word_soup(text in word_soup(WORDS)) {
        check_total(sar::import(&text, &opts("s")), &text)?;
        check_total(mpstat::import(&text, &opts("s")), &text)?;
        check_total(sadf::import(&text, &opts("s")), &text)?;
        let _ = (sar::sniff(&text), mpstat::sniff(&text), sadf::sniff(&text));
    }
}

#[test]
fn sar_h_human_sizes_and_percent_signs_read_as_numbers() {
    // Recorded with `sar -h -n DEV 1 2`: sizes in bytes with binary prefixes under rxkB/s,
    // shares with their % sign, the key column last.
    let dev = load("sar-h-n-DEV.txt");
    let rx = get(&dev, "iface_rx_bits_per_s", &[("iface", "lo")]);
    assert!(
        (rx[0].unwrap() - 22.2 * 1048576.0 * 8.0).abs() < 1.0,
        "{rx:?}"
    );
    assert!(
        (rx[1].unwrap() - 21.0 * 1048576.0 * 8.0).abs() < 1.0,
        "{rx:?}"
    );
    assert_eq!(
        get(&dev, "iface_rx_pps", &[("iface", "lo")]),
        some(&[15538.46, 14714.56])
    );
    // `sar -h -u 1 2`: every share with its sign.
    let u = load("sar-h-u.txt");
    assert_eq!(get(&u, "cpu_nice_pct", &[]), some(&[92.6, 94.5]));
    // A suffix that is no unit is still an error naming what was expected.
    let bad = fixture("sar-h-n-DEV.txt").replace("22.2M", "22.2Q");
    let e = sar::import(&bad, &opts("bad")).unwrap_err().to_string();
    assert!(e.contains("a number under 'rxkB/s'"), "{e}");
}
