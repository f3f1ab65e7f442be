//! Request/response over loopback: closed loop, paced, loss, coordinated omission, errors.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use netceil_load::header::{Header, Kind, VERSION};
use netceil_load::rr::{run_rr, RrConfig, RrProto};
use netceil_load::threads::{current_thread_id, spawned_thread_ids};
use netceil_model::{LatencySummary, Results};

fn run(cfg: &RrConfig) -> Results {
    run_rr(cfg, &AtomicBool::new(false), &mut |_| {}).unwrap()
}

fn assert_ordered(l: &LatencySummary) {
    assert!(l.min > 0.0, "{l:?}");
    assert!(
        l.min <= l.p50 && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max,
        "{l:?}"
    );
    assert!(l.mean >= l.min && l.mean <= l.max, "{l:?}");
}

fn closed_loop(proto: RrProto) {
    let cfg = RrConfig {
        proto,
        size: 64,
        duration: Duration::from_millis(800),
        ..RrConfig::default()
    };
    let mut progress = 0;
    let before = spawned_thread_ids();
    let r = run_rr(&cfg, &AtomicBool::new(false), &mut |_| progress += 1).unwrap();
    // The client and the in-process echo each recorded their thread id.
    let new_ids = spawned_thread_ids()
        .into_iter()
        .filter(|t| !before.contains(t))
        .count();
    assert!(new_ids >= 2, "{new_ids} new load thread ids");
    assert!(!spawned_thread_ids().contains(&current_thread_id()));
    let tps = r.transactions_per_s.unwrap();
    assert!(tps > 500.0, "{tps} transactions/s");
    assert_eq!(r.closed_loop_in_flight, Some(1), "one request in flight");
    let l = r.latency_us.as_ref().unwrap();
    assert_ordered(l);
    assert_eq!(l.count, r.rx_app_packets);
    assert_eq!(
        r.tx_packets,
        r.rx_app_packets + r.lost_packets + r.in_flight_packets
    );
    assert_eq!(r.unexplained_packets, 0);
    assert_eq!(r.lost_packets, 0);
    assert_eq!(r.requested_pps, None);
    assert_eq!(r.rx_app_bytes, r.rx_app_packets * 64);
}

#[test]
fn tcp_closed_loop_gives_ordered_percentiles() {
    closed_loop(RrProto::Tcp);
}

#[test]
fn udp_closed_loop_gives_ordered_percentiles() {
    closed_loop(RrProto::Udp);
}

#[test]
fn paced_rr_achieves_the_rate() {
    for (proto, flows) in [(RrProto::Tcp, 2), (RrProto::Udp, 1)] {
        let cfg = RrConfig {
            proto,
            flows,
            rate_tps: Some(1000.0),
            duration: Duration::from_millis(1500),
            ..RrConfig::default()
        };
        let r = run(&cfg);
        let tps = r.transactions_per_s.unwrap();
        assert!(
            (tps / 1000.0 - 1.0).abs() < 0.02,
            "{proto:?}: {tps} transactions/s"
        );
        assert!(!r.generator_limited, "{proto:?}");
        assert_eq!(r.requested_pps, Some(1000.0));
        assert_eq!(r.closed_loop_in_flight, None, "paced is open loop");
        assert!(r.generator.send_gap_error_median_us.is_some());
        assert_ordered(r.latency_us.as_ref().unwrap());
    }
}

/// A TCP echo speaking netceil's hello that stalls `stall` once, at request `stall_at`.
fn stalling_tcp_echo(size: usize, stall_at: u64, stall: Duration) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        // Without it, Nagle holds each answer until the previous one is acknowledged.
        s.set_nodelay(true).unwrap();
        let mut hello = [0u8; 8];
        s.read_exact(&mut hello).unwrap();
        s.write_all(&hello).unwrap();
        let mut req = vec![0u8; size];
        let mut n = 0;
        while s.read_exact(&mut req).is_ok() {
            n += 1;
            if n == stall_at {
                std::thread::sleep(stall);
            }
            if s.write_all(&req).is_err() {
                break;
            }
        }
    });
    addr
}

/// A UDP echo that stalls once at request `stall_at` and drops every `drop_every`-th request.
fn udp_echo(
    stall_at: u64,
    stall: Duration,
    drop_every: Option<u64>,
) -> (SocketAddr, Arc<AtomicBool>) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let addr = socket.local_addr().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let stop = done.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut n = 0;
        let mut since_drop = 0;
        while !stop.load(Ordering::Relaxed) {
            let Ok((len, from)) = socket.recv_from(&mut buf) else {
                continue;
            };
            let Some(h) = Header::read(&buf[..len]) else {
                continue;
            };
            assert_eq!(h.kind, Kind::Request);
            n += 1;
            if n == stall_at {
                std::thread::sleep(stall);
            }
            since_drop += 1;
            if drop_every == Some(since_drop) {
                since_drop = 0;
                continue;
            }
            buf[2] = (VERSION << 4) | Kind::Response as u8;
            let _ = socket.send_to(&buf[..len], from);
        }
    });
    (addr, done)
}

/// 2 s at 10 ms: ~200 requests, of which those scheduled during the stall waited up to the
/// stall's length. Were the stall counted once (one slow sample), p99 would not show it.
fn check_stall_is_measured(r: &Results, stall_ms: f64) {
    let l = r.latency_us.as_ref().unwrap();
    assert!((190..=201).contains(&l.count), "{l:?}");
    assert!(
        l.p99 > stall_ms / 2.0 * 1e3,
        "p99 {} µs hides the {stall_ms} ms stall",
        l.p99
    );
    assert!(l.max > stall_ms * 0.95 * 1e3, "{l:?}");
    assert!(l.p50 < 10_000.0, "{l:?}");
    // From the actual send, every answer took no longer than from its intended send: each
    // quantile of the service time is at most the latency's.
    let s = r
        .service_us
        .as_ref()
        .expect("service time from the actual send");
    assert_eq!(s.count, l.count, "{s:?} {l:?}");
    assert!(
        s.p50 <= l.p50 && s.p99 <= l.p99 && s.max <= l.max && s.min <= l.min,
        "service {s:?} exceeds latency {l:?}"
    );
}

#[test]
fn tcp_stall_is_measured_from_the_intended_send_time() {
    let target = stalling_tcp_echo(64, 50, Duration::from_millis(200));
    let cfg = RrConfig {
        proto: RrProto::Tcp,
        rate_tps: Some(100.0),
        duration: Duration::from_secs(2),
        target: Some(target),
        ..RrConfig::default()
    };
    check_stall_is_measured(&run(&cfg), 200.0);
}

#[test]
fn udp_stall_is_measured_from_the_intended_send_time() {
    // Half the 100 ms loss timeout, so the delayed answers count as slow, not lost, even when
    // a shared machine adds tens of milliseconds of its own.
    let (target, done) = udp_echo(50, Duration::from_millis(50), None);
    let cfg = RrConfig {
        proto: RrProto::Udp,
        rate_tps: Some(100.0),
        duration: Duration::from_secs(2),
        target: Some(target),
        ..RrConfig::default()
    };
    let r = run(&cfg);
    done.store(true, Ordering::Relaxed);
    assert_eq!(r.lost_packets, 0);
    check_stall_is_measured(&r, 50.0);
}

#[test]
fn udp_losses_are_counted_and_never_hang() {
    let (target, done) = udp_echo(0, Duration::ZERO, Some(10));
    let cfg = RrConfig {
        proto: RrProto::Udp,
        rate_tps: Some(200.0),
        duration: Duration::from_secs(1),
        target: Some(target),
        ..RrConfig::default()
    };
    let started = Instant::now();
    let r = run(&cfg);
    done.store(true, Ordering::Relaxed);
    // 1 s of schedule and a 100 ms loss timeout: "never hangs", with room for a slow
    // scheduler (a hang would be the 1 s run waiting on every lost answer, or forever).
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.tx_packets, 200);
    assert_eq!(r.lost_packets, 20, "{r:?}");
    assert_eq!(r.rx_app_packets, 180);
    assert_eq!(r.unexplained_packets, 0);
}

#[test]
fn closed_loop_udp_with_nobody_listening_ends_on_time() {
    let nobody = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let cfg = RrConfig {
        proto: RrProto::Udp,
        duration: Duration::from_millis(500),
        target: Some(nobody),
        ..RrConfig::default()
    };
    let started = Instant::now();
    let r = run(&cfg);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.rx_app_packets, 0);
    assert!(r.latency_us.is_none());
    assert_eq!(r.transactions_per_s, Some(0.0));
}

#[test]
fn bad_configurations_are_usage_errors_naming_the_flag() {
    let udp = RrConfig {
        proto: RrProto::Udp,
        ..RrConfig::default()
    };
    let cases = [
        (
            RrConfig {
                size: 0,
                ..RrConfig::default()
            },
            "--size",
        ),
        (
            RrConfig {
                size: 70_000,
                ..udp.clone()
            },
            "--size",
        ),
        (
            RrConfig {
                rate_tps: Some(0.0),
                ..udp.clone()
            },
            "--rate",
        ),
        (
            RrConfig {
                rate_tps: Some(-5.0),
                ..RrConfig::default()
            },
            "--rate",
        ),
        (
            RrConfig {
                flows: 0,
                ..udp.clone()
            },
            "--flows",
        ),
        (
            RrConfig {
                ipv6: true,
                target: Some("127.0.0.1:9".parse().unwrap()),
                ..udp
            },
            "--ipv6",
        ),
    ];
    for (cfg, flag) in cases {
        let err = run_rr(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap_err();
        assert!(err.is_usage(), "{err:?}");
        assert!(err.to_string().contains(flag), "{err} should name {flag}");
    }
}

#[test]
fn large_tcp_messages_are_split_and_reassembled() {
    // Bigger than one write and one read: requests and responses cross many segments.
    let size = 300_000;
    let cfg = RrConfig {
        proto: RrProto::Tcp,
        size,
        flows: 2,
        duration: Duration::from_millis(400),
        ..RrConfig::default()
    };
    let r = run(&cfg);
    assert!(r.rx_app_packets > 10, "{r:?}");
    assert_eq!(r.rx_app_bytes, r.rx_app_packets * size as u64);
    assert_eq!(r.in_flight_packets, 0);
    assert!(r
        .notes
        .iter()
        .any(|n| n.contains(&format!("{} B echoed", r.rx_app_bytes))));
}

#[test]
fn ipv6_loopback_works_for_both_protocols() {
    let no_v6 = UdpSocket::bind("[::1]:0").is_err();
    if netceil_testkit::skip_on(no_v6.then(|| "no IPv6 loopback here".into())) {
        return;
    }
    for proto in [RrProto::Tcp, RrProto::Udp] {
        let cfg = RrConfig {
            proto,
            ipv6: true,
            duration: Duration::from_millis(300),
            ..RrConfig::default()
        };
        let r = run(&cfg);
        assert!(r.rx_app_packets > 0, "{proto:?}");
    }
}

#[test]
fn a_spinning_client_polls_instead_of_sleeping_and_says_what_it_cost() {
    // Paced at 200/s for 1 s: a sleeping client would use a few ms of CPU; a spinning one
    // polls all second long, most of it finding nothing.
    let paced = |spin| RrConfig {
        proto: RrProto::Udp,
        rate_tps: Some(200.0),
        duration: Duration::from_secs(1),
        spin,
        ..RrConfig::default()
    };
    let sleeping = run(&paced(false));
    let spun = run(&paced(true));
    let (s, g) = (&sleeping.generator, &spun.generator);
    assert_eq!(s.pacing, Some(netceil_model::PacingMode::Sleep));
    assert_eq!(g.pacing, Some(netceil_model::PacingMode::Spin));
    // The sleeper polls only the last stretch before each send (see the next test).
    assert!(s.spin_cpu_s < 0.1 * g.spin_cpu_s, "slept {s:?} spun {g:?}");
    // The spinner's CPU is many times the sleeper's, and most of it is idle polls.
    assert!(g.cpu_s > 5.0 * s.cpu_s.max(0.01), "spun {g:?} slept {s:?}");
    assert!(
        g.spin_cpu_s > 0.5 * g.cpu_s && g.spin_cpu_s <= g.cpu_s,
        "{g:?}"
    );
    assert!(
        (g.spin_cpu_s + g.work_cpu_s - g.cpu_s).abs() < 1e-6,
        "{g:?}"
    );
    assert!(
        spun.notes.iter().any(|n| n.contains("--spin")),
        "{:?}",
        spun.notes
    );
    // It still answers every request on schedule.
    let l = spun.latency_us.as_ref().unwrap();
    assert!((190..=201).contains(&l.count), "{l:?}");
    assert_eq!(spun.lost_packets, 0);
}

/// The median lateness, ns, of this thread's own timer: `n` absolute sleeps of 1 ms each, with
/// the timer slack at its minimum as the client sets it.
fn timer_lateness_median_ns(n: usize) -> u64 {
    std::thread::spawn(move || {
        let _ = nix::sys::prctl::set_timerslack(1);
        let mut late: Vec<u64> = (0..n)
            .map(|_| {
                let due = netceil_load::clock::now_ns() + 1_000_000;
                netceil_load::clock::sleep_until_ns(due);
                netceil_load::clock::now_ns().saturating_sub(due)
            })
            .collect();
        late.sort_unstable();
        late[n / 2]
    })
    .join()
    .unwrap()
}

/// A sleeping paced client sends on time: it wakes before each send by its timer's learned
/// lateness and polls the rest of the way, so its requests leave within a poll of their
/// intended time, not as late as its timer wakes it. Without the early wake, the median send
/// would be as late as the timer's median lateness (about 12 µs in this VM); the bound is a
/// third of that, measured here beside the run, or 1 µs where the timer is punctual. And it
/// still sleeps: the polling costs a fraction of a core, and the notes say how much.
#[test]
fn a_sleeping_paced_client_wakes_early_and_sends_on_time() {
    let timer_ns = timer_lateness_median_ns(200);
    let r = run(&RrConfig {
        proto: RrProto::Udp,
        rate_tps: Some(2000.0),
        duration: Duration::from_secs(1),
        ..RrConfig::default()
    });
    let g = &r.generator;
    assert_eq!(g.pacing, Some(netceil_model::PacingMode::Sleep));
    let sent_late_us = g.send_gap_error_median_us.unwrap();
    let bound_us = (timer_ns as f64 / 3e3).max(1.0);
    assert!(
        sent_late_us <= bound_us,
        "requests left a median {sent_late_us} µs late; the timer itself is {timer_ns} ns late"
    );
    assert!(g.spin_cpu_s > 0.0 && g.cpu_pct < 60.0, "{g:?}");
    assert!(
        r.notes.iter().any(|n| n.contains("before each send")),
        "{:?}",
        r.notes
    );
    assert_eq!(r.lost_packets, 0);
}

/// The calling thread's voluntary context switches so far (each sleep that ended is one).
fn my_voluntary_switches() -> u64 {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

/// The caller's thread supervises a run by sleeping until the next progress report (or the
/// client's end), not by polling: on a 2-core machine each extra wake-up can land on the core
/// the echo or the client needs. A 5 ms poll made ~300 wake-ups in this 1.5 s run. A stop set
/// from elsewhere still ends the run promptly, since the client reads the flag itself.
#[test]
fn the_supervising_thread_sleeps_between_reports_and_a_stop_still_ends_the_run() {
    let cfg = RrConfig {
        proto: RrProto::Udp,
        rate_tps: Some(1000.0),
        duration: Duration::from_millis(1500),
        ..RrConfig::default()
    };
    let mut reports = 0;
    let before = my_voluntary_switches();
    let r = run_rr(&cfg, &AtomicBool::new(false), &mut |_| reports += 1).unwrap();
    let woke = my_voluntary_switches() - before;
    assert!(reports >= 1, "{reports} progress reports");
    assert!(r.rx_app_packets > 1000, "{r:?}");
    assert!(
        woke < 30,
        "the supervising thread woke {woke} times in 1.5 s"
    );

    let stop = AtomicBool::new(false);
    let long = RrConfig {
        duration: Duration::from_secs(30),
        ..cfg
    };
    let t0 = Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            stop.store(true, Ordering::Relaxed);
        });
        run_rr(&long, &stop, &mut |_| {}).unwrap()
    });
    let took = t0.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "a stop took {took:?} to end the run"
    );
    assert!(r.rx_app_packets > 100, "{r:?}");
    assert!(
        r.notes.iter().any(|n| n.contains("stopped early")),
        "{:?}",
        r.notes
    );
}

/// A spinning client that shares its CPU with a busy thread still reads its answers within its
/// own time slice, as sockperf's client does. It used to give the core away after every idle
/// poll, so each answer waited for the busy thread's whole slice: on a machine loaded with
/// builds, --spin's median service time was 10 × sockperf's. The echo has a CPU of its own.
#[test]
fn a_spinning_client_keeps_its_core_when_the_echo_has_another() {
    let cpus = netceil_load::threads::allowed_cpus().unwrap();
    if netceil_testkit::skip_on((cpus.len() < 2).then(|| "needs two CPUs".to_string())) {
        return;
    }
    let _one = netceil_testkit::machine_lock();
    let (client_cpu, echo_cpu) = (cpus[0], cpus[1]);
    let done = AtomicBool::new(false);
    let r = std::thread::scope(|s| {
        // A busy thread on the client's CPU, bounded by the run and by 10 s.
        s.spawn(|| {
            let mut set = nix::sched::CpuSet::new();
            set.set(client_cpu).unwrap();
            nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).unwrap();
            let t0 = Instant::now();
            while !done.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(10) {
                std::hint::spin_loop();
            }
        });
        let r = run(&RrConfig {
            proto: RrProto::Udp,
            rate_tps: Some(2000.0),
            duration: Duration::from_secs(1),
            spin: true,
            tx_cpu: Some(client_cpu),
            rx_cpu: Some(echo_cpu),
            ..RrConfig::default()
        });
        done.store(true, Ordering::Relaxed);
        r
    });
    let s = r.service_us.as_ref().unwrap();
    assert!(s.count > 500, "{s:?}");
    assert!(
        s.p50 < 500.0,
        "service p50 {} µs beside a busy thread: {s:?}",
        s.p50
    );
    assert!(
        r.notes.iter().all(|n| !n.contains("gave the core away")),
        "{:?}",
        r.notes
    );
}
