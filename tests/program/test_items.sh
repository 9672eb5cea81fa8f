#!/bin/sh
# test_items.sh - the small items of issue 9 point 9, each on a real program.
# Usage: test_items.sh ITEMS_FIXTURE SYNC_STDIO_FIXTURE LAUNCHER
# Environment: HC_LIB = the built libheapcheck.so.
prefix=hc_items
. "$(dirname "$0")/common.sh"
fx=${1:?usage: test_items.sh ITEMS_FIXTURE SYNC_STDIO_FIXTURE LAUNCHER}
sync_fx=${2:?usage}
launcher=${3:?usage}

# malloc_stats() is not a cancellation point; malloc_info, __libc_mallinfo,
# __libc_mallopt are ours; bad check handles are errors, not crashes.
for mode in "" normal; do
  run env LD_PRELOAD="$lib" HEAPCHECK=$mode "$fx" stats-cancel
  expect_rc 0
  has "stats-cancel: ok"
  run env LD_PRELOAD="$lib" HEAPCHECK=$mode "$fx" malloc-info
  expect_rc 0
  has "malloc-info: ok"
done
run env LD_PRELOAD="$lib" HEAPCHECK=local "$fx" bad-handle
expect_rc 0
has "bad-handle: ok"
count_re "heapcheck: error: .* is not a check handle from hc_check_begin\(\)" 11 # 6 ends, 5 frees (free(NULL) is silent)

# Heap profiles are 0600; a failed dump says why and leaves no file.
mkdir "$dump/prof"
run env LD_PRELOAD="$lib" "$fx" profile "$dump/prof"
expect_rc 0
has "profile: ok"
run env LD_PRELOAD="$lib" "$fx" profile-fail
expect_rc 0
has "profile-fail: ok"
has_re "^Failed dumping heap profile to /nonexistent/dir/p\.[0-9]+\.0001\.heap: no such file or directory\. Numeric errno is 2$"

# realloc of a freed block is realloc's error, with and without the checker.
for mode in "" normal; do
  run env LD_PRELOAD="$lib" HEAPCHECK=$mode "$fx" realloc-freed
  expect_rc 134
  has_re "^heapcheck: realloc\(\): invalid pointer 0x[0-9a-f]+ \(already freed\)"
  lacks "free(): double free"
done

# Booleans are judged whole, case-insensitively; anything else warns with
# the variable's name.  HEAPCHECK_VERBOSE shows its value in the timing line.
for v in 1 true TRUE Yes y T ""; do
  run env LD_PRELOAD="$lib" HEAPCHECK=normal HEAPCHECK_VERBOSE="$v" "$fx" malloc-info
  has 'heapcheck: check "_main_" timing'
  lacks "is not a boolean"
done
for v in 0 false No N f; do
  run env LD_PRELOAD="$lib" HEAPCHECK=normal HEAPCHECK_VERBOSE="$v" "$fx" malloc-info
  lacks 'heapcheck: check "_main_" timing'
  lacks "is not a boolean"
done
for v in 10 yesplease nope 2 on; do
  run env LD_PRELOAD="$lib" HEAPCHECK=normal HEAPCHECK_VERBOSE="$v" "$fx" malloc-info
  has "heapcheck: warning: HEAPCHECK_VERBOSE=\"$v\" is not a boolean (use 1/0, true/false, yes/no, t/f, y/n); using the default false"
  lacks 'heapcheck: check "_main_" timing'
done
# One case rule: keyword values of every variable, as HEAPCHECK's.
run env LD_PRELOAD="$lib" HEAPCHECK=NORMAL HEAPCHECK_UNWINDER=FP HEAPCHECK_REPORT=TOP:3 "$fx" malloc-info
expect_rc 0
has "heap leak checker is active"
lacks "warning"
lacks "Unsupported heap_check flag"

# draconian: a clean C++ program with untied streams reports nothing.
run env LD_PRELOAD="$lib" HEAPCHECK=draconian "$sync_fx"
expect_rc 0
has "sync_stdio: x"
has "No leaks found"
lacks "Leak of"

# The launcher with a library path holding a space or a colon: checked.
for d in "my lib" "a:b"; do
  mkdir -p "$dump/$d"
  cp "$lib" "$dump/$d/libheapcheck.so"
  run env HEAPCHECK_LIB="$dump/$d/libheapcheck.so" "$launcher" "$fx" malloc-info
  expect_rc 0
  has "heap leak checker is active"
  has "malloc-info: ok"
  lacks "cannot be preloaded"
  lacks "unfinished report"
done
mkdir -p "$dump/tmp dir"
run env TMPDIR="$dump/tmp dir" HEAPCHECK_LIB="$dump/my lib/libheapcheck.so" "$launcher" "$fx" malloc-info
expect_rc 127
has "contains ':' or ' ', which LD_PRELOAD cannot carry"
lacks "malloc-info: ok"
checks=$((checks + 1))
[ -z "$(ls -A "$dump/tmp dir")" ] || fail "the launcher left files in TMPDIR: $(ls -A "$dump/tmp dir")"
finish test_items
