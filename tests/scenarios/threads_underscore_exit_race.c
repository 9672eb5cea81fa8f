// EXPECT: bytes=33 objects=1
// REF-LSAN: bytes=0 objects=0                  LSan checks from an at-exit handler: _exit skips it
/* threads_underscore_exit_race.c - after main leaks 33 bytes, four threads
 * call _exit(0) at the same moment while main waits in pthread_join.  One
 * of them runs the final check; the others must wait for it, not end the
 * process under it.  h2o ends so: its main thread and a worker both call
 * _exit(0) on SIGTERM, and its leak check never printed (docs/validation.md,
 * session 19). */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "sc_thread.h"

#define RACERS 4

static atomic_int go;
static atomic_int waiting;

static void *racer(void *arg) {
  (void)arg;
  atomic_fetch_add(&waiting, 1);
  while (!atomic_load(&go)) __asm__ volatile("" ::: "memory");
  _exit(0);
  return NULL;
}

int main(void) {
  pthread_t t[RACERS];
  for (int i = 0; i < RACERS; i++)
    if (pthread_create(&t[i], NULL, racer, NULL) != 0) return 2;
  while (atomic_load(&waiting) < RACERS) __asm__ volatile("" ::: "memory");
  sc_leak(33);
  sc_end();
  atomic_store(&go, 1);
  pthread_join(t[0], NULL);
  return 0;
}
