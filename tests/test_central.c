/* test_central.c - central free lists and the transfer cache.
 *
 * Calls hci_central_remove/insert/drain directly, single-threaded, and
 * checks after every step the invariant that makes the stats right:
 *   nspans * objs == hci_central_free_objects + objects held outside
 * (outside = ours plus whatever the rest of the process held at the
 * start, which must not change because nothing else allocates here).
 * Chains must be well formed (n objects, NULL-terminated, tail is the last),
 * hold distinct object starts of the right class, and come back whole from
 * the transfer cache; empty spans go back to the page heap. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_inline.h"

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

#define MAXOBJ 8192
static size_t outside[HC_NUM_CLASSES]; /* objects of each class held by others at the start */

static size_t held_elsewhere(unsigned c) {
  return hci_central[c].nspans * hci_classes[c].objs - hci_central_free_objects(c);
}

static void check_invariant(unsigned c, size_t ours, const char *when) {
  size_t got = held_elsewhere(c);
  CHECK(got == outside[c] + ours, "class %u %s: spans hold %zu objects not free in central, want %zu (+%zu ours)", c,
        when, got, outside[c] + ours, ours);
}

/* Walks a chain into v[]; checks its shape and its objects. */
static uint32_t take_chain(unsigned c, const hc_chain_t *ch, void **v, uint32_t max) {
  uint32_t n = 0;
  void *last = NULL;
  for (void *p = ch->head; p && n < max; p = *(void **)p) {
    last = p;
    v[n++] = p;
  }
  CHECK(n == ch->n, "class %u: chain says %u objects, has %u", c, ch->n, n);
  CHECK(last == ch->tail, "class %u: tail %p is not the last object %p", c, ch->tail, last);
  const hc_class_info_t *ci = &hci_classes[c];
  for (uint32_t i = 0; i < n; i++) {
    hc_span_t *s = hci_pagemap_span((uintptr_t)v[i]);
    CHECK(s && s->state == HC_SPAN_SMALL && s->cls == c && hci_pagemap_class((uintptr_t)v[i]) == c,
          "class %u: object %p not in a span of its class", c, v[i]);
    if (s) CHECK(hc_is_object_start((uintptr_t)v[i] - s->start, ci), "class %u: %p not an object start", c, v[i]);
    memset(v[i], 0x6b, ci->size); /* the whole object is ours: writable, and overlap would show below */
  }
  return n;
}

static void make_chain(void **v, uint32_t n, hc_chain_t *ch) {
  for (uint32_t i = 0; i < n; i++) *(void **)v[i] = i + 1 < n ? v[i + 1] : NULL;
  ch->head = n ? v[0] : NULL;
  ch->tail = n ? v[n - 1] : NULL;
  ch->n = n;
}

/* Shell sort: qsort may malloc, which would disturb the counts. */
static void sort_ptrs(void **a, size_t n) {
  for (size_t gap = n / 2; gap > 0; gap /= 2)
    for (size_t i = gap; i < n; i++)
      for (size_t j = i; j >= gap && (uintptr_t)a[j - gap] > (uintptr_t)a[j]; j -= gap) {
        void *t = a[j];
        a[j] = a[j - gap];
        a[j - gap] = t;
      }
}

static void check_distinct(unsigned c, void **v, size_t n) {
  static void *tmp[MAXOBJ];
  memcpy(tmp, v, n * sizeof *v);
  sort_ptrs(tmp, n);
  for (size_t i = 1; i < n; i++)
    if ((uintptr_t)tmp[i] < (uintptr_t)tmp[i - 1] + hci_classes[c].size) {
      CHECK(0, "class %u: objects %p and %p overlap or repeat", c, tmp[i - 1], tmp[i]);
      return;
    }
}

/* Round trips through spans and the transfer cache for class c. */
static void round_trips(unsigned c) {
  static void *v[MAXOBJ];
  const hc_class_info_t *ci = &hci_classes[c];
  uint32_t want = ci->batch;
  size_t n = 0;
  /* at least three chains (and four objects) straight from the spans */
  for (int k = 0; k < 3 || n < 4; k++) {
    hc_chain_t ch;
    bool ok = hci_central_remove(c, want, &ch);
    CHECK(ok && ch.n >= 1, "class %u: remove failed", c);
    if (!ok) return;
    if (hci_central[c].nchains == 0) CHECK(ch.n <= want, "class %u: %u objects from spans, asked %u", c, ch.n, want);
    n += take_chain(c, &ch, v + n, (uint32_t)(MAXOBJ - n));
    check_invariant(c, n, "after remove");
  }
  check_distinct(c, v, n);
  /* back in chains of 1, 2 and the rest: they go to transfer slots */
  uint32_t sizes[3] = {1, 2, (uint32_t)n - 3};
  size_t off = 0;
  uint32_t slots0 = hci_central[c].nchains;
  for (int k = 0; k < 3; k++) {
    hc_chain_t ch;
    make_chain(v + off, sizes[k], &ch);
    hci_central_insert(c, &ch);
    off += sizes[k];
    check_invariant(c, n - off, "after insert");
  }
  CHECK(hci_central[c].nchains == slots0 + 3 || slots0 + 3 > HC_TRANSFER_SLOTS,
        "class %u: %u chains in the transfer cache after inserting 3 (%u before)", c, hci_central[c].nchains, slots0);
  /* the chains come back whole, last in first out */
  for (int k = 2; k >= 0; k--) {
    hc_chain_t ch;
    bool ok = hci_central_remove(c, want, &ch);
    CHECK(ok, "class %u: remove from the transfer cache failed", c);
    if (!ok) return;
    CHECK(ch.n == sizes[k], "class %u: got a chain of %u from the transfer cache, want %u", c, ch.n, sizes[k]);
    off -= sizes[k];
    static void *w[MAXOBJ];
    uint32_t m = take_chain(c, &ch, w, MAXOBJ);
    CHECK(m == sizes[k] && memcmp(w, v + off, m * sizeof *w) == 0, "class %u: chain %d came back different", c, k);
    check_invariant(c, n - off, "after remove from slots");
  }
  /* and back once more, as one chain */
  hc_chain_t all;
  make_chain(v, (uint32_t)n, &all);
  hci_central_insert(c, &all);
  check_invariant(c, 0, "after the final insert");
}

/* A fresh span for an untouched class: handed out, taken back, and after a
 * drain returned to the page heap. */
static void empty_span_returns(unsigned c) {
  const hc_class_info_t *ci = &hci_classes[c];
  if (hci_central[c].nspans || hci_central[c].nchains) return; /* not untouched */
  size_t inuse0 = hci_pageheap.inuse_bytes;
  static void *v[MAXOBJ];
  hc_chain_t ch;
  CHECK(hci_central_remove(c, ci->objs, &ch), "class %u: remove", c);
  CHECK(ch.n == ci->objs, "class %u: a fresh span gave %u objects, want %u", c, ch.n, ci->objs);
  CHECK(hci_central[c].nspans == 1, "class %u: %zu spans", c, hci_central[c].nspans);
  CHECK(hci_pageheap.inuse_bytes == inuse0 + (size_t)ci->pages * HC_PAGE_SIZE, "class %u: page heap in use %zu, want %zu",
        c, hci_pageheap.inuse_bytes, inuse0 + (size_t)ci->pages * HC_PAGE_SIZE);
  uint32_t n = take_chain(c, &ch, v, MAXOBJ);
  check_distinct(c, v, n);
  uintptr_t start = hci_pagemap_span((uintptr_t)v[0])->start;
  CHECK(hci_central_free_objects(c) == 0, "class %u: %zu free objects with the whole span out", c,
        hci_central_free_objects(c));
  hc_chain_t back;
  make_chain(v, n, &back);
  hci_central_insert(c, &back);
  CHECK(hci_central_free_objects(c) == ci->objs, "class %u: %zu free objects after insert", c,
        hci_central_free_objects(c));
  hci_central_drain();
  CHECK(hci_central[c].nchains == 0, "class %u: %u chains after drain", c, hci_central[c].nchains);
  CHECK(hci_central[c].nspans == 0, "class %u: empty span not returned (%zu spans)", c, hci_central[c].nspans);
  CHECK(hci_central_free_objects(c) == 0, "class %u: %zu free objects after the span went back", c,
        hci_central_free_objects(c));
  CHECK(hci_pageheap.inuse_bytes == inuse0, "class %u: page heap in use %zu, want %zu", c, hci_pageheap.inuse_bytes,
        inuse0);
  hc_span_t *s = hci_pagemap_span(start);
  CHECK(s && s->state == HC_SPAN_FREE && hci_pagemap_class(start) == 0, "class %u: returned span state %d class %u",
        c, s ? s->state : -1, hci_pagemap_class(start));
}

/* More chains than transfer slots: the surplus goes straight to the spans,
 * and spans emptied that way return to the page heap at once. */
static void slots_overflow(unsigned c) {
  const hc_class_info_t *ci = &hci_classes[c]; /* one object per span */
  if (ci->objs != 1 || hci_central[c].nspans || hci_central[c].nchains) return;
  enum { N = HC_TRANSFER_SLOTS + 6 };
  static void *v[N];
  for (int i = 0; i < N; i++) {
    hc_chain_t ch;
    CHECK(hci_central_remove(c, 1, &ch) && ch.n == 1, "class %u: remove %d", c, i);
    v[i] = ch.head;
  }
  CHECK(hci_central[c].nspans == N, "class %u: %zu spans for %d one-object removes", c, hci_central[c].nspans, N);
  size_t inuse0 = hci_pageheap.inuse_bytes;
  for (int i = 0; i < N; i++) {
    hc_chain_t ch;
    make_chain(&v[i], 1, &ch);
    hci_central_insert(c, &ch);
  }
  CHECK(hci_central[c].nchains == HC_TRANSFER_SLOTS, "class %u: %u chains cached", c, hci_central[c].nchains);
  CHECK(hci_central[c].nspans == HC_TRANSFER_SLOTS, "class %u: %zu spans left, want %d", c, hci_central[c].nspans,
        HC_TRANSFER_SLOTS);
  CHECK(hci_pageheap.inuse_bytes == inuse0 - 6 * (size_t)ci->pages * HC_PAGE_SIZE,
        "class %u: the 6 overflowing spans did not go back to the page heap", c);
  check_invariant(c, 0, "after overflowing the slots");
  hci_central_drain();
  CHECK(hci_central[c].nspans == 0, "class %u: %zu spans after drain", c, hci_central[c].nspans);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  setvbuf(stderr, NULL, _IONBF, 0);
  printf("central lists\n"); /* stdio buffers allocated before the snapshot */
  free(malloc(10));
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) outside[c] = held_elsewhere(c);
  /* untouched classes first (the main thread has used only a few small ones) */
  int fresh = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++)
    if (!hci_central[c].nspans && !hci_central[c].nchains) {
      empty_span_returns(c);
      fresh++;
    }
  CHECK(fresh > 80, "only %d classes untouched at start", fresh);
  slots_overflow(HC_NUM_CLASSES - 1);
  slots_overflow(HC_NUM_CLASSES - 10);
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) round_trips(c);
  hci_central_drain();
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) {
    check_invariant(c, 0, "at the end");
    CHECK(hci_central[c].nchains == 0, "class %u: chains left after drain", c);
    if (outside[c] == 0)
      CHECK(hci_central[c].nspans == 0, "class %u: %zu spans left although nothing is allocated", c,
            hci_central[c].nspans);
  }
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("central OK\n");
  return 0;
}
