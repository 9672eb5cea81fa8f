#!/bin/sh
# test_static.sh - fully static executables (gcc -static ... libheapcheck.a)
# outside the leak checker's modes, which run_scenarios.sh covers: the
# default sampling (HEAPCHECK unset: every 512 KiB allocated walks a stack),
# every unwinder, a heap profile written at exit, and the whole-program
# check with a DWARF-walked stack.  Before the fix, every checker mode
# crashed in the first malloc (libc.a's _dl_find_object before its init).
#
# Usage: test_static.sh MANY_OBJECTS_FULLSTATIC LEAK_LIST_FULLSTATIC
. "$(dirname "$0")/expect.sh"
expect_private_env hc_static
many=$1
list=$2

run() { cur="$*"; out=$(env "$@" 2>&1); rc=$?; }

# Default sampling, no checker: the program's own status and output.
for u in auto fp dwarf; do
  run HEAPCHECK_UNWINDER=$u "$many"
  expect_rc 0
  lacks "heapcheck"
done
# Every allocation sampled, every unwinder.
for u in auto fp dwarf; do
  run HEAPCHECK_SAMPLE_PARAMETER=1 HEAPCHECK_UNWINDER=$u "$many"
  expect_rc 0
done
# A heap profile at exit.
run HEAPPROFILE="$dump/prof" HEAPCHECK_UNWINDER=dwarf "$many"
expect_rc 0
has "Starting tracking the heap"
if ls "$dump"/prof.*.heap >/dev/null 2>&1; then
  checks=$((checks + 1))
  grep -q "heap profile" "$dump"/prof.*.heap || fail "the profile has no header"
else
  fail "no profile written in $dump"
fi
# The checker with the DWARF unwinder: stacks reach main in the executable.
for m in normal strict; do
  run HEAPCHECK=$m HEAPCHECK_UNWINDER=dwarf "$list"
  expect_rc 1
  has "SUMMARY: heapcheck: 320 bytes leaked in 10 allocations"
  has_re "@ [0-9a-f]+ main .*leak_list.c:[0-9]+"
done
finish test_static
