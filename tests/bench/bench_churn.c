/* bench_churn.c - threads that come and go while their data lives on.
 *
 * Purpose: thread caches created and flushed all the time, with objects
 * that outlive the thread that allocated them (written for this project
 * after the shape of mstress).  Each of `rounds` rounds starts T threads;
 * each thread replaces `steps` random entries of a shared table of live
 * objects (16..2048 B; the old entry, usually allocated by a thread that
 * has exited, is freed) and does short-lived work of its own (8 blocks
 * allocated and freed per step), then exits.
 *
 * Invariants: deterministic seeds; at most `slots` + 8 T blocks live; all
 * freed at the end.  Locks: none (atomic exchange on the table).
 *
 * Usage: bench_churn [-t threads] [-r rounds] [-n steps per thread] [-k slots]
 * Prints one line: elapsed seconds, ops/s (op = one step: 9 mallocs, 9 frees).
 */
#include <stdatomic.h>

#include "bench_common.h"

static long nthreads = 2, rounds = 100, steps = 3000, nslots = 20000;
static _Atomic(char *) *slots;

static void *worker(void *arg) {
  uint64_t rng = 0xD1B54A32D192ED03ull ^ ((uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull);
  char *tmp[8];
  unsigned long sum = 0;
  for (long i = 0; i < steps; i++) {
    uint64_t r = bench_rng_next(&rng);
    char *p = bench_malloc(bench_size_octave(r >> 16, 16, 7));
    p[0] = (char)i;
    char *old = atomic_exchange_explicit(&slots[r % (uint64_t)nslots], p, memory_order_acq_rel);
    if (old) sum += (unsigned char)old[0];
    free(old);
    for (int j = 0; j < 8; j++) {
      tmp[j] = bench_malloc(16 + (size_t)((r >> (j * 4)) & 15) * 16);
      tmp[j][0] = (char)j;
    }
    for (int j = 0; j < 8; j++) free(tmp[j]);
  }
  return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
    {'t', &nthreads, 1, "threads per round (2)", NULL},
    {'r', &rounds, 1, "rounds (100)", NULL},
    {'n', &steps, 0, "steps per thread (3000)", NULL},
    {'k', &nslots, 1, "slots (20000)", NULL},
  };
  bench_parse_opts(argc, argv, opts, BENCH_NOPTS(opts));
  slots = bench_calloc((size_t)nslots, sizeof *slots);
  pthread_t *tids = bench_calloc((size_t)nthreads, sizeof *tids);
  double t0 = bench_now_s();
  for (long r = 0; r < rounds; r++) bench_run_threads(nthreads, worker, (void *)(uintptr_t)(r * nthreads + 1), 1, tids);
  double el = bench_now_s() - t0;
  for (long i = 0; i < nslots; i++) free(atomic_load(&slots[i]));
  free(slots);
  free(tids);
  bench_report("bench_churn", el, (double)rounds * (double)nthreads * (double)steps,
               "threads=%ld rounds=%ld steps=%ld slots=%ld", nthreads, rounds, steps, nslots);
  return 0;
}
