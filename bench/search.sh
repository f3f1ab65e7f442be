#!/usr/bin/env bash
# The knee and the loss-criterion search on loopback, with the figures issue 11 asks for:
#  1. netceil sweep udp over SEEDS §5's sizes: the first interval with 100 % at the kernel and
#     at the application, beside §5's own published table (bench/data/mint-knee-*.csv);
#  2. netceil search udp: NDR and PDR per frame size, the trials each took, and the search's
#     total trial time against the naive search (per tolerance a plain binary search, then a
#     verifying trial), a binary search for the NDR alone and a linear sweep, to the same
#     precision at the full trial length, ROUNDS times, with the ratios' medians and ranges;
#  3. a cross-check with a peer: at the NDR netceil found for 1024-byte payloads, iperf3
#     (-u -l 1024 -b RATE) for the same duration; and netceil itself at 1.2 × that rate.
#     ROUNDS times each, medians.
# Loopback only; every process this script starts is stopped by its PID.
#
# usage: [NC=path] bench/search.sh [ROUNDS] [TRIAL] [PARTS]   (defaults: 5 rounds, 2s
#        trials, PARTS "123"; "2" runs only the search's rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
trial=${2:-2s}
parts=${3:-123}
out=bench/out/search
mkdir -p "$out"

need=()
command -v iperf3 >/dev/null || need+=(iperf3)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
# NC=path runs another netceil binary (an older build, to compare planners) instead of this
# tree's.
if [ -z "${NC:-}" ]; then
  cargo build --release -q -p netceil
  nc=$(realpath "${CARGO_TARGET_DIR:-target}")/release/netceil
else
  nc=$NC
fi
port=$((20000 + RANDOM % 20000))
servers=()
cleanup() {
  [ ${#servers[@]} -eq 0 ] || kill "${servers[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

if [[ $parts == *1* ]]; then
echo "== 1. size x interval sweep (SEEDS 5 sizes, 5000 packets per cycle)"
"$nc" sweep udp --sizes 1K,1536,4K,8K,12K,16K --interval 0us..12us/0.1us --count 5000 \
  --json -q --no-store >"$out/sweep.json"
python3 - "$out/sweep.json" bench/data/mint-knee-driver.csv bench/data/mint-knee-app.csv <<'PY'
import csv, json, sys
run = json.load(open(sys.argv[1]))
def published(path):
    rows = {}
    for r in csv.DictReader(l for l in open(path) if not l.startswith('#')):
        try:
            rows[float(r['size_kib'])] = (r['min_interval_us'], r['published_gbps'])
        except ValueError:
            pass
    return rows
mint = {'kernel': published(sys.argv[2]), 'app': published(sys.argv[3])}
print(f"{'size':>7} {'point':>6} | {'netceil loopback':>28} | {'Mint r8169 emulation (5)':>26}")
print(f"{'KiB':>7} {'':>6} | {'first 100 %':>12} {'Gibit/s':>8} {'cells':>6} | {'first 100 %':>12} {'Gibit/s':>12}")
for k in run['knees']:
    kib = k['size_bytes'] / 1024
    iv = k['min_interval_us']
    gib = (k['bits_per_s'] or 0) / 2**30
    m = mint[k['point']].get(kib, ('-', '-'))
    print(f"{kib:>7g} {k['point']:>6} | {('%.1f us' % iv) if iv is not None else 'none':>12} {gib:>8.2f} {k['trials']:>6} | {m[0] + ' us':>12} {m[1]:>12}")
print("kernel = reached the socket (Mint: the driver); app = read by the receiving program; Gibit/s = 2^30 bit/s")
PY
fi

if [[ $parts == *2* ]]; then
: >"$out/ratios.txt"
for r in $(seq 1 "$rounds"); do
echo
echo "== 2. NDR and PDR per frame size (trials of $trial, precision 2 %), round $r of $rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s.%N)
# --sizes, the old spelling of --frame-sizes: an older NC= build knows only it.
"$nc" search udp --sizes 64,1070,1518 --loss 0,0.5% --trial "$trial" --initial-trial 250ms \
  --precision 2% --max-trials 60 --json --no-store >"$out/search.json" 2>"$out/trials-$r.txt"
end=$(date +%s.%N)
cp "$out/search.json" "$out/search-$r.json"
python3 - "$out/search.json" "$start" "$end" "$out/ratios.txt" <<'PY'
import json, math, sys
run = json.load(open(sys.argv[1]))
p = run['workload']  # the workload's parameters sit beside its kind
final = p['trial_s']
print(f"{'frame B':>7} {'loss <=':>7} {'rate':>12} {'Gbit/s':>7} {'trials':>6} {'verified':>8}  note")
for k in run['knees']:
    rate = k['rate_pps']
    print(f"{k['size_bytes']:>7} {k['loss_tolerance']*100:>6g}% {('%.0f pps' % rate) if rate else 'none':>12}"
          f"{'>=' if k['generator_limited'] else '  '}{(k['bits_per_s'] or 0)/1e9:>6.3f} {k['trials']:>6} {str(k['verified']):>8}  {k['note'] or ''}")
# Trial time spent against the naive search a user would write instead, at the full trial
# length over the same range (the generator's ceiling per size) to the same precision: per
# tolerance, a binary search with one trial per step, then one trial at its answer to verify
# it. Also against a binary search for the NDR alone, unverified (this script's figure before
# the exceed-ratio search), and a linear sweep. The search's time includes its unpaced
# ceiling trial per size.
parts = run['parts']
spent = sum(x['results']['duration_s'] for x in parts)
sizes = sorted({k['size_bytes'] for k in run['knees']})
naive = plain = linear = 0.0
# Where the search's seconds went, by trial length, and the precision each method reached:
# the search's (upper bound - answer) / upper bound, the naive search's last interval
# (range / 2^steps) over the answer. Both must be at most the precision asked.
print(f"precision asked {p['precision']*100:g} %; per size, the search's trial-seconds by trial length, and the precision reached")
for s in sizes:
    mine = [x for x in parts if x['workload']['frame_bytes'] == s]
    top = max(x['results']['tx_pps'] for x in mine)
    by = {}
    for x in mine:
        d = x['workload']['trial_s']
        n, secs = by.get(d, (0, 0.0))
        by[d] = (n + 1, secs + x['results']['duration_s'])
    print(f"  {s:>5} B: " + ", ".join(f"{n} x {d:g} s = {t:.1f} s" for d, (n, t) in sorted(by.items())))
    for k in run['knees']:
        if k['size_bytes'] != s or not k['rate_pps']:
            continue
        steps = (top - p['min_pps']) / (p['precision'] * k['rate_pps'])
        n = math.ceil(math.log2(max(steps, 1)))
        bisect = n * final
        naive += bisect + final
        reached = (k['upper_pps'] - k['rate_pps']) / k['upper_pps'] if k.get('upper_pps') else float('nan')
        naive_reached = (top - p['min_pps']) / 2**n / k['rate_pps']
        print(f"    loss <= {k['loss_tolerance']*100:g} %: search {reached*100:.2f} %, naive {naive_reached*100:.2f} % ({n} steps + a verifying trial)")
        if k['loss_tolerance'] == 0:
            plain += bisect
            linear += math.ceil(steps) * final
unverified = [k for k in run['knees'] if k['rate_pps'] and not k['verified']]
print(f"trial time: search {spent:.1f} s (wall {float(sys.argv[3]) - float(sys.argv[2]):.0f} s); "
      f"naive (binary search per tolerance + a verifying trial) {naive:.0f} s, ratio {spent/naive:.2f}; "
      f"binary search for the NDR alone {plain:.0f} s, ratio {spent/plain:.2f}; "
      f"linear sweep {linear:.0f} s, ratio {spent/linear:.3f}" if naive and plain else "no NDR to compare")
if unverified:
    print(f"UNVERIFIED: {len(unverified)} knees reported without a passing full-length trial")
if naive and plain:
    with open(sys.argv[4], 'a') as f:
        f.write(f"{spent} {naive} {plain} {len(unverified)}\n")
PY
done
python3 - "$out/ratios.txt" <<'PY'
import statistics, sys
rows = [[float(x) for x in l.split()] for l in open(sys.argv[1]) if l.strip()]
if rows:
    def show(name, xs):
        print(f"  {name}: median {statistics.median(xs):.2f} ({min(xs):.2f}..{max(xs):.2f})")
    print(f"search trial time over {len(rows)} rounds (each trial's line: bench/out/search/trials-N.txt), ratio against")
    show("the naive search (binary search per tolerance + a verifying trial)", [r[0] / r[1] for r in rows])
    show("a binary search for the NDR alone, unverified", [r[0] / r[2] for r in rows])
    print(f"  knees reported unverified: {int(sum(r[3] for r in rows))}")
PY
fi

[[ $parts == *3* ]] || exit 0
echo
echo "== 3. cross-check at the NDR for 1024-byte payloads (1070-byte frames), $rounds rounds"
rate=$(python3 -c 'import json,sys
k=[k for k in json.load(open(sys.argv[1]))["knees"] if k["size_bytes"]==1070 and k["loss_tolerance"]==0][0]
print(int(k["rate_pps"] or 0))' "$out/search.json")
if [ "$rate" -le 0 ]; then echo "no NDR found at 1070 B: nothing to cross-check"; exit 0; fi
secs=$(python3 -c "import sys; t=sys.argv[1]; print(float(t[:-2])/1000 if t.endswith('ms') else float(t.rstrip('s')))" "$trial")
iperf_loss=(); nc_loss=()
for r in $(seq 1 "$rounds"); do
  iperf3 -s -1 -p "$port" >/dev/null 2>&1 & servers+=($!)
  for i in $(seq 30); do ss -ltnH "sport = :$port" | grep -q . && break; sleep 0.1; done
  iperf3 -c 127.0.0.1 -p "$port" -u -l 1024 -b "$((rate * 1024 * 8))" -t "$secs" --json >"$out/iperf-$r.json" || true
  wait "${servers[-1]}" 2>/dev/null || true
  iperf_loss+=("$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["end"]["sum"]; print(e.get("lost_percent",0))' "$out/iperf-$r.json" 2>/dev/null || echo nan)")
  "$nc" run udp --size 1024 --rate "$((rate * 12 / 10))" --duration "$trial" --json -q --no-store >"$out/over-$r.json"
  nc_loss+=("$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print(100*r["lost_packets"]/max(r["tx_packets"],1))' "$out/over-$r.json")")
done
python3 - "$rate" "${iperf_loss[*]}" "${nc_loss[*]}" <<'PY'
import statistics, sys
rate = int(sys.argv[1])
il = [float(x) for x in sys.argv[2].split() if x != 'nan']
nl = [float(x) for x in sys.argv[3].split()]
print(f"netceil's NDR at 1024 B payload: {rate} pps")
print(f"iperf3 at that rate: loss median {statistics.median(il):.4f} % over {len(il)} runs {il}")
print(f"netceil at 1.2 x that rate: loss median {statistics.median(nl):.4f} % over {len(nl)} runs {nl}")
PY
