//! `/sys/class/net/IF/…`: one value per file: statistics counters, speed, MTU, operstate.
//!
//! Attribute meanings: the kernel's Documentation/ABI/testing/sysfs-class-net and
//! Documentation/ABI/testing/sysfs-class-net-statistics; how drivers should count is in
//! Documentation/networking/statistics.rst. These are the parsers of single values; reading
//! the directory (driver link, queues) is [`crate::iface`], behind the [`crate::Source`] seam.

use crate::error::{Found, ParseError};

/// The directory these files live in, used to name errors.
pub const SOURCE: &str = "/sys/class/net";

fn single_value(text: &str) -> Result<&str, ParseError> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let value = lines
        .next()
        .ok_or_else(|| ParseError::new(SOURCE, 1, None, "a single value", Found::EndOfInput))?
        .trim();
    if let Some(extra) = lines.next() {
        return Err(ParseError::new(
            SOURCE,
            2,
            None,
            "nothing after the single value",
            Found::text(extra),
        ));
    }
    Ok(value)
}

/// A counter such as `statistics/rx_missed_errors`.
pub fn parse_counter(text: &str) -> Result<u64, ParseError> {
    let v = single_value(text)?;
    super::parse_u64(v)
        .ok_or_else(|| ParseError::new(SOURCE, 1, Some(1), "a decimal counter", Found::text(v)))
}

/// `speed`, in Mbit/s. The kernel prints -1 (or drivers print 0 / `4294967295`) when the speed
/// is unknown, as for virtio, loopback or a link that is down; that is `None`, not a speed.
pub fn parse_speed(text: &str) -> Result<Option<u64>, ParseError> {
    let v = single_value(text)?;
    let n: i64 = v.parse().map_err(|_| {
        ParseError::new(
            SOURCE,
            1,
            Some(1),
            "a speed in Mbit/s (or -1)",
            Found::text(v),
        )
    })?;
    Ok(match n {
        n if n <= 0 || n == i64::from(u32::MAX) => None,
        n => Some(n.unsigned_abs()),
    })
}

/// `mtu`, in bytes.
pub fn parse_mtu(text: &str) -> Result<u32, ParseError> {
    let v = single_value(text)?;
    super::parse_u64(v)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| ParseError::new(SOURCE, 1, Some(1), "an MTU in bytes", Found::text(v)))
}

/// RFC 2863 operational state, from `operstate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperState {
    Up,
    Down,
    /// The driver does not track it (loopback, many virtual devices): treat as usable.
    Unknown,
    Dormant,
    LowerLayerDown,
    NotPresent,
    Testing,
}

impl OperState {
    /// Whether traffic can flow: `up`, or `unknown` (loopback and tunnels report that).
    pub fn is_usable(self) -> bool {
        matches!(self, OperState::Up | OperState::Unknown)
    }
}

/// `operstate`.
pub fn parse_operstate(text: &str) -> Result<OperState, ParseError> {
    let v = single_value(text)?;
    Ok(match v {
        "up" => OperState::Up,
        "down" => OperState::Down,
        "unknown" => OperState::Unknown,
        "dormant" => OperState::Dormant,
        "lowerlayerdown" => OperState::LowerLayerDown,
        "notpresent" => OperState::NotPresent,
        "testing" => OperState::Testing,
        other => {
            return Err(ParseError::new(
                SOURCE,
                1,
                Some(1),
                "an operstate (up, down, unknown, dormant, lowerlayerdown, notpresent, testing)",
                Found::text(other),
            ))
        }
    })
}

/// The last path component of a symlink target (`../../bus/pci/drivers/ixgbe` → `ixgbe`).
pub fn link_basename(target: &str) -> Option<&str> {
    target
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|s| !s.is_empty() && *s != "..")
}

/// Counts `rx-N` and `tx-N` entries of a `queues/` directory listing.
pub fn count_queues<'a>(entries: impl IntoIterator<Item = &'a str>) -> (u32, u32) {
    let mut rx = 0;
    let mut tx = 0;
    for e in entries {
        if e.strip_prefix("rx-").and_then(super::parse_u64).is_some() {
            rx += 1;
        } else if e.strip_prefix("tx-").and_then(super::parse_u64).is_some() {
            tx += 1;
        }
    }
    (rx, tx)
}
