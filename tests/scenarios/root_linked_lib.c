// EXPECT: bytes=77 objects=1
/* root_linked_lib.c - a 450-byte object reachable only from a global of a
 * shared library the program links against.  Control: 77. */
#include "scenario.h"

void scen_lib_set(void *p);

static SC_NOINLINE void give(void) { scen_lib_set(malloc(450)); }

int main(void) {
  give();
  sc_leak(77);
  sc_end();
  return 0;
}
