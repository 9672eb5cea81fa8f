#!/bin/bash
# stop_cost.sh - what stopping the world costs (docs/performance.md, "Stopping
# threads"): start-up of real programs with HEAPCHECK=normal (node -e 0,
# xz -T2, redis-server start + PING + shutdown), and the stop time of each
# check by method (ptrace, signal) in tests/scenarios/fx_no_disturb.c.
#
# usage: stop_cost.sh BUILD_DIR [OLD_LIB]
#   BUILD_DIR  a meson build dir of this tree (libheapcheck.so, fx_no_disturb)
#   OLD_LIB    another libheapcheck.so to compare with (e.g. before a change)
# Prints medians of 5 runs (wall seconds) per program and library.
set -u
build=${1:?usage: stop_cost.sh BUILD_DIR [OLD_LIB]}
old=${2:-}
lib=$(readlink -f "$build/libheapcheck.so")
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
cat /usr/lib/x86_64-linux-gnu/*.so* 2>/dev/null | head -c 4000000 > "$tmp/in"

pre() { if [ "$L" = none ]; then "$@"; else HEAPCHECK=normal LD_PRELOAD=$L "$@"; fi; }
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc; }
med() { sort -n | sed -n 3p; }
redis_once() {
  pre redis-server --port 6399 --save '' --appendonly no >/dev/null 2>&1 &
  local p=$!
  until redis-cli -p 6399 ping 2>/dev/null | grep -q PONG; do sleep 0.01; done
  redis-cli -p 6399 shutdown nosave >/dev/null 2>&1
  wait $p
}
for L in none ${old:+"$old"} "$lib"; do
  echo "== ${L}"
  command -v node >/dev/null && echo "node -e 0           $(for i in 1 2 3 4 5; do t pre node -e 0; done | med)"
  echo "xz -T2 -1 (4 MB)    $(for i in 1 2 3 4 5; do t pre xz -T2 -1 --block-size=262144 -c "$tmp/in"; done | med)"
  command -v redis-server >/dev/null && echo "redis start+ping    $(for i in 1 2 3 4 5; do t redis_once; done | med)"
done
for m in ptrace signal; do
  for s in few stress; do
    HEAPCHECK=normal PERFTOOLS_VERBOSE=1 HEAP_CHECK_STOP_METHOD=$m "$build/tests/fx_no_disturb" $s 2>&1 |
      grep -oE 'timing: stop [0-9.]+ ms \([0-9]+ threads\)' | awk '{print $3, substr($5,2)}' | sort -n |
      awk -v m=$m -v s=$s '{v[NR]=$1; n=$2} END {printf "%-6s %-6s %2d checks, %2s threads: stop median %.3f ms, max %.3f ms\n", m, s, NR, n, v[int((NR+1)/2)], v[NR]}'
  done
done
