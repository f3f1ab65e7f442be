//! The names of the metrics netceil records, with their units and labels.
//!
//! The sampler writes these names, and the importers and the analyzer read them, so a metric
//! means the same thing whichever way it entered a [`Series`](crate::Series). Names are
//! snake_case and end in their unit (`_pct`, `_per_s`, `_bits_per_s`, `_pps`); gauges that are
//! plain counts carry no suffix. [`ALL`] lists every name with its [`Unit`], and [`unit_of`]
//! looks one up.
//!
//! Labels: a metric without labels is the machine-wide figure (for CPU percentages, the average
//! over all CPUs, 0–100); the same name with a label is one part of it (`cpu=3`, `iface=eth0`).

use crate::Unit;

/// Label key: a CPU number, as the kernel counts CPUs (`cpu=0`).
pub const LABEL_CPU: &str = "cpu";
/// Label key: a network interface name (`iface=eth0`).
pub const LABEL_IFACE: &str = "iface";
/// Label key: a device that could not be tied to an interface, e.g. a PCI address.
pub const LABEL_DEVICE: &str = "device";
/// Label key: an interrupt number from /proc/interrupts (`irq=38`).
pub const LABEL_IRQ: &str = "irq";
/// Label key: a NIC queue number (`queue=3`).
pub const LABEL_QUEUE: &str = "queue";
/// Label key: a NIC queue's direction: `rx`, `tx` or `rxtx` (a combined queue pair).
pub const LABEL_DIR: &str = "dir";
/// Label key: a process id.
pub const LABEL_PID: &str = "pid";
/// Label key: a thread id.
pub const LABEL_TID: &str = "tid";
/// Label key: a thread's command name (`comm`), as the kernel reports it.
pub const LABEL_COMM: &str = "comm";
/// Label key: a queueing discipline's kind (`qdisc=tbf`).
pub const LABEL_QDISC: &str = "qdisc";
/// Label key: a qdisc's handle as tc prints it (`handle=8001:`).
pub const LABEL_HANDLE: &str = "handle";
/// Label key: a process's nice value (`nice=19`).
pub const LABEL_NICE: &str = "nice";
/// Label key: how a process relates to the workload: `watched`, `child` (a descendant of a
/// watched process) or `peer` (its socket faces one of the workload's); absent otherwise.
pub const LABEL_ROLE: &str = "role";
/// Label key: the kind of an inter-processor interrupt (`kind=reschedule`).
pub const LABEL_KIND: &str = "kind";
/// Label key: a named network namespace (`netns=lab-a`); absent for the recorder's own.
pub const LABEL_NETNS: &str = "netns";
/// Label key: a softirq vector (`vec=net_rx`), as /proc/softirqs names them, lower case.
pub const LABEL_VEC: &str = "vec";
/// Label key: a flow. For the workload's TCP connections, `LOCAL>REMOTE` with ports
/// (`127.0.0.1:40312>127.0.0.1:5201`, `[::1]:5201>[::1]:40312`); imported iperf3 streams use
/// the stream number.
pub const LABEL_FLOW: &str = "flow";

macro_rules! metric_names {
    ($( $(#[doc = $doc:literal])* $ident:ident = $name:literal, $unit:ident; )*) => {
        $( $(#[doc = $doc])* pub const $ident: &str = $name; )*

        /// Every metric name defined here, with its unit.
        pub const ALL: &[(&str, Unit)] = &[ $( ($name, Unit::$unit) ),* ];

        /// Every metric name with its doc comment, the lines joined (each begins with a space).
        const DOCS: &[(&str, &str)] = &[ $( ($name, concat!($($doc),*)) ),* ];
    };
}

metric_names! {
    // CPU time shares, from /proc/stat. Unlabeled: average over all CPUs; `cpu=N`: one CPU.
    /// Time in user mode (without nice), % of the CPU(s). Labels: none or `cpu`.
    CPU_USER_PCT = "cpu_user_pct", Percent;
    /// Time in user mode at positive nice, %. Labels: none or `cpu`.
    CPU_NICE_PCT = "cpu_nice_pct", Percent;
    /// Time in kernel mode outside interrupt handlers, %. Labels: none or `cpu`.
    CPU_SYSTEM_PCT = "cpu_system_pct", Percent;
    /// Time in hard interrupt handlers, %. Labels: none or `cpu`.
    CPU_IRQ_PCT = "cpu_irq_pct", Percent;
    /// Time in softirqs (network receive and transmit processing among them), %. Labels: none or `cpu`.
    CPU_SOFTIRQ_PCT = "cpu_softirq_pct", Percent;
    /// Idle time, %. Labels: none or `cpu`.
    CPU_IDLE_PCT = "cpu_idle_pct", Percent;
    /// Idle time with I/O outstanding, %; the kernel calls this figure unreliable. Labels: none or `cpu`.
    CPU_IOWAIT_PCT = "cpu_iowait_pct", Percent;
    /// Time the hypervisor ran something else while this virtual CPU wanted to run, %. Labels: none or `cpu`.
    CPU_STEAL_PCT = "cpu_steal_pct", Percent;
    /// Everything but idle and iowait, %. Labels: none or `cpu`.
    CPU_BUSY_PCT = "cpu_busy_pct", Percent;

    // Whole-machine counters, from /proc/stat.
    /// Hardware interrupts per second, all CPUs (/proc/stat `intr`).
    INTR_PER_S = "intr_per_s", PerSecond;
    /// Context switches per second, all CPUs (/proc/stat `ctxt`).
    CS_PER_S = "cs_per_s", PerSecond;
    /// Processes and threads created per second (/proc/stat `processes`).
    FORKS_PER_S = "forks_per_s", PerSecond;
    /// Runnable tasks at the sample time (a gauge, not a rate).
    PROCS_RUNNING = "procs_running", Count;
    /// Tasks blocked on I/O at the sample time (a gauge).
    PROCS_BLOCKED = "procs_blocked", Count;

    // Softirqs, from /proc/softirqs. Unlabeled: sum over CPUs; `cpu=N`: one CPU.
    /// NET_RX softirqs raised per second. Labels: none or `cpu`.
    SOFTIRQ_NET_RX_PER_S = "softirq_net_rx_per_s", PerSecond;
    /// NET_TX softirqs raised per second. Labels: none or `cpu`.
    SOFTIRQ_NET_TX_PER_S = "softirq_net_tx_per_s", PerSecond;

    // NIC interrupts, from /proc/interrupts.
    /// Interrupts per second of one NIC queue interrupt, all CPUs. Labels: `irq`, `iface` (or
    /// `device` when no interface could be matched), `queue` when known, and `dir`.
    IRQ_PER_S = "irq_per_s", PerSecond;
    /// NIC queue interrupts per second. Labels: none (all CPUs) or `cpu`: where they land.
    NIC_IRQ_PER_S = "nic_irq_per_s", PerSecond;

    // Interrupts by source, from /proc/interrupts: devices, timers and inter-processor
    // interrupts (IPIs). /proc/stat's `intr` counts them all alike.
    /// Device interrupts per second (numbered lines with a device handler). Labels: none or `cpu`.
    DEVICE_INTR_PER_S = "device_intr_per_s", PerSecond;
    /// Timer interrupts per second (local timer ticks and hrtimers). Labels: none or `cpu`.
    TIMER_INTR_PER_S = "timer_intr_per_s", PerSecond;
    /// Inter-processor interrupts per second. Labels: none, or `kind` (reschedule, call, tlb,
    /// irq_work, other), or `cpu` (all kinds).
    IPI_PER_S = "ipi_per_s", PerSecond;

    // Interfaces, from /proc/net/dev and /sys/class/net/IF/statistics. Label: `iface`.
    /// Received bits per second (bytes × 8, as counted by the driver). Label: `iface`.
    IFACE_RX_BITS_PER_S = "iface_rx_bits_per_s", BitsPerSecond;
    /// Transmitted bits per second. Label: `iface`.
    IFACE_TX_BITS_PER_S = "iface_tx_bits_per_s", BitsPerSecond;
    /// Received packets per second. Label: `iface`.
    IFACE_RX_PPS = "iface_rx_pps", PacketsPerSecond;
    /// Transmitted packets per second. Label: `iface`.
    IFACE_TX_PPS = "iface_tx_pps", PacketsPerSecond;
    /// Received packets dropped per second (/proc/net/dev `drop`). Label: `iface`.
    IFACE_RX_DROPPED_PER_S = "iface_rx_dropped_per_s", PerSecond;
    /// Transmit packets dropped per second. Label: `iface`.
    IFACE_TX_DROPPED_PER_S = "iface_tx_dropped_per_s", PerSecond;
    /// Receive errors per second. Label: `iface`.
    IFACE_RX_ERRORS_PER_S = "iface_rx_errors_per_s", PerSecond;
    /// Transmit errors per second. Label: `iface`.
    IFACE_TX_ERRORS_PER_S = "iface_tx_errors_per_s", PerSecond;
    /// Packets the NIC missed for lack of host buffers, per second (`rx_missed_errors`). Label: `iface`.
    IFACE_RX_MISSED_PER_S = "iface_rx_missed_per_s", PerSecond;

    // Queueing disciplines, from rtnetlink (RTM_GETQDISC). Labels: `iface`, `qdisc` (kind),
    // `handle`, and `netns` for a named namespace other than the recorder's own.
    /// Bits a qdisc passed per second. Labels: `iface`, `qdisc`, `handle`, `netns`.
    QDISC_BITS_PER_S = "qdisc_bits_per_s", BitsPerSecond;
    /// Packets a qdisc passed per second. Labels as `qdisc_bits_per_s`.
    QDISC_PPS = "qdisc_pps", PacketsPerSecond;
    /// Packets a qdisc dropped per second (queue full, policer, AQM). Labels as `qdisc_bits_per_s`.
    QDISC_DROPS_PER_S = "qdisc_drops_per_s", PerSecond;
    /// Times per second a qdisc held a packet back for being over its rate or limits (a shaper
    /// throttling). Labels as `qdisc_bits_per_s`.
    QDISC_OVERLIMITS_PER_S = "qdisc_overlimits_per_s", PerSecond;
    /// Packets per second the driver handed back to a qdisc (device busy). Labels as `qdisc_bits_per_s`.
    QDISC_REQUEUES_PER_S = "qdisc_requeues_per_s", PerSecond;
    /// Bytes waiting in a qdisc at the sample time (a gauge). Labels as `qdisc_bits_per_s`.
    QDISC_BACKLOG_BYTES = "qdisc_backlog_bytes", Bytes;
    /// The rate a shaper is configured to (tbf rate, fq maxrate), bit/s (a gauge). Labels as `qdisc_bits_per_s`.
    QDISC_RATE_BITS_PER_S = "qdisc_rate_bits_per_s", BitsPerSecond;

    // Per-CPU backlog processing, from /proc/net/softnet_stat. Unlabeled: sum; `cpu=N`: one CPU.
    /// Packets taken off the backlog and processed per second. Labels: none or `cpu`.
    SOFTNET_PROCESSED_PER_S = "softnet_processed_per_s", PerSecond;
    /// Packets dropped per second because the backlog was full (netdev_max_backlog). Labels: none or `cpu`.
    SOFTNET_DROPPED_PER_S = "softnet_dropped_per_s", PerSecond;
    /// Times per second the receive softirq ran out of budget or time with work left. Labels: none or `cpu`.
    SOFTNET_TIME_SQUEEZE_PER_S = "softnet_time_squeeze_per_s", PerSecond;
    /// RPS inter-processor interrupts received per second. Labels: none or `cpu`.
    SOFTNET_RECEIVED_RPS_PER_S = "softnet_received_rps_per_s", PerSecond;
    /// Packets dropped per second by flow limiting. Labels: none or `cpu`.
    SOFTNET_FLOW_LIMIT_PER_S = "softnet_flow_limit_per_s", PerSecond;
    /// Packets waiting in the backlog at the sample time (a gauge; kernels ≥ 5.10). Labels: none or `cpu`.
    SOFTNET_BACKLOG_LEN = "softnet_backlog_len", Count;

    // TCP, from /proc/net/snmp (Tcp) and /proc/net/netstat (TcpExt). Machine-wide.
    /// TCP segments received per second.
    TCP_IN_SEGS_PER_S = "tcp_in_segs_per_s", PerSecond;
    /// TCP segments sent per second, retransmissions excluded.
    TCP_OUT_SEGS_PER_S = "tcp_out_segs_per_s", PerSecond;
    /// TCP segments retransmitted per second (Tcp RetransSegs).
    TCP_RETRANS_SEGS_PER_S = "tcp_retrans_segs_per_s", PerSecond;
    /// Retransmissions that were lost again, per second (TCPLostRetransmit).
    TCP_LOST_RETRANSMIT_PER_S = "tcp_lost_retransmit_per_s", PerSecond;
    /// Fast retransmits per second (TCPFastRetrans).
    TCP_FAST_RETRANS_PER_S = "tcp_fast_retrans_per_s", PerSecond;
    /// Retransmission timeouts per second (TCPTimeouts).
    TCP_TIMEOUTS_PER_S = "tcp_timeouts_per_s", PerSecond;
    /// Duplicate SACKs received per second (TCPDSACKRecv): the peer got a segment twice.
    TCP_DSACK_RECV_PER_S = "tcp_dsack_recv_per_s", PerSecond;
    /// Duplicate SACKs sent per second (TCPDSACKOldSent + TCPDSACKOfoSent).
    TCP_DSACK_SENT_PER_S = "tcp_dsack_sent_per_s", PerSecond;
    /// Reordering detected through SACK, per second (TCPSACKReorder).
    TCP_SACK_REORDER_PER_S = "tcp_sack_reorder_per_s", PerSecond;
    /// Delayed ACKs sent per second (DelayedACKs).
    TCP_DELAYED_ACKS_PER_S = "tcp_delayed_acks_per_s", PerSecond;
    /// Segments dropped per second because a socket's backlog was full (TCPBacklogDrop).
    TCP_BACKLOG_DROP_PER_S = "tcp_backlog_drop_per_s", PerSecond;
    /// Connection requests dropped at a listener per second (ListenDrops).
    TCP_LISTEN_DROPS_PER_S = "tcp_listen_drops_per_s", PerSecond;

    // The workload's own TCP connections, from sock_diag: the kernel's `struct tcp_info` of
    // each established socket held by a watched process or its children, named as `ss -ti`
    // names them. Per flow (labels `flow` and `pid`) only for the busiest few flows of each
    // interval, by bytes moved; without labels, over all the workload's flows. Read with the
    // slow tier; a socket that closed, a field the kernel does not have, or a counter that went
    // backwards gives a missing value, never 0.
    /// The workload's established TCP connections at the sample time (a gauge; both ends
    /// count when both are the workload's).
    TCP_FLOWS = "tcp_flows", Count;
    /// Congestion window, segments (ss `cwnd`). Labels: `flow`, `pid`.
    TCP_CWND = "tcp_cwnd", Count;
    /// Smoothed round-trip time, µs (ss `rtt`). Labels: `flow`, `pid`.
    TCP_RTT_US = "tcp_rtt_us", Microseconds;
    /// Lowest round-trip time the connection has seen, µs (ss `minrtt`; kernels ≥ 4.6). Labels: `flow`, `pid`.
    TCP_MIN_RTT_US = "tcp_min_rtt_us", Microseconds;
    /// The latest delivery-rate sample, bit/s (ss `delivery_rate`; kernels ≥ 4.9). Labels: none
    /// (sum over the flows whose data was acknowledged in the interval) or `flow`, `pid`.
    TCP_DELIVERY_RATE_BITS_PER_S = "tcp_delivery_rate_bits_per_s", BitsPerSecond;
    /// Share of the interval the connection had data to send (ss `busy`; kernels ≥ 4.10), %.
    /// Labels: none (mean over the flows) or `flow`, `pid`.
    TCP_BUSY_PCT = "tcp_busy_pct", Percent;
    /// Share of the busy time held back by the peer's receive window (ss `rwnd_limited`), %.
    /// Labels: none (weighted by busy time over the flows) or `flow`, `pid`.
    TCP_RWND_LIMITED_PCT = "tcp_rwnd_limited_pct", Percent;
    /// Share of the busy time held back by the send buffer (ss `sndbuf_limited`), %. Labels:
    /// none (weighted by busy time) or `flow`, `pid`.
    TCP_SNDBUF_LIMITED_PCT = "tcp_sndbuf_limited_pct", Percent;
    /// Share of the busy time limited by neither window nor send buffer: congestion control
    /// held it (the rest of ss `busy`), %. Labels: none (weighted by busy time) or `flow`, `pid`.
    TCP_CWND_LIMITED_PCT = "tcp_cwnd_limited_pct", Percent;
    /// Segments retransmitted per second (tcpi_total_retrans). Labels: none (sum over the
    /// flows) or `flow`, `pid`.
    TCP_RETRANS_PER_S = "tcp_retrans_per_s", PerSecond;
    /// The peer's advertised receive window, bytes (ss `snd_wnd`; kernels ≥ 5.4). Labels: `flow`, `pid`.
    TCP_SND_WND_BYTES = "tcp_snd_wnd_bytes", Bytes;
    /// What receive-buffer autotuning expects the peer to send per RTT, bytes (ss
    /// `rcv_space`). Labels: `flow`, `pid`.
    TCP_RCV_SPACE_BYTES = "tcp_rcv_space_bytes", Bytes;
    /// The sender's maximum segment size, bytes (ss `mss`). Labels: `flow`, `pid`.
    TCP_SND_MSS_BYTES = "tcp_snd_mss_bytes", Bytes;
    /// Data sent and not yet acknowledged, bytes: unacknowledged segments × the MSS (ss
    /// `unacked` × `mss`). Set against the peer's window and the congestion window, it says
    /// which of them is full. Labels: `flow`, `pid`.
    TCP_IN_FLIGHT_BYTES = "tcp_in_flight_bytes", Bytes;
    /// The socket's send buffer, bytes (ss `skmem` tb: SO_SNDBUF as granted or autotuned).
    /// Labels: `flow`, `pid`.
    TCP_SNDBUF_BYTES = "tcp_sndbuf_bytes", Bytes;
    /// Bytes queued in the send buffer, sent or not (ss `skmem` w). Labels: `flow`, `pid`.
    TCP_SEND_QUEUE_BYTES = "tcp_send_queue_bytes", Bytes;
    /// The socket's receive buffer, bytes (ss `skmem` rb). Labels: `flow`, `pid`.
    TCP_RCVBUF_BYTES = "tcp_rcvbuf_bytes", Bytes;
    /// Bytes held in the receive buffer, not yet read by the application (ss `skmem` r).
    /// Labels: `flow`, `pid`.
    TCP_RECV_QUEUE_BYTES = "tcp_recv_queue_bytes", Bytes;
    /// Bytes the peer acknowledged per second (ss `bytes_acked`). Labels: none (sum over the
    /// flows) or `flow`, `pid`.
    TCP_BYTES_ACKED_PER_S = "tcp_bytes_acked_per_s", BytesPerSecond;
    /// Bytes received per second (ss `bytes_received`). Labels: none (sum over the flows) or
    /// `flow`, `pid`.
    TCP_BYTES_RECEIVED_PER_S = "tcp_bytes_received_per_s", BytesPerSecond;

    // UDP and IP, from /proc/net/snmp. Machine-wide.
    /// UDP datagrams delivered to sockets per second.
    UDP_IN_DATAGRAMS_PER_S = "udp_in_datagrams_per_s", PerSecond;
    /// UDP datagrams sent per second.
    UDP_OUT_DATAGRAMS_PER_S = "udp_out_datagrams_per_s", PerSecond;
    /// UDP datagrams per second that arrived at a port nobody listened on.
    UDP_NO_PORTS_PER_S = "udp_no_ports_per_s", PerSecond;
    /// UDP datagrams per second that could not be delivered (RcvbufErrors included).
    UDP_IN_ERRORS_PER_S = "udp_in_errors_per_s", PerSecond;
    /// UDP datagrams dropped per second because a socket receive buffer was full.
    UDP_RCVBUF_ERRORS_PER_S = "udp_rcvbuf_errors_per_s", PerSecond;
    /// UDP sends failed per second for lack of send buffer.
    UDP_SNDBUF_ERRORS_PER_S = "udp_sndbuf_errors_per_s", PerSecond;
    /// IP datagrams received per second (before any checks).
    IP_IN_RECEIVES_PER_S = "ip_in_receives_per_s", PerSecond;
    /// IP datagrams discarded per second without an error in them (e.g. for lack of buffers).
    IP_IN_DISCARDS_PER_S = "ip_in_discards_per_s", PerSecond;

    // Pressure stall information, from /proc/pressure/*: share of wall time, from `total` deltas.
    /// Share of time some runnable task waited for a CPU, %.
    PSI_CPU_SOME_PCT = "psi_cpu_some_pct", Percent;
    /// Share of time all non-idle tasks waited for a CPU, % (kernels ≥ 5.13).
    PSI_CPU_FULL_PCT = "psi_cpu_full_pct", Percent;
    /// Share of time some task waited for I/O, %.
    PSI_IO_SOME_PCT = "psi_io_some_pct", Percent;
    /// Share of time all non-idle tasks waited for I/O, %.
    PSI_IO_FULL_PCT = "psi_io_full_pct", Percent;
    /// Share of time some task waited for memory, %.
    PSI_MEMORY_SOME_PCT = "psi_memory_some_pct", Percent;
    /// Share of time all non-idle tasks waited for memory, %.
    PSI_MEMORY_FULL_PCT = "psi_memory_full_pct", Percent;

    // Threads of watched processes, from /proc/PID/task/TID/{stat,status}.
    /// CPU time of one thread, % of one core (user + system). Labels: `pid`, `tid`, `comm`.
    THREAD_CPU_PCT = "thread_cpu_pct", Percent;
    /// User-mode CPU time of one thread, % of one core. Labels: `pid`, `tid`, `comm`.
    THREAD_USER_PCT = "thread_user_pct", Percent;
    /// Kernel-mode CPU time of one thread, % of one core. Labels: `pid`, `tid`, `comm`.
    THREAD_SYSTEM_PCT = "thread_system_pct", Percent;
    /// Voluntary context switches per second (the thread blocked). Labels: `pid`, `tid`, `comm`.
    THREAD_VOLUNTARY_CS_PER_S = "thread_voluntary_cs_per_s", PerSecond;
    /// Involuntary context switches per second (the thread was preempted). Labels: `pid`, `tid`, `comm`.
    THREAD_NONVOLUNTARY_CS_PER_S = "thread_nonvoluntary_cs_per_s", PerSecond;
    /// The CPU the thread last ran on, at the sample time (a gauge). Labels: `pid`, `tid`, `comm`.
    THREAD_LAST_CPU = "thread_last_cpu", Count;

    /// read/write-family system calls per second (/proc/PID/task/TID/io syscr + syscw; the
    /// sendmsg/recvmsg family is not counted). Labels: `pid`, `tid`, `comm`.
    THREAD_SYSCALLS_PER_S = "thread_syscalls_per_s", PerSecond;
    /// Bytes per second through those calls (rchar + wchar), sockets included. Labels: `pid`, `tid`, `comm`.
    THREAD_IO_BYTES_PER_S = "thread_io_bytes_per_s", BytesPerSecond;

    // eBPF probes (`--probe`): exact kernel times from tracepoints, not tick samples.
    /// Time in softirq handlers, measured from softirq_entry to softirq_exit, % of the CPU.
    /// Labels: none (mean over CPUs), `cpu`, or `cpu` and `vec`.
    SOFTIRQ_EXACT_PCT = "softirq_exact_pct", Percent;
    /// Softirq handler runs per second. Labels: `cpu`, `vec`.
    SOFTIRQ_RUNS_PER_S = "softirq_runs_per_s", PerSecond;
    /// NAPI polls per second. Label: `iface` (`backlog`: the per-CPU backlog of netif_rx).
    NAPI_POLLS_PER_S = "napi_polls_per_s", PerSecond;
    /// Packets NAPI polls handed up per second. Label: `iface`.
    NAPI_PPS = "napi_pps", PacketsPerSecond;
    /// NAPI polls per second that used their whole budget (work == budget): the device had
    /// more waiting. Label: `iface`.
    NAPI_BUDGET_EXHAUSTED_PER_S = "napi_budget_exhausted_per_s", PerSecond;
    /// The per-poll budget (weight) the last poll had. Label: `iface`.
    NAPI_BUDGET = "napi_budget", Count;
    /// Time threads spent waiting for contended kernel locks, % of wall time × CPUs.
    LOCK_WAIT_PCT = "lock_wait_pct", Percent;
    /// Contended kernel lock acquisitions per second.
    LOCK_CONTENTIONS_PER_S = "lock_contentions_per_s", PerSecond;
    /// A followed thread's time on a CPU, % of wall time (sched_switch). Labels: `pid`, `tid`, `comm`.
    SCHED_ON_CPU_PCT = "sched_on_cpu_pct", Percent;
    /// A followed thread's time runnable but waiting for a CPU, %. Labels: `pid`, `tid`, `comm`.
    SCHED_RUNNABLE_WAIT_PCT = "sched_runnable_wait_pct", Percent;
    /// A followed thread's time blocked (sleeping until woken), %. Labels: `pid`, `tid`, `comm`.
    SCHED_BLOCKED_PCT = "sched_blocked_pct", Percent;
    /// A followed thread's switches away because it blocked, per second. Labels: `pid`, `tid`, `comm`.
    SCHED_VOLUNTARY_CS_PER_S = "sched_voluntary_cs_per_s", PerSecond;
    /// A followed thread's switches away while still runnable (preempted or yielding), per
    /// second. Labels: `pid`, `tid`, `comm`.
    SCHED_INVOLUNTARY_CS_PER_S = "sched_involuntary_cs_per_s", PerSecond;

    // Who else is on the CPU: every process's CPU time, read every 2 s (as top does); only
    // the busiest few are recorded.
    /// CPU time of one process, % of one core (all its threads). Labels: `pid`, `comm`, `cpu`
    /// (where its main thread last ran) and `nice`.
    PROC_CPU_PCT = "proc_cpu_pct", Percent;

    // The observer's own cost.
    /// CPU time of netceil's sampler thread, % of one core.
    SAMPLER_CPU_PCT = "sampler_cpu_pct", Percent;

    // The workload's own figures per interval (live runs), as its sender and receiver counted.
    /// Packets the generator sent per second.
    LOAD_TX_PPS = "load_tx_pps", PacketsPerSecond;
    /// Packets the application receiver read per second.
    LOAD_RX_PPS = "load_rx_pps", PacketsPerSecond;
    /// Payload bits the generator sent per second.
    LOAD_TX_BITS_PER_S = "load_tx_bits_per_s", BitsPerSecond;
    /// Payload bits the application receiver read per second.
    LOAD_RX_BITS_PER_S = "load_rx_bits_per_s", BitsPerSecond;
    /// Packets found lost by sequence number per second.
    LOAD_LOST_PER_S = "load_lost_per_s", PerSecond;
    /// Request/response transactions completed per second.
    LOAD_TRANSACTIONS_PER_S = "load_transactions_per_s", PerSecond;
    /// Mean request/response latency over the interval, µs from the intended send time.
    LOAD_MEAN_LATENCY_US = "load_mean_latency_us", Microseconds;

    // Imported: Erlang scheduler statistics (netceil-import). Label `scheduler` = scheduler id;
    // `type` = normal, dirty_cpu or dirty_io when the source says which.
    /// Share of wall time a scheduler was doing work (ΔActiveTime/ΔTotalTime), %: effective
    /// utilization, unlike OS CPU % which counts busy-waiting. Labels: none (mean over
    /// schedulers, or the tool's own total) or `scheduler` (and `type`).
    ERLANG_SCHEDULER_UTIL_PCT = "erlang_scheduler_util_pct", Percent;
    /// Utilization of all normal and dirty CPU schedulers weighted against the CPU time
    /// available, % (`scheduler:utilization/1`'s `weighted`).
    ERLANG_SCHEDULER_UTIL_WEIGHTED_PCT = "erlang_scheduler_util_weighted_pct", Percent;

    // Imported: iperf3 --json intervals (netceil-import). Label `flow` = stream number, 1-based.
    /// TCP retransmissions per second the iperf3 sender counted. Labels: none or `flow`.
    IPERF3_RETRANSMITS_PER_S = "iperf3_retransmits_per_s", PerSecond;
    /// Smoothed RTT of a stream at the end of the interval, µs (TCP_INFO). Label: `flow`.
    IPERF3_RTT_US = "iperf3_rtt_us", Microseconds;
    /// Congestion window of a stream at the end of the interval, bytes. Label: `flow`.
    IPERF3_SND_CWND_BYTES = "iperf3_snd_cwnd_bytes", Bytes;
    /// UDP jitter the iperf3 receiver computed over the interval, µs. Labels: none or `flow`.
    IPERF3_JITTER_US = "iperf3_jitter_us", Microseconds;

    // Imported: one /proc snapshot (a sosreport) holds counters since boot, not rates. Such a
    // series has `interval_s = 0` and a single row at `t_s = 0`; these `_total` metrics are
    // counts since boot. Two snapshots give the `_per_s` metrics above instead.
    /// NIC queue interrupts since boot. Labels: `cpu` (where they landed), or `irq`, `iface`
    /// (or `device`), `queue`, `dir` for one queue's interrupt summed over CPUs.
    NIC_IRQ_TOTAL = "nic_irq_total", Count;
    /// NET_RX softirqs since boot. Labels: none (all CPUs) or `cpu`.
    SOFTIRQ_NET_RX_TOTAL = "softirq_net_rx_total", Count;
    /// NET_TX softirqs since boot. Labels: none (all CPUs) or `cpu`.
    SOFTIRQ_NET_TX_TOTAL = "softirq_net_tx_total", Count;
    /// Packets processed from the backlog since boot (softnet_stat column 1). Labels: none or `cpu`.
    SOFTNET_PROCESSED_TOTAL = "softnet_processed_total", Count;
    /// Packets dropped since boot because a CPU's backlog was full. Labels: none or `cpu`.
    SOFTNET_DROPPED_TOTAL = "softnet_dropped_total", Count;
    /// Times since boot the receive softirq ran out of budget or time. Labels: none or `cpu`.
    SOFTNET_TIME_SQUEEZE_TOTAL = "softnet_time_squeeze_total", Count;
    /// RPS inter-processor interrupts received since boot. Labels: none or `cpu`.
    SOFTNET_RECEIVED_RPS_TOTAL = "softnet_received_rps_total", Count;
    /// Packets dropped by flow limiting since boot. Labels: none or `cpu`.
    SOFTNET_FLOW_LIMIT_TOTAL = "softnet_flow_limit_total", Count;
    /// Any /proc/net/snmp or /proc/net/netstat value as printed (counters since boot, a few
    /// gauges). Labels: `proto` (`Udp`, `TcpExt`…) and `counter` (`RcvbufErrors`).
    SNMP_COUNTER_TOTAL = "snmp_counter_total", Count;
    /// Any /proc/net/snmp or /proc/net/netstat counter per second, from two snapshots.
    /// Labels: `proto` and `counter`.
    SNMP_COUNTER_PER_S = "snmp_counter_per_s", PerSecond;
    /// Any /proc/net/dev counter since the interface was created. Labels: `iface` and
    /// `counter` (`rx_bytes`, `rx_dropped`, `tx_packets`…).
    NET_DEV_COUNTER_TOTAL = "net_dev_counter_total", Count;
    /// Any /proc/net/dev counter per second, from two snapshots. Labels: `iface`, `counter`.
    NET_DEV_COUNTER_PER_S = "net_dev_counter_per_s", PerSecond;
}

/// The unit of a metric name defined here, or `None` for a name this module does not know.
pub fn unit_of(name: &str) -> Option<Unit> {
    ALL.iter().find(|(n, _)| *n == name).map(|&(_, u)| u)
}

/// What a metric name defined here measures: its doc comment above, on one line (for help
/// texts such as an OpenMetrics `# HELP`), or `None` for a name this module does not know.
pub fn doc_of(name: &str) -> Option<&'static str> {
    DOCS.iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, d)| d.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_snake_case_and_unit_suffixed() {
        let mut seen = std::collections::BTreeSet::new();
        for &(name, unit) in ALL {
            assert!(seen.insert(name), "duplicate metric name {name}");
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{name} is not snake_case"
            );
            let suffix_ok = match unit {
                Unit::Percent => name.ends_with("_pct"),
                Unit::BitsPerSecond => name.ends_with("_bits_per_s"),
                Unit::PacketsPerSecond => name.ends_with("_pps"),
                Unit::PerSecond => name.ends_with("_per_s"),
                Unit::Count => !name.ends_with("_per_s") && !name.ends_with("_pct"),
                _ => true,
            };
            assert!(suffix_ok, "{name} does not end in the suffix of {unit:?}");
        }
        assert_eq!(unit_of(CPU_BUSY_PCT), Some(Unit::Percent));
        assert_eq!(unit_of("no_such_metric"), None);
    }

    #[test]
    fn every_name_has_its_doc_on_one_line() {
        for &(name, _) in ALL {
            let doc = doc_of(name).unwrap_or_default();
            assert!(!doc.is_empty(), "{name} has no doc comment");
            assert!(!doc.contains('\n') && doc == doc.trim(), "{name}: {doc:?}");
        }
        assert_eq!(
            doc_of(CS_PER_S),
            Some("Context switches per second, all CPUs (/proc/stat `ctxt`).")
        );
        assert_eq!(doc_of("no_such_metric"), None);
    }
}
