/* bench_large.c - large blocks allocated, touched and freed repeatedly.
 *
 * Purpose: the large-object path and the policy for returning memory to the
 * OS.  A few slots (default 4) hold blocks of random size 256 KiB .. 8 MiB
 * (log-uniform); each step frees one slot and allocates a new block, writing
 * one byte per 4 KiB page.  An allocator that unmaps or MADV_DONTNEEDs freed
 * blocks immediately pays a page fault per page on the next use (expensive
 * on this machine); one that keeps them pays nothing but holds more RSS.
 *
 * With -z every new block is zero-filled instead (what a value-initialised
 * new char[n]() does), and -m/-o choose the sizes: the workload
 * "malloc_large" of run.sh (lib.sh) is `-s 20 -n 2000 -m 64 -o 8 -z`, 20
 * slots of 64 KiB .. 16 MiB replaced at random, written for this project
 * after the shape of mimalloc-bench's malloc-large: it frees and
 * reallocates about the same amount all the time, so memory given back to
 * the OS at a free is faulted in again by the next blocks.
 *
 * Invariants: deterministic seed; at most `slots` blocks live; all freed at
 * the end.  Locks: none (one thread).
 *
 * Usage: bench_large [-s slots] [-n replacements] [-m min_kib] [-o octaves] [-z 0|1]
 * Prints one line: elapsed seconds, ops/s (op = one free + malloc + touch).
 */
#include <string.h>

#include "bench_common.h"

static long min_kib = 256, octaves = 5, zero_fill;
/* Zero, read at run time: memset(p, 0, n) right after malloc would let the
 * compiler turn the pair into calloc, which may skip fresh zero pages. */
static volatile int fill_byte;

/* log-uniform: octaves min_kib << 0..octaves-1 (default 256 KiB .. 8 MiB) */
static size_t pick_size(uint64_t *rng) {
  return bench_size_octave(bench_rng_next(rng), (size_t)min_kib << 10, (unsigned)octaves);
}

static unsigned char *new_block(uint64_t *rng, size_t *szout) {
  size_t sz = pick_size(rng);
  unsigned char *p = bench_malloc(sz);
  if (zero_fill) memset(p, fill_byte, sz);
  else
    for (size_t off = 0; off < sz; off += 4096) p[off] = (unsigned char)(off >> 12);
  p[sz - 1] = 7;
  *szout = sz;
  return p;
}

int main(int argc, char **argv) {
  long slots = 4;
  long n = 4000;
  const struct bench_opt opts[] = {
    {'s', &slots, 1, "slots (4)", NULL},
    {'n', &n, 0, "replacements (4000)", NULL},
    {'m', &min_kib, 1, "smallest block in KiB (256)", NULL},
    {'o', &octaves, 1, "octaves of sizes (5)", NULL},
    {'z', &zero_fill, 0, "zero-fill blocks (0)", NULL},
  };
  bench_parse_opts(argc, argv, opts, BENCH_NOPTS(opts));

  unsigned char **blk = bench_calloc((size_t)slots, sizeof *blk);
  size_t *size = bench_calloc((size_t)slots, sizeof *size);
  uint64_t rng = 0xBF58476D1CE4E5B9ull;
  unsigned long sum = 0;
  double bytes = 0;

  double t0 = bench_now_s();
  for (long i = 0; i < slots; i++) blk[i] = new_block(&rng, &size[i]);
  for (long i = 0; i < n; i++) {
    long k = (long)(bench_rng_next(&rng) % (uint64_t)slots);
    sum += blk[k][size[k] - 1];
    free(blk[k]);
    blk[k] = new_block(&rng, &size[k]);
    bytes += (double)size[k];
  }
  double el = bench_now_s() - t0;

  for (long i = 0; i < slots; i++) free(blk[i]);
  free(blk);
  free(size);
  bench_report("bench_large", el, (double)n, "slots=%ld n=%ld mean_block=%.0f KiB check=%lu", slots, n,
               n ? bytes / (double)n / 1024.0 : 0.0, sum & 0xff);
  return 0;
}
