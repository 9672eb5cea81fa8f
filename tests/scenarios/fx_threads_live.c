/* fx_threads_live.c - 4 threads each hold the only pointer to a ~1000-byte
 * block on their stack, one more in a __thread variable, and stay blocked
 * through exit; main leaks 77 bytes.  normal/strict report only the 77 bytes
 * (1 object); draconian (no thread roots) reports the blocks as well. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "scenario.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;
__thread void *volatile tls_block; /* not static: a write-only static may be dropped */

static void *worker(void *arg) {
  void *volatile mine = malloc(1000 + (size_t)arg);
  pthread_mutex_lock(&mu);
  ready++;
  pthread_cond_broadcast(&cv);
  for (;;) pthread_cond_wait(&cv, &mu); /* blocked through exit */
  return mine;
}

static void *tls_worker(void *arg) {
  (void)arg;
  tls_block = malloc(2000);
  pthread_mutex_lock(&mu);
  ready++;
  pthread_cond_broadcast(&cv);
  for (;;) pthread_cond_wait(&cv, &mu);
  return NULL;
}

NOINLINE void *main_site(void) { return malloc(77); }

int main(void) {
  pthread_t t;
  for (long i = 0; i < 4; i++) pthread_create(&t, NULL, worker, (void *)i);
  pthread_create(&t, NULL, tls_worker, NULL);
  pthread_mutex_lock(&mu);
  while (ready < 5) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  memset(main_site(), 1, 77);
  wipe_stack();
  printf("threads_live: main returning with 5 live threads\n");
  return 0;
}
