#!/bin/bash
# test_own_allocator.sh - a program that brings its own allocator keeps it
# whole when libheapcheck is preloaded (runtime/libc_redirect.c, "the
# program's own allocator").  The names it does not define (reallocarray,
# the sized operator delete) were heapcheck's: its blocks reached
# heapcheck's free (abort, Firefox's child processes) and its own operator
# delete was not called.  Each run preloaded must print and end as plain;
# with HEAPCHECK a program whose memory is not heapcheck's says so and is
# not checked, and one whose blocks are heapcheck's (a counting wrapper,
# a replaced operator new over malloc) is checked as before.
# Usage: HC_LIB=libheapcheck.so test_own_allocator.sh OWN_FIXTURE WRAP_FIXTURE WRAP_CTOR_FIXTURE [CXX_FIXTURE]
set -u
. "$(dirname "$0")/expect.sh"
expect_private_env hc_own
cfx=$1
wfx=$2
wcfx=$3
cxx=${4:-}

same_as_plain() { # FIXTURE MODE
  local want got wrc
  want=$("$1" "$2" 2>&1)
  wrc=$?
  cur="$(basename "$1") $2 preloaded"
  out=$(LD_PRELOAD=$HC_LIB "$1" "$2" 2>&1)
  rc=$?
  checks=$((checks + 2))
  [ "$rc" = "$wrc" ] || fail "exit status $rc, plain $wrc"
  [ "$out" = "$want" ] || fail "output differs from plain: [$out] against [$want]"
}

# checked FIXTURE MODE STATUS LINE...: preloaded with HEAPCHECK=normal, the
# status and every LINE in the output.
checked() {
  cur="$(basename "$1") $2, checked"
  out=$(HEAPCHECK=normal LD_PRELOAD=$HC_LIB "$1" "$2" 2>&1)
  rc=$?
  expect_rc "$3"
  shift 3
  for line in "$@"; do has "$line"; done
}

same_as_plain "$cfx" own
same_as_plain "$wfx" wrap
checked "$cfx" own 0 'own: reallocarray kept "abc"' \
  'heapcheck: the program has a malloc of its own: heapcheck is not its allocator: no leak check'
checked "$wfx" wrap 1 'mallocs counted' 'SUMMARY: heapcheck: 40 bytes leaked in 1 allocations'

# Under the launcher, as a descendant: not counted, no report file left
# behind (its stand-down line alone in one was kept as an unfinished report).
launcher=$(dirname "$HC_LIB")/tools/heapcheck
if [ -x "$launcher" ]; then
  t=$(mktemp -d "${TMPDIR:-/tmp}/hc_own_tree.XXXXXX")
  cur="own, a descendant under the launcher"
  out=$(TMPDIR=$t "$launcher" sh -c "'$cfx' own; true" 2>&1)
  rc=$?
  expect_rc 0
  has 'heapcheck: 1 process checked, no leaks found'
  lacks 'unfinished'
  left=$(find "$t" -mindepth 1 | head -3)
  [ -z "$left" ] || fail "left behind: $left"
  checks=$((checks + 1))
  rm -rf "$t"
fi

# A wrapper that finds ours in its own constructor, after heapcheck's
# start-up probe, serving the calls before from a static buffer: still a
# wrapper of ours (the probe's block lies in the program's image).
same_as_plain "$wcfx" wrap
checked "$wcfx" wrap 1 'SUMMARY: heapcheck: 40 bytes leaked in 1 allocations'
lacks 'a malloc of its own'

if [ -n "$cxx" ]; then
  for mode in own count; do same_as_plain "$cxx" $mode; done
  cur="own new, preloaded"
  out=$(LD_PRELOAD=$HC_LIB "$cxx" own 2>&1)
  has 'new 10 delete 10'
  checked "$cxx" count 1 'new 11 delete 10' 'SUMMARY: heapcheck: 40 bytes leaked in 1 allocations'
fi
finish test_own_allocator
