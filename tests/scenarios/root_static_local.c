// EXPECT: bytes=77 objects=1
/* root_static_local.c - an object held by a function's static local. */
#include "scenario.h"

static SC_NOINLINE void *cache(void) {
  static void *volatile once;
  if (!once) once = malloc(250);
  return NULL;
}

int main(void) {
  cache();
  sc_leak(77);
  sc_end();
  return 0;
}
