// EXPECT: bytes=100000 objects=1
/* realloc_grow.c - 10 bytes grown by realloc to 1000 then 100000 (moving to
 * a large object): one leak, counted at its last requested size. */
#include "scenario.h"

static SC_NOINLINE void build(void) {
  char *p = malloc(10);
  p[0] = 1;
  p = realloc(p, 1000);
  p[999] = 2;
  p = realloc(p, 100000);
  p[99999] = 3;
  sc_sink = p;
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
