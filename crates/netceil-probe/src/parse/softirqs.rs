//! `/proc/softirqs`: how many softirqs of each kind each CPU has run since boot.
//!
//! Format: the kernel's Documentation/filesystems/proc.rst, section "/proc/softirqs". A header
//! of `CPUn` columns, then one row per softirq kind (`HI`, `TIMER`, `NET_TX`, `NET_RX`, …).
//! NET_RX and NET_TX are where receive and transmit packet processing happens, so their
//! per-CPU spread shows whether one core does all the network work. The counters are 32-bit
//! (`unsigned int`) and wrap.

use std::borrow::Cow;

use super::{cpu_header, first_line, Line};
use crate::error::{Found, ParseError};

/// The file this parser is for.
pub const SOURCE: &str = "/proc/softirqs";

/// One softirq kind and its count on each CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SoftirqRow {
    /// `NET_RX`, `TIMER`, … (without the colon).
    pub name: Cow<'static, str>,
    /// One count per CPU, in the order of [`Softirqs::cpus`].
    pub counts: Vec<u64>,
}

impl SoftirqRow {
    /// The sum over CPUs.
    pub fn total(&self) -> u64 {
        self.counts.iter().fold(0u64, |a, &c| a.saturating_add(c))
    }
}

/// The parsed file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Softirqs {
    /// The CPU number of each column.
    pub cpus: Vec<u32>,
    pub rows: Vec<SoftirqRow>,
}

impl Softirqs {
    /// The row of one softirq kind (`"NET_RX"`).
    pub fn row(&self, name: &str) -> Option<&SoftirqRow> {
        self.rows.iter().find(|r| r.name == name)
    }

    /// NET_RX counts per CPU, in the order of [`Softirqs::cpus`].
    pub fn net_rx(&self) -> Option<&[u64]> {
        self.row("NET_RX").map(|r| r.counts.as_slice())
    }

    /// NET_TX counts per CPU, in the order of [`Softirqs::cpus`].
    pub fn net_tx(&self) -> Option<&[u64]> {
        self.row("NET_TX").map(|r| r.counts.as_slice())
    }

    /// `(cpu, count)` pairs of one softirq kind.
    pub fn per_cpu<'a>(&'a self, name: &str) -> impl Iterator<Item = (u32, u64)> + 'a {
        let row = self.row(name);
        self.cpus
            .iter()
            .copied()
            .zip(row.into_iter().flat_map(|r| r.counts.iter().copied()))
    }
}

/// The softirq kinds of Linux 2.6.x to 6.x (include/linux/interrupt.h, `softirq_to_name`).
pub const KINDS: [&str; 11] = [
    "HI",
    "TIMER",
    "NET_TX",
    "NET_RX",
    "BLOCK",
    "BLOCK_IOPOLL",
    "IRQ_POLL",
    "TASKLET",
    "SCHED",
    "HRTIMER",
    "RCU",
];

/// Parses the text of `/proc/softirqs`.
pub fn parse(text: &str) -> Result<Softirqs, ParseError> {
    let (header_no, header) = first_line(SOURCE, text, "a header line of CPU columns")?;
    let cpus = cpu_header(SOURCE, header_no, header)?;
    let mut rows = Vec::new();
    for (i, raw) in text.lines().enumerate().skip(header_no) {
        let mut line = Line::new(SOURCE, i + 1, raw);
        let Some(label) = line.next_field() else {
            continue;
        };
        let name = label
            .strip_suffix(':')
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                line.error(Some(1), "a softirq name ending in ':'", Found::text(label))
            })?;
        let mut counts = Vec::with_capacity(cpus.len());
        for _ in 0..cpus.len() {
            counts.push(line.u64("a per-CPU count")?);
        }
        if let Some(extra) = line.next_field() {
            return Err(line.error(
                Some(line.fields_read()),
                format!("{} per-CPU counts, as in the header", cpus.len()),
                Found::text(extra),
            ));
        }
        // The kernel's own kinds need no copy of their name: this runs at every sample.
        let name = KINDS
            .iter()
            .find(|k| **k == name)
            .map_or_else(|| Cow::Owned(name.to_string()), |k| Cow::Borrowed(*k));
        rows.push(SoftirqRow { name, counts });
    }
    Ok(Softirqs { cpus, rows })
}
