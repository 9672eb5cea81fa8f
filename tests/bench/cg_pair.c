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
 *   window - a random window: 64 live slots; each pair frees a random
 *            slot's object and refills the slot with malloc of a random
 *            size in 8..520 (the shape of real programs' short-lived
 *            objects: any of the recent ones dies next)
 *   empty  - the same loop without malloc/free (its cost is subtracted)
 *   wempty - the window loop's random numbers without malloc/free (its
 *            cost is subtracted from window's)
 * Each object gets one byte written and is published through a volatile
 * pointer so the compiler cannot pair up and delete malloc and free (also
 * build with -fno-builtin-malloc -fno-builtin-free).
 *
 * Usage: cg_pair N fixed|mixed|ring|window|empty|wempty
 * Invariants: deterministic; no output on stdout unless an allocation fails.
 * Locks: none.
 */
#include "bench_common.h"

static unsigned short sizes[256];
static void *volatile sink;
static char *ring[1024];
static char *window[64];

/* Mode window (and wempty, which does the same arithmetic without the
 * allocator): xorshift64 draws the slot (6 bits) and the size (8..520). */
static int run_window(long n, int alloc) {
  uint64_t r = 0x9E3779B97F4A7C15ull;
  for (long i = 0; i < n; i++) {
    r ^= r << 13;
    r ^= r >> 7;
    r ^= r << 17;
    unsigned k = (unsigned)(r & 63);
    size_t sz = 8 + (size_t)((r >> 8) % 513);
    if (!alloc) {
      sink = (void *)(uintptr_t)(k ^ sz);
      continue;
    }
    free(window[k]);
    char *p = malloc(sz);
    if (!p) {
      printf("malloc(%zu) failed\n", sz);
      return 1;
    }
    p[0] = (char)i;
    window[k] = p;
    sink = p;
  }
  for (int i = 0; i < 64; i++) free(window[i]);
  return 0;
}

int main(int argc, char **argv) {
  /* Mode numbers: 0 fixed, 1 mixed, 2 empty, 3 ring, 4 window, 5 wempty. */
  static const char *const modes[] = {"fixed", "mixed", "empty", "ring", "window", "wempty", NULL};
  long n = argc == 3 ? atol(argv[1]) : -1;
  long mode = argc == 3 ? bench_word_index(argv[2], modes) : -1;
  if (n < 0 || mode < 0) {
    fprintf(stderr, "usage: %s N fixed|mixed|ring|window|empty|wempty\n", argv[0]);
    return 2;
  }
  if (mode >= 4) return run_window(n, mode == 4);
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
