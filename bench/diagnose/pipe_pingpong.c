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
        pin(1);
        while (read(ab[0], &c, 1) == 1 && c == 0) write(ba[1], &c, 1);
        return 0;
    }
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
