# common.sh - helpers for the leak checker's shell tests (test_leak_modes.sh,
# test_report.sh, test_suppress.sh); sourced, not run.
#
# Environment: HC_LIB (the shared library), HC_FIXTURES (directory of the
# built fx_* fixtures).  Every HEAPCHECK/HEAP_CHECK_/PERFTOOLS_ variable of
# the caller is dropped so only what a test sets changes the checker; leak
# profiles go to a private directory ($dump).
#
#   run [VAR=value...] FIXTURE [ARGS...]   runs $HC_FIXTURES/fx_FIXTURE with
#        LD_PRELOAD=$HC_LIB (unless PRELOAD=no) and the given variables;
#        sets $out (stdout+stderr), $rc, $cur (a description)
#   expect_rc N, has TEXT, lacks TEXT, has_re ERE, lacks_re ERE, count_re ERE N
# Failures are counted; finish prints a summary and exits 0 or 1.

set -u
ulimit -c 0 2>/dev/null

: "${HC_LIB:?HC_LIB must name libheapcheck.so}"
: "${HC_FIXTURES:?HC_FIXTURES must name the directory of the fixtures}"
for v in $(env | sed -n 's/^\(HEAP_CHECK_[A-Z_]*\)=.*/\1/p; s/^\(HEAPCHECK[A-Z_]*\)=.*/\1/p; s/^\(PERFTOOLS_[A-Z_]*\)=.*/\1/p'); do
  unset "$v"
done
unset LD_PRELOAD HEAPPROFILE

dump=$(mktemp -d "${TMPDIR:-/tmp}/hc_leak.XXXXXX") || exit 1
trap 'rm -rf "$dump"' EXIT
HEAP_CHECK_DUMP_DIRECTORY=$dump
export HEAP_CHECK_DUMP_DIRECTORY

failures=0
checks=0
out=
rc=0
cur=
PRELOAD=${PRELOAD:-yes}

run() {
  _vars=
  while [ $# -gt 0 ]; do
    case $1 in
      *=*) _vars="$_vars $1"; shift ;;
      *) break ;;
    esac
  done
  _fx=$1
  shift
  _bin=$HC_FIXTURES/fx_$_fx
  cur="$_vars fx_$_fx $*"
  if [ "$PRELOAD" = yes ]; then
    # shellcheck disable=SC2086 # _vars is a list of assignments
    out=$(env $_vars LD_PRELOAD="$HC_LIB" "$_bin" "$@" 2>&1)
  else
    # shellcheck disable=SC2086
    out=$(env $_vars "$_bin" "$@" 2>&1)
  fi
  rc=$?
}

fail() {
  failures=$((failures + 1))
  echo "FAIL [$cur]: $1"
  printf '%s\n' "$out" | sed 's/^/    | /'
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

finish() {
  echo "$checks checks, $failures failures"
  [ "$failures" = 0 ]
  exit $?
}
