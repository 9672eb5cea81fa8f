// EXPECT: bytes=77 objects=1
/* main_reg_exit.c - main's only pointer to a 500-byte object is in a
 * callee-saved register (rbx on x86-64) when it calls exit(): the register
 * is live (main would use it after a call that returned), so the object is
 * reachable, as valgrind and LeakSanitizer say.  A compiled exit() wrapper
 * that saved its argument in rbx before recording the registers lost it
 * (ssh -G reported the 88-byte connection info it keeps in rbx).  Elsewhere
 * than x86-64 the pointer stays in a volatile local.  Control: 77. */
#include "scenario.h"

#define SC_MASK ((uintptr_t)0x5a5a5a5a5a5a5a5aull)

/* The pointer leaves only masked: no plain copy in main's frame. */
static SC_NOINLINE uintptr_t alloc_masked(void) { return (uintptr_t)malloc(500) ^ SC_MASK; }

int main(void) {
  uintptr_t masked = alloc_masked();
  sc_leak(77);
  sc_end();
#if defined(__x86_64__)
  /* rsp is 16-byte aligned here: main makes calls. */
  __asm__ volatile("mov %0, %%rbx\n\t"
                   "xor %1, %%rbx\n\t"
                   "xor %%edi, %%edi\n\t"
                   "call exit@PLT"
                   :
                   : "r"(masked), "r"(SC_MASK)
                   : "rbx", "rdi", "memory");
#else
  void *volatile keep = (void *)(masked ^ SC_MASK);
  (void)keep;
#endif
  exit(0);
}
