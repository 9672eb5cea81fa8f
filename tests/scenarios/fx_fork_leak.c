/* fx_fork_leak.c - the child leaks 77 bytes and returns from main (its at-exit
 * check must report them, with its own pid, and exit 1); the parent waits,
 * prints "parent: child status=N pid=P" and ends cleanly. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scenario.h"

NOINLINE void *child_site(void) { return malloc(77); }

int main(void) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    memset(child_site(), 1, 77);
    wipe_stack();
    return 0;
  }
  int st = 0;
  waitpid(pid, &st, 0);
  printf("parent: child status=%d pid=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1, (int)pid);
  return 0;
}
