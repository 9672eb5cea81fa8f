#!/bin/sh
# test_usdt.sh - libheapcheck.so carries its USDT probes (allocator/usdt.h).
#
# usage: test_usdt.sh [path/to/libheapcheck.so]   (default: $HC_LIB)
#
# Checks with readelf that .note.stapsdt holds the probes of provider
# "heapcheck": sample_alloc and sample_free, each with three 8-byte
# arguments, and glibc's memory_* malloc probes with glibc's argument order
# (docs/profiling.md), that the .stapsdt.base section exists, and (objdump
# permitting) that each probe address is a nop.  When bpftrace is installed
# it must list the probes too.  Skips (77) only when readelf is missing.
set -u
lib=${1:-${HC_LIB:-}}
case $lib in /*|"") ;; *) lib=$(pwd)/$lib ;; esac # bpftrace wants an absolute path
if [ -z "$lib" ] || [ ! -f "$lib" ]; then
  echo "FAIL: no library (argument or HC_LIB)"
  exit 1
fi
if ! command -v readelf >/dev/null 2>&1; then
  echo "SKIP: readelf not found"
  exit 77
fi
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

notes=$(readelf -n "$lib") || fail "readelf -n $lib"
probes=$(printf '%s\n' "$notes" | awk '
  /Provider:/ { prov = $2 }
  /Name:/ { name = $2 }
  /Location:/ { loc = $2; sub(",", "", loc) }
  /Arguments:/ { $1 = ""; sub(/^ /, ""); print prov, name, loc, $0 }')
echo "$probes"
count=$(printf '%s\n' "$probes" | grep -c '^heapcheck ')
[ "$count" -ge 2 ] || fail "expected the two heapcheck probes, found $count"
for name in sample_alloc sample_free; do
  line=$(printf '%s\n' "$probes" | grep "^heapcheck $name ")
  if [ -z "$line" ]; then
    fail "probe heapcheck:$name missing"
    continue
  fi
  # three unsigned 8-byte arguments, in registers or memory
  args=$(printf '%s\n' "$line" | head -n1 | cut -d' ' -f4-)
  printf '%s\n' "$args" | grep -Eq '^8@[^ ]+ 8@[^ ]+ 8@[^ ]+$' || fail "$name: arguments '$args'"
  loc=$(printf '%s\n' "$line" | head -n1 | cut -d' ' -f3)
  if command -v objdump >/dev/null 2>&1; then
    start=$(printf '%d' "$loc")
    insn=$(objdump -d --start-address="$start" --stop-address=$((start + 1)) "$lib" | grep -E '^ *[0-9a-f]+:' | head -n1)
    printf '%s\n' "$insn" | grep -q 'nop' || fail "$name: no nop at $loc ($insn)"
  fi
done
# glibc's malloc probes: name, then the argument signs and sizes
# (u = unsigned 8 bytes, s = signed 8 bytes), each with one nop site
for spec in memory_mallopt:ss memory_mallopt_mxfast:ss memory_mallopt_trim_threshold:sss \
    memory_mallopt_top_pad:sss memory_mallopt_mmap_threshold:sss memory_mallopt_mmap_max:sss \
    memory_mallopt_perturb:ss memory_mallopt_arena_test:ss memory_mallopt_arena_max:ss \
    memory_arena_new:uu memory_heap_new:uu memory_heap_less:uu memory_malloc_retry:u \
    memory_calloc_retry:u memory_memalign_retry:uu memory_realloc_retry:uu memory_tcache_double_free:us; do
  name=${spec%%:*} kinds=${spec#*:}
  line=$(printf '%s\n' "$probes" | grep "^heapcheck $name " | head -n1)
  if [ -z "$line" ]; then
    fail "probe heapcheck:$name missing"
    continue
  fi
  got=$(printf '%s\n' "$line" | cut -d' ' -f4- | sed 's/-8@[^ ]*/s/g; s/8@[^ ]*/u/g; s/ //g')
  [ "$got" = "$kinds" ] || fail "$name: arguments '$(printf '%s\n' "$line" | cut -d' ' -f4-)', expected $kinds"
  loc=$(printf '%s\n' "$line" | cut -d' ' -f3)
  if command -v objdump >/dev/null 2>&1; then
    start=$(printf '%d' "$loc")
    insn=$(objdump -d --start-address="$start" --stop-address=$((start + 1)) "$lib" | grep -E '^ *[0-9a-f]+:' | head -n1)
    printf '%s\n' "$insn" | grep -q 'nop' || fail "$name: no nop at $loc ($insn)"
  fi
done
printf '%s\n' "$probes" | grep -v '^heapcheck ' | grep -q . && fail "probes of another provider: $probes"
readelf -S "$lib" | grep -q '\.stapsdt\.base' || fail "no .stapsdt.base section"

if command -v bpftrace >/dev/null 2>&1; then
  listed=$(bpftrace -l "usdt:$lib:heapcheck:*" 2>&1)
  echo "$listed"
  for name in sample_alloc sample_free; do
    printf '%s\n' "$listed" | grep -q "heapcheck:$name" || fail "bpftrace does not list heapcheck:$name"
  done
else
  echo "bpftrace not installed: listing not checked"
fi

if [ "$failures" = 0 ]; then
  echo "PASS"
  exit 0
fi
exit 1
