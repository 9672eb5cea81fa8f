// EXPECT: bytes=100 objects=1
/* alloc_valloc.c - valloc(100) leaked: 100 bytes (page aligned). */
#include <malloc.h>

#include "scenario.h"

static SC_NOINLINE void build(void) {
  sc_sink = valloc(100);
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
