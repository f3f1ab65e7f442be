/* Two processes pass one byte back and forth over two pipes for SECONDS, the parent pinned to
 * CPU 0 and the child to CPU 1: every hand-off is a cross-CPU wake-up (a reschedule IPI).
 * Bounded: both exit by themselves. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 5.0;
    int ab[2], ba[2];
    char c = 0;
    if (pipe(ab) || pipe(ba)) return 1;
    pid_t child = fork();
    if (child == 0) {
        /* Only its own ends stay open, so a parent that dies (killed by PID) ends the
         * child too: its read returns 0. It is also bounded by time on its own. */
        close(ab[1]);
        close(ba[0]);
        pin(1);
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        while (read(ab[0], &c, 1) == 1 && c == 0) {
            write(ba[1], &c, 1);
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((t.tv_sec - t0.tv_sec) > secs + 1) break;
        }
        return 0;
    }
    close(ab[0]);
    close(ba[1]);
    pin(0);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        write(ab[1], &c, 1);
        read(ba[0], &c, 1);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < secs);
    c = 1;
    write(ab[1], &c, 1);
    waitpid(child, NULL, 0);
    return 0;
}
