/* heap_verify.c - gperftools' heap checks and census over heapcheck's own
 * metadata: MallocExtension's VerifyAllMemory, Verify{New,ArrayNew,Malloc}
 * Memory(p), MallocMemoryStats, and HeapLeakChecker::GetAllocCaller (the
 * first frame of an object's recorded allocation stack).
 *
 * VerifyAllMemory holds every allocator lock (hci_lock_all) and walks all
 * spans through the pagemap: each page of a span maps to it (with its
 * class for small-object spans), classes and counters are in range, every
 * object on a span's free list and in the transfer slots lies at an object
 * start of a span of its class (the lists live in freed user memory: a
 * write after free or a double free shows up here), a span's free list
 * holds exactly carved - allocated objects, each free object's link
 * decodes and it carries the free mark (free_list.h), the free pages add up to the
 * page heap's counts.  The calling thread's cache lists are checked too
 * (other threads' are theirs: their fast paths take no lock).  Each
 * failure prints one line; the result is false when any was found.
 *
 * Verify*Memory(p): p is NULL or the start of a live allocation of ours
 * (exact in checker mode, from the records; otherwise a small object
 * without the free mark of free_list.h).
 *
 * MallocMemoryStats: live blocks, their bytes and the histogram by bit
 * length of the size (debugallocation's): exact requested sizes in checker
 * mode; otherwise large objects exactly and small objects per class (class
 * size; what the spans hand out minus what the caches and transfer slots
 * hold, read without stopping the owning threads).
 * Locks: hci_lock_all (VerifyAllMemory, MallocMemoryStats); none for
 * Verify*Memory.  No malloc. */
#include <string.h>

#include "free_list.h"
#include "gperftools/malloc_extension_c.h"
#include "hc_heap_view.h"
#include "hc_internal.h"

// ---- one object ----

/* True when p is the start of a live object (see the header). */
static bool live_start(const void *p) {
  uintptr_t a = (uintptr_t)p;
  hc_span_t *s = hci_pagemap_span(a);
  if (!s) return false;
  if (s->state == HC_SPAN_LARGE) return s->start == a; /* freed spans are FREE or STASHED */
  if (s->state != HC_SPAN_SMALL) return false;
  unsigned cls = hci_pagemap_class(a);
  const hc_class_info_t *ci = &hci_classes[cls];
  uintptr_t off = a - s->start;
  if (cls == 0 || off % ci->size != 0) return false;
  uint32_t idx = (uint32_t)(off / ci->size);
  if (s->objmeta) return idx < s->carved && s->objmeta[idx].stack_id != HC_STACK_NONE;
  /* Every free small object carries the free mark (free_list.h; not in
   * a build without hardening, which takes every carved object as live). */
  return idx < s->carved && !hc_fl_is_free(p);
}

hc_public int MallocExtension_VerifyMallocMemory(const void *p) { return !p || live_start(p); }
hc_public int MallocExtension_VerifyNewMemory(const void *p) { return !p || live_start(p); }
hc_public int MallocExtension_VerifyArrayNewMemory(const void *p) { return !p || live_start(p); }

hc_public const void *hc_alloc_caller(const void *p) {
  hci_heap_obj_t o;
  if (!p || !hci_heap_find((uintptr_t)p, &o) || !o.meta) return NULL;
  const uintptr_t *pcs;
  int n = hci_depot_get(o.meta->stack_id, &pcs);
  return n > 0 ? (const void *)pcs[0] : NULL;
}

// ---- the whole heap ----

typedef struct verify {
  int errors;
  size_t free_pages, released_pages;
} verify_t;

static void bad(verify_t *v, const char *what, uintptr_t addr) {
  if (v->errors++ < 20) hci_warn("VerifyAllMemory: %s at %p", what, (void *)addr);
}

/* An object of class cls at p: in a small-object span of that class, at an
 * object start inside what was carved. */
static bool object_of_class(uintptr_t p, unsigned cls) {
  hc_span_t *s = hci_pagemap_span(p);
  if (!s || s->state != HC_SPAN_SMALL || s->cls != cls) return false;
  uintptr_t off = p - s->start;
  return off % hci_classes[cls].size == 0 && off / hci_classes[cls].size < s->carved;
}

/* The decoded link of free object f, false when it does not decode to an
 * object address (free_list.h: a write over it after the free) or f lacks
 * the free mark. */
static bool next_free(const void *f, void **next) {
  uintptr_t n = hc_fl_word(f);
  *next = n == HC_FL_END ? NULL : (void *)n;
  return (n == HC_FL_END || !(n & HC_FL_BAD_BITS)) && (!HC_HARDEN_MARKS || hc_fl_is_free(f));
}

/* Follows a NULL-terminated list of free objects of class cls: at most
 * max links, each checked before it is read. */
static void check_list(verify_t *v, void *head, unsigned cls, uint32_t max, const char *what) {
  uint32_t n = 0;
  for (void *f = head, *next; f; f = next) {
    if (!object_of_class((uintptr_t)f, cls)) return bad(v, what, (uintptr_t)f);
    if (!next_free(f, &next)) return bad(v, "free object with a broken link or mark (write after free?)", (uintptr_t)f);
    if (++n > max) return bad(v, "free list loops", (uintptr_t)head);
  }
}

static void check_span(void *ctx, hc_span_t *s) {
  verify_t *v = ctx;
  for (size_t i = 0; i < s->npages; i++) {
    uintptr_t a = s->start + (i << HC_PAGE_SHIFT);
    const hc_pm_entry_t *e = hci_pagemap_find(a);
    if (!e || (hc_span_t *)e->span != s) return bad(v, "page not mapped to its span", a);
    bool small = s->state == HC_SPAN_SMALL;
    if (e->start != (small ? s->start : 0) || e->cls != (small ? s->cls : 0u) ||
        e->lofs != (small ? hci_pagemap_lofs(s->cls) : 0u) || (!small && e->owner))
      return bad(v, "page with a wrong class", a);
    const hc_pm_fast_t *f = hci_pagemap_fast_entry(a);
    /* A SMALL span's page is open to the free fast path (lofs) up to the
     * page its last object ever carved starts in, and closed (0) after it
     * (central.c, open_pages), or open already: a new span is carved with
     * no lock held, its pages opened before `opened` says so. */
    uint32_t opened = __atomic_load_n(&s->opened, __ATOMIC_ACQUIRE);
    uintptr_t frontier = s->start + (opened ? (uintptr_t)(opened - 1) * hci_classes[s->cls].size : 0);
    bool may_close = small && (a >> HC_PAGE_SHIFT) > (frontier >> HC_PAGE_SHIFT);
    if (f->start_lo != (uint32_t)e->start || (f->lofs != e->lofs && !(may_close && f->lofs == 0)) ||
        f->otag != hci_owner_tag((void *)e->owner))
      return bad(v, "page whose fast entry differs from its entry", a);
  }
  switch (s->state) {
    case HC_SPAN_FREE:
      if (s->is_released) v->released_pages += s->npages;
      else v->free_pages += s->npages;
      break;
    case HC_SPAN_SMALL: {
      const hc_class_info_t *ci = &hci_classes[s->cls];
      if (s->cls == 0 || s->cls >= HC_NUM_CLASSES || s->npages != ci->pages)
        return bad(v, "small-object span with a wrong class or length", s->start);
      if (s->carved > ci->objs || s->allocated > s->carved || s->opened > ci->objs ||
          (s->opened < s->carved && s->opened))
        return bad(v, "span counters out of range", s->start);
      uint32_t n = 0;
      for (void *f = s->freelist, *next; f; f = next) {
        if (!object_of_class((uintptr_t)f, s->cls) || hci_pagemap_span((uintptr_t)f) != s)
          return bad(v, "free list entry that is not an object of its span (write after free?)", (uintptr_t)f);
        if (!next_free(f, &next))
          return bad(v, "free object with a broken link or mark (write after free?)", (uintptr_t)f);
        if (++n > s->carved) return bad(v, "span free list loops (double free?)", s->start);
      }
      if (n != s->carved - s->allocated) bad(v, "span free list length disagrees with its counters", s->start);
      break;
    }
    case HC_SPAN_LARGE:
      if (s->req_size > (s->npages << HC_PAGE_SHIFT)) bad(v, "large object bigger than its span", s->start);
      break;
    case HC_SPAN_STASHED: break;
    default: bad(v, "span in an unknown state", s->start);
  }
}

hc_public int MallocExtension_VerifyAllMemory(void) {
  hci_ensure_init();
  verify_t v = {0, 0, 0};
  hci_lock_all();
  hci_walk_all_spans(check_span, &v);
  if (v.free_pages != hci_pageheap.free_pages || v.released_pages != hci_pageheap.released_pages)
    bad(&v, "free pages disagree with the page heap's counts", 0);
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) {
    hc_central_t *cl = &hci_central[c];
    for (uint32_t i = 0; i < cl->nchains; i++)
      check_list(&v, hci_transfer_slots[c][i].head, c, hci_transfer_slots[c][i].n, "transfer slot entry that is not an object of its class");
    hc_tcache_t *tc = hci_tc;
    /* a thread-cache list ends at HC_FL_END; its head may be a bad link the
     * malloc fast path did not check (object_of_class rejects it unread) */
    void *h = hci_tc_free(tc)->lists[c].head;
    if (tc->is_real) check_list(&v, h == (void *)HC_FL_END ? NULL : h, c, hc_tc_len(&hci_tc_free(tc)->lists[c]), "thread cache entry that is not an object of its class");
  }
  hci_unlock_all();
  return v.errors == 0;
}

// ---- census ----

typedef struct census {
  int blocks;
  size_t total;
  int *histogram;
  size_t small_objs[HC_NUM_CLASSES]; /* handed out by spans (not on their free lists) */
} census_t;

static void count(census_t *c, size_t size, size_t n) {
  int bits = 0;
  for (size_t s = size; s; s >>= 1) bits++;
  c->blocks += (int)n;
  c->total += size * n;
  if (c->histogram) c->histogram[bits < 64 ? bits : 63] += (int)n;
}

static void count_object(void *ctx, const hci_heap_obj_t *o) { count(ctx, o->size, 1); }

static void count_span(void *ctx, hc_span_t *s) {
  census_t *c = ctx;
  if (s->state == HC_SPAN_LARGE) count(c, s->req_size, 1);
  else if (s->state == HC_SPAN_SMALL) c->small_objs[s->cls] += s->allocated;
}

hc_public int MallocExtension_MallocMemoryStats(int *blocks, size_t *total, int histogram[64]) {
  hci_ensure_init();
  census_t c;
  memset(&c, 0, sizeof c);
  if (histogram) memset(histogram, 0, 64 * sizeof histogram[0]);
  c.histogram = histogram;
  hci_lock_all();
  if (hci_record_all) {
    hci_heap_for_each_object(count_object, &c);
  } else {
    hci_heap_for_each_span(count_span, &c);
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
      size_t idle = hci_central[cls].slot_objs;
      for (hc_tcache_t *tc = hci_tc_registry; tc; tc = tc->next)
        idle += hc_tc_len(&hci_tc_free(tc)->lists[cls]) + hci_remote_objects(tc, cls);
      if (c.small_objs[cls] > idle) count(&c, hci_classes[cls].size, c.small_objs[cls] - idle);
    }
  }
  hci_unlock_all();
  if (blocks) *blocks = c.blocks;
  if (total) *total = c.total;
  return 1;
}
