//! `--probe`: the eBPF probes beside a run or a watch. A thread reads the probes' counters at
//! the sampler's interval; at the end they are merged into the Run (series, lock table,
//! notes) and detached. Nothing is pinned, so however netceil ends, the kernel frees them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use netceil_bpf::duty::{Plan, DEFAULT_DUTY};
use netceil_bpf::merge::{self, LockRow, Snapshot};
use netceil_bpf::{ksyms::Ksyms, Config, Probe, Probes};
use netceil_model::Run;
use netceil_probe::Source;

/// What the reading thread hands back when it stops.
struct Collected {
    snaps: Vec<Snapshot>,
    locks: (Vec<LockRow>, HashMap<i64, Vec<u64>>),
    comm: HashMap<u32, String>,
    attached: Vec<Probe>,
    /// Probes refused, and anything that went wrong while reading: notes on the run.
    problems: Vec<String>,
    stack_every: u32,
    /// Wall time from attaching to the last read, seconds.
    attached_s: f64,
    /// When the per-packet probes were attached, and the interval the plan was made for.
    plan: Plan,
    interval: Duration,
}

/// The reading thread's side: reads the probes at each interval's end and attaches the
/// per-packet probes for their window of the interval (detached in between).
struct Reader {
    probes: Arc<Mutex<Probes>>,
    stop: Arc<AtomicBool>,
    interval: Duration,
    plan: Plan,
    source: Arc<dyn Source + Send + Sync>,
}

impl Reader {
    fn lock(&self) -> std::sync::MutexGuard<'_, Probes> {
        self.probes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sleeps until `at`, waking every 50 ms to look at the stop flag; false when stopped.
    fn sleep_until(&self, at: Instant) -> bool {
        loop {
            if self.stop.load(Ordering::SeqCst) {
                return false;
            }
            let now = Instant::now();
            if now >= at {
                return true;
            }
            std::thread::sleep((at - now).min(Duration::from_millis(50)));
        }
    }

    /// Attaches (`on`) or detaches the per-packet probes; a failure is kept as a note, once.
    fn per_packet(&self, on: bool, problems: &mut Vec<String>) {
        let mut p = self.lock();
        let r = if on {
            p.resume_per_packet()
        } else {
            p.pause_per_packet()
        };
        if let Err(e) = r {
            let text = format!("the softirq/napi probes could not be switched on or off: {e}");
            if !problems.contains(&text) {
                problems.push(text);
            }
        }
    }

    /// Reads until stopped: a snapshot at the start and at every interval's end, and one more
    /// when stopped. Leaves the per-packet probes detached.
    fn read(&self) -> (Vec<Snapshot>, HashMap<u32, String>, Vec<String>) {
        let mut problems = Vec::new();
        let windows = match self.plan {
            Plan::Always => None,
            Plan::Windows {
                every,
                offset,
                window,
            } => Some((every, offset, window)),
        };
        if windows.is_some() {
            self.per_packet(false, &mut problems);
        }
        let mut snaps = vec![self.lock().snapshot()];
        let mut comm = HashMap::new();
        let start = Instant::now();
        for k in 0u32.. {
            let begins = start + self.interval * k;
            if let Some((_, offset, window)) = windows.filter(|(every, ..)| k % every == 0) {
                if self.sleep_until(begins + offset) {
                    self.per_packet(true, &mut problems);
                    let ran = self.sleep_until(begins + offset + window);
                    self.per_packet(false, &mut problems);
                    if !ran {
                        break;
                    }
                } else {
                    break;
                }
            }
            if !self.sleep_until(begins + self.interval) {
                break;
            }
            let s = self.lock().snapshot();
            for t in s.threads.iter().flatten() {
                if let std::collections::hash_map::Entry::Vacant(e) = comm.entry(t.tid) {
                    if let Some(c) = comm_of(self.source.as_ref(), t.tgid, t.tid) {
                        e.insert(c);
                    }
                }
            }
            snaps.push(s);
        }
        if windows.is_some() {
            self.per_packet(false, &mut problems);
        }
        snaps.push(self.lock().snapshot());
        (snaps, comm, problems)
    }
}

/// Probes attached and being read.
pub struct ProbeSession {
    probes: Arc<Mutex<Probes>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Collected>>,
    /// Processes followed only to catch a fork, whose own threads are left out of the run.
    unfollowed: Mutex<Vec<u32>>,
    /// What to say on the terminal once attached (which probes, which were refused).
    pub status: String,
}

/// The probes `--probe` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeList(pub Vec<Probe>);

/// Parses `--probe` (clap value parser).
pub fn parse_probe_list(s: &str) -> Result<ProbeList, String> {
    netceil_bpf::parse_probes(s).map(ProbeList)
}

fn comm_of(source: &dyn Source, tgid: u32, tid: u32) -> Option<String> {
    source
        .read(&format!("/proc/{tgid}/task/{tid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

impl ProbeSession {
    /// Attaches the probes and starts reading them every `interval`; the offcpu probe follows
    /// `follow` (process ids) and their children.
    pub fn start(
        probes: &[Probe],
        lock_stack_every: u32,
        follow: &[u32],
        interval: Duration,
        source: Arc<dyn Source + Send + Sync>,
    ) -> Result<ProbeSession, netceil_bpf::ProbeError> {
        // Attached for windows only, the softirq probe times every handler run in them: its
        // time is exact there, not estimated from one run in several.
        let mut p = Probes::attach(Config {
            probes: probes.to_vec(),
            lock_stack_every,
            softirq_time_every: 1,
        })?;
        // The lock table covers the time from here to the last read.
        let attached_at = Instant::now();
        let mut refused: Vec<(Probe, String)> = p.refused().to_vec();
        if p.attached().contains(&Probe::Offcpu) {
            for pid in follow {
                if let Err(e) = p.follow(*pid) {
                    refused.push((Probe::Offcpu, format!("cannot follow pid {pid}: {e}")));
                }
            }
        }
        let mut status = format!(
            "probes attached: {}",
            p.attached()
                .iter()
                .map(|x| x.name())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let plan = DEFAULT_DUTY.plan(interval);
        if p.attached().iter().any(|x| x.per_packet()) && plan != Plan::Always {
            status.push_str(&format!(" (softirq and napi {})", plan.describe(interval)));
        }
        for (probe, why) in &refused {
            status.push_str(&format!("; {probe} refused: {why}"));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let probes = Arc::new(Mutex::new(p));
        let reader = Reader {
            probes: probes.clone(),
            stop: stop.clone(),
            interval,
            plan,
            source,
        };
        let thread = std::thread::Builder::new()
            .name("netceil-probes".into())
            .spawn(move || {
                let (snaps, comm, mut problems) = reader.read();
                let p = reader.lock();
                problems.extend(
                    refused
                        .iter()
                        .map(|(probe, why)| format!("probe {probe} did not run: {why}")),
                );
                Collected {
                    snaps,
                    locks: p.locks(),
                    comm,
                    attached: p.attached().to_vec(),
                    problems,
                    stack_every: p.config().lock_stack_every,
                    attached_s: attached_at.elapsed().as_secs_f64(),
                    plan,
                    interval,
                }
            })
            .map_err(|e| {
                netceil_bpf::ProbeError::Load(format!("starting the probe thread: {e}"))
            })?;
        Ok(ProbeSession {
            probes,
            unfollowed: Mutex::new(Vec::new()),
            stop,
            thread: Some(thread),
            status,
        })
    }

    /// Starts or stops following a process with the offcpu probe (its children forked from
    /// now on are followed with it). A no-op without the offcpu probe.
    pub fn follow(&self, pid: u32, on: bool) {
        let mut p = self
            .probes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if p.attached().contains(&Probe::Offcpu) {
            let r = if on {
                p.follow(pid)
            } else {
                if let Ok(mut u) = self.unfollowed.lock() {
                    u.push(pid);
                }
                p.unfollow(pid)
            };
            if let Err(e) = r {
                eprintln!("netceil: offcpu probe: pid {pid}: {e}");
            }
        }
    }

    /// Stops reading, detaches, and puts what the probes saw into the run.
    pub fn finish(mut self, run: &mut Run) {
        self.stop.store(true, Ordering::SeqCst);
        let Some(t) = self.thread.take() else { return };
        let Ok(c) = t.join() else {
            run.notes
                .push("the probe thread failed; nothing the probes saw was kept".into());
            return;
        };
        // `self.probes` is the last reference now: when `self` goes at the end of this call,
        // every program is detached and every map freed.
        let mut c = c;
        let gone = self
            .unfollowed
            .lock()
            .map(|u| u.clone())
            .unwrap_or_default();
        for s in &mut c.snaps {
            if let Some(t) = s.threads.as_mut() {
                t.retain(|t| !gone.contains(&t.tgid));
            }
        }
        merge::merge_series(run, &c.snaps, &c.comm);
        if !c.locks.0.is_empty() {
            let ksyms = Ksyms::load().unwrap_or_else(|e| {
                run.notes.push(format!("lock callers are not named: {e}"));
                Ksyms::default()
            });
            let (table, notes) = merge::lock_table(&c.locks.0, &c.locks.1, &ksyms, c.stack_every);
            run.locks = table;
            run.meta.locks_window_s = Some(c.attached_s);
            run.notes.extend(notes);
        }
        let names: Vec<&str> = c.attached.iter().map(|p| p.name()).collect();
        run.meta.labels.insert("probes".into(), names.join(","));
        let per_packet: Vec<&str> = c
            .attached
            .iter()
            .filter(|p| p.per_packet())
            .map(|p| p.name())
            .collect();
        if !per_packet.is_empty() {
            let share = c.plan.share(c.interval);
            run.meta
                .labels
                .insert("probe_duty".into(), format!("{share:.4}"));
            run.notes.push(match c.plan {
                Plan::Always => format!(
                    "the {} probes were attached for the whole run; softirq time is every handler run timed from entry to exit",
                    per_packet.join(" and ")
                ),
                Plan::Windows { .. } => format!(
                    "the {} probes run for every packet, so they were {} and detached in between: \
                     their figures are rates and shares over the time they were attached (per \
                     sampled second), with every softirq handler run in it timed from entry to \
                     exit; rows without a window have none",
                    per_packet.join(" and "),
                    c.plan.describe(c.interval)
                ),
            });
        }
        run.notes.extend(c.problems);
    }
}

impl Drop for ProbeSession {
    fn drop(&mut self) {
        // On an early return the thread is told to stop; it detaches as it ends.
        self.stop.store(true, Ordering::SeqCst);
    }
}
