/* heap_growth.c - gperftools' heap-growth stacks
 * (MallocExtension::ReadHeapGrowthStackTraces / GetHeapGrowthStacks): one
 * record per growth of the page heap from the OS, with the bytes mapped and
 * the allocation stack that needed them, newest first, as tcmalloc keeps
 * them.  The allocator tells us through its growth listener
 * (hci_ph_set_growth_listener), after it dropped its locks; records come
 * from the metadata arena and are never freed (one per growth of at least
 * HC_HEAP_GROW_MIN, so a few hundred in a big process).
 *
 * hc_heap_growth_traces writes them in gperftools' layout: per record
 * {1, bytes, depth, pc...}, then a 0.
 * Locks: none (the list is pushed with a compare-and-swap). */
#include "gperftools/malloc_extension_c.h"
#include "hc_internal.h"
#include "hc_profiler.h"

typedef struct growth {
  struct growth *next;
  size_t bytes;
  uint32_t stack_id;
} growth_t;

static _Atomic(growth_t *) growth_head;

static void on_growth(size_t bytes, uint32_t stack_id) {
  growth_t *g = hci_meta_alloc(sizeof *g);
  if (!g) return;
  g->bytes = bytes;
  g->stack_id = stack_id;
  g->next = atomic_load_explicit(&growth_head, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&growth_head, &g->next, g, memory_order_release,
                                                memory_order_relaxed)) {
  }
}

void hci_heap_growth_attach(void) { hci_ph_set_growth_listener(on_growth); }

hc_public size_t hc_heap_growth_traces(void **out, size_t cap) {
  size_t need = 1, used = 0;
  for (growth_t *g = atomic_load_explicit(&growth_head, memory_order_acquire); g; g = g->next) {
    const uintptr_t *pcs;
    int depth = hci_depot_get(g->stack_id, &pcs);
    need += 3 + (size_t)depth;
    if (!out || used + 3 + (size_t)depth >= cap) continue; /* room for the terminator */
    out[used++] = (void *)(uintptr_t)1;
    out[used++] = (void *)(uintptr_t)g->bytes;
    out[used++] = (void *)(uintptr_t)depth;
    for (int i = 0; i < depth; i++) out[used++] = (void *)pcs[i];
  }
  if (out && cap) out[used] = NULL;
  return need;
}
