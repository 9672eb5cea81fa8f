/* pagemap.c - the 2-level radix tree from page number to span.
 *
 * Root: 2^17 words in .bss (1 MiB of zero pages until touched), each the
 * byte offset of its leaf from the all-zero leaf hci_pagemap.zero (0: no
 * leaf), so that a lookup never tests for a missing leaf (hc_heap_view.h).
 * Leaves: 2^18 32-byte entries (8 MiB of virtual memory each, covering
 * 2 GiB of address space), mapped from the metadata arena on demand and
 * never freed, so a lock-free reader can never see a leaf disappear.
 * Entries are written with relaxed atomic stores under the page-heap lock;
 * a reader racing with a writer sees either the old or the new entry, both
 * of which describe memory it does not own yet (a pointer is only freed
 * after malloc returned it, which happens after its entry was published
 * under the lock). */
#include "hc_internal.h"

hc_pagemap_t hci_pagemap;
HC_PRIVATE_STATE(hci_pagemap); /* metadata offsets and a leaf of zeros: not a root */

static hc_pm_entry_t *leaf_for(uintptr_t page, bool create) {
  size_t i = page >> HC_PM_LEAF_BITS;
  hc_pm_entry_t *leaf = hci_pagemap_leaf(i);
  if (leaf || !create) return leaf;
  leaf = hci_meta_alloc(HC_PM_LEAF_LEN * sizeof(hc_pm_entry_t));
  if (!leaf) return NULL;
  atomic_store_explicit(&hci_pagemap.root[i], (uintptr_t)leaf - (uintptr_t)hci_pagemap.zero, memory_order_release);
  return leaf;
}

bool hci_pagemap_ensure(uintptr_t first_page, size_t n) {
  if (n == 0) return true;
  uintptr_t last = first_page + n - 1;
  if (last >> HC_PAGE_BITS) return false;
  for (uintptr_t p = first_page; p <= last; p = (p | (HC_PM_LEAF_LEN - 1)) + 1)
    if (!leaf_for(p, true)) return false;
  return true;
}

bool hci_pagemap_set(uintptr_t first_page, size_t n, hc_span_t *s, unsigned cls) {
  if (!hci_pagemap_ensure(first_page, n)) return false;
  uintptr_t start = cls ? s->start : 0;
  uint32_t lofs = (uint32_t)(cls * sizeof(hc_tc_list_t));
  /* A leaf at a time: large spans set thousands of entries. */
  for (uintptr_t page = first_page, end = first_page + n; page < end;) {
    hc_pm_entry_t *leaf = leaf_for(page, false);
    size_t i = page & (HC_PM_LEAF_LEN - 1);
    size_t stop = end - page < HC_PM_LEAF_LEN - i ? i + (end - page) : HC_PM_LEAF_LEN;
    page += stop - i;
    for (; i < stop; i++) {
      hc_pm_entry_t *e = &leaf[i];
      __atomic_store_n(&e->span, (uintptr_t)s, __ATOMIC_RELAXED);
      __atomic_store_n(&e->start, start, __ATOMIC_RELAXED);
      __atomic_store_n(&e->cls, cls, __ATOMIC_RELAXED);
      __atomic_store_n(&e->lofs, lofs, __ATOMIC_RELAXED);
      __atomic_store_n(&e->owner, 0, __ATOMIC_RELAXED);
    }
  }
  return true;
}

void hci_pagemap_set_owner(const hc_span_t *s, const void *owner) {
  uintptr_t first = s->start >> HC_PAGE_SHIFT;
  for (size_t i = 0; i < s->npages; i++) {
    uintptr_t page = first + i;
    hc_pm_entry_t *e = &leaf_for(page, false)[page & (HC_PM_LEAF_LEN - 1)];
    __atomic_store_n(&e->owner, (uintptr_t)owner, __ATOMIC_RELAXED);
  }
}
