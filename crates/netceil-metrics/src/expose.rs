//! From netceil's series to exposed families: the one mapping of names, units, types and
//! labels, in node_exporter's conventions (see the crate's header for the table).
//!
//! - A rate netceil measured per interval (bit/s, packets/s, events/s) is exposed as the
//!   counter it integrates to: the value times the interval's measured length, summed since
//!   the endpoint started, so `rate()` and `increase()` work as on any exporter.
//! - CPU time is one family per scope with a `mode` label, in seconds
//!   (`netceil_cpu_seconds_total{cpu="0",mode="softirq"}`), like `node_cpu_seconds_total`.
//! - Interfaces are labelled `device`.
//! - A family never holds both a machine-wide value and the per-CPU (or per-anything) values
//!   it is made of, so `sum()` never counts twice (see [`Layout`]).
//! - Series per thread id or per TCP flow are left out unless asked for ([`Detail`]): a
//!   thread's counters are summed into its process and name, and per-flow values are left to
//!   the all-flows ones.

use netceil_model::{names, MetricId, Unit};

/// The prefix of every exposed name.
pub const PREFIX: &str = "netceil";

/// An OpenMetrics metric type, as far as netceil's series need one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Counter,
}

/// How a series' values become the exposed value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fold {
    /// The newest value: a gauge, or a total the series already counts up (a since-boot
    /// counter of a snapshot).
    Last,
    /// Each row's value times its measured length, added up (a rate made a counter).
    Integrate,
}

/// How one model metric is exposed.
#[derive(Debug, Clone, PartialEq)]
pub struct Exposed {
    /// The family name without the unit (the encoder appends `_<unit>`).
    pub stem: String,
    /// The OpenMetrics unit, the last part of the name; `None` for plain counts.
    pub unit: Option<&'static str>,
    pub kind: Kind,
    /// The model's value divided by this is the exposed value (100 for a percentage).
    pub divisor: f64,
    pub fold: Fold,
}

impl Exposed {
    /// The family's name, as `# TYPE` names it.
    pub fn family(&self) -> String {
        match self.unit {
            Some(u) => format!("{}_{u}", self.stem),
            None => self.stem.clone(),
        }
    }

    /// The name on sample lines: the family's, and `_total` for a counter.
    pub fn sample_name(&self) -> String {
        match self.kind {
            Kind::Gauge => self.family(),
            Kind::Counter => format!("{}_total", self.family()),
        }
    }
}

/// Which label keys make a series per thread or per flow: left out unless [`Detail::Fine`].
const FINE_LABELS: [&str; 2] = [names::LABEL_TID, "flow"];

/// How fine the exposed series are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detail {
    /// No label per thread id or per TCP flow: a process's threads are summed by name, and
    /// per-flow values are left to the all-flows ones. Thousands of flows or short-lived
    /// threads would otherwise make thousands of series.
    #[default]
    Coarse,
    /// Also a series per thread id and per flow.
    Fine,
}

/// Rates that are not a count of events per second but an estimate or a setting at a moment:
/// they stay gauges, in bytes per second.
const RATE_GAUGES: [&str; 2] = [
    names::TCP_DELIVERY_RATE_BITS_PER_S,
    names::QDISC_RATE_BITS_PER_S,
];

/// The CPU time shares, by the `mode` they are exposed with. `cpu_busy_pct` is left out: it
/// is the sum of the others but idle and iowait, and would count them twice.
const CPU_MODES: [(&str, &str); 8] = [
    (names::CPU_USER_PCT, "user"),
    (names::CPU_NICE_PCT, "nice"),
    (names::CPU_SYSTEM_PCT, "system"),
    (names::CPU_IRQ_PCT, "irq"),
    (names::CPU_SOFTIRQ_PCT, "softirq"),
    (names::CPU_IDLE_PCT, "idle"),
    (names::CPU_IOWAIT_PCT, "iowait"),
    (names::CPU_STEAL_PCT, "steal"),
];
/// A thread's CPU time, by mode; `thread_cpu_pct` is their sum and is left out.
const THREAD_MODES: [(&str, &str); 2] = [
    (names::THREAD_USER_PCT, "user"),
    (names::THREAD_SYSTEM_PCT, "system"),
];
/// Series that are the sum of others exposed beside them.
const DERIVED: [&str; 2] = [names::CPU_BUSY_PCT, names::THREAD_CPU_PCT];

/// Whose CPU time a share is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CpuScope {
    /// A CPU's (`cpu_*_pct`).
    Cpu,
    /// A thread's (`thread_*_pct`).
    Thread,
}

/// The scope and mode of a CPU time share, or `None` for any other series: the one lookup
/// of [`CPU_MODES`] and [`THREAD_MODES`].
fn cpu_mode(name: &str, unit: Unit) -> Option<(CpuScope, &'static str)> {
    if unit != Unit::Percent {
        return None;
    }
    let find =
        |modes: &[(&str, &'static str)]| modes.iter().find(|(n, _)| *n == name).map(|(_, m)| *m);
    find(&CPU_MODES)
        .map(|m| (CpuScope::Cpu, m))
        .or_else(|| find(&THREAD_MODES).map(|m| (CpuScope::Thread, m)))
}

fn seconds_counter(stem: &str) -> Exposed {
    Exposed {
        stem: format!("{PREFIX}_{stem}"),
        unit: Some("seconds"),
        kind: Kind::Counter,
        divisor: 100.0,
        fold: Fold::Integrate,
    }
}

/// The exposed name, unit, type and divisor of the model metric `name` in `unit`: the one
/// mapping from netceil's names to OpenMetrics ones. The model's unit suffix (`_pct`,
/// `_bits_per_s`, `_pps`, `_per_s`, `_us`…) is replaced by the base unit's; a name without the
/// suffix its unit implies gets the exposed unit appended all the same.
pub fn expose(name: &str, unit: Unit) -> Exposed {
    match cpu_mode(name, unit) {
        Some((CpuScope::Cpu, _)) => return seconds_counter("cpu"),
        Some((CpuScope::Thread, _)) => return seconds_counter("thread_cpu"),
        None => {}
    }
    let clean = sanitize(name);
    let gauge_rate = RATE_GAUGES.contains(&name);
    // (suffixes the model's names end in, a word for what is counted, exposed unit, divisor,
    // how the values fold)
    let (suffixes, counted, prom_unit, divisor, fold): (&[&str], &str, _, f64, Fold) = match unit {
        Unit::Percent => (&["_pct", "_percent"], "", Some("ratio"), 100.0, Fold::Last),
        Unit::Ratio => (&["_ratio"], "", Some("ratio"), 1.0, Fold::Last),
        Unit::BitsPerSecond | Unit::BytesPerSecond if gauge_rate => (
            &["_bits_per_s", "_bytes_per_s", "_per_s"],
            "",
            Some("bytes_per_second"),
            if unit == Unit::BitsPerSecond {
                8.0
            } else {
                1.0
            },
            Fold::Last,
        ),
        Unit::BitsPerSecond => (
            &["_bits_per_s", "_bps", "_per_s"],
            "",
            Some("bytes"),
            8.0,
            Fold::Integrate,
        ),
        Unit::BytesPerSecond => (
            &["_bytes_per_s", "_per_s"],
            "",
            Some("bytes"),
            1.0,
            Fold::Integrate,
        ),
        Unit::PacketsPerSecond => (
            &["_pps", "_packets_per_s"],
            "_packets",
            None,
            1.0,
            Fold::Integrate,
        ),
        Unit::PerSecond => (&["_per_s"], "", None, 1.0, Fold::Integrate),
        Unit::Seconds => (&["_seconds", "_s"], "", Some("seconds"), 1.0, Fold::Last),
        Unit::Microseconds => (&["_us"], "", Some("seconds"), 1e6, Fold::Last),
        Unit::Bytes => (&["_bytes"], "", Some("bytes"), 1.0, Fold::Last),
        Unit::Count => (&["_total"], "", None, 1.0, Fold::Last),
    };
    let stripped = suffixes
        .iter()
        .find_map(|s| clean.strip_suffix(s).filter(|rest| !rest.is_empty()));
    // A count whose name says it is a total counts up by itself.
    let kind = if fold == Fold::Integrate || (unit == Unit::Count && stripped.is_some()) {
        Kind::Counter
    } else {
        Kind::Gauge
    };
    let mut base = stripped.unwrap_or(&clean).to_string();
    // A byte counter whose name already says bytes (`tcp_bytes_acked`) is not "bytes_bytes".
    if prom_unit == Some("bytes") && fold == Fold::Integrate {
        base = base.replace("_bytes_", "_").replace("bytes_", "");
    }
    Exposed {
        stem: format!("{PREFIX}_{base}{counted}"),
        unit: prom_unit,
        kind,
        divisor,
        fold,
    }
}

/// Where one series goes: its family, and its labels there.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub exposed: Exposed,
    pub labels: Vec<(String, String)>,
}

/// Where the series `id` (in `unit`) is exposed, or `None` when it is left out: a sum of
/// others exposed beside it, a machine-wide CPU share (the per-CPU counters sum to it), or a
/// per-thread or per-flow gauge at [`Detail::Coarse`].
pub fn target(id: &MetricId, unit: Unit, detail: Detail) -> Option<Target> {
    let name = id.name.as_str();
    if DERIVED.contains(&name) {
        return None;
    }
    let exposed = expose(name, unit);
    let mode = cpu_mode(name, unit);
    if matches!(mode, Some((CpuScope::Cpu, _))) && id.label(names::LABEL_CPU).is_none() {
        return None;
    }
    let mut dropped = false;
    let mut labels: Vec<(String, String)> = Vec::new();
    for (k, v) in &id.labels {
        if detail == Detail::Coarse && FINE_LABELS.contains(&k.as_str()) {
            dropped = true;
            continue;
        }
        let key = label_name(k);
        if !labels.iter().any(|(have, _)| *have == key) {
            labels.push((key, v.clone()));
        }
    }
    // Values of several threads or flows add up only if they are counts.
    if dropped && exposed.fold != Fold::Integrate {
        return None;
    }
    if let Some((_, m)) = mode {
        labels.push(("mode".into(), m.into()));
    }
    labels.sort();
    Some(Target { exposed, labels })
}

/// A label key of the model as an OpenMetrics label name: interfaces are `device`, as
/// node_exporter names them; the other keys (`cpu`, `queue`, `comm`…) are already valid and
/// stay as they are; anything else becomes `[a-zA-Z0-9_]`, never starting with a digit or
/// with `__` (reserved).
pub fn label_name(key: &str) -> String {
    if key == names::LABEL_IFACE {
        return "device".into();
    }
    let clean = sanitize(key);
    let trimmed = clean.trim_start_matches('_');
    if trimmed.is_empty() || trimmed.starts_with(|c: char| c.is_ascii_digit()) {
        format!("label_{trimmed}")
    } else if trimmed.len() == clean.len() {
        clean
    } else {
        trimmed.to_string()
    }
}

pub(crate) fn sanitize(text: &str) -> String {
    let s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        "unnamed".into()
    } else {
        s
    }
}

/// The `# HELP` text of a model metric: what the model's names say it measures (without the
/// list of labels, which the samples show), how it was converted, and netceil's own name.
pub fn help(name: &str, unit: Unit) -> String {
    // One family holds every mode: its help names them all, whichever came first.
    match cpu_mode(name, unit) {
        Some((CpuScope::Cpu, _)) => {
            return "Time each CPU spent in each mode, seconds, counted up from netceil's per-interval shares (/proc/stat). netceil series: cpu_user_pct, cpu_system_pct… by mode.".into();
        }
        Some((CpuScope::Thread, _)) => {
            return "CPU time of a process's threads of one name, by mode, seconds, counted up from netceil's per-interval shares. netceil series: thread_user_pct, thread_system_pct.".into();
        }
        None => {}
    }
    let e = expose(name, unit);
    let what = match names::doc_of(name) {
        Some(doc) => {
            let cut = [" Labels:", " Labels as", " Label:"]
                .iter()
                .filter_map(|m| doc.find(m))
                .min()
                .unwrap_or(doc.len());
            doc[..cut].trim().to_string()
        }
        None => format!("netceil's {name}, in {}.", unit.symbol()),
    };
    let how = match (e.fold, unit) {
        (Fold::Integrate, Unit::BitsPerSecond) => {
            " Counted up: the rate times each interval's length, in bytes (bits / 8)."
        }
        (Fold::Integrate, _) => " Counted up: the rate times each interval's length.",
        (_, Unit::Percent) => " Exposed as a ratio: 1 = 100 %.",
        (_, Unit::BitsPerSecond) => " Exposed in bytes per second (bits / 8).",
        (_, Unit::Microseconds) => " Exposed in seconds.",
        _ => "",
    };
    escape_help(&format!("{what}{how} netceil series: {name}."))
}

/// HELP text may not hold a raw newline or an unescaped backslash.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}
