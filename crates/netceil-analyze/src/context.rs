//! The resources sized only to rule them in or out: every core the workload may use, its busy
//! threads, the far end's cores, the flows' TCP limits. They are never findings; they give the
//! ranking its headroom (a core at 50 % lets the rate double before it binds) and the verdict
//! its "ruled out" figures when no claim binds.

use netceil_model::{names as n, Evidence, Quantity, Resource, Unit};

use crate::cause;
use crate::ctx::Ctx;
use crate::ledger::{pct, Entry};
use crate::rules::tcp_flows;
use netceil_model::fmt;

/// Threads below this share of a core are not worth sizing.
const THREAD_MIN_PCT: f64 = 5.0;

/// The context entries of a run, leaving out any resource a claim already sized.
pub fn entries(ctx: &Ctx, claims: &[Entry]) -> Vec<Entry> {
    let mut out = Vec::new();
    cores(ctx, &mut out);
    threads(ctx, &mut out);
    far_cores(ctx, &mut out);
    tcp_limits(ctx, &mut out);
    out.retain(|e| !claims.iter().any(|c| c.id == e.id));
    out
}

fn with_evidence(mut e: Entry, ev: Evidence) -> Entry {
    e.finding.evidence.push(ev);
    e
}

fn cores(ctx: &Ctx, out: &mut Vec<Entry>) {
    let acc = &ctx.cpu;
    if acc.cores.is_empty() {
        if let Some((busy, metric)) = ctx.machine_busy_for_work() {
            let r = Resource::Cpu {
                cpus: Vec::new(),
                far: false,
            };
            let text = format!(
                "the CPUs {} busy on average",
                fmt::value(busy, Unit::Percent)
            );
            let cpus = f64::from(ctx.cpus().unwrap_or(1));
            let e = Entry::context(r, cause::CPU_BOUND, text.clone())
                .sized(pct(100.0 * cpus, "all CPUs"), pct(busy * cpus, "busy"));
            out.push(with_evidence(
                e,
                ctx.ev(metric, Some((busy, Unit::Percent)), text),
            ));
        }
        return;
    }
    for c in &acc.cores {
        let r = Resource::Cpu {
            cpus: vec![c.cpu],
            far: false,
        };
        let text = c.busy_words();
        let e = Entry::context(r, cause::HOT_CPU, text.clone())
            .sized(pct(100.0, format!("CPU {}", c.cpu)), pct(c.busy, "busy"));
        out.push(with_evidence(
            e,
            ctx.ev(
                format!("{}{{cpu={}}}", n::CPU_BUSY_PCT, c.cpu),
                Some((c.busy, Unit::Percent)),
                text,
            ),
        ));
    }
}

fn threads(ctx: &Ctx, out: &mut Vec<Entry>) {
    for t in ctx
        .cpu
        .threads
        .iter()
        .filter(|t| t.cpu_pct >= THREAD_MIN_PCT)
    {
        let r = Resource::Thread {
            pid: t.pid,
            tid: Some(t.tid),
            comm: t.comm.clone(),
            cpu: t.cpu,
        };
        let starved = ctx
            .cpu
            .starved(t)
            .map(|busy| format!(", on a core {} busy", fmt::value(busy, Unit::Percent)));
        let text = format!(
            "thread {} ({}) at {} of a core{}",
            t.comm,
            t.tid,
            fmt::value(t.cpu_pct, Unit::Percent),
            starved.unwrap_or_default()
        );
        let e = Entry::context(r, cause::THREAD_SATURATED, text.clone())
            .sized(pct(100.0, "one core"), pct(t.cpu_pct, "on a CPU"));
        out.push(with_evidence(
            e,
            ctx.ev(
                format!("{}{{tid={}}}", n::THREAD_CPU_PCT, t.tid),
                Some((t.cpu_pct, Unit::Percent)),
                text,
            ),
        ));
    }
}

fn far_cores(ctx: &Ctx, out: &mut Vec<Entry>) {
    let Some(far) = ctx.run.results.as_ref().and_then(|r| r.far.as_deref()) else {
        return;
    };
    for c in &far.cpu {
        let r = Resource::Cpu {
            cpus: vec![c.cpu],
            far: true,
        };
        let text = format!(
            "far end CPU {} {} busy",
            c.cpu,
            fmt::value(c.busy_pct, Unit::Percent)
        );
        let e = Entry::context(r, cause::RECEIVER_SATURATED, text.clone()).sized(
            pct(100.0, format!("far end CPU {}", c.cpu)),
            pct(c.busy_pct, "busy"),
        );
        out.push(with_evidence(
            e,
            ctx.ev_total(
                format!("far.cpu_busy_pct{{cpu={}}}", c.cpu),
                Some((c.busy_pct, Unit::Percent)),
                text,
            ),
        ));
    }
}

/// The flows' limited shares, when sock_diag read them: sized against busy time. They do not
/// grow with the rate, so they give no headroom; they say what was ruled out.
fn tcp_limits(ctx: &Ctx, out: &mut Vec<Entry>) {
    for (name, limit, cause) in [
        (
            tcp_flows::TCP_RWND_LIMITED_PCT,
            "receive window",
            cause::TCP_RECEIVE_WINDOW,
        ),
        (
            tcp_flows::TCP_SNDBUF_LIMITED_PCT,
            "send buffer",
            cause::TCP_SEND_BUFFER,
        ),
    ] {
        let Some(v) = ctx
            .series()
            .metrics
            .iter()
            .find(|m| m.id.name == name && m.id.label(n::LABEL_FLOW).is_none())
            .and_then(|m| ctx.mean_of(m))
        else {
            continue;
        };
        let r = Resource::TcpFlow {
            limit: limit.into(),
        };
        let text = format!(
            "TCP flows held by the {limit} {} of their busy time",
            fmt::value(v, Unit::Percent)
        );
        let mut e = Entry::context(r, cause, text.clone()).sized(
            Quantity::new(100.0, Unit::Percent, "of busy time"),
            Quantity::new(v, Unit::Percent, format!("held by the {limit}")),
        );
        e.scales = false;
        out.push(with_evidence(
            e,
            ctx.ev(name, Some((v, Unit::Percent)), text),
        ));
    }
}
