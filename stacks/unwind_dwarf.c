/* unwind_dwarf.c - a DWARF (.eh_frame) unwinder for code built without frame
 * pointers (x86-64 Linux, glibc >= 2.35), with a lock-free per-PC rule cache.
 *
 * For each PC a rule "CFA = rsp|rbp + off; RA at CFA+ra_off; rbp
 * same/undefined/at CFA+rbp_off" comes from unwind_cfi.c (the module's
 * .eh_frame, every read bounds-checked) and is cached here, so a warm walk
 * costs a hash probe and two loads per frame.
 *
 * Invariants:
 *  - Every stack read lies in [sp0, hi): the walker's own stack pointer up to
 *    hci_unwind_stack_hi(sp0).  The CFA strictly increases, so walks end.
 *  - A cache entry is two words written without a lock; the key word is
 *    pc ^ mix(rule), so a reader that sees a torn pair (one word from a
 *    racing writer) rejects it.  A lost update only costs a recomputation.
 *  - Anything unwind_cfi.c does not understand, or finds malformed, ends the
 *    walk cleanly (K_STOP) instead of guessing or faulting.
 *  - Signal frames (K_SIGNAL: glibc's __restore_rt): the walk continues from the
 *    interrupted registers saved in the ucontext.  When those are on another
 *    stack (sigaltstack), the bounds switch to that stack's region, found
 *    the same way (a readable mapping), or the walk ends.
 * Limitation: rules are not invalidated on dlclose; a module loaded later at
 * the same address may hit stale rules (reads stay bounds-checked).  Call
 * hci_unwind_dwarf_cache_clear() after unloading code.
 * Locks: none (hci_meta_alloc once, for the cache).
 */
#include <string.h>

#include "hc_stacks.h"

#if defined(__x86_64__) && defined(__linux__)
#include <dlfcn.h>
#include <stddef.h>
#include <sys/ucontext.h>
#endif

#if defined(__x86_64__) && defined(__linux__) && defined(DLFO_EH_SEGMENT_TYPE)
#define HC_DWARF_X86_64 1
#endif

#ifdef HC_DWARF_X86_64

#include "unwind_cfi.h"

#define MAX_STEPS 256         /* frames walked at most, skip included */

/* ---- the per-PC cache ---- */

#define CACHE_BITS 13
#define CACHE_LEN ((size_t)1 << CACHE_BITS) /* 8192 entries, 128 KiB */
#define EXACT_BIT ((uint64_t)1 << 63)        /* key flag: rip is an exact PC (user addresses < 2^47) */

typedef struct cache_ent {
  _Atomic uint64_t key;  /* query ^ mix(rule) */
  _Atomic uint64_t rule; /* packed rule_t, bit 0 set when valid */
} cache_ent_t;

static _Atomic(cache_ent_t *) rule_cache;
/* Bumped when the cache is cleared (dlclose): walks memoised before are
 * stale (hc_unwind_memo_t.gen).  Never 0, which marks an empty memo. */
static _Atomic uint32_t rule_gen = 1;

static inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

/* Layout: 0 valid | 1-2 kind | 3 cfa_rbp | 4-5 rbp_how | 6-18 ra_off/8 |
 * 19-31 rbp_off/8 (13-bit signed) | 32-63 cfa_off (int32). */
static bool pack_rule(const rule_t *r, uint64_t *out) {
  int64_t ra8 = r->ra_off / 8, bp8 = r->rbp_off / 8;
  if (r->ra_off % 8 || r->rbp_off % 8) return false;
  if (ra8 < -4096 || ra8 > 4095 || bp8 < -4096 || bp8 > 4095) return false;
  if (r->cfa_off < INT32_MIN || r->cfa_off > INT32_MAX) return false;
  *out = 1 | (uint64_t)r->kind << 1 | (uint64_t)(r->cfa_rbp != 0) << 3 | (uint64_t)r->rbp_how << 4 |
         ((uint64_t)ra8 & 0x1fff) << 6 | ((uint64_t)bp8 & 0x1fff) << 19 |
         (uint64_t)(uint32_t)(int32_t)r->cfa_off << 32;
  return true;
}

static inline int64_t sext13(uint64_t v) { return (int64_t)(v << 51) >> 51; }

static inline void unpack_rule(uint64_t w, rule_t *r) {
  r->kind = (int)(w >> 1 & 3);
  r->cfa_rbp = (int)(w >> 3 & 1);
  r->rbp_how = (int)(w >> 4 & 3);
  r->ra_off = sext13(w >> 6 & 0x1fff) * 8;
  r->rbp_off = sext13(w >> 19 & 0x1fff) * 8;
  r->cfa_off = (int32_t)(uint32_t)(w >> 32);
}

static inline size_t cache_slot(uint64_t q) { return (size_t)((q * 0x9e3779b97f4a7c15ull) >> (64 - CACHE_BITS)) & ~(size_t)1; }

static cache_ent_t *cache_get(void) {
  cache_ent_t *c = atomic_load_explicit(&rule_cache, memory_order_acquire);
  if (hc_likely(c != NULL)) return c;
  cache_ent_t *mine = hci_meta_alloc(CACHE_LEN * sizeof(cache_ent_t));
  if (mine == NULL) return NULL;
  if (!atomic_compare_exchange_strong_explicit(&rule_cache, &c, mine, memory_order_acq_rel,
                                               memory_order_acquire)) {
    hci_meta_free(mine, CACHE_LEN * sizeof(cache_ent_t));
    return c;
  }
  return mine;
}

static inline bool cache_lookup(cache_ent_t *cache, uint64_t q, rule_t *r) {
  size_t i = cache_slot(q);
  for (int way = 0; way < 2; way++) {
    uint64_t w = atomic_load_explicit(&cache[i + way].rule, memory_order_relaxed);
    uint64_t k = atomic_load_explicit(&cache[i + way].key, memory_order_relaxed);
    if ((w & 1) && k == (q ^ mix64(w))) {
      unpack_rule(w, r);
      return true;
    }
  }
  return false;
}

static void cache_insert(cache_ent_t *cache, uint64_t q, uint64_t w) {
  size_t i = cache_slot(q);
  /* Prefer an empty way; otherwise evict the way chosen by another hash bit. */
  size_t way = (atomic_load_explicit(&cache[i].rule, memory_order_relaxed) & 1) == 0 ? 0
               : (atomic_load_explicit(&cache[i + 1].rule, memory_order_relaxed) & 1) == 0 ? 1
               : (size_t)(mix64(q) & 1);
  atomic_store_explicit(&cache[i + way].rule, w, memory_order_relaxed);
  atomic_store_explicit(&cache[i + way].key, q ^ mix64(w), memory_order_relaxed);
}

void hci_unwind_dwarf_cache_clear(void) {
  hci_eh_cache_clear();
  if (atomic_fetch_add_explicit(&rule_gen, 1, memory_order_relaxed) + 1 == 0)
    atomic_store_explicit(&rule_gen, 1, memory_order_relaxed);
  cache_ent_t *c = atomic_load_explicit(&rule_cache, memory_order_acquire);
  if (c == NULL) return;
  for (size_t i = 0; i < CACHE_LEN; i++) {
    atomic_store_explicit(&c[i].rule, 0, memory_order_relaxed);
    atomic_store_explicit(&c[i].key, 0, memory_order_relaxed);
  }
}

bool hci_unwind_dwarf_available(void) { return hci_eh_available(); }

/* ---- the walk ---- */

typedef struct regs {
  uintptr_t rip, rsp, rbp;
  bool exact;        /* rip is a PC, not a return address */
} regs_t;

/* The stack words a walk read, for the memo (NULL when not kept). */
typedef struct walk_log {
  hc_unwind_memo_t *m;
  bool spoiled; /* too many words, or a signal frame (its stack may move) */
} walk_log_t;

/* [lo, hi): the readable stack; a read of 8 bytes at a must fit. */
static inline bool load_word(uintptr_t lo, uintptr_t hi, uintptr_t a, uintptr_t *out) {
  if (a < lo || a > hi - sizeof(uintptr_t)) return false;
  memcpy(out, (const void *)a, sizeof *out);
  return true;
}

static inline bool load_logged(walk_log_t *log, uintptr_t lo, uintptr_t hi, uintptr_t a, uintptr_t *out) {
  if (!load_word(lo, hi, a, out)) return false;
  if (log) {
    if (log->m->nloads < HC_UNWIND_MEMO_LOADS) {
      log->m->addr[log->m->nloads] = a;
      log->m->val[log->m->nloads++] = *out;
    } else {
      log->spoiled = true;
    }
  }
  return true;
}

/* One step: the caller's registers from r.  False ends the walk.  [*lo, *hi)
 * is the stack being walked; a signal frame may move it to the interrupted
 * stack (sigaltstack handlers). */
static rule_t rule_for(cache_ent_t *cache, uintptr_t rip, bool exact) {
  rule_t rule;
  uint64_t q = rip | (exact ? EXACT_BIT : 0);
  if (cache == NULL || !cache_lookup(cache, q, &rule)) {
    bool cacheable;
    uint64_t w;
    rule = hci_cfi_rule(rip, exact, &cacheable);
    if (cache && cacheable && pack_rule(&rule, &w)) cache_insert(cache, q, w);
  }
  return rule;
}

bool hci_unwind_keeps_fp(uintptr_t ra) {
  if (!hci_eh_available()) return true;
  rule_t rule = rule_for(cache_get(), ra, false);
  return rule.kind == K_NORMAL && rule.cfa_rbp;
}

static bool step(cache_ent_t *cache, regs_t *r, uintptr_t *lo_p, uintptr_t *hi_p, walk_log_t *log) {
  uintptr_t lo = *lo_p, hi = *hi_p;
  rule_t rule = rule_for(cache, r->rip, r->exact);
  /* A walk that ends at an address no module covers (yet) is not kept: a
   * module loaded there later would let it go on. */
  if (log && rule.kind == K_STOP) log->spoiled = true;
  if (rule.kind == K_SIGNAL) {
    if (log) log->spoiled = true;
    /* The handler returned to __restore_rt with rsp at the ucontext. */
    uintptr_t uc = r->rsp, rip, rsp, rbp;
    if (!load_word(lo, hi, uc + offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]), &rip) ||
        !load_word(lo, hi, uc + offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]), &rsp) ||
        !load_word(lo, hi, uc + offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP]), &rbp))
      return false;
    if (rsp <= r->rsp || rsp >= hi) {
      /* The handler ran on another stack: continue on the interrupted one
       * only if it is a readable stack region of its own. */
      uintptr_t nhi = hci_unwind_stack_hi(rsp);
      if (nhi == 0 || (rsp < hi && rsp >= lo)) return false;
      *lo_p = rsp;
      *hi_p = nhi;
    }
    r->rip = rip;
    r->rsp = rsp;
    r->rbp = rbp;
    r->exact = true;
    return true;
  }
  if (rule.kind != K_NORMAL) return false;
  uintptr_t cfa = (rule.cfa_rbp ? r->rbp : r->rsp) + (uintptr_t)rule.cfa_off;
  if (cfa <= r->rsp || cfa > hi) return false;
  uintptr_t ra, rbp = r->rbp;
  if (!load_logged(log, lo, hi, cfa + (uintptr_t)rule.ra_off, &ra)) return false;
  if (rule.rbp_how == R_OFFSET && !load_logged(log, lo, hi, cfa + (uintptr_t)rule.rbp_off, &rbp)) return false;
  if (rule.rbp_how == R_UNDEF) rbp = 0;
  r->rip = ra;
  r->rsp = cfa;
  r->rbp = rbp;
  r->exact = false;
  return true;
}

static int dwarf_walk(uintptr_t *pcs, int max, int skip, regs_t r, walk_log_t *log) {
  uintptr_t lo = r.rsp;
  uintptr_t hi = hci_unwind_stack_hi(lo);
  if (hi < lo + sizeof(uintptr_t)) return 0;
  cache_ent_t *cache = cache_get();
  int n = 0;
  for (int steps = 0; n < max && steps < MAX_STEPS; steps++) {
    if (!step(cache, &r, &lo, &hi, log)) break;
    if (r.rip < 4096) break; /* outermost frame */
    if (skip > 0) skip--;
    else pcs[n++] = r.rip;
  }
  return n;
}

hc_noinline int hci_unwind_dwarf(uintptr_t *pcs, int max, int skip) {
  if (max > HC_MAX_STACK_DEPTH) max = HC_MAX_STACK_DEPTH;
  if (max <= 0) return 0;
  if (skip < 0) skip = 0;
  if (!hci_eh_available()) {
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    int n = hci_unwind_fp_skip(pcs, max, skip + 1, fp, fp);
    __asm__ volatile("" ::: "memory");
    return n;
  }
  /* Our own registers at one instruction: its PC, with rsp/rbp as they are
   * there, is a frame the CFI describes exactly. */
  regs_t r;
  __asm__ volatile("leaq 0(%%rip), %0\n\t"
                   "movq %%rsp, %1\n\t"
                   "movq %%rbp, %2"
                   : "=&r"(r.rip), "=&r"(r.rsp), "=&r"(r.rbp));
  r.exact = true;
  /* The first step yields the return address into our caller: drop it too. */
  int n = dwarf_walk(pcs, max, skip + 1, r, NULL);
  __asm__ volatile("" ::: "memory");
  return n;
}

/* The allocator is built with frame pointers up to the function that malloc
 * tail-calls, so the frame record holding ra is a few cheap steps away; the
 * caller's registers there are exactly what a DWARF step would compute, and
 * the 4-5 CFI lookups for allocator frames are saved. */
#define ALLOCATOR_FRAMES 8

/* Whether memo holds the walk from r over the words as they are now. */
static bool memo_holds(const hc_unwind_memo_t *m, const regs_t *r, int max) {
  if (m->gen != atomic_load_explicit(&rule_gen, memory_order_relaxed) || m->ra != r->rip || m->rsp != r->rsp ||
      m->rbp != r->rbp || m->n > max)
    return false;
  /* The words lie in this thread's stack above rsp, which is readable:
   * they were read from it, and the stack above rsp has not moved. */
  uintptr_t hi = hci_unwind_stack_hi(r->rsp);
  for (int i = 0; i < m->nloads; i++) {
    uintptr_t a = m->addr[i], v;
    if (a < r->rsp || a > hi - sizeof(uintptr_t)) return false;
    memcpy(&v, (const void *)a, sizeof v);
    if (v != m->val[i]) return false;
  }
  return true;
}

hc_noinline int hci_unwind_dwarf_at(uintptr_t *pcs, int max, uintptr_t ra, hc_unwind_memo_t *memo) {
  if (max > HC_MAX_STACK_DEPTH) max = HC_MAX_STACK_DEPTH;
  if (max <= 0) return 0;
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
  uintptr_t rec = hci_eh_available() ? hci_unwind_fp_find(ra, ALLOCATOR_FRAMES, fp, fp) : 0;
  int n;
  if (rec == 0) {
    n = hci_unwind_dwarf(pcs, max, 0);
  } else {
    regs_t r = {.rip = ra, .rsp = rec + 2 * sizeof(uintptr_t), .rbp = ((const uintptr_t *)rec)[0], .exact = false};
    if (memo && memo_holds(memo, &r, max)) {
      memcpy(pcs, memo->pcs, (size_t)memo->n * sizeof *pcs);
      n = memo->n;
    } else {
      walk_log_t log = {.m = memo, .spoiled = false};
      if (memo) {
        memo->gen = 0; /* empty while it is rewritten */
        memo->nloads = 0;
      }
      pcs[0] = ra;
      n = 1 + dwarf_walk(pcs + 1, max - 1, 0, r, memo ? &log : NULL);
      if (memo && !log.spoiled) {
        memo->ra = r.rip;
        memo->rsp = r.rsp;
        memo->rbp = r.rbp;
        memo->n = n;
        memcpy(memo->pcs, pcs, (size_t)n * sizeof *pcs);
        memo->gen = atomic_load_explicit(&rule_gen, memory_order_relaxed);
      }
    }
  }
  __asm__ volatile("" ::: "memory");
  return n;
}

#else /* !HC_DWARF_X86_64: the frame-pointer walk stands in */

bool hci_unwind_dwarf_available(void) { return false; }

void hci_unwind_dwarf_cache_clear(void) {}

hc_noinline int hci_unwind_dwarf(uintptr_t *pcs, int max, int skip) {
  if (skip < 0) skip = 0;
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
  int n = hci_unwind_fp_skip(pcs, max, skip + 1, fp, fp);
  __asm__ volatile("" ::: "memory");
  return n;
}

bool hci_unwind_keeps_fp(uintptr_t ra) {
  (void)ra;
  return true;
}

hc_noinline int hci_unwind_dwarf_at(uintptr_t *pcs, int max, uintptr_t ra, hc_unwind_memo_t *memo) {
  (void)ra;
  (void)memo;
  int n = hci_unwind_dwarf(pcs, max, 0);
  __asm__ volatile("" ::: "memory");
  return n;
}

#endif
