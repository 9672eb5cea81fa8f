// EXPECT: bytes=33 objects=1
// REF-LSAN: bytes=0 objects=0                  LSan checks from an at-exit handler: _exit skips it
/* thread_underscore_exit.c - a second thread leaks 33 bytes and ends the
 * process with _exit(0) while main waits in pthread_join and a third thread
 * spins.  The final check runs on the exiting thread and stops the others
 * as any check does. */
#include <pthread.h>
#include <unistd.h>

#include "sc_thread.h"

static void *spinner(void *arg) {
  (void)arg;
  sc_signal_ready();
  for (;;) __asm__ volatile("" ::: "memory");
  return NULL;
}

static void *ender(void *arg) {
  (void)arg;
  sc_leak(33);
  sc_scrub_stack();
  _exit(0);
  return NULL;
}

int main(void) {
  sc_spawn(spinner, NULL);
  sc_wait_ready(1);
  pthread_t t;
  if (pthread_create(&t, NULL, ender, NULL) != 0) return 2;
  sc_end();
  pthread_join(t, NULL);
  return 0;
}
