#!/bin/sh
# test_exhausted.sh - a program that used up its memory before main
# (scenarios/fx_exhausted.c): glibc's at-exit list could not grow, so part
# of the checker's exit handlers were never registered.  The process must
# end with the program's status (3), by exit and by main's return, the
# check run (the earlier registration's handler), never hang: a barrier
# without its check waited for good (python under `ulimit -d 30000`).
#
# usage: test_exhausted.sh FIXTURE [STATIC_FIXTURE]
. "$(dirname "$0")/expect.sh"
expect_private_env hc_exhausted
fx=${1:?usage: test_exhausted.sh FIXTURE [STATIC_FIXTURE]}
sfx=${2:-}

for f in "$fx" ${sfx:+"$sfx"}; do
  for how in '' return; do
    cur="$f $how"
    out=$(HEAPCHECK=normal timeout -s KILL 30 "$f" $how 2>&1)
    rc=$?
    expect_rc 3
    has_re '^exhausted: [1-9][0-9]* blocks before main, [1-9][0-9]* freed$'
    has 'No leaks found for check "_main_"'
  done
  # Plain (no check): the same status, nothing waits either.
  cur="$f plain"
  out=$(timeout -s KILL 30 "$f" 2>&1)
  rc=$?
  expect_rc 3
done
finish test_exhausted
