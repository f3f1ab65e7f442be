/* Spins in user space for SECONDS without blocking or doing any I/O: a polling loop with
 * nothing to poll (or a CPU hog). Bounded: it exits by itself. */
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 5.0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    volatile unsigned long n = 0;
    do {
        for (int i = 0; i < 100000; i++) n++;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < secs);
    return 0;
}
