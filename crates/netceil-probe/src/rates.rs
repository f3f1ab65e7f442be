//! Two snapshots in, one row of rates out.
//!
//! Rates are counter deltas divided by the *measured* time between the snapshots (their
//! timestamps), never by the nominal interval, so a late sample gives a longer interval and
//! the same rate. CPU shares are tick deltas over the CPU's total tick delta, as mpstat does.
//! Slow-tier metrics (see [`crate::sampler`]) appear only in rows where that tier was read
//! again, as rates over the time between its own two readings.
//!
//! # When a counter goes backwards
//!
//! A decrease is never turned into a huge rate. [`counter_delta`] decides:
//! - a counter the kernel keeps in 32 bits and never resets ([`CounterWidth::U32`]: softirqs,
//!   softnet_stat) wrapped: the delta is `2^32 − prev + cur`, accepted when below 2^31;
//! - any other counter ([`CounterWidth::Native`]) is read as one 32-bit wrap only when `prev`
//!   was within 2^28 of 2^32 and `cur` is below 2^28 (32-bit kernels, and drivers that keep
//!   32-bit hardware counters);
//! - every other decrease is a reset (interface re-created, driver reloaded, IRQ re-requested):
//!   the metric has no value for that interval, and the reason is recorded.
//!
//! `iowait` is the one exception the kernel documents: it may decrease. A decrease makes only
//! `cpu_iowait_pct` missing for the interval; the other shares use an iowait delta of 0.
//!
//! # Things that appear and vanish
//!
//! A CPU, interface, IRQ or thread that is in the current snapshot but not the previous one
//! gets values from the next interval on. One that vanished gets a missing value with the
//! reason. A source that could not be read makes its metrics missing, with the read error as
//! the reason; nothing is ever recorded as 0 for lack of a reading.

use std::collections::BTreeMap;
use std::fmt::Display;

use netceil_model::names::*;
use std::sync::Arc;

use netceil_model::{MetricId, Unit};

use crate::ids::{Key, Label, MetricIds, Schema};

use crate::cpu_share::{self, Column, NoShares};
use crate::parse::proc_stat::CpuTimes;
use crate::parse::snmp::{Counter, KnownCounters};
use crate::sampler::{NicIrq, SlowSnapshot, Snapshot};
use crate::SourceError;

/// How a kernel counter is stored, which decides how a decrease is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterWidth {
    /// A 32-bit counter that only wraps (softirqs, softnet_stat).
    U32,
    /// `unsigned long` or u64: 32 bits on 32-bit kernels; may also be reset.
    Native,
}

const TWO_32: u64 = 1 << 32;
const NEAR_32: u64 = 1 << 28;

/// The increase of a counter from `prev` to `cur`, or `None` when it went backwards in a way
/// that is not a wrap (see the module docs for the rule).
pub fn counter_delta(prev: u64, cur: u64, width: CounterWidth) -> Option<u64> {
    if cur >= prev {
        return Some(cur - prev);
    }
    if prev >= TWO_32 {
        return None;
    }
    let wrapped = TWO_32 - prev + cur;
    match width {
        CounterWidth::U32 => (cur < TWO_32 && wrapped < (1 << 31)).then_some(wrapped),
        CounterWidth::Native => (TWO_32 - prev <= NEAR_32 && cur < NEAR_32).then_some(wrapped),
    }
}

/// The reason recorded when a counter went backwards.
pub const RESET_REASON: &str =
    "counter went backwards (reset, or a wrap that cannot be told from one); no value for this interval";

/// The metrics of the slow tier of sources (see [`crate::sampler`]): at short intervals they
/// have values only in the rows where that tier was read.
pub const SLOW_TIER_METRICS: &[&str] = &[
    IRQ_PER_S,
    NIC_IRQ_PER_S,
    IFACE_RX_MISSED_PER_S,
    IP_IN_RECEIVES_PER_S,
    IP_IN_DISCARDS_PER_S,
    TCP_IN_SEGS_PER_S,
    TCP_OUT_SEGS_PER_S,
    TCP_RETRANS_SEGS_PER_S,
    UDP_IN_DATAGRAMS_PER_S,
    UDP_OUT_DATAGRAMS_PER_S,
    UDP_NO_PORTS_PER_S,
    UDP_IN_ERRORS_PER_S,
    UDP_RCVBUF_ERRORS_PER_S,
    UDP_SNDBUF_ERRORS_PER_S,
    TCP_LOST_RETRANSMIT_PER_S,
    TCP_FAST_RETRANS_PER_S,
    TCP_TIMEOUTS_PER_S,
    TCP_DSACK_RECV_PER_S,
    TCP_DSACK_SENT_PER_S,
    TCP_SACK_REORDER_PER_S,
    TCP_DELAYED_ACKS_PER_S,
    TCP_BACKLOG_DROP_PER_S,
    TCP_LISTEN_DROPS_PER_S,
    PSI_CPU_SOME_PCT,
    PSI_CPU_FULL_PCT,
    PSI_IO_SOME_PCT,
    PSI_IO_FULL_PCT,
    PSI_MEMORY_SOME_PCT,
    PSI_MEMORY_FULL_PCT,
    THREAD_CPU_PCT,
    THREAD_USER_PCT,
    THREAD_SYSTEM_PCT,
    THREAD_VOLUNTARY_CS_PER_S,
    THREAD_NONVOLUNTARY_CS_PER_S,
    THREAD_LAST_CPU,
    SAMPLER_CPU_PCT,
    TCP_FLOWS,
    TCP_CWND,
    TCP_RTT_US,
    TCP_MIN_RTT_US,
    TCP_DELIVERY_RATE_BITS_PER_S,
    TCP_BUSY_PCT,
    TCP_RWND_LIMITED_PCT,
    TCP_SNDBUF_LIMITED_PCT,
    TCP_CWND_LIMITED_PCT,
    TCP_RETRANS_PER_S,
    TCP_SND_WND_BYTES,
    TCP_RCV_SPACE_BYTES,
    TCP_SND_MSS_BYTES,
    TCP_IN_FLIGHT_BYTES,
    TCP_SNDBUF_BYTES,
    TCP_SEND_QUEUE_BYTES,
    TCP_RCVBUF_BYTES,
    TCP_RECV_QUEUE_BYTES,
    TCP_BYTES_ACKED_PER_S,
    TCP_BYTES_RECEIVED_PER_S,
];

/// The metrics from /proc/interrupts, which is read only when the machine's interrupts moved
/// (see [`crate::sampler`]).
pub const IRQ_METRICS: &[&str] = &[
    IRQ_PER_S,
    NIC_IRQ_PER_S,
    DEVICE_INTR_PER_S,
    TIMER_INTR_PER_S,
    IPI_PER_S,
];

/// The metrics from /proc/net/snmp and /proc/net/netstat, which are read only when packets
/// moved (see [`crate::sampler`]).
pub fn proto_metrics() -> impl Iterator<Item = &'static str> {
    PROTO_METRICS.iter().map(|(name, _, _)| *name)
}

/// The reason a [`crate::Recorder`] notes, once, for /proc/interrupts' metrics in rows without
/// them.
pub const IRQ_QUIET_REASON: &str = "/proc/interrupts is read again only when /proc/stat counted 1000 interrupts per CPU per second over the last interval, or every 5 s: rows between have no breakdown (intr_per_s, the total, is in every row), and the next reading's rates cover the whole time since the last";

/// The metrics from the qdisc counters, read with the protocol files.
pub const QDISC_METRICS: &[&str] = &[
    QDISC_BITS_PER_S,
    QDISC_PPS,
    QDISC_DROPS_PER_S,
    QDISC_OVERLIMITS_PER_S,
    QDISC_REQUEUES_PER_S,
    QDISC_BACKLOG_BYTES,
    QDISC_RATE_BITS_PER_S,
];

/// The reason a [`crate::Recorder`] notes, once, for /proc/net/snmp and /proc/net/netstat
/// metrics in rows without them.
pub const PROTO_QUIET_REASON: &str = "/proc/net/snmp and /proc/net/netstat are read again only when some interface counted a packet since their last reading, or every 5 s: rows between have no value, and the next reading's rates cover the whole time since the last";

/// The reason a [`crate::Recorder`] notes, once, for qdisc metrics in rows without them.
pub const QDISC_QUIET_REASON: &str = "qdisc counters are read again only when some interface counted a packet since their last reading (or when qdiscs of other namespaces are read), or every 5 s: rows between have no value, and the next reading's rates cover the whole time since the last";

/// The reason a [`crate::Recorder`] notes, once, for slow-tier metrics in rows without them.
pub const SLOW_TIER_REASON: &str = "slow-tier source, read at most every slow_interval (100 ms by default): values only in the rows where it was read";

/// One metric value added to a row after it was made (see [`Row::push`]).
pub type Value = (MetricId, Unit, f64);

/// The rates of one interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    /// The end of the interval. From [`rates`], on the source's clock; from a
    /// [`crate::Recorder`], seconds since its first sample.
    pub t_s: f64,
    /// The measured length of the interval, seconds.
    pub elapsed_s: f64,
    /// Which metric each of `values` is, shared with the other rows that have the same.
    pub schema: Arc<Schema>,
    /// One value per entry of `schema`.
    pub values: Vec<f64>,
    /// Values added later, such as a workload's own figures for the interval.
    pub extra: Vec<Value>,
    /// `(metric, reason)` for values that could not be given: a metric name, or a metric
    /// with labels as [`MetricId`]'s `Display` writes it. Shared with the other rows that
    /// miss the same value for the same reason (see [`Missing`]).
    pub missing: Vec<Missing>,
}

/// A value that could not be given, and why: `(metric, reason)`. At short intervals the same
/// values go missing row after row (a 10 ms interval often holds no CPU tick), so each pair is
/// made once and shared, not written out again for every row.
pub type Missing = Arc<(String, String)>;

impl Row {
    /// A row of these values (metric, unit, value), for rows not made by the sampler.
    pub fn from_values(t_s: f64, elapsed_s: f64, values: Vec<Value>) -> Self {
        let numbers = values.iter().map(|v| v.2).collect();
        let entries = values.into_iter().map(|(id, u, _)| (id, u)).collect();
        Row {
            t_s,
            elapsed_s,
            schema: Arc::new(Schema::new(entries)),
            values: numbers,
            ..Row::default()
        }
    }

    /// Every value: metric, unit, value.
    pub fn iter(&self) -> impl Iterator<Item = (&MetricId, Unit, f64)> + '_ {
        let own = self
            .schema
            .entries()
            .iter()
            .zip(&self.values)
            .map(|((id, unit), v)| (&**id, *unit, *v));
        own.chain(self.extra.iter().map(|(id, unit, v)| (id, *unit, *v)))
    }

    /// How many values the row has.
    pub fn len(&self) -> usize {
        self.values.len() + self.extra.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds a value to the row.
    pub fn push(&mut self, id: MetricId, unit: Unit, value: f64) {
        self.extra.push((id, unit, value));
    }

    /// The value of a metric, if the row has it.
    pub fn get(&self, id: &MetricId) -> Option<f64> {
        self.iter().find(|(m, _, _)| *m == id).map(|v| v.2)
    }

    /// The value of the unlabeled metric `name`.
    pub fn total(&self, name: &str) -> Option<f64> {
        self.iter()
            .find(|(m, _, _)| m.name == name && m.labels.is_empty())
            .map(|v| v.2)
    }

    /// Every value with this name, whatever its labels.
    pub fn by_name<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = (&'a MetricId, Unit, f64)> + 'a {
        self.iter().filter(move |(m, _, _)| m.name == name)
    }

    /// The reason recorded for a metric (name, or name with labels), if any.
    pub fn missing_reason(&self, metric: &str) -> Option<&str> {
        self.missing
            .iter()
            .find(|m| m.0 == metric)
            .map(|m| m.1.as_str())
    }
}

/// A row being made. Each value's key and unit go to the schema being described in `ids`;
/// the keys themselves are kept only when that schema turns out to be new.
struct Builder<'a, 'i> {
    ids: &'i mut MetricIds,
    keys: Option<Vec<Key<'a>>>,
    values: Vec<f64>,
    missing: Vec<Missing>,
    elapsed: f64,
}

impl<'a> Builder<'a, '_> {
    fn value(&mut self, id: Key<'a>, unit: Unit, v: f64) {
        self.ids.note(&id, unit);
        if let Some(keys) = &mut self.keys {
            keys.push(id);
        }
        self.values.push(v);
    }

    fn missing(&mut self, metric: impl Display, reason: impl Display) {
        let note = self.ids.missing(&metric, &reason);
        self.missing.push(note);
    }

    fn missing_all(&mut self, names: &[&str], reason: &SourceError) {
        let reason = reason.to_string();
        for n in names {
            self.missing(n, &reason);
        }
    }

    /// A per-second rate from a counter pair, or a missing value with the reason.
    fn rate(&mut self, id: Key<'a>, unit: Unit, prev: u64, cur: u64, w: CounterWidth, k: f64) {
        match counter_delta(prev, cur, w) {
            Some(d) => {
                let v = d as f64 * k / self.elapsed;
                self.value(id, unit, v);
            }
            None => self.missing(&id, RESET_REASON),
        }
    }
}

fn labeled<'a>(name: &'a str, key: &'a str, value: impl Into<Label<'a>>) -> Key<'a> {
    Key::One(name, key, value.into())
}

/// Turns two snapshots into the rates of the interval between them.
///
/// Builds every metric identity afresh; a caller making many rows should keep a
/// [`MetricIds`] and use [`rates_with`].
pub fn rates(prev: &Snapshot, cur: &Snapshot) -> Row {
    rates_with(&mut MetricIds::new(), prev, cur)
}

/// [`rates`], sharing metric identities and row schemas through `ids` from one row to the
/// next.
pub fn rates_with(ids: &mut MetricIds, prev: &Snapshot, cur: &Snapshot) -> Row {
    let made = build_row(ids, false, prev, cur);
    let schema = match ids.find_schema() {
        Some(schema) => schema,
        None => {
            // Metrics not seen in this order before: the same arithmetic again, keeping the
            // keys this time to build their identities.
            let again = build_row(ids, true, prev, cur);
            ids.make_schema(&again.keys)
        }
    };
    Row {
        t_s: cur.t.as_secs_f64(),
        elapsed_s: made.elapsed,
        schema,
        values: made.values,
        extra: Vec::new(),
        missing: made.missing,
    }
}

/// What [`build_row`] made.
struct Made<'a> {
    keys: Vec<Key<'a>>,
    values: Vec<f64>,
    missing: Vec<Missing>,
    elapsed: f64,
}

/// The values of the interval between two snapshots, without their schema: each value's key
/// and unit are noted in `ids` as the schema being described, and the keys themselves kept
/// only when `keep_keys`.
fn build_row<'a>(
    ids: &mut MetricIds,
    keep_keys: bool,
    prev: &'a Snapshot,
    cur: &'a Snapshot,
) -> Made<'a> {
    let elapsed = cur.t.as_secs_f64() - prev.t.as_secs_f64();
    // Room for every value at once.
    let cpus = cur.stat.as_ref().map_or(0, |s| s.cpus.len() + 1);
    let ifaces = cur.net_dev.as_ref().map_or(0, |d| d.ifaces.len());
    let irqs = cur.slow.nic_irqs.len();
    let threads = cur.slow.threads.len();
    let capacity = 16 * cpus + 10 * ifaces + irqs + 6 * threads + 48;
    ids.begin_row();
    let mut b = Builder {
        ids,
        keys: keep_keys.then(|| Vec::with_capacity(capacity)),
        values: Vec::with_capacity(capacity),
        missing: Vec::new(),
        elapsed,
    };
    if elapsed > 0.0 {
        all_rates(&mut b, prev, cur);
    } else {
        b.missing("*", "no time elapsed between the two samples");
    }
    Made {
        keys: b.keys.unwrap_or_default(),
        values: b.values,
        missing: b.missing,
        elapsed,
    }
}

fn all_rates<'a>(b: &mut Builder<'a, '_>, prev: &'a Snapshot, cur: &'a Snapshot) {
    let elapsed = b.elapsed;
    proc_stat_rates(b, prev, cur);
    softirq_rates(b, prev, cur);
    iface_rates(b, prev, cur);
    softnet_rates(b, prev, cur);
    // The slow tier: only when it was read again, over the time between its two readings.
    let (ps, cs) = (&*prev.slow, &*cur.slow);
    let slow_elapsed = cs.t.as_secs_f64() - ps.t.as_secs_f64();
    if cs.seq != ps.seq && slow_elapsed > 0.0 {
        // The costly files: only when read again, over the time since their last reading.
        let span = |p: crate::sampler::Reading, c: crate::sampler::Reading| {
            (c.seq != p.seq).then_some(c.t.as_secs_f64() - p.t.as_secs_f64())
        };
        if let Some(irq_elapsed) = span(ps.irq_read, cs.irq_read).filter(|e| *e > 0.0) {
            b.elapsed = irq_elapsed;
            irq_rates(b, ps, cs);
            irq_source_rates(b, ps, cs);
        }
        if let Some(proto_elapsed) = span(ps.proto_read, cs.proto_read).filter(|e| *e > 0.0) {
            b.elapsed = proto_elapsed;
            protocol_rates(b, ps, cs);
            qdisc_rates(b, ps, cs);
        }
        b.elapsed = slow_elapsed;
        rx_missed_rates(b, ps, cs, cur);
        pressure_rates(b, ps, cs);
        thread_rates(b, ps, cs, cur.ticks_per_s);
        process_rates(b, ps, cs, cur.ticks_per_s);
        tcp_flow_rates(b, ps, cs);
        if let (Some(p), Some(c)) = (ps.sampler_cpu, cs.sampler_cpu) {
            let used = c.saturating_sub(p).as_secs_f64();
            b.value(
                Key::Plain(SAMPLER_CPU_PCT),
                Unit::Percent,
                100.0 * used / slow_elapsed,
            );
        } else {
            b.missing(SAMPLER_CPU_PCT, "no thread CPU clock on this platform");
        }
        b.elapsed = elapsed;
    }
}

const CPU_NAMES: [&str; 9] = [
    CPU_USER_PCT,
    CPU_NICE_PCT,
    CPU_SYSTEM_PCT,
    CPU_IRQ_PCT,
    CPU_SOFTIRQ_PCT,
    CPU_IDLE_PCT,
    CPU_IOWAIT_PCT,
    CPU_STEAL_PCT,
    CPU_BUSY_PCT,
];

fn proc_stat_rates(b: &mut Builder, prev: &Snapshot, cur: &Snapshot) {
    let c = match &cur.stat {
        Ok(c) => c,
        Err(e) => {
            b.missing_all(&CPU_NAMES, e);
            b.missing_all(
                &[
                    INTR_PER_S,
                    CS_PER_S,
                    FORKS_PER_S,
                    PROCS_RUNNING,
                    PROCS_BLOCKED,
                ],
                e,
            );
            return;
        }
    };
    let gauges = [
        (PROCS_RUNNING, c.procs_running),
        (PROCS_BLOCKED, c.procs_blocked),
    ];
    for (name, v) in gauges {
        match v {
            Some(v) => b.value(Key::Plain(name), Unit::Count, v as f64),
            None => b.missing(name, "not in this kernel's /proc/stat"),
        }
    }
    let Ok(p) = &prev.stat else { return };
    // The wall time between the two readings of /proc/stat, in its ticks.
    let wall = cur.stat_at.saturating_sub(prev.stat_at).as_secs_f64() * cur.ticks_per_s as f64;
    // Each CPU's earlier line: at the same place unless CPUs came or went. A CPU new in this
    // snapshot starts at the next interval.
    // (Looked up twice rather than kept: a row allocates only what it keeps.)
    let earlier = |i: usize, cpu: u32| match p.cpus.get(i) {
        Some(pl) if pl.cpu == cpu => Some(&pl.times),
        _ => p.cpu(cpu),
    };
    let both = (c.cpus.iter().enumerate())
        .filter(|(i, l)| earlier(*i, l.cpu).is_some())
        .count();
    cpu_shares(b, None, &p.total, &c.total, wall * both as f64);
    for (i, line) in c.cpus.iter().enumerate() {
        if let Some(pt) = earlier(i, line.cpu) {
            cpu_shares(b, Some(line.cpu), pt, &line.times, wall);
        }
    }
    for line in &p.cpus {
        if c.cpu(line.cpu).is_none() {
            for name in CPU_NAMES {
                b.missing(
                    labeled(name, LABEL_CPU, line.cpu),
                    format!("cpu{} went offline", line.cpu),
                );
            }
        }
    }
    let counters = [
        (INTR_PER_S, p.intr_total, c.intr_total),
        (CS_PER_S, p.ctxt, c.ctxt),
        (FORKS_PER_S, p.processes, c.processes),
    ];
    for (name, pv, cv) in counters {
        match (pv, cv) {
            (Some(pv), Some(cv)) => b.rate(
                Key::Plain(name),
                Unit::PerSecond,
                pv,
                cv,
                CounterWidth::Native,
                1.0,
            ),
            _ => b.missing(name, "not in this kernel's /proc/stat"),
        }
    }
}

/// A CPU as the reasons for its missing values name it: `cpu3`, or `all CPUs`.
#[derive(Clone, Copy)]
struct CpuName(Option<u32>);

impl Display for CpuName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(n) => write!(f, "cpu{n}"),
            None => f.write_str("all CPUs"),
        }
    }
}

/// One CPU's (or, with `cpu` None, all CPUs') shares of the interval, from two readings of its
/// /proc/stat times `wall` ticks of wall time apart (CPUs × that for all CPUs): busy is the
/// wall time less idle and iowait (see [`crate::cpu_share`]).
fn cpu_shares(b: &mut Builder, cpu: Option<u32>, p: &CpuTimes, c: &CpuTimes, wall: f64) {
    let id = |name: &'static str| match cpu {
        Some(n) => labeled(name, LABEL_CPU, n),
        None => Key::Plain(name),
    };
    let who = CpuName(cpu);
    let s = match cpu_share::shares(p, c, wall) {
        Ok(s) => s,
        Err(why) => {
            for name in CPU_NAMES {
                match why {
                    NoShares::Backwards => {
                        b.missing(id(name), format_args!("{who}: CPU time went backwards"))
                    }
                    NoShares::NoTicks => b.missing(
                        id(name),
                        format_args!(
                            "{who}: no CPU time ticks in the interval (shorter than one USER_HZ tick)"
                        ),
                    ),
                }
            }
            return;
        }
    };
    b.value(id(CPU_USER_PCT), Unit::Percent, s.user);
    b.value(id(CPU_NICE_PCT), Unit::Percent, s.nice);
    b.value(id(CPU_SYSTEM_PCT), Unit::Percent, s.system);
    b.value(id(CPU_IDLE_PCT), Unit::Percent, s.idle);
    b.value(id(CPU_BUSY_PCT), Unit::Percent, s.busy);
    let optional = [
        (CPU_IOWAIT_PCT, s.iowait, "iowait"),
        (CPU_IRQ_PCT, s.irq, "irq"),
        (CPU_SOFTIRQ_PCT, s.softirq, "softirq"),
        (CPU_STEAL_PCT, s.steal, "steal"),
    ];
    for (name, share, column) in optional {
        match share {
            Column::Pct(v) => b.value(id(name), Unit::Percent, v),
            Column::Backwards => b.missing(
                id(name),
                format_args!("{who}: {column} went backwards, which the kernel allows (proc.rst)"),
            ),
            // Said once for the name, not per CPU.
            Column::Absent => b.missing(
                name,
                format!("/proc/stat has no {column} column on this kernel"),
            ),
        }
    }
}

fn softirq_rates(b: &mut Builder, prev: &Snapshot, cur: &Snapshot) {
    let names = [
        ("NET_RX", SOFTIRQ_NET_RX_PER_S),
        ("NET_TX", SOFTIRQ_NET_TX_PER_S),
    ];
    let c = match &cur.softirqs {
        Ok(c) => c,
        Err(e) => {
            b.missing_all(&[SOFTIRQ_NET_RX_PER_S, SOFTIRQ_NET_TX_PER_S], e);
            return;
        }
    };
    let Ok(p) = &prev.softirqs else { return };
    for (row, name) in names {
        let (Some(pr), Some(cr)) = (p.row(row), c.row(row)) else {
            b.missing(name, format!("/proc/softirqs has no {row} row"));
            continue;
        };
        let mut total = Some(0u64);
        for (i, (&cpu, &count)) in c.cpus.iter().zip(&cr.counts).enumerate() {
            // Columns usually line up; look further only when CPUs came or went.
            let col = if p.cpus.get(i) == Some(&cpu) {
                Some(i)
            } else {
                p.cpus.iter().position(|&c| c == cpu)
            };
            let Some(&before) = col.and_then(|col| pr.counts.get(col)) else {
                continue;
            };
            let delta = counter_delta(before, count, CounterWidth::U32);
            total = total.zip(delta).map(|(t, d)| t + d);
            b.rate(
                labeled(name, LABEL_CPU, cpu),
                Unit::PerSecond,
                before,
                count,
                CounterWidth::U32,
                1.0,
            );
        }
        match total {
            Some(t) => b.value(Key::Plain(name), Unit::PerSecond, t as f64 / b.elapsed),
            None => b.missing(name, RESET_REASON),
        }
    }
}

fn irq_id(irq: &NicIrq) -> Key<'static> {
    let mut id = MetricId::new(IRQ_PER_S).with(LABEL_IRQ, irq.irq.to_string());
    match (&irq.iface, &irq.device) {
        (Some(i), _) => id = id.with(LABEL_IFACE, i.clone()),
        (None, Some(d)) => id = id.with(LABEL_DEVICE, d.clone()),
        (None, None) => {}
    }
    if let Some(q) = irq.queue {
        id = id.with(LABEL_QUEUE, q.to_string());
    }
    Key::Built(id.with(LABEL_DIR, irq.direction.as_str()))
}

fn irq_rates(b: &mut Builder, prev: &SlowSnapshot, cur: &SlowSnapshot) {
    let c = match &cur.interrupts {
        Ok(c) => c,
        Err(e) => {
            b.missing_all(&[IRQ_PER_S, NIC_IRQ_PER_S], e);
            return;
        }
    };
    let Ok(p) = &prev.interrupts else { return };
    for gone in &prev.nic_irqs {
        if !cur.nic_irqs.iter().any(|n| n == gone) {
            b.missing(
                irq_id(gone),
                format!(
                    "IRQ {} is gone (interface removed or driver reloaded)",
                    gone.irq
                ),
            );
        }
    }
    if cur.nic_irqs.is_empty() {
        b.missing(
            NIC_IRQ_PER_S,
            "no NIC queue interrupts in /proc/interrupts for the recorded interfaces",
        );
        return;
    }
    let prev_col: BTreeMap<u32, usize> = p.cpus.iter().enumerate().map(|(i, &c)| (c, i)).collect();
    let mut per_cpu: BTreeMap<u32, Option<u64>> = c
        .cpus
        .iter()
        .filter(|cpu| prev_col.contains_key(cpu))
        .map(|&cpu| (cpu, Some(0)))
        .collect();
    let mut any = false;
    for nic in &cur.nic_irqs {
        // New, or the IRQ number now belongs to another queue: starts next interval.
        if !prev.nic_irqs.iter().any(|n| n == nic) {
            continue;
        }
        let (Some(pr), Some(cr)) = (p.irq(nic.irq), c.irq(nic.irq)) else {
            continue;
        };
        any = true;
        let mut sum = Some(0u64);
        for (&cpu, &count) in c.cpus.iter().zip(&cr.counts) {
            let Some(&col) = prev_col.get(&cpu) else {
                continue;
            };
            let Some(&before) = pr.counts.get(col) else {
                continue;
            };
            // Descriptors are freed and re-made when a driver reloads: resets happen.
            let d = counter_delta(before, count, CounterWidth::Native);
            sum = sum.zip(d).map(|(s, d)| s + d);
            if let Some(slot) = per_cpu.get_mut(&cpu) {
                *slot = slot.zip(d).map(|(s, d)| s + d);
            }
        }
        match sum {
            Some(s) => b.value(irq_id(nic), Unit::PerSecond, s as f64 / b.elapsed),
            None => b.missing(irq_id(nic), RESET_REASON),
        }
    }
    if !any {
        return;
    }
    let mut total = Some(0u64);
    for (cpu, v) in per_cpu {
        total = total.zip(v).map(|(t, v)| t + v);
        match v {
            Some(v) => b.value(
                labeled(NIC_IRQ_PER_S, LABEL_CPU, cpu),
                Unit::PerSecond,
                v as f64 / b.elapsed,
            ),
            None => b.missing(labeled(NIC_IRQ_PER_S, LABEL_CPU, cpu), RESET_REASON),
        }
    }
    match total {
        Some(t) => b.value(
            Key::Plain(NIC_IRQ_PER_S),
            Unit::PerSecond,
            t as f64 / b.elapsed,
        ),
        None => b.missing(NIC_IRQ_PER_S, RESET_REASON),
    }
}

const IFACE_NAMES: [&str; 9] = [
    IFACE_RX_BITS_PER_S,
    IFACE_TX_BITS_PER_S,
    IFACE_RX_PPS,
    IFACE_TX_PPS,
    IFACE_RX_DROPPED_PER_S,
    IFACE_TX_DROPPED_PER_S,
    IFACE_RX_ERRORS_PER_S,
    IFACE_TX_ERRORS_PER_S,
    IFACE_RX_MISSED_PER_S,
];

fn iface_rates<'a>(b: &mut Builder<'a, '_>, prev: &'a Snapshot, cur: &'a Snapshot) {
    for name in &cur.ifaces_absent {
        for metric in IFACE_NAMES {
            b.missing(
                labeled(metric, LABEL_IFACE, name),
                format!("no interface {name} in /proc/net/dev"),
            );
        }
    }
    let c = match &cur.net_dev {
        Ok(c) => c,
        Err(e) => {
            b.missing_all(&IFACE_NAMES, e);
            return;
        }
    };
    let Ok(p) = &prev.net_dev else { return };
    for pr in &p.ifaces {
        if c.iface(&pr.iface).is_none() && !cur.ifaces_absent.contains(&pr.iface) {
            for metric in IFACE_NAMES {
                b.missing(
                    labeled(metric, LABEL_IFACE, &pr.iface),
                    format!("interface {} vanished or is no longer up", pr.iface),
                );
            }
        }
    }
    let native = CounterWidth::Native;
    for cr in &c.ifaces {
        let Some(pr) = p.iface(&cr.iface) else {
            continue;
        };
        let id = |name: &'static str| labeled(name, LABEL_IFACE, &cr.iface);
        let pairs = [
            (
                IFACE_RX_BITS_PER_S,
                Unit::BitsPerSecond,
                pr.rx_bytes,
                cr.rx_bytes,
                8.0,
            ),
            (
                IFACE_TX_BITS_PER_S,
                Unit::BitsPerSecond,
                pr.tx_bytes,
                cr.tx_bytes,
                8.0,
            ),
            (
                IFACE_RX_PPS,
                Unit::PacketsPerSecond,
                pr.rx_packets,
                cr.rx_packets,
                1.0,
            ),
            (
                IFACE_TX_PPS,
                Unit::PacketsPerSecond,
                pr.tx_packets,
                cr.tx_packets,
                1.0,
            ),
            (
                IFACE_RX_DROPPED_PER_S,
                Unit::PerSecond,
                pr.rx_dropped,
                cr.rx_dropped,
                1.0,
            ),
            (
                IFACE_TX_DROPPED_PER_S,
                Unit::PerSecond,
                pr.tx_dropped,
                cr.tx_dropped,
                1.0,
            ),
            (
                IFACE_RX_ERRORS_PER_S,
                Unit::PerSecond,
                pr.rx_errors,
                cr.rx_errors,
                1.0,
            ),
            (
                IFACE_TX_ERRORS_PER_S,
                Unit::PerSecond,
                pr.tx_errors,
                cr.tx_errors,
                1.0,
            ),
        ];
        for (name, unit, before, now, k) in pairs {
            b.rate(id(name), unit, before, now, native, k);
        }
    }
}

fn rx_missed_rates<'a>(
    b: &mut Builder<'a, '_>,
    prev: &'a SlowSnapshot,
    cur: &'a SlowSnapshot,
    fast: &'a Snapshot,
) {
    // Interfaces no longer selected or gone are reported by the fast tier.
    let Ok(nd) = &fast.net_dev else { return };
    for (name, now) in &cur.rx_missed {
        if nd.iface(name).is_none() {
            continue;
        }
        let id = labeled(IFACE_RX_MISSED_PER_S, LABEL_IFACE, name);
        match (prev.rx_missed.get(name), now) {
            (Some(Ok(before)), Ok(now)) => b.rate(
                id,
                Unit::PerSecond,
                *before,
                *now,
                CounterWidth::Native,
                1.0,
            ),
            (_, Err(e)) => b.missing(&id, e.to_string()),
            // New: starts at the next reading.
            (_, Ok(_)) => {}
        }
    }
}

const SOFTNET_NAMES: [&str; 6] = [
    SOFTNET_PROCESSED_PER_S,
    SOFTNET_DROPPED_PER_S,
    SOFTNET_TIME_SQUEEZE_PER_S,
    SOFTNET_RECEIVED_RPS_PER_S,
    SOFTNET_FLOW_LIMIT_PER_S,
    SOFTNET_BACKLOG_LEN,
];

fn softnet_rates(b: &mut Builder, prev: &Snapshot, cur: &Snapshot) {
    let c = match &cur.softnet {
        Ok(c) => c,
        Err(e) => {
            b.missing_all(&SOFTNET_NAMES, e);
            return;
        }
    };
    // The backlog length is a gauge: it needs no previous snapshot.
    if c.rows.iter().all(|r| r.backlog_len.is_some()) && !c.rows.is_empty() {
        let mut sum = 0u64;
        for r in &c.rows {
            let v = r.backlog_len.unwrap_or(0);
            sum += v;
            b.value(
                labeled(SOFTNET_BACKLOG_LEN, LABEL_CPU, r.cpu),
                Unit::Count,
                v as f64,
            );
        }
        b.value(Key::Plain(SOFTNET_BACKLOG_LEN), Unit::Count, sum as f64);
    } else {
        b.missing(
            SOFTNET_BACKLOG_LEN,
            "softnet_stat has no backlog column before kernel 5.10",
        );
    }
    let Ok(p) = &prev.softnet else { return };
    type Pick = fn(&crate::parse::softnet::SoftnetRow) -> Option<u64>;
    let columns: [(&str, Pick, &str); 5] = [
        (SOFTNET_PROCESSED_PER_S, |r| Some(r.processed), ""),
        (SOFTNET_DROPPED_PER_S, |r| Some(r.dropped), ""),
        (SOFTNET_TIME_SQUEEZE_PER_S, |r| Some(r.time_squeeze), ""),
        (
            SOFTNET_RECEIVED_RPS_PER_S,
            |r| r.received_rps,
            "softnet_stat has no received_rps column before kernel 2.6.36",
        ),
        (
            SOFTNET_FLOW_LIMIT_PER_S,
            |r| r.flow_limit_count,
            "softnet_stat has no flow_limit_count column before kernel 3.11",
        ),
    ];
    for (name, pick, absent) in columns {
        let mut total = Some(0u64);
        let mut seen = false;
        for cr in &c.rows {
            let Some(pr) = p.cpu(cr.cpu) else { continue };
            let (Some(before), Some(now)) = (pick(pr), pick(cr)) else {
                continue;
            };
            seen = true;
            let d = counter_delta(before, now, CounterWidth::U32);
            total = total.zip(d).map(|(t, d)| t + d);
            b.rate(
                labeled(name, LABEL_CPU, cr.cpu),
                Unit::PerSecond,
                before,
                now,
                CounterWidth::U32,
                1.0,
            );
        }
        if !seen {
            if !absent.is_empty() {
                b.missing(name, absent);
            }
            continue;
        }
        match total {
            Some(t) => b.value(Key::Plain(name), Unit::PerSecond, t as f64 / b.elapsed),
            None => b.missing(name, RESET_REASON),
        }
    }
    for pr in &p.rows {
        if c.cpu(pr.cpu).is_none() {
            b.missing(
                labeled(SOFTNET_PROCESSED_PER_S, LABEL_CPU, pr.cpu),
                format!("cpu{} went offline", pr.cpu),
            );
        }
    }
}

/// Which file a protocol counter comes from.
#[derive(Clone, Copy)]
enum ProtoFile {
    Snmp,
    Netstat,
}

const PROTO_METRICS: [(&str, ProtoFile, &[Counter]); 20] = [
    (
        IP_IN_RECEIVES_PER_S,
        ProtoFile::Snmp,
        &[Counter::IpInReceives],
    ),
    (
        IP_IN_DISCARDS_PER_S,
        ProtoFile::Snmp,
        &[Counter::IpInDiscards],
    ),
    (TCP_IN_SEGS_PER_S, ProtoFile::Snmp, &[Counter::TcpInSegs]),
    (TCP_OUT_SEGS_PER_S, ProtoFile::Snmp, &[Counter::TcpOutSegs]),
    (
        TCP_RETRANS_SEGS_PER_S,
        ProtoFile::Snmp,
        &[Counter::TcpRetransSegs],
    ),
    (
        UDP_IN_DATAGRAMS_PER_S,
        ProtoFile::Snmp,
        &[Counter::UdpInDatagrams],
    ),
    (
        UDP_OUT_DATAGRAMS_PER_S,
        ProtoFile::Snmp,
        &[Counter::UdpOutDatagrams],
    ),
    (UDP_NO_PORTS_PER_S, ProtoFile::Snmp, &[Counter::UdpNoPorts]),
    (
        UDP_IN_ERRORS_PER_S,
        ProtoFile::Snmp,
        &[Counter::UdpInErrors],
    ),
    (
        UDP_RCVBUF_ERRORS_PER_S,
        ProtoFile::Snmp,
        &[Counter::UdpRcvbufErrors],
    ),
    (
        UDP_SNDBUF_ERRORS_PER_S,
        ProtoFile::Snmp,
        &[Counter::UdpSndbufErrors],
    ),
    (
        TCP_LOST_RETRANSMIT_PER_S,
        ProtoFile::Netstat,
        &[Counter::TcpExtLostRetransmit],
    ),
    (
        TCP_FAST_RETRANS_PER_S,
        ProtoFile::Netstat,
        &[Counter::TcpExtFastRetrans],
    ),
    (
        TCP_TIMEOUTS_PER_S,
        ProtoFile::Netstat,
        &[Counter::TcpExtTimeouts],
    ),
    (
        TCP_DSACK_RECV_PER_S,
        ProtoFile::Netstat,
        &[Counter::TcpExtDsackRecv],
    ),
    (
        TCP_DSACK_SENT_PER_S,
        ProtoFile::Netstat,
        &[Counter::TcpExtDsackOldSent, Counter::TcpExtDsackOfoSent],
    ),
    (
        TCP_SACK_REORDER_PER_S,
        ProtoFile::Netstat,
        &[Counter::TcpExtSackReorder],
    ),
    (
        TCP_DELAYED_ACKS_PER_S,
        ProtoFile::Netstat,
        &[Counter::TcpExtDelayedAcks],
    ),
    (
        TCP_BACKLOG_DROP_PER_S,
        ProtoFile::Netstat,
        &[Counter::TcpExtBacklogDrop],
    ),
    (
        TCP_LISTEN_DROPS_PER_S,
        ProtoFile::Netstat,
        &[Counter::TcpExtListenDrops],
    ),
];

fn protocol_rates(b: &mut Builder, prev: &SlowSnapshot, cur: &SlowSnapshot) {
    for (name, file, counters) in PROTO_METRICS {
        let (p, c): (&Result<KnownCounters, _>, &Result<KnownCounters, _>) = match file {
            ProtoFile::Snmp => (&prev.snmp, &cur.snmp),
            ProtoFile::Netstat => (&prev.netstat, &cur.netstat),
        };
        let c = match c {
            Ok(c) => c,
            Err(e) => {
                b.missing(name, e.to_string());
                continue;
            }
        };
        let Ok(p) = p else { continue };
        let mut sum = Some(0u64);
        for &counter in counters {
            let (proto, field) = counter.key();
            let (Some(before), Some(now)) = (p.counter(counter), c.counter(counter)) else {
                b.missing(name, format!("no {proto} {field} counter on this kernel"));
                sum = None;
                break;
            };
            match counter_delta(before, now, CounterWidth::Native) {
                Some(d) => sum = sum.map(|s| s + d),
                None => {
                    b.missing(name, RESET_REASON);
                    sum = None;
                    break;
                }
            }
        }
        if let Some(s) = sum {
            b.value(Key::Plain(name), Unit::PerSecond, s as f64 / b.elapsed);
        }
    }
}

fn pressure_rates(b: &mut Builder, prev: &SlowSnapshot, cur: &SlowSnapshot) {
    let files = [
        (
            &prev.psi_cpu,
            &cur.psi_cpu,
            PSI_CPU_SOME_PCT,
            PSI_CPU_FULL_PCT,
        ),
        (&prev.psi_io, &cur.psi_io, PSI_IO_SOME_PCT, PSI_IO_FULL_PCT),
        (
            &prev.psi_memory,
            &cur.psi_memory,
            PSI_MEMORY_SOME_PCT,
            PSI_MEMORY_FULL_PCT,
        ),
    ];
    for (p, c, some_name, full_name) in files {
        let c = match c {
            Ok(c) => c,
            Err(e) => {
                b.missing_all(&[some_name, full_name], e);
                continue;
            }
        };
        let Ok(p) = p else { continue };
        // Stall microseconds per second of wall time, as a percentage.
        let k = 100.0 / 1e6;
        b.rate(
            Key::Plain(some_name),
            Unit::Percent,
            p.some.total_us,
            c.some.total_us,
            CounterWidth::Native,
            k,
        );
        match (p.full, c.full) {
            (Some(pf), Some(cf)) => b.rate(
                Key::Plain(full_name),
                Unit::Percent,
                pf.total_us,
                cf.total_us,
                CounterWidth::Native,
                k,
            ),
            _ => b.missing(
                full_name,
                "no 'full' line in this kernel's pressure file (cpu has one since 5.13)",
            ),
        }
    }
}

fn thread_rates<'a>(
    b: &mut Builder<'a, '_>,
    prev: &'a SlowSnapshot,
    cur: &'a SlowSnapshot,
    ticks_per_s: u64,
) {
    for (pid, e) in &cur.process_errors {
        b.missing(labeled(THREAD_CPU_PCT, LABEL_PID, *pid), e.to_string());
    }
    let thread_id = |name: &'static str, t: &'a crate::sampler::ThreadSample| Key::Thread {
        name,
        pid: t.pid,
        tid: t.tid,
        comm: &t.comm,
    };
    let prev_threads: BTreeMap<(i32, u32), &crate::sampler::ThreadSample> =
        prev.threads.iter().map(|t| ((t.pid, t.tid), t)).collect();
    let cur_keys: std::collections::BTreeSet<(i32, u32)> =
        cur.threads.iter().map(|t| (t.pid, t.tid)).collect();
    for t in &prev.threads {
        if !cur_keys.contains(&(t.pid, t.tid)) {
            b.missing(thread_id(THREAD_CPU_PCT, t), "thread exited");
        }
    }
    let tick_pct = 100.0 / ticks_per_s.max(1) as f64;
    let native = CounterWidth::Native;
    for t in &cur.threads {
        b.value(
            thread_id(THREAD_LAST_CPU, t),
            Unit::Count,
            f64::from(t.processor),
        );
        let Some(p) = prev_threads.get(&(t.pid, t.tid)) else {
            continue;
        };
        b.rate(
            thread_id(THREAD_USER_PCT, t),
            Unit::Percent,
            p.utime,
            t.utime,
            native,
            tick_pct,
        );
        b.rate(
            thread_id(THREAD_SYSTEM_PCT, t),
            Unit::Percent,
            p.stime,
            t.stime,
            native,
            tick_pct,
        );
        b.rate(
            thread_id(THREAD_CPU_PCT, t),
            Unit::Percent,
            p.utime.saturating_add(p.stime),
            t.utime.saturating_add(t.stime),
            native,
            tick_pct,
        );
        match (&p.io, &t.io) {
            (Ok(a), Ok(c)) => {
                b.rate(
                    thread_id(THREAD_SYSCALLS_PER_S, t),
                    Unit::PerSecond,
                    a.syscr.saturating_add(a.syscw),
                    c.syscr.saturating_add(c.syscw),
                    native,
                    1.0,
                );
                b.rate(
                    thread_id(THREAD_IO_BYTES_PER_S, t),
                    Unit::BytesPerSecond,
                    a.rchar.saturating_add(a.wchar),
                    c.rchar.saturating_add(c.wchar),
                    native,
                    1.0,
                );
            }
            (_, Err(e)) | (Err(e), _) => b.missing(thread_id(THREAD_SYSCALLS_PER_S, t), e.clone()),
        }
        let switches = [
            (THREAD_VOLUNTARY_CS_PER_S, p.voluntary_cs, t.voluntary_cs),
            (
                THREAD_NONVOLUNTARY_CS_PER_S,
                p.nonvoluntary_cs,
                t.nonvoluntary_cs,
            ),
        ];
        for (name, before, now) in switches {
            match (before, now) {
                (Some(before), Some(now)) => b.rate(
                    thread_id(name, t),
                    Unit::PerSecond,
                    before,
                    now,
                    native,
                    1.0,
                ),
                _ => b.missing(name, "no context switch counts in /proc/PID/status"),
            }
        }
    }
}

/// A qdisc's identity in a row: its counters are compared only with the same qdisc (same
/// namespace, interface index and handle) in the previous reading.
fn qdisc_id(name: &str, q: &crate::qdisc::QdiscStats) -> Key<'static> {
    let mut id = MetricId::new(name)
        .with(LABEL_IFACE, q.iface_name())
        .with(LABEL_QDISC, q.kind.clone())
        .with(LABEL_HANDLE, q.handle.clone());
    if let Some(ns) = &q.netns {
        id = id.with(LABEL_NETNS, ns.clone());
    }
    Key::Built(id)
}

/// Per-qdisc rates. The kernel keeps packets, drops, overlimits and requeues in 32 bits, bytes
/// in 64; a qdisc replaced under the same handle starts from zero, which reads as a reset.
fn qdisc_rates(b: &mut Builder, prev: &SlowSnapshot, cur: &SlowSnapshot) {
    let now = match &cur.qdiscs {
        Ok(q) => q,
        Err(e) => {
            b.missing(QDISC_BITS_PER_S, e.to_string());
            return;
        }
    };
    let before: BTreeMap<(Option<&str>, u32, &str), &crate::qdisc::QdiscStats> = prev
        .qdiscs
        .as_ref()
        .map(|v| {
            v.iter()
                .map(|q| ((q.netns.as_deref(), q.ifindex, q.handle.as_str()), q))
                .collect()
        })
        .unwrap_or_default();
    for q in now.iter().filter(|q| !q.is_passthrough()) {
        b.value(
            qdisc_id(QDISC_BACKLOG_BYTES, q),
            Unit::Bytes,
            q.backlog_bytes as f64,
        );
        if let Some(rate) = q.rate_bytes_per_s {
            b.value(
                qdisc_id(QDISC_RATE_BITS_PER_S, q),
                Unit::BitsPerSecond,
                rate as f64 * 8.0,
            );
        }
        let Some(p) = before.get(&(q.netns.as_deref(), q.ifindex, q.handle.as_str())) else {
            // New: rates start at the next reading.
            continue;
        };
        if p.kind != q.kind {
            b.missing(qdisc_id(QDISC_BITS_PER_S, q), "qdisc replaced");
            continue;
        }
        let (n, w) = (CounterWidth::Native, CounterWidth::U32);
        b.rate(
            qdisc_id(QDISC_BITS_PER_S, q),
            Unit::BitsPerSecond,
            p.bytes,
            q.bytes,
            n,
            8.0,
        );
        b.rate(
            qdisc_id(QDISC_PPS, q),
            Unit::PacketsPerSecond,
            p.packets,
            q.packets,
            w,
            1.0,
        );
        b.rate(
            qdisc_id(QDISC_DROPS_PER_S, q),
            Unit::PerSecond,
            p.drops,
            q.drops,
            w,
            1.0,
        );
        b.rate(
            qdisc_id(QDISC_OVERLIMITS_PER_S, q),
            Unit::PerSecond,
            p.overlimits,
            q.overlimits,
            w,
            1.0,
        );
        b.rate(
            qdisc_id(QDISC_REQUEUES_PER_S, q),
            Unit::PerSecond,
            p.requeues,
            q.requeues,
            w,
            1.0,
        );
    }
}

/// Interrupts per second by source (device, timer, IPI by kind), in total and per CPU for
/// devices, timers and IPIs. Rows are matched by label; a row new in this reading starts next
/// time, and a count that went backwards (an IRQ freed and re-requested) leaves its source
/// missing for the interval rather than spiking.
fn irq_source_rates(b: &mut Builder, prev: &SlowSnapshot, cur: &SlowSnapshot) {
    use crate::parse::interrupts::{IpiKind, IrqSource};
    let (Ok(p), Ok(c)) = (&prev.interrupts, &cur.interrupts) else {
        if let Err(e) = &cur.interrupts {
            b.missing_all(&[DEVICE_INTR_PER_S, TIMER_INTR_PER_S, IPI_PER_S], e);
        }
        return;
    };
    let prev_col: BTreeMap<u32, usize> = p.cpus.iter().enumerate().map(|(i, &c)| (c, i)).collect();
    // Per source, per CPU: the sum of deltas, None once a reset was seen.
    let mut sums: BTreeMap<(IrqSource, u32), Option<u64>> = BTreeMap::new();
    for row in &c.rows {
        // The one-count rows (ERR, MIS) are totals, not per CPU.
        if row.counts.len() != c.cpus.len() {
            continue;
        }
        let Some(before) = p.rows.iter().find(|r| r.label == row.label) else {
            continue;
        };
        let source = row.source();
        for (&cpu, &count) in c.cpus.iter().zip(&row.counts) {
            let Some(&old) = prev_col.get(&cpu).and_then(|&i| before.counts.get(i)) else {
                continue;
            };
            let d = counter_delta(old, count, CounterWidth::U32);
            let slot = sums.entry((source, cpu)).or_insert(Some(0));
            *slot = slot.zip(d).map(|(s, d)| s + d);
        }
    }
    let per_s = |v: u64, elapsed: f64| v as f64 / elapsed;
    let elapsed = b.elapsed;
    let emit = |b: &mut Builder, name: &'static str, pick: &dyn Fn(IrqSource) -> bool| {
        let mut total = Some(0u64);
        let mut per_cpu: BTreeMap<u32, Option<u64>> = BTreeMap::new();
        for (&(src, cpu), v) in &sums {
            if pick(src) {
                let slot = per_cpu.entry(cpu).or_insert(Some(0));
                *slot = slot.zip(*v).map(|(s, v)| s + v);
            }
        }
        for (cpu, v) in per_cpu {
            total = total.zip(v).map(|(t, v)| t + v);
            match v {
                Some(v) => b.value(
                    labeled(name, LABEL_CPU, cpu),
                    Unit::PerSecond,
                    per_s(v, elapsed),
                ),
                None => b.missing(labeled(name, LABEL_CPU, cpu), RESET_REASON),
            }
        }
        match total {
            Some(t) => b.value(Key::Plain(name), Unit::PerSecond, per_s(t, elapsed)),
            None => b.missing(name, RESET_REASON),
        }
    };
    emit(b, DEVICE_INTR_PER_S, &|s| s == IrqSource::Device);
    emit(b, TIMER_INTR_PER_S, &|s| s == IrqSource::Timer);
    emit(b, IPI_PER_S, &|s| matches!(s, IrqSource::Ipi(_)));
    for kind in [
        IpiKind::Reschedule,
        IpiKind::FunctionCall,
        IpiKind::Tlb,
        IpiKind::IrqWork,
        IpiKind::Other,
    ] {
        let mut total = Some(0u64);
        let mut seen = false;
        for (&(src, _), v) in &sums {
            if src == IrqSource::Ipi(kind) {
                seen = true;
                total = total.zip(*v).map(|(t, v)| t + v);
            }
        }
        if !seen {
            continue;
        }
        let id = labeled(IPI_PER_S, LABEL_KIND, kind.as_str());
        match total {
            Some(t) => b.value(id, Unit::PerSecond, per_s(t, elapsed)),
            None => b.missing(&id, RESET_REASON),
        }
    }
}

/// Processes recorded per scan, at most: the busiest, at or above [`PROC_CPU_MIN_PCT`].
pub const PROC_TOP: usize = 6;
/// A process below this share of one core is not worth a column.
pub const PROC_CPU_MIN_PCT: f64 = 5.0;

/// The busiest processes' CPU over the time between two process scans (rows between scans
/// carry none: a missing value, not a zero).
fn process_rates(b: &mut Builder, prev: &SlowSnapshot, cur: &SlowSnapshot, ticks_per_s: u64) {
    let (Some(p), Some(c)) = (&prev.processes, &cur.processes) else {
        return;
    };
    let elapsed = c.t.as_secs_f64() - p.t.as_secs_f64();
    if c.seq == p.seq || elapsed <= 0.0 {
        return;
    }
    let before: BTreeMap<u32, &crate::sampler::ProcessSample> =
        p.processes.iter().map(|s| (s.pid, s)).collect();
    let tick_pct = 100.0 / ticks_per_s.max(1) as f64;
    let mut busy: Vec<(&crate::sampler::ProcessSample, f64)> = c
        .processes
        .iter()
        .filter_map(|s| {
            let old = before.get(&s.pid)?;
            // A reused pid or a reset: skip rather than guess.
            let d = s.ticks.checked_sub(old.ticks)?;
            Some((s, d as f64 * tick_pct / elapsed))
        })
        .filter(|(_, pct)| *pct >= PROC_CPU_MIN_PCT)
        .collect();
    busy.sort_by(|a, b| b.1.total_cmp(&a.1));
    for (s, pct) in busy.into_iter().take(PROC_TOP) {
        let id = MetricId::new(PROC_CPU_PCT)
            .with(LABEL_PID, s.pid.to_string())
            .with(LABEL_COMM, s.comm.clone())
            .with(LABEL_CPU, s.processor.to_string())
            .with(LABEL_NICE, s.nice.to_string());
        let id = match s.role.label() {
            Some(role) => id.with(LABEL_ROLE, role),
            None => id,
        };
        b.value(Key::Built(id), Unit::Percent, pct);
    }
}

/// The reason a busiest flow of the previous interval has no values in this one.
pub const FLOW_CLOSED_REASON: &str =
    "socket closed (or left the established state) since the previous reading";

/// Why the sums over the workload's flows have no value.
pub const ALL_CLOSED_REASON: &str = "every TCP connection of the workload closed since the previous reading: what they moved in the interval cannot be read";

/// What the sums over the workload's flows leave out.
pub const SOME_CLOSED_REASON: &str = "connections that closed during an interval are not in that interval's sums (what they moved after the previous reading cannot be read)";

/// The metrics made over all the workload's flows.
const TCP_AGGREGATES: [&str; 9] = [
    TCP_FLOWS,
    TCP_BYTES_ACKED_PER_S,
    TCP_BYTES_RECEIVED_PER_S,
    TCP_RETRANS_PER_S,
    TCP_DELIVERY_RATE_BITS_PER_S,
    TCP_BUSY_PCT,
    TCP_RWND_LIMITED_PCT,
    TCP_SNDBUF_LIMITED_PCT,
    TCP_CWND_LIMITED_PCT,
];

/// A counter summed over flows: a flow whose counter went backwards makes the sum missing, and
/// so does a kernel that does not send the field.
#[derive(Debug, Default, Clone, Copy)]
struct FlowSum {
    sum: u64,
    /// Flows that gave a delta.
    flows: usize,
    reset: bool,
    absent: bool,
}

impl FlowSum {
    /// Adds one flow's delta, and returns it (`None`: absent, or went backwards).
    fn add(&mut self, prev: Option<u64>, cur: Option<u64>, w: CounterWidth) -> Option<u64> {
        let (Some(p), Some(c)) = (prev, cur) else {
            self.absent = true;
            return None;
        };
        let d = counter_delta(p, c, w);
        match d {
            Some(d) => {
                self.sum = self.sum.saturating_add(d);
                self.flows += 1;
            }
            None => self.reset = true,
        }
        d
    }

    /// The sum, or why there is none (`field` is the tcp_info field, for the reason).
    fn total(&self, field: &str) -> Result<u64, String> {
        if self.reset {
            Err(RESET_REASON.into())
        } else if self.absent && self.flows == 0 {
            Err(absent_reason(field))
        } else {
            Ok(self.sum)
        }
    }
}

fn absent_reason(field: &str) -> String {
    format!("this kernel's tcp_info has no {field}")
}

/// A share of busy time, %: `part` of `busy` µs.
fn busy_share(part: u64, busy: u64) -> f64 {
    100.0 * part as f64 / busy as f64
}

/// The workload's TCP flows (see [`crate::flows`]): each of the interval's busiest flows on
/// its own, and every flow measured at both readings summed. A flow new at this reading
/// counts in `tcp_flows` and gives rates from the next interval on; one that closed gives
/// none (its last bytes are not counted), and if it was among the previous interval's busiest
/// the reason is noted.
fn tcp_flow_rates<'a>(b: &mut Builder<'a, '_>, prev: &'a SlowSnapshot, cur: &'a SlowSnapshot) {
    let Some(c) = &cur.tcp_flows else { return };
    let c = match c {
        Ok(c) => c,
        Err(e) => {
            b.missing_all(&TCP_AGGREGATES, e);
            return;
        }
    };
    for note in &c.notes {
        b.missing(TCP_FLOWS, note.clone());
    }
    b.value(Key::Plain(TCP_FLOWS), Unit::Count, c.flows.len() as f64);
    let Some(Ok(p)) = &prev.tcp_flows else { return };
    closed_busiest(b, p, c);
    let elapsed = b.elapsed;
    let FlowSums {
        acked,
        received,
        retrans,
        busy,
        rwnd,
        sndbuf,
        delivery,
        delivery_absent,
        no_info,
        measured,
    } = FlowSums::over(p, c);
    if no_info {
        b.missing(TCP_FLOWS, "the kernel sent no tcp_info for some sockets");
    }
    let closed = p
        .flows
        .iter()
        .filter(|was| !c.flow(was.inode).is_some_and(|f| f.same_socket(was)))
        .count();
    if closed > 0 {
        if measured == 0 {
            // Nothing left to measure the interval by: not a zero.
            for name in &TCP_AGGREGATES[1..] {
                b.missing(name, ALL_CLOSED_REASON);
            }
            return;
        }
        for name in &TCP_AGGREGATES[1..5] {
            b.missing(name, SOME_CLOSED_REASON);
        }
    }
    let per_s = |b: &mut Builder<'a, '_>,
                 name: &'static str,
                 unit: Unit,
                 sum: &FlowSum,
                 field: &str,
                 k: f64| {
        match sum.total(field) {
            Ok(v) => b.value(Key::Plain(name), unit, v as f64 * k / elapsed),
            Err(why) => b.missing(name, why),
        }
    };
    per_s(
        b,
        TCP_BYTES_ACKED_PER_S,
        Unit::BytesPerSecond,
        &acked,
        "tcpi_bytes_acked",
        1.0,
    );
    per_s(
        b,
        TCP_BYTES_RECEIVED_PER_S,
        Unit::BytesPerSecond,
        &received,
        "tcpi_bytes_received",
        1.0,
    );
    per_s(
        b,
        TCP_RETRANS_PER_S,
        Unit::PerSecond,
        &retrans,
        "tcpi_total_retrans",
        1.0,
    );
    match (delivery, delivery_absent) {
        (_, true) => b.missing(
            TCP_DELIVERY_RATE_BITS_PER_S,
            absent_reason("tcpi_delivery_rate"),
        ),
        (d, false) => b.value(
            Key::Plain(TCP_DELIVERY_RATE_BITS_PER_S),
            Unit::BitsPerSecond,
            d.unwrap_or(0) as f64 * 8.0,
        ),
    }
    busy_shares(b, &busy, &rwnd, &sndbuf);
    for (inode, label) in &c.busiest {
        let Some(f) = c.flow(*inode) else { continue };
        let Some(was) = p.flow(*inode).filter(|was| f.same_socket(was)) else {
            continue;
        };
        flow_values(b, label, was, f);
    }
}

/// The previous interval's busiest flows that closed since: their busy time has no value.
fn closed_busiest<'a>(
    b: &mut Builder<'a, '_>,
    p: &'a crate::flows::TcpFlows,
    c: &crate::flows::TcpFlows,
) {
    for (inode, label) in &p.busiest {
        let Some(was) = p.flow(*inode) else { continue };
        if !c.flow(*inode).is_some_and(|f| f.same_socket(was)) {
            b.missing(
                Key::Flow {
                    name: TCP_BUSY_PCT,
                    flow: label,
                    pid: was.pid,
                },
                FLOW_CLOSED_REASON,
            );
        }
    }
}

/// The workload's flows measured at both readings, their counters summed.
#[derive(Default)]
struct FlowSums {
    acked: FlowSum,
    received: FlowSum,
    retrans: FlowSum,
    busy: FlowSum,
    rwnd: FlowSum,
    sndbuf: FlowSum,
    /// The delivery rates of the flows that delivered, summed, bytes/s.
    delivery: Option<u64>,
    /// A flow that delivered has no delivery rate (an older kernel).
    delivery_absent: bool,
    /// A socket came without tcp_info.
    no_info: bool,
    /// Flows with tcp_info at both readings.
    measured: usize,
}

impl FlowSums {
    fn over(p: &crate::flows::TcpFlows, c: &crate::flows::TcpFlows) -> FlowSums {
        let (n, w) = (CounterWidth::Native, CounterWidth::U32);
        let mut s = FlowSums::default();
        for f in &c.flows {
            let Some(was) = p.flow(f.inode).filter(|was| f.same_socket(was)) else {
                continue;
            };
            let (Some(pi), Some(ci)) = (&was.info, &f.info) else {
                s.no_info = true;
                continue;
            };
            s.measured += 1;
            let d_acked = s.acked.add(pi.bytes_acked, ci.bytes_acked, n);
            s.received.add(pi.bytes_received, ci.bytes_received, n);
            s.retrans.add(
                pi.total_retrans.map(u64::from),
                ci.total_retrans.map(u64::from),
                w,
            );
            // The three busy times only count together, so the shares add up.
            let all = |i: &crate::sockdiag::TcpInfo| {
                i.busy_time_us
                    .zip(i.rwnd_limited_us)
                    .zip(i.sndbuf_limited_us)
                    .map(|((a, b), c)| (a, b, c))
            };
            match (all(pi), all(ci)) {
                (Some((pb, pr, ps)), Some((cb, cr, cs))) => {
                    s.busy.add(Some(pb), Some(cb), n);
                    s.rwnd.add(Some(pr), Some(cr), n);
                    s.sndbuf.add(Some(ps), Some(cs), n);
                }
                _ => s.busy.absent = true,
            }
            if d_acked.is_some_and(|d| d > 0) {
                match ci.delivery_rate {
                    Some(r) => s.delivery = Some(s.delivery.unwrap_or(0).saturating_add(r)),
                    None => s.delivery_absent = true,
                }
            }
        }
        s
    }
}

/// The mean busy time of the flows and the shares of it limited by the receive window, the
/// send buffer and (the rest) the congestion window.
fn busy_shares(b: &mut Builder<'_, '_>, busy: &FlowSum, rwnd: &FlowSum, sndbuf: &FlowSum) {
    let busy_names = [
        TCP_BUSY_PCT,
        TCP_RWND_LIMITED_PCT,
        TCP_SNDBUF_LIMITED_PCT,
        TCP_CWND_LIMITED_PCT,
    ];
    let fields = "tcpi_busy_time, tcpi_rwnd_limited and tcpi_sndbuf_limited (kernels ≥ 4.10)";
    match (busy.total(fields), rwnd.total(fields), sndbuf.total(fields)) {
        (Ok(bt), Ok(rt), Ok(st)) if busy.flows > 0 => {
            let mean = 100.0 * bt as f64 / (busy.flows as f64 * b.elapsed * 1e6);
            b.value(Key::Plain(TCP_BUSY_PCT), Unit::Percent, mean.min(100.0));
            if bt > 0 {
                b.value(
                    Key::Plain(TCP_RWND_LIMITED_PCT),
                    Unit::Percent,
                    busy_share(rt, bt),
                );
                b.value(
                    Key::Plain(TCP_SNDBUF_LIMITED_PCT),
                    Unit::Percent,
                    busy_share(st, bt),
                );
                b.value(
                    Key::Plain(TCP_CWND_LIMITED_PCT),
                    Unit::Percent,
                    busy_share(bt.saturating_sub(rt).saturating_sub(st), bt),
                );
            } else {
                for name in &busy_names[1..] {
                    b.missing(name, NOT_BUSY_REASON);
                }
            }
        }
        (Ok(_), Ok(_), Ok(_)) => {
            for name in busy_names {
                b.missing(name, NO_FLOW_REASON);
            }
        }
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            for name in busy_names {
                b.missing(name, e.clone());
            }
        }
    }
}

/// Why the busy time of the workload's flows has no value.
pub const NO_FLOW_REASON: &str = "no TCP connection of the workload was measured at both readings";

/// Why the shares of busy time have no value.
const NOT_BUSY_REASON: &str =
    "no busy time in the interval (nothing waiting to be sent): no share of it to give";

/// One busiest flow's values: its gauges now and its rates since `was`.
fn flow_values<'a>(
    b: &mut Builder<'a, '_>,
    label: &'a str,
    was: &'a crate::flows::Flow,
    f: &'a crate::flows::Flow,
) {
    let key = |name: &'static str| Key::Flow {
        name,
        flow: label,
        pid: f.pid,
    };
    let (Some(pi), Some(ci)) = (&was.info, &f.info) else {
        b.missing(
            key(TCP_BUSY_PCT),
            "the kernel sent no tcp_info for this socket",
        );
        return;
    };
    flow_gauges(b, &key, ci, f);
    let (n, w) = (CounterWidth::Native, CounterWidth::U32);
    type Counter<'f> = (
        &'static str,
        Unit,
        Option<(u64, u64)>,
        CounterWidth,
        &'f str,
    );
    let counters: [Counter; 3] = [
        (
            TCP_BYTES_ACKED_PER_S,
            Unit::BytesPerSecond,
            pi.bytes_acked.zip(ci.bytes_acked),
            n,
            "tcpi_bytes_acked",
        ),
        (
            TCP_BYTES_RECEIVED_PER_S,
            Unit::BytesPerSecond,
            pi.bytes_received.zip(ci.bytes_received),
            n,
            "tcpi_bytes_received",
        ),
        (
            TCP_RETRANS_PER_S,
            Unit::PerSecond,
            pi.total_retrans
                .map(u64::from)
                .zip(ci.total_retrans.map(u64::from)),
            w,
            "tcpi_total_retrans",
        ),
    ];
    for (name, unit, pair, width, field) in counters {
        match pair {
            Some((p, c)) => b.rate(key(name), unit, p, c, width, 1.0),
            None => b.missing(name, absent_reason(field)),
        }
    }
    flow_busy(b, &key, pi, ci);
}

/// One flow's gauges now (absent fields are said once for the name).
fn flow_gauges<'a>(
    b: &mut Builder<'a, '_>,
    key: &dyn Fn(&'static str) -> Key<'a>,
    ci: &crate::sockdiag::TcpInfo,
    f: &crate::flows::Flow,
) {
    let in_flight = match (ci.unacked, ci.snd_mss) {
        (Some(u), Some(m)) => Some(f64::from(u) * f64::from(m)),
        _ => None,
    };
    let mem = f.mem.as_ref();
    let gauges: [(&'static str, Unit, Option<f64>, &str); 12] = [
        (
            TCP_CWND,
            Unit::Count,
            ci.snd_cwnd.map(f64::from),
            "tcpi_snd_cwnd",
        ),
        (
            TCP_RTT_US,
            Unit::Microseconds,
            ci.rtt_us.map(f64::from),
            "tcpi_rtt",
        ),
        (
            TCP_MIN_RTT_US,
            Unit::Microseconds,
            ci.min_rtt_us.map(f64::from),
            "tcpi_min_rtt (kernels ≥ 4.6)",
        ),
        (
            TCP_DELIVERY_RATE_BITS_PER_S,
            Unit::BitsPerSecond,
            ci.delivery_rate.map(|r| r as f64 * 8.0),
            "tcpi_delivery_rate (kernels ≥ 4.9)",
        ),
        (
            TCP_SND_WND_BYTES,
            Unit::Bytes,
            ci.snd_wnd.map(f64::from),
            "tcpi_snd_wnd (kernels ≥ 5.4)",
        ),
        (
            TCP_RCV_SPACE_BYTES,
            Unit::Bytes,
            ci.rcv_space.map(f64::from),
            "tcpi_rcv_space",
        ),
        (
            TCP_SND_MSS_BYTES,
            Unit::Bytes,
            ci.snd_mss.map(f64::from),
            "tcpi_snd_mss",
        ),
        (TCP_IN_FLIGHT_BYTES, Unit::Bytes, in_flight, "tcpi_unacked"),
        (
            TCP_SNDBUF_BYTES,
            Unit::Bytes,
            mem.map(|m| f64::from(m.sndbuf)),
            "INET_DIAG_SKMEMINFO",
        ),
        (
            TCP_SEND_QUEUE_BYTES,
            Unit::Bytes,
            mem.map(|m| f64::from(m.wmem_queued)),
            "INET_DIAG_SKMEMINFO",
        ),
        (
            TCP_RCVBUF_BYTES,
            Unit::Bytes,
            mem.map(|m| f64::from(m.rcvbuf)),
            "INET_DIAG_SKMEMINFO",
        ),
        (
            TCP_RECV_QUEUE_BYTES,
            Unit::Bytes,
            mem.map(|m| f64::from(m.rmem_alloc)),
            "INET_DIAG_SKMEMINFO",
        ),
    ];
    for (name, unit, v, field) in gauges {
        match v {
            Some(v) => b.value(key(name), unit, v),
            // Said once for the name: every flow of this kernel lacks it.
            None => b.missing(name, absent_reason(field)),
        }
    }
}

/// One flow's busy time over the interval, and the shares of it limited by the receive
/// window, the send buffer and (the rest) the congestion window.
fn flow_busy<'a>(
    b: &mut Builder<'a, '_>,
    key: &dyn Fn(&'static str) -> Key<'a>,
    pi: &crate::sockdiag::TcpInfo,
    ci: &crate::sockdiag::TcpInfo,
) {
    let n = CounterWidth::Native;
    let times = |i: &crate::sockdiag::TcpInfo| {
        Some((i.busy_time_us?, i.rwnd_limited_us?, i.sndbuf_limited_us?))
    };
    let Some(((pb, pr, ps), (cb, cr, cs))) = times(pi).zip(times(ci)) else {
        b.missing(
            TCP_BUSY_PCT,
            absent_reason(
                "tcpi_busy_time, tcpi_rwnd_limited and tcpi_sndbuf_limited (kernels ≥ 4.10)",
            ),
        );
        return;
    };
    let d = |a, z| counter_delta(a, z, n);
    let (Some(db), Some(dr), Some(ds)) = (d(pb, cb), d(pr, cr), d(ps, cs)) else {
        b.missing(key(TCP_BUSY_PCT), RESET_REASON);
        return;
    };
    // Busy time is counted in jiffies: a few ms over an interval can pass 100 %.
    let busy_pct = (100.0 * db as f64 / (b.elapsed * 1e6)).min(100.0);
    b.value(key(TCP_BUSY_PCT), Unit::Percent, busy_pct);
    if db == 0 {
        for name in [
            TCP_RWND_LIMITED_PCT,
            TCP_SNDBUF_LIMITED_PCT,
            TCP_CWND_LIMITED_PCT,
        ] {
            b.missing(name, NOT_BUSY_REASON);
        }
        return;
    }
    b.value(key(TCP_RWND_LIMITED_PCT), Unit::Percent, busy_share(dr, db));
    b.value(
        key(TCP_SNDBUF_LIMITED_PCT),
        Unit::Percent,
        busy_share(ds, db),
    );
    b.value(
        key(TCP_CWND_LIMITED_PCT),
        Unit::Percent,
        busy_share(db.saturating_sub(dr).saturating_sub(ds), db),
    );
}
