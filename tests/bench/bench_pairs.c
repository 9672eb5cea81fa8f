/* bench_pairs.c - single-threaded malloc/free pairs over a small live ring.
 *
 * Purpose: the allocator's fast path.  Each step frees ring[i] and puts a new
 * object of a random size in its place, then touches its first and last byte
 * (so an allocator that hands out unmapped or unusable memory is caught by
 * a crash, and the cost of first touch is paid like a real program would).
 * Sizes: 90% in 16..512 bytes, 10% in 513..4096 bytes.
 *
 * Invariants: deterministic (fixed xorshift seed); the ring never holds more
 * than `slots` objects; every object is freed before exit.
 * Locks: none (one thread).
 *
 * Usage: bench_pairs [-n pairs] [-s ring_slots]
 * Prints one line: name, elapsed seconds, ops/s (one op = one malloc+free pair).
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
  if (r % 10 != 0) return 16 + (size_t)((r >> 8) % 497);   /* 16..512 */
  return 513 + (size_t)((r >> 8) % 3584);                  /* 513..4096 */
}

static void usage(const char *prog) {
  fprintf(stderr, "usage: %s [-n pairs (default 20000000)] [-s ring slots (default 10000)]\n", prog);
  exit(2);
}

int main(int argc, char **argv) {
  long pairs = 20000000;
  long slots = 10000;
  int opt;
  while ((opt = getopt(argc, argv, "n:s:h")) != -1) {
    switch (opt) {
    case 'n': pairs = atol(optarg); break;
    case 's': slots = atol(optarg); break;
    default: usage(argv[0]);
    }
  }
  if (pairs < 1 || slots < 1) usage(argv[0]);

  unsigned char **ring = calloc((size_t)slots, sizeof *ring);
  if (!ring) { perror("calloc"); return 1; }
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  unsigned long sum = 0;

  double t0 = now_s();
  for (long i = 0; i < pairs; i++) {
    long k = i % slots;
    if (ring[k]) sum += ring[k][0];
    free(ring[k]);
    size_t sz = pick_size(&rng);
    unsigned char *p = malloc(sz);
    if (!p) { fprintf(stderr, "malloc(%zu) failed\n", sz); return 1; }
    p[0] = (unsigned char)i;
    p[sz - 1] = (unsigned char)sz;
    ring[k] = p;
  }
  double t1 = now_s();

  for (long k = 0; k < slots; k++) free(ring[k]);
  free(ring);
  double el = t1 - t0;
  printf("bench_pairs: %.3f s, %.0f ops/s (pairs=%ld slots=%ld check=%lu)\n",
         el, (double)pairs / el, pairs, slots, sum & 0xff);
  return 0;
}
