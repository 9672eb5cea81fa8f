// EXPECT: bytes=515 objects=5
/* stale_in_reused.c - a stale pointer inside a reused block, through each
 * entry point that hands out memory it does not initialise: the only
 * pointer to a leaked block sat in a block that was freed; a block of the
 * same size is then allocated the same way (the allocator gives the freed
 * slot out again at once), only its first word written, and kept in a
 * global.  Checker mode clears freed blocks, so no stale word is left and
 * the five leaks are found (101 via memalign, 102 via posix_memalign, 103
 * via the tail realloc grows into, 104 via a 100 000-byte block, 105 via
 * aligned_alloc), as valgrind finds them (it never gives a freed block out
 * again soon).  stale_freed_block is the plain-malloc case. */
#include <malloc.h>

#include "scenario.h"

void *volatile keep[5];

/* A block from `get` with the only pointer to a new block of `leak` bytes
 * at word `at`, freed. */
static SC_NOINLINE void hold_and_free(void **h, size_t words, size_t at, size_t leak) {
  memset(h, 0, words * sizeof *h);
  h[at] = malloc(leak);
  free(h);
}

static SC_NOINLINE void aligned_cases(void) {
  void **h = memalign(64, 64);
  hold_and_free(h, 8, 3, 101);
  void **b = memalign(64, 64);
  b[0] = NULL;
  keep[0] = b;

  void *v = NULL;
  if (posix_memalign(&v, 128, 128) != 0) abort();
  hold_and_free(v, 16, 5, 102);
  if (posix_memalign(&v, 128, 128) != 0) abort();
  ((void **)v)[0] = NULL;
  keep[1] = v;

  h = aligned_alloc(256, 256);
  hold_and_free(h, 32, 7, 105);
  b = aligned_alloc(256, 256);
  b[0] = NULL;
  keep[4] = b;
}

/* realloc moves a 20-byte block into the freed 48-byte slot: the bytes past
 * the old 20 are the slot's, never written by the program. */
static SC_NOINLINE void realloc_tail(void) {
  void **h = malloc(48);
  hold_and_free(h, 6, 4, 103);
  char *p = malloc(20);
  memset(p, 1, 20);
  keep[2] = realloc(p, 48);
}

static SC_NOINLINE void large_case(void) {
  void **h = malloc(100000);
  hold_and_free(h, 100000 / sizeof(void *), 1000, 104);
  void **b = malloc(100000);
  b[0] = NULL;
  keep[3] = b;
}

int main(void) {
  aligned_cases();
  realloc_tail();
  large_case();
  sc_end();
  return 0;
}
