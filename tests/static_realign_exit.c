/* static_realign_exit.c - a static program that calls exit() from a frame
 * GCC realigns (an over-aligned local and a VLA: CFA = *(rbp - N), rbp and
 * rbx saved at rbp + M, DW_CFA_def_cfa_expression / DW_CFA_expression).
 * The check finds main's caller by unwinding from itself through that
 * frame (stacks/unwind_caller.c), and the allocation stack goes through it
 * to main (test_static.sh).  Leaks 40 bytes. */
#include <stdlib.h>
#include <string.h>

void *volatile sink;

__attribute__((noinline)) void *make(size_t n) {
  void *p = malloc(n);
  memset(p, 1, n);
  return p;
}

__attribute__((noinline)) void realigned_exit(size_t n) {
  _Alignas(64) char buf[256];
  char vla[n];
  memset(vla, 2, n);
  sink = vla;
  memset(buf, (int)n, sizeof buf);
  sink = buf;
  sink = make(n + (buf[3] == vla[1])); /* n: reads both arrays */
  sink = 0;
  exit(0);
}

int main(void) {
  realigned_exit(40);
  return 0;
}
