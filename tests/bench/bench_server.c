/* bench_server.c - a server: a long-lived set per worker and bursts of
 * short-lived request objects.
 *
 * Purpose: the mix a request-serving program makes (written for this
 * project after the shape of rptest).  Each of T workers keeps `live`
 * objects of 16..1024 B for the whole run and replaces one of them every
 * request; a request allocates a burst of 1..64 objects (mostly small,
 * some up to 8 KiB), writes them, and frees them at its end, except its
 * response, which goes into a shared mailbox slot and is freed by the
 * worker that takes that slot next (often another thread).
 *
 * Invariants: deterministic seeds; live sets freed at the end.  Locks:
 * none (atomic exchange on the mailbox).
 *
 * Usage: bench_server [-t workers] [-n requests per worker] [-l live objects per worker]
 * Prints one line: elapsed seconds, ops/s (op = one request).
 */
#include <stdatomic.h>
#include <string.h>

#include "bench_common.h"

static long nthreads = 2, requests = 50000, nlive = 20000;
#define MAILBOX 256
static _Atomic(char *) mailbox[MAILBOX];

static void *worker(void *arg) {
  uint64_t rng = 0x94D049BB133111EBull ^ ((uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull);
  char **live = bench_calloc((size_t)nlive, sizeof *live);
  char *burst[64];
  unsigned long sum = 0;
  for (long i = 0; i < nlive; i++) live[i] = bench_malloc(bench_size_in(bench_rng_next(&rng), 16, 1024));
  for (long q = 0; q < requests; q++) {
    uint64_t r = bench_rng_next(&rng);
    long k = (long)(r % (uint64_t)nlive); /* one long-lived object replaced */
    free(live[k]);
    live[k] = bench_malloc(bench_size_in(r >> 10, 16, 1024));
    int n = 1 + (int)((r >> 20) & 63);
    for (int j = 0; j < n; j++) {
      uint64_t s = bench_rng_next(&rng);
      size_t sz = (s & 7) ? bench_size_in(s >> 3, 16, 256) : bench_size_in(s >> 3, 256, 8192);
      burst[j] = bench_malloc(sz);
      memset(burst[j], (int)j, sz < 64 ? sz : 64);
    }
    for (int j = 1; j < n; j++) sum += (unsigned char)burst[j][0], free(burst[j]);
    char *old = atomic_exchange_explicit(&mailbox[(r >> 30) % MAILBOX], burst[0], memory_order_acq_rel);
    if (old) sum += (unsigned char)old[0];
    free(old); /* a response from some worker */
  }
  for (long i = 0; i < nlive; i++) free(live[i]);
  free(live);
  return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
    {'t', &nthreads, 1, "workers (2)", NULL},
    {'n', &requests, 0, "requests per worker (50000)", NULL},
    {'l', &nlive, 1, "live objects per worker (20000)", NULL},
  };
  bench_parse_opts(argc, argv, opts, BENCH_NOPTS(opts));
  pthread_t *tids = bench_calloc((size_t)nthreads, sizeof *tids);
  double t0 = bench_now_s();
  bench_run_threads(nthreads, worker, (void *)1, 1, tids);
  double el = bench_now_s() - t0;
  for (int i = 0; i < MAILBOX; i++) free(atomic_load(&mailbox[i]));
  free(tids);
  bench_report("bench_server", el, (double)nthreads * (double)requests, "workers=%ld requests=%ld live=%ld", nthreads,
               requests, nlive);
  return 0;
}
