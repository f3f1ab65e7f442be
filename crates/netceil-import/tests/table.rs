//! The generic TSV/CSV time-series reader on the seed tables, hand-made variants (epoch,
//! ISO and elapsed time columns, tab/semicolon/comma/space separators) and malformed input.

mod mutate;

use netceil_import::formats::table;
use netceil_import::{detect, Format, Imported};
use netceil_model::Unit;
use proptest::prelude::*;

use mutate::{check_total, damage, err, opts, word_soup};

fn fixture(rel: &str) -> String {
    mutate::fixture_or_seed("table", rel)
}

fn load(rel: &str) -> Imported {
    table::import(&fixture(rel), &opts(rel)).unwrap_or_else(|e| panic!("{e}"))
}

fn values(i: &Imported, name: &str) -> Vec<Option<f64>> {
    i.run
        .series
        .total(name)
        .unwrap_or_else(|| panic!("no metric {name}"))
        .values
        .clone()
}

#[test]
fn erlang_bench_util_sar_imports_with_time_and_ratios() {
    let i = load("seeds/erlang-bench-util-sar.txt");
    assert_eq!(
        i.run.series.interval_s, 5.0,
        "rows every 5 s by their timestamps"
    );
    assert_eq!(i.run.series.t_s, [5.0, 10.0, 15.0]);
    // The VM's cpu_util is the OS's CPU figure: it becomes the machine's CPU busy share, in %,
    // so the CPU rules size it (the schedulers' own utilization stays a ratio of its own).
    let cpu = i
        .run
        .series
        .total("cpu_busy_pct")
        .expect("cpu_util read as cpu_busy_pct");
    assert_eq!(cpu.unit, Unit::Percent);
    let got: Vec<f64> = cpu.values.iter().flatten().copied().collect();
    for (g, want) in got.iter().zip([19.0736, 31.8427, 29.4529]) {
        assert!((g - want).abs() < 1e-9, "{got:?}");
    }
    assert_eq!(got.len(), 3);
    assert!(i.run.series.total("cpu_util_ratio").is_none());
    assert!(
        i.run
            .notes
            .iter()
            .any(|n| n.contains("'cpu_util' taken as the machine's CPU busy share")),
        "{:?}",
        i.run.notes
    );
    assert_eq!(values(&i, "scheduler_util_ratio")[0], Some(0.058807));
    // Not cumulative in this log (it goes down): kept as given, not renamed to cs_per_s.
    assert_eq!(
        values(&i, "context_switches"),
        [Some(332677.0), Some(333213.0), Some(331951.0)]
    );
    assert!(i.run.series.total("cs_per_s").is_none());
    assert!(
        i.run.series.total("loop").is_none(),
        "the loop counter beside a time column is no metric"
    );
    assert!(
        i.run
            .notes
            .iter()
            .any(|n| n.contains("'mem_total' never decreases")),
        "{:?}",
        i.run.notes
    );
    assert!(!i
        .run
        .notes
        .iter()
        .any(|n| n.contains("'context_switches' never decreases")));
    assert!(i.run.notes.iter().any(|n| n.contains("not converted to %")));
    assert_eq!(i.run.series.metrics.len(), 17);
}

#[test]
fn seed_tables_without_time_import_indexed_rows() {
    for (name, rows, metric) in [
        (
            "seeds/freebsd-vmstat-notes.csv",
            2,
            "observed_throughput_mbps",
        ),
        ("seeds/erlang-sbwt.csv", 6, "cpu_util_pct"),
        ("seeds/mint-knee-driver.csv", 7, "cycle_us"),
        ("seeds/mint-knee-app.csv", 7, "published_gbps"),
        ("seeds/mint-injection-cost.csv", 6, "processing_us"),
        ("seeds/freebsd-bridge.csv", 6, "value"),
    ] {
        let i = load(name);
        assert_eq!(i.run.series.len(), rows, "{name}");
        assert_eq!(
            i.run.series.t_s,
            (1..=rows).map(|r| r as f64).collect::<Vec<_>>(),
            "{name}"
        );
        assert!(i.run.series.total(metric).is_some(), "{name}: {metric}");
        assert!(
            i.run.notes.iter().any(|n| n.contains("no time column")),
            "{name}"
        );
        assert_eq!(detect(&fixture(name)), Ok(Format::Table), "{name}");
    }
    let sbwt = load("seeds/erlang-sbwt.csv");
    assert_eq!(
        sbwt.run.series.total("cpu_util_pct").unwrap().unit,
        Unit::Percent
    );
    assert_eq!(values(&sbwt, "scheduler_util_pct")[5], Some(7.32));
    assert!(
        sbwt.run
            .notes
            .iter()
            .any(|n| n == "row 1 (t=1 s): sbwt=very_long"),
        "{:?}",
        sbwt.run.notes
    );
    assert!(
        sbwt.run.notes[0].starts_with("Erlang VM receiving 700 TCP flows"),
        "comments kept"
    );
    let cost = load("seeds/mint-injection-cost.csv");
    assert_eq!(
        values(&cost, "processing_us")[0],
        Some(0.356),
        "ns converted to µs"
    );
    let app = load("seeds/mint-knee-app.csv");
    assert_eq!(values(&app, "min_interval_us")[1], None, "'-' is missing");
    assert_eq!(
        values(&app, "size_kib")[1],
        None,
        "'1.5 (real NIC)' is not a number"
    );
    assert!(
        app.warnings.iter().any(|w| w.contains("'1.5 (real NIC)'")),
        "{:?}",
        app.warnings
    );
    let notes = load("seeds/freebsd-vmstat-notes.csv");
    assert!(
        notes
            .run
            .notes
            .iter()
            .any(|n| n.contains("note=saturated; cs fluctuates; many duplicate ACKs")),
        "quoted cells"
    );
}

#[test]
fn time_columns() {
    let e = load("epoch-tab.tsv");
    assert_eq!(e.run.meta.started_unix_s, 1_795_305_570.0);
    assert_eq!(e.run.series.t_s, [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(
        e.run.series.total("cpu_busy_pct").unwrap().unit,
        Unit::Percent
    );
    let iso = load("iso-semicolon.csv");
    assert_eq!(iso.run.series.interval_s, 5.0);
    assert_eq!(iso.run.meta.started_unix_s, 1_795_255_200.0);
    assert_eq!(
        values(&iso, "softirq_pct"),
        [Some(31.5), Some(33.0), Some(32.2)],
        "decimal commas under ';'"
    );
    assert_eq!(
        iso.run.series.total("cs_per_s").unwrap().unit,
        Unit::PerSecond,
        "a netceil name keeps its unit"
    );
    assert_eq!(
        iso.run.notes[0],
        "router counters exported from a spreadsheet"
    );
    let el = load("elapsed-comma-truncated.csv");
    assert_eq!(el.run.series.t_s, [10.0, 20.0, 30.0]);
    assert_eq!(
        values(&el, "latency_us"),
        [Some(210.0), Some(250.0), Some(220.0)],
        "ms converted to µs"
    );
    assert!(
        el.warnings
            .iter()
            .any(|w| w.contains("line 5: ignored a truncated last row")),
        "{:?}",
        el.warnings
    );
    assert!(el
        .run
        .notes
        .iter()
        .any(|n| n.contains("'retransmits' never decreases")));
    let c = load("counter-loop.txt");
    assert_eq!(c.run.series.t_s, [1.0, 2.0, 3.0, 4.0]);
    assert!(c
        .run
        .notes
        .iter()
        .any(|n| n.contains("'loop' is a counter")));
    assert!(c
        .run
        .notes
        .iter()
        .any(|n| n.contains("'packets_total' never decreases")));
}

#[test]
fn malformed_tables() {
    let good = fixture("epoch-tab.tsv");
    let bad = good.replacen("350000\t", "350000\t\t", 1);
    let e = err(table::import(&bad, &opts("t.tsv")));
    assert_eq!((e.line, e.column), (3, Some(5)));
    assert!(
        e.expected.contains("4 tab-separated cells"),
        "{}",
        e.expected
    );
    let e = err(table::import("a,b\n", &opts("h.csv")));
    assert_eq!(e.line, 1);
    let why = table::sniff("alpha beta\ngamma delta\n").unwrap_err();
    assert!(
        why.starts_with("not a table: no number in the first row"),
        "{why}"
    );
    let why = table::sniff("# only a comment\n").unwrap_err();
    assert!(why.contains("no lines other than comments"), "{why}");
    let why = table::sniff("1,2\n3,4\n").unwrap_err();
    assert!(why.contains("has no column names"), "{why}");
}

const TABLES: [&str; 6] = [
    "seeds/erlang-bench-util-sar.txt",
    "seeds/mint-knee-app.csv",
    "seeds/freebsd-vmstat-notes.csv",
    "iso-semicolon.csv",
    "epoch-tab.tsv",
    "elapsed-comma-truncated.csv",
];

proptest! {
    #[test]
    fn table_is_total_under_mutation(
        which in 0usize..TABLES.len(),
        damage in damage(),
    ) {
        let text = damage.apply(&fixture(TABLES[which]));
        check_total(table::import(&text, &opts("m")), &text)?;
        let _ = table::sniff(&text);
    }
}

const WORDS: &[&str] = &[
    "time",
    "loop",
    "epoch",
    "elapsed_s",
    "cpu_util",
    "x_pct",
    "lat_ns",
    "a",
    "b",
    ",",
    ";",
    "\t",
    "#",
    "\"",
    "\"\"",
    "-",
    "NA",
    "0",
    "1",
    "2",
    "0.5",
    "31,5",
    "1795305571",
    "2015-07-22T02:48:06",
    "2026-11-21 10:00:05Z",
    "é",
    "",
];

proptest! {
    #[test]
    fn table_is_total_on_word_soup(text in word_soup(WORDS)) {
        check_total(table::import(&text, &opts("s")), &text)?;
        let _ = table::sniff(&text);
    }
}
