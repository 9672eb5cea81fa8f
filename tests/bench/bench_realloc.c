/* bench_realloc.c - buffers grown step by step with realloc, then freed.
 *
 * Purpose: realloc's in-place growth and copy paths.  `nbuf` builders are
 * live at once; each step picks a random builder and appends 1..64 bytes.
 * Half the builders behave like string builders (realloc to exactly
 * len + chunk + 1 on every append), half like vectors (capacity doubles when
 * full, starting at 16).  A builder that reaches its target length
 * (log-uniform 256 B .. 256 KiB) is checked, freed and restarted.
 *
 * Invariants: deterministic seed; appended bytes are written, and a finished
 * buffer's first and last bytes are verified (realloc must preserve
 * contents); all buffers are freed at the end.  Locks: none (one thread).
 *
 * Usage: bench_realloc [-b builders] [-n appends]
 * Prints one line: elapsed seconds, ops/s (op = one append).
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

struct builder {
  unsigned char *buf;
  size_t len, cap, target;
  int vector;            /* 1: doubling capacity; 0: exact-size realloc */
  unsigned char first;   /* byte written at offset 0, verified at the end */
};

static void restart(struct builder *b, uint64_t *rng) {
  uint64_t r = rng_next(rng);
  unsigned k = (unsigned)(r % 10);       /* octaves 256 << 0..9, so up to 256 KiB */
  size_t lo = (size_t)256 << k;
  b->target = lo + (size_t)((r >> 8) % (lo + 1));
  b->buf = NULL;
  b->len = b->cap = 0;
  b->first = (unsigned char)(r >> 40);
}

static void usage(const char *prog) {
  fprintf(stderr, "usage: %s [-b builders (1000)] [-n appends (4000000)]\n", prog);
  exit(2);
}

int main(int argc, char **argv) {
  long nbuf = 1000;
  long n = 4000000;
  int opt;
  while ((opt = getopt(argc, argv, "b:n:h")) != -1) {
    switch (opt) {
    case 'b': nbuf = atol(optarg); break;
    case 'n': n = atol(optarg); break;
    default: usage(argv[0]);
    }
  }
  if (nbuf < 1 || n < 0) usage(argv[0]);

  struct builder *bs = calloc((size_t)nbuf, sizeof *bs);
  if (!bs) { perror("calloc"); return 1; }
  uint64_t rng = 0x94D049BB133111EBull;
  for (long i = 0; i < nbuf; i++) {
    restart(&bs[i], &rng);
    bs[i].vector = (int)(i & 1);
  }
  long finished = 0, reallocs = 0;

  double t0 = now_s();
  for (long i = 0; i < n; i++) {
    uint64_t r = rng_next(&rng);
    struct builder *b = &bs[r % (uint64_t)nbuf];
    size_t chunk = 1 + (size_t)((r >> 32) % 64);
    size_t need = b->len + chunk + 1;
    if (need > b->cap) {
      size_t ncap = need;
      if (b->vector) {
        ncap = b->cap ? b->cap : 16;
        while (ncap < need) ncap *= 2;
      }
      unsigned char *nb = realloc(b->buf, ncap);
      if (!nb) { fprintf(stderr, "realloc(%zu) failed\n", ncap); return 1; }
      b->buf = nb;
      b->cap = ncap;
      reallocs++;
    }
    memset(b->buf + b->len, (int)(b->len == 0 ? b->first : 'x'), chunk);
    b->len += chunk;
    b->buf[b->len] = 0;
    if (b->len >= b->target) {
      if (b->buf[0] != b->first || b->buf[b->len - 1] != (b->len == chunk ? b->first : 'x')) {
        fprintf(stderr, "bench_realloc: contents lost in realloc\n");
        return 1;
      }
      free(b->buf);
      restart(b, &rng);
      finished++;
    }
  }
  double el = now_s() - t0;

  for (long i = 0; i < nbuf; i++) free(bs[i].buf);
  free(bs);
  printf("bench_realloc: %.3f s, %.0f ops/s (builders=%ld appends=%ld reallocs=%ld finished=%ld)\n",
         el, (double)n / el, nbuf, n, reallocs, finished);
  return 0;
}
