// EXPECT: bytes=77 objects=1
// EXPECT-ENV: HEAP_CHECK_MAX_POINTER_OFFSET=-1 bytes=77 objects=1
// EXPECT-ENV: HEAP_CHECK_MAX_POINTER_OFFSET=1024 bytes=8269 objects=2
// COMPARE-POSSIBLE
/* interior_past_1024.c - an 8192-byte object whose only pointer points 4096
 * bytes in.  By default any interior pointer keeps an object alive (as for
 * LSan), and heapcheck counts it "possibly lost" as valgrind does (not a
 * leak); with HEAP_CHECK_MAX_POINTER_OFFSET=1024 (gperftools' old default)
 * the pointer is past the limit and the object is reported.  Control: 77. */
#include "scenario.h"

char *volatile deep_ptr;

static SC_NOINLINE void build(void) { deep_ptr = (char *)malloc(8192) + 4096; }

int main(void) {
  build();
  sc_leak(77);
  sc_end();
  return 0;
}
