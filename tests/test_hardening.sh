#!/bin/sh
# test_hardening.sh FIXTURE - issue 11, "Hardening": heap errors caught
# outside checker mode too (allocator/free_list.h).  Each case of
# tests/hardening_fixture.c runs plain and with HEAPCHECK=normal; the
# fixture must die of SIGABRT with the one-line message naming the pointer
# and a caller inside the fixture function the case announced; the clean
# case (legal programs that imitate free lists) must exit 0 in both modes.
# HARDENING (second argument): "disabled" for a -Dhardening=disabled build
# (a measurement switch, tests/bench/harden_cost.sh): only checker mode's
# double frees and realloc (its allocation records, not the hardening) and
# the clean cases are run, and the test exits 77 (meson: SKIP, not a pass).
# "marks" or "links" (-Dhardening_parts, measurement switches too): the
# cases of the part the build has (the free marks: double frees and realloc
# outside checker mode; the encoded links: the writes over a link), and 77.
set -u
fx=$1
hardening=${2:-enabled}
fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hc_harden.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset HEAPCHECK HEAPPROFILE HEAPCHECK_REPORT TCMALLOC_SAMPLE_PARAMETER
# The cases are small blocks on the free lists the hardening guards; a
# sampled block has a span of its own and no list (HEAPCHECK_SAMPLE_PARAMETER=64
# in the environment sampled the blocks of three cases: exit 99, undetected).
HEAPCHECK_SAMPLE_PARAMETER=0
export HEAPCHECK_SAMPLE_PARAMETER
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

# expect MODE CASE REGEX [moving]: the case aborts with a message matching
# REGEX; with "moving", a message found while moving a list, which names no
# caller
expect() {
  mode=$1 case=$2 re=$3
  if [ "$mode" = plain ]; then
    "$fx" "$case" >"$tmp/out" 2>"$tmp/err"
  else
    env ${QUAR:-} HEAPCHECK=$mode "$fx" "$case" >"$tmp/out" 2>"$tmp/err"
  fi
  rc=$?
  msg=$(grep -m1 '^heapcheck: ' "$tmp/err")
  # sh reports death by signal N as 128 + N; SIGABRT is 6
  if [ $rc -ne 134 ]; then
    bad "$mode $case: exit status $rc, want 134 (SIGABRT); stdout: $(cat "$tmp/out"); stderr: $(head -c 400 "$tmp/err")"
    return
  fi
  if ! printf '%s\n' "$msg" | grep -Eq "$re"; then
    bad "$mode $case: message \"$msg\" does not match /$re/"
    return
  fi
  if [ "${4:-}" = moving ]; then
    ok "$mode $case: $msg"
    return
  fi
  # "called from 0x..." lies in the function the fixture announced
  fn=$(sed -n "s/^fn $case //p" "$tmp/out")
  ra=$(printf '%s\n' "$msg" | sed -n 's/.*called from \(0x[0-9a-f]*\).*/\1/p')
  if [ -z "$fn" ] || [ -z "$ra" ]; then
    bad "$mode $case: no announced function ($fn) or no caller in \"$msg\""
    return
  fi
  if [ $((ra)) -lt $((fn)) ] || [ $((ra)) -ge $((fn + 256)) ]; then
    bad "$mode $case: caller $ra is not in the announced function at $fn: \"$msg\""
    return
  fi
  ok "$mode $case: $msg"
}

# clean MODE: the legal programs run to exit 0
clean() {
  if [ "$1" = plain ]; then "$fx" clean >"$tmp/out" 2>"$tmp/err"; else HEAPCHECK=$1 "$fx" clean >"$tmp/out" 2>"$tmp/err"; fi
  rc=$?
  if [ $rc -eq 0 ] && grep -q '^clean$' "$tmp/out"; then ok "$1 clean: exit 0"
  else bad "$1 clean: exit $rc, stderr: $(head -c 400 "$tmp/err")"; fi
}

hex='0x[0-9a-f]+'
# double_frees MODE: the double frees and the realloc of a freed block
double_frees() {
  for c in double double-large aba late thread thread-live remote-batch remote-inbox; do
    expect $1 $c "^heapcheck: free\(\): double free of $hex; called from $hex\$"
  done
  expect $1 realloc "^heapcheck: realloc\(\): invalid pointer $hex \(already freed\); called from $hex\$"
}

case $hardening in
  enabled) marks=1 links=1 ;;
  marks) marks=1 links=0 ;;
  links) marks=0 links=1 ;;
  *) marks=0 links=0 ;;
esac
if [ $marks = 0 ] && [ $links = 0 ]; then
  double_frees normal
  clean plain
  clean normal
  [ $fail -eq 0 ] || { echo FAIL; exit 1; }
  echo "SKIP: built with -Dhardening=disabled (no free mark, plain links): only checker mode's detections checked"
  exit 77
fi

for mode in plain normal; do
  # Checker mode's own records catch the double frees in every build.
  [ $marks = 1 ] || [ $mode = normal ] && double_frees $mode
  if [ $links = 0 ]; then
    clean $mode
    continue
  fi
  # The writes over a free-list link, in checker mode with the quarantine
  # off: with it, freed blocks wait outside the lists (docs/design.md,
  # "Checker mode's quarantine"), where a write is not looked for.
  [ $mode = normal ] && QUAR=HEAPCHECK_QUARANTINE=0
  # The malloc fast path checks a link at the pop after the one that
  # decoded it, when the block is no longer known (free_list.h): the
  # message names the value written and the class's size; the slow path
  # (checker mode) checks at once and names the block.
  for c in uaf-global uaf-zero uaf-ones; do
    expect $mode $c "^heapcheck: malloc\(\): corrupted free list: the link in (freed block $hex|a freed block of [0-9]+ bytes) was overwritten( with $hex)? \(use after free\?\); called from $hex\$"
  done
  # A link the malloc fast path left for the next pop, checked when the
  # thread's lists go to central at its exit; checker mode checks at the pop.
  if [ $mode = plain ]; then
    expect $mode uaf-flush "^heapcheck: malloc\(\): corrupted free list: the link in a freed block of [0-9]+ bytes was overwritten with 0x0 \(use after free\?\), found while moving a free list\$" moving
  else
    expect $mode uaf-flush "^heapcheck: malloc\(\): corrupted free list: the link in freed block $hex was overwritten \(use after free\?\); called from $hex\$"
  fi
  QUAR=
  clean $mode
done
if [ $fail -ne 0 ]; then echo FAIL; exit 1; fi
if [ $marks = 0 ] || [ $links = 0 ]; then
  echo "SKIP: built with -Dhardening_parts=$hardening: only that part's detections checked"
  exit 77
fi
echo PASS
exit 0
