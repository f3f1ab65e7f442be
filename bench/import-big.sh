#!/usr/bin/env bash
# A big capture through `netceil analyze` (issue 25, "a 1 GB capture import"): generated Linux
# vmstat -w logs of about 100 MB and of about SIZE_MB (default 1024) MB, each analyzed
# ROUNDS times by the release binary under /usr/bin/time -v, against awk summing one column
# of the same file (a floor for "read every line and parse one number"). Prints, per size,
# the median throughput (MB/s and lines/s, wall time) and the largest peak resident memory
# (max RSS) of both, the ratios netceil / awk, and how netceil's peak memory grew from the
# small file to the big one (1.0: it does not grow with the file).
# netceil reads a Linux vmstat log longer than netceil_import::HEAD_BYTES line by line
# (crates/netceil-import/src/log.rs), so its text is never held whole; the Run's series (16
# bytes a value) still grows with the rows, and is what peak memory is made of. `analyze`
# runs with --no-store: the import and the analysis are measured, not the SQLite write.
# A run netceil refuses is reported with its message.
#
# usage: bench/import-big.sh [ROUNDS] [SIZE_MB]        (defaults: 3 rounds, 1024 MB)
#   NC=path   the netceil binary (default: built here with cargo build --release)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
big_mb=${2:-1024}
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
trap 'rm -f "$out"/vmstat-*.txt "$NETCEIL_DB" "$NETCEIL_DB-wal" "$NETCEIL_DB-shm"' EXIT

# ~122 bytes a line in bench/lib/vmstat-log.awk
gen() { awk -v n="$(($1 * 1024 * 1024 / 122))" -f bench/lib/vmstat-log.awk >"$2"; }

# "wall_s max_rss_kB exit" of a command, from /usr/bin/time -v
timed() {
  local log=$out/time.txt rc=0
  /usr/bin/time -v "$@" >"$out/stdout.txt" 2>"$log" || rc=$?
  awk -v rc="$rc" '/Elapsed \(wall clock\)/ { n = split($NF, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i] }
       /Maximum resident set size/ { m = $NF } END { print s, m, rc }' "$log"
}

: >"$out/results.txt"
for mb in 100 "$big_mb"; do
  f=$out/vmstat-$mb.txt
  echo "generating $f" >&2
  gen "$mb" "$f"
  bytes=$(stat -c %s "$f"); lines=$(wc -l <"$f")
  for r in $(seq 1 "$rounds"); do
    echo "$mb MB, round $r/$rounds (load average $(cut -d' ' -f1 /proc/loadavg))" >&2
    # Alternate the order so drift falls on both.
    for tool in $([ $((r % 2)) -eq 1 ] && echo "nc awk" || echo "awk nc"); do
      if [ "$tool" = nc ]; then
        res=$(timed "$nc" analyze --no-store --format vmstat-linux "$f")
        [ "${res##* }" = 0 ] || head -c 600 "$out/time.txt" | grep -v '^\s' >"$out/nc-$mb.err" || true
      else
        res=$(timed awk '{ s += $12 } END { print s }' "$f")
      fi
      echo "$tool $mb $bytes $lines $res" >>"$out/results.txt"
    done
  done
  rm -f "$f"
done

python3 - "$out/results.txt" "$big_mb" "$out" <<'PY'
import statistics as st, sys, os
path, big, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = [l.split() for l in open(path) if l.strip()]
res = {}
for tool, mb, b, lines, wall, rss, rc in rows:
    res.setdefault((tool, int(mb)), []).append((int(b), int(lines), float(wall), int(rss), int(rc)))
print("netceil analyze --no-store --format vmstat-linux against awk summing one column; medians of wall time, largest max RSS")
print("load average at the end:", open("/proc/loadavg").read().split()[:3])
meds = {}
for (tool, mb) in sorted(res, key=lambda k: (k[1], k[0])):
    v = res[(tool, mb)]
    b, lines = v[0][0], v[0][1]
    ok = [x for x in v if x[4] == 0]
    name = "netceil" if tool == "nc" else "awk"
    if not ok:
        err = open(os.path.join(out, f"nc-{mb}.err")).read().strip() if tool == "nc" else ""
        print(f"{name:8s} {b/1e6:7.0f} MB: failed in every round (exit {v[0][4]}; peak RSS {max(x[3] for x in v)/1024:.0f} MB) {err[:300]}")
        continue
    wall = st.median(x[2] for x in ok); rss = max(x[3] for x in ok)
    meds[(tool, mb)] = (wall, rss)
    print(f"{name:8s} {b/1e6:7.0f} MB {lines:9d} lines: {b/1e6/wall:7.1f} MB/s {lines/wall:10.0f} lines/s  peak RSS {rss/1024:7.1f} MB")
for mb in (100, big):
    if ("nc", mb) in meds and ("awk", mb) in meds:
        a, w = meds[("nc", mb)], meds[("awk", mb)]
        print(f"ratio netceil / awk at {mb} MB: throughput {w[0]/a[0]:.2f}, peak RSS {a[1]/w[1]:.1f}")
if ("nc", 100) in meds and ("nc", big) in meds:
    g = meds[("nc", big)][1] / meds[("nc", 100)][1]
    f = res[("nc", big)][0][0] / res[("nc", 100)][0][0]
    print(f"netceil peak RSS, {big} MB file / 100 MB file: {g:.2f}, for a file {f:.2} x longer")
    for mb in (100, big):
        b = res[("nc", mb)][0][0]
        print(f"  at {mb} MB: peak RSS / file size {meds[('nc', mb)][1] * 1024 / b:.2}")
PY
