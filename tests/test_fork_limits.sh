#!/bin/sh
# test_fork_limits.sh - a forked child that drops its descriptor limit to 0
# or chroots into an empty directory before it exits, as privilege-separated
# daemons' workers do (sshd's pre-authentication child does both, then adds
# a seccomp filter; OpenSSH's "privsep" pattern in general).
#
# Usage: test_fork_limits.sh   (HC_CC = the C compiler command; HC_LIB = libheapcheck.so)
#
# The checker keeps descriptors of /proc/self/task and /proc/self/maps for a
# check that can open neither; after fork the inherited ones describe the
# parent, and they were reopened only when a check began: in such a child
# that was too late, and its check said "could not complete: not every thread
# could be listed" and exited 125 instead of 0 (or 1 with its leak).  The
# child now reopens them at fork.

. "$(dirname "$0")/expect.sh"

lib=${HC_LIB:?HC_LIB must name libheapcheck.so}
CC_CMD=${HC_CC:-cc}
expect_private_env hc_forklim
tmp=$dump

run() { cur="$*"; out=$("$@" 2>&1); rc=$?; }

cat >"$tmp/worker.c" <<'EOS'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
void *volatile sink;
int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "nofile";
  pid_t p = fork();
  if (p == 0) {
    if (strcmp(how, "chroot") == 0) {
      if (chroot(argv[2]) != 0 || chdir("/") != 0) _exit(3);
    } else {
      struct rlimit z = {0, 0};
      if (setrlimit(RLIMIT_NOFILE, &z) != 0) _exit(3);
    }
    if (argc > 3) { sink = malloc(77); sink = NULL; }
    exit(0);
  }
  int st;
  if (waitpid(p, &st, 0) != p) return 2;
  printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  return 0;
}
EOS
# shellcheck disable=SC2086 # HC_CC may hold several words
$CC_CMD -O1 -g -o "$tmp/worker" "$tmp/worker.c" || { echo "cannot compile"; exit 1; }
mkdir "$tmp/empty"

for how in nofile chroot; do
  if [ "$how" = chroot ] && [ "$(id -u)" != 0 ]; then
    echo "not root: the chroot case is skipped"
    continue
  fi
  # No leak: the child's status stays 0.
  run env HEAPCHECK=normal LD_PRELOAD="$lib" "$tmp/worker" "$how" "$tmp/empty"
  expect_rc 0
  has "child status 0"
  lacks "could not complete"
  # A leak: found, and the child's status is the leak status.
  run env HEAPCHECK=normal LD_PRELOAD="$lib" "$tmp/worker" "$how" "$tmp/empty" leak
  expect_rc 0
  has "child status 1"
  has "Leak check _main_ detected leaks of 77 bytes in 1 objects"
  lacks "could not complete"
done

finish test_fork_limits
