//! `netceil run`: generate load, count it at the kernel and the application, and report.
//!
//! Every workload is validated before anything is measured or stored, so bad input costs
//! nothing. One recording (sampler + store writer) spans the whole command; for the default
//! suite each part's series is its window of that one timeline.

use anyhow::{anyhow, Context};
use netceil_load::{rr, tcp, udp};
use netceil_model::names as n;
use netceil_model::{
    frame_to_udp_payload, time, udp_payload_to_frame, MetricId, Rate, Results, Run, RunSource,
    Unit, Workload as WorkloadSpec, WorkloadKind,
};
use netceil_store::Store;
use serde_json::json;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::cli::{
    CommonRunArgs, ProtoArg, RrArgs, RunArgs, TcpArgs, TcpPacingArg, UdpArgs, Workload,
};
use crate::live::Live;
use crate::observe::{open_store, terminal_width, LiveTable, Recording};
use crate::table::{LoadFigures, RR_COLUMNS, TCP_COLUMNS, UDP_COLUMNS};
use crate::{host, kernel, load_failure, remote, summary, Failure, Outcome};

/// The default run's parts: short enough that the whole suite takes about 20 s.
const SUITE_PART: Duration = Duration::from_secs(6);

/// A workload, validated and ready to run.
pub(crate) enum Plan {
    Udp(udp::UdpConfig, serde_json::Map<String, serde_json::Value>),
    Tcp(tcp::TcpConfig, serde_json::Map<String, serde_json::Value>),
    Rr(rr::RrConfig, serde_json::Map<String, serde_json::Value>),
}

impl Plan {
    pub(crate) fn spec(&self) -> WorkloadSpec {
        let (kind, params) = match self {
            Plan::Udp(_, p) => (WorkloadKind::Udp, p),
            Plan::Tcp(_, p) => (WorkloadKind::Tcp, p),
            Plan::Rr(_, p) => (WorkloadKind::Rr, p),
        };
        WorkloadSpec {
            kind,
            params: params.clone(),
        }
    }
}

pub fn run(args: RunArgs) -> Outcome {
    let common = args.common;
    let (mut top, wire_id) = new_live_run(&common);
    let suite = args.workload.is_none();
    let plans = match &args.workload {
        None => suite_plans(&common, wire_id)?,
        Some(w) => vec![plan(w, &common, wire_id)?],
    };
    top.workload = Some(if suite {
        WorkloadSpec {
            kind: WorkloadKind::Suite,
            params: obj(json!({
                "parts": ["udp --frame-size 64 (unpaced)", "tcp 1 flow", "rr tcp 64 B closed loop"],
                "part_duration_s": SUITE_PART.as_secs_f64(),
            })),
        }
    } else {
        plans[0].spec()
    });

    let metrics = crate::metrics::from_flag(args.metrics.metrics_listen)?;
    let store = open_store(common.no_store);
    let mut h = Harness::start(&common, store.as_ref(), &top)?;
    if let Some(m) = &metrics {
        h.rec.publish_to(m.publisher());
        // The load engine's threads are netceil's own, not the machine's: as at the end.
        let live = crate::metrics::LiveVerdict::new(top.clone(), common.sample_interval)
            .prepare(|r| r.meta.own_thread_ids = netceil_load::threads::spawned_thread_ids());
        m.analyze_live(live);
    }
    let mut parts = Vec::new();
    let mut failure = None;
    for p in &plans {
        if crate::stop_flag().load(Ordering::SeqCst) {
            break;
        }
        let from = h.rec.elapsed_s();
        let results = match p {
            Plan::Udp(cfg, _) => measure_udp(cfg, &mut h),
            Plan::Tcp(cfg, _) => measure_tcp(cfg, &mut h),
            Plan::Rr(cfg, _) => measure_rr(cfg, &mut h),
        };
        match results {
            Ok(r) => parts.push((p.spec(), r, from, h.rec.elapsed_s())),
            Err(f) => {
                failure = Some(f);
                break;
            }
        }
    }
    // The load engine's threads by OS thread id, so the analyzer leaves exactly these out of
    // the system's threads. The sampler's own thread is not among them: its cost is
    // meta.sampler_cpu_*, and it sleeps between samples, so it never looks like a poller.
    top.meta.own_thread_ids = netceil_load::threads::spawned_thread_ids();
    let leftover = h.rec.stop(&mut top);
    h.rec.store_rows(&leftover);
    let interrupted = crate::stop_flag().load(Ordering::SeqCst);
    let measured_parts = parts.len();
    if suite {
        // The headline is the UDP part: the packet-rate ceiling, on the whole run's clock.
        let headline = parts.first().map(|(_, r, _, _)| r.clone());
        for (spec, results, from, to) in parts {
            let part = part_of(&top, spec, results, from, to);
            top.parts.push(part);
        }
        top.results = headline;
    } else {
        top.results = parts.into_iter().next().map(|(_, r, _, _)| r);
    }
    top.meta.complete = !interrupted && failure.is_none();
    if interrupted {
        top.notes.push(format!(
            "{}: results cover the time measured so far",
            crate::exit::interrupted()
        ));
    }
    if let Some(f) = &failure {
        let which = match plans.len() {
            1 => "the test".to_string(),
            n => format!("part {} of {n}", measured_parts + 1),
        };
        top.notes.push(format!(
            "{which} was not measured: {}",
            crate::exit::message(&f.error)
        ));
    }
    netceil_analyze::analyze_into(&mut top);
    if let Some(m) = &metrics {
        m.set_findings(&top.findings);
    }
    // A test refused before any load went out has left nothing in the store.
    let stored = h.rec.finish(&top);
    let measured = top.results.is_some();
    if measured || failure.is_none() {
        emit(&top, common.json, stored.as_deref(), store.as_ref())?;
    }
    if let Some(m) = metrics {
        m.linger(args.metrics.metrics_linger.unwrap_or_default());
    }
    match failure {
        Some(f) => Err(f),
        None => Ok(crate::observe::store_outcome(
            common.no_store,
            stored.is_some(),
        )),
    }
}

pub(crate) fn now_unix_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A run id that sorts by time and is unique enough to share a database: `20261121-231502-3fa9c1`.
pub(crate) fn new_run_id(started: f64) -> String {
    let salt = (netceil_load::clock::now_ns() ^ (u64::from(std::process::id()) << 20)) & 0xFF_FFFF;
    format!("{}-{salt:06x}", time::compact_utc(started))
}

/// A 16-bit id stamped into every datagram so packets of other runs are not counted as ours.
/// A UDP train's configuration for a search or a sweep step: the payload, the pacing and the
/// receiver's buffer, with the common flags (target, IPv6) and the run's wire id; checked.
pub(crate) fn udp_train_config(
    common: &CommonRunArgs,
    payload_bytes: usize,
    pacing: crate::cli::PacingArg,
    rcvbuf: Option<usize>,
    rcvbuf_force: bool,
    wire_id: u16,
) -> Result<udp::UdpConfig, Failure> {
    let cfg = udp::UdpConfig {
        payload_bytes,
        pacing: pacing.into(),
        ipv6: common.ipv6,
        target: common.to,
        rcvbuf,
        rcvbuf_force,
        run_id: wire_id,
        ..udp::UdpConfig::default()
    };
    cfg.validate().map_err(load_failure)?;
    Ok(cfg)
}

/// The next part of `top`: its meta (without the NIC list, which the parent holds), its slice
/// of the parent's series from `from_s` to `to_s`, its workload and results, complete.
pub(crate) fn part_of(
    top: &Run,
    spec: WorkloadSpec,
    results: Results,
    from_s: f64,
    to_s: f64,
) -> Run {
    let mut part = Run::new(
        format!("{}.{}", top.run_id, top.parts.len() + 1),
        RunSource::Live,
    );
    part.meta = top.meta.clone();
    part.meta.host.nics.clear();
    part.meta.complete = true;
    part.series = top
        .series
        .window(from_s, to_s + top.series.interval_s / 2.0);
    part.workload = Some(spec);
    let mut results = results;
    // The part's series starts at `from_s`; so does the far end's place on its clock.
    if let Some(t0) = results.far.as_mut().and_then(|f| f.near_t0_s.as_mut()) {
        *t0 -= from_s;
    }
    part.results = Some(results);
    part
}

/// A new live run with its identity and meta filled in (start time, host, version, labels),
/// and the 16-bit id its datagrams carry.
/// A live run with no labels: for commands without the run flags.
pub(crate) fn new_live_run_bare() -> (Run, u16) {
    new_live_run_labelled(&[])
}

pub(crate) fn new_live_run(common: &CommonRunArgs) -> (Run, u16) {
    new_live_run_labelled(&common.labels)
}

fn new_live_run_labelled(labels: &[(String, String)]) -> (Run, u16) {
    let started = now_unix_s();
    let run_id = new_run_id(started);
    let wire_id = wire_run_id(&run_id);
    let mut top = Run::new(run_id, RunSource::Live);
    top.meta.started_unix_s = started;
    top.meta.host = host::host_info();
    // Held to some CPUs (taskset, a cpuset), the run's load threads may use only those.
    top.meta.workload_cpus = netceil_probe::affinity::workload_cpus(
        &netceil_probe::ProcFs::new(),
        &[std::process::id()],
    );
    top.meta.netceil_version = env!("CARGO_PKG_VERSION").to_string();
    top.meta.labels = labels.iter().cloned().collect();
    (top, wire_id)
}

pub(crate) fn wire_run_id(run_id: &str) -> u16 {
    run_id
        .bytes()
        .fold(0x811c_u16, |h, b| h.rotate_left(5) ^ u16::from(b))
}

pub(crate) fn obj(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match v {
        serde_json::Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

pub(crate) fn plan(w: &Workload, common: &CommonRunArgs, wire_id: u16) -> Result<Plan, Failure> {
    match w {
        Workload::Udp(a) => udp_plan(a, common, wire_id),
        Workload::Tcp(a) => tcp_plan(a, common),
        Workload::Rr(a) => rr_plan(a, common),
    }
}

/// The default suite's parts, parsed through clap so they run exactly what the flags mean.
fn suite_plans(common: &CommonRunArgs, wire_id: u16) -> Result<Vec<Plan>, Failure> {
    use clap::Parser;
    let secs = format!("{}s", SUITE_PART.as_secs());
    let argvs: [&[&str]; 3] = [
        &[
            "netceil",
            "run",
            "udp",
            "--frame-size",
            "64",
            "--duration",
            &secs,
        ],
        &["netceil", "run", "tcp", "--duration", &secs],
        &["netceil", "run", "rr", "--duration", &secs],
    ];
    argvs
        .iter()
        .map(|argv| {
            let cli = crate::cli::Cli::try_parse_from(*argv)
                .map_err(|e| Failure::from(anyhow!("internal: {e}")))?;
            match cli.command {
                crate::cli::Command::Run(RunArgs {
                    workload: Some(w), ..
                }) => plan(&w, common, wire_id),
                _ => Err(Failure::from(anyhow!(
                    "internal: a suite part did not parse to a workload"
                ))),
            }
        })
        .collect()
}

/// Resolves --size / --frame-size into the UDP payload.
pub(crate) fn udp_payload(a: &UdpArgs, ipv6: bool, default_frame: usize) -> Result<usize, Failure> {
    match (a.size, a.frame_size) {
        (Some(s), _) => Ok(s),
        (None, Some(f)) => frame_to_udp_payload(f, ipv6).ok_or_else(|| {
            Failure::usage(anyhow!(
                "--frame-size {f} cannot carry the Ethernet, IP and UDP headers ({} bytes)",
                udp_payload_to_frame(0, ipv6)
            ))
        }),
        (None, None) => Ok(frame_to_udp_payload(default_frame, ipv6).unwrap_or(18)),
    }
}

fn udp_plan(a: &UdpArgs, common: &CommonRunArgs, wire_id: u16) -> Result<Plan, Failure> {
    let payload_bytes = udp_payload(a, common.ipv6, 64)?;
    if let Some(r) = a.rate {
        // A bit rate is a packet rate only once the payload is known.
        let pps = r.packets_per_second(payload_bytes);
        if pps > netceil_model::MAX_PACKETS_PER_S {
            return Err(Failure::usage(anyhow!(
                "--rate {r} is {} at {payload_bytes}-byte payloads, above {}, the fastest rate netceil takes",
                Rate::PacketsPerSecond(pps),
                Rate::PacketsPerSecond(netceil_model::MAX_PACKETS_PER_S)
            )));
        }
    }
    let cfg = udp::UdpConfig {
        payload_bytes,
        rate: a.rate,
        interval_ns: a.interval.map(|d| d.as_nanos() as f64),
        pacing: a.pacing.into(),
        burst: a.burst,
        count: a.count,
        duration: a.duration,
        flows: a.flows,
        threads: a.threads,
        ipv6: common.ipv6,
        target: common.to,
        rcvbuf: a.rcvbuf,
        rcvbuf_force: a.rcvbuf_force,
        sndbuf: a.sndbuf,
        run_id: wire_id,
        gso: a.gso,
    };
    cfg.validate().map_err(load_failure)?;
    let params = obj(json!({
        "payload_bytes": cfg.payload_bytes,
        "frame_bytes": udp_payload_to_frame(cfg.payload_bytes, cfg.ipv6),
        "rate": a.rate.map(|r| r.to_string()), "interval_ns": cfg.interval_ns, "pacing": cfg.pacing,
        "burst": cfg.burst, "count": cfg.count, "duration_s": cfg.duration.as_secs_f64(),
        "flows": cfg.flows, "threads": cfg.threads, "ipv6": cfg.ipv6,
        "target": cfg.target.map(|t| t.to_string()), "rcvbuf": cfg.rcvbuf, "rcvbuf_force": cfg.rcvbuf_force, "gso": cfg.gso,
    }));
    Ok(Plan::Udp(cfg, params))
}

pub(crate) fn tcp_plan(a: &TcpArgs, common: &CommonRunArgs) -> Result<Plan, Failure> {
    let rate_per_flow_bps = a.rate_per_flow;
    let cfg = tcp::TcpConfig {
        flows: a.flows,
        msg_size: a.msg_size,
        rate_per_flow_bps,
        duration: a.duration,
        threads: a.threads,
        ipv6: common.ipv6,
        target: common.to,
        pacing: match a.pacing {
            TcpPacingArg::Auto => tcp::TcpPacingChoice::Auto,
            TcpPacingArg::Kernel => tcp::TcpPacingChoice::Kernel,
            TcpPacingArg::App => tcp::TcpPacingChoice::Application,
        },
        nodelay: false,
    };
    cfg.validate().map_err(load_failure)?;
    let params = obj(json!({
        "flows": cfg.flows, "msg_size": cfg.msg_size, "rate_per_flow_bps": rate_per_flow_bps,
        "duration_s": cfg.duration.as_secs_f64(), "threads": cfg.threads, "ipv6": cfg.ipv6,
        "target": cfg.target.map(|t| t.to_string()),
    }));
    Ok(Plan::Tcp(cfg, params))
}

fn rr_plan(a: &RrArgs, common: &CommonRunArgs) -> Result<Plan, Failure> {
    let rate_tps = a.rate;
    let cfg = rr::RrConfig {
        proto: match a.proto {
            ProtoArg::Tcp => rr::RrProto::Tcp,
            ProtoArg::Udp => rr::RrProto::Udp,
        },
        size: a.size,
        flows: a.flows,
        rate_tps,
        duration: a.duration,
        ipv6: common.ipv6,
        target: common.to,
        run_id: None,
    };
    cfg.validate().map_err(load_failure)?;
    let params = obj(json!({
        "proto": format!("{:?}", a.proto).to_lowercase(), "size": cfg.size, "flows": cfg.flows,
        "rate_tps": rate_tps, "duration_s": cfg.duration.as_secs_f64(), "ipv6": cfg.ipv6,
        "target": cfg.target.map(|t| t.to_string()),
    }));
    Ok(Plan::Rr(cfg, params))
}

/// Runs `measure` here, or, with a target, as a test granted by the `netceil serve` there:
/// the load goes to the granted data port and the far end's report joins the results.
fn via_serve<C: Clone>(
    cfg: &C,
    target: Option<std::net::SocketAddr>,
    spec: impl FnOnce(&C) -> netceil_ctl::TestSpec,
    retarget: impl FnOnce(&mut C, std::net::SocketAddr),
    h: &mut Harness,
    measure: impl FnOnce(&C, &mut Harness) -> Result<Results, Failure>,
) -> Result<Results, Failure> {
    let Some(control) = target else {
        h.measured = true;
        return measure(cfg, h);
    };
    let session = match remote::Session::open(control, h.key.as_ref(), spec(cfg)) {
        Ok(s) => s,
        Err(f) => {
            // Refused (or no server) before any load went out: a run that measured nothing
            // is not kept.
            if !h.measured {
                h.rec.abandon();
            }
            return Err(f);
        }
    };
    h.measured = true;
    let granted_at = h.rec.elapsed_s();
    let mut cfg = cfg.clone();
    retarget(&mut cfg, session.data_addr());
    // On an error the session is dropped: the server sees the control connection close and
    // ends the test.
    let mut results = measure(&cfg, h)?;
    remote::attach(&mut results, session.finish(), granted_at);
    Ok(results)
}

pub(crate) fn measure_udp(cfg: &udp::UdpConfig, h: &mut Harness) -> Result<Results, Failure> {
    let interval = h.interval;
    via_serve(
        cfg,
        cfg.target,
        |c| remote::udp_spec(c, interval),
        |c, a| c.target = Some(a),
        h,
        measure_udp_here,
    )
}

pub(crate) fn measure_tcp(cfg: &tcp::TcpConfig, h: &mut Harness) -> Result<Results, Failure> {
    let interval = h.interval;
    via_serve(
        cfg,
        cfg.target,
        |c| remote::tcp_spec(c, interval),
        |c, a| c.target = Some(a),
        h,
        measure_tcp_here,
    )
}

pub(crate) fn measure_rr(cfg: &rr::RrConfig, h: &mut Harness) -> Result<Results, Failure> {
    let interval = h.interval;
    let mut cfg = cfg.clone();
    if cfg.target.is_some() && cfg.run_id.is_none() {
        // The server answers only the run id it granted.
        let n = netceil_ctl::fresh_nonce().map_err(Failure::from)?;
        cfg.run_id = Some(u16::from_le_bytes([n[0], n[1]]));
    }
    let run_id = cfg.run_id.unwrap_or(0);
    via_serve(
        &cfg,
        cfg.target,
        |c| remote::rr_spec(c, run_id, interval),
        |c, a| c.target = Some(a),
        h,
        measure_rr_here,
    )
}

fn measure_udp_here(cfg: &udp::UdpConfig, h: &mut Harness) -> Result<Results, Failure> {
    let title = format!(
        "udp {} B payload ({} B frame)",
        cfg.payload_bytes,
        udp_payload_to_frame(cfg.payload_bytes, cfg.ipv6)
    );
    h.begin_part(&title, cfg.duration, UDP_COLUMNS);
    let before = kernel::Counters::read();
    let stop = crate::stop_flag();
    let mut last = (0.0, 0u64, 0u64, 0u64, 0u64);
    let outcome = udp::run_udp(cfg, &stop, &mut |p: &udp::Progress| {
        let dt = (p.elapsed_s - last.0).max(1e-9);
        let tx_pps = (p.tx_packets - last.1) as f64 / dt;
        let rx_pps = (p.rx_packets - last.2) as f64 / dt;
        let rx_bits = (p.rx_bytes - last.3) as f64 * 8.0 / dt;
        let lost_per_s = p.lost_so_far.saturating_sub(last.4) as f64 / dt;
        h.progress(
            p.elapsed_s,
            &LoadFigures {
                tx_pps: Some(tx_pps),
                rx_pps: Some(rx_pps),
                rx_bits_per_s: Some(rx_bits),
                lost: Some(p.lost_so_far),
                ..Default::default()
            },
            vec![
                (
                    MetricId::new(n::LOAD_TX_PPS),
                    Unit::PacketsPerSecond,
                    tx_pps,
                ),
                (
                    MetricId::new(n::LOAD_RX_PPS),
                    Unit::PacketsPerSecond,
                    rx_pps,
                ),
                (
                    MetricId::new(n::LOAD_RX_BITS_PER_S),
                    Unit::BitsPerSecond,
                    rx_bits,
                ),
                (
                    MetricId::new(n::LOAD_LOST_PER_S),
                    Unit::PerSecond,
                    lost_per_s,
                ),
            ],
        );
        last = (
            p.elapsed_s,
            p.tx_packets,
            p.rx_packets,
            p.rx_bytes,
            p.lost_so_far,
        );
    });
    h.end_part();
    let outcome = outcome.map_err(load_failure)?;
    let after = kernel::Counters::read();
    let mut results = outcome.results;
    kernel::attribute_udp(&before, &after, cfg.target.is_none(), &mut results);
    Ok(results)
}

fn measure_tcp_here(cfg: &tcp::TcpConfig, h: &mut Harness) -> Result<Results, Failure> {
    let title = format!(
        "tcp {} flow{}",
        cfg.flows,
        if cfg.flows == 1 { "" } else { "s" }
    );
    h.begin_part(&title, cfg.duration, TCP_COLUMNS);
    let before = kernel::Counters::read();
    let stop = crate::stop_flag();
    let results = tcp::run_tcp(cfg, &stop, &mut |p: &tcp::TcpProgress| {
        let mut values = vec![(
            MetricId::new(n::LOAD_TX_BITS_PER_S),
            Unit::BitsPerSecond,
            p.interval_tx_bits_per_s,
        )];
        if let Some(rx) = p.interval_rx_bits_per_s {
            values.push((
                MetricId::new(n::LOAD_RX_BITS_PER_S),
                Unit::BitsPerSecond,
                rx,
            ));
        }
        h.progress(
            p.elapsed_s,
            &LoadFigures {
                tx_bits_per_s: Some(p.interval_tx_bits_per_s),
                rx_bits_per_s: p.interval_rx_bits_per_s,
                ..Default::default()
            },
            values,
        );
    });
    h.end_part();
    let mut results = results.map_err(load_failure)?;
    let after = kernel::Counters::read();
    kernel::attribute_tcp(&before, &after, &mut results);
    Ok(results)
}

fn measure_rr_here(cfg: &rr::RrConfig, h: &mut Harness) -> Result<Results, Failure> {
    let proto = match cfg.proto {
        rr::RrProto::Tcp => "tcp",
        rr::RrProto::Udp => "udp",
    };
    h.begin_part(
        &format!("rr {proto} {} B", cfg.size),
        cfg.duration,
        RR_COLUMNS,
    );
    let stop = crate::stop_flag();
    let results = rr::run_rr(cfg, &stop, &mut |p: &rr::RrProgress| {
        let mut values = vec![(
            MetricId::new(n::LOAD_TRANSACTIONS_PER_S),
            Unit::PerSecond,
            p.interval_tps,
        )];
        if let Some(m) = p.interval_mean_latency_us {
            values.push((
                MetricId::new(n::LOAD_MEAN_LATENCY_US),
                Unit::Microseconds,
                m,
            ));
        }
        h.progress(
            p.elapsed_s,
            &LoadFigures {
                tps: Some(p.interval_tps),
                mean_latency_us: p.interval_mean_latency_us,
                lost: Some(p.lost),
                ..Default::default()
            },
            values,
        );
    });
    h.end_part();
    let mut results = results.map_err(load_failure)?;
    if results.payload_bytes.is_none() {
        results.payload_bytes = Some(cfg.size);
    }
    Ok(results)
}

/// What runs beside every workload: the recording, and the live output of the current part.
pub(crate) struct Harness<'s> {
    pub(crate) rec: Recording<'s>,
    /// The shared secret for a `netceil serve` at --to.
    key: Option<netceil_ctl::Key>,
    /// The sampling interval, which a far end is asked to use too.
    interval: Duration,
    json: bool,
    quiet: bool,
    wide: bool,
    part: Option<(Live, LiveTable)>,
    /// Whether any load has gone out yet (a test refused before that leaves no run).
    measured: bool,
}

impl<'s> Harness<'s> {
    pub(crate) fn start(
        common: &CommonRunArgs,
        store: Option<&'s Store>,
        run: &Run,
    ) -> Result<Harness<'s>, Failure> {
        crate::observe::check_interval(common.sample_interval, "--sample-interval")?;
        let key = match &common.key_file {
            Some(p) => Some(netceil_ctl::Key::from_file(p).map_err(Failure::usage)?),
            None => None,
        };
        // Probes first: a refusal (not root) stops the run before anything is stored.
        let probes = match &common.probes {
            Some(p) => {
                let s = crate::probes::ProbeSession::start(
                    &p.0,
                    common.lock_stacks,
                    &[std::process::id()],
                    common.sample_interval,
                )
                .map_err(|e| Failure::usage(anyhow::anyhow!(e)))?;
                eprintln!("netceil: {}", s.status);
                Some(s)
            }
            None => None,
        };
        let mut rec = Recording::start(
            common.sample_interval,
            Vec::new(),
            vec![std::process::id() as i32],
            store,
            run,
        )?;
        if let Some(p) = probes {
            rec.set_probes(p);
        }
        Ok(Harness {
            rec,
            key,
            interval: common.sample_interval,
            json: common.json,
            quiet: common.quiet,
            wide: common.wide,
            part: None,
            measured: false,
        })
    }

    fn begin_part(&mut self, title: &str, length: Duration, load: &'static [&'static str]) {
        let live = Live::new(title, length, self.json, self.quiet);
        let table = LiveTable::new(Vec::new(), load, self.wide, terminal_width(self.json));
        self.part = Some((live, table));
    }

    /// One progress report of the workload: a table line with the system row of the same
    /// interval; if the sampler's row does not come in time its columns print as not measured.
    fn progress(&mut self, elapsed_s: f64, load: &LoadFigures, values: Vec<(MetricId, Unit, f64)>) {
        let mut rows = self.rec.rows(Duration::from_millis(250));
        self.rec.attach_and_store(&mut rows, values);
        let mut shown = rows.pop().unwrap_or_default();
        shown.t_s = elapsed_s;
        if let Some((live, table)) = &mut self.part {
            for line in table.lines(&shown, load) {
                live.line(&line);
            }
            live.set_elapsed(elapsed_s);
        }
    }

    /// Ends the live lines, and streams the rows sampled since the last progress report to
    /// the store and the metrics endpoint: a search's or sweep's trial can be shorter than
    /// one report, and its rows must not wait for the end of the whole command.
    fn end_part(&mut self) {
        if let Some((live, _)) = self.part.take() {
            live.finish();
        }
        let rows = self.rec.rows(Duration::ZERO);
        self.rec.store_rows(&rows);
    }
}

/// Prints the run as JSON or as the human summary.
pub(crate) fn emit(
    run: &Run,
    as_json: bool,
    stored: Option<&str>,
    store: Option<&Store>,
) -> Result<(), Failure> {
    let mut out = crate::out::stdout();
    if as_json {
        serde_json::to_writer_pretty(&mut out, run).context("writing JSON to stdout")?;
        writeln!(out).context("writing to stdout")?;
    } else {
        write!(out, "{}", summary::render(run)).context("writing to stdout")?;
        write!(out, "{}", summary::verdict(run)).context("writing to stdout")?;
        emit_plain(&mut out, stored, store)?;
    }
    Ok(())
}

/// The last line of a human summary: where the run was stored, or that it was not.
pub(crate) fn emit_plain(
    out: &mut impl Write,
    stored: Option<&str>,
    store: Option<&Store>,
) -> Result<(), Failure> {
    match (stored, store) {
        (Some(id), Some(s)) => writeln!(out, "stored as {id} in {}", s.path().display()),
        _ => writeln!(out, "not stored"),
    }
    .context("writing to stdout")?;
    Ok(())
}

/// `--metrics-listen` for a search or a sweep: the live series from the recording while it
/// runs. No live verdict: a window that spans trials at different rates has no one ceiling.
pub(crate) fn steps_metrics(
    args: &crate::cli::MetricsArgs,
    h: &mut Harness,
) -> Result<Option<crate::metrics::MetricsServer>, Failure> {
    let m = crate::metrics::from_flag(args.metrics_listen)?;
    if let Some(m) = &m {
        h.rec.publish_to(m.publisher());
    }
    Ok(m)
}

/// The end of a search or sweep on its endpoint: the findings it stands on, then the linger.
pub(crate) fn steps_metrics_done(
    m: Option<crate::metrics::MetricsServer>,
    top: &Run,
    args: &crate::cli::MetricsArgs,
) {
    if let Some(m) = m {
        m.set_findings(&headline_findings(top));
        m.linger(args.metrics_linger.unwrap_or_default());
    }
}

/// The findings a run with parts stands on: its own; else those of the parts that stopped
/// its knees (each cause once, at its most confident); else its last analyzed part's.
pub(crate) fn headline_findings(top: &Run) -> Vec<netceil_model::Finding> {
    if !top.findings.is_empty() {
        return top.findings.clone();
    }
    let stoppers: Vec<&Run> = top
        .knees
        .iter()
        .filter_map(|k| k.stopped_by.as_deref())
        .filter_map(|s| s.split_once(" at ").map(|(id, _)| id))
        .filter_map(|id| top.parts.iter().find(|p| p.run_id == id))
        .collect();
    let from: Vec<&Run> = if stoppers.is_empty() {
        top.parts
            .iter()
            .rev()
            .find(|p| !p.findings.is_empty())
            .into_iter()
            .collect()
    } else {
        stoppers
    };
    let mut out: Vec<netceil_model::Finding> = Vec::new();
    for f in from.iter().flat_map(|p| &p.findings) {
        match out.iter_mut().find(|o| o.cause == f.cause) {
            Some(o) if o.confidence >= f.confidence => {}
            Some(o) => *o = f.clone(),
            None => out.push(f.clone()),
        }
    }
    out.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_model::{Finding, Knee};

    fn finding(cause: &str, confidence: f64) -> Finding {
        Finding {
            cause: cause.into(),
            summary: String::new(),
            confidence,
            evidence: Vec::new(),
            alternatives: Vec::new(),
            advice: Vec::new(),
            next: None,
            not_checked: Vec::new(),
        }
    }

    fn part(id: &str, findings: Vec<Finding>) -> Run {
        let mut p = Run::new(id, RunSource::Live);
        p.findings = findings;
        p
    }

    #[test]
    fn a_search_stands_on_the_trials_that_stopped_its_knees() {
        let mut top = Run::new("s", RunSource::Live);
        top.parts = vec![
            part("s.1", vec![finding("no_ceiling", 0.3)]),
            part(
                "s.2",
                vec![finding("buffer_drops", 0.5), finding("hot_cpu", 0.6)],
            ),
            part("s.3", vec![finding("buffer_drops", 0.7)]),
            part("s.4", vec![finding("no_ceiling", 0.3)]),
        ];
        let knee = |stopper: Option<&str>| Knee {
            size_bytes: 64,
            point: "app".into(),
            loss_tolerance: 0.0,
            min_interval_us: None,
            rate_pps: None,
            bits_per_s: None,
            loss_ratio: None,
            trials: 1,
            generator_limited: false,
            verified: false,
            upper_pps: None,
            stopped_by: stopper.map(|s| format!("{s} at 40.0 kpps: whatever")),
            note: None,
        };
        top.knees = vec![knee(Some("s.2")), knee(Some("s.3")), knee(None)];
        let causes = |f: Vec<Finding>| {
            f.iter()
                .map(|f| (f.cause.clone(), f.confidence))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            causes(headline_findings(&top)),
            vec![("buffer_drops".into(), 0.7), ("hot_cpu".into(), 0.6)]
        );
        // No knee stopped by a trial: the last analyzed trial.
        top.knees = vec![knee(None)];
        assert_eq!(
            causes(headline_findings(&top)),
            vec![("no_ceiling".into(), 0.3)]
        );
        // A run's own findings come first.
        top.findings = vec![finding("link", 0.9)];
        assert_eq!(causes(headline_findings(&top)), vec![("link".into(), 0.9)]);
    }
}
