// EXPECT: bytes=77 objects=1
// COMPARE-POSSIBLE
/* interior_pointer.c - objects reachable only through interior pointers:
 * the middle of a 256-byte object and the last byte of a 96-byte one.
 * Within gperftools' 1024-byte offset limit, so reachable.  Control: 77. */
#include "scenario.h"

char *volatile mid_ptr;
char *volatile last_ptr;

static SC_NOINLINE void build(void) {
  mid_ptr = (char *)malloc(256) + 128;
  last_ptr = (char *)malloc(96) + 95;
}

int main(void) {
  build();
  sc_leak(77);
  sc_end();
  return 0;
}
