// EXPECT: bytes=77 objects=1
/* root_setspecific.c - objects reachable only as pthread_setspecific values:
 * key 0 (glibc keeps it inside the thread descriptor) and key 39 (in a
 * second-level array libc allocates), in the main thread and in a thread
 * blocked at exit: 4 objects of 100..103 bytes.  Control: 77. */
#include "sc_thread.h"

#define NKEYS 40
static pthread_key_t keys[NKEYS];

static SC_NOINLINE void set_values(size_t base) {
  pthread_setspecific(keys[0], malloc(base));
  pthread_setspecific(keys[NKEYS - 1], malloc(base + 1));
}

static void *worker(void *arg) {
  (void)arg;
  set_values(102);
  sc_scrub_stack();
  sc_signal_ready();
  sc_block_forever();
  return NULL;
}

int main(void) {
  for (int i = 0; i < NKEYS; i++)
    if (pthread_key_create(&keys[i], NULL) != 0) return 2;
  set_values(100);
  sc_spawn(worker, NULL);
  sc_wait_ready(1);
  sc_leak(77);
  sc_end();
  return 0;
}
