// EXPECT: bytes=77 objects=1
/* main_stack_exit.c - main keeps a pointer in a live local and calls exit():
 * main's frame is still on the stack during the at-exit check, so the
 * 500-byte object is reachable.  Control: 77. */
#include "scenario.h"

static SC_NOINLINE void alloc_into(void *volatile *slot) { *slot = malloc(500); }

int main(void) {
  void *volatile keep = NULL;
  alloc_into(&keep);
  sc_leak(77);
  sc_end();
  exit(0);
}
