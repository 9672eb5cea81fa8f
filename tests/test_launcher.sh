#!/bin/sh
# test_launcher.sh - tests tools/heapcheck, the launcher that runs unmodified
# dynamically linked programs with libheapcheck preloaded.
#
# Usage: test_launcher.sh LAUNCHER [EXAMPLE...]
#   LAUNCHER  <builddir>/tools/heapcheck (the configured build-tree copy)
#   EXAMPLE   built examples (leak_basic, scoped_check, ...), run through
#             the launcher and checked against what their comments promise
# Environment: HC_CC = the C compiler command (fixture programs are compiled
# here, WITHOUT -lheapcheck, so the launcher is what brings the checker in);
# HC_LIB = the built libheapcheck.so.
#
# Checks: exit statuses (1 for leaks, the program's own otherwise, its
# nonzero status passed through, --exit-code), --mode, --suppressions, a child
# process is checked too, keeping its own exit status (and not with --no-follow-children when the library
# supports HEAPCHECK_NO_FOLLOW), statically linked programs refused, usage
# errors, the library search from an install layout.  Exit 0 when all pass.

. "$(dirname "$0")/expect.sh"

launcher=${1:?usage: test_launcher.sh LAUNCHER [EXAMPLE...]}
shift
for exe in "$@"; do
  n=$(basename "$exe")
  case $n in *[!A-Za-z0-9_]*) continue ;; esac
  eval "ex_$n=\$exe"
done
CC_CMD=${HC_CC:-cc}
fixtures=$(dirname "$0")/launcher_fixtures

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hc_launch.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# The launcher keeps its private report directory when something leaked:
# keep those inside $tmp, not in /tmp.
TMPDIR=$tmp
export TMPDIR
for v in $(env | sed -n 's/^\(HEAP_CHECK_[A-Z_]*\)=.*/\1/p; s/^\(HEAPCHECK[A-Z_]*\)=.*/\1/p; s/^\(PERFTOOLS_[A-Z_]*\)=.*/\1/p'); do
  unset "$v"
done
unset LD_PRELOAD
HEAP_CHECK_DUMP_DIRECTORY=$tmp
export HEAP_CHECK_DUMP_DIRECTORY

# run CMD...: runs it, output (stdout+stderr) in $out, status in $rc
# (the assertions are tests/expect.sh's).
run() {
  cur="$*"
  out=$("$@" 2>&1)
  rc=$?
}

# ---- fixtures: ordinary programs that know nothing about heapcheck ----
cat >"$tmp/clean.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
char *kept;  /* not static: the compiler must keep it (and what it points to) */
int main(int argc, char **argv) {
  kept = strdup("reachable from a global");
  void *p = malloc(1000);
  free(p);
  fprintf(stderr, "clean: %s\n", kept);
  return argc > 1 ? atoi(argv[1]) : 0;
}
EOF
# shellcheck disable=SC2086 # HC_CC may be a command with arguments
if ! $CC_CMD -g -O1 -fno-omit-frame-pointer -o "$tmp/leaky" "$fixtures/leaky.c" 2>"$tmp/cc.log" ||
   ! $CC_CMD -g -O1 -fno-omit-frame-pointer -o "$tmp/clean" "$tmp/clean.c" 2>>"$tmp/cc.log"; then
  cat "$tmp/cc.log"
  echo "FAIL: cannot compile the fixtures with '$CC_CMD'"
  exit 1
fi
leaky=$tmp/leaky
clean=$tmp/clean

# ---- usage ----
run "$launcher" --help
expect_rc 0
has "Usage: heapcheck"
has "--no-follow-children"
run "$launcher" --version
expect_rc 0
has_re "^heapcheck [0-9]+\.[0-9]+\.[0-9]+$"
run "$launcher"
expect_rc 2
run "$launcher" --frobnicate "$clean"
expect_rc 2
has "unknown option"
run "$launcher" --mode=bogus "$clean"
expect_rc 2
has "unknown mode 'bogus'"
run "$launcher" --exit-code=256 "$clean"
expect_rc 2
run "$launcher" --suppressions="$tmp/does-not-exist" "$clean"
expect_rc 2
# Outputs that could never be written are refused at once: a FIFO nobody
# reads as the suppressions output (the launcher waited for a reader for
# good; a checked process did at its exit), an empty --log-file prefix
# (reports went to hidden files ".<pid>").
if mkfifo "$tmp/fifo" 2>/dev/null; then
  run timeout -s KILL 20 "$launcher" --gen-suppressions="$tmp/fifo" "$clean"
  expect_rc 2
  has "is not a regular file"
  run env HEAPCHECK=normal HEAPCHECK_REPORT=suppressions:"$tmp/fifo" LD_PRELOAD="$HC_LIB" timeout -s KILL 20 "$leaky"
  expect_rc 1
  has "cannot open suppressions output $tmp/fifo"
fi
run "$launcher" --log-file= "$clean"
expect_rc 2
has "--log-file needs a file name prefix"
run "$launcher" "$tmp/does-not-exist"
expect_rc 127
has "command not found"
run "$launcher" no-such-command-hc-test
expect_rc 127
cp "$fixtures/leaky.c" "$tmp/leaky.c"
run "$launcher" "$tmp/leaky.c"
expect_rc 126
has "not an executable file"

# ---- exit statuses ----
run "$launcher" "$leaky"
expect_rc 1
has "leaky: done"
has "Leak check _main_ detected leaks of 123 bytes in 1 objects"
has "leaky_site"
run "$launcher" "$clean"
expect_rc 0
has "clean: reachable from a global"
lacks "Leak check"
run "$launcher" "$clean" 42
expect_rc 42
run "$launcher" -- "$clean" 7
expect_rc 7
run "$launcher" --exit-code=23 "$leaky"
expect_rc 23
run "$launcher" --exit-code 0 "$leaky"
expect_rc 0
has "Leak check _main_ detected leaks of 123 bytes in 1 objects"
# A program found through PATH, argv[0] as typed.
run env PATH="$tmp:$PATH" "$launcher" clean 5
expect_rc 5

# ---- modes ----
run "$launcher" --mode=local "$leaky"
expect_rc 0
lacks "Leak check _main_"
for m in normal strict minimal as-is draconian; do
  run "$launcher" --mode=$m "$leaky"
  expect_rc 1
  has "Leak of 123 bytes in 1 objects"
done
run "$launcher" --mode strict "$clean"
expect_rc 0
run "$launcher" --mode=draconian sh -c 'echo "mode=$HEAPCHECK"'
has "mode=draconian"
run "$launcher" sh -c 'echo "mode=$HEAPCHECK"'
has "mode=normal"

# ---- suppressions ----
printf '# the known leak\nleak:leaky_site\n' >"$tmp/supp.txt"
run "$launcher" --suppressions="$tmp/supp.txt" "$leaky"
expect_rc 0
lacks "Leak of 123 bytes"
printf 'leak:some_other_function\n' >"$tmp/supp2.txt"
run "$launcher" --suppressions "$tmp/supp2.txt" "$leaky"
expect_rc 1
has "Leak of 123 bytes in 1 objects"

# ---- LD_PRELOAD: ours first, the user's kept ----
libm=
for d in /lib/*-linux-gnu /usr/lib/*-linux-gnu /lib64 /usr/lib64; do
  [ -f "$d/libm.so.6" ] && { libm=$d/libm.so.6; break; }
done
if [ -n "$libm" ]; then
  run env LD_PRELOAD="$libm" "$launcher" sh -c 'echo "preload=$LD_PRELOAD"'
  has_re "^preload=/[^:]*libheapcheck\.so[^:]*:$libm$"
fi

# ---- children are checked too, their status kept (tests/test_tree.sh has more) ----
run "$launcher" sh -c "\"$leaky\"; echo child_status=\$?"
has "child_status=0"
has_re "^heapcheck: leaky \(pid [0-9]+\) leaked 123 bytes in 1 allocations; report: /"
has_re "^heapcheck: [0-9]+ process(es)? checked, 1 leaked: 123 bytes in 1 allocations$"
expect_rc 1
run "$launcher" bash -c "\"$clean\" 3; echo child_status=\$?; \"$leaky\""
has "child_status=3"
has "Leak check _main_ detected leaks of 123 bytes in 1 objects"   # bash execs the last command
expect_rc 1

# ---- --no-follow-children ----
lib=${HC_LIB:-}
if [ -n "$lib" ] && grep -q HEAPCHECK_NO_FOLLOW "$lib" 2>/dev/null; then
  run "$launcher" --no-follow-children sh -c "\"$leaky\"; echo child_status=\$?; echo \"child_env=\$HEAPCHECK\""
  has "child_status=0"
  lacks "Leak check _main_ detected leaks of 123 bytes"
  has "child_env="
  lacks "child_env=normal"
  # The program itself is still checked.
  run "$launcher" --no-follow-children "$leaky"
  expect_rc 1
else
  echo "SKIP: --no-follow-children (the library does not read HEAPCHECK_NO_FOLLOW yet)"
fi

# ---- statically linked programs are refused with a clear message ----
# shellcheck disable=SC2086
if $CC_CMD -static -o "$tmp/static" "$tmp/clean.c" 2>/dev/null; then
  run "$launcher" "$tmp/static"
  expect_rc 126
  has "statically linked"
  has "-lheapcheck"
else
  echo "SKIP: static program (no static libc)"
fi
# A script: its interpreter is checked.
printf '#!/bin/sh\nexec "%s" "$@"\n' "$leaky" >"$tmp/script.sh"
chmod +x "$tmp/script.sh"
run "$launcher" "$tmp/script.sh"
expect_rc 1
has "Leak of 123 bytes in 1 objects"

# ---- finding the library ----
run env HEAPCHECK_LIB="$tmp/nope.so" "$launcher" "$clean"
expect_rc 127
has "HEAPCHECK_LIB"
if [ -n "$lib" ]; then
  run env HEAPCHECK_LIB="$lib" "$launcher" --verbose "$clean"
  expect_rc 0
  has "heapcheck: library: "
  # An install layout: <prefix>/bin/heapcheck finds <prefix>/<libdir>/libheapcheck.so.
  libdir=$("$launcher" --print-libdir)
  case $libdir in /*) libdir=lib ;; esac
  mkdir -p "$tmp/prefix/bin" "$tmp/prefix/$libdir"
  cp "$launcher" "$tmp/prefix/bin/heapcheck"
  cp "$lib" "$tmp/prefix/$libdir/libheapcheck.so"
  run "$tmp/prefix/bin/heapcheck" --verbose "$leaky"
  expect_rc 1
  has "heapcheck: library: $(cd "$tmp/prefix/$libdir" && pwd -P)/libheapcheck.so"
  # ... also through a symlink to the launcher.
  ln -s "$tmp/prefix/bin/heapcheck" "$tmp/hc-link"
  run "$tmp/hc-link" --verbose "$clean"
  expect_rc 0
  has "heapcheck: library: $(cd "$tmp/prefix/$libdir" && pwd -P)/libheapcheck.so"
fi

# ---- the examples, run through the launcher ----
if [ -n "${ex_leak_basic:-}" ]; then
  run "$launcher" "$ex_leak_basic"
  expect_rc 1
  has "Leak check _main_ detected leaks of 128 bytes in 2 objects"
  has_re "^Leak of 64 bytes in 1 objects allocated from:"
  has_re "^Indirect leak of 64 bytes in 1 objects allocated from:"
  has "build_and_forget_list"
  lacks "Leak of 21 bytes"   # the reachable config string
fi
if [ -n "${ex_scoped_check:-}" ]; then
  run "$launcher" --mode=local "$ex_scoped_check"
  expect_rc 0
  has 'check "parse": leaks found, 16 bytes in 1 objects leaked'
  has "Leak check parse detected leaks of 16 bytes in 1 objects"
  run "$launcher" "$ex_scoped_check"
  expect_rc 1
  has "Leak check _main_ detected leaks of 16 bytes in 1 objects"
  run "$ex_scoped_check"
  expect_rc 0
  has "checker off"
fi
if [ -n "${ex_ignore_and_disable:-}" ]; then
  run "$launcher" "$ex_ignore_and_disable"
  expect_rc 0
  has 'annotations on; cache holds "cached entry"'
  lacks "Leak check _main_"
  run "$launcher" "$ex_ignore_and_disable" --plain
  expect_rc 1
  has "Leak of 2000 bytes in 1 objects"
  has "Leak of 100 bytes in 1 objects"
  has_re "^Leak of (144 bytes in 3|48 bytes in 1) objects"   # one call site, or three if unrolled
fi
if [ -n "${ex_thread_roots:-}" ]; then
  run "$launcher" "$ex_thread_roots"
  expect_rc 1
  has "Leak check _main_ detected leaks of 77 bytes in 1 objects"
  count_re "^Leak of " 1
fi
if [ -n "${ex_cxx_leaks:-}" ]; then
  run "$launcher" --mode=local "$ex_cxx_leaks"
  expect_rc 0
  has "check leaky: 80 bytes in 2 objects leaked"
  has "check tidy: no leaks"
  has "check known: no leaks"
  run "$launcher" "$ex_cxx_leaks"
  expect_rc 1
  has "NoGlobalLeaks: 80 bytes in 2 objects"
  has "Leak check _main_ detected leaks of 80 bytes in 2 objects"
fi

finish test_launcher
