/* test_page_heap.c - spans: allocation, splitting, coalescing, aligned
 * allocation, release to the OS.
 *
 * Calls hci_ph_* directly.  The accounting invariant checked throughout
 * (nothing else allocates while it is checked; this test is
 * single-threaded):
 *   mapped_bytes == inuse_bytes + (free_pages + released_pages) * page size
 * Residency after hci_ph_release is read with mincore().
 *
 * Release policy (page_heap.c, "release by demand"): a free releases
 * committed free memory when it exceeds the threshold demand - in use +
 * max(HC_RELEASE_SLACK, demand), demand = the most in use in this epoch and
 * the one before, down to HC_RELEASE_SLACK / 2 below the threshold.  The
 * test makes epochs endless (hci_ph_set_release_delay), so time never
 * enters, and ends them with hci_ph_forget_demand (two idle epochs) where a
 * part needs it; test_idle runs with real 1 ms epochs.  The parts take
 * their sizes from the constants, so the boundaries they check move with
 * them.  Every free here goes
 * through free_checked(), which predicts from the state before the free
 * whether a release must happen and checks the outcome (release_calls,
 * committed and released page counts, and without a release the exact free
 * run the pages end up in).  Free runs merge only with neighbours in the
 * same state: a freed span is committed, so it merges with committed free
 * neighbours and stays apart from released ones (which keep their extent
 * and state); released runs merge with released ones.  So the counts are
 * exact and a few committed pages freed beside a big released run do not
 * pass the threshold (see hysteresis()).  check_runs() checks the free
 * lists against this after every step: no two adjacent free runs in the
 * same state, counts per state equal to free_pages and released_pages.
 * Every allocation goes through alloc_checked(): memory fresh from the OS
 * is released-state (untouched pages are not resident), so a span carved
 * after the heap grew is zeroed and the rest of the new mapping counts as
 * released; otherwise the span comes from one run, committed or released,
 * and only that state's count drops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ph_check.h"

static void test_alloc_free(void) {
  size_t sizes[] = {1, 2, 3, 7, 16, 127, 128, 129, 200, 256, 1000};
  hc_span_t *spans[sizeof sizes / sizeof sizes[0]];
  size_t inuse0 = ph->inuse_bytes;
  size_t total = 0;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    spans[i] = alloc_checked(sizes[i], 0, "alloc/free");
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
    free_checked(spans[i], "alloc/free");
    check_accounting("after free");
  }
  CHECK(ph->inuse_bytes == inuse0, "in-use bytes %zu after freeing everything, want %zu", ph->inuse_bytes, inuse0);
}

/* Spans allocated while looking for adjacent ones; freed at a test's end. */
typedef struct fillers {
  hc_span_t *s[64];
  int n;
} fillers_t;

/* Three adjacent in-use spans of n0, n1, n2 pages; NULLs after 64 tries.
 * Sets that come out apart are kept in f (whole sets, while they fit):
 * they fill the holes, so a later try lands in fresh space. */
static void three_adjacent(size_t n0, size_t n1, size_t n2, hc_span_t **a, hc_span_t **b, hc_span_t **c,
                           fillers_t *f, const char *what) {
  for (int attempt = 0; attempt < 64; attempt++) {
    *a = alloc_checked(n0, 0, what);
    *b = alloc_checked(n1, 0, what);
    *c = alloc_checked(n2, 0, what);
    if (*a && *b && *c && (*b)->start == (*a)->start + n0 * HC_PAGE_SIZE &&
        (*c)->start == (*b)->start + n1 * HC_PAGE_SIZE)
      return;
    if (f->n + 3 <= 64) {
      f->s[f->n++] = *a;
      f->s[f->n++] = *b;
      f->s[f->n++] = *c;
    }
    *a = *b = *c = NULL;
  }
}

static void free_fillers(fillers_t *f, const char *what) {
  for (int i = 0; i < f->n; i++)
    if (f->s[i]) free_checked(f->s[i], what);
}

/* hci_ph_grow (realloc's in-place growth): a span followed by a free run
 * of 9 pages grows by 4 (the run keeps 5, accounted free), then by the
 * exact rest (the run disappears); a span followed by an in-use one or by
 * too few free pages does not grow and changes nothing. */
static void test_grow(void) {
  fillers_t fill = {.n = 0};
  hc_span_t *a, *b, *c;
  three_adjacent(3, 9, 2, &a, &b, &c, &fill, "grow");
  CHECK(a && b && c, "never got three adjacent spans");
  if (a && b && c) {
    uintptr_t bs = b->start;
    CHECK(!hci_ph_grow(a, 4), "grew into an in-use span");
    check_span(a, 3, "not grown");
    free_checked(b, "grow");
    size_t inuse0 = ph->inuse_bytes;
    CHECK(hci_ph_grow(a, 7), "did not grow into 9 free pages");
    check_span(a, 7, "grown by 4");
    hc_span_t *rest = hci_pagemap_span(bs + 4 * HC_PAGE_SIZE);
    CHECK(rest && rest->state == HC_SPAN_FREE && rest->start == bs + 4 * HC_PAGE_SIZE && rest->npages == 5 &&
              hci_pagemap_span(bs + 9 * HC_PAGE_SIZE - 1) == rest,
          "the free rest after growing by 4");
    CHECK(ph->inuse_bytes == inuse0 + 4 * HC_PAGE_SIZE, "in-use bytes grew by %zu, want 4 pages",
          ph->inuse_bytes - inuse0);
    check_accounting("grown by 4");
    CHECK(!hci_ph_grow(a, 13), "grew past the free run (5 pages, 6 asked)");
    check_span(a, 7, "not grown past the run");
    CHECK(hci_ph_grow(a, 12), "did not grow by the exact rest");
    check_span(a, 12, "grown by the exact rest");
    CHECK(hci_pagemap_span(c->start) == c, "the next span is untouched");
    check_accounting("grown by the rest");
    free_checked(a, "grow");
    free_checked(c, "grow");
  }
  free_fillers(&fill, "grow");
}

/* Metadata mapped between two growths of the heap (a stack-depot table, an
 * unwinder cache: hci_meta_alloc of more than 64 KiB) must not land between
 * the heap's mappings: the kernel maps top-down, each mapping right below
 * the last, so the second growth ends where the first begins and the two
 * runs merge once free (base/meta.c takes such blocks from the address
 * space it reserved at its first use; without it, bench_large's peak RSS
 * was 40.8 or 48.4 MB by where ASLR put the libraries).  Each growth is
 * larger than any free run, so only the two merged can serve 2n pages
 * without the heap growing again.  The metadata block is big (address
 * space only, never touched) so that no hole above the heap can take it. */
#define META_BLOCK ((size_t)8 << 20)
static void test_growth_contiguous(void) {
  size_t n = (ph->mapped_bytes >> HC_PAGE_SHIFT) + 1;
  size_t mapped0 = ph->mapped_bytes;
  hc_span_t *a = alloc_checked(n, 0, "first growth");
  CHECK(a && ph->mapped_bytes > mapped0, "%zu pages did not grow the heap", n);
  void *m = hci_meta_alloc(META_BLOCK);
  CHECK(m && hci_meta_owns((uintptr_t)m), "metadata block");
  uintptr_t olo = 0, ohi = 0;
  CHECK(m && hci_os_owned_next((uintptr_t)m, &olo, &ohi) && olo <= (uintptr_t)m && ohi >= (uintptr_t)m + (META_BLOCK),
        "the metadata block is not in a remembered mapping (the checker would scan it as a root)");
  size_t mapped1 = ph->mapped_bytes;
  hc_span_t *b = alloc_checked(n, 0, "second growth");
  CHECK(b && ph->mapped_bytes > mapped1, "%zu pages did not grow the heap again", n);
  if (!a || !b) return;
  free_checked(b, "second growth");
  free_checked(a, "first growth");
  size_t mapped2 = ph->mapped_bytes;
  hc_span_t *c = alloc_checked(2 * n, 0, "both growths");
  CHECK(c && ph->mapped_bytes == mapped2,
        "2 x %zu pages grew the heap by %zu bytes: the two growths did not merge (metadata between them?)", n,
        ph->mapped_bytes - mapped2);
  if (c) free_checked(c, "both growths");
  hci_meta_free(m, META_BLOCK);
  check_accounting("after the contiguous growths");
}

/* hci_os_map_near maps at a free hint, and elsewhere, replacing nothing,
 * when the hint is taken; the page heap's growths ask for the place right
 * below its lowest mapping (grow), where their free runs merge with the
 * heap's.  Two holes in a mapping of ours: the kernel's own choice would be
 * the higher hole (or one above it), the hint names the lower. */
static void test_map_near(void) {
  const size_t pg = HC_PAGE_SIZE, len = 64 * pg;
  char *r = hci_os_mmap(NULL, len + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(r != MAP_FAILED, "mmap");
  if (r == MAP_FAILED) return;
  char *base = (char *)(((uintptr_t)r + pg - 1) & ~(uintptr_t)(pg - 1));
  munmap(base + 8 * pg, 16 * pg);  /* the lower hole */
  munmap(base + 40 * pg, 16 * pg); /* the higher one */
  base[0] = 42;
  char *p = hci_os_map_near(16 * pg, pg, (uintptr_t)(base + 8 * pg));
  CHECK(p == base + 8 * pg, "hci_os_map_near(hint %p) mapped at %p", (void *)(base + 8 * pg), (void *)p);
  char *q = hci_os_map_near(8 * pg, pg, (uintptr_t)base);
  CHECK(q && q != base && ((uintptr_t)q & (pg - 1)) == 0 && base[0] == 42,
        "a taken hint: mapped at %p (the hint %p), its contents %d", (void *)q, (void *)base, base[0]);
  if (q) munmap(q, 8 * pg);
  munmap(r, len + pg); /* the holes and p with it */
}

/* Three adjacent spans; free the middle, then the sides: one free span of
 * 15 pages.  Everything free is released first, so a free run beside them
 * is released and stays apart (free_checked checks it keeps its extent). */
static void test_coalesce(void) {
  fillers_t fill = {.n = 0};
  hc_span_t *a, *b, *c;
  hci_ph_release(0);
  check_runs("coalesce, after release(0)");
  three_adjacent(4, 5, 6, &a, &b, &c, &fill, "coalesce");
  CHECK(a && b && c, "never got three adjacent spans");
  if (a && b && c) {
    uintptr_t as = a->start, bs = b->start, cs = c->start, cend = c->start + 6 * HC_PAGE_SIZE;
    hc_span_t *before = hci_pagemap_span(as - 1);
    hc_span_t *after = hci_pagemap_span(cend);
    bool before_free = before && before->state == HC_SPAN_FREE;
    bool after_free = after && after->state == HC_SPAN_FREE;
    CHECK(!before_free || (before->start + before->npages * HC_PAGE_SIZE == as && before->is_released),
          "neighbour before: free but not adjacent, or committed after release(0)");
    CHECK(!after_free || after->is_released, "neighbour after: committed after release(0)");

    CHECK(!free_checked(b, "coalesce middle"), "freeing 5 pages released memory");
    hc_span_t *m = hci_pagemap_span(bs);
    CHECK(m && m->state == HC_SPAN_FREE && m->start == bs && m->npages == 5,
          "middle span alone: start %#zx (want %#zx) pages %zu (want 5)", m ? (size_t)m->start : 0, (size_t)bs,
          m ? m->npages : 0);
    CHECK(hci_pagemap_span(as) == a && a->state == HC_SPAN_LARGE, "left span changed");
    CHECK(hci_pagemap_span(cs) == c && c->state == HC_SPAN_LARGE, "right span changed");
    check_accounting("after freeing the middle");

    CHECK(!free_checked(a, "coalesce left"), "freeing 4 pages released memory");
    hc_span_t *l = hci_pagemap_span(as);
    CHECK(l && l->state == HC_SPAN_FREE && !l->is_released, "left span not free and committed");
    CHECK(hci_pagemap_span(bs) == l && hci_pagemap_span(bs + 5 * HC_PAGE_SIZE - 1) == l,
          "left and middle did not merge");
    CHECK(l && l->start == as && l->npages == 9, "left+middle: start %#zx pages %zu, want %#zx and 9%s",
          l ? (size_t)l->start : 0, l ? l->npages : 0, (size_t)as,
          before_free ? " (merged with the released run before?)" : "");
    check_accounting("after freeing the left");

    CHECK(!free_checked(c, "coalesce right"), "freeing 6 pages released memory");
    hc_span_t *all = hci_pagemap_span(as);
    CHECK(all && all->state == HC_SPAN_FREE && !all->is_released, "merged span not free and committed");
    CHECK(hci_pagemap_span(cs) == all && hci_pagemap_span(cend - 1) == all, "right span did not merge");
    CHECK(all && all->start == as && all->npages == 15, "one span of 15 pages: start %#zx pages %zu%s",
          all ? (size_t)all->start : 0, all ? all->npages : 0,
          before_free || after_free ? " (merged with a released neighbour?)" : "");
    check_accounting("after freeing the right");
  }
  free_fillers(&fill, "coalesce fillers");
  check_accounting("after freeing the fillers");
}

/* The merging rule around one span B between A and C (adjacent), with
 * nothing committed free elsewhere: A and C freed and released, then B
 * freed is a committed 5-page run of its own between two released runs
 * (and the only committed one, so a 5-page allocation takes it back,
 * dirty); freed again and released, it merges with both into one released
 * run. */
static void test_mixed_states(void) {
  fillers_t fill = {.n = 0};
  hc_span_t *a, *b, *c;
  hci_ph_release(0);
  three_adjacent(4, 5, 6, &a, &b, &c, &fill, "mixed");
  CHECK(a && b && c, "never got three adjacent spans");
  if (a && b && c) {
    uintptr_t as = a->start, bs = b->start, cs = c->start, cend = cs + 6 * HC_PAGE_SIZE;
    memset((void *)bs, 0x5a, 5 * HC_PAGE_SIZE);
    free_checked(a, "mixed: A");
    free_checked(c, "mixed: C");
    hci_ph_release(0);
    check_runs("mixed: A and C released");
    hc_span_t *ra = hci_pagemap_span(as), *rc = hci_pagemap_span(cs);
    CHECK(ra && ra->state == HC_SPAN_FREE && ra->is_released && ra->start + ra->npages * HC_PAGE_SIZE == bs,
          "A not in a released run ending at B");
    CHECK(rc && rc->state == HC_SPAN_FREE && rc->is_released && rc->start == cs, "C not in a released run from C");
    uintptr_t a_lo = ra ? ra->start : 0, c_hi = rc ? rc->start + rc->npages * HC_PAGE_SIZE : 0;
    size_t rel0 = ph->released_pages;
    CHECK(!free_checked(b, "mixed: B between released runs"), "freeing 5 pages released memory");
    hc_span_t *rb = hci_pagemap_span(bs);
    CHECK(rb && rb->state == HC_SPAN_FREE && !rb->is_released && rb->start == bs && rb->npages == 5,
          "B freed between released runs: run %#zx+%zu pages %s, want %#zx+5 committed", rb ? (size_t)rb->start : 0,
          rb ? rb->npages : 0, rb && rb->is_released ? "released" : "committed", (size_t)bs);
    CHECK(ph->free_pages == 5 && ph->released_pages == rel0, "committed/released free pages %zu/%zu, want 5/%zu",
          ph->free_pages, ph->released_pages, rel0);
    hc_span_t *b2 = alloc_checked(5, 0, "mixed: B again");
    CHECK(b2 && b2->start == bs && !b2->is_zeroed, "5 pages: got %#zx (%s), want B's committed run %#zx",
          b2 ? (size_t)b2->start : 0, b2 && b2->is_zeroed ? "zeroed" : "dirty", (size_t)bs);
    if (b2 && b2->start == bs) {
      const unsigned char *mem = (const unsigned char *)bs;
      CHECK(mem[0] == 0x5a && mem[5 * HC_PAGE_SIZE - 1] == 0x5a, "B's committed pages lost their contents");
    }
    if (b2) free_checked(b2, "mixed: B once more");
    CHECK(hci_ph_release(0) == 5 * HC_PAGE_SIZE, "release(0) with only B committed free did not release 5 pages");
    check_runs("mixed: B released");
    hc_span_t *all = hci_pagemap_span(bs);
    CHECK(all && all->is_released && all->start == a_lo && all->start + all->npages * HC_PAGE_SIZE == c_hi &&
              hci_pagemap_span(as) == all && hci_pagemap_span(cend - 1) == all,
          "released B did not merge with the released runs beside it: run %#zx+%zu pages, want %#zx to %#zx",
          all ? (size_t)all->start : 0, all ? all->npages : 0, (size_t)a_lo, (size_t)c_hi);
  }
  free_fillers(&fill, "mixed fillers");
  check_accounting("after the mixed states test");
}

static void test_aligned(void) {
  size_t counts[] = {1, 2, 3, 17, 200};
  for (size_t align = 16 << 10; align <= (4 << 20); align <<= 1) {
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
      size_t inuse0 = ph->inuse_bytes;
      hc_span_t *s = alloc_checked(counts[k], align, "aligned");
      check_span(s, counts[k], "hci_ph_alloc_aligned");
      if (!s) continue;
      CHECK(s->start % align == 0, "start %#zx not aligned to %zu", (size_t)s->start, align);
      CHECK(ph->inuse_bytes == inuse0 + counts[k] * HC_PAGE_SIZE, "aligned alloc of %zu pages counted %zu bytes",
            counts[k], ph->inuse_bytes - inuse0);
      check_accounting("after aligned alloc");
      free_checked(s, "aligned");
      CHECK(ph->inuse_bytes == inuse0, "in use after aligned free");
      check_accounting("after aligned free");
    }
  }
  /* many at once: all aligned, none overlapping */
  hc_span_t *v[40];
  for (int i = 0; i < 40; i++) {
    size_t align = (size_t)16384 << (i % 6);
    v[i] = alloc_checked(1 + (size_t)i % 5, align, "aligned batch");
    CHECK(v[i] && v[i]->start % align == 0, "batch aligned alloc %d", i);
  }
  for (int i = 0; i < 40; i++)
    for (int j = 0; j < i; j++)
      if (v[i] && v[j])
        CHECK(v[i]->start + v[i]->npages * HC_PAGE_SIZE <= v[j]->start ||
                  v[j]->start + v[j]->npages * HC_PAGE_SIZE <= v[i]->start,
              "aligned spans %d and %d overlap", i, j);
  for (int i = 0; i < 40; i++)
    if (v[i]) free_checked(v[i], "aligned batch");
  check_accounting("after the aligned batch");
  /* The same aligned request again and again, each freed at once: the
   * freed block (committed) does not merge with the released rest of its
   * mapping, so a search for a run of n + extra pages never saw it again and
   * every round mapped more (2 GB of address space for 1000 rounds of
   * posix_memalign(2 MiB, 100)); the run that holds an aligned n pages is
   * reused: at most one more mapping for all the rounds. */
  size_t shapes[][2] = {{1, 2 << 20}, {256, 2 << 20}, {3, 64 << 10}, {1, 16 << 20}};
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    size_t mapped0 = ph->mapped_bytes;
    for (int round = 0; round < 200; round++) {
      hc_span_t *a = alloc_checked(shapes[k][0], shapes[k][1], "aligned again");
      CHECK(a && a->start % shapes[k][1] == 0, "aligned again: %zu pages at %zu, round %d", shapes[k][0],
            shapes[k][1], round);
      if (a) free_checked(a, "aligned again");
    }
    size_t bound = shapes[k][0] * HC_PAGE_SIZE + shapes[k][1] + HC_HEAP_GROW_MIN;
    CHECK(ph->mapped_bytes - mapped0 <= bound, "200 rounds of %zu pages aligned to %zu mapped %zu bytes (at most %zu)",
          shapes[k][0], shapes[k][1], ph->mapped_bytes - mapped0, bound);
  }
  check_accounting("after aligned again");
}

static bool all_zero(uintptr_t start, size_t len) {
  const unsigned char *m = (const unsigned char *)start;
  for (size_t i = 0; i < len; i++)
    if (m[i]) return false;
  return true;
}

#define MAXFILL 256
static hc_span_t *fill[MAXFILL];
static int nfill;

static void test_release(void) {
  const size_t npages = 512; /* 4 MiB */
  const size_t len = npages * HC_PAGE_SIZE;
  size_t sys = (size_t)sysconf(_SC_PAGESIZE);
  /* From here on committed free pages are only the ones this test frees. */
  hci_ph_release(0);
  CHECK(ph->free_pages == 0, "committed free pages left after release(0): %zu", ph->free_pages);
  hci_ph_forget_demand();
  check_threshold("small heap");
  CHECK(hci_ph_release_threshold() == HC_RELEASE_SLACK,
        "threshold %zu with %zu bytes in use and no demand, want HC_RELEASE_SLACK %zu", hci_ph_release_threshold(),
        ph->inuse_bytes, HC_RELEASE_SLACK);

  /* 4 MiB freed (below the threshold): it stays committed. */
  hc_span_t *s = alloc_isolated(npages, fill, &nfill, MAXFILL);
  check_span(s, npages, "release span");
  if (!s) return;
  uintptr_t start = s->start;
  memset((void *)start, 0xa5, len);
  CHECK(resident_pages(start, len) == len / sys, "touched span not resident: %zu of %zu", resident_pages(start, len),
        len / sys);
  CHECK(!free_checked(s, "4 MiB, isolated"), "freeing 4 MiB released memory (threshold %zu MiB)",
        hci_ph_release_threshold() >> 20);
  CHECK(resident_pages(start, len) == len / sys, "freed committed span not resident: %zu of %zu",
        resident_pages(start, len), len / sys);
  check_accounting("before release");
  size_t free0 = ph->free_pages, rel0 = ph->released_pages, calls0 = ph->release_calls;
  CHECK(free0 == npages, "committed free pages %zu after freeing %zu touched pages", free0, npages);
  size_t done = hci_ph_release(0);
  CHECK(done == len, "hci_ph_release(0) released %zu bytes, want %zu", done, len);
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
  hc_span_t *t = alloc_checked(npages, 0, "realloc released");
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
    free_checked(t, "realloc released");
  }
  hci_ph_release(0);

  /* Committed (dirty) pages are not marked zeroed: the only committed free
   * run of 3 pages is d's, and allocation prefers committed runs. */
  hc_span_t *d = alloc_isolated(3, fill, &nfill, MAXFILL);
  check_span(d, 3, "dirty");
  if (d) {
    memset((void *)d->start, 1, 3 * HC_PAGE_SIZE);
    uintptr_t ds = d->start;
    CHECK(!free_checked(d, "dirty"), "freeing 3 pages released memory");
    hc_span_t *e = alloc_checked(3, 0, "dirty again");
    CHECK(e && e->start == ds, "3-page allocation did not reuse the committed 3-page run");
    if (e && e->start == ds) CHECK(!e->is_zeroed, "dirty span reused and marked zeroed");
    if (e) free_checked(e, "dirty again");
  }
  hci_ph_release(0);

  /* Automatic release at a free.  A run of HC_RELEASE_SLACK bytes freed is
   * kept: it was in use in this epoch (demand).  Once the demand is gone
   * (two epochs without it) the threshold is HC_RELEASE_SLACK, which the
   * kept run fills exactly; one page more passes it: the page heap releases
   * down to half the slack, longest runs first, so the big run goes (its
   * pages are no longer resident), and reusing it gives zeroed pages
   * marked is_zeroed. */
  const size_t tb = HC_RELEASE_SLACK, tp = tb / HC_PAGE_SIZE;
  hc_span_t *a = alloc_isolated(tp, fill, &nfill, MAXFILL);
  hc_span_t *one = alloc_isolated(1, fill, &nfill, MAXFILL);
  check_span(a, tp, "threshold-sized run");
  check_span(one, 1, "one page");
  if (a && one) {
    uintptr_t as = a->start;
    memset((void *)as, 0x77, tb);
    memset((void *)one->start, 0x77, HC_PAGE_SIZE);
    CHECK(ph->free_pages == 0, "%zu committed free pages before this part, want none", ph->free_pages);
    CHECK(ph->inuse_bytes - tb < HC_RELEASE_SLACK, "%zu bytes in use besides the run: the slack would grow",
          ph->inuse_bytes - tb);
    CHECK(!free_checked(a, "HC_RELEASE_SLACK, in demand"),
          "%zu MiB of committed free memory, in use in this epoch, was released", tb >> 20);
    CHECK(ph->free_pages == tp, "committed free pages %zu, want %zu", ph->free_pages, tp);
    CHECK(resident_pages(as, tb) == tb / sys, "%zu MiB freed, not resident before any release", tb >> 20);
    CHECK(!free_checked(one, "slack + 1 page, in demand"), "%zu MiB + 1 page in demand released", tb >> 20);
    uint64_t calls0 = ph->release_calls;
    hci_ph_forget_demand(); /* two epochs without the run, then a call */
    CHECK(hci_ph_release_threshold() == tb, "threshold %zu without demand, want HC_RELEASE_SLACK %zu",
          hci_ph_release_threshold(), tb);
    CHECK(ph->release_calls == calls0 + 1, "%zu MiB + 1 page of committed free memory no longer in demand not released",
          tb >> 20);
    CHECK(ph->free_pages == 1, "%zu committed free pages after the release, want the one page", ph->free_pages);
    CHECK(resident_pages(as, tb) == 0, "%zu pages of the released %zu MiB run still resident", resident_pages(as, tb),
          tb >> 20);
    hc_span_t *r = hci_pagemap_span(as);
    CHECK(r && r->state == HC_SPAN_FREE && r->is_released, "%zu MiB run not marked released", tb >> 20);
    hc_span_t *z = alloc_checked(tp, 0, "reuse of released pages");
    check_span(z, tp, "reuse of released pages");
    if (z) {
      CHECK(z->is_zeroed, "span carved from auto-released pages not marked zeroed");
      /* check_span wrote the first and last byte of each page */
      size_t bad = 0;
      for (size_t pg = 0; pg < tp; pg++)
        if (!all_zero(z->start + pg * HC_PAGE_SIZE + 1, HC_PAGE_SIZE - 2)) bad++;
      CHECK(bad == 0, "%zu pages not zero in a span marked zeroed", bad);
      free_checked(z, "reuse of released pages");
    }
  }
  hci_ph_release(0);

  /* A partial release gives back something and keeps the accounting. */
  hc_span_t *p1 = alloc_isolated(300, fill, &nfill, MAXFILL);
  if (p1) {
    memset((void *)p1->start, 2, 300 * HC_PAGE_SIZE);
    CHECK(!free_checked(p1, "partial"), "freeing 300 pages released memory");
    size_t before = ph->free_pages;
    CHECK(before == 300, "committed free pages %zu, want 300", before);
    size_t got = hci_ph_release(HC_PAGE_SIZE);
    CHECK(got >= HC_PAGE_SIZE, "release(1 page) released %zu", got);
    CHECK(ph->free_pages + got / HC_PAGE_SIZE == before, "partial release accounting");
    check_accounting("after partial release");
  }
  for (int i = 0; i < nfill; i++) free_checked(fill[i], "fillers");
  nfill = 0;
  check_accounting("after the fillers");
}

/* The page heap releases by itself when much committed memory is free and
 * no longer in demand: 2.5 x HC_RELEASE_SLACK in 4 MiB spans, touched; the
 * first half freed is kept (demand), then the demand goes (two epochs) and
 * freeing the second half releases. */
static void test_auto_release(void) {
  enum { N = (int)(HC_RELEASE_SLACK * 5 / 2 / ((size_t)4 << 20)) };
  const size_t total = (size_t)N * 4 * MiB;
  hc_span_t *v[N];
  uintptr_t starts[N];
  int releases = 0;
  size_t sys = (size_t)sysconf(_SC_PAGESIZE);
  for (int i = 0; i < N; i++) { /* N x 4 MiB touched */
    v[i] = alloc_checked(512, 0, "auto release");
    starts[i] = v[i] ? v[i]->start : 0;
    if (v[i]) memset((void *)v[i]->start, 3, 512 * HC_PAGE_SIZE);
  }
  for (int i = 0; i < N / 2; i++)
    if (v[i]) releases += free_checked(v[i], "auto release, in demand");
  CHECK(releases == 0, "freeing %zu MiB of the %zu in demand released memory", (size_t)(N / 2) * 4, total >> 20);
  uint64_t calls0 = ph->release_calls;
  hci_ph_forget_demand(); /* the first half is no longer in demand: released */
  releases += ph->release_calls > calls0;
  CHECK(ph->free_pages * HC_PAGE_SIZE <= hci_ph_release_threshold() - HC_RELEASE_SLACK / 2,
        "%zu MiB committed free once the demand went, threshold %zu MiB", (ph->free_pages * HC_PAGE_SIZE) >> 20,
        hci_ph_release_threshold() >> 20);
  for (int i = N / 2; i < N; i++)
    if (v[i]) releases += free_checked(v[i], "auto release");
  hci_ph_forget_demand(); /* and the second half */
  size_t committed = ph->free_pages * HC_PAGE_SIZE;
  CHECK(releases > 0, "freeing %zu MiB never released memory", total >> 20);
  CHECK(committed <= hci_ph_release_threshold(), "%zu MiB of committed free pages kept after freeing %zu MiB",
        committed >> 20, total >> 20);
  /* what the page heap says is released is no longer resident */
  size_t res = 0;
  for (int i = 0; i < N; i++)
    if (starts[i]) res += resident_pages(starts[i], 512 * HC_PAGE_SIZE);
  CHECK(res * sys <= committed, "%zu KB of the freed %zu MiB resident, only %zu KB committed", res * sys >> 10,
        total >> 20, committed >> 10);
  check_accounting("after auto release");
}

/* Release by demand: a program that frees memory and allocates as much
 * again keeps its pages (the second allocation reuses the committed run,
 * not zeroed), and the threshold grows with the demand (the slack is
 * max(HC_RELEASE_SLACK, demand)).  Spans are not touched: the page heap
 * counts pages, not residency. */
static void test_threshold(void) {
  hci_ph_release(0);
  hci_ph_forget_demand();
  check_threshold("start");
  const size_t big = 3 * HC_RELEASE_SLACK; /* demand above the slack */
  hc_span_t *h = alloc_isolated(big / HC_PAGE_SIZE, fill, &nfill, MAXFILL);
  CHECK(h != NULL, "%zu MiB span", big >> 20);
  if (!h) return;
  check_threshold("big in use");
  size_t in = ph->inuse_bytes;
  CHECK(hci_ph_release_threshold() == in, "threshold %zu MiB with %zu MiB in use and in demand, want %zu MiB",
        hci_ph_release_threshold() >> 20, in >> 20, in >> 20);
  uintptr_t hs = h->start;
  for (int round = 0; round < 3; round++) {
    CHECK(!free_checked(h, "big, freed"), "round %d: freeing %zu MiB in demand released memory", round, big >> 20);
    h = alloc_checked(big / HC_PAGE_SIZE, 0, "big, again");
    CHECK(h && h->start == hs && !h->is_zeroed, "round %d: the same amount again did not get the committed run back",
          round);
    if (!h) return;
  }
  /* the demand goes: all but HC_RELEASE_SLACK / 2 is released */
  CHECK(!free_checked(h, "big, last"), "%zu MiB in demand released", big >> 20);
  hci_ph_forget_demand();
  CHECK(ph->free_pages * HC_PAGE_SIZE <= HC_RELEASE_SLACK / 2, "%zu MiB committed free after the release",
        (ph->free_pages * HC_PAGE_SIZE) >> 20);
  for (int i = 0; i < nfill; i++) free_checked(fill[i], "fillers");
  nfill = 0;
  check_threshold("end");
  check_accounting("after the threshold test");
}

/* Epochs of 1 ms, real time: 96 MiB touched and freed stay committed
 * (in demand); after 100 ms without a call (many epochs: the demand is gone)
 * the next free gives them back.  The sleep only lets time pass, nothing is
 * timed. */
static void test_idle(void) {
  size_t sys = (size_t)sysconf(_SC_PAGESIZE);
  const size_t n = (96 * MiB) / HC_PAGE_SIZE;
  hci_ph_release(0);
  hci_ph_set_release_delay(1000000);
  hc_span_t *s = hci_ph_alloc(n), *one = hci_ph_alloc(1);
  CHECK(s && one, "96 MiB and one page");
  if (!s || !one) return;
  uintptr_t start = s->start;
  memset((void *)start, 5, n * HC_PAGE_SIZE);
  hci_ph_free(s); /* within the epoch that had it in use */
  CHECK(resident_pages(start, n * HC_PAGE_SIZE) == n * HC_PAGE_SIZE / sys, "96 MiB freed in demand not resident");
  usleep(100000);
  hci_ph_free(one);
  size_t res = resident_pages(start, n * HC_PAGE_SIZE);
  CHECK(res * sys <= HC_RELEASE_SLACK / 2, "%zu MiB of the idle 96 MiB still resident", res * sys >> 20);
  CHECK(ph->free_pages * HC_PAGE_SIZE <= HC_RELEASE_SLACK / 2, "%zu MiB committed free after the idle time",
        (ph->free_pages * HC_PAGE_SIZE) >> 20);
  hci_ph_set_release_delay(UINT64_MAX / 4);
  check_accounting("after the idle test");
}

/* Scenario "hysteresis" (run with that argument): a program that
 * allocates, touches and frees an 8 MiB block in a loop beside a big
 * released run (here 64 MiB freed earlier) never has more than 8 MiB of
 * committed free memory (threshold >= HC_RELEASE_SLACK, 64 MiB), so no free
 * may release and
 * every reuse finds its pages resident.  When a freed span merged with a
 * released neighbour into a run counted as committed as a whole (the rule
 * before same-state merging), every free passed the threshold, released
 * the 8 MiB and the next iteration faulted them in again. */
static int hysteresis(void) {
  size_t sys = (size_t)sysconf(_SC_PAGESIZE);
  const size_t big = (64 * MiB) / HC_PAGE_SIZE, n = (8 * MiB) / HC_PAGE_SIZE;
  hc_span_t *b = hci_ph_alloc(big);
  CHECK(b != NULL, "64 MiB span");
  if (!b) return 1;
  uintptr_t lo = b->start, hi = b->start + big * HC_PAGE_SIZE;
  hci_ph_free(b);
  hci_ph_release(0); /* the 64 MiB run is released whatever the threshold */
  int releases = 0, faulted = 0;
  for (int i = 0; i < 10; i++) {
    hc_span_t *s = hci_ph_alloc(n);
    CHECK(s && s->start >= lo && s->start + n * HC_PAGE_SIZE <= hi, "8 MiB span not from the released run");
    if (!s) break;
    uintptr_t start = s->start;
    faulted += resident_pages(start, n * HC_PAGE_SIZE) != n * HC_PAGE_SIZE / sys && i > 0;
    memset((void *)start, 1, n * HC_PAGE_SIZE);
    size_t committed = ph->free_pages * HC_PAGE_SIZE + n * HC_PAGE_SIZE; /* really committed after the free */
    uint64_t calls0 = ph->release_calls;
    hci_ph_free(s);
    bool released = ph->release_calls != calls0;
    hc_span_t *run = hci_pagemap_span(start);
    size_t run_bytes = run ? run->npages * HC_PAGE_SIZE : 0;
    releases += released;
    if (released && committed <= hci_ph_release_threshold())
      CHECK(0, "iteration %d: freeing 8 MiB released memory with %zu MiB committed free (threshold %zu MiB); "
            "the merged free run (%zu MiB) counted as committed", i, committed >> 20,
            hci_ph_release_threshold() >> 20, run_bytes >> 20);
  }
  printf("hysteresis: %d of 10 frees of 8 MiB released memory, %d reuses faulted pages in again\n", releases, faulted);
  CHECK(releases == 0 && faulted == 0, "%d of 10 frees of 8 MiB released memory, %d reuses faulted pages in: want none",
        releases, faulted);
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("hysteresis kept\n");
  return 0;
}

/* Every page of span s maps to s with the entry of a span that holds no
 * small objects: the span word, the other words 0, a zero fast entry (the
 * page heap relabels only the span word of such pages: carve_at, join,
 * hci_ph_grow). */
static int pages_bad;
static void check_pages(const hc_span_t *s, const char *where) {
  for (size_t i = 0; i < s->npages; i++) {
    uintptr_t a = s->start + i * HC_PAGE_SIZE;
    const hc_pm_entry_t *e = hci_pagemap_find(a);
    const hc_pm_fast_t *f = hci_pagemap_fast_entry(a);
    bool ok = e && (const hc_span_t *)e->span == s && !e->start && !e->owner && !e->cls && !e->lofs && f &&
              !f->start_lo && !f->lofs && !f->otag;
    if (!ok && pages_bad++ == 0)
      CHECK(0, "%s: page %zu of span %#zx+%zu (state %d) does not map to it alone", where, i, (size_t)s->start,
            s->npages, s->state);
  }
}

/* find_fit's bitmap of non-empty exact lists against the lists. */
static void check_exact_bits(const char *where) {
  for (size_t i = 1; i <= HC_PH_EXACT_LISTS; i++) {
    bool bit = ph->exact_used[i >> 6] >> (i & 63) & 1;
    bool any = ph->exact[i].next && ph->exact[i].next != &ph->exact[i];
    CHECK(bit == any, "%s: exact list %zu %s but its bit is %d", where, i, any ? "has runs" : "is empty", bit);
  }
}

/* Random allocations (plain, aligned), frees and in-place growths of
 * spans of 1..300 pages, the pagemap of every span and free run checked
 * after each step: splits and merges relabel only the pages that change
 * struct, so a page left with a stale struct or field shows here. */
static void test_random_pages(void) {
  enum { SLOTS = 24, STEPS = 3000 };
  hc_span_t *live[SLOTS] = {0};
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  for (int step = 0; step < STEPS && !pages_bad; step++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    int k = (int)(rng % SLOTS);
    size_t n = 1 + (size_t)(rng >> 8) % (rng >> 40 & 1 ? 300 : 40);
    if (live[k] && (rng >> 20 & 3) == 0) {
      size_t want = live[k]->npages + n;
      if (hci_ph_grow(live[k], want)) CHECK(live[k]->npages == want, "grow to %zu pages left %zu", want, live[k]->npages);
    } else if (live[k]) {
      free_checked(live[k], "random pages");
      live[k] = NULL;
    } else {
      size_t align = (rng >> 24 & 7) == 0 ? HC_PAGE_SIZE << (1 + (rng >> 28) % 4) : 0;
      live[k] = alloc_checked(n, align, "random pages");
    }
    for (int j = 0; j < SLOTS; j++)
      if (live[j]) check_pages(live[j], "random pages, in use");
    for (size_t i = 1; i <= HC_PH_EXACT_LISTS + 1; i++) {
      hc_span_t *h = i > HC_PH_EXACT_LISTS ? &ph->large : &ph->exact[i];
      if (h->next)
        for (hc_span_t *r = h->next; r != h; r = r->next) check_pages(r, "random pages, free");
    }
    check_exact_bits("random pages");
    check_runs("random pages");
  }
  for (int j = 0; j < SLOTS; j++)
    if (live[j]) free_checked(live[j], "random pages");
  check_accounting("after random pages");
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  setvbuf(stderr, NULL, _IONBF, 0);
  hci_ensure_init(); /* the allocator alone: no malloc of ours in this test */
  hci_ph_set_release_delay(UINT64_MAX / 4); /* endless epochs: no time in the checks */
  if (argc > 1 && strcmp(argv[1], "hysteresis") == 0) return hysteresis();
  check_accounting("start");
  test_alloc_free();
  test_growth_contiguous();
  test_map_near();
  test_grow();
  test_coalesce();
  test_mixed_states();
  test_aligned();
  test_random_pages();
  test_release();
  test_auto_release();
  test_threshold();
  test_idle();
  check_accounting("end");
  printf("%d of the frees released memory, %d allocations mapped memory\n", auto_releases, grows);
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("page heap OK\n");
  return 0;
}
