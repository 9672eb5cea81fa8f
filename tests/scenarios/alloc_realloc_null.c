// EXPECT: bytes=70 objects=1
/* alloc_realloc_null.c - realloc(NULL, 70) allocates: 70 bytes leaked. */
#include "scenario.h"

static SC_NOINLINE void build(void) {
  sc_sink = realloc(NULL, 70);
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
