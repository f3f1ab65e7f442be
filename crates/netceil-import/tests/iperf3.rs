//! iperf3 `--json`: real captures from iperf 3.12 on loopback (client and server side; TCP,
//! UDP, `-P 4`, `-R`, `--bidir`), the 3.0/3.1 layout, `--json-stream`, an error report, a
//! document cut short, and malformed input.

mod mutate;

use netceil_import::{detect, import, Format, ImportOptions, Imported};
use netceil_model::names::*;
use netceil_model::{MetricId, PacingMode, Series, WorkloadKind};
use proptest::prelude::*;

use mutate::fixture;

fn opts() -> ImportOptions {
    ImportOptions {
        file: "iperf.json".into(),
        ..ImportOptions::default()
    }
}

fn read(name: &str) -> Imported {
    let text = fixture(&format!("iperf3/{name}"));
    assert_eq!(detect(&text), Ok(Format::Iperf3), "{name}");
    import(Format::Iperf3, &text, &opts()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn values(s: &Series, id: &MetricId) -> Vec<Option<f64>> {
    s.get(id)
        .unwrap_or_else(|| {
            panic!(
                "no {id} in {:?}",
                s.metrics
                    .iter()
                    .map(|m| m.id.to_string())
                    .collect::<Vec<_>>()
            )
        })
        .values
        .clone()
}

#[test]
fn tcp_client() {
    let imp = read("client-tcp.json");
    let run = &imp.run;
    let r = run.results.as_ref().unwrap();
    assert!(close(r.duration_s, 2.000041));
    assert_eq!(r.tx_bytes, 4_771_020_800);
    assert!(close(r.tx_bits_per_s, 19_083_691_984.314323));
    assert_eq!(r.rx_app_bytes, 4_766_957_568);
    assert!(close(r.rx_app_bits_per_s, 19_062_873_924.779_56));
    assert_eq!(r.payload_bytes, None);
    assert_eq!(r.flows.len(), 1);
    assert_eq!(r.flows[0].retransmits, Some(21));
    assert_eq!(r.flows[0].rtt_us, Some(29.0));
    assert!(
        close(r.generator.cpu_pct, 13.710847711510135),
        "the client sent: its CPU"
    );
    assert_eq!(r.generator.pacing, Some(PacingMode::None));
    let s = &run.series;
    assert_eq!(s.t_s, vec![1.000049, 2.000041]);
    assert!(close(s.interval_s, 1.0000489950180054) || close(s.interval_s, 0.9999920129776));
    let tx = values(s, &MetricId::new(LOAD_TX_BITS_PER_S));
    assert!(close(tx[0].unwrap(), 24_975_856_627.454838));
    let re = values(s, &MetricId::new(IPERF3_RETRANSMITS_PER_S));
    assert!(close(re[0].unwrap(), 9.0 / 1.0000489950180054));
    assert_eq!(
        values(s, &MetricId::new(IPERF3_RTT_US).with("flow", "1")),
        vec![Some(33.0), Some(26.0)]
    );
    assert!(
        s.get(&MetricId::new(LOAD_RX_BITS_PER_S)).is_none(),
        "the client only sent"
    );
    assert_eq!(run.workload.as_ref().unwrap().kind, WorkloadKind::Tcp);
    assert_eq!(run.meta.host.kernel.as_deref(), Some("6.18.44-fc-v657"));
    assert_eq!(run.meta.started_unix_s, 1_795_305_589.0);
    assert!(run.meta.complete);
    assert!(
        run.notes
            .iter()
            .any(|n| n.starts_with("iperf 3.12, client side, TCP test")),
        "{:?}",
        run.notes
    );
    assert!(imp.warnings.is_empty(), "{:?}", imp.warnings);
}

#[test]
fn tcp_server_side_does_not_take_zero_for_the_senders_bytes() {
    let imp = read("server-tcp.json");
    let r = imp.run.results.as_ref().unwrap();
    assert_eq!(r.rx_app_bytes, 4_766_957_568);
    assert_eq!(r.tx_bytes, 0);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("lacks the sender's totals")),
        "{:?}",
        r.notes
    );
    assert!(close(r.duration_s, 2.00052));
    let rx = values(&imp.run.series, &MetricId::new(LOAD_RX_BITS_PER_S));
    assert!(close(rx[0].unwrap(), 24_928_123_709.668106));
    assert_eq!(
        r.flows[0].bytes, 4_766_957_568,
        "the receiver's count when the sender's is 0"
    );
    assert_eq!(r.flows[0].retransmits, None);
}

#[test]
fn udp_client_loss_and_tail() {
    let imp = read("client-udp.json");
    let r = imp.run.results.as_ref().unwrap();
    assert_eq!(r.payload_bytes, Some(64));
    assert_eq!(r.frame_bytes, Some(110));
    assert_eq!(r.tx_packets, 208_770);
    assert_eq!(r.tx_bytes, 13_361_280);
    assert_eq!(r.lost_packets, 108_164);
    assert_eq!(r.rx_app_packets, 208_048 - 108_164);
    assert_eq!(r.rx_app_bytes, 6_392_576);
    assert_eq!(r.in_flight_packets, 722);
    assert_eq!(r.unexplained_packets, 0);
    assert_eq!(r.requested_pps, Some(100e6 / (8.0 * 64.0)));
    assert!(r.generator_limited, "53 of the 100 Mbit/s asked for");
    assert!(close(
        r.generator.achieved_ratio.unwrap(),
        53_130_032.343_188_72 / 100e6
    ));
    assert_eq!(r.generator.pacing, Some(PacingMode::Sleep));
    assert!(close(r.tx_pps, 208_770.0 / 2.011861));
    assert_eq!(imp.run.workload.as_ref().unwrap().kind, WorkloadKind::Udp);
    let pps = values(&imp.run.series, &MetricId::new(LOAD_TX_PPS));
    assert!(close(pps[0].unwrap(), 114_144.0 / 1.0000089406967163));
}

#[test]
fn udp_server_side_has_loss_and_jitter_per_interval() {
    let imp = read("server-udp.json");
    let r = imp.run.results.as_ref().unwrap();
    assert_eq!(r.tx_packets, 208_048, "the receiver's sequence count");
    assert_eq!(r.rx_app_packets, 99_884);
    assert_eq!(r.lost_packets, 108_164);
    assert!(r
        .notes
        .iter()
        .any(|n| n.contains("receiver's sequence count")));
    let s = &imp.run.series;
    let rx = values(s, &MetricId::new(LOAD_RX_PPS));
    assert!(close(
        rx[0].unwrap(),
        (113_937.0 - 47_723.0) / 1.0000120401382446
    ));
    let lost = values(s, &MetricId::new(LOAD_LOST_PER_S));
    assert!(close(lost[0].unwrap(), 47_723.0 / 1.0000120401382446));
    let jitter = values(s, &MetricId::new(IPERF3_JITTER_US));
    assert!(close(jitter[0].unwrap(), 1.5069268124129965));
}

#[test]
fn four_streams_give_flows_and_per_flow_series() {
    let imp = read("client-tcp-p4.json");
    let r = imp.run.results.as_ref().unwrap();
    assert_eq!(r.flows.len(), 4);
    assert_eq!(
        r.flows.iter().map(|f| f.retransmits).collect::<Vec<_>>(),
        vec![Some(1), Some(2), Some(5), Some(2)]
    );
    assert_eq!(r.tx_bytes, 4_949_278_720);
    let s = &imp.run.series;
    for flow in ["1", "2", "3", "4"] {
        assert!(s
            .get(&MetricId::new(LOAD_TX_BITS_PER_S).with("flow", flow))
            .is_some());
    }
    let sum: f64 = (1..=4)
        .map(|k| {
            values(
                s,
                &MetricId::new(LOAD_TX_BITS_PER_S).with("flow", k.to_string()),
            )[0]
            .unwrap()
        })
        .sum();
    // Streams' intervals differ by microseconds, so their rates add up to the sum's nearly.
    assert!((sum / values(s, &MetricId::new(LOAD_TX_BITS_PER_S))[0].unwrap() - 1.0).abs() < 1e-4);
    let server = read("server-tcp-p4.json");
    assert_eq!(server.run.results.as_ref().unwrap().flows.len(), 4);
}

#[test]
fn reverse_mode_client_receives() {
    let imp = read("client-reverse.json");
    let r = imp.run.results.as_ref().unwrap();
    assert_eq!(
        r.tx_bytes, 4_590_141_440,
        "the server sent; the client got its totals"
    );
    assert_eq!(r.rx_app_bytes, 4_585_553_920);
    assert!(
        close(r.generator.cpu_pct, 15.043340113171785),
        "the remote (server) sent"
    );
    assert!(imp
        .run
        .series
        .get(&MetricId::new(LOAD_RX_BITS_PER_S))
        .is_some());
    assert!(imp
        .run
        .series
        .get(&MetricId::new(LOAD_TX_BITS_PER_S))
        .is_none());
    assert!(imp
        .run
        .notes
        .iter()
        .any(|n| n.contains("server → client (-R)")));
    let server = read("server-reverse.json");
    assert!(
        server
            .run
            .series
            .get(&MetricId::new(LOAD_TX_BITS_PER_S))
            .is_some(),
        "the server sent"
    );
}

#[test]
fn bidir_has_the_reverse_direction_as_a_part() {
    let imp = read("client-bidir.json");
    let run = &imp.run;
    let fwd = run.results.as_ref().unwrap();
    assert_eq!(fwd.tx_bytes, 2_061_762_560);
    assert_eq!(fwd.rx_app_bytes, 2_060_451_840);
    assert_eq!(fwd.flows.len(), 1);
    assert_eq!(fwd.flows[0].bytes, 2_061_762_560);
    assert_eq!(run.parts.len(), 1);
    let rev = run.parts[0].results.as_ref().unwrap();
    assert_eq!(rev.tx_bytes, 1_796_997_120);
    assert_eq!(rev.rx_app_bytes, 1_793_196_032);
    assert_eq!(rev.flows.len(), 1);
    assert_eq!(
        run.parts[0]
            .meta
            .labels
            .get("direction")
            .map(String::as_str),
        Some("reverse")
    );
    assert!(run.parts[0].run_id.ends_with("-reverse"));
    let s = &run.series;
    assert!(
        s.get(&MetricId::new(LOAD_TX_BITS_PER_S)).is_some()
            && s.get(&MetricId::new(LOAD_RX_BITS_PER_S)).is_some()
    );
    let server = read("server-bidir.json");
    let fwd = server.run.results.as_ref().unwrap();
    assert_eq!((fwd.tx_bytes, fwd.rx_app_bytes), (0, 2_060_451_840));
    let rev = server.run.parts[0].results.as_ref().unwrap();
    assert_eq!((rev.tx_bytes, rev.rx_app_bytes), (1_796_997_120, 0));
    assert!(rev
        .notes
        .iter()
        .any(|n| n.contains("lacks the receiver's totals")));
}

#[test]
fn old_3_1_layouts() {
    let imp = read("client-udp-3.1-layout.json");
    let r = imp.run.results.as_ref().unwrap();
    assert_eq!(
        r.tx_packets,
        114_144 + 94_626,
        "the sender's count from its intervals"
    );
    assert_eq!(r.rx_app_packets, 208_048 - 108_164);
    assert_eq!(r.rx_app_bytes, 6_392_576);
    assert_eq!(r.in_flight_packets, 722);
    assert!(
        imp.run.series.get(&MetricId::new(LOAD_TX_PPS)).is_some(),
        "no sender flag: the client sends"
    );
    let imp = read("client-tcp-3.1-layout.json");
    let r = imp.run.results.as_ref().unwrap();
    assert_eq!(r.tx_bytes, 4_771_020_800);
    assert_eq!(r.flows[0].retransmits, Some(21));
    assert!(imp
        .run
        .series
        .get(&MetricId::new(IPERF3_RETRANSMITS_PER_S))
        .is_some());
}

#[test]
fn json_stream_reads_like_json() {
    let stream = read("client-tcp-json-stream.json");
    let plain = read("client-tcp.json");
    assert_eq!(stream.run.results, plain.run.results);
    assert_eq!(stream.run.series, plain.run.series);
}

#[test]
fn error_report_is_a_clear_error() {
    let text = fixture("iperf3/client-error-refused.json");
    assert_eq!(detect(&text), Ok(Format::Iperf3));
    let e = import(Format::Iperf3, &text, &opts()).unwrap_err();
    assert_eq!(e.line, 10);
    assert!(
        e.to_string().contains(
            "iperf3 reported the error \"unable to connect to server: Connection refused\""
        ),
        "{e}"
    );
    let e = import(
        Format::Iperf3,
        "{\"error\": \"the server is busy running a test\"}",
        &opts(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("the server is busy"), "{e}");
}

#[test]
fn cut_document_imports_what_is_complete() {
    let imp = read("client-tcp-p4-cut.json");
    assert!(!imp.run.meta.complete);
    assert!(
        imp.warnings.iter().any(|w| w.contains("cut short")),
        "{:?}",
        imp.warnings
    );
    assert_eq!(imp.run.series.len(), 1, "the first interval is whole");
    let r = imp.run.results.as_ref().unwrap();
    assert!(
        r.tx_bytes > 0
            && r.notes
                .iter()
                .any(|n| n.contains("summed from the intervals")),
        "{r:?}"
    );
}

#[test]
fn malformed_json_names_line_and_column() {
    let text = "{\n  \"start\": {\n    \"x\": 1,,\n  }\n}\n";
    let e = import(Format::Iperf3, text, &opts()).unwrap_err();
    assert_eq!((e.line, e.column.is_some()), (3, true), "{e}");
    assert!(e.expected.starts_with("valid JSON"), "{e}");
    let e = import(Format::Iperf3, "[1, 2]\n", &opts()).unwrap_err();
    assert!(e.expected.contains("iperf3"), "{e}");
    let e = import(Format::Iperf3, "{\"a\": 1}\n", &opts()).unwrap_err();
    assert!(e.expected.contains("\"start\""), "{e}");
    assert_ne!(detect("{\"a\": 1}").ok(), Some(Format::Iperf3));
    // A pasted prompt before the document is skipped.
    let plain = fixture("iperf3/client-tcp.json");
    let imp = import(
        Format::Iperf3,
        &format!("$ iperf3 -c 127.0.0.1 -J\n{plain}"),
        &opts(),
    )
    .unwrap();
    assert!(imp.warnings.iter().any(|w| w.contains("before the JSON")));
    // Two documents (a server that ran two tests): the first is read, and it is said.
    let imp = import(Format::Iperf3, &format!("{plain}{plain}"), &opts()).unwrap();
    assert!(
        imp.warnings.iter().any(|w| w.contains("only the first")),
        "{:?}",
        imp.warnings
    );
}

// ---------------------------------------------------------------- fuzz

fn corpus() -> Vec<(&'static str, String)> {
    [
        "client-tcp.json",
        "client-udp.json",
        "server-udp.json",
        "client-bidir.json",
        "client-udp-3.1-layout.json",
        "client-tcp-json-stream.json",
        "client-error-refused.json",
    ]
    .iter()
    .map(|n| (*n, fixture(&format!("iperf3/{n}"))))
    .collect()
}

proptest! {
    // Integration tests have no lib.rs for proptest to keep regressions beside; the
    // corpus and seeds are in the test, and a failure prints its minimal case.
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn fuzz_iperf3_reader(pick in any::<prop::sample::Index>(), muts in prop::collection::vec(mutate::mutation(), 1..4)) {
        let corpus = corpus();
        let text = mutate::apply(&corpus[pick.index(corpus.len())].1, &muts);
        let _own = mutate::check(Format::Iperf3, &text)?;
    }
}

/// Every fixture of the corpus under the fixed mutations: no reader panics, every refusal
/// names the file, a line and what was expected, and the outcomes are what the mutations
/// imply (see `mutate::sweep`). The error report is refused as it is: iperf3 measured nothing.
#[test]
fn fixed_mutations_of_every_iperf3_fixture() {
    for (name, text) in corpus() {
        let imports = name != "client-error-refused.json";
        mutate::sweep(Format::Iperf3, name, &text, imports);
    }
}

#[test]
fn each_sides_cpu_is_kept_and_split_over_the_threads_that_moved_the_data() {
    let client = read("client-tcp.json");
    let r = client.run.results.as_ref().unwrap();
    assert!(
        close(r.receiver_cpu_pct.unwrap(), 35.5259921900462),
        "the remote (server) received: its CPU"
    );
    let reverse = read("client-reverse.json");
    let r = reverse.run.results.as_ref().unwrap();
    assert!(
        close(r.receiver_cpu_pct.unwrap(), 38.59364486606013),
        "reversed, this host received"
    );
    // iperf 3.12 runs every stream in one thread: -P 4's totals are that thread's.
    let p4 = fixture("iperf3/client-tcp-p4.json");
    let old = import(Format::Iperf3, &p4, &opts()).unwrap();
    let (tx_old, rx_old) = {
        let r = old.run.results.as_ref().unwrap();
        (r.generator.cpu_pct, r.receiver_cpu_pct.unwrap())
    };
    // 3.16 and later run a thread per stream: per thread, a quarter of the process.
    let new = import(
        Format::Iperf3,
        &p4.replacen("\"iperf 3.12\"", "\"iperf 3.16\"", 1),
        &opts(),
    )
    .unwrap();
    let r = new.run.results.as_ref().unwrap();
    assert!(
        close(r.generator.cpu_pct, tx_old / 4.0),
        "{}",
        r.generator.cpu_pct
    );
    assert!(close(r.receiver_cpu_pct.unwrap(), rx_old / 4.0));
    assert!(
        r.notes.iter().any(|n| n.contains("a thread per stream")),
        "{:?}",
        r.notes
    );
}
