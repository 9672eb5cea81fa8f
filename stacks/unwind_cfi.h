/* unwind_cfi.h - what unwind_cfi.c tells unwind_dwarf.c: the rule of one
 * frame, computed from the module's .eh_frame (cold path, once per PC: the
 * walker caches it). */
#ifndef HC_UNWIND_CFI_H
#define HC_UNWIND_CFI_H

#include <stdbool.h>
#include <stdint.h>

/* K_EXPR: a K_NORMAL rule with one of the forms only DWARF expressions give
 * (a CFA loaded from the stack, rbp saved at or computed from a register);
 * unwind_dwarf.c keeps it off its fast path. */
enum { K_NORMAL = 0, K_END = 1, K_STOP = 2, K_SIGNAL = 3, K_EXPR = 4 };
/* R_AT: saved at base + off; R_VAL: the value is base + off (base: B_*),
 * from DW_CFA_expression and DW_CFA_val_expression. */
enum { R_SAME = 0, R_UNDEF = 1, R_OFFSET = 2, R_UNSUP = 3, R_AT = 4, R_VAL = 5 };
enum { B_CFA = 0, B_RSP = 1, B_RBP = 2 };

typedef struct rule {
  int kind;          /* K_* */
  int cfa_rbp;       /* CFA based on rbp (else rsp) */
  int rbp_how;       /* R_SAME, R_UNDEF or R_OFFSET; K_EXPR also R_AT or R_VAL */
  int64_t cfa_off;
  int64_t ra_off;    /* RA saved at CFA + ra_off */
  int64_t rbp_off;   /* rbp saved at CFA + rbp_off (R_OFFSET), at or equal to base + rbp_off (R_AT, R_VAL) */
  /* K_EXPR only: */
  int cfa_deref;     /* CFA = *(rbp|rsp + cfa_off) + cfa_add (else rbp|rsp + cfa_off) */
  int rbp_base;      /* R_AT, R_VAL: B_CFA, B_RSP or B_RBP (the frame's own registers) */
  int64_t cfa_add;
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
  int saved_how[HCI_CFI_NSAVED];    /* rbx, r12, r13, r14, r15: R_SAME, R_UNDEF, R_OFFSET, R_AT, R_VAL or R_UNSUP */
  int saved_base[HCI_CFI_NSAVED];   /* R_AT, R_VAL: B_* */
  int64_t saved_off[HCI_CFI_NSAVED];/* saved at CFA + off (R_OFFSET), at or equal to base + off (R_AT, R_VAL) */
} hci_cfi_frame_t;
/* hci_cfi_rule (uncached) with *f filled; f->saved_how is meaningful only
 * for a K_NORMAL or K_EXPR rule from an FDE (fn_lo < fn_hi).  [eh_lo, eh_hi) (may be
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
