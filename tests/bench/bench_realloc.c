/* bench_realloc.c - buffers grown step by step with realloc, then freed.
 *
 * Purpose: realloc's in-place growth and copy paths.  `nbuf` builders are
 * live at once; each step picks a random builder and appends 1..64 bytes.
 * Half the builders behave like string builders (realloc to exactly
 * len + chunk + 1 on every append), half like vectors (capacity doubles when
 * full, starting at 16).  A builder that reaches its target length
 * (log-uniform 256 B .. 256 KiB) is checked, freed and restarted.
 *
 * Invariants: deterministic seed; appended bytes are written, and a finished
 * buffer's first and last bytes are verified (realloc must preserve
 * contents); all buffers are freed at the end.  Locks: none (one thread).
 *
 * Usage: bench_realloc [-b builders] [-n appends]
 * Prints one line: elapsed seconds, ops/s (op = one append).
 */
#include "bench_common.h"

struct builder {
  unsigned char *buf;
  size_t len, cap, target;
  int vector;            /* 1: doubling capacity; 0: exact-size realloc */
  unsigned char first;   /* byte written at offset 0, verified at the end */
};

static void restart(struct builder *b, uint64_t *rng) {
  uint64_t r = bench_rng_next(rng);
  b->target = bench_size_octave(r, 256, 10);  /* octaves 256 << 0..9, so up to 256 KiB */
  b->buf = NULL;
  b->len = b->cap = 0;
  b->first = (unsigned char)(r >> 40);
}

int main(int argc, char **argv) {
  long nbuf = 1000;
  long n = 4000000;
  const struct bench_opt opts[] = {
    {'b', &nbuf, 1, "builders (1000)", NULL},
    {'n', &n, 0, "appends (4000000)", NULL},
  };
  bench_parse_opts(argc, argv, opts, BENCH_NOPTS(opts));

  struct builder *bs = bench_calloc((size_t)nbuf, sizeof *bs);
  uint64_t rng = 0x94D049BB133111EBull;
  for (long i = 0; i < nbuf; i++) {
    restart(&bs[i], &rng);
    bs[i].vector = (int)(i & 1);
  }
  long finished = 0, reallocs = 0;

  double t0 = bench_now_s();
  for (long i = 0; i < n; i++) {
    uint64_t r = bench_rng_next(&rng);
    struct builder *b = &bs[r % (uint64_t)nbuf];
    size_t chunk = 1 + (size_t)((r >> 32) % 64);
    size_t need = b->len + chunk + 1;
    if (need > b->cap) {
      size_t ncap = need;
      if (b->vector) {
        ncap = b->cap ? b->cap : 16;
        while (ncap < need) ncap *= 2;
      }
      unsigned char *nb = realloc(b->buf, ncap);
      if (!nb) { fprintf(stderr, "realloc(%zu) failed\n", ncap); return 1; }
      b->buf = nb;
      b->cap = ncap;
      reallocs++;
    }
    memset(b->buf + b->len, (int)(b->len == 0 ? b->first : 'x'), chunk);
    b->len += chunk;
    b->buf[b->len] = 0;
    if (b->len >= b->target) {
      if (b->buf[0] != b->first || b->buf[b->len - 1] != (b->len == chunk ? b->first : 'x')) {
        fprintf(stderr, "bench_realloc: contents lost in realloc\n");
        return 1;
      }
      free(b->buf);
      restart(b, &rng);
      finished++;
    }
  }
  double el = bench_now_s() - t0;

  for (long i = 0; i < nbuf; i++) free(bs[i].buf);
  free(bs);
  bench_report("bench_realloc", el, (double)n, "builders=%ld appends=%ld reallocs=%ld finished=%ld", nbuf,
               n, reallocs, finished);
  return 0;
}
