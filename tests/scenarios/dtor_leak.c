// EXPECT: bytes=11 objects=1
// EXPECT-STRICT: bytes=88 objects=2
// REF-VALGRIND: bytes=88 objects=2
// REF-LSAN: bytes=88 objects=2
/* dtor_leak.c - a global destructor (__attribute__((destructor))) leaks 77
 * bytes: normal checks before the destructors and sees only the 11-byte
 * control, strict checks after them and sees both.  valgrind checks last;
 * LSan's atexit handler is registered from .preinit_array, before ld.so's
 * destructor runner, so it too runs after the ELF destructors. */
#include "scenario.h"

__attribute__((destructor)) static void late(void) {
  sc_leak(77);
  sc_scrub_stack();
}

int main(void) {
  sc_leak(11);
  sc_end();
  return 0;
}
