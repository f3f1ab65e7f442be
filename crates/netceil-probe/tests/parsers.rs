//! Every parser on captured and hand-built fixtures, including malformed ones.
//!
//! Fixture provenance (tests/fixtures/):
//! - `*-6.18-vm*`: captured on netceil's development VM (Linux 6.18, 2 vCPUs, virtio-net).
//! - `softnet-2.6.32-9col`, `-2.6.36-10col`, `-3.11-11col`, `-5.10.47-13col`, `-6.4.7-15col`:
//!   real captures published as test data of github.com/hjr3/softnet-stat (tests/).
//! - `interrupts-2.6.38-16cpu`: a real capture from a 16-CPU Nehalem Xeon on Linux 2.6.38.6,
//!   published in github.com/deater/deterministic (static/results/nehalem/0/inst_retired.fp).
//! - `*-hand-*`: written for these tests in the layout of the named kernel; the 64-CPU
//!   /proc/interrupts was generated in the modern x86 layout with mlx5 and i40e queue names.
//! - `*-bad-*`: malformed on purpose.

use netceil_probe::parse::interrupts::{self, nic_queue, QueueDirection, QueueOwner};
use netceil_probe::parse::snmp::Counter;
use netceil_probe::parse::sys_net::{self, OperState};
use netceil_probe::parse::{
    net_dev, netstat, pressure, proc_stat, snmp, softirqs, softnet, task_stat, task_status,
};
use netceil_probe::{Found, ParseError};

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn assert_error(err: ParseError, source: &str, line: usize, field: Option<usize>) {
    assert_eq!(err.source, source, "{err}");
    assert_eq!(err.line, line, "{err}");
    assert_eq!(err.field, field, "{err}");
    assert!(err
        .to_string()
        .starts_with(&format!("{source}: line {line}")));
}

// ---- /proc/stat ----

#[test]
fn proc_stat_captured_with_guest_columns() {
    let s = proc_stat::parse(&fixture("proc-stat-6.18-vm-2cpu.txt")).unwrap();
    assert_eq!(s.cpus.len(), 2);
    assert_eq!(s.cpus[1].cpu, 1);
    assert_eq!(s.total.columns(), 10);
    assert!(s.total.guest.is_some() && s.total.guest_nice.is_some());
    // The all-CPU line is the sum of the per-CPU lines.
    let user_sum: u64 = s.cpus.iter().map(|c| c.times.user).sum();
    assert!(user_sum.abs_diff(s.total.user) <= 2);
    assert!(s.intr_total.unwrap() > 0);
    assert!(s.ctxt.unwrap() > 0);
    assert!(s.procs_running.is_some() && s.procs_blocked.is_some());
}

#[test]
fn proc_stat_without_guest_columns() {
    let s = proc_stat::parse(&fixture("proc-stat-hand-2.6.18-8col.txt")).unwrap();
    assert_eq!(s.total.columns(), 8);
    assert_eq!(s.total.steal, Some(12));
    assert_eq!(s.total.guest, None);
    assert_eq!(s.total.guest_nice, None);
    assert_eq!(s.procs_running, Some(3));
    assert_eq!(s.procs_blocked, Some(1));
    assert_eq!(s.intr_total, Some(114_930_548));

    let old = proc_stat::parse(&fixture("proc-stat-hand-2.6.9-7col.txt")).unwrap();
    assert_eq!(old.total.columns(), 7);
    assert_eq!(old.total.steal, None);
    assert_eq!(old.total.softirq, Some(27168));
    assert_eq!(old.cpus.len(), 4);
    assert_eq!(old.ctxt, Some(1_990_473));
    // `preempt` is not a field netceil knows; it is skipped, not an error.
    assert_eq!(old.softirq_total, None);
}

#[test]
fn proc_stat_keeps_cpu_numbers_when_one_is_offline() {
    let s = proc_stat::parse(&fixture("proc-stat-hand-10col-cpu2-offline.txt")).unwrap();
    let ids: Vec<u32> = s.cpus.iter().map(|c| c.cpu).collect();
    assert_eq!(ids, [0, 1, 3]);
    assert!(s.cpu(2).is_none());
    assert_eq!(s.cpu(3).unwrap().guest, Some(100));
    assert_eq!(s.softirq_total, Some(5555));
    // total(): every state once, guest excluded (it is inside user).
    let t = s.cpu(0).unwrap();
    assert_eq!(t.total(), 1000 + 5 + 1000 + 30000 + 50 + 50 + 600 + 10);
}

#[test]
fn proc_stat_malformed() {
    let e = proc_stat::parse(&fixture("proc-stat-bad-truncated.txt")).unwrap_err();
    assert_error(e.clone(), "/proc/stat", 3, Some(5));
    assert_eq!(e.found, Found::EndOfLine);
    assert!(e.to_string().contains("idle"), "{e}");

    let e = proc_stat::parse(&fixture("proc-stat-bad-number.txt")).unwrap_err();
    assert_error(e.clone(), "/proc/stat", 3, Some(4));
    assert_eq!(
        e.to_string(),
        "/proc/stat: line 3, field 4: expected the system time in ticks, found '72x2'"
    );

    let e = proc_stat::parse(&fixture("proc-stat-bad-columns.txt")).unwrap_err();
    assert_error(e, "/proc/stat", 2, None);

    let e = proc_stat::parse("").unwrap_err();
    assert_eq!(e.found, Found::EndOfInput);
    let e = proc_stat::parse("ctxt 12\n").unwrap_err();
    assert!(e.to_string().contains("'cpu' line"), "{e}");
    let e = proc_stat::parse("cpu 1 2 3 4\ncpuX 1 2 3 4\n").unwrap_err();
    assert_error(e, "/proc/stat", 2, Some(1));
}

// ---- /proc/softirqs ----

#[test]
fn softirqs_captured() {
    let s = softirqs::parse(&fixture("softirqs-6.18-vm-2cpu.txt")).unwrap();
    assert_eq!(s.cpus, [0, 1]);
    assert_eq!(s.rows.len(), 10);
    assert_eq!(s.net_rx().unwrap().len(), 2);
    assert!(s.net_tx().is_some());
    assert!(s.row("TIMER").unwrap().total() > 0);
    let rx: Vec<(u32, u64)> = s.per_cpu("NET_RX").collect();
    assert_eq!(rx.len(), 2);
    assert_eq!(rx[1].0, 1);
    assert!(s.row("NO_SUCH").is_none());
}

#[test]
fn softirqs_malformed() {
    let e = softirqs::parse(&fixture("softirqs-bad-columns.txt")).unwrap_err();
    assert_error(e.clone(), "/proc/softirqs", 4, Some(3));
    assert_eq!(e.found, Found::EndOfLine);
    let e = softirqs::parse("CPU0 CPU1\nNET_RX 1 2\n").unwrap_err();
    assert_error(e, "/proc/softirqs", 2, Some(1));
    let e = softirqs::parse("CPU0 CPU1\nNET_RX: 1 2 3\n").unwrap_err();
    assert_error(e, "/proc/softirqs", 2, Some(4));
}

// ---- /proc/interrupts ----

#[test]
fn interrupts_captured_modern_virtio() {
    let irqs = interrupts::parse(&fixture("interrupts-6.18-vm-2cpu.txt")).unwrap();
    assert_eq!(irqs.cpus, [0, 1]);
    let input = irqs
        .rows
        .iter()
        .find(|r| r.devices.iter().any(|d| d == "virtio2-input.0"))
        .expect("virtio2-input.0 row");
    assert_eq!(input.chip.as_deref(), Some("PCI-MSIX-0000:00:03.0"));
    assert_eq!(input.trigger.as_deref(), Some("edge"));
    assert_eq!(input.counts.len(), 2);
    let loc = irqs.row("LOC").unwrap();
    assert_eq!(loc.description, "Local timer interrupts");
    assert_eq!(loc.counts.len(), 2);
    assert!(loc.devices.is_empty());
    let err = irqs.row("ERR").unwrap();
    assert_eq!(err.counts.len(), 1);
    let acpi = irqs.irq(24).unwrap();
    assert_eq!(acpi.devices, ["ACPI:Ged"]);
    assert_eq!(acpi.hwirq.as_deref(), Some("5"));
}

#[test]
fn interrupts_2_6_38_sixteen_cpus() {
    let irqs = interrupts::parse(&fixture("interrupts-2.6.38-16cpu.txt")).unwrap();
    assert_eq!(irqs.cpus.len(), 16);
    let q0 = irqs.irq(129).unwrap();
    assert_eq!(q0.devices, ["eth0-TxRx-0"]);
    assert_eq!(q0.chip.as_deref(), Some("PCI-MSI-edge"));
    assert_eq!(q0.hwirq, None);
    assert_eq!(q0.counts[11], 13_553_501);
    assert_eq!(q0.total(), 62 + 27 + 13_553_501);
    // Shared IRQ: two handlers.
    assert_eq!(
        irqs.irq(18).unwrap().devices,
        ["ehci_hcd:usb1", "uhci_hcd:usb7"]
    );
    // An IRQ with no handler name left.
    assert!(irqs.irq(3).unwrap().devices.is_empty());
    assert_eq!(irqs.row("ERR").unwrap().counts, [15]);
    assert_eq!(irqs.row("MIS").unwrap().counts, [0]);
    let queues = irqs
        .rows
        .iter()
        .flat_map(|r| r.devices.iter())
        .filter_map(|d| nic_queue(d))
        .count();
    assert_eq!(queues, 8);
}

#[test]
fn interrupts_sixty_four_cpus_mlx5_i40e() {
    let irqs = interrupts::parse(&fixture("interrupts-hand-64cpu-mlx5-i40e.txt")).unwrap();
    assert_eq!(irqs.cpus.len(), 64);
    assert_eq!(irqs.cpus[63], 63);
    let mut mlx5 = 0;
    let mut i40e = 0;
    for row in &irqs.rows {
        assert!(row.counts.len() == 64 || row.label == "ERR" || row.label == "MIS");
        for d in &row.devices {
            match nic_queue(d) {
                Some(q) if q.owner == QueueOwner::Pci("0000:81:00.0".into()) => {
                    assert_eq!(q.direction, QueueDirection::RxTx);
                    mlx5 += 1;
                    // Each completion vector fires mostly on CPU 2×queue.
                    let cpu = 2 * q.queue.unwrap() as usize;
                    assert!(row.counts[cpu] >= 10_000_000, "{d}");
                }
                Some(q) if q.owner == QueueOwner::Iface("ens2f0".into()) => {
                    i40e += 1;
                    assert_eq!(row.total(), row.counts[0], "i40e queues all on CPU0");
                }
                Some(q) => panic!("unexpected queue {q:?} from {d}"),
                None => {}
            }
        }
    }
    assert_eq!((mlx5, i40e), (32, 16));
    let misc = irqs
        .rows
        .iter()
        .find(|r| r.devices.iter().any(|d| d.ends_with(":misc")))
        .unwrap();
    assert_eq!(misc.chip.as_deref(), Some("IR-PCI-MSIX-0000:3b:00.0"));
    let pme = irqs
        .rows
        .iter()
        .find(|r| r.devices.iter().any(|d| d == "PCIe PME"))
        .unwrap();
    assert_eq!(pme.devices, ["PCIe PME", "aerdrv"]);
}

#[test]
fn interrupts_arm_layout_and_offline_cpu() {
    let irqs = interrupts::parse(&fixture("interrupts-hand-arm64-cpu2-offline.txt")).unwrap();
    assert_eq!(irqs.cpus, [0, 1, 3]);
    let timer = irqs.irq(11).unwrap();
    assert_eq!(timer.chip.as_deref(), Some("GICv3"));
    assert_eq!(timer.hwirq.as_deref(), Some("27"));
    assert_eq!(timer.trigger.as_deref(), Some("Level"));
    assert_eq!(timer.devices, ["arch_timer"]);
    assert_eq!(irqs.irq(33).unwrap().devices, ["kvm guest ptimer"]);
    assert_eq!(irqs.irq(41).unwrap().devices, ["eth0-TxRx-1"]);
    assert_eq!(irqs.row("IPI0").unwrap().counts, [1000, 2000, 4000]);
    assert_eq!(irqs.row("Err").unwrap().counts, [0]);
}

#[test]
fn interrupts_chip_name_with_spaces() {
    let text = "           CPU0       CPU1\n 24:         10         20  Hyper-V PCIe MSI 134250496-edge      mlx5_comp0@pci:a2a4:00:02.0\n";
    let irqs = interrupts::parse(text).unwrap();
    let row = irqs.irq(24).unwrap();
    assert_eq!(row.chip.as_deref(), Some("Hyper-V PCIe MSI"));
    assert_eq!(row.hwirq.as_deref(), Some("134250496"));
    assert_eq!(row.devices, ["mlx5_comp0@pci:a2a4:00:02.0"]);
}

#[test]
fn interrupts_malformed() {
    let e = interrupts::parse(&fixture("interrupts-bad-truncated.txt")).unwrap_err();
    assert_error(e, "/proc/interrupts", 4, Some(3));
    let e = interrupts::parse(&fixture("interrupts-bad-number.txt")).unwrap_err();
    assert_error(e.clone(), "/proc/interrupts", 3, Some(3));
    assert_eq!(
        e.to_string(),
        "/proc/interrupts: line 3, field 3: expected 2 per-CPU counts, as in the header, found '67x0'"
    );
    let e = interrupts::parse(&fixture("interrupts-bad-header.txt")).unwrap_err();
    assert_error(e, "/proc/interrupts", 1, Some(2));
    let e = interrupts::parse("CPU0\n  0 12 IO-APIC 2-edge timer\n").unwrap_err();
    assert_error(e, "/proc/interrupts", 2, Some(1));
    assert_eq!(interrupts::parse("").unwrap_err().found, Found::EndOfInput);
}

#[test]
fn nic_queue_names() {
    let q = |name: &str| nic_queue(name).unwrap_or_else(|| panic!("{name} not a queue"));
    let iface = |s: &str| QueueOwner::Iface(s.into());
    let cases = [
        ("eth0-TxRx-3", iface("eth0"), Some(3), QueueDirection::RxTx),
        (
            "i40e-eth0-TxRx-1",
            iface("eth0"),
            Some(1),
            QueueDirection::RxTx,
        ),
        (
            "ice-ens1f0-TxRx-0",
            iface("ens1f0"),
            Some(0),
            QueueDirection::RxTx,
        ),
        ("ens5-Tx-Rx-0", iface("ens5"), Some(0), QueueDirection::RxTx),
        ("eth1-rx-2", iface("eth1"), Some(2), QueueDirection::Rx),
        ("eth1-tx-2", iface("eth1"), Some(2), QueueDirection::Tx),
        ("eth0-fp-4", iface("eth0"), Some(4), QueueDirection::RxTx),
        (
            "veth-a-TxRx-1",
            iface("veth-a"),
            Some(1),
            QueueDirection::RxTx,
        ),
        (
            "mlx5_comp2@pci:0000:81:00.0",
            QueueOwner::Pci("0000:81:00.0".into()),
            Some(2),
            QueueDirection::RxTx,
        ),
        (
            "gve-ntfy-blk5@pci:0000:00:04.0",
            QueueOwner::Pci("0000:00:04.0".into()),
            Some(5),
            QueueDirection::RxTx,
        ),
        (
            "virtio0-input.0",
            QueueOwner::Virtio(0),
            Some(0),
            QueueDirection::Rx,
        ),
        (
            "virtio2-output.3",
            QueueOwner::Virtio(2),
            Some(3),
            QueueDirection::Tx,
        ),
        (
            "virtio1-virtqueues",
            QueueOwner::Virtio(1),
            None,
            QueueDirection::RxTx,
        ),
        (
            "iwlwifi:queue_1",
            QueueOwner::Driver("iwlwifi".into()),
            Some(1),
            QueueDirection::Rx,
        ),
        (
            "iwlwifi:default_queue",
            QueueOwner::Driver("iwlwifi".into()),
            None,
            QueueDirection::Rx,
        ),
    ];
    for (name, owner, queue, direction) in cases {
        let got = q(name);
        assert_eq!(
            (got.owner, got.queue, got.direction),
            (owner, queue, direction),
            "{name}"
        );
    }
    for not_queue in [
        "mlx5_async0@pci:0000:81:00.0",
        "ena-mgmnt@pci:0000:00:05.0",
        "i40e-0000:3b:00.0:misc",
        "virtio0-config",
        "virtio1-req.0",
        "nvme0q3",
        "eth0",
        "timer",
        "PCIe PME",
        "iwlwifi:exception",
        "ioat-msix",
        "-TxRx-1",
    ] {
        assert_eq!(nic_queue(not_queue), None, "{not_queue}");
    }
}

// ---- /proc/net/dev and /sys/class/net ----

#[test]
fn net_dev_captured() {
    let d = net_dev::parse(&fixture("net-dev-6.18-vm.txt")).unwrap();
    let names: Vec<&str> = d.ifaces.iter().map(|r| r.iface.as_str()).collect();
    assert_eq!(names, ["lo", "ifb0", "ifb1", "eth0"]);
    let lo = d.iface("lo").unwrap();
    assert_eq!(lo.rx_bytes, lo.tx_bytes, "loopback receives what it sends");
    assert!(d.iface("eth0").unwrap().rx_packets > 0);
}

#[test]
fn net_dev_long_name_runs_into_the_counter() {
    let d = net_dev::parse(&fixture("net-dev-hand-long-name.txt")).unwrap();
    let e = d.iface("enp0s31f6").unwrap();
    assert_eq!(e.rx_bytes, 1_234_567_890);
    assert_eq!(e.rx_errors, 5);
    assert_eq!(e.rx_dropped, 7);
    assert_eq!(e.rx_multicast, 1200);
    assert_eq!(e.tx_bytes, 987_654_321);
    assert_eq!(e.tx_dropped, 2);
    assert!(d.iface("veth-a1").is_some());
}

#[test]
fn net_dev_malformed() {
    let e = net_dev::parse(&fixture("net-dev-bad.txt")).unwrap_err();
    assert_error(e.clone(), "/proc/net/dev", 4, Some(12));
    assert!(e.to_string().contains("transmit errs"), "{e}");
    let e = net_dev::parse(&fixture("net-dev-bad-truncated.txt")).unwrap_err();
    assert_error(e.clone(), "/proc/net/dev", 4, Some(9));
    assert_eq!(e.found, Found::EndOfLine);
    let e = net_dev::parse("  eth0 1 2 3\n").unwrap_err();
    assert_error(e, "/proc/net/dev", 1, Some(1));
}

#[test]
fn sys_net_values() {
    assert_eq!(sys_net::parse_counter("42\n").unwrap(), 42);
    assert!(sys_net::parse_counter("x\n").is_err());
    assert!(sys_net::parse_counter("").is_err());
    assert!(sys_net::parse_counter("1\n2\n").is_err());
    assert_eq!(sys_net::parse_speed("10000\n").unwrap(), Some(10_000));
    assert_eq!(sys_net::parse_speed("-1\n").unwrap(), None);
    assert_eq!(sys_net::parse_speed("4294967295\n").unwrap(), None);
    assert!(sys_net::parse_speed("fast\n").is_err());
    assert_eq!(sys_net::parse_mtu("1500\n").unwrap(), 1500);
    assert_eq!(sys_net::parse_operstate("up\n").unwrap(), OperState::Up);
    assert!(sys_net::parse_operstate("unknown\n").unwrap().is_usable());
    assert!(!sys_net::parse_operstate("down\n").unwrap().is_usable());
    assert!(sys_net::parse_operstate("sideways\n").is_err());
    assert_eq!(
        sys_net::link_basename("../../../../bus/virtio/drivers/virtio_net"),
        Some("virtio_net")
    );
    assert_eq!(sys_net::link_basename("../../../virtio2"), Some("virtio2"));
    assert_eq!(
        sys_net::count_queues(["rx-0", "rx-1", "tx-0", "tx-1", "tx-2", "foo"]),
        (2, 3)
    );
}

// ---- /proc/net/softnet_stat ----

#[test]
fn softnet_every_kernel_layout() {
    let cases = [
        ("softnet-2.6.32-9col.txt", 9, 6),
        ("softnet-2.6.36-10col.txt", 10, 6),
        ("softnet-3.11-11col.txt", 11, 8),
        ("softnet-5.10.47-13col.txt", 13, 2),
        ("softnet-6.4.7-15col.txt", 15, 2),
        ("softnet-6.18-vm-15col.txt", 15, 2),
        ("softnet-hand-11col.txt", 11, 2),
        ("softnet-hand-15col.txt", 15, 2),
    ];
    for (file, columns, rows) in cases {
        let s = softnet::parse(&fixture(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!((s.columns, s.rows.len()), (columns, rows), "{file}");
        let has_rps = columns >= 10;
        let has_flow = columns >= 11;
        let has_cpu = columns >= 13;
        for (i, r) in s.rows.iter().enumerate() {
            assert_eq!(r.received_rps.is_some(), has_rps, "{file}");
            assert_eq!(r.flow_limit_count.is_some(), has_flow, "{file}");
            assert_eq!(r.cpu_from_column, has_cpu, "{file}");
            assert_eq!(r.cpu as usize, i, "{file}: CPUs are 0..n here");
        }
    }
    let old = softnet::parse(&fixture("softnet-2.6.32-9col.txt")).unwrap();
    assert_eq!(old.rows[0].processed, 0x6dca_d223);
    assert_eq!(old.rows[4].time_squeeze, 5);
    let new = softnet::parse(&fixture("softnet-6.4.7-15col.txt")).unwrap();
    assert_eq!(new.rows[1].processed, 0x006d_1ebe);
    assert_eq!(new.rows[1].time_squeeze, 0x4f);
    assert_eq!(new.rows[1].input_qlen, Some(0));
    let hand = softnet::parse(&fixture("softnet-hand-15col.txt")).unwrap();
    let r = hand.cpu(0).unwrap();
    assert_eq!(
        (
            r.processed,
            r.dropped,
            r.time_squeeze,
            r.received_rps,
            r.flow_limit_count
        ),
        (123_456, 100, 10, Some(3), Some(2))
    );
    assert_eq!(
        (r.backlog_len, r.input_qlen, r.process_qlen),
        (Some(9), Some(4), Some(5))
    );
}

#[test]
fn softnet_cpu_column_when_a_cpu_is_offline() {
    let s = softnet::parse(&fixture("softnet-hand-13col-cpu2-offline.txt")).unwrap();
    let cpus: Vec<u32> = s.rows.iter().map(|r| r.cpu).collect();
    assert_eq!(cpus, [0, 1, 3]);
    assert!(s.cpu(2).is_none());
    assert_eq!(s.cpu(3).unwrap().processed, 0xffff_ff00);
    assert_eq!(s.cpu(3).unwrap().backlog_len, Some(300));
    assert_eq!(s.cpu(0).unwrap().dropped, 1234);
}

#[test]
fn softnet_malformed() {
    let e = softnet::parse(&fixture("softnet-bad-hex.txt")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "/proc/net/softnet_stat: line 3, field 4: expected a hex number, found 'zz'"
    );
    let e = softnet::parse(&fixture("softnet-bad-columns.txt")).unwrap_err();
    assert_error(e.clone(), "/proc/net/softnet_stat", 2, Some(12));
    assert!(e.to_string().contains("11 hex columns"), "{e}");
    let e = softnet::parse(&fixture("softnet-bad-truncated.txt")).unwrap_err();
    assert_error(e, "/proc/net/softnet_stat", 2, Some(4));
    let e = softnet::parse("00000001 00000002\n").unwrap_err();
    assert_error(e, "/proc/net/softnet_stat", 1, Some(3));
    assert_eq!(softnet::parse("\n").unwrap_err().found, Found::EndOfInput);
}

// ---- /proc/net/snmp and /proc/net/netstat ----

#[test]
fn snmp_and_netstat_captured() {
    let s = snmp::parse(&fixture("snmp-6.18-vm.txt")).unwrap();
    let protos: Vec<&str> = s.tables.iter().map(|t| t.proto.as_str()).collect();
    assert_eq!(protos, ["Ip", "Icmp", "IcmpMsg", "Tcp", "Udp", "UdpLite"]);
    assert_eq!(s.get("Tcp", "MaxConn"), Some(-1));
    assert_eq!(
        s.counter(Counter::TcpExtDelayedAcks),
        None,
        "TcpExt is in netstat"
    );
    for c in [
        Counter::TcpRetransSegs,
        Counter::UdpInErrors,
        Counter::UdpRcvbufErrors,
        Counter::UdpSndbufErrors,
        Counter::UdpInDatagrams,
        Counter::UdpNoPorts,
        Counter::IpInDiscards,
    ] {
        assert!(s.counter(c).is_some(), "{c:?}");
    }
    assert_eq!(
        s.counter(Counter::UdpInDatagrams),
        s.get("Udp", "InDatagrams").map(|v| v as u64)
    );

    let n = netstat::parse(&fixture("netstat-6.18-vm.txt")).unwrap();
    for c in [
        Counter::TcpExtLostRetransmit,
        Counter::TcpExtDsackRecv,
        Counter::TcpExtDsackOldSent,
        Counter::TcpExtDsackOfoSent,
        Counter::TcpExtSackReorder,
        Counter::TcpExtDelayedAcks,
        Counter::TcpExtBacklogDrop,
        Counter::TcpExtFastRetrans,
        Counter::TcpExtTimeouts,
        Counter::TcpExtListenDrops,
    ] {
        assert!(n.counter(c).is_some(), "{c:?}");
    }
    assert!(n.table("MPTcpExt").is_some());
    assert!(n.table("IpExt").unwrap().get("InOctets").unwrap() > 0);
}

#[test]
fn snmp_malformed() {
    let e = snmp::parse(&fixture("snmp-bad-mismatch.txt")).unwrap_err();
    assert_error(e.clone(), "/proc/net/snmp", 4, Some(1));
    assert!(e.to_string().contains("'Icmp:'"), "{e}");
    let e = snmp::parse(&fixture("snmp-bad-truncated.txt")).unwrap_err();
    assert_error(e.clone(), "/proc/net/snmp", 4, None);
    assert_eq!(e.found, Found::EndOfInput);
    let e = snmp::parse(&fixture("snmp-bad-number.txt")).unwrap_err();
    assert_error(e, "/proc/net/snmp", 2, Some(6));
    let e = snmp::parse(&fixture("snmp-bad-columns.txt")).unwrap_err();
    assert_error(e, "/proc/net/snmp", 2, Some(5));
    let e = netstat::parse("TcpExt: A B\nTcpExt: 1 2 3\n").unwrap_err();
    assert_error(e, "/proc/net/netstat", 2, Some(4));
    assert!(snmp::parse("").is_err());
}

// ---- /proc/pressure ----

#[test]
fn pressure_captured_and_old_cpu_file() {
    for r in ["cpu", "io", "memory"] {
        let p = pressure::parse(&fixture(&format!("pressure-{r}-6.18-vm.txt"))).unwrap();
        assert!(p.full.is_some(), "{r}");
        assert!(p.some.avg10 >= 0.0);
    }
    let cpu = pressure::parse(&fixture("pressure-cpu-6.18-vm.txt")).unwrap();
    assert!(cpu.some.total_us > 0);
    let old = pressure::parse(&fixture("pressure-hand-cpu-5.4-no-full.txt")).unwrap();
    assert_eq!(old.some.total_us, 12);
    assert!(old.full.is_none());
}

#[test]
fn pressure_malformed() {
    let e = pressure::parse(&fixture("pressure-bad-number.txt")).unwrap_err();
    assert_error(e, "/proc/pressure", 2, Some(2));
    let e = pressure::parse(&fixture("pressure-bad-truncated.txt")).unwrap_err();
    assert_error(e.clone(), "/proc/pressure", 1, None);
    assert!(e.to_string().contains("avg300"), "{e}");
    assert!(pressure::parse("").is_err());
    let e = pressure::parse("most avg10=0.00\n").unwrap_err();
    assert_error(e, "/proc/pressure", 1, Some(1));
}

// ---- /proc/PID/task/TID/stat and status ----

#[test]
fn task_stat_comm_with_spaces_and_parens() {
    let t = task_stat::parse(&fixture("task-stat-6.18-comm-parens.txt")).unwrap();
    assert_eq!(t.comm, "x) (y z");
    assert_eq!(t.tid, 20731);
    assert_eq!(t.state, 'S');
    assert_eq!(t.ppid, 20730);
    assert_eq!((t.utime, t.stime), (0, 0));
    assert_eq!(t.num_threads, 1);
    assert_eq!(t.starttime, 108_679);
    assert_eq!(t.processor, 0);

    let line = "7 (a (b) c) R 1 1 1 0 -1 0 0 0 0 0 150 25 0 0 20 -5 4 0 99 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0";
    let t = task_stat::parse(line).unwrap();
    assert_eq!(t.comm, "a (b) c");
    assert_eq!((t.utime, t.stime, t.nice, t.processor), (150, 25, -5, 3));
}

#[test]
fn task_stat_malformed() {
    let e = task_stat::parse(&fixture("task-stat-bad-truncated.txt")).unwrap_err();
    assert_error(e.clone(), "/proc/PID/task/TID/stat", 1, Some(16));
    assert_eq!(e.found, Found::EndOfLine);
    let e = task_stat::parse(&fixture("task-stat-bad-number.txt")).unwrap_err();
    assert_error(e.clone(), "/proc/PID/task/TID/stat", 1, Some(14));
    assert!(e.to_string().contains("utime"), "{e}");
    let e = task_stat::parse("12 comm R 1").unwrap_err();
    assert_error(e, "/proc/PID/task/TID/stat", 1, Some(2));
    let e = task_stat::parse("x (c) R 1").unwrap_err();
    assert_error(e, "/proc/PID/task/TID/stat", 1, Some(1));
    assert!(task_stat::parse("").is_err());
}

#[test]
fn task_status_captured_and_malformed() {
    let text = fixture("task-status-6.18-sleep.txt");
    let s = task_status::parse(&text).unwrap();
    assert_eq!(s.name.as_deref(), Some("x) (y z"));
    assert_eq!(s.voluntary_ctxt_switches, Some(1));
    assert_eq!(s.nonvoluntary_ctxt_switches, Some(3));
    assert_eq!(s.threads, Some(1));
    assert_eq!(s.tgid, s.pid);
    assert_eq!(
        task_status::parse_ctxt_switches(&text).unwrap(),
        (Some(1), Some(3))
    );

    let bad = fixture("task-status-bad-number.txt");
    let e = task_status::parse(&bad).unwrap_err();
    assert_error(e, "/proc/PID/status", 3, Some(2));
    let e = task_status::parse_ctxt_switches(&bad).unwrap_err();
    assert_error(e, "/proc/PID/status", 3, Some(2));
    let e = task_status::parse("Name foo\n").unwrap_err();
    assert_error(e, "/proc/PID/status", 1, Some(1));
}

#[test]
fn errors_can_be_renamed_and_moved_for_importers() {
    let e = softnet::parse("zz\n")
        .unwrap_err()
        .with_source("sosreport/proc/net/softnet_stat")
        .offset_lines(10);
    assert_eq!(
        e.to_string(),
        "sosreport/proc/net/softnet_stat: line 11, field 1: expected a hex number (processed), found 'zz'"
    );
}

#[test]
fn known_counters_match_the_generic_table() {
    for (file, source) in [
        ("snmp-6.18-vm.txt", snmp::SOURCE),
        ("netstat-6.18-vm.txt", netstat::SOURCE),
    ] {
        let text = fixture(file);
        let all = snmp::parse(&text).unwrap();
        let known = snmp::parse_known(source, &text).unwrap();
        let mut found = 0;
        for c in Counter::ALL {
            assert_eq!(known.counter(c), all.counter(c), "{file}: {c:?}");
            found += usize::from(known.counter(c).is_some());
        }
        assert!(found >= 10, "{file}: {found}");
    }
    for bad in [
        "snmp-bad-mismatch.txt",
        "snmp-bad-number.txt",
        "snmp-bad-columns.txt",
    ] {
        let text = fixture(bad);
        assert_eq!(
            snmp::parse_known(snmp::SOURCE, &text).unwrap_err(),
            snmp::parse(&text).unwrap_err(),
            "{bad}"
        );
    }
}

#[test]
fn interrupt_rows_are_classified_by_source() {
    use netceil_probe::parse::interrupts::{IpiKind, IrqSource};
    let vm = interrupts::parse(&fixture("interrupts-6.18-vm-2cpu.txt")).unwrap();
    let src = |irqs: &interrupts::Interrupts, label: &str| irqs.row(label).unwrap().source();
    assert_eq!(src(&vm, "41"), IrqSource::Device, "virtio3-rx is a device");
    assert_eq!(src(&vm, "26"), IrqSource::Device, "ttyS0 is a device");
    assert_eq!(src(&vm, "LOC"), IrqSource::Timer);
    assert_eq!(src(&vm, "RES"), IrqSource::Ipi(IpiKind::Reschedule));
    assert_eq!(src(&vm, "CAL"), IrqSource::Ipi(IpiKind::FunctionCall));
    assert_eq!(src(&vm, "TLB"), IrqSource::Ipi(IpiKind::Tlb));
    assert_eq!(src(&vm, "IWI"), IrqSource::Ipi(IpiKind::IrqWork));
    for other in ["NMI", "SPU", "PMI", "TRM", "HYP", "ERR", "PIN"] {
        assert_eq!(src(&vm, other), IrqSource::Other, "{other}");
    }
    let arm = interrupts::parse(&fixture("interrupts-hand-arm64-cpu2-offline.txt")).unwrap();
    assert_eq!(
        src(&arm, "11"),
        IrqSource::Timer,
        "arch_timer is numbered but a timer"
    );
    assert_eq!(src(&arm, "33"), IrqSource::Timer, "kvm guest ptimer");
    assert_eq!(src(&arm, "40"), IrqSource::Device);
    assert_eq!(src(&arm, "IPI0"), IrqSource::Ipi(IpiKind::Reschedule));
    assert_eq!(src(&arm, "IPI1"), IrqSource::Ipi(IpiKind::FunctionCall));
    let old = interrupts::parse(&fixture("interrupts-2.6.38-16cpu.txt")).unwrap();
    let timer_row = old
        .rows
        .iter()
        .find(|r| r.devices.iter().any(|d| d == "timer"));
    if let Some(r) = timer_row {
        assert_eq!(r.source(), IrqSource::Timer, "the old IRQ 0 timer");
    }
    assert_eq!(src(&old, "LOC"), IrqSource::Timer);
}
