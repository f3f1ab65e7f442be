# The held-out half of batch8 (see batch8.sh), written with it on 2026-11-28 before netceil
# took a CPU's busy time from its exact idle time, run only after that change and reported on
# its own. Same conventions as train.sh.

case_b8h_rr_paced_two_cpus() {
  # Request/response at 20 k/s, free to use both CPUs: both are partly busy, in bursts.
  "$nc" run rr --rate 20000 --duration 5 --json -q --no-store >"$1"
}
case_b8h_burst_neighbour_paced_udp() {
  # 64 B datagrams paced at 40 kpps on CPU 0 beside a program that spins 40 us and sleeps 40 us
  # there (about 40 % of a core, most of it unseen by the tick): the paced sender spins less
  # and the rate is delivered.
  taskset -c 0 "$bin/burst" 40 40 9 & started $!
  taskset -c 0 "$nc" run udp --size 64 --rate 40k --duration 5 --json -q --no-store >"$1"
}
case_b8h_pinned_unpaced_beside_bursts() {
  # An unpaced UDP run held to CPU 0 while CPU 1 runs a program in 40 us bursts: CPU 0 is the
  # ceiling; CPU 1 is busy but not with anything the workload may use.
  taskset -c 1 "$bin/burst" 40 40 9 & started $!
  taskset -c 0 "$nc" run udp --size 64 --duration 5 --json -q --no-store >"$1"
}

EXPECT_SET="
b8h_rr_paced_two_cpus|no_ceiling|20 k requests a second are answered in full on two CPUs
b8h_burst_neighbour_paced_udp|no_ceiling|40 kpps is delivered in full; the neighbour only takes time the paced sender would have spent waiting
b8h_pinned_unpaced_beside_bursts|hot_cpu cpu_bound|the workload may use CPU 0 only, and fills it with its sender, receiver and softirq; the bursts on CPU 1 take nothing it could use
"
HEALTHY_SET="b8h_rr_paced_two_cpus b8h_burst_neighbour_paced_udp"
