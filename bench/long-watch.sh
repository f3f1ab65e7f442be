#!/usr/bin/env bash
# A long watch at a fine interval, as issue 25's "cost as the work grows" asks: `netceil watch
# --interval 10ms` for MINUTES (default 15, about 90 k rows), beside sysstat's own collector
# (sadc, every second, all activities) writing its binary file over the same minutes.
#
# Every 30 s it records each one's resident memory (VmRSS) and its file's size; at the end it
# prints the growth of both (is memory bounded? is the store linear?), netceil's bytes per row
# and per value against sadc's bytes per sample, and how long `netceil show` and `netceil report`
# take on the finished run (median of 3, each timed alone).
#
# It also prints netceil's resident memory at 1, 5, 10 and 15 minutes (those the run reaches)
# and its slope over the second half of the run (bounded memory: near 0), and the run's notes
# on what the in-memory copy merged or left out (the store keeps every row and column).
#
# usage: bench/long-watch.sh [MINUTES] [INTERVAL]     (defaults: 15, 10ms)
#   NC=path   the netceil binary (default: built here with cargo build --release)
# Loopback only; nothing but the two observers runs; both are stopped by their PIDs.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-15}
interval=${2:-10ms}
out=bench/out/long-watch
rm -rf "$out"
mkdir -p "$out"

sadc=/usr/lib/sysstat/sadc
if [ ! -x "$sadc" ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sysstat
fi
if [ -z "${NC:-}" ]; then
  cargo build --release -q -p netceil
  NC=${CARGO_TARGET_DIR:-target}/release/netceil
fi
nc=$(realpath "$NC")
export NETCEIL_DB=$PWD/$out/runs.db
seconds=$((minutes * 60))

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM

"$nc" watch --interval "$interval" --duration "${seconds}s" -q >"$out/watch.txt" 2>"$out/watch.err" &
nc_pid=$!
pids+=("$nc_pid")
"$sadc" -S ALL 1 "$seconds" "$out/sa.bin" &
sa_pid=$!
pids+=("$sa_pid")

rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
size() { du -cb "$@" 2>/dev/null | tail -1 | cut -f1; }
echo "t_s nc_rss_kB nc_store_B sadc_rss_kB sadc_file_B" >"$out/trace.txt"
t=0
while kill -0 "$nc_pid" 2>/dev/null; do
  sleep 30
  t=$((t + 30))
  echo "$t $(rss "$nc_pid") $(size "$out"/runs.db*) $(rss "$sa_pid") $(size "$out/sa.bin")" >>"$out/trace.txt"
done
wait "$nc_pid" || true
wait "$sa_pid" || true
pids=()

# Rows and values of the stored run, and the time to show and report it.
json=$("$nc" show last --json)
rows=$(printf '%s' "$json" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(len(r["series"]["t_s"]))')
notes=$(printf '%s' "$json" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("\n".join(n for n in r.get("notes", []) if "in memory" in n))')
values=$(printf '%s' "$json" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(sum(sum(v is not None for v in m["values"]) for m in r["series"]["metrics"]))')
samples=$(LC_ALL=C sar -f "$out/sa.bin" 2>/dev/null | grep -c '^[0-9]' || true)
timed() {
  local all=()
  for _ in 1 2 3; do
    local s e
    s=$(date +%s%N)
    "$@" >/dev/null 2>&1
    e=$(date +%s%N)
    all+=("$(((e - s) / 1000000))")
  done
  printf '%s\n' "${all[@]}" | sort -n | sed -n 2p
}
show_s=$(timed "$nc" show last)
report_s=$(timed "$nc" report last -o "$out/report.html")
python3 - "$out/trace.txt" "$rows" "$values" "$samples" "$show_s" "$report_s" "$interval" "$minutes" "$notes" <<'EOF'
import sys
trace, rows, values, samples, show_s, report_s, interval, minutes, notes = sys.argv[1:]
rows, values, samples = int(rows), int(values), int(samples)
t = [list(map(float, l.split())) for l in open(trace).read().splitlines()[1:] if l.strip()]
t = [r for r in t if r[1] > 0]
if len(t) < 2:
    sys.exit("too short a trace: give more minutes")
first, mid, last = t[0], t[len(t) // 2], t[-1]
print(f"netceil watch --interval {interval} for {minutes} min beside sadc -S ALL 1")
print(f"  rows stored {rows}, values {values}; sadc samples {samples}")
print("  resident memory, MB (at %ds, %ds, %ds):" % (first[0], mid[0], last[0]))
print(f"    netceil {first[1]/1024:.1f} {mid[1]/1024:.1f} {last[1]/1024:.1f}  (growth after the first point: {(last[1]-first[1])/1024:.1f} MB)")
print(f"    sadc    {first[3]/1024:.1f} {mid[3]/1024:.1f} {last[3]/1024:.1f}")
# RSS at whole minutes, and its slope over the second half (least squares): bounded is ~0.
at = {m: next((r for r in t if r[0] >= m * 60), None) for m in (1, 5, 10, 15)}
print("  netceil RSS, MB, at " + ", ".join(
    f"{m} min: {r[1]/1024:.1f}" for m, r in at.items() if r is not None and r[0] < m * 60 + 30))
second = t[len(t) // 2:]
if len(second) >= 2:
    xs = [r[0] / 60 for r in second]; ys = [r[1] / 1024 for r in second]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    print(f"  netceil RSS slope over the second half ({xs[0]:.1f}..{xs[-1]:.1f} min): {slope:+.2f} MB/min")
for n in filter(None, notes.splitlines()):
    print(f"  run note: {n}")
# The recording keeps at most MAX_ROWS rows in memory (netceil_probe::MAX_ROWS; the store keeps
# every row): full, it merges them two into one, and refills. So RSS is a sawtooth, growing as
# the copy refills and dropping at each merge; bounded by its peak, not flat.
max_rows = 16384
unit = {"ms": 1e-3, "s": 1.0}
iv = next(float(interval[:-len(u)]) * k for u, k in unit.items() if interval.endswith(u))
merges, k = [], 1
while max_rows * iv * (2**k - 1) <= t[-1][0]:
    merges.append(max_rows * iv * (2**k - 1)); k += 1
peak = max(r[1] for r in t)
print(f"  netceil peak RSS {peak/1024:.1f} MB; the in-memory copy ({max_rows} rows at most) merged at "
      + (", ".join(f"{m:.0f}" for m in merges) or "no time") + " s; next at "
      + f"{max_rows * iv * (2**k - 1):.0f} s")
if merges:
    after = [r for r in t if r[0] > merges[-1]]
    if len(after) >= 2:
        print(f"    since the last merge RSS grew {(after[-1][1]-after[0][1])/1024:.1f} MB over {after[-1][0]-after[0][0]:.0f} s (the copy refilling)")
# Linear store: bytes per 30 s in the first and the second half.
half = len(t) // 2
def slope(a, b, col):
    return (b[col] - a[col]) / (b[0] - a[0])
s1, s2 = slope(t[0], t[half], 2), slope(t[half], t[-1], 2)
print(f"  store growth, B/s: first half {s1:.0f}, second half {s2:.0f} (ratio {s2/s1:.2f}; 1.00 = linear)")
print(f"  store per row: {last[2]/max(rows,1):.0f} B, per value {last[2]/max(values,1):.2f} B; sadc per sample {last[4]/max(samples,1):.0f} B")
print(f"  show last: {int(show_s)/1000:.2f} s, report last: {int(report_s)/1000:.2f} s (median of 3)")
EOF
