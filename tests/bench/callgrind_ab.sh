#!/usr/bin/env bash
# tests/bench/callgrind_ab.sh - instructions (callgrind Ir) of the workload set
# with two heapcheck libraries, for changes too small for wall time on a
# shared machine (a before/after of one commit).
#
# Usage: tests/bench/callgrind_ab.sh LIB_A LIB_B [--only w1,w2] [--build DIR]
#   LIB_A, LIB_B: libheapcheck.so files (e.g. a release build of main and of
#   the branch).  Each workload runs once per library under
#   `valgrind --tool=callgrind` with its --quick arguments (lib.sh) and the
#   library preloaded; threads are serialised by valgrind, so counts are
#   stable to ~0.1 % but say nothing about contention.
# Prints a markdown table: Ir with A, Ir with B, B/A, and the geometric mean.
set -u
[ $# -ge 2 ] || { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
A=$(realpath "$1") B=$(realpath "$2"); shift 2
ONLY=""
while [ $# -gt 0 ]; do
  case $1 in
    --only) ONLY=$2; shift 2 ;;
    --build) BUILD=$(realpath -m "$2"); shift 2 ;;
    *) echo "callgrind_ab.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
unset HEAPCHECK HEAPPROFILE LD_PRELOAD HEAPCHECK_SAMPLE_PARAMETER
command -v valgrind >/dev/null || { log "valgrind is not installed"; exit 1; }
WORKLOADS=$(bench_workloads "$ONLY" callgrind_ab.sh) || exit 2
ir() {
  LD_PRELOAD=$1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$2" $3 2>&1 >/dev/null |
    sed -n 's/.*Collected : *//p' | tr -d ' ,'
}
echo "| workload | Ir, A | Ir, B | B / A |"
echo "| --- | ---: | ---: | ---: |"
logsum=0 n=0
for w in $WORKLOADS; do
  bin=$(bench_bin "$(bench_prog "$w")") || { log "cannot build $(bench_prog "$w")"; exit 1; }
  args="$(bench_args "$w") $(bench_quick_args "$w")"
  a=$(ir "$A" "$bin" "$args") b=$(ir "$B" "$bin" "$args")
  if [ -z "$a" ] || [ -z "$b" ]; then echo "| $w | ${a:-fail} | ${b:-fail} | |"; continue; fi
  r=$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.4f", b/a}')
  logsum=$(awk -v s="$logsum" -v r="$r" 'BEGIN{printf "%.6f", s + log(r)}')
  n=$((n + 1))
  echo "| $w | $a | $b | $r |"
done
[ $n -gt 0 ] && echo "| geometric mean | | | $(awk -v s="$logsum" -v n="$n" 'BEGIN{printf "%.4f", exp(s/n)}') |"
