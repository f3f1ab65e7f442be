# The training set of the analyzer's induced-condition suite (bench/diagnose.sh --set train):
# the cases the analyzer is tuned on. Each case induces one condition and writes netceil's
# JSON to $1; EXPECT_SET says which causes count as right and why, by mechanism.
# (Functions and variables such as $nc, $bin, $port, set_sysctl, started and ns_pair come from
# diagnose.sh.)

case_taskset_one_core_unpaced() {
  # netceil held to CPU 0: its sender, its receiver and loopback's receive softirq share the one
  # core the workload may use, while CPU 1 idles.
  taskset -c 0 "$nc" run udp --size 64 --duration 5 --json -q --no-store >"$1"
}
case_thief_on_the_workloads_cpu() {
  # A spinner on CPU 0, and netceil held to CPU 0 at a rate one core could carry alone.
  taskset -c 0 "$bin/spin" 12 & started $!
  taskset -c 0 "$nc" run udp --size 64 --rate 150k --duration 6 --json -q --no-store >"$1"
}
case_thief_on_another_cpu() {
  # The same spinner, but netceil held to CPU 1: the spinner takes nothing the workload uses.
  taskset -c 0 "$bin/spin" 12 & started $!
  taskset -c 1 "$nc" run udp --size 64 --rate 20k --duration 5 --json -q --no-store >"$1"
}
case_tcp_small_receive_buffer() {
  # --rcvbuf kernel: by default netceil's receiver fixes its own buffer on a path inside this
  # host (SO_RCVBUF, which tcp_rmem does not bound), and this case would induce nothing.
  set_sysctl net.ipv4.tcp_rmem "4096 4096 4096"
  "$nc" run tcp --duration 5 --rcvbuf kernel --json -q --no-store >"$1"
}
case_tcp_small_send_buffer() {
  set_sysctl net.ipv4.tcp_wmem "4096 4096 4096"
  "$nc" run tcp --duration 5 --json -q --no-store >"$1"
}
case_two_senders_unpaced() {
  # Two unpaced senders and a receiver on a 2-core machine: every core is full.
  "$nc" run udp --size 64 --threads 2 --flows 2 --duration 5 --json -q --no-store >"$1"
}
case_watch_iperf3_across_namespaces() {
  # iperf3's server started with ip netns exec in B, the watched client in A: the server is the
  # workload's other end, not a program taking its CPU.
  ns_pair
  ip netns exec $NSB iperf3 -s -1 -p $port >/dev/null 2>&1 & started $!
  sleep 0.5
  "$nc" watch --json -q --no-store -- ip netns exec $NSA iperf3 -c 198.18.0.2 -p $port -t 5 >"$1"
}
case_paced_beside_disk_writes() {
  # Direct writes keep the disk busy (iowait) while a paced run gets its rate.
  local dd
  dd if=/dev/zero of="$bin/dd.out" bs=1M count=3000 oflag=direct status=none & dd=$!
  started $dd
  "$nc" run udp --size 64 --rate 20k --duration 5 --json -q --no-store >"$1"
  kill "$dd" 2>/dev/null; wait "$dd" 2>/dev/null; rm -f "$bin/dd.out"
  return 0
}

EXPECT_SET="
taskset_one_core_unpaced|hot_cpu cpu_bound|the workload may use CPU 0 only; its threads and the receive softirq share it, so that core is the ceiling (drops at the socket follow from the starved reader)
thief_on_the_workloads_cpu|cpu_contention|a spinner takes about half of the only CPU the workload may use, although CPU 1 idles: it must be named as the thief
thief_on_another_cpu|no_ceiling|the spinner is on CPU 0, the workload on CPU 1 at 20 kpps: nothing binds the workload
tcp_small_receive_buffer|tcp_receive_window|tcp_rmem of 4 KiB: the receiver advertises a tiny window and the sender waits for it
tcp_small_send_buffer|tcp_send_buffer|tcp_wmem of 4 KiB: the sender cannot keep enough data queued
two_senders_unpaced|cpu_bound hot_cpu|two senders and a receiver fill both cores: the CPUs, not one thread, are the ceiling
watch_iperf3_across_namespaces|thread_saturated sender_saturated|iperf3's client thread moves data at a full core; its server across the namespace is its peer, not contention
paced_beside_disk_writes|no_ceiling|20 kpps is delivered in full while a disk writer runs: nothing binds the network workload (the iowait is noted, not a ceiling of it)
"
HEALTHY_SET="thief_on_another_cpu paced_beside_disk_writes"
