// EXPECT: bytes=256 objects=1
/* alloc_aligned_alloc.c - aligned_alloc(128, 256) leaked: 256 bytes. */
#include "scenario.h"

static SC_NOINLINE void build(void) {
  sc_sink = aligned_alloc(128, 256);
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
