//! What `run` prints through a pipe: the live table whole (a pipe has no width to cut it
//! to), and `--format iperf`'s interval lines in its place.

use assert_cmd::Command;

fn netceil() -> Command {
    Command::cargo_bin("netceil").expect("binary built")
}

fn piped_run(args: &[&str]) -> String {
    let out = netceil()
        .args([
            "run",
            "udp",
            "--rate",
            "20k",
            "--duration",
            "2",
            "--no-store",
        ])
        .args(args)
        // A width in the environment is the terminal's, not the pipe's: it cuts nothing here.
        .env("COLUMNS", "80")
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Piped, the live table keeps every column it has: its header is wider than 80 columns and
/// ends with the retransmit column, the last of the table, whatever COLUMNS says. (On a
/// terminal the table follows its width: `observer::table`'s tests and the snapshots at 80
/// and 100 columns.)
#[test]
fn piped_the_live_table_is_not_cut_to_a_width() {
    let text = piped_run(&[]);
    let header = text
        .lines()
        .find(|l| l.contains("rx pps") && l.contains("hot cpu"))
        .unwrap_or_else(|| panic!("no live table header in:\n{text}"));
    assert!(header.chars().count() > 80, "cut to 80: {header}");
    assert!(header.trim_end().ends_with("retx/s"), "{header}");
}

/// `--format iperf`: a header, one line per interval, the separator and the sender's and
/// receiver's totals; no live table, no verdict screen.
#[test]
fn format_iperf_prints_interval_lines_and_totals() {
    let text = piped_run(&["--format", "iperf"]);
    assert!(text.starts_with("[ ID] Interval"), "{text}");
    let intervals = text
        .split_once("- - -")
        .map(|(head, _)| head.lines().filter(|l| l.starts_with("[  1]")).count());
    assert_eq!(intervals, Some(2), "{text}");
    for end in ["sender", "receiver"] {
        assert!(
            text.lines().any(|l| l.ends_with(end)),
            "no {end} line: {text}"
        );
    }
    assert!(
        !text.contains("hot cpu") && !text.contains("verdict"),
        "{text}"
    );
}
