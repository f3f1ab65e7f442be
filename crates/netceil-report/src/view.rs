//! Read-only views of a Run's series that several reports need: which metric carries the
//! throughput, how long each row lasted, how many cores were busy.
//!
//! A live run has the workload's own `load_*` figures; a watched or imported run may only
//! have interface counters, or nothing but a label. These helpers pick the best available
//! source in a fixed order, so the HTML report and `compare` agree on what "throughput" means.

use netceil_model::{names as n, Metric, Run, Series};

/// Meta label an importer sets when a log's throughput is known from outside the series
/// (e.g. the FTP client's figure next to a vmstat log), in bytes per second.
pub const LABEL_THROUGHPUT_BYTES_PER_S: &str = "throughput_bytes_per_s";
/// The same in bits per second.
pub const LABEL_THROUGHPUT_BITS_PER_S: &str = "throughput_bits_per_s";

/// Bit-rate metrics in order of preference: what the application received, else what it sent
/// (a run with `--to` only sends here), else the interfaces' busier direction. An interface's
/// two directions are one choice, by their means: on a sender the receive side carries only
/// the ACKs, 1/1000 of the data.
const THROUGHPUT_NAMES: [&[&str]; 3] = [
    &[n::LOAD_RX_BITS_PER_S],
    &[n::LOAD_TX_BITS_PER_S],
    &[n::IFACE_RX_BITS_PER_S, n::IFACE_TX_BITS_PER_S],
];
/// Packet-rate metrics in the same order.
const PACKET_RATE_NAMES: [&[&str]; 3] = [
    &[n::LOAD_RX_PPS],
    &[n::LOAD_TX_PPS],
    &[n::IFACE_RX_PPS, n::IFACE_TX_PPS],
];

/// The length of each row's interval in seconds: `t[i] − t[i−1]`, and `t[0]` for the first.
pub fn row_durations(series: &Series) -> Vec<f64> {
    let mut prev = 0.0;
    series
        .t_s
        .iter()
        .map(|&t| {
            let dt = t - prev;
            prev = t;
            dt
        })
        .collect()
}

/// Plain mean of the values present in `rows`.
pub fn mean_over(metric: &Metric, rows: &[usize]) -> Option<f64> {
    let present: Vec<f64> = rows
        .iter()
        .filter_map(|&r| metric.values.get(r).copied().flatten())
        .filter(|v| v.is_finite())
        .collect();
    (!present.is_empty()).then(|| present.iter().sum::<f64>() / present.len() as f64)
}

fn mean_all(metric: &Metric) -> Option<f64> {
    let rows: Vec<usize> = (0..metric.values.len()).collect();
    mean_over(metric, &rows)
}

/// The metric of this name that carries the traffic: the unlabeled total if there is one,
/// else the labeled one (e.g. the interface) with the highest mean. Metrics with no value
/// at all are skipped.
pub fn busiest<'a>(series: &'a Series, name: &str) -> Option<&'a Metric> {
    if let Some(total) = series.total(name).filter(|m| mean_all(m).is_some()) {
        return Some(total);
    }
    series
        .metrics
        .iter()
        .filter(|m| m.id.name == name)
        .filter_map(|m| mean_all(m).map(|mean| (m, mean)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(m, _)| m)
}

/// [`busiest`] over several names: the one whose busiest metric has the highest mean.
fn busiest_of<'a>(series: &'a Series, names: &[&str]) -> Option<&'a Metric> {
    names
        .iter()
        .filter_map(|name| busiest(series, name))
        .filter_map(|m| mean_all(m).map(|mean| (m, mean)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(m, _)| m)
}

/// The series' throughput in bit/s: the application's receive rate if measured, else its send
/// rate, else the busiest interface and direction (see [`THROUGHPUT_NAMES`]).
pub fn throughput_metric(series: &Series) -> Option<&Metric> {
    THROUGHPUT_NAMES
        .iter()
        .find_map(|names| busiest_of(series, names))
}

/// The series' packet rate in packets/s, in the same order of preference.
pub fn packet_rate_metric(series: &Series) -> Option<&Metric> {
    PACKET_RATE_NAMES
        .iter()
        .find_map(|names| busiest_of(series, names))
}

/// The first group of `names` that both series have, as each one's busiest metric of it;
/// if they share none, each series' own first choice.
fn shared_choice<'a>(
    a: &'a Series,
    b: &'a Series,
    names: &[&[&str]],
) -> (Option<&'a Metric>, Option<&'a Metric>) {
    for group in names {
        if let (Some(ma), Some(mb)) = (busiest_of(a, group), busiest_of(b, group)) {
            return (Some(ma), Some(mb));
        }
    }
    let own = |s: &'a Series| names.iter().find_map(|group| busiest_of(s, group));
    (own(a), own(b))
}

/// Throughput metrics for comparing two series: the same kind on both sides when possible,
/// so an application rate is not compared with an interface rate.
pub fn throughput_pair<'a>(
    a: &'a Series,
    b: &'a Series,
) -> (Option<&'a Metric>, Option<&'a Metric>) {
    shared_choice(a, b, &THROUGHPUT_NAMES)
}

/// Packet-rate metrics for comparing two series, chosen like [`throughput_pair`].
pub fn packet_rate_pair<'a>(
    a: &'a Series,
    b: &'a Series,
) -> (Option<&'a Metric>, Option<&'a Metric>) {
    shared_choice(a, b, &PACKET_RATE_NAMES)
}

/// Throughput known from outside the series, in bytes/s, with where it came from: the
/// person's annotation (`analyze --throughput 18MB/s`) first, else a meta label (see
/// [`LABEL_THROUGHPUT_BYTES_PER_S`]).
pub fn known_throughput_bytes_per_s(run: &Run) -> Option<(f64, String)> {
    if let Some(bits) = run
        .meta
        .annotations
        .throughput_bits_per_s
        .filter(|v| v.is_finite() && *v >= 0.0)
    {
        return Some((bits / 8.0, "annotation throughput_bits_per_s".into()));
    }
    let parse = |key: &str| {
        run.meta
            .labels
            .get(key)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    parse(LABEL_THROUGHPUT_BYTES_PER_S)
        .map(|b| (b, format!("label {LABEL_THROUGHPUT_BYTES_PER_S}")))
        .or_else(|| {
            parse(LABEL_THROUGHPUT_BITS_PER_S)
                .map(|b| (b / 8.0, format!("label {LABEL_THROUGHPUT_BITS_PER_S}")))
        })
}

/// The per-CPU metrics of this name, sorted by CPU number.
pub fn per_cpu<'a>(series: &'a Series, name: &str) -> Vec<(u32, &'a Metric)> {
    let mut cpus: Vec<(u32, &Metric)> = series
        .metrics
        .iter()
        .filter(|m| m.id.name == name)
        .filter_map(|m| {
            m.id.label(n::LABEL_CPU)
                .and_then(|c| c.parse().ok())
                .map(|c| (c, m))
        })
        .collect();
    cpus.sort_by_key(|(c, _)| *c);
    cpus
}

/// The machine-wide CPU busy share per row, %: `cpu_busy_pct` when recorded, else
/// 100 − idle − iowait (an imported vmstat log has us/sy/id but no busy column). The second
/// value says which.
pub fn cpu_busy_total(series: &Series) -> Option<(Vec<Option<f64>>, &'static str)> {
    if let Some(m) = series.total(n::CPU_BUSY_PCT) {
        return Some((m.values.clone(), n::CPU_BUSY_PCT));
    }
    let idle = series.total(n::CPU_IDLE_PCT)?;
    let iowait = series.total(n::CPU_IOWAIT_PCT);
    let values = (0..series.len())
        .map(|row| {
            let idle = idle.values.get(row).copied().flatten()?;
            let iowait = match iowait {
                Some(m) => m.values.get(row).copied().flatten()?,
                None => 0.0,
            };
            Some((100.0 - idle - iowait).max(0.0))
        })
        .collect();
    Some((values, "100 − cpu_idle_pct − cpu_iowait_pct"))
}

/// Busy cores per row (1.0 = one core fully busy): the sum of per-CPU busy shares when every
/// CPU has a value in that row, else the machine-wide share × the CPU count from the host info.
pub fn busy_cores(run: &Run) -> Vec<Option<f64>> {
    let series = &run.series;
    let cpus = per_cpu(series, n::CPU_BUSY_PCT);
    let total = cpu_busy_total(series).map(|(v, _)| v);
    let host_cpus = run.meta.host.cpus.filter(|&c| c > 0).map(f64::from);
    (0..series.len())
        .map(|row| {
            if !cpus.is_empty() {
                let per_cpu: Option<f64> = cpus
                    .iter()
                    .map(|(_, m)| m.values.get(row).copied().flatten())
                    .sum();
                if let Some(sum) = per_cpu {
                    return Some(sum / 100.0);
                }
            }
            let share = total.as_ref().and_then(|v| v.get(row).copied().flatten())?;
            host_cpus.map(|c| share / 100.0 * c)
        })
        .collect()
}

/// The values of a metric in `rows`, `None` where missing.
pub fn values_in(metric: Option<&Metric>, rows: &[usize]) -> Vec<Option<f64>> {
    rows.iter()
        .map(|&r| metric.and_then(|m| m.values.get(r).copied().flatten()))
        .collect()
}

/// Σ num·dt / Σ den·dt over the rows where both are present: the ratio of two rates over a
/// phase, weighted by how long each row lasted. `None` when nothing overlaps or den sums to 0.
pub fn weighted_ratio(num: &[Option<f64>], den: &[Option<f64>], dt: &[f64]) -> Option<f64> {
    let mut sum_num = 0.0;
    let mut sum_den = 0.0;
    let mut any = false;
    for ((x, y), d) in num.iter().zip(den).zip(dt) {
        if let (Some(x), Some(y)) = (x, y) {
            if x.is_finite() && y.is_finite() {
                sum_num += x * d;
                sum_den += y * d;
                any = true;
            }
        }
    }
    (any && sum_den != 0.0).then(|| sum_num / sum_den)
}

/// Σ v·dt / Σ dt over the rows where a value is present: a time-weighted mean rate.
pub fn weighted_mean(values: &[Option<f64>], dt: &[f64]) -> Option<f64> {
    let ones: Vec<Option<f64>> = values.iter().map(|v| v.map(|_| 1.0)).collect();
    weighted_ratio(values, &ones, dt)
}

/// The run's duration in seconds: the results' if known, else the end of the last row.
pub fn duration_s(run: &Run) -> Option<f64> {
    run.results
        .as_ref()
        .map(|r| r.duration_s)
        .filter(|d| *d > 0.0)
        .or_else(|| run.series.t_s.last().copied())
}

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_model::{MetricId, RunSource, Unit};

    #[test]
    fn picks_busiest_interface_and_weights_by_duration() {
        let mut s = Series::new(1.0);
        for (t, lo, eth) in [(1.0, 10.0, 5.0), (3.0, 30.0, 5.0)] {
            s.push_row(t);
            let lo_id = MetricId::new(n::IFACE_RX_BITS_PER_S).with("iface", "lo");
            let eth_id = MetricId::new(n::IFACE_RX_BITS_PER_S).with("iface", "eth0");
            s.set(&lo_id, Unit::BitsPerSecond, lo);
            s.set(&eth_id, Unit::BitsPerSecond, eth);
        }
        let m = throughput_metric(&s).unwrap();
        assert_eq!(m.id.label("iface"), Some("lo"));
        let dt = row_durations(&s);
        assert_eq!(dt, vec![1.0, 2.0]);
        // (10·1 + 30·2) / 3.
        let mean = weighted_mean(&values_in(Some(m), &[0, 1]), &dt).unwrap();
        assert!((mean - 70.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn a_sender_s_throughput_is_the_data_it_sent_not_the_acks_it_received() {
        // A `--to` TCP run: 12.9 Gbit/s out, the ACKs 12.8 Mbit/s in, no receive figure of
        // the application's own.
        let mut s = Series::new(1.0);
        let lo = |name| MetricId::new(name).with("iface", "lo");
        for t in [1.0, 2.0] {
            s.push_row(t);
            s.set(&lo(n::IFACE_RX_BITS_PER_S), Unit::BitsPerSecond, 12.8e6);
            s.set(&lo(n::IFACE_TX_BITS_PER_S), Unit::BitsPerSecond, 12.9e9);
        }
        assert_eq!(
            throughput_metric(&s).unwrap().id.name,
            n::IFACE_TX_BITS_PER_S
        );
        s.set(
            &MetricId::new(n::LOAD_TX_BITS_PER_S),
            Unit::BitsPerSecond,
            12.7e9,
        );
        assert_eq!(
            throughput_metric(&s).unwrap().id.name,
            n::LOAD_TX_BITS_PER_S
        );
        // The application's receive rate, when it has one, still comes first.
        s.set(
            &MetricId::new(n::LOAD_RX_BITS_PER_S),
            Unit::BitsPerSecond,
            1e9,
        );
        assert_eq!(
            throughput_metric(&s).unwrap().id.name,
            n::LOAD_RX_BITS_PER_S
        );
    }

    #[test]
    fn busy_cores_from_per_cpu_or_total() {
        let mut run = Run::new("r", RunSource::Live);
        run.meta.host.cpus = Some(4);
        run.series.push_row(1.0);
        run.series
            .set(&MetricId::new(n::CPU_BUSY_PCT), Unit::Percent, 50.0);
        assert_eq!(busy_cores(&run), vec![Some(2.0)]);
        for (cpu, v) in [(0, 100.0), (1, 20.0)] {
            let id = MetricId::new(n::CPU_BUSY_PCT).with("cpu", cpu.to_string());
            run.series.set(&id, Unit::Percent, v);
        }
        assert_eq!(busy_cores(&run), vec![Some(1.2)]);
    }

    #[test]
    fn busy_from_idle_when_not_recorded() {
        let mut run = Run::new("r", RunSource::Live);
        run.meta.host.cpus = Some(1);
        run.series.push_row(1.0);
        run.series
            .set(&MetricId::new(n::CPU_IDLE_PCT), Unit::Percent, 70.0);
        run.series.push_row(2.0);
        let (values, how) = cpu_busy_total(&run.series).unwrap();
        assert_eq!(values, vec![Some(30.0), None]);
        assert!(how.contains("cpu_idle_pct"));
        assert_eq!(busy_cores(&run), vec![Some(0.3), None]);
    }

    #[test]
    fn known_throughput_from_annotation_or_label() {
        let mut run = Run::new("r", RunSource::Live);
        assert_eq!(known_throughput_bytes_per_s(&run), None);
        run.meta
            .labels
            .insert(LABEL_THROUGHPUT_BITS_PER_S.into(), "8e6".into());
        assert_eq!(
            known_throughput_bytes_per_s(&run),
            Some((1e6, "label throughput_bits_per_s".to_string()))
        );
        run.meta.annotations.throughput_bits_per_s = Some(16e6);
        assert_eq!(
            known_throughput_bytes_per_s(&run),
            Some((2e6, "annotation throughput_bits_per_s".to_string()))
        );
    }
}
