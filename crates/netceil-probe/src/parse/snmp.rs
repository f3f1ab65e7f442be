//! `/proc/net/snmp` and `/proc/net/netstat`: protocol counters as header/value line pairs.
//!
//! Both files print each protocol twice: `Tcp: RtoAlgorithm RtoMin …` then `Tcp: 1 200 …`.
//! Counter meanings: the kernel's Documentation/networking/snmp_counter.rst, and RFC 1213/4293
//! for the MIB-II ones (Ip, Icmp, Tcp, Udp). /proc/net/netstat holds the Linux extensions
//! (TcpExt, IpExt, MPTcpExt). New kernels add names, so everything is kept in a generic table
//! ([`SnmpCounters::get`]) and the counters netceil uses have typed names ([`Counter`]).
//!
//! Values are signed: a few are gauges or settings (`Tcp: MaxConn -1`).

use super::Line;
use crate::error::{Found, ParseError};

/// The file [`parse`] names in errors; /proc/net/netstat has its own
/// [`super::netstat::parse`].
pub const SOURCE: &str = "/proc/net/snmp";

/// One protocol's names and values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnmpTable {
    /// `Tcp`, `TcpExt`, … (without the colon).
    pub proto: String,
    pub names: Vec<String>,
    pub values: Vec<i64>,
}

impl SnmpTable {
    /// One value by name.
    pub fn get(&self, name: &str) -> Option<i64> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| self.values[i])
    }
}

/// The parsed file: every protocol table in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnmpCounters {
    pub tables: Vec<SnmpTable>,
}

/// The counters netceil reads, by protocol and name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Counter {
    IpInReceives,
    IpInDiscards,
    TcpInSegs,
    TcpOutSegs,
    TcpRetransSegs,
    UdpInDatagrams,
    UdpNoPorts,
    UdpInErrors,
    UdpOutDatagrams,
    UdpRcvbufErrors,
    UdpSndbufErrors,
    TcpExtDelayedAcks,
    TcpExtListenOverflows,
    TcpExtListenDrops,
    TcpExtSackReorder,
    TcpExtLostRetransmit,
    TcpExtFastRetrans,
    TcpExtTimeouts,
    TcpExtDsackOldSent,
    TcpExtDsackOfoSent,
    TcpExtDsackRecv,
    TcpExtDsackOfoRecv,
    TcpExtDsackUndo,
    TcpExtBacklogDrop,
}

impl Counter {
    /// Every counter, in declaration order.
    pub const ALL: [Counter; 24] = [
        Counter::IpInReceives,
        Counter::IpInDiscards,
        Counter::TcpInSegs,
        Counter::TcpOutSegs,
        Counter::TcpRetransSegs,
        Counter::UdpInDatagrams,
        Counter::UdpNoPorts,
        Counter::UdpInErrors,
        Counter::UdpOutDatagrams,
        Counter::UdpRcvbufErrors,
        Counter::UdpSndbufErrors,
        Counter::TcpExtDelayedAcks,
        Counter::TcpExtListenOverflows,
        Counter::TcpExtListenDrops,
        Counter::TcpExtSackReorder,
        Counter::TcpExtLostRetransmit,
        Counter::TcpExtFastRetrans,
        Counter::TcpExtTimeouts,
        Counter::TcpExtDsackOldSent,
        Counter::TcpExtDsackOfoSent,
        Counter::TcpExtDsackRecv,
        Counter::TcpExtDsackOfoRecv,
        Counter::TcpExtDsackUndo,
        Counter::TcpExtBacklogDrop,
    ];

    /// The protocol table and counter name as the kernel prints them.
    pub fn key(self) -> (&'static str, &'static str) {
        match self {
            Counter::IpInReceives => ("Ip", "InReceives"),
            Counter::IpInDiscards => ("Ip", "InDiscards"),
            Counter::TcpInSegs => ("Tcp", "InSegs"),
            Counter::TcpOutSegs => ("Tcp", "OutSegs"),
            Counter::TcpRetransSegs => ("Tcp", "RetransSegs"),
            Counter::UdpInDatagrams => ("Udp", "InDatagrams"),
            Counter::UdpNoPorts => ("Udp", "NoPorts"),
            Counter::UdpInErrors => ("Udp", "InErrors"),
            Counter::UdpOutDatagrams => ("Udp", "OutDatagrams"),
            Counter::UdpRcvbufErrors => ("Udp", "RcvbufErrors"),
            Counter::UdpSndbufErrors => ("Udp", "SndbufErrors"),
            Counter::TcpExtDelayedAcks => ("TcpExt", "DelayedACKs"),
            Counter::TcpExtListenOverflows => ("TcpExt", "ListenOverflows"),
            Counter::TcpExtListenDrops => ("TcpExt", "ListenDrops"),
            Counter::TcpExtSackReorder => ("TcpExt", "TCPSACKReorder"),
            Counter::TcpExtLostRetransmit => ("TcpExt", "TCPLostRetransmit"),
            Counter::TcpExtFastRetrans => ("TcpExt", "TCPFastRetrans"),
            Counter::TcpExtTimeouts => ("TcpExt", "TCPTimeouts"),
            Counter::TcpExtDsackOldSent => ("TcpExt", "TCPDSACKOldSent"),
            Counter::TcpExtDsackOfoSent => ("TcpExt", "TCPDSACKOfoSent"),
            Counter::TcpExtDsackRecv => ("TcpExt", "TCPDSACKRecv"),
            Counter::TcpExtDsackOfoRecv => ("TcpExt", "TCPDSACKOfoRecv"),
            Counter::TcpExtDsackUndo => ("TcpExt", "TCPDSACKUndo"),
            Counter::TcpExtBacklogDrop => ("TcpExt", "TCPBacklogDrop"),
        }
    }
}

impl SnmpCounters {
    /// One protocol's table (`"Udp"`).
    pub fn table(&self, proto: &str) -> Option<&SnmpTable> {
        self.tables.iter().find(|t| t.proto == proto)
    }

    /// Any value by protocol and name, as printed (`get("Tcp", "MaxConn")`).
    pub fn get(&self, proto: &str, name: &str) -> Option<i64> {
        self.table(proto)?.get(name)
    }

    /// A counter netceil knows; `None` when this file or kernel does not have it, or when the
    /// value is negative (not a counter).
    pub fn counter(&self, counter: Counter) -> Option<u64> {
        let (proto, name) = counter.key();
        self.get(proto, name).and_then(|v| u64::try_from(v).ok())
    }
}

/// The [`Counter`]s of one file, read without building the generic table (the sampler reads
/// these files ten times a second at short intervals, and has no use for the rest).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KnownCounters {
    values: [Option<i64>; Counter::ALL.len()],
}

impl KnownCounters {
    /// A counter's value; `None` when the file does not have it or it is negative.
    pub fn counter(&self, counter: Counter) -> Option<u64> {
        self.values[counter as usize].and_then(|v| u64::try_from(v).ok())
    }
}

/// What to do with each header/value pair.
trait PairSink {
    /// A table's header was read; `names` are its counter names in order.
    fn header<'a>(&mut self, proto: &'a str, names: &[&'a str]);
    /// The value of the `index`-th name of the current table.
    fn value(&mut self, index: usize, value: i64);
}

#[derive(Default)]
struct Tables(Vec<SnmpTable>);

impl PairSink for Tables {
    fn header(&mut self, proto: &str, names: &[&str]) {
        self.0.push(SnmpTable {
            proto: proto.to_string(),
            names: names.iter().map(|n| n.to_string()).collect(),
            values: Vec::with_capacity(names.len()),
        });
    }

    fn value(&mut self, _index: usize, value: i64) {
        if let Some(t) = self.0.last_mut() {
            t.values.push(value);
        }
    }
}

#[derive(Default)]
struct Known {
    out: KnownCounters,
    /// For each name index of the current table, the counter it is, if any.
    wanted: Vec<Option<Counter>>,
}

impl PairSink for Known {
    fn header(&mut self, proto: &str, names: &[&str]) {
        // A few wanted counters among up to ~200 names (TcpExt): look each wanted one up,
        // rather than every name among the wanted.
        self.wanted.clear();
        self.wanted.resize(names.len(), None);
        for c in Counter::ALL.iter().filter(|c| c.key().0 == proto) {
            if let Some(i) = names.iter().position(|n| *n == c.key().1) {
                self.wanted[i] = Some(*c);
            }
        }
    }

    fn value(&mut self, index: usize, value: i64) {
        if let Some(Some(c)) = self.wanted.get(index) {
            self.out.values[*c as usize] = Some(value);
        }
    }
}

/// Parses the text of `/proc/net/snmp`.
pub fn parse(text: &str) -> Result<SnmpCounters, ParseError> {
    parse_pairs(SOURCE, text)
}

/// Reads only the [`Counter`]s from `/proc/net/snmp` or `/proc/net/netstat` text, validating
/// the whole file as [`parse`] does; `source` names the file in errors.
pub fn parse_known(source: &'static str, text: &str) -> Result<KnownCounters, ParseError> {
    let mut sink = Known::default();
    walk_pairs(source, text, &mut sink)?;
    Ok(sink.out)
}

/// Parses any file of `Proto: names` / `Proto: values` line pairs, naming `source` in errors.
pub(crate) fn parse_pairs(source: &'static str, text: &str) -> Result<SnmpCounters, ParseError> {
    let mut tables = Tables::default();
    walk_pairs(source, text, &mut tables)?;
    Ok(SnmpCounters { tables: tables.0 })
}

fn walk_pairs(
    source: &'static str,
    text: &str,
    sink: &mut impl PairSink,
) -> Result<(), ParseError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    if text.trim().is_empty() {
        return Err(ParseError::new(
            source,
            1,
            None,
            "a 'Proto: names' header line",
            Found::EndOfInput,
        ));
    }
    let mut names: Vec<&str> = Vec::new();
    while let Some((i, header_raw)) = lines.next() {
        let mut header = Line::new(source, i + 1, header_raw);
        let label = header.expect("a protocol name ending in ':'")?;
        let proto = label
            .strip_suffix(':')
            .filter(|p| !p.is_empty())
            .ok_or_else(|| {
                header.error(Some(1), "a protocol name ending in ':'", Found::text(label))
            })?;
        names.clear();
        while let Some(n) = header.next_field() {
            names.push(n);
        }
        let Some((j, values_raw)) = lines.next() else {
            return Err(ParseError::new(
                source,
                i + 2,
                None,
                format!("a '{label}' line of values after the header"),
                Found::EndOfInput,
            ));
        };
        let mut row = Line::new(source, j + 1, values_raw);
        let found_label = row.expect("a protocol name")?;
        if found_label != label {
            return Err(row.error(
                Some(1),
                format!(
                    "'{label}' starting the values of the header on line {}",
                    i + 1
                ),
                Found::text(found_label),
            ));
        }
        sink.header(proto, &names);
        for k in 0..names.len() {
            let v = row.i64("an integer value")?;
            sink.value(k, v);
        }
        if let Some(extra) = row.next_field() {
            return Err(row.error(
                Some(row.fields_read()),
                format!("{} values, one per name on line {}", names.len(), i + 1),
                Found::text(extra),
            ));
        }
    }
    Ok(())
}
