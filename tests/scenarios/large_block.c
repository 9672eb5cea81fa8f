// EXPECT: bytes=67108864 objects=1
// REF-VALGRIND: bytes=0 objects=0
/* large_block.c - one leaked 64 MiB block (touched at both ends).  valgrind
 * calls it "possibly lost": its heap sits at low addresses, where a 64 MiB
 * block covers values that plain integers in memory happen to have. */
#include "scenario.h"

static SC_NOINLINE void build(void) {
  char *p = malloc((size_t)64 << 20);
  if (!p) exit(2);
  p[0] = 1;
  p[((size_t)64 << 20) - 1] = 1;
  sc_sink = p;
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
