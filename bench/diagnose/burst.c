/* Works in short bursts: spins BUSY_US microseconds, sleeps IDLE_US, again and again for
 * SECONDS. A program woken by a timer thousands of times a second: its CPU time is real, but
 * the scheduler tick rarely lands inside a burst, so /proc/stat's tick-sampled busy time
 * misses most of it (idle time there is exact). Bounded: it exits by itself. */
#include <stdlib.h>
#include <time.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    double busy = atof(argv[1]) / 1e6, end = now_s() + atof(argv[3]);
    struct timespec idle = {0, atol(argv[2]) * 1000L};
    while (now_s() < end) {
        double until = now_s() + busy;
        while (now_s() < until) {
        }
        nanosleep(&idle, NULL);
    }
    return 0;
}
