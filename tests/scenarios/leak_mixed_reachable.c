// EXPECT: bytes=48 objects=1
/* leak_mixed_reachable.c - a leaked object (48 bytes) points to an object a
 * global also points to (100 bytes): only the leaked one is counted; being
 * pointed to by a leak does not make a reachable object indirect. */
#include "scenario.h"

static void *volatile shared;

static SC_NOINLINE void build(void) {
  shared = calloc(1, 100);
  void **leak = calloc(6, sizeof(void *));
  leak[0] = shared;
  sc_sink = leak;
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
