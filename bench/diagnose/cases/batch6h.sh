# The held-out half of the batch6 batch (see batch6.sh), written with its expected causes on
# 2026-11-26 before the analyzer gained its latency-under-load rule (`bufferbloat`) and before
# `run rrul` and `run tcp --reverse/--bidir` existed, and run only after: do not tune the
# analyzer against these. Uses batch6.sh's helpers, so it sources it.
. "$(dirname "${BASH_SOURCE[0]}")/batch6.sh"

case_b6h_rrul_htb_pfifo_bloat() {
  # htb at 40 Mbit/s with a 3000-packet pfifo under it on both ends: up to 4.5 MB of full-size
  # segments queue at 40 Mbit/s, close to a second of delay. The bulk flows fill it; the probe
  # waits behind them. The qdisc held the packets.
  ns_pair
  local ns dev ns_dev
  for ns_dev in "$NSA ncdiag0" "$NSB ncdiag1"; do
    read -r ns dev <<<"$ns_dev"
    ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: htb default 10 || return 1
    ip netns exec "$ns" tc class add dev "$dev" parent 1: classid 1:10 htb rate 40mbit ceil 40mbit || return 1
    ip netns exec "$ns" tc qdisc add dev "$dev" parent 1:10 pfifo limit 3000 || return 1
  done
  b6_peak_backlog $NSA ncdiag0 /tmp/netceil-b6h-peak 11
  b6_rrul_across "$1" || return 1
  local peak; peak=$(b6_peak_of /tmp/netceil-b6h-peak)
  [ "$peak" -gt 200000 ] || b6_fail "the qdisc never held 200 kB (peak $peak B)"
}

case_b6h_rrul_tbf_short_queue() {
  # tbf at 50 Mbit/s with a 15 kB queue on both ends: ten full-size segments, 2.4 ms at that
  # rate. The flows are held at the shaper's rate and lose packets at it; the probe's round
  # trip can grow by a few ms at most. The shaper is the ceiling; the short queue is not bloat.
  ns_pair
  b6_both tbf rate 50mbit burst 32kb limit 15kb || return 1
  local before; before=$(b6_sent_bytes $NSA ncdiag0)
  b6_rrul_across "$1" || return 1
  [ $(($(b6_sent_bytes $NSA ncdiag0) - before)) -gt 20000000 ] || b6_fail "A's shaper sent under 20 MB: the up flows did not run"
}

case_b6h_rrul_loopback_hogs() {
  # rrul on loopback while two spinning programs, one per core, take the CPUs the flows and the
  # probe need. Processes outside the workload hold the CPU.
  for c in 0 1; do taskset -c $c "$bin/spin" 14 & started $!; done
  "$nc" run rrul --duration 10 --json -q --no-store >"$1" || return 1
  case_check batch6h "$1" 'len(d.get("findings") or []) > 0'
}

case_b6h_rrul_loopback_paced() {
  # rrul on loopback with every bulk flow paced at 10 Mbit/s (80 Mbit/s in all): a few percent
  # of a core, no queue builds, the round trip does not grow. Nothing bound the run.
  "$nc" run rrul --duration 10 --rate-per-flow 10Mbit --json -q --no-store >"$1" || return 1
  case_check batch6h "$1" 'len(d.get("findings") or []) > 0'
}

case_b6h_tcp_bidir_shaped() {
  # run tcp --bidir across the pair, htb at 40 Mbit/s on both ends: each direction is held at
  # the shaper's rate. The shaper is the ceiling (both directions, the same one).
  ns_pair
  local ns dev ns_dev
  for ns_dev in "$NSA ncdiag0" "$NSB ncdiag1"; do
    read -r ns dev <<<"$ns_dev"
    ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: htb default 10 || return 1
    ip netns exec "$ns" tc class add dev "$dev" parent 1: classid 1:10 htb rate 40mbit ceil 40mbit || return 1
  done
  local before; before=$(b6_sent_bytes $NSB ncdiag1)
  serve_in_b
  ip netns exec $NSA "$nc" run tcp --bidir --to 198.18.0.2:$port --key-file "$bin/key" --duration 6 \
    --json -q --no-store >"$1" || return 1
  [ $(($(b6_sent_bytes $NSB ncdiag1) - before)) -gt 10000000 ] || b6_fail "B's shaper sent under 10 MB: nothing flowed B to A"
}

EXPECT_SET="
b6h_rrul_htb_pfifo_bloat|bufferbloat|a 3000-packet pfifo under a 40 Mbit/s htb holds up to a second of data; the probe waits behind it: the qdisc held the packets
b6h_rrul_tbf_short_queue|shaper|a 15 kB tbf queue at 50 Mbit/s adds at most 2.4 ms: the shaper holds the rate, the queue is not bloated
b6h_rrul_loopback_hogs|cpu_contention cpu_bound|two spinners, one per core, take the CPUs the flows and the probe need
b6h_rrul_loopback_paced|no_ceiling|80 Mbit/s in all on loopback is a few percent of a core; no queue builds, the round trip does not grow
b6h_tcp_bidir_shaped|shaper|htb at 40 Mbit/s on both ends holds each direction at its rate
"
HEALTHY_SET="b6h_rrul_loopback_paced"
