#!/bin/sh
# test_job_stop.sh - SIGSTOP reaches a process whose threads a check holds
# in its ptrace stop (scenarios/fx_job_stop.c), linked and -static: the
# parent's waitpid(WUNTRACED) sees the stop, twice, and the child ends with
# its status after SIGCONT.
#
# The check's helper held the threads in the stop of its interrupt; a
# traced thread takes part in a group stop only when its tracer lets it
# go, so the stop never completed: the parent waited for good, and the
# stopped checking thread never ended the check (adv30; with the previous
# library "stop 1: NOT reported" after the fixture's 10 s, status 2).  The
# stopped threads now listen (PTRACE_LISTEN: checker/stop_ptrace.c).
#
# usage: test_job_stop.sh FIXTURE [STATIC_FIXTURE]
. "$(dirname "$0")/expect.sh"
expect_private_env hc_job_stop
fx=${1:?usage: test_job_stop.sh FIXTURE [STATIC_FIXTURE]}
sfx=${2:-}

for f in "$fx" ${sfx:+"$sfx"}; do
  for mode in exit scoped; do
    cur="$(basename "$f") $mode"
    out=$(HEAPCHECK=normal timeout -s KILL 120 "$f" $mode 2>&1)
    rc=$?
    expect_rc 0
    has 'stop 1: reported'
    lacks 'NOT reported'
    # The child's two idle threads are alive at its exit check: their
    # DTVs, which glibc's descriptors point to one entry in, are the
    # loader's and roots, not "possibly lost" (both were listed before).
    lacks 'ossibly lost'
    if [ $mode = exit ]; then
      has 'child status 1'
      has 'Leak of 48 bytes in 1 objects'
    else
      has 'child status 0'
      has 'No leaks found for check "job_stop"'
    fi
  done
done
finish test_job_stop
