// EXPECT: bytes=77 objects=1
/* root_tls.c - objects reachable only from a __thread variable of the
 * executable (static TLS): the main thread's copy and that of a thread
 * blocked on a condition variable at exit.  One 77-byte control leak. */
#include "sc_thread.h"

static __thread void *volatile tls_ptr;

static SC_NOINLINE void set_tls(size_t n) { tls_ptr = malloc(n); }

static void *worker(void *arg) {
  (void)arg;
  set_tls(400);
  sc_scrub_stack();
  sc_signal_ready();
  sc_block_forever();
  return NULL;
}

int main(void) {
  set_tls(300);
  sc_spawn(worker, NULL);
  sc_wait_ready(1);
  sc_leak(77);
  sc_end();
  return 0;
}
