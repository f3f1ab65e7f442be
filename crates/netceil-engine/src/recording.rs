//! The observer beside every run and watch: a sampler thread recording the machine's counters,
//! the workload's own figures attached to the same rows, and the run streamed into the store
//! as it goes, so a crash or Ctrl-C keeps what was measured.

use anyhow::Context;
use netceil_model::{MetricId, Run, Unit};
use netceil_probe::{spawn_sampler, Row, SamplerConfig, SamplerHandle, SamplerStopper, Source};
use netceil_store::{RunWriter, Store};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::observer::Observer;
use crate::Error;

/// Checks a sampling interval given by `flag` before anything starts: bad input.
pub fn check_interval(interval: Duration, flag: &str) -> Result<(), Error> {
    SamplerConfig {
        interval,
        ..SamplerConfig::default()
    }
    .validate()
    .map_err(|e| Error::usage(anyhow::anyhow!("{flag}: {e}")))
}

/// The workload's figures for one interval, as series values.
pub type LoadValues = Vec<(MetricId, Unit, f64)>;

/// Below this sampling interval, rows reach the main thread in batches this far apart (see
/// [`Recording::wait_rows`]).
pub const ROW_BATCH: Duration = Duration::from_millis(250);

/// A sampler recording the machine, and the run being written to the store.
pub struct Recording<'s> {
    handle: Option<SamplerHandle>,
    interval: Duration,
    rows: Receiver<Row>,
    started: Instant,
    /// When rows last came (or the recording started): rows overdue raise the sampler.
    last_rows: Instant,
    writer: Option<RunWriter<'s>>,
    /// The store the writer writes to.
    store: Option<&'s Store>,
    /// Workload values attached to sampler rows, by the row's `t_s`, re-applied to the final series.
    attached: Vec<(f64, LoadValues)>,
    /// eBPF probes beside the sampler (`--probe`), merged into the run at [`Recording::stop`].
    probes: Option<crate::probes::ProbeSession>,
    /// Who is shown every row stored (a metrics endpoint, a JSON stream).
    observers: Vec<Box<dyn Observer + 's>>,
    /// The workload's pid and its cgroup's CPU quota at the start, when it had one.
    quota: Option<(u32, netceil_probe::cgroup::CgroupCpu)>,
    /// Where the machine is read.
    source: Arc<dyn Source + Send + Sync>,
}

impl<'s> Recording<'s> {
    /// Starts sampling, and begins the run in the store (meta first, marked incomplete).
    pub fn start(
        source: Arc<dyn Source + Send + Sync>,
        interval: Duration,
        ifaces: Vec<String>,
        pids: Vec<i32>,
        store: Option<&'s Store>,
        run: &Run,
    ) -> anyhow::Result<Recording<'s>> {
        let (tx, rows) = channel();
        // The workload's cgroup CPU quota, read now and at the end: how much of it was used.
        let quota = pids
            .first()
            .and_then(|p| u32::try_from(*p).ok())
            .and_then(|p| netceil_probe::cgroup::read(&*source, p).map(|q| (p, q)));
        let config = SamplerConfig {
            interval,
            ifaces: if ifaces.is_empty() {
                None
            } else {
                Some(ifaces)
            },
            pids,
            // A request/response run's tail must not hold the sampler's reads; its load
            // leaves the CPUs room, so the idle class costs no rows (see netceil_probe::sched).
            idle_class: run
                .workload
                .as_ref()
                .is_some_and(|w| w.kind == netceil_model::WorkloadKind::Rr),
            ..SamplerConfig::default()
        };
        let handle = spawn_sampler(source.clone(), config, Arc::new(AtomicBool::new(false)), tx)
            .context("starting the sampler thread")?;
        // The run is stored with its interval from the start: a run killed before its end
        // still says how long its rows are.
        let mut begun = Run::new(run.run_id.clone(), run.source.clone());
        begun.workload = run.workload.clone();
        begun.meta = run.meta.clone();
        begun.notes = run.notes.clone();
        begun.series.interval_s = interval.as_secs_f64();
        let writer = store.and_then(|s| match s.begin_run(&begun) {
            Ok(w) => Some(w),
            Err(e) => {
                eprintln!("netceil: this run will not be stored: {e}");
                None
            }
        });
        Ok(Recording {
            handle: Some(handle),
            interval,
            rows,
            started: Instant::now(),
            last_rows: Instant::now(),
            writer,
            store,
            attached: Vec::new(),
            probes: None,
            observers: Vec::new(),
            quota,
            source,
        })
    }

    /// Hands over probes attached before the recording started (a watched command's probes
    /// go on before the command starts, so its first events and its children are seen).
    pub fn set_probes(&mut self, session: crate::probes::ProbeSession) {
        self.probes = Some(session);
    }

    /// Seconds since sampling started: the time base of the series.
    pub fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Rows recorded since the last call; waits up to `wait` for at least one (on a saturated
    /// machine the sampler thread is scheduled late). Every row is streamed to the store.
    pub fn rows(&mut self, wait: Duration) -> Vec<Row> {
        let mut rows: Vec<Row> = self.rows.try_iter().collect();
        if rows.is_empty() && !wait.is_zero() {
            rows.extend(self.rows.recv_timeout(wait).ok());
            rows.extend(self.rows.try_iter());
        }
        self.check_sampler(!rows.is_empty());
        rows
    }

    /// How long rows may keep away before the sampler is taken to be starved: an interval
    /// (or a batch), plus what the sampler itself allows a late sample.
    fn overdue(&self) -> Duration {
        self.interval.max(ROW_BATCH) + netceil_probe::sched::late_limit(self.interval)
    }

    /// Notes rows that came; when none came for longer than [`Recording::overdue`], moves the
    /// sampler out of the idle scheduling class: the CPUs are full, and a thread in that class
    /// may not get to run for seconds, not even to raise itself.
    fn check_sampler(&mut self, got_rows: bool) {
        let now = Instant::now();
        if got_rows {
            self.last_rows = now;
        } else if now.duration_since(self.last_rows) >= self.overdue() {
            if let Some(h) = &self.handle {
                h.raise();
            }
            // Counted afresh: a sampler that is not starved but slow is not raised again and
            // again, and whoever waits does not spin.
            self.last_rows = now;
        }
    }

    /// Waits for the next rows until `deadline` (without one, until rows come). Returns them,
    /// and whether the sampler has ended (stopped, or asked to stop by a
    /// [`Recording::stopper`]) and every row it made has been taken.
    ///
    /// At intervals shorter than [`ROW_BATCH`] the caller is woken at most every
    /// [`ROW_BATCH`] with the rows made meanwhile (or sooner by an unpark, from a Ctrl-C
    /// handler or a thread that saw the command end): a wake-up per 10 ms row cost the main
    /// thread more than everything it does with the row, and the store commits a batch in
    /// one transaction.
    pub fn wait_rows(&mut self, deadline: Option<Instant>) -> (Vec<Row>, bool) {
        if self.interval < ROW_BATCH {
            let until = Instant::now() + ROW_BATCH;
            let until = deadline.map_or(until, |d| d.min(until));
            std::thread::park_timeout(until.saturating_duration_since(Instant::now()));
            let mut rows: Vec<Row> = Vec::new();
            let ended = loop {
                match self.rows.try_recv() {
                    Ok(row) => rows.push(row),
                    Err(TryRecvError::Empty) => break false,
                    Err(TryRecvError::Disconnected) => break true,
                }
            };
            self.check_sampler(!rows.is_empty());
            return (rows, ended);
        }
        let first = loop {
            // Never longer than rows may be overdue, to raise a starved sampler meanwhile.
            let overdue = self.last_rows + self.overdue();
            let until = deadline.map_or(overdue, |d| d.min(overdue));
            match self
                .rows
                .recv_timeout(until.saturating_duration_since(Instant::now()))
            {
                Err(RecvTimeoutError::Timeout) if deadline.is_none_or(|d| Instant::now() < d) => {
                    self.check_sampler(false);
                }
                r => break r,
            }
        };
        let got = first.as_ref().is_ok();
        self.check_sampler(got);
        match first {
            Ok(row) => {
                let mut rows = vec![row];
                rows.extend(self.rows.try_iter());
                (rows, false)
            }
            Err(RecvTimeoutError::Timeout) => (Vec::new(), false),
            Err(RecvTimeoutError::Disconnected) => (Vec::new(), true),
        }
    }

    /// Ends the sampling from another thread (a Ctrl-C handler, a thread waiting for a
    /// command); the rows stay in the recording.
    pub fn stopper(&self) -> Option<SamplerStopper> {
        self.handle.as_ref().map(SamplerHandle::stopper)
    }

    /// Attaches the workload's figures of the same interval to the newest row, then streams
    /// the rows to the store.
    pub fn attach_and_store(&mut self, rows: &mut [Row], load: LoadValues) {
        if let Some(newest) = rows.last_mut() {
            newest.extra.extend(load.iter().cloned());
            self.attached.push((newest.t_s, load));
        }
        self.store_rows(rows);
    }

    /// Shows every row stored from now on to `observer` as well.
    pub fn observe(&mut self, observer: Box<dyn Observer + 's>) {
        self.observers.push(observer);
    }

    /// The observers, for the session to tell them about its parts.
    pub(crate) fn observers(&mut self) -> &mut [Box<dyn Observer + 's>] {
        &mut self.observers
    }

    /// Streams rows to the store, in one transaction (the rows of one wake-up: one interval,
    /// or up to [`ROW_BATCH`] of them at shorter intervals), and to the metrics endpoint.
    pub fn store_rows(&mut self, rows: &[Row]) {
        for o in &mut self.observers {
            o.rows(rows);
        }
        let Some(w) = self.writer.as_mut() else {
            return;
        };
        type Values<'r> = Vec<(&'r MetricId, Unit, Option<f64>)>;
        let batch: Vec<(f64, Values)> = rows
            .iter()
            .map(|row| {
                let values = row
                    .iter()
                    .map(|(id, unit, v)| (id, unit, Some(v)))
                    .collect();
                (row.t_s, values)
            })
            .collect();
        if let Err(e) = w.append_rows(&batch) {
            eprintln!("netceil: stopped writing this run to the store: {e}");
            self.writer = None;
        }
    }

    /// Stops sampling and moves the recording into the run: series (with the workload's
    /// figures), interfaces, the sampler's own cost. Returns the rows not yet seen.
    pub fn stop(&mut self, run: &mut Run) -> Vec<Row> {
        if let Some((pid, start)) = self.quota.take() {
            let end = netceil_probe::cgroup::read(&*self.source, pid);
            let (used, throttled) = end
                .as_ref()
                .map(|e| netceil_probe::cgroup::between(&start, e, self.elapsed_s()))
                .unwrap_or((None, None));
            run.meta.cpu_quota = Some(netceil_model::CpuQuota {
                cgroup: start.path.clone(),
                cpus: start.quota_cpus,
                used_cpus: used,
                throttled_pct: throttled,
            });
        }
        let mut rest: Vec<Row> = self.rows.try_iter().collect();
        let Some(handle) = self.handle.take() else {
            return rest;
        };
        let stopped = handle.stop();
        rest.extend(self.rows.try_iter());
        match stopped {
            Ok(out) => {
                run.notes.extend(memory_notes(&out));
                run.notes.extend(priority_note(out.priority));
                run.notes
                    .extend(netceil_probe::cpu_share::unticked_note(&out.series));
                run.meta.sampler_cpu_s = out.sampler_cpu_s;
                run.meta.sampler_cpu_pct = out.sampler_cpu_pct();
                if !out.nics.is_empty() {
                    run.meta.host.nics = out.nics;
                }
                run.series = out.series;
            }
            Err(_) => run
                .notes
                .push("the sampler thread failed; no timeline was recorded".into()),
        }
        attach(&mut run.series, &self.attached);
        if let Some(p) = self.probes.take() {
            p.finish(run);
        }
        rest
    }

    /// Writes the finished run (results, findings, remaining rows) and marks it complete in the
    /// store. Returns where it went, for the summary.
    /// Stores a finished part at once (a search's trial), so that a kill loses none of the
    /// parts stored before; a failure is reported, not fatal (the run's end writes them all).
    pub fn add_part(&mut self, index: usize, part: &Run) {
        if let Some(w) = self.writer.as_mut() {
            if let Err(e) = w.add_part(index, part) {
                eprintln!("netceil: could not store part {} now: {e}", index + 1);
            }
        }
    }

    /// Removes the run from the store, as if it had never begun: for a test the far end
    /// refused before any load went out, which measured nothing.
    pub fn abandon(&mut self) {
        if let Some(w) = self.writer.take() {
            let id = w.run_id().to_string();
            drop(w);
            let Some(store) = self.store else { return };
            if let Err(e) = store.delete(&id) {
                eprintln!("netceil: could not remove the empty run {id} from the store: {e}");
            }
        }
    }

    pub fn finish(self, run: &Run) -> Option<String> {
        self.finish_as(run, true)
    }

    /// [`Recording::finish`], stored complete or not (a run stopped before its end is not).
    pub fn finish_as(self, run: &Run, complete: bool) -> Option<String> {
        let w = self.writer?;
        match w.finish_as(run, complete) {
            Ok(()) => Some(run.run_id.clone()),
            Err(e) => {
                eprintln!("netceil: could not finish storing run {}: {e}", run.run_id);
                None
            }
        }
    }
}

/// The sampler left the idle scheduling class mid-run (see [`netceil_probe::sched`]): said,
/// since its rows were late before and it took its share of the CPUs after.
fn priority_note(priority: netceil_probe::sched::SamplerPriority) -> Option<String> {
    match priority {
        netceil_probe::sched::SamplerPriority::Raised { at_s, late_ms } => Some(format!(
            "the sampler ran in the idle scheduling class, out of the workload's way, until {at_s:.1} s, when the CPUs were full and a sample came {late_ms:.1} ms late; from then on it ran at nice {}, taking its small share of a full CPU",
            netceil_probe::sched::SAMPLER_NICE
        )),
        _ => None,
    }
}

/// What the sampler's in-memory copy of the run merged or left out (the store has all of it):
/// said in the run's notes.
fn memory_notes(out: &netceil_probe::SamplerOutput) -> Vec<String> {
    let mut notes = Vec::new();
    if out.rows_per_row > 1 {
        notes.push(format!(
            "the run's {} rows were more than netceil keeps in memory ({}): the store has every row, while this summary, the verdict and --json were made from rows merged {} into one (means over time; counts the later reading)",
            out.samples.saturating_sub(1),
            netceil_probe::MAX_ROWS,
            out.rows_per_row
        ));
    }
    if !out.dropped_columns.is_empty() {
        let what: Vec<String> = out
            .dropped_columns
            .iter()
            .map(|(name, n)| format!("{n} of {name}"))
            .collect();
        notes.push(format!(
            "more processes, threads or flows came and went than netceil keeps columns for in memory ({}): {} columns, of those least recently seen and least busy, were left out of this summary, the verdict and --json; the store has every row with every column",
            netceil_probe::MAX_PROCESS_COLUMNS,
            what.join(", ")
        ));
    }
    notes
}

/// The workload's figures of each interval, set on the row that ends at their `t_s`; when the
/// recording merged its rows (see `netceil_probe::MAX_ROWS`), on the row whose span
/// holds it, as the mean of the figures it holds.
fn attach(series: &mut netceil_model::Series, attached: &[(f64, LoadValues)]) {
    let mut sums: std::collections::BTreeMap<(usize, &MetricId), (Unit, f64, u32)> =
        std::collections::BTreeMap::new();
    for (t, values) in attached {
        let row = series.t_s.partition_point(|x| x < t);
        if row >= series.len() {
            continue;
        }
        for (id, unit, v) in values {
            let e = sums.entry((row, id)).or_insert((*unit, 0.0, 0));
            e.1 += v;
            e.2 += 1;
        }
    }
    for ((row, id), (unit, sum, n)) in sums {
        series.set_at(row, id, unit, sum / f64::from(n));
    }
}

#[cfg(test)]
mod attach_tests {
    use super::*;

    #[test]
    fn the_workloads_figures_land_on_the_row_that_holds_them() {
        let id = MetricId::new("load_rx_pps");
        let mut series = netceil_model::Series::new(0.02);
        series.push_row(0.02);
        series.push_row(0.04);
        let at = |t: f64, v: f64| (t, vec![(id.clone(), Unit::PacketsPerSecond, v)]);
        // Rows of 10 ms merged two into one: each kept row holds two intervals' figures.
        attach(
            &mut series,
            &[
                at(0.01, 100.0),
                at(0.02, 300.0),
                at(0.03, 500.0),
                at(0.04, 700.0),
                at(0.05, 1.0),
            ],
        );
        let m = series.get(&id).unwrap();
        assert_eq!(m.values, vec![Some(200.0), Some(600.0)]);
        // Unmerged, each figure is its own row's, as before.
        let mut exact = netceil_model::Series::new(0.01);
        exact.push_row(0.01);
        exact.push_row(0.02);
        attach(&mut exact, &[at(0.01, 5.0), at(0.02, 7.0)]);
        assert_eq!(exact.get(&id).unwrap().values, vec![Some(5.0), Some(7.0)]);
    }

    #[test]
    fn the_run_says_what_its_in_memory_copy_left_out() {
        let mut out = netceil_probe::SamplerOutput {
            series: netceil_model::Series::new(0.01),
            nics: Vec::new(),
            sampler_cpu_s: None,
            wall_s: 900.0,
            samples: 90_001,
            rows_per_row: 1,
            dropped_columns: std::collections::BTreeMap::new(),
            priority: netceil_probe::sched::SamplerPriority::Idle,
        };
        assert!(memory_notes(&out).is_empty());
        out.rows_per_row = 8;
        out.dropped_columns.insert("proc_cpu_pct".into(), 312);
        let notes = memory_notes(&out);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("90000 rows") && notes[0].contains("merged 8 into one"));
        assert!(notes[1].contains("312 of proc_cpu_pct"), "{}", notes[1]);
        assert!(notes[1].contains("the store has every row"));
    }
}
