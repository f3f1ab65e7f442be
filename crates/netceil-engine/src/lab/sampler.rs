//! The lab's own counters: every lab interface's packet and byte counters, read by threads
//! parked in each namespace, merged into the sender's run as `lab_*{netns,iface}` series.

use netceil_lab::nsdev::{NetDevRow, NsReader};
use netceil_lab::topo::LabSpec;
use netceil_lab::LabError;
use netceil_model::params::LabIface;
use netceil_model::{MetricId, Run, Unit};

/// Every lab interface's counters over time, read from this process.
pub(super) struct NsSampler {
    readers: Vec<NsReader>,
    /// (unix time, netns, iface, counters)
    samples: Vec<(f64, String, NetDevRow)>,
}

impl NsSampler {
    pub(super) fn start(spec: &LabSpec) -> Result<NsSampler, LabError> {
        let readers = spec
            .namespaces()
            .iter()
            .map(|ns| NsReader::start(ns))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(NsSampler {
            readers,
            samples: Vec::new(),
        })
    }

    pub(super) fn sample(&mut self, spec: &LabSpec) {
        let now = crate::now_unix_s();
        for r in &self.readers {
            let Ok(nd) = r.read() else { continue };
            for row in nd.ifaces {
                let ours = spec
                    .interfaces()
                    .iter()
                    .any(|(ns, i)| *ns == r.netns && *i == row.iface);
                if ours {
                    self.samples.push((now, r.netns.clone(), row));
                }
            }
        }
    }

    /// Rates per interface into the run's rows (by time), and totals per interface.
    pub(super) fn merge_into(&self, run: &mut Run) -> Vec<LabIface> {
        let start = run.meta.started_unix_s;
        let mut keys: Vec<(String, String)> = self
            .samples
            .iter()
            .map(|(_, ns, r)| (ns.clone(), r.iface.clone()))
            .collect();
        keys.sort();
        keys.dedup();
        let mut totals = Vec::new();
        for (ns, iface) in keys {
            let rows: Vec<_> = self
                .samples
                .iter()
                .filter(|(_, n, r)| *n == ns && r.iface == iface)
                .collect();
            for w in rows.windows(2) {
                let (t0, _, a) = w[0];
                let (t1, _, b) = w[1];
                let dt = t1 - t0;
                if dt <= 0.0 {
                    continue;
                }
                let t = t1 - start;
                let Some(row) = run.series.row_near(t) else {
                    continue;
                };
                let id = |name: &str| {
                    MetricId::new(name)
                        .with("netns", ns.as_str())
                        .with("iface", iface.as_str())
                };
                let rate = |x: u64, y: u64| y.saturating_sub(x) as f64 / dt;
                run.series.set_at(
                    row,
                    &id("lab_rx_packets_per_s"),
                    Unit::PacketsPerSecond,
                    rate(a.rx_packets, b.rx_packets),
                );
                run.series.set_at(
                    row,
                    &id("lab_tx_packets_per_s"),
                    Unit::PacketsPerSecond,
                    rate(a.tx_packets, b.tx_packets),
                );
                run.series.set_at(
                    row,
                    &id("lab_rx_bits_per_s"),
                    Unit::BitsPerSecond,
                    rate(a.rx_bytes, b.rx_bytes) * 8.0,
                );
                run.series.set_at(
                    row,
                    &id("lab_drops_per_s"),
                    Unit::PerSecond,
                    rate(a.rx_dropped + a.tx_dropped, b.rx_dropped + b.tx_dropped),
                );
            }
            if let (Some((_, _, first)), Some((_, _, last))) = (rows.first(), rows.last()) {
                totals.push(LabIface {
                    netns: ns.clone(),
                    iface: iface.clone(),
                    rx_packets: last.rx_packets.saturating_sub(first.rx_packets),
                    tx_packets: last.tx_packets.saturating_sub(first.tx_packets),
                    rx_bytes: last.rx_bytes.saturating_sub(first.rx_bytes),
                    rx_dropped: last.rx_dropped.saturating_sub(first.rx_dropped),
                    tx_dropped: last.tx_dropped.saturating_sub(first.tx_dropped),
                });
            }
        }
        totals
    }
}
