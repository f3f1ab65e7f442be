# A batch of induced cases for bench/diagnose.sh (`--set confirm3`), written with their expected
# causes on 2026-11-26, before the analyzer and --confirm were changed for the defects the
# confirm2 set showed (a moved receiver that changes nothing demoting hot_cpu; socket drops that
# were not the workload's blamed on its buffer; the ranking of a verdict against its symptoms).
# This is the training half: the analyzer may be changed while looking at these. Its other half,
# written at the same time, is confirm3h.sh, run only after the change.
#
# Same conventions as heldout.sh: each case_NAME OUTFILE induces one condition, checks that it
# took, writes netceil's --json to OUTFILE, and returns non-zero when it could not be induced.

c3_fail() { echo "confirm3: $*" >&2; return 1; }

# OUTFILE PYTHON-EXPR: the condition took (diagnose.sh's case_check).
c3_check() { case_check confirm3 "$@"; }

# SECONDS SIZE PPS: another program on the machine whose own UDP socket overflows: it binds a
# loopback port with a 4 KiB receive buffer and never reads it, and sends to it at PPS for
# SECONDS. PPS stays low (3 k/s: the buffer overflows anyway) so that the program does not take
# the CPU netceil's own reader needs; at 20 k/s it did, and netceil's socket dropped too. Its drops count in the machine's UDP RcvbufErrors, not on netceil's socket.
c3_foreign_drops() {
  python3 - "$1" "$2" "$3" <<'PY' &
import socket, sys, time
secs, size, pps = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
sink.bind(("127.0.0.1", 0))
tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
msg, gap, end = b"x" * size, 1.0 / pps, time.monotonic() + secs
nxt = time.monotonic()
while time.monotonic() < end:
    tx.sendto(msg, sink.getsockname())
    nxt += gap
    d = nxt - time.monotonic()
    if d > 0:
        time.sleep(d)
PY
  started $!
}

# The machine's UDP receive-buffer errors so far.
c3_rcvbuf_errors() { awk '/^Udp: [0-9]/ {print $6}' /proc/net/snmp; }

case_c3_tx_core_full() {
  # Unpaced UDP, 64 B, the receiver on CPU 1 and the sender on CPU 0, placed by netceil: on
  # loopback the sender's core also runs the receive softirq, so CPU 0 is full and is the
  # ceiling; the receiver's own core has room.
  "$nc" run udp --size 64 --duration 5 --rx-cpu 1 --tx-cpu 0 --json -q --no-store >"$1" || return 1
  c3_check "$1" 'r.get("tx_packets", 0) > 0'
}

case_c3_paced_beside_foreign_drops() {
  # UDP paced at 30 kpps (a few percent of a core) while another program's socket overflows
  # on loopback: the machine counts receive-buffer errors, netceil's own socket drops nothing.
  local before; before=$(c3_rcvbuf_errors)
  c3_foreign_drops 7 200 3000
  "$nc" run udp --size 64 --rate 30k --duration 5 --json -q --no-store >"$1" || return 1
  [ "$(c3_rcvbuf_errors)" -gt "$before" ] || { c3_fail "the other program's socket dropped nothing"; return 1; }
  c3_check "$1" 'r.get("tx_packets", 0) > 100000 and r.get("lost_packets", 0) == 0'
}

case_c3_small_rcvbuf_own_core() {
  # A 4 KiB SO_RCVBUF on netceil's socket, paced at 250 kpps, the receiver on its own CPU: the
  # socket overflows whenever the reader is late, though its core has room.
  "$nc" run udp --size 64 --rate 250k --rcvbuf 4096 --rx-cpu 1 --tx-cpu 0 --duration 5 --json -q --no-store >"$1" || return 1
  c3_check "$1" '(r.get("kernel") or {}).get("socket_drops", 0) > 0'
}

case_c3_tcp_shared_core() {
  # One TCP flow, receiving and sending threads both placed on CPU 0 by netceil; CPU 1 allowed
  # and idle. The shared core is the ceiling.
  "$nc" run tcp --duration 5 --rx-cpu 0 --tx-cpu 0 --json -q --no-store >"$1" || return 1
  c3_check "$1" 'r.get("tx_bytes", 0) > 0'
}

EXPECT_SET="
c3_tx_core_full|hot_cpu sender_saturated cpu_bound softirq_bound buffer_drops|the sender's CPU also runs loopback's receive softirq; it is full while the receiver's CPU has room. buffer_drops counts too (added after the first run, with the reason): on this shared machine the receiver's CPU also runs other work, and --confirm showed a 16x buffer taking the loss from 67 % to 0 %, so the drops were bursts the buffer absorbs
c3_paced_beside_foreign_drops|no_ceiling|30 kpps is a few percent of a core; the receive-buffer errors are another program's socket, netceil's own lost nothing
c3_small_rcvbuf_own_core|buffer_drops|a 4 KiB SO_RCVBUF holds a few dozen datagrams; at 250 kpps it overflows whenever the reader is late, and the reader's core has room
c3_tcp_shared_core|hot_cpu cpu_bound receiver_saturated sender_saturated|receiver and sender threads on CPU 0 (placed by netceil), CPU 1 idle: the shared core is full
"
HEALTHY_SET="c3_paced_beside_foreign_drops"
