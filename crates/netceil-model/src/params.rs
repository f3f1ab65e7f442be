//! The typed parameters of netceil's own workloads: what a trial ran with, as stored in its
//! `Workload` and read back by `--resume`, by a lab's child process and by `--confirm`.
//!
//! The JSON keys are those runs have always been stored with; a field added later has a
//! default, so older runs still read back.

use crate::{udp_payload_to_frame, PacingMode, Rate, TcpDirection, Workload, WorkloadKind};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// A UDP train (`netceil run udp`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UdpParams {
    pub payload_bytes: usize,
    /// The Ethernet frame that payload makes (derived; kept for readers of the store).
    pub frame_bytes: usize,
    /// `--rate` as given (`100kpps`, `1Gbit/s`).
    #[serde(with = "rate_text", default)]
    #[schemars(with = "Option<String>")]
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
    #[serde(default)]
    pub rcvbuf_force: bool,
    #[serde(default)]
    pub sndbuf: Option<usize>,
    #[serde(default)]
    pub gso: bool,
    /// Datagrams per GSO send (`--gso-segments`); `None`: as many as fit 64 KiB.
    #[serde(default)]
    pub gso_segments: Option<u32>,
    /// UDP GRO at the receiver (`--gro`).
    #[serde(default)]
    pub gro: bool,
    /// The CPU the receiving thread(s) were placed on (`--rx-cpu`); `None`: the scheduler's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_cpu: Option<usize>,
    /// The CPU the sending thread(s) were placed on (`--tx-cpu`); `None`: the scheduler's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_cpu: Option<usize>,
}

/// Where per-flow TCP pacing is asked to happen.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TcpPacingRequest {
    #[default]
    Auto,
    Kernel,
    App,
}

/// Bulk TCP flows (`netceil run tcp`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// The sending sockets' congestion control (`--congestion`, iperf3's `-C`); `None`: the
    /// kernel's default (net.ipv4.tcp_congestion_control).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    /// Which way the data went: up (this side sent), down (`-R`: the far side sent) or both
    /// (`--bidir`). Left out when up, so a run stored before it existed reads back as one.
    #[serde(default, skip_serializing_if = "TcpDirection::is_up")]
    pub direction: TcpDirection,
    /// How this side's receiving end sized each stream's socket receive buffer (`--rcvbuf`).
    /// Left out when `auto`, so a run stored before it existed reads back as one.
    #[serde(default, skip_serializing_if = "TcpRecvBuffer::is_auto")]
    pub rcvbuf: TcpRecvBuffer,
    /// How this side's sink streams woke their reader (`--sink-wakes`). Left out when
    /// batched, so a run stored before it existed reads back as one.
    #[serde(default, skip_serializing_if = "TcpSinkWakes::is_batched")]
    pub sink_wakes: TcpSinkWakes,
}

/// How a TCP receiver's sink streams wake their reader.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TcpSinkWakes {
    /// A stream with a fixed receive buffer wakes its reader once per 200 µs of its own rate
    /// (SO_RCVLOWAT); the others at every arrival.
    #[default]
    Batched,
    /// At every arrival, as an application that sets nothing.
    Each,
}

impl TcpSinkWakes {
    pub fn is_batched(&self) -> bool {
        *self == TcpSinkWakes::Batched
    }
}

impl std::str::FromStr for TcpSinkWakes {
    type Err = String;

    /// The names the JSON uses: `batched`, `each`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "batched" => Ok(TcpSinkWakes::Batched),
            "each" => Ok(TcpSinkWakes::Each),
            other => Err(format!("expected batched or each, got '{other}'")),
        }
    }
}

/// How a TCP receiver sizes each stream's socket receive buffer.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TcpRecvBuffer {
    /// A fixed buffer of twice the receiving core's L2 cache on a path inside this host
    /// (handshake RTT ≤ 100 µs), where the kernel's autotuning lets megabytes queue; the
    /// kernel's autotuning on longer paths.
    #[default]
    Auto,
    /// The kernel's autotuning (net.ipv4.tcp_rmem), as an application that sets nothing.
    Kernel,
    /// A fixed buffer of this many bytes, autotuning off.
    Bytes(u64),
}

impl TcpRecvBuffer {
    pub fn is_auto(&self) -> bool {
        *self == TcpRecvBuffer::Auto
    }
}

/// Latency under load (`netceil run rrul`): bulk TCP flows both ways beside a UDP
/// request/response probe, after an idle phase with the probe alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RrulParams {
    /// Bulk flows per direction.
    pub flows: u32,
    /// The loaded phase, seconds.
    pub duration_s: f64,
    /// The idle phase before it (the probe alone), seconds.
    pub idle_s: f64,
    /// Probe requests per second (`--rr-rate`).
    pub rr_rate_tps: f64,
    /// Each up flow's rate (`--rate-per-flow`); `None`: as fast as it goes.
    pub rate_per_flow_bps: Option<f64>,
    pub ipv6: bool,
    /// A far end (`--to`, a `netceil serve`), as `ip:port`: it runs the down flows and
    /// answers the probe.
    pub target: Option<String>,
}

/// The transport of a request/response workload.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RrProtocol {
    #[default]
    Tcp,
    Udp,
}

/// Request/response (`netceil run rr`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// The client busy-polled its sockets and the clock instead of sleeping (`--spin`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spin: bool,
}

/// One of netceil's own workloads, with its parameters; serialized as its stored workload is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LoadParams {
    Udp(UdpParams),
    Tcp(TcpParams),
    Rr(RrParams),
    Rrul(RrulParams),
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
    /// A workload of `kind` with `params` as its parameters: typed when they are the
    /// parameters of one of netceil's commands (see [`Params::read`]), kept as given otherwise.
    pub fn typed(kind: WorkloadKind, params: &impl Serialize) -> Workload {
        let map = match serde_json::to_value(params) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        Workload {
            kind,
            params: Params::read(kind, map),
        }
    }

    /// The parameters read back as `T`; an error says which field is missing or wrong.
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, ParamsError> {
        serde_json::from_value(serde_json::Value::Object(self.params.to_map())).map_err(|e| {
            ParamsError {
                kind: self.kind,
                reason: e.to_string(),
            }
        })
    }

    /// The far end the workload was sent to (`--to`), as `ip:port`.
    pub fn target(&self) -> Option<&str> {
        self.params.target()
    }

    /// The lab the workload ran in, if it ran in one.
    pub fn lab(&self) -> Option<&LabInfo> {
        match &self.params {
            Params::Lab { lab, .. } => Some(lab),
            _ => None,
        }
    }
}

impl Serialize for Workload {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = serde_json::Map::new();
        map.insert(
            "kind".into(),
            serde_json::to_value(self.kind).map_err(serde::ser::Error::custom)?,
        );
        for (k, v) in self.params.to_map() {
            if k != "kind" {
                map.insert(k, v);
            }
        }
        map.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Workload {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Workload, D::Error> {
        let mut map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let kind = map
            .remove("kind")
            .ok_or_else(|| serde::de::Error::missing_field("kind"))?;
        let kind: WorkloadKind = serde_json::from_value(kind).map_err(serde::de::Error::custom)?;
        Ok(Workload {
            kind,
            params: Params::read(kind, map),
        })
    }
}

/// One shape of a workload's parameters in the schema: `T`'s fields with the `kind`s it is
/// stored under beside them (and, for a trial run in a lab, the lab).
fn shape<T: schemars::JsonSchema>(
    g: &mut schemars::SchemaGenerator,
    kinds: &[&str],
    lab: bool,
) -> serde_json::Value {
    let mut s = T::json_schema(g).to_value();
    if let Some(o) = s.as_object_mut() {
        let props = o
            .entry("properties")
            .or_insert_with(|| serde_json::json!({}));
        if let Some(p) = props.as_object_mut() {
            p.insert("kind".into(), serde_json::json!({ "enum": kinds }));
            if lab {
                p.insert("lab".into(), g.subschema_for::<LabInfo>().to_value());
            }
        }
        let required = o.entry("required").or_insert_with(|| serde_json::json!([]));
        if let Some(r) = required.as_array_mut() {
            r.push("kind".into());
            if lab {
                r.push("lab".into());
            }
        }
    }
    s
}

impl schemars::JsonSchema for Workload {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Workload".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let own = ["udp", "tcp", "rr", "rrul"];
        let mut shapes = vec![
            shape::<UdpParams>(g, &["udp"], false),
            shape::<TcpParams>(g, &["tcp"], false),
            shape::<RrParams>(g, &["rr"], false),
            shape::<RrulParams>(g, &["rrul"], false),
            shape::<SuiteParams>(g, &["suite"], false),
            shape::<WatchParams>(g, &["external"], false),
            shape::<SearchParams>(g, &["search"], false),
            shape::<SearchTrialParams>(g, &["udp"], false),
            shape::<SweepParams>(g, &["sweep"], false),
            shape::<SweepCycleParams>(g, &["udp"], false),
            shape::<SweepTcpParams>(g, &["sweep"], false),
            shape::<SweepParamParams>(g, &["sweep"], false),
            shape::<UdpParams>(g, &own[..1], true),
            shape::<TcpParams>(g, &own[1..2], true),
            shape::<RrParams>(g, &own[2..3], true),
            shape::<RrulParams>(g, &own[3..], true),
        ];
        let kind = g.subschema_for::<WorkloadKind>().to_value();
        shapes.push(serde_json::json!({
            "description": "Parameters no netceil command of this version wrote (another tool's settings read by an importer, a later version's fields), kept as stored.",
            "type": "object",
            "required": ["kind"],
            "properties": { "kind": kind },
            "additionalProperties": true,
        }));
        schemars::json_schema!({
            "description": "The workload: its kind beside the parameters it ran with, in one of the shapes of netceil's commands, or as stored by another tool.",
            "anyOf": shapes,
        })
    }
}

/// The parameters of a workload, typed by the command that ran it.
#[derive(Debug, Clone, PartialEq)]
pub enum Params {
    /// `netceil run udp`, a part of a suite, a sweep param's trial.
    Udp(UdpParams),
    /// `netceil run tcp`, a step of `sweep tcp`.
    Tcp(TcpParams),
    /// `netceil run rr`.
    Rr(RrParams),
    /// `netceil run rrul`.
    Rrul(RrulParams),
    /// The default `netceil run`: several workloads as parts.
    Suite(SuiteParams),
    /// `netceil watch`: someone else's load, observed.
    Watch(WatchParams),
    /// `netceil search udp`.
    Search(SearchParams),
    /// One trial of a search.
    SearchTrial(SearchTrialParams),
    /// `netceil sweep udp`.
    Sweep(SweepParams),
    /// One cycle of a UDP sweep's cell.
    SweepCycle(SweepCycleParams),
    /// `netceil sweep tcp`.
    SweepTcp(SweepTcpParams),
    /// `netceil sweep param`.
    SweepParam(SweepParamParams),
    /// A trial of netceil's own workloads run in a lab (`netceil lab run|compare`).
    Lab { lab: LabInfo, trial: Box<Params> },
    /// Parameters no netceil command of this version wrote: another tool's settings read by
    /// an importer, or a later version's. Kept as they were, so nothing stored is lost.
    Other(serde_json::Map<String, serde_json::Value>),
}

impl Default for Params {
    fn default() -> Self {
        Params::Other(serde_json::Map::new())
    }
}

/// `T` read from `map` when it is exactly a `T`'s fields: every field stored is one `T` has
/// (a field `T` does not know would be lost, so that map is not a `T`).
fn exactly<T: Serialize + DeserializeOwned>(
    map: &serde_json::Map<String, serde_json::Value>,
) -> Option<T> {
    let t: T = serde_json::from_value(serde_json::Value::Object(map.clone())).ok()?;
    let back = match serde_json::to_value(&t).ok()? {
        serde_json::Value::Object(m) => m,
        _ => return None,
    };
    map.iter()
        .all(|(k, v)| back.contains_key(k) || v.is_null())
        .then_some(t)
}

impl Params {
    /// The parameters stored with a workload of `kind`, typed when they are exactly the
    /// parameters of one of netceil's commands, and kept as given otherwise.
    pub fn read(kind: WorkloadKind, mut map: serde_json::Map<String, serde_json::Value>) -> Params {
        map.remove("kind");
        if matches!(
            kind,
            WorkloadKind::Udp | WorkloadKind::Tcp | WorkloadKind::Rr | WorkloadKind::Rrul
        ) {
            if let Some(lab) = map
                .get("lab")
                .and_then(|l| serde_json::from_value::<LabInfo>(l.clone()).ok())
            {
                let mut rest = map.clone();
                rest.remove("lab");
                let trial = Params::read(kind, rest);
                if !matches!(trial, Params::Other(_)) {
                    return Params::Lab {
                        lab,
                        trial: Box::new(trial),
                    };
                }
            }
        }
        let typed = match kind {
            WorkloadKind::Udp => exactly(&map)
                .map(Params::Udp)
                .or_else(|| exactly(&map).map(Params::SearchTrial))
                .or_else(|| exactly(&map).map(Params::SweepCycle)),
            WorkloadKind::Tcp => exactly(&map).map(Params::Tcp),
            WorkloadKind::Rr => exactly(&map).map(Params::Rr),
            WorkloadKind::Rrul => exactly(&map).map(Params::Rrul),
            WorkloadKind::Suite => exactly(&map).map(Params::Suite),
            WorkloadKind::External => exactly(&map).map(Params::Watch),
            WorkloadKind::Search => exactly(&map).map(Params::Search),
            WorkloadKind::Sweep => match map.get("workload").and_then(|w| w.as_str()) {
                Some("udp") => exactly(&map).map(Params::Sweep),
                Some("tcp flows") => exactly(&map).map(Params::SweepTcp),
                Some("param") => exactly(&map).map(Params::SweepParam),
                _ => None,
            },
        };
        typed.unwrap_or(Params::Other(map))
    }

    /// The parameters as the fields they are stored as.
    pub fn to_map(&self) -> serde_json::Map<String, serde_json::Value> {
        fn fields(
            v: Result<serde_json::Value, serde_json::Error>,
        ) -> serde_json::Map<String, serde_json::Value> {
            match v {
                Ok(serde_json::Value::Object(m)) => m,
                _ => serde_json::Map::new(),
            }
        }
        match self {
            Params::Udp(p) => fields(serde_json::to_value(p)),
            Params::Tcp(p) => fields(serde_json::to_value(p)),
            Params::Rr(p) => fields(serde_json::to_value(p)),
            Params::Rrul(p) => fields(serde_json::to_value(p)),
            Params::Suite(p) => fields(serde_json::to_value(p)),
            Params::Watch(p) => fields(serde_json::to_value(p)),
            Params::Search(p) => fields(serde_json::to_value(p)),
            Params::SearchTrial(p) => fields(serde_json::to_value(p)),
            Params::Sweep(p) => fields(serde_json::to_value(p)),
            Params::SweepCycle(p) => fields(serde_json::to_value(p)),
            Params::SweepTcp(p) => fields(serde_json::to_value(p)),
            Params::SweepParam(p) => fields(serde_json::to_value(p)),
            Params::Lab { lab, trial } => {
                let mut m = trial.to_map();
                if let Ok(l) = serde_json::to_value(lab) {
                    m.insert("lab".into(), l);
                }
                m
            }
            Params::Other(m) => m.clone(),
        }
    }

    /// Whether a search or a UDP sweep ran over IPv6; `None` for other parameters.
    pub fn ipv6(&self) -> Option<bool> {
        match self {
            Params::Search(p) => Some(p.ipv6),
            Params::Sweep(p) => Some(p.ipv6),
            _ => None,
        }
    }

    /// The far end the load was sent to (`--to`), as `ip:port`.
    pub fn target(&self) -> Option<&str> {
        self.peer().flatten()
    }

    /// Where the load's peer was: `Some(None)` for netceil's in-process peer (always on
    /// loopback), `Some(Some(ip:port))` for a far end, `None` when the parameters do not say
    /// (a suite, a watch, another tool's settings without a `target`).
    pub fn peer(&self) -> Option<Option<&str>> {
        match self {
            Params::Udp(p) => Some(p.target.as_deref()),
            Params::Tcp(p) => Some(p.target.as_deref()),
            Params::Rr(p) => Some(p.target.as_deref()),
            Params::Rrul(p) => Some(p.target.as_deref()),
            Params::Search(p) => Some(p.target.as_deref()),
            Params::SearchTrial(p) => Some(p.target.as_deref()),
            Params::Sweep(p) => Some(p.target.as_deref()),
            Params::SweepCycle(p) => Some(p.target.as_deref()),
            Params::SweepTcp(p) => Some(p.target.as_deref()),
            Params::Lab { trial, .. } => trial.peer(),
            Params::Other(m) => m.get("target").map(|t| t.as_str()),
            Params::Suite(_) | Params::Watch(_) | Params::SweepParam(_) => None,
        }
    }

    /// One of netceil's own workloads (udp, tcp, rr), also when it ran in a lab.
    pub fn load(&self) -> Option<LoadParams> {
        match self {
            Params::Udp(p) => Some(LoadParams::Udp(p.clone())),
            Params::Tcp(p) => Some(LoadParams::Tcp(p.clone())),
            Params::Rr(p) => Some(LoadParams::Rr(p.clone())),
            Params::Rrul(p) => Some(LoadParams::Rrul(p.clone())),
            Params::Lab { trial, .. } => trial.load(),
            _ => None,
        }
    }
}

/// The default `netceil run`: its parts in words, and how long each runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SuiteParams {
    pub parts: Vec<String>,
    pub part_duration_s: f64,
}

/// `netceil watch`: what was watched, and how often it was sampled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WatchParams {
    /// The command launched, if any.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// Processes followed (`--pid`).
    #[serde(default)]
    pub pids: Vec<i32>,
    /// Interfaces asked for (`--iface`); empty: all.
    #[serde(default)]
    pub ifaces: Vec<String>,
    pub interval_s: f64,
}

/// `netceil sweep param`: the parameters varied and the `netceil run` arguments they vary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SweepParamParams {
    /// The workload swept: `param`.
    pub workload: String,
    /// `--param NAME=V1,V2` as given.
    pub params: Vec<String>,
    /// The `netceil run` arguments after `--`.
    pub run: Vec<String>,
}

/// The lab a trial ran in: its topology, namespaces, knobs, and every lab interface's counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LabInfo {
    pub name: String,
    /// `direct`, `bridge`, `router`…
    pub topology: String,
    /// The devices a packet crosses, in words (`veth, bridge, veth`).
    pub path: String,
    pub mtu: u32,
    pub sender_netns: String,
    pub receiver_netns: String,
    pub middle_netns: Option<String>,
    pub interfaces: Vec<LabIface>,
    /// The knobs set for this trial (`--knob NAME=VALUE`).
    #[serde(default)]
    pub knobs: std::collections::BTreeMap<String, String>,
}

/// What one lab interface counted over a trial.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LabIface {
    pub netns: String,
    pub iface: String,
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
}

impl LoadParams {
    /// The stored workload these parameters make.
    pub fn workload(&self) -> Workload {
        let (kind, params) = match self {
            LoadParams::Udp(p) => (WorkloadKind::Udp, Params::Udp(p.clone())),
            LoadParams::Tcp(p) => (WorkloadKind::Tcp, Params::Tcp(p.clone())),
            LoadParams::Rr(p) => (WorkloadKind::Rr, Params::Rr(p.clone())),
            LoadParams::Rrul(p) => (WorkloadKind::Rrul, Params::Rrul(p.clone())),
        };
        Workload { kind, params }
    }

    /// One of netceil's own workloads read back from a stored one (also one run in a lab, and
    /// one a later version stored with fields this one does not know).
    pub fn from_workload(w: &Workload) -> Result<LoadParams, ParamsError> {
        if let Some(p) = w.params.load() {
            return Ok(p);
        }
        match w.kind {
            WorkloadKind::Udp => w.params_as().map(LoadParams::Udp),
            WorkloadKind::Tcp => w.params_as().map(LoadParams::Tcp),
            WorkloadKind::Rr => w.params_as().map(LoadParams::Rr),
            WorkloadKind::Rrul => w.params_as().map(LoadParams::Rrul),
            k => Err(ParamsError {
                kind: k,
                reason: "not one of netceil's own workloads (udp, tcp, rr, rrul)".into(),
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
            // rrul's threads are the scheduler's: its probe measures what they make of it.
            LoadParams::Rrul(_) => return,
        };
        (*r, *t) = (rx, tx);
    }

    /// Where the receiving and the sending thread(s) were placed: `(rx, tx)`, `None` for the
    /// scheduler's choice.
    pub fn placement(&self) -> (Option<usize>, Option<usize>) {
        match self {
            LoadParams::Udp(p) => (p.rx_cpu, p.tx_cpu),
            LoadParams::Tcp(p) => (p.rx_cpu, p.tx_cpu),
            LoadParams::Rr(p) => (p.rx_cpu, p.tx_cpu),
            LoadParams::Rrul(_) => (None, None),
        }
    }

    /// How long it runs, seconds.
    pub fn duration_s(&self) -> f64 {
        match self {
            LoadParams::Udp(p) => p.duration_s,
            LoadParams::Tcp(p) => p.duration_s,
            LoadParams::Rr(p) => p.duration_s,
            LoadParams::Rrul(p) => p.idle_s + p.duration_s,
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
            gso_segments: None,
            gro: false,
            rx_cpu: None,
            tx_cpu: None,
        }
        .with_frame()
    }

    #[test]
    fn sink_wakes_parse_their_json_names_and_nothing_else() {
        use std::str::FromStr;
        assert_eq!(TcpSinkWakes::from_str("batched"), Ok(TcpSinkWakes::Batched));
        assert_eq!(TcpSinkWakes::from_str("each"), Ok(TcpSinkWakes::Each));
        for bad in ["", "Each", "batch", "each "] {
            let err = TcpSinkWakes::from_str(bad).unwrap_err();
            assert!(err.contains("expected batched or each"), "{bad:?}: {err}");
        }
        // The same names as the stored JSON.
        assert_eq!(
            serde_json::to_string(&TcpSinkWakes::Each).unwrap(),
            "\"each\""
        );
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
                congestion: Some("bbr".into()),
                direction: TcpDirection::Both,
                rcvbuf: TcpRecvBuffer::Bytes(1 << 20),
                sink_wakes: TcpSinkWakes::Each,
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
                spin: true,
            }),
            LoadParams::Rrul(RrulParams {
                flows: 4,
                duration_s: 8.0,
                idle_s: 2.0,
                rr_rate_tps: 100.0,
                rate_per_flow_bps: None,
                ipv6: false,
                target: Some("10.0.0.2:7500".into()),
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
    fn searches_and_sweeps_stored_before_ipv6_was_kept_load_as_ipv4() {
        let search = r#"{"kind": "search", "workload": "udp", "sizes": [64], "loss": [0.0],
            "trial_s": 1.0, "initial_trial_s": 0.25, "precision": 0.05, "min_pps": 1000.0,
            "max_pps": null, "max_trials": 20, "target": null, "point": "app"}"#;
        let w: Workload = serde_json::from_str(search).unwrap();
        let Params::Search(p) = &w.params else {
            panic!("not typed: {:?}", w.params)
        };
        assert!(!p.ipv6);
        assert_eq!(w.params.ipv6(), Some(false));
        let sweep = r#"{"kind": "sweep", "workload": "udp", "sizes": [1024],
            "interval": "50us..60us/10us", "count": 10000, "cycles": 2, "pacing": "sleep",
            "rcvbuf": null, "target": null}"#;
        let w: Workload = serde_json::from_str(sweep).unwrap();
        assert_eq!(w.params.ipv6(), Some(false), "{:?}", w.params);
        // Written with the field, it comes back.
        let mut p = p.clone();
        p.ipv6 = true;
        let json = serde_json::to_string(&Workload::typed(WorkloadKind::Search, &p)).unwrap();
        let back: Workload = serde_json::from_str(&json).unwrap();
        assert_eq!(back.params.ipv6(), Some(true), "{json}");
    }

    #[test]
    fn a_udp_search_stored_in_the_old_flat_shape_loads_and_is_stored_as_it_was() {
        // As netceil stored a UDP search before TCP and RR searches existed.
        let old = r#"{"kind": "search", "workload": "udp", "sizes": [64, 1518],
            "loss": [0.0, 0.005], "trial_s": 10.0, "initial_trial_s": 1.0, "precision": 0.01,
            "min_pps": 1000.0, "max_pps": 2000000.0, "max_trials": 40, "target": "10.0.0.2:7500",
            "point": "app", "pacing": "spin", "rcvbuf": 4194304, "rcvbuf_force": true,
            "resumed_from": null, "ipv6": false}"#;
        let w: Workload = serde_json::from_str(old).unwrap();
        let Params::Search(p) = &w.params else {
            panic!("not typed: {:?}", w.params)
        };
        let SearchKind::Udp(u) = &p.kind else {
            panic!("not a UDP search: {:?}", p.kind)
        };
        assert_eq!(u.sizes, vec![64, 1518]);
        assert_eq!(u.loss, vec![0.0, 0.005]);
        assert_eq!((u.min_pps, u.max_pps), (1000.0, Some(2e6)));
        assert_eq!(u.pacing, PacingMode::Spin);
        assert_eq!((u.rcvbuf, u.rcvbuf_force), (Some(4194304), true));
        assert_eq!((p.trial_s, p.max_trials), (10.0, 40));
        assert_eq!(p.target.as_deref(), Some("10.0.0.2:7500"));
        // Written back, it is the same JSON: a UDP search's stored shape did not change.
        assert_eq!(
            serde_json::to_value(&w).unwrap(),
            serde_json::from_str::<serde_json::Value>(old).unwrap()
        );
        // The oldest shape, before pacing, rcvbuf and ipv6 were kept, still loads.
        let oldest = r#"{"kind": "search", "workload": "udp", "sizes": [64], "loss": [0.0],
            "trial_s": 1.0, "initial_trial_s": 0.25, "precision": 0.05, "min_pps": 1000.0,
            "max_pps": null, "max_trials": 20, "target": null, "point": "app"}"#;
        let w: Workload = serde_json::from_str(oldest).unwrap();
        let p: SearchParams = w.params_as().unwrap();
        assert!(matches!(&p.kind, SearchKind::Udp(u) if u.pacing == PacingMode::Sleep));
    }

    #[test]
    fn a_search_of_an_unknown_workload_is_kept_as_stored() {
        let later = r#"{"kind": "search", "workload": "quic", "trial_s": 1.0,
            "initial_trial_s": 0.25, "precision": 0.05, "max_trials": 20, "target": null}"#;
        let w: Workload = serde_json::from_str(later).unwrap();
        assert!(matches!(w.params, Params::Other(_)), "{:?}", w.params);
        let e = w.params_as::<SearchParams>().unwrap_err().to_string();
        assert!(e.contains("quic"), "{e}");
        // A TCP search missing its budgets says which field.
        let tcp = r#"{"kind": "search", "workload": "tcp", "flows": 1, "msg_size": 131072,
            "min_bps": 1e6, "max_bps": null, "trial_s": 1.0, "initial_trial_s": 0.25,
            "precision": 0.05, "max_trials": 20, "target": null}"#;
        let w: Workload = serde_json::from_str(tcp).unwrap();
        let e = w.params_as::<SearchParams>().unwrap_err().to_string();
        assert!(e.contains("retrans"), "{e}");
    }

    #[test]
    fn every_commands_parameters_come_back_typed() {
        let search = SearchParams {
            kind: SearchKind::Udp(UdpSearch {
                sizes: vec![64, 1518],
                loss: vec![0.0, 0.005],
                min_pps: 1000.0,
                max_pps: None,
                point: "app".into(),
                pacing: PacingMode::Sleep,
                rcvbuf: None,
                rcvbuf_force: false,
            }),
            trial_s: 10.0,
            initial_trial_s: 1.0,
            precision: 0.01,
            max_trials: 60,
            target: None,
            resumed_from: None,
            ipv6: false,
        };
        let lab = LabInfo {
            name: "nclab-1".into(),
            topology: "bridge".into(),
            path: "veth, bridge, veth".into(),
            mtu: 1500,
            sender_netns: "a".into(),
            receiver_netns: "b".into(),
            middle_netns: Some("m".into()),
            interfaces: vec![LabIface {
                netns: "b".into(),
                iface: "vb".into(),
                rx_packets: 7,
                ..LabIface::default()
            }],
            knobs: [("gro".to_string(), "off".to_string())].into(),
        };
        let cases = [
            (WorkloadKind::Udp, Params::Udp(udp())),
            (WorkloadKind::Search, Params::Search(search.clone())),
            (
                WorkloadKind::Search,
                Params::Search(SearchParams {
                    kind: SearchKind::Tcp(TcpSearch {
                        flows: 2,
                        msg_size: 131072,
                        retrans: vec![0.0, 0.001],
                        min_bps: 1e6,
                        max_bps: Some(1e9),
                    }),
                    ..search.clone()
                }),
            ),
            (
                WorkloadKind::Search,
                Params::Search(SearchParams {
                    kind: SearchKind::Rr(RrSearch {
                        proto: RrProtocol::Udp,
                        size: 64,
                        flows: 1,
                        p99_s: vec![200e-6],
                        min_tps: 100.0,
                        max_tps: None,
                    }),
                    ..search
                }),
            ),
            (
                WorkloadKind::Udp,
                Params::SearchTrial(SearchTrialParams {
                    frame_bytes: 64,
                    payload_bytes: 18,
                    rate_pps: Some(1e5),
                    trial_s: 1.0,
                    duration_s: None,
                    target: None,
                }),
            ),
            (
                WorkloadKind::Udp,
                Params::SweepCycle(SweepCycleParams {
                    payload_bytes: 18,
                    interval_ns: 5000.0,
                    count: 1000,
                    cycle: 2,
                    target: None,
                }),
            ),
            (
                WorkloadKind::Sweep,
                Params::SweepParam(SweepParamParams {
                    workload: "param".into(),
                    params: vec!["flows=1,2".into()],
                    run: vec!["udp".into()],
                }),
            ),
            (
                WorkloadKind::Suite,
                Params::Suite(SuiteParams {
                    parts: vec!["tcp 1 flow".into()],
                    part_duration_s: 3.0,
                }),
            ),
            (
                WorkloadKind::External,
                Params::Watch(WatchParams {
                    command: Some(vec!["iperf3".into(), "-s".into()]),
                    pids: vec![],
                    ifaces: vec!["lo".into()],
                    interval_s: 1.0,
                }),
            ),
            (
                WorkloadKind::Udp,
                Params::Lab {
                    lab,
                    trial: Box::new(Params::Udp(udp())),
                },
            ),
        ];
        for (kind, params) in cases {
            let w = Workload { kind, params };
            let json = serde_json::to_string(&w).unwrap();
            let back: Workload = serde_json::from_str(&json).unwrap();
            assert_eq!(back, w, "{json}");
        }
    }

    #[test]
    fn another_tools_settings_are_kept_as_they_were() {
        // iperf3's test_start, as the importer stores it: not netceil's, kept whole.
        let json = r#"{"kind":"tcp","tool":"iperf3","protocol":"TCP","num_streams":4,"target":"10.0.0.2:5201"}"#;
        let w: Workload = serde_json::from_str(json).unwrap();
        assert!(matches!(w.params, Params::Other(_)), "{:?}", w.params);
        assert_eq!(w.target(), Some("10.0.0.2:5201"));
        assert_eq!(
            serde_json::to_value(&w).unwrap(),
            serde_json::from_str::<serde_json::Value>(json).unwrap()
        );
        // A later version's field is not dropped: the workload stays as stored, and still
        // runs again.
        let mut later = LoadParams::Udp(udp()).workload().params.to_map();
        later.insert("zerocopy".into(), true.into());
        let w = Workload::typed(WorkloadKind::Udp, &later);
        assert!(matches!(w.params, Params::Other(_)));
        assert_eq!(w.params.to_map()["zerocopy"], true);
        assert_eq!(
            LoadParams::from_workload(&w).unwrap(),
            LoadParams::Udp(udp())
        );
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
        // Stored before `gro` and `gso_segments` were kept (and when --gso was refused).
        let old: Workload = serde_json::from_str(
            r#"{"kind":"udp","payload_bytes":18,"frame_bytes":64,"rate":"125kpps",
                "interval_ns":null,"pacing":"sleep","burst":1,"count":null,"duration_s":6.0,
                "flows":2,"threads":1,"ipv6":false,"target":"10.0.0.2:9000",
                "rcvbuf":1048576,"rcvbuf_force":false,"sndbuf":null,"gso":false}"#,
        )
        .unwrap();
        assert_eq!(
            LoadParams::from_workload(&old).unwrap(),
            LoadParams::Udp(udp())
        );
        // Stored before the threads could be placed: left to the scheduler.
        assert_eq!((t.rx_cpu, t.tx_cpu), (None, None));
        // And a workload that places nothing is stored as before.
        let json = serde_json::to_string(&LoadParams::Udp(udp()).workload()).unwrap();
        assert!(!json.contains("_cpu"), "{json}");
    }

    #[test]
    fn a_damaged_workload_says_which_field() {
        let mut map = LoadParams::Udp(udp()).workload().params.to_map();
        map.insert("rate".into(), "fast".into());
        let w = Workload::typed(WorkloadKind::Udp, &map);
        assert!(matches!(w.params, Params::Other(_)));
        let e = LoadParams::from_workload(&w).unwrap_err().to_string();
        assert!(e.contains("fast"), "{e}");
        map.remove("rate");
        map.remove("flows");
        let w = Workload::typed(WorkloadKind::Udp, &map);
        let e = LoadParams::from_workload(&w).unwrap_err().to_string();
        assert!(e.contains("flows"), "{e}");
        let suite = Workload::typed(WorkloadKind::Suite, &serde_json::json!({}));
        assert!(LoadParams::from_workload(&suite).is_err());
    }
}

/// A search (`netceil search udp|tcp|rr`), as its run stores it and `--resume` reads it back:
/// the workload searched, with its own knob and bounds, beside the settings every search has.
///
/// Stored flat: the workload's fields sit beside the shared ones, under `"workload"`, so a
/// UDP search stored before TCP and RR searches existed (`"workload": "udp"` with `sizes`,
/// `loss`, `min_pps`… at the top) reads back as one, and a UDP search is stored as it was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SearchParams {
    /// The workload searched and its settings.
    #[serde(flatten)]
    pub kind: SearchKind,
    pub trial_s: f64,
    pub initial_trial_s: f64,
    /// The width at which the search stops narrowing, a fraction of the rate.
    pub precision: f64,
    pub max_trials: usize,
    pub target: Option<String>,
    #[serde(default)]
    pub resumed_from: Option<String>,
    /// Over IPv6 (`--ipv6`); runs stored before it was kept ran over IPv4.
    #[serde(default)]
    pub ipv6: bool,
}

/// The workload a search drives, with the knob it turns and the bounds it searches for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "workload", rename_all = "snake_case")]
pub enum SearchKind {
    /// UDP trains: the packet rate, per frame size, within each loss tolerance.
    Udp(UdpSearch),
    /// Paced TCP flows: the goodput within each retransmit budget.
    Tcp(TcpSearch),
    /// Paced request/response: the transaction rate whose p99 round trip stays under each
    /// bound.
    Rr(RrSearch),
}

/// `search udp`: per Ethernet frame size, the packet rate within each loss tolerance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UdpSearch {
    /// Ethernet frame sizes, bytes.
    pub sizes: Vec<usize>,
    /// Loss tolerances, fractions (0 = no loss).
    pub loss: Vec<f64>,
    pub min_pps: f64,
    pub max_pps: Option<f64>,
    /// Where loss is counted: `app`.
    pub point: String,
    /// How the trials' sender waits between sends; runs stored before it was kept slept.
    #[serde(default = "sleep")]
    pub pacing: PacingMode,
    #[serde(default)]
    pub rcvbuf: Option<usize>,
    #[serde(default)]
    pub rcvbuf_force: bool,
}

/// `search tcp`: the total goodput (bits/s, over `flows` paced flows) whose retransmitted
/// segments over segments sent stay within each budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TcpSearch {
    pub flows: u32,
    /// Bytes per write (the largest write of a paced flow).
    pub msg_size: usize,
    /// Retransmit budgets: retransmitted over sent segments, fractions (0 = none).
    pub retrans: Vec<f64>,
    /// The lowest goodput worth trying, all flows together, bits/s.
    pub min_bps: f64,
    /// The highest goodput to try, bits/s; `None`: what the flows carry unpaced.
    pub max_bps: Option<f64>,
}

/// `search rr`: the request rate (transactions/s) whose p99 round trip stays under each bound,
/// with the rate achieved within 1 % of the rate asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RrSearch {
    pub proto: RrProtocol,
    /// Request and response size, bytes.
    pub size: usize,
    pub flows: u32,
    /// p99 round-trip bounds, seconds.
    pub p99_s: Vec<f64>,
    /// The lowest request rate worth trying, transactions/s.
    pub min_tps: f64,
    /// The highest rate to try, transactions/s; `None`: what a closed loop reaches.
    pub max_tps: Option<f64>,
}

impl SearchKind {
    /// The command's word for it: `udp`, `tcp`, `rr`.
    pub fn name(&self) -> &'static str {
        match self {
            SearchKind::Udp(_) => "udp",
            SearchKind::Tcp(_) => "tcp",
            SearchKind::Rr(_) => "rr",
        }
    }
}

fn sleep() -> PacingMode {
    PacingMode::Sleep
}

/// One trial of a search, as its part stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// Over IPv6 (`--ipv6`); runs stored before it was kept ran over IPv4.
    #[serde(default)]
    pub ipv6: bool,
}

/// One cycle of a sweep's cell, as its part stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SweepCycleParams {
    pub payload_bytes: usize,
    pub interval_ns: f64,
    pub count: u64,
    #[serde(default)]
    pub cycle: u32,
    pub target: Option<String>,
}

/// A sweep over TCP flow counts (`netceil sweep tcp`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
