// EXPECT: bytes=55 objects=1
// REF-LSAN: bytes=0 objects=0                  LSan checks from an at-exit handler: _exit skips it
/* nocfi_direct_exit.c - built without unwind tables or frame pointers
 * (meson: scenarios_nocfi), as busybox is and as CHICKEN's generated C
 * runs: main leaks 55 bytes and ends with _exit(0) from a function of its
 * own.  The walk up the stack by .eh_frame cannot reach _start through
 * these frames; no signal frame is on the stack, so the final check runs
 * (valgrind reports the leak).  Before, the process ended unchecked
 * ("the stack walk did not reach the outermost frame"): busybox sh and csi
 * printed no result at all. */
#include <stdio.h>
#include <unistd.h>

#include "scenario.h"

static SC_NOINLINE void finish(int status) {
  /* rbp used as a plain register here, as in code built without frame
   * pointers, so no frame-pointer guess can walk past this frame either. */
  __asm__ volatile("movq $5, %%rbp\n\t"
                   "movq $0, %%rbp" ::: "rbp", "memory");
  _exit(status);
}

int main(void) {
  sc_leak(55);
  printf("dropped by _exit");
  sc_end();
  finish(0);
}
