//! The lab's campaigns: a workload across network-namespace topologies that `netceil-lab`
//! builds, over knob values (each set, measured, and the original restored) and over
//! topologies (alternated round by round), and the figures they are judged by.
//!
//! A workload runs as two netceil processes: `netceil serve` in the receiving namespace (b) and
//! the sender (`netceil lab-child`, given a typed [`ChildSpec`]) in the sending namespace (a).
//! The sender's run is the record: it samples the host's CPU, softirq and context switches (not
//! namespaced) and its own namespace, and gets the receiver's kernel counters back in its
//! end-of-flow reports. This process adds every lab interface's packet counters (both ends and
//! the middle), read by threads parked in each namespace, as `lab_*{netns,iface}` series, and
//! the lab, its path and the knobs set as labels.
//!
//! Every change goes through the caller's [`LabSession`], which restores it however the
//! campaign ends; progress is told to an [`Observer`]; nothing here prints to stdout.

mod figures;
mod process;
pub mod render;
mod sampler;
mod spec;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::anyhow;
use netceil_lab::journal::{Change, Session as LabSession};
use netceil_lab::knob::{self, Knob};
use netceil_lab::topo::{self, LabSpec, Topology};
use netceil_model::stats::median;
use netceil_model::Run;
use netceil_store::Store;

use crate::{Error, Observer};

pub use figures::{
    compare, compare_figures, figures, knob_summary, knob_winner, median_index, median_run,
    Arithmetic, Binds, Comparison, Confidence, Figures, KnobWinner, StepFigures, TopoFigures,
    TopoRow,
};
pub use spec::{ChildSpec, Experiment, Workload, DIE_WITH_PARENT, KEY_PATH, SPEC_ENV};

/// What a lab's campaigns run with.
pub struct Runner<'s> {
    /// The netceil executable, run in the lab's namespaces as `serve` and `lab-child`.
    pub exe: PathBuf,
    /// Set to stop: the running sender is told (SIGINT, by its PID) and no trial starts after.
    pub stop: Arc<AtomicBool>,
    /// Where each run goes once the lab's series are in it; `None` stores nothing.
    pub store: Option<&'s Store>,
}

/// A knob campaign: every combination of the knobs' values, each measured `repeat` times.
#[derive(Debug, Clone, Copy)]
pub struct KnobPlan<'a> {
    pub spec: &'a LabSpec,
    pub knobs: &'a [Knob],
    pub workload: &'a Workload,
    pub repeat: u32,
    /// Keep the sender's stderr (the lab's `--quiet`).
    pub quiet: bool,
}

/// A comparison of topologies: each built as a lab of `mtu`, the workload `repeat` times on
/// each, then each path's packet ceiling with `ceiling`.
#[derive(Debug, Clone, Copy)]
pub struct ComparePlan<'a> {
    pub topologies: &'a [Topology],
    pub mtu: u32,
    pub workload: &'a Workload,
    /// 64-byte frames flat out; `None` measures no ceiling.
    pub ceiling: Option<&'a Workload>,
    pub repeat: u32,
}

/// One knob combination: (knob index, value) per knob.
pub type KnobStep = Vec<(usize, String)>;

/// The knobs' value combinations, in order (the first knob varies slowest).
pub fn knob_steps(knobs: &[Knob]) -> Vec<KnobStep> {
    let mut steps: Vec<KnobStep> = vec![vec![]];
    for (i, k) in knobs.iter().enumerate() {
        steps = steps
            .into_iter()
            .flat_map(|s| {
                k.values.iter().map(move |v| {
                    let mut s = s.clone();
                    s.push((i, v.clone()));
                    s
                })
            })
            .collect();
    }
    steps
}

/// One knob step's runs.
#[derive(Debug, Clone)]
pub struct KnobRuns {
    pub step: KnobStep,
    pub runs: Vec<Run>,
}

/// One topology's lab and runs over the rounds, and its packet ceiling.
#[derive(Debug, Clone)]
pub struct TopoRuns {
    pub spec: LabSpec,
    pub runs: Vec<Run>,
    pub ceiling_pps: Option<f64>,
}

/// A lab for one command: an existing one by name, or a new one of `topology` (named `name`,
/// else `temp_name`) taken down with the session.
pub fn lab_for(
    session: &mut LabSession,
    topology: Option<Topology>,
    name: Option<&str>,
    mtu: u32,
    temp_name: &str,
) -> Result<LabSpec, Error> {
    match (topology, name) {
        (None, Some(n)) => {
            let j = session.journal().clone();
            topo::persistent_labs(&j)?
                .into_iter()
                .find(|l| l.name == n && l.is_up())
                .ok_or_else(|| {
                    Error::usage(anyhow!(
                        "no lab '{n}' is up (`netceil lab up TOPO --name {n}` makes one)"
                    ))
                })
        }
        (Some(t), name) => {
            let spec = LabSpec::new(name.unwrap_or(temp_name), t, mtu)?;
            topo::up(session, &spec)?;
            Ok(spec)
        }
        (None, None) => Err(Error::usage(anyhow!(
            "give a topology ({}) or --name of a lab that is up",
            Topology::ALL.map(Topology::name).join(", ")
        ))),
    }
}

impl Runner<'_> {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Every combination of the knobs' values in turn: back to the originals, this step's
    /// values set, the workload `repeat` times. Stops early (with what it has) when told to;
    /// the originals are restored when `session` closes.
    pub fn knob_campaign(
        &self,
        session: &mut LabSession,
        plan: &KnobPlan,
        observer: &mut dyn Observer,
    ) -> Result<Vec<KnobRuns>, Error> {
        let KnobPlan {
            spec,
            knobs,
            workload: w,
            repeat,
            quiet,
        } = *plan;
        let mut results = Vec::new();
        let mut interrupted = false;
        for step in knob_steps(knobs) {
            // Back to the original values, then this step's.
            session.revert(|c| matches!(c, Change::File { .. } | Change::Coalesce { .. }));
            let mut labels = vec![
                ("lab.topology".to_string(), spec.topology.name().to_string()),
                ("lab.name".to_string(), spec.name.clone()),
            ];
            for (i, v) in &step {
                for d in knob::apply(session, spec, &knobs[*i], v)? {
                    observer.say(&format!("  knob: {d}"));
                }
                labels.push((format!("knob.{}", knobs[*i].key), v.clone()));
            }
            let mut runs = Vec::new();
            for _ in 0..repeat {
                if self.stopped() {
                    interrupted = true;
                    break;
                }
                let mut run = self.run_once(spec, w, &labels, quiet)?;
                self.store_run(&run);
                interrupted |= self.stopped();
                run.meta.labels.extend(labels.iter().cloned());
                runs.push(run);
            }
            results.push(KnobRuns { step, runs });
            if interrupted {
                break;
            }
        }
        Ok(results)
    }

    /// Each topology as a lab of this session, the workload on each `repeat` times (the order
    /// alternated round by round, so that drift falls on every topology alike), then each
    /// path's packet ceiling, unless the workload is 64-byte frames already. Stops early, with
    /// what it has, when told to.
    pub fn compare_campaign(
        &self,
        session: &mut LabSession,
        plan: &ComparePlan,
        observer: &mut dyn Observer,
    ) -> Result<Vec<TopoRuns>, Error> {
        let ComparePlan {
            topologies,
            mtu,
            workload: w,
            ceiling,
            repeat,
        } = *plan;
        let tag = format!("c{}", std::process::id());
        let mut results = Vec::new();
        for (i, t) in topologies.iter().enumerate() {
            results.push(TopoRuns {
                spec: lab_for(session, Some(*t), Some(&format!("{tag}-{i}")), mtu, "")?,
                runs: Vec::new(),
                ceiling_pps: None,
            });
        }
        for r in 0..repeat {
            let order: Vec<usize> = if r % 2 == 0 {
                (0..results.len()).collect()
            } else {
                (0..results.len()).rev().collect()
            };
            for i in order {
                if self.stopped() {
                    return Ok(results);
                }
                let t = &mut results[i];
                let name = t.spec.topology.name();
                observer.say(&format!("round {} of {repeat}: {name}", r + 1));
                let labels = vec![
                    ("lab.topology".to_string(), name.to_string()),
                    ("lab.compare".to_string(), tag.clone()),
                ];
                let run = self.run_once(&t.spec, w, &labels, true)?;
                self.store_run(&run);
                t.runs.push(run);
                if self.stopped() {
                    return Ok(results);
                }
            }
        }
        let Some(small) = ceiling else {
            return Ok(results);
        };
        for t in results.iter_mut() {
            if self.stopped() {
                break;
            }
            if w.frame_bytes == Some(64) {
                let pps: Vec<f64> = t.runs.iter().map(|r| figures(r).pps).collect();
                t.ceiling_pps = median(&pps);
                continue;
            }
            let labels = vec![(
                "lab.topology".to_string(),
                t.spec.topology.name().to_string(),
            )];
            let run = self.run_once(&t.spec, small, &labels, true)?;
            t.ceiling_pps = Some(figures(&run).pps);
        }
        Ok(results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knob_steps_are_every_combination_the_first_knob_slowest() {
        let a = knob::parse("net.core.netdev_budget=300,600", false).expect("a knob");
        let b = knob::parse("net.core.busy_poll=0,50,100", false).expect("a knob");
        let steps = knob_steps(&[a, b]);
        let shown: Vec<String> = steps
            .iter()
            .map(|s| {
                s.iter()
                    .map(|(i, v)| format!("{i}:{v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        assert_eq!(
            shown,
            [
                "0:300 1:0",
                "0:300 1:50",
                "0:300 1:100",
                "0:600 1:0",
                "0:600 1:50",
                "0:600 1:100",
            ]
        );
        // No knob: one step, the lab as it is.
        assert_eq!(knob_steps(&[]), vec![Vec::new()]);
    }
}
