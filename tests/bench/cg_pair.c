/* cg_pair.c - N malloc+free pairs, for counting instructions with callgrind.
 *
 * Purpose: callgrind_pair.sh runs this with N = 1e6 and N = 2e6 under
 * `valgrind --tool=callgrind` with each allocator preloaded; the difference
 * of the two instruction counts divided by 1e6 is the cost of one pair, with
 * start-up and exit costs cancelled.  Modes:
 *   fixed  - every pair is malloc(32) / free
 *   mixed  - sizes cycle through a 256-entry table of 16..512 bytes (fixed seed)
 *   ring   - mixed sizes, but each new object replaces the oldest of 1024
 *            live ones (free ring[i]; ring[i] = malloc), so pages never run
 *            empty: some allocators do extra work when a page's last object
 *            is freed, which fixed/mixed hit on every pair
 *   empty  - the same loop without malloc/free (its cost is subtracted)
 * Each object gets one byte written and is published through a volatile
 * pointer so the compiler cannot pair up and delete malloc and free (also
 * build with -fno-builtin-malloc -fno-builtin-free).
 *
 * Usage: cg_pair N fixed|mixed|ring|empty
 * Invariants: deterministic; no output on stdout unless an allocation fails.
 * Locks: none.
 */
#include "bench_common.h"

static unsigned short sizes[256];
static void *volatile sink;
static char *ring[1024];

int main(int argc, char **argv) {
  /* Mode numbers: 0 fixed, 1 mixed, 2 empty, 3 ring. */
  static const char *const modes[] = {"fixed", "mixed", "empty", "ring", NULL};
  long n = argc == 3 ? atol(argv[1]) : -1;
  long mode = argc == 3 ? bench_word_index(argv[2], modes) : -1;
  if (n < 0 || mode < 0) {
    fprintf(stderr, "usage: %s N fixed|mixed|ring|empty\n", argv[0]);
    return 2;
  }
  uint32_t x = 12345;
  for (int i = 0; i < 256; i++) {
    x = x * 1103515245u + 12345u;
    sizes[i] = (unsigned short)(mode == 0 ? 32 : 16 + (x >> 8) % 497);
  }
  for (long i = 0; i < n; i++) {
    size_t sz = sizes[i & 255];
    if (mode == 2) {
      sink = (void *)(uintptr_t)sz;
      continue;
    }
    char *p = malloc(sz);
    if (!p) {
      printf("malloc(%zu) failed\n", sz);
      return 1;
    }
    p[0] = (char)i;
    sink = p;
    if (mode == 3) {
      /* Same instruction shape as the other modes: one free per pair. */
      char *old = ring[i & 1023];
      ring[i & 1023] = p;
      p = old;
    }
    free(p);
  }
  for (int i = 0; i < 1024; i++) free(ring[i]);
  return 0;
}
