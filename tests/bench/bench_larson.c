/* bench_larson.c - larson-style server simulation with cross-thread frees.
 *
 * Purpose: T worker threads each own an array of `slots` objects and, in a
 * round, replace `ops` randomly chosen slots with new objects of random size
 * (16..1024 bytes, touched at both ends).  Between rounds every thread hands
 * its array to the next thread (round r: thread t works on array (t+r) % T),
 * so most frees release memory that another thread allocated, as in a server
 * where a request is allocated by one worker and retired by another.
 *
 * Invariants: deterministic per-thread seeds; a barrier separates rounds so
 * an array is used by exactly one thread at a time; all objects are freed at
 * the end.  Locks: only the pthread barrier between rounds.
 *
 * Usage: bench_larson [-t threads] [-s slots per array] [-n ops per round] [-r rounds]
 * Prints one line: elapsed seconds and ops/s (op = one free + one malloc).
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
static long slots = 5000;
static long ops = 100000;
static long rounds = 120;
static unsigned char ***arrays;   /* arrays[a][slot] */
static pthread_barrier_t barrier;

struct worker { int id; unsigned long sum; };

static unsigned char *new_obj(uint64_t *rng) {
  size_t sz = 16 + (size_t)(rng_next(rng) % 1009);      /* 16..1024 */
  unsigned char *p = malloc(sz);
  if (!p) { fprintf(stderr, "malloc(%zu) failed\n", sz); exit(1); }
  p[0] = (unsigned char)sz;
  p[sz - 1] = (unsigned char)(sz >> 2);
  return p;
}

static void *work(void *arg) {
  struct worker *w = arg;
  uint64_t rng = 0x2545F4914F6CDD1Dull * (uint64_t)(w->id + 1);
  /* Each thread fills its own array first, so the first hand-off already
   * moves foreign objects. */
  for (long i = 0; i < slots; i++) arrays[w->id][i] = new_obj(&rng);
  pthread_barrier_wait(&barrier);
  for (long r = 1; r <= rounds; r++) {
    unsigned char **a = arrays[(w->id + r) % nthreads];
    for (long i = 0; i < ops; i++) {
      long k = (long)(rng_next(&rng) % (uint64_t)slots);
      w->sum += a[k][0];
      free(a[k]);
      a[k] = new_obj(&rng);
    }
    pthread_barrier_wait(&barrier);
  }
  return NULL;
}

static void usage(const char *prog) {
  fprintf(stderr, "usage: %s [-t threads (2)] [-s slots (5000)] [-n ops per round (100000)] [-r rounds (120)]\n", prog);
  exit(2);
}

int main(int argc, char **argv) {
  int opt;
  while ((opt = getopt(argc, argv, "t:s:n:r:h")) != -1) {
    switch (opt) {
    case 't': nthreads = atoi(optarg); break;
    case 's': slots = atol(optarg); break;
    case 'n': ops = atol(optarg); break;
    case 'r': rounds = atol(optarg); break;
    default: usage(argv[0]);
    }
  }
  if (nthreads < 1 || slots < 1 || ops < 0 || rounds < 0) usage(argv[0]);

  arrays = calloc((size_t)nthreads, sizeof *arrays);
  pthread_t *tids = calloc((size_t)nthreads, sizeof *tids);
  struct worker *ws = calloc((size_t)nthreads, sizeof *ws);
  if (!arrays || !tids || !ws) { perror("calloc"); return 1; }
  for (int t = 0; t < nthreads; t++) {
    arrays[t] = calloc((size_t)slots, sizeof **arrays);
    if (!arrays[t]) { perror("calloc"); return 1; }
  }
  pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);

  double t0 = now_s();
  for (int t = 0; t < nthreads; t++) {
    ws[t].id = t;
    if (pthread_create(&tids[t], NULL, work, &ws[t]) != 0) { perror("pthread_create"); return 1; }
  }
  unsigned long sum = 0;
  for (int t = 0; t < nthreads; t++) {
    pthread_join(tids[t], NULL);
    sum += ws[t].sum;
  }
  double el = now_s() - t0;

  for (int t = 0; t < nthreads; t++) {
    for (long i = 0; i < slots; i++) free(arrays[t][i]);
    free(arrays[t]);
  }
  free(arrays);
  free(tids);
  free(ws);
  pthread_barrier_destroy(&barrier);
  double total = (double)nthreads * (double)ops * (double)rounds;
  printf("bench_larson: %.3f s, %.0f ops/s (threads=%d slots=%ld ops=%ld rounds=%ld check=%lu)\n",
         el, total / el, nthreads, slots, ops, rounds, sum & 0xff);
  return 0;
}
