// EXPECT: bytes=77 objects=1
/* root_bss.c - an object reachable only from a zero-initialised static
 * (.bss) in the middle of a large array; one 77-byte control leak. */
#include "scenario.h"

static void *volatile bss_array[4096];

static SC_NOINLINE void build(void) { bss_array[2048 + 17] = malloc(300); }

int main(void) {
  build();
  sc_leak(77);
  sc_end();
  return 0;
}
