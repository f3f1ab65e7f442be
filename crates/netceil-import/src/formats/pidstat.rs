//! sysstat's `pidstat` text reports (`pidstat 1 3`, `-t` for threads, `-w` for context
//! switches, `-h` for one line per process).
//!
//! ```text
//! Linux 6.18.44 (vm)  11/27/26  _x86_64_  (2 CPU)
//!
//! 01:27:57      UID       PID    %usr %system  %guest   %wait    %CPU   CPU  Command
//! 01:27:58        0       325   11.32    3.77    0.00    1.89   15.09     1  rustc
//! ```
//!
//! pidstat prints sar's layout (banner, timed headers, `Average:` lines) but its rows are
//! keyed by a process (`PID`, or `TGID` and `TID` under `-t`) and end with the command, which
//! may hold spaces. Rows become the series netceil's own sampler writes, so the analyzer's
//! CPU-contention and thread rules read them as they read a live run:
//! - a process row: `%CPU` → `proc_cpu_pct{pid, comm, cpu}` (`cpu`: the CPU it last ran on,
//!   as the sampler labels it);
//! - a thread row (`-t`): `%CPU`, `%usr`, `%system`, `CPU`, `cswch/s`, `nvcswch/s` →
//!   `thread_cpu_pct`, `thread_user_pct`, `thread_system_pct`, `thread_last_cpu`,
//!   `thread_voluntary_cs_per_s`, `thread_nonvoluntary_cs_per_s` with `pid`, `tid`, `comm`;
//! - any other column: `pidstat_<name>` with the row's labels (`%wait` → `pidstat_wait_pct`).
//!
//! Times are local without a zone, as in sar: the start time is left unset. A report
//! stamped with its header's own time (pidstat without an interval) is averages since boot
//! and is skipped with a warning.

use std::collections::HashMap;

use netceil_model::{names, MetricId, Unit};

use super::builder::SeriesBuilder;
use super::common::{
    error, file, given_interval, last_nonblank_line, median_step, new_run, numbered_lines,
    sanitize_metric_name, shorten,
};
use super::sar::{apply_banner, is_banner, parse_value, split_clock};
use crate::{ImportError, ImportOptions, Imported};

/// The format's name.
pub const NAME: &str = "pidstat";

/// The column names of a header line (`01:27:57 UID PID … Command`, or `# Time UID PID …`).
fn header_columns(t: &str) -> Option<Vec<&str>> {
    let rest = match t.strip_prefix('#') {
        Some(r) => r.trim_start().strip_prefix("Time")?,
        None => split_clock(t)?.1,
    };
    let cols: Vec<&str> = rest.split_ascii_whitespace().collect();
    let keyed = cols.iter().any(|c| *c == "PID" || *c == "TGID");
    (keyed && cols.last() == Some(&"Command")).then_some(cols)
}

/// Why the text is not a pidstat report.
pub fn sniff(text: &str) -> Result<(), String> {
    let mut first = None;
    for (n, line) in numbered_lines(text)
        .filter(|(_, l)| !l.trim().is_empty())
        .take(6)
    {
        let t = line.trim();
        first.get_or_insert((n, t));
        if header_columns(t).is_some() {
            return Ok(());
        }
    }
    let (n, t) = first.unwrap_or((1, ""));
    Err(format!(
        "not a pidstat report: line {n} '{}', expected a header like '01:27:57  UID  PID  %usr … Command'",
        shorten(t, 50)
    ))
}

/// The first `n` whitespace-separated fields of `s`, and the rest (the command) trimmed.
fn split_fields(s: &str, n: usize) -> (Vec<&str>, &str) {
    let mut out = Vec::with_capacity(n);
    let mut rest = s.trim_start();
    while out.len() < n && !rest.is_empty() {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        out.push(&rest[..end]);
        rest = rest[end..].trim_start();
    }
    (out, rest.trim_end())
}

/// The metric a column of a thread row maps to, if netceil's sampler has one.
fn thread_metric(col: &str) -> Option<(&'static str, Unit)> {
    Some(match col {
        "%CPU" => (names::THREAD_CPU_PCT, Unit::Percent),
        "%usr" => (names::THREAD_USER_PCT, Unit::Percent),
        "%system" => (names::THREAD_SYSTEM_PCT, Unit::Percent),
        "CPU" => (names::THREAD_LAST_CPU, Unit::Count),
        "cswch/s" => (names::THREAD_VOLUNTARY_CS_PER_S, Unit::PerSecond),
        "nvcswch/s" => (names::THREAD_NONVOLUNTARY_CS_PER_S, Unit::PerSecond),
        _ => return None,
    })
}

/// `pidstat_<name>` and the unit its name implies.
fn generic(col: &str) -> (String, Unit) {
    let unit = if col.starts_with('%') {
        Unit::Percent
    } else if col.ends_with("/s") {
        Unit::PerSecond
    } else {
        Unit::Count
    };
    (format!("pidstat_{}", sanitize_metric_name(col)), unit)
}

/// One section: its columns (without `Command`) and where the keys are.
struct Section {
    cols: Vec<String>,
    pid: Option<usize>,
    tgid: Option<usize>,
    tid: Option<usize>,
    cpu: Option<usize>,
}

impl Section {
    fn new(cols: &[&str]) -> Section {
        let cols: Vec<String> = cols[..cols.len() - 1]
            .iter()
            .map(|c| (*c).to_string())
            .collect();
        let at = |name: &str| cols.iter().position(|c| c == name);
        Section {
            pid: at("PID"),
            tgid: at("TGID"),
            tid: at("TID"),
            cpu: at("CPU"),
            cols,
        }
    }
}

/// What reading a pidstat report gathers.
struct Reader<'o> {
    opts: &'o ImportOptions,
    b: SeriesBuilder,
    rows: HashMap<i64, usize>,
    section: Option<Section>,
    t0: Option<f64>,
    last: f64,
    header_elapsed: Option<f64>,
    /// The process of the thread rows that follow a `-t` process row.
    tgid: String,
    warnings: Vec<String>,
    since_boot_warned: bool,
    skipped_summary: usize,
}

impl Reader<'_> {
    /// Seconds since the first header for a time of day, rolled over midnight.
    fn elapsed(&mut self, tod: f64) -> f64 {
        let t0 = *self.t0.get_or_insert(tod);
        let mut e = tod - t0;
        while e < self.last - 1e-6 {
            e += 86_400.0;
        }
        self.last = e;
        e
    }

    fn header(&mut self, t: &str, cols: &[&str]) {
        // `-h` headers carry no time: the first row then ends one interval after the start.
        self.header_elapsed = split_clock(t).map(|(tod, _)| self.elapsed(tod));
        self.section = Some(Section::new(cols));
    }

    /// A data line: its values under its process's (or thread's) labels.
    fn data(&mut self, n: usize, t: &str, last_line: usize) -> Result<(), ImportError> {
        let Some((tod, rest)) = split_clock(t) else {
            return Ok(());
        };
        let Some(sec) = self.section.take() else {
            return Err(error(
                self.opts,
                n,
                None,
                "a header such as '01:27:57  UID  PID  %usr … Command' before the data",
                t,
            ));
        };
        let result = self.row(n, t, tod, rest, &sec, last_line);
        self.section = Some(sec);
        result
    }

    fn row(
        &mut self,
        n: usize,
        t: &str,
        tod: f64,
        rest: &str,
        sec: &Section,
        last_line: usize,
    ) -> Result<(), ImportError> {
        let (fields, command) = split_fields(rest, sec.cols.len());
        if fields.len() < sec.cols.len() || command.is_empty() {
            let expected = format!(
                "{} columns and the command after the time, as in the header",
                sec.cols.len()
            );
            if n == last_line {
                self.warnings.push(format!(
                    "{}: line {n}: ignored a truncated last line (expected {expected})",
                    file(self.opts)
                ));
                return Ok(());
            }
            return Err(error(self.opts, n, Some(fields.len() + 2), expected, t));
        }
        if self.t0.is_none() {
            self.t0 = Some(tod - given_interval(self.opts).unwrap_or(1.0));
        }
        let e = self.elapsed(tod);
        if self.header_elapsed.is_some_and(|h| (e - h).abs() < 0.5) {
            if !self.since_boot_warned {
                self.since_boot_warned = true;
                self.warnings.push(format!("{}: line {n}: skipped a report stamped with its header's time: averages since boot, not an interval", file(self.opts)));
            }
            return Ok(());
        }
        let key = |i: Option<usize>| i.map(|i| fields[i]).filter(|v| *v != "-");
        // A thread's command is `|__name` under its process's row, or `(process)__name`
        // when its process's row was not printed.
        let comm = match command.strip_prefix("|__") {
            Some(c) => c,
            None if command.starts_with('(') => {
                command.split_once(")__").map_or(command, |(_, c)| c)
            }
            None => command,
        };
        // A `-t` process row names the process of the thread rows after it.
        if let Some(tgid) = key(sec.tgid) {
            self.tgid = tgid.to_string();
        }
        let thread = key(sec.tid);
        let pid = key(sec.pid)
            .or(key(sec.tgid))
            .unwrap_or(&self.tgid)
            .to_string();
        let row = self.row_at(e);
        for (i, col) in sec.cols.iter().enumerate() {
            if matches!(col.as_str(), "UID" | "USER" | "PID" | "TGID" | "TID") {
                continue;
            }
            let Some(v) = parse_value(fields[i]) else {
                return Err(error(
                    self.opts,
                    n,
                    Some(i + 2),
                    format!("a number under '{col}'"),
                    fields[i],
                ));
            };
            let id = match thread {
                Some(tid) => {
                    let (name, unit) = thread_metric(col)
                        .map_or_else(|| generic(col), |(m, u)| (m.to_string(), u));
                    let id = MetricId::new(name)
                        .with(names::LABEL_PID, pid.clone())
                        .with(names::LABEL_TID, tid)
                        .with(names::LABEL_COMM, comm);
                    (id, unit)
                }
                None if col == "CPU" => continue, // the label of proc_cpu_pct
                None => {
                    let (name, unit) = if col == "%CPU" {
                        (names::PROC_CPU_PCT.to_string(), Unit::Percent)
                    } else {
                        generic(col)
                    };
                    let mut id = MetricId::new(name)
                        .with(names::LABEL_PID, pid.clone())
                        .with(names::LABEL_COMM, comm);
                    if let Some(cpu) = key(sec.cpu).filter(|_| col == "%CPU") {
                        id = id.with(names::LABEL_CPU, cpu);
                    }
                    (id, unit)
                }
            };
            let m = self.b.metric(id.0, id.1);
            self.b.set(m, row, v);
        }
        Ok(())
    }

    fn row_at(&mut self, t_s: f64) -> usize {
        let key = (t_s * 1000.0).round() as i64;
        if let Some(&r) = self.rows.get(&key) {
            return r;
        }
        let r = self.b.push_row(t_s);
        self.rows.insert(key, r);
        r
    }
}

/// Imports a pidstat report.
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let mut run = new_run(NAME, text, opts);
    let last_line = last_nonblank_line(text);
    let mut r = Reader {
        opts,
        b: SeriesBuilder::new(),
        rows: HashMap::new(),
        section: None,
        t0: None,
        last: 0.0,
        header_elapsed: None,
        tgid: String::new(),
        warnings: Vec::new(),
        since_boot_warned: false,
        skipped_summary: 0,
    };
    let mut date = None;
    for (n, line) in numbered_lines(text) {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if is_banner(t) {
            date = apply_banner(t, &mut run.meta.host).or(date);
            continue;
        }
        if t.starts_with("Average:") {
            r.skipped_summary += 1;
            continue;
        }
        if let Some(cols) = header_columns(t) {
            r.header(t, &cols);
            continue;
        }
        if split_clock(t).is_none() {
            r.warnings.push(format!(
                "{}: line {n}: skipped a line that is not part of a pidstat report: '{}'",
                file(opts),
                shorten(t, 40)
            ));
            continue;
        }
        r.data(n, t, last_line)?;
    }
    if r.section.is_none() {
        return Err(error(
            opts,
            1,
            None,
            "a header such as '01:27:57  UID  PID  %usr … Command'",
            text.lines().next().unwrap_or(""),
        ));
    }
    if r.skipped_summary > 0 {
        run.notes.push(format!(
            "{} Average: lines skipped; the series keeps the samples",
            r.skipped_summary
        ));
    }
    run.notes.push(
        "pidstat prints local times without a zone: the run's start time is left unset".into(),
    );
    let mut times: Vec<f64> = (0..r.b.rows()).filter_map(|i| r.b.row_time(i)).collect();
    times.sort_by(f64::total_cmp);
    let interval = median_step(&times)
        .or(times.first().copied().filter(|t| *t > 0.0))
        .or(given_interval(opts))
        .unwrap_or(1.0);
    run.series = r.b.finish(interval);
    if run.series.is_empty() {
        r.warnings
            .push(format!("{}: no data lines under the headers", file(opts)));
    }
    run.notes.extend(r.warnings.iter().cloned());
    Ok(Imported {
        run,
        warnings: r.warnings,
        clock: r.t0.map(|t0| super::sar::local_clock(date.as_deref(), t0)),
    })
}
