#!/bin/sh
# test_usdt_trace.sh - glibc's malloc probes fire in heapcheck (provider
# heapcheck, allocator/usdt.h), seen by a real tracer: bpftrace attaches to
# tests/probe_events (by pid: bpftrace 0.17 cannot resolve USDT probes of a
# shared library in a process it starts itself), which then causes each
# event once, and the probes' arguments are checked.
#
# usage: test_usdt_trace.sh PROBE_EVENTS LIBHEAPCHECK
# Prints SKIP and exits 77 when bpftrace is missing or the kernel refuses
# BPF here (no root, no BPF in a container); readelf-level checks of the
# same probes are in test_usdt.sh and always run.
set -u
prog=$1 lib=$2
case $lib in /*) ;; *) lib=$(pwd)/$lib ;; esac
if ! command -v bpftrace >/dev/null 2>&1; then
  echo "SKIP: bpftrace not installed"
  exit 77
fi
if ! timeout 60 bpftrace -e 'BEGIN { printf("bpf-ok\n"); exit(); }' 2>/dev/null | grep -q bpf-ok; then
  echo "SKIP: bpftrace cannot load programs here"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hc_usdt.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset HEAPCHECK HEAPPROFILE HEAPCHECK_REPORT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
u="usdt:$lib:heapcheck"
cat >"$tmp/probes.bt" <<BT
$u:memory_mallopt { printf("memory_mallopt %d %d\n", arg0, arg1); }
$u:memory_mallopt_arena_max { printf("memory_mallopt_arena_max %d %d\n", arg0, arg1); }
$u:memory_mallopt_mmap_threshold { printf("memory_mallopt_mmap_threshold %d %d %d\n", arg0, arg1, arg2); }
$u:memory_arena_new { printf("memory_arena_new %d\n", arg0 != 0); }
$u:memory_heap_new { printf("memory_heap_new %d\n", arg1); }
$u:memory_heap_less { printf("memory_heap_less %d\n", arg1); }
$u:memory_malloc_retry { printf("memory_malloc_retry %lu\n", arg0); }
$u:memory_calloc_retry { printf("memory_calloc_retry %lu\n", arg0); }
$u:memory_memalign_retry { printf("memory_memalign_retry %lu %lu\n", arg0, arg1); }
$u:memory_realloc_retry { printf("memory_realloc_retry %lu %d\n", arg0, arg1 != 0); }
$u:memory_tcache_double_free { printf("memory_tcache_double_free %d %d\n", arg0 != 0, arg1); }
BT
LD_PRELOAD=$lib "$prog" "$tmp/go" >"$tmp/prog.out" 2>&1 &
pid=$!
timeout 120 bpftrace -p "$pid" "$tmp/probes.bt" >"$tmp/trace" 2>"$tmp/trace.err" &
bt=$!
i=0
while ! grep -q "Attaching" "$tmp/trace" "$tmp/trace.err" 2>/dev/null && [ $i -lt 600 ]; do
  sleep 0.1
  i=$((i + 1))
done
sleep 1
: >"$tmp/go"
wait "$pid"
rc=$?
sleep 1
kill -INT "$bt" 2>/dev/null
wait "$bt"
cat "$tmp/prog.out" "$tmp/trace"
[ "$rc" = 134 ] || fail "probe_events exited with $rc, not SIGABRT (134) at the double free"
has() { grep -Eq -- "$1" "$tmp/trace" || fail "no trace line matching '$1'"; }
has '^memory_mallopt -8 3$'
has '^memory_mallopt_arena_max 3 0$'
has '^memory_mallopt -3 1048576$'
has '^memory_mallopt_mmap_threshold 1048576 131072 0$'
has '^memory_arena_new 1$'
has '^memory_heap_new [0-9]+$'
has '^memory_heap_less [0-9]+$'
has '^memory_malloc_retry 4611686018427387904$'
has '^memory_calloc_retry 18446744073709551615$'
has '^memory_memalign_retry 4611686018427387904 4096$'
has '^memory_realloc_retry 4611686018427387904 1$'
has '^memory_tcache_double_free 1 [0-9]+$'
if [ "$failures" = 0 ]; then
  echo "PASS"
  exit 0
fi
cat "$tmp/trace.err"
exit 1
