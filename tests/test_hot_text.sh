#!/bin/sh
# test_hot_text.sh - every function of libheapcheck.so that a trivial program
# runs lies in the hot group of its text (runtime/hot_text.ld).
#
# Usage: test_hot_text.sh LIB PROGRAM
#   LIB      the shared library (linked with runtime/hot_text.ld)
#   PROGRAM  a trivial program (tests/bench/bench_trivial: malloc, print, free)
#
# Why: the kernel maps a file's pages 64 KiB around each one a process
# touches (fault-around), so one start-up function outside .text.hc_hot
# costs a window of text in every process: 64 KiB of start-up RSS, found
# twice by measurement only (docs/performance.md, "Start-up"; a function
# renamed or newly split out drops out of the list silently).  Here the
# functions that PROGRAM runs are read from callgrind (their names, in our
# object), and each one's address from the library's symbol table must
# lie in .text.hc_hot.  valgrind reads a copy with its debug sections
# stripped (valgrind 3.19 refuses clang 14's DWARF 5; the symbol table is
# all it needs), the layout of the code unchanged.
# Skipped (77) without valgrind or binutils.
set -u
lib=${1:?usage: test_hot_text.sh LIB PROGRAM}
prog=${2:?usage: test_hot_text.sh LIB PROGRAM}
for tool in valgrind objcopy readelf nm; do
  command -v $tool >/dev/null 2>&1 || { echo "$tool is not installed: skipped"; exit 77; }
done
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
objcopy --strip-debug "$lib" "$tmp/libheapcheck.so" || { echo "FAIL: objcopy --strip-debug $lib"; exit 1; }

# The hot group's bounds [lo, hi), hexadecimal from readelf.
range=$(readelf -SW "$tmp/libheapcheck.so" | sed 's/^ *\[ *[0-9]*\] *//' |
        awk '$1 == ".text.hc_hot" { print $3, $5 }')
[ -n "$range" ] || { echo "FAIL: $lib has no .text.hc_hot section (linked without runtime/hot_text.ld?)"; exit 1; }

# No sampled allocation (a sample of one of its few allocations, drawn at
# random, would run the unwinder and the profile's code: not start-up's).
HEAPCHECK_SAMPLE_PARAMETER=1099511627776 LD_PRELOAD="$tmp/libheapcheck.so" valgrind --tool=callgrind --compress-strings=no --compress-pos=no \
  --callgrind-out-file="$tmp/cg.out" "$prog" >"$tmp/prog.out" 2>"$tmp/vg.err"
st=$?
[ $st -eq 0 ] || { echo "FAIL: valgrind --tool=callgrind $prog exited $st"; tail -20 "$tmp/vg.err"; exit 1; }

# Functions run in our object: "fn=NAME" lines while "ob=" names it, or
# names no object ("???": valgrind 3.19 names none for the release
# library's code; why was not looked into);
# names of other objects' functions (libc's mmap, ours too) are left out.
awk '/^ob=/ { ours = index($0, "libheapcheck.so") > 0 || $0 == "ob=???" } /^fn=/ && ours { print substr($0, 4) }' "$tmp/cg.out" |
  sort -u >"$tmp/ran"
n=$(wc -l <"$tmp/ran")
[ "$n" -gt 5 ] || { echo "FAIL: callgrind saw only $n functions of ours run (expected the start-up's dozens)"; exit 1; }

nm "$tmp/libheapcheck.so" | awk '$2 ~ /^[tTwW]$/ { print $3, $1 }' | sort -u >"$tmp/syms"
out=$(echo "$range" | {
  read lo size
  awk -v lo=$((0x$lo)) -v size=$((0x$size)) '
    function hex(s,   i, c, v) { v = 0; s = tolower(s)
      for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c }
      return v }
    NR == FNR { addr[$1] = hex($2); next }
    ($0 in addr) { a = addr[$0]; if (a < lo || a >= lo + size) printf "  %s at 0x%x\n", $0, a }
  ' "$tmp/syms" "$tmp/ran"
})
if [ -n "$out" ]; then
  echo "FAIL: functions a trivial program runs lie outside .text.hc_hot ($range): add them to runtime/hot_text.ld"
  echo "$out"
  exit 1
fi
echo "ok: the $n functions of ours that $(basename "$prog") runs lie in .text.hc_hot"
