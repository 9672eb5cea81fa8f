// EXPECT: bytes=4096 objects=1
// REF-VALGRIND: bytes=0 objects=0
/* alloc_pvalloc.c - pvalloc(100) leaked: glibc rounds the request up to a whole
 * page, so the program may use (and we count) 4096 bytes.  valgrind does
 * not replace pvalloc: glibc's own allocator serves it, unseen by memcheck. */
#include <malloc.h>

#include "scenario.h"

static SC_NOINLINE void build(void) {
  sc_sink = pvalloc(100);
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
