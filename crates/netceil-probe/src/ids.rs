//! Shared metric identities, so that a row of ~100 values costs no allocation per value.
//!
//! A [`MetricId`] owns a name and a map of labels: building one is four or five allocations,
//! and dropping it as many frees. At a 10 ms interval that alone was most of the sampler's
//! user time, and the receiving thread paid again to free them. Two levels avoid it:
//! - [`MetricIds`] builds each identity once and hands out `Arc` clones;
//! - a [`Schema`] is the list of identities (and units) of a whole row. Consecutive rows
//!   almost always have the same metrics in the same order, so a row carries one shared
//!   schema and a plain vector of numbers. A row's keys are checked against the schemas in
//!   use as one text compare, touching no identity at all: after 10 ms asleep every
//!   identity is out of the CPU's caches, and touching ~100 scattered ones cost more than
//!   the arithmetic.
//!
//! A [`Key`] describes an identity without building it. Its `Display` is exactly the
//! `Display` of the `MetricId` it stands for (`name{key=value,…}`, labels in key order), which
//! is what the interner looks up, in a reused buffer.

use std::collections::HashMap;
use std::fmt::{self, Display, Write};
use std::sync::Arc;

use netceil_model::names::{LABEL_COMM, LABEL_FLOW, LABEL_PID, LABEL_TID};
use netceil_model::{MetricId, Unit};

/// A label value: a number (a CPU, an IRQ, a pid) or text.
#[derive(Debug, Clone, Copy)]
pub enum Label<'a> {
    Num(i64),
    Str(&'a str),
}

impl Display for Label<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Num(n) => write!(f, "{n}"),
            Label::Str(s) => f.write_str(s),
        }
    }
}

impl From<u32> for Label<'_> {
    fn from(n: u32) -> Self {
        Label::Num(i64::from(n))
    }
}

impl From<i32> for Label<'_> {
    fn from(n: i32) -> Self {
        Label::Num(i64::from(n))
    }
}

impl<'a> From<&'a str> for Label<'a> {
    fn from(s: &'a str) -> Self {
        Label::Str(s)
    }
}

impl<'a> From<&'a String> for Label<'a> {
    fn from(s: &'a String) -> Self {
        Label::Str(s)
    }
}

/// A metric identity, described without allocating.
#[derive(Debug, Clone)]
pub enum Key<'a> {
    /// A name without labels.
    Plain(&'a str),
    /// A name with one label.
    One(&'a str, &'a str, Label<'a>),
    /// A per-thread metric: `name{comm=…,pid=…,tid=…}`.
    Thread {
        name: &'a str,
        pid: i32,
        tid: u32,
        comm: &'a str,
    },
    /// A per-flow metric: `name{flow=…,pid=…}`.
    Flow {
        name: &'a str,
        flow: &'a str,
        pid: i32,
    },
    /// Anything else, already built (rare shapes, read at most every slow interval).
    Built(MetricId),
}

impl Display for Key<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Plain(name) => f.write_str(name),
            Key::One(name, key, value) => write!(f, "{name}{{{key}={value}}}"),
            // Keys in BTreeMap order, as MetricId's Display writes them.
            Key::Thread {
                name,
                pid,
                tid,
                comm,
            } => write!(
                f,
                "{name}{{{LABEL_COMM}={comm},{LABEL_PID}={pid},{LABEL_TID}={tid}}}"
            ),
            Key::Flow { name, flow, pid } => {
                write!(f, "{name}{{{LABEL_FLOW}={flow},{LABEL_PID}={pid}}}")
            }
            Key::Built(id) => write!(f, "{id}"),
        }
    }
}

/// Appends a number's decimal digits, without the formatting machinery (this runs for every
/// value of every row).
fn push_num(out: &mut String, n: i64) {
    if n < 0 {
        out.push('-');
    }
    let mut n = n.unsigned_abs();
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}

impl Label<'_> {
    fn push_to(&self, out: &mut String) {
        match self {
            Label::Num(n) => push_num(out, *n),
            Label::Str(s) => out.push_str(s),
        }
    }
}

impl Key<'_> {
    /// Appends the same text as `Display`, faster.
    fn push_text(&self, out: &mut String) {
        match self {
            Key::Plain(name) => out.push_str(name),
            Key::One(name, key, value) => {
                out.push_str(name);
                out.push('{');
                out.push_str(key);
                out.push('=');
                value.push_to(out);
                out.push('}');
            }
            Key::Thread {
                name,
                pid,
                tid,
                comm,
            } => {
                out.push_str(name);
                out.push('{');
                out.push_str(LABEL_COMM);
                out.push('=');
                out.push_str(comm);
                out.push(',');
                out.push_str(LABEL_PID);
                out.push('=');
                push_num(out, i64::from(*pid));
                out.push(',');
                out.push_str(LABEL_TID);
                out.push('=');
                push_num(out, i64::from(*tid));
                out.push('}');
            }
            Key::Flow { name, flow, pid } => {
                out.push_str(name);
                out.push('{');
                out.push_str(LABEL_FLOW);
                out.push('=');
                out.push_str(flow);
                out.push(',');
                out.push_str(LABEL_PID);
                out.push('=');
                push_num(out, i64::from(*pid));
                out.push('}');
            }
            // Writing into a String cannot fail.
            Key::Built(id) => {
                let _ = write!(out, "{id}");
            }
        }
    }

    fn build(&self) -> MetricId {
        match self {
            Key::Plain(name) => MetricId::new(*name),
            Key::One(name, key, value) => MetricId::new(*name).with(*key, value.to_string()),
            Key::Thread {
                name,
                pid,
                tid,
                comm,
            } => MetricId::new(*name)
                .with(LABEL_PID, pid.to_string())
                .with(LABEL_TID, tid.to_string())
                .with(LABEL_COMM, *comm),
            Key::Flow { name, flow, pid } => MetricId::new(*name)
                .with(LABEL_FLOW, *flow)
                .with(LABEL_PID, pid.to_string()),
            Key::Built(id) => id.clone(),
        }
    }
}

/// Identities kept at most; past that the table starts over (threads come and go).
const MAX_IDS: usize = 1 << 16;

/// Schemas kept for reuse: a row with the slow tier and one without alternate at short
/// intervals, and interfaces or threads come and go.
const MAX_SCHEMAS: usize = 8;

/// Separates keys in a schema's text: no metric name, interface name or thread name holds a
/// NUL byte, so the joined text stands for exactly one list of keys.
const KEY_SEPARATOR: char = '\0';

/// The metrics of a row, in order, with their units: shared by every row that has the same.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    entries: Vec<(Arc<MetricId>, Unit)>,
    /// The keys' text, joined by [`KEY_SEPARATOR`]: what a new row is compared with.
    text: String,
}

impl Schema {
    /// A schema of these metrics, for rows not made by the sampler (tests, other tools).
    pub fn new(entries: Vec<(MetricId, Unit)>) -> Self {
        let mut text = String::new();
        for (id, _) in &entries {
            let _ = write!(text, "{id}{KEY_SEPARATOR}");
        }
        Schema {
            entries: entries
                .into_iter()
                .map(|(id, u)| (Arc::new(id), u))
                .collect(),
            text,
        }
    }

    /// The metrics and units, in the order of a row's values.
    pub fn entries(&self) -> &[(Arc<MetricId>, Unit)] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn matches(&self, text: &str, units: &[Unit]) -> bool {
        self.text == text
            && self.entries.len() == units.len()
            && self.entries.iter().zip(units).all(|((_, a), b)| a == b)
    }
}

/// Builds each metric identity once and shares it, and each row schema likewise.
#[derive(Debug, Default)]
pub struct MetricIds {
    by_text: HashMap<String, Arc<MetricId>>,
    scratch: String,
    /// Most recently used first.
    schemas: Vec<Arc<Schema>>,
    /// The row being described: its keys' text and units.
    schema_text: String,
    schema_units: Vec<Unit>,
    /// Missing values and their reasons, shared (see [`crate::rates::Missing`]), by
    /// `metric NUL reason`.
    missing: HashMap<String, crate::rates::Missing>,
}

impl MetricIds {
    pub fn new() -> Self {
        Self::default()
    }

    /// The shared identity `key` describes, built on first use.
    pub fn get(&mut self, key: &Key<'_>) -> Arc<MetricId> {
        self.scratch.clear();
        key.push_text(&mut self.scratch);
        if let Some(id) = self.by_text.get(self.scratch.as_str()) {
            return Arc::clone(id);
        }
        if self.by_text.len() >= MAX_IDS {
            self.by_text.clear();
        }
        let id = Arc::new(key.build());
        self.by_text.insert(self.scratch.clone(), Arc::clone(&id));
        id
    }

    /// The shared schema of a row whose values are `keys` in `units`, in order.
    pub fn schema(&mut self, keys: &[Key<'_>], units: &[Unit]) -> Arc<Schema> {
        self.begin_row();
        for (key, unit) in keys.iter().zip(units) {
            self.note(key, *unit);
        }
        match self.find_schema() {
            Some(schema) => schema,
            None => self.make_schema(keys),
        }
    }

    /// Starts describing a row, key by key with [`MetricIds::note`].
    pub(crate) fn begin_row(&mut self) {
        self.schema_text.clear();
        self.schema_units.clear();
    }

    /// The next value of the row being described.
    pub(crate) fn note(&mut self, key: &Key<'_>, unit: Unit) {
        key.push_text(&mut self.schema_text);
        self.schema_text.push(KEY_SEPARATOR);
        self.schema_units.push(unit);
    }

    /// The schema of the row described, if one in use matches it.
    pub(crate) fn find_schema(&mut self) -> Option<Arc<Schema>> {
        let i = self
            .schemas
            .iter()
            .position(|s| s.matches(&self.schema_text, &self.schema_units))?;
        let schema = self.schemas.remove(i);
        self.schemas.insert(0, Arc::clone(&schema));
        Some(schema)
    }

    /// A new schema for the row described, whose keys are `keys`.
    pub(crate) fn make_schema(&mut self, keys: &[Key<'_>]) -> Arc<Schema> {
        let units = std::mem::take(&mut self.schema_units);
        debug_assert_eq!(keys.len(), units.len());
        let entries = keys
            .iter()
            .zip(&units)
            .map(|(k, u)| (self.get(k), *u))
            .collect();
        self.schema_units = units;
        let schema = Arc::new(Schema {
            entries,
            text: self.schema_text.clone(),
        });
        self.schemas.truncate(MAX_SCHEMAS - 1);
        self.schemas.insert(0, Arc::clone(&schema));
        schema
    }

    /// The shared `(metric, reason)` of a missing value, made on first use. Written into a
    /// reused buffer and looked up, so a pair seen before costs no allocation.
    pub(crate) fn missing(
        &mut self,
        metric: &dyn Display,
        reason: &dyn Display,
    ) -> crate::rates::Missing {
        self.scratch.clear();
        let _ = write!(self.scratch, "{metric}");
        let split = self.scratch.len();
        let _ = write!(self.scratch, "{KEY_SEPARATOR}{reason}");
        if let Some(note) = self.missing.get(self.scratch.as_str()) {
            return Arc::clone(note);
        }
        if self.missing.len() >= MAX_IDS {
            self.missing.clear();
        }
        let note = Arc::new((
            self.scratch[..split].to_string(),
            self.scratch[split + KEY_SEPARATOR.len_utf8()..].to_string(),
        ));
        self.missing.insert(self.scratch.clone(), Arc::clone(&note));
        note
    }

    /// How many identities are held.
    pub fn len(&self) -> usize {
        self.by_text.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_text.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_text_is_the_metric_id_text() {
        let keys = [
            Key::Plain("cs_per_s"),
            Key::One("cpu_busy_pct", "cpu", Label::from(3u32)),
            Key::One("iface_rx_pps", "iface", Label::from("veth0")),
            Key::Thread {
                name: "thread_cpu_pct",
                pid: 42,
                tid: 43,
                comm: "iperf3",
            },
            Key::Thread {
                name: "thread_cpu_pct",
                pid: 4_194_304,
                tid: 0,
                comm: "",
            },
            Key::One("m", "irq", Label::Num(i64::MIN)),
            Key::Flow {
                name: "tcp_cwnd",
                flow: "[::1]:5201>[::1]:40312",
                pid: 77,
            },
            Key::One("m", "pid", Label::from(-7)),
            Key::Built(
                MetricId::new("irq_per_s")
                    .with("irq", "5")
                    .with("dir", "rx"),
            ),
        ];
        for k in keys {
            let mut fast = String::new();
            k.push_text(&mut fast);
            assert_eq!(k.to_string(), k.build().to_string(), "{k:?}");
            assert_eq!(fast, k.to_string(), "{k:?}");
        }
    }

    #[test]
    fn the_same_key_gives_the_same_shared_identity() {
        let mut ids = MetricIds::new();
        let a = ids.get(&Key::One("cpu_busy_pct", "cpu", 1u32.into()));
        let b = ids.get(&Key::One("cpu_busy_pct", "cpu", 1u32.into()));
        let c = ids.get(&Key::One("cpu_busy_pct", "cpu", 2u32.into()));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(a.label("cpu"), Some("1"));
        assert_eq!(ids.len(), 2);
    }

    #[test]
    fn rows_with_the_same_keys_share_one_schema() {
        let mut ids = MetricIds::new();
        let (pct, per_s) = (Unit::Percent, Unit::PerSecond);
        let keys = |cpu: u32| {
            [
                Key::Plain("cs_per_s"),
                Key::One("cpu_busy_pct", "cpu", cpu.into()),
            ]
        };
        let a = ids.schema(&keys(0), &[per_s, pct]);
        let b = ids.schema(&keys(0), &[per_s, pct]);
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.entries()[1].0.label("cpu"), Some("0"));
        // Another label, another unit, or one key fewer: another schema.
        let c = ids.schema(&keys(1), &[per_s, pct]);
        let d = ids.schema(&keys(0), &[per_s, per_s]);
        let e = ids.schema(&keys(0)[..1], &[per_s]);
        for other in [&c, &d, &e] {
            assert!(!Arc::ptr_eq(&a, other));
        }
        // Identities are still shared between schemas.
        assert!(Arc::ptr_eq(&a.entries()[0].0, &c.entries()[0].0));
        // The first is still known after the others.
        assert!(Arc::ptr_eq(&a, &ids.schema(&keys(0), &[per_s, pct])));
        assert_eq!(
            Schema::new(vec![(MetricId::new("cs_per_s"), per_s)]).text,
            "cs_per_s\0"
        );
    }

    #[test]
    fn a_label_that_looks_like_another_key_does_not_collide() {
        // An interface may be named anything printable; the text includes the name and key,
        // so two different identities never share a text.
        let mut ids = MetricIds::new();
        let a = ids.get(&Key::One("m", "iface", Label::Str("x}")));
        let b = ids.get(&Key::One("m", "iface", Label::Str("x")));
        assert_ne!(*a, *b);
        // A thread may name itself anything, even what looks like the labels after it.
        let thread = |comm, pid, tid| Key::Thread {
            name: "thread_cpu_pct",
            pid,
            tid,
            comm,
        };
        let forged = ids.get(&thread("a,pid=1,tid=2", 3, 4));
        let real = ids.get(&thread("a", 1, 2));
        assert!(!Arc::ptr_eq(&forged, &real));
        assert_eq!(forged.label("comm"), Some("a,pid=1,tid=2"));
        assert_eq!(real.label("pid"), Some("1"));
    }
}
