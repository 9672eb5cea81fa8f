#!/bin/sh
# test_gperftools_profiler.sh - profiler details gperftools' heap-profiler
# test relies on: HEAP_PROFILE_DEALLOCATION_INTERVAL, the "MemoryRegionMap
# Init" line at PERFTOOLS_VERBOSE>=10 whenever HEAPCHECK is set, and a
# message level the program changes at run time (hc_set_verbosity).
# Usage: test_gperftools_profiler.sh PROG (tests/gperftools/profiler_details.c)
. "$(dirname "$0")/expect.sh"
prog=${1:?usage: test_gperftools_profiler.sh PROG}
expect_private_env hc_gpprof

run() { cur="$*"; out=$(env "$@" 2>&1); rc=$?; }

# Dumps every 1 MB freed (64 x 100 KB freed: 6 or more dumps), and none
# without the variable.
run HEAPPROFILE="$dump/p" HEAP_PROFILE_ALLOCATION_INTERVAL=0 HEAP_PROFILE_INUSE_INTERVAL=0 \
  HEAP_PROFILE_DEALLOCATION_INTERVAL=1048576 "$prog" dealloc
expect_rc 0
has_re "^Dumping heap profile to .*\.heap \(1 MB freed cumulatively, 0 MB currently in use\)$"
checks=$((checks + 1))
n=$(printf '%s\n' "$out" | grep -c "MB freed cumulatively")
[ "$n" -ge 5 ] && [ "$n" -le 7 ] || fail "$n deallocation dumps, expected 5 to 7"
run HEAPPROFILE="$dump/q" HEAP_PROFILE_ALLOCATION_INTERVAL=0 HEAP_PROFILE_INUSE_INTERVAL=0 "$prog" dealloc
expect_rc 0
lacks "freed cumulatively"
run HEAPPROFILE="$dump/r" HEAP_PROFILE_DEALLOCATION_INTERVAL=bad "$prog" dealloc
has "HEAP_PROFILE_DEALLOCATION_INTERVAL"

# gperftools' VLOG(10) lines whenever HEAPCHECK is set (empty too).
for mode in "" normal local; do
  run HEAPCHECK="$mode" PERFTOOLS_VERBOSE=10 "$prog" verbosity
  has_re "^MemoryRegionMap Init$"
  before "MemoryRegionMap Init" "Starting tracking the heap"
  run HEAPCHECK="$mode" PERFTOOLS_VERBOSE=9 "$prog" verbosity
  lacks "MemoryRegionMap Init"
done
run PERFTOOLS_VERBOSE=10 "$prog" verbosity
lacks "MemoryRegionMap Init"

# The level the program sets holds for the next message.
run HEAPCHECK=local "$prog" verbosity
expect_rc 0
has "old=0 quiet=-4"
count_re "^No live heap object at 0x[0-9a-f]+ to ignore$" 1

finish test_gperftools_profiler
