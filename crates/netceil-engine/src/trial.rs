//! A trial: one of netceil's own workloads at one setting, validated and ready to measure.
//! It is made from typed parameters ([`LoadParams`]), and its stored workload is those
//! parameters again, so a stored trial can be run again exactly (`--resume`, a lab's child,
//! `--confirm`).

use anyhow::anyhow;
use netceil_load::tcp::rrul::RrulConfig;
use netceil_load::{rr, tcp, udp};
use netceil_model::params::{
    LoadParams, RrParams, RrProtocol, RrulParams, TcpPacingRequest, TcpParams, TcpRecvBuffer,
    UdpParams,
};
use netceil_model::{Rate, Workload};
use std::net::SocketAddr;
use std::time::Duration;

use crate::Error;

/// A workload, validated and ready to run.
#[derive(Debug, Clone)]
pub enum Trial {
    Udp(udp::UdpConfig, UdpParams),
    Tcp(tcp::TcpConfig, TcpParams),
    Rr(rr::RrConfig, RrParams),
    Rrul(RrulConfig, RrulParams),
}

/// The parameters of a UDP train of `payload_bytes` with everything else as the load engine
/// has it by default (one flow, one thread, sleep pacing, 10 s, the kernel's buffers): the
/// one place a planner or a test starts a UDP trial from.
pub fn udp_defaults(payload_bytes: usize) -> UdpParams {
    let d = udp::UdpConfig::default();
    UdpParams {
        payload_bytes,
        frame_bytes: 0,
        rate: d.rate,
        interval_ns: d.interval_ns,
        pacing: d.pacing,
        burst: d.burst,
        count: d.count,
        duration_s: d.duration.as_secs_f64(),
        flows: d.flows,
        threads: d.threads,
        ipv6: d.ipv6,
        target: None,
        rcvbuf: d.rcvbuf,
        rcvbuf_force: d.rcvbuf_force,
        sndbuf: d.sndbuf,
        gso: d.gso,
        gso_segments: d.gso_segments,
        gro: d.gro,
        rx_cpu: d.rx_cpu,
        tx_cpu: d.tx_cpu,
    }
    .with_frame()
}

fn target_of(t: &Option<String>) -> Result<Option<SocketAddr>, Error> {
    t.as_deref()
        .map(|s| {
            s.parse::<SocketAddr>()
                .map_err(|e| Error::usage(anyhow!("target {s}: {e}; expected ip:port")))
        })
        .transpose()
}

fn duration_of(s: f64) -> Result<Duration, Error> {
    Duration::try_from_secs_f64(s)
        .map_err(|_| Error::usage(anyhow!("duration {s} s: expected a positive number")))
}

impl Trial {
    /// The trial these parameters describe; `wire_id` marks this run's datagrams.
    pub fn new(params: LoadParams, wire_id: u16) -> Result<Trial, Error> {
        match params {
            LoadParams::Udp(p) => Trial::udp(p, wire_id),
            LoadParams::Tcp(p) => Trial::tcp(p),
            LoadParams::Rr(p) => Trial::rr(p),
            LoadParams::Rrul(p) => Trial::rrul(p, wire_id),
        }
    }

    /// A stored workload of netceil's own, to be run again.
    pub fn from_workload(w: &Workload, wire_id: u16) -> Result<Trial, Error> {
        Trial::new(LoadParams::from_workload(w).map_err(Error::usage)?, wire_id)
    }

    pub fn udp(p: UdpParams, wire_id: u16) -> Result<Trial, Error> {
        let p = p.with_frame();
        if let Some(r) = p.rate {
            // A bit rate is a packet rate only once the payload is known.
            let pps = r.packets_per_second(p.payload_bytes);
            if pps > netceil_model::MAX_PACKETS_PER_S {
                return Err(Error::usage(anyhow!(
                    "--rate {r} is {} at {}-byte payloads, above {}, the fastest rate netceil takes",
                    Rate::PacketsPerSecond(pps),
                    p.payload_bytes,
                    Rate::PacketsPerSecond(netceil_model::MAX_PACKETS_PER_S)
                )));
            }
        }
        let cfg = udp::UdpConfig {
            payload_bytes: p.payload_bytes,
            rate: p.rate,
            interval_ns: p.interval_ns,
            pacing: p.pacing,
            burst: p.burst,
            count: p.count,
            duration: duration_of(p.duration_s)?,
            flows: p.flows,
            threads: p.threads,
            ipv6: p.ipv6,
            target: target_of(&p.target)?,
            rcvbuf: p.rcvbuf,
            rcvbuf_force: p.rcvbuf_force,
            // Read through the session's source when it measures the trial.
            rmem_max: None,
            sndbuf: p.sndbuf,
            run_id: wire_id,
            gso: p.gso,
            gso_segments: p.gso_segments,
            gro: p.gro,
            rx_cpu: p.rx_cpu,
            tx_cpu: p.tx_cpu,
        };
        cfg.validate()?;
        Ok(Trial::Udp(cfg, p))
    }

    pub fn tcp(p: TcpParams) -> Result<Trial, Error> {
        let cfg = tcp::TcpConfig {
            flows: p.flows,
            msg_size: p.msg_size,
            rate_per_flow_bps: p.rate_per_flow_bps,
            duration: duration_of(p.duration_s)?,
            threads: p.threads,
            ipv6: p.ipv6,
            target: target_of(&p.target)?,
            pacing: match p.pacing {
                TcpPacingRequest::Auto => tcp::TcpPacingChoice::Auto,
                TcpPacingRequest::Kernel => tcp::TcpPacingChoice::Kernel,
                TcpPacingRequest::App => tcp::TcpPacingChoice::Application,
            },
            nodelay: false,
            rx_cpu: p.rx_cpu,
            tx_cpu: p.tx_cpu,
            congestion: p.congestion.clone(),
            direction: p.direction,
            // Auto's cache size is this machine's, read by the session that runs the trial.
            recv_buffer: match p.rcvbuf {
                TcpRecvBuffer::Auto => tcp::RecvBuffer::default(),
                TcpRecvBuffer::Kernel => tcp::RecvBuffer::Kernel,
                TcpRecvBuffer::Bytes(b) => {
                    tcp::RecvBuffer::Fixed(usize::try_from(b).unwrap_or(usize::MAX))
                }
            },
            sink_wakes: p.sink_wakes,
        };
        cfg.validate()?;
        Ok(Trial::Tcp(cfg, p))
    }

    pub fn rr(p: RrParams) -> Result<Trial, Error> {
        let cfg = rr::RrConfig {
            proto: match p.proto {
                RrProtocol::Tcp => rr::RrProto::Tcp,
                RrProtocol::Udp => rr::RrProto::Udp,
            },
            size: p.size,
            flows: p.flows,
            rate_tps: p.rate_tps,
            duration: duration_of(p.duration_s)?,
            ipv6: p.ipv6,
            target: target_of(&p.target)?,
            run_id: None,
            rx_cpu: p.rx_cpu,
            tx_cpu: p.tx_cpu,
            spin: p.spin,
        };
        cfg.validate()?;
        Ok(Trial::Rr(cfg, p))
    }

    pub fn rrul(p: RrulParams, wire_id: u16) -> Result<Trial, Error> {
        if !(p.rr_rate_tps.is_finite() && p.rr_rate_tps > 0.0) {
            return Err(Error::usage(anyhow!(
                "--rr-rate {}: expected a positive number of requests per second",
                p.rr_rate_tps
            )));
        }
        let target = target_of(&p.target)?;
        let cfg = RrulConfig {
            flows: p.flows,
            duration: duration_of(p.duration_s)?,
            idle: duration_of(p.idle_s)?,
            rr_rate: p.rr_rate_tps,
            rate_per_flow_bps: p.rate_per_flow_bps,
            ipv6: p.ipv6,
            // With a far end, both ports are the ones its grants give (see the session); the
            // control address stands in for them until then.
            tcp_target: target,
            probe_target: target,
            run_id: Some(wire_id),
        };
        cfg.validate()?;
        Ok(Trial::Rrul(cfg, p))
    }

    /// The parameters it was made from.
    pub fn params(&self) -> LoadParams {
        match self {
            Trial::Udp(_, p) => LoadParams::Udp(p.clone()),
            Trial::Tcp(_, p) => LoadParams::Tcp(p.clone()),
            Trial::Rr(_, p) => LoadParams::Rr(p.clone()),
            Trial::Rrul(_, p) => LoadParams::Rrul(p.clone()),
        }
    }

    /// The workload as the run stores it.
    pub fn workload(&self) -> Workload {
        self.params().workload()
    }

    /// How long it is planned to run.
    pub fn duration(&self) -> Duration {
        match self {
            Trial::Udp(c, _) => c.duration,
            Trial::Tcp(c, _) => c.duration,
            Trial::Rr(c, _) => c.duration,
            Trial::Rrul(c, _) => c.idle + c.duration,
        }
    }

    /// The far end it is measured against, if any.
    pub fn target(&self) -> Option<SocketAddr> {
        match self {
            Trial::Udp(c, _) => c.target,
            Trial::Tcp(c, _) => c.target,
            Trial::Rr(c, _) => c.target,
            Trial::Rrul(c, _) => c.tcp_target,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp(rate: Option<Rate>) -> UdpParams {
        UdpParams {
            rate,
            duration_s: 2.0,
            target: Some("127.0.0.1:9000".into()),
            ..udp_defaults(18)
        }
    }

    #[test]
    fn a_stored_trial_runs_again_with_the_same_configuration() {
        let t = Trial::udp(udp(Some(Rate::PacketsPerSecond(1000.0))), 7).unwrap();
        let again = Trial::from_workload(&t.workload(), 7).unwrap();
        let (Trial::Udp(a, pa), Trial::Udp(b, pb)) = (&t, &again) else {
            panic!("not udp")
        };
        assert_eq!(pa, pb);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        assert_eq!(t.target(), Some("127.0.0.1:9000".parse().unwrap()));
        assert_eq!(t.duration(), Duration::from_secs(2));
    }

    #[test]
    fn bad_parameters_are_the_users_fault() {
        let e = Trial::udp(udp(Some(Rate::PacketsPerSecond(1e12))), 0).unwrap_err();
        assert!(
            e.is_usage() && e.to_string().contains("fastest rate"),
            "{e}"
        );
        let mut p = udp(None);
        p.target = Some("nowhere".into());
        let e = Trial::udp(p, 0).unwrap_err();
        assert!(e.is_usage() && e.to_string().contains("ip:port"), "{e}");
        let mut p = udp(None);
        p.duration_s = -1.0;
        assert!(Trial::udp(p, 0).unwrap_err().is_usage());
    }
}
