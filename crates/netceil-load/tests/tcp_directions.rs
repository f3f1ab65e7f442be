//! `-R` and `--bidir` over loopback and to a remote receiver: what crossed each way is counted
//! by the side that read it; rrul's phases and figures.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use netceil_load::tcp::rrul::{run_rrul, RrulConfig, RrulProgress};
use netceil_load::tcp::{run_tcp, serve_tcp, TcpConfig};
use netceil_model::TcpDirection;

fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn run(direction: TcpDirection, flows: u32, target: Option<SocketAddr>) -> netceil_model::Results {
    let cfg = TcpConfig {
        flows,
        duration: Duration::from_millis(1200),
        direction,
        target,
        ..TcpConfig::default()
    };
    run_tcp(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap()
}

#[test]
fn reverse_on_loopback_reads_what_the_server_sent() {
    let _machine = netceil_testkit::machine_lock();
    let r = run(TcpDirection::Down, 2, None);
    assert_eq!(r.directions.len(), 1, "{:?}", r.directions);
    let down = &r.directions[0];
    assert_eq!(down.direction, TcpDirection::Down);
    assert!(down.rx_bytes > 10_000_000, "only {} B read", down.rx_bytes);
    // The server ended each stream after the half-close: everything it wrote was read.
    assert_eq!(down.tx_bytes, Some(down.rx_bytes), "{:?}", r.notes);
    assert_eq!(r.rx_app_bytes, down.rx_bytes);
    assert_eq!(r.flows.len(), 2);
    assert_eq!(r.flows.iter().map(|f| f.bytes).sum::<u64>(), down.rx_bytes);
    assert!(
        r.notes.iter().any(|n| n.contains("reverse (-R)")),
        "{:?}",
        r.notes
    );
}

#[test]
fn both_ways_keeps_each_directions_count_apart() {
    let _machine = netceil_testkit::machine_lock();
    let r = run(TcpDirection::Both, 2, None);
    let up = r
        .directions
        .iter()
        .find(|d| d.direction == TcpDirection::Up)
        .unwrap();
    let down = r
        .directions
        .iter()
        .find(|d| d.direction == TcpDirection::Down)
        .unwrap();
    assert!(
        up.rx_bytes > 1_000_000 && down.rx_bytes > 1_000_000,
        "{:?}",
        r.directions
    );
    assert_eq!(up.tx_bytes, Some(up.rx_bytes));
    assert_eq!(down.tx_bytes, Some(down.rx_bytes));
    assert_eq!(r.rx_app_bytes, up.rx_bytes + down.rx_bytes);
    assert_eq!(r.flows.len(), 4);
    let ids: Vec<u32> = r.flows.iter().map(|f| f.flow).collect();
    assert_eq!(ids, [0, 1, 2, 3]);
    assert_eq!(
        r.flows[2..].iter().map(|f| f.bytes).sum::<u64>(),
        down.rx_bytes
    );
}

#[test]
fn reverse_from_a_remote_receiver_is_counted_here_and_there() {
    let _machine = netceil_testkit::machine_lock();
    let listen = free_port();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let server = std::thread::spawn(move || serve_tcp(listen, &s, Some(Duration::from_secs(20))));
    std::thread::sleep(Duration::from_millis(200));
    let r = run(TcpDirection::Down, 3, Some(listen));
    stop.store(true, Ordering::Relaxed);
    let rep = server.join().unwrap().unwrap();
    assert_eq!(rep.source_connections, 3);
    assert!(r.rx_app_bytes > 1_000_000, "{}", r.rx_app_bytes);
    // Not known here until the far end reports; what it wrote was all read.
    assert_eq!(r.directions[0].tx_bytes, None);
    assert_eq!(rep.source_bytes, r.rx_app_bytes);
}

#[test]
fn reverse_refuses_settings_of_the_side_that_does_not_send() {
    let cfg = TcpConfig {
        direction: TcpDirection::Down,
        congestion: Some("cubic".into()),
        ..TcpConfig::default()
    };
    let e = cfg.validate().unwrap_err().to_string();
    assert!(e.contains("--congestion") && e.contains("-R"), "{e}");
}

#[test]
fn rrul_measures_idle_and_loaded_round_trips_and_both_directions() {
    let _machine = netceil_testkit::machine_lock();
    let cfg = RrulConfig {
        flows: 2,
        duration: Duration::from_millis(1500),
        idle: Duration::from_millis(600),
        rr_rate: 100.0,
        rate_per_flow_bps: None,
        ipv6: false,
        tcp_target: None,
        probe_target: None,
        run_id: Some(7),
    };
    // The loaded phase's reports carry the probe's round trip, as the idle phase's do.
    let (mut idle_latency, mut loaded_latency) = (0, 0);
    let r = run_rrul(&cfg, &AtomicBool::new(false), &mut |p| match p {
        RrulProgress::Idle(r) => idle_latency += usize::from(r.interval_mean_latency_us.is_some()),
        RrulProgress::Loaded(_, probe) => {
            loaded_latency += usize::from(
                probe
                    .as_ref()
                    .is_some_and(|r| r.interval_mean_latency_us.is_some_and(|m| m > 0.0)),
            );
        }
    })
    .unwrap();
    assert!(idle_latency >= 1, "no idle report with a latency");
    assert!(
        loaded_latency >= 1,
        "no loaded report with the probe's latency"
    );
    let s = r.rrul.as_ref().expect("rrul figures");
    // About 100/s in each phase (a loaded 2-core box may lose a few).
    assert!(s.idle_rtt_us.count >= 40, "{:?}", s.idle_rtt_us);
    assert!(s.loaded_rtt_us.count >= 100, "{:?}", s.loaded_rtt_us);
    assert!(s.idle_rtt_us.p50 > 0.0 && s.loaded_rtt_us.p50 > 0.0);
    assert_eq!(s.inflation_p99_us, s.loaded_rtt_us.p99 - s.idle_rtt_us.p99);
    assert!(s.up_bits_per_s > 1e6 && s.down_bits_per_s > 1e6, "{s:?}");
    assert_eq!(r.directions.len(), 2);
    assert_eq!(r.service_us.as_ref(), Some(&s.loaded_rtt_us));
}
