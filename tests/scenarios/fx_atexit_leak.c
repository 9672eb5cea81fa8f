/* fx_atexit_leak.c - an atexit handler registered by main leaks 66 bytes; it
 * runs before the at-exit check, which must report it. */
#include <stdlib.h>
#include <string.h>

#include "scenario.h"

NOINLINE void *handler_site(void) { return malloc(66); }
static void handler(void) {
  memset(handler_site(), 3, 66);
  wipe_stack();
}

int main(void) {
  atexit(handler);
  return 0;
}
