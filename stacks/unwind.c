/* unwind.c - stack capture: the frame-pointer unwinder, the per-thread stack
 * bounds both unwinders validate against, and hci_backtrace's dispatch.
 *
 * Runs inside malloc, in signal handlers and with allocator locks held, so
 * nothing here allocates, takes a lock or calls into libc beyond raw
 * syscalls and string-free helpers.
 *
 * Invariants:
 *  - Every memory read of a walk lies in [sp, hi) where sp is the walker's
 *    own stack pointer and hi comes from hci_unwind_stack_hi(sp): every page
 *    of [sp, hi) was probed readable with a syscall, and hi never passes the
 *    top of the stack sp is on (struct pthread, __libc_stack_end, the
 *    sigaltstack end).  A frame chain that leaves it ends the walk: we stop
 *    rather than risk a fault.  No /proc/self/maps: its cost grows with the
 *    number of mappings (2.8 ms at 10k), probing costs ~150 ns per page of
 *    stack in use, once per thread (and per new page of a deeper stack).
 *  - Frame pointers strictly increase and each step is at most
 *    HC_FP_MAX_FRAME bytes, so every walk terminates.
 *  - The stack bounds are cached per thread (initial-exec TLS, no
 *    allocation); the cache is written hi=0 first so a signal handler that
 *    interrupts the update sees an empty range, never a torn one.
 * Locks: none.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hc_stacks.h"

#define HC_FP_MAX_FRAME ((uintptr_t)1 << 20)      /* largest accepted distance between frame pointers */
#define HC_STACK_VERIFY_MAX ((uintptr_t)16 << 20) /* most stack probed above sp */
#define HC_PROBE_PAGE ((uintptr_t)4096)           /* probe granularity (smallest page size) */

int hci_unwinder = HC_UNWIND_FP;
bool hci_unwind_fallback = true;

/* glibc: the initial stack pointer of the main thread (in ld.so). */
extern void *__libc_stack_end __attribute__((weak));

/* [hci_stk_lo, hci_stk_hi): part of the current thread's stack known readable
 * (hci_unwind_stack_hi reads them in line, hc_stacks.h);
 * stk_cap: the limit it was probed against (identifies the stack). */
HC_TLS uintptr_t hci_stk_lo;
HC_TLS uintptr_t hci_stk_hi;
static HC_TLS uintptr_t stk_cap;

static inline uintptr_t strip_pc(uintptr_t pc) {
#if defined(__aarch64__)
  return pc & (((uintptr_t)1 << HC_ADDRESS_BITS) - 1); /* drop pointer-authentication bits */
#else
  return pc;
#endif
}

static inline uintptr_t thread_pointer(void) {
  uintptr_t tp = 0;
#if defined(__x86_64__)
  __asm__("movq %%fs:0, %0" : "=r"(tp)); /* TCB self pointer = struct pthread, just above the stack */
#elif defined(__aarch64__)
  __asm__("mrs %0, tpidr_el0" : "=r"(tp)); /* TLS variant I: struct pthread sits just below tp */
#endif
  return tp;
}

/* ---- stack bounds: pages probed with a syscall ---- */

/* Upper limit of the frames of the stack sp is on: the alternate signal
 * stack's end when running on it, argv/envp of the main thread
 * (__libc_stack_end), struct pthread above a thread's stack (glibc), or
 * HC_STACK_VERIFY_MAX above sp for any other stack (coroutines). */
static uintptr_t stack_cap(uintptr_t sp) {
  stack_t ss;
  int saved = errno;
  long r = syscall(SYS_sigaltstack, (void *)0, &ss);
  errno = saved;
  if (r == 0 && (ss.ss_flags & SS_ONSTACK) && sp >= (uintptr_t)ss.ss_sp && sp - (uintptr_t)ss.ss_sp < ss.ss_size)
    return (uintptr_t)ss.ss_sp + ss.ss_size;
  uintptr_t lse = &__libc_stack_end != NULL ? (uintptr_t)__libc_stack_end : 0;
  if (sp < lse && lse - sp <= HC_STACK_VERIFY_MAX) return lse + 2 * sizeof(uintptr_t);
  uintptr_t tp = thread_pointer();
  if (sp < tp && tp - sp <= HC_STACK_VERIFY_MAX) return tp;
  return sp + HC_STACK_VERIFY_MAX;
}

_Atomic int hci_unwind_no_syscalls;

void hci_unwind_forbid_syscalls(void) { atomic_store(&hci_unwind_no_syscalls, 1); }

hc_noinline uintptr_t hci_unwind_stack_hi_slow(uintptr_t sp) {
  /* The library's own stack (a check, a profile dump; base/own_stack.c):
   * its top, never the mapping the kernel may have put right above it, and
   * not cached: the cache is TLS, which the checker scans, and that top is
   * often the first object of a heap mapping. */
  uintptr_t own = hci_own_stack_top(sp);
  if (own) return own;
  /* Probing takes sigaltstack and one call per page: a sandbox may kill them. */
  if (atomic_load_explicit(&hci_unwind_no_syscalls, memory_order_relaxed)) return 0;
  if (sp < HC_PROBE_PAGE || sp >= ((uintptr_t)1 << HC_ADDRESS_BITS) - HC_STACK_VERIFY_MAX) return 0;
  uintptr_t page = sp & ~(HC_PROBE_PAGE - 1);
  uintptr_t cap = stack_cap(sp);
  uintptr_t lo = 0, hi = 0;
  if (hci_stk_hi != 0 && sp < hci_stk_lo && cap == stk_cap && hci_stk_lo - page <= HC_STACK_VERIFY_MAX) {
    /* Deeper on the cached stack: only the pages in between are new. */
    uintptr_t p = page;
    while (p < hci_stk_lo && hci_os_probe(p)) p += HC_PROBE_PAGE;
    if (p >= hci_stk_lo) {
      lo = page;
      hi = hci_stk_hi;
    }
  }
  if (hi == 0) {
    if (!hci_os_probe(page)) return 0;
    uintptr_t lim = cap - page > HC_STACK_VERIFY_MAX ? page + HC_STACK_VERIFY_MAX : cap;
    lo = page;
    hi = page + HC_PROBE_PAGE;
    while (hi < lim && hci_os_probe(hi)) hi += HC_PROBE_PAGE;
    if (hi > cap) hi = cap;
  }
  if (sp >= hi) return 0;
  hci_stk_hi = 0; /* a signal handler in between sees an empty range */
  __asm__ volatile("" ::: "memory");
  hci_stk_lo = lo;
  stk_cap = cap;
  __asm__ volatile("" ::: "memory");
  hci_stk_hi = hi;
  return hi;
}


/* ---- frame-pointer walk ---- */

/* A frame record {saved fp, return address} at fp (x86-64 and aarch64) lies
 * inside [sp, hi) and is aligned. */
static inline bool frame_ok(uintptr_t fp, uintptr_t sp, uintptr_t hi) {
  return !(fp & 7) && fp >= sp && fp <= hi - 2 * sizeof(uintptr_t);
}

/* The saved fp leads up the stack, by at most HC_FP_MAX_FRAME: every walk ends. */
static inline bool next_ok(uintptr_t next, uintptr_t fp) { return next > fp && next - fp <= HC_FP_MAX_FRAME; }

/* The walk; sizes (NULL on the allocation path: inlined away) gets each
 * frame's size, the distance to the next frame record (0 for the last). */
static inline __attribute__((always_inline)) int fp_walk(uintptr_t *pcs, size_t *sizes, int max, int skip,
                                                         uintptr_t fp, uintptr_t sp) {
  if (max > HC_MAX_STACK_DEPTH) max = HC_MAX_STACK_DEPTH;
  if (max <= 0) return 0;
  uintptr_t hi = hci_unwind_stack_hi(sp);
  if (hi < 2 * sizeof(uintptr_t)) return 0;
  int n = 0;
  while (n < max && frame_ok(fp, sp, hi)) {
    const uintptr_t *frame = (const uintptr_t *)fp;
    uintptr_t next = frame[0];
    uintptr_t ra = strip_pc(frame[1]);
    /* Zero (the outermost frame) or junk; or an address in this stack: rbp
     * pointed into the stack but not at a frame record (libffi's
     * ffi_call_unix64, which python's ctypes calls malloc through: the
     * stack was libffi's frame and a stack address).  The walk ends there,
     * and the DWARF walk gets its turn (alloc.c's capture_walk). */
    if (ra < 4096 || ra - sp < hi - sp) break;
    bool ok = next_ok(next, fp);
    if (skip > 0) {
      skip--;
    } else {
      if (sizes) sizes[n] = ok && frame_ok(next, sp, hi) ? next - fp : 0;
      pcs[n++] = ra;
    }
    if (!ok) break;
    fp = next;
  }
  return n;
}

int hci_unwind_fp_skip(uintptr_t *pcs, int max, int skip, uintptr_t fp, uintptr_t sp) {
  return fp_walk(pcs, NULL, max, skip, fp, sp);
}

int hci_unwind_fp_sizes(uintptr_t *pcs, size_t *sizes, int max, int skip, uintptr_t fp, uintptr_t sp) {
  return fp_walk(pcs, sizes, max, skip, fp, sp);
}

uintptr_t hci_unwind_fp_find(uintptr_t ra, int max, uintptr_t fp, uintptr_t sp, uintptr_t *last) {
  uintptr_t hi = hci_unwind_stack_hi(sp);
  if (last) *last = 0;
  if (hi < 2 * sizeof(uintptr_t)) return 0;
  for (int k = 0; k < max && frame_ok(fp, sp, hi); k++) {
    const uintptr_t *frame = (const uintptr_t *)fp;
    if (strip_pc(frame[1]) == ra) return fp;
    if (!next_ok(frame[0], fp)) {
      if (last) *last = fp;
      return 0;
    }
    fp = frame[0];
  }
  return 0;
}

hc_noinline int hci_unwind_fp_from(uintptr_t *pcs, int max, uintptr_t rec, uintptr_t ra) {
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  /* Above our frame (a live caller's), inside the stack (fp_walk checks). */
  int n = rec > sp ? fp_walk(pcs, NULL, max, 0, rec, sp) : 0;
  __asm__ volatile("" ::: "memory");
  return n > 0 && pcs[0] == ra ? n : 0;
}

int hci_unwind_fp(uintptr_t *pcs, int max, uintptr_t fp, uintptr_t sp) {
  return hci_unwind_fp_skip(pcs, max, 0, fp, sp);
}

/* ---- the memo of free stacks (hc_stack_memo_t) ---- */

static inline hc_stack_memo_slot_t *memo_slot(hc_stack_memo_t *m, uintptr_t ra, uintptr_t rec) {
  return &m->slot[((ra ^ rec >> 4) * 0x9e3779b97f4a7c15ull) >> (64 - HC_STACK_MEMO_BITS)];
}

/* The slot's frames are compared as fp_walk finds them from rec, and the
 * walk must stop where they end: one pass, no copy, no hash.  fp_walk goes
 * on from a frame to the next when the link leads up by at most
 * HC_FP_MAX_FRAME to an aligned record inside the stack, its limit is not
 * reached and the next return address is not below 4096 (it records none
 * then), so an answer is exactly the walk's stack.  The stack's bounds as
 * cached (hci_unwind_stack_hi without its slow path: a miss then, and the
 * walk refreshes them); rec lies on the current stack, so inside them it
 * tells that they are this stack's.  A leaf, so a hit saves no register
 * (with the saves and the calls it cost half as much again). */
hc_noinline uint32_t hci_unwind_fp_memo(hc_stack_memo_t *m, uint32_t gen, int max, uintptr_t rec, uintptr_t ra) {
  if (hc_unlikely(m->gen != gen)) {
    memset(m->slot, 0, sizeof m->slot);
    m->gen = gen;
    return 0;
  }
  const hc_stack_memo_slot_t *s = memo_slot(m, ra, rec);
  uintptr_t hi = hci_stk_hi; /* 0 while it is written */
  if (s->ra != ra || s->rec != rec || rec < hci_stk_lo || rec + 2 * sizeof(uintptr_t) > hi) return 0;
  uintptr_t lim = hi - 2 * sizeof(uintptr_t); /* the last place for a frame record */
  const uintptr_t *pcs = s->pcs, *end = pcs + s->n;
  uintptr_t fp = rec;
  for (;;) {
    const uintptr_t *frame = (const uintptr_t *)fp;
    if (strip_pc(frame[1]) != *pcs++) return 0; /* the pcs are >= 4096: a walk ending here differs too */
    uintptr_t next = frame[0];
    /* next_ok and frame_ok (next > fp > sp): the walk goes on to next */
    bool on = next - fp - 1 < HC_FP_MAX_FRAME && !(next & 7) && next <= lim;
    /* After the last: the walk must stop (no next frame, its limit, or nothing to record). */
    if (pcs == end) return !on || (int)s->n >= max || strip_pc(((const uintptr_t *)next)[1]) < 4096 ? s->id : 0;
    if (!on) return 0;
    fp = next;
  }
}

void hci_unwind_fp_memo_put(hc_stack_memo_t *m, uintptr_t ra, uintptr_t rec, int n, uint32_t id) {
  const uintptr_t *d;
  if (id < 2 || n < 1 || hci_depot_get(id, &d) != n) return;
  hc_stack_memo_slot_t *s = memo_slot(m, ra, rec);
  s->ra = ra;
  s->rec = rec;
  s->pcs = d;
  s->id = id;
  s->n = (uint32_t)n;
}

/* ---- dispatch ---- */

hc_noinline int hci_backtrace(uintptr_t *pcs, int max, int skip) {
  if (max > HC_MAX_STACK_DEPTH) max = HC_MAX_STACK_DEPTH;
  if (max <= 0) return 0;
  if (skip < 0) skip = 0;
  int n;
  /* Both walks also drop the return address into our caller: pcs[0] is the
   * return address into our caller's caller. */
  if (hci_unwinder == HC_UNWIND_DWARF) {
    n = hci_unwind_dwarf(pcs, max, skip + 1);
  } else {
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    n = hci_unwind_fp_skip(pcs, max, skip + 1, fp, fp);
  }
  /* Keeps the calls above out of tail position: our frame must stay. */
  __asm__ volatile("" ::: "memory");
  return n;
}

void hci_unwind_init(void) {
  const char *v = hci_opt_str(HCO_HEAPCHECK_UNWINDER);
  if (v == NULL || *v == '\0') return;
  if (hci_env_word_is(v, "fp")) {
    hci_unwinder = HC_UNWIND_FP;
    hci_unwind_fallback = false; /* asked for explicitly: never the DWARF walk */
  } else if (hci_env_word_is(v, "auto")) {
    hci_unwinder = HC_UNWIND_FP;
  } else if (hci_env_word_is(v, "dwarf")) {
    if (hci_unwind_dwarf_available())
      hci_unwinder = HC_UNWIND_DWARF;
    else
      hci_warn("HEAPCHECK_UNWINDER=dwarf is not supported on this system; using the default auto");
  } else {
    hci_warn("HEAPCHECK_UNWINDER=%s is not one of auto, fp, dwarf; using the default auto", v);
  }
}
