// EXPECT: bytes=44 objects=1
// REF-LSAN: bytes=0 objects=0                  LSan checks in the first child (nothing leaked yet) and never in the parent
/* vfork_exit_handlers.c - the shape of much old code: vfork, an exec that
 * fails, and exit(127) (not _exit) in the child, five times.  The child
 * runs in the parent's memory, and glibc's exit there runs the parent's
 * exit handlers - the checker's own among them - and removes them from
 * the list they share, so the parent's exit later finds none (and cannot
 * register one).  The child must not check (it would stop the parent's
 * world from inside it, and report or miss the parent's leaks); the parent
 * must still be checked at its exit: its 44 bytes, exit status 1.  Before
 * the fix the first child's exit ran the parent's check (no leak yet) and
 * the parent's leak went unreported with status 0. */
#include <sys/wait.h>
#include <unistd.h>

#include "scenario.h"

/* vfork in a function of its own: the child may clobber its caller's registers. */
static SC_NOINLINE int spawn_failing(void) {
  pid_t pid = vfork();
  if (pid < 0) return 2;
  if (pid == 0) {
    char *argv[] = {"/nonexistent/heapcheck-scenario", NULL};
    execv(argv[0], argv);
    exit(127);
  }
  int st = 0;
  return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 127 ? 0 : 2;
}

int main(void) {
  for (int i = 0; i < 5; i++)
    if (spawn_failing() != 0) return 2;
  sc_leak(44);
  sc_end();
  return 0;
}
