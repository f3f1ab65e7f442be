//! Recording: rows into a [`Series`], and a background thread that samples on a schedule.
//!
//! [`Recorder`] turns a stream of snapshots into rows of a `Series` (one per interval, `t_s`
//! measured from the first snapshot) and writes each missing value's reason once.
//! [`spawn_sampler`] runs a [`Sampler`] and a `Recorder` on their own thread beside a
//! workload, sends every row as it is made (at intervals under [`crate::DEFER_MAX`], within
//! that long of its sample: see [`Sampler::sample_deferred`]), and hands back the whole series
//! when stopped, so a caller can show a live table and still keep everything sampled so far.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use netceil_model::names::LABEL_PID;
use netceil_model::{Metric, MetricId, NicInfo, Series, Unit};

use crate::ids::{MetricIds, Schema};
use crate::rates::{
    proto_metrics, rates_with, Row, IRQ_METRICS, IRQ_QUIET_REASON, PROTO_QUIET_REASON,
    QDISC_METRICS, QDISC_QUIET_REASON, SLOW_TIER_METRICS, SLOW_TIER_REASON,
};
use crate::sampler::{Sampler, SamplerConfig, Snapshot};
use crate::sched::{self, SamplerPriority};
use crate::Source;

/// Rows a [`Recorder`] holds before writing them into its series. The series is columnar:
/// a row touches every column, ~100 places in memory, all out of the CPU's caches after
/// 10 ms asleep. Written together, consecutive rows find the same columns still cached.
const PENDING_ROWS: usize = 64;

/// Missing-value pairs a [`Recorder`] remembers having noted; past that it starts over (and
/// the series' own check keeps each pair once).
const MAX_NOTED: usize = 4096;

/// Schemas whose columns a [`Recorder`] keeps worked out.
const MAX_SCHEMAS: usize = 16;

/// Rows a [`Recorder`] keeps in memory at most. Past it, neighbouring rows are merged two into
/// one, and every later row folds into the newest until it holds as many sampler rows as the
/// others: the recording's memory stays bounded however long it runs (a 10 ms watch makes
/// 360 000 rows an hour, ~3 KB each). Every row is still streamed as it is made, so the store
/// keeps them all; what is merged is the copy the verdict and `--json` are made from. 16 384
/// rows are 4.5 hours at 1 s and 2.7 minutes at 10 ms.
pub const MAX_ROWS: usize = 16_384;

/// Columns of one process, thread or flow (a metric with a `pid` label) a [`Recorder`] keeps
/// in memory at most. Such columns come and go with the processes: a long watch on a machine
/// that starts many short-lived busy processes (a build) makes a new column for each, every
/// one as long as the kept rows (16 B a row: 256 KB at [`MAX_ROWS`]), so without a bound the
/// recording's memory grows for as long as it runs. Past it, the columns of those that have
/// gone and were least busy are dropped from the in-memory copy (see
/// [`Recorder::dropped_columns`]); every row was streamed as it was made, so the store still
/// has them whole. Columns still being written are kept, however many.
pub const MAX_PROCESS_COLUMNS: usize = 128;

/// A per-process column written this recently (seconds before the newest row) is kept in
/// preference to older ones: its process is probably still there (two process scans, see
/// [`crate::sampler::PROCESS_SCAN_INTERVAL`]).
const RECENT_S: f64 = 4.0;

/// Readings left out of a row: the whole slow tier, or only its costly files (see
/// [`crate::sampler`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Skips {
    slow: bool,
    irq: bool,
    proto: bool,
}

impl Skips {
    /// What the row between `prev` and `cur` did not read again.
    fn between(prev: &Snapshot, cur: &Snapshot) -> Skips {
        let (p, c) = (&prev.slow, &cur.slow);
        let slow = p.seq == c.seq;
        Skips {
            slow,
            irq: !slow && p.irq_read.seq == c.irq_read.seq,
            proto: !slow && p.proto_read.seq == c.proto_read.seq,
        }
    }

    /// Those of `self` not already in `noted`.
    fn not_in(self, noted: Skips) -> Skips {
        Skips {
            slow: self.slow && !noted.slow,
            irq: self.irq && !noted.irq,
            proto: self.proto && !noted.proto,
        }
    }

    fn or(self, other: Skips) -> Skips {
        Skips {
            slow: self.slow || other.slow,
            irq: self.irq || other.irq,
            proto: self.proto || other.proto,
        }
    }
}

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
    columns: Vec<(Arc<Schema>, Arc<[usize]>)>,
    // Series::set searches linearly; with hundreds of per-CPU metrics that adds up at 10 ms.
    index: HashMap<MetricId, usize>,
    /// Which kinds of skipped readings have been noted in the series.
    skips_noted: Skips,
    /// The missing-value pairs already noted in the series, by address.
    noted: HashMap<usize, crate::rates::Missing>,
    /// Rows not yet written into the series, and the notes of skipped readings that come
    /// with them.
    pending: Vec<(Row, Skips)>,
    /// At most this many rows are kept (see [`MAX_ROWS`]).
    max_rows: usize,
    /// Sampler rows each kept row stands for: 1 until the first merge, then doubling.
    per_row: usize,
    /// Sampler rows the newest kept row holds so far (up to `per_row`).
    newest_holds: usize,
    /// Per-process columns kept at most (see [`MAX_PROCESS_COLUMNS`]), and kept now.
    max_process_columns: usize,
    process_columns: usize,
    /// When the columns still being written are over the bound by themselves, the count of
    /// per-process columns at which to look again.
    check_at: Option<usize>,
    /// Each column's values over time (the sum of |value| x the sampler row's length),
    /// summed as rows are written: merged rows no longer tell it.
    weights: Vec<f64>,
    /// The end of the newest sampler row, seconds.
    last_t: f64,
    /// Per-process columns dropped from memory, by metric name.
    dropped: BTreeMap<String, usize>,
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
            skips_noted: Skips::default(),
            noted: HashMap::new(),
            pending: Vec::new(),
            max_rows: MAX_ROWS,
            per_row: 1,
            newest_holds: 0,
            max_process_columns: MAX_PROCESS_COLUMNS,
            process_columns: 0,
            check_at: None,
            weights: Vec::new(),
            last_t: 0.0,
            dropped: BTreeMap::new(),
        }
    }

    /// A recording that keeps at most `max` per-process columns in memory (at least 4).
    #[must_use]
    pub fn with_max_process_columns(mut self, max: usize) -> Self {
        self.max_process_columns = max.max(4);
        self
    }

    /// The per-process columns dropped from the in-memory copy so far, by metric name (see
    /// [`MAX_PROCESS_COLUMNS`]): empty when none was.
    pub fn dropped_columns(&self) -> &BTreeMap<String, usize> {
        &self.dropped
    }

    /// A recording that keeps at most `max_rows` rows (an even number, at least 2).
    pub fn with_max_rows(interval: Duration, max_rows: usize) -> Self {
        Recorder {
            max_rows: max_rows.max(2) & !1,
            ..Recorder::new(interval)
        }
    }

    /// Sampler rows each kept row stands for: 1 unless the recording outgrew [`MAX_ROWS`].
    pub fn rows_per_row(&self) -> usize {
        self.per_row
    }

    /// Adds a snapshot. The first one is the baseline and makes no row; each later one makes
    /// the row of the interval since the previous snapshot, which is appended and returned.
    pub fn push(&mut self, snap: Snapshot) -> Option<Row> {
        let first = *self.first_t.get_or_insert(snap.t);
        let row = self.prev.as_ref().map(|prev| {
            let mut row = rates_with(&mut self.ids, prev, &snap);
            row.t_s = snap.t.saturating_sub(first).as_secs_f64();
            (row, Skips::between(prev, &snap))
        });
        self.prev = Some(snap);
        let (row, skipped) = row?;
        let note = skipped.not_in(self.skips_noted);
        self.skips_noted = self.skips_noted.or(note);
        self.pending.push((row.clone(), note));
        if self.pending.len() >= PENDING_ROWS {
            self.flush();
        }
        Some(row)
    }

    /// Writes the pending rows into the series.
    fn flush(&mut self) {
        for (row, note) in std::mem::take(&mut self.pending) {
            self.append(&row);
            if note.slow {
                for name in SLOW_TIER_METRICS.iter().chain(QDISC_METRICS) {
                    self.series.note_missing(name, SLOW_TIER_REASON);
                }
            }
            if note.irq {
                for name in IRQ_METRICS {
                    self.series.note_missing(name, IRQ_QUIET_REASON);
                }
            }
            if note.proto {
                for name in proto_metrics() {
                    self.series.note_missing(name, PROTO_QUIET_REASON);
                }
                for name in QDISC_METRICS {
                    self.series.note_missing(name, QDISC_QUIET_REASON);
                }
            }
        }
    }

    fn append(&mut self, row: &Row) {
        if self.series.len() >= self.max_rows && self.newest_holds >= self.per_row {
            self.halve();
        }
        if self.newest_holds < self.per_row && !self.series.is_empty() {
            self.fold_into_newest(row);
        } else {
            self.write_row(row);
            self.newest_holds = 1;
        }
        if self.process_columns > self.max_process_columns
            && self.check_at.is_none_or(|at| self.process_columns >= at)
        {
            self.drop_process_columns();
        }
    }

    /// Drops per-process columns from memory down to three quarters of the bound (so that the
    /// search for them is paid once per many new columns): only those not written in the last
    /// [`RECENT_S`] (their process, thread or flow has gone, or gone quiet), the ones with the
    /// least value over time first (for a process's CPU share: the least CPU time); the
    /// busiest quarter of what is kept stays whatever comes. Columns
    /// still being written are never dropped: a workload with many threads keeps them all.
    /// Their notes of missing values go with them.
    fn drop_process_columns(&mut self) {
        let keep = self.max_process_columns * 3 / 4;
        let newest = self.series.t_s.last().copied().unwrap_or(0.0);
        let t_s = &self.series.t_s;
        let mut live = 0;
        // (sum, column) of the stale ones: dropped in ascending order.
        let mut stale: Vec<(f64, usize)> = Vec::new();
        for (i, m) in self.series.metrics.iter().enumerate() {
            if !is_per_process(&m.id) {
                continue;
            }
            let last = m.values.iter().rposition(Option::is_some);
            if last.is_some_and(|r| t_s[r] >= newest - RECENT_S) {
                live += 1;
                continue;
            }
            // For a CPU share, the CPU time.
            stale.push((self.weights[i], i));
        }
        stale.sort_by(|a, b| a.0.total_cmp(&b.0));
        let drop: std::collections::BTreeSet<usize> = stale
            .iter()
            // The busiest of those gone stay, at least a quarter of what is kept.
            .take(
                stale
                    .len()
                    .saturating_sub(keep.saturating_sub(live).max(keep / 4)),
            )
            .map(|s| s.1)
            .collect();
        // Still over with the live ones alone: look again only after more have come.
        self.check_at = (live > keep).then(|| live + stale.len() - drop.len() + keep / 3);
        let mut gone: Vec<String> = Vec::with_capacity(drop.len());
        let mut i = 0;
        self.series.metrics.retain(|m| {
            let keep = !drop.contains(&i);
            i += 1;
            if !keep {
                *self.dropped.entry(m.id.name.clone()).or_default() += 1;
                gone.push(m.id.to_string());
            }
            keep
        });
        let mut i = 0;
        self.weights.retain(|_| {
            i += 1;
            !drop.contains(&(i - 1))
        });
        gone.sort_unstable();
        self.series
            .missing
            .retain(|n| gone.binary_search(&n.metric).is_err());
        self.process_columns -= drop.len();
        // Column numbers moved: work them out again.
        self.index = self
            .series
            .metrics
            .iter()
            .enumerate()
            .map(|(i, m)| (m.id.clone(), i))
            .collect();
        self.columns.clear();
        self.noted.clear();
    }

    /// Folds `row` into the newest kept row: each value the time-weighted mean of the two
    /// (a count, the later reading), the row's end the later one.
    fn fold_into_newest(&mut self, row: &Row) {
        let last = self.series.len() - 1;
        let start = if last == 0 {
            0.0
        } else {
            self.series.t_s[last - 1]
        };
        let held = (self.series.t_s[last] - start).max(0.0);
        let added = (row.t_s - self.series.t_s[last]).max(0.0);
        let columns = self.columns_of(&row.schema);
        let extra: Vec<(usize, Unit, f64)> = row
            .extra
            .iter()
            .map(|(id, unit, v)| (self.column(id, *unit), *unit, *v))
            .collect();
        let schema = row.schema.entries();
        let values = columns
            .iter()
            .zip(schema)
            .zip(&row.values)
            .map(|((&i, (_, unit)), &v)| (i, *unit, v))
            .chain(extra);
        let span = self.row_span(row);
        for (i, unit, value) in values {
            self.weights[i] += value.abs() * span;
            let cell = &mut self.series.metrics[i].values[last];
            *cell = Some(match *cell {
                Some(old) => merge(unit, old, held, value, added),
                None => value,
            });
        }
        self.note_missing(row);
        self.series.t_s[last] = row.t_s;
        self.newest_holds += 1;
    }

    /// Merges neighbouring rows two into one: the kept rows halve, and each stands for twice
    /// as many sampler rows.
    fn halve(&mut self) {
        let n = self.series.len();
        let kept = n.div_ceil(2);
        let t = &self.series.t_s;
        let span = |r: usize| t[r] - if r == 0 { 0.0 } else { t[r - 1] };
        let spans: Vec<f64> = (0..n).map(span).collect();
        // In place, into the first half of each column, which keeps its capacity: the copy
        // refills the same memory after a merge instead of growing new columns (which left
        // the old ones to the allocator, and resident memory rising at every refill).
        for m in &mut self.series.metrics {
            let unit = m.unit;
            for k in 0..kept {
                let a = m.values[2 * k];
                let b = m.values.get(2 * k + 1).copied().flatten();
                m.values[k] = match (a, b) {
                    (Some(x), Some(y)) => Some(merge(unit, x, spans[2 * k], y, spans[2 * k + 1])),
                    (x, y) => y.or(x),
                };
            }
            m.values.truncate(kept);
        }
        let t_s = &mut self.series.t_s;
        for k in 0..kept {
            t_s[k] = t_s[(2 * k + 1).min(n - 1)];
        }
        t_s.truncate(kept);
        self.series.interval_s *= 2.0;
        self.newest_holds = if n.is_multiple_of(2) {
            2 * self.per_row
        } else {
            self.per_row
        };
        self.per_row *= 2;
    }

    fn write_row(&mut self, row: &Row) {
        let span = self.row_span(row);
        let last = self.series.push_row(row.t_s);
        let columns = self.columns_of(&row.schema);
        for (&i, &value) in columns.iter().zip(&row.values) {
            self.series.metrics[i].values[last] = Some(value);
            self.weights[i] += value.abs() * span;
        }
        for (id, unit, value) in &row.extra {
            let i = self.column(id, *unit);
            self.series.metrics[i].values[last] = Some(*value);
            self.weights[i] += value.abs() * span;
        }
        self.note_missing(row);
    }

    /// The length of a sampler row (its end less the previous row's), seconds; the newest row
    /// end is kept for the next.
    fn row_span(&mut self, row: &Row) -> f64 {
        let span = (row.t_s - self.last_t).max(0.0);
        self.last_t = row.t_s;
        span
    }

    /// Notes the row's missing values in the series, each pair once: the rows share their
    /// pairs (see [`crate::rates::Missing`]), so one already noted is known by its address.
    fn note_missing(&mut self, row: &Row) {
        for note in &row.missing {
            if self.noted.contains_key(&(Arc::as_ptr(note) as usize)) {
                continue;
            }
            if self.noted.len() >= MAX_NOTED {
                self.noted.clear();
            }
            self.series.note_missing(&note.0, note.1.as_str());
            // The pair is held, so its address stays its own.
            self.noted
                .insert(Arc::as_ptr(note) as usize, Arc::clone(note));
        }
    }

    /// The series column of each value of rows of `schema`. Rows share a few schemas (with
    /// and without the slow tier): the columns are worked out once per schema, and a row is
    /// then written without looking at its identities.
    fn columns_of(&mut self, schema: &Arc<Schema>) -> Arc<[usize]> {
        if let Some(i) = self
            .columns
            .iter()
            .position(|(s, _)| Arc::ptr_eq(s, schema))
        {
            let found = self.columns.remove(i);
            let columns = Arc::clone(&found.1);
            self.columns.insert(0, found);
            return columns;
        }
        let columns: Arc<[usize]> = schema
            .entries()
            .iter()
            .map(|(id, unit)| self.column(id, *unit))
            .collect();
        self.columns.truncate(MAX_SCHEMAS - 1);
        self.columns
            .insert(0, (Arc::clone(schema), Arc::clone(&columns)));
        columns
    }

    /// The series column of a metric, made (missing in earlier rows) if new.
    fn column(&mut self, id: &MetricId, unit: Unit) -> usize {
        if let Some(&i) = self.index.get(id) {
            return i;
        }
        let i = self.series.metrics.len();
        self.weights.push(0.0);
        self.series.metrics.push(Metric {
            id: id.clone(),
            unit,
            values: vec![None; self.series.t_s.len()],
        });
        self.index.insert(id.clone(), i);
        if is_per_process(id) {
            self.process_columns += 1;
        }
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

/// Whether a column is one process's, thread's or flow's: it has a `pid` label.
fn is_per_process(id: &MetricId) -> bool {
    id.labels.contains_key(LABEL_PID)
}

/// Two values of one metric over neighbouring spans, as one: a count is the later reading
/// (a number of things at a moment, or a total so far); anything else (rates, shares,
/// latencies, sizes) the mean weighted by the spans' lengths.
fn merge(unit: Unit, a: f64, a_span: f64, b: f64, b_span: f64) -> f64 {
    if unit == Unit::Count {
        return b;
    }
    let total = a_span + b_span;
    if total > 0.0 && a_span >= 0.0 && b_span >= 0.0 {
        (a * a_span + b * b_span) / total
    } else {
        (a + b) / 2.0
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
    /// Sampler rows each row of `series` stands for: 1 unless the recording outgrew
    /// [`MAX_ROWS`] and its rows were merged.
    pub rows_per_row: usize,
    /// Per-process columns left out of `series` to keep its memory bounded, by metric name
    /// (see [`MAX_PROCESS_COLUMNS`]); the rows streamed while sampling had them.
    pub dropped_columns: BTreeMap<String, usize>,
    /// How the sampler thread was scheduled (see [`crate::sched`]).
    pub priority: SamplerPriority,
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
    /// The sampler thread's id, once it has started (0 before).
    tid: Arc<AtomicI32>,
}

impl SamplerHandle {
    /// Stops sampling and returns everything recorded. A last, shorter interval is recorded
    /// when at least half an interval has passed since the last sample.
    pub fn stop(self) -> std::thread::Result<SamplerOutput> {
        self.stopper().stop();
        self.thread.join()
    }

    /// Moves the thread out of the idle scheduling class (see [`crate::sched`]) when it is
    /// still in it: for whoever waits for its rows and finds them overdue, since on CPUs kept
    /// full a thread in that class may not run for a second or more, not even to raise itself.
    /// Its next row then says when it was raised.
    pub fn raise(&self) {
        let tid = self.tid.swap(0, Ordering::SeqCst);
        if tid != 0 {
            let _ = sched::raise(tid);
        }
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
            tid: Arc::clone(&self.tid),
        }
    }
}

/// Ends a sampler thread from anywhere: see [`SamplerHandle::stopper`].
#[derive(Debug, Clone)]
pub struct SamplerStopper {
    stop: Arc<AtomicBool>,
    thread: std::thread::Thread,
    tid: Arc<AtomicI32>,
}

impl SamplerStopper {
    /// Asks the thread to end now: it takes its last sample (when at least half an interval
    /// has passed), returns, and closes the row channel, which wakes a receiver waiting on it.
    /// A sampler still in the idle class is first moved to the ordinary class, so that CPUs
    /// kept full cannot hold its end back.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let tid = self.tid.load(Ordering::SeqCst);
        if tid != 0 {
            // Only an idle-class sampler publishes its id, and this process may raise it.
            let _ = sched::raise(tid);
        }
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
    let tid = Arc::new(AtomicI32::new(0));
    let thread_id = Arc::clone(&tid);
    let thread = std::thread::Builder::new()
        .name("netceil-sampler".into())
        .spawn(move || run(source, config, &flag, &rows, &thread_id))?;
    Ok(SamplerHandle { thread, stop, tid })
}

fn run<S: Source>(
    source: S,
    config: SamplerConfig,
    stop: &AtomicBool,
    rows: &Sender<Row>,
    tid: &AtomicI32,
) -> SamplerOutput {
    // Out of the workload's way (see crate::sched): the idle class while the CPUs have room.
    // The thread id is published while it is in the idle class, for a stopper to raise it.
    let mut priority = if config.idle_class {
        sched::lower_this_thread()
    } else {
        sched::nice_this_thread()
    };
    if priority == SamplerPriority::Idle {
        tid.store(sched::this_thread_id(), Ordering::SeqCst);
    }
    let interval = config.interval;
    let mut recorder = Recorder::with_max_rows(interval, config.max_rows);
    let mut sampler = Sampler::new(source, config);
    let start = Instant::now();
    let cpu_at_start = sampler.source().thread_cpu_time();
    let mut samples = 0usize;
    let mut last_sample = Instant::now();
    let mut snaps = Vec::new();
    let record = |snaps: &mut Vec<Snapshot>, recorder: &mut Recorder| {
        for snap in snaps.drain(..) {
            if let Some(row) = recorder.push(snap) {
                // Nobody listening is fine: the series keeps the row.
                let _ = rows.send(row);
            }
        }
    };
    let mut take = |sampler: &mut Sampler<S>, recorder: &mut Recorder| {
        sampler.sample_deferred(&mut snaps);
        samples += 1;
        record(&mut snaps, recorder);
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
        let woke = Instant::now();
        take(&mut sampler, &mut recorder);
        last_sample = Instant::now();
        if priority == SamplerPriority::Idle {
            // Late to wake, or slow to read because it was preempted all along: the CPUs are
            // full, and the rows matter more now than the workload's few milliseconds.
            let late = woke.saturating_duration_since(deadline) + sampler.last_read_span() / 2;
            if late > sched::late_limit(interval) && sched::raise(0).is_ok() {
                tid.store(0, Ordering::SeqCst);
                priority = SamplerPriority::Raised {
                    at_s: woke.duration_since(start).as_secs_f64(),
                    late_ms: late.as_secs_f64() * 1e3,
                };
            }
        }
        // Skip slots already missed instead of sampling in a burst.
        let elapsed = last_sample.duration_since(start);
        let due =
            u32::try_from(elapsed.as_nanos() / interval.as_nanos().max(1)).unwrap_or(u32::MAX);
        next = due.saturating_add(1).max(next + 1);
    }
    if last_sample.elapsed() >= interval / 2 {
        take(&mut sampler, &mut recorder);
    }
    let mut snaps = Vec::new();
    sampler.flush_deferred(&mut snaps);
    record(&mut snaps, &mut recorder);
    // No stopper may raise a thread id that is about to be free for reuse.
    tid.store(0, Ordering::SeqCst);
    let sampler_cpu_s = sampler
        .source()
        .thread_cpu_time()
        .zip(cpu_at_start)
        .map(|(end, begin)| end.saturating_sub(begin).as_secs_f64());
    recorder.flush();
    let rows_per_row = recorder.rows_per_row();
    let dropped_columns = recorder.dropped_columns().clone();
    let series = recorder.into_series();
    SamplerOutput {
        rows_per_row,
        dropped_columns,
        wall_s: series.t_s.last().copied().unwrap_or(0.0),
        nics: sampler.nic_info(),
        sampler_cpu_s,
        samples,
        series,
        priority,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` rows of 10 ms: a rate that is the row's number, and a count that is too.
    fn rows(n: usize) -> Vec<Row> {
        let rate = MetricId::new("cs_per_s");
        let count = MetricId::new("procs_running");
        let first = Row::from_values(
            0.01,
            0.01,
            vec![(rate, Unit::PerSecond, 1.0), (count, Unit::Count, 1.0)],
        );
        (1..=n)
            .map(|i| Row {
                t_s: i as f64 * 0.01,
                values: vec![i as f64, i as f64],
                ..first.clone()
            })
            .collect()
    }

    fn record(max_rows: usize, rows: &[Row]) -> Recorder {
        let mut r = Recorder::with_max_rows(Duration::from_millis(10), max_rows);
        for row in rows {
            r.append(row);
        }
        r
    }

    #[test]
    fn a_recording_within_its_bound_keeps_every_row() {
        let mut r = record(64, &rows(64));
        let s = r.series();
        assert_eq!(s.len(), 64);
        assert_eq!(r.rows_per_row(), 1);
    }

    #[test]
    fn a_long_recording_stays_bounded_and_keeps_the_means() {
        let all = rows(1000);
        let mut r = record(64, &all);
        assert!(r.series().len() <= 64, "{}", r.series().len());
        // 1000 rows into at most 64: 16 or 32 sampler rows a row.
        let per = r.rows_per_row();
        assert!(per >= 16, "{per}");
        let s = r.series().clone();
        assert_eq!(s.len(), 1000_usize.div_ceil(per));
        assert!(
            (s.t_s.last().unwrap() - 10.0).abs() < 1e-9,
            "the end is kept"
        );
        assert!((s.interval_s - 0.01 * per as f64).abs() < 1e-12);
        // The rate: each kept row the mean of the rows it holds (all 10 ms long), and the
        // time-weighted mean over the whole recording is the same as over every row.
        let rate = &s.metrics[0].values;
        let first = (1..=per).sum::<usize>() as f64 / per as f64;
        assert!(
            (rate[0].unwrap() - first).abs() < 1e-9,
            "{:?} {first}",
            rate[0]
        );
        let spans: Vec<f64> = (0..s.len())
            .map(|i| s.t_s[i] - if i == 0 { 0.0 } else { s.t_s[i - 1] })
            .collect();
        let mean: f64 = rate
            .iter()
            .zip(&spans)
            .map(|(v, d)| v.unwrap() * d)
            .sum::<f64>()
            / 10.0;
        assert!((mean - 500.5).abs() < 1e-6, "{mean}");
        // The count: the latest reading of each kept row.
        assert_eq!(s.metrics[1].values[0], Some(per as f64));
        assert_eq!(s.metrics[1].values.last().copied().flatten(), Some(1000.0));
    }

    /// Merging writes into the columns it has: after the first fill, a long recording refills
    /// the same memory instead of growing new columns at each refill (which left resident
    /// memory rising through a long watch).
    #[test]
    fn merging_keeps_the_memory_it_filled() {
        let all = rows(64 * 15);
        let mut r = Recorder::with_max_rows(Duration::from_millis(10), 64);
        let mut full: Option<Vec<usize>> = None;
        for row in &all {
            r.append(row);
            let caps: Vec<usize> = std::iter::once(r.series.t_s.capacity())
                .chain(r.series.metrics.iter().map(|m| m.values.capacity()))
                .collect();
            match &full {
                None if r.series.len() == 64 => full = Some(caps),
                None => {}
                Some(at_full) => assert_eq!(&caps, at_full, "rows {}", r.series.len()),
            }
        }
        // Three merges, and every value still where it belongs.
        assert_eq!(r.rows_per_row(), 16);
        let s = r.series();
        assert_eq!(s.metrics[1].values.last().copied().flatten(), Some(960.0));
        assert_eq!(s.metrics[1].values[0], Some(16.0));
    }

    /// 10 ms rows of one machine-wide rate, each also carrying the CPU share of one of many
    /// short-lived processes (a new pid every `every` rows, as a build makes them), and of one
    /// busy process seen only at the start.
    fn churning_processes(n: usize, every: usize) -> Vec<Row> {
        let proc = |pid: usize, comm: &str| {
            MetricId::new(netceil_model::names::PROC_CPU_PCT)
                .with(LABEL_PID, pid.to_string())
                .with(netceil_model::names::LABEL_COMM, comm)
        };
        (1..=n)
            .map(|i| {
                let mut row = Row::from_values(
                    i as f64 * 0.01,
                    0.01,
                    vec![(MetricId::new("cs_per_s"), Unit::PerSecond, 1.0)],
                );
                row.extra
                    .push((proc(100_000 + i / every, "cc1"), Unit::Percent, 20.0));
                if i <= 50 {
                    row.extra.push((proc(7, "busy"), Unit::Percent, 90.0));
                }
                row
            })
            .collect()
    }

    #[test]
    fn columns_of_short_lived_processes_stay_bounded_in_memory() {
        // 20 000 rows (200 s at 10 ms), a new process every 10 rows: 2 001 process columns.
        let all = churning_processes(20_000, 10);
        let mut r =
            Recorder::with_max_rows(Duration::from_millis(10), 256).with_max_process_columns(64);
        let mut most = 0;
        for row in &all {
            r.append(row);
            most = most.max(r.series.metrics.len());
        }
        let cells: usize = r.series().metrics.iter().map(|m| m.values.len()).sum();
        // The bound, give or take the columns still being written (the last 4 s: ~40 here).
        assert!(most <= 1 + 64 + 16, "columns grew to {most}");
        assert!(cells <= 256 * (1 + 64 + 16), "{cells} values held");
        // What was left out is said, by metric, and adds up with what is kept.
        let dropped = r
            .dropped_columns()
            .get(netceil_model::names::PROC_CPU_PCT)
            .copied();
        let kept = r
            .series()
            .by_name(netceil_model::names::PROC_CPU_PCT)
            .count();
        assert_eq!(dropped.unwrap_or(0) + kept, 2_001 + 1);
        // The machine-wide column, the busy process of the start (the most CPU time of all)
        // and the newest process are kept.
        let s = r.series();
        assert!(s.total("cs_per_s").is_some());
        assert!(s
            .by_name(netceil_model::names::PROC_CPU_PCT)
            .any(|m| m.id.label("comm") == Some("busy")));
        assert!(s
            .by_name(netceil_model::names::PROC_CPU_PCT)
            .any(|m| m.id.label(LABEL_PID) == Some("102000")));
        // And a column is still found and written after others were dropped.
        let last = s.len() - 1;
        let newest = s
            .by_name(netceil_model::names::PROC_CPU_PCT)
            .find(|m| m.id.label(LABEL_PID) == Some("102000"))
            .unwrap();
        assert_eq!(newest.values[last], Some(20.0));
        assert_eq!(s.total("cs_per_s").unwrap().values[last], Some(1.0));
    }

    #[test]
    fn columns_still_written_are_kept_however_many() {
        // A workload with 100 threads, each with a column written every row: over the bound,
        // but none has gone.
        let mut r =
            Recorder::with_max_rows(Duration::from_millis(10), 256).with_max_process_columns(64);
        for i in 1..=2_000 {
            let values = (0..100)
                .map(|t| {
                    let id = MetricId::new(netceil_model::names::THREAD_CPU_PCT)
                        .with(LABEL_PID, "7")
                        .with(netceil_model::names::LABEL_TID, (1000 + t).to_string());
                    (id, Unit::Percent, 1.0)
                })
                .collect();
            r.append(&Row::from_values(i as f64 * 0.01, 0.01, values));
        }
        assert!(r.dropped_columns().is_empty(), "{:?}", r.dropped_columns());
        assert_eq!(r.series().metrics.len(), 100);
    }

    #[test]
    fn counts_take_the_later_reading_and_the_rest_the_weighted_mean() {
        assert_eq!(merge(Unit::Count, 3.0, 1.0, 7.0, 1.0), 7.0);
        assert_eq!(merge(Unit::PerSecond, 10.0, 3.0, 20.0, 1.0), 12.5);
        assert_eq!(merge(Unit::Percent, 10.0, 0.0, 20.0, 0.0), 15.0);
    }
}
