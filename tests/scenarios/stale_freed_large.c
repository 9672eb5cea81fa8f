// EXPECT: bytes=100 objects=1
/* stale_freed_large.c - stale_freed_block with a 512 KiB block: the only
 * pointer to a 100-byte block sat in the middle of a large block that was
 * freed; the program then allocates a block of the same size (the
 * allocator gives the same pages out again), writes only its first and
 * last words and keeps it in a global.  Freed memory is cleared in checker
 * mode: from 256 KiB by writing the pages that are resident and giving the
 * others back (hci_os_zero), so the stale word is gone and the 100-byte
 * block leaks, as valgrind says.  The first quarter of the block is never
 * written (pages that are not resident: given back, not written). */
#include "scenario.h"

#define BIG (512 << 10)
#define WORDS (BIG / sizeof(void *))

void **volatile keep;

static SC_NOINLINE void build(void) {
  void **holder = malloc(BIG);
  for (size_t i = WORDS / 4; i < WORDS; i += 512) holder[i] = NULL; /* resident pages, from a quarter on */
  holder[WORDS / 2 + 3] = malloc(100);
  free(holder);
}

static SC_NOINLINE void reuse(void) {
  void **b = malloc(BIG);
  b[0] = NULL;
  b[WORDS - 1] = NULL;
  keep = b;
}

int main(void) {
  build();
  reuse();
  sc_end();
  return 0;
}
