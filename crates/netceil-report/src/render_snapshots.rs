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

/// What `netceil run` ends with by default: at 80 columns, the stored run's pointers, and
/// with the line saying where it was stored, no more than one 80×24 screen.
fn brief(run: &Run, width: usize, quiet: bool) -> String {
    let screen = crate::text::Screen {
        width,
        quiet,
        stored: Some(&run.run_id),
    };
    let text = crate::text::brief(run, &screen);
    assert!(text.lines().count() < 24, "over one screen:\n{text}");
    for line in text.lines() {
        let cols = line.chars().count();
        assert!(cols <= width, "{cols} columns over {width}: {line}");
    }
    text
}

#[test]
fn default_run_fits_one_screen() {
    insta::assert_snapshot!(brief(&fixture("suite"), 80, false));
}

#[test]
fn one_workload_fits_one_screen() {
    for name in ["udp", "tcp", "rr"] {
        insta::assert_snapshot!(format!("brief_{name}"), brief(&fixture(name), 80, false));
    }
}

#[test]
fn quiet_is_a_few_lines() {
    let text = brief(&fixture("udp"), 80, true);
    assert!(text.lines().count() <= 4, "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn verbose_is_everything_wrapped() {
    let run = fixture("suite");
    let text = crate::text::full(&run, 80);
    for line in text.lines() {
        let table = line.contains(['│', '┌', '└', '╞', '├']);
        assert!(table || line.chars().count() <= 80, "over 80: {line}");
    }
    // Nothing is lost in the wrapping: the same words as the unwrapped summary and verdict.
    let words = |t: &str| t.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let plain = format!(
        "{}{}",
        crate::text::summary(&run),
        crate::text::verdict(&run)
    );
    assert_eq!(words(&text), words(&plain));
}

/// How `netceil watch` ends: the verdict and what was not measured, wrapped to 80 columns,
/// from a stored watch of a busy CPU (netceil-analyze's fixture), analyzed as watch does.
#[test]
fn watch_end() {
    let path = format!(
        "{}/../netceil-analyze/tests/fixtures/idle-watch-busy-cpu.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut run: Run = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    // The fixture keeps no findings: analyzed here, as watch does at its end.
    netceil_analyze::analyze_into(&mut run);
    assert!(!run.findings.is_empty(), "a busy CPU has a finding");
    let end = format!(
        "{}{}",
        crate::text::verdict(&run),
        crate::text::missing(&run.series)
    );
    let end = crate::text::wrap_lines(&end, 80);
    for line in end.lines() {
        assert!(line.chars().count() <= 80, "{line}");
    }
    insta::assert_snapshot!(end);
}
