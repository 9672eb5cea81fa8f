#!/usr/bin/env bash
# interpreters.sh - leak totals of interpreters and small tools under
# heapcheck (HEAPCHECK=normal and strict, preloaded) beside valgrind
# --leak-check=full on the same command: a tool, not a test (valgrind takes
# minutes); docs/validation.md records its table.
#   heapcheck: the "SUMMARY: heapcheck: B bytes leaked in O allocations" line
#              (0/0 when the check found none) and the "possibly lost" line;
#   valgrind:  "definitely lost" + "indirectly lost", and "possibly lost".
# Usage: tests/xval/interpreters.sh [-b BUILDDIR] [NAME...]
#   NAME: perl python3 tclsh lua ruby node gawk sqlite3 (default: all found)
set -u
build=build
if [ "${1:-}" = -b ]; then build=$2; shift 2; fi
root=$(cd "$(dirname "$0")/../.." && pwd)
lib=$(cd "$root" && cd "$build" && pwd)/libheapcheck.so
[ -f "$lib" ] || { echo "no $lib" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/hc_interp.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
printf 'puts hi\n' > "$work/hi.tcl"
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
  esac
}
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(perl python3 tclsh lua ruby node gawk sqlite3)
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
echo "| command | heapcheck normal | heapcheck strict | heapcheck possibly (normal) | valgrind definitely+indirectly | valgrind possibly | same? |"
echo "|---|---|---|---|---|---|---|"
for n in "${names[@]}"; do
  c=$(cmd_of "$n")
  [ -n "$c" ] || { echo "unknown name $n" >&2; continue; }
  prog=${c%% *}
  command -v "$prog" >/dev/null || { echo "| \`$c\` | not installed | | | | | |"; continue; }
  (cd "$work" && eval "env LD_PRELOAD=$lib HEAPCHECK=normal $c" >/dev/null 2>"$work/$n.normal" </dev/null)
  (cd "$work" && eval "env LD_PRELOAD=$lib HEAPCHECK=strict $c" >/dev/null 2>"$work/$n.strict" </dev/null)
  (cd "$work" && eval "valgrind --leak-check=full --log-file=$work/$n.vg $c" >/dev/null 2>&1 </dev/null)
  hn=$(hc_total "$work/$n.normal"); hs=$(hc_total "$work/$n.strict"); hp=$(hc_possible "$work/$n.normal")
  vd=$(vg_num "$work/$n.vg" 'definitely lost'); vi=$(vg_num "$work/$n.vg" 'indirectly lost')
  vp=$(vg_num "$work/$n.vg" 'possibly lost')
  vt="$(( ${vd%/*} + ${vi%/*} ))/$(( ${vd#*/} + ${vi#*/} ))"
  same=no
  [ "$hs" = "$vt" ] && same="yes (strict)"
  [ "$hn" = "$vt" ] && same=yes
  echo "| \`$c\` | $hn | $hs | $hp | $vt | $vp | $same |"
done
