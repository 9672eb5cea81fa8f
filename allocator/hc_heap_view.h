/* hc_heap_view.h - the heap view: the one door through which the layers
 * above the allocator (checker, profiler, runtime) read the heap (after
 * LeakSanitizer's lsan_common.h: PointsIntoChunk, the chunk's metadata,
 * ForEachChunk).
 *
 *   hci_heap_locate(addr, &slot)    address -> the object slot holding it
 *                                   (span, slot number, start), no record read
 *   hci_heap_slot_record/size/...   that slot's record (stack, epoch, flags)
 *                                   and requested size
 *   hci_heap_find(addr, &obj)       address -> live object (start, size,
 *                                   record): locate + record in one call
 *   hci_heap_for_each_span/object   iterators over the spans in use and the
 *                                   live objects with a record
 *   hci_heap_span_*                 a span's slots, for loops over them
 *   hci_heap_span_id/_ids           a span's dense id: the key of a side
 *                                   table of the caller's (the checker's marks)
 *   hci_heap_locate_marked,         the flood's per-word lookup: the slot's
 *   hci_heap_marked_object          byte in the caller's mark table first,
 *                                   the record and size after
 *   hci_heap_sample_*               the live sampled objects (profiles)
 *
 * Rules of the seam:
 *  - layers above read spans, the pagemap and the page heap only through
 *    these functions; hc_span_t is opaque to them (a handle passed back);
 *  - the records (hc_objmeta_t) are written by the allocator (malloc and
 *    free of the owning thread); a layer above may only set or clear
 *    HC_OBJ_IGNORED in xflags (atomically);
 *  - marks belong to the caller, in its own memory, indexed by span id
 *    (hci_heap_marks_t); the allocator keeps none and the view only indexes
 *    the table it is given.  Span ids are stable and below hci_heap_span_ids()
 *    while every allocator lock is held;
 *  - iterators and lookups take no lock: the caller holds every allocator
 *    lock (hci_lock_all) or has stopped the world with them held, except
 *    the sample list, guarded by hci_heap_samples_lock;
 *  - nothing here calls malloc, stdio or takes a lock, and nothing reads
 *    the program's memory (only the allocator's metadata).
 */
#ifndef HC_HEAP_VIEW_H
#define HC_HEAP_VIEW_H

#include "hc_types.h"

/* The pieces of hc_internal.h this header builds on. */
extern const hc_class_info_t hci_classes[HC_NUM_CLASSES];

/* ---- one slot ---- */
typedef struct hci_heap_slot {
  hc_span_t *span;  /* handle of its span */
  uintptr_t start;  /* first byte of the slot (the object's start when live) */
  uint32_t index;   /* slot number in the span (0 for a large span) */
  uint32_t cls;     /* size class; 0 for a large span */
} hci_heap_slot_t;

/* The slot holding addr (interior addresses too) in a span in use: a carved
 * slot of a small span, or the one slot of a large span (any byte of its
 * pages).  False for free pages, a small span's uncarved tail and
 * addresses outside the heap.  Reads the pagemap and the span only. */
static inline __attribute__((always_inline)) bool hci_heap_locate(uintptr_t addr, hci_heap_slot_t *o);

/* The slot's record, or NULL for a small span without records (made before
 * recording began). */
static inline hc_objmeta_t *hci_heap_slot_record(const hci_heap_slot_t *o);
/* True when the slot holds a live recorded object. */
static inline bool hci_heap_slot_live(const hci_heap_slot_t *o);
/* Requested size of the slot's object (exact for recorded objects and large
 * spans), the class size when the span has no records. */
static inline size_t hci_heap_slot_size(const hci_heap_slot_t *o);
/* Bytes the slot spans (class size; a large span's pages). */
static inline size_t hci_heap_slot_bytes(const hci_heap_slot_t *o);

/* ---- the whole answer ---- */
typedef struct hci_heap_obj {
  uintptr_t start;     /* first byte */
  size_t size;         /* requested size when known, else usable size */
  hc_objmeta_t *meta;  /* record (NULL when the object has none) */
  hc_span_t *span;     /* handle of its span */
  uint32_t index;      /* slot number in its span (0 for a large span) */
} hci_heap_obj_t;

/* The live object containing addr (interior pointers allowed): false for
 * free memory, a free slot and non-heap addresses.  The object of a small
 * span without records counts as live (nothing says otherwise). */
static inline bool hci_heap_find(uintptr_t addr, hci_heap_obj_t *out);
/* True when addr lies in a page the allocator owns (in use or free). */
static inline bool hci_heap_owns(uintptr_t addr);
/* Bounds of every heap mapping: no heap object lies outside [*lo, *hi). */
void hci_heap_bounds(uintptr_t *lo, uintptr_t *hi);
/* Allocation time (ns since process start) of a sampled large object, else 0. */
static inline uint64_t hci_heap_obj_alloc_time(const hci_heap_obj_t *o);

/* ---- iterators (every allocator lock held, or the world stopped) ---- */
/* fn for every span in use (small and large). */
typedef void (*hci_heap_span_fn)(void *ctx, hc_span_t *s);
void hci_heap_for_each_span(hci_heap_span_fn fn, void *ctx);
/* fn for every live object with a record (stack_id != 0). */
typedef void (*hci_heap_obj_fn)(void *ctx, const hci_heap_obj_t *obj);
void hci_heap_for_each_object(hci_heap_obj_fn fn, void *ctx);

/* Slots of span s that have records: 1 for a large span, the carved ones of
 * a small span with records, 0 for a small span without. */
static inline size_t hci_heap_span_slots(const hc_span_t *s);
/* Slot k < hci_heap_span_slots(s) of span s. */
static inline void hci_heap_span_slot(hc_span_t *s, uint32_t k, hci_heap_slot_t *o);

/* ---- span ids: the key of a caller's side table ---- */
/* s's id: dense, < hci_heap_span_ids(), unchanged while s is in use. */
static inline uint32_t hci_heap_span_id(const hc_span_t *s);
/* Bound on every span id (every allocator lock held). */
uint32_t hci_heap_span_ids(void);

/* ---- the flood's lookup: address -> mark byte, then the object ---- */
/* A caller's mark table: slot0[id] is NULL for a span without marks, else
 * the address of its slot 0's byte (slot k: slot0[id][k]). */
typedef struct hci_heap_marks {
  uint8_t *const *slot0; /* hci_heap_span_ids() entries */
} hci_heap_marks_t;
/* What hci_heap_locate_marked found: the slot's mark byte and what
 * hci_heap_marked_object needs to finish (nothing else is computed until the
 * caller has looked at the mark). */
typedef struct hci_heap_marked {
  uint8_t *mark;              /* the slot's byte in the caller's marks[] */
  hc_span_t *span;            /* handle of its span */
  const hc_class_info_t *ci;  /* its class; NULL for a large span */
  uintptr_t off;              /* addr - the span's first byte (small spans) */
  uint32_t index;             /* slot number (0 for a large span) */
} hci_heap_marked_t;
/* The slot holding addr (as hci_heap_locate) when its span has marks in mk
 * (the caller gives marks only to spans with records: hci_heap_span_slots
 * > 0).  Reads the pagemap, the span and mk->slot0. */
static inline __attribute__((always_inline)) bool hci_heap_locate_marked(uintptr_t addr, const hci_heap_marks_t *mk,
                                                                         hci_heap_marked_t *t);
/* The live object in t's slot (addr: the address given to
 * hci_heap_locate_marked): *start and its requested size *size; false when
 * the slot is free.  Reads the record. */
static inline __attribute__((always_inline)) bool hci_heap_marked_object(const hci_heap_marked_t *t, uintptr_t addr,
                                                                         uintptr_t *start, size_t *size);

/* ---- sampled objects (guarded by hci_heap_samples_lock) ---- */
typedef struct hci_heap_sample {
  uint32_t stack_id;
  size_t size;         /* requested */
  uint64_t weight;     /* mean sampling interval it was drawn with (>= 1) */
  uint64_t alloc_time; /* ns since process start */
  uint64_t est;        /* bytes it stands for (the listener's estimate; 0: none) */
} hci_heap_sample_t;
void hci_heap_samples_lock(void);
void hci_heap_samples_unlock(void);
/* fn for every live sampled object; returns false to stop. */
typedef bool (*hci_heap_sample_fn)(void *ctx, const hci_heap_sample_t *s);
void hci_heap_for_each_sample(hci_heap_sample_fn fn, void *ctx);

/* ======================= inline definitions ======================= */

/* The pagemap (pagemap.c); see hc_internal.h. */
typedef struct hc_pm_entry {
  uintptr_t span;  /* hc_span_t * of the page, or 0 */
  uintptr_t start; /* SMALL: the span's first byte (the free fast path's object offset is
                      addr - start); else 0 */
  uintptr_t owner; /* SMALL: the hc_tcache_t that owns the span (remote.c), or 0 */
  uint32_t cls;    /* SMALL: the size class; else 0 */
  uint32_t lofs;   /* SMALL: cls * sizeof(hc_tc_list_t), the byte offset of the class's list in a
                      thread cache's lists[] (the free fast path's one load); else 0 */
} hc_pm_entry_t;
_Static_assert(sizeof(hc_pm_entry_t) == 32, "32-byte entries: the index is one shift");
/* The free fast path's part of a page's entry, in an array of its own
 * after the leaf's entries (HC_PM_FAST_OFS): 8 bytes a page, 8 pages a
 * cache line instead of 2.  The free of an object whose page's entry line
 * was evicted waited for it: larson's frees missed L1 on the 32-byte
 * entries 57 % of the time, on random pages of a 5 MB heap
 * (docs/performance.md, "larson and random_live (session 13)"). */
typedef struct hc_pm_fast {
  uint32_t start_lo; /* SMALL: the low 32 bits of start; an object's offset in its span is
                        (uint32_t)addr - start_lo (spans are far below 4 GiB); else 0 */
  uint16_t lofs;     /* SMALL: as lofs above; else 0 */
  uint16_t otag;     /* SMALL: hci_owner_tag(owner): 0 for no owner; the fast path pushes when it
                        is 0 or its own cache's tag, and leaves the rest to the owner word above
                        (two caches with one tag: a free stays in the freeing cache, as for an
                        unowned span) */
} hc_pm_fast_t;
_Static_assert(sizeof(hc_pm_fast_t) == 8, "8-byte fast entries: the index is one shift");
#define HC_PM_FAST_OFS (HC_PM_LEAF_LEN * sizeof(hc_pm_entry_t)) /* a leaf's fast entries, from its start */
/* Root entries hold the byte offset of their leaf from zero[], an all-zero
 * leaf in .bss (0: no leaf yet, so the zeroed root needs no set-up): a page
 * without a leaf reads as an entry of zeros, so the free fast path has no
 * "leaf?" test.  zero[] and zfast[] (zero's fast entries, right after it
 * as in every leaf) are 2.5 MiB of .bss never written (read-only from
 * start-up: pagemap.c). */
typedef struct hc_pagemap {
  _Atomic uintptr_t root[HC_PM_ROOT_LEN];
  hc_pm_entry_t zero[HC_PM_LEAF_LEN];
  hc_pm_fast_t zfast[HC_PM_LEAF_LEN];
} hc_pagemap_t;
extern hc_pagemap_t hci_pagemap;
/* The fast entries of a leaf. */
static inline hc_pm_fast_t *hci_pagemap_fast_of(hc_pm_entry_t *leaf) {
  return (hc_pm_fast_t *)((char *)leaf + HC_PM_FAST_OFS);
}
/* addr's leaf's offset from zero[] (the root word) plus its page's index
 * shifted by scale (the entry size's log2); false above the address space. */
static inline bool hci_pagemap_off(uintptr_t addr, unsigned scale, uintptr_t *off) {
  uintptr_t root = addr >> (HC_PAGE_SHIFT + HC_PM_LEAF_BITS);
  if (hc_unlikely(root >= HC_PM_ROOT_LEN)) return false;
  *off = atomic_load_explicit(&hci_pagemap.root[root], memory_order_acquire) +
         ((addr >> (HC_PAGE_SHIFT - scale)) & ((HC_PM_LEAF_LEN - 1) << scale));
  return true;
}
/* The fast entry of addr's page (in zfast[] when no leaf covers it); NULL
 * when addr is above the address space. */
static inline const hc_pm_fast_t *hci_pagemap_fast_entry(uintptr_t addr) {
  uintptr_t off;
  return hci_pagemap_off(addr, 3, &off) ? (const hc_pm_fast_t *)((const char *)hci_pagemap.zfast + off) : NULL;
}
/* The entry of addr's page: in zero[] when no leaf covers it; NULL when
 * addr is above the address space. */
static inline const hc_pm_entry_t *hci_pagemap_entry(uintptr_t addr) {
  uintptr_t off;
  return hci_pagemap_off(addr, 5, &off) ? (const hc_pm_entry_t *)((const char *)hci_pagemap.zero + off) : NULL;
}
/* The leaf of root entry i, or NULL. */
static inline hc_pm_entry_t *hci_pagemap_leaf(size_t i) {
  uintptr_t off = atomic_load_explicit(&hci_pagemap.root[i], memory_order_acquire);
  return off ? (hc_pm_entry_t *)((char *)hci_pagemap.zero + off) : NULL;
}
/* The entry of addr's page, or NULL when no leaf covers it. */
static inline const hc_pm_entry_t *hci_pagemap_find(uintptr_t addr) {
  uintptr_t root = addr >> (HC_PAGE_SHIFT + HC_PM_LEAF_BITS);
  if (hc_unlikely(root >= HC_PM_ROOT_LEN)) return NULL;
  hc_pm_entry_t *leaf = hci_pagemap_leaf(root);
  if (hc_unlikely(leaf == NULL)) return NULL;
  return &leaf[(addr >> HC_PAGE_SHIFT) & (HC_PM_LEAF_LEN - 1)];
}

static inline __attribute__((always_inline)) bool hci_heap_locate(uintptr_t addr, hci_heap_slot_t *o) {
  const hc_pm_entry_t *pe = hci_pagemap_find(addr);
  if (!pe) return false;
  hc_span_t *s = (hc_span_t *)pe->span;
  if (!s) return false;
  unsigned cls = pe->cls;
  o->span = s;
  o->cls = cls;
  if (hc_likely(cls)) {
    const hc_class_info_t *ci = &hci_classes[cls];
    uintptr_t base = pe->start, off = addr - base;
    uint32_t idx = (uint32_t)((off * ci->recip) >> 48);
    if (idx >= s->carved) return false;
    o->index = idx;
    o->start = base + (uintptr_t)idx * ci->size;
    return true;
  }
  if (s->state != HC_SPAN_LARGE) return false;
  o->index = 0;
  o->start = s->start;
  return true;
}

static inline hc_objmeta_t *hci_heap_slot_record(const hci_heap_slot_t *o) {
  if (!o->cls) return &o->span->meta;
  return o->span->objmeta ? &o->span->objmeta[o->index] : NULL;
}

static inline bool hci_heap_slot_live(const hci_heap_slot_t *o) {
  const hc_objmeta_t *m = hci_heap_slot_record(o);
  return m && m->stack_id != HC_STACK_NONE;
}

static inline size_t hci_heap_slot_size(const hci_heap_slot_t *o) {
  if (!o->cls) return o->span->req_size;
  const hc_objmeta_t *m = hci_heap_slot_record(o);
  return hci_classes[o->cls].size - (m ? (atomic_load_explicit(&m->xflags, memory_order_relaxed) & HC_OBJ_SLACK_MASK) : 0);
}

static inline size_t hci_heap_slot_bytes(const hci_heap_slot_t *o) {
  return o->cls ? hci_classes[o->cls].size : o->span->npages << HC_PAGE_SHIFT;
}

static inline bool hci_heap_find(uintptr_t addr, hci_heap_obj_t *out) {
  hci_heap_slot_t o;
  if (!hci_heap_locate(addr, &o)) return false;
  hc_objmeta_t *m = hci_heap_slot_record(&o);
  if (m && m->stack_id == HC_STACK_NONE && o.cls) return false;
  out->start = o.start;
  out->size = hci_heap_slot_size(&o);
  out->meta = m;
  out->span = o.span;
  out->index = o.index;
  return true;
}

static inline bool hci_heap_owns(uintptr_t addr) {
  const hc_pm_entry_t *e = hci_pagemap_find(addr);
  return e && __atomic_load_n(&e->span, __ATOMIC_RELAXED) != 0;
}

/* When no pagemap leaf covers addr (no heap page within its 512 MiB), the end
 * of that leaf's reach; else addr.  A scan of the program's own mappings
 * steps over such stretches at once instead of asking page by page. */
static inline uintptr_t hci_heap_none_until(uintptr_t addr) {
  uintptr_t root = addr >> (HC_PAGE_SHIFT + HC_PM_LEAF_BITS);
  if (root >= HC_PM_ROOT_LEN || hci_pagemap_leaf(root)) return addr;
  return (root + 1) << (HC_PAGE_SHIFT + HC_PM_LEAF_BITS);
}

static inline uint64_t hci_heap_obj_alloc_time(const hci_heap_obj_t *o) {
  return o->span->state == HC_SPAN_LARGE && o->span->is_sampled ? o->span->alloc_time : 0;
}

static inline size_t hci_heap_span_slots(const hc_span_t *s) {
  if (s->state == HC_SPAN_LARGE) return 1;
  return s->objmeta ? s->carved : 0;
}

static inline void hci_heap_span_slot(hc_span_t *s, uint32_t k, hci_heap_slot_t *o) {
  o->span = s;
  o->index = k;
  o->cls = s->state == HC_SPAN_LARGE ? 0 : s->cls;
  o->start = s->start + (o->cls ? (uintptr_t)k * hci_classes[o->cls].size : 0);
}

static inline uint32_t hci_heap_span_id(const hc_span_t *s) { return s->id; }

/* The pre-view flood's per-word code: the class entry fetched once, the
 * start and the record only after the mark said the slot is worth it. */
static inline __attribute__((always_inline)) bool hci_heap_locate_marked(uintptr_t addr, const hci_heap_marks_t *mk,
                                                                         hci_heap_marked_t *t) {
  const hc_pm_entry_t *pe = hci_pagemap_find(addr);
  if (!pe) return false;
  hc_span_t *s = (hc_span_t *)pe->span;
  if (!s) return false;
  uint8_t *m0 = mk->slot0[s->id];
  if (!m0) return false;
  unsigned cls = pe->cls;
  t->span = s;
  if (hc_likely(cls)) {
    const hc_class_info_t *ci = &hci_classes[cls];
    uintptr_t off = addr - pe->start;
    uint32_t idx = (uint32_t)((off * ci->recip) >> 48);
    if (idx >= s->carved) return false;
    t->ci = ci;
    t->off = off;
    t->index = idx;
    t->mark = &m0[idx];
    return true;
  }
  if (s->state != HC_SPAN_LARGE) return false;
  t->ci = NULL;
  t->off = 0;
  t->index = 0;
  t->mark = m0;
  return true;
}

static inline __attribute__((always_inline)) bool hci_heap_marked_object(const hci_heap_marked_t *t, uintptr_t addr,
                                                                         uintptr_t *start, size_t *size) {
  const hc_span_t *s = t->span;
  if (hc_likely(t->ci != NULL)) {
    const hc_objmeta_t *m = &s->objmeta[t->index]; /* marked: has records */
    if (m->stack_id == HC_STACK_NONE) return false;
    *size = t->ci->size - (atomic_load_explicit(&m->xflags, memory_order_relaxed) & HC_OBJ_SLACK_MASK);
    *start = addr - (t->off - (uintptr_t)t->index * t->ci->size);
    return true;
  }
  if (s->meta.stack_id == HC_STACK_NONE) return false;
  *size = s->req_size;
  *start = s->start;
  return true;
}

#endif
