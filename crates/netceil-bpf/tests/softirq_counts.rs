//! With softirq time sampled (one run in N timed), every run is still counted: the probe's
//! NET_RX runs over a burst of loopback UDP match the kernel's own count (/proc/softirqs),
//! and about one in N of them is timed. Root only (eBPF).

use std::net::UdpSocket;

use netceil_bpf::{Config, Probe, Probes};

/// The NET_RX row of /proc/softirqs, summed over CPUs.
fn kernel_net_rx() -> u64 {
    let text = std::fs::read_to_string("/proc/softirqs").unwrap();
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("NET_RX:"))
        .expect("a NET_RX row in /proc/softirqs");
    row.split_whitespace()
        .skip(1)
        .map(|n| n.parse::<u64>().unwrap())
        .sum()
}

/// (runs, timed) of NET_RX (vector 3), summed over CPUs.
fn probe_net_rx(p: &Probes) -> (u64, u64) {
    let cpus = p.snapshot().softirq.expect("the softirq probe's map");
    (
        cpus.iter().map(|c| c.runs[3]).sum(),
        cpus.iter().map(|c| c.timed[3]).sum(),
    )
}

#[test]
fn sampled_softirq_time_still_counts_every_run() {
    if netceil_testkit::skip(netceil_testkit::needs_root("eBPF probes")) {
        return;
    }
    let _one = netceil_testkit::machine_lock();
    let every = 8;
    let p = Probes::attach(Config {
        probes: vec![Probe::Softirq],
        lock_stack_every: 0,
        softirq_time_every: every,
    })
    .unwrap();
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    tx.connect(rx.local_addr().unwrap()).unwrap();
    rx.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 64];

    let (runs0, timed0) = probe_net_rx(&p);
    let kernel0 = kernel_net_rx();
    // Bounded: 20 000 datagrams of 64 B, drained as they come.
    for _ in 0..20_000 {
        tx.send(&buf[..64]).unwrap();
        while rx.recv(&mut buf).is_ok() {}
    }
    let kernel = kernel_net_rx() - kernel0;
    let (runs1, timed1) = probe_net_rx(&p);
    let (runs, timed) = (runs1 - runs0, timed1 - timed0);

    // Other traffic on the machine runs NET_RX too, between the two reads of each side: a
    // small slack, far below the 7 in 8 a probe counting only its timed runs would lose.
    assert!(
        kernel >= 1000,
        "only {kernel} NET_RX runs for 20 000 datagrams"
    );
    let slack = kernel / 50 + 20;
    assert!(
        runs.abs_diff(kernel) <= slack,
        "the probe counted {runs} NET_RX runs, the kernel {kernel}"
    );
    let expected = runs / u64::from(every);
    assert!(
        timed.abs_diff(expected) <= expected / 4 + 10,
        "{timed} of {runs} runs timed, expected about 1 in {every}"
    );
}

/// Sends `n` datagrams of 64 B over loopback, drained as they come (bounded).
fn burst(n: usize) {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    tx.connect(rx.local_addr().unwrap()).unwrap();
    rx.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 64];
    for _ in 0..n {
        tx.send(&buf[..64]).unwrap();
        while rx.recv(&mut buf).is_ok() {}
    }
}

/// NAPI packets counted so far, all devices.
fn napi_packets(p: &Probes) -> u64 {
    p.snapshot()
        .napi
        .expect("the napi probe's map")
        .iter()
        .map(|d| d.packets)
        .sum()
}

/// Paused, the per-packet probes count nothing and their attached time stands still; resumed,
/// they count again, and the time grows with the window. The lock probe beside them is not
/// paused.
#[test]
fn paused_per_packet_probes_count_nothing_and_resume() {
    if netceil_testkit::skip(netceil_testkit::needs_root("eBPF probes")) {
        return;
    }
    let _one = netceil_testkit::machine_lock();
    let mut p = Probes::attach(Config {
        probes: vec![Probe::Locks, Probe::Softirq, Probe::Napi],
        lock_stack_every: 0,
        softirq_time_every: 1,
    })
    .unwrap();
    assert!(p.per_packet_on());
    p.pause_per_packet().unwrap();
    assert!(!p.per_packet_on());
    // Pausing twice is harmless.
    p.pause_per_packet().unwrap();

    let (runs0, _) = probe_net_rx(&p);
    let (napi0, sampled0) = (napi_packets(&p), p.snapshot().sampled_ns);
    burst(5_000);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (runs1, timed1) = probe_net_rx(&p);
    let (napi1, sampled1) = (napi_packets(&p), p.snapshot().sampled_ns);
    assert_eq!(runs1, runs0, "NET_RX runs counted while paused");
    assert_eq!(napi1, napi0, "NAPI packets counted while paused");
    assert_eq!(sampled1, sampled0, "attached time grew while paused");

    p.resume_per_packet().unwrap();
    p.resume_per_packet().unwrap();
    burst(5_000);
    std::thread::sleep(std::time::Duration::from_millis(20));
    p.pause_per_packet().unwrap();
    let (runs2, timed2) = probe_net_rx(&p);
    let (napi2, sampled2) = (napi_packets(&p), p.snapshot().sampled_ns);
    assert!(
        runs2 - runs1 >= 500,
        "{} NET_RX runs while resumed",
        runs2 - runs1
    );
    // Every run is timed, but one in flight on a CPU as the window opened (seen at its exit,
    // not at its entry).
    let (runs, timed) = (runs2 - runs1, timed2 - timed1);
    assert!(
        timed <= runs && runs - timed <= 4,
        "{timed} of {runs} runs timed, expected all"
    );
    assert!(
        napi2 - napi1 >= 5_000,
        "{} NAPI packets while resumed",
        napi2 - napi1
    );
    assert!(
        sampled2 - sampled1 >= 20_000_000,
        "attached {} ns, at least the 20 ms slept",
        sampled2 - sampled1
    );
    assert!(p.snapshot().lock_totals.is_some());
}
