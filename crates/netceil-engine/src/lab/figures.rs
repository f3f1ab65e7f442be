//! What a lab's runs are judged by: each run's figures, each knob step's medians and the
//! winning step, and the comparison of topologies (the added cost per packet against the
//! direct path, paired by round, and the packet ceiling's arithmetic).

use netceil_lab::topo::Topology;
use netceil_model::stats::median;
use netceil_model::Run;
use netceil_report::{welch_t_test, TestError};

use super::{KnobRuns, TopoRuns};

/// The figures a knob step or a topology is judged by.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Figures {
    /// Packets the application received per second.
    pub pps: f64,
    /// Payload bits the application received per second.
    pub bits_per_s: f64,
    /// Lost over sent (0..1).
    pub loss: f64,
    pub cs_per_s: Option<f64>,
    pub intr_per_s: Option<f64>,
    /// Host CPU busy time per packet the receiving interface took in.
    pub cpu_ns_per_packet: Option<f64>,
    pub rx_packets: u64,
}

/// A lab run's figures: its results (or its first part's), the host's means, and the lab's own
/// counters of the receiving interface.
pub fn figures(run: &Run) -> Figures {
    let r = run
        .results
        .as_ref()
        .or_else(|| run.parts.iter().find_map(|p| p.results.as_ref()));
    let mut f = Figures::default();
    if let Some(r) = r {
        f.pps = r.rx_app_pps;
        f.bits_per_s = r.rx_app_bits_per_s;
        let sent = r.tx_packets.saturating_sub(r.in_flight_packets);
        f.loss = if sent > 0 {
            r.lost_packets as f64 / sent as f64
        } else {
            0.0
        };
        f.rx_packets = r.rx_app_packets;
    }
    f.cs_per_s = run.series.total_mean("cs_per_s");
    f.intr_per_s = run.series.total_mean("intr_per_s");
    // Packets the receiving interface took in, from the lab's own counters.
    let rx_iface = run.workload.as_ref().and_then(|w| w.lab()).and_then(|l| {
        l.interfaces
            .iter()
            .find(|i| i.netns == l.receiver_netns)
            .map(|i| i.rx_packets)
    });
    let busy = run.series.total_mean("cpu_busy_pct");
    let cpus = run.meta.host.cpus.map(f64::from);
    let duration = run.series.t_s.last().copied();
    if let (Some(p), Some(b), Some(c), Some(d)) = (rx_iface, busy, cpus, duration) {
        if p > 0 {
            f.cpu_ns_per_packet = Some(b / 100.0 * c * d * 1e9 / p as f64);
        }
    }
    if f.pps == 0.0 {
        if let (Some(p), Some(d)) = (rx_iface, duration) {
            f.pps = p as f64 / d.max(1e-9);
        }
    }
    f
}

/// Which of the figures has the median packet rate (the lower middle of an even count).
pub fn median_index(fs: &[Figures]) -> Option<usize> {
    let mut v: Vec<(f64, usize)> = fs.iter().enumerate().map(|(i, f)| (f.pps, i)).collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v.get(v.len().saturating_sub(1) / 2).map(|x| x.1)
}

/// The run whose packet rate is the median of its topology's repeats.
pub fn median_run(runs: &[Run]) -> Option<&Run> {
    let fs: Vec<Figures> = runs.iter().map(figures).collect();
    median_index(&fs).map(|i| &runs[i])
}

/// One knob step's medians over its repeats.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepFigures {
    pub pps: Option<f64>,
    pub bits_per_s: Option<f64>,
    pub loss_pct: Option<f64>,
    pub cs_per_s: Option<f64>,
    pub intr_per_s: Option<f64>,
    pub cpu_ns_per_packet: Option<f64>,
}

impl StepFigures {
    pub fn of(fs: &[Figures]) -> StepFigures {
        let med = |f: &dyn Fn(&Figures) -> Option<f64>| {
            median(&fs.iter().filter_map(f).collect::<Vec<_>>())
        };
        StepFigures {
            pps: med(&|f| Some(f.pps)),
            bits_per_s: med(&|f| Some(f.bits_per_s)),
            loss_pct: med(&|f| Some(f.loss * 100.0)),
            cs_per_s: med(&|f| f.cs_per_s),
            intr_per_s: med(&|f| f.intr_per_s),
            cpu_ns_per_packet: med(&|f| f.cpu_ns_per_packet),
        }
    }
}

/// How sure the winner is: Welch's test of the runner-up's packet rates against the winner's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Confidence {
    /// The winner's mean over the runner-up's, in percent (+ is faster).
    pub gain_pct: f64,
    pub p_value: f64,
    /// At the 5 % level.
    pub significant: bool,
}

/// The knob step with the highest median packet rate, against the runner-up.
#[derive(Debug, Clone, PartialEq)]
pub struct KnobWinner {
    /// Indexes into the steps.
    pub best: usize,
    pub runner_up: usize,
    /// Why there is no confidence (too few repeats) when there is none.
    pub confidence: Result<Confidence, TestError>,
}

/// The winner among steps, each given as its runs' figures; none with fewer than two steps.
pub fn knob_winner(steps: &[Vec<Figures>]) -> Option<KnobWinner> {
    let pps: Vec<Vec<f64>> = steps
        .iter()
        .map(|fs| fs.iter().map(|f| f.pps).collect())
        .collect();
    let mut ranked: Vec<usize> = (0..steps.len()).collect();
    // Stable: of equal medians, the earlier step wins.
    ranked.sort_by(|&a, &b| {
        median(&pps[b])
            .unwrap_or(0.0)
            .total_cmp(&median(&pps[a]).unwrap_or(0.0))
    });
    let [best, runner_up, ..] = ranked[..] else {
        return None;
    };
    let confidence = welch_t_test(&pps[runner_up], &pps[best], 0.95).map(|t| Confidence {
        gain_pct: t.difference / t.mean_a.max(1e-9) * 100.0,
        p_value: t.p_value,
        significant: t.p_value < 0.05,
    });
    Some(KnobWinner {
        best,
        runner_up,
        confidence,
    })
}

/// The figures and the winner of a knob campaign's steps.
pub fn knob_summary(results: &[KnobRuns]) -> (Vec<StepFigures>, Option<KnobWinner>) {
    let fs: Vec<Vec<Figures>> = results
        .iter()
        .map(|s| s.runs.iter().map(figures).collect())
        .collect();
    (
        fs.iter().map(|f| StepFigures::of(f)).collect(),
        knob_winner(&fs),
    )
}

/// One topology's row of a comparison: medians over its repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct TopoRow {
    pub topology: Topology,
    pub repeats: usize,
    pub pps: Option<f64>,
    pub payload_gbit_per_s: Option<f64>,
    pub loss_pct: Option<f64>,
    pub cpu_ns_per_packet: Option<f64>,
    /// The median extra CPU time per packet against the base, paired by round; `None` for the
    /// base itself.
    pub added_ns_per_packet: Option<f64>,
    /// The range of the paired differences, with more than one pair.
    pub added_spread: Option<(f64, f64)>,
    pub packet_ceiling_pps: Option<f64>,
    /// Which repeat had the median packet rate.
    pub median_run: Option<usize>,
}

/// What the packet ceiling says about the bit rate reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binds {
    /// More than the ceiling allows: the stack carried aggregated packets (GSO/GRO).
    Aggregated,
    /// Within 80 % of what the ceiling allows: the packet rate binds.
    PacketRate,
    /// Well below: something else binds first.
    Other,
}

/// The packet ceiling times the frame size against the bit rate reached, for one topology.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arithmetic {
    pub topology: Topology,
    pub packet_ceiling_pps: f64,
    pub frame_bytes: usize,
    pub allowed_bits_per_s: f64,
    pub reached_bits_per_s: f64,
    pub binds: Binds,
}

/// Topologies compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The row the added cost is against: `direct` if compared, else the first.
    pub base: usize,
    pub rows: Vec<TopoRow>,
    pub arithmetic: Vec<Arithmetic>,
}

/// One topology's figures, as [`compare_figures`] takes them.
#[derive(Debug, Clone, PartialEq)]
pub struct TopoFigures {
    pub topology: Topology,
    /// One per round, in round order.
    pub figures: Vec<Figures>,
    pub ceiling_pps: Option<f64>,
}

/// Compares the topologies' runs; `udp_frame` is the workload's UDP frame size, if it is one
/// (else a frame of the MTU).
pub fn compare(results: &[TopoRuns], udp_frame: Option<usize>, mtu: u32) -> Comparison {
    let tf: Vec<TopoFigures> = results
        .iter()
        .map(|t| TopoFigures {
            topology: t.spec.topology,
            figures: t.runs.iter().map(figures).collect(),
            ceiling_pps: t.ceiling_pps,
        })
        .collect();
    compare_figures(&tf, udp_frame, mtu)
}

/// [`compare`], of figures.
pub fn compare_figures(results: &[TopoFigures], udp_frame: Option<usize>, mtu: u32) -> Comparison {
    let frame = udp_frame.unwrap_or(mtu as usize + 18);
    let base = results
        .iter()
        .position(|t| t.topology == Topology::Direct)
        .unwrap_or(0);
    let rows = results
        .iter()
        .enumerate()
        .map(|(i, t)| topo_row(t, &results[base], i == base))
        .collect();
    // The packet ceiling times the frame size against the bit rate reached.
    let mut arithmetic = Vec::new();
    for t in results {
        let Some(ceiling) = t.ceiling_pps else {
            continue;
        };
        // On the wire's terms: frames for UDP (packets × frame size), the payload rate for a
        // stream (whose segments the stack sizes itself).
        let reached: Vec<f64> = t
            .figures
            .iter()
            .map(|f| {
                if udp_frame.is_some() {
                    f.pps * frame as f64 * 8.0
                } else {
                    f.bits_per_s
                }
            })
            .collect();
        let reached = median(&reached).unwrap_or(0.0);
        let allowed = ceiling * frame as f64 * 8.0;
        let binds = if reached > allowed * 1.05 {
            Binds::Aggregated
        } else if reached >= allowed * 0.8 {
            Binds::PacketRate
        } else {
            Binds::Other
        };
        arithmetic.push(Arithmetic {
            topology: t.topology,
            packet_ceiling_pps: ceiling,
            frame_bytes: frame,
            allowed_bits_per_s: allowed,
            reached_bits_per_s: reached,
            binds,
        });
    }
    Comparison {
        base,
        rows,
        arithmetic,
    }
}

fn topo_row(t: &TopoFigures, base: &TopoFigures, is_base: bool) -> TopoRow {
    let fs = &t.figures;
    let med = |v: Vec<f64>| median(&v);
    // The extra cost per packet, paired by round: each round's run against the base's.
    let deltas: Vec<f64> = fs
        .iter()
        .zip(&base.figures)
        .filter_map(|(x, b)| Some(x.cpu_ns_per_packet? - b.cpu_ns_per_packet?))
        .collect();
    let spread = (
        deltas.iter().copied().fold(f64::INFINITY, f64::min),
        deltas.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    TopoRow {
        topology: t.topology,
        repeats: fs.len(),
        pps: med(fs.iter().map(|f| f.pps).collect()),
        payload_gbit_per_s: med(fs.iter().map(|f| f.bits_per_s / 1e9).collect()),
        loss_pct: med(fs.iter().map(|f| f.loss * 100.0).collect()),
        cpu_ns_per_packet: med(fs.iter().filter_map(|f| f.cpu_ns_per_packet).collect()),
        added_ns_per_packet: if is_base { None } else { median(&deltas) },
        added_spread: (deltas.len() > 1).then_some(spread),
        packet_ceiling_pps: t.ceiling_pps,
        median_run: median_index(fs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(pps: f64, cpu: Option<f64>) -> Figures {
        Figures {
            pps,
            bits_per_s: pps * 64.0 * 8.0,
            cpu_ns_per_packet: cpu,
            ..Figures::default()
        }
    }

    #[test]
    fn the_winner_is_the_step_with_the_highest_median_packet_rate() {
        let steps = vec![
            vec![f(100.0, None), f(110.0, None), f(105.0, None)],
            // The highest single run, but not the highest median.
            vec![f(90.0, None), f(400.0, None), f(95.0, None)],
            vec![f(200.0, None), f(210.0, None), f(205.0, None)],
        ];
        let w = knob_winner(&steps).expect("three steps");
        assert_eq!((w.best, w.runner_up), (2, 0));
        let c = w.confidence.expect("three repeats each");
        // Mean 205 against mean 105: +95.2 %.
        assert!((c.gain_pct - 100.0 / 105.0 * 100.0).abs() < 1e-9, "{c:?}");
        assert!(c.significant, "{c:?}");
    }

    #[test]
    fn one_repeat_has_no_confidence_and_one_step_no_winner() {
        let w = knob_winner(&[vec![f(1.0, None)], vec![f(2.0, None)]]).expect("two steps");
        assert_eq!((w.best, w.runner_up), (1, 0));
        assert!(w.confidence.is_err());
        assert!(knob_winner(&[vec![f(1.0, None)]]).is_none());
    }

    #[test]
    fn step_figures_are_medians_of_what_was_measured() {
        let fs = [
            Figures {
                loss: 0.5,
                cs_per_s: Some(10.0),
                ..f(300.0, Some(7.0))
            },
            Figures {
                loss: 0.1,
                ..f(100.0, None)
            },
            Figures {
                loss: 0.2,
                cs_per_s: Some(30.0),
                ..f(200.0, Some(9.0))
            },
        ];
        let s = StepFigures::of(&fs);
        assert_eq!(s.pps, Some(200.0));
        assert!((s.loss_pct.unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(s.cs_per_s, Some(20.0));
        assert_eq!(s.cpu_ns_per_packet, Some(8.0));
        assert_eq!(s.intr_per_s, None);
    }

    fn topo(t: Topology, fs: Vec<Figures>, ceiling: Option<f64>) -> TopoFigures {
        TopoFigures {
            topology: t,
            figures: fs,
            ceiling_pps: ceiling,
        }
    }

    #[test]
    fn the_added_cost_is_paired_by_round_against_direct_wherever_it_is() {
        let c = compare_figures(
            &[
                // Round 2 ran slower on the bridge and on direct alike: pairing cancels it.
                topo(
                    Topology::Bridge,
                    vec![f(80.0, Some(150.0)), f(70.0, Some(250.0))],
                    None,
                ),
                topo(
                    Topology::Direct,
                    vec![f(100.0, Some(100.0)), f(90.0, Some(190.0))],
                    None,
                ),
            ],
            None,
            1500,
        );
        assert_eq!(c.base, 1);
        let bridge = &c.rows[0];
        assert_eq!(bridge.added_ns_per_packet, Some(55.0));
        assert_eq!(bridge.added_spread, Some((50.0, 60.0)));
        assert_eq!(bridge.cpu_ns_per_packet, Some(200.0));
        assert_eq!(bridge.pps, Some(75.0));
        // The lower of the two middle runs.
        assert_eq!(bridge.median_run, Some(1));
        let direct = &c.rows[1];
        assert_eq!(direct.added_ns_per_packet, None);
        assert_eq!(direct.added_spread, Some((0.0, 0.0)));
    }

    #[test]
    fn without_direct_the_first_topology_is_the_base() {
        let c = compare_figures(
            &[
                topo(Topology::Routed, vec![f(1.0, Some(10.0))], None),
                topo(Topology::Bridge, vec![f(1.0, Some(25.0))], None),
            ],
            None,
            1500,
        );
        assert_eq!(c.base, 0);
        assert_eq!(c.rows[1].added_ns_per_packet, Some(15.0));
        // One pair has no range.
        assert_eq!(c.rows[1].added_spread, None);
    }

    #[test]
    fn the_packet_ceiling_says_what_binds() {
        // 1000 pkt/s × 64 B × 8 = 512 kbit/s allowed.
        let c = compare_figures(
            &[
                topo(Topology::Direct, vec![f(1000.0, None)], Some(1000.0)),
                topo(Topology::Bridge, vec![f(500.0, None)], Some(1000.0)),
                topo(Topology::Routed, vec![f(2000.0, None)], Some(1000.0)),
                topo(Topology::Macvlan, vec![f(9.0, None)], None),
            ],
            Some(64),
            1500,
        );
        let binds: Vec<(Topology, Binds)> =
            c.arithmetic.iter().map(|a| (a.topology, a.binds)).collect();
        assert_eq!(
            binds,
            [
                (Topology::Direct, Binds::PacketRate),
                (Topology::Bridge, Binds::Other),
                (Topology::Routed, Binds::Aggregated),
            ]
        );
        assert_eq!(c.arithmetic[0].allowed_bits_per_s, 512_000.0);
        assert_eq!(c.arithmetic[0].frame_bytes, 64);
        // A stream is judged by its payload rate against a frame of the MTU.
        let s = compare_figures(
            &[topo(Topology::Direct, vec![f(1000.0, None)], Some(10.0))],
            None,
            1500,
        );
        assert_eq!(s.arithmetic[0].frame_bytes, 1518);
        assert_eq!(s.arithmetic[0].reached_bits_per_s, 512_000.0);
    }

    #[test]
    fn a_runs_figures_come_from_its_results() {
        let mut run = Run::new("r", netceil_model::RunSource::Live);
        run.results = Some(netceil_model::Results {
            rx_app_pps: 1000.0,
            rx_app_bits_per_s: 8e6,
            tx_packets: 110,
            in_flight_packets: 10,
            lost_packets: 25,
            rx_app_packets: 75,
            ..Default::default()
        });
        let fig = figures(&run);
        assert_eq!(fig.pps, 1000.0);
        assert_eq!(fig.bits_per_s, 8e6);
        assert_eq!(fig.loss, 0.25);
        assert_eq!(fig.rx_packets, 75);
        assert_eq!(fig.cpu_ns_per_packet, None);
    }
}
