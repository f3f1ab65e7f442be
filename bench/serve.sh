#!/usr/bin/env bash
# `netceil serve`'s figures (issue 14), in three network namespaces this script makes: a (the
# client), b (the server), c (a stranger), each pair joined by a veth.
#  1. Amplification: c sends every kind of unsolicited datagram (junk, forged netceil data,
#     requests, bare and padded Fins, responses, Fin reports, 1400-byte junk) to the control
#     port and to a running test's data port, and unsolicited TCP (an unpadded hello, a padded
#     hello with another protocol, an HTTP request, a slow-loris) to the control port. Bytes
#     out of b towards c / bytes into b from c, read from b's veth counters (so ICMP and TCP
#     overhead count too), per kind.
#  2. The server's resident memory (VmRSS) idle, and with 1000 idle control connections, and
#     its CPU while idle (with and without them), from /proc/PID.
#  3. UDP 64-byte frames (18-byte payload), unpaced, 1 flow, SECONDS each, ROUNDS alternated
#     rounds: in-process on loopback in namespace a; through a serve on loopback in a (serve's
#     own cost: control connection, per-test socket, admission check); through serve from a to
#     b (the veth path too); and the peer, iperf3 -u -l 18 (unlimited rate) from a to b.
#     Medians and ratios.
# Every process is stopped by the PID this script started; the namespaces are deleted on exit.
#
# usage: bench/serve.sh [ROUNDS] [SECONDS]      (defaults: 3 rounds, 5 s)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-5}
[ "$(id -u)" -eq 0 ] || { echo "bench/serve.sh needs root (network namespaces)" >&2; exit 1; }
need=()
command -v iperf3 >/dev/null || need+=(iperf3)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
cargo build --release -q -p netceil
nc=$(realpath "${CARGO_TARGET_DIR:-target}")/release/netceil
tmp=$(mktemp -d)
export NETCEIL_DB=$tmp/runs.db
head -c 32 /dev/urandom | base64 >"$tmp/key"
A=ncbench-serve-$$-a B=ncbench-serve-$$-b C=ncbench-serve-$$-c
pids=()
cleanup() {
  [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  for ns in $A $B $C; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
for ns in $A $B $C; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip link add nsa0 netns $A type veth peer name nsb0 netns $B
ip link add nsc0 netns $C type veth peer name nsb1 netns $B
ip -n $A addr add 198.18.0.1/24 dev nsa0
ip -n $B addr add 198.18.0.2/24 dev nsb0
ip -n $C addr add 198.18.1.1/24 dev nsc0
ip -n $B addr add 198.18.1.2/24 dev nsb1
for x in "$A nsa0" "$B nsb0" "$C nsc0" "$B nsb1"; do set -- $x; ip -n "$1" link set "$2" up; done
ip -n $C route add 198.18.0.0/24 via 198.18.1.2
ctl=198.18.0.2:5301

# Starts serve in b with extra flags; waits until it listens; sets $serve_pid.
start_serve() {
  ip netns exec $B "$nc" serve --listen $ctl --key-file "$tmp/key" --json "$@" \
    >"$tmp/serve.json" 2>"$tmp/serve.log" &
  serve_pid=$!
  pids+=($serve_pid)
  for _ in $(seq 100); do grep -q listening "$tmp/serve.log" 2>/dev/null && return; sleep 0.05; done
  echo "serve did not start: $(cat "$tmp/serve.log")" >&2; exit 1
}
stop_serve() {
  kill -INT "$serve_pid"; wait "$serve_pid" || true
}

echo "== 1. amplification: bytes out of b towards c / bytes into b from c (b's veth nsb1)"
start_serve --step-timeout 2s
# A long, slow test from a, so a data port is open while c probes it.
ip netns exec $A "$nc" run udp --to $ctl --key-file "$tmp/key" --rate 1k --duration 40 \
  -q --no-store >/dev/null 2>&1 &
client=$!
pids+=($client)
for _ in $(seq 100); do grep -q "data port" "$tmp/serve.log" && break; sleep 0.05; done
dport=$(sed -n 's/.*data port \([0-9]*\).*/\1/p' "$tmp/serve.log" | head -1)
ip netns exec $C python3 - "$B" 198.18.0.2 5301 "$dport" <<'PY'
import socket, struct, subprocess, sys, time, json
ns, host, cport, dport = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def counters():
    out = subprocess.run(["ip", "-n", ns, "-j", "-s", "link", "show", "nsb1"],
                         capture_output=True, text=True, check=True).stdout
    s = json.loads(out)[0]["stats64"]
    return s["rx"]["bytes"], s["tx"]["bytes"]
def hdr(kind, run_id, n):
    d = bytearray(max(n, 18)); d[0:2] = struct.pack("<H", 0x4E43); d[2] = (1 << 4) | kind
    d[4:6] = struct.pack("<H", run_id); return bytes(d)
kinds = [("junk 64 B", b"x" * 64), ("forged data 64 B", hdr(0, 1, 64)),
         ("forged request 64 B", hdr(1, 2, 64)), ("bare Fin 26 B", hdr(3, 3, 26)),
         ("padded Fin 106 B", hdr(3, 4, 106)), ("response 18 B", hdr(2, 5, 18)),
         ("Fin report 106 B", hdr(4, 6, 106)), ("junk 1400 B", b"y" * 1400)]
N = 2000
print(f"{'datagram':<22} {'port':<8} {'bytes in':>10} {'bytes out':>10} {'factor':>7}")
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for name, d in kinds:
    for port, pname in ((cport, "control"), (dport, "data")):
        rx0, tx0 = counters()
        for _ in range(N):
            u.sendto(d, (host, port))
        time.sleep(0.3)
        rx1, tx1 = counters()
        print(f"{name:<22} {pname:<8} {rx1-rx0:>10} {tx1-tx0:>10} {(tx1-tx0)/max(rx1-rx0,1):>7.3f}")
def tcp_case(name, payload, wait):
    rx0, tx0 = counters()
    for _ in range(50):
        s = socket.create_connection((host, cport))
        if payload: s.sendall(payload)
        s.settimeout(wait)
        try:
            while s.recv(65536): pass
        except OSError: pass
        s.close()
    time.sleep(0.3)
    rx1, tx1 = counters()
    print(f"{name:<22} {'control':<8} {rx1-rx0:>10} {tx1-tx0:>10} {(tx1-tx0)/max(rx1-rx0,1):>7.3f}   (TCP, 50 connections, headers included)")
def frame(o):
    b = json.dumps(o).encode(); return struct.pack(">I", len(b)) + b
hello = lambda proto, pad: frame({"type": "hello", "proto": proto, "netceil": "9", "nonce": "00" * 16, "pad": "-" * pad})
tcp_case("unpadded hello", hello(1, 0), 3)
tcp_case("skewed hello", hello(99, 300), 3)
tcp_case("HTTP request", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 3)
PY
kill "$client" 2>/dev/null || true
wait "$client" 2>/dev/null || true
stop_serve
python3 - "$tmp/serve.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
print(f"server totals: control-port strays {t['port_strays']} read + {t['port_stray_drops']} dropped by the kernel, test-port strays {t['test_strays']}, "
      f"pre-authentication bytes out/in {t['preauth_bytes_out']}/{t['preauth_bytes_in']} "
      f"= {t['preauth_bytes_out']/max(t['preauth_bytes_in'],1):.3f}")
PY

echo
echo "== 2. resident memory and idle CPU, 1000 idle control connections"
start_serve --max-clients 2000 --step-timeout 120s
sleep 1
rss() { awk '/VmRSS/ {print $2}' /proc/$serve_pid/status; }
ticks() { awk '{print $14 + $15}' /proc/$serve_pid/stat; }
hz=$(getconf CLK_TCK)
r0=$(rss); t0=$(ticks); sleep 10; t1=$(ticks)
echo "idle, no connections: VmRSS ${r0} KiB, CPU $(python3 -c "print(f'{100*($t1-$t0)/$hz/10:.2f}')") % of a core over 10 s"
ulimit -n 4096
ip netns exec $A python3 - <<'PY' &
import socket, time
conns = [socket.create_connection(("198.18.0.2", 5301)) for _ in range(1000)]
time.sleep(25)
PY
holder=$!
pids+=($holder)
sleep 4
r1=$(rss); t0=$(ticks); sleep 10; t1=$(ticks)
echo "1000 idle connections: VmRSS ${r1} KiB (+$((r1 - r0)) KiB, $(( (r1 - r0) * 1024 / 1000 )) B each), CPU $(python3 -c "print(f'{100*($t1-$t0)/$hz/10:.2f}')") % of a core over 10 s"
kill "$holder" 2>/dev/null || true; wait "$holder" 2>/dev/null || true
stop_serve

echo
echo "== 3. UDP 64-byte frames, unpaced, 1 flow, ${secs} s, ${rounds} alternated rounds (pps received)"
start_serve --max-duration 1h
ip netns exec $A "$nc" serve --listen 127.0.0.1:5301 --json >/dev/null 2>"$tmp/serve-lo.log" &
serve_lo=$!
pids+=($serve_lo)
ip netns exec $B iperf3 -s -B 198.18.0.2 -p 5202 >/dev/null 2>&1 &
iperf=$!
pids+=($iperf)
sleep 0.5
for r in $(seq "$rounds"); do
  ip netns exec $A "$nc" run udp --size 18 --duration "$secs" --json -q --no-store \
    | python3 -c "import json,sys; print('inproc', json.load(sys.stdin)['results']['rx_app_pps'])" >>"$tmp/pps"
  ip netns exec $A "$nc" run udp --size 18 --duration "$secs" --to 127.0.0.1:5301 --json -q --no-store \
    | python3 -c "import json,sys; print('serve-lo', json.load(sys.stdin)['results']['rx_app_pps'])" >>"$tmp/pps"
  ip netns exec $A "$nc" run udp --size 18 --duration "$secs" --to $ctl --key-file "$tmp/key" --json -q --no-store \
    | python3 -c "import json,sys; print('serve', json.load(sys.stdin)['results']['rx_app_pps'])" >>"$tmp/pps"
  ip netns exec $A iperf3 -c 198.18.0.2 -p 5202 -u -b 0 -l 18 -t "$secs" -J 2>/dev/null \
    | python3 -c "
import json,sys; e=json.load(sys.stdin)['end']['sum']
print('iperf3', (e['packets'] - e['lost_packets']) / e['seconds'])" >>"$tmp/pps"
done
kill "$iperf" "$serve_lo" 2>/dev/null || true; wait "$iperf" "$serve_lo" 2>/dev/null || true
stop_serve
python3 - "$tmp/pps" <<'PY'
import statistics, sys
v = {}
for line in open(sys.argv[1]):
    k, x = line.split(); v.setdefault(k, []).append(float(x))
m = {k: statistics.median(x) for k, x in v.items()}
for k in ("inproc", "serve-lo", "serve", "iperf3"):
    print(f"{k:<8} median {m.get(k, 0)/1e3:8.1f} kpps   rounds: {' '.join(f'{x/1e3:.0f}k' for x in v.get(k, []))}")
print(f"ratio serve on loopback / in-process (serve's own cost): {m['serve-lo']/m['inproc']:.2f}")
print(f"ratio serve a→b / in-process (serve and the veth path):  {m['serve']/m['inproc']:.2f}")
print(f"ratio serve / iperf3:     {m['serve']/m['iperf3']:.2f}")
PY
