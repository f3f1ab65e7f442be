//! Snapshots of `--help` for the binary and every subcommand, nested ones included.
//!
//! The list of commands is not written down here: it is found by walking the binary's own help,
//! reading each "Commands:" section and descending into every entry. A new subcommand therefore
//! shows up in the `commands` snapshot and gets a help snapshot of its own, and the test fails
//! until both are reviewed and accepted.

use assert_cmd::Command;
use std::time::Duration;

/// The terminal width the help is wrapped to. The binary caps it at 100 (`max_term_width`), so
/// this is also the widest help can get.
const COLUMNS: &str = "100";

/// `netceil ARGS… --help`, at a fixed width, checked to succeed with nothing on stderr.
fn help(path: &[String]) -> String {
    let out = Command::cargo_bin("netceil")
        .expect("binary built")
        .args(path)
        .arg("--help")
        .env("COLUMNS", COLUMNS)
        .env_remove("NETCEIL_DB")
        .timeout(Duration::from_secs(30))
        .output()
        .expect("runs");
    let shown = format!("netceil {} --help", path.join(" "));
    assert!(
        out.status.success(),
        "`{shown}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "`{shown}` wrote to stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap_or_else(|e| panic!("`{shown}` is not UTF-8: {e}"))
}

/// The subcommand names in a help text's "Commands:" section. Entries are indented by two
/// spaces; wrapped descriptions are indented further. clap's own `help` entry is left out: it is
/// clap's, and its help says nothing of netceil's.
fn subcommands(help: &str) -> Vec<String> {
    let mut lines = help.lines().skip_while(|l| l.trim_end() != "Commands:");
    lines.next();
    lines
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.strip_prefix("  "))
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// Replaces what could change from machine to machine or release to release: the version and
/// the home directory (no help text is expected to show either).
fn redact(text: &str) -> String {
    let mut text = text.replace(env!("CARGO_PKG_VERSION"), "[VERSION]");
    if let Some(home) = std::env::var_os("HOME").filter(|h| h.len() > 1) {
        text = text.replace(&*home.to_string_lossy(), "[HOME]");
    }
    text
}

/// Every command path (`[]`, `["lab"]`, `["lab", "up"]`, …) with its help text, depth first.
fn walk(path: Vec<String>, found: &mut Vec<(Vec<String>, String)>) {
    let text = help(&path);
    let children = subcommands(&text);
    found.push((path.clone(), text));
    for child in children {
        let mut next = path.clone();
        next.push(child);
        walk(next, found);
    }
}

fn snapshot_name(path: &[String]) -> String {
    std::iter::once("netceil")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("_")
}

#[test]
fn subcommands_are_read_from_the_commands_section() {
    let text =
        "About\n\nUsage: x <COMMAND>\n\nCommands:\n  run      Generate load. With\n           \
                wrapped words\n  lab-up   Build\n  help     Print this message\n\nOptions:\n  \
                -h, --help  Print help\n";
    assert_eq!(subcommands(text), ["run", "lab-up"]);
    assert!(subcommands("Usage: x\n\nOptions:\n  -h, --help  Print help\n").is_empty());
}

#[test]
fn help_of_every_command() {
    let mut found = Vec::new();
    walk(Vec::new(), &mut found);
    let list: Vec<String> = found
        .iter()
        .map(|(path, _)| format!("netceil {}", path.join(" ")).trim_end().to_string())
        .collect();
    insta::assert_snapshot!("commands", list.join("\n"));
    for (path, text) in &found {
        insta::assert_snapshot!(snapshot_name(path), redact(text));
    }
}
