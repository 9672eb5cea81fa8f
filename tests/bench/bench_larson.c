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
#include "bench_common.h"

static long nthreads = 2;
static long slots = 5000;
static long ops = 100000;
static long rounds = 120;
static unsigned char ***arrays;   /* arrays[a][slot] */
static pthread_barrier_t barrier;

struct worker { int id; unsigned long sum; };

static unsigned char *new_obj(uint64_t *rng) {
  size_t sz = bench_size_in(bench_rng_next(rng), 16, 1024);
  unsigned char *p = bench_malloc(sz);
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
      long k = (long)(bench_rng_next(&rng) % (uint64_t)slots);
      w->sum += a[k][0];
      free(a[k]);
      a[k] = new_obj(&rng);
    }
    pthread_barrier_wait(&barrier);
  }
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
    {'t', &nthreads, 1, "threads (2)", NULL},
    {'s', &slots, 1, "slots (5000)", NULL},
    {'n', &ops, 0, "ops per round (100000)", NULL},
    {'r', &rounds, 0, "rounds (120)", NULL},
  };
  bench_parse_opts(argc, argv, opts, BENCH_NOPTS(opts));

  arrays = bench_calloc((size_t)nthreads, sizeof *arrays);
  pthread_t *tids = bench_calloc((size_t)nthreads, sizeof *tids);
  struct worker *ws = bench_calloc((size_t)nthreads, sizeof *ws);
  for (long t = 0; t < nthreads; t++) {
    arrays[t] = bench_calloc((size_t)slots, sizeof **arrays);
    ws[t].id = (int)t;
  }
  pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);

  double t0 = bench_now_s();
  bench_run_threads(nthreads, work, ws, sizeof *ws, tids);
  double el = bench_now_s() - t0;
  unsigned long sum = 0;
  for (long t = 0; t < nthreads; t++) sum += ws[t].sum;

  for (long t = 0; t < nthreads; t++) {
    for (long i = 0; i < slots; i++) free(arrays[t][i]);
    free(arrays[t]);
  }
  free(arrays);
  free(tids);
  free(ws);
  pthread_barrier_destroy(&barrier);
  double total = (double)nthreads * (double)ops * (double)rounds;
  bench_report("bench_larson", el, total, "threads=%ld slots=%ld ops=%ld rounds=%ld check=%lu",
               nthreads, slots, ops, rounds, sum & 0xff);
  return 0;
}
