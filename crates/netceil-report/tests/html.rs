//! The HTML report: self-contained, escaped, and complete. The browser check is
//! scripts/check-report-browser.sh.

mod common;

use common::{msk2, sk0, vmstat_run};
use netceil_model::Run;
use netceil_report::html_report;

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

fn assert_balanced(html: &str) {
    for tag in ["section", "table", "svg", "figure", "ul", "div", "tr"] {
        let open = count(html, &format!("<{tag}>")) + count(html, &format!("<{tag} "));
        let close = count(html, &format!("</{tag}>"));
        assert_eq!(
            open, close,
            "<{tag}> opened {open} times, closed {close} times"
        );
    }
}

#[test]
fn report_is_self_contained() {
    let html = html_report(&[common::full_run()]);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    for banned in [
        "<script", "<link", "<img", "<iframe", "@import", "url(", " src=", "<object",
    ] {
        assert!(!html.contains(banned), "the report contains {banned}");
    }
    // The only URLs are SVG namespace names, which are never fetched.
    let urls = count(&html, "http://") + count(&html, "https://");
    let namespaces = count(&html, "xmlns=\"http://www.w3.org/2000/svg\"");
    assert_eq!(urls, namespaces, "a URL other than the SVG namespace");
    assert_balanced(&html);
}

#[test]
fn text_from_the_run_is_escaped() {
    let html = html_report(&[common::full_run()]);
    assert!(!html.contains("<b>bold</b>"), "a label was not escaped");
    assert!(html.contains("&lt;b&gt;bold&lt;/b&gt; &amp; &#39;quoted&#39;"));
    assert!(html.contains("2 lines skipped &lt;garbage&gt;"));
    assert!(html.contains("bge0 &lt;driver lock&gt;"));
    assert!(html.contains("overflowed &lt;rmem_max too small&gt;"));
    assert!(!html.contains("<garbage>") && !html.contains("<driver lock>"));
}

#[test]
fn report_has_every_section_with_axes_and_units() {
    let html = html_report(&[common::full_run()]);
    for want in [
        // charts, with titles, axis descriptions in units and legends
        "Throughput and kernel event rates",
        "bit/s",
        "cs/s",
        "time since start [s]",
        // legends in words, with units (the metric ids stay in the findings' evidence)
        "context switches, /s",
        "interrupts, /s",
        "NET_RX softirqs, /s",
        "received by the application, bit/s",
        "veth0: received, bit/s",
        "CPU busy per core",
        "busy [%]",
        "cpu1",
        "System + softirq time per core (sy+si)",
        "cpu0 sy+si",
        "UDP receive buffer full, /s",
        // loss, latency, flows, locks, findings, environment, notes, parts
        "Where packets were counted, and where they were lost",
        "read by the application",
        "20,000 of 360,000 (5.56 %)",
        "Request/response latency percentiles (log scale)",
        "8.50 ms",
        "smoothed RTT",
        "Locks, by total wait",
        "rtentry",
        "route.c:412",
        "net.core.rmem_max",
        "5000 datagrams/s dropped at the socket",
        "measure with --rcvbuf 16M",
        "PCIe1.1x1",
        "sampler cost",
        "20.0 ms CPU (0.500 % of one core)",
        "netceil version",
        "psi_cpu_some_pct not measured",
        "id=\"run-1-part-1\"",
    ] {
        assert!(html.contains(want), "the report lacks {want:?}");
    }
    // Rates, CPU, sy+si and drops, then the delivery and latency bars and the latency
    // CDF: for the run and again for its part.
    assert_eq!(count(&html, "<svg"), 14);
}

#[test]
fn several_runs_get_overlays_and_two_get_a_comparison() {
    let runs = [
        vmstat_run("sk0", &sk0(true)),
        vmstat_run("msk2", &msk2(true)),
    ];
    let html = html_report(&runs);
    for want in [
        "All runs",
        "All runs, each on its own time axis from its start",
        "context switches\n",
        "throughput: sk0: received, bit/s / msk2: received, bit/s",
        "A/B comparison",
        "bytes per context switch",
        "Welch",
        "id=\"run-1\"",
        "id=\"run-2\"",
    ] {
        assert!(html.contains(want), "the report lacks {want:?}");
    }
    assert_balanced(&html);
    let three = html_report(&[runs[0].clone(), runs[1].clone(), runs[0].clone()]);
    assert!(three.contains("All runs") && !three.contains("A/B comparison"));
}

#[test]
fn degenerate_inputs_still_make_a_page() {
    let empty = html_report(&[]);
    assert!(empty.contains("No runs were given."));
    assert_balanced(&empty);
    let bare = Run::new("bare <run>", netceil_model::RunSource::Live);
    let html = html_report(&[bare]);
    assert!(html.contains("This run has no time series."));
    assert!(html.contains("bare &lt;run&gt;"));
    assert_balanced(&html);
}

#[test]
fn real_udp_run_renders() {
    let run: Run = serde_json::from_str(include_str!("fixtures/run-udp.json")).unwrap();
    let html = html_report(&[run]);
    assert!(html.contains("context switches, /s"));
    assert!(html.contains("lo: received, bit/s"));
    assert!(!html.contains("{iface="), "a legend is a metric id");
    assert!(html.contains("kernel received (lo RX counter)"));
    assert_balanced(&html);
}

#[test]
fn a_sweep_draws_its_curves_and_lists_its_cycles() {
    let html = html_report(&[common::sweep_run()]);
    assert!(
        html.contains("<h2>Knees</h2>") || html.contains(">Knees</h"),
        "the knee table"
    );
    assert!(html.contains("Packets that arrived, against the interval between them"));
    assert!(html.contains("10.00 µs"));
    assert!(
        html.contains("&lt;knee&gt; &amp; note"),
        "notes are escaped"
    );
    // One line per cycle, not a section each.
    assert!(html.contains(">Trials</h"));
    assert_eq!(count(&html, "class=\"run part\""), 0);
    assert_balanced(&html);
}

/// A run with the eBPF probes' data: the lock table carries a type and a stack, and exact
/// softirq time per CPU gets its own chart beside /proc/stat's ticks.
#[test]
fn probe_data_draws_lock_stacks_and_exact_softirq() {
    use netceil_model::{names as n, LockStat, MetricId, Unit};
    let mut run = common::full_run();
    run.locks.insert(
        0,
        LockStat {
            name: "UDP receive queue lock (sk_receive_queue.lock) spinlock 0xffff888000001000"
                .into(),
            caller: Some("__udp_enqueue_schedule_skb+0x16e".into()),
            count: 5000,
            contended: Some(5000),
            wait_total_s: 20.0,
            wait_max_s: Some(0.001),
            kind: Some("spinlock".into()),
            stack: vec![
                "_raw_spin_lock+0x3b".into(),
                "__udp_enqueue_schedule_skb+0x16e".into(),
                "udp_queue_rcv_one_skb+0x2ed".into(),
            ],
            ..Default::default()
        },
    );
    let rows = run.series.len();
    for cpu in ["0", "1"] {
        let id = MetricId::new(n::SOFTIRQ_EXACT_PCT).with(n::LABEL_CPU, cpu);
        for r in 0..rows {
            run.series.set_at(r, &id, Unit::Percent, 40.0 + r as f64);
        }
    }
    let html = html_report(&[run]);
    assert!(html.contains("Softirq time per core, timed by the softirq probe"));
    assert!(html.contains("cpu0 softirq (exact)"));
    assert!(html.contains("<summary>stack: UDP receive queue lock"));
    assert!(html.contains("udp_queue_rcv_one_skb+0x2ed"));
    assert!(html.contains(">spinlock</td>"), "the lock's type column");
    assert_balanced(&html);
    // Without the probe, no such chart.
    assert!(!html_report(&[common::full_run()]).contains("timed by the softirq probe"));
}

/// The verdict and its evidence come first, then the workload in words and the ceiling,
/// then the charts; the raw parameters are folded away below.
#[test]
fn verdict_then_workload_then_ceiling_then_charts() {
    let run: Run = serde_json::from_str(include_str!("fixtures/run-udp.json")).unwrap();
    let html = html_report(&[run]);
    let at = |s: &str| {
        html.find(s)
            .unwrap_or_else(|| panic!("the report lacks {s:?}"))
    };
    let verdict = at(">Verdict</h");
    let evidence = at("<strong>Evidence</strong>");
    let workload =
        at("<strong>Workload:</strong> UDP, 18-byte payloads, unpaced, 1 flow, 3 s, loopback.");
    let ceiling = at(">Ceiling</h");
    let chart = at("<svg");
    let params = at("<details><summary>The workload's parameters, as stored</summary>");
    assert!(verdict < evidence && evidence < workload && workload < ceiling && ceiling < chart);
    assert!(
        chart < params,
        "the raw parameters come after the charts, folded"
    );
    assert!(
        html[..chart].contains("20.6 Mbit/s (143 kpps)"),
        "the ceiling as measured"
    );
    assert_balanced(&html);
}

/// Several runs of one request/response workload: a latency CDF over all of them, box
/// plots over the repeats, and a verdict line per run before any chart.
#[test]
fn repeats_get_box_plots_and_latency_gets_a_cdf() {
    let base = common::full_run();
    let runs: Vec<Run> = [1.0, 0.9, 1.1]
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut r = base.clone();
            r.run_id = format!("r-{}", i + 1);
            let res = r.results.as_mut().unwrap();
            res.rx_app_bits_per_s *= f;
            res.latency_us.as_mut().unwrap().p99 *= f;
            r
        })
        .collect();
    let html = html_report(&runs);
    for want in [
        "<h3>Repeats</h3>",
        "Received by the application, over repeats",
        "Latency p99, over repeats",
        "Request/response latency, cumulative",
        "class=\"verdicts\"",
    ] {
        assert!(html.contains(want), "the report lacks {want:?}");
    }
    assert!(html.find("class=\"verdicts\"") < html.find("<svg"));
    // The table gives the measured median and range of the three runs.
    assert!(html.contains("<td class=\"num\">3</td>"));
    assert!(
        html.contains("1.00 Gbit/s</td>"),
        "the median of 0.9, 1.0, 1.1 Gbit/s"
    );
    assert!(html.contains("900 Mbit/s – 1.10 Gbit/s"), "the range");
    // Runs of different workloads are not repeats.
    let mut other = base.clone();
    other.workload = None;
    assert!(!html_report(&[base, other]).contains("<h3>Repeats</h3>"));
    assert_balanced(&html);
}

/// A TCP search's page answers in its own terms: the bound, the goodput found, the trial that
/// verified it, each trial's asked and reached goodput and retransmitted share, and charts of
/// those, not packet rates and losses.
#[test]
fn a_tcp_search_shows_goodput_and_retransmits_not_packets() {
    use netceil_model::params::{Params, TcpParams};
    use netceil_model::{
        FlowResult, Knee, KneeGoal, Results, RunSource, SearchBound, SearchRateUnit, Workload,
        WorkloadKind,
    };
    let trial = |i: usize, asked: f64, got: f64, retrans: u64| {
        let mut p = Run::new(format!("s.{i}"), RunSource::Live);
        p.workload = Some(Workload {
            kind: WorkloadKind::Tcp,
            params: Params::Tcp(TcpParams {
                flows: 2,
                msg_size: 131072,
                rate_per_flow_bps: Some(asked / 2.0),
                duration_s: 1.0,
                threads: 1,
                ipv6: false,
                target: None,
                pacing: Default::default(),
                rx_cpu: None,
                tx_cpu: None,
                congestion: None,
                direction: Default::default(),
                rcvbuf: Default::default(),
                sink_wakes: Default::default(),
            }),
        });
        p.results = Some(Results {
            duration_s: 1.0,
            rx_app_bits_per_s: got,
            flows: vec![FlowResult {
                flow: 0,
                retransmits: Some(retrans),
                segments_out: Some(10_000),
                ..Default::default()
            }],
            ..Default::default()
        });
        p
    };
    let mut run = Run::new("s", RunSource::Live);
    run.parts = vec![
        trial(1, 1e9, 0.999e9, 0),
        trial(2, 4e9, 2.5e9, 300),
        trial(3, 2e9, 1.99e9, 0),
    ];
    run.knees = vec![Knee {
        size_bytes: 131072,
        point: "app".into(),
        loss_tolerance: 0.0,
        min_interval_us: None,
        rate_pps: None,
        bits_per_s: Some(1.99e9),
        loss_ratio: None,
        trials: 3,
        generator_limited: false,
        verified: true,
        upper_pps: None,
        stopped_by: None,
        note: None,
        goal: Some(KneeGoal {
            bound: SearchBound::Retransmits { max_ratio: 0.0 },
            rate: Some(1.99e9),
            unit: SearchRateUnit::GoodputBitsPerSecond,
            upper: Some(4e9),
            seen: Some(0.0),
            verified_by: Some("s.3".into()),
        }),
    }];
    let html = html_report(&[run]);
    for want in [
        "retrans ≤ 0 %",
        "Trials: the share of segments retransmitted",
        "Trials: the rate each one reached, in order",
        ">verified by<",
        ">s.3<",
        "3.0000 %",
        ">retransmitted<",
    ] {
        assert!(html.contains(want), "the page lacks {want:?}");
    }
    assert!(!html.contains("unpaced"), "every trial was paced");
    assert!(
        !html.contains("rate pps"),
        "a UDP knee table for a TCP search"
    );
    assert_balanced(&html);
}
