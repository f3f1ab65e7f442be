//! A sender pointed at a standalone receiver (`netceil recv`), and the receiver's replies:
//! `FinReport` for a finished flow, `Response` for a `Request`, foreign datagrams set apart.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use netceil_load::header::{FarKernel, Header, Kind, HEADER_LEN};
use netceil_load::udp::{run_udp, serve_udp, KernelProbe, UdpConfig, UdpReceiver};
use netceil_model::Rate;

static SERIAL: Mutex<()> = Mutex::new(());

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

#[test]
fn sender_learns_receiver_figures_from_fin_report() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // A big buffer: this checks the end-of-flow report, not the system's default buffer.
    let rx = UdpReceiver::spawn(loopback(), Some(4 << 20), common::euid_is_root()).unwrap();
    let cfg = UdpConfig {
        target: Some(rx.local_addr()),
        rate: Some(Rate::PacketsPerSecond(50_000.0)),
        count: Some(20_000),
        flows: 3,
        run_id: 77,
        duration: Duration::from_secs(5),
        ..UdpConfig::default()
    };
    let stop = AtomicBool::new(false);
    let o = run_udp(&cfg, &stop, &mut |_| {}).unwrap();
    let r = &o.results;
    assert!(o.receiver_reported, "{:?}", r.notes);
    assert_eq!(o.rcvbuf_granted, None);
    assert_eq!(o.receiver_port, rx.local_addr().port());
    assert_eq!(r.tx_packets, 20_000);
    assert_eq!(r.rx_app_packets, 20_000, "{r:#?}");
    assert_eq!(r.lost_packets, 0);
    assert_eq!(r.kernel.socket_drops, Some(0));
    assert_eq!(r.unexplained_packets, 0);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("FinReport (3 of 3 flows")),
        "{:?}",
        r.notes
    );

    let report = rx.stop().unwrap();
    assert_eq!(report.flows.len(), 3);
    assert_eq!(report.rx_packets, 20_000);
    assert!(report.fin_reports_sent >= 3);
    for f in &report.flows {
        assert_eq!(f.run_id, 77);
        assert_eq!(f.sender_count, Some(f.received), "{f:?}");
        assert_eq!(f.lost, 0);
    }
}

#[test]
fn fin_reports_carry_the_far_machines_kernel_counters() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // A probe that counts its reads: the interface count grows by 1000 per read, the backlog
    // drops go backwards once (a reset) so that their delta must be unknown.
    let reads = Arc::new(AtomicU64::new(0));
    let peers = Arc::new(Mutex::new(Vec::new()));
    let (r2, p2) = (reads.clone(), peers.clone());
    let probe: KernelProbe = Arc::new(move |peer: SocketAddr| {
        let k = r2.fetch_add(1, Ordering::SeqCst);
        p2.lock().unwrap().push(peer);
        FarKernel {
            iface: Some("lo".into()),
            iface_rx_packets: Some(5_000 + 1_000 * k),
            backlog_drops: Some(if k == 0 { 9 } else { 3 }),
            udp_rcvbuf_errors: Some(40 + 2 * k),
            udp_in_errors: None,
        }
    });
    let rx = UdpReceiver::spawn_with(
        loopback(),
        Some(4 << 20),
        common::euid_is_root(),
        Some(probe),
    )
    .unwrap();
    let cfg = UdpConfig {
        target: Some(rx.local_addr()),
        rate: Some(Rate::PacketsPerSecond(50_000.0)),
        count: Some(5_000),
        flows: 2,
        run_id: 78,
        duration: Duration::from_secs(5),
        ..UdpConfig::default()
    };
    let stop = AtomicBool::new(false);
    let o = run_udp(&cfg, &stop, &mut |_| {}).unwrap();
    let r = &o.results;
    assert!(o.receiver_reported, "{:?}", r.notes);
    assert_eq!(r.kernel.iface.as_deref(), Some("lo"));
    let delta = r.kernel.iface_rx_packets.expect("an interface delta");
    assert!(delta >= 1_000 && delta.is_multiple_of(1_000), "{delta}");
    assert_eq!(r.rx_kernel_packets, Some(delta));
    assert_eq!(
        r.kernel.backlog_drops, None,
        "a counter that went back has no delta"
    );
    assert_eq!(r.kernel.udp_rcvbuf_errors, Some(2 * delta / 1_000));
    assert_eq!(r.kernel.udp_in_errors, None);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("kernel counters come from its FinReport")),
        "{:?}",
        r.notes
    );
    drop(rx);
    // One baseline for the run (not one per flow), then one read per Fin answered.
    let n = reads.load(Ordering::SeqCst);
    assert!((3..=20).contains(&n), "{n} probe reads");
    assert!(peers.lock().unwrap().iter().all(|p| p.ip().is_loopback()));
}

#[test]
fn a_receiver_without_a_probe_says_what_is_not_checked() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rx = UdpReceiver::spawn(loopback(), Some(1 << 20), false).unwrap();
    let cfg = UdpConfig {
        target: Some(rx.local_addr()),
        count: Some(100),
        run_id: 79,
        ..UdpConfig::default()
    };
    let stop = AtomicBool::new(false);
    let o = run_udp(&cfg, &stop, &mut |_| {}).unwrap();
    assert!(o.receiver_reported);
    assert_eq!(o.results.kernel.iface, None);
    assert!(o
        .results
        .notes
        .iter()
        .any(|n| n.contains("sent no kernel counters")));
}

#[test]
fn silent_target_leaves_receiver_figures_unknown() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // A bound socket that never reads: no FinReport ever comes back.
    let sink = UdpSocket::bind(loopback()).unwrap();
    let cfg = UdpConfig {
        target: Some(sink.local_addr().unwrap()),
        count: Some(100),
        run_id: 5,
        ..UdpConfig::default()
    };
    let stop = AtomicBool::new(false);
    let o = run_udp(&cfg, &stop, &mut |_| {}).unwrap();
    assert!(!o.receiver_reported);
    assert_eq!(o.results.tx_packets, 100);
    assert!(o.results.notes.iter().any(|n| n.contains("never answered")));
}

#[test]
fn requests_are_echoed_as_responses_and_foreign_datagrams_set_apart() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rx = UdpReceiver::spawn(loopback(), Some(1 << 20), false).unwrap();
    let client = UdpSocket::bind(loopback()).unwrap();
    client.connect(rx.local_addr()).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut req = vec![0xA5u8; 200];
    Header {
        kind: Kind::Request,
        run_id: 9,
        flow: 2,
        seq: 41,
        ts_ns: 123_456,
    }
    .write(&mut req);
    client.send(&req).unwrap();
    let mut buf = [0u8; 1024];
    let n = client.recv(&mut buf).unwrap();
    assert_eq!(n, 200);
    let h = Header::read(&buf[..n]).unwrap();
    assert_eq!(h.kind, Kind::Response);
    assert_eq!((h.run_id, h.flow, h.seq, h.ts_ns), (9, 2, 41, 123_456));
    assert_eq!(&buf[HEADER_LEN..n], &req[HEADER_LEN..]);

    client.send(b"not netceil").unwrap();
    client.send(&[0u8; 64]).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let report = rx.stop().unwrap();
    assert_eq!(report.requests_echoed, 1);
    assert_eq!(report.foreign_packets, 2);
    assert_eq!(report.rx_packets, 0, "requests are not load");
    assert!(report.rcvbuf_granted >= 1 << 20);
}

#[test]
fn serve_udp_counts_and_stops_on_request() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Find a free port, then serve on it.
    let port = UdpSocket::bind(loopback())
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let stop = AtomicBool::new(false);
    let report = std::thread::scope(|s| {
        let server = s.spawn(|| {
            let mut ticks = 0;
            serve_udp(
                listen,
                None,
                false,
                &stop,
                Some(Duration::from_secs(10)),
                None,
                &mut |_| ticks += 1,
            )
        });
        std::thread::sleep(Duration::from_millis(100));
        let tx = UdpSocket::bind(loopback()).unwrap();
        let mut d = [0u8; 64];
        // Sequence numbers 0..100 with 10..20 missing and 5 sent twice.
        for seq in (0..100u32).filter(|s| !(10..20).contains(s)).chain([5]) {
            Header {
                kind: Kind::Data,
                run_id: 3,
                flow: 0,
                seq,
                ts_ns: 0,
            }
            .write(&mut d);
            tx.send_to(&d, listen).unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
        stop.store(true, Ordering::Relaxed);
        server.join().unwrap().unwrap()
    });
    assert_eq!(report.local_addr, listen);
    assert_eq!(report.rx_packets, 90);
    assert_eq!(report.rx_bytes, 90 * 64);
    assert_eq!(report.lost, 10);
    assert_eq!(report.duplicates, 1);
    assert_eq!(report.flows[0].sender_count, None);
    assert!(report.notes.iter().any(|n| n.contains("without a Fin")));
}

#[test]
fn serve_udp_reports_an_address_it_cannot_bind() {
    let taken = UdpSocket::bind(loopback()).unwrap();
    let stop = AtomicBool::new(false);
    let err = serve_udp(
        taken.local_addr().unwrap(),
        None,
        false,
        &stop,
        Some(Duration::from_millis(10)),
        None,
        &mut |_| {},
    )
    .unwrap_err();
    assert!(err.is_usage());
    assert!(err.to_string().contains("cannot bind"), "{err}");
}
