# A sysstat `sar -u 1` report of n lines (awk -v n=LINES -f bench/lib/sar-log.awk): a banner,
# then one section whose header repeats every 600 rows (as after a `sar` restart), one row
# a second, crossing midnight as a long capture does. Seeded: the same file every time.
# Used by bench/import-big.sh.
BEGIN {
  srand(2); i = 0; t = 0
  print "Linux 6.18.44 (bench) \t11/21/26 \t_x86_64_\t(2 CPU)"; i++
  while (i < n) {
    if (i % 600 == 1) {
      print ""
      printf "%02d:%02d:%02d        CPU     %%user     %%nice   %%system   %%iowait    %%steal     %%idle\n", int(t / 3600) % 24, int(t / 60) % 60, t % 60
      i += 2; continue
    }
    t++
    us = rand() * 60; sy = rand() * 30; wa = rand() * 3
    printf "%02d:%02d:%02d        all     %5.2f      0.00     %5.2f      %4.2f      0.00     %5.2f\n",
      int(t / 3600) % 24, int(t / 60) % 60, t % 60, us, sy, wa, 100 - us - sy - wa
    i++
  }
}
