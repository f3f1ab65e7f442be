#!/usr/bin/env bash
# Attacks on the metrics endpoint (issue 23, item 5), against `netceil watch --metrics-listen`:
# each one by one client, with a legitimate scraper timing its scrapes meanwhile. As root,
# netceil listens in a network namespace of its own and the attacker comes from another,
# joined by a veth pair (the scraper from a second address there); without root, all of it is
# on 127.0.0.1.
#  1. pipeline: 5000 GET /metrics sent back to back on one connection, no answer read.
#  2. header:   one header line of up to 200 MB without a CRLF.
#  3. idle:     1000 connections opened and left silent.
# For each it prints "held" or "failed" with the figures: connections and netceil's threads,
# its VmRSS before, during (peak) and after, the bytes the attacker sent and was answered, the
# median and worst of 5 legitimate scrapes during the attack, and how long the endpoint kept
# the attacker's connections. Held means: every scrape answered (200 with an exposition)
# within 1 s, VmRSS grew less than 16 MB, threads grew by at most 4, at most 32 MB of a
# header line taken, every idle connection closed within 15 s.
# netceil is stopped by the PID this script started; everything is removed on exit or Ctrl-C.
#
# usage: bench/attack/metrics.sh          (NETCEIL=path/to/netceil to skip the release build)
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v python3 >/dev/null || { echo "bench/attack/metrics.sh needs python3" >&2; exit 1; }
if [ -z "${NETCEIL:-}" ]; then
  cargo build --release -q -p netceil
  NETCEIL=$(realpath "${CARGO_TARGET_DIR:-target}")/release/netceil
fi
tmp=$(mktemp -d)
pid=
S= C=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  for ns in $S $C; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# 1000 client sockets and the script's own.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

in_srv=() in_cli=() host=127.0.0.1 scraper_src=
if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null; then
  S=ncattack-metrics-$$-s C=ncattack-metrics-$$-c
  ip netns add "$S"
  ip netns add "$C"
  ip link add "ncm$$a" type veth peer name "ncm$$b"
  ip link set "ncm$$a" netns "$S"
  ip link set "ncm$$b" netns "$C"
  ip -n "$S" addr add 198.18.77.1/24 dev "ncm$$a"
  ip -n "$C" addr add 198.18.77.2/24 dev "ncm$$b"
  ip -n "$C" addr add 198.18.77.3/24 dev "ncm$$b"
  for ns in "$S" "$C"; do ip -n "$ns" link set lo up; done
  ip -n "$S" link set "ncm$$a" up
  ip -n "$C" link set "ncm$$b" up
  in_srv=(ip netns exec "$S") in_cli=(ip netns exec "$C") host=198.18.77.1 scraper_src=198.18.77.3
  echo "netceil in namespace $S ($host); attacker from $C (198.18.77.2), scraper from $scraper_src"
else
  echo "not root: netceil, attacker and scraper all on 127.0.0.1"
fi
# `ip netns exec` execs netceil, so $! is netceil's own PID.
NETCEIL_DB=$tmp/none.db "${in_srv[@]}" "$NETCEIL" watch -q --no-store --interval 500ms \
  --duration 600s --metrics-listen "$host:0" </dev/null >/dev/null 2>"$tmp/stderr" &
pid=$!
addr=
for _ in $(seq 100); do
  addr=$(grep -o "http://${host//./\\.}:[0-9]*" "$tmp/stderr" | head -1 | cut -d/ -f3 || true)
  [ -n "$addr" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/stderr" >&2; exit 1; }
  sleep 0.1
done
[ -n "$addr" ] || { echo "netceil never said where it serves" >&2; cat "$tmp/stderr" >&2; exit 1; }
echo "netceil watch (pid $pid) serving metrics at $addr"

rc=0
"${in_cli[@]}" python3 - "$pid" "$addr" "$scraper_src" <<'PY' || rc=$?
import socket, statistics, sys, threading, time

PID, ADDR = int(sys.argv[1]), sys.argv[2]
# The legitimate scraper's own source address, apart from the attacker's (none: any).
SCRAPER = (sys.argv[3], 0) if len(sys.argv) > 3 and sys.argv[3] else None
HOST, PORT = ADDR.rsplit(":", 1)[0], int(ADDR.rsplit(":", 1)[1])
MB = 1 << 20

def status(field):
    with open(f"/proc/{PID}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise SystemExit(f"no {field} in /proc/{PID}/status")

def scrape():
    """One legitimate scrape: seconds taken, or None if not answered with 200 within 5 s."""
    t = time.monotonic()
    try:
        with socket.create_connection((HOST, PORT), timeout=5, source_address=SCRAPER) as c:
            c.sendall(b"GET /metrics HTTP/1.0\r\nHost: x\r\nAccept: application/openmetrics-text;version=1.0.0\r\n\r\n")
            data = b""
            while True:
                d = c.recv(65536)
                if not d:
                    break
                data += d
    except OSError:
        return None
    ok = data.split(b" ", 2)[1:2] == [b"200"] and b"netceil_rows_total" in data
    return time.monotonic() - t if ok else None

def scrapes(n=5, gap=0.1):
    out = []
    for _ in range(n):
        out.append(scrape())
        time.sleep(gap)
    return out

def drain(s, limit_s):
    """Bytes readable from s until it closes or limit_s passes; and whether it closed."""
    s.settimeout(0.2)
    got, until = 0, time.monotonic() + limit_s
    while time.monotonic() < until:
        try:
            d = s.recv(1 << 16)
        except socket.timeout:
            continue
        except OSError:
            return got, True
        if not d:
            return got, True
        got += len(d)
    return got, False

class Peak:
    """VmRSS and Threads of netceil sampled every 50 ms on a thread of its own."""
    def __init__(self):
        self.rss, self.threads, self.stop = status("VmRSS"), status("Threads"), False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()
    def run(self):
        while not self.stop:
            self.rss = max(self.rss, status("VmRSS"))
            self.threads = max(self.threads, status("Threads"))
            time.sleep(0.05)
    def end(self):
        self.stop = True
        self.t.join()

def fmt_lat(lat):
    if any(x is None for x in lat):
        return f"{sum(x is None for x in lat)} of {len(lat)} scrapes unanswered in 5 s"
    return f"scrape median {statistics.median(lat) * 1000:.1f} ms, worst {max(lat) * 1000:.1f} ms"

def verdict(name, checks, figures):
    failed = [what for what, ok in checks if not ok]
    print(f"{name:9} {'held' if not failed else 'failed'}: " + "; ".join(figures))
    for what in failed:
        print(f"{'':9}   not met: {what}")
    return not failed

def settle():
    time.sleep(1.0)
    return status("VmRSS"), status("Threads")

results = []
base = scrapes()
rss0, thr0 = settle()
print(f"baseline  VmRSS {rss0} kB, {thr0} threads, {fmt_lat(base)}")

# 1. Pipelining without reading.
rss_b, thr_b = settle()
peak = Peak()
g = socket.socket()
g.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
g.connect((HOST, PORT))
one = f"GET /metrics HTTP/1.1\r\nHost: {ADDR}\r\n\r\n".encode()
data, sent = one * 5000, 0
g.setblocking(False)
until = time.monotonic() + 5
while sent < len(data) and time.monotonic() < until:
    try:
        sent += g.send(data[sent:])
    except BlockingIOError:
        time.sleep(0.01)
    except OSError:
        break
time.sleep(1.5)
lat = scrapes()
answered, closed = drain(g, 12)
g.close()
peak.end()
rss_a, thr_a = settle()
results.append(verdict("pipeline", [
    ("every scrape answered within 1 s", all(x is not None and x < 1 for x in lat)),
    ("VmRSS grew less than 16 MB", peak.rss - rss_b < 16 * 1024),
    ("threads grew by at most 4", peak.threads - thr_b <= 4),
], [f"{sent // len(one)} requests sent unread, {answered} bytes answered, "
    f"{'closed' if closed else 'left open'} by the endpoint",
    f"threads {thr_b}/{peak.threads}/{thr_a}", f"VmRSS {rss_b}/{peak.rss}/{rss_a} kB",
    fmt_lat(lat)]))

# 2. A header line of up to 200 MB without CRLF, and scrapes while it is sent.
rss_b, thr_b = settle()
peak = Peak()
h = socket.create_connection((HOST, PORT))
h.settimeout(2)
h.sendall(b"GET /metrics HTTP/1.1\r\nX-Junk: ")
chunk, taken = b"a" * (64 * 1024), 0
lat = []
def scrape_during():
    time.sleep(0.2)
    lat.extend(scrapes())
t = threading.Thread(target=scrape_during)
t.start()
until = time.monotonic() + 20
while taken < 200 * MB and time.monotonic() < until:
    try:
        taken += h.send(chunk)
    except OSError:
        break
t.join()
answered, closed = drain(h, 2)
h.close()
peak.end()
rss_a, thr_a = settle()
results.append(verdict("header", [
    ("every scrape answered within 1 s", all(x is not None and x < 1 for x in lat)),
    ("at most 32 MB of the line taken", taken < 32 * MB),
    ("VmRSS grew less than 16 MB", peak.rss - rss_b < 16 * 1024),
], [f"{taken / MB:.1f} MB taken before the endpoint stopped it, {answered} bytes answered",
    f"threads {thr_b}/{peak.threads}/{thr_a}", f"VmRSS {rss_b}/{peak.rss}/{rss_a} kB",
    fmt_lat(lat)]))

# 3. 1000 idle connections.
rss_b, thr_b = settle()
peak = Peak()
idle = []
for _ in range(1000):
    try:
        idle.append(socket.create_connection((HOST, PORT), timeout=1))
    except OSError:
        pass
started = time.monotonic()
time.sleep(0.5)
lat = scrapes()
open_ = list(idle)
while open_ and time.monotonic() - started < 15:
    still = []
    for s in open_:
        s.setblocking(False)
        try:
            if s.recv(64):
                still.append(s)
        except BlockingIOError:
            still.append(s)
        except OSError:
            pass
    open_ = still
    time.sleep(0.2)
kept = time.monotonic() - started
for s in idle:
    s.close()
peak.end()
rss_a, thr_a = settle()
results.append(verdict("idle", [
    ("every scrape answered within 1 s", all(x is not None and x < 1 for x in lat)),
    ("threads grew by at most 4", peak.threads - thr_b <= 4),
    ("every idle connection closed within 15 s", not open_),
    ("VmRSS grew less than 16 MB", peak.rss - rss_b < 16 * 1024),
], [f"{len(idle)} connections opened, {len(idle) - len(open_)} closed by the endpoint "
    f"within {kept:.1f} s",
    f"threads {thr_b}/{peak.threads}/{thr_a}", f"VmRSS {rss_b}/{peak.rss}/{rss_a} kB",
    fmt_lat(lat)]))

after = scrapes()
print(f"after     {fmt_lat(after)}")
sys.exit(0 if all(results) and all(x is not None for x in after) else 1)
PY
echo "netceil's log of the clients (rate-limited): $(grep -c 'metrics endpoint:' "$tmp/stderr" || true) lines"
grep 'metrics endpoint:' "$tmp/stderr" | head -12 | sed 's/^/  /' || true
exit $rc
