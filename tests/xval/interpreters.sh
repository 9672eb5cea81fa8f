#!/usr/bin/env bash
# interpreters.sh - leak totals of interpreters and small tools under
# heapcheck (HEAPCHECK=normal and strict, preloaded) beside valgrind
# --leak-check=full on the same command: a tool, not a test (valgrind takes
# minutes); docs/validation.md records its table.
#   heapcheck: the "SUMMARY: heapcheck: B bytes leaked in O allocations" line
#              (0/0 when the check found none) and the "possibly lost" line;
#   valgrind:  "definitely lost" + "indirectly lost", and "possibly lost".
# gcc and g++ run with HEAPCHECK_NO_FOLLOW=1: only the driver is checked,
# as valgrind without --trace-children checks only the driver; cc1 and
# cc1plus are the compilers' own commands (what `gcc -###` prints), checked
# alone (the whole tree, with the launcher: process_trees.sh).
# -n adds a column: valgrind with --run-libc-freeres=no (valgrind otherwise
# frees glibc's buffers and the environment array before its check, and what
# only they pointed at becomes lost; heapcheck checks the program as it is).
# Usage: tests/xval/interpreters.sh [-b BUILDDIR] [-n] [NAME...]
#   NAME: perl python3 python3-big tclsh lua ruby node gawk sqlite3 gdb gcc cc1
#         g++ cc1plus (default: all found)
set -u
build=build
freeres_no=0
while :; do
  case ${1:-} in
    -b) build=$2; shift 2 ;;
    -n) freeres_no=1; shift ;;
    *) break ;;
  esac
done
root=$(cd "$(dirname "$0")/../.." && pwd)
lib=$(cd "$root" && cd "$build" && pwd)/libheapcheck.so
[ -f "$lib" ] || { echo "no $lib" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/hc_interp.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
printf 'puts hi\n' > "$work/hi.tcl"
# Real files to compile: one of heapcheck's own C files, and a C++ scenario.
cflags="-std=c11 -D_GNU_SOURCE -O2 -I$root/base -I$root/allocator -I$root/stacks -I$root/symbolizer -I$root/checker -I$root/include"
csrc=$root/checker/suppress.c
cxxsrc=$root/tests/scenarios/cxx_containers.cc
# The compiler proper's command line, as the driver would run it (-###).
proper() { # DRIVER ARGS... -> the cc1/cc1plus command, its output in $work
  "$@" -### 2>&1 | grep -m1 '/cc1' | sed -E -e 's/^ +//' -e "s#( )\"?-o\"? \"?[^\" ]*\"?#\\1-o $work/out.s#"
}
cmd_of() {
  case $1 in
    perl) echo "perl -e 'my %h; \$h{\$_} = \$_ * 2 for 1 .. 1000; print scalar(keys %h), qq(\\n)'" ;;
    python3) echo "/usr/bin/python3 -c 'import json; print(json.dumps({\"a\": [1, 2]}))'" ;;
    tclsh) echo "tclsh hi.tcl" ;;
    lua) echo "lua5.4 -e 'local t = {} for i = 1, 1000 do t[i] = tostring(i) end print(#t)'" ;;
    ruby) echo "ruby -e 'puts [1,2].map { |x| x * 2 }.inspect'" ;;
    node) echo "node -e 0" ;;
    gawk) echo "gawk 'BEGIN { for (i = 0; i < 1000; i++) a[i] = i; print length(a) }'" ;;
    sqlite3) echo "sqlite3 :memory: 'create table t(x); insert into t values (1); select * from t;'" ;;
    python3-big) echo "/usr/bin/python3 -c 'import json, re, collections; d = {str(i): [i, i * 2, \"x\" * (i % 7)] for i in range(20000)}; s = json.dumps(d); c = collections.Counter(re.findall(r\"[0-9]+\", s)); print(len(json.loads(s)), len(c))'" ;;
    gdb) echo "gdb -batch -ex quit" ;;
    gcc) echo "gcc $cflags -c $csrc -o $work/out.o" ;;
    cc1) proper gcc $cflags -c "$csrc" -o "$work/out.o" ;;
    g++) echo "g++ -O2 -c $cxxsrc -o $work/out.o" ;;
    cc1plus) proper g++ -O2 -c "$cxxsrc" -o "$work/out.o" ;;
  esac
}
hc_env_of() { # only the driver is checked (see above)
  case $1 in gcc | g++) echo HEAPCHECK_NO_FOLLOW=1 ;; esac
}
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(perl python3 python3-big tclsh lua ruby node gawk sqlite3 gdb gcc cc1 g++ cc1plus)
hc_total() { # FILE -> bytes/objects
  local s
  s=$(sed -n 's/^SUMMARY: heapcheck: \([0-9]*\) bytes leaked in \([0-9]*\) allocations.*/\1\/\2/p' "$1" | tail -1)
  if [ -z "$s" ]; then grep -q 'No leaks found' "$1" && s=0/0 || s="n/a"; fi
  echo "$s"
}
hc_possible() {
  local s
  s=$(sed -n 's/^heapcheck: possibly lost: \([0-9]*\) bytes in \([0-9]*\) objects.*/\1\/\2/p' "$1" | tail -1)
  echo "${s:-0/0}"
}
vg_num() { # FILE KIND -> bytes/blocks
  local s
  s=$(sed -n "s/.*$2: \([0-9,]*\) bytes in \([0-9,]*\) blocks.*/\1\/\2/p" "$1" | tr -d , | tail -1)
  echo "${s:-0/0}"
}
if [ $freeres_no = 1 ]; then
  echo "| command | heapcheck normal | heapcheck strict | heapcheck possibly (normal) | valgrind definitely+indirectly | valgrind possibly | valgrind --run-libc-freeres=no: definitely+indirectly, possibly | same? |"
  echo "|---|---|---|---|---|---|---|---|"
else
  echo "| command | heapcheck normal | heapcheck strict | heapcheck possibly (normal) | valgrind definitely+indirectly | valgrind possibly | same? |"
  echo "|---|---|---|---|---|---|---|"
fi
vg_lost() { # FILE -> definitely + indirectly lost, bytes/blocks
  local d i
  d=$(vg_num "$1" 'definitely lost'); i=$(vg_num "$1" 'indirectly lost')
  echo "$(( ${d%/*} + ${i%/*} ))/$(( ${d#*/} + ${i#*/} ))"
}
for n in "${names[@]}"; do
  c=$(cmd_of "$n")
  [ -n "$c" ] || { echo "unknown name $n" >&2; continue; }
  prog=${c%% *}
  prog=${prog//\"/}
  command -v "$prog" >/dev/null || { echo "| $n | not installed | | | | | |"; continue; }
  e=$(hc_env_of "$n")
  (cd "$work" && eval "env LD_PRELOAD=$lib HEAPCHECK=normal $e $c" >/dev/null 2>"$work/$n.normal" </dev/null)
  (cd "$work" && eval "env LD_PRELOAD=$lib HEAPCHECK=strict $e $c" >/dev/null 2>"$work/$n.strict" </dev/null)
  (cd "$work" && eval "valgrind --leak-check=full --log-file=$work/$n.vg $c" >/dev/null 2>&1 </dev/null)
  hn=$(hc_total "$work/$n.normal"); hs=$(hc_total "$work/$n.strict"); hp=$(hc_possible "$work/$n.normal")
  vt=$(vg_lost "$work/$n.vg"); vp=$(vg_num "$work/$n.vg" 'possibly lost')
  same=no
  [ "$hs" = "$vt" ] && same="yes (strict)"
  [ "$hn" = "$vt" ] && same=yes
  shown=$c
  case $n in
    cc1) shown="cc1 as gcc -### runs it for $csrc" ;;
    cc1plus) shown="cc1plus as g++ -### runs it for $cxxsrc" ;;
  esac
  shown=${shown//$root\//}
  shown=${shown//$work\//}
  if [ $freeres_no = 1 ]; then
    (cd "$work" && eval "valgrind --leak-check=full --run-libc-freeres=no --log-file=$work/$n.vgn $c" >/dev/null 2>&1 </dev/null)
    vn=$(vg_lost "$work/$n.vgn"); vnp=$(vg_num "$work/$n.vgn" 'possibly lost')
    [ "$same" = no ] && [ "$hn" = "$vn" ] && same="yes (--run-libc-freeres=no)"
    echo "| \`$shown\` | $hn | $hs | $hp | $vt | $vp | $vn, $vnp | $same |"
  else
    echo "| \`$shown\` | $hn | $hs | $hp | $vt | $vp | $same |"
  fi
done
