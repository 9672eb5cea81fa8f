#!/bin/sh
# test_pprof.sh - google-pprof reads heapcheck's heap profiles.
#
# usage: test_pprof.sh path/to/examples/heap_profile
#
# Runs examples/heap_profile with HEAPPROFILE twice:
#  - sampled (HEAPCHECK_SAMPLE_PARAMETER=32768, fixed seed): the profile
#    says heap_v2/32768, pprof un-samples it, names the three call sites and
#    arrives at a total within 20% of the program's own count; the exit
#    profile still has the freed site in --alloc_space but not in use;
#  - exact (HEAPCHECK_SAMPLE_PARAMETER=1): the profile says heapprofile and
#    pprof's bytes per call site are exactly what the program allocated.
# Prints SKIP and exits 77 only when google-pprof is missing.
set -u
exe=${1:-}
PPROF=${PPROF:-/usr/bin/google-pprof}
if [ ! -x "$PPROF" ]; then
  echo "SKIP: $PPROF not found"
  exit 77
fi
if [ -z "$exe" ] || [ ! -x "$exe" ]; then
  echo "FAIL: no example program given"
  exit 1
fi
. "$(dirname "$0")/expect.sh"
cur=pprof
scratch_dir hc_pprof
has() { file_has "$@"; }
lacks() { file_lacks "$@"; }
# flat bytes pprof --text --show_bytes gives a function (0 when absent)
flat() { awk -v f="$2" '$6 == f { print $1; found = 1 } END { if (!found) print 0 }' "$1"; }

# ---- sampled ----
HEAPPROFILE=$tmp/hp HEAPCHECK_SAMPLE_PARAMETER=32768 HEAPCHECK_SAMPLE_SEED=7 "$exe" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 0 ] || fail "example exited with $rc"
cat "$tmp/out"
truth=$(sed -n 's/^heap_profile: \([0-9]*\) bytes live.*/\1/p' "$tmp/out")
[ -n "$truth" ] || { fail "no truth line from the example"; truth=1; }
has "$tmp/err" "Starting tracking the heap"
first=$(sed -n 's/^Dumping heap profile to \(.*\.0001\.heap\) (all sites live)$/\1/p' "$tmp/err")
last=$(sed -n 's/^Dumping heap profile to \(.*\.0002\.heap\) (Exiting, .* in use)$/\1/p' "$tmp/err")
case "$first" in "$tmp"/hp.[0-9]*.0001.heap) ;; *) fail "first dump named '$first'" ;; esac
[ -n "$last" ] || fail "no exit dump"
[ -f "$first" ] || fail "no file $first"
head -n1 "$first" | grep -q '^heap profile: *[0-9]*: *[0-9]* \[ *[0-9]*: *[0-9]*\] @ heap_v2/32768$' ||
  fail "header: $(head -n1 "$first")"
grep -q '^MAPPED_LIBRARIES:$' "$first" || fail "no MAPPED_LIBRARIES in $first"

"$PPROF" --text --show_bytes "$exe" "$first" >"$tmp/t1" 2>"$tmp/e1" || fail "pprof failed: $(cat "$tmp/e1")"
cat "$tmp/t1"
has "$tmp/e1" "Adjusting heap profiles for 1-in-32768 sampling rate"
for f in make_strings make_buffers make_tables main; do has "$tmp/t1" " $f\$"; done
total=$(sed -n 's/^Total: \([0-9]*\) B$/\1/p' "$tmp/t1")
echo "pprof total $total, program's count $truth"
[ -n "$total" ] && within "$total" "$truth" 20 || fail "pprof total '$total' is not within 20% of $truth"
# 1 MiB objects at a 32 KiB interval are all but certainly sampled
within "$(flat "$tmp/t1" make_tables)" 6291456 5 || fail "make_tables: $(flat "$tmp/t1" make_tables) bytes"

"$PPROF" --text --show_bytes "$exe" "$last" >"$tmp/t2" 2>"$tmp/e2" || fail "pprof failed on $last"
"$PPROF" --text --show_bytes --alloc_space "$exe" "$last" >"$tmp/t3" 2>"$tmp/e3" || fail "pprof --alloc_space failed"
has "$tmp/t2" " make_tables\$"
lacks "$tmp/t2" " make_buffers\$"
has "$tmp/t3" " make_buffers\$"
has "$tmp/t3" " churn\$"

# ---- exact ----
HEAPPROFILE=$tmp/ex HEAPCHECK_SAMPLE_PARAMETER=1 "$exe" >"$tmp/out2" 2>"$tmp/err2" || fail "exact run failed"
exact=$(sed -n 's/^Dumping heap profile to \(.*\.0001\.heap\) (all sites live)$/\1/p' "$tmp/err2")
head -n1 "$exact" | grep -q '@ heapprofile$' || fail "exact header: $(head -n1 "$exact")"
"$PPROF" --text --show_bytes "$exe" "$exact" >"$tmp/t4" 2>"$tmp/e4" || fail "pprof failed on $exact"
cat "$tmp/t4"
lacks "$tmp/e4" "Adjusting heap profiles"
[ "$(flat "$tmp/t4" make_strings)" = 2000000 ] || fail "exact make_strings: $(flat "$tmp/t4" make_strings)"
[ "$(flat "$tmp/t4" make_buffers)" = 4000000 ] || fail "exact make_buffers: $(flat "$tmp/t4" make_buffers)"
[ "$(flat "$tmp/t4" make_tables)" = 6291456 ] || fail "exact make_tables: $(flat "$tmp/t4" make_tables)"

finish_files
