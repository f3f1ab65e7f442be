//! CPU contention: processes outside the workload took the CPU the network work needed.
//!
//! Mechanism: the scheduler shares each core between everything runnable on it. When other
//! programs keep the cores busy, the workload's threads and the softirq work they trigger wait
//! their turn (or run in shorter slices), and the throughput falls with the share they get. The
//! machine looks CPU-bound, but the fix is not faster networking: it is moving, pinning or
//! throttling the other programs.
//!
//! What tells it apart from the workload being CPU-bound on its own: the process scan
//! (`proc_cpu_pct`, the busiest processes every 2 s) names who used the CPU. Processes whose
//! pid is one the run watched (netceil's own for `run`, the watched command and `--pid`s for
//! `watch`: the `pid` labels of the thread metrics) are the workload, and so are those the
//! process scan labelled `role=watched|child|peer`: descendants of a watched process (the
//! program a wrapper script started) and peers, whose socket faces one of the workload's (the
//! iperf3 server beside a watched `iperf3 -c`: it does the run's other half, so its CPU is the
//! workload's cost, not contention). Everything else is a stranger. Kernel threads working for the network (ksoftirqd, kworkers) are not strangers,
//! and neither are processes niced to 10 or more: the scheduler gives them at most a tenth of
//! a default task's share when both want the CPU, so they took time nobody else wanted.
//!
//! Fires when the machine was at most 25 % idle and strangers used at least 25 % of the whole
//! machine's CPU. Confidence: 0.55 + 0.35 × the mean of the strangers' share (25 % to 0, 60 %
//! to 1) and how busy the machine was (75 % to 0, 98 % to 1), times the data factor. A paced
//! run that got its rate had CPU enough: no finding.

use std::collections::{BTreeMap, BTreeSet};

use netceil_model::{names as n, Finding};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::fmt;
use crate::stats::{mean_strength, ramp};

/// Share of the whole machine's CPU the strangers must have used.
const STRANGER_SHARE_MIN: f64 = 0.25;
/// The machine must have been at most this idle (%).
const IDLE_MAX: f64 = 25.0;

/// Kernel threads that do the network's work on someone's behalf: not strangers.
fn works_for_the_network(comm: &str) -> bool {
    ["ksoftirqd", "kworker", "napi/", "irq/"]
        .iter()
        .any(|p| comm.starts_with(p))
}

/// One process's mean CPU over the rows the process scan covered.
struct Proc {
    pid: String,
    comm: String,
    cpu_pct: f64,
    last_cpu: Option<String>,
    /// Labelled by the process scan as watched, a child of a watched process, or a peer.
    in_workload: bool,
    /// Niced to 10 or more: it gets at most a tenth of a default task's share when they
    /// compete (CFS weight 110 against 1024), so what it used was mostly idle time.
    yields: bool,
}

/// From this nice value up, a process takes mostly idle time.
const YIELDING_NICE: i64 = 10;

pub fn check(ctx: &Ctx) -> Option<Finding> {
    if ctx.rows.is_empty() || ctx.offered_met() {
        return None;
    }
    let s = ctx.series();
    let workload: BTreeSet<&str> = s
        .by_name(n::THREAD_CPU_PCT)
        .filter_map(|m| m.id.label(n::LABEL_PID))
        .collect();
    // One entry per pid: a process seen on several CPUs has one series per CPU label.
    let mut procs: BTreeMap<String, Proc> = BTreeMap::new();
    for m in s.by_name(n::PROC_CPU_PCT) {
        let Some(pid) = m.id.label(n::LABEL_PID) else {
            continue;
        };
        // Scans come every 2 s: rows between them are missing, not idle; a process absent
        // from a scan was below the recording threshold, so the mean is over its scans.
        let Some(v) = ctx.mean_of(m) else { continue };
        let e = procs.entry(pid.to_string()).or_insert(Proc {
            pid: pid.to_string(),
            comm: m.id.label(n::LABEL_COMM).unwrap_or("?").to_string(),
            cpu_pct: 0.0,
            last_cpu: None,
            in_workload: false,
            yields: m
                .id
                .label(n::LABEL_NICE)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v >= YIELDING_NICE),
        });
        if v > e.cpu_pct {
            e.last_cpu = m.id.label(n::LABEL_CPU).map(str::to_string);
        }
        // A peer is found once its connection exists: any scan that says so counts.
        e.in_workload |= m.id.label(n::LABEL_ROLE).is_some();
        e.cpu_pct = e.cpu_pct.max(v);
    }
    if procs.is_empty() {
        return None;
    }
    let cpus = f64::from(ctx.cpus()?.max(1));
    let idle = ctx.machine_idle()?;
    if idle > IDLE_MAX {
        return None;
    }
    let mut strangers: Vec<&Proc> = procs
        .values()
        .filter(|p| {
            !workload.contains(p.pid.as_str())
                && !p.in_workload
                && !works_for_the_network(&p.comm)
                && !p.yields
        })
        .collect();
    strangers.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct));
    let taken: f64 = strangers.iter().map(|p| p.cpu_pct).sum();
    let share = taken / (100.0 * cpus);
    if share < STRANGER_SHARE_MIN {
        return None;
    }
    let strength = mean_strength(&[
        Some(ramp(share, STRANGER_SHARE_MIN, 0.6)),
        Some(ramp(100.0 - idle, 75.0, 98.0)),
    ])
    .unwrap_or(0.0);
    let confidence = (0.55 + 0.35 * strength) * ctx.data_factor();
    let named: Vec<String> = strangers
        .iter()
        .take(4)
        .map(|p| {
            let on = p
                .last_cpu
                .as_ref()
                .map(|c| format!(", last on CPU {c}"))
                .unwrap_or_default();
            format!("{} (pid {}) {}{on}", p.comm, p.pid, fmt::pct(p.cpu_pct))
        })
        .collect();
    let workload_words = if workload.is_empty() {
        "no process was watched as the workload (netceil watch --pid or -- CMD marks it)"
            .to_string()
    } else {
        format!(
            "the workload is pid {}",
            workload.iter().copied().collect::<Vec<_>>().join(", ")
        )
    };
    let mut f = finding(
        cause::CPU_CONTENTION,
        format!(
            "Other programs took the CPU the network work needed: {} used {} of the machine's {} CPUs ({} of a core in all), while the machine was {} idle; none of them is part of the workload ({workload_words}).",
            named.join(", "),
            fmt::pct(share * 100.0),
            cpus,
            fmt::pct(taken),
            fmt::pct(idle)
        ),
        confidence,
    );
    for p in strangers.iter().take(4) {
        f.evidence.push(ctx.ev(
            format!("{}{{pid={}}}", n::PROC_CPU_PCT, p.pid),
            Some(p.cpu_pct),
            format!(
                "{} (pid {}) at {} of a core",
                p.comm,
                p.pid,
                fmt::pct(p.cpu_pct)
            ),
        ));
    }
    f.evidence.push(ctx.ev(
        n::CPU_IDLE_PCT,
        Some(idle),
        format!("machine {} idle", fmt::pct(idle)),
    ));
    f.advice.push(advice(
        "move or throttle the other programs: renice, a cgroup cpu.max, or another machine",
        "the workload gets the CPU back; throughput rises until its own ceiling",
        None,
    ));
    f.advice.push(advice(
        "pin the workload and its interrupts to cores the others do not use (taskset, cpusets, IRQ affinity)",
        "the workload's cores stop being shared",
        Some("the other programs then share fewer cores"),
    ));
    f.alternatives.push(
        "the workload CPU-bound on its own: ruled out, most of the busy CPU went to other processes"
            .into(),
    );
    Some(f)
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

    #[test]
    fn niced_background_work_takes_only_idle_time_and_is_not_contention() {
        let run = live_run(10, |s, r| {
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
        assert!(on(&run, check).is_none());
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
}
