/* The floor of a /proc sampler: what the kernel charges just to produce the files netceil's
 * sampler always reads, with nothing parsed, computed or kept.
 *
 * Every INTERVAL_MS it reads the fast tier (/proc/stat, /proc/softirqs, /proc/net/dev,
 * /proc/net/softnet_stat), and every max(INTERVAL_MS, 100) ms the part of the slow tier that
 * netceil reads whatever the machine does (/proc/pressure/{cpu,io,memory}), each with one
 * pread at offset 0 from a descriptor kept open, then sleeps to the next tick of a fixed
 * schedule (clock_nanosleep, TIMER_ABSTIME), as netceil's sampler does. It leaves out what
 * netceil reads only when it is due or when counters moved (/proc/interrupts, /proc/net/snmp,
 * /proc/net/netstat, qdiscs, threads, processes), so it is a lower bound: a sampler that reads
 * these files cannot cost less. It runs until SECONDS have passed, then prints nothing; bench/
 * sampler-floor.sh measures its CPU from outside, as it measures netceil's.
 *
 * usage: sampler_floor INTERVAL_MS SECONDS
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 16] __attribute__((aligned(4096)));

static const char *fast[] = {"/proc/stat", "/proc/softirqs", "/proc/net/dev",
                             "/proc/net/softnet_stat"};
static const char *slow[] = {"/proc/pressure/cpu", "/proc/pressure/io",
                             "/proc/pressure/memory"};
#define N(a) (sizeof(a) / sizeof((a)[0]))

static void read_all(const int *fds, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (fds[i] < 0)
            continue;
        /* A whole file: these are all shorter than one read's buffer. */
        if (pread(fds[i], buf, sizeof buf, 0) < 0 && errno != EINTR) {
            perror("pread");
            exit(1);
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s INTERVAL_MS SECONDS\n", argv[0]);
        return 2;
    }
    long ms = atol(argv[1]);
    long secs = atol(argv[2]);
    if (ms < 1 || ms > 60000 || secs < 1 || secs > 3600) {
        fprintf(stderr, "%s: INTERVAL_MS in 1..60000 and SECONDS in 1..3600\n", argv[0]);
        return 2;
    }
    int ffd[N(fast)], sfd[N(slow)];
    for (size_t i = 0; i < N(fast); i++) {
        ffd[i] = open(fast[i], O_RDONLY | O_CLOEXEC);
        if (ffd[i] < 0) {
            perror(fast[i]);
            return 1;
        }
    }
    /* A kernel without PSI has no /proc/pressure: netceil notes it missing, the floor skips it. */
    for (size_t i = 0; i < N(slow); i++)
        sfd[i] = open(slow[i], O_RDONLY | O_CLOEXEC);
    long slow_every = ms >= 100 ? 1 : (100 + ms - 1) / ms;
    long ticks = secs * 1000 / ms;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (long k = 0; k < ticks; k++) {
        read_all(ffd, N(fast));
        if (k % slow_every == 0)
            read_all(sfd, N(slow));
        next.tv_nsec += ms * 1000000L;
        while (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {
        }
    }
    return 0;
}
