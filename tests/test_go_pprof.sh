#!/bin/sh
# test_go_pprof.sh - Go's pprof (github.com/google/pprof) reads heapcheck's
# heap profiles and leak profiles, as google-pprof does (test_pprof.sh).
#
# usage: test_go_pprof.sh path/to/examples/heap_profile path/to/examples/leak_basic
#
# pprof is built offline from Debian's golang-github-google-pprof-dev with
# golang-go (GOPATH mode, no network), once, into $HC_BUILD_DIR/go-pprof.
#  - exact heap profile (HEAPCHECK_SAMPLE_PARAMETER=1): pprof's in-use bytes
#    per function are what the program allocated; the exit profile's
#    alloc_space still has the freed make_buffers and churn;
#  - sampled profile (32 KiB): pprof un-samples it to within 20% of the
#    program's own count;
#  - the leak profile of leak_basic: 128 bytes in new_node.
# Prints SKIP and exits 77 only when go or the pprof sources are missing.
set -u
hp=${1:-} lb=${2:-}
src=/usr/share/gocode/src/github.com/google/pprof
if ! command -v go >/dev/null 2>&1 || [ ! -f "$src/pprof.go" ]; then
  echo "SKIP: go (golang-go) or $src (golang-github-google-pprof-dev) missing"
  exit 77
fi
. "$(dirname "$0")/expect.sh"
cur=go-pprof
scratch_dir hc_gopprof
bindir=${HC_BUILD_DIR:-$tmp}/go-pprof
pprof=$bindir/pprof
if [ ! -x "$pprof" ]; then
  mkdir -p "$bindir"
  GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=$tmp/gocache GOFLAGS= CGO_ENABLED=0 \
    go build -o "$pprof.tmp" github.com/google/pprof >"$tmp/build" 2>&1 && mv "$pprof.tmp" "$pprof" ||
    { cat "$tmp/build"; fail "go build github.com/google/pprof failed"; exit 1; }
fi
unset HEAPCHECK HEAPPROFILE HEAPCHECK_REPORT LD_PRELOAD
# flat bytes of a function in `pprof -top -unit=B` (0 when absent)
flat() { awk -v f="$2" '$6 == f { v = $1; sub(/B$/, "", v); print v; found = 1 } END { if (!found) print 0 }' "$1"; }
top() { # top OUT SAMPLE_INDEX PROGRAM PROFILE
  "$pprof" -top -unit=B -sample_index="$2" "$3" "$4" >"$1" 2>"$1.err" || fail "pprof -top $4: $(cat "$1.err")"
  cat "$1"
}

# ---- exact ----
HEAPPROFILE=$tmp/ex HEAPCHECK_SAMPLE_PARAMETER=1 "$hp" >"$tmp/out" 2>"$tmp/err" || fail "heap_profile failed"
first=$(ls "$tmp"/ex.*.0001.heap 2>/dev/null | head -1)
last=$(ls "$tmp"/ex.*.0002.heap 2>/dev/null | head -1)
[ -n "$first" ] && [ -n "$last" ] || { fail "no profiles written: $(cat "$tmp/err")"; exit 1; }
top "$tmp/t1" inuse_space "$hp" "$first"
grep -q '^Type: inuse_space$' "$tmp/t1" || fail "no inuse_space type"
[ "$(flat "$tmp/t1" make_strings)" = 2000000 ] || fail "make_strings: $(flat "$tmp/t1" make_strings)"
[ "$(flat "$tmp/t1" make_buffers)" = 4000000 ] || fail "make_buffers: $(flat "$tmp/t1" make_buffers)"
[ "$(flat "$tmp/t1" make_tables)" = 6291456 ] || fail "make_tables: $(flat "$tmp/t1" make_tables)"
top "$tmp/t2" inuse_space "$hp" "$last"
[ "$(flat "$tmp/t2" make_buffers)" = 0 ] || fail "freed make_buffers still in use at exit"
top "$tmp/t3" alloc_space "$hp" "$last"
[ "$(flat "$tmp/t3" make_buffers)" = 4000000 ] || fail "alloc_space make_buffers: $(flat "$tmp/t3" make_buffers)"
grep -q ' churn$' "$tmp/t3" || fail "alloc_space lacks churn"

# ---- sampled ----
HEAPPROFILE=$tmp/hp HEAPCHECK_SAMPLE_PARAMETER=32768 HEAPCHECK_SAMPLE_SEED=7 "$hp" >"$tmp/out2" 2>"$tmp/err2" ||
  fail "sampled heap_profile failed"
truth=$(sed -n 's/^heap_profile: \([0-9]*\) bytes live.*/\1/p' "$tmp/out2")
s1=$(ls "$tmp"/hp.*.0001.heap 2>/dev/null | head -1)
[ -n "$s1" ] || { fail "no sampled profile"; exit 1; }
top "$tmp/t4" inuse_space "$hp" "$s1"
total=$(sed -n 's/^Showing nodes accounting for [0-9]*B, [0-9.]*% of \([0-9]*\)B total$/\1/p' "$tmp/t4")
echo "pprof total $total, program's count $truth"
[ -n "$total" ] && [ -n "$truth" ] && within "$total" "$truth" 20 || fail "sampled total '$total' not within 20% of '$truth'"

# ---- leak profile ----
HEAPCHECK=normal HEAP_CHECK_DUMP_DIRECTORY=$tmp "$lb" >"$tmp/out3" 2>"$tmp/err3"
[ $? = 1 ] || fail "leak_basic did not exit 1"
leak=$(ls "$tmp"/leak_basic.*._main_-end.heap 2>/dev/null | head -1)
[ -n "$leak" ] || { fail "no leak profile: $(cat "$tmp/err3")"; exit 1; }
top "$tmp/t5" space "$lb" "$leak"
[ "$(flat "$tmp/t5" new_node)" = 128 ] || fail "leak profile: new_node $(flat "$tmp/t5" new_node)"
grep -q ' build_and_forget_list$' "$tmp/t5" || fail "leak profile lacks build_and_forget_list"

finish_files
