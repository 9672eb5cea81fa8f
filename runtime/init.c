/* init.c - process start-up order, the library constructor, the one fork
 * handler.
 *
 * The runtime is the top layer: it alone may name every layer below it.
 * hci_runtime_start is registered with the allocator (HC_STARTUP, in
 * override.c next to malloc, so that a static link which pulls malloc in
 * pulls this file in too) and runs once, from the first allocation or the
 * constructor (allocator/startup.c says how re-entry and other threads are
 * handled).  Its order:
 *   1. the profiler's sample listener (before any object can be sampled);
 *   2. the allocator and stacks (sampler, unwinder, thread-exit key), and
 *      the heap's first growth (recorded with this start-up's stack);
 *   3. the fork handler (the only pthread_atfork of the library);
 *   4. the checker (HEAPCHECK: options, recording), then the profiler
 *      (HEAPPROFILE: may start dumping).
 *
 * Fork.  prepare takes glibc's stdio list lock (_IO_list_lock, recursive),
 * then every lock of the library in rank order: the lock order is the enum
 * hci_lock_rank in base/hc_base.h, written there once (and pictured in
 * docs/design.md); debug builds assert it on every hci_lock.  The locks
 * held only under the checker's lock (stop-the-world and TLS set-up, the
 * roots table after start-up) are covered by taking the checker's.
 * (hci_lock_all takes the allocator's part, hooks' switch to metadata arena.)  The stdio list
 * lock comes first for the reason glibc's own malloc takes its locks after
 * it: a thread in fflush(NULL) holds it while it waits for a stream's lock,
 * and the thread holding that stream (getline) may be inside malloc; taking
 * our locks first would close the cycle.  glibc's fork takes the list lock
 * again after the prepare handlers (it is recursive) and releases or resets
 * it before the parent and child handlers; the parent handler releases ours
 * in the reverse order and the list lock last, the child resets ours and
 * leaves the list lock to glibc's reset.
 *
 * Nothing is taken when the process is single-threaded (no other thread
 * can hold a lock; a fork from a signal handler that interrupted malloc
 * must not wait for the lock it interrupted, as with glibc's malloc), nor
 * when this thread is already inside a fork (a handler interrupting fork
 * forks again): then the child hooks only take the child's identity (tid,
 * pid, report stream) and reset nothing. */
#include <pthread.h>
#include <sys/single_threaded.h>

#include "hc_checker.h"
#include "hc_profiler.h"
#include "hc_runtime.h"
#include "hc_symbolize.h"

/* glibc's stdio list lock; weak, so a libc without them is still served. */
extern void _IO_list_lock(void) __attribute__((weak));
extern void _IO_list_unlock(void) __attribute__((weak));
extern void _IO_list_resetlock(void) __attribute__((weak));

static HC_TLS int fork_depth;       /* forks this thread is inside (prepare run, parent/child not yet) */
static HC_TLS bool fork_took_locks; /* the outermost prepare took the locks */

static void fork_prepare(void) {
  if (fork_depth++ > 0) return; /* a fork inside a fork: the outer one's locks stay as they are */
  fork_took_locks = !__libc_single_threaded;
  if (!fork_took_locks) return;
  if (_IO_list_lock) _IO_list_lock();
  hci_checker_fork_prepare();
  hci_profiler_fork_prepare();
  hci_fmt_fork_lock_json();
  hci_symbolizer_fork_prepare();
  hci_profile_counters_lock();
  hci_lock_all();
  hci_fmt_fork_lock_files();
}

static void fork_parent(void) {
  if (--fork_depth > 0 || !fork_took_locks) return;
  hci_fmt_fork_unlock_files();
  hci_unlock_all();
  hci_profile_counters_unlock();
  hci_symbolizer_fork_parent();
  hci_fmt_fork_unlock_json();
  hci_profiler_fork_parent();
  hci_checker_fork_parent();
  if (_IO_list_unlock) _IO_list_unlock();
}

static void fork_child(void) {
  bool reset = --fork_depth == 0 && fork_took_locks;
  if (reset) {
    hci_unlock_all(); /* the locks were taken by this very thread: releasing is a reset */
    hci_depot_fork_child();
    hci_profile_counters_reset_lock();
    hci_symbolizer_fork_child();
    hci_fmt_fork_child();
    hci_checker_fork_child();
    if (_IO_list_resetlock) _IO_list_resetlock(); /* glibc reset it already; idempotent */
  }
  hci_tc_fork_child();
  hci_log_stream_fork_child();
  hci_profiler_fork_child(reset);
}

void hci_runtime_start(void) {
  hci_profiler_attach();
  hci_alloc_init();
  hci_alloc_reserve_heap(); /* the first growth, recorded with this stack (alloc.c) */
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  hci_checker_init();
  hci_profiler_init();
}

__attribute__((constructor(101))) static void heapcheck_constructor(void) {
  hci_init();
  hci_redirect_libc();
}
