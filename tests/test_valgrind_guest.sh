#!/bin/sh
# test_valgrind_guest.sh - a checked process tree that runs a program under
# valgrind (json-c's `make check` does: each test binary under memcheck,
# passing only with "ERROR SUMMARY: 0 errors").
#
# Usage: test_valgrind_guest.sh LAUNCHER
# Environment: HC_CC = the C compiler command; HC_LIB = libheapcheck.so.
#
# memcheck (helgrind, drd, massif, dhat) serves the program's malloc itself,
# so our heap is empty there; the checker must stay out of that program:
# no check (whose stack scan reads words memcheck calls undefined: one
# "Conditional jump ... uninitialised" error per word, and valgrind's
# "client switching stacks?" for the check's own stack), no line of ours in
# its stderr.  valgrind's own verdict and status are what they are without
# heapcheck.  Tools that leave our malloc in place (none, callgrind) keep
# the checker on.  Skipped (77) without valgrind, or when valgrind cannot
# read the library's debug information (clang 14's DWARF 5).

. "$(dirname "$0")/expect.sh"

launcher=${1:?usage: test_valgrind_guest.sh LAUNCHER}
case $launcher in /*) ;; *) launcher=$PWD/$launcher ;; esac
lib=${HC_LIB:?HC_LIB must name libheapcheck.so}
CC_CMD=${HC_CC:-cc}
command -v valgrind >/dev/null 2>&1 || { echo "valgrind is not installed: skipped"; exit 77; }
expect_private_env hc_vgguest
tmp=$dump
# valgrind 3.19 cannot read clang 14's DWARF 5 ("debuginfo reader: Possibly
# corrupted debuginfo file") and stops before the program runs: nothing to
# test with such a library.
if ! LD_PRELOAD="$lib" valgrind -q true >"$tmp/probe.log" 2>&1; then
  echo "valgrind cannot run a program with $lib preloaded: skipped"
  sed 's/^/    | /' "$tmp/probe.log" | grep -m 3 -i 'debuginfo\|error'
  exit 77
fi

run() {
  cur="$*"
  out=$("$@" 2>&1)
  rc=$?
}

# A real leak of 4321 bytes, and at exit a live frame of words never written.
cat >"$tmp/vgfx.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void *volatile sink;
static void end_here(void) {
  volatile char never_written[2048];
  never_written[0] = 1;
  exit(0);
}
int main(void) {
  char *p = malloc(4321);
  memset(p, 1, 4321);
  sink = p;
  sink = NULL;
  puts("done");
  end_here();
}
EOF
# shellcheck disable=SC2086 # HC_CC may be a command with arguments
$CC_CMD -O1 -g -o "$tmp/vgfx" "$tmp/vgfx.c" || { echo "cannot compile the fixture"; exit 1; }

vg="valgrind --leak-check=full --errors-for-leak-kinds=none --error-exitcode=9"

check_memcheck_verdict() {
  expect_rc 0
  has "done"
  has "definitely lost: 4,321 bytes in 1 blocks"
  has "ERROR SUMMARY: 0 errors"
  lacks "uninitialised"
  lacks "switching stacks"
  lacks "Leak of"
}

# The library preloaded by hand, HEAPCHECK set: valgrind inherits both.
# shellcheck disable=SC2086
run env LD_PRELOAD="$lib" HEAPCHECK=normal $vg "$tmp/vgfx"
check_memcheck_verdict
lacks "heapcheck"
lacks "No leaks found"

# Under the launcher (valgrind a descendant of the tree's program, as in a
# test suite): the tree's status is valgrind's; sh, the tree's program,
# is checked and has no leak.
# shellcheck disable=SC2086
run "$launcher" --exit-code=3 sh -c "$vg $tmp/vgfx"
check_memcheck_verdict
lacks "leaked"
has "no leaks found"

# Verbose says why nothing is checked in valgrind's program.
# shellcheck disable=SC2086
run env LD_PRELOAD="$lib" HEAPCHECK=normal HEAPCHECK_VERBOSE=1 $vg "$tmp/vgfx"
has "a valgrind tool serves this program's malloc and checks it: leak checking is off"

# A tool that keeps our malloc: the checker is still on in its program.
run env LD_PRELOAD="$lib" HEAPCHECK=normal valgrind -q --tool=none "$tmp/vgfx"
has "done"
has_re "No leaks found|Leak of"

finish test_valgrind_guest
