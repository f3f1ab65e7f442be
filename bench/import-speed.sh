#!/usr/bin/env bash
# Import speed of the vmstat and sar text readers, through the library (release build of
# crates/netceil-import/examples/import_file.rs), on generated logs of ~2 million lines each.
# Each import runs ROUNDS times; the median lines/s is printed, next to a peer that reads the
# same file: awk summing one column (a floor for "read every line and parse one number").
#
# usage: bench/import-speed.sh [ROUNDS] [LINES]     (defaults: 5 rounds, 2000000 lines)
# target: >= 1,000,000 lines/s for vmstat and sar text on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
lines=${2:-2000000}
out=bench/out
mkdir -p "$out"

cargo build --release -q -p netceil-import --example import_file
bin=${CARGO_TARGET_DIR:-target}/release/examples/import_file

# A Linux vmstat -w log (bench/lib/vmstat-log.awk).
vmstat_log=$out/vmstat-big.txt
awk -v n="$lines" -f bench/lib/vmstat-log.awk >"$vmstat_log"

# A sar -P ALL report of a 4-CPU machine in a 12-hour locale, with the midnight rollover.
sar_log=$out/sar-big.txt
awk -v n="$lines" 'BEGIN {
  srand(2)
  print "Linux 6.1.0-18-amd64 (bench) \t11/21/2026 \t_x86_64_\t(4 CPU)"; print ""
  t = 23 * 3600; i = 2
  while (i < n) {
    h = int(t / 3600) % 24; m = int(t / 60) % 60; s = t % 60
    ap = (h >= 12) ? "PM" : "AM"; hh = h % 12; if (hh == 0) hh = 12
    stamp = sprintf("%02d:%02d:%02d %s", hh, m, s, ap)
    if (i % 200 == 2) { printf "\n%s     CPU     %%user     %%nice   %%system   %%iowait    %%steal     %%idle\n", stamp; i += 2 }
    t++
    h = int(t / 3600) % 24; m = int(t / 60) % 60; s = t % 60
    ap = (h >= 12) ? "PM" : "AM"; hh = h % 12; if (hh == 0) hh = 12
    stamp = sprintf("%02d:%02d:%02d %s", hh, m, s, ap)
    split("all 0 1 2 3", cpus, " ")
    for (c = 1; c <= 5 && i < n; c++) {
      u = rand() * 60; y = rand() * 30
      printf "%s %7s %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", stamp, cpus[c], u, 0, y, rand(), 0, 100 - u - y
      i++
    }
  }
}' >"$sar_log"

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# "wall cpu" lines/s of our import (parse only: the example times import() on text already in
# memory; wall time includes waiting for a core on this shared machine, CPU time does not)
ours() { "$bin" --format "$1" "$2" | sed -E 's/.* lines_per_s=([0-9.]+) cpu_lines_per_s=([0-9.-]+).*/\1 \2/'; }
# lines/s of awk reading the file and summing one column
peer() {
  local start end
  start=$(date +%s.%N)
  awk "{ s += \$$2 } END { print s > \"/dev/null\" }" "$1"
  end=$(date +%s.%N)
  awk -v l="$(wc -l <"$1")" -v a="$start" -v b="$end" 'BEGIN { printf "%.0f\n", l / (b - a) }'
}

for kind in vmstat-linux:"$vmstat_log":12 sar:"$sar_log":4; do
  IFS=: read -r fmt file col <<<"$kind"
  wall_runs=(); cpu_runs=(); peer_runs=()
  for r in $(seq 1 "$rounds"); do
    read -r w c <<<"$(ours "$fmt" "$file")"
    wall_runs+=("$w"); cpu_runs+=("$c")
    peer_runs+=("$(peer "$file" "$col")")
  done
  o=$(printf '%s\n' "${wall_runs[@]}" | median)
  oc=$(printf '%s\n' "${cpu_runs[@]}" | median)
  p=$(printf '%s\n' "${peer_runs[@]}" | median)
  printf '%-13s %8d lines  netceil-import median %9.0f lines/s (CPU time: %9.0f)  awk-sum median %9.0f lines/s  ratio %.2f  target >= 1000000: %s\n' \
    "$fmt" "$(wc -l <"$file")" "$o" "$oc" "$p" "$(awk -v a="$o" -v b="$p" 'BEGIN { print a / b }')" \
    "$(awk -v a="$o" 'BEGIN { print (a >= 1000000) ? "met" : "MISSED" }')"
done
