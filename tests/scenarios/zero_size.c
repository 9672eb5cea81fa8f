// EXPECT: bytes=0 objects=3
// REF-LSAN: bytes=3 objects=3
/* zero_size.c - malloc(0) twice and calloc(0, 16) leaked: three distinct
 * objects of 0 requested bytes.  (LSan records zero-size requests as 1.) */
#include "scenario.h"

static SC_NOINLINE void build(void) {
  sc_sink = malloc(0);
  sc_sink = malloc(0);
  sc_sink = calloc(0, 16);
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
