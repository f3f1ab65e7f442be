# The held-out half of batch7 (see batch7.sh), written with it on 2026-11-26 before the
# analyzer change, run only after it and reported on its own.
# Same conventions as train.sh.

b7h_autogroup_on() {
  [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ] ||
    { echo "batch7h: kernel.sched_autogroup_enabled is not 1" >&2; return 1; }
}

case_b7h_nice19_thief_other_session_tcp() {
  # A nice-19 spinner in its own session on the one CPU a TCP run may use: even at nice 19 its
  # session takes an equal share of that core.
  b7h_autogroup_on || return 1
  setsid taskset -c 0 nice -n 19 "$bin/spin" 12 & started $!
  taskset -c 0 "$nc" run tcp --duration 5 --json -q --no-store >"$1"
}
case_b7h_two_niced_sessions_on_both_cpus() {
  # Two nice-15 spinners, each in its own session, one per CPU, and an unpaced UDP run free to
  # use both: each core is shared with a session that does not yield.
  b7h_autogroup_on || return 1
  for c in 0 1; do setsid taskset -c $c nice -n 15 "$bin/spin" 12 & started $!; done
  "$nc" run udp --size 64 --duration 5 --json -q --no-store >"$1"
}

EXPECT_SET="
b7h_nice19_thief_other_session_tcp|cpu_contention|a nice-19 spinner in another session takes about half of the only CPU the TCP flow may use: autogroup shares the core between sessions whatever their nice
b7h_two_niced_sessions_on_both_cpus|cpu_contention|each CPU is shared with a nice-15 spinner in a session of its own, which does not yield: the workload gets about half of each core
"
HEALTHY_SET=""
