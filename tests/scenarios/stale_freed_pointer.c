// EXPECT: bytes=200032 objects=2
// EXPECT-ENV: HEAPCHECK_QUARANTINE=1M bytes=200032 objects=2
// EXPECT-ENV: HEAPCHECK_QUARANTINE=0 bytes=0 objects=0
/* stale_freed_pointer.c - globals keep the addresses of a 32-byte and a
 * 200 000-byte block after the program freed them (tcc keeps such a
 * pointer: `tcc -run` of a leaking program, docs/validation.md); then a
 * block of each size is allocated and leaked.  An allocator that gives a
 * freed address out again at once puts the leaked blocks exactly where the
 * stale pointers point, and a conservative check calls them reachable.
 * In checker mode freed blocks wait in the quarantine (20 MB of frees by
 * default, as valgrind's --freelist-vol; ASan has one too): both leaks are
 * found, as valgrind and LeakSanitizer find them.  With
 * HEAPCHECK_QUARANTINE=0 the addresses are reused at once and the leaks
 * hide behind the stale pointers (the line shows the option is read; it
 * pins the false negative the quarantine exists for). */
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
