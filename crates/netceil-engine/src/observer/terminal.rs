//! Live output while a run goes on: one line per second and a progress bar on a terminal,
//! plain lines otherwise. With --json the lines go to stderr so stdout stays one document.
//!
//! These observers draw on the terminal; what they write to stdout goes through the writer
//! the caller gives them ([`OpenStdout`]), so that the caller decides what a closed pipe means.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use netceil_probe::Row;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use super::table::{
    LiveTable, RRUL_COLUMNS, RR_COLUMNS, TCP_BOTH_COLUMNS, TCP_COLUMNS, TCP_DOWN_COLUMNS,
    UDP_COLUMNS,
};
use super::{LoadFigures, LoadKind, Observer, PartStart};

/// Opens stdout for one write of plain lines (no bar): the binary's never panics and notes a
/// closed pipe.
pub type OpenStdout = fn() -> Box<dyn Write>;

/// The terminal's width, if stdout (or stderr, when stdout carries JSON) is one.
pub fn terminal_width(to_stderr: bool) -> Option<usize> {
    let term = if to_stderr {
        console::Term::stderr()
    } else {
        console::Term::stdout()
    };
    term.is_term().then(|| term.size().1 as usize)
}

/// The terminal's view of a session: for each trial a title, a progress bar and the live
/// table, one line per interval. On a terminal, unless `verbose`, the table's header and
/// latest row are drawn in place under the bar and cleared with it, so that the end of the
/// run is one screen; through a pipe (or `verbose`) every row is printed.
pub struct TerminalParts {
    json: bool,
    quiet: bool,
    wide: bool,
    verbose: bool,
    stdout: OpenStdout,
    part: Option<(Live, LiveTable)>,
}

impl TerminalParts {
    /// `json`: stdout carries a document, so the lines go to stderr; `wide`: every column;
    /// `verbose`: every row kept on a terminal too.
    pub fn new(
        json: bool,
        quiet: bool,
        wide: bool,
        verbose: bool,
        stdout: OpenStdout,
    ) -> TerminalParts {
        TerminalParts {
            json,
            quiet,
            wide,
            verbose,
            stdout,
            part: None,
        }
    }
}

impl Observer for TerminalParts {
    fn begin(&mut self, part: &PartStart) {
        let columns = match part.kind {
            LoadKind::Udp => UDP_COLUMNS,
            LoadKind::Tcp => TCP_COLUMNS,
            LoadKind::TcpDown => TCP_DOWN_COLUMNS,
            LoadKind::TcpBoth => TCP_BOTH_COLUMNS,
            LoadKind::Rrul => RRUL_COLUMNS,
            LoadKind::Rr => RR_COLUMNS,
        };
        let mut live = Live::new(&part.title, part.length, self.json, self.quiet, self.stdout);
        if !self.verbose {
            live.rows_in_place();
        }
        let table = LiveTable::new(Vec::new(), columns, self.wide, terminal_width(self.json));
        self.part = Some((live, table));
    }

    fn progress(&mut self, elapsed_s: f64, row: &Row, load: &LoadFigures) {
        if let Some((live, table)) = &mut self.part {
            let lines = table.lines(row, load);
            match (live.in_place, table.header(), lines.last()) {
                (true, Some(header), Some(last)) => live.show(&format!("{header}\n{last}")),
                _ => {
                    for line in lines {
                        live.line(&line);
                    }
                }
            }
            live.set_elapsed(elapsed_s);
        }
    }

    fn end(&mut self) {
        if let Some((live, _)) = self.part.take() {
            live.finish();
        }
    }
}

/// One trial's title, lines and progress bar.
pub struct Live {
    bar: Option<ProgressBar>,
    /// The rows are drawn in place under the bar, not printed above it.
    in_place: bool,
    to_stderr: bool,
    quiet: bool,
    stdout: OpenStdout,
}

impl Live {
    /// `length` is the planned run length; `to_stderr` when stdout carries JSON.
    pub fn new(
        title: &str,
        length: Duration,
        to_stderr: bool,
        quiet: bool,
        stdout: OpenStdout,
    ) -> Live {
        let tty = if to_stderr {
            std::io::stderr().is_terminal()
        } else {
            std::io::stdout().is_terminal()
        };
        let bar = (tty && !quiet).then(|| {
            let target = if to_stderr {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::stdout()
            };
            let bar = ProgressBar::with_draw_target(Some(length.as_millis() as u64), target);
            bar.set_style(
                ProgressStyle::with_template("{prefix} [{bar:30}] {elapsed}/{duration}")
                    .expect("static template")
                    .progress_chars("=> "),
            );
            bar.set_prefix(title.to_string());
            bar
        });
        let live = Live {
            bar,
            in_place: false,
            to_stderr,
            quiet,
            stdout,
        };
        if live.bar.is_none() && !quiet {
            live.line(&format!("{title}: {:.1} s", length.as_secs_f64()));
        }
        live
    }

    /// With a bar (a terminal), draws the rows in place under it from now on; without one
    /// (a pipe), every row is still printed.
    pub fn rows_in_place(&mut self) {
        if let Some(bar) = &self.bar {
            bar.set_style(
                ProgressStyle::with_template("{prefix} [{bar:30}] {elapsed}/{duration}\n{msg}")
                    .expect("static template")
                    .progress_chars("=> "),
            );
            self.in_place = true;
        }
    }

    /// Replaces what is drawn under the bar (nothing without one).
    pub fn show(&self, text: &str) {
        if let (Some(bar), false) = (&self.bar, self.quiet) {
            bar.set_message(text.to_string());
        }
    }

    /// Prints one line above the bar (or plainly).
    pub fn line(&self, text: &str) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(bar) => bar.println(text),
            None if self.to_stderr => eprintln!("{text}"),
            None => {
                let mut out = (self.stdout)();
                // A closed pipe ends output, not the run: the summary write reports it.
                let _ = writeln!(out, "{text}");
            }
        }
    }

    pub fn set_elapsed(&self, elapsed_s: f64) {
        if let Some(bar) = &self.bar {
            bar.set_position((elapsed_s * 1000.0) as u64);
        }
    }
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Observer for Steps {
    fn step(&mut self, line: &str) {
        Steps::step(self, line);
    }

    fn say(&mut self, line: &str) {
        Steps::say(self, line);
    }

    fn remaining(&mut self, at_most_s: f64) {
        if let Some(bar) = &self.bar {
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix} [{bar:30}] {pos} of at most {len}, {elapsed} so far, {msg}",
                )
                .expect("static template")
                .progress_chars("=> "),
            );
            bar.set_message(left(at_most_s));
        }
    }

    fn close(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// The time left as the bar says it: an upper bound, from the planner's worst case.
fn left(at_most_s: f64) -> String {
    format!(
        "at most {} left",
        indicatif::HumanDuration(std::time::Duration::from_secs_f64(
            at_most_s.max(0.0).ceil()
        ))
    )
}

/// Progress over a bounded number of steps (a search's trials, a sweep's cells): a bar with the
/// count and the time left on a terminal, plain lines on stderr otherwise. The total is an
/// upper bound (a search stops when it converges). The time left is the planner's worst case
/// when it gives one ([`Observer::remaining`]), an upper bound; else an estimate from the
/// pace so far, and the bar says "about".
pub struct Steps {
    bar: Option<ProgressBar>,
    quiet: bool,
}

impl Steps {
    pub fn new(what: &str, at_most: u64, quiet: bool) -> Steps {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(at_most), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix} [{bar:30}] {pos} of at most {len}, {elapsed} so far, about {eta} left",
                )
                .expect("static template")
                .progress_chars("=> "),
            );
            bar.set_prefix(what.to_string());
            bar
        });
        Steps { bar, quiet }
    }

    /// One step done, with its line.
    pub fn step(&self, line: &str) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(bar) => {
                bar.println(line);
                bar.inc(1);
            }
            None => eprintln!("{line}"),
        }
    }

    /// A line that is not a step.
    pub fn say(&self, line: &str) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }
}
