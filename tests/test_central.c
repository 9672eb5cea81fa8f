/* test_central.c - central free lists and the transfer cache.
 *
 * Calls hci_central_remove/insert/drain directly, single-threaded, and
 * checks after every step the invariant that makes the stats right:
 *   nspans * objs == hci_central_free_objects + objects held outside
 * (outside = ours plus whatever the rest of the process held at the
 * start, which must not change because nothing else allocates here).
 * Chains must be well formed (n objects, NULL-terminated, tail is the last),
 * hold distinct object starts of the right class, and come back whole from
 * the transfer cache.
 *
 * Transfer-cache policy (central.c, hc_config.h), checked at every insert by
 * insert_checked(), which predicts the outcome from the state before it:
 * a chain is kept whole in a transfer slot only if the class then has at
 * most HC_TRANSFER_SLOTS chains, its slots hold <= HC_SLOT_BYTES_CLASS_MAX
 * bytes, and the slots of all classes together <= HC_SLOT_BYTES_TOTAL_MAX
 * (hci_central_slot_bytes(), which must equal the sum over the classes).
 * and a thread on the inserting CPU refilled the class lately (refill_cpus:
 * else the chain would be taken on another CPU).
 * Otherwise its objects go back to their spans, and spans left with no
 * object allocated go to the page heap, except the first ones emptied up
 * to empty_max() per class, which central keeps (all free, on its span
 * list) to carve again.  Dedicated tests hit each
 * bound exactly (a chain that fills it is kept, one more byte is not).
 *
 * The kept spans are counted by hc_central_t.nempty.  check_kept() holds
 * after every step: the class's list has exactly nempty empty spans, at
 * most empty_max().  insert_checked() predicts how many of the spans a
 * chain empties are kept.  A refill takes an empty span first and carves
 * it again from its start, in address order, whatever order its free list
 * was in (recarve).  Finally two threads cycle one class through new spans
 * and back (kept_race): a span fetched new for one thread must not be
 * counted as kept while the other thread returned objects (as when the
 * kept span was a counter of empty spans, decremented by any empty span a
 * refill took from), checked under the class lock after every step.
 * fresh_carve: a remove that may take more than it wants from a new span
 * (hci_central_remove_fresh) gets that many, at most the span, and a
 * whole span carved so is on no list.  The test runs pinned to one CPU
 * (kept_race aside), since a refill takes the newest chain handed over on
 * its own CPU, else the oldest (central.c, pick_slot), and a chain is put
 * in a slot only on a CPU that refills its class; test_central_by_cpu.c
 * checks those choices on two CPUs. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "central_check.h"
#define MiB ((size_t)1 << 20)
static size_t outside[HC_NUM_CLASSES]; /* objects of each class held by others at the start */

static size_t held_elsewhere(unsigned c) {
  return hci_central[c].nspans * hci_classes[c].objs - hci_central_free_objects(c);
}

/* The empty spans class c keeps: HC_CENTRAL_EMPTY_BYTES of them, at least
 * one (central.c). */
static uint32_t empty_max(unsigned c) {
  size_t n = HC_CENTRAL_EMPTY_BYTES / ((size_t)hci_classes[c].pages * HC_PAGE_SIZE);
  return n ? (uint32_t)n : 1;
}

/* requires: c's lock or no other thread.  c's list holds exactly nempty
 * empty spans of the class, at most empty_max(c); returns false (and says
 * why in *why) if not. */
static bool kept_ok(unsigned c, const char **why) {
  hc_central_t *ce = &hci_central[c];
  uint32_t n = 0;
  if (ce->spans.next)
    for (hc_span_t *s = ce->spans.next; s != &ce->spans; s = s->next) {
      if (s->state != HC_SPAN_SMALL || s->cls != c) {
        *why = "a span on the list is not a span of the class";
        return false;
      }
      n += s->allocated == 0;
    }
  if (n != ce->nempty) {
    *why = "the empty spans on the list are not the ones counted";
    return false;
  }
  if (n > empty_max(c)) {
    *why = "more empty spans kept than the bound";
    return false;
  }
  return true;
}

static void check_kept(unsigned c, const char *when) {
  const char *why = "";
  CHECK(kept_ok(c, &why), "class %u %s: %u kept empty spans: %s", c, when, hci_central[c].nempty, why);
}

static void check_invariant(unsigned c, size_t ours, const char *when) {
  check_kept(c, when);
  size_t got = held_elsewhere(c);
  CHECK(got == outside[c] + ours, "class %u %s: spans hold %zu objects not free in central, want %zu (+%zu ours)", c,
        when, got, outside[c] + ours, ours);
}

/* The slot accounting: per class, and the global counter against the sum. */
static void check_slots(const char *when) {
  size_t sum = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) {
    const hc_central_t *ce = &hci_central[c];
    size_t n = 0;
    for (uint32_t i = 0; i < ce->nchains && i < HC_TRANSFER_SLOTS; i++) n += hci_transfer_slots[c][i].n;
    CHECK(ce->nchains <= HC_TRANSFER_SLOTS, "%s: class %u has %u chains", when, c, ce->nchains);
    CHECK(n == ce->slot_objs, "%s: class %u: chains hold %zu objects, slot_objs says %zu", when, c, n, ce->slot_objs);
    CHECK(ce->slot_objs * hci_classes[c].size <= HC_SLOT_BYTES_CLASS_MAX, "%s: class %u slots hold %zu bytes", when,
          c, ce->slot_objs * hci_classes[c].size);
    sum += ce->slot_objs * hci_classes[c].size;
  }
  CHECK(hci_central_slot_bytes() == sum, "%s: slot byte counter %zu, the classes' slots hold %zu", when,
        hci_central_slot_bytes(), sum);
  CHECK(sum <= HC_SLOT_BYTES_TOTAL_MAX, "%s: slots hold %zu bytes in all", when, sum);
}


// ---- insert with the policy predicted ----

enum outcome { KEPT, SLOTS_FULL, CLASS_BOUND, TOTAL_BOUND, FOREIGN };
static const char *const outcome_name[] = {"kept", "slots full", "over the class byte bound",
                                           "over the total byte bound", "handed over where nobody refills"};
static int outcomes[5];

/* A thread on this CPU refilled class c lately (central.c, refilled_on). */
static bool refilled_here(unsigned c) {
  unsigned cpu = hci_os_cpu();
  const hc_central_t *ce = &hci_central[c];
  return !cpu || ((ce->refill_cpus[0] | ce->refill_cpus[1]) >> (cpu % 64) & 1);
}

/* Spans of class c with no object allocated, on its span list. */
static size_t empty_spans(unsigned c) {
  hc_central_t *ce = &hci_central[c];
  size_t n = 0;
  if (!ce->spans.next) return 0;
  for (hc_span_t *s = ce->spans.next; s != &ce->spans; s = s->next) n += s->allocated == 0;
  return n;
}

/* hci_central_insert(c, ch), after predicting from the state before whether
 * the chain is kept, and if not, which spans it empties.  Checks the
 * outcome: slot counters, objects back in spans, emptied spans in the page
 * heap (all but the one empty span a class keeps).  The chain is given back
 * either way; returns what happened. */
static enum outcome insert_checked(unsigned c, const hc_chain_t *ch, const char *when) {
  hc_central_t *ce = &hci_central[c];
  const hc_class_info_t *ci = &hci_classes[c];
  size_t bytes = (size_t)ch->n * ci->size;
  uint32_t nchains0 = ce->nchains;
  size_t slot_objs0 = ce->slot_objs, total0 = hci_central_slot_bytes();
  size_t free0 = ce->free_objs, nspans0 = ce->nspans;
  uint32_t nempty0 = ce->nempty;
  size_t inuse0 = hci_pageheap.inuse_bytes;
  enum outcome want = !refilled_here(c)                                             ? FOREIGN
                      : nchains0 >= HC_TRANSFER_SLOTS                                ? SLOTS_FULL
                      : slot_objs0 * ci->size + bytes > HC_SLOT_BYTES_CLASS_MAX ? CLASS_BOUND
                      : total0 + bytes > HC_SLOT_BYTES_TOTAL_MAX                 ? TOTAL_BOUND
                                                                                 : KEPT;
  /* spans the chain would empty: those whose every allocated object is in it */
  static void *spans[MAXOBJ];
  static uintptr_t emptied[MAXOBJ];
  size_t ns = 0, ne = 0;
  for (void *p = ch->head; p && ns < MAXOBJ; p = hc_fl_next(p, 0)) spans[ns++] = hci_pagemap_span((uintptr_t)p);
  sort_ptrs(spans, ns);
  for (size_t i = 0; i < ns;) {
    size_t j = i;
    while (j < ns && spans[j] == spans[i]) j++;
    hc_span_t *s = spans[i];
    if (s && s->allocated == j - i) emptied[ne++] = s->start;
    i = j;
  }
  hc_chain_t copy = *ch;
  hci_central_insert(c, ch);
  outcomes[want]++;
  if (want == KEPT) {
    CHECK(ce->nchains == nchains0 + 1, "class %u %s: chain of %u (%zu bytes) not kept: %u chains, %u before", c, when,
          ch->n, bytes, ce->nchains, nchains0);
    if (ce->nchains == nchains0 + 1) {
      const hc_chain_t *top = &hci_transfer_slots[c][nchains0];
      CHECK(top->head == copy.head && top->tail == copy.tail && top->n == copy.n,
            "class %u %s: the slot does not hold the chain whole", c, when);
    }
    CHECK(ce->slot_objs == slot_objs0 + ch->n && hci_central_slot_bytes() == total0 + bytes,
          "class %u %s: slot objects %zu -> %zu, slot bytes %zu -> %zu after keeping %u objects", c, when,
          slot_objs0, ce->slot_objs, total0, hci_central_slot_bytes(), ch->n);
    CHECK(ce->free_objs == free0 && ce->nspans == nspans0 && hci_pageheap.inuse_bytes == inuse0,
          "class %u %s: a kept chain changed the spans", c, when);
  } else {
    size_t room = empty_max(c) - nempty0, keep = ne < room ? ne : room, to_ph = ne - keep;
    CHECK(ce->nchains == nchains0 && ce->slot_objs == slot_objs0 && hci_central_slot_bytes() == total0,
          "class %u %s: chain of %u (%zu bytes) %s, but kept: %u chains (%u before), %zu slot bytes (%zu before)", c,
          when, ch->n, bytes, outcome_name[want], ce->nchains, nchains0, hci_central_slot_bytes(), total0);
    CHECK(ce->nspans == nspans0 - to_ph, "class %u %s: %zu spans after returning a chain, want %zu (%zu emptied)", c,
          when, ce->nspans, nspans0 - to_ph, ne);
    CHECK(ce->free_objs == free0 + ch->n - to_ph * ci->objs,
          "class %u %s: %zu objects free in spans, want %zu (chain of %u back, %zu spans gone)", c, when,
          ce->free_objs, free0 + ch->n - to_ph * ci->objs, ch->n, to_ph);
    CHECK(hci_pageheap.inuse_bytes == inuse0 - to_ph * ci->pages * HC_PAGE_SIZE,
          "class %u %s: page heap in use %zu -> %zu, want -%zu spans of %u pages", c, when, inuse0,
          hci_pageheap.inuse_bytes, to_ph, ci->pages);
    size_t freed = 0, kept = 0;
    for (size_t i = 0; i < ne; i++) {
      hc_span_t *s = hci_pagemap_span(emptied[i]);
      if (s && s->state == HC_SPAN_FREE && hci_pagemap_class(emptied[i]) == 0) freed++;
      else if (s && s->state == HC_SPAN_SMALL && s->cls == c && s->allocated == 0) kept++;
    }
    CHECK(freed == to_ph && kept == keep, "class %u %s: of %zu emptied spans %zu are in the page heap, %zu kept; "
          "want %zu and %zu", c, when, ne, freed, kept, to_ph, keep);
    CHECK(ce->nempty == nempty0 + keep && empty_spans(c) == ce->nempty,
          "class %u %s: %u empty spans kept (%zu on the list), want %zu (%u before, %zu emptied)", c, when,
          ce->nempty, empty_spans(c), nempty0 + keep, nempty0, ne);
  }
  CHECK(want != KEPT || ce->nempty == nempty0, "class %u %s: a kept chain changed the kept spans", c, when);
  check_kept(c, when);
  check_slots(when);
  return want;
}

// ---- tests ----

/* Round trips through spans and the transfer cache for class c. */
static void round_trips(unsigned c) {
  static void *v[MAXOBJ];
  const hc_class_info_t *ci = &hci_classes[c];
  uint32_t want = ci->batch;
  size_t n = 0;
  /* at least three chains (and four objects) straight from the spans */
  for (int k = 0; k < 3 || n < 4; k++) {
    hc_chain_t ch;
    bool ok = hci_central_remove(c, want, &ch, NULL);
    CHECK(ok && ch.n >= 1, "class %u: remove failed", c);
    if (!ok) return;
    if (hci_central[c].nchains == 0) CHECK(ch.n <= want, "class %u: %u objects from spans, asked %u", c, ch.n, want);
    n += take_chain(c, &ch, v + n, (uint32_t)(MAXOBJ - n));
    check_invariant(c, n, "after remove");
  }
  check_distinct(c, v, n);
  /* back in chains of 1, 2 and the rest: kept or not as the bounds say */
  uint32_t sizes[3] = {1, 2, (uint32_t)n - 3};
  bool kept[3];
  size_t off = 0, ours = n;
  for (int k = 0; k < 3; k++) {
    hc_chain_t ch;
    make_chain(v + off, sizes[k], &ch);
    kept[k] = insert_checked(c, &ch, "round trip") == KEPT;
    off += sizes[k];
    if (!kept[k]) ours -= sizes[k];
    check_invariant(c, n - off, "after insert");
  }
  /* the kept chains come back whole, last in first out */
  size_t back = 0;
  for (int k = 2; k >= 0; k--) {
    off -= sizes[k];
    if (!kept[k]) continue;
    hc_chain_t ch;
    bool ok = hci_central_remove(c, want, &ch, NULL);
    CHECK(ok, "class %u: remove from the transfer cache failed", c);
    if (!ok) return;
    CHECK(ch.n == sizes[k], "class %u: got a chain of %u from the transfer cache, want %u", c, ch.n, sizes[k]);
    static void *w[MAXOBJ];
    uint32_t m = take_chain(c, &ch, w, MAXOBJ);
    CHECK(m == sizes[k] && memcmp(w, v + off, m * sizeof *w) == 0, "class %u: chain %d came back different", c, k);
    if (m != sizes[k] || memcmp(w, v + off, m * sizeof *w) != 0) return; /* ownership unknown: stop here */
    back += m;
    check_invariant(c, back, "after remove from slots");
  }
  /* and what we hold back once more, as one chain */
  static void *h[MAXOBJ];
  size_t nh = 0;
  off = 0;
  for (int k = 0; k < 3; k++) {
    if (kept[k]) memcpy(h + nh, v + off, sizes[k] * sizeof *h), nh += sizes[k];
    off += sizes[k];
  }
  CHECK(nh == ours, "class %u: holding %zu objects, expected %zu", c, nh, ours);
  check_invariant(c, nh, "before the final insert");
  hc_chain_t all;
  make_chain(h, (uint32_t)nh, &all);
  if (nh) insert_checked(c, &all, "final insert");
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
  CHECK(hci_central_remove(c, ci->objs, &ch, NULL), "class %u: remove", c);
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
  insert_checked(c, &back, "whole span back");
  CHECK(hci_central_free_objects(c) == ci->objs, "class %u: %zu free objects after insert", c,
        hci_central_free_objects(c));
  hci_central_drain();
  check_slots("after drain");
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

/* Class c, with no spans: a remove that may take more than it wants from
 * a new span (hci_central_remove_fresh: a thread cache with capacity to
 * spare) gets up to that many, at most the span; the span stays on the
 * list with the rest uncarved, and the next removes take only `want` from
 * it; when a new span is carved whole it is on no list (full).  Then every
 * object goes back and the spans to the page heap. */
static void fresh_carve(unsigned c) {
  const hc_class_info_t *ci = &hci_classes[c];
  hc_central_t *ce = &hci_central[c];
  static void *v[MAXOBJ];
  uint32_t n = 0, batch = ci->batch;
  hc_chain_t ch;
  CHECK(hci_central_remove_fresh(c, batch, ci->objs / 2, &ch, NULL), "class %u: remove_fresh", c);
  CHECK(ch.n == ci->objs / 2, "class %u: a new span gave %u objects, want %u", c, ch.n, ci->objs / 2);
  n += take_chain(c, &ch, v + n, MAXOBJ - n);
  CHECK(ce->nspans == 1 && ce->spans.next != &ce->spans && ce->spans.next->carved == ci->objs / 2,
        "class %u: the half-carved span is not on the list (%zu spans)", c, ce->nspans);
  check_invariant(c, n, "half a span carved");
  /* the span has objects left: a remove takes want, even with room for more */
  CHECK(hci_central_remove_fresh(c, batch, ci->objs, &ch, NULL) && ch.n == batch,
        "class %u: from a listed span got %u, want %u", c, ch.n, batch);
  n += take_chain(c, &ch, v + n, MAXOBJ - n);
  while (hci_central_free_objects(c)) { /* the rest of the first span */
    CHECK(hci_central_remove(c, batch, &ch, NULL), "class %u: remove", c);
    n += take_chain(c, &ch, v + n, MAXOBJ - n);
  }
  CHECK(n == ci->objs && ce->nspans == 1, "class %u: %u objects from %zu spans", c, n, ce->nspans);
  /* no free object left: a new span, carved whole (room for more than it) */
  CHECK(hci_central_remove_fresh(c, batch, 2 * ci->objs, &ch, NULL) && ch.n == ci->objs,
        "class %u: a new span gave %u, want all %u", c, ch.n, ci->objs);
  n += take_chain(c, &ch, v + n, MAXOBJ - n);
  CHECK(ce->nspans == 2 && ce->spans.next == &ce->spans, "class %u: a full span on the list (%zu spans)", c,
        ce->nspans);
  check_invariant(c, n, "two spans carved");
  check_distinct(c, v, n);
  for (uint32_t i = 0; i < n; i++) { /* back one by one, into their spans once the slots are full */
    hc_chain_t one;
    make_chain(v + i, 1, &one);
    hci_central_insert(c, &one);
  }
  hci_central_drain();
  CHECK(ce->nspans == 0 && hci_central_free_objects(c) == 0, "class %u: %zu spans left", c, ce->nspans);
}

/* Class c with one object per span, untouched: HC_TRANSFER_SLOTS one-object
 * chains (far below the byte bounds) are kept, the next ones go back to
 * their spans, and the spans they empty to the page heap. */
static void slots_overflow(unsigned c) {
  const hc_class_info_t *ci = &hci_classes[c];
  CHECK(ci->objs == 1 && (size_t)(HC_TRANSFER_SLOTS + 6) * ci->size <= HC_SLOT_BYTES_CLASS_MAX,
        "class %u does not fit this test", c);
  if (hci_central[c].nspans || hci_central[c].nchains) return;
  hci_central_drain();
  enum { N = HC_TRANSFER_SLOTS + 6 };
  static void *v[N];
  for (int i = 0; i < N; i++) {
    hc_chain_t ch;
    CHECK(hci_central_remove(c, 1, &ch, NULL) && ch.n == 1, "class %u: remove %d", c, i);
    v[i] = ch.head;
  }
  CHECK(hci_central[c].nspans == N, "class %u: %zu spans for %d one-object removes", c, hci_central[c].nspans, N);
  size_t inuse0 = hci_pageheap.inuse_bytes;
  int full = 0;
  for (int i = 0; i < N; i++) {
    hc_chain_t ch;
    make_chain(&v[i], 1, &ch);
    enum outcome o = insert_checked(c, &ch, "slots overflow");
    CHECK(o == (i < HC_TRANSFER_SLOTS ? KEPT : SLOTS_FULL), "chain %d: %s", i, outcome_name[o]);
    full += o == SLOTS_FULL;
  }
  CHECK(full == 6 && hci_central[c].nchains == HC_TRANSFER_SLOTS, "class %u: %u chains cached, %d refused", c,
        hci_central[c].nchains, full);
  /* of the 6 emptied spans the class keeps up to empty_max(), the others are in the page heap */
  size_t keep = empty_max(c) < 6 ? empty_max(c) : 6;
  CHECK(hci_central[c].nspans == HC_TRANSFER_SLOTS + keep, "class %u: %zu spans left, want %zu", c,
        hci_central[c].nspans, HC_TRANSFER_SLOTS + keep);
  CHECK(hci_pageheap.inuse_bytes == inuse0 - (6 - keep) * (size_t)ci->pages * HC_PAGE_SIZE,
        "class %u: the overflowing spans did not go back to the page heap", c);
  check_invariant(c, 0, "after overflowing the slots");
  hci_central_drain();
  CHECK(hci_central[c].nspans == 0, "class %u: %zu spans after drain", c, hci_central[c].nspans);
  check_slots("after drain");
}

/* The class byte bound, exactly: a chain that brings the class's slots to
 * HC_SLOT_BYTES_CLASS_MAX is kept; a chain that passes it goes back to its
 * spans, whether slots hold other chains or none; emptied spans go to the
 * page heap (one kept by the class). */
static void class_bound(unsigned c) {
  const hc_class_info_t *ci = &hci_classes[c];
  CHECK(HC_SLOT_BYTES_CLASS_MAX % ci->size == 0, "class %u does not divide the bound", c);
  size_t fill = HC_SLOT_BYTES_CLASS_MAX / ci->size; /* objects that fill the bound exactly */
  /* Past the class bound the chain must not be refused for the total alone;
   * when the two bounds are equal, a chain past one is past both, and both
   * send it back to its spans. */
  CHECK(fill + 4 <= MAXOBJ &&
            ((fill + 4) * ci->size <= HC_SLOT_BYTES_TOTAL_MAX || HC_SLOT_BYTES_CLASS_MAX == HC_SLOT_BYTES_TOTAL_MAX),
        "class %u does not fit this test", c);
  hci_central_drain();
  size_t outside_spans = hci_central[c].nspans;
  static void *v[MAXOBJ];
  size_t n = take_n(c, v, fill + 4);
  if (n != fill + 4) return;
  check_distinct(c, v, n);
  uint32_t room_before = empty_max(c) - hci_central[c].nempty;
  hc_chain_t ch;
  make_chain(v, (uint32_t)fill, &ch);
  CHECK(insert_checked(c, &ch, "fill the class bound") == KEPT, "class %u: a chain of exactly %zu bytes not kept", c,
        HC_SLOT_BYTES_CLASS_MAX);
  CHECK(hci_central[c].slot_objs * ci->size == HC_SLOT_BYTES_CLASS_MAX, "class %u: slots hold %zu bytes", c,
        hci_central[c].slot_objs * ci->size);
  /* the other 4, one chain: over the bound by 4 objects */
  size_t inuse0 = hci_pageheap.inuse_bytes, spans0 = hci_central[c].nspans;
  make_chain(v + fill, 4, &ch);
  CHECK(insert_checked(c, &ch, "past the class bound") == CLASS_BOUND, "class %u: not refused", c);
  if (ci->objs == 1) { /* 4 spans emptied: kept while the class has room for them, the others freed */
    size_t freed = 4 - (room_before < 4 ? room_before : 4);
    CHECK(hci_central[c].nspans == spans0 - freed &&
              hci_pageheap.inuse_bytes == inuse0 - freed * ci->pages * HC_PAGE_SIZE,
          "class %u: %zu spans (%zu before), page heap in use -%zu bytes: want %zu spans freed", c,
          hci_central[c].nspans, spans0, inuse0 - hci_pageheap.inuse_bytes, freed);
  }
  /* the kept chain comes back whole; a chain over the bound on its own is refused too */
  hc_chain_t got;
  CHECK(hci_central_remove(c, 1, &got, NULL) && got.n == fill && got.head == v[0] && got.tail == v[fill - 1],
        "class %u: the full chain did not come back whole", c);
  CHECK(hci_central_slot_bytes() == 0, "slot bytes %zu with every slot empty", hci_central_slot_bytes());
  size_t m = take_chain(c, &got, v, MAXOBJ);
  m += take_n(c, v + m, 1);
  if (m != fill + 1) return;
  make_chain(v, (uint32_t)m, &ch);
  CHECK(insert_checked(c, &ch, "one chain over the class bound") == CLASS_BOUND,
        "class %u: a chain of %zu bytes kept in empty slots", c, m * ci->size);
  CHECK(hci_central[c].nchains == 0, "class %u: %u chains", c, hci_central[c].nchains);
  hci_central_drain();
  CHECK(hci_central[c].nspans == outside_spans, "class %u: %zu spans after drain, %zu before", c,
        hci_central[c].nspans, outside_spans);
}

/* The total byte bound, exactly: NFULL classes fill their class bound, the
 * total is then HC_SLOT_BYTES_TOTAL_MAX (kept: <=); one more object of any
 * class is refused although its class's slots are empty; once a chain is
 * taken out, the same chain is kept. */
static void total_bound(void) {
  enum { NFULL = HC_SLOT_BYTES_TOTAL_MAX / HC_SLOT_BYTES_CLASS_MAX };
  static const size_t sizes[4] = {256 << 10, 128 << 10, 64 << 10, 32 << 10};
  _Static_assert(NFULL >= 1 && NFULL <= 4 && NFULL * HC_SLOT_BYTES_CLASS_MAX == HC_SLOT_BYTES_TOTAL_MAX,
                 "one to four full classes fill the total");
  static void *v[NFULL][MAXOBJ];
  size_t n[NFULL];
  unsigned cls[NFULL];
  hci_central_drain();
  CHECK(hci_central_slot_bytes() == 0, "slot bytes %zu after drain", hci_central_slot_bytes());
  for (int k = 0; k < NFULL; k++) {
    cls[k] = hci_size_class(sizes[k]);
    CHECK(hci_classes[cls[k]].size == sizes[k], "no class of %zu bytes", sizes[k]);
    n[k] = take_n(cls[k], v[k], HC_SLOT_BYTES_CLASS_MAX / sizes[k]);
    if (n[k] != HC_SLOT_BYTES_CLASS_MAX / sizes[k]) return;
  }
  for (int k = 0; k < NFULL; k++) {
    hc_chain_t ch;
    make_chain(v[k], (uint32_t)n[k], &ch);
    CHECK(insert_checked(cls[k], &ch, "fill the total") == KEPT, "class %u: full chain not kept", cls[k]);
  }
  CHECK(hci_central_slot_bytes() == HC_SLOT_BYTES_TOTAL_MAX, "slot bytes %zu, want %zu", hci_central_slot_bytes(),
        HC_SLOT_BYTES_TOTAL_MAX);
  unsigned c8 = hci_size_class(8192);
  static void *one[1];
  if (take_n(c8, one, 1) != 1) return;
  hc_chain_t ch;
  make_chain(one, 1, &ch);
  CHECK(hci_central[c8].slot_objs == 0, "class %u has slot objects", c8);
  CHECK(insert_checked(c8, &ch, "past the total") == TOTAL_BOUND, "class %u: an object kept past the total", c8);
  /* take one chain out: room again */
  hc_chain_t got;
  CHECK(hci_central_remove(cls[NFULL - 1], 1, &got, NULL) && got.n == n[NFULL - 1] && got.head == v[NFULL - 1][0],
        "class %u: the full chain did not come back whole", cls[NFULL - 1]);
  take_chain(cls[NFULL - 1], &got, v[NFULL - 1], MAXOBJ);
  CHECK(hci_central_slot_bytes() == HC_SLOT_BYTES_TOTAL_MAX - HC_SLOT_BYTES_CLASS_MAX, "slot bytes %zu",
        hci_central_slot_bytes());
  if (take_n(c8, one, 1) != 1) return;
  make_chain(one, 1, &ch);
  CHECK(insert_checked(c8, &ch, "room again") == KEPT, "class %u: refused with room in the total", c8);
  make_chain(v[NFULL - 1], (uint32_t)n[NFULL - 1], &ch);
  insert_checked(cls[NFULL - 1], &ch, "back");
  hci_central_drain();
  CHECK(hci_central_slot_bytes() == 0, "slot bytes %zu after drain", hci_central_slot_bytes());
  for (int k = 0; k < NFULL; k++)
    CHECK(outside[cls[k]] != 0 || hci_central[cls[k]].nspans == 0, "class %u: %zu spans after drain", cls[k],
          hci_central[cls[k]].nspans);
}


/* Class c, untouched: a whole span S comes back in a scrambled order with
 * the slots full, so into its span, which is then empty and kept.  With
 * the slots emptied, the next refill carves S again from its start (its
 * free list, in the scrambled order, is not read) and takes all of it when
 * it has room (fresh), as from a new span. */
static void recarve(unsigned c) {
  const hc_class_info_t *ci = &hci_classes[c];
  hc_central_t *ce = &hci_central[c];
  static void *v[MAXOBJ], *w[HC_TRANSFER_SLOTS];
  CHECK(ci->objs >= 8 && ci->objs <= MAXOBJ && ce->nspans == 0 && ce->nchains == 0, "class %u does not fit recarve", c);
  hc_chain_t ch;
  CHECK(hci_central_remove_fresh(c, ci->batch, ci->objs, &ch, NULL), "class %u: remove_fresh", c);
  uint32_t n = take_chain(c, &ch, v, MAXOBJ);
  CHECK(n == ci->objs, "class %u: a new span gave %u, want %u", c, n, ci->objs);
  if (take_n(c, w, HC_TRANSFER_SLOTS) != HC_TRANSFER_SLOTS) return; /* from a second span */
  for (int i = 0; i < HC_TRANSFER_SLOTS; i++) {
    make_chain(&w[i], 1, &ch);
    CHECK(insert_checked(c, &ch, "filling the slots") == KEPT, "class %u: one-object chain %d not kept", c, i);
  }
  for (uint32_t i = 0; i + 2 < n; i += 3) { /* scrambled: every third object moved ahead */
    void *t = v[i];
    v[i] = v[i + 2];
    v[i + 2] = t;
  }
  make_chain(v, n, &ch);
  CHECK(insert_checked(c, &ch, "a scrambled span, slots full") == SLOTS_FULL, "class %u: not refused", c);
  CHECK(ce->nempty == 1, "class %u: %u empty spans kept, want 1", c, ce->nempty);
  for (int i = 0; i < HC_TRANSFER_SLOTS; i++) {
    CHECK(hci_central_remove(c, 1, &ch, NULL) && ch.n == 1, "class %u: slot %d", c, i);
    w[i] = ch.head;
  }
  CHECK(ce->nchains == 0, "class %u: %u chains left", c, ce->nchains);
  CHECK(hci_central_remove_fresh(c, ci->batch, ci->objs, &ch, NULL), "class %u: remove_fresh", c);
  check_carved_span(c, &ch, "after the scrambled return");
  n = take_chain(c, &ch, v, MAXOBJ);
  check_invariant(c, n + HC_TRANSFER_SLOTS, "after carving again");
  make_chain(v, n, &ch);
  hci_central_insert(c, &ch);
  make_chain(w, HC_TRANSFER_SLOTS, &ch);
  hci_central_insert(c, &ch);
  hci_central_drain();
  CHECK(ce->nspans == 0 && hci_central_free_objects(c) == 0, "class %u: %zu spans left", c, ce->nspans);
}

/* kept_race: RACE_THREADS threads cycle the 256 KiB class (one object per
 * span): each takes RACE_CHAIN objects one by one (the kept span's, then
 * new spans fetched from the page heap outside the class lock) and gives
 * them back as one chain over the class byte bound, so they go back to
 * their spans: one span kept, the others to the page heap.  A thread
 * fetching a new span while another gives its chain back sees the class
 * keep a span meanwhile; the new span (empty until the refill takes from
 * it) is not the kept one.  kept_ok() is checked under the class lock
 * after every step; at the end a drain leaves the class no span. */
#define RACE_THREADS 2
#define RACE_ROUNDS 20000
#define RACE_CHAIN ((int)(HC_SLOT_BYTES_CLASS_MAX / (256 << 10)) + 1)
static atomic_int race_bad, race_fetches, race_ready;
static const char *race_why;

static void *race_worker(void *arg) {
  unsigned c = (unsigned)(uintptr_t)arg;
  hc_central_t *ce = &hci_central[c];
  void *v[RACE_CHAIN];
  atomic_fetch_add(&race_ready, 1);
  while (atomic_load(&race_ready) < RACE_THREADS) { /* start together */
  }
  for (int r = 0; r < RACE_ROUNDS; r++) {
    for (int i = 0; i < RACE_CHAIN; i++) {
      hc_chain_t ch;
      uint64_t allocs0 = ce->span_allocs; /* racy read: statistics only */
      if (!hci_central_remove(c, 1, &ch, NULL) || ch.n != 1) {
        atomic_fetch_add(&race_bad, 1);
        race_why = "remove failed or gave a chain";
        return NULL;
      }
      if (ce->span_allocs != allocs0) atomic_fetch_add(&race_fetches, 1);
      v[i] = ch.head;
      const char *why = NULL;
      hci_lock(&ce->lock);
      bool ok = kept_ok(c, &why);
      hci_unlock(&ce->lock);
      if (!ok) {
        atomic_fetch_add(&race_bad, 1);
        race_why = why;
      }
    }
    hc_chain_t ch;
    make_chain(v, RACE_CHAIN, &ch);
    hci_central_insert(c, &ch); /* over the class bound: back to the spans */
    const char *why = NULL;
    hci_lock(&ce->lock);
    bool ok = kept_ok(c, &why);
    hci_unlock(&ce->lock);
    if (!ok) {
      atomic_fetch_add(&race_bad, 1);
      race_why = why;
    }
  }
  return NULL;
}

static void kept_race(void) {
  unsigned c = HC_NUM_CLASSES - 1;
  CHECK(hci_classes[c].objs == 1 && (size_t)RACE_CHAIN * hci_classes[c].size > HC_SLOT_BYTES_CLASS_MAX,
        "class %u does not fit this test", c);
  hci_central_drain();
  CHECK(hci_central[c].nchains == 0 && hci_central[c].nempty == 0, "class %u: chains or a kept span left", c);
  pthread_t t[RACE_THREADS];
  for (int i = 0; i < RACE_THREADS; i++) pthread_create(&t[i], NULL, race_worker, (void *)(uintptr_t)c);
  for (int i = 0; i < RACE_THREADS; i++) pthread_join(t[i], NULL);
  printf("kept_race: %d threads x %d rounds, %d new spans fetched, %d bad states\n", RACE_THREADS, RACE_ROUNDS,
         atomic_load(&race_fetches), atomic_load(&race_bad));
  CHECK(atomic_load(&race_bad) == 0, "class %u: %d bad states, e.g. %s", c, atomic_load(&race_bad),
        race_why ? race_why : "?");
  CHECK(hci_central[c].nchains == 0, "class %u: %u chains kept (every chain was over the class bound)", c,
        hci_central[c].nchains);
  check_kept(c, "after the race");
  hci_central_drain();
  CHECK(hci_central[c].nspans == 0 && hci_central[c].nempty == 0, "class %u: %zu spans, %u kept after drain", c,
        hci_central[c].nspans, hci_central[c].nempty);
}


int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  setvbuf(stderr, NULL, _IONBF, 0);
  printf("central lists\n"); /* stdio buffers allocated before the snapshot */
  hci_ensure_init(); /* the allocator alone: no malloc of ours in this test */
  /* One CPU: the order of chains in the slots is then last in, first out. */
  cpu_set_t start;
  bool have_start = sched_getaffinity(0, sizeof start, &start) == 0;
  if (have_start && sched_getcpu() >= 0) pin(sched_getcpu());
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) outside[c] = held_elsewhere(c);
  check_slots("start");
  /* untouched classes first (the main thread has used only a few small ones) */
  int fresh = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++)
    if (!hci_central[c].nspans && !hci_central[c].nchains) {
      empty_span_returns(c);
      fresh++;
    }
  CHECK(fresh > 80, "only %d classes untouched at start", fresh);
  /* a class of a few batches per span, now without spans (returned above) */
  unsigned fc = hci_size_class(64);
  CHECK(hci_classes[fc].objs >= 4 * hci_classes[fc].batch && hci_classes[fc].objs <= MAXOBJ / 4,
        "class %u does not fit fresh_carve", fc);
  if (!hci_central[fc].nspans && !hci_central[fc].nchains) fresh_carve(fc);
  else CHECK(0, "class %u has spans at start", fc);
  recarve(hci_size_class(96));
  /* Two classes with one object per span whose HC_TRANSFER_SLOTS + 6
   * one-object chains stay under the class byte bound (largest first). */
  int picked = 0;
  for (unsigned c = HC_NUM_CLASSES - 1; c >= 1 && picked < 2; c--)
    if (hci_classes[c].objs == 1 &&
        (size_t)(HC_TRANSFER_SLOTS + 6) * hci_classes[c].size <= HC_SLOT_BYTES_CLASS_MAX) {
      slots_overflow(c);
      picked++;
    }
  CHECK(picked == 2, "only %d classes fit the slot-overflow test", picked);
  class_bound(HC_NUM_CLASSES - 1);       /* 256 KiB, one object per span */
  class_bound(hci_size_class(2048));     /* 2 KiB, 8 objects per span */
  total_bound();
  /* round trips with the slots as they come: the large classes run into the
   * total bound with the chains the smaller ones left in their slots */
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) round_trips(c);
  printf("inserts: %d kept, %d with the slots full, %d over the class bound, %d over the total bound\n",
         outcomes[KEPT], outcomes[SLOTS_FULL], outcomes[CLASS_BOUND], outcomes[TOTAL_BOUND]);
  CHECK(outcomes[KEPT] && outcomes[SLOTS_FULL] && outcomes[CLASS_BOUND] && outcomes[TOTAL_BOUND],
        "not every outcome was exercised");
  hci_central_drain();
  check_slots("end");
  CHECK(hci_central_slot_bytes() == 0, "slot bytes %zu after the last drain", hci_central_slot_bytes());
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) {
    check_invariant(c, 0, "at the end");
    CHECK(hci_central[c].nchains == 0, "class %u: chains left after drain", c);
    if (outside[c] == 0)
      CHECK(hci_central[c].nspans == 0, "class %u: %zu spans left although nothing is allocated", c,
            hci_central[c].nspans);
    CHECK(hci_central[c].nempty == 0, "class %u: a kept span after the drain", c);
  }
  /* last: its threads' own allocations would disturb the counts above;
   * on every CPU again, so that they race */
  if (have_start) sched_setaffinity(0, sizeof start, &start);
  kept_race();
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("central OK\n");
  return 0;
}
