//! What the verdict lists as not checked: a cause the run could not observe is listed, so
//! that its absence from the findings is never read as "ruled out" (see [`not_checked`]).
//! (The order of the findings is the ledger's: `ledger.rs`.)

use netceil_model::{names as n, RunSource};

use crate::ctx::{Ctx, NetActivity};

fn has_metric(ctx: &Ctx, pred: impl Fn(&str) -> bool) -> bool {
    ctx.series().metrics.iter().any(|m| pred(&m.id.name))
}

/// The causes this run could not observe, one short line each, most important first. Empty
/// when there was no network load to diagnose (nothing was claimed, so nothing is left open).
pub fn not_checked(ctx: &Ctx) -> Vec<String> {
    let run = ctx.run;
    if matches!(ctx.net, NetActivity::Absent(_)) || (ctx.rows.is_empty() && run.results.is_none()) {
        return Vec::new();
    }
    let mut out = Vec::new();
    if run.locks.is_empty() {
        out.push(
            "kernel lock contention: no lock probe ran and no lock profile was read, so a \
             contended lock cannot be ruled out"
                .to_string(),
        );
    }
    if let Some(far) = far_end(ctx) {
        out.push(far);
    }
    let watched_or_imported = !matches!(run.source, RunSource::Live);
    if watched_or_imported && !has_metric(ctx, |m| m == n::THREAD_CPU_PCT) {
        out.push(
            "which processes and threads took the CPU: no per-thread figures (netceil watch \
             --pid PID records them)"
                .to_string(),
        );
    }
    if !ctx.series().is_empty() && !has_metric(ctx, |m| m.starts_with("qdisc_")) {
        out.push(
            "queueing disciplines (shapers, policers): no qdisc statistics in this run".to_string(),
        );
    }
    if ctx.series().total(n::INTR_PER_S).is_some()
        && !has_metric(ctx, |m| {
            m.starts_with("device_intr") || m == n::NIC_IRQ_PER_S
        })
    {
        out.push(
            "interrupt sources: only the total interrupt rate was recorded, so device \
             interrupts cannot be told from timer ticks and IPIs"
                .to_string(),
        );
    }
    if matches!(ctx.net, NetActivity::Unknown) {
        out.push(
            "network counters: the log has none, so network load was assumed, not measured"
                .to_string(),
        );
    }
    out.extend(devices_without_statistics(ctx));
    out
}

/// The far end of `--to`: its kernel counters, unless it reported them.
fn far_end(ctx: &Ctx) -> Option<String> {
    let run = ctx.run;
    if !matches!(run.source, RunSource::Live) {
        return None;
    }
    let target = run.workload.as_ref()?.target()?;
    let r = run.results.as_ref()?;
    if r.far.is_some() {
        // A `netceil serve` reported its counters, CPU per core and series: checked.
        return None;
    }
    let reported = r.kernel.iface.is_some() || r.kernel.iface_rx_packets.is_some();
    Some(if reported {
        format!(
            "the far end's CPU ({target}): its interface, backlog and UDP drop counters came \
             back in its report, but its CPU was not sampled, so a hot core there cannot be \
             ruled out"
        )
    } else {
        format!(
            "the far end ({target}): its interface, softnet and UDP drop counters were not \
             reported, so a drop or a hot core there cannot be ruled out"
        )
    })
}

/// Interfaces whose statistics the sampler could not read, by name (at most three).
fn devices_without_statistics(ctx: &Ctx) -> Option<String> {
    let series = ctx.series();
    let mut ifaces: Vec<(String, String)> = Vec::new();
    for m in &series.missing {
        let Some(iface) = label_in(&m.metric, n::LABEL_IFACE) else {
            continue;
        };
        if !ifaces.iter().any(|(i, _)| *i == iface) {
            ifaces.push((iface, m.reason.clone()));
        }
    }
    if ifaces.is_empty() {
        return None;
    }
    let shown: Vec<String> = ifaces
        .iter()
        .take(3)
        .map(|(i, why)| format!("{i} ({why})"))
        .collect();
    let more = ifaces.len().saturating_sub(3);
    Some(format!(
        "device statistics: some counters of {}{} could not be read",
        shown.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    ))
}

/// The value of `key` in a metric id written as `name{k=v,…}`.
fn label_in(metric: &str, key: &str) -> Option<String> {
    let inner = metric.split_once('{')?.1.strip_suffix('}')?;
    inner.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then(|| v.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(s: &mut netceil_model::Series, r: usize) {
        crate::testutil::cpu_row(s, r, &[(5.0, 5.0, 5.0), (5.0, 5.0, 5.0)]);
        crate::testutil::put(s, r, n::LOAD_RX_PPS, &[], 20e3);
        crate::testutil::put(s, r, n::INTR_PER_S, &[], 3e3);
    }

    #[test]
    fn a_run_lists_what_it_could_not_observe() {
        let run = crate::testutil::live_run(10, loaded);
        let opts = crate::Options::default();
        let ctx = Ctx::new(&run, &opts);
        let list = not_checked(&ctx);
        assert!(list.iter().any(|l| l.starts_with("kernel lock contention")));
        assert!(list.iter().any(|l| l.starts_with("queueing disciplines")));
        assert!(list.iter().any(|l| l.starts_with("interrupt sources")));
        // A live run in-process has no far end.
        assert!(!list.iter().any(|l| l.starts_with("the far end")));
    }

    #[test]
    fn what_was_observed_is_not_listed() {
        let mut run = crate::testutil::live_run(10, |s, r| {
            loaded(s, r);
            crate::testutil::put(s, r, "qdisc_drops_per_s", &[("iface", "lo")], 0.0);
        });
        run.locks.push(netceil_model::LockStat {
            name: "rtentry".into(),
            ..Default::default()
        });
        let opts = crate::Options::default();
        let ctx = Ctx::new(&run, &opts);
        let list = not_checked(&ctx);
        assert!(!list.iter().any(|l| l.starts_with("kernel lock contention")));
        assert!(!list.iter().any(|l| l.starts_with("queueing disciplines")));
    }

    #[test]
    fn the_far_end_of_to_is_listed_until_it_reports() {
        let mut run = crate::testutil::live_run(10, loaded);
        run.workload = Some(netceil_model::Workload::typed(
            netceil_model::WorkloadKind::Udp,
            &serde_json::json!({ "target": "198.18.0.2:9000" }),
        ));
        run.results = Some(netceil_model::Results {
            duration_s: 10.0,
            tx_packets: 1000,
            ..Default::default()
        });
        let opts = crate::Options::default();
        let ctx = Ctx::new(&run, &opts);
        assert!(not_checked(&ctx)
            .iter()
            .any(|l| l.starts_with("the far end (198.18.0.2:9000)")));
        // Once it reports its counters, only its CPU stays open.
        if let Some(r) = run.results.as_mut() {
            r.kernel.iface = Some("veth1".into());
            r.kernel.iface_rx_packets = Some(1000);
        }
        let ctx = Ctx::new(&run, &opts);
        let list = not_checked(&ctx);
        assert!(
            !list.iter().any(|l| l.starts_with("the far end (")),
            "{list:?}"
        );
        assert!(
            list.iter()
                .any(|l| l.starts_with("the far end's CPU (198.18.0.2:9000)")),
            "{list:?}"
        );
    }

    #[test]
    fn an_idle_machine_has_nothing_left_open() {
        let run = crate::testutil::live_run(10, crate::testutil::idle_row);
        let opts = crate::Options::default();
        let ctx = Ctx::new(&run, &opts);
        assert!(not_checked(&ctx).is_empty(), "{:?}", not_checked(&ctx));
    }

    #[test]
    fn labels_are_read_from_metric_ids() {
        assert_eq!(
            label_in("iface_rx_missed_per_s{iface=eth0}", "iface").as_deref(),
            Some("eth0")
        );
        assert_eq!(
            label_in("irq_per_s{irq=38,iface=eth1,queue=0}", "iface").as_deref(),
            Some("eth1")
        );
        assert_eq!(label_in("cs_per_s", "iface"), None);
    }
}
