#!/bin/sh
# test_cxx_api.sh - runs the C++ API test programs (tests/cxx/*.cc, built
# against <gperftools/heap-checker.h> and libheapcheck) under every HEAPCHECK
# mode and checks their exit status and output lines.
#
# Usage: test_cxx_api.sh PROGRAM...   (the built cxx_* test programs; meson
# passes them).  Each program prints "<test> key=value" lines on stderr; the
# library's report lines are checked too.  Exit 0 when every expectation
# holds, 1 otherwise (each failure is printed with the program's output).
#
# Modes: the whole-program ones (normal strict draconian minimal as-is), local
# (only explicit checks, no GlobalChecker) and unset (checker off).
# Draconian does no reachability analysis: a scoped check's result is the same
# as in the other modes (the tests keep nothing live that they allocate inside
# a check), and its at-exit check comes after libc/libstdc++ freed their
# caches, so exit statuses are the same too; but a whole-program check in the
# middle of the program (NoGlobalLeaks) also sees what the runtimes keep (the
# C++ exception pool), so its totals are not compared there.

. "$(dirname "$0")/expect.sh"

for exe in "$@"; do
  n=$(basename "$exe")
  case $n in *[!A-Za-z0-9_]*) continue ;; esac
  eval "bin_$n=\$exe"
done

# Leak profiles go to our own directory; nothing from the caller's
# environment changes the checker's behaviour.
expect_private_env hc_cxx
unset CXX_TEST_SKIP_CLEANUP

# run MODE PROGRAM [ARGS...]: runs it, keeps stdout+stderr in $out, status in $rc.
run() {
  _mode=$1 _prog=$2
  shift 2
  eval "_bin=\${bin_$_prog:-}"
  if [ -z "$_bin" ]; then
    echo "FAIL: program $_prog was not given to $0"
    failures=$((failures + 1))
    out='' rc=255
    return
  fi
  cur="HEAPCHECK=$_mode $_prog $*"
  # exec 2>&1 first: the shell's own "Aborted" note lands in $out too.
  if [ "$_mode" = unset ]; then
    out=$(exec 2>&1; "$_bin" "$@"; exit $?)
  else
    out=$(exec 2>&1; HEAPCHECK=$_mode "$_bin" "$@"; exit $?)
  fi
  rc=$?
}

global_modes="normal strict draconian minimal as-is"
all_modes="$global_modes local unset"

is_global() { case " $global_modes " in *" $1 "*) return 0 ;; esac; return 1; }

# The at-exit status of a program that leaves no leak of its own.
clean_rc() {
  expect_rc 0
}

for m in $all_modes; do
  active=1
  [ "$m" = unset ] && active=0

  # ---- IsActive, GlobalChecker, header shape, documentation examples ----
  run "$m" cxx_api
  has "api sizeof=56 pointers=7"
  if [ $active = 1 ]; then has "api IsActive=1"; else has "api IsActive=0"; fi
  if is_global "$m"; then has "GlobalChecker=set stable=1"; else has "GlobalChecker=null stable=1"; fi
  has "api done"
  if is_global "$m" && [ "$m" != draconian ]; then has "api NoGlobalLeaks=1"; fi
  expect_rc 0

  # ---- a scoped check that finds a leak ----
  run "$m" cxx_scoped_leak
  if [ $active = 1 ]; then
    has "scoped_leak NoLeaks=0 BytesLeaked=96 ObjectsLeaked=2"
    has "scoped_leak again SameHeap=0 BytesLeaked=96 ObjectsLeaked=2"
    has "Leak check scoped_leak detected leaks of 96 bytes in 2 objects"
  else
    has "scoped_leak NoLeaks=1 inactive"
    has 'Heap checker is not active, hence checker "scoped_leak" will do nothing!'
    has "To activate set the HEAPCHECK environment variable."
    lacks "Leak check"
  fi
  if is_global "$m"; then
    expect_rc 1   # the leaks are still there at exit
    has_re "^Leak check _main_ detected leaks of [0-9]+ bytes in [0-9]+ objects"
    [ "$m" = draconian ] || has "Leak check _main_ detected leaks of 96 bytes in 2 objects"
  else
    expect_rc 0
    lacks "_main_"
  fi

  # ---- a scoped check that finds nothing ----
  run "$m" cxx_scoped_clean
  has "scoped_clean NoLeaks=1 QuickNoLeaks=1 BriefNoLeaks=1 SameHeap=1 QuickSameHeap=1 BriefSameHeap=1"
  if [ $active = 1 ]; then
    has "scoped_clean BytesLeaked=0 ObjectsLeaked=0"
    lacks "Leak check scoped_clean"
  fi
  clean_rc "$m"

  # ---- nested and overlapping checks ----
  run "$m" cxx_nested
  if [ $active = 1 ]; then
    has "inner NoLeaks=0 BytesLeaked=64 ObjectsLeaked=1"
    has "outer NoLeaks=0 BytesLeaked=96 ObjectsLeaked=2"
    has "inner2 NoLeaks=1 BytesLeaked=0 ObjectsLeaked=0"
    has "outer2 NoLeaks=0 BytesLeaked=200 ObjectsLeaked=1"
    has "first NoLeaks=0 BytesLeaked=40 ObjectsLeaked=2"
    has "second NoLeaks=0 BytesLeaked=64 ObjectsLeaked=2"
  else
    has "inner NoLeaks=1 inactive"
    has "second NoLeaks=1 inactive"
  fi
  if is_global "$m"; then expect_rc 1; else expect_rc 0; fi

  # ---- Disabler hides leaks (main thread, threads, nested) ----
  run "$m" cxx_disabler
  has "disabler NoLeaks=1"
  lacks "Leak check disabler"
  if [ $active = 1 ]; then
    has "after NoLeaks=0 BytesLeaked=20 ObjectsLeaked=1"
  else
    has "after NoLeaks=1 inactive"
  fi
  clean_rc "$m"
  lacks "Leak check _main_"

  # ---- IgnoreObject / UnIgnoreObject ----
  run "$m" cxx_ignore
  has "IgnoreObject returns its argument=1"
  if [ $active = 1 ]; then
    has "ignore NoLeaks=0 BytesLeaked=40 ObjectsLeaked=1"
  else
    has "ignore NoLeaks=1 inactive"
  fi
  clean_rc "$m"

  # ---- HiddenPointer: what it alone holds is a leak ----
  run "$m" cxx_hidden
  has "hidden roundtrip=1 stored_differs=1 mask_ok=1 size_ok=1"
  has "hidden value=42"
  if [ $active = 1 ]; then
    has "hidden NoLeaks=0 BytesLeaked=16 ObjectsLeaked=1"
  else
    has "hidden NoLeaks=1 inactive"
  fi
  clean_rc "$m"

  # ---- NoGlobalLeaks, GlobalChecker()->BytesLeaked, CancelGlobalCheck ----
  run "$m" cxx_global
  if is_global "$m"; then
    has "global IsActive=1 GlobalChecker=set same=1"
    has "global end of main"
    if [ "$m" != draconian ]; then
      has "before NoGlobalLeaks=1"
      has "global NoGlobalLeaks=0 BytesLeaked=123 ObjectsLeaked=1"
      has "global NoLeaks=0 BytesLeaked=123"
    else
      has_re "global NoGlobalLeaks=0 BytesLeaked=[0-9]+ ObjectsLeaked=[0-9]+"
    fi
    has "global again NoGlobalLeaks=0"
    has "Leak check _main_ detected leaks of"
    expect_rc 1
    run "$m" cxx_global cancel
    [ "$m" = draconian ] || has "global NoGlobalLeaks=0 BytesLeaked=123 ObjectsLeaked=1"
    has "Canceling the automatic at-exit whole-program memory leak check"
    expect_rc 0
  else
    has "global NoGlobalLeaks=1 no global checker"
    has "global again NoGlobalLeaks=1"
    lacks "Leak check _main_"
    expect_rc 0
  fi

  # ---- REGISTER_HEAPCHECK_CLEANUP runs before the final check ----
  run "$m" cxx_cleanup
  has "cleanup end of main"
  if is_global "$m"; then
    has "cleanup first ran"
    has "cleanup free_block ran"
    before "cleanup end of main" "cleanup first ran"
    before "cleanup first ran" "cleanup free_block ran"
    before "cleanup free_block ran" 'No leaks found for check "_main_"'
    lacks "Leak check _main_"
    expect_rc 0
    # Without the cleanup's free the same block is a reported leak.
    CXX_TEST_SKIP_CLEANUP=1
    export CXX_TEST_SKIP_CLEANUP
    run "$m" cxx_cleanup
    cur="CXX_TEST_SKIP_CLEANUP=1 $cur"
    has "cleanup free_block ran"
    has_re "^Leak of 555 bytes in 1 objects"
    expect_rc 1
    # Cancelled (the block still kept): the cleanups run at exit, the
    # check does not, the leak goes unreported.
    run "$m" cxx_cleanup cancel
    unset CXX_TEST_SKIP_CLEANUP
    has "Canceling the automatic at-exit whole-program memory leak check"
    has "cleanup free_block ran"
    lacks "Leak check _main_"
    lacks "No leaks found for check \"_main_\""
    expect_rc 0
  else
    lacks "cleanup first ran"
    lacks "cleanup free_block ran"
    expect_rc 0
  fi

  # ---- inactive checkers and misuse ----
  run "$m" cxx_inactive
  if [ $active = 1 ]; then
    has "inactive IsActive=1"
    lacks "Heap checker is not active"
  else
    has "inactive IsActive=0 GlobalChecker=null"
    has 'Heap checker is not active, hence checker "inactive" will do nothing!'
    has "To activate set the HEAPCHECK environment variable."
  fi
  has "inactive NoLeaks=1"
  if is_global "$m" && [ "$m" != draconian ]; then has "inactive NoGlobalLeaks=1"; fi
  clean_rc "$m"
  run "$m" cxx_inactive bytes
  has "inactive calling BytesLeaked"
  has "*NoLeaks|SameHeap must execute before this call"
  lacks "inactive BytesLeaked="
  expect_rc 134
  run "$m" cxx_inactive objects
  has "*NoLeaks|SameHeap must execute before this call"
  lacks "inactive ObjectsLeaked="
  expect_rc 134
  run "$m" cxx_inactive dtor
  if [ $active = 1 ]; then
    has "Some *NoLeaks|SameHeap method must be called on any created HeapLeakChecker"
    lacks "inactive dtor survived"
    expect_rc 134
  else
    has "inactive dtor survived"
    expect_rc 0
  fi
done

finish test_cxx_api
