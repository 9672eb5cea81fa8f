/* bench_random_live.c - random replacement over a large live set.
 *
 * Purpose: fragmentation and page-fault behaviour with a big heap.  `slots`
 * objects of log-uniformly distributed size (16 B .. 64 KiB, mean ~8 KiB,
 * so 40000 slots hold ~300 MB) are allocated, then `n` times a random slot
 * is freed and refilled with a new random size.  Every object gets one
 * byte written per 4 KiB page (plus its last byte), so its pages are really
 * faulted in and peak RSS measures what the allocator keeps resident.
 *
 * Invariants: deterministic seed; the live set stays at `slots` objects;
 * everything is freed at the end.  Locks: none (one thread).
 *
 * Usage: bench_random_live [-s slots] [-n replacements]
 * Prints one line: elapsed seconds, ops/s (op = one free + one malloc),
 * live bytes at the end of the run.
 */
#include "bench_common.h"

/* log-uniform in [16, 65536]: pick an octave 16<<k (k = 0..11), then a size
 * uniformly inside it. */
static size_t pick_size(uint64_t *rng) {
  return bench_size_octave(bench_rng_next(rng), 16, 12);
}

static unsigned char *new_obj(uint64_t *rng, size_t *szout) {
  size_t sz = pick_size(rng);
  unsigned char *p = bench_malloc(sz);
  for (size_t off = 0; off < sz; off += 4096) p[off] = (unsigned char)off;
  p[sz - 1] = 1;
  *szout = sz;
  return p;
}

int main(int argc, char **argv) {
  long slots = 40000;
  long n = 1000000;
  const struct bench_opt opts[] = {
    {'s', &slots, 1, "slots (40000)", NULL},
    {'n', &n, 0, "replacements (1000000)", NULL},
  };
  bench_parse_opts(argc, argv, opts, BENCH_NOPTS(opts));

  unsigned char **obj = bench_calloc((size_t)slots, sizeof *obj);
  size_t *size = bench_calloc((size_t)slots, sizeof *size);
  uint64_t rng = 0xD1B54A32D192ED03ull;
  size_t live = 0;
  unsigned long sum = 0;

  double t0 = bench_now_s();
  for (long i = 0; i < slots; i++) {
    obj[i] = new_obj(&rng, &size[i]);
    live += size[i];
  }
  for (long i = 0; i < n; i++) {
    long k = (long)(bench_rng_next(&rng) % (uint64_t)slots);
    sum += obj[k][size[k] - 1];
    live -= size[k];
    free(obj[k]);
    obj[k] = new_obj(&rng, &size[k]);
    live += size[k];
  }
  double el = bench_now_s() - t0;

  for (long i = 0; i < slots; i++) free(obj[i]);
  free(obj);
  free(size);
  bench_report("bench_random_live", el, (double)(n + slots), "slots=%ld n=%ld live_end=%.1f MB check=%lu",
               slots, n, (double)live / 1048576.0, sum & 0xff);
  return 0;
}
