// EXPECT: bytes=5 objects=1
/* alloc_strndup.c - strndup("abcdefghij", 4) leaked: 5 bytes. */
#include <string.h>

#include "scenario.h"

static SC_NOINLINE void build(void) {
  sc_sink = strndup("abcdefghij", 4);
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
