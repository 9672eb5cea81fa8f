/* bench_random_live.c - random replacement over a large live set.
 *
 * Purpose: fragmentation and page-fault behaviour with a big heap.  `slots`
 * objects of log-uniformly distributed size (16 B .. 64 KiB, mean ~8 KiB,
 * so 40000 slots hold ~300 MB) are allocated, then `n` times a random slot
 * is freed and refilled with a new random size.  Every object gets one
 * byte written per 4 KiB page (plus its last byte), so its pages are really
 * faulted in and peak RSS measures what the allocator keeps resident.
 *
 * Invariants: deterministic seed; the live set stays at `slots` objects;
 * everything is freed at the end.  Locks: none (one thread).
 *
 * Usage: bench_random_live [-s slots] [-n replacements]
 * Prints one line: elapsed seconds, ops/s (op = one free + one malloc),
 * live bytes at the end of the run.
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

/* log-uniform in [16, 65536]: pick an octave 16<<k (k = 0..11), then a size
 * uniformly inside it. */
static size_t pick_size(uint64_t *rng) {
  uint64_t r = rng_next(rng);
  unsigned k = (unsigned)(r % 12);
  size_t lo = (size_t)16 << k;
  return lo + (size_t)((r >> 8) % (lo + 1));
}

static unsigned char *new_obj(uint64_t *rng, size_t *szout) {
  size_t sz = pick_size(rng);
  unsigned char *p = malloc(sz);
  if (!p) { fprintf(stderr, "malloc(%zu) failed\n", sz); exit(1); }
  for (size_t off = 0; off < sz; off += 4096) p[off] = (unsigned char)off;
  p[sz - 1] = 1;
  *szout = sz;
  return p;
}

static void usage(const char *prog) {
  fprintf(stderr, "usage: %s [-s slots (40000)] [-n replacements (1000000)]\n", prog);
  exit(2);
}

int main(int argc, char **argv) {
  long slots = 40000;
  long n = 1000000;
  int opt;
  while ((opt = getopt(argc, argv, "s:n:h")) != -1) {
    switch (opt) {
    case 's': slots = atol(optarg); break;
    case 'n': n = atol(optarg); break;
    default: usage(argv[0]);
    }
  }
  if (slots < 1 || n < 0) usage(argv[0]);

  unsigned char **obj = calloc((size_t)slots, sizeof *obj);
  size_t *size = calloc((size_t)slots, sizeof *size);
  if (!obj || !size) { perror("calloc"); return 1; }
  uint64_t rng = 0xD1B54A32D192ED03ull;
  size_t live = 0;
  unsigned long sum = 0;

  double t0 = now_s();
  for (long i = 0; i < slots; i++) {
    obj[i] = new_obj(&rng, &size[i]);
    live += size[i];
  }
  for (long i = 0; i < n; i++) {
    long k = (long)(rng_next(&rng) % (uint64_t)slots);
    sum += obj[k][size[k] - 1];
    live -= size[k];
    free(obj[k]);
    obj[k] = new_obj(&rng, &size[k]);
    live += size[k];
  }
  double el = now_s() - t0;

  for (long i = 0; i < slots; i++) free(obj[i]);
  free(obj);
  free(size);
  printf("bench_random_live: %.3f s, %.0f ops/s (slots=%ld n=%ld live_end=%.1f MB check=%lu)\n",
         el, (double)(n + slots) / el, slots, n, (double)live / 1048576.0, sum & 0xff);
  return 0;
}
