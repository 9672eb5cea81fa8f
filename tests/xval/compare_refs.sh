#!/usr/bin/env bash
# compare_refs.sh - cross-validation tool (not a default test): runs every
# leak scenario (tests/scenarios) under three leak checkers and prints their
# totals side by side:
#   heapcheck  LD_PRELOAD=libheapcheck.so HEAPCHECK=normal on meson's binary:
#              the sum of "SUMMARY: heapcheck: B bytes leaked in O allocations"
#              over the checked processes (0/0 when none leaks); the same with
#              HEAPCHECK=strict is shown too (not judged: run_scenarios.sh
#              checks it against // EXPECT-STRICT:);
#   valgrind   valgrind --leak-check=full on the same binary: "definitely
#              lost" + "indirectly lost" summed over processes (a fork's child
#              has its own log); "possibly lost" is shown apart;
#   LSan       the scenario rebuilt with clang -fsanitize=leak -g (same -O2
#              -fno-builtin flags): "SUMMARY: LeakSanitizer: B byte(s) leaked
#              in O allocation(s)" summed over processes.
# Each column is compared with what the scenario says: // EXPECT: (+ every
# // EXPECT-CHILD:) for heapcheck, // REF-VALGRIND: or // REF-LSAN: where
# that tool legitimately differs (else the same as heapcheck's).  Status:
#   agree      all three totals are equal and as expected
#   explained  they differ, and each as the scenario documents (REF-* lines,
#              explained in docs/validation.md)
#   MISMATCH   some tool's total is not what the scenario says (details)
#
# Usage: compare_refs.sh [-b MESON_BUILD_DIR] [-o OUT_DIR] [-m] [NAME...]
#   -b  meson build dir (default: build-xval, then build, beside this tree)
#   -o  where LSan binaries, logs and table.md go (default: a temp dir)
#   -m  print only the markdown table at the end (for docs/validation.md)
# Needs valgrind and clang with the LSan runtime (Debian: libclang-rt-14-dev);
# a missing tool's column says "n/a".  Exits 1 when a row is MISMATCH.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
src=$root/tests/scenarios
build=""
out=""
md_only=0
while getopts "b:o:m" opt; do
  case $opt in
    b) build=$OPTARG ;;
    o) out=$OPTARG ;;
    m) md_only=1 ;;
    *) sed -n '2,30p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ -z "$build" ]; then
  for d in "$root/build-xval" "$root/build"; do
    [ -f "$d/build.ninja" ] && { build=$d; break; }
  done
fi
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no meson build dir (-b)" >&2; exit 2; }
bin=$build/tests/scenarios
lib=${HC_LIB:-$build/libheapcheck.so}
[ -f "$lib" ] || { echo "no $lib" >&2; exit 2; }
if [ -z "$out" ]; then out=$(mktemp -d "${TMPDIR:-/tmp}/hc_xval.XXXXXX") || exit 2; fi
mkdir -p "$out/lsan" "$out/logs"
out=$(cd "$out" && pwd)
ulimit -c 0 2>/dev/null
log() { [ "$md_only" = 1 ] || echo "$@" >&2; }

have_vg=0; command -v valgrind >/dev/null && have_vg=1
CLANG=${CLANG:-clang}; CLANGXX=${CLANGXX:-clang++}
have_lsan=0
if command -v "$CLANG" >/dev/null && echo 'int main(void){return 0;}' |
     "$CLANG" -x c -fsanitize=leak -o "$out/lsan/.probe" - 2>/dev/null; then
  have_lsan=1
fi

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in "$src"/*.c "$src"/*.cc; do
    grep -q '^// EXPECT: ' "$f" || continue
    n=$(basename "$f"); names+=("${n%.*}")
  done
fi

# ---- LSan builds (the modules and library plain, the programs instrumented) ----
cflags=(-g -O2 -fno-builtin -fno-omit-frame-pointer -D_GNU_SOURCE -I"$src")
if [ "$have_lsan" = 1 ]; then
  log "building LSan binaries in $out/lsan"
  "$CLANG" "${cflags[@]}" -fPIC -shared -o "$out/lsan/scen_module.so" "$src/scen_module.c"
  "$CLANG" "${cflags[@]}" -fPIC -shared -o "$out/lsan/scen_tls_module.so" "$src/scen_tls_module.c"
  "$CLANG" "${cflags[@]}" -fPIC -shared -o "$out/lsan/libscen_linked.so" "$src/scen_linked_lib.c"
  for n in "${names[@]}"; do
    if [ -f "$src/$n.c" ]; then
      extra=()
      case $n in root_linked_lib | lib_dtor_forget) extra=(-L"$out/lsan" -lscen_linked '-Wl,-rpath,$ORIGIN') ;; esac
      "$CLANG" -std=gnu11 "${cflags[@]}" -fsanitize=leak -pthread -o "$out/lsan/$n" "$src/$n.c" -ldl \
        "${extra[@]}" 2>"$out/logs/$n.lsan-build.log" || log "LSan build of $n failed"
    elif command -v "$CLANGXX" >/dev/null; then
      "$CLANGXX" -std=gnu++17 "${cflags[@]}" -fsanitize=leak -pthread -o "$out/lsan/$n" "$src/$n.cc" \
        2>"$out/logs/$n.lsan-build.log" || log "LSan build of $n failed"
    fi
  done
fi

# ---- helpers ----
field() { sed -n "s|^// $2: *||p" "$1" | head -1; }
bo() {  # "bytes=B objects=O" -> "B O"
  local b o
  b=$(printf '%s\n' "$1" | sed -n 's/.*bytes=\([0-9][0-9]*\).*/\1/p')
  o=$(printf '%s\n' "$1" | sed -n 's/.*objects=\([0-9][0-9]*\).*/\1/p')
  [ -n "$b" ] && echo "$b $o"
}
# expected heapcheck total: EXPECT plus every EXPECT-CHILD
hc_expect() {
  local f=$1 b=0 o=0 l x y
  while IFS= read -r l; do
    read -r x y <<<"$(bo "$l")"
    b=$((b + x)); o=$((o + y))
  done < <(sed -n 's|^// EXPECT\(-CHILD\)\{0,1\}: *||p' "$f")
  echo "$b/$o"
}

mismatches=0
rows=()
for n in "${names[@]}"; do
  f=$src/$n.c; [ -f "$f" ] || f=$src/$n.cc
  [ -x "$bin/$n" ] || { log "skip $n: not built in $bin"; continue; }
  want_hc=$(hc_expect "$f")
  r=$(bo "$(field "$f" REF-VALGRIND)"); want_vg=${r:+${r% *}/${r#* }}; want_vg=${want_vg:-$want_hc}
  r=$(bo "$(field "$f" REF-LSAN)");     want_ls=${r:+${r% *}/${r#* }}; want_ls=${want_ls:-$want_hc}
  d=$out/logs/$n; rm -rf "$d"; mkdir -p "$d"

  # heapcheck (stdout through a pipe, as run_scenarios.sh: the read waits
  # until every process holding it has ended, a daemon's child too)
  (cd "$d" && timeout -k 5 600 env HEAPCHECK=normal HEAP_CHECK_DUMP_DIRECTORY="$d" LD_PRELOAD="$lib" \
     "$bin/$n" 2>"$d/hc.err" </dev/null | cat >"$d/hc.out")
  got_hc=$(sed -n 's/^SUMMARY: heapcheck: \([0-9]*\) bytes leaked in \([0-9]*\) allocations$/\1 \2/p' "$d/hc.err" |
           awk '{b+=$1; o+=$2} END {printf "%d/%d", b, o}')
  # strict too (checks after global destructors, as valgrind and LSan do)
  (cd "$d" && timeout -k 5 600 env HEAPCHECK=strict HEAP_CHECK_DUMP_DIRECTORY="$d" LD_PRELOAD="$lib" \
     "$bin/$n" 2>"$d/hcs.err" </dev/null | cat >"$d/hcs.out")
  got_hcs=$(sed -n 's/^SUMMARY: heapcheck: \([0-9]*\) bytes leaked in \([0-9]*\) allocations$/\1 \2/p' "$d/hcs.err" |
            awk '{b+=$1; o+=$2} END {printf "%d/%d", b, o}')

  # valgrind
  got_vg=n/a; poss=""
  if [ "$have_vg" = 1 ]; then
    (cd "$d" && timeout -k 5 1200 valgrind --leak-check=full --log-file="$d/vg.%p.log" \
       "$bin/$n" 2>"$d/vg.err" </dev/null | cat >"$d/vg.out")
    got_vg=$(cat "$d"/vg.*.log 2>/dev/null | tr -d , |
      awk '/definitely lost:|indirectly lost:/ {b+=$(NF-4); o+=$(NF-1)} END {printf "%d/%d", b, o}')
    poss=$(cat "$d"/vg.*.log 2>/dev/null | tr -d , |
      awk '/possibly lost:/ {b+=$(NF-4); o+=$(NF-1)} END {if (o) printf "%d/%d", b, o}')
    grep -qh 'HEAP SUMMARY' "$d"/vg.*.log 2>/dev/null || got_vg=error
  fi

  # LSan
  got_ls=n/a
  if [ "$have_lsan" = 1 ] && [ -x "$out/lsan/$n" ]; then
    # log_path: one report file per process, and reports survive a closed stderr
    (cd "$d" && timeout -k 5 600 env LSAN_OPTIONS="exitcode=23:log_path=$d/lsan" "$out/lsan/$n" \
       2>"$d/lsan.err" </dev/null | cat >"$d/lsan.out")
    got_ls=$(cat "$d"/lsan.[0-9]* 2>/dev/null |
             sed -n 's/^SUMMARY: LeakSanitizer: \([0-9]*\) byte(s) leaked in \([0-9]*\) allocation(s)\.$/\1 \2/p' |
             awk '{b+=$1; o+=$2} END {printf "%d/%d", b, o}')
    # a tracer that could not attach, or any other LSan failure, is no result
    if grep -qs 'LeakSanitizer has encountered a fatal error' "$d"/lsan.[0-9]* "$d/lsan.err"; then got_ls=error; fi
  fi

  status=agree; why=""
  [ "$got_hc" = "$want_hc" ] || why="$why heapcheck $got_hc (expected $want_hc);"
  [ "$got_vg" = n/a ] || [ "$got_vg" = "$want_vg" ] || why="$why valgrind $got_vg (expected $want_vg);"
  [ "$got_ls" = n/a ] || [ "$got_ls" = "$want_ls" ] || why="$why LSan $got_ls (expected $want_ls);"
  if [ -n "$why" ]; then
    status=MISMATCH; mismatches=$((mismatches + 1))
  elif { [ "$got_vg" != n/a ] && [ "$got_vg" != "$got_hc" ]; } || { [ "$got_ls" != n/a ] && [ "$got_ls" != "$got_hc" ]; }; then
    status=explained
  fi
  log "$(printf '%-24s heapcheck %-16s strict %-16s valgrind %-16s%s LSan %-16s %s%s' "$n" "$got_hc" "$got_hcs" \
        "$got_vg" "${poss:+ (possibly $poss)}" "$got_ls" "$status" "${why:+ -$why}")"
  rows+=("| $n | $got_hc | $got_hcs | $got_vg${poss:+ (possibly lost $poss)} | $got_ls | $status${why:+:$why} |")
done

{
  echo "| scenario | heapcheck normal | heapcheck strict | valgrind definitely+indirectly | LSan | status |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "$(printf '%s\n' "${rows[@]}" | grep -c '| agree |') agree, $(printf '%s\n' "${rows[@]}" | grep -c '| explained |') explained, $mismatches mismatched"
} >"$out/table.md"
if [ "$md_only" = 1 ]; then cat "$out/table.md"; else echo; cat "$out/table.md"; echo; echo "logs and LSan binaries: $out"; fi
[ "$mismatches" -eq 0 ]
