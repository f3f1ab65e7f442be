//! Snapshots of the live table, rendered row by row from a stored run of a real
//! `netceil run udp` (tests/fixtures/runs at the workspace's root, made with `--json` on
//! loopback). A change of wording, digits or layout shows up here as a diff to review
//! (`cargo insta review`, or INSTA_UPDATE=always).

use super::LoadFigures;
use netceil_model::names as n;
use netceil_model::Run;
use netceil_probe::Row;

fn fixture(name: &str) -> Run {
    let path = format!(
        "{}/../../tests/fixtures/runs/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The live table as `netceil run udp` printed it, row by row, from the run's own series
/// (the machine's columns and the workload's figures of each interval), at 100 columns and
/// with every column (`--wide`).
fn live_table(run: &Run, wide: bool) -> String {
    table_of(run, super::table::UDP_COLUMNS, wide, Some(100))
}

/// The table of `run`'s series with these workload columns, at this width.
fn table_of(run: &Run, load: &'static [&'static str], wide: bool, width: Option<usize>) -> String {
    let s = &run.series;
    let mut table = super::table::LiveTable::new(Vec::new(), load, wide, width);
    let at = |name: &str, i: usize| {
        s.total(name)
            .and_then(|m| m.values.get(i).copied().flatten())
    };
    let mut out = Vec::new();
    for (i, &t) in s.t_s.iter().enumerate() {
        let values = s
            .metrics
            .iter()
            .filter_map(|m| Some((m.id.clone(), m.unit, m.values.get(i).copied().flatten()?)))
            .collect();
        let row = Row::from_values(t, s.interval_s, values);
        let load = LoadFigures {
            tx_pps: at(n::LOAD_TX_PPS, i),
            rx_pps: at(n::LOAD_RX_PPS, i),
            rx_bits_per_s: at(n::LOAD_RX_BITS_PER_S, i),
            lost: run.results.as_ref().map(|r| r.lost_packets),
            ..Default::default()
        };
        out.extend(table.lines(&row, &load));
    }
    out.join("\n")
}

#[test]
fn live_table_udp() {
    let run = fixture("udp");
    insta::assert_snapshot!(live_table(&run, false));
    insta::assert_snapshot!("live_table_udp_wide", live_table(&run, true));
}

/// `netceil watch`'s table (no workload columns) at 80 columns, from a stored watch of a
/// busy CPU (netceil-analyze's fixture).
#[test]
fn live_table_watch() {
    let path = format!(
        "{}/../netceil-analyze/tests/fixtures/idle-watch-busy-cpu.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let run: Run = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let table = table_of(&run, &[], false, Some(80));
    for line in table.lines() {
        assert!(line.chars().count() <= 80, "{line}");
    }
    insta::assert_snapshot!(table);
}
