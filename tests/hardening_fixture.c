/* hardening_fixture.c - does one heap error on purpose (issue 11,
 * "Hardening"), for test_hardening.sh, which runs it plain and with
 * HEAPCHECK=normal and reads its exit status and stderr.
 *
 * usage: hardening_fixture CASE
 *   double        free(p); free(p)
 *   aba           free(a); free(b); free(a)
 *   late          free(p), then 20000 frees of its class (p's list goes
 *                 to the central lists and its span), then free(p)
 *   thread        free(p) in main, free(p) again in another thread
 *   thread-live   free(p) in a thread that keeps running, free(p) in main
 *   remote-batch  a thread frees p, which main allocated (p waits in the
 *                 thread's batch for main, allocator/remote.c), and frees
 *                 it again
 *   remote-inbox  the same, after the batch was pushed to main's inbox
 *                 (a batch's worth of main's objects freed); main frees p
 *   realloc       free(p); realloc(p, 64)
 *   uaf-global    free(a); free(b); write &global over b's link; malloc x2
 *   uaf-zero      the same, writing 0 (a memset after free)
 *   uaf-ones      the same, writing all ones
 *   uaf-flush     in a thread: free(a); free(b); write 0 over b's link;
 *                 one malloc (b), then the thread exits: its lists go to
 *                 central (the malloc fast path left b's link for the next
 *                 pop to check: the flush must check it)
 *   clean         legal work of every shape above, data that imitates
 *                 free lists (pointers and zeros in both first words);
 *                 must exit 0
 * Before the error it prints "fn <case> <address of the function that
 * does it>" on stdout, so the test can check the "called from" address of
 * the message.  A case whose error is not detected exits 99. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink;
static long global_target[8];

/* Keeps the compiler from reasoning about the pointers we pass. */
static void *hide(void *p) {
  __asm__("" : "+r"(p));
  return p;
}

#define ANNOUNCE(name, fn) (printf("fn %s %p\n", name, (void *)(uintptr_t)(fn)), fflush(stdout))

static __attribute__((noinline)) void do_free(void *p) { free(hide(p)); }
static __attribute__((noinline)) void *do_realloc(void *p, size_t n) { return realloc(hide(p), n); }
static __attribute__((noinline)) void *do_malloc(size_t n) { return malloc(n); }

static void case_double(void) {
  char *p = malloc(40);
  free(p);
  ANNOUNCE("double", do_free);
  do_free(p);
}

/* A large block (a span of its own; in checker mode it waits in the
 * quarantine, its span STASHED) freed twice. */
static void case_double_large(void) {
  char *p = malloc(300000);
  free(p);
  ANNOUNCE("double-large", do_free);
  do_free(p);
}

static void case_aba(void) {
  char *a = malloc(40), *b = malloc(40);
  free(a);
  free(b);
  ANNOUNCE("aba", do_free);
  do_free(a);
}

static void case_late(void) {
  enum { N = 20000 };
  static void *v[N];
  char *p = malloc(40);
  for (int i = 0; i < N; i++) v[i] = malloc(40);
  free(p);
  for (int i = 0; i < N; i++) free(v[i]);
  for (int i = 0; i < 1000; i++) free(malloc(200)); /* other classes move too */
  ANNOUNCE("late", do_free);
  do_free(p);
}

static void *thread_free(void *p) {
  do_free(p);
  return NULL;
}

static void case_thread(void) {
  char *p = malloc(40);
  free(p);
  pthread_t t;
  ANNOUNCE("thread", do_free);
  if (pthread_create(&t, NULL, thread_free, p) != 0) exit(2);
  pthread_join(t, NULL);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int freed, done;

static void *thread_free_wait(void *p) {
  free(p);
  pthread_mutex_lock(&mu);
  freed = 1;
  pthread_cond_broadcast(&cv);
  while (!done) pthread_cond_wait(&cv, &mu); /* p stays in this thread's cache */
  pthread_mutex_unlock(&mu);
  return NULL;
}

static void case_thread_live(void) {
  char *p = malloc(40);
  pthread_t t;
  if (pthread_create(&t, NULL, thread_free_wait, p) != 0) exit(2);
  pthread_mutex_lock(&mu);
  while (!freed) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  ANNOUNCE("thread-live", do_free);
  do_free(p);
}

/* p and the rest of a batch of 16-byte objects main allocated. */
static char *remote_objs[64];

static void *remote_batch_thread(void *arg) {
  (void)arg;
  do_free(remote_objs[0]);
  ANNOUNCE("remote-batch", do_free);
  do_free(remote_objs[0]);
  return NULL;
}

static void *remote_inbox_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < 64; i++) free(remote_objs[i]); /* batches of 32 pushed to main */
  return NULL;
}

static void case_remote(int inbox) {
  for (int i = 0; i < 64; i++) remote_objs[i] = malloc(16);
  pthread_t t;
  if (pthread_create(&t, NULL, inbox ? remote_inbox_thread : remote_batch_thread, NULL) != 0) exit(2);
  pthread_join(t, NULL);
  if (inbox) {
    ANNOUNCE("remote-inbox", do_free);
    do_free(remote_objs[0]);
  }
}

static void case_realloc(void) {
  char *p = malloc(40);
  free(p);
  ANNOUNCE("realloc", do_realloc);
  sink = do_realloc(p, 64);
}

/* free(a); free(b); value over b's link; malloc (b, whose link is read) */
static void uaf_link_once(const char *name, uintptr_t value) {
  char *a = malloc(40), *b = malloc(40);
  free(a);
  free(b);
  memcpy(hide(b), &value, sizeof value); /* the use after free */
  ANNOUNCE(name, do_malloc);
  sink = do_malloc(40); /* b: its link is read */
}

static void uaf_link(const char *name, uintptr_t value) {
  uaf_link_once(name, value);
  sink = do_malloc(40); /* what the link says, if it was followed */
  if (sink == (void *)global_target) puts("malloc returned the global");
}

static void *uaf_flush_thread(void *arg) {
  (void)arg;
  uaf_link_once("uaf-flush", 0);
  return NULL; /* the thread's lists go to central */
}

static void case_uaf_flush(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, uaf_flush_thread, NULL) != 0) exit(2);
  pthread_join(t, NULL);
}

/* Legal programs must never trip the checks. */
static void case_clean(void) {
  enum { N = 5000 };
  static void *v[N];
  for (int round = 0; round < 4; round++) {
    for (int i = 0; i < N; i++) {
      size_t n = 16 + (size_t)(i * 37 % 500);
      void **p = malloc(n);
      /* data that looks like a free object: pointers, zeros, copies */
      p[0] = (i & 1) ? (void *)p : NULL;
      p[1] = (i & 2) ? v[i ? i - 1 : 0] : NULL;
      v[i] = p;
    }
    for (int i = 0; i < N; i += 2) v[i] = realloc(v[i], 16 + (size_t)(i % 900));
    for (int i = 0; i < N; i++) {
      if (v[i] && i % 3 == 0) memset(v[i], 0, 16);
      free(v[i]);
    }
    pthread_t t;
    void *q = malloc(64);
    if (pthread_create(&t, NULL, thread_free, q) != 0) exit(2); /* a legal cross-thread free */
    pthread_join(t, NULL);
  }
  puts("clean");
}

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
  setvbuf(stdout, NULL, _IONBF, 0);
  if (!strcmp(c, "double")) case_double();
  else if (!strcmp(c, "double-large")) case_double_large();
  else if (!strcmp(c, "aba")) case_aba();
  else if (!strcmp(c, "late")) case_late();
  else if (!strcmp(c, "thread")) case_thread();
  else if (!strcmp(c, "thread-live")) case_thread_live();
  else if (!strcmp(c, "remote-batch")) case_remote(0);
  else if (!strcmp(c, "remote-inbox")) case_remote(1);
  else if (!strcmp(c, "realloc")) case_realloc();
  else if (!strcmp(c, "uaf-global")) uaf_link("uaf-global", (uintptr_t)global_target);
  else if (!strcmp(c, "uaf-zero")) uaf_link("uaf-zero", 0);
  else if (!strcmp(c, "uaf-ones")) uaf_link("uaf-ones", ~(uintptr_t)0);
  else if (!strcmp(c, "uaf-flush")) case_uaf_flush();
  else if (!strcmp(c, "clean")) {
    case_clean();
    return 0;
  } else {
    fprintf(stderr, "usage: %s double|aba|late|thread|thread-live|remote-batch|remote-inbox|realloc|uaf-global|uaf-zero|uaf-ones|uaf-flush|clean\n",
            argv[0]);
    return 2;
  }
  return 99; /* not detected */
}
