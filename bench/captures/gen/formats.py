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
