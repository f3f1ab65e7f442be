# Batch 9 (training and held-out halves), synthesized: python3 bench/captures/gen/batch9.py bench/captures/batch9 bench/captures/batch9h
import sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from formats import *
T = sys.argv[1]; H = sys.argv[2]
os.makedirs(T, exist_ok=True); os.makedirs(H, exist_ok=True)

# T1: CPU0 full of interrupt work (hardirq + softirq), three CPUs with room.
def t1(c):
    if c == 0:
        irq = j(58, .05); soft = j(39.5, .03)
        return [j(0.5, .5), 0, j(1.2, .3), 0, irq, min(soft, 99 - irq - 1.7), 0, 0, 0]
    return [j(6, .3), 0, j(5, .3), 0, j(.3, .5), j(1, .5), 0, 0, 0]
mpstat(f"{T}/mpstat-hardirq-cpu0-4cpu-1s.txt", "Linux 5.15.0-122-generic (nat-box-3) \t10/14/2026 \t_x86_64_\t(4 CPU)", 4, 30, (14, 20, 5), t1)

# T2: iperf3 UDP, sender's one data thread full, far short of its target, nothing lost.
def udp_iv(rate, pkt):
    def f(i, k):
        b = j(rate, .02) / 8; p = int(b / pkt)
        return {"bytes": p * pkt, "bits_per_second": p * pkt * 8.0, "packets": p}
    return f
def udp_end(pkt, lost_frac, host, remote, dur):
    def f(ivs):
        p = sum(iv["sum"]["packets"] for iv in ivs); b = p * pkt
        lost = int(p * lost_frac)
        base = {"start": 0, "end": float(dur), "seconds": float(dur)}
        s = dict(base, bytes=b, bits_per_second=b * 8 / dur, jitter_ms=0.0031, lost_packets=lost, packets=p,
                 lost_percent=100.0 * lost / p, sender=True)
        return {"streams": [{"udp": dict(s, socket=5, out_of_order=0)}], "sum": s,
                "sum_sent": dict(s, jitter_ms=0, lost_packets=0, lost_percent=0),
                "sum_received": dict(s, bytes=(p - lost) * pkt, bits_per_second=(p - lost) * pkt * 8 / dur, sender=False),
                "cpu_utilization_percent": {"host_total": host, "host_user": round(host * .09, 2), "host_system": round(host * .91, 2),
                                            "remote_total": remote, "remote_user": round(remote * .12, 2), "remote_system": round(remote * .88, 2)}}
    return f
iperf3(f"{T}/iperf3-udp-sender-cpu-10s.json", "iperf 3.16", "Linux loadgen-b 6.1.0-26-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.112-1 x86_64",
       "UDP", 1400, 20000000000, 10, udp_iv(4.1e9, 1400), udp_end(1400, 0.00002, 99.42, 41.7, 10))

# T3: swapping: page-ins and -outs every second, a third of the CPU time waiting.
def t3(i):
    return dict(r=R.randint(1, 3), b=R.randint(6, 12), swpd=int(j(3.9e6, .01)), free=int(j(82000, .1)), buff=1200, cache=int(j(210000, .05)),
                si=int(j(6000, .5)), so=int(j(11000, .35)), bi=int(j(7000, .4)), bo=int(j(12500, .35)), **{"in": int(j(9000, .1))},
                cs=int(j(14000, .1)), us=R.randint(8, 12), sy=R.randint(7, 10), wa=R.randint(35, 45))
vmstat(f"{T}/vmstat-swap-8cpu-1s.txt", 30, t3)

# T4: sar -u -n TCP,ETCP: 3 % of segments retransmitted every second, CPUs mostly idle.
W = [9, 10, 10, 10, 10]
def cpu_all(usr, sys_, idle_):
    def f(i):
        u = j(usr, .1); s = j(sys_, .1); io = j(.2, .5)
        return [["all", u, 0.0, s, io, 0.0, max(0.0, 100 - u - s - io)]]
    return f
ucols = (["CPU", "%user", "%nice", "%system", "%iowait", "%steal", "%idle"], [9, 10, 10, 10, 10, 10, 10])
def tcp(iseg, oseg):
    return lambda i: [[j(2.0, .5), j(180, .2), j(iseg, .05), j(oseg, .05)]]
def etcp(retr_share, oseg):
    return lambda i: [[j(0.5, .9), j(3, .5), j(oseg * retr_share, .2), 0.0, j(40, .3)]]
sar_sections(f"{T}/sar-u-n-TCP-ETCP-retrans-1s.txt", "Linux 6.1.0-25-amd64 (api-edge-7) \t09/30/2026 \t_x86_64_\t(8 CPU)", 30, (16, 0, 0), [
    (ucols[0], cpu_all(14, 11, 0), ucols[1]),
    (["active/s", "passive/s", "iseg/s", "oseg/s"], tcp(61000, 100000), [10, 10, 10, 10]),
    (["atmptf/s", "estres/s", "retrans/s", "isegerr/s", "orsts/s"], etcp(0.03, 100000), [10, 10, 10, 10, 10]),
])

# T5: sar -u -q: every CPU busy, 30-40 runnable tasks on 8 CPUs.
def q(runq, plist, ld):
    return lambda i: [[float(R.randint(runq - 5, runq + 5)), float(plist + R.randint(-10, 10)), j(ld, .03), j(ld * .98, .01), j(ld * .9, .01), float(R.randint(0, 1))]]
qcols = (["runq-sz", "plist-sz", "ldavg-1", "ldavg-5", "ldavg-15", "blocked"], [9, 10, 10, 10, 10, 10])
def cpu_full(usr, sys_):
    def f(i):
        u = j(usr, .02); s = j(sys_, .05); idl = j(1.0, .6)
        return [["all", u, 0.0, max(0.0, 100 - u - idl - .1), 0.1, 0.0, idl]]
    return f
sar_sections(f"{T}/sar-u-q-runq-8cpu-1s.txt", "Linux 5.14.0-427.el9.x86_64 (render-04) \t08/12/2026 \t_x86_64_\t(8 CPU)", 30, (3, 10, 0), [
    (ucols[0], cpu_full(78, 20), ucols[1]),
    (qcols[0], q(35, 910, 34.5), qcols[1]),
])

# ---------------- held out ----------------
def h1(c):
    if c == 5:
        return [j(1.0, .5), 0, j(4.0, .2), 0, j(1.0, .3), j(93.0, .02), 0, 0, 0]
    return [j(5, .3), 0, j(3.5, .3), 0, 0.0, j(1.2, .5), 0, 0, 0]
mpstat(f"{H}/mpstat-soft-cpu5-8cpu-1s.txt", "Linux 4.18.0-553.el8_10.x86_64 (lb-west-1) \t06/03/2026 \t_x86_64_\t(8 CPU)", 8, 25, (21, 41, 10), h1, ampm=True)

def tcp_iv(rate, rtt_us, cwnd):
    def f(i, k):
        b = int(j(rate, .015) / 8)
        return {"bytes": b, "bits_per_second": b * 8.0, "retransmits": 0, "snd_cwnd": int(j(cwnd, .05)), "snd_wnd": 3145728,
                "rtt": int(j(rtt_us, .2)), "rttvar": int(j(rtt_us * .3, .3)), "pmtu": 9000}
    return f
def tcp_end(host, remote, dur):
    def f(ivs):
        b = sum(iv["sum"]["bytes"] for iv in ivs)
        base = {"start": 0, "end": float(dur), "seconds": float(dur)}
        snd = dict(base, bytes=b, bits_per_second=b * 8 / dur, retransmits=0, sender=True)
        rcv = dict(base, bytes=b - 131072, bits_per_second=(b - 131072) * 8 / dur, sender=True)
        return {"streams": [{"sender": dict(snd, socket=5, max_snd_cwnd=2883584, max_snd_wnd=3145728, max_rtt=97, min_rtt=31, mean_rtt=58),
                             "receiver": dict(rcv, socket=5)}],
                "sum_sent": snd, "sum_received": rcv,
                "cpu_utilization_percent": {"host_total": host, "host_user": round(host * .04, 2), "host_system": round(host * .96, 2),
                                            "remote_total": remote, "remote_user": round(remote * .1, 2), "remote_system": round(remote * .9, 2)},
                "sender_tcp_congestion": "cubic", "receiver_tcp_congestion": "cubic"}
    return f
iperf3(f"{H}/iperf3-tcp-sender-cpu-20s.json", "iperf 3.16", "Linux dtn-01 6.8.0-48-generic #48-Ubuntu SMP PREEMPT_DYNAMIC x86_64",
       "TCP", 131072, 0, 20, tcp_iv(37.2e9, 58, 2600000), tcp_end(99.81, 63.4, 20))

def h3(i):
    return dict(r=R.randint(2, 5), b=R.randint(20, 30), swpd=0, free=int(j(4.1e6, .02)), buff=int(j(310000, .01)), cache=int(j(9.8e7, .001)),
                si=0, so=0, bi=int(j(310000, .15)), bo=int(j(45000, .4)), **{"in": int(j(42000, .1))},
                cs=int(j(61000, .1)), us=R.randint(4, 7), sy=R.randint(3, 5), wa=R.randint(55, 65))
vmstat(f"{H}/vmstat-w-iowait-db-16cpu-1s.txt", 40, h3, wide=True)

sar_sections(f"{H}/sar-u-n-TCP-ETCP-healthy-1s.txt", "Linux 6.6.44-1-lts (cache-front-2) \t11/02/2026 \t_x86_64_\t(16 CPU)", 30, (9, 30, 0), [
    (ucols[0], cpu_all(9, 8, 0), ucols[1]),
    (["active/s", "passive/s", "iseg/s", "oseg/s"], tcp(150000, 210000), [10, 10, 10, 10]),
    (["atmptf/s", "estres/s", "retrans/s", "isegerr/s", "orsts/s"], etcp(0.0001, 210000), [10, 10, 10, 10, 10]),
])

sar_sections(f"{H}/sar-u-q-4cpu-batch-1s.txt", "Linux 6.1.0-21-cloud-amd64 (etl-2) \t05/19/2026 \t_x86_64_\t(4 CPU)", 30, (23, 59, 40), [
    (ucols[0], cpu_full(93, 6), ucols[1]),
    (qcols[0], q(12, 310, 12.4), qcols[1]),
])
