// EXPECT: bytes=0 objects=0
// EXPECT-ENV: HEAPCHECK_QUARANTINE=1M bytes=200032 objects=2
// EXPECT-ENV: HEAPCHECK_QUARANTINE=20M bytes=200032 objects=2
/* stale_freed_pointer.c - globals keep the addresses of a 32-byte and a
 * 200 000-byte block after the program freed them (tcc keeps such a
 * pointer: `tcc -run` of a leaking program, docs/validation.md); then a
 * block of each size is allocated and leaked.  An allocator that gives a
 * freed address out again at once puts the leaked blocks exactly where the
 * stale pointers point, and a conservative check calls them reachable.
 * With a quarantine (HEAPCHECK_QUARANTINE=20M, valgrind's --freelist-vol;
 * ASan has one too) freed blocks wait before they are given out again:
 * both leaks are found, as valgrind and ASan's LeakSanitizer find them.
 * By default (no quarantine: its cost in checker mode, docs/design.md) the
 * addresses are reused at once and the leaks hide behind the stale
 * pointers, as with standalone LeakSanitizer: the default line pins that
 * false negative, the others that the quarantine removes it. */
#include "scenario.h"

void *volatile stale_small;
void *volatile stale_large;

static SC_NOINLINE void free_and_remember(void) {
  void *a = malloc(32), *b = malloc(200000);
  stale_small = a;
  stale_large = b;
  free(a);
  free(b);
}

int main(void) {
  free_and_remember();
  sc_leak(32);
  sc_leak(200000);
  sc_end();
  return 0;
}
