//! `netceil completions SHELL` and `netceil man`: generated from the clap definitions, so they
//! never drift from the flags.

use anyhow::Context;
use clap::CommandFactory;
use std::io::Write;
use std::path::Path;

use crate::cli::{Cli, GenShell, ManArgs};
use crate::{Done, Failure, Outcome};

pub fn completions(shell: GenShell) -> Outcome {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    let shell = match shell {
        GenShell::Bash => clap_complete::Shell::Bash,
        GenShell::Zsh => clap_complete::Shell::Zsh,
        GenShell::Fish => clap_complete::Shell::Fish,
        GenShell::Elvish => clap_complete::Shell::Elvish,
        GenShell::Powershell => clap_complete::Shell::PowerShell,
    };
    clap_complete::generate(shell, &mut cmd, "netceil", &mut out);
    crate::out::stdout()
        .write_all(&out)
        .context("writing to stdout")?;
    Ok(Done::Success)
}

pub fn man(args: ManArgs) -> Outcome {
    let cmd = man_command();
    match &args.out {
        None => {
            let page = render_page(&cmd, "netceil")?;
            crate::out::stdout()
                .write_all(&page)
                .context("writing to stdout")?;
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| {
                Failure::of_path(
                    &e,
                    anyhow::anyhow!(
                        "--out {}: cannot make a directory there: {e}",
                        dir.display()
                    ),
                )
            })?;
            let mut written = 0;
            write_pages(&cmd, "netceil", dir, &mut written)?;
            eprintln!("netceil: {written} man pages written to {}", dir.display());
        }
    }
    Ok(Done::Success)
}

/// The command line as the man pages show it: without clap's `help` subcommand, which has no
/// page of its own (`--help` is on every page).
fn man_command() -> clap::Command {
    Cli::command().disable_help_subcommand(true)
}

/// One page for `cmd` (named `name`), then one per subcommand, `netceil-lab-up.1` style.
fn write_pages(
    cmd: &clap::Command,
    name: &str,
    dir: &Path,
    written: &mut usize,
) -> Result<(), Failure> {
    let path = dir.join(format!("{name}.1"));
    let page = render_page(cmd, name)?;
    std::fs::write(&path, page).map_err(|e| {
        Failure::of_path(
            &e,
            anyhow::anyhow!("--out: cannot write {}: {e}", path.display()),
        )
    })?;
    *written += 1;
    for sub in cmd.get_subcommands() {
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}

/// The page of `cmd` under `name`: clap_mangen's sections, a synopsis that gives each
/// option's value, and netceil's own EXIT STATUS, ENVIRONMENT, FILES and EXAMPLES.
fn render_page(cmd: &clap::Command, name: &str) -> Result<Vec<u8>, Failure> {
    let cmd = cmd
        .clone()
        .name(name.to_string())
        .version(env!("CARGO_PKG_VERSION"));
    let man = clap_mangen::Man::new(cmd.clone());
    let mut page = Vec::new();
    let rendering = |w: &mut Vec<u8>| -> std::io::Result<()> {
        man.render_title(w)?;
        man.render_name_section(w)?;
        w.write_all(synopsis(&cmd).as_bytes())?;
        man.render_description_section(w)?;
        man.render_options_section(w)?;
        if cmd.has_subcommands() {
            man.render_subcommands_section(w)?;
        }
        man.render_extra_section(w)?;
        w.write_all(netceil_sections(name).as_bytes())?;
        man.render_version_section(w)
    };
    rendering(&mut page).context("rendering a man page")?;
    Ok(page)
}

/// Text for roff: a backslash and a leading dot or quote are literal, and `-` is a minus.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    match escaped.chars().next() {
        Some('.' | '\'') => format!("\\&{escaped}"),
        _ => escaped,
    }
}

/// `.SH SYNOPSIS` with each option's value (`[--size SIZE]`, `[--pacing {sleep|spin|auto}]`),
/// its positional arguments and its subcommand.
fn synopsis(cmd: &clap::Command) -> String {
    let mut line = format!("\\fB{}\\fR", roff(cmd.get_name()));
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let value = || {
            let possible: Vec<String> = arg
                .get_possible_values()
                .iter()
                .filter(|v| !v.is_hide_set())
                .map(|v| v.get_name().to_string())
                .collect();
            if !possible.is_empty() && possible.len() <= 8 {
                format!("{{{}}}", possible.join("|"))
            } else {
                arg.get_value_names().and_then(|n| n.first()).map_or_else(
                    || arg.get_id().to_string().to_uppercase(),
                    ToString::to_string,
                )
            }
        };
        let takes_value = arg.get_action().takes_values();
        let text = match (arg.get_long(), arg.get_short()) {
            (Some(long), _) if takes_value => {
                format!("\\fB\\-\\-{}\\fR \\fI{}\\fR", roff(long), roff(&value()))
            }
            (Some(long), _) => format!("\\fB\\-\\-{}\\fR", roff(long)),
            (None, Some(short)) if takes_value => {
                format!("\\fB\\-{short}\\fR \\fI{}\\fR", roff(&value()))
            }
            (None, Some(short)) => format!("\\fB\\-{short}\\fR"),
            (None, None) => {
                let v = format!("\\fI{}\\fR", roff(&value()));
                let many = matches!(arg.get_num_args(), Some(r) if r.max_values() > 1);
                let v = if many { format!("{v}...") } else { v };
                if arg.is_last_set() {
                    format!("\\-\\- {v}")
                } else {
                    v
                }
            }
        };
        if arg.is_required_set() {
            line.push_str(&format!(" {text}"));
        } else {
            line.push_str(&format!(" [{text}]"));
        }
    }
    if cmd.has_subcommands() {
        line.push_str(" \\fICOMMAND\\fR");
    }
    format!(".SH SYNOPSIS\n{line}\n")
}

/// Examples per command, by page name.
const EXAMPLES: &[(&str, &[(&str, &str)])] = &[
    (
        "netceil",
        &[
            ("netceil run", "the ~20 s loopback ceiling test: UDP, a TCP stream and request/response, with a verdict"),
            ("netceil watch -- iperf3 -c 127.0.0.1 -t 10", "observe someone else's load and name its ceiling"),
            ("netceil analyze vmstat.log --throughput 18MB/s", "diagnose another tool's log"),
            ("netceil show last", "the newest stored run, in full"),
        ],
    ),
    (
        "netceil-run",
        &[
            ("netceil run", "the ~20 s loopback ceiling test"),
            ("netceil run udp --size 64 --duration 10", "64-byte datagrams at the highest rate for 10 s"),
            ("netceil run tcp --flows 4 --to HOST:5301", "four TCP streams to a far end running netceil serve"),
            ("netceil run rr --rate 5k", "request/response at 5000 transactions/s, with latency percentiles"),
            ("netceil run udp --confirm", "and test the verdict with a short A/B pair of trials"),
        ],
    ),
    (
        "netceil-watch",
        &[
            ("netceil watch --duration 30", "sample the machine for 30 s"),
            ("netceil watch --interval 10ms -- ./server", "launch ./server, sample every 10 ms until it exits"),
            ("netceil watch --pid 1234", "follow a running process's threads"),
        ],
    ),
    (
        "netceil-search",
        &[("netceil search udp --frame-sizes 64,1518", "the highest loss-free and partial-drop rates at two frame sizes")],
    ),
    (
        "netceil-sweep",
        &[("netceil sweep udp --sizes 64,512,1400", "size × interval trains: where every packet first arrives")],
    ),
    (
        "netceil-analyze",
        &[
            ("netceil analyze sar.txt mpstat.txt iperf3.json", "several logs at once, each a stored run"),
            ("cat /proc/interrupts | netceil analyze -", "a snapshot from stdin"),
        ],
    ),
    (
        "netceil-compare",
        &[("netceil compare RUN_A last", "two runs side by side, with significance tests over their load phases")],
    ),
    (
        "netceil-lab",
        &[
            ("netceil lab compare -- run udp --size 64", "the same workload across direct, bridge and routed paths"),
            ("netceil lab run bridge --knob net.core.netdev_budget=300,600 -- run udp", "a knob's values, each restored after"),
        ],
    ),
    (
        "netceil-serve",
        &[("netceil serve --key-file KEY", "the far end for `netceil run … --to HOST:PORT`")],
    ),
];

/// EXIT STATUS and ENVIRONMENT on every page; FILES and EXAMPLES where they apply.
fn netceil_sections(name: &str) -> String {
    let mut s = String::from(
        ".SH \"EXIT STATUS\"\n\
         .TP\n0\nSuccess, also when the reader of standard output went away (\\fBnetceil runs | head \\-1\\fR).\n\
         .TP\n1\nA failure at run time: the system, the far end, or a write to the store.\n\
         .TP\n2\nBad input: a flag, a file, an address, a process that is not there.\n\
         .TP\n124\n\\fBwatch \\-\\-duration\\fR ended the command it launched (as timeout(1)).\n\
         .TP\n128+\\fIn\\fR\nStopped by signal \\fIn\\fR: 129 SIGHUP, 130 SIGINT (Ctrl\\-C), 143 SIGTERM. What was recorded is kept and what was changed is restored.\n\
         .PP\n\\fBwatch \\-\\- CMD\\fR otherwise exits with the command's own code.\n\
         .SH ENVIRONMENT\n\
         .TP\nNETCEIL_DB\nThe run store's file (default: \\fI$XDG_DATA_HOME/netceil/runs.db\\fR, else \\fI~/.local/share/netceil/runs.db\\fR).\n\
         .TP\nXDG_DATA_HOME\nWhere the store lives when NETCEIL_DB is not set (an absolute path).\n\
         .TP\nNO_COLOR\nWhen set, help and error messages are not coloured. netceil's own tables and reports use no colour.\n\
         .SH FILES\n\
         .TP\n\\fI~/.local/share/netceil/runs.db\\fR\nThe run store (SQLite), one per user; see NETCEIL_DB.\n\
         .TP\n\\fIlab\\-journal.jsonl\\fR\nBeside the store: every change the lab made and has not yet restored, so that \\fBnetceil lab down \\-\\-all\\fR can revert them after a kill \\-9.\n",
    );
    if let Some((_, examples)) = EXAMPLES.iter().find(|(page, _)| *page == name) {
        s.push_str(".SH EXAMPLES\n");
        for (command, what) in *examples {
            s.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(command), roff(what)));
        }
    }
    s.push_str(".SH \"SEE ALSO\"\nnetceil(1), iperf3(1), sar(1), vmstat(8), perf(1)\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// Every example on the man pages is a command line netceil accepts.
    #[test]
    fn every_man_page_example_parses() {
        for (page, examples) in EXAMPLES {
            for (command, _) in *examples {
                let plain = command.replace("HOST", "127.0.0.1");
                // `cat FILE | netceil …`: netceil's part.
                let line = plain.rsplit("| ").next().unwrap_or(&plain);
                let argv: Vec<&str> = line.split_whitespace().collect();
                assert_eq!(argv[0], "netceil", "{page}: {plain}");
                if let Err(e) = Cli::try_parse_from(&argv) {
                    panic!("{page}: `{plain}` does not parse: {e}");
                }
            }
        }
    }

    #[test]
    fn synopses_give_each_options_value_and_no_page_for_help() {
        let cmd = man_command();
        let udp = cmd
            .find_subcommand("run")
            .and_then(|r| r.find_subcommand("udp"))
            .unwrap();
        let s = synopsis(udp);
        assert!(s.contains("[\\fB\\-\\-size\\fR \\fISIZE\\fR]"), "{s}");
        assert!(s.contains("{sleep|spin}"), "{s}");
        assert!(s.contains("[\\fB\\-\\-gso\\fR]"), "{s}");
        let page = String::from_utf8(render_page(&cmd, "netceil").unwrap()).unwrap();
        assert!(!page.contains("netceil\\-help"), "{page}");
        for section in ["EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES"] {
            assert!(
                page.contains(&format!(".SH {section}"))
                    || page.contains(&format!(".SH \"{section}\"")),
                "{section}"
            );
        }
        assert!(page.contains("NETCEIL_DB") && page.contains("NO_COLOR"));
    }
}
