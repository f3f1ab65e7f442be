//! The sampler and the rate arithmetic on a fake machine whose counters the tests set exactly.

use std::time::Duration;

use netceil_model::names::*;
use netceil_model::{MetricId, Unit};
use netceil_probe::qdisc::QdiscStats;
use netceil_probe::rates::{NO_FLOW_REASON, RESET_REASON, SLOW_TIER_REASON};
use netceil_probe::{
    counter_delta, rates, rates_with, CounterWidth, FakeSource, MetricIds, Recorder, Row, Sampler,
    SamplerConfig, DEFER_MAX,
};

#[derive(Clone)]
struct Iface {
    name: &'static str,
    rx_bytes: u64,
    rx_packets: u64,
    rx_dropped: u64,
    tx_bytes: u64,
    tx_packets: u64,
    rx_missed: u64,
    operstate: &'static str,
    device: Option<&'static str>,
    msi_irqs: Vec<u32>,
}

impl Iface {
    fn new(name: &'static str) -> Self {
        Iface {
            name,
            rx_bytes: 0,
            rx_packets: 0,
            rx_dropped: 0,
            tx_bytes: 0,
            tx_packets: 0,
            rx_missed: 0,
            operstate: "up",
            device: None,
            msi_irqs: Vec::new(),
        }
    }
}

#[derive(Clone)]
struct Thread {
    pid: i32,
    tid: u32,
    comm: &'static str,
    utime: u64,
    stime: u64,
    cpu: u32,
    voluntary: u64,
    nonvoluntary: u64,
}

/// Counter values of a pretend machine, written out as the kernel would print them.
#[derive(Clone)]
struct Machine {
    /// (cpu, [user nice system idle iowait irq softirq steal])
    cpus: Vec<(u32, [u64; 8])>,
    intr: u64,
    ctxt: u64,
    forks: u64,
    running: u64,
    blocked: u64,
    net_rx: Vec<u64>,
    net_tx: Vec<u64>,
    /// (irq, per-CPU counts, name)
    irqs: Vec<(u32, Vec<u64>, &'static str)>,
    ifaces: Vec<Iface>,
    /// (cpu, processed, dropped, time_squeeze, received_rps, flow_limit, backlog)
    softnet: Vec<(u32, u64, u64, u64, u64, u64, u64)>,
    tcp_retrans: u64,
    udp_rcvbuf_errors: u64,
    udp_in_datagrams: u64,
    ip_in_discards: u64,
    tcp_backlog_drop: u64,
    dsack_old: u64,
    dsack_ofo: u64,
    /// (some, full) total µs for cpu, io, memory; `None` = no /proc/pressure.
    psi: Option<[(u64, u64); 3]>,
    threads: Vec<Thread>,
}

impl Machine {
    fn new() -> Self {
        let mut eth0 = Iface::new("eth0");
        eth0.device = Some("0000:81:00.0");
        eth0.msi_irqs = vec![40, 41];
        Machine {
            cpus: vec![
                (0, [1000, 0, 500, 8000, 10, 0, 100, 0]),
                (1, [2000, 0, 500, 7000, 10, 0, 100, 0]),
            ],
            intr: 1_000_000,
            ctxt: 5_000_000,
            forks: 1000,
            running: 2,
            blocked: 0,
            net_rx: vec![100, 200],
            net_tx: vec![10, 20],
            irqs: vec![
                (0, vec![50, 0], "timer"),
                (40, vec![1000, 0], "eth0-TxRx-0"),
                (41, vec![0, 2000], "eth0-TxRx-1"),
                (50, vec![0, 0], "mlx5_comp0@pci:0000:99:00.0"),
            ],
            ifaces: vec![Iface::new("lo"), eth0],
            softnet: vec![(0, 1000, 0, 0, 0, 0, 0), (1, 2000, 0, 0, 0, 0, 0)],
            tcp_retrans: 100,
            udp_rcvbuf_errors: 0,
            udp_in_datagrams: 1000,
            ip_in_discards: 0,
            tcp_backlog_drop: 0,
            dsack_old: 0,
            dsack_ofo: 0,
            psi: Some([(1_000_000, 0), (0, 0), (0, 0)]),
            threads: vec![Thread {
                pid: 100,
                tid: 100,
                comm: "load gen",
                utime: 100,
                stime: 50,
                cpu: 1,
                voluntary: 10,
                nonvoluntary: 1,
            }],
        }
    }

    /// Time passes on every CPU: `ticks` more idle ticks each.
    fn idle(&mut self, ticks: u64) {
        for (_, t) in &mut self.cpus {
            t[3] += ticks;
        }
    }

    fn install(&self, fake: &FakeSource) {
        // A machine with no qdiscs worth recording (loopback has none), and no TCP
        // connection of the watched process (pid 100).
        fake.set_qdiscs(Vec::new());
        fake.set_tcp_sockets("net:[4026531840]", Vec::new());
        self.install_stat(fake);
        self.install_softirqs_and_interrupts(fake);
        self.install_ifaces(fake);
        self.install_net_counters(fake);
        self.install_pressure(fake);
        self.install_threads(fake);
    }

    /// /proc/stat.
    fn install_stat(&self, fake: &FakeSource) {
        let mut total = [0u64; 8];
        for (_, t) in &self.cpus {
            for (a, b) in total.iter_mut().zip(t) {
                *a += b;
            }
        }
        let line = |label: &str, t: &[u64; 8]| {
            let v: Vec<String> = t.iter().map(u64::to_string).collect();
            format!("{label} {} 0 0\n", v.join(" "))
        };
        let mut stat = line("cpu ", &total);
        for (id, t) in &self.cpus {
            stat += &line(&format!("cpu{id}"), t);
        }
        stat += &format!(
            "intr {} 0 0\nctxt {}\nbtime 1\nprocesses {}\nprocs_running {}\nprocs_blocked {}\n",
            self.intr, self.ctxt, self.forks, self.running, self.blocked
        );
        fake.set("/proc/stat", stat);
    }

    /// /proc/softirqs and /proc/interrupts, which share the CPU list of /proc/stat.
    fn install_softirqs_and_interrupts(&self, fake: &FakeSource) {
        let header: String = self
            .cpus
            .iter()
            .map(|(id, _)| format!("CPU{id} "))
            .collect();
        let join = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
        let zeros = vec![0u64; self.cpus.len()];
        fake.set(
            "/proc/softirqs",
            format!(
                "{header}\nHI: {z}\nNET_TX: {}\nNET_RX: {}\n",
                join(&self.net_tx),
                join(&self.net_rx),
                z = join(&zeros)
            ),
        );
        let mut irqs = format!("{header}\n");
        for (irq, counts, name) in &self.irqs {
            irqs += &format!(
                "{irq}: {} IR-PCI-MSIX-0000:81:00.0 {irq}-edge {name}\n",
                join(counts)
            );
        }
        irqs += &format!("LOC: {} Local timer interrupts\nERR: 0\n", join(&zeros));
        fake.set("/proc/interrupts", irqs);
    }

    /// /proc/net/dev and /sys/class/net.
    fn install_ifaces(&self, fake: &FakeSource) {
        let mut dev =
            "Inter-| Receive | Transmit\n face |bytes packets|bytes packets\n".to_string();
        for i in &self.ifaces {
            dev += &format!(
                "{}: {} {} 0 {} 0 0 0 0 {} {} 0 0 0 0 0 0\n",
                i.name,
                i.rx_bytes,
                i.rx_packets,
                // As the kernel prints it: `drop` counts the missed too.
                i.rx_dropped + i.rx_missed,
                i.tx_bytes,
                i.tx_packets
            );
            let dir = format!("/sys/class/net/{}", i.name);
            fake.set(&format!("{dir}/operstate"), format!("{}\n", i.operstate));
            fake.set(&format!("{dir}/mtu"), "1500\n");
            fake.set(
                &format!("{dir}/statistics/rx_missed_errors"),
                format!("{}\n", i.rx_missed),
            );
            fake.set(&format!("{dir}/queues/rx-0/rps_cpus"), "0\n");
            fake.set(&format!("{dir}/queues/tx-0/xps_cpus"), "0\n");
            if let Some(d) = i.device {
                fake.set(&format!("{dir}/speed"), "25000\n");
                fake.set_link(&format!("{dir}/device"), &format!("../../../{d}"));
                fake.set_link(
                    &format!("{dir}/device/driver"),
                    "../../../../bus/pci/drivers/mlx5_core",
                );
                for irq in &i.msi_irqs {
                    fake.set(&format!("{dir}/device/msi_irqs/{irq}"), "msix\n");
                }
            } else {
                fake.set_error(
                    &format!("{dir}/speed"),
                    std::io::ErrorKind::InvalidInput,
                    "Invalid argument",
                );
            }
        }
        fake.set("/proc/net/dev", dev);
    }

    /// /proc/net/softnet_stat (13 columns), /proc/net/snmp and /proc/net/netstat.
    fn install_net_counters(&self, fake: &FakeSource) {
        let softnet: String = self
            .softnet
            .iter()
            .map(|&(cpu, p, d, s, rps, flow, backlog)| {
                format!("{p:08x} {d:08x} {s:08x} 00000000 00000000 00000000 00000000 00000000 00000000 {rps:08x} {flow:08x} {backlog:08x} {cpu:08x}\n")
            })
            .collect();
        fake.set("/proc/net/softnet_stat", softnet);

        fake.set(
            "/proc/net/snmp",
            format!(
                "Ip: Forwarding InReceives InDiscards\nIp: 1 500 {}\n\
                 Tcp: MaxConn InSegs OutSegs RetransSegs\nTcp: -1 10 20 {}\n\
                 Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\n\
                 Udp: {} 0 {} 7 {} 0\n",
                self.ip_in_discards,
                self.tcp_retrans,
                self.udp_in_datagrams,
                self.udp_rcvbuf_errors,
                self.udp_rcvbuf_errors
            ),
        );
        fake.set(
            "/proc/net/netstat",
            format!(
                "TcpExt: DelayedACKs ListenDrops TCPSACKReorder TCPLostRetransmit TCPFastRetrans TCPTimeouts TCPDSACKOldSent TCPDSACKOfoSent TCPDSACKRecv TCPBacklogDrop\n\
                 TcpExt: 0 0 0 0 0 0 {} {} 0 {}\n",
                self.dsack_old, self.dsack_ofo, self.tcp_backlog_drop
            ),
        );
    }

    /// /proc/pressure, or none.
    fn install_pressure(&self, fake: &FakeSource) {
        match self.psi {
            Some(psi) => {
                for (name, (some, full)) in ["cpu", "io", "memory"].iter().zip(psi) {
                    fake.set(
                        &format!("/proc/pressure/{name}"),
                        format!(
                            "some avg10=0.00 avg60=0.00 avg300=0.00 total={some}\nfull avg10=0.00 avg60=0.00 avg300=0.00 total={full}\n"
                        ),
                    );
                }
            }
            None => fake.remove_dir("/proc/pressure"),
        }
    }

    /// The watched process (pid 100) and its threads.
    fn install_threads(&self, fake: &FakeSource) {
        fake.remove_dir("/proc/100");
        fake.set_link("/proc/100/ns/net", "net:[4026531840]");
        for t in &self.threads {
            let base = format!("/proc/{}/task/{}", t.pid, t.tid);
            fake.set(
                &format!("{base}/stat"),
                format!(
                    "{} ({}) S 1 1 1 0 -1 0 0 0 0 0 {} {} 0 0 20 0 1 0 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 {} 0 0\n",
                    t.tid, t.comm, t.utime, t.stime, t.cpu
                ),
            );
            fake.set(
                &format!("{base}/status"),
                format!(
                    "Name:\t{}\nvoluntary_ctxt_switches:\t{}\nnonvoluntary_ctxt_switches:\t{}\n",
                    t.comm, t.voluntary, t.nonvoluntary
                ),
            );
            // Derived from the other counters so that the rates are known: a call per
            // switch, a kilobyte per tick.
            fake.set(
                &format!("{base}/io"),
                format!(
                    "rchar: {}\nwchar: {}\nsyscr: {}\nsyscw: {}\nread_bytes: 0\n",
                    t.utime * 1000,
                    t.stime * 1000,
                    t.voluntary,
                    t.nonvoluntary
                ),
            );
        }
    }
}

/// The tests' machines move their counters freely (a retransmit without a packet): the
/// costly files are read at every slow reading, as `costly_files_are_read_when_what_they_
/// count_moved` does not.
fn config() -> SamplerConfig {
    SamplerConfig {
        interval: Duration::from_secs(2),
        ifaces: None,
        pids: vec![100],
        quiet_reread: Duration::ZERO,
        ..SamplerConfig::default()
    }
}

fn id(name: &str) -> MetricId {
    MetricId::new(name)
}

/// A named process's CPU share at nice 0, as a scan records it.
fn proc_cpu(pid: u32, comm: &str, cpu: u32) -> MetricId {
    MetricId::new(PROC_CPU_PCT)
        .with(LABEL_PID, pid.to_string())
        .with(LABEL_COMM, comm)
        .with(LABEL_CPU, cpu.to_string())
        .with(LABEL_NICE, "0")
}

fn cpu(name: &str, n: u32) -> MetricId {
    MetricId::new(name).with(LABEL_CPU, n.to_string())
}

fn iface(name: &str, i: &str) -> MetricId {
    MetricId::new(name).with(LABEL_IFACE, i)
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

#[track_caller]
fn assert_value(row: &Row, metric: &MetricId, expected: f64) {
    let got = row.get(metric);
    assert!(
        close(got, expected),
        "{metric}: got {got:?}, expected {expected}"
    );
}

/// Every value of the machine was given. The watched process holds no TCP connection, so
/// the busy time of its flows, an average over none, is the one thing missing.
#[track_caller]
fn assert_nothing_missing(row: &Row) {
    let missing: Vec<_> = row
        .missing
        .iter()
        .filter(|m| m.1 != NO_FLOW_REASON)
        .collect();
    assert!(missing.is_empty(), "{missing:?}");
    assert_eq!(row.get(&id(TCP_FLOWS)), Some(0.0));
}

/// Takes a baseline on `before`, advances the clock, installs `after`, and returns the row.
fn interval(before: &Machine, after: &Machine, secs: u64) -> Row {
    let fake = FakeSource::new();
    before.install(&fake);
    fake.set_thread_cpu(Some(Duration::from_millis(10)));
    let mut s = Sampler::new(fake.clone(), config());
    let a = s.sample();
    fake.advance(Duration::from_secs(secs));
    after.install(&fake);
    fake.set_thread_cpu(Some(Duration::from_millis(12)));
    let b = s.sample();
    rates(&a, &b)
}

#[test]
fn two_samples_give_rates_over_the_measured_interval() {
    let m0 = Machine::new();
    let mut m1 = m0.clone();
    // 2 s later. cpu0: +200 ticks: 60 user, 20 system, 100 idle, 20 softirq.
    m1.cpus[0].1 = [1060, 0, 520, 8100, 10, 0, 120, 0];
    // cpu1: +200 ticks, all user.
    m1.cpus[1].1 = [2200, 0, 500, 7000, 10, 0, 100, 0];
    m1.intr += 40_000;
    m1.ctxt += 10_000;
    m1.forks += 6;
    m1.running = 5;
    m1.net_rx = vec![100 + 3000, 200 + 1000];
    m1.net_tx = vec![10, 20 + 40];
    m1.irqs[1].1 = vec![1000 + 8000, 0];
    m1.irqs[2].1 = vec![4, 2000 + 2000];
    let eth0 = &mut m1.ifaces[1];
    eth0.rx_bytes = 250_000_000;
    eth0.rx_packets = 200_000;
    eth0.rx_dropped = 30;
    eth0.tx_bytes = 1_000;
    eth0.tx_packets = 10;
    eth0.rx_missed = 8;
    m1.softnet[0].1 += 100_000;
    m1.softnet[0].2 += 4;
    m1.softnet[0].3 += 10;
    m1.softnet[1].6 = 7;
    m1.tcp_retrans += 50;
    m1.udp_rcvbuf_errors += 20;
    m1.udp_in_datagrams += 2_000_000;
    m1.ip_in_discards += 2;
    m1.tcp_backlog_drop += 4;
    m1.dsack_old += 3;
    m1.dsack_ofo += 1;
    m1.psi = Some([(1_000_000 + 500_000, 100_000), (0, 0), (0, 0)]);
    m1.threads[0].utime += 150;
    m1.threads[0].stime += 50;
    m1.threads[0].voluntary += 2000;
    m1.threads[0].nonvoluntary += 20;
    m1.threads[0].cpu = 0;

    let row = interval(&m0, &m1, 2);
    assert!(close(Some(row.elapsed_s), 2.0));

    // CPU shares: ticks over ticks.
    assert_value(&row, &cpu(CPU_USER_PCT, 0), 30.0);
    assert_value(&row, &cpu(CPU_SYSTEM_PCT, 0), 10.0);
    assert_value(&row, &cpu(CPU_SOFTIRQ_PCT, 0), 10.0);
    assert_value(&row, &cpu(CPU_IDLE_PCT, 0), 50.0);
    assert_value(&row, &cpu(CPU_BUSY_PCT, 0), 50.0);
    assert_value(&row, &cpu(CPU_IOWAIT_PCT, 0), 0.0);
    assert_value(&row, &cpu(CPU_BUSY_PCT, 1), 100.0);
    // Unlabeled: the average over both CPUs, from the `cpu` line.
    assert_value(&row, &id(CPU_BUSY_PCT), 75.0);
    assert_value(&row, &id(CPU_USER_PCT), 65.0);
    assert_eq!(row.by_name(CPU_BUSY_PCT).count(), 3);

    assert_value(&row, &id(INTR_PER_S), 20_000.0);
    assert_value(&row, &id(CS_PER_S), 5_000.0);
    assert_value(&row, &id(FORKS_PER_S), 3.0);
    assert_value(&row, &id(PROCS_RUNNING), 5.0);
    assert_value(&row, &id(PROCS_BLOCKED), 0.0);

    assert_value(&row, &cpu(SOFTIRQ_NET_RX_PER_S, 0), 1500.0);
    assert_value(&row, &cpu(SOFTIRQ_NET_RX_PER_S, 1), 500.0);
    assert_value(&row, &id(SOFTIRQ_NET_RX_PER_S), 2000.0);
    assert_value(&row, &id(SOFTIRQ_NET_TX_PER_S), 20.0);

    // NIC IRQs: tied to eth0 through its device's msi_irqs, queue from the name.
    let q0 = MetricId::new(IRQ_PER_S)
        .with(LABEL_IRQ, "40")
        .with(LABEL_IFACE, "eth0")
        .with(LABEL_QUEUE, "0")
        .with(LABEL_DIR, "rxtx");
    assert_value(&row, &q0, 4000.0);
    let q1 = MetricId::new(IRQ_PER_S)
        .with(LABEL_IRQ, "41")
        .with(LABEL_IFACE, "eth0")
        .with(LABEL_QUEUE, "1")
        .with(LABEL_DIR, "rxtx");
    assert_value(&row, &q1, 1002.0);
    // An mlx5 vector of a PCI device no interface owns keeps its address.
    let orphan = MetricId::new(IRQ_PER_S)
        .with(LABEL_IRQ, "50")
        .with(LABEL_DEVICE, "0000:99:00.0")
        .with(LABEL_QUEUE, "0")
        .with(LABEL_DIR, "rxtx");
    assert_value(&row, &orphan, 0.0);
    assert_value(&row, &cpu(NIC_IRQ_PER_S, 0), 4002.0);
    assert_value(&row, &cpu(NIC_IRQ_PER_S, 1), 1000.0);
    assert_value(&row, &id(NIC_IRQ_PER_S), 5002.0);
    assert!(row
        .by_name(IRQ_PER_S)
        .all(|(m, _, _)| m.label(LABEL_IRQ) != Some("0")));

    assert_value(&row, &iface(IFACE_RX_BITS_PER_S, "eth0"), 1e9);
    assert_value(&row, &iface(IFACE_RX_PPS, "eth0"), 100_000.0);
    // /proc/net/dev's `drop`: 30 dropped and 8 missed in 2 s.
    assert_value(&row, &iface(IFACE_RX_DROPPED_PER_S, "eth0"), 19.0);
    assert_value(&row, &iface(IFACE_TX_BITS_PER_S, "eth0"), 4000.0);
    assert_value(&row, &iface(IFACE_TX_PPS, "eth0"), 5.0);
    assert_value(&row, &iface(IFACE_RX_MISSED_PER_S, "eth0"), 4.0);
    assert_value(&row, &iface(IFACE_RX_BITS_PER_S, "lo"), 0.0);
    let unit = row
        .iter()
        .find(|(m, _, _)| **m == iface(IFACE_RX_BITS_PER_S, "eth0"))
        .unwrap()
        .1;
    assert_eq!(unit, Unit::BitsPerSecond);

    assert_value(&row, &cpu(SOFTNET_PROCESSED_PER_S, 0), 50_000.0);
    assert_value(&row, &id(SOFTNET_PROCESSED_PER_S), 50_000.0);
    assert_value(&row, &id(SOFTNET_DROPPED_PER_S), 2.0);
    assert_value(&row, &cpu(SOFTNET_TIME_SQUEEZE_PER_S, 0), 5.0);
    assert_value(&row, &cpu(SOFTNET_BACKLOG_LEN, 1), 7.0);
    assert_value(&row, &id(SOFTNET_BACKLOG_LEN), 7.0);

    assert_value(&row, &id(TCP_RETRANS_SEGS_PER_S), 25.0);
    assert_value(&row, &id(UDP_RCVBUF_ERRORS_PER_S), 10.0);
    assert_value(&row, &id(UDP_IN_ERRORS_PER_S), 10.0);
    assert_value(&row, &id(UDP_IN_DATAGRAMS_PER_S), 1_000_000.0);
    assert_value(&row, &id(IP_IN_DISCARDS_PER_S), 1.0);
    assert_value(&row, &id(TCP_BACKLOG_DROP_PER_S), 2.0);
    assert_value(&row, &id(TCP_DSACK_SENT_PER_S), 2.0);

    assert_value(&row, &id(PSI_CPU_SOME_PCT), 25.0);
    assert_value(&row, &id(PSI_CPU_FULL_PCT), 5.0);

    let thread = |name: &str| {
        MetricId::new(name)
            .with(LABEL_PID, "100")
            .with(LABEL_TID, "100")
            .with(LABEL_COMM, "load gen")
    };
    assert_value(&row, &thread(THREAD_CPU_PCT), 100.0);
    assert_value(&row, &thread(THREAD_USER_PCT), 75.0);
    assert_value(&row, &thread(THREAD_SYSTEM_PCT), 25.0);
    assert_value(&row, &thread(THREAD_VOLUNTARY_CS_PER_S), 1000.0);
    assert_value(&row, &thread(THREAD_NONVOLUNTARY_CS_PER_S), 10.0);
    assert_value(&row, &thread(THREAD_LAST_CPU), 0.0);
    assert_value(&row, &thread(THREAD_SYSCALLS_PER_S), 1010.0);
    assert_value(&row, &thread(THREAD_IO_BYTES_PER_S), 100_000.0);

    assert_value(&row, &id(SAMPLER_CPU_PCT), 0.1);
    assert_nothing_missing(&row);
}

#[test]
fn wraps_are_followed_and_resets_never_spike() {
    let mut m0 = Machine::new();
    m0.softnet[0].1 = 0xFFFF_FF00; // 32-bit softnet counter about to wrap
    m0.net_rx[0] = u64::from(u32::MAX) - 99; // 32-bit softirq counter about to wrap
    m0.ifaces[1].rx_missed = (1 << 32) - 100; // a driver's 32-bit hardware counter
    m0.ifaces[1].rx_packets = 4_294_967_000;
    m0.ifaces[1].rx_bytes = 5_000_000_000;
    m0.tcp_retrans = 1_000_000;
    let mut m1 = m0.clone();
    m1.softnet[0].1 = 0x100;
    m1.net_rx[0] = 100;
    m1.ifaces[1].rx_missed = 50;
    m1.ifaces[1].rx_packets = 704;
    // Interface re-created: bytes restart from 0.
    m1.ifaces[1].rx_bytes = 1000;
    // netstat counters reset (namespace re-created): a reset, not a wrap.
    m1.tcp_retrans = 10;

    let row = interval(&m0, &m1, 2);
    assert_value(&row, &cpu(SOFTNET_PROCESSED_PER_S, 0), 256.0);
    assert_value(&row, &cpu(SOFTIRQ_NET_RX_PER_S, 0), 100.0);
    assert_value(&row, &iface(IFACE_RX_MISSED_PER_S, "eth0"), 75.0);
    assert_value(&row, &iface(IFACE_RX_PPS, "eth0"), 500.0);
    // The reset counters have no value and say why; nothing is huge.
    let bits = iface(IFACE_RX_BITS_PER_S, "eth0");
    assert_eq!(row.get(&bits), None);
    assert_eq!(row.missing_reason(&bits.to_string()), Some(RESET_REASON));
    assert_eq!(row.total(TCP_RETRANS_SEGS_PER_S), None);
    assert_eq!(
        row.missing_reason(TCP_RETRANS_SEGS_PER_S),
        Some(RESET_REASON)
    );
    for (m, _, v) in row.iter() {
        assert!(v < 1e6, "{m} = {v} looks like a spike");
    }

    // The interval after a reset is measured normally again.
    let mut m2 = m1.clone();
    m2.ifaces[1].rx_bytes += 2000;
    m2.tcp_retrans += 4;
    let row = interval(&m1, &m2, 2);
    assert_value(&row, &bits, 8000.0);
    assert_value(&row, &id(TCP_RETRANS_SEGS_PER_S), 2.0);
}

#[test]
fn counter_delta_rule() {
    use CounterWidth::{Native, U32};
    assert_eq!(counter_delta(5, 7, Native), Some(2));
    assert_eq!(counter_delta(u64::MAX - 1, u64::MAX, Native), Some(1));
    // 32-bit wrap near the top is followed for both widths.
    assert_eq!(counter_delta(u64::from(u32::MAX), 0, Native), Some(1));
    assert_eq!(counter_delta(u64::from(u32::MAX) - 9, 5, U32), Some(15));
    // Far from the top, a Native decrease is a reset; a U32 one still a wrap if plausible.
    assert_eq!(counter_delta(3_000_000_000, 5, Native), None);
    assert_eq!(
        counter_delta(3_000_000_000, 5, U32),
        Some((1 << 32) - 3_000_000_000 + 5)
    );
    // A wrap that would mean ≥ 2^31 events in one interval is not believed.
    assert_eq!(counter_delta(1000, 5, U32), None);
    // Above 32 bits there is no wrap to follow.
    assert_eq!(counter_delta(1 << 40, 5, Native), None);
    assert_eq!(counter_delta(1 << 40, 5, U32), None);
    // Near the top but the new value is large: a reset, not a wrap.
    assert_eq!(counter_delta(u64::from(u32::MAX), 1 << 30, Native), None);
}

#[test]
fn a_cpu_appearing_starts_next_interval_and_one_leaving_is_missing() {
    let fake = FakeSource::new();
    let m0 = Machine::new();
    m0.install(&fake);
    fake.set_thread_cpu(Some(Duration::ZERO));
    let mut s = Sampler::new(fake.clone(), config());
    let a = s.sample();

    // cpu2 comes online.
    let mut m1 = m0.clone();
    m1.idle(100);
    m1.cpus.push((2, [0, 0, 0, 100, 0, 0, 0, 0]));
    m1.net_rx.push(0);
    m1.net_tx.push(0);
    for irq in &mut m1.irqs {
        irq.1.push(0);
    }
    m1.softnet.push((2, 0, 0, 0, 0, 0, 0));
    fake.advance(Duration::from_secs(1));
    m1.install(&fake);
    let b = s.sample();
    let row = rates(&a, &b);
    assert!(row.get(&cpu(CPU_BUSY_PCT, 0)).is_some());
    assert!(row.get(&cpu(CPU_BUSY_PCT, 2)).is_none());
    assert!(row.get(&cpu(SOFTIRQ_NET_RX_PER_S, 2)).is_none());
    assert!(row.get(&cpu(SOFTNET_PROCESSED_PER_S, 2)).is_none());
    assert_nothing_missing(&row);

    let mut m2 = m1.clone();
    m2.idle(100);
    m2.cpus[2].1 = [40, 0, 10, 150, 0, 0, 0, 0];
    m2.net_rx[2] = 300;
    fake.advance(Duration::from_secs(1));
    m2.install(&fake);
    let c = s.sample();
    let row = rates(&b, &c);
    assert_value(&row, &cpu(CPU_BUSY_PCT, 2), 50.0);
    assert_value(&row, &cpu(SOFTIRQ_NET_RX_PER_S, 2), 300.0);
    assert_value(&row, &cpu(SOFTNET_PROCESSED_PER_S, 2), 0.0);

    // cpu1 goes offline: its lines disappear from every file.
    let mut m3 = m2.clone();
    m3.idle(100);
    m3.cpus.remove(1);
    m3.net_rx.remove(1);
    m3.net_tx.remove(1);
    for irq in &mut m3.irqs {
        irq.1.remove(1);
    }
    m3.softnet.remove(1);
    fake.advance(Duration::from_secs(1));
    m3.install(&fake);
    let d = s.sample();
    let row = rates(&c, &d);
    assert!(row.get(&cpu(CPU_BUSY_PCT, 1)).is_none());
    assert_eq!(
        row.missing_reason(&cpu(CPU_BUSY_PCT, 1).to_string()),
        Some("cpu1 went offline")
    );
    assert!(row.get(&cpu(CPU_BUSY_PCT, 2)).is_some());
    assert!(row.get(&cpu(NIC_IRQ_PER_S, 2)).is_some());
}

#[test]
fn missing_pressure_is_recorded_once_and_never_as_zero() {
    let fake = FakeSource::new();
    let mut m = Machine::new();
    m.psi = None;
    m.install(&fake);
    let mut s = Sampler::new(fake.clone(), config());
    let mut rec = Recorder::new(Duration::from_secs(2));
    assert!(
        rec.push(s.sample()).is_none(),
        "the first sample is the baseline"
    );
    for _ in 0..3 {
        fake.advance(Duration::from_secs(2));
        m.idle(200);
        m.install(&fake);
        let row = rec.push(s.sample()).expect("a row per interval");
        assert!(row.total(PSI_CPU_SOME_PCT).is_none());
    }
    let series = rec.into_series();
    assert_eq!(series.t_s, [2.0, 4.0, 6.0]);
    assert!(
        series.total(PSI_CPU_SOME_PCT).is_none(),
        "no column of zeros"
    );
    let notes: Vec<_> = series
        .missing
        .iter()
        .filter(|m| m.metric == PSI_CPU_SOME_PCT)
        .collect();
    assert_eq!(notes.len(), 1, "{:?}", series.missing);
    assert_eq!(
        notes[0].reason,
        "/proc/pressure/cpu: No such file or directory (kernel without CONFIG_PSI, or booted with psi=0)"
    );
    assert_eq!(notes[0].from_row, 0);
    // Everything else was recorded in every row.
    let busy = series.total(CPU_BUSY_PCT).unwrap();
    assert!(busy.values.iter().all(Option::is_some));
}

#[test]
fn recorder_places_late_metrics_and_measured_times() {
    let fake = FakeSource::new();
    let m0 = Machine::new();
    m0.install(&fake);
    let mut s = Sampler::new(fake.clone(), config());
    let mut rec = Recorder::new(Duration::from_secs(1));
    rec.push(s.sample());
    fake.advance(Duration::from_millis(1000));
    rec.push(s.sample());
    // A late sample: the interval is longer, the rate the same.
    let mut m2 = m0.clone();
    m2.ctxt += 1500;
    m2.cpus.push((2, [0, 0, 0, 100, 0, 0, 0, 0]));
    fake.advance(Duration::from_millis(1500));
    m2.install(&fake);
    let row = rec.push(s.sample()).unwrap();
    assert!(close(Some(row.t_s), 2.5));
    assert!(close(Some(row.elapsed_s), 1.5));
    assert_value(&row, &id(CS_PER_S), 1000.0);
    let mut m3 = m2.clone();
    m3.cpus[2].1[0] += 10;
    m3.cpus[2].1[3] += 90;
    fake.advance(Duration::from_millis(1000));
    m3.install(&fake);
    rec.push(s.sample());
    let series = rec.series();
    assert!(close(Some(series.interval_s), 1.0));
    assert_eq!(series.t_s, [1.0, 2.5, 3.5]);
    let cs = &series.total(CS_PER_S).unwrap().values;
    assert_eq!(cs, &[Some(0.0), Some(1000.0), Some(0.0)]);
    let cpu2 = series.get(&cpu(CPU_BUSY_PCT, 2)).unwrap();
    assert_eq!(cpu2.values, [None, None, Some(10.0)]);
    assert_eq!(cpu2.unit, Unit::Percent);
}

#[test]
fn busy_is_the_wall_time_less_idle_when_ticks_missed_it() {
    // 1 s = 100 ticks. cpu0: 60 idle ticks and only 4 busy ones: the CPU ran in bursts between
    // scheduler ticks; idle is exact, so 40 % of the second was busy. The columns' split of
    // what the ticks saw is of the wall time.
    let m0 = Machine::new();
    let mut m1 = m0.clone();
    m1.cpus[0].1 = [1003, 0, 501, 8060, 10, 0, 100, 0];
    m1.cpus[1].1 = [2000, 0, 500, 7100, 10, 0, 100, 0];
    let row = interval(&m0, &m1, 1);
    assert_value(&row, &cpu(CPU_BUSY_PCT, 0), 40.0);
    assert_value(&row, &cpu(CPU_IDLE_PCT, 0), 60.0);
    assert_value(&row, &cpu(CPU_USER_PCT, 0), 3.0);
    assert_value(&row, &cpu(CPU_SYSTEM_PCT, 0), 1.0);
    assert_value(&row, &cpu(CPU_BUSY_PCT, 1), 0.0);
    // All CPUs: 200 ticks of wall time, 160 of them idle.
    assert_value(&row, &id(CPU_BUSY_PCT), 20.0);

    // Iowait is not busy either, and a tick of rounding over the wall time is no busy time.
    let mut m2 = m0.clone();
    m2.cpus[0].1 = [1000, 0, 500, 8071, 40, 0, 100, 0];
    let row = interval(&m0, &m2, 1);
    assert_value(&row, &cpu(CPU_BUSY_PCT, 0), 0.0);
    assert_value(&row, &cpu(CPU_IOWAIT_PCT, 0), 30.0);
}

#[test]
fn columns_over_the_wall_time_are_shares_of_their_sum() {
    // 1 s, but 200 ticks counted: not the clock /proc/stat was read by. Shares of the columns.
    let m0 = Machine::new();
    let mut m1 = m0.clone();
    m1.cpus[0].1 = [1050, 0, 500, 8150, 10, 0, 100, 0];
    let row = interval(&m0, &m1, 1);
    assert_value(&row, &cpu(CPU_BUSY_PCT, 0), 25.0);
    assert_value(&row, &cpu(CPU_USER_PCT, 0), 25.0);
}

#[test]
fn iowait_going_backwards_only_hides_iowait() {
    let m0 = Machine::new();
    let mut m1 = m0.clone();
    m1.cpus[0].1 = [1050, 0, 500, 8050, 5, 0, 100, 0];
    let row = interval(&m0, &m1, 1);
    assert!(row.get(&cpu(CPU_IOWAIT_PCT, 0)).is_none());
    assert!(row
        .missing_reason(&cpu(CPU_IOWAIT_PCT, 0).to_string())
        .unwrap()
        .contains("iowait went backwards"));
    assert_value(&row, &cpu(CPU_USER_PCT, 0), 50.0);
    assert_value(&row, &cpu(CPU_BUSY_PCT, 0), 50.0);
}

#[test]
fn interfaces_and_threads_coming_and_going() {
    let fake = FakeSource::new();
    let mut m0 = Machine::new();
    let mut down = Iface::new("ifb0");
    down.operstate = "down";
    m0.ifaces.push(down);
    m0.install(&fake);
    let mut cfg = config();
    cfg.pids = vec![100, 4242];
    let mut s = Sampler::new(fake.clone(), cfg);
    let a = s.sample();
    assert_eq!(a.slow.process_errors.len(), 1, "pid 4242 does not exist");
    let nics: Vec<String> = s.nic_info().into_iter().map(|n| n.name).collect();
    assert_eq!(nics, ["eth0", "lo"], "down interfaces are left out");
    let eth0 = s.nic_info().into_iter().find(|n| n.name == "eth0").unwrap();
    assert_eq!(
        (
            eth0.driver.as_deref(),
            eth0.speed_mbit,
            eth0.mtu,
            eth0.rx_queues
        ),
        (Some("mlx5_core"), Some(25_000), Some(1500), Some(1))
    );

    // veth0 appears, a second thread starts, and eth0's thread 100 exits.
    let mut m1 = m0.clone();
    m1.ifaces.push(Iface::new("veth0"));
    m1.threads[0].tid = 101;
    fake.advance(Duration::from_secs(1));
    m1.install(&fake);
    let b = s.sample();
    let row = rates(&a, &b);
    assert!(row.get(&iface(IFACE_RX_PPS, "veth0")).is_none());
    assert!(row.get(&iface(IFACE_RX_PPS, "ifb0")).is_none());
    let gone = MetricId::new(THREAD_CPU_PCT)
        .with(LABEL_PID, "100")
        .with(LABEL_TID, "100")
        .with(LABEL_COMM, "load gen");
    assert_eq!(row.missing_reason(&gone.to_string()), Some("thread exited"));
    let no_pid = MetricId::new(THREAD_CPU_PCT).with(LABEL_PID, "4242");
    assert!(row
        .missing_reason(&no_pid.to_string())
        .unwrap()
        .contains("/proc/4242/task"));

    let mut m2 = m1.clone();
    m2.ifaces[3].rx_packets = 50;
    m2.threads[0].utime += 20;
    // eth0 is removed.
    m2.ifaces.remove(1);
    m2.irqs.retain(|i| i.0 != 40 && i.0 != 41);
    fake.advance(Duration::from_secs(1));
    fake.remove_dir("/sys/class/net/eth0");
    m2.install(&fake);
    let c = s.sample();
    let row = rates(&b, &c);
    assert_value(&row, &iface(IFACE_RX_PPS, "veth0"), 50.0);
    let t101 = MetricId::new(THREAD_CPU_PCT)
        .with(LABEL_PID, "100")
        .with(LABEL_TID, "101")
        .with(LABEL_COMM, "load gen");
    assert_value(&row, &t101, 20.0);
    assert!(row
        .missing_reason(&iface(IFACE_RX_PPS, "eth0").to_string())
        .unwrap()
        .contains("eth0 vanished"));
    let q0 = MetricId::new(IRQ_PER_S)
        .with(LABEL_IRQ, "40")
        .with(LABEL_IFACE, "eth0")
        .with(LABEL_QUEUE, "0")
        .with(LABEL_DIR, "rxtx");
    assert!(row.missing_reason(&q0.to_string()).is_some());

    // Rows made with shared identities and schemas, while the set of metrics changes from
    // row to row, say exactly what rows made afresh say.
    let mut shared = MetricIds::new();
    for (x, y) in [(&a, &b), (&b, &c), (&a, &b), (&b, &c), (&b, &c)] {
        let fresh = rates(x, y);
        let reused = rates_with(&mut shared, x, y);
        let list = |r: &Row| -> Vec<(String, Unit, f64)> {
            r.iter().map(|(m, u, v)| (m.to_string(), u, v)).collect()
        };
        assert_eq!(list(&reused), list(&fresh));
        assert_eq!(reused.missing, fresh.missing);
    }
}

#[test]
fn an_interface_asked_for_by_name_that_is_absent() {
    let fake = FakeSource::new();
    Machine::new().install(&fake);
    let mut cfg = config();
    cfg.ifaces = Some(vec!["eth0".into(), "eth9".into()]);
    let mut s = Sampler::new(fake.clone(), cfg);
    let a = s.sample();
    fake.advance(Duration::from_secs(1));
    let b = s.sample();
    let row = rates(&a, &b);
    assert!(row.get(&iface(IFACE_RX_PPS, "eth0")).is_some());
    assert!(
        row.get(&iface(IFACE_RX_PPS, "lo")).is_none(),
        "not asked for"
    );
    assert_eq!(
        row.missing_reason(&iface(IFACE_RX_PPS, "eth9").to_string()),
        Some("no interface eth9 in /proc/net/dev")
    );
    // IRQs of devices that belong to no recorded interface are left out too.
    assert!(row
        .by_name(IRQ_PER_S)
        .all(|(m, _, _)| m.label(LABEL_IFACE) == Some("eth0")));
}

#[test]
fn unreadable_and_malformed_sources_are_missing_with_their_reason() {
    let fake = FakeSource::new();
    Machine::new().install(&fake);
    let mut s = Sampler::new(fake.clone(), config());
    let a = s.sample();
    fake.advance(Duration::from_secs(1));
    fake.set("/proc/net/softnet_stat", "00000001 zz\n");
    fake.set_error(
        "/proc/net/snmp",
        std::io::ErrorKind::PermissionDenied,
        "Permission denied",
    );
    let b = s.sample();
    let row = rates(&a, &b);
    assert_eq!(
        row.missing_reason(SOFTNET_PROCESSED_PER_S),
        Some(
            "/proc/net/softnet_stat: line 1, field 2: expected a hex number (dropped), found 'zz'"
        )
    );
    assert!(row.total(SOFTNET_PROCESSED_PER_S).is_none());
    assert_eq!(
        row.missing_reason(UDP_RCVBUF_ERRORS_PER_S),
        Some("/proc/net/snmp: Permission denied")
    );
    // Sources that did read still give values.
    assert!(row.total(CS_PER_S).is_some());
    assert!(row.total(TCP_BACKLOG_DROP_PER_S).is_some());
}

#[test]
fn no_elapsed_time_gives_no_values() {
    let fake = FakeSource::new();
    Machine::new().install(&fake);
    let mut s = Sampler::new(fake, config());
    let a = s.sample();
    let b = s.sample();
    let row = rates(&a, &b);
    assert!(row.is_empty());
    assert_eq!(row.missing.len(), 1);
}

#[test]
fn config_validation() {
    let mut c = SamplerConfig::default();
    assert_eq!(c.interval, Duration::from_secs(1));
    assert!(c.validate().is_ok());
    c.interval = Duration::from_millis(10);
    assert!(c.validate().is_ok());
    c.interval = Duration::from_millis(5);
    assert!(c.validate().unwrap_err().contains("below"));
}

#[test]
fn at_10ms_the_slow_tier_is_read_every_100ms() {
    let fake = FakeSource::new();
    let mut m = Machine::new();
    m.install(&fake);
    fake.set_thread_cpu(Some(Duration::ZERO));
    let mut cfg = config();
    cfg.interval = Duration::from_millis(10);
    let mut s = Sampler::new(fake.clone(), cfg);
    let mut rec = Recorder::new(Duration::from_millis(10));
    rec.push(s.sample());
    let mut slow_rows = Vec::new();
    for i in 1..=30 {
        fake.advance(Duration::from_millis(10));
        m.idle(1);
        m.ctxt += 10;
        m.tcp_retrans += 1;
        m.install(&fake);
        let row = rec.push(s.sample()).unwrap();
        // The fast tier is in every row, over 10 ms.
        assert_value(&row, &id(CS_PER_S), 1000.0);
        if let Some(v) = row.total(TCP_RETRANS_SEGS_PER_S) {
            slow_rows.push(i);
            // Over the 100 ms since the last slow reading: 10 retransmits.
            assert!((v - 100.0).abs() < 1e-6, "row {i}: {v}");
        }
    }
    assert_eq!(slow_rows, [10, 20, 30]);
    let series = rec.into_series();
    let notes: Vec<_> = series
        .missing
        .iter()
        .filter(|m| m.metric == TCP_RETRANS_SEGS_PER_S)
        .collect();
    assert_eq!(notes.len(), 1);
    assert!(notes[0].reason.contains("slow_interval"));
    assert!(series
        .missing
        .iter()
        .all(|m| !m.metric.starts_with("cpu_") && m.metric != CS_PER_S));
}

/// At 10 ms the fast tier's text may wait to be parsed (`Sampler::sample_deferred`): what
/// comes out must be what reading and parsing at every tick makes, snapshot for snapshot,
/// through counters that move, an interface that appears, a file that cannot be parsed and
/// one that cannot be read; none waits `DEFER_MAX`, and none is lost at the end.
#[test]
fn parsing_later_makes_the_snapshots_of_every_tick() {
    let (at_once, later) = (FakeSource::new(), FakeSource::new());
    let mut m = Machine::new();
    m.ifaces.truncate(1);
    let mut cfg = config();
    cfg.interval = Duration::from_millis(10);
    // Slow readings every 7 ticks, batches of at most 5: they fall anywhere in a batch.
    cfg.slow_interval = Duration::from_millis(70);
    let mut each = Sampler::new(at_once.clone(), cfg.clone());
    let mut deferred = Sampler::new(later.clone(), cfg);
    let (mut expected, mut got) = (Vec::new(), Vec::new());
    let mut deferred_ticks = 0;
    for i in 0..60u64 {
        m.idle(1);
        m.cpus[1].1[0] += i % 3;
        m.ctxt += 7 * i;
        m.intr += 50 * (i % 4);
        m.net_rx[1] += i;
        m.tcp_retrans += 1;
        m.ifaces[0].rx_packets += 3 * i;
        if i == 25 {
            m.ifaces.push(Iface::new("eth1"));
        }
        for fake in [&at_once, &later] {
            if i > 0 {
                fake.advance(Duration::from_millis(10));
            }
            fake.set_thread_cpu(Some(Duration::from_micros(100 * i)));
            m.install(fake);
            if i == 33 {
                fake.set("/proc/softirqs", "CPU0 CPU1\nNET_RX: 1\n");
            }
            if i == 41 {
                fake.set_error("/proc/stat", std::io::ErrorKind::PermissionDenied, "denied");
            }
        }
        expected.push(each.sample());
        let before = got.len();
        deferred.sample_deferred(&mut got);
        if got.len() == before {
            deferred_ticks += 1;
        }
        let waiting = expected.len() - got.len();
        assert!(
            Duration::from_millis(10) * (waiting as u32) < DEFER_MAX,
            "tick {i}: {waiting} ticks wait to be parsed"
        );
    }
    deferred.flush_deferred(&mut got);
    assert!(deferred_ticks >= 30, "only {deferred_ticks} ticks deferred");
    assert_eq!(got.len(), expected.len());
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g, e, "tick {i}");
    }
    assert!(got[33].softirqs.is_err() && got[41].stat.is_err());
    assert!(got[59].net_dev.as_ref().unwrap().ifaces.len() == 2);
}

fn qdisc(netns: Option<&str>, kind: &str, handle: &str, bytes: u64, overlimits: u64) -> QdiscStats {
    QdiscStats {
        netns: netns.map(str::to_string),
        ifindex: 7,
        iface: Some("veth-a".into()),
        kind: kind.into(),
        handle: handle.into(),
        parent: "root".into(),
        bytes,
        packets: bytes / 1000,
        drops: 0,
        overlimits,
        requeues: 0,
        backlog_bytes: 3000,
        qlen: 2,
        rate_bytes_per_s: (kind == "tbf").then_some(6_250_000),
    }
}

#[test]
fn qdisc_counters_become_rates_per_namespace_and_a_replaced_qdisc_is_not_a_spike() {
    let fake = FakeSource::new();
    Machine::new().install(&fake);
    let mut s = Sampler::new(fake.clone(), config());
    fake.set_qdiscs(vec![
        qdisc(Some("lab-a"), "tbf", "8001:", 1_000_000, 10),
        qdisc(None, "noqueue", "none", 0, 0),
        qdisc(None, "fq_codel", "0:", 5_000, 0),
    ]);
    let a = s.sample();
    fake.advance(Duration::from_secs(2));
    fake.set_qdiscs(vec![
        qdisc(Some("lab-a"), "tbf", "8001:", 13_500_000, 410),
        qdisc(None, "noqueue", "none", 0, 0),
        // Replaced by a qdisc of another kind under the same handle: counters restart.
        qdisc(None, "pfifo", "0:", 100, 0),
    ]);
    let b = s.sample();
    let row = rates(&a, &b);
    let tbf = |name: &str| {
        MetricId::new(name)
            .with(LABEL_IFACE, "veth-a")
            .with(LABEL_QDISC, "tbf")
            .with(LABEL_HANDLE, "8001:")
            .with(LABEL_NETNS, "lab-a")
    };
    assert_value(&row, &tbf(QDISC_BITS_PER_S), 12_500_000.0 * 8.0 / 2.0);
    assert_value(&row, &tbf(QDISC_OVERLIMITS_PER_S), 200.0);
    assert_value(&row, &tbf(QDISC_RATE_BITS_PER_S), 50e6);
    assert_value(&row, &tbf(QDISC_BACKLOG_BYTES), 3000.0);
    // noqueue passes packets through: nothing to record.
    assert!(row
        .iter()
        .all(|(id, _, _)| id.label(LABEL_QDISC) != Some("noqueue")));
    let pfifo = MetricId::new(QDISC_BITS_PER_S)
        .with(LABEL_IFACE, "veth-a")
        .with(LABEL_QDISC, "pfifo")
        .with(LABEL_HANDLE, "0:");
    assert_eq!(row.get(&pfifo), None);
    assert!(row.missing_reason(&pfifo.to_string()).is_some());
}

#[test]
fn a_source_without_qdisc_statistics_says_why() {
    let fake = FakeSource::new();
    Machine::new().install(&fake);
    let fake = fake.without_qdiscs();
    let mut s = Sampler::new(fake.clone(), config());
    let a = s.sample();
    fake.advance(Duration::from_secs(2));
    let b = s.sample();
    let row = rates(&a, &b);
    let why = row.missing_reason(QDISC_BITS_PER_S).expect("a reason");
    assert!(why.contains("no qdisc statistics"), "{why}");
}

#[test]
fn interrupts_are_split_into_devices_timers_and_ipis() {
    let text = |dev: u64, loc: u64, res: u64, cal: u64| {
        format!(
            "           CPU0       CPU1\n 41:  {dev}  0  PCI-MSIX-0000:00:04.0   1-edge      virtio3-rx\n\
             LOC:  {loc}  {loc}  Local timer interrupts\n\
             RES:  {res}  0  Rescheduling interrupts\n\
             CAL:  0  {cal}  Function call interrupts\n\
             ERR:          0\n"
        )
    };
    let fake = FakeSource::new();
    let mut m = Machine::new();
    m.install(&fake);
    fake.set("/proc/interrupts", text(100, 1000, 50, 7));
    let mut s = Sampler::new(fake.clone(), config());
    let a = s.sample();
    fake.advance(Duration::from_secs(2));
    // /proc/stat counts them too (or /proc/interrupts, costly, would not be read again).
    m.intr += 28_200;
    m.install(&fake);
    fake.set("/proc/interrupts", text(300, 3000, 20_050, 4_007));
    let b = s.sample();
    let row = rates(&a, &b);
    assert_value(&row, &id(DEVICE_INTR_PER_S), 100.0);
    assert_value(&row, &cpu(DEVICE_INTR_PER_S, 0), 100.0);
    assert_value(&row, &id(TIMER_INTR_PER_S), 2000.0);
    assert_value(&row, &cpu(TIMER_INTR_PER_S, 1), 1000.0);
    assert_value(&row, &id(IPI_PER_S), 12_000.0);
    assert_value(
        &row,
        &MetricId::new(IPI_PER_S).with(LABEL_KIND, "reschedule"),
        10_000.0,
    );
    assert_value(
        &row,
        &MetricId::new(IPI_PER_S).with(LABEL_KIND, "call"),
        2_000.0,
    );
    assert_value(&row, &cpu(IPI_PER_S, 0), 10_000.0);
}

#[test]
fn the_busiest_processes_are_named_every_scan() {
    let stat = |pid: u32, comm: &str, ticks: u64, cpu: u32| {
        format!(
            "{pid} ({comm}) R 1 1 1 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 {cpu} 0 0\n"
        )
    };
    let fake = FakeSource::new();
    Machine::new().install(&fake);
    fake.set("/proc/300/stat", stat(300, "hog (x)", 1_000, 1));
    fake.set("/proc/301/stat", stat(301, "idle one", 50, 0));
    let mut s = Sampler::new(fake.clone(), config());
    let a = s.sample();
    // 2 s later: the hog used 190 ticks (95 % of a core), the other 1 tick.
    fake.advance(Duration::from_secs(2));
    fake.set("/proc/300/stat", stat(300, "hog (x)", 1_190, 1));
    fake.set("/proc/301/stat", stat(301, "idle one", 51, 0));
    let b = s.sample();
    let row = rates(&a, &b);
    let hog = proc_cpu(300, "hog (x)", 1);
    assert_value(&row, &hog, 95.0);
    assert_eq!(
        row.by_name(PROC_CPU_PCT).count(),
        1,
        "processes under 5 % of a core are not recorded"
    );
    // Before the next scan is due, no new figure (not a zero).
    fake.advance(Duration::from_secs(1));
    let c = s.sample();
    assert_eq!(rates(&b, &c).get(&hog), None);
}

/// Without a workload, a machine whose CPUs were all but idle since the last process scan
/// has nobody to name: that scan stands, dated now, and no process file is read. Once the CPUs
/// are busy again, the next scan names the busy process over the time since that date, not
/// diluted over the quiet time before it.
#[test]
fn a_quiet_machine_is_not_scanned_for_busy_processes() {
    let stat = |ticks: u64| {
        format!(
            "300 (hog) R 1 1 1 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0\n"
        )
    };
    let fake = FakeSource::new();
    let mut m = Machine::new();
    m.install(&fake);
    fake.set("/proc/300/stat", stat(1_000));
    let mut cfg = config();
    cfg.pids = Vec::new();
    let mut s = Sampler::new(fake.clone(), cfg);
    let a = s.sample();
    let first = a.slow.processes.clone().unwrap();
    assert_eq!(first.processes.len(), 1);

    // 2 s with 1 busy tick in all (10 ms, under the 20 ms it takes).
    fake.log_reads(true);
    fake.advance(Duration::from_secs(2));
    m.idle(200);
    m.cpus[0].1[2] += 1;
    m.install(&fake);
    let b = s.sample();
    let reads = fake.take_reads();
    assert!(
        !reads
            .iter()
            .any(|r| r.starts_with("/proc/300/") || r == "/proc/"),
        "{reads:?}"
    );
    let redated = b.slow.processes.clone().unwrap();
    assert_eq!(redated.seq, first.seq, "the same scan");
    assert!(redated.t > first.t, "dated now");
    assert_eq!(redated.processes, first.processes);

    // 2 s more: the hog took 190 ticks on CPU 1, and the machine counted them.
    fake.advance(Duration::from_secs(2));
    m.idle(10);
    m.cpus[1].1[0] += 190;
    m.install(&fake);
    fake.set("/proc/300/stat", stat(1_190));
    let c = s.sample();
    assert!(fake.take_reads().iter().any(|r| r == "/proc/300/stat"));
    let hog = proc_cpu(300, "hog", 1);
    assert_value(&rates(&b, &c), &hog, 95.0);

    // A watched process: scanned every time, quiet or not (its children are looked for).
    let mut cfg = config();
    cfg.interval = Duration::from_secs(2);
    let mut s = Sampler::new(fake.clone(), cfg);
    s.sample();
    fake.advance(Duration::from_secs(2));
    let d = s.sample();
    assert_ne!(d.slow.processes.as_ref().unwrap().seq, 0);
}

#[test]
fn processes_are_labelled_by_their_part_in_the_workload() {
    let stat = |pid: u32, comm: &str, ppid: u32, ticks: u64| {
        format!(
            "{pid} ({comm}) R {ppid} 1 1 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0\n"
        )
    };
    let fake = FakeSource::new();
    Machine::new().install(&fake);
    // pid 100 is watched (config()): an iperf3 client connected to 127.0.0.1:5201.
    let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
        0: 00000000:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 300 1 0 100 0 0 10 0\n   \
        1: 0100007F:D2F0 0100007F:1451 01 00000000:00000000 00:00000000 00000000     0        0 100 1 0 20 4 30 10 -1\n   \
        2: 0100007F:1451 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 200 1 0 20 4 30 10 -1\n";
    for pid in [100, 301, 303] {
        fake.set(&format!("/proc/{pid}/net/tcp"), tcp);
        fake.set_link(&format!("/proc/{pid}/ns/net"), "net:[4026531840]");
    }
    fake.set_link("/proc/100/fd/3", "socket:[100]");
    fake.set_link("/proc/100/fd/0", "/dev/pts/0");
    // sock_diag sees both ends of the connection: the workload's flow (the client's socket)
    // and, looked up by its addresses, its far end (the server's accepted socket).
    let established = |local: &str, remote: &str, inode: u64| netceil_probe::sockdiag::TcpSocket {
        local: local.parse().unwrap(),
        remote: remote.parse().unwrap(),
        state: netceil_probe::sockdiag::TCP_ESTABLISHED,
        inode,
        cookie: inode,
        info: None,
        mem: None,
    };
    fake.set_tcp_sockets(
        "net:[4026531840]",
        vec![
            established("127.0.0.1:54000", "127.0.0.1:5201", 100),
            established("127.0.0.1:5201", "127.0.0.1:54000", 200),
        ],
    );
    fake.log_reads(true);
    // 301: the server, holding the accepted socket and the listener.
    fake.set_link("/proc/301/fd/4", "socket:[300]");
    fake.set_link("/proc/301/fd/5", "socket:[200]");
    // 303: a hog with an unrelated socket; 302: a program the watched process started.
    fake.set_link("/proc/303/fd/3", "socket:[999]");
    let procs = [
        (100, "sh", 1),
        (301, "iperf3", 1),
        (302, "sockperf", 100),
        (303, "spinner", 1),
    ];
    for &(pid, comm, ppid) in &procs {
        fake.set(&format!("/proc/{pid}/stat"), stat(pid, comm, ppid, 1_000));
    }
    let mut s = Sampler::new(fake.clone(), config());
    let a = s.sample();
    fake.advance(Duration::from_secs(2));
    for &(pid, comm, ppid) in &procs {
        fake.set(&format!("/proc/{pid}/stat"), stat(pid, comm, ppid, 1_150));
    }
    let _ = fake.take_reads();
    let b = s.sample();
    // The peer was found by looking up the far end of the workload's connection, without
    // reading the TCP tables (each a walk of the kernel's whole socket hash table).
    let reads = fake.take_reads();
    assert!(
        !reads
            .iter()
            .any(|r| r.ends_with("/net/tcp") || r.ends_with("/net/tcp6")),
        "{reads:?}"
    );
    assert!(fake.tcp_lookups().iter().any(|(_, n)| *n == 1));
    let row = rates(&a, &b);
    let role_of = |pid: &str| -> Option<String> {
        let m: Vec<&MetricId> = row
            .by_name(PROC_CPU_PCT)
            .map(|(id, _, _)| id)
            .filter(|id| id.label(LABEL_PID) == Some(pid))
            .collect();
        assert_eq!(m.len(), 1, "pid {pid}: {m:?}");
        m[0].label(LABEL_ROLE).map(str::to_string)
    };
    assert_eq!(role_of("100").as_deref(), Some("watched"));
    assert_eq!(role_of("301").as_deref(), Some("peer"));
    assert_eq!(role_of("302").as_deref(), Some("child"));
    assert_eq!(
        role_of("303"),
        None,
        "an unrelated socket is not the workload's"
    );
}

/// The paths read more than once in one sample's reads.
fn read_twice(reads: &[String]) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut twice: Vec<String> = reads
        .iter()
        .filter(|r| !seen.insert(r.as_str()))
        .cloned()
        .collect();
    twice.dedup();
    twice
}

#[test]
fn no_source_is_read_twice_in_one_sample() {
    let fake = FakeSource::new();
    let machine = Machine::new();
    machine.install(&fake);
    fake.set(
        "/proc/300/stat",
        "300 (hog) R 1 1 1 0 -1 0 0 0 0 0 10 0 0 0 20 0 1 0 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0\n",
    );
    fake.log_reads(true);
    let mut s = Sampler::new(fake.clone(), config());
    // The first sample (interfaces described, every tier read, a process scan), a sample
    // with the slow tier and a scan due, and one at 10 ms with only the fast tier.
    for step in [
        Duration::ZERO,
        Duration::from_secs(2),
        Duration::from_millis(10),
    ] {
        fake.advance(step);
        let _ = s.sample();
        let reads = fake.take_reads();
        assert!(reads.iter().any(|r| r == "/proc/stat"), "{reads:?}");
        assert_eq!(read_twice(&reads), Vec::<String>::new(), "{reads:?}");
    }
}

#[test]
fn a_process_scan_lists_proc_only_after_a_fork() {
    let stat = |pid: u32, ticks: u64| {
        format!(
            "{pid} (p{pid}) R 1 1 1 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0\n"
        )
    };
    let fake = FakeSource::new();
    let mut machine = Machine::new();
    machine.install(&fake);
    fake.set("/proc/300/stat", stat(300, 0));
    fake.set("/proc/301/stat", stat(301, 0));
    fake.log_reads(true);
    let mut s = Sampler::new(fake.clone(), config());
    let _ = s.sample();
    assert!(fake.take_reads().iter().any(|r| r == "/proc/"));
    // No fork: the same processes are read again, and /proc is not listed; one exited.
    fake.remove_dir("/proc/301");
    fake.set("/proc/300/stat", stat(300, 100));
    fake.advance(Duration::from_secs(2));
    let a = s.sample();
    let reads = fake.take_reads();
    assert!(!reads.iter().any(|r| r == "/proc/"), "{reads:?}");
    assert!(reads.iter().any(|r| r == "/proc/300/stat"), "{reads:?}");
    let scan = a.slow.processes.clone().unwrap();
    let pids: Vec<u32> = scan.processes.iter().map(|p| p.pid).collect();
    assert_eq!(pids, vec![300]);
    // The exited one is not looked for again.
    fake.advance(Duration::from_secs(2));
    let _ = s.sample();
    let reads = fake.take_reads();
    assert!(!reads.iter().any(|r| r == "/proc/301/stat"), "{reads:?}");
    // A fork: /proc is listed, and the new process is found.
    machine.forks += 1;
    machine.install_stat(&fake);
    fake.set("/proc/302/stat", stat(302, 0));
    fake.advance(Duration::from_secs(2));
    let b = s.sample();
    assert!(fake.take_reads().iter().any(|r| r == "/proc/"));
    let pids: Vec<u32> = b
        .slow
        .processes
        .as_ref()
        .unwrap()
        .processes
        .iter()
        .map(|p| p.pid)
        .collect();
    assert!(pids.contains(&302), "{pids:?}");
}

#[test]
fn a_single_threaded_process_that_did_not_run_is_not_read_again() {
    let stat = |pid: u32, ticks: u64, threads: u32| {
        format!(
            "{pid} (p{pid}) S 1 1 1 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 {threads} 0 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0\n"
        )
    };
    let fake = FakeSource::new();
    Machine::new().install(&fake);
    // 300: single-threaded, idle; 301: single-threaded, busy; 302: two threads, idle;
    // 303: no scheduler statistics (the kernel writes zeros).
    for (pid, threads) in [(300, 1), (301, 1), (302, 2), (303, 1)] {
        fake.set(&format!("/proc/{pid}/stat"), stat(pid, 1_000, threads));
    }
    fake.set("/proc/300/schedstat", "5000 10 3\n");
    fake.set("/proc/301/schedstat", "7000 10 3\n");
    fake.set("/proc/302/schedstat", "9000 10 3\n");
    fake.set("/proc/303/schedstat", "0 0 0\n");
    fake.log_reads(true);
    let mut s = Sampler::new(fake.clone(), config());
    let a = s.sample();
    let reads = fake.take_reads();
    for pid in 300..=303 {
        assert!(reads.contains(&format!("/proc/{pid}/stat")), "{reads:?}");
    }
    // 2 s later 301 used 1.5 s of CPU (150 ticks); the others did not run.
    fake.set("/proc/301/stat", stat(301, 1_150, 1));
    fake.set("/proc/301/schedstat", "1500007000 10 4\n");
    fake.advance(Duration::from_secs(2));
    let b = s.sample();
    let reads = fake.take_reads();
    assert!(!reads.contains(&"/proc/300/stat".to_string()), "{reads:?}");
    assert!(
        reads.contains(&"/proc/300/schedstat".to_string()),
        "{reads:?}"
    );
    for pid in [301, 302, 303] {
        assert!(reads.contains(&format!("/proc/{pid}/stat")), "{reads:?}");
    }
    // The one with two threads: schedstat has the main thread's only, so it is not read.
    assert!(
        !reads.contains(&"/proc/302/schedstat".to_string()),
        "{reads:?}"
    );
    // Every process is in the scan, with the figures it would have read.
    let scan = b.slow.processes.clone().unwrap();
    let ticks: Vec<(u32, u64)> = scan.processes.iter().map(|p| (p.pid, p.ticks)).collect();
    assert_eq!(
        ticks,
        vec![(300, 1_000), (301, 1_150), (302, 1_000), (303, 1_000)]
    );
    let hog = proc_cpu(301, "p301", 1);
    assert_value(&rates(&a, &b), &hog, 75.0);
    // 300 runs at last: read again.
    fake.set("/proc/300/stat", stat(300, 1_100, 1));
    fake.set("/proc/300/schedstat", "1000005000 10 4\n");
    fake.advance(Duration::from_secs(2));
    let c = s.sample();
    assert!(fake.take_reads().contains(&"/proc/300/stat".to_string()));
    let p300 = c.slow.processes.as_ref().unwrap().processes[0].clone();
    assert_eq!((p300.pid, p300.ticks), (300, 1_100));
}

/// On a quiet machine /proc/interrupts, the protocol files and the qdisc counters are read
/// again only every 5 s: the rows between have no value for them (with the reason, once),
/// and the reading after the pause gives the rates over the whole pause. Packets moving, or
/// interrupts above a busy CPU's timer, bring them back at the next sample, over the time
/// since they were read.
#[test]
fn costly_files_are_read_when_what_they_count_moved() {
    let fake = FakeSource::new();
    let mut m = Machine::new();
    m.install(&fake);
    fake.set_thread_cpu(Some(Duration::ZERO));
    let mut cfg = config();
    cfg.interval = Duration::from_secs(1);
    cfg.quiet_reread = netceil_probe::sampler::QUIET_REREAD;
    let mut s = Sampler::new(fake.clone(), cfg);
    let mut rec = Recorder::new(Duration::from_secs(1));
    fake.set_qdiscs(vec![qdisc(None, "tbf", "8001:", 0, 0)]);
    rec.push(s.sample());
    let mut step = |m: &mut Machine, i: u32| {
        fake.advance(Duration::from_secs(1));
        m.idle(100);
        // One retransmit and 2 interrupts on eth0's queue 0 a second; 500 interrupts a
        // second in all, below 1000 per CPU.
        m.tcp_retrans += 1;
        m.irqs[1].1[0] += 2;
        m.intr += 500;
        m.install(&fake);
        // A root qdisc over its limit 10 times a second: it counts without a packet sent.
        fake.set_qdiscs(vec![qdisc(None, "tbf", "8001:", 0, 10 * u64::from(i))]);
        let row = rec.push(s.sample()).unwrap();
        (i, row)
    };
    let overlimits = MetricId::new(QDISC_OVERLIMITS_PER_S)
        .with(LABEL_IFACE, "veth-a")
        .with(LABEL_QDISC, "tbf")
        .with(LABEL_HANDLE, "8001:");
    let quiet: Vec<(u32, Row)> = (1..=5).map(|i| step(&mut m, i)).collect();
    for (i, row) in &quiet {
        assert_value(row, &id(INTR_PER_S), 500.0);
        let retrans = row.total(TCP_RETRANS_SEGS_PER_S);
        let nic = row.get(&MetricId::new(NIC_IRQ_PER_S));
        let qdisc = row.get(&overlimits);
        if *i < 5 {
            assert_eq!((retrans, nic, qdisc), (None, None, None), "row {i}");
        } else {
            // Read again after 5 s: the 5 retransmits, 10 interrupts and 50 overlimits of
            // the pause.
            assert!(close(retrans, 1.0), "row {i}: {retrans:?}");
            assert!(close(nic, 2.0), "row {i}: {nic:?}");
            assert!(close(qdisc, 10.0), "row {i}: {qdisc:?}");
        }
    }
    // A packet on loopback: the protocol files and qdiscs at once, over the 1 s since the
    // last reading.
    m.ifaces[0].rx_packets += 1;
    let (_, row) = step(&mut m, 6);
    assert!(close(row.total(TCP_RETRANS_SEGS_PER_S), 1.0));
    assert!(close(row.get(&overlimits), 10.0));
    assert_eq!(row.get(&MetricId::new(NIC_IRQ_PER_S)), None);
    // 2 s later, a busy machine's interrupts (4000 a second, 2000 per CPU): read at once.
    step(&mut m, 7);
    m.intr += 3500;
    let (_, row) = step(&mut m, 8);
    assert_value(&row, &id(INTR_PER_S), 4000.0);
    assert!(close(row.get(&MetricId::new(NIC_IRQ_PER_S)), 2.0));
    assert_eq!(row.total(TCP_RETRANS_SEGS_PER_S), None);
    let series = rec.into_series();
    let reasons = |metric: &str| -> Vec<String> {
        series
            .missing
            .iter()
            .filter(|n| n.metric == metric)
            .map(|n| n.reason.clone())
            .collect()
    };
    let irq = reasons(NIC_IRQ_PER_S);
    assert_eq!(irq.len(), 1, "{irq:?}");
    assert!(
        irq[0].contains("/proc/interrupts is read again only"),
        "{}",
        irq[0]
    );
    let proto = reasons(TCP_RETRANS_SEGS_PER_S);
    assert_eq!(proto.len(), 1, "{proto:?}");
    assert!(proto[0].contains("/proc/net/snmp"), "{}", proto[0]);
    let qdisc = reasons(QDISC_OVERLIMITS_PER_S);
    assert_eq!(qdisc.len(), 1, "{qdisc:?}");
    assert!(qdisc[0].contains("qdisc counters"), "{}", qdisc[0]);
}

/// A lab's qdiscs live in namespaces whose packets the sampler's own interfaces do not
/// count: while a reading holds any, the qdiscs are read at every slow reading, however quiet
/// this namespace is.
#[test]
fn qdiscs_of_other_namespaces_are_read_at_every_reading() {
    let fake = FakeSource::new();
    let m = Machine::new();
    m.install(&fake);
    let mut cfg = config();
    cfg.interval = Duration::from_secs(1);
    cfg.quiet_reread = netceil_probe::sampler::QUIET_REREAD;
    let mut s = Sampler::new(fake.clone(), cfg);
    let mut rec = Recorder::new(Duration::from_secs(1));
    fake.set_qdiscs(vec![qdisc(Some("lab-a"), "tbf", "8001:", 0, 0)]);
    rec.push(s.sample());
    let overlimits = MetricId::new(QDISC_OVERLIMITS_PER_S)
        .with(LABEL_IFACE, "veth-a")
        .with(LABEL_QDISC, "tbf")
        .with(LABEL_HANDLE, "8001:")
        .with(LABEL_NETNS, "lab-a");
    for i in 1..=3u64 {
        fake.advance(Duration::from_secs(1));
        m.install(&fake);
        fake.set_qdiscs(vec![qdisc(Some("lab-a"), "tbf", "8001:", 0, 100 * i)]);
        let row = rec.push(s.sample()).unwrap();
        assert!(close(row.get(&overlimits), 100.0), "row {i}");
    }
}

/// A workload that held no established TCP socket at the last reading has no TCP peer: the
/// process scan reads only the UDP tables, since reading /proc/PID/net/tcp walks the kernel's
/// whole socket hash table (milliseconds, the CPU held). A UDP peer is still found.
#[test]
fn a_workload_without_tcp_flows_is_matched_to_peers_without_the_tcp_tables() {
    let stat = |pid: u32, comm: &str, ticks: u64| {
        format!(
            "{pid} ({comm}) R 1 1 1 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0\n"
        )
    };
    let fake = FakeSource::new();
    Machine::new().install(&fake);
    // The watched pid 100 sends UDP to 127.0.0.1:5201, where pid 301 answers.
    let udp = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n  \
        1: 0100007F:D2F0 0100007F:1451 01 00000000:00000000 00:00000000 00000000     0        0 100 2 0000000000000000 0\n  \
        2: 0100007F:1451 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 200 2 0000000000000000 0\n";
    for pid in [100, 301] {
        fake.set(&format!("/proc/{pid}/net/udp"), udp);
        fake.set(&format!("/proc/{pid}/net/tcp"), "");
        fake.set_link(&format!("/proc/{pid}/ns/net"), "net:[4026531840]");
    }
    fake.set_link("/proc/100/fd/3", "socket:[100]");
    fake.set_link("/proc/301/fd/4", "socket:[200]");
    // sock_diag finds no established TCP socket of the workload.
    fake.set_tcp_sockets("net:[4026531840]", Vec::new());
    for (pid, comm) in [(100, "netceil"), (301, "echo")] {
        fake.set(&format!("/proc/{pid}/stat"), stat(pid, comm, 1_000));
    }
    let mut s = Sampler::new(fake.clone(), config());
    let a = s.sample();
    fake.advance(Duration::from_secs(2));
    for (pid, comm) in [(100, "netceil"), (301, "echo")] {
        fake.set(&format!("/proc/{pid}/stat"), stat(pid, comm, 1_150));
    }
    fake.log_reads(true);
    let b = s.sample();
    let reads = fake.take_reads();
    assert!(reads.iter().any(|r| r == "/proc/100/net/udp"), "{reads:?}");
    assert!(
        !reads
            .iter()
            .any(|r| r.ends_with("/net/tcp") || r.ends_with("/net/tcp6")),
        "{reads:?}"
    );
    let row = rates(&a, &b);
    let peer = row
        .by_name(PROC_CPU_PCT)
        .map(|(id, _, _)| id)
        .find(|id| id.label(LABEL_PID) == Some("301"))
        .expect("the echo process is recorded");
    assert_eq!(peer.label(LABEL_ROLE), Some("peer"));
}

/// Between full readings of the interfaces' facts (every 30 s), only their operstate is read,
/// every 5 s: an MTU changed meanwhile is seen at the next full reading, while a link that
/// changes state has every fact read again at once.
#[test]
fn interface_facts_are_read_in_full_when_a_link_changed_or_every_30_s() {
    let fake = FakeSource::new();
    Machine::new().install(&fake);
    let mut cfg = config();
    cfg.interval = Duration::from_secs(1);
    let mut s = Sampler::new(fake.clone(), cfg);
    s.sample();
    let mtu = |s: &Sampler<FakeSource>| {
        s.nic_info()
            .into_iter()
            .find(|n| n.name == "eth0")
            .and_then(|n| n.mtu)
    };
    assert_eq!(mtu(&s), Some(1500));
    let full = |reads: &[String]| {
        reads
            .iter()
            .filter(|r| r.ends_with("/mtu") || r.ends_with("/queues/"))
            .count()
    };
    fake.set("/sys/class/net/eth0/mtu", "9000\n");
    fake.log_reads(true);
    for _ in 1..30 {
        fake.advance(Duration::from_secs(1));
        s.sample();
    }
    let reads = fake.take_reads();
    let states = reads
        .iter()
        .filter(|r| *r == "/sys/class/net/eth0/operstate")
        .count();
    assert_eq!(states, 5, "operstate every 5 s: {reads:?}");
    assert_eq!(full(&reads), 0, "{reads:?}");
    assert_eq!(mtu(&s), Some(1500));
    fake.advance(Duration::from_secs(1));
    s.sample();
    assert!(full(&fake.take_reads()) > 0);
    assert_eq!(mtu(&s), Some(9000), "read in full after 30 s");

    // eth0 goes down: seen at the next operstate reading, which reads everything again.
    fake.set("/sys/class/net/eth0/operstate", "down\n");
    let mut read_in_full = Vec::new();
    for i in 31..=35 {
        fake.advance(Duration::from_secs(1));
        s.sample();
        if full(&fake.take_reads()) > 0 {
            read_in_full.push(i);
        }
    }
    assert_eq!(read_in_full, [35]);
    assert_eq!(mtu(&s), None, "a link that is down is not recorded");
}

/// /proc/net/dev's `drop` column is rx_dropped + rx_missed_errors, both only growing: while an
/// interface's stays the same, its `rx_missed_errors` is the same too and is not read again.
/// When it moves, the file is read and the rate covers the time since the last value.
#[test]
fn rx_missed_is_read_again_only_when_the_drop_column_moved() {
    let fake = FakeSource::new();
    let mut m = Machine::new();
    m.ifaces[1].rx_missed = 100;
    m.install(&fake);
    let mut s = Sampler::new(fake.clone(), config());
    let mut prev = s.sample();
    let missed_path = "/sys/class/net/eth0/statistics/rx_missed_errors";
    fake.log_reads(true);
    let mut step = |m: &Machine| {
        fake.advance(Duration::from_secs(2));
        m.install(&fake);
        let cur = s.sample();
        let read = fake.take_reads().iter().any(|r| r == missed_path);
        let row = rates(&prev, &cur);
        prev = cur;
        (read, row.get(&iface(IFACE_RX_MISSED_PER_S, "eth0")))
    };
    // Nothing dropped: not read, and no loss (0 a second, not a missing value).
    assert_eq!(step(&m), (false, Some(0.0)));
    // 20 missed in 2 s: `drop` moved, so the file is read.
    m.ifaces[1].rx_missed += 20;
    m.install(&fake);
    let (read, rate) = step(&m);
    assert!(read);
    assert!(close(rate, 10.0), "{rate:?}");
    // Quiet again: not read.
    assert_eq!(step(&m), (false, Some(0.0)));
}

/// Rows between two slow-tier readings (an interval shorter than the slow tier's) have no
/// qdisc values, and the series says why, as it does for the tier's other metrics.
#[test]
fn rows_without_the_slow_tier_say_why_their_qdisc_values_are_missing() {
    let fake = FakeSource::new();
    Machine::new().install(&fake);
    fake.set_qdiscs(vec![qdisc(None, "tbf", "8001:", 0, 0)]);
    let mut cfg = config();
    cfg.interval = Duration::from_millis(100);
    cfg.slow_interval = Duration::from_secs(1);
    let mut s = Sampler::new(fake.clone(), cfg.clone());
    let mut rec = Recorder::new(cfg.interval);
    rec.push(s.sample());
    fake.advance(cfg.interval);
    let row = rec.push(s.sample()).unwrap();
    assert_eq!(row.by_name(QDISC_OVERLIMITS_PER_S).count(), 0);
    let series = rec.into_series();
    let why: Vec<&str> = series
        .missing
        .iter()
        .filter(|n| n.metric == QDISC_OVERLIMITS_PER_S)
        .map(|n| n.reason.as_str())
        .collect();
    assert_eq!(why, [SLOW_TIER_REASON]);
}
