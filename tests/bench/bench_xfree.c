/* bench_xfree.c - threads freeing each other's objects at random.
 *
 * Purpose: the cross-thread free path (written for this project after the
 * shape of sh8bench and xmalloc).  T threads share one table of `slots`
 * pointers; each step a thread draws a slot, swaps a new block of random
 * size (16..512 B, or -s) into it with an atomic exchange and frees the
 * block it took out, which another thread allocated with probability
 * (T - 1) / T.  No queue, no batches: remote frees arrive one by one, in
 * random order, from every thread.
 *
 * Invariants: deterministic seeds per thread; at most `slots` + T blocks
 * live; all freed at the end.  Locks: none (atomic exchange on the slots).
 *
 * Usage: bench_xfree [-t threads] [-n steps per thread] [-k slots] [-s size (0 = 16..512)]
 * Prints one line: elapsed seconds, ops/s (op = one malloc + one free).
 */
#include <stdatomic.h>

#include "bench_common.h"

static long nthreads = 2, steps = 2000000, nslots = 4096, objsize;
static _Atomic(char *) *slots;

static void *worker(void *arg) {
  uint64_t rng = 0x2545F4914F6CDD1Dull ^ ((uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull);
  unsigned long sum = 0;
  for (long i = 0; i < steps; i++) {
    uint64_t r = bench_rng_next(&rng);
    size_t sz = objsize ? (size_t)objsize : bench_size_in(r >> 20, 16, 512);
    char *p = bench_malloc(sz);
    p[0] = (char)i;
    char *old = atomic_exchange_explicit(&slots[r % (uint64_t)nslots], p, memory_order_acq_rel);
    if (old) sum += (unsigned char)old[0];
    free(old);
  }
  return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
    {'t', &nthreads, 1, "threads (2)", NULL},
    {'n', &steps, 0, "steps per thread (2000000)", NULL},
    {'k', &nslots, 1, "slots (4096)", NULL},
    {'s', &objsize, 0, "size (0 = 16..512)", NULL},
  };
  bench_parse_opts(argc, argv, opts, BENCH_NOPTS(opts));
  slots = bench_calloc((size_t)nslots, sizeof *slots);
  pthread_t *tids = bench_calloc((size_t)nthreads, sizeof *tids);
  double t0 = bench_now_s();
  bench_run_threads(nthreads, worker, (void *)1, 1, tids);
  double el = bench_now_s() - t0;
  for (long i = 0; i < nslots; i++) free(atomic_load(&slots[i]));
  free(slots);
  free(tids);
  bench_report("bench_xfree", el, (double)nthreads * (double)steps, "threads=%ld steps=%ld slots=%ld size=%ld",
               nthreads, steps, nslots, objsize);
  return 0;
}
