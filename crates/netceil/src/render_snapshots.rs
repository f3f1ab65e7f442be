//! Snapshots of what a measuring command prints, rendered from stored runs of real commands
//! (tests/fixtures/runs, made with `--json` on loopback): the run summary and verdict, the
//! live table, and the search and sweep tables. A change of wording, digits or layout shows
//! up here as a diff to review (`cargo insta review`, or INSTA_UPDATE=always).

use netceil_engine::LoadFigures;
use netceil_model::names as n;
use netceil_model::Run;
use netceil_probe::Row;

fn fixture(name: &str) -> Run {
    let path = format!(
        "{}/tests/fixtures/runs/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Ids and times differ from run to run of the same fixture only in what the machine named.
fn summary(run: &Run) -> String {
    format!(
        "{}{}",
        crate::summary::render(run),
        crate::summary::verdict(run)
    )
}

#[test]
fn udp_run_summary() {
    insta::assert_snapshot!(summary(&fixture("udp")));
}

#[test]
fn tcp_run_summary() {
    insta::assert_snapshot!(summary(&fixture("tcp")));
}

#[test]
fn rr_run_summary() {
    insta::assert_snapshot!(summary(&fixture("rr")));
}

#[test]
fn search_table() {
    insta::assert_snapshot!(crate::cmd_search::knee_table(&fixture("search")));
}

#[test]
fn sweep_udp_table() {
    let run = fixture("sweep");
    let count = run
        .workload
        .as_ref()
        .and_then(|w| w.params_as::<netceil_model::params::SweepParams>().ok())
        .map(|p| p.count)
        .expect("a UDP sweep");
    insta::assert_snapshot!(crate::cmd_sweep::knee_table(&run, count));
}

#[test]
fn sweep_tcp_table() {
    insta::assert_snapshot!(crate::cmd_sweep::flows_table(&fixture("sweep-tcp")));
}

/// The live table as `netceil run udp` printed it, row by row, from the run's own series
/// (the machine's columns and the workload's figures of each interval), at 100 columns and
/// with every column (`--wide`).
fn live_table(run: &Run, wide: bool) -> String {
    let s = &run.series;
    let mut table =
        crate::table::LiveTable::new(Vec::new(), crate::table::UDP_COLUMNS, wide, Some(100));
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
