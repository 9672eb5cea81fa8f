// EXPECT: bytes=500 objects=2
// EXPECT-CHILD: bytes=100 objects=1
// EXPECT-STDOUT: child-exit=1
/* fork_both_leak.c - after fork the child leaks 100 bytes and the parent 200
 * + 300: each process reports only its own leaks.  The parent's stdout line,
 * printed before its check, must survive the exit status change. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scenario.h"

int main(void) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    sc_leak(100);
    sc_end();
    exit(0);
  }
  sc_leak(200);
  sc_leak(300);
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return 2;
  printf("child-exit=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  sc_end();
  return 0;
}
