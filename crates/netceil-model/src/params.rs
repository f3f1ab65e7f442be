//! The typed parameters of netceil's own workloads: what a trial ran with, as stored in its
//! `Workload` and read back by `--resume`, by a lab's child process and by `--confirm`.
//!
//! The JSON keys are those runs have always been stored with; a field added later has a
//! default, so older runs still read back.

use crate::{udp_payload_to_frame, PacingMode, Rate, Workload, WorkloadKind};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// A UDP train (`netceil run udp`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UdpParams {
    pub payload_bytes: usize,
    /// The Ethernet frame that payload makes (derived; kept for readers of the store).
    pub frame_bytes: usize,
    /// `--rate` as given (`100kpps`, `1Gbit/s`).
    #[serde(with = "rate_text", default)]
    pub rate: Option<Rate>,
    pub interval_ns: Option<f64>,
    pub pacing: PacingMode,
    pub burst: u32,
    pub count: Option<u64>,
    pub duration_s: f64,
    pub flows: u32,
    pub threads: u32,
    pub ipv6: bool,
    /// A far end (`--to`), as `ip:port`.
    pub target: Option<String>,
    pub rcvbuf: Option<usize>,
    pub rcvbuf_force: bool,
    #[serde(default)]
    pub sndbuf: Option<usize>,
    pub gso: bool,
    /// The CPU the receiving thread(s) were placed on (`--rx-cpu`); `None`: the scheduler's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_cpu: Option<usize>,
    /// The CPU the sending thread(s) were placed on (`--tx-cpu`); `None`: the scheduler's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_cpu: Option<usize>,
}

/// Where per-flow TCP pacing is asked to happen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TcpPacingRequest {
    #[default]
    Auto,
    Kernel,
    App,
}

/// Bulk TCP flows (`netceil run tcp`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TcpParams {
    pub flows: u32,
    pub msg_size: usize,
    pub rate_per_flow_bps: Option<f64>,
    pub duration_s: f64,
    pub threads: u32,
    pub ipv6: bool,
    pub target: Option<String>,
    #[serde(default)]
    pub pacing: TcpPacingRequest,
    /// The CPU the receiving thread(s) were placed on (`--rx-cpu`); `None`: the scheduler's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_cpu: Option<usize>,
    /// The CPU the sending thread(s) were placed on (`--tx-cpu`); `None`: the scheduler's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_cpu: Option<usize>,
}

/// The transport of a request/response workload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RrProtocol {
    #[default]
    Tcp,
    Udp,
}

/// Request/response (`netceil run rr`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RrParams {
    pub proto: RrProtocol,
    pub size: usize,
    pub flows: u32,
    pub rate_tps: Option<f64>,
    pub duration_s: f64,
    pub ipv6: bool,
    pub target: Option<String>,
    /// The CPU the receiving thread(s) were placed on (`--rx-cpu`); `None`: the scheduler's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_cpu: Option<usize>,
    /// The CPU the sending thread(s) were placed on (`--tx-cpu`); `None`: the scheduler's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_cpu: Option<usize>,
}

/// One of netceil's own workloads, with its parameters; serialized as its stored workload is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LoadParams {
    Udp(UdpParams),
    Tcp(TcpParams),
    Rr(RrParams),
}

impl UdpParams {
    /// Fills in the derived frame size.
    pub fn with_frame(mut self) -> UdpParams {
        self.frame_bytes = udp_payload_to_frame(self.payload_bytes, self.ipv6);
        self
    }
}

/// Why a stored workload's parameters could not be read back.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamsError {
    pub kind: WorkloadKind,
    pub reason: String,
}

impl std::fmt::Display for ParamsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "its {:?} workload's parameters: {}",
            self.kind, self.reason
        )
    }
}

impl std::error::Error for ParamsError {}

impl Workload {
    /// A workload of `kind` with `params` as its parameters.
    pub fn typed(kind: WorkloadKind, params: &impl Serialize) -> Workload {
        let params = match serde_json::to_value(params) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        Workload { kind, params }
    }

    /// The parameters read back as `T`; an error says which field is missing or wrong.
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, ParamsError> {
        serde_json::from_value(serde_json::Value::Object(self.params.clone())).map_err(|e| {
            ParamsError {
                kind: self.kind,
                reason: e.to_string(),
            }
        })
    }
}

impl LoadParams {
    /// The stored workload these parameters make.
    pub fn workload(&self) -> Workload {
        match self {
            LoadParams::Udp(p) => Workload::typed(WorkloadKind::Udp, p),
            LoadParams::Tcp(p) => Workload::typed(WorkloadKind::Tcp, p),
            LoadParams::Rr(p) => Workload::typed(WorkloadKind::Rr, p),
        }
    }

    /// One of netceil's own workloads read back from a stored one.
    pub fn from_workload(w: &Workload) -> Result<LoadParams, ParamsError> {
        match w.kind {
            WorkloadKind::Udp => w.params_as().map(LoadParams::Udp),
            WorkloadKind::Tcp => w.params_as().map(LoadParams::Tcp),
            WorkloadKind::Rr => w.params_as().map(LoadParams::Rr),
            k => Err(ParamsError {
                kind: k,
                reason: "not one of netceil's own workloads (udp, tcp, rr)".into(),
            }),
        }
    }

    /// Places the receiving thread(s) on `rx` and the sending thread(s) on `tx` (`None`: the
    /// scheduler's).
    pub fn place(&mut self, rx: Option<usize>, tx: Option<usize>) {
        let (r, t) = match self {
            LoadParams::Udp(p) => (&mut p.rx_cpu, &mut p.tx_cpu),
            LoadParams::Tcp(p) => (&mut p.rx_cpu, &mut p.tx_cpu),
            LoadParams::Rr(p) => (&mut p.rx_cpu, &mut p.tx_cpu),
        };
        (*r, *t) = (rx, tx);
    }

    /// How long it runs, seconds.
    pub fn duration_s(&self) -> f64 {
        match self {
            LoadParams::Udp(p) => p.duration_s,
            LoadParams::Tcp(p) => p.duration_s,
            LoadParams::Rr(p) => p.duration_s,
        }
    }
}

/// A rate stored as the text it was given (`100kpps`), read back with [`Rate::parse`].
mod rate_text {
    use crate::Rate;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(rate: &Option<Rate>, s: S) -> Result<S::Ok, S::Error> {
        match rate {
            Some(r) => s.serialize_some(&r.to_string()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Rate>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|t| Rate::parse(&t).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp() -> UdpParams {
        UdpParams {
            payload_bytes: 18,
            frame_bytes: 0,
            rate: Some(Rate::PacketsPerSecond(125_000.0)),
            interval_ns: None,
            pacing: PacingMode::Sleep,
            burst: 1,
            count: None,
            duration_s: 6.0,
            flows: 2,
            threads: 1,
            ipv6: false,
            target: Some("10.0.0.2:9000".into()),
            rcvbuf: Some(1 << 20),
            rcvbuf_force: false,
            sndbuf: None,
            gso: false,
            rx_cpu: None,
            tx_cpu: None,
        }
        .with_frame()
    }

    #[test]
    fn parameters_read_back_as_they_were_stored() {
        for p in [
            LoadParams::Udp(udp()),
            LoadParams::Tcp(TcpParams {
                flows: 4,
                msg_size: 131072,
                rate_per_flow_bps: Some(1e9),
                duration_s: 3.0,
                threads: 2,
                ipv6: true,
                target: None,
                pacing: TcpPacingRequest::Kernel,
                rx_cpu: Some(1),
                tx_cpu: Some(0),
            }),
            LoadParams::Rr(RrParams {
                proto: RrProtocol::Udp,
                size: 64,
                flows: 1,
                rate_tps: Some(5000.0),
                duration_s: 2.0,
                ipv6: false,
                target: None,
                rx_cpu: Some(0),
                tx_cpu: None,
            }),
        ] {
            let w = p.workload();
            let json = serde_json::to_string(&w).unwrap();
            let back: Workload = serde_json::from_str(&json).unwrap();
            assert_eq!(LoadParams::from_workload(&back).unwrap(), p, "{json}");
        }
        assert_eq!(udp().frame_bytes, 64);
    }

    #[test]
    fn a_run_stored_before_a_field_existed_still_reads_back() {
        // Stored by netceil 0.1 before `sndbuf` (UDP) and `pacing` (TCP) were kept.
        let old: Workload = serde_json::from_str(
            r#"{"kind":"tcp","flows":1,"msg_size":131072,"rate_per_flow_bps":null,
                "duration_s":10.0,"threads":1,"ipv6":false,"target":null}"#,
        )
        .unwrap();
        let LoadParams::Tcp(t) = LoadParams::from_workload(&old).unwrap() else {
            panic!("not tcp")
        };
        assert_eq!(t.pacing, TcpPacingRequest::Auto);
        // Stored before the threads could be placed: left to the scheduler.
        assert_eq!((t.rx_cpu, t.tx_cpu), (None, None));
        // And a workload that places nothing is stored as before.
        let json = serde_json::to_string(&LoadParams::Udp(udp()).workload()).unwrap();
        assert!(!json.contains("_cpu"), "{json}");
    }

    #[test]
    fn a_damaged_workload_says_which_field() {
        let mut w = LoadParams::Udp(udp()).workload();
        w.params.insert("rate".into(), "fast".into());
        let e = LoadParams::from_workload(&w).unwrap_err().to_string();
        assert!(e.contains("fast"), "{e}");
        w.params.remove("rate");
        w.params.remove("flows");
        let e = LoadParams::from_workload(&w).unwrap_err().to_string();
        assert!(e.contains("flows"), "{e}");
        let suite = Workload::typed(WorkloadKind::Suite, &serde_json::json!({}));
        assert!(LoadParams::from_workload(&suite).is_err());
    }
}

/// A loss search (`netceil search udp`), as its run stores it and `--resume` reads it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchParams {
    /// The workload searched: `udp`.
    pub workload: String,
    /// Ethernet frame sizes, bytes.
    pub sizes: Vec<usize>,
    /// Loss tolerances, fractions (0 = no loss).
    pub loss: Vec<f64>,
    pub trial_s: f64,
    pub initial_trial_s: f64,
    /// The width at which the search stops narrowing, a fraction of the rate.
    pub precision: f64,
    pub min_pps: f64,
    pub max_pps: Option<f64>,
    pub max_trials: usize,
    pub target: Option<String>,
    /// Where loss is counted: `app`.
    pub point: String,
    /// How the trials' sender waits between sends; runs stored before it was kept slept.
    #[serde(default = "sleep")]
    pub pacing: PacingMode,
    #[serde(default)]
    pub rcvbuf: Option<usize>,
    #[serde(default)]
    pub rcvbuf_force: bool,
    #[serde(default)]
    pub resumed_from: Option<String>,
}

fn sleep() -> PacingMode {
    PacingMode::Sleep
}

/// One trial of a search, as its part stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchTrialParams {
    pub frame_bytes: usize,
    pub payload_bytes: usize,
    /// The rate asked; `None`: unpaced (the generator's own ceiling).
    pub rate_pps: Option<f64>,
    /// The trial's planned length.
    pub trial_s: f64,
    /// How long it ran, once it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    pub target: Option<String>,
}

/// A UDP sweep over sizes and send intervals (`netceil sweep udp`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepParams {
    /// The workload swept: `udp`.
    pub workload: String,
    /// UDP payload sizes, bytes.
    pub sizes: Vec<usize>,
    /// The interval range as given: `START:END:STEP` in ns or with units.
    pub interval: String,
    /// Packets per cycle.
    pub count: u64,
    pub cycles: u32,
    pub pacing: PacingMode,
    pub rcvbuf: Option<usize>,
    #[serde(default)]
    pub rcvbuf_force: bool,
    pub target: Option<String>,
    #[serde(default)]
    pub resumed_from: Option<String>,
}

/// One cycle of a sweep's cell, as its part stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepCycleParams {
    pub payload_bytes: usize,
    pub interval_ns: f64,
    pub count: u64,
    #[serde(default)]
    pub cycle: u32,
    pub target: Option<String>,
}

/// A sweep over TCP flow counts (`netceil sweep tcp`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepTcpParams {
    /// The workload swept: `tcp flows`.
    pub workload: String,
    pub flows: Vec<u32>,
    pub rate_per_flow: Option<f64>,
    pub step_s: f64,
    pub msg_size: usize,
    #[serde(default = "one")]
    pub threads: u32,
    pub target: Option<String>,
}

fn one() -> u32 {
    1
}
