/* fx_fork_checks.c - children forked beside back-to-back scoped checks.
 * Run by test_fork_checks.sh, linked with libheapcheck and -static.
 *
 * main runs N scoped checks (argv[1], 200) back to back while a thread
 * forks children, each of which runs a scoped check of its own and
 * _exit(7)s; the thread waits for each.  A small program on purpose: its
 * checks are short, so a fork lands inside the part of a check that ran
 * outside the checker's lock (the seccomp gate, the first check's set-up)
 * often.  Prints the forks and whether every child exited 7; returns 0.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <heapcheck.h>

static _Atomic int stop;
static int forks, sevens;

static void *forking(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    pid_t p = fork();
    if (p == 0) {
      hc_check_t *c = hc_check_begin("child");
      hc_check_end(c, 0);
      _exit(7);
    }
    int st = 0;
    if (p < 0 || waitpid(p, &st, 0) != p) break;
    forks++;
    sevens += WIFEXITED(st) && WEXITSTATUS(st) == 7;
  }
  return NULL;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200;
  pthread_t t;
  pthread_create(&t, NULL, forking, NULL);
  for (int i = 0; i < n; i++) {
    hc_check_t *c = hc_check_begin("parent");
    hc_check_end(c, 0);
    hc_check_free(c);
  }
  atomic_store(&stop, 1);
  pthread_join(t, NULL);
  printf("fork-checks: %d checks, %d forks, %s\n", n, forks,
         forks > 0 && forks == sevens ? "every child exited 7" : "a child did not exit 7");
  return 0;
}
