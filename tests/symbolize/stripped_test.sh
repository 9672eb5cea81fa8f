#!/bin/sh
# stripped_test.sh PROG OBJCOPY NM READELF
#
# The symbolizer on stripped executables.  PROG (stripped_prog.c) prints
# "<label> <offset> <function> <file> <line> <module>" for two of its own
# functions.  Checked here:
#  1. a copy stripped with --strip-all still prints the module (its own path)
#     and the right module offset: nm's address on the unstripped file;
#  2. a stripped copy with .gnu_debuglink finds its debug file next to it and
#     in .debug/, and gets function names and file:line back;
#  3. a debug file that does not match the CRC is refused;
#  4. a stripped copy finds its debug file through the build-id under
#     HEAPCHECK_DEBUG_DIR/.build-id/xx/rest.debug.
set -u
prog=$1 objcopy=$2 nm=$3 readelf=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hc-stripped.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0 pass=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# Empty debug root: no system debug file can answer for our build-id.
mkdir "$tmp/noroot"
export HEAPCHECK_DEBUG_DIR="$tmp/noroot"

"$objcopy" --strip-all "$prog" "$tmp/stripped" || exit 1
"$objcopy" --only-keep-debug "$prog" "$tmp/prog.debug" || exit 1
"$objcopy" --strip-all --add-gnu-debuglink="$tmp/prog.debug" "$prog" "$tmp/linked" || exit 1
chmod +x "$tmp/stripped" "$tmp/linked"

nm_addr() { # the unstripped file's address of $1, as lower-case hex without leading zeros
  "$nm" "$prog" | awk -v s="$1" '$3 == s { sub(/^0+/, "", $1); print tolower($1); exit }'
}

# check RUN_OUTPUT MODULE WANT_NAMES
check() {
  out=$1 module=$2 names=$3
  for fn in symtest_global_function symtest_static_function; do
    line=$(printf '%s\n' "$out" | awk -v s="$fn" '$1 == s')
    if [ -z "$line" ]; then bad "$module: no line for $fn"; continue; fi
    set -- $line
    want=$(nm_addr "$fn")
    if [ "$2" = "$want" ]; then ok; else bad "$module: $fn offset $2, nm says $want"; fi
    if [ "$6" = "$module" ]; then ok; else bad "$fn module $6, expected $module"; fi
    if [ "$names" = yes ]; then
      if [ "$3" = "$fn" ]; then ok; else bad "$module: function $3, expected $fn"; fi
      case $4 in */stripped_prog.c) ok ;; *) bad "$module: file $4" ;; esac
      if [ "$5" -gt 0 ]; then ok; else bad "$module: line $5"; fi
    else
      if [ "$3" = "-" ]; then ok; else bad "$module: function $3 found without symbols"; fi
    fi
  done
}

echo "== unstripped"
out=$("$prog") || bad "unstripped run failed"
echo "$out"
check "$out" "$(readlink -f "$prog")" yes

echo "== stripped"
out=$("$tmp/stripped") || bad "stripped run failed"
echo "$out"
check "$out" "$tmp/stripped" no

echo "== .gnu_debuglink, same directory"
out=$("$tmp/linked") || bad "linked run failed"
echo "$out"
check "$out" "$tmp/linked" yes

echo "== .gnu_debuglink, .debug/ subdirectory"
mkdir "$tmp/.debug" && mv "$tmp/prog.debug" "$tmp/.debug/prog.debug"
out=$("$tmp/linked") || bad "linked run failed"
echo "$out"
check "$out" "$tmp/linked" yes

echo "== .gnu_debuglink, CRC mismatch"
printf 'x' >> "$tmp/.debug/prog.debug"
out=$("$tmp/linked") || bad "linked run failed"
echo "$out"
check "$out" "$tmp/linked" no
rm -rf "$tmp/.debug"

echo "== build-id"
id=$("$readelf" -n "$prog" | awk '/Build ID:/ { print $3; exit }')
if [ -n "$id" ]; then
  dir=$(printf '%s' "$id" | cut -c1-2) rest=$(printf '%s' "$id" | cut -c3-)
  mkdir -p "$tmp/root/.build-id/$dir"
  "$objcopy" --only-keep-debug "$prog" "$tmp/root/.build-id/$dir/$rest.debug" || exit 1
  out=$(HEAPCHECK_DEBUG_DIR="$tmp/root" "$tmp/stripped") || bad "stripped run failed"
  echo "$out"
  check "$out" "$tmp/stripped" yes
else
  echo "no build-id in $prog (linker without --build-id): skipped"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
