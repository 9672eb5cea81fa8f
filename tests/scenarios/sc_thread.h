/* sc_thread.h - thread helpers for the leak scenarios: a start barrier and
 * a wait that never ends (the process exits around the blocked thread).
 * Locks: sc_mu guards sc_ready; sc_never_mu is taken only by blocked threads.
 */
#ifndef SC_THREAD_H
#define SC_THREAD_H

#include <pthread.h>

#include "scenario.h"

static pthread_mutex_t sc_mu SC_UNUSED = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sc_cv SC_UNUSED = PTHREAD_COND_INITIALIZER;
static int sc_ready SC_UNUSED;
static pthread_mutex_t sc_never_mu SC_UNUSED = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sc_never_cv SC_UNUSED = PTHREAD_COND_INITIALIZER;

static SC_UNUSED void sc_signal_ready(void) {
  pthread_mutex_lock(&sc_mu);
  sc_ready++;
  pthread_cond_broadcast(&sc_cv);
  pthread_mutex_unlock(&sc_mu);
}

static SC_UNUSED void sc_wait_ready(int n) {
  pthread_mutex_lock(&sc_mu);
  while (sc_ready < n) pthread_cond_wait(&sc_cv, &sc_mu);
  pthread_mutex_unlock(&sc_mu);
}

/* Blocks on a condition variable nobody signals: the thread is alive, in
 * futex_wait, when main exits. */
static SC_NOINLINE SC_UNUSED void sc_block_forever(void) {
  pthread_mutex_lock(&sc_never_mu);
  for (;;) pthread_cond_wait(&sc_never_cv, &sc_never_mu);
}

static SC_UNUSED pthread_t sc_spawn(void *(*fn)(void *), void *arg) {
  pthread_t t;
  if (pthread_create(&t, NULL, fn, arg) != 0) abort();
  return t;
}

#endif
