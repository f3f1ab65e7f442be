# A Linux vmstat -w log of n lines (awk -v n=LINES -f bench/lib/vmstat-log.awk): the header
# repeats every 21 samples, as procps prints it. Shared by bench/import-speed.sh and
# bench/import-big.sh.
BEGIN {
  srand(1); i = 0
  while (i < n) {
    if (i % 23 == 0) {
      print "--procs-- -----------------------memory---------------------- ---swap-- -----io---- -system-- ----------cpu----------"
      print "   r    b         swpd         free         buff        cache   si   so    bi    bo   in   cs  us  sy  id  wa  st  gu"
      i += 2; continue
    }
    us = int(rand() * 60); sy = int(rand() * 30)
    printf "%4d %4d %12d %12d %12d %12d %4d %4d %5d %5d %4d %4d %3d %3d %3d %3d %3d %3d\n",
      int(rand() * 12), int(rand() * 2), 0, 7800000 + int(rand() * 9999), 264152, 15081420,
      0, 0, int(rand() * 100), int(rand() * 90000), 500 + int(rand() * 20000), 900 + int(rand() * 40000),
      us, sy, 100 - us - sy, 0, 0, 0
    i++
  }
}
