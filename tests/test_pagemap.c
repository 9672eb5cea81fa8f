/* test_pagemap.c - the page -> {span, info} radix tree.
 *
 * Sets entries for fake spans in an address range the heap never uses
 * (around 2^44), across leaf boundaries, and reads them back; checks that
 * arbitrary 64-bit junk (>= 2^48, 0, -1, random) maps to no span and class
 * 0 without faulting; checks the info word (span start | class) of every
 * page of real heap spans, which the free fast path uses to find object
 * starts; and that the leaf walk of the checker's heap walks
 * (hci_pagemap_for_each_leaf) covers every page ever set, in address order,
 * also once more leaves exist than it keeps bounds for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_inline.h"

#include "hc_check.h"

/* The allocator alone (allocator_unit_dep): its own entry points, since the
 * exported malloc family is the runtime's. */
static void *hc_alloc(size_t n) { return hc_malloc_fast(n, 0); }
static void hc_release(void *p) { hc_free_fast(p, 0); }

/* Fake spans: the pagemap stores their address and (for classes) start. */
static hc_span_t fake[4];

static uintptr_t info_of(uintptr_t a) {
  const hc_pm_entry_t *e = hci_pagemap_find(a);
  /* start | class: what the entry says about a page, in one word */
  return e ? __atomic_load_n(&e->start, __ATOMIC_RELAXED) | __atomic_load_n(&e->cls, __ATOMIC_RELAXED) : 0;
}

/* Sets [first, first + n) to s/cls and checks several addresses of every
 * page plus the untouched neighbours. */
static void set_and_check(uintptr_t first, size_t n, hc_span_t *s, unsigned cls) {
  s->start = first << HC_PAGE_SHIFT;
  s->npages = n;
  hc_span_t *before = hci_pagemap_span((first - 1) << HC_PAGE_SHIFT);
  hc_span_t *after = hci_pagemap_span((first + n) << HC_PAGE_SHIFT);
  uintptr_t before_info = info_of((first - 1) << HC_PAGE_SHIFT);
  hci_lock(&hci_pageheap.lock);
  bool ok = hci_pagemap_set(first, n, s, cls);
  hci_unlock(&hci_pageheap.lock);
  CHECK(ok, "hci_pagemap_set(%#zx, %zu) failed", (size_t)first, n);
  uintptr_t want_info = cls ? s->start | cls : 0;
  for (size_t i = 0; i < n; i++) {
    uintptr_t base = (first + i) << HC_PAGE_SHIFT;
    uintptr_t probes[] = {base, base + 1, base + 16, base + HC_PAGE_SIZE / 2, base + HC_PAGE_SIZE - 1};
    for (size_t k = 0; k < sizeof probes / sizeof probes[0]; k++) {
      uintptr_t a = probes[k];
      CHECK(hci_pagemap_find(a) != NULL, "no entry for %#zx", (size_t)a);
      CHECK(hci_pagemap_span(a) == s, "span(%#zx) = %p, want %p", (size_t)a, (void *)hci_pagemap_span(a), (void *)s);
      CHECK(hci_pagemap_class(a) == cls, "class(%#zx) = %u, want %u", (size_t)a, hci_pagemap_class(a), cls);
      CHECK(info_of(a) == want_info, "info(%#zx) = %#zx, want %#zx", (size_t)a, (size_t)info_of(a),
            (size_t)want_info);
      if (cls) { /* what the free fast path computes */
        const hc_pm_entry_t *e = hci_pagemap_entry(a);
        CHECK(e && a - e->start == a - s->start, "span offset of %#zx", (size_t)a);
        CHECK(e && e->lofs == cls * sizeof(hc_tc_list_t), "list offset of %#zx: %u", (size_t)a, e ? e->lofs : 0);
      }
    }
  }
  CHECK(hci_pagemap_span((first - 1) << HC_PAGE_SHIFT) == before, "page before the range changed");
  CHECK(info_of((first - 1) << HC_PAGE_SHIFT) == before_info, "info of the page before the range changed");
  CHECK(hci_pagemap_span((first + n) << HC_PAGE_SHIFT) == after, "page after the range changed");
}

/* What hci_pagemap_for_each_leaf reported. */
typedef struct leaf_seen {
  size_t n;
  size_t root[4096], lo[4096], hi[4096];
} leaf_seen_t;
static leaf_seen_t seen;

static void note_leaf(void *ctx, size_t root, hc_pm_entry_t *leaf, size_t lo, size_t hi) {
  leaf_seen_t *w = ctx;
  CHECK(leaf == hci_pagemap_leaf(root), "leaf of root %zu", root);
  CHECK(lo < hi && hi <= HC_PM_LEAF_LEN, "root %zu: bounds [%zu, %zu)", root, lo, hi);
  if (w->n < 4096) {
    w->root[w->n] = root;
    w->lo[w->n] = lo;
    w->hi[w->n++] = hi;
  }
}

/* Every page in pages[] lies in a reported leaf, inside its bounds; the
 * leaves come in address order. */
static void check_walk(const uintptr_t *pages, size_t npages, const char *when) {
  seen.n = 0;
  hci_lock(&hci_pageheap.lock);
  hci_pagemap_for_each_leaf(note_leaf, &seen);
  hci_unlock(&hci_pageheap.lock);
  for (size_t k = 1; k < seen.n; k++)
    CHECK(seen.root[k - 1] < seen.root[k], "%s: leaves out of order (%zu, %zu)", when, seen.root[k - 1], seen.root[k]);
  for (size_t i = 0; i < npages; i++) {
    size_t root = pages[i] >> HC_PM_LEAF_BITS, idx = pages[i] & (HC_PM_LEAF_LEN - 1), k = 0;
    while (k < seen.n && seen.root[k] != root) k++;
    CHECK(k < seen.n, "%s: the leaf of page %#zx was not walked", when, (size_t)pages[i]);
    if (k < seen.n)
      CHECK(seen.lo[k] <= idx && idx < seen.hi[k], "%s: page %#zx outside the walked [%zu, %zu)", when,
            (size_t)pages[i], seen.lo[k], seen.hi[k]);
  }
}

static uint64_t rng = 0x123456789abcdefull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static bool nothing_at(uintptr_t a) {
  /* the free fast path's lookup: above the address space, or an entry of zeros */
  const hc_pm_entry_t *e = hci_pagemap_entry(a);
  bool zero = !e || (!e->span && !e->start && !e->owner && !e->cls && !e->lofs);
  return zero && hci_pagemap_span(a) == NULL && hci_pagemap_class(a) == 0 && info_of(a) == 0;
}

int main(void) {
  /* Real heap memory first, so the heap bounds are known. */
  void *small = hc_alloc(48);
  CHECK(small != NULL, "malloc");
  const uintptr_t region = (uintptr_t)1 << 44; /* far from mmap's and brk's areas */
  const uintptr_t region_end = region + ((uintptr_t)1 << 40);
  CHECK(region_end <= hci_pageheap.lo || region >= hci_pageheap.hi,
        "test region overlaps the heap [%#zx, %#zx)", (size_t)hci_pageheap.lo, (size_t)hci_pageheap.hi);
  uintptr_t rp = region >> HC_PAGE_SHIFT;
  uintptr_t last = ((uintptr_t)1 << HC_PAGE_BITS) - 1; /* last page of the address space */

  /* nothing set there yet */
  CHECK(nothing_at(region), "unset page has an entry");
  CHECK(nothing_at(last << HC_PAGE_SHIFT), "last page has an entry before being set");

  /* a single page, then runs crossing one and two leaf boundaries */
  uintptr_t leaf = HC_PM_LEAF_LEN;
  set_and_check(rp + 5, 1, &fake[0], 0);
  set_and_check(rp + leaf - 3, 7, &fake[1], 17);             /* crosses a leaf boundary */
  set_and_check(rp + 3 * leaf - 2, 32, &fake[2], HC_NUM_CLASSES - 1);
  set_and_check(rp + 5 * leaf - 1, leaf + 2, &fake[3], 0);   /* spans three leaves */
  /* overwrite: class changes and back to free */
  set_and_check(rp + leaf - 3, 7, &fake[2], 3);
  set_and_check(rp + leaf - 3, 7, &fake[1], 0);
  CHECK(nothing_at((rp + leaf - 4) << HC_PAGE_SHIFT), "neighbour of an overwritten run");
  /* the end of the address space */
  set_and_check(last - 3, 4, &fake[0], 9);
  CHECK(hci_pagemap_span(((uintptr_t)1 << HC_ADDRESS_BITS) - 1) == &fake[0], "last byte of the address space");
  /* out of range: ensure/set refuse */
  CHECK(!hci_pagemap_ensure(last, 2), "ensure past the end of the address space succeeded");
  hci_lock(&hci_pageheap.lock);
  CHECK(!hci_pagemap_set(last + 1, 1, &fake[0], 0), "set past the end of the address space succeeded");
  hci_unlock(&hci_pageheap.lock);
  CHECK(hci_pagemap_ensure(rp, 0), "ensure of 0 pages");

  /* junk pointers: never a fault, never a span */
  uintptr_t junk[] = {0, 1, 4095, (uintptr_t)-1, (uintptr_t)-4096, (uintptr_t)1 << 48, ((uintptr_t)1 << 48) + 8192,
                      (uintptr_t)1 << 63, 0xdeadbeefdeadbeefull, 0x8000000000000000ull | (uintptr_t)small,
                      ((uintptr_t)1 << 48) | (uintptr_t)small, (uintptr_t)small ^ ((uintptr_t)1 << 56),
                      ((uintptr_t)1 << 47) + 12345};
  for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
    CHECK(nothing_at(junk[i]), "junk %#zx has span %p", (size_t)junk[i], (void *)hci_pagemap_span(junk[i]));
  for (int i = 0; i < 2000000; i++) {
    uintptr_t a = (uintptr_t)rnd();
    if (i & 1) a |= (uintptr_t)1 << (48 + (i % 16));  /* high bits set: never mapped */
    else a &= ((uintptr_t)1 << 48) - 1;                /* user range: only the heap and our test range */
    bool expect_nothing = (a >> 48) || !((a >= region && a < region_end) ||
                                         (a >= hci_pageheap.lo && a < hci_pageheap.hi) ||
                                         (a >> HC_PAGE_SHIFT) >= last - 3);
    if (expect_nothing) CHECK(nothing_at(a), "random address %#zx has span %p", (size_t)a, (void *)hci_pagemap_span(a));
  }

  /* Real spans: class and start of every page of every class's span. */
  for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
    const hc_class_info_t *ci = &hci_classes[cls];
    void *p = hc_alloc(ci->size);
    CHECK(p != NULL, "hc_alloc(%u)", ci->size);
    hc_span_t *s = hci_pagemap_span((uintptr_t)p);
    CHECK(s != NULL, "class %u object has no span", cls);
    if (!s) continue;
    if (s->state == HC_SPAN_LARGE) { /* sampled objects get a LARGE span of their own */
      CHECK(hci_pagemap_class((uintptr_t)p) == 0 && s->start == (uintptr_t)p, "large span of a sampled object");
      hc_release(p);
      continue;
    }
    CHECK(s->state == HC_SPAN_SMALL && s->cls == cls, "class %u: span state %d cls %d", cls, s->state, s->cls);
    CHECK(s->npages == ci->pages, "class %u: span of %zu pages, want %u", cls, s->npages, ci->pages);
    for (size_t i = 0; i < s->npages; i++) {
      uintptr_t a = s->start + i * HC_PAGE_SIZE + 16 * i;
      CHECK(hci_pagemap_span(a) == s, "class %u page %zu: wrong span", cls, i);
      CHECK(hci_pagemap_class(a) == cls, "class %u page %zu: class %u", cls, i, hci_pagemap_class(a));
      CHECK(info_of(a) == (s->start | cls), "class %u page %zu: info %#zx, want %#zx", cls, i,
            (size_t)info_of(a), (size_t)(s->start | cls));
    }
    CHECK(((uintptr_t)p - s->start) % ci->size == 0, "object not at a class boundary");
    hc_release(p);
  }
  /* A large object: class 0, info 0, every page maps to its span. */
  size_t big = 40 * HC_PAGE_SIZE + 100;
  char *b = hc_alloc(big);
  hc_span_t *bs = hci_pagemap_span((uintptr_t)b);
  CHECK(bs && bs->start == (uintptr_t)b && bs->state == HC_SPAN_LARGE, "large span");
  for (size_t off = 0; off < big; off += HC_PAGE_SIZE / 2) {
    CHECK(hci_pagemap_span((uintptr_t)b + off) == bs, "large object offset %zu", off);
    CHECK(hci_pagemap_class((uintptr_t)b + off) == 0 && info_of((uintptr_t)b + off) == 0, "large object has a class");
  }
  hc_release(b);
  /* after free the pages still map to a (free) span */
  hc_span_t *fs = hci_pagemap_span((uintptr_t)b);
  CHECK(fs && fs->state == HC_SPAN_FREE && info_of((uintptr_t)b) == 0, "freed large span");
  hc_release(small);

  /* The leaf walk: the pages set above, then one page in each of 40 more
   * leaves (more than the walk keeps bounds for), set high to low. */
  uintptr_t walked[64];
  size_t nw = 0;
  walked[nw++] = rp + 5;
  walked[nw++] = rp + leaf - 3;
  walked[nw++] = rp + leaf + 3;
  walked[nw++] = rp + 5 * leaf + leaf / 2;
  walked[nw++] = last;
  walked[nw++] = (uintptr_t)b >> HC_PAGE_SHIFT;
  check_walk(walked, nw, "before");
  for (size_t k = 40; k-- > 0;) {
    uintptr_t page = rp + (8 + 2 * k) * leaf + 1000 + k;
    set_and_check(page, 1, &fake[k % 4], 0);
    walked[nw++] = page;
  }
  check_walk(walked, nw, "with 40 more leaves");

  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("pagemap OK\n");
  return 0;
}
