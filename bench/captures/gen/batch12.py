# Batch 12 (training and held-out halves), synthesized:
#   python3 bench/captures/gen/batch12.py bench/captures/batch12 bench/captures/batch12h
# Near misses between the rules batch 11 exercised: an event rate of one interrupt per frame
# on a full link (the link is the cause, the rate its symptom), switch rates that are high but
# amortized over many frames, an Erlang VM whose CPU is real work (cpu_bound, not busy-wait)
# against one whose CPU is near full only because it spins, lock profiles whose biggest wait
# is small against the CPU time.
import sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from formats import *

R.seed(12)
T = sys.argv[1]; H = sys.argv[2]
os.makedirs(T, exist_ok=True); os.makedirs(H, exist_ok=True)
exp_t, exp_h = [], []


def lx(i, idle_rows, load):
    if i < idle_rows:
        return dict(r=R.randint(0, 1), b=0, swpd=0, free=j(20.1e6, .001), buff=312000, cache=j(8.4e6, .001),
                    si=0, so=0, bi=0, bo=j(30, .8), **{'in': j(1200, .2), 'cs': j(2100, .2)},
                    us=1, sy=1, wa=0, st=0)
    d = dict(r=R.randint(1, 4), b=0, swpd=0, free=j(20.0e6, .001), buff=312000, cache=j(8.4e6, .001),
             si=0, so=0, bi=0, bo=j(40, .8), wa=0, st=0)
    d.update({k: (j(v[0], v[1]) if isinstance(v, tuple) else v) for k, v in load.items()})
    return d


def erl(cpu, sched, rq, scale):
    def f(i):
        return dict(red=j(690000 * scale, .03), cs=j(335000 * scale, .03), gc=j(3500 * scale, .05),
                    gcb=j(28.6e6 * scale, .03), **{'in': j(460e6 + i * 1.2e6, .001), 'out': R.randint(0, 600)},
                    rq=R.randint(*rq), cpu=min(1.0, j(cpu, .02)), sched=min(1.0, j(sched, .03)),
                    mem=93e6 + i * 4e6, ports=708, procs=852)
    return f


# ---------------- training half ----------------
# 1. FreeBSD: 1 GbE full, one interrupt per frame (no moderation), CPUs with headroom.
def fb_link(i):
    idle = i < 3
    return dict(r=0 if idle else R.randint(1, 3), b=0, avm="1.1G", fre="6.2G", flt=j(30, .5), fr=j(40, .5),
                disks=[R.randint(0, 2)],
                **{'in': j(600, .2) if idle else j(81000, .02), 'sy_calls': j(900, .2) if idle else j(5200, .1),
                   'cs': j(900, .2) if idle else j(152000, .05)},
                us=0 if idle else j(3, .4), sy=j(1, .5) if idle else j(41, .06))
fbsd_vmstat(f"{T}/fbsd13-em-1g-full-4cpu-1s.txt", ["ada0"], 30, fb_link)
exp_t.append("fbsd13-em-1g-full-4cpu-1s.txt|--throughput 118MB/s --link 1G|link_limit|118 MB/s of 1.5 kB frames is 81 kpps, 99 % of 1 GbE with framing: the link is full. The 81 k interrupts/s (one per frame) and 152 k switches/s follow the frame rate, and 55 % idle CPUs could take more: the rates are the link's symptoms, not its cause")

# 2. Erlang VM table: the CPU is real work.
erlang_table(f"{T}/erlang-vm-table-cpu-full-5s.txt", 14, (2017, 5, 12, 8, 0, 0), erl(.97, .93, (12, 40), 3.1))
exp_t.append("erlang-vm-table-cpu-full-5s.txt|--throughput 210MB/s|cpu_bound|cpu_util 0.95-0.99 and scheduler_util 0.90-0.96: the schedulers do work for nearly all the CPU they use, with 12-40 processes queued: the CPU is the ceiling, not busy-wait")

# 3. perf lock: the biggest wait is small against the CPU time.
perf_lock(f"{T}/perf-lock-contention-small-8cpu-10s.txt", "# perf lock contention -a -- sleep 10", [
    (612033, 402.1e3, 310.0, 0.15, "spinlock", "__dev_queue_xmit+0x5a1"),
    (90221, 88.0e3, 120.0, 0.12, "spinlock", "tcp_v4_rcv+0x9e4"),
    (21022, 30.1e3, 88.0, 0.21, "mutex", "unix_stream_sendmsg+0x2a1"),
    (1022, 4.4e3, 22.0, 0.44, "rwsem:R", "do_user_addr_fault+0x1d4"),
])
exp_t.append("perf-lock-contention-small-8cpu-10s.txt|--window 10s --cpus 8 --throughput 900MB/s|no_ceiling|612 k contentions on the qdisc lock, but 0.40 s of waiting in 80 CPU-seconds (0.5 %): no lock holds the work back")

# 4. Linux vmstat: high rates, many frames each.
vmstat(f"{T}/vmstat-w-nginx-8cpu-1s.txt", 32, lambda i: lx(i, 2, {'in': (61000, .04), 'cs': (91000, .06), 'us': (14, .1), 'sy': (15, .1)}), wide=True)
exp_t.append("vmstat-w-nginx-8cpu-1s.txt|--throughput 800MB/s --link 10G|no_ceiling|61 k interrupts/s and 91 k switches/s on 8 CPUs look high, but each interrupt moves ~9 frames of 800 MB/s (moderation and NAPI at work), the CPUs are ~70 % idle and 10 GbE is 64 % used: nothing binds")

# 5. Erlang VM table: CPU near full, most of it spinning.
erlang_table(f"{T}/erlang-vm-table-spin-near-full-5s.txt", 12, (2018, 2, 1, 23, 0, 0), erl(.93, .38, (0, 3), 1.4))
exp_t.append("erlang-vm-table-spin-near-full-5s.txt|--throughput 120MB/s|busy_wait|cpu_util ~0.93 looks like a full CPU, but scheduler_util is ~0.38: more than half the CPU is schedulers spinning before they sleep, and the run queue is near empty; +sbwt none would give it back")

# ---------------- held-out half ----------------
# 1. Linux vmstat: 1 GbE full of 512-byte frames, one interrupt each.
vmstat(f"{H}/vmstat-w-1g-full-512b-4cpu-1s.txt", 30, lambda i: lx(i, 3, {'in': (229000, .02), 'cs': (41000, .08), 'us': (4, .2), 'sy': (50, .05)}), wide=True)
exp_h.append("vmstat-w-1g-full-512b-4cpu-1s.txt|--throughput 112MB/s --link 1G|link_limit|112 MB/s of 512-byte frames is ~220 kpps, ~96 % of 1 GbE with framing: the link is full. 229 k interrupts/s (one per frame) follow the frames, and the CPUs are 45 % idle")

# 2. Erlang VM table: CPU full of work, long run queue.
erlang_table(f"{H}/erlang-vm-table-cpu-full-runq-5s.txt", 12, (2020, 8, 14, 13, 30, 0), erl(.99, .97, (40, 80), 4.0))
exp_h.append("erlang-vm-table-cpu-full-runq-5s.txt|--throughput 260MB/s|cpu_bound|cpu_util 0.97-1.0 with scheduler_util 0.94-1.0 and 40-80 processes queued: the schedulers are doing work all the time and work waits for them")

# 3. FreeBSD lock profiling: contention spread thin.
lockprof(f"{H}/fbsd13-lockprof-small-waits-30s.txt", [
    (120, 901, 4022331, 1203311, 8022113, 90221, "netinet/tcp_output.c:1522 (sleep mutex:inp)"),
    (88, 612, 3022133, 802211, 7022100, 60211, "dev/ixl/ixl_txrx.c:401 (sleep mutex:ixl0:TX(2))"),
    (41, 402, 2022311, 401221, 5511000, 40221, "dev/ixl/ixl_txrx.c:401 (sleep mutex:ixl0:TX(5))"),
    (19, 210, 1022113, 120331, 2511000, 10221, "kern/kern_timeout.c:535 (spin mutex:callout)"),
])
exp_h.append("fbsd13-lockprof-small-waits-30s.txt|--window 30s --cpus 16 --throughput 700MB/s|no_ceiling|the largest wait is 1.2 s of 480 CPU-seconds (0.25 %) on a TCP pcb lock, the rest smaller: locks are taken often but cost little time")

# 4. FreeBSD vmstat: switch rate over the line, amortized over many frames.
def fb_amort(i):
    return dict(r=R.randint(0, 4), b=0, avm="4.1G", fre="22G", flt=j(200, .3), fr=j(300, .3),
                disks=[R.randint(0, 9), R.randint(0, 3)],
                **{'in': j(40000, .04), 'sy_calls': j(120000, .05), 'cs': j(86000, .07)},
                us=j(9, .1), sy=j(16, .08))
fbsd_vmstat(f"{H}/fbsd14-ix-amortized-8cpu-1s.txt", ["nda0", "nda1"], 30, fb_amort)
exp_h.append("fbsd14-ix-amortized-8cpu-1s.txt|--throughput 900MB/s --link 10G|no_ceiling|40 k interrupts/s and 86 k switches/s on 8 CPUs, but ~15 frames per interrupt, the CPUs 75 % idle and the 10 GbE link 72 % used: a healthy box with moderation on")

# 5. Erlang VM table: spinning inflates CPU.
erlang_table(f"{H}/erlang-vm-table-spin-5s.txt", 12, (2022, 1, 3, 4, 5, 0), erl(.88, .31, (0, 2), 1.1))
exp_h.append("erlang-vm-table-spin-5s.txt|--throughput 90MB/s|busy_wait|cpu_util ~0.88 against scheduler_util ~0.31: nearly two thirds of the CPU is spinning, not work")

open(f"{T}/EXPECT", "w").write("# file|flags|causes|why (batch 12, training half; written before any analyzer change)\n" + "\n".join(exp_t) + "\n")
open(f"{H}/EXPECT", "w").write("# file|flags|causes|why (batch 12, held-out half; do not tune on it)\n" + "\n".join(exp_h) + "\n")
