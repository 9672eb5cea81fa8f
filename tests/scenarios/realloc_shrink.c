// EXPECT: bytes=10 objects=1
/* realloc_shrink.c - 100000 bytes shrunk by realloc to 1000 then 10: one
 * leak of 10 bytes (the requested size, not the block it may still use). */
#include "scenario.h"

static SC_NOINLINE void build(void) {
  char *p = malloc(100000);
  p[0] = 1;
  p = realloc(p, 1000);
  p = realloc(p, 10);
  sc_sink = p;
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
