# Batch 11 (training and held-out halves), synthesized:
#   python3 bench/captures/gen/batch11.py bench/captures/batch11 bench/captures/batch11h
# The classes the earlier batches left thin: event-rate ceilings (FreeBSD and Linux vmstat),
# busy-wait (an Erlang VM's own utilization table beside OS CPU), lock profiles (perf lock,
# lock_stat, FreeBSD lock profiling), Erlang scheduler utilization; each half has a confounder.
import sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from formats import *
R.seed(11)
T = sys.argv[1]; H = sys.argv[2]
os.makedirs(T, exist_ok=True); os.makedirs(H, exist_ok=True)


# The writers (FreeBSD vmstat, the Erlang VM table, perf lock, lock_stat, lockprof,
# scheduler:utilization) are in formats.py.

exp_t, exp_h = [], []

# ---------------- training half ----------------
# 1. FreeBSD 12 router on em(4) without moderation: the event rate is the ceiling.
def fb_router(i):
    idle = i < 4
    return dict(r=0 if idle else R.randint(1, 3), b=0, avm="512M", fre="1.4G",
                flt=j(20, .5), fr=j(30, .5), disks=[0 if idle else R.randint(0, 3)],
                **{'in': j(450, .2) if idle else j(15200, .06), 'sy_calls': j(900, .2) if idle else j(3100, .1),
                   'cs': j(700, .2) if idle else j(30500, .11)},
                us=0 if idle else j(2, .5), sy=j(1, .5) if idle else j(37, .1))
fbsd_vmstat(f"{T}/fbsd12-em-router-cs-2cpu-1s.txt", ["ada0"], 34, fb_router, cmd="$ vmstat 1 34")
exp_t.append("fbsd12-em-router-cs-2cpu-1s.txt|--throughput 20MB/s --link 1G|interrupt_bound|after 4 idle seconds, 15 k interrupts/s and 27-34 k context switches/s (unsteady, cv ~6 %) on 2 CPUs carry 20 MB/s of 1.5 kB frames, about 0.9 frames per interrupt, while the CPUs are ~60 % idle: each frame costs an interrupt and two switches, and that rate, not CPU time, is what stops it (SEEDS §1's mechanism on other hardware)")

# 2. Erlang VM table: OS CPU far above the schedulers' real work.
def erl_bw(i):
    return dict(red=j(690000, .03), cs=j(335000, .03), gc=j(3500, .05), gcb=j(28.6e6, .03),
                **{'in': j(460e6 + i * 1.2e6, .001), 'out': R.randint(0, 600)}, rq=R.randint(0, 3),
                cpu=j(.58, .05), sched=j(.085, .08), mem=93e6 + i * 4e6, ports=708, procs=852)
erlang_table(f"{T}/erlang-vm-table-busywait-5s.txt", 14, (2016, 3, 9, 14, 2, 10), erl_bw)
exp_t.append("erlang-vm-table-busywait-5s.txt|--throughput 80MB/s|busy_wait|the VM's own table every 5 s: OS cpu_util 0.55-0.61 while scheduler_util (time doing work) is 0.08-0.09: about 7x more CPU burnt than work done, the schedulers spinning before they sleep (+sbwt)")

# 3. perf lock contention: one spinlock serializes the senders.
perf_lock(f"{T}/perf-lock-contention-udp-10s.txt", "# perf lock contention -a -- sleep 10", [
    (4210331, 9.12e6, 1830.0, 0.21, "spinlock", "__dev_queue_xmit+0x5a1"),
    (91022, 0.312e6, 410.0, 0.19, "spinlock", "udp_lib_get_port+0x111"),
    (40021, 0.084e6, 202.0, 0.33, "rwlock:W", "ip_route_output_key_hash+0x3c"),
    (2210, 0.0061e6, 15.1, 0.91, "mutex", "pipe_read+0x51"),
    (901, 0.0022e6, 12.0, 0.80, "spinlock", "try_to_wake_up+0x8a"),
])
exp_t.append("perf-lock-contention-udp-10s.txt|--window 10s --cpus 4 --throughput 310MB/s|lock_contention|in 10 s on 4 CPUs the qdisc's spinlock taken in __dev_queue_xmit was waited on for 9.1 s (23 % of all CPU time, about one CPU spinning on it at every moment): the senders serialize on one lock; the next lock is 30x smaller")

# 4. scheduler:utilization: one scheduler full, the rest idle.
fr4 = [[j(.99, .005) if s == 2 else j(.11, .3) for s in range(8)] for _ in range(4)]
for f in fr4:
    f[2] = min(f[2], 1.0)
sched_util(f"{T}/erlang-sched-util-one-full-8.txt", "(gw@edge1)", fr4, fr4[0] and 8, 8)
exp_t.append("erlang-sched-util-one-full-8.txt|--throughput 45MB/s|hot_cpu|four scheduler:utilization(1) samples: normal scheduler 3 at 98-100 % every time while the other seven are 8-15 %: one process (or port) pinned to one scheduler does the work serially")

# 5. lock_stat with a lot of contention events and little waiting.
lock_stat(f"{T}/lock-stat-healthy-many-contentions-10s.txt", [
    ("&sch->q.lock", 1201331, 2310442, 0.09, 41.2, 91022.5, 5231100, 51022331, 0.05, 88.0, 6120331.0),
    ("&(&sk->sk_lock.slock)->rlock", 402213, 801221, 0.10, 22.8, 31022.1, 1022331, 22013311, 0.05, 61.0, 2101331.0),
    ("&zone->lock", 2133, 4022, 0.12, 12.4, 1022.9, 90211, 4022133, 0.06, 14.0, 310221.0),
    ("&rq->__lock", 80221, 160331, 0.08, 9.2, 8022.3, 402211, 12022331, 0.04, 11.0, 1022331.0),
])
exp_t.append("lock-stat-healthy-many-contentions-10s.txt|--window 10s --cpus 16 --throughput 1200MB/s|no_ceiling|2.3 M contentions on the qdisc lock look alarming, but all waits together are 0.13 s of 160 CPU-seconds (0.08 %): contention counted, not time lost; nothing here binds")

# ---------------- held-out half ----------------
# 1. Linux vmstat: small frames, one interrupt each, CPUs mostly idle.
def lx_intr(i):
    idle = i < 3
    return dict(r=R.randint(0, 1) if idle else R.randint(1, 4), b=0, swpd=0, free=j(6.1e6, .001),
                buff=212000, cache=j(4.4e6, .001), si=0, so=0, bi=0, bo=j(20, .8),
                **{'in': j(900, .2) if idle else j(97000, .05), 'cs': j(1500, .2) if idle else j(196000, .09)},
                us=1 if idle else j(4, .3), sy=0 if idle else j(29, .08), wa=0, st=0)
vmstat(f"{H}/vmstat-w-voip-gw-small-frames-4cpu-1s.txt", 30, lx_intr, wide=True)
exp_h.append("vmstat-w-voip-gw-small-frames-4cpu-1s.txt|--throughput 12MB/s --link 1G|interrupt_bound|a media gateway forwarding ~200-byte RTP frames: 97 k interrupts/s and ~200 k context switches/s (unsteady) on 4 CPUs for 12 MB/s, about one frame per interrupt, with the CPUs ~66 % idle: the per-frame interrupt and wakeup path paces it, not CPU time")

# 2. Erlang VM table, healthy: OS CPU and real work agree.
def erl_ok(i):
    return dict(red=j(1.9e6, .03), cs=j(820000, .03), gc=j(9100, .05), gcb=j(71e6, .03),
                **{'in': j(900e6 + i * 3e6, .001), 'out': j(880e6 + i * 3e6, .001)}, rq=R.randint(0, 2),
                cpu=j(.31, .05), sched=j(.26, .05), mem=311e6 + i * 1e6, ports=2210, procs=14033)
erlang_table(f"{H}/erlang-vm-table-healthy-5s.txt", 12, (2019, 11, 2, 9, 40, 0), erl_ok)
exp_h.append("erlang-vm-table-healthy-5s.txt|--throughput 150MB/s|no_ceiling|OS cpu_util 0.29-0.33 against scheduler_util 0.25-0.27: the CPU that is busy is doing work (no busy-wait inflation worth the name), and both leave ~70 % free: nothing binds")

# 3. FreeBSD lock profiling: the bridge's one mutex.
lockprof(f"{H}/fbsd14-lockprof-if-bridge-30s.txt", [
    (310, 9022, 61022331, 52103311, 41022113, 9022113, "net/if_bridge.c:2284 (sleep mutex:if_bridge)"),
    (88, 1201, 8022133, 3102211, 41022100, 402211, "net/if_bridge.c:1711 (sleep mutex:if_bridge)"),
    (41, 512, 4022311, 401221, 20511000, 90221, "dev/mlx4/mlx4_en/mlx4_en_tx.c:951 (sleep mutex:mlx4_en_tx)"),
    (19, 210, 1022113, 120331, 20511000, 30221, "kern/kern_timeout.c:535 (spin mutex:callout)"),
    (11, 44, 80213, 9022, 322011, 2210, "kern/sched_ule.c:2131 (spin mutex:sched lock 3)"),
])
exp_h.append("fbsd14-lockprof-if-bridge-30s.txt|--window 30s --cpus 8 --throughput 450MB/s|lock_contention|one if_bridge mutex accounts for 52 s of waiting in a 30 s profile on 8 CPUs (22 % of all CPU time, ~1.7 CPUs waiting at every moment) and every forwarded frame takes it: SEEDS §2's BRIDGE_LOCK")

# 4. Erlang VM table with an extra column and 16 schedulers: busy-wait again.
def erl_bw2(i):
    return dict(red=j(420000, .03), cs=j(160000, .03), gc=j(2100, .05), gcb=j(14e6, .03),
                **{'in': j(210e6 + i * .6e6, .001), 'out': R.randint(0, 90)}, rq=R.randint(0, 1),
                cpu=j(.71, .04), sched=j(.12, .06), mem=64e6 + i * 2e6, ports=96, procs=410,
                io_in=j(2.1e6, .05))
erlang_table(f"{H}/erlang-vm-table-busywait-16s-5s.txt", 10, (2021, 6, 30, 22, 15, 5), erl_bw2, extra_cols=("io_in",))
exp_h.append("erlang-vm-table-busywait-16s-5s.txt|--throughput 40MB/s|busy_wait|OS cpu_util ~0.71 against scheduler_util ~0.12: six times more CPU than work, schedulers spinning while waiting for input (+sbwt / +sbwtdcpu); an extra io_in column the table did not have before")

# 5. FreeBSD vmstat: a busy box whose switch rate is high too.
def fb_busy(i):
    return dict(r=R.randint(5, 11), b=0, avm="3.2G", fre="9.8G", flt=j(400, .3), fr=j(600, .3),
                disks=[R.randint(0, 5), R.randint(0, 2)],
                **{'in': j(21000, .05), 'sy_calls': j(88000, .05), 'cs': j(61000, .08)},
                us=j(61, .04), sy=j(36, .04))
fbsd_vmstat(f"{H}/fbsd13-busy-cs-high-4cpu-1s.txt", ["nda0", "nda1"], 30, fb_busy)
exp_h.append("fbsd13-busy-cs-high-4cpu-1s.txt|--throughput 60MB/s --link 10G|cpu_bound|all 4 CPUs 96-99 % busy (61 % user, 36 % system) with 5-11 runnable; 61 k switches/s and 21 k interrupts/s are high, but with no idle left the CPU is the ceiling and the event rates are its symptoms")

open(f"{T}/EXPECT", "w").write("# file|flags|causes|why (batch 11, training half; written before any analyzer change)\n" + "\n".join(exp_t) + "\n")
open(f"{H}/EXPECT", "w").write("# file|flags|causes|why (batch 11, held-out half; do not tune on it)\n" + "\n".join(exp_h) + "\n")
