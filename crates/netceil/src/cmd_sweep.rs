//! `netceil sweep udp`: the size × interval experiment (SEEDS §5). Each cell is one cycle: a
//! train of `--count` packets sent `interval` apart. Per cell, the share that arrived is
//! counted at two points:
//! - **kernel**: the packet reached the receiving socket (read, dropped at its full buffer, or
//!   still queued), i.e. nothing before the socket dropped it;
//! - **app**: netceil's receiver read it.
//!
//! Per size and point, the knee is the first interval at which every packet arrived, with the
//! cycle time, the data moved and the throughput that implies. A cell whose generator could not
//! hold the interval (its achieved gap was longer) is not a success of the receiver.
//!
//! Stepping is coarse to fine: every k-th interval first, then every step below the first
//! coarse success, so the knee is exact to the step asked for (assuming no success below a
//! coarse failure, which the fine pass checks between the two coarse cells around the knee).

use anyhow::anyhow;
use netceil_engine::{new_live_run, Campaign, PartAnalysis, Replay, Trial};
use netceil_model::params::{
    SweepCycleParams, SweepParams, SweepTcpParams, TcpPacingRequest, TcpParams, UdpParams,
};
use netceil_model::{fmt, Knee, Results, Run, Unit, Workload as WorkloadSpec, WorkloadKind};
use serde_json::json;

use crate::cli::{CommonRunArgs, MetricsArgs, SweepArgs, SweepWorkload};
use crate::engine::{self, Progress};
use crate::{Failure, Outcome};

/// `0us..12us/0.1us`: start, end and step, in ns.
pub fn parse_interval_range(text: &str) -> Result<(f64, f64, f64), String> {
    let t = text.trim();
    let (range, step) = t
        .split_once('/')
        .ok_or_else(|| format!("--interval {t}: expected START..END/STEP, e.g. 0us..12us/0.1us"))?;
    let (a, b) = range
        .split_once("..")
        .ok_or_else(|| format!("--interval {t}: expected START..END/STEP, e.g. 0us..12us/0.1us"))?;
    let ns = |x: &str| -> Result<f64, String> {
        let x = x.trim();
        if x.trim_end_matches(|c: char| c.is_alphabetic() || c == 'µ') == "0" {
            return Ok(0.0);
        }
        crate::parse::run_duration(x)
            .map(|d| d.as_nanos() as f64)
            .map_err(|e| format!("--interval: {e}"))
    };
    let (start, end, step) = (ns(a)?, ns(b)?, ns(step)?);
    if end < start {
        return Err(format!(
            "--interval {t}: the range is empty (it ends before it starts)"
        ));
    }
    if step <= 0.0 {
        return Err(format!(
            "--interval {t}: the step must be greater than zero"
        ));
    }
    if end > start && step > end - start {
        return Err(format!("--interval {t}: the step is larger than the range"));
    }
    if (end - start) / step > 100_000.0 {
        return Err(format!("--interval {t}: more than 100000 steps"));
    }
    Ok((start, end, step))
}

/// One cell's outcome.
#[derive(Debug, Clone)]
struct Cell {
    interval_ns: f64,
    sent: u64,
    app_ratio: f64,
    kernel_ratio: f64,
    cycle_s: f64,
    /// The generator's mean gap was more than 5 % (and 100 ns) longer than asked.
    gap_short: bool,
    achieved_gap_ns: f64,
}

impl Cell {
    /// Two cycles of one cell as one: the lower arrival at each point, the slower cycle, and
    /// short if either sender fell behind. A cell succeeds only if every cycle did.
    fn worse(self, other: Cell) -> Cell {
        let slower = if other.cycle_s > self.cycle_s {
            &other
        } else {
            &self
        };
        Cell {
            interval_ns: self.interval_ns,
            sent: slower.sent,
            cycle_s: slower.cycle_s,
            app_ratio: self.app_ratio.min(other.app_ratio),
            kernel_ratio: self.kernel_ratio.min(other.kernel_ratio),
            gap_short: self.gap_short || other.gap_short,
            achieved_gap_ns: self.achieved_gap_ns.max(other.achieved_gap_ns),
        }
    }

    fn ok(&self, point: Point) -> bool {
        !self.gap_short
            && match point {
                Point::Kernel => self.kernel_ratio >= 1.0,
                Point::App => self.app_ratio >= 1.0,
            }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Point {
    Kernel,
    App,
}

impl Point {
    fn name(self) -> &'static str {
        match self {
            Point::Kernel => "kernel",
            Point::App => "app",
        }
    }
}

fn cell_of(r: &Results, interval_ns: f64, count: u64) -> Cell {
    let sent = r.tx_packets;
    let reached = r.rx_app_packets + r.kernel.socket_drops.unwrap_or(0) + r.in_flight_packets;
    let ratio = |x: u64| {
        if sent > 0 {
            x.min(sent) as f64 / sent as f64
        } else {
            0.0
        }
    };
    let achieved_gap_ns = if sent > 1 {
        r.duration_s * 1e9 / (sent - 1) as f64
    } else {
        0.0
    };
    Cell {
        interval_ns,
        sent,
        app_ratio: ratio(r.rx_app_packets + r.in_flight_packets),
        kernel_ratio: ratio(reached),
        cycle_s: r.duration_s,
        // A train cut short by the time limit did not hold the interval either.
        gap_short: sent < count
            || (interval_ns > 0.0
                && achieved_gap_ns > interval_ns * 1.05
                && achieved_gap_ns > interval_ns + 100.0),
        achieved_gap_ns,
    }
}

/// What a stored UDP sweep ran with.
fn from_run(run: &Run) -> Result<SweepParams, Failure> {
    let bad = |why: &str| {
        Failure::usage(anyhow!(
            "--resume {}: {why}; only an interrupted `netceil sweep udp` can be resumed",
            run.run_id
        ))
    };
    let w = run
        .workload
        .as_ref()
        .ok_or_else(|| bad("it has no workload"))?;
    if w.kind != WorkloadKind::Sweep
        || w.params.get("workload").and_then(|v| v.as_str()) != Some("udp")
    {
        return Err(bad("it is not a UDP sweep"));
    }
    w.params_as().map_err(|e| bad(&e.to_string()))
}

/// The checks a UDP sweep makes before any traffic; its intervals, ns.
fn check(settings: &SweepParams, common: &crate::cli::CommonRunArgs) -> Result<Vec<f64>, Failure> {
    let (start, end, step) =
        parse_interval_range(&settings.interval).map_err(|e| Failure::usage(anyhow!(e)))?;
    if settings.sizes.is_empty() {
        return Err(Failure::usage(anyhow!(
            "--sizes: at least one payload size"
        )));
    }
    if settings.count == 0 {
        return Err(Failure::usage(anyhow!(
            "--count: at least one packet per cycle"
        )));
    }
    if settings.cycles == 0 {
        return Err(Failure::usage(anyhow!("--cycles: at least one")));
    }
    // Each cycle runs for its train four times over, and 5 s more (see `measure`): the
    // longest must still be a run netceil takes.
    let longest_s = settings.count as f64 * end / 1e9 * 4.0 + 5.0;
    if crate::parse::secs_within(longest_s, crate::parse::RUN).is_none() {
        return Err(Failure::usage(anyhow!(
            "--count {} at --interval {}: a cycle would take longer than {}, the longest run",
            settings.count,
            settings.interval,
            crate::parse::format_duration(crate::parse::RUN.max)
        )));
    }
    let pairs: Vec<(usize, usize)> = settings.sizes.iter().map(|&s| (s, s)).collect();
    netceil_engine::kernel::check_path_mtu(common.to, "--sizes", &pairs)
        .map_err(|e| Failure::usage(anyhow!(e)))?;
    let steps = ((end - start) / step + 1e-9).floor() as usize + 1;
    Ok((0..steps).map(|i| start + i as f64 * step).collect())
}

/// One size's cells of a UDP sweep.
struct SizeCells<'a> {
    settings: &'a SweepParams,
    size: usize,
    intervals: &'a [f64],
    base: UdpParams,
    wire_id: u16,
}

impl SizeCells<'_> {
    /// Measures interval index i (all cycles; a cell succeeds only if every cycle did), or
    /// replays the cycles an interrupted sweep stored.
    fn measure(&self, i: usize, c: &mut Campaign) -> Result<Cell, Failure> {
        let (size, count) = (self.size, self.settings.count);
        let interval = self.intervals[i];
        let mut worst: Option<Cell> = None;
        for cycle in 0..self.settings.cycles {
            let asked = WorkloadSpec::typed(
                WorkloadKind::Udp,
                &SweepCycleParams {
                    payload_bytes: size,
                    interval_ns: interval,
                    count,
                    cycle,
                    target: self.settings.target.clone(),
                },
            );
            let (r, from_store) = match c.replayed_part(&asked) {
                Some(r) => (r, true),
                None => {
                    // Long enough for the whole train at the asked gap, with room.
                    let train_s = count as f64 * interval / 1e9;
                    let params = UdpParams {
                        rate: None,
                        interval_ns: (interval > 0.0).then_some(interval),
                        count: Some(count),
                        duration_s: train_s * 4.0 + 5.0,
                        ..self.base.clone()
                    };
                    let (r, _, _) = c.measure(&Trial::udp(params, self.wire_id)?)?;
                    let mut part = Run::new("", netceil_model::RunSource::Live);
                    part.workload = Some(asked);
                    part.results = Some(r.clone());
                    c.keep(part);
                    (r, false)
                }
            };
            let cell = cell_of(&r, interval, count);
            c.session.step(&format!(
                "  {size:>6} B  interval {:>8}  app {:>7.3} %  kernel {:>7.3} %  gap {:>9}{}{}",
                fmt::value(interval / 1e3, Unit::Microseconds),
                cell.app_ratio * 100.0,
                cell.kernel_ratio * 100.0,
                fmt::value(cell.achieved_gap_ns / 1e3, Unit::Microseconds),
                if cell.gap_short {
                    "  (generator could not hold the interval)"
                } else {
                    ""
                },
                if from_store { "  (from the store)" } else { "" }
            ));
            worst = Some(match worst {
                None => cell,
                Some(w) => w.worse(cell),
            });
        }
        Ok(worst.expect("at least one cycle"))
    }

    /// The knee at `point`: coarse steps first, then every step below the first coarse
    /// success. `None` when interrupted.
    fn knee(
        &self,
        point: Point,
        cells: &mut [Option<Cell>],
        measured: &mut usize,
        c: &mut Campaign,
    ) -> Result<Option<Knee>, Failure> {
        let stride = (self.intervals.len() / 12).max(1);
        let mut first_ok = None;
        let mut i = 0;
        while i < self.intervals.len() {
            if c.stopping() {
                return Ok(None);
            }
            if cells[i].is_none() {
                cells[i] = Some(self.measure(i, c)?);
                *measured += 1;
            }
            if cells[i].as_ref().is_some_and(|c| c.ok(point)) {
                first_ok = Some(i);
                break;
            }
            i += stride;
        }
        // Fine pass below the first coarse success.
        if let Some(hi) = first_ok {
            let lo = hi.saturating_sub(stride - 1);
            for (j, slot) in cells.iter_mut().enumerate().take(hi).skip(lo) {
                if c.stopping() {
                    return Ok(None);
                }
                if slot.is_none() {
                    *slot = Some(self.measure(j, c)?);
                    *measured += 1;
                }
                if slot.as_ref().is_some_and(|c| c.ok(point)) {
                    first_ok = Some(j);
                    break;
                }
            }
        }
        let end = self.intervals.last().copied().unwrap_or(0.0);
        Ok(Some(knee_of(
            self.size,
            point,
            first_ok.and_then(|k| cells[k].clone()),
            cells.iter().flatten().any(|c| c.gap_short),
            *measured,
            end,
        )))
    }
}

fn knee_of(
    size: usize,
    point: Point,
    knee_cell: Option<Cell>,
    short: bool,
    measured: usize,
    end: f64,
) -> Knee {
    Knee {
        size_bytes: size,
        point: point.name().into(),
        loss_tolerance: 0.0,
        min_interval_us: knee_cell.as_ref().map(|c| c.interval_ns / 1e3),
        rate_pps: knee_cell
            .as_ref()
            .map(|c| if c.cycle_s > 0.0 { c.sent as f64 / c.cycle_s } else { 0.0 }),
        bits_per_s: knee_cell
            .as_ref()
            .map(|c| c.sent as f64 * size as f64 * 8.0 / c.cycle_s.max(1e-9)),
        loss_ratio: knee_cell.as_ref().map(|_| 0.0),
        trials: measured,
        generator_limited: knee_cell.is_none() && short,
        verified: knee_cell.is_some(),
        upper_pps: None,
        stopped_by: None,
        note: match (&knee_cell, short) {
            (None, true) => Some("no interval reached 100 %; at some the generator could not hold the interval asked, so those cells say nothing of the receiver".into()),
            (None, false) => Some(format!("no interval up to {:.2} us reached 100 %", end / 1e3)),
            (Some(_), _) => None,
        },
    }
}

pub fn run(args: SweepArgs) -> Outcome {
    let common = &args.common;
    let a = match &args.workload {
        SweepWorkload::Udp(a) => a,
        SweepWorkload::Tcp(t) => {
            return run_tcp(engine::sweep_tcp_params(t, common), common, &args.metrics)
        }
        SweepWorkload::Param(p) => return run_param(&p.params, &p.run, common, &args.metrics),
    };
    let target = common.to.map(|t| t.to_string());
    let store = engine::open_store(common.no_store);
    let (settings, replay) = match &a.resume {
        Some(spec) => {
            let old = netceil_engine::resumable(store.as_ref(), spec, target.clone())?;
            (from_run(&old)?, Replay::of(old))
        }
        None => (engine::sweep_params(a, target), Replay::default()),
    };
    run_udp(settings, replay, common, &args.metrics, store.as_ref())
}

/// The size × interval sweep as `settings` say, replaying what `replay` holds first.
pub fn run_udp(
    mut settings: SweepParams,
    replay: Replay,
    common: &CommonRunArgs,
    metrics: &MetricsArgs,
    store: Option<&netceil_store::Store>,
) -> Outcome {
    settings.resumed_from = replay.from.clone();
    let intervals = check(&settings, common)?;
    let count = settings.count;
    let (mut top, wire_id) = new_live_run(&common.labels);
    let run_id = top.run_id.clone();
    top.workload = Some(WorkloadSpec::typed(WorkloadKind::Sweep, &settings));
    let progress = Progress::Steps {
        what: "sweep",
        at_most: (settings.sizes.len() * intervals.len()) as u64,
    };
    let mut cmd = engine::start(common, metrics, store, top, replay, progress)?;
    let c = &mut cmd.campaign;
    let mut knees = Vec::new();
    let mut interrupted = false;
    'sizes: for &size in &settings.sizes {
        let base = engine::udp_train_params(
            common,
            size,
            settings.pacing,
            settings.rcvbuf,
            settings.rcvbuf_force,
        );
        let cells_of = SizeCells {
            settings: &settings,
            size,
            intervals: &intervals,
            base,
            wire_id,
        };
        let mut cells: Vec<Option<Cell>> = vec![None; intervals.len()];
        let mut measured = 0usize;
        for point in [Point::Kernel, Point::App] {
            match cells_of.knee(point, &mut cells, &mut measured, c)? {
                Some(k) => knees.push(k),
                None => {
                    interrupted = true;
                    break 'sizes;
                }
            }
        }
    }
    c.end(PartAnalysis::None);
    let replayed = c.replayed();
    let top = &mut c.top;
    top.knees = knees;
    top.meta.complete = !interrupted;
    top.notes.push(format!(
        "each cell is one cycle of {count} packets; kernel = reached the receiving socket (read, dropped at its full buffer, or queued), app = read by netceil's receiver; throughput = data per cycle / cycle time, in Gbit/s (10^9) and Gibit/s (2^30)"
    ));
    if let Some(old) = &settings.resumed_from {
        top.notes.push(format!(
            "resumed from {old}: {replayed} of its cycles were replayed from the store (no traffic), the rest measured now"
        ));
    }
    if interrupted {
        top.notes.push(format!(
            "{}: the knees cover the sizes finished so far; `netceil sweep udp --resume {run_id}` goes on from here",
            crate::exit::interrupted()
        ));
    }
    cmd.done(true, |top| knee_table(top, count))
}

/// §5's tables: per size and point, the first interval with 100 %, the cycle time, the data
/// and the throughput in both units.
pub(crate) fn knee_table(run: &Run, count: u64) -> String {
    let mut s = String::from(
        "size B   point   first 100 %   cycle       data         Gbit/s   Gibit/s   cells\n",
    );
    for k in &run.knees {
        let cycle_us = match (k.rate_pps, k.min_interval_us) {
            (Some(p), Some(_)) if p > 0.0 => fmt::value(count as f64 / p * 1e6, Unit::Microseconds),
            _ => "-".into(),
        };
        let data = format!("{:.0} KiB", count as f64 * k.size_bytes as f64 / 1024.0);
        s.push_str(&format!(
            "{:>6}   {:<6}  {:>11}   {:>9}   {:>10}   {:>7}   {:>7}   {:>5}\n",
            k.size_bytes,
            k.point,
            k.min_interval_us
                .map_or_else(|| "none".into(), |v| fmt::value(v, Unit::Microseconds)),
            cycle_us,
            data,
            k.bits_per_s
                .map_or_else(|| "-".into(), |b| format!("{:.3}", b / 1e9)),
            k.bits_per_s
                .map_or_else(|| "-".into(), |b| format!("{:.3}", b / (1u64 << 30) as f64)),
            k.trials
        ));
        if let Some(n) = &k.note {
            s.push_str(&format!("         note: {n}\n"));
        }
    }
    s.push_str(&format!(
        "throughput = UDP payload per cycle / cycle time; a cell is one cycle of {count} packets; Gbit/s = 10^9 bit/s, Gibit/s = 2^30 bit/s\n"
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_ranges() {
        assert_eq!(
            parse_interval_range("0us..12us/0.1us").unwrap(),
            (0.0, 12_000.0, 100.0)
        );
        assert_eq!(
            parse_interval_range("1us..2us/500ns").unwrap(),
            (1000.0, 2000.0, 500.0)
        );
        assert!(parse_interval_range("5us..1us/1us")
            .unwrap_err()
            .contains("empty"));
        assert!(parse_interval_range("0us..1us/2us")
            .unwrap_err()
            .contains("larger than the range"));
        assert!(parse_interval_range("0us..1us")
            .unwrap_err()
            .contains("START..END/STEP"));
        assert!(parse_interval_range("0us..1us/0us").is_err());
        assert!(parse_interval_range("0..1s/1ns")
            .unwrap_err()
            .contains("100000"));
    }

    #[test]
    fn a_generator_that_fell_behind_is_no_success() {
        let r = Results {
            tx_packets: 5000,
            rx_app_packets: 5000,
            duration_s: 5000.0 * 3e-6,
            ..Default::default()
        };
        let c = cell_of(&r, 1000.0, 5000);
        assert!(c.gap_short && !c.ok(Point::App));
        let c = cell_of(&r, 3000.0, 5000);
        assert!(!c.gap_short && c.ok(Point::App) && c.ok(Point::Kernel));
        // A train the time limit cut short is no success either.
        let c = cell_of(&r, 3000.0, 6000);
        assert!(c.gap_short && !c.ok(Point::App));
        let c = cell_of(&r, 3000.0, 5000);
        assert!(!c.gap_short && c.ok(Point::App) && c.ok(Point::Kernel));
    }

    #[test]
    fn a_cell_of_several_cycles_succeeds_only_if_every_cycle_did() {
        let full = Results {
            tx_packets: 100,
            rx_app_packets: 100,
            duration_s: 0.001,
            ..Default::default()
        };
        let lossy = Results {
            rx_app_packets: 97,
            duration_s: 0.002,
            ..full.clone()
        };
        let c = cell_of(&full, 0.0, 100).worse(cell_of(&lossy, 0.0, 100));
        assert!(!c.ok(Point::App));
        assert_eq!(c.cycle_s, 0.002, "the slower cycle");
        assert!(cell_of(&full, 0.0, 100)
            .worse(cell_of(&full, 0.0, 100))
            .ok(Point::App));
    }

    #[test]
    fn the_kernel_point_counts_what_reached_the_socket() {
        let mut r = Results {
            tx_packets: 100,
            rx_app_packets: 90,
            duration_s: 0.001,
            ..Default::default()
        };
        r.kernel.socket_drops = Some(10);
        let c = cell_of(&r, 0.0, 100);
        assert!(c.ok(Point::Kernel) && !c.ok(Point::App));
        assert!((c.app_ratio - 0.9).abs() < 1e-12);
    }
}

/// A step's figures, from its results and its series window.
struct Step {
    flows: u32,
    bits_per_s: f64,
    cpu_busy_pct: Option<f64>,
    cs_per_s: Option<f64>,
    intr_per_s: Option<f64>,
}

/// Adding flows stops adding throughput at the first step within 5 % of the best one.
const FLOWS_KNEE_SHARE: f64 = 0.95;

/// The step where adding flows stopped adding throughput: the fewest flows that reached
/// [`FLOWS_KNEE_SHARE`] of the best throughput of the sweep.
fn flows_knee(steps: &[Step]) -> Option<usize> {
    let best = steps.iter().map(|s| s.bits_per_s).fold(0.0, f64::max);
    (best > 0.0)
        .then(|| {
            steps
                .iter()
                .position(|s| s.bits_per_s >= FLOWS_KNEE_SHARE * best)
        })
        .flatten()
}

fn series_mean(run: &Run, name: &str) -> Option<f64> {
    let m = run.series.total(name)?;
    let v: Vec<f64> = m.values.iter().flatten().copied().collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

pub fn run_tcp(
    a: SweepTcpParams,
    common: &crate::cli::CommonRunArgs,
    metrics_args: &crate::cli::MetricsArgs,
) -> Outcome {
    if a.flows.is_empty() || a.flows.contains(&0) {
        return Err(Failure::usage(anyhow!(
            "--flows: one or more flow counts, each at least 1"
        )));
    }
    // Every step's trial is checked before any traffic.
    let trials = a
        .flows
        .iter()
        .map(|&f| {
            Ok(Trial::tcp(TcpParams {
                flows: f,
                msg_size: a.msg_size,
                rate_per_flow_bps: a.rate_per_flow,
                duration_s: a.step_s,
                threads: a.threads,
                ipv6: common.ipv6,
                target: a.target.clone(),
                pacing: TcpPacingRequest::Auto,
                rx_cpu: None,
                tx_cpu: None,
            })?)
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    let (mut top, _) = new_live_run(&common.labels);
    top.workload = Some(WorkloadSpec::typed(WorkloadKind::Sweep, &a));
    let store = engine::open_store(common.no_store);
    let mut cmd = engine::start(
        common,
        metrics_args,
        store.as_ref(),
        top,
        Replay::default(),
        Progress::Steps {
            what: "sweep",
            at_most: a.flows.len() as u64,
        },
    )?;
    let c = &mut cmd.campaign;
    let mut interrupted = false;
    for t in &trials {
        if c.stopping() {
            interrupted = true;
            break;
        }
        let asked = t.workload();
        let r = c.trial(t, &asked, |_| asked.clone())?.results;
        let bits_per_s = r.rx_app_bits_per_s.max(r.tx_bits_per_s);
        let Trial::Tcp(cfg, _) = t else { continue };
        c.session.step(&format!(
            "  {:>5} flows  {:>12}",
            cfg.flows,
            fmt::value(bits_per_s, Unit::BitsPerSecond)
        ));
    }
    c.end(PartAnalysis::Each);
    let top = &mut c.top;
    let steps = flows_steps(top);
    let knee = flows_knee(&steps);
    if let Some(k) = knee {
        let part = &top.parts[k];
        top.findings = part.findings.clone();
        top.notes.push(format!(
            "adding flows stopped adding throughput at {} flows: the first step within {:.0} % of the best ({}); the verdict is the analyzer's on that step ({})",
            steps[k].flows,
            (1.0 - FLOWS_KNEE_SHARE) * 100.0,
            fmt::value(steps.iter().map(|s| s.bits_per_s).fold(0.0, f64::max), Unit::BitsPerSecond),
            part.run_id
        ));
    }
    top.meta.complete = !interrupted;
    cmd.done(true, flows_table)
}

/// A TCP flows sweep's steps, from its parts: flows, throughput and the machine's means.
fn flows_steps(top: &Run) -> Vec<Step> {
    use netceil_model::names as n;
    top.parts
        .iter()
        .map(|part| {
            let r = part.results.clone().unwrap_or_default();
            Step {
                flows: part
                    .workload
                    .as_ref()
                    .and_then(|w| w.params_as::<TcpParams>().ok())
                    .map_or(0, |p| p.flows),
                bits_per_s: r.rx_app_bits_per_s.max(r.tx_bits_per_s),
                cpu_busy_pct: series_mean(part, n::CPU_BUSY_PCT),
                cs_per_s: series_mean(part, n::CS_PER_S),
                intr_per_s: series_mean(part, n::INTR_PER_S),
            }
        })
        .collect()
}

/// A TCP flows sweep's table: per step, throughput, CPU, switches, interrupts and finding.
pub(crate) fn flows_table(top: &Run) -> String {
    let steps = flows_steps(top);
    let knee = flows_knee(&steps);
    let mut t =
        String::from("flows   throughput     CPU busy   cs/s        in/s        top finding\n");
    for (i, s) in steps.iter().enumerate() {
        let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or_else(|| "-".into(), f);
        t.push_str(&format!(
            "{:>5}   {:>12}   {:>8}   {:>9}   {:>9}   {}{}\n",
            s.flows,
            fmt::value(s.bits_per_s, Unit::BitsPerSecond),
            opt(s.cpu_busy_pct, &|v| format!("{v:.0} %")),
            opt(s.cs_per_s, &|v| fmt::count(v as u64)),
            opt(s.intr_per_s, &|v| fmt::count(v as u64)),
            top.parts[i]
                .findings
                .first()
                .map_or("-", |f| f.cause.as_str()),
            if knee == Some(i) {
                "   <- adding flows stops here"
            } else {
                ""
            }
        ));
    }
    for n in &top.notes {
        t.push_str(&format!("{n}\n"));
    }
    if let Some(f) = top.findings.first() {
        t.push_str(&format!("verdict at the knee: {}\n", f.summary));
    }
    t
}

#[cfg(test)]
mod flows_tests {
    use super::*;

    fn step(flows: u32, gbit: f64) -> Step {
        Step {
            flows,
            bits_per_s: gbit * 1e9,
            cpu_busy_pct: None,
            cs_per_s: None,
            intr_per_s: None,
        }
    }

    #[test]
    fn the_knee_is_the_fewest_flows_near_the_best() {
        let s = [
            step(1, 10.0),
            step(2, 18.0),
            step(4, 23.0),
            step(8, 24.0),
            step(16, 23.5),
        ];
        assert_eq!(
            flows_knee(&s),
            Some(2),
            "23 Gbit/s at 4 flows is within 5 % of 24"
        );
        assert_eq!(flows_knee(&[step(1, 0.0)]), None);
        let rising = [step(1, 1.0), step(2, 2.0), step(4, 4.0)];
        assert_eq!(flows_knee(&rising), Some(2), "still rising: the last step");
    }
}

/// `NAME=V1,V2,…` into the flag and its values.
fn parse_param(text: &str) -> Result<(String, Vec<String>), Failure> {
    let (name, values) = text.split_once('=').ok_or_else(|| {
        Failure::usage(anyhow!(
            "--param {text}: expected NAME=V1,V2,… (e.g. size=64,1472)"
        ))
    })?;
    let name = name.trim().trim_start_matches('-');
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(Failure::usage(anyhow!(
            "--param {text}: '{name}' is not a flag name (letters, digits and -, as in rate-per-flow)"
        )));
    }
    let values: Vec<String> = values
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect();
    if values.is_empty() {
        return Err(Failure::usage(anyhow!("--param {text}: no values")));
    }
    Ok((name.to_string(), values))
}

/// Every combination of the values, first parameter slowest.
fn combinations(params: &[(String, Vec<String>)]) -> Vec<Vec<(String, String)>> {
    let mut out: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (name, values) in params {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                values.iter().map(move |v| {
                    let mut c = prefix.clone();
                    c.push((name.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    out
}

pub fn run_param(
    given: &[String],
    run_args: &[String],
    common: &crate::cli::CommonRunArgs,
    metrics_args: &crate::cli::MetricsArgs,
) -> Outcome {
    use clap::Parser as _;
    let params = given
        .iter()
        .map(|p| parse_param(p))
        .collect::<Result<Vec<_>, Failure>>()?;
    let combos = combinations(&params);
    if combos.len() > 1000 {
        return Err(Failure::usage(anyhow!(
            "--param: {} combinations; at most 1000",
            combos.len()
        )));
    }
    let (mut top, wire_id) = new_live_run(&common.labels);
    // Every step is parsed and checked before any traffic, by `netceil run`'s own parser.
    let mut trials = Vec::new();
    for combo in &combos {
        let mut argv: Vec<String> = vec!["netceil".into(), "run".into()];
        argv.extend(run_args.iter().cloned());
        for (name, v) in combo {
            argv.push(format!("--{name}"));
            argv.push(v.clone());
        }
        let cli = crate::cli::Cli::try_parse_from(&argv).map_err(|e| {
            Failure::usage(anyhow!(
                "the step {}: {}",
                combo_words(combo),
                e.to_string()
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim_start_matches("error: ")
            ))
        })?;
        let crate::cli::Command::Run(run) = cli.command else {
            return Err(Failure::usage(anyhow!(
                "the arguments after -- must be `netceil run` arguments"
            )));
        };
        let Some(w) = run.workload else {
            return Err(Failure::usage(anyhow!(
                "the arguments after -- must name a workload (udp, tcp or rr), e.g. `-- udp --duration 5s`"
            )));
        };
        trials.push((combo.clone(), engine::plan(&w, &run.common, wire_id)?));
    }
    top.workload = Some(WorkloadSpec::typed(
        WorkloadKind::Sweep,
        &json!({ "workload": "param", "params": given, "run": run_args }),
    ));
    let store = engine::open_store(common.no_store);
    let mut cmd = engine::start(
        common,
        metrics_args,
        store.as_ref(),
        top,
        Replay::default(),
        Progress::Steps {
            what: "sweep",
            at_most: trials.len() as u64,
        },
    )?;
    let c = &mut cmd.campaign;
    let mut lines = Vec::new();
    let mut interrupted = false;
    for (combo, t) in &trials {
        if c.stopping() {
            interrupted = true;
            break;
        }
        let asked = t.workload();
        let r = c.trial(t, &asked, |_| asked.clone())?.results;
        c.session
            .step(&format!("  {}  {}", combo_words(combo), headline(&r)));
        lines.push(format!("{}  {}", combo_words(combo), headline(&r)));
    }
    c.end(PartAnalysis::None);
    let top = &mut c.top;
    for ((combo, _), (part, line)) in trials.iter().zip(top.parts.iter_mut().zip(&mut lines)) {
        for (name, v) in combo {
            part.meta.labels.insert(format!("param.{name}"), v.clone());
        }
        netceil_analyze::analyze_into(part);
        if let Some(f) = part.findings.first() {
            line.push_str(&format!("  {}", f.cause));
        }
    }
    top.meta.complete = !interrupted;
    top.notes.push(
        "each step is `netceil run` with the shared arguments and one combination of --param values; each part carries its values as labels (param.NAME)".into(),
    );
    cmd.done(true, |_| lines.iter().map(|l| format!("{l}\n")).collect())
}

fn combo_words(combo: &[(String, String)]) -> String {
    combo
        .iter()
        .map(|(n, v)| format!("--{n} {v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A step's headline: throughput, packet rate and loss, or transactions for rr.
fn headline(r: &Results) -> String {
    if let Some(tps) = r.transactions_per_s {
        return format!("{} transactions/s", fmt::count(tps as u64));
    }
    let sent = r.tx_packets.saturating_sub(r.in_flight_packets);
    let loss = if sent > 0 {
        format!(
            ", lost {:.3} %",
            100.0 * r.lost_packets as f64 / sent as f64
        )
    } else {
        String::new()
    };
    format!(
        "{}  {}{loss}",
        fmt::value(
            r.rx_app_bits_per_s.max(r.tx_bits_per_s),
            Unit::BitsPerSecond
        ),
        fmt::value(r.rx_app_pps.max(r.tx_pps), Unit::PacketsPerSecond)
    )
}

#[cfg(test)]
mod param_tests {
    use super::*;

    #[test]
    fn params_and_their_combinations() {
        let a = parse_param("size=64,1472").unwrap();
        let b = parse_param("--threads=1, 2").unwrap();
        assert_eq!(b, ("threads".into(), vec!["1".into(), "2".into()]));
        let c = combinations(&[a, b]);
        assert_eq!(c.len(), 4);
        assert_eq!(
            c[1],
            vec![("size".into(), "64".into()), ("threads".into(), "2".into())]
        );
        assert!(parse_param("size").is_err());
        assert!(parse_param("size=").is_err());
        assert!(parse_param("si ze=1").is_err());
    }
}
