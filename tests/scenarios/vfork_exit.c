// EXPECT: bytes=44 objects=1
// REF-VALGRIND: bytes=88 objects=2             valgrind runs vfork as fork: the child reports the inherited 44 at its _exit
/* vfork_exit.c - a vfork child shares the parent's memory (and so the
 * checker's state) and ends with _exit(0), as after a failed exec: that
 * _exit must go straight to the kernel - a check there would stop the
 * parent's threads from inside its own address space and mark the final
 * check as done for the parent.  The parent leaks 44 bytes and returns from
 * main: one report, from the parent's exit. */
#include <sys/wait.h>
#include <unistd.h>

#include "scenario.h"

int main(void) {
  sc_leak(44);
  pid_t pid = vfork();
  if (pid < 0) return 2;
  if (pid == 0) _exit(0);
  int st = 0;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 2;
  sc_end();
  return 0;
}
