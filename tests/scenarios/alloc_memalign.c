// EXPECT: bytes=100 objects=1
/* alloc_memalign.c - memalign(64, 100) leaked: 100 bytes. */
#include <malloc.h>

#include "scenario.h"

static SC_NOINLINE void build(void) {
  sc_sink = memalign(64, 100);
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
