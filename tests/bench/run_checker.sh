#!/usr/bin/env bash
# tests/bench/run_checker.sh - cost of leak checking: heapcheck (HEAPCHECK=normal)
# against LeakSanitizer (clang -fsanitize=leak, standalone LSan) and plain glibc.
#
# Usage: tests/bench/run_checker.sh [--reps N] [--only loop|heap] [--pairs N]
#          [--objects N] [--size B] [--shapes array,list] [--markdown FILE]
#          [--build DIR] [--timeout S] [--no-install] [--no-build]
#
# 1. "loop": checker_bench, 2 threads doing --pairs (5M) malloc/free pairs over
#    a live ring.  Configurations: glibc; heapcheck with no HEAPCHECK (allocator
#    only, sampling); heapcheck HEAPCHECK=normal (every allocation's stack
#    recorded, final check at exit); LSan (its allocator records every stack
#    too) with and without the final check (LSAN_OPTIONS=detect_leaks=0).
# 2. "heap": checker_heap builds --objects (10M) reachable --size (100) byte
#    objects (~1 GiB) held by a global table ("array") or a linked list
#    ("list") and returns from main.  The cost of the final leak check is the
#    wall time with the check minus the time without it:
#      heapcheck: HEAPCHECK=normal  minus  HEAPCHECK=local (stacks recorded, no
#                 whole-program check at exit);
#      LSan:      default           minus  LSAN_OPTIONS=detect_leaks=0.
#    heapcheck runs with HEAPCHECK_VERBOSE=1 PERFTOOLS_VERBOSE=1 (both runs, so
#    the difference stays fair); the lines of its report that mention a time
#    are quoted below the table.
# Runs are interleaved over configurations within each repetition; cells are
# medians of wall time and of CPU time (user + system: steadier than wall time
# when other work loads the machine) and the largest peak RSS.  A configuration whose runs
# all fail (non-zero exit, e.g. a false leak report, a crash, or a timeout)
# shows "n/a" with the status; so does a heapcheck-normal run that exits 0
# without printing gperftools' "No leaks found" verdict (no check ran).
# Logs are in $BUILD/checker-run.log.
set -u

REPS=5
ONLY="loop heap"
PAIRS=5000000
OBJECTS=10000000
SIZE=100
SHAPES="array list"
MARKDOWN=""
TIMEOUT=900
while [ $# -gt 0 ]; do
  case $1 in
    --reps) REPS=$2; shift 2 ;;
    --only) ONLY=${2//,/ }; shift 2 ;;
    --pairs) PAIRS=$2; shift 2 ;;
    --objects) OBJECTS=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --shapes) SHAPES=${2//,/ }; shift 2 ;;
    --markdown) MARKDOWN=$2; shift 2 ;;
    --build) BUILD=$(realpath -m "$2"); shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --no-install) export BENCH_NO_INSTALL=1; shift ;;
    --no-build) export BENCH_NO_BUILD=1; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_checker.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

unset HEAPCHECK HEAPPROFILE LD_PRELOAD LSAN_OPTIONS ASAN_OPTIONS HEAPCHECK_VERBOSE PERFTOOLS_VERBOSE

ensure_peers clang
build_project
RUNSTAT=$(bench_bin runstat) || { log "cannot build runstat"; exit 1; }
CB=$(bench_bin checker_bench -g -fno-omit-frame-pointer) || { log "cannot build checker_bench"; exit 1; }
CH=$(bench_bin checker_heap -g -fno-omit-frame-pointer) || { log "cannot build checker_heap"; exit 1; }

# LSan builds: clang's standalone leak sanitizer (libclang-rt-*-dev).
lsan_bin() {
  local name=$1 out="$BUILD/bench-direct/${1}_lsan" src="$BENCH_DIR/$1.c"
  mkdir -p "$BUILD/bench-direct"
  if ! bench_newer "$out" "$src"; then
    clang -std=gnu11 -O2 -g -fno-omit-frame-pointer -fsanitize=leak -pthread \
      -o "$out" "$src" >&2 || return 1
  fi
  echo "$out"
}
CB_LSAN=$(lsan_bin checker_bench) || { log "no LSan build of checker_bench"; CB_LSAN=""; }
CH_LSAN=$(lsan_bin checker_heap) || { log "no LSan build of checker_heap"; CH_LSAN=""; }
HC=$(allocator_lib heapcheck) || HC=""

RAW=$BUILD/checker-raw.tsv
RUNLOG=$BUILD/checker-run.log
: >"$RAW"
: >"$RUNLOG"
TMP=$(mktemp)
OUTF=$(mktemp)
trap 'rm -f "$TMP" "$OUTF"' EXIT

# config NAME -> "BINARY|ENV1 ENV2 ..." for the given program; empty when unavailable.
config() {
  local prog=$1 cfg=$2 bin lbin
  if [ "$prog" = loop ]; then bin=$CB; lbin=$CB_LSAN; else bin=$CH; lbin=$CH_LSAN; fi
  local v="HEAPCHECK_VERBOSE=1 PERFTOOLS_VERBOSE=1"
  case $cfg in
    glibc) echo "$bin|" ;;
    heapcheck) [ -n "$HC" ] && echo "$bin|LD_PRELOAD=$HC" ;;
    heapcheck-normal) [ -n "$HC" ] && echo "$bin|LD_PRELOAD=$HC HEAPCHECK=normal $([ "$prog" = heap ] && echo "$v")" ;;
    heapcheck-local) [ -n "$HC" ] && echo "$bin|LD_PRELOAD=$HC HEAPCHECK=local $v" ;;
    lsan) [ -n "$lbin" ] && echo "$lbin|" ;;
    lsan-nocheck) [ -n "$lbin" ] && echo "$lbin|LSAN_OPTIONS=detect_leaks=0" ;;
  esac
}
LOOP_CONFIGS="glibc heapcheck heapcheck-normal lsan lsan-nocheck"
HEAP_CONFIGS="glibc heapcheck-local heapcheck-normal lsan-nocheck lsan"

run_one() {  # run_one REP PROG SHAPE CONFIG ARGS...
  local rep=$1 prog=$2 shape=$3 cfg=$4; shift 4
  local spec bin envs e envargs=()
  spec=$(config "$prog" "$cfg") || spec=""
  if [ -z "$spec" ]; then
    printf '%s\t%s\t%s\t%s\tna\tna\tna\tna\tna\n' "$rep" "$prog" "$shape" "$cfg" >>"$RAW"; return
  fi
  bin=${spec%%|*}; envs=${spec#*|}
  for e in $envs; do envargs+=(-e "$e"); done
  "$RUNSTAT" -o "$TMP" -t "$TIMEOUT" "${envargs[@]}" -- "$bin" "$@" >"$OUTF" 2>&1
  local wall rss status loop cpu
  read -r wall rss status cpu <"$TMP" || { wall=0; rss=0; status=255; cpu=0; }
  loop=$(sed -n 's/^checker_bench: \([0-9.]*\) s.*/\1/p' "$OUTF" | head -1)
  # A run that exits 0 without the checker's verdict did not check anything
  # (e.g. HEAPCHECK not implemented yet): do not let it pass as a fast check.
  if [ "$cfg" = heapcheck-normal ] && [ "$status" = 0 ] && ! grep -q 'No leaks found' "$OUTF"; then
    status=nocheck
  fi
  { echo "=== rep $rep $prog $shape $cfg: wall $wall s, rss $rss KB, status $status"; head -c 20000 "$OUTF"; } >>"$RUNLOG"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$prog" "$shape" "$cfg" "$wall" "$rss" "$status" "${loop:--}" "$cpu" >>"$RAW"
  printf '[bench] rep %d/%d %-5s %-6s %-17s %8.3f s %8.1f MB%s\n' "$rep" "$REPS" "$prog" "$shape" "$cfg" "$wall" \
    "$(awk -v k="$rss" 'BEGIN{print k/1024}')" "$([ "$status" = 0 ] || echo "  FAILED status=$status")" >&2
  if [ "$cfg" = heapcheck-normal ] && [ "$prog" = heap ] && [ "$status" = 0 ]; then
    grep -iE '[0-9.]+ ?(ms|us|µs|s|sec|seconds)\b|time' "$OUTF" | grep -v '^checker_heap:' | head -20 \
      | sed "s/^/[$shape rep $rep] /" >>"$BUILD/checker-verbose.txt"
  fi
}

: >"$BUILD/checker-verbose.txt"
log "reps=$REPS parts=[$ONLY] heapcheck=${HC:-n/a} lsan=${CB_LSAN:+yes}"
for ((rep = 1; rep <= REPS; rep++)); do
  for part in $ONLY; do
    if [ "$part" = loop ]; then
      for c in $LOOP_CONFIGS; do run_one "$rep" loop - "$c" -t 2 -n "$PAIRS"; done
    else
      for s in $SHAPES; do
        for c in $HEAP_CONFIGS; do run_one "$rep" heap "$s" "$c" -n "$OBJECTS" -s "$SIZE" -m "$s"; done
      done
    fi
  done
done

# ---- summary ----
# med PROG SHAPE CONFIG COLUMN(5 wall, 8 loop, 9 cpu) -> median of successful runs, or "n/a (status)"
med() {
  local vals
  vals=$(awk -F'\t' -v p="$1" -v s="$2" -v c="$3" -v k="$4" '$2==p && $3==s && $4==c && $7=="0" && $k!="-" {print $k}' "$RAW")
  if [ -n "$vals" ]; then echo "$vals" | stat_median; return; fi
  local st
  st=$(awk -F'\t' -v p="$1" -v s="$2" -v c="$3" '$2==p && $3==s && $4==c && $7!="0" {print $7}' "$RAW" | sort -u | tr '\n' ' ')
  if [ -z "$st" ] || [ "$st" = "na " ]; then echo "n/a"
  elif [ "$st" = "nocheck " ]; then echo "n/a (no check ran)"
  else echo "n/a (status ${st% })"; fi
}
maxrss() {
  local vals
  vals=$(awk -F'\t' -v p="$1" -v s="$2" -v c="$3" '$2==p && $3==s && $4==c && $7=="0" {print $6}' "$RAW")
  [ -n "$vals" ] && echo "$vals" | stat_max | awk '{printf "%.1f MB", $1/1024}' || echo "n/a"
}
isnum() { case $1 in ''|*[!0-9.]*) return 1 ;; *) return 0 ;; esac; }
fmt() { if isnum "$1"; then printf '%.3f s' "$1"; else echo "$1"; fi; }
ratio() { if isnum "$1" && isnum "$2"; then awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.1fx", a/b; else print "n/a"}'; else echo "n/a"; fi; }
diffs() { if isnum "$1" && isnum "$2"; then awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f s", a-b}'; else echo "n/a"; fi; }

summary() {
  if [[ " $ONLY " == *" loop "* ]]; then
    echo "Allocation loop: checker_bench -t 2 -n $PAIRS (median of $REPS; loop = the program's own timing of its threads)"
    echo
    echo "| configuration | loop | wall | wall / glibc | CPU (user+sys) | CPU / glibc | peak RSS |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    local g gc c
    g=$(med loop - glibc 5)
    gc=$(med loop - glibc 9)
    for c in $LOOP_CONFIGS; do
      local w u
      w=$(med loop - "$c" 5)
      u=$(med loop - "$c" 9)
      echo "| $c | $(fmt "$(med loop - "$c" 8)") | $(fmt "$w") | $(ratio "$w" "$g") | $(fmt "$u") | $(ratio "$u" "$gc") | $(maxrss loop - "$c") |"
    done
    echo
  fi
  if [[ " $ONLY " == *" heap "* ]]; then
    echo "Final check of a large heap: checker_heap -n $OBJECTS -s $SIZE (median wall of $REPS)"
    echo
    echo "| shape | configuration | wall | CPU (user+sys) | peak RSS | final check: wall minus baseline | final check: CPU minus baseline |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
    local s c w u b d du
    for s in $SHAPES; do
      for c in $HEAP_CONFIGS; do
        w=$(med heap "$s" "$c" 5)
        u=$(med heap "$s" "$c" 9)
        case $c in
          heapcheck-normal) b=heapcheck-local ;;
          lsan) b=lsan-nocheck ;;
          *) b="" ;;
        esac
        if [ -n "$b" ]; then
          d=$(diffs "$w" "$(med heap "$s" "$b" 5)"); du=$(diffs "$u" "$(med heap "$s" "$b" 9)")
        elif [ "$c" = glibc ]; then d="(reference)"; du="(reference)"
        else d="(baseline)"; du="(baseline)"; fi
        echo "| $s | $c | $(fmt "$w") | $(fmt "$u") | $(maxrss heap "$s" "$c") | $d | $du |"
      done
    done
    if [ -s "$BUILD/checker-verbose.txt" ]; then
      echo
      echo "heapcheck's own timing lines (HEAPCHECK_VERBOSE=1 PERFTOOLS_VERBOSE=1):"
      echo
      echo '```'
      sort -u "$BUILD/checker-verbose.txt" | head -40
      echo '```'
    fi
  fi
}

OUT=$(summary)
echo "$OUT"
if [ -n "$MARKDOWN" ]; then
  { echo "<!-- tests/bench/run_checker.sh --reps $REPS; $(date -u '+%Y-%m-%d %H:%M UTC'); $(clang --version 2>/dev/null | head -1) -->"; echo; echo "$OUT"; } >"$MARKDOWN"
  log "wrote $MARKDOWN"
fi
