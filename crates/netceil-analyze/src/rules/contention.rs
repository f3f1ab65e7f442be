//! CPU contention: processes outside the workload took the CPU the workload may use.
//!
//! Mechanism: the scheduler shares each core between everything runnable on it. When other
//! programs keep the workload's cores busy, its threads and the softirq work they trigger wait
//! their turn (or run in shorter slices), and the throughput falls with the share they get. It
//! looks CPU-bound, but the fix is not faster networking: it is moving, pinning or throttling
//! the other programs.
//!
//! **Whose cores.** The cores are the ones the workload may use (`resources.rs`): with an
//! affinity mask, a program on the workload's CPU is a thief even while other CPUs idle.
//!
//! What tells it apart from the workload being CPU-bound on its own: the process scan
//! (`proc_cpu_pct`, every 2 s) names who used each core. The workload's own processes, the
//! processes the scan labelled `role=watched|child|peer` (descendants of a watched process, and
//! peers whose socket faces one of the workload's, in any network namespace), the kernel's
//! network threads and processes niced to 10 or more are not strangers (`resources.rs` says
//! why).
//!
//! Fires when the workload's cores were at most 25 % idle and strangers used at least 25 % of
//! them. Confidence: 0.55 + 0.35 × the mean of the strangers' share (25 % → 0, 60 % → 1) and
//! how busy the cores were (75 % → 0, 98 % → 1), × the data factor. A paced run that got its
//! rate had CPU enough: no finding. Relief gives the workload the strangers' time back: the
//! cores' capacity over what the workload had of it.

use netceil_model::{names as n, Finding, Resource};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::ledger::{pct, Class, Entry, Explains, Relief};
use crate::resources::Stranger;
use crate::stats::{mean, mean_strength, ramp};
use netceil_model::{fmt, Unit};

/// Share of the workload's cores the strangers must have used.
const STRANGER_SHARE_MIN: f64 = 0.25;
/// The workload's cores must have been at most this idle (%).
const IDLE_MAX: f64 = 25.0;
/// The most relief is taken to give (the workload had a tenth of its cores).
const RELIEF_MAX: f64 = 10.0;

/// The measured facts.
struct Theft<'a> {
    cpus: Vec<u32>,
    /// Cores' busy % (mean) and idle.
    busy: f64,
    /// % of one core the strangers took on the workload's cores, summed.
    taken: f64,
    /// Capacity of the workload's cores, % of one core summed (100 per core).
    capacity: f64,
    strangers: Vec<(&'a Stranger, f64)>,
    machine_idle: Option<f64>,
    /// Judged on the full cores where the workload's other end ran, not on all it may use.
    where_it_ran: bool,
}

impl Theft<'_> {
    fn share(&self) -> f64 {
        self.taken / self.capacity.max(1.0)
    }
}

/// The full cores where the workload's other end ran (a `netceil serve` or a server in another
/// namespace, whose own affinity the run cannot see): whoever else ran there took them from
/// the workload, however idle the cores the workload itself may use were.
fn workload_full_cores(ctx: &Ctx) -> Vec<u32> {
    let acc = &ctx.cpu;
    let mut cpus: Vec<u32> = acc
        .cores
        .iter()
        .chain(acc.outside.iter())
        .filter(|c| c.busy >= crate::resources::CORE_FULL_PCT)
        .map(|c| c.cpu)
        .filter(|&c| !acc.starved_peers(&[c]).is_empty())
        .collect();
    cpus.sort_unstable();
    cpus
}

/// The strangers' time on `cpus`, the cores' mean busy %, as a theft.
fn theft_on<'a>(ctx: &'a Ctx, cpus: Vec<u32>, busy: f64) -> Theft<'a> {
    // Strangers whose scans carried no CPU label are counted against the whole machine.
    let mut strangers: Vec<(&Stranger, f64)> = ctx
        .cpu
        .strangers
        .iter()
        .map(|s| {
            (
                s,
                if s.by_cpu.is_empty() {
                    0.0
                } else {
                    s.on(&cpus)
                },
            )
        })
        .filter(|(_, v)| *v > 0.0)
        .collect();
    strangers.sort_by(|a, b| b.1.total_cmp(&a.1));
    let taken: f64 = strangers.iter().map(|(_, v)| v).sum();
    Theft {
        capacity: 100.0 * cpus.len() as f64,
        cpus,
        busy,
        taken,
        strangers,
        machine_idle: ctx.machine_idle(),
        where_it_ran: false,
    }
}

/// The theft to judge: on every core the workload may use when that is a theft, else on the
/// full cores where the workload or its other end ran.
fn measure<'a>(ctx: &'a Ctx) -> Option<Theft<'a>> {
    let acc = &ctx.cpu;
    if !acc.scanned || acc.strangers.is_empty() {
        return None;
    }
    let (cpus, busy) = if acc.cores.is_empty() {
        let cpus: Vec<u32> = (0..ctx.cpus()?).collect();
        (cpus, 100.0 - ctx.machine_idle()?)
    } else {
        let busy = mean(&acc.cores.iter().map(|c| c.busy).collect::<Vec<_>>())?;
        (acc.cpus(), busy)
    };
    let all = theft_on(ctx, cpus, busy);
    if 100.0 - all.busy <= IDLE_MAX && all.share() >= STRANGER_SHARE_MIN {
        return Some(all);
    }
    let full = workload_full_cores(ctx);
    let busy = mean(
        &full
            .iter()
            .filter_map(|c| acc.core(*c))
            .map(|c| c.busy)
            .collect::<Vec<_>>(),
    )?;
    let mut t = theft_on(ctx, full, busy);
    t.where_it_ran = true;
    Some(t)
}

pub fn check(ctx: &Ctx) -> Option<Entry> {
    if ctx.rows.is_empty() || ctx.offered_met() {
        return None;
    }
    let t = measure(ctx)?;
    if 100.0 - t.busy > IDLE_MAX || t.share() < STRANGER_SHARE_MIN {
        return None;
    }
    let strength = mean_strength(&[
        Some(ramp(t.share(), STRANGER_SHARE_MIN, 0.6)),
        Some(ramp(t.busy, 75.0, 98.0)),
    ])
    .unwrap_or(0.0);
    let confidence = (0.55 + 0.35 * strength) * ctx.data_factor();
    // What the workload had of its cores, and what it would have without the strangers.
    let had = (t.busy * t.cpus.len() as f64 - t.taken).max(1.0);
    let relief = ((had + t.taken) / had).min(RELIEF_MAX);
    let f = words(ctx, &t, confidence);
    let mut e = Entry::claim(
        Class::Ceiling,
        Resource::Cpu {
            cpus: t.cpus.clone(),
            far: false,
        },
        f,
    )
    .sized(
        pct(
            t.capacity,
            format!("the {} the workload may use", cpu_words(&t.cpus)),
        ),
        pct(t.taken, "taken by other programs"),
    )
    .relief(Relief::Factor(relief))
    .explains(Explains::cause(cause::SATURATION))
    .explains(Explains::cause(cause::BUFFER_DROPS))
    .explains(Explains::cause(cause::GENERATOR_LIMITED))
    .explains(Explains::cause(cause::UNNAMED_CEILING));
    for c in [
        cause::HOT_CPU,
        cause::CPU_BOUND,
        cause::SENDER_SATURATED,
        cause::RECEIVER_SATURATED,
        cause::THREAD_SATURATED,
    ] {
        e = e.explains(Explains::on(c, &t.cpus));
    }
    Some(e.with_id(format!("cpu:{}:others", join(&t.cpus))))
}

fn join(cpus: &[u32]) -> String {
    cpus.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn cpu_words(cpus: &[u32]) -> String {
    match cpus.len() {
        1 => format!("CPU {}", cpus[0]),
        _ => format!(
            "CPUs {}",
            cpus.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn words(ctx: &Ctx, t: &Theft, confidence: f64) -> Finding {
    let named: Vec<String> = t
        .strangers
        .iter()
        .take(4)
        .map(|(p, v)| {
            format!(
                "{} (pid {}) {} of a core",
                p.comm,
                p.pid,
                fmt::value(*v, Unit::Percent)
            )
        })
        .collect();
    let workload: Vec<String> = {
        let mut pids: Vec<String> = ctx
            .cpu
            .threads
            .iter()
            .filter_map(|th| th.pid.map(|p| p.to_string()))
            .collect();
        pids.sort();
        pids.dedup();
        pids
    };
    let workload_words = if workload.is_empty() {
        "no process was watched as the workload (netceil watch --pid or -- CMD marks it)"
            .to_string()
    } else {
        format!("the workload is pid {}", workload.join(", "))
    };
    let whose = if t.where_it_ran {
        format!(
            "{}, full, where the workload's other end ran",
            cpu_words(&t.cpus)
        )
    } else if ctx.cpu.restricted {
        format!(
            "{} (all the workload may use: its affinity mask)",
            cpu_words(&t.cpus)
        )
    } else {
        format!("the machine's {} CPUs", t.cpus.len())
    };
    let machine = match (ctx.cpu.restricted || t.where_it_ran, t.machine_idle) {
        (true, Some(i)) if i > 100.0 - t.busy + 5.0 => {
            format!(
                "; the machine as a whole was {} idle, but not where the workload could run",
                fmt::value(i, Unit::Percent)
            )
        }
        _ => String::new(),
    };
    let mut f = finding(
        cause::CPU_CONTENTION,
        format!(
            "Other programs took the CPU the workload needed: {} used {} of {whose} ({} of a core in all), while those cores were {} idle{machine}; none of them is part of the workload ({workload_words}).",
            named.join(", "),
            fmt::value(t.share() * 100.0, Unit::Percent),
            fmt::value(t.taken, Unit::Percent),
            fmt::value(100.0 - t.busy, Unit::Percent),
        ),
        confidence,
    );
    for (p, v) in t.strangers.iter().take(4) {
        let on: Vec<String> = p
            .by_cpu
            .iter()
            .filter(|(c, _)| t.cpus.contains(c))
            .map(|(c, v)| format!("CPU {c} {}", fmt::value(*v, Unit::Percent)))
            .collect();
        f.evidence.push(ctx.ev(
            format!("{}{{pid={}}}", n::PROC_CPU_PCT, p.pid),
            Some((*v, Unit::Percent)),
            format!(
                "{} (pid {}) at {} of a core ({})",
                p.comm,
                p.pid,
                fmt::value(*v, Unit::Percent),
                on.join(", ")
            ),
        ));
    }
    f.evidence.push(ctx.ev(
        format!("{}{{cpu={}}}", n::CPU_BUSY_PCT, join(&t.cpus)),
        Some((t.busy, Unit::Percent)),
        format!(
            "{} {} busy",
            cpu_words(&t.cpus),
            fmt::value(t.busy, Unit::Percent)
        ),
    ));
    let niced: Vec<String> = t
        .strangers
        .iter()
        .filter(|(p, _)| p.nice.is_some_and(|v| v >= crate::resources::YIELDING_NICE))
        .take(4)
        .map(|(p, _)| format!("{} (pid {}, nice {})", p.comm, p.pid, p.nice.unwrap_or(0)))
        .collect();
    if niced.is_empty() {
        f.advice.push(advice(
            "move or throttle the other programs: renice, a cgroup cpu.max, or another machine",
            "the workload gets the CPU back; throughput rises until its own ceiling",
            None,
        ));
    } else {
        // Only when autogroup is on is a niced program a stranger at all (`resources.rs`).
        f.evidence.push(ctx.ev(
            "kernel.sched_autogroup_enabled",
            Some((1.0, Unit::Count)),
            format!(
                "{} niced, yet took the CPU: kernel.sched_autogroup_enabled=1 shares the CPU between sessions first, so nice ranks a program only within its own session",
                niced.join(", ")
            ),
        ));
        f.advice.push(advice(
            "lower the other session's share, not its nice: echo 19 > /proc/PID/autogroup (the whole session), a cgroup cpu.weight or cpu.max, or sysctl kernel.sched_autogroup_enabled=0",
            "the workload gets the CPU back; throughput rises until its own ceiling",
            Some("renice alone changes nothing across sessions while autogroup is on"),
        ));
    }
    f.advice.push(advice(
        "pin the workload and its interrupts to cores the others do not use (taskset, cpusets, IRQ affinity)",
        "the workload's cores stop being shared",
        Some("the other programs then share fewer cores"),
    ));
    f.alternatives.push(
        "the workload CPU-bound on its own: ruled out, much of its cores' busy time went to other processes"
            .into(),
    );
    f
}

/// Steal time from which the hypervisor is taking the CPU the workload needed (% of the CPUs).
const STEAL_MIN_PCT: f64 = 10.0;
/// …while the CPUs' busy time and steal together left at most this idle (%).
const STEAL_IDLE_MAX_PCT: f64 = 25.0;

/// The hypervisor as the thief: a virtual machine's CPUs given to other guests (steal time,
/// `%steal` in vmstat, mpstat and sar). The guest cannot see who took them; the steal share
/// says how much. Confidence: 0.5 + 0.4 × the mean of the steal share (10 % → 0, 40 % → 1) and
/// how little was left idle (25 % → 0, 2 % → 1), × the data factor.
pub fn steal(ctx: &Ctx) -> Option<Entry> {
    if ctx.rows.is_empty() || ctx.offered_met() {
        return None;
    }
    let steal = ctx.total_mean(n::CPU_STEAL_PCT)?;
    let idle = ctx.machine_idle()?;
    if steal < STEAL_MIN_PCT || idle > STEAL_IDLE_MAX_PCT {
        return None;
    }
    let strength = mean_strength(&[
        Some(ramp(steal, STEAL_MIN_PCT, 40.0)),
        Some(ramp(idle, STEAL_IDLE_MAX_PCT, 2.0)),
    ])
    .unwrap_or(0.0);
    let confidence = (0.5 + 0.4 * strength) * ctx.data_factor();
    let cpus = ctx.cpus().unwrap_or(1);
    let busy = (100.0 - idle - steal).max(1.0);
    let mut f = finding(
        cause::CPU_CONTENTION,
        format!(
            "The hypervisor took the CPU the workload needed: {} of the CPUs' time was stolen for other guests (steal) {}, while {} was left idle and this guest used {}.",
            fmt::value(steal, Unit::Percent),
            ctx.window_words(),
            fmt::value(idle, Unit::Percent),
            fmt::value(busy, Unit::Percent)
        ),
        confidence,
    );
    f.evidence.push(ctx.ev(
        n::CPU_STEAL_PCT,
        Some((steal, Unit::Percent)),
        format!("steal {}", fmt::value(steal, Unit::Percent)),
    ));
    f.evidence.push(ctx.ev(
        n::CPU_IDLE_PCT,
        Some((idle, Unit::Percent)),
        format!("idle {}", fmt::value(idle, Unit::Percent)),
    ));
    f.advice.push(advice(
        "a larger instance or dedicated cores (CPU pinning on the host, a dedicated-host or non-burstable instance type)",
        "the stolen share comes back to the guest",
        Some("burstable instances steal once their credits run out"),
    ));
    f.alternatives.push(
        "a process inside the guest: ruled out as the thief, steal is time the guest never got"
            .into(),
    );
    let all: Vec<u32> = (0..cpus).collect();
    let e = Entry::claim(
        Class::Ceiling,
        Resource::Cpu {
            cpus: all.clone(),
            far: false,
        },
        f,
    )
    .with_id("cpu:all:steal")
    .sized(
        pct(100.0 * f64::from(cpus), format!("{cpus} CPU(s)")),
        pct(steal * f64::from(cpus), "stolen by the hypervisor"),
    )
    .relief(Relief::Factor(((busy + steal) / busy).min(RELIEF_MAX)))
    .explains_all(&[
        cause::SATURATION,
        cause::BUFFER_DROPS,
        cause::GENERATOR_LIMITED,
        cause::UNNAMED_CEILING,
    ]);
    Some(
        [
            cause::HOT_CPU,
            cause::CPU_BOUND,
            cause::SENDER_SATURATED,
            cause::RECEIVER_SATURATED,
            cause::THREAD_SATURATED,
        ]
        .iter()
        .fold(e, |e, c| e.explains(Explains::on(c.clone(), &all))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use netceil_model::Series;

    fn proc(s: &mut Series, r: usize, pid: &str, comm: &str, cpu: &str, pct: f64) {
        put(
            s,
            r,
            n::PROC_CPU_PCT,
            &[
                (n::LABEL_PID, pid),
                (n::LABEL_COMM, comm),
                (n::LABEL_CPU, cpu),
            ],
            pct,
        );
    }

    fn workload_thread(s: &mut Series, r: usize, cpu: f64) {
        put(
            s,
            r,
            n::THREAD_CPU_PCT,
            &[
                (n::LABEL_PID, "500"),
                (n::LABEL_TID, "501"),
                (n::LABEL_COMM, "netceil-udp-tx0"),
            ],
            cpu,
        );
    }

    #[test]
    fn two_hogs_beside_the_workload_are_cpu_contention() {
        let run = live_run(10, |s, r| {
            cpu_row(s, r, &[(80.0, 15.0, 3.0), (85.0, 12.0, 1.0)]);
            put(s, r, n::LOAD_RX_PPS, &[], 90e3);
            workload_thread(s, r, 40.0);
            proc(s, r, "500", "netceil", "0", 45.0);
            proc(s, r, "900", "spinner", "0", 55.0);
            proc(s, r, "901", "spinner", "1", 60.0);
        });
        let f = on(&run, check).expect("contention");
        assert_eq!(f.cause, cause::CPU_CONTENTION);
        assert!(
            f.summary.contains("spinner (pid 901) 60 %"),
            "{}",
            f.summary
        );
        assert!(
            f.summary.contains("the workload is pid 500"),
            "{}",
            f.summary
        );
        assert!(!f.summary.contains("netceil (pid 500)"), "{}", f.summary);
        assert!(f.confidence > 0.7, "{}", f.confidence);
    }

    /// A nice-19 build on CPU 0 beside the workload, with autogroup as `autogroup` says.
    fn niced_build(autogroup: Option<bool>) -> netceil_model::Run {
        let mut run = live_run(10, |s, r| {
            cpu_row(s, r, &[(80.0, 15.0, 3.0), (85.0, 12.0, 1.0)]);
            put(s, r, n::LOAD_RX_PPS, &[], 90e3);
            workload_thread(s, r, 40.0);
            put(
                s,
                r,
                n::PROC_CPU_PCT,
                &[
                    (n::LABEL_PID, "900"),
                    (n::LABEL_COMM, "rustc"),
                    (n::LABEL_CPU, "0"),
                    (n::LABEL_NICE, "19"),
                ],
                95.0,
            );
        });
        run.meta.host.sched_autogroup = autogroup;
        run
    }

    #[test]
    fn a_niced_program_in_another_session_does_not_yield_under_autogroup() {
        // Without autogroup (or not knowing), niced background work takes only idle time.
        assert!(on(&niced_build(Some(false)), check).is_none());
        assert!(on(&niced_build(None), check).is_none(), "unknown: yields");
        let f = on(&niced_build(Some(true)), check).expect("contention");
        assert!(f.summary.contains("rustc (pid 900)"), "{}", f.summary);
        assert!(
            f.evidence
                .iter()
                .any(|e| e.text.contains("kernel.sched_autogroup_enabled=1")),
            "{:?}",
            f.evidence
        );
        assert!(f.advice[0].knob.contains("/proc/PID/autogroup"));
    }

    #[test]
    fn the_workload_using_the_cpu_itself_is_not_contention() {
        let run = live_run(10, |s, r| {
            cpu_row(s, r, &[(50.0, 45.0, 3.0), (40.0, 55.0, 1.0)]);
            put(s, r, n::LOAD_RX_PPS, &[], 400e3);
            workload_thread(s, r, 99.0);
            proc(s, r, "500", "netceil", "0", 190.0);
            proc(s, r, "77", "ksoftirqd/0", "0", 30.0);
        });
        assert!(on(&run, check).is_none());
    }

    #[test]
    fn a_busy_neighbour_on_a_machine_with_room_is_not_contention() {
        let run = live_run(10, |s, r| {
            cpu_row(s, r, &[(50.0, 5.0, 1.0), (5.0, 5.0, 1.0)]);
            put(s, r, n::LOAD_RX_PPS, &[], 50e3);
            workload_thread(s, r, 10.0);
            proc(s, r, "900", "builder", "0", 55.0);
        });
        assert!(on(&run, check).is_none());
    }

    #[test]
    fn the_workloads_other_end_and_its_children_are_not_strangers() {
        // A watched iperf3 client, its server (a peer: its socket faces the client's) and a
        // program started by the watched wrapper script (a child): all the workload.
        let run = live_run(10, |s, r| {
            cpu_row(s, r, &[(20.0, 70.0, 8.0), (15.0, 75.0, 9.0)]);
            put(s, r, n::LOAD_RX_PPS, &[], 90e3);
            workload_thread(s, r, 95.0);
            for (pid, comm, cpu, pct, role) in [
                ("900", "iperf3", "1", 90.0, "peer"),
                ("901", "sockperf", "0", 60.0, "child"),
            ] {
                put(
                    s,
                    r,
                    n::PROC_CPU_PCT,
                    &[
                        (n::LABEL_PID, pid),
                        (n::LABEL_COMM, comm),
                        (n::LABEL_CPU, cpu),
                        (n::LABEL_ROLE, role),
                    ],
                    pct,
                );
            }
        });
        assert!(on(&run, check).is_none());
        // The same figures without the roles are contention: the labels decide.
        let run = live_run(10, |s, r| {
            cpu_row(s, r, &[(20.0, 70.0, 8.0), (15.0, 75.0, 9.0)]);
            put(s, r, n::LOAD_RX_PPS, &[], 90e3);
            workload_thread(s, r, 95.0);
            proc(s, r, "900", "iperf3", "1", 90.0);
            proc(s, r, "901", "sockperf", "0", 60.0);
        });
        assert!(on(&run, check).is_some());
    }

    #[test]
    fn a_hypervisor_stealing_a_third_of_the_cpus_is_named_and_explains_them_looking_full() {
        let run = imported_run(10, |s, r| {
            put(s, r, n::CPU_USER_PCT, &[], 50.0 + noise(r, 2.0));
            put(s, r, n::CPU_SYSTEM_PCT, &[], 12.0);
            put(s, r, n::CPU_STEAL_PCT, &[], 33.0 + noise(r + 1, 2.0));
            put(s, r, n::CPU_IDLE_PCT, &[], 3.0);
            put(s, r, n::CS_PER_S, &[], 9000.0 + noise(r, 200.0));
        });
        let e = entry_on(&run, steal).expect("steal");
        assert_eq!(e.cause, cause::CPU_CONTENTION);
        assert!(
            e.finding.summary.contains("hypervisor"),
            "{}",
            e.finding.summary
        );
        let f = crate::analyze(&run);
        assert_eq!(f[0].cause, cause::CPU_CONTENTION, "{}", f[0]);
        // A little steal on a machine with room is nothing.
        let calm = imported_run(10, |s, r| {
            put(s, r, n::CPU_USER_PCT, &[], 20.0);
            put(s, r, n::CPU_STEAL_PCT, &[], 12.0);
            put(s, r, n::CPU_IDLE_PCT, &[], 68.0);
        });
        assert!(entry_on(&calm, steal).is_none());
    }
}
