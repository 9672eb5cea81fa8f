// EXPECT: bytes=77 objects=1
/* root_thread_stack.c - a 640-byte object whose only pointer is a local of a
 * thread blocked on a condition variable when main exits.  Control: 77. */
#include "sc_thread.h"

static SC_NOINLINE void alloc_into(void *volatile *slot) { *slot = malloc(640); }

static void *worker(void *arg) {
  (void)arg;
  void *volatile keep = NULL;
  alloc_into(&keep);
  sc_scrub_stack(); /* stale copies below this frame go: only `keep` holds it */
  sc_signal_ready();
  sc_block_forever();
  return keep;
}

int main(void) {
  sc_spawn(worker, NULL);
  sc_wait_ready(1);
  sc_leak(77);
  sc_end();
  return 0;
}
