//! One module per cause. Each rule looks at one run through [`Ctx`] and returns a finding only
//! when its evidence is there: rules are conservative, and none speaks about network ceilings
//! on a machine that carried no network load.
//!
//! Confidence, everywhere: a rule turns each piece of evidence into a 0–1 strength with
//! [`ramp`](crate::stats::ramp) (0 at the threshold where the cause becomes plausible, 1 where
//! it is unmistakable), averages the strengths it could compute, maps that onto a band that
//! starts at the rule's floor (how much firing at all already says), and multiplies by the
//! data factors of [`Ctx`] (how many load rows there were, whether the traffic was measured or
//! assumed). Each rule's header says which strengths it uses.

use crate::ctx::Ctx;
use crate::ledger::Entry;

pub mod bufferbloat;
pub mod buffers;
pub mod busy_wait;
pub mod contention;
pub mod cpu;
pub mod disk;
pub mod far_end;
pub mod generator;
pub mod interrupts;
pub mod kernel_probes;
pub mod knee;
pub mod latency;
pub mod link;
pub mod locks;
pub mod saturation;
pub mod schedulers;
pub mod shaper;
pub mod snapshot;
pub mod tcp_flows;
pub mod tcp_path;
pub mod threads;

/// Every single-run rule, in no particular order: the ledger ranks what they find.
pub fn single_run(ctx: &Ctx) -> Vec<Entry> {
    let rules: [fn(&Ctx) -> Option<Entry>; 32] = [
        saturation::check,
        shaper::check,
        snapshot::squeeze,
        snapshot::drops,
        snapshot::skew,
        snapshot::listen,
        cpu::hot_cpu,
        cpu::cpu_bound,
        cpu::quota,
        contention::check,
        contention::steal,
        interrupts::check,
        interrupts::system,
        latency::check,
        locks::check,
        busy_wait::effective_utilization,
        busy_wait::polling_thread,
        buffers::check,
        tcp_path::check,
        threads::unpaced_run,
        threads::imported_tool,
        threads::busy_worker,
        link::check,
        generator::limited,
        generator::own_busy_wait,
        kernel_probes::softirq_core,
        kernel_probes::napi_budget,
        far_end::check,
        disk::io_wait,
        tcp_flows::check,
        schedulers::check,
        bufferbloat::check,
    ];
    rules.iter().filter_map(|rule| rule(ctx)).collect()
}
