// EXPECT: bytes=300000 objects=1
/* alloc_aligned_large.c - a large (300000-byte) block aligned to 64 KiB with
 * posix_memalign, leaked. */
#include "scenario.h"

static SC_NOINLINE void build(void) {
  void *p = NULL;
  if (posix_memalign(&p, 65536, 300000) != 0) exit(2);
  sc_sink = p;
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
