//! The serving host, sampled while it serves: for the metrics endpoint of `serve`.

use anyhow::Context;
use netceil_model::{MetricId, Unit};
use netceil_probe::{spawn_sampler, Row, SamplerConfig, SamplerHandle, Source};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::ServeTotals;

/// Samples this host every interval and hands each row, with the server's totals added as
/// `serve_<name>_total` counts, to whoever publishes them.
pub struct HostSampler {
    sampler: SamplerHandle,
    forward: std::thread::JoinHandle<()>,
}

impl HostSampler {
    /// Starts the sampler, and a thread that gives `publish` every row it takes.
    pub fn start(
        source: Arc<dyn Source + Send + Sync>,
        interval: Duration,
        totals: Arc<ServeTotals>,
        publish: impl Fn(&Row) + Send + 'static,
    ) -> anyhow::Result<HostSampler> {
        let (tx, rows) = std::sync::mpsc::channel::<Row>();
        let sampler = spawn_sampler(
            source,
            SamplerConfig {
                interval,
                ..SamplerConfig::default()
            },
            Arc::new(AtomicBool::new(false)),
            tx,
        )
        .context("starting the sampler for --metrics-listen")?;
        let forward = std::thread::Builder::new()
            .name("netceil-serve-metrics".into())
            .spawn(move || {
                // Ends when the sampler stops and drops its end of the channel.
                for mut row in rows {
                    for (name, n) in totals.counters() {
                        row.extra.push((
                            MetricId::new(format!("serve_{name}_total")),
                            Unit::Count,
                            n as f64,
                        ));
                    }
                    publish(&row);
                }
            })
            .context("starting the metrics thread")?;
        Ok(HostSampler { sampler, forward })
    }

    /// Stops the sampler and waits for the last row to be handed over.
    pub fn stop(self) {
        let _ = self.sampler.stop();
        let _ = self.forward.join();
    }
}
