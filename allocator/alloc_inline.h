/* alloc_inline.h - the malloc and free fast paths, inlined into every
 * exported entry point of override.c.
 *
 * malloc: size -> class by table, pop the thread cache list, charge the
 * sampler.  free: pagemap -> class (0 = large/foreign: slow path), check
 * that the pointer is an object start and not the list head (cheap double
 * free check), push.  No locks, no atomics, no "initialised?" tests: a
 * thread without a cache points at the empty cache, whose NULL heads and
 * zero capacities send it to the slow paths (thread_cache.c). */
#ifndef HC_ALLOC_INLINE_H
#define HC_ALLOC_INLINE_H

#include "hc_internal.h"

#define HC_SLOW_SAMPLE_CHARGED 1 /* the fast path already subtracted the size from sample_left */

void *hci_alloc_slow(size_t size, uintptr_t ra, int flags) hc_noinline;
void hci_free_slow(void *p, uintptr_t ra) hc_noinline;
void hci_free_miss(void *p, uintptr_t ra) hc_noinline;

#define HC_RA() ((uintptr_t)__builtin_return_address(0))

static inline __attribute__((always_inline)) void *hc_malloc_fast(size_t size, uintptr_t ra) {
  if (hc_likely(size <= HC_MAX_SMALL)) {
    hc_tcache_t *tc = hci_tc;
    hc_tc_list_t *l = &tc->lists[hci_size_class(size)];
    void *p = l->head;
    if (hc_likely(p != NULL)) {
      if (hc_unlikely((tc->sample_left -= (int64_t)size) < 0))
        return hci_alloc_slow(size, ra, HC_SLOW_SAMPLE_CHARGED);
      l->head = *(void **)p;
      l->len--;
      return p;
    }
  }
  return hci_alloc_slow(size, ra, 0);
}

/* True when off is a multiple of the class size (see hc_class_info_t.recip:
 * multiples leave < 2^18 in the low 48 bits of off * recip, others >= 2^30)
 * and the object lies inside the span: a multiple in the span's tail
 * (index >= objs, e.g. 170 * 48 in a one-page span of 48-byte objects) was
 * never handed out and would overlap the next span. */
static inline bool hc_is_object_start(uintptr_t off, const hc_class_info_t *ci) {
  uint64_t m = off * ci->recip;
  return (m << 16) < ((uint64_t)1 << 34) && (m >> 48) < ci->objs;
}

static inline __attribute__((always_inline)) void hc_free_fast(void *ptr, uintptr_t ra) {
  const hc_pm_entry_t *e = hci_pagemap_find((uintptr_t)ptr);
  if (hc_likely(e != NULL)) {
    uintptr_t info = __atomic_load_n(&e->info, __ATOMIC_RELAXED);
    unsigned cls = (unsigned)(info & HC_PM_CLASS_MASK);
    if (hc_likely(cls != 0)) {
      hc_tcache_t *tc = hci_tc;
      hc_tc_list_t *l = &tc->lists[cls];
      uintptr_t off = (uintptr_t)ptr - (info & ~HC_PM_CLASS_MASK);
      if (hc_likely(l->len - 1 < l->lim) && hc_likely(l->head != ptr) &&
          hc_likely(hc_is_object_start(off, &hci_classes[cls]))) {
        *(void **)ptr = l->head;
        l->head = ptr;
        l->len++;
        return;
      }
    }
  }
  hci_free_miss(ptr, ra);
}

#endif
