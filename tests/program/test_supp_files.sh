#!/bin/sh
# test_supp_files.sh - what a suppressions file may be (issue 9 points 6, 9).
# Usage: test_supp_files.sh LEAKY_FIXTURE  (fx_exit_status: leaks 100 bytes
# from leak_site).  Environment: HC_LIB = the built libheapcheck.so.
#
# It must be a regular text file of at most 4 MiB with at most 1024 rules.
# A FIFO (no blocking open: the program starts), a directory, /dev/zero, a
# file past 4 MiB or holding a NUL byte: one clear error each, no
# suppressions, the leak is reported.  Past 1024 rules: one error counting
# the ignored ones, the first 1024 apply.  Bad lines: 20 errors, then one
# line counting the rest.
prefix=hc_supp_files
. "$(dirname "$0")/common.sh"
fx=${1:?usage: test_supp_files.sh LEAKY_FIXTURE}

with_supp() {  # with_supp FILE: the fixture under HEAPCHECK=normal with FILE
  cur="HEAPCHECK_SUPPRESSIONS=$1"
  out=$(timeout 60 env LD_PRELOAD="$lib" HEAPCHECK=normal HEAPCHECK_SUPPRESSIONS="$1" "$fx" 0 2>&1)
  rc=$?
}
rejected() {  # rejected FILE REASON: one error naming FILE and REASON, leak reported
  with_supp "$1"
  expect_rc 1
  has "heapcheck: error: suppressions file $1: $2; no suppressions loaded"
  count_re "heapcheck: error" 1
  has "Leak of 100 bytes in 1 objects"
}

printf 'leak:leak_site\n' >"$dump/good.supp"
with_supp "$dump/good.supp"
expect_rc 0
has "No leaks found"

mkfifo "$dump/fifo"
rejected "$dump/fifo" "it is a FIFO, not a regular file"
mkdir "$dump/dir"
rejected "$dump/dir" "it is a directory"
rejected /dev/zero "it is a device, not a regular file"

{ printf 'leak:leak_site\n'; i=0; while [ $i -lt 1100 ]; do printf '# %04d padding padding padding padding padding padding padding padding padding\n' $i; i=$((i + 1)); done; } >"$dump/pad"
: >"$dump/big.supp"
i=0
while [ $i -lt 50 ]; do cat "$dump/pad" >>"$dump/big.supp"; i=$((i + 1)); done
size=$(wc -c <"$dump/big.supp")
rejected "$dump/big.supp" "it has $size bytes, more than the limit of 4194304 (4 MiB)"

printf 'leak:nomatch\nleak:leak_\000site\n' >"$dump/nul.supp"
rejected "$dump/nul.supp" "line 2 holds a NUL byte: it is not a text file"

with_supp "$dump/missing.supp"
expect_rc 1
has "heapcheck: error: cannot open suppressions file $dump/missing.supp: no such file or directory; no suppressions loaded"

{ printf 'leak:leak_site\n'; i=1; while [ $i -lt 1100 ]; do printf 'leak:no_such_function_%d\n' $i; i=$((i + 1)); done; } >"$dump/many.supp"
with_supp "$dump/many.supp"
expect_rc 0
has "heapcheck: error: $dump/many.supp: more than 1024 suppressions: the 76 from line 1025 on are ignored"
count_re "heapcheck: error" 1
has "No leaks found"

{ printf 'leak:leak_site\n'; i=0; while [ $i -lt 30 ]; do printf 'bogus line %d\n' $i; i=$((i + 1)); done; } >"$dump/bad.supp"
with_supp "$dump/bad.supp"
expect_rc 0
count_re "heapcheck: error: .*bad.supp:[0-9]+: expected leak:<pattern>" 20
has "heapcheck: error: $dump/bad.supp: 10 more bad lines ignored (30 in all)"
finish test_supp_files
