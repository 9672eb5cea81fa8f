// EXPECT: bytes=0 objects=0
// EXPECT-UNCHECKED: a signal handler's _exit runs no check
// REF-VALGRIND: bytes=22 objects=1             valgrind checks at the last system call, in a handler too
/* signal_underscore_exit.c - a SIGUSR1 handler ends the process with
 * _exit(0) after main leaked 22 bytes.  A handler may have interrupted its
 * own thread inside malloc or the checker, holding a lock the check needs:
 * heapcheck runs no check there (the walk up the stack meets the signal
 * frame) and the process ends with the handler's status, at once, without
 * a report.  valgrind, which checks outside the program, reports 22;
 * LeakSanitizer, whose check is an at-exit handler, nothing. */
#include <signal.h>
#include <unistd.h>

#include "scenario.h"

/* nocfi_signal_exit.c includes this file with a prologue of its own. */
#ifndef SC_HANDLER_PROLOGUE
#define SC_HANDLER_PROLOGUE
#endif

static void on_usr1(int sig) {
  (void)sig;
  SC_HANDLER_PROLOGUE;
  _exit(0);
}

int main(void) {
  signal(SIGUSR1, on_usr1);
  sc_leak(22);
  sc_end();
  raise(SIGUSR1);
  return 1;
}
