# expect.sh - assertions shared by the checker's shell tests
# (scenarios/fixtures.sh for test_leak_modes/test_report/test_suppress,
# test_cxx_api.sh, test_launcher.sh, test_pprof.sh, test_go_pprof.sh);
# sourced, not run.  POSIX sh (dash and
# bash).
#
# The caller's own `run` function runs a program and sets:
#   $out  its stdout+stderr     $rc  its exit status     $cur  a description
# Then:
#   expect_rc N              the status is N
#   has TEXT / lacks TEXT    some / no output line contains TEXT (fixed string)
#   has_re ERE / lacks_re ERE   some / no output line matches the extended regex
#   count_re ERE N           exactly N lines match
#   before A B               the first line containing A comes before the first containing B
#   fail MESSAGE             count a failure and show the output (first 100 lines)
#   finish [NAME]            print "[NAME: ]C checks, F failures", exit 0 when F = 0, else 1
#   expect_private_env PREFIX   drop every HEAPCHECK*, HEAP_CHECK_*, PERFTOOLS_*,
#        HEAPPROFILE* variable and LD_PRELOAD of the caller (only what a test sets
#        changes the checker) and send leak profiles to a private directory $dump
#        (mktemp PREFIX.XXXXXX, removed at exit)
# Invariants: every assertion adds one to $checks; a failing one adds one to
# $failures and never stops the script.

set -u
# shellcheck disable=SC3045 # dash and bash both have ulimit -c
ulimit -c 0 2>/dev/null

failures=0
checks=0
out=
rc=0
cur=

expect_private_env() {
  for _v in $(env | sed -n 's/^\(HEAP_CHECK_[A-Z_]*\)=.*/\1/p; s/^\(HEAPCHECK[A-Z_]*\)=.*/\1/p; s/^\(PERFTOOLS_[A-Z_]*\)=.*/\1/p; s/^\(HEAPPROFILE[A-Z_]*\)=.*/\1/p'); do
    unset "$_v"
  done
  unset LD_PRELOAD
  dump=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
  trap 'rm -rf "$dump"' EXIT
  HEAP_CHECK_DUMP_DIRECTORY=$dump
  export HEAP_CHECK_DUMP_DIRECTORY
}

fail() {
  failures=$((failures + 1))
  echo "FAIL [$cur]: $*"
  printf '%s\n' "$out" | sed 's/^/    | /' | head -100
}

expect_rc() {
  checks=$((checks + 1))
  [ "$rc" = "$1" ] || fail "exit status $rc, expected $1"
}
has() {
  checks=$((checks + 1))
  printf '%s\n' "$out" | grep -qF -- "$1" || fail "missing line containing: $1"
}
lacks() {
  checks=$((checks + 1))
  if printf '%s\n' "$out" | grep -qF -- "$1"; then fail "unexpected line containing: $1"; fi
}
has_re() {
  checks=$((checks + 1))
  printf '%s\n' "$out" | grep -qE -- "$1" || fail "no line matches: $1"
}
lacks_re() {
  checks=$((checks + 1))
  if printf '%s\n' "$out" | grep -qE -- "$1"; then fail "unexpected line matching: $1"; fi
}
count_re() {
  checks=$((checks + 1))
  _n=$(printf '%s\n' "$out" | grep -cE -- "$1")
  [ "$_n" = "$2" ] || fail "$_n lines match '$1', expected $2"
}
before() {
  checks=$((checks + 1))
  _a=$(printf '%s\n' "$out" | grep -nF -- "$1" | head -1 | cut -d: -f1)
  _b=$(printf '%s\n' "$out" | grep -nF -- "$2" | head -1 | cut -d: -f1)
  if [ -z "$_a" ] || [ -z "$_b" ] || [ "$_a" -ge "$_b" ]; then fail "'$1' should come before '$2'"; fi
}

# For scripts that check files rather than one program's output
# (test_pprof.sh, test_go_pprof.sh):
#   scratch_dir PREFIX        a private directory $tmp, removed at exit
#   file_has FILE TEXT / file_lacks FILE TEXT   FILE has / lacks TEXT
#   within VALUE TRUTH PERCENT   |VALUE - TRUTH| <= TRUTH * PERCENT / 100
#   finish_files              PASS and exit 0, or keep $tmp, name it, exit 1
scratch_dir() {
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
  trap 'rm -rf "$tmp"' EXIT
}
file_has() {
  checks=$((checks + 1))
  grep -q -- "$2" "$1" || fail "$1 lacks '$2'"
}
file_lacks() {
  checks=$((checks + 1))
  if grep -q -- "$2" "$1"; then fail "$1 has '$2'"; fi
}
within() {
  awk -v v="$1" -v t="$2" -v p="$3" 'BEGIN { d = v - t; if (d < 0) d = -d; exit !(d <= t * p / 100) }'
}
finish_files() {
  if [ "$failures" = 0 ]; then
    echo "PASS"
    exit 0
  fi
  trap - EXIT
  echo "files kept in $tmp"
  exit 1
}

finish() {
  echo "${1:+$1: }$checks checks, $failures failures"
  [ "$failures" = 0 ]
  exit $?
}
