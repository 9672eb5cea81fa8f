#!/bin/sh
# test_adopter.sh - the check's helper task leaves no zombie behind under a
# first process that never reaps (a container running `tail -f /dev/null`
# or `sleep infinity` as pid 1, the program run by `docker exec`), nor under
# a child subreaper that never reaps; under an init that reaps, the helper
# is still an orphan (the program's __WALL waits never see it).  Each run is
# a pid namespace of its own (`unshare --pid --fork --mount-proc`) whose
# pid 1 is scenarios/fx_lazy_init.c; it runs scenarios/fx_no_disturb.c and
# counts the zombies it was left with (checker/adopter.c).
#
# usage: test_adopter.sh FX_NO_DISTURB FX_LAZY_INIT
. "$(dirname "$0")/expect.sh"
expect_private_env hc_adopter
fx=${1:?usage: test_adopter.sh FX_NO_DISTURB FX_LAZY_INIT}
lazy=${2:?usage: test_adopter.sh FX_NO_DISTURB FX_LAZY_INIT}

run() {
  cur="$*"
  out=$(env "$@" 2>&1)
  rc=$?
}
ns() { run HEAPCHECK=normal "$@"; }
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null 2>&1 || ! unshare --pid --fork --mount-proc true 2>/dev/null; then
  echo "note: not root or no unshare --pid --fork --mount-proc: skipped"
  exit 77
fi
pidns="unshare --pid --fork --mount-proc"

# 20 scoped checks and the exit check, no leak, 50 threads: every helper was
# left as a zombie of the never-reaping init (21; 0 now).
ns $pidns "$lazy" never "$fx" stress
expect_rc 0
has 'scoped checks failed: 0'
has 'lazy-init never: status 0, 0 zombies left'
# 3 scoped checks and a failing exit check (4 zombies before).  The exit
# check's helper keeps the threads stopped until _exit and outlived the
# process in either shape (1 zombie left with HEAP_CHECK_STOP_HELPER=child):
# it lets them go just before _exit there, and is reaped.  The status of
# the worker's exit(3) stays.
for h in auto child; do
  ns HEAP_CHECK_STOP_HELPER=$h $pidns "$lazy" never "$fx" few
  expect_rc 1
  has 'few: 3 of 3 scoped checks passed'
  has 'lazy-init never: status 1, 0 zombies left'
done
ns $pidns "$lazy" never "$fx" pause-exit leak
expect_rc 3
has 'SUMMARY: heapcheck: 144 bytes leaked in 3 allocations'
has 'lazy-init never: status 3, 0 zombies left'
# An init that reaps (a SIGCHLD handler): the helpers are its to reap.
ns $pidns "$lazy" catch "$fx" few
expect_rc 1
has 'lazy-init catch: status 1, 0 zombies left, 4 adopted reaped'
# There a program that reaps every child with __WALL during 30 checks
# never sees a helper (session 16's wall-reaper, by default now too).  Under
# an init that never reaps it does (11-22 foreign pids in 2 runs): the price
# of no zombie for good, documented.
ns $pidns "$lazy" catch "$fx" wall-reaper loop
expect_rc 1
has 'wall-reaper: 0 checks failed, 30 children of ours reaped, 0 foreign'
# HEAP_CHECK_STOP_HELPER=orphan forces the orphan, =child our child.
ns HEAP_CHECK_STOP_HELPER=orphan $pidns "$lazy" never "$fx" few
has 'lazy-init never: status 1, 4 zombies left'
# (Since session 17 a failing exit check lets the threads go and exit go on,
# as a passing one: its helper, our child, is reaped too; before, it kept
# the threads stopped until _exit, outlived the process and was adopted.)
ns HEAP_CHECK_STOP_HELPER=child $pidns "$lazy" catch "$fx" few
has 'lazy-init catch: status 1, 0 zombies left, 0 adopted reaped'
# A child subreaper that never reaps, under an init that does: the first
# helper goes to it (it cannot be asked beforehand) and stays a zombie; the
# others are ours, the exit check's reaped before _exit (4 zombies before).
ns $pidns "$lazy" catch "$lazy" subreaper "$fx" few
expect_rc 1
has 'lazy-init subreaper: status 1, 1 zombies left'
finish test_adopter
