# A batch of induced cases for bench/diagnose.sh (`--set batch8`), written with their expected
# causes on 2026-11-28, before netceil took a CPU's busy time as the wall time less its idle,
# iowait and steal time instead of the sum of /proc/stat's tick-sampled busy columns. On this
# kernel (NO_HZ idle, tick-based accounting) idle time is exact, while the busy columns only
# count the scheduler ticks that land in busy time; a load woken thousands of times a second
# runs in bursts between ticks, and its CPU's busy time read 1 % where 34 % was true
# (`run rr --rate 5000` pinned to one CPU). The change raises the busy figures of paced and
# request/response loads; these cases check that loads a CPU carries are not then called
# ceilings. This is the training half; batch8h.sh, written at the same time, is run only
# after the change, on its own. Same conventions as train.sh; $bin/burst is
# bench/diagnose/burst.c (spin BUSY_US, sleep IDLE_US, for SECONDS).

case_b8_rr_paced_one_cpu() {
  # Request/response at 12 k/s with client, echo and softirq on CPU 0: the core is about two
  # thirds busy in bursts between wake-ups, and every request is answered.
  taskset -c 0 "$nc" run rr --rate 12000 --duration 5 --json -q --no-store >"$1"
}
case_b8_burst_neighbour_paced_rr() {
  # The same on CPU 0 at 15 k/s beside a program that spins 50 us and sleeps 30 us on that CPU
  # (about half a core): CPU 0 is nearly full, yet the scheduler serves the request path first
  # and the rate is delivered in full.
  taskset -c 0 "$bin/burst" 50 30 9 & started $!
  taskset -c 0 "$nc" run rr --rate 15000 --duration 5 --json -q --no-store >"$1"
}
case_b8_paced_udp_two_cpus() {
  # 64 B datagrams paced at 100 kpps, free to use both CPUs: each is partly busy, the rate is
  # delivered.
  "$nc" run udp --size 64 --rate 100k --duration 5 --json -q --no-store >"$1"
}

EXPECT_SET="
b8_rr_paced_one_cpu|no_ceiling|12 k requests a second are answered in full; CPU 0 is busy in bursts but has room
b8_burst_neighbour_paced_rr|no_ceiling|the neighbour takes room on CPU 0, but the request path wins the CPU each time it wakes and the 15 k/s rate is delivered: nothing bound the workload
b8_paced_udp_two_cpus|no_ceiling buffer_drops|100 kpps of 64 B datagrams reaches the receiver on two CPUs, but its socket buffer overflows now and then (0.02–0.6 % of the datagrams in six runs): no ceiling when that loss is negligible, the buffer when it is not
"
# b8_paced_udp_two_cpus is not a healthy control since its expectation was amended: its loss
# is real, and naming the buffer for it is no false claim.
HEALTHY_SET="b8_rr_paced_one_cpu b8_burst_neighbour_paced_rr"
