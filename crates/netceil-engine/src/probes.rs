//! `--probe`: the eBPF probes beside a run or a watch. A thread reads the probes' counters at
//! the sampler's interval; at the end they are merged into the Run (series, lock table,
//! notes) and detached. Nothing is pinned, so however netceil ends, the kernel frees them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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
    refused: Vec<(Probe, String)>,
    stack_every: u32,
    /// Wall time from attaching to the last read, seconds.
    attached_s: f64,
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
        let mut p = Probes::attach(Config {
            probes: probes.to_vec(),
            lock_stack_every,
            softirq_time_every: netceil_bpf::SOFTIRQ_TIME_EVERY,
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
        for (probe, why) in &refused {
            status.push_str(&format!("; {probe} refused: {why}"));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let probes = Arc::new(Mutex::new(p));
        let p = probes.clone();
        let thread = std::thread::Builder::new()
            .name("netceil-probes".into())
            .spawn(move || {
                let lock = || p.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let mut snaps = vec![lock().snapshot()];
                let mut comm = HashMap::new();
                let mut next = Instant::now() + interval;
                while !flag.load(Ordering::SeqCst) {
                    let now = Instant::now();
                    if now < next {
                        std::thread::sleep((next - now).min(Duration::from_millis(50)));
                        continue;
                    }
                    next += interval;
                    let s = lock().snapshot();
                    for t in s.threads.iter().flatten() {
                        if let std::collections::hash_map::Entry::Vacant(e) = comm.entry(t.tid) {
                            if let Some(c) = comm_of(source.as_ref(), t.tgid, t.tid) {
                                e.insert(c);
                            }
                        }
                    }
                    snaps.push(s);
                }
                let p = lock();
                snaps.push(p.snapshot());
                Collected {
                    snaps,
                    locks: p.locks(),
                    comm,
                    attached: p.attached().to_vec(),
                    refused,
                    stack_every: p.config().lock_stack_every,
                    attached_s: attached_at.elapsed().as_secs_f64(),
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
        if c.attached.contains(&Probe::Softirq) {
            let every = netceil_bpf::SOFTIRQ_TIME_EVERY;
            run.meta
                .labels
                .insert("softirq_time_sampled_every".into(), every.to_string());
            run.notes.push(format!(
                "softirq time from eBPF is sampled: one handler run in {every} per CPU is timed, \
                 and each vector's time is its exact run count times the timed runs' mean; the \
                 runs per second are exact"
            ));
        }
        for (p, why) in &c.refused {
            run.notes.push(format!("probe {p} did not run: {why}"));
        }
    }
}

impl Drop for ProbeSession {
    fn drop(&mut self) {
        // On an early return the thread is told to stop; it detaches as it ends.
        self.stop.store(true, Ordering::SeqCst);
    }
}
