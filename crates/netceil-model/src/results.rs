//! Workload totals: what was sent, what arrived where, and how fast.
//!
//! The JSON form of [`Results`] is a stable contract documented in the README; fields may be
//! added, never renamed or removed.

use serde::{Deserialize, Serialize};

/// How the sender waits between sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PacingMode {
    /// No pacing: as fast as the sender can go.
    None,
    /// Sleep on a timer until the next send time (cheap, ~50 µs granularity under load).
    Sleep,
    /// Busy-wait on the clock (precise to ~1 µs, burns a core).
    Spin,
}

/// Where per-flow TCP pacing was enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TcpPacing {
    None,
    /// The kernel paces with SO_MAX_PACING_RATE (fq qdisc or TCP internal pacing).
    Kernel,
    /// The application writes on a schedule.
    Application,
}

/// What the kernel reports about delivery, next to what the application read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KernelDelivery {
    /// Packets counted by the receive interface over the run (all traffic on it, not just ours).
    pub iface_rx_packets: Option<u64>,
    /// Which interface `iface_rx_packets` counts.
    pub iface: Option<String>,
    /// Datagrams dropped at our receive sockets because the buffer was full (SO_RXQ_OVFL).
    pub socket_drops: Option<u64>,
    /// Delta of Udp RcvbufErrors (/proc/net/snmp) over the run, machine-wide.
    pub udp_rcvbuf_errors: Option<u64>,
    /// Delta of Udp InErrors over the run, machine-wide.
    pub udp_in_errors: Option<u64>,
    /// Delta of Udp SndbufErrors over the run, machine-wide.
    pub udp_sndbuf_errors: Option<u64>,
    /// Delta of the softnet backlog drops (/proc/net/softnet_stat column 2) over the run,
    /// machine-wide: packets that never reached a socket because a CPU's backlog was full.
    pub backlog_drops: Option<u64>,
}

/// The sender's own cost and accuracy: was the generator the limit?
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GeneratorStats {
    pub pacing: Option<PacingMode>,
    /// Achieved send rate over requested; `None` when unpaced.
    pub achieved_ratio: Option<f64>,
    /// CPU seconds the sender threads spent, from their thread CPU clocks.
    pub cpu_s: f64,
    /// Of `cpu_s`, the part spent busy-waiting for the next send time.
    pub spin_cpu_s: f64,
    /// Of `cpu_s`, the part spent doing sends (cpu_s − spin_cpu_s).
    pub work_cpu_s: f64,
    /// Sender CPU as a share of one core over the run, 0–100 per thread.
    pub cpu_pct: f64,
    /// Median |actual − scheduled| send time of paced sends, in µs.
    pub send_gap_error_median_us: Option<f64>,
    /// 99th percentile of the same.
    pub send_gap_error_p99_us: Option<f64>,
    /// Sends that left more than one interval behind schedule.
    pub late_sends: u64,
    /// sendmmsg/send calls that failed (ENOBUFS, ECONNREFUSED…), counted not stored.
    pub send_errors: u64,
}

/// Request/response latency summary, in microseconds, measured from the intended send time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencySummary {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub min: f64,
    pub mean: f64,
    pub count: u64,
}

/// One TCP (or RR) flow's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FlowResult {
    pub flow: u32,
    pub bytes: u64,
    pub bits_per_s: f64,
    /// Total retransmitted segments from TCP_INFO (tcpi_total_retrans).
    pub retransmits: Option<u64>,
    /// Data segments sent, retransmissions included, from TCP_INFO (tcpi_data_segs_out,
    /// Linux ≥ 4.6): what a retransmit ratio is over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments_out: Option<u64>,
    /// Smoothed RTT from TCP_INFO, µs.
    pub rtt_us: Option<f64>,
}

/// Which way bulk TCP data went.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TcpDirection {
    /// This side sends (the default, iperf3 without `-R`).
    #[default]
    Up,
    /// The far side sends, this side reads (`-R`/`--reverse`; on loopback the roles swap).
    Down,
    /// Both at once, each on its own connections (`--bidir`).
    Both,
}

impl TcpDirection {
    pub fn is_up(&self) -> bool {
        *self == TcpDirection::Up
    }
}

/// One direction's figures of a reverse or both-ways TCP run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TcpDirectionResult {
    /// `up`: this side sent; `down`: the far side sent.
    pub direction: TcpDirection,
    pub flows: u32,
    /// What the sending application wrote; `None` when the far end sent and its count is in
    /// `far.app`.
    pub tx_bytes: Option<u64>,
    /// What the receiving application read.
    pub rx_bytes: u64,
    /// Goodput: `rx_bytes` over the receive window, bit/s.
    pub bits_per_s: f64,
    /// Segments the senders retransmitted (TCP_INFO), when this side sent.
    pub retransmits: Option<u64>,
}

/// Latency under load (`netceil run rrul`): a request/response probe's round trip alone, then
/// beside bulk TCP flows in both directions, and how much it grew.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RrulResults {
    /// Seconds of the idle phase (the probe alone).
    pub idle_s: f64,
    /// Seconds of the loaded phase (the probe beside the bulk flows).
    pub loaded_s: f64,
    /// The probe's round trip (its actual send to its answer), µs, idle and loaded.
    pub idle_rtt_us: LatencySummary,
    pub loaded_rtt_us: LatencySummary,
    /// Loaded minus idle, µs, per quantile: how much the round trip grew under load.
    pub inflation_p50_us: f64,
    pub inflation_p90_us: f64,
    pub inflation_p99_us: f64,
    /// Probe requests that got no answer, idle and loaded.
    pub idle_lost: u64,
    pub loaded_lost: u64,
    /// Goodput of the bulk flows per direction, bit/s (what the receiving application read).
    pub up_bits_per_s: f64,
    pub down_bits_per_s: f64,
}

/// Workload totals for a run. Field names are the README's JSON contract.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Results {
    pub duration_s: f64,
    /// UDP payload bytes per packet (iperf3 -l, sockperf -m); `None` for streams.
    pub payload_bytes: Option<usize>,
    /// RFC 2544 frame size of one packet, `payload + 46` for IPv4.
    pub frame_bytes: Option<usize>,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_pps: f64,
    pub tx_bits_per_s: f64,
    /// The requested packet rate; `None` when unpaced.
    pub requested_pps: Option<f64>,
    pub rx_app_packets: u64,
    pub rx_app_bytes: u64,
    pub rx_app_pps: f64,
    pub rx_app_bits_per_s: f64,
    /// Packets the kernel saw arrive (interface RX counter delta); `None` if unknown.
    pub rx_kernel_packets: Option<u64>,
    pub kernel: KernelDelivery,
    pub lost_packets: u64,
    pub reordered_packets: u64,
    pub duplicate_packets: u64,
    /// Sent but not yet received or dropped when the receiver stopped listening.
    pub in_flight_packets: u64,
    /// sent − (received + counted drops + in-flight): what nothing accounts for. Negative
    /// means more arrived than we think was sent (another sender on the port).
    pub unexplained_packets: i64,
    /// True when the sender could not reach the requested rate: the generator was the limit.
    pub generator_limited: bool,
    pub generator: GeneratorStats,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<LatencySummary>,
    /// Request/response: the round trip from each request's actual send to its answer (what
    /// sockperf and netperf report), beside `latency_us`, which a paced run counts from the
    /// intended send time. The difference is the client's own lateness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_us: Option<LatencySummary>,
    /// Request/response transactions per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions_per_s: Option<f64>,
    /// Requests a closed-loop request/response run kept in flight at all times (one per flow:
    /// each flow sends its next request when the previous answer arrives). `None` for a paced
    /// (open-loop) run and for other workloads. A closed loop completes at most this many
    /// transactions per mean round trip, which is how the analyzer tells a latency ceiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_loop_in_flight: Option<u32>,
    /// The receive socket's buffer as the kernel granted it (getsockopt SO_RCVBUF), bytes: the
    /// system default unless `--rcvbuf` asked for more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf_bytes: Option<u64>,
    /// An imported run's receiving program: its CPU as a share of one core over the whole run,
    /// per data thread (the program's own total divided over the threads that moved the data),
    /// as the tool that wrote the log counted it (iperf3's `cpu_utilization_percent`). `None`
    /// for netceil's own runs, whose receiving threads are sampled in the series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_cpu_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowResult>,
    /// Reverse or both-ways TCP streams: each direction's figures apart (the totals above
    /// add them). Empty when only this side sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub directions: Vec<TcpDirectionResult>,
    /// Latency under load (`netceil run rrul`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rrul: Option<RrulResults>,
    /// How TCP flows were paced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_pacing: Option<TcpPacing>,
    /// The socket receive buffer this side's TCP receiver fixed for its streams, bytes
    /// (`--rcvbuf`: on a path inside the host by default); `None`: the kernel's autotuning.
    /// It changes what is measured: the queue a reader lets build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_rcvbuf_bytes: Option<u64>,
    /// Anything the reader should know about how these figures were obtained.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The far end of `--to` (a `netceil serve`), as it counted itself: its application
    /// counts, kernel counter deltas, CPU per core and sampled series over the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub far: Option<Box<FarEnd>>,
}

impl Results {
    /// Segments retransmitted over segments sent, over every flow; `None` when a flow's
    /// kernel did not say how many it sent (tcpi_data_segs_out, Linux ≥ 4.6) or none were.
    pub fn retransmit_ratio(&self) -> Option<f64> {
        let mut retrans = 0u64;
        let mut sent = 0u64;
        for f in &self.flows {
            retrans += f.retransmits?;
            sent += f.segments_out?;
        }
        (sent > 0).then(|| retrans as f64 / sent as f64)
    }

    /// The 99th-percentile round trip (from each request's intended send), seconds; `None`
    /// when no transaction completed.
    pub fn p99_round_trip_s(&self) -> Option<f64> {
        self.latency_us
            .as_ref()
            .filter(|l| l.count > 0)
            .map(|l| l.p99 / 1e6)
    }
}

/// What a `netceil serve` reports about a test at its end, over the control connection: the
/// receiving side of the run, measured there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FarEnd {
    /// The control address the client connected to.
    pub address: String,
    /// The far end's netceil version.
    pub netceil_version: String,
    /// The far end's host name.
    pub host: String,
    /// Its online CPUs.
    pub cpus: u32,
    /// Seconds from the grant to the end of the test.
    pub duration_s: f64,
    /// What ended the test there: `client done`, or the limit or timeout that cut it.
    pub ended_by: String,
    pub app: FarApp,
    pub kernel: FarKernelDeltas,
    /// CPU time shares per core over the test, from /proc/stat.
    pub cpu: Vec<FarCpu>,
    /// The far end's own sampled series (vmstat/mpstat/sar figures), its `t_s` from the grant.
    pub series: crate::Series,
    /// Where the far end's clock starts on this run's: the run's series time (s) at which the
    /// client received the grant. Add it to `series.t_s` to put both ends on one time axis
    /// (off by the grant's one-way delay). Set by the client, not sent by the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub near_t0_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The far end's application counts for one test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FarApp {
    /// UDP datagrams of the test received (distinct), and their payload bytes.
    pub udp_packets: u64,
    pub udp_bytes: u64,
    pub udp_lost: u64,
    pub udp_reordered: u64,
    pub udp_duplicates: u64,
    /// The data socket's drop counter (SO_RXQ_OVFL); `None` if the kernel would not say.
    pub udp_socket_drops: Option<u64>,
    /// Requests echoed (request/response over UDP).
    pub udp_requests_echoed: u64,
    /// With UDP GRO (`--gro`): reads that held more than one datagram, and the datagrams
    /// they held.
    #[serde(default)]
    pub udp_gro_reads: u64,
    #[serde(default)]
    pub udp_gro_datagrams: u64,
    /// Datagrams on the test's socket not from the granted peer or not of its run: counted,
    /// never answered.
    pub stray_packets: u64,
    pub tcp_connections: u64,
    /// TCP connections from anyone but the granted peer, closed at once.
    pub tcp_refused: u64,
    pub tcp_stream_bytes: u64,
    pub tcp_echoed_bytes: u64,
    /// Bytes the far end wrote to connections that asked it to send (`-R`, `--bidir`, rrul).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tcp_source_bytes: u64,
    /// CPU seconds of the far end's receive threads.
    pub cpu_s: Option<f64>,
}

/// Kernel counter deltas over the test on the far end; `None` where a file could not be read or
/// a counter went backwards.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FarKernelDeltas {
    /// The interface that holds the address the test's data arrived on.
    pub iface: Option<String>,
    pub iface_rx_packets: Option<u64>,
    pub iface_rx_bytes: Option<u64>,
    pub iface_rx_dropped: Option<u64>,
    pub iface_tx_packets: Option<u64>,
    /// softnet_stat, summed over CPUs.
    pub softnet_processed: Option<u64>,
    pub softnet_dropped: Option<u64>,
    pub softnet_time_squeeze: Option<u64>,
    /// /proc/net/snmp Udp, for the far end's network namespace.
    pub udp_in_datagrams: Option<u64>,
    pub udp_rcvbuf_errors: Option<u64>,
    pub udp_in_errors: Option<u64>,
    pub udp_no_ports: Option<u64>,
    pub tcp_retrans_segs: Option<u64>,
}

/// One core's time shares on the far end over the test, percent of that core's time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FarCpu {
    pub cpu: u32,
    pub user_pct: f64,
    pub system_pct: f64,
    pub irq_pct: f64,
    pub softirq_pct: f64,
    pub idle_pct: f64,
    /// The wall time less idle and iowait, percent: exact where the tick-sampled busy
    /// columns (user, system, irq, softirq) miss the bursts of a CPU woken thousands of
    /// times a second, so those may add up to less.
    pub busy_pct: f64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}
