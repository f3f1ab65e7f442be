# Batch 10 (training and held-out halves), synthesized: python3 bench/captures/gen/batch10.py bench/captures/batch10 bench/captures/batch10h
# sar -A -f style files with several activities, each with a confounder beside its cause.
import sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from formats import *
R.seed(10)
T = sys.argv[1]; H = sys.argv[2]
os.makedirs(T, exist_ok=True); os.makedirs(H, exist_ok=True)

def dev(ifaces):
    """ifaces: list of (name, rxpps, txpps, rxkB, txkB, speed_mbit or 0)."""
    def f(i):
        rows = []
        for name, rp, tp, rk, tk, sp in ifaces:
            rp_, tp_, rk_, tk_ = j(rp, .03), j(tp, .03), j(rk, .03), j(tk, .03)
            util = 0.0 if not sp else min(100.0, max(rk_, tk_) * 8 * 1000 / (sp * 1e6) * 100) if True else 0
            rows.append([name, rp_, tp_, rk_, tk_, 0.0, 0.0, 0.0, util if sp else 0.0])
        return rows
    return f
def edev(ifaces):
    """ifaces: list of (name, rxdrop, rxfifo)."""
    def f(i):
        rows = []
        for name, drop, fifo in ifaces:
            d = j(drop, .2) if drop else 0.0
            rows.append([name, 0.0, 0.0, 0.0, d, 0.0, 0.0, 0.0, d if fifo else 0.0, 0.0])
        return rows
    return f
def udp(idgm, odgm, err_share):
    return lambda i: [[j(idgm, .03), j(odgm, .03), j(2, .5), j(idgm * err_share, .2) if err_share else 0.0]]
def q(runq, plist, ld, blocked=0):
    return lambda i: [[float(max(0, R.randint(runq - 2, runq + 2))), float(plist + R.randint(-5, 5)), j(ld, .04), j(ld, .02), j(ld * .95, .01), float(blocked)]]
def w(cs):
    return lambda i: [[j(12, .3), j(cs, .05)]]
def tcp(iseg, oseg):
    return lambda i: [[j(2.0, .5), j(150, .2), j(iseg, .04), j(oseg, .04)]]
def etcp(share, oseg):
    return lambda i: [[j(.3, .9), j(2, .5), j(oseg * share, .2), 0.0, j(20, .3)]]

def sar_a(path, host, date, ncpu, n, start, percpu, extra):
    banner = f"Linux 6.1.0-27-amd64 ({host}) \t{date} \t_x86_64_\t({ncpu} CPU)"
    cf = cpu_rows(percpu)
    sar_file(path, banner, n, start, [(CPU_ALL_COLS[0], lambda i: cf(i, ncpu), CPU_ALL_COLS[1])] + extra)

N = 30
# ---------- training ----------
# A: CPU3 full of softirq and system time where the UDP receiver runs; its socket overflows (4 %).
def a(c, i):
    if c == 3: return (j(2, .3), j(27, .05), 0.0, 0.0, j(.5, .3), j(70, .02))
    return (j(4, .3), j(3, .3), j(.1, .9), 0.0, j(.1, .5), j(.8, .5))
sar_a(f"{T}/sar-A-udp-hot-core-sockdrops-4cpu-1s.txt", "syslog-ingest-1", "10/02/2026", 4, N, (13, 0, 0), a, [
    (W_COLS[0], w(21000), W_COLS[1]), (Q_COLS[0], q(2, 240, 1.9), Q_COLS[1]),
    (DEV_COLS[0], dev([("lo", 3, 3, .2, .2, 0), ("eth0", 310000, 900, 280000, 90, 10000)]), DEV_COLS[1]),
    (EDEV_COLS[0], edev([("lo", 0, 0), ("eth0", 0, 0)]), EDEV_COLS[1]),
    (UDP_COLS[0], udp(300000, 40, 0.04), UDP_COLS[1])])

# B: a guest whose vCPUs lose 35-45 % to steal; one vCPU's own work is 55 %.
def b(c, i):
    st = j(40, .12)
    if c == 1: return (j(47, .05), j(8, .1), 0.0, st, 0.0, j(2, .3))
    return (j(28, .1), j(9, .1), 0.0, st, 0.0, j(2, .3))
sar_a(f"{T}/sar-A-guest-steal-4cpu-1s.txt", "web-vm-12", "07/07/2026", 4, N, (9, 15, 0), b, [
    (W_COLS[0], w(38000), W_COLS[1]), (Q_COLS[0], q(7, 410, 6.8), Q_COLS[1]),
    (DEV_COLS[0], dev([("lo", 40, 40, 5, 5, 0), ("ens3", 42000, 61000, 9000, 70000, 10000)]), DEV_COLS[1]),
    (EDEV_COLS[0], edev([("lo", 0, 0), ("ens3", 0, 0)]), EDEV_COLS[1]),
    (TCP_COLS[0], tcp(42000, 61000), TCP_COLS[1]), (ETCP_COLS[0], etcp(0.0003, 61000), ETCP_COLS[1])])

# C: a 10 GbE port's transmit side full (99 %) while the CPUs are 60 % busy with 300 k cs/s.
def c_(c, i):
    return (j(22, .08), j(26, .08), 0.0, 0.0, j(1, .3), j(11, .1))
sar_a(f"{T}/sar-A-10g-tx-full-busy-cpus-8cpu-1s.txt", "media-origin-3", "03/15/2026", 8, N, (20, 0, 0), c_, [
    (W_COLS[0], w(300000), W_COLS[1]), (Q_COLS[0], q(5, 700, 4.9), Q_COLS[1]),
    (DEV_COLS[0], dev([("lo", 10, 10, 1, 1, 0), ("enp65s0f0", 410000, 838000, 27000, 1238000, 10000)]), DEV_COLS[1]),
    (EDEV_COLS[0], edev([("lo", 0, 0), ("enp65s0f0", 0, 0)]), EDEV_COLS[1]),
    (TCP_COLS[0], tcp(410000, 838000), TCP_COLS[1]), (ETCP_COLS[0], etcp(0.0005, 838000), ETCP_COLS[1])])

# D: every CPU full, most of it network stack (soft 45 %, sys 35 %), and a queue of runnable tasks.
def d(c, i):
    return (j(18, .05), j(35, .04), 0.0, 0.0, j(1, .3), j(45, .03))
sar_a(f"{T}/sar-A-all-cpus-stack-4cpu-1s.txt", "fw-nat-2", "05/30/2026", 4, N, (1, 30, 0), d, [
    (W_COLS[0], w(95000), W_COLS[1]), (Q_COLS[0], q(9, 200, 8.7), Q_COLS[1]),
    (DEV_COLS[0], dev([("lo", 0, 0, 0, 0, 0), ("eth0", 1100000, 1090000, 98000, 97000, 10000), ("eth1", 1090000, 1100000, 97000, 98000, 10000)]), DEV_COLS[1]),
    (EDEV_COLS[0], edev([("lo", 0, 0), ("eth0", 0, 0), ("eth1", 0, 0)]), EDEV_COLS[1])])

# E: a healthy busy server: 4 CPUs ~60 % busy, 3 Gbit/s of 10, no drops, 0.05 % retransmitted.
def e(c, i):
    return (j(38, .1), j(14, .1), j(.5, .5), 0.0, j(.5, .3), j(6, .2))
sar_a(f"{T}/sar-A-healthy-api-4cpu-1s.txt", "api-3", "02/11/2026", 4, N, (15, 45, 0), e, [
    (W_COLS[0], w(64000), W_COLS[1]), (Q_COLS[0], q(2, 520, 2.3), Q_COLS[1]),
    (DEV_COLS[0], dev([("lo", 900, 900, 300, 300, 0), ("eth0", 190000, 260000, 41000, 372000, 10000)]), DEV_COLS[1]),
    (EDEV_COLS[0], edev([("lo", 0, 0), ("eth0", 0, 0)]), EDEV_COLS[1]),
    (TCP_COLS[0], tcp(190000, 260000), TCP_COLS[1]), (ETCP_COLS[0], etcp(0.0005, 260000), ETCP_COLS[1])])

# ---------- held out ----------
# A': CPU1 full of hard and soft interrupt work; the NIC's ring overflows (1 %, rxfifo).
def ha(c, i):
    if c == 1: return (j(1, .3), j(3, .2), 0.0, 0.0, j(21, .05), j(74.5, .02))
    return (j(9, .2), j(4, .2), 0.0, 0.0, j(.2, .5), j(1.5, .4))
sar_a(f"{H}/sar-A-ring-drops-hot-irq-core-8cpu-1s.txt", "cdn-edge-9", "08/19/2026", 8, N, (18, 5, 0), ha, [
    (W_COLS[0], w(30000), W_COLS[1]), (Q_COLS[0], q(3, 600, 2.8), Q_COLS[1]),
    (DEV_COLS[0], dev([("lo", 5, 5, 1, 1, 0), ("eno1", 880000, 610000, 95000, 640000, 25000)]), DEV_COLS[1]),
    (EDEV_COLS[0], edev([("lo", 0, 0), ("eno1", 8800, True)]), EDEV_COLS[1])])

# B': two vCPUs, both half stolen, no idle left.
def hb(c, i):
    return (j(36, .06), j(10, .1), 0.0, j(51, .06), 0.0, j(2, .3))
sar_a(f"{H}/sar-A-steal-2vcpu-1s.txt", "ci-runner-4", "04/04/2026", 2, N, (11, 0, 30), hb, [
    (W_COLS[0], w(17000), W_COLS[1]), (Q_COLS[0], q(5, 190, 4.6), Q_COLS[1]),
    (DEV_COLS[0], dev([("lo", 10, 10, 2, 2, 0), ("eth0", 9000, 12000, 3000, 14000, 1000)]), DEV_COLS[1]),
    (EDEV_COLS[0], edev([("lo", 0, 0), ("eth0", 0, 0)]), EDEV_COLS[1])])

# C': a 1 GbE port's receive side full (98-99 %), one CPU 40 % busy.
def hc(c, i):
    if c == 0: return (j(14, .1), j(12, .1), 0.0, 0.0, j(2, .3), j(12, .1))
    return (j(3, .3), j(2, .3), j(.3, .5), 0.0, 0.0, j(.3, .5))
sar_a(f"{H}/sar-A-1g-rx-full-4cpu-1s.txt", "backup-target-1", "12/01/2025", 4, N, (2, 0, 0), hc, [
    (W_COLS[0], w(24000), W_COLS[1]), (Q_COLS[0], q(1, 180, 1.2), Q_COLS[1]),
    (DEV_COLS[0], dev([("lo", 0, 0, 0, 0, 0), ("eno1", 81300, 40100, 122600, 2700, 1000)]), DEV_COLS[1]),
    (EDEV_COLS[0], edev([("lo", 0, 0), ("eno1", 0, 0)]), EDEV_COLS[1]),
    (TCP_COLS[0], tcp(81300, 40100), TCP_COLS[1]), (ETCP_COLS[0], etcp(0.00002, 40100), ETCP_COLS[1])])

# D': 8 CPUs full of user time, 25 runnable, moderate network.
def hd(c, i):
    return (j(71, .03), j(22, .05), 0.0, 0.0, j(.5, .3), j(5.5, .1))
sar_a(f"{H}/sar-A-app-cpu-full-8cpu-1s.txt", "search-shard-6", "09/09/2026", 8, N, (14, 30, 0), hd, [
    (W_COLS[0], w(120000), W_COLS[1]), (Q_COLS[0], q(25, 1200, 24.6), Q_COLS[1]),
    (DEV_COLS[0], dev([("lo", 2000, 2000, 900, 900, 0), ("eth0", 150000, 160000, 30000, 180000, 25000)]), DEV_COLS[1]),
    (EDEV_COLS[0], edev([("lo", 0, 0), ("eth0", 0, 0)]), EDEV_COLS[1]),
    (TCP_COLS[0], tcp(150000, 160000), TCP_COLS[1]), (ETCP_COLS[0], etcp(0.0002, 160000), ETCP_COLS[1])])

# E': healthy but for one second in which CPU2 was full (a cron job), 70 % idle otherwise.
def he(c, i):
    if c == 2 and i == 17: return (j(88, .02), j(11, .05), 0.0, 0.0, 0.0, j(.5, .3))
    return (j(18, .1), j(8, .1), j(.3, .5), 0.0, j(.3, .3), j(3, .2))
sar_a(f"{H}/sar-A-healthy-one-spike-4cpu-1s.txt", "mq-broker-2", "06/21/2026", 4, N, (10, 10, 0), he, [
    (W_COLS[0], w(40000), W_COLS[1]), (Q_COLS[0], q(1, 330, 1.1), Q_COLS[1]),
    (DEV_COLS[0], dev([("lo", 300, 300, 80, 80, 0), ("eth0", 60000, 62000, 30000, 31000, 10000)]), DEV_COLS[1]),
    (EDEV_COLS[0], edev([("lo", 0, 0), ("eth0", 0, 0)]), EDEV_COLS[1]),
    (TCP_COLS[0], tcp(60000, 62000), TCP_COLS[1]), (ETCP_COLS[0], etcp(0.0001, 62000), ETCP_COLS[1])])
