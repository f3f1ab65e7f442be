//! Live OpenMetrics exposition (`--metrics-listen ADDR:PORT`).
//!
//! While a command samples the machine, `GET /metrics` on the given address answers with the
//! newest value of every series and the analyzer's current findings, in the OpenMetrics text
//! format (encoded by `prometheus-client`, served by `netceil-http` on a thread of its own)
//! when the scraper asks for it, else converted to the Prometheus text format 0.0.4.
//!
//! One local client cannot block or bloat the endpoint (see `netceil_http::server`): it serves
//! at most [`LIMITS`]`.max_connections` connections on its one thread, a request head of at
//! most 8 KiB, a whole request within 5 s of connecting or of the previous answer, and an
//! answer taken within 10 s; each connection gets one answer per turn, so a client pipelining
//! requests without reading holds up nobody else. Every rendering is kept until the next row,
//! and all the answers share it. The clients refused, timed out or closed to make room are
//! logged on stderr with their address, at most [`LOG_LINES`] lines per [`LOG_WINDOW`] and a
//! count of the rest.
//!
//! # API
//!
//! ```text
//! let server = MetricsServer::start(addr)?;        // binds `addr` and nothing else
//! let publisher = server.publisher();              // for the thread that has the rows
//! publisher.update_rows(&rows);                    // every row sampled, as it comes
//! server.analyze_live(LiveVerdict::new(run.clone(), interval));  // provisional findings
//! server.set_findings(&run.findings);              // the final verdict, at the end
//! server.linger(Duration::from_secs(15), &stop, |wake| on_stop(wake));  // optional: serve a while more
//! drop(server);                                    // stops the thread, frees the port
//! ```
//!
//! A command that wants the endpoint starts it with its `--metrics-listen` value (nothing is
//! bound without the flag); an address that cannot be bound (in use, not this machine's, a
//! privileged port) is a [`StartError`] with a clear message and the exit code netceil gives
//! every address it cannot use ([`StartError::exit_code`]). It hands the endpoint its rows
//! through a [`Publisher`] and the final findings with [`MetricsServer::set_findings`].
//!
//! The observer's cost: rows are copied into the newest values under a mutex (no I/O); the
//! thread sleeps until a scrape comes, waking once a second only while a live verdict is
//! wanted; a live verdict, every 5 s at most, took ~10 ms over 75 rows and ~0.1 s over
//! 1000 rows (10 ms intervals) in an unoptimized build.
//!
//! # Names
//!
//! One mapping, [`target`] (in `expose.rs`), derives every exposed family and its labels from
//! the model's metric name, unit and labels, in node_exporter's conventions: the `netceil_`
//! prefix, base units, the unit last, and counters where something is counted, so that
//! `rate()` and `increase()` work on them:
//!
//! | model series | exposed as |
//! | --- | --- |
//! | a rate of events (`/s`, pkt/s, bit/s): `cs_per_s`, `iface_rx_pps{iface=lo}`, `iface_rx_bits_per_s` | a counter of what it counts, each row's rate times its measured length added up since the endpoint started: `netceil_cs_total`, `netceil_iface_rx_packets_total{device="lo"}`, `netceil_iface_rx_bytes_total` (bits ÷ 8) |
//! | CPU time shares `cpu_user_pct{cpu=3}`, `cpu_softirq_pct{cpu=3}`… | one counter with a `mode` label, seconds: `netceil_cpu_seconds_total{cpu="3",mode="softirq"}`; no machine-wide series (sum over `cpu`) and no `busy` (a sum of modes) |
//! | a thread's `thread_user_pct`, `thread_system_pct` | `netceil_thread_cpu_seconds_total{pid,comm,mode}`, the threads of one name summed |
//! | other shares (`_pct`): `psi_cpu_some_pct` | gauge `netceil_psi_cpu_some_ratio`, 0–1 |
//! | an estimate or a setting in bit/s: `tcp_delivery_rate_bits_per_s`, `qdisc_rate_bits_per_s` | gauge `…_bytes_per_second` |
//! | µs, bytes, counts: `load_mean_latency_us`, `qdisc_backlog_bytes`, `procs_running` | gauges `netceil_load_mean_latency_seconds`, `netceil_qdisc_backlog_bytes`, `netceil_procs_running` |
//! | since-boot totals of a snapshot (`_total`): `softnet_dropped_total` | counter `netceil_softnet_dropped_total` |
//!
//! Labels keep the model's keys (`cpu`, `irq`, `queue`, `pid`, `comm`…), made safe by
//! [`label_name`], except interfaces, which are `device`. A family never mixes a machine-wide
//! value with the per-CPU (or per-anything) values it is made of, so `sum()` never counts
//! twice: the machine-wide series is left out, and a second way of splitting (IPIs per kind
//! beside IPIs per CPU) is a family of its own, `netceil_ipi_by_kind_total`. No series per
//! thread id or per TCP flow unless [`Detail::Fine`] (`--metrics-detail`). A series the
//! sampler stops reporting (a thread that exited) is dropped after [`stale_after`], and a
//! counter that comes back starts from 0 (which `rate()` reads as a reset). Values that are
//! not finite are left out, never written as 0.
//!
//! Besides the series: `netceil_rows_total` (rows published), `netceil_interval_seconds` (the
//! newest row's measured length), and the findings (below).
//!
//! # Findings
//!
//! `netceil_finding_info{rank="1",cause="softirq_bound",confidence="high",names_ceiling="true"} 1`
//! per finding (rank 1 is the verdict; confidence is `high` from 0.8, `medium` from 0.5, else
//! `low`; `names_ceiling` is false for the verdicts that name no ceiling: `no_load`,
//! `no_ceiling`, `unnamed_ceiling`, `link_headroom`), `netceil_finding_confidence_ratio` with
//! the exact figure, `netceil_findings` (how many; 0 until the first verdict) and
//! `netceil_findings_final` (1 once they are the run's final verdict).
//!
//! The final verdict needs the whole run, so it comes at the end ([`MetricsServer::set_findings`]).
//! Before that, with [`MetricsServer::analyze_live`], the server's thread runs the analyzer
//! every [`LIVE_EVERY`] on the rows of the last [`LIVE_WINDOW`] (at least 10 intervals, at most
//! [`LIVE_MAX_ROWS`] rows), so an alert can fire while the workload runs and clears when it
//! stops; the first live verdict comes as soon as [`LIVE_MIN_ROWS`] rows are in. It is
//! provisional: a run's results (a generator's counts) exist only at its end, so the rules
//! that need them speak only in the final verdict.

mod expose;

pub use expose::{expose, help, label_name, target, Detail, Exposed, Fold, Kind, Target, PREFIX};

use netceil_http::{Event, RateLimitedLog, Request, Response, Server, ServerLimits, Wake};
use netceil_model::{Finding, Metric, MetricId, Run, Series, Unit};
use netceil_probe::Row;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit as PromUnit};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the live verdict is recomputed.
pub const LIVE_EVERY: Duration = Duration::from_secs(5);
/// The span of rows the live verdict looks at (or 10 intervals, if longer).
pub const LIVE_WINDOW: Duration = Duration::from_secs(60);
/// At most this many rows go into a live verdict (at 10 ms intervals: the last 10 s).
pub const LIVE_MAX_ROWS: usize = 1000;
/// No live verdict before this many rows.
pub const LIVE_MIN_ROWS: usize = 3;

/// What one client may take of the endpoint (the defaults of `netceil-http`: 64 connections,
/// 8 KiB heads, 5 s to send a request, 10 s to take an answer).
pub const LIMITS: ServerLimits = ServerLimits {
    request: netceil_http::RequestLimits {
        request_line: 2048,
        header_count: 32,
        header_bytes: 6144,
        total: 8192,
    },
    max_connections: 64,
    request_timeout: Duration::from_secs(5),
    write_timeout: Duration::from_secs(10),
};

/// At most this many lines about misbehaving clients per [`LOG_WINDOW`]; the rest are counted.
pub const LOG_LINES: u32 = 5;
pub const LOG_WINDOW: Duration = Duration::from_secs(10);

/// The content type of the OpenMetrics text format.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of the Prometheus text format, for scrapers that do not ask for OpenMetrics.
pub const PROMETHEUS_TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The families this module writes besides the series; a series mapping to one is left out.
const OWN_FAMILIES: &[&str] = &[
    "netceil_rows",
    "netceil_interval_seconds",
    "netceil_findings",
    "netceil_findings_final",
    "netceil_finding",
    "netceil_finding_confidence_ratio",
];

/// A series is dropped when its newest value is older than this, behind the newest row: 5
/// intervals, and at least 5 s (some sources are read every 2 s, whatever the interval).
pub fn stale_after(interval_s: f64) -> f64 {
    (5.0 * interval_s).max(5.0)
}

/// A finding's confidence in a word, for the `confidence` label.
pub fn confidence_word(confidence: f64) -> &'static str {
    if confidence >= 0.8 {
        "high"
    } else if confidence >= 0.5 {
        "medium"
    } else {
        "low"
    }
}

/// Whether a verdict with this cause names a ceiling: the model's one answer
/// ([`Cause::names_ceiling`](netceil_model::Cause::names_ceiling)).
pub fn names_ceiling(cause: &str) -> bool {
    netceil_model::Cause::from_name(cause).names_ceiling()
}

/// One exposed series: where it goes, and its value so far.
#[derive(Debug)]
struct Exposure {
    target: Target,
    help: String,
    value: f64,
    /// When a row last gave it a value.
    t_s: f64,
}

#[derive(Debug, Default)]
struct State {
    /// The exposed series, in the order they first came.
    exposures: Vec<Exposure>,
    /// (family, labels) → its index in `exposures`.
    index: HashMap<(String, Vec<(String, String)>), usize>,
    /// Each model series → the exposure it folds into (`None`: left out), so the mapping is
    /// worked out once per series, not once per row.
    /// Keyed by the id alone, so a row's values are looked up without a copy of their ids;
    /// the unit it was routed with is kept beside (one id in another unit is routed anew).
    routes: HashMap<MetricId, (Unit, Option<usize>)>,
    /// How each family is exposed, as its first series decided.
    kinds: HashMap<String, Exposed>,
    detail: Detail,
    newest_t_s: f64,
    interval_s: Option<f64>,
    rows: u64,
    /// (cause, confidence), most confident first.
    findings: Vec<(String, f64)>,
    findings_final: bool,
    /// The rows of the live verdict's window, when one is wanted.
    window: Option<VecDeque<Row>>,
    window_span_s: f64,
    new_rows: usize,
    /// Changes whenever what is exposed may have: the key of the kept rendering.
    generation: u64,
}

impl State {
    /// The exposure the model series `id` folds into, made on its first value.
    fn route(&mut self, id: &MetricId, unit: Unit) -> Option<usize> {
        if let Some(&(u, r)) = self.routes.get(id) {
            if u == unit {
                return r;
            }
        }
        let r = target(id, unit, self.detail).and_then(|t| {
            let family = t.exposed.family();
            // A family belongs to the first series that maps to it; one of another type or
            // unit (a since-boot total beside the rate it is read as live) is left out, so no
            // value is folded the wrong way and the output stays valid whatever the input.
            match self.kinds.get(&family) {
                Some(first) if *first != t.exposed => return None,
                Some(_) => {}
                None => {
                    self.kinds.insert(family.clone(), t.exposed.clone());
                }
            }
            let key = (family, t.labels.clone());
            Some(*self.index.entry(key).or_insert_with(|| {
                self.exposures.push(Exposure {
                    help: help(&id.name, unit),
                    target: t,
                    // Not a number until a row gives one: left out until then.
                    value: f64::NAN,
                    t_s: f64::NEG_INFINITY,
                });
                self.exposures.len() - 1
            }))
        });
        self.routes.insert(id.clone(), (unit, r));
        r
    }

    fn update(&mut self, row: &Row) {
        self.rows += 1;
        self.generation += 1;
        self.newest_t_s = self.newest_t_s.max(row.t_s);
        let elapsed = (row.elapsed_s.is_finite() && row.elapsed_s > 0.0).then_some(row.elapsed_s);
        if elapsed.is_some() {
            self.interval_s = elapsed;
        }
        for (id, unit, value) in row.iter() {
            let Some(i) = self.route(id, unit) else {
                continue;
            };
            let e = &mut self.exposures[i];
            let scaled = value / e.target.exposed.divisor;
            match e.target.exposed.fold {
                Fold::Last => e.value = scaled,
                Fold::Integrate => {
                    // A rate that is not a number or below zero (a counter that went back)
                    // adds nothing; the series still counts as seen.
                    if let Some(dt) = elapsed.filter(|_| scaled.is_finite() && scaled >= 0.0) {
                        // Several series folding into one (a process's threads) add up.
                        e.value = if e.value.is_nan() { 0.0 } else { e.value } + scaled * dt;
                    }
                }
            }
            e.t_s = row.t_s;
        }
        if let Some(window) = self.window.as_mut() {
            window.push_back(row.clone());
            while window.len() > LIVE_MAX_ROWS
                || window
                    .front()
                    .is_some_and(|r| row.t_s - r.t_s > self.window_span_s)
            {
                window.pop_front();
            }
            self.new_rows += 1;
        }
    }

    /// Forgets the series no row has given a value for a while (a thread that exited); a
    /// counter that comes back starts again from zero, which `rate()` reads as a reset.
    fn prune(&mut self) {
        let limit = self.newest_t_s - stale_after(self.interval_s.unwrap_or(1.0));
        if self.exposures.iter().all(|e| e.t_s >= limit) {
            return;
        }
        self.exposures.retain(|e| e.t_s >= limit);
        self.routes.clear();
        self.index = self
            .exposures
            .iter()
            .enumerate()
            .map(|(i, e)| ((e.target.exposed.family(), e.target.labels.clone()), i))
            .collect();
    }
}

/// What the HTTP thread serves and the command updates.
struct Shared {
    state: Mutex<State>,
    /// The last rendering, in each format, and the generation it was made from.
    rendered: Mutex<Option<Rendered>>,
}

struct Rendered {
    generation: u64,
    openmetrics: Arc<[u8]>,
    prometheus: Option<Arc<[u8]>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("netceil metrics")
    }
}

impl Shared {
    fn new() -> Shared {
        Shared {
            state: Mutex::new(State::default()),
            rendered: Mutex::new(None),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The whole exposition, `# EOF` included.
    fn render(self: &Arc<Self>) -> Result<String, std::fmt::Error> {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Arc::clone(self)));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry)?;
        Ok(out)
    }

    /// The exposition in one format, rendered once per change of the values and shared by
    /// every answer until the next.
    fn exposition(self: &Arc<Self>, openmetrics: bool) -> Result<Arc<[u8]>, std::fmt::Error> {
        // Read before rendering: a row that comes in between makes the text newer than its
        // generation says, so it is only rendered again once more, never served stale.
        let generation = self.lock().generation;
        let mut kept = self.rendered.lock().unwrap_or_else(PoisonError::into_inner);
        let mut r = match kept.take() {
            Some(r) if r.generation == generation => r,
            _ => Rendered {
                generation,
                openmetrics: Arc::from(self.render()?.into_bytes()),
                prometheus: None,
            },
        };
        let body = if openmetrics {
            Arc::clone(&r.openmetrics)
        } else {
            let text = String::from_utf8_lossy(&r.openmetrics);
            let prometheus = r
                .prometheus
                .get_or_insert_with(|| Arc::from(to_prometheus_text(&text).into_bytes()));
            Arc::clone(prometheus)
        };
        *kept = Some(r);
        Ok(body)
    }
}

/// One family of series, ready to encode.
struct Family {
    exposed: Exposed,
    help: String,
    samples: Vec<(Vec<(String, String)>, f64)>,
}
impl Collector for Shared {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let st = self.lock();
        {
            let mut m = enc.encode_descriptor(
                "netceil_rows",
                "Rows (sampling intervals) netceil has published since it started.",
                None,
                MetricType::Counter,
            )?;
            m.encode_counter::<NoLabelSet, _, f64>(&st.rows, None)?;
        }
        if let Some(interval) = st.interval_s {
            let unit = PromUnit::Seconds;
            let mut m = enc.encode_descriptor(
                "netceil_interval",
                "Measured length of the newest row's sampling interval.",
                Some(&unit),
                MetricType::Gauge,
            )?;
            m.encode_gauge(&interval)?;
        }
        encode_findings(&mut enc, &st)?;
        for family in families(&st).values() {
            encode_family(&mut enc, family)?;
        }
        Ok(())
    }
}

fn encode_findings(enc: &mut DescriptorEncoder, st: &State) -> Result<(), std::fmt::Error> {
    {
        let mut m = enc.encode_descriptor(
            "netceil_findings",
            "Findings in netceil's current verdict (0 until the first one is made).",
            None,
            MetricType::Gauge,
        )?;
        m.encode_gauge(&(st.findings.len() as u64))?;
    }
    {
        let mut m = enc.encode_descriptor(
            "netceil_findings_final",
            "1 when the findings are the run's final verdict, 0 while they are the live one over the last rows.",
            None,
            MetricType::Gauge,
        )?;
        m.encode_gauge(&u64::from(st.findings_final))?;
    }
    if st.findings.is_empty() {
        return Ok(());
    }
    {
        let mut m = enc.encode_descriptor(
            "netceil_finding",
            "One per finding of the analyzer: rank 1 is the verdict; confidence is high (>= 0.8), medium (>= 0.5) or low; names_ceiling is false for verdicts that name no ceiling.",
            None,
            MetricType::Info,
        )?;
        for (i, (cause, confidence)) in st.findings.iter().enumerate() {
            let labels: [(&str, String); 4] = [
                ("rank", (i + 1).to_string()),
                ("cause", cause.clone()),
                ("confidence", confidence_word(*confidence).to_string()),
                ("names_ceiling", names_ceiling(cause).to_string()),
            ];
            m.encode_info(&labels)?;
        }
    }
    let unit = PromUnit::Other("ratio".into());
    let mut m = enc.encode_descriptor(
        "netceil_finding_confidence",
        "How sure the analyzer is of each finding, 0-1.",
        Some(&unit),
        MetricType::Gauge,
    )?;
    for (i, (cause, confidence)) in st.findings.iter().enumerate() {
        if !confidence.is_finite() {
            continue;
        }
        let labels: [(&str, String); 2] = [("rank", (i + 1).to_string()), ("cause", cause.clone())];
        m.encode_family(&labels)?.encode_gauge(confidence)?;
    }
    Ok(())
}

/// The exposed series grouped into families by name, laid out so that a `sum()` over a family
/// never counts a value twice: a machine-wide series is left out where the series it is made
/// of (per CPU, per interface…) are there, and series of another set of labels (IPIs per kind
/// beside IPIs per CPU) become a family of their own, `<name>_by_<labels>`.
fn families(st: &State) -> BTreeMap<String, Family> {
    // Stale series are gone already (State::prune, after every update); routing kept each
    // family to one type and each (family, labels) to one series.
    let mut grouped: BTreeMap<String, Family> = BTreeMap::new();
    for e in &st.exposures {
        if !e.value.is_finite() {
            continue;
        }
        let exposed = &e.target.exposed;
        let name = exposed.family();
        if OWN_FAMILIES.contains(&name.as_str()) || (exposed.kind == Kind::Counter && e.value < 0.0)
        {
            continue;
        }
        let family = grouped.entry(name).or_insert_with(|| Family {
            exposed: exposed.clone(),
            help: e.help.clone(),
            samples: Vec::new(),
        });
        family.samples.push((e.target.labels.clone(), e.value));
    }
    let mut out = BTreeMap::new();
    for (name, family) in grouped {
        for (name, f) in lay_out(name, family) {
            out.insert(name, f);
        }
    }
    out
}

/// One family split by the label keys of its samples (see [`families`]).
fn lay_out(name: String, family: Family) -> Vec<(String, Family)> {
    let keys = |labels: &[(String, String)]| -> Vec<String> {
        labels
            .iter()
            .map(|(k, _)| k.clone())
            .filter(|k| k != "mode")
            .collect()
    };
    let mut sets: Vec<Vec<String>> = Vec::new();
    for (labels, _) in &family.samples {
        let k = keys(labels);
        if !sets.contains(&k) {
            sets.push(k);
        }
    }
    if sets.len() <= 1 {
        return vec![(name, family)];
    }
    // The machine-wide series is the sum of the others: left out.
    sets.retain(|k| !k.is_empty());
    // Per CPU keeps the name; per anything else gets a name of its own.
    let main = sets
        .iter()
        .position(|k| k.iter().any(|k| k == netceil_model::names::LABEL_CPU))
        .unwrap_or(0);
    sets.iter()
        .enumerate()
        .map(|(i, set)| {
            let mut exposed = family.exposed.clone();
            if i != main {
                exposed.stem = format!("{}_by_{}", exposed.stem, set.join("_"));
            }
            let samples = family
                .samples
                .iter()
                .filter(|(labels, _)| keys(labels) == *set)
                .cloned()
                .collect();
            let f = Family {
                help: family.help.clone(),
                exposed,
                samples,
            };
            (f.exposed.family(), f)
        })
        .collect()
}

fn encode_family(enc: &mut DescriptorEncoder, family: &Family) -> Result<(), std::fmt::Error> {
    let unit = family.exposed.unit.map(|u| match u {
        "seconds" => PromUnit::Seconds,
        "bytes" => PromUnit::Bytes,
        other => PromUnit::Other(other.to_string()),
    });
    let metric_type = match family.exposed.kind {
        Kind::Gauge => MetricType::Gauge,
        Kind::Counter => MetricType::Counter,
    };
    let mut m = enc.encode_descriptor(
        &family.exposed.stem,
        &family.help,
        unit.as_ref(),
        metric_type,
    )?;
    for (labels, value) in &family.samples {
        let mut sample = m.encode_family(labels)?;
        match family.exposed.kind {
            Kind::Gauge => sample.encode_gauge(value)?,
            Kind::Counter => sample.encode_counter::<NoLabelSet, _, f64>(value, None)?,
        }
    }
    Ok(())
}

/// What the endpoint shows of findings: each one's cause and confidence, in order.
fn cause_and_confidence(findings: &[Finding]) -> Vec<(String, f64)> {
    findings
        .iter()
        .map(|f| (f.cause.to_string(), f.confidence))
        .collect()
}

/// Hands rows and findings to a running [`MetricsServer`]; cheap to clone, and it does not
/// keep the server (or its port) alive.
#[derive(Clone)]
pub struct Publisher(Arc<Shared>);

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Publisher")
    }
}

impl Publisher {
    /// The newest values: each row's values replace the ones before them.
    pub fn update_rows(&self, rows: &[Row]) {
        if rows.is_empty() {
            return;
        }
        let mut st = self.0.lock();
        for row in rows {
            st.update(row);
        }
        st.prune();
    }

    pub fn update_row(&self, row: &Row) {
        self.update_rows(std::slice::from_ref(row));
    }

    /// The run's final verdict, most confident first; live verdicts stop.
    pub fn set_findings(&self, findings: &[Finding]) {
        let mut st = self.0.lock();
        st.findings = cause_and_confidence(findings);
        st.findings_final = true;
        st.generation += 1;
        st.window = None;
    }
}

/// What the live verdict is made from: the run as it stands (meta, workload) without a
/// series, the sampling interval, and optionally something to refresh the run with before
/// each verdict (the load engine's thread ids, say).
pub struct LiveVerdict {
    template: Run,
    interval: Duration,
    prepare: Option<Prepare>,
}

/// Refreshes the run before a live verdict.
type Prepare = Box<dyn Fn(&mut Run) + Send>;

impl LiveVerdict {
    pub fn new(mut template: Run, interval: Duration) -> LiveVerdict {
        template.series = Series::default();
        template.findings.clear();
        LiveVerdict {
            template,
            interval,
            prepare: None,
        }
    }

    /// Called on the run before each live verdict.
    #[must_use]
    pub fn prepare(mut self, f: impl Fn(&mut Run) + Send + 'static) -> LiveVerdict {
        self.prepare = Some(Box::new(f));
        self
    }

    fn findings(&self, rows: &[Row]) -> Option<Vec<Finding>> {
        let mut run = self.template.clone();
        run.series = series_of(rows, self.interval.as_secs_f64());
        if let Some(p) = &self.prepare {
            p(&mut run);
        }
        // A bug in a rule must not take the endpoint down with it.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            netceil_analyze::analyze(&run)
        }))
        .ok()
    }
}

/// Rows as a series (as the sampler's recorder builds it), for the live verdict.
fn series_of(rows: &[Row], interval_s: f64) -> Series {
    let mut series = Series::new(interval_s);
    let mut index: HashMap<MetricId, usize> = HashMap::new();
    for row in rows {
        let r = series.push_row(row.t_s);
        for (id, unit, value) in row.iter() {
            let i = match index.get(id) {
                Some(&i) => i,
                None => {
                    series.metrics.push(Metric {
                        id: id.clone(),
                        unit,
                        values: vec![None; r + 1],
                    });
                    index.insert(id.clone(), series.metrics.len() - 1);
                    series.metrics.len() - 1
                }
            };
            series.metrics[i].values[r] = Some(value);
        }
    }
    series
}

/// Why the endpoint could not be started.
#[derive(Debug)]
pub struct StartError {
    pub addr: SocketAddr,
    pub error: std::io::Error,
    /// The address could not be bound (rather than the server not started after it was).
    pub bind: bool,
}

impl StartError {
    /// 2 when the address cannot be bound (in use, not this machine's, a privileged port),
    /// as for every address netceil is given; 1 when the system failed after that.
    pub fn exit_code(&self) -> u8 {
        if self.bind {
            2
        } else {
            1
        }
    }
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::io::ErrorKind as K;
        let a = self.addr;
        match self.error.kind() {
            K::AddrInUse => write!(
                f,
                "--metrics-listen {a}: the address is already in use (another exporter, or \
                 another netceil?); pick another port, or port 0 for any free one"
            ),
            K::AddrNotAvailable => write!(
                f,
                "--metrics-listen {a}: {} is not an address of this machine",
                a.ip()
            ),
            K::PermissionDenied => write!(
                f,
                "--metrics-listen {a}: permission denied (ports below 1024 need root or \
                 CAP_NET_BIND_SERVICE)"
            ),
            _ => write!(
                f,
                "--metrics-listen {a}: cannot listen there: {}",
                self.error
            ),
        }
    }
}

impl std::error::Error for StartError {}

/// The HTTP endpoint and its thread; stops and frees its port when dropped.
pub struct MetricsServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// Wakes the thread (it owns the server, and closes the port when it ends).
    wake: Wake,
    live: Arc<Mutex<Option<LiveVerdict>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` (only it) and serves `/metrics` on a thread named `netceil-metrics`.
    /// Port 0 takes any free port: [`MetricsServer::local_addr`] says which. No series per
    /// thread id or per flow ([`Detail::Coarse`]).
    pub fn start(addr: SocketAddr) -> Result<MetricsServer, StartError> {
        MetricsServer::start_with(addr, Detail::Coarse)
    }

    /// [`MetricsServer::start`], with the series as fine as `detail` says.
    pub fn start_with(addr: SocketAddr, detail: Detail) -> Result<MetricsServer, StartError> {
        let fail = |error| StartError {
            addr,
            error,
            bind: false,
        };
        let listener = TcpListener::bind(addr).map_err(|error| StartError {
            addr,
            error,
            bind: true,
        })?;
        let local = listener.local_addr().map_err(fail)?;
        let server = Server::from_std(listener, LIMITS).map_err(fail)?;
        let wake = server.waker();
        let shared = Arc::new(Shared::new());
        shared.lock().detail = detail;
        let live: Arc<Mutex<Option<LiveVerdict>>> = Arc::new(Mutex::new(None));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (shared, live, stop) = (Arc::clone(&shared), Arc::clone(&live), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("netceil-metrics".into())
                .spawn(move || serve(server, &shared, &live, &stop))
                .map_err(fail)?
        };
        Ok(MetricsServer {
            addr: local,
            shared,
            wake,
            live,
            stop,
            thread: Some(thread),
        })
    }

    /// The address it listens on (the port chosen, for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Something to hand rows to from another thread (a session's observer).
    pub fn publisher(&self) -> Publisher {
        Publisher(Arc::clone(&self.shared))
    }

    /// See [`Publisher::update_rows`].
    pub fn update_rows(&self, rows: &[Row]) {
        self.publisher().update_rows(rows);
    }

    /// See [`Publisher::update_row`].
    pub fn update_row(&self, row: &Row) {
        self.publisher().update_row(row);
    }

    /// See [`Publisher::set_findings`].
    pub fn set_findings(&self, findings: &[Finding]) {
        self.publisher().set_findings(findings);
    }

    /// Computes provisional findings on the recent rows while the command runs (see the
    /// module header), until [`MetricsServer::set_findings`] gives the final ones.
    pub fn analyze_live(&self, verdict: LiveVerdict) {
        {
            let mut st = self.shared.lock();
            if st.findings_final {
                return;
            }
            let interval_s = verdict.interval.as_secs_f64();
            st.window_span_s = LIVE_WINDOW.as_secs_f64().max(10.0 * interval_s);
            st.window.get_or_insert_with(VecDeque::new);
        }
        *self.live.lock().unwrap_or_else(PoisonError::into_inner) = Some(verdict);
        // Wake the thread so that it starts looking at the clock.
        self.wake.wake();
    }

    /// The exposition as `/metrics` serves it now.
    pub fn render(&self) -> String {
        self.shared.render().unwrap_or_default()
    }

    /// Keeps serving for `how_long`, so that a scraper sees the final findings, then stops.
    /// `stop` is the command's stop flag (Ctrl-C, SIGTERM) and `wake_on_stop` registers what
    /// to call when it is set (this thread's unpark). A stop during the wait ends it early;
    /// when the command itself was ended by one (`stop` already set), the wait goes on, and a
    /// second Ctrl-C exits at once as everywhere in netceil.
    pub fn linger(
        self,
        how_long: Duration,
        stop: &AtomicBool,
        wake_on_stop: impl FnOnce(Box<dyn Fn() + Send>),
    ) {
        if how_long.is_zero() {
            return;
        }
        let already = stop.load(Ordering::SeqCst);
        let me = std::thread::current();
        wake_on_stop(Box::new(move || me.unpark()));
        eprintln!(
            "netceil: serving the final findings at http://{}/metrics for {:?} more",
            self.addr, how_long
        );
        let until = Instant::now() + how_long;
        loop {
            let now = Instant::now();
            if now >= until || (!already && stop.load(Ordering::SeqCst)) {
                break;
            }
            std::thread::park_timeout(until - now);
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.wake.wake();
        // The thread drops the server, its port and its connections as it ends.
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How often the thread looks at the clock while a live verdict is wanted.
const LIVE_POLL: Duration = Duration::from_secs(1);
/// How long it sleeps otherwise, unless woken.
const IDLE_POLL: Duration = Duration::from_secs(3600);

fn serve(
    mut server: Server,
    shared: &Arc<Shared>,
    live: &Mutex<Option<LiveVerdict>>,
    stop: &AtomicBool,
) {
    let mut last_verdict: Option<Instant> = None;
    let mut log = RateLimitedLog::new(LOG_LINES, LOG_WINDOW, Instant::now());
    let note = |log: &mut RateLimitedLog, event: Event| {
        for line in log.note(event.kind(), event.to_string(), Instant::now()) {
            eprintln!("netceil: metrics endpoint: {line}");
        }
    };
    while !stop.load(Ordering::SeqCst) {
        let wanted = shared.lock().window.is_some();
        // Without a live verdict to make, the thread sleeps until a client, a deadline, the
        // log's count or `wake` needs it.
        let now = Instant::now();
        let timeout = log
            .due()
            .map(|d| d.saturating_duration_since(now))
            .unwrap_or(IDLE_POLL)
            .min(if wanted { LIVE_POLL } else { IDLE_POLL });
        let turn = server.turn(
            timeout,
            &mut |request| respond(request, shared),
            &mut |event| note(&mut log, event),
        );
        if let Err(e) = turn {
            eprintln!("netceil: the metrics endpoint stopped: {e}");
            return;
        }
        if let Some(line) = log.tick(Instant::now()) {
            eprintln!("netceil: metrics endpoint: {line}");
        }
        if wanted
            && last_verdict.is_none_or(|t| t.elapsed() >= LIVE_EVERY)
            && live_verdict(shared, live)
        {
            last_verdict = Some(Instant::now());
        }
    }
}

/// Makes a live verdict when new rows came since the last one. Returns whether it did.
fn live_verdict(shared: &Shared, live: &Mutex<Option<LiveVerdict>>) -> bool {
    let rows: Vec<Row> = {
        let mut st = shared.lock();
        let Some(window) = st.window.as_ref() else {
            return false;
        };
        if st.findings_final || st.new_rows == 0 || window.len() < LIVE_MIN_ROWS {
            return false;
        }
        let rows = window.iter().cloned().collect();
        st.new_rows = 0;
        rows
    };
    let guard = live.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(verdict) = guard.as_ref() else {
        return false;
    };
    let Some(findings) = verdict.findings(&rows) else {
        return false;
    };
    drop(guard);
    let mut st = shared.lock();
    if !st.findings_final {
        st.findings = cause_and_confidence(&findings);
        st.generation += 1;
    }
    true
}

fn respond(request: &Request, shared: &Arc<Shared>) -> Response {
    use netceil_http::Method;
    let readable = matches!(request.method, Method::Get | Method::Head);
    match (readable, request.path.as_str()) {
        (true, "/metrics") => {
            let openmetrics = wants_openmetrics(request);
            let content_type = if openmetrics {
                OPENMETRICS_CONTENT_TYPE
            } else {
                PROMETHEUS_TEXT_CONTENT_TYPE
            };
            match shared.exposition(openmetrics) {
                Ok(body) => Response::new(200, content_type, body),
                Err(_) => Response::text(500, "could not encode the metrics\n"),
            }
        }
        (true, "/") => Response::text(
            200,
            "netceil: the live series and findings are at /metrics\n",
        ),
        (true, _) => Response::text(404, "not found: try /metrics\n"),
        (false, _) => Response {
            allow: Some("GET, HEAD"),
            ..Response::text(405, "only GET and HEAD are served\n")
        },
    }
}

/// Whether the scraper asked for OpenMetrics (Prometheus does, in its Accept header). Others
/// (curl, older agents) get the Prometheus text format, as the official client libraries do.
fn wants_openmetrics(request: &Request) -> bool {
    request.headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("accept")
            && value
                .to_ascii_lowercase()
                .contains("application/openmetrics-text")
    })
}

/// The Prometheus text format (0.0.4) of an OpenMetrics exposition: a counter's `# HELP` and
/// `# TYPE` under its `_total` sample name, an info family as a gauge named `…_info`, HELP
/// escapes of that format (no `\"`), and no `# UNIT` lines or `# EOF`. Samples are unchanged:
/// both formats write names, labels and values alike.
pub fn to_prometheus_text(openmetrics: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(openmetrics.len());
    // A family's HELP comes before its TYPE, which decides the name it goes under.
    let mut help: Option<(&str, &str)> = None;
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            help = Some((name, text));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "unknown"));
            let (exposed, kind) = match kind {
                "counter" => (format!("{name}_total"), "counter"),
                "info" => (format!("{name}_info"), "gauge"),
                "gauge" | "histogram" | "summary" => (name.to_string(), kind),
                _ => (name.to_string(), "untyped"),
            };
            if let Some((_, text)) = help.take().filter(|(n, _)| *n == name) {
                let _ = writeln!(out, "# HELP {exposed} {}", help_0_0_4(text));
            }
            let _ = writeln!(out, "# TYPE {exposed} {kind}");
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        // `_created` samples are OpenMetrics' own; the older format has no place for them.
        let name = line.split(['{', ' ']).next().unwrap_or("");
        if name.ends_with("_created") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// OpenMetrics HELP text (escapes `\\`, `\n`, `\"`) re-escaped for the 0.0.4 format, which
/// escapes only `\\` and `\n`.
fn help_0_0_4(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('"') => out.push('"'),
            Some('n') => out.push_str("\\n"),
            Some('\\') | None => out.push_str("\\\\"),
            Some(other) => {
                out.push_str("\\\\");
                out.push(other);
            }
        }
    }
    out
}

/// Reads `--metrics-listen`: an IP address and a port, `127.0.0.1:9870` or `[::1]:9870`.
/// Host names are refused, so that exactly the address given is bound.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    let t = text.trim();
    if let Ok(addr) = t.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if t.parse::<std::net::IpAddr>().is_ok() {
        return Err(format!(
            "'{t}' has no port: give ADDR:PORT, e.g. 127.0.0.1:9870 ([::1]:9870 for IPv6)"
        ));
    }
    if let Some((host, port)) = t.rsplit_once(':') {
        if port.parse::<u16>().is_ok() && !host.is_empty() && !host.contains(':') {
            return Err(format!(
                "'{host}' is not an IP address: give one (127.0.0.1:{port}, 0.0.0.0:{port} for \
                 every IPv4 address); host names are not resolved, so that only the address \
                 given is bound"
            ));
        }
    }
    Err(format!(
        "'{t}' is not ADDR:PORT; expected e.g. 127.0.0.1:9870 or [::1]:9870"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_model::{names as n, Evidence, RunSource};
    use std::collections::BTreeSet;

    /// promtool refuses abbreviated units in a name (`_per_s`, `_pct`, `_us`…), so no model
    /// metric, whatever its name ends in, may keep one once exposed.
    #[test]
    fn no_model_metric_is_exposed_with_an_abbreviated_unit() {
        for (name, unit) in n::ALL {
            let family = expose(name, *unit).family();
            let words: Vec<&str> = family.split('_').collect();
            for bad in ["s", "pct", "pps", "bps", "us", "ms", "ns"] {
                let abbreviated = words.iter().enumerate().any(|(i, w)| {
                    *w == bad && (bad != "s" || words.get(i.wrapping_sub(1)) == Some(&"per"))
                });
                assert!(!abbreviated, "{name} ({unit:?}) is exposed as {family}");
            }
        }
    }

    #[test]
    fn the_prometheus_text_format_renames_counters_and_info_and_drops_what_it_lacks() {
        let om = "# HELP netceil_rows Rows \\\"published\\\" so far, a\\\\b.\n\
                  # TYPE netceil_rows counter\n\
                  netceil_rows_total 3\n\
                  netceil_rows_created 1700000000.0\n\
                  # HELP netceil_interval_seconds Row length.\n\
                  # TYPE netceil_interval_seconds gauge\n\
                  # UNIT netceil_interval_seconds seconds\n\
                  netceil_interval_seconds 1.0\n\
                  # HELP netceil_finding One per finding.\n\
                  # TYPE netceil_finding info\n\
                  netceil_finding_info{rank=\"1\",cause=\"a \\\"b\\\"\"} 1\n\
                  # EOF\n";
        assert_eq!(
            to_prometheus_text(om),
            "# HELP netceil_rows_total Rows \"published\" so far, a\\\\b.\n\
             # TYPE netceil_rows_total counter\n\
             netceil_rows_total 3\n\
             # HELP netceil_interval_seconds Row length.\n\
             # TYPE netceil_interval_seconds gauge\n\
             netceil_interval_seconds 1.0\n\
             # HELP netceil_finding_info One per finding.\n\
             # TYPE netceil_finding_info gauge\n\
             netceil_finding_info{rank=\"1\",cause=\"a \\\"b\\\"\"} 1\n"
        );
    }

    fn id(name: &str, labels: &[(&str, &str)]) -> MetricId {
        labels
            .iter()
            .fold(MetricId::new(name), |m, (k, v)| m.with(*k, *v))
    }

    fn row(t_s: f64, values: Vec<(MetricId, Unit, f64)>) -> Row {
        Row::from_values(t_s, 1.0, values)
    }

    fn finding(cause: &str, confidence: f64) -> Finding {
        Finding {
            cause: cause.into(),
            summary: format!("{cause} summary"),
            confidence,
            evidence: vec![Evidence {
                metric: "cpu_busy_pct".into(),
                window_s: None,
                value: None,
                unit: None,
                text: "x".into(),
            }],
            alternatives: Vec::new(),
            advice: Vec::new(),
            next: None,
            not_checked: Vec::new(),
        }
    }

    fn valid_metric_name(name: &str) -> bool {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    }

    #[test]
    fn names_follow_the_units() {
        let c = Kind::Counter;
        let g = Kind::Gauge;
        let cases = [
            (
                n::CPU_SOFTIRQ_PCT,
                Unit::Percent,
                "netceil_cpu_seconds",
                c,
                100.0,
            ),
            (
                n::THREAD_USER_PCT,
                Unit::Percent,
                "netceil_thread_cpu_seconds",
                c,
                100.0,
            ),
            (
                n::PSI_CPU_SOME_PCT,
                Unit::Percent,
                "netceil_psi_cpu_some_ratio",
                g,
                100.0,
            ),
            (
                n::IFACE_RX_BITS_PER_S,
                Unit::BitsPerSecond,
                "netceil_iface_rx_bytes",
                c,
                8.0,
            ),
            (
                n::IFACE_RX_PPS,
                Unit::PacketsPerSecond,
                "netceil_iface_rx_packets",
                c,
                1.0,
            ),
            (n::CS_PER_S, Unit::PerSecond, "netceil_cs", c, 1.0),
            (
                n::TCP_DELIVERY_RATE_BITS_PER_S,
                Unit::BitsPerSecond,
                "netceil_tcp_delivery_rate_bytes_per_second",
                g,
                8.0,
            ),
            (
                n::TCP_BYTES_ACKED_PER_S,
                Unit::BytesPerSecond,
                "netceil_tcp_acked_bytes",
                c,
                1.0,
            ),
            (
                n::LOAD_MEAN_LATENCY_US,
                Unit::Microseconds,
                "netceil_load_mean_latency_seconds",
                g,
                1e6,
            ),
            (
                n::QDISC_BACKLOG_BYTES,
                Unit::Bytes,
                "netceil_qdisc_backlog_bytes",
                g,
                1.0,
            ),
            (
                n::PROCS_RUNNING,
                Unit::Count,
                "netceil_procs_running",
                g,
                1.0,
            ),
            (
                n::SOFTNET_DROPPED_TOTAL,
                Unit::Count,
                "netceil_softnet_dropped",
                c,
                1.0,
            ),
            (
                n::THREAD_IO_BYTES_PER_S,
                Unit::BytesPerSecond,
                "netceil_thread_io_bytes",
                c,
                1.0,
            ),
        ];
        for (name, unit, family, kind, divisor) in cases {
            let e = expose(name, unit);
            assert_eq!(
                (e.family().as_str(), e.kind, e.divisor),
                (family, kind, divisor),
                "{name}"
            );
        }
        assert_eq!(
            expose(n::SOFTNET_DROPPED_TOTAL, Unit::Count).sample_name(),
            "netceil_softnet_dropped_total"
        );
        assert_eq!(
            expose(n::CS_PER_S, Unit::PerSecond).sample_name(),
            "netceil_cs_total"
        );
        // A name without its unit's suffix still ends in the exposed unit.
        assert_eq!(
            expose("odd-name", Unit::Percent).family(),
            "netceil_odd_name_ratio"
        );
        assert_eq!(expose("", Unit::Count).family(), "netceil_unnamed");
        assert_eq!(expose("_pct", Unit::Percent).family(), "netceil__pct_ratio");
    }

    #[test]
    fn every_model_name_maps_to_a_distinct_valid_name_ending_in_its_unit() {
        let mut seen = BTreeMap::new();
        for &(name, unit) in n::ALL {
            let e = expose(name, unit);
            let family = e.family();
            assert!(valid_metric_name(&family), "{name} -> {family}");
            assert!(family.starts_with("netceil_"), "{family}");
            if let Some(u) = e.unit {
                assert!(family.ends_with(&format!("_{u}")), "{family} / {u}");
            }
            assert!(!OWN_FAMILIES.contains(&family.as_str()), "{family}");
            // Only counters may end in _total; no gauge may look like another type's sample.
            for suffix in ["_total", "_created", "_bucket", "_info", "_count", "_sum"] {
                assert!(!family.ends_with(suffix), "{family}");
            }
            // Counters: what the snapshot counted up, and every rate of events.
            let rate = matches!(
                unit,
                Unit::BitsPerSecond
                    | Unit::BytesPerSecond
                    | Unit::PacketsPerSecond
                    | Unit::PerSecond
            );
            let counted = name.ends_with("_total") || (rate && !family.ends_with("_per_second"));
            let cpu_time = family.ends_with("cpu_seconds");
            assert_eq!(e.kind == Kind::Counter, counted || cpu_time, "{name}");
            // Distinct, but for the CPU time shares (one family with a mode label) and a
            // since-boot total beside the rate it is read as live: the first series to come
            // holds the family, and routing refuses the other (see below).
            if let Some(other) = seen.insert(family.clone(), name) {
                let twins = |a: &str, b: &str| {
                    a.strip_suffix("_total")
                        .is_some_and(|stem| b.starts_with(stem) && b.ends_with("_per_s"))
                };
                assert!(
                    cpu_time || twins(name, other) || twins(other, name),
                    "{name} and {other} both map to {family}"
                );
            }
            let h = help(name, unit);
            assert!(!h.contains('\n') && (h.contains(name) || cpu_time), "{h}");
        }
    }

    #[test]
    fn a_total_and_its_rate_twin_do_not_fold_into_one_counter() {
        let (shared, p) = server_state();
        let cpu1 = [("cpu", "1")];
        for t in [1.0, 2.0] {
            p.update_row(&row(
                t,
                vec![
                    (id(n::SOFTNET_DROPPED_TOTAL, &cpu1), Unit::Count, 7.0),
                    (id(n::SOFTNET_DROPPED_PER_S, &cpu1), Unit::PerSecond, 100.0),
                ],
            ));
        }
        let text = shared.render().unwrap();
        // The since-boot total came first and holds the family; the rate is not added into it
        // (7 + 200) nor does it overwrite it (100).
        assert!(
            text.contains("netceil_softnet_dropped_total{cpu=\"1\"} 7"),
            "{text}"
        );
        assert_eq!(
            text.matches("netceil_softnet_dropped_total{").count(),
            1,
            "{text}"
        );
    }

    #[test]
    fn label_names_keep_the_models_keys() {
        assert_eq!(
            label_name(n::LABEL_IFACE),
            "device",
            "as node_exporter names it"
        );
        for key in [n::LABEL_CPU, n::LABEL_QUEUE, n::LABEL_COMM, "type"] {
            assert_eq!(label_name(key), key);
        }
        assert_eq!(label_name("__name__"), "name__");
        assert_eq!(label_name("3d"), "label_3d");
        assert_eq!(label_name("a-b"), "a_b");
        assert_eq!(label_name(""), "unnamed");
    }

    #[test]
    fn help_says_what_and_how() {
        let h = help(n::PSI_CPU_SOME_PCT, Unit::Percent);
        assert!(!h.contains("Labels"), "{h}");
        assert!(
            h.contains("ratio") && h.ends_with("netceil series: psi_cpu_some_pct."),
            "{h}"
        );
        let h = help(n::IFACE_RX_BITS_PER_S, Unit::BitsPerSecond);
        assert!(h.starts_with("Received bits per second"), "{h}");
        assert!(
            h.contains("Counted up") && h.contains("bytes (bits / 8)"),
            "{h}"
        );
        assert_eq!(
            help("made_up\\x\ny", Unit::Count),
            "netceil's made_up\\\\x\\ny, in count. netceil series: made_up\\\\x\\ny."
        );
    }

    /// Checks the OpenMetrics text the way a strict reader would, for the parts netceil uses:
    /// families are contiguous and announced by `# HELP` and `# TYPE` (and `# UNIT`, a suffix
    /// of the name); every sample belongs to the family above it, with the suffix its type
    /// allows, a number, and unique labels; the text ends in `# EOF`. Returns the samples.
    fn parse_exposition(text: &str) -> Vec<(String, BTreeMap<String, String>, f64)> {
        assert!(text.ends_with("# EOF\n"), "no # EOF at the end:\n{text}");
        let mut samples = Vec::new();
        let mut families: BTreeSet<String> = BTreeSet::new();
        let mut current: Option<(String, String)> = None;
        let mut seen_samples = BTreeSet::new();
        let body = &text[..text.len() - "# EOF\n".len()];
        for line in body.lines() {
            assert!(!line.is_empty(), "empty line");
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let name = rest.split(' ').next().unwrap();
                assert!(valid_metric_name(name), "{line}");
                assert!(families.insert(name.to_string()), "family {name} twice");
                current = Some((name.to_string(), String::new()));
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, ty) = rest.split_once(' ').unwrap();
                let cur = current.as_mut().expect("TYPE without HELP");
                assert_eq!(cur.0, name, "{line}");
                assert!(["gauge", "counter", "info"].contains(&ty), "{line}");
                cur.1 = ty.to_string();
            } else if let Some(rest) = line.strip_prefix("# UNIT ") {
                let (name, unit) = rest.split_once(' ').unwrap();
                assert_eq!(current.as_ref().unwrap().0, name);
                assert!(name.ends_with(&format!("_{unit}")), "{line}");
            } else {
                assert!(!line.starts_with('#'), "unexpected comment {line}");
                let (family, ty) = current.clone().expect("sample before any # TYPE");
                assert!(!ty.is_empty(), "sample before # TYPE: {line}");
                let (series, value) = line.rsplit_once(' ').unwrap();
                let value: f64 = value.parse().unwrap_or_else(|_| panic!("{line}"));
                assert!(value.is_finite(), "{line}");
                let (name, labels) = match series.split_once('{') {
                    Some((n, l)) => (n, l.strip_suffix('}').expect("unclosed {")),
                    None => (series, ""),
                };
                let expected = match ty.as_str() {
                    "counter" => format!("{family}_total"),
                    "info" => format!("{family}_info"),
                    _ => family.clone(),
                };
                assert_eq!(name, expected, "{line}");
                let mut map = BTreeMap::new();
                if !labels.is_empty() {
                    for pair in labels.split(',') {
                        let (k, v) = pair.split_once('=').unwrap();
                        assert!(v.starts_with('"') && v.ends_with('"'), "{line}");
                        assert!(
                            map.insert(k.to_string(), v.trim_matches('"').to_string())
                                .is_none(),
                            "label {k} twice: {line}"
                        );
                    }
                }
                assert!(
                    seen_samples.insert(series.to_string()),
                    "sample twice: {line}"
                );
                samples.push((name.to_string(), map, value));
            }
        }
        samples
    }

    fn server_state() -> (Arc<Shared>, Publisher) {
        let shared = Arc::new(Shared::new());
        (Arc::clone(&shared), Publisher(shared))
    }

    /// Two 1 s rows of a series of every kind the exposition maps differently.
    fn two_rows_of_each_kind(p: &Publisher, comm: &str) {
        for t in [1.0, 2.0] {
            p.update_row(&row(
                t,
                vec![
                    (id(n::CPU_SOFTIRQ_PCT, &[("cpu", "3")]), Unit::Percent, 91.0),
                    (id(n::CPU_SOFTIRQ_PCT, &[("cpu", "0")]), Unit::Percent, 2.0),
                    (id(n::CPU_SOFTIRQ_PCT, &[]), Unit::Percent, 46.5),
                    (id(n::CPU_BUSY_PCT, &[("cpu", "3")]), Unit::Percent, 95.0),
                    (
                        id(n::IFACE_RX_BITS_PER_S, &[("iface", "lo")]),
                        Unit::BitsPerSecond,
                        8e9,
                    ),
                    (id(n::CS_PER_S, &[]), Unit::PerSecond, 1234.0),
                    (
                        id(n::SOFTNET_DROPPED_TOTAL, &[("cpu", "1")]),
                        Unit::Count,
                        7.0,
                    ),
                    (
                        id(
                            n::THREAD_USER_PCT,
                            &[("comm", "w"), ("pid", "1"), ("tid", "10")],
                        ),
                        Unit::Percent,
                        100.0,
                    ),
                    (
                        id(
                            n::THREAD_USER_PCT,
                            &[("comm", "w"), ("pid", "1"), ("tid", "11")],
                        ),
                        Unit::Percent,
                        50.0,
                    ),
                    (
                        id(n::THREAD_SYSTEM_PCT, &[("comm", comm), ("pid", "2")]),
                        Unit::Percent,
                        1.0,
                    ),
                    (id(n::IPI_PER_S, &[]), Unit::PerSecond, 30.0),
                    (id(n::IPI_PER_S, &[("cpu", "0")]), Unit::PerSecond, 30.0),
                    (
                        id(n::IPI_PER_S, &[("kind", "resched")]),
                        Unit::PerSecond,
                        30.0,
                    ),
                    (id(n::PSI_CPU_SOME_PCT, &[]), Unit::Percent, 12.0),
                    (id(n::CS_PER_S, &[("cpu", "1")]), Unit::PerSecond, f64::NAN),
                ],
            ));
        }
    }

    #[test]
    fn exposition_is_valid_openmetrics_with_scaled_values() {
        let (shared, p) = server_state();
        let text = shared.render().unwrap();
        let empty = parse_exposition(&text);
        assert!(empty
            .iter()
            .any(|(n, _, v)| n == "netceil_findings" && *v == 0.0));
        let comm = "a \"q\" \\ b";
        two_rows_of_each_kind(&p, comm);
        p.set_findings(&[finding("softirq_bound", 0.9), finding("no_ceiling", 0.3)]);
        let text = shared.render().unwrap();
        let samples = parse_exposition(&text);
        let get = |name: &str, labels: &[(&str, &str)]| {
            samples
                .iter()
                .find(|(n, l, _)| {
                    n == name
                        && l.len() == labels.len()
                        && labels
                            .iter()
                            .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
                })
                .map(|s| s.2)
        };
        let close = |got: Option<f64>, want: f64| got.is_some_and(|g| (g - want).abs() < 1e-9);
        // CPU time: one counter with a mode label, seconds (91 % of two 1 s rows).
        assert!(close(
            get(
                "netceil_cpu_seconds_total",
                &[("cpu", "3"), ("mode", "softirq")]
            ),
            1.82
        ));
        // No machine-wide CPU series beside the per-CPU ones, and no busy (a sum of modes).
        assert_eq!(
            get("netceil_cpu_seconds_total", &[("mode", "softirq")]),
            None
        );
        assert!(!text.contains("busy"), "{text}");
        // Rates counted up: 8 Gbit/s for 2 s is 2 GB; interfaces are `device`.
        assert_eq!(
            get("netceil_iface_rx_bytes_total", &[("device", "lo")]),
            Some(2e9)
        );
        assert_eq!(get("netceil_cs_total", &[]), Some(2468.0));
        assert_eq!(
            get("netceil_softnet_dropped_total", &[("cpu", "1")]),
            Some(7.0)
        );
        // A process's threads of one name summed, without a series per thread id.
        assert!(close(
            get(
                "netceil_thread_cpu_seconds_total",
                &[("comm", "w"), ("pid", "1"), ("mode", "user")]
            ),
            3.0
        ));
        assert!(!text.contains("tid="), "{text}");
        // IPIs per CPU keep the name; per kind is a family of its own; the total is left to sum().
        assert_eq!(get("netceil_ipi_total", &[("cpu", "0")]), Some(60.0));
        assert_eq!(get("netceil_ipi_total", &[]), None);
        assert_eq!(
            get("netceil_ipi_by_kind_total", &[("kind", "resched")]),
            Some(60.0)
        );
        assert_eq!(get("netceil_psi_cpu_some_ratio", &[]), Some(0.12));
        assert_eq!(
            get("netceil_cs_total", &[("cpu", "1")]),
            None,
            "NaN is left out"
        );
        assert_eq!(get("netceil_rows_total", &[]), Some(2.0));
        assert_eq!(get("netceil_interval_seconds", &[]), Some(1.0));
        assert_eq!(get("netceil_findings", &[]), Some(2.0));
        assert_eq!(get("netceil_findings_final", &[]), Some(1.0));
        assert_eq!(
            get(
                "netceil_finding_info",
                &[
                    ("rank", "1"),
                    ("cause", "softirq_bound"),
                    ("confidence", "high"),
                    ("names_ceiling", "true")
                ]
            ),
            Some(1.0)
        );
        assert_eq!(
            get(
                "netceil_finding_info",
                &[
                    ("rank", "2"),
                    ("cause", "no_ceiling"),
                    ("confidence", "low"),
                    ("names_ceiling", "false")
                ]
            ),
            Some(1.0)
        );
        assert_eq!(
            get(
                "netceil_finding_confidence_ratio",
                &[("rank", "1"), ("cause", "softirq_bound")]
            ),
            Some(0.9)
        );
        assert!(
            text.contains("# UNIT netceil_psi_cpu_some_ratio ratio\n")
                && text.contains(
                    "# TYPE netceil_cpu_seconds counter\n# UNIT netceil_cpu_seconds seconds\n"
                ),
            "{text}"
        );
        assert!(
            text.contains("# TYPE netceil_softnet_dropped counter\n"),
            "{text}"
        );
        assert!(text.contains("# TYPE netceil_finding info\n"), "{text}");
        assert!(
            text.contains(r#"comm="a \"q\" \\ b""#),
            "label values are escaped:\n{text}"
        );
    }

    #[test]
    fn series_that_stop_coming_go_stale() {
        let (shared, p) = server_state();
        shared.lock().detail = Detail::Fine;
        let tid = id(n::THREAD_USER_PCT, &[("tid", "42"), ("comm", "w")]);
        p.update_row(&row(
            1.0,
            vec![
                (tid.clone(), Unit::Percent, 10.0),
                (id(n::CS_PER_S, &[]), Unit::PerSecond, 1.0),
            ],
        ));
        assert!(shared.render().unwrap().contains("tid=\"42\""));
        for t in 2..=10 {
            p.update_row(&row(
                f64::from(t),
                vec![(id(n::CS_PER_S, &[]), Unit::PerSecond, 1.0)],
            ));
        }
        let text = shared.render().unwrap();
        assert!(!text.contains("tid=\"42\""), "{text}");
        // Ten rows of 1 s at 1/s.
        assert!(text.contains("netceil_cs_total 10"), "{text}");
        assert!(shared.lock().exposures.iter().all(|e| !e
            .target
            .labels
            .iter()
            .any(|(k, _)| k == "tid")));
    }

    #[test]
    fn listen_addresses() {
        assert_eq!(
            parse_listen("127.0.0.1:9870"),
            Ok("127.0.0.1:9870".parse().unwrap())
        );
        assert_eq!(parse_listen("[::1]:0"), Ok("[::1]:0".parse().unwrap()));
        assert!(parse_listen("127.0.0.1").unwrap_err().contains("no port"));
        assert!(parse_listen("localhost:9870")
            .unwrap_err()
            .contains("not an IP address"));
        assert!(parse_listen("1.2.3.4:99999")
            .unwrap_err()
            .contains("not ADDR:PORT"));
        assert!(parse_listen("").is_err());
    }

    #[test]
    fn bind_errors_are_clear() {
        let first = MetricsServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let err = MetricsServer::start(first.local_addr()).err().unwrap();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("already in use"), "{err}");
        // TEST-NET-1: never an address of this machine.
        let err = MetricsServer::start("192.0.2.1:9870".parse().unwrap())
            .err()
            .unwrap();
        assert_eq!(err.exit_code(), 2, "{err}");
        assert!(
            err.to_string().contains("not an address of this machine"),
            "{err}"
        );
        // Dropping the server frees the port.
        let addr = first.local_addr();
        drop(first);
        drop(MetricsServer::start(addr).unwrap());
    }

    #[test]
    fn live_verdict_runs_on_the_recent_rows_until_the_final_one() {
        let (shared, p) = server_state();
        shared.lock().window = Some(VecDeque::new());
        shared.lock().window_span_s = 60.0;
        let live = Mutex::new(Some(LiveVerdict::new(
            Run::new("t", RunSource::Watched { command: None }),
            Duration::from_secs(1),
        )));
        assert!(!live_verdict(&shared, &live), "no rows yet");
        for t in 1..=5 {
            p.update_row(&row(
                f64::from(t),
                vec![(id(n::CPU_BUSY_PCT, &[]), Unit::Percent, 3.0)],
            ));
        }
        assert!(live_verdict(&shared, &live));
        let findings = shared.lock().findings.clone();
        assert!(!findings.is_empty());
        assert!(!shared.lock().findings_final);
        assert!(!live_verdict(&shared, &live), "no new rows");
        p.set_findings(&[finding("hot_cpu", 0.85)]);
        p.update_row(&row(
            6.0,
            vec![(id(n::CPU_BUSY_PCT, &[]), Unit::Percent, 3.0)],
        ));
        assert!(!live_verdict(&shared, &live), "the final verdict stands");
        assert_eq!(shared.lock().findings, vec![("hot_cpu".to_string(), 0.85)]);
    }

    #[test]
    fn rows_become_a_series() {
        let rows = [
            row(1.0, vec![(id("a", &[]), Unit::Count, 1.0)]),
            row(2.0, vec![(id("b", &[("cpu", "0")]), Unit::Count, 2.0)]),
        ];
        let s = series_of(&rows, 1.0);
        assert_eq!(s.t_s, vec![1.0, 2.0]);
        assert_eq!(s.total("a").unwrap().values, vec![Some(1.0), None]);
        assert_eq!(s.by_name("b").next().unwrap().values, vec![None, Some(2.0)]);
    }

    #[test]
    fn window_keeps_the_recent_rows() {
        let mut st = State {
            window: Some(VecDeque::new()),
            window_span_s: 10.0,
            ..State::default()
        };
        for t in 1..=30 {
            st.update(&row(f64::from(t), vec![]));
        }
        let w = st.window.as_ref().unwrap();
        assert_eq!(w.front().unwrap().t_s, 20.0);
        assert_eq!(w.len(), 11);
    }
}
