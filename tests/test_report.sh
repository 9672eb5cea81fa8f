#!/bin/sh
# test_report.sh - the leak report (gperftools wording, direct/indirect
# records, SUMMARY), the leak profile file, the HEAP_CHECK_* knobs and the
# API's messages, on the leak fixtures.
#
# Usage: test_report.sh   (HC_LIB, HC_FIXTURES set by meson; see
# tests/scenarios/fixtures.sh).  Exits 0 when every expectation holds.

. "$(dirname "$0")/scenarios/fixtures.sh"

# ---- direct and indirect records ----
# A dropped 10-node list: the head is direct, the 9 others indirect.  A
# 2-object cycle: one member stands for it as direct, the other indirect.
run HEAPCHECK=normal leak_list
expect_rc 1
has "Leak check _main_ detected leaks of 704 bytes in 12 objects"
has_re "^The 4 largest leaks:$"
has_re "^Leak of 64 bytes in 1 objects allocated from:$"
has_re "^Indirect leak of 576 bytes in 9 objects allocated from:$"
has_re "^Leak of 32 bytes in 1 objects allocated from:$"
has_re "^Indirect leak of 32 bytes in 1 objects allocated from:$"
has_re "^	@ [0-9a-f]+ new_node "
has_re "^	@ [0-9a-f]+ cycle_block "
# The stacks go on below main into libc's start, without the checker's own
# start_main between them (it ran main; it was in every stack before).
has_re "^	@ [0-9a-f]+ main "
has_re "^	@ [0-9a-f]+ __libc_start_call_main "
lacks_re "^	@ [0-9a-f]+ start_main "
has "SUMMARY: heapcheck: 704 bytes leaked in 12 allocations"
# Records are ranked by the bytes they account for (a direct record: its
# own plus the indirect leaks it keeps, valgrind's "N (x direct, y indirect)").
has "  (640 bytes in all: 64 direct, 576 indirect in 9 objects it keeps)"
has "  (64 bytes in all: 32 direct, 32 indirect in 1 objects it keeps)"
checks=$((checks + 1))
order=$(printf '%s\n' "$out" | sed -n 's/^\(Indirect leak\|Leak\) of \([0-9]*\) bytes.*/\1 \2/p' | tr '\n' ,)
[ "$order" = "Leak 64,Indirect leak 576,Leak 32,Indirect leak 32," ] || fail "records not ranked by total bytes: $order"

# ---- HEAP_CHECK_MAX_LEAKS ----
run HEAPCHECK=normal HEAP_CHECK_MAX_LEAKS=1 leak_direct
expect_rc 1
has "Leak check _main_ detected leaks of 500 bytes in 3 objects"
has_re "^The 1 largest leaks:$"
has_re "^Leak of 300 bytes in 1 objects allocated from:$"
lacks "Leak of 200 bytes"
has_re "^Skipping leaks numbered 1\.\.1$"
run HEAPCHECK=normal HEAP_CHECK_MAX_LEAKS=0 leak_list
has_re "^The 4 largest leaks:$"
run HEAPCHECK=normal HEAP_CHECK_MAX_LEAKS=many leak_direct
has "HEAP_CHECK_MAX_LEAKS"
has "using the default 20"
has_re "^The 2 largest leaks:$"

# ---- HEAP_CHECK_IDENTIFY_LEAKS: one line per object, then abort ----
run HEAPCHECK=normal HEAP_CHECK_IDENTIFY_LEAKS=1 leak_direct
expect_rc 134
count_re "^leaked 100 byte object 0x[0-9a-f]+$" 2
count_re "^leaked 300 byte object 0x[0-9a-f]+$" 1
has "Whole-program memory leaks found."
lacks "Exiting with error code"

# ---- the pprof hint and the leak profile ----
run HEAPCHECK=normal leak_direct
expect_rc 1
has "If the preceding stack traces are not enough to find the leaks, try running THIS shell command:"
has_re "^pprof .*fx_leak_direct \"$dump/fx_leak_direct\.[0-9]+\._main_-end\.heap\" --inuse_objects --lines --heapcheck  --edgefraction=1e-10 --nodefraction=1e-10 --gv$"
has "If you are still puzzled about why the leaks are there, try rerunning this program with HEAP_CHECK_TEST_POINTER_ALIGNMENT=1 and/or with HEAP_CHECK_MAX_POINTER_OFFSET=-1"
prof=$(printf '%s\n' "$out" | sed -n 's/^pprof [^"]*"\([^"]*\)".*/\1/p')
checks=$((checks + 1))
if [ -f "$prof" ]; then
  content=$(cat "$prof")
  save=$out
  out=$content
  has_re "^heap profile:      3:      500 \[     3:      500\] @ heapprofile$"
  count_re "^     1:      100 \[     1:      100\] @( 0x[0-9a-f]{8,})+$" 2
  count_re "^     1:      300 \[     1:      300\] @( 0x[0-9a-f]{8,})+$" 1
  has_re "^MAPPED_LIBRARIES:$"
  has_re "^[0-9a-f]+-[0-9a-f]+ r-xp .*fx_leak_direct$"
  out=$save
  checks=$((checks + 1))
  perms=$(stat -c %a "$prof")
  [ "$perms" = 600 ] || fail "profile mode is $perms, not 600"
  if command -v google-pprof >/dev/null 2>&1; then
    out=$(google-pprof --text --show_bytes "$HC_FIXTURES/fx_leak_direct" "$prof" 2>&1)
    cur="google-pprof on $prof"
    has_re "^Total: 500 B$"
    has_re "^ +300 .* site_b$"
    has_re "^ +200 .* site_a$"
  fi
else
  fail "no leak profile at '$prof'"
fi
run HEAPCHECK=normal HEAP_CHECK_DUMP_DIRECTORY=/nonexistent/dir leak_direct
expect_rc 1
has_re "^Failed dumping filtered heap profile to /nonexistent/dir/fx_leak_direct\.[0-9]+\._main_-end\.heap: no such file or directory \(errno 2\)$"
has_re "^Could not write pprof profile to /nonexistent/dir/fx_leak_direct\.[0-9]+\._main_-end\.heap$"
has "Leak check _main_ detected leaks of 500 bytes in 3 objects"
lacks "try running THIS shell command" # the hint would name a file that was not written
# No profile, no hint, when nothing leaks.
run HEAPCHECK=normal reachable
lacks "pprof"

# ---- PERFTOOLS_VERBOSE levels (gperftools': report ERROR, hint WARNING) ----
run HEAPCHECK=normal PERFTOOLS_VERBOSE=-1 leak_direct
expect_rc 1
lacks "WARNING: Perftools heap leak checker is active"
has "If the preceding stack traces"
run HEAPCHECK=normal PERFTOOLS_VERBOSE=-3 leak_direct
expect_rc 1
has "Leak check _main_ detected leaks of 500 bytes in 3 objects"
lacks "If the preceding stack traces"
has "SUMMARY: heapcheck: 500 bytes leaked in 3 allocations"
run HEAPCHECK=normal PERFTOOLS_VERBOSE=-4 leak_direct
expect_rc 1
lacks "Leak check"
lacks "SUMMARY"
run HEAPCHECK=normal PERFTOOLS_VERBOSE=-1 reachable
lacks "No leaks found"
for v in PERFTOOLS_VERBOSE=1 HEAPCHECK_VERBOSE=1; do
  run HEAPCHECK=normal $v reachable
  expect_rc 0
  has_re "^heapcheck: check \"_main_\" timing: stop [0-9]+\.[0-9]{3} ms \([0-9]+ threads\), flood [0-9]+\.[0-9]{3} ms \([0-9]+ reachable objects, [0-9]+ bytes, [0-9]+ words scanned, 1 pass\), report [0-9]+\.[0-9]{3} ms, flood cpu [0-9]+\.[0-9]{3} ms$"
done

# ---- HEAP_CHECK_MAX_POINTER_OFFSET ----
# 4000-byte block held 2000 bytes inside; 100-byte block held 50 inside.
# By default any interior pointer keeps an object alive; both blocks are
# reached only that way: "possibly lost" (valgrind's term), not leaks.
run HEAPCHECK=normal knobs offset
expect_rc 0
has_re "^heapcheck: possibly lost: 4100 bytes in 2 objects \\(reached only through pointers into their middle"
run HEAPCHECK=normal HEAP_CHECK_MAX_POINTER_OFFSET=1024 knobs offset
expect_rc 1
has "Leak check _main_ detected leaks of 4000 bytes in 1 objects"
for v in -1 2000 100000; do
  run HEAPCHECK=normal HEAP_CHECK_MAX_POINTER_OFFSET=$v knobs offset
  expect_rc 0
done
run HEAPCHECK=normal HEAP_CHECK_MAX_POINTER_OFFSET=1999 knobs offset
expect_rc 1
run HEAPCHECK=normal HEAP_CHECK_MAX_POINTER_OFFSET=10 knobs offset
expect_rc 1
has "Leak check _main_ detected leaks of 4100 bytes in 2 objects"

# ---- HEAP_CHECK_POINTER_SOURCE_ALIGNMENT, HEAP_CHECK_TEST_POINTER_ALIGNMENT ----
run HEAPCHECK=normal knobs unaligned
expect_rc 1
has "Leak check _main_ detected leaks of 300 bytes in 1 objects"
run HEAPCHECK=normal HEAP_CHECK_POINTER_SOURCE_ALIGNMENT=1 knobs unaligned
expect_rc 0
run HEAPCHECK=normal HEAP_CHECK_POINTER_SOURCE_ALIGNMENT=3 knobs unaligned
expect_rc 1
has "HEAP_CHECK_POINTER_SOURCE_ALIGNMENT=3 is not a power of two; using the default 8"
run HEAPCHECK=normal HEAP_CHECK_TEST_POINTER_ALIGNMENT=1 knobs unaligned
expect_rc 1
has "Found no leaks without pointer alignment: something might be placing pointers at unaligned addresses! This needs to be fixed."
run HEAPCHECK=normal HEAP_CHECK_TEST_POINTER_ALIGNMENT=1 leak_direct
expect_rc 1
has "Found leaks without pointer alignment as well: unaligned pointers must not be the cause of leaks."
has "--heap_check_test_pointer_alignment did not help to diagnose the leaks."

# ---- API messages (gperftools' wording), root regions, Disabler, cleanups ----
PRELOAD=no
run HEAPCHECK=normal knobs messages
expect_rc 0
has "knobs: ignore(stack)=-1"
has_re "^No live heap object at 0x[0-9a-f]+ to ignore$"
has "knobs: ignore(p)=0"
has_re "^Object at 0x[0-9a-f]+ is already being ignored$"
has "knobs: ignore(p) again=0"
has "knobs: unignore(p)=0"
has "knobs: unignore(p) again=-1"
has_re "^Object at 0x[0-9a-f]+ has not been ignored$"
has "knobs: unignore(global)=-1"
has_re "^No live heap object at 0x[0-9a-f]+ to un-ignore$"
run HEAPCHECK=normal knobs region
expect_rc 0
has "knobs: register=0"
has "knobs: unregister(bad)=-1"
run HEAPCHECK=normal knobs disable
expect_rc 1
has "Leak check _main_ detected leaks of 40 bytes in 1 objects"
has "SUMMARY: heapcheck: 40 bytes leaked in 1 allocations"
# Cleanups run before the final check (gperftools 2.10 ran them after).
run HEAPCHECK=normal knobs cleanup
expect_rc 0
has "knobs: register_cleanup=0 active=1"
has "knobs: cleanup ran"
has "No leaks found"
run HEAPCHECK=strict knobs cleanup
expect_rc 0
has "knobs: cleanup ran"
run HEAPCHECK=local knobs cleanup
expect_rc 0
lacks "knobs: cleanup ran"
run knobs cleanup
expect_rc 0
has "knobs: register_cleanup=0 active=0"
lacks "knobs: cleanup ran"
PRELOAD=yes

finish
