/* hc_internal.h - the allocator layer's hidden interface (allocator/).
 *
 * Prototypes are grouped by the .c file that defines them.  The allocator
 * sees only base/ (hc_base.h) and stacks/ (hc_stacks.h): its include path
 * names nothing above it (meson.build), and layers above reach it through
 * this header, the start-up registration (HC_STARTUP) and the sample
 * listener (hci_alloc_set_sample_listener), never the other way round.
 * Everything here has hidden visibility; only include/heapcheck.h and the
 * malloc family are exported.  The rules of every module are in hc_base.h.
 */
#ifndef HC_INTERNAL_H
#define HC_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hc_base.h"
#include "hc_stacks.h"
#include "hc_types.h"
#include "hc_heap_view.h"

/* ======================= page_heap.c: span records ======================= */
/* A zeroed span record with its id (hci_heap_span_id), or NULL; a deleted
 * record is kept, with its id, for the next hci_span_new, so ids stay below
 * the most records ever alive at once.  requires: page-heap lock. */
hc_span_t *hci_span_new(void);
void hci_span_delete(hc_span_t *s);

/* ======================= size_classes.c ======================= */
extern const hc_class_info_t hci_classes[HC_NUM_CLASSES];
extern const uint8_t hci_class_lookup[HC_CLASS_LOOKUP_LEN];
/* requires: size <= HC_MAX_SMALL. */
static inline size_t hci_class_index(size_t size) {
  return size <= 1024 ? (size + 15) >> 4 : (size + 127 + (56 << 7)) >> 7;
}
static inline unsigned hci_size_class(size_t size) { return hci_class_lookup[hci_class_index(size)]; }

/* ======================= pagemap.c ======================= */
/* page number -> {span, start, owner, cls, lofs}.  start, cls and lofs (the
 * class's list offset in a thread cache) are set for pages of SMALL spans
 * and 0 for every other page: the free fast path finds the object start and
 * its list from the entry without touching the span.  Every page of every span, free
 * or in use, maps to its span.  Readers take no lock; writers hold the
 * page-heap lock.  Leaves are never freed. */
/* hc_pm_entry_t, hci_pagemap, hci_pagemap_find: hc_heap_view.h. */
static inline hc_span_t *hci_pagemap_span(uintptr_t addr) {
  const hc_pm_entry_t *e = hci_pagemap_find(addr);
  return e ? (hc_span_t *)__atomic_load_n(&e->span, __ATOMIC_RELAXED) : NULL;
}
/* Size class of the page holding addr (0: not a small-object page). */
static inline unsigned hci_pagemap_class(uintptr_t addr) {
  const hc_pm_entry_t *e = hci_pagemap_find(addr);
  return e ? __atomic_load_n(&e->cls, __ATOMIC_RELAXED) : 0;
}
/* The class whose entry of kib (HC_KIB_SLOTS counts, 16-byte aligned)
 * is largest, the lowest on ties; 0 when none is above 0 (kib_max.c: with
 * vector registers, counts only). */
unsigned hci_kib_max_class(const uint32_t *kib);
/* Map pages [first, first + n) to span s with class cls.  Returns false when
 * a leaf cannot be allocated.  requires: page-heap lock.  A SMALL span's
 * fast entries name the class (lofs) on its first page only: the others
 * are closed to the free fast path until carving reaches them
 * (hci_pagemap_open). */
bool hci_pagemap_set(uintptr_t first_page, size_t n, hc_span_t *s, unsigned cls);
/* Opens pages [first, end) of SMALL span s to the free fast path: their
 * fast entries get the class's lofs.  A page is opened when the first
 * object that starts in it is carved (central.c, carve), so that a free of
 * a never handed out object in a page carving has not reached goes to the
 * slow path, which finds it past the span's `opened` (alloc.c,
 * free_small) instead of pushing it: it would have been handed out twice,
 * once from the list and once when carved.  requires: the span's central
 * lock, or the span not yet published (a new span). */
void hci_pagemap_open(const hc_span_t *s, uintptr_t first_page, uintptr_t end_page);
/* Map pages [first, first + n), which belong to a free or large span (their
 * entries: the span word, every other field 0, no fast entry), to span s,
 * free or large too: only the span word changes (the page heap's splits and
 * merges; 1 store a page, not a whole entry).  requires: page-heap lock,
 * the pages' leaves exist. */
void hci_pagemap_relabel(uintptr_t first_page, size_t n, hc_span_t *s);
/* A pagemap entry's lofs for class cls: its list's byte offset in lists[]. */
static inline uint32_t hci_pagemap_lofs(unsigned cls) { return (uint32_t)(cls * sizeof(hc_tc_list_t)); }
/* The class a lofs names, back (0: not a small-object page's). */
static inline unsigned hci_lofs_class(uintptr_t lofs) { return (unsigned)(lofs / sizeof(hc_tc_list_t)); }
_Static_assert(HC_NUM_CLASSES * sizeof(hc_tc_list_t) <= UINT16_MAX, "lofs fits a fast entry's 16 bits");
/* The 16-bit tag of a thread cache in the pagemap's fast entries (the
 * owner word's stand-in on the free fast path; hc_pm_fast_t), also kept in
 * the cache (hc_tc_free_t.otag): 0 for no owner.  Two caches may share a
 * tag, which only keeps some frees in the freeing cache.
 *
 * A tag is a word with exactly 8 of its 16 bits set (one of C(16, 8) =
 * 12870, picked by a hash of the owner), so no tag has its bits inside
 * another's: "the page's tag has no bit outside ours" holds for 0 and our
 * own tag only, and the free fast path tests both with one AND against
 * ~ours (hc_tc_free_t.notag) instead of two data-dependent branches
 * (owned and unowned classes mixed at random mispredicted one free in
 * twenty on bench_pairs).  The hash's rank is unranked in the
 * combinatorial number system: bit b is set when the rank is at least
 * C(b, k), the words whose k bits all lie below b. */
static inline uint16_t hci_owner_tag(const void *owner) {
  if (!owner) return 0;
  static const uint16_t binom[16][9] = {
#define HC_B(n) {1, n, n * (n - 1) / 2, n * (n - 1) * (n - 2) / 6, n * (n - 1) * (n - 2) * (n - 3) / 24, \
                 n * (n - 1) * (n - 2) * (n - 3) * (n - 4) / 120, n * (n - 1) * (n - 2) * (n - 3) * (n - 4) * (n - 5) / 720, \
                 n * (n - 1) * (n - 2) * (n - 3) * (n - 4) * (n - 5) * (n - 6) / 5040, \
                 n * (n - 1) * (n - 2) * (n - 3) * (n - 4) * (n - 5) * (n - 6) * (n - 7) / 40320}
      HC_B(0), HC_B(1), HC_B(2), HC_B(3), HC_B(4), HC_B(5), HC_B(6), HC_B(7),
      HC_B(8), HC_B(9), HC_B(10), HC_B(11), HC_B(12), HC_B(13), HC_B(14), HC_B(15),
#undef HC_B
  };
  uint32_t r = (uint32_t)(((uintptr_t)owner * 0x9E3779B97F4A7C15ull) >> 32) % 12870u; /* C(16, 8) */
  uint16_t tag = 0;
  for (unsigned b = 16, k = 8; k > 0;) {
    b--;
    if (r >= binom[b][k]) {
      r -= binom[b][k];
      tag |= (uint16_t)(1u << b);
      k--;
    }
  }
  return tag;
}
/* The owner word (and the fast entries' tag) of every page of SMALL span s (remote.c): written under
 * the span's central lock, read by the free paths with no lock (a stale
 * owner only sends a free the other way, both correct).  Pages keep the
 * owner 0 that hci_pagemap_set wrote until the span's first objects go
 * to a thread cache. */
void hci_pagemap_set_owner(const hc_span_t *s, const void *owner);
/* Make sure leaves exist for the range, writable there (hci_pagemap_set
 * calls it; requires the page-heap lock). */
bool hci_pagemap_ensure(uintptr_t first_page, size_t n);
/* At start-up: the zero leaf made read-only. */
void hci_pagemap_init(void);
/* fn for every leaf in address order, with the entries [lo, hi) of it that
 * were ever written (the whole leaf when that is not known); requires the
 * page-heap lock. */
typedef void (*hci_pm_leaf_fn)(void *ctx, size_t root, hc_pm_entry_t *leaf, size_t lo, size_t hi);
void hci_pagemap_for_each_leaf(hci_pm_leaf_fn fn, void *ctx);

/* ======================= span lists (page_heap.c, central.c) ======================= */
/* Circular doubly linked lists of spans through next/prev, with a sentinel.
 * The caller holds the lock that guards the list. */
static inline void hci_span_list_init(hc_span_t *h) { h->next = h->prev = h; }
static inline bool hci_span_list_empty(const hc_span_t *h) { return h->next == h; }
static inline void hci_span_list_remove(hc_span_t *s) {
  s->prev->next = s->next;
  s->next->prev = s->prev;
  s->next = s->prev = NULL;
}
static inline void hci_span_list_push(hc_span_t *h, hc_span_t *s) {
  s->next = h->next;
  s->prev = h;
  h->next->prev = s;
  h->next = s;
}

/* ======================= page_heap.c ======================= */
extern hc_pageheap_t hci_pageheap;
/* A span of npages pages in state LARGE with no class (caller sets fields and
 * pagemap class).  NULL on failure.  Takes the page-heap lock. */
hc_span_t *hci_ph_alloc(size_t npages);
/* Same, with span->start a multiple of align (a power of two > page size). */
hc_span_t *hci_ph_alloc_aligned(size_t npages, size_t align);
/* Returns a span to the page heap, coalescing with free neighbours. */
void hci_ph_free(hc_span_t *s);
/* Grows the in-use LARGE span s to npages in place, taking the pages from
 * the free span right after it.  False (s unchanged) when that span is not
 * free or too short.  realloc's growth path: no copy, no second span. */
bool hci_ph_grow(hc_span_t *s, size_t npages);
/* The same for the SMALL span s of a one-object class, which becomes class
 * cls (its pages' pagemap entries and s->cls, in one critical section). */
bool hci_ph_grow_class(hc_span_t *s, size_t npages, unsigned cls);
void hci_ph_reserve(void); /* the first growth, at start-up (hci_alloc_reserve_heap) */
/* Same with the lock held; s is not counted in use (growth, release). */
void hci_ph_free_locked(hc_span_t *s);
/* A span of npages pages made SMALL of class cls (cls != 0): its state,
 * class and every page's pagemap entry, nothing carved, records (checker
 * mode's, or NULL) as its objmeta; and an allocated SMALL span made LARGE
 * with no class and given back.  Each in one critical section of the
 * page-heap lock: a span's transitions took it twice (hci_ph_alloc, then
 * the class; the class cleared, then hci_ph_free), four page-heap locks
 * per span, on random_live ~9 000 spans in 340 000 replacements. */
hc_span_t *hci_ph_alloc_small(size_t npages, unsigned cls, hc_objmeta_t *records);
void hci_ph_free_small(hc_span_t *s);
/* The heap grows from fn instead of mmap (gperftools' SysAllocator); NULL
 * restores mmap.  fn(ctx, size, &actual, align) returns size bytes or more
 * (actual), aligned, or NULL; it runs under the page-heap lock. */
typedef void *(*hci_sys_alloc_fn)(void *ctx, size_t size, size_t *actual, size_t align);
void hci_ph_set_sys_alloc(hci_sys_alloc_fn fn, void *ctx);
/* tcmalloc.heap_limit_mb (in bytes, 0 = none: the heap fails to grow past
 * it once every free page is back with the OS) and
 * tcmalloc.aggressive_memory_decommit (freed pages go back at once). */
void hci_ph_set_limits(size_t limit_bytes, bool aggressive_decommit);
void hci_ph_get_limits(size_t *limit_bytes, bool *aggressive_decommit);
/* fn(bytes, stack id) after each growth of the heap from the OS, with no
 * allocator lock held (the profiler's heap-growth stacks).  Set at start-up. */
typedef void (*hci_growth_fn)(size_t bytes, uint32_t stack_id);
void hci_ph_set_growth_listener(hci_growth_fn fn);
/* Gives up to max_bytes of free committed pages back to the OS (0 = all). */
size_t hci_ph_release(size_t max_bytes);
/* The most committed free bytes the page heap keeps now: the recent peak
 * in use - in use + HC_RELEASE_SLACK (page_heap.c, "release by demand").
 * Takes the page-heap lock. */
size_t hci_ph_release_threshold(void);
/* Ends the demand epoch when its time is up and releases what demand no
 * longer covers; cheap when it is not (one clock read).  Called from the
 * thread caches' refills, so a program that only allocates small objects
 * gives back idle pages too. */
void hci_ph_tick(void);
/* Epoch length in ns (0 = HC_RELEASE_DELAY_NS); for tests. */
void hci_ph_set_release_delay(uint64_t ns);
/* As if two epochs passed without a call and then a call came: the demand
 * becomes what is in use now, and what it no longer covers is released.
 * For tests. */
void hci_ph_forget_demand(void);

/* ======================= central.c ======================= */
extern hc_central_t hci_central[HC_NUM_CLASSES];
/* Transfer cache: whole lists handed between threads; [cls][0, nchains)
 * are used, guarded by hci_central[cls].lock. */
extern hc_chain_t hci_transfer_slots[HC_NUM_CLASSES][HC_TRANSFER_SLOTS];
/* The CPU each was handed over on, plus 1 (0: unknown); same guard. */
extern uint16_t hci_transfer_cpu[HC_NUM_CLASSES][HC_TRANSFER_SLOTS];
/* Takes a chain of objects of class cls: a whole chain from a transfer slot
 * when there is one (any length), else up to `want` objects from spans,
 * which become owner's (a thread cache, or NULL: remote.c).
 * Returns false only when memory is exhausted. */
bool hci_central_remove(unsigned cls, uint32_t want, hc_chain_t *out, void *owner);
/* The same, but when no span has a free object and a new span is needed,
 * up to max(want, fresh) of its objects (a caller that has room for them:
 * a thread cache's capacity) are carved for the caller before the span is
 * published, without the lock. */
bool hci_central_remove_fresh(unsigned cls, uint32_t want, uint32_t fresh, hc_chain_t *out, void *owner);
/* The in-use span of a one-object class `from` grows in place into the
 * free pages after it and becomes class `to` (one object too): realloc's
 * growth without a copy.  False (nothing changed) when those pages are
 * not free. */
bool hci_central_regrow(hc_span_t *s, unsigned from, unsigned to);
/* Takes back a chain (any length) of objects of class cls. */
void hci_central_insert(unsigned cls, const hc_chain_t *chain);
/* Number of objects held in transfer slots and span free lists (stats). */
size_t hci_central_free_objects(unsigned cls);
/* Gives every transfer-slot batch back to its spans (malloc_trim). */
void hci_central_drain(void);
/* Bytes held in transfer slots, all classes together (bounded by
 * HC_SLOT_BYTES_TOTAL_MAX; read by tests and stats). */
size_t hci_central_slot_bytes(void);

/* ======================= thread_cache.c ======================= */
extern HC_TLS hc_tcache_t *hci_tc;           /* never NULL: the static empty cache until first use */
extern hc_tcache_t hci_tc_empty;             /* shared, all lists empty, all max 0 */
extern hci_lock_t hci_tc_registry_lock;
extern hc_tcache_t *hci_tc_registry;         /* live caches; guarded by hci_tc_registry_lock */
/* The calling thread's cache, created on first use; NULL while the thread is
 * exiting (after its cache was flushed) or when out of memory.  Inline: the
 * checker's slow paths ask for it on every malloc and free, and a call
 * paid a frame and three saved registers for one load and a test. */
hc_tcache_t *hci_tc_adopt(void) hc_noinline;
static inline hc_tcache_t *hci_tc_get(void) {
  hc_tcache_t *tc = hci_tc;
  return hc_likely(tc->is_real) ? tc : hci_tc_adopt();
}
/* Slow paths of the fast paths in alloc.c. */
void *hci_tc_refill(hc_tcache_t *tc, unsigned cls);  /* requires: list cls empty */
void hci_tc_push(hc_tcache_t *tc, unsigned cls, void *p);
/* The scavenger's clock (thread_cache.c): tc allocated about `bytes` since
 * the last tick (a sampled allocation); every HC_TC_SCAVENGE_BYTES, while
 * two caches or more are live, half of each list's low-water mark goes
 * back to central. */
void hci_tc_scavenge_tick(hc_tcache_t *tc, uint64_t bytes);
/* Gives every object of the cache back to central (thread exit, trim). */
void hci_tc_flush(hc_tcache_t *tc);
/* Switches the free fast path of every live cache on (lists[].start_lim
 * from the class) or off (0: checker mode, malloc hooks). */
void hci_tc_set_fastpath(bool enabled);
/* Bytes in tc's lists and its remote lists (a count for another thread's
 * cache is racy), and in every cache. */
size_t hci_tc_bytes(const hc_tcache_t *tc);
size_t hci_tc_total_bytes(void);
/* Every cache's inboxes (remote.c) to the central lists (malloc_trim,
 * ReleaseFreeMemory); takes the registry lock, central locks inside it. */
void hci_tc_drain_remote(void);
/* tcmalloc.max_total_thread_cache_bytes: what all caches hold together
 * (clamped to [HC_TC_BUDGET_MIN, 1 GiB]); caches adopt it as they grow. */
void hci_tc_set_budget_total(size_t bytes);
size_t hci_tc_budget_total(void);
size_t hci_tc_budget_max(void); /* the most one cache may hold now (HC_TC_HEAP_SHARE) */
size_t hci_tc_count(void);
void hci_tc_fork_child(bool locks_taken);
/* Creates the thread-exit key (called by hci_init). */
void hci_tc_thread_init(void);
/* The owner groups of a thread's state (hc_types.h): a module reaches only
 * its own (test_layers checks it): the free lists (thread_cache.c, alloc.c,
 * alloc_inline.h, heap_verify.c, malloc_ext.c), the sampler's fields
 * (sampler.c), the unwinder memo (alloc.c's stack capture for stacks/) and
 * the checker's fields (alloc_ctl.c on the checker's behalf, read by alloc.c)
 * and checker mode's quarantine batch (quarantine.c). */
static inline hc_tc_free_t *hci_tc_free(hc_tcache_t *tc) { return &tc->fl; }
static inline hc_tc_sampler_t *hci_tc_sampler(hc_tcache_t *tc) { return &tc->smp; }
static inline hc_tc_memo_t *hci_tc_memo(hc_tcache_t *tc) { return &tc->stk; }
static inline hc_tc_chk_t *hci_tc_chk(hc_tcache_t *tc) { return &tc->chk; }
static inline hc_tc_quar_t *hci_tc_quar(hc_tcache_t *tc) { return &tc->qr; }

/* The capacity of class cls in fl: its list's lim, kept by
 * hc_tc_set_lim (thread_cache.c's set_cap, with the byte counts). */
static inline uint32_t hc_tc_cap(const hc_tc_free_t *fl, unsigned cls) { return fl->lists[cls].lim; }
/* Objects on list l, and setters that keep room = lim - length (hc_tc_list_t):
 * the owning thread only. */
static inline uint32_t hc_tc_len(const hc_tc_list_t *l) { return (uint32_t)((int64_t)l->lim - l->room); }
static inline void hc_tc_set_len(hc_tc_list_t *l, uint32_t n) { l->room = (int32_t)((int64_t)l->lim - n); }
static inline void hc_tc_set_lim(hc_tc_list_t *l, uint32_t lim) {
  uint32_t n = hc_tc_len(l);
  l->lim = lim;
  hc_tc_set_len(l, n);
}

/* ======================= remote.c ======================= */
/* p (class cls, not marked free, owned by the live cache owner != tc) goes
 * back to owner: into tc's batch for cls, pushed onto owner's inbox when
 * full or when the next object has another owner. */
void hci_remote_free(hc_tcache_t *tc, hc_tcache_t *owner, unsigned cls, void *p);
/* Takes tc's inbox for cls whole (its head and length; out->tail is not
 * set).  False when it is empty. */
bool hci_remote_collect(hc_tcache_t *tc, unsigned cls, hc_chain_t *out);
/* Pushes every batch of tc to its owner (flush, trim, thread exit). */
void hci_remote_flush(hc_tcache_t *tc);
/* Thread exit: flush, mark tc dead, give its inboxes to central. */
void hci_remote_exit(hc_tcache_t *tc);
/* Gives tc's inboxes to central (any thread: malloc_trim). */
void hci_remote_drain(hc_tcache_t *tc);
/* Objects of class cls in tc's batch and inbox, and bytes in all of them
 * (statistics; racy, never low for inboxes). */
size_t hci_remote_objects(const hc_tcache_t *tc, unsigned cls);
size_t hci_remote_bytes(const hc_tcache_t *tc);

/* ======================= sampler.c ======================= */
extern _Atomic uint64_t hci_sample_interval;  /* mean bytes between samples; 0 = off */
/* Draws the next geometric gap for tc (sets its sampler's left).  Returns
 * the weight the sample just taken stands for. */
void hci_sampler_reset(hc_tcache_t *tc);
uint64_t hci_sampler_next_gap(hc_tcache_t *tc);
void hci_sampler_init(void);
/* Sets the mean sampling interval (0 = off) for every thread: this one
 * redraws, others cut a longer pending gap.  Returns the previous mean.
 * The one writer of other threads' sample_left outside their own paths. */
size_t hci_sampler_set_interval(size_t bytes);
uint64_t hci_sampler_interval(void);
/* This thread's next allocation takes a sample (async-signal-safe; no
 * effect while recording every allocation). */
void hci_sampler_sample_next(void);
/* Puts HC_HOOK_BIAS on (on) or takes it off every live thread's count
 * (malloc_hook.c, with the hook lock held). */
void hci_sampler_hooks_changed(bool on);
/* hci_sampler_charge (the slow path's charge): after malloc_hook.c below. */

/* ======================= alloc.c ======================= */
/* Entry points behind the exported family; ra = the caller's return address
 * (first frame of recorded stacks).  Semantics as glibc's. */
void *hci_malloc_ra(size_t size, uintptr_t ra);
void *hci_calloc_ra(size_t n, size_t size, uintptr_t ra);
void *hci_realloc_ra(void *p, size_t size, uintptr_t ra);
void *hci_memalign_ra(size_t align, size_t size, uintptr_t ra); /* align: power of two */
size_t hci_usable_size(const void *p);
/* The usable size malloc (align <= 16) or memalign would give a request
 * (nallocx, GetEstimatedAllocatedSize): in checker mode the slot it takes,
 * hci_usable_slot's answer; 0 when it would fail. */
size_t hci_alloc_size_for(size_t size, size_t align);
/* gperftools' usable size of a live block (GetAllocatedSize, tc_malloc_size):
 * in checker mode its whole slot, which the block is then sized to. */
size_t hci_usable_slot(void *p);
/* Requested size of a live object (exact in checker mode and for large objects). */
size_t hci_requested_size(const void *p);
/* Recording state. 0 = off; otherwise every allocation records its stack. */
extern int hci_record_all;
extern _Atomic uint16_t hci_epoch;            /* current checker epoch */
/* The live sampled spans (for profiles) and the stash of free sample
 * spans, by their pages, with their lock: every sample and every sampled
 * free touches the lock, the head and one stash list.  Guarded by lock. */
typedef struct hci_samples {
  hci_lock_t lock;
  hc_span_t *head;        /* live sampled spans, doubly linked through snext/sprev, NULL-terminated */
  size_t stash_pages;     /* pages on the stash lists, at most HC_SAMPLE_STASH_PAGES */
  hc_span_t *stash[HC_SAMPLE_STASH_SPAN_PAGES + 1]; /* [n]: free sample spans of n pages (HC_SPAN_STASHED), through next */
} __attribute__((aligned(64))) hci_samples_t;
extern hci_samples_t hci_samples;
/* Free spans kept for sampled objects: give them all back to the page
 * heap (malloc_trim; returns the bytes), and their size (stats). */
size_t hci_sample_stash_drain(void);
size_t hci_sample_stash_bytes(void);
/* Stack id of the current call stack, starting at the frame whose return
 * address is ra (allocator frames dropped). */
uint32_t hci_capture_stack_from(uintptr_t ra);
/* Forgets auto mode's per-caller choice of walk (after the unwind rules
 * changed: a static executable's .eh_frame indexed, hci_unwind_static_index). */
void hci_alloc_forget_walk_hints(void);
/* Frames kept per recorded stack, 1..HC_MAX_STACK_DEPTH (LSan's
 * malloc_context_size); set before the first recorded allocation. */
void hci_set_stack_depth(int depth);
/* Stack id of the allocation this thread is making (its entry point's
 * call site on), for the page heap's growth listener. */
uint32_t hci_alloc_growth_stack(void);

/* ======================= quarantine.c ======================= */
/* Checker mode's quarantine of freed blocks (quarantine.c says why and how).
 * Budget in bytes, 0 = off (the plain allocator); set once, at the checker's
 * start-up, before the program's first free (hci_alloc_set_quarantine). */
extern size_t hci_quarantine_budget;
void hci_quarantine_set(size_t budget);
/* A freed block of `bytes` (its record cleared, its memory zeroed, a large
 * one's span HC_SPAN_STASHED) into tc's batch: false when it was not kept
 * (the caller frees it now).  *out: batches that left the quarantine,
 * oldest first; the caller frees their blocks, then hands the batches to
 * hci_quarantine_recycle. */
bool hci_quarantine_put(hc_tcache_t *tc, void *p, size_t bytes, bool large, hc_qbatch_t **out);
/* tc's batches (unless NULL) to the global FIFO; returns the batches beyond
 * the budget (every one when `all`), as *out above. */
hc_qbatch_t *hci_quarantine_flush(hc_tcache_t *tc, bool all);
void hci_quarantine_recycle(hc_qbatch_t *b);
/* Bytes held in small and in large blocks (the FIFO and every live
 * thread's batch; statistics). */
void hci_quarantine_held(size_t *small, size_t *large);
void hci_quarantine_locks(hci_lock_fn *each);
/* alloc.c: tc's batch to the FIFO and what leaves it freed (thread exit;
 * all: the whole quarantine, to the central lists: malloc_trim and
 * ReleaseFreeMemory). */
void hci_alloc_quarantine_flush(hc_tcache_t *tc, bool all);
/* alloc.c: checker mode, a small-object span going back to the page heap:
 * its carved objects cleared (freed ones still hold their free-list links
 * and marks; the page heap's pages are all zero in checker mode, for the
 * large blocks it carves from them).  Central's free_span. */
void hci_alloc_clear_span(const hc_span_t *s);

/* ======================= startup.c ======================= */
/* Process-wide initialisation, run once on the first allocation or from the
 * library constructor, whichever comes first.  It runs the start-up that a
 * layer above registered with HC_STARTUP (runtime/init.c: the order in
 * which the layers initialise), or only hci_alloc_init when none did (a
 * program linking the allocator alone). */
void hci_init(void);
extern _Atomic int hci_init_state;             /* 0 none, 1 running, 2 done */
static inline void hci_ensure_init(void) {
  if (hc_unlikely(atomic_load_explicit(&hci_init_state, memory_order_acquire) != 2)) hci_init();
}
/* The allocator's (and its stacks') own part of start-up. */
void hci_alloc_init(void);
/* The heap's first growth, made at start-up (runtime/init.c), with the
 * stack of its caller: see alloc.c. */
void hci_alloc_reserve_heap(void);
/* Registers fn as the process start-up: a record in the section hc_startup,
 * which the linker collects (__start_/__stop_hc_startup), so the allocator
 * calls it without naming it.  At most one in the library. */
typedef void (*hci_startup_fn)(void);
#define HC_STARTUP(fn)                                                                     \
  static const hci_startup_fn hc_startup_##fn                                              \
      __attribute__((section("hc_startup"), used, aligned(sizeof(void *)))) = (fn)

/* ======================= walk.c ======================= */
/* Every allocator lock, in the documented order (after the caller's own). */
void hci_lock_all(void);
void hci_unlock_all(void);
/* Each of them to `each`, in that order (fork's handler tries them). */
void hci_allocator_locks(hci_lock_fn *each);
/* The hooks' switch (malloc_hook.c) and ReleaseToSystem's account
 * (malloc_ext.c), taken first by hci_lock_all. */
void hci_hooks_locks(hci_lock_fn *each);
void hci_release_locks(hci_lock_fn *each);
/* The heap view (hci_heap_find, hci_heap_for_each_*, ...): hc_heap_view.h. */
/* Every span, free ones too (heap_verify.c); every allocator lock held. */
void hci_walk_all_spans(void (*fn)(void *ctx, hc_span_t *s), void *ctx);

/* ======================= alloc_ctl.c: setters for the layers above ======================= */
/* Every allocation records its stack from now on, fast paths off (the
 * checker's start-up; once, for good). */
void hci_alloc_set_recording(void);
bool hci_alloc_recording(void);
/* Checker mode's quarantine budget in bytes (quarantine.c; 0 = off): after
 * hci_alloc_set_recording, before the program's first free.  Ignored
 * without recording: the plain allocator never quarantines. */
void hci_alloc_set_quarantine(size_t bytes);
/* The program installed a signal handler (checker/sigaction_watch.c): sampled
 * paths hold signals back from now on (alloc.c, sample_begin). */
void hci_alloc_note_handler(void);
/* Checker mode's table of the last frees (free_history.c), `entries` of
 * them, with the frees' stacks as `stacks` says (HC_FREE_STACKS_*; a
 * free without its stack keeps its caller): after hci_alloc_set_recording,
 * before the program's first free.  False without recording or when the
 * metadata arena refuses. */
bool hci_alloc_set_free_history(size_t entries, int stacks);
/* A new checker epoch (objects allocated from now on carry it). */
uint16_t hci_alloc_next_epoch(void);
/* The calling thread's Disabler nesting: begin is false when the thread has
 * no cache (exiting), end is false without a matching begin. */
bool hci_alloc_disable_begin(void);
int hci_alloc_disable_depth(void);
bool hci_alloc_disable_end(void);
/* Thread pointer (TLS base) of the live thread tid, 0 when unknown.
 * requires: the registry lock (hci_lock_all). */
uintptr_t hci_alloc_thread_tp(int tid);
/* malloc_trim: this thread's cache, transfer slots, sample stash and free
 * pages back; 1 when memory went back to the OS. */
int hci_alloc_trim(void);

/* ======================= stats.c ======================= */
struct hc_stats;
void hci_stats_get(struct hc_stats *out);
void hci_stats_print(int fd);

/* ======================= alloc.c: the sample listener ======================= */
/* What a layer above (the profiler) is told about sampled objects.  Called
 * with these rules:
 *  - on_alloc: a sampled allocation, after its span is linked on
 *    hci_samples.head (weight = the mean interval it was sampled with);
 *    returns the bytes the sample stands for, which the span keeps
 *    (sample_est) and hands to on_free, before its record is cleared.
 *    Never call malloc; take only the listener's own lock (after
 *    hci_samples.lock, before the meta arena).
 *  - after_alloc: after on_alloc, with no allocator lock held; may take
 *    locks of its own and then allocator locks, and write files (no malloc).
 *  - on_free(est): a sampled object is freed; est is what on_alloc returned.
 * Any member may be NULL.  Set once, at start-up, before any sample. */
typedef struct hci_sample_listener {
  uint64_t (*on_alloc)(uint32_t stack_id, size_t size, uint64_t weight);
  void (*after_alloc)(void);
  void (*on_free)(uint64_t est);
} hci_sample_listener_t;
void hci_alloc_set_sample_listener(const hci_sample_listener_t *l);

/* ======================= alloc.c: out of memory ======================= */
/* Called by every allocation that fails (no lock held), in place of
 * returning NULL with ENOMEM: returns the memory or NULL (and sets errno).
 * tc_set_new_mode(1) installs the new-handler loop (runtime/override.c);
 * NULL removes it. */
typedef void *(*hci_oom_fn)(size_t size, size_t align, bool zero);
void hci_alloc_set_oom_handler(hci_oom_fn fn);
/* LSan's max_allocation_size_mb: a request above limit bytes (0: none) calls
 * fn(size, limit) first (it may end the process), then fails with ENOMEM as
 * above.  Limits are above HC_MAX_SMALL (whole MiB): only the slow path
 * checks.  Set before threads start (option parsing). */
typedef void (*hci_too_big_fn)(size_t size, size_t limit);
void hci_alloc_set_limit(size_t limit, hci_too_big_fn fn);

/* ======================= alloc.c: memory errors ======================= */
/* A double free or an invalid pointer found by free, realloc and the
 * like, handed to the checker (checker/mem_errors.c) before anything
 * happens: no allocator lock is held and the heap is as before the call.
 * line: the allocator's one-line message ("free(): double free of P;
 * called from RA").  The listener prints what it knows and answers
 * HCI_MEMERR_IGNORE (only when `ignorable`: a double free that LSan's
 * detect_double_free=0 lets pass; the call returns, nothing freed) or
 * HCI_MEMERR_ABORT (abort() follows); it may end the process itself.
 * Without a listener the allocator prints the line and aborts.  Set once,
 * at the checker's start-up. */
typedef enum { HCI_MEMERR_DOUBLE_FREE, HCI_MEMERR_BAD_POINTER } hci_memerr_kind_t;
enum { HCI_MEMERR_ABORT, HCI_MEMERR_IGNORE };
typedef struct hci_memerr {
  hci_memerr_kind_t kind;
  const char *fn;        /* the entry point: "free", "realloc", ... */
  const void *p;
  uintptr_t ra;          /* its caller */
  const char *line;
  bool ignorable;
} hci_memerr_t;
typedef int (*hci_memerr_fn)(const hci_memerr_t *e);
void hci_alloc_set_error_listener(hci_memerr_fn fn);

/* ======================= free_history.c ======================= */
/* Checker mode's table of the last frees (free_history.c says how):
 * hci_free_history_set(entries) makes it (rounded up to a power of two,
 * at most 2^22; once, at the checker's start-up: false when the metadata
 * arena refuses); every checker-mode free then puts its block, allocation
 * stack, free stack (HC_STACK_NONE unless free stacks are recorded) and
 * caller; find gives them back for a block freed last at its index. */
extern bool hci_free_history_on;
/* Which frees' stacks are walked (alloc.c): none (their callers alone),
 * those whose walk needs no DWARF unwinder (the default: a frame-pointer
 * walk, memoized, costs checker_bench about 10 %; a DWARF walk per free
 * cost python3 33 %), or all. */
enum { HC_FREE_STACKS_OFF = 0, HC_FREE_STACKS_FP = 1, HC_FREE_STACKS_ALL = 2 };
extern int hci_free_stacks;
bool hci_free_history_set(size_t entries);
void hci_free_history_put(const void *p, uint32_t alloc_id, uint32_t free_id, uintptr_t ra);
bool hci_free_history_find(const void *p, uint32_t *alloc_id, uint32_t *free_id, uintptr_t *free_ra);

/* ======================= malloc_hook.c ======================= */
/* gperftools' MallocHook lists (the exported API is runtime/malloc_hooks.c).
 * Kinds of hook; each has HCI_HOOK_SLOTS - 1 slots for Add and the last for
 * the deprecated singular Set. */
enum {
  HCI_HOOK_NEW, HCI_HOOK_DELETE, HCI_HOOK_PREMMAP, HCI_HOOK_MMAP, HCI_HOOK_MMAP_REPLACE,
  HCI_HOOK_MUNMAP, HCI_HOOK_MUNMAP_REPLACE, HCI_HOOK_MREMAP, HCI_HOOK_PRESBRK, HCI_HOOK_SBRK,
  HCI_HOOK_KINDS
};
#define HCI_HOOK_SLOTS 8
typedef void (*hci_hook_fn)(void);
/* sample_left is held below HC_HOOK_BIAS / 2 while new/delete hooks are on
 * (the sampler counts down on top of the bias). */
#define HC_HOOK_BIAS (INT64_MIN / 4)
/* left with the bias on: negative whatever the gap ("never" included). */
static inline int64_t hci_hook_biased(int64_t left) {
  if (left > ((int64_t)1 << 59)) left = (int64_t)1 << 59;
  return left + HC_HOOK_BIAS;
}
extern int hci_hooks_on;  /* a new or delete hook is installed */
bool hci_hook_add(int kind, hci_hook_fn fn);     /* false: NULL or no free slot */
bool hci_hook_remove(int kind, hci_hook_fn fn);  /* false: not installed */
hci_hook_fn hci_hook_set_singular(int kind, hci_hook_fn fn); /* returns the previous one */
hci_hook_fn hci_hook_get_singular(int kind);
int hci_hook_get(int kind, hci_hook_fn *out, int max);  /* the installed hooks, in slot order */
bool hci_hook_any(int kind);
void hci_hook_run_new(const void *p, size_t size);
void hci_hook_run_delete(const void *p);

/* ======================= sampler.c: the slow path's charge ======================= */
/* Checker mode's charge (alloc.c's alloc_checked_small): the count far
 * below 0, as hci_sampler_charge leaves it, so that the fast path sends
 * every malloc to the slow path, which records it.  Without its tests:
 * checker mode never samples. */
static inline void hci_sampler_keep_slow(hc_tcache_t *tc) { hci_tc_sampler(tc)->left = INT64_MIN / 2; }

/* Charges size to tc's sampler (unless the fast path did: charged).  True
 * when the gap ran out and the next one was drawn; *weight is then the mean
 * the ended gap was drawn with (0: sampling was off).  Recording every
 * allocation (checker) keeps the count far below 0: no draw. */
static inline bool hci_sampler_charge(hc_tcache_t *tc, size_t size, bool charged, uint64_t *weight) {
  hc_tc_sampler_t *sm = hci_tc_sampler(tc);
  if (!charged) sm->left -= (int64_t)size;
  if (sm->left >= 0) return false;
  if (hci_record_all) {
    sm->left = INT64_MIN / 2;
    return false;
  }
  /* With malloc hooks on, the count runs on top of HC_HOOK_BIAS
   * (malloc_hook.c): take the bias off, put it back after. */
  int64_t left = sm->left;
  if (left < HC_HOOK_BIAS / 2) left -= HC_HOOK_BIAS;
  bool drew = left < 0;
  if (drew) {
    *weight = sm->interval;
    left = (int64_t)hci_sampler_next_gap(tc);
  }
  sm->left = hci_hooks_on ? hci_hook_biased(left) : left;
  return drew;
}

#endif
