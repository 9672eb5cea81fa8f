/* unwind_caller.c - the frame that called a given function, found from code
 * that function (indirectly) called: a walk up the calling thread's stack by
 * .eh_frame that also recovers the callee-saved registers (rbx, rbp,
 * r12-r15), so the caller's stack pointer and registers at the call are what
 * an interposer of the function would have seen at its entry.
 *
 * Why: the leak checker's final check runs from handlers that exit() calls.
 * A fully static executable keeps libc.a's exit and __libc_start_main (they
 * cannot be interposed), so the checker learns where the program ended by
 * this walk, from its handler up to exit's caller: the live part of the
 * ending thread's stack starts at that caller's stack pointer, and what lies
 * below it (main's frames after main returned, its callees') is dead.
 *
 * Invariants (as unwind_dwarf.c's):
 *  - Every stack read lies in [sp0, hci_unwind_stack_hi(sp0)), sp0 being
 *    this function's own stack pointer; the CFA strictly increases.
 *  - Every frame up to the caller must have an FDE (the frame-pointer guess
 *    for code without one cannot say where registers were saved) and
 *    K_NORMAL or K_EXPR rules whose registers are saved at CFA offsets or,
 *    through expressions, at or as rsp/rbp offsets; anything else (a signal
 *    frame, an expression unwind_cfi.c does not evaluate, a register kept in
 *    another register) ends the walk with "not found", and the caller keeps
 *    its safe default.
 * Cold: once per process, a few frames, no rule cache.
 * Locks: none; no allocation.
 */
#include <string.h>

#include "hc_stacks.h"

#if defined(__x86_64__) && defined(__linux__)
#include <dlfcn.h>
#endif

#if defined(__x86_64__) && defined(__linux__) && defined(DLFO_EH_SEGMENT_TYPE)
#include "unwind_cfi.h"

#define MAX_FRAMES 64 /* exit -> __run_exit_handlers -> _dl_fini -> a destructor: a handful */

/* A word of the stack [lo, hi). */
static inline bool load(uintptr_t lo, uintptr_t hi, uintptr_t a, uintptr_t *out) {
  if (a < lo || a > hi - sizeof(uintptr_t)) return false;
  memcpy(out, (const void *)a, sizeof *out);
  return true;
}

/* Registers of one frame: rip, rsp, rbp, then rbx, r12-r15 (cs[]). */
typedef struct frame {
  uintptr_t rip, rsp, rbp;
  uintptr_t cs[HCI_CFI_NSAVED];
  bool exact; /* rip is a PC (our own frame), not a return address */
} frame_t;

enum { STEP_FAILED = 0, STEP_DONE = 1, STEP_OUTERMOST = 2 };

/* The caller's value of a register whose rule is how/base/off (R_*, B_*),
 * its value in fr being cur, into *out.  False: a rule we cannot follow or
 * a word outside the stack. */
static bool recover(const frame_t *fr, uintptr_t cfa, uintptr_t lo, uintptr_t hi, int how, int base, int64_t off,
                    uintptr_t cur, uintptr_t *out) {
  uintptr_t b = base == B_RBP ? fr->rbp : base == B_RSP ? fr->rsp : cfa;
  switch (how) {
  case R_SAME: *out = cur; return true;
  case R_UNDEF: *out = 0; return true;
  case R_OFFSET: return load(lo, hi, cfa + (uintptr_t)off, out);
  case R_AT: return load(lo, hi, b + (uintptr_t)off, out);
  case R_VAL: *out = b + (uintptr_t)off; return true;
  default: return false;
  }
}

/* One step from fr to its caller: STEP_FAILED when the rules do not allow
 * it, STEP_OUTERMOST when fr is the stack's first frame (_start, a thread's
 * start: its FDE leaves the return address undefined). */
static int step_full(frame_t *fr, uintptr_t lo, uintptr_t hi, uintptr_t eh_lo, uintptr_t eh_hi) {
  hci_cfi_frame_t f;
  rule_t rule = hci_cfi_frame(fr->rip, fr->exact, eh_lo, eh_hi, &f);
  if (rule.kind == K_END && f.fn_lo < f.fn_hi) return STEP_OUTERMOST;
  if ((rule.kind != K_NORMAL && rule.kind != K_EXPR) || f.fn_lo >= f.fn_hi) return STEP_FAILED;
  uintptr_t cfa = (rule.cfa_rbp ? fr->rbp : fr->rsp) + (uintptr_t)rule.cfa_off;
  if (rule.cfa_deref) { /* K_EXPR: the CFA is a word of the stack (GCC's realigned frames) */
    if (!load(lo, hi, cfa, &cfa)) return STEP_FAILED;
    cfa += (uintptr_t)rule.cfa_add;
  }
  if (cfa <= fr->rsp || cfa > hi) return STEP_FAILED;
  frame_t up = {.rsp = cfa, .exact = false};
  if (!load(lo, hi, cfa + (uintptr_t)rule.ra_off, &up.rip) ||
      !recover(fr, cfa, lo, hi, rule.rbp_how, rule.rbp_base, rule.rbp_off, fr->rbp, &up.rbp))
    return STEP_FAILED;
  for (int i = 0; i < HCI_CFI_NSAVED; i++)
    if (!recover(fr, cfa, lo, hi, f.saved_how[i], f.saved_base[i], f.saved_off[i], fr->cs[i], &up.cs[i]))
      return STEP_FAILED;
  *fr = up;
  return STEP_DONE;
}

hc_noinline int hci_unwind_find_caller(uintptr_t fn, uintptr_t eh_lo, uintptr_t eh_hi, hci_caller_t *out) {
  hci_cfi_frame_t f;
  (void)hci_cfi_frame(fn, true, eh_lo, eh_hi, &f);
  uintptr_t fn_lo = f.fn_lo, fn_hi = f.fn_hi;
  if (fn_lo >= fn_hi || fn < fn_lo || fn >= fn_hi) return 0;
  /* Our own registers at one instruction (the one after the lea): its PC,
   * with these values, is a frame the CFI describes exactly.  Only stores
   * before the lea, so every register still holds its value there. */
  uintptr_t r[3 + HCI_CFI_NSAVED];
  __asm__ volatile("movq %%rsp, 8(%0)\n\t"
                   "movq %%rbp, 16(%0)\n\t"
                   "movq %%rbx, 24(%0)\n\t"
                   "movq %%r12, 32(%0)\n\t"
                   "movq %%r13, 40(%0)\n\t"
                   "movq %%r14, 48(%0)\n\t"
                   "movq %%r15, 56(%0)\n\t"
                   "leaq 0(%%rip), %%rax\n\t"
                   "movq %%rax, 0(%0)"
                   :
                   : "r"(r)
                   : "rax", "memory");
  frame_t fr = {.rip = r[0], .rsp = r[1], .rbp = r[2], .exact = true};
  memcpy(fr.cs, r + 3, sizeof fr.cs);
  uintptr_t lo = fr.rsp, hi = hci_unwind_stack_hi(lo);
  int found = HCI_CALLER_UNKNOWN;
  if (hi >= lo + sizeof(uintptr_t)) {
    for (int k = 0; k < MAX_FRAMES && fr.rip >= 4096; k++) {
      /* A return address into fn: fr is fn's frame, the next its caller. */
      bool in_fn = !fr.exact && fr.rip - 1 >= fn_lo && fr.rip - 1 < fn_hi;
      int step = step_full(&fr, lo, hi, eh_lo, eh_hi);
      if (step == STEP_OUTERMOST && !in_fn) found = HCI_CALLER_ABSENT;
      if (step != STEP_DONE) break;
      if (in_fn) {
        out->sp = fr.rsp;
        out->pc = fr.rip;
        memcpy(out->regs, fr.cs, sizeof fr.cs); /* rbx, r12-r15 */
        out->regs[HCI_CFI_NSAVED] = fr.rbp;
        out->nregs = HCI_CFI_NSAVED + 1;
        found = HCI_CALLER_FOUND;
        break;
      }
    }
  }
  __asm__ volatile("" ::: "memory"); /* no tail call: our frame is the walk's first */
  return found;
}

/* See hc_stacks.h.  The kernel builds a signal frame on the stack the
 * handler runs on and puts the restorer's address at its base (the
 * handler's return address), so every handler running on this stack has
 * that word between our stack pointer and the stack's top; a stale copy in
 * a live frame's unused slot only makes the answer "yes" (the safe side). */
hc_noinline bool hci_unwind_signal_frame_here(void) {
  uintptr_t sp;
  __asm__ volatile("movq %%rsp, %0" : "=r"(sp));
  uintptr_t hi = hci_unwind_stack_hi(sp);
  if (hi < sp + sizeof(uintptr_t)) return true; /* the stack's extent unknown */
  for (uintptr_t a = sp & ~(uintptr_t)(sizeof(uintptr_t) - 1); a <= hi - sizeof(uintptr_t); a += sizeof(uintptr_t)) {
    uintptr_t w;
    memcpy(&w, (const void *)a, sizeof w);
    if (hci_cfi_is_sigreturn(w)) return true;
  }
  return false;
}

#else

hc_noinline bool hci_unwind_signal_frame_here(void) { return true; }

hc_noinline int hci_unwind_find_caller(uintptr_t fn, uintptr_t eh_lo, uintptr_t eh_hi, hci_caller_t *out) {
  (void)fn;
  (void)eh_lo;
  (void)eh_hi;
  (void)out;
  return HCI_CALLER_UNKNOWN;
}

#endif
