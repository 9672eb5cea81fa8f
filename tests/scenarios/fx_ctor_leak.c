/* fx_ctor_leak.c - 111 bytes leaked by a constructor, 222 by main: every mode
 * reports both (333 bytes in 2 objects) except minimal, which ignores what
 * was allocated before main (222 bytes in 1 object). */
#include <stdlib.h>
#include <string.h>

#include "scenario.h"

NOINLINE void *ctor_site(void) { return malloc(111); }
NOINLINE void *main_site(void) { return malloc(222); }

__attribute__((constructor)) static void leak_early(void) { memset(ctor_site(), 1, 111); }

int main(void) {
  memset(main_site(), 2, 222);
  wipe_stack();
  return 0;
}
