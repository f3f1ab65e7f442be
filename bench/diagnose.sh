#!/usr/bin/env bash
# The analyzer's own induced-condition suite. Each case induces one condition on this machine
# (a sysctl, a qdisc in a namespace pair, CPU hogs, a timer or IPI flood, a spinning program),
# runs netceil (its own load, or `watch` around a program someone else wrote), restores the
# machine, and scores the top finding's cause against the causes that are true by mechanism.
# Prints per case and repeat the verdict and its runner-up, then the confusion matrix, the
# accuracy, the false-claim rate on healthy controls and the agreement over repeats.
#
# Cases come in sets, each scored on its own: `base` (the cases below), and any other set
# in bench/diagnose/cases/SET.sh (`train`: the cases the analyzer is tuned on; `heldout`:
# cases kept from whoever tunes it, to judge it on conditions it never saw). A set file
# defines `case_NAME OUTFILE` functions like the ones below, and two variables: EXPECT_SET
# (lines `name|causes that count as right|why, by mechanism`) and HEALTHY_SET (the names of
# its healthy controls). It may use this script's helpers (set_sysctl, started, case_check, ns_pair,
# ns_routed, serve_in_b, wait_listen, remember_sysfs, remember_cgroup, $nc, $bin, $port).
# A missing set file is skipped with a message.
#
# With --confirm, every `netceil run` of a case runs with --confirm (the verdict tested by an
# A/B experiment on netceil's own workload); the cases are scored on the verdict after it, and
# a table gives per case the verdict before, the change, what moved and the verdict after.
#
# usage: bench/diagnose.sh [--set base|train|heldout|confirm2|confirm3|confirm3h|batch6|batch6h|batch7|batch7h|batch8|batch8h|all] [--repeats N] [--only REGEX] [--nc PATH] [--out DIR] [--confirm]
#        bench/diagnose.sh --cleanup      # restore after a kill -9 (reads the state file)
#
# Root only. Traffic goes to loopback and to the namespaces the script makes (198.18.0.0/30,
# the benchmarking range). Every load is bounded in time; every process is stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."

STATE=/tmp/netceil-diagnose.state
repeats=3 only=. nc="" out=bench/out/diagnose set=all confirm=0
while [ $# -gt 0 ]; do
  case "$1" in
    --set) set=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --nc) nc=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --cleanup) cleanup_only=1; shift ;;
    --confirm) confirm=1; shift ;;
    *) echo "usage: $0 [--set base|train|heldout|confirm2|confirm3|confirm3h|batch6|batch6h|batch7|batch7h|batch8|batch8h|all] [--repeats N] [--only REGEX] [--nc PATH] [--out DIR] [--confirm] | --cleanup" >&2; exit 2 ;;
  esac
done
case "$set" in
  all) sets="base train heldout confirm2 confirm3 confirm3h batch6 batch6h batch7 batch7h batch8 batch8h" ;;
  base) sets=base ;;
  *) [ -f "bench/diagnose/cases/$set.sh" ] ||
       { echo "--set: base, all, or a set in bench/diagnose/cases/ ($(cd bench/diagnose/cases && ls *.sh | sed 's/\.sh$//' | tr '\n' ' ')); got '$set'" >&2; exit 2; }
     sets=$set ;;
esac

# --- restoring the machine -------------------------------------------------------------------
# The state file lists what to undo, one line each: `pid N`, `netns NAME`, `sysctl KEY VALUE`,
# `sysfs PATH VALUE` (a /sys or /proc knob and its value before), `cgroup DIR` (a cgroup made
# for a case: its tasks are stopped by PID first, then it is removed).
# It is written before each change, so a kill -9 leaves enough to undo it with --cleanup.
cleanup() {
  [ -f "$STATE" ] || return 0
  local kind a b t
  while read -r kind a b; do
    [ "$kind" = pid ] && kill "$a" 2>/dev/null || true
  done <"$STATE"
  while read -r kind a b; do
    case "$kind" in
      netns) ip netns del "$a" 2>/dev/null || true ;;
      sysctl) sysctl -qw "$a=$b" >/dev/null 2>&1 || true ;;
      sysfs) echo "$b" >"$a" 2>/dev/null || true ;;
      cgroup)
        if [ -d "$a" ]; then
          for t in $(cat "$a/cgroup.procs" 2>/dev/null); do kill "$t" 2>/dev/null || true; done
          # (cgroup files have no size: read them to see whether the tasks are gone)
          for t in $(seq 50); do [ -n "$(cat "$a/cgroup.procs" 2>/dev/null)" ] || break; sleep 0.1; done
          rmdir "$a" 2>/dev/null || echo "could not remove $a: $(cat "$a/cgroup.procs" 2>/dev/null | tr '\n' ' ')" >&2
        fi ;;
    esac
  done <"$STATE"
  rm -f "$STATE"
}
if [ "${cleanup_only:-0}" = 1 ]; then cleanup; echo "restored"; exit 0; fi
if [ "$(id -u)" -ne 0 ]; then echo "diagnose.sh needs root (sysctls, namespaces, qdiscs)" >&2; exit 2; fi
[ -f "$STATE" ] && { echo "an earlier run left $STATE: restoring it first" >&2; cleanup; }
trap cleanup EXIT
trap 'exit 130' INT TERM

set_sysctl() { # KEY VALUE: remembers the original once
  grep -q "^sysctl $1 " "$STATE" 2>/dev/null || echo "sysctl $1 $(sysctl -n "$1")" >>"$STATE"
  sysctl -qw "$1=$2"
}
started() { echo "pid $1" >>"$STATE"; }

# For set files. SET OUTFILE PYTHON-EXPR over d (the run) and r (its results): the condition
# the case induces took; otherwise it says which check failed, prefixed by SET, and returns 1.
case_check() {
  python3 - "$2" "$3" <<'PY' || { echo "$1: check failed on $2: $3" >&2; return 1; }
import json, sys
d = json.load(open(sys.argv[1]))
if isinstance(d, list):
    d = d[0]
r = d.get("results") or {}
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
remember_sysfs() { # PATH: remembers its value once, before a case writes it
  grep -q "^sysfs $1 " "$STATE" 2>/dev/null || echo "sysfs $1 $(cat "$1")" >>"$STATE"
}
remember_cgroup() { echo "cgroup $1" >>"$STATE"; } # DIR, before it is made
stop_started() { # kills every process started so far, by PID, and forgets them
  local kind a b
  [ -f "$STATE" ] || return 0
  while read -r kind a b; do [ "$kind" = pid ] && kill "$a" 2>/dev/null || true; done <"$STATE"
  while read -r kind a b; do [ "$kind" = pid ] && wait "$a" 2>/dev/null || true; done <"$STATE"
  sed -i '/^pid /d' "$STATE"
}
restore_now() { stop_started; cleanup; }

# --- what the suite needs ------------------------------------------------------------------
need=()
command -v iperf3 >/dev/null || need+=(iperf3)
command -v sockperf >/dev/null || need+=(sockperf)
command -v cc >/dev/null || need+=(gcc libc6-dev)
command -v ip >/dev/null || need+=(iproute2)
command -v taskset >/dev/null || need+=(util-linux)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
if [ -z "$nc" ]; then
  cargo build --release -q -p netceil
  nc=$(realpath "${CARGO_TARGET_DIR:-target}")/release/netceil
fi
mkdir -p "$out"
bin=$(mktemp -d)
for c in spin timer_flood pipe_pingpong burst; do cc -O2 -o "$bin/$c" "bench/diagnose/$c.c"; done
if [ "$confirm" = 1 ]; then
  # Every `netceil run` of the cases gets --confirm; other commands run as they are.
  printf '#!/bin/sh\nif [ "$1" = run ]; then exec "%s" "$@" --confirm; fi\nexec "%s" "$@"\n' "$nc" "$nc" >"$bin/nc-confirm"
  chmod +x "$bin/nc-confirm"
  nc="$bin/nc-confirm"
fi
export NETCEIL_DB="$bin/runs.db"
# The receiver in a namespace is not on loopback: both ends share a key.
head -c 32 /dev/urandom | base64 > "$bin/key"
port=$((20000 + RANDOM % 20000))

# Machine state before, to check it is the same after.
snapshot() {
  { ip -all netns list; ip -o link show | sed 's/ state .*//' | sed 's/^[0-9]*: //'; tc qdisc show
    for k in net.core.rmem_default net.core.rmem_max net.core.netdev_max_backlog \
      net.core.netdev_budget net.core.netdev_budget_usecs net.core.busy_poll net.core.busy_read \
      net.core.wmem_default net.core.wmem_max net.ipv4.tcp_rmem net.ipv4.tcp_wmem; do sysctl "$k"; done
    nft list ruleset; ls -d /sys/fs/cgroup/cpu/netceil-* /sys/fs/cgroup/netceil-* || true
  } 2>/dev/null | sort
}
before=$(snapshot)

# --- the namespace pair ----------------------------------------------------------------------
NSA=netceil-diag-a NSB=netceil-diag-b
ns_pair() {
  echo "netns $NSA" >>"$STATE"; echo "netns $NSB" >>"$STATE"
  ip netns add $NSA; ip netns add $NSB
  ip link add ncdiag0 netns $NSA type veth peer name ncdiag1 netns $NSB
  ip -n $NSA addr add 198.18.0.1/30 dev ncdiag0; ip -n $NSB addr add 198.18.0.2/30 dev ncdiag1
  for ns in $NSA $NSB; do ip -n $ns link set lo up; done
  ip -n $NSA link set ncdiag0 up; ip -n $NSB link set ncdiag1 up
}
# Three namespaces, A — R — B, routed through R (198.18.0.0/30 and 198.18.0.4/30): R stands
# for what lies between two hosts, where neither end can count a drop.
NSR=netceil-diag-r
ns_routed() {
  local ns
  for ns in $NSA $NSR $NSB; do echo "netns $ns" >>"$STATE"; ip netns add $ns; ip -n $ns link set lo up; done
  ip link add ncdiag0 netns $NSA type veth peer name ncdiag1 netns $NSR
  ip link add ncdiag2 netns $NSR type veth peer name ncdiag3 netns $NSB
  ip -n $NSA addr add 198.18.0.1/30 dev ncdiag0; ip -n $NSR addr add 198.18.0.2/30 dev ncdiag1
  ip -n $NSR addr add 198.18.0.5/30 dev ncdiag2; ip -n $NSB addr add 198.18.0.6/30 dev ncdiag3
  ip -n $NSA link set ncdiag0 up; ip -n $NSR link set ncdiag1 up
  ip -n $NSR link set ncdiag2 up; ip -n $NSB link set ncdiag3 up
  ip -n $NSA route add default via 198.18.0.2; ip -n $NSB route add default via 198.18.0.5
  ip netns exec $NSR sysctl -qw net.ipv4.ip_forward=1
}
# UDP from A through R to a netceil serve in B; extra `run udp` flags, JSON to $1.
across_router() {
  local out=$1; shift
  ip netns exec $NSB timeout 20 "$nc" serve --listen 198.18.0.6:$port --key-file "$bin/key" >/dev/null 2>&1 &
  started $!
  sleep 0.3
  ip netns exec $NSA "$nc" run udp --to 198.18.0.6:$port --key-file "$bin/key" --size 64 --duration 5 \
    "$@" --json -q --no-store >"$out"
}
# Runs UDP from A to a netceil receiver in B; JSON to $1.
across_pair() {
  ip netns exec $NSB timeout 20 "$nc" serve --listen 198.18.0.2:$port --key-file "$bin/key" >/dev/null 2>&1 &
  started $!
  sleep 0.3
  ip netns exec $NSA "$nc" run udp --to 198.18.0.2:$port --key-file "$bin/key" --size 1400 --duration 5 \
    --json -q --no-store >"$1"
}

# Waits (at most 3 s) until something listens on TCP port $1 of loopback: a server started in
# the background is not ready at once, and a client refused would measure nothing.
wait_listen() {
  local i
  for i in $(seq 30); do
    ss -ltnH "sport = :$1" 2>/dev/null | grep -q . && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1 after 3 s" >&2
}

# --- the cases ---------------------------------------------------------------------------------
# Each: case_NAME OUTFILE. The expected causes are in EXPECT below, with the reason.
case_healthy_udp_paced() { "$nc" run udp --size 64 --rate 20k --duration 5 --json -q --no-store >"$1"; }
case_healthy_tcp_paced() { "$nc" run tcp --flows 4 --rate-per-flow 20Mbit --duration 5 --json -q --no-store >"$1"; }
case_idle_watch() { "$nc" watch --duration 4 --json -q --no-store >"$1"; }
case_watch_iperf3_paced() {
  iperf3 -s -1 -p $port >/dev/null 2>&1 & started $!; wait_listen $port
  "$nc" watch --json -q --no-store -- iperf3 -c 127.0.0.1 -p $port -b 50M -t 5 >"$1"
}
case_closed_loop_rr() { "$nc" run rr --duration 5 --json -q --no-store >"$1"; }
case_unpaced_udp() { "$nc" run udp --size 64 --duration 5 --json -q --no-store >"$1"; }
case_unpaced_tcp() { "$nc" run tcp --duration 5 --json -q --no-store >"$1"; }
case_rcvbuf_sysctl() {
  set_sysctl net.core.rmem_default 16384
  "$nc" run udp --size 64 --rate 150k --duration 5 --json -q --no-store >"$1"
}
case_backlog_sysctl() {
  # On loopback the sender's own CPU drains the backlog inline, so it never fills. Across a
  # veth with RPS steering the receive work to the other CPU, packets queue in that CPU's
  # backlog, which netdev_max_backlog 8 makes overflow.
  set_sysctl net.core.netdev_max_backlog 8
  ns_pair
  ip netns exec $NSB sh -c 'echo 2 > /sys/class/net/ncdiag1/queues/rx-0/rps_cpus'
  ip netns exec $NSB timeout 20 "$nc" serve --listen 198.18.0.2:$port --key-file "$bin/key" >/dev/null 2>&1 &
  started $!
  sleep 0.3
  ip netns exec $NSA taskset -c 0 "$nc" run udp --to 198.18.0.2:$port --key-file "$bin/key" --size 64 --duration 5 \
    --json -q --no-store >"$1"
}
case_cpu_contention() {
  for c in 0 1; do taskset -c $c "$bin/spin" 12 & started $!; done
  "$nc" run udp --size 64 --rate 200k --duration 6 --json -q --no-store >"$1"
}
case_starved_generator() {
  # A rate far beyond what one sleep-paced sender can do on this machine.
  "$nc" run udp --size 64 --rate 5M --duration 5 --json -q --no-store >"$1"
}
# Across the pair through `netceil serve`, so the far end's own counters and CPU decide.
serve_in_b() { # extra serve flags
  ip netns exec $NSB timeout 20 "$nc" serve --listen 198.18.0.2:$port --key-file "$bin/key" "$@" >/dev/null 2>&1 &
  started $!
  sleep 0.3
}
case_healthy_across_serve() {
  ns_pair
  serve_in_b
  ip netns exec $NSA "$nc" run udp --to 198.18.0.2:$port --key-file "$bin/key" --size 64 --rate 20k \
    --duration 5 --json -q --no-store >"$1"
}
case_far_rcvbuf() {
  # The far end's test socket gets 4 KiB (a handful of small datagrams): it overflows at
  # every scheduling delay of the receiving thread, while both cores have room.
  ns_pair
  serve_in_b --rcvbuf 4K
  ip netns exec $NSA "$nc" run udp --to 198.18.0.2:$port --key-file "$bin/key" --size 64 --rate 50k \
    --duration 5 --json -q --no-store >"$1"
}
case_healthy_across_router() {
  ns_routed
  across_router "$1" --rate 20k
}
case_path_policer() {
  # A policer in the router: UDP over 20k packets/s is dropped there, where neither end
  # counts it. The sender runs unpaced, so its offered rate varies while arrivals do not.
  ns_routed
  ip netns exec $NSR nft -f - <<'NFT'
table inet netceil_police {
  chain through { type filter hook forward priority 0; policy accept;
    meta l4proto udp limit rate over 20000/second burst 200 packets drop; }
}
NFT
  [ $? -eq 0 ] || return 1
  across_router "$1"
}
case_path_random_loss() {
  # 5 % of UDP dropped at random in the router: loss in the path, but no rate ceiling.
  ns_routed
  ip netns exec $NSR nft -f - <<'NFT'
table inet netceil_loss {
  chain through { type filter hook forward priority 0; policy accept;
    meta l4proto udp numgen random mod 100 < 5 drop; }
}
NFT
  [ $? -eq 0 ] || return 1
  across_router "$1" --rate 20k
}
case_shaper_tbf() {
  ns_pair
  ip netns exec $NSA tc qdisc add dev ncdiag0 root tbf rate 50mbit burst 32kb latency 50ms
  across_pair "$1"
}
case_shaper_htb() {
  ns_pair
  ip netns exec $NSA tc qdisc add dev ncdiag0 root handle 1: htb default 10
  ip netns exec $NSA tc class add dev ncdiag0 parent 1: classid 1:10 htb rate 30mbit ceil 30mbit
  across_pair "$1"
}
case_polling_loop() {
  # Someone else's program spinning with nothing to do, while paced traffic flows.
  "$nc" run udp --size 64 --rate 20k --duration 8 -q --no-store >/dev/null & started $!
  sleep 0.5
  "$nc" watch --json -q --no-store -- "$bin/spin" 5 >"$1"
}
case_busy_worker() {
  iperf3 -s -1 -p $port >/dev/null 2>&1 & started $!; wait_listen $port
  "$nc" watch --json -q --no-store -- iperf3 -c 127.0.0.1 -p $port -t 5 >"$1"
}
case_wrapped_iperf3_udp() {
  # Someone's wrapper script: the watched process is a shell, the work is its child; the
  # server, started apart, is the workload's other end, not a stranger.
  iperf3 -s -1 -p $port >/dev/null 2>&1 & started $!; wait_listen $port
  "$nc" watch --json -q --no-store -- sh -c "iperf3 -u -b 0 -l 64 -c 127.0.0.1 -p $port -t 5 >/dev/null" >"$1"
}
case_sockperf_throughput() {
  # sockperf sends with sendto, which /proc/PID/io does not count.
  sockperf sr -i 127.0.0.1 -p $port >/dev/null 2>&1 & started $!
  sleep 0.3
  "$nc" watch --json -q --no-store -- sockperf tp -i 127.0.0.1 -p $port -m 64 -t 5 >"$1"
}
case_timer_flood() {
  "$bin/timer_flood" 8 & started $!
  "$nc" run udp --size 64 --rate 20k --duration 5 --json -q --no-store >"$1"
}
case_ipi_flood() {
  "$bin/pipe_pingpong" 8 & started $!
  "$nc" run udp --size 64 --rate 20k --duration 5 --json -q --no-store >"$1"
}

# name | causes that count as right | why (by mechanism)
EXPECT="
healthy_udp_paced|no_ceiling|paced at 20 kpps, far below the loopback ceiling: nothing binds
healthy_tcp_paced|no_ceiling|4 flows x 20 Mbit/s, application-paced: nothing binds
idle_watch|no_load|no traffic
watch_iperf3_paced|no_ceiling|iperf3 at 50 Mbit/s: nothing binds
closed_loop_rr|latency_bound|one request in flight: rate = 1 / round trip
unpaced_udp|sender_saturated buffer_drops|the sender thread saturates (it also runs loopback's receive softirq); the default buffer overflows at its peaks
unpaced_tcp|sender_saturated|the sending thread copies at 100 % of a core; the receiver has room
rcvbuf_sysctl|buffer_drops|rmem_default 16 KiB: the receive socket overflows at 150 kpps
backlog_sysctl|buffer_drops sender_saturated|netdev_max_backlog 8 with RPS sending the receive work to the other CPU: its backlog overflows (a few per cent: the sender pinned to its core still sets the rate, and the drops are a loss on top, so either is right)
cpu_contention|cpu_contention generator_limited|two spinners take both cores; the paced sender falls short because of them
starved_generator|generator_limited buffer_drops|5 Mpps asked of one sleep-paced sender: it falls far short, and running flat out it overflows the default receive buffer, so both are true
healthy_across_serve|no_ceiling|20 kpps across a veth pair to netceil serve: nothing binds, and the far end reports no loss
far_rcvbuf|buffer_drops|netceil serve's test socket has 4 KiB: it overflows at the far end at 50 kpps while both cores have room
healthy_across_router|no_ceiling|20 kpps through a router namespace to netceil serve: nothing binds
path_policer|shaper|an nftables policer in the router passes 20k UDP packets/s of an unpaced sender: neither end drops them, arrivals stay flat while the offered rate varies
path_random_loss|saturation no_ceiling|5 % dropped at random in the router at 20 kpps: loss in the path, not a rate ceiling; naming where (saturation, in the path) or nothing is right, a limiter is not
shaper_tbf|shaper|tbf 50 Mbit/s on the sender's veth
shaper_htb|shaper|htb class 30 Mbit/s on the sender's veth
polling_loop|polling_thread|a watched program spins in user space with no I/O
busy_worker|thread_saturated sender_saturated|iperf3's sending thread moves data at a full core
wrapped_iperf3_udp|thread_saturated|iperf3 (a child of the watched shell) sends 64-byte datagrams at a full core; its server is its peer
sockperf_throughput|thread_saturated|sockperf's sending thread moves 64-byte datagrams at a full core, in sendto calls /proc does not count
timer_flood|no_ceiling|a 1 us nanosleep loop floods timer interrupts; the paced run still gets its rate
ipi_flood|no_ceiling|a cross-CPU pipe ping-pong floods reschedule IPIs; the paced run still gets its rate
"
HEALTHY="healthy_udp_paced healthy_tcp_paced healthy_across_serve healthy_across_router idle_watch watch_iperf3_paced timer_flood ipi_flood"

# Runs one set's cases ($1: the set's name, $2: its expectations, $3: its healthy controls)
# and prints its summary: each set's figures stand on their own.
run_set() {
  local set=$1 expect=$2 healthy=$3 dir results
  dir=$out; [ "$set" = base ] || dir=$out/$set
  mkdir -p "$dir"
  results="$dir/results.tsv"
  : >"$results"
  : >"$dir/confirm.tsv"
  echo "== set $set"
  echo "$expect" | while IFS='|' read -r name want why; do
    [ -n "$name" ] || continue
    echo "$name" | grep -Eq "$only" || continue
    for r in $(seq 1 "$repeats"); do
      f="$dir/$name-$r.json"
      rm -f "$f"
      # A case whose condition could not be induced measured nothing: it scores as an error.
      if ! "case_$name" "$f" 2>"$dir/$name-$r.err"; then
        echo "$name #$r: the case failed: $(head -c 300 "$dir/$name-$r.err")" >&2
        rm -f "$f"
      fi
      restore_now
      got=$(python3 - "$f" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    fs = d.get("findings") or []
    top = fs[0] if fs else {}
    second = next((x for x in fs[1:] if x.get("cause") not in (top.get("cause"), "link_headroom")), {})
    print(f"{top.get('cause','none')}\t{top.get('confidence',0):.2f}\t{second.get('cause','-')}\t{second.get('confidence',0):.2f}")
except Exception as e:
    print(f"error\t0\t-\t0")
PY
)
      printf '%s\t%s\t%s\t%s\n' "$name" "$r" "$want" "$got" >>"$results"
      [ "$confirm" = 1 ] && python3 - "$f" "$name" "$r" >>"$dir/confirm.tsv" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    sys.exit(0)
top = (d.get("findings") or [{}])[0].get("cause", "none")
cs = d.get("confirmations") or []
if not cs:
    why = next((n for n in d.get("notes", []) if n.startswith("--confirm")), "not a run of netceil's own workload")
    print(f"{sys.argv[2]}\t{sys.argv[3]}\t{top}\t-\t{why}\t-\t{top}")
for c in cs:
    print(f"{sys.argv[2]}\t{sys.argv[3]}\t{c['cause']}\t{c['intervention']}\t{c['summary']}\t{c['outcome']}\t{top}")
PY
      IFS=$'\t' read -r cause conf second conf2 <<<"$got"
      ok=no; for w in $want; do [ "$w" = "$cause" ] && ok=yes; done
      printf '%-20s #%s  want %-34s got %-18s %s  (runner-up %s %s)  %s\n' \
        "$name" "$r" "$want" "$cause" "$conf" "$second" "$conf2" "$ok"
    done
  done
  summarize "$set" "$results" "$healthy"
  if [ "$confirm" = 1 ] && [ -s "$dir/confirm.tsv" ]; then
    echo; echo "-- --confirm: verdict before | change | what moved | outcome | verdict after"
    sort "$dir/confirm.tsv" | awk -F'\t' '{printf "%-20s #%s  %-18s | %s | %s | %s | %s\n", $1, $2, $3, $4, $5, $6, $7}'
  fi
}

summarize() { # SET RESULTS HEALTHY
python3 - "$2" "$3" "$1" <<'PY'
import sys, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
print(f"\n-- set {sys.argv[3]}")
if not rows:
    print("no case ran")
    sys.exit(0)
healthy = set(sys.argv[2].split())
by_case = collections.defaultdict(list)
for name, rep, want, cause, conf, second, conf2 in rows:
    by_case[name].append((want.split(), cause))
n = len(rows)
right = sum(1 for name, rep, want, cause, *_ in rows if cause in want.split())
print(f"\naccuracy: {right}/{n} top causes right ({100*right/max(n,1):.0f} %)")
hc = [(w, c) for name in healthy for w, c in by_case.get(name, [])]
false_claims = sum(1 for w, c in hc if c not in ("no_ceiling", "no_load"))
print(f"false claims on healthy controls: {false_claims}/{len(hc)}")
agree = sum(1 for name, v in by_case.items() if len({c for _, c in v}) == 1)
print(f"agreement over repeats: {agree}/{len(by_case)} cases named the same top cause every time")
# Confusion matrix: expected class (the first expected cause) against the top cause given.
classes = sorted({w[0] for v in by_case.values() for w, _ in v})
got = sorted({c for v in by_case.values() for _, c in v})
m = collections.Counter((w[0], c) for v in by_case.values() for w, c in v)
width = max(len(c) for c in classes + got) + 1
print("\nconfusion matrix (rows: expected class; columns: top cause given)")
print(" " * width + " ".join(f"{c[:10]:>10}" for c in got))
for e in classes:
    print(f"{e:<{width}}" + " ".join(f"{m[(e, c)] or '.':>10}" for c in got))
PY
}

for s_ in $sets; do
  if [ "$s_" = base ]; then
    run_set base "$EXPECT" "$HEALTHY"
    continue
  fi
  f_=bench/diagnose/cases/$s_.sh
  if [ ! -f "$f_" ]; then
    echo "== set $s_: $f_ does not exist, skipped"
    continue
  fi
  EXPECT_SET="" HEALTHY_SET=""
  # shellcheck source=/dev/null
  . "$f_"
  run_set "$s_" "$EXPECT_SET" "$HEALTHY_SET"
done

# Nothing the suite started may outlive it: any process still running one of its helper
# programs is reported and stopped by its PID.
left=()
for d in /proc/[0-9]*; do
  exe=$(readlink "$d/exe" 2>/dev/null) || continue
  case "$exe" in "$bin"/*) left+=("${d#/proc/}") ;; esac
done
if [ ${#left[@]} -gt 0 ]; then
  echo "processes left running: ${left[*]} (stopping them)"; kill "${left[@]}" 2>/dev/null || true
else
  echo "processes: none left running"
fi
after=$(snapshot)
if [ "$before" = "$after" ]; then
  echo "machine state: as found (namespaces, links, qdiscs, sysctls)"
else
  echo "machine state: CHANGED"; diff <(echo "$before") <(echo "$after") || true
fi

# The helper programs, the store and the key were made for this run only.
rm -rf "$bin"
