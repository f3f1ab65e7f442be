# A batch of induced cases for bench/diagnose.sh (`--set confirm2`), written with their
# expected causes on 2026-11-26 after --confirm changed (it now tests only the verdict, and
# can move the receiver to another core), and run on the analyzer as it stood then, untouched.
# They are held out like `heldout`: do not tune the analyzer or --confirm against them.
#
# Same conventions as heldout.sh: each case_NAME OUTFILE induces one condition, checks that it
# took, writes netceil's --json to OUTFILE, and returns non-zero when it could not be induced.


# OUTFILE PYTHON-EXPR: the condition took (diagnose.sh's case_check).
c2_check() { case_check confirm2 "$@"; }

case_c2_rx_on_tx_core() {
  # Unpaced UDP with the receiving and the sending thread placed on the same CPU by netceil
  # itself (not taskset): CPU 1 stays allowed and idle. The shared core is the ceiling; the
  # receiver moved to CPU 1 would deliver more.
  "$nc" run udp --size 64 --duration 5 --rx-cpu 0 --tx-cpu 0 --json -q --no-store >"$1" || return 1
  c2_check "$1" 'r.get("tx_packets", 0) > 0'
}

case_c2_paced_quiet() {
  # UDP paced at 20 kpps on loopback: far below what one core sends; nothing binds.
  "$nc" run udp --size 64 --rate 20k --duration 5 --json -q --no-store >"$1" || return 1
  c2_check "$1" 'r.get("tx_packets", 0) > 50000'
}

case_c2_tiny_rcvbuf() {
  # A 4 KiB receive buffer asked on netceil's own socket (SO_RCVBUF, doubled by the kernel),
  # paced at 150 kpps: the socket overflows between the reader's turns.
  "$nc" run udp --size 64 --rate 150k --rcvbuf 4096 --duration 5 --json -q --no-store >"$1" || return 1
  c2_check "$1" '(r.get("kernel") or {}).get("socket_drops", 0) > 0'
}

case_c2_tcp_one_cpu() {
  # One TCP flow held to CPU 0 by taskset: sender, receiver and softirq share the one CPU the
  # workload may use.
  taskset -c 0 "$nc" run tcp --duration 5 --json -q --no-store >"$1" || return 1
  c2_check "$1" 'r.get("tx_bytes", 0) > 0'
}

EXPECT_SET="
c2_rx_on_tx_core|hot_cpu receiver_saturated cpu_bound|receiver and sender threads placed on CPU 0 by netceil; CPU 1 allowed and idle; the shared core is full
c2_paced_quiet|no_ceiling|20 kpps of 64 B on loopback is a few percent of one core
c2_tiny_rcvbuf|buffer_drops|a 4 KiB SO_RCVBUF (8 KiB granted) holds a few dozen 64 B datagrams; at 150 kpps the socket overflows whenever the reader is off its core
c2_tcp_one_cpu|cpu_bound hot_cpu|taskset -c 0: sender, receiver and softirq share the workload's one CPU, which is full
"
HEALTHY_SET="c2_paced_quiet"
