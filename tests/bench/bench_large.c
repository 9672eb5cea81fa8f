/* bench_large.c - large blocks allocated, touched and freed repeatedly.
 *
 * Purpose: the large-object path and the policy for returning memory to the
 * OS.  A few slots (default 4) hold blocks of random size 256 KiB .. 8 MiB
 * (log-uniform); each step frees one slot and allocates a new block, writing
 * one byte per 4 KiB page.  An allocator that unmaps or MADV_DONTNEEDs freed
 * blocks immediately pays a page fault per page on the next use (expensive
 * on this machine); one that keeps them pays nothing but holds more RSS.
 *
 * Invariants: deterministic seed; at most `slots` blocks live; all freed at
 * the end.  Locks: none (one thread).
 *
 * Usage: bench_large [-s slots] [-n replacements]
 * Prints one line: elapsed seconds, ops/s (op = one free + malloc + touch).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *s = x;
  return x;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t pick_size(uint64_t *rng) {
  uint64_t r = rng_next(rng);
  unsigned k = (unsigned)(r % 5);                      /* 256K << 0..4 */
  size_t lo = (size_t)256 << 10 << k;
  return lo + (size_t)((r >> 8) % (lo + 1));           /* up to 8 MiB */
}

static unsigned char *new_block(uint64_t *rng, size_t *szout) {
  size_t sz = pick_size(rng);
  unsigned char *p = malloc(sz);
  if (!p) { fprintf(stderr, "malloc(%zu) failed\n", sz); exit(1); }
  for (size_t off = 0; off < sz; off += 4096) p[off] = (unsigned char)(off >> 12);
  p[sz - 1] = 7;
  *szout = sz;
  return p;
}

static void usage(const char *prog) {
  fprintf(stderr, "usage: %s [-s slots (4)] [-n replacements (4000)]\n", prog);
  exit(2);
}

int main(int argc, char **argv) {
  long slots = 4;
  long n = 4000;
  int opt;
  while ((opt = getopt(argc, argv, "s:n:h")) != -1) {
    switch (opt) {
    case 's': slots = atol(optarg); break;
    case 'n': n = atol(optarg); break;
    default: usage(argv[0]);
    }
  }
  if (slots < 1 || n < 0) usage(argv[0]);

  unsigned char **blk = calloc((size_t)slots, sizeof *blk);
  size_t *size = calloc((size_t)slots, sizeof *size);
  if (!blk || !size) { perror("calloc"); return 1; }
  uint64_t rng = 0xBF58476D1CE4E5B9ull;
  unsigned long sum = 0;
  double bytes = 0;

  double t0 = now_s();
  for (long i = 0; i < slots; i++) blk[i] = new_block(&rng, &size[i]);
  for (long i = 0; i < n; i++) {
    long k = (long)(rng_next(&rng) % (uint64_t)slots);
    sum += blk[k][size[k] - 1];
    free(blk[k]);
    blk[k] = new_block(&rng, &size[k]);
    bytes += (double)size[k];
  }
  double el = now_s() - t0;

  for (long i = 0; i < slots; i++) free(blk[i]);
  free(blk);
  free(size);
  printf("bench_large: %.3f s, %.0f ops/s (slots=%ld n=%ld mean_block=%.0f KiB check=%lu)\n",
         el, (double)n / el, slots, n, n ? bytes / (double)n / 1024.0 : 0.0, sum & 0xff);
  return 0;
}
