// EXPECT: bytes=100 objects=1
/* leak_in_freed.c - the only pointer to a 100-byte object sits in a freed
 * object: freed memory is not a root, so it leaks. */
#include "scenario.h"

static SC_NOINLINE void build(void) {
  void **holder = calloc(8, sizeof(void *));
  holder[3] = malloc(100);
  free(holder);
}

int main(void) {
  build();
  sc_end();
  return 0;
}
