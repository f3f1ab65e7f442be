//! Lock contention, from the run's lock table.
//!
//! SEEDS §4: a lock profile showed > 14 s of every 30 s (summed over CPUs) spent waiting on the
//! `rtentry` mutex, taken and released per packet at three call sites; once it was gone, the bge
//! driver's own lock was next. So: aggregate the rows of one lock (a profile lists each call
//! site), rank locks by total wait, relate the top one's wait to wall time and to wall time ×
//! CPUs, and name the runner-up as the next bottleneck.
//!
//! The locks the blocking machinery itself takes (FreeBSD's `turnstile chain` and `sleepq
//! chain` spin mutexes) are contended *because* sleep mutexes are: they are reported, never
//! ranked as a cause.
//!
//! Fires when the top lock's wait is ≥ 2 % of wall time × CPUs with ≥ 0.1 threads waiting on
//! average, or ≥ 0.5 threads wait on average whatever the CPUs (see `Sized::matters`). Confidence: floor 0.4, band 0.5; strengths: its share of
//! CPU time (1 % → 0, 10 % → 1), its average waiters (0.1 → 0, 0.5 → 1) and its lead over the
//! next lock (equal → 0, 3× → 1). Without a window the ranking is still given, at 0.3.

use std::collections::BTreeMap;

use netceil_model::{Finding, LockStat, Quantity, Resource, Unit};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::ledger::{Class, Entry};
use crate::stats::{mean_strength, ramp};
use netceil_model::fmt;

/// Locks of the blocking machinery: contended as a consequence, not a cause.
const DERIVED_LOCKS: &[&str] = &["turnstile chain", "sleepq chain"];

/// One lock, all its call sites summed.
#[derive(Debug, Clone, PartialEq)]
pub struct LockTotal {
    pub name: String,
    pub wait_s: f64,
    pub hold_s: Option<f64>,
    pub count: u64,
    /// Every row counted only contended acquisitions (eBPF, perf lock contention).
    pub contended_only: bool,
    /// Call sites, heaviest wait first.
    pub sites: Vec<(String, f64)>,
}

/// The lock's name without its call site: `net/route.c:197 (sleep mutex:rtentry)` → `rtentry`.
pub fn lock_name(raw: &str) -> String {
    let t = raw.trim();
    if let Some(open) = t.strip_suffix(')').and_then(matching_open) {
        // `(TYPE:NAME)`: the type is what precedes the first colon; a name may hold colons and
        // parentheses of its own (`sleep mutex:ixl0:RX(10)`).
        let inner = &t[open + 1..t.len() - 1];
        let name = inner.split_once(':').map_or(inner, |(_, n)| n);
        return name.trim().to_string();
    }
    t.to_string()
}

/// The index of the `(` that the `)` just past the end of `t` closes.
fn matching_open(t: &str) -> Option<usize> {
    let mut depth = 1usize;
    for (i, c) in t.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Sums the rows of each lock and ranks them by total wait, largest first.
pub fn aggregate(locks: &[LockStat]) -> Vec<LockTotal> {
    let mut by: BTreeMap<String, LockTotal> = BTreeMap::new();
    for l in locks {
        let site = l
            .caller
            .clone()
            .unwrap_or_else(|| l.name.trim().to_string());
        // A row named only by its lock's type (perf lock contention's default `type caller`)
        // does not say which lock: its call site is the most specific name there is, and all
        // spinlocks of the kernel are not one lock.
        let name = match lock_name(&l.name) {
            n if is_lock_type(&n) && l.caller.is_some() => format!("{site} ({n})"),
            n => n,
        };
        let e = by.entry(name.clone()).or_insert_with(|| LockTotal {
            name,
            wait_s: 0.0,
            hold_s: None,
            count: 0,
            contended_only: true,
            sites: Vec::new(),
        });
        e.wait_s += l.wait_total_s;
        e.count += l.count;
        e.contended_only &= l.contended == Some(l.count);
        if let Some(h) = l.hold_total_s {
            e.hold_s = Some(e.hold_s.unwrap_or(0.0) + h);
        }
        e.sites.push((site, l.wait_total_s));
    }
    let mut out: Vec<LockTotal> = by.into_values().collect();
    for l in &mut out {
        l.sites.sort_by(|a, b| b.1.total_cmp(&a.1));
    }
    out.sort_by(|a, b| b.wait_s.total_cmp(&a.wait_s));
    out
}

/// Lock types, as profilers print them in place of a lock's name.
const LOCK_TYPES: &[&str] = &[
    "spinlock",
    "rwlock",
    "rwlock:r",
    "rwlock:w",
    "mutex",
    "rwsem",
    "rwsem:r",
    "rwsem:w",
    "percpu-rwsem",
    "pcpu-sem",
    "rtmutex",
    "rt-mutex",
    "semaphore",
    "spin mutex",
    "sleep mutex",
    "rw",
    "sx",
    "lockmgr",
    "rwlock:rw",
    "rwsem:rw",
];

/// True for a bare lock type (`spinlock`, `rwsem:R`), which names no particular lock.
pub fn is_lock_type(name: &str) -> bool {
    let n = name
        .trim()
        .trim_matches(|c| c == '(' || c == ')')
        .to_ascii_lowercase();
    n.is_empty() || LOCK_TYPES.contains(&n.as_str())
}

fn is_derived(name: &str) -> bool {
    DERIVED_LOCKS.iter().any(|d| name.contains(d))
}

/// The wall time the lock table covers, and where that figure came from.
fn window(ctx: &Ctx) -> Option<(f64, &'static str)> {
    if let Some(w) = ctx.opts.window_s.filter(|w| *w > 0.0) {
        return Some((w, "as given"));
    }
    if let Some(w) = ctx.run.meta.locks_window_s.filter(|w| *w > 0.0) {
        return Some((w, "the lock probe's attach time"));
    }
    if let Some(&last) = ctx.series().t_s.last() {
        if last > 0.0 {
            return Some((last, "the run's length"));
        }
    }
    if let Some(d) = ctx
        .run
        .results
        .as_ref()
        .map(|r| r.duration_s)
        .filter(|d| *d > 0.0)
    {
        return Some((d, "the workload's duration"));
    }
    ctx.run
        .meta
        .annotations
        .interval_s
        .filter(|i| *i > 0.0)
        .map(|i| (i, "the profile's interval"))
}

/// A lock's wait as a share of window × CPUs from which it can limit the run…
pub const CPU_SHARE_MIN: f64 = 0.02;
/// …with at least this many waiters on average (wait ÷ window)…
pub const WAITERS_MIN: f64 = 0.1;
/// …or this many waiters alone, whatever the CPUs…
pub const WAITERS_ALONE_MIN: f64 = 0.5;
/// …or, with the CPU count unknown, this many.
pub const WAITERS_UNKNOWN_CPUS_MIN: f64 = 0.25;
/// Without a window: the longest profile over which the top wait would still reach
/// [`CPU_SHARE_MIN`] of one CPU's time; a wait that would need a profile shorter than this
/// cannot matter: profiles are taken over tens of seconds (`perf lock contention -- sleep 30`,
/// 30 s of `debug.lock.prof`, /proc/lock_stat since it was last cleared, often hours), and the
/// figure assumes one CPU, the least time there could have been. A shorter profile is said with
/// `--window`, and then sized exactly.
pub const WINDOW_NEEDED_MIN_S: f64 = 30.0;

/// The top lock sized: its wait against the time available.
struct Sized<'a> {
    top: &'a LockTotal,
    next: Option<&'a LockTotal>,
    ranked: Vec<&'a LockTotal>,
    derived: Vec<&'a LockTotal>,
    win: Option<(f64, &'static str)>,
    cpus: Option<u32>,
    waiters: Option<f64>,
    cpu_share: Option<f64>,
    lead: Option<f64>,
}

impl Sized<'_> {
    /// The profile length below which the top wait would be [`CPU_SHARE_MIN`] of window ×
    /// CPUs: what a window would have to be for these waits to matter.
    fn window_needed_s(&self) -> f64 {
        self.top.wait_s / (CPU_SHARE_MIN * f64::from(self.cpus.unwrap_or(1)))
    }

    /// Large enough to limit anything, as far as the figures can tell.
    /// Relieving a lock gives its waiters their waiting time back: between the share of all
    /// the CPUs' time (every CPU contends) and the average waiters (one thread does). It limits
    /// the run when the smaller bound is a few per cent with a tenth of a thread waiting, or
    /// when the larger alone says half a thread is always waiting (a serialization point for
    /// whatever runs there); with the CPUs unknown, from a quarter of a thread.
    fn matters(&self) -> bool {
        let w = self.waiters.unwrap_or(0.0);
        match (self.win, self.cpu_share) {
            (Some(_), Some(share)) => {
                (share >= CPU_SHARE_MIN && w >= WAITERS_MIN) || w >= WAITERS_ALONE_MIN
            }
            (Some(_), None) => w >= WAITERS_UNKNOWN_CPUS_MIN,
            (None, _) => self.window_needed_s() >= WINDOW_NEEDED_MIN_S,
        }
    }
}

fn size<'a>(ctx: &Ctx, all: &'a [LockTotal]) -> Option<Sized<'a>> {
    let derived: Vec<&LockTotal> = all.iter().filter(|l| is_derived(&l.name)).collect();
    let ranked: Vec<&LockTotal> = all
        .iter()
        .filter(|l| !is_derived(&l.name) && l.wait_s > 0.0)
        .collect();
    let top = *ranked.first()?;
    let next = ranked.get(1).copied();
    let win = window(ctx);
    let cpus = ctx.cpus();
    Some(Sized {
        top,
        next,
        derived,
        waiters: win.map(|(w, _)| top.wait_s / w),
        cpu_share: match (win, cpus) {
            (Some((w, _)), Some(c)) => Some(top.wait_s / (w * f64::from(c))),
            _ => None,
        },
        lead: next.map(|n| top.wait_s / n.wait_s.max(1e-9)),
        ranked,
        win,
        cpus,
    })
}

/// The lock-contention rule: the top lock (per lock, or per call site when the profile names
/// only lock types) sized as its wait against window × CPUs. A wait too small to limit
/// anything is a sized resource that is ruled out, never a finding; without a window, the
/// window that would make it matter is said.
pub fn check(ctx: &Ctx) -> Option<Entry> {
    let all = aggregate(&ctx.run.locks);
    let z = size(ctx, &all)?;
    let resource = Resource::Lock {
        name: z.top.name.clone(),
        site: z.top.sites.first().map(|(s, _)| s.clone()),
    };
    let capacity = match (z.win, z.cpus) {
        (Some((w, how)), Some(c)) => Some(Quantity::new(
            w * f64::from(c),
            Unit::Seconds,
            format!("CPU-seconds: the window ({how}) × {c} CPUs"),
        )),
        (Some((w, how)), None) => Some(Quantity::new(
            w,
            Unit::Seconds,
            format!("the window ({how})"),
        )),
        _ => None,
    };
    let used = Quantity::new(
        z.top.wait_s,
        Unit::Seconds,
        "waited for it, summed over threads",
    );
    if !z.matters() {
        let e = Entry::context(resource, cause::LOCK_CONTENTION, small_words(&z));
        return Some(match capacity {
            Some(c) => e.sized(c, used),
            None => {
                let mut e = e;
                e.used = Some(used);
                e
            }
        });
    }
    let f = words(ctx, &z);
    let mut e = Entry::claim(Class::Ceiling, resource, f).explains_all(&[cause::SATURATION]);
    e = match capacity {
        Some(c) => e.sized(c, used),
        None => {
            e.used = Some(used);
            e
        }
    };
    Some(e)
}

/// Why the top lock is too small to be a ceiling, with its figures.
fn small_words(z: &Sized) -> String {
    match (z.win, z.cpu_share) {
        (Some((w, _)), Some(s)) => format!(
            "{}: waited {} in a {} window, {} of the CPU time: too small to limit anything",
            z.top.name,
            fmt::value(z.top.wait_s, Unit::Seconds),
            fmt::value(w, Unit::Seconds),
            fmt::value(s * 100.0, Unit::Percent)
        ),
        (Some((w, _)), None) => format!(
            "{}: waited {} in a {} window ({} threads waiting on average): too small to limit anything",
            z.top.name,
            fmt::value(z.top.wait_s, Unit::Seconds),
            fmt::value(w, Unit::Seconds),
            fmt::number(z.waiters.unwrap_or(0.0))
        ),
        _ => format!(
            "{}: waited {} in all; it would be {} of the CPU time only if the profile covered less than {}, so it cannot have limited anything",
            z.top.name,
            fmt::value(z.top.wait_s, Unit::Seconds),
            fmt::value(CPU_SHARE_MIN * 100.0, Unit::Percent),
            fmt::value(z.window_needed_s(), Unit::Seconds)
        ),
    }
}

fn words(ctx: &Ctx, z: &Sized) -> Finding {
    let (top, next, win, cpus, waiters, cpu_share, lead) =
        (z.top, z.next, z.win, z.cpus, z.waiters, z.cpu_share, z.lead);
    let confidence = if win.is_some() {
        let strength = mean_strength(&[
            cpu_share.map(|s| ramp(s, CPU_SHARE_MIN, 0.10)),
            waiters.map(|w| ramp(w, WAITERS_MIN, 0.5)),
            Some(lead.map_or(1.0, |l| ramp(l, 1.0, 3.0))),
        ])
        .unwrap_or(0.0);
        0.4 + 0.5 * strength
    } else {
        0.3
    };
    let sites = if top.sites.len() > 1 {
        format!(" over {} call sites", top.sites.len())
    } else {
        String::new()
    };
    let arithmetic = match (win, cpus) {
        (Some((w, _)), Some(c)) => format!(
            ": {} of the {} wall time summed over CPUs ({} ÷ {} = {} threads waiting at any moment), or {} of the {} CPU-seconds ({} s × {c} CPUs)",
            fmt::value(waiters.unwrap_or(0.0) * 100.0, Unit::Percent),
            fmt::value(w, Unit::Seconds),
            fmt::value(top.wait_s, Unit::Seconds),
            fmt::value(w, Unit::Seconds),
            fmt::number(waiters.unwrap_or(0.0)),
            fmt::value(cpu_share.unwrap_or(0.0) * 100.0, Unit::Percent),
            fmt::number(w * f64::from(c)),
            fmt::number(w),
        ),
        (Some((w, _)), None) => format!(
            ": {} of the {} wall time summed over CPUs (the CPU count is unknown)",
            fmt::value(waiters.unwrap_or(0.0) * 100.0, Unit::Percent),
            fmt::value(w, Unit::Seconds)
        ),
        _ => format!(
            " (the profile's duration is unknown, so its share cannot be said: it is {} of the CPU time on {} CPU{} if the profile covered {})",
            fmt::value(CPU_SHARE_MIN * 100.0, Unit::Percent),
            cpus.unwrap_or(1),
            if cpus.unwrap_or(1) == 1 { "" } else { "s" },
            fmt::value(z.window_needed_s(), Unit::Seconds)
        ),
    };
    let next_words = match (next, lead) {
        (Some(n), Some(l)) => format!(
            "; the next, {} ({}), is {} behind and is the bottleneck to expect once {} is gone",
            n.name,
            fmt::value(n.wait_s, Unit::Seconds),
            fmt::times(l),
            top.name
        ),
        _ => String::new(),
    };
    let from = match top.sites.first() {
        Some((site, w)) if top.sites.len() > 1 || *site != top.name => format!(
            ", most of it ({}) from {site}",
            fmt::value(w / top.wait_s.max(1e-12) * 100.0, Unit::Percent)
        ),
        _ => String::new(),
    };
    let mut f = finding(
        cause::LOCK_CONTENTION,
        format!(
            "Lock contention on {}: threads waited {} for it{sites}{from}{arithmetic}{next_words}.",
            top.name,
            fmt::value(top.wait_s, Unit::Seconds)
        ),
        confidence,
    );
    for l in z.ranked.iter().take(3) {
        let sites: Vec<String> = l
            .sites
            .iter()
            .map(|(s, w)| format!("{s} {}", fmt::value(*w, Unit::Seconds)))
            .collect();
        let hold = l
            .hold_s
            .map(|h| format!(", held {}", fmt::value(h, Unit::Seconds)))
            .unwrap_or_default();
        f.evidence.push(ctx.ev_total(
            format!("locks[{}].wait_total_s", l.name),
            Some((l.wait_s, Unit::Seconds)),
            format!(
                "{}: waited {}{hold}, {} {} ({})",
                l.name,
                fmt::value(l.wait_s, Unit::Seconds),
                fmt::number(l.count as f64),
                if l.contended_only {
                    "contended acquisitions"
                } else {
                    "acquisitions"
                },
                sites.join("; ")
            ),
        ));
    }
    if let Some((w, how)) = win {
        f.evidence.push(ctx.ev_total(
            "window_s",
            Some((w, Unit::Seconds)),
            format!("profile window {} ({how})", fmt::value(w, Unit::Seconds)),
        ));
    }
    for d in &z.derived {
        f.alternatives.push(format!(
            "{} ({} of wait) is the blocking machinery's own lock: it is contended because the mutexes above are, not a cause of its own",
            d.name,
            fmt::value(d.wait_s, Unit::Seconds)
        ));
    }
    f.advice.push(advice(
        format!("take {} off the per-packet path: per-CPU data, a lock-free (epoch/RCU) read side, or one acquisition per batch", top.name),
        match next {
            Some(n) => format!("throughput rises until {} binds next", n.name),
            None => "throughput rises until the next resource binds".to_string(),
        },
        Some("contention moves, it does not vanish: profile again after the change"),
    ));
    f.next = Some(if win.is_none() {
        "give the profile's duration (--interval 30s) and CPU count so the wait can be related to the time available".into()
    } else {
        "profile again under the same load after the change; the runner-up should lead".into()
    });
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctx::Ctx;
    use crate::testutil::*;
    use crate::Options;
    use netceil_model::{Run, RunSource};

    fn lock(name: &str, wait_s: f64) -> LockStat {
        LockStat {
            name: name.into(),
            count: 1000,
            wait_total_s: wait_s,
            ..Default::default()
        }
    }

    fn profile(locks: Vec<LockStat>) -> Run {
        let mut run = Run::new(
            "p",
            RunSource::Imported {
                format: "lockprof".into(),
                file: "p.txt".into(),
            },
        );
        run.locks = locks;
        run
    }

    fn run_with(run: &Run, window: Option<f64>, cpus: Option<u32>) -> Option<Finding> {
        let opts = Options {
            window_s: window,
            cpus,
        };
        check(&Ctx::new(run, &opts))
            .filter(|e| e.class != crate::ledger::Class::Context)
            .map(|e| e.finding)
    }

    #[test]
    fn names_lose_their_call_site() {
        assert_eq!(
            lock_name("net/route.c:197 (sleep mutex:rtentry)"),
            "rtentry"
        );
        assert_eq!(
            lock_name("kern/subr_turnstile.c:489 (spin mutex:turnstile chain)"),
            "turnstile chain"
        );
        assert_eq!(lock_name("&rq->__lock"), "&rq->__lock");
        // A name with colons and parentheses of its own (iflib's per-queue mutexes).
        assert_eq!(
            lock_name("net/iflib.c:2951 (sleep mutex:ixl0:RX(10))"),
            "ixl0:RX(10)"
        );
    }

    #[test]
    fn rows_of_one_lock_are_summed_and_ranked() {
        let run = profile(vec![
            lock("a.c:1 (sleep mutex:hot)", 2.0),
            lock("b.c:1 (sleep mutex:warm)", 3.0),
            lock("c.c:1 (sleep mutex:hot)", 2.5),
        ]);
        let agg = aggregate(&run.locks);
        assert_eq!(agg[0].name, "hot");
        assert!((agg[0].wait_s - 4.5).abs() < 1e-9);
        assert_eq!(agg[0].sites.len(), 2);
        let f = run_with(&run, Some(10.0), Some(4)).unwrap();
        assert!(f.summary.contains("on hot"), "{}", f.summary);
        assert!(f.summary.contains("the next, warm"), "{}", f.summary);
    }

    #[test]
    fn small_waits_are_not_contention() {
        let run = profile(vec![lock("x", 0.05), lock("y", 0.01)]);
        assert!(run_with(&run, Some(30.0), Some(8)).is_none());
    }

    #[test]
    fn machinery_locks_are_not_causes() {
        let run = profile(vec![
            lock("t.c:1 (spin mutex:turnstile chain)", 20.0),
            lock("r.c:1 (sleep mutex:rt)", 10.0),
        ]);
        let f = run_with(&run, Some(30.0), Some(8)).unwrap();
        assert!(f.summary.contains("on rt"), "{}", f.summary);
        assert!(f.alternatives[0].contains("turnstile chain"));
    }

    /// A lock table netceil's own probe gathered carries the probe's attach time: a wait of a
    /// short run is sized against that, not judged as if the profile could have been 30 s.
    #[test]
    fn the_probes_attach_time_is_the_window() {
        let mut run = profile(vec![lock("pipe->mutex", 0.23)]);
        assert!(run_with(&run, None, Some(2)).is_none());
        run.meta.locks_window_s = Some(0.8);
        run.meta.host.cpus = Some(2);
        let f = run_with(&run, None, Some(2)).expect("0.23 s of 1.6 CPU-s is a ceiling");
        assert!(f.summary.contains("pipe->mutex"), "{}", f.summary);
    }

    #[test]
    fn without_a_window_the_ranking_is_given_at_low_confidence() {
        let run = profile(vec![lock("a", 5.0), lock("b", 1.0)]);
        let f = run_with(&run, None, None).unwrap();
        assert_eq!(f.confidence, 0.3);
        assert!(f.summary.contains("cannot be said"));
        assert!(f.next.unwrap().contains("--interval"));
        let mut annotated = run.clone();
        annotated.meta.annotations.interval_s = Some(10.0);
        annotated.meta.host.cpus = Some(2);
        let g = on(&annotated, check).unwrap();
        assert!(
            g.summary.contains("25 % of the 20 CPU-seconds"),
            "{}",
            g.summary
        );
    }

    #[test]
    fn no_locks_no_finding() {
        assert!(on(&live_run(5, idle_row), check).is_none());
    }
}
