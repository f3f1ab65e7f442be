//! Loading, attaching and reading the probes (aya; the object is built ahead of time).

use std::collections::HashMap;
use std::fmt;

use aya::maps::{
    HashMap as BpfHashMap, MapData, PerCpuArray, PerCpuHashMap, PerCpuValues, StackTraceMap,
};
use aya::programs::tp_btf::BtfTracePointLinkId;
use aya::programs::BtfTracePoint;
use aya::{Btf, Ebpf, EbpfLoader};

use crate::merge::{LockRow, NapiDev, Snapshot, SoftirqCpu, ThreadTimes};

/// The compiled probes (`bpf/probes.bpf.o`, built by `bpf/build.sh` from `probes.bpf.c`).
pub(crate) static OBJECT: &[u8] = aya::include_bytes_aligned!("../bpf/probes.bpf.o");

/// One kind of probe, as `--probe` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Probe {
    Locks,
    Softirq,
    Napi,
    Offcpu,
}

impl Probe {
    pub const ALL: [Probe; 4] = [Probe::Locks, Probe::Softirq, Probe::Napi, Probe::Offcpu];

    /// A probe whose programs run for every packet on loopback (a softirq run and a NAPI poll
    /// each): attached for windows only (see [`crate::duty`]) when the session asks for it.
    pub fn per_packet(self) -> bool {
        matches!(self, Probe::Softirq | Probe::Napi)
    }

    pub fn name(self) -> &'static str {
        match self {
            Probe::Locks => "locks",
            Probe::Softirq => "softirq",
            Probe::Napi => "napi",
            Probe::Offcpu => "offcpu",
        }
    }

    /// (program in the object, tracepoint it attaches to).
    fn programs(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Probe::Locks => &[
                ("lock_begin", "contention_begin"),
                ("lock_end", "contention_end"),
            ],
            Probe::Softirq => &[
                ("softirq_entry", "softirq_entry"),
                ("softirq_exit", "softirq_exit"),
            ],
            Probe::Napi => &[("napi_poll", "napi_poll")],
            Probe::Offcpu => &[
                ("sched_switch", "sched_switch"),
                ("sched_wakeup", "sched_wakeup"),
                ("sched_wakeup_new", "sched_wakeup_new"),
                ("sched_fork", "sched_process_fork"),
            ],
        }
    }
}

impl fmt::Display for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses `--probe`: a comma-separated list of probe names, or `all`.
pub fn parse_probes(text: &str) -> Result<Vec<Probe>, String> {
    let mut out = Vec::new();
    for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        if word == "all" {
            out.extend(Probe::ALL);
            continue;
        }
        let p = Probe::ALL
            .into_iter()
            .find(|p| p.name() == word)
            .ok_or_else(|| {
                format!("unknown probe '{word}': expected locks, softirq, napi, offcpu or all")
            })?;
        out.push(p);
    }
    if out.is_empty() {
        return Err("no probe named: expected locks, softirq, napi, offcpu or all".into());
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// What went wrong before any probe could run.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(
        "eBPF probes need root (CAP_BPF and CAP_PERFMON); run as root or leave --probe off ({0})"
    )]
    NotPermitted(String),
    #[error("the kernel's BTF (/sys/kernel/btf/vmlinux) could not be read: {0}; probes need a kernel built with CONFIG_DEBUG_INFO_BTF")]
    NoBtf(String),
    #[error("the probe object could not be loaded: {0}")]
    Load(String),
    #[error("no probe could be attached: {0}")]
    NoneAttached(String),
}

fn is_permission(text: &str) -> bool {
    text.contains("Operation not permitted") || text.contains("Permission denied")
}

/// The whole error chain of an aya error in one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}

/// What to attach and how.
#[derive(Debug, Clone)]
pub struct Config {
    pub probes: Vec<Probe>,
    /// Take a kernel stack for one lock contention in this many (per CPU); 0: never.
    pub lock_stack_every: u32,
    /// Time one softirq handler run in this many (per CPU; 0 or 1: every run). Runs are
    /// always counted exactly; the time of the rest is estimated from the timed ones.
    pub softirq_time_every: u32,
}

/// The default of [`Config::softirq_time_every`]: the clock reads were most of the softirq
/// probe's cost, and on loopback a NET_RX run can be one packet's whole receive path.
pub const SOFTIRQ_TIME_EVERY: u32 = 8;

impl Default for Config {
    fn default() -> Self {
        Config {
            probes: Probe::ALL.to_vec(),
            lock_stack_every: 16,
            softirq_time_every: SOFTIRQ_TIME_EVERY,
        }
    }
}

/// The attached probes. Dropping it detaches every program and frees every map: nothing is
/// pinned, so a killed process leaves nothing behind either (the kernel frees them with the
/// last file descriptor).
pub struct Probes {
    bpf: Ebpf,
    attached: Vec<Probe>,
    refused: Vec<(Probe, String)>,
    config: Config,
    /// The links of the per-packet probes' programs while they are attached, in attach order.
    per_packet_links: Vec<(&'static str, BtfTracePointLinkId)>,
    /// Whether the per-packet probes are attached now, and since when (monotonic ns).
    per_packet_since: Option<u64>,
    /// Monotonic ns the per-packet probes were attached over the windows that ended.
    per_packet_ns: u64,
}

impl fmt::Debug for Probes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Probes")
            .field("attached", &self.attached)
            .field("refused", &self.refused)
            .finish()
    }
}

/// `NAPI_SLOTS` of probes.bpf.c: NAPI instances each CPU counts in its per-CPU array.
const NAPI_SLOTS: usize = 4;
/// u64 words of a `struct napi_val`: polls, packets, exhausted, budget, dev[16].
const NAPI_VAL_WORDS: usize = 6;
/// u64 words of a `struct napi_cpu`: the slots' keys, then their values.
const NAPI_CPU_WORDS: usize = NAPI_SLOTS * (1 + NAPI_VAL_WORDS);

/// u64 words of a `struct sirq_cpu`: start_ns, vec, skip, ns[10], count[10], timed[10].
const SIRQ_CPU_WORDS: usize = 33;

/// NAPI counts summed by device name.
#[derive(Default)]
struct NapiTotals(std::collections::BTreeMap<String, NapiDev>);

impl NapiTotals {
    /// Adds the instances one CPU holds in its slots (a `struct napi_cpu`; key 0: free).
    fn add_slots(&mut self, cpu: &[u64; NAPI_CPU_WORDS]) {
        for slot in 0..NAPI_SLOTS {
            if cpu[slot] != 0 {
                let at = NAPI_SLOTS + slot * NAPI_VAL_WORDS;
                self.add(&[&cpu[at..at + NAPI_VAL_WORDS]]);
            }
        }
    }

    /// Adds one NAPI instance, given as its `struct napi_val` on one or more CPUs. Its name is
    /// in the value of the CPU that first saw it (other CPUs' may be zeroed); no name
    /// anywhere: the per-CPU backlog.
    fn add(&mut self, vals: &[&[u64]]) {
        let dev = vals
            .iter()
            .map(|v| {
                let mut name = [0u8; 16];
                name[..8].copy_from_slice(&v[4].to_le_bytes());
                name[8..].copy_from_slice(&v[5].to_le_bytes());
                let end = name.iter().position(|&b| b == 0).unwrap_or(16);
                String::from_utf8_lossy(&name[..end]).into_owned()
            })
            .find(|n| !n.is_empty())
            .unwrap_or_default();
        let d = self.0.entry(dev.clone()).or_insert_with(|| NapiDev {
            dev,
            ..Default::default()
        });
        for v in vals {
            d.polls += v[0];
            d.packets += v[1];
            d.exhausted += v[2];
            d.budget = d.budget.max(v[3]);
        }
    }
}

/// The kernel's monotonic clock, which `bpf_ktime_get_ns` reads.
fn mono_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

impl Probes {
    /// Loads the object and attaches each probe asked for. A probe the kernel refuses is
    /// reported in [`Probes::refused`] while the others run; an error means none could.
    pub fn attach(config: Config) -> Result<Probes, ProbeError> {
        let btf = Btf::from_sys_fs().map_err(|e| {
            let t = chain(&e);
            if is_permission(&t) {
                ProbeError::NotPermitted(t)
            } else {
                ProbeError::NoBtf(t)
            }
        })?;
        let bpf = EbpfLoader::new()
            .btf(Some(&btf))
            .override_global("lock_stack_every", &config.lock_stack_every, true)
            .override_global("softirq_time_every", &config.softirq_time_every, true)
            .load(OBJECT)
            .map_err(|e| {
                let t = chain(&e);
                if is_permission(&t) {
                    ProbeError::NotPermitted(t)
                } else {
                    ProbeError::Load(t)
                }
            })?;
        let mut me = Probes {
            bpf,
            attached: Vec::new(),
            refused: Vec::new(),
            config: config.clone(),
            per_packet_links: Vec::new(),
            per_packet_since: None,
            per_packet_ns: 0,
        };
        for probe in &config.probes {
            match me.attach_one(*probe, &btf) {
                Ok(()) => me.attached.push(*probe),
                Err(why) => me.refused.push((*probe, why)),
            }
        }
        if me.attached.iter().any(|p| p.per_packet()) {
            me.per_packet_since = Some(mono_ns());
        }
        if me.attached.is_empty() {
            let why: Vec<String> = me
                .refused
                .iter()
                .map(|(p, w)| format!("{p}: {w}"))
                .collect();
            let text = why.join("; ");
            return Err(if is_permission(&text) {
                ProbeError::NotPermitted(text)
            } else {
                ProbeError::NoneAttached(text)
            });
        }
        Ok(me)
    }

    fn attach_one(&mut self, probe: Probe, btf: &Btf) -> Result<(), String> {
        for (prog, tp) in probe.programs() {
            let p: &mut BtfTracePoint = self
                .bpf
                .program_mut(prog)
                .ok_or_else(|| format!("program {prog} is missing from the object"))?
                .try_into()
                .map_err(|e: aya::programs::ProgramError| chain(&e))?;
            p.load(tp, btf)
                .map_err(|e| format!("tracepoint {tp}: {}", chain(&e)))?;
            let link = p
                .attach()
                .map_err(|e| format!("tracepoint {tp}: {}", chain(&e)))?;
            if probe.per_packet() {
                self.per_packet_links.push((prog, link));
            }
        }
        Ok(())
    }

    fn tracepoint_mut(&mut self, prog: &str) -> Result<&mut BtfTracePoint, String> {
        self.bpf
            .program_mut(prog)
            .ok_or_else(|| format!("program {prog} is missing from the object"))?
            .try_into()
            .map_err(|e: aya::programs::ProgramError| chain(&e))
    }

    /// Whether the per-packet probes (softirq, napi) are attached now.
    pub fn per_packet_on(&self) -> bool {
        self.per_packet_since.is_some()
    }

    /// Detaches the per-packet probes' programs (the last attached first: a softirq's exit
    /// before its entry), and adds the time they were attached to [`Snapshot::sampled_ns`].
    /// Their maps stay, and so do the other probes. A no-op when they are detached already.
    pub fn pause_per_packet(&mut self) -> Result<(), String> {
        let Some(since) = self.per_packet_since.take() else {
            return Ok(());
        };
        self.per_packet_ns += mono_ns().saturating_sub(since);
        let mut failed = Vec::new();
        while let Some((prog, link)) = self.per_packet_links.pop() {
            if let Err(e) = self.tracepoint_mut(prog).and_then(|p| {
                p.detach(link)
                    .map_err(|e| format!("detaching {prog}: {}", chain(&e)))
            }) {
                failed.push(e);
            }
        }
        // Nothing runs now: forget a handler whose entry was seen after its exit's program
        // went, so that the next window does not time it from this one.
        if self.has(Probe::Softirq) {
            if let Err(e) = self.clear_softirq_starts() {
                failed.push(e);
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(failed.join("; "))
        }
    }

    /// Attaches the per-packet probes' programs again (a softirq's entry before its exit).
    /// A no-op when they are attached already.
    pub fn resume_per_packet(&mut self) -> Result<(), String> {
        if self.per_packet_since.is_some() {
            return Ok(());
        }
        let probes: Vec<Probe> = self
            .attached
            .iter()
            .copied()
            .filter(|p| p.per_packet())
            .collect();
        for probe in probes {
            for (prog, tp) in probe.programs() {
                let attached = self.tracepoint_mut(prog).and_then(|p| {
                    p.attach()
                        .map_err(|e| format!("tracepoint {tp}: {}", chain(&e)))
                });
                match attached {
                    Ok(link) => self.per_packet_links.push((prog, link)),
                    Err(e) => {
                        // All or none: what did attach goes again (the window is not counted).
                        while let Some((prog, link)) = self.per_packet_links.pop() {
                            let _ = self.tracepoint_mut(prog).map(|p| p.detach(link));
                        }
                        if self.has(Probe::Softirq) {
                            let _ = self.clear_softirq_starts();
                        }
                        return Err(e);
                    }
                }
            }
        }
        self.per_packet_since = Some(mono_ns());
        Ok(())
    }

    /// Zeroes each CPU's running-handler start in the softirq map. Only while the softirq
    /// programs are detached: nothing else writes the map then.
    fn clear_softirq_starts(&mut self) -> Result<(), String> {
        let map = self
            .bpf
            .map_mut("softirq_time")
            .ok_or("map softirq_time is missing")?;
        let mut arr = PerCpuArray::<&mut MapData, [u64; SIRQ_CPU_WORDS]>::try_from(map)
            .map_err(|e| chain(&e))?;
        let mut per_cpu: Vec<[u64; SIRQ_CPU_WORDS]> =
            arr.get(&0, 0).map_err(|e| chain(&e))?.to_vec();
        for v in &mut per_cpu {
            v[0] = 0;
        }
        let values = PerCpuValues::try_from(per_cpu).map_err(|e| e.to_string())?;
        arr.set(0, values, 0).map_err(|e| chain(&e))
    }

    /// Monotonic ns the per-packet probes have been attached, up to now.
    fn sampled_ns(&self, now: u64) -> u64 {
        self.per_packet_ns
            + self
                .per_packet_since
                .map_or(0, |since| now.saturating_sub(since))
    }

    pub fn attached(&self) -> &[Probe] {
        &self.attached
    }

    /// Probes asked for that the kernel refused, with its reason.
    pub fn refused(&self) -> &[(Probe, String)] {
        &self.refused
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    fn has(&self, p: Probe) -> bool {
        self.attached.contains(&p)
    }

    /// Follows a process's threads (and its children's, as they fork) for the offcpu probe.
    pub fn follow(&mut self, tgid: u32) -> Result<(), String> {
        let map = self
            .bpf
            .map_mut("targets")
            .ok_or("map targets is missing")?;
        let mut targets: BpfHashMap<&mut MapData, u32, u8> =
            BpfHashMap::try_from(map).map_err(|e| chain(&e))?;
        targets.insert(tgid, 1, 0).map_err(|e| chain(&e))
    }

    /// Stops following a process (its threads already counted stay in the map).
    pub fn unfollow(&mut self, tgid: u32) -> Result<(), String> {
        let map = self
            .bpf
            .map_mut("targets")
            .ok_or("map targets is missing")?;
        let mut targets: BpfHashMap<&mut MapData, u32, u8> =
            BpfHashMap::try_from(map).map_err(|e| chain(&e))?;
        targets.remove(&tgid).map_err(|e| chain(&e))
    }

    /// Reads every attached probe's counters now.
    pub fn snapshot(&self) -> Snapshot {
        let unix_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let mono = mono_ns();
        Snapshot {
            unix_s,
            mono_ns: mono,
            softirq: self.has(Probe::Softirq).then(|| self.softirq()).flatten(),
            napi: self.has(Probe::Napi).then(|| self.napi()).flatten(),
            threads: self
                .has(Probe::Offcpu)
                .then(|| self.threads(mono))
                .flatten(),
            lock_totals: self.has(Probe::Locks).then(|| self.lock_totals()).flatten(),
            overflow: self.overflow(),
            sampled_ns: self.sampled_ns(mono),
        }
    }

    fn overflow(&self) -> [u64; 8] {
        let mut out = [0u64; 8];
        let Some(map) = self.bpf.map("overflow") else {
            return out;
        };
        let Ok(arr) = PerCpuArray::<&MapData, u64>::try_from(map) else {
            return out;
        };
        for (i, slot) in out.iter_mut().enumerate() {
            if let Ok(v) = arr.get(&(i as u32), 0) {
                *slot = v.iter().sum();
            }
        }
        out
    }

    fn softirq(&self) -> Option<Vec<SoftirqCpu>> {
        // struct sirq_cpu: start_ns, vec, skip, ns[10], count[10], timed[10].
        let arr =
            PerCpuArray::<&MapData, [u64; SIRQ_CPU_WORDS]>::try_from(self.bpf.map("softirq_time")?)
                .ok()?;
        let per_cpu = arr.get(&0, 0).ok()?;
        Some(
            per_cpu
                .iter()
                .map(|v| {
                    let mut c = SoftirqCpu::default();
                    c.ns.copy_from_slice(&v[3..13]);
                    c.runs.copy_from_slice(&v[13..23]);
                    c.timed.copy_from_slice(&v[23..33]);
                    c
                })
                .collect(),
        )
    }

    fn napi(&self) -> Option<Vec<NapiDev>> {
        let mut by_dev = NapiTotals::default();
        // struct napi_cpu: key[NAPI_SLOTS], then NAPI_SLOTS napi_vals; per CPU.
        let slots =
            PerCpuArray::<&MapData, [u64; NAPI_CPU_WORDS]>::try_from(self.bpf.map("napi_slots")?)
                .ok()?;
        for cpu in slots.get(&0, 0).ok()?.iter() {
            by_dev.add_slots(cpu);
        }
        // Instances beyond a CPU's slots.
        let map = PerCpuHashMap::<&MapData, u64, [u64; NAPI_VAL_WORDS]>::try_from(
            self.bpf.map("napi_stat")?,
        )
        .ok()?;
        for (_, vals) in map.iter().flatten() {
            let per_cpu: Vec<&[u64]> = vals.iter().map(|v| &v[..]).collect();
            by_dev.add(&per_cpu);
        }
        Some(by_dev.0.into_values().collect())
    }

    fn threads(&self, now: u64) -> Option<Vec<ThreadTimes>> {
        let stat =
            BpfHashMap::<&MapData, u32, [u64; 6]>::try_from(self.bpf.map("thread_stat")?).ok()?;
        let states =
            BpfHashMap::<&MapData, u32, [u64; 2]>::try_from(self.bpf.map("thread_states")?).ok()?;
        let mut out = Vec::new();
        for (tid, v) in stat.iter().flatten() {
            let mut t = ThreadTimes {
                tid,
                tgid: v[5] as u32,
                on_ns: v[0],
                blocked_ns: v[1],
                runnable_ns: v[2],
                voluntary: v[3],
                involuntary: v[4],
            };
            // The state it is in now counts up to now.
            if let Ok(s) = states.get(&tid, 0) {
                let since = s[0];
                let state = s[1] & 0xffff_ffff;
                let d = now.saturating_sub(since);
                match state {
                    1 => t.on_ns += d,
                    2 => t.blocked_ns += d,
                    3 => t.runnable_ns += d,
                    _ => {}
                }
            }
            out.push(t);
        }
        out.sort_by_key(|t| t.tid);
        Some(out)
    }

    fn lock_totals(&self) -> Option<(u64, u64)> {
        let map = BpfHashMap::<&MapData, [u64; 2], [u64; 4]>::try_from(self.bpf.map("lock_stat")?)
            .ok()?;
        let (mut c, mut w) = (0u64, 0u64);
        for (_, v) in map.iter().flatten() {
            c += v[0];
            w += v[1];
        }
        Some((c, w))
    }

    /// The lock map's rows and the stacks they point at.
    pub fn locks(&self) -> (Vec<LockRow>, HashMap<i64, Vec<u64>>) {
        let mut rows = Vec::new();
        let mut stacks = HashMap::new();
        if !self.has(Probe::Locks) {
            return (rows, stacks);
        }
        if let Some(Ok(map)) = self
            .bpf
            .map("lock_stat")
            .map(BpfHashMap::<&MapData, [u64; 2], [u64; 4]>::try_from)
        {
            for (k, v) in map.iter().flatten() {
                rows.push(LockRow {
                    lock: k[0],
                    stack_id: k[1] as i64,
                    count: v[0],
                    total_ns: v[1],
                    max_ns: v[2],
                    flags: v[3],
                });
            }
        }
        if let Some(Ok(map)) = self
            .bpf
            .map("lock_stacks")
            .map(StackTraceMap::<&MapData>::try_from)
        {
            for r in &rows {
                if r.stack_id < 0 || stacks.contains_key(&r.stack_id) {
                    continue;
                }
                if let Ok(st) = map.get(&(r.stack_id as u32), 0) {
                    let frames: Vec<u64> = st.frames().iter().map(|f| f.ip).collect();
                    stacks.insert(r.stack_id, frames);
                }
            }
        }
        (rows, stacks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `struct napi_val` as u64 words: polls, packets, exhausted, budget, dev name.
    fn val(polls: u64, packets: u64, exhausted: u64, dev: &str) -> [u64; NAPI_VAL_WORDS] {
        let mut name = [0u8; 16];
        name[..dev.len()].copy_from_slice(dev.as_bytes());
        [
            polls,
            packets,
            exhausted,
            64,
            u64::from_le_bytes(name[..8].try_into().unwrap()),
            u64::from_le_bytes(name[8..].try_into().unwrap()),
        ]
    }

    fn cpu(slots: &[(u64, [u64; NAPI_VAL_WORDS])]) -> [u64; NAPI_CPU_WORDS] {
        let mut c = [0u64; NAPI_CPU_WORDS];
        for (i, (key, v)) in slots.iter().enumerate() {
            c[i] = *key;
            c[NAPI_SLOTS + i * NAPI_VAL_WORDS..][..NAPI_VAL_WORDS].copy_from_slice(v);
        }
        c
    }

    /// Each CPU's slots and the overflow map's instances are summed by device; free slots
    /// (key 0) count nothing even if their bytes are not zero; exhausted polls survive.
    #[test]
    fn napi_slots_and_overflow_sum_by_device() {
        let mut t = NapiTotals::default();
        let mut stale = val(99, 99, 99, "stale");
        stale[0] = 1000;
        let mut cpu0 = cpu(&[(0xA0, val(10, 300, 2, "")), (0xB0, val(5, 50, 0, "eth0"))]);
        // Slot 2 free but not zeroed: must not count.
        cpu0[NAPI_SLOTS + 2 * NAPI_VAL_WORDS..][..NAPI_VAL_WORDS].copy_from_slice(&stale);
        t.add_slots(&cpu0);
        t.add_slots(&cpu(&[(0xA1, val(7, 70, 1, ""))]));
        // eth0 also polled on CPU 1 beyond its slots: the hash map's per-CPU values, named on
        // the CPU that first saw it only.
        t.add(&[&val(0, 0, 0, "")[..], &val(3, 192, 3, "eth0")[..]]);
        let got: Vec<_> = t.0.into_values().collect();
        let row = |dev: &str, polls, packets, exhausted| NapiDev {
            dev: dev.into(),
            polls,
            packets,
            exhausted,
            budget: 64,
        };
        assert_eq!(got, [row("", 17, 370, 3), row("eth0", 8, 242, 3)]);
    }
}
