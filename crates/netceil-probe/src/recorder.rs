//! Recording: rows into a [`Series`], and a background thread that samples on a schedule.
//!
//! [`Recorder`] turns a stream of snapshots into rows of a `Series` (one per interval, `t_s`
//! measured from the first snapshot) and writes each missing value's reason once.
//! [`spawn_sampler`] runs a [`Sampler`] and a `Recorder` on their own thread beside a
//! workload, sends every row as it is made, and hands back the whole series when stopped, so
//! a caller can show a live table and still keep everything sampled so far.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use netceil_model::{Metric, MetricId, NicInfo, Series, Unit};

use crate::ids::{MetricIds, Schema};
use crate::rates::{rates_with, Row, SLOW_TIER_METRICS, SLOW_TIER_REASON};
use crate::sampler::{Sampler, SamplerConfig, Snapshot};
use crate::Source;

/// Rows a [`Recorder`] holds before writing them into its series. The series is columnar:
/// a row touches every column, ~100 places in memory, all out of the CPU's caches after
/// 10 ms asleep. Written together, consecutive rows find the same columns still cached.
const PENDING_ROWS: usize = 64;

/// Schemas whose columns a [`Recorder`] keeps worked out.
const MAX_SCHEMAS: usize = 16;

/// Appends one row per interval to a [`Series`].
#[derive(Debug)]
pub struct Recorder {
    series: Series,
    first_t: Option<Duration>,
    prev: Option<Snapshot>,
    /// Metric identities and row schemas shared from one row to the next.
    ids: MetricIds,
    /// The series column of each value of a schema, for the schemas seen recently (most
    /// recent first); the schema is held so that the pointer comparison stays sound.
    columns: Vec<(Arc<Schema>, Vec<usize>)>,
    // Series::set searches linearly; with hundreds of per-CPU metrics that adds up at 10 ms.
    index: HashMap<MetricId, usize>,
    slow_tier_noted: bool,
    /// Rows not yet written into the series, and whether the slow-tier note comes with them.
    pending: Vec<(Row, bool)>,
}

impl Recorder {
    /// An empty recording whose nominal interval is `interval`.
    pub fn new(interval: Duration) -> Self {
        Recorder {
            series: Series::new(interval.as_secs_f64()),
            first_t: None,
            prev: None,
            ids: MetricIds::new(),
            columns: Vec::new(),
            index: HashMap::new(),
            slow_tier_noted: false,
            pending: Vec::new(),
        }
    }

    /// Adds a snapshot. The first one is the baseline and makes no row; each later one makes
    /// the row of the interval since the previous snapshot, which is appended and returned.
    pub fn push(&mut self, snap: Snapshot) -> Option<Row> {
        let first = *self.first_t.get_or_insert(snap.t);
        let row = self.prev.as_ref().map(|prev| {
            let mut row = rates_with(&mut self.ids, prev, &snap);
            row.t_s = snap.t.saturating_sub(first).as_secs_f64();
            (row, prev.slow.seq == snap.slow.seq)
        });
        self.prev = Some(snap);
        let (row, slow_tier_skipped) = row?;
        let note_slow_tier = slow_tier_skipped && !self.slow_tier_noted;
        self.slow_tier_noted |= note_slow_tier;
        self.pending.push((row.clone(), note_slow_tier));
        if self.pending.len() >= PENDING_ROWS {
            self.flush();
        }
        Some(row)
    }

    /// Writes the pending rows into the series.
    fn flush(&mut self) {
        for (row, note_slow_tier) in std::mem::take(&mut self.pending) {
            self.append(&row);
            if note_slow_tier {
                for name in SLOW_TIER_METRICS {
                    self.series.note_missing(name, SLOW_TIER_REASON);
                }
            }
        }
    }

    fn append(&mut self, row: &Row) {
        let last = self.series.push_row(row.t_s);
        // Rows share a few schemas (with and without the slow tier): the columns are worked
        // out once per schema, and a row is then written without looking at its identities.
        let found = self
            .columns
            .iter()
            .position(|(schema, _)| Arc::ptr_eq(schema, &row.schema));
        let (schema, columns) = match found {
            Some(i) => self.columns.remove(i),
            None => {
                let columns = row
                    .schema
                    .entries()
                    .iter()
                    .map(|(id, unit)| self.column(id, *unit))
                    .collect();
                self.columns.truncate(MAX_SCHEMAS - 1);
                (Arc::clone(&row.schema), columns)
            }
        };
        for (&i, &value) in columns.iter().zip(&row.values) {
            self.series.metrics[i].values[last] = Some(value);
        }
        self.columns.insert(0, (schema, columns));
        for (id, unit, value) in &row.extra {
            let i = self.column(id, *unit);
            self.series.metrics[i].values[last] = Some(*value);
        }
        for (metric, reason) in &row.missing {
            self.series.note_missing(metric, reason.clone());
        }
    }

    /// The series column of a metric, made (missing in earlier rows) if new.
    fn column(&mut self, id: &MetricId, unit: Unit) -> usize {
        if let Some(&i) = self.index.get(id) {
            return i;
        }
        let i = self.series.metrics.len();
        self.series.metrics.push(Metric {
            id: id.clone(),
            unit,
            values: vec![None; self.series.t_s.len()],
        });
        self.index.insert(id.clone(), i);
        i
    }

    /// The rows so far.
    pub fn series(&mut self) -> &Series {
        self.flush();
        &self.series
    }

    /// The most recent snapshot.
    pub fn last_snapshot(&self) -> Option<&Snapshot> {
        self.prev.as_ref()
    }

    pub fn into_series(mut self) -> Series {
        self.flush();
        self.series
    }
}

/// What a sampler thread hands back when it stops.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplerOutput {
    /// Every row recorded.
    pub series: Series,
    /// The recorded interfaces, as last read.
    pub nics: Vec<NicInfo>,
    /// CPU time the sampler thread used, seconds (`None` without a thread CPU clock).
    pub sampler_cpu_s: Option<f64>,
    /// Wall time from the first to the last sample, seconds.
    pub wall_s: f64,
    /// Snapshots taken (rows + 1 when at least one was taken).
    pub samples: usize,
}

impl SamplerOutput {
    /// The sampler's CPU as a percentage of one core over its wall time.
    pub fn sampler_cpu_pct(&self) -> Option<f64> {
        let cpu = self.sampler_cpu_s?;
        (self.wall_s > 0.0).then(|| 100.0 * cpu / self.wall_s)
    }
}

/// A running sampler thread.
#[derive(Debug)]
pub struct SamplerHandle {
    thread: JoinHandle<SamplerOutput>,
    stop: Arc<AtomicBool>,
}

impl SamplerHandle {
    /// Stops sampling and returns everything recorded. A last, shorter interval is recorded
    /// when at least half an interval has passed since the last sample.
    pub fn stop(self) -> std::thread::Result<SamplerOutput> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.thread().unpark();
        self.thread.join()
    }

    /// Whether the thread has ended (after the stop flag was set elsewhere).
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Something another thread (a Ctrl-C handler, a thread waiting for a command to exit)
    /// can keep to end the sampling without owning the handle.
    pub fn stopper(&self) -> SamplerStopper {
        SamplerStopper {
            stop: Arc::clone(&self.stop),
            thread: self.thread.thread().clone(),
        }
    }
}

/// Ends a sampler thread from anywhere: see [`SamplerHandle::stopper`].
#[derive(Debug, Clone)]
pub struct SamplerStopper {
    stop: Arc<AtomicBool>,
    thread: std::thread::Thread,
}

impl SamplerStopper {
    /// Asks the thread to end now: it takes its last sample (when at least half an interval
    /// has passed), returns, and closes the row channel, which wakes a receiver waiting on it.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.unpark();
    }
}

/// The longest the thread sleeps before looking at the stop flag again. Whoever stops it
/// through [`SamplerHandle::stop`] or a [`SamplerStopper`] also wakes it, so this only
/// bounds how late a flag set in some other way is seen; it is long so that an idle
/// observer at a long interval does not wake for nothing (each wake-up costs CPU).
const STOP_POLL: Duration = Duration::from_secs(1);

/// Starts sampling on a new thread named `netceil-sampler`: a baseline at once, then one
/// snapshot per `config.interval` on a fixed schedule (a late sample does not shift the
/// following ones; samples that could not be taken in time are skipped). Each row is sent on
/// `rows` (a closed receiver is ignored); setting `stop` ends the thread, and
/// [`SamplerHandle::stop`] returns the recording. When the thread ends, `rows` is dropped,
/// so a receiver learns it from a closed channel.
pub fn spawn_sampler<S: Source + Send + 'static>(
    source: S,
    config: SamplerConfig,
    stop: Arc<AtomicBool>,
    rows: Sender<Row>,
) -> std::io::Result<SamplerHandle> {
    config
        .validate()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let flag = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("netceil-sampler".into())
        .spawn(move || run(source, config, &flag, &rows))?;
    Ok(SamplerHandle { thread, stop })
}

fn run<S: Source>(
    source: S,
    config: SamplerConfig,
    stop: &AtomicBool,
    rows: &Sender<Row>,
) -> SamplerOutput {
    let interval = config.interval;
    let mut sampler = Sampler::new(source, config);
    let mut recorder = Recorder::new(interval);
    let start = Instant::now();
    let cpu_at_start = sampler.source().thread_cpu_time();
    let mut samples = 0usize;
    let mut last_sample = Instant::now();
    let mut take = |sampler: &mut Sampler<S>, recorder: &mut Recorder| {
        let snap = sampler.sample();
        samples += 1;
        if let Some(row) = recorder.push(snap) {
            // Nobody listening is fine: the series keeps the row.
            let _ = rows.send(row);
        }
    };
    take(&mut sampler, &mut recorder);
    let mut next = 1u32;
    'outer: loop {
        let deadline = start + interval * next;
        loop {
            if stop.load(Ordering::SeqCst) {
                break 'outer;
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            std::thread::park_timeout((deadline - now).min(STOP_POLL));
        }
        take(&mut sampler, &mut recorder);
        last_sample = Instant::now();
        // Skip slots already missed instead of sampling in a burst.
        let elapsed = last_sample.duration_since(start);
        let due =
            u32::try_from(elapsed.as_nanos() / interval.as_nanos().max(1)).unwrap_or(u32::MAX);
        next = due.saturating_add(1).max(next + 1);
    }
    if last_sample.elapsed() >= interval / 2 {
        take(&mut sampler, &mut recorder);
    }
    let sampler_cpu_s = sampler
        .source()
        .thread_cpu_time()
        .zip(cpu_at_start)
        .map(|(end, begin)| end.saturating_sub(begin).as_secs_f64());
    let series = recorder.into_series();
    SamplerOutput {
        wall_s: series.t_s.last().copied().unwrap_or(0.0),
        nics: sampler.nic_info(),
        sampler_cpu_s,
        samples,
        series,
    }
}
