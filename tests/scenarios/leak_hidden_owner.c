// EXPECT: bytes=1026116 objects=1022
// EXPECT-FIRST-RECORD: Leak of 16 bytes in 1 objects allocated from:
/* leak_hidden_owner.c - the largest leak is a 16-byte block that owns 1000
 * 1 KiB blocks (a table of pointers), beside 21 lone 100-byte leaks from 21
 * different stacks.  Records are ranked by the bytes they account for (own
 * + kept alive, valgrind's "N (x direct, y indirect)"), so with the default
 * 20 records the 16-byte one comes first instead of being skipped.
 * Leaks: 16 + 1000 * 1024 + 21 * 100 = 1026116 bytes in 1022 objects. */
#include "scenario.h"

static SC_NOINLINE void owner(void) {
  void **t = malloc(16);
  /* A 16-byte head pointing to a chain of 1000 blocks: each block's first
   * word points to the next one. */
  void **prev = NULL;
  for (int i = 0; i < 1000; i++) {
    void **b = malloc(1024);
    b[0] = prev;
    prev = b;
  }
  t[0] = prev;
  t[1] = NULL;
  sc_sink = t;
  sc_sink = NULL;
}

/* A 100-byte leak from a stack of depth d (so each has its own record). */
static SC_NOINLINE void leak_at(int d) {
  if (d > 0) {
    leak_at(d - 1);
    sc_sink = NULL; /* not a tail call */
    return;
  }
  sc_leak(100);
}

int main(void) {
  owner();
  for (int d = 0; d < 21; d++) leak_at(d);
  sc_end();
  return 0;
}
