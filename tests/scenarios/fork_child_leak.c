// EXPECT: bytes=0 objects=0
// EXPECT-CHILD: bytes=100 objects=1
// EXPECT-STDOUT: child-exit=1
/* fork_child_leak.c - the child leaks 100 bytes and exits through exit();
 * the parent leaks nothing.  Each process is checked on its own: the child
 * reports its leak and exits 1, the parent reports nothing and exits 0.
 * (The child-exit line is heapcheck's status; other tools exit otherwise.) */
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
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return 2;
  printf("child-exit=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  sc_end();
  return 0;
}
