//! The workload's TCP flows on a fake machine: sockets served by `FakeSource` with exact,
//! hand-written `tcp_info` counters, and the per-flow and aggregate values checked to the
//! digit, including a socket that closes, fields an older kernel does not send, a counter that
//! goes backwards and a process in another network namespace.

use std::io;
use std::time::Duration;

use netceil_model::names::*;
use netceil_model::MetricId;
use netceil_probe::flows::{BUSIEST_FLOWS, MAX_TCP_SOCKETS};
use netceil_probe::rates::{
    ALL_CLOSED_REASON, FLOW_CLOSED_REASON, RESET_REASON, SOME_CLOSED_REASON,
};
use netceil_probe::sockdiag::{TcpInfo, TcpSocket, TCP_ESTABLISHED};
use netceil_probe::{rates, FakeSource, Row, Sampler, SamplerConfig, Snapshot};

const NS: &str = "net:[4026531840]";
const OTHER_NS: &str = "net:[4026532999]";
const CLIENT: &str = "127.0.0.1:40000>127.0.0.1:5201";
const SERVER: &str = "127.0.0.1:5201>127.0.0.1:40000";

/// Counters of one socket, all fields present (a 6.x kernel).
#[derive(Clone, Copy)]
struct Counters {
    acked: u64,
    received: u64,
    retrans: u32,
    busy_us: u64,
    rwnd_us: u64,
    sndbuf_us: u64,
}

fn info(c: Counters) -> TcpInfo {
    TcpInfo {
        rtt_us: Some(1500),
        snd_cwnd: Some(10),
        rcv_space: Some(14600),
        total_retrans: Some(c.retrans),
        bytes_acked: Some(c.acked),
        bytes_received: Some(c.received),
        min_rtt_us: Some(900),
        delivery_rate: Some(125_000_000),
        busy_time_us: Some(c.busy_us),
        rwnd_limited_us: Some(c.rwnd_us),
        sndbuf_limited_us: Some(c.sndbuf_us),
        snd_wnd: Some(65535),
        snd_mss: Some(1448),
        unacked: Some(10),
    }
}

fn socket(local: &str, remote: &str, inode: u64, info: TcpInfo) -> TcpSocket {
    TcpSocket {
        local: local.parse().unwrap(),
        remote: remote.parse().unwrap(),
        state: TCP_ESTABLISHED,
        inode,
        cookie: inode * 1000,
        info: Some(info),
        mem: Some(netceil_probe::sockdiag::SkMem {
            rmem_alloc: 0,
            rcvbuf: 131_072,
            sndbuf: 87_040,
            wmem_queued: 14_480,
        }),
    }
}

const IDLE: Counters = Counters {
    acked: 1,
    received: 0,
    retrans: 0,
    busy_us: 0,
    rwnd_us: 0,
    sndbuf_us: 0,
};

/// The client sends, the server receives: both ends are the watched process's (pid 100), as
/// in `netceil run tcp` over loopback.
fn pair(client: Counters, server: Counters) -> Vec<TcpSocket> {
    vec![
        socket("127.0.0.1:40000", "127.0.0.1:5201", 11, info(client)),
        socket("127.0.0.1:5201", "127.0.0.1:40000", 12, info(server)),
        // Someone else's connection in the same namespace.
        socket("10.0.0.1:22", "10.0.0.9:50000", 999, info(IDLE)),
    ]
}

/// A fake machine watching pid 100 (and whatever it starts), which holds sockets 11 and 12.
fn machine() -> FakeSource {
    let fake = FakeSource::new();
    fake.set_qdiscs(Vec::new());
    fake.set_link("/proc/100/ns/net", NS);
    fake.set_link("/proc/100/fd/0", "/dev/null");
    fake.set_link("/proc/100/fd/3", "socket:[11]");
    fake.set_link("/proc/100/fd/4", "socket:[12]");
    fake.set(
        "/proc/100/stat",
        "100 (netceil) S 1 1 1 0 -1 0 0 0 0 0 10 10 0 0 20 0 1 0 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0\n",
    );
    fake
}

fn config(pids: Vec<i32>) -> SamplerConfig {
    SamplerConfig {
        interval: Duration::from_secs(1),
        ifaces: None,
        pids,
        ..SamplerConfig::default()
    }
}

fn flow(name: &str, flow: &str, pid: i32) -> MetricId {
    MetricId::new(name)
        .with(LABEL_FLOW, flow)
        .with(LABEL_PID, pid.to_string())
}

fn total(name: &str) -> MetricId {
    MetricId::new(name)
}

#[track_caller]
fn assert_value(row: &Row, metric: &MetricId, expected: f64) {
    let got = row.get(metric);
    assert!(
        got.is_some_and(|g| (g - expected).abs() < 1e-6),
        "{metric}: got {got:?}, expected {expected}"
    );
}

/// Samples now, moves the clock `secs` on and installs `after`, samples again.
fn step(
    s: &mut Sampler<FakeSource>,
    fake: &FakeSource,
    secs: u64,
    after: Vec<TcpSocket>,
) -> Snapshot {
    fake.advance(Duration::from_secs(secs));
    fake.set_tcp_sockets(NS, after);
    s.sample()
}

/// 2 s of a bulk transfer: 20 MB acknowledged to the client and received by the server; the
/// client busy 1.6 s, of which 0.4 s held by the receive window and 0.2 s by its send buffer.
fn two_seconds_of_transfer() -> (FakeSource, Sampler<FakeSource>, Snapshot, Snapshot) {
    let fake = machine();
    fake.set_tcp_sockets(NS, pair(Counters { retrans: 3, ..IDLE }, IDLE));
    let mut s = Sampler::new(fake.clone(), config(vec![100]));
    let a = s.sample();
    let client = Counters {
        acked: 20_000_001,
        received: 0,
        retrans: 7,
        busy_us: 1_600_000,
        rwnd_us: 400_000,
        sndbuf_us: 200_000,
    };
    let server = Counters {
        received: 20_000_000,
        ..IDLE
    };
    let b = step(&mut s, &fake, 2, pair(client, server));
    (fake, s, a, b)
}

#[test]
fn each_busy_flow_and_the_sum_of_all_have_exact_values() {
    let (_, _, a, b) = two_seconds_of_transfer();
    let row = rates(&a, &b);
    // The client: every field, as ss -ti would show it, and its rates over the 2 s.
    assert_value(&row, &flow(TCP_CWND, CLIENT, 100), 10.0);
    assert_value(&row, &flow(TCP_RTT_US, CLIENT, 100), 1500.0);
    assert_value(&row, &flow(TCP_MIN_RTT_US, CLIENT, 100), 900.0);
    assert_value(&row, &flow(TCP_DELIVERY_RATE_BITS_PER_S, CLIENT, 100), 1e9);
    assert_value(&row, &flow(TCP_SND_WND_BYTES, CLIENT, 100), 65535.0);
    assert_value(&row, &flow(TCP_RCV_SPACE_BYTES, CLIENT, 100), 14600.0);
    // In flight: 10 unacknowledged segments of 1448 bytes; the buffers from skmem.
    assert_value(&row, &flow(TCP_SND_MSS_BYTES, CLIENT, 100), 1448.0);
    assert_value(&row, &flow(TCP_IN_FLIGHT_BYTES, CLIENT, 100), 14480.0);
    assert_value(&row, &flow(TCP_SNDBUF_BYTES, CLIENT, 100), 87040.0);
    assert_value(&row, &flow(TCP_SEND_QUEUE_BYTES, CLIENT, 100), 14480.0);
    assert_value(&row, &flow(TCP_RCVBUF_BYTES, CLIENT, 100), 131072.0);
    assert_value(&row, &flow(TCP_RECV_QUEUE_BYTES, CLIENT, 100), 0.0);
    assert_value(&row, &flow(TCP_BYTES_ACKED_PER_S, CLIENT, 100), 10e6);
    assert_value(&row, &flow(TCP_BYTES_RECEIVED_PER_S, CLIENT, 100), 0.0);
    assert_value(&row, &flow(TCP_RETRANS_PER_S, CLIENT, 100), 2.0);
    assert_value(&row, &flow(TCP_BUSY_PCT, CLIENT, 100), 80.0);
    assert_value(&row, &flow(TCP_RWND_LIMITED_PCT, CLIENT, 100), 25.0);
    assert_value(&row, &flow(TCP_SNDBUF_LIMITED_PCT, CLIENT, 100), 12.5);
    assert_value(&row, &flow(TCP_CWND_LIMITED_PCT, CLIENT, 100), 62.5);
    // The server end received; it never had anything to send, so it has no shares of busy
    // time (missing, not 0).
    assert_value(&row, &flow(TCP_BYTES_RECEIVED_PER_S, SERVER, 100), 10e6);
    assert_value(&row, &flow(TCP_BUSY_PCT, SERVER, 100), 0.0);
    assert_eq!(row.get(&flow(TCP_RWND_LIMITED_PCT, SERVER, 100)), None);
    assert!(row
        .missing_reason(TCP_RWND_LIMITED_PCT)
        .is_some_and(|r| r.contains("no busy time")));
    // Over all the workload's flows; the third socket is someone else's.
    assert_value(&row, &total(TCP_FLOWS), 2.0);
    assert_value(&row, &total(TCP_BYTES_ACKED_PER_S), 10e6);
    assert_value(&row, &total(TCP_BYTES_RECEIVED_PER_S), 10e6);
    assert_value(&row, &total(TCP_RETRANS_PER_S), 2.0);
    // Only the client's data was acknowledged: only its delivery rate counts.
    assert_value(&row, &total(TCP_DELIVERY_RATE_BITS_PER_S), 1e9);
    // Mean busy share over the two flows; limits weighted by busy time.
    assert_value(&row, &total(TCP_BUSY_PCT), 40.0);
    assert_value(&row, &total(TCP_RWND_LIMITED_PCT), 25.0);
    assert_value(&row, &total(TCP_SNDBUF_LIMITED_PCT), 12.5);
    assert_value(&row, &total(TCP_CWND_LIMITED_PCT), 62.5);
    // Per-flow series: the two flows, nothing for the stranger's socket.
    let flows: std::collections::BTreeSet<&str> = row
        .by_name(TCP_BUSY_PCT)
        .filter_map(|(id, _, _)| id.label(LABEL_FLOW))
        .collect();
    assert_eq!(flows.into_iter().collect::<Vec<_>>(), [CLIENT, SERVER]);
}

#[test]
fn the_first_reading_counts_flows_but_has_no_rates() {
    let fake = machine();
    fake.set_tcp_sockets(NS, pair(IDLE, IDLE));
    let mut s = Sampler::new(fake.clone(), config(vec![100]));
    let a = s.sample();
    // No bytes moved and nobody busy: no flow of its own, sums of 0 that were measured.
    let b = step(&mut s, &fake, 1, pair(IDLE, IDLE));
    let row = rates(&a, &b);
    assert_value(&row, &total(TCP_FLOWS), 2.0);
    assert_value(&row, &total(TCP_BYTES_ACKED_PER_S), 0.0);
    assert_eq!(row.by_name(TCP_CWND).count(), 0, "idle flows get no series");
    assert_value(&row, &total(TCP_BUSY_PCT), 0.0);
    assert_eq!(row.get(&total(TCP_RWND_LIMITED_PCT)), None);
}

#[test]
fn a_socket_that_closes_is_missing_not_zero() {
    let (fake, mut s, _, b) = two_seconds_of_transfer();
    // The client closed; the server still holds its end and received 1 MB more.
    let server = Counters {
        received: 21_000_000,
        ..IDLE
    };
    let mut now = pair(IDLE, server);
    now.remove(0);
    fake.remove("/proc/100/fd/3");
    let c = step(&mut s, &fake, 1, now);
    let row = rates(&b, &c);
    for name in [TCP_BUSY_PCT, TCP_CWND, TCP_BYTES_ACKED_PER_S] {
        assert_eq!(row.get(&flow(name, CLIENT, 100)), None, "{name}");
    }
    let closed = flow(TCP_BUSY_PCT, CLIENT, 100).to_string();
    assert_eq!(row.missing_reason(&closed), Some(FLOW_CLOSED_REASON));
    assert_value(&row, &total(TCP_FLOWS), 1.0);
    // The sums are over the flows measured at both readings: the server's alone.
    assert_value(&row, &total(TCP_BYTES_RECEIVED_PER_S), 1e6);
    assert_value(&row, &total(TCP_BYTES_ACKED_PER_S), 0.0);
    assert_value(&row, &flow(TCP_BYTES_RECEIVED_PER_S, SERVER, 100), 1e6);
    // ... and the run says what they leave out.
    assert_eq!(
        row.missing_reason(TCP_BYTES_ACKED_PER_S),
        Some(SOME_CLOSED_REASON)
    );
    // Then the server closes too: nothing measured the interval, and that is not a zero.
    fake.remove("/proc/100/fd/4");
    let d = step(&mut s, &fake, 1, Vec::new());
    let row = rates(&c, &d);
    assert_value(&row, &total(TCP_FLOWS), 0.0);
    for name in [
        TCP_BYTES_ACKED_PER_S,
        TCP_BYTES_RECEIVED_PER_S,
        TCP_BUSY_PCT,
    ] {
        assert_eq!(row.get(&total(name)), None, "{name}");
        assert_eq!(row.missing_reason(name), Some(ALL_CLOSED_REASON), "{name}");
    }
    assert_eq!(
        row.missing_reason(&flow(TCP_BUSY_PCT, SERVER, 100).to_string()),
        Some(FLOW_CLOSED_REASON)
    );
}

#[test]
fn fields_an_older_kernel_does_not_send_are_missing_with_the_reason() {
    // A 4.9 kernel: no busy times (4.10) and no tcpi_snd_wnd (5.4).
    let old = |c: Counters| {
        let mut i = info(c);
        i.busy_time_us = None;
        i.rwnd_limited_us = None;
        i.sndbuf_limited_us = None;
        i.snd_wnd = None;
        i
    };
    let sockets = |acked: u64| {
        vec![socket(
            "127.0.0.1:40000",
            "127.0.0.1:5201",
            11,
            old(Counters { acked, ..IDLE }),
        )]
    };
    let fake = machine();
    fake.set_tcp_sockets(NS, sockets(1));
    let mut s = Sampler::new(fake.clone(), config(vec![100]));
    let a = s.sample();
    let b = step(&mut s, &fake, 1, sockets(5_000_001));
    let row = rates(&a, &b);
    assert_value(&row, &flow(TCP_BYTES_ACKED_PER_S, CLIENT, 100), 5e6);
    assert_value(&row, &flow(TCP_CWND, CLIENT, 100), 10.0);
    for name in [TCP_SND_WND_BYTES, TCP_BUSY_PCT, TCP_RWND_LIMITED_PCT] {
        assert_eq!(row.get(&flow(name, CLIENT, 100)), None, "{name}");
        assert_eq!(row.get(&total(name)), None, "{name}");
    }
    assert!(row
        .missing_reason(TCP_SND_WND_BYTES)
        .is_some_and(|r| r.contains("no tcpi_snd_wnd")));
    for name in [TCP_BUSY_PCT, TCP_RWND_LIMITED_PCT, TCP_CWND_LIMITED_PCT] {
        assert!(
            row.missing_reason(name)
                .is_some_and(|r| r.contains("tcpi_busy_time")),
            "{name}: {:?}",
            row.missing_reason(name)
        );
    }
    assert_value(&row, &total(TCP_BYTES_ACKED_PER_S), 5e6);
}

#[test]
fn a_counter_going_backwards_gives_no_value_and_a_reused_inode_is_a_new_socket() {
    let (fake, mut s, _, b) = two_seconds_of_transfer();
    // Same socket (inode and cookie), bytes_acked lower than before: not a rate.
    let mut now = pair(
        Counters {
            acked: 5,
            busy_us: 1_700_000,
            rwnd_us: 400_000,
            sndbuf_us: 200_000,
            retrans: 7,
            ..IDLE
        },
        Counters {
            received: 20_000_000,
            ..IDLE
        },
    );
    // And the server's inode now names another socket (another cookie).
    now[1].cookie += 1;
    let c = step(&mut s, &fake, 1, now);
    let row = rates(&b, &c);
    assert_eq!(row.get(&total(TCP_BYTES_ACKED_PER_S)), None);
    assert!(row
        .missing
        .iter()
        .any(|m| m.0 == TCP_BYTES_ACKED_PER_S && m.1 == RESET_REASON));
    // The client's other counters still give their values.
    assert_value(&row, &flow(TCP_BUSY_PCT, CLIENT, 100), 10.0);
    assert_eq!(
        row.missing_reason(&flow(TCP_BYTES_ACKED_PER_S, CLIENT, 100).to_string()),
        Some(RESET_REASON)
    );
    // The new socket behind the old inode: counted, but rates only from the next interval.
    assert_value(&row, &total(TCP_FLOWS), 2.0);
    assert_eq!(row.get(&flow(TCP_BUSY_PCT, SERVER, 100)), None);
    assert_value(&row, &total(TCP_BYTES_RECEIVED_PER_S), 0.0);
}

#[test]
fn only_the_busiest_flows_get_series_of_their_own() {
    let fake = machine();
    let n = 20u64;
    let sockets = |k: u64| -> Vec<TcpSocket> {
        (0..n)
            .map(|i| {
                let port = 41000 + i as u16;
                socket(
                    &format!("127.0.0.1:{port}"),
                    "127.0.0.1:5201",
                    100 + i,
                    info(Counters {
                        // Flow i moves (i + 1) MB a second.
                        acked: 1 + k * (i + 1) * 1_000_000,
                        ..IDLE
                    }),
                )
            })
            .collect()
    };
    for i in 0..n {
        fake.set_link(
            &format!("/proc/100/fd/{}", 10 + i),
            &format!("socket:[{}]", 100 + i),
        );
    }
    fake.set_tcp_sockets(NS, sockets(0));
    let mut s = Sampler::new(fake.clone(), config(vec![100]));
    let a = s.sample();
    let b = step(&mut s, &fake, 1, sockets(1));
    let row = rates(&a, &b);
    let ports: Vec<String> = row
        .by_name(TCP_BYTES_ACKED_PER_S)
        .filter_map(|(id, _, _)| Some(id.label(LABEL_FLOW)?[10..15].to_string()))
        .collect();
    assert_eq!(ports.len(), BUSIEST_FLOWS);
    assert_eq!(
        ports,
        ["41019", "41018", "41017", "41016", "41015", "41014", "41013", "41012"]
    );
    assert_value(&row, &total(TCP_FLOWS), n as f64);
    // The sum is over all 20: 1 + 2 + … + 20 MB/s.
    assert_value(&row, &total(TCP_BYTES_ACKED_PER_S), 210e6);
}

#[test]
fn the_busiest_flows_keep_their_place_unless_clearly_beaten() {
    let fake = machine();
    let n = 10u64;
    // Each flow's bytes acknowledged so far.
    let sockets = |acked: &[u64]| -> Vec<TcpSocket> {
        (0..n)
            .map(|i| {
                let port = 42000 + i as u16;
                socket(
                    &format!("127.0.0.1:{port}"),
                    "127.0.0.1:5201",
                    200 + i,
                    info(Counters {
                        acked: acked[i as usize],
                        ..IDLE
                    }),
                )
            })
            .collect()
    };
    for i in 0..n {
        fake.set_link(
            &format!("/proc/100/fd/{}", 30 + i),
            &format!("socket:[{}]", 200 + i),
        );
    }
    let mut acked = vec![1u64; n as usize];
    fake.set_tcp_sockets(NS, sockets(&acked));
    let mut s = Sampler::new(fake.clone(), config(vec![100]));
    let _ = s.sample();
    let busiest = |snap: &Snapshot| -> Vec<u64> {
        let f = snap.slow.tcp_flows.as_ref().unwrap().as_ref().unwrap();
        let mut v: Vec<u64> = f.busiest.iter().map(|b| b.0).collect();
        v.sort_unstable();
        v
    };
    let mut next = |moved: &[u64]| {
        for (a, m) in acked.iter_mut().zip(moved) {
            *a += m;
        }
        step(&mut s, &fake, 1, sockets(&acked))
    };
    // All alike: the first eight by inode.
    let b = next(&[1_000_000; 10]);
    assert_eq!(busiest(&b), (200..208).collect::<Vec<_>>());
    // The last two move 20 % more: not enough to take a place.
    let mut moved = [1_000_000u64; 10];
    moved[8] = 1_200_000;
    moved[9] = 1_200_000;
    let c = next(&moved);
    assert_eq!(busiest(&c), (200..208).collect::<Vec<_>>());
    // 30 % more: they are the busiest now.
    moved[8] = 1_300_000;
    moved[9] = 1_300_000;
    let d = next(&moved);
    assert_eq!(busiest(&d), [200, 201, 202, 203, 204, 205, 208, 209]);
}

#[test]
fn a_child_in_another_namespace_is_read_there() {
    let fake = machine();
    // pid 200, started by 100 (`ip netns exec lab-b iperf3 …`), lives in another namespace.
    fake.set(
        "/proc/200/stat",
        "200 (iperf3) S 100 1 1 0 -1 0 0 0 0 0 10 10 0 0 20 0 1 0 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0\n",
    );
    fake.set_link("/proc/200/ns/net", OTHER_NS);
    fake.set_link("/proc/200/fd/5", "socket:[21]");
    let theirs = |acked: u64| {
        vec![socket(
            "198.18.0.2:50000",
            "198.18.0.1:5201",
            21,
            info(Counters { acked, ..IDLE }),
        )]
    };
    fake.set_tcp_sockets(NS, pair(IDLE, IDLE));
    fake.set_tcp_sockets(OTHER_NS, theirs(1));
    let mut s = Sampler::new(fake.clone(), config(vec![100]));
    let a = s.sample();
    fake.set_tcp_sockets(OTHER_NS, theirs(3_000_001));
    let b = step(&mut s, &fake, 1, pair(IDLE, IDLE));
    let row = rates(&a, &b);
    assert_value(
        &row,
        &flow(
            TCP_BYTES_ACKED_PER_S,
            "198.18.0.2:50000>198.18.0.1:5201",
            200,
        ),
        3e6,
    );
    assert_value(&row, &total(TCP_FLOWS), 3.0);
    assert!(fake
        .tcp_reads()
        .contains(&(OTHER_NS.to_string(), "/proc/200/ns/net".to_string())));
    // That namespace becoming unreadable: its flows are not counted, and the run says why.
    fake.set_tcp_error(
        OTHER_NS,
        io::ErrorKind::PermissionDenied,
        "Operation not permitted",
    );
    let c = step(&mut s, &fake, 1, pair(IDLE, IDLE));
    let row = rates(&b, &c);
    assert_value(&row, &total(TCP_FLOWS), 2.0);
    assert!(row
        .missing_reason(TCP_FLOWS)
        .is_some_and(|r| r.contains(OTHER_NS) && r.contains("not permitted")));
}

#[test]
fn a_new_connection_is_seen_at_the_next_reading() {
    let fake = machine();
    fake.set_tcp_sockets(NS, pair(IDLE, IDLE));
    let mut s = Sampler::new(fake.clone(), config(vec![100]));
    let _ = s.sample();
    // 100 ms later (before any periodic rescan): a new connection on fd 7.
    fake.advance(Duration::from_millis(100));
    fake.set_link("/proc/100/fd/7", "socket:[13]");
    let mut now = pair(IDLE, IDLE);
    now.push(socket("127.0.0.1:40001", "127.0.0.1:5201", 13, info(IDLE)));
    fake.set_tcp_sockets(NS, now);
    let b = s.sample();
    let flows = b.slow.tcp_flows.as_ref().unwrap().as_ref().unwrap();
    assert_eq!(
        flows.flows.iter().map(|f| f.inode).collect::<Vec<_>>(),
        [11, 12, 13]
    );
}

#[test]
fn the_cap_on_sockets_read_is_said() {
    let fake = machine();
    let many: Vec<TcpSocket> = (0..MAX_TCP_SOCKETS as u64 + 10)
        .map(|i| socket("10.0.0.1:22", "10.0.0.9:50000", 10_000 + i, info(IDLE)))
        .collect();
    fake.set_tcp_sockets(NS, many);
    let mut s = Sampler::new(fake.clone(), config(vec![100]));
    let a = s.sample();
    fake.advance(Duration::from_secs(1));
    let b = s.sample();
    let row = rates(&a, &b);
    assert!(row
        .missing_reason(TCP_FLOWS)
        .is_some_and(|r| r.contains("more established TCP sockets than the 4096")));
}

#[test]
fn without_a_workload_or_without_sock_diag() {
    // Nothing watched: no TCP flow figures at all, and nothing said about them.
    let fake = machine();
    fake.set_tcp_sockets(NS, pair(IDLE, IDLE));
    let mut s = Sampler::new(fake.clone(), config(Vec::new()));
    let a = s.sample();
    fake.advance(Duration::from_secs(1));
    let row = rates(&a, &s.sample());
    assert_eq!(row.get(&total(TCP_FLOWS)), None);
    assert_eq!(row.missing_reason(TCP_FLOWS), None);
    // A source that cannot ask the kernel (a copy of /proc): missing, with the reason.
    let fake = machine();
    let mut s = Sampler::new(fake.clone(), config(vec![100]));
    let a = s.sample();
    fake.advance(Duration::from_secs(1));
    let row = rates(&a, &s.sample());
    for name in [TCP_FLOWS, TCP_BUSY_PCT, TCP_BYTES_ACKED_PER_S] {
        assert!(
            row.missing_reason(name)
                .is_some_and(|r| r.contains("no TCP socket statistics")),
            "{name}: {:?}",
            row.missing_reason(name)
        );
    }
}

/// `/proc/100/net/snmp` with this many connections ever opened (active and passive).
fn set_opens(fake: &FakeSource, active: u64, passive: u64) {
    fake.set(
        "/proc/100/net/snmp",
        format!(
            "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab\n\
             Tcp: 1 200 120000 -1 {active} {passive} 0 0 2\n"
        ),
    );
}

/// A dump walks the kernel's whole socket table: while no connection opened in the namespace,
/// the workload's sockets are looked up one by one instead, the figures stay exact, a socket
/// closed meanwhile drops out, and an opened connection, or [`REDUMP_EVERY`], brings the dump
/// back.
#[test]
fn the_workload_s_sockets_are_looked_up_while_no_connection_opens() {
    use netceil_probe::flows::REDUMP_EVERY;
    let fake = machine();
    set_opens(&fake, 10, 10);
    fake.set_tcp_sockets(NS, pair(IDLE, IDLE));
    let mut s = Sampler::new(fake.clone(), config(vec![100]));
    let a = s.sample();
    assert_eq!(fake.tcp_reads().len(), 1, "the first reading dumps");
    let sending = Counters {
        acked: 5_000_001,
        ..IDLE
    };
    let b = step(&mut s, &fake, 1, pair(sending, IDLE));
    assert_eq!(fake.tcp_reads().len(), 1, "no connection opened: no dump");
    assert_eq!(
        fake.tcp_lookups(),
        vec![(NS.to_string(), 2)],
        "the two of the workload's"
    );
    let row = rates(&a, &b);
    assert_value(&row, &flow(TCP_BYTES_ACKED_PER_S, CLIENT, 100), 5e6);
    assert_value(&row, &total(TCP_FLOWS), 2.0);

    // The server's end closes: one flow left, still without a dump.
    let c = step(
        &mut s,
        &fake,
        1,
        pair(sending, IDLE)
            .into_iter()
            .filter(|s| s.inode != 12)
            .collect(),
    );
    assert_eq!(fake.tcp_reads().len(), 1);
    assert_value(&rates(&b, &c), &total(TCP_FLOWS), 1.0);
    let d = step(&mut s, &fake, 1, pair(sending, IDLE));
    assert_eq!(
        fake.tcp_lookups().last(),
        Some(&(NS.to_string(), 1)),
        "a closed socket is not asked for again"
    );
    assert_eq!(fake.tcp_reads().len(), 1);
    let _ = d;

    // A connection opened: dumped again, and the socket found again.
    set_opens(&fake, 11, 10);
    let e = step(&mut s, &fake, 1, pair(sending, IDLE));
    assert_eq!(
        fake.tcp_reads().len(),
        2,
        "an opened connection brings the dump back"
    );
    assert_value(&rates(&d, &e), &total(TCP_FLOWS), 2.0);
    let _ = step(&mut s, &fake, 1, pair(sending, IDLE));
    assert_eq!(fake.tcp_reads().len(), 2);

    // Nothing opened for REDUMP_EVERY: dumped all the same.
    let _ = step(&mut s, &fake, REDUMP_EVERY.as_secs(), pair(sending, IDLE));
    assert_eq!(
        fake.tcp_reads().len(),
        3,
        "a dump at least every {REDUMP_EVERY:?}"
    );
}

/// Without the namespace's protocol counters there is no telling whether a connection opened:
/// every reading dumps.
#[test]
fn without_the_namespace_s_counters_every_reading_dumps() {
    let fake = machine();
    fake.set_tcp_sockets(NS, pair(IDLE, IDLE));
    let mut s = Sampler::new(fake.clone(), config(vec![100]));
    let _ = s.sample();
    let _ = step(&mut s, &fake, 1, pair(IDLE, IDLE));
    let _ = step(&mut s, &fake, 1, pair(IDLE, IDLE));
    assert_eq!(fake.tcp_reads().len(), 3);
    assert!(fake.tcp_lookups().is_empty());
    // Malformed counters are no better than none.
    fake.set(
        "/proc/100/net/snmp",
        "Tcp: ActiveOpens PassiveOpens\nTcp: x 1\n",
    );
    let _ = step(&mut s, &fake, 1, pair(IDLE, IDLE));
    let _ = step(&mut s, &fake, 1, pair(IDLE, IDLE));
    assert_eq!(fake.tcp_reads().len(), 5);
}
