// EXPECT: bytes=11 objects=1
// EXPECT-STRICT: bytes=111 objects=2
// REF-VALGRIND: bytes=111 objects=2
// REF-LSAN: bytes=111 objects=2
/* dtor_forget.c - a global holds 100 bytes until a global destructor clears
 * the pointer without freeing: reachable at normal's check (before the
 * destructors), a leak at strict's (after), and for valgrind and LSan, which
 * both check after the destructors.  Control: 11. */
#include "scenario.h"

void *volatile held;

__attribute__((destructor)) static void forget(void) { held = NULL; }

static SC_NOINLINE void build(void) { held = malloc(100); }

int main(void) {
  build();
  sc_leak(11);
  sc_end();
  return 0;
}
