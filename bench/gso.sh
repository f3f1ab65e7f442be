#!/usr/bin/env bash
# UDP GSO/GRO at 1400-byte payloads on loopback, alternating rounds: netceil without GSO,
# netceil --gso, netceil --gso --gro, and the peers: bench/udp_gso_floor.c (the kernel alone,
# nothing per datagram but counting) with GSO only and with GSO+GRO, and iperf3 --gsro when
# the installed iperf3 has it (3.20 on). Every side asks for the same receive buffer. Prints
# medians, ranges and the ratios of datagrams received per second: --gso against the GSO-only
# floor, --gso --gro against iperf3 --gsro (or, without it, the GSO+GRO floor).
#
# usage: bench/gso.sh [ROUNDS] [SECONDS]      (defaults: 5 rounds of 3 s each)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
secs=${2:-3}
size=1400
rcvbuf=$((8 << 20))
out=bench/out
mkdir -p "$out"

need=()
command -v iperf3 >/dev/null || need+=(iperf3)
command -v cc >/dev/null || need+=(gcc libc6-dev)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
cargo build --release -q -p netceil
nc=${CARGO_TARGET_DIR:-target}/release/netceil

peer=floor
iperf3 --help 2>&1 | grep -q -- '--gsro' && peer=iperf3
cc -O2 -pthread -o "$out/udp_gso_floor" bench/udp_gso_floor.c
# SO_RCVBUFFORCE needs root; otherwise both sides are clamped to net.core.rmem_max alike.
force=()
[ "$(id -u)" -eq 0 ] && force=(--rcvbuf-force)

port=$((20000 + RANDOM % 20000))
servers=()
cleanup() {
  [ ${#servers[@]} -eq 0 ] || kill "${servers[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

rx_pps() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"]["rx_app_pps"])' "$1"; }
nc_run() { # nc_run NAME FLAGS...: one netceil run, its received datagrams/s on stdout
  local name=$1; shift
  "$nc" run udp --size "$size" --duration "$secs" --rcvbuf "$rcvbuf" "${force[@]}" "$@" \
    --json -q --no-store >"$out/gso_$name.json"
  rx_pps "$out/gso_$name.json"
}
floor_run() { # floor_run GRO(0|1)
  "$out/udp_gso_floor" "$size" "$secs" "$port" "$1" "$rcvbuf" \
    | sed -E 's/.*received_pps=([0-9]+).*/\1/'
}
iperf_run() {
  iperf3 -s -p "$port" -1 >/dev/null 2>&1 & servers=($!); sleep 0.3
  iperf3 -c 127.0.0.1 -p "$port" -u -l "$size" -b 0 --gsro -w "$rcvbuf" -t "$secs" -J \
    >"$out/gso_iperf.json" || true
  wait "${servers[@]}" || true; servers=()
  python3 -c "
import json; d=json.load(open('$out/gso_iperf.json'))['end']['sum']
print((d['packets']-d['lost_packets'])/d['seconds'])"
}

declare -a plain gso gsogro floor1 floor2 iperfv
for r in $(seq 1 "$rounds"); do
  echo "round $r/$rounds" >&2
  plain+=("$(nc_run plain)")
  gso+=("$(nc_run gso --gso)")
  floor1+=("$(floor_run 0)")
  gsogro+=("$(nc_run gsogro --gso --gro)")
  floor2+=("$(floor_run 1)")
  [ "$peer" = iperf3 ] && iperfv+=("$(iperf_run)")
done

python3 - "$peer" "$(uname -r)" "$(nproc)" <<PY
import statistics as st, sys
peer, kernel, cpus = sys.argv[1:4]
runs = {
    "netceil": "${plain[*]}", "netceil --gso": "${gso[*]}",
    "netceil --gso --gro": "${gsogro[*]}",
    "floor GSO": "${floor1[*]}", "floor GSO+GRO": "${floor2[*]}",
    "iperf3 --gsro": "${iperfv[*]:-}",
}
vals = {k: [float(x) for x in v.split()] for k, v in runs.items() if v.split()}
print(f"UDP $size B on loopback, {len(next(iter(vals.values())))} alternated rounds of ${secs} s; kernel {kernel}, {cpus} CPUs")
print(f"{'':28} {'median Mdgram/s':>16} {'range':>17}")
for k, v in vals.items():
    print(f"{k:28} {st.median(v)/1e6:16.3f} {min(v)/1e6:8.3f}-{max(v)/1e6:<8.3f}")
m = {k: st.median(v) for k, v in vals.items()}
peer = "iperf3 --gsro" if "iperf3 --gsro" in vals else "floor GSO+GRO"
def ratio(a, b, goal):
    per = [x / y for x, y in zip(vals[a], vals[b])]
    print(f"{a} / {b}: median {m[a]/m[b]:.2f} x (per round {min(per):.2f}-{max(per):.2f}; goal >= {goal})")
ratio("netceil --gso", "netceil", 2)
ratio("netceil --gso --gro", "netceil", 2)
ratio("netceil --gso", "floor GSO", 0.95)
ratio("netceil --gso --gro", peer, 0.95)
PY
