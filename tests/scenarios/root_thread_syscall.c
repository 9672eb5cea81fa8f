// EXPECT: bytes=77 objects=1
/* root_thread_syscall.c - a 640-byte object whose only pointer is a local of
 * a thread blocked in read(2) on a pipe nobody writes.  Control: 77.
 * root_thread_sigblock.c includes this file with SC_BLOCK_ALL_SIGNALS set to
 * 1: the same thread, but blocking every signal first; io_uring_workers.c
 * with SC_BEFORE_THREAD naming what main starts first. */
#include <signal.h>
#include <unistd.h>

#include "sc_thread.h"

#ifndef SC_BLOCK_ALL_SIGNALS
#define SC_BLOCK_ALL_SIGNALS 0
#endif

static int fds[2];

static SC_NOINLINE void alloc_into(void *volatile *slot) { *slot = malloc(640); }

static void *worker(void *arg) {
  (void)arg;
  if (SC_BLOCK_ALL_SIGNALS) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
  }
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
#ifdef SC_BEFORE_THREAD
  SC_BEFORE_THREAD();
#endif
  sc_spawn(worker, NULL);
  sc_wait_ready(1);
  sc_leak(77);
  sc_end();
  return 0;
}
