//! `/proc/net/netstat`: the Linux protocol extensions (TcpExt, IpExt, MPTcpExt).
//!
//! Same header/value line pairs as /proc/net/snmp, read by the same code (see [`super::snmp`]);
//! counter meanings are in the kernel's Documentation/networking/snmp_counter.rst. Only the
//! file name in errors differs.

use super::snmp::{parse_pairs, SnmpCounters};
use crate::error::ParseError;

/// The file this parser is for.
pub const SOURCE: &str = "/proc/net/netstat";

/// Parses the text of `/proc/net/netstat`.
pub fn parse(text: &str) -> Result<SnmpCounters, ParseError> {
    parse_pairs(SOURCE, text)
}
