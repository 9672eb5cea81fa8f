// EXPECT: bytes=77 objects=1
/* root_thread_registers.c - best effort: a 640-byte object whose only
 * pointer is in a callee-saved register of a thread spinning at exit (x86-64
 * r15, aarch64 x28).  Memory holds only the pointer XOR a key until the
 * spinning code clears it.  Other architectures keep it on the stack.
 * Control: 77. */
#include <sched.h>

#include "sc_thread.h"

static volatile uintptr_t hidden;
static volatile int spinning;

static SC_NOINLINE void alloc_hidden(void) { hidden = (uintptr_t)malloc(640) ^ SC_XOR_KEY; }

static void *worker(void *arg) {
  (void)arg;
  alloc_hidden();
  sc_scrub_stack();
#if defined(__x86_64__)
  __asm__ volatile(
      "mov %[h], %%r15\n\t"
      "xor %[k], %%r15\n\t"
      "movq $0, %[hm]\n\t"
      "movl $1, %[sp]\n\t"
      "1: pause\n\t"
      "jmp 1b\n\t"
      : [hm] "=m"(hidden), [sp] "=m"(spinning)
      : [h] "r"(hidden), [k] "r"(SC_XOR_KEY)
      : "r15", "memory");
#elif defined(__aarch64__)
  __asm__ volatile(
      "eor x28, %[h], %[k]\n\t"
      "str xzr, %[hm]\n\t"
      "mov w9, #1\n\t"
      "str w9, %[sp]\n\t"
      "1: yield\n\t"
      "b 1b\n\t"
      : [hm] "=m"(hidden), [sp] "=m"(spinning)
      : [h] "r"(hidden), [k] "r"(SC_XOR_KEY)
      : "x28", "x9", "memory");
#else
  void *volatile keep = (void *)(hidden ^ SC_XOR_KEY);
  hidden = 0;
  spinning = 1;
  for (;;) sched_yield();
  return keep;
#endif
  return NULL;
}

int main(void) {
  sc_spawn(worker, NULL);
  while (!spinning) sched_yield();
  sc_leak(77);
  sc_end();
  return 0;
}
