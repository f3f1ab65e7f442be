//! /proc snapshots (sosreport style): one snapshot gives since-boot totals and spread facts,
//! two give rates. Real captures from this VM and from the probe's fixtures, hand-made
//! sosreport excerpts, and malformed variants.

mod mutate;

use netceil_import::{detect, import, Format, ImportOptions, Imported};
use netceil_model::names::*;
use netceil_model::{MetricId, Unit};
use proptest::prelude::*;

use mutate::fixture;

fn opts(interval_s: Option<f64>) -> ImportOptions {
    ImportOptions {
        file: "sosreport/proc/x".into(),
        interval_s,
        ..ImportOptions::default()
    }
}

fn read_text(text: &str, interval_s: Option<f64>) -> Imported {
    assert_eq!(detect(text), Ok(Format::ProcSnapshot));
    import(Format::ProcSnapshot, text, &opts(interval_s)).unwrap_or_else(|e| panic!("{e}"))
}

fn read(name: &str, interval_s: Option<f64>) -> Imported {
    read_text(&fixture(&format!("proc/{name}")), interval_s)
}

fn one(imp: &Imported, id: &MetricId) -> f64 {
    let m = imp.run.series.get(id).unwrap_or_else(|| panic!("no {id}"));
    assert_eq!(m.values.len(), 1);
    m.values[0].unwrap()
}

fn cpu(name: &str, n: u32) -> MetricId {
    MetricId::new(name).with("cpu", n.to_string())
}

#[test]
fn one_interrupts_snapshot_all_nic_queues_on_cpu0() {
    let imp = read("interrupts-sosreport-all-on-cpu0.txt", None);
    let s = &imp.run.series;
    assert_eq!(
        (s.interval_s, s.t_s.clone()),
        (0.0, vec![0.0]),
        "a snapshot, not rates"
    );
    assert_eq!(
        one(&imp, &cpu(NIC_IRQ_TOTAL, 0)),
        4_504_546.0,
        "the bare eth0 link vector is not a queue"
    );
    assert_eq!(one(&imp, &cpu(NIC_IRQ_TOTAL, 3)), 0.0);
    let q2 = MetricId::new(NIC_IRQ_TOTAL)
        .with("irq", "26")
        .with("iface", "eth0")
        .with("queue", "2")
        .with("dir", "rxtx");
    assert_eq!(one(&imp, &q2), 1_150_021.0);
    assert_eq!(s.get(&cpu(NIC_IRQ_TOTAL, 0)).unwrap().unit, Unit::Count);
    assert!(
        imp.run
            .notes
            .iter()
            .any(|n| n.contains("4 NIC queue interrupts: eth0 rxtx q0 (irq 24)")),
        "{:?}",
        imp.run.notes
    );
    assert!(
        imp.run.notes.iter().any(|n| n
            .starts_with("NIC queue interrupts (since boot) by CPU: cpu0 100.0 %")
            && n.contains("all of it on CPU 0")),
        "{:?}",
        imp.run.notes
    );
}

#[test]
fn one_softirqs_snapshot_net_rx_on_one_cpu() {
    let imp = read("softirqs-sosreport-net-rx-cpu0.txt", None);
    assert_eq!(one(&imp, &MetricId::new(SOFTIRQ_NET_RX_TOTAL)), 9_924_254.0);
    assert_eq!(one(&imp, &cpu(SOFTIRQ_NET_TX_TOTAL, 1)), 120.0);
    assert!(
        imp.run.notes.iter().any(|n| n
            .contains("NET_RX softirqs (since boot) by CPU: cpu0 100.0 %")
            && n.contains("all of it on CPU 0")),
        "{:?}",
        imp.run.notes
    );
    // A spread one: no verdict.
    let imp = read("softirqs-6.18-vm-2cpu.txt", None);
    assert!(
        imp.run
            .notes
            .iter()
            .any(|n| n.starts_with("NET_RX softirqs (since boot) by CPU")),
        "{:?}",
        imp.run.notes
    );
}

#[test]
fn one_softnet_snapshot_totals_drops_and_squeezes() {
    let imp = read("softnet-5.10.47-13col.txt", None);
    assert_eq!(one(&imp, &cpu(SOFTNET_PROCESSED_TOTAL, 0)), 425_859.0);
    assert_eq!(
        one(&imp, &MetricId::new(SOFTNET_TIME_SQUEEZE_TOTAL)),
        1092.0
    );
    assert_eq!(one(&imp, &MetricId::new(SOFTNET_DROPPED_TOTAL)), 0.0);
    assert_eq!(one(&imp, &cpu(SOFTNET_BACKLOG_LEN, 1)), 0.0);
    assert!(
        imp.run
            .notes
            .iter()
            .any(|n| n.contains("0 packets dropped") && n.contains("1092 time squeezes")),
        "{:?}",
        imp.run.notes
    );
    let old = read("softnet-2.6.32-9col.txt", None);
    assert!(old
        .run
        .notes
        .iter()
        .any(|n| n.contains("CPU numbers are row numbers")));
}

#[test]
fn one_snmp_netstat_and_net_dev_snapshot_keep_every_counter() {
    let imp = read("netstat-6.18-vm.txt", None);
    let id = MetricId::new(SNMP_COUNTER_TOTAL)
        .with("proto", "TcpExt")
        .with("counter", "TCPTimeouts");
    assert!(imp.run.series.get(&id).is_some());
    let imp = read("net-dev-6.18-vm.txt", None);
    let id = MetricId::new(NET_DEV_COUNTER_TOTAL)
        .with("iface", "lo")
        .with("counter", "rx_bytes");
    assert_eq!(one(&imp, &id), 17_695_516_453.0);
    let text = fixture("proc/snmp-6.18-vm-two.txt");
    let first: String = text
        .lines()
        .skip(1)
        .take(12)
        .map(|l| format!("{l}\n"))
        .collect();
    let imp = read_text(&first, None);
    let id = MetricId::new(SNMP_COUNTER_TOTAL)
        .with("proto", "Udp")
        .with("counter", "RcvbufErrors");
    assert_eq!(one(&imp, &id), 8_038_643.0);
    assert!(
        imp.run
            .notes
            .iter()
            .any(|n| n.contains("Udp RcvbufErrors 8038643")),
        "{:?}",
        imp.run.notes
    );
}

#[test]
fn two_snapshots_with_timestamps_give_rates() {
    // `date +%s.%N` before each /proc/interrupts.
    let imp = read("interrupts-6.18-vm-two.txt", None);
    let dt = 2.374_323_212; // 1795306410.566488228 − 1795306408.192165016
    assert!(
        (imp.run.series.t_s[0] - dt).abs() < 1e-6,
        "{:?}",
        imp.run.series.t_s
    );
    assert!(imp.run.series.get(&cpu(NIC_IRQ_PER_S, 0)).is_some());
    let rx_queue = MetricId::new(IRQ_PER_S)
        .with("irq", "38")
        .with("device", "virtio2")
        .with("queue", "0")
        .with("dir", "rx");
    assert!(imp.run.series.get(&rx_queue).is_some());
    assert!(imp
        .run
        .notes
        .iter()
        .any(|n| n.contains("from the timestamps")));
    // ISO 8601 with a decimal comma (`date --iso-8601=ns`) before /proc/softirqs.
    let imp = read("softirqs-6.18-vm-two.txt", None);
    let dt = 30.575_921_116 - 28.204_279_146;
    let rate = imp
        .run
        .series
        .get(&cpu(SOFTIRQ_NET_RX_PER_S, 1))
        .unwrap()
        .values[0]
        .unwrap();
    // Seconds since the epoch in an f64 keep about 0.1 µs: relative, not absolute, equality.
    assert!(
        (rate / ((134_573_015.0 - 134_379_512.0) / dt) - 1.0).abs() < 1e-6,
        "{rate}"
    );
    assert!(
        imp.run
            .notes
            .iter()
            .any(|n| n.contains("all of it on CPU 1")),
        "{:?}",
        imp.run.notes
    );
    // `---- date ----` separators before /proc/net/snmp: 2 s apart.
    let imp = read("snmp-6.18-vm-two.txt", None);
    let rcvbuf = imp
        .run
        .series
        .total(UDP_RCVBUF_ERRORS_PER_S)
        .unwrap()
        .values[0]
        .unwrap();
    assert_eq!(rcvbuf, (8_127_769.0 - 8_038_643.0) / 2.0);
    let generic = MetricId::new(SNMP_COUNTER_PER_S)
        .with("proto", "Udp")
        .with("counter", "RcvbufErrors");
    assert_eq!(
        imp.run.series.get(&generic).unwrap().values[0],
        Some(rcvbuf)
    );
    assert!(
        imp.run
            .series
            .get(
                &MetricId::new(SNMP_COUNTER_PER_S)
                    .with("proto", "Tcp")
                    .with("counter", "CurrEstab")
            )
            .is_none(),
        "a gauge is not a rate"
    );
    // Epoch seconds before /proc/net/dev.
    let imp = read("net-dev-6.18-vm-two.txt", None);
    let lo = imp
        .run
        .series
        .get(&MetricId::new(IFACE_RX_BITS_PER_S).with("iface", "lo"))
        .unwrap();
    assert_eq!(
        lo.values[0],
        Some((770_486_529_055.0 - 770_442_413_782.0) * 8.0 / 2.0)
    );
    assert_eq!(imp.run.meta.started_unix_s, 1_795_306_408.0);
}

#[test]
fn two_snapshots_without_timestamps_need_an_interval() {
    let imp = read("softnet-6.18-vm-two.txt", None);
    assert_eq!(imp.run.series.t_s, vec![0.0]);
    assert!(
        imp.warnings
            .iter()
            .any(|w| w.contains("no time between them")),
        "{:?}",
        imp.warnings
    );
    assert!(
        imp.run
            .notes
            .iter()
            .any(|n| n.contains("counts between the first and last snapshot")),
        "{:?}",
        imp.run.notes
    );
    let imp = read("softnet-6.18-vm-two.txt", Some(2.0));
    assert_eq!(imp.run.series.t_s, vec![2.0]);
    let p1 = imp
        .run
        .series
        .get(&cpu(SOFTNET_PROCESSED_PER_S, 1))
        .unwrap()
        .values[0]
        .unwrap();
    assert_eq!(p1, f64::from(0x082b_e135u32 - 0x0828_ed52) / 2.0);
    assert!(imp.run.notes.iter().any(|n| n.contains("--interval")));
}

#[test]
fn softnet_snapshots_back_to_back_split_on_the_cpu_column() {
    let one = fixture("proc/softnet-5.10.47-13col.txt");
    let later = one.replacen("00067f83", "00068f83", 1);
    let imp = read_text(&format!("{one}{later}"), Some(10.0));
    let p0 = imp
        .run
        .series
        .get(&cpu(SOFTNET_PROCESSED_PER_S, 0))
        .unwrap()
        .values[0];
    assert_eq!(p0, Some(f64::from(0x1000u32) / 10.0));
}

#[test]
fn counters_going_backwards_are_missing_not_spikes() {
    let text = "   CPU0 CPU1\nNET_RX: 100 200\nNET_TX: 5 5\n----\n   CPU0 CPU1\nNET_RX: 50 300\nNET_TX: 6 5\n";
    let imp = read_text(text, Some(1.0));
    let s = &imp.run.series;
    assert_eq!(
        s.get(&cpu(SOFTIRQ_NET_RX_PER_S, 1)).unwrap().values,
        vec![Some(100.0)]
    );
    assert!(s.get(&cpu(SOFTIRQ_NET_RX_PER_S, 0)).is_none());
    assert!(
        s.missing
            .iter()
            .any(|m| m.metric == "softirq_net_rx_per_s{cpu=0}" && m.reason.contains("backwards")),
        "{:?}",
        s.missing
    );
    assert!(
        s.missing.iter().any(|m| m.metric == "softirq_net_rx_per_s"),
        "the sum is missing too"
    );
}

#[test]
fn watch_screens_give_rates_from_their_banners() {
    // Three screens copied from `watch -n 1 cat /proc/softirqs` during a loopback UDP run.
    let imp = read("watch-softirqs-3-screens.txt", None);
    let s = &imp.run.series;
    assert_eq!(s.t_s, [1.0, 2.0]);
    assert_eq!(s.interval_s, 1.0);
    let rx = s.get(&cpu(SOFTIRQ_NET_RX_PER_S, 1)).unwrap();
    assert_eq!(rx.values, [Some(321_368.0), Some(329_752.0)]);
    // Two screens: one step of one-second stamps; watch's own interval is the better figure.
    let imp = read("watch-softnet-2-screens.txt", None);
    assert_eq!(imp.run.series.t_s, [1.0]);
    assert!(
        imp.run
            .notes
            .iter()
            .any(|n| n.contains("watch's interval (1 s)")),
        "{:?}",
        imp.run.notes
    );
}

/// A softirqs screen under a watch banner stamped at `clock`, with NET_RX at `rx` on CPU0.
fn watch_screen(every: &str, clock: &str, rx: u64) -> String {
    format!(
        "Every {every}s: cat /proc/softirqs      host: Tue Nov 24 {clock} 2026\n\n                    CPU0       CPU1\n          HI:          0          0\n      NET_RX: {rx:>10}          0\n"
    )
}

#[test]
fn watch_stamps_to_the_second_are_not_taken_at_their_word() {
    // A 1.0 s watch whose two stamps read 2 s apart (10:00:00.97 → 10:00:02.01): the step is
    // watch's interval, not the stamps' 2 s, which would halve every rate.
    let text = watch_screen("1.0", "10:00:00", 0) + &watch_screen("1.0", "10:00:02", 1_000_000);
    let imp = read_text(&text, None);
    assert_eq!(imp.run.series.t_s, [1.0]);
    assert_eq!(
        imp.run
            .series
            .get(&cpu(SOFTIRQ_NET_RX_PER_S, 0))
            .unwrap()
            .values,
        [Some(1_000_000.0)]
    );
    // Four screens whose steps jitter by a second: each step is the mean over the span.
    let text = [
        (0, "10:00:00"),
        (1, "10:00:02"),
        (2, "10:00:03"),
        (3, "10:00:04"),
    ]
    .iter()
    .map(|(k, c)| watch_screen("1.0", c, k * 400_000))
    .collect::<String>();
    let imp = read_text(&text, None);
    assert!(
        imp.run
            .series
            .t_s
            .iter()
            .zip([4.0 / 3.0, 8.0 / 3.0, 4.0])
            .all(|(a, b)| (a - b).abs() < 1e-9),
        "{:?}",
        imp.run.series.t_s
    );
    assert!(
        imp.run
            .notes
            .iter()
            .any(|n| n.contains("one-second resolution")),
        "{:?}",
        imp.run.notes
    );
    // Screens far apart (taken by hand) keep their own steps.
    let text = watch_screen("1.0", "10:00:00", 0)
        + &watch_screen("1.0", "10:00:30", 3_000_000)
        + &watch_screen("1.0", "10:01:30", 9_000_000);
    let imp = read_text(&text, None);
    assert_eq!(imp.run.series.t_s, [30.0, 90.0]);
    // Banners cut before their date: watch's interval places the screens.
    let text = "Every 2.0s: cat /proc/softirqs\n\n                    CPU0\n      NET_RX:          0\nEvery 2.0s: cat /proc/softirqs\n\n                    CPU0\n      NET_RX:        100\n";
    let imp = read_text(text, None);
    assert_eq!(imp.run.series.t_s, [2.0]);
    assert_eq!(
        imp.run
            .series
            .get(&cpu(SOFTIRQ_NET_RX_PER_S, 0))
            .unwrap()
            .values,
        [Some(50.0)]
    );
}

#[test]
fn a_recording_of_watch_is_refused_with_the_fix() {
    // `script` around `watch`: the screen is drawn by cursor moves, not lines.
    let rec = "Script started on 2026-11-24 05:56:55+00:00\n\u{1b}[?1049h\u{1b}[1;20r\u{1b}[H\u{1b}[2JEvery 1.0s: cat /proc/softirqs\u{1b}[1;93Hvm: Tue Nov 24 05:56:55 2026\u{1b}[3;21HCPU0\u{1b}[32GCPU1\u{1b}[4;11HHI:\u{1b}[4;24H0\u{1b}[4;35H0\u{1b}[5;8HTIMER:     288753     256729\n";
    let reasons = detect(rec).unwrap_err();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(
        reasons[0].reason.contains("full-screen"),
        "{}",
        reasons[0].reason
    );
    assert!(
        reasons[0].reason.contains("while sleep 1"),
        "{}",
        reasons[0].reason
    );
    // Forced through the /proc reader, it is an error, not a panic.
    assert!(import(Format::ProcSnapshot, rec, &opts(None)).is_err());
}

#[test]
fn malformed_watch_screens_name_the_line() {
    let text = watch_screen("1.0", "10:00:00", 0)
        + &watch_screen("1.0", "10:00:01", 100).replace("NET_RX:        100", "NET_RX:        1x0");
    let e = import(Format::ProcSnapshot, &text, &opts(None)).unwrap_err();
    assert_eq!(e.line, 10, "{e}");
}

#[test]
fn malformed_snapshots_name_the_line_and_field() {
    let good = fixture("proc/softnet-5.10.47-13col.txt");
    let bad = good.replacen("000000c1", "0000zzc1", 1);
    let e = import(Format::ProcSnapshot, &bad, &opts(None)).unwrap_err();
    assert_eq!((e.line, e.column), (2, Some(3)), "{e}");
    assert!(e.to_string().starts_with("sosreport/proc/x: line 2, column 3: expected a hex number (time_squeeze) (as in /proc/net/softnet_stat)"), "{e}");
    // The second snapshot's error is numbered in the whole text.
    let text = fixture("proc/snmp-6.18-vm-two.txt");
    let bad = text.replacen("Udp: 251167234", "Udp: 25116x234", 1);
    let e = import(Format::ProcSnapshot, &bad, &opts(None)).unwrap_err();
    assert_eq!(
        e.line,
        text.lines()
            .position(|l| l.starts_with("Udp: 251167234"))
            .unwrap()
            + 1,
        "{e}"
    );
    let e = import(Format::ProcSnapshot, "what is this\n", &opts(None)).unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.expected.starts_with("a /proc snapshot"), "{e}");
}

#[test]
fn cut_snapshots_keep_what_is_whole() {
    let good = fixture("proc/interrupts-sosreport-all-on-cpu0.txt");
    let cut = &good[..good.find("1099310").unwrap() + 3];
    let imp = read_text(cut, None);
    assert_eq!(
        imp.run.series.get(&cpu(NIC_IRQ_TOTAL, 0)).unwrap().values[0],
        Some(1_182_093.0 + 1_073_122.0 + 1_150_021.0)
    );
    assert!(
        imp.warnings.iter().any(|w| w.contains("cut short")),
        "{:?}",
        imp.warnings
    );
    // /proc/net/snmp cut between a header and its values.
    let text = fixture("proc/snmp-6.18-vm-two.txt");
    let cut = &text[..text.rfind("Udp: 251167234").unwrap()];
    let imp = read_text(cut, None);
    assert_eq!(
        imp.run.series.len(),
        1,
        "the second snapshot, without its last table, still gives rates"
    );
    assert!(
        imp.warnings.iter().any(|w| w.contains("cut short")),
        "{:?}",
        imp.warnings
    );
}

// ---------------------------------------------------------------- fuzz

fn corpus() -> Vec<(&'static str, String)> {
    [
        "interrupts-6.18-vm-two.txt",
        "interrupts-sosreport-all-on-cpu0.txt",
        "interrupts-2.6.38-16cpu.txt",
        "softirqs-6.18-vm-two.txt",
        "softnet-6.18-vm-two.txt",
        "snmp-6.18-vm-two.txt",
        "netstat-6.18-vm.txt",
        "net-dev-6.18-vm-two.txt",
    ]
    .iter()
    .map(|n| (*n, fixture(&format!("proc/{n}"))))
    .collect()
}

proptest! {
    // Integration tests have no lib.rs for proptest to keep regressions beside; the
    // corpus and seeds are in the test, and a failure prints its minimal case.
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn fuzz_proc_reader(pick in any::<prop::sample::Index>(), muts in prop::collection::vec(mutate::mutation(), 1..4)) {
        let corpus = corpus();
        let text = mutate::apply(&corpus[pick.index(corpus.len())].1, &muts);
        let _own = mutate::check(Format::ProcSnapshot, &text)?;
    }
}

/// The snapshots of a `CPU0 CPU1 …` file (interrupts, softirqs): for each, its rows as
/// (0-based line, label, counts).
fn cpu_table_rows(text: &str) -> Vec<Vec<(usize, String, Vec<u64>)>> {
    let mut snaps: Vec<Vec<(usize, String, Vec<u64>)>> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.first().is_some_and(|f| f.starts_with("CPU")) {
            snaps.push(Vec::new());
            continue;
        }
        let (Some(label), Some(snap)) = (
            w.first().and_then(|f| f.strip_suffix(':')),
            snaps.last_mut(),
        ) else {
            continue;
        };
        let counts: Vec<u64> = w[1..].iter().map_while(|c| c.parse().ok()).collect();
        snap.push((i, label.to_string(), counts));
    }
    snaps
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]
    /// Any IRQ or softirq count lowered in a later snapshot (below its value in the one before,
    /// and not by a wrap) is marked at its line, naming the counter and both figures; the
    /// snapshots still import.
    #[test]
    fn a_counter_lowered_in_a_later_snapshot_is_marked(
        which in 0usize..3,
        pick in any::<usize>(),
    ) {
        let name = ["watch-softirqs-3-screens.txt", "interrupts-6.18-vm-two.txt", "softirqs-6.18-vm-two.txt"][which];
        let base = fixture(&format!("proc/{name}"));
        let snaps = cpu_table_rows(&base);
        // Every count of a later snapshot whose value in the snapshot before is above 0.
        let mut candidates = Vec::new();
        for k in 1..snaps.len() {
            for (line, label, counts) in &snaps[k] {
                let Some(prev) = snaps[k - 1].iter().find(|r| r.1 == *label) else { continue };
                for c in 0..counts.len() {
                    if let Some(&before) = prev.2.get(c).filter(|b| **b > 0) {
                        candidates.push((*line, label.clone(), counts.len(), c, before));
                    }
                }
            }
        }
        let (line, label, columns, c, before) = candidates[pick % candidates.len()].clone();
        let lowered = before / 2;
        let mut lines: Vec<String> = base.lines().map(str::to_string).collect();
        let mut w: Vec<String> = lines[line].split_whitespace().map(str::to_string).collect();
        w[1 + c] = lowered.to_string();
        lines[line] = w.join(" ");
        let text = lines.join("\n") + "\n";
        let imp = import(Format::ProcSnapshot, &text, &opts(Some(1.0))).unwrap_or_else(|e| panic!("{e}"));
        let key = if columns == 1 { label.clone() } else { format!("{label}/cpu{c}") };
        let words = format!("{key} {before} → {lowered} (line {})", line + 1);
        prop_assert!(
            imp.run.meta.implausible.iter().any(|f| f.what.contains(&words)),
            "{name}: {words}: {:#?}", imp.run.meta.implausible
        );
    }
}

/// Every fixture of the corpus under the fixed mutations: no reader panics, every refusal
/// names the file, a line and what was expected, and the outcomes are what the mutations
/// imply (see `mutate::sweep`).
#[test]
fn fixed_mutations_of_every_proc_fixture() {
    for (name, text) in corpus() {
        mutate::sweep(Format::ProcSnapshot, name, &text, true);
    }
}
