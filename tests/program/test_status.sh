#!/bin/sh
# test_status.sh - the program's exit status is its own (issue 9 point 6).
#
# Usage: test_status.sh EXIT_STATUS_FIXTURE LAUNCHER LATE_OUTPUT_FIXTURE
# Environment: HC_LIB = the built libheapcheck.so; HC_CC = the C compiler.
#
# HEAP_CHECK_EXIT_CODE (default 1) and the launcher's --exit-code replace the
# status only when the program's own is 0: a leaking program that fails keeps
# its status (returned from main, given to exit(), exit() from a thread), in
# the modes that check before and after destructors; the report is printed
# either way.  `heapcheck --exit-code=0 cc -c bad.c` keeps the compiler's
# failing status.  A leaking program's output that only the rest of exit
# delivers (late exit handlers, destructors) is written all the same.
prefix=hc_status
. "$(dirname "$0")/common.sh"
fx=${1:?usage: test_status.sh EXIT_STATUS_FIXTURE LAUNCHER}
launcher=${2:?usage: test_status.sh EXIT_STATUS_FIXTURE LAUNCHER}
# The launcher's private directories (the compiler's kept leak reports
# below) in this test's own: they were left in /tmp at every run.
TMPDIR=$dump
export TMPDIR

for mode in normal strict; do
  run env LD_PRELOAD="$lib" HEAPCHECK=$mode "$fx" 0
  expect_rc 1
  has "Leak of 100 bytes in 1 objects"
  has "Exiting with error code"
  for how in 3 exit:4 thread:5; do
    run env LD_PRELOAD="$lib" HEAPCHECK=$mode "$fx" "$how"
    expect_rc "${how#*:}"
    has "Leak of 100 bytes in 1 objects"
    lacks "Exiting with error code"
    has "the program exits with status ${how#*:}: kept"
  done
  run env LD_PRELOAD="$lib" HEAPCHECK=$mode HEAP_CHECK_EXIT_CODE=0 "$fx" 6
  expect_rc 6
  run env LD_PRELOAD="$lib" HEAPCHECK=$mode HEAP_CHECK_EXIT_CODE=9 "$fx" exit:0
  expect_rc 9
  run env LD_PRELOAD="$lib" HEAPCHECK=$mode HEAP_CHECK_EXIT_CODE=9 "$fx" exit:256 # status 256 & 0xff = 0
  expect_rc 9
done
run "$launcher" --exit-code=0 "$fx" 7
expect_rc 7
has "Leak of 100 bytes in 1 objects"
run "$launcher" --exit-code=0 "$fx" 0
expect_rc 0
run "$launcher" --exit-code=42 "$fx" 0
expect_rc 42

# A compiler that fails keeps its status, whatever --exit-code says.
CC_CMD=${HC_CC:-cc}
printf 'int main(void) { return undeclared_name; }\n' >"$dump/bad.c"
# shellcheck disable=SC2086 # HC_CC may hold several words
run "$launcher" --exit-code=0 $CC_CMD -c "$dump/bad.c" -o "$dump/bad.o"
checks=$((checks + 1))
[ "$rc" != 0 ] || fail "the failing compile exited 0 under --exit-code=0"
has "undeclared_name"
# Leaks change the status only: exit goes on, so a buffer the program flushes
# from an exit handler registered by a constructor (run after the check) and
# a destructor's line reach stdout (libgfortran flushes its units from its
# destructor: a leaking Fortran program printed nothing, session 17), and a
# destructor's _exit(0) still ends with the checker's status.
late=${3:?usage: test_status.sh EXIT_STATUS_FIXTURE LAUNCHER LATE_OUTPUT_FIXTURE}
for mode in normal minimal strict; do
  run env LD_PRELOAD="$lib" HEAPCHECK=$mode "$late"
  expect_rc 1
  has "Leak of 100 bytes in 1 objects"
  has "late_output: main"
  has "late_output: buffered"
  has "late_output: destructor"
  run env LD_PRELOAD="$lib" HEAPCHECK=$mode "$late" exit0
  expect_rc 1
  has "late_output: destructor"
done
run env LD_PRELOAD="$lib" HEAPCHECK=normal HEAP_CHECK_EXIT_CODE=7 "$late"
expect_rc 7
has "late_output: buffered"
finish test_status
