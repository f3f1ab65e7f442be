//! A campaign: a planner's trials in one session, kept as the parts of one run. What every
//! command that measures shares is here, written once: replaying the trials of an interrupted
//! run (`--resume` after Ctrl-C or kill -9), storing each part the moment it ends, the stop
//! flag, cutting the parts out of the one timeline, analyzing them, and finishing the run.
//!
//! The planners themselves (the default suite, the loss search, the sweeps, the lab's knob
//! steps) decide which trial comes next; they hand each one to [`Campaign::trial`].

use netceil_model::{Results, Run, Workload};
use netceil_store::Store;

use crate::run::part_of;
use crate::session::{Session, SessionConfig};
use crate::trial::Trial;
use crate::Error;

/// A part as the campaign keeps it until the run ends.
enum Kept {
    /// Measured now: cut out of the run's timeline at the end, from `from` to `to` seconds.
    Window {
        workload: Box<Workload>,
        results: Box<Results>,
        from: f64,
        to: f64,
        /// Ran its whole length (not cut short by a stop).
        complete: bool,
    },
    /// Complete as it is: replayed from the store, or made whole by the planner.
    Whole(Box<Run>),
}

/// How a finished campaign's parts are analyzed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartAnalysis {
    /// Each part gets its own findings (a search's trials, a suite's parts).
    Each,
    /// Parts are kept as they are (a sweep's cycles, whose verdict is the grid's).
    None,
}

/// What an interrupted run left to replay.
#[derive(Debug, Default)]
pub struct Replay {
    /// The stored run resumed.
    pub from: Option<String>,
    parts: Vec<Run>,
    /// How many of its parts were used.
    pub used: usize,
}

impl Replay {
    /// The measured parts of `old`, to be replayed instead of measured again; a part cut
    /// short by a stop is measured again.
    pub fn of(old: Run) -> Replay {
        Replay {
            from: Some(old.run_id.clone()),
            parts: old
                .parts
                .into_iter()
                .filter(|p| p.results.is_some() && p.meta.complete)
                .collect(),
            used: 0,
        }
    }

    /// Takes the first stored part whose workload has every parameter of `asked`, equal.
    fn take(&mut self, asked: &Workload) -> Option<Run> {
        let i = self.parts.iter().position(|p| {
            p.workload.as_ref().is_some_and(|w| {
                w.kind == asked.kind && has_all(&w.params.to_map(), &asked.params.to_map())
            })
        })?;
        self.used += 1;
        Some(self.parts.remove(i))
    }
}

/// Whether `stored` holds every key of `asked` with an equal value (numbers within a part in
/// 10^9, as a store round trip may leave them).
fn has_all(
    stored: &serde_json::Map<String, serde_json::Value>,
    asked: &serde_json::Map<String, serde_json::Value>,
) -> bool {
    asked.iter().all(|(k, a)| match (stored.get(k), a) {
        (Some(serde_json::Value::Number(s)), serde_json::Value::Number(a)) => {
            match (s.as_f64(), a.as_f64()) {
                (Some(s), Some(a)) => (s - a).abs() <= 1e-9 * a.abs().max(1.0),
                _ => false,
            }
        }
        (Some(s), a) => s == a,
        (None, serde_json::Value::Null) => true,
        (None, _) => false,
    })
}

/// A planner's trials, in one session, as the parts of one run.
pub struct Campaign<'s> {
    pub session: Session<'s>,
    /// The run being made; its parts are filled in at [`Campaign::end`].
    pub top: Run,
    kept: Vec<Kept>,
    replay: Replay,
}

/// A trial's outcome in a campaign.
pub struct Measured {
    pub results: Results,
    /// Whether it came from the store rather than from traffic.
    pub replayed: bool,
}

impl<'s> Campaign<'s> {
    /// Starts the session that records `top` (stored as it goes in `store`).
    pub fn start(
        cfg: &SessionConfig,
        store: Option<&'s Store>,
        top: Run,
        replay: Replay,
    ) -> Result<Campaign<'s>, Error> {
        let session = Session::start(cfg, store, &top)?;
        Ok(Campaign {
            session,
            top,
            kept: Vec::new(),
            replay,
        })
    }

    /// Whether the campaign was asked to stop (Ctrl-C, SIGTERM).
    pub fn stopping(&self) -> bool {
        self.session.stopping()
    }

    /// How many parts it holds so far.
    pub fn parts(&self) -> usize {
        self.kept.len()
    }

    /// How many trials came from the run resumed.
    pub fn replayed(&self) -> usize {
        self.replay.used
    }

    /// The run resumed, if any.
    pub fn resumed_from(&self) -> Option<&str> {
        self.replay.from.as_deref()
    }

    /// Runs `trial` (or replays a stored part whose workload has every parameter of
    /// `asked`), keeps it as the next part, recorded with the workload `recorded` makes of
    /// its results, and stores that part at once so that a kill loses none of the parts
    /// before it. The part's series is cut from the timeline at the end.
    pub fn trial(
        &mut self,
        trial: &Trial,
        asked: &Workload,
        recorded: impl FnOnce(&Results) -> Workload,
    ) -> Result<Measured, Error> {
        if let Some(p) = self.replay.take(asked) {
            let results = p.results.clone().unwrap_or_default();
            self.kept.push(Kept::Whole(Box::new(p)));
            return Ok(Measured {
                results,
                replayed: true,
            });
        }
        let from = self.session.rec.elapsed_s();
        let results = self.session.measure(trial)?;
        let to = self.session.rec.elapsed_s();
        // A stop during the trial cut it short: kept as measured, never replayed as whole.
        let complete = !self.stopping();
        let workload = recorded(&results);
        // Stored at once, without its series: the run's end writes the parts again with them.
        let mut part = Run::new(
            format!("{}.{}", self.top.run_id, self.kept.len() + 1),
            netceil_model::RunSource::Live,
        );
        part.workload = Some(workload.clone());
        part.results = Some(results.clone());
        part.meta.complete = complete;
        self.session.rec.add_part(self.kept.len(), &part);
        self.kept.push(Kept::Window {
            workload: Box::new(workload),
            results: Box::new(results.clone()),
            from,
            to,
            complete,
        });
        Ok(Measured {
            results,
            replayed: false,
        })
    }

    /// A stored part of the run resumed whose workload has every parameter of `asked`,
    /// kept as the next part as it is; `None` when there is none, to be measured.
    pub fn replayed_part(&mut self, asked: &Workload) -> Option<Results> {
        let p = self.replay.take(asked)?;
        let r = p.results.clone();
        self.kept.push(Kept::Whole(Box::new(p)));
        r
    }

    /// Keeps a part the planner made whole (a sweep's cycle) and stores it at once.
    pub fn keep(&mut self, mut part: Run) {
        part.run_id = format!("{}.{}", self.top.run_id, self.kept.len() + 1);
        part.meta.complete = true;
        self.session.rec.add_part(self.kept.len(), &part);
        self.kept.push(Kept::Whole(Box::new(part)));
    }

    /// Measures `trial` without keeping a part (the planner keeps what it needs).
    pub fn measure(&mut self, trial: &Trial) -> Result<(Results, f64, f64), Error> {
        let from = self.session.rec.elapsed_s();
        let r = self.session.measure(trial)?;
        Ok((r, from, self.session.rec.elapsed_s()))
    }

    /// Stops the recording and moves it into the run, then makes the parts: each measured
    /// part gets its window of the timeline, each part its id in order, and with
    /// [`PartAnalysis::Each`] its own findings. The planner then adds its knees and notes,
    /// and calls [`Campaign::finish`].
    pub fn end(&mut self, analysis: PartAnalysis) {
        // The load engine's threads by OS thread id, so the analyzer leaves exactly these out
        // of the system's threads. The sampler's own thread is not among them: its cost is
        // meta.sampler_cpu_*, and it sleeps between samples, so it never looks like a poller.
        self.top.meta.own_thread_ids = netceil_load::threads::spawned_thread_ids();
        for o in self.session.rec.observers() {
            o.close();
            self.top.notes.extend(o.note());
        }
        let leftover = self.session.rec.stop(&mut self.top);
        self.session.rec.store_rows(&leftover);
        for kept in std::mem::take(&mut self.kept) {
            let mut part = match kept {
                Kept::Window {
                    workload,
                    results,
                    from,
                    to,
                    complete,
                } => {
                    let mut p = part_of(&self.top, *workload, *results, from, to);
                    p.meta.complete = complete;
                    p
                }
                Kept::Whole(p) => *p,
            };
            part.run_id = format!("{}.{}", self.top.run_id, self.top.parts.len() + 1);
            if analysis == PartAnalysis::Each {
                netceil_analyze::analyze_into(&mut part);
            }
            self.top.parts.push(part);
        }
    }

    /// Writes the finished run and marks it complete in the store, unless it was stopped
    /// before its end (then it stays incomplete, and `--resume` can take it up). Returns the
    /// run and where it was stored.
    pub fn finish(self) -> (Run, Option<String>) {
        let complete = !self.stopping();
        let stored = self.session.rec.finish_as(&self.top, complete);
        (self.top, stored)
    }
}

/// The stored run `--resume` names, checked: unfinished, and run against the same target over
/// the same address family (`ipv6`).
pub fn resumable(
    store: Option<&Store>,
    spec: &str,
    target: Option<String>,
    ipv6: bool,
) -> Result<Run, Error> {
    use anyhow::anyhow;
    let Some(st) = store else {
        return Err(Error::usage(anyhow!(
            "--resume needs the store (not --no-store, and a readable $NETCEIL_DB)"
        )));
    };
    let id = st.resolve(spec).map_err(Error::usage)?;
    let old = st.get_run(&id).map_err(Error::runtime)?;
    if old.meta.complete {
        return Err(Error::usage(anyhow!(
            "--resume {id}: that run finished; nothing to resume"
        )));
    }
    let stored_target = old
        .workload
        .as_ref()
        .and_then(|w| w.target())
        .map(str::to_string);
    if stored_target != target {
        return Err(Error::usage(anyhow!(
            "--resume {id}: it ran against {}; give the same --to",
            stored_target.as_deref().unwrap_or("loopback")
        )));
    }
    check_family(&id, &old, ipv6)?;
    Ok(old)
}

/// A resumed run goes on over the address family it ran over: the stored one, which `--ipv6`
/// must match.
fn check_family(id: &str, old: &Run, ipv6: bool) -> Result<(), Error> {
    use anyhow::anyhow;
    let stored = old.workload.as_ref().and_then(|w| w.params.ipv6());
    match stored {
        Some(true) if !ipv6 => Err(Error::usage(anyhow!(
            "--resume {id}: it ran over IPv6; give --ipv6 as it did"
        ))),
        Some(false) if ipv6 => Err(Error::usage(anyhow!(
            "--resume {id}: it ran over IPv4; leave out --ipv6"
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_model::WorkloadKind;
    use serde_json::json;

    fn w(v: serde_json::Value) -> Workload {
        Workload::typed(WorkloadKind::Udp, &v)
    }

    fn stored(id: &str, v: serde_json::Value) -> Run {
        let mut p = Run::new(id, netceil_model::RunSource::Live);
        p.workload = Some(w(v));
        p.results = Some(Results::default());
        p.meta.complete = true;
        p
    }

    fn searched(ipv6: Option<bool>) -> Run {
        let mut v = json!({
            "workload": "udp", "sizes": [64], "loss": [0.0], "trial_s": 1.0,
            "initial_trial_s": 0.25, "precision": 0.05, "min_pps": 1000.0, "max_pps": null,
            "max_trials": 20, "target": null, "point": "app"
        });
        if let Some(b) = ipv6 {
            v["ipv6"] = json!(b);
        }
        let mut r = Run::new("s", netceil_model::RunSource::Live);
        r.workload = Some(Workload::typed(WorkloadKind::Search, &v));
        r
    }

    #[test]
    fn a_resumed_run_keeps_the_address_family_it_ran_over() {
        let v4 = searched(Some(false));
        let v6 = searched(Some(true));
        assert!(check_family("s", &v4, false).is_ok());
        assert!(check_family("s", &v6, true).is_ok());
        let e = check_family("s", &v4, true).unwrap_err();
        assert!(e.is_usage());
        assert!(e.to_string().contains("ran over IPv4"), "{e}");
        let e = check_family("s", &v6, false).unwrap_err();
        assert!(e.to_string().contains("give --ipv6"), "{e}");
        // Stored before the field was kept: it ran over IPv4.
        let old = searched(None);
        assert!(matches!(
            old.workload.as_ref().unwrap().params,
            netceil_model::params::Params::Search(_)
        ));
        assert!(check_family("s", &old, false).is_ok());
        assert!(check_family("s", &old, true).is_err());
    }

    #[test]
    fn a_replay_takes_the_first_stored_part_with_every_asked_parameter() {
        let mut old = Run::new("r", netceil_model::RunSource::Live);
        old.parts = vec![
            stored(
                "r.1",
                json!({"frame_bytes": 64, "rate_pps": 1000.0, "duration_s": 1.02}),
            ),
            stored(
                "r.2",
                json!({"frame_bytes": 64, "rate_pps": 2000.0000000001}),
            ),
            {
                let mut p = stored("r.3", json!({"frame_bytes": 64, "rate_pps": 3000.0}));
                p.results = None;
                p
            },
            {
                let mut p = stored("r.4", json!({"frame_bytes": 64, "rate_pps": 4000.0}));
                p.meta.complete = false;
                p
            },
        ];
        let mut r = Replay::of(old);
        // Not asked yet, a stored parameter beyond the asked ones does not matter.
        assert_eq!(
            r.take(&w(json!({"frame_bytes": 64, "rate_pps": 2000.0})))
                .map(|p| p.run_id),
            Some("r.2".into())
        );
        // Taken once only.
        assert!(r
            .take(&w(json!({"frame_bytes": 64, "rate_pps": 2000.0})))
            .is_none());
        // A part without results was never measured.
        assert!(r
            .take(&w(json!({"frame_bytes": 64, "rate_pps": 3000.0})))
            .is_none());
        // A part cut short by a stop is measured again, not replayed as a whole trial.
        assert!(r
            .take(&w(json!({"frame_bytes": 64, "rate_pps": 4000.0})))
            .is_none());
        // A parameter asked and stored differently.
        assert!(r
            .take(&w(json!({"frame_bytes": 65, "rate_pps": 1000.0})))
            .is_none());
        // An asked null matches a parameter not stored.
        assert_eq!(
            r.take(&w(
                json!({"frame_bytes": 64, "rate_pps": 1000.0, "target": null})
            ))
            .map(|p| p.run_id),
            Some("r.1".into())
        );
        assert_eq!(r.used, 2);
    }
}
