// EXPECT: bytes=100 objects=1
/* stale_freed_block.c - the only pointer to a 100-byte block sat in a
 * 64-byte block that was freed; the program then allocates a 64-byte block
 * (the allocator reuses the freed slot), writes only its first word and
 * keeps it in a global.  Freed memory is cleared in checker mode, so the
 * stale word is gone and the 100-byte block leaks, as valgrind says
 * (valgrind never gives the same block out again at once). */
#include "scenario.h"

void **volatile keep;

static SC_NOINLINE void build(void) {
  void **holder = malloc(64);
  holder[0] = NULL;
  holder[3] = malloc(100);
  free(holder);
}

static SC_NOINLINE void reuse(void) {
  void **b = malloc(64);
  b[0] = NULL;
  keep = b;
}

int main(void) {
  build();
  reuse();
  sc_end();
  return 0;
}
