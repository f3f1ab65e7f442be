//! The command line's side of the engine: settings from flags, the one skeleton every
//! measuring command runs through (store, session, observers, metrics endpoint, the run's
//! output and exit), and the run's summary or JSON.

use anyhow::{anyhow, Context};
use netceil_engine::{Campaign, Observer, Replay, SessionConfig, Trial};
use netceil_model::params::{
    LoadParams, RrParams, RrProtocol, RrSearch, RrulParams, SearchKind, SearchParams, SweepParams,
    SweepTcpParams, TcpPacingRequest, TcpParams, TcpSearch, UdpParams, UdpSearch,
};
use netceil_model::{frame_to_udp_payload, udp_payload_to_frame, Run, TcpDirection};
use netceil_probe::Row;
use netceil_store::Store;
use std::io::Write;
use std::time::Duration;

use crate::cli::{
    CommonRunArgs, MetricsArgs, ProtoArg, RrArgs, RrulArgs, TcpArgs, TcpPacingArg, UdpArgs,
};
use crate::{Done, Failure, Outcome};
use netceil_metrics::{MetricsServer, Publisher};

/// Opens the run store unless told not to. A store that cannot be opened does not stop the
/// measurement: the reason is printed and the run goes on unstored.
pub fn open_store(no_store: bool) -> Option<Store> {
    if no_store {
        return None;
    }
    match Store::open_default() {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("netceil: this run will not be stored: {e}");
            None
        }
    }
}

/// Opens the store only to read it: nothing is created, converted or written. A broken store
/// is an error, not a warning; a missing one has no runs.
pub fn open_for_reading() -> Result<Store, Failure> {
    Store::open_default_for_reading().map_err(|e| Failure::from(anyhow::Error::new(e)))
}

/// A run spec (id, unique prefix, or `last`) to a full id; an unknown or ambiguous one is the
/// user's input at fault (exit 2).
pub fn resolve(store: &Store, spec: &str) -> Result<String, Failure> {
    store.resolve(spec).map_err(Failure::usage)
}

/// How a command that records a run ends when nothing else went wrong: a run that was to be
/// stored and was not (the store could not be opened, or a write failed) is a failure, exit
/// code 1; why was said on stderr when it happened, and the summary says "not stored".
pub fn store_outcome(no_store: bool, stored: bool) -> Done {
    if no_store || stored {
        Done::Success
    } else {
        Done::Reported
    }
}

/// The session the common run flags ask for.
pub fn session_config(common: &CommonRunArgs) -> SessionConfig {
    SessionConfig {
        key_file: common.key_file.clone(),
        probes: common.probes.as_ref().map(|p| p.0.clone()),
        lock_stacks: common.lock_stacks,
        ..SessionConfig::new(common.sample_interval, crate::stop_flag())
    }
}

/// How a command shows its trials while they run.
#[derive(Debug, Clone, Copy)]
pub enum Progress {
    /// Each trial's live table (`netceil run`), and a live verdict on the metrics endpoint.
    Table,
    /// The planner's own step lines (search, sweep) under a bar of at most `at_most` steps:
    /// no table per trial; no live verdict, since a window that spans trials at different
    /// rates has no one ceiling.
    Steps { what: &'static str, at_most: u64 },
}

/// The metrics endpoint as a session's observer: every row recorded is published.
struct MetricsRows(Publisher);

/// An observer that publishes every row recorded on `m`.
pub fn metrics_rows<'s>(m: &MetricsServer) -> Box<dyn Observer + 's> {
    Box::new(MetricsRows(m.publisher()))
}

impl Observer for MetricsRows {
    fn rows(&mut self, rows: &[Row]) {
        self.0.update_rows(rows);
    }
}

/// A measuring command between its start and its output.
pub struct Command<'s> {
    pub campaign: Campaign<'s>,
    metrics: Option<MetricsServer>,
    store: Option<&'s Store>,
    common: CommonRunArgs,
    metrics_args: MetricsArgs,
}

/// Starts a measuring command's campaign on `top`: the session (probes and key checked
/// first), its observers and the metrics endpoint.
pub fn start<'s>(
    common: &CommonRunArgs,
    metrics_args: &MetricsArgs,
    store: Option<&'s Store>,
    top: Run,
    replay: Replay,
    progress: Progress,
) -> Result<Command<'s>, Failure> {
    let metrics = crate::metrics::from_flag(metrics_args)?;
    let stream = open_stream(common.stream.as_deref(), common.json, false)?;
    let mut campaign = Campaign::start(&session_config(common), store, top, replay)?;
    if let Some(status) = &campaign.session.probe_status {
        eprintln!("netceil: {status}");
    }
    match progress {
        // With the stream on stdout, the table goes to stderr as with --json.
        Progress::Table => campaign
            .session
            .observe(Box::new(netceil_engine::TerminalParts::new(
                common.json || stream_on_stdout(common),
                common.quiet,
                common.wide,
                common.verbose,
                || Box::new(crate::out::stdout()),
            ))),
        Progress::Steps { what, at_most } => {
            campaign
                .session
                .observe(Box::new(netceil_engine::Steps::new(
                    what,
                    at_most,
                    common.quiet,
                )))
        }
    }
    if let Some(s) = stream {
        campaign.session.observe(Box::new(s));
    }
    if let Some(m) = &metrics {
        campaign.session.observe(metrics_rows(m));
        if let Progress::Table = progress {
            // The load engine's threads are netceil's own, not the machine's: as at the end.
            let live =
                netceil_metrics::LiveVerdict::new(campaign.top.clone(), common.sample_interval)
                    .prepare(|r| {
                        r.meta.own_thread_ids = netceil_load::threads::spawned_thread_ids()
                    });
            m.analyze_live(live);
        }
    }
    Ok(Command {
        campaign,
        metrics,
        store,
        common: common.clone(),
        metrics_args: metrics_args.clone(),
    })
}

impl Command<'_> {
    /// Stores the finished run and prints it: as JSON with `--json`, else what `render`
    /// makes of it and where it was stored. The metrics endpoint gets the findings the run
    /// stands on, then lingers as asked. `print` false prints nothing (a run refused
    /// before any load went out).
    pub fn done(self, print: bool, render: impl FnOnce(&Run) -> String) -> Outcome {
        self.done_stored(print, |run, _| render(run))
    }

    /// [`Command::done`], with the id the run was stored under (if it was) for `render`.
    pub fn done_stored(
        self,
        print: bool,
        render: impl FnOnce(&Run, Option<&str>) -> String,
    ) -> Outcome {
        let (top, stored) = self.campaign.finish();
        if let Some(path) = &self.common.run_out {
            let text = serde_json::to_vec(&top).context("encoding the run")?;
            std::fs::write(path, text)
                .with_context(|| format!("writing the run to {}", path.display()))?;
        }
        if print {
            if self.common.json {
                emit_json(&top)?;
            } else if stream_on_stdout(&self.common) {
                // stdout is the stream's: the summary goes to stderr.
                eprint!("{}", render(&top, stored.as_deref()));
            } else {
                let mut out = crate::out::stdout();
                write!(out, "{}", render(&top, stored.as_deref())).context("writing to stdout")?;
                emit_plain(&mut out, stored.as_deref(), self.store)?;
            }
        }
        if let Some(m) = self.metrics {
            m.set_findings(&netceil_engine::headline_findings(&top));
            crate::metrics::linger(m, self.metrics_args.metrics_linger);
        }
        Ok(store_outcome(self.common.no_store, stored.is_some()))
    }
}

/// Whether `--stream -` writes the stream to stdout.
pub fn stream_on_stdout(common: &CommonRunArgs) -> bool {
    common.stream.as_deref() == Some(std::path::Path::new("-"))
}

/// The JSON stream `--stream` asks for: to stdout for `-` (refused with `--json`, whose
/// document is stdout's), else to that file, created or truncated; `watching`: a watch's,
/// a progress line per sampled row.
pub fn open_stream(
    path: Option<&std::path::Path>,
    json: bool,
    watching: bool,
) -> Result<Option<netceil_engine::JsonStream<Box<dyn Write>>>, Failure> {
    let Some(path) = path else {
        return Ok(None);
    };
    let out: Box<dyn Write> = if path == std::path::Path::new("-") {
        if json {
            return Err(Failure::usage(anyhow!(
                "--stream - and --json both write to stdout: give --stream a file, or leave out --json"
            )));
        }
        Box::new(std::io::stdout())
    } else {
        let f = std::fs::File::create(path).map_err(|e| {
            Failure::usage(anyhow!(
                "--stream {}: cannot create it: {e}; expected a file that can be written, or -",
                path.display()
            ))
        })?;
        Box::new(std::io::BufWriter::new(f))
    };
    let stream = if watching {
        netceil_engine::JsonStream::watching(out)
    } else {
        netceil_engine::JsonStream::new(out)
    };
    Ok(Some(stream.named(format!("--stream {}", path.display()))))
}

/// The run as one JSON document on stdout.
pub fn emit_json(run: &Run) -> Result<(), Failure> {
    let mut out = crate::out::stdout();
    serde_json::to_writer_pretty(&mut out, run).context("writing JSON to stdout")?;
    writeln!(out).context("writing to stdout")?;
    Ok(())
}

/// The last line of a human summary: where the run was stored, or that it was not.
pub fn emit_plain(
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

/// Resolves --size / --frame-size into the UDP payload.
pub fn udp_payload(a: &UdpArgs, ipv6: bool, default_frame: usize) -> Result<usize, Failure> {
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

/// The parameters `netceil run udp` flags give.
pub fn udp_params(a: &UdpArgs, common: &CommonRunArgs) -> Result<UdpParams, Failure> {
    Ok(UdpParams {
        payload_bytes: udp_payload(a, common.ipv6, 64)?,
        frame_bytes: 0,
        rate: a.rate,
        interval_ns: a.interval.map(|d| d.as_nanos() as f64),
        pacing: a.pacing.into(),
        burst: a.burst,
        count: a.count,
        duration_s: a.duration.as_secs_f64(),
        flows: a.flows,
        threads: a.threads,
        ipv6: common.ipv6,
        target: common.to.map(|t| t.to_string()),
        rcvbuf: a.rcvbuf,
        rcvbuf_force: a.rcvbuf_force,
        sndbuf: a.sndbuf,
        gso: a.gso,
        gso_segments: a.gso_segments,
        gro: a.gro,
        rx_cpu: None,
        tx_cpu: None,
    }
    .with_frame())
}

/// The parameters `netceil run tcp` flags give.
pub fn tcp_params(a: &TcpArgs, common: &CommonRunArgs) -> TcpParams {
    TcpParams {
        flows: a.flows,
        msg_size: a.msg_size,
        rate_per_flow_bps: a.rate_per_flow,
        duration_s: a.duration.as_secs_f64(),
        threads: a.threads,
        ipv6: common.ipv6,
        target: common.to.map(|t| t.to_string()),
        pacing: match a.pacing {
            TcpPacingArg::Auto => TcpPacingRequest::Auto,
            TcpPacingArg::Kernel => TcpPacingRequest::Kernel,
            TcpPacingArg::App => TcpPacingRequest::App,
        },
        rx_cpu: None,
        tx_cpu: None,
        congestion: a.congestion.clone(),
        direction: match (a.reverse, a.bidir) {
            (_, true) => TcpDirection::Both,
            (true, false) => TcpDirection::Down,
            (false, false) => TcpDirection::Up,
        },
        rcvbuf: a.rcvbuf,
        sink_wakes: a.sink_wakes,
    }
}

/// Longest idle phase of rrul (the probe alone).
const RRUL_IDLE_MAX: Duration = Duration::from_secs(2);

/// The parameters `netceil run rrul` flags give: the run's length split into the idle phase
/// (2 s, or a fifth of the run if shorter) and the loaded phase.
pub fn rrul_params(a: &RrulArgs, common: &CommonRunArgs) -> RrulParams {
    let idle = RRUL_IDLE_MAX.min(a.duration / 5);
    RrulParams {
        flows: a.flows,
        duration_s: a.duration.saturating_sub(idle).as_secs_f64(),
        idle_s: idle.as_secs_f64(),
        rr_rate_tps: a.rr_rate,
        rate_per_flow_bps: a.rate_per_flow,
        ipv6: common.ipv6,
        target: common.to.map(|t| t.to_string()),
    }
}

/// The parameters `netceil run rr` flags give.
pub fn rr_params(a: &RrArgs, common: &CommonRunArgs) -> RrParams {
    RrParams {
        proto: match a.proto {
            ProtoArg::Tcp => RrProtocol::Tcp,
            ProtoArg::Udp => RrProtocol::Udp,
        },
        size: a.size,
        flows: a.flows,
        rate_tps: a.rate,
        duration_s: a.duration.as_secs_f64(),
        ipv6: common.ipv6,
        target: common.to.map(|t| t.to_string()),
        rx_cpu: None,
        tx_cpu: None,
        spin: a.spin,
    }
}

/// The parameters a workload's flags give.
pub fn load_params(
    w: &crate::cli::Workload,
    common: &CommonRunArgs,
) -> Result<LoadParams, Failure> {
    Ok(match w {
        crate::cli::Workload::Udp(a) => LoadParams::Udp(udp_params(a, common)?),
        crate::cli::Workload::Tcp(a) => LoadParams::Tcp(tcp_params(a, common)),
        crate::cli::Workload::Rr(a) => LoadParams::Rr(rr_params(a, common)),
        crate::cli::Workload::Rrul(a) => LoadParams::Rrul(rrul_params(a, common)),
    })
}

/// The trial a workload's flags describe, checked.
pub fn plan(
    w: &crate::cli::Workload,
    common: &CommonRunArgs,
    wire_id: u16,
) -> Result<Trial, Failure> {
    Ok(Trial::new(load_params(w, common)?, wire_id)?)
}

/// A loss tolerance from `0`, `0.5%` or `2 %`.
fn parse_tolerance(text: &str) -> Result<f64, Failure> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok().map(|v| v / 100.0),
        None if t.parse::<f64>().ok() == Some(0.0) => Some(0.0),
        None => {
            return Err(Failure::usage(anyhow!(
                "--loss {t}: write a tolerance as a percentage (0.5%), or 0 for no loss"
            )))
        }
    };
    match value {
        Some(v) if (0.0..1.0).contains(&v) => Ok(v),
        Some(v) => Err(Failure::usage(anyhow!(
            "--loss {t}: a tolerance of {} % is not below 100 %",
            v * 100.0
        ))),
        None => Err(Failure::usage(anyhow!(
            "--loss {t}: not a percentage; expected e.g. 0.5%"
        ))),
    }
}

/// `--precision 1%` as a fraction.
fn parse_precision(text: &str) -> Result<f64, Failure> {
    let p = text.trim();
    Ok(p.strip_suffix('%')
        .and_then(|x| x.trim().parse::<f64>().ok())
        .ok_or_else(|| {
            Failure::usage(anyhow!("--precision {p}: expected a percentage, e.g. 1%"))
        })?
        / 100.0)
}

/// What a search runs with, from the command line.
pub fn search_params(
    a: &crate::cli::SearchUdpArgs,
    target: Option<String>,
    ipv6: bool,
) -> Result<SearchParams, Failure> {
    let tolerances = ascending(
        &a.loss
            .iter()
            .map(|x| parse_tolerance(x))
            .collect::<Result<Vec<f64>, Failure>>()?,
    );
    let precision = parse_precision(&a.precision)?;
    Ok(SearchParams {
        kind: SearchKind::Udp(UdpSearch {
            sizes: a.sizes.clone().unwrap_or_else(|| a.frame_sizes.clone()),
            loss: tolerances,
            min_pps: a.min_rate,
            max_pps: a.max_rate,
            point: "app".into(),
            pacing: a.pacing.into(),
            rcvbuf: a.rcvbuf,
            rcvbuf_force: a.rcvbuf_force,
        }),
        trial_s: a.trial.as_secs_f64(),
        initial_trial_s: a.initial_trial.as_secs_f64(),
        precision,
        max_trials: a.max_trials,
        target,
        resumed_from: None,
        ipv6,
    })
}

/// Bounds in ascending order, each once.
fn ascending(v: &[f64]) -> Vec<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// What a TCP or request/response search runs with, from the command line.
pub fn goal_search_params(
    w: &crate::cli::SearchWorkload,
    target: Option<String>,
    ipv6: bool,
) -> Result<SearchParams, Failure> {
    use crate::cli::SearchWorkload as W;
    let (kind, t) = match w {
        W::Udp(a) => return search_params(a, target, ipv6),
        W::Tcp(a) => (
            SearchKind::Tcp(TcpSearch {
                flows: a.flows,
                msg_size: a.msg_size,
                retrans: ascending(&a.retrans),
                min_bps: a.min_rate,
                max_bps: a.max_rate,
            }),
            &a.trials,
        ),
        W::Rr(a) => (
            SearchKind::Rr(RrSearch {
                proto: match a.proto {
                    crate::cli::ProtoArg::Tcp => RrProtocol::Tcp,
                    crate::cli::ProtoArg::Udp => RrProtocol::Udp,
                },
                size: a.size,
                flows: a.flows,
                p99_s: ascending(&a.p99),
                min_tps: a.min_rate,
                max_tps: a.max_rate,
            }),
            &a.trials,
        ),
    };
    Ok(SearchParams {
        kind,
        trial_s: t.trial.as_secs_f64(),
        initial_trial_s: t.initial_trial.as_secs_f64(),
        precision: parse_precision(&t.precision)?,
        max_trials: t.max_trials,
        target,
        resumed_from: None,
        ipv6,
    })
}

/// What a UDP sweep runs with, from the command line.
pub fn sweep_params(
    a: &crate::cli::SweepUdpArgs,
    target: Option<String>,
    ipv6: bool,
) -> SweepParams {
    SweepParams {
        workload: "udp".into(),
        sizes: a.sizes.clone(),
        interval: a.interval.clone(),
        count: a.count,
        cycles: a.cycles,
        pacing: a.pacing.into(),
        rcvbuf: a.rcvbuf,
        rcvbuf_force: a.rcvbuf_force,
        target,
        resumed_from: None,
        ipv6,
    }
}

/// A sweep over TCP flow counts, from its flags.
pub fn sweep_tcp_params(a: &crate::cli::SweepTcpArgs, common: &CommonRunArgs) -> SweepTcpParams {
    SweepTcpParams {
        workload: "tcp flows".into(),
        flows: a.flows.clone(),
        rate_per_flow: a.rate_per_flow,
        step_s: a.step_duration.as_secs_f64(),
        msg_size: a.msg_size,
        threads: a.threads,
        target: common.to.map(|t| t.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances_are_percentages() {
        assert_eq!(parse_tolerance("0").unwrap(), 0.0);
        assert!((parse_tolerance("0.5%").unwrap() - 0.005).abs() < 1e-15);
        assert!(parse_tolerance("0.5").is_err(), "a bare 0.5 is ambiguous");
        assert!(parse_tolerance("100%").is_err());
        assert!(parse_tolerance("x%").is_err());
    }
}
