//! The UDP size × interval sweep (SEEDS §5). Each cell is one cycle: a train of `count`
//! packets sent `interval` apart. Per cell, the share that arrived is counted at two points:
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
use netceil_model::duration::{format_duration, parse_duration_in, secs_within, RUN};
use netceil_model::params::{Params as WorkloadParams, SweepCycleParams, SweepParams, UdpParams};
use netceil_model::{fmt, Knee, Results, Run, Unit, Workload, WorkloadKind};

use super::{udp_train, Reach};
use crate::{wire_run_id, Campaign, Error, PartAnalysis, Trial};

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
        parse_duration_in(x, RUN)
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
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub interval_ns: f64,
    pub sent: u64,
    pub app_ratio: f64,
    pub kernel_ratio: f64,
    pub cycle_s: f64,
    /// The generator's mean gap was more than 5 % (and 100 ns) longer than asked.
    pub gap_short: bool,
    pub achieved_gap_ns: f64,
}

impl Cell {
    /// Two cycles of one cell as one: the lower arrival at each point, the slower cycle, and
    /// short if either sender fell behind. A cell succeeds only if every cycle did.
    pub fn worse(self, other: Cell) -> Cell {
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

    /// Whether every packet arrived at `point`, sent at the interval asked.
    pub fn ok(&self, point: Point) -> bool {
        !self.gap_short
            && match point {
                Point::Kernel => self.kernel_ratio >= 1.0,
                Point::App => self.app_ratio >= 1.0,
            }
    }

    /// A cycle's cell, from its results: `count` packets asked `interval_ns` apart.
    pub fn of(r: &Results, interval_ns: f64, count: u64) -> Cell {
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
}

/// Where arrival is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    Kernel,
    App,
}

impl Point {
    pub fn name(self) -> &'static str {
        match self {
            Point::Kernel => "kernel",
            Point::App => "app",
        }
    }
}

/// What a stored UDP sweep ran with.
pub fn from_run(run: &Run) -> Result<SweepParams, Error> {
    let bad = |why: &str| {
        Error::usage(anyhow!(
            "--resume {}: {why}; only an interrupted `netceil sweep udp` can be resumed",
            run.run_id
        ))
    };
    let w = run
        .workload
        .as_ref()
        .ok_or_else(|| bad("it has no workload"))?;
    match &w.params {
        WorkloadParams::Sweep(p) => Ok(p.clone()),
        // Stored by another version, or damaged: read what can be read, or say which field.
        WorkloadParams::Other(_) if w.kind == WorkloadKind::Sweep => {
            w.params_as().map_err(|e| bad(&e.to_string()))
        }
        _ => Err(bad("it is not a UDP sweep")),
    }
}

/// The checks a UDP sweep makes before any traffic; its intervals, ns.
pub fn check(settings: &SweepParams, reach: Reach) -> Result<Vec<f64>, Error> {
    let (start, end, step) =
        parse_interval_range(&settings.interval).map_err(|e| Error::usage(anyhow!(e)))?;
    if settings.sizes.is_empty() {
        return Err(Error::usage(anyhow!("--sizes: at least one payload size")));
    }
    if settings.count == 0 {
        return Err(Error::usage(anyhow!(
            "--count: at least one packet per cycle"
        )));
    }
    if settings.cycles == 0 {
        return Err(Error::usage(anyhow!("--cycles: at least one")));
    }
    // Each cycle runs for its train four times over, and 5 s more (see `measure`): the
    // longest must still be a run netceil takes.
    let longest_s = settings.count as f64 * end / 1e9 * 4.0 + 5.0;
    if secs_within(longest_s, RUN).is_none() {
        return Err(Error::usage(anyhow!(
            "--count {} at --interval {}: a cycle would take longer than {}, the longest run",
            settings.count,
            settings.interval,
            format_duration(RUN.max)
        )));
    }
    let pairs: Vec<(usize, usize)> = settings.sizes.iter().map(|&s| (s, s)).collect();
    crate::kernel::check_path_mtu(reach.to, "--sizes", &pairs)
        .map_err(|e| Error::usage(anyhow!(e)))?;
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
    fn measure(&self, i: usize, c: &mut Campaign) -> Result<Cell, Error> {
        let (size, count) = (self.size, self.settings.count);
        let interval = self.intervals[i];
        let mut worst: Option<Cell> = None;
        for cycle in 0..self.settings.cycles {
            let asked = Workload {
                kind: WorkloadKind::Udp,
                params: WorkloadParams::SweepCycle(SweepCycleParams {
                    payload_bytes: size,
                    interval_ns: interval,
                    count,
                    cycle,
                    target: self.settings.target.clone(),
                }),
            };
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
            let cell = Cell::of(&r, interval, count);
            c.session.step(&cell_line(size, &cell, from_store));
            worst = Some(match worst {
                None => cell,
                Some(w) => w.worse(cell),
            });
        }
        worst.ok_or_else(|| Error::usage(anyhow!("--cycles: at least one")))
    }

    /// The knee at `point`, from the cells measured so far and those it needs. `None` when
    /// interrupted.
    fn knee(
        &self,
        point: Point,
        cells: &mut [Option<Cell>],
        measured: &mut usize,
        c: &mut Campaign,
    ) -> Result<Option<Knee>, Error> {
        let mut grid = Measuring { cells: self, c };
        let Some(first_ok) = first_ok(&mut grid, point, cells, measured)? else {
            return Ok(None);
        };
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

/// What the stepping to a knee asks of one size's row of the grid.
trait Grid {
    /// Whether to stop before the next cell.
    fn stopping(&self) -> bool;
    /// The cell at interval index `i`, measured.
    fn cell(&mut self, i: usize) -> Result<Cell, Error>;
}

/// A size's cells measured in the campaign.
struct Measuring<'a, 'c, 's> {
    cells: &'a SizeCells<'a>,
    c: &'c mut Campaign<'s>,
}

impl Grid for Measuring<'_, '_, '_> {
    fn stopping(&self) -> bool {
        self.c.stopping()
    }

    fn cell(&mut self, i: usize) -> Result<Cell, Error> {
        self.cells.measure(i, self.c)
    }
}

/// The first interval index at which every packet arrived at `point`: coarse steps first
/// (about 12 over the range), then every step below the first coarse success. A cell already
/// in `cells` is not measured again; each one measured counts in `measured`. `Some(None)`:
/// no interval succeeded; `None`: stopped.
fn first_ok(
    grid: &mut dyn Grid,
    point: Point,
    cells: &mut [Option<Cell>],
    measured: &mut usize,
) -> Result<Option<Option<usize>>, Error> {
    let stride = (cells.len() / 12).max(1);
    let mut first_ok = None;
    let mut i = 0;
    while i < cells.len() {
        if grid.stopping() {
            return Ok(None);
        }
        if cells[i].is_none() {
            cells[i] = Some(grid.cell(i)?);
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
            if grid.stopping() {
                return Ok(None);
            }
            if slot.is_none() {
                *slot = Some(grid.cell(j)?);
                *measured += 1;
            }
            if slot.as_ref().is_some_and(|c| c.ok(point)) {
                first_ok = Some(j);
                break;
            }
        }
    }
    Ok(Some(first_ok))
}

/// A cycle's line, as the observers are told it.
fn cell_line(size: usize, cell: &Cell, from_store: bool) -> String {
    format!(
        "  {size:>6} B  interval {:>8}  app {:>7.3} %  kernel {:>7.3} %  gap {:>9}{}{}",
        fmt::value(cell.interval_ns / 1e3, Unit::Microseconds),
        cell.app_ratio * 100.0,
        cell.kernel_ratio * 100.0,
        fmt::value(cell.achieved_gap_ns / 1e3, Unit::Microseconds),
        if cell.gap_short {
            "  (generator could not hold the interval)"
        } else {
            ""
        },
        if from_store { "  (from the store)" } else { "" }
    )
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
        goal: None,
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

/// One size's row of the grid: a cell per interval, `None` where none was needed.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeRow {
    pub size: usize,
    pub cells: Vec<Option<Cell>>,
}

/// What a sweep found.
#[derive(Debug, Clone, PartialEq)]
pub struct Swept {
    /// Per size finished, the kernel's knee, then the application's (also the run's knees).
    pub knees: Vec<Knee>,
    /// The grid's cells, per size begun.
    pub rows: Vec<SizeRow>,
    /// Stopped before every size was swept.
    pub interrupted: bool,
}

/// Sweeps as `settings` say over `intervals` (from [`check`]), in the campaign, sending where
/// `reach` says, then ends the campaign with the knees and notes. `why_stopped` says what
/// interrupted it ("interrupted (Ctrl-C)"), if something did.
pub fn run(
    c: &mut Campaign,
    settings: &SweepParams,
    intervals: &[f64],
    reach: Reach,
    why_stopped: &dyn Fn() -> String,
) -> Result<Swept, Error> {
    let count = settings.count;
    let wire_id = wire_run_id(&c.top.run_id);
    let mut knees = Vec::new();
    let mut rows = Vec::new();
    let mut interrupted = false;
    'sizes: for &size in &settings.sizes {
        let cells_of = SizeCells {
            settings,
            size,
            intervals,
            base: udp_train(
                reach,
                size,
                settings.pacing,
                settings.rcvbuf,
                settings.rcvbuf_force,
            ),
            wire_id,
        };
        rows.push(SizeRow {
            size,
            cells: vec![None; intervals.len()],
        });
        let cells = &mut rows.last_mut().expect("just pushed").cells;
        let mut measured = 0usize;
        for point in [Point::Kernel, Point::App] {
            match cells_of.knee(point, cells, &mut measured, c)? {
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
    top.knees = knees.clone();
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
            "{}: the knees cover the sizes finished so far; `netceil sweep udp --resume {}` goes on from here",
            why_stopped(),
            top.run_id
        ));
    }
    Ok(Swept {
        knees,
        rows,
        interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row whose cells succeed from interval index `from` on; it stops after `budget`
    /// cells, and remembers which it measured.
    struct Fake {
        from: usize,
        budget: usize,
        asked: Vec<usize>,
    }

    impl Grid for Fake {
        fn stopping(&self) -> bool {
            self.asked.len() >= self.budget
        }

        fn cell(&mut self, i: usize) -> Result<Cell, Error> {
            self.asked.push(i);
            let r = Results {
                tx_packets: 10,
                rx_app_packets: if i >= self.from { 10 } else { 9 },
                duration_s: 0.001,
                ..Default::default()
            };
            Ok(Cell::of(&r, 0.0, 10))
        }
    }

    fn fake(from: usize, budget: usize) -> Fake {
        Fake {
            from,
            budget,
            asked: Vec::new(),
        }
    }

    #[test]
    fn the_knee_is_found_coarse_then_fine_and_exact_to_the_step() {
        // 25 intervals: a stride of 2. Coarse 0, 2, 4, 6, 8 (the first success), then 7.
        let mut g = fake(7, usize::MAX);
        let mut cells = vec![None; 25];
        let mut measured = 0;
        let k = first_ok(&mut g, Point::App, &mut cells, &mut measured).unwrap();
        assert_eq!(k, Some(Some(7)));
        assert_eq!(g.asked, [0, 2, 4, 6, 8, 7]);
        assert_eq!(measured, 6);
        // The other point reuses every cell measured: the kernel's knee costs nothing more.
        let mut again = fake(7, usize::MAX);
        let k = first_ok(&mut again, Point::Kernel, &mut cells, &mut measured).unwrap();
        assert_eq!((k, again.asked.len(), measured), (Some(Some(7)), 0, 6));
    }

    #[test]
    fn no_success_is_said_and_a_stop_is_not_a_knee() {
        let mut g = fake(100, usize::MAX);
        let mut cells = vec![None; 5];
        let mut measured = 0;
        assert_eq!(
            first_ok(&mut g, Point::App, &mut cells, &mut measured).unwrap(),
            Some(None)
        );
        assert_eq!(g.asked, [0, 1, 2, 3, 4]);
        let mut g = fake(3, 2);
        let mut cells = vec![None; 5];
        assert_eq!(
            first_ok(&mut g, Point::App, &mut cells, &mut 0).unwrap(),
            None,
            "stopped after two cells, before the knee"
        );
        assert_eq!(g.asked, [0, 1]);
    }

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
        let c = Cell::of(&r, 1000.0, 5000);
        assert!(c.gap_short && !c.ok(Point::App));
        let c = Cell::of(&r, 3000.0, 5000);
        assert!(!c.gap_short && c.ok(Point::App) && c.ok(Point::Kernel));
        // A train the time limit cut short is no success either.
        let c = Cell::of(&r, 3000.0, 6000);
        assert!(c.gap_short && !c.ok(Point::App));
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
        let c = Cell::of(&full, 0.0, 100).worse(Cell::of(&lossy, 0.0, 100));
        assert!(!c.ok(Point::App));
        assert_eq!(c.cycle_s, 0.002, "the slower cycle");
        assert!(Cell::of(&full, 0.0, 100)
            .worse(Cell::of(&full, 0.0, 100))
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
        let c = Cell::of(&r, 0.0, 100);
        assert!(c.ok(Point::Kernel) && !c.ok(Point::App));
        assert!((c.app_ratio - 0.9).abs() < 1e-12);
    }
}
