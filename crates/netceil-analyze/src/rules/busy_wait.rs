//! Busy-wait inflation: CPU % that is not work.
//!
//! SEEDS §3: an Erlang VM's schedulers spin before they sleep, so the OS counted 45.5 % CPU
//! while the schedulers did 4.6 % of real work; with `+sbwt none` OS CPU fell to 14.3 %. Any
//! poller looks the same: the CPU is "busy" and nothing is being done.
//!
//! [`effective_utilization`] compares an effective-utilization metric (a name containing
//! `scheduler_util`: Erlang's scheduler wall time) with OS CPU (a name containing `cpu_util`,
//! else `cpu_busy_pct`, else 100 − idle). Values without a `_pct` name that never exceed 1
//! are fractions and are scaled to %. It fires when, at the row where they diverge most, OS CPU
//! is ≥ 2× the effective figure and ≥ 5 points above it. Confidence: floor 0.45, band 0.5;
//! strength: the ratio (2× → 0, 6× → 1); × the data factor.
//!
//! [`polling_thread`] is the Linux thread-level form: a thread near 100 % of a core with almost
//! no voluntary context switches (it never blocks) while throughput is flat. A compute-bound
//! thread looks the same, so the confidence stays moderate: floor 0.4, band 0.3; strengths:
//! its CPU (90 % → 0, 99 % → 1) and how rarely it blocks (10/s → 0, 0/s → 1). The threads
//! netceil's load engine started for the run (`meta.own_thread_ids`, by OS thread id) are left
//! out: an unpaced sender runs flat out by design, and a paced spinner is the
//! `generator_busy_wait` rule's business. A thread's name proves nothing, so it exempts none.

use netceil_model::{names as n, Finding, Metric, Quantity, Resource, Unit};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::ledger::{Class, Entry};
use crate::stats::{cv, mean, ramp};
use netceil_model::fmt;

/// A metric's values in %, scaling fractions.
fn as_pct(m: &Metric, v: f64) -> f64 {
    let fraction = m.unit == Unit::Ratio
        || (m.unit != Unit::Percent
            && !m.id.name.ends_with("_pct")
            && m.values.iter().flatten().all(|x| *x <= 1.0));
    if fraction {
        v * 100.0
    } else {
        v
    }
}

/// The per-row values of the metrics whose name contains `needle` (and not `unless`): the
/// unlabeled one, else the mean over labels (per scheduler, per CPU).
fn column(ctx: &Ctx, needle: &str, unless: &str) -> Option<(String, Vec<Option<f64>>)> {
    let s = ctx.series();
    let matching: Vec<&Metric> = s
        .metrics
        .iter()
        .filter(|m| m.id.name.contains(needle) && !m.id.name.contains(unless))
        .collect();
    let chosen: Vec<&Metric> = match matching.iter().find(|m| m.id.labels.is_empty()) {
        Some(m) => vec![*m],
        None => matching,
    };
    let first = chosen.first()?;
    let name = if chosen.len() == 1 {
        first.id.to_string()
    } else {
        format!("mean of {} {}", chosen.len(), first.id.name)
    };
    let rows = (0..s.len())
        .map(|r| {
            let vals: Vec<f64> = chosen
                .iter()
                .filter_map(|m| m.values.get(r).copied().flatten().map(|v| as_pct(m, v)))
                .collect();
            mean(&vals)
        })
        .collect();
    Some((name, rows))
}

/// OS CPU busy % per row.
fn os_cpu(ctx: &Ctx) -> Option<(String, Vec<Option<f64>>)> {
    if let Some(c) = column(ctx, "cpu_util", "scheduler") {
        return Some(c);
    }
    let s = ctx.series();
    if let Some(m) = s.total(n::CPU_BUSY_PCT) {
        return Some((m.id.to_string(), m.values.clone()));
    }
    s.total(n::CPU_IDLE_PCT).map(|m| {
        (
            format!("100 − {}", m.id),
            m.values.iter().map(|v| v.map(|i| 100.0 - i)).collect(),
        )
    })
}

/// OS CPU far above effective utilization: in the ledger, the schedulers (or threads) sized as
/// the work they did against the CPU the OS counted. It explains the CPU looking full.
pub fn effective_utilization(ctx: &Ctx) -> Option<Entry> {
    let (f, os_at, eff_at) = effective_finding(ctx)?;
    Some(
        Entry::claim(
            Class::Ceiling,
            Resource::Scheduler {
                name: "schedulers".into(),
            },
            f,
        )
        .sized(
            Quantity::new(os_at, Unit::Percent, "OS CPU busy"),
            Quantity::new(
                eff_at,
                Unit::Percent,
                "effective utilization (time working)",
            ),
        )
        .explains_all(&[cause::HOT_CPU, cause::CPU_BOUND]),
    )
}

fn effective_finding(ctx: &Ctx) -> Option<(Finding, f64, f64)> {
    let (eff_name, eff) = column(ctx, "scheduler_util", "\u{0}")?;
    let (os_name, os) = os_cpu(ctx)?;
    let pairs: Vec<(usize, f64, f64)> = ctx
        .rows
        .clone()
        .filter_map(|r| {
            Some((
                r,
                os.get(r).copied().flatten()?,
                eff.get(r).copied().flatten()?,
            ))
        })
        .filter(|(_, o, _)| *o >= 5.0)
        .collect();
    let &(row, os_at, eff_at) = pairs
        .iter()
        .max_by(|a, b| (a.1 / a.2.max(1e-9)).total_cmp(&(b.1 / b.2.max(1e-9))))?;
    let ratio = os_at / eff_at.max(1e-9);
    if ratio < 2.0 || os_at - eff_at < 5.0 {
        return None;
    }
    let confidence = (0.45 + 0.5 * ramp(ratio, 2.0, 6.0)) * ctx.data_factor();
    let erlang = eff_name.contains("erlang") || eff_name.contains("scheduler");
    let doer = if erlang {
        "the schedulers"
    } else {
        "the threads"
    };
    // A table row that is a sweep point has a label; a time-series row has its time.
    let row_words = |r: usize| {
        ctx.row_label(r)
            .unwrap_or_else(|| format!("{:.0} s", ctx.series().t_s.get(r).copied().unwrap_or(0.0)))
    };
    let at = if pairs.len() > 1 {
        format!(" ({})", row_words(row))
    } else {
        String::new()
    };
    let mut summary = format!(
        "OS CPU overstates the work about {}: the OS counted {:.1} % CPU busy where {doer} did {:.1} % of real work{at}",
        fmt::times(ratio),
        os_at,
        eff_at
    );
    if pairs.len() > 1 {
        let (first, last) = (pairs[0], pairs[pairs.len() - 1]);
        summary.push_str(&format!(
            "; from {} to {} OS CPU went {:.1} → {:.1} % while the work went {:.1} → {:.1} %",
            row_words(first.0),
            row_words(last.0),
            first.1,
            last.1,
            first.2,
            last.2
        ));
    }
    summary.push_str(if erlang {
        ": the rest is schedulers busy-waiting before they sleep."
    } else {
        ": the rest is spinning, not work."
    });
    let mut f = finding(cause::BUSY_WAIT, summary, confidence);
    let window = crate::phases::row_window(ctx.series(), &(row..row + 1));
    f.evidence.push(netceil_model::Evidence {
        metric: os_name,
        window_s: window,
        value: Some(os_at),
        unit: Some(Unit::Percent),
        text: format!("OS CPU {os_at:.1} %"),
    });
    f.evidence.push(netceil_model::Evidence {
        metric: eff_name,
        window_s: window,
        value: Some(eff_at),
        unit: Some(Unit::Percent),
        text: format!("effective utilization {eff_at:.1} % (time {doer} spent working)"),
    });
    f.alternatives.push(format!(
        "CPU-bound ruled out: only {eff_at:.1} % of the time was work, though the OS shows {os_at:.1} %"
    ));
    if erlang {
        f.advice.push(advice(
            "+sbwt none (and +sbwtdcpu none +sbwtdio none on OTP ≥ 21) in the VM's arguments",
            "OS CPU falls towards the schedulers' real utilization (SEEDS §3: 45.5 % → 14.3 % from +sbwt very_long to none)",
            Some("a scheduler that sleeps at once wakes a little later: slightly more latency on bursty traffic"),
        ));
        f.next = Some(
            "msacc (erlang:system_flag(microstate_accounting, true)) splits scheduler time into work, spinning and sleep".into(),
        );
    } else {
        f.advice.push(advice(
            "shorten the spin before sleeping (busy_poll / busy_read µs, the runtime's spin count)",
            "OS CPU falls towards the effective utilization",
            Some("wake-up latency rises a little"),
        ));
        f.next = Some("perf top shows where the spinning happens".into());
    }
    Some((f, os_at, eff_at))
}

/// A thread near 100 % that never blocks while throughput is flat: the thread in the ledger,
/// sized as its share of a core; it explains its core looking hot.
pub fn polling_thread(ctx: &Ctx) -> Option<Entry> {
    let (f, load, pid) = polling_finding(ctx)?;
    Some(crate::rules::threads::thread_entry(
        ctx,
        &load,
        pid.as_deref(),
        f,
    ))
}

/// A thread that never blocks while on (or wanting) a full core: CPU wanted (on it or waiting
/// for it), on-CPU, voluntary switches/s, the thread's metric, and the scheduler's split when
/// the offcpu probe followed it: (runnable-waiting, blocked).
type Candidate<'m> = (f64, f64, f64, &'m Metric, Option<(f64, f64)>);

/// The threads that look like pollers, from the offcpu probe's exact split where it ran and
/// from /proc otherwise; netceil's own load threads are left out.
fn poll_candidates<'m>(ctx: &'m Ctx) -> Vec<Candidate<'m>> {
    let s = ctx.series();
    let own_tids = &ctx.run.meta.own_thread_ids;
    let own = |m: &Metric| {
        m.id.label(n::LABEL_TID)
            .and_then(|t| t.parse::<u32>().ok())
            .is_some_and(|t| own_tids.contains(&t))
    };
    let mut candidates: Vec<Candidate> = Vec::new();
    // The offcpu probe (sched_switch): exact on-CPU, runnable-waiting and blocked time, for any
    // followed process. A spinner that shares its core with other work is on the CPU only
    // part of the time, but it never waits for anything but the CPU.
    let mut seen_tids = Vec::new();
    for m in s.by_name(n::SCHED_ON_CPU_PCT) {
        if own(m) {
            continue;
        }
        let (Some(on), Some(runnable), Some(blocked), Some(vol)) = (
            ctx.mean_of(m),
            ctx.sibling(m, n::SCHED_RUNNABLE_WAIT_PCT)
                .and_then(|v| ctx.mean_of(v)),
            ctx.sibling(m, n::SCHED_BLOCKED_PCT)
                .and_then(|v| ctx.mean_of(v)),
            ctx.sibling(m, n::SCHED_VOLUNTARY_CS_PER_S)
                .and_then(|v| ctx.mean_of(v)),
        ) else {
            continue;
        };
        if let Some(t) = m.id.label(n::LABEL_TID) {
            seen_tids.push(t.to_string());
        }
        let wanted = on + runnable;
        if wanted >= 90.0 && on >= 20.0 && blocked < 5.0 && vol < 10.0 {
            // The /proc figures of the same thread carry its I/O, for progress.
            let proc_metric = s
                .by_name(n::THREAD_CPU_PCT)
                .find(|p| p.id.label(n::LABEL_TID) == m.id.label(n::LABEL_TID));
            candidates.push((
                wanted,
                on,
                vol,
                proc_metric.unwrap_or(m),
                Some((runnable, blocked)),
            ));
        }
    }
    for m in s.by_name(n::THREAD_CPU_PCT) {
        if own(m)
            || m.id
                .label(n::LABEL_TID)
                .is_some_and(|t| seen_tids.iter().any(|x| x == t))
        {
            continue;
        }
        let Some(cpu) = ctx.mean_of(m).filter(|c| *c >= 90.0) else {
            continue;
        };
        let Some(vol) = ctx
            .sibling(m, n::THREAD_VOLUNTARY_CS_PER_S)
            .and_then(|v| ctx.mean_of(v))
        else {
            continue;
        };
        if vol >= 10.0 {
            continue;
        }
        candidates.push((cpu, cpu, vol, m, None));
    }
    candidates
}

fn polling_finding(
    ctx: &Ctx,
) -> Option<(Finding, crate::rules::threads::ThreadLoad, Option<String>)> {
    if !ctx.net_possible() {
        return None;
    }
    let s = ctx.series();
    if let Some(key) = ctx.phases.key.as_ref().and_then(|k| s.get(k)) {
        if cv(&ctx.values(key)).is_some_and(|c| c > 0.15) {
            return None;
        }
    }
    let (wanted, cpu, vol, m, split) = poll_candidates(ctx)
        .into_iter()
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    let tid = m.id.label(n::LABEL_TID).unwrap_or("?").to_string();
    let comm = m.id.label(n::LABEL_COMM).unwrap_or("?").to_string();
    let pid = m.id.label(n::LABEL_PID).unwrap_or("PID").to_string();
    // On the CPU and never blocking is also what a busy worker looks like: what it got done
    // tells them apart.
    let load = crate::rules::threads::thread_load(ctx, m)?;
    let (progressed, how) = crate::rules::threads::progress_in(ctx, &load);
    if progressed == Some(true) {
        // A worker, not a poller: `threads::busy_worker` speaks for it.
        return None;
    }
    let strength = (ramp(wanted, 90.0, 99.0) + ramp(vol, 10.0, 0.0)) / 2.0;
    // Without the thread's own I/O, a worker cannot be ruled out: say so, and claim less.
    let measured = if progressed.is_some() { 1.0 } else { 0.7 };
    let confidence = (0.4 + 0.3 * strength) * ctx.data_factor() * ctx.net_factor() * measured;
    let flat = ctx
        .throughput()
        .map(|t| {
            format!(
                " while throughput stayed flat at {}",
                fmt::value(t.bits_per_s, Unit::BitsPerSecond)
            )
        })
        .unwrap_or_default();
    // Named like netceil's threads but not one the load engine started for this run: the
    // sampler, the main thread, or another netceil process.
    let own = if comm.starts_with("netceil") {
        " (a netceil thread, but not one of this run's load threads)"
    } else {
        ""
    };
    let sched_words = split
        .map(|(runnable, blocked)| {
            format!(
                " (the scheduler's own account: on a CPU {}, runnable and waiting for one {}, blocked {})",
                fmt::value(cpu, Unit::Percent),
                fmt::value(runnable, Unit::Percent),
                fmt::value(blocked, Unit::Percent)
            )
        })
        .unwrap_or_default();
    let mut f = finding(
        cause::POLLING_THREAD,
        format!(
            "Thread {comm} ({tid}){own} {} {} of a core{sched_words} with {} voluntary context switches/s{flat}, and {how}: it never blocks, the signature of a polling loop.",
            if split.is_some() { "wanted" } else { "ran at" },
            fmt::value(wanted, Unit::Percent),
            fmt::number(vol)
        ),
        confidence,
    );
    f.evidence.push(ctx.ev(
        m.id.to_string(),
        Some((cpu, Unit::Percent)),
        format!("{comm} at {} of a core", fmt::value(cpu, Unit::Percent)),
    ));
    if let Some((runnable, blocked)) = split {
        f.evidence.push(ctx.ev(
            format!("{}{{tid={tid}}}", n::SCHED_BLOCKED_PCT),
            Some((blocked, Unit::Percent)),
            format!(
                "blocked {} of the time, runnable but waiting for a CPU {} (sched_switch)",
                fmt::value(blocked, Unit::Percent),
                fmt::value(runnable, Unit::Percent)
            ),
        ));
    }
    f.evidence.push(ctx.ev(
        format!(
            "{}{{tid={tid}}}",
            if split.is_some() {
                n::SCHED_VOLUNTARY_CS_PER_S
            } else {
                n::THREAD_VOLUNTARY_CS_PER_S
            }
        ),
        Some((vol, Unit::PerSecond)),
        format!("{} voluntary context switches/s", fmt::number(vol)),
    ));
    f.alternatives.push(if progressed.is_some() {
        "a busy worker: ruled out, its own I/O stayed flat while it spun".into()
    } else {
        "a busy worker looks the same: not ruled out, its own I/O was not measured".into()
    });
    f.advice.push(advice(
        "block instead of polling (a blocking recv or epoll_wait with a timeout), or bound the spin (SO_BUSY_POLL µs)",
        "the core is freed for work; OS CPU falls to what the work needs",
        Some("a blocking wait adds wake-up latency"),
    ));
    f.next = Some(format!(
        "confirm: perf top -t {tid} shows a tight loop around recv/poll; strace -c -f -p {pid} counts the calls and EAGAIN errors; thread_voluntary_cs_per_s stays near 0"
    ));
    Some((f, load, m.id.label(n::LABEL_PID).map(str::to_string)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    fn sbwt_table() -> netceil_model::Run {
        let rows = [
            (45.48, 4.63),
            (40.09, 4.64),
            (35.57, 5.35),
            (29.15, 5.77),
            (22.65, 6.06),
            (14.25, 7.32),
        ];
        imported_run(rows.len(), |s, r| {
            put(s, r, "cpu_util_pct", &[], rows[r].0);
            put(s, r, "erlang_scheduler_util_pct", &[], rows[r].1);
        })
    }

    #[test]
    fn spinning_schedulers_overstate_cpu_about_ten_times() {
        let f = on(&sbwt_table(), effective_utilization).expect("busy wait");
        assert_eq!(f.cause, cause::BUSY_WAIT);
        assert!(f.summary.contains("about 10×"), "{}", f.summary);
        assert!(
            f.summary.contains("45.5 %") && f.summary.contains("4.6 %"),
            "{}",
            f.summary
        );
        assert!(f.advice[0].knob.contains("+sbwt none"));
    }

    #[test]
    fn fractions_are_scaled_to_percent() {
        let run = imported_run(3, |s, r| {
            put(s, r, "cpu_util", &[], [0.19, 0.32, 0.29][r]);
            put(s, r, "scheduler_util", &[], [0.059, 0.079, 0.073][r]);
        });
        let f = on(&run, effective_utilization).unwrap();
        assert!(f.summary.contains("about 4×"), "{}", f.summary);
    }

    #[test]
    fn matching_cpu_and_work_is_not_busy_wait() {
        let run = imported_run(5, |s, r| {
            put(s, r, n::CPU_BUSY_PCT, &[], 40.0 + r as f64);
            put(s, r, "erlang_scheduler_util_pct", &[], 37.0 + r as f64);
        });
        assert!(on(&run, effective_utilization).is_none());
    }

    /// An Erlang VM's own table, as imported: the OS's CPU as the machine's busy share, the
    /// schedulers' work as a ratio of its own.
    fn vm_table(cpu_pct: f64, sched: f64) -> netceil_model::Run {
        imported_run(12, |s, r| {
            put(s, r, n::CPU_BUSY_PCT, &[], cpu_pct + noise(r, 1.5));
            put(s, r, "scheduler_util_ratio", &[], sched + noise(r, 0.015));
        })
    }

    #[test]
    fn a_vm_whose_cpu_is_full_of_work_is_cpu_bound_and_one_that_spins_is_not() {
        // Work time close to the CPU time: the CPU is what the VM lacks.
        let full = crate::analyze(&vm_table(97.0, 0.93));
        assert_eq!(full[0].cause, cause::CPU_BOUND, "{full:#?}");
        // The CPU as full, the schedulers at 38 % of it: the rest is spinning, which yields to
        // work, so the CPU is not the ceiling; busy-wait names it and the CPU is its symptom.
        let spin = crate::analyze(&vm_table(93.0, 0.38));
        assert_eq!(spin[0].cause, cause::BUSY_WAIT, "{spin:#?}");
    }

    fn with_thread(cpu: f64, vol: f64, throughput_jitter: f64) -> netceil_model::Run {
        with_named_thread("poller", cpu, vol, throughput_jitter)
    }

    /// The thread of [`with_named_thread`] has tid 43.
    const TID: u32 = 43;

    fn with_named_thread(
        comm: &str,
        cpu: f64,
        vol: f64,
        throughput_jitter: f64,
    ) -> netceil_model::Run {
        live_run(10, |s, r| {
            put(
                s,
                r,
                n::LOAD_RX_BITS_PER_S,
                &[],
                1e8 + noise(r, throughput_jitter),
            );
            let l = [
                (n::LABEL_PID, "42"),
                (n::LABEL_TID, "43"),
                (n::LABEL_COMM, comm),
            ];
            put(s, r, n::THREAD_CPU_PCT, &l, cpu);
            put(s, r, n::THREAD_VOLUNTARY_CS_PER_S, &l, vol);
        })
    }

    /// A followed thread as the offcpu probe records it: on-CPU, runnable-waiting, blocked %,
    /// voluntary switches/s; its /proc CPU share says only `proc_cpu`.
    fn with_sched(
        on: f64,
        runnable: f64,
        blocked: f64,
        vol: f64,
        proc_cpu: f64,
    ) -> netceil_model::Run {
        live_run(10, |s, r| {
            put(s, r, n::LOAD_RX_BITS_PER_S, &[], 1e8 + noise(r, 1e6));
            let l = [
                (n::LABEL_PID, "42"),
                (n::LABEL_TID, "43"),
                (n::LABEL_COMM, "spinner"),
            ];
            put(s, r, n::THREAD_CPU_PCT, &l, proc_cpu);
            put(s, r, n::THREAD_VOLUNTARY_CS_PER_S, &l, vol);
            put(s, r, n::SCHED_ON_CPU_PCT, &l, on);
            put(s, r, n::SCHED_RUNNABLE_WAIT_PCT, &l, runnable);
            put(s, r, n::SCHED_BLOCKED_PCT, &l, blocked);
            put(s, r, n::SCHED_VOLUNTARY_CS_PER_S, &l, vol);
        })
    }

    #[test]
    fn a_spinner_sharing_its_core_is_seen_by_the_scheduler_account() {
        // On the CPU half the time, waiting for it the other half, never blocked: /proc says
        // 50 % and the /proc rule stays silent; the offcpu account says it wanted the core.
        let f = on(&with_sched(50.0, 49.0, 0.5, 0.3, 50.0), polling_thread).expect("polling");
        assert!(f.summary.contains("wanted 99 % of a core"), "{}", f.summary);
        assert!(f.summary.contains("blocked 0.500 %"), "{}", f.summary);
        assert!(on(&with_thread(50.0, 0.3, 1e6), polling_thread).is_none());
    }

    #[test]
    fn a_thread_that_sleeps_between_work_is_not_a_spinner_by_the_scheduler_account() {
        // Busy 60 %, blocked 35 %: it waits for something, so it is no poller.
        assert!(on(&with_sched(60.0, 5.0, 35.0, 2.0, 60.0), polling_thread).is_none());
        // Blocks rarely but often enough to count as waiting (many voluntary switches).
        assert!(on(&with_sched(95.0, 4.0, 1.0, 500.0, 95.0), polling_thread).is_none());
    }

    #[test]
    fn a_thread_that_never_blocks_is_a_polling_loop() {
        let f = on(&with_thread(99.5, 0.2, 1e6), polling_thread).expect("polling");
        assert!(f.summary.contains("poller (43)"), "{}", f.summary);
        assert!(f.next.unwrap().contains("strace -c"));
    }

    #[test]
    fn a_load_thread_of_the_run_is_not_the_systems_polling_loop() {
        // Recorded by thread id, whatever it is called.
        for comm in ["netceil-udp-tx0", "poller"] {
            let mut run = with_named_thread(comm, 99.5, 0.2, 1e6);
            run.meta.own_thread_ids = vec![7, TID];
            assert!(on(&run, polling_thread).is_none(), "{comm}");
        }
    }

    #[test]
    fn a_netceil_name_alone_does_not_exempt_a_thread() {
        let mut run = with_named_thread("netceil-udp-tx0", 99.5, 0.2, 1e6);
        // Other threads were the run's own; this one was not.
        run.meta.own_thread_ids = vec![TID + 1, TID + 2];
        let f = on(&run, polling_thread).expect("flagged despite its name");
        assert!(f.summary.contains("netceil-udp-tx0 (43)"), "{}", f.summary);
        assert!(
            f.summary.contains("not one of this run's load threads"),
            "{}",
            f.summary
        );
    }

    /// [`with_thread`] plus the thread's own I/O counters.
    fn with_io(syscalls: f64, io_bytes: f64) -> netceil_model::Run {
        let mut run = with_thread(99.5, 0.2, 1e6);
        let l = [
            (n::LABEL_PID, "42"),
            (n::LABEL_TID, "43"),
            (n::LABEL_COMM, "poller"),
        ];
        for r in 0..10 {
            put(&mut run.series, r, n::THREAD_SYSCALLS_PER_S, &l, syscalls);
            put(&mut run.series, r, n::THREAD_IO_BYTES_PER_S, &l, io_bytes);
        }
        run
    }

    #[test]
    fn a_spinning_thread_whose_io_moves_is_a_busy_worker_not_a_polling_loop() {
        let run = with_io(80_000.0, 1.2e9);
        assert!(on(&run, polling_thread).is_none());
        let f = on(&run, crate::rules::threads::busy_worker).expect("a finding");
        assert_eq!(f.cause, cause::THREAD_SATURATED);
        assert!(
            f.summary.starts_with("A busy worker, not a polling loop"),
            "{}",
            f.summary
        );
        assert!(f.summary.contains("process 42"), "{}", f.summary);
    }

    #[test]
    fn a_spinning_thread_whose_io_stays_flat_is_polling_and_says_why() {
        let f = on(&with_io(3.0, 100.0), polling_thread).expect("polling");
        assert_eq!(f.cause, cause::POLLING_THREAD);
        assert!(f.summary.contains("stayed flat"), "{}", f.summary);
        assert!(
            f.alternatives[0].contains("ruled out"),
            "{:?}",
            f.alternatives
        );
        // Measured I/O makes the claim firmer than the unmeasured one.
        let unmeasured = on(&with_thread(99.5, 0.2, 1e6), polling_thread).unwrap();
        assert!(
            unmeasured.summary.contains("not measured"),
            "{}",
            unmeasured.summary
        );
        assert!(f.confidence > unmeasured.confidence);
    }

    #[test]
    fn a_thread_that_blocks_is_not_polling() {
        assert!(on(&with_thread(99.5, 3000.0, 1e6), polling_thread).is_none());
        assert!(on(&with_thread(40.0, 0.0, 1e6), polling_thread).is_none());
        // Throughput swinging with the thread: not the flat signature.
        assert!(on(&with_thread(99.5, 0.2, 6e7), polling_thread).is_none());
    }
}
