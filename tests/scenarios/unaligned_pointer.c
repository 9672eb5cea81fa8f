// EXPECT: bytes=177 objects=2
// EXPECT-ENV: HEAP_CHECK_POINTER_SOURCE_ALIGNMENT=1 bytes=77 objects=1
/* unaligned_pointer.c - the only pointer to a 100-byte object is stored at
 * an odd address (3 bytes into a global buffer): word-aligned scans miss
 * it (leak); HEAP_CHECK_POINTER_SOURCE_ALIGNMENT=1 finds it.  Control: 77. */
#include <string.h>

#include "scenario.h"

unsigned char packed[32];

static SC_NOINLINE void build(void) {
  void *p = malloc(100);
  memcpy(packed + 3, &p, sizeof p);
}

int main(void) {
  build();
  sc_leak(77);
  sc_end();
  return 0;
}
