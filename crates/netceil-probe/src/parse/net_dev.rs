//! `/proc/net/dev`: bytes, packets, errors and drops per interface, in one read.
//!
//! Format: the kernel's Documentation/filesystems/proc.rst ("Networking info in /proc/net");
//! what each counter means is in Documentation/networking/statistics.rst. Two header lines, then
//! `name: 8 receive counters 8 transmit counters`. A long name runs into the first number
//! (`enp0s31f6:12345`), so the name ends at the first `:` (interface names cannot hold one).
//!
//! The columns map onto `struct rtnl_link_stats64` as the kernel folds them: receive `drop` is
//! rx_dropped + rx_missed_errors, `fifo` is rx_fifo_errors, `frame` sums the length, over, CRC
//! and frame errors. The unfolded values are in /sys/class/net/IF/statistics (see
//! [`super::sys_net`]).

use super::{parse_u64, Line};
use crate::error::{Found, ParseError};

/// The file this parser is for.
pub const SOURCE: &str = "/proc/net/dev";

/// One interface's counters, since the interface was created.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetDevRow {
    pub iface: String,
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub rx_errors: u64,
    pub rx_dropped: u64,
    pub rx_fifo: u64,
    pub rx_frame: u64,
    pub rx_compressed: u64,
    pub rx_multicast: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errors: u64,
    pub tx_dropped: u64,
    pub tx_fifo: u64,
    pub tx_collisions: u64,
    pub tx_carrier: u64,
    pub tx_compressed: u64,
}

/// The parsed file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetDev {
    pub ifaces: Vec<NetDevRow>,
}

impl NetDev {
    /// One interface's row.
    pub fn iface(&self, name: &str) -> Option<&NetDevRow> {
        self.ifaces.iter().find(|r| r.iface == name)
    }
}

const COLUMNS: [&str; 16] = [
    "receive bytes",
    "receive packets",
    "receive errs",
    "receive drop",
    "receive fifo",
    "receive frame",
    "receive compressed",
    "receive multicast",
    "transmit bytes",
    "transmit packets",
    "transmit errs",
    "transmit drop",
    "transmit fifo",
    "transmit colls",
    "transmit carrier",
    "transmit compressed",
];

/// Parses the text of `/proc/net/dev`.
pub fn parse(text: &str) -> Result<NetDev, ParseError> {
    let mut ifaces = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        // Header lines are the ones with column separators.
        if raw.trim().is_empty() || raw.contains('|') {
            continue;
        }
        let number = i + 1;
        let Some((name, counters)) = raw.split_once(':') else {
            let found = raw.split_whitespace().next().unwrap_or("");
            return Err(ParseError::new(
                SOURCE,
                number,
                Some(1),
                "an interface name followed by ':'",
                Found::text(found),
            ));
        };
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(ParseError::new(
                SOURCE,
                number,
                Some(1),
                "an interface name before ':'",
                Found::text(name),
            ));
        }
        // Field numbers in errors count the name as field 1.
        let mut line = Line::new(SOURCE, number, counters);
        let mut values = [0u64; 16];
        for (slot, what) in values.iter_mut().zip(COLUMNS) {
            let field = line.fields_read() + 2;
            match line.next_field() {
                Some(f) => {
                    *slot = parse_u64(f).ok_or_else(|| {
                        ParseError::new(SOURCE, number, Some(field), what, Found::text(f))
                    })?
                }
                None => {
                    return Err(ParseError::new(
                        SOURCE,
                        number,
                        Some(field),
                        what,
                        Found::EndOfLine,
                    ))
                }
            }
        }
        if let Some(extra) = line.next_field() {
            return Err(ParseError::new(
                SOURCE,
                number,
                Some(18),
                "the end of the line after 16 counters",
                Found::text(extra),
            ));
        }
        let [rx_bytes, rx_packets, rx_errors, rx_dropped, rx_fifo, rx_frame, rx_compressed, rx_multicast, tx_bytes, tx_packets, tx_errors, tx_dropped, tx_fifo, tx_collisions, tx_carrier, tx_compressed] =
            values;
        ifaces.push(NetDevRow {
            iface: name.to_string(),
            rx_bytes,
            rx_packets,
            rx_errors,
            rx_dropped,
            rx_fifo,
            rx_frame,
            rx_compressed,
            rx_multicast,
            tx_bytes,
            tx_packets,
            tx_errors,
            tx_dropped,
            tx_fifo,
            tx_collisions,
            tx_carrier,
            tx_compressed,
        });
    }
    Ok(NetDev { ifaces })
}
