//! TCP streams over loopback: accounting, remote receiver, stop, errors.

use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use netceil_load::tcp::{run_tcp, serve_tcp, TcpConfig};
use netceil_load::LoadError;
use netceil_model::TcpPacing;

fn free_port() -> SocketAddr {
    // Bind-and-release: the port stays free for the moment the test needs it.
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

#[test]
fn one_flow_moves_data_and_per_flow_figures_add_up() {
    let cfg = TcpConfig {
        flows: 1,
        duration: Duration::from_millis(1500),
        ..TcpConfig::default()
    };
    let stop = AtomicBool::new(false);
    let mut progress = Vec::new();
    let r = run_tcp(&cfg, &stop, &mut |p| progress.push(p.clone())).unwrap();
    assert!(
        r.rx_app_bytes > 10_000_000,
        "only {} B moved",
        r.rx_app_bytes
    );
    // Everything written was read by the in-process receiver after the drain.
    assert_eq!(r.rx_app_bytes, r.tx_bytes);
    assert_eq!(r.flows.len(), 1);
    assert_eq!(r.flows.iter().map(|f| f.bytes).sum::<u64>(), r.rx_app_bytes);
    let f = &r.flows[0];
    assert!(
        f.retransmits.is_some() && f.rtt_us.is_some_and(|rtt| rtt > 0.0),
        "{f:?}"
    );
    assert!((f.bits_per_s - r.rx_app_bits_per_s).abs() < 1.0);
    assert_eq!(r.tcp_pacing, Some(TcpPacing::None));
    assert!((r.duration_s - 1.5).abs() < 0.1, "{}", r.duration_s);
    assert_eq!((r.tx_packets, r.rx_app_packets), (0, 0));
    assert!(!r.generator_limited);
    assert!(r.generator.cpu_s > 0.0);
    // One report at 1 s, and one for the last half second, which ends with the run.
    assert_eq!(progress.len(), 2, "{progress:?}");
    let up = progress[0].up.as_ref().expect("the up flows' figures");
    assert!(up.rx_bytes.is_some_and(|b| b > 0));
    assert!(progress[0].down.is_none());
    assert!((progress[1].elapsed_s - 1.5).abs() < 0.1, "{progress:?}");
}

#[test]
fn four_flows_to_a_remote_receiver_are_counted_by_it() {
    let listen = free_port();
    let serve_stop = Arc::new(AtomicBool::new(false));
    let server = {
        let stop = serve_stop.clone();
        std::thread::spawn(move || serve_tcp(listen, &stop, Some(Duration::from_secs(20))))
    };
    std::thread::sleep(Duration::from_millis(100));
    let cfg = TcpConfig {
        flows: 4,
        threads: 2,
        msg_size: 16 * 1024,
        duration: Duration::from_millis(800),
        target: Some(listen),
        nodelay: true,
        ..TcpConfig::default()
    };
    let r = run_tcp(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap();
    serve_stop.store(true, Ordering::Relaxed);
    let served = server.join().unwrap().unwrap();
    assert_eq!(r.flows.len(), 4);
    assert!(r.flows.iter().all(|f| f.bytes > 0), "{:?}", r.flows);
    assert_eq!(r.flows.iter().map(|f| f.bytes).sum::<u64>(), r.rx_app_bytes);
    assert_eq!(served.stream_bytes, r.rx_app_bytes);
    assert_eq!(served.stream_connections, 4);
    assert_eq!(r.rx_app_bytes, r.tx_bytes);
    assert!(r
        .notes
        .iter()
        .any(|n| n.contains("reported by netceil recv")));
}

#[test]
fn stop_ends_the_run_early_with_results() {
    let stop = Arc::new(AtomicBool::new(false));
    let setter = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            stop.store(true, Ordering::Relaxed);
        })
    };
    let started = Instant::now();
    let cfg = TcpConfig {
        flows: 2,
        duration: Duration::from_secs(30),
        ..TcpConfig::default()
    };
    let r = run_tcp(&cfg, &stop, &mut |_| {}).unwrap();
    setter.join().unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_millis(800), "took {took:?}");
    assert!(r.rx_app_bytes > 0);
    assert!(r.duration_s < 0.6, "{}", r.duration_s);
    assert!(r.notes.iter().any(|n| n.contains("stopped early")));
}

#[test]
fn a_target_that_is_not_netceil_is_named() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Reads the hello, then closes without accepting it.
    let impostor = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut hello = [0u8; 8];
        s.read_exact(&mut hello).unwrap();
    });
    let cfg = TcpConfig {
        target: Some(addr),
        duration: Duration::from_millis(200),
        ..TcpConfig::default()
    };
    let err = run_tcp(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap_err();
    impostor.join().unwrap();
    let msg = err.to_string();
    assert!(
        msg.contains(&addr.to_string()) && msg.contains("netceil recv"),
        "{msg}"
    );
}

#[test]
fn nothing_listening_is_a_connect_error() {
    let cfg = TcpConfig {
        target: Some(free_port()),
        duration: Duration::from_millis(200),
        ..TcpConfig::default()
    };
    let err = run_tcp(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap_err();
    assert!(matches!(err, LoadError::Connect { .. }), "{err:?}");
}

#[test]
fn bad_configurations_are_usage_errors_naming_the_flag() {
    let cases = [
        (
            TcpConfig {
                flows: 0,
                ..TcpConfig::default()
            },
            "--flows",
        ),
        (
            TcpConfig {
                rate_per_flow_bps: Some(0.0),
                ..TcpConfig::default()
            },
            "--rate-per-flow",
        ),
        (
            TcpConfig {
                rate_per_flow_bps: Some(-1e6),
                ..TcpConfig::default()
            },
            "--rate-per-flow",
        ),
        (
            TcpConfig {
                msg_size: 0,
                ..TcpConfig::default()
            },
            "--msg-size",
        ),
        (
            TcpConfig {
                msg_size: 65 * 1024 * 1024,
                ..TcpConfig::default()
            },
            "--msg-size",
        ),
    ];
    for (cfg, flag) in cases {
        let err = run_tcp(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap_err();
        assert!(err.is_usage(), "{err:?}");
        assert!(err.to_string().contains(flag), "{err} should name {flag}");
    }
}

#[test]
fn ipv6_loopback_stream() {
    let no_v6 = TcpListener::bind("[::1]:0").is_err();
    if netceil_testkit::skip_on(no_v6.then(|| "no IPv6 loopback here".into())) {
        return;
    }
    let cfg = TcpConfig {
        flows: 2,
        ipv6: true,
        rate_per_flow_bps: Some(10e6),
        duration: Duration::from_millis(500),
        ..TcpConfig::default()
    };
    let r = run_tcp(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap();
    // 2 × 10 Mbit/s for 0.5 s = 1.25 MB.
    assert!(
        (r.rx_app_bytes as f64 / 1.25e6 - 1.0).abs() < 0.02,
        "{} B",
        r.rx_app_bytes
    );
}

#[test]
fn kernel_pacing_is_reported_as_such() {
    let cfg = TcpConfig {
        flows: 2,
        rate_per_flow_bps: Some(50e6),
        pacing: netceil_load::tcp::TcpPacingChoice::Kernel,
        duration: Duration::from_millis(500),
        ..TcpConfig::default()
    };
    let r = run_tcp(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert_eq!(r.tcp_pacing, Some(TcpPacing::Kernel));
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("SO_MAX_PACING_RATE 6250000")),
        "{:?}",
        r.notes
    );
    // Held near the cap (loose: kernel pacing starts with a burst, see the tcp module docs),
    // and far below what an unpaced loopback flow does (gigabits).
    assert!(r.rx_app_bits_per_s < 2.0 * 100e6, "{}", r.rx_app_bits_per_s);
    assert!(r.rx_app_bits_per_s > 0.5 * 100e6, "{}", r.rx_app_bits_per_s);
}

#[test]
fn the_receive_buffer_is_sized_as_asked_and_said_in_the_results() {
    use netceil_load::tcp::RecvBuffer;
    use netceil_model::TcpDirection;
    for direction in [TcpDirection::Up, TcpDirection::Down] {
        let run = |recv_buffer| {
            let cfg = TcpConfig {
                duration: Duration::from_millis(400),
                direction,
                recv_buffer,
                ..TcpConfig::default()
            };
            run_tcp(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap()
        };
        let fixed = run(RecvBuffer::Fixed(256 * 1024));
        // What the kernel holds, read back: SO_RCVBUF of half, doubled (rmem_max may cap it).
        let held = fixed.tcp_rcvbuf_bytes.expect("a fixed buffer");
        assert!(
            (64 * 1024..=256 * 1024).contains(&held),
            "{direction:?}: {held}"
        );
        let note = fixed.notes.iter().find(|n| n.contains("receive buffers"));
        let note = note.unwrap_or_else(|| panic!("{direction:?}: {:?}", fixed.notes));
        assert!(note.contains("as asked (--rcvbuf)"), "{note}");
        assert!(fixed.rx_app_bytes > 0);

        let kernel = run(RecvBuffer::Kernel);
        assert_eq!(kernel.tcp_rcvbuf_bytes, None, "{direction:?}");
        assert!(
            !kernel.notes.iter().any(|n| n.contains("receive buffer")),
            "{direction:?}: {:?}",
            kernel.notes
        );

        // Auto fixes loopback's buffer unless its handshake took over 100 µs (a busy machine),
        // and says which it did.
        let auto = run(RecvBuffer::default());
        let said = auto.notes.iter().find(|n| n.contains("receive buffer"));
        let said = said.unwrap_or_else(|| panic!("{direction:?}: {:?}", auto.notes));
        match auto.tcp_rcvbuf_bytes {
            Some(_) => assert!(said.contains("inside this host"), "{said}"),
            None => assert!(said.contains("kept the kernel's"), "{said}"),
        }
    }
}
