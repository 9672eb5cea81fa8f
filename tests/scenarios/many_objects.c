// EXPECT: bytes=1600000 objects=100000
/* many_objects.c - 100000 independent 16-byte leaks: the totals must be
 * exact (nothing merged, dropped or capped by report limits). */
#include "scenario.h"

static SC_NOINLINE void build(void) {
  for (int i = 0; i < 100000; i++) {
    sc_sink = malloc(16);
    sc_sink = NULL;
  }
}

int main(void) {
  build();
  sc_end();
  return 0;
}
