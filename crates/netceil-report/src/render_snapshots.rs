//! Snapshots of what a measuring command prints, rendered from stored runs of real commands
//! (tests/fixtures/runs at the workspace's root, made with `--json` on loopback): the run
//! summary and verdict, and the search and sweep tables (the live table's are the engine's,
//! beside its observer). A change of wording, digits or layout shows
//! up here as a diff to review (`cargo insta review`, or INSTA_UPDATE=always).

use netceil_model::Run;

fn fixture(name: &str) -> Run {
    let path = format!(
        "{}/../../tests/fixtures/runs/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Ids and times differ from run to run of the same fixture only in what the machine named.
fn summary(run: &Run) -> String {
    format!("{}{}", crate::text::summary(run), crate::text::verdict(run))
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
    insta::assert_snapshot!(crate::tables::search(&fixture("search")));
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
    insta::assert_snapshot!(crate::tables::sweep(&run, count));
}

#[test]
fn sweep_tcp_table() {
    insta::assert_snapshot!(crate::tables::flows(&fixture("sweep-tcp")));
}
