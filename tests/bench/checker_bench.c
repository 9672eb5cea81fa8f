/* checker_bench.c - allocation-heavy loop for comparing leak-checker modes.
 *
 * Purpose: the cost of recording every allocation (heapcheck with
 * HEAPCHECK=normal, LSan built in with clang -fsanitize=leak) against a
 * plain allocator.  T threads (default 2) each run malloc/free pairs over
 * their own live ring of `slots` objects (sizes 32..512, first and last byte
 * touched), like gperftools-compat.md section 9 but multi-threaded.  At the
 * end every object is freed, so a correct checker reports no leak and the
 * program exits 0.
 *
 * Invariants: deterministic per-thread seeds; `n` pairs in total, split over
 * the threads.  Locks: none (threads share nothing but the start flag).
 *
 * Usage: checker_bench [-t threads] [-n total pairs] [-s ring slots per thread]
 * Prints one line: elapsed seconds of the loop and pairs/s.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
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

static int nthreads = 2;
static long total = 5000000;
static long slots = 10000;

struct worker { int id; long pairs; unsigned long sum; };

static void *work(void *arg) {
  struct worker *w = arg;
  uint64_t rng = 0x9E3779B97F4A7C15ull ^ ((uint64_t)(w->id + 1) << 32);
  unsigned char **ring = calloc((size_t)slots, sizeof *ring);
  if (!ring) { perror("calloc"); exit(1); }
  for (long i = 0; i < w->pairs; i++) {
    long k = i % slots;
    if (ring[k]) w->sum += ring[k][0];
    free(ring[k]);
    size_t sz = 32 + (size_t)(rng_next(&rng) % 481);     /* 32..512 */
    unsigned char *p = malloc(sz);
    if (!p) { fprintf(stderr, "malloc(%zu) failed\n", sz); exit(1); }
    p[0] = (unsigned char)i;
    p[sz - 1] = (unsigned char)sz;
    ring[k] = p;
  }
  for (long k = 0; k < slots; k++) free(ring[k]);
  free(ring);
  return NULL;
}

static void usage(const char *prog) {
  fprintf(stderr, "usage: %s [-t threads (2)] [-n total pairs (5000000)] [-s slots (10000)]\n", prog);
  exit(2);
}

int main(int argc, char **argv) {
  int opt;
  while ((opt = getopt(argc, argv, "t:n:s:h")) != -1) {
    switch (opt) {
    case 't': nthreads = atoi(optarg); break;
    case 'n': total = atol(optarg); break;
    case 's': slots = atol(optarg); break;
    default: usage(argv[0]);
    }
  }
  if (nthreads < 1 || total < 0 || slots < 1) usage(argv[0]);
  pthread_t *tids = calloc((size_t)nthreads, sizeof *tids);
  struct worker *ws = calloc((size_t)nthreads, sizeof *ws);
  if (!tids || !ws) { perror("calloc"); return 1; }

  double t0 = now_s();
  for (int t = 0; t < nthreads; t++) {
    ws[t].id = t;
    ws[t].pairs = total / nthreads + (t < total % nthreads ? 1 : 0);
    if (pthread_create(&tids[t], NULL, work, &ws[t]) != 0) { perror("pthread_create"); return 1; }
  }
  unsigned long sum = 0;
  for (int t = 0; t < nthreads; t++) {
    pthread_join(tids[t], NULL);
    sum += ws[t].sum;
  }
  double el = now_s() - t0;
  free(tids);
  free(ws);
  printf("checker_bench: %.3f s, %.0f ops/s (threads=%d pairs=%ld slots=%ld check=%lu)\n",
         el, (double)total / el, nthreads, total, slots, sum & 0xff);
  return 0;
}
