#!/usr/bin/env bash
# Attacks on `netceil serve` (issue 23), each from a network namespace this script makes,
# against a keyed serve in another, while a legitimate keyed client in a third runs tests:
#  1. idle flood: CONNS idle TCP connections to the control port, each reopened as the server
#     closes it, for SECONDS;
#  2. slow loris: CONNS connections each sending a padded hello one byte a second, reopened
#     as they close;
#  3. stalled handshakes: CONNS connections that send a whole hello, read the challenge and
#     say nothing more, reopened as they close;
#  4. stray and forged datagrams: junk, forged netceil data, requests, Fins and reports to the
#     control port, and to the data port of a test running meanwhile.
# For each it prints "held" or "failed" and the figures: handshake slots the attacker's host
# held (serve's own peak, and `ss` in the server's namespace halfway through: ESTABLISHED
# connections from the attacker, the kernel's accept queue included), bytes answered to the
# attacker against bytes it sent, serve's resident memory (VmRSS) before / during / after, and
# the legitimate client's three keyed tests during the attack (succeeded, wall time each; a
# baseline without attack first).
# Held means: the three keyed tests succeeded; the attacker's host held no more handshake
# slots than one host may (32); nothing was answered to the attacker beyond the challenges
# its own hellos paid for (none to an idle flood or to datagrams); serve's memory grew by
# less than 32 MiB.
# Every process is stopped by the PID this script started; the namespaces and files are
# removed on exit, error and Ctrl-C.
#
# usage: bench/attack/serve.sh [SECONDS] [CONNS]      (defaults: 15 s, 2000 connections)
#        NETCEIL=path/to/netceil to use a built binary (default: cargo build --release)
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-15}
conns=${2:-2000}
[ "$(id -u)" -eq 0 ] || { echo "bench/attack/serve.sh needs root (network namespaces)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench/attack/serve.sh needs python3" >&2; exit 1; }
if [ -z "${NETCEIL:-}" ]; then
  cargo build --release -q -p netceil
  NETCEIL=$(realpath "${CARGO_TARGET_DIR:-target}")/release/netceil
fi
nc=$(realpath "$NETCEIL")
tmp=$(mktemp -d)
head -c 32 /dev/urandom | base64 >"$tmp/key"
A=ncattack-serve-$$-a B=ncattack-serve-$$-b C=ncattack-serve-$$-c
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for ns in $A $B $C; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for ns in $A $B $C; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip link add nka0 netns $A type veth peer name nkb0 netns $B
ip link add nkc0 netns $C type veth peer name nkb1 netns $B
ip -n $A addr add 198.18.0.1/24 dev nka0
ip -n $B addr add 198.18.0.2/24 dev nkb0
ip -n $C addr add 198.18.1.1/24 dev nkc0
ip -n $B addr add 198.18.1.2/24 dev nkb1
for x in "$A nka0" "$B nkb0" "$C nkc0" "$B nkb1"; do set -- $x; ip -n "$1" link set "$2" up; done
ip -n $C route add 198.18.0.0/24 via 198.18.1.2
ctl_ip=198.18.0.2
ctl_port=5301
ctl=$ctl_ip:$ctl_port
attacker=198.18.1.1
per_host_bound=32

# The attacker: python3, so the attack does not depend on netceil's own code.
cat >"$tmp/attack.py" <<'PY'
import json, selectors, socket, struct, sys, time
mode, host, port, n, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
end = time.monotonic() + secs
MAX_OPENS = 2_000_000
st = dict(opened=0, closed_by_server=0, connect_failures=0, bytes_sent=0, bytes_answered=0)

def hello():
    body = json.dumps({"type": "hello", "proto": 1, "netceil": "0.0.0-attack",
                       "nonce": "00112233445566778899aabbccddeeff", "pad": "-" * 200}).encode()
    return struct.pack(">I", len(body)) + body

HELLO = hello()

def tcp():
    sel = selectors.DefaultSelector()
    state = {}  # socket -> bytes of the hello sent

    def open_one():
        if st["opened"] >= MAX_OPENS:
            return
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect((host, port))
        except BlockingIOError:
            pass
        except OSError:
            st["connect_failures"] += 1
            s.close()
            return
        st["opened"] += 1
        state[s] = 0
        sel.register(s, selectors.EVENT_READ)

    def send(s, data):
        try:
            k = s.send(data)
            st["bytes_sent"] += k
            return k
        except OSError:
            return 0

    for _ in range(n):
        open_one()
    last_drip = time.monotonic()
    while time.monotonic() < end:
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            try:
                d = s.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                d = b""
            if d:
                st["bytes_answered"] += len(d)
                continue
            sel.unregister(s)
            del state[s]
            s.close()
            st["closed_by_server"] += 1
            open_one()
        now = time.monotonic()
        if mode == "loris" and now - last_drip >= 1.0:
            # One more byte of the hello on each connection, every second.
            last_drip = now
            for s, k in list(state.items()):
                if k < len(HELLO):
                    state[s] = k + send(s, HELLO[k:k + 1])
        elif mode == "stall":
            # The whole hello once (when the connect is through); then silence.
            for s, k in list(state.items()):
                if k == 0:
                    state[s] = send(s, HELLO)
    for s in list(state):
        s.close()

def forged(kind, run_id, length):
    d = bytearray(max(length, 18))
    d[0:2] = struct.pack("<H", 0x4E43)
    d[2] = (1 << 4) | kind
    d[4:6] = struct.pack("<H", run_id)
    return bytes(d)

def udp():
    targets = [(host, port)] + [(host, int(p)) for p in sys.argv[6:]]
    kinds = [b"not netceil", forged(0, 1, 64), forged(1, 2, 64), forged(3, 3, 26),
             forged(3, 4, 106), forged(2, 5, 18), forged(4, 6, 106), bytes(1400)]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.setblocking(False)
    rounds = 0
    while time.monotonic() < end and rounds < n:
        for t in targets:
            for d in kinds:
                try:
                    st["bytes_sent"] += u.sendto(d, t)
                    st["opened"] += 1
                except OSError:
                    st["connect_failures"] += 1
        while True:
            try:
                st["bytes_answered"] += len(u.recv(65536))
            except OSError:
                break
        rounds += 1
        time.sleep(0.001)
    time.sleep(0.5)
    while True:
        try:
            st["bytes_answered"] += len(u.recv(65536))
        except OSError:
            break

udp() if mode == "udp" else tcp()
print(json.dumps(st))
PY

# serve in b, with its totals as JSON at the end; sets $serve_pid.
start_serve() {
  ip netns exec $B "$nc" serve --listen $ctl --key-file "$tmp/key" --json \
    >"$tmp/serve.json" 2>"$tmp/serve.log" &
  serve_pid=$!
  pids+=("$serve_pid")
  for _ in $(seq 100); do grep -q listening "$tmp/serve.log" 2>/dev/null && return; sleep 0.05; done
  echo "serve did not start: $(cat "$tmp/serve.log")" >&2; exit 1
}
stop_serve() {
  kill -INT "$serve_pid" 2>/dev/null || true
  wait "$serve_pid" || true
}
rss() { awk '/^VmRSS/ {print $2}' "/proc/$serve_pid/status" 2>/dev/null || echo 0; }
# Three keyed tests from a, one after another: "ok/failed seconds" per test in $tmp/legit.
legit() {
  : >"$tmp/legit"
  for i in 1 2 3; do
    local t0 t1 ok
    t0=$(date +%s.%N)
    if timeout 30 ip netns exec $A "$nc" run udp --to $ctl --key-file "$tmp/key" --rate 5k \
      --duration 1 -q --no-store --json >"$tmp/run$i.json" 2>"$tmp/run$i.err"; then ok=ok; else ok=failed; fi
    t1=$(date +%s.%N)
    echo "$ok $(python3 -c "print(f'{$t1-$t0:.2f}')")" >>"$tmp/legit"
  done
}
established_from_attacker() {
  ip netns exec $B ss -Htn state established "( sport = :$ctl_port )" dst $attacker | wc -l
}

echo "== baseline: three keyed tests from a, no attack"
start_serve
legit
echo "   $(paste -sd' ' "$tmp/legit" | sed 's/ok /ok in /g; s/failed /FAILED after /g') s"
stop_serve

# One attack: its name and mode (idle, loris, stall, udp). For udp, a slow keyed test runs
# first, and the datagrams go to its data port too (read from serve's log).
attack() {
  local name=$1 mode=$2 n=$conns ports=() long=
  echo "== $name"
  start_serve
  if [ "$mode" = udp ]; then
    n=5000 # rounds of every kind of datagram
    timeout $((secs + 30)) ip netns exec $A "$nc" run udp --to $ctl --key-file "$tmp/key" \
      --rate 1k --duration $((secs + 5)) -q --no-store >/dev/null 2>&1 &
    long=$!
    pids+=("$long")
    for _ in $(seq 100); do grep -q "data port" "$tmp/serve.log" && break; sleep 0.05; done
    ports=("$(sed -n 's/.*data port \([0-9]*\).*/\1/p' "$tmp/serve.log" | head -1)")
  fi
  sleep 0.5
  local before during after mid_est apid lpid
  before=$(rss)
  timeout $((secs + 20)) ip netns exec $C python3 "$tmp/attack.py" "$mode" $ctl_ip $ctl_port \
    "$n" "$secs" "${ports[@]}" >"$tmp/attack.json" &
  apid=$!
  pids+=("$apid")
  sleep 3
  legit &
  lpid=$!
  pids+=("$lpid")
  sleep $(((secs - 3) / 2))
  during=$(rss)
  mid_est=$(established_from_attacker)
  wait "$lpid" || true
  wait "$apid" || true
  [ -z "$long" ] || wait "$long" || true
  sleep 1
  after=$(rss)
  stop_serve
  python3 - "$tmp/attack.json" "$tmp/serve.json" "$tmp/legit" "$tmp/serve.log" \
    "$before" "$during" "$after" "$mid_est" "$per_host_bound" "$attacker" "$mode" <<'PY'
import json, sys
attack, totals, legit, log = sys.argv[1:5]
before, during, after, mid, bound = (int(x) for x in sys.argv[5:10])
attacker, mode = sys.argv[10], sys.argv[11]
a = json.load(open(attack))
t = json.load(open(totals))
runs = [l.split() for l in open(legit) if l.strip()]
lines = [l for l in open(log) if attacker in l]
peak = t["peaks"]["handshakes_one_host"]
ok = sum(1 for r in runs if r[0] == "ok")
# An idle flood and datagrams pay for no answer; a hello pays for a challenge no longer
# than itself.
answered_ok = a["bytes_answered"] == 0 if mode in ("idle", "udp") else a["bytes_answered"] <= a["bytes_sent"]
checks = {
    "keyed tests 3 of 3": ok == 3,
    f"attacker's host held <= {bound} slots": peak <= bound,
    "answers within what was paid for": answered_ok,
    "memory grew < 32 MiB": max(during, after) - before < 32 * 1024,
}
if mode == "udp":
    print(f"   attacker: {a['opened']} datagrams sent, {a['connect_failures']} not sent; "
          f"{a['bytes_sent']} B sent, {a['bytes_answered']} B answered")
    print(f"   counted by serve: {t['port_strays']} strays on the control port "
          f"(+{t['port_stray_drops']} dropped by the kernel), {t['test_strays']} on the test's port")
else:
    print(f"   attacker: {a['opened']} connections opened, {a['closed_by_server']} closed by serve, "
          f"{a['connect_failures']} failed; {a['bytes_sent']} B sent, {a['bytes_answered']} B answered")
    print(f"   handshake slots: the attacker's host held at most {peak} (serve's count; bound {bound}), "
          f"all hosts {t['peaks']['handshakes']}; {mid} ESTABLISHED from it halfway (ss, accept queue included); "
          f"{t['evicted']} displaced, {t['timed_out']} timed out, {t['closed_before_auth']} closed before authenticating")
print(f"   serve VmRSS: {before} KiB before, {during} KiB during, {after} KiB after")
print("   keyed tests during the attack: " + ", ".join(f"{r[0]} in {r[1]} s" for r in runs))
print(f"   serve's log lines naming {attacker}: {len(lines)}")
failed = [k for k, v in checks.items() if not v]
print(f"   {'held' if not failed else 'FAILED: ' + '; '.join(failed)}")
PY
}

attack "1. idle flood: $conns idle connections from c, reopened as they close, ${secs} s" idle
attack "2. slow loris: $conns connections from c sending a hello one byte a second, ${secs} s" loris
attack "3. stalled handshakes: $conns connections from c that stop after the challenge, ${secs} s" stall
attack "4. stray and forged datagrams from c to the control port and a running test's data port, ${secs} s" udp
