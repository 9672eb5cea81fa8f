#!/bin/sh
# test_report_formats.sh - HEAPCHECK_REPORT's files and the launcher's
# --gen-suppressions (docs/report-formats.md), on examples/report_formats
# (two legacy leaks at exit, one inside the scoped check "request"; "new"
# adds a leak from new_feature) and examples/heap_profile.
#
# usage: test_report_formats.sh LAUNCHER REPORT_FORMATS HEAP_PROFILE
#
#  - json/sarif/svg/folded of both checks: validated by check_report_formats.py
#    (JSON against the documented schema, SARIF's code-scanning fields, the
#    SVG as self-contained XML whose frames and total are the JSON report's,
#    folded stacks equal to its records), and against the text report;
#  - SARIF locations relative to HEAPCHECK_SOURCE_ROOT point at the lines
#    that allocate;
#  - "suppressions" prints one under each record; --gen-suppressions writes
#    them, a rerun with them exits 0, a new leak fails alone;
#  - files are created 0600, a symlink in their place is not followed;
#  - without the checker, svg/folded are the live heap at exit;
#  - bad items are warned about by name.
set -u
. "$(dirname "$0")/expect.sh"
launcher=$1 prog=$2 heapprof=$3
here=$(cd "$(dirname "$0")" && pwd)
check="python3 $here/check_report_formats.py"
src=$(cd "${HC_SOURCE_DIR:-$here/..}" && pwd -P)
expect_private_env hc_formats
d=$dump

run() { # run DESCRIPTION ENV... -- PROGRAM ARGS...
  cur=$1
  shift
  out=$(env "$@" 2>&1)
  rc=$?
}
pycheck() { # pycheck WHAT ARGS...: the validator's verdict is one check
  checks=$((checks + 1))
  _o=$($check "$@" 2>&1)
  _r=$?
  printf '%s\n' "$_o" | sed 's/^/    /'
  [ "$_r" = 0 ] || { out=$_o; fail "check_report_formats.py $1 failed"; }
}

# ---- every format of both checks ----
run "all formats" HEAPCHECK=normal HEAPCHECK_SOURCE_ROOT="$src" \
  HEAPCHECK_REPORT="json:$d/r.json,sarif:$d/r.sarif,svg:$d/r.%n.svg,folded:$d/r.%n.folded" "$prog"
expect_rc 1
has "Leak check request detected leaks of 48 bytes in 1 objects"
has "Leak check _main_ detected leaks of"
for f in r.json r.sarif r._main_.svg r.request.svg r._main_.folded r.request.folded; do
  checks=$((checks + 1))
  [ -s "$d/$f" ] || fail "$f not written"
  checks=$((checks + 1))
  [ "$(stat -c %a "$d/$f" 2>/dev/null)" = 600 ] || fail "$f has mode $(stat -c %a "$d/$f")"
done
pycheck json "$d/r.json"
pycheck sarif "$d/r.sarif"
pycheck svg "$d/r._main_.svg" "$d/r.json" _main_
pycheck svg "$d/r.request.svg" "$d/r.json" request
pycheck folded "$d/r._main_.folded" "$d/r.json" _main_
pycheck folded "$d/r.request.folded" "$d/r.json" request
# The checker's own start_main (it runs main) is left out of every format.
for f in r.json r.sarif r._main_.svg r._main_.folded; do
  checks=$((checks + 1))
  grep -qE '(^|[^_a-z])start_main' "$d/$f" && fail "$f names the checker's start_main"
  checks=$((checks + 1))
  grep -qE '(^|[^_a-z])main([^_a-z]|$)' "$d/$f" || fail "$f does not name main"
done
# Two documents, in check order, with the text report's totals.
out=$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    t = d["totals"]
    print(d["check"], d["mode"], t["leaked_bytes"], t["leaked_objects"], d["pid"] > 0,
          " ".join(sorted({f["function"] or "?" for r in d["leaks"] for f in r["frames"][:1]})))
' "$d/r.json")
cur="json content"
count_re '.' 2
has_re '^request normal 48 1 True handle_request$'
has_re '^_main_ normal 551 5 True handle_request legacy_buffer legacy_cache_entry$'
before "request" "_main_"
# SARIF: one run per check; results on the allocating lines, relative to the root.
out=$(python3 -c '
import json, sys
log = json.load(open(sys.argv[1]))
for run in log["runs"]:
    print("run", run["automationDetails"]["id"].split("/")[1], len(run["results"]), run["originalUriBaseIds"]["%SRCROOT%"]["uri"])
    for r in run["results"]:
        pl = r["locations"][0]["physicalLocation"]
        print(r["ruleId"], r["level"], pl["artifactLocation"]["uri"], pl["artifactLocation"].get("uriBaseId"),
              pl["region"]["startLine"], r["message"]["text"])
' "$d/r.sarif")
cur="sarif content"
has_re "^run request 1 file://.*/$"
has_re "^run _main_ [0-9]+ file://"
line_of() { grep -n "$1" "$src/examples/report_formats.c" | head -1 | cut -d: -f1; }
l_cache=$(line_of 'char \*e = malloc(200)')
l_req=$(line_of 'sink = malloc(48)')
l_buf=$(line_of 'sink = calloc(1, 100')
has "direct-leak error examples/report_formats.c %SRCROOT% $l_cache Leak of 200 bytes in 1 objects allocated from legacy_cache_entry"
has "direct-leak error examples/report_formats.c %SRCROOT% $l_req Leak of 48 bytes"
has_re "^direct-leak error examples/report_formats.c %SRCROOT% $l_buf Leak of 10[0-2] bytes"

# ---- a symlink where a file is to be written is replaced, not followed ----
: >"$d/target"
ln -s "$d/target" "$d/link.json"
run "symlink" HEAPCHECK=normal HEAPCHECK_REPORT="json:$d/link.json" "$prog"
checks=$((checks + 1))
[ -s "$d/target" ] && fail "the symlink's target was written"
checks=$((checks + 1))
[ -L "$d/link.json" ] && fail "the symlink is still there"
pycheck json "$d/link.json"

# ---- suppressions under each record ----
run "print suppressions" HEAPCHECK=normal HEAPCHECK_REPORT=suppressions "$prog"
expect_rc 1
has "Suppression: leak:^handle_request\$"
has "Suppression: leak:^legacy_cache_entry\$"
has "Suppression: leak:^legacy_buffer\$"

# ---- adopting the checker on a legacy code base ----
run "gen-suppressions" "$launcher" --gen-suppressions="$d/legacy.supp" "$prog"
expect_rc 1
out=$(cat "$d/legacy.supp")
cur="generated file"
count_re '.' 3
has_re '^leak:\^handle_request\$$'
has_re '^leak:\^legacy_cache_entry\$$'
has_re '^leak:\^legacy_buffer\$$'
checks=$((checks + 1))
[ "$(stat -c %a "$d/legacy.supp")" = 600 ] || fail "legacy.supp has mode $(stat -c %a "$d/legacy.supp")"
run "rerun with them" "$launcher" --suppressions="$d/legacy.supp" "$prog"
expect_rc 0
lacks "detected leaks"
has "Suppressions used:"
run "a new leak" "$launcher" --suppressions="$d/legacy.supp" "$prog" new
expect_rc 1
has "Leak check _main_ detected leaks of 333 bytes in 1 objects"
has "new_feature"
lacks "legacy_buffer /"
lacks "Leak of 200 bytes"
# the list is emptied by each --gen-suppressions run, not appended to
run "gen again" "$launcher" --gen-suppressions="$d/legacy.supp" "$prog" new
out=$(cat "$d/legacy.supp")
cur="regenerated file"
count_re '.' 4
count_re 'legacy_buffer' 1
has 'leak:^new_feature$'
run "same file twice" "$launcher" --suppressions="$d/legacy.supp" --gen-suppressions="$d/legacy.supp" "$prog"
expect_rc 2
has "name the same file"

# ---- the live heap without the checker ----
run "profile graphs" HEAPCHECK_SAMPLE_PARAMETER=1 HEAPCHECK_REPORT="svg:$d/heap.svg,folded:$d/heap.folded" "$heapprof"
expect_rc 0
pycheck profile-svg "$d/heap.svg" make_tables make_strings main
out=$(cat "$d/heap.folded")
cur="profile folded"
has_re '^.*main;make_tables [0-9]+$'
has_re 'make_strings [0-9]+$'
lacks "make_buffers"

# ---- HEAP_PROFILE_FORMAT: graphs next to the explicit and exit dumps ----
run "profile format" HEAPCHECK_SAMPLE_PARAMETER=1 HEAPPROFILE="$d/hp" HEAP_PROFILE_FORMAT=heap,svg,folded,bogus "$heapprof"
expect_rc 0
has 'HEAP_PROFILE_FORMAT="heap,svg,folded,bogus": "bogus" is not heap, svg or folded; ignored'
first=$(ls "$d"/hp.*.0001.heap 2>/dev/null | head -1)
base=${first%.heap}
for ext in heap svg folded; do
  checks=$((checks + 1))
  [ -s "$base.$ext" ] || fail "$base.$ext not written"
done
pycheck profile-svg "$base.svg" make_tables make_buffers make_strings
# lines of the same frames add up (a compiler may unroll a loop into several call sites)
out=$(awk '{ v = $NF; $NF = ""; sub(/ $/, ""); sum[$0] += v } END { for (k in sum) print k, sum[k] }' "$base.folded")
cur="profile format folded"
has_re '^__libc_start_call_main;main;make_tables 6291456$'
has_re '^__libc_start_call_main;main;make_buffers 4000000$'
has_re '^__libc_start_call_main;main;make_strings 2000000$'

# ---- bad input ----
run "bad items" HEAPCHECK=normal HEAPCHECK_REPORT="json,bogus:1,top:3" "$prog"
has 'HEAPCHECK_REPORT: "json": needs a file name'
has 'HEAPCHECK_REPORT: "bogus": unknown item'
has "detected leaks"
run "unwritable" HEAPCHECK=normal HEAPCHECK_REPORT="json:$d/no/such/dir/r.json" "$prog"
expect_rc 1
has "heapcheck: error: cannot create JSON report file $d/no/such/dir/r.json"

finish test_report_formats
