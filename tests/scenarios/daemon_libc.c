// EXPECT: bytes=66 objects=1
// EXPECT-CHILD: bytes=77 objects=2
// REF-LSAN: bytes=77 objects=2                 LSan: only the child's exit() is checked
/* daemon_libc.c - daemon_exit's start through daemon(3): the parent leaks
 * 66 bytes and calls daemon(1, 1), which forks and ends the parent with
 * _exit(0) inside libc (glibc's own call, which no _exit interposer sees:
 * the parent used to end unchecked, and the launcher said its leaks were
 * unknown).  The parent's check reports 66; the child inherits the leak,
 * leaks 11 more once the parent is gone and ends with exit(0): 77 in 2.
 * daemon(1, 1) keeps the directory and stdout (the harness reads it). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "scenario.h"

int main(void) {
  sc_leak(66);
  fflush(stdout);
  pid_t parent = getpid();
  sc_end();
  if (daemon(1, 1) != 0) return 2;
  /* The daemon: waits (at most 20 s) until its parent has ended. */
  for (int i = 0; i < 20000 && getppid() == parent; i++) usleep(1000);
  sc_leak(11);
  sc_end();
  exit(0);
}
