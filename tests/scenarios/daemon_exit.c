// EXPECT: bytes=66 objects=1
// EXPECT-CHILD: bytes=77 objects=2
// REF-LSAN: bytes=77 objects=2                 LSan: only the child's exit() is checked
/* daemon_exit.c - a daemon's start: the parent leaks 66 bytes, forks and
 * ends with _exit(0) at once (the child carries on).  The parent is the
 * process the checker started in: its _exit runs the final check (66, and
 * the leak status).  The child inherits the leak, leaks 11 more once the
 * parent is gone and ends with exit(0): its own at-exit check reports 77 in
 * 2 (valgrind follows the fork and reports both processes the same way). */
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#include "scenario.h"

int main(void) {
  sc_leak(66);
  fflush(stdout);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid > 0) {
    sc_end();
    _exit(0);
  }
  /* The daemon: waits (at most 20 s) until its parent has ended. */
  for (int i = 0; i < 20000 && getppid() == parent; i++) usleep(1000);
  sc_leak(11);
  sc_end();
  exit(0);
}
