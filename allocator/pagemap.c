/* pagemap.c - the 2-level radix tree from page number to span.
 *
 * Root: 2^19 words in .bss (4 MiB of zero pages until touched, read-only
 * but for the pages of the leaves made), each the byte offset of its leaf
 * from the all-zero leaf hci_pagemap.zero (0: no leaf), so that a lookup
 * never tests for a missing leaf (hc_heap_view.h).
 * Leaves: 2^16 32-byte entries and then 2^16 8-byte fast entries, the free
 * fast path's (2.5 MiB of virtual memory each, covering 512 MiB of address
 * space; 10 MiB and 2 GiB until session 20: with the zero leaf and the
 * heap's first leaf the library took 20 MiB of address space a program
 * under `ulimit -v` could not have, python under `ulimit -v 30000` could
 * not start where glibc's malloc runs it in 20 MB), mapped from the
 * metadata arena on demand, read-only but for the granules whose pages
 * were set (make_writable), and never freed, so a lock-free reader can
 * never see a leaf disappear.
 * Entries are written under the page-heap lock, field by field with
 * relaxed atomic stores, or whole as two aligned 16-byte stores (each
 * 8-byte field lands whole: aligned 8-byte stores are single-copy atomic,
 * and a reader reads one field at a time); a reader racing with a writer
 * sees either the old or the new value of a field, both
 * of which describe memory it does not own yet (a pointer is only freed
 * after malloc returned it, which happens after its entry was published
 * under the lock). */
#include "hc_internal.h"

hc_pagemap_t hci_pagemap;
HC_PRIVATE_STATE(hci_pagemap); /* metadata offsets and a leaf of zeros: not a root */

/* The leaves that exist, in address order, and which of their entries were
 * ever written, so that a walk of the heap (walk.c, in every leak check)
 * reads those instead of the 1 MiB root and whole 8 MiB leaves: reading
 * their untouched pages costs a zero-page fault each (2048 per leaf, 256
 * for the root), and a trivial process's exit check took 45 ms.  Kept for
 * the first HC_PM_USED_LEAVES leaves (64 GiB of heap address space); after
 * that a walk scans the root and reads the leaves without a slot whole.
 * Written under the page-heap lock, with the entries. */
#define HC_PM_USED_LEAVES 128
/* A leaf is mapped read-only and made writable a granule at a time, as
 * pages are first set: a data limit (RLIMIT_DATA) counts writable private
 * memory, and each leaf (10 MiB then) counted whole although a small heap
 * writes a few KiB of it (python under `ulimit -d 30000` failed at
 * start-up where glibc's malloc runs it).  A granule: the entries of 2048
 * pages (16 MiB of heap), 64 KiB, and their 16 KiB of fast entries.  A
 * leaf without a used slot is made writable whole. */
#define PM_GRAN_PAGES ((size_t)2048)
#define PM_GRANS (HC_PM_LEAF_LEN / PM_GRAN_PAGES)
_Static_assert(HC_PM_LEAF_LEN % PM_GRAN_PAGES == 0 && PM_GRAN_PAGES * sizeof(hc_pm_fast_t) % 4096 == 0, "granules");
typedef struct pm_used {
  uint32_t root;
  uint32_t lo, hi; /* entries [lo, hi) of the leaf may be non-zero; hi == 0: none */
  uint64_t writable[(PM_GRANS + 63) / 64]; /* granules made writable */
} pm_used_t;
static pm_used_t pm_used[HC_PM_USED_LEAVES];
static size_t pm_nused;
static bool pm_used_full; /* some leaf has no slot */

static pm_used_t *used_of(size_t root) {
  for (size_t k = 0; k < pm_nused; k++)
    if (pm_used[k].root == root) return &pm_used[k];
  return NULL;
}

/* False when the leaf gets no slot (then it must be writable whole). */
static bool used_add(size_t root) {
  if (pm_nused == HC_PM_USED_LEAVES) {
    pm_used_full = true;
    return false;
  }
  size_t k = pm_nused++;
  for (; k > 0 && pm_used[k - 1].root > root; k--) pm_used[k] = pm_used[k - 1];
  pm_used[k] = (pm_used_t){.root = (uint32_t)root};
  return true;
}

/* u: the leaf's slot, NULL when it has none (then the whole leaf is read). */
static void visit_leaf(size_t root, const pm_used_t *u, hci_pm_leaf_fn fn, void *ctx) {
  hc_pm_entry_t *leaf = hci_pagemap_leaf(root);
  if (!leaf) return;
  if (!u) fn(ctx, root, leaf, 0, HC_PM_LEAF_LEN);
  else if (u->hi) fn(ctx, root, leaf, u->lo, u->hi);
}

void hci_pagemap_for_each_leaf(hci_pm_leaf_fn fn, void *ctx) {
  if (!pm_used_full) {
    for (size_t k = 0; k < pm_nused; k++) visit_leaf(pm_used[k].root, &pm_used[k], fn, ctx);
    return;
  }
  for (size_t r = 0; r < HC_PM_ROOT_LEN; r++)
    if (hci_pagemap_leaf(r)) visit_leaf(r, used_of(r), fn, ctx);
}

#define PM_LEAF_BYTES (HC_PM_FAST_OFS + HC_PM_LEAF_LEN * sizeof(hc_pm_fast_t)) /* entries, then fast entries */

static hc_pm_entry_t *leaf_for(uintptr_t page, bool create) {
  size_t i = page >> HC_PM_LEAF_BITS;
  hc_pm_entry_t *leaf = hci_pagemap_leaf(i);
  if (leaf || !create) return leaf;
  leaf = hci_meta_alloc_ro(PM_LEAF_BYTES);
  if (!leaf) return NULL;
  if (!used_add(i) && !hci_os_commit(leaf, PM_LEAF_BYTES)) return NULL; /* a read-only leaf left unused */
  /* The root's pages are read-only but for those of the leaves made
   * (hci_pagemap_init: all of them but the one it shares with what .bss
   * holds before it). */
  uintptr_t rpage = (uintptr_t)&hci_pagemap.root[i] & ~(uintptr_t)4095;
  if (rpage >= (uintptr_t)hci_pagemap.root && !hci_os_commit((void *)rpage, 4096))
    return NULL; /* the leaf stays mapped, unused */
  atomic_store_explicit(&hci_pagemap.root[i], (uintptr_t)leaf - (uintptr_t)hci_pagemap.zero, memory_order_release);
  return leaf;
}

/* The granules of leaf's pages [i, stop) writable; false when the OS
 * refuses (a data limit). */
static bool make_writable(size_t root, hc_pm_entry_t *leaf, size_t i, size_t stop) {
  pm_used_t *u = used_of(root);
  if (!u) return true; /* no slot: writable whole since its creation */
  for (size_t g = i / PM_GRAN_PAGES; g * PM_GRAN_PAGES < stop; g++) {
    uint64_t bit = (uint64_t)1 << (g % 64);
    if (u->writable[g / 64] & bit) continue;
    if (!hci_os_commit(&leaf[g * PM_GRAN_PAGES], PM_GRAN_PAGES * sizeof(hc_pm_entry_t)) ||
        !hci_os_commit(&hci_pagemap_fast_of(leaf)[g * PM_GRAN_PAGES], PM_GRAN_PAGES * sizeof(hc_pm_fast_t)))
      return false;
    u->writable[g / 64] |= bit;
  }
  return true;
}

/* Pages [ready_lo, ready_hi) have leaves with their granules writable:
 * the last range ensured, widened to whole granules and joined to the
 * one before when they touch (the heap grows down, one mapping below the
 * last), so that the sets of a span carved from it cost two compares. */
static uintptr_t ready_lo, ready_hi;

bool hci_pagemap_ensure(uintptr_t first_page, size_t n) {
  if (n == 0) return true;
  uintptr_t last = first_page + n - 1;
  if (first_page >= ready_lo && last < ready_hi) return true;
  if (last >> HC_PAGE_BITS) return false;
  for (uintptr_t p = first_page; p <= last; p = (p | (HC_PM_LEAF_LEN - 1)) + 1) {
    hc_pm_entry_t *leaf = leaf_for(p, true);
    uintptr_t leaf_end = (p | (HC_PM_LEAF_LEN - 1)) + 1;
    size_t i = p & (HC_PM_LEAF_LEN - 1), stop = (last < leaf_end ? last + 1 : leaf_end) - (p & ~(HC_PM_LEAF_LEN - 1));
    if (!leaf || !make_writable(p >> HC_PM_LEAF_BITS, leaf, i, stop)) return false;
  }
  if (pm_used_full) return true; /* leaves without a slot: not tracked */
  uintptr_t lo = first_page & ~(uintptr_t)(PM_GRAN_PAGES - 1), hi = (last | (PM_GRAN_PAGES - 1)) + 1;
  if (hi >= ready_lo && lo <= ready_hi && ready_hi) {
    ready_lo = lo < ready_lo ? lo : ready_lo;
    ready_hi = hi > ready_hi ? hi : ready_hi;
  } else {
    ready_lo = lo;
    ready_hi = hi;
  }
  return true;
}

/* The zero leaf is never written, the root only where a leaf is made
 * (leaf_for): read-only, they are no data for a data limit (6.5 MiB of
 * .bss), and a stray write into them faults instead of giving every
 * unmapped page an entry.  Runs before the first leaf is made. */
void hci_pagemap_init(void) {
  uintptr_t lo = ((uintptr_t)hci_pagemap.root + 4095) & ~(uintptr_t)4095;
  uintptr_t hi = (uintptr_t)(hci_pagemap.zfast + HC_PM_LEAF_LEN) & ~(uintptr_t)4095;
  if (hi > lo) hci_os_commit_ro((void *)lo, hi - lo);
}

/* Widens the written range of page's leaf to cover its entries [i, stop). */
static void note_used(uintptr_t page, size_t i, size_t stop) {
  pm_used_t *u = used_of(page >> HC_PM_LEAF_BITS);
  if (u && (u->hi == 0 || i < u->lo)) u->lo = (uint32_t)i;
  if (u && stop > u->hi) u->hi = (uint32_t)stop;
}

/* The next leaf's part of the pages [*page, end): entries [*i, returned
 * stop) of the leaf *leaf; advances *page past them (large spans cover
 * thousands of pages, written a leaf at a time). */
static size_t leaf_part(uintptr_t *page, uintptr_t end, hc_pm_entry_t **leaf, size_t *i) {
  *leaf = leaf_for(*page, false);
  *i = *page & (HC_PM_LEAF_LEN - 1);
  size_t stop = end - *page < HC_PM_LEAF_LEN - *i ? *i + (end - *page) : HC_PM_LEAF_LEN;
  *page += stop - *i;
  return stop;
}

bool hci_pagemap_set(uintptr_t first_page, size_t n, hc_span_t *s, unsigned cls) {
  if (!hci_pagemap_ensure(first_page, n)) return false;
  uintptr_t start = cls ? s->start : 0;
  uint32_t lofs = hci_pagemap_lofs(cls);
  /* Fast entries: the span's first page open, the others closed until
   * carving reaches them (hci_pagemap_open). */
  hc_pm_fast_t fast = {(uint32_t)start, (uint16_t)lofs, 0}, closed = {(uint32_t)start, 0, 0};
  uint64_t fword, cword;
  __builtin_memcpy(&fword, &fast, sizeof fword);
  __builtin_memcpy(&cword, &closed, sizeof cword);
  uintptr_t open_page = start >> HC_PAGE_SHIFT;
  /* Every page of a span has the same entry: written as two 16-byte
   * halves (each 8-byte field still lands whole, as a reader needs; the
   * fields were never written together), 2 stores a page instead of 5. */
  typedef uint64_t hc_v2u64 __attribute__((vector_size(16)));
  _Static_assert(offsetof(hc_pm_entry_t, span) == 0 && offsetof(hc_pm_entry_t, start) == 8 &&
                     offsetof(hc_pm_entry_t, owner) == 16 && offsetof(hc_pm_entry_t, cls) == 24 &&
                     offsetof(hc_pm_entry_t, lofs) == 28,
                 "the halves below");
  const hc_v2u64 lo = {(uint64_t)(uintptr_t)s, (uint64_t)start};
  const hc_v2u64 hi = {0, (uint64_t)cls | (uint64_t)lofs << 32};
  /* Fast entries are 0 on every page but a SMALL span's (new_span and
   * free_span in central.c set the class while the span is SMALL): the
   * page heap's splits, merges and large spans leave them alone. */
  bool set_fast = cls != 0 || s->state == HC_SPAN_SMALL;
  for (uintptr_t page = first_page, end = first_page + n; page < end;) {
    hc_pm_entry_t *leaf;
    size_t i, stop = leaf_part(&page, end, &leaf, &i);
    note_used(page - 1, i, stop);
    if (set_fast) {
      uint64_t *fleaf = (uint64_t *)hci_pagemap_fast_of(leaf);
      uintptr_t p0 = page - (stop - i); /* the page of entry i */
      for (size_t k = i; k < stop; k++)
        __atomic_store_n(&fleaf[k], p0 + (k - i) == open_page ? fword : cword, __ATOMIC_RELAXED);
    }
    for (; i < stop; i++) {
      hc_v2u64 *e = (hc_v2u64 *)&leaf[i];
      e[0] = lo;
      e[1] = hi;
    }
  }
  return true;
}

void hci_pagemap_relabel(uintptr_t first_page, size_t n, hc_span_t *s) {
  for (uintptr_t page = first_page, end = first_page + n; page < end;) {
    hc_pm_entry_t *leaf;
    size_t i, stop = leaf_part(&page, end, &leaf, &i);
    for (; i < stop; i++) __atomic_store_n(&leaf[i].span, (uintptr_t)s, __ATOMIC_RELAXED);
  }
}

void hci_pagemap_open(const hc_span_t *s, uintptr_t first_page, uintptr_t end_page) {
  uint16_t lofs = (uint16_t)hci_pagemap_lofs(s->cls);
  for (uintptr_t page = first_page; page < end_page;) {
    hc_pm_entry_t *leaf;
    size_t i, stop = leaf_part(&page, end_page, &leaf, &i);
    hc_pm_fast_t *fleaf = hci_pagemap_fast_of(leaf);
    for (; i < stop; i++) __atomic_store_n(&fleaf[i].lofs, lofs, __ATOMIC_RELAXED);
  }
}

void hci_pagemap_set_owner(const hc_span_t *s, const void *owner) {
  uint16_t tag = hci_owner_tag(owner);
  for (uintptr_t page = s->start >> HC_PAGE_SHIFT, end = page + s->npages; page < end;) {
    hc_pm_entry_t *leaf;
    size_t i, stop = leaf_part(&page, end, &leaf, &i);
    hc_pm_fast_t *fleaf = hci_pagemap_fast_of(leaf);
    for (; i < stop; i++) {
      __atomic_store_n(&leaf[i].owner, (uintptr_t)owner, __ATOMIC_RELAXED);
      __atomic_store_n(&fleaf[i].otag, tag, __ATOMIC_RELAXED);
    }
  }
}
