/* alloc.c - the slow paths of allocation and deallocation.
 *
 * Reached from the fast paths (alloc_inline.h) when the thread cache list is
 * empty or full, the sampler fires, the thread has no cache yet, the size is
 * large, or the checker records every allocation (then the fast paths are
 * disabled by holding every list capacity at 0 and sample_left negative).
 *
 * Sampled objects (sampler on, checker off) get a page-granular LARGE span
 * of their own with the stack id in the span, so the free fast path (class
 * != 0) never has to look for a sample.  In checker mode every small object
 * has an 8-byte record in its span's objmeta array: stack id, epoch, flags.
 *
 * `ra` is the return address of the exported entry point: the first frame of
 * a recorded stack, so allocator frames never show up in reports.
 * Locks: none of its own except hci_samples.lock (the sampled-span list and
 * the stash of free sample spans). */
#include <errno.h>
#include <string.h>

#include "alloc_inline.h"
#include "usdt.h"

#include <stdlib.h> /* abort */

int hci_record_all;
_Atomic uint16_t hci_epoch = 1;
hci_samples_t hci_samples = {.lock = HCI_LOCK_INIT(HC_RANK_SAMPLES)};
HC_PRIVATE_STATE(hci_samples); /* links to spans (metadata): not a root */
/* Told about sampled objects (the profiler registers it at start-up). */
static const hci_sample_listener_t *_Atomic sample_listener;

void hci_alloc_set_sample_listener(const hci_sample_listener_t *l) {
  atomic_store_explicit(&sample_listener, l, memory_order_release);
}

/* Requests above this fail with ENOMEM at once (no huge mapping attempts). */
#define HC_MAX_REQUEST ((size_t)1 << 46)

// ---- errors ----

static _Atomic(hci_memerr_fn) error_listener;

void hci_alloc_set_error_listener(hci_memerr_fn fn) {
  atomic_store_explicit(&error_listener, fn, memory_order_release);
}

/* The message, then the checker's report (hci_memerr_t); returns only for
 * a double free the listener lets pass (`ignorable`). */
static hc_cold hc_noinline void mem_error(hci_memerr_kind_t kind, const char *fn, const void *p, uintptr_t ra,
                                          const char *why, bool ignorable) {
  char line[256];
  if (!why)
    hci_snprintf(line, sizeof line, "%s(): double free of %p; called from %p", fn, p, (void *)ra);
  else
    hci_snprintf(line, sizeof line, "%s(): invalid pointer %p (%s); called from %p", fn, p, why, (void *)ra);
  hci_memerr_fn f = atomic_load_explicit(&error_listener, memory_order_acquire);
  if (!f) hci_fatal("%s", line);
  hci_memerr_t e = {.kind = kind, .fn = fn, .p = p, .ra = ra, .line = line, .ignorable = ignorable};
  if (f(&e) == HCI_MEMERR_IGNORE && ignorable) return;
  abort();
}

static hc_cold hc_noinline __attribute__((noreturn)) void bad_pointer(const char *fn, const void *p, uintptr_t ra,
                                                                      const char *why) {
  mem_error(HCI_MEMERR_BAD_POINTER, fn, p, ra, why, false);
  __builtin_unreachable();
}

/* bad_pointer's reason for an object of a small span never carved. */
#define NEVER_HANDED_OUT "an object heapcheck never handed out"

/* Object idx of SMALL span s was never carved in its SMALL life, so never
 * handed out (central.c, open_pages, sends frees and reallocs of such
 * objects to the slow paths); pushed, it would be handed out twice. */
static inline bool never_carved(const hc_span_t *s, uint32_t idx) {
  return idx >= __atomic_load_n(&s->opened, __ATOMIC_RELAXED);
}

/* A span whose object was freed: back in the page heap or kept for a sample. */
static inline bool span_freed(const hc_span_t *s) { return s->state == HC_SPAN_FREE || s->state == HC_SPAN_STASHED; }

/* Returns only when the double free is to be ignored (the caller returns
 * without freeing anything). */
static hc_cold hc_noinline void double_free(const char *fn, const void *p, uintptr_t ra) {
  HC_USDT_MEMORY_TCACHE_DOUBLE_FREE(p, hci_pagemap_class((uintptr_t)p));
  mem_error(HCI_MEMERR_DOUBLE_FREE, fn, p, ra, NULL, true);
}

/* realloc of a freed block: "invalid pointer (already freed)" in the
 * message, a double free for the checker's report; never ignored. */
static hc_cold hc_noinline __attribute__((noreturn)) void realloc_freed(const void *p, uintptr_t ra) {
  mem_error(HCI_MEMERR_DOUBLE_FREE, "realloc", p, ra, "already freed", false);
  __builtin_unreachable();
}

// ---- stacks ----

static int find_pc(const uintptr_t *pcs, int n, uintptr_t pc) {
  int i = 0;
  while (i < n && pcs[i] != pc) i++;
  return i;
}

/* Per caller of malloc (its return address ra), which walk gives its
 * stack in auto mode: (ra << 1) | 1 when the function ra returns into has
 * no frame pointer (per its CFI), so the DWARF walk is needed; a
 * frame-pointer walk through it would not stop there but silently skip it
 * and its callers without frame pointers, as long as they leave rbp alone.
 * Direct-mapped, 1024 (python3 missed 41 000 times in 256); addresses < 2^47
 * leave room for the flag.  Races and collisions only cost a recomputation. */
#define WALK_HINTS 1024
static _Atomic uintptr_t walk_hint[WALK_HINTS];

static bool caller_needs_dwarf(uintptr_t ra) {
  _Atomic uintptr_t *e = &walk_hint[(ra * 0x9e3779b97f4a7c15ull) >> 54];
  uintptr_t v = atomic_load_explicit(e, memory_order_relaxed);
  if (hc_likely(v >> 1 == ra)) return v & 1;
  bool dwarf = !hci_unwind_keeps_fp(ra);
  atomic_store_explicit(e, ra << 1 | dwarf, memory_order_relaxed);
  return dwarf;
}

/* The frame-pointer walk pcs[0..n) from malloc's caller pcs[0] (which
 * keeps a frame pointer) stopped after two frames in a function pcs[1]
 * that has none (per its CFI): its rbp held a number, not a frame, and the
 * walk lost every caller above it.  In the same module: LuaJIT's FFI calls
 * (lj_vm_ffi_call keeps rbp frames, the C code that calls it does not).
 * In another module this is also the usual end of a complete walk (main,
 * then libc's start; a thread's start routine, then libc's start_thread),
 * but not always: glibc's __gconv_open keeps a frame pointer and iconv's
 * main, which calls it, keeps argv in rbp.  There the DWARF walk from
 * malloc's caller decides: a start sequence is at most HC_START_FRAMES
 * frames (main, __libc_start_call_main, __libc_start_main, _start); a
 * longer walk means the frame-pointer one stopped short.  Done once per
 * pair (the verdicts are cached below). */
#define HC_START_FRAMES 4
static bool chain_broke_uncached(uintptr_t pc0, uintptr_t pc1, uintptr_t ra, hc_unwind_memo_t *memo) {
  hci_eh_obj_t a, b;
  if (!hci_eh_find(pc0, &a) || !hci_eh_find(pc1, &b) || hci_unwind_keeps_fp(pc1)) return false;
  if (a.map_lo == b.map_lo) return true;
  uintptr_t dw[HC_MAX_STACK_DEPTH];
  int m = hci_unwind_dwarf_at(dw, HC_MAX_STACK_DEPTH, ra, memo);
  return m - find_pc(dw, m, ra) > HC_START_FRAMES;
}

/* Its verdicts by (pcs[0], pcs[1]): every allocation from a function that
 * main or a thread's start routine calls has such a two-frame walk, and
 * the two module lookups cost ~440 instructions a malloc in checker mode
 * (checker_bench: 1413 -> 890 a pair with the cache).  Direct-mapped, one
 * word an entry: a 64-bit mix of the two pcs with the verdict in bit 0
 * (a collision needs two pairs equal in 63 bits); races cost a recomputation. */
#define BROKE_HINTS 256
static _Atomic uint64_t broke_hint[BROKE_HINTS];

static bool chain_broke_after_caller(const uintptr_t *pcs, int n, uintptr_t ra, hc_unwind_memo_t *memo) {
  if (n != 2) return false;
  uint64_t key = (pcs[0] * 0x9e3779b97f4a7c15ull) ^ (pcs[1] * 0xc2b2ae3d27d4eb4full);
  _Atomic uint64_t *e = &broke_hint[key >> 56];
  uint64_t v = atomic_load_explicit(e, memory_order_relaxed);
  if (hc_likely((v | 1) == (key | 1))) return v & 1;
  bool broke = chain_broke_uncached(pcs[0], pcs[1], ra, memo);
  atomic_store_explicit(e, (key & ~(uint64_t)1) | broke, memory_order_relaxed);
  return broke;
}

/* Bumped when the hints are forgotten or the depth changes: the free-stack
 * memos' slots (made only for walks the hints judged sound, of at most
 * the depth then) are forgotten too. */
static _Atomic uint32_t walk_gen;

void hci_alloc_forget_walk_hints(void) {
  atomic_fetch_add_explicit(&walk_gen, 1, memory_order_relaxed);
  for (size_t i = 0; i < WALK_HINTS; i++) atomic_store_explicit(&walk_hint[i], 0, memory_order_relaxed);
  for (size_t i = 0; i < BROKE_HINTS; i++) atomic_store_explicit(&broke_hint[i], 0, memory_order_relaxed);
}

static int stack_depth_max = HC_MAX_STACK_DEPTH;

void hci_set_stack_depth(int depth) {
  stack_depth_max = depth < 1 ? 1 : depth > HC_MAX_STACK_DEPTH ? HC_MAX_STACK_DEPTH : depth;
  atomic_fetch_add_explicit(&walk_gen, 1, memory_order_relaxed);
}

static uint32_t capture_walk(uintptr_t ra, uintptr_t rec, hc_unwind_memo_t *memo);

/* memo: the thread's, guarded (or NULL); rec: the frame record holding ra
 * when the caller knows it, else 0 (hci_unwind_memo_walk).  The memo's
 * answer in line; walks into frame arrays in capture_walk (its 1 KiB of
 * arrays and five saved registers were paid by every capture when the two
 * shared one function).  The memo checks the unwinder's availability. */
static inline __attribute__((always_inline)) uint32_t capture_with(hc_unwind_memo_t *memo, uintptr_t ra,
                                                                    uintptr_t rec) {
  if (memo && ra && (hci_unwinder == HC_UNWIND_DWARF || (hci_unwind_fallback && caller_needs_dwarf(ra)))) {
    /* A site or the way's last walk may know the id (memo_site.c). */
    uint32_t id = hci_unwind_memo_stack_id(memo, stack_depth_max, ra, rec);
    if (hc_likely(id != 0)) return id;
  }
  return capture_walk(ra, rec, memo);
}

/* The thread's memo of its last walk, when record_stack guards us from
 * re-entry (a signal handler's allocation would otherwise share it). */
static inline uint32_t capture_stack(uintptr_t ra, uintptr_t rec) {
  hc_tcache_t *tc = hci_tc;
  return capture_with(tc->is_real && hci_tc_memo(tc)->in_alloc ? &hci_tc_memo(tc)->memo : NULL, ra, rec);
}

static hc_noinline uint32_t capture_walk(uintptr_t ra, uintptr_t rec, hc_unwind_memo_t *memo) {
  bool can_dwarf = ra && hci_unwind_dwarf_available() &&
                   (hci_unwinder == HC_UNWIND_DWARF || hci_unwind_fallback);
  bool dwarf = can_dwarf && (hci_unwinder == HC_UNWIND_DWARF || caller_needs_dwarf(ra));
  uintptr_t pcs[HC_MAX_STACK_DEPTH];
  int n, i;
  if (dwarf) {
    n = hci_unwind_dwarf_at(pcs, HC_MAX_STACK_DEPTH, ra, NULL);
  } else {
    /* From the entry point's frame record when it is handed down: the
     * allocator's own frames are not walked, and the stack keeps
     * HC_MAX_STACK_DEPTH frames of the program whatever their number. */
    n = rec && hci_unwinder == HC_UNWIND_FP ? hci_unwind_fp_from(pcs, HC_MAX_STACK_DEPTH, rec, ra) : 0;
    if (n == 0) n = hci_backtrace(pcs, HC_MAX_STACK_DEPTH, 0);
  }
  /* The ids the ways keep are of their own frames: not this stack's. */
  if (memo)
    for (int k = 0; k < HC_UNWIND_MEMO_WAYS; k++) memo->way[k].id = 0;
  i = find_pc(pcs, n, ra);
  if (can_dwarf && !dwarf && (n - i <= 1 || chain_broke_after_caller(pcs + i, n - i, ra, memo))) {
    /* The frame-pointer chain ends at the caller of malloc (its caller
     * clobbered rbp), or one frame later: the DWARF walk sees further. */
    uintptr_t dw[HC_MAX_STACK_DEPTH];
    int m = hci_unwind_dwarf_at(dw, HC_MAX_STACK_DEPTH, ra, memo);
    int j = find_pc(dw, m, ra);
    if (m - j > n - i) {
      __builtin_memcpy(pcs, dw + j, (size_t)(m - j) * sizeof dw[0]);
      n = m - j;
      i = 0;
    }
  }
  if (i == n) { /* the unwinder did not reach the entry point: keep what we know */
    pcs[0] = ra;
    return hci_depot_put(pcs, ra ? 1 : 0);
  }
  return hci_depot_put(pcs + i, n - i < stack_depth_max ? n - i : stack_depth_max);
}

uint32_t hci_capture_stack_from(uintptr_t ra) { return capture_stack(ra, 0); }

/* Stack id for a new object, guarded against re-entry from the unwinder. */
static inline __attribute__((always_inline)) uint32_t record_stack(hc_tcache_t *tc, uintptr_t ra, uintptr_t rec) {
  if (!tc || hci_tc_memo(tc)->in_alloc) return HC_STACK_UNKNOWN;
  hci_tc_memo(tc)->in_alloc = 1;
  /* A real tc is the thread's cache: its memo, guarded now, without hci_tc. */
  uint32_t id = tc->is_real ? capture_with(&hci_tc_memo(tc)->memo, ra, rec) : capture_stack(ra, rec);
  hci_tc_memo(tc)->in_alloc = 0;
  return id;
}

/* Checker mode: the bytes a block of `size` takes, one more than asked, so
 * that the address just past its end is inside it (in its slack, which the
 * flood ignores), never the start of the next block.  A program keeps such
 * end pointers (glibc's FILE its buffer's end, a vector its end of storage);
 * where a block filled its class or its pages exactly, that word kept alive
 * whatever the allocator put next, and everything only that reached
 * (xmlstarlet: libxslt's 4096-byte dictionary table, next to stdout's
 * buffer, and 5 KB behind it; scenario interior_end_is_next).  valgrind and
 * ASan never meet this: their redzones and chunk headers lie between
 * blocks.  The requested size stays the object's size (reports,
 * malloc_usable_size, the flood). */
static inline size_t room_for(size_t size) { return size + (hci_record_all != 0); }

static uint16_t new_flags(hc_tcache_t *tc, size_t slack) {
  uint16_t f = (uint16_t)(slack & HC_OBJ_SLACK_MASK);
  if (tc && hci_tc_chk(tc)->disable_depth > 0) f |= HC_OBJ_IGNORED;
  return f;
}

static inline uint32_t object_index(uintptr_t p, const hc_span_t *s, unsigned cls) {
  return (uint32_t)(((p - s->start) * hci_classes[cls].recip) >> 48);
}

/* Checker mode: fill the record of a small object (in line: every checked
 * malloc comes here, and a call paid a frame and six saved registers). */
static inline __attribute__((always_inline)) void record_small(hc_tcache_t *tc, void *p, unsigned cls, size_t size,
                                                                uintptr_t ra, uintptr_t rec) {
  hc_span_t *s = hci_pagemap_span((uintptr_t)p);
  if (!s->objmeta) return; /* span made before recording began */
  hc_objmeta_t *m = &s->objmeta[object_index((uintptr_t)p, s, cls)];
  m->stack_id = record_stack(tc, ra, rec);
  m->epoch = atomic_load_explicit(&hci_epoch, memory_order_relaxed);
  atomic_store_explicit(&m->xflags, new_flags(tc, hci_classes[cls].size - size), memory_order_relaxed);
}

// ---- small objects ----

/* An object of class cls straight from central (the thread has no cache). */
static hc_noinline void *pop_central(unsigned cls) {
  hc_chain_t ch;
  if (!hci_central_remove(cls, 1, &ch, NULL)) return NULL;
  void *p = ch.head;
  if (ch.n > 1) { /* a whole transfer chain: keep one, give the rest back */
    hc_chain_t rest = {hc_fl_next(p, 0), ch.tail, ch.n - 1};
    hci_central_insert(cls, &rest);
  }
  return p;
}

/* Pops an object of class cls from tc (refilling it), or straight from
 * central when the thread has no cache.  In line: in checker mode every
 * allocation comes this way. */
static inline __attribute__((always_inline)) void *pop_small(hc_tcache_t *tc, unsigned cls, uintptr_t ra) {
  if (hc_unlikely(!tc)) return pop_central(cls);
  hc_tc_list_t *l = &hci_tc_free(tc)->lists[cls];
  void *p = hc_tc_first(l, hci_classes[cls].size, ra);
  if (p) {
    hc_tc_set_first(l, hc_fl_next(p, ra));
    l->room++;
    return p;
  }
  return hci_tc_refill(tc, cls);
}

static void push_small(hc_tcache_t *tc, unsigned cls, void *p) {
  if (!tc) {
    hc_fl_link(p, NULL);
    hc_chain_t ch = {p, p, 1};
    hci_central_insert(cls, &ch);
    return;
  }
  /* Room in the list (below its capacity): hci_tc_push would only push.
   * In line, for the checker's frees, which all come here. */
  hc_tc_list_t *l = &hci_tc_free(tc)->lists[cls];
  if (hc_likely(l->room > 0)) {
    hc_tc_list_push(l, p);
    return;
  }
  hci_tc_push(tc, cls, p);
}

// ---- large and sampled objects ----

static void sample_begin(hc_tcache_t *me);
static void sample_end(hc_tcache_t *me);
static void free_large_rest(hc_span_t *s, const void *p);
static void give_back_sample(hc_span_t *s);

static void sampled_link(hc_span_t *s) {
  hci_lock(&hci_samples.lock);
  s->sprev = NULL;
  s->snext = hci_samples.head;
  if (s->snext) s->snext->sprev = s;
  hci_samples.head = s;
  hci_unlock(&hci_samples.lock);
}

/* Spans of freed sampled objects, kept for the next sample of as many
 * pages (state HC_SPAN_STASHED, on stash[npages] through next).  A sampled
 * small object gets a span of its own; taking it from the page heap and
 * giving it back sent every sample through the page-heap lock twice, from
 * two threads at once when one thread allocates and another frees.
 * Bounded by HC_SAMPLE_STASH_PAGES; malloc_trim gives them back.  In
 * hci_samples. */

static hc_span_t *stash_pop(size_t npages) {
  hci_lock(&hci_samples.lock);
  hc_span_t *s = hci_samples.stash[npages];
  if (s) {
    hci_samples.stash[npages] = s->next;
    hci_samples.stash_pages -= npages;
    s->next = NULL;
    s->state = HC_SPAN_LARGE;
    s->is_zeroed = 0;
  }
  hci_unlock(&hci_samples.lock);
  return s;
}

/* Unlinks a freed sampled span; true if it went to the stash (the caller
 * must then leave it alone), false if it goes back to the page heap. */
static bool sampled_unlink(hc_span_t *s) {
  hci_lock(&hci_samples.lock);
  if (s->sprev) s->sprev->snext = s->snext;
  else hci_samples.head = s->snext;
  if (s->snext) s->snext->sprev = s->sprev;
  s->snext = s->sprev = NULL;
  /* Not a span memalign placed: its aligned pages would stay out of the
   * page heap, and every later request of that alignment mapped another
   * alignment's worth (test_malloc_api, posix_memalign(16 MiB, 100)). */
  bool keep = !s->is_placed && s->npages <= HC_SAMPLE_STASH_SPAN_PAGES &&
              hci_samples.stash_pages + s->npages <= HC_SAMPLE_STASH_PAGES;
  if (keep) {
    s->is_sampled = 0;
    s->req_size = 0;
    s->state = HC_SPAN_STASHED;
    s->next = hci_samples.stash[s->npages];
    hci_samples.stash[s->npages] = s;
    hci_samples.stash_pages += s->npages;
  }
  hci_unlock(&hci_samples.lock);
  return keep;
}

size_t hci_sample_stash_drain(void) {
  size_t n = 0;
  hci_lock(&hci_samples.lock); /* before the page heap: lock order */
  for (size_t k = 1; k <= HC_SAMPLE_STASH_SPAN_PAGES; k++) {
    while (hci_samples.stash[k]) {
      hc_span_t *s = hci_samples.stash[k];
      hci_samples.stash[k] = s->next;
      s->next = NULL;
      s->state = HC_SPAN_LARGE;
      hci_ph_free(s);
      n += k;
    }
  }
  hci_samples.stash_pages = 0;
  hci_unlock(&hci_samples.lock);
  return n << HC_PAGE_SHIFT;
}

size_t hci_sample_stash_bytes(void) {
  hci_lock(&hci_samples.lock);
  size_t n = hci_samples.stash_pages;
  hci_unlock(&hci_samples.lock);
  return n << HC_PAGE_SHIFT;
}

/* A LARGE span holding one object of `size` bytes.  sampled: weight > 0. */
/* An allocation that fails with ENOMEM fires glibc's retry probe (glibc
 * fires it before retrying in another arena; heapcheck has one heap). */
static _Atomic(hci_oom_fn) oom_handler;

void hci_alloc_set_oom_handler(hci_oom_fn fn) { atomic_store_explicit(&oom_handler, fn, memory_order_release); }

static hc_cold hc_noinline void *enomem(size_t size, size_t align, bool zero) {
  if (zero) HC_USDT_MEMORY_CALLOC_RETRY(size);
  else if (align > 16) HC_USDT_MEMORY_MEMALIGN_RETRY(size, align);
  else HC_USDT_MEMORY_MALLOC_RETRY(size);
  hci_oom_fn h = atomic_load_explicit(&oom_handler, memory_order_acquire);
  if (h) return h(size, align, zero); /* tc_set_new_mode(1): the new-handler loop */
  errno = ENOMEM;
  return NULL;
}

/* Requests above max_request go to too_big (hci_alloc_set_limit). */
static _Atomic size_t max_request = HC_MAX_REQUEST;
static _Atomic(hci_too_big_fn) too_big_handler;

void hci_alloc_set_limit(size_t limit, hci_too_big_fn fn) {
  atomic_store_explicit(&too_big_handler, fn, memory_order_release);
  atomic_store_explicit(&max_request, limit && limit < HC_MAX_REQUEST ? limit : HC_MAX_REQUEST, memory_order_release);
}

static hc_cold hc_noinline void *too_big(size_t size, size_t align, bool zero) {
  hci_too_big_fn h = atomic_load_explicit(&too_big_handler, memory_order_acquire);
  size_t limit = atomic_load_explicit(&max_request, memory_order_relaxed);
  if (h && limit < HC_MAX_REQUEST) h(size, limit);
  return enomem(size, align, zero);
}

/* calloc's zeroing of a large block from pages the page heap kept
 * committed (fresh and given-back ones are zero: is_zeroed).  From 256 KiB
 * only the resident pages that are not zero already are written, the
 * others given back (hci_os_zero): a sparse table calloc'ed, freed and
 * calloc'ed again (a bitmap, a hash index) stays sparse, where a memset
 * made all of it resident (calloc(1 GiB) twice with a page written per
 * MiB: 1029 MiB, glibc 5, whose large blocks are fresh mappings; adv30)
 * and cost a write of every page every round. */
static void zero_block(void *p, size_t size) {
  if (size >= ((size_t)256 << 10)) hci_os_zero(p, (size + 4095) & ~(size_t)4095);
  else memset(p, 0, size);
}

static void *alloc_span_object(hc_tcache_t *tc, size_t size, size_t align, uintptr_t ra, uintptr_t rec,
                               uint64_t weight, bool zero) {
  /* A sampled small object spans its class size: its usable size is the
   * class's, as unsampled (hci_usable_size). */
  size_t span_bytes = weight && size <= HC_MAX_SMALL && align <= HC_PAGE_SIZE ? hci_alloc_size_for(size, align) : room_for(size);
  size_t npages = (span_bytes + HC_PAGE_SIZE - 1) >> HC_PAGE_SHIFT;
  if (npages == 0) npages = 1;
  /* A sample takes the samples lock (stash_pop, sampled_link): see
   * sample_begin.  A sample implies tc, the thread's real cache. */
  if (weight) sample_begin(tc);
  hc_span_t *s = weight && npages <= HC_SAMPLE_STASH_SPAN_PAGES && align <= HC_PAGE_SIZE ? stash_pop(npages) : NULL;
  if (!s) s = align > HC_PAGE_SIZE ? hci_ph_alloc_aligned(npages, align) : hci_ph_alloc(npages);
  if (!s) {
    if (weight) sample_end(tc);
    return enomem(size, align, zero);
  }
  s->req_size = size;
  s->is_placed = align > HC_PAGE_SIZE;
  s->meta.epoch = atomic_load_explicit(&hci_epoch, memory_order_relaxed);
  atomic_store_explicit(&s->meta.xflags, new_flags(tc, 0), memory_order_relaxed);
  if (weight || hci_record_all) s->meta.stack_id = record_stack(tc, ra, rec);
  if (zero && !s->is_zeroed) zero_block((void *)s->start, size);
  if (weight) {
    s->is_sampled = 1;
    s->weight = weight;
    s->alloc_time = hci_os_now_coarse_ns();
    s->sample_size = size;
    sampled_link(s);
    HC_USDT_SAMPLE_ALLOC(s->start, size, s->meta.stack_id);
    const hci_sample_listener_t *li = atomic_load_explicit(&sample_listener, memory_order_acquire);
    if (li && li->on_alloc) s->sample_est = li->on_alloc(s->meta.stack_id, size, weight);
    if (li && li->after_alloc) li->after_alloc();
  }
  if (weight) sample_end(tc);
  return (void *)s->start;
}

// ---- the slow path ----

/* Smallest class whose objects are all aligned to align (<= page size). */
static unsigned aligned_class(size_t size, size_t align) {
  if (size < align) size = align;
  if (size > HC_MAX_SMALL) return 0;
  for (unsigned c = hci_size_class(size); c < HC_NUM_CLASSES; c++)
    if ((hci_classes[c].size & (align - 1)) == 0) return c;
  return 0;
}

/* The entry point's return address of the allocation in progress on this
 * thread (the heap-growth stacks start there). */
static HC_TLS uintptr_t entry_ra;

/* Set while hci_alloc_reserve_heap grows the heap at start-up. */
static HC_TLS bool reserving;

uint32_t hci_alloc_growth_stack(void) {
  if (reserving) { /* start-up's growth: its one frame, without a walk (hci_alloc_reserve_heap) */
    uintptr_t pc = entry_ra;
    return hci_depot_put(&pc, 1);
  }
  hc_tcache_t *tc = hci_tc;
  return tc->is_real ? record_stack(tc, entry_ra, 0) : hci_capture_stack_from(entry_ra);
}

/* The heap's first growth at start-up, as tcmalloc's initialisation makes
 * it (its TCMallocGuard allocates), recorded with one frame: the caller's
 * return address (runtime/init.c's start-up), no walk.  Made by the
 * program's first malloc instead, its stack needed the unwinder's rules for
 * main's callers in libc: every process then paged in a 64 KiB window of
 * libc's .eh_frame, ours, and the unwinder's code and tables
 * (docs/performance.md, "Start-up overhead"). */
void hci_alloc_reserve_heap(void) {
  uintptr_t saved = entry_ra;
  entry_ra = (uintptr_t)__builtin_return_address(0);
  reserving = true;
  hci_ph_reserve();
  reserving = false;
  entry_ra = saved;
}

/* rec: the frame record holding ra when known (hci_alloc_slow), else 0. */
static void *alloc_object(size_t size, size_t align, uintptr_t ra, uintptr_t rec, int flags, bool zero) {
  hci_ensure_init();
  entry_ra = ra;
  if (hc_unlikely(size > atomic_load_explicit(&max_request, memory_order_relaxed))) return too_big(size, align, zero);
  /* A charge by the fast path to the empty cache (its head word is the
   * sampler's, thread_cache.c) is not one to the cache adopted now. */
  if (!hci_tc->is_real) flags &= ~HC_SLOW_SAMPLE_CHARGED;
  hc_tcache_t *tc = hci_tc_get();
  /* Charge the sampler (unless the fast path did already). */
  bool sample = false;
  uint64_t weight = 0; /* a sample stands for the mean gap it was drawn with */
  if (tc && hci_sampler_charge(tc, size, flags & HC_SLOW_SAMPLE_CHARGED, &weight)) {
    /* Not inside a capture, nor inside a sampled allocation or free of
     * this thread (a signal handler's malloc that interrupted it: the
     * samples lock it holds was waited for, for ever; docs/design.md). */
    sample = weight != 0 && !hci_tc_memo(tc)->in_alloc && !hci_tc_memo(tc)->in_sample;
    if (weight) hci_tc_scavenge_tick(tc, weight); /* weight: the bytes allocated since the last sample */
  }
  size_t room = room_for(size);
  unsigned cls = align <= 16 ? (room <= HC_MAX_SMALL ? hci_size_class(room) : 0)
                 : align <= HC_PAGE_SIZE ? aligned_class(room, align) : 0;
  if (sample || cls == 0) {
    return alloc_span_object(tc, size, align, ra, rec, sample ? weight : 0, zero);
  }
  void *p = pop_small(tc, cls, ra);
  if (hc_unlikely(!p)) return enomem(size, align, zero);
  hc_fl_take(p);
  if (hci_record_all) {
    record_small(tc, p, cls, size, ra, rec);
    /* The free-list link left in the first word would point at the next
     * free object of the class and keep whatever is allocated there later
     * alive if the program never overwrites it (padding, unused fields);
     * the rest was cleared at the free (clear_freed). */
    *(void **)p = NULL;
  }
  if (zero) memset(p, 0, size);
  return p;
}

/* Every allocation that is not the fast path's; runs the new hooks. */
static void *alloc_generic(size_t size, size_t align, uintptr_t ra, uintptr_t rec, int flags, bool zero) {
  void *p = alloc_object(size, align, ra, rec, flags, zero);
  if (hc_unlikely(hci_hooks_on)) hci_hook_run_new(p, size); /* NULL too, as gperftools */
  return p;
}

/* Checker mode's small malloc in hci_alloc_slow's frame: alloc_object's
 * steps in its order, without its frame, the paths checker mode never takes
 * and two more reads of hci_tc.  NULL: the general path (no real cache yet,
 * a limit below the size, a list that could not be refilled). */
static inline __attribute__((always_inline)) void *alloc_checked_small(size_t size, uintptr_t ra, uintptr_t rec) {
  hc_tcache_t *tc = hci_tc;
  if (hc_unlikely(!tc->is_real || size > atomic_load_explicit(&max_request, memory_order_relaxed))) return NULL;
  entry_ra = ra;
  hci_sampler_keep_slow(tc);
  unsigned cls = hci_size_class(room_for(size));
  void *p = pop_small(tc, cls, ra);
  if (hc_unlikely(!p)) return NULL;
  hc_fl_take(p);
  record_small(tc, p, cls, size, ra, rec);
  *(void **)p = NULL; /* the free-list link (alloc_object says why) */
  return p;
}

/* The slow path's allocation, for a caller whose frame record rec holds ra (0: not known). */
static inline __attribute__((always_inline)) void *alloc_slow_at(size_t size, uintptr_t ra, uintptr_t rec,
                                                                 int flags) {
  void *p = NULL; /* hci_record_all: the allocator is initialised (alloc_ctl.c) */
  bool zero = flags & HC_SLOW_ZERO;
  if (hci_record_all && size < HC_MAX_SMALL && !hci_hooks_on) { /* room_for */
    p = alloc_checked_small(size, ra, rec);
    if (p && zero) memset(p, 0, size);
  }
  if (!p) p = alloc_generic(size, 0, ra, rec, flags, zero);
  return p;
}

void *hci_alloc_slow(size_t size, uintptr_t ra, int flags) {
  /* Reached by a tail call from malloc(): our return address is ra and our
   * frame record holds it, which the stack capture then need not search for. */
  uintptr_t rec = 0;
  if (!ra) {
    ra = (uintptr_t)__builtin_return_address(0);
    rec = (uintptr_t)__builtin_frame_address(0);
  }
  void *p = alloc_slow_at(size, ra, rec, flags);
  __asm__ volatile("" ::: "memory"); /* not a tail call: our frame holds ra while the stack is taken */
  return p;
}

void *hci_alloc_slow_or(size_t size, int flags, hc_alloc_fail_fn fail) {
  /* Reached by a tail call from operator new: as hci_alloc_slow from malloc. */
  uintptr_t ra = (uintptr_t)__builtin_return_address(0);
  void *p = alloc_slow_at(size, ra, (uintptr_t)__builtin_frame_address(0), flags);
  if (hc_unlikely(!p)) p = fail(size, 0, ra); /* may throw: through our frame (CFI) to operator new's caller */
  __asm__ volatile("" ::: "memory"); /* not a tail call: our frame holds ra while the stack is taken */
  return p;
}

void *hci_memalign_slow_or(size_t size, size_t align, hc_alloc_fail_fn fail) {
  /* Reached by a tail call from an aligned operator new: as hci_alloc_slow_or. */
  uintptr_t ra = (uintptr_t)__builtin_return_address(0), rec = (uintptr_t)__builtin_frame_address(0);
  void *p;
  if (align <= 16) p = alloc_slow_at(size, ra, rec, 0);
  else if (size > HC_MAX_REQUEST || align > HC_MAX_REQUEST) p = enomem(size, align, false); /* hci_memalign_ra */
  else p = alloc_generic(size, align, ra, rec, 0, false);
  if (hc_unlikely(!p)) p = fail(size, align, ra); /* may throw: through our frame (CFI) to operator new's caller */
  __asm__ volatile("" ::: "memory"); /* not a tail call: our frame holds ra while the stack is taken */
  return p;
}

// ---- free ----

/* Checker mode: no block is given out holding a stale pointer.  A reused
 * block keeps its old contents, and a stale pointer in it that the new
 * owner leaves unwritten would keep a leaked object alive (a conservative
 * flood cannot tell it from a live one).  A block's requested bytes are
 * cleared when it is freed (free_small, free_large; the free-list link a
 * small one then gets is cleared when it is given out again), and a
 * small-object span's carved objects when the span goes back to the page
 * heap (hci_alloc_clear_span), so pages the page heap hands out again are
 * zero, as fresh and released ones are; docs/design.md, "Checker mode: no
 * stale pointers in reused blocks" (why at the free, not at malloc).
 * From 256 KiB, hci_os_zero writes only the resident pages and gives back
 * the others (docs/performance.md, session 12): a large block the program
 * touched sparsely is not made resident. */
static inline void clear_freed(const void *p, size_t n) {
  if (n - 8 <= 56) {
    /* 8 to 64 bytes (most of a program's small blocks): two to four
     * stores that may overlap, in line (memset's call and size dispatch
     * cost three times as many instructions). */
    char *c = (char *)p;
    uint64_t z[2] = {0, 0};
    if (n < 16) {
      __builtin_memcpy(c, z, 8);
      __builtin_memcpy(c + n - 8, z, 8);
      return;
    }
    __builtin_memcpy(c, z, 16);
    __builtin_memcpy(c + n - 16, z, 16);
    if (n > 32) {
      __builtin_memcpy(c + 16, z, 16);
      __builtin_memcpy(c + n - 32, z, 16);
    }
    return;
  }
  if (n >= ((size_t)256 << 10) && ((uintptr_t)p & (HC_PAGE_SIZE - 1)) == 0) {
    hci_os_zero((void *)p, (n + 4095) & ~(size_t)4095); /* the pages never touched stay untouched */
    return;
  }
  memset((void *)p, 0, n);
}

/* Frees for real the blocks of the batches that left checker mode's
 * quarantine (quarantine.c): a small one into tc's list as any free, a large
 * one's span (HC_SPAN_STASHED while quarantined) to the page heap.  Only
 * writes the blocks (their memory was cleared at the free). */
static hc_noinline void unquarantine(hc_tcache_t *tc, hc_qbatch_t *batches) {
  for (hc_qbatch_t *b = batches; b; b = b->next)
    for (uint32_t i = 0; i < b->n; i++) {
      void *q = b->p[i];
      unsigned cls = hci_pagemap_class((uintptr_t)q);
      if (cls) {
        push_small(tc, cls, q);
      } else {
        hc_span_t *s = hci_pagemap_span((uintptr_t)q);
        s->state = HC_SPAN_LARGE;
        hci_ph_free(s);
      }
    }
  hci_quarantine_recycle(batches);
}

/* Checker mode: p (record cleared, memory zeroed) into the quarantine
 * instead of back to the lists; what leaves it is freed now.  False: p was
 * not kept, the caller frees it. */
static inline bool quarantine(hc_tcache_t *tc, void *p, size_t bytes, bool large) {
  hc_qbatch_t *out;
  bool kept = hci_quarantine_put(tc, p, bytes, large, &out);
  if (out) unquarantine(tc, out);
  return kept;
}

void hci_alloc_quarantine_flush(hc_tcache_t *tc, bool all) {
  hc_qbatch_t *out = hci_quarantine_flush(tc, all);
  if (out) unquarantine(all ? NULL : tc, out); /* all (trim): to the central lists, which trim drains */
}

/* Checker mode: the block's allocation stack and this free's, for a later
 * double free's report (free_history.c).  The free's whole stack by
 * default where its caller has frame pointers (its caller alone where a
 * DWARF walk would be needed: +33 % on python3's checked run), every free's
 * with HEAPCHECK_FREE_STACKS=1, its caller alone with 0.
 *
 * The stack is the one malloc's capture would take at the same place, at a
 * fraction of its cost (docs/performance.md, session 18).  A thread frees
 * from a few places of its stack: the memo of free stacks
 * (hc_stack_memo_t, stacks/unwind.c) keeps, per start (ra and the entry
 * point's frame record rec), the depot id of the last stack walked from
 * there, and answers when the frame-pointer walk would find its frames
 * again: one pass over the frames, no copy, no hash, no depot lookup, in a
 * leaf called in line from the free path.  Otherwise (free_stack_walk) the
 * walk is judged as capture_walk judges it (caller_needs_dwarf first, then
 * chain_broke_after_caller), interned and kept; a caller without frame
 * pointers, the DWARF unwinder, a depth below 3 or a start not found go to
 * malloc's capture (its memo and sites).  A hit is not judged again: the
 * verdicts are functions of the frames (ra, the first two, how many), and
 * walk_gen says the hints and the depth they came from still hold. */
int hci_free_stacks;
/* In HC_UNWIND_FP mode: the free's caller has no frame pointer, so its
 * stack would be a DWARF walk (caller_needs_dwarf's hint, cached by ra). */
static inline bool free_needs_dwarf(uintptr_t ra) {
  return hci_unwind_fallback && hci_unwind_dwarf_available() && caller_needs_dwarf(ra);
}
/* A stack the memo does not hold, or none that it can: inside the
 * recursion guard.  asked: the memo was asked for (ra, rec) already. */
static hc_noinline uint32_t free_stack_walk(hc_tc_memo_t *mt, uintptr_t ra, uintptr_t rec, bool asked) {
  /* Code without frame pointers (caller_needs_dwarf's hint, cached): the
   * DWARF walk at once, as capture_with takes it (not asking the hint
   * twice); by default none (HC_FREE_STACKS_FP): the caller alone. */
  if (hci_unwinder == HC_UNWIND_FP && free_needs_dwarf(ra)) {
    if (hci_free_stacks != HC_FREE_STACKS_ALL) return HC_STACK_NONE;
    uint32_t id = hci_unwind_memo_stack_id(&mt->memo, stack_depth_max, ra, rec);
    return id ? id : capture_walk(ra, rec, &mt->memo);
  }
  if (hci_unwinder == HC_UNWIND_FP && stack_depth_max >= 3) {
    if (!rec) {
      uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
      rec = hci_unwind_fp_find(ra, 8, fp, fp, NULL);
    }
    uint32_t id = 0;
    if (rec && !asked)
      id = hci_unwind_fp_memo(&mt->frees, atomic_load_explicit(&walk_gen, memory_order_relaxed), stack_depth_max,
                              rec, ra);
    if (id) return id;
    uintptr_t pcs[HC_MAX_STACK_DEPTH];
    /* At least 3 frames walked: n then tells a chain of 1 or 2 frames
     * (capture_walk's tests) from a longer one. */
    int n = rec ? hci_unwind_fp_from(pcs, stack_depth_max, rec, ra) : 0;
    if (n >= 2 &&
        !(hci_unwind_fallback && hci_unwind_dwarf_available() && chain_broke_after_caller(pcs, n, ra, &mt->memo))) {
      id = hci_depot_put(pcs, n);
      hci_unwind_fp_memo_put(&mt->frees, ra, rec, n, id);
      return id;
    }
  }
  return capture_with(&mt->memo, ra, rec);
}
static hc_noinline uint32_t free_stack_slow(uintptr_t ra, uintptr_t rec, bool asked) {
  hc_tcache_t *tc = hci_tc;
  if (!tc->is_real) return HC_STACK_NONE;
  hc_tc_memo_t *mt = hci_tc_memo(tc);
  if (mt->in_alloc) return HC_STACK_UNKNOWN; /* a signal handler's free inside a capture */
  mt->in_alloc = 1;
  uint32_t id = free_stack_walk(mt, ra, rec, asked);
  mt->in_alloc = 0;
  return id;
}
/* In line: the memo's answer (a leaf: no register saved for it), else the
 * rest out of line.  The guard keeps a signal handler's free from writing
 * the slot read here. */
static inline uint32_t free_stack(hc_tcache_t *tc, uintptr_t ra, uintptr_t rec) {
  hc_tc_memo_t *mt = hci_tc_memo(tc); /* tc: hci_tc_get's, a real cache */
  uint32_t id = 0;
  if (hc_likely(rec && !mt->in_alloc && hci_unwinder == HC_UNWIND_FP)) {
    mt->in_alloc = 1;
    /* By default a caller without frame pointers keeps its caller alone
     * (free_stack_walk's test, asked first: caller_needs_dwarf's cache by
     * ra, before the memo, which never holds such a stack). */
    if (hci_free_stacks == HC_FREE_STACKS_FP && free_needs_dwarf(ra)) {
      mt->in_alloc = 0;
      return HC_STACK_NONE;
    }
    id = hci_unwind_fp_memo(&mt->frees, atomic_load_explicit(&walk_gen, memory_order_relaxed), stack_depth_max,
                            rec, ra);
    mt->in_alloc = 0;
  }
  return hc_likely(id != 0) ? id : free_stack_slow(ra, rec, rec != 0); /* (asked, or in the guard) */
}
/* This free's stack for its entry, HC_STACK_NONE when free stacks are off;
 * tc: the thread's cache, or NULL. */
static inline uint32_t free_stack_id(hc_tcache_t *tc, uintptr_t ra, uintptr_t rec) {
  if (!hci_free_history_on || !hci_free_stacks) return HC_STACK_NONE;
  return tc ? free_stack(tc, ra, rec) : free_stack_slow(ra, rec, false);
}

void hci_alloc_clear_span(const hc_span_t *s) {
  /* Objects never carved are zero, but for the marks of those in the page
   * carving reached last (central.c, open_pages). */
  size_t n = (size_t)s->opened * hci_classes[s->cls].size;
  if (!n) return;
  size_t to_page = ((s->start + n - 1) | (HC_PAGE_SIZE - 1)) + 1 - s->start, span = s->npages << HC_PAGE_SHIFT;
  if (n < to_page) n = to_page < span ? to_page : span;
  clear_freed((void *)s->start, n);
}

/* rec: the entry point's frame record holding ra when known, else 0 (free_stack). */
static void free_large(hc_span_t *s, const void *p, uintptr_t ra, uintptr_t rec) {
  if (s->state != HC_SPAN_LARGE || s->start != (uintptr_t)p) {
    if (span_freed(s)) { /* its start or not: a free neighbour may have merged into it */
      double_free("free", p, ra);
      return;
    }
    bad_pointer("free", p, ra, "not the start of a heapcheck object");
  }
  if (s->is_sampled) HC_USDT_SAMPLE_FREE(s->start, s->sample_size, s->meta.stack_id);
  if (s->is_sampled) {
    const hci_sample_listener_t *li = atomic_load_explicit(&sample_listener, memory_order_acquire);
    if (li && li->on_free) li->on_free(s->sample_est);
  }
  if (hci_free_history_on) hci_free_history_put(p, s->meta.stack_id, free_stack_id(NULL, ra, rec), ra);
  s->meta.stack_id = HC_STACK_NONE;
  if (hci_record_all) clear_freed(p, s->req_size);
  if (s->is_sampled) {
    hc_tcache_t *me = hci_tc; /* the empty cache is shared: never written */
    if (me->is_real && me->stk.in_sample) {
      /* A signal handler's free on a thread inside a sampled allocation
       * or free, which holds the samples lock: waiting for it waited for
       * ever.  Freed for every reader (STASHED), given back when that
       * one is done (sample_end). */
      s->state = HC_SPAN_STASHED;
      s->next = me->stk.deferred;
      me->stk.deferred = s;
      return;
    }
    sample_begin(me); /* to the end: its page-heap lock too */
    give_back_sample(s);
    sample_end(me);
    return;
  }
  free_large_rest(s, p);
}

/* A freed sampled span: to the stash, or on as any large span. */
static void give_back_sample(hc_span_t *s) {
  if (!sampled_unlink(s)) free_large_rest(s, (const void *)s->start);
}

/* free_large's end: a span that is not a sample any more (or was not). */
static void free_large_rest(hc_span_t *s, const void *p) {
  hc_tcache_t *tc;
  if (hci_quarantine_budget && !s->is_sampled && (tc = hci_tc_get()) != NULL) {
    /* Freed for every reader (a second free, realloc, the heap view) but
     * out of the page heap until it leaves the quarantine. */
    s->state = HC_SPAN_STASHED;
    if (quarantine(tc, (void *)p, s->npages << HC_PAGE_SHIFT, true)) return;
    s->state = HC_SPAN_LARGE;
  }
  hci_ph_free(s);
}

/* This thread enters a sampled allocation or free (they take the samples
 * lock): from here to sample_end a signal handler's malloc on it does not
 * sample and its free of a sampled block is deferred (free_large), and
 * the signals whose handlers could malloc wait (hci_os_hold_signals): a
 * handler's refill waited for ever for the page-heap lock its own thread
 * held in the sample's span (test_hostile's handler-alloc, sampling every
 * KiB: once in some hundred runs, in CI).  Two system calls a sample
 * (one per 512 KiB allocated by default), and only once the program has
 * a handler (sigaction_watch.c tells: random_live made 63 000 such calls,
 * about 5 % of its time, for nothing).  me: hci_tc (the empty cache,
 * shared, is never written). */
static _Atomic bool handlers; /* the program installed a signal handler (hci_alloc_note_handler) */

void hci_alloc_note_handler(void) {
  if (!atomic_load_explicit(&handlers, memory_order_relaxed)) atomic_store_explicit(&handlers, true, memory_order_relaxed);
}

static void sample_begin(hc_tcache_t *me) {
  if (!me->is_real || me->stk.in_sample++ != 0) return;
  me->stk.holding = atomic_load_explicit(&handlers, memory_order_relaxed);
  if (me->stk.holding) me->stk.held = hci_os_hold_signals();
}

/* Leaves it; the outermost frees what handlers deferred meanwhile (taken
 * with one exchange: a handler may push again while they are freed). */
static void sample_end(hc_tcache_t *me) {
  if (!me->is_real) return;
  while (me->stk.in_sample == 1 && me->stk.deferred) {
    hc_span_t *s = __atomic_exchange_n(&me->stk.deferred, NULL, __ATOMIC_RELAXED);
    while (s) {
      hc_span_t *n = s->next;
      s->next = NULL;
      s->state = HC_SPAN_LARGE;
      give_back_sample(s);
      s = n;
    }
  }
  if (--me->stk.in_sample == 0 && me->stk.holding) hci_os_release_signals(me->stk.held);
}

/* In line in both free paths: in checker mode every free runs it. */
static inline __attribute__((always_inline)) void free_small(void *p, hc_span_t *s, unsigned cls, uintptr_t ra,
                                                                 uintptr_t rec) {
  const hc_class_info_t *ci = &hci_classes[cls];
  uintptr_t off = (uintptr_t)p - s->start;
  uint32_t idx = (uint32_t)((off * ci->recip) >> 48);
  if (hc_unlikely((uintptr_t)idx * ci->size != off || idx >= ci->objs))
    bad_pointer("free", p, ra, "not the start of a heapcheck object");
  if (hc_unlikely(never_carved(s, idx))) bad_pointer("free", p, ra, NEVER_HANDED_OUT);
  hc_tcache_t *tc = hci_tc_get();
  if (s->objmeta) {
    hc_objmeta_t *m = &s->objmeta[idx];
    /* The stack first: the entry is then written right after the
     * exchange, which a racing double free's report waits for. */
    uint32_t free_id = free_stack_id(tc, ra, rec);
    /* Taken with one exchange: of two threads freeing the object at once,
     * exactly one frees it and the other reports the double free. */
    uint32_t alloc_id = __atomic_exchange_n(&m->stack_id, HC_STACK_NONE, __ATOMIC_RELAXED);
    if (hc_unlikely(alloc_id == HC_STACK_NONE)) {
      double_free("free", p, ra);
      return;
    }
    if (hci_free_history_on) hci_free_history_put(p, alloc_id, free_id, ra);
    uint32_t slack = atomic_load_explicit(&m->xflags, memory_order_relaxed) & HC_OBJ_SLACK_MASK;
    atomic_store_explicit(&m->xflags, 0, memory_order_relaxed);
    if (hci_record_all) clear_freed(p, ci->size - slack);
    /* The record (stack id 0) catches a second free meanwhile. */
    if (hci_quarantine_budget && tc && quarantine(tc, p, ci->size, false)) return;
  } else if (hc_fl_is_free(p)) { /* the free mark (free_list.h): exact */
    double_free("free", p, ra);
    return;
  } else if (tc && !hci_hooks_on) {
    /* A thread's first frees come here (its cache has no capacity yet):
     * an object another live cache owns goes back to it (remote.c). */
    hc_tcache_t *o = __atomic_load_n((hc_tcache_t **)&s->owner, __ATOMIC_RELAXED);
    if (o && o != tc && !atomic_load_explicit(&o->remote.dead, memory_order_relaxed)) {
      hci_remote_free(tc, o, cls, p);
      return;
    }
  }
  push_small(tc, cls, p);
}

/* Where the free fast path's misses go first: an object of a span another
 * live cache owns goes back to it (remote.c); one whose owner exited is
 * pushed here when its list has room; in checker mode every small object
 * is freed here (free_small); everything else (a full list, the empty
 * cache, hooks, a large or foreign pointer, a double free) goes on to
 * hci_free_slow. */
void hci_free_miss(void *p, uintptr_t ra) {
  /* free(NULL), common in cleanup code, done at once: through the lookups
   * below it took 98 instructions (glibc 9, tcmalloc_minimal 37).  Delete
   * hooks are told of it too (hci_free_slow). */
  if (!p && !hci_hooks_on) return;
  /* Reached by a tail call from free(): our frame record holds ra, where
   * the free's stack is walked from (free_stack). */
  uintptr_t rec = 0;
  if (!ra) {
    ra = (uintptr_t)__builtin_return_address(0);
    rec = (uintptr_t)__builtin_frame_address(0);
  }
  /* malloc hooks: every free is slow (hci_free_slow calls them); checker mode: */
  const hc_pm_entry_t *e = hci_hooks_on || !hci_record_all ? NULL : hci_pagemap_find((uintptr_t)p);
  if (e && e->cls) {
    /* every free comes here: span and class in one lookup (hci_free_slow: two) */
    free_small(p, (hc_span_t *)__atomic_load_n(&e->span, __ATOMIC_RELAXED), e->cls, ra, rec);
    return;
  }
  /* Else the fast entry the fast path read ("larson and random_live (session 13)") */
  const hc_pm_fast_t *f = hci_hooks_on || hci_record_all ? NULL : hci_pagemap_fast_entry((uintptr_t)p);
  if (hc_likely(f != NULL)) {
    unsigned cls = hci_lofs_class(f->lofs);
    if (cls) {
      hc_fl_will_mark(p); /* a remote free, most often: the fast path did not read it */
      hc_tcache_t *tc = hci_tc;
      hc_tc_list_t *l = &hci_tc_free(tc)->lists[cls];
      uintptr_t off = (uint32_t)((uint32_t)(uintptr_t)p - f->start_lo), tag = f->otag;
      /* start_lim 0: the empty cache.  Another live cache's span: the object goes
       * back to it (remote.c); unowned spans and exited owners' stay here. */
      if (l->start_lim != 0 && hc_is_object_start(off, &hci_classes[cls]) && !hc_fl_is_free(p)) {
        hc_tcache_t *o = !tag || tag == hci_tc_free(tc)->otag ? NULL
            : (hc_tcache_t *)__atomic_load_n(&hci_pagemap_find((uintptr_t)p)->owner, __ATOMIC_RELAXED);
        if (o != tc && o != NULL && !atomic_load_explicit(&o->remote.dead, memory_order_relaxed)) {
          hci_remote_free(tc, o, cls, p);
          return;
        }
        push_small(tc, cls, p); /* room: an exited owner's span; none: the overflow, checked here */
        return;
      }
    }
  }
  hci_free_slow(p, ra);
}

void hci_free_slow(void *p, uintptr_t ra) {
  if (hc_unlikely(hci_hooks_on)) hci_hook_run_delete(p); /* NULL too, as gperftools */
  if (!p) return;
  uintptr_t rec = 0;
  if (!ra) { /* reached by a tail call from free(): our frame record holds ra */
    ra = (uintptr_t)__builtin_return_address(0);
    rec = (uintptr_t)__builtin_frame_address(0);
  }
  hc_span_t *s = hci_pagemap_span((uintptr_t)p);
  if (hc_unlikely(!s)) bad_pointer("free", p, ra, "not allocated by heapcheck");
  unsigned cls = hci_pagemap_class((uintptr_t)p);
  if (cls) free_small(p, s, cls, ra, rec);
  else free_large(s, p, ra, rec);
}

// ---- sizes ----

/* In checker mode the usable size is the requested size, as with
 * LeakSanitizer and valgrind: a program that uses malloc_usable_size to
 * grow into the rest of its block (redis' sds strings, systemd's
 * GREEDY_REALLOC) then uses exactly the bytes that realloc copies and the
 * flood scans, and reports keep the sizes the program asked for.  Outside
 * checker mode it is the whole block (class size or span pages), which
 * realloc copies whole. */
size_t hci_usable_size(const void *p) {
  if (!p) return 0;
  /* A small object's class from the page's fast entry, as free's: one
   * lookup, no span record (programs that count their memory call this
   * at every malloc and free: Redis built with glibc). */
  const hc_pm_fast_t *f = hci_pagemap_fast_entry((uintptr_t)p);
  unsigned cls = f ? hci_lofs_class(f->lofs) : 0;
  if (cls) return hci_record_all ? hci_requested_size(p) : hci_classes[cls].size;
  hc_span_t *s = hci_pagemap_span((uintptr_t)p);
  if (!s || s->state != HC_SPAN_LARGE || s->start != (uintptr_t)p)
    bad_pointer("malloc_usable_size", p, HC_RA(), "not allocated by heapcheck");
  if (hci_record_all) return s->req_size;
  /* A sampled small object has a page of its own but the size its class
   * would give it: the usable size never depends on sampling (nallocx). */
  if (s->is_sampled && s->req_size <= HC_MAX_SMALL) {
    size_t n = hci_alloc_size_for(s->req_size, 0);
    return n < (s->npages << HC_PAGE_SHIFT) ? n : s->npages << HC_PAGE_SHIFT; /* aligned: never past the span */
  }
  return s->npages << HC_PAGE_SHIFT;
}

/* The bytes a request of `size` takes: its class, aligned class or pages. */
static size_t slot_bytes(size_t size, size_t align) {
  unsigned cls = align <= 16 ? (size <= HC_MAX_SMALL ? hci_size_class(size) : 0)
                 : align <= HC_PAGE_SIZE ? aligned_class(size, align) : 0;
  if (cls) return hci_classes[cls].size;
  if (size > HC_MAX_REQUEST) return 0;
  return size <= HC_PAGE_SIZE ? HC_PAGE_SIZE : (size + HC_PAGE_SIZE - 1) & ~(size_t)(HC_PAGE_SIZE - 1);
}

/* In checker mode the slot of room_for(size): what hci_usable_slot gives
 * the block malloc returns (nallocx is tcmalloc's "usable size of
 * malloc(size)", never the requested size: gperftools' tcmalloc_unittest
 * checks nallocx(99) > 99 and GetAllocatedSize(malloc(n)) == nallocx(n),
 * a multiple of the alignment asked). */
size_t hci_alloc_size_for(size_t size, size_t align) {
  if (size > HC_MAX_REQUEST) return 0;
  return slot_bytes(room_for(size), align);
}

/* gperftools' usable size (GetAllocatedSize, tc_malloc_size).  Outside
 * checker mode malloc_usable_size's.  In checker mode the whole slot the
 * block takes, as tcmalloc's (the same as nallocx of its size), where
 * malloc_usable_size keeps glibc's MALLOC_CHECK_, LeakSanitizer's and
 * valgrind's answer, the requested size.  The program may then use every
 * byte of the slot, so the block's record takes the slot's size, as if
 * realloc had grown it in place: the flood scans those bytes, realloc
 * copies them, reports count them.  The room byte is given up for that
 * block only: its end pointer is now the next block's start, which only a
 * program that asked for this size can keep. */
static void set_requested_size(void *p, size_t size);
static void resample_in_place(hc_span_t *s, size_t size, bool exact);

size_t hci_usable_slot(void *p) {
  size_t n = hci_usable_size(p);
  if (!p || !hci_record_all) return n;
  hc_span_t *s = hci_pagemap_span((uintptr_t)p);
  unsigned cls = hci_pagemap_class((uintptr_t)p);
  if (cls) {
    size_t slot = hci_classes[cls].size;
    if (n < slot && s->objmeta) {
      memset((char *)p + n, 0, slot - n); /* zero already (clear_freed); cheap to make sure of */
      set_requested_size(p, slot);
      return slot;
    }
    return n;
  }
  size_t span = s->npages << HC_PAGE_SHIFT, slot = span;
  if (s->is_sampled && n <= HC_MAX_SMALL) {
    /* A sampled small object's slot is its class's (alloc_span_object sized
     * the span for it); a slack mark says it was given already. */
    if (atomic_load_explicit(&s->meta.xflags, memory_order_relaxed) & HC_OBJ_SLACK_MASK) return n;
    slot = slot_bytes(room_for(n), 0);
    if (slot > span) slot = span;
  }
  if (slot == n) return n;
  if (s->is_sampled) resample_in_place(s, slot, false);
  else s->req_size = slot;
  if (s->is_sampled && slot <= HC_MAX_SMALL) atomic_fetch_or_explicit(&s->meta.xflags, 1, memory_order_relaxed);
  return slot;
}

size_t hci_requested_size(const void *p) {
  hc_span_t *s = hci_pagemap_span((uintptr_t)p);
  unsigned cls = hci_pagemap_class((uintptr_t)p);
  if (!s) return 0;
  if (!cls) return s->req_size;
  if (!s->objmeta) return hci_classes[cls].size;
  hc_objmeta_t *m = &s->objmeta[object_index((uintptr_t)p, s, cls)];
  return hci_classes[cls].size - (atomic_load_explicit(&m->xflags, memory_order_relaxed) & HC_OBJ_SLACK_MASK);
}

/* A sampled block that realloc keeps in place: the listener forgets its
 * old size and records the new one (same stack, same weight) once the size
 * has moved by more than an eighth from the one it was told last.  A
 * buffer grown in place a few bytes at a time (a string builder reallocs
 * on every append) is a sampled block for most of its appends, and telling
 * the profile at each was 9 % of bench_realloc's time (two atomic adds, a
 * lock and a bucket); gperftools' realloc tells its profile nothing when
 * it keeps a block.  The walk (hci_heap_walk_samples) always reports the
 * block's current size; only the bytes-allocated counters lag, by at most
 * an eighth of the block. */
static void resample_in_place(hc_span_t *s, size_t size, bool exact) {
  size_t told = s->sample_size;
  s->req_size = size;
  atomic_fetch_and_explicit(&s->meta.xflags, (uint16_t)~HC_OBJ_SLACK_MASK, memory_order_relaxed); /* hci_usable_slot's mark */
  if (!exact && size <= told + (told >> 3) && size >= told - (told >> 3)) return;
  const hci_sample_listener_t *li = atomic_load_explicit(&sample_listener, memory_order_acquire);
  HC_USDT_SAMPLE_FREE(s->start, told, s->meta.stack_id);
  if (li && li->on_free) li->on_free(s->sample_est);
  s->sample_size = size;
  HC_USDT_SAMPLE_ALLOC(s->start, size, s->meta.stack_id);
  if (li && li->on_alloc) s->sample_est = li->on_alloc(s->meta.stack_id, size, s->weight);
  if (li && li->after_alloc) li->after_alloc();
}

/* Records a new requested size for an object kept in place by realloc. */
static void set_requested_size(void *p, size_t size) {
  hc_span_t *s = hci_pagemap_span((uintptr_t)p);
  unsigned cls = hci_pagemap_class((uintptr_t)p);
  if (!cls) {
    s->req_size = size;
    return;
  }
  if (!s->objmeta) return;
  hc_objmeta_t *m = &s->objmeta[object_index((uintptr_t)p, s, cls)];
  uint16_t f = atomic_load_explicit(&m->xflags, memory_order_relaxed);
  f = (uint16_t)((f & ~HC_OBJ_SLACK_MASK) | ((hci_classes[cls].size - size) & HC_OBJ_SLACK_MASK));
  atomic_store_explicit(&m->xflags, f, memory_order_relaxed);
}

// ---- internal entry points used by override.c ----

void *hci_malloc_ra(size_t size, uintptr_t ra) { return hc_malloc_fast(size, ra); }

void *hci_calloc_ra(size_t n, size_t size, uintptr_t ra) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) return enomem(SIZE_MAX, 0, true);
  return hc_calloc_fast(total, ra);
}

void *hci_memalign_ra(size_t align, size_t size, uintptr_t ra) {
  if (align <= 16) return hc_malloc_fast(size, ra);
  if (size > HC_MAX_REQUEST || align > HC_MAX_REQUEST) return enomem(size, align, false);
  size_t up = hc_aligned_fast_size(size, align);
  if (up) return hc_malloc_fast(up, ra);
  return alloc_generic(size, align, ra, 0, 0, false);
}

/* Would a fresh block of `size` be of the block's class?  A sampled small
 * object's page stands for its class (hci_usable_size). */
static bool same_class(const hc_span_t *s, unsigned cls, bool sampled, size_t size) {
  unsigned now_cls = cls ? cls : sampled && s->req_size <= HC_MAX_SMALL ? hci_size_class(s->req_size) : 0;
  size_t room = room_for(size);
  return now_cls && room <= HC_MAX_SMALL && hci_size_class(room) == now_cls;
}

static void *realloc_general(void *p, size_t size, uintptr_t ra) hc_noinline;

/* A small block that grows gets a class an eighth above the request: a
 * buffer grown step by step (a string builder reallocs on every append)
 * otherwise moves at every class, an eighth apart; this way at every
 * other one (mimalloc's bins are a quarter apart).  Not in checker mode,
 * where the block's record keeps the requested size and slack, nor with
 * malloc hooks, which are told the size of the new block (the callers
 * check).  Only a step (at most a quarter of the block): a block that
 * doubles is a vector whose next growth doubles again, and headroom there
 * was an eighth of its memory wasted (bench_realloc's peak RSS,
 * docs/performance.md). */
static inline size_t realloc_want(size_t size, size_t usable) {
  return size > usable && size - usable <= usable / 4 && size < HC_MAX_SMALL - (size >> 3) ? size + (size >> 3) : size;
}

/* The move: a new block of want bytes (size when that fails), the first
 * min(old, size) bytes copied, p freed.  NULL (p kept) when there is no
 * memory. */
static inline void *realloc_move(void *p, size_t size, size_t want, size_t old, uintptr_t ra) {
  void *q = hc_malloc_fast(want, ra);
  if (!q && want != size) q = hc_malloc_fast(want = size, ra);
  if (!q) {
    HC_USDT_MEMORY_REALLOC_RETRY(size, p);
    return NULL;
  }
  if (want != size && !hci_pagemap_class((uintptr_t)q)) {
    /* Sampled: the profile is told the requested size. */
    hc_span_t *qs = hci_pagemap_span((uintptr_t)q);
    if (qs->is_sampled) resample_in_place(qs, size, true); /* told `want` a moment ago */
  }
  memcpy(q, p, old < size ? old : size);
  hc_free_fast(p, ra);
  return q;
}

/* realloc's common cases up front: a small object, outside checker mode
 * and without hooks, found by the free fast path's pagemap lookup, that
 * keeps its block (the new size fits and wastes at most half of it, or a
 * fresh block would be of the same class) or moves to a small block.  In
 * one function with every other case a kept block took 76 instructions
 * (the general path's frame and tests), about 45 here.  Anything else, a
 * freed or foreign pointer included, is realloc_general's, which reports
 * it; so is a one-object class's block, which may grow in place. */
void *hci_realloc_ra(void *p, size_t size, uintptr_t ra) {
  /* realloc(NULL, n) is malloc: lua allocates every object this way
   * (through realloc_general it took 14 instructions more than malloc). */
  if (!p) return hc_malloc_fast(size, ra);
  uintptr_t lofs, off, otag;
  if (hc_likely(size && !(hci_record_all | hci_hooks_on) && hc_pm_free_lookup(p, &lofs, &off, &otag) && lofs)) {
    unsigned cls = hci_lofs_class(lofs);
    const hc_class_info_t *ci = &hci_classes[cls];
    size_t usable = ci->size;
    if (hc_is_object_start(off, ci) && !hc_fl_is_free(p)) {
      if (size <= usable && (size >= usable / 2 || hci_size_class(size) == cls)) return p;
      if (ci->objs > 1) return realloc_move(p, size, realloc_want(size, usable), usable, ra);
    }
  }
  return realloc_general(p, size, ra);
}

/* p is not NULL (hci_realloc_ra took that case). */
static void *realloc_general(void *p, size_t size, uintptr_t ra) {
  if (size == 0) {
    hc_free_fast(p, ra);
    return NULL;
  }
  /* A small object is checked and sized from its pagemap entry (class and
   * span start, as the free fast path), not from its span record: in a
   * large heap the record is one more cache miss per call, and
   * bench_realloc's realloc spent most of its time on it and the entry
   * (docs/performance.md, "Server, realloc and pairs"; now the fast entry:
   * "larson and random_live (session 13)").  The record is read only for a
   * large block, and in checker mode for the object's record. */
  const hc_pm_fast_t *f = hci_pagemap_fast_entry((uintptr_t)p);
  unsigned cls = f ? hci_lofs_class(f->lofs) : 0;
  hc_span_t *s = NULL;
  size_t usable;
  if (cls) {
    uintptr_t off = (uint32_t)((uint32_t)(uintptr_t)p - f->start_lo);
    if (!hc_is_object_start(off, &hci_classes[cls]) || off >= (uintptr_t)hci_classes[cls].objs * hci_classes[cls].size)
      bad_pointer("realloc", p, ra, "not the start of a heapcheck object");
    /* A freed block is realloc's error, said as realloc's (the free at the
     * end would otherwise call it free's double free).  In checker mode
     * the record knows (spans get records only once recording is on, and
     * it never goes off); otherwise the free mark (free_list.h). */
    const hc_objmeta_t *m = NULL;
    if (hci_record_all) {
      s = hci_pagemap_span((uintptr_t)p);
      if (s->objmeta) m = &s->objmeta[object_index((uintptr_t)p, s, cls)];
    }
    if (m ? m->stack_id == HC_STACK_NONE : hc_fl_is_free(p)) {
      if (!s) s = hci_pagemap_span((uintptr_t)p);
      if (never_carved(s, object_index((uintptr_t)p, s, cls))) bad_pointer("realloc", p, ra, NEVER_HANDED_OUT);
      realloc_freed(p, ra);
    }
    usable = hci_classes[cls].size;
  } else {
    s = hci_pagemap_span((uintptr_t)p);
    if (s && span_freed(s)) realloc_freed(p, ra);
    if (!s || s->state != HC_SPAN_LARGE || s->start != (uintptr_t)p)
      bad_pointer("realloc", p, ra, "not allocated by heapcheck");
    usable = s->npages << HC_PAGE_SHIFT;
  }
  /* Keep the block when the new size fits and wastes at most half of it,
   * or when a fresh block would be of the same class (checker mode:
   * realloc(p, malloc_usable_size(p)) of a 3-byte block must not move). */
  bool sampled = !cls && s->is_sampled;
  /* In checker mode a small object's record keeps class size - requested
   * size in HC_OBJ_SLACK_MASK: a slack that does not fit moves the block. */
  bool slack_fits = !cls || !hci_record_all || usable - size <= HC_OBJ_SLACK_MASK;
  /* size < usable + room, not room_for(size) <= usable: room_for(SIZE_MAX)
   * wraps to 0, and realloc(p, SIZE_MAX) "fitted" (checker mode cleared
   * to the end of the address space: gperftools' tcmalloc_large_unittest). */
  if (size <= usable - (hci_record_all != 0) && slack_fits &&
      (size >= usable / 2 || same_class(s, cls, sampled, size))) {
    /* A sampled block stays too (a program growing into its usable size
     * expects that), and the profile is told its new size as gperftools'
     * hooks are: the old sample freed, a sample of the new size taken. */
    if (sampled) resample_in_place(s, size, false);
    if (hci_record_all) {
      /* The cut-off tail keeps no stale pointer for a later grow, and a
       * small object's grown tail is cleared too: zero already when every
       * path keeps the invariant (clear_freed's comment), cheap to make
       * sure of.  A large block's tail is zero (pages the page heap had
       * zero, never written: its usable size is the requested one). */
      size_t was = hci_requested_size(p);
      if (size < was) memset((char *)p + size, 0, was - size);
      else if (cls && size > was) memset((char *)p + was, 0, size - was);
    }
    if (hci_record_all || !cls) set_requested_size(p, size);
    return p;
  }
  /* A large block grows into the free pages after it when there are
   * enough: a buffer grown step by step is then never copied, and the
   * blocks it leaves behind do not pile up.  A sampled one too (blocks
   * of a few hundred KiB and up nearly always are): it was excluded, so
   * python3's growing lists moved at every step, 1.8 -> 4.6 MB through
   * nine new places, 27 MB of address space touched (peak RSS 52 MB,
   * glibc 38); the profile is told its new size as when it stays put.  A
   * sampled small object (a page of its own, its class's size) moves as
   * before: its usable size is its class's. */
  if (!cls && (!sampled || s->req_size > HC_MAX_SMALL) && room_for(size) > usable &&
      size <= atomic_load_explicit(&max_request, memory_order_relaxed) &&
      hci_ph_grow(s, (room_for(size) + HC_PAGE_SIZE - 1) >> HC_PAGE_SHIFT)) {
    if (sampled) resample_in_place(s, size, false);
    else set_requested_size(p, size);
    return p;
  }
  /* Headroom for a growing small block (realloc_want). */
  size_t want = cls && !(hci_record_all | hci_hooks_on) ? realloc_want(size, usable) : size;
  /* A one-object class's block (36 KiB and up) grows in place too, into
   * the free pages after its span, and takes the class of the new size:
   * a string builder passed through a span of every such class, each
   * freed behind it in the page heap, where their 5-32-page runs did not
   * fit the next ones (bench_realloc: 5-12 MB of such runs at each heap
   * growth; docs/performance.md, "Memory, seventh pass"). */
  if (cls && hci_classes[cls].objs == 1 && size > usable && want <= HC_MAX_SMALL && !(hci_record_all | hci_hooks_on)) {
    unsigned to = hci_size_class(want);
    if (hci_classes[to].objs == 1 && hci_central_regrow(hci_pagemap_span((uintptr_t)p), cls, to)) return p;
  }
  return realloc_move(p, size, want, hci_record_all ? hci_requested_size(p) : usable, ra);
}
