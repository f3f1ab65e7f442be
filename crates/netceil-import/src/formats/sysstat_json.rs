//! sysstat's JSON: `mpstat -o JSON` and `sadf -j`.
//!
//! ```text
//! {"sysstat": {"hosts": [{"nodename": "vm", "sysname": "Linux", "release": "6.18.44",
//!   "number-of-cpus": 2, "statistics": [
//!     {"timestamp": {"date": "2026-11-27", "time": "00:57:49", "utc": 1, "interval": 1},
//!      "cpu-load": [{"cpu": "all", "usr": 81.68, …}, {"cpu": "0", …}],
//!      "process-and-context-switch": {"proc": 48.00, "cswch": 1239.00},
//!      "network": {"net-dev": [{"iface": "lo", "rxpck": 0.00, …}], "softnet": […]}, …}]}]}}
//! ```
//!
//! Each activity is given the column names sar's (or mpstat's) text report prints for it
//! (`usr` → `%usr`, `cswch` → `cswch/s`, `memfree` → `kbmemfree`, `ifutil-percent` →
//! `%ifutil`) and goes through the same collector as the text and `sadf -d` readers, so one
//! capture read as JSON or as text gives the same series. What is read: CPU shares per CPU,
//! per node and in all, context switches and forks, interrupts (sar's per-CPU table,
//! mpstat's sums, per-IRQ and softirq tables), memory and swap, huge pages, the run queue and
//! load, kernel tables, paging and swapping, block I/O, every network activity (devices and
//! their errors, sockets, IP, ICMP, TCP, UDP, IPv6, NFS, softnet) and pressure stall
//! information. Other activities (per-disk tables, file systems, serial lines, power
//! management…) are skipped with a note naming them: their text reports carry them.
//!
//! Times: `sadf -j` stamps each record with its date, time (UTC when `"utc": 1`) and interval;
//! `mpstat -o JSON` with a local time of day only, so its start time is left unset (as for
//! text reports) and its interval is the step between records. A document cut short is read
//! up to its last complete record, with a warning.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::common::{
    error, file, given_interval, new_run, numbered_lines, parse_iso_datetime, shorten, Cell,
};
use super::plausible::Declared;
use super::sar::{split_clock, SysstatCollector};
use crate::{ImportError, ImportOptions, Imported};

/// The format's name.
pub const NAME: &str = "sysstat-json";

/// Why the text is not sysstat's JSON.
pub fn sniff(text: &str) -> Result<(), String> {
    let t = text.trim_start();
    let head: String = t.chars().take(200).collect();
    if t.starts_with('{') && head.contains("\"sysstat\"") {
        Ok(())
    } else {
        Err(format!(
            "not sysstat JSON: it starts '{}', expected '{{\"sysstat\": {{\"hosts\": …' (mpstat -o JSON, sadf -j)",
            shorten(&head, 40)
        ))
    }
}

#[derive(Deserialize)]
struct Document {
    sysstat: Sysstat,
}

#[derive(Deserialize)]
struct Sysstat {
    hosts: Vec<Host>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Host {
    nodename: Option<String>,
    sysname: Option<String>,
    release: Option<String>,
    number_of_cpus: Option<u32>,
    #[serde(default)]
    statistics: Vec<Record>,
}

/// A record's time: `sadf -j`'s date, time, zone and interval, or mpstat's time of day.
#[derive(Deserialize)]
#[serde(untagged)]
enum Stamp {
    Dated {
        date: String,
        time: String,
        #[serde(default)]
        utc: u8,
        interval: Option<f64>,
    },
    Clock(String),
}

/// One `statistics` entry: its time, the activities read (named as `network.net-dev`), and
/// the names of those skipped.
struct Record {
    stamp: Option<Stamp>,
    blocks: Vec<(&'static Activity, Vec<Row>)>,
    skipped: Vec<String>,
}

/// One row of an activity: its fields in order, nested objects (`"io-reads": {…}`) flattened.
#[derive(Default)]
struct Row(Vec<(String, Field)>);

/// A field of a row: a number, a key's name (`"cpu": "all"`), or mpstat's per-CPU list of
/// named counters (`"intr": [{"name": "24", "value": 0.00}, …]`).
enum Field {
    Num(f64),
    Key(String),
    Named(Vec<NameValue>),
}

#[derive(Deserialize)]
struct NameValue {
    name: String,
    value: f64,
}

/// How an activity's JSON names become the column names of its text report.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Rule {
    /// `usr` → `%usr`.
    Share,
    /// `cswch` → `cswch/s`.
    Rate,
    /// As printed: `runq-sz`, `totsck`.
    Plain,
    /// `memfree` → `kbmemfree` (sizes in kB).
    Kb,
    /// Transfers as printed (`tps`, `rtps`), the rest per second (`bread` → `bread/s`).
    Io,
    /// `some_avg10` → `%scpu-10`, `full_avg` → `%fcpu` for the resource named.
    Psi(&'static str),
}

/// An activity netceil reads: its JSON path, its key field and the key's column, and its rule.
#[derive(Debug, PartialEq)]
struct Activity {
    path: &'static str,
    key: Option<(&'static str, &'static str)>,
    rule: Rule,
}

const fn act(
    path: &'static str,
    key: Option<(&'static str, &'static str)>,
    rule: Rule,
) -> Activity {
    Activity { path, key, rule }
}

const CPU: Option<(&str, &str)> = Some(("cpu", "CPU"));
const IFACE: Option<(&str, &str)> = Some(("iface", "IFACE"));

/// Every activity read, by its path in a record.
const ACTIVITIES: &[Activity] = &[
    act("cpu-load", CPU, Rule::Share),
    act("node-load", Some(("node", "NODE")), Rule::Share),
    act("process-and-context-switch", None, Rule::Rate),
    act("interrupts", Some(("intr", "INTR")), Rule::Plain),
    act("sum-interrupts", CPU, Rule::Rate),
    act("individual-interrupts", CPU, Rule::Rate),
    act("soft-interrupts", CPU, Rule::Rate),
    act("memory", None, Rule::Kb),
    act("hugepages", None, Rule::Kb),
    act("queue", None, Rule::Plain),
    act("kernel", None, Rule::Plain),
    act("paging", None, Rule::Rate),
    act("swap-pages", None, Rule::Rate),
    act("io", None, Rule::Io),
    act("network.net-dev", IFACE, Rule::Rate),
    act("network.net-edev", IFACE, Rule::Rate),
    act("network.net-sock", None, Rule::Plain),
    act("network.net-sock6", None, Rule::Plain),
    act("network.net-ip", None, Rule::Rate),
    act("network.net-eip", None, Rule::Rate),
    act("network.net-icmp", None, Rule::Rate),
    act("network.net-eicmp", None, Rule::Rate),
    act("network.net-tcp", None, Rule::Rate),
    act("network.net-etcp", None, Rule::Rate),
    act("network.net-udp", None, Rule::Rate),
    act("network.net-ip6", None, Rule::Rate),
    act("network.net-eip6", None, Rule::Rate),
    act("network.net-icmp6", None, Rule::Rate),
    act("network.net-eicmp6", None, Rule::Rate),
    act("network.net-udp6", None, Rule::Rate),
    act("network.net-nfs", None, Rule::Rate),
    act("network.net-nfsd", None, Rule::Rate),
    act("network.softnet", CPU, Rule::Rate),
    act("psi.psi-cpu", None, Rule::Psi("cpu")),
    act("psi.psi-io", None, Rule::Psi("io")),
    act("psi.psi-mem", None, Rule::Psi("mem")),
];

/// Activities that hold others (`network`, `psi`).
const GROUPS: &[&str] = &["network", "psi"];

/// Field names whose values name a row (a CPU, an interface, an interrupt) rather than
/// measure something.
const KEY_FIELDS: &[&str] = &["cpu", "node", "intr", "iface"];

fn activity(path: &str) -> Option<&'static Activity> {
    ACTIVITIES.iter().find(|a| a.path == path)
}

/// Fields of a row that count something but are not rates, in activities that are.
const NOT_RATES: &[&str] = &["blg_len"];

/// The text report's column for a JSON field of an activity.
fn column(a: &Activity, field: &str) -> String {
    if let Some((k, col)) = a.key {
        if k == field {
            return col.to_string();
        }
    }
    if let Some(stem) = field.strip_suffix("-percent") {
        return format!("%{stem}");
    }
    match a.rule {
        Rule::Share => format!("%{field}"),
        Rule::Rate if NOT_RATES.contains(&field) => field.to_string(),
        Rule::Rate => format!("{field}/s"),
        Rule::Plain => field.to_string(),
        Rule::Kb => match field {
            "inactive" => "kbinact".to_string(),
            f => format!("kb{f}"),
        },
        Rule::Io if field.ends_with("tps") => field.to_string(),
        Rule::Io => format!("{field}/s"),
        Rule::Psi(r) => {
            let (kind, window) = match field.split_once("_avg") {
                Some(("some", w)) => ('s', w),
                Some(("full", w)) => ('f', w),
                _ => return format!("%{field}"),
            };
            if window.is_empty() {
                format!("%{kind}{r}")
            } else {
                format!("%{kind}{r}-{window}")
            }
        }
    }
}

// ---- deserialization: typed, with serde's positions kept on every error ----

/// Reads a row, flattening nested objects (`"io-reads": {"rtps": …}`) into it.
#[derive(Default)]
struct RowVisitor;

/// A field of a row as read: a field, or a nested object.
enum Entry {
    Field(Field),
    Nested(Row),
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entry;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number, a name, an object of numbers or a list of named numbers")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Entry, E> {
                Ok(Entry::Field(Field::Num(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Entry, E> {
                Ok(Entry::Field(Field::Num(v as f64)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Entry, E> {
                Ok(Entry::Field(Field::Num(v as f64)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Entry, E> {
                Ok(Entry::Field(Field::Key(v.to_string())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Entry, A::Error> {
                let mut out = Vec::new();
                while let Some(nv) = seq.next_element::<NameValue>()? {
                    out.push(nv);
                }
                Ok(Entry::Field(Field::Named(out)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Entry, A::Error> {
                RowVisitor.visit_map(map).map(Entry::Nested)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Visitor<'de> for RowVisitor {
    type Value = Row;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of numbers")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Row, A::Error> {
        let mut row = Row::default();
        while let Some(name) = map.next_key::<String>()? {
            match map.next_value::<Entry>()? {
                Entry::Nested(inner) => row.0.extend(inner.0),
                Entry::Field(Field::Key(text)) if !KEY_FIELDS.contains(&name.as_str()) => {
                    return Err(de::Error::custom(format!(
                        "a number under '{name}', not the string \"{}\"",
                        shorten(&text, 20)
                    )));
                }
                Entry::Field(f) => row.0.push((name, f)),
            }
        }
        Ok(row)
    }
}

impl<'de> Deserialize<'de> for Row {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RowVisitor)
    }
}

/// An activity's value: one row (an object) or several (a list of objects).
struct Rows(Vec<Row>);

impl<'de> Deserialize<'de> for Rows {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Rows;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of numbers or a list of them")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Rows, A::Error> {
                RowVisitor.visit_map(map).map(|r| Rows(vec![r]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Rows, A::Error> {
                let mut rows = Vec::new();
                while let Some(r) = seq.next_element::<Row>()? {
                    rows.push(r);
                }
                Ok(Rows(rows))
            }
        }
        d.deserialize_any(V)
    }
}

/// The activities of a group (`network`, `psi`), in order: those read, and the paths of those
/// skipped.
struct Group {
    prefix: &'static str,
    blocks: Vec<(&'static Activity, Vec<Row>)>,
    skipped: Vec<String>,
}

impl<'de> de::DeserializeSeed<'de> for Group {
    type Value = Group;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Group, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Group {
    type Value = Group;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "the '{}' object of activities", self.prefix)
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Group, A::Error> {
        while let Some(name) = map.next_key::<String>()? {
            let path = format!("{}.{name}", self.prefix);
            match activity(&path) {
                Some(a) => {
                    let rows: Rows = map.next_value()?;
                    self.blocks.push((a, rows.0));
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                    self.skipped.push(path);
                }
            }
        }
        Ok(self)
    }
}

impl<'de> Deserialize<'de> for Record {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Record;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a record: an object with a \"timestamp\" and activities")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Record, A::Error> {
                let mut r = Record {
                    stamp: None,
                    blocks: Vec::new(),
                    skipped: Vec::new(),
                };
                while let Some(name) = map.next_key::<String>()? {
                    if name == "timestamp" {
                        r.stamp = Some(map.next_value()?);
                    } else if let Some(prefix) = GROUPS.iter().find(|g| **g == name) {
                        let g = map.next_value_seed(Group {
                            prefix,
                            blocks: Vec::new(),
                            skipped: Vec::new(),
                        })?;
                        r.blocks.extend(g.blocks);
                        r.skipped.extend(g.skipped);
                    } else if let Some(a) = activity(&name) {
                        let rows: Rows = map.next_value()?;
                        r.blocks.push((a, rows.0));
                    } else {
                        map.next_value::<IgnoredAny>()?;
                        r.skipped.push(name);
                    }
                }
                Ok(r)
            }
        }
        d.deserialize_map(V)
    }
}

// ---- import ----

/// A serde error as an import error: its line and column, what was expected, and the line.
fn json_error(e: &serde_json::Error, text: &str, opts: &ImportOptions) -> ImportError {
    let full = e.to_string();
    let msg = full
        .rfind(" at line ")
        .map_or(full.as_str(), |i| &full[..i])
        .to_string();
    let expected = match e.classify() {
        serde_json::error::Category::Eof => {
            "the rest of the JSON document: it ends early (was the file cut short?)".to_string()
        }
        serde_json::error::Category::Syntax => format!("valid JSON ({msg})"),
        _ => match msg.split_once(", expected ") {
            Some((what, want)) => format!("{want} ({what})"),
            None => msg,
        },
    };
    let found = numbered_lines(text)
        .find(|(n, _)| *n == e.line())
        .map_or(String::new(), |(_, l)| shorten(l, 60));
    error(opts, e.line(), Some(e.column()), expected, &found)
}

/// The document, or, when it is cut short, its complete records with a warning.
fn parse(
    text: &str,
    opts: &ImportOptions,
    warnings: &mut Vec<String>,
) -> Result<Document, ImportError> {
    match serde_json::from_str::<Document>(text) {
        Ok(doc) => Ok(doc),
        Err(e) if e.classify() == serde_json::error::Category::Eof => {
            let cut = json_error(&e, text, opts);
            let Some(mut doc) = super::iperf3::repair(text)
                .and_then(|closed| serde_json::from_str::<Document>(&closed).ok())
            else {
                return Err(cut);
            };
            // The last record may lack the activities after the cut: it is dropped.
            let mut kept = 0;
            for h in &mut doc.sysstat.hosts {
                h.statistics.pop();
                kept += h.statistics.len();
            }
            if kept == 0 {
                return Err(cut);
            }
            warnings.push(format!(
                "{}: the JSON ends early at line {}: read the {kept} complete records before the cut, the last one dropped",
                file(opts),
                e.line()
            ));
            Ok(doc)
        }
        Err(e) => Err(json_error(&e, text, opts)),
    }
}

/// A record's time: seconds (since the epoch for `sadf -j`, of the day for mpstat), whether it
/// is UTC, and the interval it states.
fn stamp_time(stamp: &Stamp) -> Option<(f64, bool, Option<f64>)> {
    match stamp {
        Stamp::Dated {
            date,
            time,
            utc,
            interval,
        } => {
            let (t, _) = parse_iso_datetime(&format!("{date} {time}"))?;
            Some((t, *utc == 1, interval.filter(|i| *i > 0.0)))
        }
        Stamp::Clock(c) => split_clock(c).map(|(t, _)| (t, false, None)),
    }
}

/// The line where each record starts, in order: where its messages point. sysstat prints a
/// record's opening brace on a line of its own under `"statistics"`, all at one indentation;
/// a text laid out otherwise gets the lines of its `"timestamp"` keys instead.
fn record_lines(text: &str, records: usize) -> Vec<usize> {
    let mut indent: Option<&str> = None;
    let mut in_stats = false;
    let mut braces = Vec::new();
    for (n, l) in numbered_lines(text) {
        if l.contains("\"statistics\"") {
            in_stats = true;
            continue;
        }
        if in_stats && l.trim() == "{" {
            let lead = &l[..l.len() - l.trim_start().len()];
            if *indent.get_or_insert(lead) == lead {
                braces.push(n);
            }
        }
    }
    if braces.len() == records {
        return braces;
    }
    numbered_lines(text)
        .filter(|(_, l)| l.contains("\"timestamp\""))
        .map(|(n, _)| n)
        .collect()
}

/// One row of an activity as the text report's columns and cells.
fn row_cells(a: &Activity, row: &Row, cols: &mut Vec<String>, texts: &mut Vec<String>) {
    cols.clear();
    texts.clear();
    // The key column first, as the text reports print it.
    if let Some((k, _)) = a.key {
        if let Some((name, f)) = row.0.iter().find(|(n, _)| n == k) {
            cols.push(column(a, name));
            texts.push(match f {
                Field::Key(s) => s.clone(),
                Field::Num(v) => v.to_string(),
                Field::Named(_) => String::new(),
            });
        }
    }
    for (name, f) in &row.0 {
        if a.key.is_some_and(|(k, _)| k == name) {
            continue;
        }
        match f {
            Field::Num(v) => {
                cols.push(column(a, name));
                texts.push(v.to_string());
            }
            Field::Key(s) => {
                cols.push(column(a, name));
                texts.push(s.clone());
            }
            Field::Named(list) => {
                for nv in list {
                    cols.push(format!("{}/s", nv.name));
                    texts.push(nv.value.to_string());
                }
            }
        }
    }
}

/// What the reader gathers across records.
struct Reader<'o> {
    opts: &'o ImportOptions,
    c: SysstatCollector,
    cols: Vec<String>,
    texts: Vec<String>,
}

impl Reader<'_> {
    /// Puts one record's activities into the row ending `t_s` (for mpstat, `tod` and
    /// `origin` are times of day, rolled over midnight per activity).
    fn record(&mut self, r: &Record, time: RecordTime, line: usize) -> Result<(), ImportError> {
        for (a, rows) in &r.blocks {
            for row in rows {
                row_cells(a, row, &mut self.cols, &mut self.texts);
                if self.cols.is_empty() {
                    continue;
                }
                let names: Vec<&str> = self.cols.iter().map(String::as_str).collect();
                let s = self.c.section(&names);
                let t = match time {
                    RecordTime::Elapsed(t) => t,
                    RecordTime::Clock { tod, origin } => self.c.elapsed(s, tod, origin, line),
                };
                let cells: Vec<Cell> = self
                    .texts
                    .iter()
                    .map(|t| Cell {
                        text: t.as_str(),
                        num: None,
                    })
                    .collect();
                let row_index = self.c.row(t);
                if !self.c.observe(s, t, line, &cells) {
                    continue; // an offline CPU: its values stay missing
                }
                if let Err((_, expected, found)) = self.c.put(s, row_index, &cells) {
                    return Err(error(
                        self.opts,
                        line,
                        None,
                        format!("{expected} in '{}'", a.path),
                        &found,
                    ));
                }
            }
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum RecordTime {
    Elapsed(f64),
    Clock { tod: f64, origin: f64 },
}

/// Imports `mpstat -o JSON` or `sadf -j` output.
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let mut run = new_run(NAME, text, opts);
    let mut warnings = Vec::new();
    let doc = parse(text, opts, &mut warnings)?;
    let total: usize = doc.sysstat.hosts.iter().map(|h| h.statistics.len()).sum();
    let lines = record_lines(text, total);
    let mut reader = Reader {
        opts,
        c: SysstatCollector::new("sar"),
        cols: Vec::new(),
        texts: Vec::new(),
    };
    let mut skipped: Vec<String> = Vec::new();
    let mut records = 0usize;
    let mut interval: Option<f64> = None;
    let mut zoned = true;
    let mut declared: Option<Declared> = None;
    for (h, host) in doc.sysstat.hosts.iter().enumerate() {
        if h == 0 {
            run.meta.host.hostname.clone_from(&host.nodename);
            run.meta.host.os.clone_from(&host.sysname);
            run.meta.host.kernel.clone_from(&host.release);
            run.meta.host.cpus = host.number_of_cpus;
            declared = host.number_of_cpus.map(|cpus| Declared {
                cpus,
                line: None,
                what: "number-of-cpus",
            });
        }
        let times: Vec<Option<(f64, bool, Option<f64>)>> = host
            .statistics
            .iter()
            .map(|r| r.stamp.as_ref().and_then(stamp_time))
            .collect();
        // The interval: as stated, else the step between the first two records.
        let step = times.iter().flatten().find_map(|(_, _, i)| *i).or_else(|| {
            let mut t = times.iter().flatten().map(|(t, _, _)| *t);
            let (a, b) = (t.next()?, t.next()?);
            Some((b - a).rem_euclid(86_400.0)).filter(|s| *s > 0.0)
        });
        let step = step.or(given_interval(opts)).unwrap_or(1.0);
        interval.get_or_insert(step);
        let origin = times.iter().flatten().next().map(|(t, _, _)| t - step);
        for (r, time) in host.statistics.iter().zip(&times) {
            let line = lines.get(records).copied().unwrap_or(1);
            records += 1;
            for s in &r.skipped {
                if !skipped.contains(s) {
                    skipped.push(s.clone());
                }
            }
            let (Some((t, utc, _)), Some(origin)) = (time, origin) else {
                return Err(error(
                    opts,
                    line,
                    None,
                    "a \"timestamp\": {\"date\": \"YYYY-MM-DD\", \"time\": \"HH:MM:SS\", …} or \"HH:MM:SS\"",
                    "a record without a readable time",
                ));
            };
            let dated = matches!(r.stamp, Some(Stamp::Dated { .. }));
            zoned &= *utc;
            let when = if dated {
                if h == 0 && records == 1 && *utc {
                    run.meta.started_unix_s = origin;
                }
                RecordTime::Elapsed(t - origin)
            } else {
                RecordTime::Clock { tod: *t, origin }
            };
            reader.record(r, when, line)?;
        }
    }
    if !zoned {
        reader.c.notes.push(
            "the records' times are local without a zone (mpstat, or sadf -j without UTC): the run's start time is left unset".into(),
        );
    }
    if !skipped.is_empty() {
        reader.c.notes.push(format!(
            "activities not read from the JSON (their text reports carry them): {}",
            skipped.join(", ")
        ));
    }
    if records == 0 {
        warnings.push(format!("{}: no records under \"statistics\"", file(opts)));
    }
    let mut c = reader.c;
    c.check_blocks(declared.as_ref());
    let (mut series, notes, checks) = c.finish(interval.unwrap_or(1.0));
    if let Some(i) = interval {
        series.interval_s = i;
    }
    run.series = series;
    run.notes.extend(notes);
    checks.finish(&mut run, &mut warnings, &format!("{}: ", file(opts)));
    run.notes.extend(warnings.iter().cloned());
    Ok(Imported {
        run,
        warnings,
        clock: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_names_become_text_columns() {
        let col = |path: &str, f: &str| column(activity(path).unwrap(), f);
        assert_eq!(col("cpu-load", "usr"), "%usr");
        assert_eq!(col("cpu-load", "cpu"), "CPU");
        assert_eq!(col("process-and-context-switch", "cswch"), "cswch/s");
        assert_eq!(col("memory", "memfree"), "kbmemfree");
        assert_eq!(col("memory", "inactive"), "kbinact");
        assert_eq!(col("memory", "memused-percent"), "%memused");
        assert_eq!(col("network.net-dev", "ifutil-percent"), "%ifutil");
        assert_eq!(col("network.net-dev", "rxkB"), "rxkB/s");
        assert_eq!(col("network.softnet", "blg_len"), "blg_len");
        assert_eq!(col("queue", "ldavg-1"), "ldavg-1");
        assert_eq!(col("io", "rtps"), "rtps");
        assert_eq!(col("io", "bread"), "bread/s");
        assert_eq!(col("psi.psi-cpu", "some_avg10"), "%scpu-10");
        assert_eq!(col("psi.psi-io", "full_avg"), "%fio");
        assert_eq!(col("psi.psi-mem", "some_avg300"), "%smem-300");
        assert_eq!(col("sum-interrupts", "intr"), "intr/s");
        assert_eq!(col("interrupts", "intr"), "INTR");
    }
}
