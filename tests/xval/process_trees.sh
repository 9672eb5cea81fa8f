#!/bin/bash
# process_trees.sh - whole process trees under the launcher beside
# `valgrind --trace-children=yes --leak-check=full` (docs/validation.md,
# "Process trees").  By hand, not in the suite: valgrind runs take minutes.
#
# Usage: tests/xval/process_trees.sh [-n] BUILDDIR [tree...]
#   trees: git-gc cmake-make meson-ninja (default: all)
#   -n: valgrind runs with --run-libc-freeres=no (see docs/validation.md:
#       glibc's clean-up frees the environment array, and what only it
#       pointed at becomes lost for valgrind)
# For each tree: the same commands in two fresh scratch copies, one under
# <BUILDDIR>/tools/heapcheck, one under valgrind with one log per process;
# prints, per program (argv[0]'s base name), the processes seen and the
# leaked bytes/allocations: heapcheck's direct+indirect, valgrind's
# definitely+indirectly lost, then the totals, and whether each build
# succeeded in both.  A wrapper compiler `leakcc` (leaks 4000 bytes, then
# runs the real cc) stands for a leaking compiler in the two builds.
set -u
vg_extra=()
if [ "${1:-}" = -n ]; then vg_extra=(--run-libc-freeres=no); shift; fi
build=$(cd "${1:?usage: process_trees.sh BUILDDIR [tree...]}" && pwd)
shift
launcher=$build/tools/heapcheck
trees=${*:-git-gc cmake-make meson-ninja}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/hc_trees.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

cat >"$scratch/leakcc.c" <<'EOF'
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void *volatile sink;
__attribute__((noinline)) void wrapper_leak(void) { sink = malloc(4000); sink = NULL; }
int main(int argc, char **argv) {
  (void)argc;
  wrapper_leak();
  pid_t p = fork();
  if (p == 0) { argv[0] = "cc"; execvp("cc", argv); _exit(127); }
  int st = 0;
  if (p < 0 || waitpid(p, &st, 0) < 0) return 1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
EOF
cc -g -O1 -o "$scratch/leakcc" "$scratch/leakcc.c" || exit 1
mkdir -p "$scratch/proj"
printf '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n' >"$scratch/proj/hello.c"
printf 'cmake_minimum_required(VERSION 3.10)\nproject(hctree C)\nadd_executable(hello hello.c)\n' \
  >"$scratch/proj/CMakeLists.txt"
printf "project('hctree', 'c')\nexecutable('hello', 'hello.c')\n" >"$scratch/proj/meson.build"

# setup TREE DIR: a fresh input for TREE in DIR
setup() {
  mkdir -p "$2"
  case $1 in
    git-gc)
      git init -q "$2/repo"
      for i in 1 2 3 4 5; do
        echo "$i" >"$2/repo/f$i"
        git -C "$2/repo" add "f$i"
        git -C "$2/repo" -c user.name=t -c user.email=t@t commit -qm "c$i"
      done ;;
    *) cp -r "$scratch/proj" "$2/proj" ;;
  esac
}
# command TREE DIR: the shell command that runs TREE in DIR
command_of() {
  case $1 in
    git-gc) echo "git -C '$2/repo' gc" ;;
    cmake-make) echo "cmake -S '$2/proj' -B '$2/b' -DCMAKE_C_COMPILER='$scratch/leakcc' >/dev/null && make -C '$2/b' >/dev/null" ;;
    meson-ninja) echo "CC='$scratch/leakcc' meson setup '$2/b' '$2/proj' >/dev/null && ninja -C '$2/b' >/dev/null" ;;
  esac
}

for t in $trees; do
  hd=$scratch/$t.hc vd=$scratch/$t.vg
  setup "$t" "$hd"
  setup "$t" "$vd"
  cmd=$(command_of "$t" "$hd")
  TMPDIR=$hd "$launcher" --exit-code=0 sh -c "$cmd; echo build_status=\$? >&2" >"$hd/out" 2>&1
  hc_status=$(sed -n 's/^build_status=//p' "$hd/out")
  # heapcheck: "heapcheck:   pid N: B bytes in A allocations (report: R): CMD"
  sed -n 's/^heapcheck:   pid [0-9]*: \([0-9]*\) bytes in \([0-9]*\) allocations (report: [^)]*): \([^ ]*\).*/\3 \1 \2/p' "$hd/out" |
    awk '{ n = split($1, p, "/"); print p[n], $2, $3 }' >"$hd/leaks"
  hc_procs=$(sed -n 's/^heapcheck: \([0-9]*\) process.*/\1/p' "$hd/out")
  cmd=$(command_of "$t" "$vd")
  mkdir -p "$vd/logs"
  # The same TMPDIR for both: gcc's temporary file names end up in leaked
  # strings (ld's -plugin-opt=-fresolution=...), and a longer path leaks more bytes.
  TMPDIR=$vd valgrind "${vg_extra[@]}" --trace-children=yes --leak-check=full --log-file="$vd/logs/vg.%p" \
    sh -c "$cmd; echo build_status=\$? >&2" >"$vd/out" 2>&1
  vg_status=$(sed -n 's/^build_status=//p' "$vd/out")
  # valgrind: one log per process: its "Command:" line and the LEAK
  # SUMMARY's "definitely lost" / "indirectly lost" lines.
  : >"$vd/leaks"
  vg_procs=0
  for f in "$vd"/logs/vg.*; do
    [ -f "$f" ] || continue
    vg_procs=$((vg_procs + 1))
    awk -v file="$f" '
      /definitely lost:|indirectly lost:/ { gsub(",", ""); b += $4; a += $7 }
      END { if (b || a) print b, a }' "$f" >"$f.sum"
    if [ -s "$f.sum" ]; then
      prog=$(sed -n 's/^==[0-9]*== Command: \([^ ]*\).*/\1/p' "$f" | head -n 1)
      [ -n "$prog" ] || prog=unknown
      echo "$(basename "$prog") $(cat "$f.sum")" >>"$vd/leaks"
    fi
  done
  echo "== $t: build status heapcheck $hc_status, valgrind $vg_status; processes checked: heapcheck $hc_procs, valgrind $vg_procs"
  printf '| program | heapcheck procs leaking | heapcheck bytes/allocs | valgrind procs leaking | valgrind definitely+indirectly |\n|---|---|---|---|---|\n'
  awk '
    { src = FILENAME == ARGV[1] ? 1 : 2; k = $1; n[src, k]++; b[src, k] += $2; a[src, k] += $3; keys[k] = 1; tb[src] += $2; ta[src] += $3; tn[src]++ }
    END {
      for (k in keys) printf "| %s | %d | %d/%d | %d | %d/%d |\n", k, n[1, k], b[1, k], a[1, k], n[2, k], b[2, k], a[2, k]
      printf "| **total** | %d | %d/%d | %d | %d/%d |\n", tn[1], tb[1], ta[1], tn[2], tb[2], ta[2]
    }' "$hd/leaks" "$vd/leaks"
done
