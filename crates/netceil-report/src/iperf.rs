//! A run in iperf3's short per-interval layout (`netceil run --format iperf`): for each
//! workload, one line per sampled interval under a `[ ID] Interval Transfer Bitrate …` header,
//! then a separator and the totals, the sender's and the receiver's.
//!
//! The layout is iperf3's, so that eyes and scripts used to it find the columns where they
//! expect them; the figures are netceil's own: payload bytes and bits with decimal prefixes
//! (`6.17 MB`, `49.3 Mbit/s`, as everywhere in netceil), what the receiver read each interval,
//! and the loss netceil counted by sequence number. The `[ ID]` is the workload's place in the
//! run (1 for a single workload; 1, 2, 3 for the parts of the default suite). A value the
//! interval did not measure prints `-`, never 0.

use netceil_model::{fmt, names as n, Results, Run, Series, Unit, WorkloadKind};
use std::fmt::Write;

const SEPARATOR: &str = "- - - - - - - - - - - - - - - - - - - - - - - - -";

/// The run's workloads, each as its interval lines and totals, separated by a blank line.
/// A run without a workload of netceil's own (a watch, an import) has no lines to give.
pub fn iperf(run: &Run) -> String {
    let parts: Vec<&Run> = if run.parts.is_empty() {
        vec![run]
    } else {
        run.parts.iter().collect()
    };
    let blocks: Vec<String> = parts
        .iter()
        .enumerate()
        .filter_map(|(i, p)| block(p, i + 1))
        .collect();
    if blocks.is_empty() {
        return "no workload of netceil's own in this run: no interval lines to show\n".into();
    }
    blocks.join("\n")
}

fn block(run: &Run, id: usize) -> Option<String> {
    let r = run.results.as_ref()?;
    let kind = run.workload.as_ref()?.kind;
    // Each heading over its column, right-aligned as the figures under it are.
    let lead_head = format!("{:<24}", "[ ID] Interval");
    let header = match kind {
        WorkloadKind::Udp => format!(
            "{lead_head}  {:>10}  {:>13}  Lost/Total Datagrams",
            "Transfer", "Bitrate"
        ),
        WorkloadKind::Tcp => format!(
            "{lead_head}  {:>10}  {:>13}  {:>4}",
            "Transfer", "Bitrate", "Retr"
        ),
        WorkloadKind::Rr => format!(
            "{lead_head}  {:>12} {:>15}  Mean latency",
            "Transactions", "Rate"
        ),
        _ => return None,
    };
    let mut s = String::new();
    let _ = writeln!(s, "{header}");
    for iv in intervals(&run.series) {
        let cells = match kind {
            WorkloadKind::Udp => udp_interval(&iv),
            WorkloadKind::Tcp => tcp_interval(&iv),
            _ => rr_interval(&iv),
        };
        let _ = writeln!(s, "{}  {cells}", lead(id, iv.from, iv.to));
    }
    let _ = writeln!(s, "{SEPARATOR}");
    let _ = writeln!(s, "{header}");
    let whole = lead(id, 0.0, r.duration_s);
    match kind {
        WorkloadKind::Udp => udp_totals(&mut s, &whole, r),
        WorkloadKind::Tcp => tcp_totals(&mut s, &whole, r),
        _ => rr_totals(&mut s, &whole, r),
    }
    Some(s)
}

/// `[  1]   0.00-1.00   sec`
fn lead(id: usize, from: f64, to: f64) -> String {
    let span = format!("{from:.2}-{to:.2}");
    format!("[{id:>3}] {span:>12}   sec")
}

/// One sampled interval: its span, seconds since the workload began, and its figures.
struct Interval<'a> {
    from: f64,
    to: f64,
    series: &'a Series,
    row: usize,
}

impl Interval<'_> {
    fn seconds(&self) -> f64 {
        self.to - self.from
    }

    /// The workload's own figure in this interval (a whole-run metric), if it was measured.
    fn rate(&self, name: &str) -> Option<f64> {
        self.series
            .total(name)
            .and_then(|m| m.values.get(self.row).copied().flatten())
            .filter(|v| v.is_finite())
    }

    /// The rate times the interval's length: how many in this interval.
    fn count(&self, name: &str) -> Option<f64> {
        self.rate(name).map(|v| (v * self.seconds()).round())
    }
}

fn intervals(series: &Series) -> Vec<Interval<'_>> {
    series
        .t_s
        .iter()
        .enumerate()
        .map(|(row, &to)| {
            let from = if row == 0 {
                (to - series.interval_s).max(0.0)
            } else {
                series.t_s[row - 1]
            };
            Interval {
                from,
                to,
                series,
                row,
            }
        })
        .collect()
}

fn dash(v: Option<String>) -> String {
    v.unwrap_or_else(|| fmt::MISSING.to_string())
}

/// Transfer and bitrate columns: `  6.17 MB   49.3 Mbit/s`.
fn transfer(bytes: Option<f64>, bits_per_s: Option<f64>) -> String {
    format!(
        "{:>10}  {:>13}",
        dash(bytes.map(|b| fmt::value(b, Unit::Bytes))),
        dash(bits_per_s.map(|b| fmt::value(b, Unit::BitsPerSecond)))
    )
}

fn lost_of(lost: f64, total: f64) -> String {
    let pct = if total > 0.0 {
        fmt::value(lost / total * 100.0, Unit::Percent)
    } else {
        fmt::MISSING.to_string()
    };
    format!("{lost:.0}/{total:.0} ({pct})")
}

fn udp_interval(iv: &Interval) -> String {
    let bits = iv.rate(n::LOAD_RX_BITS_PER_S);
    let bytes = bits.map(|b| b * iv.seconds() / 8.0);
    let lost = match (iv.count(n::LOAD_LOST_PER_S), iv.count(n::LOAD_TX_PPS)) {
        (Some(l), Some(t)) => lost_of(l, t),
        _ => fmt::MISSING.to_string(),
    };
    format!("{}  {lost}", transfer(bytes, bits))
}

fn tcp_interval(iv: &Interval) -> String {
    let bits = iv.rate(n::LOAD_RX_BITS_PER_S);
    let bytes = bits.map(|b| b * iv.seconds() / 8.0);
    let retr = dash(iv.count(n::TCP_RETRANS_PER_S).map(|r| format!("{r:.0}")));
    format!("{}  {retr:>4}", transfer(bytes, bits))
}

fn rr_interval(iv: &Interval) -> String {
    let tps = iv.rate(n::LOAD_TRANSACTIONS_PER_S);
    format!(
        "{:>12} {:>15}  {}",
        dash(iv.count(n::LOAD_TRANSACTIONS_PER_S).map(fmt::number)),
        dash(tps.map(|t| format!("{}/s", fmt::number(t)))),
        dash(
            iv.rate(n::LOAD_MEAN_LATENCY_US)
                .map(|l| fmt::value(l, Unit::Microseconds))
        )
    )
}

fn udp_totals(s: &mut String, whole: &str, r: &Results) {
    let _ = writeln!(
        s,
        "{whole}  {}  {} sent  sender",
        transfer(Some(r.tx_bytes as f64), Some(r.tx_bits_per_s)),
        r.tx_packets
    );
    let _ = writeln!(
        s,
        "{whole}  {}  {}  receiver",
        transfer(Some(r.rx_app_bytes as f64), Some(r.rx_app_bits_per_s)),
        lost_of(r.lost_packets as f64, r.tx_packets as f64)
    );
}

fn tcp_totals(s: &mut String, whole: &str, r: &Results) {
    let retr: Option<u64> = r
        .flows
        .iter()
        .map(|f| f.retransmits)
        .sum::<Option<u64>>()
        .filter(|_| !r.flows.is_empty());
    let _ = writeln!(
        s,
        "{whole}  {}  {:>4}  sender",
        transfer(Some(r.tx_bytes as f64), Some(r.tx_bits_per_s)),
        dash(retr.map(|n| n.to_string()))
    );
    let _ = writeln!(
        s,
        "{whole}  {}        receiver",
        transfer(Some(r.rx_app_bytes as f64), Some(r.rx_app_bits_per_s))
    );
}

fn rr_totals(s: &mut String, whole: &str, r: &Results) {
    let done = r.latency_us.as_ref().map(|l| l.count as f64);
    let latency = r.latency_us.as_ref().map(|l| {
        format!(
            "{} (p50 {}, p99 {})",
            fmt::value(l.mean, Unit::Microseconds),
            fmt::value(l.p50, Unit::Microseconds),
            fmt::value(l.p99, Unit::Microseconds)
        )
    });
    let timed_out = if r.lost_packets > 0 {
        format!(", {} timed out", r.lost_packets)
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "{whole}  {:>12} {:>15}  {}{timed_out}  client",
        dash(done.map(fmt::number)),
        dash(
            r.transactions_per_s
                .map(|t| format!("{}/s", fmt::number(t)))
        ),
        dash(latency)
    );
}
