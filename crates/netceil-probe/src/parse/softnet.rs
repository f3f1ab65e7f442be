//! `/proc/net/softnet_stat`: per-CPU receive backlog processing, drops and budget squeezes.
//!
//! There is no documentation file for its columns; the layout is `softnet_seq_show()` in
//! net/core/net-procfs.c, and Documentation/networking/scaling.rst describes RPS and flow
//! limits. One line per online CPU, every value printed as 8 hex digits of a 32-bit counter
//! (so they wrap). Columns, 1-based, and the kernel that added them:
//!
//! | col | value | since |
//! |---|---|---|
//! | 1 | processed | 2.6 |
//! | 2 | dropped (backlog full, `netdev_max_backlog`) | 2.6 |
//! | 3 | time_squeeze (NAPI budget or time ran out with work left) | 2.6 |
//! | 4–8 | always 0 (retired counters) | 2.6 |
//! | 9 | cpu_collision (0 on modern kernels) | 2.6 |
//! | 10 | received_rps | 2.6.36 |
//! | 11 | flow_limit_count | 3.11 |
//! | 12 | backlog length now | 5.10 |
//! | 13 | the CPU number | 5.10 |
//! | 14, 15 | input and process queue lengths | 6.x |
//!
//! Before 5.10 offline CPUs are skipped without saying so: the row index is then taken as the
//! CPU number, which is right only when every CPU is online ([`SoftnetRow::cpu_from_column`]
//! says which case applies).

use super::{first_line, Line};
use crate::error::{Found, ParseError};

/// The file this parser is for.
pub const SOURCE: &str = "/proc/net/softnet_stat";

/// The fewest columns any kernel printed (2.6.32).
pub const MIN_COLUMNS: usize = 9;

/// One CPU's row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SoftnetRow {
    /// The CPU number: column 13 when present, otherwise the row index.
    pub cpu: u32,
    /// True when `cpu` came from the file's own CPU column (kernels ≥ 5.10).
    pub cpu_from_column: bool,
    pub processed: u64,
    pub dropped: u64,
    pub time_squeeze: u64,
    pub cpu_collision: u64,
    pub received_rps: Option<u64>,
    pub flow_limit_count: Option<u64>,
    /// Packets in the backlog when the file was read (a gauge).
    pub backlog_len: Option<u64>,
    pub input_qlen: Option<u64>,
    pub process_qlen: Option<u64>,
}

/// The parsed file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SoftnetStat {
    /// How many columns each line had.
    pub columns: usize,
    pub rows: Vec<SoftnetRow>,
}

impl SoftnetStat {
    /// The row of one CPU.
    pub fn cpu(&self, cpu: u32) -> Option<&SoftnetRow> {
        self.rows.iter().find(|r| r.cpu == cpu)
    }
}

const EXPECTED: [&str; 15] = [
    "a hex number (processed)",
    "a hex number (dropped)",
    "a hex number (time_squeeze)",
    "a hex number",
    "a hex number",
    "a hex number",
    "a hex number",
    "a hex number",
    "a hex number (cpu_collision)",
    "a hex number (received_rps)",
    "a hex number (flow_limit_count)",
    "a hex number (backlog length)",
    "a hex number (CPU number)",
    "a hex number (input_qlen)",
    "a hex number (process_qlen)",
];

/// Parses the text of `/proc/net/softnet_stat`.
pub fn parse(text: &str) -> Result<SoftnetStat, ParseError> {
    first_line(SOURCE, text, "one line of hex counters per CPU")?;
    let mut stat = SoftnetStat::default();
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let mut line = Line::new(SOURCE, i + 1, raw);
        let mut values = [0u64; 15];
        let mut columns = 0;
        while line.peek_field().is_some() {
            if columns < values.len() {
                values[columns] = line.hex_u64(EXPECTED[columns])?;
            } else {
                // Columns added after 6.x: validated, not kept.
                line.hex_u64("a hex number")?;
            }
            columns += 1;
        }
        if stat.rows.is_empty() {
            if columns < MIN_COLUMNS {
                return Err(line.error(
                    Some(columns + 1),
                    format!("at least {MIN_COLUMNS} hex columns"),
                    Found::EndOfLine,
                ));
            }
            stat.columns = columns;
        } else if columns != stat.columns {
            let expected = format!("{} hex columns, as on the first line", stat.columns);
            return Err(line.error(
                Some(columns.min(stat.columns) + 1),
                expected,
                Found::Text(format!("{columns} columns")),
            ));
        }
        let has = |col: usize| (columns >= col).then(|| values[col - 1]);
        let index = u32::try_from(stat.rows.len()).unwrap_or(u32::MAX);
        let (cpu, cpu_from_column) = match has(13) {
            Some(c) => (u32::try_from(c).unwrap_or(u32::MAX), true),
            None => (index, false),
        };
        stat.rows.push(SoftnetRow {
            cpu,
            cpu_from_column,
            processed: values[0],
            dropped: values[1],
            time_squeeze: values[2],
            cpu_collision: values[8],
            received_rps: has(10),
            flow_limit_count: has(11),
            backlog_len: has(12),
            input_qlen: has(14),
            process_qlen: has(15),
        });
    }
    Ok(stat)
}
