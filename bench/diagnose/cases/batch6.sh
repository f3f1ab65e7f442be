# A batch of induced cases for bench/diagnose.sh (`--set batch6`), written with their expected
# causes on 2026-11-26, before the analyzer gained its latency-under-load rule (`run rrul` and
# the cause `bufferbloat`) and before `run tcp --reverse/--bidir` existed: the cases are written
# against the command-line contract those were built to. This is the training half: the
# analyzer may be changed while looking at these. Its other half, written at the same time, is
# batch6h.sh, run only after the change and reported on its own.
#
# Same conventions as heldout.sh: each case_NAME OUTFILE induces one condition, checks that it
# took (independently of netceil's own figures where it can: tc's counters), writes netceil's
# --json to OUTFILE, and returns non-zero when it could not be induced. Both ends of every lab
# case are shaped alike, so one direction running at CPU speed does not add a second condition.

b6_fail() { echo "batch6: $*" >&2; return 1; }

# NS DEV OUTFILE SECONDS: in the background, the largest backlog (bytes) any qdisc on DEV held,
# sampled every 200 ms for SECONDS; written to OUTFILE when done.
b6_peak_backlog() {
  (
    peak=0 end=$((SECONDS + $4))
    while [ "$SECONDS" -lt "$end" ]; do
      b=$(ip netns exec "$1" tc -s qdisc show dev "$2" 2>/dev/null |
        awk '/backlog/ { v = $2; sub(/b$/, "", v); if (v ~ /K$/) { sub(/K$/, "", v); v *= 1024 }
                         else if (v ~ /M$/) { sub(/M$/, "", v); v *= 1048576 }; if (v + 0 > m) m = v + 0 }
             END { print m + 0 }')
      [ "${b%.*}" -gt "$peak" ] && peak=${b%.*}
      sleep 0.2
    done
    echo "$peak" >"$3"
  ) &
  started $!
}

# FILE: waits (at most 15 s) for b6_peak_backlog's answer and prints it.
b6_peak_of() {
  local i
  for i in $(seq 150); do [ -s "$1" ] && break; sleep 0.1; done
  cat "$1" 2>/dev/null || echo 0
  rm -f "$1"
}

# NS DEV: bytes the qdiscs on DEV have sent so far (the root's counter).
b6_sent_bytes() { ip netns exec "$1" tc -s qdisc show dev "$2" | awk '/Sent/ { print $2; exit }'; }

# QDISC-ARGS...: the same root qdisc on both ends of the pair (A's ncdiag0, B's ncdiag1).
b6_both() {
  ip netns exec $NSA tc qdisc add dev ncdiag0 root "$@" &&
    ip netns exec $NSB tc qdisc add dev ncdiag1 root "$@"
}

# OUTFILE EXTRA-FLAGS...: netceil rrul from A against a serve in B.
b6_rrul_across() {
  local out=$1; shift
  serve_in_b
  ip netns exec $NSA "$nc" run rrul --to 198.18.0.2:$port --key-file "$bin/key" --duration 10 \
    "$@" --json -q --no-store >"$out"
}

case_b6_rrul_tbf_bloat() {
  # tbf at 50 Mbit/s with a 4 MB queue on both ends: 4 bulk flows each way fill it (TCP grows
  # its window until the queue is full), and the probe's packets wait behind up to 640 ms of
  # data. The latency grows under load because the qdisc held the packets.
  ns_pair
  b6_both tbf rate 50mbit burst 32kb limit 4mb || return 1
  b6_peak_backlog $NSA ncdiag0 /tmp/netceil-b6-peak 11
  b6_rrul_across "$1" || return 1
  local peak; peak=$(b6_peak_of /tmp/netceil-b6-peak)
  [ "$peak" -gt 200000 ] || b6_fail "the qdisc never held 200 kB (peak $peak B)"
}

case_b6_rrul_fq_codel_shaped() {
  # htb at 50 Mbit/s with fq_codel under it on both ends: the bulk flows are held at the
  # shaper's rate, but fq_codel keeps its standing queue near 5 ms and gives the probe's sparse
  # flow its own queue, so the round trip barely grows. The ceiling is the shaper; no queue
  # bloated.
  ns_pair
  local ns dev
  for ns_dev in "$NSA ncdiag0" "$NSB ncdiag1"; do
    read -r ns dev <<<"$ns_dev"
    ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: htb default 10 || return 1
    ip netns exec "$ns" tc class add dev "$dev" parent 1: classid 1:10 htb rate 50mbit ceil 50mbit || return 1
    ip netns exec "$ns" tc qdisc add dev "$dev" parent 1:10 fq_codel || return 1
  done
  local before; before=$(b6_sent_bytes $NSA ncdiag0)
  b6_rrul_across "$1" || return 1
  [ $(($(b6_sent_bytes $NSA ncdiag0) - before)) -gt 20000000 ] || b6_fail "A's shaper sent under 20 MB: the up flows did not run"
}

case_b6_rrul_loopback() {
  # rrul on loopback: 4 bulk flows each way fill both cores with copies and softirq work. There
  # is no qdisc (lo is noqueue) and the socket queues are not on the probe's path; the probe's
  # round trip grows because its threads wait for a CPU. The CPU is the ceiling, not a queue.
  "$nc" run rrul --duration 10 --json -q --no-store >"$1" || return 1
  case_check batch6 "$1" 'len(d.get("findings") or []) > 0'
}

case_b6_rrul_paced_healthy() {
  # rrul across the pair with every bulk flow paced at 5 Mbit/s (40 Mbit/s in all) and no
  # shaper: a veth carries that with both cores mostly idle, nothing queues, the round trip does
  # not grow. Nothing bound the run.
  ns_pair
  b6_rrul_across "$1" --rate-per-flow 5Mbit
}

case_b6_tcp_reverse_shaped() {
  # run tcp --reverse across the pair: the far end (B) sends. B's egress has tbf at 30 Mbit/s;
  # A's has none, so only a run whose data really flows B to A meets the shaper.
  ns_pair
  ip netns exec $NSB tc qdisc add dev ncdiag1 root tbf rate 30mbit burst 32kb latency 50ms || return 1
  local before; before=$(b6_sent_bytes $NSB ncdiag1)
  serve_in_b
  ip netns exec $NSA "$nc" run tcp --reverse --to 198.18.0.2:$port --key-file "$bin/key" --duration 6 \
    --json -q --no-store >"$1" || return 1
  [ $(($(b6_sent_bytes $NSB ncdiag1) - before)) -gt 10000000 ] || b6_fail "B's shaper sent under 10 MB: the data did not flow B to A"
}

EXPECT_SET="
b6_rrul_tbf_bloat|bufferbloat|a 4 MB tbf queue at 50 Mbit/s on both ends fills with the bulk flows' data; the probe waits behind it: the qdisc held the packets
b6_rrul_fq_codel_shaped|shaper|htb holds the flows at 50 Mbit/s; fq_codel keeps the queue short and isolates the probe, so latency barely grows: the shaper is the ceiling, nothing bloated
b6_rrul_loopback|cpu_bound hot_cpu receiver_saturated sender_saturated softirq_bound|on loopback there is no qdisc; 8 bulk flows fill both cores and the probe waits for a CPU
b6_rrul_paced_healthy|no_ceiling|40 Mbit/s in all over a veth, no shaper: nothing saturates and nothing queues
b6_tcp_reverse_shaped|shaper|the far end sends through its own 30 Mbit/s tbf; the near end has no qdisc in the way
"
HEALTHY_SET="b6_rrul_paced_healthy"
