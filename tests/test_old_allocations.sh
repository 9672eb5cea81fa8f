#!/bin/sh
# test_old_allocations.sh - reports of old live samples while the program
# runs (profiler/heap_old.c; docs/profiling.md, "Old allocations") on
# examples/old_allocations (a cache nobody clears, and churn).
#
# usage: test_old_allocations.sh OLD_ALLOCATIONS
#
#  - old:1s:1s: reports every second; they name the cache's allocation sites
#    and never the churn (freed at once, never old);
#  - HEAPCHECK_LIVE_SIGNAL: the signal prints every live sample;
#  - HEAPCHECK_ACK_SIGNAL: after it, old reports lack the acknowledged early
#    entries and still show the newer ones;
#  - peak: snapshots at new high-water marks;
#  - json: the same reports as JSON documents (schema heapcheck-live-samples/1);
#  - bad values are warned about.
# The program runs for 4 s and signals itself at 1 s and 2.6 s; the ages
# (1 s) leave each expectation at least 0.4 s of margin.
set -u
. "$(dirname "$0")/expect.sh"
prog=$1
here=$(cd "$(dirname "$0")" && pwd)
expect_private_env hc_old
d=$dump
run() { cur=$1; shift; out=$(env "$@" 2>&1); rc=$?; }
blocks() { # blocks KIND-REGEX: the reports whose header matches, one per paragraph
  printf '%s\n' "$out" | awk -v re="$1" '
    /^heapcheck: / { on = ($0 ~ re); if (on) print ""; }
    on { print }'
}

run "old, live and ack" HEAPCHECK_SAMPLE_PARAMETER=4096 HEAPCHECK_REPORT="old:1s:1s,json:$d/old.json" \
  HEAPCHECK_LIVE_SIGNAL=10 HEAPCHECK_ACK_SIGNAL=12 "$prog" signals
expect_rc 0
has "cache entries after"
has_re '^heapcheck: old allocations: live sampled allocations older than 1\.000s'
has_re '^heapcheck: live: all live samples: ~[0-9]+ bytes in [0-9]+ call sites$'
has "heapcheck: old allocations: the ones older than 1.000s now are acknowledged"
all=$out
out=$(printf '%s\n' "$all" | sed -n '/now are acknowledged/q;p' | awk '
  /^heapcheck: / { on = /old allocations: live sampled/ } on')
cur="old reports before the acknowledgement"
has "cache_insert_early"
lacks "handle_request"
out=$(printf '%s\n' "$all" | sed -n '/now are acknowledged/,$p' | awk '
  /^heapcheck: / { on = /old allocations: live sampled/ } on')
cur="old reports after the acknowledgement"
has "(not acknowledged)"
has "cache_insert_late"
lacks "cache_insert_early"
lacks "handle_request"
out=$(printf '%s\n' "$all" | awk '/^heapcheck: / { on = /^heapcheck: live:/ } on')
cur="the live report"
has "cache_insert_early"
has_re '^#1: ~[0-9]+ bytes in ~[0-9]+ objects from [0-9]+ samples, ages [0-9.]+s to [0-9.]+s$'
out=$(python3 - "$d/old.json" <<'PY'
import json, sys
kinds = {}
for n, line in enumerate(open(sys.argv[1]), 1):
    d = json.loads(line)
    need = {"schema", "tool", "program", "pid", "time", "kind", "seq", "min_age_ms", "totals", "sites"}
    if set(d) != need or d["schema"] != "heapcheck-live-samples/1":
        print("FAIL line", n, sorted(d))
        continue
    for s in d["sites"]:
        if set(s) != {"stack_id", "samples", "est_bytes", "est_objects", "oldest_age_ms", "youngest_age_ms", "frames"}:
            print("FAIL site keys", sorted(s))
        if s["youngest_age_ms"] > s["oldest_age_ms"]:
            print("FAIL ages", s)
        if d["kind"] == "old" and s["youngest_age_ms"] < d["min_age_ms"]:
            print("FAIL young site in an old report", s["youngest_age_ms"])
    if d["totals"]["sites"] != len(d["sites"]):
        print("FAIL totals.sites")
    names = {f["function"] for s in d["sites"] for f in s["frames"][:1]}
    kinds.setdefault(d["kind"], set()).update(names)
for k in sorted(kinds):
    print(k, " ".join(sorted(n or "?" for n in kinds[k])))
PY
)
cur="json"
lacks "FAIL"
has_re '^old .*cache_insert_early'
has_re '^live .*cache_insert_early'
lacks_re '^old .*handle_request'

run "peak" HEAPCHECK_SAMPLE_PARAMETER=4096 HEAPCHECK_REPORT=peak "$prog"
expect_rc 0
has_re '^heapcheck: peak: new high-water mark, all live samples: ~[0-9]+ bytes'
has "cache_insert_late"
lacks "old allocations:"

run "bad values" HEAPCHECK_REPORT="old:xyz" HEAPCHECK_ACK_SIGNAL=12 "$prog"
expect_rc 0
has 'HEAPCHECK_REPORT: "old": needs AGE[:PERIOD]'
has "HEAPCHECK_ACK_SIGNAL needs HEAPCHECK_REPORT=old:AGE[:PERIOD]; ignored"
lacks "heapcheck: old allocations"

finish test_old_allocations
