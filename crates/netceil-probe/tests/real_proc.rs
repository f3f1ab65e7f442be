//! Smoke tests on this machine's own /proc and /sys (Linux only).
#![cfg(target_os = "linux")]

use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use netceil_model::names::*;
use netceil_model::MetricId;
use netceil_probe::{rates, spawn_sampler, ProcFs, Sampler, SamplerConfig};

fn online_cpus() -> usize {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    stat.lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .count()
}

#[test]
fn two_samples_100ms_apart() {
    let mut sampler = Sampler::new(
        ProcFs::new(),
        SamplerConfig {
            pids: vec![std::process::id() as i32],
            ..SamplerConfig::default()
        },
    );
    let a = sampler.sample();
    // Some work of our own, so that this process's threads have something to show.
    let deadline = std::time::Instant::now() + Duration::from_millis(100);
    // And a datagram over loopback: packets moved, so the protocol files, read only when
    // packets moved (or every few seconds), are read again.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.send_to(b"x", udp.local_addr().unwrap()).unwrap();
    let mut spins = 0u64;
    while std::time::Instant::now() < deadline {
        spins = spins.wrapping_add(1);
        std::hint::black_box(spins);
    }
    let b = sampler.sample();
    let row = rates(&a, &b);
    assert!(
        row.elapsed_s >= 0.1 && row.elapsed_s < 5.0,
        "{}",
        row.elapsed_s
    );

    let cpus = online_cpus();
    assert!(cpus >= 1);
    let busy: Vec<_> = row
        .by_name(CPU_BUSY_PCT)
        .filter(|(m, _, _)| m.label(LABEL_CPU).is_some())
        .collect();
    assert_eq!(
        busy.len(),
        cpus,
        "one cpu_busy_pct per CPU: {:?}",
        row.missing
    );
    for (m, _, v) in &busy {
        assert!((0.0..=100.0).contains(v), "{m} = {v}");
    }
    let all = row.total(CPU_BUSY_PCT).expect("cpu_busy_pct");
    assert!(all > 0.0, "we spun for 100 ms, so some CPU was busy");
    assert!(row.total(CS_PER_S).expect("cs_per_s") > 0.0);
    assert!(row.total(INTR_PER_S).is_some());
    assert!(row.total(PROCS_RUNNING).unwrap() >= 1.0);
    assert!(row
        .by_name(IFACE_RX_BITS_PER_S)
        .any(|(m, _, _)| m.label(LABEL_IFACE) == Some("lo")));
    assert!(row.total(TCP_RETRANS_SEGS_PER_S).is_some());
    assert!(row.total(SOFTNET_PROCESSED_PER_S).is_some());
    // This test thread shows up among our threads, with CPU time.
    let ours = row
        .by_name(THREAD_CPU_PCT)
        .map(|v| v.2)
        .fold(0.0f64, f64::max);
    assert!(ours > 10.0, "max thread_cpu_pct {ours}");
    assert!(row.total(SAMPLER_CPU_PCT).is_some());
    // PSI is either measured or missing with a reason, never silently absent.
    assert!(
        row.total(PSI_CPU_SOME_PCT).is_some() || row.missing_reason(PSI_CPU_SOME_PCT).is_some()
    );
    let lo = MetricId::new(IFACE_RX_PPS).with(LABEL_IFACE, "lo");
    assert!(row.get(&lo).is_some());
}

#[test]
fn background_sampler_sends_rows_and_returns_the_series() {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let handle = spawn_sampler(
        ProcFs::new(),
        SamplerConfig {
            interval: Duration::from_millis(20),
            ..SamplerConfig::default()
        },
        Arc::clone(&stop),
        tx,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(250));
    let out = handle.stop().expect("sampler thread ended cleanly");
    let live: Vec<_> = rx.try_iter().collect();
    assert!(out.series.len() >= 5, "{} rows", out.series.len());
    assert_eq!(live.len(), out.series.len());
    assert_eq!(out.samples, out.series.len() + 1);
    for pair in out.series.t_s.windows(2) {
        assert!(pair[1] > pair[0]);
    }
    assert!((live.last().unwrap().t_s - out.wall_s).abs() < 1e-9);
    assert!(out.sampler_cpu_s.is_some());
    assert!(out.sampler_cpu_pct().unwrap() < 100.0);
    assert!(out.series.total(SAMPLER_CPU_PCT).is_some());
    assert!(out.nics.iter().any(|n| n.name == "lo"));

    // A recording longer than it may keep: bounded, every row still sent as it was made.
    let (tx, rx) = mpsc::channel();
    let handle = spawn_sampler(
        ProcFs::new(),
        SamplerConfig {
            interval: Duration::from_millis(10),
            max_rows: 8,
            ..SamplerConfig::default()
        },
        Arc::new(AtomicBool::new(false)),
        tx,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let out = handle.stop().expect("sampler thread ended cleanly");
    let live: Vec<_> = rx.try_iter().collect();
    assert!(live.len() > 16, "{} rows sent", live.len());
    assert!(out.series.len() <= 8, "{} rows kept", out.series.len());
    assert!(out.rows_per_row >= 2, "{}", out.rows_per_row);
    assert_eq!(out.series.len(), live.len().div_ceil(out.rows_per_row));
    // Text kept to be parsed later (see Sampler::sample_deferred) is parsed at the stop.
    assert_eq!(out.samples, live.len() + 1);
    assert!((live.last().unwrap().t_s - out.wall_s).abs() < 1e-9);

    let too_fast = SamplerConfig {
        interval: Duration::from_millis(1),
        ..SamplerConfig::default()
    };
    let (tx, _rx) = mpsc::channel();
    assert!(spawn_sampler(
        ProcFs::new(),
        too_fast,
        Arc::new(AtomicBool::new(false)),
        tx
    )
    .is_err());
}

/// The live kernel answers a look-up of a socket a dump showed with that socket, and stops
/// answering for it once it has closed; a socket with another cookie is not it.
#[test]
fn a_live_socket_is_found_again_by_lookup_until_it_closes() {
    use netceil_probe::Source;
    let source = ProcFs::new();
    let ns = std::fs::read_link("/proc/self/ns/net")
        .unwrap()
        .into_os_string()
        .into_string()
        .unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    let ours = |s: &netceil_probe::sockdiag::TcpSocket| {
        s.local == client.local_addr().unwrap()
            || (s.local == server.local_addr().unwrap() && s.remote == client.local_addr().unwrap())
    };
    let dump = match source.tcp_sockets(&ns, "/proc/self/ns/net", 4096) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("skipped: sock_diag is not available here: {e}");
            return;
        }
    };
    let known: Vec<_> = dump.sockets.into_iter().filter(ours).collect();
    assert_eq!(known.len(), 2, "{known:?}");
    let again = source
        .tcp_sockets_again(&ns, "/proc/self/ns/net", &known)
        .unwrap();
    assert_eq!(again.len(), 2);
    for (k, a) in known.iter().zip(&again) {
        assert_eq!(
            (k.inode, k.cookie, k.local, k.remote),
            (a.inode, a.cookie, a.local, a.remote)
        );
        assert!(a.info.is_some() && a.mem.is_some());
    }
    // Another cookie: another socket, not found.
    let mut stale = known[0].clone();
    stale.cookie ^= 1;
    assert!(source
        .tcp_sockets_again(&ns, "/proc/self/ns/net", &[stale])
        .unwrap()
        .is_empty());
    drop(client);
    drop(server);
    std::thread::sleep(Duration::from_millis(20));
    let after = source
        .tcp_sockets_again(&ns, "/proc/self/ns/net", &known)
        .unwrap();
    assert!(after.is_empty(), "closed sockets still answered: {after:?}");
}
