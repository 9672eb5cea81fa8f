/* test_fork.c - fork while other threads allocate.
 *
 * Three threads allocate and free in a loop (cross-thread too) while the
 * main thread forks 100 times.  Each child allocates, frees, reallocs,
 * creates a thread that allocates, joins it and exits 0.  A child that
 * inherits a lock held by a thread that does not exist in it would hang:
 * alarm() in the child turns that into death by SIGALRM, which the parent
 * reports.  The parent also forks from a thread other than main. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heapcheck.h"

#define NFORKS 100
#define NWORKERS 3

static atomic_int stop;
static _Atomic(char *) shared[256];
static int failures;

static void *worker(void *arg) {
  uint64_t rng = (uintptr_t)arg * 7919 + 17;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    size_t n = (rng >> 4) % 100 < 95 ? 8 + (rng >> 12) % 4000 : (rng >> 12) % (600 << 10);
    char *p = malloc(n);
    if (p) memset(p, 1, n < 64 ? n : 64);
    char *old = atomic_exchange(&shared[(rng >> 40) % 256], p);
    free(old);
  }
  return NULL;
}

static void *child_thread(void *arg) {
  (void)arg;
  void *v[100];
  for (int i = 0; i < 100; i++) v[i] = malloc((size_t)i * 37 + 1);
  for (int i = 0; i < 100; i++) free(v[i]);
  return malloc(1000);
}

static void child(void) {
  alarm(20); /* a deadlock in the child becomes SIGALRM */
  void *v[200];
  for (int i = 0; i < 200; i++) {
    v[i] = malloc((size_t)(i % 50) * 100 + 1);
    if (!v[i]) _exit(3);
    memset(v[i], 2, (size_t)(i % 50) * 100 + 1);
  }
  for (int i = 0; i < 200; i += 2) free(v[i]);
  char *big = malloc(2 << 20);
  if (!big) _exit(4);
  memset(big, 3, 2 << 20);
  big = realloc(big, 5 << 20);
  if (!big) _exit(5);
  free(big);
  /* objects the workers had published before the fork are freeable here */
  for (int i = 0; i < 256; i += 7) free(atomic_exchange(&shared[i], NULL));
  pthread_t t;
  if (pthread_create(&t, NULL, child_thread, NULL) != 0) _exit(6);
  void *r;
  pthread_join(t, &r);
  if (!r) _exit(7);
  free(r);
  for (int i = 1; i < 200; i += 2) free(v[i]);
  hc_stats_t st;
  hc_get_stats(&st);
  if (st.thread_caches > 2) _exit(8); /* only this process's threads count */
  _exit(0);
}

static void check_child(pid_t pid, int i) {
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) {
      perror("waitpid");
      failures++;
      return;
    }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return;
  failures++;
  if (WIFSIGNALED(st))
    fprintf(stderr, "FAIL: child %d died of signal %d%s\n", i, WTERMSIG(st),
            WTERMSIG(st) == SIGALRM ? " (deadlock: the 20 s watchdog fired)" : "");
  else
    fprintf(stderr, "FAIL: child %d exited with status %d\n", i, WEXITSTATUS(st));
}

static void *forking_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < 10 && failures < 3; i++) {
    pid_t pid = fork();
    if (pid == 0) child();
    if (pid < 0) {
      perror("fork");
      failures++;
      continue;
    }
    check_child(pid, 1000 + i);
  }
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  pthread_t w[NWORKERS];
  for (long i = 0; i < NWORKERS; i++) pthread_create(&w[i], NULL, worker, (void *)i);
  for (int i = 0; i < NFORKS && failures < 3; i++) { /* a deadlock costs 20 s: stop early */
    void *p = malloc((size_t)i * 100 + 10); /* the forking thread allocates around fork too */
    pid_t pid = fork();
    if (pid == 0) child();
    free(p);
    if (pid < 0) {
      perror("fork");
      failures++;
      continue;
    }
    check_child(pid, i);
  }
  pthread_t ft;
  pthread_create(&ft, NULL, forking_thread, NULL);
  pthread_join(ft, NULL);
  atomic_store(&stop, 1);
  for (int i = 0; i < NWORKERS; i++) pthread_join(w[i], NULL);
  for (int i = 0; i < 256; i++) free(atomic_exchange(&shared[i], NULL));
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("%d forks OK\n", NFORKS + 10);
  return 0;
}
