//! /proc snapshots as found in sosreports and support tickets: `/proc/interrupts`,
//! `/proc/softirqs`, `/proc/net/softnet_stat`, `/proc/net/snmp`, `/proc/net/netstat` and
//! `/proc/net/dev`. The file is recognised by its content and parsed by netceil-probe's own
//! parsers ([`netceil_probe::parse`]), so a capture is read exactly as the live sampler reads.
//!
//! # One snapshot
//!
//! Counters since boot are not rates, so a single snapshot becomes a series marked as such:
//! `interval_s = 0`, one row at `t_s = 0`, and `_total` metrics ([`Unit::Count`]) holding the
//! counts since boot: `nic_irq_total{cpu}` (NIC queue interrupts per CPU) and
//! `nic_irq_total{irq,iface|device,queue,dir}` (per queue), `softirq_net_rx_total{cpu}`,
//! `softirq_net_tx_total{cpu}`, `softnet_{processed,dropped,time_squeeze,received_rps,
//! flow_limit}_total{cpu}` (each also unlabeled, summed over CPUs), `softnet_backlog_len{cpu}`,
//! `snmp_counter_total{proto,counter}` for every /proc/net/snmp or netstat value, and
//! `net_dev_counter_total{iface,counter}` for every /proc/net/dev column. The facts a single
//! snapshot can still tell go into the Run's notes: how NIC queue interrupts and NET_RX are
//! spread over CPUs (all on one CPU is a finding), softnet drops and time_squeeze totals, and
//! drop and error counters. Interrupts other than NIC queues, and softirq kinds other than
//! NET_RX and NET_TX, are not kept: netceil has no metric for them.
//!
//! # Two or more snapshots
//!
//! Snapshots of one file in one text are told apart by a blank line, a separator line (`----`,
//! `====`), a timestamp line, or the file's header appearing again (`CPU0 CPU1 …`,
//! `Inter-|`, `Ip: Forwarding …`). Consecutive snapshots give one row of rates each, under the
//! sampler's names (`nic_irq_per_s`, `irq_per_s`, `softirq_net_rx_per_s`,
//! `softnet_dropped_per_s`, `iface_rx_bits_per_s`, `tcp_retrans_segs_per_s`…, and
//! `snmp_counter_per_s` / `net_dev_counter_per_s` for everything else). Deltas use the probe's
//! wrap-aware [`counter_delta`]; a counter that went backwards gives a missing value, never a
//! spike. The time base is, in this order: timestamps before each snapshot (`date +%s.%N`,
//! ISO 8601, or `date`'s default `Sat Nov 21 23:59:49 UTC 2026`), or
//! `ImportOptions::interval_s`; the notes say which. Without either, the last snapshot is
//! imported as a single one, and the differences are given in the notes as counts.
//!
//! # What cannot be true
//!
//! Marked in `run.meta.implausible` with its line (see `formats/plausible.rs`): a CPU named
//! twice in a `CPU0 CPU1 …` header; an IRQ, softirq or interface listed twice in one snapshot;
//! softnet_stat CPUs out of order in one snapshot, or a CPU that comes again under one
//! timestamp; a timestamp earlier than the one before; and a counter since boot that is lower
//! than in the snapshot before, other than by a 32- or 64-bit wrap (one fact per pair of
//! snapshots, naming the counters).

use std::collections::BTreeMap;

use netceil_model::names::*;
use netceil_model::{MetricId, Run, Unit};
use netceil_probe::parse::interrupts::{
    nic_queue, Interrupts, NicQueue, QueueDirection, QueueOwner,
};
use netceil_probe::parse::net_dev::NetDev;
use netceil_probe::parse::snmp::SnmpCounters;
use netceil_probe::parse::softirqs::Softirqs;
use netceil_probe::parse::softnet::SoftnetStat;
use netceil_probe::parse::{interrupts, net_dev, netstat, snmp, softirqs, softnet};
use netceil_probe::{counter_delta, CounterWidth, ParseError};

use super::common::{cut_mid_line, error, file, finish, new_run, plural};
use super::plausible::{
    check_header_cpus, time_backwards, went_backwards, Check, Checks, KeyBlocks,
};
use super::stamp::{timestamp, watch_banner};
use crate::{ImportError, ImportOptions, Imported};

/// The name of this format for `--format`.
pub const NAME: &str = "proc";

/// Label key of an SNMP protocol table (`Udp`, `TcpExt`).
pub const LABEL_PROTO: &str = "proto";
/// Label key of a counter's name as the file prints it.
pub const LABEL_COUNTER: &str = "counter";

/// Which /proc file a text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Interrupts,
    Softirqs,
    Softnet,
    Snmp,
    Netstat,
    NetDev,
}

impl Kind {
    /// The file's path.
    pub fn path(self) -> &'static str {
        match self {
            Kind::Interrupts => interrupts::SOURCE,
            Kind::Softirqs => softirqs::SOURCE,
            Kind::Softnet => softnet::SOURCE,
            Kind::Snmp => snmp::SOURCE,
            Kind::Netstat => netstat::SOURCE,
            Kind::NetDev => net_dev::SOURCE,
        }
    }
}

/// Lines that are not data: comments, shell commands, `==> file <==` banners.
fn is_comment(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with('#') || t.starts_with("$ ") || t.starts_with("==>")
}

fn is_cpu_header(line: &str) -> bool {
    let mut words = line.split_whitespace().peekable();
    words.peek().is_some()
        && words.all(|w| {
            w.strip_prefix("CPU")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
}

fn is_hex_row(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.len() >= softnet::MIN_COLUMNS
        && words
            .iter()
            .all(|w| w.len() == 8 && w.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The first data line and which file it starts.
fn kind_of(text: &str) -> Result<Kind, String> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| {
        !l.trim().is_empty()
            && !is_comment(l)
            && timestamp(l).is_none()
            && watch_banner(l).is_none()
            && !is_separator(l)
    });
    let Some((i, first)) = lines.next() else {
        return Err("no data lines".into());
    };
    let t = first.trim();
    if is_cpu_header(t) {
        // softirqs rows are named; interrupts has numbered ones.
        for (_, l) in lines.take(12) {
            let label = l.split_whitespace().next().unwrap_or("");
            let label = label.strip_suffix(':').unwrap_or(label);
            if label.bytes().all(|b| b.is_ascii_digit()) && !label.is_empty() {
                return Ok(Kind::Interrupts);
            }
            if softirqs::KINDS.contains(&label) {
                return Ok(Kind::Softirqs);
            }
        }
        return Ok(Kind::Interrupts);
    }
    if t.starts_with("Inter-|") || (t.contains('|') && t.contains("Receive")) {
        return Ok(Kind::NetDev);
    }
    let first_word = t.split_whitespace().next().unwrap_or("");
    if matches!(
        first_word,
        "Ip:" | "Icmp:" | "IcmpMsg:" | "Tcp:" | "Udp:" | "UdpLite:"
    ) {
        return Ok(Kind::Snmp);
    }
    if matches!(
        first_word,
        "TcpExt:" | "IpExt:" | "MPTcpExt:" | "TcpExtTcp:"
    ) {
        return Ok(Kind::Netstat);
    }
    if is_hex_row(t) {
        return Ok(Kind::Softnet);
    }
    Err(format!(
        "line {} is '{}': not the start of /proc/interrupts or /proc/softirqs ('CPU0 CPU1 …'), /proc/net/softnet_stat (hex columns), /proc/net/snmp ('Ip: …'), /proc/net/netstat ('TcpExt: …') or /proc/net/dev ('Inter-|')",
        i + 1,
        t.chars().take(60).collect::<String>()
    ))
}

/// Says why a text is not a /proc snapshot.
pub fn sniff(text: &str) -> Result<(), String> {
    kind_of(text).map(|_| ())
}

fn is_separator(line: &str) -> bool {
    let t = line.trim();
    t.len() >= 3 && t.chars().all(|c| matches!(c, '-' | '=' | '*' | '~' | ' '))
}

/// One snapshot's text: where it starts, its lines, and the timestamp before it.
struct Segment {
    /// 0-based index of the first line in the whole text.
    first_line: usize,
    text: String,
    lines: usize,
    time: Option<f64>,
    /// The 1-based line of the timestamp or banner that gave `time`.
    time_line: Option<usize>,
    /// For a softnet_stat snapshot that began because a CPU came again without a separator:
    /// the CPU, and where the snapshot before began.
    cpu_again: Option<(String, usize)>,
}

/// Whether a line starts the file again (its header).
fn starts_file(kind: Kind, line: &str, first_word: &str) -> bool {
    let t = line.trim();
    match kind {
        Kind::Interrupts | Kind::Softirqs => is_cpu_header(t),
        Kind::NetDev => t.starts_with("Inter-|"),
        Kind::Snmp | Kind::Netstat => {
            let mut w = t.split_whitespace();
            w.next() == Some(first_word) && w.next().is_some_and(|x| x.parse::<i64>().is_err())
        }
        Kind::Softnet => false,
    }
}

/// The snapshots of a text, and the interval of the `watch` banners above them, if any.
fn split(text: &str, kind: Kind) -> (Vec<Segment>, Option<f64>) {
    let mut segments: Vec<Segment> = Vec::new();
    let mut watch_interval = None;
    let mut cur: Option<Segment> = None;
    let mut pending_time = None;
    let mut pending_line = None;
    let mut first_word = None;
    let mut softnet_cpus: Vec<String> = Vec::new();
    let flush = |cur: &mut Option<Segment>, segments: &mut Vec<Segment>| {
        if let Some(s) = cur.take() {
            if s.lines > 0 {
                segments.push(s);
            }
        }
    };
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || is_separator(line) || is_comment(line) {
            // Blank and separator lines end a snapshot; comments only interrupt it.
            if !is_comment(line) {
                flush(&mut cur, &mut segments);
            }
            continue;
        }
        if let Some(b) = watch_banner(line) {
            flush(&mut cur, &mut segments);
            pending_time = b.time;
            pending_line = Some(i + 1);
            watch_interval = watch_interval.or(b.interval_s);
            continue;
        }
        if let Some(t) = timestamp(line) {
            flush(&mut cur, &mut segments);
            pending_time = Some(t);
            pending_line = Some(i + 1);
            continue;
        }
        let fw = *first_word.get_or_insert_with(|| line.split_whitespace().next().unwrap_or(""));
        // softnet_stat has no header, but since 5.10 each row names its CPU: a CPU seen
        // again starts the next snapshot.
        let softnet_cpu = (kind == Kind::Softnet)
            .then(|| line.split_whitespace().nth(12))
            .flatten()
            .map(str::to_string);
        let cpu_again = softnet_cpu
            .as_ref()
            .is_some_and(|c| softnet_cpus.contains(c));
        let mut again = None;
        if cur.as_ref().is_some_and(|c| c.lines > 0) && (starts_file(kind, line, fw) || cpu_again) {
            if cpu_again {
                again = cur
                    .as_ref()
                    .zip(softnet_cpu.clone())
                    .map(|(c, cpu)| (cpu, c.first_line + 1));
            }
            flush(&mut cur, &mut segments);
        }
        if cur.is_none() {
            softnet_cpus.clear();
        }
        softnet_cpus.extend(softnet_cpu);
        let seg = cur.get_or_insert_with(|| Segment {
            first_line: i,
            text: String::new(),
            lines: 0,
            time: pending_time.take(),
            time_line: pending_line.take(),
            cpu_again: again,
        });
        // Keep line numbers: blank lines for what lies between the segment's start and here.
        let have = seg.first_line + seg.lines;
        for _ in have..i {
            seg.text.push('\n');
            seg.lines += 1;
        }
        seg.text.push_str(line);
        seg.text.push('\n');
        seg.lines += 1;
    }
    flush(&mut cur, &mut segments);
    (segments, watch_interval)
}

/// The time between consecutive snapshots, and where it came from, or `None` when the text
/// gives none: the timestamps before the snapshots, the `watch` banners' interval, or the
/// person's `--interval`.
///
/// `date` and `watch` stamp to the second. A step read from such stamps is off by up to a
/// second, which at a one-second period is a factor of two in every rate. When all stamps are
/// whole seconds and every step lies within a second of the mean step, the snapshots came from
/// a periodic sampler: each step is taken as the mean over the whole span (or, with only two
/// snapshots, as `watch`'s own interval when it is consistent with the stamps).
fn time_base(
    count: usize,
    times: Option<Vec<f64>>,
    watch_interval: Option<f64>,
    interval: Option<f64>,
) -> Option<(Vec<f64>, String)> {
    if count < 2 {
        return None;
    }
    let steps = count - 1;
    if let Some(ts) = times.filter(|ts| ts.windows(2).all(|w| w[1] > w[0])) {
        let gaps: Vec<f64> = ts.windows(2).map(|w| w[1] - w[0]).collect();
        let coarse = ts.iter().all(|t| t.fract() == 0.0);
        let mean = (ts[ts.len() - 1] - ts[0]) / steps as f64;
        if coarse && steps == 1 {
            if let Some(w) = watch_interval.filter(|w| (w - mean).abs() <= 1.0) {
                return Some((
                    vec![w],
                    format!("watch's interval ({w} s): its one-second stamps say {mean} s, which is within their resolution"),
                ));
            }
        } else if coarse
            && gaps.iter().any(|g| (g - mean).abs() > 1e-9)
            && gaps.iter().all(|g| (g - mean).abs() <= 1.0)
        {
            return Some((
                vec![mean; steps],
                format!("the mean step of the timestamps ({mean:.3} s over {steps} steps): they have one-second resolution, so a single step is off by up to a second"),
            ));
        }
        return Some((gaps, "the timestamps before each snapshot".into()));
    }
    if let Some(w) = watch_interval {
        return Some((
            vec![w; steps],
            format!("watch's interval ({w} s; its banners carry no usable time)"),
        ));
    }
    interval.map(|i| {
        (
            vec![i; steps],
            "--interval (the text has no usable timestamps)".into(),
        )
    })
}

/// A parsed snapshot.
enum Parsed {
    Interrupts(Interrupts),
    Softirqs(Softirqs),
    Softnet(SoftnetStat),
    Snmp(SnmpCounters),
    NetDev(NetDev),
}

fn parse(kind: Kind, text: &str) -> Result<Parsed, ParseError> {
    Ok(match kind {
        Kind::Interrupts => Parsed::Interrupts(interrupts::parse(text)?),
        Kind::Softirqs => Parsed::Softirqs(softirqs::parse(text)?),
        Kind::Softnet => Parsed::Softnet(softnet::parse(text)?),
        Kind::Snmp => Parsed::Snmp(snmp::parse(text)?),
        Kind::Netstat => Parsed::Snmp(netstat::parse(text)?),
        Kind::NetDev => Parsed::NetDev(net_dev::parse(text)?),
    })
}

fn import_error(opts: &ImportOptions, e: &ParseError) -> ImportError {
    ImportError::new(
        file(opts),
        e.line,
        e.field,
        format!("{} (as in {})", e.expected, e.source),
        &e.found.to_string(),
    )
}

/// The value of one counter in a snapshot, and the metrics it adds into.
struct Leaf {
    /// Identity across snapshots (`irq38/cpu3`, `Udp/InErrors`).
    key: String,
    value: LeafValue,
    targets: Vec<Target>,
}

#[derive(Clone, Copy)]
enum LeafValue {
    Counter(u64, CounterWidth),
    Gauge(f64),
}

/// Where a leaf's value goes: a since-boot total (one snapshot) and a rate (two), each
/// summed over the leaves that share it.
struct Target {
    total: Option<MetricId>,
    /// The rate metric, its unit and the factor from count per second (8 for bytes → bits).
    rate: Option<(MetricId, Unit, f64)>,
}

fn target(total: Option<MetricId>, rate: Option<(MetricId, Unit, f64)>) -> Target {
    Target { total, rate }
}

fn cpu_id(name: &str, cpu: u32) -> MetricId {
    MetricId::new(name).with(LABEL_CPU, cpu.to_string())
}

/// A NIC queue behind an interrupt's device names, including bare interface names
/// (`eth0`, one vector for the whole NIC) that the probe leaves to its caller.
fn nic_of(devices: &[String]) -> Option<NicQueue> {
    devices.iter().find_map(|d| {
        nic_queue(d).or_else(|| {
            let iface_like = ["eth", "en", "wl", "em"].iter().any(|p| d.starts_with(p))
                && d.len() <= 15
                && d.bytes().all(|b| b.is_ascii_alphanumeric())
                && d.bytes().any(|b| b.is_ascii_digit());
            iface_like.then(|| NicQueue {
                owner: QueueOwner::Iface(d.clone()),
                queue: None,
                direction: QueueDirection::RxTx,
            })
        })
    })
}

/// The NIC queue interrupts of a snapshot. A bare interface name counts only when that
/// interface has no queue vectors (igb's `eth0` beside `eth0-TxRx-0…` is its link vector).
fn nic_rows(ints: &Interrupts) -> Vec<(u32, &netceil_probe::parse::interrupts::IrqRow, NicQueue)> {
    let found: Vec<_> = ints
        .rows
        .iter()
        .filter_map(|r| Some((r.irq()?, r, nic_of(&r.devices)?)))
        .collect();
    let queued: Vec<QueueOwner> = found
        .iter()
        .filter(|(_, _, q)| q.queue.is_some())
        .map(|(_, _, q)| q.owner.clone())
        .collect();
    found
        .into_iter()
        .filter(|(_, _, q)| q.queue.is_some() || !queued.contains(&q.owner))
        .collect()
}

fn queue_labels(mut id: MetricId, irq: u32, q: &NicQueue) -> MetricId {
    id = id.with(LABEL_IRQ, irq.to_string());
    id = match &q.owner {
        QueueOwner::Iface(i) => id.with(LABEL_IFACE, i.clone()),
        QueueOwner::Pci(a) => id.with(LABEL_DEVICE, a.clone()),
        QueueOwner::Virtio(n) => id.with(LABEL_DEVICE, format!("virtio{n}")),
        QueueOwner::Driver(d) => id.with(LABEL_DEVICE, d.clone()),
    };
    if let Some(n) = q.queue {
        id = id.with(LABEL_QUEUE, n.to_string());
    }
    id.with(LABEL_DIR, q.direction.as_str())
}

const SNMP_RATES: [(&str, &str, &str); 21] = [
    ("Ip", "InReceives", IP_IN_RECEIVES_PER_S),
    ("Ip", "InDiscards", IP_IN_DISCARDS_PER_S),
    ("Tcp", "InSegs", TCP_IN_SEGS_PER_S),
    ("Tcp", "OutSegs", TCP_OUT_SEGS_PER_S),
    ("Tcp", "RetransSegs", TCP_RETRANS_SEGS_PER_S),
    ("Udp", "InDatagrams", UDP_IN_DATAGRAMS_PER_S),
    ("Udp", "OutDatagrams", UDP_OUT_DATAGRAMS_PER_S),
    ("Udp", "NoPorts", UDP_NO_PORTS_PER_S),
    ("Udp", "InErrors", UDP_IN_ERRORS_PER_S),
    ("Udp", "RcvbufErrors", UDP_RCVBUF_ERRORS_PER_S),
    ("Udp", "SndbufErrors", UDP_SNDBUF_ERRORS_PER_S),
    ("TcpExt", "TCPLostRetransmit", TCP_LOST_RETRANSMIT_PER_S),
    ("TcpExt", "TCPFastRetrans", TCP_FAST_RETRANS_PER_S),
    ("TcpExt", "TCPTimeouts", TCP_TIMEOUTS_PER_S),
    ("TcpExt", "TCPDSACKRecv", TCP_DSACK_RECV_PER_S),
    ("TcpExt", "TCPDSACKOldSent", TCP_DSACK_SENT_PER_S),
    ("TcpExt", "TCPDSACKOfoSent", TCP_DSACK_SENT_PER_S),
    ("TcpExt", "TCPSACKReorder", TCP_SACK_REORDER_PER_S),
    ("TcpExt", "DelayedACKs", TCP_DELAYED_ACKS_PER_S),
    ("TcpExt", "TCPBacklogDrop", TCP_BACKLOG_DROP_PER_S),
    ("TcpExt", "ListenDrops", TCP_LISTEN_DROPS_PER_S),
];

/// Values that are settings or gauges, not counters.
const SNMP_GAUGES: [(&str, &str); 7] = [
    ("Ip", "Forwarding"),
    ("Ip", "DefaultTTL"),
    ("Tcp", "RtoAlgorithm"),
    ("Tcp", "RtoMin"),
    ("Tcp", "RtoMax"),
    ("Tcp", "MaxConn"),
    ("Tcp", "CurrEstab"),
];

const NET_DEV_COUNTERS: [&str; 16] = [
    "rx_bytes",
    "rx_packets",
    "rx_errors",
    "rx_dropped",
    "rx_fifo",
    "rx_frame",
    "rx_compressed",
    "rx_multicast",
    "tx_bytes",
    "tx_packets",
    "tx_errors",
    "tx_dropped",
    "tx_fifo",
    "tx_collisions",
    "tx_carrier",
    "tx_compressed",
];

/// The values of a parsed snapshot, each with the metrics it feeds.
fn leaves(p: &Parsed) -> Vec<Leaf> {
    match p {
        Parsed::Interrupts(ints) => interrupt_leaves(ints),
        Parsed::Softirqs(s) => softirq_leaves(s),
        Parsed::Softnet(s) => softnet_leaves(s),
        Parsed::Snmp(c) => snmp_leaves(c),
        Parsed::NetDev(d) => net_dev_leaves(d),
    }
}

/// Each NIC queue's interrupts on each CPU: per CPU, per queue and in total.
fn interrupt_leaves(ints: &Interrupts) -> Vec<Leaf> {
    let mut out = Vec::new();
    for (irq, row, q) in nic_rows(ints) {
        for (&cpu, &count) in ints.cpus.iter().zip(&row.counts) {
            out.push(Leaf {
                key: format!("irq{irq}/cpu{cpu}"),
                value: LeafValue::Counter(count, CounterWidth::U32),
                targets: vec![
                    target(
                        Some(cpu_id(NIC_IRQ_TOTAL, cpu)),
                        Some((cpu_id(NIC_IRQ_PER_S, cpu), Unit::PerSecond, 1.0)),
                    ),
                    target(
                        Some(queue_labels(MetricId::new(NIC_IRQ_TOTAL), irq, &q)),
                        Some((
                            queue_labels(MetricId::new(IRQ_PER_S), irq, &q),
                            Unit::PerSecond,
                            1.0,
                        )),
                    ),
                    target(
                        Some(MetricId::new(NIC_IRQ_TOTAL)),
                        Some((MetricId::new(NIC_IRQ_PER_S), Unit::PerSecond, 1.0)),
                    ),
                ],
            });
        }
    }
    out
}

/// NET_RX and NET_TX softirqs on each CPU: per CPU and in total.
fn softirq_leaves(s: &Softirqs) -> Vec<Leaf> {
    let mut out = Vec::new();
    for (kind, total, rate) in [
        ("NET_RX", SOFTIRQ_NET_RX_TOTAL, SOFTIRQ_NET_RX_PER_S),
        ("NET_TX", SOFTIRQ_NET_TX_TOTAL, SOFTIRQ_NET_TX_PER_S),
    ] {
        for (cpu, count) in s.per_cpu(kind) {
            out.push(Leaf {
                key: format!("{kind}/cpu{cpu}"),
                value: LeafValue::Counter(count, CounterWidth::U32),
                targets: vec![
                    target(
                        Some(cpu_id(total, cpu)),
                        Some((cpu_id(rate, cpu), Unit::PerSecond, 1.0)),
                    ),
                    target(
                        Some(MetricId::new(total)),
                        Some((MetricId::new(rate), Unit::PerSecond, 1.0)),
                    ),
                ],
            });
        }
    }
    out
}

/// softnet_stat's counters on each CPU (per CPU and in total), and its backlog gauge.
fn softnet_leaves(s: &SoftnetStat) -> Vec<Leaf> {
    let mut out = Vec::new();
    for r in &s.rows {
        let cols = [
            (
                "processed",
                Some(r.processed),
                SOFTNET_PROCESSED_TOTAL,
                SOFTNET_PROCESSED_PER_S,
            ),
            (
                "dropped",
                Some(r.dropped),
                SOFTNET_DROPPED_TOTAL,
                SOFTNET_DROPPED_PER_S,
            ),
            (
                "time_squeeze",
                Some(r.time_squeeze),
                SOFTNET_TIME_SQUEEZE_TOTAL,
                SOFTNET_TIME_SQUEEZE_PER_S,
            ),
            (
                "received_rps",
                r.received_rps,
                SOFTNET_RECEIVED_RPS_TOTAL,
                SOFTNET_RECEIVED_RPS_PER_S,
            ),
            (
                "flow_limit",
                r.flow_limit_count,
                SOFTNET_FLOW_LIMIT_TOTAL,
                SOFTNET_FLOW_LIMIT_PER_S,
            ),
        ];
        for (what, value, total, rate) in cols {
            let Some(v) = value else { continue };
            out.push(Leaf {
                key: format!("{what}/cpu{}", r.cpu),
                value: LeafValue::Counter(v, CounterWidth::U32),
                targets: vec![
                    target(
                        Some(cpu_id(total, r.cpu)),
                        Some((cpu_id(rate, r.cpu), Unit::PerSecond, 1.0)),
                    ),
                    target(
                        Some(MetricId::new(total)),
                        Some((MetricId::new(rate), Unit::PerSecond, 1.0)),
                    ),
                ],
            });
        }
        if let Some(b) = r.backlog_len {
            let id = cpu_id(SOFTNET_BACKLOG_LEN, r.cpu);
            out.push(Leaf {
                key: format!("backlog/cpu{}", r.cpu),
                value: LeafValue::Gauge(b as f64),
                targets: vec![target(Some(id.clone()), Some((id, Unit::Count, 1.0)))],
            });
        }
    }
    out
}

/// Every SNMP counter (a gauge for settings and negative values), and the named rates.
fn snmp_leaves(c: &SnmpCounters) -> Vec<Leaf> {
    let mut out = Vec::new();
    for t in &c.tables {
        for (name, &v) in t.names.iter().zip(&t.values) {
            let total = MetricId::new(SNMP_COUNTER_TOTAL)
                .with(LABEL_PROTO, t.proto.clone())
                .with(LABEL_COUNTER, name.clone());
            let gauge = v < 0 || SNMP_GAUGES.contains(&(t.proto.as_str(), name.as_str()));
            let mut targets = Vec::new();
            if gauge {
                targets.push(target(Some(total), None));
            } else {
                let rate = MetricId::new(SNMP_COUNTER_PER_S)
                    .with(LABEL_PROTO, t.proto.clone())
                    .with(LABEL_COUNTER, name.clone());
                targets.push(target(Some(total), Some((rate, Unit::PerSecond, 1.0))));
                for (proto, counter, metric) in SNMP_RATES {
                    if proto == t.proto && counter == name {
                        targets.push(target(
                            None,
                            Some((MetricId::new(metric), Unit::PerSecond, 1.0)),
                        ));
                    }
                }
            }
            out.push(Leaf {
                key: format!("{}/{name}", t.proto),
                value: if gauge {
                    LeafValue::Gauge(v as f64)
                } else {
                    LeafValue::Counter(v.unsigned_abs(), CounterWidth::Native)
                },
                targets,
            });
        }
    }
    out
}

/// Every interface counter, and the named interface rates.
fn net_dev_leaves(d: &NetDev) -> Vec<Leaf> {
    let mut out = Vec::new();
    for r in &d.ifaces {
        let values = [
            r.rx_bytes,
            r.rx_packets,
            r.rx_errors,
            r.rx_dropped,
            r.rx_fifo,
            r.rx_frame,
            r.rx_compressed,
            r.rx_multicast,
            r.tx_bytes,
            r.tx_packets,
            r.tx_errors,
            r.tx_dropped,
            r.tx_fifo,
            r.tx_collisions,
            r.tx_carrier,
            r.tx_compressed,
        ];
        for (counter, v) in NET_DEV_COUNTERS.iter().zip(values) {
            let iface = |name: &str| MetricId::new(name).with(LABEL_IFACE, r.iface.clone());
            let mut targets = vec![target(
                Some(iface(NET_DEV_COUNTER_TOTAL).with(LABEL_COUNTER, *counter)),
                Some((
                    iface(NET_DEV_COUNTER_PER_S).with(LABEL_COUNTER, *counter),
                    Unit::PerSecond,
                    1.0,
                )),
            )];
            let named = match *counter {
                "rx_bytes" => Some((IFACE_RX_BITS_PER_S, Unit::BitsPerSecond, 8.0)),
                "tx_bytes" => Some((IFACE_TX_BITS_PER_S, Unit::BitsPerSecond, 8.0)),
                "rx_packets" => Some((IFACE_RX_PPS, Unit::PacketsPerSecond, 1.0)),
                "tx_packets" => Some((IFACE_TX_PPS, Unit::PacketsPerSecond, 1.0)),
                "rx_dropped" => Some((IFACE_RX_DROPPED_PER_S, Unit::PerSecond, 1.0)),
                "tx_dropped" => Some((IFACE_TX_DROPPED_PER_S, Unit::PerSecond, 1.0)),
                "rx_errors" => Some((IFACE_RX_ERRORS_PER_S, Unit::PerSecond, 1.0)),
                "tx_errors" => Some((IFACE_TX_ERRORS_PER_S, Unit::PerSecond, 1.0)),
                _ => None,
            };
            if let Some((name, unit, k)) = named {
                targets.push(target(None, Some((iface(name), unit, k))));
            }
            out.push(Leaf {
                key: format!("{}/{counter}", r.iface),
                value: LeafValue::Counter(v, CounterWidth::Native),
                targets,
            });
        }
    }
    out
}

/// Metric values of one row, summed over leaves; `Err` holds why a value is missing.
type Values = BTreeMap<MetricId, (Unit, Result<f64, String>)>;

fn add(values: &mut Values, id: &MetricId, unit: Unit, v: Result<f64, String>) {
    let e = values.entry(id.clone()).or_insert((unit, Ok(0.0)));
    e.1 = match (&e.1, v) {
        (Ok(a), Ok(b)) => Ok(a + b),
        (Err(r), _) => Err(r.clone()),
        (Ok(_), Err(r)) => Err(r),
    };
}

fn totals(leaves: &[Leaf]) -> Values {
    let mut values = Values::new();
    for leaf in leaves {
        let v = match leaf.value {
            LeafValue::Counter(c, _) => c as f64,
            LeafValue::Gauge(g) => g,
        };
        for t in &leaf.targets {
            if let Some(id) = &t.total {
                add(&mut values, id, Unit::Count, Ok(v));
            }
        }
    }
    values
}

/// Rates between two snapshots `dt` seconds apart; `deltas` gets the count differences by
/// total metric, for the notes.
fn rates(prev: &[Leaf], cur: &[Leaf], dt: f64) -> Values {
    let before: BTreeMap<&str, &Leaf> = prev.iter().map(|l| (l.key.as_str(), l)).collect();
    let mut values = Values::new();
    for leaf in cur {
        let v: Result<f64, String> =
            match (leaf.value, before.get(leaf.key.as_str()).map(|l| l.value)) {
                (LeafValue::Gauge(g), _) => Ok(g),
                (LeafValue::Counter(c, w), Some(LeafValue::Counter(p, _))) => {
                    counter_delta(p, c, w)
                        .map(|d| d as f64 / dt)
                        .ok_or_else(|| netceil_probe::rates::RESET_REASON.to_string())
                }
                (LeafValue::Counter(..), _) => {
                    Err(format!("{} is not in the previous snapshot", leaf.key))
                }
            };
        for t in &leaf.targets {
            if let Some((id, unit, k)) = &t.rate {
                let scaled = match (&leaf.value, &v) {
                    (LeafValue::Gauge(_), Ok(g)) => Ok(*g),
                    (_, Ok(r)) => Ok(r * k),
                    (_, Err(e)) => Err(e.clone()),
                };
                add(&mut values, id, *unit, scaled);
            }
        }
    }
    values
}

fn write_row(run: &mut Run, t: f64, values: &Values) {
    let row = run.series.push_row(t);
    for (id, (unit, v)) in values {
        match v {
            Ok(v) if v.is_finite() => run.series.set_at(row, id, *unit, *v),
            Ok(_) => {}
            Err(reason) => run.series.note_missing(&id.to_string(), reason.clone()),
        }
    }
}

/// `cpu3 97.2 %, cpu0 1.5 %, …` for a per-CPU metric, and the top CPU's share.
fn spread(values: &Values, name: &str) -> Option<(String, u32, f64, f64)> {
    let mut per_cpu: Vec<(u32, f64)> = values
        .iter()
        .filter(|(id, _)| id.name == name && id.labels.len() == 1)
        .filter_map(|(id, (_, v))| Some((id.label(LABEL_CPU)?.parse().ok()?, *v.as_ref().ok()?)))
        .collect();
    let sum: f64 = per_cpu.iter().map(|c| c.1).sum();
    if per_cpu.is_empty() || sum <= 0.0 {
        return None;
    }
    per_cpu.sort_by(|a, b| b.1.total_cmp(&a.1));
    let shown: Vec<String> = per_cpu
        .iter()
        .take(6)
        .map(|(cpu, v)| format!("cpu{cpu} {:.1} %", 100.0 * v / sum))
        .collect();
    let more = if per_cpu.len() > 6 {
        format!(", … ({} CPUs)", per_cpu.len())
    } else {
        String::new()
    };
    let (top_cpu, top) = per_cpu[0];
    Some((
        format!("{}{more}", shown.join(", ")),
        top_cpu,
        100.0 * top / sum,
        sum,
    ))
}

fn spread_note(values: &Values, name: &str, what: &str, cpus: usize, out: &mut Vec<String>) {
    match spread(values, name) {
        Some((list, top_cpu, share, _)) => {
            let verdict = if cpus > 1 && share >= 99.0 {
                format!(
                    ": all of it on CPU {top_cpu}, one core does this work for the whole machine"
                )
            } else if cpus > 1 && share >= 80.0 {
                format!(": {share:.0} % on CPU {top_cpu}, one core does most of this work")
            } else {
                String::new()
            };
            out.push(format!("{what} by CPU: {list}{verdict}"));
        }
        None => out.push(format!("{what}: none counted")),
    }
}

fn value(values: &Values, id: &MetricId) -> Option<f64> {
    values.get(id).and_then(|v| v.1.as_ref().ok().copied())
}

/// The notes one snapshot (`rates` false: since-boot totals) or a pair of snapshots can
/// support; `unit` says what the per-CPU values are (`/s`, `since boot`, `counts`).
fn facts(p: &Parsed, values: &Values, rates: bool, unit: &str, out: &mut Vec<String>) {
    let (irq, net_rx, dropped, squeeze) = if rates {
        (
            NIC_IRQ_PER_S,
            SOFTIRQ_NET_RX_PER_S,
            SOFTNET_DROPPED_PER_S,
            SOFTNET_TIME_SQUEEZE_PER_S,
        )
    } else {
        (
            NIC_IRQ_TOTAL,
            SOFTIRQ_NET_RX_TOTAL,
            SOFTNET_DROPPED_TOTAL,
            SOFTNET_TIME_SQUEEZE_TOTAL,
        )
    };
    match p {
        Parsed::Interrupts(ints) => {
            let queues: Vec<String> = nic_rows(ints)
                .into_iter()
                .map(|(irq, _, q)| {
                    let owner = match q.owner {
                        QueueOwner::Iface(i) => i,
                        QueueOwner::Pci(a) => a,
                        QueueOwner::Virtio(n) => format!("virtio{n}"),
                        QueueOwner::Driver(d) => d,
                    };
                    format!(
                        "{owner} {}{} (irq {irq})",
                        q.direction.as_str(),
                        q.queue.map(|n| format!(" q{n}")).unwrap_or_default()
                    )
                })
                .collect();
            if queues.is_empty() {
                out.push("no NIC queue interrupts recognised (names such as eth0-TxRx-0, mlx5_comp0@pci:…, virtio0-input.0, or a bare eth0)".into());
                return;
            }
            let shown: Vec<&str> = queues.iter().take(8).map(String::as_str).collect();
            out.push(format!(
                "{}: {}{}",
                plural(queues.len(), "NIC queue interrupt"),
                shown.join(", "),
                if queues.len() > 8 { ", …" } else { "" }
            ));
            spread_note(
                values,
                irq,
                &format!("NIC queue interrupts ({unit})"),
                ints.cpus.len(),
                out,
            );
        }
        Parsed::Softirqs(s) => {
            spread_note(
                values,
                net_rx,
                &format!("NET_RX softirqs ({unit})"),
                s.cpus.len(),
                out,
            );
        }
        Parsed::Softnet(s) => {
            let total = |name: &str| value(values, &MetricId::new(name)).unwrap_or(0.0);
            out.push(format!(
                "softnet: {:.0} packets dropped because a backlog was full, {:.0} time squeezes (budget or time ran out with work left) ({unit})",
                total(dropped),
                total(squeeze)
            ));
            for (name, what) in [(dropped, "softnet drops"), (squeeze, "time squeezes")] {
                if total(name) > 0.0 {
                    spread_note(values, name, &format!("{what} ({unit})"), s.rows.len(), out);
                }
            }
            let processed = if rates {
                SOFTNET_PROCESSED_PER_S
            } else {
                SOFTNET_PROCESSED_TOTAL
            };
            spread_note(
                values,
                processed,
                &format!("packets processed ({unit})"),
                s.rows.len(),
                out,
            );
            if s.rows.first().is_some_and(|r| !r.cpu_from_column) {
                out.push("this kernel (< 5.10) prints no CPU column: CPU numbers are row numbers, right only if every CPU was online".into());
            }
        }
        Parsed::Snmp(c) => {
            let get = |proto: &str, name: &str| c.get(proto, name);
            let pick = [
                ("Udp", "InErrors"),
                ("Udp", "RcvbufErrors"),
                ("Udp", "SndbufErrors"),
                ("Udp", "NoPorts"),
                ("Tcp", "RetransSegs"),
                ("TcpExt", "ListenOverflows"),
                ("TcpExt", "ListenDrops"),
                ("TcpExt", "TCPBacklogDrop"),
                ("TcpExt", "TCPTimeouts"),
            ];
            let shown: Vec<String> = pick
                .iter()
                .filter_map(|(p, n)| Some(format!("{p} {n} {}", get(p, n)?)))
                .collect();
            if !shown.is_empty() && !rates {
                out.push(format!("counters since boot: {}", shown.join(", ")));
            }
            if let (Some(re), Some(outs)) = (get("Tcp", "RetransSegs"), get("Tcp", "OutSegs")) {
                if outs > 0 && !rates {
                    out.push(format!(
                        "TCP retransmitted {:.3} % of the segments it sent since boot",
                        100.0 * re as f64 / outs as f64
                    ));
                }
            }
        }
        Parsed::NetDev(d) => {
            for r in &d.ifaces {
                let bad = [
                    ("rx_dropped", r.rx_dropped),
                    ("rx_errors", r.rx_errors),
                    ("rx_fifo", r.rx_fifo),
                    ("rx_frame", r.rx_frame),
                    ("tx_dropped", r.tx_dropped),
                    ("tx_errors", r.tx_errors),
                ];
                let nonzero: Vec<String> = bad
                    .iter()
                    .filter(|(_, v)| *v > 0)
                    .map(|(n, v)| format!("{n} {v}"))
                    .collect();
                if !nonzero.is_empty() && !rates {
                    out.push(format!(
                        "{}: {} (of {} packets received) since it came up",
                        r.iface,
                        nonzero.join(", "),
                        r.rx_packets
                    ));
                }
            }
        }
    }
}

/// Imports one or more snapshots of one /proc file.
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let kind = kind_of(text).map_err(|why| {
        let (n, found) = text
            .lines()
            .enumerate()
            .find(|(_, l)| !l.trim().is_empty())
            .map_or((1, ""), |(i, l)| (i + 1, l.trim()));
        error(opts, n, None, format!("a /proc snapshot: {why}"), found)
    })?;
    let mut warnings = Vec::new();
    let (segments, watch_interval) = split(text, kind);
    let count = segments.len();
    let mut parsed: Vec<(Parsed, Option<f64>, usize)> = Vec::new();
    let mut read: Vec<Read> = Vec::new();
    for (k, seg) in segments.into_iter().enumerate() {
        let last = k + 1 == count;
        let mut body = seg.text.clone();
        let mut dropped = 0;
        let result = loop {
            match parse(kind, &body) {
                Ok(p) => break Ok(p),
                Err(e) => {
                    let e = e.offset_lines(seg.first_line);
                    let seg_last = seg.first_line + body.lines().count();
                    // A snapshot cut short at the end of the text: drop its unfinished lines.
                    let truncated = last
                        && e.line >= seg_last
                        && (cut_mid_line(text) || dropped > 0 || e.line > seg_last);
                    if truncated && dropped < 2 && body.lines().count() > 1 {
                        let keep: Vec<&str> = body.lines().collect();
                        body = keep[..keep.len() - 1].join("\n");
                        body.push('\n');
                        dropped += 1;
                        continue;
                    }
                    break Err(e);
                }
            }
        };
        match result {
            Ok(p) => {
                if dropped > 0 {
                    warnings.push(format!(
                        "the snapshot starting at line {} is cut short: its last {} skipped",
                        seg.first_line + 1,
                        if dropped == 1 {
                            "line was".to_string()
                        } else {
                            format!("{dropped} lines were")
                        }
                    ));
                }
                parsed.push((p, seg.time, seg.first_line + 1));
                read.push(Read {
                    text: body,
                    first_line: seg.first_line,
                    time_line: seg.time_line.filter(|_| seg.time.is_some()),
                    cpu_again: seg.cpu_again,
                });
            }
            Err(e) => return Err(import_error(opts, &e)),
        }
    }
    if parsed.is_empty() {
        return Err(error(
            opts,
            1,
            None,
            format!("a snapshot of {}", kind.path()),
            "no data lines",
        ));
    }
    let mut run = new_run(NAME, text, opts);
    if let Some(t) = parsed.iter().find_map(|p| p.1) {
        run.meta.started_unix_s = t;
    }
    let all: Vec<Vec<Leaf>> = parsed.iter().map(|p| leaves(&p.0)).collect();
    let mut checks = Checks::new();
    check_snapshots(kind, text, &parsed, &read, &all, &mut checks);
    let times: Option<Vec<f64>> = parsed.iter().map(|p| p.1).collect();
    let interval = opts.interval_s.filter(|i| *i > 0.0 && i.is_finite());
    let mut notes = Vec::new();
    let time_base = time_base(parsed.len(), times, watch_interval, interval);
    match time_base {
        Some((gaps, how)) => {
            let mut sorted = gaps.clone();
            sorted.sort_by(f64::total_cmp);
            run.series.interval_s = sorted[sorted.len() / 2];
            let mut t = 0.0;
            for (k, dt) in gaps.iter().enumerate() {
                t += dt;
                let values = rates(&all[k], &all[k + 1], *dt);
                write_row(&mut run, t, &values);
            }
            notes.push(format!(
                "{} of {}: {} of rates; time between snapshots from {how}",
                plural(parsed.len(), "snapshot"),
                kind.path(),
                plural(gaps.len(), "row")
            ));
            // Spread over the whole span: first to last snapshot.
            let span: f64 = gaps.iter().sum();
            let whole = rates(&all[0], &all[all.len() - 1], span);
            facts(
                &parsed[parsed.len() - 1].0,
                &whole,
                true,
                "/s, first to last snapshot",
                &mut notes,
            );
        }
        None => {
            let (p, _, line) = &parsed[parsed.len() - 1];
            let leaves_last = &all[all.len() - 1];
            let values = totals(leaves_last);
            run.series.interval_s = 0.0;
            write_row(&mut run, 0.0, &values);
            notes.push(format!(
                "one snapshot of {} (line {line}): counters since boot, not rates; the series is a single row at t = 0 with interval_s = 0 and _total metrics",
                kind.path()
            ));
            if parsed.len() > 1 {
                warnings.push(format!(
                    "{} but no time between them (no timestamp before every snapshot in increasing order, no --interval): the last is imported as a single snapshot, and the differences are in the notes",
                    plural(parsed.len(), "snapshot")
                ));
                let diff = rates(&all[0], leaves_last, 1.0);
                facts(
                    p,
                    &diff,
                    true,
                    "counts between the first and last snapshot",
                    &mut notes,
                );
            }
            facts(p, &values, false, "since boot", &mut notes);
        }
    }
    run.notes.extend(notes);
    checks.finish(&mut run, &mut warnings, "");
    Ok(finish(run, warnings, opts))
}

/// What the checks need of a snapshot beside its parse: its text as parsed (line numbers kept
/// from `first_line`, 0-based), and what [`split`] found before it.
struct Read {
    text: String,
    first_line: usize,
    time_line: Option<usize>,
    cpu_again: Option<(String, usize)>,
}

impl Read {
    /// The non-blank lines with their 1-based numbers in the whole text.
    fn lines(&self) -> impl Iterator<Item = (usize, &str)> {
        self.text
            .lines()
            .enumerate()
            .map(|(i, l)| (self.first_line + 1 + i, l.trim()))
            .filter(|(_, l)| !l.is_empty())
    }
}

/// The keyed rows of a snapshot: what the keys are, whether the kernel prints them in
/// ascending order, and each row's key and line.
type KeyedRows = (&'static str, bool, Vec<(String, usize)>);

/// The row keys of a snapshot that it must not list twice (IRQs, softirq kinds, CPUs,
/// interfaces).
fn keyed_rows(kind: Kind, r: &Read) -> Option<KeyedRows> {
    let label = |l: &str| {
        let w = l.split_whitespace().next().unwrap_or("");
        w.strip_suffix(':').unwrap_or(w).to_string()
    };
    match kind {
        Kind::Interrupts | Kind::Softirqs => {
            let noun = if kind == Kind::Interrupts {
                "IRQ"
            } else {
                "softirq"
            };
            let rows = r.lines().skip(1).map(|(n, l)| (label(l), n)).collect();
            Some((noun, false, rows))
        }
        Kind::Softnet => {
            let rows = r
                .lines()
                .filter_map(|(n, l)| {
                    let cpu = u32::from_str_radix(l.split_whitespace().nth(12)?, 16).ok()?;
                    Some((cpu.to_string(), n))
                })
                .collect();
            Some(("CPU", true, rows))
        }
        Kind::NetDev => {
            let rows = r
                .lines()
                .filter_map(|(n, l)| {
                    let (iface, _) = l.split_once(':')?;
                    (!iface.contains('|')).then(|| (iface.trim().to_string(), n))
                })
                .collect();
            Some(("interface", false, rows))
        }
        Kind::Snmp | Kind::Netstat => None,
    }
}

/// Every counter since boot in a snapshot, by a key that names it across snapshots: each
/// IRQ's and softirq's count per CPU (not only those netceil keeps as metrics), and the
/// counters of the other files as [`leaves`] has them.
fn counters(p: &Parsed, leaves: &[Leaf]) -> Vec<(String, u64)> {
    let per_cpu = |label: &str, cpus: &[u32], counts: &[u64]| -> Vec<(String, u64)> {
        if counts.len() == 1 && cpus.len() != 1 {
            return vec![(label.to_string(), counts[0])]; // ERR, MIS
        }
        cpus.iter()
            .zip(counts)
            .map(|(cpu, c)| (format!("{label}/cpu{cpu}"), *c))
            .collect()
    };
    match p {
        Parsed::Interrupts(i) => i
            .rows
            .iter()
            .flat_map(|r| per_cpu(&r.label, &i.cpus, &r.counts))
            .collect(),
        Parsed::Softirqs(s) => s
            .rows
            .iter()
            .flat_map(|r| per_cpu(&r.name, &s.cpus, &r.counts))
            .collect(),
        _ => leaves
            .iter()
            .filter_map(|l| match l.value {
                LeafValue::Counter(c, _) => Some((l.key.clone(), c)),
                LeafValue::Gauge(_) => None,
            })
            .collect(),
    }
}

/// The line of a snapshot that holds a counter (a key of [`counters`]), for messages.
fn counter_line(kind: Kind, r: &Read, key: &str) -> Option<usize> {
    let (head, tail) = key.split_once('/').unwrap_or((key, ""));
    let first = |l: &str| l.split_whitespace().next().unwrap_or("").to_string();
    match kind {
        Kind::Interrupts | Kind::Softirqs => r
            .lines()
            .find(|(_, l)| first(l) == format!("{head}:"))
            .map(|x| x.0),
        Kind::Softnet => {
            let cpu: u32 = tail.strip_prefix("cpu")?.parse().ok()?;
            r.lines()
                .enumerate()
                .find(|(i, (_, l))| {
                    let col = l
                        .split_whitespace()
                        .nth(12)
                        .and_then(|c| u32::from_str_radix(c, 16).ok());
                    col.unwrap_or(*i as u32) == cpu
                })
                .map(|(_, x)| x.0)
        }
        Kind::Snmp | Kind::Netstat => r
            .lines()
            .find(|(_, l)| {
                let mut w = l.split_whitespace();
                w.next() == Some(&format!("{head}:"))
                    && w.next().is_some_and(|v| v.parse::<i64>().is_ok())
            })
            .map(|x| x.0),
        Kind::NetDev => r
            .lines()
            .find(|(_, l)| l.split_once(':').is_some_and(|(i, _)| i.trim() == head))
            .map(|x| x.0),
    }
}

/// What the snapshots say that cannot be true: a CPU, IRQ or interface listed twice in one
/// snapshot, a softnet_stat CPU that comes again under one timestamp, a timestamp earlier than
/// the one before, and counters since boot that go backwards from one snapshot to the next.
fn check_snapshots(
    kind: Kind,
    text: &str,
    parsed: &[(Parsed, Option<f64>, usize)],
    read: &[Read],
    all: &[Vec<Leaf>],
    checks: &mut Checks,
) {
    let mut blocks = KeyBlocks::new();
    for ((p, _, _), r) in parsed.iter().zip(read) {
        let header = r.lines().next().map_or(r.first_line + 1, |x| x.0);
        match p {
            Parsed::Interrupts(i) => check_header_cpus(&i.cpus, header, None, checks),
            Parsed::Softirqs(s) => check_header_cpus(&s.cpus, header, None, checks),
            _ => {}
        }
        if let Some((noun, ascending, rows)) = keyed_rows(kind, r) {
            let start = rows.first().map_or(header, |x| x.1);
            if ascending {
                blocks.start_ascending(noun, start);
            } else {
                blocks.start(noun, start);
            }
            for (key, line) in rows {
                blocks.row(&key, line);
            }
        }
    }
    blocks.check(None, checks);
    let printed = |line: usize| {
        text.lines()
            .nth(line - 1)
            .unwrap_or("")
            .trim()
            .chars()
            .take(60)
            .collect::<String>()
    };
    for k in 1..parsed.len() {
        let (prev, cur) = (&read[k - 1], &read[k]);
        // softnet_stat rows under one timestamp that list a CPU again: the second run of rows
        // has no time of its own, so it is not the next snapshot but another capture.
        if let (Some((hex, began)), Some(t), None) = (&cur.cpu_again, prev.time_line, cur.time_line)
        {
            if parsed[k].1.is_none() {
                let cpu = u32::from_str_radix(hex, 16).map_or(hex.clone(), |c| c.to_string());
                let line = cur.lines().next().map_or(cur.first_line + 1, |x| x.0);
                checks.mark(
                    Check::Repeat,
                    Some(line),
                    format!(
                        "CPU {cpu} appears again at line {line} inside the block that began at line {began} (under the timestamp at line {t}): two captures interleaved, or rows pasted twice"
                    ),
                );
            }
        }
        if let ((_, Some(t0), _), (_, Some(t1), _), Some(l0), Some(l1)) =
            (&parsed[k - 1], &parsed[k], prev.time_line, cur.time_line)
        {
            if t1 < t0 {
                time_backwards(checks, l1, &printed(l1), l0, &printed(l0), false);
            }
        }
        let before: BTreeMap<String, u64> = counters(&parsed[k - 1].0, &all[k - 1])
            .into_iter()
            .collect();
        let mut back: Vec<(String, u64, u64, Option<usize>)> = Vec::new();
        for (key, c) in counters(&parsed[k].0, &all[k]) {
            let Some(&p) = before.get(&key) else { continue };
            if went_backwards(p, c) {
                let line = counter_line(kind, cur, &key);
                back.push((key, p, c, line));
            }
        }
        if back.is_empty() {
            continue;
        }
        let shown: Vec<String> = back
            .iter()
            .take(4)
            .map(|(key, p, c, line)| {
                let at = line.map(|l| format!(" (line {l})")).unwrap_or_default();
                format!("{key} {p} → {c}{at}")
            })
            .collect();
        let more = if back.len() > 4 { ", …" } else { "" };
        checks.mark(
            Check::Counter,
            back.iter().find_map(|b| b.3).or(Some(cur.first_line + 1)),
            format!(
                "between the snapshots at lines {} and {}, {} since boot went backwards, and not by a 32- or 64-bit wrap: {}{more} (a reset, or two captures interleaved)",
                parsed[k - 1].2,
                parsed[k].2,
                plural(back.len(), "counter"),
                shown.join(", ")
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert_eq!(
            kind_of("   CPU0  CPU1\n  0: 1 2 IO-APIC timer\n"),
            Ok(Kind::Interrupts)
        );
        assert_eq!(kind_of("   CPU0  CPU1\n  HI: 1 2\n"), Ok(Kind::Softirqs));
        assert_eq!(
            kind_of("Ip: Forwarding DefaultTTL\nIp: 1 64\n"),
            Ok(Kind::Snmp)
        );
        assert_eq!(
            kind_of("TcpExt: SyncookiesSent\nTcpExt: 0\n"),
            Ok(Kind::Netstat)
        );
        assert_eq!(
            kind_of("Inter-|   Receive  |  Transmit\n"),
            Ok(Kind::NetDev)
        );
        assert_eq!(
            kind_of("00000001 00000002 00000003 00000000 00000000 00000000 00000000 00000000 00000000\n"),
            Ok(Kind::Softnet)
        );
        assert!(kind_of("hello world").is_err());
    }
}
