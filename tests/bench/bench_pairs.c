/* bench_pairs.c - single-threaded malloc/free pairs over a small live ring.
 *
 * Purpose: the allocator's fast path.  Each step frees ring[i] and puts a new
 * object of a random size in its place, then touches its first and last byte
 * (so an allocator that hands out unmapped or unusable memory is caught by
 * a crash, and the cost of first touch is paid like a real program would).
 * Sizes: 90% in 16..512 bytes, 10% in 513..4096 bytes.
 *
 * Invariants: deterministic (fixed xorshift seed); the ring never holds more
 * than `slots` objects; every object is freed before exit.
 * Locks: none (one thread).
 *
 * Usage: bench_pairs [-n pairs] [-s ring_slots]
 * Prints one line: name, elapsed seconds, ops/s (one op = one malloc+free pair).
 */
#include "bench_common.h"

static size_t pick_size(uint64_t *rng) {
  uint64_t r = bench_rng_next(rng);
  if (r % 10 != 0) return bench_size_in(r >> 8, 16, 512);
  return bench_size_in(r >> 8, 513, 4096);
}

int main(int argc, char **argv) {
  long pairs = 20000000;
  long slots = 10000;
  const struct bench_opt opts[] = {
    {'n', &pairs, 1, "pairs (default 20000000)", NULL},
    {'s', &slots, 1, "ring slots (default 10000)", NULL},
  };
  bench_parse_opts(argc, argv, opts, BENCH_NOPTS(opts));

  unsigned char **ring = bench_calloc((size_t)slots, sizeof *ring);
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  unsigned long sum = 0;

  double t0 = bench_now_s();
  for (long i = 0; i < pairs; i++) {
    long k = i % slots;
    if (ring[k]) sum += ring[k][0];
    free(ring[k]);
    size_t sz = pick_size(&rng);
    unsigned char *p = bench_malloc(sz);
    p[0] = (unsigned char)i;
    p[sz - 1] = (unsigned char)sz;
    ring[k] = p;
  }
  double t1 = bench_now_s();

  for (long k = 0; k < slots; k++) free(ring[k]);
  free(ring);
  double el = t1 - t0;
  bench_report("bench_pairs", el, (double)pairs, "pairs=%ld slots=%ld check=%lu", pairs, slots,
               sum & 0xff);
  return 0;
}
