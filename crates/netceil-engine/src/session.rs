//! A session owns what every measurement needs: the sampler and store writer (the
//! [`Recording`]), the probes, the far-end client and the observers. It measures [`Trial`]s.

use anyhow::anyhow;
use netceil_load::tcp::rrul::{run_rrul, RrulConfig, RrulProgress};
use netceil_load::{rr, tcp, udp};
use netceil_model::names as n;
use netceil_model::{udp_payload_to_frame, MetricId, Results, Run, Unit};
use netceil_probe::{ProcFs, Source};
use netceil_store::Store;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::observer::{LoadFigures, LoadKind, Observer, PartStart};
use crate::recording::{check_interval, LoadValues, Recording};
use crate::trial::Trial;
use crate::{kernel, remote, Error};

/// What a session is started with.
#[derive(Clone)]
pub struct SessionConfig {
    /// The sampling interval; a far end is asked to sample at it too.
    pub interval: Duration,
    /// The shared secret for a `netceil serve` at the trials' target.
    pub key_file: Option<PathBuf>,
    /// eBPF probes to attach (`--probe`), and how often a lock wait takes a stack.
    pub probes: Option<Vec<netceil_bpf::Probe>>,
    pub lock_stacks: u32,
    /// Set (by Ctrl-C, SIGTERM) to end the trial that runs and stop the campaign.
    pub stop: Arc<AtomicBool>,
    /// Where the machine's counters are read.
    pub source: Arc<dyn Source + Send + Sync>,
}

impl SessionConfig {
    /// A session sampling every `interval` on this machine, without probes or a key.
    pub fn new(interval: Duration, stop: Arc<AtomicBool>) -> SessionConfig {
        SessionConfig {
            interval,
            key_file: None,
            probes: None,
            lock_stacks: 0,
            stop,
            source: Arc::new(ProcFs::new()),
        }
    }
}

/// A running session.
pub struct Session<'s> {
    pub rec: Recording<'s>,
    key: Option<netceil_ctl::Key>,
    interval: Duration,
    stop: Arc<AtomicBool>,
    source: Arc<dyn Source + Send + Sync>,
    /// Whether any load has gone out yet (a test refused before that leaves no run).
    measured: bool,
    /// What the probes said when they attached (which, and which were refused).
    pub probe_status: Option<String>,
}

impl<'s> Session<'s> {
    /// Checks the configuration, attaches the probes and starts the recording of `run`.
    /// A refusal (a bad key file, probes without root) comes before anything is stored.
    pub fn start(
        cfg: &SessionConfig,
        store: Option<&'s Store>,
        run: &Run,
    ) -> Result<Session<'s>, Error> {
        check_interval(cfg.interval, "--sample-interval")?;
        let key = match &cfg.key_file {
            Some(p) => Some(netceil_ctl::Key::from_file(p).map_err(Error::usage)?),
            None => None,
        };
        let probes = match &cfg.probes {
            Some(p) => Some(
                crate::probes::ProbeSession::start(
                    p,
                    cfg.lock_stacks,
                    &[std::process::id()],
                    cfg.interval,
                    cfg.source.clone(),
                )
                .map_err(|e| Error::usage(anyhow!(e)))?,
            ),
            None => None,
        };
        let probe_status = probes.as_ref().map(|p| p.status.clone());
        let mut rec = Recording::start(
            cfg.source.clone(),
            cfg.interval,
            Vec::new(),
            vec![std::process::id() as i32],
            store,
            run,
        )?;
        if let Some(p) = probes {
            rec.set_probes(p);
        }
        Ok(Session {
            rec,
            key,
            interval: cfg.interval,
            stop: cfg.stop.clone(),
            source: cfg.source.clone(),
            measured: false,
            probe_status,
        })
    }

    /// Shows what the session measures to `observer` as well.
    pub fn observe(&mut self, observer: Box<dyn Observer + 's>) {
        self.rec.observe(observer);
    }

    /// Tells every observer a planner's step is done.
    pub fn step(&mut self, line: &str) {
        for o in self.rec.observers() {
            o.step(line);
        }
    }

    /// Tells every observer the planner's worst case for the time left, s.
    pub fn remaining(&mut self, at_most_s: f64) {
        for o in self.rec.observers() {
            o.remaining(at_most_s);
        }
    }

    /// Tells every observer what the planner does next.
    pub fn say(&mut self, line: &str) {
        for o in self.rec.observers() {
            o.say(line);
        }
    }

    /// Whether the session was asked to stop.
    pub fn stopping(&self) -> bool {
        self.stop.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The stop flag the trials watch.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Measures one trial here, or, with a target, as a test granted by the `netceil serve`
    /// there: the load goes to the granted data port and the far end's report joins the
    /// results.
    pub fn measure(&mut self, trial: &Trial) -> Result<Results, Error> {
        let interval = self.interval;
        match trial {
            Trial::Udp(cfg, _) => self.via_serve(
                cfg,
                cfg.target,
                |c| remote::udp_spec(c, interval),
                |c, a| c.target = Some(a),
                Session::measure_udp,
            ),
            Trial::Tcp(cfg, _) => {
                let mut r = self.via_serve(
                    cfg,
                    cfg.target,
                    |c| remote::tcp_spec(c, interval),
                    |c, a| c.target = Some(a),
                    Session::measure_tcp,
                )?;
                remote::far_sent(&mut r);
                Ok(r)
            }
            Trial::Rrul(cfg, _) => self.rrul_via_serve(cfg),
            Trial::Rr(cfg, _) => {
                let mut cfg = cfg.clone();
                if cfg.target.is_some() && cfg.run_id.is_none() {
                    // The server answers only the run id it granted.
                    let n = netceil_ctl::fresh_nonce().map_err(Error::runtime)?;
                    cfg.run_id = Some(u16::from_le_bytes([n[0], n[1]]));
                }
                let run_id = cfg.run_id.unwrap_or(0);
                self.via_serve(
                    &cfg,
                    cfg.target,
                    |c| remote::rr_spec(c, run_id, interval),
                    |c, a| c.target = Some(a),
                    Session::measure_rr,
                )
            }
        }
    }

    fn via_serve<C: Clone>(
        &mut self,
        cfg: &C,
        target: Option<std::net::SocketAddr>,
        spec: impl FnOnce(&C) -> netceil_ctl::TestSpec,
        retarget: impl FnOnce(&mut C, std::net::SocketAddr),
        measure: impl FnOnce(&mut Self, &C) -> Result<Results, Error>,
    ) -> Result<Results, Error> {
        let Some(control) = target else {
            self.measured = true;
            return measure(self, cfg);
        };
        let far = match remote::FarSession::open(control, self.key.as_ref(), spec(cfg)) {
            Ok(s) => s,
            Err(e) => return Err(self.refused(e)),
        };
        self.measured = true;
        let granted_at = self.rec.elapsed_s();
        let mut cfg = cfg.clone();
        retarget(&mut cfg, far.data_addr());
        // On an error the far session is dropped: the server sees the control connection
        // close and ends the test.
        let mut results = measure(self, &cfg)?;
        results.notes.extend(far.notes());
        remote::attach(&mut results, far.finish(), granted_at);
        Ok(results)
    }

    /// The far end refused (or no server answered) before any load went out: a run that
    /// measured nothing is not kept.
    fn refused(&mut self, e: Error) -> Error {
        if !self.measured {
            self.rec.abandon();
        }
        e
    }

    /// rrul against a `netceil serve`: two tests granted there, one for the bulk flows (up
    /// sunk, down sent by it) and one for the probe (echoed); the flows' far report is kept,
    /// the probe's summed up in a note.
    fn rrul_via_serve(&mut self, cfg: &RrulConfig) -> Result<Results, Error> {
        let Some(control) = cfg.tcp_target else {
            self.measured = true;
            return self.measure_rrul(cfg);
        };
        let interval = self.interval;
        let tcp_spec = remote::tcp_spec(&cfg.tcp(), interval);
        let probe = cfg.probe(cfg.idle + cfg.duration);
        let rr_spec = remote::rr_spec(&probe, probe.run_id.unwrap_or(0), interval);
        let opened =
            remote::FarSession::open(control, self.key.as_ref(), tcp_spec).and_then(|bulk| {
                remote::FarSession::open(control, self.key.as_ref(), rr_spec).map(|p| (bulk, p))
            });
        let (bulk, echo) = match opened {
            Ok(s) => s,
            Err(e) => return Err(self.refused(e)),
        };
        self.measured = true;
        let granted_at = self.rec.elapsed_s();
        let cfg = RrulConfig {
            tcp_target: Some(bulk.data_addr()),
            probe_target: Some(echo.data_addr()),
            ..cfg.clone()
        };
        let mut results = self.measure_rrul(&cfg)?;
        match echo.finish() {
            Ok(far) => results.notes.push(format!(
                "the far end echoed {} probe requests",
                far.app.udp_requests_echoed
            )),
            Err(e) => results
                .notes
                .push(format!("the probe's far report did not arrive: {e:#}")),
        }
        remote::attach(&mut results, bulk.finish(), granted_at);
        remote::far_sent(&mut results);
        Ok(results)
    }

    fn measure_rrul(&mut self, cfg: &RrulConfig) -> Result<Results, Error> {
        self.begin_part(
            format!("rrul {} flows each way", cfg.flows),
            cfg.idle + cfg.duration,
            LoadKind::Rrul,
        );
        let before = kernel::Counters::read(&*self.source);
        let stop = self.stop.clone();
        let idle_s = cfg.idle.as_secs_f64();
        let results = run_rrul(cfg, &stop, &mut |p: &RrulProgress| {
            let (elapsed_s, figures, values) = rrul_progress(p, idle_s);
            self.progress(elapsed_s, &figures, values);
        });
        self.end_part();
        let mut results = results?;
        let after = kernel::Counters::read(&*self.source);
        kernel::attribute_tcp(&before, &after, &mut results);
        Ok(results)
    }

    fn measure_udp(&mut self, cfg: &udp::UdpConfig) -> Result<Results, Error> {
        // What the receive buffer's note says it was clamped to: this machine's, as read here.
        let cfg = &udp::UdpConfig {
            rmem_max: netceil_probe::host::rmem_max(&*self.source),
            ..cfg.clone()
        };
        let title = format!(
            "udp {} B payload ({} B frame)",
            cfg.payload_bytes,
            udp_payload_to_frame(cfg.payload_bytes, cfg.ipv6)
        );
        self.begin_part(title, cfg.duration, LoadKind::Udp);
        let before = kernel::Counters::read(&*self.source);
        let stop = self.stop.clone();
        let mut last = (0.0, 0u64, 0u64, 0u64, 0u64);
        // A far end's receiver reports at the end only: while the run goes, what it received
        // and lost is unknown here, not zero (the table shows `-`, the series has no value).
        let local_rx = cfg.target.is_none();
        let outcome = udp::run_udp(cfg, &stop, &mut |p: &udp::Progress| {
            let dt = (p.elapsed_s - last.0).max(1e-9);
            let tx_pps = (p.tx_packets - last.1) as f64 / dt;
            let rx_pps = (p.rx_packets - last.2) as f64 / dt;
            let rx_bits = (p.rx_bytes - last.3) as f64 * 8.0 / dt;
            let lost_per_s = p.lost_so_far.saturating_sub(last.4) as f64 / dt;
            let mut values = vec![value(n::LOAD_TX_PPS, Unit::PacketsPerSecond, tx_pps)];
            if local_rx {
                values.extend([
                    value(n::LOAD_RX_PPS, Unit::PacketsPerSecond, rx_pps),
                    value(n::LOAD_RX_BITS_PER_S, Unit::BitsPerSecond, rx_bits),
                    value(n::LOAD_LOST_PER_S, Unit::PerSecond, lost_per_s),
                ]);
            }
            self.progress(
                p.elapsed_s,
                &LoadFigures {
                    tx_pps: Some(tx_pps),
                    rx_pps: local_rx.then_some(rx_pps),
                    rx_bits_per_s: local_rx.then_some(rx_bits),
                    lost: local_rx.then_some(p.lost_so_far),
                    ..Default::default()
                },
                values,
            );
            last = (
                p.elapsed_s,
                p.tx_packets,
                p.rx_packets,
                p.rx_bytes,
                p.lost_so_far,
            );
        });
        self.end_part();
        let outcome = outcome?;
        let after = kernel::Counters::read(&*self.source);
        let mut results = outcome.results;
        kernel::attribute_udp(&before, &after, cfg.target.is_none(), &mut results);
        Ok(results)
    }

    fn measure_tcp(&mut self, cfg: &tcp::TcpConfig) -> Result<Results, Error> {
        // Auto's buffer is sized for this machine's receiving core, as read here.
        // Every direction's reading threads are placed by --rx-cpu.
        let recv_cpu = cfg.rx_cpu;
        let cfg = &tcp::TcpConfig {
            recv_buffer: match cfg.recv_buffer {
                tcp::RecvBuffer::Auto { .. } => tcp::RecvBuffer::auto_for_l2(
                    netceil_probe::host::l2_cache_bytes(&*self.source, recv_cpu.unwrap_or(0)),
                ),
                other => other,
            },
            ..cfg.clone()
        };
        let (way, kind) = match cfg.direction {
            netceil_model::TcpDirection::Up => ("", LoadKind::Tcp),
            netceil_model::TcpDirection::Down => (", reverse (-R)", LoadKind::TcpDown),
            netceil_model::TcpDirection::Both => (" each way (--bidir)", LoadKind::TcpBoth),
        };
        let title = format!(
            "tcp {} flow{}{way}",
            cfg.flows,
            if cfg.flows == 1 { "" } else { "s" }
        );
        self.begin_part(title, cfg.duration, kind);
        let before = kernel::Counters::read(&*self.source);
        let stop = self.stop.clone();
        let results = tcp::run_tcp(cfg, &stop, &mut |p: &tcp::TcpProgress| {
            let (figures, values) = tcp_figures(p);
            self.progress(p.elapsed_s, &figures, values);
        });
        self.end_part();
        let mut results = results?;
        let after = kernel::Counters::read(&*self.source);
        kernel::attribute_tcp(&before, &after, &mut results);
        Ok(results)
    }

    fn measure_rr(&mut self, cfg: &rr::RrConfig) -> Result<Results, Error> {
        let proto = match cfg.proto {
            rr::RrProto::Tcp => "tcp",
            rr::RrProto::Udp => "udp",
        };
        self.begin_part(
            format!("rr {proto} {} B", cfg.size),
            cfg.duration,
            LoadKind::Rr,
        );
        let stop = self.stop.clone();
        let results = rr::run_rr(cfg, &stop, &mut |p: &rr::RrProgress| {
            let mut values = vec![value(
                n::LOAD_TRANSACTIONS_PER_S,
                Unit::PerSecond,
                p.interval_tps,
            )];
            if let Some(m) = p.interval_mean_latency_us {
                values.push(value(n::LOAD_MEAN_LATENCY_US, Unit::Microseconds, m));
            }
            self.progress(
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
        self.end_part();
        let mut results = results?;
        if results.payload_bytes.is_none() {
            results.payload_bytes = Some(cfg.size);
        }
        Ok(results)
    }

    fn begin_part(&mut self, title: String, length: Duration, kind: LoadKind) {
        let part = PartStart {
            title,
            length,
            kind,
        };
        for o in self.rec.observers() {
            o.begin(&part);
        }
    }

    /// One progress report of the workload: the observers get the system row of the same
    /// interval; if the sampler's row does not come in time its columns are not measured.
    fn progress(&mut self, elapsed_s: f64, load: &LoadFigures, values: LoadValues) {
        let mut rows = self.rec.rows(Duration::from_millis(250));
        self.rec.attach_and_store(&mut rows, values);
        let mut shown = rows.pop().unwrap_or_default();
        shown.t_s = elapsed_s;
        for o in self.rec.observers() {
            o.progress(elapsed_s, &shown, load);
        }
    }

    /// Ends the part for the observers, and streams the rows sampled since the last
    /// progress report to the store and the observers: a search's or sweep's trial can be
    /// shorter than one report, and its rows must not wait for the end of the whole command.
    fn end_part(&mut self) {
        for o in self.rec.observers() {
            o.end();
        }
        let rows = self.rec.rows(Duration::ZERO);
        self.rec.store_rows(&rows);
    }
}

/// One rrul progress report as the live table and the series take it: the probe's round trip
/// in both phases (`-` for an interval it made no report in), and when loaded the flows' rates
/// (with their time from the run's start). The idle phase's flow columns stay `-`: no flow
/// ran, so none was measured.
fn rrul_progress(p: &RrulProgress, idle_s: f64) -> (f64, LoadFigures, LoadValues) {
    let probe_latency = |r: Option<&rr::RrProgress>| {
        let m = r.and_then(|r| r.interval_mean_latency_us);
        (
            m,
            m.map(|m| value(n::LOAD_MEAN_LATENCY_US, Unit::Microseconds, m)),
        )
    };
    match p {
        RrulProgress::Idle(r) => {
            let (mean, value) = probe_latency(Some(r));
            (
                r.elapsed_s,
                LoadFigures {
                    tps: Some(r.interval_tps),
                    mean_latency_us: mean,
                    ..Default::default()
                },
                value.into_iter().collect(),
            )
        }
        RrulProgress::Loaded(t, probe) => {
            let (mut figures, mut values) = tcp_figures(t);
            let (mean, value) = probe_latency(probe.as_ref());
            figures.mean_latency_us = mean;
            values.extend(value);
            (idle_s + t.elapsed_s, figures, values)
        }
    }
}

/// One TCP progress report as the live table and the series take it: each direction's
/// writes and reads apart in the table (`-` for a count only the far end has), their sums
/// in the series (a sum with no known part is left out, not 0).
fn tcp_figures(p: &tcp::TcpProgress) -> (LoadFigures, LoadValues) {
    let up = p.up.clone().unwrap_or_default();
    let down = p.down.clone().unwrap_or_default();
    let sum = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    };
    let mut values = Vec::new();
    if let Some(tx) = sum(up.interval_tx_bits_per_s, down.interval_tx_bits_per_s) {
        values.push(value(n::LOAD_TX_BITS_PER_S, Unit::BitsPerSecond, tx));
    }
    if let Some(rx) = sum(up.interval_rx_bits_per_s, down.interval_rx_bits_per_s) {
        values.push(value(n::LOAD_RX_BITS_PER_S, Unit::BitsPerSecond, rx));
    }
    let figures = LoadFigures {
        tx_bits_per_s: up.interval_tx_bits_per_s,
        rx_bits_per_s: up.interval_rx_bits_per_s,
        down_tx_bits_per_s: down.interval_tx_bits_per_s,
        down_rx_bits_per_s: down.interval_rx_bits_per_s,
        ..Default::default()
    };
    (figures, values)
}

fn value(name: &str, unit: Unit, v: f64) -> (MetricId, Unit, f64) {
    (MetricId::new(name), unit, v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::table::{Table, RRUL_COLUMNS, TCP_BOTH_COLUMNS};
    use netceil_load::tcp::{TcpProgress, WayProgress};

    /// The cell under `header` in `line` (right-aligned to the header's width).
    fn cell(header_line: &str, line: &str, header: &str) -> String {
        let at = header_line.find(header).expect("the column") + header.len();
        let end = header_line[..at].chars().count();
        let width = header.chars().count();
        let c: String = line.chars().skip(end - width).take(width).collect();
        c.trim().to_string()
    }

    /// --bidir against a far end: the up flows' reads and the down flows' writes are the far
    /// end's, unknown while the run goes, so they read `-`; the other two are live, and every
    /// figure sits under its direction's label. The series takes each sum of what is known.
    #[test]
    fn each_direction_is_labelled_and_an_unknown_count_is_a_dash() {
        let p = TcpProgress {
            elapsed_s: 1.0,
            up: Some(WayProgress {
                tx_bytes: Some(125_000_000),
                interval_tx_bits_per_s: Some(1e9),
                ..WayProgress::default()
            }),
            down: Some(WayProgress {
                rx_bytes: Some(250_000_000),
                interval_rx_bits_per_s: Some(2e9),
                ..WayProgress::default()
            }),
        };
        let (figures, values) = tcp_figures(&p);
        let t = Table::new(TCP_BOTH_COLUMNS, vec![], None, false);
        let (header, line) = (t.header(), t.row(&netceil_probe::Row::default(), &figures));
        let shown: Vec<String> = ["up tx b/s", "up rx b/s", "down tx b/s", "down rx b/s"]
            .iter()
            .map(|h| cell(&header, &line, h))
            .collect();
        assert_eq!(shown, ["1.00 G", "-", "-", "2.00 G"], "{header}\n{line}");
        let series: Vec<(&str, f64)> = values
            .iter()
            .map(|(id, _, v)| (id.name.as_str(), *v))
            .collect();
        assert_eq!(
            series,
            [(n::LOAD_TX_BITS_PER_S, 1e9), (n::LOAD_RX_BITS_PER_S, 2e9)]
        );
    }

    fn probe_report(mean_us: Option<f64>) -> rr::RrProgress {
        rr::RrProgress {
            elapsed_s: 1.0,
            transactions: 100,
            interval_tps: 100.0,
            interval_mean_latency_us: mean_us,
            interval_max_latency_us: mean_us,
            lost: 0,
        }
    }

    /// rrul's rows: the probe's round trip in the idle row and in the loaded rows (where it
    /// read `-` although the probe ran throughout); the flows' columns `-` in the idle row,
    /// where no flow ran, and live once loaded.
    #[test]
    fn rrul_rows_show_the_probe_in_both_phases() {
        let t = Table::new(RRUL_COLUMNS, vec![], None, false);
        let header = t.header();
        let shown = |p: &RrulProgress| {
            let (_, figures, values) = rrul_progress(p, 2.0);
            let line = t.row(&netceil_probe::Row::default(), &figures);
            let cells: Vec<String> = ["lat µs", "up tx b/s", "down rx b/s"]
                .iter()
                .map(|h| cell(&header, &line, h))
                .collect();
            let series: Vec<String> = values.iter().map(|(id, _, _)| id.name.clone()).collect();
            (cells, series)
        };
        let (idle, idle_series) = shown(&RrulProgress::Idle(probe_report(Some(155.0))));
        assert_eq!(idle, ["155.0", "-", "-"]);
        assert_eq!(idle_series, [n::LOAD_MEAN_LATENCY_US]);
        let flows = TcpProgress {
            elapsed_s: 1.0,
            up: Some(WayProgress {
                interval_tx_bits_per_s: Some(1e9),
                interval_rx_bits_per_s: Some(1e9),
                ..WayProgress::default()
            }),
            down: Some(WayProgress {
                interval_tx_bits_per_s: Some(2e9),
                interval_rx_bits_per_s: Some(2e9),
                ..WayProgress::default()
            }),
        };
        let (loaded, series) = shown(&RrulProgress::Loaded(
            flows.clone(),
            Some(probe_report(Some(2890.0))),
        ));
        assert_eq!(loaded, ["2890.0", "1.00 G", "2.00 G"]);
        assert!(
            series.iter().any(|s| s == n::LOAD_MEAN_LATENCY_US),
            "{series:?}"
        );
        // No probe report since the flows' last one: its column is unknown, not 0.
        let (none, _) = shown(&RrulProgress::Loaded(flows, None));
        assert_eq!(none, ["-", "1.00 G", "2.00 G"]);
    }
}
