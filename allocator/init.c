/* init.c - process initialisation, fork handling.
 *
 * hci_init runs once, on the first allocation or from the library
 * constructor, whichever comes first.  The allocator works before it has
 * run (all its state is zero-initialised and lazily set up), so allocations
 * made while it runs (pthread_atfork and atexit may allocate) are simply
 * served; only the thread running init may enter it again, other threads
 * wait for it.
 *
 * Fork: prepare takes every allocator lock in the documented order, so the
 * child starts with consistent structures; the child resets the locks and
 * drops the other threads' caches. */
#include <pthread.h>
#include <sched.h>

#include "hc_internal.h"

_Atomic int hci_init_state;
static HC_TLS int init_running_here;

/* The checker and profiler register fork hooks of their own via these. */
void hci_checker_fork_prepare(void) __attribute__((weak));
void hci_checker_fork_parent(void) __attribute__((weak));
void hci_checker_fork_child(void) __attribute__((weak));
void hci_depot_fork_child(void) __attribute__((weak));

static void fork_prepare(void) {
  if (hci_checker_fork_prepare) hci_checker_fork_prepare();
  hci_lock_all();
}

static void fork_parent(void) {
  hci_unlock_all();
  if (hci_checker_fork_parent) hci_checker_fork_parent();
}

static void fork_child(void) {
  hci_unlock_all(); /* the locks were taken by this very thread: releasing is a reset */
  hci_tc_fork_child();
  hci_log_stream_fork_child();
  if (hci_depot_fork_child) hci_depot_fork_child();
  if (hci_checker_fork_child) hci_checker_fork_child();
}

void hci_init(void) {
  int expected = 0;
  if (atomic_compare_exchange_strong_explicit(&hci_init_state, &expected, 1, memory_order_acq_rel,
                                              memory_order_acquire)) {
    init_running_here = 1;
    hci_sampler_init();
    hci_unwind_init();
    hci_tc_thread_init();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    hci_checker_init();
    hci_profiler_init();
    atomic_store_explicit(&hci_init_state, 2, memory_order_release);
    init_running_here = 0;
    return;
  }
  if (init_running_here) return; /* re-entered from inside init: proceed uninitialised */
  while (atomic_load_explicit(&hci_init_state, memory_order_acquire) != 2) sched_yield();
}

__attribute__((constructor(101))) static void heapcheck_constructor(void) { hci_init(); }
