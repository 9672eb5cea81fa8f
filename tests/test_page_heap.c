/* test_page_heap.c - spans: allocation, splitting, coalescing, aligned
 * allocation, release to the OS.
 *
 * Calls hci_ph_* directly.  The accounting invariant checked throughout
 * (nothing else allocates while it is checked; this test is
 * single-threaded):
 *   mapped_bytes == inuse_bytes + (free_pages + released_pages) * page size
 * Residency after hci_ph_release is read with mincore(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hc_internal.h"

static int failures;
#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (!(cond)) {                                                        \
      failures++;                                                         \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
      fprintf(stderr, __VA_ARGS__);                                       \
      fputc('\n', stderr);                                                \
    }                                                                     \
  } while (0)

static hc_pageheap_t *const ph = &hci_pageheap;

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
  static unsigned char vec[1 << 16]; /* not malloc'ed: allocating here would move the page heap */
  size_t n = len / sys, res = 0;
  if (n > sizeof vec || mincore((void *)start, len, vec) != 0) {
    perror("mincore");
    return (size_t)-1;
  }
  for (size_t i = 0; i < n; i++) res += vec[i] & 1;
  return res;
}

static void test_alloc_free(void) {
  size_t sizes[] = {1, 2, 3, 7, 16, 127, 128, 129, 200, 256, 1000};
  hc_span_t *spans[sizeof sizes / sizeof sizes[0]];
  size_t inuse0 = ph->inuse_bytes;
  size_t total = 0;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    spans[i] = hci_ph_alloc(sizes[i]);
    check_span(spans[i], sizes[i], "hci_ph_alloc");
    total += sizes[i];
    CHECK(ph->inuse_bytes == inuse0 + total * HC_PAGE_SIZE, "in-use bytes %zu, want %zu", ph->inuse_bytes,
          inuse0 + total * HC_PAGE_SIZE);
    check_accounting("after alloc");
  }
  /* no two spans overlap */
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    for (size_t j = 0; j < i; j++) {
      hc_span_t *a = spans[i], *b = spans[j];
      if (!a || !b) continue;
      CHECK(a->start + a->npages * HC_PAGE_SIZE <= b->start || b->start + b->npages * HC_PAGE_SIZE <= a->start,
            "spans %zu and %zu overlap", i, j);
    }
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    if (!spans[i]) continue;
    uintptr_t start = spans[i]->start;
    hci_ph_free(spans[i]);
    hc_span_t *f = hci_pagemap_span(start);
    CHECK(f && f->state == HC_SPAN_FREE, "freed span not free (state %d)", f ? f->state : -1);
    CHECK(f && f->start <= start && f->start + f->npages * HC_PAGE_SIZE >= start + sizes[i] * HC_PAGE_SIZE,
          "free span does not cover the freed pages");
    check_accounting("after free");
  }
  CHECK(ph->inuse_bytes == inuse0, "in-use bytes %zu after freeing everything, want %zu", ph->inuse_bytes, inuse0);
}

/* Three adjacent spans; free the middle, then the sides: one free span. */
static void test_coalesce(void) {
  hc_span_t *keep[64];
  int nkeep = 0;
  hc_span_t *a = NULL, *b = NULL, *c = NULL;
  for (int attempt = 0; attempt < 64; attempt++) {
    a = hci_ph_alloc(4);
    b = hci_ph_alloc(5);
    c = hci_ph_alloc(6);
    if (a && b && c && b->start == a->start + 4 * HC_PAGE_SIZE && c->start == b->start + 5 * HC_PAGE_SIZE) break;
    /* not adjacent: keep them (fills the holes) and retry */
    if (nkeep + 3 <= 64) {
      keep[nkeep++] = a;
      keep[nkeep++] = b;
      keep[nkeep++] = c;
    }
    a = b = c = NULL;
  }
  CHECK(a && b && c, "never got three adjacent spans");
  if (a && b && c) {
    uintptr_t as = a->start, bs = b->start, cs = c->start, cend = c->start + 6 * HC_PAGE_SIZE;
    hc_span_t *before = hci_pagemap_span(as - 1);
    hc_span_t *after = hci_pagemap_span(cend);
    bool before_free = before && before->state == HC_SPAN_FREE;
    bool after_free = after && after->state == HC_SPAN_FREE;
    CHECK(!before_free || before->start + before->npages * HC_PAGE_SIZE == as, "neighbour before");

    hci_ph_free(b);
    hc_span_t *m = hci_pagemap_span(bs);
    CHECK(m && m->state == HC_SPAN_FREE && m->start == bs && m->npages == 5,
          "middle span alone: start %#zx (want %#zx) pages %zu (want 5)", m ? (size_t)m->start : 0, (size_t)bs,
          m ? m->npages : 0);
    CHECK(hci_pagemap_span(as) == a && a->state == HC_SPAN_LARGE, "left span changed");
    CHECK(hci_pagemap_span(cs) == c && c->state == HC_SPAN_LARGE, "right span changed");
    check_accounting("after freeing the middle");

    hci_ph_free(a);
    hc_span_t *l = hci_pagemap_span(as);
    CHECK(l && l->state == HC_SPAN_FREE, "left span not free");
    CHECK(hci_pagemap_span(bs) == l && hci_pagemap_span(bs + 5 * HC_PAGE_SIZE - 1) == l,
          "left and middle did not merge");
    if (!before_free) CHECK(l && l->start == as && l->npages == 9, "left+middle: start %#zx pages %zu",
                            l ? (size_t)l->start : 0, l ? l->npages : 0);
    check_accounting("after freeing the left");

    hci_ph_free(c);
    hc_span_t *all = hci_pagemap_span(as);
    CHECK(all && all->state == HC_SPAN_FREE, "merged span not free");
    CHECK(hci_pagemap_span(cs) == all && hci_pagemap_span(cend - 1) == all, "right span did not merge");
    CHECK(all && all->start <= as && all->start + all->npages * HC_PAGE_SIZE >= cend, "merged span too short");
    if (!before_free && !after_free)
      CHECK(all && all->start == as && all->npages == 15, "one span of 15 pages: start %#zx pages %zu",
            all ? (size_t)all->start : 0, all ? all->npages : 0);
    if (after_free) CHECK(all && all->start + all->npages * HC_PAGE_SIZE > cend, "did not merge with the free run after");
    check_accounting("after freeing the right");
  }
  for (int i = 0; i < nkeep; i++)
    if (keep[i]) hci_ph_free(keep[i]);
  check_accounting("after freeing the fillers");
}

static void test_aligned(void) {
  size_t counts[] = {1, 2, 3, 17, 200};
  for (size_t align = 16 << 10; align <= (4 << 20); align <<= 1) {
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
      size_t inuse0 = ph->inuse_bytes;
      hc_span_t *s = hci_ph_alloc_aligned(counts[k], align);
      check_span(s, counts[k], "hci_ph_alloc_aligned");
      if (!s) continue;
      CHECK(s->start % align == 0, "start %#zx not aligned to %zu", (size_t)s->start, align);
      CHECK(ph->inuse_bytes == inuse0 + counts[k] * HC_PAGE_SIZE, "aligned alloc of %zu pages counted %zu bytes",
            counts[k], ph->inuse_bytes - inuse0);
      check_accounting("after aligned alloc");
      hci_ph_free(s);
      CHECK(ph->inuse_bytes == inuse0, "in use after aligned free");
      check_accounting("after aligned free");
    }
  }
  /* many at once: all aligned, none overlapping */
  hc_span_t *v[40];
  for (int i = 0; i < 40; i++) {
    size_t align = (size_t)16384 << (i % 6);
    v[i] = hci_ph_alloc_aligned(1 + i % 5, align);
    CHECK(v[i] && v[i]->start % align == 0, "batch aligned alloc %d", i);
  }
  for (int i = 0; i < 40; i++)
    for (int j = 0; j < i; j++)
      if (v[i] && v[j])
        CHECK(v[i]->start + v[i]->npages * HC_PAGE_SIZE <= v[j]->start ||
                  v[j]->start + v[j]->npages * HC_PAGE_SIZE <= v[i]->start,
              "aligned spans %d and %d overlap", i, j);
  for (int i = 0; i < 40; i++)
    if (v[i]) hci_ph_free(v[i]);
  check_accounting("after the aligned batch");
}

static void test_release(void) {
  const size_t npages = 512; /* 4 MiB */
  const size_t len = npages * HC_PAGE_SIZE;
  hc_span_t *s = hci_ph_alloc(npages);
  check_span(s, npages, "release span");
  if (!s) return;
  uintptr_t start = s->start;
  memset((void *)start, 0xa5, len);
  size_t sys = (size_t)sysconf(_SC_PAGESIZE);
  CHECK(resident_pages(start, len) == len / sys, "touched span not resident: %zu of %zu", resident_pages(start, len),
        len / sys);
  hci_ph_free(s);
  check_accounting("before release");
  size_t free0 = ph->free_pages, rel0 = ph->released_pages, calls0 = ph->release_calls;
  CHECK(free0 >= npages, "committed free pages %zu after freeing %zu touched pages", free0, npages);
  size_t done = hci_ph_release(0);
  CHECK(done >= len, "hci_ph_release(0) released %zu bytes, want >= %zu", done, len);
  CHECK(done == free0 * HC_PAGE_SIZE, "release(0) released %zu, committed free was %zu", done,
        free0 * HC_PAGE_SIZE);
  CHECK(ph->free_pages == 0, "committed free pages left after release(0): %zu", ph->free_pages);
  CHECK(ph->released_pages == rel0 + free0, "released pages %zu, want %zu", ph->released_pages, rel0 + free0);
  CHECK(ph->release_calls > calls0, "release_calls not counted");
  check_accounting("after release");
  size_t res = resident_pages(start, len);
  CHECK(res == 0, "%zu of %zu pages still resident after release", res, len / sys);
  hc_span_t *f = hci_pagemap_span(start);
  CHECK(f && f->state == HC_SPAN_FREE && f->is_released, "released span state %d released %d", f ? f->state : -1,
        f ? f->is_released : -1);
  /* nothing left to release */
  CHECK(hci_ph_release(0) == 0, "second release(0) found committed pages");

  /* Reallocating released pages: marked zeroed and really zero. */
  hc_span_t *t = hci_ph_alloc(npages);
  check_span(t, npages, "realloc released");
  if (t) {
    CHECK(t->is_zeroed, "span carved from released pages not marked zeroed");
    if (t->is_zeroed) {
      /* check_span wrote the first/last byte of each page; everything else is zero */
      const unsigned char *m = (const unsigned char *)t->start;
      size_t bad = 0;
      for (size_t i = 0; i < len; i++) {
        size_t in_page = i % HC_PAGE_SIZE;
        if (in_page != 0 && in_page != HC_PAGE_SIZE - 1 && m[i]) bad++;
      }
      CHECK(bad == 0, "%zu nonzero bytes in a span marked zeroed", bad);
    }
    hci_ph_free(t);
  }
  /* Committed (dirty) pages are not marked zeroed. */
  hc_span_t *d = hci_ph_alloc(3);
  check_span(d, 3, "dirty");
  if (d) {
    memset((void *)d->start, 1, 3 * HC_PAGE_SIZE);
    uintptr_t ds = d->start;
    hci_ph_free(d);
    hc_span_t *e = hci_ph_alloc(3);
    if (e && e->start == ds) CHECK(!e->is_zeroed, "dirty span reused and marked zeroed");
    if (e) hci_ph_free(e);
  }
  /* A partial release gives back something and keeps the accounting. */
  hc_span_t *p1 = hci_ph_alloc(300);
  if (p1) {
    memset((void *)p1->start, 2, 300 * HC_PAGE_SIZE);
    hci_ph_free(p1);
    size_t before = ph->free_pages;
    size_t got = hci_ph_release(HC_PAGE_SIZE);
    CHECK(got >= HC_PAGE_SIZE, "release(1 page) released %zu", got);
    CHECK(ph->free_pages + got / HC_PAGE_SIZE == before, "partial release accounting");
    check_accounting("after partial release");
  }
}

/* The page heap releases by itself when much committed memory is free. */
static void test_auto_release(void) {
  enum { N = 40 };
  hc_span_t *v[N];
  for (int i = 0; i < N; i++) { /* 40 x 4 MiB = 160 MiB touched */
    v[i] = hci_ph_alloc(512);
    if (v[i]) memset((void *)v[i]->start, 3, 512 * HC_PAGE_SIZE);
  }
  for (int i = 0; i < N; i++)
    if (v[i]) hci_ph_free(v[i]);
  size_t committed = ph->free_pages * HC_PAGE_SIZE;
  CHECK(committed <= ((size_t)64 << 20), "%zu MiB of committed free pages kept after freeing 160 MiB",
        committed >> 20);
  check_accounting("after auto release");
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  setvbuf(stderr, NULL, _IONBF, 0);
  free(malloc(1)); /* initialise */
  check_accounting("start");
  test_alloc_free();
  test_coalesce();
  test_aligned();
  test_release();
  test_auto_release();
  check_accounting("end");
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("page heap OK\n");
  return 0;
}
