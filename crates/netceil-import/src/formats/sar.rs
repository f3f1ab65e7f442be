//! sysstat's `sar` text reports, and the machinery `mpstat` and `sadf -d` share with it.
//!
//! A sar report is a banner (`Linux 6.1.0 (host) 11/21/2026 _x86_64_ (2 CPU)`) and sections,
//! each a header line (a time, then column names) and data lines (a time, then values). Any
//! activity is read by its header, so `sar -A` files with many sections work, and columns no
//! mapping knows are kept as `sar_<name>` metrics (`kbmemfree` → `sar_memfree_bytes`).
//!
//! - Times are 24-hour (`23:58:48`) or 12-hour (`11:58:48 PM`); a time earlier than the one
//!   before it in the same section is the next day (midnight rollover).
//! - A header line's time is the start of the first interval; data times are interval ends.
//! - `Average:` and `Summary:` lines are skipped: the series keeps the samples.
//! - Key columns become labels: `CPU` → `cpu` (`all` is the unlabeled total), `IFACE` →
//!   `iface`, `INTR` → `irq`, `DEV` → `device`.
//! - sar's times are local and carry no zone, so the run's start time is left unset and the
//!   local start is written in a note.
//! - What cannot be true is marked in `run.meta.implausible` (see `formats/plausible.rs`): a CPU,
//!   interface or interrupt listed twice at one time of one section, more CPU rows or a higher
//!   CPU number than the banner's `(N CPU)`, CPU shares that do not add up to about 100 (90–110)
//!   or one above 100, a time earlier than the one before that midnight does not explain (a gap
//!   over 12 hours; a banner naming a new date starts a new day), and banners of two hosts.
//! - A CPU printed with every share 0.00, idle included, is offline: its values are left
//!   missing for that row (not 100 % busy), with a warning.

use std::collections::HashMap;

use netceil_model::{names, MetricId, Unit};

use super::builder::SeriesBuilder;
use super::common::{
    error, file, given_interval, median_step, new_run, numbered_lines, parse_clock, parse_number,
    sanitize_metric_name, scan_cells, shorten, Cell,
};
use super::feed::Feed;
use super::plausible::{
    check_header_cpus, check_shares, clock, is_offline, time_backwards, Check, Checks, Declared,
    KeyBlocks, MAX_ROLLOVER_GAP_S, SYSSTAT_SHARES,
};
use crate::{ImportError, ImportOptions, Imported, LogLines};

/// The format's name.
pub const NAME: &str = "sar";

/// Why the text is not a sar text report.
pub fn sniff(text: &str) -> Result<(), String> {
    match first_section_header(text) {
        Some(_) => Ok(()),
        None => Err(not_this("sar", text)),
    }
}

pub(crate) fn not_this(tool: &str, text: &str) -> String {
    let (n, found) = numbered_lines(text)
        .find(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| (n, shorten(l, 50)))
        .unwrap_or((1, String::new()));
    format!(
        "not a {tool} report: line {n} '{found}', expected a banner like 'Linux 6.1.0 (host) 11/21/2026 _x86_64_ (2 CPU)' and a header like '12:00:01 AM  CPU  %user …'"
    )
}

/// The column names of the first section header within the first lines, if the text has a
/// sysstat banner or starts with a timed header.
pub(crate) fn first_section_header(text: &str) -> Option<Vec<String>> {
    let mut banner = false;
    for (seen, (_, line)) in numbered_lines(text)
        .filter(|(_, l)| !l.trim().is_empty())
        .enumerate()
    {
        if seen > 12 {
            return None;
        }
        let t = line.trim();
        if is_banner(t) {
            banner = true;
            continue;
        }
        if let Some((_, rest)) = split_clock(t) {
            let toks: Vec<&str> = rest.split_ascii_whitespace().collect();
            if !toks.is_empty()
                && toks.iter().all(|x| parse_value(x).is_none())
                && !rest.contains("RESTART")
            {
                return Some(toks.iter().map(|s| (*s).to_string()).collect());
            }
            return None;
        }
        if !banner && seen > 3 {
            return None;
        }
    }
    None
}

/// `Linux 6.1.0 (host) 11/21/2026 _x86_64_ (2 CPU)`.
pub(crate) fn is_banner(t: &str) -> bool {
    t.ends_with("CPU)")
        && t.split_ascii_whitespace()
            .next()
            .is_some_and(|w| w.chars().all(|c| c.is_ascii_alphabetic()))
}

/// Host facts from the banner.
pub(crate) fn apply_banner(t: &str, host: &mut netceil_model::HostInfo) -> Option<String> {
    let toks: Vec<&str> = t.split_ascii_whitespace().collect();
    host.os = toks.first().map(|s| (*s).to_string());
    host.kernel = toks.get(1).map(|s| (*s).to_string());
    host.hostname = toks
        .iter()
        .find(|w| w.starts_with('(') && w.ends_with(')') && w.len() > 2)
        .map(|w| w[1..w.len() - 1].to_string());
    if let Some(i) = toks.iter().position(|w| *w == "CPU)") {
        host.cpus = toks
            .get(i.wrapping_sub(1))
            .and_then(|w| w.trim_start_matches('(').parse().ok());
    }
    toks.iter()
        .skip(2)
        .find(|w| {
            w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains(['/', '-', '.'])
        })
        .map(|s| (*s).to_string())
}

/// A number as sysstat prints it: `17.62`, or `17,62` where the locale's decimal mark is a
/// comma (sysstat never prints thousands separators).
pub(crate) fn parse_value(s: &str) -> Option<f64> {
    parse_number(s).or_else(|| {
        let (int, frac) = s.split_once(',')?;
        if frac.contains(',') || frac.contains('.') || frac.is_empty() {
            return None;
        }
        parse_number(&format!("{int}.{frac}"))
    })
}

/// A value as `sar -h` (`--human`) prints it, in the unit its column is named for: a share
/// with its `%` sign (`0.0%`), or a size with a binary-prefix suffix (`22.2M`, `0.0B`, in
/// bytes, 1024 per step) under a column counted in kB or MB (`rxkB/s`, `kbmemfree`).
pub(crate) fn parse_human(s: &str, column: &str) -> Option<f64> {
    if let Some(v) = s.strip_suffix('%') {
        return parse_value(v);
    }
    let last = s.chars().last()?;
    let step = "BkMGTPE".find(
        last.to_ascii_uppercase()
            .to_string()
            .replace('K', "k")
            .as_str(),
    )?;
    let bytes = parse_value(&s[..s.len() - 1])? * 1024f64.powi(step as i32);
    let lower = column.to_ascii_lowercase();
    let per = if lower.contains("mb") {
        1024.0 * 1024.0
    } else if lower.contains("kb") {
        1024.0
    } else {
        1.0
    };
    Some(bytes / per)
}

/// A cell's value: a plain or locale number, else `sar -h`'s form ([`parse_human`]).
fn cell_value(cell: &Cell, column: &str) -> Option<f64> {
    cell.num
        .or_else(|| parse_value(cell.text))
        .or_else(|| parse_human(cell.text, column))
}

/// A leading `HH:MM:SS` (with `AM`/`PM` after it in 12-hour locales): seconds of the day and
/// the rest of the line.
pub(crate) fn split_clock(t: &str) -> Option<(f64, &str)> {
    let end = t.find(|c: char| c.is_ascii_whitespace()).unwrap_or(t.len());
    let clock = &t[..end];
    if clock.len() < 5 || !clock.as_bytes()[0].is_ascii_digit() || !clock.contains(':') {
        return None;
    }
    let mut secs = parse_clock(clock)?;
    let mut rest = t[end..].trim_start();
    let word_end = rest
        .find(|c: char| c.is_ascii_whitespace())
        .unwrap_or(rest.len());
    let word = &rest[..word_end];
    let pm = word.eq_ignore_ascii_case("PM");
    if pm || word.eq_ignore_ascii_case("AM") {
        if secs >= 12.0 * 3600.0 {
            secs -= 12.0 * 3600.0; // 12:xx AM is just after midnight, 12:xx PM just after noon
        }
        if pm {
            secs += 12.0 * 3600.0;
        }
        rest = rest[word_end..].trim_start();
    }
    Some((secs, rest))
}

/// What one value column measures.
#[derive(Debug, Clone)]
struct Target {
    name: String,
    unit: Unit,
    scale: f64,
    /// A label taken from the column name itself (`CPU3` → cpu=3, `24/s` → irq=24).
    label: Option<(&'static str, String)>,
}

/// Key columns: their header names and the label each becomes.
fn key_label(col: &str) -> Option<&'static str> {
    Some(match col {
        "CPU" => names::LABEL_CPU,
        "IFACE" => names::LABEL_IFACE,
        "INTR" => names::LABEL_IRQ,
        "DEV" | "DEVICE" => names::LABEL_DEVICE,
        "TTY" => "tty",
        "FILESYSTEM" => "filesystem",
        "MOUNTPOINT" => "mountpoint",
        "BUS" => "bus",
        "FAN" => "fan",
        "TEMP" => "temp",
        "IN" => "input",
        "BAT" => "battery",
        "CORE" => "core",
        "SOCK" => "socket",
        "NODE" => "node",
        _ => return None,
    })
}

/// The key columns whose values must not repeat inside one block (one time of one section),
/// and what a message calls them.
fn block_noun(col: &str) -> Option<&'static str> {
    Some(match col {
        "CPU" => "CPU",
        "IFACE" => "interface",
        "INTR" => "interrupt",
        _ => return None,
    })
}

/// The columns of a CPU row that are shares of the CPU's time and add up to 100.
const CPU_SHARES: [&str; 12] = [
    "%user", "%usr", "%nice", "%system", "%sys", "%iowait", "%steal", "%irq", "%soft", "%guest",
    "%gnice", "%idle",
];

/// Shares that old sysstat releases also counted inside `%user`/`%nice`.
const GUEST_SHARES: [&str; 2] = ["%guest", "%gnice"];

/// Column names whose values are free text in some sysstat versions (a mount point, a USB
/// product name): sections with them tolerate odd lines.
fn is_free_text_col(col: &str) -> bool {
    matches!(
        col,
        "FILESYSTEM" | "MOUNTPOINT" | "DEVICE" | "manufact" | "product"
    )
}

/// The metric a sysstat column maps to, given the other columns of its section.
fn map_column(col: &str, all: &[String], prefix: &str) -> Target {
    let has = |c: &str| all.iter().any(|x| x == c);
    let std = |name: &str, unit: Unit| Target {
        name: name.to_string(),
        unit,
        scale: 1.0,
        label: None,
    };
    match col {
        "%user" | "%usr" => std(names::CPU_USER_PCT, Unit::Percent),
        "%nice" => std(names::CPU_NICE_PCT, Unit::Percent),
        "%system" | "%sys" => std(names::CPU_SYSTEM_PCT, Unit::Percent),
        "%iowait" => std(names::CPU_IOWAIT_PCT, Unit::Percent),
        "%steal" => std(names::CPU_STEAL_PCT, Unit::Percent),
        "%idle" => std(names::CPU_IDLE_PCT, Unit::Percent),
        "%irq" => std(names::CPU_IRQ_PCT, Unit::Percent),
        "%soft" => std(names::CPU_SOFTIRQ_PCT, Unit::Percent),
        "cswch/s" => std(names::CS_PER_S, Unit::PerSecond),
        "proc/s" => std(names::FORKS_PER_S, Unit::PerSecond),
        "intr/s" | "all" | "CPU*" => std(names::INTR_PER_S, Unit::PerSecond),
        "total/s" if has("dropd/s") => std(names::SOFTNET_PROCESSED_PER_S, Unit::PerSecond),
        "dropd/s" => std(names::SOFTNET_DROPPED_PER_S, Unit::PerSecond),
        "squeezd/s" => std(names::SOFTNET_TIME_SQUEEZE_PER_S, Unit::PerSecond),
        "rx_rps/s" => std(names::SOFTNET_RECEIVED_RPS_PER_S, Unit::PerSecond),
        "flw_lim/s" => std(names::SOFTNET_FLOW_LIMIT_PER_S, Unit::PerSecond),
        "blg_len" => std(names::SOFTNET_BACKLOG_LEN, Unit::Count),
        "rxpck/s" => std(names::IFACE_RX_PPS, Unit::PacketsPerSecond),
        "txpck/s" => std(names::IFACE_TX_PPS, Unit::PacketsPerSecond),
        // sysstat's kB is 1024 bytes.
        "rxkB/s" => Target {
            scale: 8192.0,
            ..std(names::IFACE_RX_BITS_PER_S, Unit::BitsPerSecond)
        },
        "txkB/s" => Target {
            scale: 8192.0,
            ..std(names::IFACE_TX_BITS_PER_S, Unit::BitsPerSecond)
        },
        "rxbyt/s" => Target {
            scale: 8.0,
            ..std(names::IFACE_RX_BITS_PER_S, Unit::BitsPerSecond)
        },
        "txbyt/s" => Target {
            scale: 8.0,
            ..std(names::IFACE_TX_BITS_PER_S, Unit::BitsPerSecond)
        },
        "rxerr/s" => std(names::IFACE_RX_ERRORS_PER_S, Unit::PerSecond),
        "txerr/s" => std(names::IFACE_TX_ERRORS_PER_S, Unit::PerSecond),
        "rxdrop/s" => std(names::IFACE_RX_DROPPED_PER_S, Unit::PerSecond),
        "txdrop/s" => std(names::IFACE_TX_DROPPED_PER_S, Unit::PerSecond),
        "retrans/s" if has("atmptf/s") => std(names::TCP_RETRANS_SEGS_PER_S, Unit::PerSecond),
        "iseg/s" => std(names::TCP_IN_SEGS_PER_S, Unit::PerSecond),
        "oseg/s" => std(names::TCP_OUT_SEGS_PER_S, Unit::PerSecond),
        "idgm/s" => std(names::UDP_IN_DATAGRAMS_PER_S, Unit::PerSecond),
        "odgm/s" => std(names::UDP_OUT_DATAGRAMS_PER_S, Unit::PerSecond),
        "noport/s" => std(names::UDP_NO_PORTS_PER_S, Unit::PerSecond),
        "idgmerr/s" => std(names::UDP_IN_ERRORS_PER_S, Unit::PerSecond),
        "irec/s" => std(names::IP_IN_RECEIVES_PER_S, Unit::PerSecond),
        "idisc/s" => std(names::IP_IN_DISCARDS_PER_S, Unit::PerSecond),
        "blocked" if has("runq-sz") => std(names::PROCS_BLOCKED, Unit::Count),
        "%scpu" => std(names::PSI_CPU_SOME_PCT, Unit::Percent),
        "%sio" => std(names::PSI_IO_SOME_PCT, Unit::Percent),
        "%fio" => std(names::PSI_IO_FULL_PCT, Unit::Percent),
        "%smem" => std(names::PSI_MEMORY_SOME_PCT, Unit::Percent),
        "%fmem" => std(names::PSI_MEMORY_FULL_PCT, Unit::Percent),
        "NET_RX/s" => std(names::SOFTIRQ_NET_RX_PER_S, Unit::PerSecond),
        "NET_TX/s" => std(names::SOFTIRQ_NET_TX_PER_S, Unit::PerSecond),
        _ => generic(col, all, prefix),
    }
}

/// A column no mapping knows: `<prefix>_<name>` with the unit its name implies.
fn generic(col: &str, all: &[String], prefix: &str) -> Target {
    // Per-CPU columns of `sar -I` (`CPU3`) and per-IRQ columns of `mpstat -I CPU` (`24/s`).
    if let Some(n) = col
        .strip_prefix("CPU")
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    {
        return Target {
            name: names::INTR_PER_S.into(),
            unit: Unit::PerSecond,
            scale: 1.0,
            label: Some((names::LABEL_CPU, n.to_string())),
        };
    }
    if let Some(irq) = col.strip_suffix("/s") {
        let irq_section = all.iter().any(|c| {
            c.strip_suffix("/s")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        });
        if irq_section {
            return Target {
                name: format!("{prefix}_irq_per_s"),
                unit: Unit::PerSecond,
                scale: 1.0,
                label: Some((names::LABEL_IRQ, irq.to_string())),
            };
        }
        if all.iter().any(|c| c == "NET_RX/s") {
            return Target {
                name: format!("{prefix}_softirq_per_s"),
                unit: Unit::PerSecond,
                scale: 1.0,
                label: Some(("softirq", irq.to_string())),
            };
        }
    }
    // Block-device transfers: `tps`, `rtps` (reads), `wtps` (writes), `dtps` (discards).
    if let Some(kind) = col.strip_suffix("tps").filter(|k| k.len() <= 1) {
        let kind = match kind {
            "r" => "read_",
            "w" => "write_",
            "d" => "discard_",
            _ => "",
        };
        return Target {
            name: format!("{prefix}_{kind}transfers_per_s"),
            unit: Unit::PerSecond,
            scale: 1.0,
            label: None,
        };
    }
    let (stem, suffix, unit, scale) = if let Some(s) = col.strip_suffix("kB/s") {
        (s, "_bytes_per_s", Unit::BytesPerSecond, 1024.0)
    } else if let Some(s) = col.strip_prefix("kb") {
        (s, "_bytes", Unit::Bytes, 1024.0)
    } else if let Some(s) = col.strip_prefix("MB") {
        (s, "_bytes", Unit::Bytes, 1_048_576.0)
    } else if let Some(s) = col.strip_prefix('%') {
        (s, "_pct", Unit::Percent, 1.0)
    } else if let Some(s) = col.strip_suffix("/s") {
        (s, "_per_s", Unit::PerSecond, 1.0)
    } else {
        (col, "", Unit::Count, 1.0)
    };
    let stem = sanitize_metric_name(stem);
    let stem = stem.strip_prefix("col_").unwrap_or(&stem);
    Target {
        name: format!("{prefix}_{stem}{suffix}"),
        unit,
        scale,
        label: None,
    }
}

/// One kind of section (one header): where its keys and values are, and the metrics each
/// key combination resolved to.
struct Section {
    id: usize,
    prefix: &'static str,
    names: Vec<String>,
    keys: Vec<(usize, &'static str)>,
    values: Vec<(usize, Target)>,
    free_text: bool,
    intr: bool,
    resolved: HashMap<String, Vec<usize>>,
    last_elapsed: Option<f64>,
    /// The time of day and line of the section's last time, for messages.
    last_seen: (f64, usize),
    /// The key column whose values one block must not repeat, and what it is called.
    block_key: Option<(usize, &'static str)>,
    /// The CPU key column, and the share columns when this is a table of CPU shares.
    cpu_col: Option<usize>,
    shares: Vec<usize>,
}

/// Collects sysstat rows (from text or `sadf -d`) into one series: rows keyed by time, so
/// the sections of a `sar -A` report fill the same rows.
pub(crate) struct SysstatCollector {
    pub(crate) b: SeriesBuilder,
    prefix: &'static str,
    sections: Vec<Section>,
    by_header: HashMap<String, usize>,
    owners: HashMap<MetricId, usize>,
    pub(crate) notes: Vec<String>,
    /// What the rows say that cannot be true (see `formats/plausible.rs`).
    pub(crate) checks: Checks,
    blocks: KeyBlocks,
    /// The open block: its section and time (in ms); consecutive rows of one section's time
    /// are one block.
    block_at: Option<(usize, i64)>,
    /// The line of the last banner that named another date than the banner before it: times
    /// before it may be later in the day than those after (reports of several days).
    pub(crate) new_day_at: usize,
}

impl SysstatCollector {
    pub(crate) fn new(prefix: &'static str) -> Self {
        SysstatCollector {
            b: SeriesBuilder::new(),
            prefix,
            sections: Vec::new(),
            by_header: HashMap::new(),
            owners: HashMap::new(),
            notes: Vec::new(),
            checks: Checks::new(),
            blocks: KeyBlocks::new(),
            block_at: None,
            new_day_at: 0,
        }
    }

    /// Whether a header (the column names after the time) was seen before.
    pub(crate) fn knows(&self, cols: &[&str]) -> bool {
        self.by_header.contains_key(&cols.join(" "))
    }

    /// The section for a header (the column names after the time), created on first sight.
    pub(crate) fn section(&mut self, cols: &[&str]) -> usize {
        let key = cols.join(" ");
        if let Some(&s) = self.by_header.get(&key) {
            return s;
        }
        let names: Vec<String> = cols.iter().map(|s| (*s).to_string()).collect();
        let mut keys = Vec::new();
        let mut values = Vec::new();
        for (i, c) in cols.iter().enumerate() {
            match key_label(c) {
                Some(label) => keys.push((i, label)),
                None => values.push((i, map_column(c, &names, self.prefix))),
            }
        }
        if names.iter().any(|c| c == "%system") && !names.iter().any(|c| c == "%irq") {
            self.notes.push("sar -u: %system includes time in interrupt handlers (sar -u ALL splits out %irq and %soft)".into());
        }
        let block_key = cols
            .iter()
            .enumerate()
            .find_map(|(i, c)| Some((i, block_noun(c)?)));
        let cpu_col = cols.iter().position(|c| *c == "CPU");
        let shares = if cpu_col.is_some() && cols.contains(&"%idle") {
            (0..cols.len())
                .filter(|&i| CPU_SHARES.contains(&cols[i]))
                .collect()
        } else {
            Vec::new()
        };
        let id = self.sections.len();
        self.sections.push(Section {
            id,
            prefix: self.prefix,
            free_text: names.iter().any(|c| is_free_text_col(c)),
            intr: names.first().is_some_and(|c| c == "INTR"),
            names,
            keys,
            values,
            resolved: HashMap::new(),
            last_elapsed: None,
            last_seen: (0.0, 0),
            block_key,
            cpu_col,
            shares,
        });
        self.by_header.insert(key, id);
        id
    }

    pub(crate) fn columns(&self, section: usize) -> usize {
        self.sections.get(section).map_or(0, |s| s.names.len())
    }

    pub(crate) fn free_text(&self, section: usize) -> bool {
        self.sections.get(section).is_some_and(|s| s.free_text)
    }

    /// Seconds since `t0` for a time of day (on `line`) in a section, rolling over midnight:
    /// the first time not earlier than the section's last one. A rollover that leaves a gap
    /// longer than half a day is no midnight: the time ran backwards, and the checks say so.
    pub(crate) fn elapsed(&mut self, section: usize, tod: f64, t0: f64, line: usize) -> f64 {
        let Some(s) = self.sections.get_mut(section) else {
            return 0.0;
        };
        let floor = s.last_elapsed.unwrap_or(0.0);
        let mut e = tod - t0;
        let mut rolled = false;
        while e < floor - 1e-6 {
            e += 86_400.0;
            rolled = true;
        }
        let new_day = s.last_seen.1 < self.new_day_at;
        if rolled && s.last_elapsed.is_some() && e - floor > MAX_ROLLOVER_GAP_S && !new_day {
            let (before, before_line) = s.last_seen;
            time_backwards(
                &mut self.checks,
                line,
                &clock(tod),
                before_line,
                &clock(before),
                true,
            );
        }
        s.last_elapsed = Some(e);
        s.last_seen = (tod, line);
        e
    }

    /// Checks one data row (on `line`, ending `t_s` after the start) before it is put: its key
    /// in its block, and a row of CPU shares. Returns false for an offline CPU, whose values
    /// must stay missing.
    pub(crate) fn observe(
        &mut self,
        section: usize,
        t_s: f64,
        line: usize,
        fields: &[Cell],
    ) -> bool {
        let Some(sec) = self.sections.get(section) else {
            return true;
        };
        if let Some((col, noun)) = sec.block_key {
            let key = match fields.get(col).map_or("", |c| c.text) {
                "-1" => "all",
                k => k,
            };
            let at = (section, (t_s * 1000.0).round() as i64);
            if self.block_at != Some(at) {
                self.blocks.start(noun, line);
                self.block_at = Some(at);
            }
            self.blocks.row(key, line);
        }
        if sec.shares.is_empty() {
            return true;
        }
        // At most the 12 CPU_SHARES columns: kept on the stack, this runs for every row.
        let mut buf = [("", 0.0); CPU_SHARES.len()];
        let mut n = 0;
        for &i in sec.shares.iter().take(buf.len()) {
            let Some(v) = fields.get(i).and_then(|c| cell_value(c, &sec.names[i])) else {
                return true; // a value that is no number: put() names it
            };
            buf[n] = (sec.names[i].as_str(), v);
            n += 1;
        }
        let shares = &buf[..n];
        let cpu = sec
            .cpu_col
            .and_then(|c| fields.get(c))
            .map_or("all", |c| c.text);
        if cpu.parse::<u32>().is_ok() && is_offline(shares) {
            self.checks.offline(cpu, line);
            return false;
        }
        let who = || match cpu {
            "all" | "-1" => "all CPUs".to_string(),
            n => format!("CPU {n}"),
        };
        check_shares(
            &mut self.checks,
            line,
            &who,
            shares,
            &GUEST_SHARES,
            SYSSTAT_SHARES,
        );
        true
    }

    /// Checks the keyed blocks once every row is read; `declared` is the machine's CPU count as
    /// the file states it.
    pub(crate) fn check_blocks(&mut self, declared: Option<&Declared>) {
        std::mem::take(&mut self.blocks).check(declared, &mut self.checks);
    }

    /// The row ending `t_s` seconds after the start, created on first sight (once a long
    /// report is coarsened, the kept row that covers it: see `formats/builder.rs`).
    pub(crate) fn row(&mut self, t_s: f64) -> usize {
        self.b.row_at(t_s)
    }

    /// Writes one data line's fields (after the time) into a row. If a value is not a number,
    /// returns the 1-based field at fault, what was expected there and what was found.
    pub(crate) fn put(
        &mut self,
        section: usize,
        row: usize,
        fields: &[Cell],
    ) -> Result<(), (usize, String, String)> {
        let Some(sec) = self.sections.get_mut(section) else {
            return Ok(());
        };
        let mut key = String::new();
        for &(i, _) in &sec.keys {
            key.push_str(fields.get(i).map_or("", |c| c.text));
            key.push('\u{1f}');
        }
        let metrics = match sec.resolved.get(&key) {
            Some(m) => m.clone(),
            None => {
                let resolved = resolve(sec, fields, &mut self.b, &mut self.owners);
                sec.resolved.insert(key, resolved.clone());
                resolved
            }
        };
        for (&(i, ref target), &m) in sec.values.iter().zip(metrics.iter()) {
            let Some(cell) = fields.get(i) else { continue };
            match cell_value(cell, &sec.names[i]) {
                Some(v) => self.b.set(m, row, v * target.scale),
                None if sec.free_text => {}
                None => {
                    return Err((
                        i + 1,
                        format!("a number under '{}'", sec.names[i]),
                        cell.text.to_string(),
                    ))
                }
            }
        }
        Ok(())
    }

    /// The finished series with the interval from the row times (else `fallback`), the notes
    /// and the checks' findings.
    pub(crate) fn finish(self, fallback: f64) -> (netceil_model::Series, Vec<String>, Checks) {
        let interval = match self.b.coarse_step() {
            Some(step) => step,
            None => {
                let mut times: Vec<f64> = (0..self.b.rows())
                    .filter_map(|r| self.b.row_time(r))
                    .collect();
                times.sort_by(f64::total_cmp);
                // One row: its end is one interval after the header's time.
                median_step(&times)
                    .or(times.first().copied().filter(|t| *t > 0.0))
                    .unwrap_or(fallback)
            }
        };
        let mut notes = self.notes;
        notes.extend(self.b.coarse_note(interval));
        (self.b.finish(interval), notes, self.checks)
    }
}

/// The metric of each value column for one combination of key values.
fn resolve(
    sec: &Section,
    fields: &[Cell],
    b: &mut SeriesBuilder,
    owners: &mut HashMap<MetricId, usize>,
) -> Vec<usize> {
    let mut labels: Vec<(&'static str, String)> = Vec::new();
    let mut intr_row: Option<String> = None;
    for &(i, label) in &sec.keys {
        let v = fields.get(i).map_or("", |c| c.text);
        if sec.intr && label == names::LABEL_IRQ {
            intr_row = Some(v.to_string());
            continue;
        }
        // `all` (text) and `-1` (sadf) are the machine-wide figure: no label.
        if label == names::LABEL_CPU && (v == "all" || v == "-1") {
            continue;
        }
        labels.push((label, v.to_string()));
    }
    sec.values
        .iter()
        .map(|(_, t)| {
            let mut name = t.name.clone();
            let mut id_labels = labels.clone();
            // `sar -I` rows other than `sum` are single interrupts: `sar_irq_per_s{irq=…}`.
            if let Some(irq) = &intr_row {
                if irq != "sum" {
                    name = format!("{}_irq_per_s", sec.prefix);
                    id_labels.push((names::LABEL_IRQ, irq.clone()));
                }
            }
            if let Some((k, v)) = &t.label {
                id_labels.push((k, v.clone()));
            }
            let mut id = MetricId::new(name.clone());
            for (k, v) in &id_labels {
                id = id.with(*k, v.clone());
            }
            // Two sections with a same-named column (NFS and TCP both have retrans/s) must
            // not write into one metric: the later one gets its section's first column added.
            if owners.get(&id).is_some_and(|&o| o != sec.id) {
                let first = sec
                    .names
                    .iter()
                    .find(|n| key_label(n).is_none())
                    .map_or("x".into(), |n| sanitize_metric_name(n));
                id.name = format!("{name}_{first}");
            }
            owners.entry(id.clone()).or_insert(sec.id);
            b.metric(id, t.unit)
        })
        .collect()
}

/// What a banner on `line` says of the machine, checked against the banners before it: the
/// largest CPU count any states (the count rows are checked against), and a host name other
/// than the first banner's (two machines' captures in one file).
fn banner_checks(
    host: &netceil_model::HostInfo,
    line: usize,
    declared: &mut Option<Declared>,
    first_host: &mut Option<(Option<String>, usize)>,
    checks: &mut Checks,
) {
    if let Some(cpus) = host.cpus.filter(|c| *c > 0) {
        if declared.as_ref().is_none_or(|d| d.cpus < cpus) {
            *declared = Some(Declared {
                cpus,
                line: Some(line),
                what: "the banner",
            });
        }
    }
    match first_host {
        None => *first_host = Some((host.hostname.clone(), line)),
        Some((Some(first), first_line)) => {
            if let Some(h) = host.hostname.as_ref().filter(|h| *h != first) {
                checks.mark(
                    Check::Machine,
                    Some(line),
                    format!(
                        "the banner at line {line} names host {h}, the one at line {first_line} host {first}: two machines' captures in one file, read as one machine"
                    ),
                );
            }
        }
        Some((None, _)) => {}
    }
}

/// Imports a sar text report.
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    import_text(text, opts, NAME, "sar")
}

/// The sar/mpstat text reader (mpstat prints the same layout).
pub(crate) fn import_text(
    text: &str,
    opts: &ImportOptions,
    format: &str,
    prefix: &'static str,
) -> Result<Imported, ImportError> {
    import_feed(&mut Feed::text(text), opts, format, prefix)
}

/// Imports a sar report read line by line (after [`crate::formats::terminal_text`]'s
/// cleaning, line by line), holding two lines of it at a time: the same Run as [`import`] on
/// the whole text.
pub fn import_lines(
    lines: &mut LogLines<impl std::io::Read>,
    opts: &ImportOptions,
) -> Result<Imported, ImportError> {
    import_feed(&mut Feed::stream(lines), opts, NAME, "sar")
}

/// The lines of a report, each read once it is known whether another non-blank line follows
/// (a bad last line is a write cut short, a warning; anywhere else it is an error).
pub(crate) fn import_feed<R: std::io::Read>(
    feed: &mut Feed<'_, R>,
    opts: &ImportOptions,
    format: &str,
    prefix: &'static str,
) -> Result<Imported, ImportError> {
    let mut run = new_run(format, "", opts);
    let mut r = SarReader::new(opts, prefix);
    let mut held = None;
    while let Some((n, line)) = feed.next_line()? {
        if n == 1 {
            r.first_line = line.to_string();
        }
        if line.trim().is_empty() {
            continue;
        }
        if let Some((before, text)) = held.replace((n, line)) {
            r.line(before, &text, &mut run.meta.host)?;
        }
    }
    if let Some((last, text)) = held {
        r.last_line = last;
        r.line(last, &text, &mut run.meta.host)?;
    }
    run.run_id = feed.run_id()?;
    r.finish(run)
}

/// What reading a sar/mpstat report has gathered so far.
struct SarReader<'o> {
    opts: &'o ImportOptions,
    /// The last non-blank line, once it is the one being read (0 before).
    last_line: usize,
    /// The report's first line, for the error of a report without a section header.
    first_line: String,
    c: SysstatCollector,
    warnings: Vec<String>,
    /// The section the last header opened.
    section: Option<usize>,
    /// The first header's time of day.
    t0: Option<f64>,
    /// The first banner's date, and the last one's.
    banner_date: Option<String>,
    last_banner_date: Option<String>,
    skipped_summary: usize,
    skipped_other: usize,
    /// The last header's time, as elapsed seconds.
    header_elapsed: f64,
    since_boot_warned: bool,
    /// The machine as the banners say: its CPU count, and the first banner's host and line.
    declared: Option<Declared>,
    first_host: Option<(Option<String>, usize)>,
}

impl<'o> SarReader<'o> {
    fn new(opts: &'o ImportOptions, prefix: &'static str) -> Self {
        SarReader {
            opts,
            last_line: 0,
            first_line: String::new(),
            c: SysstatCollector::new(prefix),
            warnings: Vec::new(),
            section: None,
            t0: None,
            banner_date: None,
            last_banner_date: None,
            skipped_summary: 0,
            skipped_other: 0,
            header_elapsed: 0.0,
            since_boot_warned: false,
            declared: None,
            first_host: None,
        }
    }

    /// One non-blank line (numbered `n`) of the report.
    fn line(
        &mut self,
        n: usize,
        line: &str,
        host: &mut netceil_model::HostInfo,
    ) -> Result<(), ImportError> {
        let opts = self.opts;
        let t = line.trim();
        if t.starts_with("Average:") || t.starts_with("Summary:") {
            self.skipped_summary += 1;
            return Ok(());
        }
        let Some((tod, rest)) = split_clock(t) else {
            self.line_without_time(n, t, host);
            return Ok(());
        };
        if rest.contains("RESTART") {
            self.c.notes.push(format!(
                "line {n}: the machine restarted here (sar: {})",
                shorten(rest, 40)
            ));
            return Ok(());
        }
        let mut fields: Vec<Cell> = Vec::with_capacity(32);
        scan_cells(rest, &mut fields);
        if fields.is_empty() {
            if n == self.last_line {
                self.warnings.push(format!(
                    "{}: line {n}: ignored a truncated last line (a time and nothing else)",
                    file(opts)
                ));
                return Ok(());
            }
            return Err(error(
                opts,
                n,
                Some(2),
                "column names or values after the time",
                t,
            ));
        }
        if fields.iter().all(|f| cell_value(f, "").is_none()) {
            self.section_header(n, tod, &fields);
            return Ok(());
        }
        self.data_line(n, t, tod, &fields)
    }

    /// A line that does not start with a time: a banner, else (inside a report) a truncated
    /// last line or a line skipped with a warning (the first three are named).
    fn line_without_time(&mut self, n: usize, t: &str, host: &mut netceil_model::HostInfo) {
        let file = file(self.opts);
        if is_banner(t) {
            let date = apply_banner(t, host);
            if date != self.last_banner_date {
                self.c.new_day_at = n;
                self.last_banner_date.clone_from(&date);
            }
            if self.banner_date.is_none() {
                self.banner_date = date;
            }
            banner_checks(
                host,
                n,
                &mut self.declared,
                &mut self.first_host,
                &mut self.c.checks,
            );
        } else if self.section.is_some() {
            if n == self.last_line {
                self.warnings.push(format!(
                    "{file}: line {n}: ignored a truncated last line '{}'",
                    shorten(t, 40)
                ));
            } else {
                self.skipped_other += 1;
                if self.skipped_other <= 3 {
                    self.warnings.push(format!(
                        "{file}: line {n}: skipped a line that is not part of a sar report: '{}'",
                        shorten(t, 40)
                    ));
                }
            }
        }
    }

    /// A section header (a time, then column names): opens its section.
    fn section_header(&mut self, n: usize, tod: f64, fields: &[Cell]) {
        let names: Vec<&str> = fields.iter().map(|f| f.text).collect();
        if !self.c.knows(&names) {
            // sar -I's per-CPU columns (`CPU0 CPU1 …`).
            let cpus: Vec<u32> = names
                .iter()
                .filter_map(|c| c.strip_prefix("CPU")?.parse().ok())
                .collect();
            check_header_cpus(&cpus, n, self.declared.as_ref(), &mut self.c.checks);
        }
        let s = self.c.section(&names);
        let start = *self.t0.get_or_insert(tod);
        self.header_elapsed = self.c.elapsed(s, tod, start, n);
        self.section = Some(s);
    }

    /// A data line (a time, then values) of the open section.
    fn data_line(
        &mut self,
        n: usize,
        t: &str,
        tod: f64,
        fields: &[Cell],
    ) -> Result<(), ImportError> {
        let (opts, file, c) = (self.opts, file(self.opts), &mut self.c);
        let Some(s) = self.section else {
            return Err(error(
                opts,
                n,
                None,
                "a section header such as '12:00:01 AM  CPU  %user …' before the data",
                t,
            ));
        };
        let want = c.columns(s);
        if fields.len() != want {
            let expected = format!("{want} columns after the time, as in the section header");
            if n == self.last_line {
                self.warnings.push(format!(
                    "{file}: line {n}: ignored a truncated last line (expected {expected})"
                ));
                return Ok(());
            }
            if c.free_text(s) {
                self.warnings
                    .push(format!("{file}: line {n}: skipped (expected {expected})"));
                return Ok(());
            }
            let time_fields = t.split_ascii_whitespace().count() - fields.len();
            return Err(error(
                opts,
                n,
                Some(fields.len().min(want) + time_fields + 1),
                expected,
                &format!("{} columns: {t}", fields.len()),
            ));
        }
        let start = self.t0.unwrap_or(tod);
        let e = c.elapsed(s, tod, start, n);
        // A report stamped with its header's own time covers no interval: it is averages
        // since boot (mpstat or sar run without an interval).
        if (e - self.header_elapsed).abs() < 0.5 {
            if !self.since_boot_warned {
                self.since_boot_warned = true;
                self.warnings.push(format!("{file}: line {n}: skipped a report stamped with its header's time: averages since boot, not an interval"));
            }
            return Ok(());
        }
        let row = c.row(e);
        if !c.observe(s, e, n, fields) {
            return Ok(()); // an offline CPU: its values stay missing
        }
        if let Err((col, expected, found)) = c.put(s, row, fields) {
            if n == self.last_line {
                self.warnings.push(format!(
                    "{file}: line {n}: ignored a truncated last line (expected {expected})"
                ));
                return Ok(());
            }
            let time_fields = t.split_ascii_whitespace().count() - fields.len();
            return Err(error(opts, n, Some(col + time_fields), expected, &found));
        }
        Ok(())
    }

    /// The run, once every line is read.
    fn finish(self, mut run: netceil_model::Run) -> Result<Imported, ImportError> {
        let SarReader {
            opts,
            first_line,
            mut c,
            mut warnings,
            t0,
            banner_date,
            skipped_summary,
            skipped_other,
            declared,
            ..
        } = self;
        let file = file(opts);
        if t0.is_none() {
            return Err(error(
                opts,
                1,
                None,
                "a section header such as '12:00:01 AM  CPU  %user …'",
                &first_line,
            ));
        }
        if skipped_other > 3 {
            warnings.push(format!(
                "{file}: {} more lines that are not part of a sar report were skipped",
                skipped_other - 3
            ));
        }
        if skipped_summary > 0 {
            c.notes.push(format!(
                "{skipped_summary} Average:/Summary: lines skipped; the series keeps the samples"
            ));
        }
        let clock = t0.map(|start| local_clock(banner_date.as_deref(), start));
        if let (Some(date), Some(start)) = (banner_date, t0) {
            let s = start as u32;
            c.notes.push(format!(
                "started {date} {:02}:{:02}:{:02} local time (sysstat prints local times without a zone, so the run's start time is left unset)",
                s / 3600,
                s % 3600 / 60,
                s % 60
            ));
        }
        c.check_blocks(declared.as_ref());
        let (series, notes, checks) = c.finish(given_interval(opts).unwrap_or(1.0));
        if series.is_empty() {
            warnings.push(format!("{file}: no data lines under the section headers"));
        }
        run.series = series;
        run.notes.extend(notes);
        checks.finish(&mut run, &mut warnings, &format!("{file}: "));
        run.notes.extend(warnings.iter().cloned());
        Ok(Imported {
            run,
            warnings,
            clock,
        })
    }
}

/// The days since the epoch of a date as sysstat's banner prints it in the locale's form:
/// `2026-11-18`, `11/18/2026` (or `18/11/2026` when the first number cannot be a month),
/// `18.11.2026`, or with a two-digit year (`11/18/26`).
pub(crate) fn banner_day(date: &str) -> Option<i64> {
    if let Some(d) = super::common::parse_iso_date(date) {
        return Some(d);
    }
    let parts: Vec<&str> = date.split(['/', '.', '-']).collect();
    let [a, b, y] = parts.as_slice() else {
        return None;
    };
    let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
    let mut y: i64 = y.parse().ok()?;
    if y < 100 {
        y += 2000;
    }
    let (m, d) = if date.contains('.') || a > 12 {
        (b, a)
    } else {
        (a, b)
    };
    ((1..=12).contains(&m) && (1..=31).contains(&d))
        .then(|| super::common::days_from_civil(y, m, d))
}

/// The clock of a report whose first header is at `start` seconds of the day the banner
/// names (local time: sysstat prints no zone).
pub(crate) fn local_clock(date: Option<&str>, start: f64) -> crate::Clock {
    match date.and_then(banner_day) {
        Some(day) => crate::Clock::Local {
            s: day as f64 * 86_400.0 + start,
            dated: true,
        },
        None => crate::Clock::Local {
            s: start,
            dated: false,
        },
    }
}
