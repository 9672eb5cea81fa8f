/* walk.c - services for the checker and the profiler: take every lock, and
 * the heap view's iterators (hc_heap_view.h: the lookups are inline there).
 *
 * Enumeration reads the pagemap and spans without locks of its own, so the
 * caller must hold every allocator lock (hci_lock_all) or have stopped the
 * world with them held.  Objects sitting in thread caches are free: their
 * record says stack_id == 0 (checker mode), so they are never reported. */
#include "hc_internal.h"

void hci_depot_locks(hci_lock_fn *each) __attribute__((weak));
/* Weak: a static link that never calls MallocExtension has no account. */
void hci_release_locks(hci_lock_fn *each) __attribute__((weak));

void hci_allocator_locks(hci_lock_fn *each) {
  hci_hooks_locks(each);
  if (hci_release_locks) hci_release_locks(each);
  if (hci_depot_locks) hci_depot_locks(each);
  hci_quarantine_locks(each);
  each(&hci_tc_registry_lock);
  each(&hci_samples.lock);
  each(&hci_pageheap.lock);
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) each(&hci_central[c].lock);
  hci_meta_locks(each);
}

void hci_lock_all(void) { hci_allocator_locks(hci_lock_fn_lock); }
void hci_unlock_all(void) { hci_allocator_locks(hci_lock_fn_unlock); }

/* Spans are found by walking the pagemap: every page of every span maps to
 * it, so a span is visited at its first page. */
typedef struct span_walk {
  hci_heap_span_fn fn;
  void *ctx;
  bool with_free;
} span_walk_t;

static void walk_leaf(void *arg, size_t r, hc_pm_entry_t *leaf, size_t lo, size_t hi) {
  span_walk_t *w = arg;
  for (size_t i = lo; i < hi; i++) {
    hc_span_t *s = (hc_span_t *)leaf[i].span;
    if (!s) continue;
    uintptr_t page_addr = ((r << HC_PM_LEAF_BITS) | i) << HC_PAGE_SHIFT;
    if (s->start != page_addr) continue;
    if (w->with_free || s->state != HC_SPAN_FREE) w->fn(w->ctx, s);
    if (s->npages > 1) i += s->npages - 1; /* skip the rest of this span */
  }
}

static void walk_spans(hci_heap_span_fn fn, void *ctx, bool with_free) {
  span_walk_t w = {fn, ctx, with_free};
  hci_pagemap_for_each_leaf(walk_leaf, &w);
}

void hci_heap_for_each_span(hci_heap_span_fn fn, void *ctx) { walk_spans(fn, ctx, false); }

void hci_walk_all_spans(hci_heap_span_fn fn, void *ctx) { walk_spans(fn, ctx, true); }

typedef struct obj_walk {
  hci_heap_obj_fn fn;
  void *ctx;
} obj_walk_t;

static void visit_span_objects(void *arg, hc_span_t *s) {
  obj_walk_t *w = arg;
  hci_heap_obj_t o;
  o.span = s;
  if (s->state == HC_SPAN_LARGE) {
    if (s->meta.stack_id == HC_STACK_NONE) return;
    o.start = s->start;
    o.size = s->req_size;
    o.meta = &s->meta;
    o.index = 0;
    w->fn(w->ctx, &o);
    return;
  }
  if (!s->objmeta) return;
  const hc_class_info_t *ci = &hci_classes[s->cls];
  for (uint32_t i = 0; i < s->carved; i++) {
    hc_objmeta_t *m = &s->objmeta[i];
    if (m->stack_id == HC_STACK_NONE) continue;
    o.start = s->start + (uintptr_t)i * ci->size;
    o.size = ci->size - (atomic_load_explicit(&m->xflags, memory_order_relaxed) & HC_OBJ_SLACK_MASK);
    o.meta = m;
    o.index = i;
    w->fn(w->ctx, &o);
  }
}

void hci_heap_for_each_object(hci_heap_obj_fn fn, void *ctx) {
  obj_walk_t w = {fn, ctx};
  walk_spans(visit_span_objects, &w, false);
}

void hci_heap_bounds(uintptr_t *lo, uintptr_t *hi) {
  *lo = hci_pageheap.lo;
  *hi = hci_pageheap.hi > hci_pageheap.lo ? hci_pageheap.hi : hci_pageheap.lo;
}

void hci_heap_samples_lock(void) { hci_lock(&hci_samples.lock); }
void hci_heap_samples_unlock(void) { hci_unlock(&hci_samples.lock); }

void hci_heap_for_each_sample(hci_heap_sample_fn fn, void *ctx) {
  for (hc_span_t *s = hci_samples.head; s; s = s->snext) {
    hci_heap_sample_t v = {s->meta.stack_id, s->req_size, s->weight ? s->weight : 1, s->alloc_time, s->sample_est};
    if (!fn(ctx, &v)) return;
  }
}
