# common.sh - helpers for the leak checker's shell tests (test_leak_modes.sh,
# test_report.sh, test_suppress.sh); sourced, not run.
#
# Environment: HC_LIB (the shared library), HC_FIXTURES (directory of the
# built fx_* fixtures).  Every HEAPCHECK/HEAP_CHECK_/PERFTOOLS_/HEAPPROFILE variable of
# the caller is dropped so only what a test sets changes the checker; leak
# profiles go to a private directory ($dump).
#
#   run [VAR=value...] FIXTURE [ARGS...]   runs $HC_FIXTURES/fx_FIXTURE with
#        LD_PRELOAD=$HC_LIB (unless PRELOAD=no) and the given variables;
#        sets $out (stdout+stderr), $rc, $cur (a description)
#   expect_rc N, has TEXT, lacks TEXT, has_re ERE, lacks_re ERE, count_re ERE N
# Failures are counted; finish prints a summary and exits 0 or 1.

# The assertions (expect_rc, has, ...) and the private environment come from
# tests/expect.sh; the scripts that source this file live in tests/.
. "$(dirname "$0")/expect.sh"

: "${HC_LIB:?HC_LIB must name libheapcheck.so}"
: "${HC_FIXTURES:?HC_FIXTURES must name the directory of the fixtures}"
expect_private_env hc_leak

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
