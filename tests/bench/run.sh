#!/usr/bin/env bash
# tests/bench/run.sh - run the allocator workloads with glibc, jemalloc, tcmalloc,
# mimalloc and heapcheck, and print markdown tables (median wall time, max peak
# RSS, ratios to glibc, geometric means).  Without glibc in --allocators,
# ratios are to the first allocator listed (e.g. --allocators
# heapcheck-nosample,heapcheck gives the cost of sampling).
#
# Usage: tests/bench/run.sh [--reps N] [--only w1,w2] [--allocators a,b,...]
#                           [--markdown FILE] [--build DIR] [--timeout S]
#                           [--quick] [--no-install] [--no-build]
#   workloads : pairs larson prodcons random_live realloc large malloc_large falseshare xmalloc
#               xfree xfree4 churn server
#   allocators: glibc jemalloc tcmalloc mimalloc heapcheck   (default: all), or
#               the variants heapcheck-nosample (HEAPCHECK_SAMPLE_PARAMETER=0),
#               heapcheck-normal (HEAPCHECK=normal), heapcheck-sample8x
#               (HEAPCHECK_SAMPLE_PARAMETER=65536, 8x the default rate) and
#               heapcheck-alt (the library in $BENCH_ALT_LIB: another build)
#   --quick   : about a tenth of the default work per workload (smoke test)
#
# Method: every run is one process started by runstat (wall time from the
# monotonic clock around fork..wait4, peak RSS from wait4's rusage).  The
# allocator is preloaded with LD_PRELOAD in the child only.  Runs are
# interleaved: repetition -> workload -> allocator, so slow phases of the
# machine hit every allocator alike.  Cells show the median wall time, the
# median CPU time (user + system) and the largest peak RSS of the successful
# runs; "n/a" = allocator not available,
# "fail" = every run exited non-zero (see the log).  Raw results go to
# $BUILD/bench-raw.tsv, program output to $BUILD/bench-run.log.
set -u

REPS=5
ONLY=""
ALLOCS=""
MARKDOWN=""
TIMEOUT=300
QUICK=0
while [ $# -gt 0 ]; do
  case $1 in
    --reps) REPS=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --allocators) ALLOCS=$2; shift 2 ;;
    --markdown) MARKDOWN=$2; shift 2 ;;
    --build) BUILD=$(realpath -m "$2"); shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --no-install) export BENCH_NO_INSTALL=1; shift ;;
    --no-build) export BENCH_NO_BUILD=1; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

WORKLOADS=$(bench_workloads "$ONLY" run.sh) || exit 2
ALLOCATORS=${ALLOCS:+${ALLOCS//,/ }}
ALLOCATORS=${ALLOCATORS:-$BENCH_ALL_ALLOCATORS}
for a in $ALLOCATORS; do
  case " $BENCH_ALL_ALLOCATORS $BENCH_VARIANTS " in *" $a "*) ;; *) echo "run.sh: unknown allocator $a" >&2; exit 2 ;; esac
done

# Arguments per workload; empty = the program's defaults (~0.5-2 s with glibc here).
workload_args() {
  bench_args "$1"
  [ "$QUICK" = 1 ] || return 0
  bench_quick_args "$1"
}

# Never let a checker or profiler setting of the caller leak into the runs.
unset HEAPCHECK HEAPPROFILE HEAP_CHECK_DUMP_DIRECTORY LD_PRELOAD HEAPCHECK_SAMPLE_PARAMETER TCMALLOC_SAMPLE_PARAMETER

ensure_peers valgrind
build_project

RUNSTAT=$(bench_bin runstat) || { log "cannot build runstat"; exit 1; }
declare -A BIN LIB HAVE
for w in $WORKLOADS; do
  BIN[$w]=$(bench_bin "$(bench_prog "$w")") || { log "cannot build $(bench_prog "$w")"; exit 1; }
done
for a in $ALLOCATORS; do
  if l=$(allocator_lib "$a"); then LIB[$a]=$l; HAVE[$a]=1; else HAVE[$a]=0; log "$a: not available (n/a)"; fi
done

mkdir -p "$BUILD"
RAW=$BUILD/bench-raw.tsv
RUNLOG=$BUILD/bench-run.log
: >"$RAW"
: >"$RUNLOG"
TMP=$(mktemp)
trap 'rm -f "$TMP"' EXIT

log "reps=$REPS workloads=[$WORKLOADS] allocators=[$ALLOCATORS] build=$BUILD"
for ((rep = 1; rep <= REPS; rep++)); do
  for w in $WORKLOADS; do
    for a in $ALLOCATORS; do
      [ "${HAVE[$a]}" = 1 ] || continue
      envargs=()
      [ -n "${LIB[$a]}" ] && envargs=(-e "LD_PRELOAD=${LIB[$a]}")
      for e in $(allocator_env "$a"); do envargs+=(-e "$e"); done
      { echo "=== rep $rep $w $a"; } >>"$RUNLOG"
      "$RUNSTAT" -o "$TMP" -t "$TIMEOUT" "${envargs[@]}" -- "${BIN[$w]}" $(workload_args "$w") >>"$RUNLOG" 2>&1
      read -r wall rss status cpu minflt <"$TMP" || { wall=0; rss=0; status=255; cpu=0; minflt=0; }
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$w" "$a" "$wall" "$rss" "$status" "$cpu" "${minflt:-0}" >>"$RAW"
      printf '[bench] rep %d/%d %-12s %-10s %7.3f s %8.1f MB%s\n' "$rep" "$REPS" "$w" "$a" "$wall" \
        "$(awk -v k="$rss" 'BEGIN{print k/1024}')" "$([ "$status" = 0 ] || echo "  FAILED status=$status")" >&2
    done
  done
done

# ---- summary ----
# Ratios are to glibc, or to the first allocator listed when glibc was not run.
case " $ALLOCATORS " in *" glibc "*) BASE=glibc ;; *) BASE=${ALLOCATORS%% *} ;; esac
cell() {  # cell KIND(time|cpu|rss|flt) WORKLOAD ALLOC -> value or n/a / fail
  local kind=$1 w=$2 a=$3 vals col=4
  [ "${HAVE[$a]}" = 1 ] || { echo "n/a"; return; }
  [ "$kind" = cpu ] && col=7
  [ "$kind" = flt ] && col=8
  if [ "$kind" != rss ]; then
    vals=$(awk -F'\t' -v w="$w" -v a="$a" -v k="$col" '$2==w && $3==a && $6==0 {print $k}' "$RAW")
    [ -n "$vals" ] && { echo "$vals" | stat_median; return; }
  else
    vals=$(awk -F'\t' -v w="$w" -v a="$a" '$2==w && $3==a && $6==0 {print $5}' "$RAW")
    [ -n "$vals" ] && { echo "$vals" | stat_max; return; }
  fi
  echo "fail"
}

table() {  # table time|cpu|rss
  local kind=$1 w a v g hdr sep
  hdr="| workload |"; sep="| --- |"
  for a in $ALLOCATORS; do hdr+=" $a |"; sep+=" ---: |"; done
  echo "$hdr"; echo "$sep"
  declare -A LOGSUM CNT
  for a in $ALLOCATORS; do LOGSUM[$a]=0; CNT[$a]=0; done
  for w in $WORKLOADS; do
    g=$(cell "$kind" "$w" "$BASE")
    local row="| $w |"
    for a in $ALLOCATORS; do
      v=$(cell "$kind" "$w" "$a")
      case $v in
        n/a|fail) row+=" $v |" ;;
        *)
          case $kind in
            rss) row+=" $(awk -v k="$v" 'BEGIN{printf "%.1f MB", k/1024}')" ;;
            flt) row+=" $(awk -v k="$v" 'BEGIN{printf "%.0f k", k/1000}')" ;;
            *) row+=" $(printf '%.3f s' "$v")" ;;
          esac
          case $g in
            n/a|fail|0|0.0000) ;;
            *)
              if [ "$a" != "$BASE" ]; then row+=" ($(awk -v x="$v" -v y="$g" 'BEGIN{printf "%.2fx", x/y}'))"; fi
              LOGSUM[$a]=$(awk -v s="${LOGSUM[$a]}" -v x="$v" -v y="$g" 'BEGIN{printf "%.6f", s + log(x/y)}')
              CNT[$a]=$((CNT[$a] + 1)) ;;
          esac
          row+=" |" ;;
      esac
    done
    echo "$row"
  done
  local grow="| geometric mean (ratio to $BASE) |" nw
  nw=$(echo $WORKLOADS | wc -w)
  for a in $ALLOCATORS; do
    if [ "${CNT[$a]}" -gt 0 ]; then
      grow+=" $(awk -v s="${LOGSUM[$a]}" -v n="${CNT[$a]}" 'BEGIN{printf "%.2fx", exp(s/n)}')"
      [ "${CNT[$a]}" -lt "$nw" ] && grow+=" (${CNT[$a]}/$nw)"
      grow+=" |"
    else
      grow+=" n/a |"
    fi
  done
  echo "$grow"
}

summary() {
  echo "Wall time: median of $REPS interleaved runs (ratio to $BASE)"
  echo
  table time
  echo
  echo "CPU time (user + system): median of $REPS runs (ratio to $BASE)"
  echo
  table cpu
  echo
  echo "Peak RSS: largest of $REPS runs (ratio to $BASE)"
  echo
  table rss
  echo
  echo "Minor page faults: median of $REPS runs (ratio to $BASE)"
  echo
  table flt
  local nfail
  nfail=$(awk -F'\t' '$6!=0' "$RAW" | wc -l)
  if [ "$nfail" -gt 0 ]; then
    echo
    echo "Failed runs ($nfail): $(awk -F'\t' '$6!=0 {printf "%s/%s(rep %s, status %s) ", $2, $3, $1, $6}' "$RAW")"
  fi
}

OUT=$(summary)
echo "$OUT"
if [ -n "$MARKDOWN" ]; then
  {
    echo "<!-- tests/bench/run.sh --reps $REPS${ONLY:+ --only $ONLY}${ALLOCS:+ --allocators $ALLOCS}$([ "$QUICK" = 1 ] && echo " --quick"); $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //') -->"
    echo
    echo "$OUT"
  } >"$MARKDOWN"
  log "wrote $MARKDOWN"
fi
