// EXPECT: bytes=99 objects=2
/* atexit_leak.c - an atexit handler registered in main leaks 88 bytes; it
 * runs before the whole-program check (registered earlier, when main
 * started), so it is counted.  Control: 11. */
#include "scenario.h"

static void handler(void) {
  sc_leak(88);
  sc_scrub_stack();
}

int main(void) {
  atexit(handler);
  sc_leak(11);
  sc_end();
  return 0;
}
