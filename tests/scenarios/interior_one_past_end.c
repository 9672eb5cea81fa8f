// EXPECT: bytes=141 objects=2
/* interior_one_past_end.c - a 64-byte object whose only pointer points one
 * past its end: that is not inside the object, so it leaks (the address may
 * be the start of the next slot of its size class, which holds nothing of
 * ours).  Control: 77 (another size class). */
#include "scenario.h"

char *volatile end_ptr;

static SC_NOINLINE void build(void) { end_ptr = (char *)malloc(64) + 64; }

int main(void) {
  build();
  sc_leak(77);
  sc_end();
  return 0;
}
