#!/bin/sh
# test_leak_modes.sh - HEAPCHECK modes on the leak fixtures: exit status and
# the report's key lines, preloaded (LD_PRELOAD) and linked (-lheapcheck).
#
# Usage: test_leak_modes.sh   (HC_LIB, HC_FIXTURES set by meson; see
# tests/scenarios/fixtures.sh).  Exits 0 when every expectation holds.
#
# What the modes must do (docs/leak-checking.md):
#   normal    check at exit, before the program's global destructors
#   strict    check after the global destructors
#   draconian strict without thread/global roots; nothing of libc's or ours
#   minimal   objects allocated before main are not reported
#   as-is     the HEAP_CHECK_* knobs as given; local: explicit checks only

. "$(dirname "$0")/scenarios/fixtures.sh"

leak_direct_report() {
  has "Leak check _main_ detected leaks of 500 bytes in 3 objects"
  has_re "^The 2 largest leaks:$"
  has_re "^Leak of 300 bytes in 1 objects allocated from:$"
  has_re "^Leak of 200 bytes in 2 objects allocated from:$"
  has_re "^	@ [0-9a-f]+ site_b .*leak_direct\.c:[0-9]+ \(.*fx_leak_direct[a-z_]*\+0x[0-9a-f]+\)$"
  has_re "^	@ [0-9a-f]+ site_a "
  has "Exiting with error code (instead of crashing) because of whole-program memory leaks"
  has "leak_direct: done"
  checks=$((checks + 1))
  [ "$(printf '%s\n' "$out" | tail -n 1)" = "SUMMARY: heapcheck: 500 bytes leaked in 3 allocations" ] ||
    fail "the last line is not the SUMMARY"
}

# ---- leak_direct in every whole-program mode ----
for m in normal strict minimal as-is; do
  run HEAPCHECK=$m leak_direct
  expect_rc 1
  has "WARNING: Perftools heap leak checker is active -- Performance may suffer"
  leak_direct_report
  lacks "Not looking for thread stacks"
done
run HEAPCHECK=draconian leak_direct
expect_rc 1
has "Not looking for thread stacks; objects reachable only from there will be reported as leaks"
has "Leak check _main_ detected leaks of 1500 bytes in 4 objects"
has_re "^Leak of 1000 bytes in 1 objects allocated from:$"
# Case does not matter; an unknown mode is an error naming the valid ones,
# then the run is checked as in normal mode.
run HEAPCHECK=Normal leak_direct
expect_rc 1
run HEAPCHECK=bogus leak_direct
expect_rc 1
has "Unsupported heap_check flag: bogus"
has "minimal, normal, strict, draconian, as-is, local"
leak_direct_report

# A relative HEAPCHECK_DEBUG_DIR is named in a warning, then the default
# is used (it was ignored without a word).
run HEAPCHECK=normal HEAPCHECK_DEBUG_DIR=relative/dir leak_direct
expect_rc 1
has "warning: HEAPCHECK_DEBUG_DIR=relative/dir is not an absolute path; using /usr/lib/debug"
# HEAPPROFILESIGNAL naming a fault's signal is refused with a warning: its
# handler returned to the faulting instruction, and a crashing program
# looped for ever instead of dying.
run HEAPPROFILE="$dump/sigprof" HEAPPROFILESIGNAL=11 leak_direct
expect_rc 0
has "warning: HEAPPROFILESIGNAL=11 is a fault's signal; no signal-triggered dumps"
lacks "Using signal 11"

# ---- no checking ----
run leak_direct
expect_rc 0
has "leak_direct: done"
lacks "Perftools"
lacks "Leak check"
run HEAPCHECK= leak_direct
expect_rc 0
has "Turning perftools heap leak checking off"
lacks "Leak check"
run HEAPCHECK=local leak_direct
expect_rc 0
has "WARNING: Perftools heap leak checker is active"
lacks "Leak check"
lacks "No leaks found"
run HEAPCHECK= PERFTOOLS_VERBOSE=10 leak_direct
has "Starting tracking the heap"

# ---- linked instead of preloaded ----
PRELOAD=no
run HEAPCHECK=normal leak_direct_linked
expect_rc 1
has "leak_direct: linked, active=1"
leak_direct_report
run leak_direct_linked
expect_rc 0
has "leak_direct: linked, active=0"
PRELOAD=yes

# ---- exit status, stderr closed by the program, stdout kept ----
run HEAPCHECK=normal HEAP_CHECK_EXIT_CODE=7 leak_direct
expect_rc 7
run HEAPCHECK=normal HEAP_CHECK_EXIT_CODE=300 leak_direct
expect_rc 1
has "HEAP_CHECK_EXIT_CODE"
run HEAPCHECK=normal leak_direct closefd2
expect_rc 1
has "Leak check _main_ detected leaks of 500 bytes in 3 objects"
# Buffered stdout to a file survives the _exit.
cur="stdout to a file"
HEAPCHECK=normal LD_PRELOAD="$HC_LIB" "$HC_FIXTURES/fx_leak_direct" >"$dump/stdout.txt" 2>/dev/null
rc=$?
out=$(cat "$dump/stdout.txt")
expect_rc 1
has "leak_direct: done"

# ---- clean programs ----
for m in normal strict minimal as-is; do
  run HEAPCHECK=$m reachable
  expect_rc 0
  has "reachable: done"
  has_re "^No leaks found for check \"_main_\" \(but no 100% guarantee that there aren't any\): found [0-9]+ reachable heap objects of [0-9]+ bytes$"
  lacks "Leak check"
done
# draconian has no roots but ignored objects: the globals' blocks leak.
run HEAPCHECK=draconian reachable
expect_rc 1
has_re "^Leak of 300000 bytes in 1 objects allocated from:$"
# ...but an empty program leaks nothing, not even libc's or heapcheck's own.
for m in normal strict draconian minimal as-is; do
  run HEAPCHECK=$m empty
  expect_rc 0
  has "empty: done"
  has "No leaks found for check \"_main_\""
done

# ---- normal checks before global destructors, strict after ----
for m in normal minimal as-is; do
  run HEAPCHECK=$m dtor_forget
  expect_rc 0
  has "No leaks found"
done
run HEAPCHECK=as-is HEAP_CHECK_AFTER_DESTRUCTORS=1 dtor_forget
expect_rc 1
for m in strict draconian; do
  run HEAPCHECK=$m dtor_forget
  expect_rc 1
  has "Leak check _main_ detected leaks of 999 bytes in 2 objects"
  has_re "^Leak of 555 bytes in 1 objects allocated from:$"
  has_re "^Leak of 444 bytes in 1 objects allocated from:$"
done

# ---- minimal ignores what was allocated before main ----
for m in normal strict; do
  run HEAPCHECK=$m ctor_leak
  expect_rc 1
  has "Leak check _main_ detected leaks of 333 bytes in 2 objects"
  has_re "^	@ [0-9a-f]+ ctor_site "
done
run HEAPCHECK=minimal ctor_leak
expect_rc 1
has "Leak check _main_ detected leaks of 222 bytes in 1 objects"
lacks "ctor_site"

# ---- atexit handlers registered by main run before the check ----
run HEAPCHECK=normal atexit_leak
expect_rc 1
has "Leak check _main_ detected leaks of 66 bytes in 1 objects"
has_re "^	@ [0-9a-f]+ handler_site "

# ---- a forked child is checked with its own pid ----
run HEAPCHECK=normal fork_leak
expect_rc 0
has_re "^parent: child status=1 pid=[0-9]+$"
has "Leak check _main_ detected leaks of 77 bytes in 1 objects"
has_re "^	@ [0-9a-f]+ child_site "
count_re "^No leaks found for check" 1
child=$(printf '%s\n' "$out" | sed -n 's/^parent: child status=1 pid=\([0-9]*\)$/\1/p')
checks=$((checks + 1))
[ -n "$child" ] && [ -f "$dump/fx_fork_leak.$child._main_-end.heap" ] || fail "no leak profile named after the child's pid"
has "\"$dump/fx_fork_leak.$child._main_-end.heap\""

# ---- threads alive at exit keep their blocks (not in draconian) ----
for m in normal strict; do
  run HEAPCHECK=$m threads_live
  expect_rc 1
  has "Leak check _main_ detected leaks of 77 bytes in 1 objects"
done
run HEAPCHECK=draconian threads_live
expect_rc 1
has_re "^Leak of 4006 bytes in 4 objects allocated from:$"
has_re "^Leak of 2000 bytes in 1 objects allocated from:$"
run HEAPCHECK=as-is HEAP_CHECK_IGNORE_THREAD_LIVE=0 threads_live
expect_rc 1
has_re "^Leak of 4006 bytes in 4 objects allocated from:$"
has "Not looking for thread stacks"
run HEAPCHECK=as-is HEAP_CHECK_IGNORE_GLOBAL_LIVE=0 reachable
expect_rc 1
has_re "^Leak of 300000 bytes in 1 objects allocated from:$"
run HEAPCHECK=normal HEAP_CHECK_IGNORE_GLOBAL_LIVE=0 reachable
expect_rc 0
has "HEAP_CHECK_IGNORE_GLOBAL_LIVE is only used with HEAPCHECK=as-is"

# ---- the whole-program check on demand, and cancelling the final one ----
PRELOAD=no
run HEAPCHECK=normal api_global
expect_rc 1
has "api_global: before any check bytes=-1 objects=-1"
has "api_global: no_global_leaks=0 bytes=123 objects=1"
count_re "^Leak check _main_ detected leaks of 123 bytes in 1 objects$" 2
count_re "^Exiting with error code" 1
run HEAPCHECK=normal api_global cancel
expect_rc 0
has "api_global: no_global_leaks=0 bytes=123 objects=1"
has "Canceling the automatic at-exit whole-program memory leak check"
count_re "^Leak check _main_" 1
run HEAPCHECK=normal api_global free
expect_rc 0
has "api_global: after free no_global_leaks=1 bytes=0 objects=0"
run HEAPCHECK=local api_global
expect_rc 0
has "api_global: no_global_leaks=1 bytes=-1 objects=-1"
run api_global
expect_rc 0
has "api_global: no_global_leaks=1 bytes=-1 objects=-1"
PRELOAD=yes

finish
