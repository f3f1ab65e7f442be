# A batch of induced cases for bench/diagnose.sh (`--set batch7`), written with their expected
# causes on 2026-11-26, before the analyzer learnt that `nice` does not rank programs across
# sessions when the kernel groups them (kernel.sched_autogroup_enabled=1, the default on
# Debian): there a niced program in another session competes with the workload as an equal.
# Found live: helpers' `nice -n 10` builds, each in its own session, took 75 % of the one core
# a `taskset -c 0` run could use, and the verdict named the socket buffer. This is the training
# half; batch7h.sh, written at the same time, is run only after the change, on its own.
# Same conventions as train.sh.

# Every case here needs autogroup on to mean what it says; where it is off, each one is an
# error, not a verdict.
b7_autogroup_on() {
  [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ] ||
    { echo "batch7: kernel.sched_autogroup_enabled is not 1" >&2; return 1; }
}

case_b7_niced_thief_other_session() {
  # A spinner at nice 10 in a session of its own, on the one CPU netceil may use, at a rate one
  # core carries alone: autogroup gives its session an equal share, so it takes about half.
  b7_autogroup_on || return 1
  setsid taskset -c 0 nice -n 10 "$bin/spin" 12 & started $!
  taskset -c 0 "$nc" run udp --size 64 --rate 150k --duration 6 --json -q --no-store >"$1"
}
case_b7_niced_spinner_same_session_paced() {
  # The same spinner at nice 19 in netceil's own session: there nice orders them, the spinner
  # gets what netceil leaves, and a rate one core carries easily is delivered.
  b7_autogroup_on || return 1
  taskset -c 0 nice -n 19 "$bin/spin" 12 & started $!
  taskset -c 0 "$nc" run udp --size 64 --rate 30k --duration 5 --json -q --no-store >"$1"
}

EXPECT_SET="
b7_niced_thief_other_session|cpu_contention|a nice-10 spinner in another session takes about half of the only CPU the workload may use: with autogroup on its nice does not yield to another session, so it is a thief like any other
b7_niced_spinner_same_session_paced|no_ceiling|a nice-19 spinner in netceil's own session takes only what netceil leaves; 30 kpps on one core is delivered in full
"
HEALTHY_SET="b7_niced_spinner_same_session_paced"
