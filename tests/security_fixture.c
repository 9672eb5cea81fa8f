/* security_fixture.c - leaks 100 bytes, statically linked with heapcheck.
 * With an argument DIR it first plants a symlink where the leak profile of
 * this process will go (DIR/<name>.<pid>._main_-end.heap -> DIR/target), so
 * the test can check that the checker never writes through it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile keep;

static __attribute__((noinline)) void leak(void) {
  keep = malloc(100);
  memset(keep, 1, 100);
  keep = NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) {
    char link_path[4096], target[4096];
    snprintf(target, sizeof target, "%s/target", argv[1]);
    snprintf(link_path, sizeof link_path, "%s/%s.%d._main_-end.heap", argv[1], program_invocation_short_name,
             (int)getpid());
    if (symlink(target, link_path) != 0) {
      fprintf(stderr, "symlink %s: %s\n", link_path, strerror(errno));
      return 2;
    }
  }
  leak();
  printf("uid=%d euid=%d\n", (int)getuid(), (int)geteuid());
  return 0;
}
