// EXPECT: bytes=200 objects=1
/* alloc_posix_memalign.c - posix_memalign(&p, 256, 200) leaked: 200 bytes. */
#include "scenario.h"

static SC_NOINLINE void build(void) {
  void *p = NULL;
  if (posix_memalign(&p, 256, 200) != 0) exit(2);
  sc_sink = p;
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
