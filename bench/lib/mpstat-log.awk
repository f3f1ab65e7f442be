# A sysstat `mpstat -P ALL 1` report of n lines on 2 CPUs (awk -v n=LINES -f
# bench/lib/mpstat-log.awk): a banner, then per second a header and the all, 0 and 1 rows,
# crossing midnight as a long capture does. Seeded: the same file every time.
# Used by bench/import-big.sh.
BEGIN {
  srand(3); i = 0; t = 0
  print "Linux 6.18.44 (bench) \t11/21/26 \t_x86_64_\t(2 CPU)"; i++
  while (i < n) {
    print ""
    printf "%02d:%02d:%02d     CPU    %%usr   %%nice    %%sys %%iowait    %%irq   %%soft  %%steal  %%guest  %%gnice   %%idle\n", int(t / 3600) % 24, int(t / 60) % 60, t % 60
    t++
    for (c = 0; c < 3; c++) {
      us = rand() * 60; sy = rand() * 30; so = rand() * 5
      printf "%02d:%02d:%02d     %3s   %5.2f    0.00   %5.2f    0.00    0.00   %5.2f    0.00    0.00    0.00   %5.2f\n",
        int(t / 3600) % 24, int(t / 60) % 60, t % 60, (c == 0 ? "all" : c - 1), us, sy, so, 100 - us - sy - so
    }
    i += 5
  }
}
