//! A new run's identity and meta, and the parts of a run with parts.

use netceil_model::{time, Finding, Results, Run, RunSource, Workload};
use netceil_probe::{ProcFs, Source};

/// Seconds since the Unix epoch, now.
pub fn now_unix_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A run id that sorts by time and is unique enough to share a database: `20261121-231502-3fa9c1`.
pub fn new_run_id(started: f64) -> String {
    let salt = (netceil_load::clock::now_ns() ^ (u64::from(std::process::id()) << 20)) & 0xFF_FFFF;
    format!("{}-{salt:06x}", time::compact_utc(started))
}

/// The 16-bit id stamped into every datagram, so packets of other runs are not counted as ours.
pub fn wire_run_id(run_id: &str) -> u16 {
    run_id
        .bytes()
        .fold(0x811c_u16, |h, b| h.rotate_left(5) ^ u16::from(b))
}

/// A new live run with its identity and meta filled in (start time, host, version, labels),
/// and the 16-bit id its datagrams carry.
pub fn new_live_run(labels: &[(String, String)]) -> (Run, u16) {
    new_run(labels, RunSource::Live, &ProcFs::new())
}

/// A new run of `source` with its identity and meta, reading the host through `os`.
pub fn new_run(labels: &[(String, String)], source: RunSource, os: &dyn Source) -> (Run, u16) {
    let started = now_unix_s();
    let run_id = new_run_id(started);
    let wire_id = wire_run_id(&run_id);
    let mut top = Run::new(run_id, source);
    top.meta.started_unix_s = started;
    top.meta.host = netceil_probe::host::host_info(os);
    // Held to some CPUs (taskset, a cpuset), the run's load threads may use only those.
    top.meta.workload_cpus = netceil_probe::affinity::workload_cpus(os, &[std::process::id()]);
    top.meta.netceil_version = env!("CARGO_PKG_VERSION").to_string();
    top.meta.labels = labels.iter().cloned().collect();
    (top, wire_id)
}

/// The next part of `top`: its meta (without the NIC list, which the parent holds), its slice
/// of the parent's series from `from_s` to `to_s`, its workload and results, complete.
pub fn part_of(top: &Run, spec: Workload, results: Results, from_s: f64, to_s: f64) -> Run {
    let mut part = Run::new(
        format!("{}.{}", top.run_id, top.parts.len() + 1),
        RunSource::Live,
    );
    part.meta = top.meta.clone();
    part.meta.host.nics.clear();
    part.meta.complete = true;
    part.series = top
        .series
        .window(from_s, to_s + top.series.interval_s / 2.0);
    part.workload = Some(spec);
    let mut results = results;
    // The part's series starts at `from_s`; so does the far end's place on its clock.
    if let Some(t0) = results.far.as_mut().and_then(|f| f.near_t0_s.as_mut()) {
        *t0 -= from_s;
    }
    part.results = Some(results);
    part
}

/// The findings a run with parts stands on: its own; else those of the parts that stopped
/// its knees (each cause once, at its most confident); else its last analyzed part's.
pub fn headline_findings(top: &Run) -> Vec<Finding> {
    if !top.findings.is_empty() {
        return top.findings.clone();
    }
    let stoppers: Vec<&Run> = top
        .knees
        .iter()
        .filter_map(|k| k.stopped_by.as_deref())
        .filter_map(|s| s.split_once(" at ").map(|(id, _)| id))
        .filter_map(|id| top.parts.iter().find(|p| p.run_id == id))
        .collect();
    let from: Vec<&Run> = if stoppers.is_empty() {
        top.parts
            .iter()
            .rev()
            .find(|p| !p.findings.is_empty())
            .into_iter()
            .collect()
    } else {
        stoppers
    };
    let mut out: Vec<Finding> = Vec::new();
    for f in from.iter().flat_map(|p| &p.findings) {
        match out.iter_mut().find(|o| o.cause == f.cause) {
            Some(o) if o.confidence >= f.confidence => {}
            Some(o) => *o = f.clone(),
            None => out.push(f.clone()),
        }
    }
    out.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_model::Knee;

    fn finding(cause: &str, confidence: f64) -> Finding {
        Finding {
            cause: cause.into(),
            summary: String::new(),
            confidence,
            evidence: Vec::new(),
            alternatives: Vec::new(),
            advice: Vec::new(),
            next: None,
            not_checked: Vec::new(),
        }
    }

    fn part(id: &str, findings: Vec<Finding>) -> Run {
        let mut p = Run::new(id, RunSource::Live);
        p.findings = findings;
        p
    }

    #[test]
    fn a_search_stands_on_the_trials_that_stopped_its_knees() {
        let mut top = Run::new("s", RunSource::Live);
        top.parts = vec![
            part("s.1", vec![finding("no_ceiling", 0.3)]),
            part(
                "s.2",
                vec![finding("buffer_drops", 0.5), finding("hot_cpu", 0.6)],
            ),
            part("s.3", vec![finding("buffer_drops", 0.7)]),
            part("s.4", vec![finding("no_ceiling", 0.3)]),
        ];
        let knee = |stopper: Option<&str>| Knee {
            goal: None,
            size_bytes: 64,
            point: "app".into(),
            loss_tolerance: 0.0,
            min_interval_us: None,
            rate_pps: None,
            bits_per_s: None,
            loss_ratio: None,
            trials: 1,
            generator_limited: false,
            verified: false,
            upper_pps: None,
            stopped_by: stopper.map(|s| format!("{s} at 40.0 kpps: whatever")),
            note: None,
        };
        top.knees = vec![knee(Some("s.2")), knee(Some("s.3")), knee(None)];
        let causes = |f: Vec<Finding>| {
            f.iter()
                .map(|f| (f.cause.clone(), f.confidence))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            causes(headline_findings(&top)),
            vec![("buffer_drops".into(), 0.7), ("hot_cpu".into(), 0.6)]
        );
        // No knee stopped by a trial: the last analyzed trial.
        top.knees = vec![knee(None)];
        assert_eq!(
            causes(headline_findings(&top)),
            vec![("no_ceiling".into(), 0.3)]
        );
        // A run's own findings come first.
        top.findings = vec![finding("link", 0.9)];
        assert_eq!(causes(headline_findings(&top)), vec![("link".into(), 0.9)]);
    }
}
