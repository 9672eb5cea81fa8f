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
 * then every lock of the library in rank order (each_lock below): the lock
 * order is the enum hci_lock_rank in base/hc_base.h, written there once
 * (and pictured in docs/design.md).  The locks held only under the
 * checker's lock (stop-the-world and TLS set-up, the roots table after
 * start-up) are covered by taking the checker's.  The stdio list lock comes
 * first for the reason glibc's own malloc takes its locks after it: a
 * thread in fflush(NULL) holds it while it waits for a stream's lock, and
 * the thread holding that stream (getline) may be inside malloc; taking our
 * locks first would close the cycle.  glibc's fork takes the list lock
 * again after the prepare handlers (it is recursive) and releases or resets
 * it before the parent and child handlers; the parent handler releases
 * ours and the list lock last, the child resets ours and leaves the list
 * lock to glibc's reset.
 *
 * prepare only tries our locks.  When one is busy it gives back what it
 * took and the list lock, waits for that one lock holding nothing, and
 * starts again.  Waiting while holding them closed a cycle whenever
 * another thread's signal handler forked from inside one of our locked
 * sections: that thread cannot leave the section before its own fork
 * returns, and its fork waits in glibc for the list lock this prepare
 * held (a two-thread hang found with timer signals whose handler forks).
 *
 * Nothing is taken when the process is single-threaded (no other thread
 * can hold a lock; a fork from a signal handler that interrupted malloc
 * must not wait for the lock it interrupted, as with glibc's malloc), nor
 * when this thread is already inside a fork (a handler interrupting fork
 * forks again).  Only the list lock is taken when this thread holds or
 * waits for one of the library's locks (hci_locks_held_here: a handler
 * interrupted one of our locked sections in a threaded process; prepare
 * waited for its own thread's lock forever).  Then the child hooks only
 * take the child's identity (tid, pid, report stream) and reset none of
 * ours: a lock the interrupted code holds
 * is released by that code when the handler returns, in the parent and in
 * the child alike; one another thread held stays held in the child, as
 * with glibc's malloc when its own prepare cannot run (a child forked by
 * a signal handler of a threaded process may call only async-signal-safe
 * functions, which malloc is not). */
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
static HC_TLS bool fork_took_list;  /* the outermost prepare took glibc's stdio list lock */
static HC_TLS bool fork_took_locks; /* ... and ours */

/* Every lock of the library, in rank order, to `each`. */
static void each_lock(hci_lock_fn *each) {
  hci_checker_fork_locks(each);
  hci_profiler_fork_locks(each);
  hci_fmt_fork_json_locks(each);
  hci_symbolizer_fork_locks(each);
  hci_profile_counters_locks(each);
  hci_allocator_locks(each);
  hci_fmt_fork_files_locks(each);
}

/* One attempt of prepare's: the locks taken so far, the first busy one. */
static HC_TLS unsigned try_taken, try_seen;
static HC_TLS hci_lock_t *try_busy;

static void try_one(hci_lock_t *l) {
  if (try_busy) return;
  if (hci_trylock(l)) try_taken++;
  else try_busy = l;
}

static void give_back_taken(hci_lock_t *l) {
  if (try_seen++ < try_taken) hci_unlock(l);
}

static void fork_prepare(void) {
  if (fork_depth++ > 0) return; /* a fork inside a fork: the outer one's locks stay as they are */
  fork_took_list = fork_took_locks = false;
  if (__libc_single_threaded) return;
  /* The list lock, even when ours cannot be taken: glibc's fork takes it
   * after its own fork-handler lock, which it holds from the end of the
   * prepare handlers to the parent's; taken here, before that lock, as
   * every other fork through this handler takes it, the two never cross. */
  if (_IO_list_lock) _IO_list_lock();
  fork_took_list = true;
  if (hci_locks_held_here > 0) return;
  fork_took_locks = true;
  for (;;) {
    try_taken = try_seen = 0;
    try_busy = NULL;
    each_lock(try_one);
    if (!try_busy) return;
    each_lock(give_back_taken);
    if (_IO_list_unlock) _IO_list_unlock();
    hci_lock(try_busy); /* holding nothing: wait until its holder is done */
    hci_unlock(try_busy);
    if (_IO_list_lock) _IO_list_lock();
  }
}

static void fork_parent(void) {
  if (--fork_depth > 0) return;
  if (fork_took_locks) each_lock(hci_lock_fn_unlock);
  if (fork_took_list && _IO_list_unlock) _IO_list_unlock();
}

static void fork_child(void) {
  bool reset = --fork_depth == 0 && fork_took_locks;
  if (reset) {
    each_lock(hci_lock_fn_reset); /* the locks were taken by this very thread */
    hci_locks_held_here = 0;
  }
  if (fork_depth == 0 && fork_took_list && _IO_list_resetlock) _IO_list_resetlock(); /* glibc reset it already; idempotent */
  hci_os_memory_mine();
  hci_tc_fork_child(reset);
  hci_log_stream_fork_child();
  hci_proc_fork_child();
  hci_exec_watch_fork_child();
  hci_checker_fork_child();
  hci_profiler_fork_child();
}

void hci_runtime_start(void) {
  hci_os_memory_mine();
  hci_profiler_attach();
  hci_alloc_init();
  hci_alloc_reserve_heap(); /* the first growth, recorded with this stack (alloc.c) */
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  hci_checker_init();
  hci_profiler_init();
}

/* gcc links -static executables without .eh_frame_hdr: the DWARF walk of
 * allocation stacks (sampling, profiles, checks, GetStackTrace) then gets an
 * index of .eh_frame, found in the executable's section headers, in every
 * mode.  Stacks captured before, during libc's start-up, keep what the
 * frame-pointer guess gave them; the rules and the walk choices made from
 * those guesses are forgotten. */
static hc_noinline void static_unwind_index(void) {
  uintptr_t eh_lo, eh_hi;
  if (hci_symbolize_section((uintptr_t)&static_unwind_index, ".eh_frame", &eh_lo, &eh_hi) &&
      hci_unwind_static_index(eh_lo, eh_hi))
    hci_alloc_forget_walk_hints();
}

__attribute__((constructor(101))) static void heapcheck_constructor(void) {
  hci_init();
  hci_step_aside();
  hci_redirect_libc();
  /* Tested here: a dynamic process runs nothing of it (start-up text stays in
   * the hot group, runtime/hot_text.ld). */
  if (hci_eh_static_exe()) static_unwind_index();
}
