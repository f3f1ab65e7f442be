//! `netceil search udp|tcp|rr`: the highest rate within each bound (UDP: per frame size, the
//! packet rate within each loss tolerance, NDR at 0 %, PDRs above; TCP: the goodput within
//! each retransmit budget; request/response: the transaction rate whose p99 stays under each
//! bound). The search itself is the engine's ([`netceil_engine::plan::search`]); here are its
//! flags, its resume and its table.

use netceil_engine::plan::{search as plan, Reach};
use netceil_engine::{new_live_run, Replay};
use netceil_model::params::SearchParams;
use netceil_model::{Workload as WorkloadSpec, WorkloadKind};

use crate::cli::{CommonRunArgs, MetricsArgs, SearchArgs, SearchWorkload};
use crate::engine::{self, Progress};
use crate::Outcome;

pub fn run(args: SearchArgs) -> Outcome {
    let common = &args.common;
    let target = common.to.map(|t| t.to_string());
    let resume = match &args.workload {
        SearchWorkload::Udp(a) => {
            if a.sizes.is_some() && !common.quiet {
                eprintln!("netceil: note: {SIZES_RENAMED}");
            }
            &a.resume
        }
        SearchWorkload::Tcp(a) => &a.trials.resume,
        SearchWorkload::Rr(a) => &a.trials.resume,
    };
    let store = engine::open_store(common.no_store);
    // --resume: the stored run's settings and its trials, replayed before any new traffic.
    let (settings, replay) = match resume {
        Some(spec) => {
            let old = netceil_engine::resumable(store.as_ref(), spec, target.clone(), common.ipv6)?;
            let settings = plan::from_run(&old)?;
            let asked = workload_name(&args.workload);
            if settings.kind.name() != asked {
                return Err(crate::exit::Failure::usage(anyhow::anyhow!(
                    "--resume {}: it is a `search {}`, not a `search {asked}`; go on with `{}`",
                    old.run_id,
                    settings.kind.name(),
                    plan::resume_command(&old.run_id, &settings)
                )));
            }
            (settings, Replay::of(old))
        }
        None => (
            engine::goal_search_params(&args.workload, target, common.ipv6)?,
            Replay::default(),
        ),
    };
    search(settings, replay, common, &args.metrics, store.as_ref())
}

/// The subcommand's word: `udp`, `tcp`, `rr`.
fn workload_name(w: &SearchWorkload) -> &'static str {
    match w {
        SearchWorkload::Udp(_) => "udp",
        SearchWorkload::Tcp(_) => "tcp",
        SearchWorkload::Rr(_) => "rr",
    }
}

/// What `search --sizes` now says: the flag kept its meaning under a name that says it.
pub const SIZES_RENAMED: &str = "search's --sizes is now --frame-sizes (Ethernet frames, as before); in sweep, --sizes is UDP payload";

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
    let found = plan::run(
        &mut cmd.campaign,
        &settings,
        reach,
        &crate::exit::interrupted,
    )?;
    cmd.done_stored(true, |run, stored| {
        let mut s = netceil_report::tables::search(run);
        if found.interrupted {
            s.push_str(&interrupted(&settings, stored));
        }
        s
    })
}

/// After a stop: that the table is what was found so far, and the exact command that goes on.
fn interrupted(settings: &SearchParams, stored: Option<&str>) -> String {
    let how = match stored {
        Some(id) => format!(
            "the run is stored as interrupted; go on with: {}",
            plan::resume_command(id, settings)
        ),
        None => "it was not stored (--no-store), so it cannot be resumed".into(),
    };
    format!(
        "{}: the table holds what was found so far; {how}\n",
        crate::exit::interrupted()
    )
}
