/* alloc_inline.h - the malloc and free fast paths, inlined into every
 * exported entry point of override.c.
 *
 * malloc: size -> list (direct[] up to 1 KiB, the class table above),
 * test the head (an object address: not the end, not a bad link), charge
 * the sampler, pop, decode the link (checked by the next pop: free_list.h),
 * prefetch the next object, clear the free mark.  free: pagemap entry -> list and span start
 * (lists[0] for anything but a small object's page: slow path), check
 * that the pointer is an object start, that our cache owns its span
 * (remote.c), that it has no free mark (double free, free_list.h) and the
 * room, push.  No locks, no atomics, no "initialised?"
 * tests: a
 * thread without a cache points at the empty cache, whose NULL heads and
 * zero capacities send it to the slow paths (thread_cache.c). */
#ifndef HC_ALLOC_INLINE_H
#define HC_ALLOC_INLINE_H

#include "free_list.h"
#include "hc_internal.h"

#define HC_SLOW_SAMPLE_CHARGED 1 /* the fast path already subtracted the size from sample_left */
#define HC_SLOW_ZERO 2           /* calloc: the block is zeroed */

void *hci_alloc_slow(size_t size, uintptr_t ra, int flags) hc_noinline;
/* operator new's slow path (runtime/override.c): hci_alloc_slow reached by
 * a tail call as malloc's is, so that its frame record holds the program's
 * return address, and fail(size, ra) called when it gives NULL (the
 * new-handler loop, std::bad_alloc).  operator new used to call
 * hci_alloc_slow and then fail itself: a frameless caller with ra in rbp,
 * whose checked captures had to find malloc's caller by a frame-record
 * search and a CFI step (stacks/unwind_dwarf.c's caller_regs_cfi). */
typedef void *(*hc_alloc_fail_fn)(size_t size, size_t align, uintptr_t ra);
void *hci_alloc_slow_or(size_t size, int flags, hc_alloc_fail_fn fail) hc_noinline;
/* The aligned operator new forms' allocation when malloc's fast path
 * cannot serve it (hc_aligned_fast_size: an alignment above 1 KiB, a large
 * block, checker mode, hooks), reached by a tail call as
 * hci_alloc_slow_or, fail(size, align, ra) called when it gives NULL.
 * They used to call new_slow, which kept ra in rbp: every checked capture
 * through them took caller_regs_cfi's CFI step. */
void *hci_memalign_slow_or(size_t size, size_t align, hc_alloc_fail_fn fail) hc_noinline;
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

/* Loads after it stay after the branch before it: the compiler may hoist
 * a load the program would make anyway above a test, and the CPU then
 * makes it whichever way the test goes. */
static inline void hc_after_branch(void) { __asm__ volatile("" ::: "memory"); }

/* A prefetch of a for reading, placed where it is written: on x86-64 an
 * asm the compiler does not move (it schedules __builtin_prefetch freely). */
static inline void hc_prefetch(uintptr_t a) {
#if defined(__x86_64__)
  __asm__ volatile("prefetcht0 (%0)" ::"r"(a));
#else
  __builtin_prefetch((const void *)a);
#endif
}

/* (*left -= size) <= 0, as one subtraction from memory and its flags (gcc
 * loads, subtracts, stores and tests for "<= 0": 5 instructions). */
static inline bool hc_sample_due(int64_t *left, size_t size) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool due;
  __asm__("subq %2, %0" : "+m"(*left), "=@ccle"(due) : "r"(size));
  return due;
#else
  return (*left -= (int64_t)size) <= 0;
#endif
}

/* The slow path of hc_malloc_fast_or: fail is a constant where it is inlined. */
#define HC_ALLOC_SLOW(size, ra, flags, fail) ((fail) ? hci_alloc_slow_or(size, flags, fail) : hci_alloc_slow(size, ra, flags))

/* fail: NULL (malloc: NULL on failure), or what operator new does when
 * the slow path fails (hci_alloc_slow_or; ra is then 0).  zero (a
 * constant): calloc's, the block zeroed here or by the slow path. */
static inline __attribute__((always_inline)) void *hc_alloc_fast(size_t size, uintptr_t ra, hc_alloc_fail_fn fail,
                                                                 bool zero) {
  const int zf = zero ? HC_SLOW_ZERO : 0;
  hc_tcache_t *tc = hci_tc;
  hc_tc_list_t *l;
  /* Up to 1 KiB one load (direct[size]); larger small sizes by the class
   * table, a branch the compiler puts out of the way. */
  if (hc_likely(size <= HC_TC_DIRECT_MAX)) l = (hc_tc_list_t *)((char *)tc + hci_tc_free(tc)->direct[size]);
  else if (size <= HC_MAX_SMALL) l = &hci_tc_free(tc)->lists[hci_size_class(size)];
  else return HC_ALLOC_SLOW(size, ra, zf, fail);
  /* One test of the head against the bad bits stops at the end of the
   * list (HC_FL_END) and at a link the pop before this one decoded from an
   * object overwritten after its free: the head is checked here, before it
   * is followed, instead of there (2 instructions less; the slow path
   * reports it, hc_tc_first).  The empty cache's head is its smp.left,
   * 0 or negative: 0 passes, and the subtraction from that same word then
   * leaves it <= 0 (thread_cache.c), hence "<= 0" below (a real cache
   * whose sampler reaches exactly 0 takes the slow path, which does not
   * sample it: hci_sampler_charge). */
  void *p = hc_in_ret_reg(l->head);
  if (hc_likely(!hc_fl_bad((uintptr_t)p))) {
    if (hc_unlikely(hc_sample_due(&hci_tc_sampler(tc)->left, size)))
      return HC_ALLOC_SLOW(size, ra, HC_SLOW_SAMPLE_CHARGED | zf, fail);
    /* The link decoded (checked at the next pop), the free mark cleared
     * after the head has moved on: a signal handler that interrupts this pop
     * and takes and frees the same object (malloc in a handler: not
     * async-signal-safe, yet common) would leave it marked free, and its
     * next free would abort as a double free (glibc's order of stores). */
    uintptr_t next = hc_fl_word(p);
    l->head = (void *)next;
    l->room++;
    atomic_signal_fence(memory_order_seq_cst);
    hc_fl_take(p);
    /* The next object is this list's next malloc: fetched now, it is in
     * cache by then.  Pushed long ago or refilled from central, it was
     * cold (bench_pairs: a quarter of the pops missed L1 on the link,
     * cachegrind; docs/performance.md "Session 19 (lead)").  A prefetch
     * never faults: the end of the list (HC_FL_END) or an overwritten
     * link is fetched for nothing and never followed unchecked.  Last,
     * after the mark's clear: issued before it, the hardened pair loops
     * ran 2-6 % slower (docs/performance.md, "Session 27 (lead)"); the
     * fence and the asm keep the compiler from moving it back up (it
     * does with __builtin_prefetch). */
    atomic_signal_fence(memory_order_seq_cst);
    hc_prefetch(next);
    if (zero) __builtin_memset(p, 0, size);
    return p;
  }
  return HC_ALLOC_SLOW(size, ra, zf, fail);
}

static inline __attribute__((always_inline)) void *hc_malloc_fast_or(size_t size, uintptr_t ra, hc_alloc_fail_fn fail) {
  return hc_alloc_fast(size, ra, fail, false);
}

static inline __attribute__((always_inline)) void *hc_malloc_fast(size_t size, uintptr_t ra) {
  return hc_alloc_fast(size, ra, NULL, false);
}

/* calloc's fast path, size the product already checked: malloc's, then
 * the block zeroed (it was alloc_object's whole way, ~105 instructions
 * before the memset; python3 calls it 40 000 times a second). */
static inline __attribute__((always_inline)) void *hc_calloc_fast(size_t size, uintptr_t ra) {
  return hc_alloc_fast(size, ra, NULL, true);
}

/* The size malloc's fast path serves an aligned request at (align above
 * 16), 0 when it cannot (also for an align that is not a power of two,
 * which only operator new lets through):
 * a small block of an alignment up to 1 KiB is the size rounded up to a
 * multiple of it, when that size's class is a multiple too (its objects
 * are then aligned: spans start on pages), as gperftools' memalign (the
 * profile sees the rounded size there too).  Not in checker mode, whose
 * block takes a byte more (room_for), nor with hooks, which are told the
 * size asked for.  The memalign family and the aligned operator new took
 * alloc_object's whole way: posix_memalign(64)+free 219 instructions,
 * tcmalloc_minimal 113 (docs/performance.md, "Session 21 (lead)"). */
static inline size_t hc_aligned_fast_size(size_t size, size_t align) {
  if (size > HC_MAX_SMALL || align > HC_TC_DIRECT_MAX || (align & (align - 1))) return 0;
  size_t up = (size + align - 1) & ~(align - 1);
  if (up <= HC_MAX_SMALL && !(hci_record_all | hci_hooks_on) && (hci_classes[hci_size_class(up)].size & (align - 1)) == 0)
    return up;
  return 0;
}

/* The first object of thread-cache list l, checked: NULL when the list is
 * empty.  Every reader of a head but the malloc fast path comes here: the
 * fast path leaves the link it decodes unchecked until the next pop, so a
 * head may be a link overwritten after its object's free (reported, with
 * the class's size and ra, never followed). */
static inline void *hc_tc_first(const hc_tc_list_t *l, size_t size, uintptr_t ra) {
  uintptr_t h = (uintptr_t)l->head;
  if (hc_unlikely(hc_fl_bad(h))) {
    if (h == HC_FL_END) return NULL;
    hci_fl_corrupt_head(h, size, ra);
  }
  return (void *)h;
}

/* Sets the head of thread-cache list l from a link read with hc_fl_next
 * (NULL at the end). */
static inline void hc_tc_set_first(hc_tc_list_t *l, void *p) { l->head = p ? p : (void *)HC_FL_END; }

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

/* --*room >= 0, as one subtraction from memory and the sign flag (gcc
 * loads, subtracts, stores and tests: 5 instructions). */
static inline bool hc_room_take(int32_t *room) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool neg;
  __asm__("subl $1, %0" : "+m"(*room), "=@ccs"(neg));
  return !neg;
#else
  return --*room >= 0;
#endif
}

/* Pushes p (free) onto list l, which has room (l->room > 0): the slow
 * paths' push; the free fast path takes the room first (hc_room_take). */
static inline void hc_tc_list_push(hc_tc_list_t *l, void *p) {
  hc_fl_link_head(p, l->head);
  l->head = p;
  l->room--;
}

/* The free fast path's pagemap lookup (hci_pagemap_fast_entry): from the
 * fast entry of ptr's page (8 bytes: 8 pages a cache line), the byte
 * offset of its class's list in a cache (lofs), ptr's offset in its span
 * (off, from the low 32 bits of both) and the tag of the span's owner
 * (hci_owner_tag).  False when ptr is above the address space.  On x86-64
 * in assembly: the compiler forms the entry's address (an add and a lea)
 * and loads the root word before adding it; here the root word is added
 * from memory and the entry's fields are loaded at base + offset + field:
 * 2 instructions less. */
static inline __attribute__((always_inline)) bool hc_pm_free_lookup(const void *ptr, uintptr_t *lofs, uintptr_t *off,
                                                                    uintptr_t *otag) {
  uintptr_t a = (uintptr_t)ptr, root = a >> (HC_PAGE_SHIFT + HC_PM_LEAF_BITS);
  if (hc_unlikely(root >= HC_PM_ROOT_LEN)) return false;
#if defined(__x86_64__)
  uintptr_t eo;
  _Static_assert(HC_PAGE_SHIFT - 3 == 10 && ((HC_PM_LEAF_LEN - 1) << 3) == 0x7fff8, "the constants below");
  __asm__("mov %[a], %[eo]\n\t"
          "shr $10, %[eo]\n\t"
          "and $0x7fff8, %k[eo]\n\t"
          "add (%[b],%[r],8), %[eo]\n\t"
          "movzwl %c[flofs](%[b],%[eo]), %k[lofs]\n\t"
          "mov %k[a], %k[off]\n\t"
          "sub %c[fstart](%[b],%[eo]), %k[off]\n\t"
          "movzwl %c[ftag](%[b],%[eo]), %k[tag]"
          : [eo] "=&r"(eo), [lofs] "=&r"(*lofs), [off] "=&r"(*off), [tag] "=r"(*otag)
          : [b] "r"(&hci_pagemap), "m"(hci_pagemap), [a] "r"(a), [r] "r"(root),
            [flofs] "i"(offsetof(hc_pagemap_t, zfast) + offsetof(hc_pm_fast_t, lofs)),
            [fstart] "i"(offsetof(hc_pagemap_t, zfast) + offsetof(hc_pm_fast_t, start_lo)),
            [ftag] "i"(offsetof(hc_pagemap_t, zfast) + offsetof(hc_pm_fast_t, otag))
          : "cc");
#else
  const hc_pm_fast_t *e = hci_pagemap_fast_entry(a);
  *lofs = e->lofs;
  *off = (uint32_t)((uint32_t)a - e->start_lo);
  *otag = __atomic_load_n(&e->otag, __ATOMIC_RELAXED);
#endif
  return true;
}

static inline __attribute__((always_inline)) void hc_free_fast(void *ptr, uintptr_t ra) {
  uintptr_t lofs, off, otag;
  if (hc_likely(hc_pm_free_lookup(ptr, &lofs, &off, &otag))) {
    /* The entry names the class's list (lofs) and the span's start (plain
     * loads: no thread writes the entry of a page holding an object that
     * is ours to free).  A page that is not a small object's (no leaf,
     * large, free) has both 0: lists[0], whose start_lim 0 fails every
     * offset, so the class needs no test of its own. */
    hc_tcache_t *tc = hci_tc;
    hc_tc_list_t *l = (hc_tc_list_t *)((char *)hci_tc_free(tc)->lists + lofs);
    uintptr_t k = hc_fl_key(); /* one load for the mark's test and the link */
    /* An object start (so both words are ours; start_lim 0 also stops
     * the empty cache and switched-off caches here, before anything is
     * written), a span with no owner or us as its owner (remote.c; by
     * tag, one AND: a tag with no bit outside ours is 0 or ours,
     * hci_owner_tag; hci_free_miss reads the owner word when the tags
     * differ), no free mark (a marked one is a double free, reported by
     * the slow path), and room in the list: one subtraction, undone when
     * there was none.  The mark is read after the owner's test, never
     * before (hc_after_branch: gcc moved it up): a remote free goes to
     * the slow path without reading the object, which asks for its line
     * to write first (hc_fl_will_mark). */
    if (hc_likely(hc_tc_is_start(off, l->recip, l->start_lim)) && hc_likely((otag & hci_tc_free(tc)->notag) == 0)) {
      hc_after_branch();
      if (hc_likely(!hc_fl_is_free_k(ptr, k))) {
        if (hc_likely(hc_room_take(&l->room))) {
          hc_fl_link_head_k(ptr, l->head, k);
          l->head = ptr;
          return;
        }
        l->room++;
      }
    }
  }
  hci_free_miss(ptr, ra);
}

#endif
