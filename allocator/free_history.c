/* free_history.c - checker mode: the blocks freed last, each with the
 * stack that allocated it and the one that freed it, for the report of a
 * double free (checker/mem_errors.c: "The first free occurred here", "The
 * memory was allocated here", as valgrind and ASan tell it).
 *
 * A table indexed by a hash of the block's address (a power of two of
 * entries, hci_free_history_set): each entry is the last free that hashed
 * there, so a later free of another block with the same index evicts it.
 * Every checker-mode free writes one entry with plain stores: no lock, no
 * read-modify-write, so frees of different threads share a line only by
 * chance.  The address is cleared first and written last, and the reader
 * reads it before and after the other fields: an entry two writers tore
 * reads as absent, never as another block's stacks.  Read only when a free
 * fails.  The entries live in the metadata arena (24 bytes each; their
 * pages are touched as frees spread over the table).
 */
#include "hc_internal.h"

typedef struct hc_freed {
  _Atomic uintptr_t p;        /* the block; 0: empty or being written */
  _Atomic uintptr_t free_ra;  /* the free's caller */
  _Atomic uint32_t alloc_id;  /* allocation stack (depot id) */
  _Atomic uint32_t free_id;   /* free stack, HC_STACK_NONE when free stacks are off */
} hc_freed_t;

static hc_freed_t *table;
static unsigned shift;        /* 64 - log2(entries) */

bool hci_free_history_on;

bool hci_free_history_set(size_t entries) {
  if (table || entries == 0) return table != NULL;
  unsigned bits = 1;
  while (bits < 22 && ((size_t)1 << bits) < entries) bits++;
  hc_freed_t *t = hci_meta_alloc(sizeof(hc_freed_t) << bits);
  if (!t) return false;
  shift = 64 - bits;
  table = t;
  hci_free_history_on = true;
  return true;
}

static inline hc_freed_t *slot(uintptr_t p) { return &table[(p * 0x9e3779b97f4a7c15ull) >> shift]; }

void hci_free_history_put(const void *p, uint32_t alloc_id, uint32_t free_id, uintptr_t ra) {
  hc_freed_t *e = slot((uintptr_t)p);
  atomic_store_explicit(&e->p, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&e->free_ra, ra, memory_order_relaxed);
  atomic_store_explicit(&e->alloc_id, alloc_id, memory_order_relaxed);
  atomic_store_explicit(&e->free_id, free_id, memory_order_relaxed);
  atomic_store_explicit(&e->p, (uintptr_t)p, memory_order_release);
}

bool hci_free_history_find(const void *p, uint32_t *alloc_id, uint32_t *free_id, uintptr_t *free_ra) {
  if (!table || !p) return false;
  hc_freed_t *e = slot((uintptr_t)p);
  if (atomic_load_explicit(&e->p, memory_order_acquire) != (uintptr_t)p) return false;
  *alloc_id = atomic_load_explicit(&e->alloc_id, memory_order_relaxed);
  *free_id = atomic_load_explicit(&e->free_id, memory_order_relaxed);
  *free_ra = atomic_load_explicit(&e->free_ra, memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(&e->p, memory_order_relaxed) == (uintptr_t)p;
}
