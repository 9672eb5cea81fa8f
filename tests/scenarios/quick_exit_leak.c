// EXPECT: bytes=72 objects=1
// EXPECT-STDOUT: at_quick_exit handler ran
// REF-LSAN: bytes=0 objects=0                  LSan checks from an at-exit handler: quick_exit skips it
/* quick_exit_leak.c - a program that leaks ends with quick_exit(0) after
 * registering an at_quick_exit handler: the handler runs, then the leak is
 * reported with status 1, as for a direct _exit, in a dynamic link (libc.so's
 * quick_exit calls its own _exit: the process ended unchecked) and a static
 * one alike. */
#include <stdio.h>
#include <stdlib.h>

#include "scenario.h"

static void handler(void) {
  printf("at_quick_exit handler ran\n");
  fflush(stdout);
}

int main(void) {
  at_quick_exit(handler);
  sc_leak(72);
  sc_end();
  quick_exit(0);
}
