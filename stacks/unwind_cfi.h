/* unwind_cfi.h - what unwind_cfi.c tells unwind_dwarf.c: the rule of one
 * frame, computed from the module's .eh_frame (cold path, once per PC: the
 * walker caches it). */
#ifndef HC_UNWIND_CFI_H
#define HC_UNWIND_CFI_H

#include <stdbool.h>
#include <stdint.h>

enum { K_NORMAL = 0, K_END = 1, K_STOP = 2, K_SIGNAL = 3 };
enum { R_SAME = 0, R_UNDEF = 1, R_OFFSET = 2, R_UNSUP = 3 };

typedef struct rule {
  int kind;          /* K_* */
  int cfa_rbp;       /* CFA based on rbp (else rsp) */
  int rbp_how;       /* R_SAME, R_UNDEF or R_OFFSET */
  int64_t cfa_off;
  int64_t ra_off;    /* RA saved at CFA + ra_off */
  int64_t rbp_off;   /* rbp saved at CFA + rbp_off (R_OFFSET) */
} rule_t;

/* The rule for a frame executing at rip.  exact: rip is the PC of the frame
 * (first frame, interrupted frame); otherwise a return address, looked up
 * at rip - 1 so a call at the end of a function stays in it.  *cacheable is
 * false for results that may change (address not in any module yet).  Every
 * read of unwind data is bounds-checked against the module's readable
 * segments (hci_eh_find); malformed data gives K_STOP, never a fault. */
rule_t hci_cfi_rule(uintptr_t rip, bool exact, bool *cacheable);

/* What a walk that recovers every callee-saved register needs besides the
 * rule (unwind_caller.c; not cached): the function's extent and where the
 * frame saved rbx and r12-r15. */
#define HCI_CFI_NSAVED 5
typedef struct hci_cfi_frame {
  uintptr_t fn_lo, fn_hi;           /* the FDE's range; equal when no FDE covers the PC */
  int saved_how[HCI_CFI_NSAVED];    /* rbx, r12, r13, r14, r15: R_SAME, R_UNDEF, R_OFFSET or R_UNSUP */
  int64_t saved_off[HCI_CFI_NSAVED];/* saved at CFA + off (R_OFFSET) */
} hci_cfi_frame_t;
/* hci_cfi_rule (uncached) with *f filled; f->saved_how is meaningful only
 * for a K_NORMAL rule from an FDE (fn_lo < fn_hi).  [eh_lo, eh_hi) (may be
 * empty): the module's .eh_frame, searched whole when the module has no
 * .eh_frame_hdr (hci_cfi_rule then assumes frame pointers). */
rule_t hci_cfi_frame(uintptr_t rip, bool exact, uintptr_t eh_lo, uintptr_t eh_hi, hci_cfi_frame_t *f);

/* pc is the first byte of glibc's sigreturn trampoline (__restore_rt: mov
 * $15, %rax; syscall), in a readable segment of a loaded module: the return
 * address the kernel pushes at the base of every signal frame. */
bool hci_cfi_is_sigreturn(uintptr_t pc);

/* Builds the sorted FDE table of a static executable that has no
 * .eh_frame_hdr from its .eh_frame [eh_lo, eh_hi) (found in its section
 * headers); later lookups there use it.  Once; false when not applicable. */
bool hci_cfi_static_index(uintptr_t eh_lo, uintptr_t eh_hi);

#endif
