//! `netceil search udp`: per frame size, the highest packet rate whose loss stays within each
//! tolerance (NDR at 0 %, PDRs above). The search itself is the engine's
//! ([`netceil_engine::plan::search`]); here are its flags, its resume and its table.

use netceil_engine::plan::{search as plan, Reach};
use netceil_engine::{new_live_run, Replay};
use netceil_model::params::SearchParams;
use netceil_model::{Run, Workload as WorkloadSpec, WorkloadKind};

use crate::cli::{CommonRunArgs, MetricsArgs, SearchArgs, SearchWorkload};
use crate::engine::{self, Progress};
use crate::Outcome;
use netceil_model::{fmt, Unit};

pub fn run(args: SearchArgs) -> Outcome {
    let SearchWorkload::Udp(a) = &args.workload;
    let common = &args.common;
    let target = common.to.map(|t| t.to_string());
    let store = engine::open_store(common.no_store);
    // --resume: the stored run's settings and its trials, replayed before any new traffic.
    let (settings, replay) = match &a.resume {
        Some(spec) => {
            let old = netceil_engine::resumable(store.as_ref(), spec, target.clone(), common.ipv6)?;
            (plan::from_run(&old)?, Replay::of(old))
        }
        None => (
            engine::search_params(a, target, common.ipv6)?,
            Replay::default(),
        ),
    };
    search(settings, replay, common, &args.metrics, store.as_ref())
}

/// Searches as `settings` say, replaying what `replay` holds first.
pub fn search(
    mut settings: SearchParams,
    replay: Replay,
    common: &CommonRunArgs,
    metrics: &MetricsArgs,
    store: Option<&netceil_store::Store>,
) -> Outcome {
    // The address family is the settings': a resumed run's, as it was stored.
    let reach = Reach {
        to: common.to,
        ipv6: settings.ipv6,
    };
    settings.resumed_from = replay.from.clone();
    plan::check(&settings, reach)?;
    let (mut top, _) = new_live_run(&common.labels);
    top.workload = Some(WorkloadSpec {
        kind: WorkloadKind::Search,
        params: netceil_model::params::Params::Search(settings.clone()),
    });
    let progress = Progress::Steps {
        what: "search",
        at_most: plan::steps_at_most(&settings),
    };
    let mut cmd = engine::start(common, metrics, store, top, replay, progress)?;
    plan::run(
        &mut cmd.campaign,
        &settings,
        reach,
        &crate::exit::interrupted,
    )?;
    cmd.done(true, knee_table)
}

/// The knee table: per frame size and tolerance, the rate, its throughput in both units,
/// the loss seen there, and what stopped it.
pub(crate) fn knee_table(run: &Run) -> String {
    let mut s = String::new();
    s.push_str(
        "frame B  loss ≤     rate          Gbit/s   Gibit/s  loss seen    trials  verified\n",
    );
    for k in &run.knees {
        let rate = k
            .rate_pps
            .map_or_else(|| "none".into(), |v| fmt::value(v, Unit::PacketsPerSecond));
        let gbit = k
            .bits_per_s
            .map_or_else(|| "-".into(), |b| format!("{:.3}", b / 1e9));
        let gibit = k
            .bits_per_s
            .map_or_else(|| "-".into(), |b| format!("{:.3}", b / (1u64 << 30) as f64));
        let seen = k
            .loss_ratio
            .map_or_else(|| "-".into(), |l| format!("{:.4} %", l * 100.0));
        s.push_str(&format!(
            "{:>7}  {:>6}  {:>13}{}  {:>8}  {:>8}  {:>9}  {:>6}  {}\n",
            k.size_bytes,
            format!("{} %", k.loss_tolerance * 100.0),
            rate,
            if k.generator_limited { "≥" } else { " " },
            gbit,
            gibit,
            seen,
            k.trials,
            if k.verified { "yes" } else { "no" }
        ));
        if let Some(n) = &k.note {
            s.push_str(&format!("         note: {n}\n"));
        }
        if let Some(b) = &k.stopped_by {
            s.push_str(&format!("         above it: {b}\n"));
        }
    }
    s.push_str("Gbit/s = 10^9 bit/s, Gibit/s = 2^30 bit/s, of Ethernet frames (RFC 2544 frame size × 8 × rate); ≥: the generator could not offer more, a lower bound\n");
    s
}
