/* central_check.h - what the central-list tests (test_central.c,
 * test_central_by_cpu.c) take objects and chains with and check them by:
 * a chain's shape and objects, chains made of objects, objects taken from
 * central, a span carved again in address order, and a pin to one CPU. */
#ifndef CENTRAL_CHECK_H
#define CENTRAL_CHECK_H

#include <sched.h>
#include <string.h>

#include "alloc_inline.h"
#include "hc_check.h"

#define MAXOBJ 8192

/* Walks a chain into v[]; checks its shape and its objects. */
static __attribute__((unused)) uint32_t take_chain(unsigned c, const hc_chain_t *ch, void **v, uint32_t max) {
  uint32_t n = 0;
  void *last = NULL;
  for (void *p = ch->head; p && n < max; p = hc_fl_next(p, 0)) {
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

static __attribute__((unused)) void make_chain(void **v, uint32_t n, hc_chain_t *ch) {
  for (uint32_t i = 0; i < n; i++) hc_fl_link(v[i], i + 1 < n ? v[i + 1] : NULL);
  ch->head = n ? v[0] : NULL;
  ch->tail = n ? v[n - 1] : NULL;
  ch->n = n;
}

/* Shell sort: qsort may malloc, which would disturb the counts. */
static __attribute__((unused)) void sort_ptrs(void **a, size_t n) {
  for (size_t gap = n / 2; gap > 0; gap /= 2)
    for (size_t i = gap; i < n; i++)
      for (size_t j = i; j >= gap && (uintptr_t)a[j - gap] > (uintptr_t)a[j]; j -= gap) {
        void *t = a[j];
        a[j] = a[j - gap];
        a[j - gap] = t;
      }
}

static __attribute__((unused)) void check_distinct(unsigned c, void **v, size_t n) {
  static void *tmp[MAXOBJ];
  memcpy(tmp, v, n * sizeof *v);
  sort_ptrs(tmp, n);
  for (size_t i = 1; i < n; i++)
    if ((uintptr_t)tmp[i] < (uintptr_t)tmp[i - 1] + hci_classes[c].size) {
      CHECK(0, "class %u: objects %p and %p overlap or repeat", c, tmp[i - 1], tmp[i]);
      return;
    }
}

/* Takes objects of class c from central until n are in v[]. */
static __attribute__((unused)) size_t take_n(unsigned c, void **v, size_t n) {
  size_t got = 0;
  while (got < n) {
    hc_chain_t ch;
    uint32_t want = (uint32_t)(n - got) < hci_classes[c].batch ? (uint32_t)(n - got) : hci_classes[c].batch;
    bool ok = hci_central_remove(c, want, &ch, NULL);
    CHECK(ok && ch.n >= 1, "class %u: remove failed", c);
    if (!ok || !ch.n) break;
    if (ch.n > n - got) { /* a whole chain from a slot, longer than needed: not in these tests */
      CHECK(0, "class %u: got a chain of %u, wanted at most %zu", c, ch.n, n - got);
      break;
    }
    got += take_chain(c, &ch, v + got, (uint32_t)(MAXOBJ - got));
  }
  return got;
}

/* Checks that chain ch is the objs objects of one span carved from its
 * start: the carve links them last first, so the chain hands them out
 * in address order, rising by the size (central.c, carve). */
static __attribute__((unused)) void check_carved_span(unsigned c, const hc_chain_t *ch, const char *when) {
  const hc_class_info_t *ci = &hci_classes[c];
  CHECK(ch->n == ci->objs, "class %u %s: took %u objects, want the whole empty span carved again (%u)", c, when, ch->n,
        ci->objs);
  hc_span_t *s = ch->head ? hci_pagemap_span((uintptr_t)ch->head) : NULL;
  uint32_t i = 0;
  for (void *p = ch->head; p && s; p = hc_fl_next(p, 0), i++)
    if ((uintptr_t)p != s->start + (uintptr_t)i * ci->size) {
      CHECK(0, "class %u %s: object %u of the chain is %p, want %p (carved in address order)", c, when, i, p,
            (void *)(s->start + (uintptr_t)i * ci->size));
      break;
    }
}

/* Pins the calling thread to cpu (0-based); false when it cannot run there. */
static __attribute__((unused)) bool pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return sched_setaffinity(0, sizeof s, &s) == 0 && hci_os_cpu() == (unsigned)cpu + 1;
}

#endif
