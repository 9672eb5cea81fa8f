// EXPECT: bytes=300 objects=1
/* alloc_calloc.c - calloc(10, 30) leaked: 300 bytes. */
#include "scenario.h"

static SC_NOINLINE void build(void) {
  sc_sink = calloc(10, 30);
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
