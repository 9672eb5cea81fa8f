/* unwind_dwarf.c - a DWARF (.eh_frame) unwinder for code built without frame
 * pointers (x86-64 Linux, glibc >= 2.35), with a lock-free per-PC rule cache.
 *
 * For each PC a rule "CFA = rsp|rbp + off; RA at CFA+ra_off; rbp
 * same/undefined/at CFA+rbp_off" comes from unwind_cfi.c (the module's
 * .eh_frame, every read bounds-checked) and is cached here, so a warm walk
 * costs a hash probe and two loads per frame.  Rules from DWARF expressions
 * (K_EXPR: a CFA loaded from the stack, rbp saved relative to rbp; GCC's
 * realigned frames) are cached too and stepped off the fast path.
 *
 * Invariants:
 *  - Every stack read lies in [sp0, hi): the walker's own stack pointer up to
 *    hci_unwind_stack_hi(sp0).  The CFA strictly increases, so walks end.
 *  - A cache entry is two words written without a lock; the key word is
 *    pc ^ seal(rule), so a reader that sees a torn pair (one word from a
 *    racing writer) rejects it.  A lost update only costs a recomputation.
 *  - Anything unwind_cfi.c does not understand, or finds malformed, ends the
 *    walk cleanly (K_STOP) instead of guessing or faulting.
 *  - Signal frames (K_SIGNAL: glibc's __restore_rt): the walk continues from the
 *    interrupted registers saved in the ucontext.  When those are on another
 *    stack (sigaltstack), the bounds switch to that stack's region, found
 *    the same way (a readable mapping), or the walk ends.
 * Rules are per pc: after code is unloaded, hci_unwind_dwarf_cache_clear()
 * must run (checker/dlclose_hook.c calls it after every dlclose), or a module
 * loaded later at the same address meets the old module's rules and
 * memoised walks (reads stay bounds-checked; the stack ends early).
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
#include "unwind_memo.h"

#define MAX_STEPS 256         /* frames walked at most, skip included */

/* ---- the per-PC cache ---- */

#define CACHE_BITS 13
#define CACHE_LEN ((size_t)1 << CACHE_BITS) /* 8192 entries, 128 KiB */
#define EXACT_BIT ((uint64_t)1 << 63)        /* key flag: rip is an exact PC (user addresses < 2^47) */

typedef struct cache_ent {
  _Atomic uint64_t key;  /* query ^ seal(rule) */
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

/* Layout: 0 valid | 1-3 kind | then by kind (signed fields; offsets
 * marked /8 are stored divided by 8):
 *   K_NORMAL: 4 cfa_rbp | 5-6 rbp_how | 7-18 ra_off/8 | 19-31 rbp_off/8 |
 *             32-63 cfa_off
 *   K_EXPR:   4 cfa_rbp | 5 cfa_deref | 6-8 rbp_how | 9-10 rbp_base |
 *             11-22 ra_off/8 | 23-35 rbp_off/8 | 36-49 cfa_add | 50-63 cfa_off
 * A rule whose numbers do not fit is not cached (computed at each step). */
#define W_KIND(w) ((int)((w) >> 1 & 7))

/* Field [shift, shift + bits) of w, sign-extended. */
static inline int64_t sfield(uint64_t w, int shift, int bits) { return (int64_t)(w << (64 - shift - bits)) >> (64 - bits); }

/* Puts v (divided by scale, which must divide it) in field [shift, shift + bits). */
static inline bool put_sfield(uint64_t *w, int64_t v, int64_t scale, int shift, int bits) {
  int64_t lim = (int64_t)1 << (bits - 1);
  if (v % scale || v / scale < -lim || v / scale >= lim) return false;
  *w |= ((uint64_t)(v / scale) & (((uint64_t)1 << bits) - 1)) << shift;
  return true;
}

static bool pack_rule(const rule_t *r, uint64_t *out) {
  uint64_t w = 1 | (uint64_t)r->kind << 1 | (uint64_t)(r->cfa_rbp != 0) << 4;
  if (r->kind == K_EXPR) {
    w |= (uint64_t)(r->cfa_deref != 0) << 5 | (uint64_t)r->rbp_how << 6 | (uint64_t)r->rbp_base << 9;
    if (!put_sfield(&w, r->ra_off, 8, 11, 12) || !put_sfield(&w, r->rbp_off, 8, 23, 13) ||
        !put_sfield(&w, r->cfa_add, 1, 36, 14) || !put_sfield(&w, r->cfa_off, 1, 50, 14))
      return false;
  } else {
    w |= (uint64_t)r->rbp_how << 5;
    if (!put_sfield(&w, r->ra_off, 8, 7, 12) || !put_sfield(&w, r->rbp_off, 8, 19, 13) ||
        !put_sfield(&w, r->cfa_off, 1, 32, 32))
      return false;
  }
  *out = w;
  return true;
}

static inline void unpack_rule(uint64_t w, rule_t *r) {
  *r = (rule_t){.kind = W_KIND(w), .cfa_rbp = (int)(w >> 4 & 1)};
  if (r->kind == K_EXPR) {
    r->cfa_deref = (int)(w >> 5 & 1);
    r->rbp_how = (int)(w >> 6 & 7);
    r->rbp_base = (int)(w >> 9 & 3);
    r->ra_off = sfield(w, 11, 12) * 8;
    r->rbp_off = sfield(w, 23, 13) * 8;
    r->cfa_add = sfield(w, 36, 14);
    r->cfa_off = sfield(w, 50, 14);
  } else {
    r->rbp_how = (int)(w >> 5 & 3);
    r->ra_off = sfield(w, 7, 12) * 8;
    r->rbp_off = sfield(w, 19, 13) * 8;
    r->cfa_off = sfield(w, 32, 32);
  }
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

/* The key word seals the rule word: a reader that sees the key of one
 * writer with the rule of another (or a half-written entry) finds them
 * unrelated.  Any bijection of the rule works; an odd multiply is one. */
static inline uint64_t seal(uint64_t w) { return w * 0x9e3779b97f4a7c15ull; }

static inline bool cache_lookup(cache_ent_t *cache, uint64_t q, uint64_t *out) {
  size_t i = cache_slot(q);
  for (int way = 0; way < 2; way++) {
    uint64_t w = atomic_load_explicit(&cache[i + way].rule, memory_order_relaxed);
    uint64_t k = atomic_load_explicit(&cache[i + way].key, memory_order_relaxed);
    if ((w & 1) && k == (q ^ seal(w))) {
      *out = w;
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
  atomic_store_explicit(&cache[i + way].key, q ^ seal(w), memory_order_relaxed);
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

bool hci_unwind_static_index(uintptr_t eh_lo, uintptr_t eh_hi) {
  if (!hci_cfi_static_index(eh_lo, eh_hi)) return false;
  /* Rules found before (frame-pointer guesses for every pc) are stale. */
  hci_unwind_dwarf_cache_clear();
  return true;
}

/* hci_eh_available, asked once: the answer (the link kind, whether ld.so
 * has _dl_find_object) never changes, and every capture asks.  0: not yet. */
static _Atomic signed char eh_known;
static inline bool eh_ok(void) {
  int v = atomic_load_explicit(&eh_known, memory_order_relaxed);
  if (hc_likely(v != 0)) return v > 0;
  bool ok = hci_eh_available();
  atomic_store_explicit(&eh_known, (signed char)(ok ? 1 : -1), memory_order_relaxed);
  return ok;
}

bool hci_unwind_dwarf_available(void) { return eh_ok(); }

/* ---- the walk ---- */

/* What a walk read and where it passed, for the memo (NULL when not kept):
 * the words in addr/val (cap of them), the registers of each frame. */
typedef struct walk_log {
  uintptr_t *addr, *val;
  int cap, nloads;
  uintptr_t *srsp, *srbp; /* frame k's rsp/rbp, k < scap */
  uint16_t *li;           /* frame k's first word */
  uint8_t *fl;            /* frame k's step: STEP_* */
  int scap, cur;          /* cur: the frame being stepped from */
  bool spoiled; /* too many words or frames, a signal frame (its stack may move), a word below its frame */
  bool bounds;  /* a word was outside the stack */
} walk_log_t;

/* A read by the step from the frame whose rsp is sp.  The memo relies on
 * every word it keeps lying at or above its frame's rsp (so a frame's words
 * and all outer ones are inside a stack that holds the frame): a rule that
 * reads below it (never seen in compiled code) is not memoised. */
static inline bool load_logged(walk_log_t *log, uintptr_t lo, uintptr_t hi, uintptr_t sp, uintptr_t a,
                               uintptr_t *out) {
  if (!load_word(lo, hi, a, out)) {
    if (log) log->bounds = true;
    return false;
  }
  if (log) {
    if (log->nloads < log->cap && a >= sp) {
      log->addr[log->nloads] = a;
      log->val[log->nloads++] = *out;
    } else {
      log->spoiled = true;
    }
  }
  return true;
}

/* Frame k of the walk has registers r; its words start at the next load. */
static inline void log_frame(walk_log_t *log, int k, const regs_t *r) {
  if (!log) return;
  if (k >= log->scap) {
    log->spoiled = true;
    return;
  }
  log->srsp[k] = r->rsp;
  log->srbp[k] = r->rbp;
  log->li[k] = (uint16_t)log->nloads;
  log->fl[k] = 0; /* no step (yet): the frame limit */
  log->cur = k;
}

/* *nomod (may be NULL): set when no module covers rip (never cached). */
static rule_t rule_for(cache_ent_t *cache, uintptr_t rip, bool exact, bool *nomod) {
  rule_t rule;
  uint64_t q = rip | (exact ? EXACT_BIT : 0), w;
  if (cache != NULL && cache_lookup(cache, q, &w)) {
    unpack_rule(w, &rule);
  } else {
    bool cacheable;
    rule = hci_cfi_rule(rip, exact, &cacheable);
    if (nomod) *nomod = !cacheable;
    if (cache && cacheable && pack_rule(&rule, &w)) cache_insert(cache, q, w);
  }
  return rule;
}

/* A caller in no module (JIT code) is walked by DWARF: step() crosses it by
 * its frame pointer and goes on by the CFI of the modules above it. */
bool hci_unwind_keeps_fp(uintptr_t ra) {
  if (!hci_eh_available()) return true;
  rule_t rule = rule_for(cache_get(), ra, false, NULL);
  return rule.kind == K_NORMAL && rule.cfa_rbp;
}

/* The frame-pointer convention, for a PC in no module: code generated at run
 * time (tcc -run, JIT compilers) has no .eh_frame but keeps rbp frames.
 * The step stays bounds-checked (normal_step); a wrong guess only ends the
 * walk or adds a frame, where the walk used to end at the JIT frame and the
 * program's own frames above it were lost. */
static const rule_t rule_nomod_fp = {.kind = K_NORMAL, .cfa_rbp = 1, .rbp_how = R_OFFSET,
                                     .cfa_off = 16, .ra_off = -8, .rbp_off = -16};

/* The step of a K_NORMAL frame: CFA = (rbp or rsp) + cfa_off, the return
 * address at CFA + ra_off, rbp saved at CFA + rbp_off (R_OFFSET). */
static inline bool normal_step(regs_t *r, uintptr_t lo, uintptr_t hi, walk_log_t *log, bool cfa_rbp, int64_t cfa_off,
                               int64_t ra_off, int rbp_how, int64_t rbp_off) {
  if (log && !log->spoiled)
    log->fl[log->cur] = (uint8_t)((cfa_rbp ? STEP_USES : 0) | (rbp_how == R_OFFSET ? STEP_KILLS | STEP_LOADS : 0) |
                                  (rbp_how == R_UNDEF ? STEP_KILLS : 0));
  uintptr_t cfa = (cfa_rbp ? r->rbp : r->rsp) + (uintptr_t)cfa_off;
  if (cfa <= r->rsp || cfa > hi) return false;
  uintptr_t ra, rbp = r->rbp;
  if (!load_logged(log, lo, hi, r->rsp, cfa + (uintptr_t)ra_off, &ra)) return false;
  if (rbp_how == R_OFFSET && !load_logged(log, lo, hi, r->rsp, cfa + (uintptr_t)rbp_off, &rbp)) return false;
  if (rbp_how == R_UNDEF) rbp = 0;
  r->rip = ra;
  r->rsp = cfa;
  r->rbp = rbp;
  r->exact = false;
  return true;
}

/* The step of a K_EXPR frame (a rule from DWARF expressions, unwind_cfi.c's
 * eval_expr): CFA = (rbp or rsp) + cfa_off, or the word there plus cfa_add
 * (GCC's realigned frames: the word rbp - N where the DRAP register was
 * pushed); the return address at CFA + ra_off; rbp as rbp_how says, saved
 * at or computed from the CFA or this frame's rsp or rbp.  Every word is
 * read as normal_step's, bounded and logged for the memo (a third word: the
 * memo keeps all three). */
static bool expr_step(regs_t *r, uintptr_t lo, uintptr_t hi, walk_log_t *log, const rule_t *rule) {
  bool from_reg = rule->rbp_how == R_AT || rule->rbp_how == R_VAL;
  bool uses = rule->cfa_rbp || (from_reg && rule->rbp_base == B_RBP);
  bool loads = rule->rbp_how == R_OFFSET || rule->rbp_how == R_AT;
  if (log && !log->spoiled)
    log->fl[log->cur] = (uint8_t)((uses ? STEP_USES : 0) | (rule->rbp_how != R_SAME ? STEP_KILLS : 0) |
                                  (loads ? STEP_LOADS : 0));
  uintptr_t cfa = (rule->cfa_rbp ? r->rbp : r->rsp) + (uintptr_t)rule->cfa_off;
  if (rule->cfa_deref) {
    if (!load_logged(log, lo, hi, r->rsp, cfa, &cfa)) return false;
    cfa += (uintptr_t)rule->cfa_add;
  }
  if (cfa <= r->rsp || cfa > hi) return false;
  uintptr_t ra, rbp = r->rbp;
  if (!load_logged(log, lo, hi, r->rsp, cfa + (uintptr_t)rule->ra_off, &ra)) return false;
  uintptr_t base = rule->rbp_base == B_RBP ? r->rbp : rule->rbp_base == B_RSP ? r->rsp : cfa;
  switch (rule->rbp_how) {
  case R_SAME: break;
  case R_UNDEF: rbp = 0; break;
  case R_OFFSET:
  case R_AT:
    if (!load_logged(log, lo, hi, r->rsp, (rule->rbp_how == R_AT ? base : cfa) + (uintptr_t)rule->rbp_off, &rbp))
      return false;
    break;
  case R_VAL: rbp = base + (uintptr_t)rule->rbp_off; break;
  default: return false;
  }
  r->rip = ra;
  r->rsp = cfa;
  r->rbp = rbp;
  r->exact = false;
  return true;
}

/* One step: the caller's registers from r.  False ends the walk.  [*lo, *hi)
 * is the stack being walked; a signal frame may move it to the interrupted
 * stack (sigaltstack handlers).  The usual case - a cached K_NORMAL rule -
 * is decoded straight from the cache word. */
static inline bool step(cache_ent_t *cache, regs_t *r, uintptr_t *lo_p, uintptr_t *hi_p, walk_log_t *log) {
  uint64_t w;
  if (hc_likely(cache != NULL) && cache_lookup(cache, r->rip | (r->exact ? EXACT_BIT : 0), &w) &&
      hc_likely(W_KIND(w) == K_NORMAL))
    return normal_step(r, *lo_p, *hi_p, log, w >> 4 & 1, sfield(w, 32, 32), sfield(w, 7, 12) * 8, (int)(w >> 5 & 3),
                       sfield(w, 19, 13) * 8);
  uintptr_t lo = *lo_p, hi = *hi_p;
  bool nomod = false;
  rule_t rule = rule_for(cache, r->rip, r->exact, &nomod);
  /* A walk through or ending at an address no module covers (yet) is not
   * kept: the code there may change, or a module be loaded there later. */
  if (log && (rule.kind == K_STOP || nomod)) log->spoiled = true;
  if (nomod && rule.kind == K_STOP) rule = rule_nomod_fp;
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
  if (rule.kind == K_EXPR) return expr_step(r, lo, hi, log, &rule);
  if (rule.kind != K_NORMAL) return false;
  return normal_step(r, lo, hi, log, rule.cfa_rbp, rule.cfa_off, rule.ra_off, rule.rbp_how, rule.rbp_off);
}

/* Walks from r, frame index k0 (for the log) on; *end says why it stopped. */
static int dwarf_walk(uintptr_t *pcs, int max, int skip, regs_t r, walk_log_t *log, int k0, int *end) {
  uintptr_t lo = r.rsp;
  uintptr_t hi = hci_unwind_stack_hi(lo);
  *end = END_FAIL;
  if (hi < lo + sizeof(uintptr_t)) return 0;
  *end = END_OUTER;
  cache_ent_t *cache = cache_get();
  int n = 0;
  for (int steps = 0; steps < MAX_STEPS; steps++) {
    if (n >= max) {
      *end = END_MAX;
      break;
    }
    if (!step(cache, &r, &lo, &hi, log)) {
      if (log && log->bounds) *end = END_FAIL;
      break;
    }
    if (r.rip < 4096) break; /* outermost frame */
    if (skip > 0) {
      skip--;
    } else {
      log_frame(log, k0 + n, &r);
      pcs[n++] = r.rip;
    }
  }
  return n;
}

/* Our own registers at one instruction (its PC, with rsp/rbp as they are
 * there: a frame the CFI describes exactly).  A macro: the registers must be
 * those of the function that uses them. */
#define OWN_REGS(r)                                                      \
  do {                                                                   \
    __asm__ volatile("leaq 0(%%rip), %0\n\t"                             \
                     "movq %%rsp, %1\n\t"                                \
                     "movq %%rbp, %2"                                    \
                     : "=&r"((r).rip), "=&r"((r).rsp), "=&r"((r).rbp)); \
    (r).exact = true;                                                    \
  } while (0)

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
  OWN_REGS(r);
  /* The first step yields the return address into our caller: drop it too. */
  int end;
  int n = dwarf_walk(pcs, max, skip + 1, r, NULL, 0, &end);
  __asm__ volatile("" ::: "memory");
  return n;
}

/* ---- the memo of the last walk (hc_unwind_memo_t) ---- */

/* The allocator is built with frame pointers up to the function that malloc
 * tail-calls, so the frame record holding ra is a few cheap steps away; the
 * caller's registers there are exactly what a DWARF step would compute, and
 * the 4-5 CFI lookups for allocator frames are saved. */
#define ALLOCATOR_FRAMES 8

static uint64_t hash_pow(int k) {
  uint64_t r = 1, b = HCI_STACK_HASH_B;
  for (; k; k >>= 1, b *= b)
    if (k & 1) r *= b;
  return r;
}

/* New stamps for the written memo slots [lo, hi) (hc_unwind_memo_way_t.ver),
 * outermost first: 64 bits never wrap, so no stamp is given twice in a
 * memo.  The counter stays in a register across the stores. */
static inline void stamp(hc_unwind_memo_t *mm, hc_unwind_memo_way_t *m, int lo, int hi) {
  uint64_t v = mm->vnext;
  for (int s = hi - 1; s >= lo; s--) m->ver[s] = ++v;
  mm->vnext = v;
}

/* A whole walk from r into the memo (frames from slot 0 while it walks,
 * then moved to the top).  Returns the frame count; the frames are in slots
 * [MF - n, MF) when the memo holds the walk (gen != 0), else in [0, n). */
static int memo_fill(hc_unwind_memo_t *mm, hc_unwind_memo_way_t *m, regs_t r) {
  m->gen = 0; /* empty while it is rewritten */
  m->same = false;
  m->id = 0; /* other frames: the id, if any, is given again (hci_unwind_memo_id) */
  m->n = 0;
  walk_log_t log = {.addr = m->addr, .val = m->val, .cap = MW, .srsp = m->rsp, .srbp = m->rbp, .li = m->wtop,
                    .fl = m->lv, .scap = MF, .spoiled = false};
  log_frame(&log, 0, &r);
  m->pcs[0] = r.rip;
  int end;
  int n = 1 + dwarf_walk(m->pcs + 1, MF - 1, 0, r, &log, 1, &end);
  if (log.spoiled) return n;
  int b = MF - n, nw = log.nloads;
  memmove(m->pcs + b, m->pcs, (size_t)n * sizeof *m->pcs);
  memmove(m->rsp + b, m->rsp, (size_t)n * sizeof *m->rsp);
  memmove(m->rbp + b, m->rbp, (size_t)n * sizeof *m->rbp);
  /* Outermost frame first: the words of each step move to the top (a
   * caller's rbp word only when that rbp matters, see STEP_*), wtop[k]
   * (its first word) becomes the count of words from it outward, fl[k]
   * whether its rbp matters.  Every write lands at or above what is still
   * to be read. */
  int w = MW, e = nw;
  bool live = false; /* past the last frame: nothing */
  uintptr_t amax = 0;
  for (int k = n - 1; k >= 0; k--) {
    int a = m->wtop[k];
    uint8_t fl = m->lv[k];
    w = keep_step_words(m->addr, m->val, w, m->addr, m->val, a, e, fl, live, &amax);
    e = a;
    live = rbp_live(fl, live);
    m->wtop[b + k] = (uint16_t)(MW - w);
    m->lv[b + k] = live;
  }
  m->hv[MF] = 0;
  for (int s = MF - 1; s >= b; s--) m->hv[s] = m->hv[s + 1] * HCI_STACK_HASH_B + m->pcs[s];
  stamp(mm, m, b, MF);
  m->amax = amax;
  m->rsp[MF] = UINTPTR_MAX;
  m->rsp0 = r.rsp;
  m->end = (uint8_t)end;
  m->fresh = (uint8_t)n;
  m->n = n;
  m->gen = atomic_load_explicit(&rule_gen, memory_order_relaxed);
  return n;
}

/* Drops the d outermost frames of m (and the words of their steps), moving
 * the rest up: a walk that does not fit keeps its inner frames. */
static void memo_drop_outer(hc_unwind_memo_t *mm, hc_unwind_memo_way_t *m, int d) {
  int b = MF - m->n, keep = m->n - d;
  int wd = m->wtop[MF - d], wb = m->wtop[b];
  m->hv[MF] = m->hv[MF - d];
  memmove(m->pcs + b + d, m->pcs + b, (size_t)keep * sizeof *m->pcs);
  memmove(m->rsp + b + d, m->rsp + b, (size_t)keep * sizeof *m->rsp);
  memmove(m->rbp + b + d, m->rbp + b, (size_t)keep * sizeof *m->rbp);
  memmove(m->hv + b + d, m->hv + b, (size_t)keep * sizeof *m->hv);
  memmove(m->lv + b + d, m->lv + b, (size_t)keep * sizeof *m->lv);
  for (int s = MF - 1; s >= b + d; s--) m->wtop[s] = (uint16_t)(m->wtop[s - d] - wd);
  memmove(m->addr + MW - (wb - wd), m->addr + MW - wb, (size_t)(wb - wd) * sizeof *m->addr);
  memmove(m->val + MW - (wb - wd), m->val + MW - wb, (size_t)(wb - wd) * sizeof *m->val);
  m->n = keep;
  m->end = END_MAX;
  m->id = 0;
  stamp(mm, m, b + d, MF); /* every slot's outer frames changed */
}

/* p's frames 0..c-1 and its words are a fresh walk from r0 whose frame c
 * has the registers of memo slot j, and the words the memo's walk read from
 * there on are unchanged: the rest of the walk is the memo's.  Writes the
 * fresh frames below slot j (dropping outer frames when they do not fit)
 * and returns the slot of the innermost frame. */
static int splice(hc_unwind_memo_t *mm, hc_unwind_memo_way_t *m, const regs_t *r0, const prefix_t *p, int c, int nl,
                  int j) {
  int old_b = MF - m->n;
  /* The same frames as last time: as many fresh ones before slot j, equal. */
  m->same = j - old_b == c && (c == 0 || memcmp(p->pcs, m->pcs + old_b, (size_t)c * sizeof *p->pcs) == 0);
  if (!m->same) m->id = 0; /* the way's id names its frames (way_answers) */
  if (j - c < 0) {
    int d = c - j;
    m->n = MF - j;
    memo_drop_outer(mm, m, d);
    j += d;
  }
  int b = j - c, wk[PRE_FRAMES];
  bool lk[PRE_FRAMES], live = m->lv[j];
  uintptr_t amax = m->amax;
  prefix_words(p, c, nl, m->addr, m->val, MW - m->wtop[j], &amax, &live, wk, lk);
  /* The frames, outermost first (each hash from the next one out). */
  for (int k = c - 1; k >= 0; k--) {
    __asm__("" : "+r"(k)); /* plain loops: no calls to memcpy for each array */
    int s = b + k;
    m->pcs[s] = p->pcs[k];
    m->rsp[s] = p->srsp[k];
    m->rbp[s] = p->srbp[k];
    m->wtop[s] = (uint16_t)(MW - wk[k]);
    m->lv[s] = lk[k];
    m->hv[s] = m->hv[s + 1] * HCI_STACK_HASH_B + p->pcs[k];
  }
  stamp(mm, m, b, j);
  m->amax = amax;
  m->rsp0 = r0->rsp;
  m->fresh = (uint8_t)c;
  m->n = MF - b;
  return b;
}

/* The entry of hc_unwind_memo_t.first for start pc ra. */
static inline int first_slot(uintptr_t ra) { return (int)((ra * 0x9e3779b97f4a7c15ull) >> (64 - HC_UNWIND_MEMO_FIRST_BITS)); }

/* The walk from r0 with the memo of the last one: up to PRE_FRAMES fresh
 * steps, each followed by a look for the same frame in the memo.  Returns
 * the slot of the innermost frame, or -1 when no frame matched (the caller
 * walks afresh), or -2 - i when site i answers (sites: the caller wants
 * only the id; the memo is left as it was).  The memo must hold at least
 * max frames of the new walk, or all of them. */
static int walk_memo(hc_unwind_memo_t *mm, hc_unwind_memo_way_t *m, int max, const regs_t *r0, bool sites) {
  if (m->gen != atomic_load_explicit(&rule_gen, memory_order_relaxed) || m->n <= 0) return -1;
  regs_t r = *r0;
  uintptr_t lo = r.rsp, hi = hci_unwind_stack_hi(lo);
  if (hi < lo + sizeof(uintptr_t) || m->amax > hi - sizeof(uintptr_t)) return -1;
  /* A walk that stopped at a word below its start could go on from a lower
   * start: only a start at or above it reproduces the stop. */
  if (m->end == END_FAIL && lo < m->rsp0) return -1;
  prefix_t p;
  walk_log_t log = {.addr = p.addr, .val = p.val, .cap = PRE_LOADS, .srsp = p.srsp, .srbp = p.srbp,
                    .li = p.li, .fl = p.fl, .scap = PRE_FRAMES, .spoiled = false};
  cache_ent_t *cache = cache_get();
  log_frame(&log, 0, &r);
  p.pcs[0] = r.rip;
  int c = 0, j = MF - m->n;
  for (;;) {
    while (m->rsp[j] < r.rsp) j++; /* rsp[MF] is the sentinel */
    /* rsp[j] == r.rsp >= lo: the words from j outward are in the stack. */
    if (j < MF && m->rsp[j] == r.rsp && m->pcs[j] == r.rip && (m->rbp[j] == r.rbp || !m->lv[j]) && !r.exact &&
        (m->end != END_MAX || c + (MF - j) >= max) && words_hold(m, j)) {
      if (c > 0) hci_memo_site_make(mm, m, r0, &p, c, log.nloads, j);
      return splice(mm, m, r0, &p, c, log.nloads, j);
    }
    if (c == 1 && !(p.fl[0] & STEP_USES)) { /* where the start pc's first word is, for sites_early */
      int f = first_slot(r0->rip);
      mm->first[f].pc = r0->rip;
      mm->first[f].off = p.addr[0] - r0->rsp;
    }
    if (c == 1 && sites && mm->site_credit > 0) { /* not the way's last frames: perhaps a site's (keyed by the
                                                      first word read), while sites answer */
      int s = hci_memo_site_find(mm, m, max, r0, hi, p.addr[0], p.val[0]);
      if (s >= 0) {
        mm->site_credit = hci_memo_site_credit(mm->site_credit, HC_SITE_CREDIT_HIT);
        return -2 - s;
      }
      mm->site_credit--;
    }
    if (c + 1 >= PRE_FRAMES || !step(cache, &r, &lo, &hi, &log) || log.spoiled || r.rip < 4096 || lo != r0->rsp)
      return -1;
    c++;
    log_frame(&log, c, &r);
    p.pcs[c] = r.rip;
  }
}

/* rec, given by the caller, is the frame record holding ra: it lies in the
 * stack above our own frame (live: the entry point has not returned), is
 * aligned and holds ra.  The search would find the same record (the
 * allocator's frames in between return into the allocator), without its
 * 5-8 steps and their checks. */
static inline bool rec_holds(uintptr_t rec, uintptr_t ra, uintptr_t fp, uintptr_t hi) {
  return rec > fp && !(rec & 7) && hi >= 2 * sizeof(uintptr_t) && rec <= hi - 2 * sizeof(uintptr_t) &&
         ((const uintptr_t *)rec)[1] == ra;
}

/* malloc's caller's registers in *out when no frame record holds ra: CFI
 * steps from r (exact registers of an allocator frame) up to the first
 * frame that returns to ra (the allocator's frames all return into the
 * allocator).  A frameless entry point that calls the slow path instead of
 * tail-calling it, with ra itself in rbp (gcc keeps it there), breaks the
 * record chain: operator new did until session 19 (now it tail-calls
 * hci_alloc_slow_or, alloc_inline.h), the aligned forms until session 20
 * (now hci_memalign_slow_or).  Without this, every such capture walked the whole stack
 * afresh, memo unused (fish, yosys: 70 % of their checked runs in session
 * 18).  Rules are cached. */
static inline __attribute__((always_inline)) bool entry_by_cfi(regs_t r, uintptr_t hi, uintptr_t ra, regs_t *out) {
  uintptr_t lo = r.rsp, lo0 = lo;
  if (hi < lo + sizeof(uintptr_t)) return false;
  cache_ent_t *cache = cache_get();
  for (int k = 0; k <= ALLOCATOR_FRAMES; k++) {
    if (!step(cache, &r, &lo, &hi, NULL) || lo != lo0) return false;
    if (r.rip == ra && !r.exact) {
      *out = r;
      return true;
    }
  }
  return false;
}

/* caller_regs' steps, out of line (malloc's captures, python3's, find
 * their record: its code cost them 0.4 % in line): from the record last
 * when given, else from our own registers. */
static hc_noinline bool caller_regs_cfi(uintptr_t ra, uintptr_t last, uintptr_t hi, regs_t *r) {
  bool ok = false;
  if (last != 0) {
    const uintptr_t *f = (const uintptr_t *)last;
    regs_t e = {.rip = f[1], .rsp = last + 2 * sizeof(uintptr_t), .rbp = f[0], .exact = false};
    ok = entry_by_cfi(e, hi, ra, r);
  }
  if (!ok) {
    regs_t own;
    OWN_REGS(own);
    ok = entry_by_cfi(own, hi, ra, r);
  }
  __asm__ volatile("" ::: "memory"); /* our frame stays while its registers are stepped from */
  return ok;
}

/* malloc's caller's registers in *r, from our frame fp ([fp, hi): the
 * stack): the frame record holding ra (rec when the caller knows it and it
 * holds, else one of the allocator's records), or CFI steps from the record
 * where that chain ends (the frameless entry point's callee: one step), or
 * from our own registers.  False when none reaches ra. */
static inline __attribute__((always_inline)) bool caller_regs(uintptr_t ra, uintptr_t rec, uintptr_t fp,
                                                               uintptr_t hi, regs_t *r, uint64_t *cfi_starts) {
  uintptr_t last = 0;
  if (rec == 0 || !rec_holds(rec, ra, fp, hi)) rec = hci_unwind_fp_find(ra, ALLOCATOR_FRAMES, fp, fp, &last);
  if (hc_likely(rec != 0)) {
    *r = (regs_t){.rip = ra, .rsp = rec + 2 * sizeof(uintptr_t), .rbp = ((const uintptr_t *)rec)[0], .exact = false};
    return true;
  }
  if (cfi_starts) (*cfi_starts)++;
  return caller_regs_cfi(ra, last, hi, r);
}

/* The start of a memo walk: malloc's caller's registers in *r (caller_regs), the end of the stack region holding our frame
 * in *hi, and the way of ra's group; NULL when the memo cannot be used.
 * [fp, *hi) is readable, so are the words way_answers and sites_early
 * compare: they lie in [r->rsp, amax] with fp < r->rsp and amax checked
 * below *hi (one stack_hi per capture; each of the three looked it up). */
static inline __attribute__((always_inline)) hc_unwind_memo_way_t *memo_start(hc_unwind_memo_t *mm, int *max,
                                                                               uintptr_t ra, uintptr_t rec,
                                                                               uintptr_t fp, regs_t *r,
                                                                               uintptr_t *hi) {
  if (*max > HC_MAX_STACK_DEPTH) *max = HC_MAX_STACK_DEPTH;
  if (*max <= 0 || !eh_ok()) return NULL;
  *hi = hci_unwind_stack_hi(fp);
  if (!caller_regs(ra, rec, fp, *hi, r, &mm->cfi_starts)) return NULL;
  /* The way of ra's group: the top bits of a multiplicative hash. */
  mm->cur = (int)((ra * 0x9e3779b97f4a7c15ull) >> 62) % HC_UNWIND_MEMO_WAYS;
  return &mm->way[mm->cur];
}

/* hci_unwind_memo_walk, and with sites (the caller wants only the id): a
 * site that answers gives -2 - its index instead of frames. */
static inline __attribute__((always_inline)) int memo_walk(hc_unwind_memo_t *mm, hc_unwind_memo_way_t *m, int max,
                                                           regs_t r, const uintptr_t **pcs, uint64_t *hash,
                                                           bool sites) {
  mm->site_new = -1;
  int b = walk_memo(mm, m, max, &r, sites);
  if (b < -1) return b;
  if (b < 0) {
    int n = memo_fill(mm, m, r);
    if (m->gen == 0) { /* not kept: the frames are in slots [0, n) */
      n = n < max ? n : max;
      *pcs = m->pcs;
      *hash = hci_stack_hash(m->pcs, n);
      return n;
    }
    b = MF - n;
  }
  int n = MF - b;
  if (n > max) n = max;
  if (mm->site_new >= 0) mm->site[mm->site_new].n = (uint8_t)n;
  *pcs = m->pcs + b;
  *hash = m->hv[b];
  if (b + n < MF || m->hv[MF] != 0) {
    if (mm->pow_n != n) { /* B^n for the n of the last capture (nearly always the frame limit) */
      mm->pow_v = hash_pow(n);
      mm->pow_n = n;
    }
    *hash -= m->hv[b + n] * mm->pow_v;
  }
  return n;
}

/* The way's own answer to a capture from r: its innermost frame is r's
 * (same registers, rbp where it matters), the words from there outward
 * hold, and the way knows the depot id of its frames, as many as asked.
 * That is walk_memo's match with no fresh step at the way's first slot,
 * followed by splice (which writes nothing then) and hci_unwind_memo_id
 * (which gives the way's id back: the frames are the same): the id without
 * the walk's set-up, the splice and the hash.  python3: half its captures
 * (a call site that allocates again under the same callers).  0: ask
 * walk_memo. */
static inline __attribute__((always_inline)) uint32_t way_answers(hc_unwind_memo_way_t *m, int max, const regs_t *r,
                                                                  uintptr_t hi) {
  int b = MF - m->n;
  if (m->id == 0 || m->n <= 0 || m->rsp[b] != r->rsp || m->pcs[b] != r->rip || (m->rbp[b] != r->rbp && m->lv[b]) ||
      m->idn != (m->n < max ? m->n : max) || (m->end == END_MAX && m->n < max) ||
      (m->end == END_FAIL && r->rsp < m->rsp0) || m->gen != atomic_load_explicit(&rule_gen, memory_order_relaxed))
    return 0;
  if (hi < r->rsp + sizeof(uintptr_t) || m->amax > hi - sizeof(uintptr_t) || !words_hold(m, b)) return 0;
  m->same = true;
  m->fresh = 0;
  m->rsp0 = r->rsp;
  return m->id;
}

/* A site's answer before any step: the way remembers where the first
 * step from a start pc read its word (rsp + off when the CFA comes from
 * rsp: a function of the pc; hc_unwind_memo_t.first), which with the start keys the sites
 * (hci_memo_site_find compares that word and every other the site keeps, so
 * an offset that no longer holds only finds no site).  Saves walk_memo's
 * set-up, its look at the way and the first step (with its rule lookup)
 * for the captures a site answers: python3's other half.  Returns the
 * site's index, -1 when none answers, -2 when none was asked (walk_memo
 * asks then). */
static inline __attribute__((always_inline)) int sites_early(hc_unwind_memo_t *mm, hc_unwind_memo_way_t *m, int max,
                                                             const regs_t *r, uintptr_t hi) {
  int f = first_slot(r->rip);
  if (mm->first[f].pc != r->rip || mm->site_credit <= 0 ||
      m->gen != atomic_load_explicit(&rule_gen, memory_order_relaxed) || m->n <= 0)
    return -2;
  uintptr_t a0 = r->rsp + mm->first[f].off, w1;
  if (hi < r->rsp + sizeof(uintptr_t) || m->amax > hi - sizeof(uintptr_t) || !load_word(r->rsp, hi, a0, &w1))
    return -2;
  int s = hci_memo_site_find(mm, m, max, r, hi, a0, w1);
  mm->site_credit = s >= 0 ? hci_memo_site_credit(mm->site_credit, HC_SITE_CREDIT_HIT) : mm->site_credit - 1;
  return s;
}

hc_noinline int hci_unwind_memo_walk(hc_unwind_memo_t *mm, int max, uintptr_t ra, uintptr_t rec,
                                     const uintptr_t **pcs, uint64_t *hash) {
  regs_t r;
  uintptr_t hi;
  hc_unwind_memo_way_t *m = memo_start(mm, &max, ra, rec, (uintptr_t)__builtin_frame_address(0), &r, &hi);
  int n = m ? memo_walk(mm, m, max, r, pcs, hash, false) : -1;
  __asm__ volatile("" ::: "memory");
  return n;
}

hc_noinline uint32_t hci_unwind_memo_stack_id(hc_unwind_memo_t *mm, int max, uintptr_t ra, uintptr_t rec) {
  regs_t r;
  uintptr_t hi;
  hc_unwind_memo_way_t *m = memo_start(mm, &max, ra, rec, (uintptr_t)__builtin_frame_address(0), &r, &hi);
  uint32_t id = 0;
  if (m) {
    id = way_answers(m, max, &r, hi);
    int s = id ? -1 : sites_early(mm, m, max, &r, hi);
    if (s >= 0) {
      mm->site_new = -1;
      mm->site_hits++;
      mm->site_early++;
      id = mm->site[s].id;
    } else if (id == 0) {
      const uintptr_t *pcs;
      uint64_t hash;
      int n = memo_walk(mm, m, max, r, &pcs, &hash, s == -2);
      if (n < -1) {
        mm->site_hits++;
        id = mm->site[-2 - n].id;
      } else if (n > 0) {
        id = hci_unwind_memo_id(mm, pcs, n, hash);
      }
    } else {
      mm->site_new = -1;
    }
  }
  __asm__ volatile("" ::: "memory");
  return id;
}

hc_noinline int hci_unwind_dwarf_at(uintptr_t *pcs, int max, uintptr_t ra, hc_unwind_memo_t *memo) {
  if (max > HC_MAX_STACK_DEPTH) max = HC_MAX_STACK_DEPTH;
  if (max <= 0) return 0;
  int n = -1;
  if (memo) {
    const uintptr_t *mp;
    uint64_t h;
    n = hci_unwind_memo_walk(memo, max, ra, 0, &mp, &h);
    if (n >= 0) memcpy(pcs, mp, (size_t)n * sizeof *pcs);
  } else if (hci_eh_available()) {
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    regs_t r;
    if (caller_regs(ra, 0, fp, hci_unwind_stack_hi(fp), &r, NULL)) {
      int end;
      pcs[0] = ra;
      n = 1 + dwarf_walk(pcs + 1, max - 1, 0, r, NULL, 1, &end);
    }
  }
  if (n < 0) n = hci_unwind_dwarf(pcs, max, 0); /* a whole walk from here: the caller looks for ra */
  __asm__ volatile("" ::: "memory");
  return n;
}

#else /* !HC_DWARF_X86_64: the frame-pointer walk stands in */

bool hci_unwind_dwarf_available(void) { return false; }

void hci_unwind_dwarf_cache_clear(void) {}

bool hci_unwind_static_index(uintptr_t eh_lo, uintptr_t eh_hi) {
  (void)eh_lo;
  (void)eh_hi;
  return false;
}

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

uint32_t hci_unwind_memo_stack_id(hc_unwind_memo_t *memo, int max, uintptr_t ra, uintptr_t rec) {
  (void)memo;
  (void)max;
  (void)ra;
  (void)rec;
  return 0;
}

hc_noinline int hci_unwind_dwarf_at(uintptr_t *pcs, int max, uintptr_t ra, hc_unwind_memo_t *memo) {
  (void)ra;
  (void)memo;
  int n = hci_unwind_dwarf(pcs, max, 0);
  __asm__ volatile("" ::: "memory");
  return n;
}

#endif
