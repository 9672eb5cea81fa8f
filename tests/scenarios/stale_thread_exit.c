// EXPECT: bytes=228 objects=5
/* stale_thread_exit.c - a thread other than main ends the program: it calls
 * a helper that builds and drops a 4-node list (32-byte nodes), another that
 * keeps the only pointer to a 100-byte block in a local array, then calls
 * exit(0) while main waits in pthread_join.  The helpers' dead frames below
 * the thread's own still hold those pointers; the final check scans the
 * ending thread's stack only from the frame that called exit, so all 5
 * blocks leak (2 direct, 3 indirect), as valgrind says. */
#include "sc_thread.h"

static SC_NOINLINE void stash(void) {
  void *volatile pad[64];
  for (int i = 0; i < 64; i++) pad[i] = NULL;
  pad[56] = malloc(100);
  sc_sink = pad[0];
}

static void *ender(void *arg) {
  (void)arg;
  sc_build_and_drop();
  stash();
  exit(0);
}

int main(void) {
  pthread_t t = sc_spawn(ender, NULL);
  pthread_join(t, NULL);
  return 3; /* never reached */
}
