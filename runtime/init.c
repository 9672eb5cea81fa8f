/* init.c - process start-up order, the library constructor, fork handling.
 *
 * The runtime is the top layer: it alone may name every layer below it.
 * hci_runtime_start is registered with the allocator (HC_STARTUP, in
 * override.c next to malloc, so that a static link which pulls malloc in
 * pulls this file in too) and runs once, from the first allocation or the constructor (allocator/startup.c
 * says how re-entry and other threads are handled).  Its order:
 *   1. the profiler's sample listener (before any object can be sampled);
 *   2. the allocator and stacks (sampler, unwinder, thread-exit key);
 *   3. the fork handlers;
 *   4. the checker (HEAPCHECK: options, recording), then the profiler
 *      (HEAPPROFILE: may start dumping).
 *
 * Fork: prepare takes every allocator lock in the documented order, so the
 * child starts with consistent structures; the child resets the locks and
 * drops the other threads' caches. */
#include <pthread.h>

#include "hc_checker.h"
#include "hc_profiler.h"
#include "hc_runtime.h"

static void fork_prepare(void) {
  hci_checker_fork_prepare();
  hci_lock_all();
}

static void fork_parent(void) {
  hci_unlock_all();
  hci_checker_fork_parent();
}

static void fork_child(void) {
  hci_unlock_all(); /* the locks were taken by this very thread: releasing is a reset */
  hci_tc_fork_child();
  hci_log_stream_fork_child();
  hci_depot_fork_child();
  hci_checker_fork_child();
}

void hci_runtime_start(void) {
  hci_profiler_attach();
  hci_alloc_init();
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  hci_checker_init();
  hci_profiler_init();
}

__attribute__((constructor(101))) static void heapcheck_constructor(void) { hci_init(); }
