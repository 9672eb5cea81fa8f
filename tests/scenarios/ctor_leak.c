// EXPECT: bytes=168 objects=2
// EXPECT-MINIMAL: bytes=45 objects=1
/* ctor_leak.c - a constructor leaks 123 bytes before main, main leaks 45.
 * normal counts both; minimal ignores what was allocated before main. */
#include "scenario.h"

__attribute__((constructor)) static void early(void) { sc_leak(123); sc_scrub_stack(); }

int main(void) {
  sc_leak(45);
  sc_end();
  return 0;
}
