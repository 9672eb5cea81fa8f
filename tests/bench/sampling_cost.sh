#!/usr/bin/env bash
# tests/bench/sampling_cost.sh - what sampling at the default rate costs, in
# instructions: every tests/bench workload run under callgrind with
# heapcheck-nosample (HEAPCHECK_SAMPLE_PARAMETER=0) and heapcheck (the default,
# one sample per 512 KiB), and the ratio of their instruction counts.
#
# Usage: tests/bench/sampling_cost.sh [--only w1,w2] [--seeds N] [--build DIR]
#                                     [--markdown FILE] [--no-install] [--no-build]
#
# Why instructions: wall and CPU time on these shared machines move by 5-20 %
# from run to run, more than the 2 % being measured (run.sh gives those, as
# medians); an instruction count is exact and repeatable.  It does not see
# cache misses or lock waits, so read it next to run.sh's times.
# Method: each workload runs with run.sh's --quick arguments (a tenth of the
# default work; large keeps its default 4000 blocks, few instructions), its
# threads serialised by callgrind, so the counts do not depend on scheduling.  Sampling is random: the sampled run is repeated with
# --seeds different HEAPCHECK_SAMPLE_SEED values (default 3) and the mean is
# used; the spread is printed.  Instructions of the whole process (start-up,
# exit and the workload's own code included) are compared, so the ratio is
# the cost relative to the program, as a user would see it.
set -u

ONLY=""
SEEDS=3
MARKDOWN=""
while [ $# -gt 0 ]; do
  case $1 in
    --only) ONLY=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --build) BUILD=$(realpath -m "$2"); shift 2 ;;
    --markdown) MARKDOWN=$2; shift 2 ;;
    --no-install) export BENCH_NO_INSTALL=1; shift ;;
    --no-build) export BENCH_NO_BUILD=1; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "sampling_cost.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

WORKLOADS=$(bench_workloads "$ONLY" sampling_cost.sh) || exit 2
unset HEAPCHECK HEAPPROFILE LD_PRELOAD HEAPCHECK_SAMPLE_PARAMETER TCMALLOC_SAMPLE_PARAMETER HEAPCHECK_SAMPLE_SEED

# The arguments of run.sh --quick, but large keeps its default: -n 400 is too
# short to amortise the first samples' costs (DWARF rules, depot, tables).
quick_args() {
  if [ "$1" = large ]; then echo "-n 4000"; else echo "$(bench_args "$1") $(bench_quick_args "$1")"; fi
}

ensure_peers valgrind
command -v valgrind >/dev/null || { log "valgrind is not installed"; exit 1; }
build_project
LIB=$(allocator_lib heapcheck) || { log "no libheapcheck.so in $BUILD"; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sampcost.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# ir WORKLOAD PARAM SEED -> total instructions of the run (empty on failure)
ir() {
  local w=$1 p=$2 seed=$3 bin out
  bin=$(bench_bin "$(bench_prog "$w")") || return 1
  out="$WORK/$w.$p.$seed"
  # shellcheck disable=SC2046
  env LD_PRELOAD="$LIB" HEAPCHECK_SAMPLE_PARAMETER="$p" ${seed:+HEAPCHECK_SAMPLE_SEED=$seed} \
    valgrind --tool=callgrind --callgrind-out-file="$out.cg" "$bin" $(quick_args "$w") >"$out.log" 2>&1 ||
    { log "$w param=$p seed=$seed failed (see $out.log)"; return 1; }
  grep -m1 'Collected :' "$out.log" | sed 's/.*Collected : *//; s/[^0-9]//g'
}

TABLE="| workload | Ir, sampling off | Ir, sampling on (mean of $SEEDS seeds) | ratio | seeds' range |
| --- | ---: | ---: | ---: | ---: |"
logsum=0
count=0
for w in $WORKLOADS; do
  log "$w"
  off=$(ir "$w" 0 "") || continue
  ons=()
  for s in $(seq 1 "$SEEDS"); do
    v=$(ir "$w" 524288 "$s") && ons+=("$v")
  done
  [ ${#ons[@]} -gt 0 ] || continue
  row=$(printf '%s\n' "${ons[@]}" | awk -v off="$off" -v w="$w" '
    { s += $1; if (NR == 1 || $1 < lo) lo = $1; if ($1 > hi) hi = $1 }
    END { m = s / NR; printf "| %s | %.1f M | %.1f M | %.4fx | %.4f..%.4f | %.10f\n", w, off / 1e6, m / 1e6, m / off, lo / off, hi / off, log(m / off) }')
  TABLE+=$'\n'"${row% | *} |"
  logsum=$(awk -v a="$logsum" -v b="${row##* | }" 'BEGIN { printf "%.10f", a + b }')
  count=$((count + 1))
done
[ "$count" -gt 0 ] || { log "no workload ran"; exit 1; }
TABLE+=$'\n'"$(awk -v s="$logsum" -v n="$count" 'BEGIN { printf "| geometric mean | | | %.4fx | |", exp(s / n) }')"

{
  echo "Instructions (callgrind Ir of the whole process), sampling off vs. on at the default rate; run.sh --quick arguments"
  echo
  echo "$TABLE"
} | tee ${MARKDOWN:+"$MARKDOWN"}
