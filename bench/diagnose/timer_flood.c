/* Arms a 1 µs high-resolution timer over and over for SECONDS: a flood of timer interrupts
 * and wake-ups with no device involved. Bounded: it exits by itself. */
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 5.0;
    struct timespec start, now, tick = {0, 1000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        nanosleep(&tick, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < secs);
    return 0;
}
