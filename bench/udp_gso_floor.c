// udp_gso_floor: what the kernel alone does with UDP GSO (and optionally GRO) on loopback, for
// comparison with `netceil run udp --gso [--gro]`. Nothing per datagram but counting:
//  - sender: one thread, UDP_SEGMENT set on the socket, sendmmsg of 8 super-buffers per call,
//    each as many PAYLOAD-byte datagrams as fit 65507 bytes (64 at most);
//  - receiver: one thread, recvmmsg of 16 page-aligned buffers of 64 KiB; with GRO on, a read holding n
//    coalesced datagrams (segment size from the UDP_GRO control message) counts n.
// Build: cc -O2 -pthread -o udp_gso_floor udp_gso_floor.c
// Run:   ./udp_gso_floor PAYLOAD SECONDS PORT GRO(0|1) RCVBUF_BYTES
// Prints one line: payload, segments per send, sent and received datagrams/s, loss %.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

enum { SEND_MSGS = 8, RECV_MSGS = 16, SLOT = 65536, MAX_SEGS = 64, MAX_SUPER = 65507 };

struct rx_args {
    int port, gro, rcvbuf;
    volatile int done;
    long datagrams;
};

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static struct sockaddr_in lo_addr(int port) {
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return sa;
}

static void die(const char *what) {
    fprintf(stderr, "udp_gso_floor: %s: %s\n", what, strerror(errno));
    exit(1);
}

// Datagrams in one read: one, or with GRO the read's length cut by its segment size.
static long datagrams_in(struct msghdr *h, unsigned len) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
        if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
            int seg;
            memcpy(&seg, CMSG_DATA(c), sizeof seg);
            if (seg > 0) return (len + (unsigned)seg - 1) / (unsigned)seg;
        }
    }
    return 1;
}

static void *rx_thread(void *p) {
    struct rx_args *a = p;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) die("socket");
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &a->rcvbuf, sizeof a->rcvbuf))
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &a->rcvbuf, sizeof a->rcvbuf);
    int on = 1;
    if (a->gro && setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof on)) die("setsockopt UDP_GRO");
    struct sockaddr_in sa = lo_addr(a->port);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa)) die("bind");
    struct timeval tmo = {.tv_sec = 0, .tv_usec = 50000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof tmo);
    // Page-aligned: into a buffer 16 bytes past a page (where malloc puts a block this size)
    // the kernel's copy to user space costs 3-4 times as much (bench/copy_align.c), which
    // would make this floor lower than the kernel's ceiling.
    char *bufs = aligned_alloc(4096, (size_t)RECV_MSGS * SLOT);
    if (!bufs) die("aligned_alloc");
    static char ctl[RECV_MSGS][CMSG_SPACE(sizeof(int))];
    struct iovec iov[RECV_MSGS];
    struct mmsghdr msgs[RECV_MSGS];
    while (!a->done) {
        for (int i = 0; i < RECV_MSGS; i++) {
            iov[i].iov_base = bufs + (size_t)i * SLOT;
            iov[i].iov_len = SLOT;
            memset(&msgs[i], 0, sizeof msgs[i]);
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
            msgs[i].msg_hdr.msg_control = ctl[i];
            msgs[i].msg_hdr.msg_controllen = sizeof ctl[i];
        }
        int got = recvmmsg(fd, msgs, RECV_MSGS, 0, NULL);
        for (int i = 0; i < got; i++) a->datagrams += datagrams_in(&msgs[i].msg_hdr, msgs[i].msg_len);
    }
    free(bufs);
    close(fd);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s PAYLOAD SECONDS PORT GRO(0|1) RCVBUF_BYTES\n", argv[0]);
        return 2;
    }
    int payload = atoi(argv[1]);
    double seconds = atof(argv[2]);
    struct rx_args rx = {.port = atoi(argv[3]), .gro = atoi(argv[4]), .rcvbuf = atoi(argv[5])};
    if (payload < 1 || payload * 2 > MAX_SUPER || seconds <= 0 || seconds > 600) {
        fprintf(stderr, "udp_gso_floor: PAYLOAD must be 1..%d and SECONDS 0..600\n", MAX_SUPER / 2);
        return 2;
    }
    int segs = MAX_SUPER / payload;
    if (segs > MAX_SEGS) segs = MAX_SEGS;
    size_t super = (size_t)segs * (size_t)payload;

    pthread_t th;
    if (pthread_create(&th, NULL, rx_thread, &rx)) die("pthread_create");
    usleep(100000);

    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) die("socket");
    struct sockaddr_in sa = lo_addr(rx.port);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa)) die("connect");
    if (setsockopt(fd, SOL_UDP, UDP_SEGMENT, &payload, sizeof payload)) die("setsockopt UDP_SEGMENT");
    char *data = calloc(1, super);
    if (!data) die("calloc");
    struct iovec iov[SEND_MSGS];
    struct mmsghdr msgs[SEND_MSGS];
    memset(msgs, 0, sizeof msgs);
    for (int i = 0; i < SEND_MSGS; i++) {
        iov[i].iov_base = data;
        iov[i].iov_len = super;
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    long sent = 0;
    double t0 = mono_s(), t1 = t0;
    while (t1 - t0 < seconds) {
        int n = sendmmsg(fd, msgs, SEND_MSGS, 0);
        if (n > 0) sent += (long)n * segs;
        t1 = mono_s();
    }
    usleep(200000); // let the receiver read what is queued
    rx.done = 1;
    pthread_join(th, NULL);
    close(fd);
    free(data);
    double el = t1 - t0;
    printf("payload=%d segs=%d sent_pps=%.0f received_pps=%.0f loss_pct=%.2f\n", payload, segs,
           sent / el, rx.datagrams / el, sent ? 100.0 * (double)(sent - rx.datagrams) / (double)sent : 0.0);
    return 0;
}
