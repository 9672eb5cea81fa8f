// EXPECT: bytes=77 objects=1
// REF-LSAN: bytes=0 objects=0                  LSan checks from an at-exit handler registered before main: _exit skips it
/* atexit_underscore_exit.c - an at-exit handler registered in main ends the
 * process with _exit (coreutils' close_stdout does when closing stdout or
 * stderr fails).  The whole-program check is an at-exit handler registered
 * before main, so it would never run: the interposed _exit runs it first,
 * on the thread that called exit.  Control: 77, as valgrind (which checks at
 * the last system call).  The printf without a newline must stay unflushed:
 * _exit's check flushes nothing (the harness compares nothing on stdout;
 * docs/leak-checking.md). */
#include <stdio.h>
#include <unistd.h>

#include "scenario.h"

static void end_now(void) { _exit(0); }

int main(void) {
  sc_leak(77);
  atexit(end_now);
  printf("dropped by _exit");
  sc_end();
  exit(0);
}
