#!/usr/bin/env bash
# One TCP stream over loopback: netceil against iperf3, alternated in every round (the order
# rotates each round so drift on a shared machine falls on all), same write size (128 KiB, as
# iperf3's default), same duration, same CPU placement. Prints each round's ratio, the median
# and the range, and for netceil the share of the sender's busy time the receive window held
# it back (tcp_info rwnd_limited, the median of the run's 1 s rows) and the segments its sender
# retransmitted (tcp_info; on loopback each one is a spurious retransmission and a congestion-
# window cut, which a receiver that holds bytes back causes). Also each receiver's CPU seconds
# per GiB read (netceil's from its receiver's note, iperf3's from its server's CPU share) and
# each sender's per GiB sent (netceil's generator CPU, iperf3's client CPU share), as ratios:
# steadier than the throughput, and where a costlier reader or writer shows first. iperf3 runs
# twice per round: iperf3 / iperf3 is the control, the spread the machine's noise alone gives a
# ratio, against which netceil's ratios and "every round" are read.
# Only 127.0.0.1 is used; iperf3's server is stopped by its PID on every exit.
#
# usage: bench/tcp.sh [ROUNDS] [SECONDS]          (defaults: 7 rounds of 5 s)
#   PIN=TX,RX   place the sender on CPU TX and the receiver on CPU RX, both tools
#               (netceil --tx-cpu/--rx-cpu, iperf3 -A TX,RX); unset: the scheduler places both
#   PRIO=rt     run both tools under SCHED_FIFO 1 (chrt): on a machine shared with builds this
#               stands in for an idle one (their CPU shares stop deciding the result); the
#               kernel still keeps 5 % of each second for others. Refused with both threads on
#               one CPU: iperf3's client then spins at FIFO priority and its server never runs
#   KERNEL=1    also run netceil with --rcvbuf kernel in every round
#   EACH=1      also run netceil with --sink-wakes each (its reader woken at every arrival, as
#               iperf3's) in every round: what batching the reader's wake-ups is worth
#   NC=path     the netceil binary (default: built here with cargo build --release)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
secs=${2:-5}
out=bench/out
mkdir -p "$out"

need=()
command -v iperf3 >/dev/null || need+=(iperf3)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
if [ -z "${NC:-}" ]; then
  cargo build --release -q -p netceil --bin netceil
  NC=${CARGO_TARGET_DIR:-target}/release/netceil
fi
[ -x "$NC" ] || { echo "bench/tcp.sh: no netceil binary at $NC" >&2; exit 2; }

nc_pin=() ip_pin=()
if [ -n "${PIN:-}" ]; then
  nc_pin=(--tx-cpu "${PIN%,*}" --rx-cpu "${PIN#*,}")
  ip_pin=(-A "$PIN")
fi
# Every command is bounded in time, whatever happens to it.
pre=(timeout $((secs + 30)))
case ${PRIO:-} in
  "") ;;
  rt)
    if [ -n "${PIN:-}" ] && [ "${PIN%,*}" = "${PIN#*,}" ]; then
      echo "bench/tcp.sh: PRIO=rt with both threads on CPU ${PIN%,*} can livelock iperf3; use two CPUs" >&2
      exit 2
    fi
    pre+=(chrt -f 1)
    ;;
  *)
    echo "bench/tcp.sh: PRIO is rt or unset, not '$PRIO'" >&2
    exit 2
    ;;
esac
# iperf3_again, a second iperf3 run in every round, is the control: iperf3 / iperf3 shows how
# far the machine's noise alone moves a ratio from round to round. A tool exactly as fast as
# iperf3 is >= 1.0 in a round only by that noise's luck, so "every round" is read against it.
variants=(nc iperf3 iperf3_again)
# KERNEL=1 adds netceil with --rcvbuf kernel (the kernel's receive-buffer autotuning, as iperf3
# has it) to every round: what the default's fixed, cache-sized buffer on loopback is worth.
[ "${KERNEL:-0}" = 1 ] && variants+=(nc_kernel)
# EACH=1 adds netceil with --sink-wakes each: its reader woken at every arrival, as iperf3's,
# instead of once per 200 µs of the stream's rate (see crates/netceil-load/src/tcp/wakes.rs).
[ "${EACH:-0}" = 1 ] && variants+=(nc_each)

port=$((20000 + RANDOM % 20000))
server=""
cleanup() {
  [ -z "$server" ] || kill "$server" 2>/dev/null || true
  [ -z "$server" ] || wait "$server" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

nc_figures() { # nc_figures JSON: the receiver's bit/s, its CPU s per GiB read, the sender's per GiB sent
  python3 - "$1" <<'PY'
import json, re, sys
res = json.load(open(sys.argv[1]))["results"]
cpu = [float(m.group(1)) for n in res["notes"]
       for m in [re.search(r"in-process receiver: \d+ threads' CPU ([0-9.]+) s", n)] if m]
per_gib = cpu[0] / (res["rx_app_bytes"] / 2**30) if cpu and res["rx_app_bytes"] else float("nan")
tx = res["generator"]["cpu_s"] / (res["tx_bytes"] / 2**30) if res["tx_bytes"] else float("nan")
retrans = sum(f.get("retransmits") or 0 for f in res.get("flows", []))
print(f"{res['rx_app_bits_per_s']},{per_gib},{tx},{retrans}")
PY
}

run_one() { # run_one VARIANT: prints the receiver's bit/s and its CPU seconds per GiB read
  case $1 in
    nc_kernel | nc_each)
      local extra=(--rcvbuf kernel)
      [ "$1" = nc_each ] && extra=(--sink-wakes each)
      "${pre[@]}" "$NC" run tcp --duration "$secs" --msg-size 128K "${nc_pin[@]}" \
        "${extra[@]}" --json -q --no-store >"$out/tcp_$1.json"
      nc_figures "$out/tcp_$1.json"
      ;;
    nc)
      "${pre[@]}" "$NC" run tcp --duration "$secs" --msg-size 128K "${nc_pin[@]}" \
        --json -q --no-store >"$out/tcp_$1.json"
      nc_figures "$out/tcp_$1.json"
      python3 - "$out/tcp_$1.json" >>"$out/tcp_rwnd.txt" <<'PY'
import json, statistics, sys
run = json.load(open(sys.argv[1]))
m = [x for x in run["series"]["metrics"] if (x.get("labels") or {}).get("flow")]
acked = [x for x in m if x["name"] == "tcp_bytes_acked_per_s"]
num = lambda x: [v for v in x["values"] if isinstance(v, (int, float))]
sender = max(acked, key=lambda x: sum(num(x)))["labels"] if acked else None
rwnd = [num(x) for x in m if x["name"] == "tcp_rwnd_limited_pct" and x["labels"] == sender]
retrans = sum(f.get("retransmits") or 0 for f in run["results"].get("flows", []))
print(f"{statistics.median(rwnd[0]) if rwnd and rwnd[0] else float('nan')} {retrans}")
PY
      ;;
    iperf3 | iperf3_again)
      "${pre[@]}" iperf3 -s -B 127.0.0.1 -p "$port" -1 >/dev/null 2>&1 &
      server=$!
      sleep 0.3
      "${pre[@]}" iperf3 -c 127.0.0.1 -p "$port" -t "$secs" -l 128K "${ip_pin[@]}" -J \
        >"$out/tcp_$1.json" || true
      wait "$server" || true
      server=""
      python3 - "$out/tcp_$1.json" <<'PY'
import json, sys
end = json.load(open(sys.argv[1]))["end"]
rx = end["sum_received"]
# The server's process CPU (3.12's server is one thread) over the receive time, per GiB read.
cpu_s = end["cpu_utilization_percent"]["remote_total"] / 100 * rx["seconds"]
tx = end["sum_sent"]
tx_cpu_s = end["cpu_utilization_percent"]["host_total"] / 100 * tx["seconds"]
print(f"{rx['bits_per_second']},{cpu_s / (rx['bytes'] / 2**30)},{tx_cpu_s / (tx['bytes'] / 2**30)},"
      f"{tx.get('retransmits') or 0}")
PY
      ;;
  esac
}

res="$out/tcp_rounds.txt"
: >"$res"
: >"$out/tcp_rwnd.txt"
for r in $(seq 1 "$rounds"); do
  # Rotated one place each round, so every variant runs in every position equally often: with
  # the order only reversed, the middle one never moved, and the middle run was the faster
  # (iperf3 / iperf3 had medians of 0.84 and 0.91 over 7 rounds).
  k=$((r % ${#variants[@]}))
  order=("${variants[@]:k}" "${variants[@]:0:k}")
  line="$r"
  for v in "${order[@]}"; do
    line="$line $v=$(run_one "$v")"
  done
  echo "$line" >>"$res"
  echo "round $r/$rounds: $line" >&2
done

python3 - "$res" "$rounds" "$secs" "${PIN:-scheduler}" "${PRIO:-normal}" "$out/tcp_rwnd.txt" <<'PY'
import math, statistics as st, sys
rows, cpu, txcpu, retr = [], [], [], []
for line in open(sys.argv[1]):
    parts = line.split()
    cells = {k: [float(x) for x in v.split(",")] for k, v in (p.split("=") for p in parts[1:])}
    rows.append({k: v[0] for k, v in cells.items()})
    cpu.append({k: v[1] for k, v in cells.items()})
    txcpu.append({k: v[2] for k, v in cells.items()})
    retr.append({k: v[3] for k, v in cells.items()})
rwnd = [tuple(float(x) for x in line.split()) for line in open(sys.argv[6])]
print(f"TCP 1 stream, loopback, 128 KiB writes, {sys.argv[2]} rounds x {sys.argv[3]} s, "
      f"placement: {sys.argv[4]}, priority: {sys.argv[5]}")
names = [k for k in rows[0] if k != "iperf3"]
print("round  iperf3 Gbit/s  " + "  ".join(f"{n:>12} Gbit/s  ratio" for n in names)
      + "  nc rwnd-limited %  nc retrans")
for i, row in enumerate(rows, 1):
    cells = "  ".join(f"{row[n] / 1e9:19.2f}  {row[n] / row['iperf3']:5.3f}" for n in names)
    share, retrans = rwnd[i - 1] if i <= len(rwnd) else (math.nan, 0)
    print(f"{i:5}  {row['iperf3'] / 1e9:13.2f}  {cells}  {share:17.1f}  {retrans:10.0f}")
for n in names:
    ratios = [row[n] / row["iperf3"] for row in rows]
    print(f"{n} / iperf3: median {st.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}, "
          f"rounds >= 1.0: {sum(r >= 1.0 for r in ratios)}/{len(ratios)}")
# The receiver's CPU per GiB read: what the reading side pays per byte, much steadier than the
# throughput (which swings with the machine), and where a slower reader would show first.
# The sender's likewise: on loopback it also carries the stack's softirq work, and is the
# side that runs out of CPU first. Which thread pays for a segment's receive processing moves
# between the two: one that arrives while the reader holds the socket goes to its backlog and
# is processed by the reader, on the reader's CPU. So the sum of the two is the transfer's own
# cost per GiB, whoever paid it.
both = [{k: c[k] + t[k] for k in c} for c, t in zip(cpu, txcpu)]
for side, table in (("receiver", cpu), ("sender", txcpu), ("sender + receiver", both)):
    for n in names:
        per = [c[n] / c["iperf3"] for c in table if c["iperf3"] > 0 and not math.isnan(c[n])]
        if per:
            print(f"{n} {side} CPU per GiB / iperf3's: median {st.median(per):.3f}, "
                  f"range {min(per):.3f}-{max(per):.3f} (iperf3 median "
                  f"{st.median(c['iperf3'] for c in table):.3f} s/GiB)")
# Segments each sender retransmitted (tcp_info for netceil, iperf3's sum_sent.retransmits): on
# loopback every one is spurious, and a congestion-window cut.
print("sender retransmits per run: " + ", ".join(
    f"{k} median {st.median(r[k] for r in retr):.0f} (range {min(r[k] for r in retr):.0f}-"
    f"{max(r[k] for r in retr):.0f})" for k in retr[0]))
# The control: a tool as fast as iperf3 is >= 1.0 in a round with the odds of a coin, so the
# nc ratios are read against the spread of iperf3's own.
ctl = [row["iperf3_again"] / row["iperf3"] for row in rows]
nc = [row["nc"] / row["iperf3"] for row in rows]
logs = sorted(abs(math.log(r)) for r in ctl)
print(f"control: iperf3 / iperf3 varies by a median factor of {math.exp(st.median(logs)):.3f} "
      f"from round to round (largest {math.exp(logs[-1]):.3f}); "
      f"nc / iperf3's median {st.median(nc):.3f} is "
      + ("within" if min(ctl) <= st.median(nc) <= max(ctl) else "outside")
      + f" the control's range {min(ctl):.3f}-{max(ctl):.3f}")
both_ip = [row["nc"] / ((row["iperf3"] + row["iperf3_again"]) / 2) for row in rows]
print(f"nc / the mean of the round's two iperf3 runs: median {st.median(both_ip):.3f}, "
      f"range {min(both_ip):.3f}-{max(both_ip):.3f}, rounds >= 1.0: "
      f"{sum(r >= 1.0 for r in both_ip)}/{len(both_ip)}")
shares = [s for s, _ in rwnd if not math.isnan(s)]
if shares:
    print(f"nc sender receive-window-limited (median of 1 s rows): median {st.median(shares):.1f} %, "
          f"range {min(shares):.1f}-{max(shares):.1f} %")
PY
