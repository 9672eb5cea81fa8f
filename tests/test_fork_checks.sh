#!/bin/sh
# test_fork_checks.sh - children forked by a thread while main runs scoped
# checks (scenarios/fx_fork_checks.c), linked and -static, both stop methods.
#
# A child forked while the parent's checking thread held the seccomp gate's
# spin word (checker/seccomp_probe.c), or set up its first check under
# stop_world.c's init lock, inherited them held: its own check spun (or
# waited) for good, and the parent waited for it in waitpid (with the
# previous library: 4 of 5 runs hung, dynamic, ptrace; 3-6 of 10 static
# and under the fallback; killed here at 120 s, status 137).  fork_prepare
# now takes the set-up locks with the checker's, and the child resets the
# gate (leaks.c, hci_checker_fork_locks and hci_checker_fork_child).
#
# usage: test_fork_checks.sh FIXTURE [STATIC_FIXTURE]
. "$(dirname "$0")/expect.sh"
expect_private_env hc_fork_checks
fx=${1:?usage: test_fork_checks.sh FIXTURE [STATIC_FIXTURE]}
sfx=${2:-}

for f in "$fx" ${sfx:+"$sfx"}; do
  for m in ptrace signal; do
    for i in 1 2 3; do
      cur="$(basename "$f") HEAP_CHECK_STOP_METHOD=$m run $i"
      out=$(HEAPCHECK=normal HEAP_CHECK_STOP_METHOD=$m timeout -s KILL 120 "$f" 200 2>&1)
      rc=$?
      expect_rc 0
      has_re 'fork-checks: 200 checks, [0-9]+ forks, every child exited 7'
    done
  done
done
finish test_fork_checks
