import json, random, os, sys
random.seed(9)
R = random.Random(9)
def j(x, pct): return x * (1 + R.uniform(-pct, pct))
def t_of(h, m, s, i, ampm=False):
    s += i; m += s // 60; s %= 60; h += m // 60; m %= 60
    if ampm:
        hh = h % 12 or 12
        return f"{hh:02d}:{m:02d}:{s:02d} {'AM' if h < 12 else 'PM'}"
    return f"{h:02d}:{m:02d}:{s:02d}"

def mpstat(path, banner, ncpu, n, start, rows_fn, ampm=False):
    out = [banner, ""]
    cols = "CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle"
    tag = "    " if not ampm else "  "
    for i in range(n):
        t0 = t_of(*start, i, ampm); t1 = t_of(*start, i + 1, ampm)
        out.append(f"{t0}  {cols}")
        rows = [rows_fn(c) for c in range(ncpu)]
        allr = [sum(r[k] for r in rows) / ncpu for k in range(9)]
        def fmt(name, r):
            idle = max(0.0, 100 - sum(r))
            return f"{t1}  {name:>4}" + "".join(f"{v:8.2f}" for v in r) + f"{idle:8.2f}"
        out.append(fmt("all", allr))
        for c, r in enumerate(rows):
            out.append(fmt(str(c), r))
        out.append("")
    open(path, "w").write("\n".join(out) + "\n")

def vmstat(path, n, row_fn, wide=False):
    if wide:
        out = ["--procs-- -----------------------memory---------------------- ---swap-- -----io---- -system-- --------cpu--------",
               "   r    b         swpd         free         buff        cache   si   so    bi    bo   in   cs  us  sy  id  wa  st"]
    else:
        out = ["procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----",
               " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st"]
    for i in range(n):
        r = row_fn(i)
        us, sy, wa, st = r['us'], r['sy'], r['wa'], r.get('st', 0)
        idl = max(0, 100 - us - sy - wa - st)
        vals = [r['r'], r['b'], r['swpd'], r['free'], r['buff'], r['cache'], r['si'], r['so'], r['bi'], r['bo'], r['in'], r['cs'], us, sy, idl, wa, st]
        if wide:
            w = [4, 4, 12, 12, 12, 12, 4, 4, 5, 5, 4, 5, 3, 3, 3, 3, 3]
        else:
            w = [2, 2, 6, 6, 6, 6, 4, 4, 5, 5, 4, 5, 2, 2, 2, 2, 2]
        out.append(" ".join(f"{int(v):>{k}}" for v, k in zip(vals, w)))
    open(path, "w").write("\n".join(out) + "\n")

def sar_sections(path, banner, n, start, sections):
    """sections: list of (header_cols, rows_fn(i) -> list of row value lists (with key col first if any))"""
    out = [banner, ""]
    for i in range(n):
        t0 = t_of(*start, i); t1 = t_of(*start, i + 1)
        for cols, fn, widths in sections:
            out.append(f"{t0}  " + "".join(f"{c:>{w}}" for c, w in zip(cols, widths)))
            for row in fn(i):
                cells = []
                for v, w in zip(row, widths):
                    cells.append(f"{v:>{w}}" if isinstance(v, str) else f"{v:>{w}.2f}")
                out.append(f"{t1}  " + "".join(cells))
            out.append("")
    open(path, "w").write("\n".join(out) + "\n")

def iperf3(path, version, system_info, proto, blksize, target, dur, per_iv, end_extra, nstreams=1, rtt=None):
    start = {"connected": [{"socket": 5 + k, "local_host": "10.20.0.11", "local_port": 41000 + k,
              "remote_host": "10.20.0.12", "remote_port": 5201} for k in range(nstreams)],
             "version": version, "system_info": system_info,
             "timestamp": {"time": "Tue, 10 Nov 2026 09:12:44 GMT", "timesecs": 1794301964},
             "connecting_to": {"host": "10.20.0.12", "port": 5201},
             "cookie": "q8w1e5r7t2y9u4i6o3p0a1s5d8f2g7h4j6k3",
             "target_bitrate": target, "sock_bufsize": 0, "sndbuf_actual": 212992, "rcvbuf_actual": 212992,
             "test_start": {"protocol": proto, "num_streams": nstreams, "blksize": blksize, "omit": 0,
                            "duration": dur, "bytes": 0, "blocks": 0, "reverse": 0, "tos": 0,
                            "target_bitrate": target}}
    if proto == "TCP":
        start["tcp_mss_default"] = 1448
    ivs = []
    for i in range(dur):
        streams = []
        for k in range(nstreams):
            s = per_iv(i, k)
            s.update({"socket": 5 + k, "start": float(i), "end": float(i + 1), "seconds": 1.0, "omitted": False, "sender": True})
            streams.append(s)
        sm = {"start": float(i), "end": float(i + 1), "seconds": 1.0,
              "bytes": sum(s["bytes"] for s in streams),
              "bits_per_second": sum(s["bits_per_second"] for s in streams), "omitted": False, "sender": True}
        if proto == "UDP":
            sm["packets"] = sum(s["packets"] for s in streams)
        else:
            sm["retransmits"] = sum(s["retransmits"] for s in streams)
        ivs.append({"streams": streams, "sum": sm})
    d = {"start": start, "intervals": ivs, "end": end_extra(ivs)}
    json.dump(d, open(path, "w"), indent=2)

def cell(v, w):
    s = v if isinstance(v, str) else f"{v:.2f}"
    return s.rjust(w) if len(s) < w else " " + s

def sar_file(path, banner, n, start, sections, average=True):
    """`sar -A -f FILE` layout: each activity's whole series in turn, each followed by its
    Average: lines. sections: (cols, rows_fn(i) -> rows, widths)."""
    out = [banner, ""]
    for cols, fn, widths in sections:
        allrows = []
        out.append(f"{t_of(*start, 0)}  " + "".join(f"{c:>{w}}" for c, w in zip(cols, widths)))
        for i in range(n):
            t1 = t_of(*start, i + 1)
            rows = fn(i)
            allrows.append(rows)
            for row in rows:
                out.append(f"{t1}  " + "".join(cell(v, w) for v, w in zip(row, widths)))
        if average:
            for k, row in enumerate(allrows[0]):
                vals = []
                for c, v in enumerate(row):
                    if isinstance(v, str):
                        vals.append(v)
                    else:
                        vals.append(sum(r[k][c] for r in allrows) / n)
                out.append("Average:  " + "".join(cell(v, w) for v, w in zip(vals, widths)))
        out.append("")
    open(path, "w").write("\n".join(out) + "\n")

CPU_ALL_COLS = (["CPU", "%usr", "%nice", "%sys", "%iowait", "%steal", "%irq", "%soft", "%guest", "%gnice", "%idle"], [9] + [9] * 10)
def cpu_rows(percpu):
    """percpu(c, i) -> (usr, sys, iowait, steal, irq, soft); returns rows_fn giving all + each CPU."""
    def f(i, ncpu):
        rows = []
        vals = [percpu(c, i) for c in range(ncpu)]
        def row(name, v):
            usr, sys_, io, st, irq, soft = v
            idle = max(0.0, 100 - usr - sys_ - io - st - irq - soft)
            return [name, usr, 0.0, sys_, io, st, irq, soft, 0.0, 0.0, idle]
        avg = tuple(sum(v[k] for v in vals) / ncpu for k in range(6))
        rows.append(row("all", avg))
        for c, v in enumerate(vals):
            rows.append(row(str(c), v))
        return rows
    return f
DEV_COLS = (["IFACE", "rxpck/s", "txpck/s", "rxkB/s", "txkB/s", "rxcmp/s", "txcmp/s", "rxmcst/s", "%ifutil"], [9, 10, 10, 10, 10, 10, 10, 10, 10])
EDEV_COLS = (["IFACE", "rxerr/s", "txerr/s", "coll/s", "rxdrop/s", "txdrop/s", "txcarr/s", "rxfram/s", "rxfifo/s", "txfifo/s"], [9] + [10] * 9)
UDP_COLS = (["idgm/s", "odgm/s", "noport/s", "idgmerr/s"], [9, 10, 10, 10])
Q_COLS = (["runq-sz", "plist-sz", "ldavg-1", "ldavg-5", "ldavg-15", "blocked"], [9, 10, 10, 10, 10, 10])
W_COLS = (["proc/s", "cswch/s"], [9, 10])
TCP_COLS = (["active/s", "passive/s", "iseg/s", "oseg/s"], [9, 10, 10, 10])
ETCP_COLS = (["atmptf/s", "estres/s", "retrans/s", "isegerr/s", "orsts/s"], [9, 10, 10, 10, 10])

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


def wall_time(path, prompt, snapshots, comment=None):
    """Erlang `statistics(scheduler_wall_time)` taken several times in the shell; snapshots:
    list of lists of (id, active, total), printed in the order given."""
    out = [] if comment is None else [f"%% {comment}"]
    for k, snap in enumerate(snapshots):
        out.append(f"{prompt}{k + 1}> statistics(scheduler_wall_time).")
        body = ",\n ".join(f"{{{i},{a},{t}}}" for i, a, t in snap)
        out.append(f"[{body}]")
        out.append("")
    open(path, "w").write("\n".join(out) + "\n")


def wall_time_snaps(nsched, utils, span_units, t0=88_000_000_000):
    """Snapshots whose per-scheduler utilization between consecutive ones is utils[k](s):
    the active and total times accumulate from an arbitrary origin."""
    act = [R.randint(10_000_000, 90_000_000) for _ in range(nsched)]
    tot = [t0 + R.randint(0, 50_000) for _ in range(nsched)]
    snaps = [[(s + 1, act[s], tot[s]) for s in range(nsched)]]
    for u in utils:
        for s in range(nsched):
            dt = span_units + R.randint(-2000, 2000)
            act[s] += int(dt * min(1.0, max(0.0, u(s))))
            tot[s] += dt
        snaps.append([(s + 1, act[s], tot[s]) for s in range(nsched)])
    return snaps
