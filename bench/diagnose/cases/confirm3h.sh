# The held-out half of the confirm3 batch (see confirm3.sh), written with its expected causes on
# 2026-11-26 before the analyzer and --confirm were changed, and run only after: do not tune
# the analyzer or --confirm against these. Uses confirm3.sh's helpers, so it sources it.
. "$(dirname "${BASH_SOURCE[0]}")/confirm3.sh"

case_c3h_shared_core_1400() {
  # Unpaced UDP at 1400 B, receiving and sending threads both placed on CPU 0 by netceil, CPU 1
  # allowed and idle: the shared core is the ceiling; the receiver moved off it delivers more.
  "$nc" run udp --size 1400 --duration 5 --rx-cpu 0 --tx-cpu 0 --json -q --no-store >"$1" || return 1
  c3_check "$1" 'r.get("tx_packets", 0) > 0'
}

case_c3h_quiet_1400_beside_drops() {
  # UDP paced at 10 kpps of 1400 B while another program's socket overflows at 3 kpps of
  # 64 B: the machine's receive-buffer errors climb, netceil's own socket drops nothing.
  local before; before=$(c3_rcvbuf_errors)
  c3_foreign_drops 7 64 3000
  "$nc" run udp --size 1400 --rate 10k --duration 5 --json -q --no-store >"$1" || return 1
  [ "$(c3_rcvbuf_errors)" -gt "$before" ] || { c3_fail "the other program's socket dropped nothing"; return 1; }
  c3_check "$1" 'r.get("tx_packets", 0) > 30000 and r.get("lost_packets", 0) == 0'
}

case_c3h_rcvbuf_256() {
  # An 8 KiB SO_RCVBUF, 256 B datagrams paced at 120 kpps: the buffer holds about a dozen of
  # them (each costs its skb truesize), so it overflows whenever the reader is off its core.
  "$nc" run udp --size 256 --rate 120k --rcvbuf 8192 --duration 5 --json -q --no-store >"$1" || return 1
  c3_check "$1" '(r.get("kernel") or {}).get("socket_drops", 0) > 0'
}

case_c3h_two_threads_one_cpu() {
  # Unpaced UDP with two sender threads and two flows, the whole process held to CPU 0 by
  # taskset: both senders, the receiver and the softirq share one CPU, which is full.
  taskset -c 0 "$nc" run udp --size 64 --flows 2 --threads 2 --duration 5 --json -q --no-store >"$1" || return 1
  c3_check "$1" 'r.get("tx_packets", 0) > 0'
}

EXPECT_SET="
c3h_shared_core_1400|hot_cpu receiver_saturated cpu_bound|receiver and sender threads placed on CPU 0 by netceil, CPU 1 idle: the shared core is full
c3h_quiet_1400_beside_drops|no_ceiling|10 kpps of 1400 B is a few percent of a core; the receive-buffer errors are another program's, netceil's own socket lost nothing
c3h_rcvbuf_256|buffer_drops|an 8 KiB SO_RCVBUF holds about a dozen 256 B datagrams; at 120 kpps the socket overflows whenever the reader is late
c3h_two_threads_one_cpu|cpu_bound hot_cpu|taskset -c 0: two senders, the receiver and the softirq share the workload's one CPU, which is full
"
HEALTHY_SET="c3h_quiet_1400_beside_drops"
