// EXPECT: bytes=600 objects=3
// EXPECT-DRACONIAN: bytes=600 objects=3
/* leak_direct.c - three independent direct leaks of different sizes. */
#include "scenario.h"

int main(void) {
  sc_leak(100);
  sc_leak(200);
  sc_leak(300);
  sc_end();
  return 0;
}
