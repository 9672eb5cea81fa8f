#!/usr/bin/env bash
# run_scenarios.sh - runs the leak scenarios (tests/scenarios/*.c, *.cc) under
# heapcheck and compares what the checker reports with what each scenario's
# header comment expects.
#
# Each scenario is built by meson as an ordinary executable (not linked
# against heapcheck); this script builds nothing.  For every scenario it runs
#   LD_PRELOAD=$HC_LIB HEAPCHECK=normal   expected: // EXPECT:
#   LD_PRELOAD=$HC_LIB HEAPCHECK=strict   expected: // EXPECT-STRICT: (else EXPECT)
#   HEAPCHECK=minimal / draconian         only when // EXPECT-MINIMAL: / -DRACONIAN: exist
#   HEAPCHECK=normal VAR=VALUE            for each // EXPECT-ENV: VAR=VALUE bytes=.. objects=..
# and, when meson built <name>_linked (linked with libheapcheck.so) or
# <name>_static (libheapcheck.a), those binaries with HEAPCHECK=normal and no
# LD_PRELOAD; <name>_fullstatic (gcc -static ... libheapcheck.a) in every
# mode the preloaded runs use.  stdout goes through a pipe (so
# stdio buffers fully), stderr to a file.  A run passes when
#   - stderr says the checker is active;
#   - the checked processes' results, one per process ("SUMMARY: heapcheck:
#     B bytes leaked in O allocations", or 0/0 for "No leaks found for check
#     "_main_""), equal the expected ones: the main process's plus one per
#     // EXPECT-CHILD: line (compared as multisets: processes finish in any
#     order);
#   - the exit status is // EXPECT-EXIT: when given (the program's own
#     status, kept when it is not 0), else 1 when the main process leaks
#     (objects > 0), else 0;
#   - every // EXPECT-STDOUT: line occurs in stdout;
#   - with // EXPECT-UNCHECKED: (a reason), the main process prints no
#     result at all (its EXPECT: line, 0/0, still sets the exit status).
#
# Usage: run_scenarios.sh [NAME...]     (default: every scenario)
# Environment: HC_LIB (libheapcheck.so), SC_SRC_DIR (this directory),
#   SC_BIN_DIR (meson's build directory for it); optional SC_MODES
#   (default "normal strict minimal draconian": the last two only where
#   expected), SC_TIMEOUT (seconds per run, default 300), SC_KEEP=1 keeps the
#   scratch directory.
# Prints PASS/FAIL/SKIP per run, the output of failed runs, and a closing
# "N passed, N failed, N skipped" line; exits 1 when a run failed.
set -u

src=${SC_SRC_DIR:-$(cd "$(dirname "$0")" && pwd)}
bin=${SC_BIN_DIR:-}
lib=${HC_LIB:-}
modes=${SC_MODES:-normal strict minimal draconian}
tmo=${SC_TIMEOUT:-300}
if [ -z "$bin" ] || [ -z "$lib" ] || [ ! -f "$lib" ]; then
  echo "run_scenarios.sh: set SC_BIN_DIR and HC_LIB (meson test sets them)" >&2
  exit 2
fi
ulimit -c 0 2>/dev/null
scratch=$(mktemp -d "${TMPDIR:-/tmp}/hc_scen.XXXXXX") || exit 2
[ "${SC_KEEP:-0}" = 1 ] || trap 'rm -rf "$scratch"' EXIT

runs=0
passed=0
failed=0
skipped=0

# expect_line FILE KEY -> the rest of the first "// KEY: " line ('' if none)
expect_line() { sed -n "s|^// $2: *||p" "$1" | head -1; }
# totals "bytes=B objects=O ..." -> "B/O"
totals() {
  local b o
  b=$(printf '%s\n' "$1" | sed -n 's/.*bytes=\([0-9][0-9]*\).*/\1/p')
  o=$(printf '%s\n' "$1" | sed -n 's/.*objects=\([0-9][0-9]*\).*/\1/p')
  [ -n "$b" ] && [ -n "$o" ] && echo "$b/$o"
}

# run_one NAME EXE LABEL MODE PRELOAD(0|1) EXPECTED(B/O) [VAR=VALUE...]
run_one() {
  local name=$1 exe=$2 label=$3 mode=$4 preload=$5 want=$6
  shift 6
  local f=$src/$name.c
  [ -f "$f" ] || f=$src/$name.cc
  runs=$((runs + 1))
  local out=$scratch/$name.$runs.out err=$scratch/$name.$runs.err dump=$scratch/dump.$name.$runs
  mkdir -p "$dump"
  local -a envs=(HEAPCHECK="$mode" HEAP_CHECK_DUMP_DIRECTORY="$dump")
  [ "$preload" = 1 ] && envs+=(LD_PRELOAD="$lib")
  envs+=("$@")
  # Only the scenario gets the variables (timeout and cat are not checked).
  (cd "$scratch" && timeout -k 5 "$tmo" env -u HEAPCHECK -u LD_PRELOAD -u PERFTOOLS_VERBOSE "${envs[@]}" \
      "$exe" 2>"$err" </dev/null | cat >"$out"; exit "${PIPESTATUS[0]}")
  local rc=$?

  # Expected per-process results and exit status.
  local -a want_all=("$want")
  # EXPECT-UNCHECKED: the main process runs no check (prints no result).
  [ -n "$(expect_line "$f" EXPECT-UNCHECKED)" ] && want_all=()
  while IFS= read -r c; do
    [ -n "$c" ] && want_all+=("$(totals "$c")")
  done < <(sed -n 's|^// EXPECT-CHILD: *||p' "$f")
  local want_sorted got_sorted
  want_sorted=
  [ ${#want_all[@]} -gt 0 ] && want_sorted=$(printf '%s\n' "${want_all[@]}" | sort | tr '\n' ' ')
  got_sorted=$( { sed -n 's/^SUMMARY: heapcheck: \([0-9]*\) bytes leaked in \([0-9]*\) allocations$/\1\/\2/p' "$err"
                  grep -c '^No leaks found for check "_main_"' "$err" | { read -r n; i=0; while [ "$i" -lt "$n" ]; do echo 0/0; i=$((i+1)); done; }
                } | sort | tr '\n' ' ')
  local want_rc
  want_rc=$(expect_line "$f" EXPECT-EXIT)
  if [ -z "$want_rc" ]; then if [ "${want#*/}" != 0 ]; then want_rc=1; else want_rc=0; fi; fi

  local why=""
  grep -q 'heap leak checker is active' "$err" || why="checker not active;"
  [ "$got_sorted" = "$want_sorted" ] || why="$why results [${got_sorted% }] != expected [${want_sorted% }];"
  [ "$rc" = "$want_rc" ] || why="$why exit $rc != $want_rc;"
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    grep -qxF -- "$line" "$out" || why="$why stdout lacks '$line';"
  done < <(sed -n 's|^// EXPECT-STDOUT: *||p' "$f")

  local desc="$name [$label${*:+ $*}]"
  if [ -z "$why" ]; then
    echo "PASS $desc: ${got_sorted% }"
    passed=$((passed + 1))
  else
    echo "FAIL $desc:$why"
    echo "---- stderr (last 60 lines) of $desc"
    tail -60 "$err"
    echo "---- stdout (last 5 lines)"
    tail -5 "$out"
    echo "----"
    failed=$((failed + 1))
  fi
}

# want_for FILE MODE -> the expected B/O of MODE (fails when MODE is not expected)
want_for() {
  local normal w
  normal=$(totals "$(expect_line "$1" EXPECT)")
  case $2 in
    normal) w=$normal ;;
    strict) w=$(totals "$(expect_line "$1" EXPECT-STRICT)"); w=${w:-$normal} ;;
    *) w=$(totals "$(expect_line "$1" "EXPECT-$(echo "$2" | tr a-z A-Z)")") ;;
  esac
  [ -n "$w" ] && echo "$w"
}

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in "$src"/*.c "$src"/*.cc; do
    grep -q '^// EXPECT: ' "$f" || continue
    n=$(basename "$f"); names+=("${n%.*}")
  done
fi

for name in "${names[@]}"; do
  f=$src/$name.c
  [ -f "$f" ] || f=$src/$name.cc
  if [ ! -f "$f" ]; then echo "FAIL $name: no source"; failed=$((failed + 1)); continue; fi
  exe=$bin/$name
  if [ ! -x "$exe" ]; then
    echo "SKIP $name: not built"
    skipped=$((skipped + 1))
    continue
  fi
  normal=$(totals "$(expect_line "$f" EXPECT)")
  if [ -z "$normal" ]; then echo "FAIL $name: no // EXPECT: line"; failed=$((failed + 1)); continue; fi
  for mode in $modes; do
    want=$(want_for "$f" "$mode") || continue
    run_one "$name" "$exe" "$mode" "$mode" 1 "$want"
  done
  while IFS= read -r e; do
    [ -z "$e" ] && continue
    var=${e%% *}
    run_one "$name" "$exe" normal normal 1 "$(totals "$e")" "$var"
  done < <(sed -n 's|^// EXPECT-ENV: *||p' "$f")
  for v in linked static; do
    if [ -x "$bin/${name}_$v" ]; then
      run_one "$name" "$bin/${name}_$v" "$v" normal 0 "$normal"
    fi
  done
  # gcc -static ... libheapcheck.a: every mode, as the preloaded runs.
  if [ -x "$bin/${name}_fullstatic" ]; then
    for mode in $modes; do
      want=$(want_for "$f" "$mode") || continue
      run_one "$name" "$bin/${name}_fullstatic" "fullstatic $mode" "$mode" 0 "$want"
    done
  fi
done

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
