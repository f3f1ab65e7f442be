//! The command line: every flag, its units and its defaults, in one place.

use clap::{Args, Parser, Subcommand, ValueEnum};
use netceil_lab::topo::Topology;
use netceil_model::params::{TcpRecvBuffer, TcpSinkWakes};
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

use crate::parse::{
    long_duration, parse_count, parse_host_port, parse_label, parse_link, parse_p99,
    parse_percent_budget, parse_pps, parse_rate, parse_size, parse_throughput, run_duration,
    sample_interval, step_timeout,
};

/// Find the ceiling of this machine's network I/O and name what sets it.
#[derive(Debug, Parser)]
#[command(name = "netceil", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Generate load and measure it. With no workload: a ~20 s loopback ceiling test
    /// (UDP at the smallest frame and maximum rate, a TCP stream, request/response).
    Run(RunArgs),
    /// Observe only: sample what vmstat, mpstat, sar and pidstat would show, one table row per
    /// interval, around any workload. With `-- CMD ARGS…`, launch the command, observe until it
    /// exits, keep its output in the run, and exit with its exit code.
    Watch(WatchArgs),
    /// Import other tools' logs (vmstat, sar, mpstat, pidstat, sysstat JSON, lock profiles,
    /// Erlang, iperf3 JSON, /proc snapshots, tables) and diagnose them like a live run; or
    /// analyze a stored run again.
    Analyze(AnalyzeArgs),
    /// List stored runs, newest first.
    Runs(RunsArgs),
    /// Show a stored run's summary, results and findings again.
    Show(ShowArgs),
    /// Remove stored runs.
    Rm(RmArgs),
    /// Write a stored run as JSON (the whole Run), CSV (the series, units in the header) or markdown.
    Export(ExportArgs),
    /// One self-contained HTML file with charts of one or more stored runs.
    Report(ReportArgs),
    /// Two stored runs side by side: headline and normalized figures, distributions, and
    /// whether the difference is significant.
    Compare(CompareArgs),
    /// The far end for `netceil run … --to HOST:PORT`, safe to leave running: grants tests over
    /// an authenticated control connection (--key-file; loopback only without one), within
    /// limits, answers no one else, and reports its own counters, CPU and series to the client.
    Serve(ServeArgs),
    /// Deprecated name of `serve` (same flags); it will be removed.
    Recv(ServeArgs),
    /// Print a shell completion script, generated from these flags (bash, zsh, fish, elvish,
    /// powershell).
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: GenShell,
    },
    /// Print the man page (roff), or with --out DIR write one page per command there.
    Man(ManArgs),
    /// The highest rate within a bound, found as FD.io CSIT's MLRsearch finds it, and what
    /// stopped it there: UDP within a loss tolerance per frame size (RFC 2544 throughput), TCP
    /// goodput within a retransmit budget, request rate under a p99 bound.
    Search(SearchArgs),
    /// Size × interval trains (each cell one cycle of --count packets): per size, the first
    /// interval at which every packet arrived, at the kernel and at the application.
    Sweep(SweepArgs),
    /// Network-namespace topologies on this machine (direct, bridge, routed, bridge-nf,
    /// conntrack, macvlan): workloads across them, A/B between them, and knob sweeps whose
    /// changes are always restored (root).
    Lab(LabArgs),
    /// What a lab runs in its sender's namespace (its workload comes from the lab, not flags).
    #[command(hide = true)]
    LabChild,
}

#[derive(Debug, Args)]
pub struct LabArgs {
    #[command(subcommand)]
    pub command: LabCommand,
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Build a topology and leave it up (until `lab down`).
    Up(LabUpArgs),
    /// Take a lab down, or with --all revert what this store's journal holds (after a kill -9
    /// too) and remove the labs whose owner is gone; a lab another netceil still runs or keeps
    /// up is left alone unless --force names it.
    Down(LabDownArgs),
    /// The labs that are up, with their owners (this store's or another's, running, kept or
    /// orphaned), and the changes a killed netceil left.
    List,
    /// Run a workload (`run`, `sweep` or `search`) across a topology: the sender in one
    /// namespace, `netceil serve` in the other.
    Run(LabRunArgs),
    /// The same workload over several topologies, alternating, with repeats: pps, Gbit/s,
    /// loss, CPU ns per packet, the cost each extra hop adds, and the verdicts.
    Compare(LabCompareArgs),
}

/// A lab topology by name: the names are possible values, so that `--help`, the completions
/// and the parser all know them.
fn topology_names() -> impl clap::builder::TypedValueParser<Value = Topology> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Topology::ALL.map(|t| t.name()))
        .try_map(|name| Topology::parse(&name))
}

#[derive(Debug, Args)]
pub struct LabUpArgs {
    /// The topology to build.
    #[arg(value_parser = topology_names())]
    pub topology: Topology,
    /// The lab's name (namespaces netceil-NAME-a, -b, -m); default: the topology's.
    #[arg(long)]
    pub name: Option<String>,
    /// MTU of every lab link.
    #[arg(long, default_value_t = 1500)]
    pub mtu: u32,
}

#[derive(Debug, Args)]
pub struct LabDownArgs {
    /// The lab to take down.
    #[arg(conflicts_with = "all")]
    pub name: Option<String>,
    /// Every lab of this store and every change its journal holds whose owner is gone, and
    /// every other netceil lab whose owner is gone.
    #[arg(long)]
    pub all: bool,
    /// Take the named lab down even though another netceil still runs it or keeps it up.
    #[arg(long, requires = "name")]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct LabRunArgs {
    /// A topology to build for this run (and remove after it).
    #[arg(conflicts_with = "name", value_parser = topology_names())]
    pub topology: Option<Topology>,
    /// A lab that is up (`lab up`), instead of a topology.
    #[arg(long)]
    pub name: Option<String>,
    /// MTU of every lab link (a topology built for the run).
    #[arg(long, default_value_t = 1500)]
    pub mtu: u32,
    /// KEY=V1,V2,…: for each value, set it, run the workload, record; the original is restored
    /// afterwards (repeatable: every combination).
    #[arg(long, value_name = "KEY=V1,V2")]
    pub knob: Vec<String>,
    /// Allow knobs outside the known-safe list.
    #[arg(long)]
    pub allow_any_knob: bool,
    /// Runs per knob value (or of the workload).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// One JSON document: the runs per knob step.
    #[arg(long)]
    pub json: bool,
    /// No live lines.
    #[arg(long, short)]
    pub quiet: bool,
    /// Do not keep the runs in the store.
    #[arg(long)]
    pub no_store: bool,
    /// The workload: `run …`, `sweep …` or `search …`, as on netceil's own command line.
    #[arg(last = true, required = true, value_name = "WORKLOAD")]
    pub workload: Vec<String>,
}

#[derive(Debug, Args)]
pub struct LabCompareArgs {
    /// The topologies to compare.
    #[arg(long, value_delimiter = ',', default_value = "direct,bridge,routed", value_parser = topology_names())]
    pub topologies: Vec<Topology>,
    /// Rounds; each round runs every topology once, the order alternating.
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
    /// MTU of every lab link.
    #[arg(long, default_value_t = 1500)]
    pub mtu: u32,
    /// Skip the 3 s 64-byte probe per topology that gives the packet ceiling for the
    /// arithmetic.
    #[arg(long)]
    pub no_packet_ceiling: bool,
    /// Write an HTML report of each topology's median run.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    /// One JSON document.
    #[arg(long)]
    pub json: bool,
    /// No live lines.
    #[arg(long, short)]
    pub quiet: bool,
    /// Do not keep the runs in the store.
    #[arg(long)]
    pub no_store: bool,
    /// The workload: `run …`, as on netceil's own command line.
    #[arg(last = true, required = true, value_name = "WORKLOAD")]
    pub workload: Vec<String>,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub workload: SweepWorkload,
    #[command(flatten)]
    pub common: CommonRunArgs,
    /// The live series while it runs, and at the end the findings it stands on (the
    /// trials that stopped its knees). No live verdict: a window across trials at other
    /// rates has no single ceiling.
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

#[derive(Debug, Subcommand)]
pub enum SweepWorkload {
    /// UDP trains of --count packets, --interval apart, for each payload size.
    Udp(SweepUdpArgs),
    /// TCP with more and more flows: throughput, CPU, cs/s and in/s per step, where adding
    /// flows stops adding throughput, and the analyzer's verdict on that step.
    Tcp(SweepTcpArgs),
    /// Any `netceil run` flag over a list of values (several --param: every combination):
    /// `sweep param --param size=64,1472 --param threads=1,2 -- udp --duration 5s`.
    Param(SweepParamArgs),
}

#[derive(Debug, Args, Clone)]
pub struct SweepParamArgs {
    /// A `netceil run` flag and its values, `NAME=V1,V2,…` (without the leading --).
    #[arg(long = "param", value_name = "NAME=V1,V2,…", required = true)]
    pub params: Vec<String>,
    /// The `netceil run` arguments every step shares, after `--`: the workload and its flags.
    #[arg(last = true, required = true, value_name = "RUN ARGS")]
    pub run: Vec<String>,
}

#[derive(Debug, Args, Clone)]
pub struct SweepTcpArgs {
    /// Flow counts, one step each.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32")]
    pub flows: Vec<u32>,
    /// Rate per flow in bit/s (1Mbit); default unpaced.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_throughput, value_name = "RATE")]
    pub rate_per_flow: Option<f64>,
    /// Length of each step.
    #[arg(long, allow_hyphen_values = true, value_parser = run_duration, default_value = "5s")]
    pub step_duration: Duration,
    /// Bytes per write (K, M, G binary).
    #[arg(long, value_parser = parse_size, default_value = "128K")]
    pub msg_size: usize,
    /// Threads that multiplex the flows (epoll).
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
}

#[derive(Debug, Args, Clone)]
pub struct SweepUdpArgs {
    /// UDP payload sizes (K = 1024).
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "1K,1536,4K,8K,12K,16K")]
    pub sizes: Vec<usize>,
    /// Intervals between packets: START..END/STEP (0 = as fast as the sender can).
    #[arg(long, allow_hyphen_values = true, default_value = "0us..12us/0.1us")]
    pub interval: String,
    /// Packets per cycle (one cell).
    #[arg(long, default_value_t = 5000)]
    pub count: u64,
    /// Cycles per cell; a cell succeeds only if every cycle did.
    #[arg(long, default_value_t = 1)]
    pub cycles: u32,
    /// Go on with an interrupted sweep (a run id, a unique prefix, or `last`): its settings,
    /// and its stored cycles replayed without traffic; only the rest is measured.
    #[arg(long, value_name = "RUN")]
    pub resume: Option<String>,
    /// How to wait between sends; microsecond gaps need spinning.
    #[arg(long, value_enum, default_value_t = PacingArg::Spin)]
    pub pacing: PacingArg,
    /// Receive buffer to request on the receiver's socket, bytes (default: the system's).
    #[arg(long, value_parser = parse_size)]
    pub rcvbuf: Option<usize>,
    /// Force --rcvbuf past net.core.rmem_max (SO_RCVBUFFORCE).
    #[arg(long, requires = "rcvbuf")]
    pub rcvbuf_force: bool,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    #[command(subcommand)]
    pub workload: SearchWorkload,
    #[command(flatten)]
    pub common: CommonRunArgs,
    /// The live series while it runs, and at the end the findings it stands on (the
    /// trials that stopped its knees). No live verdict: a window across trials at other
    /// rates has no single ceiling.
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

#[derive(Debug, Subcommand)]
pub enum SearchWorkload {
    /// UDP trains: per frame size, the highest packet rate whose loss at netceil's receiver
    /// stays within each --loss tolerance (NDR at 0, PDRs above).
    Udp(SearchUdpArgs),
    /// Paced TCP flows: the highest goodput whose retransmitted segments over segments sent
    /// stay within each --retrans budget, with the goodput within 1 % of the load asked.
    Tcp(SearchTcpArgs),
    /// Paced request/response: the highest transaction rate whose p99 round trip stays under
    /// each --p99 bound, with the rate answered within 1 % of the rate asked (a server that
    /// falls behind fails, however short its round trips).
    Rr(SearchRrArgs),
}

/// The trials of a TCP or request/response search: their lengths, the precision, the
/// budget, and where to go on from.
#[derive(Debug, Args, Clone)]
pub struct SearchTrialArgs {
    /// Length of the trials that decide (the final phase and the verification).
    #[arg(long, allow_hyphen_values = true, value_parser = run_duration, default_value = "10s")]
    pub trial: Duration,
    /// Length of the first, short trials; they double phase by phase up to --trial.
    #[arg(long, allow_hyphen_values = true, value_parser = run_duration, default_value = "1s")]
    pub initial_trial: Duration,
    /// Relative width the final interval must reach: (upper − lower) / upper.
    #[arg(long, default_value = "1%")]
    pub precision: String,
    /// Most trials, verifications included.
    #[arg(long, default_value_t = 40)]
    pub max_trials: usize,
    /// Go on with an interrupted search (a run id, a unique prefix, or `last`): its settings,
    /// and its stored trials replayed without traffic; only the rest is measured.
    #[arg(long, value_name = "RUN")]
    pub resume: Option<String>,
}

#[derive(Debug, Args, Clone)]
pub struct SearchTcpArgs {
    /// Retransmit budgets, as percentages of the segments sent: 0 for none, e.g. 0,0.1%.
    #[arg(long, value_delimiter = ',', value_parser = parse_percent_budget, value_name = "PCT", required_unless_present = "resume")]
    pub retrans: Vec<f64>,
    /// Concurrent connections, paced alike; the rate is their goodput together.
    #[arg(long, default_value_t = 1)]
    pub flows: u32,
    /// Bytes per write, the largest write of a paced flow (128K = 131072).
    #[arg(long, value_parser = parse_size, default_value = "128K")]
    pub msg_size: usize,
    /// Lowest goodput worth trying, all flows together (10Mbit, 1Gbit).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_throughput, value_name = "RATE", default_value = "10Mbit")]
    pub min_rate: f64,
    /// Highest goodput to try. Default: what the flows carry unpaced, measured by a short
    /// trial.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_throughput, value_name = "RATE")]
    pub max_rate: Option<f64>,
    #[command(flatten)]
    pub trials: SearchTrialArgs,
}

#[derive(Debug, Args, Clone)]
pub struct SearchRrArgs {
    /// p99 round-trip bounds, e.g. 200us or 100us,1ms (1 µs to 10 s).
    #[arg(long, value_delimiter = ',', value_parser = parse_p99, value_name = "TIME", required_unless_present = "resume")]
    pub p99: Vec<f64>,
    /// The transport the requests and responses travel over.
    #[arg(long, value_enum, default_value_t = ProtoArg::Tcp)]
    pub proto: ProtoArg,
    /// Request and response size in bytes.
    #[arg(long, value_parser = parse_size, default_value = "64")]
    pub size: usize,
    /// Concurrent connections (or UDP sockets); the rate is theirs together.
    #[arg(long, default_value_t = 1)]
    pub flows: u32,
    /// Lowest request rate worth trying, transactions/s.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_pps, value_name = "RATE", default_value = "100")]
    pub min_rate: f64,
    /// Highest request rate to try, transactions/s. Default: what a closed loop (one
    /// request outstanding per flow) reaches, measured by a short trial.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_pps, value_name = "RATE")]
    pub max_rate: Option<f64>,
    #[command(flatten)]
    pub trials: SearchTrialArgs,
}

#[derive(Debug, Args, Clone)]
pub struct SearchUdpArgs {
    /// Ethernet frame sizes as RFC 2544 counts them (64 = 18 B of UDP payload over IPv4); the
    /// old spelling, --sizes, still works (in `sweep`, --sizes is UDP payload)
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "64,1518")]
    pub frame_sizes: Vec<usize>,
    /// The old spelling of --frame-sizes: Ethernet frames, not UDP payload as in `sweep`.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, hide = true, conflicts_with = "frame_sizes")]
    pub sizes: Option<Vec<usize>>,
    /// Loss tolerances, as percentages: 0 for the NDR, e.g. 0,0.5% for the NDR and a PDR.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub loss: Vec<String>,
    /// Length of the trials that decide (the final phase and the verification).
    #[arg(long, allow_hyphen_values = true, value_parser = run_duration, default_value = "10s")]
    pub trial: Duration,
    /// Length of the first, short trials; they double phase by phase up to --trial.
    #[arg(long, allow_hyphen_values = true, value_parser = run_duration, default_value = "1s")]
    pub initial_trial: Duration,
    /// Relative width the final interval must reach: (upper − lower) / upper.
    #[arg(long, default_value = "1%")]
    pub precision: String,
    /// Lowest rate worth trying, packets/s.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_pps, value_name = "RATE", default_value = "1k")]
    pub min_rate: f64,
    /// Highest rate to try, packets/s. Default: what the generator sends flat out, measured
    /// by a short unpaced trial per size.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_pps, value_name = "RATE")]
    pub max_rate: Option<f64>,
    /// Most trials per frame size, verifications included.
    #[arg(long, default_value_t = 40)]
    pub max_trials: usize,
    /// Go on with an interrupted search (a run id, a unique prefix, or `last`): its settings,
    /// and its stored trials replayed without traffic; only the rest is measured.
    #[arg(long, value_name = "RUN")]
    pub resume: Option<String>,
    /// How to wait between paced sends.
    #[arg(long, value_enum, default_value_t = PacingArg::Sleep)]
    pub pacing: PacingArg,
    /// Receive buffer to request on the receiver's socket, bytes (default: the system's).
    #[arg(long, value_parser = parse_size)]
    pub rcvbuf: Option<usize>,
    /// Force --rcvbuf past net.core.rmem_max (SO_RCVBUFFORCE).
    #[arg(long, requires = "rcvbuf")]
    pub rcvbuf_force: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(subcommand)]
    pub workload: Option<Workload>,
    #[command(flatten)]
    pub common: CommonRunArgs,
    /// Test the verdict by experiment: change the one thing it blames (a 16× receive buffer,
    /// the receiver on another core, the flows over more threads, a lower rate, the probes
    /// off) in four short trials
    /// alternated with the unchanged workload, and demote it if the figure does not move.
    /// Changes only netceil's own workload, never the machine. One workload only.
    #[arg(long, global = true)]
    pub confirm: bool,
    /// Place the receiving thread(s) (the in-process receiver, or rr's echo) on this CPU;
    /// by default the scheduler places them. It must be one this process may run on.
    #[arg(long, global = true, value_name = "CPU")]
    pub rx_cpu: Option<usize>,
    /// Place the sending thread(s) (rr: its client) on this CPU; by default the scheduler's.
    #[arg(long, global = true, value_name = "CPU")]
    pub tx_cpu: Option<usize>,
    /// How the end of the run is printed: `screen`, one screen with the ceiling and the
    /// verdict; or `iperf`, iperf3's short lines, one per interval (what the receiver got,
    /// netceil's loss or retransmits), then the sender's and the receiver's totals, with no
    /// live table before them.
    #[arg(long, global = true, value_enum, default_value_t = RunFormat::Screen)]
    pub format: RunFormat,
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

/// How `run` prints its end (the values are described on `--format`, so that the help keeps
/// its short layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunFormat {
    Screen,
    Iperf,
}

/// The live OpenMetrics endpoint (see `netceil_metrics`).
#[derive(Debug, Args, Clone)]
pub struct MetricsArgs {
    /// Serve the live series and the analyzer's findings at http://ADDR:PORT/metrics in the
    /// OpenMetrics text format, for Prometheus, while this runs (e.g. 127.0.0.1:9870; port 0
    /// takes a free one, printed on stderr). Only this address is bound; nothing without it.
    #[arg(long, global = true, value_name = "ADDR:PORT", value_parser = netceil_metrics::parse_listen)]
    pub metrics_listen: Option<SocketAddr>,
    /// With --metrics-listen: keep serving this long after the end, so that a scraper sees
    /// the final findings (one scrape interval, e.g. 15s). A Ctrl-C ends the wait (a
    /// second one, when the first ended the command).
    #[arg(long, global = true, value_name = "DURATION", allow_hyphen_values = true, value_parser = run_duration, requires = "metrics_listen")]
    pub metrics_linger: Option<Duration>,
    /// With --metrics-listen: also a series per thread id and per TCP flow (by default a
    /// process's threads are summed by name and flows by process, so that thousands of
    /// threads or flows do not make thousands of series).
    #[arg(long, global = true, requires = "metrics_listen")]
    pub metrics_detail: bool,
}

/// Options every workload takes.
#[derive(Debug, Args, Clone)]
pub struct CommonRunArgs {
    /// Print one JSON document on stdout (the contract is in the README); live lines go to stderr.
    #[arg(long, global = true)]
    pub json: bool,
    /// Run the test against a `netceil serve` at this control address (HOST:PORT or
    /// IP:PORT) instead of an in-process receiver on loopback; the far end's counters come
    /// back into the run.
    #[arg(long, global = true, value_name = "HOST:PORT", value_parser = parse_host_port)]
    pub to: Option<SocketAddr>,
    /// The shared secret for --to (the server's --key-file), proved with an HMAC, never sent.
    #[arg(long, global = true, value_name = "FILE")]
    pub key_file: Option<std::path::PathBuf>,
    /// Use IPv6 loopback (::1) for the in-process receiver.
    #[arg(long, global = true)]
    pub ipv6: bool,
    /// A label to keep with the run, e.g. --label nic=msk0 (repeatable).
    #[arg(long = "label", global = true, value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// No live lines, and only the essentials at the end: what ran, its ceiling, the verdict.
    #[arg(long, short, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// `run`: everything at the end (every figure, note and finding, with its evidence and
    /// advice) instead of one screen, and on a terminal every live row kept, not drawn in place.
    #[arg(long, short, global = true)]
    pub verbose: bool,
    /// Sampling interval of the machine's counters, 10ms to 1h.
    #[arg(long, global = true, allow_hyphen_values = true, value_parser = sample_interval, default_value = "1s")]
    pub sample_interval: Duration,
    /// Show every column of the live table, whatever the terminal's width.
    #[arg(long, global = true)]
    pub wide: bool,
    /// Do not keep this run in the store ($NETCEIL_DB, else ~/.local/share/netceil/runs.db).
    #[arg(long, global = true)]
    pub no_store: bool,
    /// eBPF probes to attach (root only): locks, softirq, napi, offcpu, comma-separated, or
    /// all. They fill the lock table, exact softirq time per CPU, NAPI polls and budget
    /// exhaustion, and per-thread on/off-CPU time.
    #[arg(long = "probe", global = true, value_name = "LIST", value_parser = netceil_engine::probes::parse_probe_list)]
    pub probes: Option<netceil_engine::probes::ProbeList>,
    /// With --probe locks: take a kernel stack for one contention in N (per CPU), to name the
    /// callers; 0 takes none (lowest cost, callers unknown).
    #[arg(long, global = true, value_name = "N", default_value_t = 16)]
    pub lock_stacks: u32,
    /// Also write what is measured, as it is measured, to FILE as JSON Lines (one object per
    /// line: begin, progress, end, step, say, close; see the README); `-` writes them to
    /// stdout, and the table and summary then go to stderr. Not with --json to stdout.
    #[arg(long, global = true, value_name = "FILE|-")]
    pub stream: Option<std::path::PathBuf>,
    /// Where a lab's child writes its finished run for the lab (not a flag: set from the
    /// child's spec).
    #[arg(skip)]
    pub run_out: Option<std::path::PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Workload {
    /// UDP packet trains: paced or at maximum rate, accounted packet by packet.
    Udp(UdpArgs),
    /// TCP streams: a few bulk flows, or many slow paced ones.
    Tcp(TcpArgs),
    /// Request/response transactions with a latency histogram.
    Rr(RrArgs),
    /// Latency under load (flent's RRUL): bulk TCP flows up and down at once beside a UDP
    /// request/response probe; how much the round trip grew over its idle value, and why.
    Rrul(RrulArgs),
}

#[derive(Debug, Args, Clone)]
pub struct RrulArgs {
    /// Bulk TCP flows per direction (flent's rrul runs 4).
    #[arg(long, default_value_t = 4)]
    pub flows: u32,
    /// Run length, idle phase included (10, 2.5s, 500ms, 1m). The idle phase, the probe
    /// alone, is 2 s or a fifth of the run if that is shorter.
    #[arg(long, allow_hyphen_values = true, value_parser = run_duration, default_value = "10s")]
    pub duration: Duration,
    /// Probe requests per second (64-byte UDP request/response, as a ping).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_pps, default_value = "100", value_name = "R")]
    pub rr_rate: f64,
    /// Rate of each flow, in bit/s (1Mbit, 500kbit), both ways: the far side paces its own
    /// (a far `netceil serve` older than this one refuses); default unpaced.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_throughput, value_name = "RATE")]
    pub rate_per_flow: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PacingArg {
    /// Sleep on a timer until each send is due (cheap; coarse under ~50 µs).
    Sleep,
    /// Busy-wait on the clock (µs precision; burns a core, and netceil reports that it did).
    Spin,
}

#[derive(Debug, Args, Clone)]
pub struct UdpArgs {
    /// UDP payload in bytes, as iperf3 -l and sockperf -m count it (at least 18, netceil's header).
    #[arg(long, value_parser = parse_size, conflicts_with = "frame_size")]
    pub size: Option<usize>,
    /// Ethernet frame size as RFC 2544 counts it; IPv4 payload = frame − 46 (IPv6: − 66).
    #[arg(long, value_parser = parse_size)]
    pub frame_size: Option<usize>,
    /// Send rate: packets/s (200k, 1.5M) or bits of payload per second (100Mbit, 1Gbit). Default: as fast as possible.
    #[arg(long, conflicts_with = "interval", allow_hyphen_values = true, value_parser = parse_rate)]
    pub rate: Option<netceil_model::Rate>,
    /// Gap between packets (5us, 1500ns, 1ms); the alternative to --rate.
    #[arg(long, allow_hyphen_values = true, value_parser = run_duration)]
    pub interval: Option<Duration>,
    /// Stop after this many packets (or at --duration, whichever comes first).
    #[arg(long)]
    pub count: Option<u64>,
    /// Packets sent back to back per scheduled send; bursts are burst × interval apart.
    #[arg(long, default_value_t = 1)]
    pub burst: u32,
    /// Flows (distinct source ports).
    #[arg(long, default_value_t = 1)]
    pub flows: u32,
    /// Sender threads; flows are spread over them.
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
    /// How to wait between paced sends.
    #[arg(long, value_enum, default_value_t = PacingArg::Sleep)]
    pub pacing: PacingArg,
    /// Run length (10, 2.5s, 500ms, 1m).
    #[arg(long, allow_hyphen_values = true, value_parser = run_duration, default_value = "10s")]
    pub duration: Duration,
    /// Receive buffer to request on the receiver's socket, bytes (e.g. 4K to provoke drops).
    /// Without it the socket keeps the system default (net.core.rmem_default), as an ordinary
    /// application does; a request is clamped to net.core.rmem_max.
    #[arg(long, value_parser = parse_size)]
    pub rcvbuf: Option<usize>,
    /// Force --rcvbuf past net.core.rmem_max (SO_RCVBUFFORCE, root or CAP_NET_ADMIN); the
    /// output says what it bypassed.
    #[arg(long, requires = "rcvbuf")]
    pub rcvbuf_force: bool,
    /// Send buffer to request on the sender's sockets, bytes.
    #[arg(long, value_parser = parse_size)]
    pub sndbuf: Option<usize>,
    /// UDP GSO (UDP_SEGMENT): each send is a buffer of up to 64 KiB that the kernel cuts into
    /// --size datagrams, each still with its own header. Changes what is measured (the cost of
    /// one send per datagram is gone); never the default.
    #[arg(long)]
    pub gso: bool,
    /// Datagrams per GSO send (default: as many as fit 64 KiB, at most 64).
    #[arg(long, requires = "gso")]
    pub gso_segments: Option<u32>,
    /// UDP GRO (UDP_GRO) at the receiver: reads may hold many datagrams, split and counted one
    /// by one. Changes what is measured (the cost of one read per datagram); independent of
    /// --gso. With --to, only a `netceil serve` far end is asked.
    #[arg(long)]
    pub gro: bool,
}

impl From<PacingArg> for netceil_model::PacingMode {
    fn from(p: PacingArg) -> Self {
        match p {
            PacingArg::Sleep => netceil_model::PacingMode::Sleep,
            PacingArg::Spin => netceil_model::PacingMode::Spin,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TcpPacingArg {
    /// Kernel pacing (SO_MAX_PACING_RATE) if it holds the rate here, else application pacing.
    Auto,
    /// The kernel's fq pacing (SO_MAX_PACING_RATE) on each socket.
    Kernel,
    /// netceil's own writes, timed by the application.
    App,
}

#[derive(Debug, Args, Clone)]
pub struct TcpArgs {
    /// Concurrent connections.
    #[arg(long, default_value_t = 1)]
    pub flows: u32,
    /// Rate per flow in bit/s (1Mbit, 500kbit); default unpaced. With -R/--bidir the far
    /// side paces the flows it sends.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_throughput, value_name = "RATE")]
    pub rate_per_flow: Option<f64>,
    /// Bytes per write (128K = 131072; K, M, G are binary here, as in iperf3).
    #[arg(long, value_parser = parse_size, default_value = "128K")]
    pub msg_size: usize,
    /// Threads that multiplex the flows (epoll).
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
    /// Where per-flow pacing is enforced.
    #[arg(long, value_enum, default_value_t = TcpPacingArg::Auto)]
    pub pacing: TcpPacingArg,
    /// The senders' congestion control (cubic, bbr, reno…; iperf3's -C): one of
    /// /proc/sys/net/ipv4/tcp_available_congestion_control. Default: the kernel's.
    #[arg(long, short = 'C', value_name = "ALGO")]
    pub congestion: Option<String>,
    /// Each stream's socket receive buffer where it is read (here, or at the far end with
    /// --to): `auto` fixes it at twice the receiving core's L2 cache on a path inside one host
    /// (handshake RTT ≤ 100 µs), where the kernel's autotuning lets megabytes queue, and leaves
    /// longer paths to the kernel; `kernel` always leaves it to the kernel (net.ipv4.tcp_rmem
    /// of the reading host), as an application that sets nothing; a size (1M) fixes it at that
    /// many bytes (SO_RCVBUF of half: the kernel doubles it)
    #[arg(long, value_parser = parse_recv_buffer, default_value = "auto", value_name = "auto|kernel|SIZE")]
    pub rcvbuf: TcpRecvBuffer,
    /// How the reader (here, or at the far end with --to) is woken for each stream: `batched`
    /// wakes it once per 200 µs of the stream's own rate (SO_RCVLOWAT, streams with a fixed
    /// --rcvbuf only), so the sender's softirq pays fewer wake-ups; `each` at every arrival, as
    /// iperf3's reader
    #[arg(long, value_parser = TcpSinkWakes::from_str, default_value = "batched", value_name = "batched|each")]
    pub sink_wakes: TcpSinkWakes,
    /// Reverse, as iperf3's -R: the far side sends and this side reads (on loopback the
    /// roles swap; with --to, `netceil serve` sends).
    #[arg(long, short = 'R', conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once, each on its own connections, as iperf3's --bidir; each
    /// direction's figures are kept apart.
    #[arg(long)]
    pub bidir: bool,
    /// Run length (10, 2.5s, 500ms, 1m).
    #[arg(long, allow_hyphen_values = true, value_parser = run_duration, default_value = "10s")]
    pub duration: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProtoArg {
    Tcp,
    Udp,
}

#[derive(Debug, Args, Clone)]
pub struct RrArgs {
    /// The transport the requests and responses travel over.
    #[arg(long, value_enum, default_value_t = ProtoArg::Tcp)]
    pub proto: ProtoArg,
    /// Request and response size in bytes.
    #[arg(long, value_parser = parse_size, default_value = "64")]
    pub size: usize,
    /// Transactions per second in total (10k); default closed loop, one outstanding per flow.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_pps)]
    pub rate: Option<f64>,
    /// Concurrent connections (or UDP sockets).
    #[arg(long, default_value_t = 1)]
    pub flows: u32,
    /// Busy-poll: the client never sleeps, it polls its sockets and the clock in a loop, so
    /// answers are read without a wakeup. Lower, steadier latency, for one whole core; the
    /// run's notes say so. Without it a paced client still sends on time: it wakes a learned
    /// few microseconds early and polls until each send.
    #[arg(long)]
    pub spin: bool,
    /// Run length (10, 2.5s, 500ms, 1m).
    #[arg(long, allow_hyphen_values = true, value_parser = run_duration, default_value = "10s")]
    pub duration: Duration,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GenShell {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write netceil.1 and one page per command (netceil-run.1, netceil-lab-up.1, …) into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Control address (TCP). The same port's UDP side counts stray datagrams and answers none;
    /// each test's data goes to a port of its own, given in the grant.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:5301")]
    pub listen: SocketAddr,
    /// A file holding the shared secret (16 bytes or more) that clients prove with an HMAC.
    /// Without one, serve listens on loopback only.
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<std::path::PathBuf>,
    /// Stop after this long (default: until Ctrl-C).
    #[arg(long, allow_hyphen_values = true, value_parser = long_duration)]
    pub duration: Option<Duration>,
    /// Flows (sockets or connections) one test may use.
    #[arg(long, default_value_t = 64)]
    pub max_flows: u32,
    /// Tests running at once.
    #[arg(long, default_value_t = 2)]
    pub max_tests: u32,
    /// Packets per second one test may send (declared, and measured per second).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_count, default_value = "5M")]
    pub max_rate: u64,
    /// Payload bit rate one test may send (declared, and measured per second).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_throughput, default_value = "40Gbit")]
    pub max_bits: f64,
    /// Length of one test.
    #[arg(long, allow_hyphen_values = true, value_parser = run_duration, default_value = "60s")]
    pub max_duration: Duration,
    /// Payload bytes one test may send in all.
    #[arg(long, value_parser = parse_size, default_value = "64G")]
    pub max_bytes: usize,
    /// Handshakes (control connections not yet proved) open at once; one host (an IPv4
    /// address or an IPv6 /64) holds at most 32 of them, and a new connection displaces the
    /// oldest handshake of the host holding the most.
    #[arg(long, default_value_t = 1024)]
    pub max_clients: u32,
    /// How long a client may take over each handshake step before it is dropped.
    #[arg(long, allow_hyphen_values = true, value_parser = step_timeout, default_value = "5s")]
    pub step_timeout: Duration,
    /// Receive buffer to request on tests' UDP sockets, bytes (default: the system's
    /// net.core.rmem_default).
    #[arg(long, value_parser = parse_size)]
    pub rcvbuf: Option<usize>,
    /// Force --rcvbuf past net.core.rmem_max (SO_RCVBUFFORCE, root or CAP_NET_ADMIN).
    #[arg(long, requires = "rcvbuf")]
    pub rcvbuf_force: bool,
    /// Print one JSON document with the server's totals at the end; event lines go to stderr.
    #[arg(long)]
    pub json: bool,
    /// With --metrics-listen: this host's series (sampled every 1 s while serving), the
    /// server's totals as counters (netceil_serve_*_total) and a live verdict.
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Stop after this long (default: until the command exits, or Ctrl-C). With a command
    /// still running when it ends, netceil sends it SIGTERM (SIGKILL 2 s later if needed) and
    /// exits 124, as timeout(1) does; a command that ended on its own first gives its own code.
    #[arg(long, allow_hyphen_values = true, value_parser = run_duration)]
    pub duration: Option<Duration>,
    /// Sampling interval, 10ms to 1h.
    #[arg(long, allow_hyphen_values = true, value_parser = sample_interval, default_value = "1s")]
    pub interval: Duration,
    /// Interfaces to show and record (repeatable); default: every interface that is up.
    #[arg(long = "iface", value_name = "IF")]
    pub ifaces: Vec<String>,
    /// Record this process's threads one by one (repeatable).
    #[arg(long = "pid", value_name = "PID")]
    pub pids: Vec<i32>,
    /// Show every column, whatever the terminal's width.
    #[arg(long)]
    pub wide: bool,
    /// Print the whole run as one JSON document at the end; table rows go to stderr.
    #[arg(long)]
    pub json: bool,
    /// Also write each sampled interval, as it is sampled, to FILE as JSON Lines (progress
    /// lines, then close; see the README); `-` writes them to stdout, and the table and
    /// summary then go to stderr. Not with --json.
    #[arg(long, value_name = "FILE|-")]
    pub stream: Option<std::path::PathBuf>,
    /// A label to keep with the run (repeatable).
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// No table rows, only the end.
    #[arg(long, short)]
    pub quiet: bool,
    /// Do not keep this run in the store.
    #[arg(long)]
    pub no_store: bool,
    /// eBPF probes to attach (root only): locks, softirq, napi, offcpu, comma-separated, or
    /// all. They fill the lock table, exact softirq time per CPU, NAPI polls and budget
    /// exhaustion, and per-thread on/off-CPU time.
    #[arg(long = "probe", value_name = "LIST", value_parser = netceil_engine::probes::parse_probe_list)]
    pub probes: Option<netceil_engine::probes::ProbeList>,
    /// With --probe locks: take a kernel stack for one contention in N (per CPU), to name the
    /// callers; 0 takes none (lowest cost, callers unknown).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub lock_stacks: u32,
    #[command(flatten)]
    pub metrics: MetricsArgs,
    /// The command to launch and observe.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Only runs with this label (repeatable; all must match).
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// Only the newest N.
    #[arg(long, value_name = "N")]
    pub last: Option<usize>,
    /// One JSON array of the runs' summaries.
    #[arg(long)]
    pub json: bool,
    /// Every column, whole, whatever the width; by default the table is cut to the
    /// terminal's width (through a pipe, to COLUMNS, or 80): labels go first, then the verdict.
    #[arg(long)]
    pub wide: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A run id, a unique prefix of one, or `last`.
    pub run: String,
    /// Print the whole run as one JSON document.
    #[arg(long)]
    pub json: bool,
    /// Everything: every figure, note and finding, with its evidence and advice, instead
    /// of one screen.
    #[arg(long, short)]
    pub verbose: bool,
    /// Print the verdict's ledger instead: every resource sized against its capacity, in
    /// ranking order, with what relieving it would gain (with --json, the ledger as JSON).
    /// The run is analyzed again by this netceil to make it.
    #[arg(long)]
    pub explain: bool,
    /// How the run is printed: `screen`, one screen with the ceiling and the verdict; or
    /// `iperf`, iperf3's short lines, one per recorded interval, then the sender's and the
    /// receiver's totals, as `netceil run --format iperf` prints them.
    #[arg(long, value_enum, default_value_t = RunFormat::Screen)]
    pub format: RunFormat,
}

#[derive(Debug, Args)]
pub struct RmArgs {
    /// Run ids, unique prefixes, or `last`.
    #[arg(required = true)]
    pub runs: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
    Markdown,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A run id, a unique prefix of one, or `last`.
    pub run: String,
    /// json: the whole Run (docs/run.schema.json); csv: one row per interval; markdown: a
    /// report to paste.
    #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
    pub format: ExportFormat,
    /// Output file, or - for stdout.
    #[arg(short, long, default_value = "-")]
    pub output: std::path::PathBuf,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run ids, unique prefixes, or `last`.
    #[arg(required = true)]
    pub runs: Vec<String>,
    /// The HTML file to write (or - for stdout); given a directory, report.html in it.
    #[arg(short, long, default_value = "report.html")]
    pub output: std::path::PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Table,
    Json,
    Markdown,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Run A (id, unique prefix, or `last`).
    pub a: String,
    /// Run B.
    pub b: String,
    /// table for the terminal, json for scripts, markdown to paste.
    #[arg(long, value_enum, default_value_t = CompareFormat::Table)]
    pub format: CompareFormat,
    /// Compare runs of different workloads (a TCP run against a UDP one) anyway; the output
    /// then begins with a warning.
    #[arg(long)]
    pub unlike: bool,
}

/// `analyze --format`'s values: `auto` and every importer's name, each with what writes it.
fn import_formats() -> clap::builder::PossibleValuesParser {
    use clap::builder::PossibleValue;
    let auto = PossibleValue::new("auto").help("detect the format, and say why when none fits");
    clap::builder::PossibleValuesParser::new(
        std::iter::once(auto).chain(
            netceil_import::Format::ALL
                .iter()
                .map(|f| PossibleValue::new(f.name()).help(f.source())),
        ),
    )
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Log files (- for stdin), or stored runs (an id, a unique prefix, or `last`).
    #[arg(required_unless_present = "runs", value_name = "FILE|RUN")]
    pub inputs: Vec<String>,
    /// A stored run to analyze again with this netceil, whatever files exist by that name
    /// (an id, a unique prefix, or `last`; repeatable). Its findings are replaced in the store.
    #[arg(long = "run", value_name = "RUN")]
    pub runs: Vec<String>,
    /// Also print each run's ledger: every resource sized, in ranking order (with --json, the
    /// document gains a `ledgers` field per run).
    #[arg(long)]
    pub explain: bool,
    /// The log's format; `auto` (the default) detects it and says why when it cannot.
    #[arg(long, value_name = "FORMAT", value_parser = import_formats())]
    pub format: Option<String>,
    /// The sampling interval of a log whose lines carry no time (vmstat 1 → 1s).
    #[arg(long, allow_hyphen_values = true, value_parser = run_duration)]
    pub interval: Option<Duration>,
    /// The throughput seen while the log was taken, which the log cannot know (18MB/s, 700Mbit).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_throughput, value_name = "RATE")]
    pub throughput: Option<f64>,
    /// The link speed the traffic crossed (1G, 10G, 40Gbit).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_link, value_name = "SPEED")]
    pub link: Option<f64>,
    /// The bus the NIC sits on (PCIe1.1x1, "PCIe 3.0 x8", PCI32/33).
    #[arg(long)]
    pub bus: Option<String>,
    /// The wall time a lock profile covers (profiling ran for 30s before the dump).
    #[arg(long, allow_hyphen_values = true, value_parser = long_duration)]
    pub window: Option<Duration>,
    /// The CPUs a lock profile's waits are summed over (default: the run's own CPU count).
    #[arg(long)]
    pub cpus: Option<u32>,
    /// A label to keep with the imported run (repeatable).
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// Print the run(s) with findings as JSON.
    #[arg(long)]
    pub json: bool,
    /// The files are logs of the same minutes on one machine (mpstat beside an Erlang
    /// wall-time dump, vmstat beside a lock profile): import each, join them on one timeline
    /// (their overlap) and analyze them as one run. --format, if given, applies to every file.
    #[arg(long, conflicts_with = "runs")]
    pub join: bool,
    /// Do not keep imported runs in the store.
    #[arg(long)]
    pub no_store: bool,
}

/// `--rcvbuf` of a TCP run: `auto`, `kernel` or a size.
fn parse_recv_buffer(text: &str) -> Result<TcpRecvBuffer, String> {
    match text {
        "auto" => Ok(TcpRecvBuffer::Auto),
        "kernel" => Ok(TcpRecvBuffer::Kernel),
        size => parse_size(size)
            .map(|b| TcpRecvBuffer::Bytes(b as u64))
            .map_err(|e| format!("expected auto, kernel or a size such as 1M: {e}")),
    }
}
