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


def fbsd_vmstat(path, disks, n, row_fn, cmd=None):
    """FreeBSD `vmstat 1` without -P: one cpu block."""
    out = [] if cmd is None else [cmd]
    out.append(" procs    memory    page                      disks     faults       cpu")
    out.append(" r  b  w  avm  fre  flt  re  pi  po   fr   sr " + " ".join(f"{d:>4}" for d in disks) + "   in   sy   cs us sy id")
    for i in range(n):
        r = row_fn(i)
        us, sy = int(round(r['us'])), int(round(r['sy']))
        idl = max(0, 100 - us - sy)
        cells = [f"{r['r']:>2}", f"{r['b']:>2}", f"{0:>2}", f"{r['avm']:>4}", f"{r['fre']:>4}",
                 f"{int(r['flt']):>4}", f"{0:>3}", f"{0:>3}", f"{0:>3}", f"{int(r['fr']):>4}", f"{0:>4}"]
        cells += [f"{int(x):>4}" for x in r['disks']]
        cells += [f"{short(r['in']):>4}", f"{short(r['sy_calls']):>4}", f"{short(r['cs']):>4}",
                  f"{us:>2}", f"{sy:>2}", f"{idl:>2}"]
        out.append(" " + " ".join(cells))
    open(path, "w").write("\n".join(out) + "\n")


def short(v):
    """FreeBSD vmstat's humanized counts: 9100, 12K, 1.9K."""
    v = int(v)
    if v < 10000:
        return str(v)
    return f"{v // 1000}K"


def erlang_table(path, n, start_ts, row_fn, extra_cols=()):
    cols = ["loop", "time", "reductions", "context_switches", "gc_count", "gc_bytes", "inputs",
            "outputs", "run_queue", "cpu_util", "scheduler_util", "mem_total", "mem_procs",
            "mem_sys", "mem_atom", "mem_bin", "mem_ets", "ports", "processes"] + list(extra_cols)
    out = ["\t".join(cols)]
    y, mo, d, h, m, s = start_ts
    for i in range(n):
        r = row_fn(i)
        tt = t_of(h, m, s, 5 * i)
        vals = [str(i), f"{y:04d}-{mo:02d}-{d:02d}T{tt}"] + [
            str(int(r['red'])), str(int(r['cs'])), str(int(r['gc'])), str(int(r['gcb'])),
            str(int(r['in'])), str(int(r['out'])), str(int(r['rq'])),
            f"{r['cpu']:.6f}", f"{r['sched']:.6f}",
            str(int(r['mem'])), str(int(r['mem'] * .18)), str(int(r['mem'] * .82)), "215345",
            str(int(r['mem'] * .7)), "279440", str(int(r['ports'])), str(int(r['procs']))]
        vals += [str(int(r.get(c, 0))) for c in extra_cols]
        out.append("\t".join(vals))
    open(path, "w").write("\n".join(out) + "\n")


def perf_lock(path, cmd, rows):
    """`perf lock contention` (6.x) default columns; rows: (count, total_us, max_us, min_us, type, caller)."""
    def us(v):
        if v >= 1e6:
            return f"{v / 1e6:.2f} s"
        if v >= 1e3:
            return f"{v / 1e3:.2f} ms"
        return f"{v:.2f} us"
    out = [cmd, "", " contended   total wait     max wait     min wait     avg wait         type   caller", ""]
    for c, tot, mx, mn, ty, caller in rows:
        out.append(f"{c:>10} {us(tot):>12} {us(mx):>12} {us(mn):>12} {us(tot / c):>12} {ty:>12}   {caller}")
    open(path, "w").write("\n".join(out) + "\n")


def lock_stat(path, rows):
    """/proc/lock_stat 0.4; rows: (name, con_b, contentions, wmin, wmax, wtotal_us, acq_b, acq, hmin, hmax, htotal_us)."""
    out = ["lock_stat version 0.4", "-" * 222,
           "                              class name    con-bounces    contentions   waittime-min   waittime-max waittime-total   waittime-avg    acq-bounces   acquisitions   holdtime-min   holdtime-max holdtime-total   holdtime-avg",
           "-" * 222, ""]
    for name, cb, c, wmin, wmax, wt, ab, acq, hmin, hmax, ht in rows:
        out.append(f"{name + ':':>40} {cb:>14} {c:>14} {wmin:>14.2f} {wmax:>14.2f} {wt:>14.2f} {wt / max(c, 1):>14.2f} {ab:>14} {acq:>14} {hmin:>14.2f} {hmax:>14.2f} {ht:>14.2f} {ht / max(acq, 1):>14.2f}")
        out.append("")
        out.append("." * 222)
        out.append("")
    open(path, "w").write("\n".join(out) + "\n")


def lockprof(path, rows):
    """FreeBSD debug.lock.prof.stats; rows: (max, wait_max, total, wait_total, count, cnt_lock, name) in µs."""
    out = ["debug.lock.prof.stats: ",
           "     max  wait_max       total  wait_total       count    avg wait_avg cnt_hold cnt_lock name"]
    for mx, wmx, tot, wt, cnt, cl, name in rows:
        out.append(f"{mx:>8} {wmx:>9} {tot:>11} {wt:>11} {cnt:>11} {tot // max(cnt, 1):>6} {wt // max(cnt, 1):>8} {0:>2} {cl:>6} {name}")
    open(path, "w").write("\n".join(out) + "\n")


def sched_util(path, prompt, samples, normal, dirty_cpu):
    """`scheduler:utilization(1)` printed once per sample; normal: per-sample list of fractions."""
    out = []
    for k, fr in enumerate(samples):
        out.append(f"{prompt}{k + 1}> scheduler:utilization(1).")
        tot = sum(fr) / (len(fr) + dirty_cpu)
        lines = [f"[{{total,{tot:.4f},\"{tot * 100:.1f}%\"}}",
                 f" {{weighted,{sum(fr) / len(fr) * 2:.4f},\"{sum(fr) / len(fr) * 200:.1f}%\"}}"]
        for i, f in enumerate(fr):
            lines.append(f" {{normal,{i + 1},{f:.4f},\"{f * 100:.1f}%\"}}")
        for i in range(dirty_cpu):
            lines.append(f" {{cpu,{len(fr) + i + 1},0.0,\"0.0%\"}}")
        out.append(",\n".join(lines) + "]")
    open(path, "w").write("\n".join(out) + "\n")


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
