// EXPECT: bytes=13 objects=1
/* alloc_strdup.c - strdup("hello, world") leaked: 13 bytes. */
#include <string.h>

#include "scenario.h"

static SC_NOINLINE void build(void) {
  sc_sink = strdup("hello, world");
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
