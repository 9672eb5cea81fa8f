/* realign_fixture.c - leaks whose stacks pass through frames described by
 * DWARF expressions (stacks/unwind_cfi.c's eval_expr), for
 * test_realign.sh, which reads the report and wants every frame up to main.
 *
 *  a: make_a <- c_realigned <- outer_a <- main.  c_realigned has an
 *     over-aligned local and a VLA: GCC realigns its frame through a DRAP
 *     register and gives CFA = *(rbp - N) (DW_CFA_def_cfa_expression) and
 *     rbp, rbx saved at rbp + M (DW_CFA_expression).  clang keeps rbp as a
 *     frame pointer (CFA = rbp + 16) and the case is an ordinary frame.
 *  b: make_b <- asm_drap <- outer_b <- main.  The same shape as GCC's,
 *     written out with .cfi_escape: the expressions whatever the compiler.
 *  c: make_c <- asm_perl <- outer_c <- main.  OpenSSL perlasm's shape:
 *     CFA = *(rsp + 64) + 8 (DW_OP_breg7 64; DW_OP_deref; DW_OP_plus_uconst 8).
 *  d: c_direct <- outer_d <- main: malloc called from a realigned frame
 *     (the walk's first frame is the expression frame).
 *  e: make_e <- asm_ops <- outer_e <- main.  An ordinary frame (CFA = rsp +
 *     16, rbp at CFA - 16) said with an expression of most of the operations
 *     the evaluator knows (rip, and, ge, shl, swap, over, minus...), rbp's
 *     with DW_OP_call_frame_cfa.
 * Each case allocates three times from one call site (the second and third
 * walks go through the thread's memo of the last walk).
 */
#include <stdlib.h>
#include <string.h>

void *volatile sink;
static volatile int reps = 3;

#define NOINLINE __attribute__((noinline, used))

NOINLINE void *make_a(size_t n) { void *p = malloc(n); memset(p, 1, n); return p; }
NOINLINE void *make_b(size_t n) { void *p = malloc(n); memset(p, 2, n); return p; }
NOINLINE void *make_c(size_t n) { void *p = malloc(n); memset(p, 3, n); return p; }
NOINLINE void *make_e(size_t n) { void *p = malloc(n); memset(p, 5, n); return p; }

NOINLINE void *c_realigned(size_t n) {
  _Alignas(64) char buf[256]; /* over-aligned: and $-64, %rsp */
  char vla[n];                /* with a VLA GCC keeps the incoming frame in a DRAP register */
  memset(vla, 2, n);
  sink = vla;
  memset(buf, (int)n, sizeof buf);
  sink = buf;
  void *p = make_a(n + (buf[3] == vla[1])); /* n: reads both arrays */
  sink = 0;
  return p;
}

NOINLINE void *c_direct(size_t n) {
  _Alignas(64) char buf[256];
  char vla[n];
  memset(vla, 4, n);
  sink = vla;
  memset(buf, (int)n, sizeof buf);
  sink = buf;
  void *p = malloc(n + (buf[3] == vla[1]));
  sink = 0;
  return p;
}

void *asm_drap(size_t n);
void *asm_perl(size_t n);
void *asm_ops(size_t n);
#if defined(__x86_64__)
/* GCC's DRAP prologue and CFI (gcc -O2 of c_realigned), the register rules
 * as DW_CFA_expression / DW_CFA_def_cfa_expression bytes:
 *   0x10 0x06 0x02 0x76 0x00: rbp saved at DW_OP_breg6 0
 *   0x0f 0x03 0x76 0x78 0x06: CFA = DW_OP_breg6 -8; DW_OP_deref
 *   0x10 0x03 0x02 0x76 0x70: rbx saved at DW_OP_breg6 -16 */
__asm__(".text\n"
        ".globl asm_drap\n"
        ".type asm_drap, @function\n"
        "asm_drap:\n"
        ".cfi_startproc\n"
        "  leaq 8(%rsp), %r10\n"
        ".cfi_def_cfa %r10, 0\n"
        "  andq $-64, %rsp\n"
        "  pushq -8(%r10)\n"
        "  pushq %rbp\n"
        "  movq %rsp, %rbp\n"
        ".cfi_escape 0x10, 0x06, 0x02, 0x76, 0x00\n"
        "  pushq %r10\n"
        ".cfi_escape 0x0f, 0x03, 0x76, 0x78, 0x06\n"
        "  pushq %rbx\n"
        ".cfi_escape 0x10, 0x03, 0x02, 0x76, 0x70\n"
        "  subq $96, %rsp\n" /* 16-aligned: 64-aligned less 4 pushes less 96 */
        "  movq %rdi, %rbx\n"
        "  call make_b\n"
        "  leaq -16(%rbp), %rsp\n"
        "  popq %rbx\n"
        "  popq %r10\n"
        ".cfi_def_cfa %r10, 0\n"
        "  popq %rbp\n"
        "  leaq -8(%r10), %rsp\n"
        ".cfi_def_cfa %rsp, 8\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size asm_drap, .-asm_drap\n"
        /* perlasm: the incoming rsp kept at 64(%rsp) after realigning;
         * 0x0f 0x06 0x77 0xc0 0x00 0x06 0x23 0x08:
         * CFA = DW_OP_breg7 64; DW_OP_deref; DW_OP_plus_uconst 8. */
        ".globl asm_perl\n"
        ".type asm_perl, @function\n"
        "asm_perl:\n"
        ".cfi_startproc\n"
        "  movq %rsp, %rax\n"
        ".cfi_def_cfa_register %rax\n"
        "  pushq %rbx\n"
        ".cfi_offset %rbx, -16\n"
        "  pushq %rbp\n"
        ".cfi_offset %rbp, -24\n"
        "  subq $136, %rsp\n"
        "  andq $-64, %rsp\n"
        "  movq %rax, 64(%rsp)\n"
        ".cfi_escape 0x0f, 0x06, 0x77, 0xc0, 0x00, 0x06, 0x23, 0x08\n"
        "  movq $1, %rbp\n" /* not a frame pointer */
        "  call make_c\n"
        "  movq 64(%rsp), %rcx\n"
        ".cfi_def_cfa %rcx, 8\n"
        "  movq -16(%rcx), %rbp\n"
        "  movq -8(%rcx), %rbx\n"
        "  movq %rcx, %rsp\n"
        ".cfi_def_cfa %rsp, 8\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size asm_perl, .-asm_perl\n"
        /* CFA = rsp + 16 as DW_OP_breg7 0; DW_OP_breg16 0; DW_OP_lit15;
         * DW_OP_and; DW_OP_lit0; DW_OP_ge (1); DW_OP_lit4; DW_OP_shl (16);
         * DW_OP_const1s -8; DW_OP_swap; DW_OP_over; DW_OP_minus (24);
         * DW_OP_plus (16); DW_OP_dup; DW_OP_drop; DW_OP_plus;
         * rbp saved at DW_OP_call_frame_cfa; DW_OP_lit16; DW_OP_minus. */
        ".globl asm_ops\n"
        ".type asm_ops, @function\n"
        "asm_ops:\n"
        ".cfi_startproc\n"
        "  pushq %rbp\n"
        ".cfi_escape 0x0f, 0x13, 0x77, 0x00, 0x80, 0x00, 0x3f, 0x1a, 0x30, 0x2a, 0x34, 0x24, 0x09, 0xf8, 0x16, 0x14,"
        " 0x1c, 0x22, 0x12, 0x13, 0x22\n"
        ".cfi_escape 0x10, 0x06, 0x03, 0x9c, 0x40, 0x1c\n"
        "  movq $1, %rbp\n" /* not a frame pointer */
        "  call make_e\n"
        "  popq %rbp\n"
        ".cfi_def_cfa %rsp, 8\n"
        ".cfi_restore %rbp\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size asm_ops, .-asm_ops\n");
#endif

/* Each keeps its return address into main (no tail call: the build passes
 * -fno-optimize-sibling-calls) and allocates from one call site. */
NOINLINE void outer_a(void) { for (int i = 0; i < reps; i++) sink = c_realigned(40); }
NOINLINE void outer_b(void) { for (int i = 0; i < reps; i++) sink = asm_drap(41); }
NOINLINE void outer_c(void) { for (int i = 0; i < reps; i++) sink = asm_perl(42); }
NOINLINE void outer_d(void) { for (int i = 0; i < reps; i++) sink = c_direct(43); }
NOINLINE void outer_e(void) { for (int i = 0; i < reps; i++) sink = asm_ops(44); }

int main(void) {
  outer_a();
  outer_b();
  outer_c();
  outer_d();
  outer_e();
  sink = 0; /* all leaked */
  return 0;
}
