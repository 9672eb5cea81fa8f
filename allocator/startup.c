/* startup.c - the allocator's side of process start-up.
 *
 * hci_init runs once, on the first allocation or from the library
 * constructor, whichever comes first.  The allocator works before it has
 * run (all its state is zero-initialised and lazily set up), so allocations
 * made while it runs (pthread_atfork and atexit may allocate) are simply
 * served; only the thread running init may enter it again, other threads
 * wait for it.
 *
 * What start-up does, and in which order the layers initialise, is the
 * runtime's decision (runtime/init.c), registered with HC_STARTUP: the
 * linker collects that record into the section hc_startup, and the
 * allocator calls it without naming any symbol of a layer above.  A program
 * that links the allocator without the runtime (an allocator unit test)
 * has no record; then only the allocator's own init runs. */
#include <sched.h>

#include "free_list.h"
#include "hc_internal.h"

_Atomic int hci_init_state;
static HC_TLS int init_running_here;

/* Weak: absent when no object registered a start-up. */
extern const hci_startup_fn __start_hc_startup[] __attribute__((weak, visibility("hidden")));
extern const hci_startup_fn __stop_hc_startup[] __attribute__((weak, visibility("hidden")));

void hci_alloc_init(void) {
  hci_pagemap_init();
  hci_fl_init();
  hci_sampler_init();
  hci_unwind_init();
  hci_tc_thread_init();
}

void hci_init(void) {
  int expected = 0;
  if (atomic_compare_exchange_strong_explicit(&hci_init_state, &expected, 1, memory_order_acq_rel,
                                              memory_order_acquire)) {
    init_running_here = 1;
    const hci_startup_fn *first = __start_hc_startup, *end = __stop_hc_startup;
    if (first && first < end)
      first[0]();
    else
      hci_alloc_init();
    atomic_store_explicit(&hci_init_state, 2, memory_order_release);
    init_running_here = 0;
    return;
  }
  if (init_running_here) return; /* re-entered from inside init: proceed uninitialised */
  for (unsigned round = 0; atomic_load_explicit(&hci_init_state, memory_order_acquire) != 2;) hci_os_backoff(&round);
}
