// EXPECT: bytes=120 objects=1
/* alloc_reallocarray.c - reallocarray(NULL, 10, 12) leaked: 120 bytes. */
#include "scenario.h"

static SC_NOINLINE void build(void) {
  sc_sink = reallocarray(NULL, 10, 12);
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
