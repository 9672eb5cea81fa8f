/* fx_dtor_join_lib.c - a shared object whose destructor joins a thread that
 * calls exit(5) once that destructor runs (fx_dtor_join.c). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_t late;
static _Atomic int started, in_dtor;

static void *late_exit(void *arg) {
  while (!atomic_load(&in_dtor)) usleep(1000);
  exit(5);
  return arg;
}

void fx_dtor_join_start(void) {
  if (pthread_create(&late, NULL, late_exit, NULL) == 0) atomic_store(&started, 1);
}

__attribute__((destructor)) static void join_late(void) {
  if (!atomic_load(&started)) return;
  atomic_store(&in_dtor, 1);
  pthread_join(late, NULL);
}
