//! A session measures through the machine it is given: with a fake machine, the kernel's side
//! of a real loopback trial is the fake's, so a command can be tested against any machine.

use netceil_engine::{new_run, udp_defaults, Campaign, PartAnalysis, Replay, SessionConfig, Trial};
use netceil_model::params::{LoadParams, UdpParams};
use netceil_model::{Rate, RunSource};
use netceil_probe::FakeSource;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

fn udp(rate_pps: f64, duration_s: f64) -> LoadParams {
    LoadParams::Udp(UdpParams {
        rate: Some(Rate::PacketsPerSecond(rate_pps)),
        duration_s,
        ..udp_defaults(64)
    })
}

#[test]
fn a_campaign_on_a_fake_machine_reads_the_fakes_counters() {
    let fake = FakeSource::new();
    // The fake's lo never moves: whatever the real loopback carried, the kernel's count is 0.
    fake.set(
        "/proc/net/dev",
        "Inter-| Receive | Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n    lo: 0 7 0 0 0 0 0 0 0 7 0 0 0 0 0 0\n",
    );
    let cfg = SessionConfig {
        source: Arc::new(fake),
        ..SessionConfig::new(Duration::from_millis(100), Arc::new(AtomicBool::new(false)))
    };
    let (top, wire) = new_run(&[], RunSource::Live, &netceil_probe::ProcFs::new());
    let mut c = Campaign::start(&cfg, None, top, Replay::default()).unwrap();
    let trial = Trial::new(udp(2000.0, 0.5), wire).unwrap();
    let asked = trial.workload();
    let m = c.trial(&trial, &asked, |_| asked.clone()).unwrap();
    assert!(!m.replayed);
    // The load really went out on the real loopback...
    assert!(m.results.rx_app_packets > 100, "{:?}", m.results);
    // ...and the kernel's side is the fake machine's: lo received nothing there, and the
    // files it lacks are said, not invented.
    assert_eq!(m.results.kernel.iface_rx_packets, Some(0));
    assert!(
        m.results
            .notes
            .iter()
            .any(|n| n.contains("kernel counter unavailable: /proc/net/snmp")),
        "{:?}",
        m.results.notes
    );
    c.end(PartAnalysis::Each);
    let (run, stored) = c.finish();
    assert_eq!(stored, None);
    assert_eq!(run.parts.len(), 1);
    assert_eq!(run.parts[0].workload.as_ref(), Some(&asked));
}

#[test]
fn the_receive_buffer_note_gives_the_machines_rmem_max_as_read_through_the_source() {
    // The real kernel clamps a request four times its own rmem_max; the note names the limit
    // of the machine the session was given, a fake one whose rmem_max is small.
    let real: usize = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let fake = FakeSource::new();
    fake.set("/proc/sys/net/core/rmem_max", "4096\n");
    let cfg = SessionConfig {
        source: Arc::new(fake),
        ..SessionConfig::new(Duration::from_millis(100), Arc::new(AtomicBool::new(false)))
    };
    let (top, wire) = new_run(&[], RunSource::Live, &netceil_probe::ProcFs::new());
    let mut c = Campaign::start(&cfg, None, top, Replay::default()).unwrap();
    let LoadParams::Udp(p) = udp(1000.0, 0.2) else {
        unreachable!()
    };
    let trial = Trial::new(
        LoadParams::Udp(UdpParams {
            rcvbuf: Some(real * 4),
            ..p
        }),
        wire,
    )
    .unwrap();
    let asked = trial.workload();
    let m = c.trial(&trial, &asked, |_| asked.clone()).unwrap();
    assert!(
        m.results
            .notes
            .iter()
            .any(|n| n.contains("clamped to net.core.rmem_max = 4096 B")),
        "{:?}",
        m.results.notes
    );
    c.end(PartAnalysis::Each);
}
