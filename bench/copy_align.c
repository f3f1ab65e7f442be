// copy_align.c: what the kernel's copy to user space costs per GiB by the destination's
// offset from a page boundary. A child writes a pipe from a page-aligned buffer (so the
// kernel's source, the pipe's pages, is aligned too); the parent reads it in 1 MiB reads into
// buf + OFFSET and reports its own CPU seconds per GiB. Evidence for netceil-load's buf.rs:
// a heap Vec of this size starts 16 bytes past a page (malloc's header).
//
// build: cc -O2 -o /tmp/copy_align bench/copy_align.c
// usage: /tmp/copy_align OFFSET...   (e.g. 0 16 64; pin it with taskset for steadier figures)
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (64 * 1024)
#define READ (1 << 20)
#define TOTAL (4L << 30)

static double thread_cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static int one(int offset) {
  int p[2];
  if (pipe(p) != 0) return perror("pipe"), 1;
  fcntl(p[0], F_SETPIPE_SZ, 1 << 20);
  pid_t writer = fork();
  if (writer < 0) return perror("fork"), 1;
  if (writer == 0) {
    close(p[0]);
    char *b = aligned_alloc(4096, CHUNK);
    memset(b, 1, CHUNK);
    for (long sent = 0; sent < TOTAL;) {
      ssize_t n = write(p[1], b, CHUNK);
      if (n <= 0) _exit(1);
      sent += n;
    }
    _exit(0);
  }
  close(p[1]);
  char *raw = aligned_alloc(4096, READ + 8192);
  memset(raw, 0, READ + 8192);
  double start = thread_cpu_s();
  long got = 0;
  for (;;) {
    ssize_t n = read(p[0], raw + offset, READ);
    if (n <= 0) break;
    got += n;
  }
  double cpu = thread_cpu_s() - start;
  close(p[0]);
  waitpid(writer, NULL, 0);
  free(raw);
  printf("offset %5d: %.3f s of the reader's CPU per GiB\n", offset, cpu / (got / (double)(1L << 30)));
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: %s OFFSET...\n", argv[0]), 2;
  for (int i = 1; i < argc; i++) {
    int off = atoi(argv[i]);
    if (off < 0 || off > 4096) return fprintf(stderr, "offset %d: expected 0..4096\n", off), 2;
    if (one(off)) return 1;
  }
  return 0;
}
