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

use netceil_model::{MetricId, NicInfo, Series};

use crate::rates::{rates, Row, SLOW_TIER_METRICS, SLOW_TIER_REASON};
use crate::sampler::{Sampler, SamplerConfig, Snapshot};
use crate::Source;

/// Appends one row per interval to a [`Series`].
#[derive(Debug)]
pub struct Recorder {
    series: Series,
    first_t: Option<Duration>,
    prev: Option<Snapshot>,
    // Series::set searches linearly; with hundreds of per-CPU metrics that adds up at 10 ms.
    index: HashMap<MetricId, usize>,
    /// The column of each value of the previous row, in order.
    last_columns: Vec<usize>,
    slow_tier_noted: bool,
}

impl Recorder {
    /// An empty recording whose nominal interval is `interval`.
    pub fn new(interval: Duration) -> Self {
        Recorder {
            series: Series::new(interval.as_secs_f64()),
            first_t: None,
            prev: None,
            index: HashMap::new(),
            last_columns: Vec::new(),
            slow_tier_noted: false,
        }
    }

    /// Adds a snapshot. The first one is the baseline and makes no row; each later one makes
    /// the row of the interval since the previous snapshot, which is appended and returned.
    pub fn push(&mut self, snap: Snapshot) -> Option<Row> {
        let first = *self.first_t.get_or_insert(snap.t);
        let row = self.prev.as_ref().map(|prev| {
            let mut row = rates(prev, &snap);
            row.t_s = snap.t.saturating_sub(first).as_secs_f64();
            (row, prev.slow.seq == snap.slow.seq)
        });
        self.prev = Some(snap);
        let (row, slow_tier_skipped) = row?;
        self.append(&row);
        if slow_tier_skipped && !self.slow_tier_noted {
            for name in SLOW_TIER_METRICS {
                self.series.note_missing(name, SLOW_TIER_REASON);
            }
            self.slow_tier_noted = true;
        }
        Some(row)
    }

    fn append(&mut self, row: &Row) {
        let last = self.series.push_row(row.t_s);
        let previous = std::mem::take(&mut self.last_columns);
        let mut columns = Vec::with_capacity(row.values.len());
        for (k, (id, unit, value)) in row.values.iter().enumerate() {
            // Rows mostly repeat the previous row's metrics in the same order: one
            // comparison instead of a hash lookup.
            let same = previous
                .get(k)
                .copied()
                .filter(|&i| self.series.metrics[i].id == *id);
            let i = match same.or_else(|| self.index.get(id).copied()) {
                Some(i) => i,
                None => {
                    self.series.set(id, *unit, *value);
                    let i = self.series.metrics.len() - 1;
                    self.index.insert(id.clone(), i);
                    i
                }
            };
            self.series.metrics[i].values[last] = Some(*value);
            columns.push(i);
        }
        self.last_columns = columns;
        for (metric, reason) in &row.missing {
            self.series.note_missing(metric, reason.clone());
        }
    }

    /// The rows so far.
    pub fn series(&self) -> &Series {
        &self.series
    }

    /// The most recent snapshot.
    pub fn last_snapshot(&self) -> Option<&Snapshot> {
        self.prev.as_ref()
    }

    pub fn into_series(self) -> Series {
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
}

/// The longest the thread sleeps before looking at the stop flag again, so a flag set
/// without [`SamplerHandle::stop`] (a Ctrl-C handler) still ends it promptly.
const STOP_POLL: Duration = Duration::from_millis(100);

/// Starts sampling on a new thread named `netceil-sampler`: a baseline at once, then one
/// snapshot per `config.interval` on a fixed schedule (a late sample does not shift the
/// following ones; samples that could not be taken in time are skipped). Each row is sent on
/// `rows` (a closed receiver is ignored); setting `stop` ends the thread, and
/// [`SamplerHandle::stop`] returns the recording.
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
