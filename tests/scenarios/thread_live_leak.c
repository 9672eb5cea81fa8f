// EXPECT: bytes=300 objects=2
/* thread_live_leak.c - a thread leaks 100 + 200 bytes and stays blocked on
 * a condition variable at exit: a live thread's leaks are still leaks. */
#include "sc_thread.h"

static void *worker(void *arg) {
  (void)arg;
  sc_leak(100);
  sc_leak(200);
  sc_scrub_stack();
  sc_signal_ready();
  sc_block_forever();
  return NULL;
}

int main(void) {
  sc_spawn(worker, NULL);
  sc_wait_ready(1);
  sc_end();
  return 0;
}
