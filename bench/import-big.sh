#!/usr/bin/env bash
# A big capture through `netceil analyze` (issue 25, "a 1 GB capture import"): generated,
# seeded logs of about 100 MB and of about SIZE_MB (default 1024) MB in each of FORMATS
# (default: Linux vmstat -w, sar -u 1, mpstat -P ALL 1 on 2 CPUs; bench/lib/*-log.awk), each
# analyzed ROUNDS times by the release binary under /usr/bin/time -v, against awk summing one
# column of the same file (a floor for "read every line and parse one number"), alternating
# which goes first. Prints, per format and size, the median throughput (MB/s and lines/s,
# wall time, with its range) and the largest peak resident memory (max RSS) of both, the
# ratios netceil / awk, and how netceil's peak memory grew from the small file to the big
# one (1.0: it does not grow with the file).
# netceil reads these logs line by line once they are longer than netceil_import::HEAD_BYTES
# (crates/netceil-import/src/log.rs), so their text is never held whole, and a series keeps
# at most netceil_import::MAX_ROWS rows (crates/netceil-import/src/formats/builder.rs): a
# longer log is kept as coarser rows, so the Run does not grow with the log either. `analyze`
# runs with --no-store: the import and the analysis are measured, not the SQLite write.
# A run netceil refuses is reported with its message.
#
# usage: bench/import-big.sh [ROUNDS] [SIZE_MB] [FORMATS]
#   defaults: 3 rounds, 1024 MB, "vmstat-linux sar mpstat"
#   NC=path   the netceil binary (default: built here with cargo build --release)
# Run it under `flock /tmp/netceil-bench.lock` on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
big_mb=${2:-1024}
formats=${3:-vmstat-linux sar mpstat}
out=bench/out/import-big
mkdir -p "$out"
command -v /usr/bin/time >/dev/null || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time
}
if [ -z "${NC:-}" ]; then
  cargo build --release -q -p netceil --bin netceil
  NC=${CARGO_TARGET_DIR:-target}/release/netceil
fi
nc=$(realpath "$NC")
export NETCEIL_DB=$PWD/$out/runs.db
trap 'rm -f "$out"/log-*.txt "$NETCEIL_DB" "$NETCEIL_DB-wal" "$NETCEIL_DB-shm"' EXIT

# FORMAT MB FILE: a log of about MB megabytes. Bytes a line: ~122 (vmstat), ~80 (sar, mpstat).
gen() {
  case $1 in
    vmstat-linux) awk -v n="$(($2 * 1024 * 1024 / 122))" -f bench/lib/vmstat-log.awk >"$3" ;;
    sar) awk -v n="$(($2 * 1024 * 1024 / 80))" -f bench/lib/sar-log.awk >"$3" ;;
    mpstat) awk -v n="$(($2 * 1024 * 1024 / 78))" -f bench/lib/mpstat-log.awk >"$3" ;;
    *) echo "unknown format $1" >&2; exit 2 ;;
  esac
}
# The column awk sums on the lines where it is a number: vmstat's cs, sar's and mpstat's %user.
col() { case $1 in vmstat-linux) echo 12 ;; *) echo 3 ;; esac; }

# "wall_s max_rss_kB exit" of a command, from /usr/bin/time -v
timed() {
  local log=$out/time.txt rc=0
  /usr/bin/time -v "$@" >"$out/stdout.txt" 2>"$log" || rc=$?
  awk -v rc="$rc" '/Elapsed \(wall clock\)/ { n = split($NF, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i] }
       /Maximum resident set size/ { m = $NF } END { print s, m, rc }' "$log"
}

: >"$out/results.txt"
for fmt in $formats; do
  for mb in 100 "$big_mb"; do
    f=$out/log-$fmt-$mb.txt
    echo "generating $f" >&2
    gen "$fmt" "$mb" "$f"
    bytes=$(stat -c %s "$f"); lines=$(wc -l <"$f")
    for r in $(seq 1 "$rounds"); do
      echo "$fmt $mb MB, round $r/$rounds (load average $(cut -d' ' -f1 /proc/loadavg))" >&2
      # Alternate the order so drift falls on both.
      for tool in $([ $((r % 2)) -eq 1 ] && echo "nc awk" || echo "awk nc"); do
        if [ "$tool" = nc ]; then
          res=$(timed "$nc" analyze --no-store --format "$fmt" "$f")
          [ "${res##* }" = 0 ] || head -c 600 "$out/time.txt" | grep -v '^\s' >"$out/nc-$fmt-$mb.err" || true
        else
          res=$(timed awk -v c="$(col "$fmt")" '$c + 0 == $c { s += $c } END { print s }' "$f")
        fi
        echo "$tool $fmt $mb $bytes $lines $res" >>"$out/results.txt"
      done
    done
    rm -f "$f"
  done
done

python3 - "$out/results.txt" "$big_mb" "$out" <<'PY'
import statistics as st, sys, os
path, big, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = [l.split() for l in open(path) if l.strip()]
res = {}
for tool, fmt, mb, b, lines, wall, rss, rc in rows:
    res.setdefault((fmt, tool, int(mb)), []).append((int(b), int(lines), float(wall), int(rss), int(rc)))
print("netceil analyze --no-store --format FORMAT against awk summing one column;")
print("medians of wall time (with their range), largest max RSS")
print("load average at the end:", open("/proc/loadavg").read().split()[:3])
for fmt in dict.fromkeys(k[0] for k in res):
    print(f"-- {fmt}")
    meds = {}
    for tool in ("nc", "awk"):
        for mb in (100, big):
            v = res.get((fmt, tool, mb))
            if not v:
                continue
            b, lines = v[0][0], v[0][1]
            ok = [x for x in v if x[4] == 0]
            name = "netceil" if tool == "nc" else "awk"
            if not ok:
                e = os.path.join(out, f"nc-{fmt}-{mb}.err")
                err = open(e).read().strip() if os.path.exists(e) else ""
                print(f"{name:8s} {b/1e6:7.0f} MB: failed in every round (exit {v[0][4]}; peak RSS {max(x[3] for x in v)/1024:.0f} MB) {err[:300]}")
                continue
            walls = [x[2] for x in ok]
            wall = st.median(walls)
            rss = max(x[3] for x in ok)
            meds[(tool, mb)] = (wall, rss, b)
            print(f"{name:8s} {b/1e6:7.0f} MB {lines:9d} lines: {b/1e6/wall:7.1f} MB/s {lines/wall:10.0f} lines/s"
                  f" (wall {min(walls):.1f}-{max(walls):.1f} s, {len(ok)} rounds)  peak RSS {rss/1024:7.1f} MB")
    for mb in (100, big):
        if ("nc", mb) in meds and ("awk", mb) in meds:
            a, w = meds[("nc", mb)], meds[("awk", mb)]
            print(f"ratio netceil / awk at {mb} MB: throughput {w[0]/a[0]:.2f}, peak RSS {a[1]/w[1]:.1f}")
    if ("nc", 100) in meds and ("nc", big) in meds:
        g = meds[("nc", big)][1] / meds[("nc", 100)][1]
        f = meds[("nc", big)][2] / meds[("nc", 100)][2]
        print(f"netceil peak RSS, {big} MB file / 100 MB file: {g:.2f}, for a file {f:.2f} x longer")
PY
