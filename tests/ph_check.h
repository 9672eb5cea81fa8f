/* ph_check.h - test_page_heap.c's checked operations on the page heap:
 * alloc_checked() and free_checked() predict each call's effect on the
 * counts (committed, released, release calls) from the state before it and
 * check it; check_runs() checks the free lists against the merging rule;
 * the release threshold as the policy defines it.  The rules they check
 * are in test_page_heap.c's header.  Calls hci_ph_* directly (nothing else
 * may allocate while it runs). */
#ifndef PH_CHECK_H
#define PH_CHECK_H

#include <stdio.h>
#include <unistd.h>

#include "hc_check.h"
#include "hc_internal.h"

static hc_pageheap_t *const ph = &hci_pageheap;

#define MiB ((size_t)1 << 20)

/* The threshold as the policy defines it, independently of page_heap.c
 * (the peaks are the page heap's state, the slack comes from hc_config.h). */
static size_t threshold_formula(size_t inuse) {
  size_t d = ph->peak_cur > ph->peak_prev ? ph->peak_cur : ph->peak_prev;
  if (d < inuse) d = inuse;
  return d - inuse + (d > HC_RELEASE_SLACK ? d : HC_RELEASE_SLACK);
}

static void check_threshold(const char *where) {
  size_t inuse = ph->inuse_bytes;
  size_t t = hci_ph_release_threshold();
  CHECK(t == threshold_formula(inuse), "%s: release threshold %zu with %zu bytes in use, want %zu", where, t, inuse,
        threshold_formula(inuse));
}

/* The free run s would merge with on the side given (-1 before, +1 after), or NULL. */
static hc_span_t *free_neighbour(const hc_span_t *s, int side) {
  if (side < 0) {
    hc_span_t *p = hci_pagemap_span(s->start - 1);
    return p && p != s && p->state == HC_SPAN_FREE && p->start + p->npages * HC_PAGE_SIZE == s->start ? p : NULL;
  }
  uintptr_t end = s->start + s->npages * HC_PAGE_SIZE;
  hc_span_t *n = hci_pagemap_span(end);
  return n && n != s && n->state == HC_SPAN_FREE && n->start == end ? n : NULL;
}

/* The free lists against the merging rule: every run on them is free,
 * maps its first and last page to itself, sits on the list for its length,
 * and has no free neighbour in its own state (same-state neighbours always
 * merge); their pages, per state, are free_pages and released_pages. */
static void check_runs(const char *where) {
  size_t committed = 0, released = 0, bad = 0;
  for (size_t i = 1; i <= HC_PH_EXACT_LISTS + 1; i++) {
    hc_span_t *h = i > HC_PH_EXACT_LISTS ? &ph->large : &ph->exact[i];
    if (!h->next) continue; /* lists not set up yet */
    for (hc_span_t *r = h->next; r != h; r = r->next) {
      bool ok = r->state == HC_SPAN_FREE && (i > HC_PH_EXACT_LISTS ? r->npages > HC_PH_EXACT_LISTS : r->npages == i) &&
                hci_pagemap_span(r->start) == r && hci_pagemap_span(r->start + r->npages * HC_PAGE_SIZE - 1) == r;
      if (!ok && bad++ == 0)
        CHECK(0, "%s: free run %#zx+%zu pages (state %d) on list %zu, or its pages map elsewhere", where,
              (size_t)r->start, r->npages, r->state, i);
      for (int side = -1; side <= 1; side += 2) {
        hc_span_t *n = free_neighbour(r, side);
        if (n && n->is_released == r->is_released && bad++ == 0)
          CHECK(0, "%s: adjacent free runs %#zx+%zu and %#zx+%zu, both %s, not merged", where, (size_t)r->start,
                r->npages, (size_t)n->start, n->npages, r->is_released ? "released" : "committed");
      }
      if (r->is_released) released += r->npages;
      else committed += r->npages;
    }
  }
  CHECK(committed == ph->free_pages && released == ph->released_pages,
        "%s: free lists hold %zu committed + %zu released pages, counters say %zu + %zu", where, committed, released,
        ph->free_pages, ph->released_pages);
}

static int auto_releases; /* frees that released (for the summary line) */
static int grows; /* allocations that mapped memory (summary line) */

/* hci_ph_alloc(n), or hci_ph_alloc_aligned(n, align) when align is not 0,
 * with the counts predicted: after the heap grew, the span is carved from
 * the fresh (released-state) run, so it is zeroed, committed free pages do
 * not change and the rest of the mapping adds to the released pages (were
 * fresh memory merged with a committed neighbour as committed, neither
 * would hold).  Otherwise the span came from one free run: zeroed exactly
 * when that run was released, and only that state's count drops by n. */
static hc_span_t *alloc_checked(size_t n, size_t align, const char *where) {
  size_t mapped0 = ph->mapped_bytes, f0 = ph->free_pages, r0 = ph->released_pages, inuse0 = ph->inuse_bytes;
  hc_span_t *s = align ? hci_ph_alloc_aligned(n, align) : hci_ph_alloc(n);
  if (!s) return NULL; /* callers check */
  CHECK(s->npages == n && s->state == HC_SPAN_LARGE && ph->inuse_bytes == inuse0 + n * HC_PAGE_SIZE,
        "%s: allocated %zu pages (state %d), in use +%zu bytes; want %zu pages", where, s->npages, s->state,
        ph->inuse_bytes - inuse0, n);
  size_t grown = (ph->mapped_bytes - mapped0) / HC_PAGE_SIZE;
  if (grown) {
    grows++;
    CHECK(s->is_zeroed, "%s: span carved from fresh memory (heap grew %zu pages) not marked zeroed", where, grown);
    CHECK(ph->free_pages == f0 && ph->released_pages == r0 + grown - n,
          "%s: heap grew %zu pages for %zu: committed/released free pages %zu/%zu -> %zu/%zu, want %zu/%zu "
          "(fresh memory is released)",
          where, grown, n, f0, r0, ph->free_pages, ph->released_pages, f0, r0 + grown - n);
  } else if (s->is_zeroed) {
    CHECK(ph->free_pages == f0 && ph->released_pages == r0 - n,
          "%s: %zu pages from a released run: committed/released free pages %zu/%zu -> %zu/%zu", where, n, f0, r0,
          ph->free_pages, ph->released_pages);
  } else {
    CHECK(ph->free_pages == f0 - n && ph->released_pages == r0,
          "%s: %zu pages from a committed run: committed/released free pages %zu/%zu -> %zu/%zu", where, n, f0, r0,
          ph->free_pages, ph->released_pages);
  }
  check_runs(where);
  return s;
}

/* hci_ph_free(s) with the release policy checked.  Returns true when the
 * free released memory. */
static bool free_checked(hc_span_t *s, const char *where) {
  size_t npages = s->npages;
  uintptr_t start = s->start, end = start + npages * HC_PAGE_SIZE;
  /* The freed span is committed: it merges with committed free neighbours
   * (the run then spans them) and not with released ones, which keep their
   * extent.  No pages change state, so the counts are exact. */
  uintptr_t lo = start, hi = end, nb_start[2] = {0, 0};
  size_t nb_pages[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    hc_span_t *n = free_neighbour(s, k ? +1 : -1);
    if (!n) continue;
    if (!n->is_released) {
      if (k) hi = n->start + n->npages * HC_PAGE_SIZE;
      else lo = n->start;
    } else {
      nb_start[k] = n->start;
      nb_pages[k] = n->npages;
    }
  }
  size_t f1 = ph->free_pages + npages, r1 = ph->released_pages;
  size_t inuse1 = ph->inuse_bytes - npages * HC_PAGE_SIZE;
  uint64_t calls0 = ph->release_calls;
  size_t t = threshold_formula(inuse1);
  hci_ph_free(s);
  check_threshold(where);
  check_runs(where);
  CHECK(ph->inuse_bytes == inuse1, "%s: in use %zu after freeing %zu pages, want %zu", where, ph->inuse_bytes,
        npages, inuse1);
  hc_span_t *f = hci_pagemap_span(start);
  CHECK(f && f->state == HC_SPAN_FREE && f->start <= start &&
            f->start + f->npages * HC_PAGE_SIZE >= start + npages * HC_PAGE_SIZE,
        "%s: freed pages not in a free span", where);
  size_t fb = ph->free_pages * HC_PAGE_SIZE;
  CHECK(fb <= t, "%s: %zu committed free bytes kept after a free, threshold %zu", where, fb, t);
  CHECK(ph->free_pages + ph->released_pages == f1 + r1, "%s: free pages %zu + %zu, want %zu", where, ph->free_pages,
        ph->released_pages, f1 + r1);
  if (f1 * HC_PAGE_SIZE > t) {
    auto_releases++;
    CHECK(ph->release_calls == calls0 + 1, "%s: %zu committed free bytes > threshold %zu, but %llu releases", where,
          f1 * HC_PAGE_SIZE, t, (unsigned long long)(ph->release_calls - calls0));
    CHECK(fb <= t - HC_RELEASE_SLACK / 2, "%s: release left %zu committed free bytes, want <= %zu", where, fb,
          t - HC_RELEASE_SLACK / 2);
    return true;
  }
  CHECK(ph->release_calls == calls0, "%s: released although only %zu committed free bytes <= threshold %zu", where,
        f1 * HC_PAGE_SIZE, t);
  CHECK(ph->free_pages == f1 && ph->released_pages == r1, "%s: committed/released pages %zu/%zu, want %zu/%zu",
        where, ph->free_pages, ph->released_pages, f1, r1);
  CHECK(f && f->start == lo && f->npages * HC_PAGE_SIZE == hi - lo && !f->is_released,
        "%s: freed %#zx+%zu pages: free run %#zx+%zu pages %s, want %#zx+%zu pages committed", where, (size_t)start,
        npages, f ? (size_t)f->start : 0, f ? f->npages : 0, f && f->is_released ? "released" : "committed",
        (size_t)lo, (size_t)((hi - lo) / HC_PAGE_SIZE));
  for (int k = 0; k < 2; k++) {
    if (!nb_pages[k]) continue;
    hc_span_t *n = hci_pagemap_span(nb_start[k]);
    CHECK(n && n != f && n->state == HC_SPAN_FREE && n->is_released && n->start == nb_start[k] &&
              n->npages == nb_pages[k],
          "%s: the released run %s (%#zx+%zu pages) changed: now %#zx+%zu pages, %s, %s the freed span", where,
          k ? "after" : "before", (size_t)nb_start[k], nb_pages[k], n ? (size_t)n->start : 0, n ? n->npages : 0,
          n && n->is_released ? "released" : "committed", n == f ? "merged with" : "apart from");
  }
  return false;
}

/* An n-page span whose neighbours are not free (in use, or not heap), so
 * freeing it merges with nothing: fillers take the free runs beside it (an
 * allocation of exactly a run's length takes a run of that length; after
 * enough of them, the neighbour).  Fillers go to fill[]. */
static hc_span_t *alloc_isolated(size_t n, hc_span_t **fill, int *nfill, int maxfill) {
  hc_span_t *s = alloc_checked(n, 0, "isolated span");
  while (s && *nfill < maxfill) {
    hc_span_t *nb = free_neighbour(s, -1);
    if (!nb) nb = free_neighbour(s, +1);
    if (!nb) return s;
    hc_span_t *f = alloc_checked(nb->npages, 0, "filler");
    if (!f) break;
    fill[(*nfill)++] = f;
  }
  CHECK(s && !free_neighbour(s, -1) && !free_neighbour(s, +1), "could not isolate a span of %zu pages", n);
  return s;
}

static void check_accounting(const char *where) {
  hci_lock(&ph->lock);
  size_t mapped = ph->mapped_bytes, inuse = ph->inuse_bytes;
  size_t freeb = ph->free_pages << HC_PAGE_SHIFT, rel = ph->released_pages << HC_PAGE_SHIFT;
  hci_unlock(&ph->lock);
  CHECK(mapped == inuse + freeb + rel, "%s: mapped %zu != in use %zu + free %zu + released %zu", where, mapped,
        inuse, freeb, rel);
}

/* Every page of s maps to s; the page before and after do not. */
static void check_span(hc_span_t *s, size_t npages, const char *what) {
  CHECK(s != NULL, "%s: allocation failed", what);
  if (!s) return;
  CHECK(s->npages == npages, "%s: %zu pages, want %zu", what, s->npages, npages);
  CHECK(s->state == HC_SPAN_LARGE, "%s: state %d", what, s->state);
  CHECK(s->start % HC_PAGE_SIZE == 0, "%s: start %#zx not page aligned", what, (size_t)s->start);
  CHECK(s->start >= ph->lo && s->start + npages * HC_PAGE_SIZE <= ph->hi, "%s: outside the heap bounds", what);
  for (size_t i = 0; i < s->npages; i++) {
    uintptr_t a = s->start + i * HC_PAGE_SIZE;
    if (hci_pagemap_span(a) != s || hci_pagemap_span(a + HC_PAGE_SIZE - 1) != s) {
      CHECK(0, "%s: page %zu maps to %p, not its span %p", what, i, (void *)hci_pagemap_span(a), (void *)s);
      break;
    }
  }
  CHECK(hci_pagemap_span(s->start - 1) != s, "%s: page before maps to the span", what);
  CHECK(hci_pagemap_span(s->start + s->npages * HC_PAGE_SIZE) != s, "%s: page after maps to the span", what);
  /* usable: write the first and last byte of each page */
  for (size_t i = 0; i < s->npages; i++) {
    ((volatile char *)s->start)[i * HC_PAGE_SIZE] = (char)i;
    ((volatile char *)s->start)[(i + 1) * HC_PAGE_SIZE - 1] = (char)i;
  }
}

static size_t resident_pages(uintptr_t start, size_t len) {
  size_t sys = (size_t)sysconf(_SC_PAGESIZE);
  /* not malloc'ed: allocating here would move the page heap.  Room for
   * runs of HC_RELEASE_SLACK bytes (test_release) well past 64 MiB. */
  static unsigned char vec[1 << 20];
  size_t n = len / sys, res = 0;
  if (n > sizeof vec || mincore((void *)start, len, vec) != 0) {
    perror("mincore");
    return (size_t)-1;
  }
  for (size_t i = 0; i < n; i++) res += vec[i] & 1;
  return res;
}

#endif
