// EXPECT: bytes=77 objects=1
/* root_thread_sigblock.c - like root_thread_syscall, but the thread blocks
 * every signal first, so a signal-based stop cannot interrupt it: its stack
 * must still be scanned (conservatively).  Control: 77. */
#include <signal.h>
#include <unistd.h>

#include "sc_thread.h"

static int fds[2];

static SC_NOINLINE void alloc_into(void *volatile *slot) { *slot = malloc(640); }

static void *worker(void *arg) {
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  void *volatile keep = NULL;
  alloc_into(&keep);
  sc_scrub_stack();
  sc_signal_ready();
  char c;
  while (read(fds[0], &c, 1) != 0) {
  }
  return keep;
}

int main(void) {
  if (pipe(fds) != 0) return 2;
  sc_spawn(worker, NULL);
  sc_wait_ready(1);
  sc_leak(77);
  sc_end();
  return 0;
}
