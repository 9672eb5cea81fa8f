#!/bin/bash
# test_deepbind.sh - a module dlopen()ed with RTLD_DEEPBIND (PHP loads its
# extensions so) binds malloc and free to libc's own functions; heapcheck
# makes those jump to its own (runtime/libc_redirect.c), so blocks cross
# between program and module, and the module's leaks are found.
# Usage: HC_LIB=libheapcheck.so test_deepbind.sh MODULE PRELOADED_EXE LINKED_EXE
# PRELOADED_EXE is built without heapcheck (run with LD_PRELOAD=$HC_LIB),
# LINKED_EXE with -lheapcheck (shared).  Without the redirection the "both"
# runs die in glibc's free ("free(): invalid pointer"): the last case checks
# that HEAPCHECK_REDIRECT_LIBC=0 really is what turns it off.
set -u
module=$1 pre=$2 linked=$3
HC_LIB=${HC_LIB:?HC_LIB must name libheapcheck.so}
out=$(mktemp -d "${TMPDIR:-/tmp}/hc_deepbind.XXXXXX")
trap 'rm -rf "$out"' EXIT
failures=0 passed=0
# expect NAME STATUS GREP_PATTERN CMD... (env assignments through env)
expect() {
  local name=$1 want=$2 pattern=$3
  shift 3
  "$@" >"$out/$name.out" 2>"$out/$name.err"
  local rc=$?
  if [ "$rc" != "$want" ] || ! grep -q -- "$pattern" "$out/$name.out" "$out/$name.err"; then
    echo "FAIL: $name: exit $rc (want $want), output lacks '$pattern':"
    head -20 "$out/$name.out" "$out/$name.err"
    failures=$((failures + 1))
  else
    echo "ok: $name"
    passed=$((passed + 1))
  fi
}
unset HEAPCHECK LSAN_OPTIONS HEAPCHECK_REDIRECT_LIBC
expect preloaded 0 'every block crossed' env LD_PRELOAD="$HC_LIB" "$pre" "$module" both
expect linked 0 'every block crossed' env "$linked" "$module" both
expect preloaded_normal 0 'No leaks found' env HEAPCHECK=normal LD_PRELOAD="$HC_LIB" "$pre" "$module" both
expect linked_normal 0 'No leaks found' env HEAPCHECK=normal "$linked" "$module" both
# The module's leak: found, with the module's frame (valgrind 3.19: "definitely lost: 4,242 bytes in 1 blocks").
expect leak 1 'SUMMARY: heapcheck: 4242 bytes leaked in 1 allocations' \
  env HEAPCHECK=normal LD_PRELOAD="$HC_LIB" "$pre" "$module" leak
grep -q 'mod_leak .*deepbind_module.c' "$out/leak.err" || { echo "FAIL: leak: no mod_leak frame"; failures=$((failures + 1)); }
expect lsan_leak 23 '4242 bytes leaked in 1 allocations' \
  env LSAN_OPTIONS=detect_leaks=1 LD_PRELOAD="$HC_LIB" "$pre" "$module" leak
# Off: the module's malloc is libc's again (and so "both" would crash).
expect off 0 "the module's malloc is libc's" env HEAPCHECK_REDIRECT_LIBC=0 LD_PRELOAD="$HC_LIB" "$pre" "$module" off
expect on_is_on 2 'still heapcheck' env LD_PRELOAD="$HC_LIB" "$pre" "$module" off
echo "$passed passed, $failures failed"
[ "$failures" = 0 ]
