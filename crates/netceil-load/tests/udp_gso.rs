//! UDP GSO on send and GRO on receive, over loopback: every datagram of a super-buffer is
//! counted by its own header, so the accounting is as exact as without them.
//!
//! One test at a time (a shared lock), as in udp_loopback.rs.

mod common;

use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;

use netceil_load::udp::{run_udp, UdpConfig, UdpOutcome};
use netceil_model::Rate;

static SERIAL: Mutex<()> = Mutex::new(());

fn run(cfg: &UdpConfig) -> UdpOutcome {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let stop = AtomicBool::new(false);
    run_udp(cfg, &stop, &mut |_| {}).expect("run_udp")
}

/// 1400-byte datagrams, 32 per scheduled send (so a GSO send carries 32), 4 MiB of receive
/// buffer (forced when root) so that a busy test machine does not drop what the test counts.
fn paced(count: u64) -> UdpConfig {
    UdpConfig {
        run_id: 0x6505,
        payload_bytes: 1400,
        rate: Some(Rate::PacketsPerSecond(40_000.0)),
        burst: 32,
        count: Some(count),
        duration: Duration::from_secs(5),
        rcvbuf: Some(4 << 20),
        rcvbuf_force: common::euid_is_root(),
        ..UdpConfig::default()
    }
}

fn assert_exact(o: &UdpOutcome, count: u64) {
    let r = &o.results;
    assert_eq!(r.tx_packets, count, "{r:#?}");
    assert_eq!(r.rx_app_packets, count, "{r:#?}");
    assert_eq!(r.rx_app_bytes, count * 1400, "{r:#?}");
    assert_eq!((r.lost_packets, r.duplicate_packets), (0, 0), "{r:#?}");
    assert_eq!(r.unexplained_packets, 0, "{r:#?}");
    assert_eq!(o.foreign_packets, 0, "{r:#?}");
}

fn note<'a>(o: &'a UdpOutcome, start: &str) -> Option<&'a str> {
    o.results
        .notes
        .iter()
        .find(|n| n.starts_with(start))
        .map(String::as_str)
}

#[test]
fn gso_sends_super_buffers_and_every_datagram_is_counted() {
    // 20 000 = 625 bursts of 32: one super-buffer each.
    let o = run(&UdpConfig {
        gso: true,
        ..paced(20_000)
    });
    assert_exact(&o, 20_000);
    let n = note(&o, "GSO CHANGES WHAT IS MEASURED").expect("a GSO note");
    // One send per burst of 32, fewer where the pacer caught up by sending bursts together.
    let sends: u64 = n
        .split("20000 datagrams went out in ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{n}"));
    assert!((20_000 / 46..=625).contains(&sends), "{n}");
    assert!(note(&o, "GRO").is_none());
}

#[test]
fn gso_with_gro_reads_coalesced_buffers_and_splits_them() {
    let o = run(&UdpConfig {
        gso: true,
        gro: true,
        ..paced(20_000)
    });
    assert_exact(&o, 20_000);
    let n = note(&o, "GRO CHANGES WHAT IS MEASURED").expect("coalesced reads: {o:#?}");
    // On loopback a GSO send reaches a GRO socket whole: all its datagrams in one read.
    assert!(n.contains("reads held 20000 datagrams"), "{n}");
}

#[test]
fn gro_alone_counts_exactly_and_says_nothing_was_coalesced() {
    let o = run(&UdpConfig {
        gro: true,
        ..paced(5_000)
    });
    assert_exact(&o, 5_000);
    assert!(
        note(&o, "GRO was on at the receiver").is_some(),
        "{:#?}",
        o.results.notes
    );
    assert!(note(&o, "GSO").is_none());
}

#[test]
fn a_last_partial_super_buffer_and_chosen_segments() {
    // Unpaced: full batches of 8 super-buffers × 7 datagrams; 1000 is no multiple of 7.
    let o = run(&UdpConfig {
        gso: true,
        gro: true,
        gso_segments: Some(7),
        rate: None,
        burst: 1,
        ..paced(1_000)
    });
    assert_exact(&o, 1_000);
    let n = note(&o, "GSO CHANGES WHAT IS MEASURED").expect("a GSO note");
    assert!(n.contains("up to 7 datagrams (9800 bytes)"), "{n}");
    assert!(n.contains("1000 datagrams went out in 143 sends"), "{n}");
}

#[test]
fn unpaced_gso_keeps_the_accounting_identity() {
    let o = run(&UdpConfig {
        gso: true,
        gro: true,
        rate: None,
        burst: 1,
        count: None,
        duration: Duration::from_millis(500),
        ..paced(0)
    });
    let r = &o.results;
    assert!(r.tx_packets > 0);
    // Sequence numbers account for every datagram sent.
    assert_eq!(
        r.tx_packets,
        r.rx_app_packets + r.lost_packets + r.in_flight_packets,
        "{r:#?}"
    );
    assert_eq!(r.duplicate_packets, 0);
    let drops = r.kernel.socket_drops.unwrap();
    if drops > 0 {
        // The socket drops whole coalesced buffers and counts each once: said, not hidden.
        assert!(r.lost_packets >= drops, "{r:#?}");
        assert!(
            note(&o, "with GRO the socket's drop counter counts the buffers").is_some(),
            "{r:#?}"
        );
    } else {
        assert_eq!(r.unexplained_packets, 0, "{r:#?}");
    }
}
