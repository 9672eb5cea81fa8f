/* alloc_inline.h - the malloc and free fast paths, inlined into every
 * exported entry point of override.c.
 *
 * malloc: size -> list (direct[] up to 1 KiB, the class table above),
 * pop the thread cache list, charge the sampler, decode and check the
 * link, clear the free mark.  free: pagemap -> class (0 = large/foreign:
 * slow path), check the capacity, that the pointer is an object start
 * without the free mark (double free, free_list.h) and that our cache owns
 * its span (remote.c), push.  No locks, no atomics, no "initialised?"
 * tests: a
 * thread without a cache points at the empty cache, whose NULL heads and
 * zero capacities send it to the slow paths (thread_cache.c). */
#ifndef HC_ALLOC_INLINE_H
#define HC_ALLOC_INLINE_H

#include "free_list.h"
#include "hc_internal.h"

#define HC_SLOW_SAMPLE_CHARGED 1 /* the fast path already subtracted the size from sample_left */

void *hci_alloc_slow(size_t size, uintptr_t ra, int flags) hc_noinline;
void hci_free_slow(void *p, uintptr_t ra) hc_noinline;
void hci_free_miss(void *p, uintptr_t ra) hc_noinline;

#define HC_RA() ((uintptr_t)__builtin_return_address(0))

/* Code-shape helpers for the fast paths (no effect on what they compute).
 * hc_opaque: the compiler forgets where v came from, so it does not
 * rewrite a + b - c into a longer sequence.  hc_in_ret_reg: p is loaded
 * straight into the return register (x86-64: rax), saving the final move. */
static inline uintptr_t hc_opaque(uintptr_t v) {
  __asm__("" : "+r"(v));
  return v;
}
static inline void *hc_in_ret_reg(void *p) {
#if defined(__x86_64__)
  __asm__("" : "+a"(p));
#endif
  return p;
}

static inline __attribute__((always_inline)) void *hc_malloc_fast(size_t size, uintptr_t ra) {
  hc_tcache_t *tc = hci_tc;
  hc_tc_list_t *l;
  /* Up to 1 KiB one load (direct[size]); larger small sizes by the class
   * table, a branch the compiler puts out of the way. */
  if (hc_likely(size <= HC_TC_DIRECT_MAX)) l = (hc_tc_list_t *)((char *)tc + hci_tc_free(tc)->direct[size]);
  else if (size <= HC_MAX_SMALL) l = &hci_tc_free(tc)->lists[hci_size_class(size)];
  else return hci_alloc_slow(size, ra, 0);
  void *p = hc_in_ret_reg(l->head);
  if (hc_likely(p != NULL)) {
    if (hc_unlikely((hci_tc_sampler(tc)->left -= (int64_t)size) < 0))
      return hci_alloc_slow(size, ra, HC_SLOW_SAMPLE_CHARGED);
    /* The link, decoded and checked (free_list.h), and the free mark cleared. */
    uintptr_t next = *(uintptr_t *)p ^ hci_fl.key;
    if (hc_unlikely(hc_fl_bad(next))) return hci_fl_corrupt_fast(p, ra);
    hc_fl_take(p);
    l->head = (void *)next;
    l->len--;
    return p;
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

/* The same test in one multiply, rotate and compare, with the class's
 * numbers in the thread-cache list (hc_tc_list_t): off = k * size + r
 * gives off * recip = k * 2^48 + k * e + r * recip, e = size * recip -
 * 2^48 < size.  For r = 0 the rotation puts k * e (< 2^18) above k: the
 * value k * (e * 2^16 + 1) grows with k, so "k < objs" is "below
 * objs * (e * 2^16 + 1)" (start_lim).  For r != 0 the low 48 bits are at
 * least 2^30, so the rotated value is at least 2^46, above every limit.
 * tests/test_size_classes.c checks every offset of every class. */
static inline uint64_t hc_start_lim(const hc_class_info_t *ci) {
  if (!ci->size) return 0;
  uint64_t e = (uint64_t)ci->size * ci->recip - ((uint64_t)1 << 48);
  return (uint64_t)ci->objs * ((e << 16) + 1);
}
static inline bool hc_tc_is_start(uintptr_t off, uint64_t recip, uint64_t start_lim) {
  uint64_t m = off * recip;
  return ((m << 16) | (m >> 48)) < start_lim;
}

static inline __attribute__((always_inline)) void hc_free_fast(void *ptr, uintptr_t ra) {
  const hc_pm_entry_t *e = hci_pagemap_find((uintptr_t)ptr);
  if (hc_likely(e != NULL)) {
    uintptr_t info = __atomic_load_n(&e->info, __ATOMIC_RELAXED);
    /* Class 0 (not a small-object page) needs no test of its own: every
     * cache's lists[0] has lim 0, so the capacity test sends it on. */
    size_t cls = (uint8_t)info;
    hc_tcache_t *tc = hci_tc;
    hc_tc_list_t *l = &hci_tc_free(tc)->lists[cls];
    uintptr_t off = hc_opaque((uintptr_t)ptr + cls) - info; /* lea + sub (gcc: mov, sub, add) */
    /* Room in the list, an object start (so both words are ours), no free
     * mark (a marked one is a double free, reported by the slow path), and
     * a span with no owner or us as its owner (remote.c). */
    uintptr_t owner = __atomic_load_n(&e->owner, __ATOMIC_RELAXED);
    if (hc_likely(l->len < l->lim) && hc_likely(hc_tc_is_start(off, l->recip, l->start_lim)) &&
        hc_likely(!hc_fl_is_free(ptr)) && hc_likely(owner == 0 || owner == (uintptr_t)tc)) {
      hc_fl_link(ptr, l->head);
      l->head = ptr;
      l->len++;
      return;
    }
  }
  hci_free_miss(ptr, ra);
}

#endif
