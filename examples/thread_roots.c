/* thread_roots.c - objects that only other threads keep alive are not leaks.
 *
 * Three worker threads each hold a heap object in a different place and then
 * block until the process exits:
 *   - "stack":    a local variable of the worker;
 *   - "tls":      a __thread variable;
 *   - "specific": a pthread_setspecific() slot.
 * No global points to any of them, yet they are live: the checker stops every
 * thread and scans its stack, registers and thread-local storage.  The main
 * thread leaks one 77-byte object for real, and that is the only report.
 *
 * Build:  cc -g -fno-omit-frame-pointer -pthread thread_roots.c -o thread_roots -lheapcheck
 * Run:    HEAPCHECK=normal ./thread_roots    one leak of 77 bytes; exit 1
 * (HEAPCHECK=draconian scans no thread, so what the threads hold is reported
 * too.)
 */
#include <heapcheck.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static __thread char *tls_object;
static pthread_key_t key;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;

static void *volatile sink;

/* Parks the calling thread forever (the process exits around it). */
static void park(void) {
  pthread_mutex_lock(&mu);
  ready++;
  pthread_cond_broadcast(&cv);
  for (;;) pthread_cond_wait(&cv, &mu);
}

static void *on_stack(void *arg) {
  (void)arg;
  char *volatile mine = malloc(1000);  /* volatile: it stays in this frame */
  if (mine) strcpy(mine, "held by a stack variable");
  park();
  return NULL;
}

/* Overwrites dead stack frames, so what the helpers below allocated is
 * held only where they put it, not by a stale copy on the stack. */
__attribute__((noinline)) static void scrub_stack(void) {
  volatile char buf[8192];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = 0;
}

__attribute__((noinline)) static void hold_in_tls(void) {
  tls_object = malloc(2000);
  if (tls_object) strcpy(tls_object, "held by a __thread variable");
}

__attribute__((noinline)) static void hold_in_specific(void) {
  char *p = malloc(3000);
  if (p) strcpy(p, "held by pthread_setspecific");
  pthread_setspecific(key, p);
}

static void *in_tls(void *arg) {
  (void)arg;
  hold_in_tls();
  scrub_stack();
  park();
  return NULL;
}

static void *in_specific(void *arg) {
  (void)arg;
  hold_in_specific();
  scrub_stack();
  park();
  return NULL;
}

__attribute__((noinline)) static void real_leak(void) {
  sink = malloc(77);
  sink = NULL;
}

int main(void) {
  pthread_key_create(&key, NULL);
  void *(*bodies[3])(void *) = {on_stack, in_tls, in_specific};
  for (int i = 0; i < 3; i++) {
    pthread_t t;
    if (pthread_create(&t, NULL, bodies[i], NULL) != 0) {
      perror("pthread_create");
      return 2;
    }
    pthread_detach(t);
  }
  pthread_mutex_lock(&mu);
  while (ready < 3) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);

  real_leak();
  scrub_stack();  /* no stale copy of the leaked pointer survives either */
  printf("thread_roots: 3 threads hold 6000 bytes; main leaked 77 bytes\n");
  fflush(stdout);
  return 0;
}
