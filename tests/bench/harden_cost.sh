#!/usr/bin/env bash
# tests/bench/harden_cost.sh - the cost of the free path's hardening (issue 11:
# double-free mark, encoded and checked free-list links), measured from the
# repository: two release libraries, one with the default -Dhardening=enabled
# and one built with -Dhardening=disabled (a measurement switch, never for
# production: docs/design.md, "Hardening").
#
# Usage: tests/bench/harden_cost.sh [--part instr|time|all] [--build DIR]
#          [--build-off DIR] [--reps N] [--pair-n N] [--modes fixed,mixed,ring,window]
#          [--only w1,w2] [--quick] [--parts] [--no-build] [--no-install]
#   --build DIR      the hardened release build (default build-bench)
#   --build-off DIR  the unhardened one (default build-bench-noharden); both
#                    are set up (release, -Dtests=false -Dexamples=false) when
#                    absent and built with ninja unless --no-build
#   --part instr     (a) instructions per malloc+free pair on every mode of
#                    callgrind_pair.sh, both libraries in one run, and their
#                    difference; (b) instructions of the workload set,
#                    callgrind_ab.sh OFF ON (B / A = hardened / unhardened)
#   --part time      (c) wall and CPU time of the pair loops (cg_pair N MODE,
#                    N = --pair-n, default 20000000; the loop's own few
#                    instructions are not subtracted) and of the workloads
#                    (their default arguments; --quick: a tenth), each run
#                    one process under runstat; interleaved: repetition ->
#                    item -> library, the libraries' order swapped every
#                    repetition; medians of --reps (default 11) runs.
#                    Meant for a quiet machine: the load average at the start
#                    and at the end is printed with the tables.
#   --part all       both (default)
#   --parts          (c) also times the two parts of the hardening alone:
#                    BUILD-marks (-Dhardening_parts=marks: the double-free
#                    marks, plain links) and BUILD-links (-Dhardening_parts=links:
#                    the encoded links, no marks), set up and built as above,
#                    interleaved with the other two; a second table gives
#                    each one's ratio to the unhardened build
# Prints markdown tables.  Raw time results: $BUILD/harden-raw.tsv.
set -u

PART=all
BUILD_OFF=""
PARTS=0
REPS=11
PAIR_N=20000000
MODES="fixed mixed ring window"
ONLY=""
QUICK=0
NOBUILD=0
while [ $# -gt 0 ]; do
  case $1 in
    --part) PART=$2; shift 2 ;;
    --build) BUILD=$(realpath -m "$2"); shift 2 ;;
    --build-off) BUILD_OFF=$(realpath -m "$2"); shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --pair-n) PAIR_N=$2; shift 2 ;;
    --modes) MODES=${2//,/ }; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --parts) PARTS=1; shift ;;
    --no-build) NOBUILD=1; shift ;;
    --no-install) export BENCH_NO_INSTALL=1; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "harden_cost.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
case $PART in instr|time|all) ;; *) echo "harden_cost.sh: --part instr|time|all" >&2; exit 2 ;; esac

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
: "${BUILD_OFF:=$ROOT/build-bench-noharden}"
WORKLOADS=$(bench_workloads "$ONLY" harden_cost.sh) || exit 2
unset HEAPCHECK HEAPPROFILE HEAP_CHECK_DUMP_DIRECTORY LD_PRELOAD HEAPCHECK_SAMPLE_PARAMETER TCMALLOC_SAMPLE_PARAMETER

# setup_build DIR ON|OFF|MARKS|LINKS: a release build of the library with
# the hardening on, off, or one of its parts alone; checks that the build dir
# really has that setting.
setup_build() {
  local dir=$1 want=$2 opt=enabled def=1 parts=all marks=1 links=1
  case $want in
    OFF) opt=disabled def=0 marks=0 links=0 ;;
    MARKS) parts=marks links=0 ;;
    LINKS) parts=links marks=0 ;;
  esac
  if [ ! -f "$dir/build.ninja" ]; then
    log "meson setup $dir --buildtype=release -Dhardening=$opt -Dhardening_parts=$parts"
    local slog
    slog=$(mktemp)
    meson setup "$dir" "$ROOT" --buildtype=release -Dtests=false -Dexamples=false -Dhardening=$opt \
      -Dhardening_parts=$parts >"$slog" 2>&1 || { log "meson setup $dir failed"; cat "$slog" >&2; rm -f "$slog"; exit 1; }
    rm -f "$slog"
  fi
  if [ "$NOBUILD" = 0 ]; then
    log "ninja -C $dir"
    ninja -C "$dir" >"$dir/harden-build.log" 2>&1 || { log "ninja -C $dir failed (see $dir/harden-build.log)"; exit 1; }
  fi
  grep -q -- "-DHC_HARDENING=$def" "$dir/compile_commands.json" &&
    grep -q -- "-DHC_HARDEN_MARKS=$marks" "$dir/compile_commands.json" &&
    grep -q -- "-DHC_HARDEN_LINKS=$links" "$dir/compile_commands.json" ||
    { log "$dir is not a -Dhardening=$opt -Dhardening_parts=$parts build (meson configure $dir ...)"; exit 1; }
  [ -e "$dir/libheapcheck.so" ] || { log "no $dir/libheapcheck.so"; exit 1; }
}
setup_build "$BUILD" ON
setup_build "$BUILD_OFF" OFF
LIB_ON=$BUILD/libheapcheck.so
LIB_OFF=$BUILD_OFF/libheapcheck.so
declare -A LIB=([on]=$LIB_ON [off]=$LIB_OFF)
VARIANTS="off on"
if [ "$PARTS" = 1 ]; then
  setup_build "$BUILD-marks" MARKS
  setup_build "$BUILD-links" LINKS
  LIB[marks]=$BUILD-marks/libheapcheck.so
  LIB[links]=$BUILD-links/libheapcheck.so
  VARIANTS="off on marks links"
fi
HERE=$(dirname "${BASH_SOURCE[0]}")
export BENCH_NO_BUILD=1

echo "Hardening cost: $LIB_ON (hardened) against $LIB_OFF (-Dhardening=disabled);" \
  "$(git -C "$ROOT" describe --always --dirty 2>/dev/null); $(date -u '+%Y-%m-%d %H:%M UTC');" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo

if [ "$PART" != time ]; then
  # (a) instructions per pair: both libraries in one callgrind_pair.sh run
  out=$(BENCH_ALT_LIB=$LIB_OFF "$HERE/callgrind_pair.sh" --allocators heapcheck,heapcheck-alt --no-variants \
    --modes "${MODES// /,}" --build "$BUILD" --no-build) || { log "callgrind_pair.sh failed"; exit 1; }
  echo "$out" | sed 's/| heapcheck-alt |/| unhardened (heapcheck-alt) |/'
  on=$(echo "$out" | grep '^| heapcheck |') off=$(echo "$out" | grep '^| heapcheck-alt |')
  if [ -n "$on" ] && [ -n "$off" ]; then
    row="| hardening (instructions, share of the unhardened pair) |"
    for i in $(seq 1 $(echo $MODES | wc -w)); do
      row+=$(awk -F'|' -v i=$((i + 2)) -v a="$on" -v b="$off" 'BEGIN{split(a, x, "|"); split(b, y, "|");
        if (y[i] + 0 > 0) printf " %.1f (%.1f %%) |", x[i] - y[i], 100 * (x[i] - y[i]) / y[i]; else printf " n/a |"}')
    done
    echo "$row"
  fi
  echo
  # (b) the workload set: B / A = hardened / unhardened
  echo "Workload set, instructions (callgrind_ab.sh A = unhardened, B = hardened; B / A - 1 is the hardening's share)"
  echo
  "$HERE/callgrind_ab.sh" "$LIB_OFF" "$LIB_ON" --build "$BUILD" ${ONLY:+--only "$ONLY"} || log "callgrind_ab.sh failed"
  echo
fi

[ "$PART" = instr ] && exit 0

# (c) wall and CPU time, interleaved
RUNSTAT=$(bench_bin runstat) || { log "cannot build runstat"; exit 1; }
CG=$(bench_bin cg_pair -fno-builtin-malloc -fno-builtin-free) || { log "cannot build cg_pair"; exit 1; }
declare -A CMD
ITEMS=""
for m in $MODES; do ITEMS+=" pair:$m"; CMD[pair:$m]="$CG $PAIR_N $m"; done
for w in $WORKLOADS; do
  bin=$(bench_bin "$(bench_prog "$w")") || { log "cannot build $(bench_prog "$w")"; exit 1; }
  ITEMS+=" $w"
  CMD[$w]="$bin $(bench_args "$w") $([ "$QUICK" = 1 ] && bench_quick_args "$w")"
done
RAW=$BUILD/harden-raw.tsv
: >"$RAW"
TMP=$(mktemp)
trap 'rm -f "$TMP"' EXIT
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg) T0=$(date -u '+%H:%M')
log "time: reps=$REPS items=[$ITEMS]"
read -r -a VA <<<"$VARIANTS"
for ((rep = 1; rep <= REPS; rep++)); do
  # the libraries' order rotated every repetition (with two: swapped)
  order=""
  for ((j = 0; j < ${#VA[@]}; j++)); do order+=" ${VA[$(((j + rep) % ${#VA[@]}))]}"; done
  for it in $ITEMS; do
    for v in $order; do
      lib=${LIB[$v]}
      "$RUNSTAT" -o "$TMP" -t 600 -e "LD_PRELOAD=$lib" -- ${CMD[$it]} >/dev/null 2>&1
      read -r wall rss status cpu minflt <"$TMP" || { wall=0; status=255; cpu=0; }
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$it" "$v" "$wall" "$cpu" "$status" >>"$RAW"
      [ "$status" = 0 ] || log "rep $rep $it $v: status $status"
    done
  done
  log "rep $rep/$REPS done"
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg) T1=$(date -u '+%H:%M')

med() { awk -F'\t' -v it="$1" -v v="$2" -v k="$3" '$2==it && $3==v && $6==0 {print $k}' "$RAW" | stat_median; }
echo "Time: median of $REPS interleaved runs; $T0 UTC load average $LOAD0, $T1 UTC $LOAD1;" \
  "pair loops: cg_pair $PAIR_N MODE (the loop included)"
echo
echo "| item | wall, unhardened | wall, hardened | ratio | CPU, unhardened | CPU, hardened | ratio |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
lp=0 np=0 lw=0 nw=0 cp=0 cw=0
for it in $ITEMS; do
  wo=$(med "$it" off 4) wn=$(med "$it" on 4) co=$(med "$it" off 5) cn=$(med "$it" on 5)
  if [ -z "$wo" ] || [ -z "$wn" ] || [ -z "$co" ] || [ -z "$cn" ]; then echo "| $it | fail | | | | | |"; continue; fi
  rw=$(awk -v a="$wn" -v b="$wo" 'BEGIN{printf "%.4f", a / b}')
  rc=$(awk -v a="$cn" -v b="$co" 'BEGIN{printf "%.4f", (b > 0) ? a / b : 1}')
  printf '| %s | %.3f s | %.3f s | %.3f | %.3f s | %.3f s | %.3f |\n' "$it" "$wo" "$wn" "$rw" "$co" "$cn" "$rc"
  case $it in
    pair:*) lp=$(awk -v s="$lp" -v r="$rw" 'BEGIN{print s + log(r)}'); cp=$(awk -v s="$cp" -v r="$rc" 'BEGIN{print s + log(r)}'); np=$((np + 1)) ;;
    *) lw=$(awk -v s="$lw" -v r="$rw" 'BEGIN{print s + log(r)}'); cw=$(awk -v s="$cw" -v r="$rc" 'BEGIN{print s + log(r)}'); nw=$((nw + 1)) ;;
  esac
done
[ $np -gt 0 ] && awk -v l="$lp" -v c="$cp" -v n=$np 'BEGIN{printf "| geometric mean, pair loops | | | %.3f | | | %.3f |\n", exp(l / n), exp(c / n)}'
[ $nw -gt 0 ] && awk -v l="$lw" -v c="$cw" -v n=$nw 'BEGIN{printf "| geometric mean, workloads | | | %.3f | | | %.3f |\n", exp(l / n), exp(c / n)}'
if [ "$PARTS" = 1 ]; then
  echo
  echo "Each part alone: wall time, median of $REPS interleaved runs, and its ratio to the unhardened build"
  echo "(marks: -Dhardening_parts=marks, the double-free marks with plain links; links:"
  echo "-Dhardening_parts=links, the encoded links without marks; both: the default build)"
  echo
  echo "| item | unhardened | marks | ratio | links | ratio | both | ratio |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  declare -A LS=() NS=()
  for it in $ITEMS; do
    declare -A W=([off]=$(med "$it" off 4) [marks]=$(med "$it" marks 4) [links]=$(med "$it" links 4) [on]=$(med "$it" on 4))
    wo=${W[off]}
    if [ -z "$wo" ] || [ -z "${W[marks]}" ] || [ -z "${W[links]}" ] || [ -z "${W[on]}" ]; then echo "| $it | fail | | | | | | |"; continue; fi
    awk -v it="$it" -v o="$wo" -v m="${W[marks]}" -v l="${W[links]}" -v n="${W[on]}" \
      'BEGIN{printf "| %s | %.3f s | %.3f s | %.3f | %.3f s | %.3f | %.3f s | %.3f |\n", it, o, m, m / o, l, l / o, n, n / o}'
    g=work
    case $it in pair:*) g=pair ;; esac
    for v in marks links on; do
      LS[$g$v]=$(awk -v s="${LS[$g$v]:-0}" -v a="${W[$v]}" -v b="$wo" 'BEGIN{print s + log(a / b)}')
    done
    NS[$g]=$((${NS[$g]:-0} + 1))
  done
  for g in pair work; do
    [ "${NS[$g]:-0}" -gt 0 ] || continue
    name="pair loops"
    [ $g = work ] && name=workloads
    awk -v n="${NS[$g]}" -v m="${LS[${g}marks]}" -v l="${LS[${g}links]}" -v b="${LS[${g}on]}" -v name="$name" \
      'BEGIN{printf "| geometric mean, %s | | | %.3f | | %.3f | | %.3f |\n", name, exp(m / n), exp(l / n), exp(b / n)}'
  done
fi
nfail=$(awk -F'\t' '$6!=0' "$RAW" | wc -l)
[ "$nfail" = 0 ] || echo "Failed runs: $nfail (see $RAW)"
