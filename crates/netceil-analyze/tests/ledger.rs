//! One ledger built by hand from a real run, checked against the analyzer's.
//!
//! The fixture is a run recorded on this project's 2-core test machine (bench/diagnose.sh,
//! train set, `taskset -c 0 netceil run udp --size 64 --duration 5`): netceil held to CPU 0,
//! its sender and receiver and loopback's receive softirq sharing that one core while CPU 1
//! idled, 45 % of the datagrams dropped at the receive socket in every interval.
//!
//! By hand, from the figures in the file:
//! - CPU 0 was 100 % busy in every row: a core the workload may use, full. Its threads got
//!   65.0 % (sender: 65.0, 64.6, 65.4 over the rows the load ran) and 34.3 % (receiver: 34.0,
//!   34.8, 34.2) of it, and the sender was preempted 111 k times a second: neither had the core
//!   to itself. So the core is the ceiling (`hot_cpu`, the threads crowded onto it).
//! - The socket dropped 593 052 of 1 315 584 datagrams, in every interval, behind a reader that
//!   got a third of a full core: a reader slower on average than the arrivals, so a bigger
//!   buffer would gain nothing. The drops follow the core.
//! - Delivered over offered: 722 532 / 1 315 584 = 0.549: where loss began, it follows too.
//! - The sender, on the core it shares, is a symptom of the same core; the receiver had room
//!   only in the sense that it got what the core left.
//! - CPU 1 is outside the workload's affinity mask: no headroom there, no entry.

use netceil_analyze::{ledgers, Options};
use netceil_model::{EntryState, Ledger, Run};

fn fixture() -> Run {
    let text = include_str!("fixtures/taskset-one-core-unpaced.json");
    serde_json::from_str(text).expect("the fixture is a Run")
}

fn ledger() -> Ledger {
    let mut all = ledgers(&fixture(), &Options::default());
    assert_eq!(all.len(), 1);
    all.remove(0).1
}

#[test]
fn the_hand_built_ledger_of_a_starved_reader_matches() {
    let l = ledger();
    let by_hand: [(&str, &str, EntryState, Option<f64>); 5] = [
        ("cpu:0", "hot_cpu", EntryState::Binds, Some(1.0)),
        (
            "queue:the_receive_socket's_buffer",
            "buffer_drops",
            EntryState::Symptom,
            None,
        ),
        (
            "delivery",
            "saturation",
            EntryState::Symptom,
            Some(722_532.0 / 1_315_584.0),
        ),
        (
            "thread:32087",
            "sender_saturated",
            EntryState::Symptom,
            Some((65.0 + 64.6 + 65.4) / 300.0),
        ),
        (
            "thread:32086",
            "thread_saturated",
            EntryState::Headroom,
            Some((34.0 + 34.8 + 34.2) / 300.0),
        ),
    ];
    let got: Vec<(&str, &str, EntryState)> = l
        .entries
        .iter()
        .map(|e| (e.id.as_str(), e.cause.as_str(), e.state))
        .collect();
    let want: Vec<(&str, &str, EntryState)> =
        by_hand.iter().map(|(i, c, s, _)| (*i, *c, *s)).collect();
    assert_eq!(got, want, "{l:#?}");
    for (e, (_, _, _, share)) in l.entries.iter().zip(by_hand) {
        match (e.share, share) {
            (Some(g), Some(w)) => assert!((g - w).abs() < 0.01, "{}: {g} against {w}", e.id),
            (g, w) => assert_eq!(g.is_some(), w.is_some(), "{}: {g:?}", e.id),
        }
    }
    // Every symptom names the core it follows; the verdict names what it explains.
    for e in &l.entries[1..4] {
        assert_eq!(e.explained_by.as_deref(), Some("cpu:0"), "{}", e.id);
    }
    assert_eq!(l.entries[0].explains.len(), 3);
    // Nothing the workload may use bounds relieving the core: CPU 1 is not its to use.
    let g = l.entries[0].gain.as_ref().expect("the verdict has a gain");
    assert_eq!(g.factor, None, "{g:?}");
    assert!(l.verdict.starts_with("cpu:0 binds"), "{}", l.verdict);
}

#[test]
fn the_verdicts_sentence_carries_the_ledgers_numbers() {
    let run = fixture();
    let f = netceil_analyze::analyze(&run);
    assert_eq!(f[0].cause, "hot_cpu");
    // 100 % busy, the two threads' shares and their sum, as in the ledger.
    for number in [
        "100 % busy",
        "34.3 % of a core",
        "65.0 % of a core",
        "99.3 % of it",
    ] {
        assert!(
            f[0].summary.contains(number) || f[0].evidence.iter().any(|e| e.text.contains(number)),
            "{number} not in {f:#?}",
            f = f[0]
        );
    }
    assert!(
        f[0].alternatives[0].starts_with("explains the buffer_drops finding"),
        "{:?}",
        f[0].alternatives
    );
}
