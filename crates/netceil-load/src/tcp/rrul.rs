//! Latency under load, as flent's RRUL test measures it: bulk TCP flows up and down at once
//! while a small UDP request/response probe measures the round trip.
//!
//! Two phases: first the probe alone (idle), then the probe beside the flows (loaded). The
//! answer is how much the round trip grew, quantile by quantile (loaded − idle). The probe is
//! netceil's UDP request/response client at a fixed rate (flent's ping runs at 5 Hz; here the
//! default is 100 requests/s, so a 10 s phase has 1000 samples for its p99); its round trip is
//! counted from each request's actual send to its answer.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;

use netceil_model::{LatencySummary, Results, RrulResults, TcpDirection};

use super::{TcpConfig, TcpProgress};
use crate::rr::{self, RrConfig, RrProgress, RrProto};
use crate::threads;
use crate::LoadError;

/// The probe's request and answer, bytes (as a ping's).
pub const PROBE_BYTES: usize = 64;

/// A latency-under-load test.
#[derive(Debug, Clone, PartialEq)]
pub struct RrulConfig {
    /// Bulk flows per direction.
    pub flows: u32,
    /// Length of the loaded phase.
    pub duration: Duration,
    /// Length of the idle phase (the probe alone).
    pub idle: Duration,
    /// Probe requests per second.
    pub rr_rate: f64,
    /// The up flows' rate each (`--rate-per-flow`); `None`: as fast as they go.
    pub rate_per_flow_bps: Option<f64>,
    pub ipv6: bool,
    /// The far end's TCP data port (`netceil serve`); `None`: loopback, in process.
    pub tcp_target: Option<SocketAddr>,
    /// The far end's UDP echo for the probe; `None`: loopback, in process.
    pub probe_target: Option<SocketAddr>,
    /// Marks the probe's datagrams.
    pub run_id: Option<u16>,
}

impl RrulConfig {
    /// The bulk flows: both directions at once.
    pub fn tcp(&self) -> TcpConfig {
        TcpConfig {
            flows: self.flows,
            rate_per_flow_bps: self.rate_per_flow_bps,
            duration: self.duration,
            ipv6: self.ipv6,
            target: self.tcp_target,
            direction: TcpDirection::Both,
            ..TcpConfig::default()
        }
    }

    /// The probe for a phase of `length`.
    pub fn probe(&self, length: Duration) -> RrConfig {
        RrConfig {
            proto: RrProto::Udp,
            size: PROBE_BYTES,
            flows: 1,
            rate_tps: Some(self.rr_rate),
            duration: length,
            ipv6: self.ipv6,
            target: self.probe_target,
            run_id: self.run_id,
            ..RrConfig::default()
        }
    }

    pub fn validate(&self) -> Result<(), LoadError> {
        if self.idle.is_zero() {
            return Err(LoadError::InvalidConfig(
                "the idle phase must be longer than 0 s: it is what the loaded round trip is \
                 compared with"
                    .into(),
            ));
        }
        if self.tcp_target.is_some() != self.probe_target.is_some() {
            return Err(LoadError::InvalidConfig(
                "rrul needs both far-end ports (TCP and UDP echo), or neither".into(),
            ));
        }
        self.tcp().validate()?;
        self.probe(self.duration).validate()
    }
}

/// A look at a running rrul test.
#[derive(Debug, Clone)]
pub enum RrulProgress {
    /// The probe alone.
    Idle(RrProgress),
    /// The flows (both directions) beside the probe; `elapsed_s` counts from the loaded
    /// phase's start. With them, the probe's latest report not given before (`None` when it
    /// has made none since the flows' last report).
    Loaded(TcpProgress, Option<RrProgress>),
}

/// Runs the idle phase, then the loaded phase, and returns the flows' results with the
/// probe's figures in `rrul` (and the loaded round trip in `service_us`).
pub fn run_rrul(
    cfg: &RrulConfig,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&RrulProgress),
) -> Result<Results, LoadError> {
    cfg.validate()?;
    let idle = rr::run_rr(&cfg.probe(cfg.idle), stop, &mut |p| {
        on_progress(&RrulProgress::Idle(p.clone()))
    })?;
    // The probe reports on its own thread; the flows' reports carry its latest one.
    let latest: Mutex<Option<RrProgress>> = Mutex::new(None);
    let (bulk, loaded) = std::thread::scope(|s| {
        let probe = cfg.probe(cfg.duration);
        let latest = &latest;
        let handle = threads::spawn_scoped(s, "netceil-rrul-probe".into(), move || {
            rr::run_rr(&probe, stop, &mut |p| {
                if let Ok(mut l) = latest.lock() {
                    *l = Some(p.clone());
                }
            })
        });
        let bulk = super::run_tcp(&cfg.tcp(), stop, &mut |p| {
            let probe = latest.lock().ok().and_then(|mut l| l.take());
            on_progress(&RrulProgress::Loaded(p.clone(), probe))
        });
        let loaded = match handle {
            Ok(h) => h
                .join()
                .unwrap_or_else(|_| Err(LoadError::Other("the rrul probe panicked".into()))),
            Err(e) => Err(LoadError::Other(format!(
                "cannot start the rrul probe: {e}"
            ))),
        };
        (bulk, loaded)
    });
    let (mut results, loaded) = (bulk?, loaded?);
    let summary = rrul_summary(cfg, &idle, &loaded, &results).ok_or_else(|| {
        LoadError::Other(
            "the rrul probe got no answers in one of its phases: no round trip to compare".into(),
        )
    })?;
    results.notes.push(format!(
        "rrul: a {PROBE_BYTES} B UDP request/response probe at {} requests/s, alone for \
         {:.1} s, then beside {} bulk TCP flows each way for {:.1} s; round trips from each \
         request's actual send to its answer",
        cfg.rr_rate,
        cfg.idle.as_secs_f64(),
        cfg.flows,
        cfg.duration.as_secs_f64()
    ));
    results.notes.extend(
        idle.notes
            .iter()
            .map(|n| format!("probe, idle: {n}"))
            .chain(loaded.notes.iter().map(|n| format!("probe, loaded: {n}"))),
    );
    results.service_us = Some(summary.loaded_rtt_us.clone());
    results.rrul = Some(summary);
    Ok(results)
}

/// The round trip a probe run measured: from the actual send (what ping counts) when it was
/// kept, else from the intended send.
fn round_trip(r: &Results) -> Option<&LatencySummary> {
    r.service_us
        .as_ref()
        .or(r.latency_us.as_ref())
        .filter(|l| l.count > 0)
}

fn rrul_summary(
    cfg: &RrulConfig,
    idle: &Results,
    loaded: &Results,
    bulk: &Results,
) -> Option<RrulResults> {
    let (i, l) = (round_trip(idle)?, round_trip(loaded)?);
    let way = |d: TcpDirection| {
        bulk.directions
            .iter()
            .find(|x| x.direction == d)
            .map_or(0.0, |x| x.bits_per_s)
    };
    Some(RrulResults {
        idle_s: cfg.idle.as_secs_f64(),
        loaded_s: cfg.duration.as_secs_f64(),
        idle_rtt_us: i.clone(),
        loaded_rtt_us: l.clone(),
        inflation_p50_us: l.p50 - i.p50,
        inflation_p90_us: l.p90 - i.p90,
        inflation_p99_us: l.p99 - i.p99,
        idle_lost: idle.lost_packets,
        loaded_lost: loaded.lost_packets,
        up_bits_per_s: way(TcpDirection::Up),
        down_bits_per_s: way(TcpDirection::Down),
    })
}
