// EXPECT: bytes=77 objects=1
/* large_reachable.c - a reachable 16 MiB block (global) whose last word holds
 * the only pointer to a 333-byte object: large objects are scanned to their
 * end.  Control: 77. */
#include "scenario.h"

void **volatile big;

static SC_NOINLINE void build(void) {
  size_t n = ((size_t)16 << 20) / sizeof(void *);
  big = calloc(n, sizeof(void *));
  big[n - 1] = malloc(333);
}

int main(void) {
  build();
  sc_leak(77);
  sc_end();
  return 0;
}
