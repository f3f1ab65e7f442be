#!/usr/bin/env bash
# What the eBPF probes cost the workload they watch (issue 13). Over loopback only:
#  workloads: netceil's own UDP sender (64-byte payload, unpaced, pkt/s), iperf3 TCP (one
#  stream, Gbit/s: the peer), and a lock-heavy one (4 dd writers on one pipe, MB/s);
#  probe sets: none, locks without stacks, locks with 1-in-16 stacks, softirq+napi, offcpu,
#  all. The probes are attached by a background `netceil watch --probe SET` (stopped by its
#  PID), so each workload runs exactly as it would without them. softirq and napi run for every
#  packet, so netceil attaches them for a window of each sampling interval only (issue 25): the
#  line "probes attached: …" that each set printed is shown once, with its window. Every round runs each set
#  once per workload, in alternating order; the script prints median throughput ratios
#  against "none". Then kernel.bpf_stats_enabled is set for one pass with all probes (and
#  restored) to read each program's in-kernel cost per event.
#
# usage: bench/probe-overhead.sh [ROUNDS] [SECONDS]     (defaults: 5 rounds, 4 s per run)
#   SETS="none softirq,napi" WORKLOADS=udp bench/probe-overhead.sh 5 4   runs only those
#   (none is always run: it is what the ratios divide by).
#   PRIO=rt runs the workloads under SCHED_FIFO 1 (chrt): on a machine shared with builds this
#   stands in for an idle one, for the probed and the unprobed runs alike.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
secs=${2:-4}
out=bench/out/probes
mkdir -p "$out"
[ "$(id -u)" -eq 0 ] || { echo "bench/probe-overhead.sh needs root (eBPF)" >&2; exit 1; }
need=()
command -v iperf3 >/dev/null || need+=(iperf3)
command -v bpftool >/dev/null || need+=(bpftool)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
cargo build --release -q -p netceil
nc=$(realpath "${CARGO_TARGET_DIR:-target}")/release/netceil
export NETCEIL_DB=$(mktemp -d)/runs.db
port=$((20000 + RANDOM % 20000))
stats_orig=$(cat /proc/sys/kernel/bpf_stats_enabled)
watcher=""
server=""
shown=()
cleanup() {
  [ -z "$watcher" ] || kill -INT "$watcher" 2>/dev/null || true
  [ -z "$server" ] || kill "$server" 2>/dev/null || true
  wait 2>/dev/null || true
  echo "$stats_orig" >/proc/sys/kernel/bpf_stats_enabled
}
trap cleanup EXIT INT TERM

# Probes on: a watch in the background, until told to stop (by PID).
probes_on() { # SET
  watcher=""
  [ "$1" = none ] && return
  local set=$1 stacks=16
  case $1 in locks-nostack) set=locks; stacks=0 ;; locks-stack16) set=locks ;; esac
  "$nc" watch --probe "$set" --lock-stacks "$stacks" --duration 600 -q --no-store \
    >/dev/null 2>"$out/watch.err" &
  watcher=$!
  # Attached when it says so.
  for _ in $(seq 50); do
    if grep -q "probes attached" "$out/watch.err" 2>/dev/null; then
      [[ " ${shown[*]} " == *" $1 "* ]] || { shown+=("$1"); echo "$1: $(grep -o 'probes attached.*' "$out/watch.err")"; }
      return
    fi
    sleep 0.1
  done
  echo "the probes did not attach: $(cat "$out/watch.err")" >&2; exit 1
}
probes_off() {
  [ -z "$watcher" ] && return
  kill -INT "$watcher"; wait "$watcher" 2>/dev/null || true; watcher=""
}

pre=()
case ${PRIO:-} in
  rt) pre=(chrt -f 1) ;;
  "") ;;
  *) echo "bench/probe-overhead.sh: PRIO is rt or unset, not '$PRIO'" >&2; exit 2 ;;
esac
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); workloads ${PRIO:+under SCHED_FIFO 1 }as the scheduler places them"
udp() { "${pre[@]}" "$nc" run udp --size 64 --duration "$secs" --json -q --no-store | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"]["rx_app_pps"])'; }
tcp() {
  "${pre[@]}" iperf3 -c 127.0.0.1 -p "$port" -t "$secs" -J | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])'
}
pipe() {
  local n=60000 t0 t1
  t0=$(date +%s%N)
  sh -c "for i in 1 2 3 4; do dd if=/dev/zero bs=4096 count=$n status=none & done | dd of=/dev/null bs=4096 status=none"
  t1=$(date +%s%N)
  python3 -c "print(4*$n*4096/(($t1-$t0)/1e9))"
}

iperf3 -s -p "$port" -B 127.0.0.1 >/dev/null 2>&1 &
server=$!
sleep 0.5
read -r -a sets <<<"${SETS:-none locks-nostack locks-stack16 softirq,napi offcpu all}"
[[ " ${sets[*]} " == *" none "* ]] || sets=(none "${sets[@]}")
read -r -a workloads <<<"${WORKLOADS:-udp tcp pipe}"
: >"$out/raw.tsv"
for r in $(seq 1 "$rounds"); do
  # Alternate the order round by round so drift hits every set alike.
  order=("${sets[@]}")
  if [ $((r % 2)) -eq 0 ]; then order=($(printf '%s\n' "${sets[@]}" | tac)); fi
  for s in "${order[@]}"; do
    probes_on "$s"
    for w in "${workloads[@]}"; do
      v=$($w)
      printf '%s\t%s\t%s\t%s\n' "$r" "$s" "$w" "$v" >>"$out/raw.tsv"
    done
    probes_off
  done
  echo "round $r of $rounds done" >&2
done

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== in-kernel cost per event (kernel.bpf_stats_enabled=1 for one pass with all probes; softirq and napi count only the events of their windows)"
echo 1 >/proc/sys/kernel/bpf_stats_enabled
probes_on all
udp >/dev/null
pipe >/dev/null
bpftool prog show --json >"$out/progs.json"
stats_pid=$watcher
probes_off
echo "$stats_orig" >/proc/sys/kernel/bpf_stats_enabled

python3 - "$out/raw.tsv" "$out/progs.json" "${sets[*]}" "${workloads[*]}" "$stats_pid" <<'PY'
import json, sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
data = {}
for r, s, w, v in rows:
    data.setdefault((w, s), {})[int(r)] = float(v)
sets = sys.argv[3].split()
units = {"udp": "pkt/s (netceil UDP 64 B)", "tcp": "bit/s (iperf3 TCP)", "pipe": "B/s (4 dd writers, one pipe)"}
print(f"{'workload':<6} {'probes':<15} {'median':>14} {'ratio vs none (median of rounds)':>34} {'range':>16}")
for w in sys.argv[4].split():
    base = data[(w, "none")]
    for s in sets:
        d = data[(w, s)]
        ratios = [d[r] / base[r] for r in d if r in base and base[r] > 0]
        med = st.median(d.values())
        if s == "none":
            print(f"{w:<6} {s:<15} {med:>14.4g} {'1.000':>34} {'':>16}   {units[w]}")
        else:
            print(f"{w:<6} {s:<15} {med:>14.4g} {st.median(ratios):>34.3f} {min(ratios):>7.3f}..{max(ratios):<7.3f}")
ours = {"lock_begin", "lock_end", "softirq_entry", "softirq_exit", "napi_poll", "sched_switch", "sched_wakeup", "sched_wakeup_new", "sched_fork"}
print()
print(f"{'program':<18} {'events':>12} {'ns per event':>13}")
progs = json.load(open(sys.argv[2]))
# Only this script's watch: other netceil processes may have the same programs loaded (a
# bpftool without PID support lists no pids: then every program of ours is shown).
with_pids = any("pids" in p for p in progs)
for p in progs:
    mine = not with_pids or any(str(x.get("pid")) == sys.argv[5] for x in p.get("pids", []))
    if p.get("name") in ours and p.get("run_cnt") and mine:
        print(f"{p['name']:<18} {p['run_cnt']:>12} {p['run_time_ns']/p['run_cnt']:>13.0f}")
PY
