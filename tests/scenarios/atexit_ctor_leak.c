// EXPECT: bytes=11 objects=1
// EXPECT-STRICT: bytes=110 objects=2
// REF-VALGRIND: bytes=110 objects=2
// REF-LSAN: bytes=110 objects=2
/* atexit_ctor_leak.c - an atexit handler registered by a constructor (before
 * main) leaks 99 bytes.  It runs after normal's check (handlers run in
 * reverse order), so normal reports only the 11-byte control; strict checks
 * after every handler and destructor and sees both.  valgrind checks last;
 * LSan's handler was registered before the constructors, so it runs after. */
#include "scenario.h"

static void handler(void) {
  sc_leak(99);
  sc_scrub_stack();
}

__attribute__((constructor)) static void early(void) { atexit(handler); }

int main(void) {
  sc_leak(11);
  sc_end();
  return 0;
}
