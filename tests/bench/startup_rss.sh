#!/usr/bin/env bash
# tests/bench/startup_rss.sh - start-up memory: peak RSS of a trivial program.
#
# Usage: tests/bench/startup_rss.sh [--allocators a,b,...] [--runs 41] [--build DIR]
#          [--no-install] [--no-build] [--maps SUBSTRING...]
#   allocators: glibc jemalloc tcmalloc mimalloc heapcheck heapcheck-alt (the library
#     named by BENCH_ALT_LIB); default glibc,mimalloc,heapcheck (+ heapcheck-alt when
#     BENCH_ALT_LIB is set).
#
# Method (issue 11's start-up target, docs/performance.md "Start-up"): bench_trivial
# mallocs 100 bytes, prints and frees them.  Each allocator runs it under runstat
# (`runstat -o F -e LD_PRELOAD=L -- bench_trivial`) --runs times, the allocators
# interleaved round by round; printed: min, quartiles, median and max of the peak
# RSS (KB, from wait4's rusage) and the median's difference from glibc's.  The
# spread comes from where the libraries land relative to the kernel's 64 KiB
# fault-around windows, so take the median of many runs.  How much of a file a
# fault maps also depends on how its pages sit in the page cache (the kernel maps
# a whole large folio at once, and a file written by the linker or by cp is cached
# in other folios than one read by the loader), so the heapcheck libraries are
# first dropped from the page cache (`dd iflag=nocache count=0`): every one is then
# read in by the loader, as an installed library is.
#
# --maps: instead, one run per allocator of `bench_trivial SUBSTRING...`, which
# prints its mappings' Rss at the end of main (/proc/self/smaps) and the resident
# page offsets of the mappings whose name contains a SUBSTRING (e.g. libc.so
# libheapcheck) from /proc/self/pagemap.
set -u

ALLOCS=""
RUNS=41
MAPS=0
while [ $# -gt 0 ]; do
  case $1 in
    --allocators) ALLOCS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --build) BUILD=$(realpath -m "$2"); shift 2 ;;
    --no-install) export BENCH_NO_INSTALL=1; shift ;;
    --no-build) export BENCH_NO_BUILD=1; shift ;;
    --maps) MAPS=1; shift; break ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "startup_rss.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ALLOCATORS=${ALLOCS:+${ALLOCS//,/ }}
ALLOCATORS=${ALLOCATORS:-glibc mimalloc heapcheck${BENCH_ALT_LIB:+ heapcheck-alt}}
unset HEAPCHECK HEAPPROFILE LD_PRELOAD HEAPCHECK_SAMPLE_PARAMETER

ensure_peers
build_project
TRIVIAL=$(bench_bin bench_trivial) || { log "cannot build bench_trivial"; exit 1; }
RUNSTAT=$(bench_bin runstat) || { log "cannot build runstat"; exit 1; }

if [ "$MAPS" = 1 ]; then
  for a in $ALLOCATORS; do
    lib=$(allocator_lib "$a") || { echo "== $a: n/a"; continue; }
    echo "== $a ${lib:-(no preload)}"
    env ${lib:+LD_PRELOAD=$lib} $(allocator_env "$a") "$TRIVIAL" "$@" 2>&1 >/dev/null
  done
  exit 0
fi

for a in $ALLOCATORS; do
  case $a in heapcheck*) lib=$(allocator_lib "$a") && dd if="$lib" iflag=nocache count=0 status=none ;; esac
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/startup.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
for ((i = 0; i < RUNS; i++)); do
  for a in $ALLOCATORS; do
    lib=$(allocator_lib "$a") || continue
    envs=(${lib:+-e LD_PRELOAD=$lib})
    for e in $(allocator_env "$a"); do envs+=(-e "$e"); done
    "$RUNSTAT" -o "$WORK/one" "${envs[@]}" -- "$TRIVIAL" >/dev/null 2>&1 &&
      awk '{print $2}' "$WORK/one" >>"$WORK/$a"
  done
done

printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' allocator runs min "lower quartile" median "upper quartile" max "over glibc (median)"
printf '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n'
base=""
for a in $ALLOCATORS; do
  [ -s "$WORK/$a" ] || { printf '| %s | n/a | | | | | | |\n' "$a"; continue; }
  read -r n mn q1 med q3 mx < <(sort -n "$WORK/$a" | awk '{v[NR]=$1} END {
    printf "%d %d %d %d %d %d\n", NR, v[1], v[int((NR+3)/4)], v[int((NR+1)/2)], v[int((3*NR+1)/4)], v[NR] }')
  [ "$a" = glibc ] && base=$med
  over=""
  [ -n "$base" ] && [ "$a" != glibc ] && over=$(printf '%+d' $((med - base)))
  printf '| %s | %d | %d | %d | %d | %d | %d | %s |\n' "$a" "$n" "$mn" "$q1" "$med" "$q3" "$mx" "$over"
done
