//! The UDP engine end to end over loopback, sender and receiver in this process.
//!
//! Tests in this file run one at a time (a shared lock): a flat-out run next to a paced one
//! would make the paced one's timing a test of the scheduler, not of the engine.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use netceil_load::udp::{run_udp, UdpConfig, UdpOutcome};
use netceil_model::{PacingMode, Rate};

static SERIAL: Mutex<()> = Mutex::new(());

fn run(cfg: &UdpConfig) -> UdpOutcome {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let stop = AtomicBool::new(false);
    run_udp(cfg, &stop, &mut |_| {}).expect("run_udp")
}

/// These tests check the accounting, not the system's default buffer: they ask for 4 MiB (forced
/// past rmem_max when root), so that a receiver briefly descheduled on a busy test machine does
/// not drop packets a test expects to arrive.
fn base() -> UdpConfig {
    UdpConfig {
        run_id: 0x1234,
        duration: Duration::from_secs(5),
        rcvbuf: Some(4 << 20),
        rcvbuf_force: common::euid_is_root(),
        ..UdpConfig::default()
    }
}

fn assert_accounted(o: &UdpOutcome) {
    let r = &o.results;
    assert!(o.receiver_reported);
    assert_eq!(r.unexplained_packets, 0, "{r:#?}");
    assert_eq!(
        r.tx_packets,
        r.rx_app_packets + r.kernel.socket_drops.unwrap() + r.in_flight_packets,
        "{r:#?}"
    );
}

#[test]
fn hundred_thousand_paced_packets_arrive_without_loss() {
    let o = run(&UdpConfig {
        rate: Some(Rate::PacketsPerSecond(50_000.0)),
        count: Some(100_000),
        ..base()
    });
    let r = &o.results;
    assert_eq!(r.tx_packets, 100_000);
    assert_eq!(r.rx_app_packets, 100_000, "{r:#?}");
    assert_eq!(r.rx_app_bytes, 100_000 * 64);
    assert_eq!(r.lost_packets, 0);
    assert_eq!(r.duplicate_packets, 0);
    assert_eq!(r.kernel.socket_drops, Some(0));
    assert_eq!(o.sent_per_flow, vec![100_000]);
    assert_eq!(r.payload_bytes, Some(64));
    assert_eq!(r.frame_bytes, Some(110));
    assert_accounted(&o);
    assert!(o.rcvbuf_granted.is_some_and(|g| g > 0));
}

#[test]
fn overload_with_tiny_rcvbuf_loss_equals_socket_drops() {
    let o = run(&UdpConfig {
        rcvbuf: Some(4096),
        duration: Duration::from_millis(1500),
        flows: 2,
        threads: 2,
        ..base()
    });
    let r = &o.results;
    assert!(
        r.lost_packets > 0,
        "a 4 KiB buffer at full rate must overflow: {r:#?}"
    );
    assert_eq!(Some(r.lost_packets), r.kernel.socket_drops, "{r:#?}");
    assert_accounted(&o);
    assert!(o.rcvbuf_granted.unwrap() < 64 * 1024);
}

#[test]
fn count_stops_exactly_at_count() {
    for (flows, threads, count, rate) in [
        (1, 1, 12_345u64, None),
        (4, 2, 40_001, None),
        (3, 3, 1_000, Some(Rate::PacketsPerSecond(10_000.0))),
    ] {
        let o = run(&UdpConfig {
            count: Some(count),
            flows,
            threads,
            rate,
            ..base()
        });
        let r = &o.results;
        assert_eq!(r.tx_packets, count, "flows {flows} threads {threads}");
        assert_eq!(o.sent_per_flow.iter().sum::<u64>(), count);
        assert_eq!(o.sent_per_flow.len(), flows as usize);
        assert!(
            o.sent_per_flow.iter().all(|&s| s > 0),
            "{:?}",
            o.sent_per_flow
        );
        assert_accounted(&o);
        assert!(
            r.notes.iter().any(|n| n.contains("--count")),
            "{:?}",
            r.notes
        );
    }
}

#[test]
fn paced_20kpps_for_one_second_is_within_two_percent() {
    let o = run(&UdpConfig {
        rate: Some(Rate::PacketsPerSecond(20_000.0)),
        duration: Duration::from_secs(1),
        ..base()
    });
    let r = &o.results;
    let ratio = r.tx_pps / 20_000.0;
    assert!((0.98..=1.02).contains(&ratio), "achieved {} pps", r.tx_pps);
    assert!(
        (19_600..=20_400).contains(&r.tx_packets),
        "{}",
        r.tx_packets
    );
    assert!((0.98..=1.02).contains(&r.generator.achieved_ratio.unwrap()));
    assert!(!r.generator_limited);
    assert_eq!(r.requested_pps, Some(20_000.0));
    assert!(r.generator.send_gap_error_median_us.is_some());
    assert_eq!(r.generator.spin_cpu_s, 0.0, "sleep pacing never spins");
    assert_accounted(&o);
}

#[test]
fn bursts_and_threads_share_the_rate() {
    // 20 kpps in bursts of 10 (2000 bursts/s), dealt out to 2 threads over 4 flows.
    let o = run(&UdpConfig {
        rate: Some(Rate::PacketsPerSecond(20_000.0)),
        burst: 10,
        flows: 4,
        threads: 2,
        duration: Duration::from_secs(1),
        ..base()
    });
    let r = &o.results;
    assert!(
        (19_600..=20_400).contains(&r.tx_packets),
        "{}",
        r.tx_packets
    );
    // Each thread sends whole bursts to one flow at a time, round robin over its two flows.
    for &sent in &o.sent_per_flow {
        assert!((4_800..=5_200).contains(&sent), "{:?}", o.sent_per_flow);
        assert_eq!(sent % 10, 0, "{:?}", o.sent_per_flow);
    }
    assert!(!r.generator_limited);
    assert_accounted(&o);
}

#[test]
fn bit_rate_is_converted_to_packets() {
    // 1 Mbit/s of 125-byte payloads is 1000 pps.
    let o = run(&UdpConfig {
        payload_bytes: 125,
        rate: Some(Rate::BitsPerSecond(1e6)),
        duration: Duration::from_millis(500),
        ..base()
    });
    assert_eq!(o.results.requested_pps, Some(1000.0));
    assert!(
        (490..=510).contains(&o.results.tx_packets),
        "{}",
        o.results.tx_packets
    );
}

#[test]
fn spin_pacing_reports_spin_cpu() {
    let o = run(&UdpConfig {
        interval_ns: Some(20_000.0),
        pacing: PacingMode::Spin,
        duration: Duration::from_millis(300),
        ..base()
    });
    let g = &o.results.generator;
    assert_eq!(g.pacing, Some(PacingMode::Spin));
    assert!(g.spin_cpu_s > 0.05, "{g:#?}");
    assert!(g.work_cpu_s > 0.0);
    assert!((g.cpu_s - g.spin_cpu_s - g.work_cpu_s).abs() < 1e-9);
    assert!(g.send_gap_error_median_us.unwrap() < 20.0, "{g:#?}");
    assert_eq!(o.results.requested_pps, Some(50_000.0));
    assert_accounted(&o);
}

#[test]
fn unpaced_run_is_not_called_generator_limited() {
    let o = run(&UdpConfig {
        duration: Duration::from_millis(300),
        ..base()
    });
    let r = &o.results;
    assert!(r.tx_packets > 1000);
    assert_eq!(r.requested_pps, None);
    assert!(!r.generator_limited);
    assert_eq!(r.generator.achieved_ratio, None);
    assert_eq!(r.generator.send_gap_error_median_us, None);
    assert_eq!(r.generator.pacing, Some(PacingMode::None));
    assert!(r.generator.cpu_s > 0.0);
    assert_accounted(&o);
}

#[test]
fn impossible_rate_is_reported_as_generator_limited() {
    // 50 Mpps of 64 B over loopback is far beyond any one thread.
    let o = run(&UdpConfig {
        rate: Some(Rate::PacketsPerSecond(50e6)),
        duration: Duration::from_millis(300),
        ..base()
    });
    let r = &o.results;
    assert!(r.generator_limited, "{r:#?}");
    assert!(r.generator.achieved_ratio.unwrap() < 0.99);
    assert!(r.generator.late_sends > 0);
    assert!(r
        .notes
        .iter()
        .any(|n| n.contains("GENERATOR WAS THE LIMIT")));
}

#[test]
fn ipv6_loopback_works() {
    let o = run(&UdpConfig {
        ipv6: true,
        count: Some(5_000),
        payload_bytes: 1200,
        ..base()
    });
    assert_eq!(o.results.rx_app_packets + o.results.lost_packets, 5_000);
    assert_eq!(o.results.frame_bytes, Some(1200 + 66));
    assert_accounted(&o);
}

#[test]
fn stop_is_honoured_quickly_and_results_are_kept() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let stop = AtomicBool::new(false);
    let cfg = UdpConfig {
        rate: Some(Rate::PacketsPerSecond(1_000.0)),
        duration: Duration::from_secs(30),
        ..base()
    };
    let started = Instant::now();
    let stopped_at = std::sync::Mutex::new(None);
    let o = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            *stopped_at.lock().unwrap() = Some(Instant::now());
            stop.store(true, Ordering::Relaxed);
        });
        run_udp(&cfg, &stop, &mut |_| {}).unwrap()
    });
    let ended = Instant::now();
    // Timed from the stop itself, not from the start, so a slow scheduler on a shared machine
    // cannot fail it: the run ends within the receiver's drain limit (1 s) and a margin,
    // nowhere near its 30 s duration.
    let stopped_at = stopped_at.into_inner().unwrap().expect("stop was set");
    let after_stop = ended - stopped_at;
    assert!(
        after_stop < Duration::from_millis(1_500),
        "ended {after_stop:?} after the stop"
    );
    let r = &o.results;
    // Paced at 1000/s: no more than the schedule allows up to the end, and some were sent.
    let allowed = 1_000.0 * (ended - started).as_secs_f64() + 64.0;
    assert!(
        r.tx_packets >= 50 && (r.tx_packets as f64) <= allowed,
        "{} sent, {allowed:.0} allowed",
        r.tx_packets
    );
    assert!(r.notes.iter().any(|n| n.contains("interrupted")));
    assert_accounted(&o);
}

#[test]
fn progress_is_reported_about_once_a_second() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let stop = AtomicBool::new(false);
    let mut seen = Vec::new();
    let cfg = UdpConfig {
        rate: Some(Rate::PacketsPerSecond(5_000.0)),
        duration: Duration::from_millis(2_300),
        ..base()
    };
    run_udp(&cfg, &stop, &mut |p| seen.push(p.clone())).unwrap();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen[0].tx_packets > 3_000 && seen[1].tx_packets > seen[0].tx_packets);
    assert!(seen[1].rx_packets > 0 && seen[1].rx_packets <= seen[1].tx_packets);
    assert_eq!(seen[1].tx_bytes, seen[1].tx_packets * 64);
    assert!((seen[1].elapsed_s - 2.0).abs() < 0.2, "{seen:?}");
}

/// The CPUs each of this process's UDP load threads may run on, by thread name.
fn load_thread_affinities() -> Vec<(String, Vec<usize>)> {
    use nix::sched::{sched_getaffinity, CpuSet};
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        let comm = comm.trim();
        let Ok(tid) = task.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if !comm.starts_with("netceil-udp-") {
            continue;
        }
        let Ok(set) = sched_getaffinity(nix::unistd::Pid::from_raw(tid)) else {
            continue;
        };
        let cpus = (0..CpuSet::count())
            .filter(|c| set.is_set(*c).unwrap_or(false))
            .collect();
        out.push((comm.to_string(), cpus));
    }
    out
}

#[test]
fn the_receiver_and_the_senders_run_on_the_cpus_asked_and_are_left_alone_otherwise() {
    let allowed = netceil_load::threads::allowed_cpus().unwrap();
    let (rx, tx) = (*allowed.last().unwrap(), allowed[0]);
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let stop = AtomicBool::new(false);
    let measure = |cfg: &UdpConfig| {
        let mut seen = Vec::new();
        let o =
            run_udp(cfg, &stop, &mut |_| seen.extend(load_thread_affinities())).expect("run_udp");
        seen.sort();
        seen.dedup();
        (o, seen)
    };
    let paced = UdpConfig {
        rate: Some(Rate::PacketsPerSecond(20_000.0)),
        count: Some(30_000),
        ..base()
    };
    let (o, seen) = measure(&UdpConfig {
        rx_cpu: Some(rx),
        tx_cpu: Some(tx),
        ..paced.clone()
    });
    assert_eq!(
        seen,
        vec![
            ("netceil-udp-rx".to_string(), vec![rx]),
            ("netceil-udp-tx0".to_string(), vec![tx])
        ]
    );
    assert_eq!(o.results.rx_app_packets, 30_000, "{:#?}", o.results);
    assert!(
        o.results
            .notes
            .iter()
            .any(|n| n.contains(&format!("receiving thread(s) on CPU {rx}"))),
        "{:?}",
        o.results.notes
    );
    // Not asked: the threads keep the process's whole set, and no note speaks of placing.
    let (o, seen) = measure(&paced);
    assert!(!seen.is_empty());
    assert!(seen.iter().all(|(_, c)| *c == allowed), "{seen:?}");
    assert!(
        !o.results.notes.iter().any(|n| n.contains("placed")),
        "{:?}",
        o.results.notes
    );
}

#[test]
fn a_cpu_this_process_may_not_use_is_refused_before_anything_is_sent() {
    let e = run_udp(
        &UdpConfig {
            rx_cpu: Some(4095),
            count: Some(10),
            ..base()
        },
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(e.is_usage(), "{e}");
    let e = e.to_string();
    assert!(
        e.contains("--rx-cpu 4095") && e.contains("may run only on"),
        "{e}"
    );
}
