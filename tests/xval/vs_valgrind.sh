#!/usr/bin/env bash
# vs_valgrind.sh - the verdict scenarios (tests/scenarios) run under heapcheck
# and under valgrind in the same test, and their numbers compared:
#   heapcheck  LD_PRELOAD=libheapcheck.so HEAPCHECK=normal HEAP_CHECK_MAX_LEAKS=0:
#              direct = the "Leak of B bytes in O objects" records,
#              indirect = the "Indirect leak of ..." records,
#              possibly = the "possibly lost" line (reached only through interior pointers),
#              possibly records = the "Possibly lost B bytes in O objects" records;
#   valgrind   valgrind --leak-check=full: "definitely lost", "indirectly lost", "possibly lost".
# A scenario passes when direct = definitely lost, indirect = indirectly lost
# (bytes and blocks), and, for scenarios with a "// COMPARE-POSSIBLE" line,
# possibly = possibly lost, and the possibly-lost records add up to it and are
# as many as valgrind's possibly-lost loss records, while
# HEAPCHECK_SHOW_POSSIBLY_LOST=0 prints none of them and the same verdict;
# with "// COMPARE-RECORDS" also the number of direct
# records equals valgrind's definitely-lost loss records; with
# "// EXPECT-FIRST-RECORD: line" the first record of a default run (20
# records at most) is that line; "// VALGRIND-ARGS: options" adds options to
# valgrind's command (--run-libc-freeres=no: the program as it is at exit,
# before glibc's clean-up frees the environment array).  Each result line
# prints both tools' numbers (docs/validation.md records them).
# Usage: vs_valgrind.sh NAME...     Environment: HC_LIB, SC_BIN_DIR, SC_SRC_DIR.
# Exits 77 (skipped) without valgrind.
set -u
lib=${HC_LIB:?}; bin=${SC_BIN_DIR:?}; src=${SC_SRC_DIR:?}
command -v valgrind >/dev/null || { echo "SKIP: valgrind not installed"; exit 77; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/hc_vsvg.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT
ulimit -c 0 2>/dev/null
fail=0
# sum_records FILE REGEX -> "bytes/objects/records"
sum_records() {
  awk -v re="$2" '$0 ~ re { b += $(NF-6); o += $(NF-3); n++ } END { printf "%d/%d/%d", b, o, n }' "$1"
}
# compare: runs valgrind on $exe and sets $why to what differs from ours
# (empty when all agrees).
compare() {
  local vgargs
  vgargs=$(sed -n 's|^// VALGRIND-ARGS: *||p' "$f")
  # shellcheck disable=SC2086 # vgargs: options, split on spaces
  (cd "$scratch" && valgrind --leak-check=full $vgargs --log-file="$vg" "$exe" >/dev/null 2>&1 </dev/null)
  vgnum() { sed -n "s/.*$1: \([0-9,]*\) bytes in \([0-9,]*\) blocks.*/\1\/\2/p" "$vg" | tr -d , | tail -1; }
  vd=$(vgnum 'definitely lost'); vi=$(vgnum 'indirectly lost'); vp=$(vgnum 'possibly lost')
  vd=${vd:-0/0}; vi=${vi:-0/0}; vp=${vp:-0/0}; p=${p:-0/0}
  vrec=$(grep -c 'are definitely lost in loss record' "$vg")
  vprec=$(grep -c 'are possibly lost in loss record' "$vg")
  why=""
  [ "${d%/*}" = "$vd" ] || why="$why direct ${d%/*} != valgrind definitely $vd;"
  [ "${i%/*}" = "$vi" ] || why="$why indirect ${i%/*} != valgrind indirectly $vi;"
  if grep -q '^// COMPARE-POSSIBLE' "$f"; then
    [ "$p" = "$vp" ] || why="$why possibly $p != valgrind $vp;"
    [ "$vp" = 0/0 ] || [ "${pr%/*}" = "$vp" ] || why="$why possibly-lost records add up to ${pr%/*}, not $vp;"
    [ "${pr##*/}" = "$vprec" ] || why="$why ${pr##*/} possibly-lost records != valgrind's $vprec;"
    (cd "$scratch" && env -u HEAPCHECK LD_PRELOAD="$lib" HEAPCHECK=normal HEAP_CHECK_MAX_LEAKS=0 \
       HEAPCHECK_SHOW_POSSIBLY_LOST=0 HEAP_CHECK_DUMP_DIRECTORY="$scratch" "$exe" >/dev/null 2>"$hc.hide" </dev/null)
    hide_rc=$?
    [ "$hide_rc" = "$hc_rc" ] || why="$why exit $hide_rc with HEAPCHECK_SHOW_POSSIBLY_LOST=0, $hc_rc without;"
    ! grep -q '^Possibly lost' "$hc.hide" || why="$why HEAPCHECK_SHOW_POSSIBLY_LOST=0 still printed records;"
    grep -q '^heapcheck: possibly lost:' "$hc.hide" || [ "$p" = 0/0 ] || why="$why HEAPCHECK_SHOW_POSSIBLY_LOST=0 dropped the summary line;"
    # HEAP_CHECK_IDENTIFY_LEAKS=1 names every possibly lost object too (then aborts: a leak).
    (cd "$scratch" && env -u HEAPCHECK LD_PRELOAD="$lib" HEAPCHECK=normal HEAP_CHECK_IDENTIFY_LEAKS=1 \
       HEAP_CHECK_DUMP_DIRECTORY="$scratch" "$exe" >/dev/null 2>"$hc.ident" </dev/null)
    nid=$(grep -c '^possibly lost [0-9]* byte object 0x' "$hc.ident")
    [ "$nid" = "${p#*/}" ] || why="$why HEAP_CHECK_IDENTIFY_LEAKS=1 named $nid possibly lost objects, not ${p#*/};"
  fi
  if grep -q '^// COMPARE-RECORDS' "$f"; then
    [ "${d##*/}" = "$vrec" ] || why="$why direct records ${d##*/} != valgrind's $vrec;"
  fi
  first=$(sed -n 's|^// EXPECT-FIRST-RECORD: *||p' "$f")
  if [ -n "$first" ]; then
    # With the default number of records (20): the first one printed.
    (cd "$scratch" && env -u HEAPCHECK LD_PRELOAD="$lib" HEAPCHECK=normal HEAP_CHECK_DUMP_DIRECTORY="$scratch" \
       "$exe" >/dev/null 2>"$hc.default" </dev/null)
    got=$(sed -n '/^The [0-9]* largest leaks:$/{n;p;q}' "$hc.default")
    [ "$got" = "$first" ] || why="$why first record '$got' != '$first';"
  fi
}
for name in "$@"; do
  exe=$bin/$name
  f=$src/$name.c; [ -f "$f" ] || f=$src/$name.cc
  [ -x "$exe" ] || { echo "FAIL $name: not built"; fail=1; continue; }
  hc=$scratch/$name.hc vg=$scratch/$name.vg
  (cd "$scratch" && env -u HEAPCHECK LD_PRELOAD="$lib" HEAPCHECK=normal HEAP_CHECK_MAX_LEAKS=0 \
     HEAP_CHECK_DUMP_DIRECTORY="$scratch" "$exe" >/dev/null 2>"$hc" </dev/null)
  hc_rc=$?
  grep -q 'heap leak checker is active' "$hc" || { echo "FAIL $name: checker not active"; fail=1; continue; }
  # "Leak of 400 bytes in 4 objects allocated from:" (awk fields from the end)
  d=$(sum_records "$hc" '^Leak of [0-9]+ bytes in [0-9]+ objects allocated from:$')
  i=$(sum_records "$hc" '^Indirect leak of [0-9]+ bytes in [0-9]+ objects allocated from:$')
  p=$(sed -n 's/^heapcheck: possibly lost: \([0-9]*\) bytes in \([0-9]*\) objects.*/\1\/\2/p' "$hc" | tail -1)
  pr=$(sum_records "$hc" '^Possibly lost [0-9]+ bytes in [0-9]+ objects allocated from:$')
  # valgrind's numbers, once more when they differ: valgrind's own count
  # varied once in a loaded run (leak_hidden_owner: indirectly lost 887808
  # where the scenario leaks 1024000, cause not known), so a difference is
  # checked against a second valgrind run before the test fails; a PASS
  # after a rerun says what the first run said.  Twice more: a loaded CI
  # run once saw long_list's 99 999 indirect nodes split by valgrind into
  # 54 168 indirectly and 45 831 possibly lost in two runs in a row.
  rerun=""
  compare
  for again in 1 2; do
    [ -n "$why" ] || break
    rerun="$rerun (valgrind rerun $again: the run before said:$why)"
    compare
  done
  leaked=$(( ${d%%/*} + ${i%%/*} ))
  want_rc=0; [ "$leaked" -gt 0 ] && want_rc=1
  [ "$hc_rc" = "$want_rc" ] || why="$why exit $hc_rc != $want_rc;"
  vgargs=$(sed -n 's|^// VALGRIND-ARGS: *||p' "$f")
  line="$name: heapcheck direct ${d%/*} (${d##*/} records) indirect ${i%/*} possibly $p (${pr##*/} records) | valgrind${vgargs:+ $vgargs} definitely $vd ($vrec records) indirectly $vi possibly $vp ($vprec records)"
  if [ -z "$why" ]; then echo "PASS $line$rerun"; else echo "FAIL $line:$why"; sed -n '/^Leak check/,/^SUMMARY/p' "$hc" | grep -v '^	@' | head -40; grep -E 'lost|reachable' "$vg"; fail=1; fi
done
exit $fail
