# Batch 13 (training and held-out halves), synthesized:
#   python3 bench/captures/gen/batch13.py bench/captures/batch13 bench/captures/batch13h
# Several logs of the same minutes on one machine, analyzed together (`analyze --join`):
# each line of EXPECT names two files. What one log cannot show alone: OS CPU from mpstat or
# sar beside an Erlang scheduler_wall_time dump (busy-wait when the schedulers' real work is far
# below it, cpu_bound when it is not), a lock profile whose waits are sized by the window and
# CPU count the other log gives, a healthy machine whose verdict joining must not change, and
# logs whose time ranges only partly overlap.
import sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from formats import *

R.seed(13)
T = sys.argv[1]; H = sys.argv[2]
os.makedirs(T, exist_ok=True); os.makedirs(H, exist_ok=True)
exp_t, exp_h = [], []

UCOLS = (["CPU", "%user", "%nice", "%system", "%iowait", "%steal", "%idle"], [9, 10, 10, 10, 10, 10, 10])


def sar_u(usr, sys_):
    def f(i):
        u = j(usr, .04); s = j(sys_, .05)
        return [["all", u, 0.0, s, 0.1, 0.0, max(0.0, 100 - u - s - .1)]]
    return f


def dev(rx_pps, tx_pps, rx_kb, tx_kb, util):
    def f(i):
        return [["lo", 2.0, 2.0, 0.1, 0.1, 0.0, 0.0, 0.0, 0.0],
                ["eth0", j(rx_pps, .03), j(tx_pps, .03), j(rx_kb, .03), j(tx_kb, .03), 0.0, 0.0, 0.0, j(util, .03)]]
    return f


def cpus_even(usr, sys_, soft=1.0):
    return lambda c: [j(usr, .06), 0.0, j(sys_, .06), 0.0, 0.0, j(soft, .3), 0.0, 0.0, 0.0]


def one_soft(hot, soft):
    def f(c):
        if c == hot:
            return [j(1.0, .5), 0.0, j(3.0, .2), 0.0, j(0.5, .3), j(soft, .02), 0.0, 0.0, 0.0]
        return [j(4.0, .2), 0.0, j(3.0, .2), 0.0, 0.0, j(0.8, .3), 0.0, 0.0, 0.0]
    return f


# ---------------- training half ----------------
# 1. mpstat -P ALL 1 beside scheduler_wall_time taken at its start and end: OS CPU ~52 %,
#    the schedulers worked ~7 % of their time. Neither log alone shows the gap.
mpstat(f"{T}/mpstat-P-ALL-erl-8cpu-1s.txt", "Linux 6.1.0-26-amd64 (erl-recv-2) \t11/18/2026 \t_x86_64_\t(8 CPU)",
       8, 40, (9, 14, 0), cpus_even(38.0, 13.0))
wall_time(f"{T}/erl-wall-time-8sched.txt", "", wall_time_snaps(8, [lambda s: j(0.07, .25)], 40_000_000),
          "statistics(scheduler_wall_time) at the start and the end of the mpstat capture")
exp_t.append("mpstat-P-ALL-erl-8cpu-1s.txt erl-wall-time-8sched.txt|--join --throughput 90MB/s|busy_wait|mpstat counts ~52 % of 8 CPUs busy while the wall-time pair over the same 40 s says the 8 schedulers worked ~7 % of their time: the rest is schedulers spinning before they sleep; neither file alone shows the gap")

# 2. mpstat beside scheduler_wall_time where the work is real: OS CPU ~91 %, schedulers ~89 %.
mpstat(f"{T}/mpstat-P-ALL-erl-busy-4cpu-1s.txt", "Linux 5.15.0-125-generic (mq-node-1) \t11/19/2026 \t_x86_64_\t(4 CPU)",
       4, 30, (16, 2, 30), cpus_even(71.0, 19.0, 1.5))
wall_time(f"{T}/erl-wall-time-busy-4sched.txt", "", wall_time_snaps(4, [lambda s: j(0.89, .03)], 30_000_000))
exp_t.append("mpstat-P-ALL-erl-busy-4cpu-1s.txt erl-wall-time-busy-4sched.txt|--join --throughput 180MB/s|cpu_bound|OS CPU ~91 % on all 4 CPUs and the schedulers worked ~89 % of the same 30 s: the CPU time is real work, so the CPU is the ceiling, not busy-wait (the near miss of case 1)")

# 3. sar -u beside perf lock contention for the same 30 s on 8 CPUs: many contentions, but
#    0.6 s of waiting against 240 CPU-seconds. The window and CPU count come from sar.
sar_sections(f"{T}/sar-u-8cpu-lock-window-1s.txt", "Linux 6.6.52-1-lts (proxy-4) \t11/20/2026 \t_x86_64_\t(8 CPU)",
             30, (11, 5, 0), [(UCOLS[0], sar_u(18.0, 17.0), UCOLS[1])])
perf_lock(f"{T}/perf-lock-small-8cpu.txt", "# perf lock contention -a -- sleep 30", [
    (702311, 511.0e3, 280.0, 0.14, "spinlock", "__dev_queue_xmit+0x5a1"),
    (88012, 70.2e3, 140.0, 0.12, "spinlock", "tcp_v4_rcv+0x9e4"),
    (12001, 21.9e3, 61.0, 0.20, "mutex", "unix_stream_sendmsg+0x2a1"),
])
exp_t.append("sar-u-8cpu-lock-window-1s.txt perf-lock-small-8cpu.txt|--join --throughput 700MB/s|no_ceiling|700 k contentions on the qdisc lock, but all waits together are 0.6 s in the 30 s × 8 CPUs sar covers (0.25 %), and the CPUs are 65 % idle: no lock and no CPU binds")

# 4. sar -n DEV -u beside iperf3 --json from the same host: 2 Gbit/s on 10 GbE, CPUs idle.
def tiv(rate):
    def f(i, k):
        b = int(j(rate, .01) / 8)
        return {"bytes": b, "bits_per_second": b * 8.0, "retransmits": 0, "snd_cwnd": int(j(1.2e6, .05)), "snd_wnd": 3145728,
                "rtt": int(j(180, .2)), "rttvar": int(j(40, .3)), "pmtu": 1500}
    return f


def tend(host, remote, dur):
    def f(ivs):
        b = sum(iv["sum"]["bytes"] for iv in ivs)
        base = {"start": 0, "end": float(dur), "seconds": float(dur)}
        snd = dict(base, bytes=b, bits_per_second=b * 8 / dur, retransmits=0, sender=True)
        rcv = dict(base, bytes=b - 65536, bits_per_second=(b - 65536) * 8 / dur, sender=True)
        return {"streams": [{"sender": dict(snd, socket=5, max_snd_cwnd=1400000, max_snd_wnd=3145728, max_rtt=320, min_rtt=90, mean_rtt=180),
                             "receiver": dict(rcv, socket=5)}],
                "sum_sent": snd, "sum_received": rcv,
                "cpu_utilization_percent": {"host_total": host, "host_user": round(host * .1, 2), "host_system": round(host * .9, 2),
                                            "remote_total": remote, "remote_user": round(remote * .1, 2), "remote_system": round(remote * .9, 2)},
                "sender_tcp_congestion": "cubic", "receiver_tcp_congestion": "cubic"}
    return f


iperf3(f"{T}/iperf3-tcp-paced-2g-30s.json", "iperf 3.16", "Linux edge-9 6.1.0-26-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.112-1 x86_64",
       "TCP", 131072, 2000000000, 30, tiv(2.0e9), tend(6.2, 9.8, 30))
sar_sections(f"{T}/sar-n-DEV-u-16cpu-1s.txt", "Linux 6.1.0-26-amd64 (edge-9) \t11/10/2026 \t_x86_64_\t(16 CPU)",
             32, (9, 12, 40), [(UCOLS[0], sar_u(3.0, 4.0), UCOLS[1]),
                               (DEV_COLS[0], dev(82000, 166000, 5300, 245000, 20.1), DEV_COLS[1])])
exp_t.append("sar-n-DEV-u-16cpu-1s.txt iperf3-tcp-paced-2g-30s.json|--join --link 10G|no_ceiling|iperf3 paced at 2 Gbit/s got 2 Gbit/s with no retransmits; sar shows eth0 at 20 % of 10 GbE and 16 CPUs 93 % idle: a healthy run, and joining must not invent a ceiling")

# 5. mpstat from 14:00:00 for 60 s and sar -n DEV -u from 14:00:20 for 60 s: 40 s overlap.
#    CPU 2 is ~95 % softirq all along (one RX queue); eth0 receives 610 kpps.
mpstat(f"{T}/mpstat-soft-cpu2-4cpu-1s.txt", "Linux 5.10.0-32-amd64 (dns-cache-3) \t11/21/2026 \t_x86_64_\t(4 CPU)",
       4, 60, (14, 0, 0), one_soft(2, 95.0))
sar_sections(f"{T}/sar-n-DEV-u-4cpu-late-1s.txt", "Linux 5.10.0-32-amd64 (dns-cache-3) \t11/21/2026 \t_x86_64_\t(4 CPU)",
             60, (14, 0, 20), [(UCOLS[0], sar_u(3.5, 26.0), UCOLS[1]),
                               (DEV_COLS[0], dev(610000, 598000, 62000, 81000, 5.1), DEV_COLS[1])])
exp_t.append("mpstat-soft-cpu2-4cpu-1s.txt sar-n-DEV-u-4cpu-late-1s.txt|--join --throughput 62MB/s|hot_cpu|the two logs overlap 40 of their 60 s; in it CPU 2 is ~95 % softirq while the others are ~92 % idle and eth0 receives 610 kpps: one receive queue's CPU is full (RSS/RPS would spread it); the total CPU (~30 %) hides it")

# ---------------- held-out half ----------------
# 1. mpstat (16 CPUs, 12-hour clock) beside three wall-time snapshots: OS CPU ~40 %, work 5-10 %.
mpstat(f"{H}/mpstat-P-ALL-erl-16cpu-ampm-1s.txt", "Linux 4.18.0-553.el8_10.x86_64 (chat-gw-7) \t11/22/2026 \t_x86_64_\t(16 CPU)",
       16, 40, (15, 30, 0), cpus_even(27.0, 12.0), ampm=True)
wall_time(f"{H}/erl-wall-time-16sched-3snap.txt", "(chat@gw7)",
          wall_time_snaps(16, [lambda s: j(0.05, .3), lambda s: j(0.09, .3)], 20_000_000))
exp_h.append("mpstat-P-ALL-erl-16cpu-ampm-1s.txt erl-wall-time-16sched-3snap.txt|--join --throughput 60MB/s|busy_wait|16 CPUs ~40 % busy in mpstat while three scheduler_wall_time snapshots over the same 40 s give 5 % then 9 % of real work: the schedulers spin before sleeping (+sbwt none)")

# 2. sar -u (total only) beside scheduler_wall_time: OS CPU ~94 %, schedulers ~91 %.
sar_sections(f"{H}/sar-u-erl-busy-4cpu-1s.txt", "Linux 6.8.0-49-generic (ingest-2) \t11/23/2026 \t_x86_64_\t(4 CPU)",
             30, (7, 45, 10), [(UCOLS[0], sar_u(74.0, 20.0), UCOLS[1])])
wall_time(f"{H}/erl-wall-time-busy-4sched.txt", "", wall_time_snaps(4, [lambda s: j(0.91, .03)], 30_000_000))
exp_h.append("sar-u-erl-busy-4cpu-1s.txt erl-wall-time-busy-4sched.txt|--join --throughput 140MB/s|cpu_bound|sar -u says ~94 % busy and the schedulers worked ~91 % of the same window: the CPU time is work; the CPU is the ceiling")

# 3. mpstat (4 CPUs, sys heavy) beside /proc/lock_stat over the same 20 s: one lock waited 11 s.
mpstat(f"{H}/mpstat-P-ALL-sys-4cpu-1s.txt", "Linux 6.1.0-26-amd64 (udp-relay-1) \t11/24/2026 \t_x86_64_\t(4 CPU)",
       4, 20, (22, 10, 0), cpus_even(6.0, 58.0, 8.0))
lock_stat(f"{H}/lock-stat-qdisc-20s.txt", [
    ("&qdisc->q.lock", 2811021, 3104410, 0.11, 812.33, 11.02e6, 4901221, 6120331, 0.08, 210.4, 2.91e6),
    ("&rq->__lock", 40211, 51022, 0.09, 41.20, 0.21e6, 910221, 2710331, 0.05, 30.1, 0.61e6),
])
exp_h.append("mpstat-P-ALL-sys-4cpu-1s.txt lock-stat-qdisc-20s.txt|--join --throughput 310MB/s|lock_contention|in the 20 s × 4 CPUs mpstat covers, the qdisc lock was waited on for 11 s (14 % of all CPU time, while sys is ~58 %): the senders serialize on one lock; the next lock is 50× smaller")

# 4. untimed: vmstat 1 (no -t) beside scheduler_wall_time; OS CPU ~33 %, work ~30 %: healthy.
def vm(i):
    return dict(r=R.randint(1, 4), b=0, swpd=0, free=int(j(12.1e6, .001)), buff=410000, cache=int(j(6.2e6, .001)),
                si=0, so=0, bi=0, bo=int(j(50, .5)), **{'in': int(j(9000, .1)), 'cs': int(j(21000, .1))},
                us=R.randint(24, 27), sy=R.randint(6, 8), wa=0, st=0)
vmstat(f"{H}/vmstat-erl-healthy-8cpu-1s.txt", 30, vm)
wall_time(f"{H}/erl-wall-time-healthy-8sched.txt", "", wall_time_snaps(8, [lambda s: j(0.30, .08)], 30_000_000))
exp_h.append("vmstat-erl-healthy-8cpu-1s.txt erl-wall-time-healthy-8sched.txt|--join --throughput 40MB/s|no_ceiling|vmstat shows ~33 % CPU and the schedulers did ~30 % of real work over the same capture (assumed to start together: neither has clock times): CPU is work, far from full; nothing binds")

# 5. sar -n DEV -u from 09:00:00 for 60 s and mpstat from 09:00:30 for 60 s: 30 s overlap.
sar_sections(f"{H}/sar-n-DEV-u-8cpu-early-1s.txt", "Linux 6.6.52-1-lts (lb-east-2) \t11/25/2026 \t_x86_64_\t(8 CPU)",
             60, (9, 0, 0), [(UCOLS[0], sar_u(2.5, 13.0), UCOLS[1]),
                             (DEV_COLS[0], dev(720000, 705000, 81000, 92000, 6.6), DEV_COLS[1])])
mpstat(f"{H}/mpstat-soft-cpu5-8cpu-late-1s.txt", "Linux 6.6.52-1-lts (lb-east-2) \t11/25/2026 \t_x86_64_\t(8 CPU)",
       8, 60, (9, 0, 30), one_soft(5, 96.0))
exp_h.append("sar-n-DEV-u-8cpu-early-1s.txt mpstat-soft-cpu5-8cpu-late-1s.txt|--join --throughput 81MB/s|hot_cpu|30 s of overlap: CPU 5 at ~96 % softirq with the rest ~90 % idle while eth0 receives 720 kpps: one receive queue's CPU is full, hidden in a 15 % total")

with open(f"{T}/EXPECT", "w") as f:
    f.write("# file|flags|causes|why (batch 13, training half; joined logs; written before the --join change)\n")
    f.write("\n".join(exp_t) + "\n")
with open(f"{H}/EXPECT", "w") as f:
    f.write("# file|flags|causes|why (batch 13, held-out half: do not tune against it; written before the --join change)\n")
    f.write("\n".join(exp_h) + "\n")
