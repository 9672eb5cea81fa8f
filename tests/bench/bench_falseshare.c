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
#include "bench_common.h"

static long nthreads = 2;
static long held = 8;
static long nobj = 100;
static long reps = 200000;
static long objsize = 8;
static long thrash;       /* 0: scratch mode; 1: thrash mode */
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
      w->obj[k] = bench_malloc((size_t)objsize);
    }
    for (long r = 0; r < reps; r++) {
      for (long k = 0; k < held; k++) {
        volatile char *p = w->obj[k];
        for (size_t j = 0; j < (size_t)objsize; j++) p[j] = (char)(p[j] + 1);
      }
    }
    for (long k = 0; k < held; k++) {
      w->sum += (unsigned char)w->obj[k][0];
      free((void *)w->obj[k]);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  static const char *const modes[] = {"scratch", "thrash", NULL};
  const struct bench_opt opts[] = {
    {'t', &nthreads, 1, "threads (2)", NULL},
    {'k', &held, 1, "objects held (8)", NULL},
    {'n', &nobj, 0, "rounds (100)", NULL},
    {'r', &reps, 0, "writes (200000)", NULL},
    {'s', &objsize, 1, "size (8)", NULL},
    {'m', &thrash, 0, "scratch|thrash", modes},
  };
  bench_parse_opts(argc, argv, opts, BENCH_NOPTS(opts));

  pthread_t *tids = bench_calloc((size_t)nthreads, sizeof *tids);
  struct worker *ws = bench_calloc((size_t)nthreads, sizeof *ws);
  pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
  for (long t = 0; t < nthreads; t++) {
    ws[t].obj = bench_calloc((size_t)held, sizeof *ws[t].obj);
    ws[t].given = thrash ? NULL : bench_calloc((size_t)held, sizeof *ws[t].given);
  }
  /* Allocated back to back by one thread (neighbours in memory), then dealt
   * out round robin so neighbours belong to different workers. */
  if (!thrash) {
    for (long k = 0; k < held; k++) {
      for (long t = 0; t < nthreads; t++) ws[t].given[k] = bench_malloc((size_t)objsize);
    }
  }

  double t0 = bench_now_s();
  bench_run_threads(nthreads, work, ws, sizeof *ws, tids);
  double el = bench_now_s() - t0;
  unsigned long sum = 0;
  for (long t = 0; t < nthreads; t++) sum += ws[t].sum;
  pthread_barrier_destroy(&barrier);
  for (long t = 0; t < nthreads; t++) {
    free(ws[t].given);
    free(ws[t].obj);
  }
  free(tids);
  free(ws);
  double total = (double)nthreads * (double)nobj * (double)reps * (double)held;
  bench_report("bench_falseshare", el, total,
               "mode=%s threads=%ld held=%ld rounds=%ld writes=%ld size=%ld check=%lu", modes[thrash],
               nthreads, held, nobj, reps, objsize, sum & 0xff);
  return 0;
}
