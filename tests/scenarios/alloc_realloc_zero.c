// EXPECT: bytes=11 objects=1
/* alloc_realloc_zero.c - realloc(p, 0) frees p (glibc semantics: returns NULL), so the
 * 50-byte object is not a leak.  Control: 11. */
#include "scenario.h"

static SC_NOINLINE void build(void) {
  void *p = malloc(50);
  sc_sink = realloc(p, 0);
  sc_sink = NULL;
  sc_leak(11);
}

int main(void) {
  build();
  sc_end();
  return 0;
}
