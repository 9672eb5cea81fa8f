// EXPECT: bytes=8269 objects=2
// EXPECT-ENV: HEAP_CHECK_MAX_POINTER_OFFSET=-1 bytes=77 objects=1
// REF-VALGRIND: bytes=77 objects=1
// REF-LSAN: bytes=77 objects=1
/* interior_past_1024.c - an 8192-byte object whose only pointer points 4096
 * bytes in: past HEAP_CHECK_MAX_POINTER_OFFSET (1024), so gperftools' rule
 * reports it; with the limit off it is reachable.  valgrind calls it
 * "possibly lost" (not definitely), LSan accepts any interior pointer.
 * Control: 77. */
#include "scenario.h"

char *volatile deep_ptr;

static SC_NOINLINE void build(void) { deep_ptr = (char *)malloc(8192) + 4096; }

int main(void) {
  build();
  sc_leak(77);
  sc_end();
  return 0;
}
