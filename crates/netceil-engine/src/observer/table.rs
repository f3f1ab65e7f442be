//! The live table: one row per interval, vmstat-like, on one line.
//!
//! Columns are chosen by priority to fit the terminal width (`--wide` shows them all); the
//! hottest CPU gets a column of its own because one saturated core hides in an average. A
//! value that was not measured prints as `-`, never as 0.

use netceil_model::names as n;

use netceil_probe::Row;

use netceil_model::fmt;

use super::LoadFigures;

/// The workload columns each kind of run shows.
pub const UDP_COLUMNS: &[&str] = &["tx pps", "rx pps", "rx bit/s", "lost"];
pub const TCP_COLUMNS: &[&str] = &["tx bit/s", "rx bit/s"];
/// -R: the far side writes, this side reads; labelled by direction.
pub const TCP_DOWN_COLUMNS: &[&str] = &["down tx b/s", "down rx b/s"];
/// --bidir: each direction's writes and reads apart.
pub const TCP_BOTH_COLUMNS: &[&str] = &["up tx b/s", "up rx b/s", "down tx b/s", "down rx b/s"];
/// rrul: the probe's round trip (idle phase), then each direction's reads (loaded phase).
pub const RRUL_COLUMNS: &[&str] = &[
    "lat µs",
    "up tx b/s",
    "up rx b/s",
    "down tx b/s",
    "down rx b/s",
];
pub const RR_COLUMNS: &[&str] = &["tps", "lat µs", "lost"];
const LOAD_HEADERS: &[&str] = &[
    "tx pps",
    "rx pps",
    "tx bit/s",
    "rx bit/s",
    "up tx b/s",
    "up rx b/s",
    "down tx b/s",
    "down rx b/s",
    "lost",
    "tps",
    "lat µs",
];

/// The live table's state: its columns are fixed at the first row, so every row lines up.
pub struct LiveTable {
    table: Option<Table>,
    ifaces: Vec<String>,
    load: &'static [&'static str],
    wide: bool,
    width: Option<usize>,
}

impl LiveTable {
    pub fn new(
        ifaces: Vec<String>,
        load: &'static [&'static str],
        wide: bool,
        width: Option<usize>,
    ) -> LiveTable {
        LiveTable {
            table: None,
            ifaces,
            load,
            wide,
            width,
        }
    }

    /// The header, once the first row has fixed the columns.
    pub fn header(&self) -> Option<String> {
        self.table.as_ref().map(Table::header)
    }

    /// The lines to print for a row: the header first, the first time.
    pub fn lines(&mut self, row: &Row, load: &LoadFigures) -> Vec<String> {
        let mut out = Vec::new();
        let table = self.table.get_or_insert_with(|| {
            let t = Table::new(self.load, self.ifaces.clone(), self.width, self.wide);
            out.push(t.header());
            t
        });
        out.push(table.row(row, load));
        out
    }
}

/// One column: header, width, priority (lower shows first), and how to fill it.
struct Column {
    header: &'static str,
    width: usize,
    priority: u8,
    wide_only: bool,
    cell: fn(&Row, &LoadFigures, &[String]) -> Option<String>,
}

fn sum_ifaces(row: &Row, name: &str, ifaces: &[String]) -> Option<f64> {
    let mut total = None;
    for (id, _, v) in row.iter() {
        if id.name == name {
            let ours = match id.label(n::LABEL_IFACE) {
                Some(i) => ifaces.is_empty() || ifaces.iter().any(|f| f == i),
                None => false,
            };
            if ours {
                *total.get_or_insert(0.0) += v;
            }
        }
    }
    total
}

/// The hottest CPU by system + softirq + irq time: `cpu1 97`.
fn hot_cpu(row: &Row) -> Option<(String, f64)> {
    let mut per_cpu: std::collections::BTreeMap<&str, f64> = Default::default();
    for (id, _, v) in row.iter() {
        if matches!(
            id.name.as_str(),
            n::CPU_SYSTEM_PCT | n::CPU_SOFTIRQ_PCT | n::CPU_IRQ_PCT
        ) {
            if let Some(cpu) = id.label(n::LABEL_CPU) {
                *per_cpu.entry(cpu).or_default() += v;
            }
        }
    }
    per_cpu
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(cpu, v)| (cpu.to_string(), v))
}

fn drops(row: &Row, ifaces: &[String]) -> Option<f64> {
    let parts = [
        sum_ifaces(row, n::IFACE_RX_DROPPED_PER_S, ifaces),
        row.total(n::SOFTNET_DROPPED_PER_S),
        row.total(n::UDP_RCVBUF_ERRORS_PER_S),
    ];
    parts
        .iter()
        .any(Option::is_some)
        .then(|| parts.iter().flatten().sum())
}

const COLUMNS: &[Column] = &[
    Column {
        header: "time",
        width: 7,
        priority: 0,
        wide_only: false,
        cell: |r, _, _| Some(format!("{:.1}s", r.t_s)),
    },
    Column {
        header: "tx pps",
        width: 7,
        priority: 1,
        wide_only: false,
        cell: |_, l, _| l.tx_pps.map(fmt::number),
    },
    Column {
        header: "rx pps",
        width: 7,
        priority: 1,
        wide_only: false,
        cell: |_, l, _| l.rx_pps.map(fmt::number),
    },
    Column {
        header: "tx bit/s",
        width: 8,
        priority: 1,
        wide_only: false,
        cell: |_, l, _| l.tx_bits_per_s.map(fmt::number),
    },
    Column {
        header: "rx bit/s",
        width: 8,
        priority: 1,
        wide_only: false,
        cell: |_, l, _| l.rx_bits_per_s.map(fmt::number),
    },
    Column {
        header: "up tx b/s",
        width: 9,
        priority: 1,
        wide_only: false,
        cell: |_, l, _| l.tx_bits_per_s.map(fmt::number),
    },
    Column {
        header: "up rx b/s",
        width: 9,
        priority: 1,
        wide_only: false,
        cell: |_, l, _| l.rx_bits_per_s.map(fmt::number),
    },
    Column {
        header: "down tx b/s",
        width: 11,
        priority: 1,
        wide_only: false,
        cell: |_, l, _| l.down_tx_bits_per_s.map(fmt::number),
    },
    Column {
        header: "down rx b/s",
        width: 11,
        priority: 1,
        wide_only: false,
        cell: |_, l, _| l.down_rx_bits_per_s.map(fmt::number),
    },
    Column {
        header: "tps",
        width: 7,
        priority: 1,
        wide_only: false,
        cell: |_, l, _| l.tps.map(fmt::number),
    },
    Column {
        header: "lat µs",
        width: 7,
        priority: 1,
        wide_only: false,
        cell: |_, l, _| l.mean_latency_us.map(|v| format!("{v:.1}")),
    },
    Column {
        header: "lost",
        width: 7,
        priority: 3,
        wide_only: false,
        cell: |_, l, _| l.lost.map(|v| fmt::number(v as f64)),
    },
    Column {
        header: "if rx b/s",
        width: 9,
        priority: 2,
        wide_only: false,
        cell: |r, _, i| sum_ifaces(r, n::IFACE_RX_BITS_PER_S, i).map(fmt::number),
    },
    Column {
        header: "if rx pps",
        width: 9,
        priority: 2,
        wide_only: false,
        cell: |r, _, i| sum_ifaces(r, n::IFACE_RX_PPS, i).map(fmt::number),
    },
    Column {
        header: "if tx b/s",
        width: 9,
        priority: 4,
        wide_only: false,
        cell: |r, _, i| sum_ifaces(r, n::IFACE_TX_BITS_PER_S, i).map(fmt::number),
    },
    Column {
        header: "if tx pps",
        width: 9,
        priority: 4,
        wide_only: false,
        cell: |r, _, i| sum_ifaces(r, n::IFACE_TX_PPS, i).map(fmt::number),
    },
    Column {
        header: "in/s",
        width: 6,
        priority: 1,
        wide_only: false,
        cell: |r, _, _| r.total(n::INTR_PER_S).map(fmt::number),
    },
    Column {
        header: "cs/s",
        width: 6,
        priority: 1,
        wide_only: false,
        cell: |r, _, _| r.total(n::CS_PER_S).map(fmt::number),
    },
    Column {
        header: "NET_RX/s",
        width: 8,
        priority: 2,
        wide_only: false,
        cell: |r, _, _| r.total(n::SOFTIRQ_NET_RX_PER_S).map(fmt::number),
    },
    Column {
        header: "us",
        width: 3,
        priority: 1,
        wide_only: false,
        cell: |r, _, _| {
            Some(format!(
                "{:.0}",
                r.total(n::CPU_USER_PCT)? + r.total(n::CPU_NICE_PCT).unwrap_or(0.0)
            ))
        },
    },
    Column {
        header: "sy",
        width: 3,
        priority: 1,
        wide_only: false,
        cell: |r, _, _| r.total(n::CPU_SYSTEM_PCT).map(|v| format!("{v:.0}")),
    },
    Column {
        header: "si",
        width: 3,
        priority: 1,
        wide_only: false,
        cell: |r, _, _| {
            Some(format!(
                "{:.0}",
                r.total(n::CPU_SOFTIRQ_PCT)? + r.total(n::CPU_IRQ_PCT).unwrap_or(0.0)
            ))
        },
    },
    Column {
        header: "id",
        width: 3,
        priority: 1,
        wide_only: false,
        cell: |r, _, _| r.total(n::CPU_IDLE_PCT).map(|v| format!("{v:.0}")),
    },
    Column {
        header: "hot cpu",
        width: 9,
        priority: 0,
        wide_only: false,
        cell: |r, _, _| hot_cpu(r).map(|(c, v)| format!("cpu{c} {v:.0}")),
    },
    Column {
        header: "drops/s",
        width: 7,
        priority: 2,
        wide_only: false,
        cell: |r, _, i| drops(r, i).map(fmt::number),
    },
    Column {
        header: "retx/s",
        width: 6,
        priority: 3,
        wide_only: false,
        cell: |r, _, _| r.total(n::TCP_RETRANS_SEGS_PER_S).map(fmt::number),
    },
    Column {
        header: "wa",
        width: 3,
        priority: 5,
        wide_only: true,
        cell: |r, _, _| r.total(n::CPU_IOWAIT_PCT).map(|v| format!("{v:.0}")),
    },
    Column {
        header: "st",
        width: 3,
        priority: 5,
        wide_only: true,
        cell: |r, _, _| r.total(n::CPU_STEAL_PCT).map(|v| format!("{v:.0}")),
    },
    Column {
        header: "r",
        width: 3,
        priority: 5,
        wide_only: true,
        cell: |r, _, _| r.total(n::PROCS_RUNNING).map(|v| format!("{v:.0}")),
    },
    Column {
        header: "squeeze/s",
        width: 9,
        priority: 5,
        wide_only: true,
        cell: |r, _, _| r.total(n::SOFTNET_TIME_SQUEEZE_PER_S).map(fmt::number),
    },
    Column {
        header: "NET_TX/s",
        width: 8,
        priority: 5,
        wide_only: true,
        cell: |r, _, _| r.total(n::SOFTIRQ_NET_TX_PER_S).map(fmt::number),
    },
    Column {
        header: "psi cpu",
        width: 7,
        priority: 5,
        wide_only: true,
        cell: |r, _, _| r.total(n::PSI_CPU_SOME_PCT).map(|v| format!("{v:.1}")),
    },
];

/// Which columns a table shows; fixed once, so every row lines up with the header.
pub struct Table {
    columns: Vec<&'static Column>,
    ifaces: Vec<String>,
}

impl Table {
    /// `load`: the workload columns to show (none for watch); `ifaces`: the interfaces to sum (empty = all but lo,
    /// unless only lo is asked for); `width`: the terminal's, or `None` for no limit.
    pub fn new(load: &[&str], ifaces: Vec<String>, width: Option<usize>, wide: bool) -> Table {
        let mut candidates: Vec<&'static Column> = COLUMNS
            .iter()
            .filter(|c| wide || !c.wide_only)
            .filter(|c| !LOAD_HEADERS.contains(&c.header) || load.contains(&c.header))
            .collect();
        if let (Some(limit), false) = (width, wide) {
            // Drop the least important columns until the line fits, keeping table order.
            let line = |cols: &[&Column]| cols.iter().map(|c| c.width + 1).sum::<usize>();
            while line(&candidates) > limit {
                let Some(worst) = candidates
                    .iter()
                    .map(|c| c.priority)
                    .max()
                    .filter(|p| *p > 0)
                else {
                    break;
                };
                let Some(pos) = candidates.iter().rposition(|c| c.priority == worst) else {
                    break;
                };
                candidates.remove(pos);
            }
        }
        Table {
            columns: candidates,
            ifaces,
        }
    }

    pub fn header(&self) -> String {
        self.columns
            .iter()
            .map(|c| format!("{:>w$}", c.header, w = c.width))
            .collect::<Vec<_>>()
            .join(" ")
    }

    pub fn row(&self, row: &Row, load: &LoadFigures) -> String {
        self.columns
            .iter()
            .map(|c| {
                format!(
                    "{:>w$}",
                    (c.cell)(row, load, &self.ifaces).unwrap_or_else(|| "-".into()),
                    w = c.width
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_model::{MetricId, Unit};

    fn row() -> Row {
        let v = |name: &str, val: f64| (MetricId::new(name), Unit::PerSecond, val);
        let c = |name: &str, cpu: &str, val: f64| {
            (MetricId::new(name).with("cpu", cpu), Unit::Percent, val)
        };
        Row::from_values(
            3.0,
            1.0,
            vec![
                v(n::INTR_PER_S, 12_000.0),
                v(n::CS_PER_S, 25_000.0),
                v(n::CPU_USER_PCT, 5.0),
                v(n::CPU_SYSTEM_PCT, 30.0),
                v(n::CPU_SOFTIRQ_PCT, 20.0),
                v(n::CPU_IDLE_PCT, 45.0),
                c(n::CPU_SYSTEM_PCT, "0", 10.0),
                c(n::CPU_SYSTEM_PCT, "1", 50.0),
                c(n::CPU_SOFTIRQ_PCT, "1", 40.0),
                (
                    MetricId::new(n::IFACE_RX_PPS).with("iface", "eth0"),
                    Unit::PacketsPerSecond,
                    1000.0,
                ),
                (
                    MetricId::new(n::IFACE_RX_PPS).with("iface", "lo"),
                    Unit::PacketsPerSecond,
                    7.0,
                ),
            ],
        )
    }

    #[test]
    fn hottest_cpu_is_named() {
        assert_eq!(hot_cpu(&row()), Some(("1".into(), 90.0)));
        let t = Table::new(&[], vec![], None, false);
        let line = t.row(&row(), &LoadFigures::default());
        assert!(line.contains("cpu1 90"), "{line}");
        assert!(line.contains("12.0 k") && line.contains("25.0 k"), "{line}");
    }

    #[test]
    fn unmeasured_is_a_dash_not_zero() {
        let t = Table::new(&[], vec![], None, false);
        let header = t.header();
        let line = t.row(&row(), &LoadFigures::default());
        let col = header
            .split_whitespace()
            .position(|h| h == "retx/s")
            .unwrap();
        assert!(line.split_whitespace().any(|c| c == "-"), "{line}");
        assert!(col > 0);
    }

    #[test]
    fn fits_the_width_and_wide_shows_more() {
        let narrow = Table::new(UDP_COLUMNS, vec![], Some(60), false);
        assert!(narrow.header().len() <= 60, "{}", narrow.header());
        assert!(
            narrow.header().contains("hot cpu"),
            "hot cpu is kept: {}",
            narrow.header()
        );
        let wide = Table::new(UDP_COLUMNS, vec![], Some(60), true);
        assert!(wide.header().contains("squeeze/s"));
    }

    #[test]
    fn interfaces_are_summed_by_choice() {
        let r = row();
        assert_eq!(
            sum_ifaces(&r, n::IFACE_RX_PPS, &["eth0".into()]),
            Some(1000.0)
        );
        assert_eq!(sum_ifaces(&r, n::IFACE_RX_PPS, &[]), Some(1007.0));
    }
}
