/* bench_falseshare.c - false-sharing probe (after Hoard's cache-scratch).
 *
 * Purpose: detect an allocator that gives objects in the same cache line to
 * different threads.  Mode "scratch" (default): the main thread allocates
 * T * k small objects back to back and deals them out like cards (object j
 * goes to worker j % T), so every cache line holds objects of several
 * workers.  Each worker frees its k objects, then `nobj` times allocates k
 * objects of the same size, writes each of them `reps` times in a hot loop
 * and frees them.  An allocator that recycles a freed foreign object to the
 * freeing thread makes the workers write to shared cache lines from
 * different cores, and the hot loop slows down several times (about 3x for
 * two cores on this machine).  Mode "thrash" skips the hand-off (each worker
 * only ever uses objects it allocated itself): that is the baseline.
 *
 * Invariants: deterministic; the written bytes are read back (volatile) so
 * the hot loop cannot be optimised away.  Locks: a barrier at the start so
 * the workers' hot loops overlap.
 *
 * Usage: bench_falseshare [-t threads] [-k objects held] [-n rounds] [-r writes per object]
 *                         [-s object size] [-m scratch|thrash]
 * Prints one line: elapsed seconds, ops/s (op = one write pass over an object).
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

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int nthreads = 2;
static long held = 8;
static long nobj = 100;
static long reps = 200000;
static size_t objsize = 8;
static int thrash;
static pthread_barrier_t barrier;

struct worker { char **given; volatile char **obj; unsigned long sum; };

static void *work(void *arg) {
  struct worker *w = arg;
  /* The objects the main thread allocated go back first. */
  if (w->given)
    for (long k = 0; k < held; k++) free(w->given[k]);
  pthread_barrier_wait(&barrier);
  for (long i = 0; i < nobj; i++) {
    for (long k = 0; k < held; k++) {
      w->obj[k] = malloc(objsize);
      if (!w->obj[k]) { fprintf(stderr, "malloc failed\n"); exit(1); }
    }
    for (long r = 0; r < reps; r++) {
      for (long k = 0; k < held; k++) {
        volatile char *p = w->obj[k];
        for (size_t j = 0; j < objsize; j++) p[j] = (char)(p[j] + 1);
      }
    }
    for (long k = 0; k < held; k++) {
      w->sum += (unsigned char)w->obj[k][0];
      free((void *)w->obj[k]);
    }
  }
  return NULL;
}

static void usage(const char *prog) {
  fprintf(stderr, "usage: %s [-t threads (2)] [-k objects held (8)] [-n rounds (100)] "
          "[-r writes (200000)] [-s size (8)] [-m scratch|thrash]\n", prog);
  exit(2);
}

int main(int argc, char **argv) {
  int opt;
  while ((opt = getopt(argc, argv, "t:k:n:r:s:m:h")) != -1) {
    switch (opt) {
    case 't': nthreads = atoi(optarg); break;
    case 'k': held = atol(optarg); break;
    case 'n': nobj = atol(optarg); break;
    case 'r': reps = atol(optarg); break;
    case 's': objsize = (size_t)atol(optarg); break;
    case 'm':
      if (strcmp(optarg, "thrash") == 0) thrash = 1;
      else if (strcmp(optarg, "scratch") == 0) thrash = 0;
      else usage(argv[0]);
      break;
    default: usage(argv[0]);
    }
  }
  if (nthreads < 1 || held < 1 || nobj < 0 || reps < 0 || objsize < 1) usage(argv[0]);

  pthread_t *tids = calloc((size_t)nthreads, sizeof *tids);
  struct worker *ws = calloc((size_t)nthreads, sizeof *ws);
  if (!tids || !ws) { perror("calloc"); return 1; }
  pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
  for (int t = 0; t < nthreads; t++) {
    ws[t].obj = calloc((size_t)held, sizeof *ws[t].obj);
    ws[t].given = thrash ? NULL : calloc((size_t)held, sizeof *ws[t].given);
    if (!ws[t].obj || (!thrash && !ws[t].given)) { perror("calloc"); return 1; }
  }
  /* Allocated back to back by one thread (neighbours in memory), then dealt
   * out round robin so neighbours belong to different workers. */
  if (!thrash) {
    for (long k = 0; k < held; k++) {
      for (int t = 0; t < nthreads; t++) {
        ws[t].given[k] = malloc(objsize);
        if (!ws[t].given[k]) { perror("malloc"); return 1; }
      }
    }
  }

  double t0 = now_s();
  for (int t = 0; t < nthreads; t++) {
    if (pthread_create(&tids[t], NULL, work, &ws[t]) != 0) { perror("pthread_create"); return 1; }
  }
  unsigned long sum = 0;
  for (int t = 0; t < nthreads; t++) {
    pthread_join(tids[t], NULL);
    sum += ws[t].sum;
  }
  double el = now_s() - t0;
  pthread_barrier_destroy(&barrier);
  for (int t = 0; t < nthreads; t++) {
    free(ws[t].given);
    free(ws[t].obj);
  }
  free(tids);
  free(ws);
  double total = (double)nthreads * (double)nobj * (double)reps * (double)held;
  printf("bench_falseshare: %.3f s, %.0f ops/s (mode=%s threads=%d held=%ld rounds=%ld writes=%ld size=%zu check=%lu)\n",
         el, total / el, thrash ? "thrash" : "scratch", nthreads, held, nobj, reps, objsize, sum & 0xff);
  return 0;
}
