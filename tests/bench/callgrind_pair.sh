#!/usr/bin/env bash
# tests/bench/callgrind_pair.sh - instructions per malloc+free pair, counted by callgrind.
#
# Usage: tests/bench/callgrind_pair.sh [--allocators a,b,...] [--modes fixed,mixed,ring,window]
#          [--n1 1000000] [--n2 2000000] [--build DIR] [--markdown FILE]
#          [--no-install] [--no-build] [--keep] [--no-variants]
#   allocators: glibc jemalloc tcmalloc mimalloc heapcheck (default: all), plus the
#     heapcheck variants heapcheck-nosample (HEAPCHECK_SAMPLE_PARAMETER=0) and
#     heapcheck-normal (HEAPCHECK=normal: stack of every allocation recorded),
#     which are run whenever heapcheck is (unless --no-variants), and
#     heapcheck-alt (the library in $BENCH_ALT_LIB: another build).
#
# Method: cg_pair runs N pairs (mode fixed: malloc(32); mixed: a cycle of 256
# sizes in 16..512; ring: mixed sizes, each new object replacing the oldest of
# 1024 live ones, so no page ever runs empty; it costs ~3 Ir more of loop;
# window: 64 live slots, a random one freed and refilled with a random size
# in 8..520, whose random numbers are subtracted as measured by the mode
# wempty instead of the empty loop).  Each is run under `valgrind --tool=callgrind` with the
# allocator in LD_PRELOAD, for N = n1 and N = n2; (Ir(n2) - Ir(n1)) / (n2 - n1)
# cancels start-up and exit, and the same difference for the loop without
# malloc/free ("empty") is subtracted.  Unlike memcheck, callgrind does not
# replace malloc, so the preloaded allocator is what gets counted; the script
# checks it: the last column names the object in which callgrind found the hot
# `malloc` symbol (libc.so.6 means the preload did not take effect; "???" is an
# object callgrind could not name) and the share of all instructions of the
# n2 run spent in it, plus (for preloaded allocators) the share left in
# libc.so.6, which must be small; read with callgrind_annotate.
set -u

ALLOCS=""
MODES="fixed mixed ring window"
N1=1000000
N2=2000000
MARKDOWN=""
KEEP=0
NOVARIANTS=0
while [ $# -gt 0 ]; do
  case $1 in
    --allocators) ALLOCS=$2; shift 2 ;;
    --modes) MODES=${2//,/ }; shift 2 ;;
    --n1) N1=$2; shift 2 ;;
    --n2) N2=$2; shift 2 ;;
    --build) BUILD=$(realpath -m "$2"); shift 2 ;;
    --markdown) MARKDOWN=$2; shift 2 ;;
    --no-install) export BENCH_NO_INSTALL=1; shift ;;
    --no-build) export BENCH_NO_BUILD=1; shift ;;
    --keep) KEEP=1; shift ;;
    --no-variants) NOVARIANTS=1; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "callgrind_pair.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ALLOCATORS=${ALLOCS:+${ALLOCS//,/ }}
ALLOCATORS=${ALLOCATORS:-$BENCH_ALL_ALLOCATORS}
unset HEAPCHECK HEAPPROFILE LD_PRELOAD HEAPCHECK_SAMPLE_PARAMETER TCMALLOC_SAMPLE_PARAMETER

ensure_peers valgrind
command -v valgrind >/dev/null || { log "valgrind is not installed"; exit 1; }
build_project
CG=$(bench_bin cg_pair -fno-builtin-malloc -fno-builtin-free) || { log "cannot build cg_pair"; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/cgpair.XXXXXX")
[ "$KEEP" = 1 ] && log "keeping callgrind outputs in $WORK" || trap 'rm -rf "$WORK"' EXIT

# Variants: name -> base allocator + extra environment.
VARIANTS=()
for a in $ALLOCATORS; do
  VARIANTS+=("$a")
  if [ "$a" = heapcheck ] && [ "$NOVARIANTS" = 0 ]; then VARIANTS+=(heapcheck-nosample heapcheck-normal); fi
done

# cg_ir VARIANT MODE N -> prints the total Ir (empty on failure); leaves $WORK/VARIANT.MODE.N.out
cg_ir() {
  local v=$1 mode=$2 n=$3 lib out
  lib=$(allocator_lib "$v") || return 1
  out="$WORK/$v.$mode.$n"
  # LD_PRELOAD also reaches the small valgrind launcher, which execs the tool at once.
  env ${lib:+LD_PRELOAD=$lib} $(allocator_env "$v") \
    valgrind --tool=callgrind --callgrind-out-file="$out.out" "$CG" "$n" "$mode" >"$out.log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ]; then log "$v $mode N=$n: exit $rc (see $out.log)"; return 1; fi
  grep -m1 'Collected :' "$out.log" | sed 's/.*Collected : *//; s/[^0-9]//g'
}

# lib_share VARIANT MODE N -> "OBJECT NN%": the object that the hot `malloc`
# symbol was found in, and the share of all Ir spent in that object.
lib_share() {
  local v=$1 mode=$2 n=$3 obj total inlib
  callgrind_annotate --inclusive=no --threshold=100 "$WORK/$v.$mode.$n.out" 2>/dev/null >"$WORK/ann.txt"
  total=$(sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' "$WORK/ann.txt" | tr -d ,)
  # Lines look like: "1,234 (12.3%)  ???:malloc [/usr/lib/.../libjemalloc.so.2]"
  # (callgrind cannot always name the object: "[???]").
  obj=$(grep -m1 -E ':(__libc_)?malloc \[' "$WORK/ann.txt" | sed 's/.*\[\(.*\)\]$/\1/')
  [ -n "$obj" ] && [ -n "$total" ] && [ "$total" -gt 0 ] || { echo "?"; return; }
  inlib=$(grep -F "[$obj]" "$WORK/ann.txt" | awk '{gsub(",", "", $1); s += $1} END {printf "%.0f", s}')
  awk -v o="$(basename "$obj")" -v a="$inlib" -v t="$total" 'BEGIN{printf "%s %.0f%%", o, 100 * a / t}'
  # When malloc is not glibc's, libc.so.6 must hold only start-up work.
  case $obj in
    */libc.so.6) ;;
    *) grep -F "libc.so.6]" "$WORK/ann.txt" | awk -v t="$total" '{gsub(",", "", $1); s += $1} END {printf " (libc %.0f%%)", 100 * s / t}' ;;
  esac
}

declare -A RES SHARE LOOPS
# loop_ir EMPTYMODE -> the loop's own Ir per iteration
loop_ir() {
  local e1 e2
  e1=$(cg_ir glibc "$1" "$N1"); e2=$(cg_ir glibc "$1" "$N2")
  if [ -z "$e1" ] || [ -z "$e2" ]; then log "the $1 loop failed"; exit 1; fi
  awk -v a="$e1" -v b="$e2" -v n1="$N1" -v n2="$N2" 'BEGIN{printf "%.2f", (b - a) / (n2 - n1)}'
}
empty_of() { [ "$1" = window ] && echo wempty || echo empty; }
for m in $MODES; do
  em=$(empty_of "$m")
  [ -n "${LOOPS[$em]:-}" ] && continue
  log "$em loop"
  LOOPS[$em]=$(loop_ir "$em")
  log "$em loop overhead: ${LOOPS[$em]} Ir per iteration (subtracted)"
done
LOOP=${LOOPS[empty]:-${LOOPS[wempty]}}

for v in "${VARIANTS[@]}"; do
  if ! allocator_lib "$v" >/dev/null; then
    for m in $MODES; do RES[$v.$m]="n/a"; done; SHARE[$v]="n/a"; continue
  fi
  for m in $MODES; do
    log "$v $m"
    i1=$(cg_ir "$v" "$m" "$N1"); i2=$(cg_ir "$v" "$m" "$N2")
    if [ -z "$i1" ] || [ -z "$i2" ]; then RES[$v.$m]="fail"; continue; fi
    RES[$v.$m]=$(awk -v a="$i1" -v b="$i2" -v n1="$N1" -v n2="$N2" -v l="${LOOPS[$(empty_of "$m")]}" 'BEGIN{printf "%.1f", (b - a) / (n2 - n1) - l}')
    SHARE[$v]="${SHARE[$v]:-}${SHARE[$v]:+ / }$(lib_share "$v" "$m" "$N2")"
  done
done

summary() {
  local hdr="| allocator |" sep="| --- |" m v row
  for m in $MODES; do
    case $m in
      fixed) hdr+=" malloc(32)+free |" ;;
      mixed) hdr+=" mixed 16..512 B |" ;;
      ring) hdr+=" mixed, 1024 live |" ;;
      window) hdr+=" random window, 64 live, 8..520 B |" ;;
      *) hdr+=" $m |" ;;
    esac
    sep+=" ---: |"
  done
  hdr+=" malloc found in, share of Ir there (${MODES// / \/ }) |"; sep+=" --- |"
  local loops="" em
  for em in "${!LOOPS[@]}"; do loops+="${loops:+, }${LOOPS[$em]} ($em)"; done
  echo "Instructions per malloc+free pair (callgrind Ir; (Ir(N=$N2) - Ir(N=$N1)) / $((N2 - N1)) minus the loop's own: $loops)"
  echo
  echo "$hdr"; echo "$sep"
  for v in "${VARIANTS[@]}"; do
    row="| $v |"
    for m in $MODES; do row+=" ${RES[$v.$m]:-fail} |"; done
    row+=" ${SHARE[$v]:-?} |"
    echo "$row"
  done
}

OUT=$(summary)
echo "$OUT"
if [ -n "$MARKDOWN" ]; then
  { echo "<!-- tests/bench/callgrind_pair.sh --n1 $N1 --n2 $N2; $(valgrind --version); $(date -u '+%Y-%m-%d %H:%M UTC') -->"; echo; echo "$OUT"; } >"$MARKDOWN"
  log "wrote $MARKDOWN"
fi
