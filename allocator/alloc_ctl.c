/* alloc_ctl.c - the allocator's setters and per-thread accessors for the
 * layers above (checker, profiler, runtime): they change the allocator's
 * state only through these functions, never by writing its globals or
 * another module's fields of a thread cache (tests/test_layers.sh checks
 * that no object above names allocator data).
 *
 * Per-thread state is split by owner (hc_tcache_t): free lists (alloc.c,
 * thread_cache.c), sampler (sampler.c), unwinder memo (stacks/, under
 * in_alloc), the checker's fields (chk: written here on its behalf, read by
 * the allocation slow path).
 * Locks: none of its own; hci_alloc_thread_tp requires the registry lock
 * (held through hci_lock_all).
 */
#include "hc_internal.h"

void hci_alloc_set_recording(void) {
  hci_record_all = 1;
  hci_meta_populate(); /* every small span gets a record array: metadata grows with the heap */
  hci_tc_set_fastpath(false);
}

bool hci_alloc_recording(void) { return hci_record_all != 0; }

void hci_alloc_set_quarantine(size_t bytes) { hci_quarantine_set(hci_record_all ? bytes : 0); }

bool hci_alloc_set_free_history(size_t entries, int stacks) {
  if (!hci_record_all) return false;
  hci_free_stacks = stacks;
  return hci_free_history_set(entries);
}

uint16_t hci_alloc_next_epoch(void) {
  return (uint16_t)(atomic_fetch_add_explicit(&hci_epoch, 1, memory_order_relaxed) + 1);
}

bool hci_alloc_disable_begin(void) {
  hc_tcache_t *tc = hci_tc_get();
  if (!tc) return false; /* thread exiting: its allocations bypass the cache and are recorded plainly */
  hci_tc_chk(tc)->disable_depth++;
  return true;
}

int hci_alloc_disable_depth(void) {
  hc_tcache_t *tc = hci_tc;
  return tc->is_real ? hci_tc_chk(tc)->disable_depth : 0;
}

bool hci_alloc_disable_end(void) {
  hc_tcache_t *tc = hci_tc;
  if (!tc->is_real || hci_tc_chk(tc)->disable_depth <= 0) return false;
  hci_tc_chk(tc)->disable_depth--;
  return true;
}

uintptr_t hci_alloc_thread_tp(int tid) {
  for (hc_tcache_t *tc = hci_tc_registry; tc; tc = tc->next)
    if (tc->tid == tid && tc->tp) return tc->tp;
  return 0;
}

int hci_alloc_trim(void) {
  hc_tcache_t *tc = hci_tc;
  /* Checker mode: the program asks for its free memory back, quarantined
   * blocks too (this thread's batch and the FIFO; other threads' batches
   * stay theirs), to the central lists drained below. */
  if (hci_quarantine_budget) hci_alloc_quarantine_flush(tc->is_real ? tc : NULL, true);
  if (tc->is_real) hci_tc_flush(tc);
  hci_tc_drain_remote();
  hci_central_drain();
  hci_sample_stash_drain();
  return hci_ph_release(0) > 0;
}
