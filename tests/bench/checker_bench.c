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
#include "bench_common.h"

static long nthreads = 2;
static long total = 5000000;
static long slots = 10000;

struct worker { int id; long pairs; unsigned long sum; };

static void *work(void *arg) {
  struct worker *w = arg;
  uint64_t rng = 0x9E3779B97F4A7C15ull ^ ((uint64_t)(w->id + 1) << 32);
  unsigned char **ring = bench_calloc((size_t)slots, sizeof *ring);
  for (long i = 0; i < w->pairs; i++) {
    long k = i % slots;
    if (ring[k]) w->sum += ring[k][0];
    free(ring[k]);
    size_t sz = bench_size_in(bench_rng_next(&rng), 32, 512);
    unsigned char *p = bench_malloc(sz);
    p[0] = (unsigned char)i;
    p[sz - 1] = (unsigned char)sz;
    ring[k] = p;
  }
  for (long k = 0; k < slots; k++) free(ring[k]);
  free(ring);
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
    {'t', &nthreads, 1, "threads (2)", NULL},
    {'n', &total, 0, "total pairs (5000000)", NULL},
    {'s', &slots, 1, "slots (10000)", NULL},
  };
  bench_parse_opts(argc, argv, opts, BENCH_NOPTS(opts));
  pthread_t *tids = bench_calloc((size_t)nthreads, sizeof *tids);
  struct worker *ws = bench_calloc((size_t)nthreads, sizeof *ws);
  for (long t = 0; t < nthreads; t++) {
    ws[t].id = (int)t;
    ws[t].pairs = total / nthreads + (t < total % nthreads ? 1 : 0);
  }

  double t0 = bench_now_s();
  bench_run_threads(nthreads, work, ws, sizeof *ws, tids);
  double el = bench_now_s() - t0;
  unsigned long sum = 0;
  for (long t = 0; t < nthreads; t++) sum += ws[t].sum;
  free(tids);
  free(ws);
  bench_report("checker_bench", el, (double)total, "threads=%ld pairs=%ld slots=%ld check=%lu", nthreads,
               total, slots, sum & 0xff);
  return 0;
}
