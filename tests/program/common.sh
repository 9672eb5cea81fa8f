# common.sh - sourced by the shell tests of tests/program/ (POSIX sh).
# Loads tests/expect.sh's assertions, makes the environment private
# (expect_private_env $prefix, $dump), sets $lib from HC_LIB and defines run.
# Usage: prefix=NAME; . "$(dirname "$0")/common.sh"   (dash passes no arguments to .)
. "$(dirname "$0")/../expect.sh"
lib=${HC_LIB:?HC_LIB must name libheapcheck.so}
expect_private_env "${prefix:?set prefix before sourcing common.sh}"

# run CMD...: runs it; stdout+stderr in $out, status in $rc.
run() {
  cur="$*"
  out=$("$@" 2>&1)
  rc=$?
}
