// EXPECT: bytes=612 objects=12
/* thread_exited_leak.c - 4 threads each leak 3 objects (50, 50 and 50+2i
 * bytes) and exit; main joins them: 600 + 2*(0+1+2+3) = 612 bytes. */
#include "sc_thread.h"

static void *worker(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  sc_leak(50);
  sc_leak(50);
  sc_leak(50 + i * 2); /* 0, 2, 4, 6 extra bytes */
  sc_scrub_stack();    /* the exited thread's cached stack must not hold them */
  return NULL;
}

int main(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) t[i] = sc_spawn(worker, (void *)(uintptr_t)i);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  sc_end();
  return 0;
}
