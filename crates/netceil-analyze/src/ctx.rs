//! What every rule needs to know about one run: its load rows, whether it carried network
//! traffic at all, its CPU figures and its throughput, each averaged over the load phase.
//!
//! Keeping these in one place makes the rules short and makes them agree: every rule uses the
//! same load window, the same CPU count and the same throughput.

use std::ops::Range;

use netceil_model::{
    names as n, Advice, Cause, Evidence, Finding, Metric, Run, RunSource, Series, WorkloadKind,
};

use crate::phases::{phases, row_window, Phases};
use crate::resources::CpuAccount;
use crate::stats::{self, mean, present, ramp};
use crate::Options;
use netceil_model::{fmt, Unit};

/// Whether the run carried network traffic: the network rules speak only about network load.
#[derive(Debug, Clone, PartialEq)]
pub enum NetActivity {
    /// Traffic was measured or annotated; the text says which and how much.
    Seen(String),
    /// Network counters were measured and show no load worth the name.
    Absent(String),
    /// The log has no network counters at all (a vmstat capture): assumed, with less confidence.
    Unknown,
}

/// The operating system, when the run says: it picks which knobs to name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    Linux,
    FreeBsd,
    Unknown,
}

/// A throughput and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Throughput {
    pub bits_per_s: f64,
    /// The metric (or results field, or annotation) it was read from.
    pub metric: String,
    /// True when measured over the load phase, false when annotated or from totals.
    pub measured_in_window: bool,
}

/// How far measured transactions/s may stray from in-flight / mean round trip while the round
/// trip still counts as what set the rate: the client's own work between an answer and the
/// next request sits outside the measured round trip, and costs a few per cent on loopback.
pub const LATENCY_IDENTITY_TOLERANCE: f64 = 0.15;

/// Packets another interface may carry, as a share of loopback's, while the traffic still
/// counts as loopback only (ssh and other background chatter on a quiet NIC).
const OTHER_IFACE_SHARE_MAX: f64 = 0.05;

/// A closed-loop request/response run, set against Little's law: with N requests always in
/// flight, N = rate × mean round trip, so the rate is N / mean round trip when nothing but the
/// round trip holds the loop back.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedLoop {
    /// Requests kept in flight at all times (one per flow).
    pub in_flight: u32,
    /// Transactions per second measured over the run.
    pub tps: f64,
    /// Mean round trip, µs (the figure Little's law takes).
    pub mean_rtt_us: f64,
    /// Median round trip, µs, for the reader.
    pub p50_rtt_us: f64,
    /// Fastest round trip, µs: the path with nothing ahead in the queue.
    pub min_rtt_us: f64,
    /// Round trips measured.
    pub samples: u64,
}

impl ClosedLoop {
    /// The rate the round trip allows: in-flight / mean round trip, transactions/s.
    pub fn predicted_tps(&self) -> f64 {
        f64::from(self.in_flight) / (self.mean_rtt_us / 1e6)
    }

    /// Measured over predicted: 1 when the round trip accounts for the whole rate.
    pub fn ratio(&self) -> f64 {
        self.tps / self.predicted_tps()
    }

    /// With several requests in flight, whether they waited behind each other: a mean round
    /// trip at least N times the fastest is as long as N requests served one after another.
    /// Then the round trip is mostly queueing, and the identity holds because it always does
    /// for a closed loop: the ceiling is what serves the requests (a core, the echo), and more
    /// requests in flight only lengthen the queue. Unknown (no fastest round trip) is false.
    pub fn queued(&self) -> bool {
        self.in_flight > 1
            && self.min_rtt_us > 0.0
            && self.mean_rtt_us >= f64::from(self.in_flight) * self.min_rtt_us
    }

    /// True when the round trip itself set the rate: the identity holds within
    /// [`LATENCY_IDENTITY_TOLERANCE`] and the requests did not queue behind each other.
    pub fn latency_explains_rate(&self) -> bool {
        (self.ratio() - 1.0).abs() <= LATENCY_IDENTITY_TOLERANCE && !self.queued()
    }
}

/// Loopback's interface name: `lo` on Linux, `lo0` (`loN`) on the BSDs.
pub fn is_loopback_iface(name: &str) -> bool {
    name.strip_prefix("lo")
        .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
}

/// One run as the rules see it.
pub struct Ctx<'a> {
    pub run: &'a Run,
    pub opts: &'a Options,
    pub phases: Phases,
    /// The rows every average covers: the load phase, or the whole series (see `rows_note`).
    pub rows: Range<usize>,
    /// How `rows` was chosen, in words.
    pub rows_note: String,
    pub net: NetActivity,
    /// Who took each core the workload could use, over the load rows.
    pub cpu: CpuAccount,
    /// [`Ctx::loopback_only`], worked out on first use: several rules ask.
    loopback: std::cell::OnceCell<bool>,
}

impl<'a> Ctx<'a> {
    pub fn new(run: &'a Run, opts: &'a Options) -> Ctx<'a> {
        let series = &run.series;
        let phases = phases(series);
        let traffic_in_results = run.results.as_ref().is_some_and(|r| {
            r.tx_packets > 0 || r.rx_app_packets > 0 || r.tx_bytes > 0 || r.rx_app_bytes > 0
        });
        let (rows, rows_note) = if let Some((span, key)) = own_load_span(run, &phases) {
            (
                span.clone(),
                format!(
                    "averages cover the rows netceil's own load ran, {}–{} of {} (keyed on {key})",
                    span.start + 1,
                    span.end,
                    series.len()
                ),
            )
        } else if phases.has_load() {
            let key = phases
                .key
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            (
                phases.load.clone(),
                format!(
                    "averages cover the load phase, rows {}–{} of {} (keyed on {key})",
                    phases.load.start + 1,
                    phases.load.end,
                    series.len()
                ),
            )
        } else if !series.is_empty()
            && (matches!(run.source, RunSource::Imported { .. }) || traffic_in_results)
        {
            (
                0..series.len(),
                if series.len() == 1 {
                    "averages cover the only row".to_string()
                } else {
                    format!(
                        "averages cover all {} rows: no idle rows to tell load from idle",
                        series.len()
                    )
                },
            )
        } else {
            (0..0, format!("no load phase: {}", phases.rule))
        };
        let mut ctx = Ctx {
            run,
            opts,
            phases,
            rows,
            rows_note,
            net: NetActivity::Unknown,
            cpu: CpuAccount::default(),
            loopback: std::cell::OnceCell::new(),
        };
        ctx.net = ctx.net_activity(traffic_in_results);
        ctx.cpu = CpuAccount::new(&ctx);
        ctx
    }

    pub fn series(&self) -> &Series {
        &self.run.series
    }

    /// The load window in seconds since the run's start.
    pub fn window(&self) -> Option<(f64, f64)> {
        row_window(self.series(), &self.rows)
    }

    /// The length of the load window, or the workload's duration when there is no series.
    pub fn duration_s(&self) -> Option<f64> {
        self.window()
            .map(|(a, b)| b - a)
            .filter(|d| *d > 0.0)
            .or_else(|| {
                self.run
                    .results
                    .as_ref()
                    .map(|r| r.duration_s)
                    .filter(|d| *d > 0.0)
            })
    }

    /// A metric's values over the load rows, missing ones skipped.
    pub fn values(&self, m: &Metric) -> Vec<f64> {
        let end = self.rows.end.min(m.values.len());
        let start = self.rows.start.min(end);
        present(&m.values[start..end])
    }

    /// The metric named `name` with exactly the labels of `m`: another figure of the same
    /// thing (the overlimits of the qdisc whose bit rate `m` is, a thread's voluntary switches).
    pub fn sibling(&self, m: &Metric, name: &str) -> Option<&'a Metric> {
        self.run
            .series
            .metrics
            .iter()
            .find(|s| s.id.name == name && s.id.labels == m.id.labels)
    }

    /// A metric's mean over the load rows.
    pub fn mean_of(&self, m: &Metric) -> Option<f64> {
        mean(&self.values(m))
    }

    /// The mean of the unlabeled metric `name` over the load rows.
    pub fn total_mean(&self, name: &str) -> Option<f64> {
        self.series().total(name).and_then(|m| self.mean_of(m))
    }

    /// How much the amount of data supports a verdict: 0.6 for a single row, 1 from ten rows
    /// (a few seconds of `vmstat 1` are noisy; ten are a fair sample).
    pub fn data_factor(&self) -> f64 {
        0.6 + 0.4 * ramp(self.rows.len() as f64, 1.0, 10.0)
    }

    /// Confidence factor for "was this network load?": 1 when measured, 0.8 when the log has no
    /// network counters and it is assumed.
    pub fn net_factor(&self) -> f64 {
        match self.net {
            NetActivity::Seen(_) => 1.0,
            NetActivity::Unknown => 0.8,
            NetActivity::Absent(_) => 0.0,
        }
    }

    /// True when the network rules may speak: traffic seen, or a log without network counters.
    pub fn net_possible(&self) -> bool {
        !matches!(self.net, NetActivity::Absent(_)) && !self.rows.is_empty()
    }

    /// Means of a labeled metric by CPU number, ascending by CPU.
    pub fn per_cpu(&self, name: &str) -> Vec<(u32, f64)> {
        let mut out: Vec<(u32, f64)> = self
            .series()
            .by_name(name)
            .filter_map(|m| {
                let cpu = m.id.label(n::LABEL_CPU)?.parse().ok()?;
                Some((cpu, self.mean_of(m)?))
            })
            .collect();
        out.sort_by_key(|(c, _)| *c);
        out
    }

    /// Per-CPU busy %: `cpu_busy_pct{cpu}`, else 100 − idle. CPUs that were offline are left
    /// out: sysstat prints an offline CPU with every share 0.00, idle included, which would
    /// otherwise read as a CPU 100 % busy.
    pub fn per_cpu_busy(&self) -> Vec<(u32, f64)> {
        let offline = self.offline_cpus();
        let busy = self.per_cpu(n::CPU_BUSY_PCT);
        let busy = if busy.is_empty() {
            self.per_cpu(n::CPU_IDLE_PCT)
                .into_iter()
                .map(|(c, idle)| (c, 100.0 - idle))
                .collect()
        } else {
            busy
        };
        busy.into_iter()
            .filter(|(c, _)| !offline.contains(c))
            .collect()
    }

    /// CPUs whose every recorded share (idle, user, system…) was zero over the load rows:
    /// a CPU that is online spends its time somewhere, so these were offline.
    pub fn offline_cpus(&self) -> Vec<u32> {
        let idle = self.per_cpu(n::CPU_IDLE_PCT);
        if idle.is_empty() {
            return Vec::new();
        }
        let parts = [
            n::CPU_USER_PCT,
            n::CPU_NICE_PCT,
            n::CPU_SYSTEM_PCT,
            n::CPU_IRQ_PCT,
            n::CPU_SOFTIRQ_PCT,
            n::CPU_IOWAIT_PCT,
            n::CPU_STEAL_PCT,
        ]
        .map(|p| self.per_cpu(p));
        idle.into_iter()
            .filter(|(c, i)| {
                *i <= 0.0
                    && parts.iter().all(|p| {
                        p.iter()
                            .find(|(x, _)| x == c)
                            .is_none_or(|(_, v)| *v <= 0.0)
                    })
                    && parts.iter().any(|p| p.iter().any(|(x, _)| x == c))
            })
            .map(|(c, _)| c)
            .collect()
    }

    /// The CPUs the workload was allowed to run on, when that was narrower than the CPUs
    /// the series names (`meta.workload_cpus`, from its affinity mask).
    pub fn allowed_cpus(&self) -> Option<Vec<u32>> {
        let allowed = self.run.meta.workload_cpus.as_ref()?;
        let known: Vec<u32> = self.per_cpu_busy().into_iter().map(|(c, _)| c).collect();
        let mut mine: Vec<u32> = allowed
            .iter()
            .copied()
            .filter(|c| known.is_empty() || known.contains(c))
            .collect();
        mine.sort_unstable();
        mine.dedup();
        (!mine.is_empty() && (known.is_empty() || mine.len() < known.len())).then_some(mine)
    }

    /// Whether niced work yields to the workload. Nice ranks a task against the others in its
    /// scheduling group; with `kernel.sched_autogroup_enabled=1` every session is a group and
    /// the groups share the CPU as equals, so a niced program in another session (a build in
    /// another terminal, a service) takes its full share. Unknown (an import, an older run):
    /// taken to yield, as without autogroup.
    pub fn nice_yields(&self) -> bool {
        self.run.meta.host.sched_autogroup != Some(true)
    }

    /// Per-CPU busy % less the time spent on niced tasks (`cpu_nice_pct`): what the run's
    /// work could not have had. Niced work (batch jobs, `nice make`) yields to default-priority
    /// tasks, so a core full of it still has room for the workload, unless autogroup shares the
    /// CPU between sessions ([`Ctx::nice_yields`]). Same as [`Ctx::per_cpu_busy`] when the run
    /// has no nice figures.
    pub fn per_cpu_busy_for_work(&self) -> Vec<(u32, f64)> {
        if !self.nice_yields() {
            return self.per_cpu_busy();
        }
        let nice = self.per_cpu(n::CPU_NICE_PCT);
        self.per_cpu_busy()
            .into_iter()
            .map(|(c, b)| {
                let yielded = nice.iter().find(|(x, _)| *x == c).map_or(0.0, |(_, v)| *v);
                (c, (b - yielded).max(0.0))
            })
            .collect()
    }

    /// Machine-wide busy % less niced time (see [`Ctx::per_cpu_busy_for_work`]).
    pub fn machine_busy_for_work(&self) -> Option<(f64, &'static str)> {
        let (b, m) = self.machine_busy()?;
        if !self.nice_yields() {
            return Some((b, m));
        }
        let nice = self.total_mean(n::CPU_NICE_PCT).unwrap_or(0.0);
        Some(((b - nice).max(0.0), m))
    }

    /// Per-CPU kernel share: system + softirq + irq (those present).
    pub fn per_cpu_kernel(&self) -> Vec<(u32, f64)> {
        let sys = self.per_cpu(n::CPU_SYSTEM_PCT);
        let si = self.per_cpu(n::CPU_SOFTIRQ_PCT);
        let irq = self.per_cpu(n::CPU_IRQ_PCT);
        let find =
            |v: &[(u32, f64)], c: u32| v.iter().find(|(x, _)| *x == c).map_or(0.0, |(_, v)| *v);
        sys.iter()
            .map(|&(c, s)| (c, s + find(&si, c) + find(&irq, c)))
            .collect()
    }

    /// Machine-wide CPU busy %, 0–100 averaged over CPUs, and the metric it came from.
    pub fn machine_busy(&self) -> Option<(f64, &'static str)> {
        if let Some(b) = self.total_mean(n::CPU_BUSY_PCT) {
            return Some((b, n::CPU_BUSY_PCT));
        }
        if let Some(idle) = self.total_mean(n::CPU_IDLE_PCT) {
            let iowait = self.total_mean(n::CPU_IOWAIT_PCT).unwrap_or(0.0);
            return Some(((100.0 - idle - iowait).max(0.0), n::CPU_IDLE_PCT));
        }
        let parts = [
            n::CPU_USER_PCT,
            n::CPU_NICE_PCT,
            n::CPU_SYSTEM_PCT,
            n::CPU_IRQ_PCT,
            n::CPU_SOFTIRQ_PCT,
        ];
        let sum: Vec<f64> = parts.iter().filter_map(|p| self.total_mean(p)).collect();
        (!sum.is_empty() && self.total_mean(n::CPU_SYSTEM_PCT).is_some())
            .then(|| (sum.iter().sum::<f64>().min(100.0), n::CPU_SYSTEM_PCT))
    }

    /// Machine-wide idle %.
    pub fn machine_idle(&self) -> Option<f64> {
        self.total_mean(n::CPU_IDLE_PCT)
            .or_else(|| self.machine_busy().map(|(b, _)| 100.0 - b))
    }

    /// The CPU count: given, else the number of CPUs the series names (the machine's, whatever
    /// affinity the recorder ran with), else the host's.
    pub fn cpus(&self) -> Option<u32> {
        if let Some(c) = self.opts.cpus.filter(|c| *c > 0) {
            return Some(c);
        }
        let labeled = self.per_cpu_busy().len();
        if labeled > 0 {
            return Some(labeled as u32);
        }
        self.run.meta.host.cpus.filter(|c| *c > 0)
    }

    /// True when a paced workload got the rate it asked for without loss: then no resource
    /// bound its throughput, whatever the CPU or interrupt figures look like.
    pub fn offered_met(&self) -> bool {
        let Some(r) = self.run.results.as_ref() else {
            return false;
        };
        let Some(ratio) = r.generator.achieved_ratio else {
            return false;
        };
        let sent = r.tx_packets.saturating_sub(r.in_flight_packets);
        let loss = if sent > 0 {
            1.0 - r.rx_app_packets as f64 / sent as f64
        } else {
            0.0
        };
        ratio >= 0.99 && !r.generator_limited && loss < 0.01
    }

    /// A paced run whose sender achieved the requested rate (whatever was lost on the way): no
    /// CPU capped its rate, since the rate was reached.
    pub fn rate_met(&self) -> bool {
        self.run.results.as_ref().is_some_and(|r| {
            r.generator.achieved_ratio.is_some_and(|a| a >= 0.99) && !r.generator_limited
        })
    }

    /// The run as a closed request/response loop, when it was one and measured its round
    /// trips: `None` for paced (open-loop) runs, other workloads, and runs without latency.
    pub fn closed_loop(&self) -> Option<ClosedLoop> {
        let r = self.run.results.as_ref()?;
        let in_flight = r.closed_loop_in_flight.filter(|n| *n > 0)?;
        let tps = r.transactions_per_s.filter(|t| t.is_finite() && *t > 0.0)?;
        let latency = r.latency_us.as_ref()?;
        let measured = latency.count > 0 && latency.mean.is_finite() && latency.mean > 0.0;
        measured.then_some(ClosedLoop {
            in_flight,
            tps,
            mean_rtt_us: latency.mean,
            p50_rtt_us: latency.p50,
            min_rtt_us: latency.min,
            samples: latency.count,
        })
    }

    /// True when the traffic is known to have crossed loopback only, so no NIC was involved.
    /// In order: a live run's peer (netceil's in-process peer, or a `--to` address on
    /// loopback) decides; else the interface the kernel counts were taken from; else the
    /// interface counters, when loopback carried packets and no other interface more than 5 %
    /// of them; else the host listing only loopback interfaces. Unknown is false: a NIC may
    /// be involved.
    pub fn loopback_only(&self) -> bool {
        *self.loopback.get_or_init(|| self.find_loopback_only())
    }

    fn find_loopback_only(&self) -> bool {
        if let Some(peer_on_loopback) = self.live_peer_on_loopback() {
            return peer_on_loopback;
        }
        if let Some(iface) = self
            .run
            .results
            .as_ref()
            .and_then(|r| r.kernel.iface.as_deref())
        {
            return is_loopback_iface(iface);
        }
        let mut loopback = 0.0;
        let mut other: f64 = 0.0;
        let mut counted = false;
        for m in self
            .series()
            .metrics
            .iter()
            .filter(|m| m.id.name == n::IFACE_RX_PPS || m.id.name == n::IFACE_TX_PPS)
        {
            let (Some(iface), Some(v)) = (m.id.label(n::LABEL_IFACE), self.mean_or_whole(m)) else {
                continue;
            };
            counted = true;
            if is_loopback_iface(iface) {
                loopback += v;
            } else {
                other = other.max(v);
            }
        }
        if counted {
            return loopback > 0.0 && other <= OTHER_IFACE_SHARE_MAX * loopback;
        }
        let nics = &self.run.meta.host.nics;
        !nics.is_empty() && nics.iter().all(|nic| is_loopback_iface(&nic.name))
    }

    /// For a live netceil workload: whether its peer was on loopback (`target` null is the
    /// in-process peer, which always listens on loopback); `None` when the run does not say.
    fn live_peer_on_loopback(&self) -> Option<bool> {
        if !matches!(self.run.source, RunSource::Live) {
            return None;
        }
        let Some(target) = self.run.workload.as_ref()?.params.peer()? else {
            return Some(true);
        };
        target
            .parse::<std::net::SocketAddr>()
            .ok()
            .map(|a| a.ip().is_loopback())
    }

    /// A metric's mean over the load rows, else over the whole series.
    fn mean_or_whole(&self, m: &Metric) -> Option<f64> {
        self.mean_of(m).or_else(|| mean(&present(&m.values)))
    }

    /// The run's throughput over the load phase, by preference: the workload's receiver, the
    /// busiest interface, the workload totals, the person's annotation.
    pub fn throughput(&self) -> Option<Throughput> {
        let from_series = |m: &Metric| {
            self.mean_of(m).filter(|v| *v > 0.0).map(|v| Throughput {
                bits_per_s: v,
                metric: m.id.to_string(),
                measured_in_window: true,
            })
        };
        if let Some(t) = self
            .series()
            .total(n::LOAD_RX_BITS_PER_S)
            .and_then(from_series)
        {
            return Some(t);
        }
        // The workload's own TCP connections, read through sock_diag in their namespace: what
        // its peers acknowledged is what it delivered, whatever interface carried it.
        if let Some(m) = self.series().total(n::TCP_BYTES_ACKED_PER_S) {
            if let Some(v) = self.mean_of(m).filter(|v| *v > 0.0) {
                return Some(Throughput {
                    bits_per_s: v * 8.0,
                    metric: format!("{} × 8", m.id),
                    measured_in_window: true,
                });
            }
        }
        if let Some(t) = self
            .busiest(&[n::IFACE_RX_BITS_PER_S, n::IFACE_TX_BITS_PER_S])
            .and_then(from_series)
        {
            if t.bits_per_s >= 1e6 {
                return Some(t);
            }
        }
        if let Some(r) = &self.run.results {
            for (v, field) in [
                (r.rx_app_bits_per_s, "results.rx_app_bits_per_s"),
                (r.tx_bits_per_s, "results.tx_bits_per_s"),
            ] {
                if v > 0.0 {
                    return Some(Throughput {
                        bits_per_s: v,
                        metric: field.into(),
                        measured_in_window: false,
                    });
                }
            }
        }
        self.run
            .meta
            .annotations
            .throughput_bits_per_s
            .filter(|v| *v > 0.0)
            .map(|v| Throughput {
                bits_per_s: v,
                metric: "annotations.throughput_bits_per_s".into(),
                measured_in_window: false,
            })
    }

    /// The one delivered rate every sentence quotes for this run, as `netceil runs`, the
    /// summary and the end of a run show it: for a netceil workload, what its receiver got over
    /// the workload's whole length (`results.rx_app_bits_per_s`, payload bits); for anything
    /// else (a watch, an import), [`Ctx::throughput`]. The rules size resources against
    /// [`Ctx::throughput`], which reads the load phase of the series.
    pub fn delivered(&self) -> Option<Throughput> {
        let own = self.run.workload.as_ref().is_some_and(|w| {
            matches!(
                w.kind,
                WorkloadKind::Udp | WorkloadKind::Tcp | WorkloadKind::Rr
            )
        });
        match &self.run.results {
            Some(r) if own && r.rx_app_bits_per_s > 0.0 => Some(Throughput {
                bits_per_s: r.rx_app_bits_per_s,
                metric: "results.rx_app_bits_per_s".into(),
                measured_in_window: false,
            }),
            _ => self.throughput(),
        }
    }

    /// The run's packet rate over the load phase, and where it came from.
    pub fn packet_rate(&self) -> Option<(f64, String)> {
        if let Some(m) = self.series().total(n::LOAD_RX_PPS) {
            if let Some(v) = self.mean_of(m).filter(|v| *v > 0.0) {
                return Some((v, m.id.to_string()));
            }
        }
        if let Some(m) = self.busiest(&[n::IFACE_RX_PPS, n::IFACE_TX_PPS]) {
            if let Some(v) = self.mean_of(m).filter(|v| *v >= 1e3) {
                return Some((v, m.id.to_string()));
            }
        }
        let r = self.run.results.as_ref()?;
        (r.rx_app_pps > 0.0)
            .then(|| (r.rx_app_pps, "results.rx_app_pps".to_string()))
            .or_else(|| (r.tx_pps > 0.0).then(|| (r.tx_pps, "results.tx_pps".to_string())))
    }

    /// The metric among `names` (any labels) with the largest mean over the load rows.
    pub fn busiest(&self, names: &[&str]) -> Option<&'a Metric> {
        self.run
            .series
            .metrics
            .iter()
            .filter(|m| names.contains(&m.id.name.as_str()))
            .filter_map(|m| self.mean_of(m).map(|v| (m, v)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(m, _)| m)
    }

    /// The Ethernet frame size of the traffic (header + payload + FCS), and how it is known:
    /// the workload's frame size, else the busiest NIC's MTU + 18, else a 1518-byte frame
    /// assumed.
    pub fn frame_bytes(&self) -> (f64, String) {
        if let Some(f) = self.run.results.as_ref().and_then(|r| r.frame_bytes) {
            return (f as f64, format!("{f}-byte frames"));
        }
        let iface = self
            .busiest(&[n::IFACE_RX_BITS_PER_S, n::IFACE_TX_BITS_PER_S])
            .and_then(|m| m.id.label(n::LABEL_IFACE));
        let nics = &self.run.meta.host.nics;
        let nic = nics
            .iter()
            .find(|nic| Some(nic.name.as_str()) == iface && nic.mtu.is_some())
            .or_else(|| {
                nics.iter()
                    .find(|nic| nic.name != "lo" && nic.mtu.is_some())
            });
        if let Some(mtu) = nic.and_then(|nic| nic.mtu) {
            let frame = f64::from(mtu) + 18.0;
            return (frame, format!("{frame:.0}-byte frames (MTU {mtu} + 18)"));
        }
        (1518.0, "1518-byte frames (MTU 1500 assumed)".into())
    }

    /// The OS the run was measured on, from the host or the import format.
    pub fn os(&self) -> Os {
        let mut text = self.run.meta.host.os.clone().unwrap_or_default();
        if let RunSource::Imported { format, file } = &self.run.source {
            text.push(' ');
            text.push_str(format);
            text.push(' ');
            text.push_str(file);
        }
        let t = text.to_ascii_lowercase();
        if t.contains("freebsd") {
            Os::FreeBsd
        } else if t.contains("linux") || t.contains("procps") || t.contains("sysstat") {
            Os::Linux
        } else {
            Os::Unknown
        }
    }

    /// What an importer said about one row (`row 1 (t=1 s): sbwt=very_long` in the run's
    /// notes): the label of a table row that is a sweep point rather than a moment.
    pub fn row_label(&self, row: usize) -> Option<String> {
        let prefix = format!("row {} (", row + 1);
        self.run
            .notes
            .iter()
            .find(|n| n.starts_with(&prefix))
            .and_then(|n| {
                n.split_once("): ")
                    .map(|(_, label)| label.trim().to_string())
            })
            .filter(|l| !l.is_empty())
    }

    /// A piece of evidence over the load window: its value, with the value's own unit (a
    /// share of a per-second count is a percentage, whatever the metric's unit).
    pub fn ev(
        &self,
        metric: impl Into<String>,
        value: Option<(f64, Unit)>,
        text: impl Into<String>,
    ) -> Evidence {
        Evidence {
            metric: metric.into(),
            window_s: self.window(),
            value: value.map(|(v, _)| v),
            unit: value.map(|(_, u)| u),
            text: text.into(),
        }
    }

    /// Evidence about a total, not a window (results, annotations, lock tables).
    pub fn ev_total(
        &self,
        metric: impl Into<String>,
        value: Option<(f64, Unit)>,
        text: impl Into<String>,
    ) -> Evidence {
        Evidence {
            metric: metric.into(),
            window_s: None,
            value: value.map(|(v, _)| v),
            unit: value.map(|(_, u)| u),
            text: text.into(),
        }
    }

    /// "over the load phase (5–43 s)" for summaries.
    pub fn window_words(&self) -> String {
        match self.window().filter(|(a, b)| b > a) {
            Some((a, b)) if self.phases.has_load() => {
                format!("over the load phase ({a:.0}–{b:.0} s)")
            }
            Some((a, b)) => format!("over {a:.0}–{b:.0} s"),
            None => "over the run".into(),
        }
    }

    fn net_activity(&self, traffic_in_results: bool) -> NetActivity {
        if traffic_in_results {
            if let Some(r) = &self.run.results {
                return NetActivity::Seen(format!(
                    "the workload sent {} packets ({} bytes)",
                    fmt::number(r.tx_packets as f64),
                    fmt::number(r.tx_bytes as f64)
                ));
            }
        }
        if let Some(t) = self
            .run
            .meta
            .annotations
            .throughput_bits_per_s
            .filter(|t| *t > 0.0)
        {
            return NetActivity::Seen(format!(
                "{} as annotated",
                fmt::value(t, Unit::BitsPerSecond)
            ));
        }
        let s = self.series();
        let whole = |m: &Metric| {
            stats::present(&m.values)
                .into_iter()
                .fold(0.0_f64, f64::max)
        };
        let workload = [
            n::LOAD_RX_BITS_PER_S,
            n::LOAD_TX_BITS_PER_S,
            n::LOAD_RX_PPS,
            n::LOAD_TX_PPS,
            n::LOAD_TRANSACTIONS_PER_S,
            n::TCP_BYTES_ACKED_PER_S,
        ];
        if let Some(m) = workload
            .iter()
            .filter_map(|w| s.total(w))
            .find(|m| whole(m) > 0.0)
        {
            return NetActivity::Seen(format!("{} peaked at {}", m.id, fmt::number(whole(m))));
        }
        let peak = |names: &[&str]| {
            s.metrics
                .iter()
                .filter(|m| names.contains(&m.id.name.as_str()))
                .map(|m| (m, whole(m)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
        };
        let bits = peak(&[n::IFACE_RX_BITS_PER_S, n::IFACE_TX_BITS_PER_S]);
        let pkts = peak(&[
            n::IFACE_RX_PPS,
            n::IFACE_TX_PPS,
            n::UDP_IN_DATAGRAMS_PER_S,
            n::TCP_IN_SEGS_PER_S,
        ]);
        match (bits, pkts) {
            (Some((m, v)), _) if v >= 1e6 => NetActivity::Seen(format!(
                "{} peaked at {}",
                m.id,
                fmt::value(v, Unit::BitsPerSecond)
            )),
            (_, Some((m, v))) if v >= 1e3 => NetActivity::Seen(format!(
                "{} peaked at {}",
                m.id,
                fmt::value(v, Unit::PerSecond)
            )),
            (Some((m, v)), _) => NetActivity::Absent(format!(
                "the busiest interface counter, {}, peaked at {}",
                m.id,
                fmt::value(v, Unit::BitsPerSecond)
            )),
            (None, Some((m, v))) => NetActivity::Absent(format!(
                "{} peaked at {}",
                m.id,
                fmt::value(v, Unit::PerSecond)
            )),
            (None, None) => NetActivity::Unknown,
        }
    }
}

/// For a live run whose split keyed on the workload's own figures: every row from the first
/// to the last in which the workload moved anything. Those rows are the load by definition;
/// the plateau rule that finds a load among idle rows of a log would cut a run whose rate fell
/// after its first second (a TCP flow out of slow start into a small window) to that second.
fn own_load_span(run: &Run, phases: &Phases) -> Option<(Range<usize>, String)> {
    if !matches!(run.source, RunSource::Live) || !phases.has_load() {
        return None;
    }
    let key = phases.key.as_ref()?;
    if !key.name.starts_with("load_") {
        return None;
    }
    let m = run.series.get(key)?;
    let moved = |v: &Option<f64>| v.is_some_and(|x| x > 0.0);
    let mut first = m.values.iter().position(moved)?;
    let mut last = m.values.iter().rposition(moved)?;
    // The first and last rows are partial when the load began or ended inside them: below
    // half the span's median, they say more about the interval than about the load.
    let level = stats::median(&present(&m.values[first..=last]))?;
    let partial = |r: usize| m.values[r].is_none_or(|v| v < 0.5 * level);
    while first < last && partial(first) {
        first += 1;
    }
    while last > first && partial(last) {
        last -= 1;
    }
    Some((first..last + 1, key.to_string()))
}

/// A finding with no evidence or advice yet.
pub fn finding(cause: impl Into<Cause>, summary: impl Into<String>, confidence: f64) -> Finding {
    Finding {
        cause: cause.into(),
        summary: summary.into(),
        confidence: confidence.clamp(0.0, 1.0),
        evidence: Vec::new(),
        alternatives: Vec::new(),
        advice: Vec::new(),
        next: None,
        not_checked: Vec::new(),
    }
}

/// A knob to try.
pub fn advice(knob: impl Into<String>, expect: impl Into<String>, caveat: Option<&str>) -> Advice {
    Advice {
        knob: knob.into(),
        expect: expect.into(),
        caveat: caveat.map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use netceil_model::NicInfo;

    fn loopback_only(run: &Run) -> bool {
        let opts = Options::default();
        Ctx::new(run, &opts).loopback_only()
    }

    /// An imported log with interface counters: `lo` and `eth0` at these packet rates.
    fn counters(lo_pps: f64, eth0_pps: f64) -> Run {
        imported_run(5, |s, r| {
            put(s, r, n::IFACE_RX_PPS, &[(n::LABEL_IFACE, "lo")], lo_pps);
            put(s, r, n::IFACE_RX_PPS, &[(n::LABEL_IFACE, "eth0")], eth0_pps);
        })
    }

    #[test]
    fn loopback_is_known_from_the_peer_then_the_counters_then_the_host() {
        let mut run = rr_loopback_run(Some(1), None, 70e3, 13.0);
        assert!(loopback_only(&run), "in-process peer");
        crate::testutil::set_target(&mut run, "[::1]:5201");
        assert!(loopback_only(&run), "--to ::1");
        crate::testutil::set_target(&mut run, "192.0.2.7:5201");
        assert!(!loopback_only(&run), "--to a remote host");

        assert!(loopback_only(&counters(140e3, 25.0)), "eth0 only chatters");
        assert!(!loopback_only(&counters(140e3, 90e3)), "eth0 carries load");
        assert!(!loopback_only(&counters(0.0, 0.0)), "nothing on loopback");

        let mut host = imported_run(0, |_, _| {});
        assert!(
            !loopback_only(&host),
            "nothing known: a NIC may be involved"
        );
        host.meta.host.nics = vec![NicInfo {
            name: "lo0".into(),
            ..NicInfo::default()
        }];
        assert!(loopback_only(&host), "the host has only loopback");
        host.meta.host.nics.push(NicInfo {
            name: "em0".into(),
            ..NicInfo::default()
        });
        assert!(!loopback_only(&host));
    }

    #[test]
    fn closed_loop_needs_in_flight_requests_a_rate_and_round_trips() {
        let opts = Options::default();
        let run = rr_loopback_run(Some(2), None, 100e3, 20.0);
        let c = Ctx::new(&run, &opts).closed_loop().expect("closed loop");
        assert!((c.predicted_tps() - 100e3).abs() < 1e-6);
        assert!((c.ratio() - 1.0).abs() < 1e-9 && c.latency_explains_rate());
        let paced = rr_loopback_run(None, Some(100e3), 100e3, 20.0);
        assert!(Ctx::new(&paced, &opts).closed_loop().is_none());
        let mut no_latency = run.clone();
        no_latency.results.as_mut().unwrap().latency_us = None;
        assert!(Ctx::new(&no_latency, &opts).closed_loop().is_none());
        assert!(!is_loopback_iface("lon0") && is_loopback_iface("lo"));
        // Measured on loopback with 2 cores busy: 16 in flight, 86 k/s, round trips of
        // 185 µs mean against 10.4 µs at best; 1 in flight had 14.9 µs mean, 8.1 µs at best.
        let mut queued = rr_loopback_run(Some(16), None, 86_151.0, 184.8);
        with_min_latency_us(&mut queued, 10.4);
        let c = Ctx::new(&queued, &opts).closed_loop().unwrap();
        assert!(c.queued() && !c.latency_explains_rate(), "{c:?}");
        let mut single = rr_loopback_run(Some(1), None, 63_343.0, 14.9);
        with_min_latency_us(&mut single, 8.1);
        let c = Ctx::new(&single, &opts).closed_loop().unwrap();
        assert!(!c.queued() && c.latency_explains_rate(), "{c:?}");
    }
}
