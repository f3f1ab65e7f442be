//! The lab's campaigns in words: the tables and JSON documents `netceil lab` prints, and the
//! lines that describe labs and their teardown. Nothing here prints; the caller chooses where.

use netceil_lab::knob::Knob;
use netceil_lab::topo::{self, LabSpec};
use netceil_model::Run;
use serde_json::{json, Value};

use super::{knob_summary, Binds, Comparison, KnobRuns, TopoRow, TopoRuns};

/// A lab that is not this store's (or that a running netceil of this store holds), with whose
/// it is and what `lab down` will do with it.
pub fn describe_other(l: &topo::HostLab) -> String {
    let what = if l.status.orphaned() {
        "`netceil lab down --all` removes it".to_string()
    } else {
        format!(
            "left alone by `lab down --all`; `netceil lab down {} --force` removes it",
            l.name
        )
    };
    format!(
        "lab {} ({}){}: {}; {what}",
        l.name,
        l.namespaces.join(", "),
        if l.this_store {
            ""
        } else {
            ", of another store"
        },
        l.status
    )
}

/// What `lab down` did: the lab removed, what was reverted and what was left alone (stdout),
/// and what could not be reverted (for stderr).
pub fn teardown_text(t: &topo::Teardown, forced: bool) -> (String, Vec<String>) {
    let mut s = String::new();
    if let Some(l) = &t.removed {
        s.push_str(&format!(
            "lab {}: {}; taken down{}\n",
            l.name,
            l.status,
            if forced { " (--force)" } else { "" }
        ));
    }
    for x in &t.recovery.reverted {
        s.push_str(&format!("reverted: {x}\n"));
    }
    if t.recovery.reverted.is_empty() && t.recovery.failed.is_empty() {
        s.push_str("nothing to revert\n");
    }
    for l in &t.left {
        s.push_str(&format!("left alone: {}\n", describe_other(l)));
    }
    let failed = t
        .recovery
        .failed
        .iter()
        .map(|x| format!("could not revert {x}"))
        .collect();
    (s, failed)
}

/// The lab's two (or three) ends: namespace, interface and address.
pub fn spec_text(spec: &LabSpec) -> String {
    let mut s = format!(
        "  sender    {} {} {}\n  receiver  {} {} {}\n",
        spec.ns_a, spec.iface_a, spec.addr_a, spec.ns_b, spec.iface_b, spec.addr_b
    );
    if let Some(m) = &spec.ns_m {
        s.push_str(&format!(
            "  middle    {m} {}\n",
            spec.middle_ifaces.join(" ")
        ));
    }
    s
}

/// A run's first finding, as `cause: summary`.
pub fn verdict_of(run: &Run) -> String {
    run.findings
        .first()
        .map(|f| format!("{}: {}", f.cause, f.summary))
        .unwrap_or_else(|| "no finding".into())
}

/// A knob campaign as `lab run --json` prints it.
pub fn knob_json(spec: &LabSpec, knobs: &[Knob], results: &[KnobRuns], restored: bool) -> Value {
    json!({
        "lab": { "name": spec.name, "topology": spec.topology.name(), "mtu": spec.mtu },
        "steps": results.iter().map(|s| json!({
            "knobs": s.step.iter().map(|(i, v)| (knobs[*i].key.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "runs": s.runs,
        })).collect::<Vec<_>>(),
        "restored": restored,
    })
}

/// How throughput, cs/s and in/s moved with each knob value, and which value won.
pub fn knob_table(knobs: &[Knob], results: &[KnobRuns]) -> String {
    let mut s = String::new();
    let keys: Vec<&str> = knobs.iter().map(|k| k.key.as_str()).collect();
    s.push_str(&format!(
        "{:<32} {:>12} {:>12} {:>8} {:>10} {:>10} {:>10}  verdict\n",
        keys.join(" "),
        "pkt/s",
        "Gbit/s",
        "loss %",
        "cs/s",
        "in/s",
        "CPU ns/pkt"
    ));
    let (figures, winner) = knob_summary(results);
    let names: Vec<String> = results
        .iter()
        .map(|r| {
            r.step
                .iter()
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let show = |x: Option<f64>, scale: f64, prec: usize| {
        x.map_or_else(|| "-".into(), |v| format!("{:.*}", prec, v / scale))
    };
    for ((r, f), name) in results.iter().zip(&figures).zip(&names) {
        s.push_str(&format!(
            "{:<32} {:>12} {:>12} {:>8} {:>10} {:>10} {:>10}  {}\n",
            name,
            show(f.pps, 1.0, 0),
            show(f.bits_per_s, 1e9, 3),
            show(f.loss_pct, 1.0, 3),
            show(f.cs_per_s, 1.0, 0),
            show(f.intr_per_s, 1.0, 0),
            show(f.cpu_ns_per_packet, 1.0, 0),
            r.runs
                .first()
                .and_then(|r| r.findings.first())
                .map_or("-", |f| f.cause.as_str())
        ));
    }
    // The winner by median packet rate, against the runner-up with Welch's test.
    if let Some(w) = winner {
        let conf = match w.confidence {
            Ok(c) => format!(
                "mean {:+.1} % over {} (Welch p = {:.3}{})",
                c.gain_pct,
                names[w.runner_up],
                c.p_value,
                if c.significant {
                    ", significant"
                } else {
                    ", not significant: repeat with more --repeat"
                }
            ),
            Err(e) => format!("no confidence: {e}; give --repeat 3 or more"),
        };
        s.push_str(&format!("best packet rate: {} ({conf})\n", names[w.best]));
    }
    s.push_str("each value was set, measured, and the original restored afterwards\n");
    s
}

/// The verdict of a topology's median run ("" when it has none).
fn median_verdict(t: &TopoRuns, row: &TopoRow) -> String {
    row.median_run
        .map(|i| verdict_of(&t.runs[i]))
        .unwrap_or_default()
}

fn binds_text(b: Binds) -> &'static str {
    match b {
        Binds::Aggregated => "more than the packet ceiling allows at this frame size: the stack carried aggregated packets (GSO/GRO), so the per-packet ceiling does not bind",
        Binds::PacketRate => "the packet rate binds",
        Binds::Other => "something other than the packet rate binds first (per-byte work, the receiver, a lock)",
    }
}

/// The topologies side by side, with each path's packet arithmetic.
pub fn compare_text(results: &[TopoRuns], c: &Comparison) -> String {
    let base_name = c.rows[c.base].topology.name();
    let mut text = format!(
        "{:<10} {:>12} {:>12} {:>8} {:>11} {:>26}  verdict (median run)\n",
        "topology",
        "pkt/s",
        "payload Gb/s",
        "loss %",
        "CPU ns/pkt",
        format!("added vs {base_name} ns/pkt"),
    );
    let show =
        |x: Option<f64>, prec: usize| x.map_or_else(|| "-".into(), |v| format!("{v:.prec$}"));
    for (t, row) in results.iter().zip(&c.rows) {
        let added = match (row.added_ns_per_packet, row.added_spread) {
            (Some(d), Some((lo, hi))) => format!("{d:+.0} ({lo:+.0}..{hi:+.0})"),
            (Some(d), None) => format!("{d:+.0}"),
            (None, _) => "-".into(),
        };
        text.push_str(&format!(
            "{:<10} {:>12} {:>12} {:>8} {:>11} {:>26}  {}\n",
            row.topology.name(),
            show(row.pps, 0),
            show(row.payload_gbit_per_s, 3),
            show(row.loss_pct, 3),
            show(row.cpu_ns_per_packet, 0),
            added,
            median_verdict(t, row)
        ));
    }
    text.push_str(&format!(
        "medians over {}, topologies alternated round by round; CPU ns/pkt = host CPU busy time / packets the receiving interface took in; the added cost is paired by round against {base_name}, with its range\n",
        match results.first().map_or(0, |t| t.runs.len()) {
            1 => "1 repeat".to_string(),
            n => format!("{n} repeats"),
        }
    ));
    // The packet ceiling times the frame size against the bit rate reached.
    for x in &c.arithmetic {
        text.push_str(&format!(
            "{}: packet ceiling {:.0} pkt/s × {} B = {:.3} Gbit/s; reached {:.3} Gbit/s: {}\n",
            x.topology.name(),
            x.packet_ceiling_pps,
            x.frame_bytes,
            x.allowed_bits_per_s / 1e9,
            x.reached_bits_per_s / 1e9,
            binds_text(x.binds)
        ));
    }
    text
}

/// The comparison as `lab compare --json` prints it.
pub fn compare_json(results: &[TopoRuns], c: &Comparison) -> Value {
    let rows: Vec<_> = results.iter().zip(&c.rows).map(|(t, row)| json!({
        "topology": row.topology.name(), "path": row.topology.path(),
        "repeats": row.repeats, "pps": row.pps, "bits_per_s": row.payload_gbit_per_s.map(|g| g * 1e9),
        "loss_pct": row.loss_pct, "cpu_ns_per_packet": row.cpu_ns_per_packet,
        "added_ns_per_packet": row.added_ns_per_packet,
        "added_spread": row.added_spread.map(|(lo, hi)| [lo, hi]),
        "packet_ceiling_pps": row.packet_ceiling_pps, "verdict": median_verdict(t, row),
        "runs": t.runs.iter().map(|r| r.run_id.clone()).collect::<Vec<_>>(),
    })).collect();
    let arithmetic: Vec<_> = c.arithmetic.iter().map(|x| json!({
        "topology": x.topology.name(), "packet_ceiling_pps": x.packet_ceiling_pps, "frame_bytes": x.frame_bytes,
        "allowed_bits_per_s": x.allowed_bits_per_s, "reached_bits_per_s": x.reached_bits_per_s, "binds": binds_text(x.binds),
    })).collect();
    json!({ "topologies": rows, "arithmetic": arithmetic, "base": c.rows[c.base].topology.name() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::Arithmetic;
    use netceil_lab::journal::Recovery;
    use netceil_lab::topo::{Teardown, Topology};

    fn row(t: Topology, pps: f64, added: Option<f64>) -> TopoRow {
        TopoRow {
            topology: t,
            repeats: 2,
            pps: Some(pps),
            payload_gbit_per_s: Some(pps * 64.0 * 8.0 / 1e9),
            loss_pct: Some(0.5),
            cpu_ns_per_packet: Some(1e9 / pps),
            added_ns_per_packet: added,
            added_spread: added.map(|a| (a - 10.0, a + 10.0)),
            packet_ceiling_pps: Some(pps * 1.1),
            median_run: None,
        }
    }

    #[test]
    fn a_comparison_says_each_topologys_figures_against_the_base_and_why_it_binds() {
        let topos = [Topology::Direct, Topology::Bridge];
        let results: Vec<TopoRuns> = topos
            .iter()
            .map(|&t| TopoRuns {
                spec: LabSpec::new("t", t, 1500).unwrap(),
                runs: Vec::new(),
                ceiling_pps: None,
            })
            .collect();
        let c = Comparison {
            base: 0,
            rows: vec![
                row(Topology::Direct, 1_000_000.0, None),
                row(Topology::Bridge, 800_000.0, Some(250.0)),
            ],
            arithmetic: vec![Arithmetic {
                topology: Topology::Bridge,
                packet_ceiling_pps: 880_000.0,
                frame_bytes: 64,
                allowed_bits_per_s: 880_000.0 * 64.0 * 8.0,
                reached_bits_per_s: 800_000.0 * 64.0 * 8.0,
                binds: Binds::PacketRate,
            }],
        };
        let text = compare_text(&results, &c);
        assert!(text.contains("added vs direct ns/pkt"), "{text}");
        let bridge = text.lines().find(|l| l.starts_with("bridge")).unwrap();
        assert!(
            bridge.contains("800000") && bridge.contains("+250 (+240..+260)"),
            "{bridge}"
        );
        assert!(text.contains("packet ceiling 880000 pkt/s × 64 B = 0.451 Gbit/s; reached 0.410 Gbit/s: the packet rate binds"), "{text}");
        let doc = compare_json(&results, &c);
        assert_eq!(doc["base"], "direct");
        assert_eq!(doc["topologies"][1]["added_spread"], json!([240.0, 260.0]));
        assert_eq!(doc["arithmetic"][0]["frame_bytes"], 64);
    }

    #[test]
    fn a_teardown_says_what_was_reverted_and_hands_failures_to_the_caller() {
        let quiet = Teardown::default();
        assert_eq!(
            teardown_text(&quiet, false),
            ("nothing to revert\n".into(), vec![])
        );
        let t = Teardown {
            recovery: Recovery {
                reverted: vec!["sysctl net.core.rmem_max".into()],
                failed: vec!["netns nc-x".into()],
            },
            ..Teardown::default()
        };
        let (text, failed) = teardown_text(&t, true);
        assert_eq!(text, "reverted: sysctl net.core.rmem_max\n");
        assert_eq!(failed, vec!["could not revert netns nc-x".to_string()]);
    }
}
