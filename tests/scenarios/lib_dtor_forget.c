// EXPECT: bytes=11 objects=1
// EXPECT-STRICT: bytes=111 objects=2
// REF-VALGRIND: bytes=111 objects=2
/* lib_dtor_forget.c - a global of a shared library the program links holds
 * 100 bytes until that library's destructor clears it without freeing (as
 * dtor_forget, but the destructor is the library's: the loader runs it from
 * _dl_fini, after the program's).  Reachable at normal's check, a leak at
 * strict's, which runs after every shared object's destructors, where
 * valgrind looks (LSan checks from an exit handler that runs before the
 * loader's destructors: 11/1, as normal).  Strict checked from libheapcheck.so's own
 * destructor before: the loader ran it before this library's, and the 100
 * bytes were still held.  Control: 11. */
#include "scenario.h"

void scen_lib_hold_until_dtor(void *p);

static SC_NOINLINE void build(void) { scen_lib_hold_until_dtor(malloc(100)); }

int main(void) {
  build();
  sc_leak(11);
  sc_end();
  return 0;
}
