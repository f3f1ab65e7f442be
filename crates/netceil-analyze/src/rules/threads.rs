//! One thread as the ceiling: an unpaced run's sender or receiver, or someone else's worker.
//!
//! **An unpaced run always hits some ceiling.** Nothing paces the sender, so it sends until
//! something stops it. Which thing is read from the load threads netceil started (their ids
//! are in `RunMeta.own_thread_ids`, so their names, set by netceil, can be trusted for their
//! role):
//! - the sender on a full core that never blocks, with the receiver keeping up (no loss): the
//!   sending thread is the ceiling. On loopback its kernel time includes the receive path:
//!   `netif_rx` queues to the per-CPU backlog and the NET_RX softirq runs when the sender's
//!   system call re-enables bottom halves, on the sender's core, in its context;
//! - the receiver on a full core while packets were lost (or the sender waited for it): the
//!   receiving thread is the ceiling;
//! - loss with no thread saturated is a buffer or the kernel path, and the buffer and CPU
//!   rules speak to it.
//!
//! **A thread that never blocks is not always a polling loop** (`busy_wait::polling_thread`
//! asks [`progress`]): a worker moving data on a full core is the ceiling of whatever it
//! serves (`thread_saturated`); a loop whose I/O stays flat while it spins is polling.
//!
//! Confidence of sender/receiver saturation: 0.55 + 0.35 × the mean of the thread's CPU
//! strength (85 % → 0, 98 % → 1) and how little it blocked (100 voluntary switches/s → 0,
//! 0 → 1); × the data factor.

use netceil_model::{names as n, Finding, Metric, PacingMode, Resource, WorkloadKind};

use crate::cause;
use crate::ctx::{advice, finding, Ctx};
use crate::ledger::{pct, Class, Entry, Explains};
use crate::stats::{mean_strength, ramp};
use netceil_model::{fmt, Unit};

/// A thread this busy (% of one core) is saturated.
pub const SATURATED_PCT: f64 = 85.0;
/// Loss above this share means delivery, not sending, was the limit.
const LOSS_MATTERS: f64 = 0.01;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Sender,
    Receiver,
    Other,
}

/// One thread's figures over the load rows.
#[derive(Debug, Clone)]
pub struct ThreadLoad {
    pub tid: String,
    pub comm: String,
    pub cpu_pct: f64,
    pub system_pct: Option<f64>,
    pub voluntary_cs: Option<f64>,
    pub nonvoluntary_cs: Option<f64>,
    pub last_cpu: Option<f64>,
    pub syscalls_per_s: Option<f64>,
    pub io_bytes_per_s: Option<f64>,
}

fn sibling_mean(ctx: &Ctx, m: &Metric, name: &str) -> Option<f64> {
    ctx.sibling(m, name).and_then(|s| ctx.mean_of(s))
}

/// A thread metric's figures, from its `thread_cpu_pct` series.
pub fn thread_load(ctx: &Ctx, m: &Metric) -> Option<ThreadLoad> {
    Some(ThreadLoad {
        tid: m.id.label(n::LABEL_TID)?.to_string(),
        comm: m.id.label(n::LABEL_COMM).unwrap_or("?").to_string(),
        cpu_pct: ctx.mean_of(m)?,
        system_pct: sibling_mean(ctx, m, n::THREAD_SYSTEM_PCT),
        voluntary_cs: sibling_mean(ctx, m, n::THREAD_VOLUNTARY_CS_PER_S),
        nonvoluntary_cs: sibling_mean(ctx, m, n::THREAD_NONVOLUNTARY_CS_PER_S),
        last_cpu: sibling_mean(ctx, m, n::THREAD_LAST_CPU),
        syscalls_per_s: sibling_mean(ctx, m, n::THREAD_SYSCALLS_PER_S),
        io_bytes_per_s: sibling_mean(ctx, m, n::THREAD_IO_BYTES_PER_S),
    })
}

/// The role of one of netceil's own load threads, from the name netceil gave it.
fn role(comm: &str) -> Role {
    if comm.contains("-tx") {
        Role::Sender
    } else if comm.contains("-rx") || comm.contains("-serve") || comm.contains("-echo") {
        Role::Receiver
    } else {
        Role::Other
    }
}

/// netceil's own load threads with their roles.
fn own_threads(ctx: &Ctx) -> Vec<(Role, ThreadLoad)> {
    let own = &ctx.run.meta.own_thread_ids;
    ctx.series()
        .by_name(n::THREAD_CPU_PCT)
        .filter(|m| {
            m.id.label(n::LABEL_TID)
                .and_then(|t| t.parse::<u32>().ok())
                .is_some_and(|t| own.contains(&t))
        })
        .filter_map(|m| thread_load(ctx, m))
        .map(|t| (role(&t.comm), t))
        .collect()
}

fn hottest(threads: &[(Role, ThreadLoad)], want: Role) -> Option<&ThreadLoad> {
    threads
        .iter()
        .filter(|(r, _)| *r == want)
        .map(|(_, t)| t)
        .max_by(|a, b| a.cpu_pct.total_cmp(&b.cpu_pct))
}

/// A thread on a full core, or one that never waited but was preempted often: it wanted the
/// whole core and got less only because something else ran there. Its CPU % then measures
/// what it was given, not what it needed.
pub fn wanted_the_whole_core(t: &ThreadLoad) -> bool {
    t.cpu_pct >= SATURATED_PCT
        || (t.cpu_pct >= 40.0
            && t.voluntary_cs.is_some_and(|v| v < 50.0)
            && t.nonvoluntary_cs.is_some_and(|v| v >= 100.0))
}

fn preempted_words(t: &ThreadLoad) -> String {
    match t.nonvoluntary_cs {
        Some(p) if t.cpu_pct < SATURATED_PCT => format!(
            "; it never waited but was preempted {}, so it wanted the whole core and got {}",
            fmt::value(p, Unit::PerSecond),
            fmt::value(t.cpu_pct, Unit::Percent)
        ),
        _ => String::new(),
    }
}

/// Whether the run's sender was unpaced (asked for no rate).
fn unpaced(ctx: &Ctx) -> bool {
    let Some(r) = &ctx.run.results else {
        return false;
    };
    // Live runs always record their pacing; a run that does not say is not assumed unpaced.
    r.generator.pacing == Some(PacingMode::None)
}

fn kernel_words(t: &ThreadLoad) -> String {
    t.system_pct
        .map(|s| format!(" ({} in the kernel)", fmt::value(s, Unit::Percent)))
        .unwrap_or_default()
}

/// True for a live netceil run whose sender was unpaced (request/response excluded: its
/// closed loop paces itself).
pub fn unpaced_live_run(ctx: &Ctx) -> bool {
    matches!(ctx.run.source, netceil_model::RunSource::Live)
        && unpaced(ctx)
        && !matches!(
            ctx.run.workload.as_ref().map(|w| w.kind),
            Some(WorkloadKind::Rr) | Some(WorkloadKind::Suite) | None
        )
}

/// Which of an unpaced run's load threads hit the ceiling, and the figures that say so.
struct Pick<'a> {
    which: Role,
    t: &'a ThreadLoad,
    other: Option<&'a ThreadLoad>,
    loss: Option<f64>,
}

/// The packets lost, as a count (what `results.lost_packets` holds), with their share of
/// those sent in words.
fn loss_evidence(ctx: &Ctx) -> Option<netceil_model::Evidence> {
    let r = ctx.run.results.as_ref()?;
    let sent = r.tx_packets.saturating_sub(r.in_flight_packets);
    let share = (sent > 0).then(|| r.lost_packets as f64 / sent as f64)?;
    Some(ctx.ev_total(
        "results.lost_packets",
        Some((r.lost_packets as f64, Unit::Count)),
        format!(
            "{} of the {} packets sent were lost ({})",
            fmt::number(r.lost_packets as f64),
            fmt::number(sent as f64),
            fmt::value(share * 100.0, Unit::Percent)
        ),
    ))
}

/// The mechanism: the receiver on a full core when packets were lost (or it was at least as
/// busy as the sender), else the sender on a full core when little was lost.
fn pick<'a>(ctx: &Ctx, threads: &'a [(Role, ThreadLoad)]) -> Option<Pick<'a>> {
    let r = ctx.run.results.as_ref()?;
    let sender = hottest(threads, Role::Sender);
    let receiver = hottest(threads, Role::Receiver);
    let sent = r.tx_packets.saturating_sub(r.in_flight_packets);
    let loss = (sent > 0).then(|| r.lost_packets as f64 / sent as f64);
    let lossy = loss.is_some_and(|l| l >= LOSS_MATTERS);
    fn hot(t: Option<&ThreadLoad>) -> Option<&ThreadLoad> {
        t.filter(|t| wanted_the_whole_core(t))
    }
    // All cores busy with several senders: that is the CPU, not one thread.
    let cpus = ctx.cpus().unwrap_or(1);
    let senders = threads.iter().filter(|(r, _)| *r == Role::Sender).count();
    if senders as u32 >= cpus && ctx.machine_idle().is_some_and(|i| i < 10.0) {
        return None;
    }
    let (which, t, other) = match (hot(sender), hot(receiver)) {
        (_, Some(rx)) if lossy || sender.is_none_or(|s| rx.cpu_pct >= s.cpu_pct) => {
            (Role::Receiver, rx, sender)
        }
        // Loss with the receiver not saturated is its buffer overflowing: the sender still set
        // the offered rate, and the ledger weighs relieving the one against the other.
        (Some(tx), _) => (Role::Sender, tx, receiver),
        _ => return None,
    };
    Some(Pick {
        which,
        t,
        other,
        loss,
    })
}

/// The core a thread ran on most, and its share of that core's busy time.
fn core_share(ctx: &Ctx, t: &ThreadLoad) -> (Option<u32>, Option<f64>) {
    let cpu = t
        .tid
        .parse::<u32>()
        .ok()
        .and_then(|tid| ctx.cpu.threads.iter().find(|w| w.tid == tid))
        .and_then(|w| w.cpu)
        .or_else(|| t.last_cpu.map(|c| c.round() as u32));
    let share = cpu
        .and_then(|c| ctx.cpu.core(c))
        .map(|core| t.cpu_pct / core.busy.max(1.0));
    (cpu, share)
}

/// A thread's ledger entry: one core's worth at most. It explains its core being hot (and
/// the CPUs being busy) when it is most of that core's busy time.
pub fn thread_entry(ctx: &Ctx, t: &ThreadLoad, pid: Option<&str>, f: Finding) -> Entry {
    let (cpu, share_of_core) = core_share(ctx, t);
    let mut e = Entry::claim(
        Class::Ceiling,
        Resource::Thread {
            pid: pid.and_then(|p| p.parse().ok()),
            tid: t.tid.parse().ok(),
            comm: t.comm.clone(),
            cpu,
        },
        f,
    )
    .sized(
        pct(100.0, "one core"),
        pct(t.cpu_pct, "on a CPU, /proc/PID/task/TID/stat"),
    )
    .scaling();
    // It made its core hot when it was most of the core's time and wanted the whole core by
    // itself; a thread crowded onto a core with others was given its share (the shared-core
    // finding explains it instead).
    if t.cpu_pct >= SATURATED_PCT && share_of_core.is_none_or(|s| s >= MOST_OF_ITS_CORE) {
        let on: Vec<u32> = cpu.into_iter().collect();
        e = e
            .explains(if on.is_empty() {
                Explains::cause(cause::HOT_CPU)
            } else {
                Explains::on(cause::HOT_CPU, &on)
            })
            .explains(Explains::cause(cause::CPU_BOUND));
    }
    e
}

/// From this share of its core's busy time a thread is what made the core hot.
pub const MOST_OF_ITS_CORE: f64 = 0.6;

/// The ceiling of an unpaced live run, when one of its load threads saturated.
pub fn unpaced_run(ctx: &Ctx) -> Option<Entry> {
    if !unpaced_live_run(ctx) {
        return None;
    }
    let threads = own_threads(ctx);
    let p = pick(ctx, &threads)?;
    let f = unpaced_words(ctx, &p);
    let mut e = thread_entry(ctx, p.t, None, f);
    e = e.explains(Explains::cause(cause::SATURATION));
    if p.which == Role::Receiver {
        e = e
            .explains(Explains::cause(cause::BUFFER_DROPS))
            .explains(Explains::cause(cause::TCP_RECEIVE_WINDOW));
    }
    Some(e)
}

fn unpaced_words(ctx: &Ctx, p: &Pick) -> Finding {
    let r = ctx.run.results.as_ref();
    let kind = ctx.run.workload.as_ref().map(|w| w.kind);
    let t = p.t;
    let blocked = t.voluntary_cs.unwrap_or(0.0);
    let strength = mean_strength(&[
        Some(ramp(t.cpu_pct, SATURATED_PCT, 98.0).max(
            // Preempted rather than waiting: as strong as a full core once it is frequent.
            t.nonvoluntary_cs.map_or(0.0, |p| ramp(p, 100.0, 1000.0)),
        )),
        Some(ramp(blocked, 100.0, 0.0)),
    ])
    .unwrap_or(0.0);
    let confidence = (0.55 + 0.35 * strength) * ctx.data_factor();
    let rate = match r {
        Some(r) if r.tx_pps > 0.0 => {
            format!("{} sent", fmt::value(r.tx_pps, Unit::PacketsPerSecond))
        }
        Some(r) => format!(
            "{} sent",
            fmt::value(
                r.tx_bits_per_s.max(r.rx_app_bits_per_s),
                Unit::BitsPerSecond
            )
        ),
        None => String::new(),
    };
    let other_words = p
        .other
        .map(|o| {
            format!(
                "; the {} ({}) had room at {} of a core",
                if p.which == Role::Sender {
                    "receiver"
                } else {
                    "sender"
                },
                o.comm,
                fmt::value(o.cpu_pct, Unit::Percent)
            )
        })
        .unwrap_or_default();
    let loopback = ctx.loopback_only();
    let (core, _) = core_share(ctx, t);
    let softirq_on_core = core.and_then(|c| ctx.cpu.core(c)).and_then(|c| c.softirq);
    let loopback_words = match (p.which, loopback, softirq_on_core) {
        (Role::Sender, true, Some(si)) if si >= 5.0 => format!(
            " On loopback the receive path runs in the sender's context: CPU {} spent {} in softirq, so part of the sender's kernel time is the receive side's work.",
            core.unwrap_or(0),
            fmt::value(si, Unit::Percent)
        ),
        _ => String::new(),
    };
    let (cause_name, head) = match p.which {
        Role::Sender => (
            cause::SENDER_SATURATED,
            "One sender thread was the ceiling of this unpaced run",
        ),
        _ => (
            cause::RECEIVER_SATURATED,
            "The receiving thread was the ceiling of this unpaced run",
        ),
    };
    let mut f = finding(
        cause_name,
        format!(
            "{head}: {} ran at {} of a core{} and blocked {}{}, for {rate}{}{other_words}.{loopback_words}",
            t.comm,
            fmt::value(t.cpu_pct, Unit::Percent),
            kernel_words(t),
            fmt::value(blocked, Unit::PerSecond),
            preempted_words(t),
            loss_words(p.which, p.loss),
        ),
        confidence,
    );
    f.evidence.push(ctx.ev(
        format!("{}{{tid={}}}", n::THREAD_CPU_PCT, t.tid),
        Some((t.cpu_pct, Unit::Percent)),
        format!(
            "{} at {} of a core",
            t.comm,
            fmt::value(t.cpu_pct, Unit::Percent)
        ),
    ));
    f.evidence.push(ctx.ev(
        format!("{}{{tid={}}}", n::THREAD_VOLUNTARY_CS_PER_S, t.tid),
        Some((blocked, Unit::PerSecond)),
        format!(
            "{} voluntary context switches/s: it never waited",
            fmt::number(blocked)
        ),
    ));
    if p.loss.is_some() {
        f.evidence.extend(loss_evidence(ctx));
    }
    unpaced_advice(p.which, kind, loopback, &mut f);
    f.alternatives.push(format!(
        "the kernel path or a buffer: {}",
        if p.loss.is_some_and(|l| l >= LOSS_MATTERS) {
            "loss happened, but the receiving thread itself was saturated"
        } else {
            "nothing was dropped, so no buffer overflowed"
        }
    ));
    f
}

fn loss_words(which: Role, loss: Option<f64>) -> String {
    match (which, loss) {
        (Role::Receiver, Some(l)) if l > 0.0 => format!(
            ", and {} of the packets were lost before it read them",
            fmt::value(l * 100.0, Unit::Percent)
        ),
        (Role::Sender, Some(l)) if l <= 0.0 => ", with nothing lost".into(),
        (Role::Sender, Some(l)) if l < LOSS_MATTERS => format!(
            ", with {} of the packets lost (too few to be the ceiling)",
            fmt::value(l * 100.0, Unit::Percent)
        ),
        (Role::Sender, Some(l)) => format!(
            ", with {} of the packets lost at the receiving side's buffers (a loss on top of this ceiling: the receiver was not saturated)",
            fmt::value(l * 100.0, Unit::Percent)
        ),
        _ => String::new(),
    }
}

fn unpaced_advice(which: Role, kind: Option<WorkloadKind>, loopback: bool, f: &mut Finding) {
    match which {
        Role::Sender => {
            let knob = if kind == Some(WorkloadKind::Tcp) {
                "--flows 2 (or more), one sender thread each with --threads"
            } else {
                "--threads 2 --flows 2"
            };
            f.advice.push(advice(
                knob,
                "more sending threads in parallel: the offered load rises until the receiver, a buffer or the CPUs bind",
                Some(if loopback {
                    "on loopback each sender also carries its receive path, and this machine's cores are shared by both sides"
                } else {
                    "one core per sender thread"
                }),
            ));
            f.advice.push(advice(
                "--size larger, or --gso (and --gro at the receiver)",
                "fewer system calls and packets per byte: more bytes per second from the same core",
                Some("the packet rate falls"),
            ));
        }
        _ => {
            f.advice.push(advice(
                "--flows N with receivers spread over cores (SO_REUSEPORT groups, RPS on the receiving interface)",
                "receive work split over several cores",
                Some("netceil's own receiver reads all flows on one thread"),
            ));
        }
    }
}

/// What a busy thread got done: `Some(true)` when its own I/O counters moved (or it is clearly
/// moving the machine's packets in the kernel), `Some(false)` when they were measured and flat,
/// `None` when they were not measured. The text says which figures decided.
pub fn progress(t: &ThreadLoad) -> (Option<bool>, String) {
    let io = t.io_bytes_per_s;
    let calls = t.syscalls_per_s;
    if io.is_some_and(|b| b >= 1e6) || calls.is_some_and(|c| c >= 1000.0) {
        return (
            Some(true),
            format!(
                "its read/write calls moved {}/s in {}/s calls",
                fmt::value(io.unwrap_or(0.0), Unit::Bytes),
                fmt::number(calls.unwrap_or(0.0))
            ),
        );
    }
    // sendmsg/recvmsg-family calls are not in /proc/PID/io: a thread spending much of its
    // time in the kernel may be moving packets through them, or spinning on EAGAIN. Unknown.
    let kernel_share = t.system_pct.map(|s| s / t.cpu_pct.max(1.0));
    if kernel_share.is_some_and(|k| k >= 0.3) {
        return (
            None,
            format!(
                "its read/write calls were flat, but {} of its time was in the kernel, where sendmsg/recvmsg-family calls (not counted) may have done work",
                fmt::value(kernel_share.unwrap_or(0.0) * 100.0, Unit::Percent)
            ),
        );
    }
    match (io, calls) {
        (Some(b), Some(c)) => (
            Some(false),
            format!(
                "its read/write calls stayed flat ({}/s, {}/s calls)",
                fmt::value(b, Unit::Bytes),
                fmt::number(c)
            ),
        ),
        _ => (
            None,
            "its own I/O was not measured (/proc/PID/task/TID/io unreadable or not sampled)".into(),
        ),
    }
}

/// Share of a thread's CPU in the kernel from which, with the machine moving packets, its
/// uncounted sendmsg/recvmsg-family calls are taken to be the work.
const KERNEL_WORKER_SHARE: f64 = 0.6;
/// Packets per second the machine must have moved for that.
const KERNEL_WORKER_PPS: f64 = 20e3;

/// [`progress`], and when the thread's own counters cannot tell: a thread mostly in the kernel
/// while the machine moved packets is taken to be moving them with the sendmsg/recvmsg family
/// (sendto, recvfrom, sendmmsg…), which /proc/PID/io does not count. A poller spins in user
/// space, or in the kernel with nothing to move.
pub fn progress_in(ctx: &Ctx, t: &ThreadLoad) -> (Option<bool>, String) {
    let (p, how) = progress(t);
    if p.is_some() {
        return (p, how);
    }
    let kernel_share = t.system_pct.map_or(0.0, |s| s / t.cpu_pct.max(1.0));
    if kernel_share >= KERNEL_WORKER_SHARE {
        if let Some((pps, from)) = ctx.packet_rate().filter(|(p, _)| *p >= KERNEL_WORKER_PPS) {
            return (
                Some(true),
                format!(
                    "its read/write calls were flat, but it spent {} of its time in the kernel while {from} carried {}/s packets: sendmsg/recvmsg-family calls, which /proc does not count, moved them",
                    fmt::value(kernel_share * 100.0, Unit::Percent),
                    fmt::number(pps)
                ),
            );
        }
    }
    (p, how)
}

/// An imported run's sending or receiving program on a full core, from the whole-run CPU the
/// tool that wrote the log counted for each side (iperf3's `cpu_utilization_percent`, per data
/// thread). Same mechanism as [`unpaced_run`]: the receiver on a full core while packets were
/// lost could not read them as fast as they came; the sender on a full core is the ceiling
/// only when it fell short of its rate, or was unpaced and the receiver lost nothing. Without
/// per-interval figures this cannot say the core stayed full throughout, so the confidence
/// stays below a live run's.
pub fn imported_tool(ctx: &Ctx) -> Option<Entry> {
    if !matches!(ctx.run.source, netceil_model::RunSource::Imported { .. }) {
        return None;
    }
    let r = ctx.run.results.as_ref()?;
    let sent = r.tx_packets.saturating_sub(r.in_flight_packets);
    let loss = (sent > 0).then(|| r.lost_packets as f64 / sent as f64);
    let lossy = loss.is_some_and(|l| l >= LOSS_MATTERS);
    let rx = r.receiver_cpu_pct.filter(|p| *p >= SATURATED_PCT);
    let tx = Some(r.generator.cpu_pct).filter(|p| *p >= SATURATED_PCT);
    let short_of_rate = r.generator.achieved_ratio.is_some_and(|a| a < 0.95);
    let unpaced = r.requested_pps.is_none() && r.generator.achieved_ratio.is_none();
    let (which, cpu, other) = match (rx, tx) {
        (Some(c), _) if lossy => (Role::Receiver, c, Some(r.generator.cpu_pct)),
        (_, Some(c)) if short_of_rate || (unpaced && !lossy) => {
            (Role::Sender, c, r.receiver_cpu_pct)
        }
        _ => return None,
    };
    let tool = match &ctx.run.source {
        netceil_model::RunSource::Imported { format, .. } => format.clone(),
        _ => String::new(),
    };
    let side = if which == Role::Receiver {
        "receiving"
    } else {
        "sending"
    };
    let other_words = other
        .filter(|o| *o > 0.0)
        .map(|o| {
            format!(
                "; the {} side had room at {} of a core",
                if which == Role::Receiver {
                    "sending"
                } else {
                    "receiving"
                },
                fmt::value(o, Unit::Percent)
            )
        })
        .unwrap_or_default();
    let (cause_name, what) = if which == Role::Receiver {
        (
            cause::RECEIVER_SATURATED,
            "could not read as fast as the data came",
        )
    } else {
        (cause::SENDER_SATURATED, "could not send faster")
    };
    let confidence = (0.5 + 0.3 * ramp(cpu, SATURATED_PCT, 98.0)) * ctx.data_factor();
    let mut f = finding(
        cause_name,
        format!(
            "The {side} {tool} {what}: it ran at {} of a core per data thread over the whole test, by {tool}'s own count{}{other_words}.",
            fmt::value(cpu, Unit::Percent),
            loss_words(which, loss),
        ),
        confidence,
    );
    let metric = if which == Role::Receiver {
        "results.receiver_cpu_pct"
    } else {
        "results.generator.cpu_pct"
    };
    f.evidence.push(ctx.ev_total(
        metric,
        Some((cpu, Unit::Percent)),
        format!(
            "the {side} {tool} at {} of a core per data thread",
            fmt::value(cpu, Unit::Percent)
        ),
    ));
    if loss.is_some() {
        f.evidence.extend(loss_evidence(ctx));
    }
    f.advice.push(advice(
        format!("more {side} threads: {tool} -P 2 or more (iperf3 3.16 and later run a thread per stream), or several {tool} processes on other cores"),
        "the work spreads over more cores until the link, a buffer or the CPUs bind",
        Some("mpstat -P ALL beside the test shows whether that core was full of softirq (then spread the receive queues with RSS/RPS) or of the program's own work"),
    ));
    f.alternatives.push(
        "the per-interval CPU is not in the log: a core full for part of the test and idle for the rest reads the same".into(),
    );
    let mut e = Entry::claim(
        Class::Ceiling,
        Resource::Thread {
            pid: None,
            tid: None,
            comm: format!("{tool} ({side})"),
            cpu: None,
        },
        f,
    )
    .sized(
        pct(100.0, "one core"),
        pct(cpu, format!("{tool}'s own CPU count, per data thread")),
    )
    .scaling()
    .explains(Explains::cause(cause::SATURATION));
    if which == Role::Receiver {
        e = e.explains(Explains::cause(cause::BUFFER_DROPS));
    } else {
        e = e.explains(Explains::cause(cause::GENERATOR_LIMITED));
    }
    Some(e)
}

/// A thread outside netceil's own load threads at a full core that made progress: the busy
/// worker is the ceiling of what it serves. It may block now and then (a `select` between
/// writes); what counts is that it was on the CPU nearly all the time and moved data.
pub fn busy_worker(ctx: &Ctx) -> Option<Entry> {
    if !ctx.net_possible() || ctx.offered_met() {
        return None;
    }
    let own = &ctx.run.meta.own_thread_ids;
    let mut best: Option<(ThreadLoad, String, String)> = None;
    for m in ctx.series().by_name(n::THREAD_CPU_PCT) {
        let tid = m.id.label(n::LABEL_TID).and_then(|t| t.parse::<u32>().ok());
        if tid.is_some_and(|t| own.contains(&t)) {
            continue;
        }
        let Some(t) = thread_load(ctx, m).filter(wanted_the_whole_core) else {
            continue;
        };
        let (progressed, how) = progress_in(ctx, &t);
        if progressed != Some(true) {
            continue;
        }
        if best.as_ref().is_none_or(|(b, _, _)| t.cpu_pct > b.cpu_pct) {
            let pid = m.id.label(n::LABEL_PID).unwrap_or("?").to_string();
            best = Some((t, pid, how));
        }
    }
    let (t, pid, how) = best?;
    let f = saturated_worker(ctx, &t, &pid, &how);
    Some(thread_entry(ctx, &t, Some(&pid), f).explains(Explains::cause(cause::SATURATION)))
}

fn saturated_worker(ctx: &Ctx, t: &ThreadLoad, pid: &str, how: &str) -> Finding {
    let confidence = (0.5 + 0.3 * ramp(t.cpu_pct, 90.0, 99.0)) * ctx.data_factor();
    let mut f = finding(
        cause::THREAD_SATURATED,
        format!(
            "A busy worker, not a polling loop, was the ceiling: thread {} ({}) of process {pid} ran at {} of a core{}, blocked {}/s, and {how}.",
            t.comm,
            t.tid,
            fmt::value(t.cpu_pct, Unit::Percent),
            kernel_words(t),
            fmt::number(t.voluntary_cs.unwrap_or(0.0))
        ),
        confidence,
    );
    f.evidence.push(ctx.ev(
        format!("{}{{tid={}}}", n::THREAD_CPU_PCT, t.tid),
        Some((t.cpu_pct, Unit::Percent)),
        format!(
            "{} at {} of a core",
            t.comm,
            fmt::value(t.cpu_pct, Unit::Percent)
        ),
    ));
    if let Some(c) = t.syscalls_per_s {
        f.evidence.push(ctx.ev(
            format!("{}{{tid={}}}", n::THREAD_SYSCALLS_PER_S, t.tid),
            Some((c, Unit::PerSecond)),
            format!("{}/s read/write-family calls", fmt::number(c)),
        ));
    }
    f.advice.push(advice(
        "more worker threads or processes (the program's own option: iperf3 -P, sockperf --threads-num…)",
        "the work spreads over cores",
        Some("only if the program can split its work"),
    ));
    f.alternatives
        .push("a polling loop: ruled out, the thread made progress while it spun".into());
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use netceil_model::{GeneratorStats, Results, Series, Workload};

    fn thread(s: &mut Series, r: usize, tid: &str, comm: &str, cpu: f64, sys: f64, vol: f64) {
        let l = [
            (n::LABEL_PID, "500"),
            (n::LABEL_TID, tid),
            (n::LABEL_COMM, comm),
        ];
        put(s, r, n::THREAD_CPU_PCT, &l, cpu + noise(r, 0.5));
        put(s, r, n::THREAD_SYSTEM_PCT, &l, sys);
        put(s, r, n::THREAD_VOLUNTARY_CS_PER_S, &l, vol);
        put(s, r, n::THREAD_LAST_CPU, &l, 0.0);
    }

    /// An unpaced UDP run on loopback: sender and receiver CPU, voluntary switches, loss.
    fn unpaced_udp(tx: (f64, f64), rx: (f64, f64), lost: u64, softirq0: f64) -> netceil_model::Run {
        let mut run = live_run(8, |s, r| {
            cpu_row(s, r, &[(1.0, 99.0 - softirq0, softirq0), (2.0, 40.0, 0.0)]);
            put(s, r, n::LOAD_RX_PPS, &[], 378e3);
            put(s, r, n::LOAD_RX_BITS_PER_S, &[], 378e3 * 18.0 * 8.0);
            thread(s, r, "201", "netceil-udp-tx0", tx.0, tx.0, tx.1);
            thread(s, r, "202", "netceil-udp-rx", rx.0, rx.0 - 2.0, rx.1);
        });
        run.meta.own_thread_ids = vec![201, 202];
        run.workload = Some(Workload::typed(
            WorkloadKind::Udp,
            &serde_json::json!({ "target": null }),
        ));
        run.results = Some(Results {
            duration_s: 8.0,
            tx_packets: 3_024_000,
            tx_pps: 378e3,
            rx_app_packets: 3_024_000 - lost,
            lost_packets: lost,
            generator: GeneratorStats {
                pacing: Some(PacingMode::None),
                ..Default::default()
            },
            ..Default::default()
        });
        run
    }

    #[test]
    fn a_reader_starved_on_busy_cores_is_told_apart_from_one_with_room() {
        let run_with = |cpus: &[(f64, f64, f64)], rx: f64| {
            let mut run = live_run(8, |s, r| {
                cpu_row(s, r, cpus);
                put(s, r, n::LOAD_RX_PPS, &[], 170e3);
                thread(s, r, "201", "netceil-udp-tx0", 80.0, 79.0, 0.0);
                thread(s, r, "203", "netceil-udp-tx1", 80.0, 79.0, 0.0);
                thread(s, r, "202", "netceil-udp-rx", rx, rx - 2.0, 40_000.0);
            });
            run.meta.own_thread_ids = vec![201, 202, 203];
            run
        };
        let busy = [(5.0, 80.0, 15.0), (6.0, 84.0, 10.0)];
        let opts = crate::Options::default();
        let r = run_with(&busy, 46.0);
        let starved = |r: &netceil_model::Run| {
            let ctx = Ctx::new(r, &opts);
            ctx.cpu
                .starved_on(&[0, 1], Some(crate::resources::Role::Receiver))
                .first()
                .map(|t| t.cpu_pct)
        };
        let share = starved(&r).expect("starved");
        assert!((share - 46.0).abs() < 1.0, "{share}");
        // The same reader on cores with room was not starved.
        let r = run_with(&[(5.0, 40.0, 5.0), (6.0, 44.0, 5.0)], 46.0);
        assert_eq!(starved(&r), None);
        // A reader with its full core is no starved reader either.
        let r = run_with(&busy, 98.0);
        assert_eq!(starved(&r), None);
    }

    #[test]
    fn a_full_sender_with_a_receiver_keeping_up_is_sender_saturated() {
        let run = unpaced_udp((99.7, 0.0), (45.0, 4800.0), 0, 40.0);
        let f = on(&run, unpaced_run).expect("sender saturated");
        assert_eq!(f.cause, cause::SENDER_SATURATED);
        assert!(
            f.summary
                .contains("netceil-udp-tx0 ran at 99.6 % of a core (99.7 % in the kernel)"),
            "{}",
            f.summary
        );
        assert!(
            f.summary
                .contains("receive path runs in the sender's context"),
            "{}",
            f.summary
        );
        assert!(f.advice[0].knob.contains("--threads"));
        assert!(f.confidence > 0.8, "{}", f.confidence);
    }

    #[test]
    fn a_full_receiver_losing_packets_is_receiver_saturated() {
        let run = unpaced_udp((70.0, 3000.0), (98.0, 5.0), 300_000, 10.0);
        let f = on(&run, unpaced_run).expect("receiver saturated");
        assert_eq!(f.cause, cause::RECEIVER_SATURATED);
        assert!(
            f.summary.contains("lost before it read them"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn a_full_sender_beside_a_large_loss_is_still_named_for_the_ledger_to_weigh() {
        // A fifth of the packets lost, the receiver not saturated: the sender still set the
        // offered rate; whether relieving it or the buffer gains more is the ledger's call.
        let run = unpaced_udp((99.0, 0.0), (50.0, 4000.0), 600_000, 40.0);
        let f = on(&run, unpaced_run).expect("sender");
        assert_eq!(f.cause, cause::SENDER_SATURATED);
        assert!(
            f.summary
                .contains("19.8 % of the packets lost at the receiving side's buffers"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn a_little_loss_beside_a_full_sender_leaves_the_sender_the_ceiling() {
        // 1.3 % lost in bursts at the receive buffer while the receiver had room.
        let run = unpaced_udp((99.0, 0.0), (40.0, 60_000.0), 39_000, 40.0);
        let f = on(&run, unpaced_run).expect("sender saturated");
        assert_eq!(f.cause, cause::SENDER_SATURATED);
        assert!(
            f.summary
                .contains("1.29 % of the packets lost at the receiving side's buffers"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn a_paced_run_is_not_this_rules() {
        let mut run = unpaced_udp((99.7, 0.0), (45.0, 4800.0), 0, 40.0);
        run.results.as_mut().unwrap().generator.pacing = Some(PacingMode::Sleep);
        assert!(on(&run, unpaced_run).is_none());
    }

    #[test]
    fn threads_not_started_by_this_run_are_not_its_sender() {
        let mut run = unpaced_udp((99.7, 0.0), (45.0, 4800.0), 0, 40.0);
        run.meta.own_thread_ids = vec![999];
        assert!(on(&run, unpaced_run).is_none());
    }

    #[test]
    fn an_unpaced_run_where_nothing_saturated_is_not_called_ceiling_free() {
        let run = unpaced_udp((60.0, 20_000.0), (50.0, 4000.0), 0, 10.0);
        let findings = crate::analyze(&run);
        assert_ne!(findings[0].cause, cause::NO_CEILING, "{findings:?}");
        let mut paced = run.clone();
        let r = paced.results.as_mut().unwrap();
        r.generator.pacing = Some(PacingMode::Sleep);
        r.generator.achieved_ratio = Some(1.0);
        r.requested_pps = Some(378e3);
        assert_eq!(crate::analyze(&paced)[0].cause, cause::NO_CEILING);
    }

    #[test]
    fn a_sender_preempted_but_never_waiting_wanted_the_whole_core() {
        let mut run = unpaced_udp((55.0, 2.0), (45.0, 4800.0), 0, 20.0);
        let l = [
            (n::LABEL_PID, "500"),
            (n::LABEL_TID, "201"),
            (n::LABEL_COMM, "netceil-udp-tx0"),
        ];
        for r in 0..8 {
            put(
                &mut run.series,
                r,
                n::THREAD_NONVOLUNTARY_CS_PER_S,
                &l,
                2500.0,
            );
        }
        let f = on(&run, unpaced_run).expect("sender saturated");
        assert_eq!(f.cause, cause::SENDER_SATURATED);
        assert!(f.summary.contains("preempted 2.50 k/s"), "{}", f.summary);
    }

    #[test]
    fn a_sender_that_waits_is_not_saturated() {
        // Blocked 20 k/s (a full socket buffer or TCP window): something downstream held it.
        let run = unpaced_udp((60.0, 20_000.0), (50.0, 4000.0), 0, 10.0);
        assert!(on(&run, unpaced_run).is_none());
    }

    #[test]
    fn an_imported_receiver_on_a_full_core_while_packets_were_lost_is_the_ceiling() {
        let with = |rx: f64, lost: u64| {
            let mut run = crate::testutil::imported_run(10, |_, _| {});
            run.results = Some(netceil_model::Results {
                duration_s: 10.0,
                tx_packets: 4_450_000,
                tx_pps: 445e3,
                lost_packets: lost,
                receiver_cpu_pct: Some(rx),
                generator: netceil_model::GeneratorStats {
                    cpu_pct: 71.0,
                    achieved_ratio: Some(0.997),
                    ..Default::default()
                },
                ..Default::default()
            });
            run
        };
        let f = crate::testutil::on(&with(99.6, 1_700_000), imported_tool).expect("a finding");
        assert_eq!(f.cause, cause::RECEIVER_SATURATED, "{}", f.summary);
        assert!(f.summary.contains("99.6 %"), "{}", f.summary);
        // A receiver with room is not the ceiling, whatever was lost; nor is a full receiver
        // that lost nothing.
        assert!(crate::testutil::on(&with(60.0, 1_700_000), imported_tool).is_none());
        assert!(crate::testutil::on(&with(99.6, 0), imported_tool).is_none());
        // A live run's receivers are sampled per thread: this rule leaves them alone.
        let mut live = with(99.6, 1_700_000);
        live.source = netceil_model::RunSource::Live;
        assert!(crate::testutil::on(&live, imported_tool).is_none());
    }
}
